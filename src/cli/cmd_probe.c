/*
 * cmd_probe.c - `gpuclusterctl probe`: the node probe (src/probe), the same
 * program as the stand-alone gpuclusterctl-probe that ships to guests.
 */
#include <string.h>

#include "cli.h"
#include "gc/probe.h"

int cmd_probe(int argc, char **argv)
{
	argv[0] = (char *)"probe";
	return gc_probe_main(argc, argv);
}
