/*
 * driver.c - the ESXi driver: struct gc_driver over gc_ssh.
 *
 * One SSH connection per host per run.  Observation is one exec of the
 * marker-framed batch (observe.c).  The changes the executor finds ready
 * together (entering maintenance mode and the host's changes, or changes
 * and leaving it) go out as one exec of a marker-framed `&&` chain
 * (batch.c), each command from commands.c, so each one's failure is still
 * reported with the device's own words and nothing after it is sent.
 * The reboot, the wait for the host to come back and the read-back after
 * it are reboot.c's.  Every exec is counted for
 * the run's report (gc_drv_count_exec).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gc/esxi.h"
#include "gc/pattern.h"
#include "gc/sections.h"
#include "gc/spec.h"
#include "gc/ssh.h"
#include "gc/sys/driver.h"
#include "esxi_int.h"


/* Every exec to the host goes through here, counted (`poll`: while it reboots). */
int esxi_host_exec(struct esxi_conn *c, struct gc_ssh_conn *ssh, const char *cmd, bool poll,
		     struct gc_ssh_result *res, struct gc_error *err)
{
	gc_drv_count_exec(c->ctx, c->target, poll);
	c->nexec++;
	return gc_ssh_exec(ssh, cmd, res, err);
}

void esxi_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

int esxi_ssh_open(struct gc_ssh_conn **out, struct gc_drv_ctx *ctx, const struct gc_target *t,
		    unsigned connect_timeout_ms, struct gc_error *err)
{
	const struct gc_host *h = t->host;
	struct gc_ssh_opts o;
	char *known;
	int rc;

	if (h == NULL)
		return gc_error_set(err, GC_EINVAL, "host '%s' has no spec", t->name);
	gc_drv_ssh_opts(&o, &known, ctx, h->address, &h->ssh, h->credentials, "root");
	if (connect_timeout_ms != 0)
		o.connect_timeout_ms = connect_timeout_ms;
	rc = gc_ssh_connect(out, &o, err);
	free(known);
	if (rc == 0)
		gc_ssh_set_command_timeout(*out, gc_ssh_read_cap_ms(&h->ssh, o.command_timeout_ms));
	if (rc != 0)
		gc_error_prefix(err, "host '%s': ", t->name);
	return rc;
}

static int esxi_connect(void **conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
			struct gc_error *err)
{
	const struct gc_drv_settings *set = gc_drv_settings(ctx);
	struct esxi_conn *c = gc_xcalloc(1, sizeof(*c));
	int rc = esxi_ssh_open(&c->ssh, ctx, t, 0, err);

	if (rc != 0) {
		free(c);
		return rc;
	}
	c->target = t;
	c->ctx = ctx;
	c->uptime_before_us = -1;
	c->lease_option = -1;
	c->command_timeout_ms = set->command_timeout_ms ? set->command_timeout_ms
						       : t->host->ssh.command_timeout_s * 1000u;
	c->read_ms = gc_ssh_read_cap_ms(&t->host->ssh, c->command_timeout_ms);
	*conn = c;
	return 0;
}

static void esxi_disconnect(void *conn)
{
	struct esxi_conn *c = conn;

	if (c == NULL)
		return;
	gc_ssh_free(c->ssh);
	if (c->have_facts)
		gc_esxi_facts_free(&c->facts);
	gc_buf_free(&c->readback_words);
	free(c);
}

struct record_arg {
	struct esxi_conn *c;
	struct gc_buf *problems;
};

static void record_cb(struct gc_observed *obs, void *arg)
{
	struct record_arg *ra = arg;

	gc_esxi_record(obs, ra->c->target->name, ra->c->res, ra->c->nres, &ra->c->facts, ra->problems);
}

/* The vGPU manager's bundle or .vib when its VIB names are to be learned
 * (no `vib_name` in the spec): the batch lists what it holds. */
