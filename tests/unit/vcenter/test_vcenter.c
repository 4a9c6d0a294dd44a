/*
 * test_vcenter.c - the vCenter SOAP session and observation against a real
 * vcsim on loopback (its own lab dir, port 8992), TLS verified with the
 * lab's test CA.
 *
 * vcsim's default inventory (govmomi 0.24.2's VPX model): datacenter DC0,
 * standalone host DC0_H0 with VMs DC0_H0_VM0/1, cluster DC0_C0 of hosts
 * DC0_C0_H0..2 with VMs DC0_C0_RP0_VM0/1.  Cluster VMs are placed with
 * math/rand, which Go 1.19 seeds with 1, so their hosts are the same on
 * every start; so are the managed object ids.  tests/sim/vcsim/host-gpus.json
 * gives DC0_C0_H0 and DC0_H0 PCI passthrough devices and DC0_H0 vGPU types.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "gc/spec.h"
#include "gc/vcenter.h"

#define PORT_VCSIM 8992

static struct vcsim sim;

static int group_setup(void **state)
{
	return vcsim_setup(&sim, "test_vcenter", PORT_VCSIM,
			   "--host-gpus '" GC_SOURCE_DIR "/tests/sim/vcsim/host-gpus.json'");
}

static int group_teardown(void **state)
{
	vcsim_stop(&sim);
	return 0;
}

static struct gc_vcenter_opts lab_opts(void)
{
	struct gc_vcenter_opts o = vcsim_opts(&sim);

	o.connect_timeout_ms = 5000;
	o.timeout_ms = 20000;
	return o;
}

static struct gc_vcenter_conn *connect_lab(void)
{
	struct gc_vcenter_opts o = lab_opts();

	return vcsim_connect_opts(&o);
}

static void test_connect_with_ca_file(void **state)
{
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_https_stats st;

	assert_string_equal(gc_vcenter_target(vc), "vCenter (https://127.0.0.1:8992)");
	assert_string_equal(gc_vcenter_api_version(vc), "6.5");
	assert_string_equal(gc_vcenter_full_name(vc), "VMware vCenter Server 6.5.0 build-5973321");
	assert_int_equal(gc_vcenter_calls(vc, "RetrieveServiceContent"), 1);
	assert_int_equal(gc_vcenter_calls(vc, "Login"), 1);
	assert_int_equal(gc_vcenter_calls(vc, "Logout"), 0);
	gc_vcenter_https_stats(vc, &st);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.connections, 1);
	gc_vcenter_free(vc);
}

static void test_wrong_password(void **state)
{
	struct gc_vcenter_opts o = lab_opts();
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_conn *vc = NULL;

	/* Markup in the password proves the body is escaped: vcsim still reads
	 * a well-formed Login and refuses it. */
	setenv("GC_TEST_VC_PASSWORD", "wr<ng&\"pass'word>", 1);
	o.password_file = NULL;
	o.password_env = "GC_TEST_VC_PASSWORD";
	assert_int_equal(gc_vcenter_connect(&vc, &o, &err), GC_EAUTH);
	assert_null(vc);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8992): login as 'gcadmin' "
				     "refused: Login failure (InvalidLogin)");
	assert_null(strstr(err.msg, "wr<ng"));
	/* The right one from the environment works. */
	setenv("GC_TEST_VC_PASSWORD", sim.password, 1);
	gc_error_clear(&err);
	assert_int_equal(gc_vcenter_connect(&vc, &o, &err), 0);
	gc_vcenter_free(vc);
	unsetenv("GC_TEST_VC_PASSWORD");
}

static void test_named_vcenter_in_errors(void **state)
{
	struct gc_vcenter_opts o = lab_opts();
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_conn *vc = NULL;

	o.name = "vCenter 'vc01'";
	o.username = "nobody";
	assert_int_equal(gc_vcenter_connect(&vc, &o, &err), GC_EAUTH);
	assert_string_equal(err.msg, "vCenter 'vc01' (https://127.0.0.1:8992): login as 'nobody' "
				     "refused: Login failure (InvalidLogin)");
}

