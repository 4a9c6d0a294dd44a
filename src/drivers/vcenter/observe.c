/*
 * observe.c - every VM and host of a vCenter in one PropertyCollector call.
 *
 * One RetrievePropertiesEx starts at the root folder and walks the inventory
 * with traversal specs (folder -> child entities, datacenter -> vm and host
 * folders, compute resource -> hosts, vApp -> VMs), asking for the VM
 * properties the planner compares and, for every host, its name, its PCI
 * passthrough state and the vGPU types it offers.  No view objects
 * are created, so nothing needs destroying and the cost is one round trip
 * however many VMs there are.  When vCenter pages a large result it returns
 * a token, and ContinueRetrievePropertiesEx fetches the rest.
 *
 * The reply is read with libxml2: each <objects> holds <obj type=...>id and
 * <propSet><name/><val xsi:type=.../></propSet> pairs.  Strings are copied
 * into the inventory's arena; VMs and hosts go into arrays that double.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "soap.h"

#define PAGES_MAX 10000 /* ContinueRetrievePropertiesEx rounds before we give up */

static const char *const vm_props[] = {
	"name",
	"config.hardware.device",
	"config.extraConfig",
	"config.firmware",
	"config.memoryReservationLockedToMax",
	"runtime.powerState",
	"runtime.host",
};

static const char *const host_props[] = {
	"name",
	"config.pciPassthruInfo",
	"config.sharedPassthruGpuTypes",
};

/* A traversal spec: from objects of `type` follow `path`, then the named specs. */
static void traversal(struct gc_vcenter_soap *s, const char *name, const char *type,
		      const char *path, const char *const *next)
{
	gc_vcenter_soap_open(s, "selectSet", "TraversalSpec");
	gc_vcenter_soap_elem(s, "name", name);
	gc_vcenter_soap_elem(s, "type", type);
	gc_vcenter_soap_elem(s, "path", path);
	gc_vcenter_soap_elem(s, "skip", "false");
	for (size_t i = 0; next != NULL && next[i] != NULL; i++) {
		gc_vcenter_soap_open(s, "selectSet", NULL);
		gc_vcenter_soap_elem(s, "name", next[i]);
		gc_vcenter_soap_close(s, "selectSet");
	}
	gc_vcenter_soap_close(s, "selectSet");
}

/* PropertyFilterSpec: propSet*, objectSet* (XSD order). */
static void write_spec(struct gc_vcenter_soap *s, const char *root)
{
	static const char *const from_folder[] = {"folder", "dcVm", "dcHost", "crHost", "vApp",
						  NULL};
	static const char *const to_folder[] = {"folder", NULL};

	gc_vcenter_soap_open(s, "specSet", NULL);
	gc_vcenter_soap_open(s, "propSet", NULL);
	gc_vcenter_soap_elem(s, "type", "VirtualMachine");
	gc_vcenter_soap_elem(s, "all", "false");
	for (size_t i = 0; i < GC_ARRAY_LEN(vm_props); i++)
		gc_vcenter_soap_elem(s, "pathSet", vm_props[i]);
	gc_vcenter_soap_close(s, "propSet");
	gc_vcenter_soap_open(s, "propSet", NULL);
	gc_vcenter_soap_elem(s, "type", "HostSystem");
	gc_vcenter_soap_elem(s, "all", "false");
	for (size_t i = 0; i < GC_ARRAY_LEN(host_props); i++)
		gc_vcenter_soap_elem(s, "pathSet", host_props[i]);
	gc_vcenter_soap_close(s, "propSet");
	gc_vcenter_soap_open(s, "objectSet", NULL);
	gc_vcenter_soap_moref(s, "obj", "Folder", root);
	gc_vcenter_soap_elem(s, "skip", "true");
	traversal(s, "folder", "Folder", "childEntity", from_folder);
	traversal(s, "dcVm", "Datacenter", "vmFolder", to_folder);
	traversal(s, "dcHost", "Datacenter", "hostFolder", to_folder);
	traversal(s, "crHost", "ComputeResource", "host", NULL);
	traversal(s, "vApp", "VirtualApp", "vm", NULL);
	gc_vcenter_soap_close(s, "objectSet");
	gc_vcenter_soap_close(s, "specSet");
}

