/*
 * driver.c - the KVM host driver: struct gc_driver over gc_ssh for a KVM
 * host's Linux (the `kvm` target; its libvirtd is the libvirt driver's).
 *
 * One SSH connection per host per boot.  Everything runs as root: directly
 * for root, else through `sudo -n` (a sudo that wants a password is a clear
 * error, never a hang).  Observation is one exec (observe.c) recorded in
 * the graph's property shape (record.c); each change is one exec of a
 * short sh script built from checked values (render.c), whose failure is
 * reported with the host's own words (the kernel's "write error: Device or
 * resource busy", update-grub's last line).
 *
 * REBOOT observes first: it is sent only when this run changed something
 * that needs it or the boot loader boots other IOMMU arguments than the
 * running kernel has (otherwise its WAIT_HOST is skipped too).  It records
 * the boot id and asks systemd to reboot; WAIT_HOST reconnects until the
 * host answers with a *different* boot id (a dropped connection is no
 * proof; a host that never went down gets the reboot once more); VERIFY
 * observes again and wants the running kernel to have the configured
 * arguments, no problem with the host (an IOMMU that its firmware keeps
 * off) and every resource of the host as the spec says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gc/kvm.h"
#include "gc/spec.h"
#include "gc/ssh.h"
#include "gc/sys/driver.h"

/* Read-only commands get the spec's ssh.read_timeout_s; changing ones its
 * ssh.command_timeout_s (update-grub on a host with many kernels). */
/* A server's firmware takes minutes to POST: a host still up with the old
 * boot id this long after the reboot went out gets it once more. */
#define KVM_REBOOT_GRACE_S 300u

struct kvm_conn {
	struct gc_ssh_conn *ssh; /* NULL while rebooting */
	const struct gc_target *t;
	const struct gc_host *h;
	unsigned command_ms;
	struct gc_kvm_facts facts; /* the last observation */
	bool have_facts;
	const struct gc_resource *const *res; /* borrowed from the executor */
	size_t nres;
	bool reboot_pending; /* observed: the boot loader boots other arguments */
	bool reboot_owed;    /* this run changed something that needs the reboot */
	bool skip_wait;
	char boot_before[64]; /* boot id when the reboot went out */
	uint64_t reboot_sent_ns;
	struct gc_drv_ctx *ctx; /* during WAIT_HOST, for its reconnects */
};

static int ssh_open(struct kvm_conn *c, struct gc_drv_ctx *ctx, unsigned connect_ms,
                    struct gc_error *err)
{
	int rc = gc_drv_ssh_connect(&c->ssh, ctx, c->h->address, &c->h->ssh, c->h->credentials,
	                            "root", connect_ms, gc_ssh_read_ms(&c->h->ssh), err);

	if (rc != 0)
		gc_error_prefix(err, "host '%s': ", c->t->name);
	return rc;
}

static int kvm_connect(void **conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
                       struct gc_error *err)
{
	const struct gc_drv_settings *set = gc_drv_settings(ctx);
	struct kvm_conn *c;

	if (t->host == NULL)
		return gc_error_set(err, GC_EINVAL, "host '%s' has no spec", t->name);
	c = gc_xcalloc(1, sizeof(*c));
	c->t = t;
	c->h = t->host;
	c->command_ms =
	    set->command_timeout_ms ? set->command_timeout_ms : c->h->ssh.command_timeout_s * 1000u;
	if (ssh_open(c, ctx, 0, err) != 0) {
		free(c);
		return err->code;
	}
	*conn = c;
	return 0;
}

static void kvm_disconnect(void *conn)
{
	struct kvm_conn *c = conn;

	if (c == NULL)
		return;
	gc_ssh_free(c->ssh);
	if (c->have_facts)
		gc_kvm_facts_free(&c->facts);
	free(c);
}

/* ---------------------------------------------------------------- running scripts */

/* Run a script as root; *out filled (caller frees) when out is not NULL. */
static int run(struct kvm_conn *c, struct gc_drv_ctx *ctx, const char *what, const char *script,
               bool change, struct gc_ssh_result *out, struct gc_error *err)
{
	const struct gc_credential *cr = c->h->credentials;
	int rc;

	if (change) {
		gc_drv_count_change(ctx);
		gc_ssh_set_command_timeout(c->ssh, c->command_ms);
	}
	rc = gc_ssh_run_root(c->ssh, what, script, -1, cr ? cr->username : "root", out, err);
	if (change && gc_ssh_alive(c->ssh))
		gc_ssh_set_command_timeout(c->ssh, gc_ssh_read_ms(&c->h->ssh));
	if (rc != 0)
		gc_error_prefix(err, "host '%s': ", c->t->name);
	return rc;
}

/* ---------------------------------------------------------------- observe */

struct record_arg {
	struct kvm_conn *c;
	struct gc_buf *problems;
};

static void record_cb(struct gc_observed *obs, void *arg)
{
	struct record_arg *ra = arg;

	gc_kvm_record(obs, ra->c->t->name, ra->c->res, ra->c->nres, &ra->c->facts, ra->problems);
}