static void test_untrusted_certificate_refused(void **state)
{
	struct gc_vcenter_opts o = lab_opts();
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_conn *vc = NULL;

	o.ca_file = NULL;
	assert_int_equal(gc_vcenter_connect(&vc, &o, &err), GC_EHOSTKEY);
	assert_null(vc);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8992): certificate not trusted: "
				     "SSL certificate problem: unable to get local issuer certificate");
}

static void test_password_sources(void **state)
{
	struct gc_vcenter_opts o = lab_opts();
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_conn *vc = NULL;
	char path[700];
	FILE *f;

	/* One trailing newline is stripped from a password file. */
	snprintf(path, sizeof(path), "%s/password-nl", sim.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", sim.password);
	fclose(f);
	o.password_file = path;
	assert_int_equal(gc_vcenter_connect(&vc, &o, &err), 0);
	gc_vcenter_free(vc);

	o.password_file = NULL;
	o.password_env = "GC_TEST_VC_UNSET";
	unsetenv("GC_TEST_VC_UNSET");
	assert_int_equal(gc_vcenter_connect(&vc, &o, &err), GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8992): password environment "
				     "variable 'GC_TEST_VC_UNSET' is not set");

	/* A control character cannot travel in XML: refused before sending. */
	setenv("GC_TEST_VC_UNSET", "bad\x01pw", 1);
	gc_error_clear(&err);
	assert_int_equal(gc_vcenter_connect(&vc, &o, &err), GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8992): Login: a value holds a "
				     "control character XML cannot carry");
	unsetenv("GC_TEST_VC_UNSET");

	o.password_env = NULL;
	o.username = NULL;
	gc_error_clear(&err);
	assert_int_equal(gc_vcenter_connect(&vc, &o, &err), GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8992): no username");
}

static const char *const default_types[] = {
	"VirtualIDEController",  "VirtualIDEController",	"VirtualPS2Controller",
	"VirtualPCIController",  "VirtualSIOController",	"VirtualKeyboard",
	"VirtualPointingDevice", "VirtualMachineVideoCard", "VirtualMachineVMCIDevice",
	"ParaVirtualSCSIController", "VirtualCdrom",	"VirtualDisk",
	"VirtualE1000",
};

/* The 13 devices every default vcsim VM has, in vCenter's order. */
static void check_default_devices(const struct gc_vcenter_vm *vm)
{
	static const int keys[] = {200, 201, 300, 100, 400, 600, 700, 500, 12000, 202};
	const struct gc_vcenter_device *d = vm->devices;
	char label[64];

	assert_int_equal(vm->ndevices, GC_ARRAY_LEN(default_types));
	for (size_t i = 0; i < vm->ndevices; i++)
		assert_string_equal(d[i].type, default_types[i]);
	for (size_t i = 0; i < GC_ARRAY_LEN(keys); i++)
		assert_int_equal(d[i].key, keys[i]);
	assert_string_equal(d[0].label, "IDE 0");
	assert_string_equal(d[3].label, "PCI controller 0");
	assert_int_equal(d[3].controller_key, -1);
	assert_string_equal(d[8].label, "VMCI device");
	assert_int_equal(d[8].controller_key, 100);
	assert_int_equal(d[8].unit_number, 17);
	/* cdrom and disk keys are vcsim-generated: check their shape */
	snprintf(label, sizeof(label), "cdrom-%d", d[10].key);
	assert_string_equal(d[10].label, label);
	assert_string_equal(d[10].backing_type, "VirtualCdromAtapiBackingInfo");
	assert_int_equal(d[10].controller_key, 202);
	assert_string_equal(d[11].label, "disk-202-0");
	assert_string_equal(d[11].backing_type, "VirtualDiskFlatVer2BackingInfo");
	assert_int_equal(d[11].unit_number, 0);
	assert_int_equal(d[12].key, 4000);
	assert_string_equal(d[12].label, "ethernet-0");
	assert_string_equal(d[12].backing_type,
			    "VirtualEthernetCardDistributedVirtualPortBackingInfo");
	assert_string_equal(d[12].portgroup_key, "dvportgroup-13");
	assert_null(d[12].network);
	assert_int_equal(strlen(d[12].mac_address), 17);
	assert_int_equal(d[12].controller_key, 100);
	assert_int_equal(d[12].unit_number, 7);
	for (size_t i = 0; i < vm->ndevices; i++) {
		assert_null(d[i].pci_id);
		assert_null(d[i].vgpu);
		assert_null(d[i].device_protocol);
		assert_null(d[i].sriov_pf);
		assert_int_equal(d[i].vendor_id, 0);
	}
}

