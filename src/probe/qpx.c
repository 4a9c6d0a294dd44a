/*
 * qpx.c - the TCP side channel of the RDMA test: queue-pair details are
 * exchanged as one text line each way, then short control lines.
 *
 *   GCPROBE-QP/1 qpn=0x00012a psn=0x3f2a11 lid=0 mtu=5 gid=<32 hex> \
 *       rkey=0x00001234 addr=0x00007f0000000000 size=1048576\n
 *
 * The version number comes first so that a newer peer is told apart from
 * garbage ("peer speaks GCPROBE-QP/2").  Every field is required, in this
 * order, with fixed widths where the wire format has them; lines are capped
 * at GC_PROBE_QP_LINE_MAX; reads have a deadline so a silent peer cannot
 * hang the probe.  Peer input is never trusted: qpn/psn are 24-bit, mtu is
 * an ibv_mtu 1..5, size non-zero.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "probe_int.h"

int gc_probe_qp_format(char *buf, size_t cap, const struct gc_probe_qpinfo *qi)
{
	char gid[33];
	int i, n;

	for (i = 0; i < 16; i++)
		snprintf(gid + 2 * i, 3, "%02x", qi->gid[i]);
	n = snprintf(buf, cap,
		     "GCPROBE-QP/%d qpn=0x%06x psn=0x%06x lid=%u mtu=%d gid=%s rkey=0x%08x "
		     "addr=0x%016llx size=%llu\n",
		     GC_PROBE_QP_VERSION, (unsigned)(qi->qpn & 0xffffff),
		     (unsigned)(qi->psn & 0xffffff), (unsigned)qi->lid, qi->mtu, gid,
		     (unsigned)qi->rkey, (unsigned long long)qi->addr,
		     (unsigned long long)qi->size);
	if (n < 0 || (size_t)n >= cap || n >= GC_PROBE_QP_LINE_MAX)
		return GC_EINVAL;
	return n;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parse "name=VALUE" at *p: hex (with 0x) or decimal; advances past one space. */
static bool field(const char **p, const char *end, const char *name, bool hex, int digits,
		  uint64_t max, uint64_t *v)
{
	size_t nl = strlen(name);
	const char *s = *p;
	uint64_t x = 0;
	int nd = 0;

	if ((size_t)(end - s) < nl + 1 || memcmp(s, name, nl) != 0 || s[nl] != '=')
		return false;
	s += nl + 1;
	if (hex) {
		if (end - s < 2 || s[0] != '0' || s[1] != 'x')
			return false;
		s += 2;
		while (s < end && hexval(*s) >= 0 && nd < 16)
			x = x * 16 + (uint64_t)hexval(*s++), nd++;
		if (digits && nd != digits)
			return false;
	} else {
		while (s < end && *s >= '0' && *s <= '9' && nd < 20) {
			uint64_t d = (uint64_t)(*s++ - '0');
			if (x > (UINT64_MAX - d) / 10)
				return false;
			x = x * 10 + d;
			nd++;
		}
	}
	if (nd == 0 || x > max)
		return false;
	if (s < end && *s != ' ')
		return false;
	if (s < end)
		s++;
	*p = s;
	*v = x;
	return true;
}

int gc_probe_qp_parse(struct gc_probe_qpinfo *out, const char *line, size_t len,
		      struct gc_error *err)
{
	const char *p = line, *end;
	struct gc_probe_qpinfo qi;
	uint64_t v;
	long ver;
	int i;

