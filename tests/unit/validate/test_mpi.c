/*
 * test_mpi.c - the MPI workload of validate (src/validate/mpi.c,
 * mpi_parse.c): the job a spec gives, the exact hostfile, mpirun command
 * line and sbatch script, the MPIJob parsed back with libyaml, and the
 * parsers on captured and synthetic output (tests/data/mpi/SOURCES.md),
 * broken input included.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml.h>

#include "gc/spec.h"
#include "mpi.h"

static char *data(const char *rel, size_t *len)
{
	struct gc_error err = GC_ERROR_INIT;
	char *path = gc_xasprintf("%s/tests/data/mpi/%s", GC_SOURCE_DIR, rel);
	char *text = NULL;

	if (gc_read_file(&text, len, path, 1u << 20, &err) != 0) {
		fprintf(stderr, "cannot read %s: %s\n", path, err.msg);
		abort();
	}
	free(path);
	return text;
}

static const struct gc_mpi_node two_nodes[] = {
	{"worker-01", "198.18.0.51", 1},
	{"worker-02", "198.18.0.52", 1},
};

/* The job of examples/roce-pair.yaml as the probe would complete it. */
static struct gc_mpi_job roce_job(void)
{
	struct gc_mpi_job j;

	memset(&j, 0, sizeof(j));
	j.nodes = two_nodes;
	j.nnodes = 2;
	j.hca = "mlx5_0";
	j.gid_index = 3;
	j.tos = 106;
	j.ifname = "ens224";
	j.probe_path = "/opt/gpuclusterctl/bin/gpuclusterctl-probe";
	j.expect_rdma = true;
	return j;
}

/* ---------------------------------------------------------------- the job */

static void test_job_from_spec(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_diags d = {0};
	struct gc_cluster *c = NULL;
	struct gc_arena a = GC_ARENA_INIT;
	struct gc_mpi_job j;

	assert_int_equal(gc_spec_load(&c, &d, GC_SOURCE_DIR "/examples/roce-pair.yaml", &err), 0);
	assert_int_equal(gc_mpi_job_from_spec(&j, &a, c, "mlx5_0", 3, &err), 0);
	assert_int_equal(j.nnodes, 2);
	assert_string_equal(j.nodes[0].name, "worker-01");
	assert_string_equal(j.nodes[0].address, "198.18.0.51");
	assert_int_equal(j.nodes[0].slots, 1);
	assert_string_equal(j.nodes[1].address, "198.18.0.52");
	assert_string_equal(j.ifname, "ens224");
	assert_string_equal(j.hca, "mlx5_0");
	assert_int_equal(j.gid_index, 3);
	assert_int_equal(j.tos, 106);
	assert_true(j.expect_rdma); /* SR-IOV VFs on both */
	assert_null(j.command);
	assert_null(j.probe_path);
	gc_arena_free(&a);
	gc_cluster_free(c);
	gc_diags_free(&d);
}

/* The same spec with the second guest's ToS changed: one NCCL_IB_TC
 * cannot serve both. */
static void test_job_tos_disagree(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_diags d = {0};
	struct gc_cluster *c = NULL;
	struct gc_arena a = GC_ARENA_INIT;
	struct gc_mpi_job j;
	size_t len;
	char *text, *second;

	assert_int_equal(gc_read_file(&text, &len, GC_SOURCE_DIR "/examples/roce-pair.yaml",
				      1u << 20, &err),
			 0);
	second = strstr(strstr(text, "name: worker-02"), "tos: 106");
	assert_non_null(second);
	memcpy(second, "tos: 098", 8);
	assert_int_equal(gc_spec_load_buffer(&c, &d, "x.yaml", text, len, &err), 0);
	assert_int_equal(gc_mpi_job_from_spec(&j, &a, c, NULL, -1, &err), GC_EINVAL);
	assert_string_equal(err.msg, "guests 'worker-01' and 'worker-02' mark RoCE traffic with "
				     "different ToS (106, 98): NCCL_IB_TC takes one value");
	gc_arena_free(&a);
	gc_cluster_free(c);
	gc_diags_free(&d);
	free(text);
}

/* ---------------------------------------------------------------- hostfile, command */

static void test_hostfile_exact(void **state)
{
	static const struct gc_mpi_node nodes[] = {
		{"a", "198.18.0.51", 4},
		{"b", "gpu-b.lab.example", 1},
	};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_mpi_job j = roce_job();

	j.nodes = nodes;
	assert_int_equal(gc_mpi_hostfile(&b, &j, &err), 0);
	assert_string_equal(gc_buf_str(&b), "198.18.0.51 slots=4\n"
					    "gpu-b.lab.example slots=1\n");
	assert_int_equal(gc_mpi_job_ranks(&j), 5);
	gc_buf_free(&b);
}

