/*
 * test_reconfig.c - ReconfigVM_Task and the task wait: the exact body we
 * send (element order of REAL-FORMATS D and govmomi's types.go: sizing,
 * the device kinds, extraConfig, firmware, the lock), the values refused
 * before sending, then the change made on a real vcsim (its own lab dir,
 * port 8996) and read back by an observation.
 *
 * vcsim 0.24.2 runs tasks to completion before it answers, so the wait sees
 * the final state on its first poll; a task that stays running (the
 * timeout path) cannot be made there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../src/drivers/vcenter/soap.h"
#include "fixture.h"
#include "gc/vcenter.h"

#define PORT_VCSIM 8996

static struct vcsim sim;

static int group_setup(void **state)
{
	return vcsim_setup(&sim, "test_reconfig", PORT_VCSIM, "");
}

static int group_teardown(void **state)
{
	vcsim_stop(&sim);
	return 0;
}

static const struct gc_vcenter_option mmio[] = {
	{"pciPassthru.use64bitMMIO", "TRUE"},
	{"pciPassthru.64bitMMIOSizeGB", "128"},
};

static void test_body_element_order(void **state)
{
	struct gc_vcenter_vm_change c = {.extra_config = mmio, .nextra_config = 2,
					 .firmware = "efi", .reservation_locked = 1};
	const struct gc_vcenter_option odd[] = {{"a<b", "x&y \"q\"\n"}};
	struct gc_vcenter_soap s;

	gc_vcenter_reconfig_body(&s, "vm-123", &c);
	gc_buf_puts(&s.b, "|");
	assert_string_equal(
		s.b.ptr,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\""
		" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\""
		" xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\"><soapenv:Body>"
		"<ReconfigVM_Task xmlns=\"urn:vim25\"><_this type=\"VirtualMachine\">vm-123</_this>"
		"<spec>"
		"<extraConfig><key>pciPassthru.use64bitMMIO</key>"
		"<value xsi:type=\"xsd:string\">TRUE</value></extraConfig>"
		"<extraConfig><key>pciPassthru.64bitMMIOSizeGB</key>"
		"<value xsi:type=\"xsd:string\">128</value></extraConfig>"
		"<firmware>efi</firmware>"
		"<memoryReservationLockedToMax>true</memoryReservationLockedToMax>"
		"</spec>|");
	gc_vcenter_soap_free(&s);

	/* Only what changes is sent; text is escaped. */
	c.extra_config = odd;
	c.nextra_config = 1;
	c.firmware = NULL;
	c.reservation_locked = -1;
	gc_vcenter_reconfig_body(&s, "vm-1", &c);
	assert_non_null(strstr(s.b.ptr, "<spec><extraConfig><key>a&lt;b</key><value "
					"xsi:type=\"xsd:string\">x&amp;y &quot;q&quot;&#10;</value>"
					"</extraConfig></spec>"));
	gc_vcenter_soap_free(&s);
}

static void test_reconfigure_then_observe(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_vm_change c = {.extra_config = mmio, .nextra_config = 2,
					 .firmware = "efi", .reservation_locked = 1};
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_error err = GC_ERROR_INIT;
	const struct gc_vcenter_vm *vm, *other;

	assert_int_equal(gc_vcenter_reconfigure(vc, "vm-60", &c, 10000, &err), 0);
	assert_int_equal(gc_vcenter_calls(vc, "ReconfigVM_Task"), 1);
	assert_int_equal(gc_vcenter_calls(vc, "RetrievePropertiesEx"), 1); /* one task poll */
	assert_int_equal(gc_vcenter_observe(&inv, vc, &err), 0);
	vm = gc_vcenter_inventory_vm(inv, "DC0_H0_VM1");
	assert_non_null(vm);
	assert_string_equal(vm->moref, "vm-60");
	assert_int_equal(vm->nextra_config, 3);
	assert_string_equal(vm->extra_config[0].key, "govcsim");
	assert_string_equal(vm->extra_config[1].key, "pciPassthru.use64bitMMIO");
	assert_string_equal(vm->extra_config[1].value, "TRUE");
	assert_string_equal(vm->extra_config[2].key, "pciPassthru.64bitMMIOSizeGB");
	assert_string_equal(vm->extra_config[2].value, "128");
	assert_string_equal(vm->firmware, "efi");
	assert_true(vm->reservation_locked_set);
	assert_true(vm->reservation_locked);
	/* The other VMs are untouched. */
	other = gc_vcenter_inventory_vm(inv, "DC0_H0_VM0");
	assert_int_equal(other->nextra_config, 1);
	assert_string_equal(other->firmware, "bios");
	assert_false(other->reservation_locked_set);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

static void test_unknown_vm_is_remote_error(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_vm_change c = {.extra_config = mmio, .nextra_config = 1,
					 .firmware = NULL, .reservation_locked = -1};
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_vcenter_reconfigure(vc, "vm-9999", &c, 10000, &err), GC_EREMOTE);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8996): ReconfigVM_Task: "
				     "managed object not found: VirtualMachine:vm-9999 "
				     "(ManagedObjectNotFound)");
	gc_vcenter_free(vc);
}