	memset(&qi, 0, sizeof(qi));
	if (len > GC_PROBE_QP_LINE_MAX)
		return gc_error_set(err, GC_EINVAL, "peer line longer than %d bytes",
				    GC_PROBE_QP_LINE_MAX);
	end = line + len;
	if (end > p && end[-1] == '\n')
		end--;
	if (memchr(line, '\0', (size_t)(end - line)))
		return gc_error_set(err, GC_EINVAL, "peer line contains a NUL byte");
	if ((size_t)(end - p) < 12 || memcmp(p, "GCPROBE-QP/", 11) != 0)
		return gc_error_set(err, GC_EINVAL, "peer is not a gpuclusterctl probe "
				    "(expected 'GCPROBE-QP/%d ...')", GC_PROBE_QP_VERSION);
	p += 11;
	{
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		size_t vn = sp ? (size_t)(sp - p) : (size_t)(end - p);
		if (!pb_parse_long(p, vn, &ver))
			return gc_error_set(err, GC_EINVAL, "peer sent a bad protocol version");
		if (ver != GC_PROBE_QP_VERSION)
			return gc_error_set(err, GC_ENOTSUP,
					    "peer speaks GCPROBE-QP/%ld, this probe speaks %d: "
					    "run the same probe version on both sides",
					    ver, GC_PROBE_QP_VERSION);
		p += vn;
		if (p < end)
			p++;
	}
	if (!field(&p, end, "qpn", true, 6, 0xffffff, &v))
		goto bad;
	qi.qpn = (uint32_t)v;
	if (!field(&p, end, "psn", true, 6, 0xffffff, &v))
		goto bad;
	qi.psn = (uint32_t)v;
	if (!field(&p, end, "lid", false, 0, 0xffff, &v))
		goto bad;
	qi.lid = (uint16_t)v;
	if (!field(&p, end, "mtu", false, 0, 5, &v) || v < 1)
		goto bad;
	qi.mtu = (int)v;
	if ((size_t)(end - p) < 4 + 32 || memcmp(p, "gid=", 4) != 0)
		goto bad;
	p += 4;
	for (i = 0; i < 16; i++) {
		int hi = hexval(p[2 * i]), lo = hexval(p[2 * i + 1]);
		if (hi < 0 || lo < 0)
			goto bad;
		qi.gid[i] = (uint8_t)(hi * 16 + lo);
	}
	p += 32;
	if (p >= end || *p != ' ')
		goto bad;
	p++;
	if (!field(&p, end, "rkey", true, 8, 0xffffffffu, &v))
		goto bad;
	qi.rkey = (uint32_t)v;
	if (!field(&p, end, "addr", true, 16, UINT64_MAX, &v))
		goto bad;
	qi.addr = v;
	if (!field(&p, end, "size", false, 0, UINT64_MAX, &v) || v == 0)
		goto bad;
	qi.size = v;
	if (p != end)
		goto bad;
	*out = qi;
	return 0;
bad:
	return gc_error_set(err, GC_EINVAL, "malformed queue-pair line from peer at byte %zu",
			    (size_t)(p - line));
}