static void test_observe_default_inventory(void **state)
{
	static const struct {
		const char *moref, *name, *host_moref, *host;
	} want[] = {
		{"vm-57", "DC0_H0_VM0", "host-21", "DC0_H0"},
		{"vm-60", "DC0_H0_VM1", "host-21", "DC0_H0"},
		{"vm-63", "DC0_C0_RP0_VM0", "host-42", "DC0_C0_H1"},
		{"vm-66", "DC0_C0_RP0_VM1", "host-34", "DC0_C0_H0"},
	};
	static const char *const hosts[][2] = {
		{"host-21", "DC0_H0"}, {"host-34", "DC0_C0_H0"},
		{"host-42", "DC0_C0_H1"}, {"host-50", "DC0_C0_H2"},
	};
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_vcenter_observe(&inv, vc, &err), 0);
	assert_int_equal(inv->nhosts, GC_ARRAY_LEN(hosts));
	for (size_t i = 0; i < inv->nhosts; i++) {
		assert_string_equal(inv->hosts[i].moref, hosts[i][0]);
		assert_string_equal(inv->hosts[i].name, hosts[i][1]);
	}
	assert_int_equal(inv->nvms, GC_ARRAY_LEN(want));
	for (size_t i = 0; i < inv->nvms; i++) {
		const struct gc_vcenter_vm *vm = &inv->vms[i];

		assert_string_equal(vm->moref, want[i].moref);
		assert_string_equal(vm->name, want[i].name);
		assert_string_equal(vm->host_moref, want[i].host_moref);
		assert_string_equal(vm->host_name, want[i].host);
		assert_string_equal(vm->power_state, "poweredOn");
		assert_string_equal(vm->firmware, "bios");
		assert_false(vm->reservation_locked_set); /* vcsim leaves it unset */
		assert_false(vm->reservation_locked);
		assert_int_equal(vm->nextra_config, 1);
		assert_string_equal(vm->extra_config[0].key, "govcsim");
		assert_string_equal(gc_vcenter_vm_option(vm, "govcsim"), "TRUE");
		assert_null(gc_vcenter_vm_option(vm, "pciPassthru.use64bitMMIO"));
		check_default_devices(vm);
		assert_ptr_equal(gc_vcenter_inventory_vm(inv, want[i].name), vm);
	}
	assert_null(gc_vcenter_inventory_vm(inv, "DC0_H0_VM2"));
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

