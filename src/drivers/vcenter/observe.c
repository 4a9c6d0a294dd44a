/*
 * observe.c - the whole inventory of a vCenter in one PropertyCollector call.
 *
 * One RetrievePropertiesEx starts at the root folder and walks the inventory
 * with traversal specs: folder -> child entities; datacenter -> its VM,
 * host, network and datastore folders; compute resource -> hosts; vApp ->
 * VMs.  It asks, per type, for what the planner and the executor compare or
 * need as arguments: VMs (devices, extraConfig, firmware, sizing, template,
 * pool, power state, host), hosts (PCI devices and passthrough state, vGPU
 * types, parent, maintenance, NTP servers and the ntpd service, VMkernel
 * adapters, and the host objects that change them), datacenters (their four
 * folders), compute resources (root pool, environment browser), datastores,
 * networks and DV port groups, and distributed switches.  No view objects
 * are created, so nothing needs destroying.
 *
 * The result comes in pages: RetrieveOptions.maxObjects asks for at most
 * GC_VCENTER_PAGE_OBJECTS objects a reply, and each reply's token fetches
 * the next page with ContinueRetrievePropertiesEx until a reply has none.
 * Each page is parsed into the inventory (strings copied into its arena) and
 * its reply and libxml2 tree freed before the next page is asked for, so the
 * memory held at once is one page's reply plus the inventory records, not
 * the whole result (4,000 VMs were one 30 MB reply; past ~8,900 of vcsim's
 * VMs one reply would pass the HTTPS layer's 64 MiB cap).  A page that fails
 * (a fault, a dropped connection, a reply we cannot read) fails the whole
 * observation (its message starting "inventory page N: " from the second
 * page on) and frees what the earlier pages filled: no inventory is
 * half-recorded.  When we stop with a token in hand (a page we could not
 * read), CancelRetrievePropertiesEx tells vCenter to drop the rest.
 *
 * A switch is asked for its whole `config`: maxMtu is a property of the
 * VMware subclass (VMwareDVSConfigInfo) only, and a path through a subclass
 * property is not one every vCenter accepts.  A property spec for a base
 * type (ComputeResource, Network, DistributedVirtualSwitch) covers its
 * subtypes on vCenter and on vcsim alike.
 *
 * inventory.c reads each page's reply into the inventory.
 */
#include <string.h>

#include "soap.h"

#define PAGES_MAX 10000 /* ContinueRetrievePropertiesEx rounds before we give up */

struct props {
	const char *type;
	const char *const *paths;
	size_t n;
};

static const char *const vm_props[] = {
	"name",
	"config.hardware.device",
	"config.extraConfig",
	"config.firmware",
	"config.memoryReservationLockedToMax",
	"config.hardware.numCPU",
	"config.hardware.memoryMB",
	"config.template",
	"resourcePool",
	"runtime.powerState",
	"runtime.host",
};

static const char *const host_props[] = {
	"name",
	"config.pciPassthruInfo",
	"config.sharedPassthruGpuTypes",
	"parent",
	"runtime.inMaintenanceMode",
	"hardware.pciDevice",
	/* an ESXi 6.x host's passthrough and NTP go through these (hostchanges.c) */
	"configManager.pciPassthruSystem",
	"configManager.dateTimeSystem",
	"configManager.serviceSystem",
	"config.dateTimeInfo",
	"config.service",
	"config.network.vnic",         /* the PVRDMA vmknic */
	"configManager.networkSystem", /* where AddVirtualNic goes */
};

static const char *const dc_props[] = {
	"name", "vmFolder", "hostFolder", "networkFolder", "datastoreFolder",
};

static const char *const cr_props[] = {"name", "resourcePool", "environmentBrowser"};
static const char *const name_prop[] = {"name"};

static const char *const dvpg_props[] = {
	"config.key",
	"config.distributedVirtualSwitch",
	"config.defaultPortConfig",
	"config.configVersion",
};

static const char *const dvs_props[] = {"name", "uuid", "config", "summary.hostMember"};

