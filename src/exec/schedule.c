/*
 * schedule.c - one wave of the plan on a pool of workers.
 *
 * A worker takes any *idle* target whose next action is ready (every dep
 * done), marks it busy, runs exactly that action (or the batch the driver
 * sends with it) outside the lock on the target's own connection, then
 * records the outcome and releases the target.  Actions whose deps failed
 * or were skipped are skipped when they come up.  Each target's action
 * list is a subsequence of the plan's global topological order, so some
 * idle target always has a ready next action unless everything is
 * finished: no deadlock at any pool size.
 */
#include <pthread.h>
#include <stdlib.h>

#include "exec_int.h"
#include "gc/exec.h"

/* ---------------------------------------------------------------- the scheduler */

/*
 * Which of the wave's targets to look at for the next action.  Looking at
 * every target on every pick costs (actions x targets): 10^9 steps for a
 * last wave of 10,000 guests (bench/exec_bench.c).  So a target is queued
 * (r->rq) when the wave starts, when its action ends, and when the action
 * its next one waits on settles (done, failed or skipped: r->wait_head);
 * a worker looks only at queued targets.  A target with lanes (a vCenter)
 * may run any of its VMs' actions at once, so its actions are queued one
 * by one (r->lheap) and a blocked one waits on its prerequisite the same
 * way: scanning them on every pick cost (actions x that target's actions),
 * 24 s for one wave of 2,000 hosts' VMs.  All under r->mu.
 */
static void enqueue(struct run *r, size_t i)
{
	size_t n = r->wave->ntargets;

	if (r->queued[i])
		return;
	r->queued[i] = true;
	r->rq[(r->rq_head + r->rq_len) % n] = i;
	r->rq_len++;
}

static size_t dequeue(struct run *r)
{
	size_t i = r->rq[r->rq_head];

	r->rq_head = (r->rq_head + 1) % r->wave->ntargets;
	r->rq_len--;
	r->queued[i] = false;
	return i;
}

/* Lane action k is worth a look (the heap keeps the smallest k on top). */
static void lane_push(struct run *r, size_t k)
{
	if (r->lqueued[k])
		return;
	r->lqueued[k] = true;
	gc_heap_push(&r->lheap, k);
}

static size_t lane_pop(struct run *r)
{
	size_t k = gc_heap_pop(&r->lheap);

	r->lqueued[k] = false;
	return k;
}

/* Action a settled: the targets and lane actions that waited on it are
 * worth a look again. */
static void wake(struct run *r, const struct gc_action *a)
{
	size_t w = r->wait_head != NULL ? r->wait_head[a->seq - 1] : 0;
	size_t n = r->wave->ntargets;

	if (w == 0)
		return;
	r->wait_head[a->seq - 1] = 0;
	while (w != 0) {
		size_t i = w - 1;

		w = r->wait_next[i];
		r->wait_next[i] = 0;
		if (i < n)
			enqueue(r, i);
		else
			lane_push(r, i - n);
	}
}

/* Waiter i (a wave target, or ntargets + a lane action) has action a
 * blocked: wait on the first of its prerequisites not done (pending or
 * running), which wakes it when it settles. */
static void wait_on(struct run *r, size_t i, const struct gc_action *a)
{
	size_t n = r->wave->ntargets;

	for (size_t d = 0; d < a->ndeps; d++) {
		const struct gc_action *dep = a->deps[d];

		if (r->st[dep->seq - 1] == A_DONE)
			continue;
		r->wait_next[i] = r->wait_head[dep->seq - 1];
		r->wait_head[dep->seq - 1] = i + 1;
		return;
	}
	if (i < n) /* nothing to wait on after all: look again */
		enqueue(r, i);
	else
		lane_push(r, i - n);
}

/* Under r->mu: is this action ready (1), blocked (0), doomed by a failure
 * (-1) or by an action out of scope (-2)? */
static int readiness(const struct run *r, const struct gc_action *a)
{
	size_t i;
	int ready = 1;

	for (i = 0; i < a->ndeps; i++) {
		enum astate d = r->st[a->deps[i]->seq - 1];

		if (d == A_FAILED || d == A_SKIPPED)
			return -1;
		if (d == A_OUT_OF_SCOPE)
			return -2;
		if (d != A_DONE)
			ready = 0;
	}
	return ready;
}

