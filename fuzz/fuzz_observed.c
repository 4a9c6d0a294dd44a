/*
 * fuzz_observed.c - the observed-state JSON snapshot reader (src/plan/observed.c).
 */
#include <stdint.h>
#include <stdlib.h>

#include "gc/observed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_observed *o = NULL;

	if (gc_observed_load_json_buffer(&o, "fuzz.json", (const char *)data, size, &err) == 0)
		gc_observed_free(o);
	return 0;
}
