/*
 * budget.c - rolling.max_unavailable_vms: how many VMs are out of service,
 * or on the move, at once.
 *
 * Two kinds of VM windows share the budget N (a number, or a percentage of
 * the windows of the VM's role, rounded down, at least 1):
 *
 *   - evacuations (synth.c records them in b->evac): a VM off from before
 *     its host enters maintenance mode until it is powered on after the
 *     host's exit (it cannot be live-migrated, no host can take it, or its
 *     own changes need it off anyway);
 *   - own windows (b->vm_off/vm_on): a VM powered off for its own changes
 *     on a host without a maintenance window.
 *
 * Evacuations are ordered by wave, host (spec order, as the waves take
 * them), then VM (spec order; unmanaged VMs after).  The executor runs
 * wave after wave, so windows of different waves never overlap and edges
 * are added only inside a wave.  There the windows of a role take N lanes:
 * window k's power-off waits for the power-on of the one before it in its
 * lane, window k-N, so at most N are off at once.  Windows of one host
 * cannot wait for each other (the host's exit needs them all off): a host
 * that needs more than N of a role off at once, or VMs of different roles,
 * takes the whole budget - its power-offs wait for every window open
 * before it, and the windows after it for all of its - and the plan warns.
 * A VM of another role (or none against a role) than the windows before it
 * waits for all of them: a master is never down with its workers.
 *
 * A vMotion leaves its VM in service, so it holds no lane for the window;
 * but at most N are in flight: per wave the migrations off, in the order
 * above, then the migrations back, and vMotion k starts when vMotion k-N
 * is done.
 *
 * Own windows come after the evacuations: the first ones wait for the last
 * wave's evacuated VMs to be back on; then, as before, they are grouped by
 * role in spec order, VM k of a role waits for VM k-N of the role and a
 * role for the last windows of the role before it.
 *
 * Why no edge closes a cycle: each edge leaves a window's power-on or a
 * migration for a later window's power-off or migration (a migration back
 * comes after every migration off of its wave), never between two steps of
 * one host's window, so only a path from a later window back to an earlier
 * one could close one.  Inside a wave there is none: a host's changes
 * depend on its own and the vCenter's resources, a VM's on those of its
 * spec host and the vCenter, never on another host's window, and nothing
 * after a host's exit leads to a power-off or a migration off.  Across
 * waves paths run forward only (a vMotion destination in a later wave
 * waits for the VM's return, one in an earlier wave has left maintenance
 * before it arrives).  A VM's own window may wait for a maintenance window
 * (a VM whose spec host has one waits for that host's exit) but no
 * maintenance window waits for a VM's own change: so own windows come last.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "plan_int.h"

static void why_more(struct builder *b, struct gc_action *a, const char *fmt, ...) GC_PRINTF(3, 4);

/* "<a's why>; <more>" */
static void why_more(struct builder *b, struct gc_action *a, const char *fmt, ...)
{
	va_list ap;

	gc_buf_reset(&b->scratch);
	gc_buf_printf(&b->scratch, "%s; ", a->why);
	va_start(ap, fmt);
	gc_buf_vprintf(&b->scratch, fmt, ap);
	va_end(ap);
	a->why = gc_arena_strndup(&b->p->arena, gc_buf_str(&b->scratch), b->scratch.len);
}

/* The role of each managed VM (by gc_graph.vms index), from the spec. */
static const char **vm_roles(struct builder *b)
{
	const struct gc_cluster *c = b->g->cluster;
	const char **role = gc_xcalloc(b->g->nvms + 1, sizeof(*role));

	for (size_t i = 0; c != NULL && i < c->nvms; i++) {
		struct vmstate *vs = plan_vmstate(b, c->vms[i].name);

		if (vs != NULL)
			role[vs - b->vms] = c->vms[i].role;
	}
	return role;
}

