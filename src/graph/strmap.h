/*
 * strmap.h - internal: string -> pointer hash map (open addressing, FNV-1a,
 * linear probing, grows at 1/2 load).  Keys are borrowed: the caller keeps
 * them alive (they live in an arena beside the map).  Used by the graph
 * (resource ids) and by the planner's observed store; not a public API.
 */
#ifndef GC_STRMAP_H
#define GC_STRMAP_H

#include <stddef.h>

struct gc_strmap_slot {
	const char *key;
	void *value;
	size_t hash; /* compared before the key: fewer cache misses */
};

struct gc_strmap {
	struct gc_strmap_slot *slots;
	size_t cap; /* power of two */
	size_t n;
};

struct gc_strmap *gc_strmap_new(void);
void gc_strmap_free(struct gc_strmap *m);
void *gc_strmap_get(const struct gc_strmap *m, const char *key);
/* Insert or replace; returns the previous value or NULL. */
void *gc_strmap_put(struct gc_strmap *m, const char *key, void *value);
/* Insert only when absent: returns the existing value (map unchanged), or NULL
 * after inserting. */
void *gc_strmap_put_new(struct gc_strmap *m, const char *key, void *value);

#endif
