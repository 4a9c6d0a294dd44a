/*
 * render.c - the plan for people (text) and for machines (JSON).
 *
 * Text, grouped by wave, then target, then execution order:
 *
 *   Wave 1 of 2 (maintenance: esx01)
 *
 *     esxi esx01
 *       > enter maintenance mode
 *           why: passthrough for GPU 0000:3b:00.0 needs maintenance mode
 *       + esx01/esxi.pci_passthru/0000:3b:00.0  [maintenance, reboot]
 *           enabled: (none) → true
 *
 *   Warning: esx01's maintenance powers off 2 VMs at once (...), over ...
 *
 *   Plan: 1 to add, 0 to change, 0 to destroy, 5 synthesized steps (1 hosts need maintenance, 1 reboots).
 *
 * "+ ~ -" mark resource actions, ">" synthesized steps.  Colour (ANSI) only
 * when the caller asks for it (the CLI decides: TTY and no NO_COLOR).
 * JSON (docs/plan-json.md) goes out through the streaming writer
 * (gc/jsonw.h), one action at a time: to a FILE for plan --json, so no
 * document of hundreds of MB is held, or into a buffer for a saved plan.
 * Its bytes are those json-c wrote when the plan was a tree of json-c
 * objects (tests/unit/plan/test_plan_json.c compares the two).
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "gc/jsonw.h"
#include "gc/plan.h"

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_RED "\033[31m"
#define C_CYAN "\033[36m"
#define C_DIM "\033[2m"

static const char *op_color(enum gc_op op)
{
	switch (op) {
	case GC_OP_NONE:
		return C_CYAN;
	case GC_OP_CREATE:
		return C_GREEN;
	case GC_OP_UPDATE:
		return C_YELLOW;
	case GC_OP_DELETE:
		return C_RED;
	}
	return "";
}

static void step_text(struct gc_buf *out, const struct gc_action *a)
{
	switch (a->kind) {
	case GC_ACT_APPLY:
		gc_buf_puts(out, a->resource_id);
		return;
	case GC_ACT_ENTER_MAINTENANCE:
		gc_buf_puts(out, "enter maintenance mode");
		return;
	case GC_ACT_EXIT_MAINTENANCE:
		gc_buf_puts(out, "exit maintenance mode");
		return;
	case GC_ACT_REBOOT:
		gc_buf_puts(out, "reboot");
		return;
	case GC_ACT_WAIT_HOST:
		gc_buf_puts(out, a->target->kind == GC_TARGET_GUEST ? "wait for the guest"
								    : "wait for the host");
		return;
	case GC_ACT_VERIFY:
		gc_buf_puts(out, "verify");
		return;
	case GC_ACT_POWER_OFF:
		gc_buf_puts(out, "power off ");
		gc_buf_puts_s(out, a->vm);
		gc_buf_puts(out, " (guest shutdown)");
		return;
	case GC_ACT_POWER_ON:
		gc_buf_puts(out, "power on ");
		gc_buf_puts_s(out, a->vm);
		return;
	case GC_ACT_MIGRATE:
		if (a->dest_host != NULL && a->host != NULL && strcmp(a->dest_host, a->host) != 0)
			gc_buf_printf(out, "migrate %s off %s to %s%s", a->vm, a->host, a->dest_host,
				      " (vMotion)");
		else if (a->dest_host != NULL)
			gc_buf_printf(out, "migrate %s back to %s", a->vm, a->dest_host);
		else
			gc_buf_printf(out, "migrate %s off %s (vMotion)", a->vm, a->host);
		return;
	}
}

static void flags_text(struct gc_buf *out, unsigned flags)
{
	const char *sep = "  [";

	if ((flags & (GC_RES_NEEDS_MAINTENANCE | GC_RES_NEEDS_REBOOT | GC_RES_NEEDS_VM_OFF)) == 0)
		return; /* GC_RES_AFTER_REBOOT alone is said in the step's "why" */
	if (flags & GC_RES_NEEDS_MAINTENANCE) {
		gc_buf_puts(out, sep);
		gc_buf_puts(out, "maintenance");
		sep = ", ";
	}
	if (flags & GC_RES_NEEDS_REBOOT) {
		gc_buf_puts(out, sep);
		gc_buf_puts(out, "reboot");
		sep = ", ";
	}
	if (flags & GC_RES_NEEDS_VM_OFF) {
		gc_buf_puts(out, sep);
		gc_buf_puts(out, "VM off");
	}
	gc_buf_putc(out, ']');
}

/* Dependencies on other targets (the same target runs in the listed order):
 * "after: exit maintenance mode on esx01". */
