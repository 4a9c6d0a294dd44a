/*
 * apply_report.c - what `gpuclusterctl apply` says when the run is over: the
 * per-target summary (with what the recovery did: hosts out of maintenance
 * mode, VMs powered back on or moved back, and the loud "!!!" lines for what
 * it could not), the halted rollout's waves, the round-trip counters of
 * -v, and the --json report (specs/apply-v1.schema.json, docs/apply-json.md).
 * cmd_apply.c runs the apply and picks which of these to print.
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gc/exec.h"
#include "gc/graph.h"
#include "gc/json.h"
#include "gc/plan.h"

/* The halted rollout: why, and what it did not start. */
static void print_not_started(FILE *f, const struct gc_exec_report *rep, const struct gc_graph *g)
{
	size_t i, n = 0, nwaves = rep->plan->nwaves;

	fprintf(f, "\nRollout halted: %zu failed target%s, rolling.max_failures is %u.\n",
		rep->failed_targets, rep->failed_targets == 1 ? "" : "s", g->rolling.max_failures);
	if (rep->halted_before_wave == nwaves)
		fprintf(f, "Not started: wave %zu of %zu, %zu actions on", nwaves, nwaves,
			rep->not_started);
	else
		fprintf(f, "Not started: waves %zu-%zu of %zu, %zu actions on", rep->halted_before_wave,
			nwaves, nwaves, rep->not_started);
	for (i = 0; i < rep->ntargets; i++) {
		if (rep->targets[i].not_started == 0)
			continue;
		fprintf(f, "%s %s", n++ ? "," : "", rep->targets[i].target->name);
	}
	fputs(".\nFix the failure and re-run apply (--continue-on-error starts the next waves "
	      "anyway).\n", f);
}

void cli_apply_print_summary(FILE *f, const struct gc_exec_report *rep, const struct gc_graph *g)
{
	size_t i, loud = 0;

	fputs("\nSummary:\n", f);
	for (i = 0; i < rep->ntargets; i++) {
		const struct gc_exec_target_report *t = &rep->targets[i];

		if (t->done + t->failed + t->skipped == 0 && t->error == NULL)
			continue;
		fprintf(f, "  %-12s %-8s %zu done, %zu failed, %zu skipped%s", t->target->name,
			gc_target_kind_name(t->target->kind), t->done, t->failed, t->skipped,
			t->error ? ": " : "");
		cli_put_shown(f, t->error, true);
		fputc('\n', f);
		if (t->left_in_maintenance)
			loud++;
		if (t->recovered)
			fprintf(f, "  %-12s          left maintenance mode after the %s\n",
				t->target->name, t->recovered_on_stop ? "interruption" : "failure");
		if (t->vms_back_on != NULL)
			fprintf(f, "  %-12s          powered back on after the %s: %s\n",
				t->target->name, rep->interrupted ? "interruption" : "failure",
				t->vms_back_on);
		if (t->vms_moved_back != NULL)
			fprintf(f, "  %-12s          moved back to their hosts after the %s: %s\n",
				t->target->name, rep->interrupted ? "interruption" : "failure",
				t->vms_moved_back);
		for (const char *w = t->vms_away_why, *nl; w != NULL && *w != '\0';
		     w = nl ? nl + 1 : NULL) {
			char *line;

			nl = strchr(w, '\n');
			line = nl ? gc_xstrndup(w, (size_t)(nl - w)) : gc_xstrdup(w);
			fprintf(f, "  %-12s          ", t->target->name);
			cli_put_shown(f, line, true);
			fputc('\n', f);
			free(line);
		}
		if (t->vms_left_off != NULL)
			loud++;
		if (t->reboot_owed && (t->failed || t->recovered_on_stop))
			fprintf(f, "  %-12s          a change still waits for a reboot: re-run apply\n",
				t->target->name);
	}
	if (rep->halted_before_wave != 0)
		print_not_started(f, rep, g);
	for (i = 0; i < rep->ntargets && loud; i++) {
		const struct gc_exec_target_report *t = &rep->targets[i];

		if (t->left_in_maintenance) {
			fprintf(f, "\n!!! host '%s' is LEFT IN MAINTENANCE MODE: ", t->target->name);
			cli_put_shown(f, t->maintenance_why, true);
			fputc('\n', f);
		}
		for (const char *w = t->vms_off_why, *nl; w != NULL && *w != '\0'; w = nl ? nl + 1 : NULL) {
			char *line;

			nl = strchr(w, '\n');
			line = nl ? gc_xstrndup(w, (size_t)(nl - w)) : gc_xstrdup(w);
			fputs("\n!!! ", f);
			cli_put_shown(f, line, true);
			fputc('\n', f);
			free(line);
		}
	}
	if (rep->out_of_scope > 0)
		fprintf(f, "  %zu actions on target kinds not selected with --only were not run\n",
			rep->out_of_scope);
}

