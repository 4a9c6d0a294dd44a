/*
 * vmknic.c - the PVRDMA vmknic: a VMkernel adapter that vCenter creates on
 * a distributed port group (the map form of a pvrdma NIC's `vmknic:`).
 *
 * The observation batch reads every host's config.network.vnic and
 * configManager.networkSystem (observe.c).  A dvs.vmknic resource is
 * recorded when the host has an adapter with the spec's device name: its
 * switch (by the switch uuid of its distributed port), port group (by the
 * port group key) and address (ipAddress plus the prefix length of
 * subnetMask, or "dhcp").
 *
 * Creating it is HostNetworkSystem.AddVirtualNic with portgroup "" and a
 * HostVirtualNicSpec {ip{dhcp false, ipAddress, subnetMask},
 * distributedVirtualPort{switchUuid, portgroupKey}} (element order of
 * govmomi's vim25/types/types.go; vSphere Web Services API reference,
 * HostNetworkSystem.AddVirtualNic: "portgroup: ... empty string if the
 * nic is being connected to a DistributedVirtualPort", returns "the device
 * name of the new virtual NIC").  vCenter picks the device itself (the
 * lowest free vmkN).  The spec's name is what the host's /Net/PVRDMAVmknic
 * tag will say, so when vCenter returns another name the action fails,
 * naming it: tagging the returned device would leave the spec and the host
 * disagreeing at every later plan, and tagging the spec's would tag the
 * wrong adapter.  Nothing is created when another adapter already sits on
 * the port group (a run whose reply was lost, or a hand-made one): the
 * error names it so the spec can.
 *
 * An adapter that exists with another address is changed with
 * UpdateVirtualNic; one that is not on a distributed port (vmk0, the
 * management network) is never moved: that is refused.  The action itself
 * (which of the two, the checks, the returned name) is in changes.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/pattern.h"
#include "soap.h"
#include "vcdrv.h"

/* "vmk" and 1-4 digits: the names the spec accepts (P_VMKNIC). */
static bool vmk_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n > 3 && n <= 7 && strncmp(s, "vmk", 3) == 0 && strspn(s + 3, "0123456789") == n - 3;
}

/* A moref, a switch uuid or a port group key: printable, no markup, bounded. */
static bool token_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f || strchr("<>&'\"", s[i]))
			return false;
	return true;
}

static void mask_of(char *out, size_t n, unsigned prefix)
{
	unsigned long m = prefix == 0 ? 0 : (0xffffffffUL << (32 - prefix)) & 0xffffffffUL;

	snprintf(out, n, "%lu.%lu.%lu.%lu", (m >> 24) & 255, (m >> 16) & 255, (m >> 8) & 255,
		 m & 255);
}

/* The prefix length of a dotted mask, or -1 when it is not a contiguous mask. */
static int prefix_of(const char *mask)
{
	unsigned a, b, c, d;
	unsigned long m;
	int bits = 0;

	if (mask == NULL || sscanf(mask, "%3u.%3u.%3u.%3u", &a, &b, &c, &d) != 4 || a > 255 ||
	    b > 255 || c > 255 || d > 255)
		return -1;
	m = ((unsigned long)a << 24) | (b << 16) | (c << 8) | d;
	while (bits < 32 && (m & (0x80000000UL >> bits)))
		bits++;
	return ((m << bits) & 0xffffffffUL) == 0 ? bits : -1;
}

/* ---------------------------------------------------------------- SOAP */

static void nic_spec(struct gc_vcenter_soap *s, const struct gc_vcenter_vnic_spec *v)
{
	char mask[16];

	mask_of(mask, sizeof(mask), v->prefix);
	gc_vcenter_soap_open(s, "nic", NULL);
	gc_vcenter_soap_open(s, "ip", NULL);
	gc_vcenter_soap_elem(s, "dhcp", "false");
	gc_vcenter_soap_elem(s, "ipAddress", v->ip);
	gc_vcenter_soap_elem(s, "subnetMask", mask);
	gc_vcenter_soap_close(s, "ip");
	gc_vcenter_soap_open(s, "distributedVirtualPort", NULL);
	gc_vcenter_soap_elem(s, "switchUuid", v->switch_uuid);
	gc_vcenter_soap_elem(s, "portgroupKey", v->portgroup_key);
	gc_vcenter_soap_close(s, "distributedVirtualPort");
	gc_vcenter_soap_close(s, "nic");
}

static int check_spec(const struct gc_vcenter_conn *vc, const char *method, const char *netsys,
		      const struct gc_vcenter_vnic_spec *v, struct gc_error *err)
{
	char cidr[32];

	snprintf(cidr, sizeof(cidr), "%s/%u", v->ip ? v->ip : "", v->prefix);
	if (!token_ok(netsys))
		return gc_error_set(err, GC_EINVAL, "%s: %s: no network system", vc->target, method);
	if (!gc_valid_ipv4_cidr(cidr))
		return gc_error_set(err, GC_EINVAL, "%s: %s: '%s' is not an IPv4 address with a "
				    "prefix length", vc->target, method, cidr);
	if (!token_ok(v->switch_uuid) || !token_ok(v->portgroup_key))
		return gc_error_set(err, GC_EINVAL, "%s: %s: no distributed switch uuid or port "
				    "group key", vc->target, method);
	return 0;
}

