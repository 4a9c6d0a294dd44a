/*
 * plan.h - observe -> diff -> synthesize -> order: what `apply` would do.
 *
 * gc_plan_build() diffs every resource of the graph against the observed
 * store (create / update / no-op; delete for what the spec owns and no
 * longer wants), then adds the steps people forget, per ESXi host whose
 * changes need maintenance mode:
 *
 *     power off (or, with rolling.allow_vmotion, migrate away) the running
 *     VMs of the host  ->  ENTER_MAINTENANCE  ->  the host's changes  ->
 *     one REBOOT when any change needs it  ->  WAIT_HOST  ->  VERIFY  ->
 *     EXIT_MAINTENANCE  ->  the VMs' own changes  ->  power on / migrate back
 *
 * and per VM with a change that needs it powered off: one POWER_OFF before
 * and one POWER_ON after.  Every synthesized step carries a human `why`.
 * Exceptions, all documented in docs/planner.md: a change flagged
 * GC_RES_AFTER_REBOOT behind a reboot-needing dependency gets a second
 * reboot (ECC after installing the vGPU manager); an observed owed reboot
 * (reboot_pending) opens a window without a change; a host an earlier apply
 * left in maintenance mode (maintenance_ours) gets EXIT_MAINTENANCE only.
 *
 * For drivers: an APPLY action carries `resource` (kind + full desired
 * `props`) and `changes` (only what differs, old -> new); a DELETE has
 * resource == NULL, `resource_id`, `res_kind` and the old values.
 *
 * Actions form a DAG (deps).  Besides the resource edges of the graph, the
 * actions of one connection keep a sequence: an ESXi host, a switch and a
 * guest each run their actions in the listed order, and so do the actions
 * of one VM on the vCenter (different VMs on the vCenter may run in
 * parallel).  Actions are grouped into waves: no wave holds more than
 * rolling.max_unavailable hosts in maintenance mode, and a host's whole
 * maintenance window (evacuation to return) sits in one wave.  An executor
 * runs wave by wave; inside a wave it may run targets in parallel as long
 * as it honours deps (each target's list is a subsequence of one global
 * topological order, so running each list in order cannot deadlock).
 *
 * The plan owns its actions (arena) and borrows resources and targets from
 * the graph, which must outlive it.
 */
#ifndef GC_PLAN_H
#define GC_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "gc/graph.h"
#include "gc/observed.h"

enum gc_op {
	GC_OP_NONE,   /* synthesized step: no resource diff */
	GC_OP_CREATE, /* "+" */
	GC_OP_UPDATE, /* "~" */
	GC_OP_DELETE, /* "-" */
};

enum gc_action_kind {
	GC_ACT_APPLY,             /* create/update/delete `resource` */
	GC_ACT_ENTER_MAINTENANCE, /* ESXi target */
	GC_ACT_EXIT_MAINTENANCE,
	GC_ACT_REBOOT,
	GC_ACT_WAIT_HOST,         /* wait until the host answers again */
	GC_ACT_VERIFY,            /* re-observe the host's changed resources */
	GC_ACT_POWER_OFF,         /* vCenter target, `vm`: guest shutdown */
	GC_ACT_POWER_ON,
	GC_ACT_MIGRATE,           /* vMotion `vm` off `host` (or back onto it) */
};

/* "apply", "enter_maintenance", ... (JSON spelling). */
const char *gc_action_kind_name(enum gc_action_kind k);
/* "+", "~", "-" or "" */
const char *gc_op_symbol(enum gc_op op);
/* "create", "update", "delete", "none" */
const char *gc_op_name(enum gc_op op);

struct gc_change {
	const char *key;
	const char *old_value; /* NULL: not set before */
	const char *new_value; /* NULL: removed */
};

struct gc_action_link; /* internal */

struct gc_action {
	size_t seq;  /* 1-based position in the global order */
	const struct gc_target *target;
	const struct gc_resource *resource; /* APPLY (and POWER_* of vm.power); else NULL */
	const char *resource_id;            /* resource's id, also for deletes of unknown ones */
	const char *host; /* the ESXi host concerned, or NULL */
	const char *vm;   /* the VM concerned, or NULL */
	const char *dest_host; /* MIGRATE: where to (back onto `host`); NULL: off `host`, vCenter picks */
	struct gc_change *changes;
	size_t nchanges;
	const char *why;     /* for synthesized steps (and some resource actions), else NULL */
	size_t wave;         /* 0-based */
	struct gc_action **deps; /* must finish first (includes target sequence) */
	size_t ndeps;
	enum gc_action_kind kind;
	enum gc_op op;
	enum gc_res_kind res_kind;          /* valid when resource_id != NULL */
	unsigned flags;      /* GC_RES_* flags of the resource */
	bool synthesized;    /* not a resource diff: ENTER/EXIT/REBOOT/... */
	/* internal */
	unsigned nin;
	struct gc_action_link *in, *out;
};

/* The actions of one target in one wave, in execution order. */
struct gc_plan_target {
	const struct gc_target *target;
	struct gc_action **actions;
	size_t nactions;
};

