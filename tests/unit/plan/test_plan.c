/*
 * test_plan.c - the planner: exact action order per target, maintenance
 * windows, one reboot per host, power-off/on and vMotion, waves under
 * rolling.max_unavailable, deletes, cycles, the summary line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "fixture.h"
#include "gc/plan.h"

struct fx {
	struct gc_cluster *c;
	struct gc_graph *g;
	struct gc_observed *o;
	struct gc_plan *p;
};

static void fx_build(struct fx *f, size_t nhosts, size_t ngpus, enum fx_mode mode)
{
	struct gc_error err = GC_ERROR_INIT;

	memset(f, 0, sizeof(*f));
	f->c = fx_cluster(nhosts, ngpus, mode);
	assert_int_equal(gc_graph_build(&f->g, f->c, &err), 0);
}

/* Observed state equal to the spec: every resource as desired, VMs on. */
static void fx_converge(struct fx *f)
{
	gc_observed_new(&f->o);
	for (size_t i = 0; i < f->g->nresources; i++) {
		const struct gc_resource *r = f->g->resources[i];

		gc_observed_add(f->o, r->id);
		for (size_t k = 0; k < r->nprops; k++)
			gc_observed_set(f->o, r->id, r->props[k].key, r->props[k].value);
	}
	for (size_t i = 0; i < f->g->nvms; i++)
		gc_observed_set_vm(f->o, f->g->vms[i].name, GC_POWER_ON, f->g->vms[i].host, false);
}

static int fx_plan(struct fx *f, const struct gc_plan_opts *opts, struct gc_error *err)
{
	return gc_plan_build(&f->p, f->g, f->o, opts, err);
}

static void fx_plan_ok(struct fx *f, const struct gc_plan_opts *opts)
{
	struct gc_error err = GC_ERROR_INIT;

	if (fx_plan(f, opts, &err) != 0)
		fail_msg("plan: %s", err.msg);
}

static void fx_done(struct fx *f)
{
	gc_plan_free(f->p);
	gc_observed_free(f->o);
	gc_graph_free(f->g);
	fx_free(f->c);
}

/* "step; step; ..." of one target (all waves), by gc_action_describe(). */
static char *steps(const struct gc_plan *p, const char *target)
{
	struct gc_buf b = GC_BUF_INIT;

	for (size_t i = 0; i < p->nactions; i++) {
		const struct gc_action *a = p->actions[i];

		if (strcmp(a->target->name, target) != 0)
			continue;
		if (b.len > 0)
			gc_buf_puts(&b, "; ");
		gc_action_describe(&b, a);
	}
	return gc_buf_take(&b);
}

static void assert_steps(const struct gc_plan *p, const char *target, const char *want)
{
	char *got = steps(p, target);

	assert_string_equal(got, want);
	free(got);
}

static const struct gc_action *find_action(const struct gc_plan *p, const char *describe)
{
	struct gc_buf b = GC_BUF_INIT;

	for (size_t i = 0; i < p->nactions; i++) {
		gc_buf_reset(&b);
		gc_action_describe(&b, p->actions[i]);
		if (strcmp(gc_buf_str(&b), describe) == 0) {
			gc_buf_free(&b);
			return p->actions[i];
		}
	}
	gc_buf_free(&b);
	fail_msg("no action '%s'", describe);
	return NULL;
}

/* a is among b's deps (transitively) */
static bool depends(const struct gc_action *b, const struct gc_action *a)
{
	if (b == a)
		return true;
	for (size_t i = 0; i < b->ndeps; i++)
		if (b->deps[i]->seq >= a->seq && depends(b->deps[i], a))
			return true;
	return false;
}

static char *summary(const struct gc_plan *p)
{
	struct gc_buf b = GC_BUF_INIT;

	gc_plan_render_summary(&b, p);
	return gc_buf_take(&b);
}

/* ---------------------------------------------------------------- offline */

static void test_offline_passthrough_order(void **state)
{
	struct fx f;
	char *s;

	fx_build(&f, 1, 1, FX_PASSTHROUGH);
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "esx01",
		     "+ esx01/esxi.ntp; enter maintenance mode on esx01; "
		     "+ esx01/esxi.pci_passthru/0000:3b:00.0; + esx01/esxi.nic_firmware/0000:5e:00.0; "
		     "+ esx01/esxi.module_param/nmlx5_core; reboot esx01; wait for esx01; verify esx01; exit maintenance mode on esx01");
	assert_steps(f.p, "vcenter",
		     "+ dvs/rdma-dvs; + dvs/rdma-dvs/portgroup/rdma-pg; + vm/worker-01; "
		     "+ vm/worker-01/hw; + vm/worker-01/extra_config; "
		     "+ vm/worker-01/device.pci/0000:3b:00.0; + vm/worker-01/nic.sriov/0; "
		     "power on worker-01");
	assert_steps(f.p, "sw01",
		     "+ sw01/switch.ecn; + sw01/switch.pool; + sw01/switch.ets; "
		     "+ sw01/switch.qos_trust; + sw01/switch.pfc; + sw01/switch.lldp");
	assert_steps(f.p, "worker-01",
		     "+ guest/worker-01/driver; + guest/worker-01/rdma_stack; reboot worker-01; "
		     "wait for worker-01; + guest/worker-01/peermem; + guest/worker-01/roce_qos; "
		     "verify worker-01");
	/* cross-target order: the VM is cloned after its host left maintenance,
	 * the guest is configured after the VM is on */
	assert_true(depends(find_action(f.p, "+ vm/worker-01"),
			    find_action(f.p, "exit maintenance mode on esx01")));
	assert_true(depends(find_action(f.p, "+ guest/worker-01/driver"),
			    find_action(f.p, "power on worker-01")));
	/* the guest's one reboot: after the driver, before what needs it loaded */
	assert_true(depends(find_action(f.p, "reboot worker-01"),
			    find_action(f.p, "+ guest/worker-01/driver")));
	assert_true(depends(find_action(f.p, "+ guest/worker-01/peermem"),
			    find_action(f.p, "wait for worker-01")));
	assert_string_equal(find_action(f.p, "reboot worker-01")->why,
			    "one guest reboot for 1 change that takes effect after a reboot");
	assert_true(depends(find_action(f.p, "+ vm/worker-01/nic.sriov/0"),
			    find_action(f.p, "+ dvs/rdma-dvs/portgroup/rdma-pg")));
	/* nothing exists: no VM to power off */
	for (size_t i = 0; i < f.p->nactions; i++)
		assert_int_not_equal(f.p->actions[i]->kind, GC_ACT_POWER_OFF);
	s = summary(f.p);
	assert_string_equal(s, "Plan: 22 to add, 0 to change, 0 to destroy, 8 synthesized steps "
			       "(1 hosts need maintenance, 2 reboots).");
	free(s);
	assert_string_equal(find_action(f.p, "reboot esx01")->why,
			    "one reboot for 3 changes that take effect after a reboot");
	assert_string_equal(find_action(f.p, "enter maintenance mode on esx01")->why,
			    "passthrough for GPU 0000:3b:00.0, SR-IOV virtual functions "
			    "(nmlx5_core max_vfs), SR-IOV in the adapter firmware of 0000:5e:00.0 "
			    "need maintenance mode");
	(void)state;
	fx_done(&f);
}

/* An ESXi 6.7 host (issue 14, item 1): its passthrough and NTP are vCenter
 * actions, and the passthrough is still inside the host's maintenance
 * window, before its one reboot */
static void test_offline_esxi67_via_vcenter(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct fx f;

	memset(&f, 0, sizeof(f));
	f.c = fx_cluster(1, 1, FX_PASSTHROUGH);
	f.c->hosts[0].passthru_via_vcenter = f.c->hosts[0].ntp_via_vcenter = true;
	assert_int_equal(gc_graph_build(&f.g, f.c, &err), 0);
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "esx01",
		     "enter maintenance mode on esx01; + esx01/esxi.nic_firmware/0000:5e:00.0; "
		     "+ esx01/esxi.module_param/nmlx5_core; reboot esx01; wait for esx01; verify esx01; exit maintenance mode on esx01");
	assert_steps(f.p, "vcenter",
		     "+ esx01/esxi.ntp; + dvs/rdma-dvs; + dvs/rdma-dvs/portgroup/rdma-pg; "
		     "+ esx01/esxi.pci_passthru/0000:3b:00.0; + vm/worker-01; + vm/worker-01/hw; "
		     "+ vm/worker-01/extra_config; + vm/worker-01/device.pci/0000:3b:00.0; "
		     "+ vm/worker-01/nic.sriov/0; power on worker-01");
	assert_true(depends(find_action(f.p, "+ esx01/esxi.pci_passthru/0000:3b:00.0"),
			    find_action(f.p, "enter maintenance mode on esx01")));
	assert_true(depends(find_action(f.p, "reboot esx01"),
			    find_action(f.p, "+ esx01/esxi.pci_passthru/0000:3b:00.0")));
	assert_true(depends(find_action(f.p, "+ vm/worker-01/device.pci/0000:3b:00.0"),
			    find_action(f.p, "exit maintenance mode on esx01")));
	assert_string_equal(find_action(f.p, "enter maintenance mode on esx01")->why,
			    "SR-IOV virtual functions (nmlx5_core max_vfs), SR-IOV in the adapter "
			    "firmware of 0000:5e:00.0, passthrough for GPU 0000:3b:00.0 need "
			    "maintenance mode");
	assert_string_equal(find_action(f.p, "reboot esx01")->why,
			    "one reboot for 3 changes that take effect after a reboot");
	(void)state;
	fx_done(&f);
}

