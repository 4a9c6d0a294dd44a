/*
 * ssh.c - the SSH transport over libssh2: connecting, authenticating, waiting
 * (src/net/ssh*.c are the only files that include libssh2; host keys live in
 * ssh_hostkey.c, exec and the PTY shell in ssh_channel.c).
 *
 * Every session runs in libssh2's non-blocking mode: each libssh2 call that
 * would block returns LIBSSH2_ERROR_EAGAIN and we poll() the socket in the
 * direction libssh2 asks for, until an absolute deadline (connect timeout for
 * TCP + handshake + host key + auth, command timeout for one exec).  That is
 * how a command that trickles output forever still times out, and how a
 * keepalive can be sent while we wait.
 *
 * The host key is checked (ssh_hostkey.c) right after the handshake and
 * before any credential is sent.
 *
 * Errors from libssh2 are converted at this boundary: the libssh2 code goes
 * to err->libcode, libssh2_session_last_error()'s text into the message, and
 * the code is classified (transport -> GC_ENET, deadline -> GC_ETIMEOUT,
 * credentials -> GC_EAUTH).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libssh2.h>

#include "gc/ssh.h"

#include "ssh_int.h"

static atomic_uint_fast64_t stat_connections;
atomic_uint_fast64_t gc_ssh_stat_commands;
atomic_uint_fast64_t gc_ssh_stat_shells;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;

static void init_libssh2(void)
{
	init_rc = libssh2_init(0);
}

/* ---------------------------------------------------------------- errors */

static int classify(int rc)
{
	switch (rc) {
	case LIBSSH2_ERROR_TIMEOUT:
		return GC_ETIMEOUT;
	case LIBSSH2_ERROR_AUTHENTICATION_FAILED:
	case LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED:
	case LIBSSH2_ERROR_PASSWORD_EXPIRED:
	case LIBSSH2_ERROR_PUBLICKEY_PROTOCOL:
	case LIBSSH2_ERROR_AGENT_PROTOCOL:
		return GC_EAUTH;
	case LIBSSH2_ERROR_FILE:
		return GC_EINVAL;
	case LIBSSH2_ERROR_ALLOC:
		return GC_ERROR;
	default:
		/* socket, banner, KEX, MAC, decrypt, protocol, channel failures */
		return GC_ENET;
	}
}

/* Convert libssh2's last error into err; marks the connection dead when the
 * failure is a transport one. */
int gc_ssh_fail(struct gc_ssh_conn *c, int rc, const char *what, struct gc_error *err)
{
	char *msg = NULL;
	int msglen = 0;
	int code = classify(rc);

	if (c->session != NULL)
		libssh2_session_last_error(c->session, &msg, &msglen, 0);
	gc_error_set(err, code, "ssh %s: %s: %s (libssh2 error %d)", c->target, what,
		     msg && *msg ? msg : "failed", rc);
	if (err != NULL && err->libcode == 0)
		err->libcode = rc;
	if (code == GC_ENET || code == GC_ETIMEOUT)
		c->alive = false;
	return code;
}

int gc_ssh_timeout_fail(struct gc_ssh_conn *c, const char *what, unsigned ms, struct gc_error *err)
{
	c->alive = false;
	return gc_error_set(err, GC_ETIMEOUT, "ssh %s: %s: timed out after %u.%03u s", c->target,
			    what, ms / 1000, ms % 1000);
}

/*
 * A dead connection's socket is shut down first, so that libssh2's cleanup
 * (which would send CLOSE and wait for the peer's) fails at once instead of
 * saying EAGAIN forever, and frees everything.
 */
void gc_ssh_shut_if_dead(struct gc_ssh_conn *c)
{
	if (!c->alive && !c->shut && c->fd >= 0) {
		shutdown(c->fd, SHUT_RDWR);
		c->shut = true;
	}
}

/* ---------------------------------------------------------------- waiting */

uint64_t gc_ssh_deadline_after(unsigned ms)
{
	return gc_now_ns() + (uint64_t)ms * 1000000u;
}

/* How long a wait may be while an interrupt flag is set on the connection. */
#define INTERRUPT_SLICE_MS 200

/*
 * Wait until the socket is ready in the direction libssh2 is blocked on, the
 * deadline passes (returns GC_ETIMEOUT, err untouched) or poll fails (GC_ENET).
 * Sends keepalives while waiting when configured.
 */
