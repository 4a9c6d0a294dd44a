/*
 * driver.c - the vCenter driver: struct gc_driver over one SOAP session.
 *
 * One HTTPS connection and one SOAP session per vCenter per run, shared by
 * every VM: the executor runs different VMs' actions at once on it
 * (shared_conn), so everything here is thread-safe.  The connection
 * serialises each HTTP exchange; tasks of different VMs are in flight
 * together, bounded by the spec's vcenter.max_tasks and max_tasks_per_host
 * (a thread waits for a slot before it starts a task).
 *
 * Observation is one RetrievePropertiesEx for the whole inventory
 * (observe.c); record.c maps it onto the graph's resources; changes.c
 * carries out the actions.  The latest
 * inventory is kept for the morefs the actions need; an action that needs
 * something made earlier in this run (a switch, a cloned VM) and cannot
 * find it re-reads the inventory once.  Inventories are never freed before
 * disconnect, so a pointer a thread took stays valid.
 *
 * Every change is a vCenter task whose failure is reported with vCenter's
 * own message and the VM's name; the executor then stops that VM only.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/spec.h"
#include "gc/sys/driver.h"
#include "gc/vcenter.h"
#include "vcdrv.h"


/* ---------------------------------------------------------------- task slots */

static struct host_slot *host_slot(struct vc_conn *c, const char *host)
{
	if (host == NULL)
		return NULL;
	for (size_t i = 0; i < c->nslots; i++)
		if (strcmp(c->slots[i].host, host) == 0)
			return &c->slots[i];
	return NULL;
}

/* Wait until a task may start on this vCenter (and host, when named). */
void gc_vcdrv_slot_get(struct vc_conn *c, const char *host)
{
	struct host_slot *h;

	pthread_mutex_lock(&c->mu);
	h = host_slot(c, host);
	while (c->tasks >= c->max_tasks || (h != NULL && h->n >= c->max_per_host))
		pthread_cond_wait(&c->cv, &c->mu);
	c->tasks++;
	if (h != NULL)
		h->n++;
	pthread_mutex_unlock(&c->mu);
}

