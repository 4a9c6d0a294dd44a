/*
 * driver.c - the Onyx driver: struct gc_driver over one gc_ssh PTY shell.
 *
 * One SSH connection and one interactive CLI session per switch per run
 * (session.c: enable, paging off).  Observation is `show version` +
 * `show running-config` (+ `show roce` for the one-shot mode), parsed into
 * a gc_onyx_state and recorded in the graph's shape (record.c).  Every
 * action re-reads the running-config first and sends only its category's
 * diff (diff.c), so a retried or already-done action sends nothing; the
 * commands go in one `configure terminal` ... `configuration write`.
 * A release below the gates of REAL-FORMATS B.7 fails the switch before
 * anything changes; a release below the spec's `version` is a problem line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/onyx.h"
#include "gc/ssh.h"
#include "gc/sys/driver.h"

struct onyx_conn {
	struct gc_ssh_conn *ssh;
	struct gc_ssh_shell *shell;
	struct gc_onyx_session *s;
	const struct gc_target *target;
	struct gc_onyx_desired desired;
	struct gc_onyx_version version;
	struct gc_onyx_state st; /* last observation */
	const struct gc_resource *const *res; /* borrowed from the executor */
	size_t nres;
	int read_ms;    /* a prompt after a read: the lesser of the two timeouts */
	int command_ms; /* after a changing command: ssh.command_timeout_s */
};

static int open_cli(struct onyx_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	const struct gc_switch *sw = c->target->sw;
	struct gc_onyx_session_opts so;
	struct gc_ssh_opts o;
	struct gc_onyx_chan ch;
	char *known;
	int rc;

	gc_drv_ssh_opts(&o, &known, ctx, sw->address, &sw->ssh, sw->credentials, "admin");
	rc = gc_ssh_connect(&c->ssh, &o, err);
	free(known);
	if (rc == 0)
		rc = gc_ssh_shell_open(&c->shell, c->ssh, err);
	if (rc != 0) {
		gc_error_prefix(err, "switch '%s': ", sw->name);
		return rc;
	}
	memset(&so, 0, sizeof(so));
	so.switch_name = sw->name;
	so.enable_password_env = sw->enable_password_env;
	/* As on ESXi hosts: reads (the session's set-up, the observation, the
	 * re-read before each change) wait ssh.read_timeout_s, or
	 * command_timeout_s where that is less, as every read here used to. */
	c->command_ms = (int)(o.command_timeout_ms ? o.command_timeout_ms : 300000u);
	c->read_ms = (int)gc_ssh_read_cap_ms(&sw->ssh, (unsigned)c->command_ms);
	so.timeout_ms = c->read_ms;
	gc_onyx_chan_ssh(&ch, c->shell);
	return gc_onyx_session_open(&c->s, &ch, &so, err);
}

static void onyx_disconnect(void *conn)
{
	struct onyx_conn *c = conn;

	if (c == NULL)
		return;
	gc_onyx_session_close(c->s);
	gc_ssh_shell_close(c->shell);
	gc_ssh_free(c->ssh);
	gc_onyx_desired_free(&c->desired);
	gc_onyx_state_free(&c->st);
	free(c);
}

static int onyx_connect(void **conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
			struct gc_error *err)
{
	struct onyx_conn *c = gc_xcalloc(1, sizeof(*c));
	int rc;

	gc_onyx_state_init(&c->st);
	c->target = t;
	if (t->sw == NULL || t->sw->roce == NULL) {
		free(c);
		return gc_error_set(err, GC_EINVAL, "switch '%s' has no roce spec", t->name);
	}
	rc = gc_onyx_desired(&c->desired, t->sw, err);
	if (rc == 0)
		rc = open_cli(c, ctx, err);
	if (rc != 0) {
		onyx_disconnect(c);
		return rc;
	}
	*conn = c;
	return 0;
}

/* Re-read the switch into c->st (and c->version). */
static int read_state(struct onyx_conn *c, struct gc_error *err)
{
	struct gc_onyx_state st;
	int rc;

	gc_onyx_state_init(&st);
	rc = gc_onyx_session_observe(c->s, &c->version, &st, c->desired.oneshot, err);
	if (rc == 0)
		rc = gc_onyx_check_version(&c->desired, &c->version, c->target->name, err);
	if (rc != 0) {
		gc_onyx_state_free(&st);
		return rc;
	}
	gc_onyx_state_free(&c->st);
	c->st = st;
	return 0;
}