/* ---------------------------------------------------------------- reading values */

static int to_int(struct gc_arena *a, xmlNodePtr n, const char *name, int dflt)
{
	const char *t = gc_vcenter_xml_text(a, n, name);
	char *end;
	long v;

	if (t == NULL || *t == '\0')
		return dflt;
	errno = 0;
	v = strtol(t, &end, 10);
	if (errno != 0 || *end != '\0' || v < -2147483647L - 1 || v > 2147483647L)
		return dflt;
	return (int)v;
}

static const char *type_of(struct gc_arena *a, xmlNodePtr n)
{
	char buf[128];
	const char *t = gc_vcenter_xml_type(n, buf, sizeof(buf));

	return t ? gc_arena_strdup(a, t) : NULL;
}

static size_t count_elements(xmlNodePtr parent)
{
	size_t n = 0;

	for (xmlNodePtr c = parent ? parent->children : NULL; c != NULL; c = c->next)
		n += c->type == XML_ELEMENT_NODE;
	return n;
}

static void read_device(struct gc_arena *a, struct gc_vcenter_device *d, xmlNodePtr n)
{
	xmlNodePtr info = gc_vcenter_xml_child(n, "deviceInfo");
	xmlNodePtr back = gc_vcenter_xml_child(n, "backing");
	xmlNodePtr sriov = gc_vcenter_xml_child(n, "sriovBacking");

	d->type = type_of(a, n);
	d->key = to_int(a, n, "key", 0);
	d->label = gc_vcenter_xml_text(a, info, "label");
	d->summary = gc_vcenter_xml_text(a, info, "summary");
	d->controller_key = to_int(a, n, "controllerKey", -1);
	d->unit_number = to_int(a, n, "unitNumber", -1);
	d->mac_address = gc_vcenter_xml_text(a, n, "macAddress");
	d->device_protocol = gc_vcenter_xml_text(a, n, "deviceProtocol");
	d->sriov_pf = gc_vcenter_xml_text(
		a, gc_vcenter_xml_child(sriov, "physicalFunctionBacking"), "id");
	if (back == NULL)
		return;
	d->backing_type = type_of(a, back);
	d->pci_id = gc_vcenter_xml_text(a, back, "id");
	d->device_id = gc_vcenter_xml_text(a, back, "deviceId");
	d->system_id = gc_vcenter_xml_text(a, back, "systemId");
	d->vendor_id = to_int(a, back, "vendorId", 0);
	d->vgpu = gc_vcenter_xml_text(a, back, "vgpu");
	d->portgroup_key = gc_vcenter_xml_text(a, gc_vcenter_xml_child(back, "port"),
					       "portgroupKey");
	if (d->backing_type != NULL &&
	    strcmp(d->backing_type, "VirtualEthernetCardNetworkBackingInfo") == 0)
		d->network = gc_vcenter_xml_text(a, back, "deviceName");
}

static void read_devices(struct gc_arena *a, struct gc_vcenter_vm *vm, xmlNodePtr val)
{
	size_t n = count_elements(val), i = 0;

	vm->devices = gc_arena_alloc(a, (n ? n : 1) * sizeof(*vm->devices));
	for (xmlNodePtr c = val->children; c != NULL; c = c->next)
		if (c->type == XML_ELEMENT_NODE)
			read_device(a, &vm->devices[i++], c);
	vm->ndevices = i;
}

static void read_options(struct gc_arena *a, struct gc_vcenter_vm *vm, xmlNodePtr val)
{
	size_t n = count_elements(val), i = 0;

	vm->extra_config = gc_arena_alloc(a, (n ? n : 1) * sizeof(*vm->extra_config));
	for (xmlNodePtr c = val->children; c != NULL; c = c->next) {
		struct gc_vcenter_option *o = &vm->extra_config[i];

		if (c->type != XML_ELEMENT_NODE)
			continue;
		o->key = gc_vcenter_xml_text(a, c, "key");
		o->value = gc_vcenter_xml_text(a, c, "value");
		if (o->key == NULL)
			continue;
		if (o->value == NULL)
			o->value = "";
		i++;
	}
	vm->nextra_config = i;
}

