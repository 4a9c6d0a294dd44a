/*
 * ports.c - Onyx Ethernet port lists: expansion and range compression.
 *
 * The switch writes per-port config for a set of ports as
 * `interface ethernet 1/1-1/32 ...`; the spec writes "1/1-1/4,1/9".  Both are
 * expanded into sorted, de-duplicated struct gc_onyx_port_id arrays.  A range
 * stays within one slot ("1/1-1/32") or within one split port
 * ("1/1/1-1/1/4"); compressing back merges only consecutive port numbers in
 * the same slot (or consecutive subs of one split port), which is what the
 * switch's running-config shows.  Also the per-port state table helpers.
 */
#include <stdlib.h>
#include <string.h>

#include "gc/onyx.h"

int gc_onyx_port_cmp(const struct gc_onyx_port_id *a, const struct gc_onyx_port_id *b)
{
	if (a->slot != b->slot)
		return a->slot < b->slot ? -1 : 1;
	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	if (a->sub != b->sub)
		return a->sub < b->sub ? -1 : 1;
	return 0;
}

static int cmp_qsort(const void *a, const void *b)
{
	return gc_onyx_port_cmp(a, b);
}

/* One number of 1-3 digits, 1..999 (0 is no port number on Onyx). */
static bool num(const char **pp, const char *end, uint16_t *out)
{
	const char *p = *pp;
	unsigned v = 0;
	int d = 0;

	while (p < end && *p >= '0' && *p <= '9' && d < 4) {
		v = v * 10 + (unsigned)(*p - '0');
		p++;
		d++;
	}
	if (d == 0 || d > 3 || v == 0)
		return false;
	*out = (uint16_t)v;
	*pp = p;
	return true;
}

/* "1/1" or "1/1/2" */
static bool port_id(const char **pp, const char *end, struct gc_onyx_port_id *id)
{
	const char *p = *pp;

	memset(id, 0, sizeof(*id));
	if (!num(&p, end, &id->slot) || p >= end || *p != '/')
		return false;
	p++;
	if (!num(&p, end, &id->port))
		return false;
	if (p < end && *p == '/') {
		p++;
		if (!num(&p, end, &id->sub))
			return false;
	}
	*pp = p;
	return true;
}

int gc_onyx_ports_expand(struct gc_onyx_port_id **out, size_t *n, const char *list,
			 struct gc_error *err)
{
	const char *p = list, *end;
	struct gc_onyx_port_id *v = NULL;
	size_t nv = 0, i, k;

	if (list == NULL || *list == '\0' || strlen(list) > 255)
		return gc_error_set(err, GC_EINVAL, "invalid port list '%.64s'", list ? list : "");
	end = list + strlen(list);
	for (;;) {
		struct gc_onyx_port_id a, b;

		if (!port_id(&p, end, &a))
			goto bad;
		b = a;
		if (p < end && *p == '-') {
			p++;
			if (!port_id(&p, end, &b))
				goto bad;
			if (a.slot != b.slot || (a.sub == 0) != (b.sub == 0) ||
			    (a.sub != 0 && a.port != b.port) || gc_onyx_port_cmp(&a, &b) > 0)
				goto bad;
		}
		for (;;) {
			if (nv >= GC_ONYX_MAX_PORTS) {
				free(v);
				return gc_error_set(err, GC_ENOMEM,
						    "port list '%.64s' has more than %d ports", list,
						    GC_ONYX_MAX_PORTS);
			}
			v = gc_xrealloc(v, (nv + 1) * sizeof(*v));
			v[nv++] = a;
			if (gc_onyx_port_cmp(&a, &b) == 0)
				break;
			if (a.sub)
				a.sub++;
			else
				a.port++;
		}
		if (p == end)
			break;
		if (*p != ',')
			goto bad;
		p++;
	}
	qsort(v, nv, sizeof(*v), cmp_qsort);
	for (i = 0, k = 0; i < nv; i++) {
		if (k == 0 || gc_onyx_port_cmp(&v[k - 1], &v[i]) != 0)
			v[k++] = v[i];
	}
	*out = v;
	*n = k;
	return 0;
bad:
	free(v);
	return gc_error_set(err, GC_EINVAL, "invalid port list '%.64s'", list);
}

static void put_id(struct gc_buf *b, const struct gc_onyx_port_id *id)
{
	if (id->sub)
		gc_buf_printf(b, "%u/%u/%u", id->slot, id->port, id->sub);
	else
		gc_buf_printf(b, "%u/%u", id->slot, id->port);
}

static bool next_of(const struct gc_onyx_port_id *a, const struct gc_onyx_port_id *b)
{
	if (a->slot != b->slot || (a->sub == 0) != (b->sub == 0))
		return false;
	if (a->sub == 0)
		return b->port == a->port + 1;
	return a->port == b->port && b->sub == a->sub + 1;
}

void gc_onyx_ports_compress(struct gc_buf *b, const struct gc_onyx_port_id *ids, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i;

		while (j + 1 < n && next_of(&ids[j], &ids[j + 1]))
			j++;
		if (i > 0)
			gc_buf_putc(b, ',');
		put_id(b, &ids[i]);
		if (j > i) {
			gc_buf_putc(b, '-');
			put_id(b, &ids[j]);
		}
		i = j + 1;
	}
}

/* ---------------------------------------------------------------- state */

void gc_onyx_state_init(struct gc_onyx_state *st)
{
	memset(st, 0, sizeof(*st));
	st->pool_percent_x100 = -1;
}

void gc_onyx_state_free(struct gc_onyx_state *st)
{
	if (st == NULL)
		return;
	free(st->ports);
	gc_onyx_state_init(st);
}

struct gc_onyx_port_state *gc_onyx_state_port(struct gc_onyx_state *st,
					      const struct gc_onyx_port_id *id, bool create)
{
	size_t lo = 0, hi = st->nports;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = gc_onyx_port_cmp(&st->ports[mid].id, id);

		if (c == 0)
			return &st->ports[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!create || st->nports >= GC_ONYX_MAX_PORTS)
		return NULL;
	st->ports = gc_xrealloc(st->ports, (st->nports + 1) * sizeof(*st->ports));
	memmove(&st->ports[lo + 1], &st->ports[lo], (st->nports - lo) * sizeof(*st->ports));
	st->nports++;
	memset(&st->ports[lo], 0, sizeof(st->ports[lo]));
	st->ports[lo].id = *id;
	return &st->ports[lo];
}
