/*
 * check.c - resolve references, compute derived values, run the
 * cross-layer checks.  Runs after parse.c even when parsing found errors, so
 * one run reports everything; every step tolerates half-filled objects
 * (NULL names, unresolved pointers).
 *
 * All lookups go through hash tables (names, "host-index/PCI" keys) and
 * per-object counters live in arrays indexed by a global ordinal, so the
 * whole pass is O(total objects).  Order matters in a few places and is
 * fixed: static passthrough GPUs are claimed before vGPU pins, pinned vGPUs
 * before unpinned ones (first fit in spec order), and both before dynamic
 * DirectPath requests, which only count free GPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "check.h"
#include "gc/pattern.h"

/* "no host named 'x'" with a did-you-mean over the defined names. */
static void dangling(struct check *k, struct gc_mark m, const char *what, const char *name,
		     const char **names, size_t n, const char *where)
{
	/* a did-you-mean costs n edit distances: not over huge sets, and not for
	 * the thousands of errors of a broken generated spec */
	const char *best = n <= HINT_CANDIDATES_MAX && k->x->diags.n < HINT_DIAGS_MAX
				   ? gc_did_you_mean(name, names, n)
				   : NULL;

	if (best != NULL)
		spec_diag(k->x, GC_SEV_ERROR, m,
			  gc_arena_printf(k->x->arena, "did you mean '%s'?", best), "no %s named '%s'",
			  what, spec_esc(k->x, name));
	else
		spec_diag(k->x, GC_SEV_ERROR, m,
			  gc_arena_printf(k->x->arena, "define it under %s", where),
			  "no %s named '%s'", what, spec_esc(k->x, name));
}

/* Index one named object; a second one with the same name is an error. */
static void index_name(struct check *k, struct gc_strmap *m, const char *what, const char *name,
		       const void *namefield, struct gc_mark objmark, void *obj,
		       struct gc_mark (*markof)(const void *))
{
	void *prev;

	if (name == NULL)
		return;
	prev = gc_strmap_put_new(m, name, obj);
	if (prev != NULL)
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, namefield, objmark),
			  gc_arena_printf(k->x->arena, "first defined at line %d", markof(prev).line),
			  "duplicate %s name '%s'", what, name);
}

static struct gc_mark mark_of(const void *obj)
{
	return *(const struct gc_mark *)obj; /* every model struct starts with its mark */
}

/* ---------------------------------------------------------------- names */

static void index_all(struct check *k)
{
	struct gc_cluster *c = k->c;
	struct gc_spec_index *ix = gc_xcalloc(1, sizeof(*ix));
	size_t i, j, total_pg = 0;

	c->index = ix;
	k->cred_names = gc_arena_alloc(&k->scratch, sizeof(char *) * (c->ncredentials + 1));
	for (i = 0; i < c->ncredentials; i++) {
		struct gc_credential *cr = &c->credentials[i];

		index_name(k, &ix->credentials, "credential", cr->name, &cr->name, cr->mark, cr,
			   mark_of);
		if (cr->name)
			k->cred_names[k->ncred_names++] = cr->name;
	}
	k->host_names = gc_arena_alloc(&k->scratch, sizeof(char *) * (c->nhosts + 1));
	for (i = 0; i < c->nhosts; i++) {
		struct gc_host *h = &c->hosts[i];

		index_name(k, &ix->hosts, "host", h->name, &h->name, h->mark, h, mark_of);
		if (h->name)
			k->host_names[k->nhost_names++] = h->name;
	}
	for (i = 0; i < c->nvms; i++)
		index_name(k, &ix->vms, "VM", c->vms[i].name, &c->vms[i].name, c->vms[i].mark,
			   &c->vms[i], mark_of);
	for (i = 0; i < c->nswitches; i++)
		index_name(k, &ix->switches, "switch", c->switches[i].name, &c->switches[i].name,
			   c->switches[i].mark, &c->switches[i], mark_of);
	k->dvs_names = gc_arena_alloc(&k->scratch, sizeof(char *) * (c->ndvswitches + 1));
	for (i = 0; i < c->ndvswitches; i++) {
		struct gc_dvswitch *d = &c->dvswitches[i];

		index_name(k, &ix->dvswitches, "distributed switch", d->name, &d->name, d->mark, d,
			   mark_of);
		if (d->name)
			k->dvs_names[k->ndvs_names++] = d->name;
		total_pg += d->nportgroups;
	}
	k->pg_names = gc_arena_alloc(&k->scratch, sizeof(char *) * (total_pg + 1));
	for (i = 0; i < c->ndvswitches; i++) {
		for (j = 0; j < c->dvswitches[i].nportgroups; j++) {
			struct gc_portgroup *pg = &c->dvswitches[i].portgroups[j];

			index_name(k, &ix->portgroups, "port group", pg->name, &pg->name, pg->mark,
				   pg, mark_of);
			if (pg->name)
				k->pg_names[k->npg_names++] = pg->name;
		}
	}
}

