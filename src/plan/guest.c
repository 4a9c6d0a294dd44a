/*
 * guest.c - the guest's one reboot.
 *
 * A guest change flagged GC_RES_NEEDS_REBOOT (an NVIDIA driver or
 * MLNX_OFED install) takes effect after the guest reboots; so does a driver
 * that an earlier run installed but the running kernel has not loaded yet
 * (the guest driver reports it as the guest's reboot_pending).  Per guest
 * with either, this adds one REBOOT, a WAIT_HOST that needs evidence that
 * the guest booted again (its boot id changed), and a VERIFY that reads
 * the guest back; the changes flagged GC_RES_AFTER_REBOOT that depend on
 * a reboot-needing resource of the same guest (licence, peer memory, QoS:
 * they need the new driver loaded) come after the wait.  Guests have no
 * maintenance mode; rolling their reboots is the executor's business.
 */
#include <stdlib.h>

#include "plan_int.h"

/* Does r depend on a reboot-needing resource of its own target? */
static bool behind_reboot(const struct gc_resource *r)
{
	for (size_t i = 0; i < r->ndeps; i++)
		if (r->deps[i]->target == r->target && (r->deps[i]->flags & GC_RES_NEEDS_REBOOT))
			return true;
	return false;
}

static void guest_window(struct builder *b, const struct gc_target *tg, struct gc_action **acts,
			 size_t n)
{
	const struct gc_observed_host *oh = gc_observed_host(b->o, tg->name);
	bool pending = oh != NULL && oh->reboot_pending;
	struct gc_action *reboot, *wait, *verify;
	size_t nreboot = 0;

	for (size_t i = 0; i < n; i++)
		nreboot += (acts[i]->flags & GC_RES_NEEDS_REBOOT) != 0;
	if (nreboot == 0 && !pending)
		return;
	gc_buf_reset(&b->scratch);
	if (nreboot > 0)
		gc_buf_printf(&b->scratch, "one guest reboot for %zu change%s that take%s effect after "
					   "a reboot", nreboot, nreboot == 1 ? "" : "s",
			      nreboot == 1 ? "s" : "");
	if (pending)
		gc_buf_printf(&b->scratch, "%s%s", nreboot > 0 ? "; also owed: " : "a reboot is owed: ",
			      oh->reboot_pending_why ? oh->reboot_pending_why
						     : "an installed driver is not loaded yet");
	reboot = plan_action(b, GC_ACT_REBOOT, GC_OP_NONE, tg, NULL);
	reboot->why = gc_arena_strndup(&b->p->arena, gc_buf_str(&b->scratch), b->scratch.len);
	reboot->vm = tg->name;
	wait = plan_action(b, GC_ACT_WAIT_HOST, GC_OP_NONE, tg, NULL);
	wait->why = "the guest must answer again, with a new boot id";
	wait->vm = tg->name;
	plan_dep(b, reboot, wait);
	verify = plan_action(b, GC_ACT_VERIFY, GC_OP_NONE, tg, NULL);
	verify->why = "read the guest back after its reboot";
	verify->vm = tg->name;
	plan_dep(b, wait, verify);
	b->p->stats.reboots++;
	for (size_t i = 0; i < n; i++) {
		struct gc_action *a = acts[i];

		if ((a->flags & GC_RES_AFTER_REBOOT) && a->resource != NULL &&
		    behind_reboot(a->resource)) {
			plan_dep(b, wait, a);
			if (a->why == NULL)
				a->why = "applied after the guest's reboot: it needs the new driver loaded";
		} else {
			plan_dep(b, a, reboot);
		}
		plan_dep(b, a, verify);
	}
}

void plan_guest_reboots(struct builder *b)
{
	struct gc_action **acts = gc_xcalloc(b->n + 1, sizeof(*acts));

	for (size_t t = 0; t < b->g->ntargets; t++) {
		const struct gc_target *tg = b->g->targets[t];
		size_t n = 0;

		if (tg->kind != GC_TARGET_GUEST)
			continue;
		for (size_t i = 0; i < b->n; i++)
			if (b->list[i]->target == tg && b->list[i]->kind == GC_ACT_APPLY &&
			    b->list[i]->op != GC_OP_NONE)
				acts[n++] = b->list[i];
		guest_window(b, tg, acts, n);
	}
	free(acts);
}