int gc_ssh_wait_socket(struct gc_ssh_conn *c, uint64_t deadline, struct gc_error *err)
{
	struct pollfd p = {.fd = c->fd, .events = 0, .revents = 0};
	int dir = libssh2_session_block_directions(c->session);
	uint64_t now = gc_now_ns();
	int ms;

	if (now >= deadline)
		return GC_ETIMEOUT;
	if (dir & LIBSSH2_SESSION_BLOCK_INBOUND)
		p.events |= POLLIN;
	if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		p.events |= POLLOUT;
	if (p.events == 0)
		p.events = POLLIN;
	if (p.events & POLLIN) {
		/* Acknowledge what arrives at once.  In a request-reply exchange
		 * Linux delays its ACKs (up to 40 ms) to ride on the next reply,
		 * while an sshd with Nagle on holds its next small packet until
		 * the last one is acknowledged: a stall of about 40 ms at the
		 * SERVICE_ACCEPT and again at the channel's open confirmation, in
		 * every connection to the lab's OpenSSH 9.2 (its session.c sets
		 * TCP_NODELAY only for a terminal or X11 session, and not before).
		 * TCP_QUICKACK is not sticky (tcp(7)): set before every wait. */
		int one = 1;

		(void)setsockopt(c->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
	}
	ms = (int)((deadline - now + 999999) / 1000000);
	if (c->interrupt != NULL && ms > INTERRUPT_SLICE_MS)
		ms = INTERRUPT_SLICE_MS;
	if (c->keepalive_s > 0 && c->ready) {
		int next = 0;

		libssh2_keepalive_send(c->session, &next);
		if (next > 0 && ms > next * 1000)
			ms = next * 1000;
	}
	for (;;) {
		int r = poll(&p, 1, ms);

		if (r >= 0 || (c->interrupt != NULL && *c->interrupt))
			return 0;
		if (errno != EINTR) {
			c->alive = false;
			return gc_error_set_errno(err, GC_ENET, errno, "ssh %s: poll", c->target);
		}
	}
}


int gc_ssh_lib_fail(struct gc_ssh_conn *c, int rc, const char *what, struct gc_error *err)
{
	if (rc == RC_TIMEOUT)
		return GC_ETIMEOUT;
	if (rc == RC_NETFAIL)
		return GC_ENET;
	return gc_ssh_fail(c, rc, what, err);
}

/* ---------------------------------------------------------------- TCP */

static int tcp_connect(struct gc_ssh_conn *c, uint64_t deadline, unsigned ms, struct gc_error *err)
{
	struct addrinfo hints, *res = NULL, *ai;
	char port[16];
	int rc, last_errno = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%u", c->port);
	rc = getaddrinfo(c->host, port, &hints, &res);
	if (rc != 0)
		return gc_error_set(err, GC_ENET, "ssh %s: cannot resolve '%s': %s", c->target,
				    c->host, gai_strerror(rc));
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				ai->ai_protocol);
		int one = 1;

		if (fd < 0) {
			last_errno = errno;
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			last_errno = errno;
			close(fd);
			continue;
		}
		for (;;) {
			struct pollfd p = {.fd = fd, .events = POLLOUT, .revents = 0};
			uint64_t now = gc_now_ns();
			int soerr = 0;
			socklen_t len = sizeof(soerr);
			int r;

			if (now >= deadline) {
				close(fd);
				freeaddrinfo(res);
				return gc_ssh_timeout_fail(c, "connect", ms, err);
			}
			r = poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0)
				continue;
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
			if (r < 0)
				soerr = errno;
			if (soerr != 0) {
				last_errno = soerr;
				close(fd);
				fd = -1;
			}
			break;
		}
		if (fd >= 0) {
			c->fd = fd;
			freeaddrinfo(res);
			return 0;
		}
	}
	freeaddrinfo(res);
	return gc_error_set_errno(err, GC_ENET, last_errno, "ssh %s: cannot connect", c->target);
}

/* ---------------------------------------------------------------- authentication */

