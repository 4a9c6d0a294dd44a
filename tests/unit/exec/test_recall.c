/*
 * test_recall.c - what gc_exec_recall_journal makes of a journal that
 * earlier runs wrote: which targets have a reboot that went out and that no
 * wait, verify or resume saw through (the next apply observes those with
 * the reboot wait's patience, src/exec/exec.c), and when it went out; and
 * which guests' VMs an earlier run started without reaching the guest.
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

#include "exec_int.h"
#include "gc/journal.h"
#include "gc/util.h"

static char dir[] = "/tmp/gc-recall-XXXXXX";

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gc-recall-XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/lab.journal", dir);
	unlink(path);
	return rmdir(dir);
}

/* One record as the executor writes it (gc_exec_journal). */
struct rec {
	const char *target, *kind;
	enum gc_jstate st;
};

/* Append recs to the journal (in order). */
static void write_journal(const struct rec *recs, size_t n)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_journal *j = NULL;

	assert_int_equal(gc_journal_open(&j, dir, "lab", &err), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(gc_journal_append(j, recs[i].target, "a", recs[i].kind, recs[i].st,
						   NULL, &err),
				 0);
	gc_journal_close(j);
}

/* What a run with one slot per target recalls of the journal (of a run
 * of graph g, may be NULL): whether it expects changes. */
static bool recall_graph(struct gc_target *ts, struct tslot *slots, size_t nt,
			 const struct gc_graph *g)
{
	struct gc_exec_opts o = {0};
	struct run r;

	memset(&r, 0, sizeof(r));
	r.ctx.graph = g;
	o.state_dir = dir;
	r.ctx.opts = &o;
	pthread_mutex_init(&r.ctx.ev_mu, NULL);
	r.slots = slots;
	r.nslots = nt;
	memset(slots, 0, nt * sizeof(*slots));
	for (size_t i = 0; i < nt; i++)
		slots[i].target = &ts[i];
	gc_exec_recall_journal(&r, "lab");
	pthread_mutex_destroy(&r.ctx.ev_mu);
	return r.expect_changes;
}

/* What a run with one slot per target recalls of the journal. */
static void recall_run(struct gc_target *ts, struct tslot *slots, size_t nt)
{
	struct gc_exec_opts o = {0};
	struct run r;

	memset(&r, 0, sizeof(r));
	memset(slots, 0, nt * sizeof(*slots));
	o.state_dir = dir;
	r.ctx.opts = &o;
	pthread_mutex_init(&r.ctx.ev_mu, NULL);
	r.slots = slots;
	r.nslots = nt;
	for (size_t i = 0; i < nt; i++)
		slots[i].target = &ts[i];
	gc_exec_recall_journal(&r, "lab");
	pthread_mutex_destroy(&r.ctx.ev_mu);
}

/* A journal of just recs, recalled. */
static void recall(const struct rec *recs, size_t n, struct gc_target *ts, struct tslot *slots,
		   size_t nt)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/lab.journal", dir);
	unlink(path);
	write_journal(recs, n);
	recall_run(ts, slots, nt);
}

static double wall(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Killed after the guest's reboot went out (its record written, maybe its
 * done too), before the wait: unseen, since that record's time.  The ESXi
 * host and the KVM host, killed the same way, likewise; the switch never
 * reboots. */
static void test_a_reboot_without_its_wait_is_unseen(void **state)
{
	static const struct rec recs[] = {
		{"worker-01", "apply", GC_J_START},   {"worker-01", "apply", GC_J_DONE},
		{"worker-01", "reboot", GC_J_START},  {"worker-01", "reboot", GC_J_DONE},
		{"worker-01", "wait_host", GC_J_START}, {"esx01", "reboot", GC_J_START},
		{"kvm01", "reboot", GC_J_START},      {"sn2700", "apply", GC_J_START},
	};
	struct gc_target ts[] = {{GC_TARGET_GUEST, "worker-01", 0, NULL, NULL, NULL},
				 {GC_TARGET_ESXI, "esx01", 1, NULL, NULL, NULL},
				 {GC_TARGET_KVM, "kvm01", 2, NULL, NULL, NULL},
				 {GC_TARGET_SWITCH, "sn2700", 3, NULL, NULL, NULL}};
	struct tslot s[4];
	double t0 = wall();

	(void)state;
	recall(recs, GC_ARRAY_LEN(recs), ts, s, 4);
	for (size_t i = 0; i < 3; i++) {
		assert_true(s[i].reboot_unseen_ts > t0 - 1);
		assert_true(s[i].reboot_unseen_ts <= wall());
	}
	assert_true(s[3].reboot_unseen_ts == 0);
}

