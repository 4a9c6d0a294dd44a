/*
 * test_report.c - the validate report (src/validate/report.c): the exact
 * table with and without colour, the JSON read back with json-c field by
 * field, and the JUnit file read back with libxml2 and validated against
 * Jenkins' junit-10.xsd (tests/data/validate/junit-10.xsd).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlschemas.h>

#include "gc/validate.h"

#define XSD GC_SOURCE_DIR "/tests/data/validate/junit-10.xsd"

/* Three targets, two of them named node1 (a VM and its guest); a hint, a
 * PASS with a hint (not shown), a NULL found, a found value carrying an
 * OSC escape sequence that would retitle the terminal. */
static void lab_report(struct gc_validate_report *r)
{
	struct gc_check *c;

	memset(r, 0, sizeof(*r));
	r->spec = gc_xstrdup("specs/lab.yaml");
	r->wall_s = 12.34;
	r->started = 1700000000; /* 2023-11-14T22:13:20Z */
	c = gc_vreport_add(r, GC_CT_ESXI, "esx01", "config.host.version", GC_CHECK_PASS, "8.0.2",
			   "8.0.2", NULL);
	c->seconds = 0.5;
	c = gc_vreport_add(r, GC_CT_GUEST, "node1", "gpu.count", GC_CHECK_PASS, "1", "1",
			   "took a retry");
	c->seconds = 1.25;
	c = gc_vreport_add(r, GC_CT_ESXI, "esx01", "gpu.passthrough", GC_CHECK_FAIL, "enabled",
			   "\033]0;pwned\007disabled", "enable passthrough for 0000:3b:00.0");
	c->seconds = 0.125;
	gc_vreport_add(r, GC_CT_GUEST, "node1", "rdma.write_bw", GC_CHECK_SKIP, NULL, NULL,
		       "node2 is unreachable");
	gc_vreport_add(r, GC_CT_VM, "node1", "config.vm.memory_gb", GC_CHECK_FAIL, "64", NULL,
		       NULL);
}

static const char lab_text[] =
	"esxi esx01 (2 checks: 1 passed, 1 failed, 0 skipped)\n"
	"  PASS  config.host.version  found 8.0.2, expected 8.0.2\n"
	"  FAIL  gpu.passthrough      found \\u001b]0;pwned\\u0007disabled, expected enabled\n"
	"        hint: enable passthrough for 0000:3b:00.0\n"
	"\n"
	"guest node1 (2 checks: 1 passed, 0 failed, 1 skipped)\n"
	"  PASS  gpu.count            found 1, expected 1\n"
	"  SKIP  rdma.write_bw        found -\n"
	"        hint: node2 is unreachable\n"
	"\n"
	"vm node1 (1 check: 0 passed, 1 failed, 0 skipped)\n"
	"  FAIL  config.vm.memory_gb  found -, expected 64\n"
	"\n"
	"5 checks: 2 passed, 2 failed, 1 skipped in 12.3 s\n";

static void test_names(void **state)
{
	assert_string_equal(gc_check_status_name(GC_CHECK_PASS), "pass");
	assert_string_equal(gc_check_status_name(GC_CHECK_FAIL), "fail");
	assert_string_equal(gc_check_status_name(GC_CHECK_SKIP), "skip");
	assert_string_equal(gc_check_target_name(GC_CT_ESXI), "esxi");
	assert_string_equal(gc_check_target_name(GC_CT_SWITCH), "switch");
	assert_string_equal(gc_check_target_name(GC_CT_VCENTER), "vcenter");
	assert_string_equal(gc_check_target_name(GC_CT_VM), "vm");
	assert_string_equal(gc_check_target_name(GC_CT_GUEST), "guest");
	assert_string_equal(gc_check_target_name(GC_CT_PAIR), "pair");
	assert_string_equal(gc_check_target_name(GC_CT_MPI), "mpi");
}

