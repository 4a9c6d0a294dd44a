/*
 * test_graph.c - the resource graph: ids, properties, flags, edges, the
 * cycle message, and that DOT and JSON output are accepted by their readers.
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

#include <json-c/json.h>

#include "fixture.h"
#include "gc/graph.h"

static struct gc_graph *build(struct gc_cluster *c)
{
	struct gc_graph *g = NULL;
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_graph_build(&g, c, &err), 0);
	return g;
}

static bool has_dep(const struct gc_resource *r, const char *before)
{
	for (size_t i = 0; i < r->ndeps; i++)
		if (strcmp(r->deps[i]->id, before) == 0)
			return true;
	return false;
}

static const struct gc_resource *get(struct gc_graph *g, const char *id)
{
	const struct gc_resource *r = gc_graph_find(g, id);

	if (r == NULL)
		fail_msg("no resource '%s'", id);
	return r;
}

/* Every resource of a one-host passthrough cluster, in insertion order. */
static void test_passthrough_resources(void **state)
{
	static const char *const want[] = {
		"esx01/esxi.ntp",
		"esx01/esxi.pci_passthru/0000:3b:00.0",
		"esx01/esxi.module_param/nmlx5_core",
		"esx01/esxi.nic_firmware/0000:5e:00.0",
		"dvs/rdma-dvs",
		"dvs/rdma-dvs/portgroup/rdma-pg",
		"vm/worker-01",
		"vm/worker-01/hw",
		"vm/worker-01/extra_config",
		"vm/worker-01/power",
		"vm/worker-01/device.pci/0000:3b:00.0",
		"vm/worker-01/nic.sriov/0",
		"sw01/switch.ecn",
		"sw01/switch.pool",
		"sw01/switch.ets",
		"sw01/switch.qos_trust",
		"sw01/switch.pfc",
		"sw01/switch.lldp",
		"guest/worker-01/driver",
		"guest/worker-01/rdma_stack",
		"guest/worker-01/peermem",
		"guest/worker-01/roce_qos",
	};
	struct gc_cluster *c = fx_cluster(1, 1, FX_PASSTHROUGH);
	struct gc_graph *g = build(c);

	assert_int_equal(g->nresources, GC_ARRAY_LEN(want));
	for (size_t i = 0; i < GC_ARRAY_LEN(want); i++)
		assert_string_equal(g->resources[i]->id, want[i]);
	assert_int_equal(g->ntargets, 4);
	assert_string_equal(g->targets[0]->name, "esx01");
	assert_int_equal(g->targets[1]->kind, GC_TARGET_VCENTER);
	assert_int_equal(g->targets[2]->kind, GC_TARGET_SWITCH);
	assert_int_equal(g->targets[3]->kind, GC_TARGET_GUEST);
	(void)state;
	gc_graph_free(g);
	fx_free(c);
}

