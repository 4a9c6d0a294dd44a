/*
 * test_batch.c - several changing commands of one host in one exec
 * (src/drivers/esxi/batch.c): the exact script, and how far the host got
 * by its output (complete, refused mid-chain, cut short, forged:
 * gc_batch_parse, src/util/sections.c).  The outputs are what the lab's
 * ESXi shell prints for these scripts (tests/sim/esxi_sim.py runs `&&`
 * chains and `;` lists as BusyBox ash does).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "gc/esxi.h"
#include "gc/pattern.h"
#include "gc/sections.h"
#include "gc/util.h"

static void test_script_exact(void **state)
{
	const char *cmds[] = {GC_ESXI_CMD_ENTER_MAINTENANCE,
			      "esxcli hardware pci pcipassthru set -d 0000:3b:00.0 -e true",
			      "esxcli system module parameters set -m nmlx5_core -p 'max_vfs=4'"};
	char *s = gc_esxi_batch_script("T0K3N", cmds, 3);

	(void)state;
	assert_string_equal(s, "echo @@gc:T0K3N:c0 && esxcli system maintenanceMode set -e true && "
			       "echo @@gc:T0K3N:c1 && esxcli hardware pci pcipassthru set -d 0000:3b:00.0 "
			       "-e true && echo @@gc:T0K3N:c2 && esxcli system module parameters set -m "
			       "nmlx5_core -p 'max_vfs=4' && echo @@gc:T0K3N:end");
	free(s);
}

/* A host's first changing exec when its cluster lease was left to it
 * (src/exec/lease.c): the lease's compare-and-set heads the chain, its
 * arguments quoted, so the first change goes out only once ours is there. */
static void test_lease_heads_the_chain(void **state)
{
	char *cas = gc_esxi_lease_cas_command("L0K3N", "0123456789abcdef",
					   "cluster=c;holder=a@b;pid=1;lock=0123456789abcdef;since=1;expires=2");
	const char *cmds[] = {cas, GC_ESXI_CMD_ENTER_MAINTENANCE};
	char *s = gc_esxi_batch_script("T0K3N", cmds, 2), *want;
	struct gc_buf q = GC_BUF_INIT;

	(void)state;
	gc_shell_quote(&q, GC_ESXI_LEASE_CAS_SCRIPT);
	want = gc_xasprintf("echo @@gc:T0K3N:c0 && sh -c %s lease L0K3N 0123456789abcdef "
			    "'cluster=c;holder=a@b;pid=1;lock=0123456789abcdef;since=1;expires=2' && "
			    "echo @@gc:T0K3N:c1 && esxcli system maintenanceMode set -e true && "
			    "echo @@gc:T0K3N:end", gc_buf_str(&q));
	assert_string_equal(s, want);
	free(want);
	free(s);
	free(cas);
	gc_buf_free(&q);
	/* a lock or lease outside their characters never reaches the shell */
	assert_null(gc_esxi_lease_cas_command("L0K3N", "01;x", "cluster=c"));
	assert_null(gc_esxi_lease_cas_command("L0K3N", "0123456789abcdef", "a'$(reboot)"));
	assert_null(gc_esxi_lease_cas_command("L0K3N", "0123456789abcdef", ""));
}

/* The refusal names the holder on its own line of stderr, with this
 * exec's token: nothing else the host prints is taken for it. */
static void test_lease_refusal_names_the_holder(void **state)
{
	char *held;

	(void)state;
	held = gc_esxi_lease_held("L0K3N", "host 'esx02': command 'x' failed: @@lease:L0K3N:held:"
				       "cluster=c;holder=ops@elsewhere;pid=4242;lock=fedcba9876543210\n");
	assert_string_equal(held, "cluster=c;holder=ops@elsewhere;pid=4242;lock=fedcba9876543210");
	free(held);
	assert_null(gc_esxi_lease_held("L0K3N", "@@lease:OTHER:held:cluster=c"));
	assert_null(gc_esxi_lease_held("L0K3N", "Unable to set option"));
	assert_null(gc_esxi_lease_held("L0K3N", NULL));
}

