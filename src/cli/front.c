/*
 * front.c - what makes `gpuclusterctl` the front binary: the commands that
 * need no network (check, graph, plan --offline/--observed, version, help,
 * completion) run here, with no SSH, TLS, HTTP or libvirt library mapped
 * (issue 16: an offline command's start-up).  The others run as
 * gpuclusterctl-online, the whole tool, which this process becomes with
 * execv(): the same pid, arguments, environment, descriptors and signals,
 * so a caller (a script, a test killing the apply it started) sees one
 * process.  CMake builds the front from the same command files with
 * GC_CLI_FRONT defined (src/cli/CMakeLists.txt).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* Where the online binary is, relative to this one: installed (bin/ and
 * libexec/gpuclusterctl/), then the build tree (both in src/cli/). */
static char *online_path(void)
{
	static const char *const rel[] = {
		"../libexec/gpuclusterctl/gpuclusterctl-online",
		"gpuclusterctl-online",
	};

	return cli_find_beside(rel, GC_ARRAY_LEN(rel));
}

int cli_online(void)
{
	char **argv = cli_argv();
	char *path = online_path();

	if (path == NULL) {
		cli_error("gpuclusterctl-online is not installed beside this gpuclusterctl "
			  "(looked in ../libexec/gpuclusterctl/ and this directory): reinstall "
			  "gpuclusterctl; only check, graph and plan --offline work without it");
		return GC_EXIT_ERROR;
	}
	fflush(NULL);
	execv(path, argv);
	cli_error("cannot run %s: %s", path, strerror(errno));
	free(path);
	return GC_EXIT_ERROR;
}

/* The commands that always need the network: straight to the online binary. */
int cmd_apply(int argc, char **argv)
{
	(void)argc, (void)argv;
	return cli_online();
}

int cmd_unlock(int argc, char **argv)
{
	(void)argc, (void)argv;
	return cli_online();
}

int cmd_validate(int argc, char **argv)
{
	(void)argc, (void)argv;
	return cli_online();
}

int cmd_discover(int argc, char **argv)
{
	(void)argc, (void)argv;
	return cli_online();
}

int cmd_probe(int argc, char **argv)
{
	(void)argc, (void)argv;
	return cli_online();
}
