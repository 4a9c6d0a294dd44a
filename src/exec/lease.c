/*
 * lease.c - the cluster lease held on the targets themselves, so that every
 * operator sees it, whichever copy of the spec and state directory they
 * apply from (the local flock only covers one state directory).
 *
 * Every selected target whose driver carries leases (ESXi: a user-defined
 * advanced option, /UserVars/GpuclusterctlLease; vCenter: a custom field
 * of the spec's cluster, src/drivers/vcenter/lease.c) holds one string:
 *
 *   cluster=roce-lab;holder=root@ops1;pid=4242;lock=3f2a...;since=1795000000;expires=1795021600
 *
 * `lock` hashes this machine's name and the absolute state directory: a
 * lease with our own lock was left by a run of ours that died (the flock we
 * hold proves it), and is taken over.  Any other unexpired lease refuses the
 * apply before anything changes, naming the holder; `unlock --force` clears
 * a dead holder's leases.  The lease is written once the plan has changes
 * (before it is approved or run; a converged cluster is only read), renewed
 * before a wave once half of it has passed, and cleared at the end; or,
 * where a target's driver can, taken in its observation and cleared in its
 * last step's exec (gc_exec_offer_lease, gc_exec_count_lease_work).  The
 * journal records each write ("lease" start) and clear ("lease" done): a run
 * killed after its last change leaves a converged cluster, whose re-run
 * takes no lease; it clears the one of ours the journal says is left.
 *
 * On an ESXi host the check reads what the apply's observation read in its
 * batch, and the write is a compare-and-set of its own (the driver's
 * lease_take: another's lease, taken since the check, is named, never
 * overwritten); the clear at the end is one compare-and-clear exec (the
 * driver's lease_clear_ours).  A vCenter's lease is one too, atomic on the
 * server (its driver's lease_atomic): those are written first, so when the
 * spec has a vCenter, of two applies that both found the cluster free only
 * the first to write it goes on; the other is refused before it has
 * written anything else.  The hosts' leases then go out at the head of
 * their first changing exec where that step starts at once
 * (defer_to_steps).  Without a vCenter, two applies started in the same
 * second may both get through.
 */
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec_int.h"

#define LEASE_S (6 * 3600) /* the lease's life; renewed at half of it */

/* One more target whose lease was taken (observing: in its observation)
 * or cleared (in clear_if_ours; in a last step's exec, drvctx.c counts it); from
 * many workers at once. */
static void count(size_t *n)
{
	__atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
}

static bool lease_capable(const struct run *r, const struct tslot *s)
{
	return s->drv != NULL && s->drv->lease_get != NULL && s->drv->lease_set != NULL &&
	       s->observed && s->conn != NULL && gc_exec_selected(r->ctx.opts, s->target->kind);
}

/* Keep what a lease may hold: [A-Za-z0-9._-]; anything else becomes '_'. */
static void safe_copy(char *out, size_t n, const char *in)
{
	size_t i;

	for (i = 0; in != NULL && in[i] && i + 1 < n; i++) {
		char c = in[i];

		out[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '.' || c == '_' || c == '-') ? c : '_';
	}
	out[i] = '\0';
}

/* The value of key in a lease string, or "" (copied into out). */
static const char *field(const char *lease, const char *key, char *out, size_t n)
{
	size_t klen = strlen(key);
	const char *p = lease;

	out[0] = '\0';
	while (p != NULL && *p) {
		size_t len = strcspn(p, ";");

		if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
			size_t v = len - klen - 1 < n - 1 ? len - klen - 1 : n - 1;

			memcpy(out, p + klen + 1, v);
			out[v] = '\0';
			break;
		}
		p += len + (p[len] == ';');
	}
	return out;
}

