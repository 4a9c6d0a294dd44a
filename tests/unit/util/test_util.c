/*
 * test_util.c - buffers, arena, string map, did-you-mean and the strict validators.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gc/arena.h"
#include "gc/pattern.h"
#include "gc/strmap.h"
#include "gc/util.h"

static void test_buf(void **state)
{
	struct gc_buf b = GC_BUF_INIT;
	char *s;

	assert_string_equal(gc_buf_str(&b), "");
	gc_buf_printf(&b, "%s-%d", "esx", 7);
	gc_buf_putc(&b, '!');
	assert_string_equal(gc_buf_str(&b), "esx-7!");
	assert_int_equal(b.len, 6);
	s = gc_buf_take(&b);
	assert_string_equal(s, "esx-7!");
	assert_null(b.ptr);
	free(s);
}

/* Formatting into the room a buffer has, and again when it does not fit:
 * appended text whole, after what was there, at every length around the
 * room, and in an arena past its stack buffer. */
static void test_printf_lengths(void **state)
{
	struct gc_arena a = GC_ARENA_INIT;
	char want[1200], arg[1100];

	(void)state;
	for (size_t len = 0; len < 1100; len += len < 300 ? 1 : 97) {
		struct gc_buf b = GC_BUF_INIT;
		char *p;

		memset(arg, 'x', len);
		arg[len] = '\0';
		gc_buf_puts(&b, "pre:");
		gc_buf_printf(&b, "<%s>%d", arg, 7);
		snprintf(want, sizeof(want), "pre:<%s>%d", arg, 7);
		assert_string_equal(gc_buf_str(&b), want);
		assert_int_equal(b.len, strlen(want));
		gc_buf_printf(&b, "%s", "!");
		assert_int_equal(b.len, strlen(want) + 1);
		gc_buf_free(&b);
		p = gc_arena_printf(&a, "[%s]", arg);
		assert_int_equal(strlen(p), len + 2);
		assert_int_equal(p[0], '[');
		assert_int_equal(p[len + 1], ']');
	}
	gc_arena_free(&a);
}

static void test_error_first_wins(void **state)
{
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_error_set(&err, GC_ENOTFOUND, "no host named '%s'", "esx9"), GC_ENOTFOUND);
	gc_error_set(&err, GC_EIO, "later");
	gc_error_prefix(&err, "plan: ");
	assert_int_equal(err.code, GC_ENOTFOUND);
	assert_string_equal(err.msg, "plan: no host named 'esx9'");
}

static void test_arena(void **state)
{
	struct gc_arena a = GC_ARENA_INIT;
	char *big = gc_arena_alloc(&a, 200000);
	char *s = gc_arena_printf(&a, "vm-%03d", 5);

	assert_non_null(big);
	assert_string_equal(s, "vm-005");
	assert_int_equal((uintptr_t)s % 16, 0);
	gc_arena_free(&a);
}

/* Every object gc_arena_alloc hands out is zero without a memset, so no
 * byte may be handed out twice: strings and objects interleaved across
 * chunk boundaries, up to chunks of huge pages (the arena grows its chunks
 * with what it holds), each object still zero and each string intact. */
static void test_arena_objects_stay_zero_across_chunks(void **state)
{
	struct gc_arena a = GC_ARENA_INIT;
	char *strs[64];
	int k = 0;

	(void)state;
	for (int i = 0; i < 40000; i++) {
		size_t n = 8 + (size_t)(i % 13) * 40;
		unsigned char *o = gc_arena_alloc(&a, n);
		char *s = gc_arena_printf(&a, "s%d-%0*d", i, i % 300, 7);

		for (size_t j = 0; j < n; j++)
			assert_int_equal(o[j], 0);
		assert_int_equal((uintptr_t)o % 8, 0);
		memset(o, 0xa5, n);
		if (i % 625 == 0)
			strs[k++] = s;
	}
	for (int i = 0; i < k; i++) {
		char want[400];

		snprintf(want, sizeof(want), "s%d-%0*d", i * 625, (i * 625) % 300, 7);
		assert_string_equal(strs[i], want);
	}
	assert_true(a.total > 2 * GC_HUGE); /* chunks of huge pages were used */
	gc_arena_free(&a);
}