static void parse(struct gc_batch *b, size_t n, const char *text, int want)
{
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_batch_parse(b, "T0K3N", n, text, strlen(text), &err), want);
}

static void test_complete(void **state)
{
	struct gc_batch b;

	(void)state;
	parse(&b, 2, "@@gc:T0K3N:c0\n@@gc:T0K3N:c1\n1234567\n@@gc:T0K3N:end\n", 0);
	assert_true(b.complete);
	assert_int_equal(b.started, 2);
	/* the last command's output, kept past the end marker (the uptime a
	 * batch before a reboot ends with) */
	assert_int_equal(b.last_len, 8);
	assert_memory_equal(b.last_out, "1234567\n", 8);
}

static void test_refused_mid_chain(void **state)
{
	struct gc_batch b;
	const char *text = "@@gc:T0K3N:c0\n@@gc:T0K3N:c1\nUnable to set: busy\nsecond line\n";

	(void)state;
	parse(&b, 3, text, 0);
	assert_false(b.complete);
	assert_int_equal(b.started, 2); /* command 1 stopped the chain */
	assert_int_equal(b.last_len, strlen("Unable to set: busy\nsecond line\n"));
	assert_memory_equal(b.last_out, "Unable to set: busy\n", 20);
	/* no newline after the last line */
	parse(&b, 3, "@@gc:T0K3N:c0\nno newline", 0);
	assert_int_equal(b.started, 1);
	assert_int_equal(b.last_len, strlen("no newline"));
}

static void test_cut_short(void **state)
{
	struct gc_batch b;

	(void)state;
	parse(&b, 3, "", 0);
	assert_int_equal(b.started, 0);
	parse(&b, 3, "@@gc:T0K3N:c0\n@@gc:T0K3N:c1\n@@gc:T0K3N:c", 0); /* a torn marker is text */
	assert_int_equal(b.started, 2);
	assert_false(b.complete);
	/* a blank line before the first marker: no command's output (the fuzz
	 * target found last_len counted from no command at all) */
	parse(&b, 2, "\n@@gc:T0K3N:c0\n", 0);
	assert_int_equal(b.started, 1);
	assert_int_equal(b.last_len, 0);
	parse(&b, 2, "\n", 0);
	assert_int_equal(b.started, 0);
	assert_int_equal(b.last_len, 0);
	assert_null(b.last_out);
}

static void test_forged(void **state)
{
	struct gc_batch b;
	struct gc_error err = GC_ERROR_INIT;
	const char *text = "@@gc:T0K3N:c0\n@@gc:T0K3N:c2\n";

	(void)state;
	assert_int_equal(gc_batch_parse(&b, "T0K3N", 3, text, strlen(text), &err), GC_EREMOTE);
	assert_string_equal(err.msg, "unexpected batch marker");
	parse(&b, 2, "@@gc:T0K3N:c0\n@@gc:T0K3N:end\n", GC_EREMOTE);   /* ended early */
	parse(&b, 2, "@@gc:T0K3N:c0\n@@gc:T0K3N:c0\n", GC_EREMOTE);    /* twice */
	parse(&b, 1, "@@gc:T0K3N:c0\n@@gc:T0K3N:c1\n", GC_EREMOTE);    /* past n */
	parse(&b, 1, "motd\n@@gc:T0K3N:c0\n@@gc:T0K3N:end\n", GC_EREMOTE);
	parse(&b, 1, "@@gc:T0K3N:c0\n@@gc:T0K3N:end\n@@gc:T0K3N:end\n", GC_EREMOTE);
	/* another token's markers are the command's own output */
	parse(&b, 1, "@@gc:OTHER:c0\n", GC_EREMOTE);
	parse(&b, 1, "@@gc:T0K3N:c0\n@@gc:OTHER:end\n", 0);
	assert_false(b.complete);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script_exact),
		cmocka_unit_test(test_lease_heads_the_chain),
		cmocka_unit_test(test_lease_refusal_names_the_holder),
		cmocka_unit_test(test_complete),
		cmocka_unit_test(test_refused_mid_chain),
		cmocka_unit_test(test_cut_short),
		cmocka_unit_test(test_forged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