static const char *learn_source(const struct esxi_conn *c)
{
	for (size_t i = 0; i < c->nres; i++) {
		const char *name = gc_resource_prop(c->res[i], "name");

		if (c->res[i]->kind == GC_RES_ESXI_VIB && name != NULL &&
		    strcmp(name, GC_PROP_LEARNED) == 0)
			return gc_resource_prop(c->res[i], "source");
	}
	return NULL;
}

/* Does the spec give the host an SR-IOV NIC (whose VFs a reboot makes)? */
bool esxi_has_sriov(const struct esxi_conn *c)
{
	const struct gc_host *h = c->target->host;

	for (size_t i = 0; h != NULL && i < h->nnics; i++)
		if (h->nics[i].mode == GC_NIC_MODE_SRIOV)
			return true;
	return false;
}

/* The last non-empty line of text[0..len) into out, at most 400 bytes. */
static void last_line(struct gc_buf *out, const char *text, size_t len)
{
	size_t end = len, start;

	while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == ' '))
		end--;
	start = end;
	while (start > 0 && text[start - 1] != '\n')
		start--;
	gc_buf_put(out, text + start, end - start > 400 ? 400 : end - start);
}

/* One observation exec; flags: gc_esxi_script's (the SR-IOV list and the
 * exit of the read-back, the lease of the apply's observation), with the
 * lease taken (take, with GC_ESXI_OBS_LEASE) or cleared after the exit
 * (GC_ESXI_OBS_LEASE_CLEAR): lock is ours.  *stderr_out (may be NULL): the
 * exec's last line of stderr, the exit's words when it was refused.
 * guard (may be NULL): behind a reboot poll's guard, counted as a poll
 * unless the read-back ran; when it did not, nothing is read (0). */
int esxi_observe_leased(struct esxi_conn *c, struct gc_drv_ctx *ctx, struct gc_buf *problems,
			  unsigned flags, const char *lock, const char *take, struct esxi_guard *guard,
			  struct gc_buf *stderr_out, struct gc_error *err)
{
	struct gc_ssh_result res;
	struct gc_esxi_facts f;
	struct gc_drv_host_state hs;
	struct record_arg ra;
	char token[17];
	char *script;
	size_t off = 0;
	int rc;

	gc_random_token(token);
	if (guard == NULL) {
		script = gc_esxi_script_lease(token, learn_source(c), flags, lock, take);
		rc = esxi_host_exec(c, c->ssh, script, false, &res, err);
	} else { /* counted once its answer says what it was */
		script = gc_esxi_script_guarded(token, learn_source(c), flags, lock, guard->bound_us);
		c->nexec++;
		rc = gc_ssh_exec(c->ssh, script, &res, err);
		guard->ran = rc == 0 && gc_esxi_guard_split(token, res.out, res.out_len,
							    &guard->uptime_us, &off);
		gc_drv_count_exec(ctx, c->target, !guard->ran);
		if (rc == 0 && !guard->ran) {
			free(script);
			gc_ssh_result_free(&res);
			return 0;
		}
	}
	free(script);
	if (rc != 0) { /* named as a connection that fails is (esxi_ssh_open) */
		gc_error_prefix(err, "host '%s': ", c->target->name);
		return rc;
	}
	rc = gc_esxi_parse_observation(&f, token, res.out + off, res.out_len - off, err);
	if (stderr_out != NULL)
		last_line(stderr_out, res.err, res.err_len);
	gc_ssh_result_free(&res);
	if (rc != 0) {
		gc_error_prefix(err, "host '%s': ", c->target->name);
		return rc;
	}
	if (c->have_facts)
		gc_esxi_facts_free(&c->facts);
	c->facts = f;
	c->have_facts = true;
	if (take != NULL && f.lease_took) {
		c->lease_took = true;
		c->lease_option = 1;
	}
	if ((flags & GC_ESXI_OBS_LEASE_CLEAR) && f.lease_clear != 0)
		gc_drv_lease_released(ctx, c->target, f.lease_clear == GC_ESXI_LEASE_CLEARED);
	if (f.lease_read) {
		c->lease_option = f.lease_option ? 1 : 0;
		c->lease_seen = true;
		c->lease_seen_ns = gc_now_ns();
		c->lease_seen_exec = c->nexec;
	}
	ra.c = c;
	ra.problems = problems;
	/* a host on another release than the spec says: nothing is recorded,
	 * so nothing of it is planned (the problem line says which) */
	if (gc_esxi_check_version(c->target->name, c->target->host ? c->target->host->version : NULL,
				  &c->facts, problems))
		gc_drv_record(ctx, record_cb, &ra);
	hs.maintenance = f.maintenance;
	hs.reboot_pending = f.reboot_pending;
	hs.reboot_pending_why = f.reboot_pending_why;
	gc_drv_host_state(ctx, c->target->name, &hs);
	return 0;
}

