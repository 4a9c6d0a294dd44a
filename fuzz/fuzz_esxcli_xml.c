/*
 * fuzz_esxcli_xml.c - `esxcli --formatter=xml` output straight into its
 * reader (src/drivers/esxi/esxcli_xml.c), without the observation batch's
 * framing that fuzz_esxi_observe must get through first: every esxcli
 * command the ESXi driver reads (vib list, pci list, advanced list of the
 * cluster lease, ...), then the bundle's VIB listing
 * (gc_esxi_parse_source_vibs, `software sources vib list`) on the same
 * bytes.
 *
 * On success every field has a name and a value that the lookup finds
 * again (or an earlier field of the same name), and every VIB the listing
 * yields has a name and version of VIB characters only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "gc/esxi.h"
#include "gc/pattern.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_struct(const struct gc_esxcli_struct *s)
{
	touch(s->type_name);
	for (size_t k = 0; k < s->nfields; k++) {
		const char *found;

		must(s->fields[k].name != NULL && s->fields[k].value != NULL);
		found = gc_esxcli_get(s, s->fields[k].name);
		must(found != NULL);
		touch(found);
	}
	/* what the driver asks for */
	touch(gc_esxcli_get(s, "Name"));
	touch(gc_esxcli_get(s, "Version"));
	touch(gc_esxcli_get(s, "StringValue"));
	touch(gc_esxcli_get(s, "Device ID"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gc_error err = GC_ERROR_INIT, verr = GC_ERROR_INIT;
	struct gc_esxcli_result r;
	struct gc_esxi_vib *v = NULL;
	size_t n = 0;

	if (gc_esxcli_parse_xml(&r, (const char *)data, size, &err) == 0) {
		touch(r.scalar);
		for (size_t i = 0; i < r.nitems; i++)
			check_struct(&r.items[i]);
		gc_esxcli_result_free(&r);
	} else {
		must(err.code == GC_EREMOTE && err.msg[0] != '\0');
	}
	if (gc_esxi_parse_source_vibs(&v, &n, (const char *)data, size, &verr) == 0) {
		must(n > 0 && n <= GC_ESXI_MAX_SOURCE_VIBS);
		for (size_t i = 0; i < n; i++) {
			must(gc_valid_version(v[i].name) && gc_valid_version(v[i].version));
			free(v[i].name);
			free(v[i].version);
		}
		free(v);
	} else {
		must(verr.code == GC_EREMOTE && v == NULL);
	}
	return 0;
}
