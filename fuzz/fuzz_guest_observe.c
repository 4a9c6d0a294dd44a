/*
 * fuzz_guest_observe.c - the guest observation parser: marker framing,
 * nvidia-smi -q -x through libxml2, ip/rdma/dcb JSON through json-c,
 * os-release and gridd.conf KEY=VALUE, the mlnx_qos report.  The token is
 * fixed ("0123456789abcdef", as in tests/unit/guest/test_guest.c); the
 * guest is the RoCE guest of the examples (interface ens224, mlx5_0).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc/guest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gc_roce_qos q = {.interface = "ens224", .rdma_device = "mlx5_0",
				       .trust = "dscp", .pfc_priority = 3, .tos = 106, .ecn = true};
	static struct gc_rdma_if ri = {.name = "ens224", .address = "198.18.0.51/24", .mtu = 9000};
	struct gc_guest g;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_guest_facts f;

	memset(&g, 0, sizeof(g));
	g.os = "debian";
	g.nvidia_driver = "535";
	g.rdma_packages = true;
	g.roce_qos = &q;
	g.rdma_interface = &ri;
	if (gc_guest_parse(&f, &g, "0123456789abcdef", (const char *)data, size, &err) == 0)
		gc_guest_facts_free(&f);
	return 0;
}
