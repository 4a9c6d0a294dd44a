/*
 * fixture.c - start and stop a private vcsim, connect to it and observe it
 * (see fixture.h).  Failures inside a test go through cmocka's fail_msg().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Start vcsim in GC_BINARY_DIR/<leaf> on port with args for `vcsim.sh start`. */
static int start(struct vcsim *v, const char *leaf, unsigned port, const char *args)
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

int vcsim_setup(struct vcsim *v, const char *prog, unsigned port, const char *args)
{
	char leaf[128];

	snprintf(leaf, sizeof(leaf), "%s-vcsim", prog);
	for (char *p = leaf; *p != '\0'; p++)
		if (*p == '_')
			*p = '-';
	if (start(v, leaf, port, args) != 0) {
		fprintf(stderr, "%s: vcsim did not start (see %s/vcsim.log)\n", prog, v->dir);
		return -1;
	}
	return 0;
}

struct gc_vcenter_opts vcsim_opts(const struct vcsim *v)
{
	struct gc_vcenter_opts o = {0};

	o.url = v->url;
	o.username = "gcadmin";
	o.password_file = v->password_file;
	o.ca_file = v->ca_file;
	return o;
}

struct gc_vcenter_conn *vcsim_connect_opts(const struct gc_vcenter_opts *o)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_conn *vc = NULL;

	if (gc_vcenter_connect(&vc, o, &err) < 0)
		fail_msg("connect: %s", err.msg);
	return vc;
}

struct gc_vcenter_conn *vcsim_connect(const struct vcsim *v)
{
	struct gc_vcenter_opts o = vcsim_opts(v);

	return vcsim_connect_opts(&o);
}

struct gc_vcenter_inventory *vcsim_observe(struct gc_vcenter_conn *vc)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_inventory *inv = NULL;

	if (gc_vcenter_observe(&inv, vc, &err) < 0)
		fail_msg("observe: %s", err.msg);
	return inv;
}

void vcsim_faults(const struct vcsim *v, const char *json)
{
	char path[700];
	FILE *f;

	snprintf(path, sizeof(path), "%s/faults.json", v->dir);
	if (json == NULL) {
		unlink(path);
		return;
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(json, f);
	fclose(f);
}
