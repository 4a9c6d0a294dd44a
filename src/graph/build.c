/*
 * build.c - cluster model -> resource graph.
 *
 * One pass over the model in a fixed order (hosts, distributed switches,
 * VMs, Onyx switches, guests), so targets and resources come out in spec
 * order and every later sort is deterministic.  The domain knowledge of the
 * reference guides lives here as flags and edges:
 *
 *   - host preparation that loads drivers or rebinds devices (passthrough,
 *     nmlx5_core parameters: max_vfs, DSCP trust, PFC, ECN; an SR-IOV NIC's
 *     firmware, before those parameters; the vGPU manager VIB, the default
 *     graphics type, GPU ECC) needs maintenance mode and a reboot;
 *   - the VIB comes before the graphics type and ECC (nvidia-smi ships in it);
 *   - a VM exists before its hardware, extra config, devices and NICs, and
 *     all of those before it is powered on; a device needs its host side
 *     (passthrough enabled, VIB, VFs, PVRDMA vmknic + firewall) first;
 *   - a distributed switch comes before its port groups, a port group
 *     before the NICs on it, and before the PVRDMA vmknic tag of its hosts;
 *     a vmknic vCenter creates (the map form) comes after its switch and
 *     port group and before that tag;
 *   - every guest resource needs its VM powered on; the NVIDIA driver and
 *     RDMA packages come before the rest of the guest;
 *   - Onyx switch settings depend on nothing (the driver keeps their order);
 *   - on an ESXi host older than 7.0 (7.0 U1 for NTP) passthrough and NTP
 *     are resources of the vCenter target naming the host: the same ids,
 *     flags and edges, applied through vCenter's host objects.
 *
 * Errors (duplicate ids) stop the build: the first one wins.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_int.h"

/* ---------------------------------------------------------------- ESXi hosts */

static void build_passthru(struct ctx *c, const struct gc_target *t, const struct gc_host *h,
			   const char *pci, const char *what, const struct gc_mark *mark)
{
	struct gc_resource *r;
	const unsigned maint = GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT;

	r = add(c, GC_RES_ESXI_PCI_PASSTHRU, t, h->name, NULL, maint, mark,
		"%s/esxi.pci_passthru/%s", h->name, pci);
	set(c, r, "enabled", "true");
	summary(c, r, what, pci);
}

static void build_vgpu_host(struct ctx *c, struct gc_target *t, const struct gc_host *h)
{
	const struct gc_vgpu_host *v = h->vgpu;
	const unsigned maint = GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT;
	const char *source = v->bundle ? v->bundle : v->vib;
	const char *name = v->vib_name ? v->vib_name : (source ? basename_of(source) : "nvidia-vgpu");
	struct gc_resource *vib, *gfx;

	vib = add(c, GC_RES_ESXI_VIB, t, h->name, NULL, maint, &v->mark, "%s/esxi.vib/%s",
		  h->name, name);
	if (v->vib_name == NULL && source != NULL) {
		/* `software vib list` shows the VIBs' own names, not the file's:
		 * the ESXi driver reads them (and their versions) from the bundle
		 * on the host while observing.  `vib_name` overrides. */
		set(c, vib, "name", GC_PROP_LEARNED);
		set(c, vib, "version", GC_PROP_LEARNED);
	} else {
		set(c, vib, "name", name);
		set(c, vib, "version", v->version);
	}
	set(c, vib, "source", source);
	summary(c, vib, "NVIDIA vGPU manager", v->release);

	gfx = add(c, GC_RES_ESXI_GRAPHICS, t, h->name, NULL, maint, &v->mark, "%s/esxi.graphics",
		  h->name);
	set(c, gfx, "default_type", v->default_type ? v->default_type : "SharedPassthru");
	set(c, gfx, "assignment_policy", v->assignment_policy);
	summary0(c, gfx, "default graphics type");
	edge(c, vib, gfx);

	if (v->ecc == GC_UNSET)
		return;
	for (size_t i = 0; i < h->ngpus; i++) {
		const struct gc_host_gpu *gpu = &h->gpus[i];
		struct gc_resource *ecc;

		if (gpu->mode != GC_GPU_VGPU)
			continue;
		ecc = add(c, GC_RES_ESXI_GPU_ECC, t, h->name, NULL, maint | GC_RES_AFTER_REBOOT, &v->mark,
			  "%s/esxi.gpu_ecc/%s", h->name, gpu->pci);
		set(c, ecc, "ecc", v->ecc == GC_TRUE ? "enabled" : "disabled");
		summary(c, ecc, "ECC of GPU", gpu->pci);
		edge(c, vib, ecc);
	}
}

/*
 * nmlx5_core's module parameters, one `parameters set` for all of them (it
 * replaces the whole string) and so one reboot: max_vfs for SR-IOV, and
 * for a host that follows a RoCE switch (host.roce_switch) what the
 * switch's lossless DSCP recipe needs at the host's end: trust_state=2
 * (DSCP), PFC on the lossless priority both ways (pfctx/pfcrx, an 8-bit
 * priority mask: 0x08 is priority 3) unless the switch runs without PFC,
 * and ecn=1.  Sources: VMware's vSphere 7.0 storage guide ("Configure
 * lossless NVMe over RDMA": `-p "pfctx=0x08 pfcrx=0x08 trust_state=2"` for
 * Mellanox ConnectX-4/5), Mellanox community DOC-2581 (pfctx and pfcrx are
 * a bitmap and must be equal), NVIDIA's nmlx5 ESXi driver manual v4.17.15.16
 * (`ecn`: 1 enables ECN, 0 the default); REAL-FORMATS A.8.
 */
