/*
 * vcenter.h - a vCenter session over SOAP (/sdk, urn:vim25) and the one-call
 * observation of every VM.
 *
 * The session is one gc_https handle (one kept-alive TLS connection) that
 * holds the `vmware_soap_session` cookie after Login.  Connecting runs
 * RetrieveServiceContent (the managed object ids of the session manager and
 * the property collector, the API version) and then Login; freeing logs out.
 *
 *     struct gc_vcenter_opts o = {.url = "https://vc01.example.com",
 *                                 .username = "administrator@vsphere.local",
 *                                 .password_env = "GC_VC_PASSWORD",
 *                                 .ca_file = "/etc/gc/vc-ca.pem"};
 *     struct gc_vcenter_conn *vc;
 *     struct gc_vcenter_inventory *inv;
 *     if (gc_vcenter_connect(&vc, &o, &err) < 0) ...
 *     if (gc_vcenter_observe(&inv, vc, &err) < 0) ...
 *     const struct gc_vcenter_vm *vm = gc_vcenter_inventory_vm(inv, "worker-01");
 *     gc_vcenter_inventory_free(inv);
 *     gc_vcenter_free(vc);
 *
 * Errors (messages name the vCenter by name and address, never a password
 * or the session cookie):
 *   GC_ENET, GC_ETIMEOUT  transport (gc/https.h); safe to retry
 *   GC_EHOSTKEY           the certificate is not trusted (no ca_file for a
 *                         private CA, or a wrong one)
 *   GC_EAUTH              login refused (InvalidLogin), session gone
 *                         (NotAuthenticated), or HTTP 401
 *   GC_EREMOTE            any other SOAP fault: vCenter's own faultstring
 *   GC_EINVAL             bad options, password env var unset, unreadable file,
 *                         or a reply that is not the SOAP we asked for
 *
 * Threads: every call on a connection may be made from several threads at
 * once, except gc_vcenter_connect() and gc_vcenter_free().  A mutex in the
 * connection is held around each HTTP exchange (one kept-alive TLS
 * connection, shared), never while a task is waited for, so the task waits
 * of different threads interleave.  Inventories are plain data: read them
 * from any thread, free each once.
 */
#ifndef GC_VCENTER_H
#define GC_VCENTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/arena.h"
#include "gc/error.h"
#include "gc/https.h"

struct gc_vcenter; /* the spec's vCenter (gc/spec.h) */
struct gc_credential;

struct gc_vcenter_opts {
	const char *url;      /* "https://vc[:port]" */
	const char *name;     /* for messages; NULL: "vCenter" */
	const char *username; /* required */
	/* The password, named not passed: environment variable or file (one
	 * trailing newline stripped); read at connect time, zeroed after use. */
	const char *password_env;
	const char *password_file;
	const char *ca_file;  /* NULL: the system store */
	bool insecure;        /* only when the spec says insecure: true */
	unsigned connect_timeout_ms; /* 0: 10 s */
	unsigned timeout_ms;         /* each SOAP call; 0: 120 s */
	size_t max_response;         /* 0: GC_HTTPS_RESPONSE_MAX */
};

/* Options for the spec's vCenter and its credentials (borrowed pointers). */
void gc_vcenter_opts_from_spec(struct gc_vcenter_opts *out, const struct gc_vcenter *vc,
			       const struct gc_credential *cred);

struct gc_vcenter_conn;

/* RetrieveServiceContent + Login.  On failure nothing stays open. */
int gc_vcenter_connect(struct gc_vcenter_conn **out, const struct gc_vcenter_opts *opts,
		       struct gc_error *err);
/* Logout (when logged in), then close.  Accepts NULL. */
void gc_vcenter_free(struct gc_vcenter_conn *vc);
/* Logout now; the connection stays open but every later call fails with
 * GC_EAUTH.  Returns 0 when it was not logged in. */
int gc_vcenter_logout(struct gc_vcenter_conn *vc, struct gc_error *err);
/* "vCenter (https://host:port)", for messages.  Borrowed. */
const char *gc_vcenter_target(const struct gc_vcenter_conn *vc);
/* about.apiVersion and about.fullName of the server.  Borrowed. */
const char *gc_vcenter_api_version(const struct gc_vcenter_conn *vc);
const char *gc_vcenter_full_name(const struct gc_vcenter_conn *vc);

/* ---------------------------------------------------------------- observation */