/* Per-host PCI addresses: GPUs and NICs share one address space. */
static void index_pci(struct check *k)
{
	struct gc_cluster *c = k->c;
	size_t i, j, ngpu = 0, nnic = 0;

	k->gpu_base = gc_arena_alloc(&k->scratch, sizeof(size_t) * (c->nhosts + 1));
	k->nic_base = gc_arena_alloc(&k->scratch, sizeof(size_t) * (c->nhosts + 1));
	for (i = 0; i < c->nhosts; i++) {
		struct gc_host *h = &c->hosts[i];

		k->gpu_base[i] = ngpu;
		k->nic_base[i] = nnic;
		ngpu += h->ngpus;
		nnic += h->nnics;
		for (j = 0; j < h->ngpus + h->nnics; j++) {
			bool is_gpu = j < h->ngpus;
			struct gc_host_gpu *g = is_gpu ? &h->gpus[j] : NULL;
			struct gc_host_nic *n = is_gpu ? NULL : &h->nics[j - h->ngpus];
			const char *pci = is_gpu ? g->pci : n->pci;
			const char *key;
			void *prev;

			if (pci == NULL)
				continue;
			key = pci_key(k, i, pci);
			prev = gc_strmap_get(&k->gpus, key);
			if (prev == NULL)
				prev = gc_strmap_get(&k->nics, key);
			if (prev != NULL) {
				spec_diag(k->x, GC_SEV_ERROR,
					  is_gpu ? fmark(k, &g->pci, g->mark) : fmark(k, &n->pci, n->mark),
					  gc_arena_printf(k->x->arena, "first used at line %d",
							  mark_of(prev).line),
					  "duplicate PCI address '%s' on host '%s'", pci, q(h->name));
				continue;
			}
			if (is_gpu) {
				gc_strmap_put_new(&k->gpus, key, g);
				gc_strmap_put_new(&k->gpu_any, pci, g);
			} else {
				gc_strmap_put_new(&k->nics, key, n);
			}
		}
	}
	k->gpu_dyn = gc_arena_alloc(&k->scratch, sizeof(bool) * (ngpu + 1));
	k->vf_used = gc_arena_alloc(&k->scratch, sizeof(unsigned) * (nnic + 1));
	k->nic_owner = gc_arena_alloc(&k->scratch, sizeof(struct gc_vm *) * (nnic + 1));
}

/* ---------------------------------------------------------------- references */

static const struct gc_credential *resolve_cred(struct check *k, const char *name,
						const void *field, struct gc_mark fallback)
{
	const struct gc_credential *cr;

	if (name == NULL)
		return NULL;
	cr = gc_strmap_get(&k->c->index->credentials, name);
	if (cr == NULL)
		dangling(k, fmark(k, field, fallback), "credential", name, k->cred_names,
			 k->ncred_names, "credentials:");
	return cr;
}

static void check_vcenter(struct check *k)
{
	struct gc_cluster *c = k->c;
	struct gc_vcenter *vc = c->vcenter;

	if (vc == NULL) {
		size_t i;

		/* VMs on KVM hosts are libvirt's; a VM naming no known host is
		 * reported as dangling */
		for (i = 0; i < c->nvms; i++) {
			const struct gc_host *h = c->vms[i].host_name == NULL ? NULL :
				gc_strmap_get(&c->index->hosts, c->vms[i].host_name);

			if (h != NULL && h->hypervisor == GC_HV_ESXI)
				break;
		}
		if (i < c->nvms)
			spec_diag(k->x, GC_SEV_ERROR, fmark(k, &c->vms, c->vms[i].mark),
				  "add vcenter: {url: https://..., datacenter: ..., credentials: ...}",
				  "VMs need a 'vcenter' section");
		return;
	}
	vc->credentials = resolve_cred(k, vc->credentials_name, &vc->credentials_name, vc->mark);
	if (vc->insecure && vc->ca_file != NULL)
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &vc->insecure, vc->mark),
			  "keep ca_file to verify the certificate, or drop it for insecure: true",
			  "'ca_file' and 'insecure: true' exclude each other");
	else if (vc->insecure)
		spec_diag(k->x, GC_SEV_WARNING, fmark(k, &vc->insecure, vc->mark),
			  "give ca_file: PATH to verify vCenter's certificate",
			  "TLS certificate checks for vCenter are off (insecure: true)");
}

static void check_dvswitches(struct check *k)
{
	struct gc_cluster *c = k->c;
	size_t i, j;

	for (i = 0; i < c->ndvswitches; i++) {
		struct gc_dvswitch *d = &c->dvswitches[i];

		for (j = 0; j < d->nuplinks; j++) {
			struct gc_dvs_uplink *u = &d->uplinks[j];
			const char *key;
			struct gc_dvs_uplink *prev;

			if (u->host_name == NULL)
				continue;
			u->host = gc_strmap_get(&c->index->hosts, u->host_name);
			if (u->host == NULL) {
				dangling(k, fmark(k, &u->host_name, u->mark), "host", u->host_name,
					 k->host_names, k->nhost_names, "hosts:");
				continue;
			}
			key = gc_arena_printf(&k->scratch, "%zu/%s", i, u->host_name);
			gc_strmap_put_new(&k->uplinks, key, u);
			if (u->nic == NULL)
				continue;
			key = gc_arena_printf(&k->scratch, "%zu/%s/%s", i, u->host_name, u->nic);
			prev = gc_strmap_put_new(&k->uplinks, key, u);
			if (prev != NULL)
				spec_diag(k->x, GC_SEV_ERROR, u->mark,
					  gc_arena_printf(k->x->arena, "first given at line %d",
							  prev->mark.line),
					  "'%s' of host '%s' is already an uplink of distributed switch "
					  "'%s'",
					  u->nic, u->host_name, q(d->name));
		}
	}
}

