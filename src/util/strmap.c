/*
 * strmap.c - the string hash map of include/gc/strmap.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc/strmap.h"
#include "gc/util.h"

#define FIRST_CAP 64

static size_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a, 64 bits */

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return (size_t)h;
}

struct gc_strmap *gc_strmap_new(void)
{
	struct gc_strmap *m = gc_xcalloc(1, sizeof(*m));

	m->cap = FIRST_CAP;
	m->slots = gc_xcalloc_huge(m->cap * sizeof(*m->slots));
	return m;
}

void gc_strmap_clear(struct gc_strmap *m)
{
	if (m->slots != NULL)
		gc_free_huge(m->slots, m->cap * sizeof(*m->slots));
	memset(m, 0, sizeof(*m));
}

void gc_strmap_free(struct gc_strmap *m)
{
	if (m == NULL)
		return;
	gc_strmap_clear(m);
	free(m);
}

/* The slot holding key, or the empty slot where it would go; cap > 0. */
static struct gc_strmap_slot *find(struct gc_strmap_slot *slots, size_t cap, const char *key,
				    size_t h)
{
	size_t i = h & (cap - 1);

	while (slots[i].key != NULL && (slots[i].hash != h || strcmp(slots[i].key, key) != 0))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

void *gc_strmap_get(const struct gc_strmap *m, const char *key)
{
	if (m->cap == 0 || key == NULL)
		return NULL;
	return find(m->slots, m->cap, key, hash(key))->value;
}

/* Room for one more key at most half full. */
static void reserve(struct gc_strmap *m)
{
	size_t cap;
	struct gc_strmap_slot *slots;

	if ((m->n + 1) * 2 <= m->cap)
		return;
	cap = m->cap ? m->cap * 2 : FIRST_CAP;
	slots = gc_xcalloc_huge(cap * sizeof(*slots));
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (m->slots[i].key == NULL)
			continue;
		/* keys are distinct: the first empty slot, no compare */
		for (j = m->slots[i].hash & (cap - 1); slots[j].key != NULL;
		     j = (j + 1) & (cap - 1))
			;
		slots[j] = m->slots[i];
	}
	if (m->slots != NULL)
		gc_free_huge(m->slots, m->cap * sizeof(*m->slots));
	m->slots = slots;
	m->cap = cap;
}

void *gc_strmap_put(struct gc_strmap *m, const char *key, void *value)
{
	struct gc_strmap_slot *s;
	size_t h = hash(key);
	void *old;

	reserve(m);
	s = find(m->slots, m->cap, key, h);
	old = s->value;
	if (s->key == NULL) {
		m->n++;
		s->hash = h;
	}
	s->key = key;
	s->value = value;
	return old;
}

void *gc_strmap_put_new(struct gc_strmap *m, const char *key, void *value)
{
	struct gc_strmap_slot *s;
	size_t h = hash(key);

	reserve(m);
	s = find(m->slots, m->cap, key, h);
	if (s->key != NULL)
		return s->value ? s->value : (void *)s;
	s->hash = h;
	s->key = key;
	s->value = value;
	m->n++;
	return NULL;
}
