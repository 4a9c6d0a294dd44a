/*
 * fuzz_mpi_nccl.c - what the MPI workload prints (untrusted, from the
 * guests): nccl-tests' table and NCCL's network lines, or the probe's
 * GCPROBE-MPIBW line (src/validate/mpi_parse.c).  The input is copied to a
 * buffer of exactly its size, so ASan reports any read past the length.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_mpi_result r;
	struct gc_mpi_net net;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	gc_mpi_scan_nccl_net(&net, copy, size);
	if (net.socket_fallback != (net.transport == GC_MPI_NET_SOCKET))
		abort();
	if (gc_mpi_parse_output(&r, copy, size, &err) == 0) {
		/* what parses is a whole result */
		if (r.kind == GC_MPI_RESULT_NCCL &&
		    (r.nccl.rows == 0 || !isfinite(r.nccl.avg_busbw_gbs) ||
		     !isfinite(r.nccl.max_busbw_gbs) || r.nccl.max_busbw_gbs < 0))
			abort();
	} else if (err.msg[0] == '\0') {
		abort(); /* a failure always says why */
	}
	free(copy);
	return 0;
}
