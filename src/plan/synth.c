/*
 * synth.c - the steps people forget: maintenance windows and VM power.
 *
 * Per ESXi host with a change flagged NEEDS_MAINTENANCE/NEEDS_REBOOT (its
 * own, or one of its configuration made through vCenter; or an
 * owed reboot, or a maintenance mode an earlier apply left behind): a
 * window — evacuate the running VMs (migrate or power off), enter, the
 * changes, one reboot (two when a change needs the first one's drivers),
 * wait, verify, exit, bring the VMs back.  Per VM with a change flagged
 * NEEDS_VM_OFF while it runs: one power-off before, one power-on after.
 * Windows are batched rolling.max_unavailable at a time (batch = wave).
 * Every synthesized step gets a `why`.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "plan_int.h"

static void whyf(struct builder *b, struct gc_action *a, const char *fmt, ...) GC_PRINTF(3, 4);

static void whyf(struct builder *b, struct gc_action *a, const char *fmt, ...)
{
	va_list ap;

	gc_buf_reset(&b->scratch); /* one buffer for all: no malloc per step */
	va_start(ap, fmt);
	gc_buf_vprintf(&b->scratch, fmt, ap);
	va_end(ap);
	a->why = gc_arena_strndup(&b->p->arena, gc_buf_str(&b->scratch), b->scratch.len);
}

/* What an action changes, for "why" lines. */
static void phrase(struct gc_buf *s, const struct gc_action *a)
{
	if (a->resource != NULL)
		gc_resource_describe(s, a->resource);
	else
		gc_buf_puts(s, a->resource_id);
}


/* ---------------------------------------------------------------- 2. synthesis */

static void list_phrases(struct gc_buf *s, struct gc_action **v, size_t n)
{
	for (size_t i = 0; i < n && i < 3; i++) {
		if (i > 0)
			gc_buf_puts(s, ", ");
		phrase(s, v[i]);
	}
	if (n > 3)
		gc_buf_printf(s, " and %zu more", n - 3);
}

/* The ESXi host whose maintenance window holds a, or NULL: its own target,
 * or the host a vCenter change of host configuration names (passthrough
 * of an ESXi 6.x host, build.c). */
static const struct gc_target *window_host(struct builder *b, const struct gc_action *a)
{
	if (a->target->kind == GC_TARGET_ESXI)
		return a->target;
	if (a->target->kind == GC_TARGET_VCENTER && a->vm == NULL && a->host != NULL)
		return gc_graph_target(b->g, GC_TARGET_ESXI, a->host);
	return NULL;
}

void plan_open_windows(struct builder *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct gc_action *a = b->list[i];
		const struct gc_target *host = window_host(b, a);
		struct window *w;

		if (host == NULL || a->op == GC_OP_NONE ||
		    !(a->flags & (GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT)))
			continue;
		w = &b->win[host->index];
		if (w->nmaint == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 8;
			w->maint = gc_xrealloc(w->maint, w->cap * sizeof(*w->maint));
		}
		w->maint[w->nmaint++] = a;
		if (a->flags & GC_RES_NEEDS_REBOOT)
			w->nreboot++;
	}
}

/* True when a changes with tools that a reboot-needing change of the same
 * window installs (nvidia-smi from the vGPU manager VIB). */
static bool needs_first_reboot(struct builder *b, const struct window *w,
			       const struct gc_action *a)
{
	const struct gc_resource *r = a->resource;

	if (r == NULL || !(r->flags & GC_RES_AFTER_REBOOT))
		return false;
	for (size_t i = 0; i < r->ndeps; i++) {
		const struct gc_resource *dr = r->deps[i];
		const struct gc_action *d = b->ract[dr->index];

		if (dr->target != r->target || !(dr->flags & GC_RES_NEEDS_REBOOT))
			continue;
		/* changed in this window, or already changed by an earlier run
		 * whose reboot is still owed (the VIB is installed, not loaded) */
		if (d != NULL || w->pending)
			return true;
	}
	return false;
}

