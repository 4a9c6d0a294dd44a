/*
 * driver.c - the Linux guest driver: struct gc_driver over gc_ssh.
 *
 * One SSH connection per guest per boot.  Everything runs as root: directly
 * for root, else through `sudo -n` (a sudo that wants a password is a clear
 * error, never a hang).  Observation is one exec (observe.c); each change is
 * one exec of a short sh script built from validated values (apply.c) whose
 * failure is reported with the guest's own words (apt's "E: ..." line).
 *
 * A guest whose VM the vCenter shows absent or powered off when the run
 * starts is not dialled then: its connection is "deferred", nothing is
 * recorded (the plan installs everything, as for a new VM), and at its
 * first step the driver waits for SSH, observes once, and from then on
 * skips every step whose resource already holds the spec's values.
 *
 * REBOOT reads the boot id and asks systemd to reboot; WAIT_HOST reconnects
 * until the guest answers with a *different* boot id (a dropped connection
 * is no proof); VERIFY observes again and wants every resource converged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gc/sections.h"
#include "guest_int.h"

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static const struct gc_guest *guest_of(const struct gc_target *t)
{
	return t->vm != NULL ? t->vm->guest : NULL;
}

int guest_ssh_open(struct guest_conn *c, struct gc_drv_ctx *ctx, unsigned connect_ms,
		   struct gc_error *err)
{
	int rc = gc_drv_ssh_connect(&c->ssh, ctx, c->g->address, &c->g->ssh, c->g->credentials,
				    "root", connect_ms, gc_ssh_read_ms(&c->g->ssh), err);

	if (rc != 0)
		gc_error_prefix(err, "guest '%s': ", c->t->name);
	return rc;
}

static int guest_connect(void **conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
			 struct gc_error *err)
{
	const struct gc_drv_settings *set = gc_drv_settings(ctx);
	struct guest_conn *c;
	bool exists = true;
	enum gc_power p;

	if (guest_of(t) == NULL)
		return gc_error_set(err, GC_EINVAL, "guest '%s' has no spec", t->name);
	c = gc_xcalloc(1, sizeof(*c));
	c->t = t;
	c->g = guest_of(t);
	c->command_ms = set->command_timeout_ms ? set->command_timeout_ms
						: c->g->ssh.command_timeout_s * 1000u;
	p = gc_drv_vm_power(ctx, t->name, &exists);
	if (!exists || p == GC_POWER_OFF || p == GC_POWER_SUSPENDED) {
		c->deferred = true; /* its VM is not running yet: dial it at its first step */
		*conn = c;
		return 0;
	}
	if (guest_ssh_open(c, ctx, 0, err) != 0) {
		free(c);
		return err->code;
	}
	*conn = c;
	return 0;
}

static void guest_disconnect(void *conn)
{
	struct guest_conn *c = conn;

	if (c == NULL)
		return;
	gc_ssh_free(c->ssh);
	if (c->have_facts)
		gc_guest_facts_free(&c->facts);
	free(c->token_want);
	free(c);
}

/* ---------------------------------------------------------------- running scripts */

int guest_sudo_error(struct guest_conn *c, struct gc_error *err)
{
	const struct gc_credential *cr = c->g->credentials;

	return gc_error_set(err, GC_EREMOTE,
			    "guest '%s': sudo wants a password for '%s': give it NOPASSWD for root "
			    "commands (a sudoers drop-in) or connect as root",
			    c->t->name, cr && cr->username ? cr->username : "?");
}

int guest_run(struct guest_conn *c, struct gc_drv_ctx *ctx, const char *what, const char *script,
	      int in, bool change, struct gc_error *err)
{
	const struct gc_credential *cr = c->g->credentials;
	int rc;

	if (change) {
		gc_drv_count_change(ctx);
		gc_ssh_set_command_timeout(c->ssh, c->command_ms);
	}
	rc = gc_ssh_run_root(c->ssh, what, script, in, cr ? cr->username : NULL, NULL, err);
	if (change && gc_ssh_alive(c->ssh))
		gc_ssh_set_command_timeout(c->ssh, gc_ssh_read_ms(&c->g->ssh));
	if (rc != 0)
		gc_error_prefix(err, "guest '%s': ", c->t->name);
	return rc;
}

