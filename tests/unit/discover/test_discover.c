/*
 * test_discover.c - src/discover without a target: a host's facts (as the
 * ESXi driver's parser leaves them) to discover's JSON, that JSON to a spec,
 * and the spec loaded back.  The lab runs the whole command
 * (tests/integration/test_discover.py).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "discover_int.h"
#include "gc/discover.h"
#include "gc/json.h"

#define PCI(addr, ven, dev, name, cls, vmk, mod, pt)                                          \
	{addr, pt, pt, (char *)(ven), (char *)(dev), (char *)(name), (char *)(vmk), (char *)(mod), \
	 (char *)(cls)}

/* PCI order scrambled; one Mellanox port in passthrough; max_vfs for the
 * three nmlx5_core ports; a GPU whose id is in no table row. */
static struct gc_esxi_pci pci[] = {
	PCI("0000:d8:00.0", "0x15b3", "0xa2d6", "MT42822 BlueField-2 integrated ConnectX-6 Dx",
	    "0x0200", "vmnic8", "nmlx5_core", false),
	PCI("0000:18:00.0", "0x8086", "0x1572", "Ethernet Controller X710 for 10GbE SFP+", "0x0200",
	    "vmnic0", "i40en", false),
	PCI("0000:5e:00.1", "0x15b3", "0x1017", "MT27800 Family [ConnectX-5]", "0x0200", "vmnic5",
	    "nmlx5_core", false),
	PCI("0000:5e:00.0", "0x15b3", "0x1017", "MT27800 Family [ConnectX-5]", "0x0200", "vmnic4",
	    "nmlx5_core", false),
	PCI("0000:af:00.0", "0x15b3", "0x101d", "MT2892 Family [ConnectX-6 Dx]", "0x0200", "",
	    "pciPassthru", true),
	PCI("0000:3b:00.0", "0x10de", "0x1db6", "GV100GL [Tesla V100 PCIe 32GB]", "0x0302", "",
	    "pciPassthru", true),
	PCI("0000:86:00.0", "0x10de", "0x9999", "X\nvms: []", "0x0302", "", "None", false),
	PCI("0000:3b:00.1", "0x10de", "0x10f2", "GV100 High Definition Audio", "0x0403", "", "None",
	    false),
};
static struct gc_esxcli_field params[] = {{(char *)"max_vfs", (char *)"0,4,8"},
					   {(char *)"trust_state", (char *)""}};
static char *failed[] = {(char *)"esxcli --formatter=xml hardware pci pcipassthru list: command failed"};

static void facts(struct gc_esxi_facts *f)
{
	memset(f, 0, sizeof(*f));
	f->version = (char *)"8.0.2";
	f->build = (char *)"build-22380479";
	f->graphics_default_type = (char *)"Shared";
	f->pci = pci;
	f->npci = GC_ARRAY_LEN(pci);
	f->nmlx5_params = params;
	f->nnmlx5_params = GC_ARRAY_LEN(params);
	f->nmlx5_core_present = true;
	f->ntp_enabled = true;
	f->ntp_servers = (char *)"ntp1.lab.example,bad host!,ntp2.lab.example";
	f->failed = failed;
	f->nfailed = 1;
}

