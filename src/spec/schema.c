/*
 * schema.c - the spec language: one field table per model struct and the
 * handlers for lists, enums and sub-maps, from the root map down.
 *
 * The tables (here, for VMs in schema_vm.c and for a VM's guest in
 * schema_guest.c) are the single place where a key of the spec is named;
 * the docs (docs/spec-reference.md) and the JSON schema follow them.  Handlers
 * here only check what one object can check alone (types, patterns, ranges,
 * "exactly one of", keys that do not apply to a NIC type); everything that
 * needs another object lives in check.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#include "schema_int.h"

/* A list of objects: the array is sized from the sequence; each element's
 * first member is its struct gc_mark. */
void *spec_parse_list_max(struct spec_ctx *x, struct spec_node *v, const char *key, size_t elem,
			  size_t *count, spec_item_fn item, size_t max)
{
	size_t n, i = 0;
	char *arr;

	*count = 0;
	if (v->type != SPEC_SEQ) {
		spec_type_error(x, v, key, "a list");
		return NULL;
	}
	n = v->n;
	if (n > max) {
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, v),
			  gc_arena_printf(x->arena, "only the first %zu are checked", max),
			  "'%s' lists %zu entries, at most %zu are supported", key, n, max);
		n = max;
	}
	arr = gc_arena_alloc(x->arena, elem * (n ? n : 1));
	for (; i < n; i++) {
		struct spec_node *e = v->u.items[i];
		void *p = arr + i * elem;

		if (!spec_visit(x, e))
			break;
		*(struct gc_mark *)p = spec_mark(x, e);
		item(x, e, p);
	}
	*count = i;
	return arr;
}

void *spec_parse_list(struct spec_ctx *x, struct spec_node *v, const char *key, size_t elem,
		      size_t *count, spec_item_fn item)
{
	return spec_parse_list_max(x, v, key, elem, count, item, SIZE_MAX);
}

/* A value given for a key that does not apply: error at the value. */
void spec_not_applicable(struct spec_ctx *x, const void *field, bool given, const char *key,
			 const char *what)
{
	if (given)
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, field, (struct gc_mark){0}), "remove it",
			  "'%s' does not apply to %s", key, what);
}

/* ---------------------------------------------------------------- ssh */

static const struct spec_field ssh_fields[] = {
	FUINT(struct gc_ssh, "port", port, 1, 65535, false),
	FSTR(struct gc_ssh, "known_hosts", known_hosts, P_PATH, false),
	FBOOL(struct gc_ssh, "trust_new_host_keys", trust_new_host_keys),
	FUINT(struct gc_ssh, "connect_timeout_s", connect_timeout_s, 1, 3600, false),
	FUINT(struct gc_ssh, "command_timeout_s", command_timeout_s, 1, 86400, false),
	FUINT(struct gc_ssh, "read_timeout_s", read_timeout_s, 1, 3600, false),
	FUINT(struct gc_ssh, "keepalive_s", keepalive_s, 0, 3600, false),
	FEND(struct gc_ssh),
};

static void parse_ssh(struct spec_ctx *x, struct spec_node *v, struct gc_ssh *ssh)
{
	ssh->mark = spec_mark(x, v);
	spec_parse_map(x, v, ssh_fields, ssh, "ssh");
}

static void host_ssh(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	parse_ssh(x, v, &((struct gc_host *)obj)->ssh);
}
static void switch_ssh(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	parse_ssh(x, v, &((struct gc_switch *)obj)->ssh);
}
void spec_guest_ssh(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	parse_ssh(x, v, &((struct gc_guest *)obj)->ssh);
}

/* ---------------------------------------------------------------- credentials */

static const struct spec_field credential_fields[] = {
	FSTR(struct gc_credential, "name", name, P_NAME, true),
	FSTR(struct gc_credential, "username", username, P_USER, true),
	FSTR(struct gc_credential, "password_env", password_env, P_ENV, false),
	FSTR(struct gc_credential, "password_file", password_file, P_PATH, false),
	FSTR(struct gc_credential, "key_file", key_file, P_PATH, false),
	FSTR(struct gc_credential, "key_passphrase_env", key_passphrase_env, P_ENV, false),
	FBOOL(struct gc_credential, "agent", agent),
	FEND(struct gc_credential),
};

