/*
 * test_observe.c - one-batch observation of an ESXi host: the exact script,
 * and the facts read back from esxcli XML sections.  The fixture
 * tests/data/esxi/observe-ok.txt follows REAL-FORMATS A.2 (XML layout, field
 * names = human titles without spaces); its typeName values are inferred.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "gc/esxi.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/plan.h"
#include "gc/spec.h"

static char *fixture(size_t *len)
{
	struct gc_error err = GC_ERROR_INIT;
	char *text = NULL;

	assert_int_equal(gc_read_file(&text, len, "tests/data/esxi/observe-ok.txt", 1 << 20, &err), 0);
	return text;
}

static void test_script_exact(void **state)
{
	char *s = gc_esxi_observe_script("T0K3N", NULL);

	assert_non_null(strstr(s, "echo @@gc:T0K3N:1; vmware -v || echo @@gc:T0K3N:failed; "
				  "echo @@gc:T0K3N:2; esxcli --formatter=xml system maintenanceMode get "
				  "|| echo @@gc:T0K3N:failed; "));
	assert_non_null(strstr(s, "echo @@gc:T0K3N:10; nvidia-smi -q -d ECC || echo @@gc:T0K3N:failed; "
				  "echo @@gc:T0K3N:11; esxcli --formatter=xml software vib list "
				  "--rebooting-image || echo @@gc:T0K3N:failed; "
				  "echo @@gc:T0K3N:12; esxcli --formatter=xml hardware pci list || "
				  "echo @@gc:T0K3N:failed; echo @@gc:T0K3N:14; sh -c "));
	/* the MFT section: a fixed snippet, the token its only argument */
	assert_non_null(strstr(s, "echo @@gc:T0K3N:14; sh -c 'M=/opt/mellanox/bin; if [ ! -x "
				  "$M/mlxconfig ]; then echo @@mft:$1:none; exit 0; fi; s=$($M/mst "
				  "status -vv) || exit 1; echo \"$s\"; for d in $(echo \"$s\" | grep "
				  "-owE \"mt[0-9]+_pciconf[0-9]+(\\.[0-9]+)?\"); do echo "
				  "@@mft:$1:dev:$d; $M/mlxconfig -d $d q SRIOV_EN NUM_OF_VFS || echo "
				  "@@mft:$1:failed; done' mft T0K3N || echo @@gc:T0K3N:failed; "
				  "echo @@gc:T0K3N:end"));
	assert_int_equal(strncmp(s + strlen(s) - strlen("echo @@gc:T0K3N:end"), "echo @@gc:T0K3N:end", 19), 0);
	free(s);
}

static void test_parse_all_sections(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	size_t len;
	char *text = fixture(&len);

	assert_int_equal(gc_esxi_parse_observation(&f, "T0K3N", text, len, &err), 0);
	assert_string_equal(f.version, "8.0.2");
	assert_string_equal(f.build, "build-22380479");
	assert_true(f.maintenance);
	assert_string_equal(f.graphics_default_type, "SharedPassthru");
	assert_string_equal(f.graphics_policy, "Performance");
	assert_int_equal(f.nvibs, 2);
	assert_string_equal(gc_esxi_facts_vib(&f, "NVD-AIE_ESXi_8.0.0_Driver")->version,
			    "525.105.14-1OEM.800.1.0.20613240");
	assert_null(gc_esxi_facts_vib(&f, "nvidia-vgpu"));
	assert_int_equal(gc_esxi_facts_passthru(&f, "0000:3b:00.0"), 1);
	assert_int_equal(gc_esxi_facts_passthru(&f, "0000:5E:00.0"), 0);
	assert_int_equal(gc_esxi_facts_passthru(&f, "0000:af:00.0"), -1);
	assert_true(f.nmlx5_core_present);
	assert_string_equal(gc_esxi_facts_nmlx5_param(&f, "max_vfs"), "4,4");
	assert_null(gc_esxi_facts_nmlx5_param(&f, "pfctx"));
	/* listed without a value: the driver accepts it */
	assert_true(gc_esxi_facts_nmlx5_accepts(&f, "pfctx"));
	assert_false(gc_esxi_facts_nmlx5_accepts(&f, "trust_state"));
	assert_int_equal(gc_esxi_facts_ruleset(&f, "pvrdma"), 1);
	assert_int_equal(gc_esxi_facts_ruleset(&f, "nfs41Client"), 0);
	assert_string_equal(f.pvrdma_vmknic, "vmk1");
	assert_true(f.ntp_enabled);
	assert_string_equal(f.ntp_servers, "ntp1.lab.example,ntp2.lab.example");
	assert_true(f.have_nvidia_smi);
	assert_int_equal(f.ecc_current, 1);
	assert_int_equal(f.ecc_pending, 0);
	assert_int_equal(f.nfailed, 0);
	/* ECC current Enabled, pending Disabled: a reboot is owed */
	assert_true(f.reboot_pending);
	assert_string_equal(f.reboot_pending_why, "GPU ECC off pending");
	gc_esxi_facts_free(&f);
	free(text);
}

#define XML_HEAD "<?xml version=\"1.0\"?><output xmlns=\"http://www.vmware.com/Products/ESX/5.0/esxcli\"><root>"
#define XML_TAIL "</root></output>\n"

static void test_pending_passthru_and_vib(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	const char *text =
		"@@gc:K:4\n" XML_HEAD "<list type=\"structure\"></list>" XML_TAIL
		"@@gc:K:11\n" XML_HEAD "<list type=\"structure\"><structure typeName=\"VIBSummaryExt\">"
		"<field name=\"Name\"><string>NVD-AIE_ESXi_8.0.0_Driver</string></field>"
		"<field name=\"Version\"><string>525.105.14</string></field></structure></list>" XML_TAIL
		"@@gc:K:12\n" XML_HEAD "<list type=\"structure\"><structure typeName=\"PCIDevice\">"
		"<field name=\"Address\"><string>0000:3b:00.0</string></field>"
		"<field name=\"Configured Owner\"><string>VM Passthru</string></field>"
		"<field name=\"Current Owner\"><string>VMkernel</string></field>"
		"<field name=\"Vendor ID\"><string>0x10de</string></field>"
		"</structure></list>" XML_TAIL
		"@@gc:K:end\n";

	assert_int_equal(gc_esxi_parse_observation(&f, "K", text, strlen(text), &err), 0);
	assert_true(f.reboot_pending);
	assert_string_equal(f.reboot_pending_why, "passthrough of 0000:3b:00.0 configured on, running off");
	assert_null(gc_esxi_facts_vib(&f, "NVD-AIE_ESXi_8.0.0_Driver"));
	assert_string_equal(gc_esxi_facts_vib_any(&f, "NVD-AIE_ESXi_8.0.0_Driver")->version, "525.105.14");
	assert_string_equal(gc_esxi_facts_pci(&f, "0000:3B:00.0")->vendor_id, "0x10de");
	assert_null(gc_esxi_facts_pci(&f, "0000:af:00.0"));
	gc_esxi_facts_free(&f);
}

