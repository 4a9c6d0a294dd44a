/*
 * hostconfig.c - the SOAP bodies that set an ESXi host's passthrough and
 * NTP through vCenter, for hosts older than the esxcli namespaces that set
 * them over SSH (`hardware pci pcipassthru`: ESXi 7.0; `system ntp`: 7.0
 * Update 1; src/spec/releases.c says why).  hostchanges.c decides what to
 * send; record.c reads the host back.  The methods, none of them a task
 * (vSphere Web Services API reference, all since vSphere API 4.0):
 *
 *   HostPciPassthruSystem.UpdatePassthruConfig(config: HostPciPassthruConfig[])
 *       id, passthruEnabled; the change takes effect at the next reboot
 *   HostDateTimeSystem.UpdateDateTimeConfig(config: HostDateTimeConfig)
 *       ntpConfig.server[], the whole list
 *   HostServiceSystem.UpdateServicePolicy(id, policy), StartService(id),
 *   RestartService(id)
 *
 * Element order as in the API reference (HostPciPassthruConfig: id,
 * passthruEnabled); the caller has checked every value.
 */
#include "soap.h"

/* ---------------------------------------------------------------- bodies */

void gc_vcenter_update_passthru_body(struct gc_vcenter_soap *s, const char *system,
				     const char *pci, bool enabled)
{
	gc_vcenter_soap_begin(s, "UpdatePassthruConfig", "HostPciPassthruSystem", system);
	gc_vcenter_soap_open(s, "config", "HostPciPassthruConfig");
	gc_vcenter_soap_elem(s, "id", pci);
	gc_vcenter_soap_elem(s, "passthruEnabled", enabled ? "true" : "false");
	gc_vcenter_soap_close(s, "config");
}

void gc_vcenter_update_datetime_body(struct gc_vcenter_soap *s, const char *system,
				     const char *const *servers, size_t n)
{
	gc_vcenter_soap_begin(s, "UpdateDateTimeConfig", "HostDateTimeSystem", system);
	gc_vcenter_soap_open(s, "config", NULL);
	gc_vcenter_soap_open(s, "ntpConfig", NULL);
	for (size_t i = 0; i < n; i++)
		gc_vcenter_soap_elem(s, "server", servers[i]);
	gc_vcenter_soap_close(s, "ntpConfig");
	gc_vcenter_soap_close(s, "config");
}

void gc_vcenter_service_body(struct gc_vcenter_soap *s, const char *method, const char *system,
			     const char *id, const char *policy)
{
	gc_vcenter_soap_begin(s, method, "HostServiceSystem", system);
	gc_vcenter_soap_elem(s, "id", id);
	if (policy != NULL)
		gc_vcenter_soap_elem(s, "policy", policy);
}