struct nmlx5_port {
	const char *pci;
	unsigned vfs;
};

static int by_pci(const void *a, const void *b)
{
	const struct nmlx5_port *p = a;
	const struct nmlx5_port *q = b;

	return strcasecmp(p->pci, q->pci);
}

static bool nic_listed(const struct gc_host *h, const char *pci)
{
	for (size_t i = 0; i < h->nnics; i++)
		if (h->nics[i].pci != NULL && strcasecmp(h->nics[i].pci, pci) == 0)
			return true;
	return false;
}

/*
 * host.nmlx5_max_vfs.  nmlx5_core takes max_vfs as one value per port, in
 * the order it enumerates its ports (PCI order), so SR-IOV on port 2 alone
 * is "0,4" (`esxcli system module parameters set -m nmlx5_core -p
 * "max_vfs=8,8"`, one value per port: the SmartX SMTX OS VMware guide, in
 * shared/REAL-FORMATS.md A.8; issue 14, item 6).  The ports are the
 * host's nmlx5_core NICs the spec lists, except passed-through ones (owned by
 * passthru, not nmlx5_core), plus function 0 of a listed port's adapter:
 * PCI has no function 1 without a function 0.  Other ports get 0; the
 * trailing zeros are left out (the driver's default is 0).
 */
static void derive_nmlx5_max_vfs(struct check *k, struct gc_host *h)
{
	struct nmlx5_port ports[2 * 64];
	struct gc_buf vfs = GC_BUF_INIT;
	size_t i, n = 0, last = 0;
	bool any = false;

	for (i = 0; i < h->nnics && n < GC_ARRAY_LEN(ports); i++) {
		const struct gc_host_nic *nic = &h->nics[i];

		if (nic->driver == NULL || strcmp(nic->driver, "nmlx5_core") != 0 ||
		    nic->pci == NULL || nic->mode == GC_NIC_MODE_PASSTHROUGH)
			continue;
		ports[n].pci = nic->pci;
		ports[n].vfs = nic->mode == GC_NIC_MODE_SRIOV ? nic->vfs : 0;
		any = any || ports[n].vfs > 0;
		n++;
	}
	if (!any)
		return;
	for (i = 0, last = n; i < last && n < GC_ARRAY_LEN(ports); i++) {
		size_t len = strlen(ports[i].pci);
		char *fn0;

		if (len < 2 || ports[i].pci[len - 2] != '.' || ports[i].pci[len - 1] == '0')
			continue;
		fn0 = gc_arena_strdup(&k->scratch, ports[i].pci);
		fn0[len - 1] = '0';
		if (nic_listed(h, fn0))
			continue;
		ports[n].pci = fn0;
		ports[n].vfs = 0;
		n++;
	}
	qsort(ports, n, sizeof(*ports), by_pci);
	for (i = 0, last = 0; i < n; i++) {
		/* two adapters' implied function 0 may coincide */
		if (i > 0 && strcasecmp(ports[i].pci, ports[i - 1].pci) == 0)
			continue;
		ports[last++] = ports[i];
	}
	n = last;
	while (n > 0 && ports[n - 1].vfs == 0)
		n--;
	for (i = 0; i < n; i++)
		gc_buf_printf(&vfs, "%s%u", i ? "," : "", ports[i].vfs);
	h->nmlx5_max_vfs = gc_arena_strdup(k->x->arena, gc_buf_str(&vfs));
	gc_buf_free(&vfs);
}

/* Loopback: the local libvirtd, without SSH. */
static bool loopback(const char *a)
{
	return a != NULL && (strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0 ||
			     strcmp(a, "localhost") == 0);
}

/*
 * A KVM host: its libvirt URI (given, or derived from the address, SSH port
 * and credential), and what only ESXi has.
 */
