/*
 * render.c - the resource graph as Graphviz DOT and as JSON.
 *
 * DOT: one `subgraph cluster_N` per target (label "esxi esx01"), one node
 * per resource, edges before -> after.  A node's label says whose it is
 * first (the VM, host, switch, distributed switch or port group by name),
 * then what it is (with its own key: a GPU's PCI address, a vGPU profile),
 * then its kind and what changing it costs.  Ids are quoted with DOT's
 * escaping rules, so any id is a valid node name.
 * JSON (docs/graph.md describes it) goes out through the streaming writer
 * (gc/jsonw.h) one resource at a time, in the bytes json-c wrote when each
 * resource was a json-c object (tests/unit/graph/test_graph_json.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/graph.h"
#include "gc/jsonw.h"

/* A DOT double-quoted string: escape '"' and '\'; newlines become \n. */
static void dot_quote(struct gc_buf *b, const char *s)
{
	gc_buf_putc(b, '"');
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			gc_buf_putc(b, '\\');
		if (*s == '\n') {
			gc_buf_puts(b, "\\n");
			continue;
		}
		gc_buf_putc(b, *s);
	}
	gc_buf_putc(b, '"');
}

/* "[maintenance, reboot]": what a change costs, spelled out (no legend needed). */
static void put_flags(struct gc_buf *b, unsigned flags)
{
	static const struct {
		unsigned bit;
		const char *text;
	} t[] = {{GC_RES_NEEDS_MAINTENANCE, "maintenance"},
		 {GC_RES_NEEDS_REBOOT, "reboot"},
		 {GC_RES_NEEDS_VM_OFF, "VM off"},
		 {GC_RES_AFTER_REBOOT, "after reboot"}};
	const char *sep = "\n[";

	for (size_t i = 0; i < GC_ARRAY_LEN(t); i++) {
		if (flags & t[i].bit) {
			gc_buf_printf(b, "%s%s", sep, t[i].text);
			sep = ", ";
		}
	}
	if (sep[0] == ',')
		gc_buf_putc(b, ']');
}

/* Whose the resource is, by name: the ESXi or KVM host, switch or guest;
 * for what holds VMs (the vCenter, a KVM host's libvirt) the VM, else the
 * host it is a part of (an ESXi 6.x host's NTP, a vmknic), else the last
 * part of the id: the distributed switch or port group of
 * "dvs/<dvs>[/portgroup/<pg>]", a libvirt network. */
static const char *own_name(const struct gc_resource *r)
{
	const char *slash;

	switch (r->target->kind) {
	case GC_TARGET_ESXI:
	case GC_TARGET_KVM:
		return r->host != NULL ? r->host : r->target->name;
	case GC_TARGET_SWITCH:
	case GC_TARGET_GUEST:
		return r->target->name;
	case GC_TARGET_VCENTER:
	case GC_TARGET_LIBVIRT:
		break;
	}
	if (r->vm != NULL)
		return r->vm;
	if (r->host != NULL) /* a host's part on vCenter: 6.x NTP, passthrough, a vmknic */
		return r->host;
	slash = strrchr(r->id, '/');
	return slash != NULL ? slash + 1 : r->id;
}

/* name, what it is (and where: a VM's host, a port group's switch), kind, costs */
static void node_label(struct gc_buf *b, const struct gc_resource *r)
{
	const char *where = NULL;

	gc_buf_printf(b, "%s\n", own_name(r));
	gc_resource_describe(b, r);
	if (r->kind == GC_RES_VM)
		where = r->host;
	else if (r->kind == GC_RES_DVS_PORTGROUP)
		where = gc_resource_prop(r, "dvswitch");
	if (where != NULL)
		gc_buf_printf(b, " on %s", where);
	gc_buf_printf(b, "\n%s", gc_res_kind_name(r->kind));
	put_flags(b, r->flags);
}

