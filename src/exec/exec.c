/*
 * exec.c - observe, plan, run (see include/gc/exec.h for the contract).
 *
 * Threads: a pool of workers shares one mutex-protected scheduler state
 * (schedule.c runs a wave).
 *
 * The observed store is shared by the drivers through gc_drv_record() and
 * friends under `obs_mu`; the journal serialises itself.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec_int.h"
#include "gc/exec.h"
#include "gc/journal.h"
#include "gc/spec.h"
#include "gc/ssh.h"

void gc_exec_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

bool gc_exec_transport_fault(int code)
{
	return code == GC_ENET || code == GC_ETIMEOUT;
}

bool gc_exec_no_retry(const struct run *r)
{
	return gc_drv_interrupted(&r->ctx) && !r->recovering;
}

unsigned gc_exec_retries(const struct gc_exec_opts *o)
{
	return o->retries ? o->retries : 3;
}

unsigned gc_exec_backoff_ms(const struct gc_exec_opts *o, unsigned attempt)
{
	unsigned base = o->retry_base_ms ? o->retry_base_ms : 250;

	return base << (attempt < 6 ? attempt : 6);
}

bool gc_exec_selected(const struct gc_exec_opts *o, enum gc_target_kind k)
{
	return o->kinds == 0 || (o->kinds & (1u << k)) != 0;
}

void gc_exec_slot_error(struct tslot *s, const char *msg)
{
	if (s->rep->error == NULL)
		s->rep->error = gc_xstrdup(msg);
}

char *gc_exec_action_id(const struct gc_action *a)
{
	struct gc_buf b = GC_BUF_INIT;

	gc_action_describe(&b, a);
	return gc_buf_take(&b);
}

void gc_exec_journal(struct run *r, const struct gc_target *t, const char *action, const char *kind,
		    enum gc_jstate st, const char *detail)
{
	struct gc_error err = GC_ERROR_INIT;

	if (r->journal == NULL)
		return;
	if (gc_journal_append(r->journal, t->name, action, kind, st, detail, &err) != 0)
		gc_exec_emit(&r->ctx, GC_EV_WARN, t, NULL, err.msg, 0); /* keep going: the device is the truth */
}

/* ---------------------------------------------------------------- connect + observe */

/* Connect the target if it has no connection.  With `retry`, transport
 * faults are retried with backoff here; callers that loop themselves pass
 * false, so one layer retries and a dead host costs retries+1 attempts. */
int gc_exec_connect_slot(struct run *r, struct tslot *s, bool retry, struct gc_error *err)
{
	unsigned attempt;
	int rc = 0;

	if (s->conn != NULL)
		return 0;
	for (attempt = 0;; attempt++) {
		struct gc_error e = GC_ERROR_INIT;

		rc = s->drv->connect(&s->conn, &r->ctx, s->target, &e);
		if (rc == 0)
			return 0;
		if (!retry || !gc_exec_transport_fault(rc) || attempt >= gc_exec_retries(r->ctx.opts) ||
		    gc_exec_no_retry(r)) {
			*err = e;
			return rc;
		}
		gc_exec_emit(&r->ctx, GC_EV_RETRY, s->target, NULL, e.msg, 0);
		gc_exec_sleep_ms(gc_exec_backoff_ms(r->ctx.opts, attempt));
	}
}

void gc_exec_drop_conn(struct tslot *s)
{
	s->drv->disconnect(s->conn);
	s->conn = NULL;
}

static int lease_call(struct run *r, struct tslot *s, gc_exec_lease_fn call, void *arg,
		      bool repeatable, struct gc_error *err)
{
	for (unsigned attempt = 0;; attempt++) {
		struct gc_error e = GC_ERROR_INIT;
		int rc = gc_exec_connect_slot(r, s, false, &e);

		if (rc == 0)
			rc = call(s, r, arg, &e);
		if (rc == 0 || !gc_exec_transport_fault(rc) || !repeatable ||
		    attempt >= gc_exec_retries(r->ctx.opts) || gc_exec_no_retry(r)) {
			if (rc != 0)
				*err = e;
			return rc;
		}
		gc_exec_emit(&r->ctx, GC_EV_RETRY, s->target, NULL, e.msg, 0);
		if (!s->lanes && s->conn != NULL)
			gc_exec_drop_conn(s);
		gc_exec_sleep_ms(gc_exec_backoff_ms(r->ctx.opts, attempt));
	}
}

