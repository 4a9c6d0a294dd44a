/*
 * fuzz_onyx_session.c - the Onyx CLI session (src/drivers/onyx/session.c)
 * on whatever bytes a switch sends: prompt recognition and modes, the
 * enable password exchange, escape sequences, echo stripping, '%' errors,
 * then the observation (`show version`, `show running-config`, `show
 * roce`) through the parsers, the diff against the SN2700 RoCE recipe and
 * its apply, as the driver runs them, over a fake channel.
 *
 * The input is the switch's side of the conversation: one reply per line
 * the session writes (the banner first), replies separated by the byte 0x1e,
 * each delivered in reads of at most 512 bytes; once a reply is used up a
 * read fails (the connection closed), so nothing waits.
 *
 * Checked: an open session has seen a prompt and knows a hostname of
 * hostname characters; a successful apply leaves config mode; no line sent
 * carries a control character; the enable secret is written at most once,
 * as its own line, and appears in no transcript line and no error message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "gc/onyx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SECRET "s3cret-Enable"
#define SEP 0x1e

struct chan {
	const char *p, *end; /* the replies not yet used */
	const char *r, *rend; /* the reply being read */
	unsigned secret_writes;
};

static ssize_t chan_read(void *ctx, char *buf, size_t n, int timeout_ms, struct gc_error *err)
{
	struct chan *c = ctx;
	size_t k = (size_t)(c->rend - c->r);

	(void)timeout_ms;
	if (k == 0)
		return gc_error_set(err, GC_ENET, "connection closed");
	if (k > n)
		k = n;
	if (k > 512)
		k = 512;
	memcpy(buf, c->r, k);
	c->r += k;
	return (ssize_t)k;
}

/* The next reply becomes readable. */
static void next_reply(struct chan *c)
{
	const char *sep = memchr(c->p, SEP, (size_t)(c->end - c->p));

	c->r = c->p;
	c->rend = sep ? sep : c->end;
	c->p = sep ? sep + 1 : c->end;
}

static int chan_write(void *ctx, const char *buf, size_t n, struct gc_error *err)
{
	struct chan *c = ctx;

	(void)err;
	must(n > 0 && buf[n - 1] == '\n');
	for (size_t i = 0; i + 1 < n; i++)
		must((unsigned char)buf[i] >= 0x20 && (unsigned char)buf[i] < 0x7f);
	if (n == sizeof(SECRET) && memcmp(buf, SECRET "\n", n) == 0)
		c->secret_writes++;
	else
		must(memmem(buf, n, SECRET, sizeof(SECRET) - 1) == NULL);
	next_reply(c);
	return 0;
}

static void log_line(void *ctx, const char *line)
{
	(void)ctx;
	must(strstr(line, SECRET) == NULL);
}

static void no_secret(const struct gc_error *err)
{
	must(strstr(err->msg, SECRET) == NULL);
}

static void conversation(struct gc_onyx_session *s, struct gc_error *err)
{
	static struct gc_switch_roce r = {.mode = "dscp-lossless", .pool_percent = 50.0,
					  .priority = 3, .ecn_min_kb = 150, .ecn_max_kb = 1500,
					  .cnp_traffic_class = 6, .pfc = true, .lldp = true};
	struct gc_switch sw = {.name = "sn2700", .ports = "1/1-1/4", .roce = &r};
	struct gc_onyx_version v;
	struct gc_onyx_state st;
	struct gc_onyx_desired d;
	struct gc_onyx_cmds cmds = {NULL, 0};

	memset(&v, 0, sizeof(v));
	gc_onyx_state_init(&st);
	if (gc_onyx_session_observe(s, &v, &st, true, err) == 0 &&
	    gc_onyx_desired(&d, &sw, err) == 0) {
		touch(v.product);
		touch(v.release);
		if (gc_onyx_diff(&cmds, &d, &st, true, err) == 0 &&
		    gc_onyx_session_apply(s, &cmds, err) == 0 && cmds.n > 0)
			must(gc_onyx_session_mode(s) < GC_ONYX_MODE_CONFIG);
		gc_onyx_cmds_free(&cmds);
		gc_onyx_desired_free(&d);
	}
	gc_onyx_state_free(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool env;
	struct chan c = {(const char *)data, (const char *)data + size, NULL, NULL, 0};
	struct gc_onyx_session_opts o = {"sn2700", "GC_FUZZ_ONYX_ENABLE", 1000, 1u << 20,
					 log_line, NULL};
	struct gc_onyx_chan ch = {&c, chan_read, chan_write};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_session *s = NULL;

	if (!env) {
		setenv("GC_FUZZ_ONYX_ENABLE", SECRET, 1);
		env = true;
	}
	next_reply(&c); /* the banner and the first prompt */
	if (gc_onyx_session_open(&s, &ch, &o, &err) == 0) {
		const char *host = gc_onyx_session_hostname(s);

		/* a prompt was seen (the mode it shows is the switch's to choose: a
		 * session dropped to user mode fails on its next command) */
		must(gc_onyx_session_mode(s) != GC_ONYX_MODE_NONE);
		must(host[0] != '\0' && strspn(host, "abcdefghijklmnopqrstuvwxyz"
						     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
						     strlen(host));
		conversation(s, &err);
		gc_onyx_session_close(s);
	}
	must(c.secret_writes <= 1);
	no_secret(&err);
	return 0;
}
