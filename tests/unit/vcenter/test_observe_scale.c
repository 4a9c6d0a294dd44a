/*
 * test_observe_scale.c - 1,000 VMs cost one property-collector round trip.
 *
 * A private vcsim (port 8997) with 500 VMs in each of its two resource
 * pools.  Counts only: timings belong in bench/, never in assertions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "gc/vcenter.h"

#define PORT_VCSIM 8997

static struct vcsim sim;

static int group_setup(void **state)
{
	return vcsim_setup(&sim, "test_observe_scale", PORT_VCSIM, "--vms 500");
}

static int group_teardown(void **state)
{
	vcsim_stop(&sim);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void test_thousand_vms_one_round_trip(void **state)
{
	struct gc_vcenter_opts o = vcsim_opts(&sim);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_conn *vc = NULL;
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_https_stats st;
	const char **names;

	assert_int_equal(gc_vcenter_connect(&vc, &o, &err), 0);
	assert_int_equal(gc_vcenter_observe(&inv, vc, &err), 0);
	assert_int_equal(inv->nvms, 1000);
	assert_int_equal(inv->nhosts, 4);
	assert_int_equal(inv->round_trips, 1);
	assert_int_equal(gc_vcenter_calls(vc, "RetrievePropertiesEx"), 1);
	assert_int_equal(gc_vcenter_calls(vc, "ContinueRetrievePropertiesEx"), 0);
	gc_vcenter_https_stats(vc, &st);
	assert_int_equal(st.requests, 3);
	assert_int_equal(st.connections, 1);
	names = gc_xcalloc(inv->nvms, sizeof(*names));
	for (size_t i = 0; i < inv->nvms; i++) {
		assert_int_equal(inv->vms[i].ndevices, 13);
		assert_non_null(inv->vms[i].host_name);
		names[i] = inv->vms[i].name;
	}
	qsort(names, inv->nvms, sizeof(*names), by_name);
	for (size_t i = 1; i < inv->nvms; i++)
		assert_true(strcmp(names[i - 1], names[i]) < 0); /* all distinct */
	assert_non_null(gc_vcenter_inventory_vm(inv, "DC0_H0_VM499"));
	assert_non_null(gc_vcenter_inventory_vm(inv, "DC0_C0_RP0_VM499"));
	free(names);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thousand_vms_one_round_trip),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