static void test_offline_vgpu_order(void **state)
{
	struct fx f;

	fx_build(&f, 1, 2, FX_VGPU);
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "esx01",
		     "+ esx01/esxi.ntp; + esx01/esxi.firewall/pvrdma; "
		     "+ esx01/esxi.advanced/Net.PVRDMAVmknic; enter maintenance mode on esx01; "
		     "+ esx01/esxi.vib/NVD-VGPU-800; + esx01/esxi.graphics; "
		     "reboot esx01; wait for esx01; "
		     "+ esx01/esxi.gpu_ecc/0000:3b:00.0; + esx01/esxi.gpu_ecc/0000:3c:00.0; "
		     "reboot esx01; wait for esx01; verify esx01; exit maintenance mode on esx01");
	assert_true(depends(find_action(f.p, "+ esx01/esxi.advanced/Net.PVRDMAVmknic"),
			    find_action(f.p, "+ dvs/rdma-dvs")));
	assert_true(depends(find_action(f.p, "+ vm/worker-01/device.vgpu/1"),
			    find_action(f.p, "+ esx01/esxi.gpu_ecc/0000:3c:00.0")));
	/* ECC is set with nvidia-smi from the new VIB: after its reboot, then its own;
	 * the guest's driver install is the third */
	assert_int_equal(f.p->stats.reboots, 3);
	assert_string_equal(find_action(f.p, "+ esx01/esxi.gpu_ecc/0000:3b:00.0")->why,
			    "applied after the reboot: it needs what that reboot loaded");
	(void)state;
	fx_done(&f);
}

/* With the VIB already installed, an ECC change needs one reboot. */
static void test_ecc_only_one_reboot(void **state)
{
	struct fx f;

	fx_build(&f, 1, 1, FX_VGPU);
	fx_converge(&f);
	gc_observed_set(f.o, "esx01/esxi.gpu_ecc/0000:3b:00.0", "ecc", "enabled");
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "esx01",
		     "enter maintenance mode on esx01; ~ esx01/esxi.gpu_ecc/0000:3b:00.0; "
		     "reboot esx01; wait for esx01; verify esx01; exit maintenance mode on esx01");
	assert_int_equal(f.p->stats.reboots, 1);
	(void)state;
	fx_done(&f);
}

/* ---------------------------------------------------------------- waves */

static void test_waves_respect_max_unavailable(void **state)
{
	struct fx f;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;

	fx_build(&f, 5, 1, FX_PASSTHROUGH);
	opts.max_unavailable = 2;
	fx_plan_ok(&f, &opts);
	assert_int_equal(f.p->nwaves, 3);
	assert_int_equal(f.p->waves[0].nmaintenance_hosts, 2);
	assert_string_equal(f.p->waves[0].maintenance_hosts[0], "esx01");
	assert_string_equal(f.p->waves[0].maintenance_hosts[1], "esx02");
	assert_int_equal(f.p->waves[1].nmaintenance_hosts, 2);
	assert_string_equal(f.p->waves[1].maintenance_hosts[0], "esx03");
	assert_int_equal(f.p->waves[2].nmaintenance_hosts, 1);
	assert_string_equal(f.p->waves[2].maintenance_hosts[0], "esx05");
	/* a host's whole window sits in one wave, the switch in the first */
	assert_int_equal(find_action(f.p, "exit maintenance mode on esx04")->wave, 1);
	assert_int_equal(find_action(f.p, "+ vm/worker-05/device.pci/0000:3b:00.0")->wave, 2);
	assert_int_equal(find_action(f.p, "+ guest/worker-05/peermem")->wave, 2);
	assert_int_equal(find_action(f.p, "+ sw01/switch.pfc")->wave, 0);
	/* no host's NTP waits: hosts without maintenance changes are not limited */
	assert_int_equal(find_action(f.p, "+ esx05/esxi.ntp")->wave, 0);
	/* every action's deps are in its wave or earlier */
	for (size_t i = 0; i < f.p->nactions; i++)
		for (size_t d = 0; d < f.p->actions[i]->ndeps; d++)
			assert_true(f.p->actions[i]->deps[d]->wave <= f.p->actions[i]->wave);
	assert_int_equal(f.p->stats.hosts_in_maintenance, 5);
	assert_int_equal(f.p->stats.reboots, 10); /* 5 hosts, 5 guests (their drivers) */
	(void)state;
	fx_done(&f);
}

/* Guest reboots roll like VM power-offs: rolling.max_unavailable_vms guests
 * reboot at once, the next after one of them verified. */
static void test_guest_reboots_roll(void **state)
{
	struct fx f;

	fx_build(&f, 3, 1, FX_PASSTHROUGH);
	fx_plan_ok(&f, NULL); /* the default budget: one at a time */
	assert_true(depends(find_action(f.p, "reboot worker-02"), find_action(f.p, "verify worker-01")));
	assert_true(depends(find_action(f.p, "reboot worker-03"), find_action(f.p, "verify worker-02")));
	assert_string_equal(find_action(f.p, "reboot worker-03")->why,
			    "one guest reboot for 1 change that takes effect after a reboot; after "
			    "worker-02 verified (rolling.max_unavailable_vms: 1)");
	gc_plan_free(f.p);
	f.p = NULL;
	f.g->rolling.max_unavailable_vms = 2;
	fx_plan_ok(&f, NULL);
	assert_false(depends(find_action(f.p, "reboot worker-02"), find_action(f.p, "verify worker-01")));
	assert_true(depends(find_action(f.p, "reboot worker-03"), find_action(f.p, "verify worker-01")));
	(void)state;
	fx_done(&f);
}

/* A target that could not be observed: none of its resources is diffed,
 * the others are planned, and the plan says which part is unknown. */
static void test_unknown_target_is_left_out_and_named(void **state)
{
	struct fx f;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;
	const char **unknown;
	struct gc_buf b = GC_BUF_INIT;
	const struct gc_target *esx02;
	char *s;

	fx_build(&f, 3, 1, FX_PASSTHROUGH);
	esx02 = gc_graph_target(f.g, GC_TARGET_ESXI, "esx02");
	assert_non_null(esx02);
	unknown = calloc(f.g->ntargets, sizeof(*unknown));
	unknown[esx02->index] = "host 'esx02': cannot connect: Connection refused\x1b[2J";
	opts.unknown = unknown;
	fx_plan_ok(&f, &opts);
	free(unknown); /* the plan keeps its own copy */
	assert_int_equal(f.p->nunknown, 1);
	for (size_t i = 0; i < f.p->nactions; i++)
		assert_true(f.p->actions[i]->target != esx02);
	assert_non_null(find_action(f.p, "exit maintenance mode on esx03"));
	gc_plan_render_text(&b, f.p, 0);
	s = strstr(gc_buf_str(&b), "Unknown:");
	assert_non_null(s);
	assert_string_equal(strstr(gc_buf_str(&b), "\nUnknown:") + 1,
			    "Unknown: not observed, nothing planned for them\n\n"
			    "  esxi esx02: unknown: host 'esx02': cannot connect: Connection refused\\u001b[2J\n\n"
			    "Plan: 46 to add, 0 to change, 0 to destroy, 19 synthesized steps (2 hosts need "
			    "maintenance, 5 reboots). 1 target unknown.\n");
	gc_buf_reset(&b);
	gc_plan_render_json(&b, f.p);
	assert_non_null(strstr(gc_buf_str(&b), "\"unknown\": [\n    {\n      \"kind\": \"esxi\",\n"));
	gc_buf_free(&b);
	(void)state;
	fx_done(&f);
}

/* Drift on every VM's hardware: each VM is powered off for its own change. */
static void fx_drift_vm_hw(struct fx *f, size_t nvms)
{
	for (size_t k = 1; k <= nvms; k++) {
		char id[64];
		const struct gc_resource *r;

		snprintf(id, sizeof(id), "vm/worker-%02zu/hw", k);
		r = gc_graph_find(f->g, id);
		assert_non_null(r);
		gc_observed_set(f->o, id, r->props[0].key, "drifted");
	}
}

