/*
 * action.c - running the plan's actions on a target: one at a time
 * (gc_exec_execute), or several in one round trip when the driver takes
 * batches (gc_exec_gather_batch, gc_exec_execute_batch).
 *
 * Either way every action is journalled (its intent, and what only the
 * journal can remember: recover.c) before anything goes out, and its
 * outcome after.  A transport fault is retried on a new connection after
 * observing again; an action whose resource already holds its desired
 * values is not sent again.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_int.h"
#include "gc/exec.h"
#include "gc/journal.h"

/* The default of gc_driver.already_done (see sys/driver.h). */
static bool already_done(struct run *r, const struct tslot *s, const struct gc_action *a)
{
	if (s->drv->already_done != NULL)
		return s->drv->already_done(&r->ctx, a);
	return a->kind == GC_ACT_APPLY && a->op != GC_OP_DELETE && a->resource != NULL &&
	       gc_drv_resource_converged(&r->ctx, a->resource);
}

/*
 * The error a retried step ends with: the last one, after the first that
 * made it retry when that said something else.  A guest install that
 * outlasts its command timeout is retried, and the busy guest may then
 * refuse the retry's handshake: both are the story, the first most.
 */
static void retried_error(struct gc_error *err, const struct gc_error *last, const char *first)
{
	*err = *last;
	if (first[0] != '\0' && strcmp(first, last->msg) != 0)
		snprintf(err->msg, sizeof(err->msg), "%.500s; retried, then: %.500s", first, last->msg);
}

/*
 * acts[0..n) on s (one action, or a batch), retried on transport faults:
 * reconnect, observe again, drop from the front what already holds, and
 * send the rest.  A shared connection is never dropped under the other
 * lanes: its transport reconnects by itself on the next request.  *ndone
 * counts the completed ones from the first.
 */
static int run_actions(struct run *r, struct tslot *s, const struct gc_action **acts, size_t n,
		       size_t *ndone, struct gc_error *err)
{
	char first[GC_ERROR_MSG_MAX] = "";
	unsigned attempt = 0;
	int rc;

	*ndone = 0;
	rc = gc_exec_connect_slot(r, s, true, err);
	while (rc == 0 && *ndone < n) {
		struct gc_error e = GC_ERROR_INIT;
		struct gc_buf problems = GC_BUF_INIT;
		size_t left = n - *ndone, got = 0;

		/* a lease left to this step that the driver does not take in it */
		rc = gc_exec_lease_take_pending(r, s, acts[*ndone], &e);
		if (rc == 0 && left == 1)
			rc = s->drv->apply(&s->conn, &r->ctx, acts[*ndone], &e);
		else if (rc == 0)
			rc = s->drv->apply_batch(&s->conn, &r->ctx, acts + *ndone, left, &got, &e);
		*ndone += rc == 0 ? left : got;
		if (rc == 0)
			break;
		if (!gc_exec_transport_fault(rc) || attempt >= gc_exec_retries(r->ctx.opts) ||
		    gc_exec_no_retry(r)) {
			retried_error(err, &e, first);
			return rc;
		}
		if (first[0] == '\0')
			snprintf(first, sizeof(first), "%s", e.msg);
		gc_exec_emit(&r->ctx, GC_EV_RETRY, s->target, acts[*ndone], e.msg, 0);
		if (!s->lanes)
			gc_exec_drop_conn(s);
		gc_exec_sleep_ms(gc_exec_backoff_ms(r->ctx.opts, attempt++));
		gc_error_clear(&e);
		/* no connection, no apply: reconnect until it works or the
		 * attempts are spent (a driver is never handed a NULL conn) */
		while ((rc = gc_exec_connect_slot(r, s, false, &e)) != 0) {
			if (!gc_exec_transport_fault(rc) || ++attempt >= gc_exec_retries(r->ctx.opts) ||
			    gc_exec_no_retry(r)) {
				retried_error(err, &e, first);
				return rc;
			}
			gc_exec_emit(&r->ctx, GC_EV_RETRY, s->target, acts[*ndone], e.msg, 0);
			gc_exec_sleep_ms(gc_exec_backoff_ms(r->ctx.opts, attempt));
			gc_error_clear(&e);
		}
		if (s->drv->observe(s->conn, &r->ctx, s->target, r->tres[s->target->index],
				    r->ntres[s->target->index], &problems, &e) == 0)
			while (*ndone < n && already_done(r, s, acts[*ndone]))
				(*ndone)++;
		gc_buf_free(&problems);
	}
	return rc;
}

