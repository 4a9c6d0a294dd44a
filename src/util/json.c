/*
 * json.c - gc_json_put / gc_json_put_key (include/gc/json.h): json-c
 * pretty-prints a value from column 0; re-indent each line it writes so a
 * renderer can emit a document one object at a time.  gc_json_text() keeps
 * a string UTF-8 (gc_buf_put_utf8) before json-c copies it.
 */
#include <assert.h>
#include <string.h>

#include "gc/json.h"

#define JSON_FLAGS \
	(JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

void gc_json_put(struct gc_buf *out, json_object *o, int indent)
{
	static const char spaces[] = "                                ";
	const char *s = json_object_to_json_string_ext(o, JSON_FLAGS), *nl;

	assert(indent >= 0 && (size_t)indent < sizeof(spaces));
	while ((nl = strchr(s, '\n')) != NULL) {
		gc_buf_put(out, s, (size_t)(nl - s) + 1);
		gc_buf_put(out, spaces, (size_t)indent);
		s = nl + 1;
	}
	gc_buf_puts(out, s);
	json_object_put(o);
}

void gc_json_put_key(struct gc_buf *out, int indent, const char *key)
{
	gc_buf_printf(out, "%*s", indent, "");
	gc_json_put(out, json_object_new_string(key), 0);
	gc_buf_puts(out, ": ");
}

json_object *gc_json_text(const char *s)
{
	struct gc_buf b = GC_BUF_INIT;
	json_object *o;

	if (s == NULL)
		return NULL;
	gc_buf_put_utf8(&b, s);
	o = json_object_new_string_len(gc_buf_str(&b), (int)b.len);
	gc_buf_free(&b);
	return o;
}
