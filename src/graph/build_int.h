/*
 * build_int.h - what the parts of the graph builder share: the build
 * context and its small helpers (a resource with a formatted id, its
 * properties, its summary, an edge, a lookup).  build.c builds ESXi hosts,
 * distributed switches, VMs, switches and guests; build_kvm.c a KVM host's
 * targets and a KVM VM's vGPUs and networks.
 */
#ifndef GC_GRAPH_BUILD_INT_H
#define GC_GRAPH_BUILD_INT_H

#include <assert.h>
#include <stdarg.h>
#include <stddef.h>

#include "gc/graph.h"

struct ctx {
	struct gc_graph *g;
	struct gc_error *err;
	int rc;
	struct gc_buf id; /* scratch for ids */
	struct gc_target *vcenter;
};

/*
 * Ids are built for every resource and looked up for every edge: a small
 * formatter for the only conversions ids use (%s, %zu) keeps vfprintf out
 * of the hot path.  The GC_PRINTF attributes still check the callers.
 */
static inline void format_id(struct gc_buf *b, const char *fmt, va_list ap)
{
	const char *p = fmt, *s;
	char num[24];

	while (*p != '\0') {
		const char *pct = strchr(p, '%');

		if (pct == NULL) {
			gc_buf_puts(b, p);
			return;
		}
		gc_buf_put(b, p, (size_t)(pct - p));
		if (pct[1] == 's') {
			s = va_arg(ap, const char *);
			gc_buf_puts(b, s ? s : "(null)");
			p = pct + 2;
		} else if (pct[1] == 'z' && pct[2] == 'u') {
			size_t v = va_arg(ap, size_t), i = sizeof(num);

			do {
				num[--i] = (char)('0' + v % 10);
				v /= 10;
			} while (v > 0);
			gc_buf_put(b, num + i, sizeof(num) - i);
			p = pct + 3;
		} else {
			assert(!"format_id: unsupported conversion");
			return;
		}
	}
}

/* Add a resource with a printf-formatted id; NULL after the first error. */
static inline struct gc_resource *add(struct ctx *c, enum gc_res_kind kind,
				      const struct gc_target *t, const char *host, const char *vm,
				      unsigned flags, const struct gc_mark *mark, const char *fmt, ...)
	GC_PRINTF(8, 9);

static inline struct gc_resource *add(struct ctx *c, enum gc_res_kind kind,
				      const struct gc_target *t, const char *host, const char *vm,
				      unsigned flags, const struct gc_mark *mark, const char *fmt, ...)
{
	struct gc_resource *r = NULL;
	va_list ap;

	if (c->rc != 0)
		return NULL;
	gc_buf_reset(&c->id);
	va_start(ap, fmt);
	format_id(&c->id, fmt, ap);
	va_end(ap);
	c->rc = gc_graph_add(&r, c->g, kind, t, gc_buf_str(&c->id), host, vm, flags, c->err);
	if (c->rc != 0)
		return NULL;
	if (mark != NULL)
		r->mark = *mark;
	return r;
}

/* key: a literal; value: a literal or a model string (the cluster outlives the graph) */
static inline void set(struct ctx *c, struct gc_resource *r, const char *key, const char *value)
{
	if (r != NULL && value != NULL)
		gc_resource_set_borrowed(c->g, r, key, value);
}

static inline void setu(struct ctx *c, struct gc_resource *r, const char *key, unsigned v)
{
	if (r != NULL)
		gc_resource_setf(c->g, r, key, "%u", v);
}

/* A phrase for messages: a literal plus an optional model string (no copies). */
static inline void summary(struct ctx *c, struct gc_resource *r, const char *phrase, const char *detail)
{
	(void)c;
	if (r == NULL)
		return;
	r->summary = phrase;
	r->detail = detail;
}

static inline void summary0(struct ctx *c, struct gc_resource *r, const char *phrase)
{
	summary(c, r, phrase, NULL);
}

static inline void edge(struct ctx *c, const struct gc_resource *before, const struct gc_resource *after)
{
	if (c->rc == 0 && before != NULL && after != NULL)
		gc_graph_add_edge(c->g, before, after);
}

/* Look a resource up by a formatted id (NULL when absent). */
static inline struct gc_resource *find(struct ctx *c, const char *fmt, ...) GC_PRINTF(2, 3);

static inline struct gc_resource *find(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	gc_buf_reset(&c->id);
	va_start(ap, fmt);
	format_id(&c->id, fmt, ap);
	va_end(ap);
	return gc_graph_find(c->g, gc_buf_str(&c->id));
}

static inline void join(struct gc_buf *b, char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			gc_buf_putc(b, ',');
		gc_buf_puts(b, v[i]);
	}
}

static inline const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* ---------------------------------------------------------------- KVM (build_kvm.c) */

void graph_build_kvm_host(struct ctx *c, const struct gc_host *h);
/* The libvirt network of an SR-IOV NIC of a VM on a KVM host (made once). */
struct gc_resource *graph_kvm_network(struct ctx *c, const struct gc_vm *v,
				      const struct gc_vm_nic *n);
/* The vGPU `i` of a VM on a KVM host: its domain side `r` and host side. */
void graph_build_kvm_vgpu(struct ctx *c, const struct gc_vm *v, size_t i, struct gc_resource *r);

#endif
