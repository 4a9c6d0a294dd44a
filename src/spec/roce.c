/*
 * roce.c - lossless RoCE end to end: each switch's roce section on its own,
 * then every layer that must agree with it.  A guest's roce_qos must mark
 * and trust what the switch classifies (DSCP/8 is the switch priority, the
 * default map of REAL-FORMATS B.6) and pause the switch's lossless priority.
 * Private to src/spec; runs after the VMs are placed.
 */
#include <string.h>

#include "check.h"

static void check_switch(struct check *k, const struct gc_switch *s)
{
	const struct gc_switch_roce *r = s->roce;

	if (r == NULL)
		return;
	if (r->ecn_min_kb >= r->ecn_max_kb)
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &r->ecn_min_kb, r->mark),
			  "ECN marks between min_kb and max_kb of queue depth",
			  "ecn min_kb %u must be below max_kb %u", r->ecn_min_kb, r->ecn_max_kb);
	if (r->cnp_traffic_class == r->priority)
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &r->cnp_traffic_class, r->mark),
			  "CNPs get their own strict traffic class, usually 6",
			  "cnp_traffic_class %d must differ from the lossless priority %d",
			  r->cnp_traffic_class, r->priority);
}

static void check_roce_guest(struct check *k, const struct gc_vm *vm, const struct gc_switch *s)
{
	const struct gc_roce_qos *g = vm->guest->roce_qos;
	const struct gc_switch_roce *r = s->roce;
	int dscp = g->tos >> 2;

	if (g->pfc_priority >= 0 && g->pfc_priority != r->priority)
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &g->pfc_priority, g->mark),
			  gc_arena_printf(k->x->arena, "use pfc_priority: %d", r->priority),
			  "pfc_priority %d does not match the lossless priority %d of switch '%s'",
			  g->pfc_priority, r->priority, q(s->name));
	if (g->trust != NULL && strcmp(g->trust, "pcp") == 0) {
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &g->trust, g->mark), "use trust: dscp",
			  "guest of VM '%s' trusts pcp, but switch '%s' classifies by DSCP",
			  q(vm->name), q(s->name));
		return;
	}
	if (dscp / 8 != r->priority)
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &g->tos, g->mark),
			  gc_arena_printf(k->x->arena, "use tos: %d (DSCP %d)",
					  ((r->priority * 8 + 2) << 2) | 2, r->priority * 8 + 2),
			  "tos %d marks DSCP %d, which maps to priority %d, not the lossless "
			  "priority %d of switch '%s'",
			  g->tos, dscp, dscp / 8, r->priority, q(s->name));
}

void chk_roce(struct check *k)
{
	struct gc_cluster *c = k->c;
	size_t i, j;

	for (i = 0; i < c->nswitches; i++)
		check_switch(k, &c->switches[i]);
	for (i = 0; i < c->nswitches; i++) {
		if (c->switches[i].roce == NULL)
			continue;
		for (j = 0; j < c->nvms; j++) {
			if (c->vms[j].guest != NULL && c->vms[j].guest->roce_qos != NULL)
				check_roce_guest(k, &c->vms[j], &c->switches[i]);
		}
	}
}
