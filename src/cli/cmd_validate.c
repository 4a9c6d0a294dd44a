/*
 * cmd_validate.c - `gpuclusterctl validate`: read the cluster back, probe
 * every guest, test RDMA between guests (src/validate), print the report.
 *
 * Read-only on every target; the one file it writes there is the probe
 * executable in the guest user's ~/.cache/gpuclusterctl/.  Which probe is
 * uploaded: --probe FILE, else $GC_PROBE, else the portable build installed
 * beside us (../libexec/gpuclusterctl/gpuclusterctl-probe), else the build
 * tree's (../probe/gpuclusterctl-probe-portable, ../probe/gpuclusterctl-probe).
 *
 * Exit: 0 every check passed (skips allowed), 1 a check failed or nothing
 * could be observed, 5 nothing to check (no check passed or failed), 64 usage.
 */
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gc/exec.h"
#include "gc/graph.h"
#include "gc/validate.h"

static int parse_num(unsigned *out, const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long v;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	v = strtoul(s, &end, 10);
	if (*end != '\0' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int parse_skip(unsigned *skip, const char *list)
{
	static const struct {
		const char *name;
		unsigned bit;
	} groups[] = {{"config", GC_VSKIP_CONFIG},
		      {"node", GC_VSKIP_NODE},
		      {"pairs", GC_VSKIP_PAIRS},
		      {"cuda", GC_VSKIP_CUDA}};
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ","), i;

		for (i = 0; i < GC_ARRAY_LEN(groups); i++)
			if (strlen(groups[i].name) == n && strncmp(groups[i].name, p, n) == 0)
				break;
		if (i == GC_ARRAY_LEN(groups))
			return -1;
		*skip |= groups[i].bit;
		p += n;
		p += *p == ',';
	}
	return 0;
}

/* The probe beside us: installed (we are gpuclusterctl-online in
 * libexec/gpuclusterctl/, the portable probe beside us; or a bin/ copy of
 * the tool), or in the build tree.  Caller frees. */
static char *default_probe(void)
{
	static const char *const rel[] = {
		"gpuclusterctl-probe",
		"../libexec/gpuclusterctl/gpuclusterctl-probe",
		"../probe/gpuclusterctl-probe-portable",
		"../probe/gpuclusterctl-probe",
	};

	if (getenv("GC_PROBE") != NULL && getenv("GC_PROBE")[0] != '\0')
		return gc_xstrdup(getenv("GC_PROBE"));
	return cli_find_beside(rel, GC_ARRAY_LEN(rel));
}

static void on_progress(void *arg, const char *target, const char *what)
{
	if (*(const bool *)arg)
		fprintf(stderr, "\r\033[K%s: %s", target, what);
}

/* The numeric options: the value into its field of vo, then 0; or the
 * usage error's exit code; -1 when c is not one of them. */
static int parse_num_opt(struct gc_validate_opts *vo, int c, const char *arg)
{
	const struct {
		int c;
		const char *name;
		unsigned *field;
		unsigned lo, hi;
		const char *unit;
	} nums[] = {
		{'m', "rdma-msg-kib", &vo->rdma_msg_kib, 1, 1048576, ""},
		{'i', "rdma-iters", &vo->rdma_iters, 1, 10000000, ""},
		{'w', "rdma-timeout", &vo->rdma_timeout_s, 1, 3600, " seconds"},
		{'Q', "rdma-qp-timeout", &vo->rdma_qp_timeout, 1, 31, ""},
		{'p', "parallelism", &vo->parallelism, 1, 4096, ""},
		{'W', "mpi-timeout", &vo->mpi_timeout_s, 1, 86400, " seconds"},
	};
	size_t i;

	for (i = 0; i < GC_ARRAY_LEN(nums); i++) {
		if (nums[i].c != c)
			continue;
		if (parse_num(nums[i].field, arg, nums[i].lo, nums[i].hi) != 0)
			return cli_usage_error("validate", "--%s needs %u to %u%s, not '%s'", nums[i].name,
					       nums[i].lo, nums[i].hi, nums[i].unit, arg);
		return 0;
	}
	return -1;
}

/* Options and SPEC into *a; -1 to go on, else the exit code (help, usage). */
struct vargs {
	struct gc_validate_opts vo;
	bool json;
	const char *junit, *spec;
	char *targets[64];
	size_t ntargets;
};