static void test_vm_windows_roll_by_budget_and_role(void **state)
{
	struct fx f;
	const struct gc_action *off2, *off4;

	/* rolling.max_unavailable_vms default 1: one VM off at a time, in spec order */
	fx_build(&f, 4, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	fx_drift_vm_hw(&f, 4);
	fx_plan_ok(&f, NULL);
	for (size_t k = 2; k <= 4; k++) {
		char off[32], prev_on[32];

		snprintf(off, sizeof(off), "power off worker-%02zu", k);
		snprintf(prev_on, sizeof(prev_on), "power on worker-%02zu", k - 1);
		assert_true(depends(find_action(f.p, off), find_action(f.p, prev_on)));
	}
	off2 = find_action(f.p, "power off worker-02");
	assert_non_null(strstr(off2->why, "; after worker-01 is back on (rolling.max_unavailable_vms: 1)"));
	assert_false(depends(find_action(f.p, "power off worker-01"), find_action(f.p, "power on worker-04")));
	fx_done(&f);

	/* 50% of a role's VMs; worker-01 is the master: the workers wait for it */
	fx_build(&f, 5, 1, FX_PASSTHROUGH);
	f.c->vms[0].role = "master";
	for (size_t k = 1; k < 5; k++)
		f.c->vms[k].role = "worker";
	f.g->rolling.max_unavailable_vms = 50;
	f.g->rolling.max_unavailable_vms_pct = true;
	fx_converge(&f);
	fx_drift_vm_hw(&f, 5);
	fx_plan_ok(&f, NULL);
	off2 = find_action(f.p, "power off worker-02");
	assert_true(depends(off2, find_action(f.p, "power on worker-01")));
	assert_non_null(strstr(off2->why, "; after the VMs of role 'master' are back on"));
	assert_true(depends(find_action(f.p, "power off worker-03"), find_action(f.p, "power on worker-01")));
	/* two workers at once: worker-04 waits for worker-02, not for worker-03 */
	off4 = find_action(f.p, "power off worker-04");
	assert_true(depends(off4, find_action(f.p, "power on worker-02")));
	assert_false(depends(off4, find_action(f.p, "power on worker-03")));
	assert_non_null(strstr(off4->why, "; after worker-02 is back on (rolling.max_unavailable_vms: 50%)"));
	(void)state;
	fx_done(&f);
}

/* Passthrough drifted off on the first n hosts: each needs a maintenance
 * window, and its running passthrough VMs are powered off around it. */
static void fx_drift_passthru(struct fx *f, size_t nhosts)
{
	for (size_t h = 1; h <= nhosts; h++) {
		char id[64];

		snprintf(id, sizeof(id), "esx%02zu/esxi.pci_passthru/0000:3b:00.0", h);
		gc_observed_set(f->o, id, "enabled", "false");
	}
}

static bool has_dep(const struct gc_action *a, const struct gc_action *d)
{
	for (size_t i = 0; i < a->ndeps; i++)
		if (a->deps[i] == d)
			return true;
	return false;
}

/* issue 12: VMs powered off because their host enters maintenance mode
 * count against rolling.max_unavailable_vms too - across the hosts of one
 * wave (rolling.max_unavailable: 2 puts two hosts in maintenance at once) */
static void test_evacuations_roll_by_budget(void **state)
{
	struct fx f;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;
	const struct gc_action *off2, *off3;

	fx_build(&f, 3, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	fx_drift_passthru(&f, 2);
	gc_observed_set(f.o, "vm/worker-03/hw", "memory_reservation", "none");
	opts.max_unavailable = 2;
	fx_plan_ok(&f, &opts); /* no cycle */
	assert_int_equal(f.p->nwaves, 1);
	assert_int_equal(f.p->nwarnings, 0);
	off2 = find_action(f.p, "power off worker-02");
	assert_true(has_dep(off2, find_action(f.p, "power on worker-01")));
	assert_false(depends(find_action(f.p, "power off worker-01"), find_action(f.p, "power on worker-02")));
	assert_string_equal(off2->why, "esx02 enters maintenance mode and VM worker-02 cannot be "
				       "live-migrated (passthrough GPU 0000:3b:00.0); after worker-01 is "
				       "back on (rolling.max_unavailable_vms: 1)");
	/* a VM off for its own changes on a host without a window comes after
	 * the evacuated ones, under the same budget */
	off3 = find_action(f.p, "power off worker-03");
	assert_true(has_dep(off3, find_action(f.p, "power on worker-02")));
	assert_string_equal(off3->why, "firmware and memory reservation needs the VM powered off; "
				       "after worker-02 is back on (rolling.max_unavailable_vms: 1)");
	assert_int_equal(off3->wave, 0);
	gc_plan_free(f.p);
	f.p = NULL;

	/* a budget of 2: both hosts' VMs go together */
	f.g->rolling.max_unavailable_vms = 2;
	fx_plan_ok(&f, &opts);
	off2 = find_action(f.p, "power off worker-02");
	assert_false(depends(off2, find_action(f.p, "power on worker-01")));
	assert_false(depends(find_action(f.p, "power off worker-01"), find_action(f.p, "power on worker-02")));
	assert_string_equal(off2->why, "esx02 enters maintenance mode and VM worker-02 cannot be "
				       "live-migrated (passthrough GPU 0000:3b:00.0)");
	gc_plan_free(f.p);
	f.p = NULL;

	/* one host a wave (the default): the waves keep them apart, no edge */
	f.g->rolling.max_unavailable_vms = 1;
	fx_plan_ok(&f, NULL);
	assert_int_equal(f.p->nwaves, 2);
	off2 = find_action(f.p, "power off worker-02");
	assert_int_equal(off2->wave, 1);
	assert_false(has_dep(off2, find_action(f.p, "power on worker-01")));
	gc_plan_free(f.p);
	f.p = NULL;

	/* a VM off for its own changes across its host's window counts too */
	gc_observed_set(f.o, "vm/worker-02/hw", "memory_reservation", "none");
	fx_plan_ok(&f, &opts);
	off2 = find_action(f.p, "power off worker-02");
	assert_true(has_dep(off2, find_action(f.p, "power on worker-01")));
	assert_string_equal(off2->why, "firmware and memory reservation needs the VM powered off; "
				       "after worker-01 is back on (rolling.max_unavailable_vms: 1)");
	(void)state;
	fx_done(&f);
}

/* A percentage: 50% of the 4 workers evacuated in one wave, two at a time */
static void test_evacuations_roll_by_percentage(void **state)
{
	struct fx f;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;
	const struct gc_action *off4;

	fx_build(&f, 4, 1, FX_PASSTHROUGH);
	f.g->rolling.max_unavailable_vms = 50;
	f.g->rolling.max_unavailable_vms_pct = true;
	fx_converge(&f);
	fx_drift_passthru(&f, 4);
	opts.max_unavailable = 4;
	fx_plan_ok(&f, &opts);
	assert_int_equal(f.p->nwaves, 1);
	assert_false(depends(find_action(f.p, "power off worker-02"), find_action(f.p, "power on worker-01")));
	assert_true(has_dep(find_action(f.p, "power off worker-03"), find_action(f.p, "power on worker-01")));
	off4 = find_action(f.p, "power off worker-04");
	assert_true(has_dep(off4, find_action(f.p, "power on worker-02")));
	assert_false(depends(off4, find_action(f.p, "power on worker-03")));
	assert_string_equal(off4->why, "esx04 enters maintenance mode and VM worker-04 cannot be "
				       "live-migrated (passthrough GPU 0000:3b:00.0); after worker-02 is "
				       "back on (rolling.max_unavailable_vms: 50%)");
	(void)state;
	fx_done(&f);
}

/* Roles: the workers' power-offs wait for the master to be back on, even
 * on other hosts of the same wave and with room in the budget */
static void test_evacuations_roll_by_role(void **state)
{
	struct fx f;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;
	const struct gc_action *off2;

	fx_build(&f, 3, 1, FX_PASSTHROUGH);
	f.c->vms[0].role = "master";
	f.c->vms[1].role = f.c->vms[2].role = "worker";
	f.g->rolling.max_unavailable_vms = 2;
	fx_converge(&f);
	fx_drift_passthru(&f, 3);
	opts.max_unavailable = 3;
	fx_plan_ok(&f, &opts);
	assert_int_equal(f.p->nwaves, 1);
	off2 = find_action(f.p, "power off worker-02");
	assert_true(has_dep(off2, find_action(f.p, "power on worker-01")));
	assert_string_equal(off2->why, "esx02 enters maintenance mode and VM worker-02 cannot be "
				       "live-migrated (passthrough GPU 0000:3b:00.0); after the VMs of "
				       "role 'master' are back on");
	assert_true(has_dep(find_action(f.p, "power off worker-03"), find_action(f.p, "power on worker-01")));
	/* two workers at once */
	assert_false(depends(find_action(f.p, "power off worker-03"), find_action(f.p, "power on worker-02")));
	(void)state;
	fx_done(&f);
}

/* VM k of the fixture moves onto host h with the host's GPU gpu and its VF */
static void fx_move_vm(struct gc_cluster *c, size_t k, size_t h, size_t gpu)
{
	struct gc_vm *v = &c->vms[k];
	struct gc_host *host = &c->hosts[h];

	v->host = host;
	v->host_name = host->name;
	v->ngpus = 1;
	v->gpus[0].gpu = &host->gpus[gpu];
	v->gpus[0].host_pci = host->gpus[gpu].pci;
	v->passthrough_gb = 32;
	v->nics[0].nic = &host->nics[0];
	v->nics[0].pf = host->nics[0].pci;
}

/* Windows of one host cannot wait for each other (its exit needs them all
 * off): over the budget, the host takes the whole budget and the plan warns */
static void test_evacuations_over_budget_on_one_host_warn(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;
	struct gc_buf b = GC_BUF_INIT;
	struct fx f;
	const struct gc_action *off2, *off3;
	const char *warning = "esx02's maintenance powers off 2 VMs at once (worker-02, worker-03), "
			      "over rolling.max_unavailable_vms: 1: they cannot be live-migrated "
			      "(passthrough GPU 0000:3b:00.0, passthrough GPU 0000:3c:00.0)";

	memset(&f, 0, sizeof(f));
	f.c = fx_cluster(3, 2, FX_PASSTHROUGH);
	for (size_t k = 0; k < 3; k++)
		fx_move_vm(f.c, k, k == 0 ? 0 : 1, k == 2 ? 1 : 0);
	assert_int_equal(gc_graph_build(&f.g, f.c, &err), 0);
	fx_converge(&f);
	fx_drift_passthru(&f, 2);
	opts.max_unavailable = 2;
	fx_plan_ok(&f, &opts); /* no cycle */
	assert_int_equal(f.p->nwaves, 1);
	assert_int_equal(f.p->nwarnings, 1);
	assert_string_equal(f.p->warnings[0], warning);
	off2 = find_action(f.p, "power off worker-02");
	off3 = find_action(f.p, "power off worker-03");
	assert_false(depends(off2, find_action(f.p, "power on worker-03")));
	assert_false(depends(off3, find_action(f.p, "power on worker-02")));
	/* the whole budget: nothing of another host is off while they are */
	assert_true(has_dep(off2, find_action(f.p, "power on worker-01")));
	assert_true(has_dep(off3, find_action(f.p, "power on worker-01")));
	assert_string_equal(off3->why, "esx02 enters maintenance mode and VM worker-03 cannot be "
				       "live-migrated (passthrough GPU 0000:3c:00.0); after worker-01 is "
				       "back on (rolling.max_unavailable_vms: 1)");
	gc_plan_render_text(&b, f.p, 0);
	assert_non_null(strstr(gc_buf_str(&b), "\n\nWarning: esx02's maintenance powers off 2 VMs at "
						"once (worker-02, worker-03), over "
						"rolling.max_unavailable_vms: 1: they cannot be "
						"live-migrated (passthrough GPU 0000:3b:00.0, "
						"passthrough GPU 0000:3c:00.0)\n\nPlan: "));
	gc_buf_reset(&b);
	gc_plan_render_json(&b, f.p);
	assert_non_null(strstr(gc_buf_str(&b), "\n  \"warnings\": [\n    \"esx02's maintenance powers "
						"off 2 VMs at once (worker-02, worker-03), over "));
	gc_buf_free(&b);
	gc_plan_free(f.p);
	f.p = NULL;

	/* within the budget, but a master with a worker on one host: the same */
	f.c->vms[1].role = "master";
	f.c->vms[2].role = "worker";
	f.g->rolling.max_unavailable_vms = 2;
	fx_plan_ok(&f, &opts);
	assert_int_equal(f.p->nwarnings, 1);
	assert_string_equal(f.p->warnings[0],
			    "esx02's maintenance powers off 2 VMs at once (worker-02, worker-03), of "
			    "different roles (master, worker): they cannot be live-migrated "
			    "(passthrough GPU 0000:3b:00.0, passthrough GPU 0000:3c:00.0)");
	assert_true(has_dep(find_action(f.p, "power off worker-03"), find_action(f.p, "power on worker-01")));
	assert_false(depends(find_action(f.p, "power off worker-03"), find_action(f.p, "power on worker-02")));
	(void)state;
	fx_done(&f);
}

/* vMotions leave their VMs in service but count as migrations in flight:
 * with a budget of 1, one at a time (the migrations off, then back) */
/* Every VM's first half (power-off, vMotion away) and second half (power-on,
 * vMotion back) of a plan, in one wave: a rollout halted between waves runs
 * no restore for the waves it did not start (src/exec/recover.c), so a VM
 * whose halves sat in two waves could be left off or away by a halt. */
static void assert_halves_share_a_wave(const struct gc_plan *p)
{
	size_t pairs = 0;

	for (size_t i = 0; i < p->nactions; i++) {
		const struct gc_action *a = p->actions[i], *b = NULL;

		/* a vMotion back names its host as its destination */
		if (a->vm == NULL || (a->kind != GC_ACT_POWER_OFF && a->kind != GC_ACT_MIGRATE) ||
		    (a->kind == GC_ACT_MIGRATE && a->host != NULL && a->dest_host != NULL &&
		     strcmp(a->dest_host, a->host) == 0))
			continue;
		for (size_t k = 0; k < p->nactions && b == NULL; k++) {
			const struct gc_action *c = p->actions[k];

			if (c != a && c->vm != NULL && strcmp(c->vm, a->vm) == 0 &&
			    c->kind == (a->kind == GC_ACT_POWER_OFF ? GC_ACT_POWER_ON : GC_ACT_MIGRATE) &&
			    depends(c, a))
				b = c;
		}
		if (b == NULL)
			continue; /* a VM powered off for good (its spec says off) */
		if (a->wave != b->wave)
			fail_msg("VM %s: its first half in wave %zu, its second in wave %zu", a->vm,
				 (size_t)a->wave, (size_t)b->wave);
		pairs++;
	}
	assert_true(pairs > 0);
}

static void test_a_vms_two_halves_share_a_wave(void **state)
{
	struct fx f;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;

	/* three hosts' windows, one a wave: each host's VM off and on in it */
	fx_build(&f, 3, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	fx_drift_passthru(&f, 3);
	fx_plan_ok(&f, NULL);
	assert_int_equal(f.p->nwaves, 3);
	assert_halves_share_a_wave(f.p);
	gc_plan_free(f.p);
	f.p = NULL;
	/* and VMs off for their own changes beside the windows */
	fx_drift_vm_hw(&f, 3);
	fx_plan_ok(&f, NULL);
	assert_halves_share_a_wave(f.p);
	fx_done(&f);

	/* vMotions away and back, unmanaged VMs included, two windows */
	fx_build(&f, 2, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	fx_drift_passthru(&f, 2);
	gc_observed_set_vm(f.o, "build-01", GC_POWER_ON, "esx01", true);
	gc_observed_set_vm(f.o, "build-02", GC_POWER_ON, "esx02", true);
	opts.allow_vmotion = 1;
	fx_plan_ok(&f, &opts);
	assert_int_equal(f.p->nwaves, 2);
	assert_halves_share_a_wave(f.p);
	assert_int_equal(find_action(f.p, "migrate build-02 off esx02")->wave, 1);
	assert_int_equal(find_action(f.p, "migrate build-02 back to esx02")->wave, 1);
	(void)state;
	fx_done(&f);
}

static void test_evacuation_vmotions_roll(void **state)
{
	struct fx f;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;
	const struct gc_action *m2;

	fx_build(&f, 1, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	fx_drift_passthru(&f, 1);
	gc_observed_set_vm(f.o, "build-01", GC_POWER_ON, "esx01", true);
	gc_observed_set_vm(f.o, "build-02", GC_POWER_ON, "esx01", true);
	gc_observed_set_vm(f.o, "build-03", GC_POWER_ON, "esx01", true);
	opts.allow_vmotion = 1;
	fx_plan_ok(&f, &opts);
	assert_int_equal(f.p->nwarnings, 0); /* one VM off: worker-01 */
	m2 = find_action(f.p, "migrate build-02 off esx01");
	assert_true(has_dep(m2, find_action(f.p, "migrate build-01 off esx01")));
	assert_string_equal(m2->why, "esx01 enters maintenance mode; unmanaged VM build-02 can be "
				     "live-migrated (rolling.allow_vmotion); after build-01's vMotion off "
				     "esx01 (rolling.max_unavailable_vms: 1)");
	assert_true(has_dep(find_action(f.p, "migrate build-03 off esx01"), m2));
	assert_true(has_dep(find_action(f.p, "migrate build-02 back to esx01"),
			    find_action(f.p, "migrate build-01 back to esx01")));
	assert_string_equal(find_action(f.p, "migrate build-03 back to esx01")->why,
			    "return build-03 to esx01 after maintenance; after build-02's vMotion back "
			    "to esx01 (rolling.max_unavailable_vms: 1)");
	gc_plan_free(f.p);
	f.p = NULL;

	f.g->rolling.max_unavailable_vms = 2;
	fx_plan_ok(&f, &opts);
	assert_false(depends(find_action(f.p, "migrate build-02 off esx01"),
			     find_action(f.p, "migrate build-01 off esx01")));
	assert_true(has_dep(find_action(f.p, "migrate build-03 off esx01"),
			    find_action(f.p, "migrate build-01 off esx01")));
	assert_false(depends(find_action(f.p, "migrate build-03 off esx01"),
			     find_action(f.p, "migrate build-02 off esx01")));
	(void)state;
	fx_done(&f);
}

static void test_spec_rolling_default_one(void **state)
{
	struct fx f;

	fx_build(&f, 3, 1, FX_PASSTHROUGH);
	fx_plan_ok(&f, NULL);
	assert_int_equal(f.p->max_unavailable, 1);
	assert_int_equal(f.p->nwaves, 3);
	for (size_t w = 0; w < 3; w++)
		assert_int_equal(f.p->waves[w].nmaintenance_hosts, 1);
	(void)state;
	fx_done(&f);
}

/* ---------------------------------------------------------------- observed */

static void test_converged_no_changes(void **state)
{
	struct fx f;
	struct gc_buf b = GC_BUF_INIT;

	fx_build(&f, 2, 2, FX_VGPU);
	fx_converge(&f);
	fx_plan_ok(&f, NULL);
	assert_true(gc_plan_empty(f.p));
	assert_int_equal(f.p->nwaves, 0);
	gc_plan_render_text(&b, f.p, 0);
	assert_string_equal(gc_buf_str(&b), "No changes. The cluster matches the spec.\n");
	gc_buf_free(&b);
	(void)state;
	fx_done(&f);
}

static void test_one_drifted_property(void **state)
{
	struct fx f;
	const struct gc_action *a;

	fx_build(&f, 2, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	gc_observed_set(f.o, "sw01/switch.pfc", "priority", "4");
	fx_plan_ok(&f, NULL);
	assert_int_equal(f.p->nactions, 1);
	a = f.p->actions[0];
	assert_int_equal(a->kind, GC_ACT_APPLY);
	assert_int_equal(a->op, GC_OP_UPDATE);
	assert_string_equal(a->resource_id, "sw01/switch.pfc");
	assert_int_equal(a->nchanges, 1);
	assert_string_equal(a->changes[0].key, "priority");
	assert_string_equal(a->changes[0].old_value, "4");
	assert_string_equal(a->changes[0].new_value, "3");
	assert_int_equal(f.p->stats.change, 1);
	assert_int_equal(f.p->stats.synthesized, 0);
	(void)state;
	fx_done(&f);
}

/* A vGPU manager without vib_name: its VIB names and versions are learned
 * on the host.  Nothing learned: the plan installs and says so; learned and
 * installed: nothing to do; learned newer: the version changes. */
static void test_vib_names_learned_from_the_bundle(void **state)
{
	const char *id = "esx01/esxi.vib/NVD-VGPU-800_535.154.02-1OEM.800.1.0.20613240_23175620.zip";
	struct fx f;
	const struct gc_action *a;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_error err = GC_ERROR_INIT;

	memset(&f, 0, sizeof(f));
	f.c = fx_cluster(1, 1, FX_VGPU);
	f.c->hosts[0].vgpu->vib_name = NULL;
	assert_int_equal(gc_graph_build(&f.g, f.c, &err), 0);
	/* converged but for the VIB: the bundle is not on the host, so
	 * nothing was learned, and no VIB of it is installed */
	gc_observed_new(&f.o);
	for (size_t i = 0; i < f.g->nresources; i++) {
		const struct gc_resource *r = f.g->resources[i];

		for (size_t k = 0; k < r->nprops && strcmp(r->id, id) != 0; k++)
			gc_observed_set(f.o, r->id, r->props[k].key, r->props[k].value);
	}
	for (size_t i = 0; i < f.g->nvms; i++)
		gc_observed_set_vm(f.o, f.g->vms[i].name, GC_POWER_ON, f.g->vms[i].host, false);
	fx_plan_ok(&f, NULL);
	a = find_action(f.p, "+ esx01/esxi.vib/NVD-VGPU-800_535.154.02-1OEM.800.1.0.20613240_23175620.zip");
	assert_non_null(a);
	assert_string_equal(a->changes[0].key, "name");
	assert_string_equal(a->changes[0].new_value, "(learned from the bundle on the host)");
	gc_plan_render_text(&b, f.p, 0);
	assert_non_null(strstr(gc_buf_str(&b), "        name: (none) → (learned from the bundle on the host)\n"
						"        version: (none) → (learned from the bundle on the host)\n"));
	gc_buf_free(&b);
	gc_plan_free(f.p);
	f.p = NULL;

	/* learned, and installed at that version: no change */
	gc_observed_learn(f.o, id, "name", "NVD-VGPU-800_ESXi_8.0.0_Driver");
	gc_observed_learn(f.o, id, "version", "535.154.02-1OEM.800.1.0.20613240");
	assert_null(gc_observed_resource(f.o, id)); /* learning creates nothing */
	gc_observed_set(f.o, id, "name", "NVD-VGPU-800_ESXi_8.0.0_Driver");
	gc_observed_set(f.o, id, "version", "535.154.02-1OEM.800.1.0.20613240");
	gc_observed_set(f.o, id, "source", gc_resource_prop(gc_graph_find(f.g, id), "source"));
	fx_plan_ok(&f, NULL);
	assert_true(gc_plan_empty(f.p));
	gc_plan_free(f.p);
	f.p = NULL;

	/* the bundle holds a newer build than the host runs */
	gc_observed_learn(f.o, id, "version", "535.161.05-1OEM.800.1.0.20613240");
	fx_plan_ok(&f, NULL);
	a = find_action(f.p, "~ esx01/esxi.vib/NVD-VGPU-800_535.154.02-1OEM.800.1.0.20613240_23175620.zip");
	assert_non_null(a);
	assert_int_equal(a->nchanges, 1);
	assert_string_equal(a->changes[0].key, "version");
	assert_string_equal(a->changes[0].old_value, "535.154.02-1OEM.800.1.0.20613240");
	assert_string_equal(a->changes[0].new_value, "535.161.05-1OEM.800.1.0.20613240");
	(void)state;
	fx_done(&f);
}

/* An observed value is the target's words: a newline in it cannot forge a
 * plan line, an escape cannot clear the screen (the JSON plan keeps it as is). */
static void test_observed_value_cannot_forge_plan_lines(void **state)
{
	struct fx f;
	struct gc_buf b = GC_BUF_INIT;

	fx_build(&f, 2, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	gc_observed_set(f.o, "sw01/switch.pfc", "priority", "4\n    ~ sw01/switch.ok\033[2J");
	fx_plan_ok(&f, NULL);
	gc_plan_render_text(&b, f.p, 0);
	assert_non_null(strstr(gc_buf_str(&b), "    ~ sw01/switch.pfc\n"
						"        priority: 4\\u000a    ~ sw01/switch.ok"
						"\\u001b[2J → 3\n"));
	assert_null(strstr(gc_buf_str(&b), "\n    ~ sw01/switch.ok"));
	gc_buf_reset(&b);
	gc_plan_render_json(&b, f.p);
	assert_non_null(strstr(gc_buf_str(&b), "\"old\": \"4\\n    ~ sw01/switch.ok\\u001b[2J\""));
	gc_buf_free(&b);
	(void)state;
	fx_done(&f);
}

/* Passthrough disabled on a running host: the VM cannot move, so it is
 * shut down first and started after the window. */
static void test_drift_needs_maintenance_running_vm(void **state)
{
	struct fx f;

	fx_build(&f, 2, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	gc_observed_set(f.o, "esx02/esxi.pci_passthru/0000:3b:00.0", "enabled", "false");
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "esx02",
		     "enter maintenance mode on esx02; ~ esx02/esxi.pci_passthru/0000:3b:00.0; "
		     "reboot esx02; wait for esx02; verify esx02; exit maintenance mode on esx02");
	assert_steps(f.p, "vcenter", "power off worker-02; power on worker-02");
	assert_steps(f.p, "esx01", "");
	assert_string_equal(find_action(f.p, "power off worker-02")->why,
			    "esx02 enters maintenance mode and VM worker-02 cannot be live-migrated "
			    "(passthrough GPU 0000:3b:00.0)");
	assert_true(depends(find_action(f.p, "enter maintenance mode on esx02"),
			    find_action(f.p, "power off worker-02")));
	assert_true(depends(find_action(f.p, "power on worker-02"),
			    find_action(f.p, "exit maintenance mode on esx02")));
	assert_int_equal(f.p->stats.critical_path, 8);
	(void)state;
	fx_done(&f);
}

/* Two vGPU hosts whose only VM is worker-01 on esx01 (esx02's T4 is free),
 * the vGPU manager drifted on esx01 alone. */
static void fx_vmotion_pair(struct fx *f)
{
	struct gc_error err = GC_ERROR_INIT;

	memset(f, 0, sizeof(*f));
	f->c = fx_cluster(2, 1, FX_VGPU);
	f->c->nvms = 1;
	f->c->hosts[1].gpus[0].vgpu_profile = NULL;
	f->c->hosts[1].gpus[0].vgpu_used_gb = 0;
	assert_int_equal(gc_graph_build(&f->g, f->c, &err), 0);
	fx_converge(f);
	gc_observed_set(f->o, "esx01/esxi.vib/NVD-VGPU-800", "version",
			"525.105.14-1OEM.800.1.0.20613240");
}

/* issue 12: a vMotion names its destination - another host on the VM's
 * switches with room for its vGPU, outside the wave - and the VM comes
 * back after; with none it is powered off and the plan says why */
static void test_vgpu_host_vmotion(void **state)
{
	struct fx f;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;
	struct gc_host_gpu *free_t4;

	fx_vmotion_pair(&f);
	free_t4 = &f.c->hosts[1].gpus[0];
	opts.allow_vmotion = 1;
	fx_plan_ok(&f, &opts);
	assert_steps(f.p, "vcenter", "migrate worker-01 off esx01 to esx02; migrate worker-01 back to esx01");
	assert_string_equal(f.p->actions[0]->why,
			    "esx01 enters maintenance mode; VM worker-01 can be live-migrated "
			    "(rolling.allow_vmotion) to esx02: on its switches, with room for its vGPUs");
	assert_string_equal(f.p->actions[0]->dest_host, "esx02");
	assert_string_equal(find_action(f.p, "exit maintenance mode on esx01")->why,
			    "the host's changes are done and verified");
	gc_plan_free(f.p);
	f.p = NULL;

	/* esx02's T4 runs a 16 GB vGPU already: no room */
	free_t4->vgpu_profile = "grid_t4-16c";
	free_t4->vgpu_used_gb = 16;
	fx_plan_ok(&f, &opts);
	assert_steps(f.p, "vcenter", "power off worker-01; power on worker-01");
	assert_string_equal(find_action(f.p, "power off worker-01")->why,
			    "esx01 enters maintenance mode and no host can take VM worker-01 by vMotion "
			    "(esx02 has no room for grid_t4-16c)");
	gc_plan_free(f.p);
	f.p = NULL;

	/* room again, but esx02 is not on the VM's switch */
	free_t4->vgpu_profile = NULL;
	free_t4->vgpu_used_gb = 0;
	f.c->dvswitches[0].nuplinks = 1;
	f.c->hosts[1].nics[0].dvswitch = NULL;
	f.c->hosts[1].nics[1].dvswitch = NULL;
	fx_plan_ok(&f, &opts);
	assert_string_equal(find_action(f.p, "power off worker-01")->why,
			    "esx01 enters maintenance mode and no host can take VM worker-01 by vMotion "
			    "(esx02 is not on rdma-dvs)");
	gc_plan_free(f.p);
	f.p = NULL;
	f.c->dvswitches[0].nuplinks = 2;

	/* esx02 in maintenance mode (seen so): not a destination */
	gc_observed_set_host(f.o, "esx02", true, true);
	fx_plan_ok(&f, &opts);
	assert_string_equal(find_action(f.p, "power off worker-01")->why,
			    "esx01 enters maintenance mode and no host can take VM worker-01 by vMotion "
			    "(esx02 is in maintenance mode)");
	gc_plan_free(f.p);
	f.p = NULL;

	/* without allow_vmotion the vGPU VM is shut down instead */
	opts.allow_vmotion = 0;
	fx_plan_ok(&f, &opts);
	assert_steps(f.p, "vcenter", "power off worker-01; power on worker-01");
	assert_string_equal(find_action(f.p, "power off worker-01")->why,
			    "esx01 enters maintenance mode and rolling.allow_vmotion is false");
	(void)state;
	fx_done(&f);
}

/* The destination has a window of its own in a later wave: the VM is home
 * again before that host enters maintenance mode; in the same wave it is
 * no destination */
static void test_vmotion_destination_in_another_wave(void **state)
{
	struct fx f;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;

	fx_vmotion_pair(&f);
	gc_observed_set(f.o, "esx02/esxi.vib/NVD-VGPU-800", "version",
			"525.105.14-1OEM.800.1.0.20613240");
	opts.allow_vmotion = 1;
	fx_plan_ok(&f, &opts);
	assert_steps(f.p, "vcenter", "migrate worker-01 off esx01 to esx02; migrate worker-01 back to esx01");
	assert_true(depends(find_action(f.p, "enter maintenance mode on esx02"),
			    find_action(f.p, "migrate worker-01 back to esx01")));
	gc_plan_free(f.p);
	f.p = NULL;
	f.c->rolling.max_unavailable = 2;
	gc_graph_free(f.g);
	{
		struct gc_error err = GC_ERROR_INIT;

		assert_int_equal(gc_graph_build(&f.g, f.c, &err), 0);
	}
	fx_plan_ok(&f, &opts);
	assert_string_equal(find_action(f.p, "power off worker-01")->why,
			    "esx01 enters maintenance mode and no host can take VM worker-01 by vMotion "
			    "(esx02 is in the same wave)");
	(void)state;
	fx_done(&f);
}

/* vCenter refuses a vGPU VM's vMotion until vgpu.hotmigrate.enabled is set
 * (issue 14, item 11): with rolling.allow_vmotion in the spec the graph
 * manages the setting, and both migrations wait for it */
static void test_vgpu_vmotion_waits_for_hotmigrate(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct fx f;

	memset(&f, 0, sizeof(f));
	f.c = fx_cluster(2, 1, FX_VGPU);
	f.c->nvms = 1;
	f.c->hosts[1].gpus[0].vgpu_profile = NULL;
	f.c->hosts[1].gpus[0].vgpu_used_gb = 0;
	f.c->rolling.allow_vmotion = true;
	assert_int_equal(gc_graph_build(&f.g, f.c, &err), 0);
	assert_string_equal(gc_resource_prop(gc_graph_find(f.g, GC_VGPU_HOTMIGRATE_ID), "value"),
			    "true");
	fx_converge(&f);
	gc_observed_set(f.o, GC_VGPU_HOTMIGRATE_ID, "value", "false");
	gc_observed_set(f.o, "esx01/esxi.vib/NVD-VGPU-800", "version", "525.105.14-1OEM.800.1.0.20613240");
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "vcenter",
		     "~ vcenter/setting/vgpu.hotmigrate.enabled; migrate worker-01 off esx01 to esx02; "
		     "migrate worker-01 back to esx01");
	assert_true(depends(find_action(f.p, "migrate worker-01 off esx01 to esx02"),
			    find_action(f.p, "~ vcenter/setting/vgpu.hotmigrate.enabled")));
	(void)state;
	fx_done(&f);
}

/* VMX booleans: a VM set TRUE/True/true by hand is not drift (issue 14);
 * a false one is, and gets the guides' TRUE */
static void test_vmx_booleans_any_case(void **state)
{
	struct fx f;
	const struct gc_action *a;

	fx_build(&f, 1, 2, FX_PASSTHROUGH);
	fx_converge(&f);
	gc_observed_set(f.o, "vm/worker-01/extra_config", "pciPassthru.allowP2P", "true");
	gc_observed_set(f.o, "vm/worker-01/extra_config", "pciPassthru.use64bitMMIO", "True");
	fx_plan_ok(&f, NULL);
	assert_true(gc_plan_empty(f.p));
	gc_plan_free(f.p);
	f.p = NULL;

	gc_observed_set(f.o, "vm/worker-01/extra_config", "pciPassthru.allowP2P", "FALSE");
	gc_observed_set(f.o, "vm/worker-01/extra_config", "pciPassthru.64bitMMIOSizeGB", "064");
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "vcenter",
		     "power off worker-01; ~ vm/worker-01/extra_config; power on worker-01");
	a = find_action(f.p, "~ vm/worker-01/extra_config");
	assert_int_equal(a->nchanges, 2);
	assert_string_equal(a->changes[0].key, "pciPassthru.64bitMMIOSizeGB");
	assert_string_equal(a->changes[0].new_value, "64");
	assert_string_equal(a->changes[1].key, "pciPassthru.allowP2P");
	assert_string_equal(a->changes[1].old_value, "FALSE");
	assert_string_equal(a->changes[1].new_value, "TRUE");
	/* only VMX options: elsewhere a value is its exact string */
	assert_true(gc_plan_value_same(a->resource, "TRUE", "true"));
	assert_false(gc_plan_value_same(a->resource, "64", "064"));
	assert_false(gc_plan_value_same(a->resource, NULL, "TRUE"));
	(void)state;
	fx_done(&f);
}

/* A switch's uplinks are a set: the same pNICs in another order, or
 * written with blanks, are no change; one more or one less is. */
static void test_switch_uplinks_compare_as_sets(void **state)
{
	struct gc_resource dvs = {.kind = GC_RES_DVS}, other = {.kind = GC_RES_ESXI_ADVANCED};

	(void)state;
	assert_true(gc_plan_value_same(&dvs, "vmnic4,vmnic5", "vmnic4,vmnic5"));
	assert_true(gc_plan_value_same(&dvs, "vmnic5,vmnic4", "vmnic4,vmnic5"));
	assert_true(gc_plan_value_same(&dvs, "vmnic5, vmnic4", "vmnic4,vmnic5"));
	assert_true(gc_plan_value_same(&dvs, "vmnic4,vmnic4,vmnic5", "vmnic4,vmnic5"));
	assert_true(gc_plan_value_same(&dvs, "9000", "9000"));
	assert_false(gc_plan_value_same(&dvs, "vmnic5", "vmnic4,vmnic5"));
	assert_false(gc_plan_value_same(&dvs, "vmnic4,vmnic5,vmnic6", "vmnic4,vmnic5"));
	assert_false(gc_plan_value_same(&dvs, "vmnic4,vmnic50", "vmnic4,vmnic5"));
	assert_false(gc_plan_value_same(&dvs, NULL, "vmnic4,vmnic5"));
	assert_false(gc_plan_value_same(&dvs, "1500", "9000"));
	/* elsewhere a list is its exact string */
	assert_false(gc_plan_value_same(&other, "vmnic5,vmnic4", "vmnic4,vmnic5"));
}

/* A VM device change that needs the VM off: one power-off, one power-on. */
static void test_vm_off_change(void **state)
{
	struct fx f;
	const struct gc_action *off;

	fx_build(&f, 1, 2, FX_PASSTHROUGH);
	fx_converge(&f);
	gc_observed_set(f.o, "vm/worker-01/extra_config", "pciPassthru.64bitMMIOSizeGB", "32");
	gc_observed_set(f.o, "vm/worker-01/hw", "memory_reservation", "none");
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "vcenter",
		     "power off worker-01; ~ vm/worker-01/hw; ~ vm/worker-01/extra_config; "
		     "power on worker-01");
	off = find_action(f.p, "power off worker-01");
	assert_string_equal(off->why, "firmware and memory reservation needs the VM powered off");
	assert_true(off->synthesized);
	assert_int_equal(f.p->stats.hosts_in_maintenance, 0);
	assert_int_equal(f.p->stats.synthesized, 2);
	(void)state;
	fx_done(&f);
}

/* A VM that is off stays off for its changes and is then started. */
static void test_vm_off_already(void **state)
{
	struct fx f;
	const struct gc_action *on;

	fx_build(&f, 1, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	gc_observed_set_vm(f.o, "worker-01", GC_POWER_OFF, "esx01", false);
	gc_observed_set(f.o, "vm/worker-01/extra_config", "pciPassthru.64bitMMIOSizeGB", "32");
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "vcenter", "~ vm/worker-01/extra_config; power on worker-01");
	on = find_action(f.p, "power on worker-01");
	assert_int_equal(on->op, GC_OP_UPDATE);
	assert_string_equal(on->resource_id, "vm/worker-01/power");
	assert_string_equal(on->changes[0].old_value, "off");
	(void)state;
	fx_done(&f);
}

static void test_delete_owned_device(void **state)
{
	struct fx f;
	const struct gc_action *d;

	fx_build(&f, 1, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	gc_observed_set(f.o, "vm/worker-01/device.pci/0000:af:00.0", "host_pci", "0000:af:00.0");
	gc_observed_set(f.o, "esx01/esxi.pci_passthru/0000:af:00.0", "enabled", "true"); /* not owned */
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "vcenter",
		     "power off worker-01; - vm/worker-01/device.pci/0000:af:00.0; power on worker-01");
	d = find_action(f.p, "- vm/worker-01/device.pci/0000:af:00.0");
	assert_int_equal(d->res_kind, GC_RES_VM_DEVICE_PCI);
	assert_null(d->resource);
	assert_string_equal(d->changes[0].old_value, "0000:af:00.0");
	assert_null(d->changes[0].new_value);
	assert_int_equal(f.p->stats.destroy, 1);
	assert_int_equal(d->ndeps, 1); /* the power-off only: no window on esx01 */
	(void)state;
	fx_done(&f);
}

static void test_unmanaged_vm_evacuated(void **state)
{
	struct fx f;

	fx_build(&f, 1, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	gc_observed_set_vm(f.o, "build-box", GC_POWER_ON, "esx01", true);
	gc_observed_set_vm(f.o, "elsewhere", GC_POWER_ON, "esx09", false);
	gc_observed_set(f.o, "esx01/esxi.module_param/nmlx5_core", "max_vfs", "4,4");
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "vcenter",
		     "power off worker-01; power off build-box; power on worker-01; power on build-box");
	assert_string_equal(find_action(f.p, "power off build-box")->why,
			    "esx01 enters maintenance mode and rolling.allow_vmotion is false");
	(void)state;
	fx_done(&f);
}

static void test_host_in_maintenance_and_unreachable(void **state)
{
	struct fx f;
	struct gc_error err = GC_ERROR_INIT;

	fx_build(&f, 1, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	gc_observed_set(f.o, "esx01/esxi.module_param/nmlx5_core", "max_vfs", "4,4");
	gc_observed_set_host(f.o, "esx01", true, true);
	fx_plan_ok(&f, NULL);
	assert_string_equal(find_action(f.p, "enter maintenance mode on esx01")->why,
			    "esx01 is already in maintenance mode");
	gc_plan_free(f.p);
	f.p = NULL;
	gc_observed_set_host(f.o, "esx01", false, false);
	assert_int_equal(fx_plan(&f, NULL, &err), GC_EREMOTE);
	assert_string_equal(err.msg, "host 'esx01' is unreachable: cannot plan its 1 changes that "
				     "need maintenance mode");
	gc_observed_set(f.o, "esx01/esxi.module_param/nmlx5_core", "max_vfs", "8,8");
	gc_observed_set(f.o, "esx01/esxi.ntp", "servers", "pool.ntp.org");
	gc_error_clear(&err);
	assert_int_equal(fx_plan(&f, NULL, &err), GC_EREMOTE);
	assert_string_equal(err.msg, "host 'esx01' is unreachable: cannot plan its 1 change");
	(void)state;
	fx_done(&f);
}

/* The device says a configured change waits for a reboot (or the journal
 * does): nothing to change, but a reboot in a maintenance window is owed. */
static void test_owed_reboot(void **state)
{
	struct fx f;

	fx_build(&f, 1, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	gc_observed_set_host_pending(f.o, "esx01", true,
				     "passthrough of 0000:3b:00.0 configured true, running false");
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "esx01",
		     "enter maintenance mode on esx01; reboot esx01; wait for esx01; verify esx01; "
		     "exit maintenance mode on esx01");
	assert_steps(f.p, "vcenter", "power off worker-01; power on worker-01");
	assert_string_equal(find_action(f.p, "reboot esx01")->why,
			    "a reboot is owed: passthrough of 0000:3b:00.0 configured true, running false");
	assert_int_equal(f.p->stats.reboots, 1);
	(void)state;
	fx_done(&f);
}

/* An earlier run installed the VIB and was killed before its reboot: the
 * VIB looks converged, but nvidia-smi is not loaded until the owed reboot,
 * so ECC waits for it (and then needs its own). */
static void test_owed_reboot_before_ecc(void **state)
{
	struct fx f;

	fx_build(&f, 1, 1, FX_VGPU);
	fx_converge(&f);
	gc_observed_set(f.o, "esx01/esxi.gpu_ecc/0000:3b:00.0", "ecc", "enabled");
	gc_observed_set_host_pending(f.o, "esx01", true,
				     "a change applied by an earlier run awaits its reboot");
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "esx01",
		     "enter maintenance mode on esx01; reboot esx01; wait for esx01; "
		     "~ esx01/esxi.gpu_ecc/0000:3b:00.0; reboot esx01; wait for esx01; "
		     "verify esx01; exit maintenance mode on esx01");
	assert_true(depends(find_action(f.p, "~ esx01/esxi.gpu_ecc/0000:3b:00.0"),
			    find_action(f.p, "enter maintenance mode on esx01")));
	(void)state;
	fx_done(&f);
}

/* An earlier apply was killed inside a window: take the host out again and
 * start the VM it had shut down. */
static void test_left_in_maintenance_by_us(void **state)
{
	struct fx f;

	fx_build(&f, 1, 1, FX_PASSTHROUGH);
	fx_converge(&f);
	gc_observed_set_host(f.o, "esx01", true, true);
	gc_observed_set_host_ours(f.o, "esx01", true);
	gc_observed_set_vm(f.o, "worker-01", GC_POWER_OFF, "esx01", false);
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "esx01", "exit maintenance mode on esx01");
	assert_steps(f.p, "vcenter", "power on worker-01");
	assert_string_equal(f.p->actions[0]->why, "an earlier apply left esx01 in maintenance mode");
	assert_true(depends(find_action(f.p, "power on worker-01"),
			    find_action(f.p, "exit maintenance mode on esx01")));
	gc_plan_free(f.p);
	f.p = NULL;
	/* in maintenance for someone else's reasons: left alone */
	gc_observed_set_host_ours(f.o, "esx01", false);
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "esx01", "");
	(void)state;
	fx_done(&f);
}

static void test_cycle_is_an_error(void **state)
{
	struct gc_graph *g;
	struct gc_resource *a, *b;
	struct gc_plan *p = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_target *t;

	gc_graph_new(&g);
	t = gc_graph_add_target(g, GC_TARGET_VCENTER, GC_VCENTER_TARGET);
	assert_int_equal(gc_graph_add(&a, g, GC_RES_DVS, t, "dvs/x", NULL, NULL, 0, &err), 0);
	assert_int_equal(gc_graph_add(&b, g, GC_RES_DVS_PORTGROUP, t, "dvs/x/portgroup/y", NULL, NULL, 0, &err), 0);
	gc_graph_add_edge(g, a, b);
	gc_graph_add_edge(g, b, a);
	assert_int_equal(gc_plan_build(&p, g, NULL, NULL, &err), GC_ECYCLE);
	assert_null(p);
	assert_string_equal(err.msg, "dependency cycle: dvs/x -> dvs/x/portgroup/y -> dvs/x");
	(void)state;
	gc_graph_free(g);
}

static void test_json_shape(void **state)
{
	struct fx f;
	struct gc_buf b = GC_BUF_INIT;
	json_object *root, *v, *w0, *t0, *a0;

	fx_build(&f, 1, 1, FX_PASSTHROUGH);
	fx_plan_ok(&f, NULL);
	gc_plan_render_json(&b, f.p);
	root = json_tokener_parse(gc_buf_str(&b));
	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "format_version", &v));
	assert_int_equal(json_object_get_int(v), 1);
	assert_true(json_object_object_get_ex(root, "summary", &v));
	assert_true(json_object_object_get_ex(v, "critical_path", &v));
	assert_int_equal(json_object_get_int(v), (int)f.p->stats.critical_path);
	assert_true(json_object_object_get_ex(root, "waves", &v));
	w0 = json_object_array_get_idx(v, 0);
	assert_true(json_object_object_get_ex(w0, "targets", &v));
	t0 = json_object_array_get_idx(v, 0);
	assert_true(json_object_object_get_ex(t0, "actions", &v));
	a0 = json_object_array_get_idx(v, 0);
	assert_true(json_object_object_get_ex(a0, "resource", &v));
	assert_string_equal(json_object_get_string(v), "esx01/esxi.ntp");
	json_object_put(root);
	gc_buf_free(&b);
	(void)state;
	fx_done(&f);
}

