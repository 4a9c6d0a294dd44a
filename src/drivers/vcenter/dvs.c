/*
 * dvs.c - distributed switches: create one, add host members with their
 * uplink pnics, add a port group with a VLAN, change a port group's VLAN.
 *
 * Each is one *_Task waited for through gc_vcenter_run_task() (vmops.c).
 * Bodies follow govmomi's vim25/types/types.go element order:
 *
 *   CreateDVS_Task(spec: DVSCreateSpec{configSpec xsi:type=VMwareDVSConfigSpec})
 *   VMwareDVSConfigSpec = DVSConfigSpec{configVersion, name, ..., host[] ...}
 *                         then its own {..., maxMtu, ...}
 *   host[] = DistributedVirtualSwitchHostMemberConfigSpec{operation, host,
 *            backing xsi:type=DistributedVirtualSwitchHostMemberPnicBacking
 *            {pnicSpec[]{pnicDevice}}}: one per host, with every pNIC of
 *            its proxy switch (the backing is "a set of physical NICs to
 *            use for a proxy switch", vSphere API reference)
 *   AddDVPortgroup_Task(spec[]: DVPortgroupConfigSpec{configVersion, name,
 *            numPorts, portNameFormat, defaultPortConfig, description, type})
 *   defaultPortConfig xsi:type=VMwareDVSPortSetting{vlan
 *            xsi:type=VmwareDistributedVirtualSwitchVlanIdSpec{inherited, vlanId}}
 *
 * The _this of a switch method is typed VmwareDistributedVirtualSwitch, the
 * type vCenter gives every switch made from a VMwareDVSConfigSpec; vCenter
 * does not find an object by a moref of another type.  (vcsim 0.24 itself
 * registers its switches as DistributedVirtualSwitch; the lab's stand-in
 * translates, see docs/vcenter.md.)
 */
#include <string.h>

#include "gc/pattern.h"
#include "soap.h"

#define DVS_TYPE "VmwareDistributedVirtualSwitch"
#define MTU_MAX 9000 /* vSphere's largest switch MTU */
#define PORTS_DEFAULT 8 /* an early-binding group's ports; vCenter grows it (autoExpand) */

static bool name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 80)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

static int check_mtu(const struct gc_vcenter_conn *vc, const char *what, int mtu,
		     struct gc_error *err)
{
	if (mtu < 0 || mtu > MTU_MAX)
		return gc_error_set(err, GC_EINVAL, "%s: %s: mtu %d is not 0 (unchanged) to %d",
				    vc->target, what, mtu, MTU_MAX);
	return 0;
}

/* ---------------------------------------------------------------- CreateDVS_Task */

void gc_vcenter_create_dvs_body(struct gc_vcenter_soap *s, const char *folder, const char *name,
				int mtu)
{
	gc_vcenter_soap_begin(s, "CreateDVS_Task", "Folder", folder);
	gc_vcenter_soap_open(s, "spec", NULL);
	gc_vcenter_soap_open(s, "configSpec", "VMwareDVSConfigSpec");
	gc_vcenter_soap_elem(s, "name", name);
	if (mtu > 0)
		gc_vcenter_soap_int(s, "maxMtu", mtu);
	gc_vcenter_soap_close(s, "configSpec");
	gc_vcenter_soap_close(s, "spec");
}

int gc_vcenter_create_dvs(char *out, size_t n, struct gc_vcenter_conn *vc, const char *folder,
			  const char *name, int mtu, unsigned timeout_ms, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	int rc;

	if (!name_ok(name))
		return gc_error_set(err, GC_EINVAL, "%s: CreateDVS_Task: switch name '%s' is "
				    "empty, longer than 80 bytes or holds a control character",
				    vc->target, name ? name : "");
	if (folder == NULL || folder[0] == '\0')
		return gc_error_set(err, GC_EINVAL, "%s: CreateDVS_Task: no network folder",
				    vc->target);
	rc = check_mtu(vc, "CreateDVS_Task", mtu, err);
	if (rc < 0)
		return rc;
	gc_vcenter_create_dvs_body(&s, folder, name, mtu);
	return gc_vcenter_run_task(vc, &s, folder, timeout_ms, out, n, err);
}

/* ---------------------------------------------------------------- ReconfigureDvs_Task */

void gc_vcenter_reconfigure_dvs_body(struct gc_vcenter_soap *s, const char *dvs,
				     const char *config_version, int mtu,
				     const struct gc_vcenter_dvs_uplink *add, size_t nadd)
{
	gc_vcenter_soap_begin(s, "ReconfigureDvs_Task", DVS_TYPE, dvs);
	gc_vcenter_soap_open(s, "spec", "VMwareDVSConfigSpec");
	if (config_version != NULL)
		gc_vcenter_soap_elem(s, "configVersion", config_version);
	for (size_t i = 0; i < nadd; i++) {
		gc_vcenter_soap_open(s, "host", NULL);
		gc_vcenter_soap_elem(s, "operation", add[i].edit ? "edit" : "add");
		gc_vcenter_soap_moref(s, "host", "HostSystem", add[i].host);
		gc_vcenter_soap_open(s, "backing", "DistributedVirtualSwitchHostMemberPnicBacking");
		for (size_t j = 0; j < add[i].npnics; j++) {
			gc_vcenter_soap_open(s, "pnicSpec", NULL);
			gc_vcenter_soap_elem(s, "pnicDevice", add[i].pnics[j]);
			gc_vcenter_soap_close(s, "pnicSpec");
		}
		gc_vcenter_soap_close(s, "backing");
		gc_vcenter_soap_close(s, "host");
	}
	if (mtu > 0)
		gc_vcenter_soap_int(s, "maxMtu", mtu);
	gc_vcenter_soap_close(s, "spec");
}