/* An SR-IOV PF's firmware that nothing here can read (no MFT, or MFT shows
 * no device at its address) is not applicable (record.c): say why, once per
 * observation.  The VFs are then checked after the reboot (check_vfs). */
static void note_firmware(struct esxi_conn *c, struct gc_drv_ctx *ctx)
{
	for (size_t i = 0; i < c->nres; i++) {
		const char *pci = strrchr(c->res[i]->id, '/');

		if (c->res[i]->kind != GC_RES_ESXI_NIC_FIRMWARE || pci == NULL)
			continue;
		if (!c->facts.mft_present) {
			gc_drv_note(ctx, c->target, "MFT not installed on %s: the VFs are checked after "
				    "the reboot", c->target->name);
			return;
		}
		if (gc_esxi_facts_mft(&c->facts, pci + 1) == NULL)
			gc_drv_note(ctx, c->target, "MFT on %s shows no device at %s: its VFs are "
				    "checked after the reboot", c->target->name, pci + 1);
	}
}

static int esxi_observe(void *conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
			const struct gc_resource *const *res, size_t nres, struct gc_buf *problems,
			struct gc_error *err)
{
	struct esxi_conn *c = conn;
	int rc;

	c->res = res;
	c->nres = nres;
	/* with the cluster lease: the apply's lease check reads it from here,
	 * and an apply that expects changes takes it here (src/exec/lease.c) */
	const char *lock = NULL, *take = gc_drv_lease_offer(ctx, &lock);

	c->lease_took = false;
	rc = esxi_observe_leased(c, ctx, problems, GC_ESXI_OBS_LEASE, lock, take, NULL, NULL, err);
	if (rc == 0)
		note_firmware(c, ctx);
	return rc;
}

/* The device's own message: first non-empty line of stderr, else of stdout. */
void esxi_device_message(struct gc_buf *out, const struct gc_ssh_result *r)
{
	const char *src = r->err_len > 0 ? r->err : r->out;
	const char *p = src;

	while (*p == '\n' || *p == '\r' || *p == ' ')
		p++;
	if (*p == '\0') {
		gc_buf_printf(out, "exit status %d", r->exit_status);
		return;
	}
	/* esxcli errors may span lines ("[InstallationError]\n The ..."): keep up to 3 */
	for (int lines = 0; *p && lines < 3; lines++) {
		size_t n = strcspn(p, "\r\n");

		if (lines > 0)
			gc_buf_puts(out, " ");
		gc_buf_put(out, p, n > 400 ? 400 : n);
		p += n;
		while (*p == '\n' || *p == '\r' || *p == ' ')
			p++;
	}
}

