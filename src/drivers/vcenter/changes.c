/*
 * changes.c - what each action of the vCenter target sends (see the table
 * in docs/vcenter.md): clone and settle a VM, its hardware, VMX options and
 * devices, power, vMotion, distributed switches and port groups; an ESXi
 * 6.x host's passthrough and NTP are hostchanges.c's.
 *
 * Every change is one vCenter task, started only with a task slot
 * (driver.c) and waited for; a failure names the VM and quotes vCenter.
 * Devices are found through record.c's matching, so what is changed is
 * always what the observation compared.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gc/spec.h"
#include "gc/sys/driver.h"
#include "gc/vcenter.h"
#include "vcdrv.h"

#define TASK_TIMEOUT_MS (30u * 60u * 1000u)

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}


static bool backing_is_dynamic(const struct gc_vcenter_device *d)
{
	return d->backing_type != NULL &&
	       strcmp(d->backing_type, "VirtualPCIPassthroughDynamicBackingInfo") == 0;
}

/* Prefix the VM's name to a failure (vCenter's message stays the cause). */
static int vm_fail(int rc, struct gc_error *err, const char *vm)
{
	if (rc != 0)
		gc_error_prefix(err, "VM '%s': ", vm);
	return rc;
}

/*
 * A call that starts a task on VM `moref` lost its reply (GC_ENET,
 * GC_ETIMEOUT): the task it may have started runs on unseen.  Wait until
 * the VM has no task queued or running, so that the executor's
 * re-observation sees what that task did rather than sending it again.
 * Not finding out is noted; the observation decides then.  Returns rc.
 */
static int settle(struct vc_conn *c, struct gc_drv_ctx *ctx, const char *name,
		  const char *moref, int rc)
{
	struct gc_error e = GC_ERROR_INIT;

	if (rc != GC_ENET && rc != GC_ETIMEOUT)
		return rc;
	gc_drv_note(ctx, c->t, "%s: no reply; waiting until its tasks end", name);
	if (gc_vcenter_wait_idle(c->vc, "VirtualMachine", moref, TASK_TIMEOUT_MS, &e) != 0)
		gc_drv_note(ctx, c->t, "%s: %s", name, e.msg);
	return rc;
}

static int reconfigure(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_vm *v,
		       const struct gc_vcenter_vm *vm, const struct gc_vcenter_vm_change *ch,
		       struct gc_error *err)
{
	int rc;

	gc_vcdrv_slot_get(c, v->host_name);
	gc_drv_count_change(ctx);
	rc = gc_vcenter_reconfigure(c->vc, vm->moref, ch, TASK_TIMEOUT_MS, err);
	gc_vcdrv_slot_put(c, v->host_name);
	return settle(c, ctx, v->name, vm->moref, rc);
}

static void change_init(struct gc_vcenter_vm_change *ch)
{
	memset(ch, 0, sizeof(*ch));
	ch->reservation_locked = -1;
}

static long want_memory_mb(const struct gc_vm *v)
{
	return (long)v->memory_gb * 1024;
}

static int vm_create(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_vm *v,
		     struct gc_error *err)
{
	const struct gc_vcenter_inventory *inv = gc_vcdrv_snapshot(c);
	const struct gc_vcenter_datacenter *dc;
	const struct gc_vcenter_vm *from, *vm;
	const char *ds = NULL;
	struct place p;
	char moref[128];
	int rc;

	if ((vm = gc_vcdrv_vm(inv, v->name)) == NULL) {
		if ((dc = gc_vcdrv_datacenter(c, inv, err)) == NULL || gc_vcdrv_place(&p, c, inv, v->host, err) != 0)
			return GC_EREMOTE;
		from = gc_vcenter_inventory_vm(inv, v->template_name);
		if (from == NULL)
			return gc_error_set(err, GC_EREMOTE, "%s: no template '%s'",
					    gc_vcenter_target(c->vc), v->template_name);
		if (c->c->vcenter->datastore != NULL) {
			const struct gc_vcenter_datastore *d =
				gc_vcenter_inventory_datastore(inv, c->c->vcenter->datastore);

			if (d == NULL)
				return gc_error_set(err, GC_EREMOTE, "%s: no datastore '%s'",
						    gc_vcenter_target(c->vc), c->c->vcenter->datastore);
			ds = d->moref;
		}
		gc_drv_note(ctx, c->t, "cloning %s from %s onto %s", v->name, v->template_name,
			    v->host_name);
		gc_vcdrv_slot_get(c, v->host_name);
		gc_drv_count_change(ctx);
		rc = gc_vcenter_clone(moref, sizeof(moref), c->vc, from->moref, v->name, dc->vm_folder,
				      p.compute->resource_pool, p.host->moref, ds, TASK_TIMEOUT_MS, err);
		gc_vcdrv_slot_put(c, v->host_name);
		if (rc != 0) /* a clone's task runs on its source */
			return settle(c, ctx, v->template_name, from->moref, rc);
		if ((vm = gc_vcdrv_find_vm(c, ctx, &inv, v->name, err)) == NULL)
			return GC_EREMOTE;
	}
	return 0;
}

/* Host, CPUs, memory of an existing VM (after a clone or as an update). */
static int vm_settle(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_vm *v,
		     struct gc_error *err)
{
	const struct gc_vcenter_inventory *inv = gc_vcdrv_snapshot(c);
	const struct gc_vcenter_vm *vm = gc_vcdrv_find_vm(c, ctx, &inv, v->name, err);
	struct gc_vcenter_vm_change ch;
	struct place p;
	int rc;

