/*
 * test_reconfig.c - ReconfigVM_Task and the task wait: the exact body we
 * send (element order of REAL-FORMATS D), then the change made on a real
 * vcsim (its own lab dir, port 8996) and read back by an observation.
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
	if (vcsim_start(&sim, "test-reconfig-vcsim", PORT_VCSIM) != 0) {
		fprintf(stderr, "test_reconfig: vcsim did not start (see %s/vcsim.log)\n", sim.dir);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	vcsim_stop(&sim);
	return 0;
}

static struct gc_vcenter_conn *connect_lab(void)
{
	struct gc_vcenter_opts o = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_conn *vc = NULL;

	o.url = sim.url;
	o.username = "gcadmin";
	o.password_file = sim.password_file;
	o.ca_file = sim.ca_file;
	if (gc_vcenter_connect(&vc, &o, &err) < 0)
		fail_msg("connect: %s", err.msg);
	return vc;
}

static const struct gc_vcenter_option mmio[] = {
	{"pciPassthru.use64bitMMIO", "TRUE"},
	{"pciPassthru.64bitMMIOSizeGB", "128"},
};

static void test_body_element_order(void **state)
{
	struct gc_vcenter_vm_change c = {mmio, 2, "efi", 1};
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
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_vcenter_vm_change c = {mmio, 2, "efi", 1};
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
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_vcenter_vm_change c = {mmio, 1, NULL, -1};
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_vcenter_reconfigure(vc, "vm-9999", &c, 10000, &err), GC_EREMOTE);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8996): ReconfigVM_Task: "
				     "managed object not found: VirtualMachine:vm-9999 "
				     "(ManagedObjectNotFound)");
	gc_vcenter_free(vc);
}

static void test_bad_firmware_refused_before_sending(void **state)
{
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_vcenter_vm_change c = {NULL, 0, "uefi", -1};
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_vcenter_reconfigure(vc, "vm-60", &c, 10000, &err), GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8996): firmware 'uefi' is "
				     "neither efi nor bios");
	assert_int_equal(gc_vcenter_calls(vc, "ReconfigVM_Task"), 0);
	gc_vcenter_free(vc);
}

/* A raw call through the driver's SOAP layer (setup only). */
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
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_vcenter_vm_change c = {mmio, 1, NULL, -1};
	struct gc_error err = GC_ERROR_INIT;
	char task[64], want[256];
	const char *msg;

	call_vm(vc, "PowerOffVM_Task", "vm-66", task, sizeof(task));
	assert_int_equal(gc_vcenter_task_wait(vc, task, "power off", 10000, &err), 0);
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

/* deviceChange add of one device, written in REAL-FORMATS D.3 order. */
static void open_add(struct gc_vcenter_soap *s, const char *type, const char *key)
{
	gc_vcenter_soap_open(s, "deviceChange", NULL);
	gc_vcenter_soap_elem(s, "operation", "add");
	gc_vcenter_soap_open(s, "device", type);
	gc_vcenter_soap_elem(s, "key", key);
}

static void close_add(struct gc_vcenter_soap *s)
{
	gc_vcenter_soap_close(s, "device");
	gc_vcenter_soap_close(s, "deviceChange");
}

static void network_backing(struct gc_vcenter_soap *s)
{
	gc_vcenter_soap_open(s, "backing", "VirtualEthernetCardNetworkBackingInfo");
	gc_vcenter_soap_elem(s, "deviceName", "VM Network");
	gc_vcenter_soap_close(s, "backing");
}

static void write_gpu_devices(struct gc_vcenter_soap *s)
{
	gc_vcenter_soap_open(s, "spec", NULL);
	open_add(s, "VirtualPCIPassthrough", "-100");
	gc_vcenter_soap_open(s, "backing", "VirtualPCIPassthroughDeviceBackingInfo");
	gc_vcenter_soap_elem(s, "deviceName", "GA100 [A100 PCIe 40GB]");
	gc_vcenter_soap_elem(s, "useAutoDetect", "false");
	gc_vcenter_soap_elem(s, "id", "0000:af:00.0");
	gc_vcenter_soap_elem(s, "deviceId", "20f1");
	gc_vcenter_soap_elem(s, "systemId", "5f2b0c3e-host-system-id");
	gc_vcenter_soap_elem(s, "vendorId", "4318");
	gc_vcenter_soap_close(s, "backing");
	close_add(s);
	open_add(s, "VirtualPCIPassthrough", "-101");
	gc_vcenter_soap_open(s, "backing", "VirtualPCIPassthroughVmiopBackingInfo");
	gc_vcenter_soap_elem(s, "vgpu", "grid_t4-16c");
	gc_vcenter_soap_close(s, "backing");
	close_add(s);
	open_add(s, "VirtualSriovEthernetCard", "-102");
	network_backing(s);
	gc_vcenter_soap_elem(s, "allowGuestOSMtuChange", "true");
	gc_vcenter_soap_open(s, "sriovBacking", NULL);
	gc_vcenter_soap_open(s, "physicalFunctionBacking", NULL);
	gc_vcenter_soap_elem(s, "deviceName", "");
	gc_vcenter_soap_elem(s, "id", "0000:3b:00.0");
	gc_vcenter_soap_close(s, "physicalFunctionBacking");
	gc_vcenter_soap_close(s, "sriovBacking");
	close_add(s);
	open_add(s, "VirtualVmxnet3Vrdma", "-103");
	network_backing(s);
	gc_vcenter_soap_elem(s, "deviceProtocol", "rocev2");
	close_add(s);
	gc_vcenter_soap_close(s, "spec");
}

/* vcsim keeps what it is given (it does not check that the VM is off or
 * that the host has the device); the observation reads every backing back. */
static void test_observe_reads_gpu_and_rdma_backings(void **state)
{
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	char task[64];
	const struct gc_vcenter_vm *vm;
	const struct gc_vcenter_device *d;

	gc_vcenter_soap_begin(&s, "ReconfigVM_Task", "VirtualMachine", "vm-63");
	write_gpu_devices(&s);
	assert_int_equal(gc_vcenter_soap_end(&s, vc, &err), 0);
	if (gc_vcenter_soap_call(vc, &s, &doc, &ret, &err) < 0)
		fail_msg("ReconfigVM_Task: %s", err.msg);
	gc_vcenter_xml_copy(task, sizeof(task), ret, "returnval");
	gc_vcenter_soap_free(&s);
	xmlFreeDoc(doc);
	assert_int_equal(gc_vcenter_task_wait(vc, task, "add devices", 10000, &err), 0);

	assert_int_equal(gc_vcenter_observe(&inv, vc, &err), 0);
	vm = gc_vcenter_inventory_vm(inv, "DC0_C0_RP0_VM0");
	assert_int_equal(vm->ndevices, 17);
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
	assert_null(d->device_protocol);
	d = &vm->devices[16];
	assert_string_equal(d->type, "VirtualVmxnet3Vrdma");
	assert_string_equal(d->device_protocol, "rocev2");
	assert_string_equal(d->network, "VM Network");
	assert_null(d->sriov_pf);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

static void test_unknown_task(void **state)
{
	struct gc_vcenter_conn *vc = connect_lab();
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
		cmocka_unit_test(test_observe_reads_gpu_and_rdma_backings),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