static void test_passthrough_props_flags_edges(void **state)
{
	struct gc_cluster *c = fx_cluster(1, 2, FX_PASSTHROUGH);
	struct gc_graph *g = build(c);
	const struct gc_resource *r;

	r = get(g, "esx01/esxi.pci_passthru/0000:3c:00.0");
	assert_int_equal(r->kind, GC_RES_ESXI_PCI_PASSTHRU);
	assert_int_equal(r->flags, GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT);
	assert_string_equal(gc_resource_prop(r, "enabled"), "true");
	assert_string_equal(r->target->name, "esx01");

	r = get(g, "esx01/esxi.module_param/nmlx5_core");
	assert_string_equal(gc_resource_prop(r, "max_vfs"), "8,8");
	/* the PF's firmware: in the same window, before the parameters that
	 * make its VFs (issue 14, item 14) */
	assert_true(has_dep(r, "esx01/esxi.nic_firmware/0000:5e:00.0"));
	r = get(g, "esx01/esxi.nic_firmware/0000:5e:00.0");
	assert_int_equal(r->kind, GC_RES_ESXI_NIC_FIRMWARE);
	assert_int_equal(r->flags, GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT);
	assert_int_equal(r->nprops, 2);
	assert_string_equal(gc_resource_prop(r, "sriov_en"), "true");
	assert_string_equal(gc_resource_prop(r, "num_of_vfs"), "8");

	r = get(g, "vm/worker-01/extra_config");
	assert_int_equal(r->nprops, 3);
	assert_string_equal(r->props[0].key, "pciPassthru.use64bitMMIO");
	assert_string_equal(r->props[0].value, "TRUE");
	assert_string_equal(r->props[1].key, "pciPassthru.64bitMMIOSizeGB");
	assert_string_equal(r->props[1].value, "64");
	assert_string_equal(r->props[2].key, "pciPassthru.allowP2P");
	assert_string_equal(r->props[2].value, "TRUE"); /* the guides' spelling */
	assert_int_equal(r->flags, GC_RES_NEEDS_VM_OFF);
	assert_string_equal(r->host, "esx01");
	assert_string_equal(r->vm, "worker-01");
	assert_int_equal(r->target->kind, GC_TARGET_VCENTER);

	/* host preparation before VM devices; VM exists before devices before power */
	r = get(g, "vm/worker-01/device.pci/0000:3c:00.0");
	assert_true(has_dep(r, "esx01/esxi.pci_passthru/0000:3c:00.0"));
	assert_true(has_dep(r, "vm/worker-01/extra_config"));
	assert_false(has_dep(r, "esx01/esxi.pci_passthru/0000:3b:00.0"));
	r = get(g, "vm/worker-01/nic.sriov/0");
	assert_true(has_dep(r, "esx01/esxi.module_param/nmlx5_core"));
	assert_true(has_dep(r, "dvs/rdma-dvs/portgroup/rdma-pg"));
	r = get(g, "vm/worker-01/power");
	assert_true(has_dep(r, "vm/worker-01/device.pci/0000:3b:00.0"));
	assert_true(has_dep(r, "vm/worker-01/nic.sriov/0"));
	assert_true(has_dep(get(g, "vm/worker-01/hw"), "vm/worker-01"));
	/* guest after power-on; the driver and the RDMA stack before peer memory;
	 * the driver needs the guest's reboot, peer memory comes after it */
	assert_true(has_dep(get(g, "guest/worker-01/driver"), "vm/worker-01/power"));
	assert_true(has_dep(get(g, "guest/worker-01/rdma_stack"), "vm/worker-01/power"));
	assert_true(has_dep(get(g, "guest/worker-01/peermem"), "guest/worker-01/driver"));
	assert_true(has_dep(get(g, "guest/worker-01/peermem"), "guest/worker-01/rdma_stack"));
	assert_int_equal(get(g, "guest/worker-01/driver")->flags, GC_RES_NEEDS_REBOOT);
	assert_int_equal(get(g, "guest/worker-01/peermem")->flags, GC_RES_AFTER_REBOOT);
	assert_string_equal(gc_resource_prop(get(g, "guest/worker-01/peermem"), "module"),
			    "nvidia_peermem");
	assert_true(has_dep(get(g, "dvs/rdma-dvs/portgroup/rdma-pg"), "dvs/rdma-dvs"));
	/* the switch is independent */
	assert_int_equal(get(g, "sw01/switch.pfc")->ndeps, 0);
	assert_int_equal(get(g, "sw01/switch.pfc")->nrdeps, 0);
	assert_false(g->vms[0].live_migratable);
	assert_string_equal(g->vms[0].pinned_by, "passthrough GPU 0000:3b:00.0");
	(void)state;
	gc_graph_free(g);
	fx_free(c);
}

/* An ESXi 6.7 host (issue 14, item 1): passthrough and NTP are the same
 * resources, flags and edges, on the vCenter target naming the host */
