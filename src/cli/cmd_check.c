/*
 * cmd_check.c - `gpuclusterctl check [--json] SPEC`: load and check a spec,
 * print every diagnostic, touch nothing.  Exit 0 when the spec is valid
 * (warnings allowed), 1 when it has errors, 64 on usage errors.
 *
 * Text: the diagnostics on stderr as gc_diags_format() renders them, then
 * "SPEC: ok (...)" on stdout.  --json: one object on stdout with the same
 * diagnostics as data (specs/check-v1.schema.json), nothing on stderr;
 * bytes of the file that are not UTF-8 become U+FFFD there.
 */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "gc/json.h"

const char cmd_check_usage[] =
	"usage: gpuclusterctl check [--json] SPEC\n"
	"\n"
	"Load SPEC and run every check (types, ranges, references, cross-layer\n"
	"agreement such as PFC priorities and vGPU profiles).  Diagnostics go to\n"
	"standard error as 'file:line:col: error: ...' with the source line.\n"
	"\n"
	"Options:\n"
	"  --json       the result and every diagnostic as JSON on standard output\n"
	"               (format_version 1, specs/check-v1.schema.json)\n"
	"  -h, --help   show this help\n"
	"\n"
	"Exit status: 0 valid (warnings allowed), 1 errors, 64 usage, 130 interrupted.\n";

static json_object *diag_json(const struct gc_diag *d)
{
	json_object *o = json_object_new_object(), *notes = json_object_new_array();

	json_object_object_add(o, "severity",
			       json_object_new_string(d->severity == GC_SEV_ERROR ? "error" : "warning"));
	json_object_object_add(o, "file", gc_json_text(d->mark.file));
	json_object_object_add(o, "line", d->mark.line > 0 ? json_object_new_int(d->mark.line) : NULL);
	json_object_object_add(o, "col", d->mark.line > 0 ? json_object_new_int(d->mark.col) : NULL);
	json_object_object_add(o, "message", gc_json_text(d->msg));
	json_object_object_add(o, "hint", gc_json_text(d->hint));
	json_object_object_add(o, "source_line", gc_json_text(d->source_line));
	for (size_t i = 0; i < d->nnotes; i++)
		json_object_array_add(notes, gc_json_text(d->notes[i]));
	json_object_object_add(o, "notes", notes);
	return o;
}

/* The whole result as one object; `error` is an I/O failure's message. */
static void render_json(struct gc_buf *out, const char *spec, const struct gc_cluster *c,
			const struct gc_diags *diags, const char *error)
{
	json_object *root = json_object_new_object(), *list = json_object_new_array(), *counts = NULL;

	json_object_object_add(root, "format_version", json_object_new_int(1));
	json_object_object_add(root, "spec", gc_json_text(spec));
	json_object_object_add(root, "valid", json_object_new_boolean(c != NULL));
	if (c != NULL) {
		counts = json_object_new_object();
		json_object_object_add(counts, "hosts", json_object_new_int64((int64_t)c->nhosts));
		json_object_object_add(counts, "vms", json_object_new_int64((int64_t)c->nvms));
		json_object_object_add(counts, "switches", json_object_new_int64((int64_t)c->nswitches));
	}
	json_object_object_add(root, "counts", counts);
	json_object_object_add(root, "errors", json_object_new_int64((int64_t)diags->nerrors));
	json_object_object_add(root, "warnings",
			       json_object_new_int64((int64_t)(diags->n - diags->nerrors)));
	for (size_t i = 0; i < diags->n; i++)
		json_object_array_add(list, diag_json(&diags->items[i]));
	json_object_object_add(root, "diagnostics", list);
	json_object_object_add(root, "not_shown", json_object_new_int64((int64_t)diags->dropped));
	json_object_object_add(root, "error", gc_json_text(error));
	gc_json_put(out, root, 0);
	gc_buf_putc(out, '\n');
}

static int check_json(const char *spec)
{
	struct gc_cluster *cluster = NULL;
	struct gc_diags diags = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf out = GC_BUF_INIT;
	int rc = gc_spec_load(&cluster, &diags, spec, &err);

	render_json(&out, spec, rc == 0 ? cluster : NULL, &diags,
		    rc != 0 && rc != GC_ESPEC ? err.msg : NULL);
	if (!cli_write(&out))
		rc = -1;
	gc_buf_free(&out);
	gc_diags_free(&diags);
	gc_cluster_free(cluster);
	return rc == 0 ? GC_EXIT_OK : GC_EXIT_ERROR;
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct gc_cluster *cluster = NULL;
	bool json = false;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_print_usage("check");
		if (c == 'j') {
			json = true;
			continue;
		}
		return cli_usage_error("check", "unknown option '%s'", argv[optind - 1]);
	}
	if (optind >= argc)
		return cli_usage_error("check", "missing SPEC");
	if (optind + 1 < argc)
		return cli_usage_error("check", "too many arguments (one SPEC)");
	if (json)
		return check_json(argv[optind]);
	if (cli_load_spec(&cluster, argv[optind]) != 0)
		return GC_EXIT_ERROR;
	printf("%s: ok (%zu hosts, %zu VMs, %zu switches)\n", argv[optind], cluster->nhosts,
	       cluster->nvms, cluster->nswitches);
	gc_cluster_free(cluster);
	return GC_EXIT_OK;
}