	if (vm == NULL || gc_vcdrv_place(&p, c, inv, v->host, err) != 0)
		return GC_EREMOTE;
	if (vm->host_moref == NULL || strcmp(vm->host_moref, p.host->moref) != 0) {
		/* vCenter clones onto location.host; vcsim 0.24 ignores it */
		gc_drv_note(ctx, c->t, "moving %s onto %s", v->name, v->host_name);
		gc_vcdrv_slot_get(c, v->host_name);
		gc_drv_count_change(ctx);
		rc = gc_vcenter_relocate(c->vc, vm->moref, p.host->moref, p.compute->resource_pool,
					 TASK_TIMEOUT_MS, err);
		gc_vcdrv_slot_put(c, v->host_name);
		if (rc != 0)
			return settle(c, ctx, v->name, vm->moref, rc);
	}
	change_init(&ch);
	if (v->cpus > 0 && vm->num_cpus != (int)v->cpus)
		ch.num_cpus = (int)v->cpus;
	if (v->memory_gb > 0 && vm->memory_mb != want_memory_mb(v))
		ch.memory_mb = want_memory_mb(v);
	if (ch.num_cpus == 0 && ch.memory_mb == 0)
		return 0;
	return reconfigure(c, ctx, v, vm, &ch, err);
}

/*
 * The host's QueryConfigTarget entries: read once per host per run (a host's
 * own changes come before its VMs' devices in the plan), again when `fresh`.
 * The arrays stay in the cache until disconnect.
 */
static int host_pci(const struct gc_vcenter_pci_target **out, size_t *nout, struct vc_conn *c,
		    const struct place *p, bool fresh, struct gc_error *err)
{
	struct gc_vcenter_pci_target *t = NULL;
	size_t n = 0;
	int rc;

	pthread_mutex_lock(&c->mu);
	for (size_t i = c->npci; !fresh && i > 0; i--) {
		if (strcmp(c->pci[i - 1].host, p->host->moref) == 0) {
			*out = c->pci[i - 1].t;
			*nout = c->pci[i - 1].n;
			pthread_mutex_unlock(&c->mu);
			return 0;
		}
	}
	pthread_mutex_unlock(&c->mu);
	rc = gc_vcenter_query_pci(&t, &n, c->vc, p->compute->environment_browser, p->host->moref, err);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&c->mu);
	c->pci = gc_xrealloc(c->pci, (c->npci + 1) * sizeof(*c->pci));
	c->pci[c->npci].host = gc_xstrdup(p->host->moref);
	c->pci[c->npci].t = t; /* now owned by the cache */
	c->pci[c->npci].n = n;
	c->npci++;
	pthread_mutex_unlock(&c->mu);
	*out = t;
	*nout = n;
	return 0;
}

/* The entry for `pci` (or, with vendor != 0, any passthrough device of that
 * vendor:device), looking once more with a fresh query when it is missing. */
static int find_pci(struct gc_vcenter_pci_target *out, struct vc_conn *c,
		    const struct gc_vcenter_inventory *inv, const struct gc_vm *v, const char *pci,
		    bool sriov, unsigned vendor, unsigned device, struct gc_error *err)
{
	const struct gc_vcenter_pci_target *t;
	struct place p;
	size_t n;

	if (gc_vcdrv_place(&p, c, inv, v->host, err) != 0)
		return GC_EREMOTE;
	for (int fresh = 0; fresh < 2; fresh++) {
		int rc = host_pci(&t, &n, c, &p, fresh, err);

		if (rc != 0)
			return rc;
		for (size_t i = 0; i < n; i++) {
			bool match = pci != NULL ? strcmp(t[i].id, pci) == 0 && t[i].sriov == sriov
						 : !t[i].sriov && (uint16_t)t[i].vendor_id == vendor &&
							   (uint16_t)t[i].device_id == device;

			if (match) {
				*out = t[i];
				return 0;
			}
		}
	}
	if (pci == NULL)
		return gc_error_set(err, GC_EREMOTE,
				    "%s: host '%s' offers no passthrough device %04x:%04x to VMs (is "
				    "passthrough enabled and the host rebooted?)",
				    gc_vcenter_target(c->vc), v->host_name, vendor, device);
	return gc_error_set(err, GC_EREMOTE,
			    "%s: host '%s' does not offer %s %s to VMs (is passthrough enabled "
			    "and the host rebooted?)",
			    gc_vcenter_target(c->vc), v->host_name,
			    sriov ? "the SR-IOV physical function" : "PCI device", pci);
}

/* Fill a NIC's network backing from the spec's network or port group. */
static int nic_backing(struct gc_vcenter_devspec *d, struct vc_conn *c, struct gc_drv_ctx *ctx,
		       const struct gc_vcenter_inventory **inv, const struct gc_vm_nic *n,
		       struct gc_error *err)
{
	const char *name = n->port_group ? n->port_group : n->network;
	const struct gc_vcenter_network *net = name ? gc_vcenter_inventory_network(*inv, name) : NULL;

	if (name == NULL)
		return gc_error_set(err, GC_EINVAL, "a NIC without network or port group");
	if (net == NULL && (*inv = gc_vcdrv_refresh(c, ctx, err)) != NULL)
		net = gc_vcenter_inventory_network(*inv, name);
	if (net == NULL)
		return *inv == NULL ? GC_EREMOTE
				    : gc_error_set(err, GC_EREMOTE, "%s: no network or port group '%s'",
						   gc_vcenter_target(c->vc), name);
	if (net->portgroup_key != NULL) {
		const struct gc_vcenter_dvs *dvs = NULL;

		for (size_t i = 0; i < (*inv)->ndvs; i++)
			if (net->dvs != NULL && strcmp((*inv)->dvs[i].moref, net->dvs) == 0)
				dvs = &(*inv)->dvs[i];
		if (dvs == NULL || dvs->uuid == NULL)
			return gc_error_set(err, GC_EREMOTE, "%s: port group '%s' has no switch uuid",
					    gc_vcenter_target(c->vc), name);
		d->dvs_uuid = dvs->uuid;
		d->portgroup_key = net->portgroup_key;
	} else {
		d->network = net->name;
		d->network_moref = net->moref;
	}
	return 0;
}

