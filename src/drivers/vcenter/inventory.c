/*
 * inventory.c - a RetrievePropertiesEx result read into a gc_vcenter_inventory,
 * and the inventory's lookups.
 *
 * observe.c asks for the properties; this file reads what comes back.  Each
 * <objects> holds <obj type=...>id and <propSet><name/><val xsi:type=.../>
 * pairs, one kind of object per obj type: VMs, hosts, datacenters, compute
 * resources (the obj type tells a cluster from a standalone host's), data
 * stores, networks (standard, opaque and DV port groups) and distributed
 * switches.  An unset property is simply absent from propSet; a missingSet
 * (a property vCenter could not read) fails the whole observation, because
 * an object read in part would look different from what it is.
 *
 * Strings are copied into the inventory's arena, so the libxml2 tree can go
 * as soon as a page is read; the object arrays double (gc_xrealloc).  The
 * same code reads captured replies (gc_vcenter_observe_parse, the fuzz
 * target): everything a reply can grow is bounded by the reply's size, which
 * the HTTPS layer caps.
 */
#include <stdlib.h>
#include <string.h>

#include "soap.h"

/* ---------------------------------------------------------------- small readers */

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

static bool is_true(xmlNodePtr n, const char *name)
{
	char buf[8];

	gc_vcenter_xml_copy(buf, sizeof(buf), n, name);
	return strcmp(buf, "true") == 0;
}

/* Room for one more element in *arr (n used, *cap allocated). */
static void *grow(void *arr, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return arr;
	*cap = *cap ? 2 * *cap : 16;
	return gc_xrealloc(arr, *cap * size);
}

/* The element children of val as arena strings (ArrayOfString, ArrayOfMoref). */
static void read_strings(struct gc_arena *a, const char ***out, size_t *nout, xmlNodePtr val)
{
	size_t n = count_elements(val), i = 0;

	*out = gc_arena_alloc(a, (n ? n : 1) * sizeof(**out));
	for (xmlNodePtr c = val->children; c != NULL; c = c->next)
		if (c->type == XML_ELEMENT_NODE)
			(*out)[i++] = gc_vcenter_xml_text(a, c, NULL);
	*nout = i;
}

/* ---------------------------------------------------------------- VMs */

static void read_device(struct gc_arena *a, struct gc_vcenter_device *d, xmlNodePtr n)
{
	xmlNodePtr info = gc_vcenter_xml_child(n, "deviceInfo");
	xmlNodePtr back = gc_vcenter_xml_child(n, "backing");
	xmlNodePtr sriov = gc_vcenter_xml_child(n, "sriovBacking");
	xmlNodePtr allowed;

	d->type = type_of(a, n);
	d->key = gc_vcenter_xml_int(n, "key", 0);
	d->label = gc_vcenter_xml_text(a, info, "label");
	d->summary = gc_vcenter_xml_text(a, info, "summary");
	d->controller_key = gc_vcenter_xml_int(n, "controllerKey", -1);
	d->unit_number = gc_vcenter_xml_int(n, "unitNumber", -1);
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
	d->vendor_id = gc_vcenter_xml_int(back, "vendorId", 0);
	d->vgpu = gc_vcenter_xml_text(a, back, "vgpu");
	d->portgroup_key = gc_vcenter_xml_text(a, gc_vcenter_xml_child(back, "port"),
					       "portgroupKey");
	allowed = gc_vcenter_xml_child(back, "allowedDevice");
	d->allowed_vendor_id = gc_vcenter_xml_int(allowed, "vendorId", 0);
	d->allowed_device_id = gc_vcenter_xml_int(allowed, "deviceId", 0);
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
		vm->reservation_locked = is_true(val, NULL);
		vm->reservation_locked_set = true;
	} else if (strcmp(name, "config.hardware.numCPU") == 0) {
		vm->num_cpus = gc_vcenter_xml_int(val, NULL, 0);
	} else if (strcmp(name, "config.hardware.memoryMB") == 0) {
		vm->memory_mb = gc_vcenter_xml_int(val, NULL, 0);
	} else if (strcmp(name, "config.template") == 0) {
		vm->is_template = is_true(val, NULL);
	} else if (strcmp(name, "resourcePool") == 0) {
		vm->resource_pool = gc_vcenter_xml_text(a, val, NULL);
	} else if (strcmp(name, "runtime.powerState") == 0) {
		vm->power_state = gc_vcenter_xml_text(a, val, NULL);
	} else if (strcmp(name, "runtime.host") == 0) {
		vm->host_moref = gc_vcenter_xml_text(a, val, NULL);
	}
}

