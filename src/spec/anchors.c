/*
 * anchors.c - a problem inside a YAML anchor is reported once, at the
 * anchor, with a note per host or VM that uses it.
 *
 * The loader (tree.c) resolves an alias (`*w`, `<<: *w`) to the anchored
 * node itself, so parsing and checking each VM that merges a shared piece
 * visits the same nodes again, and a typo there is found once per use: the
 * same diagnostic (severity, position, message, hint) several times.
 * spec_anchor_notes() runs while the document is still loaded.  It keeps the
 * first copy of each and drops the others.  Then, for a kept one whose node
 * the named items of the top-level lists (hosts, vms, switches, ...) reach
 * through an alias, it says which of them it is about:
 *
 *   - a check that knew its subject (x->note_for, the VM whose GPUs gpus.c
 *     was placing) left a note on each copy: the copies' notes, one per VM
 *     the problem is about ("= note: for VM 'w2' at line 19");
 *   - else, when there were as many copies as items reaching it (each use
 *     found it): a note per item, in file order ("= note: used by VM 'w1'
 *     at line 18").
 *
 * A problem in the item's own text needs no note: its subject notes go.
 * Which item reaches which node: a walk per item over what it reaches (a
 * stamp per node, so each node once per item), keys included, stopped after
 * a budget of visits (the copies still go; no "used by" notes then).  At
 * most NOTES_MAX notes are kept, then one says how many more there were.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define VISIT_BUDGET 4000000u /* nodes visited over all items */
#define NOTES_MAX    16       /* notes shown; then "and N more" */

struct item {
	const char *kind; /* "VM" */
	const char *name;
	int line;        /* 1-based */
	size_t from, to; /* byte range of the item's own text */
};

struct kept {
	size_t diag; /* index into x->diags.items */
	size_t copies;
	size_t *users; /* item indexes, in walk order */
	size_t nusers;
};

static int by_identity(const void *a, const void *b, void *arg)
{
	const struct gc_diag *d = arg;
	const struct gc_diag *p = &d[*(const size_t *)a], *q = &d[*(const size_t *)b];
	int c;

	if (p->mark.line != q->mark.line)
		return p->mark.line < q->mark.line ? -1 : 1;
	if (p->mark.col != q->mark.col)
		return p->mark.col < q->mark.col ? -1 : 1;
	if (p->severity != q->severity)
		return p->severity < q->severity ? -1 : 1;
	if ((c = strcmp(p->msg, q->msg)) != 0)
		return c;
	if ((c = strcmp(p->hint ? p->hint : "", q->hint ? q->hint : "")) != 0)
		return c;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1; /* first copy first */
}

static bool same(const struct gc_diag *p, const struct gc_diag *q)
{
	return p->mark.line == q->mark.line && p->mark.col == q->mark.col &&
	       p->severity == q->severity && strcmp(p->msg, q->msg) == 0 &&
	       strcmp(p->hint ? p->hint : "", q->hint ? q->hint : "") == 0;
}

static const char *kind_of(const char *list)
{
	static const char *const words[][2] = {
	    {"hosts", "host"},
	    {"vms", "VM"},
	    {"switches", "switch"},
	    {"credentials", "credential"},
	    {"distributed_switches", "distributed switch"},
	};

	for (size_t i = 0; i < GC_ARRAY_LEN(words); i++)
		if (strcmp(words[i][0], list) == 0)
			return words[i][1];
	return list;
}

static const char *scalar(const struct spec_node *n)
{
	return n->type == SPEC_SCALAR ? n->u.value : NULL;
}

/* The named mappings of the root's lists: `vms: [{name: w1, ...}]`. */
static struct item *named_items(struct spec_ctx *x, size_t *n, struct spec_node ***nodes)
{
	struct spec_node *root = x->root;
	struct item *v = NULL;
	size_t cap = 0;