static void credential_item(struct spec_ctx *x, struct spec_node *n, void *elem)
{
	struct gc_credential *cr = elem;
	const char *given[4];
	size_t k = 0;

	spec_parse_map(x, n, credential_fields, cr, "credential");
	if (n->type != SPEC_MAP)
		return;
	if (spec_field_given(x, &cr->password_env))
		given[k++] = "password_env";
	if (spec_field_given(x, &cr->password_file))
		given[k++] = "password_file";
	if (spec_field_given(x, &cr->key_file))
		given[k++] = "key_file";
	if (cr->agent)
		given[k++] = "agent";
	if (k == 0)
		spec_diag(x, GC_SEV_ERROR, cr->mark,
			  "give one of password_env, password_file, key_file or agent: true",
			  "credential '%s' names no secret", cr->name ? cr->name : "?");
	else if (k > 1)
		spec_diag(x, GC_SEV_ERROR, cr->mark,
			  "keep exactly one of password_env, password_file, key_file, agent",
			  "credential '%s' gives both '%s' and '%s'", cr->name ? cr->name : "?",
			  given[0], given[1]);
	if (spec_field_given(x, &cr->key_passphrase_env) && !spec_field_given(x, &cr->key_file))
		spec_diag(x, GC_SEV_ERROR,
			  spec_field_mark(x, &cr->key_passphrase_env, cr->mark),
			  "the passphrase unlocks key_file: add key_file: PATH or remove it",
			  "'key_passphrase_env' needs 'key_file'");
}

static void root_credentials(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_cluster *c = obj;

	c->credentials = spec_parse_list(x, v, "credentials", sizeof(*c->credentials),
				    &c->ncredentials, credential_item);
}

/* ---------------------------------------------------------------- vCenter */

static const struct spec_field vcenter_fields[] = {
	FSTR(struct gc_vcenter, "url", url, P_URL, true),
	FSTR(struct gc_vcenter, "datacenter", datacenter, P_VCNAME, true),
	FSTR(struct gc_vcenter, "cluster", cluster, P_VCNAME, false),
	FSTR(struct gc_vcenter, "datastore", datastore, P_VCNAME, false),
	FSTR(struct gc_vcenter, "credentials", credentials_name, P_NAME, true),
	FSTR(struct gc_vcenter, "ca_file", ca_file, P_PATH, false),
	FBOOL(struct gc_vcenter, "insecure", insecure),
	FUINT(struct gc_vcenter, "max_tasks", max_tasks, 1, 64, false),
	FUINT(struct gc_vcenter, "max_tasks_per_host", max_tasks_per_host, 1, 16, false),
	FUINT(struct gc_vcenter, "shutdown_timeout_s", shutdown_timeout_s, 1, 3600, false),
	FEND(struct gc_vcenter),
};

static void root_vcenter(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_cluster *c = obj;
	struct gc_vcenter *vc = gc_arena_alloc(x->arena, sizeof(*vc));

	vc->mark = spec_mark(x, v);
	vc->max_tasks = 8;
	vc->max_tasks_per_host = 2;
	vc->shutdown_timeout_s = 300;
	spec_parse_map(x, v, vcenter_fields, vc, "vcenter");
	c->vcenter = vc;
}

/* ---------------------------------------------------------------- hosts */

static const char *const gpu_modes[] = {"passthrough", "vgpu", NULL};
static const char *const nic_modes[] = {"none", "sriov", "pvrdma", "passthrough", NULL};

static void gpu_mode(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_host_gpu *g = obj;
	const char *s = spec_string(x, v, "mode", P_ANY, gpu_modes);

	if (s != NULL)
		g->mode = strcmp(s, "vgpu") == 0 ? GC_GPU_VGPU : GC_GPU_PASSTHROUGH;
}

static const struct spec_field host_gpu_fields[] = {
	FSTR(struct gc_host_gpu, "pci", pci, P_PCI, true),
	FSTR(struct gc_host_gpu, "model", model_name, P_MODEL, true),
	FUINT(struct gc_host_gpu, "memory_gb", memory_gb, 1, 1024, false),
	FSUBO("mode", gpu_mode, struct gc_host_gpu, mode, false),
	FEND(struct gc_host_gpu),
};

