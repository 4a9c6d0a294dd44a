/*
 * plan_int.h - internal state shared by plan.c (diff, synthesis) and
 * order.c (sort, chains, waves).  Not a public API.
 */
#ifndef GC_PLAN_INT_H
#define GC_PLAN_INT_H

#include "gc/plan.h"
#include "gc/strmap.h"

struct gc_action_link {
	struct gc_action *a;
	struct gc_action_link *next;
};

/* A maintenance window of one ESXi host (indexed by target index). */
struct window {
	struct gc_action **maint; /* changes that need maintenance or a reboot */
	size_t nmaint, cap, nreboot;
	size_t batch; /* the wave it belongs to */
	bool open;    /* the host has a window (changes, an owed reboot, or ours to exit) */
	bool pending; /* observed: a reboot is owed (reboot_pending) */
	const char *pending_why;
	struct gc_action *enter, *reboot, *wait, *verify, *exit;
};

/* Why a maintenance window powers a VM off instead of moving it. */
enum evac_why {
	EVAC_PINNED,     /* it cannot be live-migrated (detail: pinned_by, or NULL) */
	EVAC_NO_DEST,    /* no host of the spec can take it by vMotion */
	EVAC_NO_VMOTION, /* rolling.allow_vmotion is false */
	EVAC_OWN,        /* its own changes need it off (and span the window) */
};

/* A VM out of service (power-off) or on the move (MIGRATE) while its host
 * is in maintenance mode: synth.c records them, budget.c rolls them. */
struct evac {
	struct gc_action *off, *on; /* POWER_OFF and POWER_ON, or MIGRATE off and back */
	const struct window *w;     /* its host's */
	const char *vm;
	size_t order; /* its gc_graph.vms index; an unmanaged VM's: nvms + its observed index */
	enum evac_why why;  /* power-offs only */
	const char *detail; /* EVAC_PINNED: "passthrough GPU 0000:3b:00.0", or NULL */
};

/* The actions of one managed VM (indexed like gc_graph.vms). */
struct vmstate {
	struct gc_action **actions;
	size_t n, cap;
};

struct builder {
	struct gc_plan *p;
	const struct gc_graph *g;
	const struct gc_observed *o;
	struct gc_observed *empty; /* --offline: nothing exists */
	struct gc_error *err;
	struct gc_action **ract; /* per resource index: its action or NULL */
	struct gc_action **list; /* all actions in creation order */
	size_t *minwave;         /* per creation index */
	size_t n, cap;
	struct window *win;
	struct vmstate *vms;
	struct gc_action **vm_off, **vm_on; /* per VM: a window of its own changes (rolled) */
	struct evac *evac;                  /* VMs leaving hosts for maintenance (rolled) */
	size_t nevac, capevac;
	struct gc_strmap *vmindex; /* name -> vmstate */
	const struct gc_target *vcenter;
	struct gc_buf scratch; /* for "why" texts */
	unsigned *vmotion_in_gb; /* per GPU of the cluster: vGPU GB moved there (vmotion.c) */
};

struct gc_action *plan_action(struct builder *b, enum gc_action_kind kind, enum gc_op op,
			      const struct gc_target *t, const char *why);
void plan_dep(struct builder *b, struct gc_action *before, struct gc_action *after);
/* Add a sentence to the plan's warnings (gc_plan.warnings). */
void plan_warn(struct builder *b, const char *fmt, ...) GC_PRINTF(2, 3);
struct vmstate *plan_vmstate(struct builder *b, const char *vm);
const struct gc_graph_vm *plan_vm(struct builder *b, const char *vm);
/* The observed power of a VM; *exists false when nobody saw it (synth.c). */
enum gc_power plan_observed_power(struct builder *b, const char *vm, bool *exists);
/* "one reboot for 2 changes that take effect after a reboot", then
 * "; also owed: WHY" (or alone "a reboot is owed: WHY"; dflt when why is
 * NULL): the why of every synthesized reboot (synth.c) */
void plan_reboot_why(struct gc_buf *s, const char *reboot, size_t n, bool pending,
		     const char *pending_why, const char *dflt);
/* synth.c, in the order gc_plan_build() calls them */
void plan_open_windows(struct builder *b);
int plan_check_reachable(struct builder *b);
int plan_close_windows(struct builder *b);
void plan_collect_vm_actions(struct builder *b);
void plan_synthesize_vm(struct builder *b, size_t i);
void plan_synthesize_unmanaged(struct builder *b);
void plan_vm_after_window(struct builder *b);
/* budget.c: rolling.max_unavailable_vms over the evacuations and the VMs'
 * own windows (after synthesis: VMs, KVM hosts, unmanaged VMs) */
void plan_budget_vms(struct builder *b);
/* vmotion.c: the host a live-migrated VM goes to while from_host is in
 * maintenance (NULL: none can take it; why says so, host by host), and the
 * order against that host's own window */
const char *plan_vmotion_dest(struct builder *b, const char *vm_name, const char *from_host,
			      struct gc_buf *why);
void plan_vmotion_order(struct builder *b, const char *dest, const char *from_host,
			struct gc_action *off, struct gc_action *back);
/* guest.c: one reboot per guest whose changes need it */
void plan_guest_reboots(struct builder *b);
/* Does r depend on a reboot-needing resource of its own target? (guest.c) */
bool plan_behind_reboot(const struct gc_resource *r);
/* Whether the graph has a target of this kind: the passes for KVM hosts and
 * guests return at once without one (each touches every action). */
bool plan_has_kind(const struct gc_graph *g, enum gc_target_kind kind);
/* kvm.c: one reboot per KVM host whose changes need it, its VMs off around it */
void plan_kvm_reboots(struct builder *b);
/* Sort, add target chains, number, cut waves, fill stats (order.c). */
int plan_order(struct builder *b);

#endif
