/*
 * mpi.c - the MPI workload of `gpuclusterctl validate`: from the spec to an
 * Open MPI job, as the one shell command run on the first guest
 * (`--mpirun`), a Kubeflow MPIJob (`--emit-mpijob`) or an sbatch script
 * (`--emit-slurm`).  Pure text composition; the parsers of what the job
 * prints are in mpi_parse.c.
 *
 * Where each piece comes from (docs/validate-mpi.md has the table):
 *   Open MPI 4.1 mpirun(1):  --hostfile, -np, --map-by slot | ppr:N:node,
 *     --bind-to none, -x NAME[=VALUE] (export to the remote ranks),
 *     --mca KEY VALUE, --allow-run-as-root (mpirun refuses root without it);
 *     hostfile lines "HOST slots=N"; under a resource manager (Slurm)
 *     mpirun takes the allocation itself;
 *   Open MPI MCA parameters btl_tcp_if_include / oob_tcp_if_include: the
 *     interfaces MPI's TCP traffic and the runtime's out-of-band channel use;
 *   NCCL environment variables (NCCL user guide, env.rst): NCCL_IB_HCA (a
 *     leading "=" makes the names exact, else "mlx5_1" also picks
 *     mlx5_10..19), NCCL_IB_GID_INDEX (RoCE GID index, default -1: NCCL
 *     picks), NCCL_IB_TC (traffic class, default 0 - on RoCE v2 the IP ToS),
 *     NCCL_SOCKET_IFNAME ("=" exact as well), NCCL_DEBUG=INFO (the lines
 *     mpi_parse.c reads to see which transport NCCL used);
 *   Kubeflow mpi-operator v2beta1 (pkg/apis/kubeflow/v2beta1/types.go):
 *     MPIJob spec.slotsPerWorker, runPolicy.cleanPodPolicy,
 *     mpiImplementation, mpiReplicaSpecs.{Launcher,Worker}.{replicas,
 *     template}; the operator hands the launcher its hostfile through
 *     OMPI_MCA_orte_default_hostfile, so the launcher's mpirun names none.
 *
 * Every value is checked before it is written (the spec loader checked most
 * already; this is the second look) and quoted for its language: POSIX
 * single quotes (gc_shell_quote) on command lines, YAML double quotes in the
 * MPIJob.  The hostfile is not shell text: its addresses must be plain
 * hosts.  Integers we print ourselves are not quoted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/pattern.h"
#include "mpi.h"

#define CMD_MAX 4096 /* a user's --mpirun command */

/* ---------------------------------------------------------------- checks */

