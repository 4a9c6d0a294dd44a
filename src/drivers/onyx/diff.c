/*
 * diff.c - desired RoCE state from the spec, and the minimal command list
 * (and human drift lines) that turn the observed state into it.
 *
 * The desired state follows REAL-FORMATS B.4 (DSCP-based lossless, manual
 * recipe) or B.5 (one-shot `roce lossless`).  The diff walks fixed
 * categories in the recipe's order: pool type, pool percent, pool map,
 * trust, ECN, ETS strict, PFC global, PFC priorities, per-port PFC, LLDP.
 * Adds/changes come first, in that order; removals (only when the spec owns
 * the switch's RoCE config) follow in reverse order, so dependent settings
 * go before what they depend on.  Per-port fixes with the same command text
 * are merged into port ranges the way running-config shows them; a
 * non-contiguous set becomes one line per contiguous range (we do not rely on
 * the CLI accepting comma lists).  Every emitted line is checked against a
 * strict character set, and every range against gc_valid_port_range().
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/onyx.h"
#include "gc/pattern.h"

void gc_onyx_cmds_free(struct gc_onyx_cmds *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < c->n; i++)
		free(c->v[i]);
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

void gc_onyx_desired_free(struct gc_onyx_desired *d)
{
	if (d)
		gc_onyx_state_free(&d->st);
}

/* ---------------------------------------------------------------- desired */

int gc_onyx_desired(struct gc_onyx_desired *out, const struct gc_switch *sw,
		    struct gc_error *err)
{
	const struct gc_switch_roce *r = sw->roce;
	const char *name = sw->name ? sw->name : "?";
	struct gc_onyx_port_id *ids = NULL;
	struct gc_onyx_desired d;
	size_t n = 0, i, t;
	int rc;

	memset(&d, 0, sizeof(d));
	gc_onyx_state_init(&d.st);
	if (r == NULL)
		return gc_error_set(err, GC_EINVAL, "switch '%s': no roce settings", name);
	if (sw->name && !gc_valid_name(sw->name))
		return gc_error_set(err, GC_EINVAL, "switch name is not a valid name");
	if (r->mode && strcmp(r->mode, "oneshot") == 0) {
		d.oneshot = true;
		snprintf(d.st.roce_mode, sizeof(d.st.roce_mode), "lossless");
		*out = d;
		return 0;
	}
	if (r->mode && strcmp(r->mode, "dscp-lossless") != 0)
		return gc_error_set(err, GC_EINVAL, "switch '%s': unknown roce mode '%.32s'", name,
				    r->mode);
	if (!gc_valid_port_range(sw->ports))
		return gc_error_set(err, GC_EINVAL, "switch '%s': invalid ports '%.64s'", name,
				    sw->ports ? sw->ports : "");
	if (r->priority < 0 || r->priority > 7 || r->cnp_traffic_class < 0 ||
	    r->cnp_traffic_class > 7)
		return gc_error_set(err, GC_EINVAL,
				    "switch '%s': priority and cnp_traffic_class must be 0..7", name);
	if (r->ecn_min_kb == 0 || r->ecn_min_kb > r->ecn_max_kb || r->ecn_max_kb > (1u << 24))
		return gc_error_set(err, GC_EINVAL, "switch '%s': invalid ECN thresholds %u/%u",
				    name, r->ecn_min_kb, r->ecn_max_kb);
	if (!(r->pool_percent > 0.0 && r->pool_percent <= 100.0))
		return gc_error_set(err, GC_EINVAL, "switch '%s': invalid pool percent", name);
	rc = gc_onyx_ports_expand(&ids, &n, sw->ports, err);
	if (rc)
		return rc;
	t = (size_t)r->priority;
	snprintf(d.st.pool_type, sizeof(d.st.pool_type), "lossless");
	d.st.pool_percent_x100 = (int)lround(r->pool_percent * 100.0);
	d.st.pool_map = (uint8_t)(1u << t);
	d.st.pfc_enabled = r->pfc;
	d.st.pfc_priorities = r->pfc ? (uint8_t)(1u << t) : 0;
	d.st.lldp = r->lldp;
	for (i = 0; i < n; i++) {
		struct gc_onyx_port_state *ps = gc_onyx_state_port(&d.st, &ids[i], true);

		ps->trust = GC_ONYX_TRUST_L3;
		ps->cc[t].mode = GC_ONYX_CC_ECN_ABS;
		ps->cc[t].min_kb = r->ecn_min_kb;
		ps->cc[t].max_kb = r->ecn_max_kb;
		ps->ets_strict = (uint8_t)(1u << r->cnp_traffic_class);
		ps->pfc_force = r->pfc;
	}
	free(ids);
	*out = d;
	return 0;
}