void gc_vcenter_add_vnic_body(struct gc_vcenter_soap *s, const char *network_system,
			      const struct gc_vcenter_vnic_spec *spec)
{
	gc_vcenter_soap_begin(s, "AddVirtualNic", "HostNetworkSystem", network_system);
	gc_vcenter_soap_elem(s, "portgroup", "");
	nic_spec(s, spec);
}

void gc_vcenter_update_vnic_body(struct gc_vcenter_soap *s, const char *network_system,
				 const char *device, const struct gc_vcenter_vnic_spec *spec)
{
	gc_vcenter_soap_begin(s, "UpdateVirtualNic", "HostNetworkSystem", network_system);
	gc_vcenter_soap_elem(s, "device", device);
	nic_spec(s, spec);
}

int gc_vcenter_add_vnic(char *out, size_t n, struct gc_vcenter_conn *vc, const char *network_system,
			const struct gc_vcenter_vnic_spec *spec, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	int rc = check_spec(vc, "AddVirtualNic", network_system, spec, err);

	if (rc < 0)
		return rc;
	gc_vcenter_add_vnic_body(&s, network_system, spec);
	rc = gc_vcenter_soap_end(&s, vc, err);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, &s, &doc, &ret, err);
	gc_vcenter_soap_free(&s);
	if (rc == 0) {
		gc_vcenter_xml_copy(out, n, ret, "returnval");
		if (!vmk_ok(out))
			rc = gc_error_set(err, GC_EREMOTE, "%s: AddVirtualNic on %s returned no "
					  "VMkernel adapter name", vc->target, network_system);
	}
	xmlFreeDoc(doc);
	return rc;
}

int gc_vcenter_update_vnic(struct gc_vcenter_conn *vc, const char *network_system,
			   const char *device, const struct gc_vcenter_vnic_spec *spec,
			   struct gc_error *err)
{
	struct gc_vcenter_soap s;
	int rc = check_spec(vc, "UpdateVirtualNic", network_system, spec, err);

	if (rc < 0)
		return rc;
	if (!vmk_ok(device))
		return gc_error_set(err, GC_EINVAL, "%s: UpdateVirtualNic: '%s' is not a VMkernel "
				    "adapter name", vc->target, device ? device : "");
	gc_vcenter_update_vnic_body(&s, network_system, device, spec);
	return gc_vcenter_soap_run(vc, &s, err);
}

/* ---------------------------------------------------------------- record */

const struct gc_vcenter_vnic *gc_vcdrv_find_vnic(const struct gc_vcenter_host *vh,
					       const char *device)
{
	for (size_t i = 0; vh != NULL && device != NULL && i < vh->nvnics; i++)
		if (strcmp(vh->vnics[i].device, device) == 0)
			return &vh->vnics[i];
	return NULL;
}

static const struct gc_vcenter_dvs *dvs_by_uuid(const struct gc_vcenter_inventory *inv,
						const char *uuid)
{
	for (size_t i = 0; uuid != NULL && i < inv->ndvs; i++)
		if (inv->dvs[i].uuid != NULL && strcmp(inv->dvs[i].uuid, uuid) == 0)
			return &inv->dvs[i];
	return NULL;
}

static const struct gc_vcenter_network *pg_by_key(const struct gc_vcenter_inventory *inv,
						  const char *key)
{
	for (size_t i = 0; key != NULL && i < inv->nnetworks; i++)
		if (inv->networks[i].portgroup_key != NULL &&
		    strcmp(inv->networks[i].portgroup_key, key) == 0)
			return &inv->networks[i];
	return NULL;
}

void gc_vcdrv_record_vmknic(struct gc_observed *obs, const struct gc_vcenter_inventory *inv,
			    const struct gc_cluster *c, const struct gc_resource *r)
{
	const struct gc_host *h = gc_cluster_host(c, r->host);
	const struct gc_vcenter_vnic *v = gc_vcdrv_find_vnic(gc_vcdrv_host(inv, h),
						    gc_resource_prop(r, "device"));
	const struct gc_vcenter_dvs *d;
	const struct gc_vcenter_network *pg;
	char addr[64];

	if (v == NULL)
		return;
	d = dvs_by_uuid(inv, v->switch_uuid);
	pg = pg_by_key(inv, v->portgroup_key);
	gc_observed_add(obs, r->id);
	gc_observed_set(obs, r->id, "host", r->host);
	gc_observed_set(obs, r->id, "device", v->device);
	gc_observed_set(obs, r->id, "dvswitch", d ? d->name : "");
	gc_observed_set(obs, r->id, "portgroup", pg ? pg->name : v->portgroup ? v->portgroup : "");
	if (v->dhcp)
		snprintf(addr, sizeof(addr), "dhcp");
	else
		snprintf(addr, sizeof(addr), "%s/%d", v->ip ? v->ip : "", prefix_of(v->mask));
	gc_observed_set(obs, r->id, "address", addr);
}
