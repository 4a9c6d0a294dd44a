/*
 * report.c - the report of `gpuclusterctl validate`: its list of checks and
 * the three ways it is written (a table, JSON, JUnit XML).
 *
 * Checks stay flat, in the order they were added.  Each renderer first
 * groups them by target - a (kind, name) pair: "vm node1" and "guest node1"
 * are two - in order of first appearance, through a small hash of the
 * targets (one pass, so 100,000 checks group as fast as 10).
 *
 * Text, for people (GC_VREPORT_COLOR adds ANSI colour; the CLI decides):
 *
 *   esxi esx01 (2 checks: 1 passed, 1 failed, 0 skipped)
 *     PASS  config.host.version  found 8.0.2, expected 8.0.2
 *     FAIL  gpu.count            found 0, expected 1
 *           hint: no GPU is in passthrough on esx01
 *
 *   guest node1 (1 check: 0 passed, 0 failed, 1 skipped)
 *     SKIP  rdma.write_bw        found -
 *           hint: node2 is unreachable
 *
 *   3 checks: 1 passed, 1 failed, 1 skipped in 12.3 s
 *
 *  - a block per target, then a blank line: "<kind> <target>" and its counts;
 *  - a line per check: two spaces, PASS/FAIL/SKIP, two spaces, the name
 *    padded to the longest name in the report (at most NAME_COL columns;
 *    a longer name is followed by two spaces), "found <found>" ("-" when
 *    NULL), and ", expected <expected>" when there is an expectation;
 *  - under a FAIL or a SKIP, its hint at the name's column ("hint: ..."); a
 *    PASS's hint is not shown;
 *  - one summary line: the counts, then the wall time with one decimal
 *    (seconds per check are in the JSON and the JUnit file only).
 *  Colour: "<kind> <target>" bold, PASS green, FAIL red, SKIP yellow, the
 *  hint dim.  Targets, names, values and hints may hold a remote host's
 *  words: they pass through gc_buf_put_shown, so none reaches the terminal
 *  as a control sequence.
 *
 * JSON ("schema": 1, docs/validate.md) is written one check object at a
 * time through json-c (like the plan), seconds with three decimals; strings
 * are kept as they are, json-c escaping control characters.
 *
 * JUnit XML is built in memory with libxml2's xmlTextWriter, written to
 * "<path>.<random>.tmp" beside path and renamed over it.  It follows
 * Jenkins' junit-10.xsd (tests/data/validate/junit-10.xsd): <testsuites>
 * has no "skipped" attribute there, times match its SUREFIRE_TIME
 * ("12.345"), the timestamp is UTC "YYYY-MM-DDTHH:MM:SS" (the Ant form).
 * Text goes through gc_buf_put_shown first and loses U+FFFE/U+FFFF: XML 1.0
 * cannot carry most control characters, not even as "&#x1b;".
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>
#include <libxml/xmlwriter.h>

#include "gc/json.h"
#include "gc/validate.h"

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_RED "\033[31m"
#define C_DIM "\033[2m"

/* The widest the name column gets in the table. */
#define NAME_COL 40

const char *gc_check_status_name(enum gc_check_status s)
{
	switch (s) {
	case GC_CHECK_PASS:
		return "pass";
	case GC_CHECK_FAIL:
		return "fail";
	case GC_CHECK_SKIP:
		return "skip";
	}
	return "?";
}

const char *gc_check_target_name(enum gc_check_target k)
{
	switch (k) {
	case GC_CT_ESXI:
		return "esxi";
	case GC_CT_SWITCH:
		return "switch";
	case GC_CT_VCENTER:
		return "vcenter";
	case GC_CT_VM:
		return "vm";
	case GC_CT_GUEST:
		return "guest";
	case GC_CT_PAIR:
		return "pair";
	case GC_CT_MPI:
		return "mpi";
	case GC_CT_KVM:
		return "kvm";
	}
	return "?";
}

/* ------------------------------------------------------------- the model */

