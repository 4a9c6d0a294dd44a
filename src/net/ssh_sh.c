/*
 * ssh_sh.c - sh scripts run as root over an SSH exec, the Linux targets'
 * way (guests, KVM hosts): directly for root, else through `sudo -n`, so a
 * sudo that wants a password is a clear error, never a hang.  And the
 * target's own words when a script fails: the last lines it wrote.
 */
#include <stdlib.h>
#include <string.h>

#include "gc/pattern.h"
#include "gc/ssh.h"

char *gc_ssh_as_root(const char *script)
{
	struct gc_buf b = GC_BUF_INIT;

	gc_buf_puts(&b, "if [ \"$(id -u)\" = 0 ]; then exec sh -c ");
	gc_shell_quote(&b, script);
	gc_buf_puts(&b, "; else exec sudo -n sh -c ");
	gc_shell_quote(&b, script);
	gc_buf_puts(&b, "; fi");
	return gc_buf_take(&b);
}

bool gc_ssh_sudo_refused(const struct gc_ssh_result *r)
{
	return r->exit_status != 0 && r->err != NULL &&
	       (strstr(r->err, "sudo: a password is required") != NULL ||
	        strstr(r->err, "sudo: a terminal is required") != NULL);
}

void gc_ssh_message(struct gc_buf *out, const struct gc_ssh_result *r)
{
	const char *src = r->err_len > 0 ? r->err : r->out;
	const char *starts[3] = {NULL, NULL, NULL};
	const char *p = src;
	size_t k = 0;

	while (*p) {
		size_t n = strcspn(p, "\r\n");

		if (n > 0 && strspn(p, " \t") < n) {
			starts[k % 3] = p;
			k++;
		}
		p += n;
		p += strspn(p, "\r\n");
	}
	if (k == 0) {
		gc_buf_printf(out, "exit status %d", r->exit_status);
		return;
	}
	for (size_t i = k > 3 ? k - 3 : 0; i < k; i++) {
		const char *l = starts[i % 3];
		size_t n = strcspn(l, "\r\n");

		if (out->len > 0)
			gc_buf_puts(out, " | ");
		gc_buf_put(out, l, n > 400 ? 400 : n);
	}
}

int gc_ssh_run_root(struct gc_ssh_conn *conn, const char *what, const char *script, int in,
                    const char *user, struct gc_ssh_result *out, struct gc_error *err)
{
	struct gc_ssh_result res;
	char *cmd = gc_ssh_as_root(script);
	int rc;

	rc = in >= 0 ? gc_ssh_exec_stdin(conn, cmd, in, &res, err)
	             : gc_ssh_exec(conn, cmd, &res, err);
	free(cmd);
	if (rc != 0) {
		gc_error_prefix(err, "%s: ", what);
		return rc;
	}
	if (gc_ssh_sudo_refused(&res)) {
		gc_ssh_result_free(&res);
		return gc_error_set(err, GC_EREMOTE,
		                    "sudo wants a password for '%s': give it NOPASSWD "
		                    "for root commands (a sudoers drop-in) or connect as root",
		                    user ? user : "?");
	}
	if (out != NULL) {
		*out = res;
		return 0;
	}
	if (res.exit_status != 0) {
		struct gc_buf msg = GC_BUF_INIT;

		gc_ssh_message(&msg, &res);
		rc = gc_error_set(err, GC_EREMOTE, "%s failed: %s", what, gc_buf_str(&msg));
		gc_buf_free(&msg);
	}
	gc_ssh_result_free(&res);
	return rc;
}
