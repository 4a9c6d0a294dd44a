/*
 * reconfig.c - ReconfigVM_Task: sizing, devices, extraConfig, firmware and
 * the memory reservation lock in one VirtualMachineConfigSpec.
 *
 * A change is written with only the elements it sets, in XSD order (govmomi
 * vim25/types/types.go, REAL-FORMATS D.2): numCPUs, memoryMB, deviceChange
 * ..., extraConfig ..., firmware, memoryReservationLockedToMax.  Each
 * deviceChange is a VirtualDeviceConfigSpec (operation, device) whose device
 * carries its xsi:type and, for an add, the VirtualDevice elements in order
 * (key, backing, connectable) and then those of its subclass: a NIC's
 * VirtualEthernetCard addressType, then VirtualSriovEthernetCard's
 * allowGuestOSMtuChange and sriovBacking or VirtualVmxnet3Vrdma's
 * deviceProtocol.  A remove names only the device's key and xsi:type:
 * vCenter finds the device by key, and vcsim also dispatches on the type
 * (an ethernet card updates the VM's network list).  OptionValue.value
 * carries xsi:type="xsd:string", as govmomi and pyvmomi send it (see soap.c
 * on the prefix).
 *
 * Everything is validated before anything is sent (gc_vcenter_check_change):
 * a bad value is GC_EINVAL naming the vCenter, the VM and the field.  The
 * task is then waited for (vmops.c); a task error is reported with
 * vCenter's localizedMessage and the fault type.
 */
#include <string.h>

#include "gc/pattern.h"
#include "soap.h"

/* ---------------------------------------------------------------- validation */

static const char *device_type(enum gc_vcenter_devkind k)
{
	switch (k) {
	case GC_VCENTER_PCI_STATIC:
	case GC_VCENTER_PCI_DYNAMIC:
	case GC_VCENTER_VGPU: return "VirtualPCIPassthrough";
	case GC_VCENTER_NIC_VMXNET3: return "VirtualVmxnet3";
	case GC_VCENTER_NIC_SRIOV: return "VirtualSriovEthernetCard";
	case GC_VCENTER_NIC_PVRDMA: return "VirtualVmxnet3Vrdma";
	}
	return NULL;
}

static bool is_nic(enum gc_vcenter_devkind k)
{
	return k == GC_VCENTER_NIC_VMXNET3 || k == GC_VCENTER_NIC_SRIOV ||
	       k == GC_VCENTER_NIC_PVRDMA;
}

/* A PCI device id as a backing carries it: 1-4 hex digits ("20f1"). */
static bool hex_id(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= 4 && strspn(s, "0123456789abcdefABCDEF") == n;
}

/* A free-form text that goes into the body escaped: bounded, no controls. */
static bool text_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

#define BAD(field, fmt, ...)                                                               \
	gc_error_set(err, GC_EINVAL, "%s: ReconfigVM_Task of %s: deviceChange[%zu]: " field \
		     " " fmt, vc->target, vm, i, __VA_ARGS__)

static int check_pci_fields(const struct gc_vcenter_conn *vc, const char *vm, size_t i,
			    const struct gc_vcenter_devspec *d, bool need_ids,
			    struct gc_error *err)
{
	if (d->pci_id == NULL || !gc_valid_pci(d->pci_id))
		return BAD("pci_id", "'%s' is not a PCI address (0000:3b:00.0)",
			   d->pci_id ? d->pci_id : "(none)");
	if (need_ids && (d->device_id == NULL || !hex_id(d->device_id)))
		return BAD("device_id", "'%s' is not 1-4 hex digits",
			   d->device_id ? d->device_id : "(none)");
	if (!need_ids && d->device_id != NULL && !hex_id(d->device_id))
		return BAD("device_id", "'%s' is not 1-4 hex digits", d->device_id);
	if (need_ids && d->vendor_id == 0)
		return BAD("vendor_id", "%s", "is not set");
	if (d->vendor_id < -32768 || d->vendor_id > 32767)
		return BAD("vendor_id", "%d is not a signed 16-bit value (0x10de is 4318)",
			   d->vendor_id);
	if (d->system_id != NULL && !text_ok(d->system_id, 127))
		return BAD("system_id", "'%s' is not a plain text of at most 127 bytes",
			   d->system_id);
	if (d->device_name != NULL && !text_ok(d->device_name, 255))
		return BAD("device_name", "%s", "is not a plain text of at most 255 bytes");
	return 0;
}

