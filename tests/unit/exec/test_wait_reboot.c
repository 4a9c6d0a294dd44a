/*
 * test_wait_reboot.c - gc_drv_wait_reboot, the proof of a Linux target's
 * reboot (guests, KVM hosts), against a scripted target: what each
 * reconnection answers, in order.  A refused login while the machine goes
 * down or boots (pam_nologin) is waited out; a refused host key is not; a
 * login refused for GC_DRV_NOLOGIN_GRACE_S in a row is the credentials.
 * Ctrl-C ends the wait, and the error says so (not a timeout).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "exec_int.h"
#include "gc/sys/driver.h"
#include "gc/util.h"

/* One answer of the scripted target per reconnection. */
enum answer { DOWN, AUTH, HOSTKEY, CUT, OLD_BOOT, NEW_BOOT };

struct script {
	const enum answer *v;
	size_t n, next;
	size_t connects, disconnects, resends;
	char notes[4096];
	size_t interrupt_at; /* the connect that "presses Ctrl-C" (1-based); 0 none */
};

static volatile sig_atomic_t ctrl_c;

static enum answer current(struct script *s)
{
	return s->v[s->next < s->n ? s->next : s->n - 1];
}

static int fake_connect(void *arg, unsigned connect_ms, struct gc_error *err)
{
	struct script *s = arg;
	enum answer a = current(s);

	(void)connect_ms;
	s->connects++;
	if (s->interrupt_at != 0 && s->connects == s->interrupt_at)
		ctrl_c = 1;
	switch (a) {
	case DOWN:
		s->next++;
		return gc_error_set(err, GC_ENET, "ssh gclab@192.0.2.7:22: connection refused");
	case AUTH:
		s->next++;
		return gc_error_set(err, GC_EAUTH, "ssh gclab@192.0.2.7:22: authentication failed "
				    "for user 'gclab'");
	case HOSTKEY:
		s->next++;
		return gc_error_set(err, GC_EHOSTKEY, "ssh 192.0.2.7:22: host key changed");
	default:
		return 0; /* the boot id answers next */
	}
}

static void fake_disconnect(void *arg)
{
	((struct script *)arg)->disconnects++;
}

static int fake_boot_id(void *arg, char *out, size_t n, struct gc_error *err)
{
	struct script *s = arg;

	if (current(s) == CUT) { /* logged in, then the session dropped */
		s->next++;
		return gc_error_set(err, GC_ENET, "ssh gclab@192.0.2.7:22: connection closed by "
				    "the remote side");
	}
	snprintf(out, n, "%s", current(s) == NEW_BOOT ? "boot-2" : "boot-1");
	s->next++;
	return 0;
}

static int fake_resend(void *arg, struct gc_error *err)
{
	(void)err;
	((struct script *)arg)->resends++;
	return 0;
}

static void on_event(void *arg, const struct gc_exec_event *ev)
{
	struct script *s = arg;
	size_t len = strlen(s->notes);

	if (ev->kind == GC_EV_NOTE && ev->message != NULL)
		snprintf(s->notes + len, sizeof(s->notes) - len, "%s\n", ev->message);
}

static int run(struct script *s, unsigned timeout_ms, struct gc_error *err)
{
	struct gc_exec_opts o = {0};
	struct gc_drv_ctx ctx = {0};
	struct gc_target t = {0};
	struct gc_drv_reboot r = {0};

	o.drv.reboot_poll_ms = 1; /* at least a second, whatever is asked */
	o.drv.reboot_timeout_ms = timeout_ms;
	o.event = on_event;
	o.event_arg = s;
	o.interrupted = &ctrl_c;
	ctrl_c = 0;
	ctx.opts = &o;
	pthread_mutex_init(&ctx.ev_mu, NULL);
	t.name = "worker-01";
	t.kind = GC_TARGET_GUEST;
	r.t = &t;
	r.noun = "guest";
	r.before = "boot-1";
	r.sent_ns = gc_now_ns();
	r.grace_s = 120;
	r.arg = s;
	r.connect = fake_connect;
	r.disconnect = fake_disconnect;
	r.boot_id = fake_boot_id;
	r.resend = fake_resend;
	return gc_drv_wait_reboot(&ctx, &r, err);
}

/* The guest refuses the login while it shuts down, is down, refuses it
 * again early in its boot, then answers with a new boot id. */
