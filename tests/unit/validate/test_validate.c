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
#include <string.h>

#include <cmocka.h>

#include "gc/validate.h"

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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
