/*
 * mpi_parse.c - reading what the MPI workload printed: nccl-tests' result
 * table, NCCL_DEBUG=INFO's network lines, and the probe's GCPROBE-MPIBW
 * line (mpi.h).  Untrusted text from the guests: (text, len), never read
 * past len, capped, fuzzed (fuzz/fuzz_mpi_nccl.c).
 *
 * nccl-tests (NVIDIA/nccl-tests src/util.cu, older src/common.cu) prints
 *   # <title line: out-of-place / in-place>
 *   #       size   count  type  redop  root  time algbw busbw #wrong  time algbw busbw #wrong
 *   #        (B) (elements)                  (us) (GB/s) (GB/s)       (us) (GB/s) (GB/s)
 *       8388608  2097152  float  sum    -1   231.4 36.24 36.24  0   227.8 36.83 36.83  0
 *   # Out of bounds values : 0 OK
 *   # Avg bus bandwidth    : 30.1 
 * The columns changed over the years (no "root" before 2022; an "error"
 * column holding the largest deviation, `%5.0le`, instead of the "#wrong"
 * count; a "copybw" column for a while in 2024-25; -I adds per-iteration
 * columns, -T a timestamp), so rows are read by the names of the header
 * line above them, not by position; a row before any header is an error.
 * Numbers may be printed as "%.1f", "%.0f" or "%.1e" when wide
 * (getFloatStr), and #wrong as "N/A" with validation off (-c 0): all read.
 * "Avg bus bandwidth" is the mean busbw of every row, both halves (common.cu).
 * `mpirun --tag-output` prefixes lines with "[job,rank]<stdout>:"; stripped.
 *
 * NCCL (NVIDIA/nccl src/init.cc, src/transport/net.cc, net_ib/init.cc,
 * net_socket.cc) logs, under NCCL_DEBUG=INFO:
 *   HOST:PID:TID [DEV] NCCL INFO Using network IB          (or Socket, IBext_v8, ...)
 *   ... NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB ens224:198.18.0.51<0>
 *   ... NCCL INFO NET/IB : No device found.
 *   ... NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0
 *   (older: "Ring 00 : 3[b01000] -> 4[201000] [send] via NET/Socket/0")
 * "NET/Socket : Using ..." alone proves nothing: NCCL initialises the socket
 * transport beside IB and logs it in IB runs too (nccl-tests issue #29 shows
 * both lines in one InfiniBand run).  What counts is the network NCCL chose
 * and the channels it connected; any inter-node channel over Socket is the
 * silent TCP fallback.  Net plugins (e.g. "IBext" from the SHARP/HPC-X
 * plugin) name themselves; names starting with "IB" are NCCL's verbs
 * transport or a verbs plugin.  Tolerance: unknown NCCL lines are ignored;
 * whether a plugin that is not "IB..." is RDMA we cannot tell ("other").
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/lines.h"

#include "mpi.h"

#define TOK_MAX 48  /* columns we look at in a table line */
#define NUM_MAX 63  /* characters of one number */

static bool is_sp(char c)
{
	return c == ' ' || c == '\t';
}

static const char *skip_sp(const char *s, const char *end)
{
	while (s < end && is_sp(*s))
		s++;
	return s;
}

/* Drop mpirun --tag-output's "[1,0]<stdout>:" / "<stderr>:" prefix. */
static void untag(const char **s, size_t *n)
{
	const char *p = *s, *end = *s + *n;
	static const char *const tags[] = {"<stdout>:", "<stderr>:", "<stddiag>:"};
	size_t i;

	if (p >= end || *p != '[')
		return;
	for (p++; p < end && (isdigit((unsigned char)*p) || *p == ','); p++)
		;
	if (p >= end || *p != ']')
		return;
	p++;
	for (i = 0; i < GC_ARRAY_LEN(tags); i++) {
		size_t k = strlen(tags[i]);

		if ((size_t)(end - p) >= k && memcmp(p, tags[i], k) == 0) {
			*s = p + k;
			*n = (size_t)(end - *s);
			return;
		}
	}
}

/* memmem for (s, n) and a C string. */
static const char *find(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit), i;

	if (k == 0 || n < k)
		return NULL;
	for (i = 0; i + k <= n; i++)
		if (s[i] == lit[0] && memcmp(s + i, lit, k) == 0)
			return s + i;
	return NULL;
}

static bool starts(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);

	return n >= k && memcmp(s, lit, k) == 0;
}

