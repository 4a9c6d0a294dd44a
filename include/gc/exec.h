/*
 * exec.h - observe, plan and carry out a plan: the engine behind `apply`
 * and the live `plan`.
 *
 *   1. lock the cluster (include/gc/journal.h) and read its journal;
 *   2. connect to every selected target (one connection per target per
 *      run, in parallel) and observe each in one batch;
 *   3. plan against what was observed plus what only the journal knows
 *      (a reboot owed, a maintenance mode we entered);
 *   4. run the plan wave by wave.  Inside a wave a pool of --parallelism
 *      workers picks any target whose next action has all its deps done,
 *      runs that one action on the target's connection and releases the
 *      target: no worker ever waits on another target, so no parallelism
 *      setting can deadlock.  Each action is journalled (start, then done or
 *      failed) with fsync before and after.
 *
 * Faults: a transport fault is retried with backoff on a new connection
 * after re-observing (an action whose resource already holds its desired
 * values is not re-sent).  A device refusal fails that target: its later
 * actions and every action depending on them are skipped, other targets go
 * on (--fail-fast stops starting new actions anywhere).  A failed ESXi host
 * that we put into maintenance mode is taken out again at the end of its
 * wave when it can be; when it cannot (it did not come back from a reboot),
 * the report says so.
 *
 * The cluster lease (src/exec/lease.c): apply writes a lease on every
 * target whose driver carries one (ESXi hosts) once its plan has changes,
 * before they are approved or run, and refuses
 * (GC_ELOCKED, naming the holder) when another apply's unexpired lease is
 * there; it clears its own at the end.
 *
 * Halting: before each wave, when more targets have failed (observation or
 * an action) than rolling.max_failures allows (default 0), the rollout
 * halts: that wave and the later ones are not started (their actions are
 * counted as not started), unless continue_on_error.  The wave in flight
 * always finishes its hosts.
 */
#ifndef GC_EXEC_H
#define GC_EXEC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/plan.h"
#include "gc/sys/driver.h"

enum gc_exec_event_kind {
	GC_EV_CONNECT,  /* connecting / observing a target */
	GC_EV_OBSERVED, /* target observed */
	GC_EV_START,    /* action started */
	GC_EV_DONE,
	GC_EV_FAILED,
	GC_EV_SKIPPED,
	GC_EV_RETRY,    /* transport fault, retrying */
	GC_EV_NOTE,     /* driver's current step */
	GC_EV_WARN,     /* something the user must see (always printed) */
	GC_EV_WAVE,     /* a wave begins */
	GC_EV_PLANNED,  /* the plan is built (plan set), before anything changes */
};

struct gc_exec_event {
	enum gc_exec_event_kind kind;
	const struct gc_target *target; /* NULL for GC_EV_WAVE */
	const struct gc_action *action; /* NULL for CONNECT/OBSERVED/NOTE/WAVE */
	const char *message;            /* note, failure text, or NULL */
	size_t wave;
	const struct gc_plan *plan;     /* GC_EV_PLANNED only */
};

struct gc_exec_opts {
	const char *state_dir;  /* journal and lock; required */
	unsigned parallelism;   /* workers; 0: 64 (the work waits on the network, not the CPU) */
	bool fail_fast;
	bool continue_on_error; /* never halt the rollout after a failed wave */
	bool plan_only;         /* observe and plan; change nothing */
	bool unlock;            /* with plan_only: observe, then clear every cluster lease
				 * on the targets, whoever holds it (unlock --force) */
	unsigned retries;       /* transport retries per action; 0: 3 */
	unsigned retry_base_ms; /* first backoff, doubled each time; 0: 250 */
	unsigned kinds;         /* bitmask of (1u << gc_target_kind) to act on; 0: all */
	struct gc_drv_settings drv;
	struct gc_plan_opts plan;
	/* A saved plan: per graph target index, the fingerprint it was made
	 * against (NULL entries: not in it).  Any difference refuses the run,
	 * naming the target, before anything changes.  NULL: no saved plan. */
	const char *const *expect_fingerprints;
	/* Called with the plan (when it has changes) before anything changes;
	 * false cancels the run (GC_ERROR, "apply cancelled").  May be NULL. */
	bool (*approve)(void *arg, const struct gc_plan *p);
	void *approve_arg;
	void (*event)(void *arg, const struct gc_exec_event *ev); /* may be NULL; serialised */
	void *event_arg;
	volatile sig_atomic_t *interrupted; /* set by a SIGINT handler; may be NULL */
};