static void test_command_default_exact(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_mpi_job j = roce_job();

	assert_int_equal(gc_mpi_command(&b, &j, "/tmp/gc-mpi-hosts", &err), 0);
	assert_string_equal(
		gc_buf_str(&b),
		"if command -v all_reduce_perf >/dev/null 2>&1; then "
		"mpirun --hostfile '/tmp/gc-mpi-hosts' -np 2 --map-by slot --bind-to none "
		"--mca btl_tcp_if_include 'ens224' --mca oob_tcp_if_include 'ens224' "
		"-x 'NCCL_IB_HCA==mlx5_0' -x 'NCCL_IB_GID_INDEX=3' -x 'NCCL_IB_TC=106' "
		"-x 'NCCL_SOCKET_IFNAME==ens224' -x 'NCCL_DEBUG=INFO' "
		"all_reduce_perf -b 8 -e 256M -f 2 -g 1; "
		"else mpirun --hostfile '/tmp/gc-mpi-hosts' -np 2 --map-by ppr:1:node --bind-to none "
		"--mca btl_tcp_if_include 'ens224' --mca oob_tcp_if_include 'ens224' "
		"'/opt/gpuclusterctl/bin/gpuclusterctl-probe' --mpi-bw; fi");
	gc_buf_free(&b);
}

/* A user's command as root, nothing the probe observed: only NCCL_DEBUG. */
static void test_command_user_root_exact(void **state)
{
	static const struct gc_mpi_node nodes[] = {
		{"a", "198.18.0.51", 2},
		{"b", "198.18.0.52", 2},
	};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_mpi_job j;

	memset(&j, 0, sizeof(j));
	j.nodes = nodes;
	j.nnodes = 2;
	j.gid_index = -1;
	j.tos = -1;
	j.as_root = true;
	j.command = "python3 train.py --note 'it'\"'\"'s mine'";
	assert_int_equal(gc_mpi_command(&b, &j, "/root/hosts", &err), 0);
	assert_string_equal(gc_buf_str(&b),
			    "mpirun --allow-run-as-root --hostfile '/root/hosts' -np 4 --map-by slot "
			    "--bind-to none -x 'NCCL_DEBUG=INFO' sh -c "
			    "'python3 train.py --note '\\''it'\\''\"'\\''\"'\\''s mine'\\'''");
	gc_buf_free(&b);
}

/* validate's --mpi-timeout: each mpirun under coreutils' timeout, so that a
 * job over the limit is stopped on the launcher (and through mpirun on every
 * node); the Slurm script, which has the scheduler's own limit, has none. */
/* the roce job's Open MPI interface and NCCL settings, as every mpirun gets them */
#define ROCE_TCP "--mca btl_tcp_if_include 'ens224' --mca oob_tcp_if_include 'ens224' "
#define ROCE_NCCL                                                                      \
	"-x 'NCCL_IB_HCA==mlx5_0' -x 'NCCL_IB_GID_INDEX=3' -x 'NCCL_IB_TC=106' "       \
	"-x 'NCCL_SOCKET_IFNAME==ens224' -x 'NCCL_DEBUG=INFO' "

static void test_command_time_limit_exact(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_mpi_job j = roce_job();

	j.time_limit_s = 600;
	assert_int_equal(gc_mpi_command(&b, &j, "/tmp/gc-mpi-hosts", &err), 0);
	assert_string_equal(
		gc_buf_str(&b),
		"if command -v all_reduce_perf >/dev/null 2>&1; then "
		"timeout --foreground --kill-after=10 600 mpirun --hostfile '/tmp/gc-mpi-hosts' -np 2 --map-by slot "
		"--bind-to none " ROCE_TCP ROCE_NCCL "all_reduce_perf -b 8 -e 256M -f 2 -g 1; "
		"else timeout --foreground --kill-after=10 600 mpirun --hostfile '/tmp/gc-mpi-hosts' -np 2 "
		"--map-by ppr:1:node --bind-to none " ROCE_TCP "'/opt/gpuclusterctl/bin/gpuclusterctl-probe' --mpi-bw; fi");
	gc_buf_reset(&b);
	j.command = "sleep 20";
	j.time_limit_s = 2;
	assert_int_equal(gc_mpi_command(&b, &j, "/tmp/h", &err), 0);
	assert_string_equal(
		gc_buf_str(&b),
		"timeout --foreground --kill-after=10 2 mpirun --hostfile '/tmp/h' -np 2 --map-by slot --bind-to none "
		ROCE_TCP ROCE_NCCL "sh -c 'sleep 20'");
	/* the run's tag, after the spec's environment, before the program */
	gc_buf_reset(&b);
	j.run_tag = "0123456789abcdef";
	assert_int_equal(gc_mpi_command(&b, &j, "/tmp/h", &err), 0);
	assert_string_equal(
		gc_buf_str(&b),
		"timeout --foreground --kill-after=10 2 mpirun --hostfile '/tmp/h' -np 2 --map-by slot --bind-to none "
		ROCE_TCP ROCE_NCCL "-x GC_MPI_RUN_TAG=0123456789abcdef sh -c 'sleep 20'");
	gc_buf_reset(&b);
	j.run_tag = "abc;reboot";
	assert_int_equal(gc_mpi_command(&b, &j, "/tmp/h", &err), GC_EINVAL);
	assert_string_equal(err.msg, "invalid MPI run tag");
	assert_int_equal(b.len, 0);
	gc_error_clear(&err);
	j.run_tag = NULL;
	gc_buf_reset(&b);
	assert_int_equal(gc_mpi_emit_slurm(&b, &j, &err), 0);
	assert_null(strstr(gc_buf_str(&b), "timeout"));
	gc_buf_free(&b);
}

