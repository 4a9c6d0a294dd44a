/*
 * test_schedule.c - the scheduler (src/exec/schedule.c) on a real plan,
 * with drivers that answer at once.
 *
 * It links bench/fake_drivers.c, as bench/exec_bench.c does: every target
 * kind gets a driver whose observation finds each host up and out of
 * maintenance mode (so every resource is planned) and whose actions
 * succeed, except (fail_first) the first action of the VM named in fail_vm.  The
 * executor's events (serialised) are what the test reads: which action
 * started, in what order, and how it ended.
 *
 * What it holds the scheduler to:
 * - no action starts before every one of its prerequisites is done;
 * - the vCenter's actions (a target with lanes: its VMs' actions run at
 *   once) are taken first ready first, in the order of its list, and before
 *   any other target's (one worker, so the order is the scheduler's alone);
 * - a failed VM action skips what depends on it and nothing else;
 * - with --fail-fast, nothing starts after the failure and every pending
 *   action, the vCenter's included, is skipped as "not started: --fail-fast";
 * - a Ctrl-C while hosts are in their maintenance windows lets the steps in
 *   flight finish, starts none (no reboot), and takes those hosts out of
 *   maintenance mode again, at once, each remembered as owing its reboot.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_drivers.h"
#include "gc/exec.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/sys/driver.h"
#include "gc/spec.h"
#include "gc/util.h"

/* ------------------------------------------------------------ the failing action */

static const char *fail_vm; /* its first vCenter action fails */
static bool failed_once;
static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;

static int fail_first(const struct gc_action *a, struct gc_error *err)
{
	bool fail = false;

	pthread_mutex_lock(&fail_mu);
	if (fail_vm != NULL && !failed_once && a->target->kind == GC_TARGET_VCENTER && a->vm != NULL &&
	    strcmp(a->vm, fail_vm) == 0)
		fail = failed_once = true;
	pthread_mutex_unlock(&fail_mu);
	if (fail)
		return gc_error_set(err, GC_EREMOTE, "vCenter refused %s", a->resource_id);
	return 0;
}

/* ------------------------------------------------------------ what the events say */

enum { PENDING, STARTED, DONE, FAILED, SKIPPED };

struct watch {
	const struct gc_plan *plan;
	unsigned char *st;   /* per action seq - 1 */
	size_t *order;       /* seqs in start order */
	size_t nstarted;
	bool lane_order;     /* check the lanes' order (one worker) */
	char violation[512]; /* the first one */
	size_t nviolations;
	size_t started_after_failure;
	size_t skipped_fail_fast;
	size_t left_on_stop;  /* notes: "left maintenance mode after the interruption" */
};

static void violate(struct watch *w, const char *fmt, ...) GC_PRINTF(2, 3);
static void violate(struct watch *w, const char *fmt, ...)
{
	va_list ap;

	if (w->nviolations++ > 0)
		return;
	va_start(ap, fmt);
	vsnprintf(w->violation, sizeof(w->violation), fmt, ap);
	va_end(ap);
}

static bool deps_done(const struct watch *w, const struct gc_action *a)
{
	for (size_t d = 0; d < a->ndeps; d++)
		if (w->st[a->deps[d]->seq - 1] != DONE)
			return false;
	return true;
}

/* One worker: when a starts, no vCenter action of its wave ahead of it in
 * the vCenter's list (or any at all, when a is another target's) was
 * pending with every prerequisite done. */
static void check_lane_order(struct watch *w, const struct gc_action *a)
{
	const struct gc_plan_wave *wv = &w->plan->waves[a->wave];

	for (size_t t = 0; t < wv->ntargets; t++) {
		const struct gc_plan_target *pt = &wv->targets[t];

		if (pt->target->kind != GC_TARGET_VCENTER)
			continue;
		for (size_t j = 0; j < pt->nactions && pt->actions[j] != a; j++) {
			const struct gc_action *b = pt->actions[j];

			if (w->st[b->seq - 1] == PENDING && deps_done(w, b))
				violate(w, "%s (%s) started while the vCenter's %s (%s) was ready before it",
					a->resource_id ? a->resource_id : "a step", a->target->name,
					b->resource_id ? b->resource_id : "a step", b->target->name);
		}
	}
}

