/*
 * test_jsonw.c - the streaming JSON writer against json-c: every byte of a
 * string, raw and as text (gc_json_text), UTF-8 that is and is not well
 * formed, nesting and empty containers, integers at their limits, under
 * every layout flag json-c's json_object_to_json_string_ext() takes that
 * the writer mirrors; the pretty layout spelled out; file mode across the
 * 64 KiB flush, and a failed write.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "gc/json.h"
#include "gc/jsonw.h"

/* Each layout the writer mirrors; its flags are json-c's. */
static const unsigned layouts[] = {
    JSON_C_TO_STRING_PLAIN,
    JSON_C_TO_STRING_SPACED,
    JSON_C_TO_STRING_PRETTY,
    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED,
    JSON_C_TO_STRING_NOSLASHESCAPE,
    JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE,
    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
};

/* Write a json-c tree through the writer, member by member. */
static void emit(struct gc_jsonw *w, json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null: gc_jsonw_null(w); return;
	case json_type_boolean: gc_jsonw_bool(w, json_object_get_boolean(o)); return;
	case json_type_int: gc_jsonw_int(w, json_object_get_int64(o)); return;
	case json_type_string:
		gc_jsonw_string_len(w, json_object_get_string(o),
		                    (size_t)json_object_get_string_len(o));
		return;
	case json_type_array:
		gc_jsonw_array_begin(w);
		for (size_t i = 0; i < json_object_array_length(o); i++)
			emit(w, json_object_array_get_idx(o, i));
		gc_jsonw_array_end(w);
		return;
	case json_type_object:
		gc_jsonw_object_begin(w);
		json_object_object_foreach(o, k, v)
		{
			gc_jsonw_key(w, k);
			emit(w, v);
		}
		gc_jsonw_object_end(w);
		return;
	case json_type_double: break;
	}
	fail_msg("no doubles in these tests");
}

/* The writer's bytes for o equal json-c's, in every layout; o released. */
static void assert_same_as_json_c(json_object *o)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		struct gc_buf b = GC_BUF_INIT;
		struct gc_jsonw w;
		struct gc_error err = GC_ERROR_INIT;
		size_t n;
		const char *want = json_object_to_json_string_length(o, (int)layouts[i], &n);

		gc_jsonw_init_buf(&w, &b, layouts[i]);
		emit(&w, o);
		assert_int_equal(gc_jsonw_finish(&w, &err), 0);
		if (b.len != n || memcmp(b.ptr, want, n) != 0)
			fail_msg("flags %u:\nwant %s\ngot  %s", layouts[i], want, gc_buf_str(&b));
		gc_buf_free(&b);
	}
	json_object_put(o);
}

/* One string value alone, every byte from 0x00 to 0xff on its own and all
 * together, around plain text and each escape. */
static void test_every_byte_as_json_c_escapes_it(void **state)
{
	char all[256];

	(void)state;
	for (int c = 0; c < 256; c++) {
		char s[5] = {'a', (char)c, '/', (char)c, 'z'};

		assert_same_as_json_c(json_object_new_string_len(s, (int)sizeof(s)));
		all[c] = (char)c;
	}
	assert_same_as_json_c(json_object_new_string_len(all, (int)sizeof(all)));
	assert_same_as_json_c(json_object_new_string_len(all + 1, (int)sizeof(all) - 1));
	assert_same_as_json_c(json_object_new_string(""));
}

/* gc_jsonw_text() is gc_json_text() then json-c, byte for byte. */
static void assert_text(const char *s)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		struct gc_buf b = GC_BUF_INIT;
		struct gc_jsonw w;
		json_object *o = gc_json_text(s);
		const char *want = json_object_to_json_string_ext(o, (int)layouts[i]);

		gc_jsonw_init_buf(&w, &b, layouts[i]);
		gc_jsonw_text(&w, s);
		assert_int_equal(gc_jsonw_finish(&w, NULL), 0);
		assert_string_equal(gc_buf_str(&b), want);
		json_object_put(o);
		gc_buf_free(&b);
	}
}

