/*
 * test_probe_expect.c - the expect file and the checks it drives: exact
 * diagnostics for bad files, and expected/found/hint for failed checks.
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

static void test_parse_file(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_expect e;
	const char *text = "# guest gpu01\n"
			   "gpu.count = 2\n"
			   "\n"
			   "  gpu.model=H100   # short name is enough\n"
			   "rdma.pfc = 0,0,0,1,0,0,0,0\r\n";

	memset(&e, 0, sizeof(e));
	assert_int_equal(gc_probe_expect_parse(&e, text, strlen(text), "gpu01.expect", &err), 0);
	assert_int_equal(e.n, 3);
	assert_string_equal(e.items[0].key, "gpu.count");
	assert_string_equal(e.items[0].value, "2");
	assert_int_equal(e.items[0].line, 2);
	assert_string_equal(e.items[1].key, "gpu.model");
	assert_string_equal(e.items[1].value, "H100");
	assert_string_equal(e.items[2].value, "0,0,0,1,0,0,0,0");
}

static void bad_file(const char *text, const char *msg)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_expect e;

	memset(&e, 0, sizeof(e));
	assert_int_equal(gc_probe_expect_parse(&e, text, strlen(text), "x.expect", &err),
			 GC_EUSAGE);
	assert_string_equal(err.msg, msg);
}

static void test_bad_files(void **state)
{
	bad_file("gpu.count 2\n", "x.expect:1: error: expected 'key = value'");
	bad_file("\ngpu.cuont = 2\n", "x.expect:2: error: unknown key 'gpu.cuont' (see docs/probe.md)");
	bad_file("gpu.count =\n", "x.expect:1: error: 'gpu.count' needs a value of 1..95 bytes");
	bad_file("= 2\n", "x.expect:1: error: expected 'key = value'");
}

static struct gc_probe_report *gpu_report(uint64_t mem_bytes)
{
	struct gc_probe_report *r = gc_xcalloc(1, sizeof(*r));

	r->cuda.status = GC_PROBE_OK;
	r->cuda.ngpu = 1;
	snprintf(r->cuda.gpus[0].name, sizeof(r->cuda.gpus[0].name), "NVIDIA H100 80GB HBM3");
	r->cuda.gpus[0].mem_bytes = mem_bytes;
	snprintf(r->cuda.gpus[0].virt_mode, sizeof(r->cuda.gpus[0].virt_mode), "Pass-Through");
	r->cuda.vadd_status = GC_PROBE_OK;
	r->rdma.status = GC_PROBE_ABSENT;
	return r;
}

static void test_eval_gpu(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_expect e;
	struct gc_probe_report *r = gpu_report(0);

	memset(&e, 0, sizeof(e));
	assert_int_equal(gc_probe_expect_add(&e, "gpu.count=1", &err), 0);
	assert_int_equal(gc_probe_expect_add(&e, "gpu.model=h100", &err), 0);
	assert_int_equal(gc_probe_expect_add(&e, "gpu.memory_mib_min=80000", &err), 0);
	assert_int_equal(gc_probe_expect_add(&e, "gpu.virtualization=VGPU", &err), 0);
	assert_int_equal(gc_probe_expect_add(&e, "cuda.vector_add=yes", &err), 0);
	assert_int_equal(gc_probe_expect_eval(r, &e), 2);
	assert_true(r->checks[0].pass);
	assert_true(r->checks[1].pass); /* case-insensitive substring */
	assert_false(r->checks[2].pass);
	assert_string_equal(r->checks[2].found, "0 MiB");
	assert_non_null(strstr(r->checks[2].hint,
			       "GPU memory 0 MiB: MMIO too small? check pciPassthru.use64bitMMIO "
			       "and pciPassthru.64bitMMIOSizeGB"));
	assert_false(r->checks[3].pass);
	assert_string_equal(r->checks[3].expected, "VGPU");
	assert_string_equal(r->checks[3].found, "Pass-Through");
	assert_true(r->checks[4].pass);
	free(r);
}

static void test_eval_rdma_absent(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_expect e;
	struct gc_probe_report *r = gpu_report(80ull << 30);

	memset(&e, 0, sizeof(e));
	gc_probe_expect_add(&e, "rdma.device=any", &err);
	gc_probe_expect_add(&e, "rdma.roce_v2_gid=yes", &err);
	gc_probe_expect_add(&e, "rdma.tos=106", &err);
	gc_probe_expect_add(&e, "rdma.pfc=3", &err);
	gc_probe_expect_add(&e, "rdma.peermem=no", &err);
	assert_int_equal(gc_probe_expect_eval(r, &e), 4);
	assert_string_equal(r->checks[0].found, "no RDMA device");
	assert_non_null(strstr(r->checks[0].hint, "SR-IOV VF or PVRDMA adapter"));
	assert_string_equal(r->checks[1].found, "no");
	assert_string_equal(r->checks[2].found, "unset");
	assert_string_equal(r->checks[3].expected, "3");
	assert_string_equal(r->checks[3].found, "unknown");
	assert_true(r->checks[4].pass);
	free(r);
}

