/*
 * probe.h - the node probe: what one guest has (RDMA, CUDA, GPUDirect) and
 * whether that matches what the spec says it should have.
 *
 * The probe is built with libc alone (cmake -DGC_PROBE_ONLY=ON) and loads
 * libibverbs.so.1, libcuda.so.1 and libnvidia-ml.so.1 with dlopen() at run
 * time, so one binary ships to any guest.  Everything it finds lands in one
 * plain struct gc_probe_report of fixed-size arrays (no allocations to free);
 * the renderers turn it into a human table or JSON.  Library code never
 * prints: gc_probe_main() is the only function that writes to stdout/stderr.
 *
 * The text parsers (ibv_devinfo, show_gids, mlnx_qos, sysfs traffic_class,
 * nvidia-smi -q) are public so that the cluster half of `validate` can parse
 * the same outputs captured over SSH.
 */
#ifndef GC_PROBE_H
#define GC_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/error.h"

#define GC_PROBE_MAX_RDMA  16 /* RDMA devices kept */
#define GC_PROBE_MAX_PORTS 4  /* ports kept per device */
#define GC_PROBE_MAX_GIDS  16 /* populated GID entries kept per port */
#define GC_PROBE_MAX_GPUS  16
#define GC_PROBE_MAX_CHECKS 64
#define GC_PROBE_REASON 256

/* Exit codes of gc_probe_main() / gpuclusterctl-probe: gpuclusterctl's own
 * contract (docs/gpuclusterctl.1, EXIT STATUS), plus NOTHING. */
enum gc_probe_exit {
	GC_PROBE_EXIT_OK = 0,       /* something was checked, nothing failed */
	GC_PROBE_EXIT_FAIL = 1,     /* an expectation failed, or a requested RDMA or MPI test */
	GC_PROBE_EXIT_NOTHING = 5,  /* nothing to check: no RDMA device, no CUDA GPU, no
				       expectation, no RDMA test that ran (pytest's 5) */
	GC_PROBE_EXIT_USAGE = 64,   /* bad command line or expect file (EX_USAGE) */
	GC_PROBE_EXIT_INTERRUPTED = 130, /* SIGINT */
};

/* Status of one area: absent is "not present here", never a tool failure. */
enum gc_probe_status {
	GC_PROBE_NOT_RUN = 0, /* not asked for */
	GC_PROBE_OK,
	GC_PROBE_ABSENT,      /* library or device not present */
	GC_PROBE_FAILED,      /* present but broken; see reason */
};
const char *gc_probe_status_name(int status);

struct gc_probe_gid {
	int index;
	char gid[40];    /* "0000:0000:0000:0000:0000:ffff:c0a8:d3f2" */
	char type[16];   /* "RoCE v2", "IB/RoCE v1", "" if unknown */
	char ndev[32];   /* net device of the GID, "" if none */
	char ipv4[16];   /* dotted IPv4 for IPv4-mapped GIDs, else "" */
};

struct gc_probe_port {
	int num;
	char state[24];    /* "PORT_ACTIVE", "PORT_DOWN", ... */
	int state_num;     /* 4 = active; -1 unknown */
	int active_mtu;    /* bytes (1024, 4096); 0 unknown */
	int max_mtu;
	char link_layer[16]; /* "Ethernet", "InfiniBand" */
	int lid;
	int ngids;
	struct gc_probe_gid gids[GC_PROBE_MAX_GIDS];
	int roce_v2_index;  /* GID index to use (NCCL_IB_GID_INDEX), -1 none */
	int traffic_class;  /* tc/<port>/traffic_class "Global tclass=", -1 unset */
	int default_tos;    /* rdma_cm default_roce_tos (configfs), -1 unknown */
	char netdev[32];
};

struct gc_probe_qos {
	bool present;       /* parsed from mlnx_qos */
	char netdev[32];
	char dcbx[40];      /* "OS controlled" */
	char trust[16];     /* "dscp", "pcp" */
	int pfc[8];         /* enabled 0/1 per priority, -1 unknown */
	char reason[GC_PROBE_REASON]; /* why absent */
};

struct gc_probe_rdma_dev {
	char name[64];
	char fw_ver[64];
	char node_guid[24];
	char transport[32];
	int nports;
	struct gc_probe_port ports[GC_PROBE_MAX_PORTS];
	struct gc_probe_qos qos;
};

struct gc_probe_rdma {
	int status;               /* OK: devices found; ABSENT: none */
	char reason[GC_PROBE_REASON];
	bool verbs_loaded;        /* libibverbs.so.1 could be dlopen()ed */
	char verbs_reason[GC_PROBE_REASON];
	int ndev;
	struct gc_probe_rdma_dev devs[GC_PROBE_MAX_RDMA];
	char peermem[32];         /* "nvidia_peermem", "nv_peer_mem" or "" */
};

