/*
 * esxi.c - one ESXi host's observation (the driver's gc_esxi_facts) as
 * discover's JSON: version, GPUs and NICs by PCI address with the model
 * the spec's hardware tables give them, their mode as the host has it
 * configured, NTP, VIBs, and the commands this ESXi release lacks.
 *
 * Nothing here parses device text: the ESXi driver's observation batch
 * (src/drivers/esxi/observe.c) did, with libxml2.  This file only decides
 * what the facts mean for a spec:
 *   - a GPU is an NVIDIA (0x10de) function of class 0x03xx; its model is
 *     the table row with its PCI device id;
 *   - a NIC is a Mellanox (0x15b3) function of class 0x0200 (Ethernet) or
 *     0x0207 (InfiniBand); its model is the table name the PCI id
 *     database's device name holds ("MT27800 Family [ConnectX-5]", the
 *     names esxcli prints are pci.ids'), the earliest and longest match;
 *   - passthrough is the configured owner (`pcipassthru list`, or `pci
 *     list`'s Configured Owner where the release lacks that namespace:
 *     ESXi 6.7 answers `Unknown command or namespace`);
 *   - SR-IOV VFs are nmlx5_core's max_vfs, one value per nmlx5_core port in
 *     PCI order, passthrough ports not counted: the inverse of the spec's
 *     derived host.nmlx5_max_vfs (docs/spec-reference.md).
 */
#include <stdlib.h>
#include <string.h>

#include "discover_int.h"
#include "gc/json.h"
#include "gc/pattern.h"

static bool class_is(const struct gc_esxi_pci *d, const char *prefix)
{
	return d->class_id != NULL && strncmp(d->class_id, prefix, strlen(prefix)) == 0;
}

static bool is_gpu(const struct gc_esxi_pci *d)
{
	return d->vendor_id != NULL && strcmp(d->vendor_id, "0x10de") == 0 &&
	       (class_is(d, "0x030") || (d->class_id != NULL && d->class_id[0] == '\0'));
}

static bool is_mellanox_nic(const struct gc_esxi_pci *d)
{
	return d->vendor_id != NULL && strcmp(d->vendor_id, "0x15b3") == 0 &&
	       (class_is(d, "0x0200") || class_is(d, "0x0207"));
}

static const struct gc_gpu_model *gpu_model(const struct gc_esxi_pci *d)
{
	size_t n, i;
	const struct gc_gpu_model *m = gc_gpu_models(&n);
	unsigned long id = d->device_id ? strtoul(d->device_id, NULL, 16) : 0;

	for (i = 0; i < n; i++)
		if (m[i].vendor_id == 0x10de && m[i].device_id == id)
			return &m[i];
	return NULL;
}

static const struct gc_nic_model *nic_model(const char *device_name)
{
	size_t n, i;
	const struct gc_nic_model *m = gc_nic_models(&n), *best = NULL;
	const char *best_at = NULL;

	for (i = 0; device_name != NULL && i < n; i++) {
		const char *at = strstr(device_name, m[i].name);
		size_t len = strlen(m[i].name);
		char after = at ? at[len] : '\0';

		/* a whole name: "ConnectX-6" is not found in "ConnectX-6 Dx]" as the
		 * better match, the longer row is */
		if (at == NULL || (after != '\0' && after != ']' && after != ' '))
			continue;
		if (best == NULL || at < best_at || (at == best_at && len > strlen(best->name))) {
			best = &m[i];
			best_at = at;
		}
	}
	return best;
}

/* Configured for passthrough: `pcipassthru list` when the host has it,
 * else `pci list`'s Configured Owner. */
static bool passthru_configured(const struct gc_esxi_facts *f, const struct gc_esxi_pci *d)
{
	int p = gc_esxi_facts_passthru(f, d->pci);

	return p >= 0 ? p == 1 : d->configured_passthru;
}

static void add_str(json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, v && *v ? gc_json_text(v) : NULL);
}

static json_object *gpu_json(const struct gc_esxi_facts *f, const struct gc_esxi_pci *d)
{
	json_object *o = json_object_new_object();
	const struct gc_gpu_model *m = gpu_model(d);
	bool pt = passthru_configured(f, d);
	bool shared = f->graphics_default_type &&
		      strcmp(f->graphics_default_type, "SharedPassthru") == 0;

	json_object_object_add(o, "pci", gc_json_text(d->pci));
	add_str(o, "vendor_id", d->vendor_id);
	add_str(o, "device_id", d->device_id);
	add_str(o, "device_name", d->device_name);
	json_object_object_add(o, "model", m ? json_object_new_string(m->name) : NULL);
	json_object_object_add(o, "memory_gb", m ? json_object_new_int((int)m->memory_gb) : NULL);
	json_object_object_add(o, "mode",
			       json_object_new_string(pt ? "passthrough" : shared ? "vgpu" : "unused"));
	json_object_object_add(o, "passthru_configured", json_object_new_boolean(pt));
	json_object_object_add(o, "passthru_active", json_object_new_boolean(d->current_passthru));
	return o;
}

/* max_vfs's value for the idx-th nmlx5_core port ("4,0,8"); 0 past the end. */
static unsigned vfs_of_port(const char *max_vfs, size_t idx)
{
	const char *p = max_vfs;

	for (size_t i = 0; p != NULL && i < idx; i++) {
		p = strchr(p, ',');
		if (p != NULL)
			p++;
	}
	if (p == NULL || *p < '0' || *p > '9')
		return 0;
	return (unsigned)strtoul(p, NULL, 10);
}