static int check_nic(const struct gc_vcenter_conn *vc, const char *vm, size_t i,
		     const struct gc_vcenter_devspec *d, struct gc_error *err)
{
	bool dv = d->dvs_uuid != NULL || d->portgroup_key != NULL;

	if (dv && (d->dvs_uuid == NULL || d->portgroup_key == NULL))
		return BAD("dvs_uuid/portgroup_key", "%s", "must be given together");
	if (dv && d->network != NULL)
		return BAD("network", "'%s' and a DV port group are both given", d->network);
	if (!dv && d->network == NULL)
		return BAD("network", "%s", "is not set (nor a DV port group)");
	if (d->network != NULL && !text_ok(d->network, 255))
		return BAD("network", "%s", "is not a plain text of at most 255 bytes");
	if (d->dvs_uuid != NULL && !text_ok(d->dvs_uuid, 127))
		return BAD("dvs_uuid", "%s", "is not a plain text of at most 127 bytes");
	if (d->portgroup_key != NULL && !text_ok(d->portgroup_key, 127))
		return BAD("portgroup_key", "%s", "is not a plain text of at most 127 bytes");
	if (d->kind == GC_VCENTER_NIC_PVRDMA && d->protocol != NULL &&
	    strcmp(d->protocol, "rocev1") != 0 && strcmp(d->protocol, "rocev2") != 0)
		return BAD("protocol", "'%s' is neither rocev1 nor rocev2", d->protocol);
	if (d->kind == GC_VCENTER_NIC_SRIOV)
		return check_pci_fields(vc, vm, i, d, false, err);
	return 0;
}

static int check_device(const struct gc_vcenter_conn *vc, const char *vm, size_t i,
			const struct gc_vcenter_devspec *d, struct gc_error *err)
{
	if (d->op != GC_VCENTER_DEV_ADD && d->op != GC_VCENTER_DEV_REMOVE)
		return BAD("op", "%d is not add or remove", (int)d->op);
	if (device_type(d->kind) == NULL)
		return BAD("kind", "%d is not a device kind", (int)d->kind);
	if (d->op == GC_VCENTER_DEV_REMOVE)
		return d->key > 0 ? 0 : BAD("key", "%d is not an existing device's key", d->key);
	if (d->key >= 0)
		return BAD("key", "%d is not negative (a new device's key)", d->key);
	switch (d->kind) {
	case GC_VCENTER_PCI_STATIC: return check_pci_fields(vc, vm, i, d, true, err);
	case GC_VCENTER_PCI_DYNAMIC:
		if (d->allowed_vendor_id == 0 || d->allowed_vendor_id < -32768 ||
		    d->allowed_vendor_id > 65535)
			return BAD("allowed_vendor_id", "%d is not a PCI vendor id",
				   d->allowed_vendor_id);
		if (d->allowed_device_id == 0 || d->allowed_device_id < -32768 ||
		    d->allowed_device_id > 65535)
			return BAD("allowed_device_id", "%d is not a PCI device id",
				   d->allowed_device_id);
		return 0;
	case GC_VCENTER_VGPU:
		if (d->vgpu == NULL || !gc_valid_vgpu_profile(d->vgpu))
			return BAD("vgpu", "'%s' is not a vGPU profile (grid_t4-16c)",
				   d->vgpu ? d->vgpu : "(none)");
		return 0;
	case GC_VCENTER_NIC_VMXNET3:
	case GC_VCENTER_NIC_SRIOV:
	case GC_VCENTER_NIC_PVRDMA: return check_nic(vc, vm, i, d, err);
	}
	return 0;
}

#undef BAD

