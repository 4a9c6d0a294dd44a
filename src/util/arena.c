/*
 * arena.c - bump allocator: chunks of at least 64 KiB, each allocation
 * 8-byte aligned and zeroed (a copied string is packed and written whole
 * instead: the text of a 10,000-host plan copies millions); large requests
 * get a chunk of their own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/arena.h"
#include "gc/util.h"

struct gc_arena_chunk {
	struct gc_arena_chunk *next;
	size_t used;
	size_t size;
	_Alignas(16) unsigned char data[];
};

#define CHUNK_MIN (64u * 1024)

/* Objects are aligned for what the project stores in arenas (pointers,
 * sizes, doubles: 8 bytes), not for max_align_t's 16: a 40-byte node takes
 * 40 bytes, not 48.  Strings are packed (alignment 1).  A 10,000-host plan
 * holds millions of both. */
#define OBJ_ALIGN 8u
_Static_assert(_Alignof(void *) <= OBJ_ALIGN && _Alignof(double) <= OBJ_ALIGN &&
		       _Alignof(long long) <= OBJ_ALIGN && _Alignof(size_t) <= OBJ_ALIGN,
	       "arena objects need more than OBJ_ALIGN");

/* n bytes at the given alignment (a power of two), not zeroed */
static void *bump(struct gc_arena *a, size_t n, size_t align)
{
	struct gc_arena_chunk *c = a->head;
	size_t at;
	void *p;

	if (n == 0)
		n = 1;
	if (c != NULL) {
		at = (c->used + align - 1) & ~(align - 1);
		if (at <= c->size && c->size - at >= n)
			goto fits;
	}
	{
		size_t size = n > CHUNK_MIN ? n : CHUNK_MIN;

		c = gc_xmalloc(sizeof(*c) + size);
		c->used = 0;
		c->size = size;
		if (a->head != NULL && n > CHUNK_MIN) {
			/* keep the current chunk as head: it still has room */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
		at = 0;
	}
fits:
	p = c->data + at;
	a->total += at + n - c->used;
	c->used = at + n;
	return p;
}

void *gc_arena_alloc(struct gc_arena *a, size_t n)
{
	void *p = bump(a, n, OBJ_ALIGN);

	memset(p, 0, n);
	return p;
}

char *gc_arena_strndup(struct gc_arena *a, const char *s, size_t n)
{
	char *p = bump(a, n + 1, 1); /* every byte written here: no memset */

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *gc_arena_strdup(struct gc_arena *a, const char *s)
{
	return s ? gc_arena_strndup(a, s, strlen(s)) : NULL;
}

char *gc_arena_printf(struct gc_arena *a, const char *fmt, ...)
{
	struct gc_buf b = GC_BUF_INIT;
	va_list ap;
	char *p;

	va_start(ap, fmt);
	gc_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	p = gc_arena_strndup(a, gc_buf_str(&b), b.len);
	gc_buf_free(&b);
	return p;
}

void *gc_arena_grow(struct gc_arena *a, void *old, size_t n, size_t elem)
{
	void *p = gc_arena_alloc(a, (n + 1) * elem);

	if (old != NULL && n > 0)
		memcpy(p, old, n * elem);
	return p;
}

void gc_arena_free(struct gc_arena *a)
{
	struct gc_arena_chunk *c = a->head;

	while (c != NULL) {
		struct gc_arena_chunk *next = c->next;

		free(c);
		c = next;
	}
	a->head = NULL;
	a->total = 0;
}
