/*
 * fixture.c - see fixture.h.  Everything lives in the cluster's arena;
 * derived fields are filled the way the spec loader documents them.
 */
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

#define A(c, T, n) ((T *)gc_arena_alloc(&(c)->arena, (n) * sizeof(T)))
#define S(c, ...) gc_arena_printf(&(c)->arena, __VA_ARGS__)

static struct gc_mark mark(struct gc_cluster *c, int line)
{
	struct gc_mark m = {c->source_path, line, 3};

	return m;
}

static void fill_host(struct gc_cluster *c, struct gc_host *h, size_t i, size_t ngpus,
		      enum fx_mode mode)
{
	h->mark = mark(c, (int)(10 + i));
	h->name = S(c, "esx%02zu", i + 1);
	h->address = S(c, "10.0.%zu.%zu", i / 250, i % 250 + 1);
	h->ngpus = ngpus;
	h->gpus = A(c, struct gc_host_gpu, ngpus ? ngpus : 1);
	for (size_t g = 0; g < ngpus; g++) {
		struct gc_host_gpu *gpu = &h->gpus[g];

		gpu->mark = mark(c, (int)(100 + g));
		gpu->pci = S(c, "0000:%02zx:00.0", 0x3b + g);
		gpu->model_name = mode == FX_VGPU ? "T4" : "V100-32GB";
		gpu->model = gc_gpu_model_find(gpu->model_name);
		gpu->memory_gb = mode == FX_VGPU ? 16 : 32;
		gpu->mode = mode == FX_VGPU ? GC_GPU_VGPU : GC_GPU_PASSTHROUGH;
		gpu->host = h;
	}
	h->nnics = 2;
	h->nics = A(c, struct gc_host_nic, 2);
	for (size_t n = 0; n < 2; n++) {
		struct gc_host_nic *nic = &h->nics[n];

		nic->mark = mark(c, (int)(200 + n));
		nic->pci = S(c, "0000:%02zx:00.0", 0x5e + n);
		nic->model_name = "ConnectX-5";
		nic->device = S(c, "vmnic%zu", 4 + n);
		nic->host = h;
	}
	if (mode == FX_PASSTHROUGH) {
		h->nics[0].mode = GC_NIC_MODE_SRIOV;
		h->nics[0].vfs = 8;
		h->nmlx5_max_vfs = "8,8";
	} else {
		h->nics[0].mode = GC_NIC_MODE_PVRDMA;
		h->nics[0].vmknic = "vmk1";
		h->nics[0].dvswitch_name = "rdma-dvs";
		h->nics[0].dvswitch = &c->dvswitches[0];
		h->vgpu = A(c, struct gc_vgpu_host, 1);
		h->vgpu->mark = mark(c, 300);
		h->vgpu->bundle = "/vmfs/volumes/datastore1/NVD-VGPU-800_535.154.02-1OEM.800.1.0.20613240_23175620.zip";
		h->vgpu->vib_name = "NVD-VGPU-800";
		h->vgpu->version = "535.154.02-1OEM.800.1.0.20613240";
		h->vgpu->default_type = "SharedPassthru";
		h->vgpu->assignment_policy = "Performance";
		h->vgpu->ecc = GC_FALSE;
		h->needs_vgpu_manager = true;
	}
	h->nntp = 1;
	h->ntp = A(c, char *, 1);
	h->ntp[0] = "ntp.example.com";
}

static void fill_vm(struct gc_cluster *c, struct gc_vm *v, struct gc_host *h, size_t i,
		    enum fx_mode mode)
{
	struct gc_portgroup *pg = &c->dvswitches[0].portgroups[0];

	v->mark = mark(c, (int)(400 + i));
	v->name = S(c, "worker-%02zu", i + 1);
	v->host_name = h->name;
	v->host = h;
	v->template_name = "ubuntu-22.04-template";
	v->cpus = 16;
	v->memory_gb = 128;
	v->power_on = true;
	v->ngpus = h->ngpus;
	v->gpus = A(c, struct gc_vm_gpu, h->ngpus ? h->ngpus : 1);
	for (size_t g = 0; g < h->ngpus; g++) {
		struct gc_vm_gpu *gpu = &v->gpus[g];

		gpu->mark = mark(c, (int)(500 + g));
		gpu->gpu = &h->gpus[g];
		gpu->host_pci = h->gpus[g].pci;
		if (mode == FX_VGPU) {
			gpu->kind = GC_VMGPU_VGPU;
			gpu->profile = "grid_t4-16c";
			gpu->memory_gb = 16;
			h->gpus[g].vgpu_profile = gpu->profile;
			h->gpus[g].vgpu_used_gb += 16;
		} else {
			gpu->kind = GC_VMGPU_STATIC;
			gpu->memory_gb = 32;
			h->gpus[g].passthrough_vm = v;
		}
	}
	v->nnics = 1;
	v->nics = A(c, struct gc_vm_nic, 1);
	v->nics[0].mark = mark(c, 600);
	v->nics[0].port_group = pg->name;
	v->nics[0].portgroup = pg;
	v->nics[0].nic = &h->nics[0];
	if (mode == FX_VGPU) {
		v->nics[0].kind = GC_VMNIC_PVRDMA;
		v->nics[0].protocol = "rocev2";
		v->has_vgpu = true;
		v->has_pvrdma = true;
		v->live_migratable = true;
		v->firmware = "bios";
		v->reservation_full = true;
	} else {
		v->nics[0].kind = GC_VMNIC_SRIOV;
		v->nics[0].pf = h->nics[0].pci;
		v->has_passthrough = true;
		v->passthrough_gb = (unsigned)(32 * h->ngpus);
		v->firmware = "efi";
		v->reservation_full = true;
		v->use_64bit_mmio = h->ngpus > 0;
		v->mmio_gb = h->ngpus > 2 ? 256 : 64;
		v->allow_p2p = h->ngpus > 1 ? GC_TRUE : GC_UNSET;
	}
	h->nvms = 1;
	h->vms = A(c, struct gc_vm *, 1);
	h->vms[0] = v;