static void on_event(void *arg, const struct gc_exec_event *ev)
{
	struct watch *w = arg;
	const struct gc_action *a = ev->action;

	if (ev->kind == GC_EV_PLANNED) {
		w->plan = ev->plan;
		w->st = gc_xcalloc(ev->plan->nactions + 1, 1);
		w->order = gc_xcalloc(ev->plan->nactions + 1, sizeof(*w->order));
		return;
	}
	if (ev->kind == GC_EV_NOTE && ev->message != NULL &&
	    strcmp(ev->message, "left maintenance mode after the interruption") == 0)
		w->left_on_stop++;
	if (a == NULL || w->st == NULL)
		return;
	switch (ev->kind) {
	case GC_EV_START:
		if (w->st[a->seq - 1] != PENDING)
			violate(w, "action %zu started twice", a->seq);
		if (!deps_done(w, a))
			violate(w, "action %zu (%s) started before its prerequisites were done", a->seq,
				a->target->name);
		if (w->lane_order)
			check_lane_order(w, a);
		for (size_t i = 0; i < w->nstarted; i++)
			if (w->st[w->order[i] - 1] == FAILED) {
				w->started_after_failure++;
				break;
			}
		w->st[a->seq - 1] = STARTED;
		w->order[w->nstarted++] = a->seq;
		break;
	case GC_EV_DONE:
		w->st[a->seq - 1] = DONE;
		break;
	case GC_EV_FAILED:
		w->st[a->seq - 1] = FAILED;
		break;
	case GC_EV_SKIPPED:
		if (w->st[a->seq - 1] != PENDING)
			violate(w, "action %zu skipped after it started", a->seq);
		w->st[a->seq - 1] = SKIPPED;
		if (ev->message != NULL && strcmp(ev->message, "not started: --fail-fast") == 0)
			w->skipped_fail_fast++;
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------ the run */

struct run {
	struct gc_cluster *c;
	struct gc_graph *g;
	struct gc_exec_report rep;
	struct watch w;
	char state[64];
};

/* more of the spec's rolling: map (", max_unavailable_vms: 8") */
static const char *rolling_more = "";

/* hosts ESXi hosts with two 1-GPU VMs each, all in one wave (max_unavailable) */
static void load(struct run *x, int hosts)
{
	struct gc_buf b = GC_BUF_INIT;
	struct gc_diags diags = {0};
	struct gc_error err = GC_ERROR_INIT;
	char path[] = "/tmp/gc-test-schedule-XXXXXX";
	int fd = mkstemp(path);
	FILE *f;

	assert_true(fd >= 0);
	gc_buf_printf(&b,
		      "apiVersion: gpuclusterctl/v1\nkind: Cluster\nmetadata: {name: sched}\n"
		      "credentials:\n"
		      "  - {name: root, username: root, password_env: GC_ESXI_PASSWORD}\n"
		      "  - {name: vc, username: administrator@vsphere.local, password_env: GC_VC_PASSWORD}\n"
		      "vcenter: {url: https://vc.test.example/, datacenter: DC1, credentials: vc,"
		      " ca_file: /etc/gpuclusterctl/vc-ca.pem}\n"
		      "rolling: {max_unavailable: %d%s}\nhosts:\n",
		      hosts, rolling_more);
	for (int i = 0; i < hosts; i++)
		gc_buf_printf(&b,
			      "  - name: esx%02d\n    address: esx%02d.test.example\n    credentials: root\n"
			      "    gpus:\n      - {pci: \"0000:10:00.0\", model: A100-80GB}\n"
			      "      - {pci: \"0000:20:00.0\", model: A100-80GB}\n",
			      i, i);
	gc_buf_puts(&b, "vms:\n");
	/* two VMs a host, so one host's last step readies two VMs' at once */
	for (int i = 0; i < 2 * hosts; i++)
		gc_buf_printf(&b,
			      "  - name: vm%02d\n    host: esx%02d\n    template: ubuntu-22.04-template\n"
			      "    cpus: 8\n    memory_gb: 64\n"
			      "    gpus: [{host_pci: \"0000:%d0:00.0\"}]\n",
			      i, i / 2, 1 + i % 2);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(b.ptr, 1, b.len, f), b.len);
	fclose(f);
	gc_buf_free(&b);
	memset(x, 0, sizeof(*x));
	if (gc_spec_load(&x->c, &diags, path, &err) != 0)
		fail_msg("spec: %s", err.msg);
	unlink(path);
	gc_diags_free(&diags);
	assert_int_equal(gc_graph_build(&x->g, x->c, &err), 0);
	snprintf(x->state, sizeof(x->state), "/tmp/gc-test-schedule-state-XXXXXX");
	assert_non_null(mkdtemp(x->state));
}

static void run(struct run *x, unsigned parallelism, bool fail_fast, const char *vm)
{
	struct gc_exec_opts o;
	struct gc_error err = GC_ERROR_INIT;
	int rc;

	memset(&o, 0, sizeof(o));
	o.state_dir = x->state;
	o.parallelism = parallelism;
	o.fail_fast = fail_fast;
	o.continue_on_error = !fail_fast;
	o.drv.reboot_poll_ms = 1;
	o.event = on_event;
	o.event_arg = &x->w;
	x->w.lane_order = parallelism == 1;
	fail_vm = vm;
	failed_once = false;
	gc_fake_apply_hook = fail_first;
	rc = gc_exec_run(&x->rep, x->g, &o, &err);
	assert_int_equal(rc, vm != NULL ? GC_EREMOTE : 0);
	if (vm != NULL) { /* the run's error names the vCenter and what it said */
		char want[128];

		snprintf(want, sizeof(want), "vcenter 'vcenter' failed: vCenter refused vm/%s", vm);
		assert_string_equal(err.msg, want);
	}
	assert_non_null(x->w.plan);
	if (x->w.nviolations > 0)
		fail_msg("%zu violations; the first: %s", x->w.nviolations, x->w.violation);
	assert_int_equal(x->rep.done + x->rep.failed + x->rep.skipped, x->rep.plan->nactions);
}

static void done(struct run *x)
{
	char cmd[128];

	free(x->w.st);
	free(x->w.order);
	gc_exec_report_free(&x->rep);
	gc_graph_free(x->g);
	gc_cluster_free(x->c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->state);
	assert_int_equal(system(cmd), 0);
}

/* the vCenter's actions in one wave, the hosts' beside them */
static size_t vcenter_actions(const struct gc_plan *p)
{
	size_t n = 0;

	for (size_t w = 0; w < p->nwaves; w++)
		for (size_t t = 0; t < p->waves[w].ntargets; t++)
			if (p->waves[w].targets[t].target->kind == GC_TARGET_VCENTER)
				n += p->waves[w].targets[t].nactions;
	return n;
}

static void test_one_worker_takes_the_lanes_first_ready_first(void **state)
{
	struct run x;

	(void)state;
	load(&x, 6);
	run(&x, 1, false, NULL);
	assert_int_equal(x.rep.plan->nwaves, 1);
	assert_true(vcenter_actions(x.rep.plan) >= 24); /* 12 VMs, each created and powered on */
	assert_int_equal(x.rep.done, x.rep.plan->nactions);
	assert_int_equal(x.w.nstarted, x.rep.plan->nactions);
	done(&x);
}

static void test_many_workers_keep_every_prerequisite(void **state)
{
	struct run x;

	(void)state;
	load(&x, 40);
	run(&x, 16, false, NULL);
	assert_int_equal(x.rep.done, x.rep.plan->nactions);
	assert_int_equal(x.w.nstarted, x.rep.plan->nactions);
	done(&x);
}

/* One VM's first action fails: what depends on it is skipped, nothing else
 * is (every other VM's actions and every host's are done). */
static void test_a_failed_vm_action_skips_only_its_dependents(void **state)
{
	struct run x;
	const struct gc_plan *p;

	(void)state;
	load(&x, 6);
	run(&x, 4, false, "vm03");
	p = x.rep.plan;
	assert_int_equal(x.rep.failed, 1);
	assert_true(x.rep.skipped >= 1);
	for (size_t i = 0; i < p->nactions; i++) {
		const struct gc_action *a = p->actions[i];
		bool doomed = false;

		for (size_t d = 0; d < a->ndeps; d++)
			if (x.w.st[a->deps[d]->seq - 1] == FAILED || x.w.st[a->deps[d]->seq - 1] == SKIPPED)
				doomed = true;
		if (x.w.st[i] == SKIPPED)
			assert_true(doomed);
		else if (x.w.st[i] != FAILED)
			assert_int_equal(x.w.st[i], DONE);
		if (x.w.st[i] != DONE && a->vm != NULL)
			assert_string_equal(a->vm, "vm03");
	}
	done(&x);
}

/* --fail-fast: after the failure nothing starts, and everything pending is
 * skipped for it, the vCenter's other VMs' actions included. */
static void test_fail_fast_skips_every_pending_lane_action(void **state)
{
	struct run x;
	size_t vc_skipped = 0;
	const struct gc_plan *p;

	(void)state;
	load(&x, 6);
	run(&x, 1, true, "vm00");
	p = x.rep.plan;
	assert_int_equal(x.rep.failed, 1);
	assert_int_equal(x.w.started_after_failure, 0);
	assert_int_equal(x.w.skipped_fail_fast, x.rep.skipped);
	for (size_t i = 0; i < p->nactions; i++)
		if (x.w.st[i] == SKIPPED && p->actions[i]->target->kind == GC_TARGET_VCENTER &&
		    p->actions[i]->vm != NULL && strcmp(p->actions[i]->vm, "vm00") != 0)
			vc_skipped++;
	assert_true(vc_skipped > 0);
	done(&x);
}

/* ------------------------------------------------------------ Ctrl-C mid-window */

/* The hook of the Ctrl-C test: the first change of each of two hosts waits
 * for the other's (both hosts are then in maintenance mode, neither has
 * rebooted), then "Ctrl-C" is pressed; each recovery exit waits up to 5 s
 * for the other's, so met (true before) stays true only when none of them
 * gave up: they were in flight at once. */
static volatile sig_atomic_t ctrl_c;
static pthread_mutex_t stop_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stop_cv = PTHREAD_COND_INITIALIZER;
static size_t changes_in, exits_in, reboots_in;
static bool exits_met;

static void meet(size_t *count, size_t want, bool *met)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	(*count)++;
	pthread_cond_broadcast(&stop_cv);
	while (*count < want)
		if (pthread_cond_timedwait(&stop_cv, &stop_mu, &until) != 0)
			break;
	if (met != NULL && *count < want)
		*met = false; /* this one gave up waiting: they were not all in flight at once */
}

