/*
 * graph.h - the resource graph: everything gpuclusterctl can observe and
 * change, and what must happen before what.
 *
 * gc_graph_build() turns a checked cluster model into resources.  A resource
 * is one observable, changeable thing on one target (the passthrough switch
 * of one PCI device on one ESXi host, the extra config of one VM, the PFC
 * setting of one switch).  It has:
 *
 *   - a kind (enum gc_res_kind, spelled "esxi.pci_passthru" in text);
 *   - a target: the ESXi host, the vCenter, the switch or the guest whose
 *     connection applies it.  VM resources target the vCenter and carry the
 *     ESXi host they live on (`host`) and the VM (`vm`);
 *   - a stable string id, unique in the graph, the key of observed state:
 *       <host>/esxi.<kind>[/<key>]       esx01/esxi.pci_passthru/0000:3b:00.0
 *       dvs/<dvs>[/portgroup/<pg>]       dvs/rdma-dvs/portgroup/rdma-pg
 *       vm/<vm>[/<sub>[/<key>]]          vm/worker-01/device.pci/0000:3b:00.0
 *       <switch>/switch.<kind>           sw01/switch.pfc
 *       guest/<vm>/<kind>                guest/worker-01/peermem
 *   - desired properties: an ordered bag of key=value strings.  Drivers
 *     translate kind + properties into commands; observed state has the same
 *     shape, so the diff is generic (see plan.h, observed.h);
 *   - flags: what applying a change costs (maintenance, reboot, VM off);
 *   - the spec mark it came from, for messages;
 *   - edges: `deps` must happen before this resource, `rdeps` after.
 *
 * The graph owns resources, properties and edges (one arena).  Strings
 * handed to the graph are copied.  Resources are kept in insertion order,
 * which is also the tie-break order of every later sort, so plans are
 * deterministic.  Lookups by id are hashed; building is linear in the size
 * of the cluster.
 *
 * The lower-level calls (gc_graph_new, gc_graph_add_target, gc_graph_add,
 * gc_resource_set, gc_graph_add_edge, gc_graph_add_vm) let tests and future
 * front ends build graphs without a spec.
 */
#ifndef GC_GRAPH_H
#define GC_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "gc/arena.h"
#include "gc/error.h"
#include "gc/spec.h"
#include "gc/util.h"