#define PROPS(t, a) {t, a, GC_ARRAY_LEN(a)}
static const struct props specs[] = {
	PROPS("VirtualMachine", vm_props),
	PROPS("HostSystem", host_props),
	PROPS("Datacenter", dc_props),
	PROPS("ComputeResource", cr_props), /* and ClusterComputeResource */
	PROPS("Datastore", name_prop),
	PROPS("Network", name_prop),        /* and DistributedVirtualPortgroup */
	PROPS("DistributedVirtualPortgroup", dvpg_props),
	PROPS("DistributedVirtualSwitch", dvs_props), /* and the VMware one */
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
	static const char *const from_folder[] = {"folder", "dcVm",   "dcHost", "dcNet",
						  "dcDs",   "crHost", "vApp",   NULL};
	static const char *const to_folder[] = {"folder", NULL};

	gc_vcenter_soap_open(s, "specSet", NULL);
	for (size_t i = 0; i < GC_ARRAY_LEN(specs); i++) {
		gc_vcenter_soap_open(s, "propSet", NULL);
		gc_vcenter_soap_elem(s, "type", specs[i].type);
		gc_vcenter_soap_elem(s, "all", "false");
		for (size_t j = 0; j < specs[i].n; j++)
			gc_vcenter_soap_elem(s, "pathSet", specs[i].paths[j]);
		gc_vcenter_soap_close(s, "propSet");
	}
	gc_vcenter_soap_open(s, "objectSet", NULL);
	gc_vcenter_soap_moref(s, "obj", "Folder", root);
	gc_vcenter_soap_elem(s, "skip", "true");
	traversal(s, "folder", "Folder", "childEntity", from_folder);
	traversal(s, "dcVm", "Datacenter", "vmFolder", to_folder);
	traversal(s, "dcHost", "Datacenter", "hostFolder", to_folder);
	traversal(s, "dcNet", "Datacenter", "networkFolder", to_folder);
	traversal(s, "dcDs", "Datacenter", "datastoreFolder", to_folder);
	traversal(s, "crHost", "ComputeResource", "host", NULL);
	traversal(s, "vApp", "VirtualApp", "vm", NULL);
	gc_vcenter_soap_close(s, "objectSet");
	gc_vcenter_soap_close(s, "specSet");
}

/*
 * One page: RetrievePropertiesEx with maxObjects (max_objects 0: none) when
 * token is "", else ContinueRetrievePropertiesEx of token.  token[0..n) gets
 * the next page's token, or "" at the last page.  The reply is freed here.
 */
static int page(struct gc_vcenter_conn *vc, struct gc_vcenter_collect *c, int max_objects,
		char *token, size_t n, struct gc_error *err)
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
		if (max_objects > 0)
			gc_vcenter_soap_int(&s, "maxObjects", max_objects);
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
	token[0] = '\0'; /* sent: a token is good for one call */
	if (rc < 0)
		return rc;
	c->inv->round_trips++;
	/* An empty result has no returnval at all. */
	rc = gc_vcenter_collect_page(c, gc_vcenter_xml_child(ret, "returnval"), token, n, err);
	xmlFreeDoc(doc);
	return rc;
}

/* Best effort: the observation has failed already, and its error stands. */
static void cancel(struct gc_vcenter_conn *vc, const char *token)
{
	struct gc_error ignored = GC_ERROR_INIT;
	struct gc_vcenter_soap s;

	gc_vcenter_soap_begin(&s, "CancelRetrievePropertiesEx", "PropertyCollector",
			      vc->property_collector);
	gc_vcenter_soap_elem(&s, "token", token);
	(void)gc_vcenter_soap_run(vc, &s, &ignored);
}

int gc_vcenter_observe_paged(struct gc_vcenter_inventory **out, struct gc_vcenter_conn *vc,
			     int max_objects, struct gc_error *err)
{
	struct gc_vcenter_collect c;
	char token[256] = "";
	int rc = 0;

	gc_vcenter_collect_init(&c, vc->target);
	for (unsigned i = 0; rc == 0 && (i == 0 || token[0] != '\0'); i++) {
		if (i == PAGES_MAX) {
			rc = gc_error_set(err, GC_EREMOTE, "%s: more than %d result pages",
					  vc->target, PAGES_MAX);
			break;
		}
		rc = page(vc, &c, max_objects, token, sizeof(token), err);
		if (rc < 0 && i > 0) /* a transport error names no method */
			gc_error_prefix(err, "inventory page %u: ", i + 1);
	}
	if (rc < 0) {
		if (token[0] != '\0')
			cancel(vc, token);
		gc_vcenter_collect_abort(&c);
		return rc;
	}
	gc_vcenter_collect_finish(&c, out);
	return 0;
}

int gc_vcenter_observe(struct gc_vcenter_inventory **out, struct gc_vcenter_conn *vc,
		       struct gc_error *err)
{
	return gc_vcenter_observe_paged(out, vc, GC_VCENTER_PAGE_OBJECTS, err);
}