	*n = 0;
	*nodes = NULL;
	if (root == NULL || root->type != SPEC_MAP)
		return NULL;
	for (struct spec_pair *p = root->u.pairs; p < root->u.pairs + root->n; p++) {
		const char *list = scalar(p->key);
		struct spec_node *seq = p->value;

		if (list == NULL || seq->type != SPEC_SEQ)
			continue;
		for (uint32_t it = 0; it < seq->n; it++) {
			struct spec_node *m = seq->u.items[it];
			const char *name = NULL;

			if (m->type != SPEC_MAP)
				continue;
			for (struct spec_pair *q = m->u.pairs; q < m->u.pairs + m->n; q++)
				if (name == NULL && scalar(q->key) != NULL &&
				    strcmp(scalar(q->key), "name") == 0)
					name = scalar(q->value);
			if (name == NULL)
				continue;
			if (*n == cap) {
				cap = cap ? cap * 2 : 16;
				v = gc_xrealloc(v, cap * sizeof(*v));
				*nodes = gc_xrealloc(*nodes, cap * sizeof(**nodes));
			}
			v[*n] = (struct item){kind_of(list), name, (int)m->line + 1, m->start, m->end};
			(*nodes)[(*n)++] = m;
		}
	}
	return v;
}

/* The kept diagnostics, by position: k[] is in (line, col) order already
 * (drop_copies sorts), so a node's position is found by binary search. */
static int cmp_pos(const struct gc_mark *m, int line, int col)
{
	return m->line != line ? (m->line < line ? -1 : 1) : m->col < col ? -1 : m->col > col;
}

/* Record item `who` as a user of every kept diagnostic at node n's position. */
static void reached(struct kept *k, size_t nk, const struct gc_diags *d, struct spec_node *n, size_t who)
{
	int line = (int)n->line + 1, col = (int)n->col + 1;
	size_t lo = 0, hi = nk;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_pos(&d->items[k[mid].diag].mark, line, col) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < nk && cmp_pos(&d->items[k[lo].diag].mark, line, col) == 0; lo++) {
		if (k[lo].nusers > 0 && k[lo].users[k[lo].nusers - 1] == who)
			continue;
		if ((k[lo].nusers & (k[lo].nusers - 1)) == 0) /* 0, 1, 2, 4, ...: double */
			k[lo].users =
			    gc_xrealloc(k[lo].users, (k[lo].nusers ? k[lo].nusers * 2 : 1) *
			                                 sizeof(*k[lo].users));
		k[lo].users[k[lo].nusers++] = who;
	}
}

/* Walk what item `who` reaches; false when the budget ran out. */
static bool walk(struct spec_ctx *x, const struct item *it, struct spec_node *start, size_t who,
                 unsigned *stamp, struct kept *k, size_t nk, size_t *budget)
{
	size_t cap = 64, top = 0;
	struct spec_node **stack = gc_xmalloc(cap * sizeof(*stack));
	bool ok = true;

	stack[top++] = start;
	while (top > 0) {
		struct spec_node *n = stack[--top];

		if (stamp[n->id] == who + 1)
			continue;
		if ((*budget)-- == 0) {
			ok = false;
			break;
		}
		stamp[n->id] = (unsigned)who + 1;
		if (n->start < it->from || n->start >= it->to)
			reached(k, nk, &x->diags, n, who); /* through an alias */
		if (n->type == SPEC_SEQ) {
			for (uint32_t i = 0; i < n->n; i++) {
				if (top == cap)
					stack = gc_xrealloc(stack, (cap *= 2) * sizeof(*stack));
				stack[top++] = n->u.items[i];
			}
		} else if (n->type == SPEC_MAP) {
			for (struct spec_pair *p = n->u.pairs; p < n->u.pairs + n->n; p++) {
				if (top + 2 > cap)
					stack = gc_xrealloc(stack, (cap *= 2) * sizeof(*stack));
				stack[top++] = p->value;
				stack[top++] = p->key;
			}
		}
	}
	free(stack);
	return ok;
}

