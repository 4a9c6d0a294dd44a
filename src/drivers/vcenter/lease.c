/*
 * lease.c - the cluster lease on the vCenter cluster (src/exec/lease.c says
 * what a lease holds and when it is taken, renewed and cleared).
 *
 * vCenter gives us one operation that is a real compare-and-set:
 * CustomFieldsManager.AddCustomFieldDef fails with DuplicateName when a
 * field definition of that name and managed object type exists.  The lease
 * therefore lives on the spec's vCenter cluster (its datacenter when the
 * spec names no cluster), as two things:
 *
 *   - a custom field definition named "gpuclusterctl.lease.<cluster>" for
 *     that entity's type (ClusterComputeResource or Datacenter): it exists
 *     exactly while someone holds the lease (taken with AddCustomFieldDef,
 *     dropped with RemoveCustomFieldDef);
 *   - its value on the entity (SetField), the lease string itself, read
 *     back from the entity's `customValue`.
 *
 * Two applies that both found no lease race on AddCustomFieldDef, and one
 * of them gets DuplicateName and is refused before anything changes.  A
 * lease that is ours (a dead run of this state directory) or expired is
 * taken over by SetField on the existing definition; two takeovers of the
 * same expired lease are not told apart (rare: a lease lives six hours).
 * A definition with no value on the cluster is another apply between its
 * AddCustomFieldDef and its SetField (or one that died there): it reads as
 * a lease with no holder, refused like any other until `unlock --force`.
 *
 * Calls and element order from the vSphere API reference (CustomFieldsManager:
 * AddCustomFieldDef(name, moType), SetField(entity, key, value),
 * RemoveCustomFieldDef(key); CustomFieldDef.key/name/managedObjectType;
 * CustomFieldStringValue key/value under ManagedEntity.customValue).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gc/spec.h"
#include "gc/sys/driver.h"
#include "gc/vcenter.h"
#include "soap.h"
#include "vcdrv.h"

#define LEASE_FIELD "gpuclusterctl.lease."
#define LEASE_NO_HOLDER "holder=an apply still taking it"

/* What holds the lease: the spec's vCenter cluster, or its datacenter when
 * the spec names no cluster. */
struct lease_entity {
	const char *type; /* "ClusterComputeResource" | "Datacenter" */
	const char *moref, *name;
};

struct lease_seen {
	const char *motype; /* the entity's type, which the definition must name */
	char key[32];   /* the definition's key; "" when there is none */
	char *value;    /* its value on the cluster; NULL when unset */
};

/* What a lease string may hold (src/exec/lease.c writes only these). */
static bool valid_lease(const char *v)
{
	return strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._:;=+-") ==
	       strlen(v);
}

/* A lease whose expires= time has passed (its holder stopped renewing). */
static bool expired(const char *v)
{
	const char *e = v ? strstr(v, "expires=") : NULL;

	return e != NULL && strtoll(e + 8, NULL, 10) <= (long long)time(NULL);
}

static int find_entity(struct lease_entity *e, const struct vc_conn *c)
{
	const struct gc_vcenter_inventory *inv = c->inv;
	const struct gc_vcenter *v = c->c->vcenter;

	e->type = v->cluster ? "ClusterComputeResource" : "Datacenter";
	e->name = v->cluster ? v->cluster : v->datacenter;
	e->moref = NULL;
	for (size_t i = 0; inv != NULL && v->cluster != NULL && i < inv->ncomputes; i++)
		if (strcmp(inv->computes[i].name, v->cluster) == 0)
			e->moref = inv->computes[i].moref;
	for (size_t i = 0; inv != NULL && v->cluster == NULL && i < inv->ndatacenters; i++)
		if (strcmp(inv->datacenters[i].name, v->datacenter) == 0)
			e->moref = inv->datacenters[i].moref;
	return e->moref != NULL ? 0 : -1;
}

static void field_name(char *out, size_t n, const struct lease_entity *e)
{
	snprintf(out, n, LEASE_FIELD "%s", e->name);
}

static bool fault_is(const char *fault, const char *type)
{
	char tail[64];
	size_t n = strlen(fault), m;

	m = (size_t)snprintf(tail, sizeof(tail), "(%s)", type);
	return n >= m && strcmp(fault + n - m, tail) == 0;
}

/* Walk the elements under each `val` of property `prop` in the reply. */
static void each_value(xmlNodePtr ret, const char *prop, struct gc_arena *a,
		       void (*fn)(xmlNodePtr e, struct gc_arena *a, struct lease_seen *out,
				  const char *name),
		       struct lease_seen *out, const char *name)
{
	for (xmlNodePtr o = gc_vcenter_xml_child(gc_vcenter_xml_child(ret, "returnval"), "objects");
	     o != NULL;
	     o = gc_vcenter_xml_next(o, "objects"))
		for (xmlNodePtr p = gc_vcenter_xml_child(o, "propSet"); p != NULL;
		     p = gc_vcenter_xml_next(p, "propSet")) {
			const char *pn = gc_vcenter_xml_text(a, p, "name");
			xmlNodePtr val = gc_vcenter_xml_child(p, "val");

			if (pn == NULL || strcmp(pn, prop) != 0 || val == NULL)
				continue;
			for (xmlNodePtr e = val->children; e != NULL; e = e->next)
				if (e->type == XML_ELEMENT_NODE)
					fn(e, a, out, name);
		}
}