static void iso_time(char *out, size_t n, const char *epoch)
{
	time_t t = (time_t)strtoll(epoch, NULL, 10);
	struct tm tm;

	if (epoch[0] == '\0' || gmtime_r(&t, &tm) == NULL)
		snprintf(out, n, "?");
	else
		strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* This machine and state directory, hashed: "we" across our own runs. */
static void our_lock(char out[17], const char *state_dir)
{
	char host[256] = "", dir[PATH_MAX];
	uint64_t h = 0xcbf29ce484222325ull;
	const char *parts[2];

	gethostname(host, sizeof(host) - 1);
	parts[0] = host;
	parts[1] = realpath(state_dir, dir) ? dir : state_dir;
	for (size_t k = 0; k < 2; k++) {
		for (const char *p = parts[k]; *p; p++) {
			h ^= (unsigned char)*p;
			h *= 0x100000001b3ull;
		}
		h ^= 0xff;
		h *= 0x100000001b3ull;
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

static char *lease_string(struct run *r, const char *cluster)
{
	char user[64], host[128], rawhost[256] = "", name[64];
	const struct passwd *pw = getpwuid(getuid());
	time_t now = time(NULL);

	gethostname(rawhost, sizeof(rawhost) - 1);
	safe_copy(user, sizeof(user), pw ? pw->pw_name : getenv("USER"));
	safe_copy(host, sizeof(host), rawhost);
	safe_copy(name, sizeof(name), cluster);
	return gc_xasprintf("cluster=%s;holder=%s@%s;pid=%ld;lock=%s;since=%lld;expires=%lld", name,
			    user[0] ? user : "unknown", host[0] ? host : "unknown", (long)getpid(),
			    r->lease_lock, (long long)now, (long long)now + LEASE_S);
}

/* The lease another apply holds on s, or 0 when there is none, it expired,
 * or it is one of ours; then *err names the holder.  in_step: met by the
 * compare-and-set of s's first changing step, once other targets may have
 * changed: nothing changed on s, and the rollout stops there. */
static int foreign_at(const struct tslot *s, const char *cluster, const char *lease, const char *ours,
		      bool in_step, struct gc_error *err)
{
	char lock[64], exp[32], holder[160], pid[32], since[32], t0[32], t1[32];

	if (lease[0] == '\0' || strcmp(field(lease, "lock", lock, sizeof(lock)), ours) == 0)
		return 0;
	field(lease, "expires", exp, sizeof(exp));
	if (exp[0] != '\0' && strtoll(exp, NULL, 10) <= (long long)time(NULL))
		return 0; /* expired: its holder stopped renewing it */
	field(lease, "holder", holder, sizeof(holder));
	field(lease, "pid", pid, sizeof(pid));
	iso_time(t0, sizeof(t0), field(lease, "since", since, sizeof(since)));
	iso_time(t1, sizeof(t1), exp);
	return gc_error_set(err, GC_ELOCKED,
			    "cluster '%s' is locked on %s '%s' by %s pid %s since %s (until %s): another "
			    "apply %s, maybe from another copy of the spec; nothing was changed%s. If "
			    "that apply is dead: gpuclusterctl unlock --force SPEC",
			    cluster, gc_target_kind_name(s->target->kind), s->target->name,
			    holder[0] ? holder : "?", pid[0] ? pid : "?", t0, t1,
			    in_step ? "took it after this one read it" : "holds it",
			    in_step ? " on it, and the rollout stops" : "");
}

static int foreign(const struct tslot *s, const char *cluster, const char *lease, const char *ours,
		   struct gc_error *err)
{
	return foreign_at(s, cluster, lease, ours, false, err);
}

/* The journal forgets the lease of s: cleared, or never ours. */
static void lease_cleared(struct run *r, struct tslot *s)
{
	if (s->lease_left)
		gc_exec_journal(r, s->target, "lease", "lease", GC_J_DONE, NULL);
	s->lease_left = false;
	s->leased = false;
}

/* ---------------------------------------------------------------- the lease in the targets' own execs */

/*
 * An apply that expects changes (the journal's last run record is not
 * "converged" with this spec's hash: recover.c) has its observation take
 * the lease, in the same
 * exec as its reads, on every target whose driver can (ESXi: the snippet
 * GC_ESXI_LEASE_TAKE_SCRIPT writes ours where the host holds none or one of
 * ours, and only reads another's).  gc_exec_take_leases then checks what
 * the observation read as before: another apply's lease still refuses the
 * run before any change, and the leases taken are cleared again.  Not when
 * a compare-and-set target (a vCenter) is in scope: its write must come
 * first and alone, so that of two racing applies only one writes anything
 * else.  A converged re-apply takes nothing: one read-only exec.
 */
void gc_exec_offer_lease(struct run *r, const char *cluster)
{
	bool any = false;

	if (r->ctx.opts->plan_only || r->ctx.opts->unlock || !r->expect_changes)
		return;
	for (size_t i = 0; i < r->nslots; i++) {
		const struct tslot *s = &r->slots[i];

		if (s->drv == NULL || s->drv->lease_get == NULL ||
		    !gc_exec_selected(r->ctx.opts, s->target->kind))
			continue;
		if (s->drv->lease_atomic)
			return;
		any = any || s->drv->lease_taken != NULL;
	}
	if (!any)
		return;
	our_lock(r->lease_lock, r->ctx.opts->state_dir);
	r->lease = lease_string(r, cluster);
	r->lease_ns = gc_now_ns();
	r->ctx.lease_offer = r->lease;
}

/* In s's observation worker, before it connects: journalled first, as any
 * lease write (a run killed after it clears the lease later). */
void gc_exec_lease_before_observe(struct run *r, struct tslot *s)
{
	if (r->ctx.lease_offer == NULL || s->drv == NULL || s->drv->lease_taken == NULL ||
	    !gc_exec_selected(r->ctx.opts, s->target->kind))
		return;
	gc_exec_journal(r, s->target, "lease", "lease", GC_J_START, NULL);
	s->lease_offered = true;
	s->lease_left = true;
}

/* ... and once it observed s: held (released at the end whatever
 * happens), or not written, which the journal forgets unless a run of ours
 * left one there before. */
void gc_exec_lease_after_observe(struct run *r, struct tslot *s, bool observed)
{
	if (!s->lease_offered || s->conn == NULL)
		return;
	if (s->drv->lease_taken(s->conn)) {
		s->leased = true;
		count(&r->rep->lease_taken);
		count(&r->rep->lease_taken_observing);
	} else if (observed && !s->lease_left_before) {
		lease_cleared(r, s);
	}
}

static int get_lease(struct tslot *s, struct run *r, void *arg, struct gc_error *err)
{
	return s->drv->lease_get(s->conn, &r->ctx, arg, err);
}

static int set_lease(struct tslot *s, struct run *r, void *arg, struct gc_error *err)
{
	return s->drv->lease_set(s->conn, &r->ctx, arg, err);
}

/*
 * One lease exchange with many targets at once (gc_exec_for_slots): each
 * target's outcome in its own slot of rc/errs/held, read in target order
 * afterwards, so the first failure reported is the same whatever finished
 * first.
 */
struct lease_pass {
	struct tslot **slots;
	size_t n;
	int *rc;
	struct gc_error *errs;
	char **held;
	const char *cluster;
};

static void pass_init(struct lease_pass *p, struct run *r, bool (*want)(const struct run *r,
									const struct tslot *s))
{
	memset(p, 0, sizeof(*p));
	p->slots = gc_xcalloc(r->nslots ? r->nslots : 1, sizeof(*p->slots));
	for (size_t i = 0; i < r->nslots; i++)
		if (want(r, &r->slots[i]))
			p->slots[p->n++] = &r->slots[i];
	p->rc = gc_xcalloc(p->n ? p->n : 1, sizeof(*p->rc));
	p->errs = gc_xcalloc(p->n ? p->n : 1, sizeof(*p->errs));
	p->held = gc_xcalloc(p->n ? p->n : 1, sizeof(*p->held));
}

static void pass_free(struct lease_pass *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->held[i]);
	free(p->held);
	free(p->errs);
	free(p->rc);
	free(p->slots);
}

/* The first failure in target order (0: none). */
static int pass_result(const struct lease_pass *p, struct gc_error *err)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->rc[i] != 0) {
			*err = p->errs[i];
			return p->rc[i];
		}
	return 0;
}

