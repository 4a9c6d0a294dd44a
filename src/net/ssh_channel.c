/*
 * ssh_channel.c - what runs on an SSH connection (ssh.c opens it): one exec
 * per channel, its stdin fed from a file or ended on an interrupt, stdout and
 * stderr read to EOF under the command's deadline; and the PTY shell that the
 * Onyx CLI is driven through.  Every wait is gc_ssh_wait_socket()'s, so
 * keepalives, deadlines and interrupts behave as they do while connecting.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libssh2.h>

#include "gc/ssh.h"

#include "ssh_int.h"

/* ---------------------------------------------------------------- exec */

static int dead_fail(struct gc_ssh_conn *c, struct gc_error *err)
{
	return gc_error_set(err, GC_ENET, "ssh %s: the connection is closed after an earlier "
			    "failure; reconnect", c->target);
}

static LIBSSH2_CHANNEL *open_channel(struct gc_ssh_conn *c, uint64_t deadline, unsigned ms,
				     int *rcp, struct gc_error *err)
{
	LIBSSH2_CHANNEL *ch;

	for (;;) {
		ch = libssh2_channel_open_session(c->session);
		if (ch != NULL) {
			*rcp = 0;
			return ch;
		}
		if (libssh2_session_last_errno(c->session) != LIBSSH2_ERROR_EAGAIN) {
			*rcp = gc_ssh_fail(c, libssh2_session_last_errno(c->session),
					"opening a channel", err);
			return NULL;
		}
		*rcp = gc_ssh_wait_socket(c, deadline, err);
		if (*rcp == GC_ETIMEOUT) {
			*rcp = gc_ssh_timeout_fail(c, "opening a channel", ms, err);
			return NULL;
		}
		if (*rcp < 0)
			return NULL;
	}
}

static void channel_discard(struct gc_ssh_conn *c, LIBSSH2_CHANNEL *ch)
{
	/* On a live connection the close gets a moment. */
	uint64_t deadline = gc_ssh_deadline_after(500);
	int i;

	gc_ssh_shut_if_dead(c);
	for (i = 0; i < 1000 && libssh2_channel_free(ch) == LIBSSH2_ERROR_EAGAIN; i++) {
		if (c->alive && gc_ssh_wait_socket(c, deadline, NULL) == 0)
			continue;
		c->alive = false;
		gc_ssh_shut_if_dead(c);
	}
}

struct sink {
	struct gc_buf buf;
	bool truncated;
};

static void sink_put(struct sink *s, const char *p, size_t n, size_t cap)
{
	if (s->buf.len + n > cap) {
		n = cap - s->buf.len;
		s->truncated = true;
	}
	if (n > 0)
		gc_buf_put(&s->buf, p, n);
}

/* What was read goes to the result (the sinks are left empty). */
static void take_output(struct gc_ssh_result *result, struct sink *out, struct sink *errs)
{
	result->out_len = out->buf.len;
	result->out = gc_buf_take(&out->buf);
	result->out_truncated = out->truncated;
	result->err_len = errs->buf.len;
	result->err = gc_buf_take(&errs->buf);
	result->err_truncated = errs->truncated;
}

/*
 * Feed the command's standard input from `in` (a file, read to its end),
 * then send EOF.  Output is drained while writing so a command that talks
 * back cannot fill the window and stall us.  Returns 0 or a gc code.
 */