void plan_reboot_why(struct gc_buf *s, const char *reboot, size_t n, bool pending,
		     const char *pending_why, const char *dflt)
{
	if (n > 0)
		gc_buf_printf(s, "one %s for %zu change%s that take%s effect after a reboot", reboot, n,
			      n == 1 ? "" : "s", n == 1 ? "s" : "");
	if (pending)
		gc_buf_printf(s, "%s%s", n > 0 ? "; also owed: " : "a reboot is owed: ",
			      pending_why ? pending_why : dflt);
}

static struct gc_action *reboot_step(struct builder *b, const struct gc_target *tg,
				     struct gc_action **wait, const char *why)
{
	struct gc_action *r = plan_action(b, GC_ACT_REBOOT, GC_OP_NONE, tg, why);

	/* a literal: one per host adds up at 10,000 hosts */
	*wait = plan_action(b, GC_ACT_WAIT_HOST, GC_OP_NONE, tg, NULL);
	(*wait)->why = "the host must answer again after the reboot";
	r->host = (*wait)->host = tg->name;
	plan_dep(b, r, *wait);
	b->p->stats.reboots++;
	return r;
}

/*
 * The reboots of one window.  Normally one reboot for every change that
 * needs it.  A change flagged GC_RES_AFTER_REBOOT whose dependency in the
 * same window needs a reboot (ECC via nvidia-smi after installing the VIB)
 * runs after that reboot and, if it needs one too, gets a second.  Returns
 * the last step before VERIFY (the last WAIT_HOST) or NULL.
 */
static struct gc_action *reboot_phases(struct builder *b, struct window *w,
				       const struct gc_target *tg)
{
	struct gc_action *wait1 = NULL, *wait2 = NULL, *r2 = NULL;
	size_t n1 = 0, n2 = 0, n2reboot = 0;
	bool *late = gc_xcalloc(w->nmaint + 1, sizeof(*late));
	struct gc_buf s = GC_BUF_INIT;

	for (size_t i = 0; i < w->nmaint; i++) {
		late[i] = needs_first_reboot(b, w, w->maint[i]);
		if (late[i]) {
			n2++;
			n2reboot += (w->maint[i]->flags & GC_RES_NEEDS_REBOOT) != 0;
		} else if (w->maint[i]->flags & GC_RES_NEEDS_REBOOT) {
			n1++;
		}
	}
	if (n1 > 0 || w->pending) {
		plan_reboot_why(&s, "reboot", n1, w->pending, w->pending_why,
				"configured changes are not active yet");
		w->reboot = reboot_step(b, tg, &wait1, gc_buf_str(&s));
		for (size_t i = 0; i < w->nmaint; i++)
			if (!late[i])
				plan_dep(b, w->maint[i], w->reboot);
		if (w->reboot->nin == 0) /* an owed reboot with nothing before it */
			plan_dep(b, w->enter, w->reboot);
	}
	for (size_t i = 0; i < w->nmaint; i++) {
		if (!late[i])
			continue;
		plan_dep(b, wait1, w->maint[i]);
		whyf(b, w->maint[i], "applied after the reboot: it needs what that reboot loaded");
	}
	if (n2reboot > 0) {
		gc_buf_reset(&s);
		gc_buf_printf(&s, "second reboot: %zu change%s made with the new driver take%s effect "
				  "after a reboot",
			      n2reboot, n2reboot == 1 ? "" : "s", n2reboot == 1 ? "s" : "");
		r2 = reboot_step(b, tg, &wait2, gc_buf_str(&s));
		plan_dep(b, wait1, r2);
		for (size_t i = 0; i < w->nmaint; i++)
			if (late[i])
				plan_dep(b, w->maint[i], r2);
	}
	free(late);
	gc_buf_free(&s);
	(void)n2;
	return wait2 ? wait2 : wait1;
}

/* A host an earlier apply left in maintenance mode, with nothing else to
 * do: only take it out again. */
static void exit_only_window(struct builder *b, struct window *w, const struct gc_target *tg)
{
	w->exit = plan_action(b, GC_ACT_EXIT_MAINTENANCE, GC_OP_NONE, tg, NULL);
	whyf(b, w->exit, "an earlier apply left %s in maintenance mode", tg->name);
	w->exit->host = tg->name;
	b->minwave[w->exit->seq] = w->batch;
}