/* to be read: not taken by its observation, whose read found it free or
 * ours (a read now would cost an exec once the observation's is stale) */
static bool capable(const struct run *r, const struct tslot *s)
{
	return lease_capable(r, s) && !s->leased;
}

/* not a compare-and-set target, not taken by its observation, and not
 * left to its first changing step */
static bool capable_plain(const struct run *r, const struct tslot *s)
{
	return lease_capable(r, s) && !s->drv->lease_atomic && !s->leased && !s->lease_pending;
}

static void read_one(struct run *r, struct tslot *s, size_t i, void *arg)
{
	struct lease_pass *p = arg;

	/* a read: repeated on a transport fault on any target (only a
	 * compare-and-set write may not be) */
	p->rc[i] = gc_exec_lease_call_repeatable(r, s, get_lease, &p->held[i], &p->errs[i]);
}

/*
 * Our lease written on s: with the driver's compare-and-set where it has
 * one (lease_take), so that a lease another apply took since ours was read
 * is never overwritten but named; one that expired is overwritten, as the
 * read let it be.  Else a plain write.
 */
static int write_lease(struct run *r, struct tslot *s, bool in_step, struct gc_error *err)
{
	struct gc_error e = GC_ERROR_INIT;
	char *held = NULL;
	int rc;

	if (s->drv->lease_take == NULL)
		return s->drv->lease_set(s->conn, &r->ctx, r->lease, err);
	rc = s->drv->lease_take(s->conn, &r->ctx, r->lease_lock, r->lease, &held, err);
	if (rc == GC_ELOCKED && held != NULL) {
		if (foreign_at(s, r->lease_cluster, held, r->lease_lock, in_step, &e) != 0) {
			*err = e;
		} else { /* expired: its holder stopped renewing it */
			gc_error_clear(err);
			rc = s->drv->lease_set(s->conn, &r->ctx, r->lease, err);
		}
	}
	free(held);
	return rc;
}