static void test_cut_short_is_retryable(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	size_t len;
	char *text = fixture(&len);
	char *cut = strstr(text, "@@gc:T0K3N:7");

	assert_int_equal(gc_esxi_parse_observation(&f, "T0K3N", text, (size_t)(cut - text), &err),
			 GC_ENET);
	assert_string_equal(err.msg, "observation output was cut short (no end marker)");
	free(text);
}

static void test_failed_sections(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	const char *text = "@@gc:AB12CD34:1\nVMware ESXi 7.0.3 build-19193900\n"
			   "@@gc:AB12CD34:3\nError: Unknown command or namespace graphics host get\n"
			   "@@gc:AB12CD34:failed\n"
			   "@@gc:AB12CD34:6\nUnable to find module nmlx5_core\n@@gc:AB12CD34:failed\n"
			   "@@gc:AB12CD34:10\nsh: nvidia-smi: not found\n@@gc:AB12CD34:failed\n"
			   "@@gc:OTHER:end\n"
			   "@@gc:AB12CD34:end\n";

	assert_int_equal(gc_esxi_parse_observation(&f, "AB12CD34", text, strlen(text), &err), 0);
	assert_string_equal(f.version, "7.0.3");
	assert_int_equal(f.nfailed, 1);
	assert_string_equal(f.failed[0], "esxcli --formatter=xml graphics host get: command failed");
	assert_false(f.nmlx5_core_present);
	assert_false(f.have_nvidia_smi);
	assert_int_equal(f.ecc_current, -1);
	gc_esxi_facts_free(&f);
}

static void test_garbage_section_is_remote_error(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	const char *text = "@@gc:AB12CD34:4\n<html>not esxcli</html>\n@@gc:AB12CD34:end\n";

	assert_int_equal(gc_esxi_parse_observation(&f, "AB12CD34", text, strlen(text), &err),
			 GC_EREMOTE);
	assert_string_equal(err.msg,
			    "'esxcli --formatter=xml software vib list': esxcli XML has no <output><root>");
}

/* Found by fuzz_esxi_observe: a repeated section made the second read
 * append past the array the first one sized. */
static void test_repeated_section_is_refused(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	const char *sec = "@@gc:K:5\n<output><root><list><structure>"
			  "<field name=\"DeviceID\"><string>0000:3b:00.0</string></field>"
			  "</structure></list></root></output>\n";
	char *text = gc_xasprintf("%s%s@@gc:K:end\n", sec, sec);

	assert_int_equal(gc_esxi_parse_observation(&f, "K", text, strlen(text), &err), GC_EREMOTE);
	assert_string_equal(err.msg, "observation section 5 repeated");
	free(text);
}

/* Found by fuzz_esxi_observe: the marker number was read with atoi() past
 * the end of the (not NUL-terminated) output. */
static void test_marker_number_within_its_bytes(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	const char text[] = {'@', '@', 'g', 'c', ':', 'K', ':', '1', '2', '3', '4'};

	assert_int_equal(gc_esxi_parse_observation(&f, "K", text, sizeof(text), &err), GC_EREMOTE);
	assert_string_equal(err.msg, "unexpected observation marker");
}

static void test_version_forms(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	char *v = NULL, *b = NULL;

	assert_int_equal(gc_esxi_parse_version(&v, &b, "VMware ESXi 7.0 GA", &err), 0);
	assert_string_equal(v, "7.0");
	assert_null(b);
	free(v);
	assert_int_equal(gc_esxi_parse_version(&v, &b, "Linux 6.1", &err), GC_EREMOTE);
}

/* Without vib_name the batch also lists the bundle's VIBs, as one more
 * section before the end marker; the path is single-quoted, -d for a .zip,
 * -v for a .vib, and a path that is not a safe absolute path is left out. */
static void test_script_learns_from_the_bundle(void **state)
{
	char *s = gc_esxi_observe_script(
		"T0K3N", "/vmfs/volumes/datastore1/NVD-AIE-800_525.105.14-1OEM.800.1.0.20613240_21506612.zip");

	assert_non_null(strstr(s, "echo @@gc:T0K3N:12; esxcli --formatter=xml hardware pci list || "
				  "echo @@gc:T0K3N:failed; echo @@gc:T0K3N:13; esxcli --formatter=xml "
				  "software sources vib list -d '/vmfs/volumes/datastore1/NVD-AIE-800_525."
				  "105.14-1OEM.800.1.0.20613240_21506612.zip' || echo @@gc:T0K3N:failed; "
				  "echo @@gc:T0K3N:14; sh -c "));
	free(s);
	s = gc_esxi_observe_script("T0K3N", "/vmfs/volumes/ds1/NVD_bootbank_nvdgpumgmtdaemon_1.vib");
	assert_non_null(strstr(s, "; esxcli --formatter=xml software sources vib list -v "
				  "'/vmfs/volumes/ds1/NVD_bootbank_nvdgpumgmtdaemon_1.vib' || "));
	free(s);
	s = gc_esxi_observe_script("T0K3N", "/vmfs/volumes/ds1/x.zip; reboot");
	assert_null(strstr(s, "sources"));
	assert_null(strstr(s, "x.zip"));
	free(s);
	s = gc_esxi_observe_script("T0K3N", NULL);
	assert_null(strstr(s, "sources"));
	free(s);
	(void)state;
}

/* tests/data/esxi/sources-vib-list.xml is the lab simulator's answer (no
 * capture of the real one is known: REAL-FORMATS E names the command, the
 * esxcli reference its columns; the typeName is inferred). */
static void test_source_vibs_from_the_listing(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_vib *v = NULL;
	size_t n = 0, len;
	char *text = NULL;

	assert_int_equal(gc_read_file(&text, &len, "tests/data/esxi/sources-vib-list.xml", 1 << 20, &err), 0);
	assert_int_equal(gc_esxi_parse_source_vibs(&v, &n, text, len, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].name, "nvdgpumgmtdaemon");
	assert_string_equal(v[0].version, "525.147.01-1OEM.700.1.0.15843807");
	assert_string_equal(v[1].name, "NVD-AIE_ESXi_8.0.0_Driver");
	assert_string_equal(v[1].version, "525.105.14-1OEM.800.1.0.20613240");
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].version);
	}
	free(v);
	free(text);
	(void)state;
}

/* Fields are found by name: another order, other fields, spaced titles and
 * another typeName read the same. */
