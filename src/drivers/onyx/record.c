/*
 * record.c - an observed switch in the shape of the resource graph.
 *
 * The graph gives a switch one resource per diff category (switch.pool,
 * switch.qos_trust, switch.ecn, switch.ets, switch.pfc, switch.lldp,
 * switch.roce; see src/graph/build.c) with desired properties such as
 * ports=1/1-1/32 trust=L3.  The planner's diff is generic (every desired
 * key equal to the observed value = converged), so what we record must be
 * exact: when our own category diff (gc_onyx_diff_only) is empty the
 * desired properties are recorded verbatim (so a spec that writes
 * "1/9,1/1-1/4" does not drift against the switch's "1/1-1/4,1/9");
 * otherwise each property shows what the switch has, and at least one of
 * them is guaranteed to differ so the planner sees the change.
 *
 * When the switch's RoCE config is owned, a category the spec no longer has
 * (pfc: false) but the switch still carries is recorded too: the planner
 * then plans its deletion (src/plan/plan.c diff_deletes), which the driver
 * carries out with the category's `no ...` commands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/onyx.h"

static const struct {
	enum gc_res_kind kind;
	unsigned cat;
} kinds[] = {
	{GC_RES_SWITCH_POOL, GC_ONYX_CAT_POOL}, {GC_RES_SWITCH_QOS_TRUST, GC_ONYX_CAT_TRUST},
	{GC_RES_SWITCH_ECN, GC_ONYX_CAT_ECN},   {GC_RES_SWITCH_ETS, GC_ONYX_CAT_ETS},
	{GC_RES_SWITCH_PFC, GC_ONYX_CAT_PFC},   {GC_RES_SWITCH_LLDP, GC_ONYX_CAT_LLDP},
	{GC_RES_SWITCH_ROCE, GC_ONYX_CAT_ROCE},
};

unsigned gc_onyx_cat_of(enum gc_res_kind kind)
{
	size_t i;

	for (i = 0; i < GC_ARRAY_LEN(kinds); i++) {
		if (kinds[i].kind == kind)
			return kinds[i].cat;
	}
	return 0;
}

/* ---------------------------------------------------------------- helpers */

struct rec {
	struct gc_observed *obs;
	const char *id;
	const struct gc_resource *r; /* desired, or NULL for an owned leftover */
	bool differs;                /* some recorded key differs from desired */
};

static void put(struct rec *x, const char *key, const char *value)
{
	const char *want = x->r ? gc_resource_prop(x->r, key) : NULL;

	if (want == NULL || strcmp(want, value) != 0)
		x->differs = true;
	gc_observed_set(x->obs, x->id, key, value);
}

/* Ports for which pred holds, rendered like the desired "ports" when the
 * sets are equal, else compressed; "none" when empty. */
static void put_ports(struct rec *x, const struct gc_onyx_state *st,
		      bool (*pred)(const struct gc_onyx_port_state *p, const void *arg),
		      const void *arg)
{
	struct gc_onyx_port_id *have = gc_xcalloc(st->nports + 1, sizeof(*have)), *want = NULL;
	struct gc_error err = GC_ERROR_INIT;
	const char *desired = x->r ? gc_resource_prop(x->r, "ports") : NULL;
	struct gc_buf b = GC_BUF_INIT;
	size_t n = 0, nw = 0, i;

	for (i = 0; i < st->nports; i++) {
		if (pred(&st->ports[i], arg))
			have[n++] = st->ports[i].id;
	}
	if (desired && gc_onyx_ports_expand(&want, &nw, desired, &err) == 0 && nw == n &&
	    (n == 0 || memcmp(want, have, n * sizeof(*have)) == 0)) {
		gc_buf_puts(&b, desired);
	} else if (n == 0) {
		gc_buf_puts(&b, "none");
	} else {
		gc_onyx_ports_compress(&b, have, n);
	}
	put(x, "ports", gc_buf_str(&b));
	gc_buf_free(&b);
	free(want);
	free(have);
}

static void put_bits(struct rec *x, const char *key, uint8_t bits)
{
	char s[32] = "";
	size_t k = 0;
	unsigned t;

	for (t = 0; t < 8; t++) {
		if (bits & (1u << t))
			k += (size_t)snprintf(s + k, sizeof(s) - k, "%s%u", k ? " " : "", t);
	}
	put(x, key, k ? s : "none");
}