/* Keep gc_res_kind_name() in graph.c in step with this list. */
enum gc_res_kind {
	GC_RES_ESXI_NTP,          /* servers, enabled */
	GC_RES_ESXI_PCI_PASSTHRU, /* enabled (per PCI device) */
	GC_RES_ESXI_MODULE_PARAM, /* module, params (nmlx5_core max_vfs) */
	GC_RES_ESXI_VIB,          /* name, version, source */
	GC_RES_ESXI_GRAPHICS,     /* default_type, assignment_policy */
	GC_RES_ESXI_GPU_ECC,      /* ecc (per GPU, via nvidia-smi) */
	GC_RES_ESXI_ADVANCED,     /* option, value (/Net/PVRDMAVmknic) */
	GC_RES_ESXI_FIREWALL,     /* ruleset, enabled */
	GC_RES_DVS,               /* mtu, uplink.<host>=<vmnic> */
	GC_RES_DVS_PORTGROUP,     /* dvswitch, vlan */
	GC_RES_VM,                /* host, template, cpus, memory_gb */
	GC_RES_VM_HW,             /* firmware, memory_reservation */
	GC_RES_VM_EXTRA_CONFIG,   /* VMX keys, e.g. pciPassthru.64bitMMIOSizeGB */
	GC_RES_VM_DEVICE_PCI,     /* host_pci | pci_id, device */
	GC_RES_VM_DEVICE_VGPU,    /* profile[, host_pci] */
	GC_RES_VM_NIC_SRIOV,      /* pf, port_group */
	GC_RES_VM_NIC_PVRDMA,     /* port_group, protocol */
	GC_RES_VM_NIC_VMXNET3,    /* network | port_group */
	GC_RES_VM_POWER,          /* power = on|off */
	GC_RES_SWITCH_ROCE,       /* one-shot `roce lossless`: mode */
	GC_RES_SWITCH_POOL,       /* pool, type, memory_percent, switch_priority */
	GC_RES_SWITCH_QOS_TRUST,  /* ports, trust */
	GC_RES_SWITCH_ECN,        /* ports, traffic_class, min_kb, max_kb */
	GC_RES_SWITCH_ETS,        /* ports, traffic_class, mode */
	GC_RES_SWITCH_PFC,        /* ports, priority, enabled, port_mode */
	GC_RES_SWITCH_LLDP,       /* enabled */
	GC_RES_GUEST_DRIVER,      /* branch[, version] (guest reboot) */
	GC_RES_GUEST_RDMA_STACK,  /* stack = packages|ofed[, version] */
	GC_RES_GUEST_RDMA_IF,     /* name, address, mtu, persistent */
	GC_RES_GUEST_LICENSE,     /* server, port, feature_type | token_file */
	GC_RES_GUEST_PEERMEM,     /* module, loaded, persistent */
	GC_RES_GUEST_ROCE_QOS,    /* interface, rdma_device, trust, pfc_priority, tos, ecn */
	GC_RES_GUEST_CONTAINER_TOOLKIT, /* installed */
	GC_RES_GUEST_NTP,         /* servers */
	GC_RES_KVM_IOMMU,         /* iommu, iommu_mode (kernel arguments; host reboot) */
	GC_RES_KVM_VFIO,          /* driver, persistent (per PCI device) */
	GC_RES_KVM_SRIOV,         /* numvfs, persistent (per PF) */
	GC_RES_KVM_VGPU,          /* parent, profile, mechanism, uuid (per vGPU of a VM) */
	GC_RES_LIBVIRT_NETWORK,   /* forward, pf, autostart */
	GC_RES_VM_NIC_VIRTIO,     /* network */
	GC_RES_VM_SEED,           /* datasource, digest (KVM: the NoCloud seed disk) */
	GC_RES_VCENTER_SETTING,   /* key, value (a vCenter advanced setting) */
	GC_RES_DVS_VMKNIC,        /* host, dvswitch, portgroup, device, address (PVRDMA's vmknic) */
	GC_RES_ESXI_NIC_FIRMWARE, /* sriov_en, num_of_vfs (per SR-IOV PF, via Mellanox MFT's mlxconfig;
				     num_of_vfs is a minimum, see gc_plan_value_same) */
	GC_RES__COUNT
};

/* "esxi.pci_passthru"; never NULL for a valid kind. */
const char *gc_res_kind_name(enum gc_res_kind kind);
/* Inverse of gc_res_kind_name(); GC_ENOTFOUND when unknown. */
int gc_res_kind_parse(enum gc_res_kind *out, const char *name);

enum gc_target_kind {
	GC_TARGET_ESXI,
	GC_TARGET_VCENTER,
	GC_TARGET_SWITCH,
	GC_TARGET_GUEST,
	GC_TARGET_KVM,     /* a KVM host's Linux over SSH (IOMMU, vfio-pci, VFs, vGPUs) */
	GC_TARGET_LIBVIRT, /* a KVM host's libvirtd: its VMs and networks */
};

/* "esxi", "vcenter", "switch", "guest", "kvm", "libvirt" */
const char *gc_target_kind_name(enum gc_target_kind kind);
/* The targets that hold VMs (vCenter, a KVM host's libvirt). */
static inline bool gc_target_holds_vms(enum gc_target_kind kind)
{
	return kind == GC_TARGET_VCENTER || kind == GC_TARGET_LIBVIRT;
}

/* Name of the one vCenter target. */
#define GC_VCENTER_TARGET "vcenter"
/* vCenter's advanced setting that lets vGPU VMs be live-migrated (vSphere
 * 6.7 Update 1 and later): a vcenter.setting resource with this id when the
 * spec allows vMotion of a vGPU VM; every migration waits for it. */
#define GC_VGPU_HOTMIGRATE_KEY "vgpu.hotmigrate.enabled"
#define GC_VGPU_HOTMIGRATE_ID "vcenter/setting/" GC_VGPU_HOTMIGRATE_KEY

