/*
 * test_record.c - the recorder (src/drivers/vcenter/record.c): a vCenter
 * inventory, built by hand in the shape gc_vcenter_observe() returns, mapped
 * onto the resources of examples/roce-passthrough.yaml.  What a user sees
 * from it is the plan, so the tests assert exact observed values and the
 * exact problems, without a vCenter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../src/drivers/vcenter/vcdrv.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/plan.h"
#include "gc/spec.h"

struct fix {
	struct gc_cluster *c;
	struct gc_graph *g;
	const struct gc_resource **res; /* the vCenter target's */
	size_t nres;
	struct gc_vcenter_inventory inv;
	struct gc_vcenter_host hosts[8];
	char host_names[8][16], host_morefs[8][24]; /* room for any int: gcc -O1 -Wformat-truncation */
	struct gc_vcenter_datacenter dc;
	struct gc_vcenter_vm vm[2]; /* worker-01, the template */
	struct gc_vcenter_device dev[11];
	struct gc_vcenter_option opt[4];
	struct gc_observed *obs;
	struct gc_buf problems;
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct gc_diags diags = {0};
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_spec_load(&f->c, &diags, GC_SOURCE_DIR "/examples/roce-passthrough.yaml",
				      &err),
			 0);
	gc_diags_free(&diags);
	assert_int_equal(gc_graph_build(&f->g, f->c, &err), 0);
	f->res = calloc(f->g->nresources, sizeof(*f->res));
	for (size_t i = 0; i < f->g->nresources; i++)
		if (f->g->resources[i]->target->kind == GC_TARGET_VCENTER)
			f->res[f->nres++] = f->g->resources[i];

	/* vCenter as an apply leaves it: 8 hosts, worker-01 converged on esx01 */
	for (int i = 0; i < 8; i++) {
		snprintf(f->host_names[i], sizeof(f->host_names[i]), "esx%02d", i + 1);
		snprintf(f->host_morefs[i], sizeof(f->host_morefs[i]), "host-%d", 20 + i);
		f->hosts[i].name = f->host_names[i];
		f->hosts[i].moref = f->host_morefs[i];
		f->hosts[i].parent = "domain-c7";
	}
	f->dc = (struct gc_vcenter_datacenter){.moref = "datacenter-2", .name = "DC0"};
	f->dev[0] = (struct gc_vcenter_device){.key = 4000, .type = "VirtualVmxnet3",
					       .backing_type = "VirtualEthernetCardNetworkBackingInfo",
					       .network = "VM Network", .controller_key = 100,
					       .unit_number = 7};
	f->dev[1] = (struct gc_vcenter_device){.key = 4001, .type = "VirtualPCIPassthrough",
					       .backing_type = "VirtualPCIPassthroughDeviceBackingInfo",
					       .pci_id = "0000:3b:00.0", .device_id = "1db6",
					       .vendor_id = 4318, .controller_key = 100, .unit_number = 8};
	f->dev[2] = (struct gc_vcenter_device){.key = 4002, .type = "VirtualSriovEthernetCard",
					       .backing_type = "VirtualEthernetCardNetworkBackingInfo",
					       .network = "rdma-net", .sriov_pf = "0000:5e:00.0",
					       .controller_key = 100, .unit_number = 9};
	f->opt[0] = (struct gc_vcenter_option){"pciPassthru.use64bitMMIO", "TRUE"};
	f->opt[1] = (struct gc_vcenter_option){"pciPassthru.64bitMMIOSizeGB", "64"};
	/* set by hand in lower case: the same as the TRUE the spec writes */
	f->opt[2] = (struct gc_vcenter_option){"pciPassthru.allowP2P", "true"};
	f->vm[0] = (struct gc_vcenter_vm){.moref = "vm-60", .name = "worker-01", .host_moref = "host-20",
				       .power_state = "poweredOn", .firmware = "efi",
				       .reservation_locked = true, .reservation_locked_set = true,
				       .extra_config = f->opt, .nextra_config = 3,
				       .devices = f->dev, .ndevices = 3, .num_cpus = 16,
				       .memory_mb = 131072, .resource_pool = "resgroup-8"};
	f->vm[1] = (struct gc_vcenter_vm){.moref = "vm-10", .name = "ubuntu-22.04-template",
					  .host_moref = "host-20", .power_state = "poweredOff",
					  .firmware = "efi", .is_template = true, .num_cpus = 2,
					  .memory_mb = 4096};
	f->inv.vms = f->vm;
	f->inv.nvms = 2;
	f->inv.hosts = f->hosts;
	f->inv.nhosts = 8;
	f->inv.datacenters = &f->dc;
	f->inv.ndatacenters = 1;
	gc_observed_new(&f->obs);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	gc_observed_free(f->obs);
	gc_buf_free(&f->problems);
	free(f->res);
	gc_graph_free(f->g);
	gc_cluster_free(f->c);
	free(f);
	return 0;
}