struct gc_vcenter_option {
	const char *key;
	const char *value; /* "" for a value that is not a string */
};

/* One entry of config.hardware.device.  Strings are NULL when absent. */
struct gc_vcenter_device {
	int key;
	const char *type;         /* xsi:type: "VirtualPCIPassthrough", "VirtualE1000", ... */
	const char *label;        /* deviceInfo.label */
	const char *summary;      /* deviceInfo.summary */
	const char *backing_type; /* xsi:type of backing */
	int controller_key;       /* -1 when absent */
	int unit_number;          /* -1 when absent */
	/* VirtualPCIPassthroughDeviceBackingInfo */
	const char *pci_id;       /* backing.id, "0000:3b:00.0" */
	const char *device_id;    /* backing.deviceId (hex string) */
	const char *system_id;
	int vendor_id;            /* backing.vendorId, signed decimal; 0 when absent */
	/* VirtualPCIPassthroughVmiopBackingInfo */
	const char *vgpu;         /* "grid_t4-16c" */
	/* VirtualPCIPassthroughDynamicBackingInfo: the first allowedDevice; 0 when absent */
	int allowed_vendor_id, allowed_device_id;
	/* VirtualVmxnet3Vrdma */
	const char *device_protocol; /* "rocev2" */
	/* VirtualSriovEthernetCard: sriovBacking.physicalFunctionBacking.id */
	const char *sriov_pf;
	/* ethernet backings */
	const char *portgroup_key; /* backing.port.portgroupKey (distributed) */
	const char *network;       /* backing.deviceName (standard port group) */
	const char *mac_address;
};

struct gc_vcenter_vm {
	const char *moref;       /* "vm-57" */
	const char *name;
	const char *host_moref;  /* runtime.host, "host-21"; NULL when absent */
	const char *host_name;   /* that host's name; NULL when not in the reply */
	const char *power_state; /* "poweredOn" | "poweredOff" | "suspended"; NULL when absent */
	const char *firmware;    /* "bios" | "efi"; NULL when absent */
	/* config.memoryReservationLockedToMax; vCenter omits it when unset */
	bool reservation_locked;
	bool reservation_locked_set;
	struct gc_vcenter_option *extra_config;
	size_t nextra_config;
	struct gc_vcenter_device *devices;
	size_t ndevices;
	int num_cpus;              /* config.hardware.numCPU; 0 when absent */
	int memory_mb;             /* config.hardware.memoryMB; 0 when absent */
	bool is_template;          /* config.template */
	const char *resource_pool; /* resourcePool moref; NULL for a template */
};

/* One entry of HostSystem config.pciPassthruInfo. */
struct gc_vcenter_passthru {
	const char *id; /* "0000:3b:00.0" */
	bool enabled;   /* configured for passthrough */
	bool capable;
	bool active;    /* enabled and in effect (no reboot owed) */
};

/* One entry of HostSystem config.network.vnic (a VMkernel adapter). */
struct gc_vcenter_vnic {
	const char *device;        /* "vmk1" */
	const char *portgroup;     /* a standard port group's name ("" on a distributed port) */
	const char *switch_uuid;   /* spec.distributedVirtualPort.switchUuid, or NULL */
	const char *portgroup_key; /* spec.distributedVirtualPort.portgroupKey, or NULL */
	bool dhcp;                 /* spec.ip.dhcp */
	const char *ip, *mask;     /* spec.ip.ipAddress, subnetMask (NULL when absent) */
};

struct gc_vcenter_host {
	const char *moref; /* "host-21" */
	const char *name;
	const char *network_system;  /* configManager.networkSystem moref */
	struct gc_vcenter_vnic *vnics; /* config.network.vnic */
	size_t nvnics;
	struct gc_vcenter_passthru *passthru; /* config.pciPassthruInfo */
	size_t npassthru;
	const char **vgpu_types;              /* config.sharedPassthruGpuTypes */
	size_t nvgpu_types;
	const char *parent;       /* its ComputeResource / ClusterComputeResource moref */
	bool maintenance;         /* runtime.inMaintenanceMode */
	struct gc_vcenter_pci_device *pci;    /* hardware.pciDevice */
	size_t npci;
	/* what an ESXi 6.x host's passthrough and NTP are set through
	 * (hostchanges.c): configManager.pciPassthruSystem, .dateTimeSystem,
	 * .serviceSystem (NULL when vCenter names none) */
	const char *passthru_system, *datetime_system, *service_system;
	const char *ntp_servers; /* config.dateTimeInfo.ntpConfig.server, ","-joined; NULL: not read */
	bool ntpd_running;       /* config.service: the service keyed "ntpd" */
	const char *ntpd_policy; /* its policy ("on", "off", "automatic"); NULL: no ntpd */
};