/* Run one changing command; non-zero exit status is the device saying no. */
int esxi_run_change(struct esxi_conn *c, struct gc_drv_ctx *ctx, const char *cmd,
		      const char *tolerate, struct gc_error *err)
{
	struct gc_ssh_result res;
	int rc;

	gc_drv_count_change(ctx);
	gc_ssh_set_command_timeout(c->ssh, c->command_timeout_ms);
	rc = esxi_host_exec(c, c->ssh, cmd, false, &res, err);
	if (gc_ssh_alive(c->ssh))
		gc_ssh_set_command_timeout(c->ssh, c->read_ms);
	if (rc != 0) {
		gc_error_prefix(err, "host '%s': ", c->target->name);
		return rc;
	}
	if (res.exit_status != 0) {
		struct gc_buf msg = GC_BUF_INIT;

		esxi_device_message(&msg, &res);
		if (tolerate != NULL && strstr(gc_buf_str(&msg), tolerate) != NULL) {
			gc_buf_free(&msg);
			gc_ssh_result_free(&res);
			return 0;
		}
		rc = gc_error_set(err, GC_EREMOTE, "host '%s': command '%s' failed: %s", c->target->name,
				  cmd, gc_buf_str(&msg));
		gc_buf_free(&msg);
	}
	gc_ssh_result_free(&res);
	return rc;
}

/* ---------------------------------------------------------------- batches of changes */

/* What goes in a batch: a change, entering or leaving maintenance mode,
 * and the read-back, which takes the exit right after it into its own exec
 * (esxi_verify).  The reboot and the wait each need their own exchange. */
static bool esxi_batchable(const struct gc_action *a)
{
	return (a->kind == GC_ACT_APPLY && a->op != GC_OP_DELETE) ||
	       a->kind == GC_ACT_ENTER_MAINTENANCE || a->kind == GC_ACT_EXIT_MAINTENANCE ||
	       a->kind == GC_ACT_VERIFY || a->kind == GC_ACT_WAIT_HOST;
}

/* The command of a batchable action (*cmd gc_xmalloc'd), and the device's
 * words that mean it already holds (entering an entered maintenance mode). */
static int batch_command(const struct esxi_conn *c, const struct gc_action *a, char **cmd,
			 const char **tolerate, struct gc_error *err)
{
	*tolerate = NULL;
	switch (a->kind) {
	case GC_ACT_ENTER_MAINTENANCE:
		*cmd = gc_xstrdup(GC_ESXI_CMD_ENTER_MAINTENANCE);
		*tolerate = "already enabled";
		return 0;
	case GC_ACT_EXIT_MAINTENANCE:
		*cmd = gc_xstrdup(GC_ESXI_CMD_EXIT_MAINTENANCE);
		*tolerate = "already disabled";
		return 0;
	default:
		if (gc_esxi_command(cmd, a->resource, c->have_facts ? &c->facts : NULL, err) != 0)
			return err->code;
		return 0;
	}
}

/* The uptime as its last command printed it (the number alone on its line). */
static void batch_uptime(struct esxi_conn *c, const struct gc_batch *b)
{
	char *end;
	long long v = b->last_len > 0 ? strtoll(b->last_out, &end, 10) : -1;

	c->uptime_read = v >= 0 && end != b->last_out && *end == '\n';
	c->uptime_before_us = c->uptime_read ? v : -1;
}

/* One exec of cmds[0..n); *ndone as sys/driver.h's apply_batch.
 * names[i]: what an error calls cmds[i] when not NULL (the lease's
 * compare-and-set, which is no change).
 * *tolerated: the failing command failed with words that mean it holds.
 * With `uptime`, the host's uptime is read last, for the reboot that
 * follows (esxi_send_reboot): a failure of that read fails nothing. */