static const struct gc_vm_nic *spec_nic(const struct gc_vm *v, const struct gc_resource *r)
{
	const char *slash = strrchr(r->id, '/');
	size_t i = slash ? strtoul(slash + 1, NULL, 10) : 0;

	return i < v->nnics ? &v->nics[i] : NULL;
}

/* Add (or replace) the device that stands for r. */
static int vm_device(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_vm *v,
		     const struct gc_resource *r, struct gc_error *err)
{
	const struct gc_vcenter_inventory *inv = gc_vcdrv_snapshot(c);
	const struct gc_vcenter_vm *vm = gc_vcdrv_find_vm(c, ctx, &inv, v->name, err);
	const struct gc_vcenter_device *old;
	struct gc_vcenter_devspec d[2];
	struct gc_vcenter_pci_target pt;
	struct gc_vcenter_vm_change ch;
	char devid[8];
	size_t nd = 0;
	int rc;

	if (vm == NULL)
		return GC_EREMOTE;
	memset(d, 0, sizeof(d));
	old = gc_vcdrv_device(inv, vm, v, r);
	if (old != NULL && r->kind != GC_RES_VM_DEVICE_PCI) {
		/* a vGPU or NIC of the right type with other settings: replace it */
		d[nd].op = GC_VCENTER_DEV_REMOVE;
		d[nd].key = old->key;
		d[nd].kind = r->kind == GC_RES_VM_DEVICE_VGPU ? GC_VCENTER_VGPU
			     : r->kind == GC_RES_VM_NIC_SRIOV ? GC_VCENTER_NIC_SRIOV
			     : r->kind == GC_RES_VM_NIC_PVRDMA ? GC_VCENTER_NIC_PVRDMA
							       : GC_VCENTER_NIC_VMXNET3;
		nd++;
	}
	d[nd].op = GC_VCENTER_DEV_ADD;
	d[nd].key = -100;
	if (r->kind == GC_RES_VM_DEVICE_PCI && gc_resource_prop(r, "host_pci") == NULL) {
		unsigned vendor, device;

		if (old != NULL)
			return 0; /* present: vendor:device is its identity */
		if (!gc_vcdrv_pci_id(gc_resource_prop(r, "pci_id"), &vendor, &device))
			return gc_error_set(err, GC_EINVAL, "VM '%s': bad PCI id '%s'", v->name,
					    gc_resource_prop(r, "pci_id"));
		rc = find_pci(&pt, c, inv, v, NULL, false, vendor, device, err);
		if (rc != 0)
			return vm_fail(rc, err, v->name);
		d[nd].kind = GC_VCENTER_PCI_DYNAMIC;
		d[nd].allowed_vendor_id = (int)vendor;
		d[nd].allowed_device_id = (int)device;
		d[nd].device_name = "";
	} else if (r->kind == GC_RES_VM_DEVICE_PCI) {
		if (old != NULL)
			return 0; /* present: host_pci is its identity */
		rc = find_pci(&pt, c, inv, v, gc_resource_prop(r, "host_pci"), false, 0, 0, err);
		if (rc != 0)
			return vm_fail(rc, err, v->name);
		snprintf(devid, sizeof(devid), "%x", (unsigned)(uint16_t)pt.device_id);
		d[nd].kind = GC_VCENTER_PCI_STATIC;
		d[nd].pci_id = pt.id;
		d[nd].device_id = devid;
		d[nd].system_id = pt.system_id;
		d[nd].vendor_id = pt.vendor_id;
		d[nd].device_name = pt.device_name;
	} else if (r->kind == GC_RES_VM_DEVICE_VGPU) {
		const char *profile = gc_resource_prop(r, "profile");
		struct place p;

		if (gc_vcdrv_place(&p, c, inv, v->host, err) != 0)
			return vm_fail(GC_EREMOTE, err, v->name);
		if (!gc_vcenter_host_offers_vgpu(p.host, profile)) {
			/* the vGPU manager may have been installed in this run */
			if ((inv = gc_vcdrv_refresh(c, ctx, err)) == NULL ||
			    gc_vcdrv_place(&p, c, inv, v->host, err) != 0)
				return vm_fail(GC_EREMOTE, err, v->name);
			if (!gc_vcenter_host_offers_vgpu(p.host, profile))
				return vm_fail(gc_error_set(err, GC_EREMOTE,
							    "host '%s' does not offer vGPU type '%s' "
							    "(is the NVIDIA vGPU manager installed?)",
							    v->host_name, profile),
					       err, v->name);
		}
		d[nd].kind = GC_VCENTER_VGPU;
		d[nd].vgpu = profile;
	} else {
		/* a NIC: sriov, pvrdma or vmxnet3 (apply_resource sends nothing else) */
		const struct gc_vm_nic *n = spec_nic(v, r);

		if (n == NULL)
			return gc_error_set(err, GC_EINVAL, "VM '%s': no NIC for %s", v->name, r->id);
		rc = nic_backing(&d[nd], c, ctx, &inv, n, err);
		if (rc != 0)
			return vm_fail(rc, err, v->name);
		if (r->kind == GC_RES_VM_NIC_SRIOV) {
			rc = find_pci(&pt, c, inv, v, n->pf, true, 0, 0, err);
			if (rc != 0)
				return vm_fail(rc, err, v->name);
			snprintf(devid, sizeof(devid), "%x", (unsigned)(uint16_t)pt.device_id);
			d[nd].kind = GC_VCENTER_NIC_SRIOV;
			d[nd].pci_id = pt.id;
			d[nd].device_id = devid;
			d[nd].system_id = pt.system_id;
			d[nd].vendor_id = pt.vendor_id;
			d[nd].device_name = pt.device_name;
		} else if (r->kind == GC_RES_VM_NIC_PVRDMA) {
			d[nd].kind = GC_VCENTER_NIC_PVRDMA;
			d[nd].protocol = n->protocol ? n->protocol : "rocev2";
		} else {
			d[nd].kind = GC_VCENTER_NIC_VMXNET3;
		}
	}
	nd++;
	change_init(&ch);
	ch.devices = d;
	ch.ndevices = nd;
	return vm_fail(reconfigure(c, ctx, v, vm, &ch, err), err, v->name);
}

