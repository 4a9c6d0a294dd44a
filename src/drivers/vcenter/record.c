/*
 * record.c - one vCenter observation, in the shape of the resource graph.
 *
 * gc_vcenter_observe() reads every VM, host, switch and port group in one
 * property-collector call; this file turns that inventory into observed
 * resources with the same ids and property keys the graph builder uses
 * (src/graph/build.c), so the planner's diff is the generic one.  Which
 * device stands for which spec item is decided here too (vcdrv.h), and the
 * driver asks the same functions when it applies a change, so the two can
 * never disagree.
 *
 * What cannot be read back is recorded as desired, and documented in
 * docs/vcenter.md: the template a VM was cloned from (vCenter keeps no
 * record of it) and the physical GPU a pinned vGPU sits on.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gc/pattern.h"
#include "vcdrv.h"

/* ---------------------------------------------------------------- matching */

const struct gc_vcenter_host *gc_vcdrv_host(const struct gc_vcenter_inventory *inv,
					    const struct gc_host *h)
{
	const struct gc_vcenter_host *vh;

	if (h == NULL)
		return NULL;
	vh = gc_vcenter_inventory_host(inv, h->name);
	if (vh == NULL && h->address != NULL)
		vh = gc_vcenter_inventory_host(inv, h->address);
	return vh;
}

const char *gc_vcdrv_host_name(const struct gc_vcenter_inventory *inv, const struct gc_cluster *c,
			       const char *moref)
{
	const struct gc_vcenter_host *vh;
	const struct gc_host *h0;

	if (moref == NULL || (vh = gc_vcenter_inventory_host_moref(inv, moref)) == NULL)
		return NULL;
	if (c != NULL && vh->name != NULL && (h0 = gc_cluster_host(c, vh->name)) != NULL)
		return h0->name; /* the usual case, without a scan */
	for (size_t i = 0; c != NULL && i < c->nhosts; i++) {
		const struct gc_host *h = &c->hosts[i];

		if (strcmp(h->name, vh->name) == 0 ||
		    (h->address != NULL && strcmp(h->address, vh->name) == 0))
			return h->name;
	}
	return vh->name;
}

const struct gc_vcenter_vm *gc_vcdrv_vm(const struct gc_vcenter_inventory *inv, const char *name)
{
	return gc_vcenter_inventory_vm_not_template(inv, name);
}

static bool type_is(const struct gc_vcenter_device *d, const char *type)
{
	return d->type != NULL && strcmp(d->type, type) == 0;
}

static bool backing_is(const struct gc_vcenter_device *d, const char *type)
{
	return d->backing_type != NULL && strcmp(d->backing_type, type) == 0;
}

const char *gc_vcdrv_portgroup_name(const struct gc_resource *r)
{
	const char *dvs = gc_resource_prop(r, "dvswitch");
	size_t n = dvs ? strlen(dvs) : 0;

	/* the graph builds the id as "dvs/%s/portgroup/%s" from the spec's names */
	if (dvs != NULL && strncmp(r->id, "dvs/", 4) == 0 && strncmp(r->id + 4, dvs, n) == 0 &&
	    strncmp(r->id + 4 + n, "/portgroup/", 11) == 0)
		return r->id + 4 + n + 11;
	return strrchr(r->id, '/') + 1; /* not built by the graph: a test's hand-made id */
}

bool gc_vcdrv_is_nic(const struct gc_vcenter_device *d, enum gc_res_kind kind)
{
	/* an if chain, not a switch: most resource kinds are not devices */
	if (kind == GC_RES_VM_NIC_VMXNET3)
		return type_is(d, "VirtualVmxnet3");
	if (kind == GC_RES_VM_NIC_SRIOV)
		return type_is(d, "VirtualSriovEthernetCard");
	if (kind == GC_RES_VM_NIC_PVRDMA)
		return type_is(d, "VirtualVmxnet3Vrdma");
	if (kind == GC_RES_VM_DEVICE_VGPU)
		return type_is(d, "VirtualPCIPassthrough") &&
		       backing_is(d, "VirtualPCIPassthroughVmiopBackingInfo");
	if (kind == GC_RES_VM_DEVICE_PCI)
		return type_is(d, "VirtualPCIPassthrough") &&
		       backing_is(d, "VirtualPCIPassthroughDeviceBackingInfo");
	return false;
}

