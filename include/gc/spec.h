/*
 * spec.h - the typed cluster model, loaded from a YAML spec.
 *
 * gc_spec_load() parses the file with libyaml, fills a struct gc_cluster
 * (allocated in one arena, freed by gc_cluster_free), resolves references,
 * computes derived values and runs every cross-layer check.  All problems of
 * a file are collected as diagnostics (capped at GC_DIAG_MAX), each with the
 * file, line and column of the offending node, a message and a hint.
 *
 * Conventions of the model:
 *   - every object keeps a struct gc_mark of where it was written;
 *   - strings are NUL-terminated and owned by the cluster's arena; NULL means
 *     "not given in the spec" (defaults are already applied where the spec
 *     reference documents a default);
 *   - numbers that are "not given" are 0 unless noted; tri-state booleans use
 *     enum gc_tristate;
 *   - arrays are (pointer, count) pairs;
 *   - cross references are resolved into borrowed pointers (`->host`), the
 *     name as written stays beside them (`host_name`).
 */
#ifndef GC_SPEC_H
#define GC_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/arena.h"
#include "gc/error.h"
#include "gc/util.h"

#define GC_SPEC_API_VERSION "gpuclusterctl/v1"
#define GC_DIAG_MAX 100
#define GC_SPEC_MAX_BYTES (64u * 1024 * 1024)

struct gc_mark {
	const char *file; /* borrowed: the cluster's source path; in diagnostics the
	                     path or name the caller gave gc_spec_load*() */
	int line;         /* 1-based; 0 when unknown */
	int col;          /* 1-based */
};

enum gc_tristate { GC_UNSET = 0, GC_FALSE = 1, GC_TRUE = 2 };

/* ---------------------------------------------------------------- diagnostics */

enum gc_severity { GC_SEV_ERROR, GC_SEV_WARNING };

struct gc_diag {
	enum gc_severity severity;
	struct gc_mark mark;
	char *msg;         /* "unknown key 'cpu'" (lower-case, no period) */
	char *hint;        /* "did you mean 'cpus'?" or NULL */
	char *source_line; /* the line of the file, without newline, or NULL */
	char **notes;      /* inside an anchor: "used by VM 'w1' at line 18", one per use */
	size_t nnotes;
};

struct gc_diags {
	struct gc_diag *items; /* gc_xmalloc'd; free with gc_diags_free */
	size_t n;
	size_t cap;
	size_t nerrors;
	size_t dropped; /* diagnostics past GC_DIAG_MAX */
};

void gc_diags_free(struct gc_diags *d);
/*
 * Render one diagnostic as text, exactly:
 *
 *   specs/x.yaml:12:7: error: unknown key 'cpu'
 *      12 |       cpu: 4
 *         |       ^
 *      = hint: did you mean 'cpus'?
 *      = note: used by VM 'w1' at line 18
 *
 * (line number right-aligned in a 5-wide field; the caret under the column;
 * the hint line only when there is a hint, a note line per note (a problem
 * inside a YAML anchor: the hosts or VMs that use it); tabs in the source are shown as
 * one space each so the caret lines up.)
 */
void gc_diag_format(struct gc_buf *out, const struct gc_diag *d);
/* All diagnostics of d in order (gc_diag_format each), then, when some were
 * dropped past GC_DIAG_MAX, one line "note: N more diagnostics not shown". */
void gc_diags_format(struct gc_buf *out, const struct gc_diags *d);

/* ---------------------------------------------------------------- known hardware tables */

struct gc_gpu_model {
	const char *name;       /* spec spelling, e.g. "V100-32GB", "T4", "A100-80GB" */
	unsigned memory_gb;     /* framebuffer in GB as the reference guides count it */
	uint16_t vendor_id;     /* 0x10de */
	uint16_t device_id;     /* PCI device id of the common SKU */
	const char *const *vgpu_profiles; /* NULL-terminated; e.g. "grid_t4-16c" */
	bool sriov; /* Ampere and later: vGPUs live on SR-IOV VFs (docs/kvm.md) */
};
struct gc_nic_model {
	const char *name;   /* "ConnectX-5" */
	unsigned max_vfs;   /* per port, as its ESXi driver accepts */
	unsigned ports;
	const char *driver; /* ESXi native driver: "nmlx5_core" | "nmlx4_core" */
};