static void record(struct fix *f)
{
	gc_vcdrv_record(f->obs, &f->inv, f->c, f->res, f->nres, &f->problems);
}

/* The desired properties of resource `id` that the observation does not
 * hold, as "key=observed" lines ("key=(none)" when absent), compared as
 * the planner compares them (VMX booleans in any case). */
static char *differences(struct fix *f, const char *id)
{
	const struct gc_resource *r = gc_graph_find(f->g, id);
	struct gc_buf b = GC_BUF_INIT;

	assert_non_null(r);
	if (gc_observed_resource(f->obs, id) == NULL)
		gc_buf_puts(&b, "absent\n");
	for (size_t i = 0; i < r->nprops; i++) {
		const char *v = gc_observed_get(f->obs, id, r->props[i].key);

		if (!gc_plan_value_same(r, v, r->props[i].value))
			gc_buf_printf(&b, "%s=%s\n", r->props[i].key, v ? v : "(none)");
	}
	gc_buf_puts(&b, "");
	return gc_buf_take(&b);
}

static void assert_same(struct fix *f, const char *id, const char *want)
{
	char *d = differences(f, id);

	assert_string_equal(d, want);
	free(d);
}

static void test_converged_vm_has_no_differences(void **state)
{
	struct fix *f = *state;
	static const char *const ids[] = {
		"vm/worker-01", "vm/worker-01/hw", "vm/worker-01/extra_config",
		"vm/worker-01/device.pci/0000:3b:00.0", "vm/worker-01/nic.vmxnet3/0",
		"vm/worker-01/nic.sriov/1", "vm/worker-01/power",
	};

	record(f);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		assert_same(f, ids[i], "");
	/* the other 7 VMs do not exist yet: absent, so the planner clones them */
	assert_null(gc_observed_resource(f->obs, "vm/worker-02"));
	assert_string_equal(f->problems.ptr ? f->problems.ptr : "", "");
	assert_int_equal(gc_observed_vm(f->obs, "worker-01")->power, GC_POWER_ON);
	assert_string_equal(gc_observed_vm(f->obs, "worker-01")->host, "esx01");
}

static void test_nics_match_by_type_not_position(void **state)
{
	struct fix *f = *state;

	/* an E1000 the template brought along, before the others in key order,
	 * and the SR-IOV card ahead of the vmxnet3: still the same VM */
	f->dev[3] = f->dev[0];
	f->dev[0] = (struct gc_vcenter_device){.key = 3999, .type = "VirtualE1000",
					       .backing_type = "VirtualEthernetCardNetworkBackingInfo",
					       .network = "VM Network", .controller_key = 100,
					       .unit_number = 6};
	f->dev[3].key = 4003;
	f->vm[0].ndevices = 4;
	record(f);
	assert_same(f, "vm/worker-01/nic.vmxnet3/0", "");
	assert_same(f, "vm/worker-01/nic.sriov/1", "");
}