/* "10de:1db4" -> 0x10de, 0x1db4; false when it is not that shape. */
bool gc_vcdrv_pci_id(const char *s, unsigned *vendor, unsigned *device)
{
	char *end;
	unsigned long v, d;

	if (s == NULL)
		return false;
	v = strtoul(s, &end, 16);
	if (end != s + 4 || *end != ':')
		return false;
	d = strtoul(end + 1, &end, 16);
	if (end != s + 9 || *end != '\0')
		return false;
	*vendor = (unsigned)v;
	*device = (unsigned)d;
	return true;
}

/* A dynamic DirectPath device allowing vendor:device?  vCenter sends the
 * ids as xsd:int; compare them as the 16-bit ids they are. */
static bool is_dynamic(const struct gc_vcenter_device *d, unsigned vendor, unsigned device)
{
	return type_is(d, "VirtualPCIPassthrough") &&
	       backing_is(d, "VirtualPCIPassthroughDynamicBackingInfo") &&
	       (uint16_t)d->allowed_vendor_id == vendor && (uint16_t)d->allowed_device_id == device;
}

/* The n-th dynamic device of the spec with this id stands for the n-th
 * such device of the VM: ids end in the GPU's list index (dynamic-<i>). */
static const struct gc_vcenter_device *dynamic_device(const struct gc_vcenter_vm *vm,
						      const struct gc_vm *v,
						      const struct gc_resource *r)
{
	const char *id = gc_resource_prop(r, "pci_id");
	const char *dash = strrchr(r->id, '-');
	size_t idx = dash ? strtoul(dash + 1, NULL, 10) : 0, want = 0, seen = 0;
	unsigned vendor, device;

	if (!gc_vcdrv_pci_id(id, &vendor, &device))
		return NULL;
	for (size_t i = 0; i < v->ngpus && i < idx; i++)
		want += v->gpus[i].kind == GC_VMGPU_DYNAMIC && v->gpus[i].pci_id != NULL &&
			strcasecmp(v->gpus[i].pci_id, id) == 0;
	for (size_t i = 0; i < vm->ndevices; i++) {
		if (!is_dynamic(&vm->devices[i], vendor, device))
			continue;
		if (seen++ == want)
			return &vm->devices[i];
	}
	return NULL;
}

/* Which of the VM's spec items of this kind does r stand for (0-based),
 * counting only items that are matched by type (NICs, vGPUs)? */
static size_t ordinal(const struct gc_vm *v, const struct gc_resource *r)
{
	/* ids end in the spec's list index: vm/<vm>/nic.sriov/<i>, .../device.vgpu/<i> */
	const char *slash = strrchr(r->id, '/');
	size_t idx = slash ? strtoul(slash + 1, NULL, 10) : 0, n = 0;

	if (r->kind == GC_RES_VM_DEVICE_VGPU) {
		for (size_t i = 0; i < v->ngpus && i < idx; i++)
			n += v->gpus[i].kind == GC_VMGPU_VGPU;
		return n;
	}
	for (size_t i = 0; i < v->nnics && i < idx; i++) {
		enum gc_vm_nic_kind k = v->nics[i].kind;

		n += (r->kind == GC_RES_VM_NIC_VMXNET3 && k == GC_VMNIC_VMXNET3) ||
		     (r->kind == GC_RES_VM_NIC_SRIOV && k == GC_VMNIC_SRIOV) ||
		     (r->kind == GC_RES_VM_NIC_PVRDMA && k == GC_VMNIC_PVRDMA);
	}
	return n;
}

const struct gc_vcenter_device *gc_vcdrv_device(const struct gc_vcenter_inventory *inv,
						const struct gc_vcenter_vm *vm,
						const struct gc_vm *v,
						const struct gc_resource *r)
{
	size_t want, seen = 0;

	(void)inv;
	if (vm == NULL || v == NULL)
		return NULL;
	if (r->kind == GC_RES_VM_DEVICE_PCI && gc_resource_prop(r, "host_pci") == NULL)
		return dynamic_device(vm, v, r);
	if (r->kind == GC_RES_VM_DEVICE_PCI) {
		const char *pci = gc_resource_prop(r, "host_pci");

		for (size_t i = 0; pci != NULL && i < vm->ndevices; i++) {
			const struct gc_vcenter_device *d = &vm->devices[i];

			if (gc_vcdrv_is_nic(d, GC_RES_VM_DEVICE_PCI) && d->pci_id != NULL &&
			    strcmp(d->pci_id, pci) == 0)
				return d;
		}
		return NULL;
	}
	want = ordinal(v, r);
	/* vCenter lists devices in key order; keys only grow, so a device added
	 * later never overtakes an older one */
	for (size_t i = 0; i < vm->ndevices; i++) {
		const struct gc_vcenter_device *d = &vm->devices[i];

		if (!gc_vcdrv_is_nic(d, r->kind))
			continue;
		if (seen++ == want)
			return d;
	}
	return NULL;
}

