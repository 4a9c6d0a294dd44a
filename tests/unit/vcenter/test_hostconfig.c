/*
 * test_hostconfig.c - an ESXi 6.x host's passthrough and NTP through
 * vCenter (issue 14, item 1) without a vCenter: the exact
 * UpdatePassthruConfig, UpdateDateTimeConfig and service bodies, a
 * RetrievePropertiesEx reply read into the inventory (the host's
 * configuration objects, NTP servers, the ntpd service), and what the
 * recorder makes of it for tests/data/spec/ok/esxi67-mixed.yaml.  The
 * round trip on vcsim is tests/integration/test_esxi67.py.
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

/* The two hosts as vCenter answers after the 6.7 host's apply: passthrough
 * configured, two NTP servers, ntpd running with policy on (vSphere API
 * reference shapes: HostPciPassthruInfo, HostDateTimeInfo, HostServiceInfo). */
#define MOREF(name, type, id)                                                                  \
	"<propSet><name>" name "</name><val type=\"" type "\" "                                \
	"xsi:type=\"ManagedObjectReference\">" id "</val></propSet>"
static const char reply[] =
	REPLY_HEAD "<RetrievePropertiesExResponse xmlns=\"urn:vim25\"><returnval>"
	"<objects><obj type=\"Datacenter\">datacenter-2</obj>"
	"<propSet><name>name</name><val xsi:type=\"xsd:string\">DC0</val></propSet></objects>"
	"<objects><obj type=\"HostSystem\">host-21</obj>"
	"<propSet><name>name</name><val xsi:type=\"xsd:string\">esx67</val></propSet>"
	MOREF("configManager.pciPassthruSystem", "HostPciPassthruSystem", "pciPassthruSystem-21")
	MOREF("configManager.dateTimeSystem", "HostDateTimeSystem", "dateTimeSystem-21")
	MOREF("configManager.serviceSystem", "HostServiceSystem", "serviceSystem-21")
	"<propSet><name>config.pciPassthruInfo</name><val xsi:type=\"ArrayOfHostPciPassthruInfo\">"
	"<HostPciPassthruInfo xsi:type=\"HostPciPassthruInfo\"><id>0000:3b:00.0</id>"
	"<dependentDevice>0000:3b:00.0</dependentDevice><passthruEnabled>true</passthruEnabled>"
	"<passthruCapable>true</passthruCapable><passthruActive>false</passthruActive>"
	"</HostPciPassthruInfo></val></propSet>"
	"<propSet><name>config.dateTimeInfo</name><val xsi:type=\"HostDateTimeInfo\">"
	"<timeZone><key>UTC</key><name>UTC</name><description></description>"
	"<gmtOffset>0</gmtOffset></timeZone><ntpConfig><server>ntp1.lab.example</server>"
	"<server>ntp2.lab.example</server></ntpConfig></val></propSet>"
	"<propSet><name>config.service</name><val xsi:type=\"HostServiceInfo\">"
	"<service><key>DCUI</key><label>Direct Console UI</label><required>false</required>"
	"<uninstallable>false</uninstallable><running>true</running><policy>on</policy></service>"
	"<service><key>ntpd</key><label>NTP Daemon</label><required>false</required>"
	"<uninstallable>false</uninstallable><running>true</running><ruleset>ntpClient</ruleset>"
	"<policy>on</policy></service></val></propSet></objects>"
	"<objects><obj type=\"HostSystem\">host-22</obj>"
	"<propSet><name>name</name><val xsi:type=\"xsd:string\">esx80</val></propSet>"
	"</objects></returnval></RetrievePropertiesExResponse>" REPLY_TAIL;

static void test_exact_bodies(void **state)
{
	static const char *const servers[] = {"ntp1.lab.example", "ntp2.lab.example"};
	struct gc_vcenter_soap s;

	gc_vcenter_update_passthru_body(&s, "pciPassthruSystem-21", "0000:3b:00.0", true);
	assert_string_equal(strstr(s.b.ptr, "<UpdatePassthruConfig"),
			    "<UpdatePassthruConfig xmlns=\"urn:vim25\">"
			    "<_this type=\"HostPciPassthruSystem\">pciPassthruSystem-21</_this>"
			    "<config xsi:type=\"HostPciPassthruConfig\"><id>0000:3b:00.0</id>"
			    "<passthruEnabled>true</passthruEnabled></config>");
	gc_vcenter_soap_free(&s);
	gc_vcenter_update_datetime_body(&s, "dateTimeSystem-21", servers, 2);
	assert_string_equal(strstr(s.b.ptr, "<UpdateDateTimeConfig"),
			    "<UpdateDateTimeConfig xmlns=\"urn:vim25\">"
			    "<_this type=\"HostDateTimeSystem\">dateTimeSystem-21</_this>"
			    "<config><ntpConfig><server>ntp1.lab.example</server>"
			    "<server>ntp2.lab.example</server></ntpConfig></config>");
	gc_vcenter_soap_free(&s);
	gc_vcenter_service_body(&s, "UpdateServicePolicy", "serviceSystem-21", "ntpd", "on");
	assert_string_equal(strstr(s.b.ptr, "<UpdateServicePolicy"),
			    "<UpdateServicePolicy xmlns=\"urn:vim25\">"
			    "<_this type=\"HostServiceSystem\">serviceSystem-21</_this>"
			    "<id>ntpd</id><policy>on</policy>");
	gc_vcenter_soap_free(&s);
	gc_vcenter_service_body(&s, "RestartService", "serviceSystem-21", "ntpd", NULL);
	assert_string_equal(strstr(s.b.ptr, "<RestartService"),
			    "<RestartService xmlns=\"urn:vim25\">"
			    "<_this type=\"HostServiceSystem\">serviceSystem-21</_this><id>ntpd</id>");
	gc_vcenter_soap_free(&s);
	(void)state;
}

