/*
 * sys/driver.h - what a driver author implements: one backend (ESXi shell,
 * Onyx CLI, vCenter, guest) behind four calls the executor makes.
 *
 *   connect     open the one connection of a target for this run
 *   observe     read every resource of the target in one batch and record
 *               it into the observed store (gc_drv_record_* helpers below
 *               serialise access to the shared store)
 *   apply       carry out one plan action on the target
 *   disconnect  close it (accepts NULL)
 *
 * Error classes drive the executor's policy:
 *   GC_ENET / GC_ETIMEOUT  transport fault: the executor reconnects, asks the
 *                          driver to observe again, and re-sends the action
 *                          only when its resource still differs (retry safe)
 *   GC_EREMOTE             the device said no: the message is the device's own
 *   anything else          fails the target (host key, auth, bad value)
 *
 * A driver never prints and never sleeps longer than its own timeouts; it
 * reports progress through gc_drv_ctx.note() (shown on a TTY as the target's
 * current step).
 */
#ifndef GC_SYS_DRIVER_H
#define GC_SYS_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/error.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/plan.h"

struct gc_drv_ctx;

/* Host facts a driver can report beyond resource properties. */
struct gc_drv_host_state {
	bool maintenance;
	bool reboot_pending; /* configured state that only a reboot makes current */
	const char *reboot_pending_why;
};

struct gc_driver {
	const char *name;              /* "esxi" */
	enum gc_target_kind kind;
	/*
	 * One connection that several actions use at once (vCenter: different
	 * VMs' tasks in flight).  The executor then runs the target's ready
	 * actions in parallel (the plan sequences each VM), keeps the target
	 * going when one VM's action fails, and never drops the connection on
	 * a transport fault; apply and observe must be thread-safe.
	 */
	bool shared_conn;
	int (*connect)(void **conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
		       struct gc_error *err);
	/*
	 * Observe the target's resources res[0..nres) and record them with
	 * gc_drv_record().  `problems` collects one line per mismatch between
	 * the spec and the target (a device the host does not have): the
	 * executor fails the target with them before changing anything.
	 */
	int (*observe)(void *conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
		       const struct gc_resource *const *res, size_t nres,
		       struct gc_buf *problems, struct gc_error *err);
	/* Carry out one action.  *conn may be replaced (after a reboot). */
	int (*apply)(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *a,
		     struct gc_error *err);
	/*
	 * Optional: carry out acts[0..n) (n >= 2) in one round trip.  They are
	 * consecutive actions of this target in plan order, each accepted by
	 * `batchable`, the first ready and each later one waiting on nothing
	 * but the ones before it.  *ndone: how many, from the first, are known
	 * to have completed.  Returns 0 when all did; otherwise the error is
	 * acts[*ndone]'s: the device's refusal (GC_EREMOTE: nothing after it
	 * was sent) or a transport fault (it and the ones after may or may not
	 * have taken: the executor reconnects, observes again, and re-sends only
	 * what still differs, as for one action).
	 */
	int (*apply_batch)(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *const *acts,
			   size_t n, size_t *ndone, struct gc_error *err);
	bool (*batchable)(const struct gc_action *a);
	/* True when the action needs no resend after a re-observation.  NULL:
	 * the executor's rule, an APPLY (not a delete) whose resource already
	 * holds its desired values in the store. */
	bool (*already_done)(struct gc_drv_ctx *ctx, const struct gc_action *a);
	/* Optional: persist a configuration that an earlier run may have left
	 * unsaved (a switch's running config written to its startup file). */
	int (*save)(void *conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
		    struct gc_error *err);
	/* Optional: when the target last booted, in seconds since the epoch on
	 * this machine's clock (its uptime subtracted from our time).  The
	 * executor asks it after observing a host that an earlier, killed run
	 * sent a reboot: a boot after that reboot went out pays the reboot. */
	int (*boot_time)(void *conn, struct gc_drv_ctx *ctx, double *boot_s, struct gc_error *err);
	/* Optional: the cluster lease this target carries, for everyone who
	 * applies the spec from anywhere (src/exec/lease.c).  get: *out the
	 * lease ("" when none; caller frees).  set: write it ("" clears); the
	 * value holds only [A-Za-z0-9@._:;=+-].  Neither counts as a change.
	 * lease_atomic: set refuses (GC_ELOCKED) when another apply took the
	 * lease since get (a compare-and-set on the target); such targets are
	 * written first, so of two applies racing only one gets further. */
	int (*lease_get)(void *conn, struct gc_drv_ctx *ctx, char **out, struct gc_error *err);
	int (*lease_set)(void *conn, struct gc_drv_ctx *ctx, const char *value, struct gc_error *err);
	/* Optional: clear the lease when its `lock` field is `lock` ([0-9a-f]
	 * only), in one exchange; *cleared says whether it did.  Without it the
	 * executor reads (lease_get), compares and clears (lease_set). */
	int (*lease_clear_ours)(void *conn, struct gc_drv_ctx *ctx, const char *lock, bool *cleared,
				struct gc_error *err);
	bool lease_atomic;
	/* Optional: the observation that just ran wrote the lease that
	 * gc_drv_lease_offer gave it (the target was free, or held a lease of
	 * ours), in the same exec as its reads.  A driver with it also clears
	 * the lease in its last step's exec when gc_drv_lease_release_lock
	 * says so.  Never on a lease_atomic target. */
	bool (*lease_taken)(void *conn);
	/* Optional: write `value` where the target holds no lease or one whose
	 * lock is `lock`, in one exchange (a compare-and-set); where another
	 * apply's is there, GC_ELOCKED with *held its value (caller frees) and
	 * nothing written.  The executor's write of a lease when the driver
	 * has it (lease.c). */
	int (*lease_take)(void *conn, struct gc_drv_ctx *ctx, const char *lock, const char *value,
			  char **held, struct gc_error *err);
	/* Optional, with lease_take: the driver takes a pending lease in the
	 * first exec of a step that starts with a (gc_drv_lease_step_take),
	 * before that step's first change.  For any other step the executor
	 * takes it first, in an exec of its own (lease_take). */
	bool (*lease_in_step)(const struct gc_action *a);
	void (*disconnect)(void *conn);
};