/* ---------------------------------------------------------------- recording */

struct rec {
	struct gc_observed *obs;
	const struct gc_vcenter_inventory *inv;
	const struct gc_cluster *c;
	struct gc_buf *problems;
	/* which devices a spec item claims: claimed[off[vm] + device] */
	bool *claimed;
	size_t *off;
};

static void claim(struct rec *x, const struct gc_vcenter_vm *vm, const struct gc_vcenter_device *d)
{
	x->claimed[x->off[vm - x->inv->vms] + (size_t)(d - vm->devices)] = true;
}

static void setu(struct gc_observed *obs, const char *id, const char *key, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", v);
	gc_observed_set(obs, id, key, buf);
}

static void set_if(struct gc_observed *obs, const char *id, const char *key, const char *v)
{
	if (v != NULL)
		gc_observed_set(obs, id, key, v);
}

/* The name of the network a NIC backing points at: a DV port group by key,
 * else the standard network's name. */
static const char *nic_network(const struct gc_vcenter_inventory *inv,
			       const struct gc_vcenter_device *d, bool *distributed)
{
	*distributed = false;
	if (d->portgroup_key != NULL) {
		*distributed = true;
		for (size_t i = 0; i < inv->nnetworks; i++)
			if (inv->networks[i].portgroup_key != NULL &&
			    strcmp(inv->networks[i].portgroup_key, d->portgroup_key) == 0)
				return inv->networks[i].name;
		return d->portgroup_key;
	}
	return d->network;
}

/* What a device itself says, under resource id `id` of kind `kind`: the
 * same keys the graph builder gives that kind. */
static void record_device(struct rec *x, const char *id, enum gc_res_kind kind,
			  const struct gc_vcenter_device *d)
{
	bool dist;
	const char *net;
	char pci_id[16];

	gc_observed_add(x->obs, id);
	if (kind == GC_RES_VM_DEVICE_PCI) {
		if (backing_is(d, "VirtualPCIPassthroughDynamicBackingInfo")) {
			snprintf(pci_id, sizeof(pci_id), "%04x:%04x",
				 (unsigned)(uint16_t)d->allowed_vendor_id,
				 (unsigned)(uint16_t)d->allowed_device_id);
			gc_observed_set(x->obs, id, "pci_id", pci_id);
		} else {
			set_if(x->obs, id, "host_pci", d->pci_id);
		}
		return;
	}
	if (kind == GC_RES_VM_DEVICE_VGPU) {
		set_if(x->obs, id, "profile", d->vgpu);
		return;
	}
	/* a NIC.  The spec says port_group for a distributed port group and
	 * network for a standard one: record under the key the backing
	 * really is */
	net = nic_network(x->inv, d, &dist);
	set_if(x->obs, id, dist ? "port_group" : "network", net);
	if (kind == GC_RES_VM_NIC_SRIOV)
		set_if(x->obs, id, "pf", d->sriov_pf);
	if (kind == GC_RES_VM_NIC_PVRDMA)
		set_if(x->obs, id, "protocol", d->device_protocol);
}

