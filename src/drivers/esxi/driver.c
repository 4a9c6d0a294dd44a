/*
 * driver.c - the ESXi driver: struct gc_driver over gc_ssh.
 *
 * One SSH connection per host per run.  Observation is one exec of the
 * marker-framed batch (observe.c).  The changes the executor finds ready
 * together (entering maintenance mode and the host's changes, or changes
 * and leaving it) go out as one exec of a marker-framed `&&` chain
 * (batch.c), each command from commands.c, so each one's failure is still
 * reported with the device's own words and nothing after it is sent.
 * REBOOT expects the connection to drop (the batch before it read the
 * uptime); WAIT_HOST reconnects until the host answers `esxcli system
 * stats uptime get`, one exec a poll, with an uptime that shows it went
 * down.  When the executor hands WAIT_HOST over with the VERIFY (and the
 * exit) after it, each poll carries the read-back behind a guard the
 * host's shell runs (gc_esxi_script_guarded): the poll that finds the host
 * rebooted is its read-back too.  VERIFY re-observes until nothing is pending any more and
 * every resource of the host holds its desired values, or its own deadline
 * (verify_timeout_ms, not the reboot's) passes.  Every exec is counted for
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

#define CMD_UPTIME "esxcli system stats uptime get"
#define MAX_REBOOT_RESENDS 2
#define REBOOT_MARGIN_US 250000

/* Every exec to the host goes through here, counted (`poll`: while it reboots). */
int esxi_host_exec(struct esxi_conn *c, struct gc_ssh_conn *ssh, const char *cmd, bool poll,
		     struct gc_ssh_result *res, struct gc_error *err)
{
	gc_drv_count_exec(c->ctx, c->target, poll);
	c->nexec++;
	return gc_ssh_exec(ssh, cmd, res, err);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static int ssh_open(struct gc_ssh_conn **out, struct gc_drv_ctx *ctx, const struct gc_target *t,
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
	int rc = ssh_open(&c->ssh, ctx, t, 0, err);

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
static bool has_sriov(const struct esxi_conn *c)
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

/* The read-back a reboot poll carries (gc_esxi_script_guarded): bound_us,
 * the guard's bound; what came back: the uptime it printed (-1 when none),
 * and whether the read-back ran (the guard found the host rebooted). */
struct guard {
	long long bound_us;
	long long uptime_us;
	bool ran;
};

/* One observation exec; flags: gc_esxi_script's (the SR-IOV list and the
 * exit of the read-back, the lease of the apply's observation), with the
 * lease taken (take, with GC_ESXI_OBS_LEASE) or cleared after the exit
 * (GC_ESXI_OBS_LEASE_CLEAR): lock is ours.  *stderr_out (may be NULL): the
 * exec's last line of stderr, the exit's words when it was refused.
 * guard (may be NULL): behind a reboot poll's guard, counted as a poll
 * unless the read-back ran; when it did not, nothing is read (0). */
static int observe_leased(struct esxi_conn *c, struct gc_drv_ctx *ctx, struct gc_buf *problems,
			  unsigned flags, const char *lock, const char *take, struct guard *guard,
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
	if (rc != 0) { /* named as a connection that fails is (ssh_open) */
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
	rc = observe_leased(c, ctx, problems, GC_ESXI_OBS_LEASE, lock, take, NULL, NULL, err);
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
static int run_change(struct esxi_conn *c, struct gc_drv_ctx *ctx, const char *cmd,
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

/* Microseconds since boot, as `esxcli system stats uptime get` answered; -1 if unknown. */
static int64_t parse_uptime(const struct gc_ssh_result *res)
{
	char *end;
	long long v;

	if (res->exit_status != 0)
		return -1;
	v = strtoll(res->out, &end, 10);
	return end != res->out && v >= 0 ? v : -1;
}

/* The same, read now. */
static int64_t read_uptime(struct esxi_conn *c, struct gc_ssh_conn *ssh, bool poll)
{
	struct gc_error e = GC_ERROR_INIT;
	struct gc_ssh_result res;
	int64_t us;

	if (esxi_host_exec(c, ssh, CMD_UPTIME, poll, &res, &e) != 0)
		return -1;
	us = parse_uptime(&res);
	gc_ssh_result_free(&res);
	return us;
}

/*
 * The uptime before the reboot is the evidence WAIT_HOST compares with.
 * The batch of changes before a reboot reads it as its last command
 * (uptime_read), so the reboot goes out alone; otherwise (a resumed run
 * whose first step is the reboot) it is read here first.  A reading from
 * earlier in the same boot is as good as one just before: without a
 * reboot the uptime only grows (rebooted()).
 */
static int send_reboot(struct esxi_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	int rc;

	if (!c->uptime_read)
		c->uptime_before_us = read_uptime(c, c->ssh, false);
	c->uptime_read = false;
	if (!gc_ssh_alive(c->ssh)) /* lost before the reboot went out: retry it */
		return gc_error_set(err, GC_ENET, "host '%s': connection lost before the reboot",
				    c->target->name);
	c->reboot_sent_ns = gc_now_ns();
	rc = run_change(c, ctx, GC_ESXI_CMD_REBOOT, NULL, err);
	if (rc == GC_ENET || rc == GC_ETIMEOUT) {
		gc_error_clear(err); /* the host dropped us: the reboot, or a fault (WAIT_HOST tells) */
		rc = 0;
	}
	return rc;
}

/* Did the host boot since the reboot was sent, by its uptime now_us?
 * 1 yes, 0 no, -1 cannot tell. */
static int rebooted(const struct esxi_conn *c, int64_t now_us)
{
	int64_t since_us;

	if (c->uptime_before_us < 0 || now_us < 0)
		return -1;
	since_us = (int64_t)((gc_now_ns() - c->reboot_sent_ns) / 1000u);
	/* Without a reboot, uptime now = uptime before + time since (the boot time
	 * did not move); after one, the boot is later than the reboot command.
	 * REBOOT_MARGIN_US covers the latency of the two uptime reads. */
	return now_us + REBOOT_MARGIN_US < c->uptime_before_us + since_us;
}

/* The read-back's flags: exit_mm, its first, which leaves maintenance mode;
 * lock, the lease's when the exit is the host's last step. */
static unsigned readback_flags(const struct esxi_conn *c, bool exit_mm, const char *lock)
{
	return (has_sriov(c) ? GC_ESXI_OBS_SRIOV : 0) | (exit_mm ? GC_ESXI_OBS_EXIT_MM : 0) |
	       (exit_mm && lock != NULL ? GC_ESXI_OBS_LEASE_CLEAR : 0);
}

/* What the read-back after the wait is to do (esxi_apply_batch), when a
 * VERIFY follows: leave maintenance mode after it (the EXIT after that). */
struct readback {
	bool exit_mm;
};

/*
 * One poll on the new connection c->ssh: the host's uptime (*up_us, -1
 * when it gave none), and with rb the read-back behind the guard, which
 * runs only when the host's own shell finds the uptime below what a host
 * that did not reboot has now.  Returns 1 when the read-back ran (its
 * outcome kept for verify), 0 when it did not, -1 when the poll failed
 * (why in last).
 */
static int poll_once(struct esxi_conn *c, struct gc_drv_ctx *ctx, const struct readback *rb,
		     int64_t *up_us, char *last, size_t lastsz)
{
	struct gc_error e = GC_ERROR_INIT;
	struct gc_ssh_result res;
	long long bound = -1;

	if (rb != NULL && c->uptime_before_us >= 0)
		bound = c->uptime_before_us + (long long)((gc_now_ns() - c->reboot_sent_ns) / 1000u) -
			REBOOT_MARGIN_US;
	if (bound > 0) {
		struct guard g = {bound, -1, false};
		struct gc_buf problems = GC_BUF_INIT;
		/* asked at each poll: whether the exit may clear the lease too
		 * can change while the host reboots (other targets finish) */
		const char *lock = rb->exit_mm ? gc_drv_lease_release_lock(ctx, c->target) : NULL;
		int rc;

		gc_buf_free(&c->readback_words);
		rc = observe_leased(c, ctx, &problems, readback_flags(c, rb->exit_mm, lock), lock, NULL,
				    &g, &c->readback_words, &e);
		gc_buf_free(&problems);
		if (g.ran) {
			c->readback_done = true;
			c->readback_rc = rc;
			c->readback_err = e;
			return 1;
		}
		*up_us = g.uptime_us;
		if (rc != 0 || g.uptime_us < 0) {
			snprintf(last, lastsz, "%s", rc != 0 ? e.msg : "no uptime in its answer");
			return -1;
		}
		return 0;
	}
	/* one exec a poll: a host whose esxcli answers is up, and its uptime
	 * says whether it went down */
	if (esxi_host_exec(c, c->ssh, CMD_UPTIME, true, &res, &e) != 0) {
		snprintf(last, lastsz, "%s", e.msg);
		return -1;
	}
	if (res.exit_status != 0) {
		snprintf(last, lastsz, "'%s' exited %d", CMD_UPTIME, res.exit_status);
		gc_ssh_result_free(&res);
		return -1;
	}
	*up_us = parse_uptime(&res);
	gc_ssh_result_free(&res);
	return 0;
}

/* Until the host answers again after the reboot, with evidence that it went
 * down; rb (may be NULL): the read-back right after, carried by the poll
 * that finds it back (poll_once). */
static int wait_host(struct esxi_conn *c, struct gc_drv_ctx *ctx, const struct readback *rb,
		     struct gc_error *err)
{
	const struct gc_drv_settings *set = gc_drv_settings(ctx);
	unsigned timeout = set->reboot_timeout_ms ? set->reboot_timeout_ms : 20u * 60 * 1000;
	unsigned poll = set->reboot_poll_ms ? set->reboot_poll_ms : 2000;
	/* a host may keep answering for a while before it goes down */
	uint64_t grace_ns = (uint64_t)(poll * 30u < 2000u ? 2000u : poll * 30u > 120000u ? 120000u : poll * 30u) * 1000000u;
	uint64_t t0 = gc_now_ns(), deadline = t0 + (uint64_t)timeout * 1000000u;
	char last[GC_ERROR_MSG_MAX] = "no answer";

	gc_ssh_free(c->ssh);
	c->ssh = NULL;
	c->readback_done = false;
	while (gc_now_ns() < deadline) {
		struct gc_error e = GC_ERROR_INIT;
		int64_t up = -1;
		int booted;

		sleep_ms(poll);
		gc_drv_note(ctx, c->target, "waiting for the host to come back (%.0f s)",
			    (double)(gc_now_ns() - t0) / 1e9);
		if (ssh_open(&c->ssh, ctx, c->target, poll * 2 > 5000 ? poll * 2 : 5000, &e) != 0) {
			c->ssh = NULL;
			snprintf(last, sizeof(last), "%s", e.msg);
			if (e.code == GC_EHOSTKEY || e.code == GC_EAUTH) {
				*err = e; /* a different host answered, or credentials changed */
				return e.code;
			}
			continue;
		}
		booted = poll_once(c, ctx, rb, &up, last, sizeof(last));
		if (booted == 0)
			booted = rebooted(c, up);
		else if (booted < 0)
			booted = 0;
		if (booted != 0) /* booted, or no way to tell: VERIFY reads the result */
			return 0;
		/* no answer, or up and never went down (yet: a host may keep
		 * answering for a while before it goes down) */
		if (up < 0 || gc_now_ns() - c->reboot_sent_ns < grace_ns) {
			gc_ssh_free(c->ssh);
			c->ssh = NULL;
			continue;
		}
		if (c->reboot_resends >= MAX_REBOOT_RESENDS) {
			gc_ssh_free(c->ssh);
			c->ssh = NULL;
			return gc_error_set(err, GC_EREMOTE,
					    "host '%s' did not reboot after %u reboot commands",
					    c->target->name, c->reboot_resends + 1);
		}
		c->reboot_resends++;
		gc_drv_note(ctx, c->target, "the host did not go down: sending the reboot again");
		if (send_reboot(c, ctx, err) != 0)
			return err->code;
		gc_ssh_free(c->ssh);
		c->ssh = NULL;
	}
	return gc_error_set(err, GC_ETIMEOUT, "host '%s' did not come back within %u s after reboot (%s)",
			    c->target->name, timeout / 1000, last);
}

/* After the reboot that loads nmlx5_core's max_vfs: the VFs exist (sriov.c),
 * as the read-back's own batch listed them. */
static int check_vfs(struct esxi_conn *c, struct gc_error *err)
{
	if (!has_sriov(c))
		return 0;
	if (c->facts.sriov_xml == NULL)
		return gc_error_set(err, GC_EREMOTE, "host '%s': esxcli network sriovnic list failed",
				    c->target->name);
	return gc_esxi_check_vfs(c->target->host, c->facts.sriov_xml, c->facts.sriov_len, err);
}

/* What the read-back's exit of maintenance mode came to (its first exec):
 * 0 out of it, as asked or as the same exec read it already was. */
static int exit_outcome(struct esxi_conn *c, struct gc_drv_ctx *ctx, const struct gc_buf *words,
			struct gc_error *err)
{
	struct gc_drv_host_state hs = {false, c->facts.reboot_pending, c->facts.reboot_pending_why};

	if (c->facts.exit_sent || (c->facts.exit_failed && !c->facts.maintenance)) {
		gc_drv_host_state(ctx, c->target->name, &hs);
		return 0;
	}
	return gc_error_set(err, GC_EREMOTE, "host '%s': command '%s' failed: %s", c->target->name,
			    GC_ESXI_CMD_EXIT_MAINTENANCE,
			    words->len > 0 ? gc_buf_str(words) : "no answer");
}

/*
 * The read-back after a reboot, asked again until it matches the spec or
 * its deadline passes.  exit_mm: the first read-back also leaves
 * maintenance mode, after all its reads, in the same exec; *exit_rc and
 * exit_err are then that command's outcome, whatever the read-back's.  A
 * read-back that fails has left maintenance mode all the same: the
 * executor's recovery would take the host out after the failure anyway
 * (recover.c), and finds it out.
 */
static int verify(struct esxi_conn *c, struct gc_drv_ctx *ctx, bool exit_mm, int *exit_rc,
		  struct gc_error *exit_err, struct gc_error *err)
{
	const struct gc_drv_settings *set = gc_drv_settings(ctx);
	/* its own deadline: the host is up, only a read-back can still change */
	unsigned timeout = set->verify_timeout_ms ? set->verify_timeout_ms : 5u * 60 * 1000;
	unsigned poll = set->reboot_poll_ms ? set->reboot_poll_ms : 2000;
	uint64_t t0 = gc_now_ns(), deadline = t0 + (uint64_t)timeout * 1000000u;
	bool first = true;

	for (;;) {
		struct gc_buf problems = GC_BUF_INIT, words = GC_BUF_INIT;
		const struct gc_resource *bad = NULL;
		int rc;
		size_t i;

		if (first && c->readback_done) { /* the poll that found the host back did it */
			c->readback_done = false;
			rc = c->readback_rc;
			if (rc != 0)
				*err = c->readback_err;
			gc_buf_put(&words, gc_buf_str(&c->readback_words), c->readback_words.len);
		} else {
			/* the host's last step: the lease goes with the exit (lease.c) */
			const char *lock = exit_mm && first ? gc_drv_lease_release_lock(ctx, c->target)
							    : NULL;

			rc = observe_leased(c, ctx, &problems, readback_flags(c, exit_mm && first, lock),
					    lock, NULL, NULL, &words, err);
		}

		gc_buf_free(&problems);
		if (rc == 0 && exit_mm && first)
			*exit_rc = exit_outcome(c, ctx, &words, exit_err);
		gc_buf_free(&words);
		if (rc != 0)
			return rc;
		first = false;
		for (i = 0; i < c->nres && bad == NULL; i++) {
			if (!gc_drv_resource_converged(ctx, c->res[i]))
				bad = c->res[i];
		}
		if (!c->facts.reboot_pending && bad == NULL)
			return check_vfs(c, err);
		if (gc_now_ns() >= deadline || gc_drv_interrupted(ctx)) {
			char why[64];

			if (gc_drv_interrupted(ctx))
				snprintf(why, sizeof(why), "verify interrupted");
			else
				snprintf(why, sizeof(why), "verify timeout %u s", timeout / 1000);
			if (bad != NULL)
				return gc_error_set(err, GC_EREMOTE,
						    "host '%s': after the reboot '%s' still differs from the spec (%s)",
						    c->target->name, bad->id, why);
			return gc_error_set(err, GC_EREMOTE,
					    "host '%s': after the reboot still pending: %s (%s)",
					    c->target->name, c->facts.reboot_pending_why, why);
		}
		gc_drv_note(ctx, c->target, "verifying (%.0f s of %u s): %s",
			    (double)(gc_now_ns() - t0) / 1e9, timeout / 1000,
			    c->facts.reboot_pending ? c->facts.reboot_pending_why : bad->id);
		sleep_ms(poll);
	}
}

static int esxi_boot_time(void *conn, struct gc_drv_ctx *ctx, double *boot_s, struct gc_error *err)
{
	struct esxi_conn *c = conn;
	struct timespec now;
	int64_t up_us;

	(void)ctx;
	up_us = read_uptime(c, c->ssh, false);
	clock_gettime(CLOCK_REALTIME, &now); /* after the reply: the boot looks later, never earlier */
	if (up_us < 0)
		return gc_error_set(err, GC_EREMOTE, "host '%s': cannot read '%s'", c->target->name,
				    CMD_UPTIME);
	*boot_s = (double)now.tv_sec + (double)now.tv_nsec / 1e9 - (double)up_us / 1e6;
	return 0;
}

/* ---------------------------------------------------------------- batches of changes */

/* What goes in a batch: a change, entering or leaving maintenance mode,
 * and the read-back, which takes the exit right after it into its own exec
 * (verify).  The reboot and the wait each need their own exchange. */
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
 * follows (send_reboot): a failure of that read fails nothing. */
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
			rc = run_change(c, ctx, cmds[i], tolerate[i], err);
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
 * (verify).  When the read-back fails the exit has gone out all the same,
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
			 * that finds the host back carries them (poll_once) */
			bool with_verify = i + 1 < n && acts[i + 1]->kind == GC_ACT_VERIFY;
			struct readback rb = {with_verify && i + 2 < n &&
					      acts[i + 2]->kind == GC_ACT_EXIT_MAINTENANCE};

			rc = wait_host(c, ctx, with_verify ? &rb : NULL, err);
			i += rc == 0 ? 1 : 0;
			continue;
		}
		if (acts[i]->kind == GC_ACT_VERIFY) {
			bool with_exit = i + 1 < n && acts[i + 1]->kind == GC_ACT_EXIT_MAINTENANCE;
			struct gc_error exit_err = GC_ERROR_INIT;
			int exit_rc = -1; /* not sent */

			gc_drv_note(ctx, c->target, "%s", with_exit ? "verifying, then leaving maintenance mode"
							     : "verifying");
			rc = verify(c, ctx, with_exit, &exit_rc, &exit_err, err);
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
		rc = run_change(c, ctx, cmd, NULL, err);
		free(cmd);
		return rc;
	case GC_ACT_ENTER_MAINTENANCE:
		gc_drv_maintenance_left(ctx, c->target, false);
		if (lease_pending(c, ctx)) {
			size_t ndone;

			return change_batch(conn, ctx, &a, 1, &ndone, err);
		}
		gc_drv_note(ctx, c->target, "entering maintenance mode");
		return run_change(c, ctx, GC_ESXI_CMD_ENTER_MAINTENANCE, "already enabled", err);
	case GC_ACT_EXIT_MAINTENANCE:
		if (lease_pending(c, ctx)) {
			size_t ndone;

			return change_batch(conn, ctx, &a, 1, &ndone, err);
		}
		gc_drv_note(ctx, c->target, "leaving maintenance mode");
		return run_change(c, ctx, GC_ESXI_CMD_EXIT_MAINTENANCE, "already disabled", err);
	case GC_ACT_REBOOT:
		gc_drv_note(ctx, c->target, "rebooting");
		c->reboot_resends = 0;
		return send_reboot(c, ctx, err);
	case GC_ACT_WAIT_HOST:
		return wait_host(c, ctx, NULL, err);
	case GC_ACT_VERIFY:
		gc_drv_note(ctx, c->target, "verifying");
		return verify(c, ctx, false, NULL, NULL, err);
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