/* Resources grouped by target, in insertion order (a counting sort). */
static const struct gc_resource **by_target(const struct gc_graph *g, size_t **start)
{
	const struct gc_resource **v = gc_xcalloc(g->nresources + 1, sizeof(*v));
	size_t *s = gc_xcalloc(g->ntargets + 1, sizeof(*s));
	size_t *fill = gc_xcalloc(g->ntargets + 1, sizeof(*fill));

	for (size_t i = 0; i < g->nresources; i++)
		s[g->resources[i]->target->index + 1]++;
	for (size_t t = 0; t < g->ntargets; t++)
		s[t + 1] += s[t];
	for (size_t i = 0; i < g->nresources; i++) {
		size_t t = g->resources[i]->target->index;

		v[s[t] + fill[t]++] = g->resources[i];
	}
	free(fill);
	*start = s;
	return v;
}

void gc_graph_render_dot(struct gc_buf *out, const struct gc_graph *g)
{
	struct gc_buf label = GC_BUF_INIT;
	size_t *start;
	const struct gc_resource **v = by_target(g, &start);

	gc_buf_puts(out, "digraph gpuclusterctl {\n");
	gc_buf_puts(out, "  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n");
	for (size_t t = 0; t < g->ntargets; t++) {
		const struct gc_target *tg = g->targets[t];

		gc_buf_printf(out, "  subgraph cluster_%zu {\n    label=", t);
		gc_buf_reset(&label);
		gc_buf_printf(&label, "%s %s", gc_target_kind_name(tg->kind), tg->name);
		dot_quote(out, gc_buf_str(&label));
		gc_buf_puts(out, ";\n");
		for (size_t i = start[t]; i < start[t + 1]; i++) {
			const struct gc_resource *r = v[i];

			gc_buf_puts(out, "    ");
			dot_quote(out, r->id);
			gc_buf_puts(out, " [label=");
			gc_buf_reset(&label);
			node_label(&label, r);
			dot_quote(out, gc_buf_str(&label));
			if (r->flags & GC_RES_NEEDS_REBOOT)
				gc_buf_puts(out, ", color=\"red\"");
			gc_buf_puts(out, "];\n");
		}
		gc_buf_puts(out, "  }\n");
	}
	for (size_t i = 0; i < g->nresources; i++) {
		const struct gc_resource *r = g->resources[i];

		for (size_t d = 0; d < r->ndeps; d++) {
			gc_buf_puts(out, "  ");
			dot_quote(out, r->deps[d]->id);
			gc_buf_puts(out, " -> ");
			dot_quote(out, r->id);
			gc_buf_puts(out, ";\n");
		}
	}
	gc_buf_puts(out, "}\n");
	gc_buf_free(&label);
	free(v);
	free(start);
}

/* json-c's layout, which graph --json was written in before it streamed */
#define JSON_FLAGS (GC_JSONW_PRETTY | GC_JSONW_SPACED | GC_JSONW_NOSLASHESCAPE)

void gc_graph_put_flags_json(struct gc_jsonw *w, unsigned flags)
{
	gc_jsonw_array_begin(w);
	if (flags & GC_RES_NEEDS_MAINTENANCE)
		gc_jsonw_string(w, "needs_maintenance");
	if (flags & GC_RES_NEEDS_REBOOT)
		gc_jsonw_string(w, "needs_reboot");
	if (flags & GC_RES_NEEDS_VM_OFF)
		gc_jsonw_string(w, "needs_vm_off");
	if (flags & GC_RES_AFTER_REBOOT)
		gc_jsonw_string(w, "after_reboot");
	gc_jsonw_array_end(w);
}

/* The value property i stands for in "properties", or NULL when an earlier
 * property has its key: one member per key, where the key came first, with
 * its last value (what json_object_object_add() made of a repeated key). */