	v->guest = A(c, struct gc_guest, 1);
	v->guest->mark = mark(c, 700);
	v->guest->address = S(c, "10.1.%zu.%zu", i / 250, i % 250 + 1);
	v->guest->os = "ubuntu";
	v->guest->nvidia_driver = "535";
	v->guest->rdma_packages = true;
	v->guest->peermem = true;
	v->guest->roce_qos = A(c, struct gc_roce_qos, 1);
	v->guest->roce_qos->mark = mark(c, 710);
	v->guest->roce_qos->interface = "ens192";
	v->guest->roce_qos->trust = "dscp";
	v->guest->roce_qos->pfc_priority = 3;
	v->guest->roce_qos->tos = 106;
	v->guest->roce_qos->ecn = true;
	if (mode == FX_VGPU) {
		v->guest->license = A(c, struct gc_license, 1);
		v->guest->license->mark = mark(c, 720);
		v->guest->license->feature_type = 1;
		v->guest->license->token_file = "/etc/gpuclusterctl/client_configuration_token.tok";
	}
}

struct gc_cluster *fx_cluster(size_t nhosts, size_t ngpus, enum fx_mode mode)
{
	struct gc_cluster *c = calloc(1, sizeof(*c));
	struct gc_dvswitch *d;
	struct gc_switch *sw;

	c->source_path = gc_arena_strdup(&c->arena, "fixture.yaml");
	c->mark = mark(c, 1);
	c->name = "fixture";
	c->vcenter = A(c, struct gc_vcenter, 1);
	c->vcenter->url = "https://vc.example.com";
	c->rolling.max_unavailable = 1;

	c->ndvswitches = 1;
	c->dvswitches = d = A(c, struct gc_dvswitch, 1);
	d->mark = mark(c, 5);
	d->name = "rdma-dvs";
	d->mtu = 9000;
	d->nportgroups = 1;
	d->portgroups = A(c, struct gc_portgroup, 1);
	d->portgroups[0].mark = mark(c, 6);
	d->portgroups[0].name = "rdma-pg";
	d->portgroups[0].dvswitch = d;

	c->nhosts = nhosts;
	c->hosts = A(c, struct gc_host, nhosts ? nhosts : 1);
	c->nvms = nhosts;
	c->vms = A(c, struct gc_vm, nhosts ? nhosts : 1);
	if (mode == FX_VGPU) {
		d->nuplinks = nhosts;
		d->uplinks = A(c, struct gc_dvs_uplink, nhosts ? nhosts : 1);
	}
	for (size_t i = 0; i < nhosts; i++) {
		fill_host(c, &c->hosts[i], i, ngpus, mode);
		if (mode == FX_VGPU) {
			d->uplinks[i].host_name = c->hosts[i].name;
			d->uplinks[i].host = &c->hosts[i];
			d->uplinks[i].nic = "vmnic4";
		}
		fill_vm(c, &c->vms[i], &c->hosts[i], i, mode);
	}

	c->nswitches = 1;
	c->switches = sw = A(c, struct gc_switch, 1);
	sw->mark = mark(c, 800);
	sw->name = "sw01";
	sw->address = "10.0.255.1";
	sw->ports = "1/1-1/32";
	sw->roce = A(c, struct gc_switch_roce, 1);
	sw->roce->mark = mark(c, 801);
	sw->roce->mode = "dscp-lossless";
	sw->roce->pool_percent = 50.0;
	sw->roce->priority = 3;
	sw->roce->ecn_min_kb = 150;
	sw->roce->ecn_max_kb = 1500;
	sw->roce->cnp_traffic_class = 6;
	sw->roce->pfc = true;
	sw->roce->lldp = true;
	return c;
}

void fx_free(struct gc_cluster *c)
{
	if (c == NULL)
		return;
	gc_arena_free(&c->arena);
	free(c);
}
