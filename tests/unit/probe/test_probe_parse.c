/*
 * test_probe_parse.c - the text parsers on captured outputs
 * (tests/data/probe/, shared/REAL-FORMATS.md C.*), including malformed and
 * truncated ones, which must fail with the line number and not crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <string.h>

#include "gc/probe.h"
#include "probe_test.h"

static void test_ibv_devinfo_roce(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_rdma *r = calloc(1, sizeof(*r));
	size_t len;
	char *t = probe_data("ibv_devinfo/mlx5-roce.txt", &len);

	assert_int_equal(gc_probe_parse_ibv_devinfo(r, t, len, &err), 0);
	assert_int_equal(r->ndev, 1);
	assert_string_equal(r->devs[0].name, "mlx5_0");
	assert_string_equal(r->devs[0].fw_ver, "16.32.1010");
	assert_string_equal(r->devs[0].node_guid, "043f:7203:00da:2130");
	assert_string_equal(r->devs[0].transport, "InfiniBand (0)");
	assert_int_equal(r->devs[0].nports, 1);
	assert_int_equal(r->devs[0].ports[0].num, 1);
	assert_string_equal(r->devs[0].ports[0].state, "PORT_ACTIVE");
	assert_int_equal(r->devs[0].ports[0].state_num, 4);
	assert_int_equal(r->devs[0].ports[0].max_mtu, 4096);
	assert_int_equal(r->devs[0].ports[0].active_mtu, 1024);
	assert_string_equal(r->devs[0].ports[0].link_layer, "Ethernet");
	free(t);
	free(r);
}

static void test_ibv_devinfo_two(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_rdma *r = calloc(1, sizeof(*r));
	size_t len;
	char *t = probe_data("ibv_devinfo/two-devices-one-down.txt", &len);

	assert_int_equal(gc_probe_parse_ibv_devinfo(r, t, len, &err), 0);
	assert_int_equal(r->ndev, 2);
	assert_string_equal(r->devs[1].name, "mlx5_1");
	assert_string_equal(r->devs[1].ports[0].state, "PORT_DOWN");
	assert_int_equal(r->devs[1].ports[0].state_num, 1);
	free(t);
	t = probe_data("ibv_devinfo/none.txt", &len);
	memset(r, 0, sizeof(*r));
	assert_int_equal(gc_probe_parse_ibv_devinfo(r, t, len, &err), 0);
	assert_int_equal(r->ndev, 0);
	free(t);
	free(r);
}

static void expect_bad(int (*fn)(const char *, size_t, struct gc_error *), const char *rel,
		       const char *msg)
{
	struct gc_error err = GC_ERROR_INIT;
	size_t len;
	char *t = probe_data(rel, &len);

	assert_int_equal(fn(t, len, &err), GC_EINVAL);
	assert_string_equal(err.msg, msg);
	free(t);
}

static int devinfo(const char *t, size_t n, struct gc_error *e)
{
	static struct gc_probe_rdma r;
	memset(&r, 0, sizeof(r));
	return gc_probe_parse_ibv_devinfo(&r, t, n, e);
}

static int gids(const char *t, size_t n, struct gc_error *e)
{
	static struct gc_probe_rdma r;
	memset(&r, 0, sizeof(r));
	return gc_probe_parse_show_gids(&r, t, n, e);
}

static int qos(const char *t, size_t n, struct gc_error *e)
{
	struct gc_probe_qos q;
	return gc_probe_parse_mlnx_qos(&q, t, n, e);
}

static int tclass(const char *t, size_t n, struct gc_error *e)
{
	int tc;
	return gc_probe_parse_traffic_class(&tc, t, n, e);
}

static int nvsmi(const char *t, size_t n, struct gc_error *e)
{
	static struct gc_probe_nvsmi s;
	return gc_probe_parse_nvsmi(&s, t, n, e);
}

static void test_malformed(void **state)
{
	expect_bad(devinfo, "ibv_devinfo/bad-port-before-hca.txt",
		   "ibv_devinfo:1: field before any hca_id");
	expect_bad(devinfo, "ibv_devinfo/bad-state.txt", "ibv_devinfo:12: bad port state");
	expect_bad(gids, "show_gids/bad-gid.txt", "show_gids:3: bad GID");
	expect_bad(gids, "show_gids/bad-version.txt", "show_gids:4: bad GID version");
	expect_bad(gids, "show_gids/truncated.txt", "show_gids:5: truncated row");
	expect_bad(qos, "mlnx_qos/truncated-pfc-row.txt",
		   "mlnx_qos:17: PFC 'enabled' row has fewer than 8 values");
	expect_bad(qos, "mlnx_qos/bad-value.txt", "mlnx_qos:17: PFC 'enabled' value is not 0 or 1");
	expect_bad(qos, "mlnx_qos/no-trust.txt", "mlnx_qos: no 'Priority trust state' line");
	expect_bad(tclass, "traffic_class/bad.txt", "traffic_class:1: expected 'Global tclass=N'");
	expect_bad(tclass, "traffic_class/out-of-range.txt",
		   "traffic_class:1: tclass is not 0..255");
	expect_bad(nvsmi, "nvsmi/bad-fb-total.txt", "nvidia-smi -q:20: bad FB Memory Usage Total");
}

static void test_ibv_devinfo_truncated(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_rdma *r = calloc(1, sizeof(*r));
	size_t len;
	char *t = probe_data("ibv_devinfo/truncated.txt", &len);

	/* cut inside the port block: what was there is kept, the rest unknown */
	assert_int_equal(gc_probe_parse_ibv_devinfo(r, t, len, &err), 0);
	assert_int_equal(r->ndev, 1);
	assert_int_equal(r->devs[0].nports, 1);
	assert_int_equal(r->devs[0].ports[0].state_num, 4);
	assert_string_equal(r->devs[0].ports[0].link_layer, "");
	free(t);
	free(r);
}

