/*
 * kvm.c - a KVM host's one reboot, with its VMs off around it.
 *
 * A change of a KVM host flagged GC_RES_NEEDS_REBOOT (the IOMMU kernel
 * arguments) takes effect after the host reboots; so does one that an
 * earlier run configured but the running kernel does not have yet (the
 * KVM host driver reports it as the host's reboot_pending).  Per such host
 * this adds:
 *
 *     power off its running VMs  ->  the host's changes  ->  REBOOT  ->
 *     WAIT_HOST (a new boot id)  ->  the changes flagged AFTER_REBOOT that
 *     depend on a reboot-needing resource of the host (vfio-pci, VFs and
 *     vGPU types need the IOMMU on)  ->  VERIFY  ->  the host's libvirt
 *     actions (its libvirtd went down with it)  ->  power the VMs back on
 *
 * There is no maintenance mode and no live migration on a KVM host: every
 * VM of the host that runs goes off (a power-off the VM's own changes
 * already need is that power-off) and comes back on after the host
 * verified, when the spec wants it on.  Those VMs roll with their host, not
 * under rolling.max_unavailable_vms.  The hosts' reboots roll under
 * rolling.max_unavailable, numbered on after the ESXi maintenance windows:
 * batch k is wave k.
 */
#include <stdlib.h>
#include <string.h>

#include "plan_int.h"

struct kwin {
	const struct gc_target *tg, *lv; /* the host's kvm and libvirt targets */
	struct gc_action *reboot, *wait, *verify;
	size_t batch;
};

static char *whyf_s(struct builder *b)
{
	return gc_arena_strndup(&b->p->arena, gc_buf_str(&b->scratch), b->scratch.len);
}

/* The REBOOT, WAIT_HOST and VERIFY of host tg for its changes acts[0..n). */
static void host_window(struct builder *b, struct kwin *w, struct gc_action **acts, size_t n,
                        size_t nreboot, const struct gc_observed_host *oh)
{
	const struct gc_target *tg = w->tg;
	bool pending = oh != NULL && oh->reboot_pending;

	gc_buf_reset(&b->scratch);
	plan_reboot_why(&b->scratch, "reboot", nreboot, pending,
	                pending ? oh->reboot_pending_why : NULL,
	                "configured kernel arguments are not active yet");
	w->reboot = plan_action(b, GC_ACT_REBOOT, GC_OP_NONE, tg, NULL);
	w->reboot->why = whyf_s(b);
	w->wait = plan_action(b, GC_ACT_WAIT_HOST, GC_OP_NONE, tg, NULL);
	w->wait->why = "the host must answer again, with a new boot id";
	w->verify = plan_action(b, GC_ACT_VERIFY, GC_OP_NONE, tg, NULL);
	w->verify->why = "read the host back after its reboot";
	w->reboot->host = w->wait->host = w->verify->host = tg->name;
	plan_dep(b, w->reboot, w->wait);
	plan_dep(b, w->wait, w->verify);
	b->minwave[w->reboot->seq] = w->batch;
	b->p->stats.reboots++;
	for (size_t i = 0; i < n; i++) {
		struct gc_action *a = acts[i];

		b->minwave[a->seq] = w->batch;
		if ((a->flags & GC_RES_AFTER_REBOOT) && a->resource != NULL &&
		    plan_behind_reboot(a->resource)) {
			plan_dep(b, w->wait, a);
			if (a->why == NULL)
				a->why = "applied after the host's reboot: it needs the IOMMU on";
		} else {
			plan_dep(b, a, w->reboot);
		}
		plan_dep(b, a, w->verify);
	}
}

/* Items grouped by target index: the ones of target t are v[start[t]..start[t + 1]). */
struct buckets {
	size_t *start;
	size_t *v; /* indexes into the caller's array */
};

static void buckets_fill(struct buckets *bk, size_t ntargets, size_t n,
                         size_t (*key)(struct builder *, size_t), struct builder *b)
{
	size_t *fill = gc_xcalloc(ntargets + 2, sizeof(*fill));

	bk->start = gc_xcalloc(ntargets + 2, sizeof(*bk->start));
	bk->v = gc_xcalloc(n + 1, sizeof(*bk->v));
	for (size_t i = 0; i < n; i++)
		bk->start[key(b, i) + 1]++;
	for (size_t t = 0; t <= ntargets; t++)
		bk->start[t + 1] += bk->start[t];
	for (size_t i = 0; i < n; i++) {
		size_t k = key(b, i);

		bk->v[bk->start[k] + fill[k]++] = i;
	}
	free(fill);
}

static void buckets_free(struct buckets *bk)
{
	free(bk->start);
	free(bk->v);
}

/* Actions by their target (the unknown vCenter stand-in sorts last). */
static size_t action_key(struct builder *b, size_t i)
{
	return b->list[i]->target->index < b->g->ntargets ? b->list[i]->target->index
	                                                  : b->g->ntargets;
}

/* VMs by the target that holds them (graphs built by hand: the vCenter). */
static size_t vm_key(struct builder *b, size_t i)
{
	const struct gc_target *t = b->g->vms[i].target;

	return t != NULL && t->index < b->g->ntargets ? t->index : b->g->ntargets;
}

