/*
 * test_plan_json.c - the streamed plan JSON is, byte for byte, the JSON of
 * a whole-document json-c tree (what plan --json printed before the
 * streaming writer; that tree is built here, for this comparison only):
 * on the offline plan of every spec in examples/ and tests/data/spec/ok/,
 * on the plans against every snapshot in tests/data/observed/, and on a
 * plan whose names, ids, keys, values, reasons and unknown target carry
 * quotes, backslashes, '/', control characters, UTF-8 and bytes that are
 * not UTF-8.  Both outputs are compared: gc_plan_render_json() (a buffer)
 * and gc_plan_write_json() (a FILE, past the writer's 64 KiB flushes).
 * The text plan likewise: gc_plan_write_text() (streamed in 64 KiB chunks)
 * is gc_plan_render_text()'s bytes, plain and in colour, on the same plans
 * and on a 60-host spec of bench/gen_spec.py (250 KB of text).
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
#include <unistd.h>

#include <json-c/json.h>

#include "gc/json.h"
#include "gc/plan.h"
#include "gc/spec.h"

/* ------------------------------------------------- the tree, as it was */

static json_object *tree_action(const struct gc_action *a)
{
	json_object *o = json_object_new_object();
	json_object *flags = json_object_new_array();
	json_object *changes = json_object_new_array();
	json_object *deps = json_object_new_array();

	json_object_object_add(o, "seq", json_object_new_int64((int64_t)a->seq));
	json_object_object_add(o, "kind", json_object_new_string(gc_action_kind_name(a->kind)));
	json_object_object_add(o, "op", json_object_new_string(gc_op_name(a->op)));
	json_object_object_add(o, "synthesized", json_object_new_boolean(a->synthesized));
	json_object_object_add(o, "resource", gc_json_text(a->resource_id));
	json_object_object_add(
	    o, "resource_kind",
	    a->resource_id ? json_object_new_string(gc_res_kind_name(a->res_kind)) : NULL);
	json_object_object_add(o, "host", gc_json_text(a->host));
	json_object_object_add(o, "vm", gc_json_text(a->vm));
	json_object_object_add(o, "dest_host", gc_json_text(a->dest_host));
	if (a->flags & GC_RES_NEEDS_MAINTENANCE)
		json_object_array_add(flags, json_object_new_string("needs_maintenance"));
	if (a->flags & GC_RES_NEEDS_REBOOT)
		json_object_array_add(flags, json_object_new_string("needs_reboot"));
	if (a->flags & GC_RES_NEEDS_VM_OFF)
		json_object_array_add(flags, json_object_new_string("needs_vm_off"));
	if (a->flags & GC_RES_AFTER_REBOOT)
		json_object_array_add(flags, json_object_new_string("after_reboot"));
	json_object_object_add(o, "flags", flags);
	for (size_t i = 0; i < a->nchanges; i++) {
		json_object *c = json_object_new_object();

		json_object_object_add(c, "key", json_object_new_string(a->changes[i].key));
		json_object_object_add(c, "old", gc_json_text(a->changes[i].old_value));
		json_object_object_add(c, "new", gc_json_text(a->changes[i].new_value));
		json_object_array_add(changes, c);
	}
	json_object_object_add(o, "changes", changes);
	json_object_object_add(o, "why", gc_json_text(a->why));
	for (size_t i = 0; i < a->ndeps; i++)
		json_object_array_add(deps, json_object_new_int64((int64_t)a->deps[i]->seq));
	json_object_object_add(o, "after", deps);
	return o;
}

static json_object *tree_summary(const struct gc_plan *p)
{
	json_object *o = json_object_new_object();
	const struct gc_plan_stats *s = &p->stats;

	json_object_object_add(o, "add", json_object_new_int64((int64_t)s->add));
	json_object_object_add(o, "change", json_object_new_int64((int64_t)s->change));
	json_object_object_add(o, "destroy", json_object_new_int64((int64_t)s->destroy));
	json_object_object_add(o, "synthesized", json_object_new_int64((int64_t)s->synthesized));
	json_object_object_add(o, "hosts_in_maintenance",
	                       json_object_new_int64((int64_t)s->hosts_in_maintenance));
	json_object_object_add(o, "reboots", json_object_new_int64((int64_t)s->reboots));
	json_object_object_add(o, "actions", json_object_new_int64((int64_t)p->nactions));
	json_object_object_add(o, "waves", json_object_new_int64((int64_t)p->nwaves));
	json_object_object_add(o, "critical_path",
	                       json_object_new_int64((int64_t)s->critical_path));
	return o;
}

