/*
 * onyx.h - the pure core of the NVIDIA/Mellanox Onyx switch driver.
 *
 * Three parts, none of which knows about SSH or YAML:
 *
 *   - parsers for what the switch prints (`show version`, `show running-config`,
 *     `show roce`) into a structured RoCE state (struct gc_onyx_state);
 *   - the desired state computed from a struct gc_switch, and a diff that
 *     turns (desired, observed) into the exact list of CLI commands to send,
 *     plus a human drift description for `plan`;
 *   - an interactive CLI session (prompts, modes, enable, paging, `%` errors,
 *     configuration write) over an abstract byte channel, so it is tested
 *     against a scripted fake and the simulator; gc_onyx_chan_ssh() binds it
 *     to gc_ssh's PTY shell (library gc_drv_onyx_ssh).
 *
 * Those live in gc_drv_onyx_core.  gc_onyx_record() (the observed store in
 * the graph's shape) and struct gc_driver gc_driver_onyx (driver.c, not
 * declared here: the executor's registry names it) are in gc_drv_onyx.
 *
 * See docs/onyx.md for the commands sent and the formats assumed.
 */
#ifndef GC_ONYX_H
#define GC_ONYX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gc/error.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/spec.h"
#include "gc/util.h"

/* Caps on what a switch (or a spec) can grow. */
#define GC_ONYX_MAX_PORTS 1024            /* ports in one switch state / one range list */
#define GC_ONYX_MAX_OUTPUT (8u << 20)    /* bytes of one command's output */
#define GC_ONYX_MAX_LINE 4096            /* one line of show output */
#define GC_ONYX_ONESHOT_MIN "3.8.2000"   /* `roce` one-shot command appears */
#define GC_ONYX_POOL_MIN "3.6.5000"      /* `traffic pool` commands appear */

/* ---------------------------------------------------------------- ports */

/* An Ethernet port "slot/port" or split port "slot/port/sub" (sub 0 = unsplit). */
struct gc_onyx_port_id {
	uint16_t slot;
	uint16_t port;
	uint16_t sub;
};

/*
 * Expand a port list as the switch and the spec write it ("1/1", "1/1-1/32",
 * "1/1-1/4,1/9", "1/1/1-1/1/4") into sorted, de-duplicated ids.  A range must
 * stay within one slot (and one port for split ports) and go upwards.
 * *out is gc_xmalloc'd (caller frees); at most GC_ONYX_MAX_PORTS ids.
 */
int gc_onyx_ports_expand(struct gc_onyx_port_id **out, size_t *n, const char *list,
			 struct gc_error *err);
/*
 * Compress sorted ids into contiguous ranges, one string per range, as the
 * switch renders them in running-config ("1/1-1/4", "1/9").  Appends to b,
 * separated by ','.  Never produces a range across slots or split ports.
 */
void gc_onyx_ports_compress(struct gc_buf *b, const struct gc_onyx_port_id *ids, size_t n);
int gc_onyx_port_cmp(const struct gc_onyx_port_id *a, const struct gc_onyx_port_id *b);

/* ---------------------------------------------------------------- show version */

struct gc_onyx_version {
	char product[64]; /* "Onyx" (older: "MLNX-OS") */
	char release[64]; /* "3.9.0300" */
	char model[64];   /* "x86onie", "SN2700", ... ("" when absent) */
	char summary[128];
};

/*
 * Parse `show version` text (keys padded to column 19) or its `| json-print`
 * flat object (anything before the first '{' is an echo and skipped).
 * Product name and release are required.
 */
int gc_onyx_parse_version(struct gc_onyx_version *out, const char *text, size_t len,
			  struct gc_error *err);
/* Compare dotted releases numerically ("3.8.2000" < "3.9.0300"); <0, 0, >0. */
int gc_onyx_version_cmp(const char *a, const char *b);

/* ---------------------------------------------------------------- RoCE state */

enum gc_onyx_trust { GC_ONYX_TRUST_UNSET = 0, GC_ONYX_TRUST_L2, GC_ONYX_TRUST_L3, GC_ONYX_TRUST_BOTH };

/* Congestion control of one traffic class of one port. */
enum gc_onyx_cc { GC_ONYX_CC_NONE = 0, GC_ONYX_CC_ECN_ABS, GC_ONYX_CC_OTHER };

struct gc_onyx_tc_cc {
	enum gc_onyx_cc mode; /* OTHER: red/both/relative: anything not "ecn absolute" */
	unsigned min_kb;
	unsigned max_kb;
};

struct gc_onyx_port_state {
	struct gc_onyx_port_id id;
	enum gc_onyx_trust trust;     /* UNSET = not in the config (switch default L2) */
	struct gc_onyx_tc_cc cc[8];   /* per traffic class */
	uint8_t ets_strict;           /* bit t: traffic-class t is `dcb ets strict` */
	bool pfc_force;               /* `dcb priority-flow-control mode on force` */
};