static void test_source_vibs_any_field_order(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_vib *v = NULL;
	size_t n = 0;
	const char *text = XML_HEAD "<list type=\"structure\"><structure typeName=\"VIBSummaryExt\">"
		"<field name=\"Status\"><string>Update</string></field>"
		"<field name=\"ID\"><string>NVD_bootbank_x_1.0-1</string></field>"
		"<field name=\"Version\"><string>1.0-1</string></field>"
		"<field name=\"Platforms\"><list type=\"string\"><string>host</string></list></field>"
		"<field name=\"Name\"><string>x</string></field>"
		"</structure></list>" XML_TAIL;

	assert_int_equal(gc_esxi_parse_source_vibs(&v, &n, text, strlen(text), &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].name, "x");
	assert_string_equal(v[0].version, "1.0-1");
	free(v[0].name);
	free(v[0].version);
	free(v);
	(void)state;
}

/* What a hostile or broken host may answer: refused, nothing kept. */
static void test_source_vibs_hostile(void **state)
{
	static const struct {
		const char *xml, *msg;
	} cases[] = {
		{XML_HEAD "<list type=\"structure\"><structure typeName=\"VIBSummary\">"
		 "<field name=\"Name\"><string>x$(reboot)</string></field>"
		 "<field name=\"Version\"><string>1</string></field></structure></list>" XML_TAIL,
		 "VIB 1 of the bundle has no valid Name"},
		{XML_HEAD "<list type=\"structure\"><structure typeName=\"VIBSummary\">"
		 "<field name=\"Name\"><string>x</string></field>"
		 "<field name=\"Version\"><string>1\n    ~ esx01/esxi.ok</string></field></structure></list>" XML_TAIL,
		 "VIB 1 of the bundle has no valid Version"},
		{XML_HEAD "<list type=\"structure\"><structure typeName=\"VIBSummary\">"
		 "<field name=\"Name\"><string>x</string></field></structure></list>" XML_TAIL,
		 "VIB 1 of the bundle has no valid Version"},
		{XML_HEAD "<list type=\"structure\"></list>" XML_TAIL, "the bundle lists no VIB"},
		{"Name  Version\n----  -------\nx     1\n", "esxcli output is not XML"},
	};
	struct gc_buf many = GC_BUF_INIT;
	struct gc_esxi_vib *v = NULL;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gc_error err = GC_ERROR_INIT;

		assert_int_equal(gc_esxi_parse_source_vibs(&v, &n, cases[i].xml, strlen(cases[i].xml), &err),
				 GC_EREMOTE);
		assert_string_equal(err.msg, cases[i].msg);
		assert_null(v);
		assert_int_equal(n, 0);
	}
	gc_buf_puts(&many, XML_HEAD "<list type=\"structure\">");
	for (int i = 0; i <= GC_ESXI_MAX_SOURCE_VIBS; i++)
		gc_buf_printf(&many, "<structure typeName=\"VIBSummary\"><field name=\"Name\"><string>v%d"
			      "</string></field><field name=\"Version\"><string>1</string></field></structure>", i);
	gc_buf_puts(&many, "</list>" XML_TAIL);
	{
		struct gc_error err = GC_ERROR_INIT;

		assert_int_equal(gc_esxi_parse_source_vibs(&v, &n, gc_buf_str(&many), many.len, &err), GC_EREMOTE);
		assert_string_equal(err.msg, "the bundle lists more than 64 VIBs");
	}
	gc_buf_free(&many);
	(void)state;
}

/* The listing section: read into facts; failed (the bundle is not on the
 * host) is an answer, not a failed observation. */
static void test_source_section(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	const char *ok = "@@gc:K:13\n" XML_HEAD "<list type=\"structure\"><structure typeName=\"VIBSummary\">"
			 "<field name=\"Name\"><string>NVD-AIE_ESXi_8.0.0_Driver</string></field>"
			 "<field name=\"Version\"><string>525.105.14</string></field></structure></list>" XML_TAIL
			 "@@gc:K:end\n";
	const char *gone = "@@gc:K:13\n@@gc:K:failed\n@@gc:K:end\n";

	assert_int_equal(gc_esxi_parse_observation(&f, "K", ok, strlen(ok), &err), 0);
	assert_true(f.source_listed);
	assert_int_equal(f.nsource_vibs, 1);
	assert_string_equal(f.source_vibs[0].name, "NVD-AIE_ESXi_8.0.0_Driver");
	assert_string_equal(f.source_vibs[0].version, "525.105.14");
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", gone, strlen(gone), &err), 0);
	assert_false(f.source_listed);
	assert_int_equal(f.nsource_vibs, 0);
	assert_int_equal(f.nfailed, 0);
	gc_esxi_facts_free(&f);
	(void)state;
}

/* One nmlx5_core ModuleParameter row of `module parameters list`. */
#define PARAM(n, v) \
	"<structure typeName=\"ModuleParameter\"><field name=\"Name\"><string>" n \
	"</string></field><field name=\"Value\"><string>" v "</string></field></structure>"

/*
 * What the record makes of nmlx5_core's lossless RoCE parameters: the same
 * number in another spelling is no change, a driver without ecn has nothing
 * to set, one without trust_state fails the host before anything changes.
 */
static void test_record_nmlx5_roce(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf problems = GC_BUF_INIT;
	struct gc_observed *obs;
	struct gc_esxi_facts f;
	struct gc_graph *g;
	struct gc_target *t;
	struct gc_resource *r = NULL;
	const struct gc_resource *rs[1];
	const char *newer = "@@gc:K:6\n" XML_HEAD "<list type=\"structure\">" PARAM("max_vfs", "4")
			    PARAM("pfcrx", "8") PARAM("pfctx", "0x8") PARAM("trust_state", "1")
			    "</list>" XML_TAIL "@@gc:K:end\n";
	const char *older = "@@gc:K:6\n" XML_HEAD "<list type=\"structure\">" PARAM("max_vfs", "")
			    PARAM("pfcrx", "") PARAM("pfctx", "") "</list>" XML_TAIL "@@gc:K:end\n";

	gc_graph_new(&g);
	t = gc_graph_add_target(g, GC_TARGET_ESXI, "esx01");
	assert_int_equal(gc_graph_add(&r, g, GC_RES_ESXI_MODULE_PARAM, t,
				      "esx01/esxi.module_param/nmlx5_core", "esx01", NULL, 0, &err),
			 0);
	gc_resource_set(g, r, "module", "nmlx5_core");
	gc_resource_set(g, r, "max_vfs", "4");
	gc_resource_set(g, r, "trust_state", "2");
	gc_resource_set(g, r, "pfctx", "0x08");
	gc_resource_set(g, r, "pfcrx", "0x08");
	gc_resource_set(g, r, "ecn", "1");
	rs[0] = r;

	assert_int_equal(gc_esxi_parse_observation(&f, "K", newer, strlen(newer), &err), 0);
	gc_observed_new(&obs);
	gc_esxi_record(obs, "esx01", rs, 1, &f, &problems);
	assert_int_equal(problems.len, 0);
	assert_string_equal(gc_observed_get(obs, r->id, "pfctx"), "0x08");
	assert_string_equal(gc_observed_get(obs, r->id, "pfcrx"), "0x08");
	assert_string_equal(gc_observed_get(obs, r->id, "trust_state"), "1"); /* PCP: a change */
	assert_string_equal(gc_observed_get(obs, r->id, "ecn"), "1");     /* no knob: nothing to do */
	gc_observed_free(obs);
	gc_esxi_facts_free(&f);

	assert_int_equal(gc_esxi_parse_observation(&f, "K", older, strlen(older), &err), 0);
	gc_observed_new(&obs);
	gc_esxi_record(obs, "esx01", rs, 1, &f, &problems);
	assert_string_equal(gc_buf_str(&problems),
			    "host 'esx01': its nmlx5_core driver has no parameter 'trust_state', which "
			    "lossless RoCE needs (install a newer NVIDIA nmlx5 driver)\n");
	assert_string_equal(gc_observed_get(obs, r->id, "pfctx"), "");
	gc_observed_free(obs);
	gc_esxi_facts_free(&f);
	gc_buf_free(&problems);
	gc_graph_free(g);
	(void)state;
}