/* One entry of HostSystem hardware.pciDevice. */
struct gc_vcenter_pci_device {
	const char *id;          /* "0000:3b:00.0" */
	int vendor_id;           /* as vCenter sends it (xsd:short, signed): 0x10de is 4318 */
	int device_id;           /* as sent (signed short); a backing wants (uint16_t) in hex */
	const char *device_name; /* "GV100GL [Tesla V100 PCIe 32GB]" */
};

struct gc_vcenter_datacenter {
	const char *moref, *name;
	const char *vm_folder, *host_folder, *network_folder, *datastore_folder;
};

/* A ComputeResource or ClusterComputeResource. */
struct gc_vcenter_compute {
	const char *moref, *name;
	const char *type;                /* "ClusterComputeResource" | "ComputeResource" */
	const char *resource_pool;       /* its root resource pool */
	const char *environment_browser; /* for QueryConfigTarget */
};

struct gc_vcenter_datastore {
	const char *moref, *name;
};

/* A standard network (Network) or a distributed port group. */
struct gc_vcenter_network {
	const char *moref, *name;
	const char *type;         /* "Network" | "DistributedVirtualPortgroup" | ... */
	const char *portgroup_key; /* DVPG: config.key */
	const char *dvs;          /* DVPG: config.distributedVirtualSwitch moref */
	int vlan;                 /* DVPG: defaultPortConfig.vlan.vlanId; -1 when not a single id */
	const char *config_version; /* DVPG: config.configVersion */
};

struct gc_vcenter_dvs_member {
	const char *host;   /* host moref (config.host[].config.host) */
	const char **pnics; /* config.backing.pnicSpec[].pnicDevice, "vmnic5" */
	size_t npnics;
};

struct gc_vcenter_dvs {
	const char *moref, *name;
	const char *uuid;           /* the switch uuid a port backing names */
	int max_mtu;                /* config.maxMtu; 0 when absent */
	const char *config_version; /* config.configVersion */
	struct gc_vcenter_dvs_member *members; /* config.host */
	size_t nmembers;
};

/* One vCenter advanced setting, as QueryOptions answers it. */
struct gc_vcenter_setting {
	const char *key;   /* "vgpu.hotmigrate.enabled" */
	const char *value; /* the text vCenter sent: "true", "False", "300" */
	const char *type;  /* its xsi:type without the prefix: "boolean", "string", "int" */
};

/* Everything one observation read; one arena owns it all. */
struct gc_vcenter_inventory {
	struct gc_arena arena;
	struct gc_vcenter_vm *vms;       /* in the order vCenter returned them */
	size_t nvms;
	struct gc_vcenter_host *hosts;
	size_t nhosts;
	struct gc_vcenter_datacenter *datacenters;
	size_t ndatacenters;
	struct gc_vcenter_compute *computes;
	size_t ncomputes;
	struct gc_vcenter_datastore *datastores;
	size_t ndatastores;
	struct gc_vcenter_network *networks; /* standard networks and DV port groups */
	size_t nnetworks;
	struct gc_vcenter_dvs *dvs;
	size_t ndvs;
	unsigned round_trips;            /* RetrievePropertiesEx + ContinueRetrievePropertiesEx */
	/* advanced settings read by gc_vcenter_query_settings(); one vCenter
	 * does not have is not here */
	struct gc_vcenter_setting *settings;
	size_t nsettings;
	/* sorted views for the lookups below (gc_vcenter_inventory_index());
	 * NULL: the lookups scan */
	const size_t *vm_by_name, *host_by_name, *host_by_moref;
};