static void test_empty_graph(void **state)
{
	struct gc_graph *g;
	struct gc_plan *p = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	json_object *root;

	gc_graph_new(&g);
	assert_int_equal(gc_plan_build(&p, g, NULL, NULL, &err), 0);
	assert_true(gc_plan_empty(p));
	assert_int_equal(p->nwaves, 0);
	assert_int_equal(p->stats.critical_path, 0);
	gc_plan_render_json(&b, p);
	root = json_tokener_parse(gc_buf_str(&b));
	assert_non_null(root);
	json_object_put(root);
	gc_buf_free(&b);
	gc_plan_free(p);
	gc_graph_free(g);
	(void)state;
}

/* The human plan, byte for byte, for a small hand-built graph. */
static void test_text_exact(void **state)
{
	struct gc_graph *g;
	struct gc_resource *r, *dev;
	struct gc_observed *o;
	struct gc_plan *p = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_target *esx, *vc;
	struct gc_graph_vm vm = {"w1", "esx01", false, true, "passthrough GPU 0000:3b:00.0", NULL};

	gc_graph_new(&g);
	esx = gc_graph_add_target(g, GC_TARGET_ESXI, "esx01");
	vc = gc_graph_add_target(g, GC_TARGET_VCENTER, GC_VCENTER_TARGET);
	assert_int_equal(gc_graph_add(&r, g, GC_RES_ESXI_PCI_PASSTHRU, esx,
				      "esx01/esxi.pci_passthru/0000:3b:00.0", "esx01", NULL,
				      GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT, &err), 0);
	gc_resource_set(g, r, "enabled", "true");
	r->summary = "passthrough for GPU";
	r->detail = "0000:3b:00.0";
	assert_int_equal(gc_graph_add(&dev, g, GC_RES_VM_DEVICE_PCI, vc, "vm/w1/device.pci/0000:3b:00.0",
				      "esx01", "w1", GC_RES_NEEDS_VM_OFF, &err), 0);
	gc_resource_set(g, dev, "host_pci", "0000:3b:00.0");
	gc_graph_add_edge(g, r, dev);
	gc_graph_add_vm(g, &vm);

	gc_observed_new(&o);
	gc_observed_set(o, "esx01/esxi.pci_passthru/0000:3b:00.0", "enabled", "false");
	gc_observed_set(o, "vm/w1/device.pci/0000:af:00.0", "host_pci", "0000:af:00.0");
	gc_observed_set_vm(o, "w1", GC_POWER_ON, "esx01", false);
	assert_int_equal(gc_plan_build(&p, g, o, NULL, &err), 0);
	gc_plan_render_text(&b, p, 0);
	assert_string_equal(gc_buf_str(&b),
		"Wave 1 of 1 (maintenance: esx01)\n"
		"\n"
		"  esxi esx01\n"
		"    > enter maintenance mode\n"
		"        why: passthrough for GPU 0000:3b:00.0 needs maintenance mode\n"
		"        after: power off w1\n"
		"    ~ esx01/esxi.pci_passthru/0000:3b:00.0  [maintenance, reboot]\n"
		"        enabled: false → true\n"
		"    > reboot\n"
		"        why: one reboot for 1 change that takes effect after a reboot\n"
		"    > wait for the host\n"
		"        why: the host must answer again after the reboot\n"
		"    > verify\n"
		"        why: read back the 1 change before leaving maintenance mode\n"
		"    > exit maintenance mode\n"
		"        why: the host's changes are done and verified\n"
		"\n"
		"  vcenter vcenter\n"
		"    > power off w1 (guest shutdown)\n"
		"        why: vm/w1/device.pci/0000:3b:00.0 needs the VM powered off\n"
		"    + vm/w1/device.pci/0000:3b:00.0  [VM off]\n"
		"        host_pci: (none) → 0000:3b:00.0\n"
		"        after: ~ esx01/esxi.pci_passthru/0000:3b:00.0, exit maintenance mode on esx01\n"
		"    - vm/w1/device.pci/0000:af:00.0  [VM off]\n"
		"        host_pci: 0000:af:00.0 → (removed)\n"
		"        after: exit maintenance mode on esx01\n"
		"    > power on w1\n"
		"        why: power w1 back on after the changes that needed it off\n"
		"        after: exit maintenance mode on esx01\n"
		"\n"
		"Plan: 1 to add, 1 to change, 1 to destroy, 7 synthesized steps "
		"(1 hosts need maintenance, 1 reboots).\n");
	/* colour only when asked: ANSI markers around + ~ - > */
	gc_buf_reset(&b);
	gc_plan_render_text(&b, p, GC_RENDER_COLOR);
	assert_non_null(strstr(gc_buf_str(&b), "\033[32m+\033[0m vm/w1/device.pci/0000:3b:00.0"));
	assert_non_null(strstr(gc_buf_str(&b), "\033[31m-\033[0m vm/w1/device.pci/0000:af:00.0"));
	assert_non_null(strstr(gc_buf_str(&b), "\033[33m~\033[0m esx01/esxi.pci_passthru"));
	gc_buf_free(&b);
	gc_plan_free(p);
	gc_observed_free(o);
	gc_graph_free(g);
	(void)state;
}