/* A host whose `vmware -v` predates the esxcli namespace a resource of its
 * shell needs (issue 14, item 1): a problem with the version to write, the
 * resource not recorded; 7.0.1 has both namespaces */
static void test_record_namespace_of_release(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf problems = GC_BUF_INIT;
	struct gc_observed *obs;
	struct gc_esxi_facts f;
	struct gc_graph *g;
	struct gc_target *t;
	struct gc_resource *pt = NULL, *ntp = NULL;
	const struct gc_resource *rs[2];
	const char *v67 = "@@gc:K:1\nVMware ESXi 6.7.0 build-8169922\n@@gc:K:end\n";
	const char *v701 = "@@gc:K:1\nVMware ESXi 7.0.1 build-16850804\n@@gc:K:end\n";

	gc_graph_new(&g);
	t = gc_graph_add_target(g, GC_TARGET_ESXI, "esx67");
	assert_int_equal(gc_graph_add(&pt, g, GC_RES_ESXI_PCI_PASSTHRU, t,
				      "esx67/esxi.pci_passthru/0000:3b:00.0", "esx67", NULL, 0, &err),
			 0);
	gc_resource_set(g, pt, "enabled", "true");
	assert_int_equal(gc_graph_add(&ntp, g, GC_RES_ESXI_NTP, t, "esx67/esxi.ntp", "esx67", NULL,
				      0, &err),
			 0);
	gc_resource_set(g, ntp, "servers", "ntp1.lab.example");
	rs[0] = pt;
	rs[1] = ntp;

	assert_int_equal(gc_esxi_parse_observation(&f, "K", v67, strlen(v67), &err), 0);
	gc_observed_new(&obs);
	gc_esxi_record(obs, "esx67", rs, 2, &f, &problems);
	assert_string_equal(gc_buf_str(&problems),
			    "host 'esx67' runs ESXi 6.7.0 (vmware -v), which has no 'esxcli hardware "
			    "pci pcipassthru' (ESXi 7.0 and later): set the host's version: \"6.7.0\" "
			    "in the spec, and that is set through vCenter\n"
			    "host 'esx67' runs ESXi 6.7.0 (vmware -v), which has no 'esxcli system ntp' "
			    "(ESXi 7.0 Update 1 and later): set the host's version: \"6.7.0\" in the "
			    "spec, and that is set through vCenter\n");
	assert_null(gc_observed_get(obs, pt->id, "enabled"));
	gc_observed_free(obs);
	gc_esxi_facts_free(&f);

	gc_buf_reset(&problems);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", v701, strlen(v701), &err), 0);
	gc_observed_new(&obs);
	gc_esxi_record(obs, "esx67", rs, 2, &f, &problems);
	assert_string_equal(gc_buf_str(&problems), "");
	assert_string_equal(gc_observed_get(obs, pt->id, "enabled"), "false");
	gc_observed_free(obs);
	gc_esxi_facts_free(&f);
	gc_buf_free(&problems);
	gc_graph_free(g);
	(void)state;
}

/* After the reboot: a NIC is found by PCIDevice or by Name, whatever else
 * the structure holds; the first SR-IOV NIC not listed gets the hint. */
static void test_vfs_after_the_reboot(void **state)
{
	static const char xml[] =
		XML_HEAD "<list type=\"structure\"><structure typeName=\"SriovNic\">"
		"<field name=\"Link\"><string>Up</string></field>"
		"<field name=\"Name\"><string>vmnic9</string></field>"
		"<field name=\"PCIDevice\"><string>0000:5e:00.0</string></field>"
		"</structure><structure typeName=\"SriovNic\">"
		"<field name=\"Name\"><string>vmnic5</string></field>"
		"</structure></list></root></output>";
	struct gc_host_nic nics[3] = {
		{.pci = "0000:5e:00.0", .mode = GC_NIC_MODE_SRIOV, .vfs = 4},
		{.pci = "0000:5e:00.1", .device = "vmnic5", .mode = GC_NIC_MODE_SRIOV, .vfs = 4},
		{.pci = "0000:af:00.0", .mode = GC_NIC_MODE_PASSTHROUGH},
	};
	struct gc_host h = {.name = "esx01", .nics = nics, .nnics = 3};
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_esxi_check_vfs(&h, xml, strlen(xml), &err), 0);
	nics[1].device = "vmnic6";
	nics[1].vfs = 16;
	assert_int_equal(gc_esxi_check_vfs(&h, xml, strlen(xml), &err), GC_EREMOTE);
	assert_string_equal(err.msg,
			    "host 'esx01': NIC 0000:5e:00.1 (vmnic6) has no SR-IOV VFs after the "
			    "reboot (not in `esxcli network sriovnic list`): its firmware needs "
			    "SRIOV_EN=1 and NUM_OF_VFS>=16; set them with Mellanox MFT on the host "
			    "(/opt/mellanox/bin/mlxconfig -d DEVICE set SRIOV_EN=1 NUM_OF_VFS=16) and "
			    "apply again");
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(gc_esxi_check_vfs(&h, "<output>", 8, &err), GC_EREMOTE);
	(void)state;
}

/* NVIDIA's samples (MFT "VMware ESXi" mst page; "SR-IOV Configuration"
 * page), as the batch's MFT section frames them (esxi.h). */