int gc_probe_line_send(int fd, const char *line, struct gc_error *err)
{
	size_t n = strlen(line), off = 0;

	while (off < n) {
		ssize_t w = send(fd, line + off, n - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return gc_error_set_errno(err, GC_ENET, errno, "send to peer");
		off += (size_t)w;
	}
	return 0;
}

/* Reads byte by byte up to '\n' so nothing after the line is consumed. */
int gc_probe_line_recv(char *buf, size_t cap, int fd, int timeout_ms, struct gc_error *err)
{
	uint64_t deadline = pb_now_ns() + (uint64_t)timeout_ms * 1000000u;
	size_t n = 0;

	if (cap < 2)
		return gc_error_set(err, GC_EINVAL, "line buffer too small");
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		uint64_t now = pb_now_ns();
		ssize_t r;
		char c;
		int pr;

		if (now >= deadline)
			return gc_error_set(err, GC_ETIMEOUT, "peer sent nothing for %d ms",
					    timeout_ms);
		pr = poll(&p, 1, (int)((deadline - now) / 1000000u) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			continue;
		if (pr < 0)
			return gc_error_set_errno(err, GC_ENET, errno, "poll");
		r = recv(fd, &c, 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return gc_error_set_errno(err, GC_ENET, errno, "recv from peer");
		if (r == 0)
			return gc_error_set(err, GC_ENET, "peer closed the connection%s",
					    n ? " mid-line" : "");
		if (n + 1 >= cap)
			return gc_error_set(err, GC_EINVAL, "peer line longer than %zu bytes",
					    cap - 1);
		buf[n++] = c;
		if (c == '\n')
			break;
	}
	buf[n] = '\0';
	return (int)n;
}

int gc_probe_qp_exchange(struct gc_probe_qpinfo *theirs, int fd,
			 const struct gc_probe_qpinfo *ours, int timeout_ms, struct gc_error *err)
{
	char line[GC_PROBE_QP_LINE_MAX + 1];
	int n;

	if (gc_probe_qp_format(line, sizeof(line), ours) < 0)
		return gc_error_set(err, GC_EINVAL, "queue-pair line does not fit");
	if (gc_probe_line_send(fd, line, err) != 0)
		return err ? err->code : GC_ENET;
	n = gc_probe_line_recv(line, sizeof(line), fd, timeout_ms, err);
	if (n < 0)
		return n;
	return gc_probe_qp_parse(theirs, line, (size_t)n, err);
}

int gc_probe_tcp_listen(int *fd, int port, int *bound, struct gc_error *err)
{
	struct sockaddr_in6 a6;
	struct sockaddr_in a4;
	socklen_t alen;
	int one = 1, zero = 0, s;

	s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		memset(&a6, 0, sizeof(a6));
		a6.sin6_family = AF_INET6;
		a6.sin6_addr = in6addr_any;
		a6.sin6_port = htons((uint16_t)port);
		if (bind(s, (struct sockaddr *)&a6, sizeof(a6)) != 0) {
			close(s);
			s = -1;
		}
	}
	if (s < 0) { /* no IPv6 in this guest */
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			return gc_error_set_errno(err, GC_EIO, errno, "socket");
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		memset(&a4, 0, sizeof(a4));
		a4.sin_family = AF_INET;
		a4.sin_addr.s_addr = htonl(INADDR_ANY);
		a4.sin_port = htons((uint16_t)port);
		if (bind(s, (struct sockaddr *)&a4, sizeof(a4)) != 0) {
			int e = errno;
			close(s);
			return gc_error_set_errno(err, GC_EIO, e, "bind TCP port %d", port);
		}
	}
	if (listen(s, 1) != 0) {
		int e = errno;
		close(s);
		return gc_error_set_errno(err, GC_EIO, e, "listen");
	}
	if (bound) {
		struct sockaddr_storage ss;
		alen = sizeof(ss);
		if (getsockname(s, (struct sockaddr *)&ss, &alen) == 0)
			*bound = ss.ss_family == AF_INET6
					 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
					 : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	*fd = s;
	return 0;
}

int gc_probe_tcp_accept(int *fd, int lfd, int timeout_ms, struct gc_error *err)
{
	struct pollfd p = {lfd, POLLIN, 0};
	int pr, s, one = 1;

	do
		pr = poll(&p, 1, timeout_ms);
	while (pr < 0 && errno == EINTR);
	if (pr == 0)
		return gc_error_set(err, GC_ETIMEOUT, "no peer connected within %d s",
				    timeout_ms / 1000);
	if (pr < 0)
		return gc_error_set_errno(err, GC_EIO, errno, "poll");
	s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0)
		return gc_error_set_errno(err, GC_ENET, errno, "accept");
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fd = s;
	return 0;
}

int gc_probe_tcp_connect(int *fd, const char *host, int port, int timeout_ms,
			 struct gc_error *err)
{
	struct addrinfo hints, *res = NULL, *ai;
	char ps[16];
	int rc, s = -1, one = 1, e = 0;
	uint64_t deadline = pb_now_ns() + (uint64_t)timeout_ms * 1000000u;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	snprintf(ps, sizeof(ps), "%d", port);
	rc = getaddrinfo(host, ps, &hints, &res);
	if (rc != 0)
		return gc_error_set(err, GC_ENET, "cannot resolve '%s': %s", host,
				    gai_strerror(rc));
	/* the server may start a moment later: retry until the deadline */
	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
			if (s < 0)
				continue;
			if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0)
				break;
			e = errno;
			close(s);
			s = -1;
		}
		if (s >= 0 || pb_now_ns() >= deadline)
			break;
		usleep(200000);
	}
	freeaddrinfo(res);
	if (s < 0)
		return gc_error_set_errno(err, GC_ENET, e, "cannot connect to %s:%d", host,
					  port);
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fd = s;
	return 0;
}