static void test_xcalloc_huge(void **state)
{
	size_t sizes[] = {1, 4096, GC_HUGE - 1, GC_HUGE, GC_HUGE + 1, 3 * GC_HUGE + 17};

	(void)state;
	assert_int_equal(gc_huge_len(1), GC_HUGE);
	assert_int_equal(gc_huge_len(GC_HUGE), GC_HUGE);
	assert_int_equal(gc_huge_len(GC_HUGE + 1), 2 * GC_HUGE);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned char *p = gc_xcalloc_huge(sizes[i]);

		assert_int_equal(p[0], 0);
		assert_int_equal(p[sizes[i] - 1], 0);
		assert_int_equal(p[sizes[i] / 2], 0);
		if (sizes[i] >= GC_HUGE)
			assert_int_equal((uintptr_t)p % GC_HUGE, 0); /* whole huge pages */
		memset(p, 0x5a, sizes[i]);
		gc_free_huge(p, sizes[i]);
	}
	gc_free_huge(NULL, 0);
}

/* How many of [p, p + len)'s pages are resident (mincore). */
static size_t resident(const unsigned char *p, size_t len)
{
	size_t pages = len / 4096, n = 0;
	unsigned char *v = calloc(pages, 1);

	assert_non_null(v);
	assert_int_equal(mincore((void *)p, len, v), 0);
	for (size_t i = 0; i < pages; i++)
		n += v[i] & 1;
	free(v);
	return n;
}

/* Wait up to 20 s for all of [p, p + len) to be resident. */
static size_t wait_resident(const unsigned char *p, size_t len)
{
	size_t n = 0;

	for (int i = 0; i < 2000 && (n = resident(p, len)) < len / 4096; i++)
		usleep(10000);
	return n;
}

/* Map and free what it takes for prefaulting to start (util.c's PF_FROM:
 * 64 MiB in all). */
static void past_threshold(void)
{
	gc_free_huge(gc_xcalloc_huge(32 * GC_HUGE), 32 * GC_HUGE);
}

static int cpus(void)
{
	cpu_set_t set;

	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	return CPU_COUNT(&set);
}

/* What a fresh process does (main, GC_TEST_CHILD): "one-cpu", bound to one
 * CPU, leaves a mapping made past PF_FROM to be faulted in by its first
 * writes, since a worker would only take turns with this thread there;
 * "below", on every CPU it has, leaves the mappings of its first 64 MiB so. */
static int child(const char *what)
{
	const size_t len = 8 * GC_HUGE;
	unsigned char *p;

	if (strcmp(what, "one-cpu") == 0)
		past_threshold();
	p = gc_xcalloc_huge(len); /* 80 MiB in all or 16 */
	usleep(300000);
	return resident(p, len) == 0 ? 0 : 1;
}

/* Run this program again as child(what), bound to one CPU or not. */
static void run_child(const char *what, bool one_cpu)
{
	cpu_set_t one;
	pid_t pid;
	int status;

	assert_int_equal(sched_getaffinity(0, sizeof(one), &one), 0);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &one)) {
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			break;
		}
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* a fresh image: this one's worker, if started, is not in a
		 * fork's child, but its state is */
		char *argv[] = {"test_util", NULL};

		if ((one_cpu && sched_setaffinity(0, sizeof(one), &one) != 0) ||
		    setenv("GC_TEST_CHILD", what, 1) != 0)
			_exit(3);
		execv("/proc/self/exe", argv);
		_exit(4);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_xcalloc_huge_one_cpu(void **state)
{
	(void)state;
	run_child("one-cpu", true);
}