static bool printable(const char *s, size_t max)
{
	size_t n = 0;

	for (; *s; s++, n++)
		if (n >= max || (unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* A run tag: 1-64 of [0-9a-f] (gc_random_token's alphabet). */
static bool valid_tag(const char *t)
{
	size_t n = strspn(t, "0123456789abcdef");

	return n > 0 && n <= 64 && t[n] == '\0';
}

static int check_job(const struct gc_mpi_job *job, struct gc_error *err)
{
	size_t i;

	if (job->nnodes == 0 || job->nodes == NULL)
		return gc_error_set(err, GC_EINVAL, "the MPI job has no nodes");
	if (job->nnodes > GC_MPI_MAX_NODES)
		return gc_error_set(err, GC_EINVAL, "the MPI job has %zu nodes (at most %d)",
				    job->nnodes, GC_MPI_MAX_NODES);
	for (i = 0; i < job->nnodes; i++) {
		const struct gc_mpi_node *n = &job->nodes[i];

		if (n->name == NULL || !gc_valid_label(n->name))
			return gc_error_set(err, GC_EINVAL, "MPI node %zu: invalid name", i);
		if (n->address == NULL || !gc_valid_host(n->address))
			return gc_error_set(err, GC_EINVAL, "MPI node '%s': invalid address",
					    n->name);
		if (n->slots == 0 || n->slots > GC_MPI_MAX_SLOTS)
			return gc_error_set(err, GC_EINVAL, "MPI node '%s': %u slots (1-%d)",
					    n->name, n->slots, GC_MPI_MAX_SLOTS);
	}
	if (job->hca != NULL && !gc_valid_label(job->hca))
		return gc_error_set(err, GC_EINVAL, "invalid RDMA device name for NCCL_IB_HCA");
	if (job->ifname != NULL && !gc_valid_label(job->ifname))
		return gc_error_set(err, GC_EINVAL, "invalid interface name for NCCL_SOCKET_IFNAME");
	if (job->gid_index < -1 || job->gid_index > 255)
		return gc_error_set(err, GC_EINVAL, "GID index %d out of range", job->gid_index);
	if (job->tos < -1 || job->tos > 255)
		return gc_error_set(err, GC_EINVAL, "ToS %d out of range", job->tos);
	if (job->run_tag != NULL && !valid_tag(job->run_tag))
		return gc_error_set(err, GC_EINVAL, "invalid MPI run tag");
	if (job->command != NULL && (job->command[0] == '\0' || !printable(job->command, CMD_MAX)))
		return gc_error_set(err, GC_EINVAL,
				    "the MPI command must be one line of printable ASCII (at most %d)",
				    CMD_MAX);
	if (job->probe_path != NULL && !gc_valid_abs_path(job->probe_path))
		return gc_error_set(err, GC_EINVAL, "invalid probe path '%s'", job->probe_path);
	return 0;
}

/* All nodes the same number of slots (a Slurm or MPIJob shape needs one). */
static int uniform_slots(const struct gc_mpi_job *job, const char *what, struct gc_error *err)
{
	size_t i;

	for (i = 1; i < job->nnodes; i++)
		if (job->nodes[i].slots != job->nodes[0].slots)
			return gc_error_set(err, GC_ENOTSUP,
					    "%s needs the same GPU count on every node: '%s' has %u, "
					    "'%s' %u",
					    what, job->nodes[0].name, job->nodes[0].slots,
					    job->nodes[i].name, job->nodes[i].slots);
	return 0;
}

unsigned gc_mpi_job_ranks(const struct gc_mpi_job *job)
{
	unsigned total = 0;
	size_t i;

	for (i = 0; i < job->nnodes; i++)
		total += job->nodes[i].slots;
	return total;
}

/* ---------------------------------------------------------------- from the spec */

static bool rdma_nic(const struct gc_vm *vm)
{
	size_t i;

	for (i = 0; i < vm->nnics; i++)
		if (vm->nics[i].kind == GC_VMNIC_SRIOV || vm->nics[i].kind == GC_VMNIC_PVRDMA ||
		    vm->nics[i].kind == GC_VMNIC_PASSTHROUGH)
			return true;
	return false;
}

/* Append name to the comma list unless it is on it already. */
static void add_ifname(struct gc_buf *list, const char *name)
{
	const char *p = gc_buf_str(list);
	size_t n = strlen(name);

	while (*p) {
		const char *comma = strchr(p, ',');
		size_t k = comma ? (size_t)(comma - p) : strlen(p);

		if (k == n && memcmp(p, name, n) == 0)
			return;
		p += k + (comma ? 1 : 0);
	}
	if (list->len > 0)
		gc_buf_putc(list, ',');
	gc_buf_puts(list, name);
}

int gc_mpi_job_from_spec(struct gc_mpi_job *out, struct gc_arena *arena, const struct gc_cluster *c,
			 const char *hca, int gid_index, struct gc_error *err)
{
	struct gc_mpi_node *nodes = NULL;
	struct gc_buf ifs = GC_BUF_INIT;
	const struct gc_vm *tos_vm = NULL;
	struct gc_mpi_job job;
	size_t i, n = 0;
	bool all_rdma = true;
	int rc = 0;

	memset(&job, 0, sizeof(job));
	job.tos = -1;
	for (i = 0; i < c->nvms; i++) {
		const struct gc_vm *vm = &c->vms[i];
		const struct gc_rdma_if *rif = vm->guest ? vm->guest->rdma_interface : NULL;
		const struct gc_roce_qos *q = vm->guest ? vm->guest->roce_qos : NULL;
		const char *slash;

		if (rif == NULL || rif->address == NULL || rif->name == NULL)
			continue;
		if (n == GC_MPI_MAX_NODES) {
			rc = gc_error_set(err, GC_EINVAL, "more than %d guests for one MPI job",
					  GC_MPI_MAX_NODES);
			goto out;
		}
		nodes = gc_arena_grow(arena, nodes, n, sizeof(*nodes));
		slash = strchr(rif->address, '/');
		nodes[n].name = vm->name;
		nodes[n].address = slash ? gc_arena_strndup(arena, rif->address,
							    (size_t)(slash - rif->address))
					 : gc_arena_strdup(arena, rif->address);
		nodes[n].slots = vm->ngpus > 0 ? (unsigned)vm->ngpus : 1;
		n++;
		add_ifname(&ifs, rif->name);
		all_rdma = all_rdma && rdma_nic(vm);
		if (q == NULL)
			continue;
		if (tos_vm != NULL && q->tos != job.tos) {
			rc = gc_error_set(err, GC_EINVAL,
					  "guests '%s' and '%s' mark RoCE traffic with different ToS "
					  "(%d, %d): NCCL_IB_TC takes one value",
					  tos_vm->name, vm->name, job.tos, q->tos);
			goto out;
		}
		tos_vm = vm;
		job.tos = q->tos;
	}
	if (n == 0) {
		rc = gc_error_set(err, GC_ENOTFOUND,
				  "no guest has an rdma_interface: nothing to run an MPI job on");
		goto out;
	}
	job.nodes = nodes;
	job.nnodes = n;
	job.ifname = gc_arena_strdup(arena, gc_buf_str(&ifs));
	job.hca = hca ? gc_arena_strdup(arena, hca) : NULL;
	job.gid_index = gid_index;
	/* one node moves no data over the network: nothing can fall back */
	job.expect_rdma = all_rdma && n > 1;
	*out = job;
out:
	gc_buf_free(&ifs);
	return rc;
}

/* ---------------------------------------------------------------- hostfile */

int gc_mpi_hostfile(struct gc_buf *out, const struct gc_mpi_job *job, struct gc_error *err)
{
	size_t i;
	int rc = check_job(job, err);

	if (rc != 0)
		return rc;
	for (i = 0; i < job->nnodes; i++)
		gc_buf_printf(out, "%s slots=%u\n", job->nodes[i].address, job->nodes[i].slots);
	return 0;
}

/* ---------------------------------------------------------------- environment */

struct env_var {
	const char *name;
	char *value; /* owned */
};

#define ENV_MAX 5

/* The NCCL settings of the job, in a fixed order; returns how many. */
static size_t job_env(struct env_var ev[ENV_MAX], const struct gc_mpi_job *job)
{
	size_t n = 0;

	if (job->hca != NULL)
		ev[n++] = (struct env_var){"NCCL_IB_HCA", gc_xasprintf("=%s", job->hca)};
	if (job->gid_index >= 0)
		ev[n++] = (struct env_var){"NCCL_IB_GID_INDEX", gc_xasprintf("%d", job->gid_index)};
	if (job->tos >= 0)
		ev[n++] = (struct env_var){"NCCL_IB_TC", gc_xasprintf("%d", job->tos)};
	if (job->ifname != NULL)
		ev[n++] = (struct env_var){"NCCL_SOCKET_IFNAME", gc_xasprintf("=%s", job->ifname)};
	ev[n++] = (struct env_var){"NCCL_DEBUG", gc_xstrdup("INFO")};
	return n;
}

static void env_free(struct env_var *ev, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(ev[i].value);
}

/* ---------------------------------------------------------------- mpirun */

enum program { PROG_NCCL, PROG_PROBE, PROG_USER };

/* Where ranks go and how mpirun finds the nodes. */
struct launch {
	const char *hostfile; /* --hostfile; NULL: the environment gives it */
	unsigned limit_s;     /* 0, or `timeout --kill-after=K S` before mpirun */
	const char *run_tag;  /* NULL, or -x GC_MPI_RUN_TAG=tag (checked by check_job) */
	bool stop_on_eof;     /* gc_run before each mpirun (GC_MPI_STOP_ON_EOF_PROLOGUE) */
	bool np;              /* print -np (not under Slurm, which sizes the job) */
	bool env_values;      /* -x NAME=VALUE; else -x NAME (exported by the caller) */
	const char *indent;   /* before mpirun: "" or a tab in a script */
};

static void put_program(struct gc_buf *b, const struct gc_mpi_job *job, enum program p)
{
	switch (p) {
	case PROG_NCCL:
		gc_buf_puts(b, GC_MPI_NCCL_PROGRAM " " GC_MPI_NCCL_ARGS);
		break;
	case PROG_PROBE:
		gc_shell_quote(b, job->probe_path);
		gc_buf_puts(b, " --mpi-bw");
		break;
	case PROG_USER:
		gc_buf_puts(b, "sh -c ");
		gc_shell_quote(b, job->command);
		break;
	}
}

/*
 * mpirun [--allow-run-as-root] [--hostfile F] [-np N] --map-by M --bind-to none
 *        [--mca btl_tcp_if_include IF --mca oob_tcp_if_include IF] [-x ...] PROGRAM
 * NCCL ranks go one per GPU (--map-by slot fills each node's slots in
 * turn); the probe's bandwidth test one per node (--map-by ppr:1:node), so
 * its rank pairs cross the network.  --bind-to none: mpirun's default binds
 * each rank to a core, which NCCL's helper threads would share.
 */
static void put_mpirun(struct gc_buf *b, const struct gc_mpi_job *job, const struct launch *l,
		       enum program p)
{
	struct env_var ev[ENV_MAX];
	size_t i, nev = 0;

	gc_buf_puts(b, l->indent);
	/*
	 * --foreground: one SIGTERM, to mpirun alone.  Without it timeout
	 * signals the child and then its whole process group, so mpirun gets
	 * SIGTERM twice, and Open MPI's mpirun takes a second signal within
	 * 5 s as "terminate now": it exits before it has stopped its own ranks,
	 * which run in process groups of their own (found in the guest lab).
	 */
	if (l->stop_on_eof)
		gc_buf_puts(b, "gc_run ");
	if (l->limit_s > 0)
		gc_buf_printf(b, "timeout --foreground --kill-after=%u %u ", GC_MPI_KILL_AFTER_S,
			      l->limit_s);
	gc_buf_puts(b, "mpirun");
	if (job->as_root)
		gc_buf_puts(b, " --allow-run-as-root");
	if (l->hostfile != NULL) {
		gc_buf_puts(b, " --hostfile ");
		gc_shell_quote(b, l->hostfile);
	}
	if (l->np)
		gc_buf_printf(b, " -np %u",
			      p == PROG_PROBE ? (unsigned)job->nnodes : gc_mpi_job_ranks(job));
	gc_buf_puts(b, p == PROG_PROBE ? " --map-by ppr:1:node" : " --map-by slot");
	gc_buf_puts(b, " --bind-to none");
	if (job->ifname != NULL) {
		gc_buf_puts(b, " --mca btl_tcp_if_include ");
		gc_shell_quote(b, job->ifname);
		gc_buf_puts(b, " --mca oob_tcp_if_include ");
		gc_shell_quote(b, job->ifname);
	}
	if (p != PROG_PROBE)
		nev = job_env(ev, job);
	for (i = 0; i < nev; i++) {
		gc_buf_puts(b, " -x ");
		if (l->env_values) {
			char *w = gc_xasprintf("%s=%s", ev[i].name, ev[i].value);

			gc_shell_quote(b, w);
			free(w);
		} else {
			gc_buf_puts(b, ev[i].name);
		}
	}
	env_free(ev, nev);
	if (l->run_tag != NULL)
		gc_buf_printf(b, " -x " GC_MPI_RUN_TAG_VAR "=%s", l->run_tag);
	gc_buf_putc(b, ' ');
	put_program(b, job, p);
}

/* The default: nccl-tests when the launcher has it, else the probe's test
 * (when there is a probe to fall back to); on one line, or on several
 * (a script). */
static void put_default(struct gc_buf *b, const struct gc_mpi_job *job, const struct launch *l,
			bool multiline)
{
	struct launch inner = *l;

	if (job->probe_path == NULL) {
		put_mpirun(b, job, l, PROG_NCCL);
		return;
	}
	inner.indent = multiline ? "\t" : "";
	gc_buf_printf(b, "if command -v " GC_MPI_NCCL_PROGRAM " >/dev/null 2>&1; then%s",
		      multiline ? "\n" : " ");
	put_mpirun(b, job, &inner, PROG_NCCL);
	gc_buf_puts(b, multiline ? "\nelse\n" : "; else ");
	put_mpirun(b, job, &inner, PROG_PROBE);
	gc_buf_puts(b, multiline ? "\nfi" : "; fi");
}

int gc_mpi_command(struct gc_buf *out, const struct gc_mpi_job *job, const char *hostfile_path,
		   struct gc_error *err)
{
	struct launch l = {hostfile_path, job->time_limit_s, job->run_tag, job->stop_on_eof, true, true,
			   ""};
	struct gc_buf b = GC_BUF_INIT;
	int rc = check_job(job, err);

	if (rc != 0)
		return rc;
	if (hostfile_path == NULL || !gc_valid_abs_path(hostfile_path))
		return gc_error_set(err, GC_EINVAL, "invalid hostfile path '%s'",
				    hostfile_path ? hostfile_path : "(null)");
	if (job->stop_on_eof)
		gc_buf_puts(&b, GC_MPI_STOP_ON_EOF_PROLOGUE);
	if (job->command != NULL)
		put_mpirun(&b, job, &l, PROG_USER);
	else
		put_default(&b, job, &l, false);
	gc_buf_put(out, b.ptr ? b.ptr : "", b.len);
	gc_buf_free(&b);
	return 0;
}

/*
 * grep -z reads /proc/PID/environ as NUL-ended records; -x -F: the whole
 * record, literally.  The loop's own shell has the tag only in its command
 * line, never in its environment, so it does not find itself; processes of
 * other users are unreadable and skipped.
 */
int gc_mpi_sweep_command(struct gc_buf *out, const char *run_tag, struct gc_error *err)
{
	if (run_tag == NULL || !valid_tag(run_tag))
		return gc_error_set(err, GC_EINVAL, "invalid MPI run tag");
	gc_buf_printf(out,
		      "n=0; for f in /proc/[0-9]*/environ; do "
		      "grep -q -z -x -F " GC_MPI_RUN_TAG_VAR "=%s \"$f\" 2>/dev/null || continue; "
		      "p=${f#/proc/}; kill -KILL \"${p%%/environ}\" 2>/dev/null && n=$((n+1)); "
		      "done; echo \"$n\"",
		      run_tag);
	return 0;
}

/* ---------------------------------------------------------------- Slurm */

/*
 * sbatch runs the script on the first node of the allocation; Open MPI's
 * mpirun reads the Slurm allocation itself (nodes, tasks per node) and starts
 * its daemons through Slurm, so the script needs neither a hostfile nor -np,
 * and works whether or not Slurm was built with PMIx (`srun --mpi=pmix`
 * needs Slurm and Open MPI built against compatible PMIx).  The NCCL
 * settings are exported in the script and passed on by name with -x.
 */
int gc_mpi_emit_slurm(struct gc_buf *out, const struct gc_mpi_job *job, struct gc_error *err)
{
	struct launch l = {NULL, 0, NULL, false, false, false, ""};
	struct gc_buf b = GC_BUF_INIT;
	struct env_var ev[ENV_MAX];
	size_t i, nev;
	int rc = check_job(job, err);

	if (rc == 0)
		rc = uniform_slots(job, "a Slurm job", err);
	if (rc != 0)
		return rc;
	gc_buf_puts(&b, "#!/bin/bash\n"
			"# gpuclusterctl validate --emit-slurm: the --mpirun workload as a batch job\n");
	gc_buf_printf(&b,
		      "#SBATCH --job-name=gc-mpi\n"
		      "#SBATCH --nodes=%zu\n"
		      "#SBATCH --ntasks-per-node=%u\n"
		      "#SBATCH --gpus-per-node=%u\n",
		      job->nnodes, job->nodes[0].slots, job->nodes[0].slots);
	nev = job_env(ev, job);
	for (i = 0; i < nev; i++) {
		gc_buf_printf(&b, "export %s=", ev[i].name);
		gc_shell_quote(&b, ev[i].value);
		gc_buf_putc(&b, '\n');
	}
	env_free(ev, nev);
	if (job->command != NULL) {
		put_mpirun(&b, job, &l, PROG_USER);
	} else {
		put_default(&b, job, &l, true);
	}
	gc_buf_putc(&b, '\n');
	gc_buf_put(out, b.ptr, b.len);
	gc_buf_free(&b);
	return 0;
}

/* ---------------------------------------------------------------- Kubeflow MPIJob */

/* A YAML double-quoted scalar (the values are printable ASCII, checked). */
static void yaml_str(struct gc_buf *b, const char *s)
{
	gc_buf_putc(b, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			gc_buf_putc(b, '\\');
		gc_buf_putc(b, *s);
	}
	gc_buf_putc(b, '"');
}

/* Kubernetes object names: RFC 1123 subdomain, lower case, <=253. */
static bool k8s_name(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > 253 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '.'))
			return false;
	return true;
}

/* Container image references: registry/path:tag@digest characters only. */
static bool image_ref(const char *s)
{
	size_t n = 0;

	if (*s == '\0' || *s == '-')
		return false;
	for (; *s; s++, n++)
		if (n >= 512 || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
				  (*s >= '0' && *s <= '9') || strchr("./:@_-", *s) != NULL))
			return false;
	return true;
}

/* The launcher's command as a YAML list: the words of put_mpirun. */
static void yaml_launcher_command(struct gc_buf *b, const struct gc_mpi_job *job, const char *ind)
{
	struct env_var ev[ENV_MAX];
	char num[16];
	size_t i, nev;

#define WORD(w) (gc_buf_printf(b, "%s- ", ind), yaml_str(b, (w)), gc_buf_putc(b, '\n'))
	WORD("mpirun");
	if (job->as_root)
		WORD("--allow-run-as-root");
	WORD("-np");
	snprintf(num, sizeof(num), "%u", gc_mpi_job_ranks(job));
	WORD(num);
	WORD("--map-by");
	WORD("slot");
	WORD("--bind-to");
	WORD("none");
	if (job->ifname != NULL) {
		WORD("--mca");
		WORD("btl_tcp_if_include");
		WORD(job->ifname);
		WORD("--mca");
		WORD("oob_tcp_if_include");
		WORD(job->ifname);
	}
	nev = job_env(ev, job);
	for (i = 0; i < nev; i++) {
		WORD("-x");
		WORD(ev[i].name);
	}
	env_free(ev, nev);
	if (job->command != NULL) {
		WORD("sh");
		WORD("-c");
		WORD(job->command);
	} else {
		WORD(GC_MPI_NCCL_PROGRAM);
		WORD("-b");
		WORD("8");
		WORD("-e");
		WORD("256M");
		WORD("-f");
		WORD("2");
		WORD("-g");
		WORD("1");
	}
#undef WORD
}

/* The pod spec lines both replicas share. */
static void yaml_pod_head(struct gc_buf *b)
{
	gc_buf_puts(b, "        spec:\n"
		       "          # the guests' own network: the interfaces and RDMA devices the\n"
		       "          # NCCL settings name are the pods' too\n"
		       "          hostNetwork: true\n"
		       "          dnsPolicy: ClusterFirstWithHostNet\n"
		       "          containers:\n");
}

int gc_mpi_emit_mpijob(struct gc_buf *out, const struct gc_mpi_job *job, const char *name,
		       const char *image, struct gc_error *err)
{
	struct gc_buf b = GC_BUF_INIT;
	struct env_var ev[ENV_MAX];
	size_t i, nev;
	int rc = check_job(job, err);

	if (rc == 0)
		rc = uniform_slots(job, "an MPIJob", err);
	if (rc != 0)
		return rc;
	if (name == NULL || !k8s_name(name))
		return gc_error_set(err, GC_EINVAL,
				    "invalid MPIJob name '%s' (lower case letters, digits, '-', '.')",
				    name ? name : "(null)");
	if (image == NULL || !image_ref(image))
		return gc_error_set(err, GC_EINVAL, "invalid container image '%s'",
				    image ? image : "(null)");
	gc_buf_puts(&b, "# gpuclusterctl validate --emit-mpijob: the --mpirun workload for "
			"Kubeflow's mpi-operator\n"
			"apiVersion: kubeflow.org/v2beta1\n"
			"kind: MPIJob\n"
			"metadata:\n"
			"  name: ");
	yaml_str(&b, name);
	gc_buf_printf(&b,
		      "\nspec:\n"
		      "  slotsPerWorker: %u\n"
		      "  runPolicy:\n"
		      "    cleanPodPolicy: Running\n"
		      "  mpiImplementation: OpenMPI\n"
		      "  mpiReplicaSpecs:\n"
		      "    Launcher:\n"
		      "      replicas: 1\n"
		      "      template:\n",
		      job->nodes[0].slots);
	yaml_pod_head(&b);
	gc_buf_puts(&b, "          - name: launcher\n"
			"            image: ");
	yaml_str(&b, image);
	gc_buf_puts(&b, "\n            env:\n");
	nev = job_env(ev, job);
	for (i = 0; i < nev; i++) {
		gc_buf_printf(&b, "            - name: %s\n              value: ", ev[i].name);
		yaml_str(&b, ev[i].value);
		gc_buf_putc(&b, '\n');
	}
	env_free(ev, nev);
	gc_buf_puts(&b, "            command:\n");
	yaml_launcher_command(&b, job, "            ");
	gc_buf_printf(&b,
		      "    Worker:\n"
		      "      replicas: %zu\n"
		      "      template:\n",
		      job->nnodes);
	yaml_pod_head(&b);
	gc_buf_puts(&b, "          - name: worker\n"
			"            image: ");
	yaml_str(&b, image);
	gc_buf_printf(&b,
		      "\n"
		      "            securityContext:\n"
		      "              capabilities:\n"
		      "                # RDMA registers (locks) memory\n"
		      "                add:\n"
		      "                - IPC_LOCK\n"
		      "            resources:\n"
		      "              limits:\n"
		      "                nvidia.com/gpu: %u\n",
		      job->nodes[0].slots);
	gc_buf_put(out, b.ptr, b.len);
	gc_buf_free(&b);
	return 0;
}
