/*
 * fuzz_batch.c - what a target answers to a batch of changing commands
 * (gc_batch_parse, src/util/sections.c: the ESXi driver's `&&` chains and
 * the guest driver's steps).  The first byte picks how many commands the
 * batch had (1-8); the token is fixed ("T0K3N", as in the seeds,
 * fuzz/corpus/batch/).  Invariants: a batch seen complete started every
 * command, no more than n started, and the last command's output lies
 * inside the input.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_check.h"
#include "gc/sections.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_batch b;
	const char *text = (const char *)data + 1;
	size_t n, len;

	if (size == 0)
		return 0;
	n = 1 + data[0] % 8;
	len = size - 1;
	if (gc_batch_parse(&b, "T0K3N", n, text, len, &err) == 0) {
		must(b.started <= n);
		must(!b.complete || b.started == n);
		must(b.last_len == 0 || (b.last_out >= text && b.last_out + b.last_len <= text + len));
	} else {
		touch(err.msg);
	}
	return 0;
}
