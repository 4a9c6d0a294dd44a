/*
 * downgate.c - the lab sshd's accept(), preloaded (scripts/lab.sh start): a
 * simulated host that is rebooting takes no new connection.
 *
 * One sshd answers for every simulated host (docs/lab.md), so a host that
 * reboots cannot close a port of its own.  Before this, a connection to it
 * went through the whole SSH handshake and login, and only the session
 * (tests/sim/esxi_sim.py refuse_if_down) dropped it: every reboot poll cost
 * the lab a forked sshd, a key exchange and a password check, and the
 * apply bench's 64 hosts polling every 100 ms made that most of the lab's
 * CPU.  A real host is not there while it reboots: its address refuses the
 * connection or does not answer.
 *
 * The simulator writes $GC_LAB_DOWN_DIR/ADDRESS (the dialled IPv4 address)
 * holding the Unix time in milliseconds until which that host is down
 * (esxi_sim.apply_reboot).  Here, each accepted connection whose local
 * address has such a file with a time still to come is reset at once
 * (SO_LINGER 0, so the close sends a TCP RST, before sshd's banner) and
 * accept() reports ECONNABORTED, which sshd's accept loop passes over
 * without a word.  The client sees its connection reset before any byte:
 * the nearest a listener shared with live hosts can come to a refused
 * connect.  No file, an unreadable one, or a time gone: sshd gets the
 * connection as ever.
 *
 * listen() too: sshd asks for an accept queue of 128 connections
 * (SSH_LISTEN_BACKLOG in OpenSSH's sshd.c), which is one real host's.  Here
 * one listener stands for every simulated host, so 256 hosts dialled at once
 * (bench/apply_bench.py) overflowed it: the kernel dropped the handshakes
 * past 128 (TcpExtListenOverflows) and each of those clients waited a
 * retransmission, about a second, for a queue that 256 separate hosts would
 * not have had.  The lab's listener asks for 4096, which the kernel caps at
 * net.core.somaxconn.
 *
 * bind() too, when GC_LAB_REUSEPORT is 1: a TCP socket gets SO_REUSEPORT
 * before it binds, so that several lab sshd listeners share the port and
 * the kernel spreads the connections over them (scripts/lab.sh starts one
 * per CPU).  One listener accepted and forked every connection of every
 * simulated host in turn, about 0.6 ms of its CPU each on the project's
 * 2-core machine: 256 hosts dialled at once queued behind it on any number
 * of cores, where 256 real hosts each have a listener of their own.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LAB_BACKLOG 4096

static char down_dir[3072];
static int reuseport;

__attribute__((constructor)) static void downgate_init(void)
{
	const char *d = getenv("GC_LAB_DOWN_DIR");
	const char *r = getenv("GC_LAB_REUSEPORT");

	reuseport = r != NULL && r[0] == '1' && r[1] == '\0';

	if (d != NULL && d[0] == '/' && snprintf(down_dir, sizeof(down_dir), "%s", d) >= (int)sizeof(down_dir))
		down_dir[0] = '\0';
}

/* Is the host at this connection's local address down now? */
static int host_down(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	char ip[INET_ADDRSTRLEN], path[sizeof(down_dir) + INET_ADDRSTRLEN + 2], buf[32];
	struct timespec now;
	long long until;
	ssize_t n;
	int f, saved = errno;

	if (down_dir[0] == '\0' || getsockname(fd, (struct sockaddr *)&a, &len) != 0 ||
	    a.sin_family != AF_INET || inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip)) == NULL)
		goto up;
	snprintf(path, sizeof(path), "%s/%s", down_dir, ip);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		goto up;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		goto up;
	buf[n] = '\0';
	until = strtoll(buf, NULL, 10);
	clock_gettime(CLOCK_REALTIME, &now);
	errno = saved;
	return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 < until;
up:
	errno = saved;
	return 0;
}

static int reset(int fd)
{
	struct linger lg = {1, 0};

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	errno = ECONNABORTED;
	return -1;
}

int bind(int s, const struct sockaddr *addr, socklen_t len)
{
	static int (*real)(int, const struct sockaddr *, socklen_t);
	int type, one = 1, saved = errno;
	socklen_t tlen = sizeof(type);

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "bind");
	if (real == NULL) {
		errno = ENOSYS;
		return -1;
	}
	if (reuseport && addr != NULL && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6) &&
	    getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &tlen) == 0 && type == SOCK_STREAM)
		(void)setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	errno = saved;
	return real(s, addr, len);
}

int listen(int s, int backlog)
{
	static int (*real)(int, int);

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "listen");
	if (real == NULL) {
		errno = ENOSYS;
		return -1;
	}
	return real(s, backlog < LAB_BACKLOG ? LAB_BACKLOG : backlog);
}

int accept(int s, struct sockaddr *addr, socklen_t *len)
{
	static int (*real)(int, struct sockaddr *, socklen_t *);
	int fd;

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "accept");
	if (real == NULL) {
		errno = ENOSYS;
		return -1;
	}
	fd = real(s, addr, len);
	return fd >= 0 && host_down(fd) ? reset(fd) : fd;
}

int accept4(int s, struct sockaddr *addr, socklen_t *len, int flags)
{
	static int (*real)(int, struct sockaddr *, socklen_t *, int);
	int fd;

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "accept4");
	if (real == NULL) {
		errno = ENOSYS;
		return -1;
	}
	fd = real(s, addr, len, flags);
	return fd >= 0 && host_down(fd) ? reset(fd) : fd;
}
