/*
 * soap.h - private to src/drivers/vcenter: the SOAP envelope writer, one SOAP
 * call over the connection's HTTPS handle, libxml2 helpers for replies, the
 * task call shared by every *_Task method, and the observation's reply
 * reader (exposed for fuzz/fuzz_vcenter_observe.c and the tests).
 */
#ifndef GC_VCENTER_SOAP_H
#define GC_VCENTER_SOAP_H

#include <libxml/tree.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gc/https.h"
#include "gc/util.h"
#include "gc/vcenter.h"

#define GC_VCENTER_METHODS_MAX 32
#define GC_VCENTER_SECRET_MAX 1024

/*
 * One connection, shared by threads: `lock` is held around each HTTP
 * exchange (the one libcurl handle and its cookie jar) and around every
 * field marked (L).  Everything else is written once at connect time.
 */
struct gc_vcenter_conn {
	pthread_mutex_t lock;
	struct gc_https *https;    /* (L) */
	char target[600];
	char api_version[32];      /* validated: digits and dots */
	char full_name[256];
	char session_manager[128]; /* managed object ids from the service content */
	char property_collector[128];
	char root_folder[128];
	char setting[128];         /* the OptionManager of advanced settings; "" when none */
	char custom_fields[128];   /* the CustomFieldsManager (cluster lease); "" when none */
	bool logged_in;            /* (L) */
	char last_fault[512];      /* (L) "faultstring (FaultType)" of the last fault */
	char rest_base[8];         /* (L) "/api" | "/rest" | "" (no REST session) */
	char rest_token[256];      /* (L) the REST session id: a secret, zeroed at logout */
	struct {                   /* (L) */
		char method[48];
		uint64_t n;
	} calls[GC_VCENTER_METHODS_MAX];
};

/* Take and release vc->lock (const: the counters' readers lock too). */
void gc_vcenter_lock(const struct gc_vcenter_conn *vc);
void gc_vcenter_unlock(const struct gc_vcenter_conn *vc);

/* The password named by o (env or file), into out[GC_VCENTER_SECRET_MAX]. */
int gc_vcenter_read_password(char *out, const struct gc_vcenter_opts *o, const char *target,
			     struct gc_error *err);

/*
 * A request body under construction:
 *   <soapenv:Envelope ...><soapenv:Body><METHOD xmlns="urn:vim25">
 *   <_this type="TYPE">ID</_this> ... </METHOD></soapenv:Body></soapenv:Envelope>
 * Children are written in the order of the calls, which must be the XSD
 * order (REAL-FORMATS D).  Text is escaped strictly; text that XML 1.0
 * cannot carry (control characters) marks the body bad.
 */
struct gc_vcenter_soap {
	struct gc_buf b;
	const char *method;
	bool bad;
};

void gc_vcenter_soap_begin(struct gc_vcenter_soap *s, const char *method, const char *this_type,
			   const char *this_id);
/* <name>text</name> */
void gc_vcenter_soap_elem(struct gc_vcenter_soap *s, const char *name, const char *text);
/* Escaped text inside the element opened last. */
void gc_vcenter_soap_text(struct gc_vcenter_soap *s, const char *text);
/* <name> or <name xsi:type="TYPE"> (xsi_type NULL: none), then </name> */
void gc_vcenter_soap_open(struct gc_vcenter_soap *s, const char *name, const char *xsi_type);
void gc_vcenter_soap_close(struct gc_vcenter_soap *s, const char *name);
/* <name type="TYPE">ID</name>: a ManagedObjectReference */
void gc_vcenter_soap_moref(struct gc_vcenter_soap *s, const char *name, const char *type,
			   const char *id);
/* Close the method, body and envelope.  Returns GC_EINVAL when a text was bad. */
int gc_vcenter_soap_end(struct gc_vcenter_soap *s, const struct gc_vcenter_conn *vc,
			struct gc_error *err);
/* Zero (the Login body holds a password) and free. */
void gc_vcenter_soap_free(struct gc_vcenter_soap *s);

/* The ReconfigVM_Task body up to (not including) gc_vcenter_soap_end().
 * The change must have passed gc_vcenter_check_change(). */
void gc_vcenter_reconfig_body(struct gc_vcenter_soap *s, const char *vm_moref,
			      const struct gc_vcenter_vm_change *change);
/* The bodies of vmops.c and dvs.c, likewise (the tests compare them whole). */
void gc_vcenter_clone_body(struct gc_vcenter_soap *s, const char *from, const char *name,
			   const char *folder, const char *pool, const char *host,
			   const char *datastore);
