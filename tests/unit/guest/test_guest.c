/*
 * test_guest.c - the guest driver's observation parser, recorder and
 * renderers, on captured output: nvidia-smi -q -x from a real H100
 * passthrough guest (tests/data/guest/), `ip -j addr` as iproute2 prints
 * it, the mlnx_qos layout of REAL-FORMATS C.1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gc/guest.h"
#include "gc/util.h"

#define TOKEN "0123456789abcdef"

static struct gc_roce_qos qos = {.interface = "ens224", .rdma_device = "mlx5_0",
				 .trust = "dscp", .pfc_priority = 3, .tos = 106, .ecn = true};
static struct gc_rdma_if rif = {.name = "ens224", .address = "198.18.0.51/24", .mtu = 9000};

static struct gc_guest guest(void)
{
	struct gc_guest g;

	memset(&g, 0, sizeof(g));
	g.address = "127.0.0.51";
	g.os = "debian";
	g.nvidia_driver = "535";
	g.rdma_packages = true;
	g.peermem = true;
	g.roce_qos = &qos;
	g.rdma_interface = &rif;
	return g;
}

static char *slurp(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_read_file(&text, &len, path, 1 << 22, &err), 0);
	return text;
}

static void section(struct gc_buf *b, const char *name, const char *body)
{
	gc_buf_printf(b, "\n@@gc:" TOKEN ":%s\n%s", name, body);
}

/* A whole observation as the script prints it: every section. */
static char *observation(const char *smi, const char *qos_body, const char *netcfg)
{
	struct gc_buf b = GC_BUF_INIT;

	section(&b, "id", "1000\n");
	section(&b, "os", "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n"
			  "VERSION_ID=\"12\"\n");
	section(&b, "kernel", "6.1.0-41-amd64\n");
	section(&b, "boot_id", "5f0c3f2e-1c7e-4f57-9d61-b7a7b7b0d6f1\n");
	section(&b, "pkgs", "rdma-core\t44.0-2\tii \nibverbs-utils\t44.0-2\tii \nperftest\t4.5-0.17-1"
			    "\tii \ninfiniband-diags\t44.0-2\tii \nnvidia-driver\t535.183.01-1~gclab"
			    "\tii \nchrony\t\tun \n");
	section(&b, "modules", "nvidia_peermem\nnvidia\nrdma_rxe\nib_core\n");
	section(&b, "modules_conf", "# written by gpuclusterctl: GPUDirect RDMA\nnvidia_peermem\n");
	section(&b, "smi", smi);
	section(&b, "nvidia_loaded", "535.183.01\n");
	section(&b, "nvidia_installer", "");
	section(&b, "gridd", "# comment\nServerAddress=license.lab.example\nServerPort=7070\n"
			     "FeatureType=1\n");
	section(&b, "token", "");
	section(&b, "ofed", "");
	section(&b, "ctk", "");
	section(&b, "net", "networkd\n");
	section(&b, "ip", "[{\"ifindex\":3,\"ifname\":\"ens224\",\"mtu\":9000,\"addr_info\":["
			  "{\"family\":\"inet\",\"local\":\"198.18.0.51\",\"prefixlen\":24},"
			  "{\"family\":\"inet6\",\"local\":\"fe80::1\",\"prefixlen\":64}]}]\n");
	section(&b, "netcfg", netcfg);
	section(&b, "qos", qos_body);
	section(&b, "dcb_pfc", "");
	section(&b, "dcb_app", "");
	section(&b, "ecn", "");
	section(&b, "rdma", "[{\"ifindex\":0,\"ifname\":\"mlx5_0\",\"port\":1,\"state\":\"ACTIVE\","
			    "\"physical_state\":\"LINK_UP\",\"netdev\":\"ens224\",\"netdev_index\":3}]\n");
	section(&b, "tos", "106\n");
	section(&b, "tclass", "");
	section(&b, "qos_unit", "enabled\n");
	section(&b, "qos_script", "");
	section(&b, "chrony_conf", "");
	section(&b, "chrony_active", "inactive\n");
	section(&b, "end", "");
	return gc_buf_take(&b);
}

