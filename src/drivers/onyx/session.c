/*
 * session.c - an interactive Onyx CLI session over an abstract byte channel.
 *
 * Onyx has no exec channel worth using for configuration: the CLI is a shell
 * with modes (REAL-FORMATS B.1).  We write one command line, then read until
 * the prompt comes back at the end of the received bytes:
 *
 *     <host> [standalone: master] >                    user
 *     <host> [standalone: master] #                    enable
 *     <host> [standalone: master] (config) #           config
 *     <host> [standalone: master] (config pool roce) # sub-mode
 *
 * The bracket part is optional (docs write `switch (config) # `) and can be an
 * MLAG domain (`[dom: standby]`).  The first prompt teaches us the hostname;
 * after that a prompt must carry it, so show output that happens to end in
 * "# " is not taken for a prompt.  Bytes are normalised as they arrive: CR
 * and NUL dropped, ANSI escape sequences removed.  The echo of the command
 * (a PTY echoes; a pipe does not) is dropped when it is the first line.  Any
 * output line starting with '%' is the switch saying no (GC_EREMOTE, with its
 * own words, the switch name and the command).  Each command has a deadline
 * and an output cap.  The enable secret comes from an environment variable,
 * is written once to the channel and never logged or put in a message: what
 * the switch sends back has every occurrence of it masked before anyone
 * reads it (a switch may echo it, or answer `% Unrecognized command "..."`
 * when a prompt was mistaken for the password prompt).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/onyx.h"

#define DEFAULT_TIMEOUT_MS 30000
#define CLOSE_WAIT_MS 2000
#define MAX_CMD 1024

struct gc_onyx_session {
	struct gc_onyx_chan chan;
	char name[64];
	char host[64]; /* learned from the first prompt */
	enum gc_onyx_mode mode;
	char submode[96];
	char secret_env[128]; /* the enable secret's variable: its name, never its value */
	int timeout_ms;
	size_t max_output;
	void (*log)(void *log_ctx, const char *line_sent);
	void *log_ctx;
	struct gc_buf in; /* normalised bytes received, not yet consumed */
	int esc;          /* escape-sequence state: 0 none, 1 after ESC, 2 in CSI */
};

enum got { GOT_PROMPT, GOT_PASSWORD };

/* ---------------------------------------------------------------- prompt */

static bool host_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

/*
 * Parse a prompt line (without newline).  On success fills host, mode and
 * submode ("" unless a sub-mode, else e.g. "config pool roce").
 */
static bool parse_prompt(const char *s, size_t n, char *host, enum gc_onyx_mode *mode,
			 char *sub)
{
	char last;
	size_t e, i;

	if (n < 4 || n > 200 || s[n - 1] != ' ' || (s[n - 2] != '>' && s[n - 2] != '#') ||
	    s[n - 3] != ' ')
		return false;
	last = s[n - 2];
	e = n - 3; /* s[0..e) is "host [..] (..)" */
	sub[0] = '\0';
	*mode = last == '>' ? GC_ONYX_MODE_USER : GC_ONYX_MODE_ENABLE;
	if (e > 0 && s[e - 1] == ')') {
		size_t o = e - 1;

		while (o > 0 && s[o] != '(')
			o--;
		if (s[o] != '(' || last != '#' || o < 2 || s[o - 1] != ' ' || e - o - 2 < 6 ||
		    e - o - 2 >= 96 || strncmp(s + o + 1, "config", 6) != 0)
			return false;
		memcpy(sub, s + o + 1, e - o - 2);
		sub[e - o - 2] = '\0';
		*mode = strcmp(sub, "config") == 0 ? GC_ONYX_MODE_CONFIG : GC_ONYX_MODE_SUB;
		if (*mode == GC_ONYX_MODE_CONFIG)
			sub[0] = '\0';
		e = o - 1;
	}
	if (e > 0 && s[e - 1] == ']') {
		size_t o = e - 1;

		while (o > 0 && s[o] != '[')
			o--;
		if (s[o] != '[' || o < 2 || s[o - 1] != ' ' || !memchr(s + o, ':', e - o))
			return false;
		e = o - 1;
	}
	if (e == 0 || e >= 64)
		return false;
	for (i = 0; i < e; i++) {
		if (!host_char(s[i]))
			return false;
	}
	memcpy(host, s, e);
	host[e] = '\0';
	return true;
}

static bool is_password_prompt(const char *s, size_t n)
{
	static const char want[] = "password:";
	size_t k = sizeof(want) - 1, i;

	while (n > 0 && s[n - 1] == ' ')
		n--;
	if (n < k)
		return false;
	for (i = 0; i < k; i++) {
		if (tolower((unsigned char)s[n - k + i]) != want[i])
			return false;
	}
	return true;
}

/* ---------------------------------------------------------------- reading */

