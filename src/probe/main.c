/*
 * main.c - `gpuclusterctl-probe`, the node probe as its own executable, the
 * one that ships to guests (cmake -DGC_PROBE_ONLY=ON builds only this).
 */
#include "gc/probe.h"

int main(int argc, char **argv)
{
	return gc_probe_main(argc, argv);
}