/* -v: the round trips per ESXi host (the fewest, the most, and polls). */
void cli_apply_print_round_trips(const struct gc_exec_report *rep)
{
	uint64_t lo = UINT64_MAX, hi = 0, polls = 0;
	size_t hosts = 0;

	for (size_t i = 0; i < rep->ntargets; i++) {
		const struct gc_exec_target_report *t = &rep->targets[i];

		if (t->execs + t->poll_execs == 0)
			continue;
		hosts++;
		lo = t->execs < lo ? t->execs : lo;
		hi = t->execs > hi ? t->execs : hi;
		polls += t->poll_execs;
	}
	if (hosts > 0)
		fprintf(stderr, "gpuclusterctl: round trips per ESXi host: %llu to %llu over %zu hosts, "
			"besides %llu polls while they rebooted\n", (unsigned long long)lo,
			(unsigned long long)hi, hosts, (unsigned long long)polls);
}

/* A ", "-separated list of names as a JSON array ([] for NULL). */
static struct json_object *name_list(const char *list)
{
	struct json_object *a = json_object_new_array();

	for (const char *p = list, *comma; p != NULL && *p != '\0'; p = comma ? comma + 2 : NULL) {
		comma = strstr(p, ", ");
		json_object_array_add(a, comma ? json_object_new_string_len(p, (int)(comma - p))
					       : json_object_new_string(p));
	}
	return a;
}

void cli_apply_print_json(const struct gc_exec_report *rep, int status)
{
	struct json_object *o = json_object_new_object(), *ts = json_object_new_array();
	size_t i;

	json_object_object_add(o, "format_version", json_object_new_int(1));
	json_object_object_add(o, "status", json_object_new_string(status == 0 ? "ok" : status == GC_EXIT_INTERRUPTED ? "interrupted" : "failed"));
	json_object_object_add(o, "done", json_object_new_int64((int64_t)rep->done));
	json_object_object_add(o, "failed", json_object_new_int64((int64_t)rep->failed));
	json_object_object_add(o, "skipped", json_object_new_int64((int64_t)rep->skipped));
	json_object_object_add(o, "out_of_scope", json_object_new_int64((int64_t)rep->out_of_scope));
	json_object_object_add(o, "not_started", json_object_new_int64((int64_t)rep->not_started));
	json_object_object_add(o, "halted_before_wave",
			       rep->halted_before_wave ? json_object_new_int64((int64_t)rep->halted_before_wave) : NULL);
	json_object_object_add(o, "changing_commands", json_object_new_int64((int64_t)rep->changing_commands));
	json_object_object_add(o, "observe_seconds", json_object_new_double(rep->observe_s));
	json_object_object_add(o, "apply_seconds", json_object_new_double(rep->apply_s));
	for (i = 0; i < rep->ntargets; i++) {
		const struct gc_exec_target_report *t = &rep->targets[i];
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "name", json_object_new_string(t->target->name));
		json_object_object_add(j, "kind", json_object_new_string(gc_target_kind_name(t->target->kind)));
		json_object_object_add(j, "done", json_object_new_int64((int64_t)t->done));
		json_object_object_add(j, "failed", json_object_new_int64((int64_t)t->failed));
		json_object_object_add(j, "skipped", json_object_new_int64((int64_t)t->skipped));
		json_object_object_add(j, "not_started", json_object_new_int64((int64_t)t->not_started));
		json_object_object_add(j, "error", gc_json_text(t->error));
		json_object_object_add(j, "left_in_maintenance", json_object_new_boolean(t->left_in_maintenance));
		json_object_object_add(j, "maintenance_reason", gc_json_text(t->maintenance_why));
		json_object_object_add(j, "exited_maintenance_early",
				       json_object_new_boolean(t->recovered));
		json_object_object_add(j, "reboot_owed", json_object_new_boolean(t->reboot_owed));
		json_object_object_add(j, "vms_powered_back_on", name_list(t->vms_back_on));
		json_object_object_add(j, "vms_left_powered_off", name_list(t->vms_left_off));
		json_object_object_add(j, "vms_moved_back", name_list(t->vms_moved_back));
		json_object_object_add(j, "vms_left_moved_away", name_list(t->vms_left_away));
		if (t->execs + t->poll_execs > 0) {
			json_object_object_add(j, "round_trips", json_object_new_int64((int64_t)t->execs));
			json_object_object_add(j, "reboot_polls", json_object_new_int64((int64_t)t->poll_execs));
		}
		json_object_array_add(ts, j);
	}
	json_object_object_add(o, "targets", ts);
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	json_object_put(o);
}