/*
 * Remove a device the spec no longer names (a delete of the planner's; the
 * id says which, gc_vcdrv_extra_id()).  A device that is gone already
 * (removed by hand, or by an earlier try whose reply was lost) is done.
 */
static int vm_device_remove(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_vm *v,
			    const struct gc_action *a, struct gc_error *err)
{
	const struct gc_vcenter_inventory *inv = gc_vcdrv_snapshot(c);
	const struct gc_vcenter_vm *vm = gc_vcdrv_find_vm(c, ctx, &inv, v->name, err);
	const struct gc_vcenter_device *old;
	struct gc_vcenter_devspec d;
	struct gc_vcenter_vm_change ch;
	enum gc_res_kind kind;

	if (vm == NULL)
		return vm_fail(GC_EREMOTE, err, v->name);
	old = gc_vcdrv_extra_device(vm, v->name, a->resource_id);
	if (old == NULL) {
		gc_drv_note(ctx, c->t, "%s: already gone", a->resource_id);
		return 0;
	}
	kind = gc_vcdrv_owned_kind(old);
	memset(&d, 0, sizeof(d));
	d.op = GC_VCENTER_DEV_REMOVE;
	d.key = old->key;
	/* the remove names the device's own type: one xsi:type per kind */
	d.kind = kind == GC_RES_VM_NIC_SRIOV    ? GC_VCENTER_NIC_SRIOV
		 : kind == GC_RES_VM_NIC_PVRDMA ? GC_VCENTER_NIC_PVRDMA
		 : kind == GC_RES_VM_DEVICE_VGPU
			 ? GC_VCENTER_VGPU
			 : (backing_is_dynamic(old) ? GC_VCENTER_PCI_DYNAMIC : GC_VCENTER_PCI_STATIC);
	change_init(&ch);
	ch.devices = &d;
	ch.ndevices = 1;
	return vm_fail(reconfigure(c, ctx, v, vm, &ch, err), err, v->name);
}

static int vm_hw(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_vm *v,
		 const struct gc_resource *r, struct gc_error *err)
{
	const struct gc_vcenter_inventory *inv = gc_vcdrv_snapshot(c);
	const struct gc_vcenter_vm *vm = gc_vcdrv_find_vm(c, ctx, &inv, v->name, err);
	struct gc_vcenter_vm_change ch;
	const char *res = gc_resource_prop(r, "memory_reservation");

	if (vm == NULL)
		return GC_EREMOTE;
	change_init(&ch);
	ch.firmware = gc_resource_prop(r, "firmware");
	if (ch.firmware != NULL && vm->firmware != NULL && strcmp(ch.firmware, vm->firmware) == 0)
		ch.firmware = NULL;
	if (res != NULL)
		ch.reservation_locked = strcmp(res, "full") == 0;
	return vm_fail(reconfigure(c, ctx, v, vm, &ch, err), err, v->name);
}

static int vm_extra(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_vm *v,
		    const struct gc_action *a, struct gc_error *err)
{
	const struct gc_vcenter_inventory *inv = gc_vcdrv_snapshot(c);
	const struct gc_vcenter_vm *vm = gc_vcdrv_find_vm(c, ctx, &inv, v->name, err);
	struct gc_vcenter_option opts[32];
	struct gc_vcenter_vm_change ch;
	size_t n = 0;

	if (vm == NULL)
		return GC_EREMOTE;
	for (size_t i = 0; i < a->nchanges && n < GC_ARRAY_LEN(opts); i++) {
		opts[n].key = a->changes[i].key;
		opts[n].value = a->changes[i].new_value ? a->changes[i].new_value : "";
		n++;
	}
	change_init(&ch);
	ch.extra_config = opts;
	ch.nextra_config = n;
	return vm_fail(reconfigure(c, ctx, v, vm, &ch, err), err, v->name);
}

/* ---------------------------------------------------------------- power, vMotion */

static int power_on(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_vm *v,
		    struct gc_error *err)
{
	const struct gc_vcenter_inventory *inv = gc_vcdrv_snapshot(c);
	const struct gc_vcenter_vm *vm = gc_vcdrv_find_vm(c, ctx, &inv, v->name, err);
	char state[32];
	int rc;

	if (vm == NULL)
		return GC_EREMOTE;
	if (gc_vcenter_power_state(c->vc, vm->moref, state, sizeof(state), err) != 0)
		return vm_fail(GC_EREMOTE, err, v->name);
	if (strcmp(state, "poweredOn") == 0)
		return 0;
	gc_vcdrv_slot_get(c, v->host_name);
	gc_drv_count_change(ctx);
	rc = gc_vcenter_power_on(c->vc, vm->moref, TASK_TIMEOUT_MS, err);
	gc_vcdrv_slot_put(c, v->host_name);
	return vm_fail(settle(c, ctx, v->name, vm->moref, rc), err, v->name);
}

