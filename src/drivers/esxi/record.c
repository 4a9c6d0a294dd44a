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
#include <string.h>

#include "gc/esxi.h"
#include "gc/graph.h"
#include "gc/observed.h"

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

static void record_one(struct gc_observed *obs, const char *host, const struct gc_resource *r,
		       const struct gc_esxi_facts *f, struct gc_buf *problems)
{
	const char *want;
	int v;

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
		put(obs, r, "module", "nmlx5_core");
		put(obs, r, "max_vfs", gc_esxi_facts_nmlx5_param(f, "max_vfs"));
		return;
	case GC_RES_ESXI_VIB: {
		const struct gc_esxi_vib *vib = gc_esxi_facts_vib_any(f, id_key(r));

		want = gc_resource_prop(r, "name");
		if (want != NULL)
			vib = gc_esxi_facts_vib_any(f, want);
		if (vib == NULL)
			return; /* absent: the planner installs it */
		put(obs, r, "name", vib->name);
		put(obs, r, "version", vib->version);
		put(obs, r, "source", gc_resource_prop(r, "source"));
		return;
	}
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