static int write_lease_call(struct tslot *s, struct run *r, void *arg, struct gc_error *err)
{
	(void)arg;
	return write_lease(r, s, false, err);
}

/* journalled first: a run killed after the write clears it later */
static void write_one(struct run *r, struct tslot *s, size_t i, void *arg)
{
	struct lease_pass *p = arg;

	gc_exec_journal(r, s->target, "lease", "lease", GC_J_START, NULL);
	s->lease_left = true;
	p->rc[i] = gc_exec_lease_call(r, s, write_lease_call, NULL, &p->errs[i]);
	if (p->rc[i] == 0) {
		s->leased = true;
		count(&r->rep->lease_taken);
	}
}

/*
 * Test hooks: hold the run between reading the leases and writing them, so
 * that a test can make two applies race in that gap.  GC_TEST_LEASE_PAUSE_MS
 * sleeps; GC_TEST_LEASE_BARRIER=PATH makes PATH.ready (this run has read)
 * and waits until PATH exists, at most 120 s, so that a test on a busy
 * machine can let each run on at the moment it chooses.
 */
static void test_pause(void)
{
	const char *ms = gc_test_hook("GC_TEST_LEASE_PAUSE_MS"),
		   *barrier = gc_test_hook("GC_TEST_LEASE_BARRIER");

	if (ms != NULL)
		usleep((useconds_t)strtoul(ms, NULL, 10) * 1000u);
	if (barrier != NULL && barrier[0] != '\0') {
		char *ready = gc_xasprintf("%s.ready", barrier);
		FILE *f = fopen(ready, "w");

		if (f != NULL)
			fclose(f);
		free(ready);
		for (int i = 0; i < 12000 && access(barrier, F_OK) != 0; i++)
			usleep(10000);
	}
}

/* ---------------------------------------------------------------- the lease in a host's first changing step */

/*
 * The hosts' leases written here, not in their observation (a vCenter in
 * scope, whose compare-and-set goes first; or an apply whose journal
 * expected no change, so that its observation only read them): a host whose driver can (lease_in_step) has
 * its lease taken by the first exec of its first changing step instead,
 * ahead of the step's first change, by the same compare-and-set as the
 * plain write: one exec fewer per host, and none on the critical path.
 * Only where that step goes out at once: the host has actions in the first
 * wave, whose targets all start together (no more of them than
 * --parallelism), its first one waits for no other target's (a VM's
 * power-off, a switch's change), and the check read no lease or one of
 * ours there.  The
 * other hosts (later waves, none to change, an expired lease to take over)
 * are written here, as before.  The vCenter's lease is held all the while,
 * so no apply of a spec with that vCenter gets in; one without it that
 * takes a host in between (without a vCenter: any other apply) makes that
 * host's step fail before its first change, naming the holder, and the
 * rollout stop.  Journalled now, as any
 * write: a run killed after the step clears it later.
 */