/* ---------------------------------------------------------------- observe */

struct record_arg {
	struct guest_conn *c;
};

static void record_cb(struct gc_observed *obs, void *arg)
{
	struct guest_conn *c = ((struct record_arg *)arg)->c;

	gc_guest_record(obs, c->g, c->res, c->nres, &c->facts, c->token_want);
}

/* Problems that make any change wrong: the spec describes another machine. */
static void check_facts(struct guest_conn *c, struct gc_buf *problems)
{
	const struct gc_guest_facts *f = &c->facts;
	const char *os = c->g->os;
	bool rhel_family = strcmp(os, "rhel") == 0 || strcmp(os, "centos") == 0 ||
			   strcmp(os, "rocky") == 0;
	bool ok;

	if (f->os_id == NULL)
		return;
	if (rhel_family)
		ok = strcmp(f->os_id, "rhel") == 0 || strcmp(f->os_id, "centos") == 0 ||
		     strcmp(f->os_id, "rocky") == 0 || strcmp(f->os_id, "almalinux") == 0;
	else
		ok = strcmp(f->os_id, os) == 0;
	if (!ok)
		gc_buf_printf(problems, "guest '%s' runs %s %s, but the spec says os: %s\n",
			      c->t->name, f->os_id, f->os_version ? f->os_version : "", os);
	if (c->g->rdma_interface != NULL && !f->if_present)
		gc_buf_printf(problems, "guest '%s' has no network interface '%s'\n", c->t->name,
			      c->g->rdma_interface->name);
}

int guest_observe_now(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_buf *problems,
		      struct gc_error *err)
{
	struct gc_ssh_result res;
	struct gc_guest_facts f;
	struct gc_drv_host_state hs = {0};
	struct record_arg ra = {c};
	char inst[64];
	char token[17];
	char *script, *cmd;
	int rc;

	gc_random_token(token);
	script = gc_guest_observe_script(c->g, token);
	cmd = gc_guest_as_root(script);
	free(script);
	rc = gc_ssh_exec(c->ssh, cmd, &res, err);
	free(cmd);
	if (rc != 0) {
		gc_error_prefix(err, "guest '%s': ", c->t->name);
		return rc;
	}
	if (gc_ssh_sudo_refused(&res)) {
		gc_ssh_result_free(&res);
		return guest_sudo_error(c, err);
	}
	rc = gc_guest_parse(&f, c->g, token, res.out, res.out_len, err);
	gc_ssh_result_free(&res);
	if (rc != 0) {
		gc_error_prefix(err, "guest '%s': ", c->t->name);
		return rc;
	}
	if (c->have_facts)
		gc_guest_facts_free(&c->facts);
	c->facts = f;
	c->have_facts = true;
	if (c->g->license != NULL && c->g->license->token_file != NULL && c->token_want == NULL)
		c->token_want = gc_guest_cksum_file(c->g->license->token_file, err);
	if (c->g->license != NULL && c->g->license->token_file != NULL && c->token_want == NULL)
		return gc_error_prefix(err, "guest '%s': licence token: ", c->t->name), err->code;
	if (problems != NULL)
		check_facts(c, problems);
	gc_drv_record(ctx, record_cb, &ra);
	/* a driver installed but not the one running: the guest owes a reboot */
	gc_guest_installed_driver(inst, sizeof(inst), c->g, &c->facts);
	if (c->g->nvidia_driver != NULL && inst[0] != '\0' &&
	    (c->facts.loaded_version == NULL || strcmp(c->facts.loaded_version, inst) != 0)) {
		hs.reboot_pending = true;
		hs.reboot_pending_why = c->facts.loaded_version == NULL
						? "the installed NVIDIA driver is not loaded"
						: "the NVIDIA driver running is not the one installed";
	}
	c->reboot_pending = hs.reboot_pending;
	gc_drv_host_state(ctx, c->t->name, &hs);
	return 0;
}

static int guest_observe(void *conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
			 const struct gc_resource *const *res, size_t nres, struct gc_buf *problems,
			 struct gc_error *err)
{
	struct guest_conn *c = conn;

