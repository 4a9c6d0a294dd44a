/*
 * vcenter_record.c - time the vCenter recorder (src/drivers/vcenter/record.c):
 * a whole vCenter inventory mapped onto the graph's resources, the step
 * between the one RetrievePropertiesEx and the planner's diff.
 *
 *   bench/gen_spec.py 10000 > /tmp/spec-10000.yaml
 *   vcenter_record_bench /tmp/spec-10000.yaml [--runs 5] [--extra] [--no-index]
 *
 * It loads the spec, builds the graph and makes, in memory, the inventory
 * vCenter would return for that cluster once it is converged: each spec VM
 * on its host with every device the spec names (a static passthrough
 * device per host_pci, a vmxnet3 and an SR-IOV adapter per NIC) plus the
 * template.  With --extra each VM also carries one GPU added by hand,
 * which the recorder must find for removal.  The inventory is indexed as
 * gc_vcenter_observe() leaves it (--no-index: lookups scan, as before the
 * index existed).  Then it records --runs times
 * into a fresh observed store and prints one JSON object: VMs, resources,
 * observed resources, extras found, and min/median/max milliseconds.
 * Exit 1 when a run finds other than one extra per VM (--extra) or none.
 * Timing is reported, never asserted.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/drivers/vcenter/vcdrv.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/spec.h"
#include "gc/util.h"

#define RUNS_MAX 1000

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Append the device vCenter would list for resource r to vm, if r is one. */
static void add_device(struct gc_vcenter_vm *vm, const struct gc_resource *r)
{
	struct gc_vcenter_device *d = &vm->devices[vm->ndevices];

	memset(d, 0, sizeof(*d));
	d->key = 4000 + (int)vm->ndevices;
	if (r->kind == GC_RES_VM_DEVICE_PCI && gc_resource_prop(r, "host_pci") != NULL) {
		d->type = "VirtualPCIPassthrough";
		d->backing_type = "VirtualPCIPassthroughDeviceBackingInfo";
		d->pci_id = gc_resource_prop(r, "host_pci");
	} else if (r->kind == GC_RES_VM_NIC_VMXNET3) {
		d->type = "VirtualVmxnet3";
		d->backing_type = "VirtualEthernetCardNetworkBackingInfo";
		d->network = gc_resource_prop(r, "network");
	} else if (r->kind == GC_RES_VM_NIC_SRIOV) {
		d->type = "VirtualSriovEthernetCard";
		d->backing_type = "VirtualEthernetCardNetworkBackingInfo";
		d->network = gc_resource_prop(r, "network");
		d->sriov_pf = gc_resource_prop(r, "pf");
	} else {
		return;
	}
	vm->ndevices++;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"runs", required_argument, NULL, 'n'},
		{"extra", no_argument, NULL, 'x'},
		{"no-index", no_argument, NULL, 'i'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct gc_diags diags = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_cluster *c = NULL;
	struct gc_graph *g = NULL;
	struct gc_vcenter_inventory inv;
	struct gc_vcenter_datacenter dc = {.moref = "datacenter-2"};
	const struct gc_resource **res;
	size_t nres = 0, nobs = 0, nextra = 0;
	unsigned runs = 5;
	bool extra = false, indexed = true;
	double ms[RUNS_MAX];
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'n')
			runs = (unsigned)strtoul(optarg, NULL, 10);
		else if (opt == 'x')
			extra = true;
		else if (opt == 'i')
			indexed = false;
		else {
			fputs("usage: vcenter_record_bench SPEC [--runs N] [--extra] [--no-index]\n",
			      opt == 'h' ? stdout : stderr);
			return opt == 'h' ? 0 : 64;
		}
	}
	if (optind + 1 != argc || runs == 0 || runs > RUNS_MAX) {
		fputs("usage: vcenter_record_bench SPEC [--runs N] [--extra] [--no-index]\n", stderr);
		return 64;
	}
	if (gc_spec_load(&c, &diags, argv[optind], &err) != 0 ||
	    gc_graph_build(&g, c, &err) != 0) {
		fprintf(stderr, "vcenter_record_bench: %s\n", err.msg);
		return 1;
	}
	gc_diags_free(&diags);
	res = gc_xcalloc(g->nresources, sizeof(*res));
	for (size_t i = 0; i < g->nresources; i++)
		if (g->resources[i]->target->kind == GC_TARGET_VCENTER)
			res[nres++] = g->resources[i];

	/* the converged inventory */
	memset(&inv, 0, sizeof(inv));
	dc.name = c->vcenter->datacenter;
	inv.datacenters = &dc;
	inv.ndatacenters = 1;
	inv.hosts = gc_xcalloc(c->nhosts, sizeof(*inv.hosts));
	for (size_t i = 0; i < c->nhosts; i++) {
		inv.hosts[i].name = c->hosts[i].name;
		inv.hosts[i].moref = gc_arena_printf(&inv.arena, "host-%zu", i);
		inv.hosts[i].parent = "domain-c7";
	}
	inv.nhosts = c->nhosts;
	inv.vms = gc_xcalloc(c->nvms + 1, sizeof(*inv.vms));
	for (size_t i = 0; i < c->nvms; i++) {
		const struct gc_vm *v = &c->vms[i];
		struct gc_vcenter_vm *vm = &inv.vms[inv.nvms++];

		vm->devices = gc_arena_alloc(&inv.arena,
					     (v->ngpus + v->nnics + 2) * sizeof(*vm->devices));
		vm->moref = gc_arena_printf(&inv.arena, "vm-%zu", i);
		vm->name = v->name;
		vm->host_moref = inv.hosts[v->host - c->hosts].moref;
		vm->power_state = "poweredOn";
		vm->firmware = "efi";
		vm->reservation_locked = vm->reservation_locked_set = true;
		vm->num_cpus = (int)v->cpus;
		vm->memory_mb = (long)v->memory_gb * 1024;
	}
	/* devices: one walk over the graph (the VMs' order is the spec's) */
	for (size_t i = 0; i < nres; i++) {
		const struct gc_vm *v = res[i]->vm ? gc_cluster_vm(c, res[i]->vm) : NULL;

		if (v != NULL)
			add_device(&inv.vms[v - c->vms], res[i]);
	}
	for (size_t i = 0; extra && i < c->nvms; i++) {
		struct gc_vcenter_vm *vm = &inv.vms[i];

		/* a GPU added by hand: the recorder must find it for removal */
		vm->devices[vm->ndevices++] = (struct gc_vcenter_device){
			.key = 9000, .type = "VirtualPCIPassthrough",
			.backing_type = "VirtualPCIPassthroughDeviceBackingInfo",
			.pci_id = "0000:f0:00.0"};
	}
	inv.vms[inv.nvms++] = (struct gc_vcenter_vm){.moref = "vm-t", .name = "ubuntu-22.04-template",
						      .is_template = true};
	/* as gc_vcenter_observe() leaves it; --no-index to see the scans */
	if (indexed)
		gc_vcenter_inventory_index(&inv);

	for (unsigned run = 0; run < runs; run++) {
		struct gc_observed *obs;
		struct gc_buf problems = GC_BUF_INIT;
		uint64_t t0;

		gc_observed_new(&obs);
		t0 = gc_now_ns();
		gc_vcdrv_record(obs, &inv, c, res, nres, &problems);
		ms[run] = (double)(gc_now_ns() - t0) / 1e6;
		nobs = gc_observed_nresources(obs);
		nextra = 0;
		for (size_t i = 0; i < nobs; i++)
			nextra += strstr(gc_observed_resource_at(obs, i)->id, "/0000:f0:00.0") != NULL;
		if (problems.len > 0)
			fprintf(stderr, "vcenter_record_bench: problems: %s", gc_buf_str(&problems));
		gc_buf_free(&problems);
		gc_observed_free(obs);
		if (nextra != (extra ? c->nvms : 0)) {
			fprintf(stderr, "vcenter_record_bench: %zu extras found, want %zu\n", nextra,
				extra ? c->nvms : 0);
			return 1;
		}
	}
	qsort(ms, runs, sizeof(*ms), cmp_double);
	printf("{\"vms\": %zu, \"resources\": %zu, \"observed\": %zu, \"extras\": %zu, "
	       "\"indexed\": %s, \"runs\": %u, \"min_ms\": %.1f, \"median_ms\": %.1f, "
	       "\"max_ms\": %.1f}\n",
	       c->nvms, nres, nobs, nextra, indexed ? "true" : "false", runs, ms[0], ms[runs / 2],
	       ms[runs - 1]);
	gc_arena_free(&inv.arena);
	free(inv.hosts);
	free(inv.vms);
	free(res);
	gc_graph_free(g);
	gc_cluster_free(c);
	return 0;
}
