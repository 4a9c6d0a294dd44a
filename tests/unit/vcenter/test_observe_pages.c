/*
 * test_observe_pages.c - the observation in pages of GC_VCENTER_PAGE_OBJECTS.
 *
 * A private vcsim (port 8983) started with --paging, so it pages
 * RetrievePropertiesEx results by maxObjects as vCenter does
 * (tests/sim/vcsim/paging.go), with 1,100 VMs in each of its two resource
 * pools: 2,200 VMs, 4 hosts, 1 datacenter, 2 compute resources, 1
 * datastore, 3 networks and 1 switch, 2,212 objects, so 5 pages of 500.
 * The paged inventory must equal the one read in one reply (no maxObjects),
 * field by field.  A page that fails (its token refused, its reply cut off
 * mid-way, an object in it unreadable) fails the whole observation with
 * vCenter's words or the transport's, and no inventory comes out; a token
 * in hand is cancelled; the next observation on the same connection reads
 * everything again.  Counts only: timings are in
 * bench/vcenter_bench.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "gc/vcenter.h"
#include "../../../src/drivers/vcenter/soap.h"

#define PORT_VCSIM 8983
#define VMS 2200
#define OBJECTS 2212 /* VMs + 4 hosts + 1 DC + 2 CRs + 1 datastore + 3 networks + 1 switch */

static struct vcsim sim;
static char *unpaged; /* the inventory read in one reply, as text */

static const char *s_(const char *s)
{
	return s ? s : "(null)";
}

/* Every field of the inventory, in its order, as text. */
static char *dump(const struct gc_vcenter_inventory *inv)
{
	struct gc_buf b = GC_BUF_INIT;

	for (size_t i = 0; i < inv->nvms; i++) {
		const struct gc_vcenter_vm *v = &inv->vms[i];

		gc_buf_printf(&b, "vm %s %s host=%s/%s power=%s fw=%s res=%d/%d cpu=%d mem=%d "
				  "tmpl=%d pool=%s\n",
			      s_(v->moref), s_(v->name), s_(v->host_moref), s_(v->host_name),
			      s_(v->power_state), s_(v->firmware), v->reservation_locked,
			      v->reservation_locked_set, v->num_cpus, v->memory_mb, v->is_template,
			      s_(v->resource_pool));
		for (size_t j = 0; j < v->nextra_config; j++)
			gc_buf_printf(&b, " opt %s=%s\n", s_(v->extra_config[j].key),
				      s_(v->extra_config[j].value));
		for (size_t j = 0; j < v->ndevices; j++) {
			const struct gc_vcenter_device *d = &v->devices[j];

			gc_buf_printf(&b, " dev %d %s %s %s %s %d %d %s %s %s %d %s %d %d %s %s %s %s "
					  "%s\n",
				      d->key, s_(d->type), s_(d->label), s_(d->summary),
				      s_(d->backing_type), d->controller_key, d->unit_number,
				      s_(d->pci_id), s_(d->device_id), s_(d->system_id), d->vendor_id,
				      s_(d->vgpu), d->allowed_vendor_id, d->allowed_device_id,
				      s_(d->device_protocol), s_(d->sriov_pf), s_(d->portgroup_key),
				      s_(d->network), s_(d->mac_address));
		}
	}
	for (size_t i = 0; i < inv->nhosts; i++) {
		const struct gc_vcenter_host *h = &inv->hosts[i];

		gc_buf_printf(&b, "host %s %s parent=%s mm=%d ns=%s pts=%s dts=%s ss=%s ntp=%s %d %s\n",
			      s_(h->moref), s_(h->name), s_(h->parent), h->maintenance,
			      s_(h->network_system), s_(h->passthru_system), s_(h->datetime_system),
			      s_(h->service_system), s_(h->ntp_servers), h->ntpd_running,
			      s_(h->ntpd_policy));
		for (size_t j = 0; j < h->nvnics; j++)
			gc_buf_printf(&b, " vnic %s %s %s %s %d %s %s\n", s_(h->vnics[j].device),
				      s_(h->vnics[j].portgroup), s_(h->vnics[j].switch_uuid),
				      s_(h->vnics[j].portgroup_key), h->vnics[j].dhcp,
				      s_(h->vnics[j].ip), s_(h->vnics[j].mask));
		for (size_t j = 0; j < h->npassthru; j++)
			gc_buf_printf(&b, " pt %s %d %d %d\n", s_(h->passthru[j].id),
				      h->passthru[j].enabled, h->passthru[j].capable,
				      h->passthru[j].active);
		for (size_t j = 0; j < h->nvgpu_types; j++)
			gc_buf_printf(&b, " vgpu %s\n", s_(h->vgpu_types[j]));
		for (size_t j = 0; j < h->npci; j++)
			gc_buf_printf(&b, " pci %s %d %d %s\n", s_(h->pci[j].id), h->pci[j].vendor_id,
				      h->pci[j].device_id, s_(h->pci[j].device_name));
	}
	for (size_t i = 0; i < inv->ndatacenters; i++) {
		const struct gc_vcenter_datacenter *d = &inv->datacenters[i];

		gc_buf_printf(&b, "dc %s %s %s %s %s %s\n", s_(d->moref), s_(d->name),
			      s_(d->vm_folder), s_(d->host_folder), s_(d->network_folder),
			      s_(d->datastore_folder));
	}
	for (size_t i = 0; i < inv->ncomputes; i++) {
		const struct gc_vcenter_compute *c = &inv->computes[i];

		gc_buf_printf(&b, "cr %s %s %s %s %s\n", s_(c->moref), s_(c->name), s_(c->type),
			      s_(c->resource_pool), s_(c->environment_browser));
	}
	for (size_t i = 0; i < inv->ndatastores; i++)
		gc_buf_printf(&b, "ds %s %s\n", s_(inv->datastores[i].moref),
			      s_(inv->datastores[i].name));
	for (size_t i = 0; i < inv->nnetworks; i++) {
		const struct gc_vcenter_network *n = &inv->networks[i];

		gc_buf_printf(&b, "net %s %s %s %s %s %d %s\n", s_(n->moref), s_(n->name),
			      s_(n->type), s_(n->portgroup_key), s_(n->dvs), n->vlan,
			      s_(n->config_version));
	}
	for (size_t i = 0; i < inv->ndvs; i++) {
		const struct gc_vcenter_dvs *d = &inv->dvs[i];

		gc_buf_printf(&b, "dvs %s %s %s %d %s\n", s_(d->moref), s_(d->name), s_(d->uuid),
			      d->max_mtu, s_(d->config_version));
		for (size_t j = 0; j < d->nmembers; j++) {
			gc_buf_printf(&b, " member %s", s_(d->members[j].host));
			for (size_t k = 0; k < d->members[j].npnics; k++)
				gc_buf_printf(&b, " %s", s_(d->members[j].pnics[k]));
			gc_buf_printf(&b, "\n");
		}
	}
	return gc_buf_take(&b);
}