/* Guest shutdown, waiting up to the shutdown timeout, then a hard power-off. */
static int power_off(struct vc_conn *c, struct gc_drv_ctx *ctx, const char *name,
		     const char *host, struct gc_error *err)
{
	const struct gc_vcenter_inventory *inv = gc_vcdrv_snapshot(c);
	const struct gc_vcenter_vm *vm = gc_vcdrv_find_vm(c, ctx, &inv, name, err);
	struct gc_error e = GC_ERROR_INIT;
	char state[32];
	uint64_t deadline, started;
	int rc;

	if (vm == NULL)
		return GC_EREMOTE;
	if (gc_vcenter_power_state(c->vc, vm->moref, state, sizeof(state), err) != 0)
		return vm_fail(GC_EREMOTE, err, name);
	if (strcmp(state, "poweredOff") == 0)
		return 0;
	gc_drv_count_change(ctx);
	if (gc_vcenter_shutdown_guest(c->vc, vm->moref, &e) == 0) {
		gc_drv_note(ctx, c->t, "shutting down the guest of %s", name);
		started = gc_now_ns();
		deadline = started + (uint64_t)c->shutdown_timeout_ms * 1000000u;
		for (;;) {
			if (gc_vcenter_power_state(c->vc, vm->moref, state, sizeof(state), err) != 0)
				return vm_fail(GC_EREMOTE, err, name);
			if (strcmp(state, "poweredOff") == 0)
				return 0;
			/* Ctrl-C: the shutdown asked stays asked, but a graceful
			 * stop forces nothing off (nor waits out the timeout) */
			if (gc_drv_interrupted(ctx))
				return vm_fail(gc_error_set(err, GC_EINTR,
							    "interrupted %.0f s into its guest shutdown: "
							    "not powered off (the guest may still shut down)",
							    (double)(gc_now_ns() - started) / 1e9),
					       err, name);
			if (gc_now_ns() > deadline)
				break;
			sleep_ms(1000);
		}
		gc_drv_note(ctx, c->t, "%s did not shut down in %u s: powering it off", name,
			    c->shutdown_timeout_ms / 1000);
	} else if (e.code != GC_EREMOTE) {
		*err = e;
		return vm_fail(e.code, err, name);
	} else {
		gc_drv_note(ctx, c->t, "guest shutdown of %s refused (%s): powering it off", name,
			    e.msg);
	}
	gc_vcdrv_slot_get(c, host);
	rc = gc_vcenter_power_off(c->vc, vm->moref, TASK_TIMEOUT_MS, err);
	gc_vcdrv_slot_put(c, host);
	return vm_fail(settle(c, ctx, name, vm->moref, rc), err, name);
}

/* vMotion `name` onto dest (a spec host), or off `from` onto a host of the
 * same cluster that is not in maintenance mode. */
static int migrate(struct vc_conn *c, struct gc_drv_ctx *ctx, const char *name, const char *from,
		   const char *dest, struct gc_error *err)
{
	/* where the VM is now, not where it was at observation: it may have
	 * moved off its host earlier in this run */
	const struct gc_vcenter_inventory *inv = gc_vcdrv_refresh(c, ctx, err);
	const struct gc_vcenter_vm *vm = inv ? gc_vcdrv_find_vm(c, ctx, &inv, name, err) : NULL;
	const struct gc_vcenter_host *to = NULL, *src;
	int rc;

	if (vm == NULL)
		return vm_fail(GC_EREMOTE, err, name);
	src = gc_vcenter_inventory_host_moref(inv, vm->host_moref ? vm->host_moref : "");
	if (dest != NULL) {
		to = gc_vcdrv_host(inv, gc_cluster_host(c->c, dest));
	} else {
		for (size_t i = 0; i < inv->nhosts && to == NULL; i++) {
			const struct gc_vcenter_host *h = &inv->hosts[i];
			const char *hn = gc_vcdrv_host_name(inv, c->c, h->moref);

			if (src != NULL && h != src && !h->maintenance && h->parent != NULL &&
			    src->parent != NULL && strcmp(h->parent, src->parent) == 0 &&
			    (from == NULL || hn == NULL || strcmp(hn, from) != 0))
				to = h;
		}
	}
	if (to == NULL)
		return vm_fail(gc_error_set(err, GC_EREMOTE, "no host to move it to%s%s",
					    dest ? ": no host " : "", dest ? dest : ""),
			       err, name);
	if (src == to)
		return 0;
	gc_vcdrv_slot_get(c, from);
	gc_drv_count_change(ctx);
	rc = gc_vcenter_relocate(c->vc, vm->moref, to->moref, NULL, TASK_TIMEOUT_MS, err);
	gc_vcdrv_slot_put(c, from);
	return vm_fail(settle(c, ctx, name, vm->moref, rc), err, name);
}

/* ---------------------------------------------------------------- switches */

/* The member entry of host moref in d, or NULL. */
static const struct gc_vcenter_dvs_member *dvs_member(const struct gc_vcenter_dvs *d,
						     const char *host)
{
	for (size_t j = 0; j < d->nmembers; j++)
		if (strcmp(d->members[j].host, host) == 0)
			return &d->members[j];
	return NULL;
}

/*
 * One entry of up[] per spec host of sw whose proxy switch lacks the
 * spec's pNICs: all of that host's uplinks, sorted, in pn[] (room for
 * sw->nuplinks).  A member whose pNICs are not the spec's set gets the
 * whole set ("edit": the backing replaces the old one); a host that is no
 * member is added with it.
 */
