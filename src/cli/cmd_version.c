/*
 * cmd_version.c - `gpuclusterctl version`: the version and the formats this
 * build reads and writes.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const char cmd_version_usage[] = "usage: gpuclusterctl version\n\n"
				 "Print the version of gpuclusterctl and the formats it speaks.\n\n"
				 "Options:\n"
				 "  -h, --help   show this help\n";

int cmd_version(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))
		return cli_print_usage("version");
	if (argc > 1)
		return cli_usage_error("version", "unexpected argument '%s'", argv[1]);
	printf("gpuclusterctl %s\n", GC_VERSION);
	printf("spec: %s, plan JSON: format_version 1, observed JSON: version 1\n",
	       GC_SPEC_API_VERSION);
	return GC_EXIT_OK;
}