static void record_vm_part(struct rec *x, const struct gc_resource *r, const struct gc_vm *v,
			   const struct gc_vcenter_vm *vm)
{
	const struct gc_vcenter_device *d;

	switch (r->kind) {
	case GC_RES_VM: {
		const char *host = gc_vcdrv_host_name(x->inv, x->c, vm->host_moref);
		const char *tmpl = gc_resource_prop(r, "template");

		gc_observed_add(x->obs, r->id);
		set_if(x->obs, r->id, "host", host);
		/* vCenter keeps no record of the template a VM came from */
		set_if(x->obs, r->id, "template", tmpl);
		if (vm->num_cpus > 0)
			setu(x->obs, r->id, "cpus", vm->num_cpus);
		if (vm->memory_mb > 0) {
			if (vm->memory_mb % 1024 == 0) {
				setu(x->obs, r->id, "memory_gb", vm->memory_mb / 1024);
			} else {
				char buf[32];

				snprintf(buf, sizeof(buf), "%.2f", vm->memory_mb / 1024.0);
				gc_observed_set(x->obs, r->id, "memory_gb", buf);
			}
		}
		break;
	}
	case GC_RES_VM_HW:
		gc_observed_add(x->obs, r->id);
		set_if(x->obs, r->id, "firmware", vm->firmware);
		gc_observed_set(x->obs, r->id, "memory_reservation",
				vm->reservation_locked_set && vm->reservation_locked ? "full" : "none");
		break;
	case GC_RES_VM_EXTRA_CONFIG:
		gc_observed_add(x->obs, r->id);
		for (size_t i = 0; i < r->nprops; i++)
			set_if(x->obs, r->id, r->props[i].key,
			       gc_vcenter_vm_option(vm, r->props[i].key));
		break;
	case GC_RES_VM_DEVICE_PCI:
		d = gc_vcdrv_device(x->inv, vm, v, r);
		if (d == NULL)
			break;
		claim(x, vm, d);
		record_device(x, r->id, r->kind, d);
		/* a GPU or a NIC: what the spec said sits at that address */
		set_if(x->obs, r->id, "device", gc_resource_prop(r, "device"));
		break;
	case GC_RES_VM_DEVICE_VGPU:
		d = gc_vcdrv_device(x->inv, vm, v, r);
		if (d == NULL)
			break;
		claim(x, vm, d);
		record_device(x, r->id, r->kind, d);
		/* which physical GPU a vGPU runs on is the host's choice at power-on */
		set_if(x->obs, r->id, "host_pci", gc_resource_prop(r, "host_pci"));
		break;
	case GC_RES_VM_NIC_SRIOV:
	case GC_RES_VM_NIC_PVRDMA:
	case GC_RES_VM_NIC_VMXNET3:
		d = gc_vcdrv_device(x->inv, vm, v, r);
		if (d == NULL)
			break;
		claim(x, vm, d);
		record_device(x, r->id, r->kind, d);
		break;
	case GC_RES_VM_POWER: /* recorded with the VM (gc_observed_set_vm) */
	case GC_RES_ESXI_NTP:
	case GC_RES_ESXI_PCI_PASSTHRU:
	case GC_RES_ESXI_MODULE_PARAM:
	case GC_RES_ESXI_VIB:
	case GC_RES_ESXI_GRAPHICS:
	case GC_RES_ESXI_GPU_ECC:
	case GC_RES_ESXI_ADVANCED:
	case GC_RES_ESXI_FIREWALL:
	case GC_RES_ESXI_NIC_FIRMWARE:
	case GC_RES_DVS:
	case GC_RES_DVS_PORTGROUP:
	case GC_RES_SWITCH_ROCE:
	case GC_RES_SWITCH_POOL:
	case GC_RES_SWITCH_QOS_TRUST:
	case GC_RES_SWITCH_ECN:
	case GC_RES_SWITCH_ETS:
	case GC_RES_SWITCH_PFC:
	case GC_RES_SWITCH_LLDP:
	case GC_RES_GUEST_DRIVER:
	case GC_RES_GUEST_RDMA_STACK:
	case GC_RES_GUEST_RDMA_IF:
	case GC_RES_GUEST_LICENSE:
	case GC_RES_GUEST_PEERMEM:
	case GC_RES_GUEST_ROCE_QOS:
	case GC_RES_GUEST_CONTAINER_TOOLKIT:
	case GC_RES_GUEST_NTP:
	case GC_RES_KVM_IOMMU:
	case GC_RES_KVM_VFIO:
	case GC_RES_KVM_SRIOV:
	case GC_RES_KVM_VGPU:
	case GC_RES_LIBVIRT_NETWORK:
	case GC_RES_VM_NIC_VIRTIO:
	case GC_RES_VM_SEED:
	case GC_RES_VCENTER_SETTING:
	case GC_RES_DVS_VMKNIC:
	case GC_RES__COUNT:
		break;
	}
}