/* Changes on a host observed unreachable cannot be planned honestly. */
int plan_check_reachable(struct builder *b)
{
	size_t *n = gc_xcalloc(b->g->ntargets + 1, sizeof(*n));
	int rc = 0;

	for (size_t i = 0; i < b->n; i++)
		if (b->list[i]->target->kind == GC_TARGET_ESXI)
			n[b->list[i]->target->index]++;
	for (size_t t = 0; t < b->g->ntargets && rc == 0; t++) {
		const struct gc_observed_host *oh;

		if (n[t] == 0 || b->win[t].nmaint > 0)
			continue; /* windows say it themselves */
		oh = gc_observed_host(b->o, b->g->targets[t]->name);
		if (oh != NULL && !oh->reachable)
			rc = gc_error_set(b->err, GC_EREMOTE,
					  "host '%s' is unreachable: cannot plan its %zu change%s",
					  b->g->targets[t]->name, n[t], n[t] == 1 ? "" : "s");
	}
	free(n);
	return rc;
}

int plan_close_windows(struct builder *b)
{
	size_t k = 0;

	for (size_t t = 0; t < b->g->ntargets; t++) {
		struct window *w = &b->win[t];
		const struct gc_target *tg = b->g->targets[t];
		const struct gc_observed_host *oh =
			tg->kind == GC_TARGET_ESXI ? gc_observed_host(b->o, tg->name) : NULL;
		bool in_maint = oh != NULL && oh->maintenance;
		struct gc_action *last;
		struct gc_buf s = GC_BUF_INIT;

		w->pending = oh != NULL && oh->reboot_pending;
		w->pending_why = w->pending ? oh->reboot_pending_why : NULL;
		if (w->nmaint == 0 && !w->pending && !(in_maint && oh->maintenance_ours))
			continue;
		if (oh != NULL && !oh->reachable)
			return gc_error_set(b->err, GC_EREMOTE,
					    "host '%s' is unreachable: cannot plan its %zu changes "
					    "that need maintenance mode",
					    tg->name, w->nmaint);
		w->open = true;
		w->batch = k++ / b->p->max_unavailable;
		b->p->stats.hosts_in_maintenance++;
		if (w->nmaint == 0 && !w->pending) {
			exit_only_window(b, w, tg);
			continue;
		}
		list_phrases(&s, w->maint, w->nmaint);
		w->enter = plan_action(b, GC_ACT_ENTER_MAINTENANCE, GC_OP_NONE, tg, NULL);
		if (in_maint) {
			/* already in maintenance mode: keep the step so the window
			 * has one shape, but say so (executors skip it) */
			whyf(b, w->enter, "%s is already in maintenance mode%s", tg->name,
			     oh->maintenance_ours ? " (an earlier apply put it there)" : "");
		} else if (w->nmaint == 0) {
			whyf(b, w->enter, "a reboot is owed: %s",
			     w->pending_why ? w->pending_why : "configured changes are not active yet");
		} else {
			whyf(b, w->enter, "%s need%s maintenance mode", gc_buf_str(&s),
			     w->nmaint == 1 ? "s" : "");
		}
		for (size_t i = 0; i < w->nmaint; i++)
			plan_dep(b, w->enter, w->maint[i]);
		last = reboot_phases(b, w, tg);
		w->verify = plan_action(b, GC_ACT_VERIFY, GC_OP_NONE, tg, NULL);
		if (w->nmaint > 0)
			whyf(b, w->verify, "read back the %zu change%s before leaving maintenance mode",
			     w->nmaint, w->nmaint == 1 ? "" : "s");
		else
			whyf(b, w->verify, "check that the configured changes are active after the reboot");
		for (size_t i = 0; i < w->nmaint; i++)
			plan_dep(b, w->maint[i], w->verify);
		if (last == NULL)
			plan_dep(b, w->enter, w->verify);
		plan_dep(b, last, w->verify);
		w->exit = plan_action(b, GC_ACT_EXIT_MAINTENANCE, GC_OP_NONE, tg, NULL);
		w->exit->why = "the host's changes are done and verified";
		plan_dep(b, w->verify, w->exit);
		b->minwave[w->enter->seq] = w->batch;
		w->enter->host = w->verify->host = w->exit->host = tg->name;
		gc_buf_free(&s);
	}
	return 0;
}