/* A copy of s cut to GC_VREPORT_VALUE_MAX bytes at a character boundary. */
static char *dup_capped(const char *s)
{
	static const char ellipsis[] = "\xe2\x80\xa6"; /* … */
	size_t n;
	char *p;

	if (s == NULL)
		return NULL;
	n = strnlen(s, GC_VREPORT_VALUE_MAX + 1);
	if (n <= GC_VREPORT_VALUE_MAX)
		return gc_xstrndup(s, n);
	n = GC_VREPORT_VALUE_MAX - (sizeof(ellipsis) - 1);
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--; /* s[n] is the first byte dropped: not inside a sequence */
	p = gc_xmalloc(n + sizeof(ellipsis));
	memcpy(p, s, n);
	memcpy(p + n, ellipsis, sizeof(ellipsis));
	return p;
}

struct gc_check *gc_vreport_add(struct gc_validate_report *r, enum gc_check_target kind,
				const char *target, const char *name, enum gc_check_status st,
				const char *expected, const char *found, const char *hint)
{
	struct gc_check *c;

	assert(target != NULL && name != NULL);
	if (r->nchecks == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->checks = gc_xrealloc(r->checks, r->cap * sizeof(*r->checks));
	}
	c = &r->checks[r->nchecks++];
	c->target = dup_capped(target);
	c->target_kind = kind;
	c->name = dup_capped(name);
	c->status = st;
	c->expected = dup_capped(expected);
	c->found = dup_capped(found);
	c->hint = dup_capped(hint);
	c->seconds = 0;
	return c;
}

void gc_vreport_free(struct gc_validate_report *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->nchecks; i++) {
		free(r->checks[i].target);
		free(r->checks[i].name);
		free(r->checks[i].expected);
		free(r->checks[i].found);
		free(r->checks[i].hint);
	}
	free(r->checks);
	free(r->spec);
	memset(r, 0, sizeof(*r));
}

struct counts {
	size_t pass, fail, skip;
	double seconds;
};

static void count_one(struct counts *n, const struct gc_check *c)
{
	switch (c->status) {
	case GC_CHECK_PASS:
		n->pass++;
		break;
	case GC_CHECK_FAIL:
		n->fail++;
		break;
	case GC_CHECK_SKIP:
		n->skip++;
		break;
	}
}

void gc_vreport_count(const struct gc_validate_report *r, size_t *pass, size_t *fail,
		      size_t *skip)
{
	struct counts n = {0, 0, 0, 0};

	for (size_t i = 0; i < r->nchecks; i++)
		count_one(&n, &r->checks[i]);
	if (pass)
		*pass = n.pass;
	if (fail)
		*fail = n.fail;
	if (skip)
		*skip = n.skip;
}

/* Seconds as we write them: never negative, NaN or infinite. */
static double secs(double s)
{
	return isfinite(s) && s > 0 ? s : 0;
}

/* ---------------------------------------------------------- the targets */

struct group {
	size_t first;     /* its first check */
	size_t start, n;  /* its checks: order[start .. start + n) */
	struct counts counts;
};

struct grouping {
	struct group *g;
	size_t ng;
	size_t *order;    /* check indices, target by target, each in added order */
};

static size_t hash_target(enum gc_check_target k, const char *s)
{
	uint64_t h = 14695981039346656037ull ^ (uint64_t)k; /* FNV-1a */

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return (size_t)h;
}

static void group_checks(struct grouping *out, const struct gc_validate_report *r)
{
	size_t cap = 16, *slot, *gid, *fill;

	while (cap < 2 * r->nchecks)
		cap *= 2;
	slot = gc_xcalloc(cap, sizeof(*slot)); /* group index + 1; 0: empty */
	gid = gc_xcalloc(r->nchecks, sizeof(*gid));
	out->g = gc_xcalloc(r->nchecks, sizeof(*out->g));
	out->ng = 0;
	for (size_t i = 0; i < r->nchecks; i++) {
		const struct gc_check *c = &r->checks[i];
		size_t j = hash_target(c->target_kind, c->target) & (cap - 1);
		struct group *g;

		while (slot[j] != 0) {
			const struct gc_check *f = &r->checks[out->g[slot[j] - 1].first];

			if (f->target_kind == c->target_kind && strcmp(f->target, c->target) == 0)
				break;
			j = (j + 1) & (cap - 1);
		}
		if (slot[j] == 0) {
			slot[j] = ++out->ng;
			out->g[slot[j] - 1].first = i;
		}
		g = &out->g[slot[j] - 1];
		gid[i] = slot[j] - 1;
		g->n++;
		count_one(&g->counts, c);
		g->counts.seconds += secs(c->seconds);
	}
	fill = gc_xcalloc(out->ng, sizeof(*fill));
	for (size_t k = 1; k < out->ng; k++)
		out->g[k].start = out->g[k - 1].start + out->g[k - 1].n;
	out->order = gc_xcalloc(r->nchecks, sizeof(*out->order));
	for (size_t i = 0; i < r->nchecks; i++)
		out->order[out->g[gid[i]].start + fill[gid[i]]++] = i;
	free(fill);
	free(gid);
	free(slot);
}

