/*
 * test_corpus.c - the spec corpus: every tests/data/spec/bad/NAME.yaml must
 * fail to load with exactly the diagnostics text in NAME.expected, and every
 * tests/data/spec/ok/NAME.yaml must load (with exactly NAME.expected as
 * warnings text when that file exists, else with no diagnostics at all).
 *
 * Runs from the repository root, so paths in the expected text read
 * "tests/data/spec/bad/NAME.yaml".  GC_UPDATE_EXPECTED=1 rewrites the
 * .expected files from the current output (then review the diff!).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/spec.h"

#define MIN_BAD_SPECS 45

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted *.yaml names of a directory; caller frees. */
static char **list_yaml(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;

	*n = 0;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);

		if (len > 5 && strcmp(e->d_name + len - 5, ".yaml") == 0) {
			names = gc_xrealloc(names, (*n + 1) * sizeof(*names));
			names[(*n)++] = gc_xstrdup(e->d_name);
		}
	}
	closedir(d);
	qsort(names, *n, sizeof(*names), cmp);
	return names;
}

/* First differing line, shown like a tiny diff. */
static void show_diff(const char *path, const char *want, const char *got)
{
	int line = 1;
	const char *w = want, *g = got;

	while (*w && *g && *w == *g) {
		if (*w == '\n')
			line++;
		w++;
		g++;
	}
	while (w > want && w[-1] != '\n')
		w--;
	while (g > got && g[-1] != '\n')
		g--;
	print_message("%s: mismatch at line %d\n- %.*s\n+ %.*s\n--- full output:\n%s", path, line,
		      (int)strcspn(w, "\n"), w, (int)strcspn(g, "\n"), g, got);
}

static int check_one(const char *dir, const char *name, bool bad)
{
	char path[512], exp_path[512];
	struct gc_cluster *c = NULL;
	struct gc_diags d = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf got = GC_BUF_INIT;
	char *want = NULL;
	size_t len;
	int rc, failed = 0;
	struct gc_error rerr = GC_ERROR_INIT;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(exp_path, sizeof(exp_path), "%s/%.*s.expected", dir, (int)(strlen(name) - 5),
		 name);
	rc = gc_spec_load(&c, &d, path, &err);
	gc_diags_format(&got, &d);
	if (bad && (rc != GC_ESPEC || c != NULL || d.nerrors == 0)) {
		print_message("%s: expected GC_ESPEC, got rc %d (%s)\n", path, rc, err.msg);
		failed = 1;
	}
	if (!bad && (rc != 0 || c == NULL)) {
		print_message("%s: expected to load, got rc %d\n%s", path, rc, gc_buf_str(&got));
		failed = 1;
	}
	if (getenv("GC_UPDATE_EXPECTED") != NULL && (bad || got.len > 0)) {
		FILE *f = fopen(exp_path, "w");

		assert_non_null(f);
		fputs(gc_buf_str(&got), f);
		fclose(f);
	}
	if (gc_read_file(&want, &len, exp_path, 1 << 20, &rerr) != 0) {
		if (bad || got.len > 0) {
			print_message("%s: missing %s; output was:\n%s", path, exp_path,
				      gc_buf_str(&got));
			failed = 1;
		}
	} else if (strcmp(want, gc_buf_str(&got)) != 0) {
		show_diff(path, want, gc_buf_str(&got));
		failed = 1;
	}
	free(want);
	gc_buf_free(&got);
	gc_diags_free(&d);
	gc_cluster_free(c);
	return failed;
}

static void test_bad_specs(void **state)
{
	size_t n, i;
	char **names = list_yaml("tests/data/spec/bad", &n);
	int failed = 0;

	for (i = 0; i < n; i++) {
		failed += check_one("tests/data/spec/bad", names[i], true);
		free(names[i]);
	}
	free(names);
	if (n < MIN_BAD_SPECS)
		print_message("only %zu bad specs, want at least %d\n", n, MIN_BAD_SPECS);
	assert_true(n >= MIN_BAD_SPECS);
	assert_int_equal(failed, 0);
}

static void test_ok_specs(void **state)
{
	size_t n, i;
	char **names = list_yaml("tests/data/spec/ok", &n);
	int failed = 0;

	for (i = 0; i < n; i++) {
		failed += check_one("tests/data/spec/ok", names[i], false);
		free(names[i]);
	}
	free(names);
	assert_true(n > 0);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_ok_specs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
