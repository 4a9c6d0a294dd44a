/*
 * record.c - translate one host's observed facts into the planner's
 * observed store (include/gc/observed.h), resource by resource.
 *
 * The rule that keeps the diff honest: record exactly the keys the desired
 * resource has, with values spelled the way the graph spells them ("true",
 * "enabled", comma-joined lists), so an unchanged setting compares equal and
 * a drifted one shows as precisely that property.  Pending-until-reboot
 * values are recorded as configured (so nothing is sent twice); the facts'
 * reboot_pending says a reboot is still owed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/esxi.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/spec.h"

static const char *id_key(const struct gc_resource *r)
{
	const char *slash = strrchr(r->id, '/');

	return slash ? slash + 1 : r->id;
}

static void put(struct gc_observed *obs, const struct gc_resource *r, const char *key,
		const char *value)
{
	if (gc_resource_prop(r, key) != NULL)
		gc_observed_set(obs, r->id, key, value ? value : "");
}

/*
 * A vGPU manager given without `vib_name`: the desired names and versions
 * are the VIBs its bundle holds (learned, in the bundle's order,
 * comma-joined), the observed ones those of them installed or pending in
 * the rebooting image.  None installed: absent, the planner installs it.
 * The bundle not on the host: nothing learned, the plan shows
 * GC_PROP_LEARNED and installs (the install then says what is wrong).
 */
static void record_learned_vibs(struct gc_observed *obs, const char *host,
				const struct gc_resource *r, const struct gc_esxi_facts *f,
				struct gc_buf *problems)
{
	const struct gc_vgpu_host *spec = r->target && r->target->host ? r->target->host->vgpu : NULL;
	struct gc_buf names = GC_BUF_INIT, versions = GC_BUF_INIT;
	struct gc_buf have_names = GC_BUF_INIT, have_versions = GC_BUF_INIT;
	bool version_seen = false;
	size_t i;

	if (!f->source_listed)
		return;
	for (i = 0; i < f->nsource_vibs; i++) {
		const struct gc_esxi_vib *sv = &f->source_vibs[i];
		const struct gc_esxi_vib *now = gc_esxi_facts_vib_any(f, sv->name);

		gc_buf_printf(&names, "%s%s", i ? "," : "", sv->name);
		gc_buf_printf(&versions, "%s%s", i ? "," : "", sv->version);
		if (spec != NULL && spec->version != NULL && strcmp(spec->version, sv->version) == 0)
			version_seen = true;
		if (now != NULL) {
			gc_buf_printf(&have_names, "%s%s", have_names.len ? "," : "", now->name);
			gc_buf_printf(&have_versions, "%s%s", have_versions.len ? "," : "", now->version);
		}
	}
	if (spec != NULL && spec->version != NULL && !version_seen)
		gc_buf_printf(problems, "host '%s': the bundle '%s' holds no VIB of version '%s' (it holds %s %s)\n",
			      host, gc_resource_prop(r, "source"), spec->version, gc_buf_str(&names),
			      gc_buf_str(&versions));
	gc_observed_learn(obs, r->id, "name", gc_buf_str(&names));
	gc_observed_learn(obs, r->id, "version", gc_buf_str(&versions));
	if (have_names.len > 0) {
		put(obs, r, "name", gc_buf_str(&have_names));
		put(obs, r, "version", gc_buf_str(&have_versions));
		put(obs, r, "source", gc_resource_prop(r, "source"));
	}
	gc_buf_free(&names);
	gc_buf_free(&versions);
	gc_buf_free(&have_names);
	gc_buf_free(&have_versions);
}

/* The same number however written: "8", "0x08" and "0x8" are one mask. */
static bool same_number(const char *have, const char *want)
{
	char *end1, *end2;
	unsigned long a, b;

	if (have == NULL || want == NULL || *have == '\0' || *want == '\0')
		return false;
	a = strtoul(have, &end1, 0);
	b = strtoul(want, &end2, 0);
	return *end1 == '\0' && *end2 == '\0' && a == b;
}

