/*
 * drvctx.c - what the executor offers the drivers (include/gc/exec.h's
 * gc_drv_* calls): the run's settings and cluster, the observed store
 * under its lock, events and notes, SSH options from the spec, and the
 * wait for a target's reboot.  exec.c runs the drivers.
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
#include "gc/spec.h"
#include "gc/ssh.h"

const struct gc_drv_settings *gc_drv_settings(const struct gc_drv_ctx *ctx)
{
	return &ctx->opts->drv;
}

const struct gc_cluster *gc_drv_cluster(const struct gc_drv_ctx *ctx)
{
	return ctx->graph->cluster;
}

void gc_drv_record(struct gc_drv_ctx *ctx, void (*fn)(struct gc_observed *obs, void *arg),
		   void *arg)
{
	pthread_mutex_lock(&ctx->obs_mu);
	fn(ctx->obs, arg);
	pthread_mutex_unlock(&ctx->obs_mu);
}

void gc_drv_host_state(struct gc_drv_ctx *ctx, const char *host,
		       const struct gc_drv_host_state *st)
{
	pthread_mutex_lock(&ctx->obs_mu);
	gc_observed_set_host(ctx->obs, host, st->maintenance, true);
	gc_observed_set_host_pending(ctx->obs, host, st->reboot_pending, st->reboot_pending_why);
	pthread_mutex_unlock(&ctx->obs_mu);
}

bool gc_drv_resource_converged(struct gc_drv_ctx *ctx, const struct gc_resource *r)
{
	bool same = true;
	size_t i;

	pthread_mutex_lock(&ctx->obs_mu);
	if (gc_observed_resource(ctx->obs, r->id) == NULL)
		same = false;
	for (i = 0; same && i < r->nprops; i++) {
		const char *v = gc_observed_get(ctx->obs, r->id, r->props[i].key);

		same = gc_plan_value_same(r, v, gc_plan_desired(ctx->obs, r, i));
	}
	pthread_mutex_unlock(&ctx->obs_mu);
	return same;
}

void gc_exec_emit(struct gc_drv_ctx *ctx, enum gc_exec_event_kind kind, const struct gc_target *t,
		 const struct gc_action *a, const char *msg, size_t wave)
{
	struct gc_exec_event ev = {kind, t, a, msg, wave, NULL};

	if (ctx->opts->event == NULL)
		return;
	pthread_mutex_lock(&ctx->ev_mu);
	ctx->opts->event(ctx->opts->event_arg, &ev);
	pthread_mutex_unlock(&ctx->ev_mu);
}

void gc_drv_note(struct gc_drv_ctx *ctx, const struct gc_target *t, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gc_exec_emit(ctx, GC_EV_NOTE, t, NULL, msg, 0);
}

enum gc_power gc_drv_vm_power(struct gc_drv_ctx *ctx, const char *vm, bool *exists)
{
	const struct gc_observed_vm *ov;
	enum gc_power p = GC_POWER_UNKNOWN;

	pthread_mutex_lock(&ctx->obs_mu);
	ov = gc_observed_vm(ctx->obs, vm);
	*exists = ov != NULL || !ctx->vcenter_observed;
	if (ov != NULL)
		p = ov->power;
	pthread_mutex_unlock(&ctx->obs_mu);
	return p;
}

void gc_drv_count_change(struct gc_drv_ctx *ctx)
{
	__atomic_add_fetch(&ctx->changes, 1, __ATOMIC_RELAXED);
}

int gc_drv_host_maintenance(struct gc_drv_ctx *ctx, const char *host)
{
	const struct gc_observed_host *oh;
	int m;

	pthread_mutex_lock(&ctx->obs_mu);
	oh = gc_observed_host(ctx->obs, host);
	m = oh == NULL ? -1 : oh->maintenance ? 1 : 0;
	pthread_mutex_unlock(&ctx->obs_mu);
	return m;
}

void gc_drv_maintenance_left(struct gc_drv_ctx *ctx, const struct gc_target *t, bool left)
{
	struct run *r = (struct run *)ctx; /* the context is the first member of the run */

	if (t == NULL || t->index >= r->nslots)
		return;
	pthread_mutex_lock(&r->mu);
	r->slots[t->index].maint_left = left;
	pthread_mutex_unlock(&r->mu);
}

