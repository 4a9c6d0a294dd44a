/*
 * fuzz_validate_probe.c - the node probe's JSON report as validate reads it
 * (src/validate/probe_report.c): the checks it makes of a guest's report,
 * with every threshold of `validation:` set and CUDA expected, and the RDMA
 * write test's result.  The input is what a guest could send.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc/spec.h"
#include "gc/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct gc_validation val = {.min_rdma_gbps = 90, .max_rdma_latency_us = 5,
						 .min_h2d_gbps = 10, .min_d2h_gbps = 10,
						 .min_d2d_gbps = 500, .require_gpudirect = true};
	const struct gc_vprobe_in in = {.target = "worker-01", .val = &val, .gpus = true};
	struct gc_validate_report r;
	struct gc_vprobe_out out;
	struct gc_vprobe_rdma rt;
	struct gc_buf b = GC_BUF_INIT;

	memset(&r, 0, sizeof(r));
	if (gc_validate_probe_checks(&r, &in, (const char *)data, size, &out) == 0) {
		/* and the report renders whatever the guest put in it */
		gc_vreport_render_text(&b, &r, 0);
		gc_vreport_render_json(&b, &r);
		free(out.hca);
	}
	gc_validate_probe_rdma_test(&rt, (const char *)data, size);
	gc_buf_free(&b);
	gc_vreport_free(&r);
	return 0;
}