/* ---------------------------------------------------------------- hosts */

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
		p->enabled = is_true(c, "passthruEnabled");
		p->capable = is_true(c, "passthruCapable");
		p->active = is_true(c, "passthruActive");
		i++;
	}
	h->npassthru = i;
}

static void read_pci(struct gc_arena *a, struct gc_vcenter_host *h, xmlNodePtr val)
{
	size_t n = count_elements(val), i = 0;

	h->pci = gc_arena_alloc(a, (n ? n : 1) * sizeof(*h->pci));
	for (xmlNodePtr c = val->children; c != NULL; c = c->next) {
		struct gc_vcenter_pci_device *p = &h->pci[i];

		if (c->type != XML_ELEMENT_NODE)
			continue;
		p->id = gc_vcenter_xml_text(a, c, "id");
		if (p->id == NULL)
			continue;
		p->vendor_id = gc_vcenter_xml_int(c, "vendorId", 0);
		p->device_id = gc_vcenter_xml_int(c, "deviceId", 0);
		p->device_name = gc_vcenter_xml_text(a, c, "deviceName");
		i++;
	}
	h->npci = i;
}

/* HostDateTimeInfo: ntpConfig.server[], joined with "," as the spec's list is. */
static void read_datetime(struct gc_arena *a, struct gc_vcenter_host *h, xmlNodePtr val)
{
	xmlNodePtr ntp = gc_vcenter_xml_child(val, "ntpConfig");
	struct gc_buf b = GC_BUF_INIT;

	for (xmlNodePtr c = gc_vcenter_xml_child(ntp, "server"); c != NULL;
	     c = gc_vcenter_xml_next(c, "server")) {
		const char *t = gc_vcenter_xml_text(a, c, NULL);

		gc_buf_printf(&b, "%s%s", b.len ? "," : "", t ? t : "");
	}
	h->ntp_servers = gc_arena_strdup(a, gc_buf_str(&b));
	gc_buf_free(&b);
}

/* HostServiceInfo: the NTP daemon's entry (key "ntpd"). */
static void read_services(struct gc_arena *a, struct gc_vcenter_host *h, xmlNodePtr val)
{
	for (xmlNodePtr c = gc_vcenter_xml_child(val, "service"); c != NULL;
	     c = gc_vcenter_xml_next(c, "service")) {
		const char *key = gc_vcenter_xml_text(a, c, "key");

		if (key == NULL || strcmp(key, "ntpd") != 0)
			continue;
		h->ntpd_running = is_true(c, "running");
		h->ntpd_policy = gc_vcenter_xml_text(a, c, "policy");
		return;
	}
}

/* ArrayOfHostVirtualNic: device, portgroup, spec{ip, distributedVirtualPort} */
static void read_vnics(struct gc_arena *a, struct gc_vcenter_host *h, xmlNodePtr val)
{
	size_t n = count_elements(val), i = 0;

	h->vnics = gc_arena_alloc(a, (n ? n : 1) * sizeof(*h->vnics));
	for (xmlNodePtr c = val->children; c != NULL; c = c->next) {
		struct gc_vcenter_vnic *v = &h->vnics[i];
		xmlNodePtr spec = gc_vcenter_xml_child(c, "spec");
		xmlNodePtr ip = gc_vcenter_xml_child(spec, "ip");
		xmlNodePtr port = gc_vcenter_xml_child(spec, "distributedVirtualPort");

		if (c->type != XML_ELEMENT_NODE)
			continue;
		v->device = gc_vcenter_xml_text(a, c, "device");
		if (v->device == NULL)
			continue;
		v->portgroup = gc_vcenter_xml_text(a, c, "portgroup");
		v->switch_uuid = gc_vcenter_xml_text(a, port, "switchUuid");
		v->portgroup_key = gc_vcenter_xml_text(a, port, "portgroupKey");
		v->dhcp = is_true(ip, "dhcp");
		v->ip = gc_vcenter_xml_text(a, ip, "ipAddress");
		v->mask = gc_vcenter_xml_text(a, ip, "subnetMask");
		i++;
	}
	h->nvnics = i;
}