#define MST_STATUS                                                                                                         \
	"PCI devices:\n"                                                                                                   \
	"------------\n"                                                                                                   \
	"DEVICE_TYPE             MST                           PCI       RDMA            NET                       NUMA\n" \
	"ConnectX4(rev:0)        mt4115_pciconf0               03:00.0                   net-vmnic4\n"                     \
	"ConnectX4(rev:0)        mt4115_pciconf0.1             03:00.1                   net-vmnic5\n"
#define MLXCONFIG_Q(dev, en, n)                                                                    \
	"Device #1:\n----------\n\nDevice type:    ConnectX4\nPCI device:     " dev "\n\n"           \
	"Configurations:                              Next Boot\n"                                 \
	"         SRIOV_EN                            " en "\n"                                     \
	"         NUM_OF_VFS                          " n "\n"

static void test_mft_samples(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	const char *text = "@@gc:K:14\n" MST_STATUS "@@mft:K:dev:mt4115_pciconf0\n"
			   MLXCONFIG_Q("mt4115_pciconf0", "True(1)", "8")
			   "@@mft:K:dev:mt4115_pciconf0.1\n"
			   MLXCONFIG_Q("mt4115_pciconf0.1", "False(0)", "0") "@@gc:K:end\n";
	const struct gc_esxi_mft_dev *d;

	assert_int_equal(gc_esxi_parse_observation(&f, "K", text, strlen(text), &err), 0);
	assert_true(f.mft_present);
	assert_int_equal(f.nmft, 2);
	d = gc_esxi_facts_mft(&f, "0000:03:00.0");
	assert_non_null(d);
	assert_string_equal(d->dev, "mt4115_pciconf0");
	assert_int_equal(d->sriov_en, 1);
	assert_int_equal(d->num_of_vfs, 8);
	d = gc_esxi_facts_mft(&f, "0000:03:00.1");
	assert_string_equal(d->dev, "mt4115_pciconf0.1");
	assert_int_equal(d->sriov_en, 0);
	assert_int_equal(d->num_of_vfs, 0);
	assert_null(gc_esxi_facts_mft(&f, "0000:04:00.0"));
	gc_esxi_facts_free(&f);
	(void)state;
}

/* The layouts are not verified: other columns and widths, tabs, a PCI
 * domain, older MFT's "Current", `-e`'s three value columns (the last is
 * the next boot's), plain 1/0 and True/False; a failed query knows nothing;
 * a forged marker of another token is a row like any other. */
static void test_mft_tolerant(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	const char *text =
		"@@gc:K:14\n"
		"MST modules:\n  MST PCI module loaded\n"
		"PCI devices:\n"
		"DEVICE_TYPE\tMST\tPCI\tRDMA\tNET\tNUMA\n"
		"ConnectX5(rev:0)\tmt4119_pciconf0\t0000:5E:00.0\tmlx5_0\tnet-vmnic4\t0\n"
		"ConnectX5(rev:0) mt4119_pciconf0.1 0000:5e:00.1\n"
		"ConnectX6(rev:0) mt4123_pciconf1 af:00.0\n"
		"Cable devices:\nmt4119_pciconf0_cable_0\n"
		"@@mft:K:dev:mt4119_pciconf0\n"
		"Configurations:    Default     Current     Next Boot\n"
		"  SRIOV_EN         False(0)    False(0)    True(1)\n"
		"  NUM_OF_VFS       0           0           16\n"
		"@@mft:K:dev:mt4119_pciconf0.1\n"
		"Configurations:                              Current\n"
		"\tSRIOV_EN\t1\n\tNUM_OF_VFS\t4\n"
		"@@mft:X:dev:mt4123_pciconf1\n"
		"@@mft:K:dev:mt4123_pciconf1\n"
		"  SRIOV_EN   True\n"
		"-E- Failed to query device\n"
		"@@mft:K:failed\n"
		"@@gc:K:end\n";
	const struct gc_esxi_mft_dev *d;

	assert_int_equal(gc_esxi_parse_observation(&f, "K", text, strlen(text), &err), 0);
	assert_int_equal(f.nmft, 3);
	d = gc_esxi_facts_mft(&f, "0000:5e:00.0");
	assert_string_equal(d->dev, "mt4119_pciconf0");
	assert_int_equal(d->sriov_en, 1);
	assert_int_equal(d->num_of_vfs, 16);
	d = gc_esxi_facts_mft(&f, "0000:5e:00.1");
	assert_int_equal(d->sriov_en, 1);
	assert_int_equal(d->num_of_vfs, 4);
	d = gc_esxi_facts_mft(&f, "0000:af:00.0");
	assert_string_equal(d->dev, "mt4123_pciconf1");
	assert_int_equal(d->sriov_en, -1);
	assert_int_equal(d->num_of_vfs, -1);
	gc_esxi_facts_free(&f);
	(void)state;
}

/* No mlxconfig on the host: MFT absent, no device. */
static void test_mft_not_installed(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	const char *text = "@@gc:K:14\n@@mft:K:none\n@@gc:K:end\n";

	assert_int_equal(gc_esxi_parse_observation(&f, "K", text, strlen(text), &err), 0);
	assert_false(f.mft_present);
	assert_int_equal(f.nmft, 0);
	gc_esxi_facts_free(&f);
	(void)state;
}

/* The read-back after the reboot of an SR-IOV host lists the VFs in its own
 * batch (one exec, not two): the last section, kept as it answered; a
 * failed listing leaves it NULL, which the driver reports, and is no
 * failed section of the observation. */
static void test_verify_lists_the_vfs(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	char *s = gc_esxi_verify_script("T0K3N", NULL, true);
	const char *text = "@@gc:K:14\n@@mft:K:none\n@@gc:K:15\n<output>x</output>\n@@gc:K:end\n";
	const char *failed = "@@gc:K:14\n@@mft:K:none\n@@gc:K:15\n@@gc:K:failed\n@@gc:K:end\n";

	assert_non_null(strstr(s, " mft T0K3N || echo @@gc:T0K3N:failed; echo @@gc:T0K3N:15; esxcli "
				  "--formatter=xml network sriovnic list || echo @@gc:T0K3N:failed; "
				  "echo @@gc:T0K3N:end"));
	free(s);
	s = gc_esxi_verify_script("T0K3N", NULL, false);
	assert_null(strstr(s, "sriovnic"));
	free(s);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", text, strlen(text), &err), 0);
	assert_string_equal(f.sriov_xml, "<output>x</output>\n");
	assert_int_equal(f.sriov_len, 19);
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", failed, strlen(failed), &err), 0);
	assert_null(f.sriov_xml);
	assert_int_equal(f.nfailed, 0);
	gc_esxi_facts_free(&f);
	(void)state;
}

/* The apply's observation reads the cluster lease with a fixed snippet
 * (16): no option is "@@lease:TOKEN:none", an option its XML ("none" as
 * its value is no lease); a failed read is no failed section (the driver
 * reads the lease by itself then).  The read-back may leave maintenance
 * mode last (17), after every read. */