/* ---------------------------------------------------------------- KVM hosts */

/* examples/kvm-pair.yaml (two KVM hosts, a VM each), observed as the spec
 * says with both VMs running. */
static void fx_kvm_pair(struct fx *f)
{
	struct gc_diags d = {0};
	struct gc_error err = GC_ERROR_INIT;

	memset(f, 0, sizeof(*f));
	if (gc_spec_load(&f->c, &d, "examples/kvm-pair.yaml", &err) != 0)
		fail_msg("examples/kvm-pair.yaml: %s", err.msg);
	gc_diags_free(&d);
	assert_int_equal(gc_graph_build(&f->g, f->c, &err), 0);
	fx_converge(f);
}

static void fx_kvm_done(struct fx *f)
{
	gc_plan_free(f->p);
	gc_observed_free(f->o);
	gc_graph_free(f->g);
	gc_cluster_free(f->c);
}

/* The IOMMU arguments of one host drifted and its GPU is back on nvidia:
 * its VM goes off, the host reboots with evidence, vfio-pci after the
 * reboot, the VM back on after the read-back.  No maintenance mode. */
static void test_kvm_reboot_text(void **state)
{
	struct fx f;
	struct gc_buf b = GC_BUF_INIT;

	fx_kvm_pair(&f);
	gc_observed_set(f.o, "kvm01/kvm.iommu", "iommu", "off");
	gc_observed_set(f.o, "kvm01/kvm.iommu", "iommu_mode", "none");
	gc_observed_set(f.o, "kvm01/kvm.vfio/0000:3b:00.0", "driver", "nvidia");
	fx_plan_ok(&f, NULL);
	gc_plan_render_text(&b, f.p, 0);
	assert_string_equal(gc_buf_str(&b),
		"Wave 1 of 1\n"
		"\n"
		"  kvm kvm01\n"
		"    ~ kvm01/kvm.iommu  [reboot]\n"
		"        iommu: off → on\n"
		"        iommu_mode: none → pt\n"
		"    > reboot\n"
		"        why: one reboot for 1 change that takes effect after a reboot\n"
		"        after: power off kvm-worker-01\n"
		"    > wait for the host\n"
		"        why: the host must answer again, with a new boot id\n"
		"    ~ kvm01/kvm.vfio/0000:3b:00.0\n"
		"        driver: nvidia → vfio-pci\n"
		"        why: applied after the host's reboot: it needs the IOMMU on\n"
		"    > verify\n"
		"        why: read the host back after its reboot\n"
		"\n"
		"  libvirt kvm01\n"
		"    > power off kvm-worker-01 (guest shutdown)\n"
		"        why: kvm01 reboots and VM kvm-worker-01 runs on it (no live migration on KVM)\n"
		"    > power on kvm-worker-01\n"
		"        why: power kvm-worker-01 back on after the reboot of kvm01\n"
		"        after: verify kvm01\n"
		"\n"
		"Plan: 0 to add, 2 to change, 0 to destroy, 5 synthesized steps "
		"(0 hosts need maintenance, 1 reboots).\n");
	assert_steps(f.p, "kvm02", "");
	gc_buf_free(&b);
	(void)state;
	fx_kvm_done(&f);
}

