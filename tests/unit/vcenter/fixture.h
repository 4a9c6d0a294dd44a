/*
 * fixture.h - a private vcsim for one test program: its own lab dir under
 * the build tree and its own port, started by tests/sim/vcsim.sh and stopped
 * at the end.  If vcsim cannot start the suite fails: never skipped.  Then
 * the steps every vCenter test repeats: the options for this vcsim, connect
 * and observe (each failing the test on an error).
 */
#ifndef GC_TEST_VCENTER_FIXTURE_H
#define GC_TEST_VCENTER_FIXTURE_H

#include "gc/util.h"
#include "gc/vcenter.h"

struct vcsim {
	char dir[512];
	unsigned port;
	char url[64];          /* "https://127.0.0.1:PORT" */
	char target[128];      /* "vCenter (https://127.0.0.1:PORT)" */
	char ca_file[600];
	char password_file[600];
	char password[256];
};

/*
 * A group setup's start: vcsim in GC_BINARY_DIR/<prog, '-' for '_'>-vcsim
 * (test_dvs: test-dvs-vcsim) on port, with extra arguments for `vcsim.sh
 * start` ("" for none, "--vms 500"); says on stderr where its log is when
 * it does not start.  0 on success.
 */
int vcsim_setup(struct vcsim *v, const char *prog, unsigned port, const char *args);
void vcsim_stop(const struct vcsim *v);

/* Options to log in to v as gcadmin with its password file and CA. */
struct gc_vcenter_opts vcsim_opts(const struct vcsim *v);
/* Connect with o (vcsim_connect: vcsim_opts(v)) or fail the test. */
struct gc_vcenter_conn *vcsim_connect_opts(const struct gc_vcenter_opts *o);
struct gc_vcenter_conn *vcsim_connect(const struct vcsim *v);
/* One observation, or fail the test. */
struct gc_vcenter_inventory *vcsim_observe(struct gc_vcenter_conn *vc);
/* v's -faults file (tests/sim/vcsim: faults.json); NULL removes it. */
void vcsim_faults(const struct vcsim *v, const char *json);
/* system() of a formatted command. */
int sh(const char *fmt, ...) GC_PRINTF(1, 2);

#endif