static void check_kvm_host(struct check *k, struct gc_host *h)
{
	const struct gc_credential *cr = h->credentials;
	struct gc_buf b = GC_BUF_INIT;

	for (size_t i = 0; i < h->nnics; i++) {
		if (h->nics[i].mode == GC_NIC_MODE_PVRDMA)
			spec_diag(k->x, GC_SEV_ERROR, fmark(k, &h->nics[i].mode, h->nics[i].mark),
				  "PVRDMA is an ESXi adapter: on KVM give the VM an SR-IOV VF "
				  "(mode: sriov)",
				  "NIC '%s' of KVM host '%s' cannot be in pvrdma mode",
				  h->nics[i].pci ? h->nics[i].pci : "?", q(h->name));
	}
	if (h->vgpu != NULL) {
		if (h->vgpu->bundle != NULL || h->vgpu->vib != NULL)
			spec_diag(k->x, GC_SEV_ERROR, h->vgpu->mark,
				  "a KVM host's vGPU manager is NVIDIA's Linux KVM package: keep "
				  "release: and install it with the host's packages (docs/kvm.md)",
				  "'bundle' and 'vib' are ESXi VIBs, not for KVM host '%s'", q(h->name));
		if (h->vgpu->release == NULL)
			spec_diag(k->x, GC_SEV_ERROR, h->vgpu->mark,
				  "add release: \"17.0\": it picks mediated devices or SR-IOV VFs "
				  "(docs/kvm.md)",
				  "the vgpu section of KVM host '%s' needs 'release'", q(h->name));
	}
	if (h->libvirt_uri != NULL || h->address == NULL)
		return;
	if (loopback(h->address)) {
		h->libvirt_uri = "qemu:///system";
		return;
	}
	gc_buf_puts(&b, "qemu+ssh://");
	if (cr != NULL && cr->username != NULL && gc_valid_name(cr->username))
		gc_buf_printf(&b, "%s@", cr->username);
	gc_buf_printf(&b, strchr(h->address, ':') ? "[%s]" : "%s", h->address);
	if (h->ssh.port != 0 && h->ssh.port != 22)
		gc_buf_printf(&b, ":%u", h->ssh.port);
	gc_buf_puts(&b, "/system");
	if (cr != NULL && cr->key_file != NULL)
		gc_buf_printf(&b, "?keyfile=%s", cr->key_file);
	h->libvirt_uri = gc_arena_strdup(k->x->arena, gc_buf_str(&b));
	gc_buf_free(&b);
}

/* The map form's port group must be one of the NIC's own switch: that is
 * where vCenter creates the vmknic. */
static void resolve_vmknic_portgroup(struct check *k, struct gc_host_nic *n)
{
	struct gc_vmknic *v = n->vmknic_create;
	struct gc_dvswitch *d = n->dvswitch;
	struct gc_buf names = GC_BUF_INIT;

	if (v->portgroup == NULL)
		return;
	for (size_t i = 0; i < d->nportgroups; i++) {
		if (d->portgroups[i].name != NULL && strcmp(d->portgroups[i].name, v->portgroup) == 0) {
			v->pg = &d->portgroups[i];
			return;
		}
		gc_buf_printf(&names, "%s'%s'", names.len ? ", " : "", d->portgroups[i].name);
	}
	spec_diag(k->x, GC_SEV_ERROR, fmark(k, &v->portgroup, v->mark),
		  names.len ? gc_arena_printf(k->x->arena, "its port groups: %s", gc_buf_str(&names))
			    : "add it under the switch's port_groups:",
		  "no port group '%s' on distributed switch '%s'", spec_esc(k->x, v->portgroup),
		  d->name);
	gc_buf_free(&names);
}