struct gc_probe_gpu {
	int index;
	char name[96];
	uint64_t mem_bytes;
	char pci_bus_id[32];      /* "0000:01:00.0" as CUDA prints it */
	int cc_major, cc_minor;
	char virt_mode[24];       /* "Pass-Through", "VGPU", "None", "" unknown */
	char ecc[16];             /* "Enabled", "Disabled", "N/A", "" */
	char license[96];         /* vGPU licence status from nvidia-smi -q, "" */
	/* Bandwidth, GB/s (1e9 bytes/s), median of trials; 0 not measured. */
	double h2d_gbs, d2h_gbs, d2d_gbs;
};

struct gc_probe_cuda {
	int status;
	char reason[GC_PROBE_REASON];
	int cuda_driver_version;  /* cuDriverGetVersion: 13000 */
	int nvml_status;
	char nvml_reason[GC_PROBE_REASON];
	char driver_version[32];  /* NVML or nvidia-smi: "580.159.04" */
	int ngpu;
	struct gc_probe_gpu gpus[GC_PROBE_MAX_GPUS];
	int vadd_status;          /* vector-add from embedded PTX */
	char vadd_reason[GC_PROBE_REASON];
	int bw_status;
	char bw_reason[GC_PROBE_REASON];
	uint64_t bw_bytes;        /* bytes per copy */
	int bw_reps, bw_trials;
	signed char peer[GC_PROBE_MAX_GPUS][GC_PROBE_MAX_GPUS]; /* 1 yes, 0 no, -1 self/unknown */
};

struct gc_probe_gdr {
	int status;               /* OK: GPU memory registered with the HCA */
	char reason[GC_PROBE_REASON];
};

struct gc_probe_rdma_test {
	int status;
	char role[8];             /* "server", "client" */
	char peer[128];
	char device[64];
	int port, gid_index;
	uint64_t msg_bytes;
	int iters;
	double bw_gbs;            /* RDMA write bandwidth, GB/s */
	double lat_us;            /* median completion latency of a small write */
	char reason[GC_PROBE_REASON];
};

struct gc_probe_check {
	char key[48];
	char expected[96];
	char found[96];
	bool pass;
	char hint[GC_PROBE_REASON];
};

struct gc_probe_report {
	struct gc_probe_rdma rdma;
	struct gc_probe_cuda cuda;
	struct gc_probe_gdr gdr;
	struct gc_probe_rdma_test rdma_test;
	int nexpect;              /* expectations evaluated */
	int nfailed;
	struct gc_probe_check checks[GC_PROBE_MAX_CHECKS];
};

/* ---- options and the whole run ---- */

struct gc_probe_options {
	const char *sysfs_root;   /* prefix for /sys and /proc ("" = real); env GC_PROBE_SYSFS */
	bool no_tools;            /* do not run mlnx_qos / nvidia-smi; env GC_PROBE_NO_TOOLS=1 */
	bool no_cuda, no_rdma, no_bw;
	uint64_t bw_bytes;        /* default 256 MiB */
	int bw_reps, bw_trials;   /* default 20, 5 */
	/* RDMA test */
	bool rdma_server;
	const char *rdma_peer;    /* host of a probe started with --rdma-server */
	const char *rdma_dev;     /* device name, NULL = first with an active port */
	int rdma_ib_port;         /* 0 = first active */
	int rdma_gid_index;       /* -1 = the RoCE v2 index found */
	int rdma_tcp_port;        /* default 18515 */
	int rdma_tclass;          /* GRH traffic class, default 0 */
	uint64_t rdma_msg_bytes;  /* default 1 MiB */
	int rdma_iters;           /* default 2000 */
	int rdma_timeout_s;       /* default 60 */
	int rdma_qp_timeout;      /* local ACK timeout 4.096 us * 2^N, default 14 */
};
void gc_probe_options_init(struct gc_probe_options *o);

/* Fill r (zeroed first) by probing this machine. Never fails as a whole. */
void gc_probe_run(struct gc_probe_report *r, const struct gc_probe_options *o);

/* ---- expectations: "key = value" lines (docs/probe.md) ---- */

struct gc_probe_expect {
	int n;
	struct {
		char key[48];
		char value[96];
		int line;
	} items[GC_PROBE_MAX_CHECKS];
};
/* Parse an expect file's text; file names the source in diagnostics. */
int gc_probe_expect_parse(struct gc_probe_expect *out, const char *text, size_t len,
			  const char *file, struct gc_error *err);