static void test_text_is_utf8_as_gc_json_text_makes_it(void **state)
{
	char all[256];

	(void)state;
	for (int c = 1; c < 256; c++) {
		char s[6] = {'a', (char)c, '"', (char)c, 'z', '\0'};

		assert_text(s);
		all[c - 1] = (char)c;
	}
	all[255] = '\0';
	assert_text(all);
	assert_text("");
	assert_text(NULL);
	/* well formed: 2, 3 and 4 bytes, the last code point, a C1 control */
	assert_text("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9d\x9b\x91 \xf4\x8f\xbf\xbf \xc2\x9b");
	/* not: overlong, surrogate, past U+10FFFF, cut short at the end and in
	 * the middle, a lone continuation byte */
	assert_text("\xc0\xaf|\xe0\x80\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xf5\x80|ok\xe2\x82");
	assert_text("\xe2\x82|\xf0\x9d\x9b|\x80\xbf|\xfe\xff");
}

static void test_nesting_and_empty_containers(void **state)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	json_object *inner = json_object_new_object(), *deep = json_object_new_array();

	(void)state;
	assert_same_as_json_c(json_object_new_object());
	assert_same_as_json_c(json_object_new_array());
	assert_same_as_json_c(json_object_new_int64(0));
	assert_same_as_json_c(json_object_new_boolean(0));
	json_object_object_add(o, "int", json_object_new_int64(42));
	json_object_object_add(o, "min", json_object_new_int64(INT64_MIN));
	json_object_object_add(o, "max", json_object_new_int64(INT64_MAX));
	json_object_object_add(o, "neg", json_object_new_int64(-7));
	json_object_object_add(o, "t", json_object_new_boolean(1));
	json_object_object_add(o, "f", json_object_new_boolean(0));
	json_object_object_add(o, "null", NULL);
	json_object_object_add(o, "k\"ey/\\\n\x01\xff", json_object_new_string("v/1"));
	json_object_object_add(o, "", json_object_new_string(""));
	json_object_object_add(o, "empty_array", json_object_new_array());
	json_object_object_add(o, "empty_object", json_object_new_object());
	json_object_array_add(a, json_object_new_int64(1));
	json_object_array_add(a, NULL);
	json_object_array_add(a, json_object_new_array());
	json_object_array_add(a, json_object_new_object());
	json_object_object_add(inner, "x", json_object_new_array());
	json_object_array_add(a, inner);
	json_object_object_add(o, "array", a);
	for (int i = 0; i < 20; i++) {
		json_object *next = json_object_new_array();

		json_object_array_add(next, deep);
		json_object_array_add(next, json_object_new_int64(i));
		deep = next;
	}
	json_object_object_add(o, "deep", deep);
	assert_same_as_json_c(o);
}

/* The layout the plan uses, spelled out (not only "as json-c does"). */
static void test_pretty_layout_exact(void **state)
{
	struct gc_buf b = GC_BUF_INIT;
	struct gc_jsonw w;

	(void)state;
	gc_jsonw_init_buf(&w, &b, GC_JSONW_PRETTY | GC_JSONW_SPACED | GC_JSONW_NOSLASHESCAPE);
	gc_jsonw_object_begin(&w);
	gc_jsonw_key(&w, "seq");
	gc_jsonw_int(&w, 1);
	gc_jsonw_key(&w, "resource");
	gc_jsonw_string(&w, "esx01/esxi.ntp");
	gc_jsonw_key(&w, "vm");
	gc_jsonw_text(&w, NULL);
	gc_jsonw_key(&w, "flags");
	gc_jsonw_array_begin(&w);
	gc_jsonw_array_end(&w);
	gc_jsonw_key(&w, "changes");
	gc_jsonw_array_begin(&w);
	gc_jsonw_object_begin(&w);
	gc_jsonw_key(&w, "old");
	gc_jsonw_text(&w, "4\n\033[2J\xff");
	gc_jsonw_object_end(&w);
	gc_jsonw_array_end(&w);
	gc_jsonw_key(&w, "synthesized");
	gc_jsonw_bool(&w, false);
	gc_jsonw_object_end(&w);
	gc_jsonw_raw(&w, "\n", 1);
	assert_int_equal(gc_jsonw_finish(&w, NULL), 0);
	assert_string_equal(gc_buf_str(&b), "{\n"
	                                    "  \"seq\": 1,\n"
	                                    "  \"resource\": \"esx01/esxi.ntp\",\n"
	                                    "  \"vm\": null,\n"
	                                    "  \"flags\": [\n"
	                                    "  ],\n"
	                                    "  \"changes\": [\n"
	                                    "    {\n"
	                                    "      \"old\": \"4\\n\\u001b[2J\xef\xbf\xbd\"\n"
	                                    "    }\n"
	                                    "  ],\n"
	                                    "  \"synthesized\": false\n"
	                                    "}\n");
	gc_buf_free(&b);
}

