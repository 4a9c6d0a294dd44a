/*
 * util.c - allocation that aborts on OOM, growable buffers, edit distance,
 * sets of names as one value, whole-file reads and the monotonic clock.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gc/util.h"
#include "utf8.h"

static void oom(size_t n)
{
	fprintf(stderr, "gpuclusterctl: out of memory allocating %zu bytes\n", n);
	abort();
}

void *gc_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		oom(n);
	return p;
}

void *gc_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		oom(n * size);
	return p;
}

/*
 * Prefaulting.  A large plan's first touch of its huge tables is the
 * kernel's work, not ours: `perf` put 40 % of a 10,000-host plan in
 * clear_page_erms, each fresh huge page zeroed (and, when the kernel has
 * none free, compacted for) on the planner's thread as it first writes.
 * So each mapping of gc_xcalloc_huge is queued for one worker thread that
 * faults it in ahead of the planner with MADV_POPULATE_WRITE (Linux 5.14,
 * madvise(2)), 2 MiB at a time: the pages are made present and writable
 * without their contents being touched, so the worker and the planner may
 * be in the same page at once and neither sees the other.  Where the
 * kernel lacks the advice (EINVAL) the worker stops and the planner faults
 * as before; where this process may run on one CPU only, no worker is
 * started (other_cpu), nor before it has mapped PF_FROM.  The work is the
 * same; it is done on another core.
 *
 * gc_free_huge takes a range out of the queue and waits while the worker
 * is inside it before unmapping, so the worker never populates what a later
 * mapping put at the same address.  The queue is a fixed ring: a mapping
 * that finds it full is simply not prefaulted.
 */
#define PF_RING 64

/* Prefaulting starts once a process has mapped this much through
 * gc_xcalloc_huge (in all, freed or not).  Below it the first touch is a
 * small part of the work (3 % of a 1,000-host plan's samples, which maps
 * about 44 MiB) and a second thread costs more than it saves: on the
 * 2-core machine a 1,000-host plan took 130 ms with the worker against 114
 * without, a 10,000-host one (335 MiB) 1,161 against 1,321 ms. */
#define PF_FROM ((size_t)64 << 20)

static size_t pf_mapped;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t work; /* the worker waits for a range */
	pthread_cond_t left; /* gc_free_huge waits for the worker to leave one */
	struct {
		unsigned char *p;
		size_t len;
	} ring[PF_RING];
	unsigned head, count;                  /* the queue: ring[head], ring[head + 1] ... */
	unsigned char *busy;                   /* the 2 MiB the worker populates now, or NULL */
	enum { PF_OFF, PF_ON, PF_NONE } state; /* no worker yet, running, unavailable */
} pf = {.mu = PTHREAD_MUTEX_INITIALIZER,
        .work = PTHREAD_COND_INITIALIZER,
        .left = PTHREAD_COND_INITIALIZER};

static void *pf_worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pf.mu);
	for (;;) {
		unsigned char *step;
		int rc, err;

		/* ranges that gc_free_huge emptied are dropped unvisited */
		while (pf.count > 0 && pf.ring[pf.head].len == 0) {
			pf.head = (pf.head + 1) % PF_RING;
			pf.count--;
		}
		if (pf.count == 0) {
			pthread_cond_wait(&pf.work, &pf.mu);
			continue;
		}
		step = pf.ring[pf.head].p;
		pf.ring[pf.head].p += GC_HUGE;
		pf.ring[pf.head].len -= GC_HUGE; /* every length is whole huge pages */
		if (pf.ring[pf.head].len == 0) {
			pf.head = (pf.head + 1) % PF_RING;
			pf.count--;
		}
		pf.busy = step;
		pthread_mutex_unlock(&pf.mu);
		rc = madvise(step, GC_HUGE, MADV_POPULATE_WRITE);
		err = errno;
		pthread_mutex_lock(&pf.mu);
		pf.busy = NULL;
		pthread_cond_broadcast(&pf.left);
		if (rc != 0 && err == EINVAL) {
			/* a kernel before 5.14: no prefaulting from here on */
			pf.state = PF_NONE;
			pf.count = 0;
			pthread_mutex_unlock(&pf.mu);
			return NULL;
		}
		/* ENOMEM and the like: that step is faulted by its first write */
	}
}

/* May this process run on more than one CPU?  On one (taskset -c 3, a
 * cgroup of one), the worker would only take turns with the planner on it:
 * the 16-core device machine pinned to one core timed a 10,000-host plan at
 * 948 ms with the worker against 890 ms without. */