static void skip_action(struct run *r, struct tslot *s, const struct gc_action *a, const char *why)
{
	r->st[a->seq - 1] = A_SKIPPED;
	s->rep->skipped++;
	r->rep->skipped++;
	r->remaining--;
	gc_exec_lease_settled(r, s, 1);
	wake(r, a);
	gc_exec_emit(&r->ctx, GC_EV_SKIPPED, s->target, a, why, r->wave_index);
}

/*
 * Under r->mu: settle a pending action that cannot run (stop, out of
 * scope, its target or a prerequisite failed) and return -1; else 1 when
 * it is ready, 0 when it waits for another action.
 */
static int triage(struct run *r, struct tslot *s, const struct gc_action *a)
{
	int rd = readiness(r, a);

	if (r->stop) {
		skip_action(r, s, a, r->rep->interrupted ? "interrupted" : "not started: --fail-fast");
	} else if (s->drv == NULL || !gc_exec_selected(r->ctx.opts, s->target->kind)) {
		r->st[a->seq - 1] = A_OUT_OF_SCOPE;
		r->rep->out_of_scope++;
		r->remaining--;
		wake(r, a);
	} else if (s->failed) {
		skip_action(r, s, a, "target failed earlier");
	} else if (rd == -1) {
		skip_action(r, s, a, "a prerequisite failed");
	} else if (rd == -2) {
		skip_action(r, s, a, "needs an action on a target kind not selected");
	} else {
		return rd;
	}
	return -1;
}

/*
 * Under r->mu: the first ready action of the wave's targets with lanes, in
 * the order of their lists, settling the doomed ones on the way (as the
 * plain scheduler does) and leaving the blocked ones to wait; *ti is its
 * wave target.  Blocked actions do not stop the search: another VM's action
 * further down may be ready.
 */
static const struct gc_action *pick_lane(struct run *r, size_t *ti)
{
	while (r->lheap.n > 0) {
		size_t k = lane_pop(r);
		const struct gc_action *a = r->lane_act[k];
		struct tslot *s = &r->slots[r->wave->targets[r->lane_tgt[k]].target->index];
		int rd;

		if (r->st[a->seq - 1] != A_PENDING)
			continue;
		rd = triage(r, s, a);
		if (rd == 1) {
			*ti = r->lane_tgt[k];
			return a;
		}
		if (rd == 0)
			wait_on(r, r->wave->ntargets + k, a);
	}
	return NULL;
}

static void *apply_worker(void *arg)
{
	struct run *r = arg;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		const struct gc_plan_wave *w = r->wave;
		struct tslot *pick = NULL;
		const struct gc_action *act = NULL;
		const struct gc_action *batch[GC_EXEC_BATCH_MAX];
		size_t nbatch = 1;
		size_t before = r->remaining;
		size_t i = 0, pick_i = 0;

		if (r->remaining == 0)
			break;
		if (!r->stop && gc_drv_interrupted(&r->ctx)) {
			r->stop = true;
			r->rep->interrupted = true;
		}
		if (r->stop && !r->stop_queued) { /* every pending action is to be skipped */
			r->stop_queued = true;
			for (size_t k = 0; k < w->ntargets; k++)
				if (!r->slots[w->targets[k].target->index].lanes)
					enqueue(r, k);
			for (size_t k = 0; k < r->nlane_acts; k++)
				if (r->st[r->lane_act[k]->seq - 1] == A_PENDING)
					lane_push(r, k);
		}
		act = pick_lane(r, &pick_i);
		if (act != NULL) {
			pick = &r->slots[w->targets[pick_i].target->index];
			r->st[act->seq - 1] = A_RUNNING;
		}
		while (pick == NULL && r->rq_len > 0) {
			const struct gc_plan_target *pt;
			struct tslot *s;

			i = dequeue(r);
			pt = &w->targets[i];
			s = &r->slots[pt->target->index];
			while (r->next[i] < pt->nactions && !s->busy) {
				const struct gc_action *a = pt->actions[r->next[i]];
				int rd = triage(r, s, a);

				if (rd == 1) {
					pick = s;
					pick_i = i;
					act = a;
					break;
				}
				if (rd == 0) { /* blocked on another target: looked at when that settles */
					wait_on(r, i, a);
					break;
				}
				r->next[i]++;
			}
			if (pick != NULL) {
				/* the ready action, and the ones after it the driver
				 * sends with it in one round trip */
				nbatch = gc_exec_gather_batch(r, pick, pt, r->next[i], batch,
							      GC_EXEC_BATCH_MAX);
				r->next[i] += nbatch;
				pick->busy = true;
				for (size_t k = 0; k < nbatch; k++)
					r->st[batch[k]->seq - 1] = A_RUNNING;
			}
		}
		if (r->remaining == 0)
			break;
		if (pick == NULL) {
			/* skips may have doomed actions scanned earlier in this pass:
			 * scan again before sleeping, or nobody may wake us */
			if (r->remaining == before)
				pthread_cond_wait(&r->cv, &r->mu);
			continue;
		}
		if (r->rq_len > 0 || r->lheap.n > 0) /* more to look at: a sleeping worker may take it */
			pthread_cond_broadcast(&r->cv);
		gc_exec_lease_step(r, pick, nbatch);
		pthread_mutex_unlock(&r->mu);
		if (nbatch > 1)
			gc_exec_execute_batch(r, pick, batch, nbatch);
		else
			gc_exec_execute(r, pick, act);
		gc_exec_lease_after_step(r, pick);
		pthread_mutex_lock(&r->mu);
		pick->busy = false;
		r->remaining -= nbatch;
		gc_exec_lease_settled(r, pick, nbatch);
		for (size_t k = 0; k < nbatch; k++)
			wake(r, nbatch > 1 ? batch[k] : act);
		if (!pick->lanes)
			enqueue(r, pick_i);
		pthread_cond_broadcast(&r->cv);
	}
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

