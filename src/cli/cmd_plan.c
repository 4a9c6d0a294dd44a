/*
 * cmd_plan.c - `gpuclusterctl plan`: load the spec, build the resource graph,
 * observe, plan, print.
 *
 * Observation sources: --offline (nothing exists), --observed FILE (a JSON
 * snapshot, docs/observed-json.md).  Live observation plugs in at
 * observe_live() below once the drivers and src/exec land; until then a
 * plan without a source is a usage error that says what to pass.
 *
 * Exit: 0 no changes, 2 changes, 1 error, 64 usage.
 * GC_PLAN_TIMING=1 prints the time of each phase to stderr (benchmarks).
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/plan.h"

const char cmd_plan_usage[] =
	"usage: gpuclusterctl plan [--offline | --observed FILE] [--json] [--parallelism N] SPEC\n"
	"\n"
	"Show what apply would change, in order: resource changes (+ create, ~ update,\n"
	"- delete) and the steps they need (maintenance mode, one reboot per host,\n"
	"powering VMs off and on, migrations), grouped in waves that respect\n"
	"rolling.max_unavailable.\n"
	"\n"
	"Options:\n"
	"  --offline          plan as if nothing exists yet; touch nothing\n"
	"  --observed FILE    plan against an observed-state snapshot (JSON); touch nothing\n"
	"  --json             print the plan as JSON (format_version 1)\n"
	"  --parallelism N    accepted for apply compatibility; ignored by plan\n"
	"  -h, --help         show this help\n"
	"\n"
	"Exit status: 0 no changes, 2 changes, 1 error, 64 usage.\n";

enum source { SRC_NONE, SRC_OFFLINE, SRC_FILE };

/*
 * Live observation: connect to every target and observe in batches.  This
 * is where src/exec's observer will be called; returning GC_ENOTSUP keeps
 * the CLI honest until then.
 */
static int observe_live(struct gc_observed **out, const struct gc_graph *g, struct gc_error *err)
{
	(void)out;
	(void)g;
	return gc_error_set(err, GC_ENOTSUP, "live observation is not available yet");
}

static int parse_uint(unsigned *out, const char *s)
{
	char *end;
	unsigned long v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	v = strtoul(s, &end, 10);
	if (*end != '\0' || v == 0 || v > 4096)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int cmd_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{"offline", no_argument, NULL, 'o'},   {"observed", required_argument, NULL, 'O'},
		{"json", no_argument, NULL, 'j'},      {"parallelism", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},      {NULL, 0, NULL, 0},
	};
	enum source src = SRC_NONE;
	const char *observed_path = NULL;
	bool json = false;
	struct gc_plan_opts popts = GC_PLAN_OPTS_INIT;
	struct gc_cluster *cluster = NULL;
	struct gc_graph *graph = NULL;
	struct gc_observed *obs = NULL;
	struct gc_plan *plan = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf out = GC_BUF_INIT;
	int c, rc = GC_EXIT_ERROR;
	uint64_t t[5] = {0};
	bool timing = getenv("GC_PLAN_TIMING") != NULL && getenv("GC_PLAN_TIMING")[0] != '\0';

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (src == SRC_FILE)
				return cli_usage_error("plan", "--offline and --observed exclude each other");
			src = SRC_OFFLINE;
			break;
		case 'O':
			if (src == SRC_OFFLINE)
				return cli_usage_error("plan", "--offline and --observed exclude each other");
			src = SRC_FILE;
			observed_path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'p':
			if (parse_uint(&popts.parallelism, optarg) != 0)
				return cli_usage_error("plan", "--parallelism needs a number from 1 to 4096, not '%s'",
						       optarg);
			break;
		case 'h':
			return cli_print_usage("plan");
		case ':':
			return cli_usage_error("plan", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_usage_error("plan", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("plan", "missing SPEC");
	if (optind + 1 < argc)
		return cli_usage_error("plan", "too many arguments (one SPEC)");
	if (src == SRC_NONE)
		return cli_usage_error("plan",
				       "live observation is not available yet: pass --offline (assume "
				       "nothing exists) or --observed FILE (a snapshot)");

	t[0] = gc_now_ns();
	if (cli_load_spec(&cluster, argv[optind]) != 0)
		goto out;
	t[1] = gc_now_ns();
	if (gc_graph_build(&graph, cluster, &err) != 0) {
		cli_error("%s", err.msg);
		goto out;
	}
	switch (src) {
	case SRC_FILE:
		if (gc_observed_load_json(&obs, observed_path, &err) != 0) {
			cli_error("%s", err.msg);
			goto out;
		}
		break;
	case SRC_OFFLINE:
		break;
	case SRC_NONE:
		if (observe_live(&obs, graph, &err) != 0) {
			cli_error("%s", err.msg);
			goto out;
		}
		break;
	}
	t[2] = gc_now_ns();
	if (gc_plan_build(&plan, graph, obs, &popts, &err) != 0) {
		cli_error("%s", err.msg);
		goto out;
	}
	t[3] = gc_now_ns();
	if (json)
		gc_plan_render_json(&out, plan);
	else
		gc_plan_render_text(&out, plan, cli_color(stdout) ? GC_RENDER_COLOR : 0);
	t[4] = gc_now_ns();
	if (!cli_write(&out))
		goto out;
	if (timing)
		fprintf(stderr,
			"gpuclusterctl: timing: load %.3f s, graph %.3f s (observe included), plan %.3f s, "
			"render %.3f s; %zu resources, %zu actions, critical path %zu\n",
			(double)(t[1] - t[0]) / 1e9, (double)(t[2] - t[1]) / 1e9,
			(double)(t[3] - t[2]) / 1e9, (double)(t[4] - t[3]) / 1e9, graph->nresources,
			plan->nactions, plan->stats.critical_path);
	rc = gc_plan_empty(plan) ? GC_EXIT_OK : GC_EXIT_CHANGES;
out:
	gc_buf_free(&out);
	gc_plan_free(plan);
	gc_observed_free(obs);
	gc_graph_free(graph);
	gc_cluster_free(cluster);
	return rc;
}