static void test_bad_firmware_refused_before_sending(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_vm_change c = {.extra_config = NULL, .nextra_config = 0,
					 .firmware = "uefi", .reservation_locked = -1};
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_vcenter_reconfigure(vc, "vm-60", &c, 10000, &err), GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8996): firmware 'uefi' is "
				     "neither efi nor bios");
	assert_int_equal(gc_vcenter_calls(vc, "ReconfigVM_Task"), 0);
	gc_vcenter_free(vc);
}

/* A raw call through the driver's SOAP layer (setup only: MarkAsTemplate). */
static void call_vm(struct gc_vcenter_conn *vc, const char *method, const char *vm,
		    char *task, size_t n)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;

	gc_vcenter_soap_begin(&s, method, "VirtualMachine", vm);
	assert_int_equal(gc_vcenter_soap_end(&s, vc, &err), 0);
	if (gc_vcenter_soap_call(vc, &s, &doc, &ret, &err) < 0)
		fail_msg("%s: %s", method, err.msg);
	gc_vcenter_xml_copy(task, n, ret, "returnval");
	gc_vcenter_soap_free(&s);
	xmlFreeDoc(doc);
}

/* vcsim refuses to reconfigure a template (anything but name and
 * annotation) with a task that ends in NotSupported. */
static void test_failed_task_reports_vcenter_message(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_vm_change c = {.extra_config = mmio, .nextra_config = 1,
					 .firmware = NULL, .reservation_locked = -1};
	struct gc_error err = GC_ERROR_INIT;
	char task[64], want[256];
	const char *msg;

	assert_int_equal(gc_vcenter_power_off(vc, "vm-66", 10000, &err), 0);
	call_vm(vc, "MarkAsTemplate", "vm-66", task, sizeof(task));
	assert_int_equal(gc_vcenter_reconfigure(vc, "vm-66", &c, 10000, &err), GC_EREMOTE);
	/* "...: ReconfigVM_Task of vm-66 (task-N): *types.NotSupported (NotSupported)" */
	snprintf(want, sizeof(want), "%s: ReconfigVM_Task of vm-66 (task-", sim.target);
	assert_memory_equal(err.msg, want, strlen(want));
	msg = strstr(err.msg + strlen(want), "): ");
	assert_non_null(msg);
	assert_string_equal(msg, "): *types.NotSupported (NotSupported)");
	gc_vcenter_free(vc);
}

/* The four GPU/RDMA device kinds of REAL-FORMATS D.3, as the driver adds them. */
static const struct gc_vcenter_devspec gpu_devices[] = {
	{.op = GC_VCENTER_DEV_ADD, .kind = GC_VCENTER_PCI_STATIC, .key = -100,
	 .pci_id = "0000:af:00.0", .device_id = "20f1", .system_id = "5f2b0c3e-host-system-id",
	 .vendor_id = 4318, .device_name = "GA100 [A100 PCIe 40GB]"},
	{.op = GC_VCENTER_DEV_ADD, .kind = GC_VCENTER_VGPU, .key = -101, .vgpu = "grid_t4-16c"},
	{.op = GC_VCENTER_DEV_ADD, .kind = GC_VCENTER_NIC_SRIOV, .key = -102,
	 .pci_id = "0000:3b:00.0", .network = "VM Network"},
	{.op = GC_VCENTER_DEV_ADD, .kind = GC_VCENTER_NIC_PVRDMA, .key = -103,
	 .network = "VM Network", .protocol = "rocev2"},
};