static enum gc_power power_of(const char *s)
{
	if (s == NULL)
		return GC_POWER_UNKNOWN;
	if (strcmp(s, "poweredOn") == 0)
		return GC_POWER_ON;
	if (strcmp(s, "poweredOff") == 0)
		return GC_POWER_OFF;
	if (strcmp(s, "suspended") == 0)
		return GC_POWER_SUSPENDED;
	return GC_POWER_UNKNOWN;
}

/*
 * A clone brings its template's installed OS, which boots only with the
 * firmware it was installed for: a BIOS template's clone made EFI (as
 * passthrough and vGPU need) does not boot (issue 14, item 5).  So a VM
 * whose firmware must differ from its template's (the template read as
 * vCenter holds it: a template is a VM with config.template) is a problem
 * when the change is still to come: the VM is absent, or still has
 * another firmware.  A VM without a template, or whose spec leaves the
 * firmware to the template (vm.firmware NULL), is never one.  One problem
 * per template and firmware, naming its first VMs: a spec of many workers
 * on one template says it once.
 */
#define FW_GROUPS 16
#define FW_NAMED 3

struct fw_group {
	const char *tmpl, *tmpl_fw, *want;
	const char *vms[FW_NAMED];
	size_t n;
};

/* The template whose firmware VM v's must differ from, or NULL. */
static const struct gc_vcenter_vm *bad_template(struct rec *x, const struct gc_vm *v)
{
	const struct gc_vcenter_vm *t, *vm;

	if (v->template_name == NULL || v->firmware == NULL ||
	    (t = gc_vcenter_inventory_vm(x->inv, v->template_name)) == NULL || t->firmware == NULL ||
	    strcmp(t->firmware, v->firmware) == 0)
		return NULL;
	vm = gc_vcdrv_vm(x->inv, v->name);
	if (vm != NULL && vm->firmware != NULL && strcmp(vm->firmware, v->firmware) == 0)
		return NULL;
	return t;
}

static void check_template_firmware(struct rec *x, const struct gc_resource *const *res,
				    size_t nres)
{
	struct fw_group g[FW_GROUPS];
	size_t ng = 0, k;

	for (size_t i = 0; i < nres; i++) {
		const struct gc_vm *v = res[i]->kind == GC_RES_VM ? gc_cluster_vm(x->c, res[i]->vm) : NULL;
		const struct gc_vcenter_vm *t = v ? bad_template(x, v) : NULL;

		if (t == NULL)
			continue;
		for (k = 0; k < ng; k++)
			if (strcmp(g[k].tmpl, v->template_name) == 0 && strcmp(g[k].want, v->firmware) == 0)
				break;
		if (k == ng && ng == FW_GROUPS)
			continue; /* named in none: the first groups say enough */
		if (k == ng)
			g[ng++] = (struct fw_group){v->template_name, t->firmware, v->firmware, {NULL}, 0};
		if (g[k].n < FW_NAMED)
			g[k].vms[g[k].n] = v->name;
		g[k].n++;
	}
	for (k = 0; k < ng; k++) {
		if (g[k].n == 1) {
			gc_buf_printf(x->problems, "VM '%s' needs %s firmware, but its template '%s' has %s",
				      g[k].vms[0], g[k].want, g[k].tmpl, g[k].tmpl_fw);
		} else {
			gc_buf_puts(x->problems, "VMs ");
			for (size_t i = 0; i < g[k].n && i < FW_NAMED; i++)
				gc_buf_printf(x->problems, "%s'%s'",
					      i == 0 ? "" : (i + 1 == g[k].n ? " and " : ", "), g[k].vms[i]);
			if (g[k].n > FW_NAMED)
				gc_buf_printf(x->problems, " and %zu more", g[k].n - FW_NAMED);
			gc_buf_printf(x->problems, " need %s firmware, but their template '%s' has %s",
				      g[k].want, g[k].tmpl, g[k].tmpl_fw);
		}
		gc_buf_printf(x->problems,
			      ": the OS a clone brings from it would not boot after the change; "
			      "clone from a template installed with %s firmware\n",
			      g[k].want);
	}
}