static void test_observe_host_inventory(void **state)
{
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_error err = GC_ERROR_INIT;
	const struct gc_vcenter_host *h;
	const struct gc_vcenter_passthru *p;

	assert_int_equal(gc_vcenter_observe(&inv, vc, &err), 0);
	assert_int_equal(gc_vcenter_calls(vc, "RetrievePropertiesEx"), 1);
	h = gc_vcenter_inventory_host(inv, "DC0_C0_H0");
	assert_non_null(h);
	assert_string_equal(h->moref, "host-34");
	assert_int_equal(h->npassthru, 3);
	assert_string_equal(h->passthru[0].id, "0000:3b:00.0");
	assert_true(h->passthru[0].enabled && h->passthru[0].capable && h->passthru[0].active);
	assert_string_equal(h->passthru[1].id, "0000:af:00.0");
	assert_true(h->passthru[1].enabled && h->passthru[1].capable);
	assert_false(h->passthru[1].active); /* enabled, reboot owed */
	p = gc_vcenter_host_passthru(h, "0000:d8:00.0");
	assert_ptr_equal(p, &h->passthru[2]);
	assert_false(p->enabled);
	assert_true(p->capable);
	assert_false(p->active);
	assert_null(gc_vcenter_host_passthru(h, "0000:00:00.0"));
	assert_int_equal(h->nvgpu_types, 0);
	assert_false(gc_vcenter_host_offers_vgpu(h, "grid_t4-16c"));

	h = gc_vcenter_inventory_host(inv, "DC0_H0");
	assert_non_null(h);
	assert_int_equal(h->npassthru, 1);
	assert_string_equal(h->passthru[0].id, "0000:3b:00.0");
	assert_false(h->passthru[0].enabled);
	assert_int_equal(h->nvgpu_types, 3);
	assert_string_equal(h->vgpu_types[0], "grid_t4-1q");
	assert_string_equal(h->vgpu_types[1], "grid_t4-16c");
	assert_string_equal(h->vgpu_types[2], "grid_t4-8c");
	assert_true(gc_vcenter_host_offers_vgpu(h, "grid_t4-16c"));
	assert_false(gc_vcenter_host_offers_vgpu(h, "grid_a100-40c"));

	/* vcsim's default model has neither */
	h = gc_vcenter_inventory_host(inv, "DC0_C0_H2");
	assert_non_null(h);
	assert_int_equal(h->npassthru, 0);
	assert_int_equal(h->nvgpu_types, 0);
	assert_null(gc_vcenter_inventory_host(inv, "DC0_C0_H3"));
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

static void test_one_round_trip_for_all_vms(void **state)
{
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_stats st;

	assert_int_equal(gc_vcenter_observe(&inv, vc, &err), 0);
	assert_int_equal(inv->nvms, 4);
	assert_int_equal(inv->round_trips, 1);
	assert_int_equal(gc_vcenter_calls(vc, "RetrievePropertiesEx"), 1);
	assert_int_equal(gc_vcenter_calls(vc, "ContinueRetrievePropertiesEx"), 0);
	gc_vcenter_https_stats(vc, &st);
	/* RetrieveServiceContent, Login, RetrievePropertiesEx on one connection */
	assert_int_equal(st.requests, 3);
	assert_int_equal(st.responses, 3);
	assert_int_equal(st.connections, 1);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

static void test_logout_ends_the_session(void **state)
{
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_vcenter_logout(vc, &err), 0);
	assert_int_equal(gc_vcenter_calls(vc, "Logout"), 1);
	assert_int_equal(gc_vcenter_logout(vc, &err), 0); /* already out: nothing sent */
	assert_int_equal(gc_vcenter_calls(vc, "Logout"), 1);
	/* vcsim answers an unauthenticated read with NotAuthenticated per
	 * object; the datacenter is the first object the traversal reaches. */
	assert_int_equal(gc_vcenter_observe(&inv, vc, &err), GC_EAUTH);
	assert_null(inv);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8992): RetrievePropertiesEx: "
				     "cannot read name of datacenter-2 (NotAuthenticated)");
	gc_vcenter_free(vc);
}

/* vcsim 0.24 has no /api: the login falls back to /rest.  Its /rest checks
 * only that user and password are non-empty, so a wrong password cannot be
 * refused there; an empty one can. */
static void test_rest_session(void **state)
{
	struct gc_vcenter_opts o = lab_opts();
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_response r;
	struct gc_https_stats st;

	assert_null(gc_vcenter_rest_flavour(vc));
	assert_int_equal(gc_vcenter_rest(vc, "GET", "/rest/com/vmware/cis/session", &r, &err),
			 GC_EAUTH);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8992): GET "
				     "/rest/com/vmware/cis/session: no REST session");
	gc_error_clear(&err);
	assert_int_equal(gc_vcenter_rest_login(vc, &o, &err), 0);
	assert_string_equal(gc_vcenter_rest_flavour(vc), "/rest");
	gc_vcenter_https_stats(vc, &st);
	/* RetrieveServiceContent, Login, POST /api/session (404), POST /rest/... */
	assert_int_equal(st.requests, 4);
	assert_int_equal(st.connections, 1);
	assert_int_equal(gc_vcenter_rest(vc, "GET", "/rest/com/vmware/cis/session", &r, &err), 0);
	assert_int_equal(r.status, 200);
	assert_memory_equal(r.body, "{\"value\":{\"user\":\"gcadmin\",", 27);
	gc_https_response_free(&r);
	assert_int_equal(gc_vcenter_rest_logout(vc, &err), 0);
	assert_null(gc_vcenter_rest_flavour(vc));
	assert_int_equal(gc_vcenter_rest_logout(vc, &err), 0); /* none: nothing sent */
	gc_vcenter_https_stats(vc, &st);
	assert_int_equal(st.requests, 6);
	gc_vcenter_free(vc);
}