static const char nic_connectable[] =
	"<connectable><startConnected>true</startConnected>"
	"<allowGuestControl>true</allowGuestControl><connected>true</connected></connectable>";

/* numCPUs, memoryMB, deviceChange..., extraConfig, firmware, lock: govmomi's order. */
static void test_body_devices_in_xsd_order(void **state)
{
	struct gc_vcenter_vm_change c = {.num_cpus = 8, .memory_mb = 65536,
					 .devices = gpu_devices, .ndevices = 4,
					 .extra_config = mmio, .nextra_config = 1,
					 .firmware = "efi", .reservation_locked = 1};
	struct gc_vcenter_soap s;
	char want[4096];

	gc_vcenter_reconfig_body(&s, "vm-63", &c);
	snprintf(want, sizeof(want),
		 "<spec><numCPUs>8</numCPUs><memoryMB>65536</memoryMB>"
		 "<deviceChange><operation>add</operation>"
		 "<device xsi:type=\"VirtualPCIPassthrough\"><key>-100</key>"
		 "<backing xsi:type=\"VirtualPCIPassthroughDeviceBackingInfo\">"
		 "<deviceName>GA100 [A100 PCIe 40GB]</deviceName><useAutoDetect>false</useAutoDetect>"
		 "<id>0000:af:00.0</id><deviceId>20f1</deviceId>"
		 "<systemId>5f2b0c3e-host-system-id</systemId><vendorId>4318</vendorId>"
		 "</backing></device></deviceChange>"
		 "<deviceChange><operation>add</operation>"
		 "<device xsi:type=\"VirtualPCIPassthrough\"><key>-101</key>"
		 "<backing xsi:type=\"VirtualPCIPassthroughVmiopBackingInfo\">"
		 "<vgpu>grid_t4-16c</vgpu></backing></device></deviceChange>"
		 "<deviceChange><operation>add</operation>"
		 "<device xsi:type=\"VirtualSriovEthernetCard\"><key>-102</key>"
		 "<backing xsi:type=\"VirtualEthernetCardNetworkBackingInfo\">"
		 "<deviceName>VM Network</deviceName><useAutoDetect>false</useAutoDetect></backing>"
		 "%s<addressType>generated</addressType>"
		 "<allowGuestOSMtuChange>true</allowGuestOSMtuChange>"
		 "<sriovBacking><physicalFunctionBacking><deviceName></deviceName>"
		 "<useAutoDetect>false</useAutoDetect><id>0000:3b:00.0</id>"
		 "</physicalFunctionBacking></sriovBacking></device></deviceChange>"
		 "<deviceChange><operation>add</operation>"
		 "<device xsi:type=\"VirtualVmxnet3Vrdma\"><key>-103</key>"
		 "<backing xsi:type=\"VirtualEthernetCardNetworkBackingInfo\">"
		 "<deviceName>VM Network</deviceName><useAutoDetect>false</useAutoDetect></backing>"
		 "%s<addressType>generated</addressType><deviceProtocol>rocev2</deviceProtocol>"
		 "</device></deviceChange>"
		 "<extraConfig><key>pciPassthru.use64bitMMIO</key>"
		 "<value xsi:type=\"xsd:string\">TRUE</value></extraConfig>"
		 "<firmware>efi</firmware>"
		 "<memoryReservationLockedToMax>true</memoryReservationLockedToMax></spec>",
		 nic_connectable, nic_connectable);
	assert_non_null(strstr(s.b.ptr, "<_this type=\"VirtualMachine\">vm-63</_this><spec>"));
	assert_string_equal(strstr(s.b.ptr, "<spec>"), want);
	gc_vcenter_soap_free(&s);
}

/* Dynamic DirectPath, a DV port backing with a vmxnet3, a standard network
 * by moref, and removes (key and type only). */