/*
 * nmlx5_core's parameters as `module parameters list` shows them (what is
 * configured; the running values need the reboot that the journal owes).
 * The lossless RoCE parameters are numbers however the host's string spells
 * them (an operator's pfctx=8 is the graph's 0x08).  A driver that does not
 * list trust_state, pfctx or pfcrx cannot take them: the host fails here,
 * before anything changes.  One that does not list ecn has no ECN knob to
 * set: nothing to do, as for a guest NIC without ECN knobs.
 */
static void record_nmlx5(struct gc_observed *obs, const char *host, const struct gc_resource *r,
			 const struct gc_esxi_facts *f, struct gc_buf *problems)
{
	static const char *const roce[] = {"trust_state", "pfctx", "pfcrx", "ecn"};

	put(obs, r, "module", "nmlx5_core");
	put(obs, r, "max_vfs", gc_esxi_facts_nmlx5_param(f, "max_vfs"));
	for (size_t i = 0; i < sizeof(roce) / sizeof(roce[0]); i++) {
		const char *want = gc_resource_prop(r, roce[i]);
		const char *have = gc_esxi_facts_nmlx5_param(f, roce[i]);

		if (want == NULL)
			continue;
		if (!gc_esxi_facts_nmlx5_accepts(f, roce[i])) {
			if (strcmp(roce[i], "ecn") == 0)
				put(obs, r, roce[i], want);
			else
				gc_buf_printf(problems,
					      "host '%s': its nmlx5_core driver has no parameter '%s', "
					      "which lossless RoCE needs (install a newer NVIDIA nmlx5 "
					      "driver)\n",
					      host, roce[i]);
			continue;
		}
		put(obs, r, roce[i], same_number(have, want) ? want : have);
	}
}

/*
 * An SR-IOV PF's firmware (mft.c): SRIOV_EN and NUM_OF_VFS as the next boot
 * loads them, spelled as the graph does ("true", "8"; the planner takes
 * num_of_vfs as a minimum).  Not applicable without MFT on the host, or
 * when MFT lists no device at that PCI address: recorded as desired, so
 * nothing is planned (nothing could read or set it); the driver says so in
 * a note and the VFs are checked after the reboot (sriov.c).  A device
 * whose query gave no values is left absent: the planner sets it.
 */
static void record_firmware(struct gc_observed *obs, const struct gc_resource *r,
			    const struct gc_esxi_facts *f)
{
	const struct gc_esxi_mft_dev *d = f->mft_present ? gc_esxi_facts_mft(f, id_key(r)) : NULL;
	char vfs[24];

	if (d == NULL) {
		put(obs, r, "sriov_en", gc_resource_prop(r, "sriov_en"));
		put(obs, r, "num_of_vfs", gc_resource_prop(r, "num_of_vfs"));
		return;
	}
	if (d->sriov_en < 0 || d->num_of_vfs < 0)
		return;
	snprintf(vfs, sizeof(vfs), "%ld", d->num_of_vfs);
	put(obs, r, "sriov_en", d->sriov_en ? "true" : "false");
	put(obs, r, "num_of_vfs", vfs);
}

/*
 * A resource the graph gave this host's shell that the host's release has
 * no esxcli namespace for: the spec's `version` (which picks the path, see
 * src/spec/releases.c) is missing or wrong.  Said once per resource, with
 * the fix; the resource is left unrecorded so nothing is guessed.
 */