static void check_host(struct check *k, struct gc_host *h)
{
	size_t i;

	h->credentials = resolve_cred(k, h->credentials_name, &h->credentials_name, h->mark);
	for (i = 0; h->hypervisor == GC_HV_ESXI && i < h->nnics; i++) {
		const struct gc_host_nic *n = &h->nics[i];

		if (n->device != NULL && !gc_valid_ifname(n->device))
			spec_diag(k->x, GC_SEV_ERROR, fmark(k, &n->device, n->mark),
				  "expected an ESXi device name like vmnic4 or vmk1",
				  "invalid ESXi device name '%s'", n->device);
	}
	if (h->hypervisor == GC_HV_KVM)
		check_kvm_host(k, h);
	else if (h->libvirt_uri != NULL || h->accel != NULL)
		spec_diag(k->x, GC_SEV_ERROR,
			  fmark(k, h->libvirt_uri ? (const void *)&h->libvirt_uri : &h->accel, h->mark),
			  "add hypervisor: kvm, or remove it",
			  "'%s' is for KVM hosts; host '%s' is ESXi",
			  h->libvirt_uri ? "libvirt_uri" : "accel", q(h->name));
	else if (h->vgpu != NULL && !spec_field_given(k->x, &h->vgpu->bundle) &&
		 !spec_field_given(k->x, &h->vgpu->vib))
		spec_diag(k->x, GC_SEV_ERROR, h->vgpu->mark,
			  "name the NVIDIA vGPU manager offline bundle (.zip) or .vib on the host",
			  "vgpu section needs 'bundle' or 'vib'");
	for (i = 0; i < h->ngpus; i++) {
		if (h->gpus[i].mode == GC_GPU_VGPU)
			h->needs_vgpu_manager = true;
	}
	if (h->needs_vgpu_manager && h->vgpu == NULL)
		spec_diag(k->x, GC_SEV_ERROR, h->mark,
			  "add vgpu: {bundle: /vmfs/volumes/.../NVD-AIE-....zip, ...}",
			  "host '%s' has GPUs in vgpu mode but no 'vgpu' section", q(h->name));
	else if (!h->needs_vgpu_manager && h->vgpu != NULL)
		spec_diag(k->x, GC_SEV_ERROR, h->vgpu->mark,
			  "set mode: vgpu on a GPU or remove the vgpu section",
			  "host '%s' has a vgpu section but no GPU in vgpu mode", q(h->name));
	for (i = 0; i < h->nnics; i++) {
		struct gc_host_nic *n = &h->nics[i];
		struct gc_dvs_uplink *u;
		size_t di;

		if (n->mode != GC_NIC_MODE_PVRDMA || n->dvswitch_name == NULL)
			continue;
		n->dvswitch = gc_strmap_get(&k->c->index->dvswitches, n->dvswitch_name);
		if (n->dvswitch == NULL) {
			dangling(k, fmark(k, &n->dvswitch_name, n->mark), "distributed switch",
				 n->dvswitch_name, k->dvs_names, k->ndvs_names,
				 "distributed_switches:");
			continue;
		}
		if (n->vmknic_create != NULL && k->c->vcenter == NULL)
			spec_diag(k->x, GC_SEV_ERROR, n->vmknic_create->mark,
				  "add vcenter: {url: https://..., datacenter: ..., credentials: ...}, "
				  "or name an existing vmknic: vmknic: vmkN",
				  "creating vmknic '%s' of host '%s' needs a 'vcenter' section",
				  n->vmknic_create->name ? n->vmknic_create->name : "?",
				  h->name ? h->name : "?");
		else if (n->vmknic_create != NULL)
			resolve_vmknic_portgroup(k, n);
		if (h->name == NULL)
			continue;
		di = (size_t)(n->dvswitch - k->c->dvswitches);
		u = gc_strmap_get(&k->uplinks, gc_arena_printf(&k->scratch, "%zu/%s", di, h->name));
		if (u != NULL && n->device != NULL &&
		    gc_strmap_get(&k->uplinks, gc_arena_printf(&k->scratch, "%zu/%s/%s", di,
								 h->name, n->device)) != NULL)
			continue;
		if (u == NULL)
			spec_diag(k->x, GC_SEV_ERROR, fmark(k, &n->dvswitch_name, n->mark),
				  gc_arena_printf(k->x->arena,
						  "add {host: %s, nic: %s} to its uplinks", h->name,
						  n->device ? n->device : "vmnicN"),
				  "host '%s' is not an uplink of distributed switch '%s'", h->name,
				  n->dvswitch_name);
		else if (n->device != NULL)
			spec_diag(k->x, GC_SEV_ERROR, fmark(k, &n->device, n->mark),
				  gc_arena_printf(k->x->arena,
						  "add {host: %s, nic: %s} to the uplinks of '%s'",
						  h->name, n->device, n->dvswitch_name),
				  "pvrdma NIC '%s' of host '%s' is not an uplink of distributed "
				  "switch '%s'",
				  n->device, h->name, n->dvswitch_name);
	}
	derive_nmlx5_max_vfs(k, h);
}

static void place_vms(struct check *k)
{
	struct gc_cluster *c = k->c;
	size_t i;

	for (i = 0; i < c->nvms; i++) {
		struct gc_vm *vm = &c->vms[i];

		if (vm->host_name == NULL)
			continue;
		vm->host = gc_strmap_get(&c->index->hosts, vm->host_name);
		if (vm->host == NULL)
			dangling(k, fmark(k, &vm->host_name, vm->mark), "host", vm->host_name,
				 k->host_names, k->nhost_names, "hosts:");
		else
			vm->host->nvms++;
	}
	for (i = 0; i < c->nhosts; i++) {
		c->hosts[i].vms = gc_arena_alloc(k->x->arena, sizeof(struct gc_vm *) *
								 (c->hosts[i].nvms + 1));
		c->hosts[i].nvms = 0;
	}
	for (i = 0; i < c->nvms; i++) {
		struct gc_vm *vm = &c->vms[i];

		if (vm->host != NULL)
			vm->host->vms[vm->host->nvms++] = vm;
		if (vm->guest != NULL)
			vm->guest->credentials = resolve_cred(k, vm->guest->credentials_name,
							      &vm->guest->credentials_name,
							      vm->guest->mark);
	}
}

/* ---------------------------------------------------------------- NICs */

static struct gc_host_nic *find_nic(struct check *k, struct gc_vm *vm, const char *pci,
				    struct where m)
{
	const char *key = pci_key(k, host_idx(k, vm->host), pci);
	struct gc_host_nic *n = gc_strmap_get(&k->nics, key);

	if (n != NULL)
		return n;
	if (gc_strmap_get(&k->gpus, key) != NULL)
		spec_diag(k->x, GC_SEV_ERROR, at(k, m), "GPUs go under the VM's gpus:",
			  "'%s' on host '%s' is a GPU, not a NIC", pci, q(vm->host->name));
	else
		spec_diag(k->x, GC_SEV_ERROR, at(k, m), "list it under the host's nics:",
			  "host '%s' has no NIC '%s'", q(vm->host->name), pci);
	return NULL;
}

