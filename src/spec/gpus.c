/*
 * gpus.c - which VM gets which host GPU.
 *
 * Four passes over the VMs in spec order: static passthrough entries claim
 * their GPU (one VM per GPU, passthrough mode, the VM's own host); pinned
 * vGPUs take their GPU; other vGPUs go to the first vgpu-mode GPU of the
 * host that offers the profile, runs no other profile and has room; dynamic
 * DirectPath entries are counted against the passthrough GPUs with their PCI
 * id that nothing claimed.  Each failure is one diagnostic at the entry,
 * noted with its VM (x->note_for): an entry in an anchor that several VMs
 * share is reported once, naming the VMs it fails for (anchors.c).
 */
#include <string.h>

#include "check.h"

/* The host GPU at pci on the VM's host, or NULL after a diagnostic. */
static struct gc_host_gpu *find_gpu(struct check *k, struct gc_vm *vm, const char *pci,
				    struct where m)
{
	const char *key = pci_key(k, host_idx(k, vm->host), pci);
	struct gc_host_gpu *g = gc_strmap_get(&k->gpus, key);
	struct gc_host_gpu *other;

	if (g != NULL)
		return g;
	if (gc_strmap_get(&k->nics, key) != NULL) {
		spec_diag(k->x, GC_SEV_ERROR, at(k, m), "NICs go under the VM's nics: (type: passthrough)",
			  "'%s' on host '%s' is a NIC, not a GPU", pci, q(vm->host->name));
		return NULL;
	}
	other = gc_strmap_get(&k->gpu_any, pci);
	if (other != NULL)
		spec_diag(k->x, GC_SEV_ERROR, at(k, m),
			  gc_arena_printf(k->x->arena,
					  "a VM can only use GPUs of its own host; move it with "
					  "host: %s",
					  q(other->host->name)),
			  "GPU '%s' is on host '%s', not on '%s' (the host of VM '%s')", pci,
			  q(other->host->name), q(vm->host->name), q(vm->name));
	else
		spec_diag(k->x, GC_SEV_ERROR, at(k, m), "list it under the host's gpus:",
			  "host '%s' has no GPU '%s'", q(vm->host->name), pci);
	return NULL;
}

static void claim_static(struct check *k, struct gc_vm *vm, struct gc_vm_gpu *vg)
{
	struct where m = {&vg->host_pci, vg->mark};
	struct gc_host_gpu *g = find_gpu(k, vm, vg->host_pci, m);

	if (g == NULL)
		return;
	if (g->mode == GC_GPU_VGPU) {
		spec_diag(k->x, GC_SEV_ERROR, at(k, m),
			  "set mode: passthrough on the host GPU, or give the VM a vgpu profile",
			  "GPU '%s' on host '%s' is in vgpu mode and cannot be passed through",
			  vg->host_pci, q(vm->host->name));
		return;
	}
	if (g->passthrough_vm != NULL) {
		spec_diag(k->x, GC_SEV_ERROR, at(k, m), "a passthrough GPU belongs to one VM",
			  "GPU '%s' on host '%s' is already passed through to VM '%s'",
			  vg->host_pci, q(vm->host->name), q(g->passthrough_vm->name));
		return;
	}
	g->passthrough_vm = vm;
	vg->gpu = g;
	vg->memory_gb = g->memory_gb;
}

/* "T4 offers: grid_t4-1q ..." (a did-you-mean would only guess among look-alikes) */
static const char *profile_hint(struct check *k, const struct gc_gpu_model *m)
{
	struct gc_buf b = GC_BUF_INIT;
	const char *r;
	size_t i;

	if (m->vgpu_profiles[0] == NULL)
		return "no vGPU profiles are known for this model";
	gc_buf_printf(&b, "%s offers:", m->name);
	for (i = 0; m->vgpu_profiles[i] != NULL; i++)
		gc_buf_printf(&b, " %s", m->vgpu_profiles[i]);
	r = gc_arena_printf(k->x->arena, "%s", gc_buf_str(&b));
	gc_buf_free(&b);
	return r;
}

