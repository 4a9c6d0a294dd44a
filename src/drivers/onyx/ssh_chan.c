/*
 * ssh_chan.c - bind an Onyx CLI session to gc_ssh's PTY shell channel.
 *
 * gc_ssh_shell_read()/gc_ssh_shell_write() already have the shapes of
 * struct gc_onyx_chan's read/write; these wrappers only fix the ctx type.
 */
#include "gc/onyx.h"
#include "gc/ssh.h"

static ssize_t shell_read(void *ctx, char *buf, size_t n, int timeout_ms, struct gc_error *err)
{
	return gc_ssh_shell_read(ctx, buf, n, timeout_ms, err);
}

static int shell_write(void *ctx, const char *buf, size_t n, struct gc_error *err)
{
	return gc_ssh_shell_write(ctx, buf, n, err);
}

void gc_onyx_chan_ssh(struct gc_onyx_chan *out, struct gc_ssh_shell *shell)
{
	out->ctx = shell;
	out->read = shell_read;
	out->write = shell_write;
}