#define ESXCLI_NS "http://www.vmware.com/Products/ESX/5.0/esxcli"
#define MAINT_ENABLED                                                                              \
	"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<output xmlns=\"" ESXCLI_NS "\">\n<root>\n"      \
	"   <string>Enabled</string>\n</root>\n</output>\n"

static void test_lease_and_exit_sections(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	char *s = gc_esxi_script("T0K3N", NULL, GC_ESXI_OBS_LEASE);
	const char *none = "@@gc:K:2\n" MAINT_ENABLED
			   "@@gc:K:16\n@@lease:K:none\n@@gc:K:end\n";
	const char *held = "@@gc:K:16\n<?xml version=\"1.0\"?><output xmlns=\"" ESXCLI_NS "\"><root><list type=\"structure\">"
			   "<structure typeName=\"SettingsAdvancedOption\"><field name=\"Path\">"
			   "<string>/UserVars/GpuclusterctlLease</string></field><field "
			   "name=\"StringValue\"><string>cluster=c;lock=0123456789abcdef;since=1"
			   "</string></field></structure></list></root></output>\n@@gc:K:end\n";
	const char *cleared = "@@gc:K:16\n<?xml version=\"1.0\"?><output xmlns=\"" ESXCLI_NS "\"><root><list "
			      "type=\"structure\"><structure typeName=\"SettingsAdvancedOption\">"
			      "<field name=\"StringValue\"><string>none</string></field></structure>"
			      "</list></root></output>\n@@gc:K:end\n";
	const char *unread = "@@gc:K:16\n@@gc:K:failed\n@@gc:K:end\n";
	const char *exited = "@@gc:K:2\n" MAINT_ENABLED "@@gc:K:17\n@@gc:K:end\n";
	const char *refused = "@@gc:K:17\n@@gc:K:failed\n@@gc:K:end\n";

	assert_non_null(strstr(s, " mft T0K3N || echo @@gc:T0K3N:failed; echo @@gc:T0K3N:16; sh -c "
				  "'r=$(esxcli --formatter=xml system settings advanced list -o "
				  "/UserVars/GpuclusterctlLease 2>&1) && { echo \"$r\"; exit 0; }; "
				  "case \"$r\" in *\"Unable to find option\"*) echo @@lease:$1:none;; *) "
				  "echo \"$r\" >&2; exit 1;; esac' lease T0K3N || echo @@gc:T0K3N:failed; "
				  "echo @@gc:T0K3N:end"));
	assert_null(strstr(s, "maintenanceMode set"));
	free(s);
	s = gc_esxi_script("T0K3N", NULL, GC_ESXI_OBS_SRIOV | GC_ESXI_OBS_EXIT_MM);
	assert_non_null(strstr(s, "echo @@gc:T0K3N:15; esxcli --formatter=xml network sriovnic list || "
				  "echo @@gc:T0K3N:failed; echo @@gc:T0K3N:17; esxcli system "
				  "maintenanceMode set -e false || echo @@gc:T0K3N:failed; "
				  "echo @@gc:T0K3N:end"));
	assert_null(strstr(s, "@@lease"));
	free(s);

	assert_int_equal(gc_esxi_parse_observation(&f, "K", none, strlen(none), &err), 0);
	assert_true(f.lease_read);
	assert_false(f.lease_option);
	assert_string_equal(f.lease, "");
	assert_false(f.exit_sent);
	assert_false(f.exit_failed);
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", held, strlen(held), &err), 0);
	assert_true(f.lease_read);
	assert_true(f.lease_option);
	assert_string_equal(f.lease, "cluster=c;lock=0123456789abcdef;since=1");
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", cleared, strlen(cleared), &err), 0);
	assert_true(f.lease_option);
	assert_string_equal(f.lease, "");
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", unread, strlen(unread), &err), 0);
	assert_false(f.lease_read);
	assert_null(f.lease);
	assert_int_equal(f.nfailed, 0);
	gc_esxi_facts_free(&f);

	assert_int_equal(gc_esxi_parse_observation(&f, "K", exited, strlen(exited), &err), 0);
	assert_true(f.maintenance); /* read before the exit */
	assert_true(f.exit_sent);
	assert_false(f.exit_failed);
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", refused, strlen(refused), &err), 0);
	assert_false(f.exit_sent);
	assert_true(f.exit_failed);
	assert_int_equal(f.nfailed, 0);
	gc_esxi_facts_free(&f);
	(void)state;
}

/* An apply that expects changes takes the lease in its observation (16,
 * the take snippet with the token, our lock and the lease as its
 * arguments): "took" last says it wrote ours, what it read is kept as the
 * lease (what another apply held, or none).  The read-back of a host's last
 * step clears it after the exit (17), only when the exit worked (18). */