/* Does a wait for another target's action? */
static bool waits_on_others(const struct gc_action *a)
{
	for (size_t i = 0; i < a->ndeps; i++)
		if (a->deps[i]->target != a->target)
			return true;
	return false;
}

static void defer_to_steps(struct run *r)
{
	const struct gc_plan *plan = r->rep->plan;
	const struct gc_plan_wave *w;

	if (plan == NULL || plan->nwaves == 0)
		return;
	w = &plan->waves[0];
	if (w->ntargets > r->parallelism)
		return;
	for (size_t k = 0; k < w->ntargets; k++) {
		struct tslot *s = &r->slots[w->targets[k].target->index];

		if (w->targets[k].nactions == 0 || !capable_plain(r, s) || !s->lease_read_free ||
		    s->drv->lease_in_step == NULL || s->drv->lease_take == NULL ||
		    waits_on_others(w->targets[k].actions[0]))
			continue;
		gc_exec_journal(r, s->target, "lease", "lease", GC_J_START, NULL);
		s->lease_left = true;
		s->lease_pending = true;
	}
}

/* The slots whose pending lease an approval that kept us waiting (an
 * operator reading the plan) leaves to be written now, all at once. */
static bool pending(const struct run *r, const struct tslot *s)
{
	(void)r;
	return s->lease_pending;
}

static void write_pending_one(struct run *r, struct tslot *s, size_t i, void *arg)
{
	struct lease_pass *p = arg;

	p->rc[i] = gc_exec_lease_call(r, s, write_lease_call, NULL, &p->errs[i]);
	s->lease_pending = false;
	if (p->rc[i] == 0) {
		s->leased = true;
		count(&r->rep->lease_taken);
	} else {
		s->lease_maybe = true; /* cleared at the end if ours */
	}
}

/*
 * After the plan's approval: an approval that took more than 2 s (an
 * operator typed it) writes the pending leases now, so that no host waits
 * unleased for its first step while a human reads; a refusal refuses the
 * run before any change, as the check does.
 */
int gc_exec_lease_write_pending(struct run *r, struct gc_error *err)
{
	struct lease_pass p;
	int rc;

	if (r->lease == NULL || gc_now_ns() - r->lease_taken_ns < 2000000000ull)
		return 0;
	pass_init(&p, r, pending);
	gc_exec_for_slots(r, p.slots, p.n, write_pending_one, &p);
	rc = pass_result(&p, err);
	pass_free(&p);
	return rc;
}

/* The driver composing s's step asks for the lease to take in it. */
const char *gc_exec_lease_step_take(struct run *r, struct tslot *s)
{
	return s->lease_pending ? r->lease : NULL;
}

/* ... and says what came of it (sys/driver.h). */
int gc_exec_lease_step_result(struct run *r, struct tslot *s, int outcome, const char *held,
			      struct gc_error *err)
{
	if (!s->lease_pending)
		return 0;
	switch (outcome) {
	case GC_DRV_LEASE_TOOK:
		s->lease_pending = false;
		s->lease_maybe = false;
		s->leased = true;
		count(&r->rep->lease_taken);
		count(&r->rep->lease_taken_in_step);
		return 0;
	case GC_DRV_LEASE_UNKNOWN:
		s->lease_maybe = true; /* the retry asks again; cleared at the end if ours */
		return 0;
	default:
		s->lease_pending = false;
		if (held == NULL) { /* the write failed: the driver's error says how */
			s->lease_maybe = true;
			return err->code != 0 ? err->code : GC_EREMOTE;
		}
		gc_error_clear(err); /* the driver's words: said again, with the holder */
		if (foreign_at(s, r->lease_cluster, held, r->lease_lock, true, err) == 0)
			gc_error_set(err, GC_ELOCKED, "%s '%s': its cluster lease changed since it was "
				     "read (%s); nothing was changed on it, and the rollout stops",
				     gc_target_kind_name(s->target->kind), s->target->name, held);
		if (!s->lease_maybe)
			lease_cleared(r, s);
		return GC_ELOCKED;
	}
}

/* Before a step of s goes out (action.c): a pending lease that the driver
 * does not take in a step starting with `first` is taken now, in an exec
 * of its own (not before a wait for a reboot, which changes nothing).  0,
 * or the error the step fails with (a transport fault is retried as the
 * step's). */