/* Add one "key=value" (from --expect-set). */
int gc_probe_expect_add(struct gc_probe_expect *e, const char *kv, struct gc_error *err);
/* Evaluate against r, filling r->checks; returns the number failed. */
int gc_probe_expect_eval(struct gc_probe_report *r, const struct gc_probe_expect *e);

/* ---- rendering; *out is malloc()ed, caller frees ---- */

/* What a report amounts to: GC_PROBE_EXIT_FAIL, _NOTHING or _OK (the exit
 * code, and "result" in JSON: "failed", "nothing_to_check", "ok"). */
enum gc_probe_exit gc_probe_verdict(const struct gc_probe_report *r);
int gc_probe_render_text(char **out, const struct gc_probe_report *r);
int gc_probe_render_json(char **out, const struct gc_probe_report *r);

/* ---- parsers of captured text (REAL-FORMATS C.*); never read past len ---- */

/* `ibv_devinfo [-v]`: devices, transport, fw_ver, node_guid, ports. Adds to out. */
int gc_probe_parse_ibv_devinfo(struct gc_probe_rdma *out, const char *text, size_t len,
			       struct gc_error *err);
/* `show_gids`: adds GIDs (with type v1/v2, IPv4, netdev) to out's ports. */
int gc_probe_parse_show_gids(struct gc_probe_rdma *out, const char *text, size_t len,
			     struct gc_error *err);
/* `mlnx_qos -i IF`: trust state, DCBX mode and the PFC `enabled` row. */
int gc_probe_parse_mlnx_qos(struct gc_probe_qos *out, const char *text, size_t len,
			    struct gc_error *err);
/* sysfs tc/N/traffic_class: "Global tclass=106" -> 106; empty file -> -1. */
int gc_probe_parse_traffic_class(int *tclass, const char *text, size_t len,
				 struct gc_error *err);

struct gc_probe_nvsmi_gpu {
	char bus_id[32];          /* "00000000:01:00.0" */
	char product[96];
	char virt_mode[24];
	char host_vgpu_mode[24];
	char licensed_product[96];
	char license[96];
	char ecc_current[16];
	int64_t fb_total_mib;     /* -1 unknown */
};
struct gc_probe_nvsmi {
	char driver_version[32];
	char cuda_version[16];
	int ngpu;
	struct gc_probe_nvsmi_gpu gpus[GC_PROBE_MAX_GPUS];
};
/* `nvidia-smi -q`: per-GPU product, virtualization, licence, ECC, FB total. */
int gc_probe_parse_nvsmi(struct gc_probe_nvsmi *out, const char *text, size_t len,
			 struct gc_error *err);

/* ---- the RDMA test's queue-pair exchange (over TCP, one text line each way) ---- */

#define GC_PROBE_QP_VERSION 1
#define GC_PROBE_QP_LINE_MAX 256

struct gc_probe_qpinfo {
	uint32_t qpn;      /* 24 bits */
	uint32_t psn;      /* 24 bits */
	uint16_t lid;
	int mtu;           /* ibv_mtu enum 1..5 */
	uint8_t gid[16];
	uint32_t rkey;
	uint64_t addr;
	uint64_t size;
};
/* Writes one '\n'-terminated line; returns its length or GC_EINVAL if it would not fit. */
int gc_probe_qp_format(char *buf, size_t cap, const struct gc_probe_qpinfo *qi);
int gc_probe_qp_parse(struct gc_probe_qpinfo *out, const char *line, size_t len,
		      struct gc_error *err);
/* Send ours, read theirs on a connected socket, with a timeout in ms. */
int gc_probe_qp_exchange(struct gc_probe_qpinfo *theirs, int fd,
			 const struct gc_probe_qpinfo *ours, int timeout_ms, struct gc_error *err);
/* TCP helpers: listen (port 0 = any; *bound gets the port), accept with timeout, connect. */
int gc_probe_tcp_listen(int *fd, int port, int *bound, struct gc_error *err);
int gc_probe_tcp_accept(int *fd, int lfd, int timeout_ms, struct gc_error *err);
int gc_probe_tcp_connect(int *fd, const char *host, int port, int timeout_ms,
			 struct gc_error *err);
/* One short line ("GCPROBE-READY") each way. */
int gc_probe_line_send(int fd, const char *line, struct gc_error *err);
int gc_probe_line_recv(char *buf, size_t cap, int fd, int timeout_ms, struct gc_error *err);

/* The `probe` command: `gpuclusterctl probe ...` and `gpuclusterctl-probe ...`. */
int gc_probe_main(int argc, char **argv);
/* Its --help text (shell completion reads the options from it). */
extern const char gc_probe_usage[];

#endif