static struct gc_portgroup *find_portgroup(struct check *k, struct gc_vm_nic *n)
{
	struct gc_portgroup *pg = gc_strmap_get(&k->c->index->portgroups, n->port_group);

	if (pg == NULL)
		dangling(k, fmark(k, &n->port_group, n->mark), "port group", n->port_group,
			 k->pg_names, k->npg_names,
			 "distributed_switches: (or use network: for a standard port group)");
	return pg;
}

static void check_vm_pvrdma(struct check *k, struct gc_vm *vm, struct gc_vm_nic *n)
{
	struct gc_host *h = vm->host;
	struct gc_dvswitch *d;
	size_t i;

	n->portgroup = find_portgroup(k, n);
	if (n->portgroup == NULL)
		return;
	d = n->portgroup->dvswitch;
	if (k->pvrdma_dvs == NULL) {
		k->pvrdma_dvs = d;
		k->pvrdma_first = vm;
	} else if (k->pvrdma_dvs != d) {
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &n->port_group, n->mark),
			  gc_arena_printf(k->x->arena,
					  "VM '%s' uses distributed switch '%s' for PVRDMA",
					  q(k->pvrdma_first->name), q(k->pvrdma_dvs->name)),
			  "all PVRDMA VMs must share one distributed switch, '%s' is another",
			  q(d->name));
	}
	for (i = 0; i < h->nnics; i++) {
		if (h->nics[i].mode == GC_NIC_MODE_PVRDMA && h->nics[i].dvswitch == d)
			return;
	}
	spec_diag(k->x, GC_SEV_ERROR, fmark(k, &n->port_group, n->mark),
		  gc_arena_printf(k->x->arena,
				  "give host '%s' a NIC with mode: pvrdma, dvswitch: %s", q(h->name),
				  q(d->name)),
		  "host '%s' has no pvrdma NIC on distributed switch '%s'", q(h->name), q(d->name));
}

static void check_vm_nics(struct check *k, struct gc_vm *vm)
{
	size_t i, base = k->nic_base[host_idx(k, vm->host)];

	for (i = 0; i < vm->nnics; i++) {
		struct gc_vm_nic *n = &vm->nics[i];
		struct gc_host_nic *hn;
		size_t ord;

		switch (n->kind) {
		case GC_VMNIC_VIRTIO:
			break;
		case GC_VMNIC_VMXNET3:
			if (n->port_group != NULL)
				n->portgroup = find_portgroup(k, n);
			break;
		case GC_VMNIC_PVRDMA:
			if (n->port_group != NULL)
				check_vm_pvrdma(k, vm, n);
			break;
		case GC_VMNIC_SRIOV:
			if (n->port_group != NULL)
				n->portgroup = find_portgroup(k, n);
			if (n->pf == NULL)
				break;
			hn = find_nic(k, vm, n->pf, (struct where){&n->pf, n->mark});
			if (hn == NULL)
				break;
			if (hn->mode != GC_NIC_MODE_SRIOV) {
				spec_diag(k->x, GC_SEV_ERROR, fmark(k, &n->pf, n->mark),
					  "set mode: sriov and vfs: N on the host NIC",
					  "NIC '%s' on host '%s' is not in sriov mode", n->pf,
					  q(vm->host->name));
				break;
			}
			n->nic = hn;
			ord = base + (size_t)(hn - vm->host->nics);
			if (++k->vf_used[ord] > hn->vfs)
				spec_diag(k->x, GC_SEV_ERROR, fmark(k, &n->pf, n->mark),
					  gc_arena_printf(k->x->arena,
							  "raise vfs on the host NIC (at most %u for "
							  "%s)",
							  hn->max_vfs ? hn->max_vfs : hn->vfs,
							  hn->model_name ? hn->model_name : "it"),
					  "NIC '%s' on host '%s' has only %u VF%s", n->pf,
					  q(vm->host->name), hn->vfs, hn->vfs == 1 ? "" : "s");
			break;
		case GC_VMNIC_PASSTHROUGH:
			if (n->host_pci == NULL)
				break;
			hn = find_nic(k, vm, n->host_pci, (struct where){&n->host_pci, n->mark});
			if (hn == NULL)
				break;
			if (hn->mode != GC_NIC_MODE_PASSTHROUGH) {
				spec_diag(k->x, GC_SEV_ERROR, fmark(k, &n->host_pci, n->mark),
					  "set mode: passthrough on the host NIC",
					  "NIC '%s' on host '%s' is not in passthrough mode",
					  n->host_pci, q(vm->host->name));
				break;
			}
			ord = base + (size_t)(hn - vm->host->nics);
			if (k->nic_owner[ord] != NULL) {
				spec_diag(k->x, GC_SEV_ERROR, fmark(k, &n->host_pci, n->mark),
					  "a passthrough NIC belongs to one VM",
					  "NIC '%s' on host '%s' is already passed through to VM "
					  "'%s'",
					  n->host_pci, q(vm->host->name), q(k->nic_owner[ord]->name));
				break;
			}
			k->nic_owner[ord] = vm;
			n->nic = hn;
			break;
		}
	}
}