static const char MLNX_QOS[] =
	"tool: mlnx_qos\nDCBX mode: OS controlled\nPriority trust state: dscp\n"
	"dscp2prio mapping:\n\tprio:0 dscp:07,06,05,04,03,02,01,00,\n"
	"Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=262016\n"
	"PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n"
	"\tenabled     0   0   0   1   0   0   0   0\n\tbuffer      0   0   0   1   0   0   0   0\n"
	"tc: 0 ratelimit: unlimited, tsa: ets, bw: 50%\n";

/* The real H100 passthrough capture: driver, mode, memory, no licence element. */
static void test_smi_capture(void **state)
{
	struct gc_guest_facts f;
	char *xml = slurp("tests/data/guest/nvidia-smi-q-x.xml");

	memset(&f, 0, sizeof(f));
	assert_int_equal(gc_guest_parse_smi_xml(&f, xml, strlen(xml)), 0);
	assert_true(f.smi);
	assert_string_equal(f.driver_version, "580.159.04");
	assert_int_equal(f.ngpus, 1);
	assert_string_equal(f.product, "NVIDIA H100 80GB HBM3");
	assert_string_equal(f.virt_mode, "Pass-Through");
	assert_int_equal(f.fb_mib, 81559);
	assert_null(f.license_status);
	gc_guest_facts_free(&f);
	free(xml);
	(void)state;
}

/* Not XML (the driver is not loaded): a parse error, not a crash. */
static void test_smi_failure_text(void **state)
{
	struct gc_guest_facts f;
	const char *t = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.";

	memset(&f, 0, sizeof(f));
	assert_int_equal(gc_guest_parse_smi_xml(&f, t, strlen(t)), -1);
	assert_false(f.smi);
	(void)state;
}

static void test_parse_whole_observation(void **state)
{
	struct gc_guest g = guest();
	struct gc_guest_facts f;
	struct gc_error err = GC_ERROR_INIT;
	char *xml = slurp("tests/data/guest/nvidia-smi-q-x.xml");
	char *cfg = gc_guest_render_netcfg(&rif, GC_GNET_NETWORKD);
	struct gc_buf nc = GC_BUF_INIT;
	char *text;

	gc_buf_printf(&nc, "#file /etc/systemd/network/60-gpuclusterctl-ens224.network\n%s", cfg);
	text = observation(xml, MLNX_QOS, gc_buf_str(&nc));
	assert_int_equal(gc_guest_parse(&f, &g, TOKEN, text, strlen(text), &err), 0);
	assert_false(f.root);
	assert_string_equal(f.os_id, "debian");
	assert_string_equal(f.os_version, "12");
	assert_string_equal(f.boot_id, "5f0c3f2e-1c7e-4f57-9d61-b7a7b7b0d6f1");
	assert_int_equal(f.npkgs, 6);
	assert_true(f.pkgs[4].installed);
	assert_string_equal(f.pkgs[4].version, "535.183.01-1~gclab");
	assert_false(f.pkgs[5].installed); /* chrony: "un" */
	assert_int_equal(f.nmodules, 4);
	assert_string_equal(f.gridd_server, "license.lab.example");
	assert_string_equal(f.gridd_feature, "1");
	assert_true(f.if_present);
	assert_int_equal(f.mtu, 9000);
	assert_int_equal(f.naddrs, 1);
	assert_string_equal(f.addrs[0], "198.18.0.51/24");
	assert_int_equal(f.net, GC_GNET_NETWORKD);
	assert_string_equal(f.netcfg, cfg);
	assert_true(f.mlnx_qos);
	assert_string_equal(f.trust, "dscp");
	assert_int_equal(f.pfc_priority, 3);
	assert_int_equal(f.tos, 106);
	assert_int_equal(f.traffic_class, -1);
	assert_int_equal(f.ecn, 1);
	assert_string_equal(f.rdma_netdev, "ens224");
	assert_string_equal(f.rdma_state, "ACTIVE");
	assert_string_equal(f.qos_unit, "enabled");
	assert_null(f.qos_script);
	assert_false(f.chrony_active);
	gc_guest_facts_free(&f);
	free(text);
	free(xml);
	free(cfg);
	gc_buf_free(&nc);
	(void)state;
}

