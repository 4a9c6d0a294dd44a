/*
 * test_onyx_session.c - the Onyx CLI session against a scripted fake
 * channel (prompts, banner, enable password, `%` errors, timeouts, caps),
 * and end to end against the real simulator tests/sim/onyx_sim.py on a
 * pseudo-terminal: observe, diff, apply, read the running-config back,
 * diff again (empty), hand-change one port, converge again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "gc/onyx.h"

#define P "sn2700 [standalone: master]"

/* ---------------------------------------------------------------- fake channel */

struct step {
	const char *expect; /* line the session must write (with "\n"), NULL = none */
	const char *reply;  /* bytes the switch sends back */
};

struct fake {
	const struct step *steps;
	size_t n, next;
	const char *pending; /* reply bytes not yet read */
	size_t chunk;        /* deliver replies in pieces of this size */
	bool eof_at_end;
};

static ssize_t fake_read(void *ctx, char *buf, size_t n, int timeout_ms, struct gc_error *err)
{
	struct fake *f = ctx;
	size_t k;

	if (f->pending == NULL || *f->pending == '\0') {
		if (f->next >= f->n && f->eof_at_end)
			return gc_error_set(err, GC_ENET, "connection closed");
		return 0; /* nothing more: a timeout */
	}
	k = strlen(f->pending);
	if (k > n)
		k = n;
	if (f->chunk && k > f->chunk)
		k = f->chunk;
	memcpy(buf, f->pending, k);
	f->pending += k;
	return (ssize_t)k;
}

static int fake_write(void *ctx, const char *buf, size_t n, struct gc_error *err)
{
	struct fake *f = ctx;
	const struct step *s;

	if (f->next >= f->n)
		fail_msg("unexpected write '%.*s'", (int)n, buf);
	s = &f->steps[f->next++];
	if (s->expect == NULL || strlen(s->expect) != n || memcmp(s->expect, buf, n) != 0)
		fail_msg("wrote '%.*s', expected '%s'", (int)n, buf, s->expect ? s->expect : "");
	f->pending = s->reply;
	return 0;
}

static struct gc_buf transcript;

static void log_line(void *ctx, const char *line)
{
	gc_buf_printf(&transcript, "%s|", line);
}

static const char banner[] = "\r\n\x1b[0mMellanox Switch\r\n\r\n" P " > ";

/* The login steps, as a macro: a static array's initializer may not read
 * another array's elements (gcc allows it, clang does not). */
#define LOGIN_STEPS                                                                         \
	{"enable\n", "enable\r\npassword: "},                                                    \
	{"s3cret\n", "\r\n" P " # "},                                                            \
	{"no cli session paging enable\n", "no cli session paging enable\r\n" P " # "}

static void test_fake_session(void **state)
{
	static const struct step steps[] = {
		LOGIN_STEPS,
		{"show version\n", "show version\r\nProduct name:      Onyx\r\n"
				   "Product release:   3.9.0300\r\n## not a prompt # \r\n"
				   "other-host [standalone: master] # \r\n\r\n" P " # "},
		{"configure terminal\n", "configure terminal\r\n" P " (config) # "},
		{"lldp\n", "lldp\r\n" P " (config) # "},
		{"xyz\n", "xyz\r\n% Unrecognized command \"xyz\".\r\nType \"?\" for help.\r\n" P
			  " (config) # "},
		{"exit\n", "exit\r\n" P " # "},
		{"exit\n", ""},
	};
	struct fake f = {steps, GC_ARRAY_LEN(steps), 0, banner, 7, true};
	struct gc_onyx_chan ch = {&f, fake_read, fake_write};
	struct gc_onyx_session_opts o = {"sn2700", "GC_TEST_ONYX_ENABLE", 2000, 0, log_line, NULL};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_session *s = NULL;
	char *cmdv[] = {"lldp", "xyz", "never"};
	struct gc_onyx_cmds cmds = {cmdv, 3};
	char *out = NULL;

	setenv("GC_TEST_ONYX_ENABLE", "s3cret", 1);
	gc_buf_reset(&transcript);
	assert_int_equal(gc_onyx_session_open(&s, &ch, &o, &err), 0);
	assert_int_equal(gc_onyx_session_mode(s), GC_ONYX_MODE_ENABLE);
	assert_string_equal(gc_onyx_session_hostname(s), "sn2700");
	assert_int_equal(gc_onyx_session_exec(s, &out, "show version", &err), 0);
	assert_string_equal(out, "Product name:      Onyx\nProduct release:   3.9.0300\n"
				 "## not a prompt # \nother-host [standalone: master] # ");
	free(out);
	assert_int_equal(gc_onyx_session_apply(s, &cmds, &err), GC_EREMOTE);
	assert_string_equal(err.msg, "switch 'sn2700': command 'xyz' failed: % Unrecognized "
				     "command \"xyz\". Type \"?\" for help.; 1 earlier command of this step took effect and is not saved");
	assert_int_equal(gc_onyx_session_mode(s), GC_ONYX_MODE_ENABLE);
	gc_onyx_session_close(s);
	assert_int_equal(f.next, f.n);
	/* the secret is never in the transcript */
	assert_string_equal(gc_buf_str(&transcript),
			    "enable|********|no cli session paging enable|show version|"
			    "configure terminal|lldp|xyz|exit|exit|");
	gc_buf_free(&transcript);
}

