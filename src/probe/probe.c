/*
 * probe.c - the `probe` command: options, the whole run, output, exit codes.
 *
 * gc_probe_run() fills one report: RDMA (sysfs + verbs + mlnx_qos), CUDA
 * (driver API + NVML + nvidia-smi), GPUDirect RDMA, and the RDMA test when
 * --rdma-server/--rdma-peer ask for it.  gc_probe_main() parses the command
 * line, evaluates --expect, renders, prints and picks the exit code
 * (enum gc_probe_exit, gc_probe_verdict(); SIGINT exits 130).  It is the one place in src/probe that prints; the
 * CLI's `gpuclusterctl probe` calls it with argv starting at "probe".
 * `--mpi-bw` is a mode of its own (mpibw.c): started by mpirun, it runs the
 * MPI bandwidth test instead of the probe and rank 0 prints one line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_int.h"

void gc_probe_options_init(struct gc_probe_options *o)
{
	const char *e;

	memset(o, 0, sizeof(*o));
	e = getenv("GC_PROBE_SYSFS");
	o->sysfs_root = e ? e : "";
	e = getenv("GC_PROBE_NO_TOOLS");
	o->no_tools = e && strcmp(e, "1") == 0;
	o->bw_bytes = 256ull << 20;
	o->bw_reps = 20;
	o->bw_trials = 5;
	o->rdma_gid_index = -1;
	o->rdma_tcp_port = 18515;
	o->rdma_msg_bytes = 1u << 20;
	o->rdma_iters = 2000;
	o->rdma_timeout_s = 60;
	o->rdma_qp_timeout = 14;
}

void gc_probe_run(struct gc_probe_report *r, const struct gc_probe_options *o)
{
	memset(r, 0, sizeof(*r));
	r->rdma_test.gid_index = -1;
	pb_set_root(o->sysfs_root);
	if (o->no_rdma) {
		r->rdma.status = GC_PROBE_NOT_RUN;
	} else {
		pb_rdma_probe(&r->rdma, o);
	}
	if (o->no_cuda) {
		r->cuda.status = GC_PROBE_NOT_RUN;
		memset(r->cuda.peer, -1, sizeof(r->cuda.peer));
	} else {
		pb_cuda_probe(&r->cuda, o);
	}
	if (!o->no_rdma && !o->no_cuda)
		pb_gdr_probe(&r->gdr, &r->rdma, &r->cuda);
	if (o->rdma_server || o->rdma_peer)
		pb_rdma_test(&r->rdma_test, &r->rdma, o);
}

const char gc_probe_usage[] =
	"usage: gpuclusterctl-probe [options]      (also: gpuclusterctl probe [options])\n"
	"  --json                 JSON instead of the human table (docs/probe.md)\n"
	"  --expect FILE          compare with 'key = value' expectations; exit 1 if any fails\n"
	"  --expect-set KEY=VALUE one expectation (repeatable)\n"
	"  --no-cuda, --no-rdma   skip an area\n"
	"  --no-bw                skip the copy-bandwidth test\n"
	"  --bw-mib N             bytes per copy in MiB (default 256)\n"
	"  --bw-reps N            copies per timed trial (default 20)\n"
	"  --bw-trials N          timed trials, median reported (default 5)\n"
	"  --rdma-server          wait for a peer probe and serve an RDMA write test\n"
	"  --rdma-peer HOST       run the RDMA write test against HOST's --rdma-server\n"
	"  --rdma-dev NAME        RDMA device (default: first with an active port)\n"
	"  --rdma-ib-port N       port number on it (default: first active)\n"
	"  --rdma-gid-index N     GID index (default: the RoCE v2 index found)\n"
	"  --rdma-tcp-port N      TCP port of the QP exchange (default 18515)\n"
	"  --rdma-tclass N        GRH traffic class of the test QP (default 0)\n"
	"  --rdma-msg-kib N       RDMA write size in KiB (default 1024)\n"
	"  --rdma-iters N         RDMA writes for bandwidth (default 2000)\n"
	"  --rdma-timeout N       seconds to wait for the peer (default 60)\n"
	"  --rdma-qp-timeout N    the test QP's local ACK timeout, 4.096 us * 2^N, 1-31\n"
	"                         (default 14, 67 ms, as perftest's)\n"
	"  --sysfs-root DIR       read /sys and /proc under DIR (test hook; env GC_PROBE_SYSFS)\n"
	"  --no-tools             do not run mlnx_qos or nvidia-smi (env GC_PROBE_NO_TOOLS=1)\n"
	"  --mpi-bw               under mpirun (one rank per node): the MPI bandwidth test alone;\n"
	"                         rank 0 prints one GCPROBE-MPIBW line (needs Open MPI's libmpi.so.40)\n"
	"  --mpi-iters N          timed 4 MiB messages per rank pair (default 50)\n"
	"  -h, --help             show this help\n"
	"exit: 0 ok; 1 an expectation failed, or a requested RDMA or MPI test failed (or\n"
	"      no libmpi for --mpi-bw); 5 nothing to check: no RDMA device, no CUDA GPU and\n"
	"      no expectation (JSON \"result\": \"nothing_to_check\"); 64 usage error;\n"
	"      130 interrupted\n";

/* The range of the last numeric option whose value was refused (the
 * option loop's usage error names it); missed is cleared per argument. */
