/*
 * fuzz_probe_show_gids.c - show_gids text into struct gc_probe_rdma.
 * The input is copied to a buffer of exactly its size (no NUL after it), so
 * ASan reports any read past the length the parser was given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc/probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1);
	static struct gc_probe_rdma r;
	struct gc_error err = GC_ERROR_INIT;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	memset(&r, 0, sizeof(r));
	gc_probe_parse_show_gids(&r, copy, size, &err);
	gc_probe_parse_show_gids(&r, copy, size, &err);
	free(copy);
	return 0;
}