static bool same_role(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* ---------------------------------------------------------------- evacuations */

struct roll {
	struct builder *b;
	const char **role; /* by gc_graph.vms index */
	unsigned want;
	bool pct;
	const char **roles; /* the distinct roles of the power-offs, and their counts */
	size_t *nrole, nroles;
	struct evac **tail; /* per lane: the last window in it, or NULL */
	size_t nlanes, next, maxlanes; /* maxlanes: the power-offs' count */
	bool in_run;          /* lanes of run_role are in use */
	const char *run_role;
	struct evac **bar; /* what a fresh lane waits for: every window open before */
	size_t nbar;
	const char *bar_why; /* "after worker-01 is back on (...)" */
};

static const char *role_of(const struct roll *r, const struct evac *e)
{
	return e->order < r->b->g->nvms ? r->role[e->order] : NULL;
}

static size_t budget_of(const struct roll *r, size_t nwindows)
{
	size_t n = r->pct ? nwindows * r->want / 100 : r->want;

	return n < 1 ? 1 : n;
}

/* N for a role's evacuation power-offs */
static size_t role_budget(const struct roll *r, const char *role)
{
	for (size_t i = 0; i < r->nroles; i++)
		if (same_role(r->roles[i], role))
			return budget_of(r, r->nrole[i]);
	return budget_of(r, 1);
}

static void count_roles(struct roll *r, struct evac **v, size_t n)
{
	r->roles = gc_xcalloc(n + 1, sizeof(*r->roles));
	r->nrole = gc_xcalloc(n + 1, sizeof(*r->nrole));
	for (size_t i = 0; i < n; i++) {
		const char *role = role_of(r, v[i]);
		size_t k;

		for (k = 0; k < r->nroles && !same_role(r->roles[k], role); k++)
			;
		if (k == r->nroles)
			r->roles[r->nroles++] = role;
		r->nrole[k]++;
	}
}

/* "a", "a and b", "a, b and c", "a, b, c and 2 more" */
static void names(struct gc_buf *s, struct evac **v, size_t n)
{
	for (size_t i = 0; i < n && i < 3; i++) {
		if (i > 0)
			gc_buf_puts(s, i + 1 == n ? " and " : ", ");
		gc_buf_puts(s, v[i]->vm);
	}
	if (n > 3)
		gc_buf_printf(s, " and %zu more", n - 3);
}

/* How a why line names the barrier: the role before (a role change), or
 * its VMs */
static const char *set_bar_why(struct roll *r, const char *role_before)
{
	struct gc_buf s = GC_BUF_INIT;
	const char *why;

	if (role_before != NULL) {
		gc_buf_printf(&s, "after the VMs of role '%s' are back on", role_before);
	} else {
		gc_buf_puts(&s, "after ");
		names(&s, r->bar, r->nbar);
		gc_buf_printf(&s, " %s back on (rolling.max_unavailable_vms: %u%s)",
			      r->nbar == 1 ? "is" : "are", r->want, r->pct ? "%" : "");
	}
	why = gc_arena_strndup(&r->b->p->arena, gc_buf_str(&s), s.len);
	gc_buf_free(&s);
	return why;
}

/* The lanes in use become the barrier (a role change says so in its why). */
static void end_run(struct roll *r, bool role_change)
{
	size_t n = 0;

	if (!r->in_run)
		return;
	for (size_t l = 0; l < r->nlanes; l++) {
		if (r->tail[l] != NULL)
			r->bar[n++] = r->tail[l];
		r->tail[l] = NULL;
	}
	r->nbar = n;
	r->in_run = false;
	if (role_change)
		r->bar_why = set_bar_why(r, r->run_role ? r->run_role : "(none)");
	else
		r->bar_why = set_bar_why(r, NULL);
}

static void wait_bar(struct roll *r, struct evac *e)
{
	for (size_t k = 0; k < r->nbar; k++)
		plan_dep(r->b, r->bar[k]->on, e->off);
	if (r->nbar > 0)
		why_more(r->b, e->off, "%s", r->bar_why);
}

static void reason(struct gc_buf *s, struct evac **g, size_t m, enum evac_why why)
{
	struct evac **v = gc_xcalloc(m + 1, sizeof(*v));
	const char **detail = gc_xcalloc(m + 1, sizeof(*detail));
	size_t n = 0, nd = 0;

	for (size_t k = 0; k < m; k++) {
		const char *d = g[k]->detail ? g[k]->detail : "not migratable";
		size_t i;

		if (g[k]->why != why)
			continue;
		v[n++] = g[k];
		for (i = 0; i < nd && strcmp(detail[i], d) != 0; i++)
			;
		if (i == nd)
			detail[nd++] = d;
	}
	if (n == 0)
		goto out;
	gc_buf_puts(s, s->len ? "; " : "");
	switch (why) {
	case EVAC_PINNED:
		if (n == m)
			gc_buf_puts(s, "they");
		else
			names(s, v, n);
		gc_buf_puts(s, " cannot be live-migrated (");
		for (size_t i = 0; i < nd && i < 3; i++)
			gc_buf_printf(s, "%s%s", i ? ", " : "", detail[i]);
		if (nd > 3)
			gc_buf_printf(s, " and %zu more", nd - 3);
		gc_buf_putc(s, ')');
		break;
	case EVAC_NO_DEST:
		gc_buf_puts(s, "no host can take ");
		if (n == m)
			gc_buf_puts(s, "them");
		else
			names(s, v, n);
		gc_buf_puts(s, " by vMotion");
		break;
	case EVAC_NO_VMOTION:
		gc_buf_puts(s, "rolling.allow_vmotion is false");
		break;
	case EVAC_OWN:
		if (n == m) {
			gc_buf_puts(s, "their own changes need them off");
		} else {
			gc_buf_puts(s, "own changes need ");
			names(s, v, n);
			gc_buf_puts(s, " off");
		}
		break;
	}
out:
	free(detail);
	free(v);
}

/* "esx01's maintenance powers off 2 VMs at once (w1, w2), over
 * rolling.max_unavailable_vms: 1: they cannot be live-migrated (...)" */
static void warn_host(struct roll *r, struct evac **g, size_t m, bool over, bool mixed)
{
	struct gc_buf s = GC_BUF_INIT, why = GC_BUF_INIT;
	const char **roles = gc_xcalloc(m + 1, sizeof(*roles));
	size_t nroles = 0;

	gc_buf_printf(&s, "%s's maintenance powers off %zu VMs at once (", g[0]->off->host, m);
	for (size_t k = 0; k < m && k < 3; k++)
		gc_buf_printf(&s, "%s%s", k ? ", " : "", g[k]->vm);
	if (m > 3)
		gc_buf_printf(&s, " and %zu more", m - 3);
	gc_buf_putc(&s, ')');
	if (over)
		gc_buf_printf(&s, ", over rolling.max_unavailable_vms: %u%s", r->want,
			      r->pct ? "%" : "");
	if (mixed) {
		gc_buf_puts(&s, over ? " and of different roles (" : ", of different roles (");
		for (size_t k = 0; k < m; k++) {
			const char *role = role_of(r, g[k]);
			size_t i;

			for (i = 0; i < nroles && !same_role(roles[i], role); i++)
				;
			if (i < nroles)
				continue;
			roles[nroles++] = role;
			gc_buf_printf(&s, "%s%s", i ? ", " : "", role ? role : "(none)");
		}
		gc_buf_putc(&s, ')');
	}
	for (enum evac_why w = EVAC_PINNED; w <= EVAC_OWN; w++)
		reason(&why, g, m, w);
	plan_warn(r->b, "%s: %s", gc_buf_str(&s), gc_buf_str(&why));
	free(roles);
	gc_buf_free(&why);
	gc_buf_free(&s);
}

/* The power-offs of one host (g[0..m)), in a wave. */
static void roll_host(struct roll *r, struct evac **g, size_t m)
{
	const char *role = role_of(r, g[0]);
	bool mixed = false, over = false;

	for (size_t k = 0; k < m; k++) {
		size_t same = 0;

		mixed = mixed || !same_role(role_of(r, g[k]), role);
		for (size_t i = 0; i < m; i++)
			same += same_role(role_of(r, g[i]), role_of(r, g[k]));
		over = over || same > role_budget(r, role_of(r, g[k]));
	}
	if (over || mixed) {
		/* the whole budget: after every window before, before every after */
		warn_host(r, g, m, over, mixed);
		end_run(r, false);
		for (size_t k = 0; k < m; k++)
			wait_bar(r, g[k]);
		memcpy(r->bar, g, m * sizeof(*g));
		r->nbar = m;
		r->bar_why = set_bar_why(r, NULL);
		return;
	}
	if (r->in_run && !same_role(r->run_role, role))
		end_run(r, true);
	if (!r->in_run) {
		r->in_run = true;
		r->run_role = role;
		r->nlanes = role_budget(r, role);
		if (r->nlanes > r->maxlanes)
			r->nlanes = r->maxlanes; /* more lanes than windows stay empty */
		r->next = 0;
	}
	for (size_t k = 0; k < m; k++) {
		struct evac *t = r->tail[r->next];

		if (t != NULL) {
			plan_dep(r->b, t->on, g[k]->off);
			why_more(r->b, g[k]->off,
				 "after %s is back on (rolling.max_unavailable_vms: %u%s)", t->vm,
				 r->want, r->pct ? "%" : "");
		} else {
			wait_bar(r, g[k]);
		}
		r->tail[r->next] = g[k];
		r->next = (r->next + 1) % r->nlanes;
	}
}

/* vMotion k of a wave (its migrations off, then back) after vMotion k-N. */
static void roll_vmotions(struct roll *r, struct evac **v, size_t n, size_t budget)
{
	for (size_t k = budget; k < 2 * n; k++) {
		struct evac *pe = v[(k - budget) % n], *e = v[k % n];
		bool pback = k - budget >= n, back = k >= n;
		struct gc_action *prev = pback ? pe->on : pe->off, *a = back ? e->on : e->off;

		if (back && !pback && pe->w == e->w)
			continue; /* the host's window orders them already */
		plan_dep(r->b, prev, a);
		why_more(r->b, a, "after %s's vMotion %s %s (rolling.max_unavailable_vms: %u%s)",
			 pe->vm, pback ? "back to" : "off", pe->off->host, r->want, r->pct ? "%" : "");
	}
}

static int evac_cmp(const void *x, const void *y)
{
	const struct evac *a = *(struct evac *const *)x, *b = *(struct evac *const *)y;

	if (a->w->batch != b->w->batch)
		return a->w->batch < b->w->batch ? -1 : 1;
	if (a->w != b->w)
		return a->w < b->w ? -1 : 1; /* the same array, in target order */
	if (a->order != b->order)
		return a->order < b->order ? -1 : 1;
	return (a->off->seq > b->off->seq) - (a->off->seq < b->off->seq);
}

/* Roll the evacuations; r->bar is left holding the last wave's last
 * power-offs (what the VMs' own windows wait for). */
static void roll_evacuations(struct roll *r)
{
	struct builder *b = r->b;
	struct evac **off = gc_xcalloc(b->nevac + 1, sizeof(*off));
	struct evac **mig = gc_xcalloc(b->nevac + 1, sizeof(*mig));
	size_t noff = 0, nmig = 0, mbudget;

	for (size_t i = 0; i < b->nevac; i++) {
		if (b->evac[i].off->kind == GC_ACT_MIGRATE)
			mig[nmig++] = &b->evac[i];
		else
			off[noff++] = &b->evac[i];
	}
	qsort(off, noff, sizeof(*off), evac_cmp);
	qsort(mig, nmig, sizeof(*mig), evac_cmp);
	count_roles(r, off, noff);
	r->maxlanes = noff;
	r->tail = gc_xcalloc(noff + 1, sizeof(*r->tail));
	r->bar = gc_xcalloc(noff + 1, sizeof(*r->bar));
	for (size_t i = 0, j; i < noff; i = j) {
		for (j = i + 1; j < noff && off[j]->w->batch == off[i]->w->batch; j++)
			;
		r->nbar = 0; /* the wave before is done: waves are barriers */
		for (size_t h = i, k; h < j; h = k) {
			for (k = h + 1; k < j && off[k]->w == off[h]->w; k++)
				;
			roll_host(r, off + h, k - h);
		}
		end_run(r, false);
	}
	mbudget = budget_of(r, nmig);
	for (size_t i = 0, j; i < nmig; i = j) {
		for (j = i + 1; j < nmig && mig[j]->w->batch == mig[i]->w->batch; j++)
			;
		roll_vmotions(r, mig + i, j - i, mbudget);
	}
	free(off);
	free(mig);
}

/* ---------------------------------------------------------------- own windows */

/*
 * VMs powered off for their own changes on hosts without a maintenance
 * window, after the evacuations (r->bar: the last ones), grouped by role
 * in spec order: within a role, VM k is powered off only after VM k-N is
 * back on, so at most N are off at once; a role starts only after the role
 * before it is back on, so a master is never down with its workers.
 */
static void roll_own_windows(struct roll *r)
{
	struct builder *b = r->b;
	size_t n = b->g->nvms, norder = 0, prev = 0, nprev = 0;
	unsigned want = r->want;
	bool pct = r->pct;
	const char **role = r->role;
	size_t *order = gc_xcalloc(n + 1, sizeof(*order));
	bool *taken = gc_xcalloc(n + 1, sizeof(*taken));

	for (size_t i = 0; i < n; i++) {
		size_t start = norder, size, budget;

		if (taken[i] || b->vm_off[i] == NULL)
			continue;
		for (size_t j = i; j < n; j++) {
			if (!taken[j] && b->vm_off[j] != NULL && same_role(role[i], role[j])) {
				order[norder++] = j;
				taken[j] = true;
			}
		}
		size = norder - start;
		budget = pct ? size * want / 100 : want;
		if (budget < 1)
			budget = 1;
		for (size_t k = 0; k < size; k++) {
			struct gc_action *off = b->vm_off[order[start + k]];

			if (k >= budget) {
				size_t before = order[start + k - budget];

				plan_dep(b, b->vm_on[before], off);
				why_more(b, off, "after %s is back on (rolling.max_unavailable_vms: %u%s)",
					 b->g->vms[before].name, want, pct ? "%" : "");
			} else if (nprev > 0) {
				for (size_t p = prev; p < prev + nprev; p++)
					plan_dep(b, b->vm_on[order[p]], off);
				why_more(b, off, "after the VMs of role '%s' are back on",
					 role[order[prev]] ? role[order[prev]] : "(none)");
			} else {
				for (size_t p = 0; p < r->nbar; p++)
					plan_dep(b, r->bar[p]->on, off);
				if (r->nbar > 0)
					why_more(b, off, "%s", r->bar_why);
			}
		}
		/* the next role waits for this one's last windows: the earlier ones
		 * came back before those started */
		nprev = size < budget ? size : budget;
		prev = norder - nprev;
	}
	free(order);
	free(taken);
}

void plan_budget_vms(struct builder *b)
{
	struct roll r = {0};

	r.b = b;
	r.role = vm_roles(b);
	r.want = b->g->rolling.max_unavailable_vms ? b->g->rolling.max_unavailable_vms : 1;
	r.pct = b->g->rolling.max_unavailable_vms_pct;
	roll_evacuations(&r);
	roll_own_windows(&r);
	free(r.role);
	free(r.roles);
	free(r.nrole);
	free(r.tail);
	free(r.bar);
}