static void test_body_dynamic_dvport_and_remove(void **state)
{
	const struct gc_vcenter_devspec d[] = {
		{.op = GC_VCENTER_DEV_ADD, .kind = GC_VCENTER_PCI_DYNAMIC, .key = -100,
		 .allowed_vendor_id = 4318, .allowed_device_id = 8433},
		{.op = GC_VCENTER_DEV_ADD, .kind = GC_VCENTER_NIC_VMXNET3, .key = -101,
		 .dvs_uuid = "50 2a 9b", .portgroup_key = "dvportgroup-13"},
		{.op = GC_VCENTER_DEV_ADD, .kind = GC_VCENTER_NIC_VMXNET3, .key = -102,
		 .network = "VM Network", .network_moref = "network-7"},
		{.op = GC_VCENTER_DEV_REMOVE, .kind = GC_VCENTER_NIC_SRIOV, .key = 4001},
		{.op = GC_VCENTER_DEV_REMOVE, .kind = GC_VCENTER_VGPU, .key = 13000},
	};
	struct gc_vcenter_vm_change c = {.devices = d, .ndevices = 5, .reservation_locked = -1};
	struct gc_vcenter_soap s;
	char want[4096];

	gc_vcenter_reconfig_body(&s, "vm-63", &c);
	snprintf(want, sizeof(want),
		 "<spec><deviceChange><operation>add</operation>"
		 "<device xsi:type=\"VirtualPCIPassthrough\"><key>-100</key>"
		 "<backing xsi:type=\"VirtualPCIPassthroughDynamicBackingInfo\">"
		 "<deviceName></deviceName><useAutoDetect>false</useAutoDetect>"
		 "<allowedDevice><vendorId>4318</vendorId><deviceId>8433</deviceId></allowedDevice>"
		 "</backing></device></deviceChange>"
		 "<deviceChange><operation>add</operation>"
		 "<device xsi:type=\"VirtualVmxnet3\"><key>-101</key>"
		 "<backing xsi:type=\"VirtualEthernetCardDistributedVirtualPortBackingInfo\">"
		 "<port><switchUuid>50 2a 9b</switchUuid><portgroupKey>dvportgroup-13</portgroupKey>"
		 "</port></backing>%s<addressType>generated</addressType></device></deviceChange>"
		 "<deviceChange><operation>add</operation>"
		 "<device xsi:type=\"VirtualVmxnet3\"><key>-102</key>"
		 "<backing xsi:type=\"VirtualEthernetCardNetworkBackingInfo\">"
		 "<deviceName>VM Network</deviceName><useAutoDetect>false</useAutoDetect>"
		 "<network type=\"Network\">network-7</network></backing>"
		 "%s<addressType>generated</addressType></device></deviceChange>"
		 "<deviceChange><operation>remove</operation>"
		 "<device xsi:type=\"VirtualSriovEthernetCard\"><key>4001</key></device></deviceChange>"
		 "<deviceChange><operation>remove</operation>"
		 "<device xsi:type=\"VirtualPCIPassthrough\"><key>13000</key></device></deviceChange>"
		 "</spec>",
		 nic_connectable, nic_connectable);
	assert_string_equal(strstr(s.b.ptr, "<spec>"), want);
	gc_vcenter_soap_free(&s);
}