static void test_show_gids(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_rdma *r = calloc(1, sizeof(*r));
	const struct gc_probe_port *p;
	size_t len;
	char *t = probe_data("show_gids/mlx5-4gids.txt", &len);

	assert_int_equal(gc_probe_parse_show_gids(r, t, len, &err), 0);
	assert_int_equal(r->ndev, 1);
	p = &r->devs[0].ports[0];
	assert_int_equal(p->ngids, 4);
	assert_int_equal(p->gids[0].index, 0);
	assert_string_equal(p->gids[0].type, "IB/RoCE v1");
	assert_string_equal(p->gids[0].ipv4, "");
	assert_string_equal(p->gids[0].ndev, "rdma0");
	assert_string_equal(p->gids[3].gid, "0000:0000:0000:0000:0000:ffff:c0a8:d3f2");
	assert_string_equal(p->gids[3].type, "RoCE v2");
	assert_string_equal(p->gids[3].ipv4, "192.168.211.242");
	assert_string_equal(p->gids[3].ndev, "rdma0");
	free(t);
	free(r);
}

static void test_mlnx_qos(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_qos q;
	size_t len;
	char *t = probe_data("mlnx_qos/dscp-pfc3.txt", &len);
	int i;

	assert_int_equal(gc_probe_parse_mlnx_qos(&q, t, len, &err), 0);
	assert_true(q.present);
	assert_string_equal(q.trust, "dscp");
	assert_string_equal(q.dcbx, "OS controlled");
	for (i = 0; i < 8; i++)
		assert_int_equal(q.pfc[i], i == 3);
	free(t);
	t = probe_data("mlnx_qos/pcp-default.txt", &len);
	assert_int_equal(gc_probe_parse_mlnx_qos(&q, t, len, &err), 0);
	assert_string_equal(q.trust, "pcp");
	assert_string_equal(q.dcbx, "Firmware controlled");
	for (i = 0; i < 8; i++)
		assert_int_equal(q.pfc[i], 0);
	free(t);
}

static void test_traffic_class(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	size_t len;
	char *t;
	int tc = 0;

	t = probe_data("traffic_class/set-106.txt", &len);
	assert_int_equal(gc_probe_parse_traffic_class(&tc, t, len, &err), 0);
	assert_int_equal(tc, 106);
	free(t);
	t = probe_data("traffic_class/with-rule.txt", &len);
	assert_int_equal(gc_probe_parse_traffic_class(&tc, t, len, &err), 0);
	assert_int_equal(tc, 106);
	free(t);
	t = probe_data("traffic_class/empty.txt", &len);
	assert_int_equal(gc_probe_parse_traffic_class(&tc, t, len, &err), 0);
	assert_int_equal(tc, -1);
	free(t);
}

