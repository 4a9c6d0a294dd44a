/*
 * fuzz_onyx_version.c - libFuzzer target: `show version` parser (text and
 * `| json-print` through json-c) and the release comparison.
 */
#include <stdint.h>
#include <stdlib.h>

#include "gc/onyx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_version v;

	if (gc_onyx_parse_version(&v, (const char *)data, size, &err) == 0) {
		if (v.product[0] == '\0' || v.release[0] == '\0')
			abort();
		(void)gc_onyx_version_cmp(v.release, GC_ONYX_ONESHOT_MIN);
	}
	return 0;
}