static void test_refused_logins_around_the_reboot_are_waited_out(void **state)
{
	static const enum answer v[] = {AUTH, DOWN, AUTH, NEW_BOOT};
	struct script s = {v, 4, 0, 0, 0, 0, "", 0};
	struct gc_error err = GC_ERROR_INIT;

	(void)state;
	assert_int_equal(run(&s, 60000, &err), 0);
	assert_int_equal(s.connects, 4);
	assert_int_equal(s.next, 4);
	assert_int_equal(s.resends, 0);
	assert_non_null(strstr(s.notes, "waiting for the guest to come back (1 s)\n"));
}

/* A session that logs in and is cut before the boot id is read (the old
 * boot's sshd going down, or a dropped connection) is one more poll, and
 * the wait says so (apply -v): the cut is not absorbed in silence. */
static void test_a_cut_read_of_the_boot_is_asked_again_and_said(void **state)
{
	static const enum answer v[] = {CUT, DOWN, NEW_BOOT};
	struct script s = {v, 3, 0, 0, 0, 0, "", 0};
	struct gc_error err = GC_ERROR_INIT;

	(void)state;
	assert_int_equal(run(&s, 60000, &err), 0);
	assert_int_equal(s.connects, 3);
	assert_int_equal(s.next, 3);
	assert_int_equal(s.disconnects, 2); /* before the wait, and the cut session */
	assert_string_equal(s.notes,
			    "waiting for the guest to come back (1 s)\n"
			    "the guest answered, but its boot could not be read (ssh "
			    "gclab@192.0.2.7:22: connection closed by the remote side): asking again\n"
			    "waiting for the guest to come back (2 s)\n"
			    "waiting for the guest to come back (3 s)\n");
}

static void test_a_changed_host_key_fails_at_once(void **state)
{
	static const enum answer v[] = {DOWN, HOSTKEY, NEW_BOOT};
	struct script s = {v, 3, 0, 0, 0, 0, "", 0};
	struct gc_error err = GC_ERROR_INIT;

	(void)state;
	assert_int_equal(run(&s, 60000, &err), GC_EHOSTKEY);
	assert_string_equal(err.msg, "ssh 192.0.2.7:22: host key changed");
	assert_int_equal(s.connects, 2);
}

/* A login refused until the wait's end: the error says what the last
 * attempt met, the refused login. */
static void test_logins_refused_to_the_end_fail_with_the_refusal(void **state)
{
	static const enum answer v[] = {AUTH};
	struct script s = {v, 1, 0, 0, 0, 0, "", 0};
	struct gc_error err = GC_ERROR_INIT;

	(void)state;
	assert_int_equal(run(&s, 2500, &err), GC_EREMOTE);
	assert_string_equal(err.msg, "guest 'worker-01' did not come back within 2 s after its "
				     "reboot (ssh gclab@192.0.2.7:22: authentication failed for "
				     "user 'gclab')");
	assert_in_range(s.connects, 2, 3);
}

/* The grace counts from the first of a run of refusals. */
static void test_the_nologin_grace_runs_from_the_first_refusal(void **state)
{
	uint64_t since = 0;

	(void)state;
	assert_true(gc_drv_auth_may_pass(&since));
	assert_true(since != 0);
	assert_true(gc_drv_auth_may_pass(&since));
	since = gc_now_ns() - (uint64_t)GC_DRV_NOLOGIN_GRACE_S * 1000000000u;
	assert_false(gc_drv_auth_may_pass(&since));
}

/* Ctrl-C while the guest is down: the wait ends after that poll, without
 * another, and the error is the interruption, with the last answer. */
static void test_ctrl_c_ends_the_wait_and_says_so(void **state)
{
	static const enum answer v[] = {DOWN, DOWN, DOWN, NEW_BOOT};
	struct script s = {v, 4, 0, 0, 0, 0, "", 2};
	struct gc_error err = GC_ERROR_INIT;
	const char *tail = " s into the wait for the guest to come back after its reboot "
			   "(ssh gclab@192.0.2.7:22: connection refused)";

	(void)state;
	assert_int_equal(run(&s, 60000, &err), GC_EINTR);
	assert_int_equal(s.connects, 2);
	assert_true(strncmp(err.msg, "interrupted ", strlen("interrupted ")) == 0);
	assert_true(strlen(err.msg) > strlen(tail));
	assert_string_equal(err.msg + strlen(err.msg) - strlen(tail), tail);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused_logins_around_the_reboot_are_waited_out),
		cmocka_unit_test(test_a_cut_read_of_the_boot_is_asked_again_and_said),
		cmocka_unit_test(test_a_changed_host_key_fails_at_once),
		cmocka_unit_test(test_logins_refused_to_the_end_fail_with_the_refusal),
		cmocka_unit_test(test_the_nologin_grace_runs_from_the_first_refusal),
		cmocka_unit_test(test_ctrl_c_ends_the_wait_and_says_so),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