	(void)t;
	c->res = res;
	c->nres = nres;
	if (c->deferred)
		return 0; /* the VM is not running: nothing of the guest exists yet */
	return guest_observe_now(c, ctx, problems, err);
}

/* ---------------------------------------------------------------- first contact */

/* A deferred guest: its VM was just created or powered on.  Wait for SSH
 * (the boot), then observe, so steps already done are not sent again. */
static int first_contact(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	const struct gc_drv_settings *set = gc_drv_settings(ctx);
	unsigned timeout = set->reboot_timeout_ms ? set->reboot_timeout_ms : 20u * 60 * 1000;
	unsigned poll = set->reboot_poll_ms > 1000 ? set->reboot_poll_ms : set->reboot_poll_ms ? 1000 : 2000;
	uint64_t t0 = gc_now_ns(), deadline = t0 + (uint64_t)timeout * 1000000u;
	uint64_t auth_since = 0;
	struct gc_buf problems = GC_BUF_INIT;
	int rc;

	for (;;) {
		struct gc_error e = GC_ERROR_INIT;

		if (guest_ssh_open(c, ctx, poll * 2 > 5000 ? poll * 2 : 5000, &e) == 0)
			break;
		/* early in a boot, pam_nologin refuses the login (gc_drv_auth_may_pass) */
		if (e.code != GC_EAUTH)
			auth_since = 0;
		if (e.code == GC_EHOSTKEY ||
		    (e.code == GC_EAUTH && !gc_drv_auth_may_pass(&auth_since)) ||
		    gc_now_ns() >= deadline || gc_drv_interrupted(ctx)) {
			*err = e;
			return e.code;
		}
		gc_drv_note(ctx, c->t, "waiting for the guest to boot (%.0f s)",
			    (double)(gc_now_ns() - t0) / 1e9);
		sleep_ms(poll);
	}
	c->deferred = false;
	rc = guest_observe_now(c, ctx, &problems, err);
	if (rc == 0 && problems.len > 0) {
		problems.ptr[--problems.len] = '\0';
		rc = gc_error_set(err, GC_EREMOTE, "%s", gc_buf_str(&problems));
	}
	gc_buf_free(&problems);
	return rc;
}

/* ---------------------------------------------------------------- apply */

static int guest_apply(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *a,
		       struct gc_error *err)
{
	struct guest_conn *c = *conn;
	int rc;

	if (c->ssh == NULL && a->kind != GC_ACT_WAIT_HOST) {
		rc = first_contact(c, ctx, err);
		if (rc != 0)
			return rc;
	}
	switch (a->kind) {
	case GC_ACT_APPLY:
		if (a->op == GC_OP_DELETE)
			return gc_error_set(err, GC_ENOTSUP, "guest '%s': removing '%s' is not supported",
					    c->t->name, a->resource_id);
		if (a->resource != NULL && gc_drv_resource_converged(ctx, a->resource))
			return 0; /* observed at first contact: already as the spec says */
		if (a->resource != NULL && (a->resource->flags & GC_RES_NEEDS_REBOOT))
			c->reboot_owed = true;
		return guest_apply_resource(c, ctx, a->resource, err);
	case GC_ACT_REBOOT:
		if (!c->reboot_owed && !c->reboot_pending) {
			c->skip_wait = true; /* nothing needing it changed after all */
			return 0;
		}
		c->skip_wait = false;
		return guest_reboot(c, ctx, err);
	case GC_ACT_WAIT_HOST:
		if (c->skip_wait)
			return 0;
		return guest_wait(c, ctx, err);
	case GC_ACT_VERIFY:
		return guest_verify(c, ctx, err);
	case GC_ACT_ENTER_MAINTENANCE:
	case GC_ACT_EXIT_MAINTENANCE:
	case GC_ACT_POWER_OFF:
	case GC_ACT_POWER_ON:
	case GC_ACT_MIGRATE:
		break;
	}
	return gc_error_set(err, GC_ENOTSUP, "guest '%s': '%s' is not a guest action", c->t->name,
			    gc_action_kind_name(a->kind));
}

/* ---------------------------------------------------------------- batches */

