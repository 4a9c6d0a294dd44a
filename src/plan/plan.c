/*
 * plan.c - diff and synthesis: from graph + observed state to actions.
 *
 * 1. diff: one action per resource whose observed properties differ from
 *    the desired ones (create when it is not observed at all); vm.power
 *    becomes POWER_ON/POWER_OFF.  Observed resources the spec owns but no
 *    longer wants (devices/NICs of managed VMs, RoCE settings of a switch
 *    with roce.owned) are deleted.
 * 2. synthesis: per ESXi host with a change flagged NEEDS_MAINTENANCE or
 *    NEEDS_REBOOT, a maintenance window (evacuate, enter, changes, one
 *    reboot, wait, verify, exit, bring VMs back); per KVM host with a
 *    change flagged NEEDS_REBOOT, its VMs off, one reboot, wait, verify,
 *    VMs on (kvm.c); per VM with a change flagged NEEDS_VM_OFF, one
 *    power-off before and one power-on after.
 * 3. dependencies: the graph's edges, carried through resources that need
 *    no action (their "frontier").  synth.c adds steps 2 and the window and
 *    power structure; order.c then sorts, chains targets, cuts waves.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gc/plan.h"
#include "plan_int.h"

/* ---------------------------------------------------------------- names */

const char *gc_action_kind_name(enum gc_action_kind k)
{
	switch (k) {
	case GC_ACT_APPLY:
		return "apply";
	case GC_ACT_ENTER_MAINTENANCE:
		return "enter_maintenance";
	case GC_ACT_EXIT_MAINTENANCE:
		return "exit_maintenance";
	case GC_ACT_REBOOT:
		return "reboot";
	case GC_ACT_WAIT_HOST:
		return "wait_host";
	case GC_ACT_VERIFY:
		return "verify";
	case GC_ACT_POWER_OFF:
		return "power_off";
	case GC_ACT_POWER_ON:
		return "power_on";
	case GC_ACT_MIGRATE:
		return "migrate";
	}
	return "?";
}

const char *gc_op_symbol(enum gc_op op)
{
	switch (op) {
	case GC_OP_NONE:
		return "";
	case GC_OP_CREATE:
		return "+";
	case GC_OP_UPDATE:
		return "~";
	case GC_OP_DELETE:
		return "-";
	}
	return "";
}

const char *gc_op_name(enum gc_op op)
{
	switch (op) {
	case GC_OP_NONE:
		return "none";
	case GC_OP_CREATE:
		return "create";
	case GC_OP_UPDATE:
		return "update";
	case GC_OP_DELETE:
		return "delete";
	}
	return "none";
}

/* ---------------------------------------------------------------- action helpers */

struct gc_action *plan_action(struct builder *b, enum gc_action_kind kind, enum gc_op op,
			      const struct gc_target *t, const char *why)
{
	struct gc_action *a = gc_arena_alloc(&b->p->arena, sizeof(*a));

	a->kind = kind;
	a->op = op;
	a->target = t;
	a->why = why ? gc_arena_strdup(&b->p->arena, why) : NULL;
	a->synthesized = op == GC_OP_NONE;
	a->seq = b->n; /* creation index until order.c numbers them */
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 256;
		b->list = gc_xrealloc(b->list, b->cap * sizeof(*b->list));
		b->minwave = gc_xrealloc(b->minwave, b->cap * sizeof(*b->minwave));
	}
	b->minwave[b->n] = 0;
	b->list[b->n++] = a;
	return a;
}

void plan_dep(struct builder *b, struct gc_action *before, struct gc_action *after)
{
	struct gc_action_link *l;

	if (before == NULL || after == NULL || before == after)
		return;
	for (l = after->in; l != NULL; l = l->next)
		if (l->a == before)
			return;
	l = gc_arena_alloc(&b->p->arena, sizeof(*l));
	l->a = before;
	l->next = after->in;
	after->in = l;
	after->nin++;
	l = gc_arena_alloc(&b->p->arena, sizeof(*l));
	l->a = after;
	l->next = before->out;
	before->out = l;
}