struct gc_plan_wave {
	struct gc_plan_target *targets; /* in graph target order */
	size_t ntargets;
	const char **maintenance_hosts; /* hosts in maintenance mode during this wave */
	size_t nmaintenance_hosts;
};

struct gc_plan_stats {
	size_t add, change, destroy; /* resource actions by op */
	size_t synthesized;          /* ENTER/EXIT/REBOOT/WAIT/VERIFY/POWER/MIGRATE without a diff */
	size_t hosts_in_maintenance;
	size_t reboots;
	size_t critical_path; /* in actions: sum over waves of the longest dep chain in each */
};

struct gc_plan {
	struct gc_arena arena;
	const struct gc_graph *graph; /* borrowed */
	struct gc_action **actions;   /* all, in one topological order (seq) */
	size_t nactions;
	struct gc_plan_wave *waves;
	size_t nwaves;
	struct gc_plan_stats stats;
	unsigned max_unavailable; /* effective */
	bool allow_vmotion;       /* effective */
	/* targets that could not be observed: nothing is planned for them (their
	 * part is unknown); per graph target index, why, or NULL; nunknown counts
	 * them.  unknown is NULL when every target was observed. */
	const char **unknown;
	size_t nunknown;
	/* what the plan cannot honour, one sentence each ("esx01's maintenance
	 * powers off 2 VMs at once (...), over rolling.max_unavailable_vms: 1:
	 * ..."); rendered before the summary and as --json's "warnings" */
	const char **warnings;
	size_t nwarnings;
	struct gc_action **by_wave; /* internal: storage the waves point into */
};

struct gc_plan_opts {
	unsigned max_unavailable; /* 0: the spec's rolling.max_unavailable */
	int allow_vmotion;        /* -1: the spec's rolling.allow_vmotion; 0/1 override */
	unsigned parallelism;     /* reserved for exec; ignored by the planner */
	/* per graph target index: why the target could not be observed (its
	 * part of the plan is unknown: none of its resources is diffed), or
	 * NULL; the array itself may be NULL */
	const char *const *unknown;
};

#define GC_PLAN_OPTS_INIT {0, -1, 0, NULL}

/*
 * Build a plan.  `observed` may be NULL: nothing exists (--offline).
 * GC_ECYCLE names a cycle (resource ids, or actions by kind and target);
 * GC_EREMOTE when a host that needs changes is observed unreachable.
 */
int gc_plan_build(struct gc_plan **out, const struct gc_graph *g,
		  const struct gc_observed *observed, const struct gc_plan_opts *opts,
		  struct gc_error *err);
void gc_plan_free(struct gc_plan *p);

/* True when the plan has nothing to do. */
bool gc_plan_empty(const struct gc_plan *p);

/*
 * Does an observed value hold the desired one of resource r?  Exact
 * strings, except VMX booleans (r a vm.extra_config): vSphere reads
 * `TRUE`, `true` and `True` alike, so a VM set `TRUE` by hand, as the
 * reference guides write it, is not drift; and an esxi.nic_firmware's
 * number (num_of_vfs), which is a minimum: the firmware offering more VFs
 * than the port's max_vfs is no change; and a dvs's values, which are
 * sets (uplink.<host> = "vmnic4,vmnic5", any order: gc_set_same).
 * observed may be NULL (absent).
 */
bool gc_plan_value_same(const struct gc_resource *r, const char *observed, const char *desired);
/* The desired value of r's property i: the graph's, or, where that is
 * GC_PROP_LEARNED, what the driver learned on the target (the text
 * GC_PROP_LEARNED while nothing was). */
const char *gc_plan_desired(const struct gc_observed *o, const struct gc_resource *r, size_t i);

/* One line naming an action: "~ esx01/esxi.graphics" or "reboot esx01". */
void gc_action_describe(struct gc_buf *out, const struct gc_action *a);

/* ---------------------------------------------------------------- rendering */

#define GC_RENDER_COLOR 0x1u

/* The human plan, grouped by wave and target, ending with the summary line. */
void gc_plan_render_text(struct gc_buf *out, const struct gc_plan *p, unsigned flags);
/* The same written to f as it is rendered, in chunks of 64 KiB (a large
 * plan is never held whole); -1 when a write failed. */
int gc_plan_write_text(FILE *f, const struct gc_plan *p, unsigned flags);
/* "Plan: 3 to add, ... (1 hosts need maintenance, 1 reboots)." without newline. */
void gc_plan_render_summary(struct gc_buf *out, const struct gc_plan *p);
/* Stable JSON, docs/plan-json.md, specs/plan-v1.schema.json, into a buffer. */
void gc_plan_render_json(struct gc_buf *out, const struct gc_plan *p);
/* The same bytes written to f as they are made (in 64 KiB pieces, never the
 * whole document in memory; f is not flushed).  0, or GC_EIO when a write
 * failed. */
int gc_plan_write_json(FILE *f, const struct gc_plan *p, struct gc_error *err);

#endif