const char *gc_drv_lease_offer(struct gc_drv_ctx *ctx, const char **lock)
{
	struct run *r = (struct run *)ctx; /* the context is the first member of the run */

	if (ctx->lease_offer == NULL)
		return NULL;
	*lock = r->lease_lock;
	return ctx->lease_offer;
}

const char *gc_drv_lease_release_lock(struct gc_drv_ctx *ctx, const struct gc_target *t)
{
	struct run *r = (struct run *)ctx;
	bool yes;

	if (t == NULL || t->index >= r->nslots)
		return NULL;
	pthread_mutex_lock(&r->mu);
	/* the step may have started (a wait for a reboot heads it) while
	 * other targets still had work: they may be done by now */
	if (!r->slots[t->index].release_inline && !r->slots[t->index].released_inline)
		r->slots[t->index].release_inline = gc_exec_lease_may_release(r, &r->slots[t->index]);
	yes = r->slots[t->index].release_inline;
	pthread_mutex_unlock(&r->mu);
	return yes ? r->lease_lock : NULL;
}

void gc_drv_lease_released(struct gc_drv_ctx *ctx, const struct gc_target *t, bool cleared)
{
	struct run *r = (struct run *)ctx;

	if (t == NULL || t->index >= r->nslots)
		return;
	pthread_mutex_lock(&r->mu);
	r->slots[t->index].released_inline = true;
	pthread_mutex_unlock(&r->mu);
	if (cleared) { /* as lease.c counts its own clears: atomically */
		__atomic_fetch_add(&r->rep->lease_cleared, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&r->rep->lease_cleared_last_step, 1, __ATOMIC_RELAXED);
	}
}

const char *gc_drv_lease_step_take(struct gc_drv_ctx *ctx, const struct gc_target *t, const char **lock)
{
	struct run *r = (struct run *)ctx;
	const char *lease;

	if (t == NULL || t->index >= r->nslots)
		return NULL;
	lease = gc_exec_lease_step_take(r, &r->slots[t->index]);
	if (lease != NULL)
		*lock = r->lease_lock;
	return lease;
}

int gc_drv_lease_step_result(struct gc_drv_ctx *ctx, const struct gc_target *t, int outcome,
			     const char *held, struct gc_error *err)
{
	struct run *r = (struct run *)ctx;

	if (t == NULL || t->index >= r->nslots)
		return 0;
	return gc_exec_lease_step_result(r, &r->slots[t->index], outcome, held, err);
}

void gc_drv_count_exec(struct gc_drv_ctx *ctx, const struct gc_target *t, bool poll)
{
	/* the context is the first member of the run (exec_int.h) */
	struct run *r = (struct run *)ctx;
	struct gc_exec_target_report *rep;

	if (t == NULL || t->index >= r->nslots || (rep = r->slots[t->index].rep) == NULL)
		return;
	__atomic_add_fetch(poll ? &rep->poll_execs : &rep->execs, 1, __ATOMIC_RELAXED);
}

bool gc_drv_interrupted(const struct gc_drv_ctx *ctx)
{
	return ctx->opts->interrupted != NULL && *ctx->opts->interrupted;
}

/* What every SSH driver (ESXi, Onyx, later guests) derives the same way.
 * (Here, not in a file of its own: the drivers call back into gc_exec, and
 * exec.c is the member of the static library that is always linked.) */