static int parse_args(struct vargs *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"junit", required_argument, NULL, 'J'},
		{"target", required_argument, NULL, 't'},
		{"skip", required_argument, NULL, 'S'},
		{"probe", required_argument, NULL, 'P'},
		{"rdma-msg-kib", required_argument, NULL, 'm'},
		{"rdma-iters", required_argument, NULL, 'i'},
		{"rdma-timeout", required_argument, NULL, 'w'},
		{"rdma-qp-timeout", required_argument, NULL, 'Q'},
		{"parallelism", required_argument, NULL, 'p'},
		{"known-hosts", required_argument, NULL, 'K'},
		{"trust-new-host-keys", no_argument, NULL, 'T'},
		{"state-dir", required_argument, NULL, 's'},
		{"mpirun", optional_argument, NULL, 'M'},
		{"mpi-timeout", required_argument, NULL, 'W'},
		{"emit-mpijob", required_argument, NULL, 'E'},
		{"image", required_argument, NULL, 'I'},
		{"emit-slurm", required_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			a->json = true;
			break;
		case 'J':
			a->junit = optarg;
			break;
		case 't':
			if (a->ntargets == GC_ARRAY_LEN(a->targets))
				return cli_usage_error("validate", "at most %zu --target options",
						       GC_ARRAY_LEN(a->targets));
			a->targets[a->ntargets++] = optarg;
			break;
		case 'S':
			if (parse_skip(&a->vo.skip, optarg) != 0)
				return cli_usage_error("validate", "--skip takes a comma list of config, "
						       "node, pairs, cuda; got '%s'", optarg);
			break;
		case 'P':
			a->vo.probe_path = optarg;
			break;
		case 'K':
			a->vo.drv.known_hosts = optarg;
			break;
		case 'T':
			a->vo.drv.trust_new_host_keys = true;
			break;
		case 's':
			a->vo.state_dir = optarg;
			break;
		case 'M':
			a->vo.mpirun = true;
			a->vo.mpi_command = optarg; /* NULL: the default program */
			if (optarg != NULL && optarg[0] == '\0')
				return cli_usage_error("validate", "--mpirun=CMD needs a command");
			break;
		case 'E':
			a->vo.emit_mpijob = optarg;
			break;
		case 'I':
			a->vo.mpi_image = optarg;
			break;
		case 'L':
			a->vo.emit_slurm = optarg;
			break;
		case 'h':
			return cli_print_usage("validate");
		case ':':
			return cli_usage_error("validate", "option '%s' needs a value", argv[optind - 1]);
		default:
			if ((rc = parse_num_opt(&a->vo, c, optarg)) == 0)
				break;
			if (rc > 0)
				return rc;
			return cli_usage_error("validate", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (a->vo.emit_mpijob != NULL && a->vo.mpi_image == NULL)
		return cli_usage_error("validate", "--emit-mpijob needs --image IMAGE (the container "
				       "image with the program and Open MPI)");
	if (optind >= argc)
		return cli_usage_error("validate", "missing SPEC");
	if (optind + 1 < argc)
		return cli_usage_error("validate", "too many arguments (one SPEC)");
	a->spec = argv[optind];
	return -1;
}

int cmd_validate(int argc, char **argv)
{
	struct vargs a;
	struct gc_validate_report rep;
	struct gc_cluster *cluster = NULL;
	struct gc_graph *graph = NULL, *scoped = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf out = GC_BUF_INIT;
	char *state_dir = NULL, *probe = NULL;
	size_t left_out = 0, pass = 0, fail = 0;
	bool tty = isatty(STDERR_FILENO) != 0;
	int rc;

	memset(&a, 0, sizeof(a));
	memset(&rep, 0, sizeof(rep));
	if ((rc = parse_args(&a, argc, argv)) >= 0)
		return rc;
	rc = GC_EXIT_ERROR;
	if (a.vo.probe_path == NULL && !(a.vo.skip & GC_VSKIP_NODE)) {
		a.vo.probe_path = probe = default_probe();
		if (probe == NULL) {
			cli_error("cannot find gpuclusterctl-probe to upload to the guests: give "
				  "--probe FILE (or --skip node)");
			goto out;
		}
	}
	if (access(a.vo.probe_path ? a.vo.probe_path : "/", R_OK) != 0) {
		cli_error("cannot read the probe '%s'", a.vo.probe_path);
		goto out;
	}
	if (cli_load_spec(&cluster, a.spec) != 0)
		goto out;
	if (gc_graph_build(&graph, cluster, &err) != 0) {
		cli_error("%s", err.msg);
		goto out;
	}
	if (a.ntargets > 0) {
		if ((rc = cli_scope(&scoped, graph, 0, (const char *const *)a.targets, a.ntargets,
				    &left_out)) != 0)
			goto out;
		rc = GC_EXIT_ERROR;
		gc_graph_free(graph);
		graph = scoped; /* now owned through graph */
		scoped = NULL;
	}
	if (a.vo.state_dir == NULL)
		a.vo.state_dir = state_dir = cli_default_state_dir(a.spec);
	a.vo.progress = on_progress;
	a.vo.progress_arg = &tty;
	rep.spec = gc_xstrdup(a.spec);
	if (gc_validate_run(&rep, graph, &a.vo, &err) != 0) {
		if (tty)
			fputs("\r\033[K", stderr);
		cli_error("%s", err.msg);
		goto out;
	}
	if (tty)
		fputs("\r\033[K", stderr);
	if (a.json)
		gc_vreport_render_json(&out, &rep);
	else
		gc_vreport_render_text(&out, &rep, cli_color(stdout) ? GC_VREPORT_COLOR : 0);
	if (!cli_write(&out))
		goto out;
	if (a.junit != NULL && gc_vreport_write_junit(a.junit, &rep, &err) != 0) {
		cli_error("%s", err.msg);
		goto out;
	}
	gc_vreport_count(&rep, &pass, &fail, NULL);
	rc = fail > 0 ? GC_EXIT_ERROR : pass > 0 ? GC_EXIT_OK : GC_EXIT_NOTHING;
	if (rep.interrupted) {
		fputs("gpuclusterctl: error: interrupted: the MPI job was stopped (see mpi.run)\n",
		      stderr);
		rc = GC_EXIT_INTERRUPTED;
	}
	if (rc == GC_EXIT_NOTHING)
		fputs("gpuclusterctl: nothing to check: every check was skipped or left out "
		      "(exit 5)\n", stderr);
out:
	gc_buf_free(&out);
	gc_vreport_free(&rep);
	free(state_dir);
	free(probe);
	gc_graph_free(graph);
	gc_cluster_free(cluster);
	return rc;
}
