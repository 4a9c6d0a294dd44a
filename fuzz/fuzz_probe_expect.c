/*
 * fuzz_probe_expect.c - an expect file, then its evaluation against an empty
 * report and against three populated ones (a passthrough GPU guest with a
 * ConnectX VF, a vGPU guest with a PVRDMA adapter, a soft-RoCE guest without
 * GPU), so that every check compares the input with something found: GPU
 * names, ECC and licence strings, device names, PFC lists.
 * The input is copied to a buffer of exactly its size (no NUL after it), so
 * ASan reports any read past the length the parser was given.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SET(field, ...) snprintf(field, sizeof(field), __VA_ARGS__)

static void gpu(struct gc_probe_gpu *g, const char *name, unsigned mib, const char *virt,
		const char *ecc, const char *license)
{
	SET(g->name, "%s", name);
	g->mem_bytes = (uint64_t)mib << 20;
	SET(g->virt_mode, "%s", virt);
	SET(g->ecc, "%s", ecc);
	SET(g->license, "%s", license);
}

static void rdma_dev(struct gc_probe_rdma_dev *d, const char *name, const char *netdev,
		     bool qos, const char *trust, int tc, int tos)
{
	struct gc_probe_port *p = &d->ports[0];
	int i;

	SET(d->name, "%s", name);
	d->nports = 1;
	p->num = 1;
	p->state_num = 4;
	p->active_mtu = 4096;
	SET(p->link_layer, "Ethernet");
	p->roce_v2_index = 1;
	p->traffic_class = tc;
	p->default_tos = tos;
	d->qos.present = qos;
	SET(d->qos.netdev, "%s", netdev);
	SET(d->qos.trust, "%s", trust);
	for (i = 0; i < 8; i++)
		d->qos.pfc[i] = qos ? i == 3 : -1;
	if (!qos)
		SET(d->qos.reason, "mlnx_qos: not found");
}

static void reports(struct gc_probe_report r[4])
{
	/* [0] stays empty */
	r[1].cuda.status = GC_PROBE_OK;
	r[1].cuda.ngpu = 2;
	gpu(&r[1].cuda.gpus[0], "NVIDIA H100 80GB HBM3", 81559, "Pass-Through", "Enabled", "");
	gpu(&r[1].cuda.gpus[1], "NVIDIA H100 80GB HBM3", 81559, "Pass-Through", "Disabled", "");
	r[1].cuda.peer[0][1] = 1;
	r[1].cuda.peer[1][0] = -1;
	r[1].cuda.vadd_status = GC_PROBE_OK;
	r[1].rdma.status = GC_PROBE_OK;
	r[1].rdma.ndev = 1;
	rdma_dev(&r[1].rdma.devs[0], "mlx5_0", "ens1f0v0", true, "dscp", 106, -1);
	SET(r[1].rdma.peermem, "nvidia_peermem");
	r[1].gdr.status = GC_PROBE_OK;

	r[2].cuda.status = GC_PROBE_OK;
	r[2].cuda.ngpu = 1;
	gpu(&r[2].cuda.gpus[0], "GRID A100-8C", 7680, "VGPU", "N/A",
	    "Licensed (Expiry: 2027-1-2 0:0:0 GMT)");
	r[2].cuda.vadd_status = GC_PROBE_FAILED;
	SET(r[2].cuda.vadd_reason, "cuLaunchKernel: CUDA_ERROR_NO_BINARY_FOR_GPU");
	r[2].rdma.status = GC_PROBE_OK;
	r[2].rdma.ndev = 2;
	rdma_dev(&r[2].rdma.devs[0], "vmw_pvrdma0", "ens224", false, "", -1, 96);
	r[2].rdma.devs[0].ports[0].state_num = 1;
	rdma_dev(&r[2].rdma.devs[1], "vmw_pvrdma1", "ens256", false, "", -1, -1);
	r[2].gdr.status = GC_PROBE_ABSENT;
	SET(r[2].gdr.reason, "nvidia_peermem is not loaded");

	r[3].cuda.status = GC_PROBE_ABSENT;
	SET(r[3].cuda.reason, "libcuda.so.1: cannot open shared object file");
	r[3].rdma.status = GC_PROBE_OK;
	r[3].rdma.ndev = 1;
	rdma_dev(&r[3].rdma.devs[0], "rxe0", "ens4", true, "pcp", -1, 106);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1);
	static struct gc_probe_expect e;
	static struct gc_probe_report base[4], r;
	static int ready;
	struct gc_error err = GC_ERROR_INIT;
	int i;

	if (!copy)
		return 0;
	if (!ready) {
		reports(base);
		ready = 1;
	}
	memcpy(copy, data, size);
	memset(&e, 0, sizeof(e));
	if (gc_probe_expect_parse(&e, copy, size, "fuzz", &err) == 0)
		for (i = 0; i < 4; i++) {
			r = base[i];
			if (gc_probe_expect_eval(&r, &e) > r.nexpect)
				abort(); /* more failures than checks */
		}
	free(copy);
	return 0;
}
