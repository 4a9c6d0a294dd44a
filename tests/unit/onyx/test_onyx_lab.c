/*
 * test_onyx_lab.c - the Onyx session through the real transport: the lab's
 * OpenSSH sshd on loopback (scripts/lab.sh), gc_ssh's PTY shell, and
 * tests/sim/onyx_sim.py behind tests/sim/dispatch for 127.0.0.100.
 *
 * The group fixture starts a private lab (its own dir under the build tree,
 * its own port) and stops it at the end.  If sshd cannot start the suite
 * fails loudly, like tests/unit/net: it is never skipped.
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

#include "gc/onyx.h"
#include "gc/ssh.h"

static char lab[512];
static char hostdir[600];
static unsigned port;

static int sh(const char *fmt, ...) GC_PRINTF(1, 2);
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void put(const char *leaf, const char *text)
{
	char path[700];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", hostdir, leaf);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *slurp(const char *leaf)
{
	struct gc_error err = GC_ERROR_INIT;
	char path[700], *s = NULL;

	snprintf(path, sizeof(path), "%s/%s", hostdir, leaf);
	if (gc_read_file(&s, NULL, path, 1 << 24, &err) < 0)
		return gc_xstrdup("");
	return s;
}

static int lab_start(void **state)
{
	int i;

	snprintf(lab, sizeof(lab), "%s/lab-onyx", GC_BINARY_DIR);
	snprintf(hostdir, sizeof(hostdir), "%s/hosts/switch-1", lab);
	sh("GC_LAB_DIR='%s' '%s/scripts/lab.sh' stop >/dev/null 2>&1", lab, GC_SOURCE_DIR);
	sh("rm -rf '%s/hosts'", lab);
	for (i = 0; i < 8; i++) {
		port = 28000u + (unsigned)(getpid() % 3000) + (unsigned)i * 11u;
		if (sh("GC_LAB_DIR='%s' '%s/scripts/lab.sh' start --hosts 0 --switches 1 "
		       "--port %u >/dev/null",
		       lab, GC_SOURCE_DIR, port) == 0)
			break;
	}
	if (i == 8) {
		fprintf(stderr, "FATAL: the lab sshd did not start (see %s/sshd.log)\n", lab);
		return -1;
	}
	return 0;
}

static int lab_stop(void **state)
{
	sh("GC_LAB_DIR='%s' '%s/scripts/lab.sh' stop >/dev/null", lab, GC_SOURCE_DIR);
	return 0;
}

struct conn {
	struct gc_ssh_conn *c;
	struct gc_ssh_shell *shell;
	struct gc_onyx_session *s;
};

static int open_switch(struct conn *k, struct gc_error *err)
{
	char kh[700], key[700];
	struct gc_ssh_opts o = {0};
	struct gc_onyx_chan ch;
	struct gc_onyx_session_opts so = {"sn2700", "GC_TEST_ONYX_ENABLE", 10000, 0, NULL, NULL};
	int rc;

	snprintf(kh, sizeof(kh), "%s/client/known_hosts", lab);
	snprintf(key, sizeof(key), "%s/client/id_ed25519", lab);
	o.host = "127.0.0.100";
	o.port = port;
	o.username = getuid() == 0 ? "gclab" : getenv("USER");
	o.key_file = key;
	o.known_hosts = kh;
	o.connect_timeout_ms = 5000;
	o.command_timeout_ms = 10000;
	memset(k, 0, sizeof(*k));
	rc = gc_ssh_connect(&k->c, &o, err);
	if (rc == 0)
		rc = gc_ssh_shell_open(&k->shell, k->c, err);
	if (rc == 0) {
		gc_onyx_chan_ssh(&ch, k->shell);
		rc = gc_onyx_session_open(&k->s, &ch, &so, err);
	}
	return rc;
}

static void close_switch(struct conn *k)
{
	gc_onyx_session_close(k->s);
	gc_ssh_shell_close(k->shell);
	gc_ssh_free(k->c);
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

static struct gc_switch_roce roce = {.mode = "dscp-lossless", .pool_percent = 50.0,
				     .priority = 3, .ecn_min_kb = 150, .ecn_max_kb = 1500,
				     .cnp_traffic_class = 6, .pfc = true, .lldp = true,
				     .owned = true};
static struct gc_switch sw = {.name = "sn2700", .model = "SN2700", .ports = "1/1-1/32",
			      .roce = &roce};

static void test_lab_converge(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_desired d;
	struct gc_onyx_cmds cmds = {NULL, 0};
	struct conn k;
	char *log;

	sh("rm -f '%s'/running.json '%s'/startup.json '%s'/commands.log '%s'/control.json",
	   hostdir, hostdir, hostdir, hostdir);
	put("switch.json", "{\"enable_password\": \"lab-s3cret\", \"hostname\": \"sn2700\"}\n");
	setenv("GC_TEST_ONYX_ENABLE", "lab-s3cret", 1);
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	if (open_switch(&k, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(observe_diff(k.s, &d, &cmds, &err), 0);
	assert_int_equal(cmds.n, 10);
	if (gc_onyx_session_apply(k.s, &cmds, &err) != 0)
		fail_msg("%s", err.msg);
	gc_onyx_cmds_free(&cmds);
	assert_int_equal(observe_diff(k.s, &d, &cmds, &err), 0);
	assert_int_equal(cmds.n, 0);
	close_switch(&k);

	/* what the switch received, in order; the secret is not in the log */
	log = slurp("commands.log");
	assert_null(strstr(log, "lab-s3cret"));
	assert_non_null(strstr(log, "Z enable\n"));
	assert_non_null(strstr(log, "Z ********\n"));
	assert_non_null(strstr(log, " configure terminal\n"));
	assert_non_null(strstr(log, " lldp\n"));
	assert_non_null(strstr(log, " configuration write\n"));
	free(log);
	log = slurp("startup.json");
	assert_non_null(strstr(log, "\"lldp\": true"));
	free(log);
	gc_onyx_desired_free(&d);
}