int gc_exec_lease_call(struct run *r, struct tslot *s, gc_exec_lease_fn call, void *arg,
		       struct gc_error *err)
{
	return lease_call(r, s, call, arg, !s->drv->lease_atomic, err);
}

int gc_exec_lease_call_repeatable(struct run *r, struct tslot *s, gc_exec_lease_fn call, void *arg,
				  struct gc_error *err)
{
	return lease_call(r, s, call, arg, true, err);
}

/* One connect and observe of s: 0, or the driver's code; problems holds what
 * the spec names that the target lacks. */
static int observe_once(struct run *r, struct tslot *s, struct gc_buf *problems,
			struct gc_error *err)
{
	int rc = gc_exec_connect_slot(r, s, false, err);

	if (rc == 0) {
		gc_buf_reset(problems);
		rc = s->drv->observe(s->conn, &r->ctx, s->target, r->tres[s->target->index],
				     r->ntres[s->target->index], problems, err);
	}
	return rc;
}

/* Connect and observe one target, retrying transport faults. */
static int observe_retrying(struct run *r, struct tslot *s, struct gc_buf *problems,
			    struct gc_error *err)
{
	for (unsigned attempt = 0;; attempt++) {
		struct gc_error e = GC_ERROR_INIT;
		int rc = observe_once(r, s, problems, &e);

		if (rc == 0)
			return 0;
		if (!gc_exec_transport_fault(rc) || attempt >= gc_exec_retries(r->ctx.opts) ||
		    gc_drv_interrupted(&r->ctx)) {
			*err = e;
			return rc;
		}
		gc_exec_drop_conn(s);
		gc_exec_emit(&r->ctx, GC_EV_RETRY, s->target, NULL, e.msg, 0);
		gc_exec_sleep_ms(gc_exec_backoff_ms(r->ctx.opts, attempt));
	}
}

/*
 * A target whose reboot an earlier apply sent and never saw through (that run
 * was killed, or its wait gave up; recover.c): it may still be down, booting,
 * or not yet gone down.  It is observed with the reboot wait's patience, not
 * the transport's few retries, bounded by --reboot-timeout: no answer, or a
 * login refused while the machine boots (gc_drv_auth_may_pass), is waited
 * out; an answer from the boot before that reboot, within GRACE of it going
 * out, is asked again (it may be about to go down: planning from it would
 * send a second reboot).  Past the grace the old boot is taken as it is (the
 * reboot never happened; the plan decides).  A driver without boot_time
 * cannot tell boots apart: its first answer is taken.  A guest whose VM an
 * earlier apply started and never reached (recover.c start_unseen: killed
 * while the VM booted) is waited for the same way; its first answer is
 * taken, as a started VM is not about to go down.
 */
#define RESUME_REBOOT_GRACE_S 120.0
static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts); /* the journal's clock */
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * A target an earlier apply rebooted (or whose VM it started) and never saw
 * back has answered: 1 when that is now seen through (journalled, and said
 * when the wait was warned of), 0 to wait on (last says why), or the
 * transport fault of reading its boot time (*e says it: as no answer).
 */
static int judge_answer(struct run *r, struct tslot *s, bool warned, char *last, size_t lastsz,
			struct gc_error *e)
{
	struct gc_error be = GC_ERROR_INIT;
	const char *msg;
	double boot = 0;
	int brc = s->drv->boot_time != NULL ? s->drv->boot_time(s->conn, &r->ctx, &boot, &be)
					    : GC_ENOTSUP;