/* The boot loader boots arguments the running kernel lacks (an earlier
 * run's reboot never happened): the reboot alone, its VM off around it. */
static void test_kvm_owed_reboot(void **state)
{
	struct fx f;

	fx_kvm_pair(&f);
	gc_observed_set_host_pending(f.o, "kvm02", true, "kernel arguments intel_iommu=on iommu=pt "
				     "configured, the running kernel has intel_iommu=off iommu=none");
	fx_plan_ok(&f, NULL);
	/* the host's two targets: kvm (its Linux) and libvirt (its VMs) */
	assert_steps(f.p, "kvm02", "power off kvm-worker-02; reboot kvm02; wait for kvm02; "
				   "verify kvm02; power on kvm-worker-02");
	assert_string_equal(find_action(f.p, "reboot kvm02")->why,
			    "a reboot is owed: kernel arguments intel_iommu=on iommu=pt configured, "
			    "the running kernel has intel_iommu=off iommu=none");
	assert_true(depends(find_action(f.p, "reboot kvm02"), find_action(f.p, "power off kvm-worker-02")));
	assert_true(depends(find_action(f.p, "power on kvm-worker-02"), find_action(f.p, "verify kvm02")));
	assert_int_equal(f.p->stats.reboots, 1);
	assert_int_equal(f.p->stats.hosts_in_maintenance, 0);
	(void)state;
	fx_kvm_done(&f);
}