static void test_drift_is_exactly_what_changed(void **state)
{
	struct fix *f = *state;

	f->opt[1].value = "32";
	f->vm[0].firmware = "bios";
	f->vm[0].reservation_locked = false;
	f->dev[2].network = "VM Network";
	f->dev[1].pci_id = "0000:af:00.0"; /* another GPU: the spec's is absent */
	f->vm[0].num_cpus = 8;
	f->vm[0].power_state = "poweredOff";
	record(f);
	assert_same(f, "vm/worker-01/extra_config", "pciPassthru.64bitMMIOSizeGB=32\n");
	assert_same(f, "vm/worker-01/hw", "firmware=bios\nmemory_reservation=none\n");
	assert_same(f, "vm/worker-01/nic.sriov/1", "network=VM Network\n");
	assert_same(f, "vm/worker-01/device.pci/0000:3b:00.0",
		    "absent\nhost_pci=(none)\ndevice=(none)\n");
	assert_same(f, "vm/worker-01", "cpus=8\n");
	assert_same(f, "vm/worker-01/power", "power=off\n");
}

static void test_a_template_of_the_same_name_is_not_the_vm(void **state)
{
	struct fix *f = *state;

	f->vm[0].is_template = true;
	record(f);
	assert_null(gc_observed_resource(f->obs, "vm/worker-01"));
	assert_null(gc_observed_vm(f->obs, "worker-01"));
}

static void test_problems_name_what_vcenter_lacks(void **state)
{
	struct fix *f = *state;

	f->inv.nhosts = 7; /* no esx08 */
	f->inv.nvms = 1;   /* no template */
	f->dc.name = "DC9";
	record(f);
	assert_string_equal(f->problems.ptr,
			    "vCenter has no datacenter 'DC0'\n"
			    "VM 'worker-02': no template or VM named 'ubuntu-22.04-template' to clone\n"
			    "VM 'worker-03': no template or VM named 'ubuntu-22.04-template' to clone\n"
			    "VM 'worker-04': no template or VM named 'ubuntu-22.04-template' to clone\n"
			    "VM 'worker-05': no template or VM named 'ubuntu-22.04-template' to clone\n"
			    "VM 'worker-06': no template or VM named 'ubuntu-22.04-template' to clone\n"
			    "VM 'worker-07': no template or VM named 'ubuntu-22.04-template' to clone\n"
			    "VM 'worker-08': host 'esx08' is not in vCenter\n"
			    "VM 'worker-08': no template or VM named 'ubuntu-22.04-template' to clone\n");
}

/* Issue 14, item 5: the example's VMs need EFI (passthrough GPUs); cloned
 * from a BIOS template, their OS would not boot.  worker-01 already runs
 * EFI (someone reinstalled it so): fine; the seven still to be cloned are
 * one problem naming the template, both firmwares and the first VMs; with
 * worker-01 showing the template's BIOS too, eight; with one VM, that one. */
static void test_firmware_must_match_the_template(void **state)
{
	struct fix *f = *state;

	f->vm[1].firmware = "bios";
	record(f);
	assert_string_equal(f->problems.ptr,
			    "VMs 'worker-02', 'worker-03', 'worker-04' and 4 more need efi firmware, "
			    "but their template 'ubuntu-22.04-template' has bios: the OS a clone "
			    "brings from it would not boot after the change; clone from a template "
			    "installed with efi firmware\n");
	gc_buf_reset(&f->problems);
	gc_observed_free(f->obs);
	gc_observed_new(&f->obs);
	f->vm[0].firmware = "bios";
	record(f);
	assert_non_null(strstr(f->problems.ptr, "VMs 'worker-01', 'worker-02', 'worker-03' and 5 "
						 "more need efi firmware"));
	gc_buf_reset(&f->problems);
	gc_observed_free(f->obs);
	gc_observed_new(&f->obs);
	f->nres = 0;
	for (size_t i = 0; i < f->g->nresources; i++)
		if (f->g->resources[i]->target->kind == GC_TARGET_VCENTER &&
		    f->g->resources[i]->vm != NULL &&
		    strcmp(f->g->resources[i]->vm, "worker-01") == 0)
			f->res[f->nres++] = f->g->resources[i];
	record(f);
	assert_string_equal(f->problems.ptr,
			    "VM 'worker-01' needs efi firmware, but its template "
			    "'ubuntu-22.04-template' has bios: the OS a clone brings from it would "
			    "not boot after the change; clone from a template installed with efi "
			    "firmware\n");
}