static void read_vm_prop(struct gc_arena *a, struct gc_vcenter_vm *vm, const char *name,
			 xmlNodePtr val)
{
	if (strcmp(name, "name") == 0) {
		vm->name = gc_vcenter_xml_text(a, val, NULL);
	} else if (strcmp(name, "config.hardware.device") == 0) {
		read_devices(a, vm, val);
	} else if (strcmp(name, "config.extraConfig") == 0) {
		read_options(a, vm, val);
	} else if (strcmp(name, "config.firmware") == 0) {
		vm->firmware = gc_vcenter_xml_text(a, val, NULL);
	} else if (strcmp(name, "config.memoryReservationLockedToMax") == 0) {
		vm->reservation_locked = strcmp(gc_vcenter_xml_text(a, val, NULL), "true") == 0;
		vm->reservation_locked_set = true;
	} else if (strcmp(name, "runtime.powerState") == 0) {
		vm->power_state = gc_vcenter_xml_text(a, val, NULL);
	} else if (strcmp(name, "runtime.host") == 0) {
		vm->host_moref = gc_vcenter_xml_text(a, val, NULL);
	}
}

/* ---------------------------------------------------------------- one page */

struct collect {
	struct gc_vcenter_inventory *inv;
	const char *target;
	size_t vm_cap, host_cap;
};

/*
 * A property vCenter could not read is never skipped: a VM left out of the
 * inventory would look absent to the planner.  NotAuthenticated here (vcsim
 * reports an expired session this way) is GC_EAUTH.
 */
static int missing(struct collect *c, xmlNodePtr obj, xmlNodePtr ms, struct gc_error *err)
{
	char id[128], path[128], tbuf[96];
	const char *type;

	gc_vcenter_xml_copy(id, sizeof(id), obj, "obj");
	gc_vcenter_xml_copy(path, sizeof(path), ms, "path");
	type = gc_vcenter_xml_type(gc_vcenter_xml_child(gc_vcenter_xml_child(ms, "fault"), "fault"),
				   tbuf, sizeof(tbuf));
	type = type ? type : "no fault type";
	return gc_error_set(err, strcmp(type, "NotAuthenticated") == 0 ? GC_EAUTH : GC_EREMOTE,
			    "%s: RetrievePropertiesEx: cannot read %s of %s (%s)", c->target, path,
			    id, type);
}

static int add_vm(struct collect *c, xmlNodePtr obj, struct gc_error *err)
{
	struct gc_vcenter_inventory *inv = c->inv;
	struct gc_arena *a = &inv->arena;
	struct gc_vcenter_vm vm = {0};
	xmlNodePtr ms = gc_vcenter_xml_child(obj, "missingSet");
	char name[128];

	if (ms != NULL)
		return missing(c, obj, ms, err);

	for (xmlNodePtr p = gc_vcenter_xml_child(obj, "propSet"); p != NULL;
	     p = gc_vcenter_xml_next(p, "propSet")) {
		xmlNodePtr val = gc_vcenter_xml_child(p, "val");

		gc_vcenter_xml_copy(name, sizeof(name), p, "name");
		if (val != NULL)
			read_vm_prop(a, &vm, name, val);
	}
	if (vm.name == NULL)
		return gc_error_set(err, GC_EREMOTE, "%s: RetrievePropertiesEx: a VM without a name",
				    c->target);
	vm.moref = gc_vcenter_xml_text(a, obj, "obj");
	if (inv->nvms == c->vm_cap) {
		c->vm_cap = c->vm_cap ? 2 * c->vm_cap : 64;
		inv->vms = gc_xrealloc(inv->vms, c->vm_cap * sizeof(*inv->vms));
	}
	inv->vms[inv->nvms++] = vm;
	return 0;
}

static bool is_true(struct gc_arena *a, xmlNodePtr n, const char *name)
{
	const char *t = gc_vcenter_xml_text(a, n, name);

	return t != NULL && strcmp(t, "true") == 0;
}

