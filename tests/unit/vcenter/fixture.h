/*
 * fixture.h - a private vcsim for one test program: its own lab dir under
 * the build tree and its own port, started by tests/sim/vcsim.sh and stopped
 * at the end.  If vcsim cannot start the suite fails: never skipped.
 */
#ifndef GC_TEST_VCENTER_FIXTURE_H
#define GC_TEST_VCENTER_FIXTURE_H

#include "gc/util.h"

struct vcsim {
	char dir[512];
	unsigned port;
	char url[64];          /* "https://127.0.0.1:PORT" */
	char target[128];      /* "vCenter (https://127.0.0.1:PORT)" */
	char ca_file[600];
	char password_file[600];
	char password[256];
};

/* Start vcsim in GC_BINARY_DIR/<leaf> on port; 0 on success. */
int vcsim_start(struct vcsim *v, const char *leaf, unsigned port);
/* The same with extra arguments for `vcsim.sh start` (e.g. "--vms 500"). */
int vcsim_start_args(struct vcsim *v, const char *leaf, unsigned port, const char *args);
void vcsim_stop(const struct vcsim *v);
/* system() of a formatted command. */
int sh(const char *fmt, ...) GC_PRINTF(1, 2);

#endif
