/*
 * record.c - a KVM host's facts as its resources' observed properties.
 *
 * The rule of every recorder: exactly the keys the desired resource has,
 * spelled as the graph spells them, so a setting that holds compares equal
 * and a drifted one shows as precisely that property.
 *
 * Kernel arguments follow the ESXi evidence rule: they are recorded as the
 * boot loader will boot them (so an apply whose reboot is still owed does
 * not write them again), and the running kernel's /proc/cmdline says
 * whether a reboot is owed (gc_kvm_reboot_pending).  When the boot loader's
 * view cannot be read, the running kernel's arguments stand for both.
 * Files the driver writes (udev rules, modules-load.d) are compared with
 * what the renderer would write now; a hand edit reads as "different".
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/kvm.h"

static void put(struct gc_observed *obs, const struct gc_resource *r, const char *key,
                const char *value)
{
	if (gc_resource_prop(r, key) != NULL)
		gc_observed_set(obs, r->id, key, value ? value : "");
}

/* ---------------------------------------------------------------- kernel arguments */

const char *gc_kvm_iommu_key(const struct gc_kvm_facts *f)
{
	const char *v = f->cpu_vendor;

	if (v == NULL)
		return NULL;
	if (strcmp(v, "GenuineIntel") == 0)
		return "intel_iommu";
	/* Hygon's Dhyana is AMD's Zen and takes the AMD IOMMU driver */
	if (strcmp(v, "AuthenticAMD") == 0 || strcmp(v, "HygonGenuine") == 0)
		return "amd_iommu";
	return NULL;
}

const char *gc_kvm_arg(const char *cmdline, const char *key, char *buf, size_t n)
{
	size_t kl = strlen(key);
	const char *p = cmdline, *found = NULL;
	size_t fn = 0;

	while (p != NULL && *p) {
		size_t wn;

		p += strspn(p, " \t\n");
		wn = strcspn(p, " \t\n");
		if (wn == 0)
			break;
		/* the kernel stops at "--": what follows is init's */
		if (wn == 2 && p[0] == '-' && p[1] == '-')
			break;
		if (wn >= kl && memcmp(p, key, kl) == 0 && (wn == kl || p[kl] == '=')) {
			found = wn == kl ? p + wn : p + kl + 1;
			fn = wn == kl ? 0 : wn - kl - 1;
		}
		p += wn;
	}
	if (found == NULL)
		return NULL;
	snprintf(buf, n, "%.*s", (int)fn, found);
	return buf;
}

/* The two IOMMU settings a command line gives: "on"/"off" for the vendor's
 * key, the iommu= mode or "none". */
static void iommu_of(const char *cmdline, const char *key, char *on, size_t non, char *mode,
                     size_t nmode)
{
	char v[64];

	snprintf(on, non, "%s",
	         gc_kvm_arg(cmdline, key, v, sizeof(v)) && strcmp(v, "on") == 0 ? "on" : "off");
	snprintf(mode, nmode, "%s", gc_kvm_arg(cmdline, "iommu", v, sizeof(v)) ? v : "none");
}

bool gc_kvm_reboot_pending(const struct gc_kvm_facts *f, char *why, size_t n)
{
	const char *key = gc_kvm_iommu_key(f);
	char con[8], cmode[64], ron[8], rmode[64];

	if (key == NULL || f->configured == NULL || f->cmdline == NULL)
		return false;
	iommu_of(f->configured, key, con, sizeof(con), cmode, sizeof(cmode));
	iommu_of(f->cmdline, key, ron, sizeof(ron), rmode, sizeof(rmode));
	if (strcmp(con, ron) == 0 && strcmp(cmode, rmode) == 0)
		return false;
	snprintf(why, n,
	         "kernel arguments %s=%s iommu=%s configured, the running kernel has %s=%s "
	         "iommu=%s",
	         key, con, cmode, key, ron, rmode);
	return true;
}

static void record_iommu(struct gc_observed *obs, const char *host, const struct gc_resource *r,
                         const struct gc_kvm_facts *f, struct gc_buf *problems)
{
	const char *key = gc_kvm_iommu_key(f);
	char on[8], mode[64], ron[8], rmode[64];

	if (key == NULL) {
		gc_buf_printf(problems,
		              "host '%s': CPU vendor '%s' is neither Intel nor AMD: "
		              "intel_iommu/amd_iommu do not apply\n",
		              host, f->cpu_vendor ? f->cpu_vendor : "(none in /proc/cpuinfo)");
		return;
	}
	iommu_of(f->configured ? f->configured : f->cmdline, key, on, sizeof(on), mode,
	         sizeof(mode));
	put(obs, r, "iommu", on);
	put(obs, r, "iommu_mode", mode);
	iommu_of(f->cmdline, key, ron, sizeof(ron), rmode, sizeof(rmode));
	if (strcmp(ron, "on") == 0 && f->iommu_groups == 0)
		gc_buf_printf(problems,
		              "host '%s' runs with %s=on but has no IOMMU groups: turn on %s "
		              "in its firmware\n",
		              host, key,
		              strcmp(key, "intel_iommu") == 0 ? "VT-d" : "AMD-Vi (IOMMU)");
	if ((strcmp(on, "on") != 0 || strcmp(mode, "pt") != 0) && f->loader == GC_KVM_LOADER_NONE)
		gc_buf_printf(
		    problems,
		    "host '%s' has neither update-grub nor grubby: cannot set the "
		    "kernel arguments %s=on iommu=pt (set them in its boot loader by hand)\n",
		    host, key);
}