static void unknown_model_hint(struct gc_buf *h, const char *name, bool gpu)
{
	const char *names[32];
	size_t n = 0, i, total;
	const char *best;

	if (gpu) {
		const struct gc_gpu_model *m = gc_gpu_models(&total);

		for (i = 0; i < total && n < GC_ARRAY_LEN(names); i++)
			names[n++] = m[i].name;
	} else {
		const struct gc_nic_model *m = gc_nic_models(&total);

		for (i = 0; i < total && n < GC_ARRAY_LEN(names); i++)
			names[n++] = m[i].name;
	}
	best = gc_did_you_mean(name, names, n);
	if (gpu && strcmp(name, "V100") == 0)
		gc_buf_puts(h, "ambiguous: say V100-16GB or V100-32GB");
	else if (best != NULL)
		gc_buf_printf(h, "did you mean '%s'?", best);
	else {
		gc_buf_puts(h, "known models: ");
		for (i = 0; i < n; i++)
			gc_buf_printf(h, "%s%s", i ? ", " : "", names[i]);
	}
	if (gpu && strcmp(name, "V100") != 0)
		gc_buf_puts(h, " (GPUs not in the table need memory_gb)");
	if (!gpu)
		gc_buf_puts(h, " (NICs not in the table need driver, and max_vfs for sriov)");
}

static void host_gpu_item(struct spec_ctx *x, struct spec_node *n, void *elem)
{
	struct gc_host_gpu *g = elem;

	spec_parse_map(x, n, host_gpu_fields, g, "gpu");
	if (g->model_name == NULL)
		return;
	g->model = gc_gpu_model_find(g->model_name);
	if (g->model != NULL) {
		if (g->memory_gb != 0 && g->memory_gb != g->model->memory_gb)
			spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &g->memory_gb, g->mark),
				  gc_arena_printf(x->arena, "leave memory_gb out for known models"),
				  "memory_gb %u does not match model '%s' (%u GB)", g->memory_gb,
				  g->model->name, g->model->memory_gb);
		g->memory_gb = g->model->memory_gb;
	} else if (g->memory_gb == 0) {
		struct gc_buf h = GC_BUF_INIT;

		unknown_model_hint(&h, g->model_name, true);
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &g->model_name, g->mark),
			  gc_buf_str(&h), "unknown GPU model '%s'", g->model_name);
		gc_buf_free(&h);
	}
}

static void nic_mode(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_host_nic *nic = obj;
	const char *s = spec_string(x, v, "mode", P_ANY, nic_modes);

	if (s == NULL)
		return;
	if (strcmp(s, "sriov") == 0)
		nic->mode = GC_NIC_MODE_SRIOV;
	else if (strcmp(s, "pvrdma") == 0)
		nic->mode = GC_NIC_MODE_PVRDMA;
	else if (strcmp(s, "passthrough") == 0)
		nic->mode = GC_NIC_MODE_PASSTHROUGH;
	else
		nic->mode = GC_NIC_MODE_NONE;
}

static const char *const nic_drivers[] = {"nmlx5_core", "nmlx4_core", NULL};

static void nic_driver(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_host_nic *nic = obj;
	const char *s = spec_string(x, v, "driver", P_ANY, nic_drivers);

	if (s != NULL)
		nic->driver = gc_arena_strdup(x->arena, s);
}

static const struct spec_field vmknic_fields[] = {
	FSTR(struct gc_vmknic, "name", name, P_VMKNIC, true),
	FSTR(struct gc_vmknic, "portgroup", portgroup, P_VCNAME, true),
	/* static only: the PVRDMA guides give the vmknic a fixed address */
	FSTR(struct gc_vmknic, "address", address, P_CIDR, true),
	FEND(struct gc_vmknic),
};

/* `vmknic: vmk1` tags an adapter that exists; `vmknic: {name, portgroup,
 * address}` has vCenter create it on the distributed switch first. */
static void nic_vmknic(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_host_nic *nic = obj;
	struct gc_vmknic *k;
	const char *s;

	if (v->type == SPEC_SEQ) {
		spec_type_error(x, v, "vmknic", "a string or a map");
		return;
	}
	if (v->type != SPEC_MAP) {
		s = spec_string(x, v, "vmknic", P_IFNAME, NULL);
		if (s != NULL)
			nic->vmknic = gc_arena_strdup(x->arena, s);
		return;
	}
	k = gc_arena_alloc(x->arena, sizeof(*k));
	k->mark = spec_mark(x, v);
	spec_parse_map(x, v, vmknic_fields, k, "vmknic");
	nic->vmknic_create = k;
	nic->vmknic = k->name;
}

