/*
 * guest_int.h - what the guest driver's files share (not a public API).
 */
#ifndef GC_GUEST_INT_H
#define GC_GUEST_INT_H

#include "gc/guest.h"
#include "gc/ssh.h"
#include "gc/sys/driver.h"

/* Read-only commands get the spec's ssh.read_timeout_s (60 s unless it
 * says otherwise); changing ones its ssh.command_timeout_s (package
 * installs). */

struct guest_conn {
	struct gc_ssh_conn *ssh;     /* NULL while deferred or rebooting */
	const struct gc_target *t;
	const struct gc_guest *g;
	unsigned command_ms;
	bool deferred;               /* VM not running at the start: dial at the first step */
	struct gc_guest_facts facts; /* the last observation */
	bool have_facts;
	char *token_want;            /* cksum of the spec's licence token file */
	const struct gc_resource *const *res; /* borrowed from the executor */
	size_t nres;
	bool reboot_pending;         /* observed: an installed driver is not loaded */
	bool reboot_owed;            /* this run changed something that needs the reboot */
	bool skip_wait;
	char boot_before[64];        /* boot id when the reboot went out */
	uint64_t reboot_sent_ns;
	struct gc_drv_ctx *ctx;      /* during WAIT_HOST, for its reconnects */
};

/* driver.c */
int guest_ssh_open(struct guest_conn *c, struct gc_drv_ctx *ctx, unsigned connect_ms,
		   struct gc_error *err);
int guest_run(struct guest_conn *c, struct gc_drv_ctx *ctx, const char *what, const char *script,
	      int in, bool change, struct gc_error *err);
int guest_observe_now(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_buf *problems,
		      struct gc_error *err);
int guest_sudo_error(struct guest_conn *c, struct gc_error *err);

/* apply.c: a change that runs as a plain script (no upload, no wait after
 * it) is a step: the packages it installs, and the rest of its script. */
struct guest_step {
	const char *what;       /* for messages: "NTP failed: ..." */
	char note[96];          /* progress */
	const char *pkgs[8];
	size_t npkgs;
	char pkgname[96];       /* storage for a package name in pkgs */
	struct gc_buf body;     /* runs under set -e after the install */
};
bool guest_batchable_resource(const struct gc_guest *g, const struct gc_resource *r);
int guest_step_of(struct guest_conn *c, const struct gc_resource *r, struct guest_step *st,
		  struct gc_error *err);
void guest_install_cmd(struct gc_buf *b, const struct gc_guest *g, const char *const *pkgs,
		       size_t n);

int guest_apply_resource(struct guest_conn *c, struct gc_drv_ctx *ctx,
			 const struct gc_resource *r, struct gc_error *err);
int guest_reboot(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err);
int guest_wait(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err);
int guest_verify(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err);

#endif
