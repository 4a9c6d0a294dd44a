/*
 * fuzz_saved_plan.c - a saved plan as `apply FILE` reads it
 * (src/cli/saved_plan.c: cli_plan_parse, then the per-target fingerprints
 * and the comparison with the plan made again).  A plan file may come from
 * another machine or be edited by hand: nothing in it is trusted.
 *
 * On success spec and spec_hash are strings, --only holds only target
 * kinds (the six of enum gc_target_kind: a check that still said four, from
 * before the KVM kinds, was the first crash the 2026-11-28 campaign found),
 * every --target pattern is a string, and the fingerprint
 * lookup and the plan comparison run over whatever the file holds.
 *
 * saved_plan.c's other functions report through cli_error() (main.c, which
 * holds main()): a stand-in below counts the calls, and parsing must make
 * none (library-like code never prints).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "cli.h"
#include "gc/graph.h"
#include "gc/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned cli_errors;

int cli_error(const char *fmt, ...)
{
	(void)fmt;
	cli_errors++;
	return GC_EXIT_ERROR;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gc_target t[] = {{.kind = GC_TARGET_ESXI, .name = "esx01"},
				       {.kind = GC_TARGET_SWITCH, .name = "sn2700", .index = 1},
				       {.kind = GC_TARGET_VCENTER, .name = "vcenter", .index = 2},
				       {.kind = GC_TARGET_GUEST, .name = "worker-01", .index = 3},
				       {.kind = GC_TARGET_KVM, .name = "kvm01", .index = 4},
				       {.kind = GC_TARGET_LIBVIRT, .name = "kvm01", .index = 5}};
	static struct gc_target *tp[] = {&t[0], &t[1], &t[2], &t[3], &t[4], &t[5]};
	struct gc_graph g;
	struct gc_plan plan;
	struct cli_saved_plan p;
	const char **fp;
	size_t i;

	cli_errors = 0;
	if (cli_plan_parse(&p, (const char *)data, size) != 0) {
		must(cli_errors == 0 && p.root == NULL);
		return 0;
	}
	must(cli_errors == 0);
	must(p.spec != NULL && p.spec_hash != NULL && p.fingerprints != NULL && p.plan != NULL);
	must((p.kinds & ~((1u << (GC_TARGET_LIBVIRT + 1)) - 1u)) == 0);
	touch(p.spec);
	touch(p.spec_hash);
	for (i = 0; i < p.ntargets; i++) {
		must(p.targets[i] != NULL);
		touch(p.targets[i]);
	}
	memset(&g, 0, sizeof(g));
	g.targets = tp;
	g.ntargets = GC_ARRAY_LEN(tp);
	fp = cli_plan_fingerprints(&p, &g);
	for (i = 0; i < g.ntargets; i++)
		touch(fp[i]);
	free(fp);
	/* an empty plan: what a converged cluster plans again */
	memset(&plan, 0, sizeof(plan));
	plan.graph = &g;
	(void)cli_plan_same(&p, &plan);
	cli_saved_plan_free(&p);
	return 0;
}