static json_object *nic_json(const struct gc_esxi_facts *f, const struct gc_esxi_pci *d,
			     size_t *nmlx5_port)
{
	json_object *o = json_object_new_object();
	const struct gc_nic_model *m = nic_model(d->device_name);
	bool pt = passthru_configured(f, d);
	const char *mode = "none";
	unsigned vfs = 0;

	/* a port passthrough owns runs no nmlx5_core and takes no max_vfs slot */
	if (pt) {
		mode = "passthrough";
	} else if (m != NULL && strcmp(m->driver, "nmlx5_core") == 0) {
		vfs = vfs_of_port(gc_esxi_facts_nmlx5_param(f, "max_vfs"), (*nmlx5_port)++);
		if (vfs > 0)
			mode = "sriov";
	}
	json_object_object_add(o, "pci", gc_json_text(d->pci));
	add_str(o, "vendor_id", d->vendor_id);
	add_str(o, "device_id", d->device_id);
	add_str(o, "device_name", d->device_name);
	add_str(o, "vmnic", gc_valid_ifname(d->vmkernel_name) ? d->vmkernel_name : NULL);
	add_str(o, "module", d->module_name);
	json_object_object_add(o, "model", m ? json_object_new_string(m->name) : NULL);
	json_object_object_add(o, "max_vfs", m ? json_object_new_int((int)m->max_vfs) : NULL);
	json_object_object_add(o, "mode", json_object_new_string(mode));
	json_object_object_add(o, "vfs", vfs ? json_object_new_int((int)vfs) : NULL);
	return o;
}

static json_object *other_pci_json(const struct gc_esxi_pci *d)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "pci", gc_json_text(d->pci));
	add_str(o, "vendor_id", d->vendor_id);
	add_str(o, "device_id", d->device_id);
	add_str(o, "device_name", d->device_name);
	add_str(o, "class", d->class_id);
	add_str(o, "vmnic", gc_valid_ifname(d->vmkernel_name) ? d->vmkernel_name : NULL);
	return o;
}

/* NTP servers when NTP is on, [] when off, null when unknown (no `system
 * ntp` namespace before ESXi 7.0). */
static json_object *ntp_json(const struct gc_esxi_facts *f)
{
	json_object *a;
	char *copy, *save = NULL, *tok;

	if (f->ntp_servers == NULL)
		return NULL;
	a = json_object_new_array();
	if (!f->ntp_enabled)
		return a;
	copy = gc_xstrdup(f->ntp_servers);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (gc_valid_host(tok))
			json_object_array_add(a, json_object_new_string(tok));
	free(copy);
	return a;
}

/* "esxcli --formatter=xml system ntp get: command failed" -> "system ntp get" */
static json_object *unavailable_json(const struct gc_esxi_facts *f)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < f->nfailed; i++) {
		const char *s = f->failed[i], *colon = strstr(s, ": ");
		size_t skip = strncmp(s, "esxcli --formatter=xml ", 23) == 0 ? 23 : 0;
		size_t n = (colon ? (size_t)(colon - s) : strlen(s)) - skip;
		char *cmd = gc_xasprintf("%.*s", (int)n, s + skip);

		json_object_array_add(a, json_object_new_string(cmd));
		free(cmd);
	}
	return a;
}

static int cmp_pci(const void *a, const void *b)
{
	const struct gc_esxi_pci *const *x = a, *const *y = b;

	return strcmp((*x)->pci, (*y)->pci);
}

static void add_devices(json_object *o, const struct gc_esxi_facts *f)
{
	json_object *gpus = json_object_new_array(), *nics = json_object_new_array();
	json_object *other = json_object_new_array();
	const struct gc_esxi_pci **sorted = gc_xcalloc(f->npci + 1, sizeof(*sorted));
	size_t i, port = 0;

	for (i = 0; i < f->npci; i++)
		sorted[i] = &f->pci[i];
	qsort(sorted, f->npci, sizeof(*sorted), cmp_pci);
	for (i = 0; i < f->npci; i++) {
		const struct gc_esxi_pci *d = sorted[i];

		if (!gc_valid_pci(d->pci))
			continue;
		if (is_gpu(d))
			json_object_array_add(gpus, gpu_json(f, d));
		else if (is_mellanox_nic(d))
			json_object_array_add(nics, nic_json(f, d, &port));
		else if (class_is(d, "0x02"))
			json_object_array_add(other, other_pci_json(d));
	}
	free(sorted);
	json_object_object_add(o, "gpus", gpus);
	json_object_object_add(o, "nics", nics);
	json_object_object_add(o, "other_nics", other);
}

void discover_esxi_json(json_object *o, const struct gc_esxi_facts *f)
{
	json_object *vibs = json_object_new_array();
	const char *mv = gc_esxi_facts_nmlx5_param(f, "max_vfs");

	add_str(o, "version", gc_valid_version(f->version) ? f->version : NULL);
	add_str(o, "build", f->build);
	json_object_object_add(o, "maintenance", json_object_new_boolean(f->maintenance));
	add_str(o, "graphics_default_type", f->graphics_default_type);
	add_devices(o, f);
	add_str(o, "nmlx5_max_vfs", mv);
	json_object_object_add(o, "ntp", ntp_json(f));
	for (size_t i = 0; i < f->nvibs; i++) {
		json_object *v = json_object_new_object();

		json_object_object_add(v, "name", gc_json_text(f->vibs[i].name));
		json_object_object_add(v, "version", gc_json_text(f->vibs[i].version));
		json_object_array_add(vibs, v);
	}
	json_object_object_add(o, "vibs", vibs);
	json_object_object_add(o, "reboot_pending", json_object_new_boolean(f->reboot_pending));
	json_object_object_add(o, "unavailable", unavailable_json(f));
}