static void test_lease_take_and_clear_sections(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;
	const char *lease = "cluster=c;holder=a@b;pid=1;lock=0123456789abcdef;since=1;expires=2";
	char *s = gc_esxi_script_lease("T0K3N", NULL, GC_ESXI_OBS_LEASE, "0123456789abcdef", lease);
	const char *took_new = "@@gc:K:16\n@@lease:K:none\n@@lease:K:took\n@@gc:K:end\n";
	const char *took_held = "@@gc:K:16\n<?xml version=\"1.0\"?><output xmlns=\"" ESXCLI_NS "\"><root><list "
				"type=\"structure\"><structure typeName=\"SettingsAdvancedOption\">"
				"<field name=\"StringValue\"><string>none</string></field></structure>"
				"</list></root></output>\n@@lease:K:took\n@@gc:K:end\n";
	const char *theirs = "@@gc:K:16\n<?xml version=\"1.0\"?><output xmlns=\"" ESXCLI_NS "\"><root><list "
			     "type=\"structure\"><structure typeName=\"SettingsAdvancedOption\">"
			     "<field name=\"StringValue\"><string>cluster=c;lock=fedcba9876543210;</string>"
			     "</field></structure></list></root></output>\n@@gc:K:end\n";
	const char *cleared = "@@gc:K:17\n@@gc:K:18\n@@lease:cleared\n@@gc:K:end\n";
	const char *kept = "@@gc:K:17\n@@gc:K:18\n@@lease:kept\n@@gc:K:end\n";
	const char *exit_refused = "@@gc:K:17\n@@gc:K:failed\n@@gc:K:end\n";
	const char *clear_failed = "@@gc:K:17\n@@gc:K:18\n@@gc:K:failed\n@@gc:K:end\n";

	assert_non_null(strstr(s, " mft T0K3N || echo @@gc:T0K3N:failed; echo @@gc:T0K3N:16; sh -c "
				  "'r=$(esxcli --formatter=xml system settings advanced list -o "
				  "/UserVars/GpuclusterctlLease 2>&1) || { case \"$r\" in *\"Unable to find "
				  "option\"*) echo @@lease:$1:none; esxcli system settings advanced add -o "
				  "GpuclusterctlLease -t string -s none -d '\\''gpuclusterctl cluster "
				  "lease'\\'' && esxcli system settings advanced set -o "
				  "/UserVars/GpuclusterctlLease -s \"$3\" && echo @@lease:$1:took; exit 0;; "
				  "esac; echo \"$r\" >&2; exit 1; }; echo \"$r\"; v=${r#*\\\"StringValue\\\">}; "
				  "v=${v%%</field>*}; case \"$v\" in "
				  "*\"lock=$2;\"*) ;; *\"lock=\"*) exit 0;; esac; esxcli system settings "
				  "advanced set -o /UserVars/GpuclusterctlLease -s \"$3\" && echo "
				  "@@lease:$1:took; exit 0' lease T0K3N 0123456789abcdef "
				  "'cluster=c;holder=a@b;pid=1;lock=0123456789abcdef;since=1;expires=2' || "
				  "echo @@gc:T0K3N:failed; echo @@gc:T0K3N:end"));
	free(s);
	/* a value outside the lease's characters, or a lock not ours: a read only */
	s = gc_esxi_script_lease("T0K3N", NULL, GC_ESXI_OBS_LEASE, "0123456789abcdef", "a;$(reboot)");
	assert_null(strstr(s, "took"));
	assert_null(strstr(s, "$(reboot)"));
	assert_non_null(strstr(s, "echo @@lease:$1:none;; *)"));
	free(s);
	s = gc_esxi_script_lease("T0K3N", NULL, GC_ESXI_OBS_EXIT_MM | GC_ESXI_OBS_LEASE_CLEAR, "0123456789abcdef",
				 NULL);
	assert_non_null(strstr(s, "echo @@gc:T0K3N:17; esxcli system maintenanceMode set -e false && "
				  "echo @@gc:T0K3N:18 && sh -c 'r=$(esxcli --formatter=xml system settings "
				  "advanced list -o /UserVars/GpuclusterctlLease 2>&1) || { "));
	assert_non_null(strstr(s, "' lease 0123456789abcdef || echo @@gc:T0K3N:failed; echo @@gc:T0K3N:end"));
	free(s);
	s = gc_esxi_script_lease("T0K3N", NULL, GC_ESXI_OBS_EXIT_MM | GC_ESXI_OBS_LEASE_CLEAR, "01;x", NULL);
	assert_null(strstr(s, "@@gc:T0K3N:18"));
	assert_non_null(strstr(s, "maintenanceMode set -e false || echo @@gc:T0K3N:failed; "));
	free(s);

	assert_int_equal(gc_esxi_parse_observation(&f, "K", took_new, strlen(took_new), &err), 0);
	assert_true(f.lease_read);
	assert_true(f.lease_took);
	assert_false(f.lease_option);
	assert_string_equal(f.lease, "");
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", took_held, strlen(took_held), &err), 0);
	assert_true(f.lease_took);
	assert_true(f.lease_option);
	assert_string_equal(f.lease, "");
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", theirs, strlen(theirs), &err), 0);
	assert_false(f.lease_took);
	assert_string_equal(f.lease, "cluster=c;lock=fedcba9876543210;");
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", cleared, strlen(cleared), &err), 0);
	assert_true(f.exit_sent);
	assert_int_equal(f.lease_clear, GC_ESXI_LEASE_CLEARED);
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", kept, strlen(kept), &err), 0);
	assert_int_equal(f.lease_clear, GC_ESXI_LEASE_KEPT);
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", exit_refused, strlen(exit_refused), &err), 0);
	assert_true(f.exit_failed);
	assert_int_equal(f.lease_clear, 0);
	gc_esxi_facts_free(&f);
	assert_int_equal(gc_esxi_parse_observation(&f, "K", clear_failed, strlen(clear_failed), &err), 0);
	assert_true(f.exit_sent);
	assert_int_equal(f.lease_clear, 0);
	assert_int_equal(f.nfailed, 0);
	gc_esxi_facts_free(&f);
	(void)state;
}

/* The read-back behind a reboot poll's guard: the exact head, the batch
 * after it unchanged, and what each answer of the guard comes to. */
static void test_guarded_read_back(void **state)
{
	char *batch = gc_esxi_script_lease("T0K3N", NULL, GC_ESXI_OBS_EXIT_MM, NULL, NULL);
	char *s = gc_esxi_script_guarded("T0K3N", NULL, GC_ESXI_OBS_EXIT_MM, NULL, 1234567890123LL);
	const char *head = "echo @@gc:T0K3N:up; sh -c 'u=$(esxcli system stats uptime get) || exit 2; "
			   "echo \"$u\"; [ \"$u\" -lt \"$1\" ]' up 1234567890123 || exit 0; ";
	const char *ran = "@@gc:K:up\n2100000\n@@gc:K:1\nVMware ESXi 8.0.2 build-22380479\n";
	const char *up_still = "@@gc:K:up\n1234567990123\n";
	const char *no_uptime = "@@gc:K:up\n";
	const char *forged = "@@gc:K:up\n@@gc:K:1\n";
	long long up;
	size_t rest;

	assert_int_equal(strncmp(s, head, strlen(head)), 0);
	assert_string_equal(s + strlen(head), batch);
	assert_true(gc_esxi_guard_split("K", ran, strlen(ran), &up, &rest));
	assert_int_equal(up, 2100000);
	assert_string_equal(ran + rest, "@@gc:K:1\nVMware ESXi 8.0.2 build-22380479\n");
	/* not rebooted yet: the uptime, nothing run after it */
	assert_false(gc_esxi_guard_split("K", up_still, strlen(up_still), &up, &rest));
	assert_int_equal(up, 1234567990123LL);
	assert_int_equal(rest, strlen(up_still));
	/* no uptime (esxcli not up yet), or a batch without one: nothing ran */
	assert_false(gc_esxi_guard_split("K", no_uptime, strlen(no_uptime), &up, &rest));
	assert_int_equal(up, -1);
	assert_false(gc_esxi_guard_split("K", forged, strlen(forged), &up, &rest));
	assert_false(gc_esxi_guard_split("X", ran, strlen(ran), &up, &rest));
	assert_false(gc_esxi_guard_split("K", ran, 8, &up, &rest));
	free(s);
	free(batch);
	(void)state;
}

/* What the record makes of a PF's firmware: the next boot's values; more
 * VFs than the spec's is no change (the planner's "at least"); without MFT
 * the desired values (nothing to do). */