static int observe_now(struct kvm_conn *c, struct gc_drv_ctx *ctx, struct gc_buf *problems,
                       struct gc_error *err)
{
	struct gc_ssh_result res;
	struct gc_kvm_facts f;
	struct gc_drv_host_state hs = {0};
	struct gc_buf ignored = GC_BUF_INIT;
	struct record_arg ra = {c, problems != NULL ? problems : &ignored};
	char token[17], why[512];
	char *script;
	int rc;

	gc_random_token(token);
	script = gc_kvm_observe_script(c->res, c->nres, token);
	rc = run(c, ctx, "observation", script, false, &res, err);
	free(script);
	if (rc != 0)
		return rc;
	rc = gc_kvm_parse(&f, token, res.out, res.out_len, err);
	gc_ssh_result_free(&res);
	if (rc != 0) {
		gc_error_prefix(err, "host '%s': ", c->t->name);
		return rc;
	}
	if (c->have_facts)
		gc_kvm_facts_free(&c->facts);
	c->facts = f;
	c->have_facts = true;
	gc_drv_record(ctx, record_cb, &ra);
	gc_buf_free(&ignored);
	c->reboot_pending = gc_kvm_reboot_pending(&c->facts, why, sizeof(why));
	hs.reboot_pending = c->reboot_pending;
	hs.reboot_pending_why = c->reboot_pending ? why : NULL;
	gc_drv_host_state(ctx, c->t->name, &hs);
	return 0;
}

static int kvm_observe(void *conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
                       const struct gc_resource *const *res, size_t nres, struct gc_buf *problems,
                       struct gc_error *err)
{
	struct kvm_conn *c = conn;

	(void)t;
	c->res = res;
	c->nres = nres;
	return observe_now(c, ctx, problems, err);
}

/* ---------------------------------------------------------------- changes */

static int apply_resource(struct kvm_conn *c, struct gc_drv_ctx *ctx, const struct gc_resource *r,
                          struct gc_error *err)
{
	struct gc_buf s = GC_BUF_INIT;
	const char *mech = gc_resource_prop(r, "mechanism");
	int rc;

	if (!c->have_facts && (rc = observe_now(c, ctx, NULL, err)) != 0)
		return rc;
	if (r->kind == GC_RES_KVM_VGPU && mech != NULL && strcmp(mech, "vf") == 0) {
		const char *parent = gc_resource_prop(r, "parent"),
		           *idx = gc_resource_prop(r, "vf");
		const struct gc_kvm_vf *v =
		    gc_kvm_vf(&c->facts, parent, idx ? (unsigned)strtoul(idx, NULL, 10) : 0);

		if (v == NULL || !v->present) {
			/* the VF's type ids are only readable once the VFs exist */
			gc_kvm_vf_enable_script(&s, parent);
			gc_drv_note(ctx, c->t, "enabling the VFs of %s", parent);
			rc = run(c, ctx, "enabling VFs", gc_buf_str(&s), true, NULL, err);
			gc_buf_reset(&s);
			if (rc != 0 || (rc = observe_now(c, ctx, NULL, err)) != 0) {
				gc_buf_free(&s);
				return rc;
			}
		}
	}
	rc = gc_kvm_script(&s, r, &c->facts, err);
	if (rc != 0) {
		gc_error_prefix(err, "host '%s': ", c->t->name);
		gc_buf_free(&s);
		return rc;
	}
	if (r->flags & GC_RES_NEEDS_REBOOT)
		c->reboot_owed = true;
	gc_drv_note(ctx, c->t, "%s", r->id);
	rc = run(c, ctx, r->id, gc_buf_str(&s), true, NULL, err);
	gc_buf_free(&s);
	return rc;
}

/* ---------------------------------------------------------------- reboot */

static int send_reboot(struct kvm_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	int rc;

	c->reboot_sent_ns = gc_now_ns();
	rc = run(c, ctx, "reboot", GC_KVM_REBOOT_SCRIPT, true, NULL, err);
	if (rc == GC_ENET || rc == GC_ETIMEOUT) {
		gc_error_clear(err); /* it went down under us: WAIT_HOST tells */
		rc = 0;
	}
	return rc;
}

static int kvm_reboot(struct kvm_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	int rc = observe_now(c, ctx, NULL, err); /* the boot id before, and is it owed? */

	if (rc != 0)
		return rc;
	if (!c->reboot_owed && !c->reboot_pending) {
		c->skip_wait = true; /* nothing needing it changed after all */
		gc_drv_note(ctx, c->t, "no reboot needed: the running kernel has the arguments");
		return 0;
	}
	c->skip_wait = false;
	snprintf(c->boot_before, sizeof(c->boot_before), "%s",
	         c->facts.boot_id ? c->facts.boot_id : "");
	gc_drv_note(ctx, c->t, "rebooting the host");
	return send_reboot(c, ctx, err);
}

/* gc_drv_wait_reboot's view of the host. */
static int wr_connect(void *arg, unsigned connect_ms, struct gc_error *err)
{
	struct kvm_conn *c = arg;

	return ssh_open(c, c->ctx, connect_ms, err);
}