void gc_exec_run_wave(struct run *r, size_t wi)
{
	const struct gc_plan_wave *w = &r->rep->plan->waves[wi];
	size_t i, n = 0, nlane = 0;

	size_t workers = 0;

	for (i = 0; i < w->ntargets; i++) {
		n += w->targets[i].nactions;
		/* a target with lanes may run all of its actions at once */
		if (r->slots[w->targets[i].target->index].lanes)
			nlane += w->targets[i].nactions;
		workers += r->slots[w->targets[i].target->index].lanes ? w->targets[i].nactions : 1;
	}
	if (n == 0)
		return;
	r->wave = w;
	r->wave_index = wi;
	r->next = gc_xcalloc(w->ntargets, sizeof(*r->next));
	r->rq = gc_xcalloc(w->ntargets, sizeof(*r->rq));
	r->queued = gc_xcalloc(w->ntargets, sizeof(*r->queued));
	r->wait_next = gc_xcalloc(w->ntargets + nlane, sizeof(*r->wait_next));
	r->lane_act = gc_xcalloc(nlane ? nlane : 1, sizeof(*r->lane_act));
	r->lane_tgt = gc_xcalloc(nlane ? nlane : 1, sizeof(*r->lane_tgt));
	r->lheap.v = gc_xcalloc(nlane ? nlane : 1, sizeof(*r->lheap.v));
	r->lqueued = gc_xcalloc(nlane ? nlane : 1, sizeof(*r->lqueued));
	if (r->wait_head == NULL)
		r->wait_head = gc_xcalloc(r->rep->plan->nactions ? r->rep->plan->nactions : 1,
					  sizeof(*r->wait_head));
	r->rq_head = r->rq_len = r->nlane_acts = r->lheap.n = 0;
	r->stop_queued = false;
	for (i = 0; i < w->ntargets; i++) {
		if (!r->slots[w->targets[i].target->index].lanes) {
			enqueue(r, i);
			continue;
		}
		for (size_t j = 0; j < w->targets[i].nactions; j++) {
			r->lane_act[r->nlane_acts] = w->targets[i].actions[j];
			r->lane_tgt[r->nlane_acts] = i;
			lane_push(r, r->nlane_acts++);
		}
	}
	r->remaining = n;
	gc_exec_emit(&r->ctx, GC_EV_WAVE, NULL, NULL, NULL, wi);
	gc_exec_run_pool(workers < r->parallelism ? (unsigned)workers : r->parallelism, apply_worker, r);
	free(r->next);
	free(r->rq);
	free(r->queued);
	free(r->wait_next);
	free(r->lane_act);
	free(r->lane_tgt);
	free(r->lheap.v);
	free(r->lqueued);
	r->next = r->rq = r->wait_next = r->lane_tgt = r->lheap.v = NULL;
	r->lane_act = NULL;
	r->queued = r->lqueued = NULL;
	r->nlane_acts = r->lheap.n = 0;
}