static void grouping_free(struct grouping *gr)
{
	free(gr->g);
	free(gr->order);
}

/* ----------------------------------------------------------------- text */

/* Columns s takes once shown (code points of its shown form). */
static size_t shown_width(struct gc_buf *scratch, const char *s)
{
	size_t w = 0;

	gc_buf_reset(scratch);
	gc_buf_put_shown(scratch, s, false);
	for (size_t i = 0; i < scratch->len; i++)
		w += ((unsigned char)scratch->ptr[i] & 0xc0) != 0x80;
	return w;
}

static void status_text(struct gc_buf *out, enum gc_check_status s, bool color)
{
	const char *word = "", *col = "";

	switch (s) {
	case GC_CHECK_PASS:
		word = "PASS", col = C_GREEN;
		break;
	case GC_CHECK_FAIL:
		word = "FAIL", col = C_RED;
		break;
	case GC_CHECK_SKIP:
		word = "SKIP", col = C_YELLOW;
		break;
	}
	if (color)
		gc_buf_printf(out, "%s%s" C_RESET, col, word);
	else
		gc_buf_puts(out, word);
}

static void check_text(struct gc_buf *out, struct gc_buf *scratch, const struct gc_check *c,
		       size_t namecol, bool color)
{
	size_t w = shown_width(scratch, c->name);

	gc_buf_puts(out, "  ");
	status_text(out, c->status, color);
	gc_buf_puts(out, "  ");
	gc_buf_put(out, scratch->ptr, scratch->len); /* the name, shown */
	gc_buf_printf(out, "%*s", (int)((w < namecol ? namecol - w : 0) + 2), "");
	gc_buf_puts(out, "found ");
	gc_buf_put_shown(out, c->found ? c->found : "-", false);
	if (c->expected != NULL) {
		gc_buf_puts(out, ", expected ");
		gc_buf_put_shown(out, c->expected, false);
	}
	gc_buf_putc(out, '\n');
	if (c->hint != NULL && c->status != GC_CHECK_PASS) {
		gc_buf_puts(out, color ? "        " C_DIM "hint: " : "        hint: ");
		gc_buf_put_shown(out, c->hint, false);
		gc_buf_puts(out, color ? C_RESET "\n" : "\n");
	}
}

static void counts_text(struct gc_buf *out, size_t n, const struct counts *k)
{
	gc_buf_printf(out, "%zu check%s: %zu passed, %zu failed, %zu skipped", n, n == 1 ? "" : "s",
		      k->pass, k->fail, k->skip);
}

void gc_vreport_render_text(struct gc_buf *out, const struct gc_validate_report *r,
			    unsigned flags)
{
	bool color = (flags & GC_VREPORT_COLOR) != 0;
	struct gc_buf scratch = GC_BUF_INIT;
	struct grouping gr;
	struct counts all = {0, 0, 0, 0};
	size_t namecol = 0;

	group_checks(&gr, r);
	for (size_t i = 0; i < r->nchecks; i++) {
		size_t w = shown_width(&scratch, r->checks[i].name);

		if (w > namecol)
			namecol = w > NAME_COL ? NAME_COL : w;
		count_one(&all, &r->checks[i]);
	}
	for (size_t k = 0; k < gr.ng; k++) {
		const struct group *g = &gr.g[k];
		const struct gc_check *f = &r->checks[g->first];

		if (color)
			gc_buf_puts(out, C_BOLD);
		gc_buf_printf(out, "%s ", gc_check_target_name(f->target_kind));
		gc_buf_put_shown(out, f->target, false);
		if (color)
			gc_buf_puts(out, C_RESET);
		gc_buf_puts(out, " (");
		counts_text(out, g->n, &g->counts);
		gc_buf_puts(out, ")\n");
		for (size_t i = 0; i < g->n; i++) {
			const struct gc_check *c = &r->checks[gr.order[g->start + i]];

			check_text(out, &scratch, c, namecol, color);
		}
		gc_buf_putc(out, '\n');
	}
	counts_text(out, r->nchecks, &all);
	gc_buf_printf(out, " in %.1f s\n", secs(r->wall_s));
	gc_buf_free(&scratch);
	grouping_free(&gr);
}