/* Every observed id under vm/worker-01/, one per line, in store order. */
static char *vm_ids(struct fix *f)
{
	struct gc_buf b = GC_BUF_INIT;

	for (size_t i = 0; i < gc_observed_nresources(f->obs); i++) {
		const struct gc_observed_resource *o = gc_observed_resource_at(f->obs, i);

		if (strncmp(o->id, "vm/worker-01/", 13) == 0)
			gc_buf_printf(&b, "%s\n", o->id);
	}
	gc_buf_puts(&b, "");
	return gc_buf_take(&b);
}

static void test_owned_devices_the_spec_does_not_name_are_recorded_for_removal(void **state)
{
	struct fix *f = *state;
	char *ids;

	/* added by hand: a second GPU, a vGPU, a second VF, a PVRDMA adapter,
	 * a second vmxnet3, a passthrough of a backing we do not know, and a
	 * GPU whose address vCenter sent in a shape we do not accept */
	f->dev[3] = (struct gc_vcenter_device){.key = 4003, .type = "VirtualPCIPassthrough",
					       .backing_type = "VirtualPCIPassthroughDeviceBackingInfo",
					       .pci_id = "0000:af:00.0", .vendor_id = 4318};
	f->dev[4] = (struct gc_vcenter_device){.key = 4004, .type = "VirtualPCIPassthrough",
					       .backing_type = "VirtualPCIPassthroughVmiopBackingInfo",
					       .vgpu = "grid_v100dx-32c"};
	f->dev[5] = f->dev[2];
	f->dev[5].key = 4005;
	f->dev[5].network = "VM Network";
	f->dev[6] = (struct gc_vcenter_device){.key = 4006, .type = "VirtualVmxnet3Vrdma",
					       .backing_type = "VirtualEthernetCardNetworkBackingInfo",
					       .network = "rdma-net", .device_protocol = "rocev2"};
	f->dev[7] = f->dev[0];
	f->dev[7].key = 4007;
	f->dev[8] = (struct gc_vcenter_device){.key = 4008, .type = "VirtualPCIPassthrough",
					       .backing_type = "VirtualPCIPassthroughPluginBackingInfo"};
	f->dev[9] = f->dev[3];
	f->dev[9].key = 4009;
	f->dev[9].pci_id = "0000:d8:00.0;reboot";
	/* the spec's GPU once more (a retry that added it twice) */
	f->dev[10] = f->dev[1];
	f->dev[10].key = 4010;
	f->vm[0].ndevices = 11;
	record(f);

	ids = vm_ids(f);
	assert_string_equal(ids, "vm/worker-01/power\n"
				 "vm/worker-01/hw\n"
				 "vm/worker-01/extra_config\n"
				 "vm/worker-01/device.pci/0000:3b:00.0\n"
				 "vm/worker-01/nic.vmxnet3/0\n"
				 "vm/worker-01/nic.sriov/1\n"
				 "vm/worker-01/device.pci/0000:af:00.0\n"
				 "vm/worker-01/device.vgpu/key-4004\n"
				 "vm/worker-01/nic.sriov/key-4005\n"
				 "vm/worker-01/nic.pvrdma/key-4006\n"
				 "vm/worker-01/device.pci/key-4009\n"
				 "vm/worker-01/device.pci/key-4010\n");
	free(ids);
	/* the spec's own devices are still the ones it claimed */
	assert_same(f, "vm/worker-01/device.pci/0000:3b:00.0", "");
	assert_same(f, "vm/worker-01/nic.sriov/1", "");
	assert_string_equal(gc_observed_get(f->obs, "vm/worker-01/device.pci/0000:af:00.0", "host_pci"),
			    "0000:af:00.0");
	assert_string_equal(gc_observed_get(f->obs, "vm/worker-01/device.vgpu/key-4004", "profile"),
			    "grid_v100dx-32c");
	assert_string_equal(gc_observed_get(f->obs, "vm/worker-01/nic.sriov/key-4005", "pf"),
			    "0000:5e:00.0");
	assert_string_equal(gc_observed_get(f->obs, "vm/worker-01/nic.sriov/key-4005", "network"),
			    "VM Network");
	assert_string_equal(gc_observed_get(f->obs, "vm/worker-01/nic.pvrdma/key-4006", "protocol"),
			    "rocev2");
	/* and the driver finds each by the same id, and nothing else */
	assert_ptr_equal(gc_vcdrv_extra_device(&f->vm[0], "worker-01",
					       "vm/worker-01/device.pci/0000:af:00.0"),
			 &f->dev[3]);
	assert_ptr_equal(gc_vcdrv_extra_device(&f->vm[0], "worker-01",
					       "vm/worker-01/device.pci/key-4009"),
			 &f->dev[9]);
	assert_ptr_equal(gc_vcdrv_extra_device(&f->vm[0], "worker-01",
					       "vm/worker-01/nic.pvrdma/key-4006"),
			 &f->dev[6]);
	assert_ptr_equal(gc_vcdrv_extra_device(&f->vm[0], "worker-01",
					       "vm/worker-01/device.pci/key-4010"),
			 &f->dev[10]);
	/* the address names the first device there, the spec's own */
	assert_ptr_equal(gc_vcdrv_extra_device(&f->vm[0], "worker-01",
					       "vm/worker-01/device.pci/0000:3b:00.0"),
			 &f->dev[1]);
	assert_null(gc_vcdrv_extra_device(&f->vm[0], "worker-01", "vm/worker-01/nic.vmxnet3/key-4007"));
	assert_null(gc_vcdrv_extra_device(&f->vm[0], "worker-01", "vm/worker-01/device.pci/key-4008"));
	assert_null(gc_vcdrv_extra_device(&f->vm[0], "worker-02", "vm/worker-01/device.pci/key-4009"));
}

