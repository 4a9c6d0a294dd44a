/*
 * scope.c - `--only KINDS`: the part of the resource graph on the selected
 * target kinds, as a graph of its own.
 *
 * Resources on other target kinds are left out entirely, so they are not
 * observed, planned or shown.  An edge that ran through left-out resources
 * (host prep -> DVS -> vmknic tag) is kept as a direct edge between the kept
 * ends, so the order among kept resources is exactly the full graph's.  VMs
 * are kept for the planner only when vCenter targets are selected.
 */
#include <stdlib.h>
#include <string.h>

#include "gc/exec.h"
#include "gc/graph.h"

static bool keep(unsigned kinds, const struct gc_resource *r)
{
	return (kinds & (1u << r->target->kind)) != 0;
}

/* Link every kept ancestor of `from` (through left-out resources) to `to`. */
static void link_through(struct gc_graph *sub, struct gc_resource **map, unsigned char *seen,
			 const struct gc_resource *from, struct gc_resource *to, unsigned kinds)
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

int gc_exec_scope(struct gc_graph **out, const struct gc_graph *g, unsigned kinds,
		  size_t *left_out, struct gc_error *err)
{
	struct gc_graph *sub;
	struct gc_resource **map;
	unsigned char *seen;
	size_t i, k, dropped = 0;

	gc_graph_new(&sub);
	sub->cluster = g->cluster;
	sub->rolling = g->rolling;
	map = gc_xcalloc(g->nresources ? g->nresources : 1, sizeof(*map));
	seen = gc_xcalloc(g->nresources ? g->nresources : 1, 1);
	for (i = 0; i < g->ntargets; i++) {
		const struct gc_target *t = g->targets[i];
		struct gc_target *nt;

		if (!(kinds & (1u << t->kind)))
			continue;
		nt = gc_graph_add_target(sub, t->kind, t->name);
		nt->host = t->host;
		nt->sw = t->sw;
		nt->vm = t->vm;
	}
	for (i = 0; i < g->nresources; i++) {
		const struct gc_resource *r = g->resources[i];
		struct gc_resource *nr = NULL;

		if (!keep(kinds, r)) {
			dropped++;
			continue;
		}
		if (gc_graph_add(&nr, sub, r->kind, gc_graph_target(sub, r->target->kind, r->target->name),
				 r->id, r->host, r->vm, r->flags, err) != 0) {
			free(map);
			free(seen);
			gc_graph_free(sub);
			return err->code;
		}
		for (k = 0; k < r->nprops; k++)
			gc_resource_set(sub, nr, r->props[k].key, r->props[k].value);
		nr->summary = r->summary ? gc_arena_strdup(&sub->arena, r->summary) : NULL;
		nr->mark = r->mark;
		map[i] = nr;
	}
	for (i = 0; i < g->nresources; i++) {
		if (map[i] == NULL)
			continue;
		memset(seen, 0, g->nresources);
		link_through(sub, map, seen, g->resources[i], map[i], kinds);
	}
	if (kinds & (1u << GC_TARGET_VCENTER)) {
		for (i = 0; i < g->nvms; i++)
			gc_graph_add_vm(sub, &g->vms[i]);
	}
	free(map);
	free(seen);
	*left_out = dropped;
	*out = sub;
	return 0;
}