static void build_nmlx5(struct ctx *c, struct gc_target *t, const struct gc_host *h,
			const struct gc_host_nic *sriov)
{
	const struct gc_switch_roce *q = h->roce_switch ? h->roce_switch->roce : NULL;
	const struct gc_host_nic *first = sriov;
	struct gc_resource *r;

	for (size_t i = 0; first == NULL && i < h->nnics; i++)
		if (h->nics[i].mode == GC_NIC_MODE_PVRDMA)
			first = &h->nics[i];
	r = add(c, GC_RES_ESXI_MODULE_PARAM, t, h->name, NULL,
		GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT, first ? &first->mark : &h->mark,
		"%s/esxi.module_param/nmlx5_core", h->name);
	set(c, r, "module", "nmlx5_core");
	set(c, r, "max_vfs", h->nmlx5_max_vfs);
	if (q == NULL || r == NULL) {
		summary0(c, r, "SR-IOV virtual functions (nmlx5_core max_vfs)");
		return;
	}
	set(c, r, "trust_state", "2");
	if (q->pfc && q->priority >= 0 && q->priority <= 7) {
		gc_resource_setf(c->g, r, "pfctx", "0x%02x", 1u << q->priority);
		gc_resource_setf(c->g, r, "pfcrx", "0x%02x", 1u << q->priority);
	}
	set(c, r, "ecn", "1");
	summary0(c, r, h->nmlx5_max_vfs ? "SR-IOV virtual functions and lossless RoCE (nmlx5_core)"
					 : "lossless RoCE (nmlx5_core)");
}

/*
 * The adapter firmware of each SR-IOV PF: nmlx5_core makes a port's VFs at
 * load only when its NVCONFIG has SRIOV_EN and NUM_OF_VFS >= max_vfs.  Set
 * through Mellanox MFT's mlxconfig when the host has it, as a "next boot"
 * value: the same maintenance window and the one reboot that loads
 * max_vfs, so the firmware comes first (an edge to the module parameters).
 * num_of_vfs is a minimum: more VFs in the firmware is no change
 * (gc_plan_value_same).  Without MFT on the host the ESXi driver records
 * it as nothing to do and the VFs are checked after the reboot.
 */
static void build_nic_firmware(struct ctx *c, const struct gc_target *t, const struct gc_host *h)
{
	for (size_t i = 0; i < h->nnics; i++) {
		const struct gc_host_nic *n = &h->nics[i];
		struct gc_resource *r;

		if (n->mode != GC_NIC_MODE_SRIOV)
			continue;
		r = add(c, GC_RES_ESXI_NIC_FIRMWARE, t, h->name, NULL,
			GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT, &n->mark,
			"%s/esxi.nic_firmware/%s", h->name, n->pci);
		set(c, r, "sriov_en", "true");
		setu(c, r, "num_of_vfs", n->vfs);
		summary(c, r, "SR-IOV in the adapter firmware of", n->pci);
		edge(c, r, find(c, "%s/esxi.module_param/nmlx5_core", h->name));
	}
}

static void build_ntp(struct ctx *c, const struct gc_target *t, const struct gc_host *h)
{
	struct gc_buf b = GC_BUF_INIT;
	struct gc_resource *r;

	r = add(c, GC_RES_ESXI_NTP, t, h->name, NULL, 0, &h->mark, "%s/esxi.ntp", h->name);
	join(&b, h->ntp, h->nntp);
	if (r != NULL)
		gc_resource_set(c->g, r, "servers", gc_buf_str(&b));
	set(c, r, "enabled", "true");
	summary0(c, r, "NTP");
	gc_buf_free(&b);
}

/* Passthrough of the host's GPUs and NICs in passthrough mode, on target t. */
static void build_passthrus(struct ctx *c, const struct gc_target *t, const struct gc_host *h)
{
	for (size_t i = 0; i < h->ngpus; i++)
		if (h->gpus[i].mode == GC_GPU_PASSTHROUGH)
			build_passthru(c, t, h, h->gpus[i].pci, "passthrough for GPU", &h->gpus[i].mark);
	for (size_t i = 0; i < h->nnics; i++)
		if (h->nics[i].mode == GC_NIC_MODE_PASSTHROUGH)
			build_passthru(c, t, h, h->nics[i].pci, "passthrough for NIC", &h->nics[i].mark);
}

/*
 * What an ESXi host older than the esxcli namespaces for it gets through
 * vCenter (gc_host.passthru_via_vcenter, ntp_via_vcenter): the same
 * resources, ids and flags, on the vCenter target, with the host named
 * (the planner puts them in that host's maintenance window).
 */
static void build_host_via_vcenter(struct ctx *c, const struct gc_host *h)
{
	if (h->hypervisor != GC_HV_ESXI || c->vcenter == NULL)
		return;
	if (h->ntp_via_vcenter && h->nntp > 0)
		build_ntp(c, c->vcenter, h);
	if (h->passthru_via_vcenter)
		build_passthrus(c, c->vcenter, h);
}