static void test_add_count_free(void **state)
{
	struct gc_validate_report r;
	size_t pass = 9, fail = 9, skip = 9;

	lab_report(&r);
	assert_int_equal(r.nchecks, 5);
	assert_null(r.checks[3].expected);
	assert_null(r.checks[3].found);
	assert_string_equal(r.checks[2].found, "\033]0;pwned\007disabled");
	gc_vreport_count(&r, &pass, &fail, &skip);
	assert_int_equal(pass, 2);
	assert_int_equal(fail, 2);
	assert_int_equal(skip, 1);
	gc_vreport_count(&r, NULL, &fail, NULL);
	assert_int_equal(fail, 2);
	gc_vreport_free(&r);
	assert_int_equal(r.nchecks, 0);
	assert_null(r.checks);
	gc_vreport_free(NULL);
}

/* A remote host's endless output is cut, never inside a character. */
static void test_add_caps_values(void **state)
{
	struct gc_validate_report r;
	char *big = malloc(GC_VREPORT_VALUE_MAX + 100);
	size_t n;

	memset(&r, 0, sizeof(r));
	memset(big, 'a', GC_VREPORT_VALUE_MAX + 99);
	big[GC_VREPORT_VALUE_MAX + 99] = '\0';
	gc_vreport_add(&r, GC_CT_GUEST, "node1", "dmesg", GC_CHECK_FAIL, NULL, big, NULL);
	n = strlen(r.checks[0].found);
	assert_int_equal(n, GC_VREPORT_VALUE_MAX);
	assert_string_equal(r.checks[0].found + n - 3, "\xe2\x80\xa6");
	/* 4092 'a', then two-byte characters: the cut backs off to 4092 */
	for (size_t i = 4092; i + 1 < GC_VREPORT_VALUE_MAX + 99; i += 2)
		memcpy(big + i, "\xc3\xa9", 2);
	gc_vreport_add(&r, GC_CT_GUEST, "node1", "dmesg", GC_CHECK_FAIL, NULL, big, NULL);
	n = strlen(r.checks[1].found);
	assert_int_equal(n, 4092 + 3);
	assert_memory_equal(r.checks[1].found + 4090, "aa\xe2\x80\xa6", 6);
	/* at the cap: kept whole */
	big[GC_VREPORT_VALUE_MAX] = '\0';
	memset(big, 'b', GC_VREPORT_VALUE_MAX);
	gc_vreport_add(&r, GC_CT_GUEST, "node1", "dmesg", GC_CHECK_FAIL, NULL, big, NULL);
	assert_string_equal(r.checks[2].found, big);
	free(big);
	gc_vreport_free(&r);
}

static void test_text(void **state)
{
	struct gc_validate_report r;
	struct gc_buf b = GC_BUF_INIT;

	lab_report(&r);
	gc_vreport_render_text(&b, &r, 0);
	assert_string_equal(gc_buf_str(&b), lab_text);
	gc_buf_free(&b);
	gc_vreport_free(&r);
}

static void test_text_color(void **state)
{
	static const char want[] =
		"\033[1mesxi esx01\033[0m (2 checks: 1 passed, 1 failed, 0 skipped)\n"
		"  \033[32mPASS\033[0m  config.host.version  found 8.0.2, expected 8.0.2\n"
		"  \033[31mFAIL\033[0m  gpu.passthrough      found \\u001b]0;pwned\\u0007disabled, expected enabled\n"
		"        \033[2mhint: enable passthrough for 0000:3b:00.0\033[0m\n"
		"\n"
		"\033[1mguest node1\033[0m (2 checks: 1 passed, 0 failed, 1 skipped)\n"
		"  \033[32mPASS\033[0m  gpu.count            found 1, expected 1\n"
		"  \033[33mSKIP\033[0m  rdma.write_bw        found -\n"
		"        \033[2mhint: node2 is unreachable\033[0m\n"
		"\n"
		"\033[1mvm node1\033[0m (1 check: 0 passed, 1 failed, 0 skipped)\n"
		"  \033[31mFAIL\033[0m  config.vm.memory_gb  found -, expected 64\n"
		"\n"
		"5 checks: 2 passed, 2 failed, 1 skipped in 12.3 s\n";
	struct gc_validate_report r;
	struct gc_buf b = GC_BUF_INIT;

	lab_report(&r);
	gc_vreport_render_text(&b, &r, GC_VREPORT_COLOR);
	assert_string_equal(gc_buf_str(&b), want);
	gc_buf_free(&b);
	gc_vreport_free(&r);
}

