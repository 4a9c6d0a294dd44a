/*
 * vcdrv.h - private to src/drivers/vcenter: how the driver (driver.c) and
 * the recorder (record.c) agree on which vCenter object stands for which
 * spec resource.
 *
 * Hosts: a vCenter host is the spec host whose name or address it carries.
 * Devices are matched by what they are, never by position: a static
 * passthrough device by its PCI id; the n-th dynamic DirectPath device of
 * an id by the n-th dynamic device allowing that vendor:device; the n-th vGPU of the spec by the n-th
 * vGPU device of the VM (device key order); a NIC of the spec by the first
 * not yet claimed adapter of its type (vmxnet3, SR-IOV, PVRDMA) in device
 * key order.  Adapters of other types (an E1000 a template brought along)
 * are left alone: the spec does not own them.
 */
#ifndef GC_VCDRV_H
#define GC_VCDRV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/spec.h"
#include "gc/sys/driver.h"
#include "gc/vcenter.h"

/* The vCenter host of a spec host (by name, then address), or NULL. */
const struct gc_vcenter_host *gc_vcdrv_host(const struct gc_vcenter_inventory *inv,
					    const struct gc_host *h);
/* The spec name of a vCenter host moref (vCenter's own name when no spec
 * host matches), or NULL when the moref is unknown. */
const char *gc_vcdrv_host_name(const struct gc_vcenter_inventory *inv, const struct gc_cluster *c,
			       const char *moref);
/* The VM named so that is not a template, or NULL. */
const struct gc_vcenter_vm *gc_vcdrv_vm(const struct gc_vcenter_inventory *inv, const char *name);

/*
 * The VM's device that stands for resource r (a vm.device.* or vm.nic.*
 * resource of VM v), or NULL when there is none (the planner creates it).
 * For a NIC or vGPU whose type matches, that is the device even when its
 * settings differ (an update).
 */
const struct gc_vcenter_device *gc_vcdrv_device(const struct gc_vcenter_inventory *inv,
						const struct gc_vcenter_vm *vm,
						const struct gc_vm *v,
						const struct gc_resource *r);
/* "10de:1db4" -> 0x10de, 0x1db4 (a dynamic DirectPath id); false when not that shape. */
bool gc_vcdrv_pci_id(const char *s, unsigned *vendor, unsigned *device);
/* The port group a dvs.portgroup resource stands for: its own name, taken
 * after "dvs/<dvswitch>/portgroup/" (a name may hold '/': never cut at the
 * last one). */
const char *gc_vcdrv_portgroup_name(const struct gc_resource *r);
/* vmknic.c: the host's VMkernel adapter of that device name, or NULL; record
 * a dvs.vmknic resource (the adapter of its device name, when there is one). */
const struct gc_vcenter_vnic *gc_vcdrv_find_vnic(const struct gc_vcenter_host *vh,
					       const char *device);
void gc_vcdrv_record_vmknic(struct gc_observed *obs, const struct gc_vcenter_inventory *inv,
			    const struct gc_cluster *c, const struct gc_resource *r);
/* Is the device an adapter of this NIC kind / a vGPU / a static PCI passthrough? */
bool gc_vcdrv_is_nic(const struct gc_vcenter_device *d, enum gc_res_kind kind);

/*
 * What the spec stops naming.  The spec owns, on each VM it names, every
 * passthrough device (static or dynamic), vGPU, SR-IOV and PVRDMA adapter:
 * one that no spec item claims is recorded under an id the graph does not
 * have, and the planner deletes it.  vmxnet3 and other adapters are never
 * removed (a template's management NIC is the guest's way in), nor are
 * VMs the spec does not name.
 */
/* The resource kind a device of that type is owned as, or GC_RES__COUNT. */
enum gc_res_kind gc_vcdrv_owned_kind(const struct gc_vcenter_device *d);
/* The id of device i of vm (named `name` in the spec):
 * "vm/<name>/device.pci/<pci>" for the first static passthrough device at
 * an address, else "vm/<name>/<kind>/key-<device key>"; NULL when the
 * device is not owned.  The caller frees it. */
char *gc_vcdrv_extra_id(const char *name, const struct gc_vcenter_vm *vm, size_t i);
/* The device of `vm` (named `name` in the spec) whose extra id is `id`, or NULL. */
const struct gc_vcenter_device *gc_vcdrv_extra_device(const struct gc_vcenter_vm *vm,
						      const char *name, const char *id);