static const struct spec_field host_nic_fields[] = {
	FSTR(struct gc_host_nic, "pci", pci, P_PCI, true),
	FSTR(struct gc_host_nic, "model", model_name, P_MODEL, true),
	FSUBO("driver", nic_driver, struct gc_host_nic, driver, false),
	FUINT(struct gc_host_nic, "max_vfs", max_vfs, 1, 1024, false),
	/* ESXi: vmnicN (checked with the host's hypervisor); KVM: the PF's Linux name */
	FSTR(struct gc_host_nic, "device", device, P_NICDEV, false),
	FSUBO("mode", nic_mode, struct gc_host_nic, mode, false),
	FUINT(struct gc_host_nic, "vfs", vfs, 1, 1024, false),
	FSUBO("vmknic", nic_vmknic, struct gc_host_nic, vmknic, false),
	FSTR(struct gc_host_nic, "dvswitch", dvswitch_name, P_NAME, false),
	FEND(struct gc_host_nic),
};

/* driver and max_vfs come from the table for known models; given, they must agree */
static void known_nic_model(struct spec_ctx *x, struct gc_host_nic *nic)
{
	const struct gc_nic_model *m = nic->model;

	if (nic->driver != NULL && strcmp(nic->driver, m->driver) != 0)
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &nic->driver, nic->mark),
			  "leave driver out for known models",
			  "driver '%s' does not match model '%s' (%s)", nic->driver, m->name,
			  m->driver);
	if (spec_field_given(x, &nic->max_vfs) && nic->max_vfs != m->max_vfs)
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &nic->max_vfs, nic->mark),
			  "leave max_vfs out for known models",
			  "max_vfs %u does not match model '%s' (%u)", nic->max_vfs, m->name,
			  m->max_vfs);
	nic->driver = gc_arena_strdup(x->arena, m->driver);
	nic->max_vfs = m->max_vfs;
}

static void host_nic_item(struct spec_ctx *x, struct spec_node *n, void *elem)
{
	struct gc_host_nic *nic = elem;
	const char *pci;

	spec_parse_map(x, n, host_nic_fields, nic, "nic");
	if (n->type != SPEC_MAP)
		return;
	pci = nic->pci ? nic->pci : "?";
	if (nic->model_name != NULL) {
		nic->model = gc_nic_model_find(nic->model_name);
		if (nic->model != NULL) {
			known_nic_model(x, nic);
		} else if (!spec_field_given(x, &nic->driver)) {
			struct gc_buf h = GC_BUF_INIT;

			unknown_model_hint(&h, nic->model_name, false);
			spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &nic->model_name, nic->mark),
				  gc_buf_str(&h), "unknown NIC model '%s'", nic->model_name);
			gc_buf_free(&h);
		}
	}
	if (nic->mode == GC_NIC_MODE_SRIOV) {
		if (!spec_field_given(x, &nic->vfs))
			spec_diag(x, GC_SEV_ERROR, nic->mark, "add vfs: N (virtual functions per port)",
				  "NIC '%s' in sriov mode needs 'vfs'", pci);
		else if (nic->driver != NULL && strcmp(nic->driver, "nmlx4_core") == 0)
			spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &nic->mode, nic->mark),
				  "how nmlx4_core takes max_vfs on ESXi is not confirmed yet; use "
				  "pvrdma or passthrough, or a ConnectX-4 or later",
				  "SR-IOV on nmlx4_core NIC '%s' (%s) is not supported", pci,
				  nic->model_name);
		else if (nic->model == NULL && nic->driver != NULL && nic->max_vfs == 0)
			spec_diag(x, GC_SEV_ERROR, nic->mark,
				  "add max_vfs: N (the most VFs per port its driver accepts)",
				  "NIC '%s' of a model not in the table needs 'max_vfs' for sriov",
				  pci);
		else if (nic->max_vfs != 0 && nic->vfs > nic->max_vfs)
			spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &nic->vfs, nic->mark),
				  gc_arena_printf(x->arena, "at most %u VFs per port",
						  nic->max_vfs),
				  "vfs %u exceeds the maximum for %s", nic->vfs, nic->model_name);
	} else {
		spec_not_applicable(x, &nic->vfs, spec_field_given(x, &nic->vfs), "vfs",
			       "a NIC that is not in sriov mode");
	}
	if (nic->mode == GC_NIC_MODE_PVRDMA) {
		if (nic->device == NULL && !spec_field_given(x, &nic->device))
			spec_diag(x, GC_SEV_ERROR, nic->mark, "add device: vmnicN (the uplink)",
				  "NIC '%s' in pvrdma mode needs 'device'", pci);
		if (nic->vmknic == NULL && !spec_field_given(x, &nic->vmknic))
			spec_diag(x, GC_SEV_ERROR, nic->mark,
				  "add vmknic: vmkN (the vmknic tagged for PVRDMA), or vmknic: {name: "
				  "vmkN, portgroup: PG, address: A.B.C.D/N} to have vCenter create it",
				  "NIC '%s' in pvrdma mode needs 'vmknic'", pci);
		if (nic->dvswitch_name == NULL && !spec_field_given(x, &nic->dvswitch_name))
			spec_diag(x, GC_SEV_ERROR, nic->mark,
				  "PVRDMA needs a distributed switch: add dvswitch: NAME",
				  "NIC '%s' in pvrdma mode needs 'dvswitch'", pci);
	} else {
		spec_not_applicable(x, &nic->vmknic, spec_field_given(x, &nic->vmknic), "vmknic",
			       "a NIC that is not in pvrdma mode");
		spec_not_applicable(x, &nic->dvswitch_name, spec_field_given(x, &nic->dvswitch_name),
			       "dvswitch", "a NIC that is not in pvrdma mode");
	}
}