static void test_reply_read(void **state)
{
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_error err = GC_ERROR_INIT;
	const struct gc_vcenter_host *h;

	assert_int_equal(gc_vcenter_observe_parse(&inv, reply, sizeof(reply) - 1, &err), 0);
	h = gc_vcenter_inventory_host(inv, "esx67");
	assert_non_null(h);
	assert_string_equal(h->passthru_system, "pciPassthruSystem-21");
	assert_string_equal(h->datetime_system, "dateTimeSystem-21");
	assert_string_equal(h->service_system, "serviceSystem-21");
	assert_string_equal(h->ntp_servers, "ntp1.lab.example,ntp2.lab.example");
	assert_true(h->ntpd_running);
	assert_string_equal(h->ntpd_policy, "on");
	assert_true(gc_vcenter_host_passthru(h, "0000:3b:00.0")->enabled);
	assert_false(gc_vcenter_host_passthru(h, "0000:3b:00.0")->active);
	/* a host whose reply has none of it */
	h = gc_vcenter_inventory_host(inv, "esx80");
	assert_null(h->passthru_system);
	assert_null(h->ntp_servers);
	assert_null(h->ntpd_policy);
	gc_vcenter_inventory_free(inv);
	(void)state;
}

/* What the recorder makes of the reply for the 6.7 host's resources: the
 * spec's values (no change to plan); a device vCenter does not list is a
 * problem, not a guess. */
static void test_recorded(void **state)
{
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_diags diags = {0};
	struct gc_cluster *c = NULL;
	struct gc_graph *g = NULL;
	struct gc_observed *obs = NULL;
	struct gc_buf problems = GC_BUF_INIT;
	const struct gc_resource *res[2];
	struct gc_resource other;

	setenv("GC_ESXI_PASSWORD", "x", 1);
	setenv("GC_VC_PASSWORD", "x", 1);
	assert_int_equal(gc_spec_load(&c, &diags, GC_SOURCE_DIR "/tests/data/spec/ok/esxi67-mixed.yaml",
				      &err),
			 0);
	gc_diags_free(&diags);
	assert_int_equal(gc_graph_build(&g, c, &err), 0);
	assert_int_equal(gc_vcenter_observe_parse(&inv, reply, sizeof(reply) - 1, &err), 0);
	res[0] = gc_graph_find(g, "esx67/esxi.ntp");
	res[1] = gc_graph_find(g, "esx67/esxi.pci_passthru/0000:3b:00.0");
	assert_int_equal(res[0]->target->kind, GC_TARGET_VCENTER);
	assert_int_equal(res[1]->target->kind, GC_TARGET_VCENTER);
	gc_observed_new(&obs);
	gc_vcdrv_record(obs, inv, c, res, 2, &problems);
	assert_string_equal(gc_buf_str(&problems), "");
	assert_string_equal(gc_observed_get(obs, "esx67/esxi.ntp", "servers"),
			    "ntp1.lab.example,ntp2.lab.example");
	assert_string_equal(gc_observed_get(obs, "esx67/esxi.ntp", "enabled"), "true");
	assert_string_equal(
		gc_observed_get(obs, "esx67/esxi.pci_passthru/0000:3b:00.0", "enabled"), "true");

	other = *res[1];
	other.id = "esx67/esxi.pci_passthru/0000:af:00.0";
	res[0] = &other;
	gc_vcdrv_record(obs, inv, c, res, 1, &problems);
	assert_string_equal(gc_buf_str(&problems),
			    "host 'esx67': vCenter lists no passthrough device 0000:af:00.0\n");
	gc_buf_free(&problems);
	gc_observed_free(obs);
	gc_vcenter_inventory_free(inv);
	gc_graph_free(g);
	gc_cluster_free(c);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_bodies),
		cmocka_unit_test(test_reply_read),
		cmocka_unit_test(test_recorded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