static void after_text(struct gc_buf *out, const struct gc_action *a, bool color)
{
	bool first = true;

	for (size_t i = 0; i < a->ndeps; i++) {
		if (a->deps[i]->target == a->target)
			continue;
		gc_buf_puts(out, first ? (color ? "        " C_DIM "after: " : "        after: ") : ", ");
		gc_action_describe(out, a->deps[i]);
		first = false;
	}
	if (!first)
		gc_buf_puts(out, color ? C_RESET "\n" : "\n");
}

static void action_text(struct gc_buf *out, const struct gc_action *a, bool color)
{
	const char *mark = a->op == GC_OP_NONE ? ">" : gc_op_symbol(a->op);

	gc_buf_puts(out, "    ");
	if (color)
		gc_buf_puts(out, op_color(a->op));
	gc_buf_puts(out, mark);
	if (color)
		gc_buf_puts(out, C_RESET);
	gc_buf_putc(out, ' ');
	if (a->kind != GC_ACT_APPLY && a->op != GC_OP_NONE) {
		/* vm.power: a power step that is also a resource change */
		step_text(out, a);
		gc_buf_puts(out, " (");
		gc_buf_puts_s(out, a->resource_id);
		gc_buf_putc(out, ')');
	} else {
		step_text(out, a);
	}
	if (a->op != GC_OP_NONE)
		flags_text(out, a->flags);
	gc_buf_putc(out, '\n');
	for (size_t i = 0; i < a->nchanges; i++) {
		const struct gc_change *c = &a->changes[i];

		/* observed values are the target's words: shown, never obeyed */
		gc_buf_puts(out, "        ");
		gc_buf_put_shown(out, c->key, false);
		gc_buf_puts(out, ": ");
		gc_buf_put_shown(out, c->old_value ? c->old_value : "(none)", false);
		gc_buf_puts(out, " → ");
		gc_buf_put_shown(out, c->new_value ? c->new_value : "(removed)", false);
		gc_buf_putc(out, '\n');
	}
	if (a->why != NULL) {
		gc_buf_puts(out, color ? "        " C_DIM "why: " : "        why: ");
		gc_buf_puts(out, a->why);
		gc_buf_puts(out, color ? C_RESET "\n" : "\n");
	}
	after_text(out, a, color);
}

void gc_plan_render_summary(struct gc_buf *out, const struct gc_plan *p)
{
	const struct gc_plan_stats *s = &p->stats;

	gc_buf_printf(out,
		      "Plan: %zu to add, %zu to change, %zu to destroy, %zu synthesized steps "
		      "(%zu hosts need maintenance, %zu reboots).",
		      s->add, s->change, s->destroy, s->synthesized, s->hosts_in_maintenance,
		      s->reboots);
}

/* With f, what is rendered goes to f whenever a chunk has gathered: a
 * 10,000-host plan is 80 MB of text, never held whole.  False when f
 * refused a write. */
#define TEXT_CHUNK (64u * 1024u)
static bool drain(struct gc_buf *out, FILE *f, size_t at_least)
{
	bool ok = true;

	if (f == NULL || out->len < at_least)
		return true;
	if (out->len > 0 && fwrite(out->ptr, 1, out->len, f) != out->len)
		ok = false;
	gc_buf_reset(out);
	return ok;
}

static bool render_text(struct gc_buf *out, FILE *f, const struct gc_plan *p, unsigned flags)
{
	bool color = (flags & GC_RENDER_COLOR) != 0, ok = true;

	if (gc_plan_empty(p) && p->nunknown == 0) {
		gc_buf_puts(out, "No changes. The cluster matches the spec.\n");
		return drain(out, f, 0);
	}
	for (size_t w = 0; w < p->nwaves; w++) {
		const struct gc_plan_wave *pw = &p->waves[w];

		if (color)
			gc_buf_puts(out, C_BOLD);
		gc_buf_printf(out, "Wave %zu of %zu", w + 1, p->nwaves);
		if (pw->nmaintenance_hosts > 0) {
			gc_buf_puts(out, " (maintenance: ");
			for (size_t h = 0; h < pw->nmaintenance_hosts; h++)
				gc_buf_printf(out, "%s%s", h ? ", " : "", pw->maintenance_hosts[h]);
			gc_buf_putc(out, ')');
		}
		if (color)
			gc_buf_puts(out, C_RESET);
		gc_buf_puts(out, "\n");
		for (size_t t = 0; t < pw->ntargets; t++) {
			const struct gc_plan_target *pt = &pw->targets[t];

			gc_buf_puts(out, "\n  ");
			gc_buf_puts(out, gc_target_kind_name(pt->target->kind));
			gc_buf_putc(out, ' ');
			gc_buf_puts_s(out, pt->target->name);
			gc_buf_putc(out, '\n');
			for (size_t i = 0; i < pt->nactions; i++)
				action_text(out, pt->actions[i], color);
			ok = drain(out, f, TEXT_CHUNK) && ok;
		}
		gc_buf_puts(out, "\n");
	}
	for (size_t i = 0; i < p->nwarnings; i++) {
		/* unmanaged VMs' names are vCenter's words: shown, never obeyed */
		gc_buf_puts(out, color ? C_YELLOW "Warning:" C_RESET " " : "Warning: ");
		gc_buf_put_shown(out, p->warnings[i], false);
		gc_buf_putc(out, '\n');
	}
	if (p->nwarnings > 0)
		gc_buf_puts(out, "\n");
	if (p->nunknown > 0) {
		gc_buf_puts(out, "Unknown: not observed, nothing planned for them\n\n");
		for (size_t t = 0; t < p->graph->ntargets; t++) {
			if (p->unknown[t] == NULL)
				continue;
			gc_buf_printf(out, "  %s %s: unknown: ",
				      gc_target_kind_name(p->graph->targets[t]->kind),
				      p->graph->targets[t]->name);
			gc_buf_put_shown(out, p->unknown[t], false);
			gc_buf_puts(out, "\n");
		}
		gc_buf_puts(out, "\n");
	}
	gc_plan_render_summary(out, p);
	if (p->nunknown > 0)
		gc_buf_printf(out, " %zu target%s unknown.", p->nunknown, p->nunknown == 1 ? "" : "s");
	gc_buf_puts(out, "\n");
	return drain(out, f, 0) && ok;
}