int gc_vcenter_reconfigure_dvs(struct gc_vcenter_conn *vc, const char *dvs,
			       const char *config_version, int mtu,
			       const struct gc_vcenter_dvs_uplink *add, size_t nadd,
			       unsigned timeout_ms, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	int rc = check_mtu(vc, "ReconfigureDvs_Task", mtu, err);

	if (rc < 0)
		return rc;
	if (dvs == NULL || dvs[0] == '\0')
		return gc_error_set(err, GC_EINVAL, "%s: ReconfigureDvs_Task: no switch",
				    vc->target);
	for (size_t i = 0; i < nadd; i++) {
		if (add[i].host == NULL || add[i].host[0] == '\0')
			return gc_error_set(err, GC_EINVAL, "%s: ReconfigureDvs_Task of %s: "
					    "member %zu has no host", vc->target, dvs, i);
		for (size_t j = 0; j < add[i].npnics; j++)
			if (add[i].pnics[j] == NULL || !gc_valid_ifname(add[i].pnics[j]))
				return gc_error_set(err, GC_EINVAL, "%s: ReconfigureDvs_Task of %s: "
						    "pnic '%s' of %s is not a NIC name (vmnic5)",
						    vc->target, dvs,
						    add[i].pnics[j] ? add[i].pnics[j] : "",
						    add[i].host);
	}
	gc_vcenter_reconfigure_dvs_body(&s, dvs, config_version, mtu, add, nadd);
	return gc_vcenter_run_task(vc, &s, dvs, timeout_ms, NULL, 0, err);
}

/* ---------------------------------------------------------------- port groups */

static void vlan_setting(struct gc_vcenter_soap *s, int vlan)
{
	gc_vcenter_soap_open(s, "defaultPortConfig", "VMwareDVSPortSetting");
	gc_vcenter_soap_open(s, "vlan", "VmwareDistributedVirtualSwitchVlanIdSpec");
	gc_vcenter_soap_elem(s, "inherited", "false");
	gc_vcenter_soap_int(s, "vlanId", vlan);
	gc_vcenter_soap_close(s, "vlan");
	gc_vcenter_soap_close(s, "defaultPortConfig");
}

static int check_vlan(const struct gc_vcenter_conn *vc, const char *what, int vlan,
		      struct gc_error *err)
{
	if (vlan < 0 || vlan > 4094)
		return gc_error_set(err, GC_EINVAL, "%s: %s: VLAN %d is not 0 (none) to 4094",
				    vc->target, what, vlan);
	return 0;
}

void gc_vcenter_add_portgroup_body(struct gc_vcenter_soap *s, const char *dvs, const char *name,
				   int vlan)
{
	gc_vcenter_soap_begin(s, "AddDVPortgroup_Task", DVS_TYPE, dvs);
	gc_vcenter_soap_open(s, "spec", NULL);
	gc_vcenter_soap_elem(s, "name", name);
	gc_vcenter_soap_int(s, "numPorts", PORTS_DEFAULT);
	vlan_setting(s, vlan);
	gc_vcenter_soap_elem(s, "type", "earlyBinding");
	gc_vcenter_soap_elem(s, "autoExpand", "true");
	gc_vcenter_soap_close(s, "spec");
}

int gc_vcenter_add_portgroup(struct gc_vcenter_conn *vc, const char *dvs, const char *name,
			     int vlan, unsigned timeout_ms, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	int rc = check_vlan(vc, "AddDVPortgroup_Task", vlan, err);

	if (rc < 0)
		return rc;
	if (!name_ok(name))
		return gc_error_set(err, GC_EINVAL, "%s: AddDVPortgroup_Task: port group name '%s' "
				    "is empty, longer than 80 bytes or holds a control character",
				    vc->target, name ? name : "");
	if (dvs == NULL || dvs[0] == '\0')
		return gc_error_set(err, GC_EINVAL, "%s: AddDVPortgroup_Task: no switch",
				    vc->target);
	gc_vcenter_add_portgroup_body(&s, dvs, name, vlan);
	return gc_vcenter_run_task(vc, &s, dvs, timeout_ms, NULL, 0, err);
}

void gc_vcenter_portgroup_vlan_body(struct gc_vcenter_soap *s, const char *portgroup,
				    const char *config_version, int vlan)
{
	gc_vcenter_soap_begin(s, "ReconfigureDVPortgroup_Task", "DistributedVirtualPortgroup",
			      portgroup);
	gc_vcenter_soap_open(s, "spec", NULL);
	if (config_version != NULL)
		gc_vcenter_soap_elem(s, "configVersion", config_version);
	vlan_setting(s, vlan);
	gc_vcenter_soap_close(s, "spec");
}

int gc_vcenter_portgroup_vlan(struct gc_vcenter_conn *vc, const char *portgroup,
			      const char *config_version, int vlan, unsigned timeout_ms,
			      struct gc_error *err)
{
	struct gc_vcenter_soap s;
	int rc = check_vlan(vc, "ReconfigureDVPortgroup_Task", vlan, err);

	if (rc < 0)
		return rc;
	if (portgroup == NULL || portgroup[0] == '\0')
		return gc_error_set(err, GC_EINVAL, "%s: ReconfigureDVPortgroup_Task: no port "
				    "group", vc->target);
	gc_vcenter_portgroup_vlan_body(&s, portgroup, config_version, vlan);
	return gc_vcenter_run_task(vc, &s, portgroup, timeout_ms, NULL, 0, err);
}
