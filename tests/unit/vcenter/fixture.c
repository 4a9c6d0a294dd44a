/*
 * fixture.c - start and stop a private vcsim (see fixture.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

int vcsim_start(struct vcsim *v, const char *leaf, unsigned port)
{
	return vcsim_start_args(v, leaf, port, "");
}

int vcsim_start_args(struct vcsim *v, const char *leaf, unsigned port, const char *args)
{
	struct gc_error err = GC_ERROR_INIT;
	char *pw = NULL;

	memset(v, 0, sizeof(*v));
	snprintf(v->dir, sizeof(v->dir), "%s/%s", GC_BINARY_DIR, leaf);
	v->port = port;
	snprintf(v->url, sizeof(v->url), "https://127.0.0.1:%u", port);
	snprintf(v->target, sizeof(v->target), "vCenter (https://127.0.0.1:%u)", port);
	snprintf(v->ca_file, sizeof(v->ca_file), "%s/ca.crt", v->dir);
	snprintf(v->password_file, sizeof(v->password_file), "%s/password", v->dir);
	vcsim_stop(v);
	if (sh("GC_VCSIM_DIR='%s' '%s/tests/sim/vcsim.sh' start --port %u %s", v->dir,
	       GC_SOURCE_DIR, port, args) != 0)
		return -1;
	if (gc_read_file(&pw, NULL, v->password_file, sizeof(v->password) - 1, &err) < 0)
		return -1;
	pw[strcspn(pw, "\n")] = '\0';
	snprintf(v->password, sizeof(v->password), "%s", pw);
	free(pw);
	return 0;
}

void vcsim_stop(const struct vcsim *v)
{
	sh("GC_VCSIM_DIR='%s' '%s/tests/sim/vcsim.sh' stop >/dev/null 2>&1", v->dir,
	   GC_SOURCE_DIR);
}
