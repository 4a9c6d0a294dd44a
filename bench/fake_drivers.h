/*
 * fake_drivers.h - drivers that answer at once, for bench/exec_bench.c and
 * tests/unit/exec/test_schedule.c.  Linking fake_drivers.c supplies
 * gc_exec_driver() itself, so the real drivers' table in gc_exec is not
 * linked: every target kind gets a driver whose observation finds each host
 * up and out of maintenance mode (so every resource is planned), whose
 * actions succeed at once unless gc_fake_apply_hook says otherwise, and
 * which takes no lease.  The vCenter and libvirtd drivers share their
 * connection (lanes), as the real ones do.
 */
#ifndef GC_FAKE_DRIVERS_H
#define GC_FAKE_DRIVERS_H

#include "gc/exec.h"

/* Called for every action when set; its return is the action's. */
extern int (*gc_fake_apply_hook)(const struct gc_action *a, struct gc_error *err);
/* Called at the end of every observation when set: it may record what the
 * target holds (gc_drv_record), as a real driver would. */
struct gc_drv_ctx;
struct gc_resource;
extern void (*gc_fake_observe_hook)(struct gc_drv_ctx *ctx, const struct gc_target *t,
				    const struct gc_resource *const *res, size_t nres);

#endif