/* A name past the 40-column cap does not push the others out. */
static void test_text_long_name(void **state)
{
	struct gc_validate_report r;
	struct gc_buf b = GC_BUF_INIT;

	memset(&r, 0, sizeof(r));
	gc_vreport_add(&r, GC_CT_MPI, "mpirun",
		       "a.very.long.check.name.that.goes.past.forty.columns", GC_CHECK_PASS, NULL,
		       "ok", NULL);
	gc_vreport_add(&r, GC_CT_MPI, "mpirun", "short", GC_CHECK_PASS, NULL, "ok", NULL);
	gc_vreport_render_text(&b, &r, 0);
	assert_string_equal(gc_buf_str(&b),
			    "mpi mpirun (2 checks: 2 passed, 0 failed, 0 skipped)\n"
			    "  PASS  a.very.long.check.name.that.goes.past.forty.columns  found ok\n"
			    "  PASS  short                                     found ok\n"
			    "\n"
			    "2 checks: 2 passed, 0 failed, 0 skipped in 0.0 s\n");
	gc_buf_free(&b);
	gc_vreport_free(&r);
}

/* ----------------------------------------------------------------- JSON */

static json_object *field(json_object *o, const char *key)
{
	json_object *v = NULL;

	assert_true(json_object_object_get_ex(o, key, &v));
	return v;
}

static void assert_str_field(json_object *o, const char *key, const char *want)
{
	json_object *v = field(o, key);

	if (want == NULL) {
		assert_null(v);
		return;
	}
	assert_true(json_object_is_type(v, json_type_string));
	assert_string_equal(json_object_get_string(v), want);
}

static void assert_check_json(json_object *c, const char *name, const char *status,
			      const char *expected, const char *found, const char *hint,
			      double seconds)
{
	assert_int_equal(json_object_object_length(c), 6);
	assert_str_field(c, "name", name);
	assert_str_field(c, "status", status);
	assert_str_field(c, "expected", expected);
	assert_str_field(c, "found", found);
	assert_str_field(c, "hint", hint);
	assert_true(json_object_is_type(field(c, "seconds"), json_type_double));
	assert_true(json_object_get_double(field(c, "seconds")) == seconds);
}

static json_object *assert_target_json(json_object *targets, size_t i, const char *name,
				       const char *kind, size_t nchecks)
{
	json_object *t = json_object_array_get_idx(targets, i);

	assert_int_equal(json_object_object_length(t), 3);
	assert_str_field(t, "name", name);
	assert_str_field(t, "kind", kind);
	assert_int_equal(json_object_array_length(field(t, "checks")), nchecks);
	return field(t, "checks");
}

static void test_json(void **state)
{
	struct gc_validate_report r;
	struct gc_buf b = GC_BUF_INIT;
	json_object *o, *s, *targets, *checks;

	lab_report(&r);
	gc_vreport_render_json(&b, &r);
	o = json_tokener_parse(gc_buf_str(&b));
	assert_non_null(o);
	assert_int_equal(json_object_object_length(o), 5);
	assert_int_equal(json_object_get_int(field(o, "schema")), 1);
	assert_str_field(o, "spec", "specs/lab.yaml");
	assert_true(json_object_get_double(field(o, "wall_s")) == 12.34);
	assert_non_null(strstr(gc_buf_str(&b), "\"wall_s\": 12.340,\n"));
	s = field(o, "summary");
	assert_int_equal(json_object_object_length(s), 5);
	assert_str_field(s, "result", "failed");
	assert_int_equal(json_object_get_int(field(s, "pass")), 2);
	assert_int_equal(json_object_get_int(field(s, "fail")), 2);
	assert_int_equal(json_object_get_int(field(s, "skip")), 1);
	assert_true(json_object_is_type(field(s, "ok"), json_type_boolean));
	assert_false(json_object_get_boolean(field(s, "ok")));
	targets = field(o, "targets");
	assert_int_equal(json_object_array_length(targets), 3);

	checks = assert_target_json(targets, 0, "esx01", "esxi", 2);
	assert_check_json(json_object_array_get_idx(checks, 0), "config.host.version", "pass",
			  "8.0.2", "8.0.2", NULL, 0.5);
	/* JSON keeps the host's bytes; json-c escapes them */
	assert_check_json(json_object_array_get_idx(checks, 1), "gpu.passthrough", "fail",
			  "enabled", "\033]0;pwned\007disabled",
			  "enable passthrough for 0000:3b:00.0", 0.125);
	assert_non_null(strstr(gc_buf_str(&b), "\"found\": \"\\u001b]0;pwned\\u0007disabled\""));
	checks = assert_target_json(targets, 1, "node1", "guest", 2);
	assert_check_json(json_object_array_get_idx(checks, 0), "gpu.count", "pass", "1", "1",
			  "took a retry", 1.25);
	assert_check_json(json_object_array_get_idx(checks, 1), "rdma.write_bw", "skip", NULL, NULL,
			  "node2 is unreachable", 0);
	checks = assert_target_json(targets, 2, "node1", "vm", 1);
	assert_check_json(json_object_array_get_idx(checks, 0), "config.vm.memory_gb", "fail", "64",
			  NULL, NULL, 0);
	json_object_put(o);
	gc_buf_free(&b);
	gc_vreport_free(&r);
}