static void take_bytes(struct gc_onyx_session *s, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (s->esc == 1) {
			s->esc = c == '[' ? 2 : 0;
			continue;
		}
		if (s->esc == 2) {
			if (c >= 0x40 && c <= 0x7e)
				s->esc = 0;
			continue;
		}
		if (c == 0x1b) {
			s->esc = 1;
			continue;
		}
		if (c == '\r' || c == '\0' || c == '\a')
			continue;
		gc_buf_putc(&s->in, (char)c);
	}
}

/* Mask every occurrence of the enable secret in text (in place). */
static void mask_secret(const struct gc_onyx_session *s, char *text)
{
	const char *secret = s->secret_env[0] ? getenv(s->secret_env) : NULL;
	size_t n = secret ? strlen(secret) : 0;

	for (char *p = n ? strstr(text, secret) : NULL; p != NULL; p = strstr(p + n, secret))
		memset(p, '*', n);
}

/*
 * Read until the buffer ends in a prompt (or a password prompt when allowed).
 * *out gets everything before the prompt line (caller frees), the enable
 * secret masked.
 */
static int read_until(struct gc_onyx_session *s, char **out, enum got *got, bool allow_password,
		      const char *what, struct gc_error *err)
{
	uint64_t deadline = gc_now_ns() + (uint64_t)s->timeout_ms * 1000000u;
	char chunk[4096];

	for (;;) {
		const char *b = gc_buf_str(&s->in), *nl = strrchr(b, '\n');
		const char *tail = nl ? nl + 1 : b;
		size_t tn = s->in.len - (size_t)(tail - b);
		char host[64], sub[96];
		enum gc_onyx_mode mode;
		uint64_t now;
		ssize_t r;

		if (parse_prompt(tail, tn, host, &mode, sub) &&
		    (s->host[0] == '\0' || strcmp(host, s->host) == 0)) {
			snprintf(s->host, sizeof(s->host), "%s", host);
			snprintf(s->submode, sizeof(s->submode), "%s", sub);
			s->mode = mode;
			*got = GOT_PROMPT;
			goto found;
		}
		if (allow_password && is_password_prompt(tail, tn)) {
			*got = GOT_PASSWORD;
			goto found;
		}
		if (s->in.len > s->max_output)
			return gc_error_set(err, GC_ENOMEM,
					    "switch '%s': output of '%s' exceeds %zu bytes", s->name,
					    what, s->max_output);
		now = gc_now_ns();
		if (now >= deadline)
			return gc_error_set(err, GC_ETIMEOUT,
					    "switch '%s': no prompt after '%s' within %d ms", s->name,
					    what, s->timeout_ms);
		r = s->chan.read(s->chan.ctx, chunk, sizeof(chunk),
				 (int)((deadline - now) / 1000000u) + 1, err);
		if (r < 0) {
			gc_error_prefix(err, "switch '%s': while waiting after '%s': ", s->name,
					what);
			return (int)r;
		}
		take_bytes(s, chunk, (size_t)r);
		continue;
	found:
		*out = gc_xstrndup(b, (size_t)(tail - b));
		mask_secret(s, *out);
		gc_buf_reset(&s->in);
		return 0;
	}
}

static int send_line(struct gc_onyx_session *s, const char *line, bool secret,
		     struct gc_error *err)
{
	char *l = gc_xasprintf("%s\n", line);
	int rc;

	if (s->log)
		s->log(s->log_ctx, secret ? "********" : line);
	rc = s->chan.write(s->chan.ctx, l, strlen(l), err);
	/* wipe: the secret must not linger in freed memory */
	memset(l, 0, strlen(l));
	free(l);
	if (rc < 0)
		gc_error_prefix(err, "switch '%s': ", s->name);
	return rc < 0 ? rc : 0;
}

/* Drop the echoed command line; trim trailing newlines. */
static void strip_echo(char *text, const char *cmd)
{
	char *nl = strchr(text, '\n');
	size_t n;

	if (nl && (size_t)(nl - text) == strlen(cmd) && strncmp(text, cmd, strlen(cmd)) == 0)
		memmove(text, nl + 1, strlen(nl + 1) + 1);
	else if (nl == NULL && strcmp(text, cmd) == 0)
		text[0] = '\0';
	n = strlen(text);
	while (n > 0 && text[n - 1] == '\n')
		text[--n] = '\0';
}

/* The '%' message of an output, from the first '%' line on, or NULL. */
static char *remote_error(const char *text)
{
	const char *p = text;
	struct gc_buf b = GC_BUF_INIT;

	for (;;) {
		const char *q = p;

		while (*q == ' ')
			q++;
		if (*q == '%' || b.len) {
			const char *e = strchr(q, '\n');
			size_t n = e ? (size_t)(e - q) : strlen(q);

			if (n && b.len)
				gc_buf_putc(&b, ' ');
			if (b.len < 600)
				gc_buf_put(&b, q, n);
		}
		p = strchr(p, '\n');
		if (p == NULL)
			break;
		p++;
	}
	return b.len ? gc_buf_take(&b) : NULL;
}

