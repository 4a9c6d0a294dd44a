/*
 * ssh.h - the SSH transport: one connection per target, many commands over it.
 *
 * src/net/ssh.c is the only user of libssh2.  A connection is checked against
 * an OpenSSH known_hosts file before anything else happens: an unknown host
 * key is refused (GC_EHOSTKEY, with its SHA256 fingerprint) unless the caller
 * opted in to trusting new keys, and a changed key is always refused.
 *
 *     struct gc_ssh_opts o = {.host = "esx01", .username = "root",
 *                             .password_env = "ESX_PASSWORD",
 *                             .known_hosts = "/home/me/.ssh/known_hosts"};
 *     struct gc_ssh_conn *c;
 *     struct gc_ssh_result r;
 *     if (gc_ssh_connect(&c, &o, &err) < 0) ...
 *     if (gc_ssh_exec(c, "esxcli --formatter=xml system maintenanceMode get", &r, &err) < 0) ...
 *     ... r.out, r.err, r.exit_status ...
 *     gc_ssh_result_free(&r);
 *     gc_ssh_free(c);
 *
 * Errors (all with a message naming the target, never a secret):
 *   GC_ENET      transport failure: refused, reset, dropped mid-command, protocol
 *                error.  Safe to retry on a new connection.
 *   GC_ETIMEOUT  the connect or command deadline passed.  Safe to retry on a new
 *                connection (the remote command may still be running).
 *   GC_EAUTH     the server refused every configured credential.
 *   GC_EHOSTKEY  host key unknown (and no opt-in) or changed.
 *   GC_EINVAL    bad options (no user, credential env var unset, unreadable file).
 *   GC_EIO       known_hosts could not be read or written.
 * After GC_ENET or GC_ETIMEOUT the connection is dead: gc_ssh_alive() says
 * false, every later call fails with GC_ENET; free it and connect again.
 * A command that ran and failed is NOT an error: gc_ssh_exec() returns 0 and
 * the exit status is in the result; the caller decides (GC_EREMOTE).
 *
 * Threads: libssh2 is initialised once (thread-safe with OpenSSL 3).  One
 * connection (and its shells) is used by one thread at a time; different
 * connections may be used in parallel threads.
 */
#ifndef GC_SSH_H
#define GC_SSH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gc/error.h"
#include "gc/util.h"

/* Default cap of each of stdout and stderr of one command. */
#define GC_SSH_OUTPUT_MAX ((size_t)16 << 20)

struct gc_ssh_opts {
	const char *host;     /* DNS name or IP literal */
	unsigned port;        /* 0: 22 */
	const char *username; /* required */
	/*
	 * Credentials, tried in this order, each only when set: ssh-agent, key
	 * file, password.  Secrets are named, never passed: the password comes
	 * from the environment variable password_env or the file password_file
	 * (one trailing newline stripped), read at connect time, zeroed after
	 * use; the key's passphrase from key_passphrase_env.
	 */
	bool agent;
	const char *key_file;
	const char *key_passphrase_env;
	const char *password_env;
	const char *password_file;
	/* OpenSSH known_hosts file; NULL: $HOME/.ssh/known_hosts. */
	const char *known_hosts;
	/* Unknown keys are appended to known_hosts (file and directories created
	 * 0600/0700) instead of refused.  A changed key is refused regardless. */
	bool trust_new_host_keys;
	unsigned connect_timeout_ms; /* TCP + handshake + auth; 0: 10 s */
	unsigned command_timeout_ms; /* each exec, each shell write; 0: 300 s */
	unsigned keepalive_s;        /* SSH keepalive while waiting; 0: off */
	size_t max_output;           /* per stream; 0: GC_SSH_OUTPUT_MAX */
};

struct gc_ssh_conn;

/* The outcome of one command.  out/err are NUL-terminated, never NULL after
 * a successful gc_ssh_exec(); they may hold NUL bytes (use the lengths). */
struct gc_ssh_result {
	char *out;
	size_t out_len;
	bool out_truncated; /* more than max_output bytes came; the rest was read and dropped */
	char *err;
	size_t err_len;
	bool err_truncated;
	int exit_status;      /* -1 when the command was killed by a signal */
	char exit_signal[32]; /* "" or the signal name without "SIG", e.g. "KILL" */
};

int gc_ssh_connect(struct gc_ssh_conn **out, const struct gc_ssh_opts *opts,
		   struct gc_error *err);
/* Disconnects politely when the connection is still alive.  Accepts NULL. */
void gc_ssh_free(struct gc_ssh_conn *conn);
/* False once a transport error or timeout has killed the connection. */
bool gc_ssh_alive(const struct gc_ssh_conn *conn);
/* "user@host:port", for messages. Borrowed. */
const char *gc_ssh_target(const struct gc_ssh_conn *conn);
/* Change the per-command deadline (e.g. a long VIB install); 0: default. */
void gc_ssh_set_command_timeout(struct gc_ssh_conn *conn, unsigned timeout_ms);
/*
 * While *flag (set by a signal handler) is zero nothing changes.  Once it is
 * non-zero, a command being run by gc_ssh_exec / gc_ssh_exec_partial gets
 * the end of its standard input (EOF on the channel), once, and the exec
 * goes on to the command's exit as usual: the command decides what an
 * interrupt means to it.  Waits are cut into slices of at most 200 ms so the
 * flag is seen whichever thread took the signal.  NULL: no flag (default).
 */
void gc_ssh_set_interrupt(struct gc_ssh_conn *conn, volatile sig_atomic_t *flag);