/*
 * Where a resource is applied: one connection.  ESXi: the host's name;
 * VCENTER: GC_VCENTER_TARGET; SWITCH: the switch's name; GUEST: the VM's
 * name.  The model pointers are borrowed from the cluster and NULL in graphs
 * built by hand.
 */
struct gc_target {
	enum gc_target_kind kind;
	const char *name;
	size_t index; /* position in gc_graph.targets */
	const struct gc_host *host;
	const struct gc_switch *sw;
	const struct gc_vm *vm; /* GUEST */
	/* KVM, LIBVIRT: host; LIBVIRT: the URI virConnectOpen() takes */
};

/* Resource flags: what applying a change (create/update/delete) costs. */
#define GC_RES_NEEDS_MAINTENANCE 0x1u /* the ESXi host must be in maintenance mode */
#define GC_RES_NEEDS_REBOOT 0x2u      /* takes effect after the ESXi host (guest: the guest) reboots */
#define GC_RES_NEEDS_VM_OFF 0x4u      /* the VM must be powered off */
/* Applied with software a reboot-needing dependency on the same host installs
 * (nvidia-smi of the vGPU manager): when both change, this one waits for
 * that reboot (and gets a second reboot if it needs one itself). */
#define GC_RES_AFTER_REBOOT 0x8u

struct gc_prop {
	const char *key;
	const char *value;
};

/* A desired value that only the target can tell: the driver learns it while
 * observing (gc_observed_learn) and the planner compares with that.  Until
 * it is learned the plan shows this text.  Its one user: the VIB names and
 * versions of a vGPU manager bundle given without `vib_name`. */
#define GC_PROP_LEARNED "(learned from the bundle on the host)"
/* The other learned value: the fingerprint of a KVM VM's NoCloud seed, which
 * the libvirt driver computes from the spec and the guest's public key. */
#define GC_PROP_LEARNED_SEED "(learned: the seed the spec gives the guest)"
/* True for a GC_PROP_LEARNED* placeholder. */
static inline bool gc_prop_is_learned(const char *v)
{
	return v != NULL && v[0] == '(' && v[1] == 'l' && v[2] == 'e' && v[3] == 'a' && v[4] == 'r' &&
	       v[5] == 'n' && v[6] == 'e' && v[7] == 'd';
}

struct gc_strmap; /* internal: id hash (src/graph/strmap.h) */

struct gc_resource {
	size_t index; /* position in gc_graph.resources (insertion order) */
	enum gc_res_kind kind;
	const char *id;
	const struct gc_target *target;
	const char *host; /* the ESXi host it lives on (ESXi and VM resources), else NULL */
	const char *vm;   /* the VM (VM and guest resources), else NULL */
	struct gc_prop *props; /* desired properties, in order */
	size_t nprops;
	unsigned flags;       /* GC_RES_NEEDS_* */
	const char *summary;  /* short phrase, "passthrough for GPU", or NULL (borrowed) */
	const char *detail;   /* its object, "0000:3b:00.0", or NULL (borrowed) */
	struct gc_mark mark;
	/* must-happen-before, both directions; filled by gc_graph_add_edge */
	const struct gc_resource **deps;
	size_t ndeps;
	const struct gc_resource **rdeps;
	size_t nrdeps;
};

/*
 * What the planner needs to know about a VM beyond its resources: where it
 * runs, whether it may be live-migrated, whether the spec wants it on, and
 * a phrase for "why" lines ("passthrough GPU 0000:3b:00.0").
 */
struct gc_graph_vm {
	const char *name;
	const char *host;
	bool live_migratable;
	bool power_on;
	const char *pinned_by; /* why it cannot migrate: "passthrough GPU 0000:3b:00.0", or NULL */
	const struct gc_target *target; /* what holds it: the vCenter or the KVM host's libvirt
	                                   (NULL in graphs built by hand: the vCenter) */
};

struct gc_graph {
	struct gc_arena arena; /* owns everything below except the pointer arrays */
	const struct gc_cluster *cluster; /* borrowed; NULL for graphs built by hand */
	struct gc_rolling rolling;        /* copied from the cluster; set by hand in tests */
	struct gc_target **targets;
	size_t ntargets;
	struct gc_resource **resources;
	size_t nresources;
	size_t nedges;
	struct gc_graph_vm *vms; /* in spec order */
	size_t nvms;
	/* internal */
	size_t captargets, capresources, capvms;
	struct gc_strmap *index;   /* id -> resource */
	struct gc_strmap *tindex;  /* kind:name -> target */
	struct gc_strmap *vindex;  /* VM name -> index + 1 into vms */
	const char *last_host, *last_vm; /* shared copies of consecutive host/vm names */
};

