/*
 * test_probe_sysfs.c - the RDMA probe against fake /sys and /proc trees
 * (tests/data/probe/sysfs-*, GC_PROBE_SYSFS test hook) and a fake mlnx_qos
 * on PATH that prints a captured output.
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

static struct gc_probe_report *run(const char *tree, bool tools)
{
	struct gc_probe_report *r = gc_xcalloc(1, sizeof(*r));
	struct gc_probe_options o;
	char *root = gc_xasprintf("%s/tests/data/probe/%s", GC_SOURCE_DIR, tree);

	gc_probe_options_init(&o);
	o.sysfs_root = root;
	o.no_cuda = true;
	o.no_tools = !tools;
	gc_probe_run(r, &o);
	free(root);
	return r;
}

static void test_roce_tree(void **state)
{
	struct gc_probe_report *r = run("sysfs-roce", false);
	const struct gc_probe_rdma_dev *d = &r->rdma.devs[0];
	const struct gc_probe_port *p = &d->ports[0];

	assert_int_equal(r->rdma.status, GC_PROBE_OK);
	assert_int_equal(r->rdma.ndev, 1);
	assert_string_equal(d->name, "mlx5_0");
	assert_string_equal(d->fw_ver, "16.32.1010");
	assert_string_equal(d->node_guid, "043f:7203:00da:2130");
	assert_int_equal(d->nports, 1);
	assert_int_equal(p->state_num, 4);
	assert_string_equal(p->state, "PORT_ACTIVE");
	assert_string_equal(p->link_layer, "Ethernet");
	assert_string_equal(p->netdev, "eth4");
	assert_int_equal(p->ngids, 4); /* the all-zero gid 4 is not listed */
	assert_string_equal(p->gids[3].type, "RoCE v2");
	assert_string_equal(p->gids[3].ipv4, "192.168.211.242");
	assert_int_equal(p->roce_v2_index, 3); /* v2 with IPv4 beats link-local v2 at 1 */
	assert_int_equal(p->traffic_class, 106);
	assert_int_equal(p->default_tos, 106);
	assert_string_equal(r->rdma.peermem, "nvidia_peermem");
	assert_false(d->qos.present);
	assert_string_equal(d->qos.reason, "mlnx_qos not run (tools disabled)");
	assert_int_equal(r->cuda.status, GC_PROBE_NOT_RUN);
	assert_int_equal(r->gdr.status, GC_PROBE_NOT_RUN);
	free(r);
}

static void test_mlnx_qos_tool(void **state)
{
	const char *old = getenv("PATH");
	char *path = gc_xasprintf("%s/tests/data/probe/bin:%s", GC_SOURCE_DIR, old ? old : "/usr/bin:/bin");
	char *saved = gc_xstrdup(old ? old : "");
	struct gc_probe_report *r;
	const struct gc_probe_qos *q;

	setenv("PATH", path, 1);
	r = run("sysfs-roce", true);
	setenv("PATH", saved, 1);
	q = &r->rdma.devs[0].qos;
	assert_true(q->present);
	assert_string_equal(q->netdev, "eth4");
	assert_string_equal(q->trust, "dscp");
	assert_int_equal(q->pfc[3], 1);
	assert_int_equal(q->pfc[4], 0);
	free(r);
	free(path);
	free(saved);
}

static void test_down_tree(void **state)
{
	struct gc_probe_report *r = run("sysfs-down", false);
	const struct gc_probe_port *p = &r->rdma.devs[0].ports[0];

	assert_int_equal(r->rdma.status, GC_PROBE_OK);
	assert_int_equal(p->state_num, 1);
	assert_string_equal(p->state, "PORT_DOWN");
	assert_int_equal(p->roce_v2_index, -1);
	assert_int_equal(p->traffic_class, -1); /* empty file = unset */
	assert_int_equal(p->default_tos, -1);   /* no configfs entry */
	assert_string_equal(r->rdma.peermem, "nv_peer_mem");
	free(r);
}

static void test_no_rdma(void **state)
{
	struct gc_probe_report *r;

	setenv("GC_PROBE_LIBIBVERBS", "/nonexistent/libibverbs.so.1", 1);
	r = run("sysfs-none", false);
	unsetenv("GC_PROBE_LIBIBVERBS");
	assert_int_equal(r->rdma.status, GC_PROBE_ABSENT);
	assert_int_equal(r->rdma.ndev, 0);
	assert_non_null(strstr(r->rdma.reason, "no RDMA device"));
	assert_false(r->rdma.verbs_loaded);
	assert_non_null(strstr(r->rdma.verbs_reason,
			       "/nonexistent/libibverbs.so.1 not loadable"));
	assert_string_equal(r->rdma.peermem, "");
	free(r);
}

static void test_no_cuda_library(void **state)
{
	struct gc_probe_report *r = gc_xcalloc(1, sizeof(*r));
	struct gc_probe_options o;
	char *root = gc_xasprintf("%s/tests/data/probe/sysfs-none", GC_SOURCE_DIR);

	setenv("GC_PROBE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	setenv("GC_PROBE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
	gc_probe_options_init(&o);
	o.sysfs_root = root;
	o.no_tools = true;
	gc_probe_run(r, &o);
	unsetenv("GC_PROBE_LIBCUDA");
	unsetenv("GC_PROBE_LIBNVML");
	assert_int_equal(r->cuda.status, GC_PROBE_ABSENT);
	assert_non_null(strstr(r->cuda.reason, "/nonexistent/libcuda.so.1 not loadable"));
	assert_int_equal(r->cuda.ngpu, 0);
	assert_int_equal(r->gdr.status, GC_PROBE_ABSENT);
	assert_int_equal(r->rdma_test.status, GC_PROBE_NOT_RUN);
	free(root);
	free(r);
}

static void test_rdma_test_without_device(void **state)
{
	struct gc_probe_report *r = gc_xcalloc(1, sizeof(*r));
	struct gc_probe_options o;
	char *root = gc_xasprintf("%s/tests/data/probe/sysfs-none", GC_SOURCE_DIR);

	gc_probe_options_init(&o);
	o.sysfs_root = root;
	o.no_cuda = true;
	o.no_tools = true;
	o.rdma_peer = "127.0.0.1";
	gc_probe_run(r, &o);
	assert_int_equal(r->rdma_test.status, GC_PROBE_ABSENT);
	assert_string_equal(r->rdma_test.reason, "no RDMA device");
	assert_string_equal(r->rdma_test.role, "client");
	free(root);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roce_tree),
		cmocka_unit_test(test_mlnx_qos_tool),
		cmocka_unit_test(test_down_tree),
		cmocka_unit_test(test_no_rdma),
		cmocka_unit_test(test_no_cuda_library),
		cmocka_unit_test(test_rdma_test_without_device),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