static void test_esxi67_host_side_via_vcenter(void **state)
{
	struct gc_cluster *c = fx_cluster(1, 1, FX_PASSTHROUGH);
	struct gc_graph *g;
	const struct gc_resource *r;

	c->hosts[0].passthru_via_vcenter = c->hosts[0].ntp_via_vcenter = true;
	g = build(c);
	r = get(g, "esx01/esxi.pci_passthru/0000:3b:00.0");
	assert_int_equal(r->target->kind, GC_TARGET_VCENTER);
	assert_string_equal(r->host, "esx01");
	assert_null(r->vm);
	assert_int_equal(r->flags, GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT);
	assert_string_equal(gc_resource_prop(r, "enabled"), "true");
	r = get(g, "esx01/esxi.ntp");
	assert_int_equal(r->target->kind, GC_TARGET_VCENTER);
	assert_string_equal(r->host, "esx01");
	assert_string_equal(gc_resource_prop(r, "servers"), "ntp.example.com");
	assert_int_equal(get(g, "esx01/esxi.module_param/nmlx5_core")->target->kind,
			 GC_TARGET_ESXI);
	assert_true(has_dep(get(g, "vm/worker-01/device.pci/0000:3b:00.0"),
			    "esx01/esxi.pci_passthru/0000:3b:00.0"));
	(void)state;
	gc_graph_free(g);
	fx_free(c);
}

/* A host that follows a RoCE switch: nmlx5_core gets the switch's DSCP
 * trust, PFC on its priority and ECN beside max_vfs, in one resource (one
 * `parameters set`, one reboot); a PVRDMA-only host gets them without
 * max_vfs; a switch without PFC gives no pfctx/pfcrx. */
static void test_nmlx5_roce_params(void **state)
{
	static const char *const want[][2] = {
		{"module", "nmlx5_core"}, {"max_vfs", "8,8"}, {"trust_state", "2"},
		{"pfctx", "0x08"},       {"pfcrx", "0x08"},   {"ecn", "1"},
	};
	struct gc_cluster *c = fx_cluster(1, 1, FX_PASSTHROUGH);
	struct gc_cluster *v = fx_cluster(1, 1, FX_VGPU);
	struct gc_graph *g;
	const struct gc_resource *r;

	c->hosts[0].roce_switch = &c->switches[0];
	g = build(c);
	r = get(g, "esx01/esxi.module_param/nmlx5_core");
	assert_int_equal(r->nprops, GC_ARRAY_LEN(want));
	for (size_t i = 0; i < GC_ARRAY_LEN(want); i++) {
		assert_string_equal(r->props[i].key, want[i][0]);
		assert_string_equal(r->props[i].value, want[i][1]);
	}
	assert_int_equal(r->flags, GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT);
	assert_string_equal(r->summary, "SR-IOV virtual functions and lossless RoCE (nmlx5_core)");
	gc_graph_free(g);

	/* no roce_switch: a PVRDMA host has no nmlx5_core resource at all */
	g = build(v);
	assert_null(gc_graph_find(g, "esx01/esxi.module_param/nmlx5_core"));
	gc_graph_free(g);
	v->hosts[0].roce_switch = &v->switches[0];
	v->switches[0].roce->priority = 5;
	v->switches[0].roce->pfc = false;
	g = build(v);
	r = get(g, "esx01/esxi.module_param/nmlx5_core");
	assert_null(gc_resource_prop(r, "max_vfs"));
	assert_null(gc_resource_prop(r, "pfctx"));
	assert_string_equal(gc_resource_prop(r, "trust_state"), "2");
	assert_string_equal(gc_resource_prop(r, "ecn"), "1");
	assert_string_equal(r->summary, "lossless RoCE (nmlx5_core)");
	gc_graph_free(g);
	v->switches[0].roce->pfc = true;
	g = build(v);
	assert_string_equal(gc_resource_prop(get(g, "esx01/esxi.module_param/nmlx5_core"), "pfcrx"),
			    "0x20");
	gc_graph_free(g);
	fx_free(c);
	fx_free(v);
	(void)state;
}

/* The map form of vmknic: vCenter's adapter after the switch and port
 * group, before the host's tag; the string form has none. */
