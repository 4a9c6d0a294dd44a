/*
 * test_graph_json.c - graph --json, streamed, is byte for byte the JSON of
 * a json-c tree of the graph (what it printed before the streaming writer;
 * the tree is built here, for this comparison only): on the graph of every
 * spec in examples/ and tests/data/spec/ok/, on the fixture's large graph,
 * and on a graph whose target, ids, host, VM, property keys and values
 * carry quotes, backslashes, '/', control characters, UTF-8 and bytes that
 * are not UTF-8, with a repeated property key.  Both outputs are compared:
 * gc_graph_render_json() (a buffer) and gc_graph_write_json() (a FILE).
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

#include <json-c/json.h>

#include "fixture.h"
#include "gc/graph.h"

/* ------------------------------------------------- the tree, as it was */

static json_object *tree_flags(unsigned flags)
{
	json_object *a = json_object_new_array();

	if (flags & GC_RES_NEEDS_MAINTENANCE)
		json_object_array_add(a, json_object_new_string("needs_maintenance"));
	if (flags & GC_RES_NEEDS_REBOOT)
		json_object_array_add(a, json_object_new_string("needs_reboot"));
	if (flags & GC_RES_NEEDS_VM_OFF)
		json_object_array_add(a, json_object_new_string("needs_vm_off"));
	if (flags & GC_RES_AFTER_REBOOT)
		json_object_array_add(a, json_object_new_string("after_reboot"));
	return a;
}

static json_object *tree_resource(const struct gc_resource *r)
{
	json_object *o = json_object_new_object();
	json_object *props = json_object_new_object();
	json_object *deps = json_object_new_array();

	json_object_object_add(o, "id", json_object_new_string(r->id));
	json_object_object_add(o, "kind", json_object_new_string(gc_res_kind_name(r->kind)));
	json_object_object_add(o, "target", json_object_new_string(r->target->name));
	json_object_object_add(o, "target_kind",
	                       json_object_new_string(gc_target_kind_name(r->target->kind)));
	if (r->host != NULL)
		json_object_object_add(o, "host", json_object_new_string(r->host));
	if (r->vm != NULL)
		json_object_object_add(o, "vm", json_object_new_string(r->vm));
	for (size_t i = 0; i < r->nprops; i++)
		json_object_object_add(props, r->props[i].key,
		                       json_object_new_string(r->props[i].value));
	json_object_object_add(o, "properties", props);
	json_object_object_add(o, "flags", tree_flags(r->flags));
	for (size_t i = 0; i < r->ndeps; i++)
		json_object_array_add(deps, json_object_new_string(r->deps[i]->id));
	json_object_object_add(o, "after", deps);
	if (r->mark.file != NULL && r->mark.line > 0) {
		char *src = gc_xasprintf("%s:%d:%d", r->mark.file, r->mark.line, r->mark.col);

		json_object_object_add(o, "source", json_object_new_string(src));
		free(src);
	}
	return o;
}