static int run_batch_exec(struct esxi_conn *c, struct gc_drv_ctx *ctx, char *const *cmds,
			  const char *const *tolerate, const char *const *names, size_t n, bool uptime,
			  size_t *ndone, bool *tolerated, struct gc_error *err)
{
	unsigned timeout = c->command_timeout_ms;
	const char **all = gc_xcalloc(n + 1, sizeof(*all));
	struct gc_ssh_result res;
	struct gc_batch b;
	struct gc_buf msg = GC_BUF_INIT;
	char token[17];
	char *script;
	size_t f, ncmds = n + (uptime ? 1 : 0);
	int rc, prc;

	*ndone = 0;
	*tolerated = false;
	c->uptime_read = false;
	gc_random_token(token);
	for (size_t i = 0; i < n; i++)
		all[i] = cmds[i];
	if (uptime)
		all[n] = CMD_UPTIME;
	script = gc_esxi_batch_script(token, all, ncmds);
	free(all);
	for (size_t i = 0; i < n; i++)
		if (names[i] == NULL) /* a named one is the lease's bookkeeping */
			gc_drv_count_change(ctx);
	gc_drv_count_exec(ctx, c->target, false);
	/* the spec's timeout is sized for the slowest command (a VIB install):
	 * each further command of the batch gets a read-only command's */
	if (timeout != 0)
		timeout += (unsigned)(n - 1) * c->read_ms;
	gc_ssh_set_command_timeout(c->ssh, timeout);
	rc = gc_ssh_exec_partial(c->ssh, script, &res, err);
	free(script);
	if (gc_ssh_alive(c->ssh))
		gc_ssh_set_command_timeout(c->ssh, c->read_ms);
	prc = gc_batch_parse(&b, token, ncmds, res.out, res.out_len,
				  rc == 0 ? err : &(struct gc_error)GC_ERROR_INIT);
	if (rc != 0) { /* cut short: the commands before the last started one ran */
		*ndone = prc == 0 && b.started > 0 ? b.started - 1 : 0;
		if (*ndone > n)
			*ndone = n;
		gc_error_prefix(err, "host '%s': ", c->target->name);
		gc_ssh_result_free(&res);
		return rc;
	}
	if (prc != 0) {
		gc_error_prefix(err, "host '%s': ", c->target->name);
		gc_ssh_result_free(&res);
		return prc;
	}
	if (b.complete && res.exit_status == 0) {
		*ndone = n;
		if (uptime)
			batch_uptime(c, &b);
		gc_ssh_result_free(&res);
		return 0;
	}
	/* the chain stopped at its last started command */
	f = b.started > 0 ? b.started - 1 : 0;
	*ndone = f;
	if (f == n) { /* only the uptime: the reboot reads it again */
		gc_ssh_result_free(&res);
		return 0;
	}
	if (res.err_len == 0 && b.last_len > 0) { /* its words on stdout: keep only its own */
		struct gc_ssh_result own = res;

		own.out = (char *)b.last_out;
		own.out_len = b.last_len;
		esxi_device_message(&msg, &own);
	} else {
		esxi_device_message(&msg, &res);
	}
	if (tolerate[f] != NULL && strstr(gc_buf_str(&msg), tolerate[f]) != NULL) {
		*tolerated = true;
		rc = gc_error_set(err, GC_EREMOTE, "%s", gc_buf_str(&msg));
	} else {
		rc = gc_error_set(err, GC_EREMOTE, "host '%s': command '%s' failed: %s",
				  c->target->name, names[f] != NULL ? names[f] : cmds[f], gc_buf_str(&msg));
	}
	gc_buf_free(&msg);
	gc_ssh_result_free(&res);
	return rc;
}

#define LEASE_CAS_NAME "sh -c (the cluster lease's compare-and-set)"

/*
 * What the lease's compare-and-set at the head of a step's first exec came
 * to (sys/driver.h, gc_drv_lease_step_result): the chain went past it
 * (got > 0), or stopped at it, with another apply's lease named on its
 * stderr, or with esxcli's words; or the connection went first.  Returns
 * the step's error (rc, or the refusal's).
 */
static int lease_outcome(struct esxi_conn *c, struct gc_drv_ctx *ctx, const char *token, size_t got,
			 int rc, struct gc_error *err)
{
	char *held;

	if (got > 0 || rc == 0) {
		gc_drv_lease_step_result(ctx, c->target, GC_DRV_LEASE_TOOK, NULL, err);
		return rc;
	}
	if (rc == GC_ENET || rc == GC_ETIMEOUT) {
		gc_drv_lease_step_result(ctx, c->target, GC_DRV_LEASE_UNKNOWN, NULL, err);
		return rc;
	}
	held = gc_esxi_lease_held(token, err->msg);
	if (held == NULL) {
		char words[GC_ERROR_MSG_MAX];
		const char *w = strstr(err->msg, "' failed: ");

		snprintf(words, sizeof(words), "%s", w != NULL ? w + 10 : err->msg);
		gc_error_clear(err);
		gc_error_set(err, GC_EREMOTE, "host '%s': cannot write the cluster lease: %s",
			     c->target->name, words);
	}
	rc = gc_drv_lease_step_result(ctx, c->target, GC_DRV_LEASE_REFUSED, held, err);
	free(held);
	return rc;
}