static const char *prop_member(const struct gc_resource *r, size_t i)
{
	const char *value = r->props[i].value;

	for (size_t k = 0; k < r->nprops; k++) {
		if (k == i || strcmp(r->props[k].key, r->props[i].key) != 0)
			continue;
		if (k < i)
			return NULL;
		value = r->props[k].value;
	}
	return value;
}

static void put_resource(struct gc_jsonw *w, const struct gc_resource *r)
{
	gc_jsonw_object_begin(w);
	gc_jsonw_key(w, "id");
	gc_jsonw_string(w, r->id);
	gc_jsonw_key(w, "kind");
	gc_jsonw_string(w, gc_res_kind_name(r->kind));
	gc_jsonw_key(w, "target");
	gc_jsonw_string(w, r->target->name);
	gc_jsonw_key(w, "target_kind");
	gc_jsonw_string(w, gc_target_kind_name(r->target->kind));
	if (r->host != NULL) {
		gc_jsonw_key(w, "host");
		gc_jsonw_string(w, r->host);
	}
	if (r->vm != NULL) {
		gc_jsonw_key(w, "vm");
		gc_jsonw_string(w, r->vm);
	}
	gc_jsonw_key(w, "properties");
	gc_jsonw_object_begin(w);
	for (size_t i = 0; i < r->nprops; i++) {
		const char *value = prop_member(r, i);

		if (value == NULL)
			continue;
		gc_jsonw_key(w, r->props[i].key);
		gc_jsonw_string(w, value);
	}
	gc_jsonw_object_end(w);
	gc_jsonw_key(w, "flags");
	gc_graph_put_flags_json(w, r->flags);
	gc_jsonw_key(w, "after");
	gc_jsonw_array_begin(w);
	for (size_t i = 0; i < r->ndeps; i++)
		gc_jsonw_string(w, r->deps[i]->id);
	gc_jsonw_array_end(w);
	if (r->mark.file != NULL && r->mark.line > 0) {
		char *src = gc_xasprintf("%s:%d:%d", r->mark.file, r->mark.line, r->mark.col);

		gc_jsonw_key(w, "source");
		gc_jsonw_string(w, src);
		free(src);
	}
	gc_jsonw_object_end(w);
}

/* Resource by resource: a whole-graph json-c tree of 10,000 hosts is
 * gigabytes, and the document itself hundreds of MB. */
static void put_graph(struct gc_jsonw *w, const struct gc_graph *g)
{
	gc_jsonw_object_begin(w);
	gc_jsonw_key(w, "format_version");
	gc_jsonw_int(w, 1);
	gc_jsonw_key(w, "targets");
	gc_jsonw_array_begin(w);
	for (size_t i = 0; i < g->ntargets; i++) {
		gc_jsonw_object_begin(w);
		gc_jsonw_key(w, "kind");
		gc_jsonw_string(w, gc_target_kind_name(g->targets[i]->kind));
		gc_jsonw_key(w, "name");
		gc_jsonw_string(w, g->targets[i]->name);
		gc_jsonw_object_end(w);
	}
	gc_jsonw_array_end(w);
	gc_jsonw_key(w, "resources");
	gc_jsonw_array_begin(w);
	for (size_t i = 0; i < g->nresources; i++)
		put_resource(w, g->resources[i]);
	gc_jsonw_array_end(w);
	gc_jsonw_object_end(w);
	gc_jsonw_raw(w, "\n", 1);
}

void gc_graph_render_json(struct gc_buf *out, const struct gc_graph *g)
{
	struct gc_jsonw w;

	gc_jsonw_init_buf(&w, out, JSON_FLAGS);
	put_graph(&w, g);
	(void)gc_jsonw_finish(&w, NULL); /* a buffer has no write to fail */
}

int gc_graph_write_json(FILE *f, const struct gc_graph *g, struct gc_error *err)
{
	struct gc_jsonw w;

	gc_jsonw_init_file(&w, f, JSON_FLAGS);
	put_graph(&w, g);
	return gc_jsonw_finish(&w, err);
}