static char *graph_json_tree(const struct gc_graph *g)
{
	json_object *root = json_object_new_object(), *targets = json_object_new_array();
	json_object *resources = json_object_new_array();
	char *s;

	json_object_object_add(root, "format_version", json_object_new_int(1));
	for (size_t i = 0; i < g->ntargets; i++) {
		json_object *t = json_object_new_object();

		json_object_object_add(
		    t, "kind", json_object_new_string(gc_target_kind_name(g->targets[i]->kind)));
		json_object_object_add(t, "name", json_object_new_string(g->targets[i]->name));
		json_object_array_add(targets, t);
	}
	json_object_object_add(root, "targets", targets);
	for (size_t i = 0; i < g->nresources; i++)
		json_object_array_add(resources, tree_resource(g->resources[i]));
	json_object_object_add(root, "resources", resources);
	s = gc_xasprintf("%s\n", json_object_to_json_string_ext(
	                             root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
	                                       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
	return s;
}

/* ------------------------------------------------------ the comparison */

static void assert_graph_json_same(const struct gc_graph *g, const char *what)
{
	char *want = graph_json_tree(g), *got = NULL;
	size_t gotlen = 0;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_error err = GC_ERROR_INIT;
	FILE *f = open_memstream(&got, &gotlen);

	assert_non_null(f);
	gc_graph_render_json(&b, g);
	if (b.len != strlen(want) || strcmp(gc_buf_str(&b), want) != 0)
		fail_msg("%s: gc_graph_render_json differs from the json-c tree", what);
	assert_int_equal(gc_graph_write_json(f, g, &err), 0);
	assert_int_equal(fclose(f), 0);
	if (gotlen != strlen(want) || memcmp(got, want, gotlen) != 0)
		fail_msg("%s: gc_graph_write_json differs from the json-c tree", what);
	free(got);
	free(want);
	gc_buf_free(&b);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_every_example_and_ok_spec(void **state)
{
	static const char *const dirs[] = {"examples", "tests/data/spec/ok"};
	size_t total = 0;

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		char *dir = gc_xasprintf("%s/%s", GC_SOURCE_DIR, dirs[k]), **names = NULL;
		DIR *d = opendir(dir);
		struct dirent *e;
		size_t n = 0;

		assert_non_null(d);
		while ((e = readdir(d)) != NULL) {
			size_t len = strlen(e->d_name);

			if (len > 5 && strcmp(e->d_name + len - 5, ".yaml") == 0) {
				names = gc_xrealloc(names, (n + 1) * sizeof(*names));
				names[n++] = gc_xasprintf("%s/%s", dir, e->d_name);
			}
		}
		closedir(d);
		qsort(names, n, sizeof(*names), by_name);
		for (size_t i = 0; i < n; i++) {
			struct gc_cluster *c = NULL;
			struct gc_diags diags = {0};
			struct gc_error err = GC_ERROR_INIT;
			struct gc_graph *g = NULL;

			if (gc_spec_load(&c, &diags, names[i], &err) != 0)
				fail_msg("%s: %s", names[i], err.msg);
			if (gc_graph_build(&g, c, &err) != 0)
				fail_msg("%s: graph: %s", names[i], err.msg);
			assert_graph_json_same(g, names[i]);
			gc_graph_free(g);
			gc_cluster_free(c);
			gc_diags_free(&diags);
			free(names[i]);
		}
		total += n;
		free(names);
		free(dir);
	}
	assert_true(total >= 17);
}

/* 64 hosts of 8 GPUs: a document past the writer's 64 KiB flushes. */
static void test_large_fixture_graph(void **state)
{
	struct gc_cluster *c = fx_cluster(64, 8, FX_VGPU);
	struct gc_graph *g = NULL;
	struct gc_error err = GC_ERROR_INIT;

	(void)state;
	assert_int_equal(gc_graph_build(&g, c, &err), 0);
	assert_graph_json_same(g, "64-host fixture");
	gc_graph_free(g);
	fx_free(c);
}

#define HOSTILE                                                                                    \
	"q\"uote \\back/slash \x01\x1f\t\n\r\b\f\x7f caf\xc3\xa9 \xe2\x86\x92 "                    \
	"\xf0\x9d\x9b\x91 bad\xff\xc0\xaf cut\xe2\x82"

static void test_hostile_strings_and_a_repeated_key(void **state)
{
	struct gc_graph *g;
	struct gc_target *t;
	struct gc_resource *a, *b;
	struct gc_error err = GC_ERROR_INIT;

	(void)state;
	gc_graph_new(&g);
	t = gc_graph_add_target(g, GC_TARGET_ESXI, "esx " HOSTILE);
	assert_int_equal(gc_graph_add(&a, g, GC_RES_ESXI_ADVANCED, t, "id " HOSTILE,
	                              "host " HOSTILE, "vm " HOSTILE, GC_RES_NEEDS_REBOOT, &err),
	                 0);
	gc_resource_set(g, a, "key " HOSTILE, "value " HOSTILE);
	gc_resource_set(g, a, "again", "first");
	gc_resource_set(g, a, "other", "x");
	gc_resource_set(g, a, "again", "last");
	assert_int_equal(gc_graph_add(&b, g, GC_RES_ESXI_NTP, t, "/" HOSTILE, NULL, NULL, 0, &err),
	                 0);
	gc_graph_add_edge(g, a, b);
	assert_graph_json_same(g, "hostile strings");
	gc_graph_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_example_and_ok_spec),
	    cmocka_unit_test(test_large_fixture_graph),
	    cmocka_unit_test(test_hostile_strings_and_a_repeated_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