static bool other_cpu(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) > 1;
}

/* Queue [p, p + len) (whole huge pages) for the worker; start it first. */
static void pf_queue(unsigned char *p, size_t len)
{
	pthread_mutex_lock(&pf.mu);
	if (pf.state == PF_OFF && !other_cpu())
		pf.state = PF_NONE;
	if (pf.state == PF_OFF) {
		pthread_attr_t at;
		pthread_t th;
		sigset_t all, old;

		/* the worker takes no signal: the CLI's handlers run on its own
		 * threads, and a worker's default signal mask is its creator's */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&at, 64 * 1024);
		pf.state = pthread_create(&th, &at, pf_worker, NULL) == 0 ? PF_ON : PF_NONE;
		pthread_attr_destroy(&at);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (pf.state == PF_ON && pf.count < PF_RING) {
		unsigned tail = (pf.head + pf.count) % PF_RING;

		pf.ring[tail].p = p;
		pf.ring[tail].len = len;
		pf.count++;
		pthread_cond_signal(&pf.work);
	}
	pthread_mutex_unlock(&pf.mu);
}

/* Is q in [p, p + len)?  As addresses: q may be in another mapping, and
 * comparing pointers into different objects is undefined in C. */
static bool within(const unsigned char *q, const unsigned char *p, size_t len)
{
	return (uintptr_t)q - (uintptr_t)p < len;
}

/* Nothing of [p, p + len) is queued or being populated once this returns. */
static void pf_forget(unsigned char *p, size_t len)
{
	pthread_mutex_lock(&pf.mu);
	if (pf.state == PF_ON) {
		for (unsigned i = 0; i < pf.count; i++) {
			unsigned k = (pf.head + i) % PF_RING;

			/* a queued range is the unqueued rest of one mapping */
			if (within(pf.ring[k].p, p, len))
				pf.ring[k].len = 0;
		}
		while (pf.busy != NULL && within(pf.busy, p, len))
			pthread_cond_wait(&pf.left, &pf.mu);
	}
	pthread_mutex_unlock(&pf.mu);
}

/* Zeroed memory for the big tables of a large plan (see util.h): from
 * GC_HUGE on, an anonymous mapping that starts on a 2 MiB boundary, advised
 * MADV_HUGEPAGE, its length rounded up to whole huge pages, and queued to be
 * prefaulted on another core (above). */
void *gc_xcalloc_huge(size_t n)
{
	size_t len, map, head;
	unsigned char *p;

	if (n < GC_HUGE)
		return gc_xcalloc(1, n);
	len = gc_huge_len(n);
	map = len + GC_HUGE; /* room to start on a 2 MiB boundary */
	p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		oom(len);
	head = (GC_HUGE - (uintptr_t)p % GC_HUGE) % GC_HUGE;
	if (head > 0)
		munmap(p, head);
	munmap(p + head + len, map - head - len);
	(void)madvise(p + head, len, MADV_HUGEPAGE); /* advice: THP may be off */
	if (__atomic_add_fetch(&pf_mapped, len, __ATOMIC_RELAXED) > PF_FROM)
		pf_queue(p + head, len);
	return p + head;
}

void gc_free_huge(void *p, size_t n)
{
	if (p == NULL)
		return;
	if (n < GC_HUGE) {
		free(p);
		return;
	}
	pf_forget(p, gc_huge_len(n));
	munmap(p, gc_huge_len(n));
}

void *gc_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		oom(n);
	return q;
}

char *gc_xstrdup(const char *s)
{
	return gc_xstrndup(s, strlen(s));
}

char *gc_xstrndup(const char *s, size_t n)
{
	char *p = gc_xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *gc_xasprintf(const char *fmt, ...)
{
	struct gc_buf b = GC_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	gc_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	return gc_buf_take(&b);
}

static void buf_reserve(struct gc_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need <= b->cap)
		return;
	if (b->cap == 0)
		b->cap = 64;
	while (b->cap < need)
		b->cap *= 2;
	b->ptr = gc_xrealloc(b->ptr, b->cap);
}

void gc_buf_grow_put(struct gc_buf *b, const void *data, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->ptr + b->len, data, n);
	b->len += n;
	b->ptr[b->len] = '\0';
}

void gc_buf_putc(struct gc_buf *b, char c)
{
	gc_buf_put(b, &c, 1);
}