int gc_onyx_check_version(const struct gc_onyx_desired *desired,
			  const struct gc_onyx_version *v, const char *switch_name,
			  struct gc_error *err)
{
	const char *need = desired->oneshot ? GC_ONYX_ONESHOT_MIN : GC_ONYX_POOL_MIN;

	if (gc_onyx_version_cmp(v->release, need) >= 0)
		return 0;
	if (desired->oneshot)
		return gc_error_set(err, GC_ENOTSUP,
				    "switch '%s': roce mode 'oneshot' needs Onyx %s or later (the "
				    "`roce` command); the switch runs %s %s",
				    switch_name, need, v->product, v->release);
	return gc_error_set(err, GC_ENOTSUP,
			    "switch '%s': the `traffic pool` commands need Onyx %s or later; the "
			    "switch runs %s %s",
			    switch_name, need, v->product, v->release);
}

/* ---------------------------------------------------------------- diff engine */

struct out {
	unsigned cats;             /* GC_ONYX_CAT_* to compare */
	struct gc_onyx_cmds *cmds; /* or NULL */
	struct gc_buf *drift;      /* or NULL */
	size_t nlines;
	int rc;
	struct gc_error *err;
};

static bool safe_cmd(const char *s)
{
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == ' ' || c == '/' || c == '-' || c == '.' || c == ','))
			return false;
	}
	return true;
}

static void push_cmd(struct out *o, char *cmd)
{
	if (o->rc == 0 && !safe_cmd(cmd))
		o->rc = gc_error_set(o->err, GC_EINVAL, "refusing unsafe command '%.80s'", cmd);
	if (o->rc) {
		free(cmd);
		return;
	}
	o->cmds->v = gc_xrealloc(o->cmds->v, (o->cmds->n + 1) * sizeof(*o->cmds->v));
	o->cmds->v[o->cmds->n++] = cmd;
}

/* A global (non per-port) change. */
static void global(struct out *o, const char *cmd, const char *label, const char *old,
		   const char *new_)
{
	if (o->cmds)
		push_cmd(o, gc_xstrdup(cmd));
	if (o->drift)
		gc_buf_printf(o->drift, "  %s: %s -> %s\n", label, old, new_);
	o->nlines++;
}

/* One per-port change: cmd suffix after `interface ethernet RANGE`. */
struct item {
	struct gc_onyx_port_id id;
	bool need;
	char suffix[160]; /* as large as the command buffers it is copied from */
	char label[160]; /* drift: property after "interface ethernet RANGE " */
	char old[48];
	char new_[48];
};

struct items {
	struct item *v;
	size_t n;
};

static bool same_group(const struct out *o, const struct item *a, const struct item *b)
{
	if (o->cmds)
		return strcmp(a->suffix, b->suffix) == 0;
	return strcmp(a->label, b->label) == 0 && strcmp(a->old, b->old) == 0 &&
	       strcmp(a->new_, b->new_) == 0;
}

