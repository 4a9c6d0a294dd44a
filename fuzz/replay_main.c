/*
 * replay_main.c - run a libFuzzer target over a corpus without libFuzzer.
 *
 * Usage: replay_<name> DIR|FILE...   Feeds each regular file (directories
 * are walked one level deep, sorted) to LLVMFuzzerTestOneInput and prints
 * "N passed, 0 failed"; a crash or sanitizer report fails the test.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gc/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	struct gc_error err = GC_ERROR_INIT;
	char *data;
	size_t len;

	if (gc_read_file(&data, &len, path, 16u * 1024 * 1024, &err) != 0) {
		fprintf(stderr, "replay: %s\n", err.msg);
		return -1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)data, len);
	free(data);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	size_t passed = 0, failed = 0;
	int i;

	for (i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;
		char **names = NULL;
		size_t n = 0, k;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: cannot stat %s\n", argv[i]);
			failed++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			run_file(argv[i]) == 0 ? passed++ : failed++;
			continue;
		}
		d = opendir(argv[i]);
		while (d && (e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			names = gc_xrealloc(names, (n + 1) * sizeof(*names));
			names[n++] = gc_xasprintf("%s/%s", argv[i], e->d_name);
		}
		if (d)
			closedir(d);
		qsort(names, n, sizeof(*names), cmp);
		for (k = 0; k < n; k++) {
			if (stat(names[k], &st) == 0 && S_ISREG(st.st_mode))
				run_file(names[k]) == 0 ? passed++ : failed++;
			free(names[k]);
		}
		free(names);
	}
	printf("%zu passed, %zu failed\n", passed, failed);
	return failed || passed == 0 ? 1 : 0;
}