/* (stop_mu held) The first change of each of two hosts: both meet, then
 * "Ctrl-C".  True when a is one of them. */
static bool ctrl_c_mid_change(const struct gc_action *a)
{
	if (a->target->kind != GC_TARGET_ESXI || a->kind != GC_ACT_APPLY ||
	    !(a->flags & GC_RES_NEEDS_REBOOT) || changes_in >= 2)
		return false;
	meet(&changes_in, 2, NULL);
	ctrl_c = 1;
	return true;
}

/* The options of a Ctrl-C test: its events watched, the flag it sets. */
static void ctrl_c_opts(struct gc_exec_opts *o, struct run *x, unsigned parallelism)
{
	memset(o, 0, sizeof(*o));
	o->state_dir = x->state;
	o->parallelism = parallelism;
	o->retry_base_ms = 1;
	o->drv.reboot_poll_ms = 1;
	o->event = on_event;
	o->event_arg = &x->w;
	o->interrupted = &ctrl_c;
}

/* With flaky_exits, the first recovery exit of each host loses its
 * connection (a transport fault), and the four exits meet. */
static bool flaky_exits;
static size_t exit_faults;

static int stop_mid_window(const struct gc_action *a, struct gc_error *err)
{
	int rc = 0;

	if (a->target->kind != GC_TARGET_ESXI)
		return 0;
	pthread_mutex_lock(&stop_mu);
	if (ctrl_c_mid_change(a)) {
		/* the change itself succeeds */
	} else if (a->kind == GC_ACT_EXIT_MAINTENANCE && a->synthesized && flaky_exits &&
		   exit_faults < 2) {
		exit_faults++;
		exits_in++;
		rc = gc_error_set(err, GC_ENET, "host '%s': connection reset by peer", a->target->name);
	} else if (a->kind == GC_ACT_EXIT_MAINTENANCE && a->synthesized) {
		meet(&exits_in, flaky_exits ? 4 : 2, &exits_met);
	} else if (a->kind == GC_ACT_REBOOT) {
		reboots_in++;
	}
	pthread_mutex_unlock(&stop_mu);
	return rc;
}