static const char *str(json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

static void test_esxi_facts_to_json(void **state)
{
	struct gc_esxi_facts f;
	json_object *o = json_object_new_object(), *v;

	(void)state;
	facts(&f);
	discover_esxi_json(o, &f);
	assert_true(json_object_object_get_ex(o, "gpus", &v));
	assert_string_equal(str(v),
		"[{\"pci\":\"0000:3b:00.0\",\"vendor_id\":\"0x10de\",\"device_id\":\"0x1db6\","
		"\"device_name\":\"GV100GL [Tesla V100 PCIe 32GB]\",\"model\":\"V100-32GB\","
		"\"memory_gb\":32,\"mode\":\"passthrough\",\"passthru_configured\":true,"
		"\"passthru_active\":true},"
		"{\"pci\":\"0000:86:00.0\",\"vendor_id\":\"0x10de\",\"device_id\":\"0x9999\","
		"\"device_name\":\"X\\nvms: []\",\"model\":null,\"memory_gb\":null,\"mode\":\"unused\","
		"\"passthru_configured\":false,\"passthru_active\":false}]");
	/* port order 5e:00.0, 5e:00.1, (af:00.0 passthrough: no slot), d8:00.0 */
	assert_true(json_object_object_get_ex(o, "nics", &v));
	assert_int_equal(json_object_array_length(v), 4);
	assert_string_equal(str(json_object_array_get_idx(v, 0)),
		"{\"pci\":\"0000:5e:00.0\",\"vendor_id\":\"0x15b3\",\"device_id\":\"0x1017\","
		"\"device_name\":\"MT27800 Family [ConnectX-5]\",\"vmnic\":\"vmnic4\","
		"\"module\":\"nmlx5_core\",\"model\":\"ConnectX-5\",\"max_vfs\":127,\"mode\":\"none\","
		"\"vfs\":null}");
	assert_string_equal(str(json_object_object_get(json_object_array_get_idx(v, 1), "vfs")), "4");
	assert_string_equal(str(json_object_array_get_idx(v, 2)),
		"{\"pci\":\"0000:af:00.0\",\"vendor_id\":\"0x15b3\",\"device_id\":\"0x101d\","
		"\"device_name\":\"MT2892 Family [ConnectX-6 Dx]\",\"vmnic\":null,"
		"\"module\":\"pciPassthru\",\"model\":\"ConnectX-6 Dx\",\"max_vfs\":127,"
		"\"mode\":\"passthrough\",\"vfs\":null}");
	/* BlueField-2 comes first in its name, before the ConnectX-6 Dx it integrates */
	assert_string_equal(str(json_object_object_get(json_object_array_get_idx(v, 3), "model")),
			    "\"BlueField-2\"");
	assert_string_equal(str(json_object_object_get(json_object_array_get_idx(v, 3), "vfs")), "8");
	assert_string_equal(str(json_object_object_get(o, "other_nics")),
		"[{\"pci\":\"0000:18:00.0\",\"vendor_id\":\"0x8086\",\"device_id\":\"0x1572\","
		"\"device_name\":\"Ethernet Controller X710 for 10GbE SFP+\",\"class\":\"0x0200\","
		"\"vmnic\":\"vmnic0\"}]");
	assert_string_equal(str(json_object_object_get(o, "ntp")),
			    "[\"ntp1.lab.example\",\"ntp2.lab.example\"]");
	assert_string_equal(str(json_object_object_get(o, "unavailable")),
			    "[\"hardware pci pcipassthru list\"]");
	json_object_put(o);
}

static const char conn[] =
	"apiVersion: gpuclusterctl/v1\n"
	"kind: Cluster\n"
	"metadata: {name: lab}\n"
	"credentials:\n"
	"  - {name: root, username: root, password_env: GC_ESXI_PASSWORD}\n"
	"hosts:\n"
	"  - {name: esx01, address: 127.0.0.11, credentials: root}\n";

static const char expected[] =
	"# Discovered by `gpuclusterctl discover` from the targets of conn.yaml (read-only).\n"
	"# Connection settings and credential references are the input's; no secret is here.\n"
	"# Review, then add what discover cannot know: vms:, each switch's roce: section,\n"
	"# the vGPU manager bundle of vGPU hosts.  What the targets hold that a spec\n"
	"# cannot say is listed after the document.\n"
	"# Left out:\n"
	"#   host 'esx01': GPU 0000:86:00.0 (model not in the table, X\\u000avms: []) is neither "
	"passthrough nor vGPU: add it with the mode you want and memory_gb\n"
	"#   host 'esx01' (ESXi 8.0.2) does not answer: hardware pci pcipassthru list\n"
	"apiVersion: gpuclusterctl/v1\n"
	"kind: Cluster\n"
	"metadata:\n"
	"  name: lab\n"
	"credentials:\n"
	"- {name: root, username: root, password_env: GC_ESXI_PASSWORD}\n"
	"ssh: {port: 22, trust_new_host_keys: false, connect_timeout_s: 10, command_timeout_s: 300, read_timeout_s: 60,\n"
	"  keepalive_s: 15}\n"
	"hosts:\n"
	"- name: esx01\n"
	"  address: \"127.0.0.11\"\n"
	"  credentials: root\n"
	"  version: \"8.0.2\"\n"
	"  ntp: [ntp1.lab.example, ntp2.lab.example]\n"
	"  gpus:\n"
	"  - {pci: \"0000:3b:00.0\", model: V100-32GB, mode: passthrough}\n"
	"  nics:\n"
	"  - {pci: \"0000:5e:00.0\", model: ConnectX-5, device: vmnic4}\n"
	"  - {pci: \"0000:5e:00.1\", model: ConnectX-5, device: vmnic5, mode: sriov, vfs: 4}\n"
	"  - {pci: \"0000:af:00.0\", model: \"ConnectX-6 Dx\", mode: passthrough}\n"
	"  - {pci: \"0000:d8:00.0\", model: BlueField-2, device: vmnic8, mode: sriov, vfs: 8}\n";

static void test_json_to_spec_and_back(void **state)
{
	struct gc_cluster *c = NULL, *back = NULL;
	struct gc_diags diags = {0}, diags2 = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf out = GC_BUF_INIT;
	struct gc_esxi_facts f;
	json_object *doc = json_object_new_object(), *hosts = json_object_new_array();
	json_object *h = json_object_new_object();

	(void)state;
	assert_int_equal(gc_spec_load_buffer(&c, &diags, "conn.yaml", conn, strlen(conn), &err), 0);
	facts(&f);
	json_object_object_add(h, "name", json_object_new_string("esx01"));
	json_object_object_add(h, "read", json_object_new_boolean(true));
	discover_esxi_json(h, &f);
	json_object_array_add(hosts, h);
	json_object_object_add(doc, "hosts", hosts);
	json_object_object_add(doc, "switches", json_object_new_array());
	json_object_object_add(doc, "vcenter", NULL);
	assert_int_equal(gc_discover_yaml(&out, c, doc, &err), 0);
	assert_string_equal(gc_buf_str(&out), expected);
	/* what discover printed is a spec */
	assert_int_equal(gc_spec_load_buffer(&back, &diags2, "found.yaml", out.ptr, out.len, &err), 0);
	assert_int_equal(back->hosts[0].nnics, 4);
	assert_string_equal(back->hosts[0].nmlx5_max_vfs, "0,4,8");
	gc_cluster_free(back);
	gc_diags_free(&diags2);
	gc_cluster_free(c);
	gc_diags_free(&diags);
	json_object_put(doc);
	gc_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_esxi_facts_to_json),
		cmocka_unit_test(test_json_to_spec_and_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
