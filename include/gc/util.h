/*
 * util.h - memory, growable buffers, small string helpers.
 *
 * Out-of-memory is not an error we recover from: gc_xmalloc() and friends
 * abort with a message.  Everything a remote host or a user can grow is
 * capped by the caller (see GC_*_MAX constants where they are used).
 */
#ifndef GC_UTIL_H
#define GC_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <stdint.h>
#include <stdlib.h>

#include "gc/error.h"

void *gc_xmalloc(size_t n);
void *gc_xcalloc(size_t n, size_t size);
void *gc_xrealloc(void *p, size_t n);
char *gc_xstrdup(const char *s);
char *gc_xstrndup(const char *s, size_t n);
char *gc_xasprintf(const char *fmt, ...) GC_PRINTF(1, 2);

/* Zeroed memory for large tables that are filled at once (the arenas' chunks,
 * the hash maps' slots of a large spec): n bytes from GC_HUGE on are a
 * mapping of their own in transparent huge pages where the kernel allows
 * them (MADV_HUGEPAGE), below it calloc.  A 10,000-host plan touched 200 MiB
 * 4 KiB at a time: 72,000 page faults, each zeroing a page that a memset
 * then wrote again.  Once a process has mapped 64 MiB this way, a worker
 * thread faults each new mapping in ahead of its first writes, on another
 * core (util.c, "Prefaulting").  Freed with gc_free_huge and the same n. */
#define GC_HUGE ((size_t)2 << 20) /* the x86-64 huge page */
static inline size_t gc_huge_len(size_t n)
{
	return (n + GC_HUGE - 1) & ~(GC_HUGE - 1);
}
void *gc_xcalloc_huge(size_t n);
void gc_free_huge(void *p, size_t n);

/* Growable NUL-terminated byte buffer. Zero-initialised is a valid empty buffer. */
struct gc_buf {
	char *ptr;
	size_t len;
	size_t cap;
};
#define GC_BUF_INIT {NULL, 0, 0}

/* Appends n bytes (and keeps a NUL after them).  Inline while the buffer
 * has room, the common case of the renderers' many small pieces (a plan's
 * text, plan --json: about 10 million at 10,000 hosts); gc_buf_grow_put()
 * grows it otherwise. */
void gc_buf_grow_put(struct gc_buf *b, const void *data, size_t n);
static inline void gc_buf_put(struct gc_buf *b, const void *data, size_t n)
{
	if (b->cap - b->len > n) {
		memcpy(b->ptr + b->len, data, n);
		b->len += n;
		b->ptr[b->len] = '\0';
		return;
	}
	gc_buf_grow_put(b, data, n);
}
/* inline: the length of a literal is then known where it is written (the
 * plan's text is mostly literals between values) */
static inline void gc_buf_puts(struct gc_buf *b, const char *s)
{
	gc_buf_put(b, s, strlen(s));
}
/* What printf's %s would write for s, without a format string: "(null)"
 * for NULL, as glibc does (the plan's text, 300,000 steps at 10,000 hosts) */
static inline void gc_buf_puts_s(struct gc_buf *b, const char *s)
{
	gc_buf_puts(b, s != NULL ? s : "(null)");
}
void gc_buf_putc(struct gc_buf *b, char c);
void gc_buf_printf(struct gc_buf *b, const char *fmt, ...) GC_PRINTF(2, 3);
void gc_buf_vprintf(struct gc_buf *b, const char *fmt, va_list ap) GC_VPRINTF(2);
void gc_buf_reset(struct gc_buf *b);
/* Returns the string (never NULL) and leaves b empty; caller frees. */
char *gc_buf_take(struct gc_buf *b);
void gc_buf_free(struct gc_buf *b);
/* Never NULL: "" for an empty buffer. */
const char *gc_buf_str(const struct gc_buf *b);

/*
 * Append s as it may be shown on a terminal: text that came from a remote
 * host (a device's error, a value vCenter holds) must not move the cursor,
 * retitle the window or forge a line of a plan.  Valid UTF-8 is copied;
 * control characters (C0 but tab, and newline unless `multiline`; DEL),
 * C1 controls and bidirectional overrides become \u00XX / \u202E, and a
 * byte that is not UTF-8 becomes \xNN.
 */
void gc_buf_put_shown(struct gc_buf *b, const char *s, bool multiline);
/* Append s with each byte that is not part of well-formed UTF-8 replaced by
 * U+FFFD (what JSON may carry); everything else as it is. */
void gc_buf_put_utf8(struct gc_buf *b, const char *s);

/* Levenshtein distance, capped at cap+1 (for did-you-mean hints). */
size_t gc_edit_distance(const char *a, const char *b, size_t cap);
/* The candidate closest to word within distance max(2, len/3), or NULL. */
const char *gc_did_you_mean(const char *word, const char *const *candidates, size_t n);

/*
 * Sets of names held as one value (a host's uplink pNICs: "vmnic4,vmnic5").
 * gc_strnatcmp() is strcmp() but a run of digits compares by its number
 * (vmnic2 before vmnic10).  gc_set_sort() sorts items that way in place,
 * drops repeats and returns how many are left.  gc_buf_put_set() appends
 * a sorted copy of items, without repeats, joined by ','.  gc_set_same()
 * says whether two such values hold the same names in any order (items
 * split at ',', blanks around them and empty items ignored).
 */
int gc_strnatcmp(const char *a, const char *b);
size_t gc_set_sort(const char **items, size_t n);
void gc_buf_put_set(struct gc_buf *b, const char *const *items, size_t n);
bool gc_set_same(const char *a, const char *b);

/* Read a whole file (capped at max bytes). *out is NUL-terminated; caller frees. */
int gc_read_file(char **out, size_t *len, const char *path, size_t max, struct gc_error *err);

/* Monotonic clock in nanoseconds. */
uint64_t gc_now_ns(void);
/* 16 hex characters from the kernel's CSPRNG (out: 17 bytes): markers that
 * a target's output cannot forge. */
void gc_random_token(char out[17]);

#define GC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* An intended fall-through between switch labels (gcc and clang). */
#if defined(__has_attribute)
#if __has_attribute(fallthrough)
#define GC_FALLTHROUGH __attribute__((fallthrough))
#endif
#endif
#ifndef GC_FALLTHROUGH
#define GC_FALLTHROUGH ((void)0)
#endif

/*
 * An environment hook of the lab tests (GC_TEST_*, GC_REBOOT_POLL_MS,
 * GC_GUEST_SHUTDOWN_TIMEOUT_MS): getenv(name) in a build with GC_TEST_HOOKS
 * (CMake, on with the tests), NULL in any other, so that an installed build
 * (-DGC_TESTS=OFF) has no test-only behaviour at all.
 */
static inline const char *gc_test_hook(const char *name)
{
#ifdef GC_TEST_HOOKS
	return getenv(name);
#else
	(void)name;
	return NULL;
#endif
}

#endif
