/*
 * jsonw.h - a streaming JSON writer (src/util/jsonw.c): a document goes out
 * value by value, into a FILE* in 64 KiB pieces or into a gc_buf, and no
 * tree of it is ever held.  The bytes are those json-c's
 * json_object_to_json_string_ext() writes for the same tree with the same
 * flags (layout, escaping, integers), so a renderer can move from json-c
 * trees to this writer without changing its output; tests/unit/util and
 * fuzz/fuzz_jsonw.c compare the two.
 *
 *	struct gc_jsonw w;
 *
 *	gc_jsonw_init_file(&w, stdout, GC_JSONW_PRETTY | GC_JSONW_SPACED | GC_JSONW_NOSLASHESCAPE);
 *	gc_jsonw_object_begin(&w);
 *	gc_jsonw_key(&w, "name");
 *	gc_jsonw_text(&w, host_said);
 *	gc_jsonw_object_end(&w);
 *	gc_jsonw_raw(&w, "\n", 1);
 *	if (gc_jsonw_finish(&w, &err) != 0) ...
 *
 * Misuse (a value where a key is due, an end that does not match its
 * begin, more than GC_JSONW_DEPTH levels) is a bug and asserts.
 */
#ifndef GC_JSONW_H
#define GC_JSONW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gc/error.h"
#include "gc/util.h"

/* Layout flags, each meaning what json-c's JSON_C_TO_STRING_<same> means
 * (0 is JSON_C_TO_STRING_PLAIN). */
#define GC_JSONW_SPACED        1u  /* "key": value; without PRETTY also [ 1, 2 ] and { } */
#define GC_JSONW_PRETTY        2u  /* a line per member, two spaces per level */
#define GC_JSONW_NOSLASHESCAPE 16u /* '/' as it is, not \/ */

#define GC_JSONW_DEPTH 64

struct gc_jsonw {
	struct gc_buf *out;    /* where bytes go: &pending, or the caller's buffer */
	struct gc_buf pending; /* file mode: bytes not yet written to f */
	FILE *f;               /* NULL: everything stays in *out */
	unsigned flags;
	int depth;          /* containers open */
	bool key_written;   /* an object member's key is out, its value is due */
	uint64_t has_child; /* bit d: the container at depth d+1 has a member */
	uint64_t is_object; /* bit d: the container at depth d+1 is an object */
	int errnum;         /* the first failed write's errno; nothing is written after it */
};

/* Write to f (which stays the caller's), buffered here. */
void gc_jsonw_init_file(struct gc_jsonw *w, FILE *f, unsigned flags);
/* Append to out (which stays the caller's). */
void gc_jsonw_init_buf(struct gc_jsonw *w, struct gc_buf *out, unsigned flags);
/* Write what is pending to the file (not fflush()ed: the FILE is the
 * caller's) and release the writer.  0, or GC_EIO with the first write
 * error.  The document must be complete (every container ended). */
int gc_jsonw_finish(struct gc_jsonw *w, struct gc_error *err);

void gc_jsonw_object_begin(struct gc_jsonw *w);
void gc_jsonw_object_end(struct gc_jsonw *w);
void gc_jsonw_array_begin(struct gc_jsonw *w);
void gc_jsonw_array_end(struct gc_jsonw *w);
/* An object member's name (escaped as a string is); its value comes next. */
void gc_jsonw_key(struct gc_jsonw *w, const char *key);

/* A string of our own words, bytes as they are (json_object_new_string);
 * NULL writes null. */
void gc_jsonw_string(struct gc_jsonw *w, const char *s);
/* n bytes, NUL included (json_object_new_string_len). */
void gc_jsonw_string_len(struct gc_jsonw *w, const char *s, size_t n);
/* Text read from a user's file or a host: each byte that is not part of
 * well-formed UTF-8 becomes U+FFFD, as gc_json_text() does; NULL writes null. */
void gc_jsonw_text(struct gc_jsonw *w, const char *s);
void gc_jsonw_int(struct gc_jsonw *w, int64_t v);
void gc_jsonw_bool(struct gc_jsonw *w, bool v);
void gc_jsonw_null(struct gc_jsonw *w);
/* Bytes as they are, outside any value: the newline after a document. */
void gc_jsonw_raw(struct gc_jsonw *w, const char *s, size_t n);

#endif