struct gc_onyx_state {
	char hostname[64];
	/* `traffic pool roce ...` */
	char pool_type[16];           /* "" = not configured, "lossless", "lossy", "lossy-mc" */
	int pool_percent_x100;        /* -1 = not configured; 50.00 -> 5000 */
	uint8_t pool_map;             /* bit p: `map switch-priority p` */
	/* `dcb priority-flow-control ...` */
	bool pfc_enabled;             /* `dcb priority-flow-control enable [force]` */
	uint8_t pfc_priorities;       /* bit p: `priority p enable` */
	bool lldp;
	char roce_mode[24];           /* one-shot: "" / "N/A" = off, "lossless", "lossy", "semi-lossless" */
	struct gc_onyx_port_state *ports; /* sorted by id; gc_xmalloc'd */
	size_t nports;
};

void gc_onyx_state_init(struct gc_onyx_state *st);
void gc_onyx_state_free(struct gc_onyx_state *st);
/* The state of one port, added (zeroed, sorted in) when create is true. NULL when absent/full. */
struct gc_onyx_port_state *gc_onyx_state_port(struct gc_onyx_state *st,
					      const struct gc_onyx_port_id *id, bool create);

/*
 * Parse `show running-config` into st (initialised by the caller).  Banners
 * and `#` comments are skipped, indentation is ignored, only the RoCE lines
 * above are interpreted; other lines are left alone.  A line that starts like
 * a RoCE line but does not parse (bad range, value out of range, truncated)
 * is an error with its line number: acting on half-understood state is worse
 * than stopping.
 */
int gc_onyx_parse_running_config(struct gc_onyx_state *st, const char *text, size_t len,
				 struct gc_error *err);
/* Parse `show roce` text: sets st->roce_mode ("N/A" before it is enabled). */
int gc_onyx_parse_show_roce(struct gc_onyx_state *st, const char *text, size_t len,
			    struct gc_error *err);

/* ---------------------------------------------------------------- desired state and diff */

/* A list of CLI commands (config mode), in the order to send. */
struct gc_onyx_cmds {
	char **v; /* gc_xmalloc'd strings */
	size_t n;
};
void gc_onyx_cmds_free(struct gc_onyx_cmds *c);

struct gc_onyx_desired {
	bool oneshot;               /* mode "oneshot": only `roce lossless` */
	struct gc_onyx_state st;    /* the manual-recipe state (empty for oneshot) */
};

/*
 * The desired state of a switch from the spec (REAL-FORMATS B.4 recipe, or
 * B.5 for mode "oneshot").  sw->roce must be set.  Every value is checked
 * against the strict patterns again (defence in depth).
 */
int gc_onyx_desired(struct gc_onyx_desired *out, const struct gc_switch *sw,
		    struct gc_error *err);
void gc_onyx_desired_free(struct gc_onyx_desired *d);

/*
 * The minimum config-mode commands that turn observed into desired.  Ports
 * with the same fix are merged into ranges as the switch renders them; a
 * non-contiguous set becomes one line per contiguous range.  Settings the
 * desired state does not have are removed (`no ...`) only when owned.
 * Converged: returns 0 with cmds->n == 0.  cmds must be zeroed by the caller.
 * Refuses (GC_EINVAL) any value that would not match the strict patterns.
 */
int gc_onyx_diff(struct gc_onyx_cmds *cmds, const struct gc_onyx_desired *desired,
		 const struct gc_onyx_state *observed, bool owned, struct gc_error *err);

/*
 * The categories of the diff, one per resource kind of the graph
 * (switch.pool, switch.qos_trust, switch.ecn, switch.ets, switch.pfc,
 * switch.lldp, switch.roce).
 */
#define GC_ONYX_CAT_POOL 0x01u  /* traffic pool roce type/percent/map */
#define GC_ONYX_CAT_TRUST 0x02u /* per-port qos trust */
#define GC_ONYX_CAT_ECN 0x04u   /* per-port per-TC congestion-control */
#define GC_ONYX_CAT_ETS 0x08u   /* per-port strict TCs */
#define GC_ONYX_CAT_PFC 0x10u   /* PFC global, priorities, per-port mode */
#define GC_ONYX_CAT_LLDP 0x20u
#define GC_ONYX_CAT_ROCE 0x40u  /* one-shot `roce lossless` */
#define GC_ONYX_CAT_ALL 0x7fu
/* gc_onyx_diff() restricted to the categories in cats (same order). */
int gc_onyx_diff_only(struct gc_onyx_cmds *cmds, const struct gc_onyx_desired *desired,
		      const struct gc_onyx_state *observed, bool owned, unsigned cats,
		      struct gc_error *err);

/*
 * Human drift lines for `plan`, one per property, appended to b:
 *   "  interface ethernet 1/7 qos trust: L2 -> L3"
 *   "  traffic pool roce memory percent: 40.00 -> 50.00"
 * Returns the number of lines written (0 when converged).
 */
size_t gc_onyx_drift(struct gc_buf *b, const struct gc_onyx_desired *desired,
		     const struct gc_onyx_state *observed, bool owned);

/*
 * Version gate for the desired state: oneshot needs Onyx >= 3.8.2000, the
 * manual recipe's `traffic pool` needs >= 3.6.5000.  GC_ENOTSUP with a clear
 * message otherwise.
 */
