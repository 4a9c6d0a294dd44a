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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_file),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_eval_gpu),
		cmocka_unit_test(test_eval_rdma_absent),
		cmocka_unit_test(test_eval_pfc_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