static struct window *window_of(struct builder *b, const char *host)
{
	const struct gc_target *t;

	if (host == NULL)
		return NULL;
	t = gc_graph_target(b->g, GC_TARGET_ESXI, host);
	if (t == NULL || !b->win[t->index].open)
		return NULL;
	return &b->win[t->index];
}

/* Actions of each managed VM, in creation order (index by gc_graph.vms). */
void plan_collect_vm_actions(struct builder *b)
{
	const char *last = NULL;
	struct vmstate *vs = NULL;

	for (size_t i = 0; i < b->n; i++) {
		struct gc_action *a = b->list[i];

		if (a->vm == NULL || !gc_target_holds_vms(a->target->kind))
			continue;
		/* a VM's actions come in a run: look its state up once per run */
		if (last == NULL || (a->vm != last && strcmp(a->vm, last) != 0))
			vs = plan_vmstate(b, a->vm);
		last = a->vm;
		if (vs == NULL)
			continue;
		if (vs->n == vs->cap) {
			vs->cap = vs->cap ? vs->cap * 2 : 8;
			vs->actions = gc_xrealloc(vs->actions, vs->cap * sizeof(*vs->actions));
		}
		vs->actions[vs->n++] = a;
	}
}

/* A vMotion waits for vCenter's vgpu.hotmigrate.enabled when this plan sets
 * it (vCenter refuses a vGPU VM's migration until then). */
static void after_hotmigrate(struct builder *b, struct gc_action *migrate)
{
	const struct gc_resource *r = gc_graph_find(b->g, GC_VGPU_HOTMIGRATE_ID);

	if (r != NULL && b->ract[r->index] != NULL)
		plan_dep(b, b->ract[r->index], migrate);
}

/* The migration pair of a VM leaving host for dest (NULL: vCenter picks). */
static struct gc_action *migrate_pair(struct builder *b, const char *vm, const char *host,
				      const char *dest, const char *who, struct gc_action **back)
{
	struct gc_action *a = plan_action(b, GC_ACT_MIGRATE, GC_OP_NONE, b->vcenter, NULL);

	if (dest != NULL)
		whyf(b, a, "%s enters maintenance mode; %sVM %s can be live-migrated "
			   "(rolling.allow_vmotion) to %s: on its switches, with room for its vGPUs",
		     host, who, vm, dest);
	else
		whyf(b, a, "%s enters maintenance mode; %sVM %s can be live-migrated "
			   "(rolling.allow_vmotion)", host, who, vm);
	a->dest_host = dest ? gc_arena_strdup(&b->p->arena, dest) : NULL;
	*back = plan_action(b, GC_ACT_MIGRATE, GC_OP_NONE, b->vcenter, NULL);
	whyf(b, *back, "return %s to %s after maintenance", vm, host);
	(*back)->dest_host = gc_arena_strdup(&b->p->arena, host);
	after_hotmigrate(b, a);
	return a;
}

/* Record an evacuation for budget.c. */
static void record_evac(struct builder *b, struct gc_action *off, struct gc_action *on,
			const struct window *w, size_t order, enum evac_why why, const char *detail)
{
	struct evac *e;

	if (b->nevac == b->capevac) {
		b->capevac = b->capevac ? b->capevac * 2 : 16;
		b->evac = gc_xrealloc(b->evac, b->capevac * sizeof(*b->evac));
	}
	e = &b->evac[b->nevac++];
	e->off = off;
	e->on = on;
	e->w = w;
	e->vm = off->vm;
	e->order = order;
	e->why = why;
	e->detail = detail;
}

/* The VM leaves host for its maintenance window: a migration pair, or a
 * power-off and power-on; order is the VM's place for budget.c. */
static struct gc_action *evacuate(struct builder *b, const char *vm, const char *host,
				  bool migratable, const char *pinned, bool managed, size_t order,
				  struct gc_action **back)
{
	struct window *w = window_of(b, host);
	struct gc_action *a;
	const char *who = managed ? "" : "unmanaged ", *dest = NULL;
	struct gc_buf none = GC_BUF_INIT;
	enum evac_why why = EVAC_PINNED;
	/* a managed VM of a spec gets a destination the plan names; an
	 * unmanaged one (its devices unknown) goes where vCenter puts it */
	bool choose = managed && b->g->cluster != NULL && b->p->allow_vmotion && migratable;

