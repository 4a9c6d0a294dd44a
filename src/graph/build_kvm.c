/*
 * build_kvm.c - a KVM host's part of the resource graph: its two targets
 * (the host's Linux and its libvirtd), the IOMMU, vfio-pci and SR-IOV
 * resources, the libvirt network of a PF's VFs, and the host and domain
 * sides of a VM's vGPU (docs/kvm.md, docs/kvm-host.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_int.h"

/*
 * A KVM host is two targets: its Linux over SSH (kernel arguments, vfio-pci,
 * VFs, vGPUs) and its libvirtd (VMs, networks).  Host changes that need the
 * IOMMU wait for its reboot (GC_RES_AFTER_REBOOT).
 */
void graph_build_kvm_host(struct ctx *c, const struct gc_host *h)
{
	struct gc_target *t = gc_graph_add_target(c->g, GC_TARGET_KVM, h->name);
	struct gc_target *lv = gc_graph_add_target(c->g, GC_TARGET_LIBVIRT, h->name);
	struct gc_resource *iommu = NULL, *r;
	bool devices = false;

	t->host = h;
	lv->host = h;
	for (size_t i = 0; i < h->ngpus; i++)
		devices = true;
	for (size_t i = 0; i < h->nnics; i++)
		devices = devices || h->nics[i].mode != GC_NIC_MODE_NONE;
	if (devices) {
		iommu = add(c, GC_RES_KVM_IOMMU, t, h->name, NULL, GC_RES_NEEDS_REBOOT, &h->mark,
			    "%s/kvm.iommu", h->name);
		set(c, iommu, "iommu", "on");
		set(c, iommu, "iommu_mode", "pt");
		summary0(c, iommu, "IOMMU kernel arguments");
	}
	for (size_t i = 0; i < h->ngpus + h->nnics; i++) {
		const struct gc_host_gpu *g = i < h->ngpus ? &h->gpus[i] : NULL;
		const struct gc_host_nic *n = g ? NULL : &h->nics[i - h->ngpus];

		if ((g != NULL && g->mode != GC_GPU_PASSTHROUGH) ||
		    (n != NULL && n->mode != GC_NIC_MODE_PASSTHROUGH))
			continue;
		r = add(c, GC_RES_KVM_VFIO, t, h->name, NULL, GC_RES_AFTER_REBOOT,
			g ? &g->mark : &n->mark, "%s/kvm.vfio/%s", h->name, g ? g->pci : n->pci);
		set(c, r, "driver", "vfio-pci");
		set(c, r, "persistent", "true");
		summary(c, r, g ? "vfio-pci for GPU" : "vfio-pci for NIC", g ? g->pci : n->pci);
		edge(c, iommu, r);
	}
	for (size_t i = 0; i < h->nnics; i++) {
		const struct gc_host_nic *n = &h->nics[i];

		if (n->mode != GC_NIC_MODE_SRIOV)
			continue;
		r = add(c, GC_RES_KVM_SRIOV, t, h->name, NULL, GC_RES_AFTER_REBOOT, &n->mark,
			"%s/kvm.sriov/%s", h->name, n->pci);
		setu(c, r, "numvfs", n->vfs);
		set(c, r, "persistent", "true");
		summary(c, r, "SR-IOV VFs of", n->pci);
		edge(c, iommu, r);
	}
}

/*
 * The libvirt network that hands out the VFs of one PF (forward mode
 * hostdev, libvirt's pool of SR-IOV VFs), created on first use.
 */
struct gc_resource *graph_kvm_network(struct ctx *c, const struct gc_vm *v,
				      const struct gc_vm_nic *n)
{
	const struct gc_target *lv = gc_graph_target(c->g, GC_TARGET_LIBVIRT, v->host_name);
	struct gc_resource *r = find(c, "%s/libvirt.network/%s", v->host_name, n->network);

	if (r != NULL || lv == NULL || n->network == NULL || n->nic == NULL)
		return r;
	r = add(c, GC_RES_LIBVIRT_NETWORK, lv, v->host_name, NULL, 0, &n->mark,
		"%s/libvirt.network/%s", v->host_name, n->network);
	set(c, r, "forward", "hostdev");
	set(c, r, "pf", n->nic->device);
	set(c, r, "autostart", "true");
	summary(c, r, "SR-IOV network", n->network);
	edge(c, find(c, "%s/kvm.sriov/%s", v->host_name, n->pf), r);
	return r;
}