	if (s->unseen_is_start) {
		/* a VM that was started is not about to go down: its first answer
		 * is taken (its boot time would only add clock skew); a guest whose
		 * VM is off now answered nothing (boot_time says so): the journal
		 * keeps the start */
		if (brc == GC_ENOTSUP && s->drv->boot_time != NULL)
			return 1;
		msg = "answers, after the start of its VM an earlier apply sent";
		gc_exec_journal(r, s->target, "resume: boot seen", "reboot_seen", GC_J_DONE, msg);
		s->unseen_is_start = false;
	} else if (brc == GC_ENOTSUP) {
		return 1; /* cannot tell (a guest whose VM is off): the journal keeps it */
	} else if (gc_exec_transport_fault(brc)) {
		*e = be; /* it went down between the two */
		return brc;
	} else if (brc == 0 && boot < s->reboot_unseen_ts &&
		   wall_s() - s->reboot_unseen_ts < RESUME_REBOOT_GRACE_S) {
		snprintf(last, lastsz, "it still runs the boot from before that reboot");
		return 0;
	} else {
		msg = brc != 0 ? "answers again (its boot time unread)"
		      : boot >= s->reboot_unseen_ts
			      ? "answers again, from a boot after the reboot an earlier apply sent"
			      : "answers; the reboot an earlier apply sent did not take place";
		/* seen through: later runs need not ask its boot again */
		gc_exec_journal(r, s->target, "resume: reboot seen", "reboot_seen", GC_J_DONE, msg);
	}
	s->reboot_unseen_ts = 0;
	if (warned)
		gc_exec_emit(&r->ctx, GC_EV_NOTE, s->target, NULL, msg, 0);
	return 1;
}

/* The first time, a warning that the wait is on; each time, a note. */
static void say_waiting(struct run *r, struct tslot *s, bool *warned, unsigned timeout,
			uint64_t t0, const char *last)
{
	if (!*warned) {
		char msg[GC_ERROR_MSG_MAX + 160];

		*warned = true;
		snprintf(msg, sizeof(msg), "%s: waiting up to %u s for it (%s)",
			 s->unseen_is_start ? "an earlier apply started its VM and never reached it"
					    : "an earlier apply rebooted it and never saw it back",
			 timeout / 1000, last);
		gc_exec_emit(&r->ctx, GC_EV_WARN, s->target, NULL, msg, 0);
	}
	gc_drv_note(&r->ctx, s->target, "waiting for it %s (%.0f s)",
		    s->unseen_is_start ? "to boot: an earlier apply started its VM"
				       : "to come back from an earlier apply's reboot",
		    (double)(gc_now_ns() - t0) / 1e9);
}

static int observe_after_reboot(struct run *r, struct tslot *s, struct gc_buf *problems,
				struct gc_error *err)
{
	const struct gc_drv_settings *set = gc_drv_settings(&r->ctx);
	unsigned timeout = set->reboot_timeout_ms ? set->reboot_timeout_ms : 20u * 60 * 1000;
	unsigned poll = set->reboot_poll_ms ? set->reboot_poll_ms : 2000;
	uint64_t t0 = gc_now_ns(), deadline = t0 + (uint64_t)timeout * 1000000u, auth_since = 0;
	char last[GC_ERROR_MSG_MAX] = "no answer";
	bool warned = false;

	/* as gc_drv_wait_reboot: a booting Linux machine is dialled at most once a second */
	if (poll < (s->target->kind == GC_TARGET_ESXI ? 200u : 1000u))
		poll = s->target->kind == GC_TARGET_ESXI ? 200u : 1000u;
	for (;;) {
		struct gc_error e = GC_ERROR_INIT;
		int rc = observe_once(r, s, problems, &e);

		if (rc == 0) {
			auth_since = 0;
			if ((rc = judge_answer(r, s, warned, last, sizeof(last), &e)) == 1)
				return 0;
		}
		if (rc != 0) {
			snprintf(last, sizeof(last), "%s", e.msg);
			if (e.code == GC_EAUTH ? !gc_drv_auth_may_pass(&auth_since)
					       : !gc_exec_transport_fault(rc)) {
				*err = e;
				return rc;
			}
			if (e.code != GC_EAUTH)
				auth_since = 0;
		}
		if (s->conn != NULL)
			gc_exec_drop_conn(s);
		if (gc_drv_interrupted(&r->ctx)) {
			*err = e;
			return rc != 0 ? rc : gc_error_set(err, GC_EINTR, "interrupted");
		}
		if (gc_now_ns() >= deadline)
			return gc_error_set(err, GC_EREMOTE, "%s '%s' did not %s within %u s %s (%s)",
					    gc_target_kind_name(s->target->kind), s->target->name,
					    s->unseen_is_start ? "answer" : "come back", timeout / 1000,
					    s->unseen_is_start ? "after an earlier apply started its VM"
							       : "from the reboot an earlier apply sent",
					    last);
		say_waiting(r, s, &warned, timeout, t0, last);
		gc_exec_sleep_ms(poll);
	}
}

/* Connect and observe one target: with patience when an earlier apply's
 * reboot of it was never seen through (and this run may change it). */