int gc_onyx_check_version(const struct gc_onyx_desired *desired,
			  const struct gc_onyx_version *v, const char *switch_name,
			  struct gc_error *err);

/* ---------------------------------------------------------------- observed store */

/* The diff category of a switch.* resource kind; 0 for other kinds. */
unsigned gc_onyx_cat_of(enum gc_res_kind kind);
/*
 * Record an observed switch into the store in the graph's shape: for each
 * switch.* resource of res[0..nres), its desired properties verbatim when
 * the category is converged, else what the switch has (at least one key
 * then differs).  When sw->roce->owned, categories the spec no longer has
 * but the switch still carries are recorded as "<switch>/switch.<kind>" so
 * the planner plans their removal.
 */
void gc_onyx_record(struct gc_observed *obs, const struct gc_switch *sw,
		    const struct gc_onyx_desired *desired, const struct gc_onyx_state *st,
		    const struct gc_resource *const *res, size_t nres);

/* ---------------------------------------------------------------- interactive session */

/*
 * The byte channel under a session (gc_ssh's PTY shell channel in real use).
 * read: wait at most timeout_ms for data; returns the byte count (>0), 0 on
 * timeout, or a negative gc_code with err set (EOF: GC_ENET).
 * write: writes everything or returns a negative gc_code with err set.
 */
struct gc_onyx_chan {
	void *ctx;
	ssize_t (*read)(void *ctx, char *buf, size_t n, int timeout_ms, struct gc_error *err);
	int (*write)(void *ctx, const char *buf, size_t n, struct gc_error *err);
};

/* The channel over gc_ssh's PTY shell (include/gc/ssh.h); the shell stays the caller's. */
struct gc_ssh_shell;
void gc_onyx_chan_ssh(struct gc_onyx_chan *out, struct gc_ssh_shell *shell);

enum gc_onyx_mode {
	GC_ONYX_MODE_NONE = 0,
	GC_ONYX_MODE_USER,    /* "host [standalone: master] > " */
	GC_ONYX_MODE_ENABLE,  /* "host [standalone: master] # " */
	GC_ONYX_MODE_CONFIG,  /* "host [standalone: master] (config) # " */
	GC_ONYX_MODE_SUB,     /* "(config interface ethernet 1/1) # ", "(config pool roce) # " */
};

struct gc_onyx_session_opts {
	const char *switch_name;         /* for messages: "switch 'sn2700': ..." */
	const char *enable_password_env; /* env var with the enable secret, or NULL */
	int timeout_ms;                  /* per command; default 30000 */
	size_t max_output;               /* per command; default GC_ONYX_MAX_OUTPUT */
	/* Optional transcript of lines sent (the secret is shown as ********). */
	void (*log)(void *log_ctx, const char *line_sent);
	void *log_ctx;
};

struct gc_onyx_session;

/*
 * Wait for the first prompt (skipping the "Mellanox Switch" banner), go to
 * enable mode (answering `password: ` from the env secret), turn paging off.
 * The channel stays the caller's.
 */
int gc_onyx_session_open(struct gc_onyx_session **out, const struct gc_onyx_chan *chan,
			 const struct gc_onyx_session_opts *opts, struct gc_error *err);
/*
 * Run one command; *out (optional, caller frees) is its output without the
 * echo and the prompt, lines joined by '\n'.  A line starting with '%' makes
 * it GC_EREMOTE: "switch 'NAME': command 'CMD' failed: % ...".
 */
int gc_onyx_session_exec(struct gc_onyx_session *s, char **out, const char *cmd,
			 struct gc_error *err);
/* `configure terminal`; no-op when already in config mode. */
int gc_onyx_session_configure(struct gc_onyx_session *s, struct gc_error *err);
/* Leave sub-modes and config mode (`exit` until the enable prompt). */
int gc_onyx_session_end_configure(struct gc_onyx_session *s, struct gc_error *err);
/*
 * configure terminal, each command in order (stops at the first failure,
 * without saving), `configuration write`, back to enable mode.  An empty
 * list sends nothing.
 */
int gc_onyx_session_apply(struct gc_onyx_session *s, const struct gc_onyx_cmds *cmds,
			  struct gc_error *err);
/* The wait for each later command's prompt (> 0; the open's is opts->timeout_ms):
 * the driver reads with the spec's read timeout and changes with its command
 * timeout. */
void gc_onyx_session_set_timeout(struct gc_onyx_session *s, int timeout_ms);
enum gc_onyx_mode gc_onyx_session_mode(const struct gc_onyx_session *s);
const char *gc_onyx_session_hostname(const struct gc_onyx_session *s);
/* Clean `exit` (waits briefly for the far end to close) and free.  NULL ok. */
void gc_onyx_session_close(struct gc_onyx_session *s);

/*
 * Observe: `show version` and `show running-config` (and `show roce` when
 * desired is oneshot and the release has it) into version and st.
 */
int gc_onyx_session_observe(struct gc_onyx_session *s, struct gc_onyx_version *version,
			    struct gc_onyx_state *st, bool want_roce, struct gc_error *err);

#endif