static void test_xcalloc_huge_below_threshold(void **state)
{
	(void)state;
	run_child("below", false);
}

/* A mapping of gc_xcalloc_huge is faulted in by the prefault worker
 * (util.c) without this thread touching it, stays zero, and what this
 * thread writes while the worker is in the same pages is kept. */
static void test_xcalloc_huge_prefault(void **state)
{
	const size_t len = 16 * GC_HUGE;
	unsigned char *probe, *p, *q;

	(void)state;
	if (cpus() < 2)
		skip(); /* one CPU: no worker (test_xcalloc_huge_one_cpu) */
	probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(probe != MAP_FAILED);
	if (madvise(probe, 4096, MADV_POPULATE_WRITE) != 0) {
		munmap(probe, 4096);
		skip(); /* a kernel before 5.14: nothing is prefaulted */
	}
	munmap(probe, 4096);
	past_threshold();

	p = gc_xcalloc_huge(len);
	assert_int_equal(wait_resident(p, len), len / 4096);
	for (size_t i = 0; i < len; i += 512)
		assert_int_equal(p[i], 0);

	/* written from the first byte on while the worker populates it */
	q = gc_xcalloc_huge(len);
	for (size_t i = 0; i < len; i += 64)
		q[i] = (unsigned char)(i / 64 * 31 + 1);
	assert_int_equal(wait_resident(q, len), len / 4096);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(q[i], i % 64 ? 0 : (unsigned char)(i / 64 * 31 + 1));
	gc_free_huge(p, len);
	gc_free_huge(q, len);
}

/* A mapping freed before the worker reached it, or while it is inside it,
 * is not populated afterwards: a fresh mapping put at the same address and
 * left untouched stays out of memory.  More mappings than the worker's
 * queue holds are made and freed, the queue's overflow among them. */
