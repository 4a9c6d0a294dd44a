/*
 * soap.h - private to src/drivers/vcenter: the SOAP envelope writer, one SOAP
 * call over the connection's HTTPS handle, and libxml2 helpers for replies.
 */
#ifndef GC_VCENTER_SOAP_H
#define GC_VCENTER_SOAP_H

#include <libxml/tree.h>
#include <stdbool.h>
#include <stdint.h>

#include "gc/https.h"
#include "gc/util.h"
#include "gc/vcenter.h"

#define GC_VCENTER_METHODS_MAX 32
#define GC_VCENTER_SECRET_MAX 1024

struct gc_vcenter_conn {
	struct gc_https *https;
	char target[600];
	char api_version[32];      /* validated: digits and dots */
	char full_name[256];
	char session_manager[128]; /* managed object ids from the service content */
	char property_collector[128];
	char root_folder[128];
	bool logged_in;
	char last_fault[512];      /* "faultstring (FaultType)" of the last fault */
	char rest_base[8];         /* "/api" | "/rest" | "" (no REST session) */
	char rest_token[256];      /* the REST session id: a secret, zeroed at logout */
	struct {
		char method[48];
		uint64_t n;
	} calls[GC_VCENTER_METHODS_MAX];
};

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

/* The ReconfigVM_Task body up to (not including) gc_vcenter_soap_end(). */
void gc_vcenter_reconfig_body(struct gc_vcenter_soap *s, const char *vm_moref,
			      const struct gc_vcenter_vm_change *change);

/*
 * POST the finished body to /sdk and parse the answer.  On success *doc is
 * the reply (caller frees with xmlFreeDoc) and *ret its <METHODResponse>
 * element.  A SOAP fault becomes GC_EAUTH (InvalidLogin, NotAuthenticated)
 * or GC_EREMOTE with vCenter's faultstring.
 */
int gc_vcenter_soap_call(struct gc_vcenter_conn *vc, const struct gc_vcenter_soap *s,
			 xmlDocPtr *doc, xmlNodePtr *ret, struct gc_error *err);

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

#endif