static void test_json_empty(void **state)
{
	struct gc_validate_report r;
	struct gc_buf b = GC_BUF_INIT;
	json_object *o, *s;

	memset(&r, 0, sizeof(r));
	gc_vreport_render_json(&b, &r);
	o = json_tokener_parse(gc_buf_str(&b));
	assert_non_null(o);
	assert_null(field(o, "spec"));
	assert_true(json_object_get_double(field(o, "wall_s")) == 0);
	s = field(o, "summary");
	assert_int_equal(json_object_get_int(field(s, "pass")), 0);
	assert_int_equal(json_object_get_int(field(s, "fail")), 0);
	assert_int_equal(json_object_get_int(field(s, "skip")), 0);
	assert_true(json_object_get_boolean(field(s, "ok")));
	assert_str_field(s, "result", "nothing_to_check"); /* exit 5 */
	assert_int_equal(json_object_array_length(field(o, "targets")), 0);
	json_object_put(o);
	gc_buf_reset(&b);
	gc_vreport_add(&r, GC_CT_MPI, "mpirun", "mpi.run", GC_CHECK_PASS, NULL, "ok \xff", NULL);
	gc_vreport_render_json(&b, &r);
	o = json_tokener_parse(gc_buf_str(&b));
	assert_str_field(field(o, "summary"), "result", "ok");
	/* a host's byte that is not UTF-8 cannot make the document other than UTF-8 */
	assert_non_null(strstr(gc_buf_str(&b), "\"found\": \"ok \xef\xbf\xbd\""));
	json_object_put(o);
	gc_vreport_free(&r);
	gc_buf_free(&b);
}

/* ---------------------------------------------------------------- JUnit */

struct tmpdir {
	char path[64];
	char *out;
};

static int setup_dir(void **state)
{
	struct tmpdir *d = calloc(1, sizeof(*d));

	snprintf(d->path, sizeof(d->path), "/tmp/gc-vreport-XXXXXX");
	if (mkdtemp(d->path) == NULL)
		return -1;
	d->out = gc_xasprintf("%s/junit.xml", d->path);
	*state = d;
	return 0;
}

static int teardown_dir(void **state)
{
	struct tmpdir *d = *state;

	unlink(d->out);
	rmdir(d->path);
	free(d->out);
	free(d);
	return 0;
}