static json_object *tree_wave(const struct gc_plan_wave *pw, size_t index)
{
	json_object *o = json_object_new_object(), *hosts = json_object_new_array();
	json_object *targets = json_object_new_array();

	json_object_object_add(o, "index", json_object_new_int64((int64_t)index));
	for (size_t h = 0; h < pw->nmaintenance_hosts; h++)
		json_object_array_add(hosts, json_object_new_string(pw->maintenance_hosts[h]));
	json_object_object_add(o, "maintenance_hosts", hosts);
	for (size_t t = 0; t < pw->ntargets; t++) {
		const struct gc_plan_target *pt = &pw->targets[t];
		json_object *to = json_object_new_object(), *actions = json_object_new_array();

		json_object_object_add(
		    to, "kind", json_object_new_string(gc_target_kind_name(pt->target->kind)));
		json_object_object_add(to, "name", json_object_new_string(pt->target->name));
		for (size_t i = 0; i < pt->nactions; i++)
			json_object_array_add(actions, tree_action(pt->actions[i]));
		json_object_object_add(to, "actions", actions);
		json_object_array_add(targets, to);
	}
	json_object_object_add(o, "targets", targets);
	return o;
}

/* The whole plan as one json-c tree, serialized with the flags the plan
 * renderer used (pretty, spaced, '/' unescaped), and a newline. */
static char *plan_json_tree(const struct gc_plan *p)
{
	json_object *root = json_object_new_object(), *rolling = json_object_new_object();
	json_object *waves = json_object_new_array();
	char *s;

	json_object_object_add(root, "format_version", json_object_new_int(1));
	json_object_object_add(root, "changes", json_object_new_boolean(!gc_plan_empty(p)));
	json_object_object_add(root, "summary", tree_summary(p));
	json_object_object_add(rolling, "max_unavailable",
	                       json_object_new_int64((int64_t)p->max_unavailable));
	json_object_object_add(rolling, "allow_vmotion", json_object_new_boolean(p->allow_vmotion));
	json_object_object_add(root, "rolling", rolling);
	for (size_t w = 0; w < p->nwaves; w++)
		json_object_array_add(waves, tree_wave(&p->waves[w], w));
	json_object_object_add(root, "waves", waves);
	if (p->nwarnings > 0) {
		json_object *warn = json_object_new_array();

		for (size_t i = 0; i < p->nwarnings; i++)
			json_object_array_add(warn, json_object_new_string(p->warnings[i]));
		json_object_object_add(root, "warnings", warn);
	}
	if (p->nunknown > 0) {
		json_object *unk = json_object_new_array();

		for (size_t t = 0; t < p->graph->ntargets; t++) {
			json_object *u;

			if (p->unknown[t] == NULL)
				continue;
			u = json_object_new_object();
			json_object_object_add(u, "kind",
			                       json_object_new_string(gc_target_kind_name(
			                           p->graph->targets[t]->kind)));
			json_object_object_add(u, "target",
			                       json_object_new_string(p->graph->targets[t]->name));
			json_object_object_add(u, "error", gc_json_text(p->unknown[t]));
			json_object_array_add(unk, u);
		}
		json_object_object_add(root, "unknown", unk);
	}
	s = gc_xasprintf("%s\n", json_object_to_json_string_ext(
	                             root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
	                                       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
	return s;
}

/* ------------------------------------------------------ the comparison */

/* The streamed text plan is the buffered one, plain and in colour; its
 * length, for callers that want to know the chunks were crossed. */
static size_t assert_plan_text_same(const struct gc_plan *p, const char *what)
{
	size_t len = 0;

	for (unsigned flags = 0; flags <= GC_RENDER_COLOR; flags += GC_RENDER_COLOR) {
		struct gc_buf want = GC_BUF_INIT;
		char *got = NULL;
		size_t gotlen = 0;
		FILE *f = open_memstream(&got, &gotlen);

		assert_non_null(f);
		gc_plan_render_text(&want, p, flags);
		assert_int_equal(gc_plan_write_text(f, p, flags), 0);
		assert_int_equal(fclose(f), 0);
		if (gotlen != want.len || memcmp(got, want.ptr, gotlen) != 0)
			fail_msg("%s: gc_plan_write_text differs from gc_plan_render_text%s", what,
				 flags ? " (colour)" : "");
		len = want.len;
		free(got);
		gc_buf_free(&want);
	}
	return len;
}

/* Both streamed outputs of p equal the tree's bytes; what is the plan of. */
static void assert_plan_json_same(const struct gc_plan *p, const char *what)
{
	char *want = plan_json_tree(p), *got = NULL;
	size_t gotlen = 0;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_error err = GC_ERROR_INIT;
	FILE *f = open_memstream(&got, &gotlen);

	assert_non_null(f);
	gc_plan_render_json(&b, p);
	if (strcmp(gc_buf_str(&b), want) != 0 || b.len != strlen(want))
		fail_msg("%s: gc_plan_render_json differs from the json-c tree", what);
	assert_int_equal(gc_plan_write_json(f, p, &err), 0);
	assert_int_equal(fclose(f), 0);
	if (gotlen != strlen(want) || memcmp(got, want, gotlen) != 0)
		fail_msg("%s: gc_plan_write_json differs from the json-c tree", what);
	free(got);
	free(want);
	gc_buf_free(&b);
	assert_plan_text_same(p, what);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files in GC_SOURCE_DIR/dir ending in suffix, sorted; count in *n. */
static char **list(const char *dir, const char *suffix, size_t *n)
{
	char *path = gc_xasprintf("%s/%s", GC_SOURCE_DIR, dir), **names = NULL;
	DIR *d = opendir(path);
	struct dirent *e;

	assert_non_null(d);
	*n = 0;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name), sl = strlen(suffix);

		if (len <= sl || strcmp(e->d_name + len - sl, suffix) != 0)
			continue;
		names = gc_xrealloc(names, (*n + 1) * sizeof(*names));
		names[(*n)++] = gc_xasprintf("%s/%s", path, e->d_name);
	}
	closedir(d);
	free(path);
	qsort(names, *n, sizeof(*names), by_name);
	return names;
}

/* Plan spec against obs (NULL: offline) and compare; the plan's action count. */
static size_t compare_spec(const char *spec, struct gc_observed *obs)
{
	struct gc_cluster *c = NULL;
	struct gc_diags diags = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_graph *g = NULL;
	struct gc_plan *p = NULL;
	size_t n;

	if (gc_spec_load(&c, &diags, spec, &err) != 0)
		fail_msg("%s: %s (%zu errors)", spec, err.msg, diags.nerrors);
	if (gc_graph_build(&g, c, &err) != 0)
		fail_msg("%s: graph: %s", spec, err.msg);
	if (gc_plan_build(&p, g, obs, NULL, &err) != 0)
		fail_msg("%s: plan: %s", spec, err.msg);
	assert_plan_json_same(p, spec);
	n = p->nactions;
	gc_plan_free(p);
	gc_graph_free(g);
	gc_cluster_free(c);
	gc_diags_free(&diags);
	return n;
}

static void test_every_example_and_ok_spec_offline(void **state)
{
	static const char *const dirs[] = {"examples", "tests/data/spec/ok"};
	size_t total = 0, actions = 0;

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		size_t n;
		char **specs = list(dirs[k], ".yaml", &n);

		assert_true(n >= 5);
		for (size_t i = 0; i < n; i++) {
			actions += compare_spec(specs[i], NULL);
			free(specs[i]);
		}
		free(specs);
		total += n;
	}
	assert_true(total >= 17);
	assert_true(actions > 500); /* real plans, not empty ones */
}

