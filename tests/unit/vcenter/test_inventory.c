/*
 * test_inventory.c - what one observation reads beyond VMs' devices: the
 * datacenters and their folders, compute resources, datastores, networks,
 * VM sizing, template and pool, host parent, maintenance mode and PCI
 * devices.  First on the lab's vcsim (its own lab dir, port 8982), then on
 * the replies of fuzz/corpus/vcenter_observe read through
 * gc_vcenter_observe_parse(), the same reader: a capture after a switch,
 * devices, a template and maintenance mode were applied, and the
 * constructed edge cases (each file says in its name whether it was
 * captured or constructed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../src/drivers/vcenter/soap.h"
#include "fixture.h"
#include "gc/vcenter.h"

#define PORT_VCSIM 8982

static struct vcsim sim;

static int group_setup(void **state)
{
	return vcsim_setup(&sim, "test_inventory", PORT_VCSIM, "");
}

static int group_teardown(void **state)
{
	vcsim_stop(&sim);
	return 0;
}

static void test_default_inventory(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = vcsim_observe(vc);
	const struct gc_vcenter_datacenter *dc = gc_vcenter_inventory_datacenter(inv, "DC0");
	const struct gc_vcenter_host *h = gc_vcenter_inventory_host(inv, "DC0_H0");
	const struct gc_vcenter_host *c0 = gc_vcenter_inventory_host(inv, "DC0_C0_H0");
	const struct gc_vcenter_compute *cr = gc_vcenter_inventory_compute(inv, h->parent);
	const struct gc_vcenter_compute *cl = gc_vcenter_inventory_compute(inv, c0->parent);
	const struct gc_vcenter_vm *vm = gc_vcenter_inventory_vm(inv, "DC0_C0_RP0_VM0");
	const struct gc_vcenter_pci_device *p;

	assert_int_equal(inv->round_trips, 1);
	assert_int_equal(gc_vcenter_calls(vc, "RetrievePropertiesEx"), 1);
	assert_int_equal(inv->ndatacenters, 1);
	assert_string_equal(dc->moref, "datacenter-2");
	assert_string_equal(dc->vm_folder, "folder-3");
	assert_string_equal(dc->host_folder, "folder-4");
	assert_string_equal(dc->datastore_folder, "folder-5");
	assert_string_equal(dc->network_folder, "folder-6");

	assert_int_equal(inv->ncomputes, 2);
	assert_string_equal(cr->name, "DC0_H0");
	assert_string_equal(cr->type, "ComputeResource");
	assert_non_null(cr->resource_pool);
	assert_non_null(cr->environment_browser);
	assert_string_equal(cl->name, "DC0_C0");
	assert_string_equal(cl->type, "ClusterComputeResource");
	assert_string_equal(gc_vcenter_inventory_host(inv, "DC0_C0_H2")->parent, cl->moref);

	assert_int_equal(inv->ndatastores, 1);
	assert_non_null(gc_vcenter_inventory_datastore(inv, "LocalDS_0"));
	assert_int_equal(inv->nnetworks, 3);
	assert_string_equal(gc_vcenter_inventory_network(inv, "VM Network")->type, "Network");

	/* vcsim's ESX template: 43 PCI devices, the Intel ones with a negative
	 * vendorId (0x8086 as a signed short) */
	assert_false(h->maintenance);
	assert_int_equal(h->npci, 43);
	p = gc_vcenter_host_pci(h, "0000:00:00.0");
	assert_int_equal(p->vendor_id, -32634);
	assert_int_equal(p->device_id, 29072);
	assert_string_equal(p->device_name, "Virtual Machine Chipset");
	assert_null(gc_vcenter_host_pci(h, "0000:3b:00.0"));

	assert_int_equal(vm->num_cpus, 1);
	assert_int_equal(vm->memory_mb, 32);
	assert_false(vm->is_template);
	assert_string_equal(vm->resource_pool, cl->resource_pool);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

/* Setup calls the API has no function for. */
static void raw(struct gc_vcenter_conn *vc, const char *method, const char *type,
		const char *id, bool task)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_soap s;

	gc_vcenter_soap_begin(&s, method, type, id);
	if (strcmp(method, "EnterMaintenanceMode_Task") == 0)
		gc_vcenter_soap_int(&s, "timeout", 0);
	if ((task ? gc_vcenter_run_task(vc, &s, id, 10000, NULL, 0, &err)
		  : gc_vcenter_soap_run(vc, &s, &err)) < 0)
		fail_msg("%s: %s", method, err.msg);
}

/* A template has no resourcePool: the property is unset, which is not a
 * missingSet, so the observation still succeeds. */
