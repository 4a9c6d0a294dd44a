/*
 * releases.c - rules that hold only for some releases of the software the
 * spec names, checked where the spec says which release it is.
 *
 *   - ECC on vGPU hosts: NVIDIA vGPU software added ECC memory support in
 *     release 9.0 (the 9.0 release notes, "New Features in Release 9.0:
 *     Error correcting code (ECC) memory support"); before it ECC must be
 *     off on a GPU that runs vGPUs (REAL-FORMATS E; the GPUs-for-ML guide:
 *     `nvidia-smi -e 0` and a reboot).  An ESXi host whose vgpu.release is
 *     below 9.0 and whose spec leaves ECC on, or does not manage it, is
 *     warned with the fix.  (KVM hosts have no ecc key to manage.)
 *   - vGPU vMotion: vSphere supports live migration of vGPU VMs from 6.7
 *     Update 1 (vSphere's "Virtual Machine Conditions and Limitations for
 *     vMotion"; vCenter's advanced setting vgpu.hotmigrate.enabled, which
 *     the graph manages).  A vGPU VM on a host whose `version` is below 6.7
 *     is not live-migratable: with rolling.allow_vmotion it is powered off
 *     for its host's maintenance, as a passthrough VM is.  6.7 itself
 *     cannot be told from 6.7 U1 by the spec's version; vCenter's own
 *     answer decides there (no such setting before 6.7 U1: the vCenter
 *     driver reports it).
 *
 *   - esxcli namespaces: `esxcli hardware pci pcipassthru` (list, set)
 *     came with ESXi 7.0 and `esxcli system ntp` (get, set) with 7.0
 *     Update 1, 7.0.1 (VMware's esxcli command references: the 6.7
 *     reference lists neither namespace, the 7.0 reference lists
 *     `hardware pci pcipassthru`, 7.0 U1's What's New names `esxcli system
 *     ntp`).  A host whose version is older gets its passthrough or NTP
 *     through vCenter (the derived passthru_via_vcenter, ntp_via_vcenter:
 *     HostPciPassthruSystem.UpdatePassthruConfig and
 *     HostDateTimeSystem.UpdateDateTimeConfig, in the vSphere API since
 *     4.0), so a spec that asks for either without a vcenter section is an
 *     error at the host's version.
 *
 * Versions are compared by their first three numbers ("8.0" < "9.0",
 * "6.5.0" < "6.7", "7.0" < "7.0.1"; a missing number is 0); a version that
 * does not start with digits is not compared.  Private to src/spec; runs
 * after the VMs are derived.
 */
#include <stdlib.h>

#include "check.h"

bool gc_version_before(const char *v, long major, long minor, long patch)
{
	const long want[3] = {major, minor, patch};
	long have[3] = {0, 0, 0};
	const char *p = v;
	char *end;

	if (v == NULL || *v < '0' || *v > '9')
		return false;
	for (int i = 0; i < 3; i++) {
		have[i] = strtol(p, &end, 10);
		if (*end != '.' || end[1] < '0' || end[1] > '9')
			break;
		p = end + 1;
	}
	for (int i = 0; i < 3; i++)
		if (have[i] != want[i])
			return have[i] < want[i];
	return false;
}

static bool before(const char *v, long major, long minor, long patch)
{
	return gc_version_before(v, major, minor, patch);
}

static void check_ecc(struct check *k, const struct gc_host *h)
{
	const struct gc_vgpu_host *g = h->vgpu;

	if (h->hypervisor != GC_HV_ESXI || g == NULL || !before(g->release, 9, 0, 0))
		return;
	if (g->ecc == GC_TRUE)
		spec_diag(k->x, GC_SEV_WARNING, fmark(k, &g->ecc, g->mark),
			  "set ecc: false (nvidia-smi -e 0 on each vGPU GPU, then the host's reboot)",
			  "host '%s' runs vGPU release %s with ECC on: releases before 9.0 need ECC "
			  "off on vGPU GPUs",
			  q(h->name), g->release);
	else if (g->ecc == GC_UNSET)
		spec_diag(k->x, GC_SEV_WARNING, fmark(k, &g->release, g->mark),
			  "add ecc: false to the vgpu section: gpuclusterctl then turns it off "
			  "(nvidia-smi -e 0, one reboot)",
			  "host '%s' runs vGPU release %s, which needs ECC off on vGPU GPUs, and "
			  "the spec does not manage ECC",
			  q(h->name), g->release);
}

static bool wants_passthru(const struct gc_host *h)
{
	for (size_t i = 0; i < h->ngpus; i++)
		if (h->gpus[i].mode == GC_GPU_PASSTHROUGH)
			return true;
	for (size_t i = 0; i < h->nnics; i++)
		if (h->nics[i].mode == GC_NIC_MODE_PASSTHROUGH)
			return true;
	return false;
}

/* Which host settings go through vCenter for want of an esxcli namespace
 * (the header); an error when the spec has no vCenter for them. */
static void check_namespaces(struct check *k, struct gc_host *h)
{
	if (h->hypervisor != GC_HV_ESXI)
		return;
	h->passthru_via_vcenter = before(h->version, 7, 0, 0);
	h->ntp_via_vcenter = before(h->version, 7, 0, 1);
	if (k->c->vcenter != NULL)
		return;
	if (h->passthru_via_vcenter && wants_passthru(h))
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &h->version, h->mark),
			  "add a vcenter section: passthrough is then set through it "
			  "(HostPciPassthruSystem.UpdatePassthruConfig)",
			  "host '%s' runs ESXi %s, which has no 'esxcli hardware pci pcipassthru' "
			  "(ESXi 7.0 and later): its passthrough needs vCenter",
			  q(h->name), h->version);
	if (h->ntp_via_vcenter && h->nntp > 0)
		spec_diag(k->x, GC_SEV_ERROR, fmark(k, &h->version, h->mark),
			  "add a vcenter section: NTP is then set through it "
			  "(HostDateTimeSystem.UpdateDateTimeConfig)",
			  "host '%s' runs ESXi %s, which has no 'esxcli system ntp' (ESXi 7.0 "
			  "Update 1 and later): its NTP needs vCenter",
			  q(h->name), h->version);
}

void chk_releases(struct check *k)
{
	struct gc_cluster *c = k->c;

	for (size_t i = 0; i < c->nhosts; i++) {
		check_ecc(k, &c->hosts[i]);
		check_namespaces(k, &c->hosts[i]);
	}
	for (size_t i = 0; i < c->nvms; i++) {
		struct gc_vm *vm = &c->vms[i];

		if (vm->has_vgpu && vm->host != NULL && vm->host->hypervisor == GC_HV_ESXI &&
		    before(vm->host->version, 6, 7, 0))
			vm->live_migratable = false;
	}
}