int gc_exec_lease_take_pending(struct run *r, struct tslot *s, const struct gc_action *first,
			       struct gc_error *err)
{
	int rc;

	/* a wait for a host's reboot changes nothing, and may find it down:
	 * the lease goes with the step after it */
	if (!s->lease_pending || first->kind == GC_ACT_WAIT_HOST ||
	    (s->drv->lease_in_step != NULL && s->drv->lease_in_step(first)))
		return 0;
	rc = write_lease(r, s, true, err);
	if (rc == 0)
		return gc_exec_lease_step_result(r, s, GC_DRV_LEASE_TOOK, NULL, err);
	if (gc_exec_transport_fault(rc)) {
		s->lease_maybe = true;
		return rc;
	}
	s->lease_pending = false;
	if (rc == GC_ELOCKED) { /* named by write_lease: nothing of ours there */
		if (!s->lease_maybe)
			lease_cleared(r, s);
	} else {
		s->lease_maybe = true;
	}
	return rc;
}

int gc_exec_take_leases(struct run *r, const char *cluster, struct gc_error *err)
{
	struct lease_pass p;
	size_t i;
	int rc;

	our_lock(r->lease_lock, r->ctx.opts->state_dir);
	r->lease_cluster = cluster;
	/* every target read at once: any foreign lease refuses before a write */
	pass_init(&p, r, capable);
	gc_exec_for_slots(r, p.slots, p.n, read_one, &p);
	rc = pass_result(&p, err);
	for (i = 0; rc == 0 && i < p.n; i++) {
		char lock[64];

		rc = foreign(p.slots[i], cluster, p.held[i], r->lease_lock, err);
		p.slots[i]->lease_read_free =
			p.held[i][0] == '\0' ||
			strcmp(field(p.held[i], "lock", lock, sizeof(lock)), r->lease_lock) == 0;
	}
	pass_free(&p);
	if (rc != 0)
		return rc; /* what the observation took is released at the end */
	if (r->lease == NULL) {
		r->lease = lease_string(r, cluster);
		r->lease_ns = gc_now_ns();
	}
	test_pause();
	/* compare-and-set targets first, one by one: a race is lost before
	 * anything else is written (what was written is cleared again at the
	 * end of the run); then the others, all at once */
	for (i = 0; i < r->nslots; i++) {
		struct tslot *s = &r->slots[i];

		if (!lease_capable(r, s) || !s->drv->lease_atomic)
			continue;
		gc_exec_journal(r, s->target, "lease", "lease", GC_J_START, NULL);
		s->lease_left = true;
		if (gc_exec_lease_call(r, s, set_lease, r->lease, err) != 0)
			return err->code;
		s->leased = true;
		count(&r->rep->lease_taken);
	}
	defer_to_steps(r);
	pass_init(&p, r, capable_plain);
	gc_exec_for_slots(r, p.slots, p.n, write_one, &p);
	rc = pass_result(&p, err);
	pass_free(&p);
	r->lease_taken_ns = gc_now_ns();
	return rc;
}

static bool leased(const struct run *r, const struct tslot *s)
{
	(void)r;
	return s->leased;
}

/*
 * Before the first wave: what is left to do, per target and in all.  A
 * target's last step may clear its lease in its own exec (ESXi: after the
 * read-back's exit of maintenance mode) once no action is left on a target
 * that does not hold our lease that way: every target still to change is
 * then still leased, so a second apply is refused until the run has
 * nothing left to do, as when every lease was cleared at the end.  A
 * vCenter, a switch or a guest with actions left keeps every lease to the
 * end.  Counts only ever go down, at each action settled; a settlement not
 * counted errs on the safe side (a lease kept to the end).
 */