static void read_host_prop(struct gc_arena *a, struct gc_vcenter_host *h, const char *name,
			   xmlNodePtr val)
{
	if (strcmp(name, "name") == 0)
		h->name = gc_vcenter_xml_text(a, val, NULL);
	else if (strcmp(name, "config.pciPassthruInfo") == 0)
		read_passthru(a, h, val);
	else if (strcmp(name, "config.sharedPassthruGpuTypes") == 0)
		read_strings(a, &h->vgpu_types, &h->nvgpu_types, val);
	else if (strcmp(name, "parent") == 0)
		h->parent = gc_vcenter_xml_text(a, val, NULL);
	else if (strcmp(name, "runtime.inMaintenanceMode") == 0)
		h->maintenance = is_true(val, NULL);
	else if (strcmp(name, "hardware.pciDevice") == 0)
		read_pci(a, h, val);
	else if (strcmp(name, "configManager.pciPassthruSystem") == 0)
		h->passthru_system = gc_vcenter_xml_text(a, val, NULL);
	else if (strcmp(name, "configManager.dateTimeSystem") == 0)
		h->datetime_system = gc_vcenter_xml_text(a, val, NULL);
	else if (strcmp(name, "configManager.serviceSystem") == 0)
		h->service_system = gc_vcenter_xml_text(a, val, NULL);
	else if (strcmp(name, "config.dateTimeInfo") == 0)
		read_datetime(a, h, val);
	else if (strcmp(name, "config.service") == 0)
		read_services(a, h, val);
	else if (strcmp(name, "config.network.vnic") == 0)
		read_vnics(a, h, val);
	else if (strcmp(name, "configManager.networkSystem") == 0)
		h->network_system = gc_vcenter_xml_text(a, val, NULL);
}

/* ---------------------------------------------------------------- the rest of the inventory */

static void read_dc_prop(struct gc_arena *a, struct gc_vcenter_datacenter *d, const char *name,
			 xmlNodePtr val)
{
	const char *t = gc_vcenter_xml_text(a, val, NULL);

	if (strcmp(name, "name") == 0)
		d->name = t;
	else if (strcmp(name, "vmFolder") == 0)
		d->vm_folder = t;
	else if (strcmp(name, "hostFolder") == 0)
		d->host_folder = t;
	else if (strcmp(name, "networkFolder") == 0)
		d->network_folder = t;
	else if (strcmp(name, "datastoreFolder") == 0)
		d->datastore_folder = t;
}

static void read_cr_prop(struct gc_arena *a, struct gc_vcenter_compute *cr, const char *name,
			 xmlNodePtr val)
{
	const char *t = gc_vcenter_xml_text(a, val, NULL);

	if (strcmp(name, "name") == 0)
		cr->name = t;
	else if (strcmp(name, "resourcePool") == 0)
		cr->resource_pool = t;
	else if (strcmp(name, "environmentBrowser") == 0)
		cr->environment_browser = t;
}

/* defaultPortConfig.vlan: one VLAN id, or -1 (trunk, private VLAN, absent). */
static int read_vlan(xmlNodePtr port_config)
{
	xmlNodePtr vlan = gc_vcenter_xml_child(port_config, "vlan");
	char buf[96];
	const char *t = gc_vcenter_xml_type(vlan, buf, sizeof(buf));

	if (t == NULL || strcmp(t, "VmwareDistributedVirtualSwitchVlanIdSpec") != 0)
		return -1;
	return gc_vcenter_xml_int(vlan, "vlanId", -1);
}