void plan_warn(struct builder *b, const char *fmt, ...)
{
	struct gc_buf s = GC_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	gc_buf_vprintf(&s, fmt, ap);
	va_end(ap);
	b->p->warnings =
		gc_xrealloc(b->p->warnings, (b->p->nwarnings + 1) * sizeof(*b->p->warnings));
	b->p->warnings[b->p->nwarnings++] = gc_arena_strndup(&b->p->arena, gc_buf_str(&s), s.len);
	gc_buf_free(&s);
}

/* ---------------------------------------------------------------- 1. diff */

static void add_change(struct builder *b, struct gc_action *a, const char *key, const char *old,
		       const char *new_value, size_t cap)
{
	if (a->changes == NULL)
		a->changes = gc_arena_alloc(&b->p->arena, cap * sizeof(*a->changes));
	a->changes[a->nchanges].key = key;
	a->changes[a->nchanges].old_value = old;
	a->changes[a->nchanges].new_value = new_value;
	a->nchanges++;
}

static const char *obs_prop(const struct gc_observed_resource *o, const char *key)
{
	for (size_t i = 0; i < o->nprops; i++)
		if (strcmp(o->props[i].key, key) == 0)
			return o->props[i].value;
	return NULL;
}

/* VMX options are strings; the ones that read as booleans (TRUE/true,
 * FALSE/false) are read case-insensitively by vSphere.  The reference
 * guides write pciPassthru.use64bitMMIO = "TRUE" and pciPassthru.allowP2P
 * = "TRUE", other pages "true": both are the same setting (issue 14) */
static bool vmx_bool(const char *v)
{
	return strcasecmp(v, "true") == 0 || strcasecmp(v, "false") == 0;
}

static bool digits(const char *v)
{
	size_t n = strspn(v, "0123456789");

	return n > 0 && n <= 9 && v[n] == '\0';
}

bool gc_plan_value_same(const struct gc_resource *r, const char *observed, const char *desired)
{
	if (observed == NULL || desired == NULL)
		return observed == desired;
	if (strcmp(observed, desired) == 0)
		return true;
	/* The one "at least" comparison: an adapter firmware's NUM_OF_VFS (its
	 * only number) offers that many VFs; a port needs no more than its
	 * max_vfs, so a larger firmware value is no change (issue 14, item 14) */
	if (r->kind == GC_RES_ESXI_NIC_FIRMWARE && digits(observed) && digits(desired))
		return strtoul(observed, NULL, 10) >= strtoul(desired, NULL, 10);
	/* A switch's values are sets: uplink.<host> lists every pNIC of the
	 * host's proxy switch ("vmnic4,vmnic5"), in any order (its mtu is a
	 * set of one number) */
	if (r->kind == GC_RES_DVS)
		return gc_set_same(observed, desired);
	return r->kind == GC_RES_VM_EXTRA_CONFIG && vmx_bool(desired) &&
	       strcasecmp(observed, desired) == 0;
}

const char *gc_plan_desired(const struct gc_observed *o, const struct gc_resource *r, size_t i)
{
	const char *v = r->props[i].value, *learned;

	if (!gc_prop_is_learned(v))
		return v;
	learned = gc_observed_learned(o, r->id, r->props[i].key);
	return learned ? learned : v;
}