void gc_exec_count_lease_work(struct run *r)
{
	const struct gc_plan *plan = r->rep->plan;

	r->inline_release = false;
	r->unleased_left = 0;
	if (r->lease == NULL || plan == NULL)
		return;
	for (size_t i = 0; i < r->nslots; i++) {
		struct tslot *s = &r->slots[i];

		s->left = 0;
		s->counted_unleased = !((s->leased || s->lease_pending) && s->drv != NULL &&
					s->drv->lease_taken != NULL);
	}
	for (size_t w = 0; w < plan->nwaves; w++)
		for (size_t k = 0; k < plan->waves[w].ntargets; k++) {
			const struct gc_plan_target *pt = &plan->waves[w].targets[k];
			struct tslot *s = &r->slots[pt->target->index];

			if (s->drv == NULL || !gc_exec_selected(r->ctx.opts, s->target->kind))
				continue; /* out of scope: never runs */
			s->left += pt->nactions;
			if (s->counted_unleased)
				r->unleased_left += pt->nactions;
		}
	r->inline_release = true;
}

/* Under r->mu: n actions of s settled (done, failed or skipped). */
void gc_exec_lease_settled(struct run *r, struct tslot *s, size_t n)
{
	if (!r->inline_release)
		return;
	n = n < s->left ? n : s->left;
	s->left -= n;
	if (s->counted_unleased)
		r->unleased_left -= n < r->unleased_left ? n : r->unleased_left;
}

/* Under r->mu, before s's step of n actions goes out: may its exec clear
 * the lease?  Its last step, and nothing left elsewhere but on leased targets. */
void gc_exec_lease_step(struct run *r, struct tslot *s, size_t n)
{
	s->released_inline = false;
	s->step_n = n;
	s->release_inline = gc_exec_lease_may_release(r, s);
}

/* Under r->mu: may s's step going out clear the lease?  Asked again while
 * a step waits for a host's reboot (drvctx.c gc_drv_lease_release_lock):
 * what other targets had left when it started may have settled since. */
bool gc_exec_lease_may_release(const struct run *r, const struct tslot *s)
{
	return r->inline_release && !r->stop && (s->leased || s->lease_pending) &&
	       !s->counted_unleased && s->left == s->step_n && r->unleased_left == 0;
}

/* After s's step: the driver cleared the lease in it (journalled now). */
void gc_exec_lease_after_step(struct run *r, struct tslot *s)
{
	bool released;

	pthread_mutex_lock(&r->mu);
	released = s->released_inline;
	s->release_inline = s->released_inline = false;
	pthread_mutex_unlock(&r->mu);
	if (released)
		lease_cleared(r, s);
}

static void renew_one(struct run *r, struct tslot *s, size_t i, void *arg)
{
	struct gc_error err = GC_ERROR_INIT;

	(void)i;
	(void)arg;
	if (gc_exec_connect_slot(r, s, true, &err) == 0 &&
	    s->drv->lease_set(s->conn, &r->ctx, r->lease, &err) != 0)
		gc_exec_emit(&r->ctx, GC_EV_WARN, s->target, NULL, err.msg, 0);
}

void gc_exec_renew_leases(struct run *r, const char *cluster)
{
	struct lease_pass p;

	if (r->lease == NULL || gc_now_ns() - r->lease_ns < (uint64_t)LEASE_S / 2 * 1000000000u)
		return;
	free(r->lease);
	r->lease = lease_string(r, cluster);
	r->lease_ns = gc_now_ns();
	pass_init(&p, r, leased);
	gc_exec_for_slots(r, p.slots, p.n, renew_one, &p);
	pass_free(&p);
}

/* Clear s's lease when it is still ours (its lock is ours); say why not.
 * In one exchange where the driver can compare and clear (ESXi), else a
 * read, then a write when the lease read is ours. */
static int clear_call(struct tslot *s, struct run *r, void *arg, struct gc_error *err)
{
	bool *cleared = arg;
	char *held = NULL, lock[64];
	int rc;

	*cleared = false;
	if (s->drv->lease_clear_ours != NULL) {
		rc = s->drv->lease_clear_ours(s->conn, &r->ctx, r->lease_lock, cleared, err);
		if (rc != 0)
			*cleared = false;
		return rc;
	}
	rc = s->drv->lease_get(s->conn, &r->ctx, &held, err);
	if (rc == 0 && strcmp(field(held, "lock", lock, sizeof(lock)), r->lease_lock) == 0) {
		rc = s->drv->lease_set(s->conn, &r->ctx, "", err);
		*cleared = rc == 0;
	}
	free(held);
	return rc;
}

