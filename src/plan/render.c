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
 * JSON is built with json-c; its shape is docs/plan-json.md.
 */
#include <assert.h>
#include <string.h>

#include <json-c/json.h>

#include "gc/json.h"
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
		gc_buf_printf(out, "power off %s (guest shutdown)", a->vm);
		return;
	case GC_ACT_POWER_ON:
		gc_buf_printf(out, "power on %s", a->vm);
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
		gc_buf_printf(out, "%smaintenance", sep);
		sep = ", ";
	}
	if (flags & GC_RES_NEEDS_REBOOT) {
		gc_buf_printf(out, "%sreboot", sep);
		sep = ", ";
	}
	if (flags & GC_RES_NEEDS_VM_OFF)
		gc_buf_printf(out, "%sVM off", sep);
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
		gc_buf_printf(out, "%s%s" C_RESET, op_color(a->op), mark);
	else
		gc_buf_puts(out, mark);
	gc_buf_putc(out, ' ');
	if (a->kind != GC_ACT_APPLY && a->op != GC_OP_NONE) {
		/* vm.power: a power step that is also a resource change */
		step_text(out, a);
		gc_buf_printf(out, " (%s)", a->resource_id);
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
		if (color)
			gc_buf_printf(out, "        " C_DIM "why: %s" C_RESET "\n", a->why);
		else
			gc_buf_printf(out, "        why: %s\n", a->why);
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

void gc_plan_render_text(struct gc_buf *out, const struct gc_plan *p, unsigned flags)
{
	bool color = (flags & GC_RENDER_COLOR) != 0;

	if (gc_plan_empty(p) && p->nunknown == 0) {
		gc_buf_puts(out, "No changes. The cluster matches the spec.\n");
		return;
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

			gc_buf_printf(out, "\n  %s %s\n", gc_target_kind_name(pt->target->kind),
				      pt->target->name);
			for (size_t i = 0; i < pt->nactions; i++)
				action_text(out, pt->actions[i], color);
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
}

/* ---------------------------------------------------------------- JSON */

static json_object *action_json(const struct gc_action *a)
{
	json_object *o = json_object_new_object();
	json_object *flags = json_object_new_array();
	json_object *changes = json_object_new_array();
	json_object *deps = json_object_new_array();

	json_object_object_add(o, "seq", json_object_new_int64((int64_t)a->seq));
	json_object_object_add(o, "kind", json_object_new_string(gc_action_kind_name(a->kind)));
	json_object_object_add(o, "op", json_object_new_string(gc_op_name(a->op)));
	json_object_object_add(o, "synthesized", json_object_new_boolean(a->synthesized));
	json_object_object_add(o, "resource", gc_json_text(a->resource_id));
	json_object_object_add(o, "resource_kind",
			       a->resource_id ? json_object_new_string(gc_res_kind_name(a->res_kind))
					      : NULL);
	json_object_object_add(o, "host", gc_json_text(a->host));
	json_object_object_add(o, "vm", gc_json_text(a->vm));
	json_object_object_add(o, "dest_host", gc_json_text(a->dest_host));
	if (a->flags & GC_RES_NEEDS_MAINTENANCE)
		json_object_array_add(flags, json_object_new_string("needs_maintenance"));
	if (a->flags & GC_RES_NEEDS_REBOOT)
		json_object_array_add(flags, json_object_new_string("needs_reboot"));
	if (a->flags & GC_RES_NEEDS_VM_OFF)
		json_object_array_add(flags, json_object_new_string("needs_vm_off"));
	if (a->flags & GC_RES_AFTER_REBOOT)
		json_object_array_add(flags, json_object_new_string("after_reboot"));
	json_object_object_add(o, "flags", flags);
	for (size_t i = 0; i < a->nchanges; i++) {
		json_object *c = json_object_new_object();

		json_object_object_add(c, "key", json_object_new_string(a->changes[i].key));
		json_object_object_add(c, "old", gc_json_text(a->changes[i].old_value));
		json_object_object_add(c, "new", gc_json_text(a->changes[i].new_value));
		json_object_array_add(changes, c);
	}
	json_object_object_add(o, "changes", changes);
	json_object_object_add(o, "why", gc_json_text(a->why));
	for (size_t i = 0; i < a->ndeps; i++)
		json_object_array_add(deps, json_object_new_int64((int64_t)a->deps[i]->seq));
	json_object_object_add(o, "after", deps);
	return o;
}

static json_object *summary_json(const struct gc_plan *p)
{
	json_object *o = json_object_new_object();
	const struct gc_plan_stats *s = &p->stats;

	json_object_object_add(o, "add", json_object_new_int64((int64_t)s->add));
	json_object_object_add(o, "change", json_object_new_int64((int64_t)s->change));
	json_object_object_add(o, "destroy", json_object_new_int64((int64_t)s->destroy));
	json_object_object_add(o, "synthesized", json_object_new_int64((int64_t)s->synthesized));
	json_object_object_add(o, "hosts_in_maintenance",
			       json_object_new_int64((int64_t)s->hosts_in_maintenance));
	json_object_object_add(o, "reboots", json_object_new_int64((int64_t)s->reboots));
	json_object_object_add(o, "actions", json_object_new_int64((int64_t)p->nactions));
	json_object_object_add(o, "waves", json_object_new_int64((int64_t)p->nwaves));
	json_object_object_add(o, "critical_path", json_object_new_int64((int64_t)s->critical_path));
	return o;
}

static void put_target(struct gc_buf *out, const struct gc_plan_target *pt)
{
	gc_buf_puts(out, "        {\n");
	gc_json_put_key(out, 10, "kind");
	gc_json_put(out, json_object_new_string(gc_target_kind_name(pt->target->kind)), 0);
	gc_buf_puts(out, ",\n");
	gc_json_put_key(out, 10, "name");
	gc_json_put(out, json_object_new_string(pt->target->name), 0);
	gc_buf_puts(out, ",\n");
	gc_json_put_key(out, 10, "actions");
	gc_buf_puts(out, "[\n");
	for (size_t i = 0; i < pt->nactions; i++) {
		gc_buf_printf(out, "%*s", 12, "");
		gc_json_put(out, action_json(pt->actions[i]), 12);
		gc_buf_puts(out, i + 1 < pt->nactions ? ",\n" : "\n");
	}
	gc_buf_puts(out, "          ]\n        }");
}

void gc_plan_render_json(struct gc_buf *out, const struct gc_plan *p)
{
	json_object *rolling = json_object_new_object();

	gc_buf_puts(out, "{\n");
	gc_json_put_key(out, 2, "format_version");
	gc_buf_puts(out, "1,\n");
	gc_json_put_key(out, 2, "changes");
	gc_buf_puts(out, gc_plan_empty(p) ? "false,\n" : "true,\n");
	gc_json_put_key(out, 2, "summary");
	gc_json_put(out, summary_json(p), 2);
	gc_buf_puts(out, ",\n");
	json_object_object_add(rolling, "max_unavailable",
			       json_object_new_int64((int64_t)p->max_unavailable));
	json_object_object_add(rolling, "allow_vmotion", json_object_new_boolean(p->allow_vmotion));
	gc_json_put_key(out, 2, "rolling");
	gc_json_put(out, rolling, 2);
	gc_buf_puts(out, ",\n");
	gc_json_put_key(out, 2, "waves");
	gc_buf_puts(out, "[\n");
	for (size_t w = 0; w < p->nwaves; w++) {
		const struct gc_plan_wave *pw = &p->waves[w];
		json_object *hosts = json_object_new_array();

		gc_buf_puts(out, "    {\n");
		gc_json_put_key(out, 6, "index");
		gc_buf_printf(out, "%zu,\n", w);
		for (size_t h = 0; h < pw->nmaintenance_hosts; h++)
			json_object_array_add(hosts, json_object_new_string(pw->maintenance_hosts[h]));
		gc_json_put_key(out, 6, "maintenance_hosts");
		gc_json_put(out, hosts, 6);
		gc_buf_puts(out, ",\n");
		gc_json_put_key(out, 6, "targets");
		gc_buf_puts(out, "[\n");
		for (size_t t = 0; t < pw->ntargets; t++) {
			put_target(out, &pw->targets[t]);
			gc_buf_puts(out, t + 1 < pw->ntargets ? ",\n" : "\n");
		}
		gc_buf_puts(out, "      ]\n    }");
		gc_buf_puts(out, w + 1 < p->nwaves ? ",\n" : "\n");
	}
	gc_buf_puts(out, "  ]");
	if (p->nwarnings > 0) {
		json_object *warn = json_object_new_array();

		for (size_t i = 0; i < p->nwarnings; i++)
			json_object_array_add(warn, json_object_new_string(p->warnings[i]));
		gc_buf_puts(out, ",\n");
		gc_json_put_key(out, 2, "warnings");
		gc_json_put(out, warn, 2);
	}
	if (p->nunknown > 0) {
		json_object *unk = json_object_new_array();

		for (size_t t = 0; t < p->graph->ntargets; t++) {
			json_object *u;

			if (p->unknown[t] == NULL)
				continue;
			u = json_object_new_object();
			json_object_object_add(u, "kind", json_object_new_string(
						   gc_target_kind_name(p->graph->targets[t]->kind)));
			json_object_object_add(u, "target", json_object_new_string(p->graph->targets[t]->name));
			json_object_object_add(u, "error", gc_json_text(p->unknown[t]));
			json_object_array_add(unk, u);
		}
		gc_buf_puts(out, ",\n");
		gc_json_put_key(out, 2, "unknown");
		gc_json_put(out, unk, 2);
	}
	gc_buf_puts(out, "\n}\n");
}
