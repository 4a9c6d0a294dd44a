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
 * Versions are compared by their first two numbers ("8.0" < "9.0",
 * "6.5.0" < "6.7"); a version that does not start with digits is not
 * compared.  Private to src/spec; runs after the VMs are derived.
 */
#include <stdlib.h>

#include "check.h"

/* Whether v ("8.0", "6.5.0", "16") is before major.minor; false when v is
 * NULL or does not start with a number. */
static bool before(const char *v, long major, long minor)
{
	char *end;
	long a, b = 0;

	if (v == NULL || *v < '0' || *v > '9')
		return false;
	a = strtol(v, &end, 10);
	if (*end == '.' && end[1] >= '0' && end[1] <= '9')
		b = strtol(end + 1, NULL, 10);
	return a < major || (a == major && b < minor);
}

static void check_ecc(struct check *k, const struct gc_host *h)
{
	const struct gc_vgpu_host *g = h->vgpu;

	if (h->hypervisor != GC_HV_ESXI || g == NULL || !before(g->release, 9, 0))
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

void chk_releases(struct check *k)
{
	struct gc_cluster *c = k->c;

	for (size_t i = 0; i < c->nhosts; i++)
		check_ecc(k, &c->hosts[i]);
	for (size_t i = 0; i < c->nvms; i++) {
		struct gc_vm *vm = &c->vms[i];

		if (vm->has_vgpu && vm->host != NULL && vm->host->hypervisor == GC_HV_ESXI &&
		    before(vm->host->version, 6, 7))
			vm->live_migratable = false;
	}
}
