/*
 * rollout.c - what decides whether a rollout goes on: halting after failed
 * waves (rolling.max_failures, --continue-on-error), and, for a saved plan,
 * whether every target still looks as it did when the plan was made
 * (per-target fingerprints of what the planner reads); what of a live plan
 * is unknown because a target could not be observed.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "exec_int.h"
#include "gc/spec.h"


static size_t count_failed_targets(const struct run *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->nslots; i++) {
		if (r->slots[i].failed || r->slots[i].lane_failed)
			n++;
	}
	return n;
}

/* The rollout halted: wave wi is not started.  Its actions count as skipped
 * and not started (no event each: the summary names them). */
void gc_exec_not_started(struct run *r, size_t wi)
{
	const struct gc_plan_wave *w = &r->rep->plan->waves[wi];
	size_t i, j;

	for (i = 0; i < w->ntargets; i++) {
		struct tslot *s = &r->slots[w->targets[i].target->index];

		for (j = 0; j < w->targets[i].nactions; j++) {
			const struct gc_action *a = w->targets[i].actions[j];

			if (r->st[a->seq - 1] != A_PENDING)
				continue;
			if (s->drv == NULL || !gc_exec_selected(r->ctx.opts, s->target->kind)) {
				r->st[a->seq - 1] = A_OUT_OF_SCOPE;
				r->rep->out_of_scope++;
				continue;
			}
			r->st[a->seq - 1] = A_SKIPPED;
			s->rep->skipped++;
			s->rep->not_started++;
			r->rep->skipped++;
			r->rep->not_started++;
		}
	}
}

/* Before wave wi: halt the rollout when more targets failed than
 * rolling.max_failures allows.  True when wave wi must not start. */
bool gc_exec_halted(struct run *r, const struct gc_graph *g, size_t wi)
{
	size_t failed;
	char msg[256];

	if (r->rep->halted_before_wave != 0)
		return true;
	if (r->ctx.opts->continue_on_error)
		return false;
	failed = count_failed_targets(r);
	if (failed <= g->rolling.max_failures)
		return false;
	r->rep->halted_before_wave = wi + 1;
	r->rep->failed_targets = failed;
	if (wi + 1 == r->rep->plan->nwaves)
		snprintf(msg, sizeof(msg), "rollout halted: %zu failed target%s, rolling.max_failures is "
			 "%u; wave %zu not started", failed, failed == 1 ? "" : "s",
			 g->rolling.max_failures, wi + 1);
	else
		snprintf(msg, sizeof(msg), "rollout halted: %zu failed target%s, rolling.max_failures is "
			 "%u; waves %zu-%zu not started", failed, failed == 1 ? "" : "s",
			 g->rolling.max_failures, wi + 1, r->rep->plan->nwaves);
	gc_exec_emit(&r->ctx, GC_EV_WARN, NULL, NULL, msg, wi);
	return true;
}

/* ---------------------------------------------------------------- fingerprints */

static void fnv(uint64_t *h, const char *s)
{
	for (; s != NULL && *s; s++) {
		*h ^= (unsigned char)*s;
		*h *= 0x100000001b3ull;
	}
	*h ^= 0xff; /* a separator no text holds */
	*h *= 0x100000001b3ull;
}

/* The spec as the graph holds it: every resource's id and desired
 * properties, in graph order (journal_run_end: "converged" is for this). */
void gc_exec_desired_hash(const struct gc_graph *g, char out[32])
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < g->nresources; i++) {
		const struct gc_resource *res = g->resources[i];

		fnv(&h, res->id);
		for (size_t k = 0; k < res->nprops; k++) {
			fnv(&h, res->props[k].key);
			fnv(&h, res->props[k].value);
		}
	}
	snprintf(out, 32, "fnv1a64:%016llx", (unsigned long long)h);
}

/*
 * Every observed target's fingerprint: FNV-1a 64 over what the planner reads
 * of it, in a fixed order: each of its resources' observed properties, an
 * ESXi host's facts (maintenance, pending reboot, ours), the vCenter's VMs
 * (power, host).  Equal fingerprints: the planner sees the same target.
 */