static bool safe_line(const char *cmd)
{
	size_t n = strlen(cmd);

	if (n == 0 || n >= MAX_CMD)
		return false;
	for (; *cmd; cmd++) {
		if ((unsigned char)*cmd < 0x20 || (unsigned char)*cmd > 0x7e)
			return false;
	}
	return true;
}

/* ---------------------------------------------------------------- public */

int gc_onyx_session_exec(struct gc_onyx_session *s, char **out, const char *cmd,
			 struct gc_error *err)
{
	char *text = NULL, *msg;
	enum got got;
	int rc;

	if (!safe_line(cmd))
		return gc_error_set(err, GC_EINVAL, "switch '%s': refusing command line '%.60s'",
				    s->name, cmd);
	rc = send_line(s, cmd, false, err);
	if (rc)
		return rc;
	rc = read_until(s, &text, &got, false, cmd, err);
	if (rc)
		return rc;
	strip_echo(text, cmd);
	msg = remote_error(text);
	if (msg) {
		rc = gc_error_set(err, GC_EREMOTE, "switch '%s': command '%s' failed: %s", s->name,
				  cmd, msg);
		free(msg);
		free(text);
		return rc;
	}
	if (out)
		*out = text;
	else
		free(text);
	return 0;
}

static int enable(struct gc_onyx_session *s, struct gc_error *err)
{
	const char *env = s->secret_env[0] ? s->secret_env : NULL;
	const char *secret = env ? getenv(env) : NULL;
	char *text = NULL, *msg;
	enum got got;
	int rc;

	rc = send_line(s, "enable", false, err);
	if (rc == 0)
		rc = read_until(s, &text, &got, true, "enable", err);
	if (rc)
		return rc;
	free(text);
	text = NULL;
	if (got == GOT_PASSWORD) {
		if (secret == NULL || *secret == '\0')
			return gc_error_set(err, GC_EAUTH,
					    "switch '%s': enable asks for a password but %s%s%s", s->name,
					    env ? "environment variable '" : "no enable_password_env is set",
					    env ? env : "", env ? "' is not set" : "");
		rc = send_line(s, secret, true, err);
		if (rc == 0)
			rc = read_until(s, &text, &got, true, "enable password", err);
		if (rc)
			return rc;
		if (got == GOT_PASSWORD) {
			free(text);
			return gc_error_set(err, GC_EAUTH, "switch '%s': enable password rejected",
					    s->name);
		}
	}
	msg = text ? remote_error(text) : NULL;
	free(text);
	if (msg || s->mode != GC_ONYX_MODE_ENABLE) {
		rc = gc_error_set(err, GC_EAUTH, "switch '%s': enable failed%s%s", s->name,
				  msg ? ": " : "", msg ? msg : "");
		free(msg);
		return rc;
	}
	return 0;
}

void gc_onyx_session_set_timeout(struct gc_onyx_session *s, int timeout_ms)
{
	if (s != NULL && timeout_ms > 0)
		s->timeout_ms = timeout_ms;
}

int gc_onyx_session_open(struct gc_onyx_session **out, const struct gc_onyx_chan *chan,
			 const struct gc_onyx_session_opts *opts, struct gc_error *err)
{
	struct gc_onyx_session *s = gc_xcalloc(1, sizeof(*s));
	char *text = NULL;
	enum got got;
	int rc;

	s->chan = *chan;
	snprintf(s->name, sizeof(s->name), "%s",
		 opts && opts->switch_name ? opts->switch_name : "?");
	s->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
	s->max_output = opts && opts->max_output ? opts->max_output : GC_ONYX_MAX_OUTPUT;
	s->log = opts ? opts->log : NULL;
	s->log_ctx = opts ? opts->log_ctx : NULL;
	if (opts && opts->enable_password_env)
		snprintf(s->secret_env, sizeof(s->secret_env), "%s", opts->enable_password_env);
	/* banner ("Mellanox Switch"), motd, then the first prompt */
	rc = read_until(s, &text, &got, false, "login", err);
	if (rc)
		goto out;
	free(text);
	if (s->mode == GC_ONYX_MODE_USER) {
		rc = enable(s, err);
		if (rc)
			goto out;
	}
	rc = gc_onyx_session_exec(s, NULL, "no cli session paging enable", err);
	if (rc)
		goto out;
	*out = s;
	s = NULL; /* now owned by the caller */
out:
	if (s) {
		gc_buf_free(&s->in);
		free(s);
	}
	return rc;
}

