/*
 * cmd_probe.c - `gpuclusterctl probe`: the node probe (src/probe), the same
 * program as the stand-alone gpuclusterctl-probe that ships to guests.
 */
#include <string.h>

#include "cli.h"
#include "gc/probe.h"

const char cmd_probe_usage[] =
	"usage: gpuclusterctl probe [options]\n"
	"\n"
	"Check this machine as a cluster node: RDMA devices, ports, RoCE v2 GIDs and\n"
	"QoS, CUDA devices, a vector add from PTX, copy bandwidth, peer access,\n"
	"GPUDirect RDMA readiness.  Run 'gpuclusterctl probe --help' for every option\n"
	"(the same as gpuclusterctl-probe --help); docs/probe.md documents the JSON.\n";

int cmd_probe(int argc, char **argv)
{
	argv[0] = (char *)"probe";
	return gc_probe_main(argc, argv);
}