static void test_pvrdma_vmknic_created_before_its_tag(void **state)
{
	struct gc_cluster *c = fx_cluster(2, 1, FX_VGPU);
	struct gc_vmknic k = {.name = "vmk1", .portgroup = "rdma-pg", .address = "192.168.10.21/24"};
	struct gc_graph *g;
	const struct gc_resource *r;

	k.pg = &c->dvswitches[0].portgroups[0];
	c->hosts[0].nics[0].vmknic_create = &k;
	g = build(c);
	r = get(g, "dvs/rdma-dvs/vmknic/esx01/vmk1");
	assert_int_equal(r->kind, GC_RES_DVS_VMKNIC);
	assert_string_equal(r->target->name, "vcenter");
	assert_string_equal(gc_resource_prop(r, "host"), "esx01");
	assert_string_equal(gc_resource_prop(r, "dvswitch"), "rdma-dvs");
	assert_string_equal(gc_resource_prop(r, "portgroup"), "rdma-pg");
	assert_string_equal(gc_resource_prop(r, "device"), "vmk1");
	assert_string_equal(gc_resource_prop(r, "address"), "192.168.10.21/24");
	assert_int_equal(r->flags, 0);
	assert_true(has_dep(r, "dvs/rdma-dvs"));
	assert_true(has_dep(r, "dvs/rdma-dvs/portgroup/rdma-pg"));
	assert_true(has_dep(get(g, "esx01/esxi.advanced/Net.PVRDMAVmknic"),
			    "dvs/rdma-dvs/vmknic/esx01/vmk1"));
	assert_null(gc_graph_find(g, "dvs/rdma-dvs/vmknic/esx02/vmk1"));
	(void)state;
	gc_graph_free(g);
	fx_free(c);
}

/* A host with two uplinks on one switch: one uplink.<host> holding both,
 * sorted (vmnic4 before vmnic10), and its vmknic made once. */
static void test_two_uplinks_of_one_host_are_one_set(void **state)
{
	struct gc_cluster *c = fx_cluster(2, 1, FX_VGPU);
	struct gc_vmknic k = {.name = "vmk1", .portgroup = "rdma-pg", .address = "192.168.10.21/24"};
	struct gc_dvs_uplink up[3];
	struct gc_graph *g;
	const struct gc_resource *r;
	size_t nkeys = 0;

	up[0] = c->dvswitches[0].uplinks[0]; /* esx01 vmnic4 */
	up[0].nic = "vmnic10";
	up[1] = c->dvswitches[0].uplinks[1]; /* esx02 vmnic4 */
	up[2] = c->dvswitches[0].uplinks[0];
	c->dvswitches[0].uplinks = up;
	c->dvswitches[0].nuplinks = 3;
	k.pg = &c->dvswitches[0].portgroups[0];
	c->hosts[0].nics[0].vmknic_create = &k;
	g = build(c);
	r = get(g, "dvs/rdma-dvs");
	for (size_t i = 0; i < r->nprops; i++)
		nkeys += strncmp(r->props[i].key, "uplink.", 7) == 0;
	assert_int_equal(nkeys, 2);
	assert_string_equal(gc_resource_prop(r, "uplink.esx01"), "vmnic4,vmnic10");
	assert_string_equal(gc_resource_prop(r, "uplink.esx02"), "vmnic4");
	assert_non_null(get(g, "dvs/rdma-dvs/vmknic/esx01/vmk1"));
	assert_true(has_dep(get(g, "esx01/esxi.advanced/Net.PVRDMAVmknic"), "dvs/rdma-dvs"));
	(void)state;
	gc_graph_free(g);
	fx_free(c);
}