int gc_vcenter_check_change(const struct gc_vcenter_conn *vc, const char *vm,
			    const struct gc_vcenter_vm_change *c, struct gc_error *err)
{
	if (c->firmware != NULL && strcmp(c->firmware, "efi") != 0 &&
	    strcmp(c->firmware, "bios") != 0)
		return gc_error_set(err, GC_EINVAL, "%s: firmware '%s' is neither efi nor bios",
				    vc->target, c->firmware);
	if (c->num_cpus < 0)
		return gc_error_set(err, GC_EINVAL, "%s: ReconfigVM_Task of %s: num_cpus %d is "
				    "negative", vc->target, vm, c->num_cpus);
	if (c->memory_mb < 0)
		return gc_error_set(err, GC_EINVAL, "%s: ReconfigVM_Task of %s: memory_mb %ld is "
				    "negative", vc->target, vm, c->memory_mb);
	if (c->reservation_locked < -1 || c->reservation_locked > 1)
		return gc_error_set(err, GC_EINVAL, "%s: ReconfigVM_Task of %s: "
				    "reservation_locked %d is not -1, 0 or 1", vc->target, vm,
				    c->reservation_locked);
	for (size_t i = 0; i < c->ndevices; i++) {
		int rc = check_device(vc, vm, i, &c->devices[i], err);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---------------------------------------------------------------- the body */

/* VirtualDeviceConnectInfo of a new NIC: connected now and at power on. */
static void nic_connectable(struct gc_vcenter_soap *s)
{
	gc_vcenter_soap_open(s, "connectable", NULL);
	gc_vcenter_soap_elem(s, "startConnected", "true");
	gc_vcenter_soap_elem(s, "allowGuestControl", "true");
	gc_vcenter_soap_elem(s, "connected", "true");
	gc_vcenter_soap_close(s, "connectable");
}

/* VirtualPCIPassthroughDeviceBackingInfo's elements (deviceName, useAutoDetect,
 * id, deviceId, systemId, vendorId), the unset ones left out. */
static void pci_backing_fields(struct gc_vcenter_soap *s, const struct gc_vcenter_devspec *d)
{
	gc_vcenter_soap_elem(s, "deviceName", d->device_name ? d->device_name : "");
	gc_vcenter_soap_elem(s, "useAutoDetect", "false");
	gc_vcenter_soap_elem(s, "id", d->pci_id);
	if (d->device_id != NULL)
		gc_vcenter_soap_elem(s, "deviceId", d->device_id);
	if (d->system_id != NULL)
		gc_vcenter_soap_elem(s, "systemId", d->system_id);
	if (d->vendor_id != 0)
		gc_vcenter_soap_int(s, "vendorId", d->vendor_id);
}

static void pci_backing(struct gc_vcenter_soap *s, const struct gc_vcenter_devspec *d)
{
	switch (d->kind) {
	case GC_VCENTER_PCI_STATIC:
		gc_vcenter_soap_open(s, "backing", "VirtualPCIPassthroughDeviceBackingInfo");
		pci_backing_fields(s, d);
		break;
	case GC_VCENTER_PCI_DYNAMIC:
		gc_vcenter_soap_open(s, "backing", "VirtualPCIPassthroughDynamicBackingInfo");
		gc_vcenter_soap_elem(s, "deviceName", "");
		gc_vcenter_soap_elem(s, "useAutoDetect", "false");
		gc_vcenter_soap_open(s, "allowedDevice", NULL);
		gc_vcenter_soap_int(s, "vendorId", d->allowed_vendor_id);
		gc_vcenter_soap_int(s, "deviceId", d->allowed_device_id);
		gc_vcenter_soap_close(s, "allowedDevice");
		break;
	case GC_VCENTER_VGPU:
		gc_vcenter_soap_open(s, "backing", "VirtualPCIPassthroughVmiopBackingInfo");
		gc_vcenter_soap_elem(s, "vgpu", d->vgpu);
		break;
	case GC_VCENTER_NIC_VMXNET3:
	case GC_VCENTER_NIC_SRIOV:
	case GC_VCENTER_NIC_PVRDMA: return;
	}
	gc_vcenter_soap_close(s, "backing");
}

static void nic_backing(struct gc_vcenter_soap *s, const struct gc_vcenter_devspec *d)
{
	if (d->network != NULL) {
		gc_vcenter_soap_open(s, "backing", "VirtualEthernetCardNetworkBackingInfo");
		gc_vcenter_soap_elem(s, "deviceName", d->network);
		gc_vcenter_soap_elem(s, "useAutoDetect", "false");
		gc_vcenter_soap_moref_opt(s, "network", "Network", d->network_moref);
	} else {
		gc_vcenter_soap_open(s, "backing",
				     "VirtualEthernetCardDistributedVirtualPortBackingInfo");
		gc_vcenter_soap_open(s, "port", NULL);
		gc_vcenter_soap_elem(s, "switchUuid", d->dvs_uuid);
		gc_vcenter_soap_elem(s, "portgroupKey", d->portgroup_key);
		gc_vcenter_soap_close(s, "port");
	}
	gc_vcenter_soap_close(s, "backing");
}

/* The NIC's elements after VirtualDevice's: VirtualEthernetCard, then its subclass. */
static void nic_tail(struct gc_vcenter_soap *s, const struct gc_vcenter_devspec *d)
{
	gc_vcenter_soap_elem(s, "addressType", "generated");
	if (d->kind == GC_VCENTER_NIC_SRIOV) {
		gc_vcenter_soap_elem(s, "allowGuestOSMtuChange", "true");
		gc_vcenter_soap_open(s, "sriovBacking", NULL);
		gc_vcenter_soap_open(s, "physicalFunctionBacking", NULL);
		pci_backing_fields(s, d);
		gc_vcenter_soap_close(s, "physicalFunctionBacking");
		gc_vcenter_soap_close(s, "sriovBacking");
	} else if (d->kind == GC_VCENTER_NIC_PVRDMA && d->protocol != NULL) {
		gc_vcenter_soap_elem(s, "deviceProtocol", d->protocol);
	}
}

static void write_device(struct gc_vcenter_soap *s, const struct gc_vcenter_devspec *d)
{
	gc_vcenter_soap_open(s, "deviceChange", NULL);
	gc_vcenter_soap_elem(s, "operation", d->op == GC_VCENTER_DEV_ADD ? "add" : "remove");
	gc_vcenter_soap_open(s, "device", device_type(d->kind));
	gc_vcenter_soap_int(s, "key", d->key);
	if (d->op == GC_VCENTER_DEV_ADD) {
		if (is_nic(d->kind)) {
			nic_backing(s, d);
			nic_connectable(s);
			nic_tail(s, d);
		} else {
			pci_backing(s, d);
		}
	}
	gc_vcenter_soap_close(s, "device");
	gc_vcenter_soap_close(s, "deviceChange");
}

static void write_change(struct gc_vcenter_soap *s, const struct gc_vcenter_vm_change *c)
{
	gc_vcenter_soap_open(s, "spec", NULL);
	if (c->num_cpus > 0)
		gc_vcenter_soap_int(s, "numCPUs", c->num_cpus);
	if (c->memory_mb > 0)
		gc_vcenter_soap_int(s, "memoryMB", c->memory_mb);
	for (size_t i = 0; i < c->ndevices; i++)
		write_device(s, &c->devices[i]);
	for (size_t i = 0; i < c->nextra_config; i++) {
		gc_vcenter_soap_open(s, "extraConfig", NULL);
		gc_vcenter_soap_elem(s, "key", c->extra_config[i].key);
		gc_vcenter_soap_open(s, "value", "xsd:string");
		gc_vcenter_soap_text(s, c->extra_config[i].value);
		gc_vcenter_soap_close(s, "value");
		gc_vcenter_soap_close(s, "extraConfig");
	}
	if (c->firmware != NULL)
		gc_vcenter_soap_elem(s, "firmware", c->firmware);
	if (c->reservation_locked >= 0)
		gc_vcenter_soap_elem(s, "memoryReservationLockedToMax",
				     c->reservation_locked ? "true" : "false");
	gc_vcenter_soap_close(s, "spec");
}

void gc_vcenter_reconfig_body(struct gc_vcenter_soap *s, const char *vm_moref,
			      const struct gc_vcenter_vm_change *change)
{
	gc_vcenter_soap_begin(s, "ReconfigVM_Task", "VirtualMachine", vm_moref);
	write_change(s, change);
}

int gc_vcenter_reconfigure(struct gc_vcenter_conn *vc, const char *vm_moref,
			   const struct gc_vcenter_vm_change *change, unsigned timeout_ms,
			   struct gc_error *err)
{
	struct gc_vcenter_soap s;
	int rc;

	rc = gc_vcenter_check_change(vc, vm_moref, change, err);
	if (rc < 0)
		return rc;
	gc_vcenter_reconfig_body(&s, vm_moref, change);
	return gc_vcenter_run_task(vc, &s, vm_moref, timeout_ms, NULL, 0, err);
}
