/*
 * vmotion.c - where a VM goes while its host is in maintenance mode.
 *
 * A managed VM that may be live-migrated (rolling.allow_vmotion, vGPU and
 * PVRDMA VMs; a passthrough device pins a VM) leaves its host for one
 * other host of the spec that:
 *
 *   - is an ESXi host, reachable, not seen in maintenance mode, and not in
 *     the same wave (its own window would overlap);
 *   - is a member of every distributed switch the VM's port groups belong
 *     to (a host NIC uplinking the switch, or an uplink the switch names);
 *   - offers each of the VM's vGPU profiles with room: a vgpu-mode GPU
 *     whose model has the profile, that runs no other profile and whose
 *     framebuffer still fits it, counting the VMs the spec puts there and
 *     the ones this plan already moved there (NVIDIA's vGPU rule: all vGPUs
 *     on one physical GPU share one type and its framebuffer).
 *
 * Hosts with no window of their own are preferred, then spec order.  When
 * the destination has a window in another wave the VM comes home first:
 * an earlier wave's host is out of maintenance before the VM leaves, and a
 * later wave's host waits for the VM's return.  No destination: the caller
 * powers the VM off instead, and the plan says why, host by host.
 */
#include <stdlib.h>
#include <string.h>

#include "plan_int.h"

/* The index of h's first GPU among all the cluster's GPUs (h NULL: their
 * count). */
static size_t host_gpus_base(const struct gc_cluster *c, const struct gc_host *h)
{
	size_t base = 0;

	for (size_t i = 0; i < c->nhosts && &c->hosts[i] != h; i++)
		base += c->hosts[i].ngpus;
	return base;
}

static bool on_switch(const struct gc_cluster *c, const struct gc_host *h,
		      const struct gc_dvswitch *sw)
{
	(void)c;
	for (size_t i = 0; i < h->nnics; i++)
		if (h->nics[i].dvswitch == sw)
			return true;
	for (size_t i = 0; i < sw->nuplinks; i++)
		if (sw->uplinks[i].host == h)
			return true;
	return false;
}

/* Every switch of the VM's port groups reaches h; else *sw the first not. */
static bool on_vm_switches(const struct gc_cluster *c, const struct gc_vm *vm,
			   const struct gc_host *h, const struct gc_dvswitch **sw)
{
	for (size_t i = 0; i < vm->nnics; i++) {
		const struct gc_portgroup *pg = vm->nics[i].portgroup;

		if (pg != NULL && pg->dvswitch != NULL && !on_switch(c, h, pg->dvswitch)) {
			*sw = pg->dvswitch;
			return false;
		}
	}
	return true;
}

/* Place the VM's vGPUs on h's GPUs (into take[], GB per GPU of h), or
 * false with *profile the first that does not fit. */
static bool vgpus_fit(const struct gc_vm *vm, const struct gc_host *h, const unsigned *in_gb,
		      unsigned *take, const char **profile)
{
	memset(take, 0, h->ngpus * sizeof(*take));
	for (size_t i = 0; i < vm->ngpus; i++) {
		const struct gc_vm_gpu *vg = &vm->gpus[i];
		unsigned fb = gc_vgpu_profile_fb_gb(vg->profile ? vg->profile : "");
		bool placed = false;

		if (vg->kind != GC_VMGPU_VGPU)
			continue;
		for (size_t k = 0; k < h->ngpus && !placed; k++) {
			const struct gc_host_gpu *g = &h->gpus[k];
			const char *runs = g->vgpu_profile;

			if (g->mode != GC_GPU_VGPU || !gc_gpu_model_has_profile(g->model, vg->profile) ||
			    (runs != NULL && !gc_vgpu_profile_same(runs, vg->profile)) ||
			    g->vgpu_used_gb + in_gb[k] + take[k] + fb > g->memory_gb)
				continue;
			take[k] += fb;
			placed = true;
		}
		if (!placed) {
			*profile = vg->profile;
			return false;
		}
	}
	return true;
}