/* A truncated observation (the connection dropped) is an error. */
static void test_truncated(void **state)
{
	struct gc_guest g = guest();
	struct gc_guest_facts f;
	struct gc_error err = GC_ERROR_INIT;
	char *text = observation("", "", "");
	char *cut = strstr(text, "@@gc:" TOKEN ":ip");

	*cut = '\0';
	assert_int_equal(gc_guest_parse(&f, &g, TOKEN, text, strlen(text), &err), GC_EREMOTE);
	assert_string_equal(err.msg, "the observation ended early (15 of its sections came back)");
	free(text);
	(void)state;
}

/* A forged marker with another token is content, not a section. */
static void test_forged_marker(void **state)
{
	struct gc_guest g = guest();
	struct gc_guest_facts f;
	struct gc_error err = GC_ERROR_INIT;
	char *text = observation("", "", "");
	struct gc_buf b = GC_BUF_INIT;
	char *p = strstr(text, "@@gc:" TOKEN ":kernel");

	gc_buf_put(&b, text, (size_t)(p - text));
	gc_buf_puts(&b, "@@gc:ffffffffffffffff:end\n");
	gc_buf_puts(&b, p);
	assert_int_equal(gc_guest_parse(&f, &g, TOKEN, gc_buf_str(&b), b.len, &err), 0);
	assert_string_equal(f.os_id, "debian");
	gc_guest_facts_free(&f);
	gc_buf_free(&b);
	free(text);
	(void)state;
}

static void test_dcb_json(void **state)
{
	struct gc_guest_facts f;

	memset(&f, 0, sizeof(f));
	gc_guest_parse_dcb(&f, "{\"pfc_cap\":8,\"prio_pfc\":{\"0\":false,\"1\":false,\"2\":false,"
			       "\"3\":true,\"4\":false}}",
			   "{\"dscp_prio\":[[26,3]]}");
	assert_int_equal(f.pfc_priority, 3);
	assert_string_equal(f.trust, "dscp");
	gc_guest_facts_free(&f);
	memset(&f, 0, sizeof(f));
	gc_guest_parse_dcb(&f, "{\"prio_pfc\":{\"3\":true,\"4\":true}}", "{}");
	assert_int_equal(f.pfc_priority, -2);
	assert_string_equal(f.trust, "pcp");
	gc_guest_facts_free(&f);
	/* keys that are no priority 0-7 are not read as one (found by
	 * fuzz_guest_parts: "9" became priority 9, "x" priority 0) */
	memset(&f, 0, sizeof(f));
	gc_guest_parse_dcb(&f, "{\"prio_pfc\":{\"9\":true,\"x\":true,\"-1\":true,\"3\":true,"
			       "\"33\":true}}",
			   NULL);
	assert_int_equal(f.pfc_priority, 3);
	gc_guest_facts_free(&f);
	(void)state;
}

/* Members that are null or not strings where iproute2 prints names (a
 * guest's output is not trusted) are skipped; they crashed the reader
 * (strcmp on NULL), found by fuzz_guest_parts. */
static void test_ip_rdma_json_odd_members(void **state)
{
	static const char ip[] =
		"[{\"ifname\":null},{\"ifname\":7},{\"ifname\":\"ens224\",\"mtu\":9000,"
		"\"addr_info\":[{\"family\":null,\"local\":\"10.0.0.1\",\"prefixlen\":8},"
		"{\"family\":\"inet\",\"local\":null,\"prefixlen\":8},"
		"{\"family\":\"inet\",\"local\":\"198.18.0.51\",\"prefixlen\":24}]}]";
	static const char rdma[] =
		"[{\"ifname\":null},{\"ifname\":\"mlx5_0\",\"netdev\":null,\"state\":\"ACTIVE\"}]";
	struct gc_guest_facts f;

	memset(&f, 0, sizeof(f));
	assert_int_equal(gc_guest_parse_ip_json(&f, "ens224", ip), 0);
	assert_true(f.if_present);
	assert_int_equal(f.mtu, 9000);
	assert_int_equal(f.naddrs, 1);
	assert_string_equal(f.addrs[0], "198.18.0.51/24");
	assert_int_equal(gc_guest_parse_rdma_json(&f, "mlx5_0", rdma), 0);
	assert_null(f.rdma_netdev);
	assert_string_equal(f.rdma_state, "ACTIVE");
	gc_guest_facts_free(&f);
	(void)state;
}