static const struct spec_field vgpu_host_fields[] = {
	FSTR(struct gc_vgpu_host, "bundle", bundle, P_PATH, false),
	FSTR(struct gc_vgpu_host, "vib", vib, P_PATH, false),
	FSTR(struct gc_vgpu_host, "vib_name", vib_name, P_VERSION, false),
	FSTR(struct gc_vgpu_host, "version", version, P_VERSION, false),
	FSTR(struct gc_vgpu_host, "release", release, P_VERSION, false),
	FSTR(struct gc_vgpu_host, "default_type", default_type, P_NAME, false),
	FENUM(struct gc_vgpu_host, "assignment_policy", assignment_policy,
	      ((const char *const[]){"Performance", "Consolidation", NULL}), false),
	FTRI(struct gc_vgpu_host, "ecc", ecc),
	FEND(struct gc_vgpu_host),
};

static void host_vgpu(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_host *h = obj;
	struct gc_vgpu_host *g = gc_arena_alloc(x->arena, sizeof(*g));

	g->mark = spec_mark(x, v);
	spec_parse_map(x, v, vgpu_host_fields, g, "vgpu");
	h->vgpu = g;
	if (v->type != SPEC_MAP)
		return;
	/* neither bundle nor vib: checked with the host's hypervisor (check.c) */
	if (spec_field_given(x, &g->bundle) && spec_field_given(x, &g->vib))
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &g->vib, g->mark), "keep one of them",
			  "give either 'bundle' or 'vib', not both");
	if (g->default_type == NULL && !spec_field_given(x, &g->default_type))
		g->default_type = "SharedPassthru";
	else if (g->default_type != NULL && strcmp(g->default_type, "SharedPassthru") != 0)
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &g->default_type, g->mark),
			  "vGPU needs the host graphics type Shared Direct: default_type: "
			  "SharedPassthru",
			  "vgpu default_type must be 'SharedPassthru', got '%s'", g->default_type);
}

static void host_gpus(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_host *h = obj;
	size_t i;

	h->gpus = spec_parse_list_max(x, v, "gpus", sizeof(*h->gpus), &h->ngpus, host_gpu_item,
				 SPEC_HOST_DEVICES_MAX);
	for (i = 0; i < h->ngpus; i++)
		h->gpus[i].host = h;
}

static void host_nics(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_host *h = obj;
	size_t i;

	h->nics = spec_parse_list_max(x, v, "nics", sizeof(*h->nics), &h->nnics, host_nic_item,
				 SPEC_HOST_DEVICES_MAX);
	for (i = 0; i < h->nnics; i++)
		h->nics[i].host = h;
}

