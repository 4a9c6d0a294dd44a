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
 * they need the new driver loaded) come after the wait.
 *
 * A rebooting guest is a VM out of service, so the reboots roll under the
 * same budget as VM power-offs: rolling.max_unavailable_vms (a number or a
 * percentage of the role's guests), per VM role, in spec order, one role
 * after another; guest k reboots only after guest k-N verified.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_int.h"

bool plan_behind_reboot(const struct gc_resource *r)
{
	for (size_t i = 0; i < r->ndeps; i++)
		if (r->deps[i]->target == r->target && (r->deps[i]->flags & GC_RES_NEEDS_REBOOT))
			return true;
	return false;
}

struct gwin {
	struct gc_action *reboot, *verify;
	const char *role;
	bool taken;
};

static void guest_window(struct builder *b, const struct gc_target *tg, struct gc_action **acts,
			 size_t n, struct gwin *out)
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
	plan_reboot_why(&b->scratch, "guest reboot", nreboot, pending,
			pending ? oh->reboot_pending_why : NULL, "an installed driver is not loaded yet");
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
	out->reboot = reboot;
	out->verify = verify;
	out->role = tg->vm != NULL ? tg->vm->role : NULL;
	for (size_t i = 0; i < n; i++) {
		struct gc_action *a = acts[i];

		if ((a->flags & GC_RES_AFTER_REBOOT) && a->resource != NULL &&
		    plan_behind_reboot(a->resource)) {
			plan_dep(b, wait, a);
			if (a->why == NULL)
				a->why = "applied after the guest's reboot: it needs the new driver loaded";
		} else {
			plan_dep(b, a, reboot);
		}
		plan_dep(b, a, verify);
	}
}

static bool same_role(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void after(struct builder *b, struct gwin *before, struct gwin *w, const char *why)
{
	plan_dep(b, before->verify, w->reboot);
	gc_buf_reset(&b->scratch);
	gc_buf_printf(&b->scratch, "%s; %s", w->reboot->why, why);
	w->reboot->why = gc_arena_strndup(&b->p->arena, gc_buf_str(&b->scratch), b->scratch.len);
}

/* rolling.max_unavailable_vms over the guests' reboots (see the top). */
static void budget(struct builder *b, struct gwin *w, size_t n)
{
	unsigned want = b->g->rolling.max_unavailable_vms ? b->g->rolling.max_unavailable_vms : 1;
	bool pct = b->g->rolling.max_unavailable_vms_pct;
	struct gwin **order = gc_xcalloc(n + 1, sizeof(*order));
	size_t norder = 0, prev = 0, nprev = 0;
	char why[160];

	for (size_t i = 0; i < n; i++) {
		size_t start = norder, size, k, lim;

		if (w[i].taken || w[i].reboot == NULL)
			continue;
		for (size_t j = i; j < n; j++)
			if (!w[j].taken && w[j].reboot != NULL && same_role(w[i].role, w[j].role)) {
				order[norder++] = &w[j];
				w[j].taken = true;
			}
		size = norder - start;
		lim = pct ? size * want / 100 : want;
		if (lim < 1)
			lim = 1;
		for (k = 0; k < size; k++) {
			if (k >= lim) {
				snprintf(why, sizeof(why), "after %s verified (rolling.max_unavailable_vms: "
					 "%u%s)", order[start + k - lim]->reboot->vm, want, pct ? "%" : "");
				after(b, order[start + k - lim], order[start + k], why);
			} else if (nprev > 0) {
				snprintf(why, sizeof(why), "after the guests of role '%s' verified",
					 order[prev]->role ? order[prev]->role : "(none)");
				for (size_t p = prev; p < prev + nprev; p++)
					plan_dep(b, order[p]->verify, order[start + k]->reboot);
				after(b, order[prev + nprev - 1], order[start + k], why);
			}
		}
		nprev = size < lim ? size : lim;
		prev = norder - nprev;
	}
	free(order);
}

/*
 * The guest stage runs in the plan's last wave.  Waves are barriers for
 * the hosts' maintenance windows; a guest's work touches no host, so left
 * in its VM's wave it would hold the next host's window back for the
 * length of its installs and reboot (a first apply of N hosts one at a
 * time would install and reboot the guests one wave after another).  In
 * the last wave every VM is back on its host: the guests go in parallel,
 * their reboots still under rolling.max_unavailable_vms.  No guest action
 * is a prerequisite of a host's or VM's, so no dependency points backwards.
 */
static void guests_last(struct builder *b)
{
	size_t last = 0;

	for (size_t i = 0; i < b->n; i++)
		if (b->minwave[b->list[i]->seq] > last)
			last = b->minwave[b->list[i]->seq];
	for (size_t i = 0; i < b->n; i++)
		if (b->list[i]->target->kind == GC_TARGET_GUEST)
			b->minwave[b->list[i]->seq] = last;
}

void plan_guest_reboots(struct builder *b)
{
	size_t nt = b->g->ntargets, n0 = b->n, nw = 0;
	size_t *start;
	struct gc_action **acts;
	struct gwin *w;

	if (!plan_has_kind(b->g, GC_TARGET_GUEST))
		return; /* nothing to window, and no guest step to put last */
	/* the guests' resource actions grouped by target, in creation order,
	 * in one pass (a scan of every action per guest was quadratic: 39 s
	 * for 10,000 guests); the windows' own steps come after n0 */
	start = gc_xcalloc(nt + 2, sizeof(*start));
	acts = gc_xcalloc(n0 + 1, sizeof(*acts));
	w = gc_xcalloc(nt + 1, sizeof(*w));

	for (size_t i = 0; i < n0; i++) {
		const struct gc_action *a = b->list[i];

		if (a->target->kind == GC_TARGET_GUEST && a->target->index < nt &&
		    a->kind == GC_ACT_APPLY && a->op != GC_OP_NONE)
			start[a->target->index + 2]++;
	}
	for (size_t t = 0; t < nt; t++)
		start[t + 2] += start[t + 1];
	for (size_t i = 0; i < n0; i++) {
		struct gc_action *a = b->list[i];

		if (a->target->kind == GC_TARGET_GUEST && a->target->index < nt &&
		    a->kind == GC_ACT_APPLY && a->op != GC_OP_NONE)
			acts[start[a->target->index + 1]++] = a;
	}
	/* now start[t] .. start[t + 1] are target t's */
	for (size_t t = 0; t < nt; t++) {
		const struct gc_target *tg = b->g->targets[t];

		if (tg->kind != GC_TARGET_GUEST)
			continue;
		guest_window(b, tg, acts + start[t], start[t + 1] - start[t], &w[nw]);
		if (w[nw].reboot != NULL)
			nw++;
	}
	budget(b, w, nw);
	guests_last(b);
	free(w);
	free(acts);
	free(start);
}