/*
 * Read every VM of every datacenter (name, config.hardware.device,
 * config.extraConfig, config.firmware, config.memoryReservationLockedToMax,
 * config.hardware.numCPU/memoryMB, config.template, resourcePool,
 * runtime.powerState, runtime.host), every host (name, PCI passthrough
 * state, offered vGPU types, parent, maintenance mode, PCI devices), and
 * the datacenters, compute resources, datastores, networks, DV port groups
 * and distributed switches, with one RetrievePropertiesEx from the root
 * folder that asks for pages of at most 500 objects (RetrieveOptions
 * maxObjects) and one ContinueRetrievePropertiesEx per further page; each
 * page is read into the inventory and freed before the next is asked for.
 * An unset property is left NULL/0.  A property vCenter could not
 * read (a missingSet in the reply) fails the whole observation, naming the
 * object, the property and the fault: GC_EAUTH for NotAuthenticated, else
 * GC_EREMOTE.  Leaving the VM out would make it look absent.  A page that
 * fails (fault, lost connection) fails it too; *out is set only on success.
 */
int gc_vcenter_observe(struct gc_vcenter_inventory **out, struct gc_vcenter_conn *vc,
		       struct gc_error *err);
void gc_vcenter_inventory_free(struct gc_vcenter_inventory *inv);
/*
 * Sort views of the VMs (by name) and hosts (by name, by moref) into the
 * arena, so that the lookups by VM name, host name and host moref cost
 * log n instead of n: a spec of 10,000 VMs asks for each of them several
 * times.  gc_vcenter_observe() does this; call it on an inventory built by
 * hand once its arrays are final (again after changing them).  The first
 * match in array order is still the one found.
 */
void gc_vcenter_inventory_index(struct gc_vcenter_inventory *inv);
/* The first VM or template named so, or NULL. */
const struct gc_vcenter_vm *gc_vcenter_inventory_vm(const struct gc_vcenter_inventory *inv,
						    const char *name);
/* The first VM named so that is not a template, or NULL. */
const struct gc_vcenter_vm *gc_vcenter_inventory_vm_not_template(
	const struct gc_vcenter_inventory *inv, const char *name);
const struct gc_vcenter_host *gc_vcenter_inventory_host(const struct gc_vcenter_inventory *inv,
							const char *name);
/* The host's passthrough entry for PCI id, or NULL. */
const struct gc_vcenter_passthru *gc_vcenter_host_passthru(const struct gc_vcenter_host *h,
							   const char *pci_id);
/* True when the host offers vGPU type `profile` ("grid_t4-16c"). */
bool gc_vcenter_host_offers_vgpu(const struct gc_vcenter_host *h, const char *profile);
/* Lookups by name (the first match) or moref; NULL when absent. */
const struct gc_vcenter_datacenter *gc_vcenter_inventory_datacenter(
	const struct gc_vcenter_inventory *inv, const char *name);
const struct gc_vcenter_compute *gc_vcenter_inventory_compute(
	const struct gc_vcenter_inventory *inv, const char *moref);
const struct gc_vcenter_datastore *gc_vcenter_inventory_datastore(
	const struct gc_vcenter_inventory *inv, const char *name);
const struct gc_vcenter_network *gc_vcenter_inventory_network(
	const struct gc_vcenter_inventory *inv, const char *name);
const struct gc_vcenter_dvs *gc_vcenter_inventory_dvs(const struct gc_vcenter_inventory *inv,
						      const char *name);
const struct gc_vcenter_host *gc_vcenter_inventory_host_moref(
	const struct gc_vcenter_inventory *inv, const char *moref);
const struct gc_vcenter_pci_device *gc_vcenter_host_pci(const struct gc_vcenter_host *h,
							const char *pci_id);
/*
 * Read the advanced settings keys[0..n) (at most 64) into inv->settings,
 * one QueryOptions each on the service content's `setting` manager.  A key
 * vCenter answers with InvalidName (it has no such setting: an older
 * release) is left out; any other fault fails with vCenter's message.
 */
int gc_vcenter_query_settings(struct gc_vcenter_inventory *inv, struct gc_vcenter_conn *vc,
			      const char *const *keys, size_t n, struct gc_error *err);
/* The setting read for key, or NULL. */
const struct gc_vcenter_setting *gc_vcenter_inventory_setting(const struct gc_vcenter_inventory *inv,
							      const char *key);
/* UpdateOptions: key = value, typed `type` ("boolean": value true|false;
 * "string" or NULL: a label), as the setting was read.  GC_EINVAL for
 * anything else, GC_EREMOTE with vCenter's fault. */
int gc_vcenter_update_setting(struct gc_vcenter_conn *vc, const char *key, const char *value,
			      const char *type, struct gc_error *err);

