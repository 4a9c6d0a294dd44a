/*
 * mpi.h - the workload half of `gpuclusterctl validate` (internal to
 * src/validate): an MPI job across the guests, as an Open MPI command line
 * run on the first guest, a Kubeflow MPIJob or a Slurm batch script, and the
 * parsers of what the job prints (nccl-tests' all_reduce_perf with
 * NCCL_DEBUG=INFO, or the probe's `--mpi-bw` line).
 *
 * Everything here is pure: text in, text out, no I/O (docs/validate-mpi.md).
 * Functions that compose text check every value they put in it first and
 * append to `out` only on success.
 */
#ifndef GC_VALIDATE_MPI_H
#define GC_VALIDATE_MPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/arena.h"
#include "gc/error.h"
#include "gc/spec.h"
#include "gc/util.h"

#define GC_MPI_MAX_NODES 4096
#define GC_MPI_MAX_SLOTS 64         /* GPUs (ranks) per node */
#define GC_MPI_TEXT_MAX (64u << 20) /* output we parse */

/* The default programs (docs/validate-mpi.md). */
#define GC_MPI_NCCL_PROGRAM "all_reduce_perf"
#define GC_MPI_NCCL_ARGS "-b 8 -e 256M -f 2 -g 1"

struct gc_mpi_node {
	const char *name;    /* the VM's name in the spec */
	const char *address; /* address on the RDMA network, no prefix: "198.18.0.51" */
	unsigned slots;      /* ranks on it: its GPUs, or 1 */
};

struct gc_mpi_job {
	const struct gc_mpi_node *nodes; /* in spec order; nodes[0] is the launcher */
	size_t nnodes;
	const char *hca;        /* NCCL_IB_HCA, e.g. "mlx5_0" / "rxe0"; NULL: unset */
	int gid_index;          /* NCCL_IB_GID_INDEX; -1 unset */
	int tos;                /* the guest roce_qos ToS -> NCCL_IB_TC; -1 unset */
	const char *ifname;     /* NCCL_SOCKET_IFNAME and Open MPI's btl_tcp_if_include /
	                           oob_tcp_if_include; a comma list when guests differ; NULL unset */
	const char *command;    /* NULL: the default program; else one shell command line
	                           each rank runs (through sh -c) */
	const char *probe_path; /* gpuclusterctl-probe on the guests, for the MPI bandwidth
	                           test run when nccl-tests is absent */
	bool expect_rdma;       /* the spec gives every guest an RDMA NIC: a socket transport fails */
	bool as_root;           /* mpirun runs as root: add --allow-run-as-root */
	unsigned time_limit_s;  /* gc_mpi_command only: 0, no limit; else each mpirun runs
	                           under coreutils' timeout, which after that many seconds
	                           sends SIGTERM to mpirun's process group (mpirun stops
	                           the ranks on every node) and SIGKILL
	                           GC_MPI_KILL_AFTER_S later */
	bool stop_on_eof;       /* gc_mpi_command only: each mpirun runs in the background
	                           and is stopped (SIGTERM to timeout, which passes one
	                           to mpirun) when the command's standard input ends:
	                           the caller's EOF on an interrupt, or its connection
	                           gone (GC_MPI_STOP_ON_EOF_PROLOGUE) */
	const char *run_tag;    /* gc_mpi_command only: NULL, or a token ([0-9a-f], at most
	                           64) put in every rank's environment as
	                           GC_MPI_RUN_TAG=token, which gc_mpi_sweep_command finds */
};

/* The environment variable that marks a run's ranks (job->run_tag). */
#define GC_MPI_RUN_TAG_VAR "GC_MPI_RUN_TAG"

/*
 * With job->stop_on_eof the command starts with this: the command's stdin
 * kept as fd 3, and gc_run, which runs its arguments in the background with
 * stdin from /dev/null, reads fd 3 to its end in a watcher beside them, and
 * sends them SIGTERM when it ends first; the watcher goes when they exit
 * first, and gc_run returns their status.  Both waits have stderr closed:
 * the shell reports a job that a signal ended ("Terminated").
 */
#define GC_MPI_STOP_ON_EOF_PROLOGUE                                                            \
	"exec 3<&0; gc_run() { \"$@\" </dev/null 3<&- & p=$!; "                                  \
	"{ while read -r gc_line; do :; done <&3; kill -TERM \"$p\"; } 2>/dev/null & w=$!; "     \
	"wait \"$p\" 2>/dev/null; r=$?; kill \"$w\" 2>/dev/null; wait \"$w\" 2>/dev/null; return \"$r\"; }; "

/* The grace between timeout's SIGTERM and its SIGKILL. */
#define GC_MPI_KILL_AFTER_S 10u

/*
 * The job of a cluster: every VM whose guest has an rdma_interface, in spec
 * order, at that interface's address (prefix dropped), with one slot per GPU
 * of the VM (1 without GPUs).  ifname is the interfaces' names (distinct, in
 * order, comma-separated when they differ); tos the roce_qos ToS of the
 * guests that set one (they must agree); expect_rdma is true when every
 * VM has an SR-IOV, PVRDMA or passed-through NIC.  hca and gid_index come
 * from the probe's observation (-1 / NULL: leave NCCL to choose).  nodes and
 * strings are allocated in `arena`; command and probe_path are left NULL.
 * GC_ENOTFOUND when no guest has an rdma_interface; GC_EINVAL on guests
 * disagreeing about the ToS.
 */
int gc_mpi_job_from_spec(struct gc_mpi_job *out, struct gc_arena *arena, const struct gc_cluster *c,
			 const char *hca, int gid_index, struct gc_error *err);

