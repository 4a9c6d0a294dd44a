/*
 * test_options.c - vCenter advanced settings without a vCenter: the exact
 * QueryOptions and UpdateOptions bodies, the reply read back (the value
 * and its xsi:type; an InvalidName fault names no setting), and what the
 * recorder makes of vgpu.hotmigrate.enabled for examples/vgpu-pvrdma.yaml
 * (issue 14, item 11).  The round trip on vcsim is in test_vcenter.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../src/drivers/vcenter/soap.h"
#include "../../../src/drivers/vcenter/vcdrv.h"
#include "gc/graph.h"
#include "gc/observed.h"

#define REPLY_HEAD                                                                             \
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?><soapenv:Envelope "                         \
	"xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" "                         \
	"xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\" "                                      \
	"xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"><soapenv:Body>"
#define REPLY_TAIL "</soapenv:Body></soapenv:Envelope>"

static void test_exact_bodies(void **state)
{
	struct gc_vcenter_soap s;

	gc_vcenter_query_options_body(&s, "VpxSettings", "vgpu.hotmigrate.enabled");
	assert_string_equal(strstr(s.b.ptr, "<QueryOptions"),
			    "<QueryOptions xmlns=\"urn:vim25\"><_this type=\"OptionManager\">"
			    "VpxSettings</_this><name>vgpu.hotmigrate.enabled</name>");
	gc_vcenter_soap_free(&s);
	gc_vcenter_update_options_body(&s, "VpxSettings", "vgpu.hotmigrate.enabled", "true",
				       "boolean");
	assert_string_equal(strstr(s.b.ptr, "<UpdateOptions"),
			    "<UpdateOptions xmlns=\"urn:vim25\"><_this type=\"OptionManager\">"
			    "VpxSettings</_this><changedValue><key>vgpu.hotmigrate.enabled</key>"
			    "<value xsi:type=\"xsd:boolean\">true</value></changedValue>");
	gc_vcenter_soap_free(&s);
	(void)state;
}

static void test_reply_and_invalid_name(void **state)
{
	static const char reply[] =
		REPLY_HEAD "<QueryOptionsResponse xmlns=\"urn:vim25\">"
		"<returnval><key>vgpu.hotmigrate.enabledX</key><value xsi:type=\"xsd:string\">x</value>"
		"</returnval><returnval><key>vgpu.hotmigrate.enabled</key>"
		"<value xsi:type=\"xsd:boolean\">false</value></returnval>"
		"</QueryOptionsResponse>" REPLY_TAIL;
	static const char invalid[] =
		REPLY_HEAD "<soapenv:Fault><faultcode>ServerFaultCode</faultcode>"
		"<faultstring>A specified parameter was not correct: name</faultstring><detail>"
		"<InvalidNameFault xmlns=\"urn:vim25\" xsi:type=\"InvalidName\"><name>"
		"vgpu.hotmigrate.enabled</name></InvalidNameFault></detail></soapenv:Fault>" REPLY_TAIL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_setting set = {0};
	struct gc_arena a = {0};
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	char fault[512] = "";

	assert_int_equal(gc_vcenter_soap_parse("vCenter", "QueryOptions", 200, reply,
					       sizeof(reply) - 1, &doc, &ret, fault, sizeof(fault),
					       &err),
			 0);
	/* vcsim answers every key with that prefix: the exact one is taken */
	assert_int_equal(gc_vcenter_options_parse(&set, &a, ret, "vgpu.hotmigrate.enabled"), 1);
	assert_string_equal(set.key, "vgpu.hotmigrate.enabled");
	assert_string_equal(set.value, "false");
	assert_string_equal(set.type, "boolean");
	assert_int_equal(gc_vcenter_options_parse(&set, &a, ret, "vgpu.hotmigrate"), 0);
	xmlFreeDoc(doc);
	doc = NULL;
	assert_int_equal(gc_vcenter_soap_parse("vCenter", "QueryOptions", 500, invalid,
					       sizeof(invalid) - 1, &doc, &ret, fault, sizeof(fault),
					       &err),
			 GC_EREMOTE);
	assert_string_equal(fault, "A specified parameter was not correct: name (InvalidName)");
	gc_arena_free(&a);
	(void)state;
}

struct fix {
	struct gc_cluster *c;
	struct gc_graph *g;
	const struct gc_resource *res[1];
	struct gc_vcenter_inventory inv;
	struct gc_vcenter_setting set;
	struct gc_vcenter_datacenter dc;
	struct gc_observed *obs;
	struct gc_buf problems;
};

static void record(struct fix *f, const struct gc_vcenter_setting *s)
{
	gc_observed_free(f->obs);
	gc_observed_new(&f->obs);
	gc_buf_reset(&f->problems);
	f->inv.settings = s ? &f->set : NULL;
	f->inv.nsettings = s ? 1 : 0;
	if (s != NULL)
		f->set = *s;
	gc_vcdrv_record(f->obs, &f->inv, f->c, f->res, 1, &f->problems);
}

/* The example allows vMotion and has vGPU VMs: the setting is managed; as
 * vCenter lists it ("False", a boolean) it is drift, "True" is not, and a
 * vCenter without it (before 6.7 U1) is named as the problem. */
static void test_record_hotmigrate(void **state)
{
	struct gc_diags diags = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct fix f = {0};

	assert_int_equal(gc_spec_load(&f.c, &diags, GC_SOURCE_DIR "/examples/vgpu-pvrdma.yaml", &err),
			 0);
	gc_diags_free(&diags);
	assert_int_equal(gc_graph_build(&f.g, f.c, &err), 0);
	f.dc = (struct gc_vcenter_datacenter){.moref = "datacenter-2", .name = "DC0"};
	f.inv.datacenters = &f.dc;
	f.inv.ndatacenters = 1;
	f.res[0] = gc_graph_find(f.g, GC_VGPU_HOTMIGRATE_ID);
	assert_non_null(f.res[0]);
	assert_int_equal(f.res[0]->target->kind, GC_TARGET_VCENTER);

	record(&f, &(struct gc_vcenter_setting){"vgpu.hotmigrate.enabled", "False", "boolean"});
	assert_string_equal(gc_observed_get(f.obs, GC_VGPU_HOTMIGRATE_ID, "value"), "false");
	assert_string_equal(gc_observed_get(f.obs, GC_VGPU_HOTMIGRATE_ID, "key"),
			    "vgpu.hotmigrate.enabled");
	record(&f, &(struct gc_vcenter_setting){"vgpu.hotmigrate.enabled", "True", "boolean"});
	assert_string_equal(gc_observed_get(f.obs, GC_VGPU_HOTMIGRATE_ID, "value"), "true");
	assert_string_equal(gc_buf_str(&f.problems), "");
	record(&f, NULL);
	assert_null(gc_observed_resource(f.obs, GC_VGPU_HOTMIGRATE_ID));
	assert_string_equal(gc_buf_str(&f.problems),
			    "vCenter has no advanced setting 'vgpu.hotmigrate.enabled': vGPU vMotion "
			    "needs vCenter 6.7 Update 1 or later\n");
	gc_observed_free(f.obs);
	gc_buf_free(&f.problems);
	gc_graph_free(f.g);
	gc_cluster_free(f.c);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_bodies),
		cmocka_unit_test(test_reply_and_invalid_name),
		cmocka_unit_test(test_record_hotmigrate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
