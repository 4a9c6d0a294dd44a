/*
 * recover.c - what the journal remembers across runs and what the executor
 * puts right after the waves.
 *
 * Before a command goes out, its intent is journalled (and fsync'd):
 * maintenance entered by us, a reboot owed, a switch configuration not yet
 * saved.  The next run reads that back (recall) and hands it to the planner
 * as observed facts (feed).  After the waves, a host we left in maintenance
 * after a failure is taken out again unless that would be unsafe, and a
 * configuration an earlier run left unsaved is saved.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_int.h"
#include "gc/journal.h"

/* When the newest reboot of target went out, if it came after the newest
 * owed change (a reboot of an earlier cycle pays nothing); 0 otherwise. */
static double reboot_sent(const struct gc_jhistory *h, const char *target)
{
	size_t i, owed = 0, sent = 0;
	double ts = 0;

	for (i = 0; i < h->n; i++) {
		const struct gc_jrecord *rec = &h->records[i];

		if (rec->state != GC_J_START || strcmp(rec->target, target) != 0)
			continue;
		if (strcmp(rec->kind, "reboot_owed") == 0) {
			owed = i + 1;
		} else if (strcmp(rec->kind, "reboot") == 0) {
			sent = i + 1;
			ts = rec->ts;
		}
	}
	return sent > owed && owed > 0 ? ts : 0;
}

/* When the newest reboot of target went out, if no wait or verify saw the
 * target back afterwards (that run was killed, or its wait gave up); 0 when
 * every reboot was seen through.  The record is written before the command
 * goes out: the reboot may or may not have taken place. */
static double reboot_unseen(const struct gc_jhistory *h, const char *target)
{
	double ts = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct gc_jrecord *rec = &h->records[i];

		if (strcmp(rec->target, target) != 0)
			continue;
		if (rec->state == GC_J_START && strcmp(rec->kind, "reboot") == 0)
			ts = rec->ts;
		else if (rec->state == GC_J_SKIPPED && strcmp(rec->kind, "reboot") == 0)
			ts = 0; /* never sent: a command of its batch before it failed */
		else if (rec->state == GC_J_DONE &&
			 (strcmp(rec->kind, "wait_host") == 0 || strcmp(rec->kind, "verify") == 0 ||
			  strcmp(rec->kind, "reboot_owed") == 0 || strcmp(rec->kind, "reboot_seen") == 0))
			ts = 0;
	}
	return ts;
}

/* Is action (a journal record's) the start of VM vm: "power on VM", or the
 * VM's power resource ("+ vm/VM/power", "~ vm/VM/power")? */
static bool starts_vm(const char *action, const char *vm)
{
	size_t n = strlen(vm), len = strlen(action);

	if (strncmp(action, "power on ", 9) == 0 && strcmp(action + 9, vm) == 0)
		return true;
	return len == n + 11 && (action[0] == '+' || action[0] == '~') &&
	       strncmp(action + 1, " vm/", 4) == 0 && strncmp(action + 5, vm, n) == 0 &&
	       strcmp(action + 5 + n, "/power") == 0;
}

/* When an earlier apply started a guest's VM (the record on the VM's KVM
 * host or vCenter is written before the call goes out) and no step of the
 * guest was done after it: that run was killed while the VM booted, and the
 * guest may not answer yet; 0 otherwise. */
static double start_unseen(const struct gc_jhistory *h, const char *vm)
{
	double ts = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct gc_jrecord *rec = &h->records[i];

		if (strcmp(rec->target, vm) == 0) {
			if (rec->state == GC_J_DONE)
				ts = 0; /* the guest was reached after it */
		} else if (rec->state == GC_J_START && rec->action != NULL &&
			   starts_vm(rec->action, vm)) {
			ts = rec->ts;
		}
	}
	return ts;
}

/* The journal's last `run` record says "converged" with this spec's hash. */
static bool last_run_converged(const struct gc_jhistory *h, const struct gc_graph *g)
{
	char hash[32], want[48];
	size_t i = h->n;

	if (g == NULL)
		return false;
	gc_exec_desired_hash(g, hash);
	snprintf(want, sizeof(want), "converged %s", hash);
	while (i-- > 0) {
		const struct gc_jrecord *rec = &h->records[i];

		if (rec->target[0] == '\0' && strcmp(rec->kind, "run") == 0)
			return rec->state == GC_J_DONE && rec->detail != NULL &&
			       strcmp(rec->detail, want) == 0;
	}
	return false;
}