/* The host's VMs (vms: indexes of gc_graph.vms held by its libvirt):
 * off before its reboot, on after its verify. */
static void host_vms(struct builder *b, struct kwin *w, const size_t *vms, size_t nvms,
                     struct gc_action **offs, struct gc_action **ons)
{
	for (size_t k = 0; k < nvms; k++) {
		size_t i = vms[k];
		const struct gc_graph_vm *v = &b->g->vms[i];
		struct gc_action *off = offs[i], *on = ons[i];
		bool exists;

		if (off == NULL && plan_observed_power(b, v->name, &exists) == GC_POWER_ON &&
		    exists) {
			off = plan_action(b, GC_ACT_POWER_OFF, GC_OP_NONE, w->lv, NULL);
			gc_buf_reset(&b->scratch);
			gc_buf_printf(&b->scratch,
			              "%s reboots and VM %s runs on it (no live migration "
			              "on KVM)",
			              w->tg->name, v->name);
			off->why = whyf_s(b);
			off->vm = v->name;
			off->host = v->host;
			if (v->power_on && on == NULL) {
				on = plan_action(b, GC_ACT_POWER_ON, GC_OP_NONE, w->lv, NULL);
				gc_buf_reset(&b->scratch);
				gc_buf_printf(&b->scratch,
				              "power %s back on after the reboot of %s", v->name,
				              w->tg->name);
				on->why = whyf_s(b);
				on->vm = v->name;
				on->host = v->host;
			}
		}
		if (off != NULL) {
			plan_dep(b, off, w->reboot);
			b->minwave[off->seq] = w->batch;
		}
		plan_dep(b, w->verify, on);
		/* rolled with its host, not under rolling.max_unavailable_vms */
		b->vm_off[i] = b->vm_on[i] = NULL;
	}
}

/* The power steps already planned per VM (gc_graph.vms index). */
static void power_steps(struct builder *b, struct gc_action **offs, struct gc_action **ons)
{
	for (size_t i = 0; i < b->n; i++) {
		struct gc_action *a = b->list[i];
		struct vmstate *vs;

		if ((a->kind != GC_ACT_POWER_OFF && a->kind != GC_ACT_POWER_ON) || a->vm == NULL ||
		    (vs = plan_vmstate(b, a->vm)) == NULL)
			continue;
		if (a->kind == GC_ACT_POWER_OFF)
			offs[vs - b->vms] = a;
		else
			ons[vs - b->vms] = a;
	}
}

void plan_kvm_reboots(struct builder *b)
{
	size_t nt = b->g->ntargets, n0 = b->n, nwin = 0;
	struct gc_action **acts, **offs, **ons;
	struct buckets ba, bv;

	if (!plan_has_kind(b->g, GC_TARGET_KVM))
		return; /* an ESXi cluster: 11-30 ms of buckets for nothing at 10,000 hosts */
	acts = gc_xcalloc(n0 + 1, sizeof(*acts));
	offs = gc_xcalloc(b->g->nvms + 1, sizeof(*offs));
	ons = gc_xcalloc(b->g->nvms + 1, sizeof(*ons));
	buckets_fill(&ba, nt, n0, action_key, b);
	buckets_fill(&bv, nt, b->g->nvms, vm_key, b);
	power_steps(b, offs, ons);
	for (size_t t = 0; t < nt; t++)
		nwin += b->win[t].open; /* the ESXi windows' batches come first */
	for (size_t t = 0; t < nt; t++) {
		const struct gc_target *tg = b->g->targets[t];
		const struct gc_observed_host *oh;
		struct kwin w = {tg, NULL, NULL, NULL, NULL, 0};
		size_t n = 0, nreboot = 0;

		if (tg->kind != GC_TARGET_KVM)
			continue;
		for (size_t k = ba.start[t]; k < ba.start[t + 1]; k++) {
			struct gc_action *a = b->list[ba.v[k]];

			if (a->kind == GC_ACT_APPLY && a->op != GC_OP_NONE) {
				acts[n++] = a;
				nreboot += (a->flags & GC_RES_NEEDS_REBOOT) != 0;
			}
		}
		oh = gc_observed_host(b->o, tg->name);
		if (nreboot == 0 && (oh == NULL || !oh->reboot_pending))
			continue;
		w.lv = gc_graph_target(b->g, GC_TARGET_LIBVIRT, tg->name);
		w.batch = nwin++ / b->p->max_unavailable;
		host_window(b, &w, acts, n, nreboot, oh);
		if (w.lv == NULL)
			continue;
		host_vms(b, &w, &bv.v[bv.start[w.lv->index]],
		         bv.start[w.lv->index + 1] - bv.start[w.lv->index], offs, ons);
		/* the host's libvirtd goes down with it: its other steps come after */
		for (size_t k = ba.start[w.lv->index]; k < ba.start[w.lv->index + 1]; k++)
			if (b->list[ba.v[k]]->kind != GC_ACT_POWER_OFF)
				plan_dep(b, w.verify, b->list[ba.v[k]]);
	}
	buckets_free(&ba);
	buckets_free(&bv);
	free(offs);
	free(ons);
	free(acts);
}
