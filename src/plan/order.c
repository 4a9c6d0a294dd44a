/*
 * order.c - from a bag of actions with dependencies to an ordered plan.
 *
 *   1. Kahn's algorithm with a min-heap on creation order: one deterministic
 *      topological order (resource actions in graph order, synthesized steps
 *      as soon as they may run).  Leftovers mean a cycle: name it.
 *   2. Chains: consecutive actions of one connection (ESXi host, switch,
 *      guest; one VM on the vCenter) get an explicit edge, in that order.
 *   3. Number (seq), compute waves (an action's wave is the latest of its
 *      own minimum - its host's maintenance batch - and its deps' waves),
 *      the critical path, the stats, and group by wave then target.
 */
#include <stdlib.h>
#include <string.h>

#include "gc/heap.h"
#include "plan_int.h"

static void put2(struct gc_buf *out, const char *what, const char *name)
{
	gc_buf_puts(out, what);
	gc_buf_puts_s(out, name);
}

void gc_action_describe(struct gc_buf *out, const struct gc_action *a)
{
	switch (a->kind) {
	case GC_ACT_APPLY:
		gc_buf_puts(out, gc_op_symbol(a->op));
		gc_buf_putc(out, ' ');
		gc_buf_puts_s(out, a->resource_id);
		return;
	case GC_ACT_ENTER_MAINTENANCE:
		put2(out, "enter maintenance mode on ", a->target->name);
		return;
	case GC_ACT_EXIT_MAINTENANCE:
		put2(out, "exit maintenance mode on ", a->target->name);
		return;
	case GC_ACT_REBOOT:
		put2(out, "reboot ", a->target->name);
		return;
	case GC_ACT_WAIT_HOST:
		put2(out, "wait for ", a->target->name);
		return;
	case GC_ACT_VERIFY:
		put2(out, "verify ", a->target->name);
		return;
	case GC_ACT_POWER_OFF:
		put2(out, "power off ", a->vm ? a->vm : "?");
		return;
	case GC_ACT_POWER_ON:
		put2(out, "power on ", a->vm ? a->vm : "?");
		return;
	case GC_ACT_MIGRATE:
		if (a->dest_host != NULL && a->host != NULL && strcmp(a->dest_host, a->host) != 0)
			gc_buf_printf(out, "migrate %s off %s to %s", a->vm, a->host, a->dest_host);
		else if (a->dest_host != NULL)
			gc_buf_printf(out, "migrate %s back to %s", a->vm, a->dest_host);
		else
			gc_buf_printf(out, "migrate %s off %s", a->vm, a->host ? a->host : "?");
		return;
	}
}

/* Walk deps backwards inside the unordered remainder until one repeats. */
static int report_cycle(struct builder *b)
{
	size_t n = b->n, len = 0, start = n;
	size_t *seen = gc_xcalloc(n, sizeof(*seen));
	struct gc_action **path = gc_xcalloc(n + 1, sizeof(*path));
	struct gc_action *a;
	struct gc_buf s = GC_BUF_INIT;
	int rc;

	for (size_t i = 0; i < n && start == n; i++)
		if (b->list[i]->nin > 0)
			start = i;
	a = b->list[start];
	while (seen[a->seq] == 0) {
		seen[a->seq] = ++len;
		path[len - 1] = a;
		for (struct gc_action_link *l = a->in; l != NULL; l = l->next) {
			if (l->a->nin > 0) {
				a = l->a;
				break;
			}
		}
	}
	gc_action_describe(&s, a);
	for (size_t i = len; i-- > seen[a->seq] - 1;) {
		gc_buf_puts(&s, " -> ");
		gc_action_describe(&s, path[i]);
	}
	rc = gc_error_set(b->err, GC_ECYCLE, "plan has a cycle: %s", gc_buf_str(&s));
	gc_buf_free(&s);
	free(seen);
	free(path);
	return rc;
}

static int sort_actions(struct builder *b, struct gc_action **ord)
{
	/* creation indexes (a->seq until step 3: b->list[a->seq] is a) */
	struct gc_heap h = {gc_xcalloc(b->n + 1, sizeof(*h.v)), 0};
	size_t k = 0, c = 0; /* the scan: every ready action below c is in the heap */

	/* as gc_graph_toposort: the scan finds the ready actions at or past
	 * c in creation order, the heap holds those that got ready behind it */
	for (;;) {
		struct gc_action *a;

		if (h.n > 0) {
			a = b->list[gc_heap_pop(&h)];
		} else {
			while (c < b->n && b->list[c]->nin != 0)
				c++;
			if (c == b->n)
				break;
			a = b->list[c++];
		}
		ord[k++] = a;
		for (struct gc_action_link *l = a->out; l != NULL; l = l->next)
			if (--l->a->nin == 0 && l->a->seq < c)
				gc_heap_push(&h, l->a->seq);
	}
	free(h.v);
	if (k < b->n)
		return report_cycle(b);
	return 0;
}

/* One chain per connection; the vCenter chains per VM. */
static void add_chains(struct builder *b, struct gc_action **ord)
{
	size_t nt = b->g->ntargets + 1;
	struct gc_action **last = gc_xcalloc(nt, sizeof(*last));
	struct gc_strmap *vmlast = gc_strmap_new();

	for (size_t i = 0; i < b->n; i++) {
		struct gc_action *a = ord[i];

		if (gc_target_holds_vms(a->target->kind)) {
			if (a->vm != NULL)
				plan_dep(b, gc_strmap_put(vmlast, a->vm, a), a);
			continue;
		}
		plan_dep(b, last[a->target->index], a);
		last[a->target->index] = a;
	}
	gc_strmap_free(vmlast);
	free(last);
}