/* The notes of copy c go to the kept diagnostic g. */
static void take_notes(struct gc_diag *g, struct gc_diag *c)
{
	if (c->nnotes == 0)
		return;
	g->notes = gc_xrealloc(g->notes, (g->nnotes + c->nnotes) * sizeof(*g->notes));
	for (size_t i = 0; i < c->nnotes; i++)
		g->notes[g->nnotes++] = c->notes[i]; /* now owned by g */
	free(c->notes);
	c->notes = NULL;
	c->nnotes = 0;
}

/* Keep the first copy of each diagnostic (with every copy's notes); returns
 * the kept ones with their counts. */
static struct kept *drop_copies(struct gc_diags *d, size_t *nk)
{
	size_t *order = gc_xcalloc(d->n, sizeof(*order)), w = 0, i;
	bool *gone = gc_xcalloc(d->n, sizeof(*gone));
	struct kept *k = gc_xcalloc(d->n, sizeof(*k));

	for (i = 0; i < d->n; i++)
		order[i] = i;
	qsort_r(order, d->n, sizeof(*order), by_identity, d->items);
	*nk = 0;
	for (i = 0; i < d->n; i++) {
		if (*nk > 0 && same(&d->items[k[*nk - 1].diag], &d->items[order[i]])) {
			k[*nk - 1].copies++;
			take_notes(&d->items[k[*nk - 1].diag], &d->items[order[i]]);
			gone[order[i]] = true;
		} else {
			k[(*nk)++] = (struct kept){order[i], 1, NULL, 0};
		}
	}
	/* compact in place, in the order they were found; kept indexes follow */
	for (i = 0; i < d->n; i++) {
		if (gone[i]) {
			if (d->items[i].severity == GC_SEV_ERROR)
				d->nerrors--;
			free(d->items[i].msg);
			free(d->items[i].hint);
			continue;
		}
		order[i] = w; /* old index -> new */
		d->items[w++] = d->items[i];
	}
	for (i = 0; i < *nk; i++)
		k[i].diag = order[k[i].diag];
	d->n = w;
	free(order);
	free(gone);
	return k;
}

static void add_notes(struct gc_diag *g, const struct kept *k, const struct item *items)
{
	g->notes = gc_xcalloc(k->nusers, sizeof(*g->notes));
	for (size_t i = 0; i < k->nusers; i++) {
		const struct item *it = &items[k->users[i]];

		g->notes[g->nnotes++] =
		    gc_xasprintf("used by %s '%s' at line %d", it->kind, it->name, it->line);
	}
}

static void cap_notes(struct gc_diag *g)
{
	size_t more = g->nnotes - NOTES_MAX;

	if (g->nnotes <= NOTES_MAX)
		return;
	for (size_t i = NOTES_MAX - 1; i < g->nnotes; i++)
		free(g->notes[i]);
	g->notes[NOTES_MAX - 1] = gc_xasprintf("and %zu more", more + 1);
	g->nnotes = NOTES_MAX;
}

void spec_anchor_notes(struct spec_ctx *x)
{
	struct gc_diags *d = &x->diags;
	struct kept *k;
	struct item *items;
	unsigned *stamp;
	struct spec_node **nodes;
	size_t nk, nitems, budget = VISIT_BUDGET, i;
	bool ok = true;

	if (d->n == 0 || x->root == NULL)
		return;
	k = drop_copies(d, &nk);
	items = named_items(x, &nitems, &nodes);
	stamp = gc_xcalloc(x->nnodes + 2, sizeof(*stamp));
	for (i = 0; i < nitems && ok; i++)
		ok = walk(x, &items[i], nodes[i], i, stamp, k, nk, &budget);
	for (i = 0; i < nk; i++) {
		struct gc_diag *g = &d->items[k[i].diag];

		/* its own item's text, not every copy knew its VM, or the walk gave up */
		if (!ok || k[i].nusers == 0 || (g->nnotes > 0 && g->nnotes != k[i].copies))
			spec_diag_free_notes(g);
		if (ok && g->nnotes == 0 && k[i].nusers > 0 && k[i].nusers == k[i].copies)
			add_notes(g, &k[i], items);
		cap_notes(g);
		free(k[i].users);
	}
	free(stamp);
	free(nodes);
	free(items);
	free(k);
}