static void read_net_prop(struct gc_arena *a, struct gc_vcenter_network *nw, const char *name,
			  xmlNodePtr val)
{
	if (strcmp(name, "name") == 0)
		nw->name = gc_vcenter_xml_text(a, val, NULL);
	else if (strcmp(name, "config.key") == 0)
		nw->portgroup_key = gc_vcenter_xml_text(a, val, NULL);
	else if (strcmp(name, "config.distributedVirtualSwitch") == 0)
		nw->dvs = gc_vcenter_xml_text(a, val, NULL);
	else if (strcmp(name, "config.defaultPortConfig") == 0)
		nw->vlan = read_vlan(val);
	else if (strcmp(name, "config.configVersion") == 0)
		nw->config_version = gc_vcenter_xml_text(a, val, NULL);
}

/* Append host (no pnics) to s's members unless it is there already; m has room. */
static void add_member(struct gc_vcenter_dvs *s, const char *host)
{
	for (size_t k = 0; k < s->nmembers; k++)
		if (strcmp(s->members[k].host, host) == 0)
			return;
	s->members[s->nmembers].host = host;
	s->members[s->nmembers].pnics = NULL;
	s->members[s->nmembers].npnics = 0;
	s->nmembers++;
}

static void read_pnics(struct gc_arena *a, struct gc_vcenter_dvs_member *mb, xmlNodePtr back)
{
	size_t np = 0, j = 0;

	for (xmlNodePtr p = gc_vcenter_xml_child(back, "pnicSpec"); p != NULL;
	     p = gc_vcenter_xml_next(p, "pnicSpec"))
		np++;
	mb->pnics = gc_arena_alloc(a, (np ? np : 1) * sizeof(*mb->pnics));
	for (xmlNodePtr p = gc_vcenter_xml_child(back, "pnicSpec"); p != NULL;
	     p = gc_vcenter_xml_next(p, "pnicSpec")) {
		const char *dev = gc_vcenter_xml_text(a, p, "pnicDevice");

		if (dev != NULL)
			mb->pnics[j++] = dev;
	}
	mb->npnics = j;
}

/*
 * config.host[]: each member's host and its uplink pnics, first; then the
 * members already read from summary.hostMember that config.host lacks.
 */
static void read_members(struct gc_arena *a, struct gc_vcenter_dvs *s, xmlNodePtr config)
{
	struct gc_vcenter_dvs_member *old = s->members;
	size_t nold = s->nmembers, n = 0;

	for (xmlNodePtr m = gc_vcenter_xml_child(config, "host"); m != NULL;
	     m = gc_vcenter_xml_next(m, "host"))
		n++;
	s->members = gc_arena_alloc(a, (n + nold + 1) * sizeof(*s->members));
	s->nmembers = 0;
	for (xmlNodePtr m = gc_vcenter_xml_child(config, "host"); m != NULL;
	     m = gc_vcenter_xml_next(m, "host")) {
		xmlNodePtr mc = gc_vcenter_xml_child(m, "config");
		const char *host = gc_vcenter_xml_text(a, mc, "host");
		size_t before = s->nmembers;

		if (host == NULL)
			continue;
		add_member(s, host);
		if (s->nmembers > before)
			read_pnics(a, &s->members[before], gc_vcenter_xml_child(mc, "backing"));
	}
	for (size_t k = 0; k < nold; k++)
		add_member(s, old[k].host);
}

/*
 * summary.hostMember: the members again, without their pnics.  vCenter
 * lists the same hosts as config.host; vcsim 0.24 fills only this one, so a
 * host found here alone is added with no pnics.
 */
static void read_host_members(struct gc_arena *a, struct gc_vcenter_dvs *s, xmlNodePtr val)
{
	struct gc_vcenter_dvs_member *old = s->members;
	size_t n = count_elements(val);

	s->members = gc_arena_alloc(a, (s->nmembers + n + 1) * sizeof(*s->members));
	if (s->nmembers > 0)
		memcpy(s->members, old, s->nmembers * sizeof(*old));
	for (xmlNodePtr c = val->children; c != NULL; c = c->next)
		if (c->type == XML_ELEMENT_NODE)
			add_member(s, gc_vcenter_xml_text(a, c, NULL));
}