static bool missing_namespace(const char *host, const struct gc_resource *r,
			      const struct gc_esxi_facts *f, struct gc_buf *problems)
{
	const char *ns = NULL, *since = NULL;

	if (r->kind == GC_RES_ESXI_PCI_PASSTHRU && gc_version_before(f->version, 7, 0, 0)) {
		ns = "hardware pci pcipassthru";
		since = "7.0";
	} else if (r->kind == GC_RES_ESXI_NTP && gc_version_before(f->version, 7, 0, 1)) {
		ns = "system ntp";
		since = "7.0 Update 1";
	}
	if (ns == NULL)
		return false;
	gc_buf_printf(problems,
		      "host '%s' runs ESXi %s (vmware -v), which has no 'esxcli %s' (ESXi %s and "
		      "later): set the host's version: \"%s\" in the spec, and that is set through "
		      "vCenter\n",
		      host, f->version, ns, since, f->version);
	return true;
}

/*
 * The spec's `version` against `vmware -v` (issue 12: "compared like
 * Onyx's").  The spec says as much of the version as it cares about: each
 * number it gives must be the host's ("8.0" is any 8.0.x, "8.0.2" only
 * 8.0.2; the build is never compared).  Onyx's `version` is a minimum; an
 * ESXi version is not, because it picks how the host is prepared
 * (src/spec/releases.c): a host on another release than the spec says
 * would be driven down the wrong path.
 */
bool gc_esxi_version_matches(const char *want, const char *have)
{
	const char *w = want, *h = have;

	if (want == NULL || have == NULL)
		return true;
	for (;;) {
		char *we, *he;
		long wn = strtol(w, &we, 10), hn = strtol(h, &he, 10);

		if (we == w || he == h || wn != hn)
			return strcmp(want, have) == 0;
		if (*we != '.')
			return *we == '\0' || strcmp(we, he) == 0;
		if (*he != '.')
			return false;
		w = we + 1;
		h = he + 1;
	}
}

bool gc_esxi_check_version(const char *host, const char *want, const struct gc_esxi_facts *f,
			   struct gc_buf *problems)
{
	if (gc_esxi_version_matches(want, f->version))
		return true;
	gc_buf_printf(problems,
		      "host '%s' runs ESXi %s (vmware -v), but the spec says version: \"%s\": "
		      "correct the spec's version, or bring the host to that release first "
		      "(gpuclusterctl does not upgrade ESXi)\n",
		      host, f->version, want);
	return false;
}

/* A VIB the spec names (or every one it learned), as the host lists it;
 * nothing when it is absent: the planner installs it. */
static void record_vib(struct gc_observed *obs, const char *host, const struct gc_resource *r,
		       const struct gc_esxi_facts *f, struct gc_buf *problems)
{
	const char *want = gc_resource_prop(r, "name");
	const struct gc_esxi_vib *vib;

	if (want != NULL && strcmp(want, GC_PROP_LEARNED) == 0) {
		record_learned_vibs(obs, host, r, f, problems);
		return;
	}
	vib = gc_esxi_facts_vib_any(f, want != NULL ? want : id_key(r));
	if (vib == NULL)
		return;
	put(obs, r, "name", vib->name);
	put(obs, r, "version", vib->version);
	put(obs, r, "source", gc_resource_prop(r, "source"));
}