/* Settings the executor hands every driver. */
struct gc_drv_settings {
	bool trust_new_host_keys;      /* --trust-new-host-keys overrides the spec */
	const char *known_hosts;       /* --known-hosts overrides the spec */
	unsigned reboot_timeout_ms;    /* wait for a host to come back; default 20 min */
	unsigned reboot_poll_ms;       /* default 2 s */
	unsigned verify_timeout_ms;    /* read-back after a reboot; default 5 min */
	unsigned command_timeout_ms;   /* 0: the spec's */
};

/* ---------------------------------------------------------------- helpers for drivers */

const struct gc_drv_settings *gc_drv_settings(const struct gc_drv_ctx *ctx);
const struct gc_cluster *gc_drv_cluster(const struct gc_drv_ctx *ctx);
/* Thread-safe writers of the shared observed store. */
void gc_drv_record(struct gc_drv_ctx *ctx, void (*fn)(struct gc_observed *obs, void *arg),
		   void *arg);
void gc_drv_host_state(struct gc_drv_ctx *ctx, const char *host,
		       const struct gc_drv_host_state *st);
/* A desired-vs-observed check under the store's lock: every desired key of
 * r equals the observed value. */
bool gc_drv_resource_converged(struct gc_drv_ctx *ctx, const struct gc_resource *r);
struct gc_ssh_opts;
struct gc_ssh_conn;
struct gc_ssh;
struct gc_credential;
/*
 * SSH options of a target from its spec: address, `ssh:` settings and
 * credential, with the run's overrides (--known-hosts, --trust-new-host-keys,
 * a command timeout) applied and a leading "~/" of known_hosts expanded.
 * *known holds the expanded path that o->known_hosts points at; free it after
 * gc_ssh_connect().
 */
void gc_drv_ssh_opts(struct gc_ssh_opts *o, char **known, const struct gc_drv_ctx *ctx,
		     const char *address, const struct gc_ssh *ssh,
		     const struct gc_credential *cred, const char *default_user);