static void test_lab_faults(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_desired d;
	struct gc_onyx_cmds cmds = {NULL, 0};
	struct conn k;

	sh("rm -f '%s'/running.json '%s'/startup.json '%s'/control.json", hostdir, hostdir,
	   hostdir);
	put("switch.json", "{\"hostname\": \"sn2700\"}\n");
	put("control.json", "{\"fail_once\": {\"match\": \"traffic pool roce memory\", "
			    "\"message\": \"% Pool configuration is locked\"}}\n");
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	if (open_switch(&k, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(observe_diff(k.s, &d, &cmds, &err), 0);
	assert_int_equal(gc_onyx_session_apply(k.s, &cmds, &err), GC_EREMOTE);
	assert_string_equal(err.msg, "switch 'sn2700': command 'traffic pool roce memory percent "
				     "50.00' failed: % Pool configuration is locked; 1 earlier command of this step took effect and is not saved");
	gc_onyx_cmds_free(&cmds);
	/* nothing was saved; a retry converges what is left */
	gc_error_clear(&err);
	assert_int_equal(observe_diff(k.s, &d, &cmds, &err), 0);
	assert_int_equal(cmds.n, 9);
	assert_int_equal(gc_onyx_session_apply(k.s, &cmds, &err), 0);
	gc_onyx_cmds_free(&cmds);

	/* the connection drops after two more lines: a transport error */
	put("control.json", "{\"drop_after\": 2}\n");
	assert_int_equal(observe_diff(k.s, &d, &cmds, &err), 0);
	assert_int_equal(cmds.n, 0);
	assert_int_equal(gc_onyx_session_exec(k.s, NULL, "show version", &err), GC_ENET);
	close_switch(&k);
	gc_onyx_desired_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lab_converge),
		cmocka_unit_test(test_lab_faults),
	};
	return cmocka_run_group_tests(tests, lab_start, lab_stop);
}
