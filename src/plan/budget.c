/*
 * budget.c - rolling.max_unavailable_vms: how many VMs are out of service
 * at once.
 *
 * A VM powered off for its own changes, on a host without a maintenance
 * window, is a window of its own (synth.c records it in vm_off/vm_on);
 * this file orders those windows so that at most the budget of them is
 * open at once, one VM role after the other.
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

/*
 * rolling.max_unavailable_vms: VMs powered off for their own changes (on
 * hosts without a maintenance window; those roll with their hosts) are
 * rolled in groups of their role, in spec order: within a role, VM k is
 * powered off only after VM k-N is back on (N the budget, a percentage of
 * the role's windows rounded down, at least 1), so at most N are off at
 * once; a role starts only after the role before it is back on, so a
 * master is never down with its workers.
 */
void plan_budget_vms(struct builder *b)
{
	size_t n = b->g->nvms, norder = 0, prev = 0, nprev = 0;
	unsigned want = b->g->rolling.max_unavailable_vms ? b->g->rolling.max_unavailable_vms : 1;
	bool pct = b->g->rolling.max_unavailable_vms_pct;
	const char **role = vm_roles(b);
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
			}
		}
		/* the next role waits for this one's last windows: the earlier ones
		 * came back before those started */
		nprev = size < budget ? size : budget;
		prev = norder - nprev;
	}
	free(order);
	free(taken);
	free(role);
}