/* A document of some MiB through a FILE: the same bytes as in memory. */
static void test_file_mode_streams_the_same_bytes(void **state)
{
	struct gc_buf want = GC_BUF_INIT;
	struct gc_jsonw wb, wf;
	struct gc_error err = GC_ERROR_INIT;
	char *got = NULL;
	size_t gotlen = 0;
	FILE *f = open_memstream(&got, &gotlen);
	struct gc_jsonw *ws[2] = {&wb, &wf};

	(void)state;
	assert_non_null(f);
	gc_jsonw_init_buf(&wb, &want, GC_JSONW_PRETTY | GC_JSONW_SPACED);
	gc_jsonw_init_file(&wf, f, GC_JSONW_PRETTY | GC_JSONW_SPACED);
	for (int k = 0; k < 2; k++) {
		struct gc_jsonw *w = ws[k];

		gc_jsonw_array_begin(w);
		for (int i = 0; i < 50000; i++) {
			gc_jsonw_object_begin(w);
			gc_jsonw_key(w, "i");
			gc_jsonw_int(w, i);
			gc_jsonw_key(w, "s");
			gc_jsonw_text(w, "a/b \"c\"");
			gc_jsonw_object_end(w);
		}
		gc_jsonw_array_end(w);
		gc_jsonw_raw(w, "\n", 1);
	}
	assert_int_equal(gc_jsonw_finish(&wb, &err), 0);
	assert_int_equal(gc_jsonw_finish(&wf, &err), 0);
	assert_int_equal(fclose(f), 0);
	assert_true(want.len > 2 * 1024 * 1024);
	assert_int_equal(gotlen, want.len);
	assert_memory_equal(got, want.ptr, want.len);
	free(got);
	gc_buf_free(&want);
}

/* A write that fails is reported once, by finish, with its errno. */
static void test_file_mode_write_error(void **state)
{
	FILE *f = fopen("/dev/full", "w");
	struct gc_jsonw w;
	struct gc_error err = GC_ERROR_INIT;

	(void)state;
	if (f == NULL)
		skip();
	setvbuf(f, NULL, _IONBF, 0);
	gc_jsonw_init_file(&w, f, GC_JSONW_PRETTY);
	gc_jsonw_array_begin(&w);
	for (int i = 0; i < 100000; i++)
		gc_jsonw_string(&w, "0123456789");
	gc_jsonw_array_end(&w);
	assert_int_equal(gc_jsonw_finish(&w, &err), GC_EIO);
	assert_int_equal(err.errnum, ENOSPC);
	assert_string_equal(err.msg, "writing JSON failed: No space left on device");
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_byte_as_json_c_escapes_it),
	    cmocka_unit_test(test_text_is_utf8_as_gc_json_text_makes_it),
	    cmocka_unit_test(test_nesting_and_empty_containers),
	    cmocka_unit_test(test_pretty_layout_exact),
	    cmocka_unit_test(test_file_mode_streams_the_same_bytes),
	    cmocka_unit_test(test_file_mode_write_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