static void wr_disconnect(void *arg)
{
	struct kvm_conn *c = arg;

	gc_ssh_free(c->ssh);
	c->ssh = NULL;
}

static int wr_boot_id(void *arg, char *out, size_t n, struct gc_error *err)
{
	struct kvm_conn *c = arg;
	struct gc_ssh_result res;
	int rc = gc_ssh_run_root(c->ssh, "boot id", "cat /proc/sys/kernel/random/boot_id", -1, NULL,
	                         &res, err);

	if (rc != 0)
		return rc;
	if (res.exit_status == 0)
		snprintf(out, n, "%.*s", (int)strcspn(res.out, "\r\n"), res.out);
	gc_ssh_result_free(&res);
	return 0;
}

static int wr_resend(void *arg, struct gc_error *err)
{
	struct kvm_conn *c = arg;

	return gc_ssh_run_root(c->ssh, "reboot", GC_KVM_REBOOT_SCRIPT, -1, NULL, NULL, err);
}

static int kvm_wait(struct kvm_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	struct gc_drv_reboot r = {.t = c->t,
	                          .noun = "host",
	                          .before = c->boot_before,
	                          .sent_ns = c->reboot_sent_ns,
	                          .grace_s = KVM_REBOOT_GRACE_S,
	                          .arg = c,
	                          .connect = wr_connect,
	                          .disconnect = wr_disconnect,
	                          .boot_id = wr_boot_id,
	                          .resend = wr_resend};
	int rc;

	c->ctx = ctx;
	rc = gc_drv_wait_reboot(ctx, &r, err);
	c->ctx = NULL;
	return rc;
}

static int kvm_verify(struct kvm_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	struct gc_buf problems = GC_BUF_INIT;
	int rc = observe_now(c, ctx, &problems, err);
	char why[512];

	if (rc == 0 && gc_kvm_reboot_pending(&c->facts, why, sizeof(why)))
		rc = gc_error_set(err, GC_EREMOTE,
		                  "host '%s': after the reboot %s: does the boot "
		                  "loader boot its default entry?",
		                  c->t->name, why);
	/* the arguments run, the IOMMU does not (its firmware switch) */
	if (rc == 0 && problems.len > 0)
		rc = gc_error_set(err, GC_EREMOTE, "after the reboot: %.*s",
		                  (int)strcspn(problems.ptr, "\n"), problems.ptr);
	gc_buf_free(&problems);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < c->nres; i++)
		if (!gc_drv_resource_converged(ctx, c->res[i]))
			return gc_error_set(err, GC_EREMOTE,
			                    "host '%s': after the reboot '%s' still "
			                    "differs from the spec",
			                    c->t->name, c->res[i]->id);
	return 0;
}

/* When the host booted, on our clock: now minus its /proc/uptime. */
static int kvm_boot_time(void *conn, struct gc_drv_ctx *ctx, double *boot_s, struct gc_error *err)
{
	struct kvm_conn *c = conn;
	struct gc_ssh_result res;
	int rc = run(c, ctx, "uptime", "cat /proc/uptime", false, &res, err);

	if (rc != 0)
		return rc;
	return gc_drv_boot_from_uptime(&res, "host", c->t->name, boot_s, err);
}

/* ---------------------------------------------------------------- apply */

static int kvm_apply(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *a,
                     struct gc_error *err)
{
	struct kvm_conn *c = *conn;

	if (c->ssh == NULL && a->kind != GC_ACT_WAIT_HOST) {
		int rc = ssh_open(c, ctx, 0, err); /* an earlier wait gave up on it */

		if (rc != 0)
			return rc;
	}
	switch (a->kind) {
	case GC_ACT_APPLY:
		if (a->op == GC_OP_DELETE || a->resource == NULL)
			return gc_error_set(err, GC_ENOTSUP,
			                    "host '%s': removing '%s' is not supported", c->t->name,
			                    a->resource_id);
		return apply_resource(c, ctx, a->resource, err);
	case GC_ACT_REBOOT: return kvm_reboot(c, ctx, err);
	case GC_ACT_WAIT_HOST: return c->skip_wait ? 0 : kvm_wait(c, ctx, err);
	case GC_ACT_VERIFY: gc_drv_note(ctx, c->t, "verifying"); return kvm_verify(c, ctx, err);
	case GC_ACT_ENTER_MAINTENANCE:
	case GC_ACT_EXIT_MAINTENANCE:
	case GC_ACT_POWER_OFF:
	case GC_ACT_POWER_ON:
	case GC_ACT_MIGRATE: break;
	}
	return gc_error_set(err, GC_ENOTSUP, "host '%s': '%s' is not a KVM host action", c->t->name,
	                    gc_action_kind_name(a->kind));
}

const struct gc_driver gc_driver_kvm = {
    .name = "kvm",
    .kind = GC_TARGET_KVM,
    .connect = kvm_connect,
    .observe = kvm_observe,
    .apply = kvm_apply,
    .boot_time = kvm_boot_time,
    .disconnect = kvm_disconnect,
};