/* Is the host's cluster lease left to the step going out? */
static bool lease_pending(const struct esxi_conn *c, struct gc_drv_ctx *ctx)
{
	const char *lock;

	return gc_drv_lease_step_take(ctx, c->target, &lock) != NULL;
}

static int change_batch(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *const *acts,
			size_t n, size_t *ndone, struct gc_error *err)
{
	struct esxi_conn *c = *conn;
	char **cmds = gc_xcalloc(n + 1, sizeof(*cmds));
	const char **tolerate = gc_xcalloc(n + 1, sizeof(*tolerate));
	const char **names = gc_xcalloc(n + 1, sizeof(*names));
	struct gc_error built = GC_ERROR_INIT;
	size_t nbuilt = 0, i = 0, lead = 0, total;
	bool reboot_next = false;
	char token[17];
	/* the host's first changing step, when its cluster lease was left to
	 * it (src/exec/lease.c): the lease's compare-and-set heads the chain,
	 * so a lease another apply took since ours was read stops it before
	 * its first change */
	const char *lock = NULL, *take = gc_drv_lease_step_take(ctx, c->target, &lock);
	int rc = 0;

	if (take != NULL) {
		gc_random_token(token);
		cmds[0] = gc_esxi_lease_cas_command(token, lock, take);
		names[0] = LEASE_CAS_NAME;
		if (cmds[0] == NULL) {
			gc_error_set(err, GC_EINVAL, "host '%s': bad lease value", c->target->name);
			rc = gc_drv_lease_step_result(ctx, c->target, GC_DRV_LEASE_REFUSED, NULL, err);
			free(cmds);
			free(tolerate);
			free(names);
			*ndone = 0;
			return rc;
		}
		lead = 1;
	}
	/* a change that takes effect at the reboot: the reboot comes next, and
	 * the batch reads the uptime it is proven with */
	for (size_t k = 0; k < n; k++)
		reboot_next = reboot_next || (acts[k]->flags & GC_RES_NEEDS_REBOOT) != 0;
	/* every command first: one that cannot be built (a value that fails
	 * its pattern) ends the batch before it, and fails where it stands */
	while (nbuilt < n && batch_command(c, acts[nbuilt], &cmds[lead + nbuilt], &tolerate[lead + nbuilt],
					   &built) == 0)
		nbuilt++;
	total = lead + nbuilt;
	if (nbuilt > 0)
		gc_drv_note(ctx, c->target, "%s%s", cmds[lead],
			    nbuilt > 1 ? " (and the next commands, in one exec)" : "");
	while (i < total && rc == 0) {
		size_t got = 0;
		bool tolerated = false;

		if (total - i == 1 && !reboot_next && i >= lead) {
			rc = esxi_run_change(c, ctx, cmds[i], tolerate[i], err);
			got = rc == 0 ? 1 : 0;
		} else {
			rc = run_batch_exec(c, ctx, cmds + i, tolerate + i, names + i, total - i, reboot_next,
					    &got, &tolerated, err);
			if (rc == 0)
				got = total - i;
			if (i < lead)
				rc = lease_outcome(c, ctx, token, got, rc, err);
		}
		i += got;
		if (tolerated) { /* it already held: go on with the commands after it */
			gc_error_clear(err);
			rc = 0;
			i++;
		}
	}
	if (rc == 0 && nbuilt < n) {
		*err = built;
		rc = built.code;
	}
	*ndone = i > lead ? i - lead : 0;
	for (size_t k = 0; k < total; k++)
		free(cmds[k]);
	free(cmds);
	free(tolerate);
	free(names);
	return rc;
}