/* The value of extraConfig key (the last entry for it), or NULL. */
const char *gc_vcenter_vm_option(const struct gc_vcenter_vm *vm, const char *key);

/* ---------------------------------------------------------------- reconfiguration */

enum gc_vcenter_devop { GC_VCENTER_DEV_ADD, GC_VCENTER_DEV_REMOVE };

enum gc_vcenter_devkind {
	GC_VCENTER_PCI_STATIC,  /* VirtualPCIPassthrough, VirtualPCIPassthroughDeviceBackingInfo */
	GC_VCENTER_PCI_DYNAMIC, /* VirtualPCIPassthrough, ...DynamicBackingInfo (allowedDevice) */
	GC_VCENTER_VGPU,        /* VirtualPCIPassthrough, ...VmiopBackingInfo (vgpu) */
	GC_VCENTER_NIC_VMXNET3, /* VirtualVmxnet3 */
	GC_VCENTER_NIC_SRIOV,   /* VirtualSriovEthernetCard (sriovBacking.physicalFunctionBacking) */
	GC_VCENTER_NIC_PVRDMA,  /* VirtualVmxnet3Vrdma (deviceProtocol) */
};

/*
 * One deviceChange entry.  REMOVE needs only `key` (the existing device's)
 * and `kind` (for the xsi:type).  ADD uses a negative `key` (-100, -101 ...)
 * and the fields of its kind; NULL/0 fields are left out.
 */
struct gc_vcenter_devspec {
	enum gc_vcenter_devop op;
	enum gc_vcenter_devkind kind;
	int key;
	/* PCI_STATIC: the device; NIC_SRIOV: the physical function */
	const char *pci_id;       /* "0000:3b:00.0" */
	const char *device_id;    /* hex string, "1db6" */
	const char *system_id;    /* from QueryConfigTarget */
	int vendor_id;            /* signed decimal, 4318 */
	const char *device_name;  /* deviceName of the backing; "" when unknown */
	/* PCI_DYNAMIC: allowedDevice */
	int allowed_vendor_id, allowed_device_id;
	/* VGPU */
	const char *vgpu;         /* "grid_t4-16c" */
	/* NICs: a standard network (by name and moref) or a DV port group */
	const char *network;      /* VirtualEthernetCardNetworkBackingInfo.deviceName */
	const char *network_moref;
	const char *dvs_uuid, *portgroup_key; /* VirtualEthernetCardDistributedVirtualPortBackingInfo */
	const char *protocol;     /* NIC_PVRDMA: "rocev1" | "rocev2" */
};

/* What one ReconfigVM_Task changes; everything else stays as it is. */
struct gc_vcenter_vm_change {
	int num_cpus;           /* numCPUs; 0: unchanged */
	long memory_mb;         /* memoryMB; 0: unchanged */
	const struct gc_vcenter_devspec *devices; /* deviceChange, in this order */
	size_t ndevices;
	/* Set key=value; an empty value removes the key (vCenter's rule). */
	const struct gc_vcenter_option *extra_config;
	size_t nextra_config;
	const char *firmware;   /* "efi" | "bios"; NULL: unchanged */
	int reservation_locked; /* memoryReservationLockedToMax: -1 unchanged, 0, 1 */
};

/*
 * ReconfigVM_Task on the VM with this moref, then gc_vcenter_task_wait().
 * The spec's elements go out in XSD order (numCPUs, memoryMB,
 * deviceChange..., extraConfig..., firmware, memoryReservationLockedToMax).
 * Every value is checked first: a bad one is GC_EINVAL naming the vCenter,
 * the VM and the field (deviceChange[i]: pci_id ...), and nothing is sent.
 * A refused call or a task that ends in error is GC_EREMOTE with vCenter's
 * own message.
 */
int gc_vcenter_reconfigure(struct gc_vcenter_conn *vc, const char *vm_moref,
			   const struct gc_vcenter_vm_change *change, unsigned timeout_ms,
			   struct gc_error *err);
/*
 * Poll Task.info (state, error) until the task succeeds (0), fails
 * (GC_EREMOTE: "<what>: <localizedMessage> (<fault type>)") or timeout_ms
 * passes (GC_ETIMEOUT; the task may still be running).  Polls start at
 * 50 ms and back off to 1 s.
 */
int gc_vcenter_task_wait(struct gc_vcenter_conn *vc, const char *task, const char *what,
			 unsigned timeout_ms, struct gc_error *err);