static void test_vgpu_edges(void **state)
{
	struct gc_cluster *c = fx_cluster(2, 1, FX_VGPU);
	struct gc_graph *g = build(c);
	const struct gc_resource *r;

	/* the VIB before the graphics type and ECC (nvidia-smi ships in it) */
	assert_true(has_dep(get(g, "esx01/esxi.graphics"), "esx01/esxi.vib/NVD-VGPU-800"));
	assert_true(has_dep(get(g, "esx01/esxi.gpu_ecc/0000:3b:00.0"), "esx01/esxi.vib/NVD-VGPU-800"));
	r = get(g, "esx01/esxi.gpu_ecc/0000:3b:00.0");
	assert_string_equal(gc_resource_prop(r, "ecc"), "disabled");
	r = get(g, "vm/worker-01/device.vgpu/0");
	assert_string_equal(gc_resource_prop(r, "profile"), "grid_t4-16c");
	assert_true(has_dep(r, "esx01/esxi.graphics"));
	assert_true(has_dep(r, "esx01/esxi.gpu_ecc/0000:3b:00.0"));
	/* dvs before portgroup before the PVRDMA NIC; vmknic tag + firewall first */
	r = get(g, "vm/worker-02/nic.pvrdma/0");
	assert_true(has_dep(r, "dvs/rdma-dvs/portgroup/rdma-pg"));
	assert_true(has_dep(r, "esx02/esxi.advanced/Net.PVRDMAVmknic"));
	assert_true(has_dep(r, "esx02/esxi.firewall/pvrdma"));
	assert_true(has_dep(get(g, "esx02/esxi.advanced/Net.PVRDMAVmknic"), "dvs/rdma-dvs"));
	r = get(g, "dvs/rdma-dvs");
	assert_string_equal(gc_resource_prop(r, "uplink.esx02"), "vmnic4");
	assert_int_equal(get(g, "esx01/esxi.firewall/pvrdma")->flags, 0);
	assert_true(g->vms[1].live_migratable);
	assert_null(g->vms[1].pinned_by);
	(void)state;
	gc_graph_free(g);
	fx_free(c);
}

static void test_duplicate_id(void **state)
{
	struct gc_graph *g;
	struct gc_resource *r;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_target *t;

	gc_graph_new(&g);
	t = gc_graph_add_target(g, GC_TARGET_ESXI, "esx01");
	assert_ptr_equal(gc_graph_add_target(g, GC_TARGET_ESXI, "esx01"), t);
	assert_int_equal(gc_graph_add(&r, g, GC_RES_ESXI_NTP, t, "esx01/esxi.ntp", "esx01", NULL, 0, &err), 0);
	assert_int_equal(gc_graph_add(&r, g, GC_RES_ESXI_NTP, t, "esx01/esxi.ntp", "esx01", NULL, 0, &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "duplicate resource id 'esx01/esxi.ntp'");
	assert_int_equal(g->nresources, 1);
	(void)state;
	gc_graph_free(g);
}

static void test_cycle_names_ids(void **state)
{
	struct gc_graph *g;
	struct gc_resource *a, *b, *c, *d;
	struct gc_error err = GC_ERROR_INIT;
	const struct gc_resource **order = NULL;
	struct gc_target *t;

	gc_graph_new(&g);
	t = gc_graph_add_target(g, GC_TARGET_ESXI, "esx01");
	assert_int_equal(gc_graph_add(&d, g, GC_RES_ESXI_NTP, t, "esx01/esxi.ntp", "esx01", NULL, 0, &err), 0);
	assert_int_equal(gc_graph_add(&a, g, GC_RES_ESXI_VIB, t, "a", "esx01", NULL, 0, &err), 0);
	assert_int_equal(gc_graph_add(&b, g, GC_RES_ESXI_GRAPHICS, t, "b", "esx01", NULL, 0, &err), 0);
	assert_int_equal(gc_graph_add(&c, g, GC_RES_ESXI_GPU_ECC, t, "c", "esx01", NULL, 0, &err), 0);
	gc_graph_add_edge(g, d, a);
	gc_graph_add_edge(g, a, b);
	gc_graph_add_edge(g, b, c);
	gc_graph_add_edge(g, c, a);
	gc_graph_add_edge(g, c, a); /* duplicate: ignored */
	assert_int_equal(g->nedges, 4);
	assert_int_equal(gc_graph_toposort(&order, g, &err), GC_ECYCLE);
	assert_null(order);
	assert_string_equal(err.msg, "dependency cycle: a -> b -> c -> a");
	(void)state;
	gc_graph_free(g);
}

static void test_toposort_order(void **state)
{
	struct gc_cluster *c = fx_cluster(1, 1, FX_PASSTHROUGH);
	struct gc_graph *g = build(c);
	const struct gc_resource **order = NULL;
	struct gc_error err = GC_ERROR_INIT;
	size_t *pos = calloc(g->nresources, sizeof(*pos));

	assert_int_equal(gc_graph_toposort(&order, g, &err), 0);
	for (size_t i = 0; i < g->nresources; i++)
		pos[order[i]->index] = i;
	for (size_t i = 0; i < g->nresources; i++)
		for (size_t d = 0; d < g->resources[i]->ndeps; d++)
			assert_true(pos[g->resources[i]->deps[d]->index] < pos[i]);
	free(pos);
	free((void *)order);
	(void)state;
	gc_graph_free(g);
	fx_free(c);
}

static void test_dot_renders(void **state)
{
	struct gc_cluster *c = fx_cluster(2, 2, FX_VGPU);
	struct gc_graph *g = build(c);
	struct gc_buf b = GC_BUF_INIT;
	char path[] = "/tmp/gc-test-dot-XXXXXX";
	int fd;
	FILE *f;

	gc_graph_render_dot(&b, g);
	assert_non_null(strstr(gc_buf_str(&b), "\"esx01/esxi.vib/NVD-VGPU-800\" -> \"esx01/esxi.graphics\";"));
	assert_non_null(strstr(gc_buf_str(&b), "label=\"esxi esx01\";"));
	if (system("command -v dot >/dev/null 2>&1") != 0) {
		gc_buf_free(&b);
		gc_graph_free(g);
		fx_free(c);
		skip();
	}
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(gc_buf_str(&b), f);
	fclose(f);
	{
		char *cmd = gc_xasprintf("dot -Tsvg '%s' -o /dev/null", path);

		assert_int_equal(system(cmd), 0);
		free(cmd);
	}
	unlink(path);
	(void)state;
	gc_buf_free(&b);
	gc_graph_free(g);
	fx_free(c);
}

static void test_json_parses(void **state)
{
	struct gc_cluster *c = fx_cluster(1, 1, FX_PASSTHROUGH);
	struct gc_graph *g = build(c);
	struct gc_buf b = GC_BUF_INIT;
	json_object *root, *v, *r0;

	gc_graph_render_json(&b, g);
	root = json_tokener_parse(gc_buf_str(&b));
	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "format_version", &v));
	assert_int_equal(json_object_get_int(v), 1);
	assert_true(json_object_object_get_ex(root, "resources", &v));
	assert_int_equal(json_object_array_length(v), g->nresources);
	r0 = json_object_array_get_idx(v, 1);
	assert_true(json_object_object_get_ex(r0, "id", &v));
	assert_string_equal(json_object_get_string(v), "esx01/esxi.pci_passthru/0000:3b:00.0");
	assert_true(json_object_object_get_ex(r0, "source", &v));
	assert_string_equal(json_object_get_string(v), "fixture.yaml:100:3");
	json_object_put(root);
	(void)state;
	gc_buf_free(&b);
	gc_graph_free(g);
	fx_free(c);
}