/* The same outside a run (validate): set carries the overrides, NULL none. */
void gc_ssh_opts_from_spec(struct gc_ssh_opts *o, char **known, const struct gc_drv_settings *set,
			   const char *address, const struct gc_ssh *ssh,
			   const struct gc_credential *cred, const char *default_user);
/* How long a command that only reads may run on a target, in ms: its
 * ssh.read_timeout_s (GC_SSH_READ_TIMEOUT_S when the struct came from
 * elsewhere than the spec loader and holds 0). */
unsigned gc_ssh_read_ms(const struct gc_ssh *ssh);
/* The read timeout of an ESXi host or a switch: gc_ssh_read_ms(), or
 * command_ms where that is less (0: none), as every read there waited the
 * command timeout before read_timeout_s existed. */
unsigned gc_ssh_read_cap_ms(const struct gc_ssh *ssh, unsigned command_ms);
/* gc_drv_ssh_opts() and gc_ssh_connect() in one: connect_ms 0 keeps the
 * spec's connect timeout; the connection's command timeout becomes read_ms
 * (the Linux targets keep the spec's for changes only). */
int gc_drv_ssh_connect(struct gc_ssh_conn **out, const struct gc_drv_ctx *ctx,
		       const char *address, const struct gc_ssh *ssh,
		       const struct gc_credential *cred, const char *default_user,
		       unsigned connect_ms, unsigned read_ms, struct gc_error *err);

/*
 * A Linux target's reboot, proven (guests, KVM hosts): reconnect every
 * poll (reboot_poll_ms, at least 1 s) until the target answers with a boot
 * id other than `before`, for at most reboot_timeout_ms.  A dropped
 * connection is no proof; a target still up with the old boot id `grace_s`
 * after the reboot went out gets it once more (resend), then it fails.  A
 * host key refused while waiting fails at once (another machine answered);
 * credentials refused fail once they have been refused for
 * GC_DRV_NOLOGIN_GRACE_S in a row (gc_drv_auth_may_pass).  On success the
 * target's connection is open.
 */
struct gc_drv_reboot {
	const struct gc_target *t;
	const char *noun;       /* "guest", "host": for notes and messages */
	const char *before;     /* the boot id when the reboot went out */
	uint64_t sent_ns;       /* when it went out (moved on a resend) */
	unsigned grace_s;
	unsigned resends;
	void *arg;
	int (*connect)(void *arg, unsigned connect_ms, struct gc_error *err);
	void (*disconnect)(void *arg);
	/* the boot id over the open connection ("" when it cannot tell) */
	int (*boot_id)(void *arg, char *out, size_t n, struct gc_error *err);
	int (*resend)(void *arg, struct gc_error *err);
};
int gc_drv_wait_reboot(struct gc_drv_ctx *ctx, struct gc_drv_reboot *r, struct gc_error *err);

/* A failed login to a Linux machine that is shutting down or booting is not
 * yet the credentials' fault: pam_nologin refuses every user but root while
 * /run/nologin exists, which systemd-user-sessions.service writes when the
 * machine goes down and removes late in its boot, and sshd reports that as
 * a failed authentication ("Access denied for user X by PAM account
 * configuration").  Around a reboot or a first boot, an authentication
 * failure is retried for GC_DRV_NOLOGIN_GRACE_S from the first of a run of
 * them: *since_ns holds when that run began (0: none; the caller sets it to
 * 0 again on any other outcome).  True while the failure may still pass. */
#define GC_DRV_NOLOGIN_GRACE_S 120u
bool gc_drv_auth_may_pass(uint64_t *since_ns);

/* A Linux target's boot time on our clock (boot_time): now minus the
 * `cat /proc/uptime` reply in res (freed here), read just after that reply,
 * so the boot looks later, never earlier.  GC_EREMOTE naming noun 'name'
 * when the reply is no uptime. */
struct gc_ssh_result;
int gc_drv_boot_from_uptime(struct gc_ssh_result *res, const char *noun, const char *name,
			    double *boot_s, struct gc_error *err);

