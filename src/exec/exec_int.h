/*
 * exec_int.h - private to src/exec: the driver registry and the run state
 * that exec.c (connect, observe, schedule, run) and recover.c (what the
 * journal remembers across runs, recovery after the waves) share.
 */
#ifndef GC_EXEC_INT_H
#define GC_EXEC_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gc/exec.h"
#include "gc/heap.h"
#include "gc/journal.h"
#include "gc/sys/driver.h"

extern const struct gc_driver gc_driver_esxi;
extern const struct gc_driver gc_driver_onyx;
extern const struct gc_driver gc_driver_vcenter;
extern const struct gc_driver gc_driver_guest;
extern const struct gc_driver gc_driver_libvirt;
extern const struct gc_driver gc_driver_kvm;

enum astate { A_PENDING, A_RUNNING, A_DONE, A_FAILED, A_SKIPPED, A_OUT_OF_SCOPE };

struct tslot {
	const struct gc_target *target;
	const struct gc_driver *drv;
	void *conn;
	bool busy;
	bool failed;           /* a device or fatal error: stop this target */
	bool observed;
	bool maint_ours;       /* in maintenance because we put it there */
	bool maint_left;       /* the driver left it in a failed step (gc_drv_maintenance_left) */
	bool reboot_owed;      /* journal: a reboot-needing change awaits its reboot */
	bool reboot_owed_logged;
	bool in_reboot;        /* REBOOT sent, VERIFY not yet passed */
	double reboot_sent_ts; /* journal: when the reboot of the owed change went out; 0 none */
	double reboot_unseen_ts; /* journal: a reboot went out that no wait or verify saw
				  * through (its run was killed, or gave up); 0 none */
	bool unseen_is_start;  /* ... or, for a guest, its VM's start that no step of
				* the guest followed (recover.c start_unseen) */
	bool leased;           /* carries our cluster lease (lease.c) */
	bool lease_left;       /* journal: a run of ours wrote the lease, never cleared it */
	bool lease_left_before; /* lease_left as the journal had it before this run */
	bool lease_offered;    /* the observation was to take the lease (journalled) */
	bool lease_read_free;  /* the lease check read no lease, or one of ours */
	bool lease_pending;    /* to be taken in its first changing step (journalled) */
	bool lease_maybe;      /* a step's take of it may have written it: cleared at the end */
	bool release_inline;   /* the step going out is its last: clear the lease in it */
	size_t step_n;         /* the actions of the step going out (gc_exec_lease_step) */
	bool released_inline;  /* ... and the driver did */
	bool counted_unleased; /* its actions count in run.unleased_left */
	size_t left;           /* its plan actions not finished (lease.c) */
	bool save_owed;        /* journal: switch commands sent, their save not confirmed */
	bool save_owed_logged;
	bool lanes;            /* drv->shared_conn: actions of different VMs run at once */
	bool lane_failed;      /* lanes: some VM's action failed (the others went on) */
	struct gc_exec_target_report *rep;
};

struct gc_drv_ctx {
	const struct gc_graph *graph;
	const struct gc_exec_opts *opts;
	struct gc_observed *obs;
	pthread_mutex_t obs_mu;
	pthread_mutex_t ev_mu;
	uint64_t changes;
	bool vcenter_observed; /* the vCenter's inventory is in obs (guests ask for VM power) */
	const char *lease_offer; /* the lease the observation writes (lease.c), or NULL */
};