/* ----------------------------------------------------------------- JSON */

/* A number of seconds, written with three decimals. */
static json_object *seconds_json(double s)
{
	char text[64];

	snprintf(text, sizeof(text), "%.3f", secs(s));
	return json_object_new_double_s(secs(s), text);
}

static json_object *check_json(const struct gc_check *c)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(c->name));
	json_object_object_add(o, "status",
			       json_object_new_string(gc_check_status_name(c->status)));
	json_object_object_add(o, "expected", gc_json_text(c->expected));
	json_object_object_add(o, "found", gc_json_text(c->found));
	json_object_object_add(o, "hint", gc_json_text(c->hint));
	json_object_object_add(o, "seconds", seconds_json(c->seconds));
	return o;
}

static void target_json(struct gc_buf *out, const struct gc_validate_report *r,
			const struct grouping *gr, const struct group *g)
{
	const struct gc_check *f = &r->checks[g->first];

	gc_buf_puts(out, "    {\n");
	gc_json_put_key(out, 6, "name");
	gc_json_put(out, gc_json_text(f->target), 0);
	gc_buf_puts(out, ",\n");
	gc_json_put_key(out, 6, "kind");
	gc_json_put(out, json_object_new_string(gc_check_target_name(f->target_kind)), 0);
	gc_buf_puts(out, ",\n");
	gc_json_put_key(out, 6, "checks");
	gc_buf_puts(out, "[\n");
	for (size_t i = 0; i < g->n; i++) {
		gc_buf_puts(out, "        ");
		gc_json_put(out, check_json(&r->checks[gr->order[g->start + i]]), 8);
		gc_buf_puts(out, i + 1 < g->n ? ",\n" : "\n");
	}
	gc_buf_puts(out, "      ]\n    }");
}

void gc_vreport_render_json(struct gc_buf *out, const struct gc_validate_report *r)
{
	json_object *summary = json_object_new_object();
	struct grouping gr;
	size_t pass, fail, skip;

	group_checks(&gr, r);
	gc_vreport_count(r, &pass, &fail, &skip);
	gc_buf_puts(out, "{\n");
	gc_json_put_key(out, 2, "schema");
	gc_buf_puts(out, "1,\n");
	gc_json_put_key(out, 2, "spec");
	gc_json_put(out, gc_json_text(r->spec), 0);
	gc_buf_puts(out, ",\n");
	gc_json_put_key(out, 2, "wall_s");
	gc_json_put(out, seconds_json(r->wall_s), 0);
	gc_buf_puts(out, ",\n");
	json_object_object_add(summary, "pass", json_object_new_int64((int64_t)pass));
	json_object_object_add(summary, "fail", json_object_new_int64((int64_t)fail));
	json_object_object_add(summary, "skip", json_object_new_int64((int64_t)skip));
	json_object_object_add(summary, "ok", json_object_new_boolean(fail == 0));
	json_object_object_add(summary, "result",
			       json_object_new_string(fail > 0    ? "failed"
						      : pass > 0 ? "ok"
								 : "nothing_to_check"));
	gc_json_put_key(out, 2, "summary");
	gc_json_put(out, summary, 2);
	gc_buf_puts(out, ",\n");
	gc_json_put_key(out, 2, "targets");
	if (gr.ng == 0)
		gc_buf_puts(out, "[]");
	else
		gc_buf_puts(out, "[\n");
	for (size_t k = 0; k < gr.ng; k++) {
		target_json(out, r, &gr, &gr.g[k]);
		gc_buf_puts(out, k + 1 < gr.ng ? ",\n" : "\n  ]");
	}
	gc_buf_puts(out, "\n}\n");
	grouping_free(&gr);
}

/* ---------------------------------------------------------------- JUnit */

/* An xmlTextWriter and the first error it gave (every call after that one
 * does nothing). */