/* Can g take one more vGPU of this profile?  Quiet unless `loud`. */
static bool vgpu_fits(struct check *k, struct gc_host_gpu *g, const char *profile, bool loud,
		      struct where m)
{
	unsigned fb = gc_vgpu_profile_fb_gb(profile);

	if (g->model == NULL || !spec_gpu_model_has_profile(g->model, profile)) {
		if (loud && g->model == NULL)
			spec_diag(k->x, GC_SEV_ERROR, at(k, m), "vGPU needs a GPU model from the table",
				  "no vGPU profiles are known for GPU model '%s'",
				  q(g->model_name));
		else if (loud)
			spec_diag(k->x, GC_SEV_ERROR, at(k, m), profile_hint(k, g->model),
				  "vgpu profile '%s' is not offered by %s", profile, g->model->name);
		return false;
	}
	if (g->vgpu_profile != NULL && !gc_vgpu_profile_same(g->vgpu_profile, profile)) {
		if (loud)
			spec_diag(k->x, GC_SEV_ERROR, at(k, m),
				  "all VMs on one physical GPU use the same vgpu profile",
				  "GPU '%s' on host '%s' already runs vgpu profile '%s'", q(g->pci),
				  q(g->host->name), g->vgpu_profile);
		return false;
	}
	if (g->vgpu_used_gb + fb > g->memory_gb) {
		if (loud)
			spec_diag(k->x, GC_SEV_ERROR, at(k, m),
				  gc_arena_printf(k->x->arena,
						  "%u of %u GB are already used by other vGPUs",
						  g->vgpu_used_gb, g->memory_gb),
				  "vgpu profile '%s' does not fit on GPU '%s' of host '%s'", profile,
				  q(g->pci), q(g->host->name));
		return false;
	}
	return true;
}

static void vgpu_take(struct gc_host_gpu *g, struct gc_vm_gpu *vg)
{
	unsigned fb = gc_vgpu_profile_fb_gb(vg->profile);

	g->vgpu_profile = vg->profile;
	g->vgpu_used_gb += fb;
	vg->gpu = g;
	vg->memory_gb = fb;
}

static void claim_vgpu_pinned(struct check *k, struct gc_vm *vm, struct gc_vm_gpu *vg)
{
	struct where m = {&vg->host_pci, vg->mark};
	struct gc_host_gpu *g = find_gpu(k, vm, vg->host_pci, m);
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < vm->ngpus; i++) {
		struct gc_vm_gpu *o = &vm->gpus[i];

		if (o->kind == GC_VMGPU_STATIC && o->host_pci != NULL &&
		    strcmp(o->host_pci, vg->host_pci) == 0) {
			spec_diag(k->x, GC_SEV_ERROR, at(k, m),
				  "a GPU is either passed through or shared through vGPU",
				  "VM '%s' uses GPU '%s' both as passthrough and as a vgpu",
				  q(vm->name), vg->host_pci);
			return;
		}
	}
	if (g->mode != GC_GPU_VGPU) {
		spec_diag(k->x, GC_SEV_ERROR, at(k, m), "set mode: vgpu on the host GPU",
			  "GPU '%s' on host '%s' is in passthrough mode, not vgpu", vg->host_pci,
			  q(vm->host->name));
		return;
	}
	if (vgpu_fits(k, g, vg->profile, true, (struct where){&vg->profile, vg->mark}))
		vgpu_take(g, vg);
}