static int feed_stdin(struct gc_ssh_conn *c, LIBSSH2_CHANNEL *ch, int in, struct sink *out,
		      struct sink *errs, uint64_t deadline, unsigned ms, struct gc_error *err)
{
	char buf[32768], chunk[32768];
	int rc;

	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf)), off = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return gc_error_set(err, GC_EIO, "ssh %s: reading the file to send: %s",
					    c->target, strerror(errno));
		if (n == 0)
			break;
		while (off < n) {
			ssize_t w = libssh2_channel_write(ch, buf + off, (size_t)(n - off));

			if (w > 0) {
				off += w;
				continue;
			}
			if (w != LIBSSH2_ERROR_EAGAIN)
				return gc_ssh_fail(c, (int)w, "sending a file", err);
			for (int stream = 0; stream < 2; stream++) {
				ssize_t r = libssh2_channel_read_ex(ch, stream, chunk, sizeof(chunk));

				if (r > 0)
					sink_put(stream ? errs : out, chunk, (size_t)r, c->max_output);
			}
			rc = gc_ssh_wait_socket(c, deadline, err);
			if (rc == GC_ETIMEOUT)
				return gc_ssh_timeout_fail(c, "sending a file", ms, err);
			if (rc < 0)
				return rc;
		}
	}
	GC_SSH_RETRY(c, rc, libssh2_channel_send_eof(ch), deadline, err, "sending a file", ms);
	return rc == 0 ? 0 : gc_ssh_lib_fail(c, rc, "sending a file", err);
}

void (*gc_ssh_test_between_streams)(void);

/* Output of the channel's already in libssh2's queue, not yet read. */
static bool queued_output(LIBSSH2_CHANNEL *ch)
{
	unsigned long avail = 0;

	libssh2_channel_window_read_ex(ch, &avail, NULL);
	return avail > 0;
}

/* keep_partial: on a failure *result holds what was read (exit_status -1). */
static int exec_common(struct gc_ssh_conn *c, const char *command, int in, bool keep_partial,
		       struct gc_ssh_result *result, struct gc_error *err)
{
	LIBSSH2_CHANNEL *ch = NULL;
	struct sink out = {GC_BUF_INIT, false}, errs = {GC_BUF_INIT, false};
	char chunk[32768];
	unsigned ms = c->command_ms;
	uint64_t deadline = gc_ssh_deadline_after(ms);
	char *signame = NULL;
	size_t siglen = 0;
	bool eof_sent = in >= 0; /* a fed stdin has had its EOF */
	int rc;

	if (keep_partial) {
		memset(result, 0, sizeof(*result));
		result->exit_status = -1;
	}
	if (!c->alive) {
		rc = dead_fail(c, err);
		goto fail;
	}
	ch = open_channel(c, deadline, ms, &rc, err);
	if (ch == NULL)
		goto fail;
	atomic_fetch_add(&gc_ssh_stat_commands, 1);
	GC_SSH_RETRY(c, rc, libssh2_channel_exec(ch, command), deadline, err, "exec", ms);
	if (rc != 0) {
		rc = gc_ssh_lib_fail(c, rc, "exec request", err);
		goto fail;
	}
	if (in >= 0 && (rc = feed_stdin(c, ch, in, &out, &errs, deadline, ms, err)) != 0)
		goto fail;
	for (bool again = false;;) {
		bool progress = false;
		int stream;

		for (stream = 0; stream < 2; stream++) {
			ssize_t n = libssh2_channel_read_ex(ch, stream, chunk, sizeof(chunk));

			if (n > 0) {
				sink_put(stream ? &errs : &out, chunk, (size_t)n, c->max_output);
				progress = true;
			} else if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
				rc = gc_ssh_fail(c, (int)n, "reading command output", err);
				goto fail;
			}
			if (stream == 0 && gc_ssh_test_between_streams != NULL)
				gc_ssh_test_between_streams();
		}
		if (progress) {
			again = false;
			continue;
		}
		if (libssh2_channel_eof(ch))
			break;
		/* Each read takes all that the socket holds into libssh2's queue
		 * first: stderr's read can queue stdout's data (and the EOF, the
		 * status and the close behind it) that arrived after stdout's read
		 * found none.  Nothing more comes on the socket then, and a wait
		 * here lasted until the poll's timeout (the keepalive's 15 s, or
		 * the command timeout without one): read again first.  Once only:
		 * data of a stream no one reads (an extended type but stderr)
		 * stays queued, and must not make this loop spin. */
		if (!again && queued_output(ch)) {
			again = true;
			continue;
		}
		again = false;
		if (!eof_sent && c->interrupt != NULL && *c->interrupt) {
			/* the command's stdin ends: what it does then is its own */
			eof_sent = true;
			GC_SSH_RETRY(c, rc, libssh2_channel_send_eof(ch), deadline, err,
				     "sending EOF", ms);
			if (rc != 0) {
				rc = gc_ssh_lib_fail(c, rc, "sending EOF", err);
				goto fail;
			}
			continue;
		}
		rc = gc_ssh_wait_socket(c, deadline, err);
		if (rc == GC_ETIMEOUT) {
			rc = gc_ssh_timeout_fail(c, "command", ms, err);
			goto fail;
		}
		if (rc < 0)
			goto fail;
	}
	GC_SSH_RETRY(c, rc, libssh2_channel_close(ch), deadline, err, "closing the channel", ms);
	if (rc == 0)
		GC_SSH_RETRY(c, rc, libssh2_channel_wait_closed(ch), deadline, err,
			     "closing the channel", ms);
	if (rc != 0) {
		rc = gc_ssh_lib_fail(c, rc, "closing the channel", err);
		goto fail;
	}
	memset(result, 0, sizeof(*result));
	result->exit_status = libssh2_channel_get_exit_status(ch);
	if (libssh2_channel_get_exit_signal(ch, &signame, &siglen, NULL, NULL, NULL, NULL) == 0 &&
	    signame != NULL) {
		snprintf(result->exit_signal, sizeof(result->exit_signal), "%.*s", (int)siglen,
			 signame);
		result->exit_status = -1;
		libssh2_free(c->session, signame);
	}
	channel_discard(c, ch);
	take_output(result, &out, &errs);
	return 0;