/* ---------------------------------------------------------------- building */

/*
 * Build the resource graph of a checked cluster.  *out belongs to the
 * caller (gc_graph_free) and borrows from `c`, which must outlive it.
 * Fails with GC_EINVAL on a duplicate resource id.  The edges it adds are
 * acyclic by construction; gc_graph_toposort() (and so gc_plan_build())
 * checks any graph and names a cycle.
 */
int gc_graph_build(struct gc_graph **out, const struct gc_cluster *c, struct gc_error *err);

void gc_graph_new(struct gc_graph **out);
void gc_graph_free(struct gc_graph *g);

/* The target of that kind and name, created on first use. */
struct gc_target *gc_graph_add_target(struct gc_graph *g, enum gc_target_kind kind,
				      const char *name);
struct gc_target *gc_graph_target(const struct gc_graph *g, enum gc_target_kind kind,
				  const char *name);
/*
 * Add a resource; `host`/`vm` may be NULL.  GC_EINVAL when the id exists.
 * *out is borrowed (owned by the graph).
 */
int gc_graph_add(struct gc_resource **out, struct gc_graph *g, enum gc_res_kind kind,
		 const struct gc_target *target, const char *id, const char *host, const char *vm,
		 unsigned flags, struct gc_error *err);
/* Append a desired property (value NULL is not allowed); the key is not deduplicated. */
void gc_resource_set(struct gc_graph *g, struct gc_resource *r, const char *key,
		     const char *value);
/* Same without copying: key and value must outlive the graph (literals, model strings). */
void gc_resource_set_borrowed(struct gc_graph *g, struct gc_resource *r, const char *key,
			      const char *value);
void gc_resource_setf(struct gc_graph *g, struct gc_resource *r, const char *key,
		      const char *fmt, ...) GC_PRINTF(4, 5);
/* `before` must happen before `after`.  Duplicate edges are ignored. */
void gc_graph_add_edge(struct gc_graph *g, const struct gc_resource *before,
		       const struct gc_resource *after);
/* Record a VM for the planner (strings copied). */
void gc_graph_add_vm(struct gc_graph *g, const struct gc_graph_vm *vm);

/* ---------------------------------------------------------------- querying */

struct gc_resource *gc_graph_find(const struct gc_graph *g, const char *id);
const struct gc_graph_vm *gc_graph_vm(const struct gc_graph *g, const char *name);
/* "passthrough for GPU 0000:3b:00.0" (summary + detail), or the id. */
void gc_resource_describe(struct gc_buf *out, const struct gc_resource *r);
/* Desired value of a property, or NULL. */
const char *gc_resource_prop(const struct gc_resource *r, const char *key);

/*
 * A topological order of all resources (ties broken by insertion order).
 * *order is gc_xmalloc'd, nresources long; caller frees.  On a cycle returns
 * GC_ECYCLE naming one cycle by resource ids.
 */
int gc_graph_toposort(const struct gc_resource ***order, const struct gc_graph *g,
		      struct gc_error *err);

/* ---------------------------------------------------------------- rendering */

/* Graphviz: one cluster box per target, one node per resource, edges in order. */
void gc_graph_render_dot(struct gc_buf *out, const struct gc_graph *g);
/* {"format_version":1,"targets":[...],"resources":[...]} (see docs/graph.md). */
void gc_graph_render_json(struct gc_buf *out, const struct gc_graph *g);
/* The same bytes written to f as they are made (not flushed); 0 or GC_EIO. */
int gc_graph_write_json(FILE *f, const struct gc_graph *g, struct gc_error *err);

struct gc_jsonw;
/* A resource's (or action's) GC_RES_* flags as the JSON array both
 * documents carry: ["needs_maintenance", "needs_reboot", ...]. */
void gc_graph_put_flags_json(struct gc_jsonw *w, unsigned flags);

#endif