static struct {
	bool missed;
	long lo, hi;
} g_arg_range;

static bool arg_long(const char *s, long lo, long hi, long *v)
{
	if (s && pb_parse_long(s, strlen(s), v) && *v >= lo && *v <= hi)
		return true;
	if (s != NULL) {
		g_arg_range.missed = true;
		g_arg_range.lo = lo;
		g_arg_range.hi = hi;
	}
	return false;
}

/* --mpi-bw: the MPI bandwidth test; every rank runs this, rank 0 prints. */
static int mpi_bw(int iters)
{
	struct pb_mpibw r;
	char why[512] = "", line[512];
	int rc = pb_mpibw_run(&r, iters, why, sizeof(why));

	if (rc == GC_ENOTFOUND || rc == GC_ENOTSUP) {
		fprintf(stderr, "gpuclusterctl-probe: --mpi-bw: %s\n", why);
		return GC_PROBE_EXIT_FAIL;
	}
	if (rc != 0) {
		fprintf(stderr, "gpuclusterctl-probe: --mpi-bw: rank %d: %s\n", r.rank, why);
		return GC_PROBE_EXIT_FAIL;
	}
	if (r.rank == 0) {
		pb_mpibw_format(line, sizeof(line), &r);
		fputs(line, stdout);
		fflush(stdout);
		if (!r.data_ok)
			fputs("gpuclusterctl-probe: --mpi-bw: data check failed: a rank received "
			      "bytes or sums other than those sent\n",
			      stderr);
	}
	return r.data_ok ? GC_PROBE_EXIT_OK : GC_PROBE_EXIT_FAIL;
}

static int read_expect(struct gc_probe_expect *e, const char *path, struct gc_error *err)
{
	struct pb_buf b = {0};
	char chunk[4096];
	size_t got;
	FILE *f = fopen(path, "r");
	int rc;

	if (!f)
		return gc_error_set(err, GC_EUSAGE, "cannot open expect file '%s'", path);
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (b.len + got > 1024 * 1024) {
			fclose(f);
			pb_buf_free(&b);
			return gc_error_set(err, GC_EUSAGE, "expect file '%s' is over 1 MiB", path);
		}
		pb_buf_put(&b, chunk, got);
	}
	fclose(f);
	rc = gc_probe_expect_parse(e, b.ptr ? b.ptr : "", b.len, path, err);
	pb_buf_free(&b);
	return rc;
}

/* What the command line asks for. */
struct cli {
	struct gc_probe_options o;
	struct gc_probe_expect *ex;
	bool json, have_expect, mpibw, help;
	int mpi_iters;
};

/* argv into c (c->o and c->ex set up by the caller): 0, or -1 with a
 * usage error in err; --help sets c->help and stops there. */