static size_t objects(const struct gc_vcenter_inventory *inv)
{
	return inv->nvms + inv->nhosts + inv->ndatacenters + inv->ncomputes + inv->ndatastores +
	       inv->nnetworks + inv->ndvs;
}


static int group_setup(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_conn *vc = NULL;
	struct gc_vcenter_inventory *inv = NULL;

	(void)state;
	if (vcsim_setup(&sim, "test_observe_pages", PORT_VCSIM, "--vms 1100 --paging") != 0)
		return -1;
	vcsim_faults(&sim, NULL);
	/* the reference: no maxObjects, so vcsim answers everything in one reply */
	vc = vcsim_connect(&sim);
	if (gc_vcenter_observe_paged(&inv, vc, 0, &err) != 0) {
		fprintf(stderr, "unpaged observation: %s\n", err.msg);
		gc_vcenter_free(vc);
		return -1;
	}
	if (inv->round_trips != 1 || gc_vcenter_calls(vc, "ContinueRetrievePropertiesEx") != 0) {
		fprintf(stderr, "unpaged observation took %u round trips\n", inv->round_trips);
		return -1;
	}
	unpaged = dump(inv);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	vcsim_faults(&sim, NULL);
	vcsim_stop(&sim);
	free(unpaged);
	return 0;
}

