/*
 * validate.h - `gpuclusterctl validate`: the checks it runs and the report
 * they make (src/validate).
 *
 * A report is a flat list of checks, each tied to one target (a host, the
 * switch, the vCenter, a VM, a guest, a pair of guests, or the MPI job) and
 * grouped by that target when rendered: a table for people, JSON
 * (docs/validate.md, "schema": 1) for programs, JUnit XML (one testsuite per
 * target) for CI systems.  Checks keep the order they were added in.
 */
#ifndef GC_VALIDATE_H
#define GC_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "gc/error.h"
#include "gc/util.h"

enum gc_check_status { GC_CHECK_PASS, GC_CHECK_FAIL, GC_CHECK_SKIP };

/* What a check's target is; its name in the reports. */
enum gc_check_target {
	GC_CT_ESXI,    /* "esxi" */
	GC_CT_SWITCH,  /* "switch" */
	GC_CT_VCENTER, /* "vcenter" */
	GC_CT_VM,      /* "vm" */
	GC_CT_GUEST,   /* "guest" */
	GC_CT_PAIR,    /* "pair": two guests, target "a<->b" */
	GC_CT_MPI,     /* "mpi": the workload across the guests */
	GC_CT_KVM,     /* "kvm": a KVM host (its Linux, its libvirt networks) */
};

struct gc_check {
	char *target;      /* "esx01", "node1", "node1<->node2", "mpirun" */
	enum gc_check_target target_kind;
	char *name;        /* "config.vm.memory_gb", "gpu.count", "rdma.write_bw" */
	enum gc_check_status status;
	char *expected;    /* NULL: none (e.g. a read that must simply work) */
	char *found;       /* NULL: nothing found (unreachable, not run) */
	char *hint;        /* the likely cause, on FAIL (and why, on SKIP); or NULL */
	double seconds;    /* how long the check took, 0 when not timed */
};

struct gc_validate_report {
	struct gc_check *checks;
	size_t nchecks, cap;
	char *spec;        /* the spec's path as given */
	double wall_s;     /* whole run */
	time_t started;    /* when the run began (JUnit timestamp); 0: when written */
	bool interrupted;  /* SIGINT/SIGTERM stopped the MPI workload (the CLI exits 130) */
};

/* A check's strings (a remote host's output among them) are cut to this many
 * bytes, at a character boundary, ending in "…". */
#define GC_VREPORT_VALUE_MAX 4096

const char *gc_check_status_name(enum gc_check_status s);   /* "pass" "fail" "skip" */
const char *gc_check_target_name(enum gc_check_target k);   /* "esxi" ... "mpi" */

/* Append one check; strings are copied (NULL stays NULL), values longer than
 * GC_VREPORT_VALUE_MAX cut.  Returns it (set ->seconds there); the pointer is
 * good until the next add. */
struct gc_check *gc_vreport_add(struct gc_validate_report *r, enum gc_check_target kind,
				const char *target, const char *name, enum gc_check_status st,
				const char *expected, const char *found, const char *hint);
void gc_vreport_free(struct gc_validate_report *r);
/* Counts by status; any pointer may be NULL. */
void gc_vreport_count(const struct gc_validate_report *r, size_t *pass, size_t *fail,
		      size_t *skip);

#define GC_VREPORT_COLOR 1u
/* The table for people: one block per target in order of first appearance,
 * a line per check (PASS/FAIL/SKIP, name, found, expected), hints under
 * failures, then one summary line. */
void gc_vreport_render_text(struct gc_buf *out, const struct gc_validate_report *r,
			    unsigned flags);
/* JSON, "schema": 1 (docs/validate.md). */
void gc_vreport_render_json(struct gc_buf *out, const struct gc_validate_report *r);
/* JUnit XML through libxml2: <testsuites> with one <testsuite> per target,
 * a <testcase> per check (<failure> / <skipped>), written to path (beside it
 * first, then renamed).  Valid against Jenkins' junit-10.xsd
 * (tests/data/validate/junit-10.xsd). */
int gc_vreport_write_junit(const char *path, const struct gc_validate_report *r,
			   struct gc_error *err);

/* ---------------------------------------------------------------- running it */

#include "gc/sys/driver.h"

struct gc_graph;

