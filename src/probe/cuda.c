/*
 * cuda.c - GPUs through the CUDA driver API and NVML, both dlopen()ed:
 * device list, a vector-add kernel from embedded PTX, copy bandwidth, the
 * peer-access matrix, and GPUDirect RDMA readiness.
 *
 * libcuda.so.1 gives names, memory, PCI bus ids and compute capability; one
 * primary context per device (cuDevicePrimaryCtxRetain, stable since CUDA 7,
 * unlike cuCtxCreate whose ABI changed in CUDA 13).  libnvidia-ml.so.1 gives
 * the virtualization mode (Pass-Through, VGPU), ECC and the driver version;
 * `nvidia-smi -q` (if on PATH) gives the vGPU licence state, which NVML only
 * exposes through version-dependent structs.
 *
 * Bandwidth: pinned host memory (cuMemAllocHost), a non-blocking stream,
 * warm-up copies, then `trials` timed runs of `reps` async copies between two
 * events; the median trial is reported in GB/s (1e9 B/s) of bytes copied.
 * scripts/device-probe.sh runs the same sizes and method through PyTorch as
 * the reference (docs/benchmarks.md).
 *
 * Versioned symbols: we name the _v2 entry points the headers map to and
 * fall back to the unversioned one for older drivers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_int.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;

#define CU_ATTR_CC_MAJOR 75
#define CU_ATTR_CC_MINOR 76
#define CU_STREAM_NON_BLOCKING 1
#define CU_EVENT_DEFAULT 0

struct cu {
	void *dl;
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceTotalMem)(size_t *, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*DeviceGetPCIBusId)(char *, int, CUdevice);
	CUresult (*DeviceCanAccessPeer)(int *, CUdevice, CUdevice);
	CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*PrimaryCtxRelease)(CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxSynchronize)(void);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemAllocHost)(void **, size_t);
	CUresult (*MemFreeHost)(void *);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*ModuleLoadData)(CUmodule *, const void *);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				 unsigned, unsigned, CUstream, void **, void **);
	CUresult (*GetErrorString)(CUresult, const char **);
};

typedef void *nvmlDevice_t;
struct nvml {
	void *dl;
	int (*Init)(void);
	int (*Shutdown)(void);
	const char *(*ErrorString)(int);
	int (*SystemGetDriverVersion)(char *, unsigned);
	int (*DeviceGetHandleByPciBusId)(const char *, nvmlDevice_t *);
	int (*DeviceGetVirtualizationMode)(nvmlDevice_t, int *);
	int (*DeviceGetEccMode)(nvmlDevice_t, int *, int *);
};

/* vector add c = a + b over n floats; .target sm_50 so any driver JITs it */
const char pb_vadd_ptx[] =
	".version 6.0\n"
	".target sm_50\n"
	".address_size 64\n"
	"\n"
	".visible .entry gc_vadd(\n"
	"\t.param .u64 gc_vadd_a,\n"
	"\t.param .u64 gc_vadd_b,\n"
	"\t.param .u64 gc_vadd_c,\n"
	"\t.param .u32 gc_vadd_n\n"
	")\n"
	"{\n"
	"\t.reg .pred %p<2>;\n"
	"\t.reg .f32 %f<4>;\n"
	"\t.reg .b32 %r<6>;\n"
	"\t.reg .b64 %rd<11>;\n"
	"\n"
	"\tld.param.u64 %rd1, [gc_vadd_a];\n"
	"\tld.param.u64 %rd2, [gc_vadd_b];\n"
	"\tld.param.u64 %rd3, [gc_vadd_c];\n"
	"\tld.param.u32 %r1, [gc_vadd_n];\n"
	"\tmov.u32 %r2, %ctaid.x;\n"
	"\tmov.u32 %r3, %ntid.x;\n"
	"\tmov.u32 %r4, %tid.x;\n"
	"\tmad.lo.s32 %r5, %r2, %r3, %r4;\n"
	"\tsetp.ge.u32 %p1, %r5, %r1;\n"
	"\t@%p1 bra DONE;\n"
	"\tcvta.to.global.u64 %rd4, %rd1;\n"
	"\tcvta.to.global.u64 %rd5, %rd2;\n"
	"\tcvta.to.global.u64 %rd6, %rd3;\n"
	"\tmul.wide.u32 %rd7, %r5, 4;\n"
	"\tadd.s64 %rd8, %rd4, %rd7;\n"
	"\tld.global.f32 %f1, [%rd8];\n"
	"\tadd.s64 %rd9, %rd5, %rd7;\n"
	"\tld.global.f32 %f2, [%rd9];\n"
	"\tadd.rn.f32 %f3, %f1, %f2;\n"
	"\tadd.s64 %rd10, %rd6, %rd7;\n"
	"\tst.global.f32 [%rd10], %f3;\n"
	"DONE:\n"
	"\tret;\n"
	"}\n";