static int parse_args(struct cli *c, int argc, char **argv, struct gc_error *err)
{
	long v;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		g_arg_range.missed = false;
		if (strcmp(a, "--json") == 0) {
			c->json = true;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			c->help = true;
			return 0;
		} else if (strcmp(a, "--no-cuda") == 0) {
			c->o.no_cuda = true;
		} else if (strcmp(a, "--no-rdma") == 0) {
			c->o.no_rdma = true;
		} else if (strcmp(a, "--no-bw") == 0) {
			c->o.no_bw = true;
		} else if (strcmp(a, "--no-tools") == 0) {
			c->o.no_tools = true;
		} else if (strcmp(a, "--mpi-bw") == 0) {
			c->mpibw = true;
		} else if (strcmp(a, "--mpi-iters") == 0 && arg_long(next, 1, 100000, &v)) {
			c->mpi_iters = (int)v, i++;
		} else if (strcmp(a, "--rdma-server") == 0) {
			c->o.rdma_server = true;
		} else if (strcmp(a, "--expect") == 0 && next) {
			if (read_expect(c->ex, next, err) != 0)
				return -1;
			c->have_expect = true;
			i++;
		} else if (strcmp(a, "--expect-set") == 0 && next) {
			if (gc_probe_expect_add(c->ex, next, err) != 0)
				return -1;
			c->have_expect = true;
			i++;
		} else if (strcmp(a, "--rdma-peer") == 0 && next) {
			c->o.rdma_peer = next, i++;
		} else if (strcmp(a, "--rdma-dev") == 0 && next) {
			c->o.rdma_dev = next, i++;
		} else if (strcmp(a, "--sysfs-root") == 0 && next) {
			c->o.sysfs_root = next, i++;
		} else if (strcmp(a, "--bw-mib") == 0 && arg_long(next, 1, 16384, &v)) {
			c->o.bw_bytes = (uint64_t)v << 20, i++;
		} else if (strcmp(a, "--bw-reps") == 0 && arg_long(next, 1, 10000, &v)) {
			c->o.bw_reps = (int)v, i++;
		} else if (strcmp(a, "--bw-trials") == 0 && arg_long(next, 1, 64, &v)) {
			c->o.bw_trials = (int)v, i++;
		} else if (strcmp(a, "--rdma-ib-port") == 0 && arg_long(next, 1, 255, &v)) {
			c->o.rdma_ib_port = (int)v, i++;
		} else if (strcmp(a, "--rdma-gid-index") == 0 && arg_long(next, 0, 255, &v)) {
			c->o.rdma_gid_index = (int)v, i++;
		} else if (strcmp(a, "--rdma-tcp-port") == 0 && arg_long(next, 1, 65535, &v)) {
			c->o.rdma_tcp_port = (int)v, i++;
		} else if (strcmp(a, "--rdma-tclass") == 0 && arg_long(next, 0, 255, &v)) {
			c->o.rdma_tclass = (int)v, i++;
		} else if (strcmp(a, "--rdma-msg-kib") == 0 && arg_long(next, 1, 1048576, &v)) {
			c->o.rdma_msg_bytes = (uint64_t)v << 10, i++;
		} else if (strcmp(a, "--rdma-iters") == 0 && arg_long(next, 1, 10000000, &v)) {
			c->o.rdma_iters = (int)v, i++;
		} else if (strcmp(a, "--rdma-timeout") == 0 && arg_long(next, 1, 3600, &v)) {
			c->o.rdma_timeout_s = (int)v, i++;
		} else if (strcmp(a, "--rdma-qp-timeout") == 0 && arg_long(next, 1, 31, &v)) {
			c->o.rdma_qp_timeout = (int)v, i++;
		} else if (g_arg_range.missed) {
			gc_error_set(err, GC_EUSAGE, "%s needs a number from %ld to %ld, not '%s'", a,
				     g_arg_range.lo, g_arg_range.hi, next);
			return -1;
		} else {
			gc_error_set(err, GC_EUSAGE, "unknown or incomplete option '%s'", a);
			return -1;
		}
	}
	if (c->o.rdma_server && c->o.rdma_peer) {
		gc_error_set(err, GC_EUSAGE, "--rdma-server and --rdma-peer exclude each other");
		return -1;
	}
	if ((c->o.rdma_server || c->o.rdma_peer) && c->o.no_rdma) {
		gc_error_set(err, GC_EUSAGE, "an RDMA test needs RDMA: drop --no-rdma");
		return -1;
	}

	if (c->mpibw && (c->have_expect || c->json || c->o.rdma_server || c->o.rdma_peer)) {
		gc_error_set(err, GC_EUSAGE, "--mpi-bw runs alone: no --json, --expect or RDMA test");
		return -1;
	}
	return 0;
}

int gc_probe_main(int argc, char **argv)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_report *r = calloc(1, sizeof(*r));
	struct cli c = {.ex = calloc(1, sizeof(*c.ex)), .mpi_iters = 50};
	char *out = NULL;
	int code = GC_PROBE_EXIT_OK;

	if (!c.ex || !r)
		abort();
	gc_probe_options_init(&c.o);
	if (parse_args(&c, argc, argv, &err) != 0) {
		fprintf(stderr, "gpuclusterctl-probe: %s\n", err.msg);
		fputs(gc_probe_usage, stderr);
		code = GC_PROBE_EXIT_USAGE;
	} else if (c.help) {
		fputs(gc_probe_usage, stdout);
	} else if (c.mpibw) {
		code = mpi_bw(c.mpi_iters);
	} else {
		gc_probe_run(r, &c.o);
		if (c.have_expect)
			gc_probe_expect_eval(r, c.ex);
		code = gc_probe_verdict(r);
		if (c.json)
			gc_probe_render_json(&out, r);
		else
			gc_probe_render_text(&out, r);
		fputs(out, stdout);
		fflush(stdout);
	}
	free(out);
	free(c.ex);
	free(r);
	return code;
}
