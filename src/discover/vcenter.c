/*
 * vcenter.c - the vCenter inventory (the vCenter driver's one
 * RetrievePropertiesEx, gc_vcenter_observe) as discover's JSON: the
 * datacenters, clusters and datastores, each host's offered vGPU types and
 * passthrough state, the distributed switches with their uplinks and port
 * groups, and every VM and template with its devices.  Names are vCenter's;
 * the spec fragment (yaml.c) keeps those a spec can hold.
 */
#include <string.h>

#include "discover_int.h"
#include "gc/json.h"

static json_object *names(const char *const *v, size_t n)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, gc_json_text(v[i]));
	return a;
}

static json_object *host_json(const struct gc_vcenter_host *h)
{
	json_object *o = json_object_new_object(), *pt = json_object_new_array();

	json_object_object_add(o, "name", gc_json_text(h->name));
	json_object_object_add(o, "maintenance", json_object_new_boolean(h->maintenance));
	json_object_object_add(o, "vgpu_types", names(h->vgpu_types, h->nvgpu_types));
	for (size_t i = 0; i < h->npassthru; i++) {
		json_object *p = json_object_new_object();

		json_object_object_add(p, "pci", gc_json_text(h->passthru[i].id));
		json_object_object_add(p, "enabled", json_object_new_boolean(h->passthru[i].enabled));
		json_object_object_add(p, "active", json_object_new_boolean(h->passthru[i].active));
		json_object_array_add(pt, p);
	}
	json_object_object_add(o, "passthru", pt);
	return o;
}

static json_object *dvs_json(const struct gc_vcenter_inventory *inv, const struct gc_vcenter_dvs *d)
{
	json_object *o = json_object_new_object(), *up = json_object_new_array();
	json_object *pgs = json_object_new_array();
	size_t i, j;

	json_object_object_add(o, "name", gc_json_text(d->name));
	json_object_object_add(o, "mtu", d->max_mtu ? json_object_new_int(d->max_mtu) : NULL);
	for (i = 0; i < d->nmembers; i++) {
		const struct gc_vcenter_host *h = gc_vcenter_inventory_host_moref(inv, d->members[i].host);

		for (j = 0; j < d->members[i].npnics; j++) {
			json_object *u = json_object_new_object();

			json_object_object_add(u, "host", gc_json_text(h ? h->name : d->members[i].host));
			json_object_object_add(u, "nic", gc_json_text(d->members[i].pnics[j]));
			json_object_array_add(up, u);
		}
	}
	json_object_object_add(o, "uplinks", up);
	for (i = 0; i < inv->nnetworks; i++) {
		const struct gc_vcenter_network *n = &inv->networks[i];
		json_object *p;

		if (n->dvs == NULL || strcmp(n->dvs, d->moref) != 0)
			continue;
		p = json_object_new_object();
		json_object_object_add(p, "name", gc_json_text(n->name));
		json_object_object_add(p, "vlan", n->vlan >= 0 ? json_object_new_int(n->vlan) : NULL);
		json_object_array_add(pgs, p);
	}
	json_object_object_add(o, "port_groups", pgs);
	return o;
}

static const char *network_of(const struct gc_vcenter_inventory *inv,
			      const struct gc_vcenter_device *d)
{
	if (d->network != NULL)
		return d->network;
	for (size_t i = 0; d->portgroup_key != NULL && i < inv->nnetworks; i++)
		if (inv->networks[i].portgroup_key &&
		    strcmp(inv->networks[i].portgroup_key, d->portgroup_key) == 0)
			return inv->networks[i].name;
	return NULL;
}

static json_object *device_json(const struct gc_vcenter_inventory *inv,
				const struct gc_vcenter_device *d)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", gc_json_text(d->type));
	json_object_object_add(o, "label", gc_json_text(d->label));
	json_object_object_add(o, "pci", gc_json_text(d->pci_id));
	json_object_object_add(o, "vgpu", gc_json_text(d->vgpu));
	json_object_object_add(o, "sriov_pf", gc_json_text(d->sriov_pf));
	json_object_object_add(o, "network", gc_json_text(network_of(inv, d)));
	return o;
}

/* The devices that make a GPU/RDMA VM: PCI passthrough, vGPU, SR-IOV,
 * PVRDMA, and every ethernet card. */
static bool device_kept(const struct gc_vcenter_device *d)
{
	return d->type != NULL &&
	       (strstr(d->type, "PCIPassthrough") || strstr(d->type, "Sriov") ||
		strstr(d->type, "Vrdma") || strstr(d->type, "Vmxnet") || strstr(d->type, "E1000"));
}

static json_object *vm_json(const struct gc_vcenter_inventory *inv, const struct gc_vcenter_vm *v)
{
	json_object *o = json_object_new_object(), *devs = json_object_new_array();

	json_object_object_add(o, "name", gc_json_text(v->name));
	json_object_object_add(o, "host", gc_json_text(v->host_name));
	json_object_object_add(o, "template", json_object_new_boolean(v->is_template));
	json_object_object_add(o, "power_state", gc_json_text(v->power_state));
	json_object_object_add(o, "firmware", gc_json_text(v->firmware));
	json_object_object_add(o, "cpus", v->num_cpus ? json_object_new_int(v->num_cpus) : NULL);
	json_object_object_add(o, "memory_mb", v->memory_mb ? json_object_new_int(v->memory_mb) : NULL);
	for (size_t i = 0; i < v->ndevices; i++)
		if (device_kept(&v->devices[i]))
			json_object_array_add(devs, device_json(inv, &v->devices[i]));
	json_object_object_add(o, "devices", devs);
	return o;
}

void discover_vcenter_json(json_object *o, const struct gc_vcenter_inventory *inv)
{
	json_object *a;
	size_t i;

	a = json_object_new_array();
	for (i = 0; i < inv->ndatacenters; i++)
		json_object_array_add(a, gc_json_text(inv->datacenters[i].name));
	json_object_object_add(o, "datacenters", a);
	a = json_object_new_array();
	for (i = 0; i < inv->ncomputes; i++)
		if (inv->computes[i].type && strcmp(inv->computes[i].type, "ClusterComputeResource") == 0)
			json_object_array_add(a, gc_json_text(inv->computes[i].name));
	json_object_object_add(o, "clusters", a);
	a = json_object_new_array();
	for (i = 0; i < inv->ndatastores; i++)
		json_object_array_add(a, gc_json_text(inv->datastores[i].name));
	json_object_object_add(o, "datastores", a);
	a = json_object_new_array();
	for (i = 0; i < inv->nhosts; i++)
		json_object_array_add(a, host_json(&inv->hosts[i]));
	json_object_object_add(o, "hosts", a);
	a = json_object_new_array();
	for (i = 0; i < inv->ndvs; i++)
		json_object_array_add(a, dvs_json(inv, &inv->dvs[i]));
	json_object_object_add(o, "dvswitches", a);
	a = json_object_new_array();
	for (i = 0; i < inv->nvms; i++)
		json_object_array_add(a, vm_json(inv, &inv->vms[i]));
	json_object_object_add(o, "vms", a);
}
