/*
 * lease.c - the cluster lease on an ESXi host (src/exec/lease.c says what it
 * is for): a user-defined advanced option, read by the apply's observation
 * batch or on its own, written by a compare-and-set snippet in one exec
 * (esxi_lease_take; or at the head of the host's first changing exec,
 * driver.c) or plainly with `advanced set` (or `add` the first time: a
 * renewal, an expired lease taken over), and cleared by a compare-and-clear
 * snippet in one exec.
 */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "esxi_int.h"
#include "gc/esxi.h"
#include "gc/pattern.h"
#include "gc/ssh.h"

/* A user-defined advanced option (ESXi 7+ creates those under /UserVars):
 * every operator's apply, from any copy of the spec, sees it. */
#define LEASE_OPTION GC_ESXI_LEASE_OPTION
#define LEASE_NONE "none"

/* The host said no to a lease command: its own words. */
static int refused(const struct esxi_conn *c, const struct gc_ssh_result *res, const char *what,
		   struct gc_error *err)
{
	struct gc_buf msg = GC_BUF_INIT;
	int rc;

	esxi_device_message(&msg, res);
	rc = gc_error_set(err, GC_EREMOTE, "host '%s': cannot %s the cluster lease: %s",
			  c->target->name, what, gc_buf_str(&msg));
	gc_buf_free(&msg);
	return rc;
}

static int lease_exec(struct esxi_conn *c, const char *cmd, struct gc_ssh_result *res,
		      struct gc_error *err)
{
	int rc = esxi_host_exec(c, c->ssh, cmd, false, res, err);

	if (rc != 0)
		gc_error_prefix(err, "host '%s': ", c->target->name);
	return rc;
}

/* How long the observation's own read of the lease stands for a read:
 * LEASE_SEEN_MS, or GC_TEST_LEASE_SEEN_MS (tests: a stale observation
 * without waiting 30 s). */
static uint64_t lease_seen_ns(void)
{
	const char *t = gc_test_hook("GC_TEST_LEASE_SEEN_MS");

	return (t != NULL && t[0] != '\0' ? strtoull(t, NULL, 10) : LEASE_SEEN_MS) * 1000000u;
}

int esxi_lease_get(void *conn, struct gc_drv_ctx *ctx, char **out, struct gc_error *err)
{
	struct esxi_conn *c = conn;
	struct gc_ssh_result res;
	struct gc_esxcli_result xr;
	const char *v;
	int rc;

	(void)ctx;
	/* the observation just read it (GC_ESXI_OBS_LEASE): nothing else went
	 * to the host since, so that is what a read now would find, but for
	 * another apply writing in between, which a read now would not close
	 * either (the ESXi lease is no compare-and-set) */
	if (c->lease_seen && c->have_facts && c->facts.lease_read && c->nexec == c->lease_seen_exec &&
	    gc_now_ns() - c->lease_seen_ns < lease_seen_ns()) {
		c->lease_seen = false;
		*out = gc_xstrdup(c->facts.lease);
		return 0;
	}
	c->lease_seen = false;
	rc = lease_exec(c, "esxcli --formatter=xml system settings advanced list -o " LEASE_OPTION,
			&res, err);
	if (rc != 0)
		return rc;
	if (res.exit_status != 0) { /* "Unable to find option": nobody ever leased this host */
		bool none = strstr(res.err, "Unable to find option") != NULL ||
			    strstr(res.out, "Unable to find option") != NULL;

		gc_ssh_result_free(&res);
		if (!none)
			return gc_error_set(err, GC_EREMOTE, "host '%s': cannot read the cluster lease",
					    c->target->name);
		c->lease_option = 0;
		*out = gc_xstrdup("");
		return 0;
	}
	c->lease_option = 1;
	rc = gc_esxcli_parse_xml(&xr, res.out, res.out_len, err);
	gc_ssh_result_free(&res);
	if (rc != 0) {
		gc_error_prefix(err, "host '%s': the cluster lease: ", c->target->name);
		return rc;
	}
	v = xr.nitems > 0 ? gc_esxcli_get(&xr.items[0], "StringValue") : NULL;
	*out = gc_xstrdup(v == NULL || strcmp(v, LEASE_NONE) == 0 ? "" : v);
	gc_esxcli_result_free(&xr);
	return 0;
}

