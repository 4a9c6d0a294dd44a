/*
 * fuzz_esxi_observe.c - the ESXi observation batch parser: marker framing,
 * the MFT section (mst status -vv, mlxconfig q: mft.c),
 * esxcli XML through libxml2, `vmware -v`, `nvidia-smi -q -d ECC`; and the
 * cluster lease's refusal in a host's words (gc_esxi_lease_held: the
 * holder's lease is one line of the input).  The token is fixed ("T0K3N",
 * as in tests/data/esxi/observe-ok.txt).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "gc/esxi.h"
#include "gc/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_esxi_facts f;

	char *text, *held;

	if (gc_esxi_parse_observation(&f, "T0K3N", (const char *)data, size, &err) == 0)
		gc_esxi_facts_free(&f);
	text = gc_xstrndup((const char *)data, size);
	held = gc_esxi_lease_held("T0K3N", text);
	if (held != NULL) {
		must(strchr(held, '\n') == NULL && strchr(held, '\r') == NULL);
		must(strstr(text, held) != NULL);
		free(held);
	}
	free(text);
	return 0;
}
