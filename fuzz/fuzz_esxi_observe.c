/*
 * fuzz_esxi_observe.c - the ESXi observation batch parser: marker framing,
 * the MFT section (mst status -vv, mlxconfig q: mft.c),
 * esxcli XML through libxml2, `vmware -v`, `nvidia-smi -q -d ECC`.  The
 * token is fixed ("T0K3N", as in tests/data/esxi/observe-ok.txt).
 */
#include <stdint.h>
#include <stdlib.h>

#include "gc/esxi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;

	if (gc_esxi_parse_observation(&f, "T0K3N", (const char *)data, size, &err) == 0)
		gc_esxi_facts_free(&f);
	return 0;
}
