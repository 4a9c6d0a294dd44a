/*
 * fuzz_probe_qp_line.c - a peer's queue-pair line (untrusted network input).
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
	struct gc_probe_qpinfo q;
	struct gc_error err = GC_ERROR_INIT;
	char again[GC_PROBE_QP_LINE_MAX + 1];

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (gc_probe_qp_parse(&q, copy, size, &err) == 0) {
		/* what parses must format back and parse to the same value */
		struct gc_probe_qpinfo q2;
		int n = gc_probe_qp_format(again, sizeof(again), &q);
		if (n < 0 || gc_probe_qp_parse(&q2, again, (size_t)n, &err) != 0 ||
		    memcmp(&q, &q2, sizeof(q)) != 0)
			abort();
	}
	free(copy);
	return 0;
}
