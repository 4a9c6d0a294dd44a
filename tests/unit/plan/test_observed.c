/*
 * test_observed.c - the observed store and its JSON snapshot reader: what
 * is accepted, and the exact message for what is not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gc/observed.h"

static int load(struct gc_observed **o, const char *json, struct gc_error *err)
{
	return gc_observed_load_json_buffer(o, "obs.json", json, strlen(json), err);
}

static void test_load_ok(void **state)
{
	struct gc_observed *o = NULL;
	struct gc_error err = GC_ERROR_INIT;
	const char *json =
		"{\"version\": 1,\n"
		" \"resources\": {\"esx01/esxi.ntp\": {\"servers\": \"a,b\", \"enabled\": \"true\"},\n"
		"               \"esx01/esxi.firewall/pvrdma\": {}},\n"
		" \"hosts\": {\"esx01\": {\"maintenance\": true},\n"
		"           \"esx02\": {\"reboot_pending\": true, \"reboot_pending_why\": \"vib\",\n"
		"                     \"maintenance_ours\": true}},\n"
		" \"vms\": {\"worker-01\": {\"power\": \"on\", \"host\": \"esx01\"}}}";
	const struct gc_observed_resource *r;

	assert_int_equal(load(&o, json, &err), 0);
	assert_string_equal(gc_observed_get(o, "esx01/esxi.ntp", "servers"), "a,b");
	r = gc_observed_resource(o, "esx01/esxi.firewall/pvrdma");
	assert_non_null(r);
	assert_int_equal(r->nprops, 0);
	assert_null(gc_observed_resource(o, "esx02/esxi.ntp"));
	assert_true(gc_observed_host(o, "esx01")->maintenance);
	assert_true(gc_observed_host(o, "esx01")->reachable);
	assert_false(gc_observed_host(o, "esx01")->reboot_pending);
	assert_true(gc_observed_host(o, "esx02")->reboot_pending);
	assert_string_equal(gc_observed_host(o, "esx02")->reboot_pending_why, "vib");
	assert_true(gc_observed_host(o, "esx02")->maintenance_ours);
	assert_int_equal(gc_observed_vm(o, "worker-01")->power, GC_POWER_ON);
	assert_string_equal(gc_observed_vm(o, "worker-01")->host, "esx01");
	/* power is mirrored into the vm.power resource */
	assert_string_equal(gc_observed_get(o, "vm/worker-01/power", "power"), "on");
	assert_int_equal(gc_observed_nresources(o), 3);
	(void)state;
	gc_observed_free(o);
}

static void test_set_replaces(void **state)
{
	struct gc_observed *o;

	gc_observed_new(&o);
	gc_observed_set(o, "x", "k", "1");
	gc_observed_set(o, "x", "k", "2");
	assert_int_equal(gc_observed_resource(o, "x")->nprops, 1);
	assert_string_equal(gc_observed_get(o, "x", "k"), "2");
	(void)state;
	gc_observed_free(o);
}

/* render -> load -> render is a fixed point, and the load sees the same facts */
static void test_render_round_trip(void **state)
{
	struct gc_observed *o, *back = NULL;
	struct gc_buf a = GC_BUF_INIT, b = GC_BUF_INIT;
	struct gc_error err = GC_ERROR_INIT;

	gc_observed_new(&o);
	gc_observed_set(o, "esx01/esxi.ntp", "servers", "a,\"b\"\\c");
	gc_observed_add(o, "esx01/esxi.firewall/pvrdma");
	gc_observed_set_host(o, "esx01", true, true);
	gc_observed_set_host_pending(o, "esx01", true, "vib installed");
	gc_observed_set_host_ours(o, "esx01", true);
	gc_observed_set_vm(o, "worker-01", GC_POWER_OFF, "esx01", false);
	gc_observed_set_vm(o, "scratch", GC_POWER_ON, NULL, true);
	gc_observed_render_json(&a, o);
	assert_int_equal(gc_observed_load_json_buffer(&back, "a.json", a.ptr, a.len, &err), 0);
	gc_observed_render_json(&b, back);
	assert_string_equal(gc_buf_str(&a), gc_buf_str(&b));
	assert_string_equal(gc_observed_get(back, "esx01/esxi.ntp", "servers"), "a,\"b\"\\c");
	assert_true(gc_observed_host(back, "esx01")->maintenance_ours);
	assert_string_equal(gc_observed_host(back, "esx01")->reboot_pending_why, "vib installed");
	assert_true(gc_observed_vm(back, "scratch")->live_migratable);
	assert_null(gc_observed_vm(back, "scratch")->host);
	gc_buf_free(&a);
	gc_buf_free(&b);
	gc_observed_free(o);
	gc_observed_free(back);
	(void)state;
}