static int observe_slot(struct run *r, struct tslot *s, struct gc_error *err)
{
	struct gc_buf problems = GC_BUF_INIT;
	int rc;

	if (s->reboot_unseen_ts > 0 && !r->ctx.opts->plan_only)
		rc = observe_after_reboot(r, s, &problems, err);
	else
		rc = observe_retrying(r, s, &problems, err);
	if (rc != 0) {
		gc_buf_free(&problems);
		return rc;
	}
	if (problems.len > 0) {
		/* the spec names something the target does not have */
		if (problems.ptr[problems.len - 1] == '\n')
			problems.ptr[--problems.len] = '\0';
		gc_error_set(err, GC_EREMOTE, "%s", gc_buf_str(&problems));
		gc_buf_free(&problems);
		return GC_EREMOTE;
	}
	gc_buf_free(&problems);
	s->observed = true;
	return 0;
}

struct obs_pool {
	struct run *r;
	pthread_mutex_t mu;
	size_t next;
	struct tslot **todo;
	size_t ntodo;
};

static void *observe_worker(void *arg)
{
	struct obs_pool *p = arg;

	for (;;) {
		struct gc_error err = GC_ERROR_INIT;
		struct tslot *s;

		pthread_mutex_lock(&p->mu);
		s = p->next < p->ntodo ? p->todo[p->next++] : NULL;
		pthread_mutex_unlock(&p->mu);
		if (s == NULL || gc_drv_interrupted(&p->r->ctx))
			return NULL;
		gc_exec_emit(&p->r->ctx, GC_EV_CONNECT, s->target, NULL, NULL, 0);
		gc_exec_lease_before_observe(p->r, s);
		if (observe_slot(p->r, s, &err) != 0) {
			gc_exec_lease_after_observe(p->r, s, false);
			s->failed = true;
			gc_exec_slot_error(s, err.msg);
			gc_exec_emit(&p->r->ctx, GC_EV_FAILED, s->target, NULL, err.msg, 0);
		} else {
			gc_exec_lease_after_observe(p->r, s, true);
			gc_exec_emit(&p->r->ctx, GC_EV_OBSERVED, s->target, NULL, NULL, 0);
		}
	}
}

void gc_exec_run_pool(unsigned n, void *(*fn)(void *), void *arg)
{
	pthread_t *th;
	unsigned i, started = 0;

	if (n == 0)
		n = 1;
	th = gc_xcalloc(n, sizeof(*th));
	for (i = 0; i < n; i++) {
		if (pthread_create(&th[i], NULL, fn, arg) == 0)
			started++;
		else
			break;
	}
	if (started == 0)
		fn(arg); /* no threads to be had: do the work here */
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
}

struct slot_pool {
	struct run *r;
	struct tslot **slots;
	size_t n, next;
	pthread_mutex_t mu;
	void (*fn)(struct run *r, struct tslot *s, size_t i, void *arg);
	void *arg;
};

static void *slot_worker(void *arg)
{
	struct slot_pool *p = arg;

	for (;;) {
		size_t i;

		pthread_mutex_lock(&p->mu);
		i = p->next < p->n ? p->next++ : p->n;
		pthread_mutex_unlock(&p->mu);
		if (i == p->n)
			return NULL;
		p->fn(p->r, p->slots[i], i, p->arg);
	}
}

void gc_exec_for_slots(struct run *r, struct tslot **slots, size_t n,
		       void (*fn)(struct run *r, struct tslot *s, size_t i, void *arg), void *arg)
{
	struct slot_pool p = {r, slots, n, 0, PTHREAD_MUTEX_INITIALIZER, fn, arg};

	if (n > 0)
		gc_exec_run_pool(n < r->parallelism ? (unsigned)n : r->parallelism, slot_worker, &p);
	pthread_mutex_destroy(&p.mu);
}

/* One pass of the pool over the selected targets whose kind is (or, with
 * !guests, is not) GC_TARGET_GUEST. */