static void test_ctrl_c_mid_window_takes_the_hosts_out_at_once(void **state)
{
	struct run x;
	struct gc_exec_opts o;
	struct gc_error err = GC_ERROR_INIT;

	(void)state;
	load(&x, 2);
	ctrl_c_opts(&o, &x, 2);
	exits_met = true;
	gc_fake_apply_hook = stop_mid_window;
	assert_int_equal(gc_exec_run(&x.rep, x.g, &o, &err), GC_EINTR);
	assert_string_equal(err.msg, "interrupted");
	assert_true(x.rep.interrupted);
	assert_int_equal(changes_in, 2);
	assert_int_equal(reboots_in, 0); /* nothing started after the Ctrl-C */
	assert_int_equal(exits_in, 2);
	assert_true(exits_met); /* both hosts left maintenance mode at once */
	assert_int_equal(x.w.left_on_stop, 2);
	for (size_t i = 0; i < x.rep.ntargets; i++) {
		const struct gc_exec_target_report *t = &x.rep.targets[i];

		if (t->target->kind != GC_TARGET_ESXI)
			continue;
		assert_true(t->recovered);
		assert_true(t->recovered_on_stop);
		assert_false(t->left_in_maintenance);
		assert_true(t->reboot_owed); /* its change waits for the next apply's reboot */
		assert_int_equal(t->failed, 0);
	}
	assert_int_equal(x.rep.failed, 0);
	assert_int_equal(x.w.nviolations, 0);
	done(&x);
}

