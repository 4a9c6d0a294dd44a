/*
 * arena.c - bump allocator: chunks of at least 64 KiB, each allocation
 * 8-byte aligned and zeroed (a copied string is packed and written whole
 * instead: the text of a 10,000-host plan copies millions); large requests
 * get a chunk of their own.
 *
 * Every chunk starts zeroed (gc_xcalloc_huge) and the bump never hands a
 * byte out twice, so gc_arena_alloc needs no memset: what it returns has
 * never been written.  Chunks grow with the arena (each as large as what the
 * arena holds, from CHUNK_MIN up to CHUNK_BIG), so a large arena's chunks
 * are in huge pages: a 10,000-host plan's arenas hold about 200 MiB, and
 * touching that 4 KiB at a time cost 41,000 of its 72,000 page faults, the
 * kernel zeroing each page and the memset after it writing it again.
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
	size_t len; /* what gc_xcalloc_huge gave */
	_Alignas(16) unsigned char data[];
};

#define CHUNK_MIN (64u * 1024)
#define CHUNK_BIG (4 * GC_HUGE)

/* A zeroed chunk with room for at least size bytes: from GC_HUGE on, all of
 * its huge pages. */
static struct gc_arena_chunk *chunk_new(size_t size)
{
	size_t len = sizeof(struct gc_arena_chunk) + size;
	struct gc_arena_chunk *c;

	if (len >= GC_HUGE)
		len = gc_huge_len(len);
	c = gc_xcalloc_huge(len);
	c->len = len;
	c->size = len - sizeof(*c);
	return c;
}

/* Objects are aligned for what the project stores in arenas (pointers,
 * sizes, doubles: 8 bytes), not for max_align_t's 16: a 40-byte node takes
 * 40 bytes, not 48.  Strings are packed (alignment 1).  A 10,000-host plan
 * holds millions of both. */
#define OBJ_ALIGN 8u
_Static_assert(_Alignof(void *) <= OBJ_ALIGN && _Alignof(double) <= OBJ_ALIGN &&
		       _Alignof(long long) <= OBJ_ALIGN && _Alignof(size_t) <= OBJ_ALIGN,
	       "arena objects need more than OBJ_ALIGN");

/* n bytes at the given alignment (a power of two), never handed out
 * before: zero, as every chunk starts */
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
		/* as large as the arena so far, within [CHUNK_MIN, CHUNK_BIG] */
		size_t grow = a->total < CHUNK_MIN ? CHUNK_MIN : a->total < CHUNK_BIG ? a->total : CHUNK_BIG;
		size_t size = n > grow ? n : grow;

		c = chunk_new(size);
		if (a->head != NULL && n > grow) {
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
	return bump(a, n, OBJ_ALIGN); /* never handed out before: still zero */
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
	char small[256];
	va_list ap;
	char *p;
	int n;

	/* most are short (an id, a name): formatted once on the stack */
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(small))
		return gc_arena_strndup(a, small, (size_t)n);
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

		gc_free_huge(c, c->len);
		c = next;
	}
	a->head = NULL;
	a->total = 0;
}