static void diff_resource(struct builder *b, const struct gc_resource *r)
{
	/* offline: skip hashing every id against an empty store */
	const struct gc_observed_resource *o =
		gc_observed_nresources(b->o) ? gc_observed_resource(b->o, r->id) : NULL;
	enum gc_action_kind kind = GC_ACT_APPLY;
	struct gc_action *a;
	size_t nchanged = 0;

	if (o != NULL) {
		for (size_t i = 0; i < r->nprops; i++) {
			const char *v = obs_prop(o, r->props[i].key);

			if (!gc_plan_value_same(r, v, gc_plan_desired(b->o, r, i)))
				nchanged++;
		}
		if (nchanged == 0)
			return;
	}
	if (r->kind == GC_RES_VM_POWER) {
		const char *want = gc_resource_prop(r, "power");

		if (want != NULL && strcmp(want, "on") == 0)
			kind = GC_ACT_POWER_ON;
		else if (o == NULL)
			return; /* a VM that does not exist yet is off already */
		else
			kind = GC_ACT_POWER_OFF;
	}
	a = plan_action(b, kind, o ? GC_OP_UPDATE : GC_OP_CREATE, r->target, NULL);
	a->synthesized = false;
	a->resource = r;
	a->resource_id = r->id;
	a->res_kind = r->kind;
	a->host = r->host;
	a->vm = r->vm;
	a->flags = r->flags;
	for (size_t i = 0; i < r->nprops; i++) {
		const char *v = o ? obs_prop(o, r->props[i].key) : NULL;

		const char *want = gc_plan_desired(b->o, r, i);

		if (!gc_plan_value_same(r, v, want))
			add_change(b, a, r->props[i].key, v, want, r->nprops);
	}
	if (kind == GC_ACT_POWER_ON)
		a->why = "the spec wants the VM powered on";
	else if (kind == GC_ACT_POWER_OFF)
		a->why = "the spec wants the VM powered off";
	b->ract[r->index] = a;
}

/* Kinds of VM sub-resources that a delete may remove, by their id segment. */
static int vm_sub_kind(enum gc_res_kind *out, const char *seg, size_t n)
{
	static const struct {
		const char *seg;
		enum gc_res_kind kind;
	} subs[] = {
		{"device.pci", GC_RES_VM_DEVICE_PCI},   {"device.vgpu", GC_RES_VM_DEVICE_VGPU},
		{"nic.sriov", GC_RES_VM_NIC_SRIOV},     {"nic.pvrdma", GC_RES_VM_NIC_PVRDMA},
		{"nic.vmxnet3", GC_RES_VM_NIC_VMXNET3},
	};

	for (size_t i = 0; i < GC_ARRAY_LEN(subs); i++) {
		if (strlen(subs[i].seg) == n && memcmp(subs[i].seg, seg, n) == 0) {
			*out = subs[i].kind;
			return 0;
		}
	}
	return GC_ENOTFOUND;
}

static struct gc_action *delete_action(struct builder *b, const struct gc_observed_resource *o,
				       const struct gc_target *t, enum gc_res_kind kind)
{
	struct gc_action *a = plan_action(b, GC_ACT_APPLY, GC_OP_DELETE, t, NULL);

	a->synthesized = false;
	a->resource_id = o->id;
	a->res_kind = kind;
	for (size_t i = 0; i < o->nprops; i++)
		add_change(b, a, o->props[i].key, o->props[i].value, NULL, o->nprops);
	return a;
}

/*
 * Observed but not desired: delete only what the spec owns.  "vm/<vm>/<sub>/..."
 * of a managed VM, and "<switch>/switch.<kind>" of a switch whose RoCE
 * settings are owned.
 */
static void diff_deletes(struct builder *b)
{
	size_t n = gc_observed_nresources(b->o);

	for (size_t i = 0; i < n; i++) {
		const struct gc_observed_resource *o = gc_observed_resource_at(b->o, i);
		const char *id = o->id, *s1, *s2;
		enum gc_res_kind kind;
		struct gc_action *a;

		if (gc_graph_find(b->g, id) != NULL)
			continue;
		if (strncmp(id, "vm/", 3) == 0 && (s1 = strchr(id + 3, '/')) != NULL) {
			char *vm = gc_xstrndup(id + 3, (size_t)(s1 - id - 3));
			const struct gc_graph_vm *v = plan_vm(b, vm);

			free(vm);
			s2 = strchr(s1 + 1, '/');
			if (v == NULL || s2 == NULL || vm_sub_kind(&kind, s1 + 1, (size_t)(s2 - s1 - 1)))
				continue;
			a = delete_action(b, o, v->target ? v->target : b->vcenter, kind);
			a->host = v->host;
			a->vm = v->name;
			a->flags = kind == GC_RES_VM_NIC_VMXNET3 ? 0 : GC_RES_NEEDS_VM_OFF;
			continue;
		}
		if ((s1 = strchr(id, '/')) != NULL && strncmp(s1 + 1, "switch.", 7) == 0 &&
		    gc_res_kind_parse(&kind, s1 + 1) == 0) {
			char *name = gc_xstrndup(id, (size_t)(s1 - id));
			const struct gc_target *t = gc_graph_target(b->g, GC_TARGET_SWITCH, name);

			free(name);
			if (t != NULL && t->sw != NULL && t->sw->roce != NULL && t->sw->roce->owned)
				delete_action(b, o, t, kind);
		}
	}
}