size_t gc_utf8_seq(const unsigned char *p, uint32_t *cp)
{
	size_t n;
	uint32_t c, min;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2, c = p[0] & 0x1fu, min = 0x80;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3, c = p[0] & 0x0fu, min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4, c = p[0] & 0x07u, min = 0x10000;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		c = (c << 6) | (p[i] & 0x3fu);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

void gc_buf_put_shown(struct gc_buf *b, const char *s, bool multiline)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	while (*p != '\0') {
		const unsigned char *q = p;
		uint32_t cp = 0;
		size_t n;

		/* a run of printable ASCII goes as it is, in one piece */
		while ((*q >= 0x20 && *q < 0x7f) || *q == '\t' || (multiline && *q == '\n'))
			q++;
		if (q > p) {
			gc_buf_put(b, p, (size_t)(q - p));
			p = q;
			continue;
		}
		n = gc_utf8_seq(p, &cp);
		if (n == 0) {
			gc_buf_printf(b, "\\x%02x", *p);
			p++;
			continue;
		}
		if ((cp < 0x20 && cp != '\t' && !(multiline && cp == '\n')) ||
		    (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
		    (cp >= 0x2066 && cp <= 0x2069))
			gc_buf_printf(b, "\\u%04x", (unsigned)cp);
		else
			gc_buf_put(b, p, n);
		p += n;
	}
	gc_buf_puts(b, "");
}

void gc_buf_put_utf8(struct gc_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	while (*p != '\0') {
		uint32_t cp;
		size_t n = gc_utf8_seq(p, &cp);

		if (n == 0)
			gc_buf_puts(b, "\xef\xbf\xbd"); /* U+FFFD for the one byte */
		else
			gc_buf_put(b, p, n);
		p += n ? n : 1;
	}
	gc_buf_puts(b, "");
}

void gc_buf_vprintf(struct gc_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	size_t room;
	int n;

	/* formatted once into the room there is (most fit: a name, a line);
	 * only what does not fit is formatted again into a larger buffer */
	buf_reserve(b, 63);
	room = b->cap - b->len;
	va_copy(ap2, ap);
	n = vsnprintf(b->ptr + b->len, room, fmt, ap2);
	va_end(ap2);
	if (n < 0) {
		b->ptr[b->len] = '\0';
		return;
	}
	if ((size_t)n >= room) {
		buf_reserve(b, (size_t)n);
		vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	}
	b->len += (size_t)n;
}

void gc_buf_printf(struct gc_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gc_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void gc_buf_reset(struct gc_buf *b)
{
	b->len = 0;
	if (b->ptr)
		b->ptr[0] = '\0';
}

char *gc_buf_take(struct gc_buf *b)
{
	char *s = b->ptr ? b->ptr : gc_xstrdup("");

	b->ptr = NULL;
	b->len = b->cap = 0;
	return s;
}

void gc_buf_free(struct gc_buf *b)
{
	if (b == NULL)
		return;
	free(b->ptr);
	b->ptr = NULL;
	b->len = b->cap = 0;
}

const char *gc_buf_str(const struct gc_buf *b)
{
	return b->ptr ? b->ptr : "";
}

size_t gc_edit_distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t *row, i, j, best, result;

	if (la > 64 || lb > 64)
		return cap + 1;
	row = gc_xcalloc(lb + 1, sizeof(*row));
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		best = row[0];
		for (j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t v = diag + cost;

			if (row[j] + 1 < v)
				v = row[j] + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			row[j] = v;
			diag = up;
			if (v < best)
				best = v;
		}
		if (best > cap) {
			free(row);
			return cap + 1;
		}
	}
	result = row[lb];
	free(row);
	return result > cap ? cap + 1 : result;
}

const char *gc_did_you_mean(const char *word, const char *const *candidates, size_t n)
{
	size_t limit = strlen(word) / 3;
	size_t best_d, i;
	const char *best = NULL;

	if (limit < 2)
		limit = 2;
	best_d = limit + 1;
	for (i = 0; i < n; i++) {
		size_t d = gc_edit_distance(word, candidates[i], limit);

		if (d < best_d) {
			best_d = d;
			best = candidates[i];
		}
	}
	return best;
}

/* ---------------------------------------------------------------- sets of names */