/* Converged (an empty plan) and drifted (updates, deletes, old values). */
static void test_every_observed_snapshot(void **state)
{
	size_t n;
	char **snaps = list("tests/data/observed", ".json", &n);

	(void)state;
	assert_true(n >= 5);
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(snaps[i], '/') + 1;
		const char *cut = strstr(base, "-converged");
		struct gc_observed *obs = NULL;
		struct gc_error err = GC_ERROR_INIT;
		char *spec;

		if (cut == NULL)
			cut = strstr(base, "-drift");
		assert_non_null(cut);
		spec =
		    gc_xasprintf("%s/examples/%.*s.yaml", GC_SOURCE_DIR, (int)(cut - base), base);
		if (gc_observed_load_json(&obs, snaps[i], &err) != 0)
			fail_msg("%s: %s", snaps[i], err.msg);
		compare_spec(spec, obs);
		gc_observed_free(obs);
		free(spec);
		free(snaps[i]);
	}
	free(snaps);
}

/* Every string a plan carries, hostile: a host's name and the reasons that
 * name it, a resource id, a property key, desired and observed values, a
 * VM, a device's detail, and an unknown target's error. */
#define HOSTILE                                                                                    \
	"q\"uote \\back/slash \x01\x1f\t\n\r\b\f\x7f caf\xc3\xa9 \xe2\x86\x92 "                    \
	"\xf0\x9d\x9b\x91 \xc2\x9b bad\xff\xc0\xaf\xed\xa0\x80 cut\xe2\x82"