const struct gc_gpu_model *gc_gpu_model_find(const char *name);
const struct gc_gpu_model *gc_gpu_models(size_t *n);
const struct gc_nic_model *gc_nic_model_find(const char *name);
const struct gc_nic_model *gc_nic_models(size_t *n);
/* Framebuffer of a vGPU profile in GB ("grid_t4-16c" -> 16), 0 if unparseable. */
unsigned gc_vgpu_profile_fb_gb(const char *profile);
/* Whether GPU model m offers the vGPU profile (with or without its
 * "grid_"/"nvidia_" prefix), and whether two profile names are one. */
bool gc_gpu_model_has_profile(const struct gc_gpu_model *m, const char *profile);
bool gc_vgpu_profile_same(const char *a, const char *b);

/* ---------------------------------------------------------------- shared pieces */

struct gc_credential {
	struct gc_mark mark;
	char *name;
	char *username;
	char *password_env;  /* name of an environment variable */
	char *password_file; /* path of a file holding the password */
	char *key_file;      /* SSH private key */
	char *key_passphrase_env;
	bool agent;          /* use ssh-agent */
};

/* How long a command that only reads may run when the spec does not say
 * (ssh.read_timeout_s): observation, verification, reboot polls. */
#define GC_SSH_READ_TIMEOUT_S 60u

struct gc_ssh {
	struct gc_mark mark;
	unsigned port;              /* default 22 */
	char *known_hosts;          /* default: ~/.ssh/known_hosts */
	bool trust_new_host_keys;   /* default false: unknown keys are refused */
	unsigned connect_timeout_s; /* default 10 */
	unsigned command_timeout_s; /* default 300 */
	unsigned read_timeout_s;    /* default 60 (GC_SSH_READ_TIMEOUT_S) */
	unsigned keepalive_s;       /* default 15 */
};

/* ---------------------------------------------------------------- vCenter */

struct gc_vcenter {
	struct gc_mark mark;
	char *url;        /* https://vc.example.com */
	char *datacenter;
	char *cluster;
	char *datastore;  /* for clones; optional */
	char *credentials_name;
	const struct gc_credential *credentials;
	char *ca_file;
	bool insecure;    /* only when the spec says insecure: true (warned) */
	unsigned max_tasks;          /* tasks in flight per vCenter, default 8 */
	unsigned max_tasks_per_host; /* default 2 */
	unsigned shutdown_timeout_s; /* guest shutdown before a hard power-off; default 300 */
};

/* ---------------------------------------------------------------- ESXi hosts */

enum gc_gpu_mode { GC_GPU_PASSTHROUGH, GC_GPU_VGPU };

struct gc_host_gpu {
	struct gc_mark mark;
	char *pci;                        /* "0000:3b:00.0" */
	char *model_name;                 /* as written */
	const struct gc_gpu_model *model; /* NULL for unknown models */
	unsigned memory_gb;               /* from the table or the spec */
	enum gc_gpu_mode mode;
	struct gc_host *host;             /* back pointer */
	/* derived */
	struct gc_vm *passthrough_vm; /* the VM it is passed to, or NULL */
	const char *vgpu_profile;     /* the profile used on it, or NULL */
	unsigned vgpu_used_gb;        /* framebuffer handed out */
};

enum gc_nic_mode { GC_NIC_MODE_NONE, GC_NIC_MODE_SRIOV, GC_NIC_MODE_PVRDMA, GC_NIC_MODE_PASSTHROUGH };

/* The map form of a pvrdma NIC's `vmknic:`: the VMkernel adapter that
 * vCenter creates on a port group of the NIC's distributed switch. */