static char *expand_home(const char *path)
{
	const char *home = getenv("HOME");

	if (path == NULL)
		return NULL;
	if (path[0] == '~' && path[1] == '/' && home != NULL)
		return gc_xasprintf("%s%s", home, path + 1);
	return gc_xstrdup(path);
}

void gc_drv_ssh_opts(struct gc_ssh_opts *o, char **known, const struct gc_drv_ctx *ctx,
		     const char *address, const struct gc_ssh *ssh,
		     const struct gc_credential *cred, const char *default_user)
{
	gc_ssh_opts_from_spec(o, known, gc_drv_settings(ctx), address, ssh, cred, default_user);
}

void gc_ssh_opts_from_spec(struct gc_ssh_opts *o, char **known, const struct gc_drv_settings *set,
			   const char *address, const struct gc_ssh *ssh,
			   const struct gc_credential *cred, const char *default_user)
{
	static const struct gc_drv_settings none;

	if (set == NULL)
		set = &none;
	memset(o, 0, sizeof(*o));
	o->host = address;
	o->port = ssh->port;
	o->username = cred ? cred->username : default_user;
	if (cred != NULL) {
		o->agent = cred->agent;
		o->key_file = cred->key_file;
		o->key_passphrase_env = cred->key_passphrase_env;
		o->password_env = cred->password_env;
		o->password_file = cred->password_file;
	}
	*known = expand_home(set->known_hosts ? set->known_hosts : ssh->known_hosts);
	o->known_hosts = *known;
	o->trust_new_host_keys = set->trust_new_host_keys || ssh->trust_new_host_keys;
	o->connect_timeout_ms = ssh->connect_timeout_s * 1000u;
	o->command_timeout_ms = set->command_timeout_ms ? set->command_timeout_ms
						       : ssh->command_timeout_s * 1000u;
	o->keepalive_s = ssh->keepalive_s;
}

unsigned gc_ssh_read_ms(const struct gc_ssh *ssh)
{
	return (ssh->read_timeout_s ? ssh->read_timeout_s : GC_SSH_READ_TIMEOUT_S) * 1000u;
}

unsigned gc_ssh_read_cap_ms(const struct gc_ssh *ssh, unsigned command_ms)
{
	unsigned read_ms = gc_ssh_read_ms(ssh);

	return command_ms != 0 && command_ms < read_ms ? command_ms : read_ms;
}

int gc_drv_ssh_connect(struct gc_ssh_conn **out, const struct gc_drv_ctx *ctx,
		       const char *address, const struct gc_ssh *ssh,
		       const struct gc_credential *cred, const char *default_user,
		       unsigned connect_ms, unsigned read_ms, struct gc_error *err)
{
	struct gc_ssh_opts o;
	char *known;
	int rc;

	gc_drv_ssh_opts(&o, &known, ctx, address, ssh, cred, default_user);
	if (connect_ms != 0)
		o.connect_timeout_ms = connect_ms;
	rc = gc_ssh_connect(out, &o, err);
	free(known);
	if (rc == 0 && read_ms != 0)
		gc_ssh_set_command_timeout(*out, read_ms);
	return rc;
}

static void nap_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

bool gc_drv_auth_may_pass(uint64_t *since_ns)
{
	uint64_t now = gc_now_ns();

	if (*since_ns == 0)
		*since_ns = now;
	return now - *since_ns < (uint64_t)GC_DRV_NOLOGIN_GRACE_S * 1000000000u;
}