void gc_exec_recall_journal(struct run *r, const char *cluster)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_jhistory h;
	size_t i;

	r->expect_changes = true;
	if (gc_journal_read(&h, r->ctx.opts->state_dir, cluster, &err) != 0) {
		gc_exec_emit(&r->ctx, GC_EV_WARN, NULL, NULL, err.msg, 0);
		return;
	}
	/* the last run that had work converged on this very spec: this one
	 * likely has none */
	r->expect_changes = !last_run_converged(&h, r->ctx.graph);
	for (i = 0; i < r->nslots; i++) {
		struct tslot *s = &r->slots[i];

		s->lease_left = gc_jhistory_last(&h, s->target->name, "lease") == GC_J_START;
		s->lease_left_before = s->lease_left;
		if (s->target->kind == GC_TARGET_SWITCH) {
			s->save_owed = s->save_owed_logged =
				gc_jhistory_last(&h, s->target->name, "save_owed") == GC_J_START;
			if (s->save_owed)
				gc_exec_emit(&r->ctx, GC_EV_WARN, s->target, NULL,
				     "the configuration may be unsaved: an earlier apply stopped before "
				     "'configuration write'; apply saves it",
				     0);
		}
		/* a reboot not seen through: observe it with patience (exec.c) */
		if (s->target->kind == GC_TARGET_ESXI || s->target->kind == GC_TARGET_KVM ||
		    s->target->kind == GC_TARGET_GUEST)
			s->reboot_unseen_ts = reboot_unseen(&h, s->target->name);
		/* a guest whose VM an earlier apply started and never reached: the
		 * same patience for its first boot */
		if (s->target->kind == GC_TARGET_GUEST) {
			double st = start_unseen(&h, s->target->name);

			if (st > s->reboot_unseen_ts) {
				s->reboot_unseen_ts = st;
				s->unseen_is_start = true;
			}
		}
		/* a KVM host owes reboots too (its boot time decides), never maintenance */
		if (s->target->kind != GC_TARGET_ESXI && s->target->kind != GC_TARGET_KVM)
			continue;
		s->maint_ours = s->target->kind == GC_TARGET_ESXI &&
				gc_jhistory_last(&h, s->target->name, "maintenance") == GC_J_START;
		s->reboot_owed = gc_jhistory_last(&h, s->target->name, "reboot_owed") == GC_J_START;
		s->reboot_owed_logged = s->reboot_owed;
		if (s->reboot_owed)
			s->reboot_sent_ts = reboot_sent(&h, s->target->name);
	}
	gc_jhistory_free(&h);
}

/*
 * A reboot owed by an earlier run whose reboot already went out (the run was
 * killed while the host came back): the host's boot time decides.  Booted
 * after the reboot was journalled (the record is written before the command
 * goes out): the reboot took place and is not sent again.  Booted before, or
 * no way to tell: still owed.
 */
void gc_exec_check_reboots(struct run *r)
{
	size_t i;

	for (i = 0; i < r->nslots; i++) {
		struct tslot *s = &r->slots[i];
		struct gc_error err = GC_ERROR_INIT;
		double boot;
		char msg[160];

		if (!s->reboot_owed || s->reboot_sent_ts <= 0 || !s->observed || s->conn == NULL ||
		    s->drv->boot_time == NULL)
			continue;
		if (s->drv->boot_time(s->conn, &r->ctx, &boot, &err) != 0 || boot < s->reboot_sent_ts)
			continue;
		s->reboot_owed = s->reboot_owed_logged = false;
		snprintf(msg, sizeof(msg), "booted %.1f s after the reboot an earlier apply sent: "
			 "not rebooting again", boot - s->reboot_sent_ts);
		gc_exec_journal(r, s->target, "resume: reboot evidence", "reboot_owed", GC_J_DONE, msg);
		gc_exec_emit(&r->ctx, GC_EV_NOTE, s->target, NULL, msg, 0);
	}
}

