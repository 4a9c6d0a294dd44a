/*
 * fuzz_probe_mlnx_qos.c - mlnx_qos -i IF text into struct gc_probe_qos.
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
	struct gc_probe_qos q;
	struct gc_error err = GC_ERROR_INIT;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	gc_probe_parse_mlnx_qos(&q, copy, size, &err);
	free(copy);
	return 0;
}
