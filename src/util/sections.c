/*
 * sections.c - cut an observation's output at its marker lines
 * (include/gc/sections.h).  A marker is a whole line `@@gc:<token>:<name>`;
 * everything up to the next marker is that section's body.  The script
 * prints each marker after a newline of its own (a command's output may
 * lack its last one), which is not part of the section before it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/sections.h"
#include "gc/util.h"

void gc_sections_split(struct gc_sections *s, const char *token, const char *text, size_t len)
{
	char mark[40];
	size_t ml = (size_t)snprintf(mark, sizeof(mark), "@@gc:%s:", token);
	const char *p = text, *end = text + len;
	struct gc_section *cur = NULL;
	const char *body = NULL;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if ((size_t)(le - p) > ml && memcmp(p, mark, ml) == 0) {
			/* the marker's own leading newline is not the section's */
			if (cur != NULL)
				cur->body = gc_xstrndup(body, (size_t)(p - body) -
				                                  (p > body && p[-1] == '\n'));
			cur = NULL;
			if (s->n < GC_SECTIONS_MAX) {
				cur = &s->v[s->n++];
				cur->name = p + ml;
				cur->nlen = (size_t)(le - p) - ml;
			}
			body = nl ? nl + 1 : end;
		}
		p = nl ? nl + 1 : end;
	}
	if (cur != NULL)
		cur->body = gc_xstrndup(body, (size_t)(end - body));
}

void gc_sections_free(struct gc_sections *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].body);
}

const char *gc_sections_get(const struct gc_sections *s, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < s->n; i++)
		if (n == s->v[i].nlen && memcmp(s->v[i].name, name, n) == 0)
			return s->v[i].body;
	return NULL;
}

char *gc_sections_trimmed(const struct gc_sections *s, const char *name)
{
	const char *t = gc_sections_get(s, name);
	size_t n;

	if (t == NULL)
		return NULL;
	while (*t == '\n' || *t == ' ' || *t == '\r' || *t == '\t')
		t++;
	n = strlen(t);
	while (n > 0 &&
	       (t[n - 1] == '\n' || t[n - 1] == ' ' || t[n - 1] == '\r' || t[n - 1] == '\t'))
		n--;
	return n > 0 ? gc_xstrndup(t, n) : NULL;
}

/* ---------------------------------------------------------------- batches */

/* The index of a "c<i>" tag within its length, or -1. */
static long command_tag(const char *tag, size_t len)
{
	long v = 0;

	if (len < 2 || len > 5 || tag[0] != 'c')
		return -1;
	for (size_t i = 1; i < len; i++) {
		if (tag[i] < '0' || tag[i] > '9')
			return -1;
		v = v * 10 + (tag[i] - '0');
	}
	return v;
}

int gc_batch_parse(struct gc_batch *out, const char *token, size_t n, const char *text,
			size_t len, struct gc_error *err)
{
	const char *p = text, *end = text + len;
	char prefix[64];
	size_t plen;

	memset(out, 0, sizeof(*out));
	plen = (size_t)snprintf(prefix, sizeof(prefix), "@@gc:%s:", token);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;
		size_t linelen = (size_t)((nl ? nl : end) - p);

		/* a marker is a whole line: a torn last one (the connection
		 * dropped in it) is the running command's text */
		if (nl != NULL && linelen > plen && memcmp(p, prefix, plen) == 0) {
			const char *tag = p + plen;
			size_t tlen = linelen - plen;
			long i = command_tag(tag, tlen);

			if (out->complete)
				return gc_error_set(err, GC_EREMOTE, "batch output goes on after its end");
			if (tlen == 3 && memcmp(tag, "end", 3) == 0) {
				if (out->started != n)
					return gc_error_set(err, GC_EREMOTE,
							    "batch ended after %zu of %zu commands",
							    out->started, n);
				out->complete = true;
			} else if (i < 0 || (size_t)i != out->started || (size_t)i >= n) {
				return gc_error_set(err, GC_EREMOTE, "unexpected batch marker");
			} else {
				out->started++;
				out->last_out = next;
				out->last_len = 0;
			}
		} else if (out->started == 0 && !out->complete && linelen > 0) {
			return gc_error_set(err, GC_EREMOTE, "batch output before its first marker");
		} else if (!out->complete && out->started > 0) {
			out->last_len = (size_t)(next - out->last_out);
		}
		p = next;
	}
	return 0;
}
