/*
 * diag.c - spec diagnostics: collecting, sorting, rendering.
 *
 * While loading, problems are appended to the context unsorted (up to
 * SPEC_RAW_DIAG_MAX; the rest are only counted).  At the end they are sorted
 * stably by (line, column), capped at GC_DIAG_MAX, and each kept one gets the
 * text of its source line.  gc_diag_format() renders the exact layout that
 * include/gc/spec.h documents; values quoted in messages go through
 * spec_esc() so a hostile spec cannot put control bytes on a terminal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ESC_MAX 64          /* bytes of a value quoted in a message */
#define SOURCE_LINE_MAX 240 /* bytes of a source line kept in a diagnostic */

static void diag_add(struct spec_ctx *x, enum gc_severity sev, struct gc_mark m, char *hint,
		     const char *fmt, va_list ap) GC_VPRINTF(5);

static void diag_add(struct spec_ctx *x, enum gc_severity sev, struct gc_mark m, char *hint,
		     const char *fmt, va_list ap)
{
	struct gc_diags *d = &x->diags;
	struct gc_diag *g;
	struct gc_buf b = GC_BUF_INIT;

	if (sev == GC_SEV_ERROR)
		d->nerrors++;
	if (d->n >= SPEC_RAW_DIAG_MAX) {
		d->dropped++;
		free(hint);
		return;
	}
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 16;
		d->items = gc_xrealloc(d->items, d->cap * sizeof(*d->items));
	}
	gc_buf_vprintf(&b, fmt, ap);
	g = &d->items[d->n++];
	memset(g, 0, sizeof(*g));
	g->severity = sev;
	g->mark = m;
	g->msg = gc_buf_take(&b);
	g->hint = hint;
	if (x->note_for != NULL) {
		g->notes = gc_xcalloc(1, sizeof(*g->notes));
		g->notes[g->nnotes++] = gc_xstrdup(x->note_for);
	}
}

void spec_diag(struct spec_ctx *x, enum gc_severity sev, struct gc_mark m, const char *hint,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_add(x, sev, m, hint ? gc_xstrdup(hint) : NULL, fmt, ap);
	va_end(ap);
}

const char *spec_esc(struct spec_ctx *x, const char *s)
{
	struct gc_buf b = GC_BUF_INIT;
	const char *r;
	size_t n = 0;

	if (s == NULL)
		return "(null)";
	for (; *s; s++, n++) {
		unsigned char c = (unsigned char)*s;

		if (n == ESC_MAX) {
			gc_buf_puts(&b, "...");
			break;
		}
		if (c < 0x20 || c >= 0x7f || c == '\\' || c == '\'')
			gc_buf_printf(&b, "\\x%02x", c);
		else
			gc_buf_putc(&b, (char)c);
	}
	r = gc_arena_strdup(x->arena, gc_buf_str(&b));
	gc_buf_free(&b);
	return r;
}

static void build_line_index(struct spec_ctx *x)
{
	size_t i, n = 1, k = 0;

	for (i = 0; i < x->len; i++)
		n += x->data[i] == '\n';
	x->line_starts = gc_xmalloc(n * sizeof(*x->line_starts));
	x->line_starts[k++] = 0;
	for (i = 0; i < x->len; i++) {
		if (x->data[i] == '\n')
			x->line_starts[k++] = i + 1;
	}
	x->nlines = k;
}

static char *source_line(struct spec_ctx *x, int line)
{
	size_t start, end;
	struct gc_buf b = GC_BUF_INIT;

	if (x->data == NULL || x->len == 0 || line <= 0)
		return NULL;
	if (x->line_starts == NULL)
		build_line_index(x);
	if ((size_t)line > x->nlines)
		return NULL;
	start = x->line_starts[line - 1];
	end = start;
	while (end < x->len && x->data[end] != '\n')
		end++;
	if (end > start && x->data[end - 1] == '\r')
		end--;
	if (start == x->len && (size_t)line == x->nlines && line > 1)
		return NULL; /* the empty "line" after a final newline */
	if (end - start > SOURCE_LINE_MAX) {
		size_t cut = start + SOURCE_LINE_MAX;

		/* do not cut a UTF-8 sequence in half */
		while (cut > start && ((unsigned char)x->data[cut] & 0xc0) == 0x80)
			cut--;
		gc_buf_put(&b, x->data + start, cut - start);
		gc_buf_puts(&b, " ...");
	} else {
		gc_buf_put(&b, x->data + start, end - start);
	}
	return gc_buf_take(&b);
}

