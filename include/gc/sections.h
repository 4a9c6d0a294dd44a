/*
 * sections.h - one remote exec's output cut into marker-framed sections.
 *
 * An observation script prints, before each command's output, a line
 * `@@gc:<token>:<name>` (a fresh random token per run, so nothing the
 * target prints can fake a section), and ends with a section `end`: its
 * absence means the output was cut short.  The guest and KVM host drivers
 * share this; the ESXi observation batch has its own numbered framing
 * (esxi.h).  Batches of changes are framed alike (gc_batch_parse).
 */
#ifndef GC_SECTIONS_H
#define GC_SECTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "gc/error.h"

/* Sections past this many are dropped (a script has a fixed, small set). */
#define GC_SECTIONS_MAX 64

struct gc_section {
	const char *name; /* points into the text handed to gc_sections_split() */
	size_t nlen;
	char *body; /* NUL-terminated copy, without the marker's own newline */
};

struct gc_sections {
	struct gc_section v[GC_SECTIONS_MAX];
	size_t n;
};

/* Cut text[0..len) at the marker lines of `token` (16 hex).  s must be
 * zeroed; free with gc_sections_free().  The names borrow from text. */
void gc_sections_split(struct gc_sections *s, const char *token, const char *text, size_t len);
void gc_sections_free(struct gc_sections *s);
/* The body of the first section called name, or NULL when none came. */
const char *gc_sections_get(const struct gc_sections *s, const char *name);
/* The same without surrounding blank space, gc_xmalloc'd; NULL when absent or empty. */
char *gc_sections_trimmed(const struct gc_sections *s, const char *name);

/*
 * A batch of n changing commands in one exec, each after a marker line
 * `@@gc:<token>:c<i>` (i from 0), the last line `@@gc:<token>:end`; the
 * script stops at the first command that fails (the ESXi driver's `&&`
 * chain, the guest driver's steps).  How far it got, from its standard
 * output (which may be cut short): `started` markers appeared (commands
 * 0..started-1 ran, or the last of them was running), `complete` when the
 * end marker did; last_out/last_len: the last started command's output
 * (inside text).  A marker is a whole line: a torn last line is text.
 * Markers out of order, twice, past n, or text before the first:
 * GC_EREMOTE.
 */
struct gc_batch {
	size_t started;
	bool complete;
	const char *last_out;
	size_t last_len;
};
int gc_batch_parse(struct gc_batch *out, const char *token, size_t n, const char *text,
		   size_t len, struct gc_error *err);

#endif
