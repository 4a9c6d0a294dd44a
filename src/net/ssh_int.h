/*
 * ssh_int.h - private to src/net: the connection struct and what ssh.c,
 * ssh_channel.c and ssh_hostkey.c share.  Nothing outside src/net includes this.
 */
#ifndef GC_NET_SSH_INT_H
#define GC_NET_SSH_INT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <libssh2.h>

#include "gc/ssh.h"

#define DEFAULT_CONNECT_MS 10000u
#define DEFAULT_COMMAND_MS 300000u
#define SECRET_MAX 4096

struct gc_ssh_conn {
	int fd;
	LIBSSH2_SESSION *session;
	bool alive;
	bool shut;        /* socket shut down: libssh2 calls fail at once */
	bool ready;       /* authenticated: keepalives may be sent */
	char target[300]; /* user@host:port */
	char *host;
	unsigned port;
	unsigned command_ms;
	unsigned keepalive_s;
	size_t max_output;
	volatile sig_atomic_t *interrupt; /* gc_ssh_set_interrupt; NULL: none */
	struct gc_ssh_arena *arena; /* the session's memory (ssh_alloc.c) */
};

struct gc_ssh_shell {
	struct gc_ssh_conn *conn;
	LIBSSH2_CHANNEL *channel;
};

/* The memory of one session (ssh_alloc.c): libssh2's allocators take the
 * arena as their `abstract`; gc_ssh_arena_free() frees what libssh2 left
 * after libssh2_session_free() and returns how many blocks that was. */
struct gc_ssh_arena;
struct gc_ssh_arena *gc_ssh_arena_new(void);
void *gc_ssh_arena_alloc(size_t count, void **abstract);
void gc_ssh_arena_release(void *ptr, void **abstract);
void *gc_ssh_arena_realloc(void *ptr, size_t count, void **abstract);
size_t gc_ssh_arena_free(struct gc_ssh_arena *a);
/* Blocks reclaimed so far by gc_ssh_arena_free() (reset: and start again at 0). */
uint64_t gc_ssh_arena_leftovers(bool reset);

/* Convert libssh2's last error into err (ssh.c); marks the connection dead
 * when the failure is a transport one. */
int gc_ssh_fail(struct gc_ssh_conn *c, int rc, const char *what, struct gc_error *err);
/* $HOME/.ssh/known_hosts (caller frees). */
char *gc_ssh_default_known_hosts(void);
/* Add the known_hosts lines of text (changed in place) that may be entries
 * for name, the "host" or "[host]:port" libssh2 is asked about; all of them
 * for a NULL name (ssh_hostkey.c; fuzz/fuzz_known_hosts.c compares the two). */
void gc_ssh_known_hosts_add(LIBSSH2_KNOWNHOSTS *kh, char *text, const char *name);
/* Read known_hosts into *khp and prefer, in the handshake, the key types it
 * already records for this host (as OpenSSH does). */
int gc_ssh_load_known_hosts(struct gc_ssh_conn *c, LIBSSH2_KNOWNHOSTS **khp, const char *path,
			    struct gc_error *err);
/* Check the server's host key against known_hosts, trusting new keys only on
 * opt-in and refusing changed ones always (ssh_hostkey.c). */
int gc_ssh_check_host_key(struct gc_ssh_conn *c, const struct gc_ssh_opts *o,
			  LIBSSH2_KNOWNHOSTS *kh, const char *path, struct gc_error *err);

/* ---- shared by ssh.c (connections) and ssh_channel.c (exec, PTY shell) */

/* gc_ssh_stats_get()'s counters (ssh.c) */
extern atomic_uint_fast64_t gc_ssh_stat_commands;
extern atomic_uint_fast64_t gc_ssh_stat_shells;

/* The monotonic time ms milliseconds from now, in ns. */
uint64_t gc_ssh_deadline_after(unsigned ms);
/* Wait until the socket is ready in the direction libssh2 is blocked on:
 * 0, GC_ETIMEOUT once the deadline passed (err untouched), GC_ENET when poll
 * fails.  Sends keepalives while waiting; with an interrupt flag set on the
 * connection it returns at least every 200 ms. */
int gc_ssh_wait_socket(struct gc_ssh_conn *c, uint64_t deadline, struct gc_error *err);
/* Mark the connection dead and set a GC_ETIMEOUT naming what and ms. */
int gc_ssh_timeout_fail(struct gc_ssh_conn *c, const char *what, unsigned ms,
			struct gc_error *err);
/* Shut a dead connection's socket down so that libssh2's cleanup fails at
 * once instead of waiting on the peer. */
void gc_ssh_shut_if_dead(struct gc_ssh_conn *c);
/* RC_TIMEOUT / RC_NETFAIL (err already set) or a libssh2 code -> a gc code. */
int gc_ssh_lib_fail(struct gc_ssh_conn *c, int rc, const char *what, struct gc_error *err);

/*
 * Run a libssh2 call until it stops saying EAGAIN or the deadline passes.
 * rc ends as the call's result (0 or a libssh2 code), or RC_TIMEOUT /
 * RC_NETFAIL with err already set; gc_ssh_lib_fail() turns any of them into a gc code.
 */
#define RC_TIMEOUT (-100001)
#define RC_NETFAIL (-100002)
#define GC_SSH_RETRY(c, rc, call, deadline, err, what, ms)                              \
	do {                                                                            \
		while (((rc) = (call)) == LIBSSH2_ERROR_EAGAIN) {                       \
			int w_ = gc_ssh_wait_socket((c), (deadline), (err));            \
			if (w_ == GC_ETIMEOUT) {                                        \
				gc_ssh_timeout_fail((c), (what), (ms), (err));          \
				(rc) = RC_TIMEOUT;                                      \
				break;                                                  \
			}                                                               \
			if (w_ < 0) {                                                   \
				(rc) = RC_NETFAIL;                                      \
				break;                                                  \
			}                                                               \
		}                                                                       \
	} while (0)

#endif
