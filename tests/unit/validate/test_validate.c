/*
 * test_validate.c - the pure parts of validate.c: the RDMA pair rounds (no
 * guest in two tests at once, every guest covered in two rounds) and the
 * RoCE MTU an interface MTU allows.  The rest runs against the lab's real
 * guests (tests/integration/test_guest.py, test_2a..2h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gc/spec.h"
#include "gc/util.h"
#include "gc/validate.h"

static char *corpus(const char *name, size_t *len)
{
	char path[512], *text;
	struct gc_error err = GC_ERROR_INIT;

	snprintf(path, sizeof(path), "%s/fuzz/corpus/validate_probe/%s", GC_SOURCE_DIR, name);
	assert_int_equal(gc_read_file(&text, len, path, 1 << 20, &err), 0);
	return text;
}

/* A real H100 guest's CUDA figures (docs/benchmarks.md) against thresholds. */
static void test_probe_report_cuda_and_bandwidth(void **state)
{
	struct gc_validation val = {.min_h2d_gbps = 40, .min_d2h_gbps = 60, .min_d2d_gbps = 1300};
	struct gc_vprobe_in in = {.target = "g1", .val = &val, .gpus = true};
	struct gc_validate_report r;
	struct gc_vprobe_out out;
	size_t len, i;
	char *text = corpus("cuda-h100.json", &len);

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_int_equal(gc_validate_probe_checks(&r, &in, text, len, &out), 0);
	assert_string_equal(out.hca, "mlx5_0");
	assert_int_equal(out.gid_index, 3);
	/* the probe's own expectations first, then the bandwidth per GPU */
	for (i = 0; i < r.nchecks && strncmp(r.checks[i].name, "gpu0.", 5) != 0; i++)
		assert_int_equal(r.checks[i].target_kind, GC_CT_GUEST);
	assert_int_equal(r.nchecks - i, 3);
	assert_string_equal(r.checks[i].name, "gpu0.h2d_bandwidth");
	assert_string_equal(r.checks[i].found, "54.76 GB/s");
	assert_int_equal(r.checks[i].status, GC_CHECK_PASS);
	assert_null(r.checks[i].hint);
	assert_string_equal(r.checks[i + 1].name, "gpu0.d2h_bandwidth");
	assert_string_equal(r.checks[i + 1].expected, ">= 60.0 GB/s");
	assert_int_equal(r.checks[i + 1].status, GC_CHECK_FAIL);
	assert_non_null(strstr(r.checks[i + 1].hint, "PCIe link"));
	assert_string_equal(r.checks[i + 2].found, "1485.63 GB/s");
	free(out.hca);
	gc_vreport_free(&r);
	/* --skip cuda: one SKIP, no bandwidth */
	memset(&r, 0, sizeof(r));
	in.skip_cuda = true;
	assert_int_equal(gc_validate_probe_checks(&r, &in, text, len, &out), 0);
	assert_string_equal(r.checks[r.nchecks - 1].name, "cuda");
	assert_int_equal(r.checks[r.nchecks - 1].status, GC_CHECK_SKIP);
	free(out.hca);
	gc_vreport_free(&r);
	free(text);
}

/* What a guest may send: nothing but one JSON object is a report, a field
 * of the wrong type reads as absent, never as a pass. */
static void test_probe_report_hostile(void **state)
{
	struct gc_validation val = {.min_h2d_gbps = 1};
	struct gc_vprobe_in in = {.target = "g1", .val = &val, .gpus = true};
	struct gc_validate_report r;
	struct gc_vprobe_out out;
	struct gc_vprobe_rdma rt;
	size_t len;
	char *text = corpus("wrong-types.json", &len);

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_int_equal(gc_validate_probe_checks(&r, &in, "[1,2]", 5, &out), GC_EINVAL);
	assert_int_equal(gc_validate_probe_checks(&r, &in, "{\"a\":", 6, &out), GC_EINVAL);
	assert_int_equal(r.nchecks, 0);
	assert_int_equal(gc_validate_probe_checks(&r, &in, text, len, &out), 0);
	assert_null(out.hca); /* a 200-byte device name is not taken */
	assert_string_equal(r.checks[0].name, "rdma.mtu");
	assert_int_equal(r.checks[0].status, GC_CHECK_FAIL); /* "pass": "yes" is no boolean */
	assert_null(r.checks[0].expected);
	assert_string_equal(r.checks[1].name, "gpu0.h2d_bandwidth");
	assert_string_equal(r.checks[1].found, "0.00 GB/s");
	assert_int_equal(r.checks[1].status, GC_CHECK_FAIL);
	gc_vreport_free(&r);
	assert_int_equal(gc_validate_probe_rdma_test(&rt, text, len), 0);
	assert_true(rt.ok);
	assert_true(rt.bw_gbps == 0.0); /* "NaN" as a string is no number */
	free(text);
	text = corpus("rdma-test-ok.json", &len);
	assert_int_equal(gc_validate_probe_rdma_test(&rt, text, len), 0);
	assert_true(rt.ok);
	assert_true(rt.bw_gbps > 0.49 && rt.bw_gbps < 0.50);
	free(text);
}

