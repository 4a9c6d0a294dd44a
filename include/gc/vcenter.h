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
 * Threads: one connection is used by one thread at a time.
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
};

/* One entry of HostSystem config.pciPassthruInfo. */
struct gc_vcenter_passthru {
	const char *id; /* "0000:3b:00.0" */
	bool enabled;   /* configured for passthrough */
	bool capable;
	bool active;    /* enabled and in effect (no reboot owed) */
};

struct gc_vcenter_host {
	const char *moref; /* "host-21" */
	const char *name;
	struct gc_vcenter_passthru *passthru; /* config.pciPassthruInfo */
	size_t npassthru;
	const char **vgpu_types;              /* config.sharedPassthruGpuTypes */
	size_t nvgpu_types;
};

/* Everything one observation read; one arena owns it all. */
struct gc_vcenter_inventory {
	struct gc_arena arena;
	struct gc_vcenter_vm *vms;       /* in the order vCenter returned them */
	size_t nvms;
	struct gc_vcenter_host *hosts;
	size_t nhosts;
	unsigned round_trips;            /* RetrievePropertiesEx + ContinueRetrievePropertiesEx */
};

/*
 * Read every VM of every datacenter (name, config.hardware.device,
 * config.extraConfig, config.firmware, config.memoryReservationLockedToMax,
 * runtime.powerState, runtime.host) and every host's name, PCI passthrough
 * state and offered vGPU types in one RetrievePropertiesEx from the root
 * folder (more round trips only when
 * vCenter pages the result with a token).  A property vCenter could not
 * read (a missingSet in the reply) fails the whole observation, naming the
 * object, the property and the fault: GC_EAUTH for NotAuthenticated, else
 * GC_EREMOTE.  Leaving the VM out would make it look absent.
 */
int gc_vcenter_observe(struct gc_vcenter_inventory **out, struct gc_vcenter_conn *vc,
		       struct gc_error *err);
void gc_vcenter_inventory_free(struct gc_vcenter_inventory *inv);
const struct gc_vcenter_vm *gc_vcenter_inventory_vm(const struct gc_vcenter_inventory *inv,
						    const char *name);
const struct gc_vcenter_host *gc_vcenter_inventory_host(const struct gc_vcenter_inventory *inv,
							const char *name);
/* The host's passthrough entry for PCI id, or NULL. */
const struct gc_vcenter_passthru *gc_vcenter_host_passthru(const struct gc_vcenter_host *h,
							   const char *pci_id);
/* True when the host offers vGPU type `profile` ("grid_t4-16c"). */
bool gc_vcenter_host_offers_vgpu(const struct gc_vcenter_host *h, const char *profile);
/* The value of extraConfig key (the last entry for it), or NULL. */
const char *gc_vcenter_vm_option(const struct gc_vcenter_vm *vm, const char *key);

/* ---------------------------------------------------------------- reconfiguration */

/* What one ReconfigVM_Task changes; everything else stays as it is. */
struct gc_vcenter_vm_change {
	/* Set key=value; an empty value removes the key (vCenter's rule). */
	const struct gc_vcenter_option *extra_config;
	size_t nextra_config;
	const char *firmware;   /* "efi" | "bios"; NULL: unchanged */
	int reservation_locked; /* memoryReservationLockedToMax: -1 unchanged, 0, 1 */
};

/*
 * ReconfigVM_Task on the VM with this moref, then gc_vcenter_task_wait().
 * The spec's elements go out in XSD order (extraConfig, firmware,
 * memoryReservationLockedToMax).  A refused call or a task that ends in
 * error is GC_EREMOTE with vCenter's own message.
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