static void build_host(struct ctx *c, const struct gc_host *h)
{
	struct gc_target *t = gc_graph_add_target(c->g, GC_TARGET_ESXI, h->name);
	const struct gc_host_nic *sriov = NULL, *pvrdma = NULL;
	struct gc_resource *r;

	t->host = h;
	if (h->nntp > 0 && !h->ntp_via_vcenter)
		build_ntp(c, t, h);
	if (!h->passthru_via_vcenter)
		build_passthrus(c, t, h);
	for (size_t i = 0; i < h->nnics; i++) {
		const struct gc_host_nic *n = &h->nics[i];

		if (n->mode == GC_NIC_MODE_SRIOV && sriov == NULL)
			sriov = n;
		if (n->mode == GC_NIC_MODE_PVRDMA && n->vmknic != NULL && pvrdma == NULL)
			pvrdma = n;
	}
	if (h->nmlx5_max_vfs != NULL || h->roce_switch != NULL)
		build_nmlx5(c, t, h, sriov);
	build_nic_firmware(c, t, h);
	if (h->vgpu != NULL)
		build_vgpu_host(c, t, h);
	if (pvrdma != NULL) {
		r = add(c, GC_RES_ESXI_ADVANCED, t, h->name, NULL, 0, &pvrdma->mark,
			"%s/esxi.advanced/Net.PVRDMAVmknic", h->name);
		set(c, r, "option", "/Net/PVRDMAVmknic");
		set(c, r, "value", pvrdma->vmknic);
		summary0(c, r, "PVRDMA vmknic tag");
		r = add(c, GC_RES_ESXI_FIREWALL, t, h->name, NULL, 0, &pvrdma->mark,
			"%s/esxi.firewall/pvrdma", h->name);
		set(c, r, "ruleset", "pvrdma");
		set(c, r, "enabled", "true");
		summary0(c, r, "firewall ruleset for PVRDMA");
	}
}

/* ---------------------------------------------------------------- distributed switches */

/*
 * The map form of a pvrdma NIC's vmknic: vCenter creates the adapter on the
 * port group (after the switch has the host as a member and the group
 * exists), and only then does the host's /Net/PVRDMAVmknic tag name it.
 */
static void build_vmknics(struct ctx *c, const struct gc_dvswitch *d, const struct gc_host *h)
{
	struct gc_resource *r;

	for (size_t i = 0; i < h->nnics; i++) {
		const struct gc_host_nic *n = &h->nics[i];
		const struct gc_vmknic *k = n->vmknic_create;

		if (n->mode != GC_NIC_MODE_PVRDMA || n->dvswitch != d || k == NULL || k->pg == NULL)
			continue;
		r = add(c, GC_RES_DVS_VMKNIC, c->vcenter, h->name, NULL, 0, &k->mark,
			"dvs/%s/vmknic/%s/%s", d->name, h->name, k->name);
		set(c, r, "host", h->name);
		set(c, r, "dvswitch", d->name);
		set(c, r, "portgroup", k->portgroup);
		set(c, r, "device", k->name);
		set(c, r, "address", k->address);
		summary(c, r, "PVRDMA vmknic on", k->portgroup);
		edge(c, find(c, "dvs/%s", d->name), r);
		edge(c, find(c, "dvs/%s/portgroup/%s", d->name, k->portgroup), r);
		edge(c, r, find(c, "%s/esxi.advanced/Net.PVRDMAVmknic", h->name));
	}
}

/* The uplink pNICs of the host of d->uplinks[first] (its first uplink),
 * as one set: "uplink.<host>" = "vmnic4,vmnic5", sorted (the driver's
 * observation gives vCenter's list the same form; gc_plan_value_same
 * compares them as sets). */
static void set_uplinks(struct ctx *c, struct gc_resource *r, const struct gc_dvswitch *d,
			size_t first)
{
	const char *host = d->uplinks[first].host_name;
	const char **nics = gc_xcalloc(d->nuplinks, sizeof(*nics));
	struct gc_buf b = GC_BUF_INIT;
	size_t n = 0;

	for (size_t i = first; i < d->nuplinks; i++)
		if (d->uplinks[i].nic != NULL && strcmp(d->uplinks[i].host_name, host) == 0)
			nics[n++] = d->uplinks[i].nic;
	gc_buf_put_set(&b, nics, n);
	gc_resource_set(c->g, r, gc_arena_printf(&c->g->arena, "uplink.%s", host), gc_buf_str(&b));
	gc_buf_free(&b);
	free(nics);
}

/* Whether d->uplinks[i] names a host an earlier uplink named. */
static bool host_seen(const struct gc_dvswitch *d, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (d->uplinks[j].host_name != NULL &&
		    strcmp(d->uplinks[j].host_name, d->uplinks[i].host_name) == 0)
			return true;
	return false;
}

static void build_dvs(struct ctx *c, const struct gc_dvswitch *d)
{
	struct gc_resource *r, *pg;

	r = add(c, GC_RES_DVS, c->vcenter, NULL, NULL, 0, &d->mark, "dvs/%s", d->name);
	setu(c, r, "mtu", d->mtu);
	for (size_t i = 0; i < d->nuplinks; i++) {
		if (d->uplinks[i].host_name == NULL || host_seen(d, i))
			continue;
		if (r != NULL)
			set_uplinks(c, r, d, i);
		/* the PVRDMA vmknic lives on this switch */
		edge(c, r, find(c, "%s/esxi.advanced/Net.PVRDMAVmknic", d->uplinks[i].host_name));
	}
	summary0(c, r, "distributed switch");
	for (size_t i = 0; i < d->nportgroups; i++) {
		const struct gc_portgroup *p = &d->portgroups[i];

		pg = add(c, GC_RES_DVS_PORTGROUP, c->vcenter, NULL, NULL, 0, &p->mark,
			 "dvs/%s/portgroup/%s", d->name, p->name);
		set(c, pg, "dvswitch", d->name);
		setu(c, pg, "vlan", p->vlan);
		summary0(c, pg, "port group");
		edge(c, r, pg);
	}
	for (size_t i = 0; i < d->nuplinks; i++)
		if (d->uplinks[i].host != NULL && !host_seen(d, i))
			build_vmknics(c, d, d->uplinks[i].host);
}