static void observe_pass(struct run *r, bool guests)
{
	struct obs_pool p;
	size_t i;

	memset(&p, 0, sizeof(p));
	p.r = r;
	pthread_mutex_init(&p.mu, NULL);
	p.todo = gc_xcalloc(r->nslots ? r->nslots : 1, sizeof(*p.todo));
	for (i = 0; i < r->nslots; i++) {
		enum gc_target_kind k = r->slots[i].target->kind;

		if (r->slots[i].drv != NULL && gc_exec_selected(r->ctx.opts, k) &&
		    (k == GC_TARGET_GUEST) == guests)
			p.todo[p.ntodo++] = &r->slots[i];
	}
	if (p.ntodo > 0)
		gc_exec_run_pool(p.ntodo < r->parallelism ? (unsigned)p.ntodo : r->parallelism,
			 observe_worker, &p);
	free(p.todo);
	pthread_mutex_destroy(&p.mu);
}

/* Guests last: a guest whose VM the vCenter shows absent or off is not
 * dialled now (its driver connects when its VM is on, at its first step). */
static void observe_all(struct run *r)
{
	size_t i;

	observe_pass(r, false);
	for (i = 0; i < r->nslots; i++)
		if (gc_target_holds_vms(r->slots[i].target->kind) && r->slots[i].observed)
			r->ctx.vcenter_observed = true;
	observe_pass(r, true);
}

/* ---------------------------------------------------------------- the whole run */

static void index_resources(struct run *r, const struct gc_graph *g)
{
	size_t i;

	r->tres = gc_xcalloc(g->ntargets ? g->ntargets : 1, sizeof(*r->tres));
	r->ntres = gc_xcalloc(g->ntargets ? g->ntargets : 1, sizeof(*r->ntres));
	for (i = 0; i < g->nresources; i++)
		r->ntres[g->resources[i]->target->index]++;
	for (i = 0; i < g->ntargets; i++) {
		r->tres[i] = gc_xcalloc(r->ntres[i] ? r->ntres[i] : 1, sizeof(**r->tres));
		r->ntres[i] = 0;
	}
	for (i = 0; i < g->nresources; i++) {
		size_t t = g->resources[i]->target->index;

		r->tres[t][r->ntres[t]++] = g->resources[i];
	}
}

static double since(uint64_t t0)
{
	return (double)(gc_now_ns() - t0) / 1e9;
}

static void free_run(struct run *r, const struct gc_graph *g)
{
	size_t i;

	if (r->lease != NULL) {
		uint64_t t0 = gc_now_ns();

		gc_exec_release_leases(r);
		r->rep->lease_s += since(t0);
	}

	for (i = 0; i < r->nslots; i++) {
		if (r->slots[i].conn != NULL)
			r->slots[i].drv->disconnect(r->slots[i].conn);
	}
	for (i = 0; r->tres && i < g->ntargets; i++)
		free(r->tres[i]);
	free(r->tres);
	free(r->ntres);
	free(r->slots);
	free(r->st);
	free(r->halves);
	free(r->wait_head);
	gc_journal_close(r->journal);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->ctx.obs_mu);
	pthread_mutex_destroy(&r->ctx.ev_mu);
}


/* A selected target kind without a driver: refused before anything is touched. */
static int check_drivers(const struct gc_graph *g, const struct gc_exec_opts *opts,
			 struct gc_error *err)
{
	for (size_t i = 0; i < g->ntargets; i++) {
		enum gc_target_kind k = g->targets[i]->kind;

		if (gc_exec_selected(opts, k) && gc_exec_driver(k) == NULL)
			return gc_error_set(err, GC_ENOTSUP,
					    "this build has no %s driver yet (target '%s'): nothing was "
					    "touched; use --only to act on the other target kinds",
					    gc_target_kind_name(k), g->targets[i]->name);
	}
	return 0;
}

static void init_run(struct run *r, struct gc_exec_report *out, const struct gc_graph *g,
		     const struct gc_exec_opts *opts)
{
	memset(out, 0, sizeof(*out));
	memset(r, 0, sizeof(*r));
	r->ctx.graph = g;
	r->ctx.opts = opts;
	r->rep = out;
	r->parallelism = opts->parallelism ? opts->parallelism : 64;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	pthread_mutex_init(&r->ctx.obs_mu, NULL);
	pthread_mutex_init(&r->ctx.ev_mu, NULL);
}