/* A CustomFieldDef: ours has our name and is for the entity's type. */
static void match_def(xmlNodePtr e, struct gc_arena *a, struct lease_seen *out, const char *name)
{
	const char *k = gc_vcenter_xml_text(a, e, "key"), *n = gc_vcenter_xml_text(a, e, "name");
	const char *t = gc_vcenter_xml_text(a, e, "managedObjectType");

	if (k && n && t && strcmp(n, name) == 0 && strcmp(t, out->motype) == 0)
		snprintf(out->key, sizeof(out->key), "%s", k);
}

/* A CustomFieldStringValue of the cluster. */
static void match_value(xmlNodePtr e, struct gc_arena *a, struct lease_seen *out,
			const char *name)
{
	const char *k = gc_vcenter_xml_text(a, e, "key"), *v = gc_vcenter_xml_text(a, e, "value");

	(void)name;
	if (out->key[0] && k && v && v[0] && strcmp(k, out->key) == 0) {
		free(out->value);
		out->value = gc_xstrdup(v);
	}
}

/* The definition's key among the manager's `field`, then the cluster's
 * value of that key (the reply may list the two objects in any order). */
static void parse_seen(struct lease_seen *out, xmlNodePtr ret, const char *name)
{
	struct gc_arena a = GC_ARENA_INIT;

	each_value(ret, "field", &a, match_def, out, name);
	each_value(ret, "customValue", &a, match_value, out, name);
	gc_arena_free(&a);
}

static void obj_spec(struct gc_vcenter_soap *s, const char *type, const char *id, const char *path)
{
	gc_vcenter_soap_open(s, "propSet", NULL);
	gc_vcenter_soap_elem(s, "type", type);
	gc_vcenter_soap_elem(s, "pathSet", path);
	gc_vcenter_soap_close(s, "propSet");
	gc_vcenter_soap_open(s, "objectSet", NULL);
	gc_vcenter_soap_moref(s, "obj", type, id);
	gc_vcenter_soap_close(s, "objectSet");
}

static int read_seen(struct vc_conn *c, const struct lease_entity *e, struct lease_seen *out,
		     struct gc_error *err)
{
	struct gc_vcenter_conn *vc = c->vc;
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	char name[300];
	int rc;

	memset(out, 0, sizeof(*out));
	out->motype = e->type;
	field_name(name, sizeof(name), e);
	gc_vcenter_soap_begin(&s, "RetrievePropertiesEx", "PropertyCollector", vc->property_collector);
	/* the field definitions first: the cluster's values are matched by key */
	gc_vcenter_soap_open(&s, "specSet", NULL);
	obj_spec(&s, "CustomFieldsManager", vc->custom_fields, "field");
	gc_vcenter_soap_close(&s, "specSet");
	gc_vcenter_soap_open(&s, "specSet", NULL);
	obj_spec(&s, e->type, e->moref, "customValue");
	gc_vcenter_soap_close(&s, "specSet");
	gc_vcenter_soap_open(&s, "options", NULL);
	gc_vcenter_soap_close(&s, "options");
	rc = gc_vcenter_soap_end(&s, vc, err);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, &s, &doc, &ret, err);
	gc_vcenter_soap_free(&s);
	if (rc == 0)
		parse_seen(out, ret, name);
	xmlFreeDoc(doc);
	return rc;
}

static int lease_ready(struct vc_conn *c, struct lease_entity *e, struct gc_error *err)
{
	if (c->vc->custom_fields[0] == '\0')
		return gc_error_set(err, GC_EREMOTE, "%s: the service content names no "
						     "CustomFieldsManager: no cluster lease possible",
				    c->t->name);
	if (find_entity(e, c) != 0)
		return gc_error_set(err, GC_EREMOTE, "%s: %s '%s' not found for the cluster lease",
				    c->t->name, e->type, e->name);
	return 0;
}

int gc_vcdrv_lease_get(void *conn, struct gc_drv_ctx *ctx, char **out, struct gc_error *err)
{
	struct vc_conn *c = conn;
	struct lease_seen seen;
	struct lease_entity e;
	int rc;

	(void)ctx;
	rc = lease_ready(c, &e, err);
	if (rc == 0)
		rc = read_seen(c, &e, &seen, err);
	if (rc != 0)
		return rc;
	if (seen.key[0] == '\0')
		*out = gc_xstrdup("");
	else
		*out = seen.value ? seen.value : gc_xstrdup(LEASE_NO_HOLDER);
	return 0;
}

/* Send a call whose only interesting answer is its fault (if any). */
static int call_fault(struct vc_conn *c, struct gc_vcenter_soap *s, char *fault, size_t n,
		      xmlDocPtr *doc, xmlNodePtr *ret, struct gc_error *err)
{
	int rc = gc_vcenter_soap_end(s, c->vc, err);

	fault[0] = '\0';
	if (rc == 0)
		rc = gc_vcenter_soap_call_fault(c->vc, s, doc, ret, fault, n, err);
	gc_vcenter_soap_free(s);
	return rc;
}