/* The VM's own change needs it off anyway: that one power-off serves the
 * host's reboot too, and the change (libvirt, on the rebooting host) comes
 * after the host verified. */
static void test_kvm_vm_change_and_reboot(void **state)
{
	struct fx f;
	const struct gc_action *off, *hw;

	fx_kvm_pair(&f);
	gc_observed_set(f.o, "kvm01/kvm.iommu", "iommu", "off");
	gc_observed_set(f.o, "vm/kvm-worker-01/hw", "mmio64_gb", "64");
	gc_observed_set(f.o, "vm/kvm-worker-02/hw", "mmio64_gb", "64");
	fx_plan_ok(&f, NULL);
	assert_steps(f.p, "kvm01", "~ kvm01/kvm.iommu; power off kvm-worker-01; reboot kvm01; "
				   "wait for kvm01; verify kvm01; ~ vm/kvm-worker-01/hw; "
				   "power on kvm-worker-01");
	off = find_action(f.p, "power off kvm-worker-01");
	hw = find_action(f.p, "~ vm/kvm-worker-01/hw");
	assert_string_equal(off->why, "firmware and memory reservation needs the VM powered off");
	assert_true(depends(find_action(f.p, "reboot kvm01"), off));
	assert_true(depends(hw, find_action(f.p, "verify kvm01")));
	/* the other host's VM is rolled by its own budget, as before */
	assert_steps(f.p, "kvm02", "power off kvm-worker-02; ~ vm/kvm-worker-02/hw; "
				   "power on kvm-worker-02");
	(void)state;
	fx_kvm_done(&f);
}

