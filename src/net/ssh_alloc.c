/*
 * ssh_alloc.c - the memory of one libssh2 session, reclaimed whole.
 *
 * libssh2 1.10.0 (Debian 12's) leaks the two 32-byte curve25519 key halves
 * of a key exchange that never finishes: a host that closes the connection
 * after its KEXINIT (a guest in the middle of its reboot does exactly that)
 * leaves them behind when the session is freed.  Found by LeakSanitizer in
 * the guest lab's apply; reproduced by test_ssh's
 * test_handshake_stalls_mid_key_exchange.
 *
 * So every session is given allocators of ours (libssh2_session_init_ex)
 * that keep each of its blocks on a list.  Once libssh2_session_free() has
 * returned, whatever is still on the list is the library's leak and is freed
 * here, and counted (gc_ssh_stats.leftover_blocks).  A session is used by one
 * thread at a time, but the list has a lock of its own anyway: it costs
 * nothing measurable beside a network round trip.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#include "gc/util.h"

#include "ssh_int.h"

/* The header before each block; the union keeps the block aligned as malloc's are. */
union block {
	struct {
		union block *prev, *next;
	} l;
	max_align_t align;
};

struct gc_ssh_arena {
	pthread_mutex_t lock;
	union block head; /* sentinel of a circular list */
};

static atomic_uint_fast64_t stat_leftover;

struct gc_ssh_arena *gc_ssh_arena_new(void)
{
	struct gc_ssh_arena *a = gc_xcalloc(1, sizeof(*a));

	pthread_mutex_init(&a->lock, NULL);
	a->head.l.prev = a->head.l.next = &a->head;
	return a;
}

static void link_block(struct gc_ssh_arena *a, union block *b)
{
	pthread_mutex_lock(&a->lock);
	b->l.prev = &a->head;
	b->l.next = a->head.l.next;
	a->head.l.next->l.prev = b;
	a->head.l.next = b;
	pthread_mutex_unlock(&a->lock);
}

static void unlink_block(struct gc_ssh_arena *a, union block *b)
{
	pthread_mutex_lock(&a->lock);
	b->l.prev->l.next = b->l.next;
	b->l.next->l.prev = b->l.prev;
	pthread_mutex_unlock(&a->lock);
}

void *gc_ssh_arena_alloc(size_t count, void **abstract)
{
	struct gc_ssh_arena *a = *abstract;
	union block *b;

	if (count > SIZE_MAX - sizeof(*b) || (b = malloc(sizeof(*b) + count)) == NULL)
		return NULL; /* libssh2 reports its own allocation failures */
	link_block(a, b);
	return b + 1;
}

void gc_ssh_arena_release(void *ptr, void **abstract)
{
	union block *b;

	if (ptr == NULL)
		return;
	b = (union block *)ptr - 1;
	unlink_block(*abstract, b);
	free(b);
}

void *gc_ssh_arena_realloc(void *ptr, size_t count, void **abstract)
{
	struct gc_ssh_arena *a = *abstract;
	union block *b, *nb;

	if (ptr == NULL)
		return gc_ssh_arena_alloc(count, abstract);
	if (count > SIZE_MAX - sizeof(*b))
		return NULL;
	b = (union block *)ptr - 1;
	unlink_block(a, b);
	nb = realloc(b, sizeof(*b) + count);
	if (nb == NULL) { /* the old block is still valid: keep it on the list */
		link_block(a, b);
		return NULL;
	}
	link_block(a, nb);
	return nb + 1;
}

size_t gc_ssh_arena_free(struct gc_ssh_arena *a)
{
	size_t n = 0;

	if (a == NULL)
		return 0;
	while (a->head.l.next != &a->head) {
		union block *b = a->head.l.next;

		a->head.l.next = b->l.next;
		free(b);
		n++;
	}
	pthread_mutex_destroy(&a->lock);
	free(a);
	atomic_fetch_add(&stat_leftover, n);
	return n;
}

uint64_t gc_ssh_arena_leftovers(bool reset)
{
	return reset ? atomic_exchange(&stat_leftover, 0) : atomic_load(&stat_leftover);
}
