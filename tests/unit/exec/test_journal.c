/*
 * test_journal.c - the journal survives torn writes and names what it saw;
 * the lock refuses a second holder by name and is freed by SIGKILL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gc/journal.h"
#include "gc/util.h"

static char dir[] = "/tmp/gc-journal-XXXXXX";

static int setup(void **state)
{
	char cmd[128];

	snprintf(dir, sizeof(dir), "/tmp/gc-journal-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(cmd, sizeof(cmd), "rmdir %s", dir);
	return system(cmd) == 0 ? 0 : -1; /* the journal must create it itself */
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_append_and_read(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_journal *j = NULL;
	struct gc_jhistory h;

	assert_int_equal(gc_journal_open(&j, dir, "lab", &err), 0);
	assert_int_equal(gc_journal_append(j, "esx01", "esx01/enter_maintenance", "enter_maintenance",
					   GC_J_START, NULL, &err), 0);
	assert_int_equal(gc_journal_append(j, "esx01", "esx01/enter_maintenance", "enter_maintenance",
					   GC_J_DONE, NULL, &err), 0);
	assert_int_equal(gc_journal_append(j, "esx01", "esx01/reboot", "reboot", GC_J_START,
					   "quote \" and\nnewline", &err), 0);
	gc_journal_close(j);

	assert_int_equal(gc_journal_read(&h, dir, "lab", &err), 0);
	assert_int_equal(h.n, 3);
	assert_string_equal(h.records[2].detail, "quote \" and\nnewline");
	assert_int_equal(h.records[0].state, GC_J_START);
	assert_int_equal(gc_jhistory_last(&h, "esx01", "reboot"), GC_J_START);
	assert_int_equal(gc_jhistory_last(&h, "esx01", "enter_maintenance"), GC_J_DONE);
	assert_int_equal(gc_jhistory_last(&h, "esx02", "reboot"), -1);
	gc_jhistory_free(&h);
}

static void test_torn_last_line_is_ignored(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_journal *j = NULL;
	struct gc_jhistory h;
	char path[256];
	int fd;

	assert_int_equal(gc_journal_open(&j, dir, "lab", &err), 0);
	assert_int_equal(gc_journal_append(j, "esx01", "a", "reboot", GC_J_DONE, NULL, &err), 0);
	gc_journal_close(j);
	snprintf(path, sizeof(path), "%s/lab.journal", dir);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"run\":\"x\",\"tar", 15), 15);
	close(fd);
	assert_int_equal(gc_journal_read(&h, dir, "lab", &err), 0);
	assert_int_equal(h.n, 1);
	gc_jhistory_free(&h);

	/* a corrupt line in the middle is an error naming the line */
	fd = open(path, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "\nnot json\n", 10), 10);
	close(fd);
	assert_int_equal(gc_journal_read(&h, dir, "lab", &err), GC_EIO);
	assert_non_null(strstr(err.msg, "lab.journal:2: corrupt journal record"));
}

static void test_lock_refuses_second_holder(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_lock *a = NULL, *b = NULL;
	char expect[64];

	assert_int_equal(gc_lock_acquire(&a, dir, "lab", &err), 0);
	assert_int_equal(gc_lock_acquire(&b, dir, "lab", &err), GC_ELOCKED);
	assert_null(b);
	snprintf(expect, sizeof(expect), "locked by another apply (pid %d on ", (int)getpid());
	assert_non_null(strstr(err.msg, expect));
	gc_lock_release(a);
	gc_error_clear(&err);
	assert_int_equal(gc_lock_acquire(&b, dir, "lab", &err), 0);
	gc_lock_release(b);
}

static void test_lock_freed_by_sigkill(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_lock *l = NULL;
	int pipefd[2], status;
	char c;
	pid_t pid;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	if (pid == 0) {
		struct gc_lock *child = NULL;

		if (gc_lock_acquire(&child, dir, "lab", NULL) != 0)
			_exit(1);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	assert_int_equal(gc_lock_acquire(&l, dir, "lab", &err), GC_ELOCKED);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	gc_error_clear(&err);
	assert_int_equal(gc_lock_acquire(&l, dir, "lab", &err), 0);
	gc_lock_release(l);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* Writers at once on a slow disk (each fsync 2 ms longer): every record is
 * there, whole, each writer's in its order, and one fsync covered several
 * writers' records (a group commit); one writer alone runs one fsync per
 * record, each after its own write. */
#define WRITERS 8
#define RECORDS 100

struct writer {
	struct gc_journal *j;
	int id;
	int failed;
};

static void *write_records(void *arg)
{
	struct writer *w = arg;
	struct gc_error err = GC_ERROR_INIT;
	char target[16], action[48];

	snprintf(target, sizeof(target), "esx%02d", w->id);
	for (int i = 0; i < RECORDS; i++) {
		snprintf(action, sizeof(action), "%s/step-%03d", target, i);
		if (gc_journal_append(w->j, target, action, "apply", GC_J_START, NULL, &err) != 0)
			w->failed++;
	}
	return NULL;
}

static void test_writers_share_fsyncs(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_journal *j = NULL;
	struct writer w[WRITERS];
	pthread_t t[WRITERS];
	struct gc_jhistory h;
	int next[WRITERS] = {0};
	unsigned long syncs;

	setenv("GC_TEST_JOURNAL_SYNC_DELAY_MS", "2", 1);
	assert_int_equal(gc_journal_open(&j, dir, "lab", &err), 0);
	unsetenv("GC_TEST_JOURNAL_SYNC_DELAY_MS");
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){j, i, 0};
		assert_int_equal(pthread_create(&t[i], NULL, write_records, &w[i]), 0);
	}
	for (int i = 0; i < WRITERS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(w[i].failed, 0);
	}
	syncs = gc_journal_syncs(j);
	gc_journal_close(j);
	assert_true(syncs >= 1);
	assert_true(syncs <= WRITERS * RECORDS / 2);

	assert_int_equal(gc_journal_read(&h, dir, "lab", &err), 0);
	assert_int_equal(h.n, WRITERS * RECORDS);
	for (size_t k = 0; k < h.n; k++) {
		int id = atoi(h.records[k].target + 3);
		char want[64];

		assert_true(id >= 0 && id < WRITERS);
		snprintf(want, sizeof(want), "%s/step-%03d", h.records[k].target, next[id]++);
		assert_string_equal(h.records[k].action, want);
	}
	for (int i = 0; i < WRITERS; i++)
		assert_int_equal(next[i], RECORDS);
	gc_jhistory_free(&h);

	/* alone: an fsync for each record */
	assert_int_equal(gc_journal_open(&j, dir, "alone", &err), 0);
	w[0] = (struct writer){j, 0, 0};
	write_records(&w[0]);
	assert_int_equal(w[0].failed, 0);
	assert_int_equal(gc_journal_syncs(j), RECORDS);
	gc_journal_close(j);
	(void)state;
}

static void test_bad_cluster_name(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_lock *l = NULL;

	assert_int_equal(gc_lock_acquire(&l, dir, "../evil", &err), GC_EINVAL);
	assert_string_equal(err.msg, "invalid cluster name '../evil'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_append_and_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_last_line_is_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_refuses_second_holder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_freed_by_sigkill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_cluster_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writers_share_fsyncs, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