struct gc_vmknic {
	struct gc_mark mark;
	char *name;      /* the device vCenter is expected to give it, "vmk1" */
	char *portgroup; /* a port group of the NIC's dvswitch */
	char *address;   /* IPv4 with its prefix length, "192.168.10.21/24" */
	struct gc_portgroup *pg; /* resolved by the checks */
};

struct gc_host_nic {
	struct gc_mark mark;
	char *pci;
	char *model_name;
	const struct gc_nic_model *model; /* NULL for unknown models */
	char *driver;      /* ESXi driver: from the table, or given for unknown models */
	unsigned max_vfs;  /* per port: from the table, or given for unknown models */
	char *device;      /* vmnic name, e.g. "vmnic4" (required for pvrdma uplinks) */
	enum gc_nic_mode mode;
	unsigned vfs;      /* sriov: VFs per port */
	char *vmknic;      /* pvrdma: tagged vmknic, e.g. "vmk1" (both forms) */
	struct gc_vmknic *vmknic_create; /* the map form: created through vCenter; else NULL */
	char *dvswitch_name; /* pvrdma: the distributed switch it uplinks */
	struct gc_dvswitch *dvswitch;
	struct gc_host *host;
};

struct gc_vgpu_host {
	struct gc_mark mark;
	char *bundle;     /* offline bundle .zip (absolute path on the host) */
	char *vib;        /* or a single .vib path/URL */
	char *vib_name;   /* name in `esxcli software vib list`, to observe it */
	char *version;    /* expected VIB version (optional) */
	char *release;    /* vGPU software release, e.g. "16.1" */
	char *default_type;      /* "SharedPassthru" (required) */
	char *assignment_policy; /* "Performance" | "Consolidation" */
	enum gc_tristate ecc;    /* desired ECC; releases before 9.0 need it off */
};

enum gc_hypervisor { GC_HV_ESXI, GC_HV_KVM };

struct gc_host {
	struct gc_mark mark;
	char *name;
	char *address;
	enum gc_hypervisor hypervisor; /* `hypervisor: esxi | kvm`, default esxi */
	char *libvirt_uri;  /* kvm: as written, else derived: qemu:///system for a
	                       loopback address, qemu+ssh://USER@ADDRESS[:PORT]/system */
	char *accel;        /* kvm: "kvm" | "tcg" (domain type qemu); NULL: kvm when the
	                       host offers it */
	char *credentials_name;
	const struct gc_credential *credentials;
	struct gc_ssh ssh;
	char *version;      /* expected ESXi version, e.g. "8.0.2" */
	char **ntp;         /* servers */
	size_t nntp;
	struct gc_host_gpu *gpus;
	size_t ngpus;
	struct gc_host_nic *nics;
	size_t nnics;
	struct gc_vgpu_host *vgpu; /* NULL when no vGPU */
	/* derived */
	bool needs_vgpu_manager;
	char *nmlx5_max_vfs; /* "8,8" when SR-IOV NICs are configured, else NULL */
	/* an ESXi host whose `version` predates an esxcli namespace the host
	 * side needs: `hardware pci pcipassthru` came with 7.0, `system ntp`
	 * with 7.0 Update 1 (7.0.1).  Its passthrough or NTP then goes through
	 * vCenter (HostPciPassthruSystem, HostDateTimeSystem); the spec must
	 * have one.  False when the version is not given. */
	bool passthru_via_vcenter;
	bool ntp_via_vcenter;
	/* the switch whose lossless RoCE the host's nmlx5_core uplinks follow
	 * (DSCP trust, PFC on its priority, ECN): the first switch with a roce
	 * section, on an ESXi host with an nmlx5_core NIC in sriov or pvrdma
	 * mode; NULL otherwise */
	const struct gc_switch *roce_switch;
	struct gc_vm **vms;  /* VMs placed here */
	size_t nvms;
};

/* ---------------------------------------------------------------- distributed switches */

