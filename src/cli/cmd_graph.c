/*
 * cmd_graph.c - `gpuclusterctl graph [--dot|--json] SPEC`: the resource
 * graph of a spec, as Graphviz DOT (default) or JSON (docs/graph.md).
 * Touches nothing.  Exit 0, 1 on errors (including a dependency cycle).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "gc/graph.h"

const char cmd_graph_usage[] =
	"usage: gpuclusterctl graph [--dot | --json] SPEC\n"
	"\n"
	"Print the resource graph of SPEC: every resource gpuclusterctl manages,\n"
	"grouped by target, and the edges saying what must happen first.\n"
	"  gpuclusterctl graph --dot spec.yaml | dot -Tsvg > graph.svg\n"
	"\n"
	"Options:\n"
	"  --dot        Graphviz DOT (the default)\n"
	"  --json       JSON (format_version 1)\n"
	"  -h, --help   show this help\n"
	"\n"
	"Exit status: 0 success, 1 error, 64 usage, 130 interrupted.\n";

int cmd_graph(int argc, char **argv)
{
	static const struct option opts[] = {
		{"dot", no_argument, NULL, 'd'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct gc_cluster *cluster = NULL;
	struct gc_graph *graph = NULL;
	const struct gc_resource **order = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf out = GC_BUF_INIT;
	int c, rc = GC_EXIT_ERROR;
	char format = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
		case 'j':
			if (format != 0 && format != c)
				return cli_usage_error("graph", "--dot and --json exclude each other");
			format = (char)c;
			break;
		case 'h':
			return cli_print_usage("graph");
		default:
			return cli_usage_error("graph", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("graph", "missing SPEC");
	if (optind + 1 < argc)
		return cli_usage_error("graph", "too many arguments (one SPEC)");
	if (cli_load_spec(&cluster, argv[optind]) != 0)
		goto out;
	if (gc_graph_build(&graph, cluster, &err) != 0 ||
	    gc_graph_toposort(&order, graph, &err) != 0) {
		cli_error("%s", err.msg);
		goto out;
	}
	if (format == 'j') { /* streamed, resource by resource */
		if (gc_graph_write_json(stdout, graph, &err) != 0 || fflush(stdout) != 0) {
			cli_error("writing the output failed");
			goto out;
		}
		rc = GC_EXIT_OK;
	} else {
		gc_graph_render_dot(&out, graph);
		if (cli_write(&out))
			rc = GC_EXIT_OK;
	}
out:
	free((void *)order);
	gc_buf_free(&out);
	gc_graph_free(graph);
	gc_cluster_free(cluster);
	return rc;
}