/* The same, copying the task's info.result (a moref's id, e.g. the new VM of
 * a clone) into result[0..n) when it succeeds ("" when it has none; a
 * result that does not fit is GC_EREMOTE).  result NULL: not wanted. */
int gc_vcenter_task_wait_result(struct gc_vcenter_conn *vc, const char *task, const char *what,
				unsigned timeout_ms, char *result, size_t n, struct gc_error *err);

/*
 * Wait until no task on the entity type:id (its recentTask) is queued or
 * running, polling as gc_vcenter_task_wait() does: 0 when none is, or
 * GC_ETIMEOUT after timeout_ms.  After a call that starts a task lost its
 * reply (GC_ENET or GC_ETIMEOUT from a `once` request), the task it may
 * have started is unknown: waiting for the entity to be idle lets the next
 * observation see what that task did, instead of sending it again.
 */
int gc_vcenter_wait_idle(struct gc_vcenter_conn *vc, const char *type, const char *id,
			 unsigned timeout_ms, struct gc_error *err);

/* ---------------------------------------------------------------- VM lifecycle (vmops.c) */

/*
 * CloneVM_Task of `from` (a template or VM moref) named `name` into `folder`
 * with location pool / host / datastore (datastore NULL: the source's), not
 * powered on, not a template; waits for the task and copies the new VM's
 * moref into out[0..n).
 */
int gc_vcenter_clone(char *out, size_t n, struct gc_vcenter_conn *vc, const char *from,
		     const char *name, const char *folder, const char *pool, const char *host,
		     const char *datastore, unsigned timeout_ms, struct gc_error *err);
/* PowerOnVM_Task / PowerOffVM_Task (hard off), waited for. */
int gc_vcenter_power_on(struct gc_vcenter_conn *vc, const char *vm, unsigned timeout_ms,
			struct gc_error *err);
int gc_vcenter_power_off(struct gc_vcenter_conn *vc, const char *vm, unsigned timeout_ms,
			 struct gc_error *err);
/* ShutdownGuest (not a task: returns once VMware Tools accepted it).  A VM
 * without running Tools answers with a fault (GC_EREMOTE); so does a VM that
 * is off. */
int gc_vcenter_shutdown_guest(struct gc_vcenter_conn *vc, const char *vm, struct gc_error *err);
/* runtime.powerState of one VM ("poweredOn", ...) into out[0..n). */
int gc_vcenter_power_state(struct gc_vcenter_conn *vc, const char *vm, char *out, size_t n,
			   struct gc_error *err);
/* RelocateVM_Task onto host (and pool when non-NULL): vMotion. */
int gc_vcenter_relocate(struct gc_vcenter_conn *vc, const char *vm, const char *host,
			const char *pool, unsigned timeout_ms, struct gc_error *err);

/* One entry of ConfigTarget.pciPassthrough or ConfigTarget.sriov. */
struct gc_vcenter_pci_target {
	char id[32];           /* pciDevice.id */
	int vendor_id, device_id; /* pciDevice.vendorId / deviceId as sent */
	char device_name[128]; /* pciDevice.deviceName */
	char system_id[128];
	bool sriov;            /* from ConfigTarget.sriov (a physical function) */
};
/*
 * QueryConfigTarget on an EnvironmentBrowser for one host: the PCI devices
 * the host offers for passthrough and its SR-IOV physical functions, with
 * the systemId a static backing needs.  *out is gc_xmalloc'd (caller frees;
 * NULL when *nout is 0).  Entries whose id is not a PCI address and SR-IOV
 * virtual functions are left out; more than 4,096 entries is GC_EREMOTE.
 */
int gc_vcenter_query_pci(struct gc_vcenter_pci_target **out, size_t *nout,
			 struct gc_vcenter_conn *vc, const char *environment_browser,
			 const char *host, struct gc_error *err);

/* ---------------------------------------------------------------- distributed switches (dvs.c) */

struct gc_vcenter_dvs_uplink {
	const char *host;         /* host moref */
	const char *const *pnics; /* "vmnic4", "vmnic5": every uplink of the host's proxy switch */
	size_t npnics;
	bool edit;                /* a member already: its uplinks become pnics ("edit") */
};