/* Emit every needed item, grouped into ranges; clears the need flags. */
static void emit_ports(struct out *o, struct items *it)
{
	struct gc_onyx_port_id *ids = gc_xmalloc((it->n + 1) * sizeof(*ids));
	struct gc_buf ranges = GC_BUF_INIT;
	size_t i, j, k;

	for (i = 0; i < it->n; i++) {
		char *save = NULL, *r;

		if (!it->v[i].need)
			continue;
		for (j = i, k = 0; j < it->n; j++) {
			if (it->v[j].need && same_group(o, &it->v[i], &it->v[j])) {
				ids[k++] = it->v[j].id;
				if (j != i)
					it->v[j].need = false;
			}
		}
		it->v[i].need = false;
		gc_buf_reset(&ranges);
		gc_onyx_ports_compress(&ranges, ids, k);
		for (r = strtok_r(ranges.ptr, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
			if (!gc_valid_port_range(r)) {
				if (o->rc == 0)
					o->rc = gc_error_set(o->err, GC_EINVAL,
							     "refusing invalid port range '%.32s'", r);
				continue;
			}
			if (o->cmds)
				push_cmd(o, gc_xasprintf("interface ethernet %s %s", r,
							 it->v[i].suffix));
			if (o->drift)
				gc_buf_printf(o->drift, "  interface ethernet %s %s: %s -> %s\n", r,
					      it->v[i].label, it->v[i].old, it->v[i].new_);
			o->nlines++;
		}
	}
	gc_buf_free(&ranges);
	free(ids);
}

/* The union of desired and observed ports, sorted, one item each. */
static void items_init(struct items *it, const struct gc_onyx_state *a,
		       const struct gc_onyx_state *b)
{
	size_t i = 0, j = 0;

	it->v = gc_xcalloc(a->nports + b->nports + 1, sizeof(*it->v));
	it->n = 0;
	while (i < a->nports || j < b->nports) {
		int c = i == a->nports   ? 1
			: j == b->nports ? -1
					 : gc_onyx_port_cmp(&a->ports[i].id, &b->ports[j].id);

		it->v[it->n++].id = c <= 0 ? a->ports[i].id : b->ports[j].id;
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
}

static const struct gc_onyx_port_state zero_port;

static const struct gc_onyx_port_state *port_of(const struct gc_onyx_state *st,
						const struct gc_onyx_port_id *id)
{
	const struct gc_onyx_port_state *p =
		gc_onyx_state_port((struct gc_onyx_state *)st, id, false);

	return p ? p : &zero_port;
}

static const char *trust_name(enum gc_onyx_trust t)
{
	switch (t) {
	case GC_ONYX_TRUST_UNSET: return "L2 (default)";
	case GC_ONYX_TRUST_L2: return "L2";
	case GC_ONYX_TRUST_L3: return "L3";
	case GC_ONYX_TRUST_BOTH: return "both";
	}
	return "?";
}

static void cc_name(char *b, size_t n, const struct gc_onyx_tc_cc *c)
{
	switch (c->mode) {
	case GC_ONYX_CC_NONE: snprintf(b, n, "none"); return;
	case GC_ONYX_CC_ECN_ABS: snprintf(b, n, "ecn %u/%u KB", c->min_kb, c->max_kb); return;
	case GC_ONYX_CC_OTHER: snprintf(b, n, "other (%u/%u)", c->min_kb, c->max_kb); return;
	}
}

static void set_item(struct item *x, const char *suffix, const char *label, const char *old,
		     const char *new_)
{
	x->need = true;
	snprintf(x->suffix, sizeof(x->suffix), "%s", suffix);
	snprintf(x->label, sizeof(x->label), "%s", label);
	snprintf(x->old, sizeof(x->old), "%s", old);
	snprintf(x->new_, sizeof(x->new_), "%s", new_);
}

static void pct(char *b, size_t n, int x100)
{
	if (x100 < 0)
		snprintf(b, n, "(unset)");
	else
		snprintf(b, n, "%d.%02d", x100 / 100, x100 % 100);
}

static void pfc_adds(struct out *o, const struct gc_onyx_state *d, const struct gc_onyx_state *s,
		     struct items *it)
{
	char cmd[160], label[96];
	size_t i;
	unsigned t;

	if (d->pfc_enabled && !s->pfc_enabled)
		global(o, "dcb priority-flow-control enable force", "dcb priority-flow-control",
		       "disabled", "enabled (force)");
	for (t = 0; t < 8; t++) {
		if ((d->pfc_priorities & ~s->pfc_priorities) & (1u << t)) {
			snprintf(cmd, sizeof(cmd), "dcb priority-flow-control priority %u enable", t);
			snprintf(label, sizeof(label), "dcb priority-flow-control priority %u", t);
			global(o, cmd, label, "disabled", "enabled");
		}
	}
	for (i = 0; i < it->n; i++) {
		if (port_of(d, &it->v[i].id)->pfc_force && !port_of(s, &it->v[i].id)->pfc_force)
			set_item(&it->v[i], "dcb priority-flow-control mode on force",
				 "dcb priority-flow-control mode", "auto", "on force");
	}
	emit_ports(o, it);
}

/* Per-port PFC first, then the priorities, then the global switch. */
static void pfc_removals(struct out *o, const struct gc_onyx_state *d,
			 const struct gc_onyx_state *s, struct items *it)
{
	char cmd[160], label[96];
	size_t i;
	int t;

	for (i = 0; i < it->n; i++) {
		if (!port_of(d, &it->v[i].id)->pfc_force && port_of(s, &it->v[i].id)->pfc_force)
			set_item(&it->v[i], "no dcb priority-flow-control mode force",
				 "dcb priority-flow-control mode", "on force", "auto");
	}
	emit_ports(o, it);
	for (t = 7; t >= 0; t--) {
		if ((s->pfc_priorities & ~d->pfc_priorities) & (1u << t)) {
			snprintf(cmd, sizeof(cmd), "no dcb priority-flow-control priority %d enable",
				 t);
			snprintf(label, sizeof(label), "dcb priority-flow-control priority %d", t);
			global(o, cmd, label, "enabled", "disabled");
		}
	}
	if (!d->pfc_enabled && s->pfc_enabled)
		global(o, "no dcb priority-flow-control enable", "dcb priority-flow-control",
		       "enabled", "disabled");
}

/* Adds and changes, in recipe order. */
static void adds(struct out *o, const struct gc_onyx_state *d, const struct gc_onyx_state *s,
		 struct items *it)
{
	char cmd[160], a[48], b[48], label[96];
	size_t i;
	unsigned t;

	if ((o->cats & GC_ONYX_CAT_POOL) && d->pool_type[0] &&
	    strcmp(d->pool_type, s->pool_type) != 0) {
		snprintf(cmd, sizeof(cmd), "traffic pool roce type %s", d->pool_type);
		global(o, cmd, "traffic pool roce type", s->pool_type[0] ? s->pool_type : "(unset)",
		       d->pool_type);
	}
	if ((o->cats & GC_ONYX_CAT_POOL) && d->pool_percent_x100 >= 0 &&
	    d->pool_percent_x100 != s->pool_percent_x100) {
		pct(a, sizeof(a), s->pool_percent_x100);
		pct(b, sizeof(b), d->pool_percent_x100);
		snprintf(cmd, sizeof(cmd), "traffic pool roce memory percent %s", b);
		global(o, cmd, "traffic pool roce memory percent", a, b);
	}
	for (t = 0; t < 8 && (o->cats & GC_ONYX_CAT_POOL); t++) {
		if ((d->pool_map & ~s->pool_map) & (1u << t)) {
			snprintf(cmd, sizeof(cmd), "traffic pool roce map switch-priority %u", t);
			snprintf(label, sizeof(label), "traffic pool roce map switch-priority %u", t);
			global(o, cmd, label, "unmapped", "mapped");
		}
	}
	for (i = 0; i < it->n && (o->cats & GC_ONYX_CAT_TRUST); i++) {
		const struct gc_onyx_port_state *dp = port_of(d, &it->v[i].id);
		const struct gc_onyx_port_state *sp = port_of(s, &it->v[i].id);

		if (dp->trust != GC_ONYX_TRUST_UNSET && dp->trust != sp->trust) {
			snprintf(cmd, sizeof(cmd), "qos trust %s", trust_name(dp->trust));
			set_item(&it->v[i], cmd, "qos trust", trust_name(sp->trust),
				 trust_name(dp->trust));
		}
	}
	emit_ports(o, it);
	for (t = 0; t < 8 && (o->cats & GC_ONYX_CAT_ECN); t++) {
		for (i = 0; i < it->n; i++) {
			const struct gc_onyx_tc_cc *dc = &port_of(d, &it->v[i].id)->cc[t];
			const struct gc_onyx_tc_cc *sc = &port_of(s, &it->v[i].id)->cc[t];

			if (dc->mode != GC_ONYX_CC_ECN_ABS ||
			    (sc->mode == dc->mode && sc->min_kb == dc->min_kb &&
			     sc->max_kb == dc->max_kb))
				continue;
			snprintf(cmd, sizeof(cmd),
				 "traffic-class %u congestion-control ecn minimum-absolute %u "
				 "maximum-absolute %u",
				 t, dc->min_kb, dc->max_kb);
			snprintf(label, sizeof(label), "traffic-class %u congestion-control", t);
			cc_name(a, sizeof(a), sc);
			cc_name(b, sizeof(b), dc);
			set_item(&it->v[i], cmd, label, a, b);
		}
		emit_ports(o, it);
	}
	for (t = 0; t < 8 && (o->cats & GC_ONYX_CAT_ETS); t++) {
		for (i = 0; i < it->n; i++) {
			const struct gc_onyx_port_state *dp = port_of(d, &it->v[i].id);
			const struct gc_onyx_port_state *sp = port_of(s, &it->v[i].id);

			if (!((dp->ets_strict & ~sp->ets_strict) & (1u << t)))
				continue;
			snprintf(cmd, sizeof(cmd), "traffic-class %u dcb ets strict", t);
			snprintf(label, sizeof(label), "traffic-class %u dcb ets", t);
			set_item(&it->v[i], cmd, label, "not strict", "strict");
		}
		emit_ports(o, it);
	}
	if (o->cats & GC_ONYX_CAT_PFC)
		pfc_adds(o, d, s, it);
	if ((o->cats & GC_ONYX_CAT_LLDP) && d->lldp && !s->lldp)
		global(o, "lldp", "lldp", "disabled", "enabled");
}

/* Removals of what the desired state does not have, reverse recipe order. */
static void removals(struct out *o, const struct gc_onyx_state *d,
		     const struct gc_onyx_state *s, struct items *it)
{
	char cmd[160], a[48], label[96];
	size_t i;
	int t;

	if ((o->cats & GC_ONYX_CAT_LLDP) && !d->lldp && s->lldp)
		global(o, "no lldp", "lldp", "enabled", "disabled");
	if (o->cats & GC_ONYX_CAT_PFC)
		pfc_removals(o, d, s, it);
	for (t = 7; t >= 0 && (o->cats & GC_ONYX_CAT_ETS); t--) {
		for (i = 0; i < it->n; i++) {
			if (!((port_of(s, &it->v[i].id)->ets_strict &
			       ~port_of(d, &it->v[i].id)->ets_strict) &
			      (1u << t)))
				continue;
			snprintf(cmd, sizeof(cmd), "no traffic-class %d dcb ets", t);
			snprintf(label, sizeof(label), "traffic-class %d dcb ets", t);
			set_item(&it->v[i], cmd, label, "strict", "default");
		}
		emit_ports(o, it);
	}
	for (t = 7; t >= 0 && (o->cats & GC_ONYX_CAT_ECN); t--) {
		for (i = 0; i < it->n; i++) {
			const struct gc_onyx_tc_cc *sc = &port_of(s, &it->v[i].id)->cc[t];

			if (sc->mode == GC_ONYX_CC_NONE ||
			    port_of(d, &it->v[i].id)->cc[t].mode != GC_ONYX_CC_NONE)
				continue;
			snprintf(cmd, sizeof(cmd), "no traffic-class %d congestion-control", t);
			snprintf(label, sizeof(label), "traffic-class %d congestion-control", t);
			cc_name(a, sizeof(a), sc);
			set_item(&it->v[i], cmd, label, a, "none");
		}
		emit_ports(o, it);
	}
	for (i = 0; i < it->n && (o->cats & GC_ONYX_CAT_TRUST); i++) {
		enum gc_onyx_trust st = port_of(s, &it->v[i].id)->trust;

		if (port_of(d, &it->v[i].id)->trust == GC_ONYX_TRUST_UNSET &&
		    (st == GC_ONYX_TRUST_L3 || st == GC_ONYX_TRUST_BOTH))
			set_item(&it->v[i], "no qos trust", "qos trust", trust_name(st),
				 "L2 (default)");
	}
	emit_ports(o, it);
	for (t = 7; t >= 0 && (o->cats & GC_ONYX_CAT_POOL); t--) {
		if ((s->pool_map & ~d->pool_map) & (1u << t)) {
			snprintf(cmd, sizeof(cmd), "no traffic pool roce map switch-priority %d", t);
			snprintf(label, sizeof(label), "traffic pool roce map switch-priority %d", t);
			global(o, cmd, label, "mapped", "unmapped");
		}
	}
}

static void run(struct out *o, const struct gc_onyx_desired *desired,
		const struct gc_onyx_state *observed, bool owned)
{
	struct items it;

	if (desired->oneshot) {
		if ((o->cats & GC_ONYX_CAT_ROCE) && strcmp(observed->roce_mode, "lossless") != 0)
			global(o, "roce lossless", "roce mode",
			       observed->roce_mode[0] ? observed->roce_mode : "N/A", "lossless");
		return;
	}
	items_init(&it, &desired->st, observed);
	adds(o, &desired->st, observed, &it);
	if (owned)
		removals(o, &desired->st, observed, &it);
	free(it.v);
}

int gc_onyx_diff(struct gc_onyx_cmds *cmds, const struct gc_onyx_desired *desired,
		 const struct gc_onyx_state *observed, bool owned, struct gc_error *err)
{
	return gc_onyx_diff_only(cmds, desired, observed, owned, GC_ONYX_CAT_ALL, err);
}

int gc_onyx_diff_only(struct gc_onyx_cmds *cmds, const struct gc_onyx_desired *desired,
		      const struct gc_onyx_state *observed, bool owned, unsigned cats,
		      struct gc_error *err)
{
	struct gc_onyx_cmds c = {NULL, 0};
	struct out o = {cats, &c, NULL, 0, 0, err};

	if (desired->st.pool_type[0] && strcmp(desired->st.pool_type, "lossless") != 0 &&
	    strcmp(desired->st.pool_type, "lossy") != 0 &&
	    strcmp(desired->st.pool_type, "lossy-mc") != 0)
		return gc_error_set(err, GC_EINVAL, "refusing pool type '%.16s'",
				    desired->st.pool_type);
	run(&o, desired, observed, owned);
	if (o.rc) {
		gc_onyx_cmds_free(&c);
		return o.rc;
	}
	*cmds = c;
	return 0;
}

size_t gc_onyx_drift(struct gc_buf *b, const struct gc_onyx_desired *desired,
		     const struct gc_onyx_state *observed, bool owned)
{
	struct out o = {GC_ONYX_CAT_ALL, NULL, b, 0, 0, NULL};

	run(&o, desired, observed, owned);
	return o.nlines;
}