static void record_vm(struct rec *x, const struct gc_resource *r)
{
	const struct gc_vm *v = gc_cluster_vm(x->c, r->vm);
	const struct gc_vcenter_vm *vm = gc_vcdrv_vm(x->inv, r->vm);

	if (v == NULL)
		return;
	if (r->kind == GC_RES_VM) {
		const struct gc_vcenter_host *vh = gc_vcdrv_host(x->inv, v->host);

		if (vh == NULL)
			gc_buf_printf(x->problems, "VM '%s': host '%s' is not in %s\n", v->name,
				      v->host_name, "vCenter");
		if (vm == NULL && gc_vcenter_inventory_vm(x->inv, v->template_name) == NULL)
			gc_buf_printf(x->problems, "VM '%s': no template or VM named '%s' to clone\n",
				      v->name, v->template_name);
		if (vm != NULL)
			gc_observed_set_vm(x->obs, v->name, power_of(vm->power_state),
					   gc_vcdrv_host_name(x->inv, x->c, vm->host_moref),
					   v->live_migratable);
	}
	if (vm != NULL && r->kind != GC_RES_VM_POWER)
		record_vm_part(x, r, v, vm);
}

static void record_dvs(struct rec *x, const struct gc_resource *r)
{
	const char *name = r->id + strlen("dvs/");
	const struct gc_vcenter_dvs *d = gc_vcenter_inventory_dvs(x->inv, name);

	if (d == NULL)
		return;
	gc_observed_add(x->obs, r->id);
	if (d->max_mtu > 0)
		setu(x->obs, r->id, "mtu", d->max_mtu);
	for (size_t i = 0; i < d->nmembers; i++) {
		const char *host = gc_vcdrv_host_name(x->inv, x->c, d->members[i].host);
		struct gc_buf pnics = GC_BUF_INIT;
		char key[160];

		if (host == NULL || d->members[i].npnics == 0)
			continue;
		/* every pNIC of the host's proxy switch, as the graph's set */
		gc_buf_put_set(&pnics, d->members[i].pnics, d->members[i].npnics);
		snprintf(key, sizeof(key), "uplink.%s", host);
		gc_observed_set(x->obs, r->id, key, gc_buf_str(&pnics));
		gc_buf_free(&pnics);
	}
}

static void record_portgroup(struct rec *x, const struct gc_resource *r)
{
	const char *dvs_name = gc_resource_prop(r, "dvswitch");
	const char *pg = gc_vcdrv_portgroup_name(r);
	const struct gc_vcenter_dvs *d = dvs_name ? gc_vcenter_inventory_dvs(x->inv, dvs_name) : NULL;

	for (size_t i = 0; d != NULL && i < x->inv->nnetworks; i++) {
		const struct gc_vcenter_network *n = &x->inv->networks[i];

		if (n->dvs == NULL || strcmp(n->dvs, d->moref) != 0 || strcmp(n->name, pg) != 0)
			continue;
		gc_observed_add(x->obs, r->id);
		gc_observed_set(x->obs, r->id, "dvswitch", d->name);
		if (n->vlan >= 0)
			setu(x->obs, r->id, "vlan", n->vlan);
		return;
	}
}

/* ---------------------------------------------------------------- what the spec stops naming */

enum gc_res_kind gc_vcdrv_owned_kind(const struct gc_vcenter_device *d)
{
	if (type_is(d, "VirtualPCIPassthrough")) {
		if (backing_is(d, "VirtualPCIPassthroughDeviceBackingInfo") ||
		    backing_is(d, "VirtualPCIPassthroughDynamicBackingInfo"))
			return GC_RES_VM_DEVICE_PCI;
		if (backing_is(d, "VirtualPCIPassthroughVmiopBackingInfo"))
			return GC_RES_VM_DEVICE_VGPU;
		return GC_RES__COUNT; /* a backing we do not know: not ours */
	}
	if (type_is(d, "VirtualSriovEthernetCard"))
		return GC_RES_VM_NIC_SRIOV;
	if (type_is(d, "VirtualVmxnet3Vrdma"))
		return GC_RES_VM_NIC_PVRDMA;
	/* vmxnet3 and every other adapter: a template's management NIC is
	 * the guest's way in, so what the spec does not name stays */
	return GC_RES__COUNT;
}

/* A static passthrough device with a well-formed address that no earlier
 * device of the VM has: the one a spec item with that address claims. */