void gc_vcenter_relocate_body(struct gc_vcenter_soap *s, const char *vm, const char *host,
			      const char *pool);
void gc_vcenter_create_dvs_body(struct gc_vcenter_soap *s, const char *folder, const char *name,
				int mtu);
void gc_vcenter_reconfigure_dvs_body(struct gc_vcenter_soap *s, const char *dvs,
				     const char *config_version, int mtu,
				     const struct gc_vcenter_dvs_uplink *add, size_t nadd);
void gc_vcenter_add_portgroup_body(struct gc_vcenter_soap *s, const char *dvs, const char *name,
				   int vlan);
void gc_vcenter_portgroup_vlan_body(struct gc_vcenter_soap *s, const char *portgroup,
				    const char *config_version, int vlan);
/* hostconfig.c: an ESXi 6.x host's passthrough and NTP (values checked by the caller). */
void gc_vcenter_update_passthru_body(struct gc_vcenter_soap *s, const char *system,
				     const char *pci, bool enabled);
void gc_vcenter_update_datetime_body(struct gc_vcenter_soap *s, const char *system,
				     const char *const *servers, size_t n);
/* StartService / RestartService (policy NULL) or UpdateServicePolicy of service id. */
void gc_vcenter_service_body(struct gc_vcenter_soap *s, const char *method, const char *system,
			     const char *id, const char *policy);
/* vmknic.c: HostNetworkSystem.AddVirtualNic (portgroup "") and
 * UpdateVirtualNic bodies of an adapter on a distributed port. */
void gc_vcenter_add_vnic_body(struct gc_vcenter_soap *s, const char *network_system,
			      const struct gc_vcenter_vnic_spec *spec);
void gc_vcenter_update_vnic_body(struct gc_vcenter_soap *s, const char *network_system,
				 const char *device, const struct gc_vcenter_vnic_spec *spec);
/* GC_EINVAL naming the vCenter, the VM and the field of the first bad value. */
int gc_vcenter_check_change(const struct gc_vcenter_conn *vc, const char *vm_moref,
			    const struct gc_vcenter_vm_change *change, struct gc_error *err);

/*
 * POST the finished body to /sdk and parse the answer.  On success *doc is
 * the reply (caller frees with xmlFreeDoc) and *ret its <METHODResponse>
 * element.  A SOAP fault becomes GC_EAUTH (InvalidLogin, NotAuthenticated)
 * or GC_EREMOTE with vCenter's faultstring.
 */
int gc_vcenter_soap_call(struct gc_vcenter_conn *vc, const struct gc_vcenter_soap *s,
			 xmlDocPtr *doc, xmlNodePtr *ret, struct gc_error *err);
/* The same, with a fault's "faultstring (FaultType)" in fault[0..n) ("" when
 * the call failed otherwise or not at all), for callers that tell faults apart. */
int gc_vcenter_soap_call_fault(struct gc_vcenter_conn *vc, const struct gc_vcenter_soap *s,
			       xmlDocPtr *doc, xmlNodePtr *ret, char *fault, size_t n,
			       struct gc_error *err);
/*
 * The reply half of gc_vcenter_soap_call(), on bytes: HTTP status and body
 * of a call of `method` -> *doc / *ret as above.  On a SOAP fault, fault[]
 * (when non-NULL) gets "faultstring (FaultType)".  Touches no connection.
 */
int gc_vcenter_soap_parse(const char *target, const char *method, long status, const char *body,
			  size_t len, xmlDocPtr *doc, xmlNodePtr *ret, char *fault, size_t nfault,
			  struct gc_error *err);
/* End, call, free the body (always) and drop the reply: for methods whose
 * answer carries nothing we read. */
int gc_vcenter_soap_run(struct gc_vcenter_conn *vc, struct gc_vcenter_soap *s,
			struct gc_error *err);
/*
 * End and send a body whose reply is a Task moref (freeing the body either
 * way), then wait for the task.  Errors read "<method> of <object> (<task>):
 * ..."; result (NULL: not wanted) gets info.result as in
 * gc_vcenter_task_wait_result().
 */
int gc_vcenter_run_task(struct gc_vcenter_conn *vc, struct gc_vcenter_soap *s, const char *object,
			unsigned timeout_ms, char *result, size_t n, struct gc_error *err);
/* "x" -> <name type="TYPE">x</name> when x is non-NULL (optional morefs). */
void gc_vcenter_soap_moref_opt(struct gc_vcenter_soap *s, const char *name, const char *type,
			       const char *id);