static const char *cu_err(const struct cu *cu, CUresult rc)
{
	const char *s = NULL;

	if (cu->GetErrorString && cu->GetErrorString(rc, &s) == 0 && s)
		return s;
	return "unknown CUDA error";
}

static int cu_load(struct cu *cu, char *why, size_t whycap)
{
	const struct pb_sym syms[] = {
		{{"cuInit"}, (void **)&cu->Init, false},
		{{"cuDriverGetVersion"}, (void **)&cu->DriverGetVersion, false},
		{{"cuDeviceGetCount"}, (void **)&cu->DeviceGetCount, false},
		{{"cuDeviceGet"}, (void **)&cu->DeviceGet, false},
		{{"cuDeviceGetName"}, (void **)&cu->DeviceGetName, false},
		{{"cuDeviceTotalMem_v2", "cuDeviceTotalMem"}, (void **)&cu->DeviceTotalMem, false},
		{{"cuDeviceGetAttribute"}, (void **)&cu->DeviceGetAttribute, false},
		{{"cuDeviceGetPCIBusId"}, (void **)&cu->DeviceGetPCIBusId, false},
		{{"cuDeviceCanAccessPeer"}, (void **)&cu->DeviceCanAccessPeer, false},
		{{"cuDevicePrimaryCtxRetain"}, (void **)&cu->PrimaryCtxRetain, false},
		{{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"},
		 (void **)&cu->PrimaryCtxRelease, false},
		{{"cuCtxSetCurrent"}, (void **)&cu->CtxSetCurrent, false},
		{{"cuCtxSynchronize"}, (void **)&cu->CtxSynchronize, false},
		{{"cuMemAlloc_v2"}, (void **)&cu->MemAlloc, false},
		{{"cuMemFree_v2"}, (void **)&cu->MemFree, false},
		{{"cuMemAllocHost_v2"}, (void **)&cu->MemAllocHost, false},
		{{"cuMemFreeHost"}, (void **)&cu->MemFreeHost, false},
		{{"cuMemcpyHtoD_v2"}, (void **)&cu->MemcpyHtoD, false},
		{{"cuMemcpyDtoH_v2"}, (void **)&cu->MemcpyDtoH, false},
		{{"cuMemcpyHtoDAsync_v2"}, (void **)&cu->MemcpyHtoDAsync, false},
		{{"cuMemcpyDtoHAsync_v2"}, (void **)&cu->MemcpyDtoHAsync, false},
		{{"cuMemcpyDtoDAsync_v2"}, (void **)&cu->MemcpyDtoDAsync, false},
		{{"cuStreamCreate"}, (void **)&cu->StreamCreate, false},
		{{"cuStreamDestroy_v2", "cuStreamDestroy"}, (void **)&cu->StreamDestroy, false},
		{{"cuStreamSynchronize"}, (void **)&cu->StreamSynchronize, false},
		{{"cuEventCreate"}, (void **)&cu->EventCreate, false},
		{{"cuEventDestroy_v2", "cuEventDestroy"}, (void **)&cu->EventDestroy, false},
		{{"cuEventRecord"}, (void **)&cu->EventRecord, false},
		{{"cuEventSynchronize"}, (void **)&cu->EventSynchronize, false},
		{{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, (void **)&cu->EventElapsedTime,
		 false},
		{{"cuModuleLoadData"}, (void **)&cu->ModuleLoadData, false},
		{{"cuModuleUnload"}, (void **)&cu->ModuleUnload, false},
		{{"cuModuleGetFunction"}, (void **)&cu->ModuleGetFunction, false},
		{{"cuLaunchKernel"}, (void **)&cu->LaunchKernel, false},
		{{"cuGetErrorString"}, (void **)&cu->GetErrorString, true},
	};
	const char *lib = getenv("GC_PROBE_LIBCUDA");

	return pb_dl_open(&cu->dl, lib && *lib ? lib : "libcuda.so.1", syms,
			  sizeof(syms) / sizeof(syms[0]), why, whycap);
}

static int nvml_load(struct nvml *nv, char *why, size_t whycap)
{
	const struct pb_sym syms[] = {
		{{"nvmlInit_v2", "nvmlInit"}, (void **)&nv->Init, false},
		{{"nvmlShutdown"}, (void **)&nv->Shutdown, false},
		{{"nvmlErrorString"}, (void **)&nv->ErrorString, false},
		{{"nvmlSystemGetDriverVersion"}, (void **)&nv->SystemGetDriverVersion, false},
		{{"nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"},
		 (void **)&nv->DeviceGetHandleByPciBusId, false},
		{{"nvmlDeviceGetVirtualizationMode"}, (void **)&nv->DeviceGetVirtualizationMode,
		 true},
		{{"nvmlDeviceGetEccMode"}, (void **)&nv->DeviceGetEccMode, true},
	};
	const char *lib = getenv("GC_PROBE_LIBNVML");

	return pb_dl_open(&nv->dl, lib && *lib ? lib : "libnvidia-ml.so.1", syms,
			  sizeof(syms) / sizeof(syms[0]), why, whycap);
}

static const char *virt_name(int m)
{
	switch (m) {
	case 0: return "None";
	case 1: return "Pass-Through";
	case 2: return "VGPU";
	case 3: return "Host VGPU";
	case 4: return "Host VSGA";
	}
	return "Unknown";
}

/* "0000:01:00.0" and "00000000:01:00.0" name the same device. */
static bool same_bus(const char *a, const char *b)
{
	const char *ca = strchr(a, ':'), *cb = strchr(b, ':');
	long da, db;

	if (!ca || !cb || strcasecmp(ca, cb) != 0)
		return false;
	da = strtol(a, NULL, 16);
	db = strtol(b, NULL, 16);
	return da == db;
}

static void nvml_fill(struct gc_probe_cuda *c)
{
	struct nvml nv;
	int i, rc;

	memset(&nv, 0, sizeof(nv));
	if (nvml_load(&nv, c->nvml_reason, sizeof(c->nvml_reason)) != 0) {
		c->nvml_status = GC_PROBE_ABSENT;
		return;
	}
	rc = nv.Init();
	if (rc != 0) {
		c->nvml_status = GC_PROBE_FAILED;
		pb_fmt(c->nvml_reason, sizeof(c->nvml_reason), "nvmlInit: %s", nv.ErrorString(rc));
		return;
	}
	c->nvml_status = GC_PROBE_OK;
	nv.SystemGetDriverVersion(c->driver_version, sizeof(c->driver_version));
	for (i = 0; i < c->ngpu; i++) {
		struct gc_probe_gpu *g = &c->gpus[i];
		nvmlDevice_t h = NULL;
		int mode = -1, cur = -1, pend = -1;

		if (nv.DeviceGetHandleByPciBusId(g->pci_bus_id, &h) != 0)
			continue;
		if (nv.DeviceGetVirtualizationMode &&
		    nv.DeviceGetVirtualizationMode(h, &mode) == 0)
			pb_fmt(g->virt_mode, sizeof(g->virt_mode), "%s", virt_name(mode));
		if (nv.DeviceGetEccMode) {
			rc = nv.DeviceGetEccMode(h, &cur, &pend);
			pb_fmt(g->ecc, sizeof(g->ecc), "%s",
			       rc == 0 ? (cur ? "Enabled" : "Disabled") : "N/A");
		}
	}
	nv.Shutdown();
	/* keep the library mapped: some drivers leave threads behind */
}

static void nvsmi_fill(struct gc_probe_cuda *c, const struct gc_probe_options *o)
{
	char *argv[] = {"nvidia-smi", "-q", NULL};
	struct gc_probe_nvsmi *ns;
	char *out = NULL;
	size_t len = 0;
	int st = 0, i, j;

	if (o->no_tools || !pb_tool_on_path("nvidia-smi"))
		return;
	if (pb_run_tool(&out, &len, argv, PB_TOOL_TIMEOUT_MS, &st) != 0 || st != 0) {
		free(out);
		return;
	}
	ns = calloc(1, sizeof(*ns));
	if (!ns)
		abort();
	if (gc_probe_parse_nvsmi(ns, out, len, NULL) == 0) {
		if (!c->driver_version[0])
			pb_fmt(c->driver_version, sizeof(c->driver_version), "%s",
			       ns->driver_version);
		for (i = 0; i < c->ngpu; i++) {
			struct gc_probe_gpu *g = &c->gpus[i];
			for (j = 0; j < ns->ngpu; j++) {
				const struct gc_probe_nvsmi_gpu *n = &ns->gpus[j];
				if (!same_bus(g->pci_bus_id, n->bus_id))
					continue;
				if (!g->virt_mode[0])
					pb_fmt(g->virt_mode, sizeof(g->virt_mode), "%s",
					       n->virt_mode);
				if (!g->ecc[0])
					pb_fmt(g->ecc, sizeof(g->ecc), "%s", n->ecc_current);
				pb_fmt(g->license, sizeof(g->license), "%s", n->license);
			}
		}
	}
	free(ns);
	free(out);
}

/* Deterministic non-trivial inputs (never zeros). */
static float val(uint32_t i, uint32_t salt)
{
	uint32_t x = i * 2654435761u ^ salt;
	x ^= x >> 13;
	return (float)(x & 0xffff) / 64.0f - 300.0f;
}

#define CK(call, what)                                                                     \
	do {                                                                               \
		CUresult rc_ = (call);                                                     \
		if (rc_ != 0) {                                                            \
			pb_fmt(why, whycap, "%s: %s (%d)", what, cu_err(cu, rc_), rc_);    \
			goto out;                                                          \
		}                                                                          \
	} while (0)

static int vadd(struct cu *cu, char *why, size_t whycap)
{
	const uint32_t n = 1u << 20;
	size_t bytes = (size_t)n * sizeof(float);
	float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
	CUdeviceptr da = 0, db = 0, dc = 0;
	CUmodule mod = NULL;
	CUfunction fn = NULL;
	uint32_t i, nn = n, bad = 0, first_bad = 0;
	void *args[4];
	int rc = -1;

	if (!ha || !hb || !hc)
		abort();
	for (i = 0; i < n; i++) {
		ha[i] = val(i, 0x1234);
		hb[i] = val(i, 0xbeef);
		hc[i] = -1.0f;
	}
	CK(cu->ModuleLoadData(&mod, pb_vadd_ptx), "cuModuleLoadData (PTX JIT)");
	CK(cu->ModuleGetFunction(&fn, mod, "gc_vadd"), "cuModuleGetFunction");
	CK(cu->MemAlloc(&da, bytes), "cuMemAlloc");
	CK(cu->MemAlloc(&db, bytes), "cuMemAlloc");
	CK(cu->MemAlloc(&dc, bytes), "cuMemAlloc");
	CK(cu->MemcpyHtoD(da, ha, bytes), "cuMemcpyHtoD");
	CK(cu->MemcpyHtoD(db, hb, bytes), "cuMemcpyHtoD");
	CK(cu->MemcpyHtoD(dc, hc, bytes), "cuMemcpyHtoD"); /* poison the output */
	args[0] = &da;
	args[1] = &db;
	args[2] = &dc;
	args[3] = &nn;
	CK(cu->LaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL),
	   "cuLaunchKernel");
	CK(cu->CtxSynchronize(), "kernel run");
	CK(cu->MemcpyDtoH(hc, dc, bytes), "cuMemcpyDtoH");
	for (i = 0; i < n; i++) {
		if (hc[i] != ha[i] + hb[i]) {
			if (!bad)
				first_bad = i;
			bad++;
		}
	}
	if (bad) {
		pb_fmt(why, whycap, "%u of %u sums wrong (first at %u: %g + %g gave %g)", bad, n,
		       first_bad, (double)ha[first_bad], (double)hb[first_bad],
		       (double)hc[first_bad]);
		goto out;
	}
	pb_fmt(why, whycap, "%u sums correct", n);
	rc = 0;
out:
	if (da)
		cu->MemFree(da);
	if (db)
		cu->MemFree(db);
	if (dc)
		cu->MemFree(dc);
	if (mod)
		cu->ModuleUnload(mod);
	free(ha);
	free(hb);
	free(hc);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

enum dir { H2D, D2H, D2D };

/* Median GB/s of `trials` runs of `reps` async copies. */
static int time_copies(struct cu *cu, enum dir d, void *host, CUdeviceptr d1, CUdeviceptr d2,
		       size_t bytes, int reps, int trials, CUstream s, CUevent e0, CUevent e1,
		       double *gbs, char *why, size_t whycap)
{
	double res[64];
	int t, k, rc = -1;

	if (trials > 64)
		trials = 64;
	for (t = -1; t < trials; t++) { /* t = -1: warm-up */
		float ms = 0;
		int n = t < 0 ? 3 : reps;

		CK(cu->EventRecord(e0, s), "cuEventRecord");
		for (k = 0; k < n; k++) {
			if (d == H2D)
				CK(cu->MemcpyHtoDAsync(d1, host, bytes, s), "cuMemcpyHtoDAsync");
			else if (d == D2H)
				CK(cu->MemcpyDtoHAsync(host, d1, bytes, s), "cuMemcpyDtoHAsync");
			else
				CK(cu->MemcpyDtoDAsync(d2, d1, bytes, s), "cuMemcpyDtoDAsync");
		}
		CK(cu->EventRecord(e1, s), "cuEventRecord");
		CK(cu->EventSynchronize(e1), "cuEventSynchronize");
		CK(cu->EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
		if (t >= 0)
			res[t] = ms > 0 ? (double)bytes * n / ((double)ms * 1e6) : 0;
	}
	qsort(res, (size_t)trials, sizeof(double), cmp_double);
	*gbs = res[trials / 2];
	rc = 0;
out:
	return rc;
}

static int bandwidth(struct cu *cu, struct gc_probe_gpu *g, const struct gc_probe_options *o,
		     char *why, size_t whycap)
{
	size_t bytes = (size_t)o->bw_bytes;
	void *host = NULL;
	CUdeviceptr d1 = 0, d2 = 0;
	CUstream s = NULL;
	CUevent e0 = NULL, e1 = NULL;
	size_t i;
	int rc = -1;

	CK(cu->MemAllocHost(&host, bytes), "cuMemAllocHost (pinned)");
	CK(cu->MemAlloc(&d1, bytes), "cuMemAlloc");
	CK(cu->MemAlloc(&d2, bytes), "cuMemAlloc");
	for (i = 0; i < bytes; i += 4096)
		((unsigned char *)host)[i] = (unsigned char)(i >> 12 | 1);
	CK(cu->StreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	CK(cu->EventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate");
	CK(cu->EventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate");
	if (time_copies(cu, H2D, host, d1, d2, bytes, o->bw_reps, o->bw_trials, s, e0, e1,
			&g->h2d_gbs, why, whycap) != 0 ||
	    time_copies(cu, D2H, host, d1, d2, bytes, o->bw_reps, o->bw_trials, s, e0, e1,
			&g->d2h_gbs, why, whycap) != 0 ||
	    time_copies(cu, D2D, host, d1, d2, bytes, o->bw_reps, o->bw_trials, s, e0, e1,
			&g->d2d_gbs, why, whycap) != 0)
		goto out;
	rc = 0;
out:
	if (s)
		cu->StreamSynchronize(s);
	if (e0)
		cu->EventDestroy(e0);
	if (e1)
		cu->EventDestroy(e1);
	if (s)
		cu->StreamDestroy(s);
	if (d1)
		cu->MemFree(d1);
	if (d2)
		cu->MemFree(d2);
	if (host)
		cu->MemFreeHost(host);
	return rc;
}

#undef CK

static struct cu g_cu; /* kept for pb_gdr_probe (dlopen handles stay mapped) */
static bool g_cu_ok;

void pb_cuda_probe(struct gc_probe_cuda *c, const struct gc_probe_options *o)
{
	struct cu *cu = &g_cu;
	char why[GC_PROBE_REASON];
	int i, j, n = 0, rc;

	memset(c->peer, -1, sizeof(c->peer));
	c->bw_bytes = o->bw_bytes;
	c->bw_reps = o->bw_reps;
	c->bw_trials = o->bw_trials;
	memset(cu, 0, sizeof(*cu));
	if (cu_load(cu, c->reason, sizeof(c->reason)) != 0) {
		c->status = GC_PROBE_ABSENT;
		nvml_fill(c);
		return;
	}
	rc = cu->Init(0);
	if (rc == 100 /* CUDA_ERROR_NO_DEVICE */) {
		c->status = GC_PROBE_ABSENT;
		pb_fmt(c->reason, sizeof(c->reason), "no CUDA device (cuInit: %s)",
		       cu_err(cu, rc));
		return;
	}
	if (rc != 0) {
		c->status = GC_PROBE_FAILED;
		pb_fmt(c->reason, sizeof(c->reason), "cuInit: %s (%d)", cu_err(cu, rc), rc);
		return;
	}
	cu->DriverGetVersion(&c->cuda_driver_version);
	cu->DeviceGetCount(&n);
	if (n > GC_PROBE_MAX_GPUS)
		n = GC_PROBE_MAX_GPUS;
	for (i = 0; i < n; i++) {
		struct gc_probe_gpu *g = &c->gpus[c->ngpu];
		CUdevice dev;
		size_t mem = 0;

		memset(g, 0, sizeof(*g));
		g->index = i;
		if (cu->DeviceGet(&dev, i) != 0)
			continue;
		cu->DeviceGetName(g->name, sizeof(g->name), dev);
		if (cu->DeviceTotalMem(&mem, dev) == 0)
			g->mem_bytes = mem;
		cu->DeviceGetPCIBusId(g->pci_bus_id, sizeof(g->pci_bus_id), dev);
		cu->DeviceGetAttribute(&g->cc_major, CU_ATTR_CC_MAJOR, dev);
		cu->DeviceGetAttribute(&g->cc_minor, CU_ATTR_CC_MINOR, dev);
		c->ngpu++;
	}
	if (c->ngpu == 0) {
		c->status = GC_PROBE_ABSENT;
		pb_fmt(c->reason, sizeof(c->reason), "no CUDA device");
		return;
	}
	c->status = GC_PROBE_OK;
	g_cu_ok = true;
	for (i = 0; i < c->ngpu; i++)
		for (j = 0; j < c->ngpu; j++) {
			int can = 0;
			if (i != j && cu->DeviceCanAccessPeer(&can, i, j) == 0)
				c->peer[i][j] = (signed char)(can != 0);
		}
	nvml_fill(c);
	nvsmi_fill(c, o);

	c->vadd_status = GC_PROBE_OK;
	c->bw_status = o->no_bw ? GC_PROBE_NOT_RUN : GC_PROBE_OK;
	for (i = 0; i < c->ngpu; i++) {
		CUcontext ctx = NULL;

		rc = cu->PrimaryCtxRetain(&ctx, i);
		if (rc != 0 || cu->CtxSetCurrent(ctx) != 0) {
			c->vadd_status = GC_PROBE_FAILED;
			pb_fmt(c->vadd_reason, sizeof(c->vadd_reason),
			       "GPU %d: cannot create a context: %s", i, cu_err(cu, rc));
			continue;
		}
		if (vadd(cu, why, sizeof(why)) != 0) {
			c->vadd_status = GC_PROBE_FAILED;
			pb_fmt(c->vadd_reason, sizeof(c->vadd_reason), "GPU %d: %s", i, why);
		} else if (c->vadd_status == GC_PROBE_OK) {
			pb_fmt(c->vadd_reason, sizeof(c->vadd_reason), "%s on %d GPU(s)", why,
			       i + 1);
		}
		if (!o->no_bw && bandwidth(cu, &c->gpus[i], o, why, sizeof(why)) != 0) {
			c->bw_status = GC_PROBE_FAILED;
			pb_fmt(c->bw_reason, sizeof(c->bw_reason), "GPU %d: %s", i, why);
		}
		cu->CtxSetCurrent(NULL);
		cu->PrimaryCtxRelease(i);
	}
}

void pb_gdr_probe(struct gc_probe_gdr *g, const struct gc_probe_rdma *r,
		  const struct gc_probe_cuda *c)
{
	struct cu *cu = &g_cu;
	struct pb_verbs *v = NULL;
	const char *dev = NULL;
	CUcontext ctx = NULL;
	CUdeviceptr p = 0;
	const size_t len = 2u << 20;
	int i, rc;

	if (r->status != GC_PROBE_OK || c->status != GC_PROBE_OK || !g_cu_ok) {
		g->status = GC_PROBE_ABSENT;
		pb_fmt(g->reason, sizeof(g->reason), "needs both an RDMA device and a CUDA GPU "
		       "(RDMA: %s, CUDA: %s)", gc_probe_status_name(r->status),
		       gc_probe_status_name(c->status));
		return;
	}
	if (!r->verbs_loaded) {
		g->status = GC_PROBE_ABSENT;
		pb_fmt(g->reason, sizeof(g->reason), "%s", r->verbs_reason);
		return;
	}
	for (i = 0; i < r->ndev && !dev; i++)
		if (r->devs[i].nports > 0)
			dev = r->devs[i].name;
	if (!dev)
		dev = r->devs[0].name;
	if (pb_verbs_load(&v, g->reason, sizeof(g->reason)) != 0) {
		g->status = GC_PROBE_ABSENT;
		return;
	}
	rc = cu->PrimaryCtxRetain(&ctx, 0);
	if (rc != 0 || cu->CtxSetCurrent(ctx) != 0 || cu->MemAlloc(&p, len) != 0) {
		g->status = GC_PROBE_FAILED;
		pb_fmt(g->reason, sizeof(g->reason), "cannot allocate GPU memory");
		goto out;
	}
	rc = pb_verbs_try_reg(v, dev, (void *)(uintptr_t)p, len, g->reason, sizeof(g->reason));
	g->status = rc == 0 ? GC_PROBE_OK : GC_PROBE_FAILED;
	if (rc != 0 && !r->peermem[0]) {
		size_t n = strlen(g->reason);
		pb_fmt(g->reason + n, sizeof(g->reason) - n,
		       "; neither nvidia_peermem nor nv_peer_mem is loaded");
	}
out:
	if (p)
		cu->MemFree(p);
	if (ctx) {
		cu->CtxSetCurrent(NULL);
		cu->PrimaryCtxRelease(0);
	}
	pb_verbs_unload(v);
}
