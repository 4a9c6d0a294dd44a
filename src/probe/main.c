/*
 * main.c - `gpuclusterctl-probe`, the node probe as its own executable, the
 * one that ships to guests (cmake -DGC_PROBE_ONLY=ON builds only this).
 * Ctrl-C exits 130, like every gpuclusterctl command (src/cli/main.c).
 */
#include <signal.h>
#include <unistd.h>

#include "gc/probe.h"

static void on_sigint(int sig)
{
	(void)sig;
	_exit(GC_PROBE_EXIT_INTERRUPTED);
}

int main(int argc, char **argv)
{
	if (signal(SIGINT, SIG_IGN) != SIG_IGN) /* an inherited SIG_IGN stays */
		signal(SIGINT, on_sigint);
	return gc_probe_main(argc, argv);
}