	if (choose)
		dest = plan_vmotion_dest(b, vm, host, &none);
	if (b->p->allow_vmotion && migratable && (!choose || dest != NULL)) {
		a = migrate_pair(b, vm, host, dest, who, back);
	} else {
		a = plan_action(b, GC_ACT_POWER_OFF, GC_OP_NONE, b->vcenter, NULL);
		if (!migratable)
			whyf(b, a, "%s enters maintenance mode and %sVM %s cannot be live-migrated (%s)",
			     host, who, vm, pinned ? pinned : "not migratable");
		else if (choose)
			whyf(b, a, "%s enters maintenance mode and no host can take VM %s by vMotion "
				   "(%s)", host, vm, none.len ? gc_buf_str(&none) : "no other host");
		else
			whyf(b, a, "%s enters maintenance mode and rolling.allow_vmotion is false",
			     host);
		why = !migratable ? EVAC_PINNED : choose ? EVAC_NO_DEST : EVAC_NO_VMOTION;
		*back = plan_action(b, GC_ACT_POWER_ON, GC_OP_NONE, b->vcenter, NULL);
		whyf(b, *back, "power %s back on after maintenance of %s", vm, host);
	}
	gc_buf_free(&none);
	a->vm = (*back)->vm = gc_arena_strdup(&b->p->arena, vm);
	a->host = (*back)->host = gc_arena_strdup(&b->p->arena, host);
	plan_dep(b, a, w->enter);
	plan_dep(b, w->exit, *back);
	if (dest != NULL)
		plan_vmotion_order(b, dest, host, a, *back);
	b->minwave[a->seq] = w->batch;
	record_evac(b, a, *back, w, order, why, pinned);
	return a;
}

enum gc_power plan_observed_power(struct builder *b, const char *vm, bool *exists)
{
	const struct gc_observed_vm *ov = gc_observed_vm(b->o, vm);
	char *id = gc_xasprintf("vm/%s", vm);
	const char *p;
	enum gc_power pw = GC_POWER_OFF;

	*exists = gc_observed_resource(b->o, id) != NULL || ov != NULL;
	free(id);
	if (ov != NULL && ov->power != GC_POWER_UNKNOWN)
		return ov->power;
	id = gc_xasprintf("vm/%s/power", vm);
	p = gc_observed_get(b->o, id, "power");
	free(id);
	if (p != NULL)
		gc_power_parse(&pw, p);
	return pw;
}