/* The sweep, run by sh here: it kills the tagged process, and what
 * that process started, and leaves an untagged one alone. */
static pid_t spawn_sleep(const char *tag)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		/* a group of its own, so that the test can stop the shell and its
		 * sleep together; no inherited stdout holding ctest's pipe open */
		setpgid(0, 0);
		if (freopen("/dev/null", "w", stdout) == NULL)
			_exit(126);
		if (tag != NULL)
			setenv("GC_MPI_RUN_TAG", tag, 1);
		else
			unsetenv("GC_MPI_RUN_TAG");
		execlp("sh", "sh", "-c", "sleep 300 & wait", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void test_sweep_kills_only_the_tagged(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	pid_t tagged, other, near;
	int st = 0;
	char out[32] = "";
	FILE *p;

	assert_int_equal(gc_mpi_sweep_command(&b, "0123456789abcdef", &err), 0);
	assert_string_equal(gc_buf_str(&b),
			    "n=0; for f in /proc/[0-9]*/environ; do grep -q -z -x -F "
			    "GC_MPI_RUN_TAG=0123456789abcdef \"$f\" 2>/dev/null || continue; "
			    "p=${f#/proc/}; kill -KILL \"${p%/environ}\" 2>/dev/null && n=$((n+1)); "
			    "done; echo \"$n\"");
	tagged = spawn_sleep("0123456789abcdef");
	near = spawn_sleep("0123456789abcdef0"); /* a longer tag is another run */
	other = spawn_sleep(NULL);
	usleep(300 * 1000); /* the shells have started their sleeps */
	p = popen(gc_buf_str(&b), "r");
	assert_non_null(p);
	assert_non_null(fgets(out, sizeof(out), p));
	assert_int_equal(pclose(p), 0);
	/* the shell and its sleep, which inherited the environment */
	assert_string_equal(out, "2\n");
	assert_int_equal(waitpid(tagged, &st, 0), tagged);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(waitpid(near, &st, WNOHANG), 0);
	assert_int_equal(waitpid(other, &st, WNOHANG), 0);
	kill(-near, SIGKILL);
	kill(-other, SIGKILL);
	waitpid(near, &st, 0);
	waitpid(other, &st, 0);
	gc_buf_reset(&b);
	assert_int_equal(gc_mpi_sweep_command(&b, "", &err), GC_EINVAL);
	assert_int_equal(gc_mpi_sweep_command(&b, "ABC", &err), GC_EINVAL);
	assert_int_equal(gc_mpi_sweep_command(&b, "a b", &err), GC_EINVAL);
	assert_int_equal(b.len, 0);
	gc_buf_free(&b);
}

/* The launcher's command with stop_on_eof: the prologue once, gc_run before
 * each mpirun. */
static void test_command_stop_on_eof_exact(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_mpi_job j = roce_job();

	j.time_limit_s = 600;
	j.stop_on_eof = true;
	assert_int_equal(gc_mpi_command(&b, &j, "/tmp/h", &err), 0);
	assert_string_equal(
		gc_buf_str(&b),
		"exec 3<&0; gc_run() { \"$@\" </dev/null 3<&- & p=$!; "
		"{ while read -r gc_line; do :; done <&3; kill -TERM \"$p\"; } 2>/dev/null & w=$!; "
		"wait \"$p\" 2>/dev/null; r=$?; kill \"$w\" 2>/dev/null; wait \"$w\" 2>/dev/null; return \"$r\"; }; "
		"if command -v all_reduce_perf >/dev/null 2>&1; then "
		"gc_run timeout --foreground --kill-after=10 600 mpirun --hostfile '/tmp/h' -np 2 "
		"--map-by slot --bind-to none " ROCE_TCP ROCE_NCCL "all_reduce_perf -b 8 -e 256M -f 2 -g 1; "
		"else gc_run timeout --foreground --kill-after=10 600 mpirun --hostfile '/tmp/h' -np 2 "
		"--map-by ppr:1:node --bind-to none " ROCE_TCP
		"'/opt/gpuclusterctl/bin/gpuclusterctl-probe' --mpi-bw; fi");
	gc_buf_free(&b);
}

/*
 * The prologue under dash and bash, stdin a pipe we hold: a command that
 * ends by itself gives its status and leaves no watcher (the shell waits
 * for it, so a watcher left running would hang the test); the pipe closed
 * while the command runs stops it with SIGTERM.  Nothing on stderr.
 */
static int run_prologue(const char *shell, const char *cmd, bool close_early, char *errbuf,
			size_t errcap)
{
	int in[2], errp[2], st = 0;
	char *script = gc_xasprintf("%s%s", GC_MPI_STOP_ON_EOF_PROLOGUE, cmd);
	pid_t pid;
	ssize_t n, got = 0;

	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(errp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(errp[1], 2);
		close(in[0]);
		close(in[1]);
		close(errp[0]);
		close(errp[1]);
		execlp(shell, shell, "-c", script, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(errp[1]);
	if (close_early) {
		usleep(300 * 1000);
		close(in[1]);
	}
	while ((n = read(errp[0], errbuf + got, errcap - 1 - (size_t)got)) > 0)
		got += n;
	errbuf[got] = '\0';
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!close_early)
		close(in[1]);
	close(errp[0]);
	free(script);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_stop_on_eof_under_sh_and_bash(void **state)
{
	static const char *const shells[] = {"sh", "bash"};
	char errs[256];

	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(run_prologue(shells[i], "gc_run sh -c 'exit 7'", false, errs,
					      sizeof(errs)), 7);
		assert_string_equal(errs, "");
		/* SIGTERM: 128 + 15 */
		assert_int_equal(run_prologue(shells[i], "gc_run sleep 30", true, errs, sizeof(errs)),
				 143);
		assert_string_equal(errs, "");
		/* timeout --foreground passes the TERM on to its command and
		 * exits with the command's status */
		assert_int_equal(run_prologue(shells[i],
					      "gc_run timeout --foreground --kill-after=10 60 sleep 30",
					      true, errs, sizeof(errs)), 143);
		assert_string_equal(errs, "");
	}
}

/* A value that got past the loader is still one quoted word; what cannot be
 * quoted safely (newlines, a host the hostfile would split) is refused. */
static void test_command_hostile_values(void **state)
{
	static const struct gc_mpi_node bad_addr[] = {
		{"a", "198.18.0.51 slots=64", 1},
	};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_mpi_job j = roce_job();

	j.ifname = "ens 224;reboot";
	j.hca = "mlx5_0 |id&";
	j.probe_path = NULL;
	assert_int_equal(gc_mpi_command(&b, &j, "/tmp/h", &err), 0);
	assert_string_equal(gc_buf_str(&b),
			    "mpirun --hostfile '/tmp/h' -np 2 --map-by slot --bind-to none "
			    "--mca btl_tcp_if_include 'ens 224;reboot' "
			    "--mca oob_tcp_if_include 'ens 224;reboot' "
			    "-x 'NCCL_IB_HCA==mlx5_0 |id&' -x 'NCCL_IB_GID_INDEX=3' "
			    "-x 'NCCL_IB_TC=106' -x 'NCCL_SOCKET_IFNAME==ens 224;reboot' "
			    "-x 'NCCL_DEBUG=INFO' all_reduce_perf -b 8 -e 256M -f 2 -g 1");
	gc_buf_reset(&b);

	j = roce_job();
	j.hca = "mlx5_0`id`"; /* the loader's label rule: no quotes, backslash, backtick, $ */
	assert_int_equal(gc_mpi_command(&b, &j, "/tmp/h", &err), GC_EINVAL);
	assert_string_equal(err.msg, "invalid RDMA device name for NCCL_IB_HCA");
	gc_error_clear(&err);
	j = roce_job();
	j.ifname = "ens224\nreboot";
	assert_int_equal(gc_mpi_command(&b, &j, "/tmp/h", &err), GC_EINVAL);
	assert_string_equal(err.msg, "invalid interface name for NCCL_SOCKET_IFNAME");
	gc_error_clear(&err);
	j = roce_job();
	j.command = "a\nb";
	assert_int_equal(gc_mpi_command(&b, &j, "/tmp/h", &err), GC_EINVAL);
	gc_error_clear(&err);
	j = roce_job();
	assert_int_equal(gc_mpi_command(&b, &j, "hosts; rm -rf /", &err), GC_EINVAL);
	assert_string_equal(err.msg, "invalid hostfile path 'hosts; rm -rf /'");
	gc_error_clear(&err);
	j.nodes = bad_addr;
	j.nnodes = 1;
	assert_int_equal(gc_mpi_hostfile(&b, &j, &err), GC_EINVAL);
	assert_string_equal(err.msg, "MPI node 'a': invalid address");
	assert_int_equal(b.len, 0); /* nothing written on failure */
	gc_buf_free(&b);
}

/* ---------------------------------------------------------------- sbatch */

static void test_slurm_exact(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_mpi_job j = roce_job();
	static const struct gc_mpi_node uneven[] = {
		{"a", "198.18.0.51", 2},
		{"b", "198.18.0.52", 1},
	};

	assert_int_equal(gc_mpi_emit_slurm(&b, &j, &err), 0);
	assert_string_equal(
		gc_buf_str(&b),
		"#!/bin/bash\n"
		"# gpuclusterctl validate --emit-slurm: the --mpirun workload as a batch job\n"
		"#SBATCH --job-name=gc-mpi\n"
		"#SBATCH --nodes=2\n"
		"#SBATCH --ntasks-per-node=1\n"
		"#SBATCH --gpus-per-node=1\n"
		"export NCCL_IB_HCA='=mlx5_0'\n"
		"export NCCL_IB_GID_INDEX='3'\n"
		"export NCCL_IB_TC='106'\n"
		"export NCCL_SOCKET_IFNAME='=ens224'\n"
		"export NCCL_DEBUG='INFO'\n"
		"if command -v all_reduce_perf >/dev/null 2>&1; then\n"
		"\tmpirun --map-by slot --bind-to none --mca btl_tcp_if_include 'ens224' "
		"--mca oob_tcp_if_include 'ens224' -x NCCL_IB_HCA -x NCCL_IB_GID_INDEX -x NCCL_IB_TC "
		"-x NCCL_SOCKET_IFNAME -x NCCL_DEBUG all_reduce_perf -b 8 -e 256M -f 2 -g 1\n"
		"else\n"
		"\tmpirun --map-by ppr:1:node --bind-to none --mca btl_tcp_if_include 'ens224' "
		"--mca oob_tcp_if_include 'ens224' '/opt/gpuclusterctl/bin/gpuclusterctl-probe' "
		"--mpi-bw\n"
		"fi\n");
	gc_buf_reset(&b);
	j.nodes = uneven;
	assert_int_equal(gc_mpi_emit_slurm(&b, &j, &err), GC_ENOTSUP);
	assert_string_equal(err.msg, "a Slurm job needs the same GPU count on every node: 'a' "
				     "has 2, 'b' 1");
	gc_buf_free(&b);
}

/* ---------------------------------------------------------------- MPIJob, read back */

/* The node at a path of mapping keys and "#N" sequence indexes, or NULL. */
static yaml_node_t *yget(yaml_document_t *doc, yaml_node_t *n, ...)
{
	va_list ap;
	const char *k;

	va_start(ap, n);
	while (n != NULL && (k = va_arg(ap, const char *)) != NULL) {
		yaml_node_t *next = NULL;

		if (k[0] == '#' && n->type == YAML_SEQUENCE_NODE) {
			long i = strtol(k + 1, NULL, 10);
			yaml_node_item_t *it = n->data.sequence.items.start;

			if (i >= 0 && it + i < n->data.sequence.items.top)
				next = yaml_document_get_node(doc, it[i]);
		} else if (n->type == YAML_MAPPING_NODE) {
			yaml_node_pair_t *p;

			for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
				yaml_node_t *key = yaml_document_get_node(doc, p->key);

				if (key->type == YAML_SCALAR_NODE &&
				    strcmp((const char *)key->data.scalar.value, k) == 0)
					next = yaml_document_get_node(doc, p->value);
			}
		}
		n = next;
	}
	va_end(ap);
	return n;
}

static const char *yscalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : "(none)";
}