static int dvs_uplinks(struct gc_vcenter_dvs_uplink *up, size_t *nup, const char **pn,
		       struct vc_conn *c, const struct gc_vcenter_inventory *inv,
		       const struct gc_vcenter_dvs *d, const struct gc_dvswitch *sw,
		       struct gc_error *err)
{
	size_t used = 0;

	*nup = 0;
	for (size_t i = 0; i < sw->nuplinks; i++) {
		const struct gc_vcenter_host *vh = gc_vcdrv_host(inv, sw->uplinks[i].host);
		const struct gc_vcenter_dvs_member *m;
		const char **mine = pn + used;
		struct gc_buf want = GC_BUF_INIT, have = GC_BUF_INIT;
		bool seen = false, same;
		size_t n = 0;

		for (size_t j = 0; j < i && !seen; j++)
			seen = sw->uplinks[j].host == sw->uplinks[i].host;
		if (seen)
			continue;
		if (vh == NULL)
			return gc_error_set(err, GC_EREMOTE, "%s: no host '%s' for the uplink of '%s'",
					    gc_vcenter_target(c->vc), sw->uplinks[i].host_name, sw->name);
		for (size_t j = i; j < sw->nuplinks; j++)
			if (sw->uplinks[j].host == sw->uplinks[i].host && sw->uplinks[j].nic != NULL)
				mine[n++] = sw->uplinks[j].nic;
		n = gc_set_sort(mine, n);
		used += n;
		m = dvs_member(d, vh->moref);
		gc_buf_put_set(&want, mine, n);
		if (m != NULL)
			gc_buf_put_set(&have, m->pnics, m->npnics);
		same = m != NULL && strcmp(gc_buf_str(&want), gc_buf_str(&have)) == 0;
		gc_buf_free(&want);
		gc_buf_free(&have);
		if (same)
			continue;
		up[*nup].host = vh->moref;
		up[*nup].pnics = mine;
		up[*nup].npnics = n;
		up[*nup].edit = m != NULL;
		(*nup)++;
	}
	return 0;
}

static int dvs_apply(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_action *a,
		     struct gc_error *err)
{
	const struct gc_resource *r = a->resource;
	const struct gc_dvswitch *sw = gc_cluster_dvswitch(c->c, r->id + strlen("dvs/"));
	const struct gc_vcenter_inventory *inv = gc_vcdrv_snapshot(c);
	const struct gc_vcenter_dvs *d;
	struct gc_vcenter_dvs_uplink *up = NULL;
	const char **pn = NULL;
	size_t nup = 0;
	char moref[128];
	int rc, mtu = 0;

	if (sw == NULL)
		return gc_error_set(err, GC_EINVAL, "no distributed switch for %s", r->id);
	d = gc_vcenter_inventory_dvs(inv, sw->name);
	if (d == NULL) {
		const struct gc_vcenter_datacenter *dc = gc_vcdrv_datacenter(c, inv, err);

		if (dc == NULL)
			return GC_EREMOTE;
		gc_vcdrv_slot_get(c, NULL);
		gc_drv_count_change(ctx);
		rc = gc_vcenter_create_dvs(moref, sizeof(moref), c->vc, dc->network_folder, sw->name,
					   (int)sw->mtu, TASK_TIMEOUT_MS, err);
		gc_vcdrv_slot_put(c, NULL);
		if (rc != 0)
			return rc;
		if ((inv = gc_vcdrv_refresh(c, ctx, err)) == NULL)
			return GC_EREMOTE;
		if ((d = gc_vcenter_inventory_dvs(inv, sw->name)) == NULL)
			return gc_error_set(err, GC_EREMOTE, "%s: switch '%s' was created but is not "
					    "in the inventory", gc_vcenter_target(c->vc), sw->name);
	}
	if (d->max_mtu != (int)sw->mtu)
		mtu = (int)sw->mtu;
	up = gc_xcalloc(sw->nuplinks, sizeof(*up));
	pn = gc_xcalloc(sw->nuplinks, sizeof(*pn));
	rc = dvs_uplinks(up, &nup, pn, c, inv, d, sw, err);
	if (rc != 0 || (mtu == 0 && nup == 0))
		goto out;
	gc_vcdrv_slot_get(c, NULL);
	gc_drv_count_change(ctx);
	rc = gc_vcenter_reconfigure_dvs(c->vc, d->moref, d->config_version, mtu, up, nup,
					TASK_TIMEOUT_MS, err);
	gc_vcdrv_slot_put(c, NULL);
out:
	free(up);
	free(pn);
	return rc;
}

static int portgroup_apply(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_action *a,
			   struct gc_error *err)
{
	const struct gc_resource *r = a->resource;
	const char *dvs_name = gc_resource_prop(r, "dvswitch");
	const char *name = gc_vcdrv_portgroup_name(r);
	const char *vlan_s = gc_resource_prop(r, "vlan");
	int vlan = vlan_s ? atoi(vlan_s) : 0, rc;
	const struct gc_vcenter_inventory *inv = gc_vcdrv_snapshot(c);
	const struct gc_vcenter_dvs *d = gc_vcenter_inventory_dvs(inv, dvs_name);

	if (d == NULL && (inv = gc_vcdrv_refresh(c, ctx, err)) != NULL)
		d = gc_vcenter_inventory_dvs(inv, dvs_name);
	if (d == NULL)
		return inv == NULL ? GC_EREMOTE
				   : gc_error_set(err, GC_EREMOTE, "%s: no switch '%s'",
						  gc_vcenter_target(c->vc), dvs_name);
	gc_vcdrv_slot_get(c, NULL);
	gc_drv_count_change(ctx);
	if (a->op == GC_OP_CREATE) {
		rc = gc_vcenter_add_portgroup(c->vc, d->moref, name, vlan, TASK_TIMEOUT_MS, err);
	} else {
		const struct gc_vcenter_network *n = gc_vcenter_inventory_network(inv, name);

		rc = n == NULL ? gc_error_set(err, GC_EREMOTE, "%s: no port group '%s'",
					      gc_vcenter_target(c->vc), name)
			       : gc_vcenter_portgroup_vlan(c->vc, n->moref, n->config_version, vlan,
							   TASK_TIMEOUT_MS, err);
	}
	gc_vcdrv_slot_put(c, NULL);
	return rc;
}