static void host_hypervisor(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_host *h = obj;
	const char *s = spec_string(x, v, "hypervisor", P_ANY,
				    (const char *const[]){"esxi", "kvm", NULL});

	if (s != NULL)
		h->hypervisor = strcmp(s, "kvm") == 0 ? GC_HV_KVM : GC_HV_ESXI;
}

static const struct spec_field host_fields[] = {
	FSTR(struct gc_host, "name", name, P_NAME, true),
	FSTR(struct gc_host, "address", address, P_HOST, true),
	FSUBO("hypervisor", host_hypervisor, struct gc_host, hypervisor, false),
	FSTR(struct gc_host, "libvirt_uri", libvirt_uri, P_LIBVIRT_URI, false),
	FENUM(struct gc_host, "accel", accel, ((const char *const[]){"kvm", "tcg", NULL}), false),
	FSTR(struct gc_host, "credentials", credentials_name, P_NAME, true),
	FSUB("ssh", host_ssh, false),
	FSTR(struct gc_host, "version", version, P_VERSION, false),
	FLIST(struct gc_host, "ntp", ntp, P_HOST),
	FSUB("gpus", host_gpus, false),
	FSUB("vgpu", host_vgpu, false),
	FSUB("nics", host_nics, false),
	FEND(struct gc_host),
};

static void host_item(struct spec_ctx *x, struct spec_node *n, void *elem)
{
	struct gc_host *h = elem;

	h->ssh = x->c->ssh_defaults;
	spec_parse_map(x, n, host_fields, h, "host");
}

static void root_hosts(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_cluster *c = obj;

	c->hosts = spec_parse_list(x, v, "hosts", sizeof(*c->hosts), &c->nhosts, host_item);
}

/* ---------------------------------------------------------------- distributed switches */

static const struct spec_field uplink_fields[] = {
	FSTR(struct gc_dvs_uplink, "host", host_name, P_NAME, true),
	FSTR(struct gc_dvs_uplink, "nic", nic, P_IFNAME, true),
	FEND(struct gc_dvs_uplink),
};

static void uplink_item(struct spec_ctx *x, struct spec_node *n, void *elem)
{
	spec_parse_map(x, n, uplink_fields, elem, "uplink");
}

static const struct spec_field portgroup_fields[] = {
	FSTR(struct gc_portgroup, "name", name, P_VCNAME, true),
	FUINT(struct gc_portgroup, "vlan", vlan, 0, 4094, false),
	FEND(struct gc_portgroup),
};

static void portgroup_item(struct spec_ctx *x, struct spec_node *n, void *elem)
{
	spec_parse_map(x, n, portgroup_fields, elem, "port group");
}

static void dvs_uplinks(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_dvswitch *d = obj;

	d->uplinks = spec_parse_list(x, v, "uplinks", sizeof(*d->uplinks), &d->nuplinks, uplink_item);
}

static void dvs_portgroups(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_dvswitch *d = obj;
	size_t i;

	d->portgroups = spec_parse_list(x, v, "port_groups", sizeof(*d->portgroups), &d->nportgroups,
				   portgroup_item);
	for (i = 0; i < d->nportgroups; i++)
		d->portgroups[i].dvswitch = d;
}

static const struct spec_field dvswitch_fields[] = {
	FSTR(struct gc_dvswitch, "name", name, P_NAME, true),
	FUINT(struct gc_dvswitch, "mtu", mtu, 1280, 9000, false),
	FSUB("uplinks", dvs_uplinks, false),
	FSUB("port_groups", dvs_portgroups, false),
	FEND(struct gc_dvswitch),
};

static void dvswitch_item(struct spec_ctx *x, struct spec_node *n, void *elem)
{
	struct gc_dvswitch *d = elem;

	d->mtu = 9000;
	spec_parse_map(x, n, dvswitch_fields, d, "distributed switch");
}

static void root_dvswitches(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_cluster *c = obj;

	c->dvswitches = spec_parse_list(x, v, "distributed_switches", sizeof(*c->dvswitches),
				   &c->ndvswitches, dvswitch_item);
}

/* ---------------------------------------------------------------- Onyx switches */

static const struct spec_field ecn_fields[] = {
	FUINT(struct gc_switch_roce, "min_kb", ecn_min_kb, 1, 100000, false),
	FUINT(struct gc_switch_roce, "max_kb", ecn_max_kb, 1, 100000, false),
	FEND(struct gc_switch_roce),
};