/* The target's current step, for progress ("rebooting, 12 s"). */
void gc_drv_note(struct gc_drv_ctx *ctx, const struct gc_target *t, const char *fmt, ...)
	GC_PRINTF(3, 4);
/* Count one command that changes the target (benchmarks, "no changes" proof). */
void gc_drv_count_change(struct gc_drv_ctx *ctx);
/* Count one round trip (an SSH exec) to target t, for `apply -v` and the
 * apply bench; `poll`: one of the polls while it reboots. */
void gc_drv_count_exec(struct gc_drv_ctx *ctx, const struct gc_target *t, bool poll);
/* The power state of a VM as the vCenter observation found it;
 * GC_POWER_UNKNOWN when nobody observed it (no vCenter in scope), and
 * *exists false when the vCenter was observed and has no such VM. */
enum gc_power gc_drv_vm_power(struct gc_drv_ctx *ctx, const char *vm, bool *exists);
/* A host's maintenance mode as its last observation recorded it: 1 in it,
 * 0 not, -1 not observed. */
int gc_drv_host_maintenance(struct gc_drv_ctx *ctx, const char *host);
/* The driver took host t out of maintenance mode in an exec of a step that
 * then failed (the ESXi read-back, which leaves maintenance mode in its own
 * exec): the recovery after the failure has nothing to send (recover.c).
 * false: it entered maintenance mode again. */
void gc_drv_maintenance_left(struct gc_drv_ctx *ctx, const struct gc_target *t, bool left);
/*
 * The cluster lease inside a driver's own execs (src/exec/lease.c):
 * gc_drv_lease_offer: during the apply's observation, the lease to write
 *   where the target holds none or one of ours, with *lock our lock; NULL
 *   when the observation only reads it.
 * gc_drv_lease_release_lock: our lock when the step about to go out is the
 *   target's last of the run and the lease may be cleared in its exec (no
 *   action is left on a target that does not hold our lease); else NULL.
 *   Asked again during a step (each reboot poll that carries the read-back
 *   and the exit), a no at the step's start becomes a yes once the other
 *   targets' work is done.
 * gc_drv_lease_released: that clear ran: the target holds no lease of ours
 *   (cleared: it held ours, and now none; else it held another's or none).
 */
const char *gc_drv_lease_offer(struct gc_drv_ctx *ctx, const char **lock);
const char *gc_drv_lease_release_lock(struct gc_drv_ctx *ctx, const struct gc_target *t);
void gc_drv_lease_released(struct gc_drv_ctx *ctx, const struct gc_target *t, bool cleared);
/*
 * The lease taken in a target's first changing step (lease_in_step: the
 * leases are written before the first wave, after a vCenter's
 * compare-and-set or because the observation only read them, and this
 * target's is written by the step that would change it, not in an exec of
 * its own):
 * gc_drv_lease_step_take: the lease to take, with a compare-and-set, ahead
 *   of the step's first change, *lock ours; NULL when there is none to
 *   take (held already, or written by the executor).
 * gc_drv_lease_step_result: what came of it, once the driver knows:
 *   GC_DRV_LEASE_TOOK (the changes after it went out under our lease),
 *   GC_DRV_LEASE_REFUSED (another apply's lease was there, held its value,
 *   or the write failed, held NULL: nothing changed; returns GC_ELOCKED,
 *   or the driver's error, with *err saying so for the step's failure), or
 *   GC_DRV_LEASE_UNKNOWN (the connection went before the answer: asked
 *   again in the step's retry, cleared at the end if ours).
 */
#define GC_DRV_LEASE_TOOK 1
#define GC_DRV_LEASE_REFUSED 2
#define GC_DRV_LEASE_UNKNOWN 3
const char *gc_drv_lease_step_take(struct gc_drv_ctx *ctx, const struct gc_target *t, const char **lock);
int gc_drv_lease_step_result(struct gc_drv_ctx *ctx, const struct gc_target *t, int outcome,
			     const char *held, struct gc_error *err);
/* True once the user asked to stop (Ctrl-C): finish the step, start no new one. */
bool gc_drv_interrupted(const struct gc_drv_ctx *ctx);

#endif