/* ---------------------------------------------------------------- devices */

static const char *id_key(const struct gc_resource *r)
{
	const char *slash = strrchr(r->id, '/');

	return slash ? slash + 1 : r->id;
}

/* "true" when the file holds exactly what we would write, "different" when
 * it holds something else, "false" when it is not there. */
static const char *file_state(const struct gc_kvm_facts *f, const char *path, const char *want)
{
	const char *have = gc_kvm_file(f, path);

	if (have == NULL)
		return "false";
	return strcmp(have, want) == 0 ? "true" : "different";
}

static const struct gc_kvm_dev *present(const char *host, const char *pci,
                                        const struct gc_kvm_facts *f, struct gc_buf *problems)
{
	const struct gc_kvm_dev *d = gc_kvm_dev(f, pci);

	if (d == NULL || !d->present) {
		gc_buf_printf(problems, "host '%s' has no PCI device %s\n", host, pci ? pci : "?");
		return NULL;
	}
	return d;
}

static void record_vfio(struct gc_observed *obs, const char *host, const struct gc_resource *r,
                        const struct gc_kvm_facts *f, struct gc_buf *problems)
{
	const char *pci = id_key(r);
	const struct gc_kvm_dev *d = present(host, pci, f, problems);
	char path[160];
	char *rule, *mods;
	const char *st;

	if (d == NULL)
		return;
	put(obs, r, "driver", d->driver ? d->driver : "none");
	gc_kvm_rule_path(path, sizeof(path), "vfio", pci);
	rule = gc_kvm_render_vfio_rule(pci);
	mods = gc_kvm_render_vfio_modules();
	st = file_state(f, path, rule);
	if (strcmp(st, "true") == 0)
		st = file_state(f, GC_KVM_VFIO_MODULES, mods);
	put(obs, r, "persistent", st);
	free(rule);
	free(mods);
}

static void record_sriov(struct gc_observed *obs, const char *host, const struct gc_resource *r,
                         const struct gc_kvm_facts *f, struct gc_buf *problems)
{
	const char *pci = id_key(r), *want = gc_resource_prop(r, "numvfs");
	const struct gc_kvm_dev *d = present(host, pci, f, problems);
	unsigned n = want ? (unsigned)strtoul(want, NULL, 10) : 0;
	char path[160], num[16];
	char *rule;

	if (d == NULL)
		return;
	if (d->totalvfs < 0) {
		gc_buf_printf(problems,
		              "host '%s': PCI device %s has no SR-IOV capability "
		              "(no sriov_totalvfs)\n",
		              host, pci);
		return;
	}
	if (n > (unsigned)d->totalvfs)
		gc_buf_printf(
		    problems,
		    "host '%s': PCI device %s offers %d VFs (sriov_totalvfs), the "
		    "spec asks for %u (a Mellanox NIC's limit is its firmware's NUM_OF_VFS: "
		    "mlxconfig)\n",
		    host, pci, d->totalvfs, n);
	snprintf(num, sizeof(num), "%d", d->numvfs);
	put(obs, r, "numvfs", d->numvfs >= 0 ? num : "unknown");
	gc_kvm_rule_path(path, sizeof(path), "sriov", pci);
	rule = gc_kvm_render_sriov_rule(pci, n);
	put(obs, r, "persistent", file_state(f, path, rule));
	free(rule);
}

/* ---------------------------------------------------------------- vGPUs */

/* Lower case, ' ' and '_' as '-', without a leading "grid-" or "nvidia-". */
static void profile_norm(char *out, size_t n, const char *s)
{
	size_t k = 0;

	for (; *s && k + 1 < n; s++)
		out[k++] = *s == ' ' || *s == '_' ? '-' : (char)tolower((unsigned char)*s);
	out[k] = '\0';
	if (strncmp(out, "grid-", 5) == 0)
		memmove(out, out + 5, strlen(out + 5) + 1);
	else if (strncmp(out, "nvidia-", 7) == 0)
		memmove(out, out + 7, strlen(out + 7) + 1);
}

bool gc_kvm_profile_matches(const char *profile, const char *type_name)
{
	char a[96], b[96];

	if (profile == NULL || type_name == NULL)
		return false;
	profile_norm(a, sizeof(a), profile);
	profile_norm(b, sizeof(b), type_name);
	return a[0] != '\0' && strcmp(a, b) == 0;
}