static void test_eval_pfc_forms(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_expect e;
	struct gc_probe_report *r = gpu_report(80ull << 30);
	struct gc_probe_rdma_dev *d = &r->rdma.devs[0];
	int i;

	r->rdma.status = GC_PROBE_OK;
	r->rdma.ndev = 1;
	d->nports = 1;
	d->ports[0].num = 1;
	d->ports[0].state_num = 4;
	d->ports[0].traffic_class = -1;
	d->ports[0].default_tos = 106;
	d->qos.present = true;
	snprintf(d->qos.trust, sizeof(d->qos.trust), "dscp");
	for (i = 0; i < 8; i++)
		d->qos.pfc[i] = i == 3 || i == 4;
	memset(&e, 0, sizeof(e));
	gc_probe_expect_add(&e, "rdma.pfc=0,0,0,1,1,0,0,0", &err);
	gc_probe_expect_add(&e, "rdma.pfc=3,4", &err);
	gc_probe_expect_add(&e, "rdma.pfc=3", &err);
	gc_probe_expect_add(&e, "rdma.trust=DSCP", &err);
	gc_probe_expect_add(&e, "rdma.tos=106", &err); /* from default_roce_tos */
	assert_int_equal(gc_probe_expect_eval(r, &e), 1);
	assert_true(r->checks[0].pass);
	assert_true(r->checks[1].pass);
	assert_false(r->checks[2].pass);
	assert_string_equal(r->checks[2].found, "3,4");
	assert_true(r->checks[3].pass);
	assert_true(r->checks[4].pass);
	free(r);
}

/* A vGPU guest: profile framebuffer, virtualization mode, licence, ECC. */
static void test_eval_vgpu_guest(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_expect e;
	struct gc_probe_report *r = gpu_report(7680ull << 20);
	struct gc_probe_gpu *g = &r->cuda.gpus[0];

	snprintf(g->name, sizeof(g->name), "GRID A100-8C");
	snprintf(g->virt_mode, sizeof(g->virt_mode), "VGPU");
	snprintf(g->license, sizeof(g->license), "Unlicensed (Restricted)");
	snprintf(g->ecc, sizeof(g->ecc), "N/A");
	memset(&e, 0, sizeof(e));
	gc_probe_expect_add(&e, "gpu.vgpu_framebuffer_mib=8192", &err);
	gc_probe_expect_add(&e, "gpu.vgpu_framebuffer_mib=16384", &err);
	gc_probe_expect_add(&e, "gpu.virtualization=vgpu", &err);
	gc_probe_expect_add(&e, "gpu.license=licensed", &err);
	gc_probe_expect_add(&e, "gpu.license=no", &err);
	gc_probe_expect_add(&e, "gpu.ecc=Enabled", &err);
	assert_int_equal(gc_probe_expect_eval(r, &e), 3);
	/* 7,680 MiB is within a tenth under the 8C profile's 8,192 */
	assert_true(r->checks[0].pass);
	assert_string_equal(r->checks[0].found, "7680 MiB");
	assert_false(r->checks[1].pass);
	assert_string_equal(r->checks[1].found, "7680 MiB");
	assert_string_equal(r->checks[1].hint,
			    "the vGPU profile differs from the spec (e.g. -8Q vs -16Q): check the "
			    "VM's vGPU device; a framebuffer of 0 means the vGPU did not start "
			    "(vGPU manager log on the host)");
	assert_true(r->checks[2].pass); /* case-insensitive */
	assert_false(r->checks[3].pass);
	assert_string_equal(r->checks[3].found, "Unlicensed (Restricted)");
	assert_string_equal(r->checks[3].hint,
			    "vGPU licence: check /etc/nvidia/gridd.conf (FeatureType), the client "
			    "configuration token in /etc/nvidia/ClientConfigToken/ and "
			    "'systemctl status nvidia-gridd'");
	assert_true(r->checks[4].pass);
	assert_false(r->checks[5].pass);
	assert_string_equal(r->checks[5].found, "N/A");
	assert_string_equal(r->checks[5].hint,
			    "toggle with 'nvidia-smi -e 0|1' and reboot; vGPU guests often report N/A");
	free(r);
}