static void test_fake_apply_writes(void **state)
{
	static const struct step steps[] = {
		{"no cli session paging enable\n", P " # "},
		{"configure terminal\n", P " (config) # "},
		{"traffic pool roce\n", P " (config pool roce) # "},
		{"type lossless\n", P " (config pool roce) # "},
		{"exit\n", P " (config) # "},
		{"configuration write\n", P " (config) # "},
		{"exit\n", P " # "},
		{"exit\n", ""},
	};
	/* already in enable mode at login (no password asked) */
	struct fake f = {steps, GC_ARRAY_LEN(steps), 0, "Mellanox Switch\n" P " # ", 0, true};
	struct gc_onyx_chan ch = {&f, fake_read, fake_write};
	struct gc_onyx_session_opts o = {"sn2700", NULL, 500, 0, NULL, NULL};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_session *s = NULL;
	char *cmdv[] = {"traffic pool roce", "type lossless"};
	struct gc_onyx_cmds cmds = {cmdv, 2}, none = {NULL, 0};

	assert_int_equal(gc_onyx_session_open(&s, &ch, &o, &err), 0);
	assert_int_equal(gc_onyx_session_apply(s, &none, &err), 0); /* writes nothing */
	assert_int_equal(f.next, 1);
	assert_int_equal(gc_onyx_session_apply(s, &cmds, &err), 0);
	assert_int_equal(gc_onyx_session_mode(s), GC_ONYX_MODE_ENABLE);
	gc_onyx_session_close(s);
	assert_int_equal(f.next, f.n);
}

static void test_fake_prompts(void **state)
{
	static const struct step steps[] = {
		{"no cli session paging enable\n", "sw-1 [dom1: standby] (config interface ethernet "
						   "1/1) # "},
		{"exit\n", "sw-1 [dom1: standby] (config) # "},
		{"exit\n", "sw-1 [dom1: standby] # "},
		{"exit\n", ""},
	};
	struct fake f = {steps, GC_ARRAY_LEN(steps), 0, "sw-1 [dom1: standby] # ", 3, true};
	struct gc_onyx_chan ch = {&f, fake_read, fake_write};
	struct gc_onyx_session_opts o = {"sw-1", NULL, 500, 0, NULL, NULL};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_session *s = NULL;

	assert_int_equal(gc_onyx_session_open(&s, &ch, &o, &err), 0);
	assert_int_equal(gc_onyx_session_mode(s), GC_ONYX_MODE_SUB);
	assert_string_equal(gc_onyx_session_hostname(s), "sw-1");
	gc_onyx_session_close(s); /* leaves the sub-mode, then config, then logs out */
	assert_int_equal(f.next, f.n);
}