void gc_plan_render_text(struct gc_buf *out, const struct gc_plan *p, unsigned flags)
{
	(void)render_text(out, NULL, p, flags);
}

int gc_plan_write_text(FILE *f, const struct gc_plan *p, unsigned flags)
{
	struct gc_buf b = GC_BUF_INIT;
	bool ok = render_text(&b, f, p, flags);

	gc_buf_free(&b);
	return ok ? 0 : -1;
}

/* ---------------------------------------------------------------- JSON */

/* json-c's layout, which the golden plans and saved plans were written in */
#define JSON_FLAGS (GC_JSONW_PRETTY | GC_JSONW_SPACED | GC_JSONW_NOSLASHESCAPE)

/* Names of our own (kinds, ids, target names) go out as they are; what a
 * host or the user's file said goes through gc_jsonw_text (kept UTF-8). */
static void put_action(struct gc_jsonw *w, const struct gc_action *a)
{
	gc_jsonw_object_begin(w);
	gc_jsonw_key(w, "seq");
	gc_jsonw_int(w, (int64_t)a->seq);
	gc_jsonw_key(w, "kind");
	gc_jsonw_string(w, gc_action_kind_name(a->kind));
	gc_jsonw_key(w, "op");
	gc_jsonw_string(w, gc_op_name(a->op));
	gc_jsonw_key(w, "synthesized");
	gc_jsonw_bool(w, a->synthesized);
	gc_jsonw_key(w, "resource");
	gc_jsonw_text(w, a->resource_id);
	gc_jsonw_key(w, "resource_kind");
	gc_jsonw_string(w, a->resource_id ? gc_res_kind_name(a->res_kind) : NULL);
	gc_jsonw_key(w, "host");
	gc_jsonw_text(w, a->host);
	gc_jsonw_key(w, "vm");
	gc_jsonw_text(w, a->vm);
	gc_jsonw_key(w, "dest_host");
	gc_jsonw_text(w, a->dest_host);
	gc_jsonw_key(w, "flags");
	gc_graph_put_flags_json(w, a->flags);
	gc_jsonw_key(w, "changes");
	gc_jsonw_array_begin(w);
	for (size_t i = 0; i < a->nchanges; i++) {
		gc_jsonw_object_begin(w);
		gc_jsonw_key(w, "key");
		gc_jsonw_string(w, a->changes[i].key);
		gc_jsonw_key(w, "old");
		gc_jsonw_text(w, a->changes[i].old_value);
		gc_jsonw_key(w, "new");
		gc_jsonw_text(w, a->changes[i].new_value);
		gc_jsonw_object_end(w);
	}
	gc_jsonw_array_end(w);
	gc_jsonw_key(w, "why");
	gc_jsonw_text(w, a->why);
	gc_jsonw_key(w, "after");
	gc_jsonw_array_begin(w);
	for (size_t i = 0; i < a->ndeps; i++)
		gc_jsonw_int(w, (int64_t)a->deps[i]->seq);
	gc_jsonw_array_end(w);
	gc_jsonw_object_end(w);
}

static void put_count(struct gc_jsonw *w, const char *key, size_t n)
{
	gc_jsonw_key(w, key);
	gc_jsonw_int(w, (int64_t)n);
}

