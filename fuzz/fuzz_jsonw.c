/*
 * fuzz_jsonw.c - libFuzzer target: the streaming JSON writer against json-c.
 *
 * The input is a small program.  Its first byte picks a layout (json-c's
 * flags: plain, spaced, pretty, pretty spaced, each with and without
 * NOSLASHESCAPE); each later byte is an operation (begin an object or an
 * array, end one, a string of the next bytes, text of the next bytes, an
 * integer, true, false, null), and a member of an object takes its key from
 * the bytes that follow.  Every operation goes both to the writer and into
 * a json-c tree; at the end the writer's bytes must be json-c's
 * serialization of the tree, byte for byte (text as gc_json_text() makes
 * it).  An input stops at its end or when the top-level value is complete.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "fuzz_check.h"
#include "gc/json.h"
#include "gc/jsonw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_DEPTH 48

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

struct prog {
	const uint8_t *p, *end;
	struct gc_jsonw w;
	json_object *root, *stack[MAX_DEPTH];
	int depth;
	unsigned nplaced;
	unsigned nkeys; /* json-c keeps one member per key: keys are made unique */
};

/* The next n (first byte % max) bytes, as they are. */
static size_t take(struct prog *g, const uint8_t **bytes, size_t max)
{
	size_t n = g->p < g->end ? *g->p++ % max : 0;

	if (n > (size_t)(g->end - g->p))
		n = (size_t)(g->end - g->p);
	*bytes = g->p;
	g->p += n;
	return n;
}

/* Place v (NULL is null) in the tree: the root, an array element, or an
 * object member under a key read from the input (the writer's key too). */
static void place(struct prog *g, json_object *v, char *key)
{
	json_object *parent = g->depth > 0 ? g->stack[g->depth - 1] : NULL;

	g->nplaced++;
	if (parent == NULL)
		g->root = v;
	else if (json_object_is_type(parent, json_type_array))
		json_object_array_add(parent, v);
	else
		json_object_object_add(parent, key, v);
}

/* Before a value: an object member's key, to both sides; NULL otherwise. */
static char *key_for(struct prog *g)
{
	const uint8_t *b;
	size_t n;
	char *key;

	if (g->depth == 0 || !json_object_is_type(g->stack[g->depth - 1], json_type_object))
		return NULL;
	n = take(g, &b, 12);
	key = malloc(n + 16);
	must(key != NULL);
	memcpy(key, b, n);
	snprintf(key + strnlen(key, n), 16, "#%u", g->nkeys++); /* up to a NUL, then unique */
	gc_jsonw_key(&g->w, key);
	return key;
}

static void step(struct prog *g)
{
	uint8_t op = *g->p++ % 10;
	const uint8_t *b;
	size_t n;
	char *key, *s;
	json_object *v;
	int64_t i = 0;

	if (op == 2) { /* end the innermost container */
		if (g->depth == 0)
			return;
		if (json_object_is_type(g->stack[--g->depth], json_type_object))
			gc_jsonw_object_end(&g->w);
		else
			gc_jsonw_array_end(&g->w);
		return;
	}
	if ((op == 0 || op == 1) && g->depth == MAX_DEPTH)
		return;
	key = key_for(g);
	switch (op) {
	case 0:
	case 1:
		v = op == 0 ? json_object_new_object() : json_object_new_array();
		place(g, v, key);
		g->stack[g->depth++] = v;
		if (op == 0)
			gc_jsonw_object_begin(&g->w);
		else
			gc_jsonw_array_begin(&g->w);
		break;
	case 3: /* a string, bytes as they are (NULs too) */
		n = take(g, &b, 64);
		place(g, json_object_new_string_len((const char *)b, (int)n), key);
		gc_jsonw_string_len(&g->w, (const char *)b, n);
		break;
	case 4: /* text: up to a NUL, made UTF-8 */
		n = take(g, &b, 64);
		s = malloc(n + 1);
		must(s != NULL);
		memcpy(s, b, n);
		s[n] = '\0';
		place(g, gc_json_text(s), key);
		gc_jsonw_text(&g->w, s);
		free(s);
		break;
	case 5:
		n = take(g, &b, 9);
		for (size_t k = 0; k < n; k++)
			i = (int64_t)((uint64_t)i << 8 | b[k]);
		place(g, json_object_new_int64(i), key);
		gc_jsonw_int(&g->w, i);
		break;
	case 6:
	case 7:
		place(g, json_object_new_boolean(op == 6), key);
		gc_jsonw_bool(&g->w, op == 6);
		break;
	default:
		place(g, NULL, key);
		gc_jsonw_null(&g->w);
		break;
	}
	free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prog g = {.p = data, .end = data + size};
	struct gc_buf out = GC_BUF_INIT;
	unsigned flags;
	const char *want;
	size_t n;

	if (size < 2)
		return 0;
	flags = layouts[*g.p++ % (sizeof(layouts) / sizeof(layouts[0]))];
	gc_jsonw_init_buf(&g.w, &out, flags);
	while (g.p < g.end && !(g.nplaced > 0 && g.depth == 0))
		step(&g);
	while (g.depth > 0) {
		if (json_object_is_type(g.stack[--g.depth], json_type_object))
			gc_jsonw_object_end(&g.w);
		else
			gc_jsonw_array_end(&g.w);
	}
	must(gc_jsonw_finish(&g.w, NULL) == 0);
	if (g.nplaced > 0) { /* else nothing was written, and json-c would say null */
		want = json_object_to_json_string_length(g.root, (int)flags, &n);
		must(out.len == n && memcmp(gc_buf_str(&out), want, n) == 0);
	}
	json_object_put(g.root);
	gc_buf_free(&out);
	return 0;
}