void gc_vcdrv_slot_put(struct vc_conn *c, const char *host)
{
	struct host_slot *h;

	pthread_mutex_lock(&c->mu);
	h = host_slot(c, host);
	c->tasks--;
	if (h != NULL)
		h->n--;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* ---------------------------------------------------------------- connect, observe */

static int vc_connect(void **conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
		      struct gc_error *err)
{
	const struct gc_cluster *cl = gc_drv_cluster(ctx);
	struct gc_vcenter_opts o;
	struct vc_conn *c;
	int rc;

	if (cl == NULL || cl->vcenter == NULL)
		return gc_error_set(err, GC_EINVAL, "vCenter target '%s' has no spec", t->name);
	gc_vcenter_opts_from_spec(&o, cl->vcenter, cl->vcenter->credentials);
	c = gc_xcalloc(1, sizeof(*c));
	rc = gc_vcenter_connect(&c->vc, &o, err);
	if (rc != 0) {
		free(c);
		return rc;
	}
	c->c = cl;
	c->t = t;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->max_tasks = cl->vcenter->max_tasks ? cl->vcenter->max_tasks : 8;
	c->max_per_host = cl->vcenter->max_tasks_per_host ? cl->vcenter->max_tasks_per_host : 2;
	c->slots = gc_xcalloc(cl->nhosts ? cl->nhosts : 1, sizeof(*c->slots));
	for (size_t i = 0; i < cl->nhosts; i++)
		c->slots[c->nslots++].host = cl->hosts[i].name;
	/* the spec's vcenter.shutdown_timeout_s (default 300) */
	c->shutdown_timeout_ms =
		(cl->vcenter->shutdown_timeout_s ? cl->vcenter->shutdown_timeout_s : 300) * 1000u;
	if (gc_test_hook("GC_GUEST_SHUTDOWN_TIMEOUT_MS") != NULL) /* tests: below a second */
		c->shutdown_timeout_ms =
			(unsigned)strtoul(gc_test_hook("GC_GUEST_SHUTDOWN_TIMEOUT_MS"), NULL, 10);
	*conn = c;
	return 0;
}

static void vc_disconnect(void *conn)
{
	struct vc_conn *c = conn;

	if (c == NULL)
		return;
	gc_vcenter_free(c->vc);
	gc_vcenter_inventory_free(c->inv);
	for (size_t i = 0; i < c->nold; i++)
		gc_vcenter_inventory_free(c->old[i]);
	free(c->old);
	for (size_t i = 0; i < c->npci; i++) {
		free(c->pci[i].host);
		free(c->pci[i].t);
	}
	free(c->pci);
	free(c->slots);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
}

struct rec_arg {
	const struct vc_conn *c;
	const struct gc_vcenter_inventory *inv;
	struct gc_buf *problems;
};

static void record_cb(struct gc_observed *obs, void *arg)
{
	struct rec_arg *ra = arg;

	gc_vcdrv_record(obs, ra->inv, ra->c->c, ra->c->res, ra->c->nres, ra->problems);
}

/* The advanced settings the graph manages: one QueryOptions each. */
static int query_settings(struct vc_conn *c, struct gc_vcenter_inventory *inv,
			  struct gc_error *err)
{
	const char *keys[64];
	size_t n = 0;

	for (size_t i = 0; i < c->nres && n < GC_ARRAY_LEN(keys); i++)
		if (c->res[i]->kind == GC_RES_VCENTER_SETTING &&
		    gc_resource_prop(c->res[i], "key") != NULL)
			keys[n++] = gc_resource_prop(c->res[i], "key");
	return n > 0 ? gc_vcenter_query_settings(inv, c->vc, keys, n, err) : 0;
}

/* Observe now: one property-collector call (and the settings the graph
 * manages), recorded into the store. */
static int observe_now(struct vc_conn *c, struct gc_drv_ctx *ctx, struct gc_buf *problems,
		       struct gc_error *err)
{
	struct gc_vcenter_inventory *inv;
	struct gc_buf scratch = GC_BUF_INIT;
	struct rec_arg ra;
	int rc = gc_vcenter_observe(&inv, c->vc, err);

	if (rc != 0)
		return rc;
	if ((rc = query_settings(c, inv, err)) != 0) {
		gc_vcenter_inventory_free(inv);
		return rc;
	}
	ra.c = c;
	ra.inv = inv;
	ra.problems = problems ? problems : &scratch;
	gc_drv_record(ctx, record_cb, &ra);
	gc_buf_free(&scratch);
	gc_drv_note(ctx, c->t, "observed %zu VMs and %zu hosts in %u property-collector round trip%s",
		    inv->nvms, inv->nhosts, inv->round_trips, inv->round_trips == 1 ? "" : "s");
	pthread_mutex_lock(&c->mu);
	if (c->inv != NULL) {
		c->old = gc_xrealloc(c->old, (c->nold + 1) * sizeof(*c->old));
		c->old[c->nold++] = c->inv;
	}
	c->inv = inv;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

static int vc_observe(void *conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
		      const struct gc_resource *const *res, size_t nres, struct gc_buf *problems,
		      struct gc_error *err)
{
	struct vc_conn *c = conn;

	(void)t;
	c->res = res;
	c->nres = nres;
	return observe_now(c, ctx, problems, err);
}

const struct gc_vcenter_inventory *gc_vcdrv_snapshot(struct vc_conn *c)
{
	const struct gc_vcenter_inventory *inv;

	pthread_mutex_lock(&c->mu);
	inv = c->inv;
	pthread_mutex_unlock(&c->mu);
	return inv;
}

/* Read the inventory again (something this run made is not in the snapshot). */
const struct gc_vcenter_inventory *gc_vcdrv_refresh(struct vc_conn *c, struct gc_drv_ctx *ctx,
						  struct gc_error *err)
{
	return observe_now(c, ctx, NULL, err) == 0 ? gc_vcdrv_snapshot(c) : NULL;
}

/* ---------------------------------------------------------------- lookups */

int gc_vcdrv_place(struct place *p, struct vc_conn *c, const struct gc_vcenter_inventory *inv,
		    const struct gc_host *h, struct gc_error *err)
{
	p->host = gc_vcdrv_host(inv, h);
	if (p->host == NULL)
		return gc_error_set(err, GC_EREMOTE, "%s: no host '%s' in vCenter",
				    gc_vcenter_target(c->vc), h ? h->name : "?");
	p->compute = gc_vcenter_inventory_compute(inv, p->host->parent);
	if (p->compute == NULL)
		return gc_error_set(err, GC_EREMOTE, "%s: host '%s' has no compute resource",
				    gc_vcenter_target(c->vc), h->name);
	return 0;
}

const struct gc_vcenter_datacenter *gc_vcdrv_datacenter(struct vc_conn *c,
						      const struct gc_vcenter_inventory *inv,
						      struct gc_error *err)
{
	const char *name = c->c->vcenter->datacenter;
	const struct gc_vcenter_datacenter *dc = NULL;

	if (name != NULL)
		dc = gc_vcenter_inventory_datacenter(inv, name);
	else if (inv->ndatacenters > 0)
		dc = &inv->datacenters[0];
	if (dc == NULL)
		gc_error_set(err, GC_EREMOTE, "%s: no datacenter '%s'", gc_vcenter_target(c->vc),
			     name ? name : "(any)");
	return dc;
}

/* The VM in vCenter, re-reading once when this run made it. */
const struct gc_vcenter_vm *gc_vcdrv_find_vm(struct vc_conn *c, struct gc_drv_ctx *ctx,
					   const struct gc_vcenter_inventory **inv, const char *name,
					   struct gc_error *err)
{
	const struct gc_vcenter_vm *vm = gc_vcdrv_vm(*inv, name);

	if (vm == NULL && (*inv = gc_vcdrv_refresh(c, ctx, err)) != NULL)
		vm = gc_vcdrv_vm(*inv, name);
	if (vm == NULL && *inv != NULL)
		gc_error_set(err, GC_EREMOTE, "%s: no VM '%s'", gc_vcenter_target(c->vc), name);
	return vm;
}

static int vc_apply(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *a,
		    struct gc_error *err)
{
	return gc_vcdrv_apply(*conn, ctx, a, err);
}

struct done_arg {
	const struct gc_action *a;
	bool done;
};

static void done_cb(struct gc_observed *obs, void *arg)
{
	struct done_arg *d = arg;
	const struct gc_observed_vm *vm = d->a->vm ? gc_observed_vm(obs, d->a->vm) : NULL;

	if (vm == NULL)
		return;
	if (d->a->kind == GC_ACT_POWER_ON)
		d->done = vm->power == GC_POWER_ON;
	else if (d->a->kind == GC_ACT_POWER_OFF)
		d->done = vm->power == GC_POWER_OFF;
	else if (d->a->kind == GC_ACT_MIGRATE)
		d->done = vm->host != NULL &&
			  (d->a->dest_host ? strcmp(vm->host, d->a->dest_host) == 0
					   : d->a->host == NULL || strcmp(vm->host, d->a->host) != 0);
}

/* After a transport fault and a re-observation: does the action still need sending? */
static bool vc_already_done(struct gc_drv_ctx *ctx, const struct gc_action *a)
{
	struct done_arg d = {a, false};

	if (a->kind == GC_ACT_APPLY)
		return a->op != GC_OP_DELETE && a->resource != NULL &&
		       gc_drv_resource_converged(ctx, a->resource);
	gc_drv_record(ctx, done_cb, &d);
	return d.done;
}

const struct gc_driver gc_driver_vcenter = {
	.name = "vcenter",
	.kind = GC_TARGET_VCENTER,
	.shared_conn = true,
	.connect = vc_connect,
	.observe = vc_observe,
	.apply = vc_apply,
	.already_done = vc_already_done,
	.lease_get = gc_vcdrv_lease_get,
	.lease_set = gc_vcdrv_lease_set,
	.lease_atomic = true,
	.disconnect = vc_disconnect,
};
