/*
 * hash.c - two small open-addressing hash tables for the loader: names and
 * PCI addresses to objects (spec_strmap) and model fields to the mark of the
 * YAML node they came from (spec_markmap).
 *
 * Linear probing, capacity a power of two kept at most half full, FNV-1a for
 * strings and a multiplicative mix for pointers.  Keys are borrowed; nothing
 * is ever removed, so there are no tombstones.  A 10,000-host spec stays
 * O(n) overall.
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

static uint64_t ptr_hash(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static void strmap_grow(struct spec_strmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64, i;
	const char **keys = gc_xcalloc(cap, sizeof(*keys));
	void **vals = gc_xcalloc(cap, sizeof(*vals));

	for (i = 0; i < m->cap; i++) {
		size_t j;

		if (m->keys[i] == NULL)
			continue;
		j = str_hash(m->keys[i]) & (cap - 1);
		while (keys[j] != NULL)
			j = (j + 1) & (cap - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
}

void *spec_strmap_put(struct spec_strmap *m, const char *key, void *val)
{
	size_t j;

	if ((m->n + 1) * 2 > m->cap)
		strmap_grow(m);
	j = str_hash(key) & (m->cap - 1);
	while (m->keys[j] != NULL) {
		if (strcmp(m->keys[j], key) == 0)
			return m->vals[j];
		j = (j + 1) & (m->cap - 1);
	}
	m->keys[j] = key;
	m->vals[j] = val;
	m->n++;
	return NULL;
}

void *spec_strmap_get(const struct spec_strmap *m, const char *key)
{
	size_t j;

	if (m->cap == 0 || key == NULL)
		return NULL;
	j = str_hash(key) & (m->cap - 1);
	while (m->keys[j] != NULL) {
		if (strcmp(m->keys[j], key) == 0)
			return m->vals[j];
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

void spec_strmap_free(struct spec_strmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static void markmap_grow(struct spec_markmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 256, i;
	const void **keys = gc_xcalloc(cap, sizeof(*keys));
	struct gc_mark *vals = gc_xcalloc(cap, sizeof(*vals));

	for (i = 0; i < m->cap; i++) {
		size_t j;

		if (m->keys[i] == NULL)
			continue;
		j = ptr_hash(m->keys[i]) & (cap - 1);
		while (keys[j] != NULL)
			j = (j + 1) & (cap - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
}

void spec_markmap_put(struct spec_markmap *m, const void *key, struct gc_mark mark)
{
	size_t j;

	if ((m->n + 1) * 2 > m->cap)
		markmap_grow(m);
	j = ptr_hash(key) & (m->cap - 1);
	while (m->keys[j] != NULL) {
		if (m->keys[j] == key) {
			m->vals[j] = mark;
			return;
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->keys[j] = key;
	m->vals[j] = mark;
	m->n++;
}

const struct gc_mark *spec_markmap_get(const struct spec_markmap *m, const void *key)
{
	size_t j;

	if (m->cap == 0)
		return NULL;
	j = ptr_hash(key) & (m->cap - 1);
	while (m->keys[j] != NULL) {
		if (m->keys[j] == key)
			return &m->vals[j];
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

void spec_markmap_free(struct spec_markmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
