/*
 * mpibw.c - `gpuclusterctl-probe --mpi-bw`: an MPI bandwidth test for
 * guests without nccl-tests (Debian packages neither the OSU nor the Intel
 * MPI benchmarks), started by mpirun with one rank per node.
 *
 * Rank pairs (0<->1, 2<->3, ...; with an odd count the last rank idles)
 * time `iters` blocking sends of 4 MiB from the even rank, each answered by
 * a 1-byte ack (so the time covers delivery), then check one more message
 * byte by byte against a pattern the receiver could not have had (its
 * buffer is poisoned first).  Then every rank takes part in one
 * MPI_Allreduce(SUM) of 64 MiB of doubles whose exact sum is known; every
 * element is checked.  Rank 0 learns the slowest and fastest pair, the
 * slowest allreduce and whether any check failed through one
 * MPI_Allreduce(MAX) of four doubles (the minimum as the maximum of the
 * negated values).  GB/s are 10^9 bytes per second; the allreduce figure is
 * bytes / time, nccl-tests' "algbw".
 *
 * libmpi is dlopen()ed like the probe's other libraries, so the probe still
 * links libc alone.  This is Open MPI's ABI, not MPI's: the MPI standard
 * fixes names, not binary handles.  From Open MPI 4.1's public mpi.h:
 * MPI_Comm, MPI_Datatype and MPI_Op are pointers to structs, and
 * MPI_COMM_WORLD, MPI_BYTE, MPI_DOUBLE, MPI_SUM and MPI_MAX are the
 * addresses of the exported globals ompi_mpi_comm_world, ompi_mpi_byte,
 * ompi_mpi_double, ompi_mpi_op_sum and ompi_mpi_op_max
 * (OMPI_PREDEFINED_GLOBAL(type, global) is `((type) &(global))`);
 * MPI_STATUS_IGNORE is `((MPI_Status *) 0)`; MPI_SUCCESS is 0.  The soname
 * libmpi.so.40 is Open MPI 3.x/4.x's (Debian 12's libopenmpi3 ships
 * libmpi.so.40.30.4); env GC_PROBE_LIBMPI names another file.  MPICH and
 * Intel MPI use integer handles and other names: their libraries lack the
 * ompi_* symbols, and the probe says so instead of misbehaving.
 *
 * libmpi is opened RTLD_GLOBAL: Open MPI loads its components (mca_*.so,
 * 121 of them in Debian 12's build) with dlopen, and a component that
 * leaves libmpi's or libopen-pal's symbols to be resolved at load time finds
 * them only in the global namespace.  Debian 12's build happened to work
 * with RTLD_LOCAL too (tried: MPI_Init succeeds either way); global is the
 * choice that cannot be wrong for this process, which loads nothing else.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_int.h"

typedef void *MPI_Comm;
typedef void *MPI_Datatype;
typedef void *MPI_Op;
typedef struct pb_mpi_status MPI_Status; /* only ever MPI_STATUS_IGNORE */

#define MPI_SUCCESS 0
#define MPI_STATUS_IGNORE ((MPI_Status *)0)

#define MSG_BYTES (4u << 20)
#define AR_BYTES (64u << 20)
#define WARMUP 2
#define TAG_DATA 101
#define TAG_ACK 102
#define TAG_CHECK 103