/* Copy [s, s+n) trimmed into dst (cap bytes, NUL-terminated, truncated). */
static void copy_trim(char *dst, size_t cap, const char *s, size_t n)
{
	while (n > 0 && is_sp(*s))
		s++, n--;
	while (n > 0 && is_sp(s[n - 1]))
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* ---------------------------------------------------------------- NCCL's network */

enum { SEEN_IB = 1, SEEN_SOCKET = 2, SEEN_OTHER = 4 };

static unsigned classify(const char *name, size_t n)
{
	if (starts(name, n, "IB"))
		return SEEN_IB;
	if (starts(name, n, "Socket"))
		return SEEN_SOCKET;
	return SEEN_OTHER;
}

struct net_scan {
	unsigned chan_seen, net_seen;      /* SEEN_* of channels, of "Using network" */
	char chan_name[32], net_name[32];  /* the deciding names (Socket wins) */
};

static void note_name(char *dst, size_t cap, unsigned *seen, const char *name, size_t n)
{
	unsigned k = classify(name, n);

	/* keep the first name, but let Socket replace it: it is the one to report */
	if (dst[0] == '\0' || (k == SEEN_SOCKET && !(*seen & SEEN_SOCKET)))
		copy_trim(dst, cap, name, n);
	*seen |= k;
}

static void scan_info(struct gc_mpi_net *net, struct net_scan *st, const char *m, size_t n)
{
	const char *via;

	if (starts(m, n, "Using network ")) {
		note_name(st->net_name, sizeof(st->net_name), &st->net_seen, m + 14, n - 14);
	} else if (starts(m, n, "NET/IB : No device found")) {
		net->ib_no_device = true;
	} else if (starts(m, n, "NET/IB : Using") && net->ib_devices[0] == '\0') {
		const char *semi = memchr(m, ';', n);

		copy_trim(net->ib_devices, sizeof(net->ib_devices), m + 14,
			  (semi ? (size_t)(semi - m) : n) - 14);
	} else if ((via = find(m, n, " via NET/")) != NULL) {
		const char *name = via + 9, *end = m + n, *slash;

		slash = memchr(name, '/', (size_t)(end - name));
		note_name(st->chan_name, sizeof(st->chan_name), &st->chan_seen, name,
			  (size_t)((slash ? slash : end) - name));
		net->net_channels++;
	}
}

static void net_finish(struct gc_mpi_net *net, const struct net_scan *st)
{
	/* channels are what was connected; without them, what NCCL chose */
	unsigned seen = st->chan_seen ? st->chan_seen : st->net_seen;
	const char *name = st->chan_seen ? st->chan_name : st->net_name;

	if (seen & SEEN_SOCKET)
		net->transport = GC_MPI_NET_SOCKET;
	else if (seen & SEEN_IB)
		net->transport = GC_MPI_NET_IB;
	else if (seen & SEEN_OTHER)
		net->transport = GC_MPI_NET_OTHER;
	else
		net->transport = GC_MPI_NET_UNKNOWN;
	net->socket_fallback = net->transport == GC_MPI_NET_SOCKET;
	snprintf(net->net_name, sizeof(net->net_name), "%s", name);
}

/* One line: NCCL INFO / NCCL WARN, anything else ignored. */
static void scan_line(struct gc_mpi_net *net, struct net_scan *st, const char *s, size_t n)
{
	const char *m;

	if ((m = find(s, n, "NCCL INFO ")) != NULL) {
		m += 10;
		scan_info(net, st, m, (size_t)(s + n - m));
	} else if ((m = find(s, n, "NCCL WARN ")) != NULL && net->first_warn[0] == '\0') {
		m += 10;
		copy_trim(net->first_warn, sizeof(net->first_warn), m, (size_t)(s + n - m));
	}
}

void gc_mpi_scan_nccl_net(struct gc_mpi_net *out, const char *text, size_t len)
{
	struct gc_lines it = {text, text + len, 0};
	struct net_scan st;
	const char *s;
	size_t n;

	memset(out, 0, sizeof(*out));
	memset(&st, 0, sizeof(st));
	if (len > GC_MPI_TEXT_MAX)
		it.end = text + GC_MPI_TEXT_MAX;
	while (gc_lines_next(&it, &s, &n)) {
		untag(&s, &n);
		scan_line(out, &st, s, n);
	}
	net_finish(out, &st);
}

const char *gc_mpi_transport_name(enum gc_mpi_transport t)
{
	switch (t) {
	case GC_MPI_NET_UNKNOWN: return "unknown";
	case GC_MPI_NET_IB: return "IB";
	case GC_MPI_NET_SOCKET: return "Socket";
	case GC_MPI_NET_OTHER: return "other";
	}
	return "unknown";
}

/* ---------------------------------------------------------------- nccl-tests table */

struct tok {
	const char *s;
	size_t n;
};

/* Split on blanks; returns the count (at most max, the rest dropped). */
static size_t split(struct tok *t, size_t max, const char *s, size_t n)
{
	const char *p = s, *end = s + n;
	size_t k = 0;

	for (;;) {
		const char *b;

		p = skip_sp(p, end);
		if (p >= end || k == max)
			return k;
		b = p;
		while (p < end && !is_sp(*p))
			p++;
		t[k].s = b;
		t[k].n = (size_t)(p - b);
		k++;
	}
}

static bool tok_eq(const struct tok *t, const char *lit)
{
	return t->n == strlen(lit) && memcmp(t->s, lit, t->n) == 0;
}

static bool all_digits(const struct tok *t)
{
	size_t i;

	if (t->n == 0 || t->n > 20)
		return false;
	for (i = 0; i < t->n; i++)
		if (!isdigit((unsigned char)t->s[i]))
			return false;
	return true;
}

/* A finite number >= 0 ("36.24", "1.2e+03", "0e+00"). */
static bool tok_double(const struct tok *t, double *v)
{
	char buf[NUM_MAX + 1], *end;

	if (t->n == 0 || t->n > NUM_MAX)
		return false;
	memcpy(buf, t->s, t->n);
	buf[t->n] = '\0';
	if (!(isdigit((unsigned char)buf[0]) || buf[0] == '.'))
		return false;
	*v = strtod(buf, &end);
	return *end == '\0' && isfinite(*v) && *v >= 0;
}

static bool tok_u64(const struct tok *t, uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	if (!all_digits(t))
		return false;
	for (i = 0; i < t->n; i++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(t->s[i] - '0');
	}
	*v = x;
	return true;
}

/* Where the header put the columns we read. */
struct layout {
	bool have;
	size_t size, busbw[2], wrong[2];
	size_t nbusbw, nwrong;
	bool wrong_is_count; /* "#wrong"; "error" (older) is a deviation, not a count */
	size_t need;         /* columns a row must have */
};

/* "#  size count type redop root time algbw busbw #wrong time ..." */
static bool read_header(struct layout *lo, const char *s, size_t n)
{
	struct tok t[TOK_MAX];
	struct layout l;
	size_t k, i;

	memset(&l, 0, sizeof(l));
	k = split(t, TOK_MAX, s + 1, n - 1); /* after '#' */
	if (k < 4 || !tok_eq(&t[0], "size"))
		return false;
	for (i = 1; i < k; i++) {
		if (tok_eq(&t[i], "busbw") && l.nbusbw < 2)
			l.busbw[l.nbusbw++] = i;
		else if ((tok_eq(&t[i], "#wrong") || tok_eq(&t[i], "error")) && l.nwrong < 2) {
			l.wrong_is_count = tok_eq(&t[i], "#wrong");
			l.wrong[l.nwrong++] = i;
		}
	}
	if (l.nbusbw == 0)
		return false;
	l.have = true;
	l.size = 0;
	l.need = l.busbw[l.nbusbw - 1] + 1;
	if (l.nwrong > 0 && l.wrong[l.nwrong - 1] + 1 > l.need)
		l.need = l.wrong[l.nwrong - 1] + 1;
	*lo = l;
	return true;
}

static int bad(struct gc_error *err, int line, const char *msg)
{
	return gc_error_set(err, GC_EINVAL, "nccl-tests:%d: %s", line, msg);
}

static int read_row(struct gc_mpi_nccl *r, const struct layout *lo, const struct tok *t, size_t k,
		    int line, struct gc_error *err)
{
	uint64_t size;
	double bw = 0, v;
	size_t i;

	if (!lo->have)
		return bad(err, line, "a result row before the table header");
	if (k < lo->need) {
		gc_error_set(err, GC_EINVAL, "nccl-tests:%d: a result row of %zu columns, the header "
					     "names %zu (truncated?)",
			     line, k, lo->need);
		return GC_EINVAL;
	}
	if (!tok_u64(&t[lo->size], &size))
		return bad(err, line, "size is not a number");
	for (i = 0; i < lo->nbusbw; i++) {
		if (!tok_double(&t[lo->busbw[i]], &v))
			return bad(err, line, "busbw is not a number");
		if (v > bw)
			bw = v;
	}
	for (i = 0; i < lo->nwrong && lo->wrong_is_count; i++) {
		if (tok_eq(&t[lo->wrong[i]], "N/A")) {
			r->wrong_checked = false;
			continue;
		}
		if (!tok_double(&t[lo->wrong[i]], &v) || v > 1e18)
			return bad(err, line, "#wrong is not a count");
		r->wrong += (uint64_t)v;
	}
	if (!lo->wrong_is_count)
		r->wrong_checked = false;
	if (r->rows == 0 || size >= r->max_bytes) {
		r->max_bytes = size;
		r->max_busbw_gbs = bw;
	}
	r->rows++;
	return 0;
}

/* "# Avg bus bandwidth    : 30.1 OK" -> the number after ':' */
static int read_footer_num(const char *s, size_t n, double *v)
{
	const char *c = memchr(s, ':', n);
	struct tok t;

	if (c == NULL || split(&t, 1, c + 1, (size_t)(s + n - c - 1)) != 1)
		return -1;
	return tok_double(&t, v) ? 0 : -1;
}

static int table_line(struct gc_mpi_nccl *r, struct layout *lo, bool *avg_seen, const char *s,
		      size_t n, int line, struct gc_error *err)
{
	struct tok t[TOK_MAX];
	const char *p = skip_sp(s, s + n);
	size_t k;
	double v;

	n -= (size_t)(p - s);
	s = p;
	if (n > 0 && s[0] == '#') {
		struct tok h[2];
		size_t hk = split(h, 2, s + 1, n - 1);

		if (hk >= 1 && tok_eq(&h[0], "size")) {
			if (!read_header(lo, s, n))
				return bad(err, line, "a table header without a busbw column");
		} else if (hk == 2 && tok_eq(&h[0], "Avg") && tok_eq(&h[1], "bus")) {
			if (read_footer_num(s, n, &v) != 0)
				return bad(err, line, "'Avg bus bandwidth' is not a number");
			r->avg_busbw_gbs = v;
			*avg_seen = true;
		} else if (hk == 2 && tok_eq(&h[0], "Out") && tok_eq(&h[1], "of")) {
			if (read_footer_num(s, n, &v) != 0 || v > 1e15)
				return bad(err, line, "'Out of bounds values' is not a count");
			r->oob_values = (long)v;
		}
		return 0;
	}
	k = split(t, TOK_MAX, s, n);
	/* a result row starts with two integers: size and count */
	if (k < 2 || !all_digits(&t[0]) || !all_digits(&t[1]))
		return 0;
	return read_row(r, lo, t, k, line, err);
}

int gc_mpi_parse_nccl(struct gc_mpi_result *out, const char *text, size_t len,
		      struct gc_error *err)
{
	struct gc_lines it = {text, text + len, 0};
	struct gc_mpi_result r;
	struct layout lo;
	struct net_scan st;
	bool avg_seen = false;
	const char *s;
	size_t n;
	int rc;

	if (len > GC_MPI_TEXT_MAX)
		return gc_error_set(err, GC_ENOMEM, "nccl-tests: output over %u MiB",
				    GC_MPI_TEXT_MAX >> 20);
	memset(&r, 0, sizeof(r));
	memset(&lo, 0, sizeof(lo));
	memset(&st, 0, sizeof(st));
	r.kind = GC_MPI_RESULT_NCCL;
	r.nccl.oob_values = -1;
	r.nccl.wrong_checked = true;
	while (gc_lines_next(&it, &s, &n)) {
		untag(&s, &n);
		if (find(s, n, " NCCL ") != NULL || starts(s, n, "NCCL ")) {
			scan_line(&r.net, &st, s, n);
			continue;
		}
		rc = table_line(&r.nccl, &lo, &avg_seen, s, n, it.no, err);
		if (rc != 0)
			return rc;
	}
	if (it.no == 0)
		it.no = 1;
	if (r.nccl.rows == 0)
		return bad(err, it.no, "no result rows (did the test run? its output ends here)");
	if (!avg_seen)
		return bad(err, it.no,
			   "the output ends before '# Avg bus bandwidth' (truncated run?)");
	net_finish(&r.net, &st);
	*out = r;
	return 0;
}

/* ---------------------------------------------------------------- the probe's line */

#define MPIBW_TAG "GCPROBE-MPIBW"

static int mpibw_line(struct gc_mpi_bw *bw, const char *s, size_t n, int line,
		      struct gc_error *err)
{
	static const char *const keys[] = {"ranks",         "pairs", "pair_min_gbs",
					   "pair_max_gbs",  "allreduce_gbs", "bytes",
					   "allreduce_bytes", "iters", "data"};
	struct tok t[32];
	unsigned found = 0;
	size_t k, i, j;

	k = split(t, GC_ARRAY_LEN(t), s, n);
	for (i = 1; i < k; i++) {
		const char *eq = memchr(t[i].s, '=', t[i].n);
		struct tok v;
		uint64_t u = 0;
		double d = 0;

		if (eq == NULL)
			return gc_error_set(err, GC_EINVAL, "gcprobe:%d: '%.*s' is not KEY=VALUE",
					    line, (int)(t[i].n > 40 ? 40 : t[i].n), t[i].s);
		v.s = eq + 1;
		v.n = t[i].n - (size_t)(v.s - t[i].s);
		for (j = 0; j < GC_ARRAY_LEN(keys); j++)
			if ((size_t)(eq - t[i].s) == strlen(keys[j]) &&
			    memcmp(t[i].s, keys[j], strlen(keys[j])) == 0)
				break;
		if (j == GC_ARRAY_LEN(keys))
			continue; /* a key of a newer probe */
		if (j == 8) {
			if (!tok_eq(&v, "ok") && !tok_eq(&v, "bad"))
				return gc_error_set(err, GC_EINVAL,
						    "gcprobe:%d: data is neither ok nor bad", line);
			bw->data_ok = tok_eq(&v, "ok");
		} else if (j >= 2 && j <= 4 ? !tok_double(&v, &d)
					    : !tok_u64(&v, &u) ||
						      ((j <= 1 || j == 7) && u > UINT32_MAX)) {
			return gc_error_set(err, GC_EINVAL, "gcprobe:%d: %s is not a number", line,
					    keys[j]);
		}
		switch (j) {
		case 0: bw->ranks = (unsigned)u; break;
		case 1: bw->pairs = (unsigned)u; break;
		case 2: bw->pair_min_gbs = d; break;
		case 3: bw->pair_max_gbs = d; break;
		case 4: bw->allreduce_gbs = d; break;
		case 5: bw->bytes = u; break;
		case 6: bw->allreduce_bytes = u; break;
		case 7: bw->iters = (unsigned)u; break;
		default: break;
		}
		found |= 1u << j;
	}
	for (j = 0; j < GC_ARRAY_LEN(keys); j++)
		if (!(found & (1u << j)))
			return gc_error_set(err, GC_EINVAL, "gcprobe:%d: no %s=", line, keys[j]);
	return 0;
}

/* The line's start (untagged, blanks skipped) when it is the probe's. */
static bool is_mpibw(const char **s, size_t *n)
{
	const char *p;

	untag(s, n);
	p = skip_sp(*s, *s + *n);
	*n -= (size_t)(p - *s);
	*s = p;
	return starts(*s, *n, MPIBW_TAG " ");
}

int gc_mpi_parse_mpibw(struct gc_mpi_result *out, const char *text, size_t len,
		       struct gc_error *err)
{
	struct gc_lines it = {text, text + len, 0};
	struct gc_mpi_result r;
	const char *s;
	size_t n;
	int rc;

	if (len > GC_MPI_TEXT_MAX)
		return gc_error_set(err, GC_ENOMEM, "gcprobe: output over %u MiB",
				    GC_MPI_TEXT_MAX >> 20);
	memset(&r, 0, sizeof(r));
	r.kind = GC_MPI_RESULT_MPIBW;
	while (gc_lines_next(&it, &s, &n)) {
		if (!is_mpibw(&s, &n))
			continue;
		rc = mpibw_line(&r.bw, s, n, it.no, err);
		if (rc != 0)
			return rc;
		gc_mpi_scan_nccl_net(&r.net, text, len);
		*out = r;
		return 0;
	}
	return gc_error_set(err, GC_EINVAL,
			    "gcprobe:%d: no " MPIBW_TAG " line (did the MPI bandwidth test run?)",
			    it.no);
}

int gc_mpi_parse_output(struct gc_mpi_result *out, const char *text, size_t len,
			struct gc_error *err)
{
	struct gc_lines it = {text, text + len, 0};
	const char *s;
	size_t n;

	if (len <= GC_MPI_TEXT_MAX)
		while (gc_lines_next(&it, &s, &n))
			if (is_mpibw(&s, &n))
				return gc_mpi_parse_mpibw(out, text, len, err);
	return gc_mpi_parse_nccl(out, text, len, err);
}