/* ---------------------------------------------------------------- the PVRDMA vmknic (vmknic.c) */

/* The desired adapter's spec: the switch's uuid and the port group's key. */
static int vmknic_want(struct gc_vcenter_vnic_spec *out, char *ip, size_t nip,
		       const struct gc_vcenter_inventory *inv, const struct gc_resource *r,
		       const char *target, struct gc_error *err)
{
	const char *dvs = gc_resource_prop(r, "dvswitch"), *pg = gc_resource_prop(r, "portgroup");
	const char *addr = gc_resource_prop(r, "address"), *slash;
	const struct gc_vcenter_dvs *d = dvs ? gc_vcenter_inventory_dvs(inv, dvs) : NULL;
	const struct gc_vcenter_network *n = NULL;

	for (size_t i = 0; d != NULL && pg != NULL && i < inv->nnetworks; i++)
		if (inv->networks[i].dvs != NULL && strcmp(inv->networks[i].dvs, d->moref) == 0 &&
		    strcmp(inv->networks[i].name, pg) == 0)
			n = &inv->networks[i];
	if (n == NULL || d->uuid == NULL)
		return gc_error_set(err, GC_EREMOTE, "%s: no port group '%s' on switch '%s' for %s",
				    target, pg ? pg : "", dvs ? dvs : "", r->id);
	if (addr == NULL || (slash = strchr(addr, '/')) == NULL || (size_t)(slash - addr) >= nip)
		return gc_error_set(err, GC_EINVAL, "%s: %s has no address", target, r->id);
	memcpy(ip, addr, (size_t)(slash - addr));
	ip[slash - addr] = '\0';
	out->switch_uuid = d->uuid;
	out->portgroup_key = n->portgroup_key;
	out->ip = ip;
	out->prefix = (unsigned)atoi(slash + 1);
	return 0;
}

/* Another adapter of the host on the port group: created by hand or by a
 * run whose reply was lost; a second one would not be the spec's. */
static const struct gc_vcenter_vnic *vmknic_other_on(const struct gc_vcenter_host *vh,
						     const struct gc_vcenter_vnic_spec *w,
						     const char *device)
{
	for (size_t i = 0; i < vh->nvnics; i++) {
		const struct gc_vcenter_vnic *v = &vh->vnics[i];

		if (v->portgroup_key != NULL && strcmp(v->portgroup_key, w->portgroup_key) == 0 &&
		    strcmp(v->device, device) != 0)
			return v;
	}
	return NULL;
}

static int vmknic_create(struct vc_conn *c, const struct gc_vcenter_host *vh,
			 const struct gc_resource *r, const struct gc_vcenter_vnic_spec *w,
			 const char *device, struct gc_error *err)
{
	const char *target = gc_vcenter_target(c->vc);
	const struct gc_vcenter_vnic *o = vmknic_other_on(vh, w, device);
	char got[32];
	int rc;

	if (o != NULL)
		return gc_error_set(err, GC_EREMOTE, "%s: host '%s' already has %s on port group "
				    "'%s', not %s: name it in the spec (vmknic: {name: %s, ...}) "
				    "or remove it", target, r->host, o->device,
				    gc_resource_prop(r, "portgroup"), device, o->device);
	rc = gc_vcenter_add_vnic(got, sizeof(got), c->vc, vh->network_system, w, err);
	if (rc != 0)
		return rc;
	if (strcmp(got, device) != 0)
		return gc_error_set(err, GC_EREMOTE, "%s: vCenter created %s on host '%s', not %s as "
				    "the spec says; /Net/PVRDMAVmknic is left alone: set vmknic: "
				    "{name: %s, ...} in the spec and apply again", target, got,
				    r->host, device, got);
	return 0;
}

/* Read vCenter again first: a lost reply's adapter must not get a twin. */
static int vmknic_apply(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_action *a,
			struct gc_error *err)
{
	const struct gc_resource *r = a->resource;
	const char *target = gc_vcenter_target(c->vc), *device = gc_resource_prop(r, "device");
	const struct gc_vcenter_inventory *inv = gc_vcdrv_refresh(c, ctx, err);
	const struct gc_vcenter_host *vh;
	const struct gc_vcenter_vnic *v;
	struct gc_vcenter_vnic_spec w;
	char ip[20];
	int rc;

	if (inv == NULL)
		return GC_EREMOTE;
	vh = gc_vcdrv_host(inv, gc_cluster_host(c->c, r->host));
	if (vh == NULL || vh->network_system == NULL)
		return gc_error_set(err, GC_EREMOTE, "%s: no host '%s' (or its network system) "
				    "for %s", target, r->host, device);
	rc = vmknic_want(&w, ip, sizeof(ip), inv, r, target, err);
	if (rc != 0)
		return rc;
	v = gc_vcdrv_find_vnic(vh, device);
	if (v != NULL && v->portgroup_key == NULL)
		return gc_error_set(err, GC_EREMOTE, "%s: %s of host '%s' is on port group '%s', "
				    "not on a distributed port: it is not moved; name another "
				    "vmknic in the spec", target, device, r->host,
				    v->portgroup ? v->portgroup : "");
	gc_vcdrv_slot_get(c, r->host);
	gc_drv_count_change(ctx);
	rc = v == NULL ? vmknic_create(c, vh, r, &w, device, err)
		       : gc_vcenter_update_vnic(c->vc, vh->network_system, device, &w, err);
	gc_vcdrv_slot_put(c, r->host);
	return rc;
}