/* The exit after a first Ctrl-C is the step that signal asked for: a
 * transport fault in it is retried as in any step, where the steps the
 * signal stopped are not (a second signal still ends it at once). */
static void test_ctrl_c_recovery_exit_is_retried_on_a_transport_fault(void **state)
{
	struct run x;
	struct gc_exec_opts o;
	struct gc_error err = GC_ERROR_INIT;

	(void)state;
	ctrl_c = 0;
	changes_in = exits_in = reboots_in = exit_faults = 0;
	exits_met = flaky_exits = true;
	load(&x, 2);
	ctrl_c_opts(&o, &x, 2);
	gc_fake_apply_hook = stop_mid_window;
	assert_int_equal(gc_exec_run(&x.rep, x.g, &o, &err), GC_EINTR);
	gc_fake_apply_hook = NULL;
	flaky_exits = false;
	assert_true(exits_met); /* the two retries too were in flight at once */
	assert_true(x.rep.interrupted);
	assert_int_equal(exit_faults, 2);
	assert_int_equal(exits_in, 4); /* each host: the faulted exit, then its retry */
	assert_int_equal(reboots_in, 0);
	assert_int_equal(x.w.left_on_stop, 2);
	for (size_t i = 0; i < x.rep.ntargets; i++) {
		const struct gc_exec_target_report *t = &x.rep.targets[i];

		if (t->target->kind != GC_TARGET_ESXI)
			continue;
		assert_true(t->recovered_on_stop);
		assert_false(t->left_in_maintenance);
		assert_null(t->maintenance_why);
	}
	assert_int_equal(x.w.nviolations, 0);
	done(&x);
}

/* ------------------------------------------------------------ VMs back on */

/* The observe hook of the VM test: the vCenter holds every VM as the spec
 * says, running on its host (passthrough GPUs: no vMotion), so each host's
 * window powers its two VMs off first. */