static void record_one(struct gc_observed *obs, const char *host, const struct gc_resource *r,
		       const struct gc_esxi_facts *f, struct gc_buf *problems)
{
	const char *want;
	int v;

	if (missing_namespace(host, r, f, problems))
		return;
	switch (r->kind) {
	case GC_RES_ESXI_PCI_PASSTHRU:
		v = gc_esxi_facts_passthru(f, id_key(r));
		if (v < 0 && f->npci > 0 && gc_esxi_facts_pci(f, id_key(r)) == NULL) {
			gc_buf_printf(problems, "host '%s' has no PCI device %s\n", host, id_key(r));
			return;
		}
		put(obs, r, "enabled", v == 1 ? "true" : "false");
		return;
	case GC_RES_ESXI_MODULE_PARAM:
		if (!f->nmlx5_core_present) {
			gc_buf_printf(problems, "host '%s' has no nmlx5_core driver loaded\n", host);
			return;
		}
		record_nmlx5(obs, host, r, f, problems);
		return;
	case GC_RES_ESXI_VIB:
		record_vib(obs, host, r, f, problems);
		return;
	case GC_RES_ESXI_GRAPHICS:
		put(obs, r, "default_type", f->graphics_default_type);
		put(obs, r, "assignment_policy", f->graphics_policy);
		return;
	case GC_RES_ESXI_GPU_ECC:
		if (f->ecc_pending >= 0)
			put(obs, r, "ecc", f->ecc_pending ? "enabled" : "disabled");
		return;
	case GC_RES_ESXI_ADVANCED:
		want = gc_resource_prop(r, "option");
		if (want != NULL && strcmp(want, "/Net/PVRDMAVmknic") == 0 && f->pvrdma_vmknic != NULL) {
			put(obs, r, "option", want);
			put(obs, r, "value", f->pvrdma_vmknic);
		}
		return;
	case GC_RES_ESXI_FIREWALL:
		want = gc_resource_prop(r, "ruleset");
		v = want ? gc_esxi_facts_ruleset(f, want) : -1;
		if (v < 0) {
			gc_buf_printf(problems, "host '%s' has no firewall ruleset '%s'\n", host,
				      want ? want : "");
			return;
		}
		put(obs, r, "ruleset", want);
		put(obs, r, "enabled", v ? "true" : "false");
		return;
	case GC_RES_ESXI_NIC_FIRMWARE:
		record_firmware(obs, r, f);
		return;
	case GC_RES_ESXI_NTP:
		if (f->ntp_servers == NULL)
			return;
		put(obs, r, "servers", f->ntp_servers);
		put(obs, r, "enabled", f->ntp_enabled ? "true" : "false");
		return;
	case GC_RES_DVS:
	case GC_RES_DVS_PORTGROUP:
	case GC_RES_VM:
	case GC_RES_VM_HW:
	case GC_RES_VM_EXTRA_CONFIG:
	case GC_RES_VM_DEVICE_PCI:
	case GC_RES_VM_DEVICE_VGPU:
	case GC_RES_VM_NIC_SRIOV:
	case GC_RES_VM_NIC_PVRDMA:
	case GC_RES_VM_NIC_VMXNET3:
	case GC_RES_VM_POWER:
	case GC_RES_SWITCH_ROCE:
	case GC_RES_SWITCH_POOL:
	case GC_RES_SWITCH_QOS_TRUST:
	case GC_RES_SWITCH_ECN:
	case GC_RES_SWITCH_ETS:
	case GC_RES_SWITCH_PFC:
	case GC_RES_SWITCH_LLDP:
	case GC_RES_GUEST_DRIVER:
	case GC_RES_GUEST_RDMA_STACK:
	case GC_RES_GUEST_RDMA_IF:
	case GC_RES_GUEST_LICENSE:
	case GC_RES_GUEST_PEERMEM:
	case GC_RES_GUEST_ROCE_QOS:
	case GC_RES_GUEST_CONTAINER_TOOLKIT:
	case GC_RES_GUEST_NTP:
	case GC_RES_KVM_IOMMU:
	case GC_RES_KVM_VFIO:
	case GC_RES_KVM_SRIOV:
	case GC_RES_KVM_VGPU:
	case GC_RES_LIBVIRT_NETWORK:
	case GC_RES_VM_NIC_VIRTIO:
	case GC_RES_VM_SEED:
	case GC_RES_VCENTER_SETTING:
	case GC_RES_DVS_VMKNIC:
	case GC_RES__COUNT:
		return; /* not an ESXi-shell resource */
	}
}

void gc_esxi_record(struct gc_observed *obs, const char *host,
		    const struct gc_resource *const *res, size_t nres,
		    const struct gc_esxi_facts *facts, struct gc_buf *problems)
{
	size_t i;

	gc_observed_set_host(obs, host, facts->maintenance, true);
	for (i = 0; i < nres; i++)
		record_one(obs, host, res[i], facts, problems);
}
