/*
 * journal_bench - N writers appending to one apply journal at once, as the
 * executor's workers do (docs/benchmarks.md, "The journal").
 *
 *   journal_bench WRITERS RECORDS STATE_DIR
 *
 * Each writer appends RECORDS records; prints the wall time of the whole.
 * It only uses include/gc/journal.h's append, so it builds against any
 * revision's src/exec/journal.c (bench/journal_bench.sh compiles it with an
 * older one beside the current).  Run it under `strace -f -e inject=fsync:
 * delay_exit=5000` for a disk whose fsync takes 5 ms.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gc/journal.h"

struct writer {
	struct gc_journal *j;
	int id, records, failed;
};

static void *run(void *arg)
{
	struct writer *w = arg;
	struct gc_error err = GC_ERROR_INIT;
	char target[16], action[48];

	snprintf(target, sizeof(target), "esx%03d", w->id);
	for (int i = 0; i < w->records; i++) {
		snprintf(action, sizeof(action), "%s/step-%d", target, i);
		if (gc_journal_append(w->j, target, action, "apply", GC_J_START, NULL, &err) != 0)
			w->failed++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_journal *j;
	struct timespec t0, t1;
	struct writer *w;
	pthread_t *t;
	int n, records, failed = 0;

	if (argc != 4 || (n = atoi(argv[1])) <= 0 || (records = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: journal_bench WRITERS RECORDS STATE_DIR\n");
		return 2;
	}
	if (gc_journal_open(&j, argv[3], "bench", &err) != 0) {
		fprintf(stderr, "journal_bench: %s\n", err.msg);
		return 1;
	}
	w = calloc((size_t)n, sizeof(*w));
	t = calloc((size_t)n, sizeof(*t));
	if (w == NULL || t == NULL)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		w[i] = (struct writer){j, i, records, 0};
		pthread_create(&t[i], NULL, run, &w[i]);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		failed += w[i].failed;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	gc_journal_close(j);
	printf("%d writers x %d records: %.1f ms%s\n", n, records,
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
	       failed ? " (appends failed)" : "");
	free(w);
	free(t);
	return failed ? 1 : 0;
}