static void test_xcalloc_huge_free_queued(void **state)
{
	enum { N = 80 };
	const size_t len = 8 * GC_HUGE;
	unsigned char *p[N];

	(void)state;
	for (int i = 0; i < N; i++)
		p[i] = gc_xcalloc_huge(len);
	for (int i = N - 1; i >= 0; i--) {
		unsigned char *again;

		gc_free_huge(p[i], len);
		again = mmap(p[i], len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		assert_true(again == p[i]);
		p[i] = again;
	}
	usleep(300000); /* the worker, if it were to touch them, has had time */
	for (int i = 0; i < N; i++) {
		assert_int_equal(resident(p[i], len), 0);
		munmap(p[i], len);
	}
	/* and the worker still serves new mappings */
	p[0] = gc_xcalloc_huge(len);
	p[0][len - 1] = 7;
	assert_int_equal(p[0][0], 0);
	gc_free_huge(p[0], len);
}

/* The file read whole into a buffer of its size, and refused past max. */
static void test_read_file(void **state)
{
	char path[] = "/tmp/gc-test-util-XXXXXX";
	int fd = mkstemp(path);
	size_t n = 300000, len = 0;
	struct gc_error err = GC_ERROR_INIT;
	char *want = malloc(n), *got = NULL;

	(void)state;
	assert_true(fd >= 0);
	for (size_t i = 0; i < n; i++)
		want[i] = (char)('a' + i % 26);
	assert_int_equal(write(fd, want, n), (ssize_t)n);
	close(fd);
	assert_int_equal(gc_read_file(&got, &len, path, n, &err), 0);
	assert_int_equal(len, n);
	assert_memory_equal(got, want, n);
	assert_int_equal(got[n], '\0');
	free(got);
	got = NULL;
	assert_int_equal(gc_read_file(&got, &len, path, n - 1, &err), GC_ENOMEM);
	assert_null(got);
	assert_string_equal(err.msg + strlen(err.msg) - strlen("is larger than 299999 bytes"),
			    "is larger than 299999 bytes");
	unlink(path);
	free(want);
}

/* The one string map (the loader's indexes embed it zeroed; the graph and the
 * planner make it on the heap): first-wins and replacing inserts, lookups
 * across growth, keys compared by content, and an empty or cleared map. */
static void test_strmap(void **state)
{
	struct gc_strmap idx = {0}, *m = gc_strmap_new();
	static char keys[5000][16];
	int one = 1, two = 2;
	char copy[16];

	(void)state;
	assert_null(gc_strmap_get(&idx, "esx01")); /* zeroed: empty, no slots */
	assert_null(gc_strmap_get(&idx, NULL));
	for (int i = 0; i < 5000; i++) {
		snprintf(keys[i], sizeof(keys[i]), "esx%04d", i);
		assert_null(gc_strmap_put_new(&idx, keys[i], keys[i]));
	}
	assert_int_equal(idx.n, 5000);
	assert_true(idx.cap >= 10000); /* at most half full */
	for (int i = 0; i < 5000; i++) {
		snprintf(copy, sizeof(copy), "esx%04d", i); /* by content, not pointer */
		assert_ptr_equal(gc_strmap_get(&idx, copy), keys[i]);
	}
	assert_null(gc_strmap_get(&idx, "esx5000"));
	/* a name given twice keeps its first object */
	assert_ptr_equal(gc_strmap_put_new(&idx, "esx0042", &one), keys[42]);
	assert_ptr_equal(gc_strmap_get(&idx, "esx0042"), keys[42]);
	assert_int_equal(idx.n, 5000);
	gc_strmap_clear(&idx);
	assert_null(gc_strmap_get(&idx, "esx0001"));
	assert_int_equal(idx.cap, 0);
	assert_null(gc_strmap_put_new(&idx, "again", &one)); /* usable after a clear */
	assert_ptr_equal(gc_strmap_get(&idx, "again"), &one);
	gc_strmap_clear(&idx);

	/* insert or replace: the previous value back */
	assert_null(gc_strmap_put(m, "vm/a", &one));
	assert_ptr_equal(gc_strmap_put(m, "vm/a", &two), &one);
	assert_ptr_equal(gc_strmap_get(m, "vm/a"), &two);
	assert_int_equal(m->n, 1);
	/* present with a NULL value: put_new still says present */
	assert_null(gc_strmap_put(m, "vm/b", NULL));
	assert_non_null(gc_strmap_put_new(m, "vm/b", &one));
	assert_null(gc_strmap_get(m, "vm/b"));
	gc_strmap_free(m);
	gc_strmap_free(NULL);
}

static void test_did_you_mean(void **state)
{
	static const char *const keys[] = {"cpus", "memory_gb", "firmware", "gpus"};

	assert_string_equal(gc_did_you_mean("cpu", keys, 4), "cpus");
	assert_string_equal(gc_did_you_mean("memory_gib", keys, 4), "memory_gb");
	assert_null(gc_did_you_mean("totally_else", keys, 4));
}

/* Sets of names as one value: natural order, no repeats, any order in. */
static void test_sets(void **state)
{
	const char *v[] = {"vmnic10", "vmnic5", "vmnic4", "vmnic5", "vmnic05"};
	static const char *const none[] = {NULL};
	struct gc_buf b = GC_BUF_INIT;

	assert_true(gc_strnatcmp("vmnic2", "vmnic10") < 0);
	assert_true(gc_strnatcmp("vmnic10", "vmnic9") > 0);
	assert_true(gc_strnatcmp("vmnic", "vmnic0") < 0);
	assert_int_equal(gc_strnatcmp("eth0", "eth0"), 0);
	assert_true(gc_strnatcmp("a1b", "a1c") < 0);
	gc_buf_put_set(&b, v, 5);
	assert_string_equal(gc_buf_str(&b), "vmnic4,vmnic05,vmnic5,vmnic10");
	/* the items themselves are left as they were */
	assert_string_equal(v[0], "vmnic10");
	gc_buf_reset(&b);
	gc_buf_put_set(&b, none, 0);
	assert_string_equal(gc_buf_str(&b), "");
	gc_buf_free(&b);
	assert_int_equal(gc_set_sort(v, 5), 4);
	assert_string_equal(v[0], "vmnic4");
	assert_string_equal(v[3], "vmnic10");

	assert_true(gc_set_same("vmnic4,vmnic5", "vmnic5,vmnic4"));
	assert_true(gc_set_same(" vmnic4 ,vmnic5,", "vmnic5,vmnic4"));
	assert_true(gc_set_same("vmnic4,vmnic4", "vmnic4"));
	assert_true(gc_set_same("", ""));
	assert_true(gc_set_same(NULL, NULL));
	assert_false(gc_set_same("vmnic4", "vmnic4,vmnic5"));
	assert_false(gc_set_same("vmnic4,vmnic5", "vmnic4,vmnic6"));
	assert_false(gc_set_same("vmnic4", NULL));
	assert_false(gc_set_same("", "vmnic4"));
	(void)state;
}

static void test_patterns(void **state)
{
	assert_true(gc_valid_pci("0000:3b:00.0"));
	assert_false(gc_valid_pci("0000:3b:00.8"));
	assert_false(gc_valid_pci("0000:3b:00.0;reboot"));
	assert_true(gc_valid_host("esx-01.lab.example"));
	assert_true(gc_valid_host("127.0.0.11"));
	assert_false(gc_valid_host("esx01;reboot"));
	assert_false(gc_valid_host("-esx"));
	assert_false(gc_valid_host("1.2.3"));
	assert_false(gc_valid_host("300.1.1.1"));
	assert_true(gc_valid_abs_path("/vmfs/volumes/ds1/NVD-AIE-800_525.105.14.zip"));
	assert_false(gc_valid_abs_path("/vmfs/$(reboot).zip"));
	assert_false(gc_valid_abs_path("/vmfs/../etc/passwd"));
	assert_false(gc_valid_abs_path("relative/path"));
	assert_false(gc_valid_abs_path("/"));
	assert_false(gc_valid_abs_path("/vmfs/volumes/"));
	assert_true(gc_valid_version("8.0.2"));
	assert_false(gc_valid_version("-rf"));
	assert_false(gc_valid_version("--help"));
	assert_true(gc_valid_ifname("vmk1"));
	assert_false(gc_valid_ifname("vmk1 "));
	assert_true(gc_valid_port_range("1/1-1/32"));
	assert_true(gc_valid_port_range("1/1-1/4,1/9,1/10/2"));
	assert_false(gc_valid_port_range("1/1-"));
	assert_false(gc_valid_port_range("1/1;reload"));
	assert_true(gc_valid_vgpu_profile("grid_t4-16c"));
	assert_false(gc_valid_vgpu_profile("grid T4"));
	assert_true(gc_valid_label("VM Network"));
	assert_false(gc_valid_label("a'b"));
	assert_false(gc_valid_label("caf\xc3\xa9"));
}

static void test_shell_quote(void **state)
{
	struct gc_buf b = GC_BUF_INIT;

	gc_shell_quote(&b, "it's $(x)");
	assert_string_equal(gc_buf_str(&b), "'it'\\''s $(x)'");
	gc_buf_free(&b);
}

static char *shown(const char *s, bool multiline)
{
	struct gc_buf b = GC_BUF_INIT;

	gc_buf_put_shown(&b, s, multiline);
	return gc_buf_take(&b);
}

#define assert_shown(in, multiline, want)                                                         \
	do {                                                                                      \
		char *got_ = shown(in, multiline);                                                \
		assert_string_equal(got_, want);                                                  \
		free(got_);                                                                       \
	} while (0)

static void test_shown_text_cannot_drive_the_terminal(void **state)
{
	(void)state;
	/* text, tabs and UTF-8 pass as they are */
	assert_shown("Invalid configuration for device '0'.", false,
		     "Invalid configuration for device '0'.");
	assert_shown("a\tb — 𝛑 ✓", false, "a\tb — 𝛑 ✓");
	assert_shown("", false, "");
	assert_shown(NULL, false, "");
	/* a screen clear, a window title, a carriage return, a forged plan line */
	assert_shown("\033[2J\033]0;owned\a", false, "\\u001b[2J\\u001b]0;owned\\u0007");
	assert_shown("32\r    ~ ok", false, "32\\u000d    ~ ok");
	assert_shown("32\n    - vm/x", false, "32\\u000a    - vm/x");
	assert_shown("line 1\nline 2", true, "line 1\nline 2");
	assert_shown("\x7f", false, "\\u007f");
	/* C1 controls (8-bit CSI) and bidirectional overrides, encoded in UTF-8 */
	assert_shown("\xc2\x9b" "2J", false, "\\u009b2J");
	assert_shown("abc\xe2\x80\xae" "def", false, "abc\\u202edef");
	assert_shown("\xe2\x81\xa6x\xe2\x81\xa9", false, "\\u2066x\\u2069");
	/* bytes that are not UTF-8: stray, overlong, surrogate, cut short */
	assert_shown("\xff\xfe", false, "\\xff\\xfe");
	assert_shown("\xc0\xaf", false, "\\xc0\\xaf");
	assert_shown("\xed\xa0\x80", false, "\\xed\\xa0\\x80");
	assert_shown("ok\xe2\x82", false, "ok\\xe2\\x82");
}

static void test_put_utf8_keeps_json_utf8(void **state)
{
	struct gc_buf b = GC_BUF_INIT;

	(void)state;
	gc_buf_put_utf8(&b, "caf\xc3\xa9 \xf0\x9d\x9b\x91\t\033");
	assert_string_equal(gc_buf_str(&b), "caf\xc3\xa9 \xf0\x9d\x9b\x91\t\033"); /* as it is */
	gc_buf_reset(&b);
	/* stray, overlong, surrogate, cut short: one U+FFFD per byte */
	gc_buf_put_utf8(&b, "caf\xe9\"|\xc0\xaf|\xed\xa0\x80|ok\xe2\x82");
	assert_string_equal(gc_buf_str(&b), "caf\xef\xbf\xbd\"|\xef\xbf\xbd\xef\xbf\xbd|"
					    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|ok"
					    "\xef\xbf\xbd\xef\xbf\xbd");
	gc_buf_reset(&b);
	gc_buf_put_utf8(&b, NULL);
	assert_string_equal(gc_buf_str(&b), "");
	gc_buf_free(&b);
}

int main(void)
{
	if (getenv("GC_TEST_CHILD") != NULL)
		return child(getenv("GC_TEST_CHILD"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf),          cmocka_unit_test(test_error_first_wins),
		cmocka_unit_test(test_printf_lengths),
		cmocka_unit_test(test_arena),        cmocka_unit_test(test_did_you_mean),
		cmocka_unit_test(test_arena_objects_stay_zero_across_chunks),
		cmocka_unit_test(test_xcalloc_huge), cmocka_unit_test(test_xcalloc_huge_prefault),
		cmocka_unit_test(test_xcalloc_huge_free_queued),
		cmocka_unit_test(test_xcalloc_huge_one_cpu),
		cmocka_unit_test(test_xcalloc_huge_below_threshold), cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_sets),          cmocka_unit_test(test_strmap),
		cmocka_unit_test(test_patterns),     cmocka_unit_test(test_shell_quote),
		cmocka_unit_test(test_shown_text_cannot_drive_the_terminal),
		cmocka_unit_test(test_put_utf8_keeps_json_utf8),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