static int esxi_apply(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *a,
		      struct gc_error *err);

/*
 * sys/driver.h's apply_batch: the changes in one exec (change_batch), and a
 * read-back with the exit of maintenance mode after it in one exec
 * (esxi_verify).  When the read-back fails the exit has gone out all the same,
 * and the error is the read-back's: the executor's recovery then finds the
 * host out of maintenance mode.
 */
static int esxi_apply_batch(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *const *acts,
			    size_t n, size_t *ndone, struct gc_error *err)
{
	struct esxi_conn *c = *conn;
	size_t i = 0;
	int rc = 0;

	while (i < n && rc == 0) {
		size_t j = i, got = 0;

		if (acts[i]->kind == GC_ACT_WAIT_HOST) {
			/* the read-back that follows, and the exit after it: the poll
			 * that finds the host back carries them (reboot.c) */
			bool with_verify = i + 1 < n && acts[i + 1]->kind == GC_ACT_VERIFY;
			struct esxi_readback rb = {with_verify && i + 2 < n &&
					      acts[i + 2]->kind == GC_ACT_EXIT_MAINTENANCE};

			rc = esxi_wait_host(c, ctx, with_verify ? &rb : NULL, err);
			i += rc == 0 ? 1 : 0;
			continue;
		}
		if (acts[i]->kind == GC_ACT_VERIFY) {
			bool with_exit = i + 1 < n && acts[i + 1]->kind == GC_ACT_EXIT_MAINTENANCE;
			struct gc_error exit_err = GC_ERROR_INIT;
			int exit_rc = -1; /* not sent */

			gc_drv_note(ctx, c->target, "%s", with_exit ? "verifying, then leaving maintenance mode"
							     : "verifying");
			rc = esxi_verify(c, ctx, with_exit, &exit_rc, &exit_err, err);
			if (rc != 0) {
				got = 0;
				if (with_exit && exit_rc == 0) /* out all the same: nothing to recover */
					gc_drv_maintenance_left(ctx, c->target, true);
			} else if (with_exit && exit_rc != 0) { /* the read-back passed, the exit did not */
				if (exit_rc < 0)
					gc_error_set(&exit_err, GC_EREMOTE, "host '%s': '%s' was not sent",
						     c->target->name, GC_ESXI_CMD_EXIT_MAINTENANCE);
				*err = exit_err;
				rc = exit_err.code;
				got = 1;
			} else {
				got = with_exit ? 2 : 1;
			}
			i += got;
			continue;
		}
		while (j < n && acts[j]->kind != GC_ACT_VERIFY && acts[j]->kind != GC_ACT_WAIT_HOST) {
			if (acts[j]->kind == GC_ACT_ENTER_MAINTENANCE)
				gc_drv_maintenance_left(ctx, c->target, false);
			j++;
		}
		if (j - i == 1) {
			rc = esxi_apply(conn, ctx, acts[i], err);
			got = rc == 0 ? 1 : 0;
		} else {
			rc = change_batch(conn, ctx, acts + i, j - i, &got, err);
		}
		i += got;
	}
	*ndone = i;
	return rc;
}

/* The steps that take a lease left to them in their own first exec
 * (change_batch); the executor takes it before any other (sys/driver.h). */
static bool esxi_lease_in_step(const struct gc_action *a)
{
	return (a->kind == GC_ACT_APPLY && a->op != GC_OP_DELETE) ||
	       a->kind == GC_ACT_ENTER_MAINTENANCE || a->kind == GC_ACT_EXIT_MAINTENANCE;
}

static int esxi_apply(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *a,
		      struct gc_error *err)
{
	struct esxi_conn *c = *conn;
	char *cmd = NULL;
	int rc;