int gc_exec_run_action(struct run *r, struct tslot *s, const struct gc_action *a,
		      struct gc_error *err)
{
	size_t ndone;

	return run_actions(r, s, &a, 1, &ndone, err);
}

void gc_exec_execute(struct run *r, struct tslot *s, const struct gc_action *a)
{
	struct gc_error err = GC_ERROR_INIT;
	char *aid = gc_exec_action_id(a);
	int rc;

	gc_exec_emit(&r->ctx, GC_EV_START, s->target, a, NULL, r->wave_index);
	gc_exec_remember_before(r, s, a, aid);
	gc_exec_journal(r, s->target, aid, gc_action_kind_name(a->kind), GC_J_START, NULL);
	rc = gc_exec_run_action(r, s, a, &err);
	/* the outcome is journalled and told before the scheduler sees it: an
	 * action that waits on this one starts after its DONE record, never
	 * before (a resume reads the journal in that order) */
	if (rc == 0) {
		gc_exec_journal(r, s->target, aid, gc_action_kind_name(a->kind), GC_J_DONE, NULL);
		gc_exec_remember_after(r, s, a, aid, true);
		gc_exec_emit(&r->ctx, GC_EV_DONE, s->target, a, NULL, r->wave_index);
	} else {
		gc_exec_journal(r, s->target, aid, gc_action_kind_name(a->kind), GC_J_FAILED, err.msg);
		gc_exec_remember_after(r, s, a, aid, false);
		/* the target answered and refused the reboot (a transport fault
		 * may have left it sent): it is not going down, so the recovery
		 * may take it out of maintenance mode, and the next run need not
		 * wait for a reboot that never started (recover.c reboot_unseen) */
		if (a->kind == GC_ACT_REBOOT && rc == GC_EREMOTE) {
			s->in_reboot = false;
			gc_exec_journal(r, s->target, aid, "reboot_seen", GC_J_DONE,
					"refused: the target did not go down");
		}
		gc_exec_emit(&r->ctx, GC_EV_FAILED, s->target, a, err.msg, r->wave_index);
	}
	pthread_mutex_lock(&r->mu);
	if (rc == 0) {
		r->st[a->seq - 1] = A_DONE;
		s->rep->done++;
		r->rep->done++;
	} else {
		r->st[a->seq - 1] = A_FAILED;
		s->rep->failed++;
		r->rep->failed++;
		/* with lanes only this VM's later actions depend on it (the plan
		 * sequences each VM): the other VMs go on */
		if (s->lanes)
			s->lane_failed = true;
		else
			s->failed = true;
		gc_exec_slot_error(s, err.msg);
		if (r->ctx.opts->fail_fast)
			r->stop = true;
	}
	pthread_mutex_unlock(&r->mu);
	free(aid);
}

/* ---------------------------------------------------------------- batches */

/*
 * Under r->mu: acts[0] is the target's ready next action (pt->actions[first]).
 * Append the actions after it, in plan order, while the driver takes each in
 * a batch and each waits on nothing but actions done or already in the
 * batch.  Returns how many acts holds (1: no batch).
 */
size_t gc_exec_gather_batch(struct run *r, const struct tslot *s, const struct gc_plan_target *pt,
			    size_t first, const struct gc_action **acts, size_t max)
{
	size_t n = 1;

	acts[0] = pt->actions[first];
	if (s->drv->apply_batch == NULL || s->drv->batchable == NULL || s->lanes ||
	    !s->drv->batchable(acts[0]))
		return 1;
	for (size_t j = first + 1; j < pt->nactions && n < max; j++) {
		const struct gc_action *a = pt->actions[j];
		bool ready = r->st[a->seq - 1] == A_PENDING && s->drv->batchable(a);

		for (size_t d = 0; ready && d < a->ndeps; d++) {
			const struct gc_action *dep = a->deps[d];
			bool in = false;

			for (size_t k = 0; k < n && !in; k++)
				in = acts[k] == dep;
			ready = in || r->st[dep->seq - 1] == A_DONE;
		}
		if (!ready)
			break;
		acts[n++] = a;
	}
	return n;
}