/* <name>%d</name> */
void gc_vcenter_soap_int(struct gc_vcenter_soap *s, const char *name, long v);

/* First element child of parent with this local name, or NULL; the next
 * element sibling of node with the same name. */
xmlNodePtr gc_vcenter_xml_child(xmlNodePtr parent, const char *name);
xmlNodePtr gc_vcenter_xml_next(xmlNodePtr node, const char *name);
/* xsi:type of node, or NULL.  Borrowed until the document is freed (copied
 * into buf, at most n bytes). */
const char *gc_vcenter_xml_type(xmlNodePtr node, char *buf, size_t n);
/* Text of node (or of its child `name` when name is non-NULL) copied into
 * the arena; NULL when the node is absent. */
const char *gc_vcenter_xml_text(struct gc_arena *a, xmlNodePtr node, const char *name);
/* Text copied into buf (truncated to n-1); "" when absent. */
void gc_vcenter_xml_copy(char *buf, size_t n, xmlNodePtr node, const char *name);
/* Decimal int of node's text (or of its child `name`); dflt when absent, empty,
 * not a number or out of int range. */
int gc_vcenter_xml_int(xmlNodePtr node, const char *name, int dflt);

/* ---------------------------------------------------------------- observation replies */

/* An inventory being filled page by page (inventory.c). */
struct gc_vcenter_collect {
	struct gc_vcenter_inventory *inv;
	const char *target; /* for messages */
	size_t vm_cap, host_cap, dc_cap, cr_cap, ds_cap, net_cap, dvs_cap;
};

void gc_vcenter_collect_init(struct gc_vcenter_collect *c, const char *target);
/* Read one RetrieveResult (NULL: an empty result); token[0..n) gets the next
 * page's token or "".  A missingSet on any object we read fails. */
int gc_vcenter_collect_page(struct gc_vcenter_collect *c, xmlNodePtr result, char *token,
			    size_t n, struct gc_error *err);
/* Link VMs to host names; *out takes the inventory. */
void gc_vcenter_collect_finish(struct gc_vcenter_collect *c, struct gc_vcenter_inventory **out);
/* Free a half-built inventory. */
void gc_vcenter_collect_abort(struct gc_vcenter_collect *c);
/*
 * Objects asked for per page of the observation (RetrieveOptions.maxObjects):
 * about 3.5 MB of reply for vcsim's VMs of 13 devices, its libxml2 tree a few
 * times that, well under the HTTPS layer's 64 MiB cap even for VMs with ten
 * times the devices; 81 round trips for 40,000 VMs (docs/benchmarks.md).
 */
#define GC_VCENTER_PAGE_OBJECTS 500
/* gc_vcenter_observe() with pages of at most max_objects objects; 0 sends no
 * maxObjects (one reply, unless vCenter's own policy pages it).  For tests
 * and the bench, which compare paged with unpaged. */
int gc_vcenter_observe_paged(struct gc_vcenter_inventory **out, struct gc_vcenter_conn *vc,
			     int max_objects, struct gc_error *err);
/*
 * One whole RetrievePropertiesEx reply (HTTP 200 body) -> a new inventory,
 * through the same code as gc_vcenter_observe(): gc_vcenter_soap_parse(),
 * then gc_vcenter_collect_page() and _finish().  A token in the reply is
 * ignored (there is no next page to fetch).  Messages name "vCenter".
 */
int gc_vcenter_observe_parse(struct gc_vcenter_inventory **out, const char *xml, size_t len,
			     struct gc_error *err);

/* options.c: the QueryOptions and UpdateOptions bodies (up to, not
 * including, gc_vcenter_soap_end()), and the QueryOptionsResponse entry for
 * key -> *out in the arena (1), or 0 when the reply has none. */
void gc_vcenter_query_options_body(struct gc_vcenter_soap *s, const char *manager, const char *key);
void gc_vcenter_update_options_body(struct gc_vcenter_soap *s, const char *manager, const char *key,
				    const char *value, const char *type);
int gc_vcenter_options_parse(struct gc_vcenter_setting *out, struct gc_arena *a, xmlNodePtr ret,
			     const char *key);

/* QueryConfigTargetResponse -> PCI passthrough and SR-IOV entries (vmops.c). */
int gc_vcenter_pci_targets(struct gc_vcenter_pci_target **out, size_t *nout, xmlNodePtr ret,
			   const char *target, struct gc_error *err);

#endif
