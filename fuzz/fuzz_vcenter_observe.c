/*
 * fuzz_vcenter_observe.c - a RetrievePropertiesEx reply read into an
 * inventory: soap.c's envelope and fault handling, then inventory.c's
 * readers for every object kind (gc_vcenter_observe_parse, the same code
 * gc_vcenter_observe runs on each page).
 *
 * On success every string of the inventory is read (ASan sees a dangling or
 * unterminated one) and every object must be found again by the lookup the
 * driver uses for it, or by an earlier object of the same name.
 *
 * Corpus (fuzz/corpus/vcenter_observe): vcsim-*.xml are replies captured
 * from the lab's vcsim with -trace-file (vcsim's default inventory; the
 * same after a switch, port group, devices, a template and maintenance
 * mode; after Logout), switch types written as the lab's /sdk handler sends
 * them (VmwareDistributedVirtualSwitch).  constructed-*.xml are written by
 * hand from the WSDL's element names: a fault, a missingSet, an empty
 * result, and edge cases (no obj, unknown types, out-of-range numbers, a
 * private VLAN, members without a host, repeated properties).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "../src/drivers/vcenter/soap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_vm(const struct gc_vcenter_inventory *inv, const struct gc_vcenter_vm *vm)
{
	const struct gc_vcenter_vm *found = gc_vcenter_inventory_vm(inv, vm->name);

	must(found != NULL && strcmp(found->name, vm->name) == 0 && found <= vm);
	touch(vm->moref);
	touch(vm->host_moref);
	touch(vm->host_name);
	touch(vm->power_state);
	touch(vm->firmware);
	touch(vm->resource_pool);
	for (size_t i = 0; i < vm->nextra_config; i++) {
		must(vm->extra_config[i].key != NULL && vm->extra_config[i].value != NULL);
		touch(vm->extra_config[i].key);
		touch(vm->extra_config[i].value);
		must(gc_vcenter_vm_option(vm, vm->extra_config[i].key) != NULL);
	}
	for (size_t i = 0; i < vm->ndevices; i++) {
		const struct gc_vcenter_device *d = &vm->devices[i];

		touch(d->type);
		touch(d->label);
		touch(d->summary);
		touch(d->backing_type);
		touch(d->pci_id);
		touch(d->device_id);
		touch(d->system_id);
		touch(d->vgpu);
		touch(d->device_protocol);
		touch(d->sriov_pf);
		touch(d->portgroup_key);
		touch(d->network);
		touch(d->mac_address);
	}
}

static void check_host(const struct gc_vcenter_inventory *inv, const struct gc_vcenter_host *h)
{
	must(gc_vcenter_inventory_host(inv, h->name) <= h);
	must(gc_vcenter_inventory_host_moref(inv, h->moref) <= h);
	touch(h->parent);
	for (size_t i = 0; i < h->npassthru; i++)
		must(gc_vcenter_host_passthru(h, h->passthru[i].id) != NULL);
	for (size_t i = 0; i < h->nvgpu_types; i++)
		must(gc_vcenter_host_offers_vgpu(h, h->vgpu_types[i]));
	for (size_t i = 0; i < h->npci; i++) {
		must(gc_vcenter_host_pci(h, h->pci[i].id) != NULL);
		touch(h->pci[i].device_name);
	}
}

static void check(const struct gc_vcenter_inventory *inv)
{
	for (size_t i = 0; i < inv->nvms; i++)
		check_vm(inv, &inv->vms[i]);
	for (size_t i = 0; i < inv->nhosts; i++)
		check_host(inv, &inv->hosts[i]);
	for (size_t i = 0; i < inv->ndatacenters; i++) {
		const struct gc_vcenter_datacenter *d = &inv->datacenters[i];

		must(gc_vcenter_inventory_datacenter(inv, d->name) <= d);
		touch(d->vm_folder);
		touch(d->host_folder);
		touch(d->network_folder);
		touch(d->datastore_folder);
	}
	for (size_t i = 0; i < inv->ncomputes; i++) {
		const struct gc_vcenter_compute *c = &inv->computes[i];

		must(gc_vcenter_inventory_compute(inv, c->moref) <= c);
		must(c->type != NULL);
		touch(c->name);
		touch(c->resource_pool);
		touch(c->environment_browser);
	}
	for (size_t i = 0; i < inv->ndatastores; i++)
		must(gc_vcenter_inventory_datastore(inv, inv->datastores[i].name) <=
		       &inv->datastores[i]);
	for (size_t i = 0; i < inv->nnetworks; i++) {
		const struct gc_vcenter_network *n = &inv->networks[i];

		must(gc_vcenter_inventory_network(inv, n->name) <= n);
		must(n->type != NULL && n->vlan >= -1);
		touch(n->portgroup_key);
		touch(n->dvs);
		touch(n->config_version);
	}
	for (size_t i = 0; i < inv->ndvs; i++) {
		const struct gc_vcenter_dvs *d = &inv->dvs[i];

		must(gc_vcenter_inventory_dvs(inv, d->name) <= d);
		touch(d->uuid);
		touch(d->config_version);
		for (size_t j = 0; j < d->nmembers; j++) {
			must(d->members[j].host != NULL);
			for (size_t k = 0; k < d->members[j].npnics; k++)
				touch(d->members[j].pnics[k]);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_inventory *inv = NULL;

	if (gc_vcenter_observe_parse(&inv, (const char *)data, size, &err) == 0) {
		check(inv);
		gc_vcenter_inventory_free(inv);
	} else {
		must(inv == NULL && err.code < 0 && err.msg[0] != '\0');
	}
	return 0;
}
