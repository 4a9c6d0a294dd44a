/*
 * fuzz_probe_nvsmi.c - nvidia-smi -q text into struct gc_probe_nvsmi.
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
	static struct gc_probe_nvsmi s;
	struct gc_error err = GC_ERROR_INIT;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	gc_probe_parse_nvsmi(&s, copy, size, &err);
	free(copy);
	return 0;
}