struct vcenter_view {
	const struct gc_resource *const *res;
	size_t nres;
};

static void record_running(struct gc_observed *obs, void *arg)
{
	const struct vcenter_view *v = arg;

	for (size_t i = 0; i < v->nres; i++) {
		const struct gc_resource *r = v->res[i];

		for (size_t k = 0; k < r->nprops; k++)
			if (!gc_prop_is_learned(r->props[k].value))
				gc_observed_set(obs, r->id, r->props[k].key, r->props[k].value);
		if (r->kind == GC_RES_VM)
			gc_observed_set_vm(obs, r->vm, GC_POWER_ON, r->host, false);
	}
}

static void vms_running(struct gc_drv_ctx *ctx, const struct gc_target *t,
			const struct gc_resource *const *res, size_t nres)
{
	struct vcenter_view v = {res, nres};

	if (t->kind == GC_TARGET_VCENTER)
		gc_drv_record(ctx, record_running, &v);
}

/* The apply hook: as stop_mid_window (Ctrl-C once both hosts are in their
 * change), and each power-on after it waits up to 5 s for the other three:
 * ons_met says whether the four were in flight at once. */
static size_t ons_in, offs_done;
static bool ons_met;

static int stop_then_meet_ons(const struct gc_action *a, struct gc_error *err)
{
	(void)err;
	pthread_mutex_lock(&stop_mu);
	if (a->kind == GC_ACT_POWER_OFF)
		offs_done++;
	else if (a->kind == GC_ACT_POWER_ON && ctrl_c)
		meet(&ons_in, 4, &ons_met);
	else
		ctrl_c_mid_change(a);
	pthread_mutex_unlock(&stop_mu);
	return 0;
}

/* Ctrl-C in two hosts' windows, each host's two VMs powered off for it:
 * the four VMs are powered back on at once (--parallelism 4), not one
 * after another, and the report lists them in plan order. */
static void test_the_vms_of_a_stopped_wave_come_back_on_at_once(void **state)
{
	struct run x;
	struct gc_exec_opts o;
	struct gc_error err = GC_ERROR_INIT;
	const char *back = NULL;

	(void)state;
	ctrl_c = 0;
	changes_in = ons_in = offs_done = 0;
	ons_met = true;
	rolling_more = ", max_unavailable_vms: 8";
	load(&x, 2);
	rolling_more = "";
	ctrl_c_opts(&o, &x, 4);
	gc_fake_observe_hook = vms_running;
	gc_fake_apply_hook = stop_then_meet_ons;
	assert_int_equal(gc_exec_run(&x.rep, x.g, &o, &err), GC_EINTR);
	gc_fake_apply_hook = NULL;
	gc_fake_observe_hook = NULL;
	assert_int_equal(offs_done, 4);
	assert_int_equal(ons_in, 4);
	assert_true(ons_met); /* in flight at once */
	assert_int_equal(x.w.left_on_stop, 2);
	for (size_t i = 0; i < x.rep.ntargets; i++) {
		const struct gc_exec_target_report *t = &x.rep.targets[i];

		if (t->target->kind == GC_TARGET_VCENTER) {
			back = t->vms_back_on;
			assert_null(t->vms_left_off);
		}
	}
	assert_non_null(back);
	assert_string_equal(back, "vm00, vm01, vm02, vm03");
	assert_int_equal(x.w.nviolations, 0);
	done(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_worker_takes_the_lanes_first_ready_first),
		cmocka_unit_test(test_many_workers_keep_every_prerequisite),
		cmocka_unit_test(test_a_failed_vm_action_skips_only_its_dependents),
		cmocka_unit_test(test_fail_fast_skips_every_pending_lane_action),
		cmocka_unit_test(test_ctrl_c_mid_window_takes_the_hosts_out_at_once),
		cmocka_unit_test(test_ctrl_c_recovery_exit_is_retried_on_a_transport_fault),
		cmocka_unit_test(test_the_vms_of_a_stopped_wave_come_back_on_at_once),
	};
	setenv("GC_ESXI_PASSWORD", "x", 1);
	setenv("GC_VC_PASSWORD", "x", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