int gc_strnatcmp(const char *a, const char *b)
{
	while (*a != '\0' && *b != '\0') {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			size_t na, nb;
			int c;

			while (*a == '0' && isdigit((unsigned char)a[1]))
				a++;
			while (*b == '0' && isdigit((unsigned char)b[1]))
				b++;
			na = strspn(a, "0123456789");
			nb = strspn(b, "0123456789");
			if (na != nb)
				return na < nb ? -1 : 1;
			if ((c = strncmp(a, b, na)) != 0)
				return c;
			a += na;
			b += nb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a == *b ? 0 : *a == '\0' ? -1 : 1;
}

static int natcmp_items(const void *x, const void *y)
{
	const char *a = *(const char *const *)x, *b = *(const char *const *)y;
	int c = gc_strnatcmp(a, b);

	return c != 0 ? c : strcmp(a, b); /* vmnic01 and vmnic1: still an order */
}

size_t gc_set_sort(const char **items, size_t n)
{
	size_t k = 0;

	if (n == 0)
		return 0;
	qsort(items, n, sizeof(*items), natcmp_items);
	for (size_t i = 1; i < n; i++)
		if (strcmp(items[i], items[k]) != 0)
			items[++k] = items[i];
	return k + 1;
}

void gc_buf_put_set(struct gc_buf *b, const char *const *items, size_t n)
{
	const char **v = gc_xcalloc(n, sizeof(*v));

	memcpy(v, items, n * sizeof(*v));
	n = gc_set_sort(v, n);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			gc_buf_putc(b, ',');
		gc_buf_puts(b, v[i]);
	}
	free(v);
}

/* s split at ',' into its sorted set, joined again into out. */
static void canonical_set(struct gc_buf *out, const char *s)
{
	char *copy = gc_xstrdup(s), *p = copy;
	size_t n = 1, k = 0;
	const char **items;

	for (const char *q = s; *q != '\0'; q++)
		n += *q == ',';
	items = gc_xcalloc(n, sizeof(*items));
	while (p != NULL) {
		char *next = strchr(p, ','), *end;

		if (next != NULL)
			*next++ = '\0';
		p += strspn(p, " \t");
		end = p + strlen(p);
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (*p != '\0')
			items[k++] = p;
		p = next;
	}
	gc_buf_put_set(out, items, k);
	free(items);
	free(copy);
}

bool gc_set_same(const char *a, const char *b)
{
	struct gc_buf x = GC_BUF_INIT, y = GC_BUF_INIT;
	bool same;

	if (a == NULL || b == NULL)
		return a == b;
	canonical_set(&x, a);
	canonical_set(&y, b);
	same = strcmp(gc_buf_str(&x), gc_buf_str(&y)) == 0;
	gc_buf_free(&x);
	gc_buf_free(&y);
	return same;
}

/* ---------------------------------------------------------------- files */

int gc_read_file(char **out, size_t *len, const char *path, size_t max, struct gc_error *err)
{
	struct gc_buf b = GC_BUF_INIT;
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gc_error_set_errno(err, GC_EIO, errno, "cannot open '%s'", path);
	/* read straight into a buffer of the file's size (a 10,000-host spec is
	 * 14 MB: growing it by doubling copied it twice over); a file that
	 * grows meanwhile, or a pipe, grows the buffer as it comes */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= max)
		buf_reserve(&b, (size_t)st.st_size + 1);
	for (;;) {
		ssize_t r;

		buf_reserve(&b, b.cap - b.len > 4096 ? 0 : 65536);
		r = read(fd, b.ptr + b.len, b.cap - b.len - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			gc_error_set_errno(err, GC_EIO, errno, "cannot read '%s'", path);
			goto fail;
		}
		if (r == 0)
			break;
		if (b.len + (size_t)r > max) {
			gc_error_set(err, GC_ENOMEM, "'%s' is larger than %zu bytes", path, max);
			goto fail;
		}
		b.len += (size_t)r;
		b.ptr[b.len] = '\0';
	}
	close(fd);
	if (len)
		*len = b.len;
	*out = gc_buf_take(&b);
	return 0;
fail:
	close(fd);
	gc_buf_free(&b);
	return err ? err->code : GC_EIO;
}

uint64_t gc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void gc_random_token(char out[17])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[8] = {0};
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, raw, sizeof(raw)) != (ssize_t)sizeof(raw))
			memset(raw, 0, sizeof(raw));
		close(fd);
	}
	if (raw[0] == 0 && raw[1] == 0) {
		uint64_t t = gc_now_ns() ^ (uint64_t)getpid() << 32;

		memcpy(raw, &t, sizeof(raw));
	}
	for (int i = 0; i < 8; i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[16] = '\0';
}