void gc_exec_feed_journal(struct run *r)
{
	size_t i;

	for (i = 0; i < r->nslots; i++) {
		struct tslot *s = &r->slots[i];
		const struct gc_observed_host *oh;

		if ((s->target->kind != GC_TARGET_ESXI && s->target->kind != GC_TARGET_KVM) ||
		    !s->observed)
			continue;
		oh = gc_observed_host(r->ctx.obs, s->target->name);
		if (s->reboot_owed && (oh == NULL || !oh->reboot_pending))
			gc_observed_set_host_pending(r->ctx.obs, s->target->name, true,
						     "a change applied by an earlier run awaits its reboot");
		if (s->maint_ours && oh != NULL && oh->maintenance)
			gc_observed_set_host_ours(r->ctx.obs, s->target->name, true);
	}
}

/*
 * Bookkeeping in the journal for what cannot be observed later.  Intent is
 * written (and fsync'd) BEFORE the command goes out: if we die right after
 * the host acted, the next run still knows that the host is in maintenance
 * because of us and that a reboot is owed (module parameters have no
 * running view in esxcli, so only the journal can tell).
 */
void gc_exec_remember_before(struct run *r, struct tslot *s, const struct gc_action *a,
			    const char *aid)
{
	switch (a->kind) {
	case GC_ACT_ENTER_MAINTENANCE:
		if (!s->maint_ours) {
			s->maint_ours = true;
			gc_exec_journal(r, s->target, aid, "maintenance", GC_J_START, NULL);
		}
		break;
	case GC_ACT_APPLY:
		if (s->target->kind == GC_TARGET_SWITCH && !s->save_owed_logged) {
			s->save_owed = s->save_owed_logged = true;
			gc_exec_journal(r, s->target, aid, "save_owed", GC_J_START, NULL);
		}
		if ((a->flags & GC_RES_NEEDS_REBOOT) && !s->reboot_owed_logged) {
			s->reboot_owed = s->reboot_owed_logged = true;
			gc_exec_journal(r, s->target, aid, "reboot_owed", GC_J_START, NULL);
		}
		break;
	case GC_ACT_REBOOT:
		s->in_reboot = true;
		break;
	case GC_ACT_EXIT_MAINTENANCE:
	case GC_ACT_VERIFY:
	case GC_ACT_WAIT_HOST:
	case GC_ACT_POWER_OFF:
	case GC_ACT_POWER_ON:
	case GC_ACT_MIGRATE:
		break;
	}
}

void gc_exec_remember_after(struct run *r, struct tslot *s, const struct gc_action *a,
			   const char *aid, bool ok)
{
	switch (a->kind) {
	case GC_ACT_ENTER_MAINTENANCE:
		if (!ok) { /* the host said no: it is not in maintenance because of us */
			s->maint_ours = false;
			gc_exec_journal(r, s->target, aid, "maintenance", GC_J_DONE, "enter failed");
		}
		break;
	case GC_ACT_EXIT_MAINTENANCE:
		if (ok) {
			s->maint_ours = false;
			gc_exec_journal(r, s->target, aid, "maintenance", GC_J_DONE, NULL);
		}
		break;
	case GC_ACT_WAIT_HOST:
	case GC_ACT_VERIFY:
		if (!ok)
			break;
		/* it answers again after a reboot the driver has evidence of (or
		 * verified): leaving maintenance is safe and the owed reboot is paid */
		s->in_reboot = false;
		if (s->reboot_owed_logged) {
			s->reboot_owed = s->reboot_owed_logged = false;
			gc_exec_journal(r, s->target, aid, "reboot_owed", GC_J_DONE, NULL);
		}
		break;
	case GC_ACT_APPLY:
		/* the switch driver saves after each action's commands */
		if (ok && s->target->kind == GC_TARGET_SWITCH && s->save_owed_logged) {
			s->save_owed = s->save_owed_logged = false;
			gc_exec_journal(r, s->target, aid, "save_owed", GC_J_DONE, NULL);
		}
		break;
	case GC_ACT_REBOOT:
	case GC_ACT_POWER_OFF:
	case GC_ACT_POWER_ON:
	case GC_ACT_MIGRATE:
		break;
	}
}