static size_t ylen(yaml_node_t *n)
{
	return n && n->type == YAML_SEQUENCE_NODE
		       ? (size_t)(n->data.sequence.items.top - n->data.sequence.items.start)
		       : 0;
}

static void test_mpijob_parsed_back(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	struct gc_mpi_job j = roce_job();
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root, *launcher, *worker, *cmd, *env;
	static const char *const words[] = {
		"mpirun", "-np", "2", "--map-by", "slot", "--bind-to", "none", "--mca",
		"btl_tcp_if_include", "ens224", "--mca", "oob_tcp_if_include", "ens224",
		"-x", "NCCL_IB_HCA", "-x", "NCCL_IB_GID_INDEX", "-x", "NCCL_IB_TC", "-x",
		"NCCL_SOCKET_IFNAME", "-x", "NCCL_DEBUG", "all_reduce_perf", "-b", "8", "-e",
		"256M", "-f", "2", "-g", "1"};
	size_t i;

	j.command = NULL;
	j.ifname = "ens224";
	assert_int_equal(gc_mpi_emit_mpijob(&b, &j, "gc-nccl", "registry.lab/nccl-tests:2.19", &err),
			 0);
	assert_int_equal(yaml_parser_initialize(&parser), 1);
	yaml_parser_set_input_string(&parser, (const unsigned char *)b.ptr, b.len);
	assert_int_equal(yaml_parser_load(&parser, &doc), 1);
	root = yaml_document_get_root_node(&doc);
	assert_non_null(root);
	assert_string_equal(yscalar(yget(&doc, root, "apiVersion", NULL)), "kubeflow.org/v2beta1");
	assert_string_equal(yscalar(yget(&doc, root, "kind", NULL)), "MPIJob");
	assert_string_equal(yscalar(yget(&doc, root, "metadata", "name", NULL)), "gc-nccl");
	assert_string_equal(yscalar(yget(&doc, root, "spec", "slotsPerWorker", NULL)), "1");
	assert_string_equal(yscalar(yget(&doc, root, "spec", "mpiImplementation", NULL)),
			    "OpenMPI");
	launcher = yget(&doc, root, "spec", "mpiReplicaSpecs", "Launcher", NULL);
	worker = yget(&doc, root, "spec", "mpiReplicaSpecs", "Worker", NULL);
	assert_string_equal(yscalar(yget(&doc, launcher, "replicas", NULL)), "1");
	assert_string_equal(yscalar(yget(&doc, worker, "replicas", NULL)), "2");
	assert_string_equal(yscalar(yget(&doc, worker, "template", "spec", "hostNetwork", NULL)),
			    "true");
	assert_string_equal(yscalar(yget(&doc, worker, "template", "spec", "containers", "#0",
					 "resources", "limits", "nvidia.com/gpu", NULL)),
			    "1");
	assert_string_equal(yscalar(yget(&doc, worker, "template", "spec", "containers", "#0",
					 "image", NULL)),
			    "registry.lab/nccl-tests:2.19");
	cmd = yget(&doc, launcher, "template", "spec", "containers", "#0", "command", NULL);
	assert_int_equal(ylen(cmd), GC_ARRAY_LEN(words));
	for (i = 0; i < GC_ARRAY_LEN(words); i++) {
		char idx[8];

		snprintf(idx, sizeof(idx), "#%zu", i);
		assert_string_equal(yscalar(yget(&doc, cmd, idx, NULL)), words[i]);
	}
	env = yget(&doc, launcher, "template", "spec", "containers", "#0", "env", NULL);
	assert_int_equal(ylen(env), 5);
	assert_string_equal(yscalar(yget(&doc, env, "#0", "name", NULL)), "NCCL_IB_HCA");
	assert_string_equal(yscalar(yget(&doc, env, "#0", "value", NULL)), "=mlx5_0");
	assert_string_equal(yscalar(yget(&doc, env, "#2", "value", NULL)), "106");
	assert_string_equal(yscalar(yget(&doc, env, "#3", "value", NULL)), "=ens224");
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);

	/* a command with quotes and backslashes stays one YAML string */
	gc_buf_reset(&b);
	j.command = "echo \"a\\b\" 'c'";
	assert_int_equal(gc_mpi_emit_mpijob(&b, &j, "gc-nccl", "nccl:1", &err), 0);
	assert_int_equal(yaml_parser_initialize(&parser), 1);
	yaml_parser_set_input_string(&parser, (const unsigned char *)b.ptr, b.len);
	assert_int_equal(yaml_parser_load(&parser, &doc), 1);
	cmd = yget(&doc, yaml_document_get_root_node(&doc), "spec", "mpiReplicaSpecs", "Launcher",
		   "template", "spec", "containers", "#0", "command", NULL);
	assert_string_equal(yscalar(yget(&doc, cmd, "#23", NULL)), "sh");
	assert_string_equal(yscalar(yget(&doc, cmd, "#25", NULL)), "echo \"a\\b\" 'c'");
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);

	gc_buf_reset(&b);
	assert_int_equal(gc_mpi_emit_mpijob(&b, &j, "GC_Nccl", "nccl:1", &err), GC_EINVAL);
	gc_error_clear(&err);
	assert_int_equal(gc_mpi_emit_mpijob(&b, &j, "gc", "nccl:1\n  evil: 1", &err), GC_EINVAL);
	assert_int_equal(b.len, 0);
	gc_buf_free(&b);
}