/*
 * Run one command on a new exec channel (the remote shell parses it; compose
 * it from validated/quoted values only: gc/pattern.h).  On success (the
 * command ran, whatever its exit status) *result is filled and owned by the
 * caller; on failure *result is untouched.
 */
int gc_ssh_exec(struct gc_ssh_conn *conn, const char *command, struct gc_ssh_result *result,
		struct gc_error *err);
/*
 * The same with the command's standard input read from the file descriptor
 * `in` to its end (then EOF): how files reach a target without scp or sftp
 * on it, e.g. `cat > /var/tmp/x.part`.  `in` stays open (the caller's).
 */
int gc_ssh_exec_stdin(struct gc_ssh_conn *conn, const char *command, int in,
		      struct gc_ssh_result *result, struct gc_error *err);
/*
 * gc_ssh_exec() for a framed batch of commands, whose output says how far
 * it got (src/drivers/esxi/batch.c): *result is filled on every return and
 * owned by the caller.  On failure it holds what was read before the fault
 * (exit_status -1; nothing when the command never went out), so a batch
 * whose connection dropped can still tell which of its commands completed.
 */
int gc_ssh_exec_partial(struct gc_ssh_conn *conn, const char *command,
			struct gc_ssh_result *result, struct gc_error *err);
void gc_ssh_result_free(struct gc_ssh_result *result);

/* ---------------------------------------------------------------- sh as root */

/*
 * The Linux targets (guests, KVM hosts) run sh scripts as root: directly
 * for root, else through `sudo -n` (never a password prompt).  The command
 * that does so (gc_xmalloc'd; the script goes in single-quoted).
 */
char *gc_ssh_as_root(const char *script);
/* sudo refused to run without a password or a terminal. */
bool gc_ssh_sudo_refused(const struct gc_ssh_result *r);
/* The target's own words for a failure: the last (at most 3) non-empty
 * lines of stderr, else of stdout, joined with " | ", 400 bytes each at
 * most (apt, dnf and the kernel's sysfs errors end with the cause);
 * "exit status N" when it said nothing. */
void gc_ssh_message(struct gc_buf *out, const struct gc_ssh_result *r);
/*
 * Run `script` as root (its standard input from `in` when in >= 0).  A
 * transport fault comes back prefixed "WHAT: "; sudo wanting a password is
 * GC_EREMOTE naming `user` and the fix.  With out == NULL a non-zero exit
 * is GC_EREMOTE "WHAT failed: <gc_ssh_message>"; with out, *out is the
 * result whatever its exit status (the caller frees it).
 */
int gc_ssh_run_root(struct gc_ssh_conn *conn, const char *what, const char *script, int in,
		    const char *user, struct gc_ssh_result *out, struct gc_error *err);

/* ---------------------------------------------------------------- PTY shell */

/*
 * An interactive shell on a pseudo-terminal (the Onyx switch CLI).  The PTY
 * merges stderr into stdout and echoes what is written; lines end in "\r\n".
 * Terminal: "vt100", 511 columns x 0 rows (no wrapping, no pager sizing).
 */
struct gc_ssh_shell;

int gc_ssh_shell_open(struct gc_ssh_shell **out, struct gc_ssh_conn *conn,
		      struct gc_error *err);
/* Closes the channel (not the connection).  Accepts NULL. */
void gc_ssh_shell_close(struct gc_ssh_shell *shell);
/* Write all n bytes (within the command timeout) or fail. */
int gc_ssh_shell_write(struct gc_ssh_shell *shell, const char *data, size_t n,
		       struct gc_error *err);
/*
 * Read what is available: waits at most timeout_ms for the first byte.
 * Returns the byte count (>0), 0 on timeout, or a negative gc_code: GC_ENET
 * when the remote closed the shell or the connection dropped.  (The shape of
 * gc_onyx_chan.read.)
 */
ssize_t gc_ssh_shell_read(struct gc_ssh_shell *shell, char *buf, size_t n, int timeout_ms,
			  struct gc_error *err);
/*
 * The prompt matcher of gc_ssh_shell_read_until(): called with everything
 * appended to the buffer so far (not NUL-counted in len, but NUL-terminated)
 * after each chunk; returns true when it ends in a prompt.  No regex: the
 * caller looks at the tail (e.g. ends with " # " after the last newline).
 */
typedef bool (*gc_ssh_prompt_fn)(const char *buf, size_t len, void *arg);
/*
 * Append to *buf until match says done (returns 0), the remote closes
 * (GC_ENET), timeout_ms passes (GC_ETIMEOUT) or max_output is exceeded
 * (GC_ENOMEM).  On every return *buf holds all bytes read so far.
 */
int gc_ssh_shell_read_until(struct gc_ssh_shell *shell, gc_ssh_prompt_fn match, void *arg,
			    unsigned timeout_ms, struct gc_buf *buf, struct gc_error *err);

/* ---------------------------------------------------------------- counters */

/* Process-wide totals since start (or the last reset), for tests and benchmarks. */
struct gc_ssh_stats {
	uint64_t connections; /* TCP connections opened (handshake attempted) */
	uint64_t commands;    /* exec requests sent */
	uint64_t shells;      /* PTY shells opened */
	/* libssh2 blocks still allocated after a session was freed, which we
	 * freed ourselves (src/net/ssh_alloc.c says when libssh2 leaves some) */
	uint64_t leftover_blocks;
};
void gc_ssh_stats_get(struct gc_ssh_stats *out);
void gc_ssh_stats_reset(void);

/* For tests: when set, called in each pass over a command's output between
 * the read of stdout and the read of stderr (tests/unit/net/test_ssh.c
 * makes the rest of a reply arrive there).  NULL otherwise. */
extern void (*gc_ssh_test_between_streams)(void);

#endif
