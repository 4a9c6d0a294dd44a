/*
 * exec_bench - the executor's own cost at scale: `apply` of an N-host spec
 * (bench/gen_spec.py) against drivers that answer at once and change
 * nothing (docs/benchmarks.md, "The executor at scale").
 *
 *   exec_bench SPEC [PARALLELISM]
 *
 * This program supplies gc_exec_driver() itself: every target kind gets a
 * driver whose observation records only that a host is up and out of
 * maintenance mode (so every resource is planned), whose every action
 * succeeds at once, and which takes no lease.  What is left is the
 * executor: planning, the waves, picking the next action, journalling.
 * It prints the wall time of gc_exec_run and its phases.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gc/exec.h"
#include "gc/graph.h"
#include "gc/spec.h"
#include "gc/util.h"

static int fake_connect(void **conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
			struct gc_error *err)
{
	(void)ctx;
	(void)err;
	*conn = (void *)t;
	return 0;
}

static int fake_observe(void *conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
			const struct gc_resource *const *res, size_t nres, struct gc_buf *problems,
			struct gc_error *err)
{
	struct gc_drv_host_state hs = {false, false, NULL};

	(void)conn;
	(void)res;
	(void)nres;
	(void)problems;
	(void)err;
	if (t->kind == GC_TARGET_ESXI || t->kind == GC_TARGET_KVM)
		gc_drv_host_state(ctx, t->name, &hs);
	return 0;
}

static int fake_apply(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *a,
		      struct gc_error *err)
{
	(void)conn;
	(void)ctx;
	(void)a;
	(void)err;
	return 0;
}

static void fake_disconnect(void *conn)
{
	(void)conn;
}

#define FAKE(k, shared)                                                                            \
	{.name = "fake", .kind = (k), .shared_conn = (shared), .connect = fake_connect,             \
	 .observe = fake_observe, .apply = fake_apply, .disconnect = fake_disconnect}

static const struct gc_driver fakes[] = {
	[GC_TARGET_ESXI] = FAKE(GC_TARGET_ESXI, false),
	[GC_TARGET_SWITCH] = FAKE(GC_TARGET_SWITCH, false),
	[GC_TARGET_VCENTER] = FAKE(GC_TARGET_VCENTER, true),
	[GC_TARGET_GUEST] = FAKE(GC_TARGET_GUEST, false),
	[GC_TARGET_LIBVIRT] = FAKE(GC_TARGET_LIBVIRT, true),
	[GC_TARGET_KVM] = FAKE(GC_TARGET_KVM, false),
};

const struct gc_driver *gc_exec_driver(enum gc_target_kind kind)
{
	return (size_t)kind < sizeof(fakes) / sizeof(fakes[0]) ? &fakes[kind] : NULL;
}

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