static int set_field(struct vc_conn *c, const struct lease_entity *e, const char *key,
		     const char *value, struct gc_error *err)
{
	struct gc_vcenter_soap s;

	gc_vcenter_soap_begin(&s, "SetField", "CustomFieldsManager", c->vc->custom_fields);
	gc_vcenter_soap_moref(&s, "entity", e->type, e->moref);
	gc_vcenter_soap_elem(&s, "key", key);
	gc_vcenter_soap_elem(&s, "value", value);
	return gc_vcenter_soap_run(c->vc, &s, err);
}

/* AddCustomFieldDef: 0 and key set when we made it, 1 when it existed. */
static int add_def(struct vc_conn *c, const struct lease_entity *e, char *key, size_t nkey,
		   struct gc_error *err)
{
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	char name[300], fault[512];
	int rc;

	field_name(name, sizeof(name), e);
	gc_vcenter_soap_begin(&s, "AddCustomFieldDef", "CustomFieldsManager", c->vc->custom_fields);
	gc_vcenter_soap_elem(&s, "name", name);
	gc_vcenter_soap_elem(&s, "moType", e->type);
	rc = call_fault(c, &s, fault, sizeof(fault), &doc, &ret, err);
	if (rc != 0 && fault_is(fault, "DuplicateName")) {
		gc_error_clear(err);
		rc = 1;
	} else if (rc == 0) {
		gc_vcenter_xml_copy(key, nkey, gc_vcenter_xml_child(ret, "returnval"), "key");
		if (key[0] == '\0')
			rc = gc_error_set(err, GC_EREMOTE, "%s: AddCustomFieldDef answered no key",
					  c->t->name);
	}
	xmlFreeDoc(doc);
	return rc;
}

static int remove_def(struct vc_conn *c, const char *key, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	char fault[512];
	int rc;

	gc_vcenter_soap_begin(&s, "RemoveCustomFieldDef", "CustomFieldsManager", c->vc->custom_fields);
	gc_vcenter_soap_elem(&s, "key", key);
	rc = call_fault(c, &s, fault, sizeof(fault), &doc, &ret, err);
	if (rc != 0 && fault_is(fault, "NotFound")) {
		gc_error_clear(err); /* gone already */
		rc = 0;
	}
	xmlFreeDoc(doc);
	return rc;
}

/* The definition existed when we went to make it: a takeover of our own or
 * an expired lease (its value says so), else someone took it just now. */
static int take_existing(struct vc_conn *c, const struct lease_entity *e, const char *value,
			 struct gc_error *err)
{
	struct lease_seen seen;
	char ours[80];
	const char *lock = strstr(value, "lock=");
	int rc = read_seen(c, e, &seen, err);

	if (rc != 0)
		return rc;
	snprintf(ours, sizeof(ours), "%.*s", (int)(lock ? strcspn(lock, ";") : 0), lock ? lock : "");
	if (seen.key[0] != '\0' &&
	    (seen.value == NULL || ours[0] == '\0' || strstr(seen.value, ours) == NULL) &&
	    !expired(seen.value)) {
		rc = gc_error_set(err, GC_ELOCKED,
				  "%s '%s' was locked on vCenter '%s' by another apply at the same "
				  "moment (%s); nothing was changed. If that apply is dead: "
				  "gpuclusterctl unlock --force SPEC",
				  e->type, e->name, c->t->name,
				  seen.value ? seen.value : "it has not written its holder yet");
	} else if (seen.key[0] == '\0') {
		rc = gc_error_set(err, GC_ELOCKED, "%s '%s': the lease on vCenter '%s' changed "
						   "while it was taken; nothing was changed, run again",
				  e->type, e->name, c->t->name);
	} else {
		rc = set_field(c, e, seen.key, value, err);
	}
	free(seen.value);
	return rc;
}

int gc_vcdrv_lease_set(void *conn, struct gc_drv_ctx *ctx, const char *value, struct gc_error *err)
{
	struct vc_conn *c = conn;
	struct lease_seen seen;
	struct lease_entity e;
	char key[32];
	int rc;

	(void)ctx;
	rc = lease_ready(c, &e, err);
	if (rc != 0)
		return rc;
	if (!valid_lease(value))
		return gc_error_set(err, GC_EINVAL, "%s: bad lease value", c->t->name);
	if (value[0] == '\0') { /* clear: drop the definition, whoever made it */
		rc = read_seen(c, &e, &seen, err);
		if (rc == 0 && seen.key[0] != '\0')
			rc = remove_def(c, seen.key, err);
		free(seen.value);
		return rc;
	}
	rc = add_def(c, &e, key, sizeof(key), err);
	if (rc == 1)
		return take_existing(c, &e, value, err);
	if (rc == 0)
		rc = set_field(c, &e, key, value, err);
	return rc;
}
