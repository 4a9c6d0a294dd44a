/*
 * fuzz_guest_parts.c - each reader of the guest observation on its own
 * (src/drivers/guest/observe.c), without the section framing that
 * fuzz_guest_observe must get through first.  The input's first line names
 * the part, the rest is what the guest printed for it:
 *
 *   smi     nvidia-smi -q -x (libxml2)
 *   ip      ip -j addr show dev ens224 (json-c)
 *   rdma    rdma -j link show (json-c)
 *   dcb     dcb -j pfc show / dcb -j app show (json-c; the same bytes as both)
 *   qos     mlnx_qos -i ens224
 *   kv      /etc/os-release, /etc/nvidia/gridd.conf (KEY=VALUE)
 *
 * Seeds (fuzz/corpus/guest_parts): the sections of the guest_observe seeds
 * (tests/data/guest/nvidia-smi-q-x.xml of a real H100 guest, the lab
 * guests' ip/rdma output) and hand-made odd ones.  Every string the facts
 * get is read to its end; the facts are freed as the driver frees them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "gc/guest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct gc_guest_facts *f)
{
	touch(f->driver_version);
	touch(f->product);
	touch(f->virt_mode);
	touch(f->license_status);
	touch(f->rdma_netdev);
	touch(f->rdma_state);
	touch(f->trust);
	must(f->naddrs <= 16);
	for (size_t i = 0; i < f->naddrs; i++)
		touch(f->addrs[i]);
	must(f->pfc_priority >= -2 && f->pfc_priority <= 7);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	struct gc_guest_facts f;
	size_t plen, blen;
	char part[8], *body;

	if (nl == NULL || (plen = (size_t)(nl - (const char *)data)) >= sizeof(part))
		return 0;
	memcpy(part, data, plen);
	part[plen] = '\0';
	blen = size - plen - 1;
	body = malloc(blen + 1); /* the sections reach the readers NUL-terminated */
	memcpy(body, nl + 1, blen);
	body[blen] = '\0';
	memset(&f, 0, sizeof(f));
	f.pfc_priority = -1;
	if (strcmp(part, "smi") == 0) {
		if (gc_guest_parse_smi_xml(&f, body, blen) == 0)
			must(f.smi);
	} else if (strcmp(part, "ip") == 0) {
		if (gc_guest_parse_ip_json(&f, "ens224", body) != 0)
			must(!f.if_present && f.naddrs == 0);
	} else if (strcmp(part, "rdma") == 0) {
		gc_guest_parse_rdma_json(&f, "mlx5_0", body);
	} else if (strcmp(part, "dcb") == 0) {
		gc_guest_parse_dcb(&f, body, body);
	} else if (strcmp(part, "qos") == 0) {
		gc_guest_parse_mlnx_qos(&f, body);
	} else if (strcmp(part, "kv") == 0) {
		static const char *const keys[] = {"ID", "ID_LIKE", "VERSION_ID", "ServerAddress",
						   "ServerPort", "FeatureType"};

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			char *v = gc_guest_kv(body, keys[i]);

			must(v == NULL || strlen(v) <= blen);
			free(v);
		}
	}
	check(&f);
	gc_guest_facts_free(&f);
	free(body);
	return 0;
}