struct run {
	struct gc_drv_ctx ctx;
	struct gc_journal *journal;
	struct gc_exec_report *rep;
	struct tslot *slots; /* per graph target */
	size_t nslots;
	enum astate *st;     /* per action (seq - 1) */
	/* resources of each target, for observation */
	const struct gc_resource ***tres;
	size_t *ntres;
	/* scheduler */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const struct gc_plan_wave *wave;
	size_t wave_index;
	size_t *next;        /* per wave target: index of its next action */
	/* the wave's targets worth a look (exec.c, the scheduler): a ring of
	 * wave target indexes, each at most once (queued); a target whose next
	 * action waits on another's is not looked at again before that one
	 * settles: it waits in that action's list (wait_head per action seq,
	 * wait_next per wave target, both index + 1, 0 for none) */
	size_t *rq;
	size_t rq_head, rq_len;
	bool *queued;
	size_t *wait_head;
	size_t *wait_next;   /* per waiter: a wave target, then a lane action */
	/* the actions of the wave's targets with lanes (a vCenter: any of its
	 * VMs' actions may be ready), numbered in the order the old scan went
	 * (target, then its list): lane_act[k], its wave target lane_tgt[k].
	 * Those worth a look sit in a min-heap of k (lheap, lqueued), so a pick
	 * takes the first ready one in that order; a blocked one waits, as a
	 * target does, as waiter ntargets + k */
	const struct gc_action **lane_act;
	size_t *lane_tgt;
	size_t nlane_acts;
	struct gc_heap lheap;
	bool *lqueued;
	bool stop_queued;     /* r->stop seen: every target queued once, to skip the rest */
	size_t remaining;
	bool stop;           /* fail-fast or interrupt */
	bool recovering;     /* recover.c at work: a first signal ends no retry */
	/* recover.c: the first halves of the VMs' pairs (a power-off, a vMotion
	 * away), sorted by target, kind and VM; built at the first need */
	const struct gc_action **halves;
	size_t nhalves;
	char *lease;         /* the lease we hold on the targets, or NULL */
	const char *lease_cluster; /* the cluster it names (take_leases) */
	uint64_t lease_taken_ns; /* when take_leases ended (the pending ones: lease.c) */
	uint64_t lease_ns;   /* when it was written */
	char lease_lock[17]; /* this machine and state directory, hashed */
	bool expect_changes; /* journal: no run yet, or the last one did not converge */
	size_t unleased_left; /* unfinished actions on targets without our lease */
	bool inline_release; /* leases may be cleared in each target's last exec */
	unsigned parallelism;
};

/* exec.c */
/* fn(arg) on n threads at once (on this one when none can be started) */
void gc_exec_run_pool(unsigned n, void *(*fn)(void *), void *arg);
/* schedule.c: run wave wi of the plan */
void gc_exec_run_wave(struct run *r, size_t wi);
void gc_exec_sleep_ms(unsigned ms);
bool gc_exec_transport_fault(int code);
/* A transport fault is not retried: the user's first signal came, and this is
 * not the recovery (which retries as ever: a second signal ends it) */
bool gc_exec_no_retry(const struct run *r);
unsigned gc_exec_retries(const struct gc_exec_opts *o);
unsigned gc_exec_backoff_ms(const struct gc_exec_opts *o, unsigned attempt);
char *gc_exec_action_id(const struct gc_action *a);
void gc_exec_drop_conn(struct tslot *s);
/* fn(r, slots[i], i, arg) for each i, on up to --parallelism threads at once:
 * the same exchange with many targets costs one round trip, not n. */
void gc_exec_for_slots(struct run *r, struct tslot **slots, size_t n,
		       void (*fn)(struct run *r, struct tslot *s, size_t i, void *arg), void *arg);
void gc_exec_emit(struct gc_drv_ctx *ctx, enum gc_exec_event_kind kind, const struct gc_target *t,
		  const struct gc_action *a, const char *msg, size_t wave);
void gc_exec_journal(struct run *r, const struct gc_target *t, const char *action,
		     const char *kind, enum gc_jstate st, const char *detail);
bool gc_exec_selected(const struct gc_exec_opts *o, enum gc_target_kind k);
void gc_exec_slot_error(struct tslot *s, const char *msg);
int gc_exec_connect_slot(struct run *r, struct tslot *s, bool retry, struct gc_error *err);
/* A lease write on s (lease.c): call(s, r, arg, err) on s's connection.
 * On a transport fault the connection is made again and the call repeated,
 * as for an action, except on compare-and-set targets (lease_atomic),
 * where a second try could not tell our own write from another apply's. */