static void test_five_pages_equal_one_reply(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = vcsim_observe(vc);
	char *paged = dump(inv);

	(void)state;
	assert_int_equal(GC_VCENTER_PAGE_OBJECTS, 500);
	assert_int_equal(inv->nvms, VMS);
	assert_int_equal(objects(inv), OBJECTS);
	/* 500 + 500 + 500 + 500 + 212 */
	assert_int_equal(inv->round_trips, 5);
	assert_int_equal(gc_vcenter_calls(vc, "RetrievePropertiesEx"), 1);
	assert_int_equal(gc_vcenter_calls(vc, "ContinueRetrievePropertiesEx"), 4);
	assert_int_equal(gc_vcenter_calls(vc, "CancelRetrievePropertiesEx"), 0);
	assert_string_equal(paged, unpaged);
	assert_non_null(gc_vcenter_inventory_vm(inv, "DC0_C0_RP0_VM1099"));
	assert_non_null(gc_vcenter_inventory_vm(inv, "DC0_H0_VM1099"));
	free(paged);
	gc_vcenter_inventory_free(inv);

	/* a page size that the objects fill exactly: 2212 = 7 x 316; the
	 * seventh page has no token */
	assert_int_equal(gc_vcenter_observe_paged(&inv, vc, 316, &err), 0);
	assert_int_equal(inv->round_trips, 7);
	assert_int_equal(gc_vcenter_calls(vc, "ContinueRetrievePropertiesEx"), 4 + 6);
	paged = dump(inv);
	assert_string_equal(paged, unpaged);
	free(paged);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

/* The observation fails as a whole, *out untouched; the next one on the same
 * connection reads all five pages again.  cancels: CancelRetrievePropertiesEx
 * calls expected by then. */
static void fails_then_recovers(struct gc_vcenter_conn *vc, int code, const char *msg_prefix,
				uint64_t cancels)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_inventory *inv = NULL;
	char *again;

	assert_int_equal(gc_vcenter_observe(&inv, vc, &err), code);
	assert_null(inv);
	assert_int_equal(err.code, code);
	if (strncmp(err.msg, msg_prefix, strlen(msg_prefix)) != 0)
		fail_msg("message '%s' does not start with '%s'", err.msg, msg_prefix);
	assert_int_equal(gc_vcenter_calls(vc, "CancelRetrievePropertiesEx"), cancels);
	vcsim_faults(&sim, NULL);
	inv = vcsim_observe(vc);
	assert_int_equal(inv->round_trips, 5);
	again = dump(inv);
	assert_string_equal(again, unpaged);
	free(again);
	gc_vcenter_inventory_free(inv);
}

static void test_token_refused(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	char want[256];

	(void)state;
	/* the second page's token (the first ContinueRetrievePropertiesEx) is refused */
	vcsim_faults(&sim, "{\"ContinueRetrievePropertiesEx\": {\"*\": {\"fault\": \"InvalidArgument\", "
	       "\"message\": \"A specified parameter was not correct: token\", "
	       "\"match\": \"<token>\", \"times\": 1}}}");
	snprintf(want, sizeof(want),
		 "inventory page 2: %s: ContinueRetrievePropertiesEx: A specified parameter was "
		 "not correct: token "
		 "(InvalidArgument)",
		 sim.target);
	fails_then_recovers(vc, GC_EREMOTE, want, 0); /* no token came */
	/* pages 1 and 2 of the failed observation, then all 5 of the next */
	assert_int_equal(gc_vcenter_calls(vc, "RetrievePropertiesEx"), 2);
	assert_int_equal(gc_vcenter_calls(vc, "ContinueRetrievePropertiesEx"), 1 + 4);
	gc_vcenter_free(vc);
}

static void test_reply_cut_off(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	char want[256];

	(void)state;
	/* the second page's reply: half its bytes, then the connection closes */
	vcsim_faults(&sim,
		     "{\"ContinueRetrievePropertiesEx\": {\"*\": {\"drop\": \"mid\", \"times\": 1}}}");
	snprintf(want, sizeof(want), "inventory page 2: %s: POST /sdk: transfer closed with ",
		 sim.target);
	fails_then_recovers(vc, GC_ENET, want, 0); /* no token came */
	assert_int_equal(gc_vcenter_calls(vc, "RetrievePropertiesEx"), 2);
	assert_int_equal(gc_vcenter_calls(vc, "ContinueRetrievePropertiesEx"), 1 + 4);
	gc_vcenter_free(vc);
}

/*
 * Page 2 arrives whole, with the token of page 3, but one of its objects
 * has a property vCenter could not read: the observation fails naming it,
 * and the token in hand is given back with CancelRetrievePropertiesEx
 * (vcsim answers it; a token it did not hold would be a fault).
 */
static void test_unreadable_page_cancels(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	char want[256];

	(void)state;
	vcsim_faults(&sim, "{\"ContinueRetrievePropertiesEx\": {\"*\": {\"times\": 1, \"replace\": "
	       "[\"</objects>\", \"<missingSet><path>config.hardware.device</path><fault>"
	       "<fault xsi:type=\\\"NoPermission\\\"></fault></fault></missingSet>"
	       "</objects>\"]}}}");
	snprintf(want, sizeof(want),
		 "inventory page 2: %s: RetrievePropertiesEx: cannot read config.hardware.device of ",
		 sim.target);
	fails_then_recovers(vc, GC_EREMOTE, want, 1);
	assert_int_equal(gc_vcenter_calls(vc, "RetrievePropertiesEx"), 2);
	assert_int_equal(gc_vcenter_calls(vc, "ContinueRetrievePropertiesEx"), 1 + 4);
	gc_vcenter_free(vc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_five_pages_equal_one_reply),
		cmocka_unit_test(test_token_refused),
		cmocka_unit_test(test_reply_cut_off),
		cmocka_unit_test(test_unreadable_page_cancels),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