struct gc_portgroup {
	struct gc_mark mark;
	char *name;
	unsigned vlan; /* 0 = none */
	struct gc_dvswitch *dvswitch;
};

struct gc_dvs_uplink {
	struct gc_mark mark;
	char *host_name;
	struct gc_host *host;
	char *nic; /* vmnic name */
};

struct gc_dvswitch {
	struct gc_mark mark;
	char *name;
	unsigned mtu; /* default 9000 */
	struct gc_dvs_uplink *uplinks;
	size_t nuplinks;
	struct gc_portgroup *portgroups;
	size_t nportgroups;
};

/* ---------------------------------------------------------------- guests */

struct gc_license {
	struct gc_mark mark;
	char *server;       /* legacy license server */
	unsigned port;      /* default 7070 */
	unsigned feature_type; /* 0..4, gridd.conf FeatureType; default 1 (NVIDIA vGPU) on a
	                          VM with a vGPU; a passthrough GPU's edition must be given */
	char *token_file;   /* NLS client configuration token (local path) */
	unsigned timeout_s; /* wait for the driver to report the licence; default 300 */
};

struct gc_roce_qos {
	struct gc_mark mark;
	char *interface;      /* guest netdev, e.g. "ens192" */
	char *rdma_device;    /* e.g. "mlx5_0" (optional) */
	char *trust;          /* "dscp" | "pcp"; default "dscp" */
	int pfc_priority;     /* 0..7, -1 when unset */
	int tos;              /* 0..255; default 106 (DSCP 26 + ECT) */
	bool ecn;             /* default true */
};

/* The guest's RDMA network interface: its address and MTU (the guides give
 * each VM an address on the RDMA network, MTU 9000 on RoCE). */
struct gc_rdma_if {
	struct gc_mark mark;
	char *name;       /* guest netdev, e.g. "ens224" */
	char *address;    /* IPv4 CIDR, e.g. "198.18.0.51/24" */
	unsigned mtu;     /* default 9000 */
};

/* How the NVIDIA driver gets into the guest. */
struct gc_guest_driver {
	struct gc_mark mark;
	char *source;     /* "packages" (default) | "runfile" (GRID/vGPU guest driver) */
	char *runfile;    /* runfile: local path of NVIDIA-Linux-x86_64-<ver>[-grid].run, uploaded */
	char *version;    /* exact version expected, e.g. "535.183.01"; NULL: the branch only */
	char *package;    /* packages: the package name; NULL: the OS's usual name */
};

/* The RDMA user-space stack. */
struct gc_rdma_stack {
	struct gc_mark mark;
	char *source;     /* "packages" (distribution rdma-core) | "ofed" (MLNX_OFED/DOCA-OFED) */
	char *installer;  /* ofed: local path of the installer archive, uploaded */
	char *version;    /* ofed: what `ofed_info -s` must print, e.g. "MLNX_OFED_LINUX-5.8-1.1.2.1" */
};

struct gc_guest {
	struct gc_mark mark;
	char *address;
	char *credentials_name;
	const struct gc_credential *credentials;
	struct gc_ssh ssh;
	char *os;               /* "ubuntu" | "debian" | "rhel" | "centos" | "rocky"; default "ubuntu" */
	char *nvidia_driver;    /* expected driver branch/version, e.g. "535" */
	struct gc_guest_driver *driver;   /* how to install it; NULL: packages */
	struct gc_rdma_stack *rdma_stack; /* NULL unless rdma_packages or rdma_stack */
	struct gc_rdma_if *rdma_interface; /* NULL when not managed */
	struct gc_license *license; /* NULL when no vGPU licence */
	bool rdma_packages;     /* shorthand for rdma_stack: {source: packages} */
	bool peermem;           /* load nvidia_peermem */
	struct gc_roce_qos *roce_qos; /* NULL when not configured */
	bool container_toolkit;
	char **ntp;
	size_t nntp;
};

/* ---------------------------------------------------------------- VMs */

enum gc_vm_gpu_kind { GC_VMGPU_STATIC, GC_VMGPU_DYNAMIC, GC_VMGPU_VGPU };