/* ---------------------------------------------------------------- nccl-tests output */

static void test_parse_roce_no_fallback(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_mpi_result r;
	size_t len;
	char *t = data("synthetic-roce-2node.txt", &len);

	assert_int_equal(gc_mpi_parse_nccl(&r, t, len, &err), 0);
	assert_int_equal(r.kind, GC_MPI_RESULT_NCCL);
	assert_int_equal(r.nccl.rows, 5);
	assert_true(r.nccl.avg_busbw_gbs > 33.126 && r.nccl.avg_busbw_gbs < 33.128);
	assert_int_equal(r.nccl.max_bytes, 33554432);
	assert_true(r.nccl.max_busbw_gbs > 41.51 && r.nccl.max_busbw_gbs < 41.53);
	assert_int_equal(r.nccl.wrong, 0);
	assert_true(r.nccl.wrong_checked);
	assert_int_equal(r.nccl.oob_values, 0);
	assert_int_equal(r.net.transport, GC_MPI_NET_IB);
	assert_string_equal(gc_mpi_transport_name(r.net.transport), "IB");
	assert_string_equal(r.net.net_name, "IB");
	assert_string_equal(r.net.ib_devices, "[0]mlx5_0:1/RoCE [RO]");
	assert_int_equal(r.net.net_channels, 8);
	assert_false(r.net.socket_fallback);
	free(t);
}