/* Linear growth: 2,000 hosts x (8 GPUs + 2 NICs + 1 VM); no timing asserted. */
static void test_scale(void **state)
{
	struct gc_cluster *c = fx_cluster(2000, 8, FX_PASSTHROUGH);
	uint64_t t0 = gc_now_ns();
	struct gc_graph *g = build(c);

	printf("# graph of 2000 hosts: %zu resources, %zu edges in %.3f s\n", g->nresources,
	       g->nedges, (double)(gc_now_ns() - t0) / 1e9);
	assert_int_equal(g->nresources, 2000 * 28 + 8);
	(void)state;
	gc_graph_free(g);
	fx_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_passthrough_resources),
		cmocka_unit_test(test_passthrough_props_flags_edges),
		cmocka_unit_test(test_esxi67_host_side_via_vcenter),
		cmocka_unit_test(test_nmlx5_roce_params),
		cmocka_unit_test(test_vgpu_edges),
		cmocka_unit_test(test_pvrdma_vmknic_created_before_its_tag),
		cmocka_unit_test(test_two_uplinks_of_one_host_are_one_set),
		cmocka_unit_test(test_duplicate_id),
		cmocka_unit_test(test_cycle_names_ids),
		cmocka_unit_test(test_toposort_order),
		cmocka_unit_test(test_dot_renders),
		cmocka_unit_test(test_json_parses),
		cmocka_unit_test(test_scale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