static void test_record_nic_firmware(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf problems = GC_BUF_INIT;
	struct gc_observed *obs;
	struct gc_esxi_facts f;
	struct gc_graph *g;
	struct gc_target *t;
	struct gc_resource *r = NULL, *r2 = NULL;
	const struct gc_resource *rs[2];
	const char *mft = "@@gc:K:14\n" MST_STATUS "@@mft:K:dev:mt4115_pciconf0\n"
			  MLXCONFIG_Q("mt4115_pciconf0", "True(1)", "16")
			  "@@mft:K:dev:mt4115_pciconf0.1\n"
			  MLXCONFIG_Q("mt4115_pciconf0.1", "False(0)", "0") "@@gc:K:end\n";
	const char *none = "@@gc:K:14\n@@mft:K:none\n@@gc:K:end\n";

	gc_graph_new(&g);
	t = gc_graph_add_target(g, GC_TARGET_ESXI, "esx01");
	assert_int_equal(gc_graph_add(&r, g, GC_RES_ESXI_NIC_FIRMWARE, t,
				      "esx01/esxi.nic_firmware/0000:03:00.0", "esx01", NULL, 0, &err), 0);
	assert_int_equal(gc_graph_add(&r2, g, GC_RES_ESXI_NIC_FIRMWARE, t,
				      "esx01/esxi.nic_firmware/0000:03:00.1", "esx01", NULL, 0, &err), 0);
	gc_resource_set(g, r, "sriov_en", "true");
	gc_resource_set(g, r, "num_of_vfs", "8");
	gc_resource_set(g, r2, "sriov_en", "true");
	gc_resource_set(g, r2, "num_of_vfs", "4");
	rs[0] = r;
	rs[1] = r2;

	assert_int_equal(gc_esxi_parse_observation(&f, "K", mft, strlen(mft), &err), 0);
	gc_observed_new(&obs);
	gc_esxi_record(obs, "esx01", rs, 2, &f, &problems);
	assert_int_equal(problems.len, 0);
	assert_string_equal(gc_observed_get(obs, r->id, "sriov_en"), "true");
	assert_string_equal(gc_observed_get(obs, r->id, "num_of_vfs"), "16");
	assert_true(gc_plan_value_same(r, "16", "8"));   /* at least 8: converged */
	assert_true(gc_plan_value_same(r, "8", "8"));
	assert_false(gc_plan_value_same(r, "4", "8"));
	assert_false(gc_plan_value_same(r, "false", "true"));
	assert_false(gc_plan_value_same(r, NULL, "8"));
	assert_string_equal(gc_observed_get(obs, r2->id, "sriov_en"), "false");
	assert_string_equal(gc_observed_get(obs, r2->id, "num_of_vfs"), "0");
	gc_observed_free(obs);
	gc_esxi_facts_free(&f);

	assert_int_equal(gc_esxi_parse_observation(&f, "K", none, strlen(none), &err), 0);
	gc_observed_new(&obs);
	gc_esxi_record(obs, "esx01", rs, 2, &f, &problems);
	assert_int_equal(problems.len, 0);
	assert_string_equal(gc_observed_get(obs, r2->id, "sriov_en"), "true");
	assert_string_equal(gc_observed_get(obs, r2->id, "num_of_vfs"), "4");
	gc_observed_free(obs);
	gc_esxi_facts_free(&f);
	gc_graph_free(g);
	(void)state;
}

/* issue 12: the spec's ESXi version is compared with vmware -v, by the
 * numbers the spec gives */
static void test_version_against_the_spec(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf problems = GC_BUF_INIT;
	struct gc_esxi_facts f;
	const char *v67 = "@@gc:K:1\nVMware ESXi 6.7.0 build-8169922\n@@gc:K:end\n";

	(void)state;
	assert_true(gc_esxi_version_matches("8.0", "8.0.2"));
	assert_true(gc_esxi_version_matches("8.0.2", "8.0.2"));
	assert_true(gc_esxi_version_matches("8", "8.0.3"));
	assert_true(gc_esxi_version_matches(NULL, "8.0.2"));
	assert_true(gc_esxi_version_matches("8.0.2", NULL));
	assert_false(gc_esxi_version_matches("8.0.2", "8.0.3"));
	assert_false(gc_esxi_version_matches("8.0.2", "8.0"));
	assert_false(gc_esxi_version_matches("8.0", "8.01"));
	assert_false(gc_esxi_version_matches("7.0", "70.0"));
	assert_false(gc_esxi_version_matches("8.0.2", "6.7.0"));
	assert_true(gc_esxi_version_matches("8.0.2a", "8.0.2a"));
	assert_false(gc_esxi_version_matches("8.0.2a", "8.0.2"));

	assert_int_equal(gc_esxi_parse_observation(&f, "K", v67, strlen(v67), &err), 0);
	assert_true(gc_esxi_check_version("esx01", "6.7", &f, &problems));
	assert_string_equal(gc_buf_str(&problems), "");
	assert_false(gc_esxi_check_version("esx01", "8.0.2", &f, &problems));
	assert_string_equal(gc_buf_str(&problems),
			    "host 'esx01' runs ESXi 6.7.0 (vmware -v), but the spec says version: "
			    "\"8.0.2\": correct the spec's version, or bring the host to that release "
			    "first (gpuclusterctl does not upgrade ESXi)\n");
	gc_esxi_facts_free(&f);
	gc_buf_free(&problems);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script_exact),
		cmocka_unit_test(test_parse_all_sections),
		cmocka_unit_test(test_pending_passthru_and_vib),
		cmocka_unit_test(test_cut_short_is_retryable),
		cmocka_unit_test(test_failed_sections),
		cmocka_unit_test(test_garbage_section_is_remote_error),
		cmocka_unit_test(test_repeated_section_is_refused),
		cmocka_unit_test(test_marker_number_within_its_bytes),
		cmocka_unit_test(test_version_forms),
		cmocka_unit_test(test_script_learns_from_the_bundle),
		cmocka_unit_test(test_source_vibs_from_the_listing),
		cmocka_unit_test(test_source_vibs_any_field_order),
		cmocka_unit_test(test_source_vibs_hostile),
		cmocka_unit_test(test_source_section),
		cmocka_unit_test(test_record_nmlx5_roce),
		cmocka_unit_test(test_record_namespace_of_release),
		cmocka_unit_test(test_vfs_after_the_reboot),
		cmocka_unit_test(test_mft_samples),
		cmocka_unit_test(test_mft_tolerant),
		cmocka_unit_test(test_mft_not_installed),
		cmocka_unit_test(test_verify_lists_the_vfs),
		cmocka_unit_test(test_lease_and_exit_sections),
		cmocka_unit_test(test_lease_take_and_clear_sections),
		cmocka_unit_test(test_guarded_read_back),
		cmocka_unit_test(test_record_nic_firmware),
		cmocka_unit_test(test_version_against_the_spec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
