/*
 * schema_vm.c - the spec language of `vms:`: a VM's sizing, its GPUs
 * (static, dynamic DirectPath, vGPU), its NICs by type and where it lives
 * (ESXi through vCenter, or a KVM host's libvirt); its `guest:` map is
 * schema_guest.c's.  Like schema.c, handlers check only what one object can
 * check alone; cross-object checks live in check.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema_int.h"

/* ---------------------------------------------------------------- VMs */

static const struct spec_field vm_gpu_fields[] = {
	FSTR(struct gc_vm_gpu, "host_pci", host_pci, P_PCI, false),
	FSTR(struct gc_vm_gpu, "pci_id", pci_id, P_PCI_ID, false),
	FSTR(struct gc_vm_gpu, "vgpu", profile, P_PROFILE, false),
	FEND(struct gc_vm_gpu),
};

static void vm_gpu_item(struct spec_ctx *x, struct spec_node *n, void *elem)
{
	struct gc_vm_gpu *g = elem;
	bool pci, id, prof;

	spec_parse_map(x, n, vm_gpu_fields, g, "gpu");
	if (n->type != SPEC_MAP)
		return;
	pci = spec_field_given(x, &g->host_pci);
	id = spec_field_given(x, &g->pci_id);
	prof = spec_field_given(x, &g->profile);
	if (prof) {
		g->kind = GC_VMGPU_VGPU;
		spec_not_applicable(x, &g->pci_id, id, "pci_id", "a vGPU (pin one GPU with host_pci)");
	} else if (pci) {
		g->kind = GC_VMGPU_STATIC;
		if (id)
			spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &g->pci_id, g->mark),
				  "host_pci picks one GPU (static passthrough); pci_id lets ESXi pick "
				  "one (dynamic DirectPath)",
				  "give either 'host_pci' or 'pci_id', not both");
	} else if (id) {
		g->kind = GC_VMGPU_DYNAMIC;
	} else {
		spec_diag(x, GC_SEV_ERROR, g->mark,
			  "host_pci: for static passthrough, pci_id: for dynamic DirectPath, vgpu: "
			  "for a vGPU profile",
			  "gpu entry needs one of 'host_pci', 'pci_id' or 'vgpu'");
	}
}

#define NIC_KIND_UNSET ((enum gc_vm_nic_kind)0x7f)

static const char *const nic_types[] = {"vmxnet3", "sriov", "pvrdma", "passthrough", "virtio",
				       NULL};

static void vm_nic_type(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_vm_nic *nic = obj;
	const char *s = spec_string(x, v, "type", P_ANY, nic_types);

	if (s == NULL)
		return;
	if (strcmp(s, "vmxnet3") == 0)
		nic->kind = GC_VMNIC_VMXNET3;
	else if (strcmp(s, "sriov") == 0)
		nic->kind = GC_VMNIC_SRIOV;
	else if (strcmp(s, "pvrdma") == 0)
		nic->kind = GC_VMNIC_PVRDMA;
	else if (strcmp(s, "virtio") == 0)
		nic->kind = GC_VMNIC_VIRTIO;
	else
		nic->kind = GC_VMNIC_PASSTHROUGH;
}

static const struct spec_field vm_nic_fields[] = {
	FSUBO("type", vm_nic_type, struct gc_vm_nic, kind, true),
	FSTR(struct gc_vm_nic, "pf", pf, P_PCI, false),
	FSTR(struct gc_vm_nic, "host_pci", host_pci, P_PCI, false),
	FSTR(struct gc_vm_nic, "port_group", port_group, P_VCNAME, false),
	FSTR(struct gc_vm_nic, "network", network, P_VCNAME, false),
	FENUM(struct gc_vm_nic, "protocol", protocol,
	      ((const char *const[]){"rocev1", "rocev2", NULL}), false),
	FSTR(struct gc_vm_nic, "address", address, P_CIDR, false),
	FSTR(struct gc_vm_nic, "gateway", gateway, P_HOST, false),
	FEND(struct gc_vm_nic),
};