static void read_passthru(struct gc_arena *a, struct gc_vcenter_host *h, xmlNodePtr val)
{
	size_t n = count_elements(val), i = 0;

	h->passthru = gc_arena_alloc(a, (n ? n : 1) * sizeof(*h->passthru));
	for (xmlNodePtr c = val->children; c != NULL; c = c->next) {
		struct gc_vcenter_passthru *p = &h->passthru[i];

		if (c->type != XML_ELEMENT_NODE)
			continue;
		p->id = gc_vcenter_xml_text(a, c, "id");
		if (p->id == NULL)
			continue;
		p->enabled = is_true(a, c, "passthruEnabled");
		p->capable = is_true(a, c, "passthruCapable");
		p->active = is_true(a, c, "passthruActive");
		i++;
	}
	h->npassthru = i;
}

static void read_strings(struct gc_arena *a, const char ***out, size_t *nout, xmlNodePtr val)
{
	size_t n = count_elements(val), i = 0;

	*out = gc_arena_alloc(a, (n ? n : 1) * sizeof(**out));
	for (xmlNodePtr c = val->children; c != NULL; c = c->next)
		if (c->type == XML_ELEMENT_NODE)
			(*out)[i++] = gc_vcenter_xml_text(a, c, NULL);
	*nout = i;
}

static int add_host(struct collect *c, xmlNodePtr obj, struct gc_error *err)
{
	struct gc_vcenter_inventory *inv = c->inv;
	struct gc_vcenter_host h = {0};
	xmlNodePtr ms = gc_vcenter_xml_child(obj, "missingSet");
	char name[64];

	if (ms != NULL)
		return missing(c, obj, ms, err);
	h.moref = gc_vcenter_xml_text(&inv->arena, obj, "obj");
	for (xmlNodePtr p = gc_vcenter_xml_child(obj, "propSet"); p != NULL;
	     p = gc_vcenter_xml_next(p, "propSet")) {
		xmlNodePtr val = gc_vcenter_xml_child(p, "val");

		gc_vcenter_xml_copy(name, sizeof(name), p, "name");
		if (val == NULL)
			continue;
		if (strcmp(name, "name") == 0)
			h.name = gc_vcenter_xml_text(&inv->arena, val, NULL);
		else if (strcmp(name, "config.pciPassthruInfo") == 0)
			read_passthru(&inv->arena, &h, val);
		else if (strcmp(name, "config.sharedPassthruGpuTypes") == 0)
			read_strings(&inv->arena, &h.vgpu_types, &h.nvgpu_types, val);
	}
	if (h.name == NULL)
		return 0;
	if (inv->nhosts == c->host_cap) {
		c->host_cap = c->host_cap ? 2 * c->host_cap : 16;
		inv->hosts = gc_xrealloc(inv->hosts, c->host_cap * sizeof(*inv->hosts));
	}
	inv->hosts[inv->nhosts++] = h;
	return 0;
}

/* Read one RetrieveResult; *token is the next page's token or "". */
static int read_result(struct collect *c, xmlNodePtr result, char *token, size_t n,
		       struct gc_error *err)
{
	char type[64];
	int rc = 0;

	gc_vcenter_xml_copy(token, n, result, "token");
	for (xmlNodePtr o = gc_vcenter_xml_child(result, "objects"); o != NULL && rc == 0;
	     o = gc_vcenter_xml_next(o, "objects")) {
		xmlNodePtr obj = gc_vcenter_xml_child(o, "obj");
		xmlChar *t = obj ? xmlGetNoNsProp(obj, BAD_CAST "type") : NULL;

		snprintf(type, sizeof(type), "%s", t ? (const char *)t : "");
		xmlFree(t);
		if (strcmp(type, "VirtualMachine") == 0)
			rc = add_vm(c, o, err);
		else if (strcmp(type, "HostSystem") == 0)
			rc = add_host(c, o, err);
	}
	return rc;
}

static int page(struct gc_vcenter_conn *vc, struct collect *c, char *token, size_t n,
		struct gc_error *err)
{
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	int rc;