/* ---------------------------------------------------------------- VM derived values */

static unsigned mmio_for(unsigned gb)
{
	unsigned p = 1;

	if (gb == 0)
		return 0;
	while (p <= gb && p < (1u << 30))
		p <<= 1;
	return p;
}

/*
 * license.feature_type (gridd.conf FeatureType).  NVIDIA's client licensing
 * guide and NVML's nvmlGridLicenseFeatureCode_t: 1 is NVIDIA vGPU, the
 * edition following the profile's series; 2 (RTX vWS) and 4 (vCS) license a
 * passthrough GPU, and which one is the edition the user holds.  VMware's
 * GPUs-for-ML guide: "Set the FeatureType entry to 1.  This is for GRID
 * vGPU." (shared/REAL-FORMATS.md C.8; issue 14, item 9.)
 */
static void derive_feature_type(struct check *k, struct gc_vm *vm, struct gc_license *l)
{
	if (spec_field_given(k->x, &l->feature_type)) {
		if (vm->has_vgpu && l->feature_type != 1)
			spec_diag(k->x, GC_SEV_WARNING, fmark(k, &l->feature_type, l->mark),
				  "a vGPU is licensed with feature_type: 1 (the edition follows the "
				  "vgpu profile); leave feature_type out",
				  "feature_type %u on VM '%s', which has a vGPU", l->feature_type,
				  q(vm->name));
		return;
	}
	if (vm->has_vgpu) {
		l->feature_type = 1;
		return;
	}
	spec_diag(k->x, GC_SEV_ERROR, l->mark,
		  "add feature_type: 2 (RTX vWS) or 4 (Virtual Compute Server), the edition "
		  "licensed for it",
		  "the license of VM '%s' needs 'feature_type': %s", q(vm->name),
		  vm->ngpus > 0 ? "its GPUs are passed through, not vGPUs" : "it has no vGPU");
}

/* What one hypervisor's VMs have and the other's do not. */
static void check_vm_hypervisor(struct check *k, struct gc_vm *vm)
{
	struct spec_ctx *x = k->x;
	size_t i;

	if (vm->host->hypervisor == GC_HV_ESXI) {
		static const char *const kvm_only[] = {"image", "pool", "disk_gb"};
		const void *f[] = {&vm->image, &vm->pool, &vm->disk_gb};

		for (i = 0; i < GC_ARRAY_LEN(f); i++)
			if (spec_field_given(x, f[i]))
				spec_diag(x, GC_SEV_ERROR, fmark(k, f[i], vm->mark),
					  "an ESXi VM is cloned from template:",
					  "'%s' is for VMs on KVM hosts; host '%s' is ESXi",
					  kvm_only[i], q(vm->host->name));
		for (i = 0; i < vm->nnics; i++)
			if (vm->nics[i].kind == GC_VMNIC_VIRTIO)
				spec_diag(x, GC_SEV_ERROR, vm->nics[i].mark,
					  "ESXi VMs take type: vmxnet3",
					  "a virtio NIC is for VMs on KVM hosts; host '%s' is ESXi",
					  q(vm->host->name));
		return;
	}
	if (spec_field_given(x, &vm->template_name))
		spec_diag(x, GC_SEV_ERROR, fmark(k, &vm->template_name, vm->mark),
			  "a KVM VM's disk is a qcow2 overlay of image: PATH (a base image on the "
			  "host)",
			  "'template' is for VMs on ESXi hosts; host '%s' is KVM", q(vm->host->name));
	if (vm->image == NULL)
		spec_diag(x, GC_SEV_ERROR, vm->mark,
			  "add image: /var/lib/libvirt/images/BASE.qcow2 (cloned as a qcow2 overlay)",
			  "VM '%s' on KVM host '%s' needs 'image'", q(vm->name), q(vm->host->name));
	if (vm->pool == NULL)
		vm->pool = "default";
	for (i = 0; i < vm->ngpus; i++)
		if (vm->gpus[i].kind == GC_VMGPU_DYNAMIC)
			spec_diag(x, GC_SEV_ERROR, fmark(k, &vm->gpus[i].pci_id, vm->gpus[i].mark),
				  "name the GPU with host_pci: (libvirt passes one PCI device through)",
				  "pci_id (dynamic DirectPath) is an ESXi feature; host '%s' is KVM",
				  q(vm->host->name));
	for (i = 0; i < vm->nnics; i++) {
		struct gc_vm_nic *n = &vm->nics[i];

		if (n->kind == GC_VMNIC_VMXNET3 || n->kind == GC_VMNIC_PVRDMA)
			spec_diag(x, GC_SEV_ERROR, n->mark,
				  "on KVM use type: virtio (a libvirt network) or type: sriov",
				  "a %s NIC is an ESXi adapter; host '%s' is KVM",
				  n->kind == GC_VMNIC_VMXNET3 ? "vmxnet3" : "pvrdma",
				  q(vm->host->name));
		else if (n->port_group != NULL)
			spec_diag(x, GC_SEV_ERROR, fmark(k, &n->port_group, n->mark),
				  "on KVM name a libvirt network: network: NAME",
				  "port groups are vCenter's; host '%s' is KVM", q(vm->host->name));
	}
}

