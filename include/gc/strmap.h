/*
 * strmap.h - string -> pointer hash map: open addressing, FNV-1a, linear
 * probing, at most half full, the hash stored beside the key so a probe
 * compares strings only on a hash match.  Nothing is ever removed, so there
 * are no tombstones.  Keys are borrowed: the caller keeps them alive (they
 * live in an arena beside the map).  The slot array comes from
 * gc_xcalloc_huge (huge pages once it is large: a 10,000-host spec's maps
 * are megabytes).
 *
 * A zeroed struct gc_strmap is an empty map (the spec loader embeds its
 * indexes and frees them with gc_strmap_clear); gc_strmap_new/gc_strmap_free
 * make and free one on the heap (the graph and the planner).  Used by the
 * spec loader, the graph (resource ids) and the planner's observed store.
 */
#ifndef GC_STRMAP_H
#define GC_STRMAP_H

#include <stddef.h>

struct gc_strmap_slot {
	const char *key;
	void *value;
	size_t hash;
};

struct gc_strmap {
	struct gc_strmap_slot *slots;
	size_t cap; /* a power of two; 0 for an empty map that has no slots yet */
	size_t n;
};

struct gc_strmap *gc_strmap_new(void);
/* Frees the map made by gc_strmap_new (NULL is fine). */
void gc_strmap_free(struct gc_strmap *m);
/* Frees an embedded map's slots and leaves it empty. */
void gc_strmap_clear(struct gc_strmap *m);
/* The value of key, or NULL (also for a NULL key). */
void *gc_strmap_get(const struct gc_strmap *m, const char *key);
/* Insert or replace; returns the previous value or NULL. */
void *gc_strmap_put(struct gc_strmap *m, const char *key, void *value);
/* Insert only when absent: returns the existing value (the map unchanged;
 * a non-NULL pointer even when that value is NULL), or NULL after
 * inserting. */
void *gc_strmap_put_new(struct gc_strmap *m, const char *key, void *value);

#endif