int esxi_lease_set(void *conn, struct gc_drv_ctx *ctx, const char *value, struct gc_error *err)
{
	struct esxi_conn *c = conn;
	struct gc_buf cmd = GC_BUF_INIT, q = GC_BUF_INIT;
	struct gc_ssh_result res;
	bool add;
	int rc;

	(void)ctx;
	if (strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._:;=+-") !=
	    strlen(value))
		return gc_error_set(err, GC_EINVAL, "host '%s': bad lease value", c->target->name);
	gc_shell_quote(&q, value[0] ? value : LEASE_NONE);
	/* a host never leased (as the read just before found it) has no option
	 * to set: create it at once; else set it, and create it when missing */
	add = c->lease_option == 0;
	if (!add) {
		gc_buf_printf(&cmd, "esxcli system settings advanced set -o " LEASE_OPTION " -s %s",
			      gc_buf_str(&q));
		rc = lease_exec(c, gc_buf_str(&cmd), &res, err);
		if (rc == 0 && res.exit_status != 0 && strstr(res.err, "Unable to find option") != NULL) {
			gc_ssh_result_free(&res);
			add = true;
		}
	}
	if (add) {
		gc_buf_reset(&cmd);
		/* created with the default `none`, then set: only its value
		 * ever holds a lease (the snippets match the whole listing) */
		gc_buf_printf(&cmd, "esxcli system settings advanced add -o GpuclusterctlLease -t string "
			      "-s none -d 'gpuclusterctl cluster lease' && esxcli system settings "
			      "advanced set -o " LEASE_OPTION " -s %s", gc_buf_str(&q));
		rc = lease_exec(c, gc_buf_str(&cmd), &res, err);
	}
	if (rc == 0 && res.exit_status == 0)
		c->lease_option = 1;
	if (rc == 0) {
		if (res.exit_status != 0)
			rc = refused(c, &res, "write", err);
		gc_ssh_result_free(&res);
	}
	gc_buf_free(&cmd);
	gc_buf_free(&q);
	return rc;
}

int esxi_lease_take(void *conn, struct gc_drv_ctx *ctx, const char *lock, const char *value,
		    char **held, struct gc_error *err)
{
	struct esxi_conn *c = conn;
	struct gc_ssh_result res;
	char token[17], *cmd;
	int rc;

	(void)ctx;
	*held = NULL;
	gc_random_token(token);
	cmd = gc_esxi_lease_cas_command(token, lock, value);
	if (cmd == NULL)
		return gc_error_set(err, GC_EINVAL, "host '%s': bad lease value", c->target->name);
	c->lease_seen = false;
	rc = lease_exec(c, cmd, &res, err);
	free(cmd);
	if (rc != 0)
		return rc;
	if (res.exit_status == 0) {
		c->lease_option = 1;
	} else if ((*held = gc_esxi_lease_held(token, res.err)) != NULL) {
		rc = gc_error_set(err, GC_ELOCKED, "host '%s': another apply holds the cluster lease: %s",
				  c->target->name, *held);
	} else {
		rc = refused(c, &res, "write", err);
	}
	gc_ssh_result_free(&res);
	return rc;
}

bool esxi_lease_taken(void *conn)
{
	const struct esxi_conn *c = conn;

	return c->lease_took;
}

/* The compare-and-clear snippet (GC_ESXI_LEASE_CLEAR_SCRIPT): our lease
 * cleared, another's kept, in one exec. */
int esxi_lease_clear_ours(void *conn, struct gc_drv_ctx *ctx, const char *lock, bool *cleared,
				 struct gc_error *err)
{
	struct esxi_conn *c = conn;
	struct gc_buf cmd = GC_BUF_INIT;
	struct gc_ssh_result res;
	int rc;

	(void)ctx;
	*cleared = false;
	if (lock[0] == '\0' || strspn(lock, "0123456789abcdef") != strlen(lock))
		return gc_error_set(err, GC_EINVAL, "host '%s': bad lease lock", c->target->name);
	c->lease_seen = false;
	gc_buf_puts(&cmd, "sh -c ");
	gc_shell_quote(&cmd, GC_ESXI_LEASE_CLEAR_SCRIPT);
	gc_buf_printf(&cmd, " lease %s", lock);
	rc = lease_exec(c, gc_buf_str(&cmd), &res, err);
	gc_buf_free(&cmd);
	if (rc != 0)
		return rc;
	if (res.exit_status == 0 && strstr(res.out, "@@lease:cleared") != NULL) {
		*cleared = true;
		c->lease_option = 1;
	} else if (res.exit_status == 0 && strstr(res.out, "@@lease:none") != NULL) {
		c->lease_option = 0;
	} else if (res.exit_status != 0 || strstr(res.out, "@@lease:kept") == NULL) {
		rc = refused(c, &res, "clear", err);
	}
	gc_ssh_result_free(&res);
	return rc;
}