/* Reads a secret into a fixed buffer (no reallocations leaving copies behind). */
static int read_secret_file(char *out, size_t n, const char *path, struct gc_error *err)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return gc_error_set_errno(err, GC_EINVAL, errno, "cannot open password file '%s'",
					  path);
	for (;;) {
		ssize_t r = read(fd, out + len, n - 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			close(fd);
			explicit_bzero(out, n);
			return gc_error_set_errno(err, GC_EINVAL, e, "cannot read password file '%s'",
						  path);
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == n - 1) {
			close(fd);
			explicit_bzero(out, n);
			return gc_error_set(err, GC_EINVAL, "password file '%s' is too large", path);
		}
	}
	close(fd);
	out[len] = '\0';
	if (len > 0 && out[len - 1] == '\n')
		out[--len] = '\0';
	if (len > 0 && out[len - 1] == '\r')
		out[--len] = '\0';
	return 0;
}

static int read_secret_env(char *out, size_t n, const char *name, const char *what,
			   struct gc_error *err)
{
	const char *v = getenv(name);
	size_t len;

	if (v == NULL)
		return gc_error_set(err, GC_EINVAL, "%s environment variable '%s' is not set", what,
				    name);
	len = strlen(v);
	if (len >= n)
		return gc_error_set(err, GC_EINVAL, "%s in '%s' is too long", what, name);
	memcpy(out, v, len + 1);
	return 0;
}

static int auth_agent(struct gc_ssh_conn *c, const char *user, uint64_t deadline, unsigned ms,
		      struct gc_error *err)
{
	LIBSSH2_AGENT *agent = libssh2_agent_init(c->session);
	struct libssh2_agent_publickey *id = NULL, *prev = NULL;
	int rc;

	if (agent == NULL)
		return gc_ssh_fail(c, LIBSSH2_ERROR_ALLOC, "ssh-agent", err);
	if (libssh2_agent_connect(agent) != 0) {
		rc = gc_error_set(err, GC_EAUTH, "ssh %s: cannot reach ssh-agent (is SSH_AUTH_SOCK set?)",
				  c->target);
		goto out;
	}
	if (libssh2_agent_list_identities(agent) != 0) {
		rc = gc_error_set(err, GC_EAUTH, "ssh %s: cannot list ssh-agent identities",
				  c->target);
		goto out;
	}
	rc = GC_EAUTH;
	while (libssh2_agent_get_identity(agent, &id, prev) == 0) {
		int r;

		GC_SSH_RETRY(c, r, libssh2_agent_userauth(agent, user, id), deadline, err,
			     "authentication", ms);
		if (r == 0) {
			rc = 0;
			break;
		}
		if (r == RC_TIMEOUT || r == RC_NETFAIL || classify(r) != GC_EAUTH) {
			rc = gc_ssh_lib_fail(c, r, "ssh-agent authentication", err);
			break;
		}
		prev = id;
	}
	libssh2_agent_disconnect(agent);
out:
	libssh2_agent_free(agent);
	return rc;
}

/*
 * Try each configured credential in turn; the last libssh2 failure is kept
 * to explain a refusal.  Secrets live in one stack buffer, zeroed on return.
 */