/* ---------------------------------------------------------------- VMs */

static struct gc_resource *portgroup_of(struct ctx *c, const struct gc_vm_nic *n)
{
	if (n->portgroup == NULL || n->portgroup->dvswitch == NULL)
		return NULL;
	return find(c, "dvs/%s/portgroup/%s", n->portgroup->dvswitch->name, n->portgroup->name);
}

/*
 * A device not tied to one host GPU (dynamic DirectPath, an unpinned vGPU)
 * may land on any GPU of the host in that mode: it waits for all of them.
 */
static void host_gpu_edges(struct ctx *c, const struct gc_vm *v, enum gc_gpu_mode mode,
			   struct gc_resource *r)
{
	if (v->host == NULL)
		return;
	for (size_t i = 0; i < v->host->ngpus; i++) {
		const char *pci = v->host->gpus[i].pci;

		if (v->host->gpus[i].mode != mode)
			continue;
		if (mode == GC_GPU_PASSTHROUGH)
			edge(c, find(c, "%s/esxi.pci_passthru/%s", v->host_name, pci), r);
		else
			edge(c, find(c, "%s/esxi.gpu_ecc/%s", v->host_name, pci), r);
	}
}

static void build_vm_gpus(struct ctx *c, const struct gc_vm *v, const struct gc_target *t,
			  struct gc_resource *pre, struct gc_resource *power)
{
	const char *h = v->host_name;

	for (size_t i = 0; i < v->ngpus; i++) {
		const struct gc_vm_gpu *gpu = &v->gpus[i];
		struct gc_resource *r = NULL;

		switch (gpu->kind) {
		case GC_VMGPU_STATIC:
			r = add(c, GC_RES_VM_DEVICE_PCI, t, h, v->name, GC_RES_NEEDS_VM_OFF,
				&gpu->mark, "vm/%s/device.pci/%s", v->name, gpu->host_pci);
			set(c, r, "host_pci", gpu->host_pci);
			set(c, r, "device", "gpu");
			summary(c, r, "passthrough GPU", gpu->host_pci);
			edge(c, find(c, "%s/esxi.pci_passthru/%s", h, gpu->host_pci), r);
			edge(c, find(c, "%s/kvm.vfio/%s", h, gpu->host_pci), r);
			break;
		case GC_VMGPU_DYNAMIC:
			r = add(c, GC_RES_VM_DEVICE_PCI, t, h, v->name, GC_RES_NEEDS_VM_OFF,
				&gpu->mark, "vm/%s/device.pci/dynamic-%zu", v->name, i);
			set(c, r, "pci_id", gpu->pci_id);
			set(c, r, "device", "gpu");
			summary(c, r, "dynamic passthrough GPU", gpu->pci_id);
			if (gpu->gpu != NULL)
				edge(c, find(c, "%s/esxi.pci_passthru/%s", h, gpu->gpu->pci), r);
			else
				host_gpu_edges(c, v, GC_GPU_PASSTHROUGH, r);
			break;
		case GC_VMGPU_VGPU:
			r = add(c, GC_RES_VM_DEVICE_VGPU, t, h, v->name, GC_RES_NEEDS_VM_OFF,
				&gpu->mark, "vm/%s/device.vgpu/%zu", v->name, i);
			if (t->kind == GC_TARGET_LIBVIRT) {
				graph_build_kvm_vgpu(c, v, i, r);
				edge(c, pre, r);
				edge(c, r, power);
				continue;
			}
			set(c, r, "profile", gpu->profile);
			set(c, r, "host_pci", gpu->host_pci);
			summary(c, r, "vGPU", gpu->profile);
			edge(c, find(c, "%s/esxi.graphics", h), r);
			if (gpu->gpu != NULL)
				edge(c, find(c, "%s/esxi.gpu_ecc/%s", h, gpu->gpu->pci), r);
			else
				host_gpu_edges(c, v, GC_GPU_VGPU, r);
			break;
		}
		edge(c, pre, r);
		edge(c, r, power);
	}
}

static void build_vm_nics(struct ctx *c, const struct gc_vm *v, const struct gc_target *t,
			  struct gc_resource *pre, struct gc_resource *power)
{
	const char *h = v->host_name;