static void read_dvs_prop(struct gc_arena *a, struct gc_vcenter_dvs *s, const char *name,
			  xmlNodePtr val)
{
	if (strcmp(name, "name") == 0) {
		s->name = gc_vcenter_xml_text(a, val, NULL);
	} else if (strcmp(name, "uuid") == 0) {
		s->uuid = gc_vcenter_xml_text(a, val, NULL);
	} else if (strcmp(name, "config") == 0) {
		const char *uuid = gc_vcenter_xml_text(a, val, "uuid");

		if (s->uuid == NULL)
			s->uuid = uuid;
		s->max_mtu = gc_vcenter_xml_int(val, "maxMtu", 0);
		s->config_version = gc_vcenter_xml_text(a, val, "configVersion");
		read_members(a, s, val);
	} else if (strcmp(name, "summary.hostMember") == 0) {
		read_host_members(a, s, val);
	}
}

/* ---------------------------------------------------------------- one object */

enum kind { K_NONE, K_VM, K_HOST, K_DC, K_CR, K_DS, K_NET, K_DVS };

static enum kind kind_of(const char *type)
{
	static const struct {
		const char *type;
		enum kind k;
	} kinds[] = {
		{"VirtualMachine", K_VM},
		{"HostSystem", K_HOST},
		{"Datacenter", K_DC},
		{"ComputeResource", K_CR},
		{"ClusterComputeResource", K_CR},
		{"Datastore", K_DS},
		{"Network", K_NET},
		{"OpaqueNetwork", K_NET},
		{"DistributedVirtualPortgroup", K_NET},
		{"DistributedVirtualSwitch", K_DVS},
		{"VmwareDistributedVirtualSwitch", K_DVS},
	};

	for (size_t i = 0; i < GC_ARRAY_LEN(kinds); i++)
		if (strcmp(kinds[i].type, type) == 0)
			return kinds[i].k;
	return K_NONE;
}

/*
 * A property vCenter could not read is never skipped: a VM left out of the
 * inventory would look absent to the planner.  NotAuthenticated here (vcsim
 * reports an expired session this way) is GC_EAUTH.
 */
static int missing(struct gc_vcenter_collect *c, xmlNodePtr obj, xmlNodePtr ms,
		   struct gc_error *err)
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

/* The object being read, of whichever kind: one is filled. */
struct object {
	struct gc_vcenter_vm vm;
	struct gc_vcenter_host host;
	struct gc_vcenter_datacenter dc;
	struct gc_vcenter_compute cr;
	struct gc_vcenter_datastore ds;
	struct gc_vcenter_network net;
	struct gc_vcenter_dvs dvs;
};

static void read_prop(struct gc_arena *a, enum kind k, struct object *o, const char *name,
		      xmlNodePtr val)
{
	switch (k) {
	case K_VM: read_vm_prop(a, &o->vm, name, val); break;
	case K_HOST: read_host_prop(a, &o->host, name, val); break;
	case K_DC: read_dc_prop(a, &o->dc, name, val); break;
	case K_CR: read_cr_prop(a, &o->cr, name, val); break;
	case K_DS:
		if (strcmp(name, "name") == 0)
			o->ds.name = gc_vcenter_xml_text(a, val, NULL);
		break;
	case K_NET: read_net_prop(a, &o->net, name, val); break;
	case K_DVS: read_dvs_prop(a, &o->dvs, name, val); break;
	case K_NONE: break;
	}
}

#define APPEND(c, arr, n, cap, v)                                                  \
	do {                                                                       \
		(arr) = grow((arr), (n), &(c)->cap, sizeof(*(arr)));               \
		(arr)[(n)++] = (v);                                                \
	} while (0)

/* Keep what was read; everything but a VM is kept only with a name (every
 * lookup is by name or moref, and vCenter names every entity). */