static void test_parse_socket_fallback(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_mpi_result r;
	size_t len;
	char *t = data("synthetic-socket-2node.txt", &len);

	assert_int_equal(gc_mpi_parse_nccl(&r, t, len, &err), 0);
	assert_int_equal(r.nccl.rows, 5);
	assert_true(r.nccl.max_busbw_gbs > 1.11 && r.nccl.max_busbw_gbs < 1.13);
	assert_int_equal(r.net.transport, GC_MPI_NET_SOCKET);
	assert_string_equal(r.net.net_name, "Socket");
	assert_true(r.net.ib_no_device);
	assert_true(r.net.socket_fallback);
	free(t);
}

static void test_parse_old_and_per_iteration(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_mpi_result r;
	size_t len;
	char *t = data("synthetic-old-format.txt", &len);

	/* "error" is a deviation, not a count: wrong stays unchecked */
	assert_int_equal(gc_mpi_parse_nccl(&r, t, len, &err), 0);
	assert_int_equal(r.nccl.rows, 3);
	assert_int_equal(r.nccl.max_bytes, 16777216);
	assert_true(r.nccl.max_busbw_gbs > 11.04 && r.nccl.max_busbw_gbs < 11.06);
	assert_false(r.nccl.wrong_checked);
	assert_true(r.nccl.avg_busbw_gbs > 8.691 && r.nccl.avg_busbw_gbs < 8.692);
	assert_int_equal(r.net.transport, GC_MPI_NET_UNKNOWN);
	free(t);
	t = data("synthetic-per-iter-unchecked.txt", &len);
	assert_int_equal(gc_mpi_parse_nccl(&r, t, len, &err), 0);
	assert_int_equal(r.nccl.rows, 2);
	assert_true(r.nccl.max_busbw_gbs > 35.39 && r.nccl.max_busbw_gbs < 35.41);
	assert_false(r.nccl.wrong_checked);
	free(t);
}