/* The index finds what a scan finds: the first match in array order, a
 * template only where templates count, nothing for a name not there. */
static void test_sorted_lookups_find_what_a_scan_finds(void **state)
{
	struct gc_vcenter_vm vms[] = {
		{.moref = "vm-1", .name = "worker-02", .is_template = true},
		{.moref = "vm-2", .name = "worker-01"},
		{.moref = "vm-3", .name = "worker-02"},
		{.moref = "vm-4", .name = "a"},
		{.moref = "vm-5", .name = "worker-02"},
	};
	struct gc_vcenter_host hosts[] = {
		{.moref = "host-30", .name = "esx02"},
		{.moref = "host-10", .name = "esx01"},
		{.moref = "host-20", .name = "esx01"},
	};
	struct gc_vcenter_inventory inv = {.vms = vms, .nvms = 5, .hosts = hosts, .nhosts = 3};

	(void)state;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			gc_vcenter_inventory_index(&inv);
			assert_non_null(inv.vm_by_name);
		}
		assert_ptr_equal(gc_vcenter_inventory_vm(&inv, "worker-02"), &vms[0]);
		assert_ptr_equal(gc_vcenter_inventory_vm_not_template(&inv, "worker-02"), &vms[2]);
		assert_ptr_equal(gc_vcdrv_vm(&inv, "worker-01"), &vms[1]);
		assert_ptr_equal(gc_vcenter_inventory_vm(&inv, "a"), &vms[3]);
		assert_null(gc_vcenter_inventory_vm(&inv, "worker-0"));
		assert_null(gc_vcenter_inventory_vm(&inv, "zz"));
		assert_null(gc_vcenter_inventory_vm_not_template(&inv, "b"));
		assert_ptr_equal(gc_vcenter_inventory_host(&inv, "esx01"), &hosts[1]);
		assert_ptr_equal(gc_vcenter_inventory_host(&inv, "esx02"), &hosts[0]);
		assert_null(gc_vcenter_inventory_host(&inv, "esx03"));
		assert_ptr_equal(gc_vcenter_inventory_host_moref(&inv, "host-20"), &hosts[2]);
		assert_null(gc_vcenter_inventory_host_moref(&inv, "host-2"));
	}
	vms[2].is_template = true;
	vms[4].is_template = true;
	assert_null(gc_vcenter_inventory_vm_not_template(&inv, "worker-02"));
	gc_arena_free(&inv.arena);
}

