/*
 * render.c - the resource graph as Graphviz DOT and as JSON.
 *
 * DOT: one `subgraph cluster_N` per target (label "esxi esx01"), one node
 * per resource, edges before -> after.  A node's label says whose it is
 * first (the VM, host, switch, distributed switch or port group by name),
 * then what it is (with its own key: a GPU's PCI address, a vGPU profile),
 * then its kind and what changing it costs.  Ids are quoted with DOT's
 * escaping rules, so any id is a valid node name.
 * JSON goes through json-c (docs/graph.md describes it).
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "gc/graph.h"

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

static json_object *flags_json(unsigned flags)
{
	json_object *a = json_object_new_array();

	if (flags & GC_RES_NEEDS_MAINTENANCE)
		json_object_array_add(a, json_object_new_string("needs_maintenance"));
	if (flags & GC_RES_NEEDS_REBOOT)
		json_object_array_add(a, json_object_new_string("needs_reboot"));
	if (flags & GC_RES_NEEDS_VM_OFF)
		json_object_array_add(a, json_object_new_string("needs_vm_off"));
	if (flags & GC_RES_AFTER_REBOOT)
		json_object_array_add(a, json_object_new_string("after_reboot"));
	return a;
}

static json_object *resource_json(const struct gc_resource *r)
{
	json_object *o = json_object_new_object();
	json_object *props = json_object_new_object();
	json_object *deps = json_object_new_array();

	json_object_object_add(o, "id", json_object_new_string(r->id));
	json_object_object_add(o, "kind", json_object_new_string(gc_res_kind_name(r->kind)));
	json_object_object_add(o, "target", json_object_new_string(r->target->name));
	json_object_object_add(o, "target_kind",
			       json_object_new_string(gc_target_kind_name(r->target->kind)));
	if (r->host != NULL)
		json_object_object_add(o, "host", json_object_new_string(r->host));
	if (r->vm != NULL)
		json_object_object_add(o, "vm", json_object_new_string(r->vm));
	for (size_t i = 0; i < r->nprops; i++)
		json_object_object_add(props, r->props[i].key,
				       json_object_new_string(r->props[i].value));
	json_object_object_add(o, "properties", props);
	json_object_object_add(o, "flags", flags_json(r->flags));
	for (size_t i = 0; i < r->ndeps; i++)
		json_object_array_add(deps, json_object_new_string(r->deps[i]->id));
	json_object_object_add(o, "after", deps);
	if (r->mark.file != NULL && r->mark.line > 0) {
		char *src = gc_xasprintf("%s:%d:%d", r->mark.file, r->mark.line, r->mark.col);

		json_object_object_add(o, "source", json_object_new_string(src));
		free(src);
	}
	return o;
}

#define JSON_FLAGS (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Serialize a json-c value at a nesting depth and release it (one resource
 * at a time: a whole-graph json-c tree of 10,000 hosts is gigabytes). */
static void put_json(struct gc_buf *out, json_object *o, size_t indent)
{
	static const char spaces[] = "        ";
	const char *s = json_object_to_json_string_ext(o, JSON_FLAGS), *nl;

	while ((nl = strchr(s, '\n')) != NULL) {
		gc_buf_put(out, s, (size_t)(nl - s) + 1);
		gc_buf_put(out, spaces, indent < sizeof(spaces) ? indent : sizeof(spaces) - 1);
		s = nl + 1;
	}
	gc_buf_puts(out, s);
	json_object_put(o);
}

void gc_graph_render_json(struct gc_buf *out, const struct gc_graph *g)
{
	json_object *targets = json_object_new_array();

	gc_buf_puts(out, "{\n  \"format_version\": 1,\n  \"targets\": ");
	for (size_t i = 0; i < g->ntargets; i++) {
		json_object *t = json_object_new_object();

		json_object_object_add(t, "kind",
				       json_object_new_string(gc_target_kind_name(g->targets[i]->kind)));
		json_object_object_add(t, "name", json_object_new_string(g->targets[i]->name));
		json_object_array_add(targets, t);
	}
	put_json(out, targets, 2);
	gc_buf_puts(out, ",\n  \"resources\": [\n");
	for (size_t i = 0; i < g->nresources; i++) {
		gc_buf_puts(out, "    ");
		put_json(out, resource_json(g->resources[i]), 4);
		gc_buf_puts(out, i + 1 < g->nresources ? ",\n" : "\n");
	}
	gc_buf_puts(out, "  ]\n}\n");
}