struct mpi {
	void *dl, *global;
	int (*Init)(int *, char ***);
	int (*Finalize)(void);
	int (*Comm_rank)(MPI_Comm, int *);
	int (*Comm_size)(MPI_Comm, int *);
	int (*Send)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
	int (*Recv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
	int (*Barrier)(MPI_Comm);
	int (*Allreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
	double (*Wtime)(void);
	/* Open MPI's predefined handles: the globals' addresses */
	void *comm_world, *byte, *dbl, *op_sum, *op_max;
};

static int mpi_load(struct mpi *m, char *why, size_t whycap)
{
	const struct pb_sym syms[] = {
		{{"MPI_Init"}, (void **)&m->Init, false},
		{{"MPI_Finalize"}, (void **)&m->Finalize, false},
		{{"MPI_Comm_rank"}, (void **)&m->Comm_rank, false},
		{{"MPI_Comm_size"}, (void **)&m->Comm_size, false},
		{{"MPI_Send"}, (void **)&m->Send, false},
		{{"MPI_Recv"}, (void **)&m->Recv, false},
		{{"MPI_Barrier"}, (void **)&m->Barrier, false},
		{{"MPI_Allreduce"}, (void **)&m->Allreduce, false},
		{{"MPI_Wtime"}, (void **)&m->Wtime, false},
		{{"ompi_mpi_comm_world"}, &m->comm_world, false},
		{{"ompi_mpi_byte"}, &m->byte, false},
		{{"ompi_mpi_double"}, &m->dbl, false},
		{{"ompi_mpi_op_sum"}, &m->op_sum, false},
		{{"ompi_mpi_op_max"}, &m->op_max, false},
	};
	const char *env = getenv("GC_PROBE_LIBMPI");
	const char *lib = env && *env ? env : "libmpi.so.40";
	int rc;

	/* promote to the global namespace first (see the top of the file); a
	 * later RTLD_LOCAL open of the same object does not demote it */
	m->global = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
	if (m->global == NULL) {
		const char *e = dlerror();

		pb_fmt(why, whycap, "%s not loadable: %s", lib, e ? e : "unknown error");
		return GC_ENOTFOUND;
	}
	rc = pb_dl_open(&m->dl, lib, syms, sizeof(syms) / sizeof(syms[0]), why, whycap);
	if (rc == GC_ENOTSUP)
		pb_fmt(why + strlen(why), whycap - strlen(why),
		       " (the MPI bandwidth test needs Open MPI's ABI)");
	return rc;
}

static unsigned char pattern(size_t k, int sender, int salt)
{
	return (unsigned char)((k * 131u + (unsigned)sender * 29u + (unsigned)salt * 7u + 1u) & 0xffu);
}

static int failed(const char *call, int rc, char *why, size_t whycap)
{
	pb_fmt(why, whycap, "%s failed (MPI error %d)", call, rc);
	return GC_EREMOTE;
}

#define MPICHECK(call, expr)                                                                       \
	do {                                                                                       \
		int mrc_ = (expr);                                                                 \
		if (mrc_ != MPI_SUCCESS)                                                           \
			return failed(call, mrc_, why, whycap);                                   \
	} while (0)

/* Even rank of a pair: send, time, then send the check message. */
static int pair_send(const struct mpi *m, unsigned char *buf, int rank, int iters, double *gbs,
		     char *why, size_t whycap)
{
	unsigned char ack;
	double t0 = m->Wtime(), t;
	size_t k;
	int i;

	for (k = 0; k < MSG_BYTES; k++)
		buf[k] = pattern(k, rank, 0);
	for (i = 0; i < WARMUP + iters; i++) {
		if (i == WARMUP)
			t0 = m->Wtime();
		MPICHECK("MPI_Send", m->Send(buf, (int)MSG_BYTES, m->byte, rank + 1, TAG_DATA,
					     m->comm_world));
		MPICHECK("MPI_Recv", m->Recv(&ack, 1, m->byte, rank + 1, TAG_ACK, m->comm_world,
					     MPI_STATUS_IGNORE));
	}
	t = m->Wtime() - t0;
	*gbs = t > 0 ? (double)MSG_BYTES * iters / t / 1e9 : 0;
	for (k = 0; k < MSG_BYTES; k++)
		buf[k] = pattern(k, rank, 1);
	MPICHECK("MPI_Send",
		 m->Send(buf, (int)MSG_BYTES, m->byte, rank + 1, TAG_CHECK, m->comm_world));
	return 0;
}

/* Odd rank: receive, ack, then check the last message. */
static int pair_recv(const struct mpi *m, unsigned char *buf, int rank, int iters, bool *bad,
		     char *why, size_t whycap)
{
	unsigned char ack = 1;
	size_t k;
	int i;

	for (i = 0; i < WARMUP + iters; i++) {
		MPICHECK("MPI_Recv", m->Recv(buf, (int)MSG_BYTES, m->byte, rank - 1, TAG_DATA,
					     m->comm_world, MPI_STATUS_IGNORE));
		MPICHECK("MPI_Send", m->Send(&ack, 1, m->byte, rank - 1, TAG_ACK, m->comm_world));
	}
	for (k = 0; k < MSG_BYTES; k++)
		buf[k] = (unsigned char)~pattern(k, rank - 1, 1);
	MPICHECK("MPI_Recv", m->Recv(buf, (int)MSG_BYTES, m->byte, rank - 1, TAG_CHECK,
				     m->comm_world, MPI_STATUS_IGNORE));
	for (k = 0; k < MSG_BYTES; k++)
		if (buf[k] != pattern(k, rank - 1, 1)) {
			*bad = true;
			break;
		}
	return 0;
}

/* Everyone: one timed allreduce of AR_BYTES, every element checked. */
static int allreduce(const struct mpi *m, int rank, int size, double *secs, bool *bad, char *why,
		     size_t whycap)
{
	size_t n = AR_BYTES / sizeof(double), i;
	double *src = pb_xmalloc(AR_BYTES), *dst = pb_xmalloc(AR_BYTES);
	double base = (double)size * (size + 1) / 2, one = 1, sum = 0, t0;
	int rc = 0;

	for (i = 0; i < n; i++) {
		src[i] = (double)(rank + 1) + (double)(i % 7);
		dst[i] = -1;
	}
	/* a one-element warm-up connects every rank before the clock starts */
	rc = m->Allreduce(&one, &sum, 1, m->dbl, m->op_sum, m->comm_world);
	if (rc == MPI_SUCCESS)
		rc = m->Barrier(m->comm_world);
	if (rc != MPI_SUCCESS) {
		rc = failed("MPI_Allreduce", rc, why, whycap);
		goto out;
	}
	t0 = m->Wtime();
	rc = m->Allreduce(src, dst, (int)n, m->dbl, m->op_sum, m->comm_world);
	*secs = m->Wtime() - t0;
	if (rc != MPI_SUCCESS) {
		rc = failed("MPI_Allreduce", rc, why, whycap);
		goto out;
	}
	/* integers below 2^53: the sum is exact in any order */
	for (i = 0; i < n; i++)
		if (dst[i] != base + (double)size * (double)(i % 7)) {
			*bad = true;
			break;
		}
out:
	free(src);
	free(dst);
	return rc;
}

static int run(struct pb_mpibw *r, const struct mpi *m, int iters, char *why, size_t whycap)
{
	unsigned char *buf = pb_xmalloc(MSG_BYTES);
	double v[4], all[4], pair_gbs = 0, ar_secs = 0;
	bool bad = false;
	int rank, size, rc = 0;

	memset(buf, 0, MSG_BYTES);
	if ((rc = m->Comm_rank(m->comm_world, &rank)) != MPI_SUCCESS ||
	    (rc = m->Comm_size(m->comm_world, &size)) != MPI_SUCCESS) {
		rc = failed("MPI_Comm_rank/size", rc, why, whycap);
		goto out;
	}
	if ((rc = m->Barrier(m->comm_world)) != MPI_SUCCESS) {
		rc = failed("MPI_Barrier", rc, why, whycap);
		goto out;
	}
	if ((rank ^ 1) < size)
		rc = rank % 2 == 0 ? pair_send(m, buf, rank, iters, &pair_gbs, why, whycap)
				   : pair_recv(m, buf, rank, iters, &bad, why, whycap);
	if (rc == 0)
		rc = allreduce(m, rank, size, &ar_secs, &bad, why, whycap);
	if (rc != 0)
		goto out;
	/* idle and receiving ranks report no pair: -1 and -1e300 lose every MAX */
	v[0] = rank % 2 == 0 && (rank ^ 1) < size ? pair_gbs : -1;
	v[1] = v[0] >= 0 ? -pair_gbs : -1e300;
	v[2] = bad ? 1 : 0;
	v[3] = ar_secs;
	if ((rc = m->Allreduce(v, all, 4, m->dbl, m->op_max, m->comm_world)) != MPI_SUCCESS) {
		rc = failed("MPI_Allreduce", rc, why, whycap);
		goto out;
	}
	r->rank = rank;
	r->size = size;
	r->pairs = size / 2;
	r->iters = (unsigned)iters;
	r->bytes = MSG_BYTES;
	r->ar_bytes = AR_BYTES;
	r->pair_max_gbs = all[0] > 0 ? all[0] : 0;
	r->pair_min_gbs = r->pairs > 0 ? -all[1] : 0;
	r->allreduce_gbs = all[3] > 0 ? (double)AR_BYTES / all[3] / 1e9 : 0;
	r->data_ok = all[2] == 0;
out:
	free(buf);
	return rc;
}

int pb_mpibw_run(struct pb_mpibw *r, int iters, char *why, size_t whycap)
{
	struct mpi m;
	int rc;

	memset(r, 0, sizeof(*r));
	memset(&m, 0, sizeof(m));
	rc = mpi_load(&m, why, whycap);
	if (rc != 0)
		return rc;
	if ((rc = m.Init(NULL, NULL)) != MPI_SUCCESS)
		return failed("MPI_Init", rc, why, whycap);
	rc = run(r, &m, iters, why, whycap);
	m.Finalize();
	/* the library stays loaded: Open MPI does not support re-initialising,
	 * and unloading it under its own atexit handlers is not safe */
	return rc;
}

int pb_mpibw_format(char *buf, size_t cap, const struct pb_mpibw *r)
{
	return snprintf(buf, cap,
			"GCPROBE-MPIBW ranks=%d pairs=%d pair_min_gbs=%.3f pair_max_gbs=%.3f "
			"allreduce_gbs=%.3f bytes=%llu allreduce_bytes=%llu iters=%u data=%s\n",
			r->size, r->pairs, r->pair_min_gbs, r->pair_max_gbs, r->allreduce_gbs,
			(unsigned long long)r->bytes, (unsigned long long)r->ar_bytes, r->iters,
			r->data_ok ? "ok" : "bad");
}