typedef int (*gc_exec_lease_fn)(struct tslot *s, struct run *r, void *arg, struct gc_error *err);
int gc_exec_lease_call(struct run *r, struct tslot *s, gc_exec_lease_fn call, void *arg,
		       struct gc_error *err);
/* ... repeated on every target: for a call that a second try cannot get
 * wrong (the lease read before any write, the compare-and-clear of our
 * own lease at the end) */
int gc_exec_lease_call_repeatable(struct run *r, struct tslot *s, gc_exec_lease_fn call, void *arg,
				  struct gc_error *err);

/* action.c: one action, or a batch of them (sys/driver.h's apply_batch) */
#define GC_EXEC_BATCH_MAX 64
int gc_exec_run_action(struct run *r, struct tslot *s, const struct gc_action *a,
		       struct gc_error *err);
void gc_exec_execute(struct run *r, struct tslot *s, const struct gc_action *a);
size_t gc_exec_gather_batch(struct run *r, const struct tslot *s, const struct gc_plan_target *pt,
			    size_t first, const struct gc_action **acts, size_t max);
void gc_exec_execute_batch(struct run *r, struct tslot *s, const struct gc_action **acts, size_t n);

/* rollout.c */
bool gc_exec_halted(struct run *r, const struct gc_graph *g, size_t wi);
void gc_exec_not_started(struct run *r, size_t wi);
void gc_exec_fingerprint(struct run *r);
void gc_exec_desired_hash(const struct gc_graph *g, char out[32]);
int gc_exec_check_fingerprints(struct run *r, struct gc_error *err);
const char **gc_exec_unknown_targets(const struct run *r);

/* lease.c */
int gc_exec_take_leases(struct run *r, const char *cluster, struct gc_error *err);
void gc_exec_renew_leases(struct run *r, const char *cluster);
void gc_exec_release_leases(struct run *r);
void gc_exec_break_leases(struct run *r);
void gc_exec_clear_left_leases(struct run *r);
void gc_exec_offer_lease(struct run *r, const char *cluster);
void gc_exec_lease_before_observe(struct run *r, struct tslot *s);
int gc_exec_lease_write_pending(struct run *r, struct gc_error *err);
int gc_exec_lease_take_pending(struct run *r, struct tslot *s, const struct gc_action *first,
			       struct gc_error *err);
const char *gc_exec_lease_step_take(struct run *r, struct tslot *s);
int gc_exec_lease_step_result(struct run *r, struct tslot *s, int outcome, const char *held,
			      struct gc_error *err);
void gc_exec_lease_after_observe(struct run *r, struct tslot *s, bool observed);
void gc_exec_count_lease_work(struct run *r);
void gc_exec_lease_settled(struct run *r, struct tslot *s, size_t n);
void gc_exec_lease_step(struct run *r, struct tslot *s, size_t n);
bool gc_exec_lease_may_release(const struct run *r, const struct tslot *s);
void gc_exec_lease_after_step(struct run *r, struct tslot *s);

/* recover.c */
void gc_exec_recall_journal(struct run *r, const char *cluster);
void gc_exec_check_reboots(struct run *r);
void gc_exec_feed_journal(struct run *r);
void gc_exec_remember_before(struct run *r, struct tslot *s, const struct gc_action *a,
			     const char *aid);
void gc_exec_remember_after(struct run *r, struct tslot *s, const struct gc_action *a,
			    const char *aid, bool ok);
void gc_exec_settle_saves(struct run *r);
void gc_exec_recover_hosts(struct run *r, const struct gc_plan_wave *w);
void gc_exec_restore_vm_power(struct run *r, size_t wave);

#endif