static void roce_ecn(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	spec_parse_map(x, v, ecn_fields, obj, "ecn");
}

static const struct spec_field roce_fields[] = {
	FENUM(struct gc_switch_roce, "mode", mode,
	      ((const char *const[]){"dscp-lossless", "oneshot", NULL}), false),
	FNUM(struct gc_switch_roce, "pool_percent", pool_percent, 1, 100),
	FINT(struct gc_switch_roce, "priority", priority, 0, 7, false),
	FSUB("ecn", roce_ecn, false),
	FINT(struct gc_switch_roce, "cnp_traffic_class", cnp_traffic_class, 0, 7, false),
	FBOOL(struct gc_switch_roce, "pfc", pfc),
	FBOOL(struct gc_switch_roce, "lldp", lldp),
	FBOOL(struct gc_switch_roce, "owned", owned),
	FEND(struct gc_switch_roce),
};

static void switch_roce(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_switch *s = obj;
	struct gc_switch_roce *r = gc_arena_alloc(x->arena, sizeof(*r));

	r->mark = spec_mark(x, v);
	r->mode = "dscp-lossless";
	r->pool_percent = 50.0;
	r->priority = 3;
	r->ecn_min_kb = 150;
	r->ecn_max_kb = 1500;
	r->cnp_traffic_class = 6;
	r->pfc = true;
	r->lldp = true;
	spec_parse_map(x, v, roce_fields, r, "roce");
	s->roce = r;
}

static const struct spec_field switch_fields[] = {
	FSTR(struct gc_switch, "name", name, P_NAME, true),
	FSTR(struct gc_switch, "address", address, P_HOST, true),
	FSTR(struct gc_switch, "credentials", credentials_name, P_NAME, true),
	FSTR(struct gc_switch, "enable_password_env", enable_password_env, P_ENV, false),
	FSUB("ssh", switch_ssh, false),
	FSTR(struct gc_switch, "model", model, P_MODEL, false),
	FSTR(struct gc_switch, "version", version, P_VERSION, false),
	FSTR(struct gc_switch, "ports", ports, P_PORTS, false),
	FSUB("roce", switch_roce, false),
	FEND(struct gc_switch),
};

static void switch_item(struct spec_ctx *x, struct spec_node *n, void *elem)
{
	struct gc_switch *s = elem;

	s->ssh = x->c->ssh_defaults;
	spec_parse_map(x, n, switch_fields, s, "switch");
}

static void root_switches(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_cluster *c = obj;

	c->switches = spec_parse_list(x, v, "switches", sizeof(*c->switches), &c->nswitches,
				 switch_item);
}

/* ---------------------------------------------------------------- policies */

/* max_unavailable_vms: a count (1-100000) or a percentage ("25%", 1-100). */
static void rolling_vms(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_rolling *r = obj;
	const char *s = v->type == SPEC_SCALAR ? v->u.value : NULL;
	const char *hint = "a number of VMs like 2, or a percentage of a role's VMs like \"25%\"";
	unsigned long n = 0;
	size_t digits = s ? strspn(s, "0123456789") : 0;

	if (s == NULL || digits == 0 || digits > 6 ||
	    (s[digits] != '\0' && strcmp(s + digits, "%") != 0)) {
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, v), hint,
			  "'max_unavailable_vms' must be a number or a percentage, got %s",
			  s ? spec_esc(x, s) : "a collection");
		return;
	}
	n = strtoul(s, NULL, 10);
	r->max_unavailable_vms_pct = s[digits] == '%';
	if (n < 1 || n > (r->max_unavailable_vms_pct ? 100u : 100000u)) {
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, v), hint,
			  "'max_unavailable_vms' must be between %s, got %s",
			  r->max_unavailable_vms_pct ? "1% and 100%" : "1 and 100000", spec_esc(x, s));
		return;
	}
	r->max_unavailable_vms = (unsigned)n;
}

static const struct spec_field rolling_fields[] = {
	FUINT(struct gc_rolling, "max_unavailable", max_unavailable, 1, 100000, false),
	FBOOL(struct gc_rolling, "allow_vmotion", allow_vmotion),
	FUINT(struct gc_rolling, "max_failures", max_failures, 0, 100000, false),
	FSUBO("max_unavailable_vms", rolling_vms, struct gc_rolling, max_unavailable_vms, false),
	FEND(struct gc_rolling),
};