static void vm_nic_item(struct spec_ctx *x, struct spec_node *n, void *elem)
{
	struct gc_vm_nic *nic = elem;
	bool pf, hpci, pg, net, proto;
	const char *what;

	nic->kind = NIC_KIND_UNSET;
	spec_parse_map(x, n, vm_nic_fields, nic, "nic");
	if (nic->kind == NIC_KIND_UNSET) {
		/* missing or invalid type (already reported): a plain NIC, no more checks */
		nic->kind = GC_VMNIC_VMXNET3;
		return;
	}
	if (nic->kind != GC_VMNIC_VIRTIO) {
		spec_not_applicable(x, &nic->address, spec_field_given(x, &nic->address), "address",
			       "this NIC type (only a KVM VM's virtio NIC is given one by its seed)");
		spec_not_applicable(x, &nic->gateway, spec_field_given(x, &nic->gateway), "gateway",
			       "this NIC type (only a KVM VM's virtio NIC is given one by its seed)");
	} else if (spec_field_given(x, &nic->gateway) && !spec_field_given(x, &nic->address)) {
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &nic->gateway, nic->mark),
			  "add address: A.B.C.D/N beside it", "'gateway' needs 'address'");
	}
	pf = spec_field_given(x, &nic->pf);
	hpci = spec_field_given(x, &nic->host_pci);
	pg = spec_field_given(x, &nic->port_group);
	net = spec_field_given(x, &nic->network);
	proto = spec_field_given(x, &nic->protocol);
	switch (nic->kind) {
	case GC_VMNIC_VMXNET3:
		what = "a vmxnet3 NIC";
		if (!pg && !net)
			spec_diag(x, GC_SEV_ERROR, nic->mark,
				  "add network: NAME (standard) or port_group: NAME (distributed)",
				  "a vmxnet3 NIC needs 'network' or 'port_group'");
		spec_not_applicable(x, &nic->pf, pf, "pf", what);
		spec_not_applicable(x, &nic->host_pci, hpci, "host_pci", what);
		spec_not_applicable(x, &nic->protocol, proto, "protocol", what);
		break;
	case GC_VMNIC_SRIOV:
		what = "an sriov NIC";
		if (!pf)
			spec_diag(x, GC_SEV_ERROR, nic->mark,
				  "add pf: the PCI address of the host NIC in sriov mode",
				  "an sriov NIC needs 'pf'");
		if (!pg && !net)
			spec_diag(x, GC_SEV_ERROR, nic->mark,
				  "add network: NAME (standard) or port_group: NAME (distributed)",
				  "an sriov NIC needs 'network' or 'port_group'");
		spec_not_applicable(x, &nic->host_pci, hpci, "host_pci", what);
		spec_not_applicable(x, &nic->protocol, proto, "protocol", what);
		break;
	case GC_VMNIC_PVRDMA:
		what = "a pvrdma NIC";
		if (!pg)
			spec_diag(x, GC_SEV_ERROR, nic->mark,
				  "PVRDMA attaches to a distributed port group: add port_group: NAME",
				  "a pvrdma NIC needs 'port_group'");
		spec_not_applicable(x, &nic->network, net, "network", what);
		spec_not_applicable(x, &nic->pf, pf, "pf", what);
		spec_not_applicable(x, &nic->host_pci, hpci, "host_pci", what);
		if (nic->protocol == NULL)
			nic->protocol = "rocev2";
		break;
	case GC_VMNIC_VIRTIO:
		what = "a virtio NIC";
		if (!net)
			spec_diag(x, GC_SEV_ERROR, nic->mark, "add network: NAME (a libvirt network)",
				  "a virtio NIC needs 'network'");
		spec_not_applicable(x, &nic->port_group, pg, "port_group", what);
		spec_not_applicable(x, &nic->pf, pf, "pf", what);
		spec_not_applicable(x, &nic->host_pci, hpci, "host_pci", what);
		spec_not_applicable(x, &nic->protocol, proto, "protocol", what);
		break;
	case GC_VMNIC_PASSTHROUGH:
		what = "a passthrough NIC";
		if (!hpci)
			spec_diag(x, GC_SEV_ERROR, nic->mark,
				  "add host_pci: the PCI address of the host NIC",
				  "a passthrough NIC needs 'host_pci'");
		spec_not_applicable(x, &nic->pf, pf, "pf", what);
		spec_not_applicable(x, &nic->port_group, pg, "port_group", what);
		spec_not_applicable(x, &nic->network, net, "network", what);
		spec_not_applicable(x, &nic->protocol, proto, "protocol", what);
		break;
	}
	if (pg && net)
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &nic->network, nic->mark),
			  "network names a standard port group, port_group a distributed one: keep "
			  "one",
			  "give either 'network' or 'port_group', not both");
}

static void vm_gpus(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_vm *vm = obj;

	vm->gpus = spec_parse_list_max(x, v, "gpus", sizeof(*vm->gpus), &vm->ngpus, vm_gpu_item,
				  SPEC_VM_GPUS_MAX);
}

static void vm_nics(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_vm *vm = obj;

	vm->nics = spec_parse_list_max(x, v, "nics", sizeof(*vm->nics), &vm->nnics, vm_nic_item,
				  SPEC_VM_NICS_MAX);
}

static const struct spec_field vm_fields[] = {
	FSTR(struct gc_vm, "name", name, P_NAME, true),
	FSTR(struct gc_vm, "host", host_name, P_NAME, true),
	FSTR(struct gc_vm, "template", template_name, P_VCNAME, false),
	FSTR(struct gc_vm, "image", image, P_PATH, false),
	FSTR(struct gc_vm, "pool", pool, P_NAME, false),
	FUINT(struct gc_vm, "disk_gb", disk_gb, 1, 65536, false),
	FUINT(struct gc_vm, "cpus", cpus, 1, 768, false),
	FUINT(struct gc_vm, "memory_gb", memory_gb, 1, 24576, false),
	FENUM(struct gc_vm, "firmware", firmware, ((const char *const[]){"efi", "bios", NULL}),
	      false),
	FTRI(struct gc_vm, "reserve_all_memory", reserve_all_memory),
	FUINT(struct gc_vm, "mmio_size_gb", mmio_size_gb, 1, 16384, false),
	FTRI(struct gc_vm, "allow_p2p", allow_p2p),
	FBOOL(struct gc_vm, "power_on", power_on),
	FSTR(struct gc_vm, "role", role, P_NAME, false),
	FSUB("gpus", vm_gpus, false),
	FSUB("nics", vm_nics, false),
	FSUB("guest", spec_vm_guest, false),
	FEND(struct gc_vm),
};

static void vm_item(struct spec_ctx *x, struct spec_node *n, void *elem)
{
	struct gc_vm *vm = elem;

	vm->power_on = true;
	spec_parse_map(x, n, vm_fields, vm, "vm");
	if (vm->mmio_size_gb != 0 && (vm->mmio_size_gb & (vm->mmio_size_gb - 1)) != 0)
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &vm->mmio_size_gb, vm->mark),
			  "use 32, 64, 128, 256, ...",
			  "mmio_size_gb must be a power of two, got %u", vm->mmio_size_gb);
}

void spec_root_vms(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_cluster *c = obj;

	c->vms = spec_parse_list(x, v, "vms", sizeof(*c->vms), &c->nvms, vm_item);
}