	for (size_t i = 0; i < v->nnics; i++) {
		const struct gc_vm_nic *n = &v->nics[i];
		struct gc_resource *r = NULL;

		switch (n->kind) {
		case GC_VMNIC_SRIOV:
			r = add(c, GC_RES_VM_NIC_SRIOV, t, h, v->name, GC_RES_NEEDS_VM_OFF,
				&n->mark, "vm/%s/nic.sriov/%zu", v->name, i);
			/* on KVM the libvirt network carries the PF */
			set(c, r, "pf", t->kind == GC_TARGET_LIBVIRT ? NULL : n->pf);
			set(c, r, "port_group", n->port_group);
			set(c, r, "network", n->network);
			summary(c, r, "SR-IOV VF of", n->pf);
			edge(c, find(c, "%s/esxi.module_param/nmlx5_core", h), r);
			if (t->kind == GC_TARGET_LIBVIRT)
				edge(c, graph_kvm_network(c, v, n), r);
			break;
		case GC_VMNIC_PVRDMA:
			r = add(c, GC_RES_VM_NIC_PVRDMA, t, h, v->name, GC_RES_NEEDS_VM_OFF,
				&n->mark, "vm/%s/nic.pvrdma/%zu", v->name, i);
			set(c, r, "port_group", n->port_group);
			set(c, r, "network", n->network);
			set(c, r, "protocol", n->protocol ? n->protocol : "rocev2");
			summary(c, r, "PVRDMA adapter on", n->port_group);
			edge(c, find(c, "%s/esxi.advanced/Net.PVRDMAVmknic", h), r);
			edge(c, find(c, "%s/esxi.firewall/pvrdma", h), r);
			break;
		case GC_VMNIC_VMXNET3:
			r = add(c, GC_RES_VM_NIC_VMXNET3, t, h, v->name, 0, &n->mark,
				"vm/%s/nic.vmxnet3/%zu", v->name, i);
			set(c, r, "network", n->network);
			set(c, r, "port_group", n->port_group);
			summary0(c, r, "vmxnet3 adapter");
			break;
		case GC_VMNIC_VIRTIO:
			r = add(c, GC_RES_VM_NIC_VIRTIO, t, h, v->name, GC_RES_NEEDS_VM_OFF, &n->mark,
				"vm/%s/nic.virtio/%zu", v->name, i);
			/* its address is the seed's (vm.seed digest), not the domain's */
			set(c, r, "network", n->network);
			summary(c, r, "virtio NIC on", n->network);
			break;
		case GC_VMNIC_PASSTHROUGH:
			r = add(c, GC_RES_VM_DEVICE_PCI, t, h, v->name, GC_RES_NEEDS_VM_OFF,
				&n->mark, "vm/%s/device.pci/%s", v->name, n->host_pci);
			set(c, r, "host_pci", n->host_pci);
			set(c, r, "device", "nic");
			summary(c, r, "passthrough NIC", n->host_pci);
			edge(c, find(c, "%s/esxi.pci_passthru/%s", h, n->host_pci), r);
			edge(c, find(c, "%s/kvm.vfio/%s", h, n->host_pci), r);
			break;
		}
		edge(c, portgroup_of(c, n), r);
		edge(c, pre, r);
		edge(c, r, power);
	}
}

/* Why a VM cannot be live-migrated, for "why" lines; NULL if it can. */
static const char *pinned_by(struct ctx *c, const struct gc_vm *v)
{
	if (v->live_migratable)
		return NULL;
	for (size_t i = 0; i < v->ngpus; i++) {
		if (v->gpus[i].kind == GC_VMGPU_STATIC)
			return gc_arena_printf(&c->g->arena, "passthrough GPU %s", v->gpus[i].host_pci);
		if (v->gpus[i].kind == GC_VMGPU_DYNAMIC)
			return gc_arena_printf(&c->g->arena, "dynamic passthrough GPU %s",
					       v->gpus[i].pci_id);
	}
	for (size_t i = 0; i < v->nnics; i++) {
		if (v->nics[i].kind == GC_VMNIC_SRIOV)
			return gc_arena_printf(&c->g->arena, "SR-IOV VF of %s", v->nics[i].pf);
		if (v->nics[i].kind == GC_VMNIC_PASSTHROUGH)
			return gc_arena_printf(&c->g->arena, "passthrough NIC %s",
					       v->nics[i].host_pci);
	}
	if (v->has_vgpu && v->host != NULL && v->host->version != NULL)
		return gc_arena_printf(&c->g->arena,
				       "a vGPU on ESXi %s: vGPU vMotion needs vSphere 6.7 Update 1",
				       v->host->version);
	return "its configuration";
}