	if (token[0] == '\0') {
		gc_vcenter_soap_begin(&s, "RetrievePropertiesEx", "PropertyCollector",
				      vc->property_collector);
		write_spec(&s, vc->root_folder);
		gc_vcenter_soap_open(&s, "options", NULL);
		gc_vcenter_soap_close(&s, "options");
	} else {
		gc_vcenter_soap_begin(&s, "ContinueRetrievePropertiesEx", "PropertyCollector",
				      vc->property_collector);
		gc_vcenter_soap_elem(&s, "token", token);
	}
	rc = gc_vcenter_soap_end(&s, vc, err);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, &s, &doc, &ret, err);
	gc_vcenter_soap_free(&s);
	if (rc < 0)
		return rc;
	c->inv->round_trips++;
	token[0] = '\0';
	/* An empty result has no returnval at all. */
	rc = read_result(c, gc_vcenter_xml_child(ret, "returnval"), token, n, err);
	xmlFreeDoc(doc);
	return rc;
}

static void resolve_hosts(struct gc_vcenter_inventory *inv)
{
	for (size_t i = 0; i < inv->nvms; i++) {
		struct gc_vcenter_vm *vm = &inv->vms[i];

		for (size_t j = 0; vm->host_moref != NULL && j < inv->nhosts; j++)
			if (strcmp(inv->hosts[j].moref, vm->host_moref) == 0)
				vm->host_name = inv->hosts[j].name;
	}
}

int gc_vcenter_observe(struct gc_vcenter_inventory **out, struct gc_vcenter_conn *vc,
		       struct gc_error *err)
{
	struct collect c = {0};
	char token[256] = "";
	int rc = 0;

	c.inv = gc_xcalloc(1, sizeof(*c.inv));
	c.target = vc->target;
	for (unsigned i = 0; rc == 0 && (i == 0 || token[0] != '\0'); i++) {
		if (i == PAGES_MAX) {
			rc = gc_error_set(err, GC_EREMOTE, "%s: more than %d result pages",
					  vc->target, PAGES_MAX);
			break;
		}
		rc = page(vc, &c, token, sizeof(token), err);
	}
	if (rc < 0) {
		gc_vcenter_inventory_free(c.inv);
		return rc;
	}
	resolve_hosts(c.inv);
	*out = c.inv;
	return 0;
}

void gc_vcenter_inventory_free(struct gc_vcenter_inventory *inv)
{
	if (inv == NULL)
		return;
	free(inv->vms);
	free(inv->hosts);
	gc_arena_free(&inv->arena);
	free(inv);
}

const struct gc_vcenter_vm *gc_vcenter_inventory_vm(const struct gc_vcenter_inventory *inv,
						    const char *name)
{
	for (size_t i = 0; i < inv->nvms; i++)
		if (strcmp(inv->vms[i].name, name) == 0)
			return &inv->vms[i];
	return NULL;
}

const struct gc_vcenter_host *gc_vcenter_inventory_host(const struct gc_vcenter_inventory *inv,
							const char *name)
{
	for (size_t i = 0; i < inv->nhosts; i++)
		if (strcmp(inv->hosts[i].name, name) == 0)
			return &inv->hosts[i];
	return NULL;
}

const struct gc_vcenter_passthru *gc_vcenter_host_passthru(const struct gc_vcenter_host *h,
							   const char *pci_id)
{
	for (size_t i = 0; i < h->npassthru; i++)
		if (strcmp(h->passthru[i].id, pci_id) == 0)
			return &h->passthru[i];
	return NULL;
}

bool gc_vcenter_host_offers_vgpu(const struct gc_vcenter_host *h, const char *profile)
{
	for (size_t i = 0; i < h->nvgpu_types; i++)
		if (strcmp(h->vgpu_types[i], profile) == 0)
			return true;
	return false;
}

/* The last entry wins: vCenter keeps one per key, vcsim 0.24 appends. */
const char *gc_vcenter_vm_option(const struct gc_vcenter_vm *vm, const char *key)
{
	for (size_t i = vm->nextra_config; i > 0; i--)
		if (strcmp(vm->extra_config[i - 1].key, key) == 0)
			return vm->extra_config[i - 1].value;
	return NULL;
}