void gc_exec_fingerprint(struct run *r)
{
	const struct gc_graph *g = r->ctx.graph;
	size_t i, j, k;

	for (i = 0; i < r->nslots; i++) {
		struct tslot *s = &r->slots[i];
		uint64_t h = 0xcbf29ce484222325ull;

		if (!s->observed)
			continue;
		for (j = 0; j < r->ntres[i]; j++) {
			const struct gc_resource *res = r->tres[i][j];
			const struct gc_observed_resource *o = gc_observed_resource(r->ctx.obs, res->id);

			fnv(&h, res->id);
			for (k = 0; o != NULL && k < o->nprops; k++) {
				fnv(&h, o->props[k].key);
				fnv(&h, o->props[k].value);
			}
		}
		if (s->target->kind == GC_TARGET_ESXI) {
			const struct gc_observed_host *oh = gc_observed_host(r->ctx.obs, s->target->name);

			fnv(&h, oh == NULL ? "-" : oh->maintenance ? "maintenance" : "up");
			fnv(&h, oh != NULL && oh->reboot_pending ? "pending" : "-");
			fnv(&h, oh != NULL && oh->maintenance_ours ? "ours" : "-");
		}
		for (j = 0; gc_target_holds_vms(s->target->kind) && j < g->nvms; j++) {
			const struct gc_observed_vm *vm = gc_observed_vm(r->ctx.obs, g->vms[j].name);

			if (g->vms[j].target != NULL && g->vms[j].target != s->target)
				continue;

			fnv(&h, g->vms[j].name);
			fnv(&h, vm ? gc_power_name(vm->power) : "-");
			fnv(&h, vm && vm->host ? vm->host : "-");
		}
		snprintf(s->rep->fingerprint, sizeof(s->rep->fingerprint), "fnv1a64:%016llx",
			 (unsigned long long)h);
	}
}

/*
 * The live plan: a target that could not be observed has an unknown part
 * (per target, its error; NULL when every target was observed; the caller
 * frees the array), and the others are planned all the same.  apply keeps
 * such a target in its plan: its actions are skipped and the rollout halts.
 */
const char **gc_exec_unknown_targets(const struct run *r)
{
	const char **unknown = NULL;
	size_t i;

	for (i = 0; r->ctx.opts->plan_only && i < r->nslots; i++) {
		if (!r->slots[i].failed || r->slots[i].observed)
			continue;
		if (unknown == NULL)
			unknown = gc_xcalloc(r->nslots, sizeof(*unknown));
		unknown[i] = r->slots[i].rep->error ? r->slots[i].rep->error : "not observed";
	}
	return unknown;
}

/* A saved plan: every selected target must look as it did when the plan was
 * made.  0, or an error naming the first target that changed. */
int gc_exec_check_fingerprints(struct run *r, struct gc_error *err)
{
	const char *const *want = r->ctx.opts->expect_fingerprints;
	size_t i;

	for (i = 0; want != NULL && i < r->nslots; i++) {
		const struct tslot *s = &r->slots[i];
		const char *kind = gc_target_kind_name(s->target->kind);

		if (s->drv == NULL || !gc_exec_selected(r->ctx.opts, s->target->kind))
			continue;
		if (want[i] == NULL)
			return gc_error_set(err, GC_EINVAL, "%s '%s' is not in the saved plan: nothing "
					    "was changed; run plan --out again", kind, s->target->name);
		if (!s->observed)
			return gc_error_set(err, GC_EINVAL, "%s '%s' could not be observed, so the saved "
					    "plan cannot be checked against it: nothing was changed (%s)",
					    kind, s->target->name, s->rep->error ? s->rep->error : "");
		if (strcmp(want[i], s->rep->fingerprint) != 0)
			return gc_error_set(err, GC_EINVAL, "%s '%s' changed since the plan was saved: "
					    "nothing was changed; run plan --out again and review it",
					    kind, s->target->name);
	}
	return 0;
}