/*
 * Record what the inventory says about the resources res[0..nres) of the
 * vCenter target: VMs (and their power state and host), hardware, extra
 * config, devices (and the owned devices no spec item claims, above),
 * distributed switches and port groups.  `problems` gets
 * one line for each thing the spec names that vCenter does not have.
 */
void gc_vcdrv_record(struct gc_observed *obs, const struct gc_vcenter_inventory *inv,
		     const struct gc_cluster *c, const struct gc_resource *const *res, size_t nres,
		     struct gc_buf *problems);

/* ---------------------------------------------------------------- the driver's connection */

/*
 * Shared by driver.c (connect, observe, task slots, lookups) and changes.c
 * (what each action sends).  `mu` guards the inventory pointers, the task
 * counters and the PCI cache; the SOAP connection serialises itself.
 */
struct host_slot {
	const char *host; /* spec host name (borrowed from the cluster) */
	unsigned n;
};

/* One host's QueryConfigTarget entries. */
struct pci_cache {
	char *host; /* moref */
	struct gc_vcenter_pci_target *t;
	size_t n;
};

struct vc_conn {
	struct gc_vcenter_conn *vc;
	const struct gc_cluster *c;
	const struct gc_target *t;
	const struct gc_resource *const *res; /* borrowed from the executor */
	size_t nres;
	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cv;
	struct gc_vcenter_inventory *inv; /* latest observation */
	struct gc_vcenter_inventory **old;
	size_t nold;
	unsigned tasks, max_tasks, max_per_host;
	struct host_slot *slots;
	size_t nslots;
	unsigned shutdown_timeout_ms;
	/* QueryConfigTarget per host, read once per run (changes.c); a
	 * device not found is looked up once more with a fresh query */
	struct pci_cache *pci;
	size_t npci;
};

/* The cluster lease on the spec's vCenter cluster (lease.c): struct
 * gc_driver's lease_get and lease_set. */
int gc_vcdrv_lease_get(void *conn, struct gc_drv_ctx *ctx, char **out, struct gc_error *err);
int gc_vcdrv_lease_set(void *conn, struct gc_drv_ctx *ctx, const char *value, struct gc_error *err);

struct place {
	const struct gc_vcenter_host *host;
	const struct gc_vcenter_compute *compute;
};


/* driver.c */
/* Wait for a task slot on the vCenter (and the spec host, when named). */
void gc_vcdrv_slot_get(struct vc_conn *c, const char *host);
void gc_vcdrv_slot_put(struct vc_conn *c, const char *host);
/* The latest inventory (valid until disconnect). */
const struct gc_vcenter_inventory *gc_vcdrv_snapshot(struct vc_conn *c);
/* Observe again (recording into the store); NULL with err set on failure. */
const struct gc_vcenter_inventory *gc_vcdrv_refresh(struct vc_conn *c, struct gc_drv_ctx *ctx,
						    struct gc_error *err);
/* The vCenter host of spec host h and its compute resource. */
int gc_vcdrv_place(struct place *p, struct vc_conn *c, const struct gc_vcenter_inventory *inv,
		   const struct gc_host *h, struct gc_error *err);
/* The spec's datacenter (the first one when the spec names none). */
const struct gc_vcenter_datacenter *gc_vcdrv_datacenter(struct vc_conn *c,
							const struct gc_vcenter_inventory *inv,
							struct gc_error *err);
/* The VM named so, reading the inventory again once when it is not there
 * (*inv is updated). */
const struct gc_vcenter_vm *gc_vcdrv_find_vm(struct vc_conn *c, struct gc_drv_ctx *ctx,
					     const struct gc_vcenter_inventory **inv,
					     const char *name, struct gc_error *err);

/* An ESXi 6.x host's passthrough and NTP (GC_RES_ESXI_PCI_PASSTHRU,
 * GC_RES_ESXI_NTP on the vCenter target): record.c records what the
 * inventory says, hostchanges.c sends what differs. */
void gc_vcdrv_record_hostconfig(struct gc_observed *obs, const struct gc_vcenter_inventory *inv,
				const struct gc_cluster *c, const struct gc_resource *r,
				struct gc_buf *problems);
int gc_vcdrv_hostconfig_apply(struct vc_conn *c, struct gc_drv_ctx *ctx,
			      const struct gc_resource *r, struct gc_error *err);

/* changes.c: carry out one action of the vCenter target. */
int gc_vcdrv_apply(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_action *a,
		   struct gc_error *err);

#endif