/* Ranks of the NCCL run: the sum of the slots. */
unsigned gc_mpi_job_ranks(const struct gc_mpi_job *job);

/* Open MPI hostfile: one "ADDRESS slots=N" line per node. */
int gc_mpi_hostfile(struct gc_buf *out, const struct gc_mpi_job *job, struct gc_error *err);

/*
 * One POSIX-shell command line for the launcher (nodes[0]), with the
 * hostfile already at hostfile_path there.  Without job->command: nccl-tests'
 * all_reduce_perf, one rank per GPU, when `command -v all_reduce_perf`
 * finds it, else the probe's MPI bandwidth test, one rank per node.
 */
int gc_mpi_command(struct gc_buf *out, const struct gc_mpi_job *job, const char *hostfile_path,
		   struct gc_error *err);

/*
 * One POSIX-shell command line for any node: SIGKILL to every process of the
 * login user whose environment holds GC_MPI_RUN_TAG=run_tag (a stopped run's
 * ranks and whatever they started), then print how many it killed.  Run on
 * every node after a run was stopped, so that nothing of it is left even when
 * mpirun itself had to be killed before it could stop its ranks.
 * GC_EINVAL when run_tag is not 1-64 characters of [0-9a-f].
 */
int gc_mpi_sweep_command(struct gc_buf *out, const char *run_tag, struct gc_error *err);

/* A Kubeflow MPIJob (kubeflow.org/v2beta1) with the same settings; image
 * holds nccl-tests (or job->command) and sshd, like mpi-operator's images. */
int gc_mpi_emit_mpijob(struct gc_buf *out, const struct gc_mpi_job *job, const char *name,
		       const char *image, struct gc_error *err);

/* An sbatch script with the same settings, launched by Open MPI's mpirun. */
int gc_mpi_emit_slurm(struct gc_buf *out, const struct gc_mpi_job *job, struct gc_error *err);

/* ---------------------------------------------------------------- results */

enum gc_mpi_transport {
	GC_MPI_NET_UNKNOWN, /* no inter-node NCCL traffic seen (one node, or no NCCL_DEBUG=INFO) */
	GC_MPI_NET_IB,      /* NCCL's IB verbs transport ("IB", or a plugin named "IB..." such as "IBext") */
	GC_MPI_NET_SOCKET,  /* NCCL's TCP socket transport */
	GC_MPI_NET_OTHER,   /* another net plugin (e.g. "AWS Libfabric") */
};

/* What NCCL_DEBUG=INFO says about the network (gc_mpi_scan_nccl_net). */
struct gc_mpi_net {
	enum gc_mpi_transport transport; /* Socket when any traffic went over sockets */
	char net_name[32];     /* NCCL's name of the network used, e.g. "IB", "IBext_v8", "Socket" */
	char ib_devices[128];  /* "[0]mlx5_0:1/RoCE" from "NET/IB : Using ..." (first seen), or "" */
	bool ib_no_device;     /* "NET/IB : No device found." */
	bool socket_fallback;  /* inter-node traffic used NCCL's socket transport */
	unsigned net_channels; /* "via NET/..." channel lines seen */
	char first_warn[160];  /* the first "NCCL WARN" message, or "" */
};

struct gc_mpi_nccl {
	unsigned rows;            /* result lines of the table */
	double avg_busbw_gbs;     /* "# Avg bus bandwidth : X" (GB/s) */
	uint64_t max_bytes;       /* size of the largest row */
	double max_busbw_gbs;     /* its busbw, the larger of out-of-place and in-place */
	uint64_t wrong;           /* #wrong summed over every row and both halves */
	bool wrong_checked;       /* false when the run printed N/A (-c 0) */
	long oob_values;          /* "# Out of bounds values : N", -1 when absent */
};

/* Our own MPI bandwidth test (gpuclusterctl-probe --mpi-bw). */
struct gc_mpi_bw {
	unsigned ranks, pairs;
	double pair_min_gbs, pair_max_gbs, allreduce_gbs;
	uint64_t bytes, allreduce_bytes;
	unsigned iters;
	bool data_ok;
};

enum gc_mpi_result_kind { GC_MPI_RESULT_NCCL, GC_MPI_RESULT_MPIBW };

struct gc_mpi_result {
	enum gc_mpi_result_kind kind;
	struct gc_mpi_nccl nccl; /* kind NCCL */
	struct gc_mpi_bw bw;     /* kind MPIBW */
	struct gc_mpi_net net;   /* scanned in both kinds (empty without NCCL) */
};

/*
 * nccl-tests output (all_reduce_perf and its siblings) mixed with mpirun's
 * and NCCL's lines: the result table (columns found by its header, so
 * older and newer nccl-tests both read), the footer, and the network NCCL
 * used.  GC_EINVAL "nccl-tests:LINE: ..." on a malformed row, a row before
 * any header, or output that ends before "# Avg bus bandwidth".
 */
int gc_mpi_parse_nccl(struct gc_mpi_result *out, const char *text, size_t len,
		      struct gc_error *err);

/* The probe's "GCPROBE-MPIBW ..." line anywhere in text (docs/probe.md). */
int gc_mpi_parse_mpibw(struct gc_mpi_result *out, const char *text, size_t len,
		       struct gc_error *err);

/* Whichever of the two the text holds (the probe line wins when present). */
int gc_mpi_parse_output(struct gc_mpi_result *out, const char *text, size_t len,
			struct gc_error *err);

/* Scan NCCL_DEBUG=INFO lines only; never fails. */
void gc_mpi_scan_nccl_net(struct gc_mpi_net *out, const char *text, size_t len);

const char *gc_mpi_transport_name(enum gc_mpi_transport t); /* "unknown" "IB" "Socket" "other" */

#endif