static void test_render_networkd_exact(void **state)
{
	char *s = gc_guest_render_netcfg(&rif, GC_GNET_NETWORKD);

	assert_string_equal(s, "# written by gpuclusterctl: do not edit, the next apply puts it back\n"
			       "[Match]\nName=ens224\n\n[Link]\nMTUBytes=9000\n\n[Network]\n"
			       "Address=198.18.0.51/24\nLinkLocalAddressing=no\n"
			       "ConfigureWithoutCarrier=yes\n");
	free(s);
	s = gc_guest_render_netcfg(&rif, GC_GNET_IFCFG);
	assert_non_null(strstr(s, "IPADDR=198.18.0.51\nPREFIX=24\n"));
	free(s);
	(void)state;
}

static void test_render_qos_script(void **state)
{
	char *s = gc_guest_render_qos_script(&qos);

	assert_non_null(strstr(s, "IF=ens224 DEV=mlx5_0 TRUST=dscp PRIO=3 TOS=106 ECN=1\n"));
	assert_non_null(strstr(s, "mlnx_qos -i $IF --pfc 0,0,0,1,0,0,0,0 >/dev/null\n"));
	assert_non_null(strstr(s, "dcb pfc set dev $IF prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off "
				  "6:off 7:off\n"));
	assert_non_null(strstr(s, "dcb app replace dev $IF dscp-prio 26:3\n"));
	assert_non_null(strstr(s, "echo $TOS > /sys/kernel/config/rdma_cm/$DEV/ports/1/default_roce_tos"));
	free(s);
	(void)state;
}