/* Each bad value is refused before anything is sent, naming the field. */
static void test_bad_devices_refused_before_sending(void **state)
{
	static const struct {
		struct gc_vcenter_devspec d;
		const char *msg;
	} bad[] = {
		{{.kind = GC_VCENTER_PCI_STATIC, .key = -100, .pci_id = "0000:af:00",
		  .device_id = "20f1", .vendor_id = 4318},
		 "pci_id '0000:af:00' is not a PCI address (0000:3b:00.0)"},
		{{.kind = GC_VCENTER_PCI_STATIC, .key = -100, .pci_id = "0000:af:00.0",
		  .device_id = "0x20f1", .vendor_id = 4318},
		 "device_id '0x20f1' is not 1-4 hex digits"},
		{{.kind = GC_VCENTER_PCI_STATIC, .key = -100, .pci_id = "0000:af:00.0",
		  .device_id = "20f1", .vendor_id = 0x10de * 8},
		 "vendor_id 34544 is not a signed 16-bit value (0x10de is 4318)"},
		{{.kind = GC_VCENTER_PCI_STATIC, .key = -100, .pci_id = "0000:af:00.0",
		  .device_id = "20f1"},
		 "vendor_id is not set"},
		{{.kind = GC_VCENTER_PCI_DYNAMIC, .key = -100, .allowed_vendor_id = 4318},
		 "allowed_device_id 0 is not a PCI device id"},
		{{.kind = GC_VCENTER_VGPU, .key = -100, .vgpu = "grid t4"},
		 "vgpu 'grid t4' is not a vGPU profile (grid_t4-16c)"},
		{{.kind = GC_VCENTER_NIC_PVRDMA, .key = -100, .network = "VM Network",
		  .protocol = "iwarp"},
		 "protocol 'iwarp' is neither rocev1 nor rocev2"},
		{{.kind = GC_VCENTER_NIC_VMXNET3, .key = -100}, "network is not set (nor a DV port group)"},
		{{.kind = GC_VCENTER_NIC_VMXNET3, .key = -100, .dvs_uuid = "u"},
		 "dvs_uuid/portgroup_key must be given together"},
		{{.kind = GC_VCENTER_NIC_SRIOV, .key = -100, .network = "VM Network",
		  .pci_id = "3b:00.0"},
		 "pci_id '3b:00.0' is not a PCI address (0000:3b:00.0)"},
		{{.kind = GC_VCENTER_NIC_VMXNET3, .key = 5, .network = "VM Network"},
		 "key 5 is not negative (a new device's key)"},
		{{.op = GC_VCENTER_DEV_REMOVE, .kind = GC_VCENTER_VGPU, .key = -100},
		 "key -100 is not an existing device's key"},
	};
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_devspec ok = gpu_devices[1];
	char want[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gc_vcenter_devspec d[2] = {ok, bad[i].d};
		struct gc_vcenter_vm_change c = {.devices = d, .ndevices = 2,
						 .reservation_locked = -1};
		struct gc_error err = GC_ERROR_INIT;

		assert_int_equal(gc_vcenter_reconfigure(vc, "vm-60", &c, 10000, &err), GC_EINVAL);
		snprintf(want, sizeof(want), "%s: ReconfigVM_Task of vm-60: deviceChange[1]: %s",
			 sim.target, bad[i].msg);
		assert_string_equal(err.msg, want);
	}
	assert_int_equal(gc_vcenter_calls(vc, "ReconfigVM_Task"), 0);
	gc_vcenter_free(vc);
}

static const struct gc_vcenter_device *find_key(const struct gc_vcenter_vm *vm, int key)
{
	for (size_t i = 0; i < vm->ndevices; i++)
		if (vm->devices[i].key == key)
			return &vm->devices[i];
	return NULL;
}

/* vcsim keeps what it is given (it does not check that the VM is off or
 * that the host has the device); the observation reads every backing back,
 * and a remove by key takes each device away again. */