/* ---------------------------------------------------------------- 3. resource edges */

/*
 * Carry the graph's edges to actions.  A resource without an action passes
 * on the actions its own dependencies wait for (its frontier), so that
 * "vib -> graphics (unchanged) -> vGPU device" still orders vib before the
 * device.
 */
static void resource_edges(struct builder *b, const struct gc_resource **order)
{
	size_t n = b->g->nresources;
	struct frontier {
		struct gc_action **v; /* NULL when the resource has an action: {ract} */
		size_t n;
	} *fr = gc_xcalloc(n ? n : 1, sizeof(*fr));
	struct gc_arena scratch = GC_ARENA_INIT;

	for (size_t i = 0; i < n; i++) {
		const struct gc_resource *r = order[i];
		struct gc_action *a = b->ract[r->index];
		struct frontier *f = &fr[r->index];
		size_t total = 0;

		if (a != NULL) {
			for (size_t d = 0; d < r->ndeps; d++) {
				size_t di = r->deps[d]->index;

				if (b->ract[di] != NULL)
					plan_dep(b, b->ract[di], a);
				else
					for (size_t k = 0; k < fr[di].n; k++)
						plan_dep(b, fr[di].v[k], a);
			}
			continue;
		}
		/* no action: pass on the union of the deps' frontiers */
		for (size_t d = 0; d < r->ndeps; d++)
			total += b->ract[r->deps[d]->index] ? 1 : fr[r->deps[d]->index].n;
		if (total == 0)
			continue;
		f->v = gc_arena_alloc(&scratch, total * sizeof(*f->v));
		for (size_t d = 0; d < r->ndeps; d++) {
			size_t di = r->deps[d]->index;
			struct gc_action *one = b->ract[di];
			struct gc_action **v = one ? &one : fr[di].v;
			size_t nv = one ? 1 : fr[di].n;

			for (size_t k = 0; k < nv; k++) {
				size_t j;

				for (j = 0; j < f->n && f->v[j] != v[k]; j++)
					;
				if (j == f->n)
					f->v[f->n++] = v[k];
			}
		}
	}
	gc_arena_free(&scratch);
	free(fr);
}

/* ---------------------------------------------------------------- entry point */

static void builder_free(struct builder *b)
{
	if (b->win != NULL)
		for (size_t t = 0; t < b->g->ntargets; t++)
			free(b->win[t].maint);
	if (b->vms != NULL)
		for (size_t i = 0; i < b->g->nvms; i++)
			free(b->vms[i].actions);
	gc_strmap_free(b->vmindex);
	free(b->win);
	free(b->vms);
	free(b->vm_off);
	free(b->vm_on);
	free(b->evac);
	free(b->ract);
	free(b->list);
	free(b->minwave);
	free(b->vmotion_in_gb);
	gc_observed_free(b->empty);
	gc_buf_free(&b->scratch);
}

int gc_plan_build(struct gc_plan **out, const struct gc_graph *g,
		  const struct gc_observed *observed, const struct gc_plan_opts *opts,
		  struct gc_error *err)
{
	struct gc_plan_opts defaults = GC_PLAN_OPTS_INIT;
	struct builder b = {0};
	const struct gc_resource **order = NULL;
	int rc;

