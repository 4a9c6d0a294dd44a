/*
 * fuzz_probe_expect.c - an expect file, then its evaluation against an empty report.
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
	static struct gc_probe_expect e;
	static struct gc_probe_report r;
	struct gc_error err = GC_ERROR_INIT;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	memset(&e, 0, sizeof(e));
	memset(&r, 0, sizeof(r));
	if (gc_probe_expect_parse(&e, copy, size, "fuzz", &err) == 0)
		gc_probe_expect_eval(&r, &e);
	free(copy);
	return 0;
}
