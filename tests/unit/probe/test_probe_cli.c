/*
 * test_probe_cli.c - the gpuclusterctl-probe executable as a user runs it:
 * output and the documented exit codes (0 ok, 1 expectation failed, 5 nothing
 * to check, 64 usage, 130 interrupted), on a fake sysfs tree with CUDA
 * libraries pointed away so the result does not depend on the machine the
 * tests run on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <json-c/json.h>

#include "gc/probe.h"
#include "probe_test.h"

/* Run the probe with args; returns the exit code, *out its stdout+stderr. */
static int run(char **out, const char *tree, const char *const *args)
{
	struct gc_buf b = GC_BUF_INIT;
	char *argv[32], chunk[4096];
	char *root = gc_xasprintf("%s/tests/data/probe/%s", GC_SOURCE_DIR, tree);
	int p[2], st, n = 0;
	ssize_t got;
	pid_t pid;

	argv[n++] = (char *)GC_PROBE_EXE;
	while (*args && n < 30)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		setenv("GC_PROBE_SYSFS", root, 1);
		setenv("GC_PROBE_NO_TOOLS", "1", 1);
		setenv("GC_PROBE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
		setenv("GC_PROBE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
		setenv("GC_PROBE_LIBIBVERBS", "/nonexistent/libibverbs.so.1", 1);
		execv(GC_PROBE_EXE, argv);
		_exit(127);
	}
	close(p[1]);
	while ((got = read(p[0], chunk, sizeof(chunk))) > 0)
		gc_buf_put(&b, chunk, (size_t)got);
	close(p[0]);
	waitpid(pid, &st, 0);
	free(root);
	*out = gc_buf_take(&b);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_nothing_present_is_nothing_to_check(void **state)
{
	const char *args[] = {NULL};
	const char *expect[] = {"--expect-set", "gpu.count=0", NULL};
	char *out;

	assert_int_equal(run(&out, "sysfs-none", args), GC_PROBE_EXIT_NOTHING);
	assert_int_equal(GC_PROBE_EXIT_NOTHING, 5);
	assert_string_equal(out,
			    "RDMA\n"
			    "  absent: no RDMA device (" GC_SOURCE_DIR
			    "/tests/data/probe/sysfs-none/sys/class/infiniband is empty or missing)\n"
			    "  verbs: /nonexistent/libibverbs.so.1 not loadable: "
			    "/nonexistent/libibverbs.so.1: cannot open shared object file: No such "
			    "file or directory\n"
			    "  peermem: not loaded\n"
			    "CUDA\n"
			    "  absent: /nonexistent/libcuda.so.1 not loadable: "
			    "/nonexistent/libcuda.so.1: cannot open shared object file: No such file "
			    "or directory\n"
			    "GPUDirect RDMA\n"
			    "  absent: needs both an RDMA device and a CUDA GPU (RDMA: absent, CUDA: "
			    "absent)\n"
			    "Nothing to check: no RDMA device, no CUDA GPU and no expectation "
			    "(exit 5)\n");
	free(out);
	/* an expectation that holds is something checked */
	assert_int_equal(run(&out, "sysfs-none", expect), GC_PROBE_EXIT_OK);
	assert_non_null(strstr(out, "Expectations: 1 checked, 0 failed\n"
				    "  ok   gpu.count                  expected 0, found 0\n"));
	assert_null(strstr(out, "Nothing to check"));
	free(out);
}

static void test_json_is_valid(void **state)
{
	const char *args[] = {"--json", NULL};
	struct json_object *doc, *v;
	char *out;

	assert_int_equal(run(&out, "sysfs-roce", args), GC_PROBE_EXIT_OK);
	doc = json_tokener_parse(out);
	assert_non_null(doc);
	assert_true(json_object_object_get_ex(doc, "rdma", &v));
	assert_true(json_object_object_get_ex(v, "peermem", &v));
	assert_string_equal(json_object_get_string(v), "nvidia_peermem");
	json_object_put(doc);
	free(out);
}

static void test_expect_exit_codes(void **state)
{
	const char *pass[] = {"--expect-set", "rdma.device=mlx5_0", "--expect-set",
			      "rdma.gid_index=3", NULL};
	const char *fail[] = {"--expect-set", "gpu.count=1", NULL};
	char *out;

	assert_int_equal(run(&out, "sysfs-roce", pass), GC_PROBE_EXIT_OK);
	assert_non_null(strstr(out, "Expectations: 2 checked, 0 failed\n"));
	free(out);
	assert_int_equal(run(&out, "sysfs-roce", fail), GC_PROBE_EXIT_FAIL);
	assert_int_equal(GC_PROBE_EXIT_FAIL, 1);
	assert_non_null(strstr(out, "  FAIL gpu.count                  expected 1, found 0\n"
				    "       hint: no GPU visible ("));
	free(out);
}

/* args is a usage error (exit 64) whose output holds want (when given) */
static void usage_error(const char *const *args, const char *want)
{
	char *out;

	assert_int_equal(run(&out, "sysfs-none", args), GC_PROBE_EXIT_USAGE);
	if (want != NULL && strstr(out, want) == NULL)
		fail_msg("'%s' not in:\n%s", want, out);
	free(out);
}

static void test_usage_errors(void **state)
{
	const char *unknown[] = {"--frobnicate", NULL};
	const char *badkey[] = {"--expect-set", "gpu.cuont=1", NULL};
	const char *nofile[] = {"--expect", "/nonexistent/x.expect", NULL};
	const char *both[] = {"--rdma-server", "--rdma-peer", "h", NULL};
	const char *badnum[] = {"--bw-mib", "0", NULL};
	const char *qpt_low[] = {"--rdma-qp-timeout", "0", NULL};
	const char *qpt_high[] = {"--rdma-qp-timeout", "32", NULL};
	const char *noval[] = {"--rdma-iters", NULL};
	char *out;

	assert_int_equal(run(&out, "sysfs-none", unknown), GC_PROBE_EXIT_USAGE);
	assert_int_equal(GC_PROBE_EXIT_USAGE, 64);
	assert_true(strncmp(out, "gpuclusterctl-probe: unknown or incomplete option "
				 "'--frobnicate'\nusage: ", 70) == 0);
	free(out);
	usage_error(badkey, "--expect-set:0: error: unknown key 'gpu.cuont'");
	usage_error(nofile, "cannot open expect file '/nonexistent/x.expect'");
	usage_error(both, NULL);
	usage_error(badnum, "gpuclusterctl-probe: --bw-mib needs a number from 1 to ");
	/* the QP's Timeout field is 5 bits, and 0 would mean "wait forever" */
	usage_error(qpt_low, "gpuclusterctl-probe: --rdma-qp-timeout needs a number from 1 to 31, "
			     "not '0'\n");
	usage_error(qpt_high, "gpuclusterctl-probe: --rdma-qp-timeout needs a number from 1 to 31, "
			      "not '32'\n");
	usage_error(noval, "gpuclusterctl-probe: unknown or incomplete option '--rdma-iters'\n");
}

static void test_rdma_server_without_device(void **state)
{
	const char *args[] = {"--no-cuda", "--rdma-server", NULL};
	char *out;

	/* no device: reported, not a tool failure, and nothing was checked */
	assert_int_equal(run(&out, "sysfs-none", args), GC_PROBE_EXIT_NOTHING);
	assert_non_null(strstr(out, "RDMA test (server)\n  absent: no RDMA device\n"));
	free(out);
}

/* Ctrl-C exits 130: the probe is blocked reading its --expect file, a FIFO
 * that the test opens (so the probe is surely running) and never writes. */
static void test_sigint_exits_130(void **state)
{
	char dir[] = "/tmp/gc-probe-sigint-XXXXXX", *fifo;
	int fd = -1, st, tries;
	pid_t pid;

	assert_non_null(mkdtemp(dir));
	fifo = gc_xasprintf("%s/expect", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(GC_PROBE_EXE, GC_PROBE_EXE, "--expect", fifo, (char *)NULL);
		_exit(127);
	}
	for (tries = 0; fd < 0 && tries < 1000; tries++) {
		fd = open(fifo, O_WRONLY | O_NONBLOCK); /* ENXIO until the probe opens it */
		if (fd < 0)
			usleep(10000);
	}
	assert_true(fd >= 0);
	assert_int_equal(kill(pid, SIGINT), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), GC_PROBE_EXIT_INTERRUPTED);
	assert_int_equal(GC_PROBE_EXIT_INTERRUPTED, 130);
	close(fd);
	unlink(fifo);
	rmdir(dir);
	free(fifo);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_present_is_nothing_to_check),
		cmocka_unit_test(test_json_is_valid),
		cmocka_unit_test(test_expect_exit_codes),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_rdma_server_without_device),
		cmocka_unit_test(test_sigint_exits_130),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
