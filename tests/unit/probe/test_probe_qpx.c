/*
 * test_probe_qpx.c - the RDMA test's queue-pair exchange without a device:
 * the line format, versioning, hostile peer input, and real exchanges over a
 * socketpair and over TCP on 127.0.0.1 with a forked peer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gc/probe.h"
#include "probe_test.h"

static struct gc_probe_qpinfo sample(uint32_t qpn)
{
	struct gc_probe_qpinfo q;
	int i;

	memset(&q, 0, sizeof(q));
	q.qpn = qpn;
	q.psn = 0x3f2a11;
	q.lid = 0;
	q.mtu = 5;
	for (i = 0; i < 16; i++)
		q.gid[i] = (uint8_t)(i * 17);
	q.rkey = 0x1234abcd;
	q.addr = 0x00007f00deadb000ull;
	q.size = 1048576;
	return q;
}

static void test_format_parse_roundtrip(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_qpinfo a = sample(0x12a), b;
	char line[GC_PROBE_QP_LINE_MAX + 1];
	int n = gc_probe_qp_format(line, sizeof(line), &a);

	assert_true(n > 0);
	assert_string_equal(line, "GCPROBE-QP/1 qpn=0x00012a psn=0x3f2a11 lid=0 mtu=5 "
				  "gid=00112233445566778899aabbccddeeff rkey=0x1234abcd "
				  "addr=0x00007f00deadb000 size=1048576\n");
	assert_int_equal(gc_probe_qp_parse(&b, line, (size_t)n, &err), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(gc_probe_qp_format(line, 40, &a), GC_EINVAL);
}

static void reject(const char *line, int code, const char *msg)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_qpinfo q;

	assert_int_equal(gc_probe_qp_parse(&q, line, strlen(line), &err), code);
	assert_string_equal(err.msg, msg);
}

static void test_parse_rejects(void **state)
{
	char good[GC_PROBE_QP_LINE_MAX + 1], bad[512];
	struct gc_probe_qpinfo q = sample(1);
	struct gc_error err = GC_ERROR_INIT;

	gc_probe_qp_format(good, sizeof(good), &q);
	reject("HELLO\n", GC_EINVAL,
	       "peer is not a gpuclusterctl probe (expected 'GCPROBE-QP/1 ...')");
	reject("GCPROBE-QP/2 qpn=0x000001\n", GC_ENOTSUP,
	       "peer speaks GCPROBE-QP/2, this probe speaks 1: run the same probe version on "
	       "both sides");
	reject("GCPROBE-QP/x qpn=0x000001\n", GC_EINVAL, "peer sent a bad protocol version");
	/* truncated after the gid */
	snprintf(bad, sizeof(bad), "%.*s\n", 75, good);
	reject(bad, GC_EINVAL, "malformed queue-pair line from peer at byte 51");
	/* qpn wider than 24 bits */
	reject("GCPROBE-QP/1 qpn=0x1000000 psn=0x000000 lid=0 mtu=5 gid="
	       "00000000000000000000000000000000 rkey=0x00000000 addr=0x0000000000000000 size=1\n",
	       GC_EINVAL, "malformed queue-pair line from peer at byte 13");
	/* mtu out of range */
	reject("GCPROBE-QP/1 qpn=0x000001 psn=0x000000 lid=0 mtu=6 gid="
	       "00000000000000000000000000000000 rkey=0x00000000 addr=0x0000000000000000 size=1\n",
	       GC_EINVAL, "malformed queue-pair line from peer at byte 45");
	/* size 0 */
	reject("GCPROBE-QP/1 qpn=0x000001 psn=0x000000 lid=0 mtu=5 gid="
	       "00000000000000000000000000000000 rkey=0x00000000 addr=0x0000000000000000 size=0\n",
	       GC_EINVAL, "malformed queue-pair line from peer at byte 134");
	/* non-hex in the gid */
	reject("GCPROBE-QP/1 qpn=0x000001 psn=0x000000 lid=0 mtu=5 gid="
	       "0000000000000000000000000000000g rkey=0x00000000 addr=0x0000000000000000 size=1\n",
	       GC_EINVAL, "malformed queue-pair line from peer at byte 55");
	/* trailing garbage */
	snprintf(bad, sizeof(bad), "%.*s extra=1\n", (int)strlen(good) - 1, good);
	assert_int_equal(gc_probe_qp_parse(&q, bad, strlen(bad), &err), GC_EINVAL);
	/* overlong */
	memset(bad, 'A', sizeof(bad));
	gc_error_clear(&err);
	assert_int_equal(gc_probe_qp_parse(&q, bad, sizeof(bad), &err), GC_EINVAL);
	assert_string_equal(err.msg, "peer line longer than 256 bytes");
	/* embedded NUL */
	memcpy(bad, good, strlen(good));
	bad[20] = '\0';
	gc_error_clear(&err);
	assert_int_equal(gc_probe_qp_parse(&q, bad, strlen(good), &err), GC_EINVAL);
	assert_string_equal(err.msg, "peer line contains a NUL byte");
}

