/*
 * observed.h - what the world looks like now, in the shape of the resource
 * graph, so the planner's diff is generic.
 *
 * Three kinds of facts:
 *   - resources: resource id -> ordered key=value properties.  A resource
 *     that is present (even with no properties) exists; an absent one does
 *     not, and the planner creates it;
 *   - hosts: per ESXi host, whether it is in maintenance mode and reachable;
 *   - VMs: per VM (managed or not), its power state and the host it runs on.
 *     The planner powers off or migrates every powered-on VM of a host that
 *     must enter maintenance mode, including VMs the spec does not manage.
 *
 * Sources: gc_observed_new() is the offline default ("nothing exists");
 * gc_observed_load_json() reads a snapshot (docs/observed-json.md,
 * specs/observed-v1.schema.json); drivers fill the same store live with
 * gc_observed_set*() (one batch per target, then gc_plan_build()).
 *
 * The store copies every string.  It is not thread-safe: drivers observing
 * in parallel fill it from one thread (or under their own lock).
 */
#ifndef GC_OBSERVED_H
#define GC_OBSERVED_H

#include <stdbool.h>
#include <stddef.h>

#include "gc/error.h"
#include "gc/graph.h"

#define GC_OBSERVED_MAX_BYTES (256u * 1024 * 1024)

enum gc_power { GC_POWER_UNKNOWN = 0, GC_POWER_OFF, GC_POWER_ON, GC_POWER_SUSPENDED };

struct gc_observed_host {
	const char *name;
	bool maintenance;
	bool reachable; /* false: the planner refuses to plan changes for it */
	/* what only the device's pending state or the journal can tell: */
	bool reboot_pending;            /* configured changes wait for a reboot */
	const char *reboot_pending_why; /* for the plan's "why", or NULL */
	bool maintenance_ours;          /* in maintenance because an apply put it there */
};

struct gc_observed_vm {
	const char *name;
	enum gc_power power;
	const char *host;     /* where it runs now, or NULL when unknown */
	bool live_migratable; /* for VMs the spec does not manage */
};

struct gc_observed_resource {
	const char *id;
	struct gc_prop *props; /* in the order they were set */
	size_t nprops;
	size_t capprops; /* internal */
};

struct gc_observed;

void gc_observed_new(struct gc_observed **out);
void gc_observed_free(struct gc_observed *o);

/* Mark a resource as existing (no-op when it already does). */
void gc_observed_add(struct gc_observed *o, const char *resource_id);
/* Set one property (and mark the resource as existing); replaces an old value. */
void gc_observed_set(struct gc_observed *o, const char *resource_id, const char *key,
		     const char *value);
/*
 * Desired values a driver learned on the target, for a desired property whose
 * graph value is GC_PROP_LEARNED (the VIB names and versions an offline
 * bundle holds, read on the host).  Kept apart from the observed properties:
 * learning does not make a resource exist.  The planner reads them through
 * gc_plan_desired(); snapshots carry them as "learned".
 */
void gc_observed_learn(struct gc_observed *o, const char *resource_id, const char *key,
		       const char *value);
/* NULL when nothing was learned for that key. */
const char *gc_observed_learned(const struct gc_observed *o, const char *resource_id,
				const char *key);
/* Host and VM facts; a later call replaces an earlier one. */
void gc_observed_set_host(struct gc_observed *o, const char *host, bool maintenance,
			  bool reachable);
/* Pending reboot and maintenance ownership (created like set_host when new,
 * as not in maintenance and reachable).  why may be NULL; it is copied. */
void gc_observed_set_host_pending(struct gc_observed *o, const char *host, bool pending,
				  const char *why);
void gc_observed_set_host_ours(struct gc_observed *o, const char *host, bool ours);
/* host may be NULL (unknown).  Also sets resource vm/<name>/power power=on|off. */
void gc_observed_set_vm(struct gc_observed *o, const char *vm, enum gc_power power,
			const char *host, bool live_migratable);

/* Lookups: NULL when absent.  Returned pointers are borrowed. */
const struct gc_observed_resource *gc_observed_resource(const struct gc_observed *o,
							const char *resource_id);
const char *gc_observed_get(const struct gc_observed *o, const char *resource_id,
			    const char *key);
const struct gc_observed_host *gc_observed_host(const struct gc_observed *o, const char *host);
const struct gc_observed_vm *gc_observed_vm(const struct gc_observed *o, const char *vm);

/* All resources / VMs in insertion order (for deletes and evacuation). */
size_t gc_observed_nresources(const struct gc_observed *o);
const struct gc_observed_resource *gc_observed_resource_at(const struct gc_observed *o, size_t i);
size_t gc_observed_nvms(const struct gc_observed *o);
const struct gc_observed_vm *gc_observed_vm_at(const struct gc_observed *o, size_t i);

/* "on", "off", "suspended", "unknown" and back (GC_EINVAL when unknown text). */
const char *gc_power_name(enum gc_power p);
int gc_power_parse(enum gc_power *out, const char *s);

/*
 * Read a snapshot file into a new store.  Errors name the file and, where
 * it matters, the JSON path: "obs.json: resources.\"esx01/esxi.ntp\".servers:
 * expected a string".  GC_EINVAL for malformed input, GC_EIO for I/O.
 */
int gc_observed_load_json(struct gc_observed **out, const char *path, struct gc_error *err);
/*
 * Write the store as a version-1 snapshot (what gc_observed_load_json()
 * reads back to an equal store): resources in insertion order, then hosts,
 * then VMs.  For `observe --json`, bug reports and tests.
 */
void gc_observed_render_json(struct gc_buf *out, const struct gc_observed *o);
int gc_observed_load_json_buffer(struct gc_observed **out, const char *name, const char *data,
				 size_t len, struct gc_error *err);

#endif