void plan_synthesize_vm(struct builder *b, size_t i)
{
	const struct gc_graph_vm *v = &b->g->vms[i];
	struct vmstate *vs = &b->vms[i];
	const struct gc_observed_vm *ov = gc_observed_vm(b->o, v->name);
	const char *cur_host = ov && ov->host ? ov->host : v->host;
	struct window *w = window_of(b, cur_host);
	const struct gc_resource *pr;
	struct gc_action *off = NULL, *on = NULL, *power = NULL, *offch = NULL;
	bool exists, running;
	char *id;

	running = plan_observed_power(b, v->name, &exists) == GC_POWER_ON && exists;
	id = gc_xasprintf("vm/%s/power", v->name);
	pr = gc_graph_find(b->g, id);
	free(id);
	if (pr != NULL)
		power = b->ract[pr->index];
	for (size_t k = 0; k < vs->n && offch == NULL; k++)
		if ((vs->actions[k]->flags & GC_RES_NEEDS_VM_OFF) &&
		    vs->actions[k]->kind == GC_ACT_APPLY &&
		    !(vs->actions[k]->op == GC_OP_CREATE && vs->actions[k]->res_kind == GC_RES_VM))
			offch = vs->actions[k];

	if (running && power != NULL && power->kind == GC_ACT_POWER_OFF) {
		off = power; /* the spec wants it off: that is the power-off */
	} else if (running && offch != NULL) {
		struct gc_buf s = GC_BUF_INIT;

		phrase(&s, offch);
		off = plan_action(b, GC_ACT_POWER_OFF, GC_OP_NONE, v->target ? v->target : b->vcenter,
				  NULL);
		whyf(b, off, "%s needs the VM powered off", gc_buf_str(&s));
		gc_buf_free(&s);
		if (v->power_on) {
			on = plan_action(b, GC_ACT_POWER_ON, GC_OP_NONE, off->target, NULL);
			whyf(b, on, "power %s back on after the change%s that needed it off", v->name,
			     vs->n > 1 ? "s" : "");
		}
	} else if (running && w != NULL) {
		off = evacuate(b, v->name, cur_host, v->live_migratable, v->pinned_by, true, i,
			       &on);
		if (on->kind == GC_ACT_POWER_ON && !v->power_on)
			on = NULL;
	}
	if (off != NULL && on != NULL && offch != NULL && w == NULL && off != power) {
		/* a window of the VM's own: rolled (plan_budget_vms) */
		b->vm_off[i] = off;
		b->vm_on[i] = on;
	}
	if (off != NULL && on != NULL && offch != NULL && w != NULL && off != power) {
		/* off for its own changes across its host's window: an evacuation */
		off->vm = v->name;
		record_evac(b, off, on, w, i, EVAC_OWN, NULL);
	}
	if (off != NULL) {
		off->vm = v->name;
		off->host = cur_host;
		if (w != NULL) {
			plan_dep(b, off, w->enter);
			b->minwave[off->seq] = w->batch;
		}
		for (size_t k = 0; k < vs->n; k++)
			if (vs->actions[k] != off && (vs->actions[k]->flags & GC_RES_NEEDS_VM_OFF))
				plan_dep(b, off, vs->actions[k]);
	}
	if (power != NULL && power->kind == GC_ACT_POWER_ON)
		on = power;
	if (on != NULL) {
		on->vm = v->name;
		if (on->host == NULL)
			on->host = v->host;
		for (size_t k = 0; k < vs->n; k++)
			plan_dep(b, vs->actions[k], on);
		if (w != NULL)
			plan_dep(b, w->exit, on);
		/* guests wait for this power-on, not only for the resource */
		if (pr != NULL && b->ract[pr->index] == NULL)
			b->ract[pr->index] = on;
	}
}

/* True when a depends directly on another change of the same VM (a
 * power-off or migration before the window does not count). */
static bool has_vm_pred(const struct gc_action *a)
{
	for (const struct gc_action_link *l = a->in; l != NULL; l = l->next)
		if (l->a->vm != NULL && l->a->kind != GC_ACT_POWER_OFF &&
		    l->a->kind != GC_ACT_MIGRATE && l->a->target == a->target &&
		    strcmp(l->a->vm, a->vm) == 0)
			return true;
	return false;
}

/*
 * A VM's own changes come after its host's maintenance window.  Only the
 * first ones (no predecessor among the VM's actions) get the edge: the rest
 * follow them, and the plan does not repeat the same "after" on every line.
 */
void plan_vm_after_window(struct builder *b)
{
	for (size_t i = 0; i < b->g->nvms; i++) {
		struct window *home = window_of(b, b->g->vms[i].host);
		struct vmstate *vs = &b->vms[i];

		if (home == NULL)
			continue;
		for (size_t k = 0; k < vs->n; k++)
			if (vs->actions[k]->kind != GC_ACT_POWER_OFF && !has_vm_pred(vs->actions[k]))
				plan_dep(b, home->exit, vs->actions[k]);
	}
}

/* Powered-on VMs the spec does not manage, on hosts that enter maintenance. */
void plan_synthesize_unmanaged(struct builder *b)
{
	size_t n = gc_observed_nvms(b->o);

	for (size_t i = 0; i < n; i++) {
		const struct gc_observed_vm *ov = gc_observed_vm_at(b->o, i);
		struct gc_action *back;

		if (ov->power != GC_POWER_ON || plan_vm(b, ov->name) != NULL ||
		    window_of(b, ov->host) == NULL)
			continue;
		evacuate(b, ov->name, ov->host, ov->live_migratable, NULL, false, b->g->nvms + i,
			 &back);
	}
}
