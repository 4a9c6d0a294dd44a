/*
 * fuzz_spec.c - libFuzzer target for the spec loader: any bytes through
 * gc_spec_load_buffer(), then free whatever came back.  Crashes, leaks and
 * sanitizer reports are the failures; diagnostics are expected output.
 */
#include <stddef.h>
#include <stdint.h>

#include "gc/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gc_cluster *c = NULL;
	struct gc_diags d = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;

	gc_spec_load_buffer(&c, &d, "fuzz.yaml", (const char *)data, size, &err);
	/* rendering walks every diagnostic's strings and source line */
	gc_diags_format(&b, &d);
	gc_buf_free(&b);
	gc_diags_free(&d);
	gc_cluster_free(c);
	return 0;
}