static void record_cb(struct gc_observed *obs, void *arg)
{
	struct onyx_conn *c = arg;

	gc_onyx_record(obs, c->target->sw, &c->desired, &c->st, c->res, c->nres);
}

static int onyx_observe(void *conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
			const struct gc_resource *const *res, size_t nres, struct gc_buf *problems,
			struct gc_error *err)
{
	struct onyx_conn *c = conn;
	const char *want = t->sw->version;
	int rc;

	c->res = res;
	c->nres = nres;
	gc_drv_note(ctx, t, "reading the running-config");
	rc = read_state(c, err);
	if (rc != 0)
		return rc;
	if (want != NULL && gc_onyx_version_cmp(c->version.release, want) < 0)
		gc_buf_printf(problems, "switch '%s' runs %s %s; the spec expects %s or later\n",
			      t->name, c->version.product, c->version.release, want);
	gc_drv_record(ctx, record_cb, c);
	return 0;
}

static int apply_category(struct onyx_conn *c, struct gc_drv_ctx *ctx, const struct gc_action *a,
			  struct gc_error *err)
{
	unsigned cat = gc_onyx_cat_of(a->res_kind);
	bool owned = a->op == GC_OP_DELETE || c->target->sw->roce->owned;
	struct gc_onyx_cmds cmds = {NULL, 0};
	size_t i;
	int rc;

	if (cat == 0)
		return gc_error_set(err, GC_ENOTSUP, "switch '%s': '%s' is not a switch resource",
				    c->target->name, a->resource_id ? a->resource_id : "?");
	if (a->op == GC_OP_DELETE && !c->target->sw->roce->owned)
		return gc_error_set(err, GC_EINVAL,
				    "switch '%s': refusing to remove '%s': roce.owned is false",
				    c->target->name, a->resource_id);
	rc = read_state(c, err); /* the truth now, not at plan time */
	if (rc == 0)
		rc = gc_onyx_diff_only(&cmds, &c->desired, &c->st, owned, cat, err);
	if (rc != 0 || cmds.n == 0)
		return rc;
	for (i = 0; i < cmds.n; i++)
		gc_drv_count_change(ctx);
	gc_drv_note(ctx, c->target, "%s%s", cmds.v[0], cmds.n > 1 ? " ..." : "");
	gc_onyx_session_set_timeout(c->s, c->command_ms);
	rc = gc_onyx_session_apply(c->s, &cmds, err);
	gc_onyx_session_set_timeout(c->s, c->read_ms);
	gc_onyx_cmds_free(&cmds);
	return rc;
}

static int onyx_apply(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *a,
		      struct gc_error *err)
{
	struct onyx_conn *c = *conn;

	switch (a->kind) {
	case GC_ACT_APPLY:
		return apply_category(c, ctx, a, err);
	case GC_ACT_ENTER_MAINTENANCE:
	case GC_ACT_EXIT_MAINTENANCE:
	case GC_ACT_REBOOT:
	case GC_ACT_WAIT_HOST:
	case GC_ACT_VERIFY:
	case GC_ACT_POWER_OFF:
	case GC_ACT_POWER_ON:
	case GC_ACT_MIGRATE:
		break;
	}
	return gc_error_set(err, GC_ENOTSUP, "switch '%s': '%s' is not a switch action",
			    c->target->name, gc_action_kind_name(a->kind));
}

/* `configuration write` alone: an earlier apply stopped between its commands
 * and their save (the journal says so), so the running config may already
 * match the spec and still be lost at the next reload. */
static int onyx_save(void *conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
		     struct gc_error *err)
{
	struct onyx_conn *c = conn;
	int rc;

	gc_drv_count_change(ctx);
	gc_drv_note(ctx, t, "configuration write (an earlier apply did not save)");
	gc_onyx_session_set_timeout(c->s, c->command_ms);
	rc = gc_onyx_session_configure(c->s, err);
	if (rc == 0)
		rc = gc_onyx_session_exec(c->s, NULL, "configuration write", err);
	if (rc == 0)
		rc = gc_onyx_session_end_configure(c->s, err);
	gc_onyx_session_set_timeout(c->s, c->read_ms);
	return rc;
}

const struct gc_driver gc_driver_onyx = {
	.name = "onyx",
	.kind = GC_TARGET_SWITCH,
	.connect = onyx_connect,
	.observe = onyx_observe,
	.apply = onyx_apply,
	.save = onyx_save,
	.disconnect = onyx_disconnect,
};