static void test_hostile_strings(void **state)
{
	struct gc_graph *g;
	struct gc_resource *r, *dev;
	struct gc_observed *o;
	struct gc_plan *p = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_plan_opts opts = GC_PLAN_OPTS_INIT;
	struct gc_target *esx, *esx2, *vc;
	const char **unknown;
	struct gc_graph_vm vm = {
	    "vm " HOSTILE, "esx " HOSTILE, false, true, "passthrough GPU " HOSTILE, NULL};
	struct gc_buf b = GC_BUF_INIT;

	(void)state;
	gc_graph_new(&g);
	esx = gc_graph_add_target(g, GC_TARGET_ESXI, "esx " HOSTILE);
	esx2 = gc_graph_add_target(g, GC_TARGET_ESXI, "esx02/" HOSTILE);
	vc = gc_graph_add_target(g, GC_TARGET_VCENTER, GC_VCENTER_TARGET);
	assert_int_equal(gc_graph_add(&r, g, GC_RES_ESXI_PCI_PASSTHRU, esx,
	                              "esx " HOSTILE "/esxi.pci_passthru/0000:3b:00.0",
	                              "esx " HOSTILE, NULL,
	                              GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT, &err),
	                 0);
	gc_resource_set(g, r, "key " HOSTILE, "new " HOSTILE);
	r->summary = "passthrough for GPU";
	r->detail = HOSTILE;
	assert_int_equal(gc_graph_add(&dev, g, GC_RES_VM_DEVICE_PCI, vc,
	                              "vm/" HOSTILE "/device.pci/0000:3b:00.0", "esx " HOSTILE,
	                              "vm " HOSTILE, GC_RES_NEEDS_VM_OFF, &err),
	                 0);
	gc_resource_set(g, dev, "host_pci", HOSTILE);
	gc_graph_add_edge(g, r, dev);
	gc_graph_add_vm(g, &vm);
	gc_observed_new(&o);
	gc_observed_set(o, "esx " HOSTILE "/esxi.pci_passthru/0000:3b:00.0", "key " HOSTILE,
	                "old " HOSTILE);
	gc_observed_set_vm(o, "vm " HOSTILE, GC_POWER_ON, "esx " HOSTILE, false);
	unknown = calloc(g->ntargets, sizeof(*unknown));
	unknown[esx2->index] = "host 'esx02': " HOSTILE;
	opts.unknown = unknown;
	assert_int_equal(gc_plan_build(&p, g, o, &opts, &err), 0);
	free(unknown);
	assert_int_equal(p->nunknown, 1);
	assert_true(p->nactions >= 8);
	assert_plan_json_same(p, "hostile strings");
	/* and what the strings became, spelled out once */
	gc_plan_render_json(&b, p);
	assert_non_null(
	    strstr(gc_buf_str(&b),
	           "\"old\": \"old q\\\"uote \\\\back/slash \\u0001\\u001f\\t\\n\\r\\b\\f\x7f "
	           "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9d\x9b\x91 \xc2\x9b "
	           "bad\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
	           "cut\xef\xbf\xbd\xef\xbf\xbd\""));
	gc_buf_free(&b);
	gc_plan_free(p);
	gc_observed_free(o);
	gc_graph_free(g);
}

/* A plan of many 64 KiB chunks (bench/gen_spec.py's hosts), streamed as
 * rendered; and a write that fails is reported. */
static void test_a_large_text_plan_streams_in_chunks(void **state)
{
	char dir[] = "/tmp/gc-plantext-XXXXXX", *spec, *cmd;
	struct gc_cluster *c = NULL;
	struct gc_diags diags = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_graph *g = NULL;
	struct gc_plan *p = NULL;
	FILE *full;

	(void)state;
	assert_non_null(mkdtemp(dir));
	spec = gc_xasprintf("%s/hosts60.yaml", dir);
	cmd = gc_xasprintf("python3 %s/bench/gen_spec.py 60 > %s", GC_SOURCE_DIR, spec);
	assert_int_equal(system(cmd), 0);
	if (gc_spec_load(&c, &diags, spec, &err) != 0)
		fail_msg("%s: %s", spec, err.msg);
	unlink(spec); /* loaded: gone even if an assertion below fails */
	rmdir(dir);
	assert_int_equal(gc_graph_build(&g, c, &err), 0);
	assert_int_equal(gc_plan_build(&p, g, NULL, NULL, &err), 0);
	assert_true(assert_plan_text_same(p, "60 hosts") > 3 * 64 * 1024);
	full = fopen("/dev/full", "w");
	assert_non_null(full);
	assert_int_equal(gc_plan_write_text(full, p, 0) != 0 || fflush(full) != 0, 1);
	fclose(full);
	gc_plan_free(p);
	gc_graph_free(g);
	gc_cluster_free(c);
	gc_diags_free(&diags);
	free(cmd);
	free(spec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_example_and_ok_spec_offline),
	    cmocka_unit_test(test_every_observed_snapshot),
	    cmocka_unit_test(test_hostile_strings),
	    cmocka_unit_test(test_a_large_text_plan_streams_in_chunks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
