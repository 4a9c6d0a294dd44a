/*
 * strmap.c - open-addressing string hash map (see strmap.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc/util.h"
#include "strmap.h"

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

struct gc_strmap *gc_strmap_new(void)
{
	struct gc_strmap *m = gc_xcalloc(1, sizeof(*m));

	m->cap = 64;
	m->slots = gc_xcalloc_huge(m->cap * sizeof(*m->slots));
	return m;
}

void gc_strmap_free(struct gc_strmap *m)
{
	if (m == NULL)
		return;
	gc_free_huge(m->slots, m->cap * sizeof(*m->slots));
	free(m);
}

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
	return find(m->slots, m->cap, key, (size_t)hash(key))->value;
}

static void grow(struct gc_strmap *m)
{
	size_t cap = m->cap * 2;
	struct gc_strmap_slot *slots = gc_xcalloc_huge(cap * sizeof(*slots));

	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].key != NULL)
			*find(slots, cap, m->slots[i].key, m->slots[i].hash) = m->slots[i];
	gc_free_huge(m->slots, m->cap * sizeof(*m->slots));
	m->slots = slots;
	m->cap = cap;
}

void *gc_strmap_put(struct gc_strmap *m, const char *key, void *value)
{
	struct gc_strmap_slot *s;
	size_t h = (size_t)hash(key);
	void *old;

	if ((m->n + 1) * 2 > m->cap)
		grow(m);
	s = find(m->slots, m->cap, key, h);
	s->hash = h;
	old = s->value;
	if (s->key == NULL)
		m->n++;
	s->key = key;
	s->value = value;
	return old;
}

void *gc_strmap_put_new(struct gc_strmap *m, const char *key, void *value)
{
	struct gc_strmap_slot *s;
	size_t h = (size_t)hash(key);

	if ((m->n + 1) * 2 > m->cap)
		grow(m);
	s = find(m->slots, m->cap, key, h);
	if (s->key != NULL)
		return s->value ? s->value : (void *)s;
	s->hash = h;
	s->key = key;
	s->value = value;
	m->n++;
	return NULL;
}