/* Port groups are found by their own name: "prod/storage" is not "storage"
 * (an id is never cut at its last '/'), and both converge. */
static void test_portgroup_names_with_a_slash(void **state)
{
	static const char spec[] =
		"apiVersion: gpuclusterctl/v1\nkind: Cluster\nmetadata: {name: lab}\n"
		"credentials:\n  - {name: root, username: root, password_env: GC_ESXI_PASSWORD}\n"
		"vcenter: {url: \"https://127.0.0.1:8989/sdk\", datacenter: DC0, credentials: root, "
		"ca_file: /etc/gc/ca.pem}\n"
		"hosts:\n  - {name: esx01, address: 127.0.0.11, credentials: root}\n"
		"distributed_switches:\n  - name: prod\n    port_groups:\n"
		"      - {name: \"prod/storage\", vlan: 10}\n      - {name: storage, vlan: 20}\n";
	struct gc_vcenter_dvs dvs = {.moref = "dvs-9", .name = "prod", .max_mtu = 9000};
	struct gc_vcenter_network nets[2] = {
		{.moref = "dvportgroup-1", .name = "storage", .type = "DistributedVirtualPortgroup",
		 .dvs = "dvs-9", .vlan = 20},
		{.moref = "dvportgroup-2", .name = "prod/storage", .type = "DistributedVirtualPortgroup",
		 .dvs = "dvs-9", .vlan = 10},
	};
	struct gc_vcenter_inventory inv = {.networks = nets, .nnetworks = 2, .dvs = &dvs, .ndvs = 1};
	char path[] = "/tmp/gc-test-pg-XXXXXX";
	struct gc_diags diags = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_cluster *c = NULL;
	struct gc_graph *g = NULL;
	struct gc_observed *obs = NULL;
	struct gc_buf problems = GC_BUF_INIT;
	const struct gc_resource *res[8];
	size_t n = 0;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, spec, sizeof(spec) - 1), (ssize_t)(sizeof(spec) - 1));
	close(fd);
	assert_int_equal(gc_spec_load(&c, &diags, path, &err), 0);
	unlink(path);
	gc_diags_free(&diags);
	assert_int_equal(gc_graph_build(&g, c, &err), 0);
	for (size_t i = 0; i < g->nresources && n < 8; i++)
		if (g->resources[i]->target->kind == GC_TARGET_VCENTER)
			res[n++] = g->resources[i];
	assert_string_equal(gc_vcdrv_portgroup_name(gc_graph_find(g, "dvs/prod/portgroup/prod/storage")),
			    "prod/storage");
	assert_string_equal(gc_vcdrv_portgroup_name(gc_graph_find(g, "dvs/prod/portgroup/storage")),
			    "storage");
	gc_observed_new(&obs);
	gc_vcdrv_record(obs, &inv, c, res, n, &problems);
	assert_string_equal(gc_observed_get(obs, "dvs/prod/portgroup/prod/storage", "vlan"), "10");
	assert_string_equal(gc_observed_get(obs, "dvs/prod/portgroup/storage", "vlan"), "20");
	assert_string_equal(gc_observed_get(obs, "dvs/prod/portgroup/prod/storage", "dvswitch"), "prod");
	gc_observed_free(obs);
	gc_buf_free(&problems);
	gc_graph_free(g);
	gc_cluster_free(c);
}

static void test_dynamic_ids_parse_strictly(void **state)
{
	unsigned v = 0, d = 0;

	(void)state;
	assert_true(gc_vcdrv_pci_id("10de:1db4", &v, &d));
	assert_int_equal(v, 0x10de);
	assert_int_equal(d, 0x1db4);
	assert_true(gc_vcdrv_pci_id("15B3:A2D6", &v, &d));
	assert_int_equal(d, 0xa2d6);
	assert_false(gc_vcdrv_pci_id("10de:1db", &v, &d));
	assert_false(gc_vcdrv_pci_id("10de-1db4", &v, &d));
	assert_false(gc_vcdrv_pci_id("10de:1db4x", &v, &d));
	assert_false(gc_vcdrv_pci_id("", &v, &d));
}