static void put_summary(struct gc_jsonw *w, const struct gc_plan *p)
{
	const struct gc_plan_stats *s = &p->stats;

	gc_jsonw_object_begin(w);
	put_count(w, "add", s->add);
	put_count(w, "change", s->change);
	put_count(w, "destroy", s->destroy);
	put_count(w, "synthesized", s->synthesized);
	put_count(w, "hosts_in_maintenance", s->hosts_in_maintenance);
	put_count(w, "reboots", s->reboots);
	put_count(w, "actions", p->nactions);
	put_count(w, "waves", p->nwaves);
	put_count(w, "critical_path", s->critical_path);
	gc_jsonw_object_end(w);
}

static void put_wave(struct gc_jsonw *w, const struct gc_plan_wave *pw, size_t index)
{
	gc_jsonw_object_begin(w);
	put_count(w, "index", index);
	gc_jsonw_key(w, "maintenance_hosts");
	gc_jsonw_array_begin(w);
	for (size_t h = 0; h < pw->nmaintenance_hosts; h++)
		gc_jsonw_string(w, pw->maintenance_hosts[h]);
	gc_jsonw_array_end(w);
	gc_jsonw_key(w, "targets");
	gc_jsonw_array_begin(w);
	for (size_t t = 0; t < pw->ntargets; t++) {
		const struct gc_plan_target *pt = &pw->targets[t];

		gc_jsonw_object_begin(w);
		gc_jsonw_key(w, "kind");
		gc_jsonw_string(w, gc_target_kind_name(pt->target->kind));
		gc_jsonw_key(w, "name");
		gc_jsonw_string(w, pt->target->name);
		gc_jsonw_key(w, "actions");
		gc_jsonw_array_begin(w);
		for (size_t i = 0; i < pt->nactions; i++)
			put_action(w, pt->actions[i]);
		gc_jsonw_array_end(w);
		gc_jsonw_object_end(w);
	}
	gc_jsonw_array_end(w);
	gc_jsonw_object_end(w);
}

static void put_unknown(struct gc_jsonw *w, const struct gc_plan *p)
{
	gc_jsonw_key(w, "unknown");
	gc_jsonw_array_begin(w);
	for (size_t t = 0; t < p->graph->ntargets; t++) {
		if (p->unknown[t] == NULL)
			continue;
		gc_jsonw_object_begin(w);
		gc_jsonw_key(w, "kind");
		gc_jsonw_string(w, gc_target_kind_name(p->graph->targets[t]->kind));
		gc_jsonw_key(w, "target");
		gc_jsonw_string(w, p->graph->targets[t]->name);
		gc_jsonw_key(w, "error");
		gc_jsonw_text(w, p->unknown[t]);
		gc_jsonw_object_end(w);
	}
	gc_jsonw_array_end(w);
}

/* The whole document, action by action: nothing of it is held but what
 * the writer has not flushed yet. */
static void put_plan(struct gc_jsonw *w, const struct gc_plan *p)
{
	gc_jsonw_object_begin(w);
	gc_jsonw_key(w, "format_version");
	gc_jsonw_int(w, 1);
	gc_jsonw_key(w, "changes");
	gc_jsonw_bool(w, !gc_plan_empty(p));
	gc_jsonw_key(w, "summary");
	put_summary(w, p);
	gc_jsonw_key(w, "rolling");
	gc_jsonw_object_begin(w);
	put_count(w, "max_unavailable", p->max_unavailable);
	gc_jsonw_key(w, "allow_vmotion");
	gc_jsonw_bool(w, p->allow_vmotion);
	gc_jsonw_object_end(w);
	gc_jsonw_key(w, "waves");
	gc_jsonw_array_begin(w);
	for (size_t i = 0; i < p->nwaves; i++)
		put_wave(w, &p->waves[i], i);
	gc_jsonw_array_end(w);
	if (p->nwarnings > 0) {
		gc_jsonw_key(w, "warnings");
		gc_jsonw_array_begin(w);
		for (size_t i = 0; i < p->nwarnings; i++)
			gc_jsonw_string(w, p->warnings[i]);
		gc_jsonw_array_end(w);
	}
	if (p->nunknown > 0)
		put_unknown(w, p);
	gc_jsonw_object_end(w);
	gc_jsonw_raw(w, "\n", 1);
}

void gc_plan_render_json(struct gc_buf *out, const struct gc_plan *p)
{
	struct gc_jsonw w;

	gc_jsonw_init_buf(&w, out, JSON_FLAGS);
	put_plan(&w, p);
	(void)gc_jsonw_finish(&w, NULL); /* a buffer has no write to fail */
}

int gc_plan_write_json(FILE *f, const struct gc_plan *p, struct gc_error *err)
{
	struct gc_jsonw w;

	gc_jsonw_init_file(&w, f, JSON_FLAGS);
	put_plan(&w, p);
	return gc_jsonw_finish(&w, err);
}