	switch (a->kind) {
	case GC_ACT_APPLY:
		if (a->op == GC_OP_DELETE)
			return gc_error_set(err, GC_ENOTSUP, "host '%s': removing '%s' is not supported",
					    c->target->name, a->resource_id);
		if ((a->flags & GC_RES_NEEDS_REBOOT) || lease_pending(c, ctx)) {
			/* with the uptime for the reboot, or the lease's take */
			size_t ndone;

			return change_batch(conn, ctx, &a, 1, &ndone, err);
		}
		if (gc_esxi_command(&cmd, a->resource, c->have_facts ? &c->facts : NULL, err) != 0)
			return err->code;
		gc_drv_note(ctx, c->target, "%s", cmd);
		rc = esxi_run_change(c, ctx, cmd, NULL, err);
		free(cmd);
		return rc;
	case GC_ACT_ENTER_MAINTENANCE:
		gc_drv_maintenance_left(ctx, c->target, false);
		if (lease_pending(c, ctx)) {
			size_t ndone;

			return change_batch(conn, ctx, &a, 1, &ndone, err);
		}
		gc_drv_note(ctx, c->target, "entering maintenance mode");
		return esxi_run_change(c, ctx, GC_ESXI_CMD_ENTER_MAINTENANCE, "already enabled", err);
	case GC_ACT_EXIT_MAINTENANCE:
		if (lease_pending(c, ctx)) {
			size_t ndone;

			return change_batch(conn, ctx, &a, 1, &ndone, err);
		}
		gc_drv_note(ctx, c->target, "leaving maintenance mode");
		return esxi_run_change(c, ctx, GC_ESXI_CMD_EXIT_MAINTENANCE, "already disabled", err);
	case GC_ACT_REBOOT:
		gc_drv_note(ctx, c->target, "rebooting");
		c->reboot_resends = 0;
		return esxi_send_reboot(c, ctx, err);
	case GC_ACT_WAIT_HOST:
		return esxi_wait_host(c, ctx, NULL, err);
	case GC_ACT_VERIFY:
		gc_drv_note(ctx, c->target, "verifying");
		return esxi_verify(c, ctx, false, NULL, NULL, err);
	case GC_ACT_POWER_OFF:
	case GC_ACT_POWER_ON:
	case GC_ACT_MIGRATE:
		break;
	}
	return gc_error_set(err, GC_ENOTSUP, "host '%s': '%s' is not an ESXi shell action",
			    c->target->name, gc_action_kind_name(a->kind));
}

/* After a dropped connection and a new observation: does the action hold?
 * A change, when its resource holds the spec's values; entering or leaving
 * maintenance mode, when the host is (or is not) in it: then a batch cut
 * short is sent again from the first command that did not take. */
static bool esxi_already_done(struct gc_drv_ctx *ctx, const struct gc_action *a)
{
	switch (a->kind) {
	case GC_ACT_APPLY:
		return a->op != GC_OP_DELETE && a->resource != NULL &&
		       gc_drv_resource_converged(ctx, a->resource);
	case GC_ACT_ENTER_MAINTENANCE:
		return gc_drv_host_maintenance(ctx, a->target->name) == 1;
	case GC_ACT_EXIT_MAINTENANCE:
		return gc_drv_host_maintenance(ctx, a->target->name) == 0;
	default:
		return false;
	}
}

const struct gc_driver gc_driver_esxi = {
	.name = "esxi",
	.kind = GC_TARGET_ESXI,
	.connect = esxi_connect,
	.observe = esxi_observe,
	.apply = esxi_apply,
	.apply_batch = esxi_apply_batch,
	.batchable = esxi_batchable,
	.already_done = esxi_already_done,
	.boot_time = esxi_boot_time,
	.lease_get = esxi_lease_get,
	.lease_taken = esxi_lease_taken,
	.lease_set = esxi_lease_set,
	.lease_clear_ours = esxi_lease_clear_ours,
	.lease_take = esxi_lease_take,
	.lease_in_step = esxi_lease_in_step,
	.disconnect = esxi_disconnect,
};