/* Check groups `--skip` can leave out (each then reported SKIP, not hidden). */
#define GC_VSKIP_CONFIG 0x1u /* the read-back of hosts, switch, VMs, guests */
#define GC_VSKIP_NODE 0x2u   /* the probe in each guest */
#define GC_VSKIP_PAIRS 0x4u  /* RDMA between guests */
#define GC_VSKIP_CUDA 0x8u   /* CUDA, copy bandwidth, GPUDirect (a node without CUDA) */

struct gc_validate_opts {
	const char *state_dir;       /* as plan's (journal: reboots owed) */
	unsigned parallelism;        /* targets at once; 0: 64 */
	struct gc_drv_settings drv;  /* --known-hosts, --trust-new-host-keys */
	unsigned skip;               /* GC_VSKIP_* */
	const char *probe_path;      /* the gpuclusterctl-probe executable uploaded to guests */
	unsigned rdma_msg_kib;       /* RDMA write size; 0: 1024 */
	unsigned rdma_iters;         /* RDMA writes for bandwidth; 0: 2000 */
	unsigned rdma_timeout_s;     /* wait for the peer; 0: 60 */
	unsigned rdma_qp_timeout;    /* the test QP's local ACK timeout; 0: the probe's (14) */
	bool mpirun;                 /* run the workload across the guests (--mpirun) */
	const char *mpi_command;     /* its program; NULL: all_reduce_perf, else the probe's --mpi-bw */
	unsigned mpi_timeout_s;      /* 0: 600 */
	const char *emit_mpijob;     /* write the job as a Kubeflow MPIJob here, or NULL */
	const char *mpi_image;       /* its container image; NULL: the default in mpi.c */
	const char *emit_slurm;      /* write the job as an sbatch script here, or NULL */
	/* A target's step, for progress lines ("running the probe"); may be
	 * NULL; called from worker threads, serialised. */
	void (*progress)(void *arg, const char *target, const char *what);
	void *progress_arg;
};

/*
 * Read everything back and run the checks; never changes a target (the one
 * thing written is the probe executable, into the guest user's
 * ~/.cache/gpuclusterctl/, when its build is not there yet).  Returns 0 when
 * the checks could run (pass or fail: see the report), else an error
 * (nothing could be observed, the probe file is unreadable).
 */
int gc_validate_run(struct gc_validate_report *r, const struct gc_graph *g,
		    const struct gc_validate_opts *o, struct gc_error *err);

/*
 * The RDMA pair rounds over n guests (in spec order): round 0 pairs (0,1)
 * (2,3) ..., round 1 pairs (1,2) (3,4) ... and, for an even n above 2,
 * (n-1,0).  No guest is in two pairs of a round; every guest is in one pair
 * at least.  Fills pairs[] (room for n/2 + 1) with (server, client) indexes
 * and returns how many.
 */
size_t gc_validate_pair_round(size_t (*pairs)[2], size_t n, unsigned round);

/* ---------------------------------------------------------------- the probe's report */

struct gc_validation;

struct gc_vprobe_in {
	const char *target;              /* the guest */
	const struct gc_validation *val; /* the spec's thresholds */
	bool gpus;                       /* its VM has GPUs: CUDA must work */
	bool skip_cuda;                  /* --skip cuda */
};

struct gc_vprobe_out {
	char *hca;     /* first RDMA device with an ACTIVE port (caller frees), or NULL */
	int gid_index; /* its port's RoCE v2 GID index, -1 unknown */
};

/*
 * The node probe's `--json` report (docs/probe.md) as checks of in->target:
 * the probe's expectation results, CUDA, the copy bandwidth against
 * `validation:`.  GC_EINVAL, adding nothing, when text is not one JSON
 * object.  The text is a guest's: nothing in it is trusted.
 */
int gc_validate_probe_checks(struct gc_validate_report *r, const struct gc_vprobe_in *in,
			     const char *text, size_t len, struct gc_vprobe_out *out);

/* The RDMA write test's result in the client probe's report. */
struct gc_vprobe_rdma {
	bool ok;           /* "status": "ok" (the server verified every byte) */
	char reason[256];  /* why not */
	double bw_gbps;    /* Gb/s (the probe reports GB/s) */
	double lat_us;
};
int gc_validate_probe_rdma_test(struct gc_vprobe_rdma *out, const char *text, size_t len);

/* The RoCE path MTU an interface MTU allows: the largest IB MTU (256..4096)
 * that fits with 74 bytes of RoCE headers (9000 -> 4096, 1500 -> 1024). */
unsigned gc_validate_roce_mtu(unsigned ifmtu);

#endif