static void test_parse_wrong_counted(void **state)
{
	static const char text[] =
		"#       size         count      type   redop    root     time   algbw   busbw "
		"#wrong     time   algbw   busbw #wrong\n"
		"     8388608       2097152     float     sum      -1    231.4   36.24   36.24      0"
		"    227.8   36.83   36.83      3\n"
		"    16777216       4194304     float     sum      -1    420.5   39.90   39.90     12"
		"    419.9   39.95   39.95      0\n"
		"# Out of bounds values : 2 FAILED\n"
		"# Avg bus bandwidth    : 38.23 \n";
	struct gc_error err = GC_ERROR_INIT;
	struct gc_mpi_result r;

	assert_int_equal(gc_mpi_parse_nccl(&r, text, sizeof(text) - 1, &err), 0);
	assert_int_equal(r.nccl.wrong, 15);
	assert_true(r.nccl.wrong_checked);
	assert_int_equal(r.nccl.oob_values, 2);
}

/* Real captures, each cut short by where the excerpt ended. */
static void test_parse_real_truncated(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_mpi_result r;
	size_t len;
	char *t = data("nccl-tests-232-roce-table.txt", &len);

	assert_int_equal(gc_mpi_parse_nccl(&r, t, len, &err), GC_EINVAL);
	assert_string_equal(err.msg, "nccl-tests:11: the output ends before '# Avg bus "
				     "bandwidth' (truncated run?)");
	free(t);
	gc_error_clear(&err);
	/* tagged lines: the header was read through "[1,0]<stdout>:" */
	t = data("aws-k8s-tester-503-tagged.txt", &len);
	assert_int_equal(gc_mpi_parse_nccl(&r, t, len, &err), GC_EINVAL);
	assert_string_equal(err.msg, "nccl-tests:6: the output ends before '# Avg bus "
				     "bandwidth' (truncated run?)");
	free(t);
	gc_error_clear(&err);
	t = data("nccl-tests-44-no-header.txt", &len);
	assert_int_equal(gc_mpi_parse_nccl(&r, t, len, &err), GC_EINVAL);
	assert_string_equal(err.msg, "nccl-tests:1: a result row before the table header");
	free(t);
}

static void test_parse_garbage(void **state)
{
	static const char junk[] = "\x01\x02\xff garbage\n\0\0 more\n"
				   "bash: all_reduce_perf: command not found\n";
	static const char header[] =
		"#       size         count      type   redop    root     time   algbw   busbw "
		"#wrong     time   algbw   busbw #wrong\n";
	struct gc_error err = GC_ERROR_INIT;
	struct gc_mpi_result r;
	char *t;

	assert_int_equal(gc_mpi_parse_nccl(&r, "", 0, &err), GC_EINVAL);
	assert_string_equal(err.msg, "nccl-tests:1: no result rows (did the test run? its output "
				     "ends here)");
	gc_error_clear(&err);
	assert_int_equal(gc_mpi_parse_nccl(&r, junk, sizeof(junk) - 1, &err), GC_EINVAL);
	assert_string_equal(err.msg, "nccl-tests:3: no result rows (did the test run? its output "
				     "ends here)");
	gc_error_clear(&err);
	t = gc_xasprintf("%s     8388608       2097152     float     sum      -1    231.4   36.24"
			 "   36.24      0    227.8   36.83\n",
			 header);
	assert_int_equal(gc_mpi_parse_nccl(&r, t, strlen(t), &err), GC_EINVAL);
	assert_string_equal(err.msg, "nccl-tests:2: a result row of 11 columns, the header names "
				     "13 (truncated?)");
	free(t);
	gc_error_clear(&err);
	t = gc_xasprintf("%s     8388608       2097152     float     sum      -1    231.4   36.24"
			 "   -nan      0    227.8   36.83   36.83      0\n",
			 header);
	assert_int_equal(gc_mpi_parse_nccl(&r, t, strlen(t), &err), GC_EINVAL);
	assert_string_equal(err.msg, "nccl-tests:2: busbw is not a number");
	free(t);
	gc_error_clear(&err);
	t = gc_xasprintf("%s     8388608       2097152     float     sum      -1    231.4   36.24"
			 "   36.24      0    227.8   36.83   36.83      0\n"
			 "# Avg bus bandwidth    : fast\n",
			 header);
	assert_int_equal(gc_mpi_parse_nccl(&r, t, strlen(t), &err), GC_EINVAL);
	assert_string_equal(err.msg, "nccl-tests:3: 'Avg bus bandwidth' is not a number");
	free(t);
}