static void test_add_and_remove_each_device_kind(void **state)
{
	struct gc_vcenter_devspec more[] = {
		{.op = GC_VCENTER_DEV_ADD, .kind = GC_VCENTER_PCI_DYNAMIC, .key = -104,
		 .allowed_vendor_id = 4318, .allowed_device_id = 8433},
		{.op = GC_VCENTER_DEV_ADD, .kind = GC_VCENTER_NIC_VMXNET3, .key = -105,
		 .network = "VM Network"},
	};
	struct gc_vcenter_devspec all[6];
	struct gc_vcenter_devspec rm[6];
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_vm_change c = {.devices = all, .ndevices = 6, .reservation_locked = -1};
	const struct gc_vcenter_vm *vm;
	const struct gc_vcenter_device *d;
	int keys[6];

	memcpy(all, gpu_devices, sizeof(gpu_devices));
	memcpy(all + 4, more, sizeof(more));
	assert_int_equal(gc_vcenter_reconfigure(vc, "vm-63", &c, 10000, &err), 0);
	assert_int_equal(gc_vcenter_observe(&inv, vc, &err), 0);
	vm = gc_vcenter_inventory_vm(inv, "DC0_C0_RP0_VM0");
	assert_int_equal(vm->ndevices, 13 + 6);
	/* vCenter (and vcsim) give new devices their own keys, in order */
	for (size_t i = 0; i < 6; i++) {
		keys[i] = vm->devices[13 + i].key;
		assert_true(keys[i] > 0);
	}
	d = &vm->devices[13];
	assert_string_equal(d->type, "VirtualPCIPassthrough");
	assert_string_equal(d->backing_type, "VirtualPCIPassthroughDeviceBackingInfo");
	assert_string_equal(d->pci_id, "0000:af:00.0");
	assert_string_equal(d->device_id, "20f1");
	assert_string_equal(d->system_id, "5f2b0c3e-host-system-id");
	assert_int_equal(d->vendor_id, 4318);
	assert_null(d->vgpu);
	d = &vm->devices[14];
	assert_string_equal(d->type, "VirtualPCIPassthrough");
	assert_string_equal(d->backing_type, "VirtualPCIPassthroughVmiopBackingInfo");
	assert_string_equal(d->vgpu, "grid_t4-16c");
	assert_null(d->pci_id);
	d = &vm->devices[15];
	assert_string_equal(d->type, "VirtualSriovEthernetCard");
	assert_string_equal(d->sriov_pf, "0000:3b:00.0");
	assert_string_equal(d->network, "VM Network");
	assert_non_null(d->mac_address); /* generated */
	assert_null(d->device_protocol);
	d = &vm->devices[16];
	assert_string_equal(d->type, "VirtualVmxnet3Vrdma");
	assert_string_equal(d->device_protocol, "rocev2");
	assert_string_equal(d->network, "VM Network");
	assert_null(d->sriov_pf);
	d = &vm->devices[17];
	assert_string_equal(d->type, "VirtualPCIPassthrough");
	assert_string_equal(d->backing_type, "VirtualPCIPassthroughDynamicBackingInfo");
	assert_int_equal(d->allowed_vendor_id, 4318);
	assert_int_equal(d->allowed_device_id, 8433);
	d = &vm->devices[18];
	assert_string_equal(d->type, "VirtualVmxnet3");
	assert_string_equal(d->backing_type, "VirtualEthernetCardNetworkBackingInfo");
	assert_string_equal(d->network, "VM Network");
	gc_vcenter_inventory_free(inv);

	for (size_t i = 0; i < 6; i++)
		rm[i] = (struct gc_vcenter_devspec){.op = GC_VCENTER_DEV_REMOVE,
						    .kind = all[i].kind, .key = keys[i]};
	c.devices = rm;
	assert_int_equal(gc_vcenter_reconfigure(vc, "vm-63", &c, 10000, &err), 0);
	assert_int_equal(gc_vcenter_observe(&inv, vc, &err), 0);
	vm = gc_vcenter_inventory_vm(inv, "DC0_C0_RP0_VM0");
	assert_int_equal(vm->ndevices, 13);
	for (size_t i = 0; i < 6; i++)
		assert_null(find_key(vm, keys[i]));
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

/* numCPUs and memoryMB read back as config.hardware.numCPU / memoryMB. */
static void test_cpus_and_memory(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_vm_change c = {.num_cpus = 16, .memory_mb = 131072,
					 .reservation_locked = -1};
	const struct gc_vcenter_vm *vm;

	assert_int_equal(gc_vcenter_reconfigure(vc, "vm-57", &c, 10000, &err), 0);
	assert_int_equal(gc_vcenter_observe(&inv, vc, &err), 0);
	vm = gc_vcenter_inventory_vm(inv, "DC0_H0_VM0");
	assert_int_equal(vm->num_cpus, 16);
	assert_int_equal(vm->memory_mb, 131072);
	vm = gc_vcenter_inventory_vm(inv, "DC0_H0_VM1");
	assert_int_equal(vm->num_cpus, 1); /* vcsim's default */
	assert_int_equal(vm->memory_mb, 32);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

static void test_unknown_task(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_vcenter_task_wait(vc, "task-999999", "a task", 1000, &err),
			 GC_EREMOTE);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8996): RetrievePropertiesEx: "
				     "The object has already been deleted or has not been "
				     "completely created (ManagedObjectNotFound)");
	gc_vcenter_free(vc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_body_element_order),
		cmocka_unit_test(test_reconfigure_then_observe),
		cmocka_unit_test(test_unknown_vm_is_remote_error),
		cmocka_unit_test(test_bad_firmware_refused_before_sending),
		cmocka_unit_test(test_failed_task_reports_vcenter_message),
		cmocka_unit_test(test_unknown_task),
		cmocka_unit_test(test_body_devices_in_xsd_order),
		cmocka_unit_test(test_body_dynamic_dvport_and_remove),
		cmocka_unit_test(test_bad_devices_refused_before_sending),
		cmocka_unit_test(test_add_and_remove_each_device_kind),
		cmocka_unit_test(test_cpus_and_memory),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
