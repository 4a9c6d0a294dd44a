/*
 * scope.c - `--only KINDS` and `--target NAME|GLOB`: the part of the
 * resource graph on the selected target kinds and targets, as a graph of
 * its own.
 *
 * A --target pattern (fnmatch(3), no flags) names a target (a host, a
 * switch, the vCenter) or a VM: a VM's resources live on the vCenter
 * target, so `--target worker-0*` keeps those VMs' resources and the vCenter
 * target they need.  VMs are handed to the planner (which powers them off or
 * migrates them around their host's maintenance) when their own name or
 * their host matches.
 *
 * Resources on other target kinds are left out entirely, so they are not
 * observed, planned or shown.  An edge that ran through left-out resources
 * (host prep -> DVS -> vmknic tag) is kept as a direct edge between the kept
 * ends, so the order among kept resources is exactly the full graph's.  VMs
 * are kept for the planner only when vCenter targets are selected.
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "gc/exec.h"
#include "gc/graph.h"

struct sel {
	unsigned kinds;
	const char *const *pats;
	size_t npats;
};

static bool match(const struct sel *s, const char *name)
{
	size_t i;

	if (s->npats == 0)
		return true;
	for (i = 0; name != NULL && i < s->npats; i++) {
		if (fnmatch(s->pats[i], name, 0) == 0)
			return true;
	}
	return false;
}

static bool keep(const struct sel *s, const struct gc_resource *r)
{
	if ((s->kinds & (1u << r->target->kind)) == 0)
		return false;
	return match(s, r->target->name) || (r->vm != NULL && match(s, r->vm));
}

bool gc_exec_target_matches(const char *const *pats, size_t npats, const char *name)
{
	struct sel s = {0, pats, npats};

	return match(&s, name);
}

/* Link every kept ancestor of `from` (through left-out resources) to `to`. */
static void link_through(struct gc_graph *sub, struct gc_resource **map, unsigned char *seen,
			 const struct gc_resource *from, struct gc_resource *to, const struct sel *kinds)
{
	size_t i;

	for (i = 0; i < from->ndeps; i++) {
		const struct gc_resource *d = from->deps[i];

		if (seen[d->index])
			continue;
		seen[d->index] = 1;
		if (keep(kinds, d))
			gc_graph_add_edge(sub, map[d->index], to);
		else
			link_through(sub, map, seen, d, to, kinds);
	}
}

/* A target of g in the scoped graph, added on first use. */
static struct gc_target *sub_target(struct gc_graph *sub, const struct gc_target *t)
{
	struct gc_target *nt = gc_graph_target(sub, t->kind, t->name);

	if (nt == NULL) {
		nt = gc_graph_add_target(sub, t->kind, t->name);
		nt->host = t->host;
		nt->sw = t->sw;
		nt->vm = t->vm;
	}
	return nt;
}

int gc_exec_scope_select(struct gc_graph **out, const struct gc_graph *g, unsigned kinds,
			 const char *const *targets, size_t ntargets, size_t *left_out,
			 struct gc_error *err)
{
	struct sel sel = {kinds ? kinds : ~0u, targets, ntargets};
	struct gc_graph *sub;
	struct gc_resource **map;
	unsigned char *seen;
	size_t i, k, dropped = 0;

	gc_graph_new(&sub);
	sub->cluster = g->cluster;
	sub->rolling = g->rolling;
	map = gc_xcalloc(g->nresources ? g->nresources : 1, sizeof(*map));
	seen = gc_xcalloc(g->nresources ? g->nresources : 1, 1);
	/* targets in the full graph's order: the named ones, and those holding a kept resource */
	for (i = 0; i < g->ntargets; i++) {
		const struct gc_target *t = g->targets[i];
		bool used = false;

		if (!(sel.kinds & (1u << t->kind)))
			continue;
		for (k = 0; !used && gc_target_holds_vms(t->kind) && k < g->nresources; k++)
			used = g->resources[k]->target == t && keep(&sel, g->resources[k]);
		for (k = 0; !used && gc_target_holds_vms(t->kind) && k < g->nvms; k++)
			used = (g->vms[k].target == NULL || g->vms[k].target == t) &&
			       (match(&sel, g->vms[k].name) || match(&sel, g->vms[k].host));
		if (used || match(&sel, t->name))
			sub_target(sub, t);
	}
	for (i = 0; i < g->nresources; i++) {
		const struct gc_resource *r = g->resources[i];
		struct gc_resource *nr = NULL;

		if (!keep(&sel, r)) {
			dropped++;
			continue;
		}
		if (gc_graph_add(&nr, sub, r->kind, sub_target(sub, r->target), r->id, r->host, r->vm,
				 r->flags, err) != 0) {
			free(map);
			free(seen);
			gc_graph_free(sub);
			return err->code;
		}
		for (k = 0; k < r->nprops; k++)
			gc_resource_set(sub, nr, r->props[k].key, r->props[k].value);
		nr->summary = r->summary ? gc_arena_strdup(&sub->arena, r->summary) : NULL;
		/* and its detail: the PCI address in "passthrough for GPU <pci>" */
		nr->detail = r->detail ? gc_arena_strdup(&sub->arena, r->detail) : NULL;
		nr->mark = r->mark;
		map[i] = nr;
	}
	for (i = 0; i < g->nresources; i++) {
		if (map[i] == NULL)
			continue;
		memset(seen, 0, g->nresources);
		link_through(sub, map, seen, g->resources[i], map[i], &sel);
	}
	for (i = 0; i < g->nvms; i++) {
		struct gc_graph_vm v = g->vms[i];
		enum gc_target_kind vk = v.target ? v.target->kind : GC_TARGET_VCENTER;

		if (!(sel.kinds & (1u << vk)) || !(match(&sel, v.name) || match(&sel, v.host)))
			continue;
		if (v.target != NULL)
			v.target = sub_target(sub, v.target);
		gc_graph_add_vm(sub, &v);
	}
	free(map);
	free(seen);
	*left_out = dropped;
	*out = sub;
	return 0;
}

int gc_exec_scope(struct gc_graph **out, const struct gc_graph *g, unsigned kinds,
		  size_t *left_out, struct gc_error *err)
{
	return gc_exec_scope_select(out, g, kinds, NULL, 0, left_out, err);
}