/* Two GPUs: peer access counted over ordered pairs, ECC over every GPU. */
static void test_eval_peer_access(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_expect e;
	struct gc_probe_report *r = gpu_report(80ull << 30);

	r->cuda.ngpu = 2;
	r->cuda.gpus[1] = r->cuda.gpus[0];
	snprintf(r->cuda.gpus[0].ecc, sizeof(r->cuda.gpus[0].ecc), "Enabled");
	snprintf(r->cuda.gpus[1].ecc, sizeof(r->cuda.gpus[1].ecc), "Disabled");
	r->cuda.peer[0][1] = 1;
	r->cuda.peer[1][0] = -1; /* unknown counts as no */
	memset(&e, 0, sizeof(e));
	gc_probe_expect_add(&e, "gpu.peer_access=all", &err);
	gc_probe_expect_add(&e, "gpu.peer_access=no", &err);
	gc_probe_expect_add(&e, "gpu.ecc=enabled", &err);
	gc_probe_expect_add(&e, "gpu.count=2", &err);
	assert_int_equal(gc_probe_expect_eval(r, &e), 2);
	assert_false(r->checks[0].pass);
	assert_string_equal(r->checks[0].found, "1 of 2 pairs");
	assert_string_equal(r->checks[0].hint,
			    "GPUs cannot reach each other: set pciPassthru.allowP2P=true on the "
			    "VM and check the host's PCIe topology/ACS");
	assert_true(r->checks[1].pass); /* not asked for: any answer will do */
	assert_string_equal(r->checks[1].found, "1 of 2 pairs");
	assert_false(r->checks[2].pass); /* the second GPU's is off */
	assert_string_equal(r->checks[2].found, "Enabled");
	assert_true(r->checks[3].pass);
	free(r);
}

/* An active RoCE port: link layer, MTU, GID index, ToS hint naming the device, GDR. */
static void test_eval_rdma_port(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_expect e;
	struct gc_probe_report *r = gpu_report(80ull << 30);
	struct gc_probe_rdma_dev *d = &r->rdma.devs[1];
	struct gc_probe_port *p = &d->ports[0];

	r->rdma.status = GC_PROBE_OK;
	r->rdma.ndev = 2;
	snprintf(r->rdma.devs[0].name, sizeof(r->rdma.devs[0].name), "mlx5_0"); /* no port */
	snprintf(d->name, sizeof(d->name), "mlx5_1");
	d->nports = 1;
	p->num = 1;
	p->state_num = 4;
	p->active_mtu = 4096;
	snprintf(p->link_layer, sizeof(p->link_layer), "Ethernet");
	p->roce_v2_index = 3;
	p->traffic_class = 96;
	p->default_tos = -1;
	r->gdr.status = GC_PROBE_ABSENT;
	snprintf(r->gdr.reason, sizeof(r->gdr.reason), "nvidia_peermem is not loaded");
	memset(&e, 0, sizeof(e));
	gc_probe_expect_add(&e, "rdma.device=mlx5_1", &err);
	gc_probe_expect_add(&e, "rdma.device=mlx5_0", &err);
	gc_probe_expect_add(&e, "rdma.link_layer=ethernet", &err);
	gc_probe_expect_add(&e, "rdma.link_layer=InfiniBand", &err);
	gc_probe_expect_add(&e, "rdma.mtu=1024", &err);
	gc_probe_expect_add(&e, "rdma.mtu=4096", &err);
	gc_probe_expect_add(&e, "rdma.mtu=9000", &err);
	gc_probe_expect_add(&e, "rdma.gid_index=3", &err);
	gc_probe_expect_add(&e, "rdma.gid_index=1", &err);
	gc_probe_expect_add(&e, "rdma.tos=106", &err);
	gc_probe_expect_add(&e, "gdr.ready=yes", &err);
	assert_int_equal(gc_probe_expect_eval(r, &e), 6);
	assert_true(r->checks[0].pass);
	assert_string_equal(r->checks[0].found, "mlx5_1 active");
	assert_false(r->checks[1].pass);
	assert_string_equal(r->checks[1].found, "mlx5_0 no active port");
	assert_string_equal(r->checks[1].hint,
			    "port not active: check the link (ibdev2netdev, 'rdma link') and the "
			    "switch port");
	assert_true(r->checks[2].pass);
	assert_false(r->checks[3].pass);
	assert_string_equal(r->checks[3].found, "Ethernet");
	assert_true(r->checks[4].pass); /* at least */
	assert_true(r->checks[5].pass);
	assert_false(r->checks[6].pass);
	assert_string_equal(r->checks[6].found, "4096");
	assert_true(r->checks[7].pass);
	assert_false(r->checks[8].pass);
	assert_string_equal(r->checks[8].found, "3");
	assert_string_equal(r->checks[8].hint,
			    "the RoCE v2 IPv4 GID sits at another index: set NCCL_IB_GID_INDEX to "
			    "the found index or fix the interface addresses");
	assert_false(r->checks[9].pass);
	assert_string_equal(r->checks[9].found, "96");
	assert_string_equal(r->checks[9].hint,
			    "set with 'echo 106 > /sys/class/infiniband/mlx5_1/tc/1/traffic_class' "
			    "and 'cma_roce_tos -d mlx5_1 -t 106'");
	assert_false(r->checks[10].pass);
	assert_string_equal(r->checks[10].found, "absent");
	assert_string_equal(r->checks[10].hint,
			    "nvidia_peermem is not loaded; needs nvidia_peermem and "
			    "pciPassthru.allowP2P / ACS allowing the HCA to reach the GPU BAR");
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_file),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_eval_gpu),
		cmocka_unit_test(test_eval_rdma_absent),
		cmocka_unit_test(test_eval_pfc_forms),
		cmocka_unit_test(test_eval_vgpu_guest),
		cmocka_unit_test(test_eval_peer_access),
		cmocka_unit_test(test_eval_rdma_port),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