/* NCCL's network lines on the real excerpts. */
static void test_scan_real_nccl_lines(void **state)
{
	struct gc_mpi_net n;
	size_t len;
	char *t;

	t = data("nccl-1357-ibext-init.txt", &len);
	gc_mpi_scan_nccl_net(&n, t, len);
	assert_int_equal(n.transport, GC_MPI_NET_IB);
	assert_string_equal(n.net_name, "IBext");
	assert_string_equal(n.ib_devices, "[0]mlx5_0:1/IB/SHARP [1]mlx5_1:1/IB/SHARP "
					  "[2]mlx5_4:1/IB/SHARP [3]mlx5_5:1/IB/SHARP [RO]");
	assert_false(n.socket_fallback);
	free(t);

	t = data("nccl-1357-ibext-channels.txt", &len);
	gc_mpi_scan_nccl_net(&n, t, len);
	assert_int_equal(n.transport, GC_MPI_NET_IB);
	assert_int_equal(n.net_channels, 12); /* the P2P/CUMEM line is not the network */
	free(t);

	t = data("nccl-tests-284-socket.txt", &len);
	gc_mpi_scan_nccl_net(&n, t, len);
	assert_int_equal(n.transport, GC_MPI_NET_SOCKET);
	assert_int_equal(n.net_channels, 8);
	assert_true(n.socket_fallback);
	free(t);

	t = data("nccl-398-ring-socket.txt", &len);
	gc_mpi_scan_nccl_net(&n, t, len);
	assert_int_equal(n.transport, GC_MPI_NET_SOCKET);
	assert_int_equal(n.net_channels, 2);
	free(t);

	t = data("nccl-tests-131-socket-one-node.txt", &len);
	gc_mpi_scan_nccl_net(&n, t, len);
	assert_int_equal(n.transport, GC_MPI_NET_SOCKET);
	assert_int_equal(n.net_channels, 0);
	assert_string_equal(n.first_warn,
			    "Could not find a path for pattern 4, falling back to simple order");
	free(t);

	/* "NET/Socket : Using" in an InfiniBand run is not a fallback */
	t = data("nccl-tests-29-ib-with-socket-init.txt", &len);
	gc_mpi_scan_nccl_net(&n, t, len);
	assert_int_equal(n.transport, GC_MPI_NET_UNKNOWN);
	assert_false(n.socket_fallback);
	assert_string_equal(n.ib_devices, "[0]mlx5_0:1/IB");
	free(t);
}

/* ---------------------------------------------------------------- the probe's line */

static void test_parse_mpibw(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_mpi_result r;
	size_t len;
	char *t = data("mpibw-4ranks.txt", &len);

	assert_int_equal(gc_mpi_parse_output(&r, t, len, &err), 0);
	assert_int_equal(r.kind, GC_MPI_RESULT_MPIBW);
	assert_int_equal(r.bw.ranks, 4);
	assert_int_equal(r.bw.pairs, 2);
	assert_true(r.bw.pair_min_gbs > 10.411 && r.bw.pair_min_gbs < 10.413);
	assert_true(r.bw.pair_max_gbs > 11.869 && r.bw.pair_max_gbs < 11.871);
	assert_true(r.bw.allreduce_gbs > 4.904 && r.bw.allreduce_gbs < 4.906);
	assert_int_equal(r.bw.bytes, 4194304);
	assert_int_equal(r.bw.allreduce_bytes, 67108864);
	assert_int_equal(r.bw.iters, 50);
	assert_true(r.bw.data_ok);
	free(t);
	t = data("mpibw-local.txt", &len);
	assert_int_equal(gc_mpi_parse_mpibw(&r, t, len, &err), 0);
	assert_int_equal(r.bw.ranks, 2);
	assert_true(r.bw.data_ok);
	free(t);

	assert_int_equal(gc_mpi_parse_mpibw(&r, "GCPROBE-MPIBW ranks=2 pairs=1\n", 30, &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "gcprobe:1: no pair_min_gbs=");
	gc_error_clear(&err);
	t = gc_xstrdup("x\nGCPROBE-MPIBW ranks=2 pairs=1 pair_min_gbs=1 pair_max_gbs=1 "
		       "allreduce_gbs=1 bytes=4 allreduce_bytes=8 iters=1 data=maybe\n");
	assert_int_equal(gc_mpi_parse_mpibw(&r, t, strlen(t), &err), GC_EINVAL);
	assert_string_equal(err.msg, "gcprobe:2: data is neither ok nor bad");
	free(t);
	gc_error_clear(&err);
	assert_int_equal(gc_mpi_parse_mpibw(&r, "mpirun: command not found\n", 26, &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "gcprobe:1: no GCPROBE-MPIBW line (did the MPI bandwidth "
				     "test run?)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_from_spec),
		cmocka_unit_test(test_job_tos_disagree),
		cmocka_unit_test(test_hostfile_exact),
		cmocka_unit_test(test_command_default_exact),
		cmocka_unit_test(test_command_user_root_exact),
		cmocka_unit_test(test_command_time_limit_exact),
		cmocka_unit_test(test_command_hostile_values),
		cmocka_unit_test(test_sweep_kills_only_the_tagged),
		cmocka_unit_test(test_command_stop_on_eof_exact),
		cmocka_unit_test(test_stop_on_eof_under_sh_and_bash),
		cmocka_unit_test(test_slurm_exact),
		cmocka_unit_test(test_mpijob_parsed_back),
		cmocka_unit_test(test_parse_roce_no_fallback),
		cmocka_unit_test(test_parse_socket_fallback),
		cmocka_unit_test(test_parse_old_and_per_iteration),
		cmocka_unit_test(test_parse_wrong_counted),
		cmocka_unit_test(test_parse_real_truncated),
		cmocka_unit_test(test_parse_garbage),
		cmocka_unit_test(test_scan_real_nccl_lines),
		cmocka_unit_test(test_parse_mpibw),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