static bool guest_batchable(const struct gc_action *a)
{
	const struct gc_guest *g = a->target ? guest_of(a->target) : NULL;

	return g != NULL && a->kind == GC_ACT_APPLY && a->op != GC_OP_DELETE &&
	       a->resource != NULL && guest_batchable_resource(g, a->resource);
}

/*
 * One script for the steps st[0..n): the packages of them all in one
 * install (one apt or dnf transaction, not one per step), then each step's
 * body in a subshell of its own under `set -e` (not `||`-tested, which
 * would switch `set -e` off inside it), each introduced by a marker line
 * (gc/sections.h's batch framing: the install is command 0 when there is
 * one), stopping at the first that fails with its exit status.
 */
static char *batch_script(struct guest_conn *c, const char *token, struct guest_step *st, size_t n,
			  size_t *ncmds)
{
	struct gc_buf b = GC_BUF_INIT;
	const char *pkgs[64];
	size_t np = 0, k = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < st[i].npkgs && np < 64; j++)
			pkgs[np++] = st[i].pkgs[j];
	if (np > 0) {
		gc_buf_printf(&b, "echo @@gc:%s:c%zu\n", token, k++);
		guest_install_cmd(&b, c->g, pkgs, np);
		gc_buf_puts(&b, "rc=$?; [ $rc -eq 0 ] || exit $rc\n");
	}
	for (size_t i = 0; i < n; i++) {
		gc_buf_printf(&b, "echo @@gc:%s:c%zu\n(\nset -e\n%s)\nrc=$?; [ $rc -eq 0 ] || exit $rc\n",
			      token, k++, gc_buf_str(&st[i].body));
	}
	gc_buf_printf(&b, "echo @@gc:%s:end\n", token);
	*ncmds = k;
	return gc_buf_take(&b);
}

/* Each step on its own, in order (skip[i]: nothing to do for acts[i]):
 * after the batch's one install failed, so that the step whose package it
 * was fails with apt's own words and the steps before it are done.
 * *ndone as apply_batch's. */
static int steps_one_by_one(struct guest_conn *c, struct gc_drv_ctx *ctx,
			    const struct gc_action *const *acts, const bool *skip, size_t n,
			    size_t *ndone, struct gc_error *err)
{
	for (*ndone = 0; *ndone < n; (*ndone)++) {
		int rc = skip[*ndone] ? 0 : guest_apply_resource(c, ctx, acts[*ndone]->resource, err);

		if (rc != 0)
			return rc;
	}
	return 0;
}

/* *ndone past the actions done: those with nothing to do (at[i] == n) and
 * those whose step came before step `upto`. */
static void count_done(const size_t *at, size_t n, size_t upto, size_t *ndone)
{
	while (*ndone < n && (at[*ndone] == n || at[*ndone] < upto))
		(*ndone)++;
}