/* After the waves: save what an earlier run left unsaved and this run did not. */
void gc_exec_settle_saves(struct run *r)
{
	size_t i;

	for (i = 0; i < r->nslots; i++) {
		struct tslot *s = &r->slots[i];
		struct gc_error err = GC_ERROR_INIT;

		if (!s->save_owed || s->failed || s->drv == NULL || s->drv->save == NULL ||
		    !gc_exec_selected(r->ctx.opts, s->target->kind) || r->rep->interrupted)
			continue;
		if (gc_exec_connect_slot(r, s, true, &err) == 0 && s->drv->save(s->conn, &r->ctx, s->target, &err) == 0) {
			s->save_owed = s->save_owed_logged = false;
			s->rep->done++;
			r->rep->done++;
			gc_exec_journal(r, s->target, "save", "save_owed", GC_J_DONE, NULL);
			gc_exec_emit(&r->ctx, GC_EV_WARN, s->target, NULL,
			     "saved the configuration an earlier apply left unsaved", 0);
		} else {
			s->failed = true;
			s->rep->failed++;
			r->rep->failed++;
			gc_exec_slot_error(s, err.msg);
			gc_exec_emit(&r->ctx, GC_EV_FAILED, s->target, NULL, err.msg, 0);
		}
	}
}

/* Does wave w hold a maintenance window of target t (its enter or exit)? */
static bool window_in_wave(const struct gc_plan_wave *w, const struct gc_target *t)
{
	size_t i, j;

	for (i = 0; i < w->ntargets; i++) {
		if (w->targets[i].target != t)
			continue;
		for (j = 0; j < w->targets[i].nactions; j++) {
			enum gc_action_kind k = w->targets[i].actions[j]->kind;

			if (k == GC_ACT_ENTER_MAINTENANCE || k == GC_ACT_EXIT_MAINTENANCE)
				return true;
		}
	}
	return false;
}

/* One host's way out of maintenance mode after a failure or an
 * interruption (gc_exec_for_slots: the hosts of a wave at once). */
static void exit_one(struct run *r, struct tslot *s, size_t i, void *arg)
{
	struct gc_action exit_a;
	struct gc_error err = GC_ERROR_INIT;
	/* a host whose window a failure (its own, or another's under
	 * --fail-fast) stopped leaves after the failure; one in a wave that the
	 * user's signal stopped, after the interruption (a step that the signal
	 * cut short, such as a reboot's wait, fails as well) */
	bool on_stop = r->rep->interrupted;
	const char *note = on_stop ? "left maintenance mode after the interruption"
				   : "left maintenance mode after the failure";

	(void)i;
	(void)arg;
	if (s->maint_left) { /* the failed step's own exec took it out */
		s->maint_left = false;
		gc_exec_journal(r, s->target, "recover: exit maintenance", "maintenance", GC_J_DONE,
				"left in the failed step's exec");
		s->maint_ours = false;
		s->rep->recovered = true;
		gc_exec_emit(&r->ctx, GC_EV_NOTE, s->target, NULL,
			     "left maintenance mode after the failure (in the read-back's exec)", 0);
		return;
	}
	memset(&exit_a, 0, sizeof(exit_a));
	exit_a.kind = GC_ACT_EXIT_MAINTENANCE;
	exit_a.target = s->target;
	exit_a.host = s->target->name;
	exit_a.synthesized = true;
	exit_a.why = on_stop ? "recover: leave maintenance mode after an interruption"
			     : "recover: leave maintenance mode after a failure";
	if (gc_exec_run_action(r, s, &exit_a, &err) == 0) {
		gc_exec_journal(r, s->target, "recover: exit maintenance", "maintenance", GC_J_DONE, NULL);
		s->maint_ours = false;
		s->rep->recovered = true;
		s->rep->recovered_on_stop = on_stop;
		gc_exec_emit(&r->ctx, GC_EV_NOTE, s->target, NULL, note, 0);
	} else {
		s->rep->left_in_maintenance = true;
		s->rep->maintenance_why = gc_xasprintf("leaving maintenance mode failed: %s", err.msg);
	}
}