static void test_template_and_maintenance(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_inventory *inv;
	const struct gc_vcenter_vm *vm;

	assert_int_equal(gc_vcenter_power_off(vc, "vm-66", 10000, &err), 0);
	raw(vc, "MarkAsTemplate", "VirtualMachine", "vm-66", false);
	raw(vc, "EnterMaintenanceMode_Task", "HostSystem", "host-50", true);
	inv = vcsim_observe(vc);
	vm = gc_vcenter_inventory_vm(inv, "DC0_C0_RP0_VM1");
	assert_true(vm->is_template);
	assert_null(vm->resource_pool);
	assert_string_equal(vm->power_state, "poweredOff");
	assert_true(gc_vcenter_inventory_host(inv, "DC0_C0_H2")->maintenance);
	assert_false(gc_vcenter_inventory_host(inv, "DC0_C0_H1")->maintenance);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

/* ---------------------------------------------------------------- replies read from files */

static int parse_file(struct gc_vcenter_inventory **inv, const char *leaf, struct gc_error *err)
{
	char path[600], *xml = NULL;
	size_t len = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/fuzz/corpus/vcenter_observe/%s", GC_SOURCE_DIR, leaf);
	if (gc_read_file(&xml, &len, path, 1u << 20, err) < 0)
		fail_msg("%s", err->msg);
	rc = gc_vcenter_observe_parse(inv, xml, len, err);
	free(xml);
	return rc;
}

static const struct gc_vcenter_device *find_type(const struct gc_vcenter_vm *vm, const char *t,
						  const char *backing)
{
	for (size_t i = 0; i < vm->ndevices; i++)
		if (strcmp(vm->devices[i].type, t) == 0 &&
		    (backing == NULL || strcmp(vm->devices[i].backing_type, backing) == 0))
			return &vm->devices[i];
	return NULL;
}

/* Captured from vcsim after a switch with two members, a VLAN 100 port
 * group, a ReconfigVM_Task with every device kind, a template and a host in
 * maintenance mode. */
static void test_captured_after_apply(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_inventory *inv = NULL;
	const struct gc_vcenter_dvs *d;
	const struct gc_vcenter_network *pg;
	const struct gc_vcenter_vm *vm;
	const struct gc_vcenter_device *dev;

	assert_int_equal(parse_file(&inv, "vcsim-after-apply.xml", &err), 0);
	assert_int_equal(inv->round_trips, 0); /* no call was made */
	d = gc_vcenter_inventory_dvs(inv, "gc-rdma");
	assert_string_equal(d->moref, "dvs-69");
	assert_int_equal(d->max_mtu, 9000);
	assert_string_equal(d->config_version, "2");
	assert_int_equal(d->nmembers, 2);
	assert_string_equal(d->members[0].host, "host-21");
	assert_int_equal(d->members[0].npnics, 1);
	assert_string_equal(d->members[0].pnics[0], "vmnic1");
	assert_string_equal(d->members[1].host, "host-34");
	assert_string_equal(d->members[1].pnics[0], "vmnic5");
	pg = gc_vcenter_inventory_network(inv, "gc-rdma-pg");
	assert_string_equal(pg->dvs, "dvs-69");
	assert_int_equal(pg->vlan, 100);

	vm = gc_vcenter_inventory_vm(inv, "DC0_H0_VM0");
	assert_int_equal(vm->num_cpus, 8);
	assert_int_equal(vm->memory_mb, 65536);
	assert_string_equal(vm->firmware, "efi");
	assert_true(vm->reservation_locked);
	assert_string_equal(gc_vcenter_vm_option(vm, "pciPassthru.use64bitMMIO"), "TRUE");
	dev = find_type(vm, "VirtualPCIPassthrough", "VirtualPCIPassthroughDeviceBackingInfo");
	assert_string_equal(dev->pci_id, "0000:af:00.0");
	dev = find_type(vm, "VirtualPCIPassthrough", "VirtualPCIPassthroughDynamicBackingInfo");
	assert_int_equal(dev->allowed_device_id, 8433);
	dev = find_type(vm, "VirtualVmxnet3Vrdma", NULL);
	assert_string_equal(dev->portgroup_key, pg->portgroup_key);
	assert_string_equal(dev->device_protocol, "rocev2");

	vm = gc_vcenter_inventory_vm(inv, "tmpl-01");
	assert_true(vm->is_template);
	assert_null(vm->resource_pool);
	assert_true(gc_vcenter_inventory_host(inv, "DC0_C0_H2")->maintenance);
	gc_vcenter_inventory_free(inv);
}

/* Constructed: what vcsim never sends. */
static void test_constructed_edges(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_inventory *inv = NULL;
	const struct gc_vcenter_vm *vm;
	const struct gc_vcenter_host *h;
	const struct gc_vcenter_dvs *d;
	const struct gc_vcenter_network *n;

	assert_int_equal(parse_file(&inv, "constructed-edges.xml", &err), 0);
	/* a Folder and an object without <obj> are not read */
	assert_int_equal(inv->nvms, 1);
	vm = &inv->vms[0];
	assert_int_equal(vm->num_cpus, 0);   /* out of int range: as if absent */
	assert_int_equal(vm->memory_mb, -1); /* as sent */
	assert_true(vm->is_template);
	assert_null(vm->resource_pool);
	assert_int_equal(vm->ndevices, 0);   /* a repeated property: the last wins */
	assert_int_equal(vm->nextra_config, 1); /* an option without a key is dropped */
	assert_string_equal(vm->extra_config[0].value, "");
	/* a host without a name is not kept */
	assert_int_equal(inv->nhosts, 1);
	h = &inv->hosts[0];
	assert_true(h->maintenance);
	assert_string_equal(h->parent, "domain-c8");
	assert_int_equal(h->npci, 1);        /* a device without an id is dropped */
	assert_string_equal(gc_vcenter_inventory_compute(inv, "domain-c8")->type,
			    "ClusterComputeResource");
	n = gc_vcenter_inventory_network(inv, "rdma-pg");
	assert_int_equal(n->vlan, -1);       /* a private VLAN is not one id */
	assert_string_equal(n->config_version, "7");
	assert_string_equal(gc_vcenter_inventory_network(inv, "nsx-seg")->type, "OpaqueNetwork");
	/* config.host first (with pnics), then summary.hostMember's other host */
	d = gc_vcenter_inventory_dvs(inv, "rdma-dvs");
	assert_string_equal(d->uuid, "50 2a 9b");
	assert_int_equal(d->max_mtu, 9000);
	assert_int_equal(d->nmembers, 2);
	assert_string_equal(d->members[0].host, "host-10");
	assert_int_equal(d->members[0].npnics, 2);
	assert_string_equal(d->members[0].pnics[1], "vmnic5");
	assert_string_equal(d->members[1].host, "host-12");
	assert_int_equal(d->members[1].npnics, 0);
	assert_int_equal(inv->ndatastores, 0); /* no name */
	gc_vcenter_inventory_free(inv);
}

static void test_replies_that_fail(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_inventory *inv = NULL;

	assert_int_equal(parse_file(&inv, "vcsim-not-authenticated.xml", &err), GC_EAUTH);
	assert_string_equal(err.msg, "vCenter: RetrievePropertiesEx: cannot read name of "
				     "datacenter-2 (NotAuthenticated)");
	assert_null(inv);
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(parse_file(&inv, "constructed-invalid-property.xml", &err), GC_EREMOTE);
	assert_string_equal(err.msg, "vCenter: RetrievePropertiesEx: cannot read config.maxMtu "
				     "of dvs-9 (InvalidProperty)");
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(parse_file(&inv, "constructed-fault-not-authenticated.xml", &err),
			 GC_EAUTH);
	assert_string_equal(err.msg, "vCenter: RetrievePropertiesEx: The session is not "
				     "authenticated. (NotAuthenticated)");
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(gc_vcenter_observe_parse(&inv, "<x/>", 4, &err), GC_EINVAL);
	assert_string_equal(err.msg, "vCenter: RetrievePropertiesEx: HTTP 200 without a SOAP "
				     "reply");
	assert_null(inv);
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(parse_file(&inv, "constructed-empty-result.xml", &err), 0);
	assert_int_equal(inv->nvms + inv->nhosts + inv->ndvs + inv->nnetworks, 0);
	gc_vcenter_inventory_free(inv);
}

/*
 * Found by fuzz_vcenter_observe: a reply declaring another encoding, with a
 * byte that encoding cannot convert, made libxml2 print "encoding error"
 * and "I/O error" lines to stderr (library code never prints).  Replies
 * are read as UTF-8 whatever they declare, so such a reply is one that is
 * not the SOAP we asked for, and nothing is printed.
 */
static void test_reply_in_another_encoding_prints_nothing(void **state)
{
	static const char xml[] =
		"<?xml version=\"1.0\" encoding=\"ISO-2022-JP\"?>\n"
		"<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">"
		"<soapenv:Body><RetrievePropertiesExResponse xmlns=\"urn:vim25\"><returnval>"
		"<objects><obj type=\"Datastore\">datastore-1</obj><propSet><name>name</name>"
		"<val>ds\x93</val></propSet></objects></returnval></RetrievePropertiesExResponse>"
		"</soapenv:Body></soapenv:Envelope>";
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_inventory *inv = NULL;
	FILE *tmp = tmpfile();
	int saved = dup(2);
	long printed;

	assert_non_null(tmp);
	fflush(stderr);
	assert_true(dup2(fileno(tmp), 2) >= 0);
	assert_int_equal(gc_vcenter_observe_parse(&inv, xml, sizeof(xml) - 1, &err), GC_EINVAL);
	fflush(stderr);
	printed = lseek(2, 0, SEEK_END);
	dup2(saved, 2);
	close(saved);
	fclose(tmp);
	assert_int_equal(printed, 0);
	assert_null(inv);
	assert_string_equal(err.msg, "vCenter: RetrievePropertiesEx: HTTP 200 without a SOAP "
				     "reply");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_inventory),
		cmocka_unit_test(test_template_and_maintenance),
		cmocka_unit_test(test_captured_after_apply),
		cmocka_unit_test(test_constructed_edges),
		cmocka_unit_test(test_replies_that_fail),
		cmocka_unit_test(test_reply_in_another_encoding_prints_nothing),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