static int authenticate(struct gc_ssh_conn *c, const struct gc_ssh_opts *o, uint64_t deadline,
			unsigned ms, struct gc_error *err)
{
	char secret[SECRET_MAX];
	const char *user = o->username;
	struct gc_buf tried = GC_BUF_INIT;
	int rc = GC_EAUTH, r;

	secret[0] = '\0';
	if (o->agent) {
		struct gc_error e = GC_ERROR_INIT;

		r = auth_agent(c, user, deadline, ms, &e);
		if (r == 0) {
			rc = 0;
			goto out;
		}
		if (r == GC_ETIMEOUT || r == GC_ENET) {
			rc = gc_error_set(err, r, "%s", e.msg);
			goto out;
		}
		gc_buf_puts(&tried, "ssh-agent");
	}
	if (o->key_file != NULL) {
		if (o->key_passphrase_env != NULL &&
		    (rc = read_secret_env(secret, sizeof(secret), o->key_passphrase_env,
					  "key passphrase", err)) < 0)
			goto out;
		GC_SSH_RETRY(c, r,
			     libssh2_userauth_publickey_fromfile_ex(
				     c->session, user, (unsigned)strlen(user), NULL, o->key_file,
				     o->key_passphrase_env ? secret : NULL),
			     deadline, err, "authentication", ms);
		explicit_bzero(secret, sizeof(secret));
		if (r == 0) {
			rc = 0;
			goto out;
		}
		if (r == RC_TIMEOUT || r == RC_NETFAIL) {
			rc = gc_ssh_lib_fail(c, r, "authentication", err);
			goto out;
		}
		if (r == LIBSSH2_ERROR_FILE) {
			rc = gc_error_set(err, GC_EINVAL,
					  "ssh %s: cannot use key file '%s' (unreadable, wrong "
					  "passphrase or unsupported format)",
					  c->target, o->key_file);
			goto out;
		}
		if (classify(r) != GC_EAUTH) {
			rc = gc_ssh_fail(c, r, "public key authentication", err);
			goto out;
		}
		gc_buf_printf(&tried, "%skey file '%s'", tried.len ? ", " : "", o->key_file);
	}
	if (o->password_env != NULL || o->password_file != NULL) {
		if (o->password_env != NULL)
			rc = read_secret_env(secret, sizeof(secret), o->password_env, "password", err);
		else
			rc = read_secret_file(secret, sizeof(secret), o->password_file, err);
		if (rc < 0)
			goto out;
		GC_SSH_RETRY(c, r,
			     libssh2_userauth_password_ex(c->session, user, (unsigned)strlen(user),
						       secret, (unsigned)strlen(secret), NULL),
			     deadline, err, "authentication", ms);
		explicit_bzero(secret, sizeof(secret));
		if (r == 0) {
			rc = 0;
			goto out;
		}
		if (r == RC_TIMEOUT || r == RC_NETFAIL) {
			rc = gc_ssh_lib_fail(c, r, "authentication", err);
			goto out;
		}
		if (classify(r) != GC_EAUTH) {
			rc = gc_ssh_fail(c, r, "password authentication", err);
			goto out;
		}
		if (o->password_env != NULL)
			gc_buf_printf(&tried, "%spassword from $%s", tried.len ? ", " : "",
				      o->password_env);
		else
			gc_buf_printf(&tried, "%spassword from file '%s'", tried.len ? ", " : "",
				      o->password_file);
	}
	if (tried.len == 0)
		rc = gc_error_set(err, GC_EINVAL,
				  "ssh %s: no credentials configured (password_env, "
				  "password_file, key_file or agent)",
				  c->target);
	else
		rc = gc_error_set(err, GC_EAUTH, "ssh %s: authentication failed for user '%s' "
				  "(tried: %s)", c->target, user, gc_buf_str(&tried));
out:
	explicit_bzero(secret, sizeof(secret));
	gc_buf_free(&tried);
	return rc;
}

/* ---------------------------------------------------------------- connect */