/*
 * After a wave (w) or all of them (w NULL): an ESXi host that we put into
 * maintenance mode and whose window did not finish (it failed, its verify
 * failed, --fail-fast stopped it, or the user's signal did: Ctrl-C,
 * SIGTERM, SIGHUP) is taken out again, the hosts of the wave at once:
 * a stopped rollout leaves no host out of service that it can bring back.
 * A host whose reboot was not seen through (it never answered again, or the
 * signal came between its reboot and the wait for it) stays, loudly, and the journal
 * remembers for the next run; so does a host we could not take out.  Its
 * exit is retried on a transport fault as any step is, the user's first
 * signal notwithstanding (r->recovering): that signal asked for this.  After
 * a wave, only the hosts whose window was in that wave: a later wave's
 * window may still need the maintenance mode an earlier run left.  The
 * second signal never gets here (cmd_apply.c abandons the run at once).
 */
void gc_exec_recover_hosts(struct run *r, const struct gc_plan_wave *w)
{
	struct tslot **out = gc_xcalloc(r->nslots ? r->nslots : 1, sizeof(*out));
	size_t i, n = 0;

	for (i = 0; i < r->nslots; i++) {
		struct tslot *s = &r->slots[i];

		if (s->target->kind != GC_TARGET_ESXI || !s->maint_ours || s->drv == NULL ||
		    !gc_exec_selected(r->ctx.opts, s->target->kind) || s->rep->left_in_maintenance)
			continue;
		if (w != NULL && !window_in_wave(w, s->target))
			continue;
		if (s->in_reboot) {
			s->rep->left_in_maintenance = true;
			s->rep->maintenance_why = gc_xasprintf(
				r->rep->interrupted
					? "interrupted while it rebooted; re-run apply to finish "
					  "(the journal remembers)"
					: "its reboot was not confirmed (it did not answer again, or did "
					  "not go down): check the host, then re-run apply");
			continue;
		}
		out[n++] = s;
	}
	r->recovering = true;
	gc_exec_for_slots(r, out, n, exit_one, NULL);
	r->recovering = false;
	free(out);
}

/* Append item to a sep-separated list. */
static void list_add(char **list, const char *sep, const char *item)
{
	char *old = *list;

	*list = old ? gc_xasprintf("%s%s%s", old, sep, item) : gc_xstrdup(item);
	free(old);
}

/* The host slot named `name` (ESXi or KVM host), or NULL. */
static struct tslot *host_slot(struct run *r, const char *name)
{
	for (size_t i = 0; i < r->nslots; i++) {
		enum gc_target_kind k = r->slots[i].target->kind;

		if ((k == GC_TARGET_ESXI || k == GC_TARGET_KVM) &&
		    strcmp(r->slots[i].target->name, name) == 0)
			return &r->slots[i];
	}
	return NULL;
}

/* The first half of a VM's pair: its power-off, or its vMotion away from
 * its host (the return names the host as its destination). */
static bool first_half(const struct gc_action *a)
{
	if (a->vm == NULL)
		return false;
	if (a->kind == GC_ACT_POWER_OFF)
		return true;
	return a->kind == GC_ACT_MIGRATE && a->host != NULL &&
	       (a->dest_host == NULL || strcmp(a->dest_host, a->host) != 0);
}

static int half_cmp(const void *pa, const void *pb)
{
	const struct gc_action *a = *(const struct gc_action *const *)pa;
	const struct gc_action *b = *(const struct gc_action *const *)pb;

	if (a->target->index != b->target->index)
		return a->target->index < b->target->index ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return strcmp(a->vm, b->vm);
}

/* r->halves, once: one pass and a sort, where a scan of the plan for each
 * VM to restore cost (VMs x actions) in a large rollout stopped early. */
static void index_halves(struct run *r)
{
	const struct gc_plan *p = r->rep->plan;
	size_t i, n = 0;

	if (r->halves != NULL)
		return;
	for (i = 0; i < p->nactions; i++)
		n += first_half(p->actions[i]);
	r->halves = gc_xcalloc(n ? n : 1, sizeof(*r->halves));
	for (i = 0; i < p->nactions; i++)
		if (first_half(p->actions[i]))
			r->halves[r->nhalves++] = p->actions[i];
	qsort(r->halves, r->nhalves, sizeof(*r->halves), half_cmp);
}

