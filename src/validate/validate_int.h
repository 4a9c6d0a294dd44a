/*
 * validate_int.h - what the files of src/validate share: the run's context,
 * one session per guest, and the steps after the node checks (pairs.c: the
 * RDMA pair rounds; workload.c: the Open MPI job and its MPIJob/sbatch).
 */
#ifndef GC_VALIDATE_INT_H
#define GC_VALIDATE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "gc/graph.h"
#include "gc/guest.h"
#include "gc/ssh.h"
#include "gc/validate.h"

struct vctx {
	const struct gc_graph *g;
	const struct gc_validate_opts *o;
	struct gc_validate_report *r;
	pthread_mutex_t mu; /* the report and progress */
	char probe_name[96]; /* "gpuclusterctl-probe-<version>-<hash>" */
};

/* One guest: its connection (kept for the pair rounds) and what it found. */
struct gsess {
	struct vctx *v;
	const struct gc_target *t;
	const struct gc_guest *gst;
	struct gc_ssh_conn *ssh;
	bool usable;          /* connected and the probe is in place */
	char *probe;          /* remote path ("$HOME/..." expanded by the shell) */
	char *rdma_addr;      /* the RDMA interface's address, no prefix */
	char *hca;            /* RDMA device the probe found active */
	int gid_index;        /* its RoCE v2 GID index, -1 unknown */
	bool root;            /* the login user is root */
};

/* One check into the report, under the run's lock. */
void vd_add(struct vctx *v, enum gc_check_target k, const char *target, const char *name,
	    enum gc_check_status st, const char *exp, const char *found, const char *hint);
/* The same with how long the check took (the JUnit testcase time). */
void vd_add_timed(struct vctx *v, double seconds, enum gc_check_target k, const char *target,
		  const char *name, enum gc_check_status st, const char *exp, const char *found,
		  const char *hint);
/* A target's step for the progress line, under the run's lock. */
void vd_progress(struct vctx *v, const char *target, const char *what);
/* Run a script as root on the guest (sudo -n for another login user). */
int vd_run_root(struct gsess *s, const char *script, struct gc_ssh_result *res,
		struct gc_error *err);
/* A new connection to the guest in place of one that failed (the old one
 * freed; s->ssh NULL when this fails too). */
int vd_reconnect(struct gsess *s, struct gc_error *err);
/* The remote side's first line of stderr (else stdout), cut to n. */
const char *vd_stderr_line(const struct gc_ssh_result *r, char *buf, size_t n);

/* pairs.c: the RDMA write tests, two rounds of disjoint pairs. */
void vd_pair_rounds(struct vctx *v, struct gsess *gs, size_t n);
/* workload.c: --mpirun on the first guest; --emit-mpijob / --emit-slurm. */
void vd_workload(struct vctx *v, struct gsess *gs, size_t n);
int vd_emit(struct vctx *v, struct gsess *gs, size_t n, struct gc_error *err);

#endif