struct gc_vm_gpu {
	struct gc_mark mark;
	enum gc_vm_gpu_kind kind;
	char *host_pci;  /* static passthrough: host GPU PCI address;
	                    vgpu: optional pin to one physical GPU */
	char *pci_id;    /* dynamic: "10de:1db6" */
	char *profile;   /* vgpu: "grid_t4-16c" */
	struct gc_host_gpu *gpu; /* resolved host GPU (static; vgpu when pinned/assigned) */
	unsigned memory_gb;      /* derived: what the VM sees */
};

enum gc_vm_nic_kind {
	GC_VMNIC_SRIOV,
	GC_VMNIC_PVRDMA,
	GC_VMNIC_VMXNET3,
	GC_VMNIC_PASSTHROUGH,
	GC_VMNIC_VIRTIO, /* KVM: a virtio-net NIC on a libvirt network */
};

struct gc_vm_nic {
	struct gc_mark mark;
	enum gc_vm_nic_kind kind;
	char *pf;            /* sriov: host NIC PCI address of the PF */
	char *host_pci;      /* passthrough: host NIC PCI address (HCA passthrough) */
	char *port_group;    /* sriov/pvrdma: distributed port group; vmxnet3: network */
	char *network;       /* vmxnet3/sriov on ESXi: standard network name, e.g. "VM Network";
	                        virtio/sriov on KVM: the libvirt network */
	char *protocol;      /* pvrdma: "rocev1" | "rocev2"; default "rocev2" */
	char *address;       /* virtio (KVM): IPv4 CIDR the VM's NoCloud seed gives it */
	char *gateway;       /* virtio (KVM): its default gateway (IPv4), optional */
	struct gc_host_nic *nic;       /* resolved PF / passthrough NIC */
	struct gc_portgroup *portgroup; /* resolved distributed port group */
};

struct gc_vm {
	struct gc_mark mark;
	char *name;
	char *host_name;
	struct gc_host *host;
	char *template_name; /* ESXi: VM or template to clone from */
	char *image;         /* KVM: base disk image on the host, cloned as a qcow2 overlay */
	char *pool;          /* KVM: libvirt storage pool of the overlay; default "default" */
	unsigned disk_gb;    /* KVM: overlay size, 0 = the image's */
	unsigned cpus;
	unsigned memory_gb;
	char *firmware;      /* "efi" | "bios"; default "efi" with passthrough or a vGPU, else
	                        NULL for an ESXi clone (its template's), else "bios" */
	enum gc_tristate reserve_all_memory; /* as written; derived value below */
	unsigned mmio_size_gb; /* as written, 0 = derive */
	enum gc_tristate allow_p2p;
	bool power_on;       /* default true */
	char *role;          /* rolling group ("master", "worker"): never down with another role; NULL: none */
	struct gc_vm_gpu *gpus;
	size_t ngpus;
	struct gc_vm_nic *nics;
	size_t nnics;
	struct gc_guest *guest; /* NULL when the guest is not managed */
	/* derived */
	bool has_passthrough;     /* any static/dynamic GPU, SR-IOV VF or PCI NIC */
	bool has_vgpu;
	bool has_pvrdma;
	unsigned passthrough_gb;  /* sum of passthrough GPU memory */
	unsigned mmio_gb;         /* effective pciPassthru.64bitMMIOSizeGB, 0 = none */
	bool use_64bit_mmio;
	bool reservation_full;    /* effective */
	bool live_migratable;     /* vGPU/PVRDMA/plain: yes; passthrough/SR-IOV: no */
};

/* ---------------------------------------------------------------- Onyx switches */

struct gc_switch_roce {
	struct gc_mark mark;
	char *mode;           /* "dscp-lossless" (manual recipe) | "oneshot" (`roce lossless`) */
	double pool_percent;  /* default 50.00 */
	int priority;         /* lossless switch priority, default 3 */
	unsigned ecn_min_kb;  /* default 150 */
	unsigned ecn_max_kb;  /* default 1500 */
	int cnp_traffic_class; /* strict ETS class for CNPs, default 6 */
	bool pfc;             /* default true */
	bool lldp;            /* default true */
	bool owned;           /* remove RoCE settings the spec no longer wants */
};