void spec_diag_free_notes(struct gc_diag *d)
{
	for (size_t i = 0; i < d->nnotes; i++)
		free(d->notes[i]);
	free(d->notes);
	d->notes = NULL;
	d->nnotes = 0;
}

struct sortable {
	struct gc_diag d;
	size_t seq;
};

static int by_position(const void *a, const void *b)
{
	const struct sortable *p = a, *q = b;

	if (p->d.mark.line != q->d.mark.line)
		return p->d.mark.line < q->d.mark.line ? -1 : 1;
	if (p->d.mark.col != q->d.mark.col)
		return p->d.mark.col < q->d.mark.col ? -1 : 1;
	return p->seq < q->seq ? -1 : p->seq > q->seq;
}

void spec_diags_finish(struct spec_ctx *x, struct gc_diags *out)
{
	struct gc_diags *d = &x->diags;
	struct sortable *s;
	size_t i, keep;

	s = gc_xcalloc(d->n ? d->n : 1, sizeof(*s));
	for (i = 0; i < d->n; i++) {
		s[i].d = d->items[i];
		s[i].seq = i;
	}
	qsort(s, d->n, sizeof(*s), by_position);
	keep = d->n < GC_DIAG_MAX ? d->n : GC_DIAG_MAX;
	if (out->n + keep > out->cap) {
		out->cap = out->n + keep;
		out->items = gc_xrealloc(out->items, out->cap * sizeof(*out->items));
	}
	for (i = 0; i < d->n; i++) {
		if (i < keep) {
			s[i].d.source_line = source_line(x, s[i].d.mark.line);
			/* the cluster (and its copy of the name) may be freed: borrow the caller's */
			s[i].d.mark.file = x->outname;
			out->items[out->n++] = s[i].d;
		} else {
			free(s[i].d.msg);
			free(s[i].d.hint);
			spec_diag_free_notes(&s[i].d);
		}
	}
	out->nerrors += d->nerrors;
	out->dropped += d->dropped + (d->n - keep);
	free(s);
	free(d->items);
	memset(d, 0, sizeof(*d));
}

void gc_diags_free(struct gc_diags *d)
{
	size_t i;

	if (d == NULL)
		return;
	for (i = 0; i < d->n; i++) {
		free(d->items[i].msg);
		free(d->items[i].hint);
		free(d->items[i].source_line);
		spec_diag_free_notes(&d->items[i]);
	}
	free(d->items);
	memset(d, 0, sizeof(*d));
}

/* Length of a valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	}
	return n;
}

/* The source line as displayed: tabs become one space, control bytes and
 * invalid UTF-8 become '?', so every character takes one column. */
static void put_source(struct gc_buf *out, const char *line)
{
	const unsigned char *p = (const unsigned char *)line;

	while (*p) {
		size_t n = utf8_len(p);

		if (*p == '\t') {
			gc_buf_putc(out, ' ');
			p++;
		} else if (n == 0 || *p < 0x20 || *p == 0x7f) {
			gc_buf_putc(out, '?');
			p++;
		} else {
			gc_buf_put(out, p, n);
			p += n;
		}
	}
}

void gc_diag_format(struct gc_buf *out, const struct gc_diag *d)
{
	const char *sev = d->severity == GC_SEV_ERROR ? "error" : "warning";
	int i;

	if (d->mark.line > 0)
		gc_buf_printf(out, "%s:%d:%d: %s: %s\n", d->mark.file ? d->mark.file : "<spec>",
			      d->mark.line, d->mark.col, sev, d->msg);
	else
		gc_buf_printf(out, "%s: %s: %s\n", d->mark.file ? d->mark.file : "<spec>", sev,
			      d->msg);
	if (d->source_line != NULL && d->mark.line > 0) {
		gc_buf_printf(out, "%5d | ", d->mark.line);
		put_source(out, d->source_line);
		gc_buf_puts(out, "\n      | ");
		for (i = 1; i < d->mark.col; i++)
			gc_buf_putc(out, ' ');
		gc_buf_puts(out, "^\n");
	}
	if (d->hint != NULL)
		gc_buf_printf(out, "   = hint: %s\n", d->hint);
	for (size_t n = 0; n < d->nnotes; n++)
		gc_buf_printf(out, "   = note: %s\n", d->notes[n]);
}

void gc_diags_format(struct gc_buf *out, const struct gc_diags *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		gc_diag_format(out, &d->items[i]);
	if (d->dropped > 0)
		gc_buf_printf(out, "note: %zu more diagnostic%s not shown\n", d->dropped,
			      d->dropped == 1 ? "" : "s");
}