static bool first_at_address(const struct gc_vcenter_vm *vm, size_t i)
{
	const struct gc_vcenter_device *d = &vm->devices[i];

	if (!backing_is(d, "VirtualPCIPassthroughDeviceBackingInfo") || d->pci_id == NULL ||
	    !gc_valid_pci(d->pci_id))
		return false;
	for (size_t j = 0; j < i; j++)
		if (gc_vcdrv_is_nic(&vm->devices[j], GC_RES_VM_DEVICE_PCI) &&
		    vm->devices[j].pci_id != NULL && strcmp(vm->devices[j].pci_id, d->pci_id) == 0)
			return false;
	return true;
}

char *gc_vcdrv_extra_id(const char *name, const struct gc_vcenter_vm *vm, size_t i)
{
	const struct gc_vcenter_device *d = &vm->devices[i];
	enum gc_res_kind kind = gc_vcdrv_owned_kind(d);
	const char *seg = kind == GC_RES_VM_DEVICE_PCI    ? "device.pci"
			  : kind == GC_RES_VM_DEVICE_VGPU ? "device.vgpu"
			  : kind == GC_RES_VM_NIC_SRIOV   ? "nic.sriov"
			  : kind == GC_RES_VM_NIC_PVRDMA  ? "nic.pvrdma"
							  : NULL;

	if (seg == NULL)
		return NULL;
	/* the address names a static GPU as the spec would; anything else (a
	 * second device at one address, an address vCenter sent in another
	 * shape) by its device key, which vCenter never gives to another
	 * device of the VM */
	if (first_at_address(vm, i))
		return gc_xasprintf("vm/%s/%s/%s", name, seg, d->pci_id);
	return gc_xasprintf("vm/%s/%s/key-%d", name, seg, d->key);
}

const struct gc_vcenter_device *gc_vcdrv_extra_device(const struct gc_vcenter_vm *vm,
						      const char *name, const char *id)
{
	for (size_t i = 0; vm != NULL && i < vm->ndevices; i++) {
		char *mine = gc_vcdrv_extra_id(name, vm, i);
		bool same = mine != NULL && strcmp(mine, id) == 0;

		free(mine);
		if (same)
			return &vm->devices[i];
	}
	return NULL;
}

/*
 * Record, under ids the graph does not have, the devices of VM v that are
 * of a kind the spec owns (passthrough and vGPU devices, SR-IOV and PVRDMA
 * adapters) but that no spec item claims: the planner deletes them.
 */
static void record_extras(struct rec *x, const struct gc_vm *v, const struct gc_vcenter_vm *vm)
{
	const bool *claimed = &x->claimed[x->off[vm - x->inv->vms]];

	for (size_t i = 0; i < vm->ndevices; i++) {
		const struct gc_vcenter_device *d = &vm->devices[i];
		char *id;

		if (claimed[i] || (id = gc_vcdrv_extra_id(v->name, vm, i)) == NULL)
			continue;
		record_device(x, id, gc_vcdrv_owned_kind(d), d);
		free(id);
	}
}

/*
 * A vCenter advanced setting, its value spelled as the graph spells it: a
 * boolean in lower case (vCenter's settings list shows "False").  A setting
 * vCenter does not have is a problem, naming what brings it.
 */
static void record_setting(struct rec *x, const struct gc_resource *r)
{
	const char *key = gc_resource_prop(r, "key");
	const struct gc_vcenter_setting *s = key ? gc_vcenter_inventory_setting(x->inv, key) : NULL;

	if (key == NULL)
		return;
	if (s == NULL) {
		gc_buf_printf(x->problems, "vCenter has no advanced setting '%s'%s\n", key,
			      strcmp(key, GC_VGPU_HOTMIGRATE_KEY) == 0
				      ? ": vGPU vMotion needs vCenter 6.7 Update 1 or later"
				      : "");
		return;
	}
	gc_observed_set(x->obs, r->id, "key", key);
	if (strcmp(s->type, "boolean") == 0 &&
	    (strcasecmp(s->value, "true") == 0 || strcasecmp(s->value, "false") == 0))
		gc_observed_set(x->obs, r->id, "value",
				strcasecmp(s->value, "true") == 0 ? "true" : "false");
	else
		gc_observed_set(x->obs, r->id, "value", s->value);
}

/* ---------------------------------------------------------------- an ESXi 6.x host's configuration */

/* The vCenter host of the spec host a host-configuration resource names. */
static const struct gc_vcenter_host *config_host(const struct gc_vcenter_inventory *inv,
						 const struct gc_cluster *c,
						 const struct gc_resource *r)
{
	const struct gc_host *h = r->host ? gc_cluster_host(c, r->host) : NULL;

	return h != NULL ? gc_vcdrv_host(inv, h) : NULL;
}