static void test_nvsmi_passthrough_capture(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_nvsmi *s = calloc(1, sizeof(*s));
	size_t len;
	char *t = probe_data("nvsmi/h200-passthrough-580.txt", &len);

	assert_int_equal(gc_probe_parse_nvsmi(s, t, len, &err), 0);
	assert_string_equal(s->driver_version, "580.159.04");
	assert_string_equal(s->cuda_version, "13.0");
	assert_int_equal(s->ngpu, 1);
	assert_string_equal(s->gpus[0].bus_id, "00000000:00:06.0");
	assert_string_equal(s->gpus[0].product, "NVIDIA H200");
	assert_string_equal(s->gpus[0].virt_mode, "Pass-Through");
	assert_string_equal(s->gpus[0].host_vgpu_mode, "N/A");
	assert_string_equal(s->gpus[0].ecc_current, "Enabled");
	assert_int_equal(s->gpus[0].fb_total_mib, 143771);
	free(t);
	free(s);
}

static void test_nvsmi_vgpu(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_nvsmi *s = calloc(1, sizeof(*s));
	size_t len;
	char *t = probe_data("nvsmi/vgpu-guest-a16-16q.txt", &len);

	assert_int_equal(gc_probe_parse_nvsmi(s, t, len, &err), 0);
	assert_int_equal(s->ngpu, 1);
	assert_string_equal(s->gpus[0].product, "NVIDIA A16-16Q");
	assert_string_equal(s->gpus[0].virt_mode, "VGPU");
	assert_string_equal(s->gpus[0].licensed_product, "NVIDIA RTX Virtual Workstation");
	assert_string_equal(s->gpus[0].license, "Licensed (Expiry: 2023-1-31 11:32:22 GMT)");
	assert_string_equal(s->gpus[0].ecc_current, "N/A");
	assert_int_equal(s->gpus[0].fb_total_mib, 16384); /* not BAR1's 256 */
	free(t);
	/* truncated before the licence block: fields seen so far, the rest empty */
	t = probe_data("nvsmi/truncated.txt", &len);
	assert_int_equal(gc_probe_parse_nvsmi(s, t, len, &err), 0);
	assert_string_equal(s->gpus[0].virt_mode, "VGPU");
	assert_string_equal(s->gpus[0].license, "");
	assert_int_equal(s->gpus[0].fb_total_mib, -1);
	free(t);
	free(s);
}

/* Regression (found by fuzz_probe_nvsmi): a key indented deeper than the
 * tracked sections read past the section array. */
static void test_nvsmi_deep_indent(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_nvsmi *s = calloc(1, sizeof(*s));
	const char *t = "GPU 00000000:01:00.0\n"
			"                                            Total : 5 MiB\n"
			"    FB Memory Usage\n"
			"        Total                             : 81559 MiB\n";

	assert_int_equal(gc_probe_parse_nvsmi(s, t, strlen(t), &err), 0);
	assert_int_equal(s->gpus[0].fb_total_mib, 81559);
	free(s);
}

/* Every prefix of every capture parses or fails cleanly (ASan watches reads). */
static void test_all_prefixes(void **state)
{
	static const char *files[] = {"ibv_devinfo/two-devices-one-down.txt",
				      "show_gids/mlx5-4gids.txt", "mlnx_qos/dscp-pfc3.txt",
				      "traffic_class/with-rule.txt", "nvsmi/vgpu-guest-a16-16q.txt"};
	size_t f, len, n;

	for (f = 0; f < GC_ARRAY_LEN(files); f++) {
		char *t = probe_data(files[f], &len);
		for (n = 0; n <= len; n++) {
			struct gc_error err = GC_ERROR_INIT;
			char *copy = gc_xmalloc(n ? n : 1); /* exact size: no NUL after */
			memcpy(copy, t, n);
			(void)devinfo(copy, n, &err);
			(void)gids(copy, n, &err);
			(void)qos(copy, n, &err);
			(void)tclass(copy, n, &err);
			(void)nvsmi(copy, n, &err);
			free(copy);
		}
		free(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ibv_devinfo_roce),
		cmocka_unit_test(test_ibv_devinfo_two),
		cmocka_unit_test(test_ibv_devinfo_truncated),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_show_gids),
		cmocka_unit_test(test_mlnx_qos),
		cmocka_unit_test(test_traffic_class),
		cmocka_unit_test(test_nvsmi_passthrough_capture),
		cmocka_unit_test(test_nvsmi_vgpu),
		cmocka_unit_test(test_nvsmi_deep_indent),
		cmocka_unit_test(test_all_prefixes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