/* ---------------------------------------------------------------- apply */

/* An advanced setting: UpdateOptions with the type vCenter read it with
 * (no task; a lost reply is observed again and sent once more: setting a
 * value twice is harmless). */
static int setting_apply(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_resource *r,
			 struct gc_error *err)
{
	const char *key = gc_resource_prop(r, "key"), *value = gc_resource_prop(r, "value");
	const struct gc_vcenter_setting *s;

	if (key == NULL || value == NULL)
		return gc_error_set(err, GC_EINVAL, "%s: %s has no key or value",
				    gc_vcenter_target(c->vc), r->id);
	s = gc_vcenter_inventory_setting(gc_vcdrv_snapshot(c), key);
	gc_drv_note(ctx, c->t, "advanced setting %s = %s", key, value);
	gc_drv_count_change(ctx);
	return gc_vcenter_update_setting(c->vc, key, value, s ? s->type : NULL, err);
}

static int apply_resource(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_action *a,
			  struct gc_error *err)
{
	const struct gc_resource *r = a->resource;
	const struct gc_vm *v;
	int rc;

	if (a->op == GC_OP_DELETE && a->vm != NULL && (v = gc_cluster_vm(c->c, a->vm)) != NULL &&
	    a->res_kind != GC_RES_VM)
		return vm_device_remove(c, ctx, v, a, err);
	if (a->op == GC_OP_DELETE || r == NULL)
		return gc_error_set(err, GC_ENOTSUP, "%s: removing %s is not supported",
				    gc_vcenter_target(c->vc), a->resource_id);
	if (r->kind == GC_RES_DVS)
		return dvs_apply(c, ctx, a, err);
	if (r->kind == GC_RES_DVS_PORTGROUP)
		return portgroup_apply(c, ctx, a, err);
	if (r->kind == GC_RES_DVS_VMKNIC)
		return vmknic_apply(c, ctx, a, err);
	/* what this run made may already hold it (a clone brings the
	 * template's vmxnet3 along): nothing to send */
	if (a->op != GC_OP_CREATE || r->kind != GC_RES_VM) {
		if (gc_drv_resource_converged(ctx, r))
			return 0;
	}
	if (r->kind == GC_RES_VCENTER_SETTING)
		return setting_apply(c, ctx, r, err);
	if (r->kind == GC_RES_ESXI_PCI_PASSTHRU || r->kind == GC_RES_ESXI_NTP)
		return gc_vcdrv_hostconfig_apply(c, ctx, r, err);
	v = r->vm ? gc_cluster_vm(c->c, r->vm) : NULL;
	if (v == NULL)
		return gc_error_set(err, GC_EINVAL, "%s: no VM in the spec for %s",
				    gc_vcenter_target(c->vc), r->id);
	/* an if chain: of all resource kinds only the VM's reach here */
	if (r->kind == GC_RES_VM) {
		rc = vm_create(c, ctx, v, err);
		if (rc == 0)
			rc = vm_settle(c, ctx, v, err);
		return vm_fail(rc, err, v->name);
	}
	if (r->kind == GC_RES_VM_HW)
		return vm_hw(c, ctx, v, r, err);
	if (r->kind == GC_RES_VM_EXTRA_CONFIG)
		return vm_extra(c, ctx, v, a, err);
	if (r->kind == GC_RES_VM_DEVICE_PCI || r->kind == GC_RES_VM_DEVICE_VGPU ||
	    r->kind == GC_RES_VM_NIC_SRIOV || r->kind == GC_RES_VM_NIC_PVRDMA ||
	    r->kind == GC_RES_VM_NIC_VMXNET3)
		return vm_device(c, ctx, v, r, err);
	if (r->kind == GC_RES_VM_POWER) {
		if (strcmp(gc_resource_prop(r, "power"), "on") == 0)
			return power_on(c, ctx, v, err);
		return power_off(c, ctx, v->name, v->host_name, err);
	}
	return gc_error_set(err, GC_ENOTSUP, "%s: cannot apply %s", gc_vcenter_target(c->vc), r->id);
}

int gc_vcdrv_apply(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_action *a,
		   struct gc_error *err)
{
	const struct gc_vm *v = a->vm ? gc_cluster_vm(c->c, a->vm) : NULL;

	switch (a->kind) {
	case GC_ACT_APPLY:
		return apply_resource(c, ctx, a, err);
	case GC_ACT_POWER_ON:
		if (v == NULL)
			return gc_error_set(err, GC_EINVAL, "power on: VM '%s' is not in the spec",
					    a->vm ? a->vm : "?");
		return power_on(c, ctx, v, err);
	case GC_ACT_POWER_OFF:
		/* also VMs the spec does not manage, evacuated for maintenance */
		return power_off(c, ctx, a->vm, a->host, err);
	case GC_ACT_MIGRATE:
		return migrate(c, ctx, a->vm, a->host, a->dest_host, err);
	case GC_ACT_ENTER_MAINTENANCE:
	case GC_ACT_EXIT_MAINTENANCE:
	case GC_ACT_REBOOT:
	case GC_ACT_WAIT_HOST:
	case GC_ACT_VERIFY:
		break;
	}
	return gc_error_set(err, GC_ENOTSUP, "%s: %s is an ESXi host step",
			    gc_vcenter_target(c->vc), gc_action_kind_name(a->kind));
}

