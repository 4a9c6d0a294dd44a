/*
 * test_diag_format.c - the exact text of a rendered diagnostic (the layout
 * documented at gc_diag_format in include/gc/spec.h), tabs and control
 * bytes in source lines, and escaping of hostile values in messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "gc/spec.h"

static char *fmt(const struct gc_diag *d)
{
	struct gc_buf b = GC_BUF_INIT;

	gc_diag_format(&b, d);
	return gc_buf_take(&b);
}

static void test_documented_example(void **state)
{
	struct gc_diag d = {GC_SEV_ERROR, {"specs/x.yaml", 12, 7}, "unknown key 'cpu'",
			    "did you mean 'cpus'?", "      cpu: 4", NULL, 0};
	char *s = fmt(&d);

	assert_string_equal(s, "specs/x.yaml:12:7: error: unknown key 'cpu'\n"
			       "   12 |       cpu: 4\n"
			       "      |       ^\n"
			       "   = hint: did you mean 'cpus'?\n");
	free(s);
}

static void test_warning_without_hint(void **state)
{
	struct gc_diag d = {GC_SEV_WARNING, {"a.yaml", 3, 1}, "something odd", NULL, "x: 1", NULL, 0};
	char *s = fmt(&d);

	assert_string_equal(s, "a.yaml:3:1: warning: something odd\n"
			       "    3 | x: 1\n"
			       "      | ^\n");
	free(s);
}

static void test_tabs_become_one_space(void **state)
{
	/* the caret counts characters; each tab is shown as one space */
	struct gc_diag d = {GC_SEV_ERROR, {"t.yaml", 2, 4}, "found a tab", NULL, "\t\tx\ty", NULL, 0};
	char *s = fmt(&d);

	assert_string_equal(s, "t.yaml:2:4: error: found a tab\n"
			       "    2 |   x y\n"
			       "      |    ^\n");
	free(s);
}

static void test_control_bytes_and_wide_line_numbers(void **state)
{
	struct gc_diag d = {GC_SEV_ERROR, {"big.yaml", 123456, 2}, "m", "h", "a\x01\x1b[31mb\xff", NULL, 0};
	char *s = fmt(&d);

	assert_string_equal(s, "big.yaml:123456:2: error: m\n"
			       "123456 | a??[31mb?\n"
			       "      |  ^\n"
			       "   = hint: h\n");
	free(s);
}

static void test_no_source_line(void **state)
{
	struct gc_diag d = {GC_SEV_ERROR, {"e.yaml", 0, 0}, "out of memory", NULL, NULL, NULL, 0};
	struct gc_diag d2 = {GC_SEV_ERROR, {"e.yaml", 1, 1}, "the spec is empty", "start here",
			     NULL, NULL, 0};
	char *s = fmt(&d), *s2 = fmt(&d2);

	assert_string_equal(s, "e.yaml: error: out of memory\n");
	assert_string_equal(s2, "e.yaml:1:1: error: the spec is empty\n   = hint: start here\n");
	free(s);
	free(s2);
}

static void test_utf8_kept(void **state)
{
	struct gc_diag d = {GC_SEV_ERROR, {"u.yaml", 1, 16}, "m", NULL,
			    "description: \"\xc3\xa9t\xc3\xa9\"", NULL, 0};
	char *s = fmt(&d);

	assert_string_equal(s, "u.yaml:1:16: error: m\n"
			       "    1 | description: \"\xc3\xa9t\xc3\xa9\"\n"
			       "      |                ^\n");
	free(s);
}

/* Through the loader: hostile bytes in a value are escaped in the message. */
static void test_hostile_value_escaped(void **state)
{
	static const char spec[] = "apiVersion: gpuclusterctl/v1\n"
				   "kind: Cluster\n"
				   "metadata: {name: \"a\\x01$(reboot)\\\\\"}\n";
	struct gc_cluster *c = NULL;
	struct gc_diags d = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;

	assert_int_equal(gc_spec_load_buffer(&c, &d, "h.yaml", spec, strlen(spec), &err),
			 GC_ESPEC);
	assert_null(c);
	gc_diags_format(&b, &d);
	assert_string_equal(gc_buf_str(&b),
			    "h.yaml:3:18: error: invalid name 'a\\x01$(reboot)\\x5c'\n"
			    "    3 | metadata: {name: \"a\\x01$(reboot)\\\\\"}\n"
			    "      |                  ^\n"
			    "   = hint: expected 1-63 letters, digits, '.', '_' or '-', starting "
			    "with a letter or digit\n");
	assert_int_equal(d.nerrors, 1);
	assert_string_equal(err.msg, "h.yaml: 1 error in the spec");
	gc_buf_free(&b);
	gc_diags_free(&d);
}

static void test_long_value_truncated(void **state)
{
	struct gc_buf spec = GC_BUF_INIT, b = GC_BUF_INIT;
	struct gc_cluster *c = NULL;
	struct gc_diags d = {0};
	struct gc_error err = GC_ERROR_INIT;
	int i;

	gc_buf_puts(&spec, "apiVersion: gpuclusterctl/v1\nkind: Cluster\nmetadata: {name: ");
	for (i = 0; i < 5000; i++)
		gc_buf_putc(&spec, 'a');
	gc_buf_puts(&spec, "}\n");
	assert_int_equal(gc_spec_load_buffer(&c, &d, "l.yaml", spec.ptr, spec.len, &err),
			 GC_ESPEC);
	assert_int_equal(d.n, 1);
	/* 64 bytes of the value, then "..." */
	assert_string_equal(d.items[0].msg, "invalid name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
					    "aaaaaaaaaaaaaaaaaaaaaaaa...'");
	/* source lines are cut at 240 bytes */
	assert_int_equal(strlen(d.items[0].source_line), 240 + 4);
	assert_string_equal(d.items[0].source_line + 240, " ...");
	gc_buf_free(&spec);
	gc_buf_free(&b);
	gc_diags_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_documented_example),
		cmocka_unit_test(test_warning_without_hint),
		cmocka_unit_test(test_tabs_become_one_space),
		cmocka_unit_test(test_control_bytes_and_wide_line_numbers),
		cmocka_unit_test(test_no_source_line),
		cmocka_unit_test(test_utf8_kept),
		cmocka_unit_test(test_hostile_value_escaped),
		cmocka_unit_test(test_long_value_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