int gc_ssh_connect(struct gc_ssh_conn **out, const struct gc_ssh_opts *o, struct gc_error *err)
{
	struct gc_ssh_conn *c;
	LIBSSH2_KNOWNHOSTS *kh = NULL;
	char *path = NULL;
	unsigned ms;
	uint64_t deadline;
	int rc;

	if (o->host == NULL || *o->host == '\0')
		return gc_error_set(err, GC_EINVAL, "ssh: no host given");
	if (o->username == NULL || *o->username == '\0')
		return gc_error_set(err, GC_EINVAL, "ssh '%s': no user name given", o->host);
	pthread_once(&init_once, init_libssh2);
	if (init_rc != 0)
		return gc_error_set(err, GC_ERROR, "ssh: libssh2_init failed (%d)", init_rc);

	ms = o->connect_timeout_ms ? o->connect_timeout_ms : DEFAULT_CONNECT_MS;
	deadline = gc_ssh_deadline_after(ms);
	c = gc_xcalloc(1, sizeof(*c));
	c->fd = -1;
	c->alive = true;
	c->host = gc_xstrdup(o->host);
	c->port = o->port ? o->port : 22;
	c->command_ms = o->command_timeout_ms ? o->command_timeout_ms : DEFAULT_COMMAND_MS;
	c->keepalive_s = o->keepalive_s;
	c->max_output = o->max_output ? o->max_output : GC_SSH_OUTPUT_MAX;
	snprintf(c->target, sizeof(c->target), "%s@%s%s%s:%u", o->username,
		 strchr(o->host, ':') ? "[" : "", o->host, strchr(o->host, ':') ? "]" : "",
		 c->port);

	atomic_fetch_add(&stat_connections, 1);
	if ((rc = tcp_connect(c, deadline, ms, err)) < 0)
		goto fail;
	c->arena = gc_ssh_arena_new();
	c->session = libssh2_session_init_ex(gc_ssh_arena_alloc, gc_ssh_arena_release,
					     gc_ssh_arena_realloc, c->arena);
	if (c->session == NULL) {
		rc = gc_error_set(err, GC_ERROR, "ssh %s: cannot create a session", c->target);
		goto fail;
	}
	libssh2_session_set_blocking(c->session, 0);
	if (c->keepalive_s > 0)
		libssh2_keepalive_config(c->session, 1, c->keepalive_s);
	path = o->known_hosts ? gc_xstrdup(o->known_hosts) : gc_ssh_default_known_hosts();
	if ((rc = gc_ssh_load_known_hosts(c, &kh, path, err)) < 0)
		goto fail;
	GC_SSH_RETRY(c, rc, libssh2_session_handshake(c->session, c->fd), deadline, err,
		     "handshake", ms);
	if (rc != 0) {
		bool no_banner = (rc == LIBSSH2_ERROR_SOCKET_SEND || rc == LIBSSH2_ERROR_SOCKET_RECV ||
				  rc == LIBSSH2_ERROR_SOCKET_DISCONNECT) &&
				 libssh2_session_banner_get(c->session) == NULL;

		rc = gc_ssh_lib_fail(c, rc, "handshake", err);
		/* libssh2 says "Failed sending banner": say what it means (a host
		 * going down, a full MaxStartups, a firewall's reset) */
		if (no_banner && err != NULL && err->code != 0) {
			size_t n = strlen(err->msg);

			snprintf(err->msg + n, sizeof(err->msg) - n,
				 ": the host closed the connection before its SSH banner");
		}
		goto fail;
	}
	/* The host key is checked before a credential is sent. */
	if ((rc = gc_ssh_check_host_key(c, o, kh, path, err)) < 0)
		goto fail;
	libssh2_knownhost_free(kh);
	kh = NULL;
	free(path);
	path = NULL;
	if ((rc = authenticate(c, o, deadline, ms, err)) < 0)
		goto fail;
	c->ready = true; /* a keepalive in the middle of KEX would break it */
	*out = c;
	return 0;
fail:
	if (kh != NULL)
		libssh2_knownhost_free(kh);
	free(path);
	c->alive = false;
	gc_ssh_free(c);
	return rc;
}

void gc_ssh_free(struct gc_ssh_conn *c)
{
	if (c == NULL)
		return;
	if (c->session != NULL) {
		int i;

		if (c->alive) {
			uint64_t deadline = gc_ssh_deadline_after(500);

			while (libssh2_session_disconnect(c->session, "bye") == LIBSSH2_ERROR_EAGAIN)
				if (gc_ssh_wait_socket(c, deadline, NULL) < 0)
					break;
		}
		c->alive = false;
		gc_ssh_shut_if_dead(c);
		for (i = 0; i < 1000; i++)
			if (libssh2_session_free(c->session) != LIBSSH2_ERROR_EAGAIN)
				break;
		if (i == 1000)
			c->arena = NULL; /* the session still holds it: never reached in practice */
	}
	gc_ssh_arena_free(c->arena);
	if (c->fd >= 0)
		close(c->fd);
	free(c->host);
	free(c);
}

bool gc_ssh_alive(const struct gc_ssh_conn *c)
{
	return c != NULL && c->alive;
}

const char *gc_ssh_target(const struct gc_ssh_conn *c)
{
	return c->target;
}

void gc_ssh_set_command_timeout(struct gc_ssh_conn *c, unsigned timeout_ms)
{
	c->command_ms = timeout_ms ? timeout_ms : DEFAULT_COMMAND_MS;
}

void gc_ssh_set_interrupt(struct gc_ssh_conn *c, volatile sig_atomic_t *flag)
{
	c->interrupt = flag;
}

/* ---------------------------------------------------------------- counters */

void gc_ssh_stats_get(struct gc_ssh_stats *out)
{
	out->connections = atomic_load(&stat_connections);
	out->commands = atomic_load(&gc_ssh_stat_commands);
	out->shells = atomic_load(&gc_ssh_stat_shells);
	out->leftover_blocks = gc_ssh_arena_leftovers(false);
}

void gc_ssh_stats_reset(void)
{
	atomic_store(&stat_connections, 0);
	atomic_store(&gc_ssh_stat_commands, 0);
	atomic_store(&gc_ssh_stat_shells, 0);
	gc_ssh_arena_leftovers(true);
}