fail:
	if (ch != NULL)
		channel_discard(c, ch);
	if (keep_partial) {
		take_output(result, &out, &errs);
		return rc;
	}
	gc_buf_free(&out.buf);
	gc_buf_free(&errs.buf);
	return rc;
}

int gc_ssh_exec(struct gc_ssh_conn *c, const char *command, struct gc_ssh_result *result,
		struct gc_error *err)
{
	return exec_common(c, command, -1, false, result, err);
}

int gc_ssh_exec_stdin(struct gc_ssh_conn *c, const char *command, int in,
		      struct gc_ssh_result *result, struct gc_error *err)
{
	return exec_common(c, command, in, false, result, err);
}

int gc_ssh_exec_partial(struct gc_ssh_conn *c, const char *command, struct gc_ssh_result *result,
			struct gc_error *err)
{
	return exec_common(c, command, -1, true, result, err);
}

void gc_ssh_result_free(struct gc_ssh_result *r)
{
	if (r == NULL)
		return;
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

/* ---------------------------------------------------------------- PTY shell */

int gc_ssh_shell_open(struct gc_ssh_shell **out, struct gc_ssh_conn *c, struct gc_error *err)
{
	LIBSSH2_CHANNEL *ch;
	unsigned ms = c->command_ms;
	uint64_t deadline = gc_ssh_deadline_after(ms);
	struct gc_ssh_shell *s;
	int rc;

	if (!c->alive)
		return dead_fail(c, err);
	ch = open_channel(c, deadline, ms, &rc, err);
	if (ch == NULL)
		return rc;
	GC_SSH_RETRY(c, rc, libssh2_channel_request_pty_ex(ch, "vt100", 5, NULL, 0, 511, 0, 0, 0),
		     deadline, err, "PTY request", ms);
	/* A PTY has one stream; should a server still send stderr, merge it
	 * rather than let it fill the window unread. */
	if (rc == 0)
		GC_SSH_RETRY(c, rc,
			     libssh2_channel_handle_extended_data2(ch,
								LIBSSH2_CHANNEL_EXTENDED_DATA_MERGE),
			     deadline, err, "shell setup", ms);
	if (rc == 0)
		GC_SSH_RETRY(c, rc, libssh2_channel_shell(ch), deadline, err, "shell request", ms);
	if (rc != 0) {
		rc = gc_ssh_lib_fail(c, rc, "opening a shell", err);
		channel_discard(c, ch);
		return rc;
	}
	atomic_fetch_add(&gc_ssh_stat_shells, 1);
	s = gc_xcalloc(1, sizeof(*s));
	s->conn = c;
	s->channel = ch;
	*out = s;
	return 0;
}

void gc_ssh_shell_close(struct gc_ssh_shell *s)
{
	if (s == NULL)
		return;
	channel_discard(s->conn, s->channel);
	free(s);
}

int gc_ssh_shell_write(struct gc_ssh_shell *s, const char *data, size_t n, struct gc_error *err)
{
	struct gc_ssh_conn *c = s->conn;
	unsigned ms = c->command_ms;
	uint64_t deadline = gc_ssh_deadline_after(ms);

	if (!c->alive)
		return dead_fail(c, err);
	while (n > 0) {
		ssize_t w = libssh2_channel_write(s->channel, data, n);

		if (w > 0) {
			data += w;
			n -= (size_t)w;
			continue;
		}
		if (w != LIBSSH2_ERROR_EAGAIN && w != 0)
			return gc_ssh_fail(c, (int)w, "writing to the shell", err);
		w = gc_ssh_wait_socket(c, deadline, err);
		if (w == GC_ETIMEOUT)
			return gc_ssh_timeout_fail(c, "writing to the shell", ms, err);
		if (w < 0)
			return (int)w;
	}
	return 0;
}

ssize_t gc_ssh_shell_read(struct gc_ssh_shell *s, char *buf, size_t n, int timeout_ms,
			  struct gc_error *err)
{
	struct gc_ssh_conn *c = s->conn;
	uint64_t deadline = gc_ssh_deadline_after(timeout_ms > 0 ? (unsigned)timeout_ms : 0);

	if (!c->alive)
		return dead_fail(c, err);
	for (;;) {
		ssize_t r = libssh2_channel_read(s->channel, buf, n);
		int w;

		if (r > 0)
			return r;
		if (r < 0 && r != LIBSSH2_ERROR_EAGAIN)
			return gc_ssh_fail(c, (int)r, "reading from the shell", err);
		if (libssh2_channel_eof(s->channel))
			return gc_error_set(err, GC_ENET, "ssh %s: the remote closed the shell",
					    c->target);
		w = gc_ssh_wait_socket(c, deadline, err);
		if (w == GC_ETIMEOUT)
			return 0;
		if (w < 0)
			return w;
	}
}

int gc_ssh_shell_read_until(struct gc_ssh_shell *s, gc_ssh_prompt_fn match, void *arg,
			    unsigned timeout_ms, struct gc_buf *buf, struct gc_error *err)
{
	uint64_t deadline = gc_ssh_deadline_after(timeout_ms);
	char chunk[8192];

	for (;;) {
		uint64_t now = gc_now_ns();
		ssize_t r;

		if (now >= deadline)
			return gc_error_set(err, GC_ETIMEOUT, "ssh %s: no prompt within %u ms",
					    s->conn->target, timeout_ms);
		r = gc_ssh_shell_read(s, chunk, sizeof(chunk),
				      (int)((deadline - now + 999999) / 1000000), err);
		if (r < 0)
			return (int)r;
		if (r == 0)
			continue;
		if (buf->len + (size_t)r > s->conn->max_output)
			return gc_error_set(err, GC_ENOMEM, "ssh %s: shell output exceeds %zu bytes",
					    s->conn->target, s->conn->max_output);
		gc_buf_put(buf, chunk, (size_t)r);
		if (match(gc_buf_str(buf), buf->len, arg))
			return 0;
	}
}
