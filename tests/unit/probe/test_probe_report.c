/*
 * test_probe_report.c - the hand-written JSON: hostile strings survive a
 * round trip through a real JSON parser (json-c), and the human table shows
 * what a user needs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <string.h>
#include <json-c/json.h>

#include "gc/probe.h"
#include "probe_int.h"
#include "probe_test.h"

static void test_json_escape(void **state)
{
	struct pb_buf b = {0};
	char *s;

	pb_json_str(&b, "a\"b\\c\n\t\x01\x7f \xc3\xa9 \xff\xfe \xe2\x82");
	s = pb_buf_take(&b);
	assert_string_equal(s, "\"a\\\"b\\\\c\\n\\t\\u0001\\u007f \xc3\xa9 \\ufffd\\ufffd "
			       "\\ufffd\\ufffd\"");
	free(s);
}

static struct json_object *get(struct json_object *o, const char *path)
{
	char buf[128], *save = NULL, *k;

	snprintf(buf, sizeof(buf), "%s", path);
	for (k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(k));
		else if (!json_object_object_get_ex(o, k, &o))
			o = NULL;
	}
	assert_non_null(o);
	return o;
}

static void test_json_roundtrip(void **state)
{
	struct gc_probe_report *r = gc_xcalloc(1, sizeof(*r));
	struct json_object *doc;
	const char *nasty = "GPU \"x\" \\ \x02 \xff end";
	char *out = NULL;

	r->cuda.status = GC_PROBE_OK;
	r->cuda.ngpu = 2;
	snprintf(r->cuda.gpus[0].name, sizeof(r->cuda.gpus[0].name), "%s", nasty);
	r->cuda.gpus[0].mem_bytes = 80ull << 30;
	r->cuda.gpus[0].h2d_gbs = 55.5;
	memset(r->cuda.peer, -1, sizeof(r->cuda.peer));
	r->cuda.peer[0][1] = 1;
	r->cuda.peer[1][0] = 0;
	r->rdma.status = GC_PROBE_ABSENT;
	snprintf(r->rdma.reason, sizeof(r->rdma.reason), "no RDMA device");
	r->rdma.ndev = 1;
	r->rdma.devs[0].nports = 1;
	r->rdma.devs[0].ports[0].traffic_class = -1;
	r->rdma.devs[0].ports[0].roce_v2_index = 3;
	r->nexpect = 1;
	r->nfailed = 1;
	snprintf(r->checks[0].key, sizeof(r->checks[0].key), "gpu.count");
	snprintf(r->checks[0].hint, sizeof(r->checks[0].hint), "tab\there");
	assert_int_equal(gc_probe_render_json(&out, r), 0);
	doc = json_tokener_parse(out);
	assert_non_null(doc);
	assert_int_equal(json_object_get_int(get(doc, "schema")), 1);
	assert_string_equal(json_object_get_string(get(doc, "cuda.gpus.0.name")),
			    "GPU \"x\" \\ \x02 \xef\xbf\xbd end");
	assert_int_equal(json_object_get_int64(get(doc, "cuda.gpus.0.memory_mib")), 81920);
	assert_true(json_object_get_double(get(doc, "cuda.gpus.0.h2d_gbs")) == 55.5);
	assert_true(json_object_get_boolean(get(doc, "cuda.peer_access.0.1")));
	assert_false(json_object_get_boolean(get(doc, "cuda.peer_access.1.0")));
	assert_true(json_object_is_type(get(doc, "cuda.peer_access.0"), json_type_array));
	assert_string_equal(json_object_get_string(get(doc, "rdma.status")), "absent");
	assert_null(json_object_object_get(
		get(doc, "rdma.devices.0.ports.0"), "traffic_class")); /* -1 -> null */
	assert_int_equal(json_object_get_int(get(doc, "rdma.devices.0.ports.0.roce_v2_gid_index")),
			 3);
	assert_string_equal(json_object_get_string(get(doc, "expectations.checks.0.hint")),
			    "tab\there");
	assert_int_equal(json_object_get_int(get(doc, "expectations.failed")), 1);
	json_object_put(doc);
	free(out);
	free(r);
}

static void test_text_table(void **state)
{
	struct gc_probe_report *r = gc_xcalloc(1, sizeof(*r));
	char *out = NULL;

	r->rdma.status = GC_PROBE_ABSENT;
	snprintf(r->rdma.reason, sizeof(r->rdma.reason), "no RDMA device");
	r->rdma.verbs_loaded = true;
	r->cuda.status = GC_PROBE_ABSENT;
	snprintf(r->cuda.reason, sizeof(r->cuda.reason), "no CUDA device");
	r->gdr.status = GC_PROBE_ABSENT;
	snprintf(r->gdr.reason, sizeof(r->gdr.reason), "needs both");
	assert_int_equal(gc_probe_render_text(&out, r), 0);
	assert_string_equal(out, "RDMA\n"
				 "  absent: no RDMA device\n"
				 "  peermem: not loaded\n"
				 "CUDA\n"
				 "  absent: no CUDA device\n"
				 "GPUDirect RDMA\n"
				 "  absent: needs both\n"
				 "Nothing to check: no RDMA device, no CUDA GPU and no expectation "
				 "(exit 5)\n");
	free(out);
	free(r);
}

/* gc_probe_verdict() is the exit code and JSON "result" */
static const char *result_of(const struct gc_probe_report *r)
{
	static char v[32];
	char *out = NULL;
	json_object *doc;

	assert_int_equal(gc_probe_render_json(&out, r), 0);
	doc = json_tokener_parse(out);
	snprintf(v, sizeof(v), "%s", json_object_get_string(get(doc, "result")));
	json_object_put(doc);
	free(out);
	return v;
}

static void test_verdict(void **state)
{
	struct gc_probe_report *r = gc_xcalloc(1, sizeof(*r));

	r->rdma.status = GC_PROBE_ABSENT;
	r->cuda.status = GC_PROBE_NOT_RUN;
	assert_int_equal(gc_probe_verdict(r), GC_PROBE_EXIT_NOTHING);
	assert_string_equal(result_of(r), "nothing_to_check");
	r->rdma_test.status = GC_PROBE_ABSENT; /* --rdma-server without a device */
	assert_int_equal(gc_probe_verdict(r), GC_PROBE_EXIT_NOTHING);
	r->nexpect = 1; /* an expectation that passed, e.g. gpu.count = 0 */
	assert_int_equal(gc_probe_verdict(r), GC_PROBE_EXIT_OK);
	assert_string_equal(result_of(r), "ok");
	r->nexpect = 0;
	r->cuda.status = GC_PROBE_OK;
	assert_int_equal(gc_probe_verdict(r), GC_PROBE_EXIT_OK);
	r->cuda.status = GC_PROBE_ABSENT;
	r->rdma.status = GC_PROBE_OK;
	assert_int_equal(gc_probe_verdict(r), GC_PROBE_EXIT_OK);
	r->rdma_test.status = GC_PROBE_FAILED;
	assert_int_equal(gc_probe_verdict(r), GC_PROBE_EXIT_FAIL);
	assert_string_equal(result_of(r), "failed");
	r->rdma_test.status = GC_PROBE_NOT_RUN;
	r->nexpect = r->nfailed = 1;
	assert_int_equal(gc_probe_verdict(r), GC_PROBE_EXIT_FAIL);
	(void)state;
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_escape),
		cmocka_unit_test(test_json_roundtrip),
		cmocka_unit_test(test_text_table),
		cmocka_unit_test(test_verdict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