static void test_rest_login_refused(void **state)
{
	struct gc_vcenter_opts o = lab_opts();
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_error err = GC_ERROR_INIT;

	setenv("GC_TEST_VC_EMPTY", "", 1);
	o.password_file = NULL;
	o.password_env = "GC_TEST_VC_EMPTY";
	assert_int_equal(gc_vcenter_rest_login(vc, &o, &err), GC_EAUTH);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8992): REST login as 'gcadmin' "
				     "refused (401 on /rest/com/vmware/cis/session)");
	assert_null(gc_vcenter_rest_flavour(vc));
	unsetenv("GC_TEST_VC_EMPTY");
	gc_vcenter_free(vc);
}

static void test_opts_from_spec(void **state)
{
	struct gc_vcenter v = {0};
	struct gc_credential c = {0};
	struct gc_vcenter_opts o;

	v.url = "https://vc01.example.com";
	v.ca_file = "/etc/gc/ca.pem";
	c.username = "administrator@vsphere.local";
	c.password_env = "GC_VC_PASSWORD";
	gc_vcenter_opts_from_spec(&o, &v, &c);
	assert_string_equal(o.url, "https://vc01.example.com");
	assert_string_equal(o.ca_file, "/etc/gc/ca.pem");
	assert_false(o.insecure);
	assert_string_equal(o.username, "administrator@vsphere.local");
	assert_string_equal(o.password_env, "GC_VC_PASSWORD");
	assert_null(o.password_file);
	assert_null(o.name);
}

/* An advanced setting on vcsim (issue 14, item 11): the default model has
 * no vgpu.hotmigrate.enabled (InvalidName: left out, as a vCenter before
 * 6.7 U1); UpdateOptions adds it as a boolean, and QueryOptions then
 * answers it with its xsi:type, and with the exact key only. */
static void test_advanced_setting_round_trip(void **state)
{
	static const char *const keys[] = {"vgpu.hotmigrate.enabled"};
	struct gc_vcenter_conn *vc = connect_lab();
	struct gc_vcenter_inventory *inv = vcsim_observe(vc);
	struct gc_error err = GC_ERROR_INIT;
	const struct gc_vcenter_setting *s;

	assert_int_equal(gc_vcenter_query_settings(inv, vc, keys, 1, &err), 0);
	assert_int_equal(inv->nsettings, 0);
	assert_null(gc_vcenter_inventory_setting(inv, keys[0]));
	assert_int_equal(gc_vcenter_update_setting(vc, keys[0], "true", "boolean", &err), 0);
	assert_int_equal(gc_vcenter_update_setting(vc, keys[0], "yes", "boolean", &err), GC_EINVAL);
	gc_error_clear(&err);
	gc_vcenter_inventory_free(inv);
	inv = vcsim_observe(vc);
	assert_int_equal(gc_vcenter_query_settings(inv, vc, keys, 1, &err), 0);
	s = gc_vcenter_inventory_setting(inv, keys[0]);
	assert_non_null(s);
	assert_string_equal(s->value, "true");
	assert_string_equal(s->type, "boolean");
	assert_int_equal(gc_vcenter_calls(vc, "QueryOptions"), 2);
	assert_int_equal(gc_vcenter_calls(vc, "UpdateOptions"), 1);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_with_ca_file),
		cmocka_unit_test(test_wrong_password),
		cmocka_unit_test(test_named_vcenter_in_errors),
		cmocka_unit_test(test_untrusted_certificate_refused),
		cmocka_unit_test(test_password_sources),
		cmocka_unit_test(test_observe_default_inventory),
		cmocka_unit_test(test_observe_host_inventory),
		cmocka_unit_test(test_one_round_trip_for_all_vms),
		cmocka_unit_test(test_logout_ends_the_session),
		cmocka_unit_test(test_rest_session),
		cmocka_unit_test(test_rest_login_refused),
		cmocka_unit_test(test_opts_from_spec),
		cmocka_unit_test(test_advanced_setting_round_trip),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