/* The PVRDMA vmknic: the host's adapter of the spec's device name, its
 * switch and port group by uuid and key, the address as IPv4/prefix. */
static void test_vmknic_recorded_from_the_hosts_adapters(void **state)
{
	struct fix *f = *state;
	struct gc_vcenter_vnic vnics[3] = {
		{.device = "vmk0", .portgroup = "Management Network", .dhcp = true,
		 .ip = "127.0.0.1", .mask = "255.0.0.0"},
		{.device = "vmk1", .portgroup = "", .switch_uuid = "50 2a 8e", .portgroup_key =
		 "dvportgroup-12", .ip = "192.168.10.21", .mask = "255.255.254.0"},
		{.device = "vmk2", .portgroup = "", .switch_uuid = "50 2a 8e", .portgroup_key =
		 "dvportgroup-12", .dhcp = true},
	};
	struct gc_vcenter_dvs dvs = {.moref = "dvs-9", .name = "dvs-rdma", .uuid = "50 2a 8e"};
	struct gc_vcenter_network net = {.moref = "dvportgroup-12", .name = "pvrdma-pg",
					 .type = "DistributedVirtualPortgroup",
					 .portgroup_key = "dvportgroup-12", .dvs = "dvs-9"};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_resource *r[4];
	struct gc_graph *g;
	struct gc_target *t;
	const char *dev[4] = {"vmk1", "vmk2", "vmk0", "vmk7"};

	f->hosts[0].vnics = vnics;
	f->hosts[0].nvnics = 3;
	f->inv.dvs = &dvs;
	f->inv.ndvs = 1;
	f->inv.networks = &net;
	f->inv.nnetworks = 1;
	gc_graph_new(&g);
	t = gc_graph_add_target(g, GC_TARGET_VCENTER, GC_VCENTER_TARGET);
	for (int i = 0; i < 4; i++) {
		char id[64];

		snprintf(id, sizeof(id), "dvs/dvs-rdma/vmknic/esx01/%s", dev[i]);
		assert_int_equal(gc_graph_add(&r[i], g, GC_RES_DVS_VMKNIC, t, id, "esx01", NULL, 0,
					      &err),
				 0);
		gc_resource_set(g, r[i], "device", dev[i]);
		gc_vcdrv_record_vmknic(f->obs, &f->inv, f->c, r[i]);
	}
	assert_string_equal(gc_observed_get(f->obs, r[0]->id, "address"), "192.168.10.21/23");
	assert_string_equal(gc_observed_get(f->obs, r[0]->id, "dvswitch"), "dvs-rdma");
	assert_string_equal(gc_observed_get(f->obs, r[0]->id, "portgroup"), "pvrdma-pg");
	assert_string_equal(gc_observed_get(f->obs, r[0]->id, "host"), "esx01");
	assert_string_equal(gc_observed_get(f->obs, r[1]->id, "address"), "dhcp");
	/* vmk0: on a standard port group, no switch: an update the driver refuses */
	assert_string_equal(gc_observed_get(f->obs, r[2]->id, "portgroup"), "Management Network");
	assert_string_equal(gc_observed_get(f->obs, r[2]->id, "dvswitch"), "");
	assert_null(gc_observed_resource(f->obs, r[3]->id)); /* no vmk7: created */
	gc_graph_free(g);
}

/* A host with two uplinks on one switch (tests/data/spec/ok/
 * sriov-dvs-and-uplinks.yaml: esx01 gives vmnic4 and vmnic5): the graph
 * wants both as one set, the recorder sees every pNIC of the member's
 * proxy switch, and only a different set is a difference. */
