/*
 * arena.h - bump allocator for objects that live and die together (the
 * cluster model, the resource graph).  Freed all at once; never returns
 * NULL (out-of-memory aborts like gc_xmalloc).
 */
#ifndef GC_ARENA_H
#define GC_ARENA_H

#include <stddef.h>

#include "gc/error.h"

struct gc_arena_chunk;
struct gc_arena {
	struct gc_arena_chunk *head;
	size_t total; /* bytes handed out, for benchmarks */
};
#define GC_ARENA_INIT {NULL, 0}

void *gc_arena_alloc(struct gc_arena *a, size_t n);   /* zeroed, 8-aligned */
/* strings: packed, no alignment */
char *gc_arena_strdup(struct gc_arena *a, const char *s);
char *gc_arena_strndup(struct gc_arena *a, const char *s, size_t n);
char *gc_arena_printf(struct gc_arena *a, const char *fmt, ...) GC_PRINTF(2, 3);
/* Grow an arena array: returns a copy with room for n+1 elements. */
void *gc_arena_grow(struct gc_arena *a, void *old, size_t n, size_t elem);
void gc_arena_free(struct gc_arena *a);

#endif