static void build_vm(struct ctx *c, const struct gc_vm *v)
{
	const char *h = v->host_name;
	struct gc_resource *vm, *hw, *extra = NULL, *power;
	struct gc_graph_vm gv;

	const bool kvm = v->host != NULL && v->host->hypervisor == GC_HV_KVM;
	const struct gc_target *t =
		kvm ? gc_graph_target(c->g, GC_TARGET_LIBVIRT, v->host_name) : c->vcenter;

	vm = add(c, GC_RES_VM, t, h, v->name, GC_RES_NEEDS_VM_OFF, &v->mark, "vm/%s", v->name);
	set(c, vm, "host", h);
	set(c, vm, "template", v->template_name);
	set(c, vm, "image", v->image);
	set(c, vm, "pool", kvm ? v->pool : NULL);
	if (v->cpus > 0)
		setu(c, vm, "cpus", v->cpus);
	if (v->memory_gb > 0)
		setu(c, vm, "memory_gb", v->memory_gb);
	if (v->disk_gb > 0)
		setu(c, vm, "disk_gb", v->disk_gb);
	summary0(c, vm, "virtual machine");
	/*
	 * On KVM the first of a VM's actions defines its whole domain, and
	 * libvirt places an SR-IOV interface by its network as the define
	 * finds it: with the network (forward mode hostdev) defined, the VF
	 * goes on a PCIe root port as a hostdev; without it, libvirt 9.0 takes
	 * the interface for an emulated NIC, gives it <model type='rtl8139'/>
	 * and puts it behind a pcie-to-pci-bridge.  So each SR-IOV network is
	 * defined before the domain (the short soak found the difference:
	 * docs/kvm.md).
	 */
	for (size_t i = 0; kvm && i < v->nnics; i++)
		if (v->nics[i].kind == GC_VMNIC_SRIOV)
			edge(c, graph_kvm_network(c, v, &v->nics[i]), vm);

	hw = add(c, GC_RES_VM_HW, t, h, v->name, GC_RES_NEEDS_VM_OFF, &v->mark, "vm/%s/hw",
		 v->name);
	set(c, hw, "firmware", v->firmware);
	set(c, hw, "memory_reservation", v->reservation_full ? "full" : "none");
	if (kvm) {
		/* the 64-bit PCI window, the same number ESXi's
		 * pciPassthru.64bitMMIOSizeGB gets (docs/kvm.md) */
		if (v->use_64bit_mmio)
			setu(c, hw, "mmio64_gb", v->mmio_gb);
	}
	summary0(c, hw, "firmware and memory reservation");
	edge(c, vm, hw);

	if (!kvm && (v->use_64bit_mmio || v->allow_p2p == GC_TRUE)) {
		extra = add(c, GC_RES_VM_EXTRA_CONFIG, t, h, v->name, GC_RES_NEEDS_VM_OFF,
			    &v->mark, "vm/%s/extra_config", v->name);
		if (v->use_64bit_mmio) {
			set(c, extra, "pciPassthru.use64bitMMIO", "TRUE");
			setu(c, extra, "pciPassthru.64bitMMIOSizeGB", v->mmio_gb);
		}
		if (v->allow_p2p == GC_TRUE)
			set(c, extra, "pciPassthru.allowP2P", "TRUE"); /* the guides' spelling */
		summary0(c, extra, "VMX options for large BARs");
		edge(c, vm, extra);
		edge(c, hw, extra);
	}

	power = add(c, GC_RES_VM_POWER, t, h, v->name, 0, &v->mark, "vm/%s/power", v->name);
	set(c, power, "power", v->power_on ? "on" : "off");
	summary0(c, power, "power state");
	/* power is added before the devices so its id exists; insertion order
	 * only breaks ties, edges decide */
	if (kvm && v->guest != NULL) {
		/* the guest's identity at first boot: cloud-init's NoCloud seed
		 * (hostname, user and key, addresses), whose content the libvirt
		 * driver writes and fingerprints (docs/kvm.md) */
		struct gc_resource *seed = add(c, GC_RES_VM_SEED, t, h, v->name, GC_RES_NEEDS_VM_OFF,
					       &v->guest->mark, "vm/%s/seed", v->name);

		set(c, seed, "datasource", "nocloud");
		set(c, seed, "digest", GC_PROP_LEARNED_SEED);
		summary0(c, seed, "cloud-init NoCloud seed");
		edge(c, hw, seed);
		edge(c, seed, power);
	}
	build_vm_gpus(c, v, t, extra ? extra : hw, power);
	build_vm_nics(c, v, t, extra ? extra : hw, power);
	edge(c, extra ? extra : hw, power);

	gv.name = v->name;
	gv.host = h;
	gv.live_migratable = v->live_migratable;
	gv.power_on = v->power_on;
	gv.pinned_by = pinned_by(c, v);
	gv.target = t;
	if (c->rc == 0)
		gc_graph_add_vm(c->g, &gv);
}

/* ---------------------------------------------------------------- Onyx switches */

static void build_switch(struct ctx *c, const struct gc_switch *s)
{
	struct gc_target *t = gc_graph_add_target(c->g, GC_TARGET_SWITCH, s->name);
	const struct gc_switch_roce *q = s->roce;
	struct gc_resource *r;

	t->sw = s;
	if (q == NULL)
		return;
	if (q->mode != NULL && strcmp(q->mode, "oneshot") == 0) {
		r = add(c, GC_RES_SWITCH_ROCE, t, NULL, NULL, 0, &q->mark, "%s/switch.roce", s->name);
		set(c, r, "mode", "lossless");
		summary0(c, r, "RoCE lossless (one-shot)");
		return;
	}
	/* the manual DSCP recipe, in the order the reference guides apply it */
	r = add(c, GC_RES_SWITCH_ECN, t, NULL, NULL, 0, &q->mark, "%s/switch.ecn", s->name);
	set(c, r, "ports", s->ports);
	if (r != NULL)
		gc_resource_setf(c->g, r, "traffic_class", "%d", q->priority);
	setu(c, r, "min_kb", q->ecn_min_kb);
	setu(c, r, "max_kb", q->ecn_max_kb);
	summary0(c, r, "ECN on the lossless traffic class");

	r = add(c, GC_RES_SWITCH_POOL, t, NULL, NULL, 0, &q->mark, "%s/switch.pool", s->name);
	set(c, r, "pool", "roce");
	set(c, r, "type", "lossless");
	if (r != NULL) {
		gc_resource_setf(c->g, r, "memory_percent", "%.2f", q->pool_percent);
		gc_resource_setf(c->g, r, "switch_priority", "%d", q->priority);
	}
	summary0(c, r, "lossless buffer pool");

	r = add(c, GC_RES_SWITCH_ETS, t, NULL, NULL, 0, &q->mark, "%s/switch.ets", s->name);
	set(c, r, "ports", s->ports);
	if (r != NULL)
		gc_resource_setf(c->g, r, "traffic_class", "%d", q->cnp_traffic_class);
	set(c, r, "mode", "strict");
	summary0(c, r, "strict ETS class for CNPs");

	r = add(c, GC_RES_SWITCH_QOS_TRUST, t, NULL, NULL, 0, &q->mark, "%s/switch.qos_trust",
		s->name);
	set(c, r, "ports", s->ports);
	set(c, r, "trust", "L3");
	summary0(c, r, "trust DSCP (L3)");

	if (q->pfc) {
		r = add(c, GC_RES_SWITCH_PFC, t, NULL, NULL, 0, &q->mark, "%s/switch.pfc", s->name);
		set(c, r, "ports", s->ports);
		if (r != NULL)
			gc_resource_setf(c->g, r, "priority", "%d", q->priority);
		set(c, r, "enabled", "true");
		set(c, r, "port_mode", "on-force");
		summary0(c, r, "PFC on the lossless priority");
	}
	if (q->lldp) {
		r = add(c, GC_RES_SWITCH_LLDP, t, NULL, NULL, 0, &q->mark, "%s/switch.lldp", s->name);
		set(c, r, "enabled", "true");
		summary0(c, r, "LLDP (DCBX)");
	}
}