static int guest_apply_batch(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *const *acts,
			     size_t n, size_t *ndone, struct gc_error *err)
{
	struct guest_conn *c = *conn;
	struct guest_step *st = gc_xcalloc(n, sizeof(*st));
	size_t *at = gc_xcalloc(n, sizeof(*at)); /* the step of each action, or n: nothing to do */
	bool *skip = gc_xcalloc(n, sizeof(*skip));
	struct gc_error unbuilt = GC_ERROR_INIT;
	struct gc_ssh_result res;
	struct gc_batch b;
	size_t nst = 0, ncmds = 0, base, nb = n;
	char token[17];
	char *script = NULL;
	int rc = 0, prc;

	*ndone = 0;
	if (c->ssh == NULL && (rc = first_contact(c, ctx, err)) != 0)
		goto out;
	/* a step that cannot be built ends the batch before it: the ones
	 * before it go out, then it fails where it stands */
	for (size_t i = 0; i < n; i++) {
		const struct gc_resource *r = acts[i]->resource;

		at[i] = n;
		if (gc_drv_resource_converged(ctx, r)) {
			skip[i] = true; /* observed at first contact: already as the spec says */
			continue;
		}
		if (guest_step_of(c, r, &st[nst], &unbuilt) != 0) {
			nb = i;
			break;
		}
		if (r->flags & GC_RES_NEEDS_REBOOT)
			c->reboot_owed = true;
		at[i] = nst++;
	}
	if (nst == 0) {
		*ndone = nb;
		goto unbuilt;
	}
	gc_random_token(token);
	script = batch_script(c, token, st, nst, &ncmds);
	base = ncmds - nst; /* 1 when the install is command 0 */
	for (size_t i = 0; i < nst; i++)
		gc_drv_count_change(ctx);
	if (nst > 1)
		gc_drv_note(ctx, c->t, "%s, and %zu more steps in the same exec", st[0].note, nst - 1);
	else
		gc_drv_note(ctx, c->t, "%s", st[0].note);
	gc_ssh_set_command_timeout(c->ssh, c->command_ms);
	{
		char *cmd = gc_guest_as_root(script);

		rc = gc_ssh_exec_partial(c->ssh, cmd, &res, err);
		free(cmd);
	}
	if (gc_ssh_alive(c->ssh))
		gc_ssh_set_command_timeout(c->ssh, gc_ssh_read_ms(&c->g->ssh));
	prc = gc_batch_parse(&b, token, ncmds, res.out, res.out_len,
			     rc == 0 ? err : &(struct gc_error)GC_ERROR_INIT);
	if (rc == 0 && gc_ssh_sudo_refused(&res)) {
		rc = guest_sudo_error(c, err);
	} else if (rc != 0 || prc != 0) {
		/* cut short: the steps before the one running are done */
		if (rc == 0)
			rc = prc;
		gc_error_prefix(err, "guest '%s': ", c->t->name);
		count_done(at, nb, prc == 0 && b.started > base + 1 ? b.started - 1 - base : 0, ndone);
	} else if (b.complete && res.exit_status == 0) {
		*ndone = nb;
	} else if (b.started <= base) {
		/* the one install failed (or nothing ran): each step alone says
		 * whose package it was */
		gc_ssh_result_free(&res);
		rc = steps_one_by_one(c, ctx, acts, skip, nb, ndone, err);
		if (rc != 0)
			goto out;
		goto unbuilt;
	} else {
		size_t failed = b.started - 1 - base; /* the step that stopped the script */
		struct gc_buf msg = GC_BUF_INIT;

		gc_ssh_message(&msg, &res);
		rc = gc_error_set(err, GC_EREMOTE, "guest '%s': %s failed: %s", c->t->name,
				  st[failed].what, gc_buf_str(&msg));
		gc_buf_free(&msg);
		count_done(at, nb, failed, ndone);
	}
	gc_ssh_result_free(&res);
unbuilt:
	if (rc == 0 && nb < n) {
		*ndone = nb;
		*err = unbuilt;
		rc = unbuilt.code;
	}
out:
	free(script);
	for (size_t i = 0; i < nst; i++)
		gc_buf_free(&st[i].body);
	free(st);
	free(at);
	free(skip);
	return rc;
}

/* When the guest booted, on our clock: now minus its /proc/uptime (asked only
 * of a guest an earlier, killed apply sent a reboot or started the VM of;
 * src/exec/exec.c). */
static int guest_boot_time(void *conn, struct gc_drv_ctx *ctx, double *boot_s,
			   struct gc_error *err)
{
	struct guest_conn *c = conn;
	struct gc_ssh_result res;
	int rc;

	(void)ctx;
	if (c->ssh == NULL) /* deferred: its VM is off or absent, nothing to tell */
		return gc_error_set(err, GC_ENOTSUP, "guest '%s': not connected", c->t->name);
	if ((rc = gc_ssh_exec(c->ssh, "cat /proc/uptime", &res, err)) != 0)
		return rc;
	return gc_drv_boot_from_uptime(&res, "guest", c->t->name, boot_s, err);
}

const struct gc_driver gc_driver_guest = {
	.name = "guest",
	.kind = GC_TARGET_GUEST,
	.connect = guest_connect,
	.observe = guest_observe,
	.apply = guest_apply,
	.apply_batch = guest_apply_batch,
	.batchable = guest_batchable,
	.disconnect = guest_disconnect,
	.boot_time = guest_boot_time,
};