static void test_fake_no_secret(void **state)
{
	static const struct step steps[] = {{"enable\n", "password: "}};
	struct fake f = {steps, 1, 0, P " > ", 0, true};
	struct gc_onyx_chan ch = {&f, fake_read, fake_write};
	struct gc_onyx_session_opts o = {"sn2700", "GC_TEST_ONYX_UNSET", 500, 0, NULL, NULL};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_session *s = NULL;

	unsetenv("GC_TEST_ONYX_UNSET");
	assert_int_equal(gc_onyx_session_open(&s, &ch, &o, &err), GC_EAUTH);
	assert_string_equal(err.msg, "switch 'sn2700': enable asks for a password but environment "
				     "variable 'GC_TEST_ONYX_UNSET' is not set");
	assert_null(s);
}

static void test_fake_bad_secret(void **state)
{
	static const struct step steps[] = {
		{"enable\n", "password: "},
		{"s3cret\n", "% Authentication failed\r\n" P " > "},
	};
	struct fake f = {steps, 2, 0, P " > ", 0, true};
	struct gc_onyx_chan ch = {&f, fake_read, fake_write};
	struct gc_onyx_session_opts o = {"sn2700", "GC_TEST_ONYX_ENABLE", 500, 0, NULL, NULL};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_session *s = NULL;

	setenv("GC_TEST_ONYX_ENABLE", "s3cret", 1);
	assert_int_equal(gc_onyx_session_open(&s, &ch, &o, &err), GC_EAUTH);
	assert_string_equal(err.msg, "switch 'sn2700': enable failed: % Authentication failed");
	assert_null(strstr(err.msg, "s3cret"));
}

/* A line that looked like the password prompt took the secret as a command,
 * and the switch quotes it back: no message carries it (found by
 * fuzz_onyx_session); nor does the output of a later command. */
static void test_fake_secret_echoed(void **state)
{
	static const struct step steps[] = {
		{"enable\n", "enable\r\nLast password: "},
		{"s3cret\n", "s3cret\r\n% Unrecognized command \"s3cret\".\r\n" P " > "},
	};
	static const struct step steps2[] = {
		LOGIN_STEPS,
		{"show clock\n", "show clock\r\nTime: 12:00 (s3cret, s3cret)\r\n" P " # "},
		{"exit\n", ""},
	};
	struct fake f = {steps, 2, 0, P " > ", 0, true};
	struct fake f2 = {steps2, GC_ARRAY_LEN(steps2), 0, P " > ", 0, true};
	struct gc_onyx_chan ch = {&f, fake_read, fake_write}, ch2 = {&f2, fake_read, fake_write};
	struct gc_onyx_session_opts o = {"sn2700", "GC_TEST_ONYX_ENABLE", 500, 0, NULL, NULL};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_session *s = NULL;
	char *out = NULL;

	setenv("GC_TEST_ONYX_ENABLE", "s3cret", 1);
	assert_int_equal(gc_onyx_session_open(&s, &ch, &o, &err), GC_EAUTH);
	assert_string_equal(err.msg, "switch 'sn2700': enable failed: % Unrecognized command "
				     "\"******\".");
	assert_int_equal(gc_onyx_session_open(&s, &ch2, &o, &err), 0);
	assert_int_equal(gc_onyx_session_exec(s, &out, "show clock", &err), 0);
	assert_string_equal(out, "Time: 12:00 (******, ******)");
	free(out);
	gc_onyx_session_close(s);
}