static void list_names(struct gc_buf *b, const struct gc_kvm_type *t, size_t n)
{
	for (size_t i = 0; i < n && i < 12; i++)
		gc_buf_printf(b, "%s%s", i ? ", " : "", t[i].name[0] ? t[i].name : t[i].id);
	if (n > 12)
		gc_buf_printf(b, " and %zu more", n - 12);
}

static void record_mdev(struct gc_observed *obs, const char *host, const struct gc_resource *r,
                        const struct gc_kvm_facts *f, struct gc_buf *problems)
{
	const char *parent = gc_resource_prop(r, "parent"),
	           *profile = gc_resource_prop(r, "profile");
	const struct gc_kvm_dev *d = present(host, parent, f, problems);
	const struct gc_kvm_mdev *m = gc_kvm_mdev(f, gc_resource_prop(r, "uuid"));
	const char *have = NULL;
	bool offered = false;

	if (d == NULL)
		return;
	for (size_t i = 0; i < d->ntypes; i++) {
		offered = offered || gc_kvm_profile_matches(profile, d->types[i].name);
		if (m != NULL && strcmp(d->types[i].id, m->type) == 0)
			have = d->types[i].name;
	}
	if (d->ntypes == 0) {
		gc_buf_printf(
		    problems,
		    "host '%s': GPU %s offers no mediated device types "
		    "(mdev_supported_types): is NVIDIA's vGPU manager for KVM installed?\n",
		    host, parent);
	} else if (!offered) {
		gc_buf_printf(problems, "host '%s': GPU %s offers no vGPU type '%s' (it offers ",
		              host, parent, profile ? profile : "");
		list_names(problems, d->types, d->ntypes);
		gc_buf_puts(problems, ")\n");
	}
	if (m == NULL)
		return; /* absent: the plan creates it */
	put(obs, r, "parent", m->parent);
	put(obs, r, "profile",
	    have == NULL                            ? m->type
	    : gc_kvm_profile_matches(profile, have) ? profile
	                                            : have);
	put(obs, r, "mechanism", "mdev");
	put(obs, r, "uuid", gc_resource_prop(r, "uuid"));
}

/* The name of a VF vGPU type id, from what any VF of that GPU lists. */
static const char *vf_type_name(const struct gc_kvm_facts *f, const char *parent, long id)
{
	char want[24];

	snprintf(want, sizeof(want), "%ld", id);
	for (size_t i = 0; i < f->nvfs; i++) {
		if (strcmp(f->vfs[i].parent, parent) != 0)
			continue;
		for (size_t k = 0; k < f->vfs[i].ncreatable; k++)
			if (strcmp(f->vfs[i].creatable[k].id, want) == 0)
				return f->vfs[i].creatable[k].name;
	}
	return NULL;
}

static void record_vf(struct gc_observed *obs, const char *host, const struct gc_resource *r,
                      const struct gc_kvm_facts *f, struct gc_buf *problems)
{
	const char *parent = gc_resource_prop(r, "parent"),
	           *profile = gc_resource_prop(r, "profile");
	const char *idx = gc_resource_prop(r, "vf"), *name;
	const struct gc_kvm_vf *v;
	char unknown[48];

	if (present(host, parent, f, problems) == NULL || idx == NULL)
		return;
	v = gc_kvm_vf(f, parent, (unsigned)strtoul(idx, NULL, 10));
	if (v == NULL || !v->present || v->current <= 0)
		return; /* no VF yet, or no type on it: the plan sets it */
	name = vf_type_name(f, parent, v->current);
	snprintf(unknown, sizeof(unknown), "vGPU type %ld", v->current);
	put(obs, r, "parent", parent);
	put(obs, r, "profile",
	    name == NULL                            ? unknown
	    : gc_kvm_profile_matches(profile, name) ? profile
	                                            : name);
	put(obs, r, "mechanism", "vf");
	put(obs, r, "vf", idx);
}

void gc_kvm_record(struct gc_observed *obs, const char *host, const struct gc_resource *const *res,
                   size_t nres, const struct gc_kvm_facts *f, struct gc_buf *problems)
{
	/* an if chain: only kvm kinds are a KVM host's resources */
	for (size_t i = 0; i < nres; i++) {
		const struct gc_resource *r = res[i];
		const char *mech = gc_resource_prop(r, "mechanism");

		if (r->kind == GC_RES_KVM_IOMMU)
			record_iommu(obs, host, r, f, problems);
		else if (r->kind == GC_RES_KVM_VFIO)
			record_vfio(obs, host, r, f, problems);
		else if (r->kind == GC_RES_KVM_SRIOV)
			record_sriov(obs, host, r, f, problems);
		else if (r->kind == GC_RES_KVM_VGPU && mech != NULL && strcmp(mech, "vf") == 0)
			record_vf(obs, host, r, f, problems);
		else if (r->kind == GC_RES_KVM_VGPU)
			record_mdev(obs, host, r, f, problems);
	}
}