/* Learned desired values travel in snapshots as "learned", apart from the
 * resources: learning one creates no resource. */
static void test_learned_round_trip(void **state)
{
	const char *id = "esx01/esxi.vib/NVD-AIE-800_525.105.14.zip";
	struct gc_observed *o, *back = NULL;
	struct gc_buf a = GC_BUF_INIT;
	struct gc_error err = GC_ERROR_INIT;

	gc_observed_new(&o);
	gc_observed_render_json(&a, o);
	assert_null(strstr(gc_buf_str(&a), "learned")); /* nothing learned: no section */
	gc_buf_reset(&a);
	gc_observed_learn(o, id, "name", "NVD-AIE_ESXi_8.0.0_Driver");
	gc_observed_learn(o, id, "version", "525.105.14");
	assert_null(gc_observed_resource(o, id));
	assert_int_equal(gc_observed_nresources(o), 0);
	gc_observed_render_json(&a, o);
	assert_string_equal(gc_buf_str(&a),
			    "{\n  \"version\": 1,\n  \"resources\": {\n  },\n  \"hosts\": {\n  },\n"
			    "  \"vms\": {\n  },\n  \"learned\": {\n"
			    "    \"esx01/esxi.vib/NVD-AIE-800_525.105.14.zip\": {\n"
			    "      \"name\": \"NVD-AIE_ESXi_8.0.0_Driver\",\n"
			    "      \"version\": \"525.105.14\"\n    }\n  }\n}\n");
	assert_int_equal(gc_observed_load_json_buffer(&back, "a.json", a.ptr, a.len, &err), 0);
	assert_string_equal(gc_observed_learned(back, id, "version"), "525.105.14");
	assert_null(gc_observed_learned(back, id, "source"));
	assert_null(gc_observed_resource(back, id));
	gc_buf_free(&a);
	gc_observed_free(o);
	gc_observed_free(back);
	(void)state;
}

static void expect_error(const char *json, const char *msg)
{
	struct gc_observed *o = NULL;
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(load(&o, json, &err), GC_EINVAL);
	assert_null(o);
	assert_string_equal(err.msg, msg);
}

static void test_load_errors(void **state)
{
	expect_error("{\"version\": 2}", "obs.json: \"version\" must be 1");
	expect_error("{\"resources\": {}}", "obs.json: \"version\" must be 1");
	expect_error("[1]", "obs.json: expected a JSON object");
	expect_error("{\"version\": 1", "obs.json: invalid JSON: unexpected end of input");
	expect_error("{\"version\": 1} x", "obs.json: trailing data after the JSON document");
	expect_error("{\"version\": 1, \"resource\": {}}", "obs.json: top level: unknown key 'resource'");
	expect_error("{\"version\": 1, \"resources\": {\"a\": {\"k\": 1}}}",
		     "obs.json: resources.\"a\".k: expected a string");
	expect_error("{\"version\": 1, \"resources\": {\"a\": \"x\"}}",
		     "obs.json: resources.\"a\": expected an object");
	expect_error("{\"version\": 1, \"hosts\": {\"esx01\": {\"maintenance\": \"yes\"}}}",
		     "obs.json: hosts.\"esx01\".maintenance: expected true or false");
	expect_error("{\"version\": 1, \"hosts\": {\"esx01\": {\"maint\": true}}}",
		     "obs.json: hosts.\"esx01\": unknown key 'maint'");
	expect_error("{\"version\": 1, \"vms\": {\"w\": {\"power\": \"running\"}}}",
		     "obs.json: vms.\"w\".power: expected \"on\", \"off\", \"suspended\" or \"unknown\"");
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_ok),
		cmocka_unit_test(test_set_replaces),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_render_round_trip),
		cmocka_unit_test(test_learned_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