static void clear_if_ours(struct run *r, struct tslot *s, const char *left_msg)
{
	struct gc_error err = GC_ERROR_INIT;
	bool cleared = false;

	/* a transport fault is retried on a new connection: a second
	 * compare-and-clear finds our lease gone or still ours, never
	 * another's to clear */
	if (gc_exec_lease_call_repeatable(r, s, clear_call, &cleared, &err) != 0)
		cleared = false;
	if (cleared) {
		count(&r->rep->lease_cleared);
		if (left_msg != NULL)
			gc_exec_emit(&r->ctx, GC_EV_WARN, s->target, NULL, left_msg, 0);
	}
	if (err.code != 0)
		gc_exec_emit(&r->ctx, GC_EV_WARN, s->target, NULL, err.msg, 0);
	else
		lease_cleared(r, s);
}

/* ours on s, or maybe: a step's take that may have written it, or a
 * pending one never taken where a run of ours left one before */
static bool to_release(const struct run *r, const struct tslot *s)
{
	(void)r;
	return s->leased || s->lease_maybe || (s->lease_pending && s->lease_left_before);
}

static void release_one(struct run *r, struct tslot *s, size_t i, void *arg)
{
	struct gc_error err = GC_ERROR_INIT;

	(void)i;
	(void)arg;
	s->leased = s->lease_maybe = s->lease_pending = false;
	if (gc_exec_connect_slot(r, s, true, &err) != 0) {
		gc_exec_emit(&r->ctx, GC_EV_WARN, s->target, NULL, err.msg, 0);
		return;
	}
	clear_if_ours(r, s, NULL);
}

/* At the end of the run: clear the leases that are still ours, all at once;
 * a pending one whose step never went out was never written. */
void gc_exec_release_leases(struct run *r)
{
	struct lease_pass p;

	for (size_t i = 0; i < r->nslots; i++) {
		struct tslot *s = &r->slots[i];

		if (s->lease_pending && !to_release(r, s)) {
			s->lease_pending = false;
			lease_cleared(r, s);
		}
	}
	pass_init(&p, r, to_release);
	r->recovering = true; /* retried after a first signal too: gc_exec_no_retry */
	gc_exec_for_slots(r, p.slots, p.n, release_one, &p);
	r->recovering = false;
	pass_free(&p);
	free(r->lease);
	r->lease = NULL;
}

static bool left(const struct run *r, const struct tslot *s)
{
	return s->lease_left && lease_capable(r, s);
}

static void clear_left_one(struct run *r, struct tslot *s, size_t i, void *arg)
{
	(void)i;
	(void)arg;
	clear_if_ours(r, s, "cleared the cluster lease an earlier apply of ours left");
}

/* A converged cluster takes no lease, so it clears the one a run of ours
 * left when it died after its last change (the journal says where): else
 * every other operator would be refused until it expires. */
void gc_exec_clear_left_leases(struct run *r)
{
	struct lease_pass p;

	our_lock(r->lease_lock, r->ctx.opts->state_dir);
	pass_init(&p, r, left);
	gc_exec_for_slots(r, p.slots, p.n, clear_left_one, &p);
	pass_free(&p);
}

/* `unlock --force`: clear every lease, whoever holds it, saying whose. */
void gc_exec_break_leases(struct run *r)
{
	size_t i;

	for (i = 0; i < r->nslots; i++) {
		struct tslot *s = &r->slots[i];
		struct gc_error err = GC_ERROR_INIT;
		char *held = NULL, *msg;

		if (!lease_capable(r, s))
			continue;
		if (s->drv->lease_get(s->conn, &r->ctx, &held, &err) == 0 && held[0] == '\0') {
			free(held);
			continue;
		}
		if (err.code == 0 && s->drv->lease_set(s->conn, &r->ctx, "", &err) == 0) {
			msg = gc_xasprintf("cleared the cluster lease: %s", held);
			gc_exec_emit(&r->ctx, GC_EV_WARN, s->target, NULL, msg, 0);
			free(msg);
			lease_cleared(r, s);
			s->rep->done++;
			r->rep->done++;
		} else {
			s->failed = true;
			gc_exec_slot_error(s, err.msg);
			gc_exec_emit(&r->ctx, GC_EV_FAILED, s->target, NULL, err.msg, 0);
		}
		free(held);
	}
}