static void test_pair_rounds_exact(void **state)
{
	size_t p[8][2], n;

	(void)state;
	assert_int_equal(gc_validate_pair_round(p, 0, 0), 0);
	assert_int_equal(gc_validate_pair_round(p, 1, 0), 0);
	assert_int_equal(gc_validate_pair_round(p, 1, 1), 0);
	/* two guests: one pair, once */
	n = gc_validate_pair_round(p, 2, 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0][0], 0);
	assert_int_equal(p[0][1], 1);
	assert_int_equal(gc_validate_pair_round(p, 2, 1), 0);
	/* four: (0,1) (2,3), then (1,2) (3,0) */
	assert_int_equal(gc_validate_pair_round(p, 4, 0), 2);
	assert_int_equal(p[1][0], 2);
	assert_int_equal(p[1][1], 3);
	assert_int_equal(gc_validate_pair_round(p, 4, 1), 2);
	assert_int_equal(p[0][0], 1);
	assert_int_equal(p[0][1], 2);
	assert_int_equal(p[1][0], 3);
	assert_int_equal(p[1][1], 0);
	/* three: (0,1), then (1,2): the odd one out of round 0 is in round 1 */
	assert_int_equal(gc_validate_pair_round(p, 3, 0), 1);
	assert_int_equal(gc_validate_pair_round(p, 3, 1), 1);
	assert_int_equal(p[0][0], 1);
	assert_int_equal(p[0][1], 2);
	assert_int_equal(gc_validate_pair_round(p, 5, 2), 0);
}

static void test_pair_rounds_cover_every_guest_once_per_round(void **state)
{
	size_t p[64][2];

	(void)state;
	for (size_t n = 2; n <= 100; n++) {
		unsigned covered[128];

		memset(covered, 0, sizeof(covered));
		for (unsigned r = 0; r < 2; r++) {
			unsigned in_round[128];
			size_t np = gc_validate_pair_round(p, n, r);

			memset(in_round, 0, sizeof(in_round));
			assert_true(np <= n / 2);
			for (size_t i = 0; i < np; i++) {
				assert_true(p[i][0] < n && p[i][1] < n && p[i][0] != p[i][1]);
				in_round[p[i][0]]++;
				in_round[p[i][1]]++;
				covered[p[i][0]]++;
				covered[p[i][1]]++;
			}
			for (size_t g = 0; g < n; g++)
				assert_true(in_round[g] <= 1); /* never in two tests at once */
		}
		for (size_t g = 0; g < n; g++)
			assert_true(covered[g] >= 1);
	}
}

static void test_roce_mtu(void **state)
{
	(void)state;
	assert_int_equal(gc_validate_roce_mtu(9000), 4096);
	assert_int_equal(gc_validate_roce_mtu(4200), 4096);
	assert_int_equal(gc_validate_roce_mtu(4000), 2048);
	assert_int_equal(gc_validate_roce_mtu(1500), 1024);
	assert_int_equal(gc_validate_roce_mtu(1024), 512);
	assert_int_equal(gc_validate_roce_mtu(576), 256);
	assert_int_equal(gc_validate_roce_mtu(68), 256);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair_rounds_exact),
		cmocka_unit_test(test_pair_rounds_cover_every_guest_once_per_round),
		cmocka_unit_test(test_roce_mtu),
		cmocka_unit_test(test_probe_report_cuda_and_bandwidth),
		cmocka_unit_test(test_probe_report_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