/*
 * CreateDVS_Task in a network folder: a VMwareDVSConfigSpec with name and
 * maxMtu (0: vCenter's default; at most 9000); waits, copies the new
 * switch's moref into out[0..n).  The calls below name the switch as a
 * VmwareDistributedVirtualSwitch, vCenter's type for it.
 */
int gc_vcenter_create_dvs(char *out, size_t n, struct gc_vcenter_conn *vc, const char *folder,
			  const char *name, int mtu, unsigned timeout_ms, struct gc_error *err);
/* ReconfigureDvs_Task: configVersion (NULL: not sent), maxMtu (0:
 * unchanged) and host members to add (or, with .edit, to give another
 * uplink) with their uplink pnic (NULL: none). */
int gc_vcenter_reconfigure_dvs(struct gc_vcenter_conn *vc, const char *dvs,
			       const char *config_version, int mtu,
			       const struct gc_vcenter_dvs_uplink *add, size_t nadd,
			       unsigned timeout_ms, struct gc_error *err);
/* AddDVPortgroup_Task: one early-binding port group (8 ports, autoExpand)
 * with this VLAN id (0: none; at most 4094).  vCenter returns no moref:
 * find the group by name in the next observation. */
int gc_vcenter_add_portgroup(struct gc_vcenter_conn *vc, const char *dvs, const char *name,
			     int vlan, unsigned timeout_ms, struct gc_error *err);
/* ReconfigureDVPortgroup_Task: set the VLAN id (config_version NULL: not sent). */
int gc_vcenter_portgroup_vlan(struct gc_vcenter_conn *vc, const char *portgroup,
			      const char *config_version, int vlan, unsigned timeout_ms,
			      struct gc_error *err);

/* ---------------------------------------------------------------- VMkernel adapters (vmknic.c) */

/* A VMkernel adapter on a distributed port, with a static IPv4 address. */
struct gc_vcenter_vnic_spec {
	const char *switch_uuid;   /* the switch's uuid as vCenter holds it */
	const char *portgroup_key; /* "dvportgroup-12" */
	const char *ip;            /* "192.168.10.21" */
	unsigned prefix;           /* 1-32: sent as subnetMask 255.255.255.0 */
};

/* HostNetworkSystem.AddVirtualNic(portgroup "", nic): the device vCenter
 * gave the adapter ("vmk1") into out[0..n). */
int gc_vcenter_add_vnic(char *out, size_t n, struct gc_vcenter_conn *vc, const char *network_system,
			const struct gc_vcenter_vnic_spec *spec, struct gc_error *err);
/* HostNetworkSystem.UpdateVirtualNic(device, nic): address and port. */
int gc_vcenter_update_vnic(struct gc_vcenter_conn *vc, const char *network_system,
			   const char *device, const struct gc_vcenter_vnic_spec *spec,
			   struct gc_error *err);

/* ---------------------------------------------------------------- REST session */

/*
 * Open a REST (vSphere Automation) session beside the SOAP one: POST
 * /api/session with HTTP Basic credentials (the password read again from
 * opts), falling back to /rest/com/vmware/cis/session when /api answers 404.
 * 401 is GC_EAUTH naming the vCenter and the user.  The session id is kept
 * in the connection only, sent as `vmware-api-session-id`, never in errors;
 * gc_vcenter_free() logs it out too.
 */
int gc_vcenter_rest_login(struct gc_vcenter_conn *vc, const struct gc_vcenter_opts *opts,
			  struct gc_error *err);
/* One REST request with the session header ("GET", "/api/vcenter/vm").
 * Same rules as gc_https_request(): 401 is GC_EAUTH. */
int gc_vcenter_rest(struct gc_vcenter_conn *vc, const char *method, const char *path,
		    struct gc_https_response *resp, struct gc_error *err);
/* DELETE the session; 0 when there was none. */
int gc_vcenter_rest_logout(struct gc_vcenter_conn *vc, struct gc_error *err);
/* "/api" or "/rest" while a REST session is open, else NULL. */
const char *gc_vcenter_rest_flavour(const struct gc_vcenter_conn *vc);

/* ---------------------------------------------------------------- counters */

/* SOAP calls of method (e.g. "RetrievePropertiesEx") sent on this connection. */
uint64_t gc_vcenter_calls(const struct gc_vcenter_conn *vc, const char *method);
/* The transport's counters of this connection. */
void gc_vcenter_https_stats(const struct gc_vcenter_conn *vc, struct gc_https_stats *out);

#endif
