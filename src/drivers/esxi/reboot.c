/*
 * reboot.c - the ESXi driver's reboot: the command, the wait for the host to
 * come back with evidence that it went down, and the read-back after it.
 *
 * The batch of changes before a reboot reads the host's uptime as its last
 * command (driver.c); REBOOT sends `esxcli system shutdown reboot` and
 * expects the connection to drop.  WAIT_HOST reconnects every poll period
 * and asks `esxcli system stats uptime get`, one exec a poll: a host that
 * answers with an uptime below what it would have without a reboot went
 * down (rebooted()); one that keeps answering with the old uptime gets the
 * reboot again after a grace, at most twice.  When the executor hands the
 * wait over with the VERIFY (and the exit) after it, each poll carries the
 * read-back behind a guard the host's own shell runs
 * (gc_esxi_script_guarded): the read-back, which leaves maintenance mode,
 * runs only on a host that rebooted, and the poll that finds the host back
 * is its read-back too.  VERIFY re-observes until nothing is pending and
 * every resource holds its desired values, or its own deadline passes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gc/esxi.h"
#include "gc/ssh.h"
#include "gc/sys/driver.h"
#include "esxi_int.h"

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
int esxi_send_reboot(struct esxi_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	int rc;

	if (!c->uptime_read)
		c->uptime_before_us = read_uptime(c, c->ssh, false);
	c->uptime_read = false;
	if (!gc_ssh_alive(c->ssh)) /* lost before the reboot went out: retry it */
		return gc_error_set(err, GC_ENET, "host '%s': connection lost before the reboot",
				    c->target->name);
	c->reboot_sent_ns = gc_now_ns();
	rc = esxi_run_change(c, ctx, GC_ESXI_CMD_REBOOT, NULL, err);
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
	return (esxi_has_sriov(c) ? GC_ESXI_OBS_SRIOV : 0) | (exit_mm ? GC_ESXI_OBS_EXIT_MM : 0) |
	       (exit_mm && lock != NULL ? GC_ESXI_OBS_LEASE_CLEAR : 0);
}

/*
 * One poll on the new connection c->ssh: the host's uptime (*up_us, -1
 * when it gave none), and with rb the read-back behind the guard, which
 * runs only when the host's own shell finds the uptime below what a host
 * that did not reboot has now.  Returns 1 when the read-back ran (its
 * outcome kept for esxi_verify), 0 when it did not, -1 when the poll failed
 * (why in last).
 */
static int poll_once(struct esxi_conn *c, struct gc_drv_ctx *ctx, const struct esxi_readback *rb,
		     int64_t *up_us, char *last, size_t lastsz)
{
	struct gc_error e = GC_ERROR_INIT;
	struct gc_ssh_result res;
	long long bound = -1;

	if (rb != NULL && c->uptime_before_us >= 0)
		bound = c->uptime_before_us + (long long)((gc_now_ns() - c->reboot_sent_ns) / 1000u) -
			REBOOT_MARGIN_US;
	if (bound > 0) {
		struct esxi_guard g = {bound, -1, false};
		struct gc_buf problems = GC_BUF_INIT;
		/* asked at each poll: whether the exit may clear the lease too
		 * can change while the host reboots (other targets finish) */
		const char *lock = rb->exit_mm ? gc_drv_lease_release_lock(ctx, c->target) : NULL;
		int rc;

		gc_buf_free(&c->readback_words);
		rc = esxi_observe_leased(c, ctx, &problems, readback_flags(c, rb->exit_mm, lock), lock, NULL,
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
int esxi_wait_host(struct esxi_conn *c, struct gc_drv_ctx *ctx, const struct esxi_readback *rb,
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

		esxi_sleep_ms(poll);
		gc_drv_note(ctx, c->target, "waiting for the host to come back (%.0f s)",
			    (double)(gc_now_ns() - t0) / 1e9);
		if (esxi_ssh_open(&c->ssh, ctx, c->target, poll * 2 > 5000 ? poll * 2 : 5000, &e) != 0) {
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
		if (esxi_send_reboot(c, ctx, err) != 0)
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
	if (!esxi_has_sriov(c))
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
int esxi_verify(struct esxi_conn *c, struct gc_drv_ctx *ctx, bool exit_mm, int *exit_rc,
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

			rc = esxi_observe_leased(c, ctx, &problems, readback_flags(c, exit_mm && first, lock),
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
		esxi_sleep_ms(poll);
	}
}

int esxi_boot_time(void *conn, struct gc_drv_ctx *ctx, double *boot_s, struct gc_error *err)
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