/* Seen through: a wait or a verify that passed, the resume's evidence
 * (reboot_owed done), the patient observation (reboot_seen done); or never
 * sent (skipped: a command of its batch before it failed).  A wait that
 * failed or was cut short sees nothing. */
static void test_what_sees_a_reboot_through(void **state)
{
	static const struct rec recs[] = {
		{"g1", "reboot", GC_J_START}, {"g1", "wait_host", GC_J_DONE},
		{"g2", "reboot", GC_J_START}, {"g2", "verify", GC_J_DONE},
		{"g3", "reboot", GC_J_START}, {"g3", "reboot_owed", GC_J_DONE},
		{"g4", "reboot", GC_J_START}, {"g4", "reboot_seen", GC_J_DONE},
		{"g5", "reboot", GC_J_START}, {"g5", "reboot", GC_J_SKIPPED},
		{"g6", "reboot", GC_J_START}, {"g6", "wait_host", GC_J_FAILED},
		{"g7", "reboot", GC_J_START}, {"g7", "wait_host", GC_J_START},
	};
	struct gc_target ts[7];
	struct tslot s[7];
	static const char *const names[] = {"g1", "g2", "g3", "g4", "g5", "g6", "g7"};

	(void)state;
	for (size_t i = 0; i < 7; i++)
		ts[i] = (struct gc_target){GC_TARGET_GUEST, names[i], i, NULL, NULL, NULL};
	recall(recs, GC_ARRAY_LEN(recs), ts, s, 7);
	for (size_t i = 0; i < 5; i++)
		assert_true(s[i].reboot_unseen_ts == 0);
	assert_true(s[5].reboot_unseen_ts > 0);
	assert_true(s[6].reboot_unseen_ts > 0);
}

/* A later run's reboot counts from its own record: seen through once, then
 * sent again and killed: unseen again, from the second record. */
static void test_the_newest_reboot_decides(void **state)
{
	static const struct rec first[] = {
		{"g1", "reboot", GC_J_START},
		{"g1", "wait_host", GC_J_DONE},
	};
	struct gc_target ts[] = {{GC_TARGET_GUEST, "g1", 0, NULL, NULL, NULL}};
	struct tslot s[1];
	static const struct rec again[] = {{"g1", "reboot", GC_J_START}};
	double t1;

	(void)state;
	recall(first, GC_ARRAY_LEN(first), ts, s, 1);
	assert_true(s[0].reboot_unseen_ts == 0);
	usleep(20000);
	t1 = wall();
	write_journal(again, 1);
	recall_run(ts, s, 1);
	assert_true(s[0].reboot_unseen_ts >= t1);
}

/* Killed while a guest's VM booted: the start's record (on the KVM host or
 * the vCenter, "+ vm/VM/power" or "power on VM") with no step of the guest
 * done after it.  A guest step done, or the patient observation's
 * reboot_seen, reaches it; a step only started does not.  A newer reboot
 * of the guest decides over an older start. */