static void test_fake_timeout_and_cap(void **state)
{
	static const struct step steps[] = {
		{"no cli session paging enable\n", P " # "},
		{"show running-config\n", "##\r\n## Running database\r\n"},
		{"show clock\n", ""},
		{"show version\n", "0123456789012345678901234567890123456789"},
		{"exit\n", ""},
	};
	struct fake f = {steps, GC_ARRAY_LEN(steps), 0, P " # ", 0, true};
	struct gc_onyx_chan ch = {&f, fake_read, fake_write};
	struct gc_onyx_session_opts o = {"sn2700", NULL, 100, 32, NULL, NULL};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_session *s = NULL;

	assert_int_equal(gc_onyx_session_open(&s, &ch, &o, &err), 0);
	gc_onyx_session_set_timeout(s, 0); /* ignored: stays 100 ms */
	assert_int_equal(gc_onyx_session_exec(s, NULL, "show running-config", &err), GC_ETIMEOUT);
	assert_string_equal(err.msg, "switch 'sn2700': no prompt after 'show running-config' "
				     "within 100 ms");
	gc_error_clear(&err);
	gc_onyx_session_set_timeout(s, 40); /* the commands after wait this */
	assert_int_equal(gc_onyx_session_exec(s, NULL, "show clock", &err), GC_ETIMEOUT);
	assert_string_equal(err.msg, "switch 'sn2700': no prompt after 'show clock' within 40 ms");
	gc_error_clear(&err);
	assert_int_equal(gc_onyx_session_exec(s, NULL, "show version", &err), GC_ENOMEM);
	assert_string_equal(err.msg, "switch 'sn2700': output of 'show version' exceeds 32 bytes");
	gc_error_clear(&err);
	assert_int_equal(gc_onyx_session_exec(s, NULL, "show version\nreload", &err), GC_EINVAL);
	gc_onyx_session_close(s);
}

/* ---------------------------------------------------------------- the real simulator */

struct pty_chan {
	int fd;
	pid_t pid;
};

static ssize_t pty_read(void *ctx, char *buf, size_t n, int timeout_ms, struct gc_error *err)
{
	struct pty_chan *c = ctx;
	struct pollfd p = {c->fd, POLLIN, 0};
	ssize_t r;
	int k = poll(&p, 1, timeout_ms);

	if (k == 0)
		return 0;
	if (k < 0)
		return gc_error_set_errno(err, GC_ENET, errno, "poll failed");
	r = read(c->fd, buf, n);
	if (r <= 0) /* EIO once the child closed its side */
		return gc_error_set(err, GC_ENET, "connection closed");
	return r;
}