/*
 * A UUID for the mediated device of a VM's vGPU, the same on every run:
 * FNV-1a of "<vm>/<index>" twice, as an RFC 9562 version 8 UUID.
 */
static const char *mdev_uuid(struct ctx *c, const char *vm, size_t idx)
{
	uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
	const char *p;
	char key[96];

	snprintf(key, sizeof(key), "%s/%zu", vm, idx);
	for (p = key; *p; p++) {
		a = (a ^ (unsigned char)*p) * 0x100000001b3ull;
		b = (b ^ (unsigned char)*p) * 0x100000001b3ull;
	}
	a = (a & ~0xf000ull) | 0x8000ull;                   /* version 8 */
	b = (b & ~(3ull << 62)) | (2ull << 62);             /* variant 10 */
	return gc_arena_printf(&c->g->arena, "%08x-%04x-%04x-%04x-%012llx",
			       (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xffffu,
			       (unsigned)a & 0xffffu, (unsigned)(b >> 48),
			       (unsigned long long)(b & 0xffffffffffffull));
}

/*
 * A vGPU of a VM on KVM.  Two mechanisms (docs/kvm.md): a mediated device
 * (mdev) of the profile's type on the GPU, attached to the domain by UUID;
 * or, on SR-IOV GPUs (Ampere and later) with vGPU release 17 and later,
 * the profile written to one VF's nvidia/current_vgpu_type and that VF
 * attached as a PCI device.  The host side is a kvm.vgpu resource on the
 * KVM target; the domain side (r) carries what the domain XML shows.
 */
void graph_build_kvm_vgpu(struct ctx *c, const struct gc_vm *v, size_t i, struct gc_resource *r)
{
	const struct gc_vm_gpu *gpu = &v->gpus[i];
	const struct gc_host *h = v->host;
	const struct gc_target *t = gc_graph_target(c->g, GC_TARGET_KVM, v->host_name);
	const char *parent = gpu->gpu ? gpu->gpu->pci : gpu->host_pci;
	const struct gc_gpu_model *m = gpu->gpu ? gpu->gpu->model : NULL;
	bool vf = m != NULL && m->sriov && h->vgpu != NULL && h->vgpu->release != NULL &&
		  atoi(h->vgpu->release) >= 17;
	size_t nth = 0;
	struct gc_resource *host;

	/* the VF of a VF-backed vGPU: its order among the vGPUs on that GPU */
	for (size_t k = 0; vf && k < h->nvms; k++) {
		const struct gc_vm *o = h->vms[k];

		for (size_t j = 0; j < o->ngpus; j++) {
			if (o == v && j == i)
				goto counted;
			if (o->gpus[j].kind == GC_VMGPU_VGPU && o->gpus[j].gpu == gpu->gpu)
				nth++;
		}
	}
counted:
	set(c, r, "mechanism", vf ? "vf" : "mdev");
	if (vf) {
		set(c, r, "host_pci", parent);
		setu(c, r, "vf", (unsigned)nth);
	} else {
		/* the mdev's parent GPU is the host side's (kvm.vgpu) */
		set(c, r, "uuid", mdev_uuid(c, v->name, i));
	}
	summary(c, r, "vGPU", gpu->profile);

	host = add(c, GC_RES_KVM_VGPU, t, v->host_name, v->name, GC_RES_AFTER_REBOOT, &gpu->mark,
		   "%s/kvm.vgpu/%s/%zu", v->host_name, v->name, i);
	set(c, host, "parent", parent);
	set(c, host, "profile", gpu->profile);
	set(c, host, "mechanism", vf ? "vf" : "mdev");
	if (vf)
		setu(c, host, "vf", (unsigned)nth);
	else
		set(c, host, "uuid", gc_resource_prop(r, "uuid"));
	summary(c, host, "vGPU type", gpu->profile);
	edge(c, find(c, "%s/kvm.iommu", v->host_name), host);
	edge(c, host, r);
}
