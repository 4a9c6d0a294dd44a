/*
 * json.h - writing JSON a piece at a time with json-c (src/util/json.c):
 * the plan's and validate's renderers write one action or check at a time
 * into a gc_buf, pretty-printed at their nesting depth, instead of building
 * one whole-document json-c tree.
 */
#ifndef GC_JSON_H
#define GC_JSON_H

#include <json-c/json.h>

#include "gc/util.h"

/* Serialize o (pretty, ": " spaced, '/' unescaped) as if nested `indent`
 * spaces deep (0..32), and release it. */
void gc_json_put(struct gc_buf *out, json_object *o, int indent);
/* `"key": ` at an indent (json-c escapes the key); the value follows. */
void gc_json_put_key(struct gc_buf *out, int indent, const char *key);
/* A JSON string of text read from a user's file or a host, NULL for NULL:
 * json-c copies bytes as they are, so every byte that is not part of
 * well-formed UTF-8 becomes U+FFFD and the document stays UTF-8. */
json_object *gc_json_text(const char *s);

#endif