static void root_rolling(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_cluster *c = obj;

	c->rolling.mark = spec_mark(x, v);
	spec_parse_map(x, v, rolling_fields, &c->rolling, "rolling");
}

static const struct spec_field validation_fields[] = {
	FNUM(struct gc_validation, "min_rdma_gbps", min_rdma_gbps, 0, 10000),
	FNUM(struct gc_validation, "max_rdma_latency_us", max_rdma_latency_us, 0, 1e6),
	FNUM(struct gc_validation, "min_h2d_gbps", min_h2d_gbps, 0, 100000),
	FNUM(struct gc_validation, "min_d2h_gbps", min_d2h_gbps, 0, 100000),
	FNUM(struct gc_validation, "min_d2d_gbps", min_d2d_gbps, 0, 100000),
	FBOOL(struct gc_validation, "require_gpudirect", require_gpudirect),
	FEND(struct gc_validation),
};

static void root_validation(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_cluster *c = obj;

	c->validation.mark = spec_mark(x, v);
	spec_parse_map(x, v, validation_fields, &c->validation, "validation");
}

/* ---------------------------------------------------------------- root */

static const struct spec_field metadata_fields[] = {
	FSTR(struct gc_cluster, "name", name, P_NAME, true),
	FSTR(struct gc_cluster, "description", description, P_TEXT, false),
	FEND(struct gc_cluster),
};

static void root_metadata(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	spec_parse_map(x, v, metadata_fields, obj, "metadata");
}

static void root_api_version(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	const char *s = spec_string(x, v, "apiVersion", P_ANY, NULL);

	if (s != NULL && strcmp(s, GC_SPEC_API_VERSION) != 0)
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, v),
			  "this version of gpuclusterctl reads apiVersion: " GC_SPEC_API_VERSION,
			  "unsupported apiVersion '%s'", spec_esc(x, s));
}

static void root_kind(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	spec_string(x, v, "kind", P_ANY, (const char *const[]){"Cluster", NULL});
}

static const struct spec_field root_fields[] = {
	FSUB("apiVersion", root_api_version, true),
	FSUB("kind", root_kind, true),
	FSUB("metadata", root_metadata, true),
	FSUB("credentials", root_credentials, false),
	FSKIP("ssh"),
	FSUB("vcenter", root_vcenter, false),
	FSUB("hosts", root_hosts, false),
	FSUB("distributed_switches", root_dvswitches, false),
	FSUB("switches", root_switches, false),
	FSUBO("vms", spec_root_vms, struct gc_cluster, vms, false),
	FSUB("rolling", root_rolling, false),
	FSUB("validation", root_validation, false),
	{.key = "x-", .type = T_SKIP, .prefix = true}, /* extension keys, e.g. for anchors */
	FEND(struct gc_cluster),
};

void spec_parse_root(struct spec_ctx *x, struct spec_node *root)
{
	struct gc_cluster *c = x->c;
	struct spec_pair *pair;

	c->mark = spec_mark(x, root);
	c->ssh_defaults.port = 22;
	c->ssh_defaults.connect_timeout_s = 10;
	c->ssh_defaults.command_timeout_s = 300;
	c->ssh_defaults.read_timeout_s = GC_SSH_READ_TIMEOUT_S;
	c->ssh_defaults.keepalive_s = 15;
	c->rolling.max_unavailable = 1;
	c->rolling.max_unavailable_vms = 1;
	if (root->type != SPEC_MAP) {
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, root),
			  "a spec starts with apiVersion: " GC_SPEC_API_VERSION,
			  "the spec must be a mapping, got %s",
			  root->type == SPEC_SEQ ? "a sequence" : "a scalar");
		return;
	}
	/* the cluster-wide ssh defaults first: every target starts from them */
	for (pair = root->u.pairs; pair < root->u.pairs + root->n; pair++) {
		struct spec_node *k = pair->key, *v = pair->value;

		if (k->type == SPEC_SCALAR &&
		    strcmp(k->u.value, "ssh") == 0) {
			parse_ssh(x, v, &c->ssh_defaults);
			break;
		}
	}
	spec_parse_map(x, root, root_fields, c, "the spec");
}