struct xw {
	xmlTextWriterPtr w;
	struct gc_buf shown, text; /* scratch for xml_text() */
	int rc;
};

/* s as XML 1.0 can carry it: shown (no control characters but tab and,
 * when multiline, newline; UTF-8 only), U+FFFE and U+FFFF written out. */
static const xmlChar *xml_text(struct xw *x, const char *s, bool multiline)
{
	const unsigned char *p;
	size_t n;

	gc_buf_reset(&x->shown);
	gc_buf_put_shown(&x->shown, s, multiline);
	gc_buf_reset(&x->text);
	p = (const unsigned char *)gc_buf_str(&x->shown);
	n = x->shown.len;
	for (size_t i = 0; i < n; i++) {
		if (i + 2 < n && p[i] == 0xef && p[i + 1] == 0xbf && (p[i + 2] & 0xfe) == 0xbe) {
			gc_buf_puts(&x->text, p[i + 2] == 0xbe ? "\\ufffe" : "\\uffff");
			i += 2;
			continue;
		}
		gc_buf_putc(&x->text, (char)p[i]);
	}
	return (const xmlChar *)gc_buf_str(&x->text);
}

static void xw_check(struct xw *x, int rc)
{
	if (rc < 0 && x->rc >= 0)
		x->rc = rc;
}

static void xw_start(struct xw *x, const char *name)
{
	if (x->rc >= 0)
		xw_check(x, xmlTextWriterStartElement(x->w, (const xmlChar *)name));
}

static void xw_end(struct xw *x)
{
	if (x->rc >= 0)
		xw_check(x, xmlTextWriterEndElement(x->w));
}

static void xw_attr(struct xw *x, const char *name, const char *value)
{
	if (x->rc >= 0)
		xw_check(x, xmlTextWriterWriteAttribute(x->w, (const xmlChar *)name,
							xml_text(x, value, false)));
}

static void xw_attr_size(struct xw *x, const char *name, size_t n)
{
	char text[32];

	snprintf(text, sizeof(text), "%zu", n);
	xw_attr(x, name, text);
}

static void xw_attr_secs(struct xw *x, const char *name, double s)
{
	char text[64];

	snprintf(text, sizeof(text), "%.3f", secs(s));
	xw_attr(x, name, text);
}

static void xw_string(struct xw *x, const char *s)
{
	if (x->rc >= 0)
		xw_check(x, xmlTextWriterWriteString(x->w, xml_text(x, s, true)));
}

/* "expected X, found Y" ("found Y" with no expectation; Y "-" when NULL). */
static char *found_words(const struct gc_check *c)
{
	const char *found = c->found ? c->found : "-";

	return c->expected ? gc_xasprintf("expected %s, found %s", c->expected, found)
			   : gc_xasprintf("found %s", found);
}

static void testcase_xml(struct xw *x, const struct gc_check *c)
{
	char *words = found_words(c);
	char *classname = gc_xasprintf("%s.%s", gc_check_target_name(c->target_kind), c->target);

	xw_start(x, "testcase");
	xw_attr(x, "classname", classname);
	xw_attr(x, "name", c->name);
	xw_attr_secs(x, "time", c->seconds);
	switch (c->status) {
	case GC_CHECK_PASS:
		xw_start(x, "system-out");
		xw_string(x, words);
		xw_end(x);
		break;
	case GC_CHECK_FAIL:
		xw_start(x, "failure");
		xw_attr(x, "message", words);
		xw_attr(x, "type", "check");
		if (c->hint != NULL)
			xw_string(x, c->hint);
		xw_end(x);
		break;
	case GC_CHECK_SKIP:
		xw_start(x, "skipped");
		if (c->hint != NULL)
			xw_attr(x, "message", c->hint);
		xw_end(x);
		break;
	}
	xw_end(x);
	free(classname);
	free(words);
}