static void test_every_uplink_of_a_host_is_one_set(void **state)
{
	const char *both[] = {"vmnic5", "vmnic4"}, *one[] = {"vmnic5"},
		   *three[] = {"vmnic4", "vmnic5", "vmnic10"};
	struct gc_vcenter_host host = {.moref = "host-20", .name = "esx01", .parent = "domain-c7"};
	struct gc_vcenter_dvs_member m = {.host = "host-20", .pnics = both, .npnics = 2};
	struct gc_vcenter_dvs dvs = {.moref = "dvs-9", .name = "dvs", .max_mtu = 1500,
				     .members = &m, .nmembers = 1};
	struct gc_vcenter_datacenter dc = {.moref = "datacenter-2", .name = "DC0"};
	struct gc_vcenter_inventory inv = {.hosts = &host, .nhosts = 1, .dvs = &dvs, .ndvs = 1,
					   .datacenters = &dc, .ndatacenters = 1};
	struct gc_diags diags = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_cluster *c = NULL;
	struct gc_graph *g = NULL;
	struct gc_observed *obs = NULL;
	struct gc_buf problems = GC_BUF_INIT;
	const struct gc_resource *r;
	size_t nkeys = 0;

	(void)state;
	assert_int_equal(gc_spec_load(&c, &diags, GC_SOURCE_DIR
				      "/tests/data/spec/ok/sriov-dvs-and-uplinks.yaml", &err),
			 0);
	gc_diags_free(&diags);
	assert_int_equal(gc_graph_build(&g, c, &err), 0);
	r = gc_graph_find(g, "dvs/dvs");
	assert_non_null(r);
	for (size_t i = 0; i < r->nprops; i++)
		nkeys += strcmp(r->props[i].key, "uplink.esx01") == 0;
	assert_int_equal(nkeys, 1);
	assert_string_equal(gc_resource_prop(r, "uplink.esx01"), "vmnic4,vmnic5");

	gc_observed_new(&obs);
	gc_vcdrv_record(obs, &inv, c, &r, 1, &problems);
	assert_string_equal(gc_observed_get(obs, "dvs/dvs", "uplink.esx01"), "vmnic4,vmnic5");
	assert_true(gc_plan_value_same(r, gc_observed_get(obs, "dvs/dvs", "uplink.esx01"),
				       gc_resource_prop(r, "uplink.esx01")));
	gc_observed_free(obs);

	m.pnics = one; /* one uplink taken away by hand */
	m.npnics = 1;
	gc_observed_new(&obs);
	gc_vcdrv_record(obs, &inv, c, &r, 1, &problems);
	assert_string_equal(gc_observed_get(obs, "dvs/dvs", "uplink.esx01"), "vmnic5");
	assert_false(gc_plan_value_same(r, "vmnic5", gc_resource_prop(r, "uplink.esx01")));
	gc_observed_free(obs);

	m.pnics = three; /* one more than the spec names: not the spec's set either */
	m.npnics = 3;
	gc_observed_new(&obs);
	gc_vcdrv_record(obs, &inv, c, &r, 1, &problems);
	assert_string_equal(gc_observed_get(obs, "dvs/dvs", "uplink.esx01"),
			    "vmnic4,vmnic5,vmnic10");
	assert_false(gc_plan_value_same(r, gc_observed_get(obs, "dvs/dvs", "uplink.esx01"),
					gc_resource_prop(r, "uplink.esx01")));
	gc_observed_free(obs);
	assert_string_equal(gc_buf_str(&problems), "");
	gc_buf_free(&problems);
	gc_graph_free(g);
	gc_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_converged_vm_has_no_differences, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nics_match_by_type_not_position, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drift_is_exactly_what_changed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_template_of_the_same_name_is_not_the_vm, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_problems_name_what_vcenter_lacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_firmware_must_match_the_template, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_owned_devices_the_spec_does_not_name_are_recorded_for_removal, setup,
			teardown),
		cmocka_unit_test(test_sorted_lookups_find_what_a_scan_finds),
		cmocka_unit_test(test_portgroup_names_with_a_slash),
		cmocka_unit_test(test_every_uplink_of_a_host_is_one_set),
		cmocka_unit_test(test_dynamic_ids_parse_strictly),
		cmocka_unit_test_setup_teardown(test_vmknic_recorded_from_the_hosts_adapters, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