/*
 * Run acts[0..n) (gathered by gc_exec_gather_batch and marked running) as
 * one batch.  Every action's intent is journalled before the batch goes
 * out.  When the device refuses one, the target fails there: the ones
 * after it were never sent and are skipped, and a reboot the journal was
 * told to owe only for those is not owed after all.
 */
void gc_exec_execute_batch(struct run *r, struct tslot *s, const struct gc_action **acts, size_t n)
{
	struct gc_error err = GC_ERROR_INIT;
	char **aids = gc_xcalloc(n, sizeof(*aids));
	bool owed_before = s->reboot_owed_logged, sent_reboot_change = false;
	/* a wait for a reboot heads it: what follows goes out when the host is
	 * back (with the poll that finds it back), and is shown starting then,
	 * not for the length of a reboot; journalled before all the same */
	size_t shown = acts[0]->kind == GC_ACT_WAIT_HOST ? 1 : n;
	size_t ndone = 0, i;
	int rc;

	for (i = 0; i < n; i++) {
		aids[i] = gc_exec_action_id(acts[i]);
		if (i < shown)
			gc_exec_emit(&r->ctx, GC_EV_START, s->target, acts[i], NULL, r->wave_index);
		gc_exec_remember_before(r, s, acts[i], aids[i]);
		gc_exec_journal(r, s->target, aids[i], gc_action_kind_name(acts[i]->kind), GC_J_START,
				NULL);
	}
	rc = run_actions(r, s, acts, n, &ndone, &err);
	/* journalled and told before the scheduler sees it (as above) */
	for (i = 0; i < n; i++) {
		const char *kind = gc_action_kind_name(acts[i]->kind);

		/* a transport fault may have left any of them sent */
		if ((i <= ndone || gc_exec_transport_fault(rc)) && (acts[i]->flags & GC_RES_NEEDS_REBOOT))
			sent_reboot_change = true;
		if (i >= shown && i <= ndone)
			gc_exec_emit(&r->ctx, GC_EV_START, s->target, acts[i], NULL, r->wave_index);
		if (i < ndone) {
			gc_exec_journal(r, s->target, aids[i], kind, GC_J_DONE, NULL);
			gc_exec_remember_after(r, s, acts[i], aids[i], true);
			gc_exec_emit(&r->ctx, GC_EV_DONE, s->target, acts[i], NULL, r->wave_index);
		} else if (i == ndone) {
			gc_exec_journal(r, s->target, aids[i], kind, GC_J_FAILED, err.msg);
			gc_exec_remember_after(r, s, acts[i], aids[i], false);
			gc_exec_emit(&r->ctx, GC_EV_FAILED, s->target, acts[i], err.msg, r->wave_index);
		} else {
			gc_exec_journal(r, s->target, aids[i], kind, GC_J_SKIPPED,
					"not sent: an earlier command of its batch failed");
			gc_exec_remember_after(r, s, acts[i], aids[i], false);
			gc_exec_emit(&r->ctx, GC_EV_SKIPPED, s->target, acts[i], "target failed earlier",
				     r->wave_index);
		}
	}
	pthread_mutex_lock(&r->mu);
	for (i = 0; i < n; i++) {
		enum astate st = i < ndone ? A_DONE : i == ndone ? A_FAILED : A_SKIPPED;

		r->st[acts[i]->seq - 1] = st;
		if (st == A_DONE) {
			s->rep->done++;
			r->rep->done++;
		} else if (st == A_FAILED) {
			s->rep->failed++;
			r->rep->failed++;
		} else {
			s->rep->skipped++;
			r->rep->skipped++;
		}
	}
	if (rc != 0) {
		s->failed = true;
		gc_exec_slot_error(s, err.msg);
		if (r->ctx.opts->fail_fast)
			r->stop = true;
	}
	pthread_mutex_unlock(&r->mu);
	if (rc != 0 && !owed_before && s->reboot_owed_logged && !sent_reboot_change) {
		s->reboot_owed = s->reboot_owed_logged = false;
		gc_exec_journal(r, s->target, aids[ndone], "reboot_owed", GC_J_DONE,
				"not sent: the command before it failed");
	}
	for (i = 0; i < n; i++)
		free(aids[i]);
	free(aids);
}