static int keep(struct gc_vcenter_collect *c, enum kind k, struct object *o,
		struct gc_error *err)
{
	struct gc_vcenter_inventory *inv = c->inv;

	switch (k) {
	case K_VM:
		if (o->vm.name == NULL)
			return gc_error_set(err, GC_EREMOTE,
					    "%s: RetrievePropertiesEx: a VM without a name",
					    c->target);
		APPEND(c, inv->vms, inv->nvms, vm_cap, o->vm);
		break;
	case K_HOST:
		if (o->host.name != NULL)
			APPEND(c, inv->hosts, inv->nhosts, host_cap, o->host);
		break;
	case K_DC:
		if (o->dc.name != NULL)
			APPEND(c, inv->datacenters, inv->ndatacenters, dc_cap, o->dc);
		break;
	case K_CR:
		if (o->cr.name != NULL)
			APPEND(c, inv->computes, inv->ncomputes, cr_cap, o->cr);
		break;
	case K_DS:
		if (o->ds.name != NULL)
			APPEND(c, inv->datastores, inv->ndatastores, ds_cap, o->ds);
		break;
	case K_NET:
		if (o->net.name != NULL)
			APPEND(c, inv->networks, inv->nnetworks, net_cap, o->net);
		break;
	case K_DVS:
		if (o->dvs.name != NULL)
			APPEND(c, inv->dvs, inv->ndvs, dvs_cap, o->dvs);
		break;
	case K_NONE: break;
	}
	return 0;
}

static int read_object(struct gc_vcenter_collect *c, xmlNodePtr objects, struct gc_error *err)
{
	struct gc_arena *a = &c->inv->arena;
	xmlNodePtr obj = gc_vcenter_xml_child(objects, "obj");
	xmlNodePtr ms = gc_vcenter_xml_child(objects, "missingSet");
	xmlChar *t = obj ? xmlGetNoNsProp(obj, BAD_CAST "type") : NULL;
	char type[64], name[128];
	struct object o;
	enum kind k;
	const char *moref, *tcopy;

	snprintf(type, sizeof(type), "%s", t ? (const char *)t : "");
	xmlFree(t);
	k = kind_of(type);
	if (k == K_NONE)
		return 0;
	if (ms != NULL)
		return missing(c, objects, ms, err);
	memset(&o, 0, sizeof(o));
	moref = gc_vcenter_xml_text(a, obj, NULL);
	tcopy = gc_arena_strdup(a, type);
	o.vm.moref = o.host.moref = o.dc.moref = o.cr.moref = moref;
	o.ds.moref = o.net.moref = o.dvs.moref = moref;
	o.cr.type = o.net.type = tcopy;
	o.net.vlan = -1;
	for (xmlNodePtr p = gc_vcenter_xml_child(objects, "propSet"); p != NULL;
	     p = gc_vcenter_xml_next(p, "propSet")) {
		xmlNodePtr val = gc_vcenter_xml_child(p, "val");

		gc_vcenter_xml_copy(name, sizeof(name), p, "name");
		if (val != NULL)
			read_prop(a, k, &o, name, val);
	}
	return keep(c, k, &o, err);
}

/* ---------------------------------------------------------------- pages */

void gc_vcenter_collect_init(struct gc_vcenter_collect *c, const char *target)
{
	memset(c, 0, sizeof(*c));
	c->inv = gc_xcalloc(1, sizeof(*c->inv));
	c->target = target;
}

int gc_vcenter_collect_page(struct gc_vcenter_collect *c, xmlNodePtr result, char *token,
			    size_t n, struct gc_error *err)
{
	int rc = 0;

	gc_vcenter_xml_copy(token, n, result, "token");
	for (xmlNodePtr o = gc_vcenter_xml_child(result, "objects"); o != NULL && rc == 0;
	     o = gc_vcenter_xml_next(o, "objects"))
		rc = read_object(c, o, err);
	return rc;
}