static void derive_vm(struct check *k, struct gc_vm *vm)
{
	bool pt_gpu = false, needs_full;
	unsigned mmio;
	size_t i;

	for (i = 0; i < vm->ngpus; i++) {
		struct gc_vm_gpu *g = &vm->gpus[i];

		if (g->kind == GC_VMGPU_VGPU) {
			vm->has_vgpu = true;
		} else if (g->host_pci != NULL || g->pci_id != NULL) {
			pt_gpu = true;
			vm->passthrough_gb += g->memory_gb;
		}
	}
	for (i = 0; i < vm->nnics; i++) {
		enum gc_vm_nic_kind kind = vm->nics[i].kind;

		if (kind == GC_VMNIC_SRIOV || kind == GC_VMNIC_PASSTHROUGH)
			vm->has_passthrough = true;
		if (kind == GC_VMNIC_PVRDMA)
			vm->has_pvrdma = true;
	}
	vm->has_passthrough = vm->has_passthrough || pt_gpu;

	mmio = mmio_for(vm->passthrough_gb);
	if (vm->mmio_size_gb != 0 && vm->mmio_size_gb < mmio)
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &vm->mmio_size_gb, vm->mark),
			  gc_arena_printf(k->x->arena,
					  "needs at least %u (the next power of two above %u GB of "
					  "passthrough GPU memory)",
					  mmio, vm->passthrough_gb),
			  "mmio_size_gb %u is too small for VM '%s'", vm->mmio_size_gb, q(vm->name));
	vm->mmio_gb = vm->mmio_size_gb != 0 ? vm->mmio_size_gb : mmio;
	vm->use_64bit_mmio = vm->mmio_gb > 0;

	/* A clone that needs no EFI keeps its template's firmware (NULL: not
	 * managed): the OS it brings was installed for that firmware and does
	 * not boot after a change (issue 14, item 5; the vCenter driver refuses
	 * a VM whose firmware must differ from its template's). */
	if (vm->firmware == NULL && (vm->has_passthrough || vm->has_vgpu))
		vm->firmware = "efi";
	else if (vm->firmware == NULL && !(vm->template_name != NULL && vm->host != NULL &&
					   vm->host->hypervisor == GC_HV_ESXI))
		vm->firmware = "bios";
	else if (vm->firmware != NULL && pt_gpu && strcmp(vm->firmware, "bios") == 0)
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &vm->firmware, vm->mark),
			  "GPUs with large BARs need 64-bit MMIO, which needs EFI: firmware: efi",
			  "VM '%s' passes GPUs through and cannot boot with bios firmware",
			  q(vm->name));

	needs_full = vm->has_passthrough || vm->has_vgpu;
	if (needs_full && vm->reserve_all_memory == GC_FALSE)
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &vm->reserve_all_memory, vm->mark),
			  "passthrough and vGPU devices need all guest memory reserved",
			  "VM '%s' has %s and needs reserve_all_memory: true", q(vm->name),
			  vm->has_passthrough ? "passthrough devices" : "a vGPU");
	vm->reservation_full = needs_full || vm->reserve_all_memory == GC_TRUE;
	vm->live_migratable = !vm->has_passthrough;

	if (vm->has_vgpu && vm->guest != NULL && vm->guest->license == NULL)
		spec_diag(k->x, GC_SEV_WARNING, vm->guest->mark,
			  "add license: {server: HOST} or license: {token_file: PATH}",
			  "VM '%s' has a vGPU but its guest has no license", q(vm->name));
	if (vm->guest != NULL && vm->guest->license != NULL)
		derive_feature_type(k, vm, vm->guest->license);
}

/* ---------------------------------------------------------------- driver */

void spec_check(struct spec_ctx *x)
{
	struct check k;
	size_t i;

	memset(&k, 0, sizeof(k));
	k.x = x;
	k.c = x->c;
	index_all(&k);
	index_pci(&k);
	check_vcenter(&k);
	check_dvswitches(&k);
	for (i = 0; i < k.c->nhosts; i++)
		check_host(&k, &k.c->hosts[i]);
	place_vms(&k);
	chk_assign_gpus(&k);
	for (i = 0; i < k.c->nvms; i++) {
		if (k.c->vms[i].host != NULL) {
			check_vm_nics(&k, &k.c->vms[i]);
			check_vm_hypervisor(&k, &k.c->vms[i]);
		}
		derive_vm(&k, &k.c->vms[i]);
	}
	for (i = 0; i < k.c->nswitches; i++) {
		struct gc_switch *s = &k.c->switches[i];

		s->credentials = resolve_cred(&k, s->credentials_name, &s->credentials_name, s->mark);
	}
	chk_roce(&k);
	chk_releases(&k);

	gc_strmap_clear(&k.gpus);
	gc_strmap_clear(&k.nics);
	gc_strmap_clear(&k.gpu_any);
	gc_strmap_clear(&k.uplinks);
	gc_arena_free(&k.scratch);
}