static void test_a_start_without_a_guest_step_is_unseen(void **state)
{
	static const struct {
		const char *target, *kind;
		enum gc_jstate st;
		const char *action;
	} recs[] = {
		{"kvm01", "apply", GC_J_START, "+ vm/g1/power"},
		{"vcenter", "power_on", GC_J_START, "power on g2"},
		{"g2", "apply", GC_J_DONE, "~ guest/g2/driver"},
		{"vcenter", "power_on", GC_J_START, "power on g3"},
		{"g3", "apply", GC_J_START, "~ guest/g3/driver"},
		{"kvm01", "apply", GC_J_START, "+ vm/g4x/power"},
		{"kvm01", "apply", GC_J_START, "~ vm/g5/power"},
		{"g5", "reboot_seen", GC_J_DONE, "resume: boot seen"},
		{"vcenter", "power_on", GC_J_START, "power on g6"},
		{"vcenter", "power_on", GC_J_START, "power on g7"},
		{"g7", "reboot", GC_J_START, "reboot g7"},
	};
	static const char *const names[] = {"g1", "g2", "g3", "g4", "g5", "g6", "g7"};
	struct gc_target ts[7];
	struct tslot s[7];

	struct gc_error err = GC_ERROR_INIT;
	struct gc_journal *j = NULL;

	(void)state;
	for (size_t i = 0; i < 7; i++)
		ts[i] = (struct gc_target){i == 5 ? GC_TARGET_ESXI : GC_TARGET_GUEST, names[i], i,
					   NULL, NULL, NULL};
	assert_int_equal(gc_journal_open(&j, dir, "lab", &err), 0);
	for (size_t i = 0; i < GC_ARRAY_LEN(recs); i++)
		assert_int_equal(gc_journal_append(j, recs[i].target, recs[i].action, recs[i].kind,
						   recs[i].st, NULL, &err),
				 0);
	gc_journal_close(j);
	recall_run(ts, s, 7);
	assert_true(s[0].reboot_unseen_ts > 0 && s[0].unseen_is_start);
	assert_true(s[1].reboot_unseen_ts == 0 && !s[1].unseen_is_start);
	assert_true(s[2].reboot_unseen_ts > 0 && s[2].unseen_is_start);
	assert_true(s[3].reboot_unseen_ts == 0); /* another VM's power */
	assert_true(s[4].reboot_unseen_ts == 0);
	assert_true(s[5].reboot_unseen_ts == 0 && !s[5].unseen_is_start); /* not a guest */
	assert_true(s[6].reboot_unseen_ts > 0 && !s[6].unseen_is_start);
}

/* An apply expects changes, and takes the cluster lease in its
 * observation (lease.c), unless the journal's last `run` record says the
 * run before converged on the very same desired state: no journal, a run
 * that left changes, or another spec (its hash) all expect changes; a
 * converged run's record is what the next one finds. */
static void test_a_converged_run_of_the_same_spec_expects_no_change(void **state)
{
	struct gc_prop p1[] = {{"enabled", "true"}}, p2[] = {{"enabled", "false"}};
	struct gc_resource res = {0};
	struct gc_resource *resv[] = {&res};
	struct gc_graph g = {0};
	struct gc_target ts[] = {{GC_TARGET_ESXI, "esx01", 0, NULL, NULL, NULL}};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_journal *j = NULL;
	struct tslot s[1];
	char hash[32], detail[48], path[128];

	(void)state;
	res.id = "esx01/ntp";
	res.props = p1;
	res.nprops = 1;
	g.resources = resv;
	g.nresources = 1;
	snprintf(path, sizeof(path), "%s/lab.journal", dir);
	unlink(path);
	assert_true(recall_graph(ts, s, 1, &g)); /* no journal: a first apply */
	gc_exec_desired_hash(&g, hash);
	assert_int_equal(strlen(hash), 24);
	assert_memory_equal(hash, "fnv1a64:", 8);
	snprintf(detail, sizeof(detail), "converged %s", hash);
	assert_int_equal(gc_journal_open(&j, dir, "lab", &err), 0);
	assert_int_equal(gc_journal_append(j, "esx01", "a", "apply", GC_J_DONE, NULL, &err), 0);
	assert_int_equal(gc_journal_append(j, "", "run", "run", GC_J_FAILED, "changes left", &err), 0);
	gc_journal_close(j);
	assert_true(recall_graph(ts, s, 1, &g));
	assert_int_equal(gc_journal_open(&j, dir, "lab", &err), 0);
	assert_int_equal(gc_journal_append(j, "", "run", "run", GC_J_DONE, detail, &err), 0);
	gc_journal_close(j);
	assert_false(recall_graph(ts, s, 1, &g));
	assert_true(recall_graph(ts, s, 1, NULL));
	res.props = p2; /* the spec changed since */
	assert_true(recall_graph(ts, s, 1, &g));
	res.props = p1;
	assert_int_equal(gc_journal_open(&j, dir, "lab", &err), 0);
	assert_int_equal(gc_journal_append(j, "esx01", "lease", "lease", GC_J_START, NULL, &err), 0);
	gc_journal_close(j);
	assert_false(recall_graph(ts, s, 1, &g)); /* the last run record decides */
	assert_true(s[0].lease_left);
	assert_true(s[0].lease_left_before);
	(void)err;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_reboot_without_its_wait_is_unseen, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_what_sees_a_reboot_through, setup, teardown),
		cmocka_unit_test_setup_teardown(test_the_newest_reboot_decides, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_converged_run_of_the_same_spec_expects_no_change,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_start_without_a_guest_step_is_unseen, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