/* The child side: exchange as `ours`, or send `raw` and close. */
static void child(int fd, const struct gc_probe_qpinfo *ours, const char *raw, int sleep_ms)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_qpinfo theirs;
	int rc = 0;

	if (sleep_ms)
		usleep((useconds_t)sleep_ms * 1000);
	if (raw) {
		char line[GC_PROBE_QP_LINE_MAX + 1];
		/* read the other side's line first, as a real peer would */
		gc_probe_line_recv(line, sizeof(line), fd, 2000, &err);
		rc = gc_probe_line_send(fd, raw, &err);
	}
	else if (ours)
		rc = gc_probe_qp_exchange(&theirs, fd, ours, 2000, &err);
	close(fd);
	_exit(rc == 0 ? 0 : 1);
}

static int exchange_with(const char *raw, int sleep_ms, struct gc_probe_qpinfo *got,
			 struct gc_error *err)
{
	struct gc_probe_qpinfo mine = sample(0x111), peer = sample(0x222);
	int sv[2], rc, st;
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		child(sv[1], raw ? NULL : &peer, raw, sleep_ms);
	}
	close(sv[1]);
	rc = gc_probe_qp_exchange(got, sv[0], &mine, 300, err);
	close(sv[0]);
	waitpid(pid, &st, 0);
	return rc;
}

static void test_exchange_socketpair(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_qpinfo got, want = sample(0x222);

	assert_int_equal(exchange_with(NULL, 0, &got, &err), 0);
	assert_memory_equal(&got, &want, sizeof(got));

	gc_error_clear(&err);
	assert_int_equal(exchange_with("SSH-2.0-OpenSSH_9.2\r\n", 0, &got, &err), GC_EINVAL);
	assert_string_equal(err.msg,
			    "peer is not a gpuclusterctl probe (expected 'GCPROBE-QP/1 ...')");
	gc_error_clear(&err);
	assert_int_equal(exchange_with("GCPROBE-QP/1 qpn=0x0", 0, &got, &err), GC_ENET);
	assert_string_equal(err.msg, "peer closed the connection mid-line");
	gc_error_clear(&err);
	assert_int_equal(exchange_with("", 0, &got, &err), GC_ENET);
	assert_string_equal(err.msg, "peer closed the connection");
	gc_error_clear(&err);
	assert_int_equal(exchange_with("GCPROBE-QP/1\n", 1000, &got, &err), GC_ETIMEOUT);
	assert_string_equal(err.msg, "peer sent nothing for 300 ms");
}

static void test_exchange_tcp_loopback(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_qpinfo mine = sample(0x333), peer = sample(0x444), got;
	int lfd = -1, fd = -1, port = 0, st;
	pid_t pid;

	assert_int_equal(gc_probe_tcp_listen(&lfd, 0, &port, &err), 0);
	assert_true(port > 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int cfd;
		close(lfd);
		if (gc_probe_tcp_connect(&cfd, "127.0.0.1", port, 2000, &err) != 0)
			_exit(2);
		child(cfd, &peer, NULL, 0);
	}
	assert_int_equal(gc_probe_tcp_accept(&fd, lfd, 2000, &err), 0);
	assert_int_equal(gc_probe_qp_exchange(&got, fd, &mine, 2000, &err), 0);
	assert_memory_equal(&got, &peer, sizeof(got));
	close(fd);
	close(lfd);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_accept_and_connect_fail_cleanly(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	int lfd = -1, fd = -1, port = 0;

	assert_int_equal(gc_probe_tcp_listen(&lfd, 0, &port, &err), 0);
	assert_int_equal(gc_probe_tcp_accept(&fd, lfd, 100, &err), GC_ETIMEOUT);
	assert_string_equal(err.msg, "no peer connected within 0 s");
	close(lfd);
	gc_error_clear(&err);
	/* the port was just closed: nobody listens there */
	assert_int_equal(gc_probe_tcp_connect(&fd, "127.0.0.1", port, 300, &err), GC_ENET);
	assert_non_null(strstr(err.msg, "cannot connect to 127.0.0.1:"));
	gc_error_clear(&err);
	assert_int_equal(gc_probe_tcp_connect(&fd, "no-such-host.invalid", port, 100, &err),
			 GC_ENET);
	assert_non_null(strstr(err.msg, "cannot resolve 'no-such-host.invalid'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_parse_roundtrip),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_exchange_socketpair),
		cmocka_unit_test(test_exchange_tcp_loopback),
		cmocka_unit_test(test_accept_and_connect_fail_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