void gc_vcenter_collect_finish(struct gc_vcenter_collect *c, struct gc_vcenter_inventory **out)
{
	struct gc_vcenter_inventory *inv = c->inv;

	gc_vcenter_inventory_index(inv);
	for (size_t i = 0; i < inv->nvms; i++) {
		struct gc_vcenter_vm *vm = &inv->vms[i];
		const struct gc_vcenter_host *h;

		if (vm->host_moref == NULL)
			continue;
		h = gc_vcenter_inventory_host_moref(inv, vm->host_moref);
		if (h != NULL)
			vm->host_name = h->name;
	}
	*out = inv;
	c->inv = NULL; /* now owned by the caller */
}

void gc_vcenter_collect_abort(struct gc_vcenter_collect *c)
{
	gc_vcenter_inventory_free(c->inv);
	c->inv = NULL;
}

int gc_vcenter_observe_parse(struct gc_vcenter_inventory **out, const char *xml, size_t len,
			     struct gc_error *err)
{
	struct gc_vcenter_collect c;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	char token[256];
	int rc;

	rc = gc_vcenter_soap_parse("vCenter", "RetrievePropertiesEx", 200, xml, len, &doc, &ret,
				   NULL, 0, err);
	if (rc < 0)
		return rc;
	gc_vcenter_collect_init(&c, "vCenter");
	rc = gc_vcenter_collect_page(&c, gc_vcenter_xml_child(ret, "returnval"), token,
				     sizeof(token), err);
	xmlFreeDoc(doc);
	if (rc < 0) {
		gc_vcenter_collect_abort(&c);
		return rc;
	}
	gc_vcenter_collect_finish(&c, out);
	return 0;
}

/* ---------------------------------------------------------------- the inventory */

void gc_vcenter_inventory_free(struct gc_vcenter_inventory *inv)
{
	if (inv == NULL)
		return;
	free(inv->vms);
	free(inv->hosts);
	free(inv->datacenters);
	free(inv->computes);
	free(inv->datastores);
	free(inv->networks);
	free(inv->dvs);
	gc_arena_free(&inv->arena);
	free(inv);
}

/* ---------------------------------------------------------------- sorted lookups */

typedef const char *(*key_fn)(const struct gc_vcenter_inventory *inv, size_t i);

static const char *vm_name(const struct gc_vcenter_inventory *inv, size_t i)
{
	return inv->vms[i].name ? inv->vms[i].name : "";
}

static const char *host_name(const struct gc_vcenter_inventory *inv, size_t i)
{
	return inv->hosts[i].name ? inv->hosts[i].name : "";
}

static const char *host_moref(const struct gc_vcenter_inventory *inv, size_t i)
{
	return inv->hosts[i].moref ? inv->hosts[i].moref : "";
}

struct sort_ctx {
	const struct gc_vcenter_inventory *inv;
	key_fn key;
};

/* By key, then by position: the first of equal keys stays first. */
static int by_key(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *k = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int c = strcmp(k->key(k->inv, i), k->key(k->inv, j));

	return c != 0 ? c : (i > j) - (i < j);
}

static const size_t *sorted(struct gc_vcenter_inventory *inv, size_t n, key_fn key)
{
	size_t *ix = gc_arena_alloc(&inv->arena, (n ? n : 1) * sizeof(*ix));
	struct sort_ctx k = {inv, key};

	for (size_t i = 0; i < n; i++)
		ix[i] = i;
	qsort_r(ix, n, sizeof(*ix), by_key, &k);
	return ix;
}

void gc_vcenter_inventory_index(struct gc_vcenter_inventory *inv)
{
	inv->vm_by_name = sorted(inv, inv->nvms, vm_name);
	inv->host_by_name = sorted(inv, inv->nhosts, host_name);
	inv->host_by_moref = sorted(inv, inv->nhosts, host_moref);
}

/*
 * The position in ix[0..n) of the first entry whose key is `want` (the
 * first in array order too), or n.  Without an index, a scan.
 */