/* The directory holds only junit.xml: no temporary file was left. */
static void assert_only_output(const struct tmpdir *d)
{
	DIR *dir = opendir(d->path);
	struct dirent *e;
	int n = 0;

	assert_non_null(dir);
	while ((e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		assert_string_equal(e->d_name, "junit.xml");
		n++;
	}
	closedir(dir);
	assert_int_equal(n, 1);
}

static int schema_validate(xmlDocPtr doc)
{
	xmlSchemaParserCtxtPtr pc = xmlSchemaNewParserCtxt(XSD);
	xmlSchemaPtr schema;
	xmlSchemaValidCtxtPtr vc;
	int rc;

	assert_non_null(pc);
	schema = xmlSchemaParse(pc);
	assert_non_null(schema);
	vc = xmlSchemaNewValidCtxt(schema);
	assert_non_null(vc);
	rc = xmlSchemaValidateDoc(vc, doc);
	xmlSchemaFreeValidCtxt(vc);
	xmlSchemaFree(schema);
	xmlSchemaFreeParserCtxt(pc);
	return rc;
}

static xmlNodePtr next_element(xmlNodePtr n)
{
	while (n != NULL && n->type != XML_ELEMENT_NODE)
		n = n->next;
	return n;
}

static xmlNodePtr first_child(xmlNodePtr n)
{
	return next_element(n->children);
}

static xmlNodePtr next_sibling(xmlNodePtr n)
{
	return next_element(n->next);
}

static void assert_prop(xmlNodePtr n, const char *name, const char *want)
{
	xmlChar *v = xmlGetProp(n, (const xmlChar *)name);

	if (want == NULL) {
		assert_null(v);
		return;
	}
	assert_non_null(v);
	assert_string_equal((const char *)v, want);
	xmlFree(v);
}

static void assert_content(xmlNodePtr n, const char *want)
{
	xmlChar *v = xmlNodeGetContent(n);

	assert_string_equal((const char *)v, want);
	xmlFree(v);
}

static void assert_suite(xmlNodePtr s, const char *name, const char *tests, const char *failures,
			 const char *skipped, const char *time, const char *host)
{
	assert_string_equal((const char *)s->name, "testsuite");
	assert_prop(s, "name", name);
	assert_prop(s, "tests", tests);
	assert_prop(s, "failures", failures);
	assert_prop(s, "errors", "0");
	assert_prop(s, "skipped", skipped);
	assert_prop(s, "time", time);
	assert_prop(s, "timestamp", "2023-11-14T22:13:20");
	assert_prop(s, "hostname", host);
}

static xmlNodePtr assert_case(xmlNodePtr c, const char *classname, const char *name,
			      const char *time, const char *child)
{
	assert_string_equal((const char *)c->name, "testcase");
	assert_prop(c, "classname", classname);
	assert_prop(c, "name", name);
	assert_prop(c, "time", time);
	assert_non_null(first_child(c));
	assert_string_equal((const char *)first_child(c)->name, child);
	assert_null(next_sibling(first_child(c)));
	return first_child(c);
}

static void test_junit(void **state)
{
	struct tmpdir *d = *state;
	struct gc_validate_report r;
	struct gc_error err = GC_ERROR_INIT;
	char host[256] = "";
	xmlDocPtr doc;
	xmlNodePtr root, s, c, o;

	assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
	lab_report(&r);
	assert_int_equal(gc_vreport_write_junit(d->out, &r, &err), 0);
	/* again over the first: replaced whole */
	assert_int_equal(gc_vreport_write_junit(d->out, &r, &err), 0);
	assert_int_equal(err.code, 0);
	assert_only_output(d);
	doc = xmlReadFile(d->out, NULL, XML_PARSE_NONET);
	assert_non_null(doc);
	assert_int_equal(schema_validate(doc), 0);

	root = xmlDocGetRootElement(doc);
	assert_string_equal((const char *)root->name, "testsuites");
	assert_prop(root, "name", "gpuclusterctl validate");
	assert_prop(root, "tests", "5");
	assert_prop(root, "failures", "2");
	assert_prop(root, "errors", "0");
	assert_prop(root, "skipped", NULL); /* not in junit-10.xsd */
	assert_prop(root, "time", "12.340");

	s = first_child(root);
	assert_suite(s, "esxi/esx01", "2", "1", "0", "0.625", host);
	c = first_child(s);
	o = assert_case(c, "esxi.esx01", "config.host.version", "0.500", "system-out");
	assert_content(o, "expected 8.0.2, found 8.0.2");
	c = next_sibling(c);
	o = assert_case(c, "esxi.esx01", "gpu.passthrough", "0.125", "failure");
	/* the escape sequence comes out shown: XML cannot carry ESC or BEL */
	assert_prop(o, "message", "expected enabled, found \\u001b]0;pwned\\u0007disabled");
	assert_prop(o, "type", "check");
	assert_content(o, "enable passthrough for 0000:3b:00.0");
	assert_null(next_sibling(c));

	s = next_sibling(s);
	assert_suite(s, "guest/node1", "2", "0", "1", "1.250", host);
	c = first_child(s);
	o = assert_case(c, "guest.node1", "gpu.count", "1.250", "system-out");
	assert_content(o, "expected 1, found 1");
	c = next_sibling(c);
	o = assert_case(c, "guest.node1", "rdma.write_bw", "0.000", "skipped");
	assert_prop(o, "message", "node2 is unreachable");
	assert_null(next_sibling(c));

	s = next_sibling(s);
	assert_suite(s, "vm/node1", "1", "1", "0", "0.000", host);
	c = first_child(s);
	o = assert_case(c, "vm.node1", "config.vm.memory_gb", "0.000", "failure");
	assert_prop(o, "message", "expected 64, found -");
	assert_content(o, "");
	assert_null(next_sibling(s));

	xmlFreeDoc(doc);
	gc_vreport_free(&r);
}

/* Whatever a host sends, the file stays well-formed XML 1.0 and valid. */
static void test_junit_hostile(void **state)
{
	struct tmpdir *d = *state;
	struct gc_validate_report r;
	struct gc_error err = GC_ERROR_INIT;
	xmlDocPtr doc;
	xmlNodePtr c, o;

	memset(&r, 0, sizeof(r));
	r.wall_s = -1; /* a clock gone backwards is written as 0 */
	gc_vreport_add(&r, GC_CT_PAIR, "node1<->node2", "rdma.\"bw\"", GC_CHECK_FAIL, "<&>",
		       "\001\xff\xef\xbf\xbf]]>", "line 1\nline 2\r\033[2J");
	gc_vreport_add(&r, GC_CT_PAIR, "node1<->node2", "rdma.lat", GC_CHECK_SKIP, NULL, NULL,
		       NULL);
	assert_int_equal(gc_vreport_write_junit(d->out, &r, &err), 0);
	doc = xmlReadFile(d->out, NULL, XML_PARSE_NONET);
	assert_non_null(doc);
	assert_int_equal(schema_validate(doc), 0);
	assert_prop(xmlDocGetRootElement(doc), "time", "0.000");
	c = first_child(first_child(xmlDocGetRootElement(doc)));
	assert_prop(c, "classname", "pair.node1<->node2");
	assert_prop(c, "name", "rdma.\"bw\"");
	o = first_child(c);
	assert_prop(o, "message", "expected <&>, found \\u0001\\xff\\uffff]]>");
	assert_content(o, "line 1\nline 2\\u000d\\u001b[2J");
	o = first_child(next_sibling(c));
	assert_string_equal((const char *)o->name, "skipped");
	assert_prop(o, "message", NULL);
	xmlFreeDoc(doc);
	gc_vreport_free(&r);
}

static void test_junit_empty(void **state)
{
	struct tmpdir *d = *state;
	struct gc_validate_report r;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	xmlDocPtr doc;
	xmlNodePtr root;

	memset(&r, 0, sizeof(r));
	gc_vreport_render_text(&b, &r, 0);
	assert_string_equal(gc_buf_str(&b), "0 checks: 0 passed, 0 failed, 0 skipped in 0.0 s\n");
	assert_int_equal(gc_vreport_write_junit(d->out, &r, &err), 0);
	doc = xmlReadFile(d->out, NULL, XML_PARSE_NONET);
	assert_non_null(doc);
	assert_int_equal(schema_validate(doc), 0);
	root = xmlDocGetRootElement(doc);
	assert_prop(root, "tests", "0");
	assert_prop(root, "failures", "0");
	assert_null(first_child(root));
	xmlFreeDoc(doc);
	gc_buf_free(&b);
}

static void test_junit_unwritable(void **state)
{
	struct gc_validate_report r;
	struct gc_error err = GC_ERROR_INIT;

	lab_report(&r);
	assert_int_equal(gc_vreport_write_junit("/nonexistent/gc-vreport/junit.xml", &r, &err),
			 GC_EIO);
	assert_int_equal(err.code, GC_EIO);
	assert_string_equal(err.msg, "cannot write the JUnit report "
				     "'/nonexistent/gc-vreport/junit.xml': No such file or directory");
	gc_vreport_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_add_count_free),
		cmocka_unit_test(test_add_caps_values),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_text_color),
		cmocka_unit_test(test_text_long_name),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_empty),
		cmocka_unit_test_setup_teardown(test_junit, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_junit_hostile, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_junit_empty, setup_dir, teardown_dir),
		cmocka_unit_test(test_junit_unwritable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