/* Deps by seq; lists are short (a handful), so insertion sort. */
static void sort_deps(struct gc_action **v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct gc_action *x = v[i];
		size_t j = i;

		for (; j > 0 && v[j - 1]->seq > x->seq; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/*
 * Number the actions, give each its wave and deps array, and measure the
 * critical path: waves are barriers, so it is the sum over waves of the
 * longest dependency chain inside each wave.
 */
static void number(struct builder *b, struct gc_action **ord)
{
	struct gc_plan *p = b->p;
	size_t *cp = gc_xcalloc(b->n + 1, sizeof(*cp));      /* by final position */
	size_t *wavelen = gc_xcalloc(b->n + 1, sizeof(*wavelen)); /* by wave */

	for (size_t i = 0; i < b->n; i++) {
		struct gc_action *a = ord[i];
		size_t wave = b->minwave[a->seq], k = 0, best = 0;

		for (struct gc_action_link *l = a->in; l != NULL; l = l->next) {
			if (l->a->wave > wave)
				wave = l->a->wave;
			k++;
		}
		a->wave = wave;
		a->seq = i + 1;
		a->deps = gc_arena_alloc(&p->arena, (k ? k : 1) * sizeof(*a->deps));
		for (struct gc_action_link *l = a->in; l != NULL; l = l->next) {
			a->deps[a->ndeps++] = l->a;
			if (l->a->wave == wave && cp[l->a->seq - 1] > best)
				best = cp[l->a->seq - 1];
		}
		sort_deps(a->deps, a->ndeps);
		cp[i] = best + 1;
		if (cp[i] > wavelen[wave])
			wavelen[wave] = cp[i];
		switch (a->op) {
		case GC_OP_NONE:
			p->stats.synthesized++;
			break;
		case GC_OP_CREATE:
			p->stats.add++;
			break;
		case GC_OP_UPDATE:
			p->stats.change++;
			break;
		case GC_OP_DELETE:
			p->stats.destroy++;
			break;
		}
	}
	for (size_t w = 0; w < b->n; w++)
		p->stats.critical_path += wavelen[w];
	free(wavelen);
	free(cp);
}

/* Stable counting sort of n actions by target index or by wave (< nkeys). */
static void counting_sort(struct gc_action **dst, struct gc_action **src, size_t n, size_t nkeys,
			  bool by_wave)
{
	size_t *start = gc_xcalloc(nkeys + 1, sizeof(*start));

	for (size_t i = 0; i < n; i++)
		start[(by_wave ? src[i]->wave : src[i]->target->index) + 1]++;
	for (size_t k = 0; k < nkeys; k++)
		start[k + 1] += start[k];
	for (size_t i = 0; i < n; i++)
		dst[start[by_wave ? src[i]->wave : src[i]->target->index]++] = src[i];
	free(start);
}

static void cut_waves(struct builder *b, struct gc_action **ord)
{
	struct gc_plan *p = b->p;
	struct gc_action **v = gc_xcalloc(b->n + 1, sizeof(*v));
	struct gc_action **tmp = gc_xcalloc(b->n + 1, sizeof(*tmp));
	size_t i = 0, ntk = b->g->ntargets + 1, nw = 0;

	/* (wave, target, seq) order by two stable counting sorts of the seq order */
	for (size_t k = 0; k < b->n; k++)
		if (ord[k]->wave + 1 > nw)
			nw = ord[k]->wave + 1;
	counting_sort(tmp, ord, b->n, ntk, false);
	counting_sort(v, tmp, b->n, nw, true);
	free(tmp);
	p->nwaves = nw;
	p->waves = gc_arena_alloc(&p->arena, (p->nwaves ? p->nwaves : 1) * sizeof(*p->waves));
	while (i < b->n) {
		size_t w = v[i]->wave, j = i, nt = 0, nh = 0;
		struct gc_plan_wave *pw = &p->waves[w];

		/* this wave is v[i..j) */
		while (j < b->n && v[j]->wave == w) {
			if (j == i || v[j]->target != v[j - 1]->target)
				nt++;
			if (v[j]->kind == GC_ACT_ENTER_MAINTENANCE)
				nh++;
			j++;
		}
		pw->targets = gc_arena_alloc(&p->arena, nt * sizeof(*pw->targets));
		pw->maintenance_hosts = gc_arena_alloc(&p->arena, (nh ? nh : 1) * sizeof(char *));
		for (size_t k = i; k < j; k++) {
			struct gc_plan_target *t;

			if (k == i || v[k]->target != v[k - 1]->target) {
				t = &pw->targets[pw->ntargets++];
				t->target = v[k]->target;
				t->actions = &v[k];
			}
			pw->targets[pw->ntargets - 1].nactions++;
			if (v[k]->kind == GC_ACT_ENTER_MAINTENANCE)
				pw->maintenance_hosts[pw->nmaintenance_hosts++] = v[k]->target->name;
		}
		i = j;
	}
	/* the waves point into the grouped copy; p->actions stays in seq order */
	p->by_wave = v;
	p->actions = gc_xcalloc(b->n + 1, sizeof(*p->actions));
	memcpy(p->actions, ord, b->n * sizeof(*p->actions));
	p->nactions = b->n;
}

int plan_order(struct builder *b)
{
	struct gc_action **ord = gc_xcalloc(b->n + 1, sizeof(*ord));
	int rc;

	rc = sort_actions(b, ord);
	if (rc != 0)
		goto out;
	add_chains(b, ord);
	number(b, ord);
	cut_waves(b, ord);
out:
	free(ord);
	return rc;
}