static size_t first(const struct gc_vcenter_inventory *inv, const size_t *ix, size_t n, key_fn key,
		    const char *want)
{
	size_t lo = 0, hi = n;

	if (ix == NULL) {
		for (size_t i = 0; i < n; i++)
			if (strcmp(key(inv, i), want) == 0)
				return i;
		return n;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(key(inv, ix[mid]), want) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && strcmp(key(inv, ix[lo]), want) == 0 ? lo : n;
}

/* The array index of the first entry whose key is `want`, or n. */
static size_t find(const struct gc_vcenter_inventory *inv, const size_t *ix, size_t n, key_fn key,
		   const char *want)
{
	size_t k = first(inv, ix, n, key, want);

	return k == n || ix == NULL ? k : ix[k];
}

const struct gc_vcenter_vm *gc_vcenter_inventory_vm(const struct gc_vcenter_inventory *inv,
						    const char *name)
{
	size_t i = find(inv, inv->vm_by_name, inv->nvms, vm_name, name);

	return i < inv->nvms ? &inv->vms[i] : NULL;
}

const struct gc_vcenter_vm *gc_vcenter_inventory_vm_not_template(
	const struct gc_vcenter_inventory *inv, const char *name)
{
	size_t k = first(inv, inv->vm_by_name, inv->nvms, vm_name, name);

	/* equal names follow each other in the index, in array order; without
	 * an index, the scan goes on from the first match */
	for (; k < inv->nvms; k++) {
		size_t i = inv->vm_by_name ? inv->vm_by_name[k] : k;

		if (strcmp(vm_name(inv, i), name) != 0) {
			if (inv->vm_by_name != NULL)
				break;
			continue;
		}
		if (!inv->vms[i].is_template)
			return &inv->vms[i];
	}
	return NULL;
}

const struct gc_vcenter_host *gc_vcenter_inventory_host(const struct gc_vcenter_inventory *inv,
							const char *name)
{
	size_t i = find(inv, inv->host_by_name, inv->nhosts, host_name, name);

	return i < inv->nhosts ? &inv->hosts[i] : NULL;
}

const struct gc_vcenter_host *gc_vcenter_inventory_host_moref(
	const struct gc_vcenter_inventory *inv, const char *moref)
{
	size_t i = find(inv, inv->host_by_moref, inv->nhosts, host_moref, moref);

	return i < inv->nhosts ? &inv->hosts[i] : NULL;
}

const struct gc_vcenter_datacenter *gc_vcenter_inventory_datacenter(
	const struct gc_vcenter_inventory *inv, const char *name)
{
	for (size_t i = 0; i < inv->ndatacenters; i++)
		if (strcmp(inv->datacenters[i].name, name) == 0)
			return &inv->datacenters[i];
	return NULL;
}

const struct gc_vcenter_compute *gc_vcenter_inventory_compute(
	const struct gc_vcenter_inventory *inv, const char *moref)
{
	for (size_t i = 0; i < inv->ncomputes; i++)
		if (strcmp(inv->computes[i].moref, moref) == 0)
			return &inv->computes[i];
	return NULL;
}

const struct gc_vcenter_datastore *gc_vcenter_inventory_datastore(
	const struct gc_vcenter_inventory *inv, const char *name)
{
	for (size_t i = 0; i < inv->ndatastores; i++)
		if (strcmp(inv->datastores[i].name, name) == 0)
			return &inv->datastores[i];
	return NULL;
}

const struct gc_vcenter_network *gc_vcenter_inventory_network(
	const struct gc_vcenter_inventory *inv, const char *name)
{
	for (size_t i = 0; i < inv->nnetworks; i++)
		if (strcmp(inv->networks[i].name, name) == 0)
			return &inv->networks[i];
	return NULL;
}

const struct gc_vcenter_dvs *gc_vcenter_inventory_dvs(const struct gc_vcenter_inventory *inv,
						      const char *name)
{
	for (size_t i = 0; i < inv->ndvs; i++)
		if (strcmp(inv->dvs[i].name, name) == 0)
			return &inv->dvs[i];
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

const struct gc_vcenter_pci_device *gc_vcenter_host_pci(const struct gc_vcenter_host *h,
							const char *pci_id)
{
	for (size_t i = 0; i < h->npci; i++)
		if (strcmp(h->pci[i].id, pci_id) == 0)
			return &h->pci[i];
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