/* This run did the first half of `second`'s pair (a POWER_ON, or a vMotion
 * back to its host): the VM's power-off, or its vMotion away from that
 * host, on the same target, done. */
static bool first_half_done(struct run *r, const struct gc_action *second)
{
	struct gc_action key;
	const struct gc_action *kp = &key;
	size_t lo = 0, hi;

	index_halves(r);
	memset(&key, 0, sizeof(key));
	key.target = second->target;
	key.kind = second->kind == GC_ACT_POWER_ON ? GC_ACT_POWER_OFF : GC_ACT_MIGRATE;
	key.vm = second->vm;
	hi = r->nhalves;
	while (lo < hi) { /* the first not below the key */
		size_t mid = lo + (hi - lo) / 2;

		if (half_cmp(&r->halves[mid], &kp) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < r->nhalves && half_cmp(&r->halves[lo], &kp) == 0; lo++) {
		const struct gc_action *a = r->halves[lo];

		if (r->st[a->seq - 1] == A_DONE &&
		    (a->kind == GC_ACT_POWER_OFF || strcmp(a->host, second->host) == 0))
			return true;
	}
	return false;
}

/* A step the recovery undoes: a VM's power-on, or its vMotion back to the
 * host it left for the window (the migration pair's return half). */
static bool restores(struct run *r, const struct gc_action *a)
{
	if (a->vm == NULL || r->st[a->seq - 1] != A_SKIPPED)
		return false;
	if (a->kind == GC_ACT_POWER_ON)
		return first_half_done(r, a);
	return a->kind == GC_ACT_MIGRATE && a->host != NULL && a->dest_host != NULL &&
	       strcmp(a->dest_host, a->host) == 0 && first_half_done(r, a);
}

/* One VM to power back on or move back (gc_exec_restore_vm_power), and how
 * it went. */
struct restore_job {
	const struct gc_action *on; /* its POWER_ON, or its return MIGRATE */
	struct tslot *vs;
	bool ok;
	char *why; /* the failure, when !ok */
};

struct restore_pool {
	struct run *r;
	struct restore_job *jobs;
	size_t n, next;
	pthread_mutex_t mu;
	const char *after;
};

static void restore_one(struct run *r, struct restore_job *j, const char *after)
{
	struct gc_error err = GC_ERROR_INIT;
	bool move = j->on->kind == GC_ACT_MIGRATE;
	const char *kind = move ? "migrate" : "power_on";
	char *aid = move ? gc_xasprintf("recover: move %s back to %s", j->on->vm, j->on->dest_host)
			 : gc_xasprintf("recover: power on %s", j->on->vm);
	char *note;

	gc_exec_journal(r, j->vs->target, aid, kind, GC_J_START, NULL);
	if (gc_exec_run_action(r, j->vs, j->on, &err) == 0) {
		gc_exec_journal(r, j->vs->target, aid, kind, GC_J_DONE, NULL);
		j->ok = true;
		note = move ? gc_xasprintf("moved %s back to %s after %s", j->on->vm, j->on->dest_host,
					   after)
			    : gc_xasprintf("powered %s back on after %s", j->on->vm, after);
		gc_exec_emit(&r->ctx, GC_EV_NOTE, j->vs->target, NULL, note, 0);
		free(note);
	} else {
		gc_exec_journal(r, j->vs->target, aid, kind, GC_J_FAILED, err.msg);
		j->why = gc_xstrdup(err.msg);
	}
	free(aid);
}

static void *restore_worker(void *arg)
{
	struct restore_pool *p = arg;

	for (;;) {
		struct restore_job *j = NULL;

		pthread_mutex_lock(&p->mu);
		if (p->next < p->n)
			j = &p->jobs[p->next++];
		pthread_mutex_unlock(&p->mu);
		if (j == NULL)
			return NULL;
		restore_one(p->r, j, p->after);
	}
}

/*
 * After wave `wave`'s hosts are recovered: a VM that this run powered off
 * (for its host's window, or a change of its own) and whose power-on did
 * not run, because something it waited for failed or the user stopped the
 * run, is powered back on, as it was found: a stopped rollout leaves no VM
 * off that it turned off.  Unless its host stayed in maintenance mode or
 * in its reboot: then the VM stays off, loudly.  A VM that vMotion moved
 * off its host for the window is moved back the same way (it ran all
 * along: where its host stays out of service it stays where it runs, said
 * in the summary, not loudly).  The wave's VMs at once
 * (up to --parallelism), each a task of its own on the vCenter's or
 * libvirtd's connection (shared, as the VMs' lanes share it); the summary
 * lists them in plan order, whatever order they came back in.
 */
void gc_exec_restore_vm_power(struct run *r, size_t wave)
{
	const struct gc_plan *p = r->rep->plan;
	struct restore_pool pool;
	size_t i;

	memset(&pool, 0, sizeof(pool));
	pool.r = r;
	pool.after = r->rep->interrupted ? "the interruption" : "the failure";
	for (i = 0; i < p->nactions; i++) {
		const struct gc_action *on = p->actions[i];
		struct tslot *vs, *hs;
		char *note;

		if (on->wave != wave || !restores(r, on))
			continue;
		vs = &r->slots[on->target->index];
		if (vs->drv == NULL || !gc_exec_selected(r->ctx.opts, vs->target->kind))
			continue;
		hs = on->host != NULL ? host_slot(r, on->host) : NULL;
		if (hs != NULL && (hs->rep->left_in_maintenance || hs->in_reboot)) {
			bool move = on->kind == GC_ACT_MIGRATE;

			/* it stays as it is: off, or running where vMotion put it */
			list_add(move ? &vs->rep->vms_left_away : &vs->rep->vms_left_off, ", ", on->vm);
			note = gc_xasprintf("%s%s%s: its host '%s' is %s; re-run apply once it is back",
					    move ? "" : "VM '", on->vm,
					    move ? " runs where vMotion moved it" : "' is LEFT POWERED OFF",
					    on->host,
					    hs->rep->left_in_maintenance ? "left in maintenance mode"
									 : "in its reboot");
			list_add(move ? &vs->rep->vms_away_why : &vs->rep->vms_off_why, "\n", note);
			free(note);
			continue;
		}
		pool.jobs = gc_xrealloc(pool.jobs, (pool.n + 1) * sizeof(*pool.jobs));
		memset(&pool.jobs[pool.n], 0, sizeof(*pool.jobs));
		pool.jobs[pool.n].on = on;
		pool.jobs[pool.n++].vs = vs;
	}
	if (pool.n == 0)
		return;
	pthread_mutex_init(&pool.mu, NULL);
	r->recovering = true; /* retried after a first signal too: gc_exec_no_retry */
	gc_exec_run_pool(pool.n < r->parallelism ? (unsigned)pool.n : r->parallelism, restore_worker,
			 &pool);
	r->recovering = false;
	pthread_mutex_destroy(&pool.mu);
	for (i = 0; i < pool.n; i++) {
		struct restore_job *j = &pool.jobs[i];

		if (j->on->kind == GC_ACT_MIGRATE) {
			char *note;

			if (j->ok) {
				list_add(&j->vs->rep->vms_moved_back, ", ", j->on->vm);
				continue;
			}
			note = gc_xasprintf("%s runs where vMotion moved it: moving it back to '%s' "
					    "failed: %s", j->on->vm, j->on->dest_host, j->why);
			list_add(&j->vs->rep->vms_left_away, ", ", j->on->vm);
			list_add(&j->vs->rep->vms_away_why, "\n", note);
			free(note);
			free(j->why);
		} else if (j->ok) {
			list_add(&j->vs->rep->vms_back_on, ", ", j->on->vm);
		} else {
			char *note = gc_xasprintf("VM '%s' is LEFT POWERED OFF: powering it back on "
						  "failed: %s", j->on->vm, j->why);

			list_add(&j->vs->rep->vms_left_off, ", ", j->on->vm);
			list_add(&j->vs->rep->vms_off_why, "\n", note);
			free(note);
			free(j->why);
		}
	}
	free(pool.jobs);
}