/* The PCI address of a passthrough resource: the last segment of its id. */
static const char *passthru_pci(const struct gc_resource *r)
{
	const char *slash = strrchr(r->id, '/');

	return slash ? slash + 1 : r->id;
}

static bool ntp_enabled(const struct gc_vcenter_host *vh)
{
	return vh->ntpd_running && vh->ntpd_policy != NULL && strcmp(vh->ntpd_policy, "on") == 0;
}

/* Passthrough from config.pciPassthruInfo, NTP from config.dateTimeInfo and
 * ntpd's entry of config.service (hostchanges.c says what each means). */
void gc_vcdrv_record_hostconfig(struct gc_observed *obs, const struct gc_vcenter_inventory *inv,
				const struct gc_cluster *c, const struct gc_resource *r,
				struct gc_buf *problems)
{
	const struct gc_vcenter_host *vh = config_host(inv, c, r);
	const struct gc_vcenter_passthru *p;

	if (vh == NULL) {
		gc_buf_printf(problems, "vCenter has no host '%s'\n", r->host ? r->host : "?");
		return;
	}
	if (r->kind == GC_RES_ESXI_PCI_PASSTHRU) {
		p = gc_vcenter_host_passthru(vh, passthru_pci(r));
		if (p == NULL) {
			gc_buf_printf(problems, "host '%s': vCenter lists no passthrough device %s\n",
				      r->host, passthru_pci(r));
			return;
		}
		gc_observed_add(obs, r->id);
		gc_observed_set(obs, r->id, "enabled", p->enabled ? "true" : "false");
		return;
	}
	gc_observed_add(obs, r->id);
	gc_observed_set(obs, r->id, "servers", vh->ntp_servers ? vh->ntp_servers : "");
	gc_observed_set(obs, r->id, "enabled", ntp_enabled(vh) ? "true" : "false");
}

void gc_vcdrv_record(struct gc_observed *obs, const struct gc_vcenter_inventory *inv,
		     const struct gc_cluster *c, const struct gc_resource *const *res, size_t nres,
		     struct gc_buf *problems)
{
	struct rec x = {obs, inv, c, problems, NULL, NULL};

	/* every device of every VM, claimed or not, in one flat array */
	x.off = gc_xcalloc(inv->nvms + 1, sizeof(*x.off));
	for (size_t i = 0; i < inv->nvms; i++)
		x.off[i + 1] = x.off[i] + inv->vms[i].ndevices;
	x.claimed = gc_xcalloc(x.off[inv->nvms] + 1, sizeof(*x.claimed));

	if (c != NULL && c->vcenter != NULL && c->vcenter->datacenter != NULL &&
	    gc_vcenter_inventory_datacenter(inv, c->vcenter->datacenter) == NULL)
		gc_buf_printf(problems, "vCenter has no datacenter '%s'\n", c->vcenter->datacenter);
	for (size_t i = 0; i < nres; i++) {
		const struct gc_resource *r = res[i];

		if (r->kind == GC_RES_VCENTER_SETTING)
			record_setting(&x, r);
		else if (r->kind == GC_RES_DVS)
			record_dvs(&x, r);
		else if (r->kind == GC_RES_DVS_PORTGROUP)
			record_portgroup(&x, r);
		else if (r->kind == GC_RES_ESXI_PCI_PASSTHRU || r->kind == GC_RES_ESXI_NTP)
			gc_vcdrv_record_hostconfig(obs, inv, c, r, problems);
		else if (r->kind == GC_RES_DVS_VMKNIC)
			gc_vcdrv_record_vmknic(obs, inv, c, r);
		else if (r->vm != NULL)
			record_vm(&x, r);
	}
	check_template_firmware(&x, res, nres);
	for (size_t i = 0; i < nres; i++) {
		const struct gc_resource *r = res[i];
		const struct gc_vm *v;
		const struct gc_vcenter_vm *vm;

		if (r->kind == GC_RES_VM && (v = gc_cluster_vm(c, r->vm)) != NULL &&
		    (vm = gc_vcdrv_vm(inv, r->vm)) != NULL)
			record_extras(&x, v, vm);
	}
	free(x.claimed);
	free(x.off);
}