/* The traffic class a resource is about: its desired one, else the first used. */
static unsigned tc_of(const struct gc_resource *r, const struct gc_onyx_state *st, bool ecn)
{
	const char *v = r ? gc_resource_prop(r, "traffic_class") : NULL;
	size_t i;
	unsigned t;

	if (v && v[0] >= '0' && v[0] <= '7' && v[1] == '\0')
		return (unsigned)(v[0] - '0');
	for (t = 0; t < 8; t++) {
		for (i = 0; i < st->nports; i++) {
			if (ecn ? st->ports[i].cc[t].mode != GC_ONYX_CC_NONE
				: (st->ports[i].ets_strict & (1u << t)) != 0)
				return t;
		}
	}
	return 0;
}

struct tc_want {
	unsigned tc;
	const struct gc_onyx_tc_cc *cc; /* desired ECN, or NULL */
};

static bool has_trust_l3(const struct gc_onyx_port_state *p, const void *arg)
{
	return p->trust == GC_ONYX_TRUST_L3;
}

static bool has_trust_any(const struct gc_onyx_port_state *p, const void *arg)
{
	return p->trust == GC_ONYX_TRUST_L3 || p->trust == GC_ONYX_TRUST_BOTH;
}

static bool has_ecn(const struct gc_onyx_port_state *p, const void *arg)
{
	const struct tc_want *w = arg;
	const struct gc_onyx_tc_cc *c = &p->cc[w->tc];

	if (w->cc == NULL)
		return c->mode != GC_ONYX_CC_NONE;
	return c->mode == w->cc->mode && c->min_kb == w->cc->min_kb && c->max_kb == w->cc->max_kb;
}

static bool has_strict(const struct gc_onyx_port_state *p, const void *arg)
{
	const struct tc_want *w = arg;

	return (p->ets_strict & (1u << w->tc)) != 0;
}

static bool has_pfc_force(const struct gc_onyx_port_state *p, const void *arg)
{
	return p->pfc_force;
}

/* The first desired port (in desired order) for which pred fails, or NULL. */
static const struct gc_onyx_port_state *first_off(
	const struct gc_onyx_state *d, const struct gc_onyx_state *st,
	bool (*pred)(const struct gc_onyx_port_state *p, const void *arg), const void *arg)
{
	static const struct gc_onyx_port_state zero;
	size_t i;

	for (i = 0; i < d->nports; i++) {
		const struct gc_onyx_port_state *p =
			gc_onyx_state_port((struct gc_onyx_state *)st, &d->ports[i].id, false);

		if (p == NULL)
			return &zero;
		if (!pred(p, arg))
			return p;
	}
	return NULL;
}

static const char *trust_text(enum gc_onyx_trust t)
{
	switch (t) {
	case GC_ONYX_TRUST_UNSET: return "L2";
	case GC_ONYX_TRUST_L2: return "L2";
	case GC_ONYX_TRUST_L3: return "L3";
	case GC_ONYX_TRUST_BOTH: return "both";
	}
	return "?";
}

/* ---------------------------------------------------------------- per category */

