/*
 * cmd_check.c - `gpuclusterctl check SPEC`: load and check a spec, print
 * every diagnostic, touch nothing.  Exit 0 when the spec is valid (warnings
 * allowed), 1 when it has errors, 64 on usage errors.
 */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"

const char cmd_check_usage[] =
	"usage: gpuclusterctl check SPEC\n"
	"\n"
	"Load SPEC and run every check (types, ranges, references, cross-layer\n"
	"agreement such as PFC priorities and vGPU profiles).  Diagnostics go to\n"
	"standard error as 'file:line:col: error: ...' with the source line.\n"
	"\n"
	"Options:\n"
	"  -h, --help   show this help\n"
	"\n"
	"Exit status: 0 valid (warnings allowed), 1 errors, 64 usage, 130 interrupted.\n";

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	struct gc_cluster *cluster = NULL;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_print_usage("check");
		return cli_usage_error("check", "unknown option '%s'", argv[optind - 1]);
	}
	if (optind >= argc)
		return cli_usage_error("check", "missing SPEC");
	if (optind + 1 < argc)
		return cli_usage_error("check", "too many arguments (one SPEC)");
	if (cli_load_spec(&cluster, argv[optind]) != 0)
		return GC_EXIT_ERROR;
	printf("%s: ok (%zu hosts, %zu VMs, %zu switches)\n", argv[optind], cluster->nhosts,
	       cluster->nvms, cluster->nswitches);
	gc_cluster_free(cluster);
	return GC_EXIT_OK;
}