/* ---------------------------------------------------------------- guests */

/* The GPUDirect RDMA module of a driver branch: nvidia-peermem ships with
 * R470 and later; older branches need Mellanox's nv_peer_mem
 * (REAL-FORMATS C.9, NVIDIA's GPUDirect RDMA documentation). */
static const char *peermem_module(const char *branch)
{
	long major = branch != NULL ? strtol(branch, NULL, 10) : 0;

	return major > 0 && major < 470 ? "nv_peer_mem" : "nvidia_peermem";
}

static struct gc_resource *guest_res(struct ctx *c, enum gc_res_kind kind, struct gc_target *t,
				     const struct gc_vm *v, const struct gc_mark *m,
				     struct gc_resource *power, const char *what, unsigned flags)
{
	struct gc_resource *r = add(c, kind, t, NULL, v->name, flags, m, "guest/%s/%s", v->name, what);

	edge(c, power, r);
	return r;
}

static void build_guest(struct ctx *c, const struct gc_vm *v)
{
	const struct gc_guest *gu = v->guest;
	struct gc_target *t = gc_graph_add_target(c->g, GC_TARGET_GUEST, v->name);
	struct gc_resource *power = find(c, "vm/%s/power", v->name);
	struct gc_resource *drv = NULL, *stack = NULL, *rif = NULL, *r;

	t->vm = v;
	if (gu->nvidia_driver != NULL) {
		const struct gc_guest_driver *d = gu->driver;

		drv = guest_res(c, GC_RES_GUEST_DRIVER, t, v, d ? &d->mark : &gu->mark, power, "driver",
				GC_RES_NEEDS_REBOOT);
		set(c, drv, "branch", gu->nvidia_driver);
		if (d != NULL)
			set(c, drv, "version", d->version);
		summary0(c, drv, d != NULL && d->runfile != NULL ? "NVIDIA driver (.run installer)"
								  : "NVIDIA driver");
	}
	if (gu->rdma_packages || gu->rdma_stack != NULL) {
		const struct gc_rdma_stack *rs = gu->rdma_stack;
		bool ofed = rs != NULL && strcmp(rs->source, "ofed") == 0;

		stack = guest_res(c, GC_RES_GUEST_RDMA_STACK, t, v, rs ? &rs->mark : &gu->mark, power,
				  "rdma_stack", ofed ? GC_RES_NEEDS_REBOOT : 0);
		set(c, stack, "stack", ofed ? "ofed" : "packages");
		if (ofed)
			set(c, stack, "version", rs->version);
		summary0(c, stack, ofed ? "RDMA stack (MLNX_OFED)" : "RDMA stack (rdma-core, perftest)");
	}
	if (gu->rdma_interface != NULL) {
		const struct gc_rdma_if *ri = gu->rdma_interface;

		rif = guest_res(c, GC_RES_GUEST_RDMA_IF, t, v, &ri->mark, power, "rdma_interface", 0);
		set(c, rif, "name", ri->name);
		set(c, rif, "address", ri->address);
		setu(c, rif, "mtu", ri->mtu);
		set(c, rif, "persistent", "true");
		summary0(c, rif, "RDMA interface address and MTU");
	}
	if (gu->license != NULL) {
		const struct gc_license *l = gu->license;

		r = guest_res(c, GC_RES_GUEST_LICENSE, t, v, &l->mark, power, "license",
			      GC_RES_AFTER_REBOOT);
		set(c, r, "server", l->server);
		if (l->server != NULL)
			setu(c, r, "port", l->port);
		setu(c, r, "feature_type", l->feature_type);
		set(c, r, "token_file", l->token_file);
		set(c, r, "status", "licensed");
		summary0(c, r, "vGPU licence");
		edge(c, drv, r);
	}
	if (gu->peermem) {
		r = guest_res(c, GC_RES_GUEST_PEERMEM, t, v, &gu->mark, power, "peermem",
			      GC_RES_AFTER_REBOOT);
		set(c, r, "module", peermem_module(gu->nvidia_driver));
		set(c, r, "loaded", "true");
		set(c, r, "persistent", "true");
		summary0(c, r, "GPUDirect RDMA (peer memory module)");
		edge(c, drv, r);
		edge(c, stack, r);
	}
	if (gu->roce_qos != NULL) {
		const struct gc_roce_qos *q = gu->roce_qos;

		r = guest_res(c, GC_RES_GUEST_ROCE_QOS, t, v, &q->mark, power, "roce_qos",
			      GC_RES_AFTER_REBOOT);
		set(c, r, "interface", q->interface);
		set(c, r, "rdma_device", q->rdma_device);
		set(c, r, "trust", q->trust ? q->trust : "dscp");
		if (r != NULL && q->pfc_priority >= 0)
			gc_resource_setf(c->g, r, "pfc_priority", "%d", q->pfc_priority);
		if (r != NULL)
			gc_resource_setf(c->g, r, "tos", "%d", q->tos);
		set(c, r, "ecn", q->ecn ? "true" : "false");
		set(c, r, "boot_unit", "enabled");
		summary0(c, r, "RoCE QoS (trust, PFC, ToS, ECN)");
		edge(c, drv, r);
		edge(c, stack, r);
		edge(c, rif, r);
	}
	if (gu->container_toolkit) {
		r = guest_res(c, GC_RES_GUEST_CONTAINER_TOOLKIT, t, v, &gu->mark, power,
			      "container_toolkit", GC_RES_AFTER_REBOOT);
		set(c, r, "installed", "true");
		summary0(c, r, "NVIDIA Container Toolkit");
		edge(c, drv, r);
	}
	if (gu->nntp > 0) {
		struct gc_buf b = GC_BUF_INIT;

		r = guest_res(c, GC_RES_GUEST_NTP, t, v, &gu->mark, power, "ntp", 0);
		join(&b, gu->ntp, gu->nntp);
		if (r != NULL)
			gc_resource_set(c->g, r, "servers", gc_buf_str(&b));
		set(c, r, "service", "running");
		summary0(c, r, "NTP (chrony)");
		gc_buf_free(&b);
	}
}

