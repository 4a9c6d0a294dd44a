/*
 * hash.c - two small open-addressing hash tables for the loader: names and
 * PCI addresses to objects (spec_strmap).
 *
 * Linear probing over one array of slots (key and value side by side, one
 * cache miss per probe), capacity a power of two kept at most half full,
 * FNV-1a (the hash is stored to skip most strcmp calls).  Keys are borrowed; nothing is ever
 * removed, so there are no tombstones.  A 10,000-host spec stays O(n).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

static void strmap_resize(struct spec_strmap *m, size_t cap)
{
	struct spec_strmap_slot *slots = gc_xcalloc_huge(cap * sizeof(*slots));
	size_t i;

	for (i = 0; i < m->cap; i++) {
		size_t j;

		if (m->slots[i].key == NULL)
			continue;
		j = m->slots[i].hash & (cap - 1);
		while (slots[j].key != NULL)
			j = (j + 1) & (cap - 1);
		slots[j] = m->slots[i];
	}
	gc_free_huge(m->slots, m->cap * sizeof(*m->slots));
	m->slots = slots;
	m->cap = cap;
}

void *spec_strmap_put(struct spec_strmap *m, const char *key, void *val)
{
	uint64_t h = str_hash(key);
	size_t j;

	if ((m->n + 1) * 2 > m->cap)
		strmap_resize(m, m->cap ? m->cap * 2 : 64);
	j = h & (m->cap - 1);
	while (m->slots[j].key != NULL) {
		if (m->slots[j].hash == h && strcmp(m->slots[j].key, key) == 0)
			return m->slots[j].val;
		j = (j + 1) & (m->cap - 1);
	}
	m->slots[j].key = key;
	m->slots[j].hash = h;
	m->slots[j].val = val;
	m->n++;
	return NULL;
}

void *spec_strmap_get(const struct spec_strmap *m, const char *key)
{
	uint64_t h;
	size_t j;

	if (m->cap == 0 || key == NULL)
		return NULL;
	h = str_hash(key);
	j = h & (m->cap - 1);
	while (m->slots[j].key != NULL) {
		if (m->slots[j].hash == h && strcmp(m->slots[j].key, key) == 0)
			return m->slots[j].val;
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

void spec_strmap_free(struct spec_strmap *m)
{
	gc_free_huge(m->slots, m->cap * sizeof(*m->slots));
	memset(m, 0, sizeof(*m));
}