/* Converged facts record exactly the desired values; drift shows as itself. */
static void test_record(void **state)
{
	struct gc_guest g = guest();
	struct gc_guest_facts f;
	struct gc_error err = GC_ERROR_INIT;
	char *xml = slurp("tests/data/guest/nvidia-smi-q-x.xml");
	char *cfg = gc_guest_render_netcfg(&rif, GC_GNET_NETWORKD);
	struct gc_buf nc = GC_BUF_INIT;
	struct gc_graph *gr;
	struct gc_target *t;
	struct gc_resource *rif_res, *qos_res, *drv, *stack, *peer;
	struct gc_observed *obs;
	const struct gc_resource *res[5];
	char *text;

	gc_buf_printf(&nc, "#file /etc/systemd/network/60-gpuclusterctl-ens224.network\n%s", cfg);
	gc_buf_putc(&nc, '\n'); /* then a drift: an extra line */
	text = observation(xml, MLNX_QOS, gc_buf_str(&nc));
	assert_int_equal(gc_guest_parse(&f, &g, TOKEN, text, strlen(text), &err), 0);
	gc_graph_new(&gr);
	t = gc_graph_add_target(gr, GC_TARGET_GUEST, "worker-01");
	assert_int_equal(gc_graph_add(&drv, gr, GC_RES_GUEST_DRIVER, t, "guest/worker-01/driver",
				      NULL, "worker-01", GC_RES_NEEDS_REBOOT, &err), 0);
	gc_resource_set(gr, drv, "branch", "535");
	assert_int_equal(gc_graph_add(&rif_res, gr, GC_RES_GUEST_RDMA_IF, t,
				      "guest/worker-01/rdma_interface", NULL, "worker-01", 0, &err), 0);
	gc_resource_set(gr, rif_res, "address", "198.18.0.51/24");
	gc_resource_set(gr, rif_res, "mtu", "9000");
	gc_resource_set(gr, rif_res, "persistent", "true");
	assert_int_equal(gc_graph_add(&qos_res, gr, GC_RES_GUEST_ROCE_QOS, t,
				      "guest/worker-01/roce_qos", NULL, "worker-01", 0, &err), 0);
	gc_resource_set(gr, qos_res, "pfc_priority", "3");
	gc_resource_set(gr, qos_res, "tos", "106");
	gc_resource_set(gr, qos_res, "boot_unit", "enabled");
	assert_int_equal(gc_graph_add(&stack, gr, GC_RES_GUEST_RDMA_STACK, t,
				      "guest/worker-01/rdma_stack", NULL, "worker-01", 0, &err), 0);
	gc_resource_set(gr, stack, "stack", "packages");
	assert_int_equal(gc_graph_add(&peer, gr, GC_RES_GUEST_PEERMEM, t, "guest/worker-01/peermem",
				      NULL, "worker-01", 0, &err), 0);
	gc_resource_set(gr, peer, "module", "nvidia_peermem");
	gc_resource_set(gr, peer, "loaded", "true");
	gc_resource_set(gr, peer, "persistent", "true");
	res[0] = drv;
	res[1] = rif_res;
	res[2] = qos_res;
	res[3] = stack;
	res[4] = peer;
	gc_observed_new(&obs);
	gc_guest_record(obs, &g, res, 5, &f, NULL);
	assert_string_equal(gc_observed_get(obs, "guest/worker-01/rdma_stack", "stack"), "packages");
	assert_string_equal(gc_observed_get(obs, "guest/worker-01/peermem", "loaded"), "true");
	assert_string_equal(gc_observed_get(obs, "guest/worker-01/peermem", "persistent"), "true");
	/* the stand-in package says 535.183.01: in branch 535 */
	assert_string_equal(gc_observed_get(obs, "guest/worker-01/driver", "branch"), "535");
	assert_string_equal(gc_observed_get(obs, "guest/worker-01/rdma_interface", "address"),
			    "198.18.0.51/24");
	assert_string_equal(gc_observed_get(obs, "guest/worker-01/rdma_interface", "mtu"), "9000");
	assert_string_equal(gc_observed_get(obs, "guest/worker-01/rdma_interface", "persistent"),
			    "different");
	assert_string_equal(gc_observed_get(obs, "guest/worker-01/roce_qos", "pfc_priority"), "3");
	assert_string_equal(gc_observed_get(obs, "guest/worker-01/roce_qos", "tos"), "106");
	/* the unit is enabled but its script is not ours */
	assert_string_equal(gc_observed_get(obs, "guest/worker-01/roce_qos", "boot_unit"),
			    "different script");
	/* keys the resource does not want are not recorded */
	assert_null(gc_observed_get(obs, "guest/worker-01/roce_qos", "trust"));
	gc_observed_free(obs);
	gc_graph_free(gr);
	gc_guest_facts_free(&f);
	gc_buf_free(&nc);
	free(cfg);
	free(text);
	free(xml);
	(void)state;
}

/* POSIX cksum, as coreutils' cksum prints it for the same bytes. */
static void test_cksum(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	char path[] = "/tmp/gc-test-cksum-XXXXXX";
	int fd = mkstemp(path);
	char *s;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello\n", 6), 6);
	close(fd);
	s = gc_guest_cksum_file(path, &err);
	assert_string_equal(s, "3015617425 6"); /* printf 'hello\n' | cksum */
	free(s);
	unlink(path);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_smi_capture),
		cmocka_unit_test(test_smi_failure_text),
		cmocka_unit_test(test_parse_whole_observation),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_forged_marker),
		cmocka_unit_test(test_dcb_json),
		cmocka_unit_test(test_ip_rdma_json_odd_members),
		cmocka_unit_test(test_render_networkd_exact),
		cmocka_unit_test(test_render_qos_script),
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_cksum),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
