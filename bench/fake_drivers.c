/*
 * fake_drivers.c - drivers that answer at once (see fake_drivers.h).
 */
#include <stddef.h>

#include "fake_drivers.h"
#include "gc/graph.h"
#include "gc/util.h"

int (*gc_fake_apply_hook)(const struct gc_action *a, struct gc_error *err);
void (*gc_fake_observe_hook)(struct gc_drv_ctx *ctx, const struct gc_target *t,
			     const struct gc_resource *const *res, size_t nres);

static int fake_connect(void **conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
			struct gc_error *err)
{
	(void)ctx;
	(void)err;
	*conn = (void *)t;
	return 0;
}

static int fake_observe(void *conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
			const struct gc_resource *const *res, size_t nres, struct gc_buf *problems,
			struct gc_error *err)
{
	struct gc_drv_host_state hs = {false, false, NULL};

	(void)conn;
	(void)problems;
	(void)err;
	if (t->kind == GC_TARGET_ESXI || t->kind == GC_TARGET_KVM)
		gc_drv_host_state(ctx, t->name, &hs);
	if (gc_fake_observe_hook != NULL)
		gc_fake_observe_hook(ctx, t, res, nres);
	return 0;
}

static int fake_apply(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *a,
		      struct gc_error *err)
{
	(void)conn;
	(void)ctx;
	return gc_fake_apply_hook != NULL ? gc_fake_apply_hook(a, err) : 0;
}

static void fake_disconnect(void *conn)
{
	(void)conn;
}

#define FAKE(k, shared)                                                                            \
	{.name = "fake", .kind = (k), .shared_conn = (shared), .connect = fake_connect,             \
	 .observe = fake_observe, .apply = fake_apply, .disconnect = fake_disconnect}

static const struct gc_driver fakes[] = {
	[GC_TARGET_ESXI] = FAKE(GC_TARGET_ESXI, false),
	[GC_TARGET_SWITCH] = FAKE(GC_TARGET_SWITCH, false),
	[GC_TARGET_VCENTER] = FAKE(GC_TARGET_VCENTER, true),
	[GC_TARGET_GUEST] = FAKE(GC_TARGET_GUEST, false),
	[GC_TARGET_LIBVIRT] = FAKE(GC_TARGET_LIBVIRT, true),
	[GC_TARGET_KVM] = FAKE(GC_TARGET_KVM, false),
};

const struct gc_driver *gc_exec_driver(enum gc_target_kind kind)
{
	return (size_t)kind < sizeof(fakes) / sizeof(fakes[0]) ? &fakes[kind] : NULL;
}
