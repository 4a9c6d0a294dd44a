/*
 * probe_int.h - internals shared by the files of src/probe (not installed).
 *
 * The probe links libc alone, so it carries its own tiny growable buffer and
 * file helpers instead of gc_util's.  Paths under /sys and /proc go through
 * pb_path() so tests can point the probe at a fake tree (GC_PROBE_SYSFS).
 */
#ifndef GC_PROBE_INT_H
#define GC_PROBE_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/probe.h"

#define PB_FILE_MAX   (64u * 1024)       /* a sysfs/proc file we read */
#define PB_TOOL_MAX   (4u * 1024 * 1024) /* a tool's captured stdout */
#define PB_TOOL_TIMEOUT_MS 20000

struct pb_buf {
	char *ptr;
	size_t len, cap;
};

/* Out-of-memory aborts, as everywhere in gpuclusterctl. */
void *pb_xmalloc(size_t n);
void pb_buf_put(struct pb_buf *b, const void *p, size_t n);
void pb_buf_puts(struct pb_buf *b, const char *s);
void pb_buf_printf(struct pb_buf *b, const char *fmt, ...) GC_PRINTF(2, 3);
/* Returns the NUL-terminated string (never NULL); b is left empty. */
char *pb_buf_take(struct pb_buf *b);
void pb_buf_free(struct pb_buf *b);
/* JSON string literal with quotes; control bytes and invalid UTF-8 escaped. */
void pb_json_str(struct pb_buf *b, const char *s);

/* snprintf that always terminates and never warns about truncation. */
void pb_copy(char *dst, size_t cap, const char *src, size_t n);
void pb_fmt(char *dst, size_t cap, const char *fmt, ...) GC_PRINTF(3, 4);
/* Trim spaces/tabs/CR/LF at both ends of [s, s+n): returns new start, sets *n. */
const char *pb_trim(const char *s, size_t *n);
/* Parse a whole decimal integer (after trimming) into *v; false if not one. */
bool pb_parse_long(const char *s, size_t n, long *v);

/* Root prefix for /sys and /proc ("" = real root). */
void pb_set_root(const char *root);
const char *pb_root(void);
/* Read root+path (capped), trimmed of trailing newline; 0 or GC_EIO/GC_ENOTFOUND. */
int pb_read_sys(char *out, size_t cap, const char *path);
/* Read root+path whole (capped at PB_FILE_MAX); caller frees *out. */
int pb_read_sys_all(char **out, size_t *len, const char *path);

/* Run argv[0] (found on PATH) without a shell; stdout captured, capped. */
int pb_run_tool(char **out, size_t *len, char *const argv[], int timeout_ms, int *status);
bool pb_tool_on_path(const char *name);

/* dlopen helpers: resolve every symbol of a table or fail naming the first missing. */
struct pb_sym {
	const char *names[3]; /* tried in order */
	void **slot;
	bool optional;
};
int pb_dl_open(void **handle, const char *lib, const struct pb_sym *syms, size_t n, char *why,
	       size_t whycap);

uint64_t pb_now_ns(void);

/* rdma.c */
void pb_rdma_probe(struct gc_probe_rdma *r, const struct gc_probe_options *o);
/* verbs.c */
struct pb_verbs;
int pb_verbs_load(struct pb_verbs **out, char *why, size_t whycap);
void pb_verbs_unload(struct pb_verbs *v);
/* enum ibv_wc_status's name for a completion status, NULL when unknown */
const char *pb_wc_status_name(int status);
/* Adds max/active MTU and LID of every port of r (devices already listed by sysfs). */
void pb_verbs_query_ports(struct pb_verbs *v, struct gc_probe_rdma *r);
/* Register len bytes at addr (device memory for GPUDirect) with dev's HCA. */
int pb_verbs_try_reg(struct pb_verbs *v, const char *dev, void *addr, size_t len, char *why,
		     size_t whycap);
void pb_rdma_test(struct gc_probe_rdma_test *t, const struct gc_probe_rdma *r,
		  const struct gc_probe_options *o);
/* cuda.c */
void pb_cuda_probe(struct gc_probe_cuda *c, const struct gc_probe_options *o);
void pb_gdr_probe(struct gc_probe_gdr *g, const struct gc_probe_rdma *r,
		  const struct gc_probe_cuda *c);

/* mpibw.c: the MPI bandwidth test (--mpi-bw), Open MPI dlopen()ed */
struct pb_mpibw {
	int rank, size, pairs;
	unsigned iters;
	uint64_t bytes, ar_bytes;
	double pair_min_gbs, pair_max_gbs, allreduce_gbs;
	bool data_ok;
};
/* 0: ran (data_ok says whether the checks passed); GC_ENOTFOUND/GC_ENOTSUP:
 * no usable libmpi; GC_EREMOTE: an MPI call failed.  why says which. */
int pb_mpibw_run(struct pb_mpibw *r, int iters, char *why, size_t whycap);
/* The result line, "GCPROBE-MPIBW ranks=... data=ok\n" (docs/probe.md). */
int pb_mpibw_format(char *buf, size_t cap, const struct pb_mpibw *r);

/* The embedded vector-add PTX (cuda.c), for tests. */
extern const char pb_vadd_ptx[];

#endif