/* One slot (and one report entry) per target, and the resource index. */
static void init_slots(struct run *r, const struct gc_graph *g)
{
	struct gc_exec_report *out = r->rep;

	gc_observed_new(&r->ctx.obs);
	out->observed = r->ctx.obs;
	out->ntargets = g->ntargets;
	out->targets = gc_xcalloc(g->ntargets ? g->ntargets : 1, sizeof(*out->targets));
	r->nslots = g->ntargets;
	r->slots = gc_xcalloc(g->ntargets ? g->ntargets : 1, sizeof(*r->slots));
	for (size_t i = 0; i < g->ntargets; i++) {
		r->slots[i].target = g->targets[i];
		r->slots[i].drv = gc_exec_driver(g->targets[i]->kind);
		r->slots[i].lanes = r->slots[i].drv != NULL && r->slots[i].drv->shared_conn;
		r->slots[i].rep = &out->targets[i];
		out->targets[i].target = g->targets[i];
	}
	index_resources(r, g);
}

/* Every target observed once, in parallel, with what the journal says. */
static int observe_phase(struct run *r, const char *cluster, struct gc_error *err)
{
	uint64_t t0;

	gc_exec_recall_journal(r, cluster);
	gc_exec_offer_lease(r, cluster);
	t0 = gc_now_ns();
	observe_all(r);
	r->ctx.lease_offer = NULL; /* a later observation (a retry) only reads it */
	gc_exec_check_reboots(r);
	gc_exec_feed_journal(r);
	gc_exec_fingerprint(r);
	r->rep->observe_s = since(t0);
	if (gc_drv_interrupted(&r->ctx)) {
		r->rep->interrupted = true;
		return gc_error_set(err, GC_EINTR, "interrupted while observing");
	}
	return 0;
}

static void note_reboots_owed(struct run *r)
{
	for (size_t i = 0; i < r->nslots; i++)
		r->slots[i].rep->reboot_owed = r->slots[i].reboot_owed;
}

/* The plan from what was observed (a saved plan's targets must not have changed). */
static int plan_phase(struct run *r, const struct gc_graph *g, struct gc_error *err)
{
	const struct gc_exec_opts *opts = r->ctx.opts;
	struct gc_plan_opts po = opts->plan;
	const char **unknown;
	int rc;

	if (gc_exec_check_fingerprints(r, err) != 0)
		return err->code;
	unknown = gc_exec_unknown_targets(r);
	po.unknown = unknown;
	rc = gc_plan_build(&r->rep->plan, g, r->ctx.obs, &po, err);
	free(unknown);
	if (rc != 0)
		return rc;
	note_reboots_owed(r);
	if (opts->event != NULL) {
		struct gc_exec_event ev = {GC_EV_PLANNED, NULL, NULL, NULL, 0, r->rep->plan};

		opts->event(opts->event_arg, &ev);
	}
	return 0;
}

/*
 * The journal's last word on a run that had something to do (or took the
 * lease on the way): "converged" and the hash of the spec's desired state
 * when every action was done, so that the next apply of the same spec
 * expects no change and only reads the lease (lease.c).
 */
static void journal_run_end(struct run *r, bool offered)
{
	struct gc_error err = GC_ERROR_INIT;
	bool converged = r->rep->failed == 0 && r->rep->skipped == 0 && r->rep->out_of_scope == 0 &&
			 !r->rep->interrupted;
	char hash[32], detail[48];

	if (r->journal == NULL || (gc_plan_empty(r->rep->plan) && !offered))
		return;
	gc_exec_desired_hash(r->ctx.graph, hash);
	snprintf(detail, sizeof(detail), "converged %s", hash);
	if (gc_journal_append(r->journal, "", "run", "run", converged ? GC_J_DONE : GC_J_FAILED,
			      converged ? detail : "changes left", &err) != 0)
		gc_exec_emit(&r->ctx, GC_EV_WARN, NULL, NULL, err.msg, 0);
}

/*
 * The plan carried out: leases first (a converged cluster is only read:
 * nothing to lease, and a lease a killed run left is cleared), then the
 * operator's yes, then wave after wave.  Targets that failed to observe
 * fail all their actions' dependents; a wave's failed hosts leave
 * maintenance before the next wave starts.
 */
static int apply_phase(struct run *r, const struct gc_graph *g, const char *cluster,
		       struct gc_error *err)
{
	const struct gc_exec_opts *opts = r->ctx.opts;
	struct gc_plan *plan = r->rep->plan;
	bool offered = r->lease != NULL; /* the observation was to take the lease */
	uint64_t t0;