static void observed_props(struct rec *x, unsigned cat, const struct gc_onyx_desired *dd,
			   const struct gc_onyx_state *st)
{
	const struct gc_onyx_state *d = &dd->st;
	const struct gc_onyx_port_state *off;
	char buf[64];
	struct tc_want w = {0, NULL};

	switch (cat) {
	case GC_ONYX_CAT_POOL:
		put(x, "pool", "roce");
		put(x, "type", st->pool_type[0] ? st->pool_type : "none");
		if (st->pool_percent_x100 >= 0)
			snprintf(buf, sizeof(buf), "%d.%02d", st->pool_percent_x100 / 100,
				 st->pool_percent_x100 % 100);
		put(x, "memory_percent", st->pool_percent_x100 >= 0 ? buf : "none");
		put_bits(x, "switch_priority", st->pool_map);
		return;
	case GC_ONYX_CAT_TRUST:
		put_ports(x, st, x->r ? has_trust_l3 : has_trust_any, NULL);
		off = first_off(d, st, has_trust_l3, NULL);
		put(x, "trust", off ? trust_text(off->trust) : "L3");
		return;
	case GC_ONYX_CAT_ECN:
		w.tc = tc_of(x->r, st, true);
		w.cc = x->r && d->nports ? &d->ports[0].cc[w.tc] : NULL;
		put_ports(x, st, has_ecn, &w);
		snprintf(buf, sizeof(buf), "%u", w.tc);
		put(x, "traffic_class", buf);
		off = w.cc ? first_off(d, st, has_ecn, &w) : NULL;
		if (off == NULL && w.cc) {
			snprintf(buf, sizeof(buf), "%u", w.cc->min_kb);
			put(x, "min_kb", buf);
			snprintf(buf, sizeof(buf), "%u", w.cc->max_kb);
			put(x, "max_kb", buf);
		} else if (off && off->cc[w.tc].mode != GC_ONYX_CC_NONE) {
			snprintf(buf, sizeof(buf), "%u", off->cc[w.tc].min_kb);
			put(x, "min_kb", buf);
			snprintf(buf, sizeof(buf), "%u", off->cc[w.tc].max_kb);
			put(x, "max_kb", buf);
		} else {
			put(x, "min_kb", "none");
			put(x, "max_kb", "none");
		}
		return;
	case GC_ONYX_CAT_ETS:
		w.tc = tc_of(x->r, st, false);
		put_ports(x, st, has_strict, &w);
		snprintf(buf, sizeof(buf), "%u", w.tc);
		put(x, "traffic_class", buf);
		put(x, "mode", first_off(d, st, has_strict, &w) ? "not-strict" : "strict");
		return;
	case GC_ONYX_CAT_PFC:
		put_ports(x, st, has_pfc_force, NULL);
		put_bits(x, "priority", st->pfc_priorities);
		put(x, "enabled", st->pfc_enabled ? "true" : "false");
		put(x, "port_mode", first_off(d, st, has_pfc_force, NULL) ? "auto" : "on-force");
		return;
	case GC_ONYX_CAT_LLDP:
		put(x, "enabled", st->lldp ? "true" : "false");
		return;
	case GC_ONYX_CAT_ROCE:
		put(x, "mode", st->roce_mode[0] ? st->roce_mode : "none");
		return;
	}
}

static bool converged(const struct gc_onyx_desired *d, const struct gc_onyx_state *st, bool owned,
		      unsigned cat)
{
	struct gc_onyx_cmds c = {NULL, 0};
	struct gc_error err = GC_ERROR_INIT;
	bool same;

	if (gc_onyx_diff_only(&c, d, st, owned, cat, &err) != 0)
		return false;
	same = c.n == 0;
	gc_onyx_cmds_free(&c);
	return same;
}

static void record_one(struct gc_observed *obs, const char *id, const struct gc_resource *r,
		       unsigned cat, const struct gc_onyx_desired *d,
		       const struct gc_onyx_state *st)
{
	struct rec x = {obs, id, r, false};
	size_t i;

	observed_props(&x, cat, d, st);
	if (!x.differs && r && r->nprops > 0) {
		/* the switch carries more than the spec wants (owned removals) */
		char *v = gc_xasprintf("%s (+ other settings)", r->props[0].value);

		gc_observed_set(obs, id, r->props[0].key, v);
		free(v);
	}
	for (i = 0; r && i < r->nprops; i++) {
		if (gc_observed_get(obs, id, r->props[i].key) == NULL)
			gc_observed_set(obs, id, r->props[i].key, "none");
	}
}

void gc_onyx_record(struct gc_observed *obs, const struct gc_switch *sw,
		    const struct gc_onyx_desired *desired, const struct gc_onyx_state *st,
		    const struct gc_resource *const *res, size_t nres)
{
	bool owned = sw->roce && sw->roce->owned;
	unsigned seen = 0;
	size_t i, k;

	for (i = 0; i < nres; i++) {
		const struct gc_resource *r = res[i];
		unsigned cat = gc_onyx_cat_of(r->kind);

		if (cat == 0)
			continue;
		seen |= cat;
		if (converged(desired, st, owned, cat)) {
			for (k = 0; k < r->nprops; k++)
				gc_observed_set(obs, r->id, r->props[k].key, r->props[k].value);
			gc_observed_add(obs, r->id);
		} else {
			record_one(obs, r->id, r, cat, desired, st);
		}
	}
	if (!owned || desired->oneshot)
		return;
	for (k = 0; k < GC_ARRAY_LEN(kinds); k++) {
		char *id;

		if ((seen & kinds[k].cat) || kinds[k].cat == GC_ONYX_CAT_ROCE ||
		    converged(desired, st, true, kinds[k].cat))
			continue;
		id = gc_xasprintf("%s/%s", sw->name, gc_res_kind_name(kinds[k].kind));
		record_one(obs, id, NULL, kinds[k].cat, desired, st);
		free(id);
	}
}