static int pty_write(void *ctx, const char *buf, size_t n, struct gc_error *err)
{
	struct pty_chan *c = ctx;

	while (n > 0) {
		ssize_t w = write(c->fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return gc_error_set_errno(err, GC_ENET, errno, "write failed");
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

static void spawn_sim(struct pty_chan *c, const char *dir)
{
	struct winsize ws = {50, 200, 0, 0};
	char *sim = gc_xasprintf("%s/tests/sim/onyx_sim.py", GC_SOURCE_DIR);

	c->pid = forkpty(&c->fd, NULL, NULL, &ws);
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		execlp("python3", "python3", sim, "--state", dir, "--hostname", "sn2700",
		       (char *)NULL);
		_exit(127);
	}
	free(sim);
}

static void reap(struct pty_chan *c)
{
	int status = 0;

	close(c->fd);
	if (waitpid(c->pid, &status, WNOHANG) == 0) {
		kill(c->pid, SIGTERM);
		waitpid(c->pid, &status, 0);
	}
}

static int observe_diff(struct gc_onyx_session *s, const struct gc_onyx_desired *d,
			struct gc_onyx_cmds *cmds, struct gc_error *err)
{
	struct gc_onyx_version v;
	struct gc_onyx_state st;
	int rc;

	gc_onyx_state_init(&st);
	rc = gc_onyx_session_observe(s, &v, &st, d->oneshot, err);
	if (rc == 0)
		rc = gc_onyx_check_version(d, &v, "sn2700", err);
	if (rc == 0)
		rc = gc_onyx_diff(cmds, d, &st, true, err);
	gc_onyx_state_free(&st);
	return rc;
}

static void test_sim_end_to_end(void **state)
{
	char dir[] = "/tmp/gc-onyx-e2e-XXXXXX";
	struct gc_switch_roce r = {.mode = "dscp-lossless", .pool_percent = 50.0, .priority = 3,
				   .ecn_min_kb = 150, .ecn_max_kb = 1500, .cnp_traffic_class = 6,
				   .pfc = true, .lldp = true, .owned = true};
	struct gc_switch sw = {.name = "sn2700", .model = "SN2700", .ports = "1/1-1/32", .roce = &r};
	struct gc_onyx_session_opts o = {"sn2700", "GC_TEST_ONYX_ENABLE", 10000, 0, NULL, NULL};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_session *s = NULL;
	struct gc_onyx_desired d;
	struct gc_onyx_cmds cmds = {NULL, 0};
	struct pty_chan pc;
	struct gc_onyx_chan ch = {&pc, pty_read, pty_write};
	char *facts, *text = NULL, *path;
	char *hand[] = {"interface ethernet 1/7 qos trust L2"};
	struct gc_onyx_cmds hand_cmds = {hand, 1};
	struct stat sb;
	FILE *fp;

	assert_non_null(mkdtemp(dir));
	facts = gc_xasprintf("%s/switch.json", dir);
	fp = fopen(facts, "w");
	assert_non_null(fp);
	fputs("{\"enable_password\": \"s3cret\"}\n", fp);
	fclose(fp);
	setenv("GC_TEST_ONYX_ENABLE", "s3cret", 1);
	spawn_sim(&pc, dir);

	if (gc_onyx_session_open(&s, &ch, &o, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	if (observe_diff(s, &d, &cmds, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(cmds.n, 10);
	if (gc_onyx_session_apply(s, &cmds, &err) != 0)
		fail_msg("%s", err.msg);
	gc_onyx_cmds_free(&cmds);

	/* the switch's own rendering, as the next observe will see it */
	assert_int_equal(gc_onyx_session_exec(s, &text, "show running-config", &err), 0);
	assert_non_null(strstr(text, "##\n## Interface Ethernet buffer configuration\n##\n"
				     "   traffic pool roce type lossless\n"
				     "   traffic pool roce memory percent 50.00\n"
				     "   traffic pool roce map switch-priority 3\n"));
	assert_non_null(strstr(text, "   interface ethernet 1/1-1/32 qos trust L3\n"
				     "   interface ethernet 1/1-1/32 traffic-class 3 congestion-control "
				     "ecn minimum-absolute 150 maximum-absolute 1500\n"
				     "   interface ethernet 1/1-1/32 traffic-class 6 dcb ets strict\n"));
	assert_non_null(strstr(text, "   dcb priority-flow-control enable force\n"
				     "   dcb priority-flow-control priority 3 enable\n"
				     "   interface ethernet 1/1-1/32 dcb priority-flow-control mode on "
				     "force\n"));
	assert_non_null(strstr(text, "##\n## LLDP configuration\n##\n   lldp\n"));
	free(text);
	path = gc_xasprintf("%s/startup.json", dir);
	assert_int_equal(stat(path, &sb), 0); /* configuration write happened */
	free(path);

	/* converged: a second diff is empty */
	assert_int_equal(observe_diff(s, &d, &cmds, &err), 0);
	assert_int_equal(cmds.n, 0);

	/* someone changes one port by hand: exactly that is fixed */
	assert_int_equal(gc_onyx_session_apply(s, &hand_cmds, &err), 0);
	assert_int_equal(observe_diff(s, &d, &cmds, &err), 0);
	assert_int_equal(cmds.n, 1);
	assert_string_equal(cmds.v[0], "interface ethernet 1/7 qos trust L3");
	assert_int_equal(gc_onyx_session_apply(s, &cmds, &err), 0);
	gc_onyx_cmds_free(&cmds);
	assert_int_equal(observe_diff(s, &d, &cmds, &err), 0);
	assert_int_equal(cmds.n, 0);

	/* a rejected command is the switch's own words */
	assert_int_equal(gc_onyx_session_exec(s, NULL, "xyz", &err), GC_EREMOTE);
	assert_string_equal(err.msg, "switch 'sn2700': command 'xyz' failed: % Unrecognized "
				     "command \"xyz\". Type \"?\" for help.");

	gc_onyx_session_close(s);
	gc_onyx_desired_free(&d);
	reap(&pc);
	path = gc_xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
	free(path);
	free(facts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fake_session),
		cmocka_unit_test(test_fake_apply_writes),
		cmocka_unit_test(test_fake_prompts),
		cmocka_unit_test(test_fake_no_secret),
		cmocka_unit_test(test_fake_bad_secret),
		cmocka_unit_test(test_fake_secret_echoed),
		cmocka_unit_test(test_fake_timeout_and_cap),
		cmocka_unit_test(test_sim_end_to_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