static void claim_vgpu_any(struct check *k, struct gc_vm *vm, struct gc_vm_gpu *vg)
{
	struct gc_host *h = vm->host;
	struct where m = {&vg->profile, vg->mark};
	struct gc_host_gpu *offer = NULL;
	size_t i, nvgpu = 0;

	for (i = 0; i < h->ngpus; i++) {
		struct gc_host_gpu *g = &h->gpus[i];

		if (g->mode != GC_GPU_VGPU)
			continue;
		nvgpu++;
		if (offer == NULL && g->model != NULL &&
		    spec_gpu_model_has_profile(g->model, vg->profile))
			offer = g;
		if (vgpu_fits(k, g, vg->profile, false, m)) {
			vgpu_take(g, vg);
			return;
		}
	}
	if (nvgpu == 0)
		spec_diag(k->x, GC_SEV_ERROR, at(k, m), "set mode: vgpu on a GPU of the host",
			  "host '%s' has no GPU in vgpu mode for VM '%s'", q(h->name), q(vm->name));
	else if (offer == NULL) {
		for (i = 0; i < h->ngpus; i++) {
			if (h->gpus[i].mode == GC_GPU_VGPU) {
				vgpu_fits(k, &h->gpus[i], vg->profile, true, m);
				break;
			}
		}
	} else {
		spec_diag(k->x, GC_SEV_ERROR, at(k, m),
			  gc_arena_printf(k->x->arena,
					  "%zu GPU%s in vgpu mode; all VMs on one GPU use the same "
					  "profile and their framebuffers must fit",
					  nvgpu, nvgpu == 1 ? "" : "s"),
			  "no GPU on host '%s' has room for vgpu profile '%s'", q(h->name),
			  vg->profile);
	}
}

static void claim_dynamic(struct check *k, struct gc_vm *vm, struct gc_vm_gpu *vg)
{
	struct gc_host *h = vm->host;
	struct where m = {&vg->pci_id, vg->mark};
	const struct gc_gpu_model *want = spec_gpu_model_by_pci_id(vg->pci_id);
	size_t i, base = k->gpu_base[host_idx(k, h)], matching = 0;

	for (i = 0; i < h->ngpus; i++) {
		struct gc_host_gpu *g = &h->gpus[i];

		if (g->model == NULL || want == NULL || g->model != want ||
		    g->mode != GC_GPU_PASSTHROUGH)
			continue;
		matching++;
		if (g->passthrough_vm == NULL && !k->gpu_dyn[base + i]) {
			k->gpu_dyn[base + i] = true;
			vg->memory_gb = g->memory_gb;
			return;
		}
	}
	if (matching == 0)
		spec_diag(k->x, GC_SEV_ERROR, at(k, m),
			  "dynamic DirectPath picks a passthrough GPU of the VM's host with this id",
			  "no passthrough GPU on host '%s' has PCI id '%s'", q(h->name), vg->pci_id);
	else
		spec_diag(k->x, GC_SEV_ERROR, at(k, m),
			  gc_arena_printf(k->x->arena,
					  "%zu such GPU%s, all passed through or requested already",
					  matching, matching == 1 ? "" : "s"),
			  "all GPUs with PCI id '%s' on host '%s' are taken", vg->pci_id,
			  q(h->name));
}

void chk_assign_gpus(struct check *k)
{
	struct gc_cluster *c = k->c;
	size_t pass, i, j;

	/* 0: static passthrough, 1: pinned vGPUs, 2: other vGPUs, 3: dynamic */
	for (pass = 0; pass < 4; pass++) {
		for (i = 0; i < c->nvms; i++) {
			struct gc_vm *vm = &c->vms[i];

			if (vm->host == NULL || vm->ngpus == 0)
				continue;
			k->x->note_for = gc_arena_printf(k->x->arena, "for VM '%s' at line %d",
							 q(vm->name), vm->mark.line);
			for (j = 0; j < vm->ngpus; j++) {
				struct gc_vm_gpu *vg = &vm->gpus[j];
				bool pinned = vg->host_pci != NULL;

				if (pass == 0 && vg->kind == GC_VMGPU_STATIC && pinned)
					claim_static(k, vm, vg);
				else if (pass == 1 && vg->kind == GC_VMGPU_VGPU && pinned &&
					 vg->profile != NULL)
					claim_vgpu_pinned(k, vm, vg);
				else if (pass == 2 && vg->kind == GC_VMGPU_VGPU && !pinned &&
					 vg->profile != NULL && !spec_field_given(k->x, &vg->host_pci))
					claim_vgpu_any(k, vm, vg);
				else if (pass == 3 && vg->kind == GC_VMGPU_DYNAMIC &&
					 vg->pci_id != NULL)
					claim_dynamic(k, vm, vg);
			}
		}
	}
	k->x->note_for = NULL;
}
