/*
 * exec_bench - the executor's own cost at scale: `apply` of an N-host spec
 * (bench/gen_spec.py) against drivers that answer at once and change
 * nothing (docs/benchmarks.md, "The executor at scale").
 *
 *   exec_bench SPEC [PARALLELISM]
 *
 * It links bench/fake_drivers.c, which supplies gc_exec_driver() itself:
 * every target kind gets a driver whose observation records only that a
 * host is up and out of maintenance mode (so every resource is planned),
 * whose every action succeeds at once, and which takes no lease.  What is left is the
 * executor: planning, the waves, picking the next action, journalling.
 * It prints the wall time of gc_exec_run and its phases.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_drivers.h"
#include "gc/exec.h"
#include "gc/graph.h"
#include "gc/spec.h"
#include "gc/util.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_diags diags = {0};
	struct gc_cluster *c = NULL;
	struct gc_graph *g = NULL;
	struct gc_exec_opts o;
	struct gc_exec_report rep;
	char state[] = "/tmp/gc-execbench-XXXXXX";
	double t0;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: exec_bench SPEC [PARALLELISM]\n");
		return 2;
	}
	if (gc_spec_load(&c, &diags, argv[1], &err) != 0 || gc_graph_build(&g, c, &err) != 0) {
		fprintf(stderr, "exec_bench: %s\n", err.msg);
		return 1;
	}
	if (mkdtemp(state) == NULL)
		return 1;
	memset(&o, 0, sizeof(o));
	o.state_dir = state;
	o.parallelism = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
	o.continue_on_error = true;
	o.drv.reboot_poll_ms = 1;
	t0 = now_s();
	if (gc_exec_run(&rep, g, &o, &err) != 0) {
		fprintf(stderr, "exec_bench: %s\n", err.msg);
		return 1;
	}
	printf("%zu targets, %zu actions in %zu waves: %zu done, %zu failed, %zu skipped; "
	       "wall %.2f s (observe %.2f s, apply %.2f s)\n",
	       g->ntargets, rep.plan->nactions, rep.plan->nwaves, rep.done, rep.failed, rep.skipped,
	       now_s() - t0, rep.observe_s, rep.apply_s);
	gc_exec_report_free(&rep);
	gc_graph_free(g);
	gc_cluster_free(c);
	gc_diags_free(&diags);
	if (system("rm -rf /tmp/gc-execbench-*") != 0)
		return 1;
	return 0;
}
