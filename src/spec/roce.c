/*
 * roce.c - lossless RoCE end to end: each switch's roce section on its own,
 * then every layer that must agree with it.  A guest's roce_qos must mark
 * and trust what the switch classifies (DSCP/8 is the switch priority, the
 * default map of REAL-FORMATS B.6) and pause the switch's lossless priority.
 * An ESXi host whose RoCE leaves through nmlx5_core (SR-IOV VFs, PVRDMA)
 * follows the first RoCE switch (host.roce_switch, turned into nmlx5_core's
 * trust_state, pfctx, pfcrx and ecn by the graph): one module, one
 * priority for all its ports, so every RoCE switch must agree.
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

static bool roce_mode(enum gc_nic_mode m)
{
	return m == GC_NIC_MODE_SRIOV || m == GC_NIC_MODE_PVRDMA;
}

/*
 * host.roce_switch.  A passed-through NIC is not nmlx5_core's (passthru owns
 * it; the guest's roce_qos sets it up), and a RoCE NIC on another driver
 * gets nothing from gpuclusterctl: warned, since lossless RoCE then stops
 * at the switch.  Returns the first host that follows the switch.
 */
static const struct gc_host *derive_roce_hosts(struct check *k, const struct gc_switch *sw)
{
	const struct gc_host *first = NULL;

	for (size_t i = 0; i < k->c->nhosts; i++) {
		struct gc_host *h = &k->c->hosts[i];

		if (h->hypervisor != GC_HV_ESXI)
			continue;
		for (size_t n = 0; n < h->nnics; n++) {
			const struct gc_host_nic *nic = &h->nics[n];

			if (!roce_mode(nic->mode) || nic->driver == NULL)
				continue;
			if (strcmp(nic->driver, "nmlx5_core") == 0) {
				h->roce_switch = sw;
				continue;
			}
			spec_diag(k->x, GC_SEV_WARNING, fmark(k, &nic->mode, nic->mark),
				  "set its driver's PFC and DSCP trust by hand (ConnectX-3: nmlx4_en "
				  "pfctx/pfcrx), or use a ConnectX-4 or later (nmlx5_core)",
				  "NIC '%s' of host '%s' carries RoCE on %s, which gpuclusterctl "
				  "gives no DSCP trust or PFC: lossless RoCE stops at switch '%s'",
				  q(nic->pci), q(h->name), nic->driver, q(sw->name));
		}
		if (h->roce_switch != NULL && first == NULL)
			first = h;
	}
	return first;
}

/* Every other RoCE switch against the one the hosts follow. */
static void check_roce_hosts(struct check *k, const struct gc_switch *sw, const struct gc_host *h)
{
	const struct gc_switch_roce *r = sw->roce;

	for (size_t i = 0; i < k->c->nswitches; i++) {
		const struct gc_switch *o = &k->c->switches[i];

		if (o == sw || o->roce == NULL)
			continue;
		if (o->roce->priority != r->priority)
			spec_diag(k->x, GC_SEV_ERROR, fmark(k, &o->roce->priority, o->roce->mark),
				  gc_arena_printf(k->x->arena,
						  "an ESXi host's nmlx5_core runs PFC on one priority for "
						  "all its ports: use priority: %d",
						  r->priority),
				  "switch '%s' has lossless priority %d, but the nmlx5_core uplinks of "
				  "host '%s' follow switch '%s' (priority %d)",
				  q(o->name), o->roce->priority, q(h->name), q(sw->name), r->priority);
		else if (o->roce->pfc != r->pfc)
			spec_diag(k->x, GC_SEV_ERROR, fmark(k, &o->roce->pfc, o->roce->mark),
				  gc_arena_printf(k->x->arena,
						  "an ESXi host's nmlx5_core runs PFC for all its ports or "
						  "for none: use pfc: %s",
						  r->pfc ? "true" : "false"),
				  "switch '%s' has pfc: %s, but the nmlx5_core uplinks of host '%s' "
				  "follow switch '%s' (pfc: %s)",
				  q(o->name), o->roce->pfc ? "true" : "false", q(h->name), q(sw->name),
				  r->pfc ? "true" : "false");
	}
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
	for (i = 0; i < c->nswitches; i++) {
		const struct gc_host *h;

		if (c->switches[i].roce == NULL)
			continue;
		if ((h = derive_roce_hosts(k, &c->switches[i])) != NULL)
			check_roce_hosts(k, &c->switches[i], h);
		break;
	}
}