static void junit_xml(struct xw *x, const struct gc_validate_report *r)
{
	struct grouping gr;
	size_t pass, fail, skip;
	char host[256] = "", stamp[32] = "";
	time_t t = r->started ? r->started : time(NULL);
	struct tm tm;

	if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0')
		snprintf(host, sizeof(host), "localhost");
	if (gmtime_r(&t, &tm) != NULL)
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	group_checks(&gr, r);
	gc_vreport_count(r, &pass, &fail, &skip);
	xw_check(x, xmlTextWriterStartDocument(x->w, NULL, "UTF-8", NULL));
	xw_start(x, "testsuites");
	xw_attr(x, "name", "gpuclusterctl validate");
	xw_attr_size(x, "tests", r->nchecks);
	xw_attr_size(x, "failures", fail);
	xw_attr(x, "errors", "0");
	xw_attr_secs(x, "time", r->wall_s); /* junit-10.xsd has no "skipped" here */
	for (size_t k = 0; k < gr.ng; k++) {
		const struct group *g = &gr.g[k];
		const struct gc_check *f = &r->checks[g->first];
		char *name = gc_xasprintf("%s/%s", gc_check_target_name(f->target_kind), f->target);

		xw_start(x, "testsuite");
		xw_attr(x, "name", name);
		xw_attr_size(x, "tests", g->n);
		xw_attr_size(x, "failures", g->counts.fail);
		xw_attr(x, "errors", "0");
		xw_attr_size(x, "skipped", g->counts.skip);
		xw_attr_secs(x, "time", g->counts.seconds);
		xw_attr(x, "timestamp", stamp);
		xw_attr(x, "hostname", host);
		for (size_t i = 0; i < g->n; i++)
			testcase_xml(x, &r->checks[gr.order[g->start + i]]);
		xw_end(x);
		free(name);
	}
	xw_end(x);
	if (x->rc >= 0)
		xw_check(x, xmlTextWriterEndDocument(x->w));
	grouping_free(&gr);
}

/* Write data to path through a temporary file beside it: a reader (a CI job
 * collecting reports) never sees half a file. */
static int write_replace(const char *path, const void *data, size_t len, struct gc_error *err)
{
	const char *p = data;
	char tok[17];
	char *tmp;
	int fd, rc = GC_EIO;

	gc_random_token(tok);
	tmp = gc_xasprintf("%s.%s.tmp", path, tok);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0) {
		gc_error_set_errno(err, GC_EIO, errno, "cannot write the JUnit report '%s'", path);
		free(tmp);
		return GC_EIO;
	}
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			gc_error_set_errno(err, GC_EIO, n < 0 ? errno : EIO,
					   "cannot write the JUnit report '%s'", path);
			close(fd);
			goto out;
		}
		p += n;
		len -= (size_t)n;
	}
	if (fsync(fd) != 0) {
		gc_error_set_errno(err, GC_EIO, errno, "cannot write the JUnit report '%s'", path);
		close(fd);
		goto out;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		gc_error_set_errno(err, GC_EIO, errno, "cannot write the JUnit report '%s'", path);
		goto out;
	}
	rc = 0;
out:
	if (rc != 0)
		unlink(tmp);
	free(tmp);
	return rc;
}

int gc_vreport_write_junit(const char *path, const struct gc_validate_report *r,
			   struct gc_error *err)
{
	xmlBufferPtr buf = xmlBufferCreate();
	struct xw x = {NULL, GC_BUF_INIT, GC_BUF_INIT, 0};
	int rc, len;

	if (buf == NULL)
		return gc_error_set(err, GC_ERROR, "cannot build the JUnit report '%s'", path);
	x.w = xmlNewTextWriterMemory(buf, 0);
	if (x.w == NULL) {
		xmlBufferFree(buf);
		return gc_error_set(err, GC_ERROR, "cannot build the JUnit report '%s'", path);
	}
	xmlTextWriterSetIndent(x.w, 1);
	xmlTextWriterSetIndentString(x.w, (const xmlChar *)"  ");
	junit_xml(&x, r);
	xmlFreeTextWriter(x.w); /* flushes into buf */
	len = xmlBufferLength(buf);
	if (x.rc >= 0 && len > 0 && xmlBufferContent(buf)[len - 1] != '\n')
		x.rc = xmlBufferAdd(buf, (const xmlChar *)"\n", 1) == 0 ? 0 : -1; /* end the file */
	if (x.rc < 0)
		rc = gc_error_set(err, GC_ERROR, "cannot build the JUnit report '%s' (libxml2)",
				  path);
	else
		rc = write_replace(path, xmlBufferContent(buf), (size_t)xmlBufferLength(buf), err);
	xmlBufferFree(buf);
	gc_buf_free(&x.shown);
	gc_buf_free(&x.text);
	return rc;
}