	if (opts == NULL)
		opts = &defaults;
	b.p = gc_xcalloc(1, sizeof(*b.p));
	b.p->graph = g;
	b.p->max_unavailable = opts->max_unavailable ? opts->max_unavailable
						     : (g->rolling.max_unavailable ? g->rolling.max_unavailable : 1);
	b.p->allow_vmotion = opts->allow_vmotion < 0 ? g->rolling.allow_vmotion
						     : opts->allow_vmotion != 0;
	b.g = g;
	b.err = err;
	if (observed == NULL)
		gc_observed_new(&b.empty);
	b.o = observed ? observed : b.empty;

	rc = gc_graph_toposort(&order, g, err);
	if (rc != 0)
		goto out;
	b.ract = gc_xcalloc(g->nresources + 1, sizeof(*b.ract));
	b.win = gc_xcalloc(g->ntargets + 1, sizeof(*b.win));
	b.vms = gc_xcalloc(g->nvms + 1, sizeof(*b.vms));
	b.vm_off = gc_xcalloc(g->nvms + 1, sizeof(*b.vm_off));
	b.vm_on = gc_xcalloc(g->nvms + 1, sizeof(*b.vm_on));
	b.vmindex = gc_strmap_new();
	for (size_t i = 0; i < g->nvms; i++)
		gc_strmap_put(b.vmindex, g->vms[i].name, &b.vms[i]);
	b.vcenter = gc_graph_target(g, GC_TARGET_VCENTER, GC_VCENTER_TARGET);
	if (b.vcenter == NULL) {
		/* a spec without vCenter may still have unmanaged VMs to evacuate */
		struct gc_target *t = gc_arena_alloc(&b.p->arena, sizeof(*t));

		t->kind = GC_TARGET_VCENTER;
		t->name = GC_VCENTER_TARGET;
		t->index = g->ntargets;
		b.vcenter = t;
	}

	if (opts->unknown != NULL) {
		for (size_t i = 0; i < g->ntargets; i++) {
			if (opts->unknown[i] == NULL)
				continue;
			if (b.p->unknown == NULL)
				b.p->unknown = gc_arena_alloc(&b.p->arena, g->ntargets * sizeof(*b.p->unknown));
			b.p->unknown[i] = gc_arena_strdup(&b.p->arena, opts->unknown[i]);
			b.p->nunknown++;
		}
	}
	for (size_t i = 0; i < g->nresources; i++) {
		if (b.p->unknown == NULL || b.p->unknown[g->resources[i]->target->index] == NULL)
			diff_resource(&b, g->resources[i]);
	}
	diff_deletes(&b);
	plan_open_windows(&b);
	if ((rc = plan_check_reachable(&b)) != 0 || (rc = plan_close_windows(&b)) != 0)
		goto out;
	plan_collect_vm_actions(&b);
	for (size_t i = 0; i < g->nvms; i++)
		plan_synthesize_vm(&b, i);
	plan_kvm_reboots(&b);
	plan_synthesize_unmanaged(&b);
	plan_budget_vms(&b);
	plan_guest_reboots(&b);
	resource_edges(&b, order);
	plan_vm_after_window(&b);
	rc = plan_order(&b);
	if (rc != 0)
		goto out;
	*out = b.p;
	b.p = NULL; /* now owned by the caller */
out:
	free((void *)order);
	builder_free(&b);
	gc_plan_free(b.p);
	return rc;
}

void gc_plan_free(struct gc_plan *p)
{
	if (p == NULL)
		return;
	free(p->actions);
	free(p->by_wave);
	free(p->warnings);
	gc_arena_free(&p->arena);
	free(p);
}

bool gc_plan_empty(const struct gc_plan *p)
{
	return p->nactions == 0;
}

/* ---------------------------------------------------------------- lookups used above */

bool plan_has_kind(const struct gc_graph *g, enum gc_target_kind kind)
{
	for (size_t t = 0; t < g->ntargets; t++)
		if (g->targets[t]->kind == kind)
			return true;
	return false;
}

struct vmstate *plan_vmstate(struct builder *b, const char *vm)
{
	return gc_strmap_get(b->vmindex, vm);
}

const struct gc_graph_vm *plan_vm(struct builder *b, const char *vm)
{
	struct vmstate *vs = plan_vmstate(b, vm);

	return vs ? &b->g->vms[vs - b->vms] : NULL;
}
