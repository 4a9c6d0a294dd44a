/*
 * esxi_int.h - what the ESXi driver's files share: the connection, the one
 * way an exec goes to the host, and the device's own words.
 */
#ifndef GC_ESXI_INT_H
#define GC_ESXI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/esxi.h"
#include "gc/ssh.h"
#include "gc/sys/driver.h"

struct esxi_conn {
	struct gc_ssh_conn *ssh;
	struct gc_drv_ctx *ctx;     /* of the run that connected: exec counts */
	unsigned command_timeout_ms; /* for changing commands */
	/* Read-only commands (the observation batch, the reboot ping) answer in
	 * seconds on a healthy host; a silent connection must not hold them for
	 * the whole command timeout, which is sized for VIB installs: they get
	 * ssh.read_timeout_s, or command_timeout_ms when that is less. */
	unsigned read_ms;
	const struct gc_target *target;
	struct gc_esxi_facts facts; /* last observation */
	bool have_facts;
	const struct gc_resource *const *res; /* borrowed from the executor */
	size_t nres;
	/* reboot evidence: a dropped connection does not prove a reboot */
	int64_t uptime_before_us; /* -1 when unknown */
	bool uptime_read;         /* uptime_before_us read by the last batch, for the reboot */
	/* the lease's advanced option, as the last lease read on this
	 * connection found it: -1 not read, 0 absent (never leased), 1 there */
	int lease_option;
	/* the lease as this connection's observation read it (facts.lease),
	 * good for one lease read right after it: no exec since, within
	 * LEASE_SEEN_MS (the apply's lease check comes straight after its
	 * observation); any other read asks the host */
	bool lease_took; /* the apply's observation wrote our lease (GC_ESXI_LEASE_TAKE_SCRIPT) */
	bool lease_seen;
	uint64_t lease_seen_ns;
	unsigned lease_seen_exec;
	unsigned nexec; /* execs sent on this connection */
	uint64_t reboot_sent_ns;
	unsigned reboot_resends;
	/* The read-back that the poll finding the host back carried
	 * (reboot.c esxi_wait_host), for the VERIFY right after it: its outcome
	 * (readback_rc, readback_err) and the exec's last line of stderr. */
	bool readback_done;
	int readback_rc;
	struct gc_error readback_err;
	struct gc_buf readback_words;
};

#define LEASE_SEEN_MS 30000u

#define CMD_UPTIME "esxcli system stats uptime get"
#define MAX_REBOOT_RESENDS 2
#define REBOOT_MARGIN_US 250000 /* the latency of the two uptime reads (rebooted()) */

/* The read-back a reboot poll carries (gc_esxi_script_guarded): bound_us,
 * the guard's bound; what came back: the uptime it printed (-1 when none),
 * and whether the read-back ran (the guard found the host rebooted). */
struct esxi_guard {
	long long bound_us;
	long long uptime_us;
	bool ran;
};

/* What the read-back after the wait is to do (esxi_apply_batch), when a
 * VERIFY follows: leave maintenance mode after it (the EXIT after that). */
struct esxi_readback {
	bool exit_mm;
};

/* driver.c: what reboot.c shares of it */
void esxi_sleep_ms(unsigned ms);
int esxi_ssh_open(struct gc_ssh_conn **out, struct gc_drv_ctx *ctx, const struct gc_target *t,
		  unsigned connect_timeout_ms, struct gc_error *err);
bool esxi_has_sriov(const struct esxi_conn *c);
/* One observation exec (flags: gc_esxi_script_lease's), its facts recorded;
 * guard: behind a reboot poll's guard (nothing read when it said no). */
int esxi_observe_leased(struct esxi_conn *c, struct gc_drv_ctx *ctx, struct gc_buf *problems,
			unsigned flags, const char *lock, const char *take, struct esxi_guard *guard,
			struct gc_buf *stderr_out, struct gc_error *err);
/* One changing command; its non-zero exit status is the device saying no. */
int esxi_run_change(struct esxi_conn *c, struct gc_drv_ctx *ctx, const char *cmd,
		    const char *tolerate, struct gc_error *err);

/* reboot.c */
int esxi_send_reboot(struct esxi_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err);
int esxi_wait_host(struct esxi_conn *c, struct gc_drv_ctx *ctx, const struct esxi_readback *rb,
		   struct gc_error *err);
int esxi_verify(struct esxi_conn *c, struct gc_drv_ctx *ctx, bool exit_mm, int *exit_rc,
		struct gc_error *exit_err, struct gc_error *err);
int esxi_boot_time(void *conn, struct gc_drv_ctx *ctx, double *boot_s, struct gc_error *err);

/* Every exec to the host goes through here, counted (`poll`: while it reboots). */
int esxi_host_exec(struct esxi_conn *c, struct gc_ssh_conn *ssh, const char *cmd, bool poll,
		   struct gc_ssh_result *res, struct gc_error *err);
/* The device's own message: its first lines of stderr, else of stdout. */
void esxi_device_message(struct gc_buf *out, const struct gc_ssh_result *r);

/* lease.c: the driver's lease calls (sys/driver.h) */
int esxi_lease_get(void *conn, struct gc_drv_ctx *ctx, char **out, struct gc_error *err);
int esxi_lease_set(void *conn, struct gc_drv_ctx *ctx, const char *value, struct gc_error *err);
bool esxi_lease_taken(void *conn);
int esxi_lease_take(void *conn, struct gc_drv_ctx *ctx, const char *lock, const char *value,
		    char **held, struct gc_error *err);
int esxi_lease_clear_ours(void *conn, struct gc_drv_ctx *ctx, const char *lock, bool *cleared,
			  struct gc_error *err);

#endif