/* ---------------------------------------------------------------- entry point */

/*
 * vCenter's advanced setting vgpu.hotmigrate.enabled = true when the spec
 * lets a vGPU VM be live-migrated (rolling.allow_vmotion, a vGPU VM on an
 * ESXi host that can move it): vCenter refuses the vMotion of a vGPU VM
 * until it is set ("vGPU hot migration is not enabled").  Sources: vSphere
 * 6.7 and 7.0 "Migrating vGPU VMs with vMotion" (set
 * vgpu.hotmigrate.enabled to true), NVIDIA's vGPU user guide for vSphere
 * (vCenter Server > Configure > Advanced Settings), vCenter's advanced
 * settings list ("vGPU hot migration", default False).
 */
static void build_vcenter_settings(struct ctx *c, const struct gc_cluster *cl)
{
	struct gc_resource *r;
	bool any = false;

	if (!cl->rolling.allow_vmotion || c->vcenter == NULL)
		return;
	for (size_t i = 0; i < cl->nvms && !any; i++) {
		const struct gc_vm *v = &cl->vms[i];

		any = v->has_vgpu && v->live_migratable && v->host != NULL &&
		      v->host->hypervisor == GC_HV_ESXI;
	}
	if (!any)
		return;
	r = add(c, GC_RES_VCENTER_SETTING, c->vcenter, NULL, NULL, 0, &cl->rolling.mark, "%s",
		GC_VGPU_HOTMIGRATE_ID);
	set(c, r, "key", GC_VGPU_HOTMIGRATE_KEY);
	set(c, r, "value", "true");
	summary0(c, r, "vGPU vMotion (vCenter advanced setting)");
}

static bool esxi_vms(const struct gc_cluster *cl)
{
	for (size_t i = 0; i < cl->nvms; i++)
		if (cl->vms[i].host == NULL || cl->vms[i].host->hypervisor == GC_HV_ESXI)
			return true;
	return false;
}

int gc_graph_build(struct gc_graph **out, const struct gc_cluster *cl, struct gc_error *err)
{
	struct gc_graph *g = NULL;
	struct ctx c = {0};

	gc_graph_new(&g);
	g->cluster = cl;
	g->rolling = cl->rolling;
	if (g->rolling.max_unavailable == 0)
		g->rolling.max_unavailable = 1;
	c.g = g;
	c.err = err;

	for (size_t i = 0; i < cl->nhosts; i++) {
		if (cl->hosts[i].hypervisor == GC_HV_KVM)
			graph_build_kvm_host(&c, &cl->hosts[i]);
		else
			build_host(&c, &cl->hosts[i]);
	}
	if (cl->vcenter != NULL || esxi_vms(cl) || cl->ndvswitches > 0)
		c.vcenter = gc_graph_add_target(g, GC_TARGET_VCENTER, GC_VCENTER_TARGET);
	for (size_t i = 0; i < cl->nhosts; i++)
		build_host_via_vcenter(&c, &cl->hosts[i]);
	build_vcenter_settings(&c, cl);
	for (size_t i = 0; i < cl->ndvswitches; i++)
		build_dvs(&c, &cl->dvswitches[i]);
	for (size_t i = 0; i < cl->nvms; i++)
		build_vm(&c, &cl->vms[i]);
	for (size_t i = 0; i < cl->nswitches; i++)
		build_switch(&c, &cl->switches[i]);
	for (size_t i = 0; i < cl->nvms; i++)
		if (cl->vms[i].guest != NULL)
			build_guest(&c, &cl->vms[i]);
	if (c.rc != 0)
		goto out;
	*out = g;
	g = NULL; /* now owned by the caller */
out:
	gc_buf_free(&c.id);
	gc_graph_free(g);
	return c.rc;
}