struct gc_exec_target_report {
	const struct gc_target *target;
	size_t done, failed, skipped;
	char *error;                 /* first failure, or NULL */
	bool left_in_maintenance;    /* loudly reported */
	char *maintenance_why;
	bool reboot_owed;            /* a change still waits for a reboot */
	size_t not_started;          /* actions in waves the halted rollout did not start */
	bool recovered;              /* taken out of maintenance mode after its failure */
	bool recovered_on_stop;      /* ... after the user's signal stopped its window */
	/* a vCenter or KVM host (libvirt) target: the VMs this run powered off
	 * for a window that did not finish, powered back on by the recovery,
	 * and those left off, ", "-separated; vms_off_why: a line for each left
	 * off, saying why; NULL none */
	char *vms_back_on;
	char *vms_left_off;
	char *vms_off_why;
	/* a vCenter: the VMs vMotion moved off a host for a window that did not
	 * finish, moved back by the recovery, and those left where they run
	 * (their host stayed out of service, or the move failed); vms_away_why:
	 * a line for each left away; NULL none */
	char *vms_moved_back;
	char *vms_left_away;
	char *vms_away_why;
	/* round trips to the target (drivers that count them: ESXi), besides
	 * the polls while it rebooted */
	uint64_t execs, poll_execs;
	char fingerprint[32];        /* "fnv1a64:<16 hex>" of what was observed; "" when not */
};

struct gc_exec_report {
	struct gc_plan *plan;         /* what was planned (owned) */
	struct gc_observed *observed; /* what was observed (owned) */
	struct gc_exec_target_report *targets; /* per graph target (index) */
	size_t ntargets;
	size_t done, failed, skipped;
	size_t out_of_scope; /* actions on target kinds not selected (--only) */
	uint64_t changing_commands;
	bool interrupted;
	/* halting: the first wave not started (1-based; 0: the rollout did not
	 * halt), how many targets had failed then, and what was not started */
	size_t halted_before_wave;
	size_t failed_targets;
	size_t not_started;
	double observe_s, apply_s;
	double lease_s; /* taking the cluster lease before the waves and clearing it after */
	/* the cluster lease: on how many targets it was taken (of them, in the
	 * observation's own exec, and in the first exec of the target's first
	 * changing step) and cleared (of them, in the target's last step's
	 * exec); `apply -v` */
	size_t lease_taken, lease_taken_observing, lease_taken_in_step, lease_cleared,
		lease_cleared_last_step;
};

/*
 * Observe, plan and (unless plan_only) apply.  Returns 0 when every
 * selected action succeeded (or there was nothing to do); GC_EREMOTE when
 * some target failed (details per target in the report); GC_EINTR when
 * interrupted; other codes when nothing could start (lock held, a target
 * kind without a driver was selected...).  The report is filled whenever
 * planning got that far; free it with gc_exec_report_free().
 */
int gc_exec_run(struct gc_exec_report *out, const struct gc_graph *g,
		const struct gc_exec_opts *opts, struct gc_error *err);
void gc_exec_report_free(struct gc_exec_report *r);

/*
 * `--only`: the resources of g on the target kinds in `kinds` (bitmask of
 * 1u << gc_target_kind) as a graph of their own; must-happen-before edges
 * that ran through left-out resources join the kept ends directly.  VMs are
 * kept for the planner only with vCenter selected.  *left_out counts the
 * resources left out.  *out borrows from g (and its cluster).
 */
int gc_exec_scope(struct gc_graph **out, const struct gc_graph *g, unsigned kinds,
		  size_t *left_out, struct gc_error *err);

/*
 * `--only` and `--target`: as gc_exec_scope (kinds 0: all), keeping only the
 * resources of the targets (hosts, switches, the vCenter) or VMs whose name
 * matches one of the fnmatch(3) patterns targets[0..ntargets) (none: all).
 * The vCenter target stays when a kept VM needs it.
 */
int gc_exec_scope_select(struct gc_graph **out, const struct gc_graph *g, unsigned kinds,
			 const char *const *targets, size_t ntargets, size_t *left_out,
			 struct gc_error *err);
/* True when name matches one of the patterns (or there are none). */
bool gc_exec_target_matches(const char *const *pats, size_t npats, const char *name);

/* The driver for a target kind in this build, or NULL. */
const struct gc_driver *gc_exec_driver(enum gc_target_kind kind);

#endif
