/*
 * simc - the lab sshd's ForceCommand: hand this SSH session to the lab's
 * simulator server (tests/sim/simd.py), or run the Python dispatcher.
 *
 * scripts/lab.sh builds it into $lab/bin/simc.  It connects to
 * $GC_LAB_DIR/simd/sock and sends "GCSIM1", a 4-byte big-endian length and
 * that many bytes (our pid, umask in octal, cwd, then every NAME=VALUE of
 * the environment, each ended by a NUL), with stdin, stdout and stderr
 * attached (SCM_RIGHTS).  The server forks the session onto those
 * descriptors and answers "x N" (exit N) or "s N" (killed by signal N),
 * which this process reproduces, so sshd reports what the session did, or
 * "d" when the session dropped its connection (simlab.drop_session, which
 * has killed this process's sshd by then).
 *
 * It execs the Python dispatcher ($GC_SIM_DIR/dispatch), exactly the former
 * ForceCommand, when stdin is a terminal (a PTY session wants a process of
 * its own), or when the server is not there or refuses the request before
 * it has the session.
 *
 * It is also the lab user's login shell where scripts/lab.sh runs as root
 * (installed as /usr/local/libexec/gclab/simc): sshd runs every session as
 * `SHELL -c COMMAND`, COMMAND being the ForceCommand `exec $lab/bin/simc`,
 * and /bin/sh there did nothing but exec simc; as that shell simc does the
 * session itself, one exec a session less of the lab sshd's CPU.  Any other
 * command line goes to /bin/sh unchanged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

static void fallback(void)
{
	const char *dir = getenv("GC_SIM_DIR");
	char path[PATH_MAX];

	if (!dir || snprintf(path, sizeof path, "%s/dispatch", dir) >= (int)sizeof path) {
		fputs("gclab: GC_SIM_DIR is not set (is this the lab sshd?)\n", stderr);
		_exit(255);
	}
	execl("/usr/bin/python3", "/usr/bin/python3", "-IS", path, (char *)NULL);
	fprintf(stderr, "gclab: cannot run %s: %s\n", path, strerror(errno));
	_exit(255);
}

struct buf {
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->cap ? b->cap * 2 : 4096);
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			fallback();
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len++] = '\0';
}

/* `exec /ABSOLUTE/PATH/simc`, nothing else: the lab's ForceCommand. */
static int is_simc_command(const char *cmd)
{
	const char *path = cmd + 5, *base;

	if (strncmp(cmd, "exec /", 6) != 0 || strpbrk(path, " \t\n'\"\\$`;&|<>()*?[]~#=%{}"))
		return 0;
	base = strrchr(path, '/') + 1;
	return strcmp(base, "simc") == 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !(argc == 3 && strcmp(argv[1], "-c") == 0 && is_simc_command(argv[2]))) {
		/* run as a login shell for something else: be /bin/sh */
		argv[0] = "sh";
		execv("/bin/sh", argv);
		fprintf(stderr, "gclab: cannot run /bin/sh: %s\n", strerror(errno));
		_exit(127);
	}

	const char *lab = getenv("GC_LAB_DIR");
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct buf body = { 0 };
	char num[32], cwd[PATH_MAX];
	int fd;

	if (!lab || isatty(0))
		fallback();
	if (snprintf(addr.sun_path, sizeof addr.sun_path, "%s/simd/sock", lab) >=
	    (int)sizeof addr.sun_path)
		fallback();
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
		fallback();

	mode_t mask = umask(0);
	umask(mask);
	snprintf(num, sizeof num, "%ld", (long)getpid());
	put(&body, num, strlen(num));
	snprintf(num, sizeof num, "%o", (unsigned)mask);
	put(&body, num, strlen(num));
	if (!getcwd(cwd, sizeof cwd))
		strcpy(cwd, "/");
	put(&body, cwd, strlen(cwd));
	for (char **e = environ; *e; e++)
		put(&body, *e, strlen(*e));

	/* magic + length + the first bytes of the body, the descriptors with them */
	char head[10];
	uint32_t n = (uint32_t)body.len;
	memcpy(head, "GCSIM1", 6);
	head[6] = (char)(n >> 24);
	head[7] = (char)(n >> 16);
	head[8] = (char)(n >> 8);
	head[9] = (char)n;
	struct iovec iov[2] = { { head, sizeof head }, { body.p, body.len } };
	int fds[3] = { 0, 1, 2 };
	union {
		char buf[CMSG_SPACE(sizeof fds)];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2,
			      .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof fds);
	memcpy(CMSG_DATA(c), fds, sizeof fds);

	ssize_t sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
	if (sent <= 0)
		fallback(); /* nothing reached the server: the session is still ours */
	size_t total = sizeof head + body.len;
	size_t done = (size_t)sent;
	while (done < total) {
		/* the rest of the body, without descriptors */
		size_t off = done - sizeof head; /* sent covers the head first */
		if (done < sizeof head) {
			ssize_t w = send(fd, head + done, sizeof head - done, MSG_NOSIGNAL);
			if (w <= 0)
				_exit(255);
			done += (size_t)w;
			continue;
		}
		ssize_t w = send(fd, body.p + off, body.len - off, MSG_NOSIGNAL);
		if (w <= 0)
			_exit(255);
		done += (size_t)w;
	}
	/* The session now belongs to the server's child. */
	char reply[64];
	size_t got = 0;
	for (;;) {
		ssize_t r = read(fd, reply + got, sizeof reply - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == sizeof reply - 1)
			break;
	}
	reply[got] = '\0';
	int v;
	if (strcmp(reply, "d\n") == 0) /* dropped: the server killed our sshd already */
		_exit(255);
	if (sscanf(reply, "x %d", &v) == 1)
		_exit(v & 0xFF);
	if (sscanf(reply, "s %d", &v) == 1 && v > 0 && v < NSIG) {
		signal(v, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, v);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(v);
		_exit(128 + v);
	}
	fputs("gclab: the lab's simulator server ended this session without a status\n", stderr);
	_exit(255);
}