int gc_drv_wait_reboot(struct gc_drv_ctx *ctx, struct gc_drv_reboot *r, struct gc_error *err)
{
	const struct gc_drv_settings *set = gc_drv_settings(ctx);
	unsigned timeout = set->reboot_timeout_ms ? set->reboot_timeout_ms : 20u * 60 * 1000;
	/* a Linux machine takes tens of seconds to boot: poll at most once a second */
	unsigned poll = set->reboot_poll_ms > 1000 ? set->reboot_poll_ms : set->reboot_poll_ms ? 1000 : 2000;
	uint64_t t0 = gc_now_ns(), deadline = t0 + (uint64_t)timeout * 1000000u;
	char last[GC_ERROR_MSG_MAX] = "no answer";
	uint64_t auth_since = 0;

	r->disconnect(r->arg);
	while (gc_now_ns() < deadline && !gc_drv_interrupted(ctx)) {
		struct gc_error e = GC_ERROR_INIT;
		char now[64];

		nap_ms(poll);
		gc_drv_note(ctx, r->t, "waiting for the %s to come back (%.0f s)", r->noun,
			    (double)(gc_now_ns() - t0) / 1e9);
		if (r->connect(r->arg, poll * 2 > 5000 ? poll * 2 : 5000, &e) != 0) {
			snprintf(last, sizeof(last), "%s", e.msg);
			if (e.code == GC_EHOSTKEY ||
			    (e.code == GC_EAUTH && !gc_drv_auth_may_pass(&auth_since))) {
				*err = e; /* a different machine answered, or credentials changed */
				return e.code;
			}
			if (e.code != GC_EAUTH)
				auth_since = 0;
			continue;
		}
		auth_since = 0;
		now[0] = '\0';
		if (r->boot_id(r->arg, now, sizeof(now), &e) != 0 || now[0] == '\0') {
			/* the old boot's sshd going down, or a session cut: one
			 * more poll, not a retry (the whole wait is the retry),
			 * but said, so a cut the wait absorbed is not silent */
			snprintf(last, sizeof(last), "%s", e.code ? e.msg : "no boot id");
			gc_drv_note(ctx, r->t, "the %s answered, but its boot could not be read "
				    "(%s): asking again", r->noun, last);
			r->disconnect(r->arg);
			continue;
		}
		if (strcmp(now, r->before) != 0)
			return 0; /* a new boot: the evidence */
		/* up, and never went down: give it a while, then ask once more */
		if (gc_now_ns() - r->sent_ns < (uint64_t)r->grace_s * 1000000000u) {
			r->disconnect(r->arg);
			continue;
		}
		if (r->resends++ >= 1) {
			r->disconnect(r->arg);
			return gc_error_set(err, GC_EREMOTE, "%s '%s' did not reboot after 2 reboot "
					    "commands (boot id unchanged)", r->noun, r->t->name);
		}
		gc_drv_note(ctx, r->t, "the %s did not go down: sending the reboot again", r->noun);
		r->sent_ns = gc_now_ns();
		(void)r->resend(r->arg, &e);
		r->disconnect(r->arg);
	}
	if (gc_drv_interrupted(ctx)) /* not the timeout: say what happened */
		return gc_error_set(err, GC_EINTR, "interrupted %.0f s into the wait for the %s "
				    "to come back after its reboot (%s)", (double)(gc_now_ns() - t0) / 1e9,
				    r->noun, last);
	/* final, not a transport fault to retry: the whole wait was the retry */
	return gc_error_set(err, GC_EREMOTE, "%s '%s' did not come back within %u s after its "
			    "reboot (%s)", r->noun, r->t->name, timeout / 1000, last);
}

int gc_drv_boot_from_uptime(struct gc_ssh_result *res, const char *noun, const char *name,
			    double *boot_s, struct gc_error *err)
{
	struct timespec now;
	double up = -1;
	char *end;

	clock_gettime(CLOCK_REALTIME, &now);
	if (res->exit_status == 0 && res->out != NULL) {
		up = strtod(res->out, &end);
		if (end == res->out)
			up = -1;
	}
	gc_ssh_result_free(res);
	if (up < 0)
		return gc_error_set(err, GC_EREMOTE, "%s '%s': cannot read /proc/uptime", noun, name);
	*boot_s = (double)now.tv_sec + (double)now.tv_nsec / 1e9 - up;
	return 0;
}

/* ---------------------------------------------------------------- small helpers */