	if (gc_plan_empty(plan))
		gc_exec_clear_left_leases(r);
	t0 = gc_now_ns();
	if (!gc_plan_empty(plan) && gc_exec_take_leases(r, cluster, err) != 0)
		return err->code;
	r->rep->lease_s = since(t0);
	if (opts->approve != NULL && !gc_plan_empty(plan) && !opts->approve(opts->approve_arg, plan))
		return gc_error_set(err, GC_ERROR, "apply cancelled: nothing was changed");
	if (gc_exec_lease_write_pending(r, err) != 0)
		return err->code;
	r->st = gc_xcalloc(plan->nactions ? plan->nactions : 1, sizeof(*r->st));
	gc_exec_count_lease_work(r);
	t0 = gc_now_ns();
	for (size_t i = 0; i < plan->nwaves; i++) {
		gc_exec_renew_leases(r, cluster);
		if (gc_exec_halted(r, g, i)) {
			gc_exec_not_started(r, i);
			continue;
		}
		gc_exec_run_wave(r, i);
		/* a signal during the wave's last steps, which the scheduler
		 * never got back to look at: the waves after it are not started,
		 * and a step it cut short (a guest's shutdown) makes the run
		 * interrupted, not failed; a run it left nothing to stop is done */
		if (!r->stop && gc_drv_interrupted(&r->ctx) &&
		    (i + 1 < plan->nwaves || r->rep->failed > 0)) {
			r->stop = true;
			r->rep->interrupted = true;
		}
		gc_exec_recover_hosts(r, &plan->waves[i]);
		gc_exec_restore_vm_power(r, i);
	}
	gc_exec_recover_hosts(r, NULL);
	gc_exec_settle_saves(r);
	r->rep->apply_s = since(t0);
	r->rep->changing_commands = r->ctx.changes;
	note_reboots_owed(r);
	journal_run_end(r, offered);
	return 0;
}

/* The run's result: the first failed target, or the interruption. */
static int run_result(struct run *r, struct gc_error *err)
{
	int rc = 0;

	for (size_t i = 0; i < r->nslots; i++) {
		if ((r->slots[i].failed || r->slots[i].lane_failed) && rc == 0)
			rc = gc_error_set(err, GC_EREMOTE, "%s '%s' failed: %s",
					  gc_target_kind_name(r->slots[i].target->kind),
					  r->slots[i].target->name,
					  r->slots[i].rep->error ? r->slots[i].rep->error : "unknown error");
	}
	if (r->rep->interrupted && (rc == 0 || rc == GC_EREMOTE)) {
		gc_error_clear(err);
		rc = gc_error_set(err, GC_EINTR, "interrupted");
	}
	return rc;
}

int gc_exec_run(struct gc_exec_report *out, const struct gc_graph *g,
		const struct gc_exec_opts *opts, struct gc_error *err)
{
	const char *cluster = g->cluster && g->cluster->name ? g->cluster->name : "cluster";
	struct gc_lock *lock = NULL;
	struct run r;
	int rc;

	init_run(&r, out, g, opts);
	if ((rc = check_drivers(g, opts, err)) != 0)
		goto out;
	if (gc_lock_acquire(&lock, opts->state_dir, cluster, err) != 0 ||
	    (!opts->plan_only && gc_journal_open(&r.journal, opts->state_dir, cluster, err) != 0)) {
		rc = err->code;
		goto out;
	}
	init_slots(&r, g);
	if ((rc = observe_phase(&r, cluster, err)) != 0)
		goto out;
	if (opts->unlock)
		gc_exec_break_leases(&r);
	else if ((rc = plan_phase(&r, g, err)) != 0 ||
		 (!opts->plan_only && (rc = apply_phase(&r, g, cluster, err)) != 0))
		goto out;
	rc = run_result(&r, err);
out:
	free_run(&r, g);
	gc_lock_release(lock);
	return rc;
}

void gc_exec_report_free(struct gc_exec_report *r)
{
	size_t i;

	if (r == NULL)
		return;
	for (i = 0; i < r->ntargets; i++) {
		free(r->targets[i].error);
		free(r->targets[i].maintenance_why);
		free(r->targets[i].vms_back_on);
		free(r->targets[i].vms_left_off);
		free(r->targets[i].vms_off_why);
		free(r->targets[i].vms_moved_back);
		free(r->targets[i].vms_left_away);
		free(r->targets[i].vms_away_why);
	}
	free(r->targets);
	gc_plan_free(r->plan);
	gc_observed_free(r->observed);
	memset(r, 0, sizeof(*r));
}