int gc_onyx_session_configure(struct gc_onyx_session *s, struct gc_error *err)
{
	int rc;

	if (s->mode == GC_ONYX_MODE_CONFIG || s->mode == GC_ONYX_MODE_SUB)
		return 0;
	rc = gc_onyx_session_exec(s, NULL, "configure terminal", err);
	if (rc == 0 && s->mode != GC_ONYX_MODE_CONFIG)
		rc = gc_error_set(err, GC_EREMOTE, "switch '%s': 'configure terminal' did not "
				  "enter config mode", s->name);
	return rc;
}

static int exit_to(struct gc_onyx_session *s, enum gc_onyx_mode want, struct gc_error *err)
{
	int i, rc;

	for (i = 0; i < 8 && s->mode > want; i++) {
		rc = gc_onyx_session_exec(s, NULL, "exit", err);
		if (rc)
			return rc;
	}
	if (s->mode > want)
		return gc_error_set(err, GC_EREMOTE, "switch '%s': cannot leave config mode",
				    s->name);
	return 0;
}

int gc_onyx_session_end_configure(struct gc_onyx_session *s, struct gc_error *err)
{
	return exit_to(s, GC_ONYX_MODE_ENABLE, err);
}

int gc_onyx_session_apply(struct gc_onyx_session *s, const struct gc_onyx_cmds *cmds,
			  struct gc_error *err)
{
	struct gc_error scratch = GC_ERROR_INIT;
	size_t i;
	int rc;

	if (cmds->n == 0)
		return 0; /* converged: do not even enter config mode */
	rc = gc_onyx_session_configure(s, err);
	if (rc)
		return rc;
	for (i = 0; i < cmds->n; i++) {
		rc = gc_onyx_session_exec(s, NULL, cmds->v[i], err);
		if (rc)
			goto fail;
	}
	rc = exit_to(s, GC_ONYX_MODE_CONFIG, err);
	if (rc == 0)
		rc = gc_onyx_session_exec(s, NULL, "configuration write", err);
	if (rc == 0)
		rc = gc_onyx_session_end_configure(s, err);
	return rc;
fail:
	/* leave config mode without saving; the cause stays the first error */
	if (s->mode != GC_ONYX_MODE_NONE)
		gc_onyx_session_end_configure(s, &scratch);
	if (i > 0 && err != NULL) {
		/* what did take effect is live but unsaved: say so (the journal
		 * keeps the save owed, so the next apply saves after converging) */
		size_t len = strlen(err->msg);

		snprintf(err->msg + len, sizeof(err->msg) - len,
			 "; %zu earlier command%s of this step took effect and %s not saved", i,
			 i == 1 ? "" : "s", i == 1 ? "is" : "are");
	}
	return rc;
}

enum gc_onyx_mode gc_onyx_session_mode(const struct gc_onyx_session *s)
{
	return s->mode;
}

const char *gc_onyx_session_hostname(const struct gc_onyx_session *s)
{
	return s->host;
}

void gc_onyx_session_close(struct gc_onyx_session *s)
{
	struct gc_error scratch = GC_ERROR_INIT;
	uint64_t deadline;
	char chunk[512];

	if (s == NULL)
		return;
	if (gc_onyx_session_end_configure(s, &scratch) == 0 &&
	    send_line(s, "exit", false, &scratch) == 0) {
		deadline = gc_now_ns() + (uint64_t)CLOSE_WAIT_MS * 1000000u;
		while (gc_now_ns() < deadline) {
			ssize_t r = s->chan.read(s->chan.ctx, chunk, sizeof(chunk), 100, &scratch);

			if (r < 0)
				break; /* the far end closed: clean */
		}
	}
	gc_buf_free(&s->in);
	free(s);
}

int gc_onyx_session_observe(struct gc_onyx_session *s, struct gc_onyx_version *version,
			    struct gc_onyx_state *st, bool want_roce, struct gc_error *err)
{
	char *text = NULL;
	int rc;

	rc = gc_onyx_session_exec(s, &text, "show version", err);
	if (rc == 0)
		rc = gc_onyx_parse_version(version, text, strlen(text), err);
	free(text);
	text = NULL;
	if (rc == 0)
		rc = gc_onyx_session_exec(s, &text, "show running-config", err);
	if (rc == 0)
		rc = gc_onyx_parse_running_config(st, text, strlen(text), err);
	free(text);
	text = NULL;
	if (rc == 0 && want_roce && gc_onyx_version_cmp(version->release, GC_ONYX_ONESHOT_MIN) >= 0) {
		rc = gc_onyx_session_exec(s, &text, "show roce", err);
		if (rc == 0)
			rc = gc_onyx_parse_show_roce(st, text, strlen(text), err);
		free(text);
	}
	if (rc && strncmp(err ? err->msg : "", "switch '", 8) != 0)
		gc_error_prefix(err, "switch '%s': ", s->name);
	return rc;
}
