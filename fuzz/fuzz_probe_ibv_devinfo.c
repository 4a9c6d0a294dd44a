/*
 * fuzz_probe_ibv_devinfo.c - ibv_devinfo text into struct gc_probe_rdma.
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
	gc_probe_parse_ibv_devinfo(&r, copy, size, &err);
	/* a second parse adds to the same struct: caps must hold */
	gc_probe_parse_ibv_devinfo(&r, copy, size, &err);
	free(copy);
	return 0;
}
