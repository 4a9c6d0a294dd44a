/*
 * heap.h - a binary min-heap of size_t in a caller's array (room for every
 * element it will hold): Kahn's walks over the resources (src/graph/graph.c)
 * and the actions (src/plan/order.c), and the executor's queue of a
 * vCenter's actions (src/exec/schedule.c).
 * The smallest value is on top; equal values come out in no set order.
 */
#ifndef GC_HEAP_H
#define GC_HEAP_H

#include <stddef.h>

struct gc_heap {
	size_t *v;
	size_t n;
};

static inline void gc_heap_push(struct gc_heap *h, size_t x)
{
	size_t i = h->n++;

	while (i > 0 && h->v[(i - 1) / 2] > x) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = x;
}

/* The smallest; h->n must be > 0. */
static inline size_t gc_heap_pop(struct gc_heap *h)
{
	size_t top = h->v[0], x = h->v[--h->n], i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1] < h->v[c])
			c++;
		if (h->v[c] >= x)
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n > 0)
		h->v[i] = x;
	return top;
}

#endif