/* Rebooting KVM hosts roll under rolling.max_unavailable like ESXi
 * windows: one host per wave by default, both at once with 2. */
static void test_kvm_hosts_roll(void **state)
{
	struct fx f;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;

	fx_kvm_pair(&f);
	gc_observed_set(f.o, "kvm01/kvm.iommu", "iommu", "off");
	gc_observed_set(f.o, "kvm02/kvm.iommu", "iommu", "off");
	fx_plan_ok(&f, NULL);
	assert_int_equal(f.p->nwaves, 2);
	assert_int_equal(find_action(f.p, "reboot kvm01")->wave, 0);
	assert_int_equal(find_action(f.p, "power on kvm-worker-01")->wave, 0);
	assert_int_equal(find_action(f.p, "power off kvm-worker-02")->wave, 1);
	assert_int_equal(find_action(f.p, "reboot kvm02")->wave, 1);
	gc_plan_free(f.p);
	f.p = NULL;
	opts.max_unavailable = 2;
	fx_plan_ok(&f, &opts);
	assert_int_equal(f.p->nwaves, 1);
	assert_int_equal(f.p->stats.reboots, 2);
	(void)state;
	fx_kvm_done(&f);
}

/* 2,000 hosts x (8 GPUs + 2 NICs + 1 VM), offline; counts only, no timing. */
static void test_scale(void **state)
{
	struct fx f;
	uint64_t t0;

	fx_build(&f, 2000, 8, FX_PASSTHROUGH);
	t0 = gc_now_ns();
	fx_plan_ok(&f, NULL);
	printf("# plan of 2000 hosts: %zu actions, %zu waves in %.3f s\n", f.p->nactions,
	       f.p->nwaves, (double)(gc_now_ns() - t0) / 1e9);
	assert_int_equal(f.p->nwaves, 2000);
	assert_int_equal(f.p->stats.reboots, 4000); /* each host and each guest once */
	assert_int_equal(f.p->nactions, f.g->nresources + 2000 * 8);
	(void)state;
	fx_done(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_switch_uplinks_compare_as_sets),
		cmocka_unit_test(test_offline_passthrough_order),
		cmocka_unit_test(test_offline_esxi67_via_vcenter),
		cmocka_unit_test(test_guest_reboots_roll),
		cmocka_unit_test(test_offline_vgpu_order),
		cmocka_unit_test(test_ecc_only_one_reboot),
		cmocka_unit_test(test_waves_respect_max_unavailable),
		cmocka_unit_test(test_unknown_target_is_left_out_and_named),
		cmocka_unit_test(test_vm_windows_roll_by_budget_and_role),
		cmocka_unit_test(test_evacuations_roll_by_budget),
		cmocka_unit_test(test_evacuations_roll_by_percentage),
		cmocka_unit_test(test_evacuations_roll_by_role),
		cmocka_unit_test(test_evacuations_over_budget_on_one_host_warn),
		cmocka_unit_test(test_evacuation_vmotions_roll),
		cmocka_unit_test(test_a_vms_two_halves_share_a_wave),
		cmocka_unit_test(test_spec_rolling_default_one),
		cmocka_unit_test(test_converged_no_changes),
		cmocka_unit_test(test_one_drifted_property),
		cmocka_unit_test(test_vib_names_learned_from_the_bundle),
		cmocka_unit_test(test_drift_needs_maintenance_running_vm),
		cmocka_unit_test(test_vgpu_host_vmotion),
		cmocka_unit_test(test_vmotion_destination_in_another_wave),
		cmocka_unit_test(test_vgpu_vmotion_waits_for_hotmigrate),
		cmocka_unit_test(test_vm_off_change),
		cmocka_unit_test(test_vmx_booleans_any_case),
		cmocka_unit_test(test_vm_off_already),
		cmocka_unit_test(test_delete_owned_device),
		cmocka_unit_test(test_unmanaged_vm_evacuated),
		cmocka_unit_test(test_host_in_maintenance_and_unreachable),
		cmocka_unit_test(test_owed_reboot),
		cmocka_unit_test(test_owed_reboot_before_ecc),
		cmocka_unit_test(test_left_in_maintenance_by_us),
		cmocka_unit_test(test_cycle_is_an_error),
		cmocka_unit_test(test_json_shape),
		cmocka_unit_test(test_text_exact),
		cmocka_unit_test(test_observed_value_cannot_forge_plan_lines),
		cmocka_unit_test(test_empty_graph),
		cmocka_unit_test(test_kvm_reboot_text),
		cmocka_unit_test(test_kvm_owed_reboot),
		cmocka_unit_test(test_kvm_vm_change_and_reboot),
		cmocka_unit_test(test_kvm_hosts_roll),
		cmocka_unit_test(test_scale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