struct gc_switch {
	struct gc_mark mark;
	char *name;
	char *address;
	char *credentials_name;
	const struct gc_credential *credentials;
	char *enable_password_env;
	struct gc_ssh ssh;
	char *model;          /* "SN2700" */
	char *version;        /* minimum Onyx release expected, e.g. "3.9.0300" */
	char *ports;          /* "1/1-1/32" */
	struct gc_switch_roce *roce; /* NULL when RoCE is not managed */
};

/* ---------------------------------------------------------------- policies */

struct gc_rolling {
	struct gc_mark mark;
	unsigned max_unavailable; /* hosts down at once, default 1 */
	bool allow_vmotion;       /* migrate vGPU/PVRDMA VMs instead of powering off; default false */
	unsigned max_failures;    /* failed targets tolerated before the next wave is not started; default 0 */
	/* VMs out of service at once, per role (powered off for their own
	 * changes or their host's maintenance, guests rebooting), and
	 * evacuation vMotions in flight; default 1; with
	 * max_unavailable_vms_pct, a percentage (1-100) of the role's VMs */
	unsigned max_unavailable_vms;
	bool max_unavailable_vms_pct;
};

struct gc_validation {
	struct gc_mark mark;
	double min_rdma_gbps;      /* default 0 = not checked */
	double max_rdma_latency_us;
	double min_h2d_gbps;
	double min_d2h_gbps;
	double min_d2d_gbps;
	bool require_gpudirect;
};

/* ---------------------------------------------------------------- the cluster */

struct gc_cluster {
	struct gc_arena arena; /* owns everything below */
	char *source_path;
	struct gc_mark mark;
	char *name;
	char *description;
	struct gc_credential *credentials;
	size_t ncredentials;
	struct gc_ssh ssh_defaults;
	struct gc_vcenter *vcenter; /* NULL when no vCenter */
	struct gc_host *hosts;
	size_t nhosts;
	struct gc_dvswitch *dvswitches;
	size_t ndvswitches;
	struct gc_vm *vms;
	size_t nvms;
	struct gc_switch *switches;
	size_t nswitches;
	struct gc_rolling rolling;
	struct gc_validation validation;
	struct gc_spec_index *index; /* private to src/spec: name lookups */
};

/*
 * Load and check a spec file.  On success (*out set, returns 0) diags may
 * still hold warnings.  On a spec error returns GC_ESPEC with every problem
 * in diags and *out untouched.  Other failures (I/O) return their code with
 * err set.
 */
int gc_spec_load(struct gc_cluster **out, struct gc_diags *diags, const char *path,
		 struct gc_error *err);
/* Same from memory; `name` is used as the file name in marks. */
int gc_spec_load_buffer(struct gc_cluster **out, struct gc_diags *diags, const char *name,
			const char *data, size_t len, struct gc_error *err);
void gc_cluster_free(struct gc_cluster *c);

/* Whether release v ("8.0", "6.7.0", "535") is before major.minor.patch,
 * comparing three numbers (a missing one is 0); false when v is NULL or
 * does not start with a digit. */
bool gc_version_before(const char *v, long major, long minor, long patch);

/* Lookups by name (linear or hashed; NULL when absent). */
struct gc_host *gc_cluster_host(const struct gc_cluster *c, const char *name);
struct gc_vm *gc_cluster_vm(const struct gc_cluster *c, const char *name);
struct gc_switch *gc_cluster_switch(const struct gc_cluster *c, const char *name);
struct gc_dvswitch *gc_cluster_dvswitch(const struct gc_cluster *c, const char *name);
struct gc_credential *gc_cluster_credential(const struct gc_cluster *c, const char *name);

#endif