/* Can host h take the VM (its vGPUs placed into take[])?  If not, s says why. */
static bool candidate(struct builder *b, const struct gc_vm *vm, const struct gc_host *h,
		      const struct window *from, unsigned *take, struct gc_buf *s)
{
	const struct gc_cluster *c = b->g->cluster;
	const struct gc_target *t = gc_graph_target(b->g, GC_TARGET_ESXI, h->name);
	const struct gc_observed_host *oh = t ? gc_observed_host(b->o, h->name) : NULL;
	const struct gc_dvswitch *sw = NULL;
	const char *profile = NULL;

	if (t == NULL || h->hypervisor != GC_HV_ESXI)
		gc_buf_printf(s, "%s is no ESXi host", h->name);
	else if (oh != NULL && !oh->reachable)
		gc_buf_printf(s, "%s is unreachable", h->name);
	else if (oh != NULL && oh->maintenance)
		gc_buf_printf(s, "%s is in maintenance mode", h->name);
	else if (b->win[t->index].open && b->win[t->index].batch == from->batch)
		gc_buf_printf(s, "%s is in the same wave", h->name);
	else if (!on_vm_switches(c, vm, h, &sw))
		gc_buf_printf(s, "%s is not on %s", h->name, sw->name);
	else if (!vgpus_fit(vm, h, b->vmotion_in_gb + host_gpus_base(c, h), take, &profile))
		gc_buf_printf(s, "%s has no room for %s", h->name, profile);
	else
		return true;
	return false;
}

static void order_after_other_window(struct builder *b, const struct window *dw,
				     const struct window *from, struct gc_action *off,
				     struct gc_action *back)
{
	if (dw == NULL || !dw->open)
		return;
	if (dw->batch < from->batch)
		plan_dep(b, dw->exit, off); /* it is back in service before the VM arrives */
	else
		plan_dep(b, back, dw->enter); /* the VM has gone home before it leaves */
}

const char *plan_vmotion_dest(struct builder *b, const char *vm_name, const char *from_host,
			      struct gc_buf *why)
{
	const struct gc_cluster *c = b->g->cluster;
	const struct gc_vm *vm = c ? gc_cluster_vm(c, vm_name) : NULL;
	const struct gc_target *ft = gc_graph_target(b->g, GC_TARGET_ESXI, from_host);
	unsigned *take;
	const struct gc_host *best = NULL;

	if (vm == NULL || ft == NULL)
		return NULL;
	if (b->vmotion_in_gb == NULL)
		b->vmotion_in_gb = gc_xcalloc(host_gpus_base(c, NULL) + 1, sizeof(unsigned));
	take = gc_xcalloc(64, sizeof(*take));
	/* pass 0: hosts without a window of their own; pass 1: the others */
	for (int pass = 0; pass < 2 && best == NULL; pass++)
		for (size_t i = 0; i < c->nhosts && best == NULL; i++) {
			const struct gc_host *h = &c->hosts[i];
			const struct gc_target *t = gc_graph_target(b->g, GC_TARGET_ESXI, h->name);
			bool has_window = t != NULL && b->win[t->index].open;
			struct gc_buf s = GC_BUF_INIT;

			if (strcmp(h->name, from_host) == 0 || h->ngpus > 64 ||
			    has_window != (pass == 1))
				continue;
			if (candidate(b, vm, h, &b->win[ft->index], take, &s)) {
				best = h;
				for (size_t k = 0; k < h->ngpus; k++)
					b->vmotion_in_gb[host_gpus_base(c, h) + k] += take[k];
			} else {
				gc_buf_printf(why, "%s%s", why->len ? "; " : "", gc_buf_str(&s));
			}
			gc_buf_free(&s);
		}
	free(take);
	return best ? best->name : NULL;
}

void plan_vmotion_order(struct builder *b, const char *dest, const char *from_host,
			struct gc_action *off, struct gc_action *back)
{
	const struct gc_target *dt = gc_graph_target(b->g, GC_TARGET_ESXI, dest);
	const struct gc_target *ft = gc_graph_target(b->g, GC_TARGET_ESXI, from_host);

	if (dt != NULL && ft != NULL)
		order_after_other_window(b, &b->win[dt->index], &b->win[ft->index], off, back);
}
