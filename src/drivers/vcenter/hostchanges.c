/*
 * hostchanges.c - an ESXi host's passthrough and NTP set through vCenter
 * (GC_RES_ESXI_PCI_PASSTHRU, GC_RES_ESXI_NTP on the vCenter target: hosts
 * older than ESXi 7.0 / 7.0 U1, src/spec/releases.c), with hostconfig.c's
 * bodies.
 *
 * What the observation holds (record.c reads it: passthrough from
 * config.pciPassthruInfo, NTP from config.dateTimeInfo.ntpConfig.server and
 * the ntpd entry of config.service, enabled = running with policy "on",
 * "Start and stop with host" in the vSphere Client) decides what is sent,
 * so only what differs goes out:
 *
 *   passthrough  UpdatePassthruConfig (the planner puts the host's reboot
 *                after it, inside its maintenance window)
 *   NTP          UpdateDateTimeConfig when the servers differ;
 *                UpdateServicePolicy(ntpd, on) when the policy is not on;
 *                StartService(ntpd) when it is stopped, else
 *                RestartService(ntpd) when its servers changed (ntpd reads
 *                its configuration when it starts)
 *
 * Every value is checked again here (PCI address, host names) before it
 * reaches a body.
 */
#include <stdio.h>
#include <string.h>

#include "gc/pattern.h"
#include "gc/spec.h"
#include "gc/sys/driver.h"
#include "soap.h"
#include "vcdrv.h"

#define NTP_SERVERS_MAX 16

/* ---------------------------------------------------------------- lookups */

/* The vCenter host of the spec host a host-configuration resource names. */
static const struct gc_vcenter_host *host_of(const struct gc_vcenter_inventory *inv,
					     const struct gc_cluster *c,
					     const struct gc_resource *r)
{
	const struct gc_host *h = r->host ? gc_cluster_host(c, r->host) : NULL;

	return h != NULL ? gc_vcdrv_host(inv, h) : NULL;
}

/* Last '/'-separated segment of the id: the PCI address of a passthrough resource. */
static const char *id_key(const struct gc_resource *r)
{
	const char *slash = strrchr(r->id, '/');

	return slash ? slash + 1 : r->id;
}

/* ---------------------------------------------------------------- changes */

static int call(struct vc_conn *c, struct gc_vcenter_soap *s, const char *host,
		struct gc_error *err)
{
	int rc = gc_vcenter_soap_run(c->vc, s, err);

	if (rc != 0)
		gc_error_prefix(err, "host '%s': ", host);
	return rc;
}

static int passthru_apply(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_resource *r,
			  const struct gc_vcenter_host *vh, struct gc_error *err)
{
	const char *en = gc_resource_prop(r, "enabled");
	struct gc_vcenter_soap s;

	if (en == NULL || (strcmp(en, "true") != 0 && strcmp(en, "false") != 0) ||
	    !gc_valid_pci(id_key(r)))
		return gc_error_set(err, GC_EINVAL, "resource '%s': refusing unsafe PCI address or flag",
				    r->id);
	if (vh->passthru_system == NULL)
		return gc_error_set(err, GC_EREMOTE, "%s: host '%s' has no pciPassthruSystem",
				    gc_vcenter_target(c->vc), r->host);
	gc_drv_note(ctx, c->t, "host %s: passthrough of %s %s (UpdatePassthruConfig)", r->host,
		    id_key(r), strcmp(en, "true") == 0 ? "on" : "off");
	gc_vcenter_update_passthru_body(&s, vh->passthru_system, id_key(r), strcmp(en, "true") == 0);
	gc_drv_count_change(ctx);
	return call(c, &s, r->host, err);
}

/* "a,b" -> servers[] pointing into buf; false when one is not a host name. */
static bool split_servers(char *buf, const char **servers, size_t *n)
{
	*n = 0;
	for (char *p = buf, *next; p != NULL; p = next) {
		next = strchr(p, ',');
		if (next != NULL)
			*next++ = '\0';
		if (*n == NTP_SERVERS_MAX || !gc_valid_host(p))
			return false;
		servers[(*n)++] = p;
	}
	return true;
}

static int service(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_vcenter_host *vh,
		   const char *host, const char *method, const char *policy, struct gc_error *err)
{
	struct gc_vcenter_soap s;

	gc_drv_note(ctx, c->t, "host %s: %s ntpd%s%s", host, method, policy ? " policy " : "",
		    policy ? policy : "");
	gc_vcenter_service_body(&s, method, vh->service_system, "ntpd", policy);
	gc_drv_count_change(ctx);
	return call(c, &s, host, err);
}

static int ntp_apply(struct vc_conn *c, struct gc_drv_ctx *ctx, const struct gc_resource *r,
		     const struct gc_vcenter_host *vh, struct gc_error *err)
{
	const char *want = gc_resource_prop(r, "servers");
	const char *servers[NTP_SERVERS_MAX];
	char buf[1024];
	size_t n;
	bool changed;
	int rc = 0;

	if (want == NULL || strlen(want) >= sizeof(buf))
		return gc_error_set(err, GC_EINVAL, "resource '%s': refusing unsafe NTP server", r->id);
	snprintf(buf, sizeof(buf), "%s", want);
	if (!split_servers(buf, servers, &n))
		return gc_error_set(err, GC_EINVAL, "resource '%s': refusing unsafe NTP server", r->id);
	if (vh->datetime_system == NULL || vh->service_system == NULL)
		return gc_error_set(err, GC_EREMOTE, "%s: host '%s' has no dateTimeSystem or "
						     "serviceSystem",
				    gc_vcenter_target(c->vc), r->host);
	changed = vh->ntp_servers == NULL || strcmp(vh->ntp_servers, want) != 0;
	if (changed) {
		struct gc_vcenter_soap s;

		gc_drv_note(ctx, c->t, "host %s: NTP servers %s (UpdateDateTimeConfig)", r->host, want);
		gc_vcenter_update_datetime_body(&s, vh->datetime_system, servers, n);
		gc_drv_count_change(ctx);
		rc = call(c, &s, r->host, err);
	}
	if (rc == 0 && (vh->ntpd_policy == NULL || strcmp(vh->ntpd_policy, "on") != 0))
		rc = service(c, ctx, vh, r->host, "UpdateServicePolicy", "on", err);
	if (rc == 0 && !vh->ntpd_running)
		rc = service(c, ctx, vh, r->host, "StartService", NULL, err);
	else if (rc == 0 && changed)
		rc = service(c, ctx, vh, r->host, "RestartService", NULL, err);
	return rc;
}

int gc_vcdrv_hostconfig_apply(struct vc_conn *c, struct gc_drv_ctx *ctx,
			      const struct gc_resource *r, struct gc_error *err)
{
	const struct gc_vcenter_host *vh = host_of(gc_vcdrv_snapshot(c), c->c, r);

	if (vh == NULL)
		return gc_error_set(err, GC_EREMOTE, "%s: no host '%s'", gc_vcenter_target(c->vc),
				    r->host ? r->host : "?");
	if (r->kind == GC_RES_ESXI_PCI_PASSTHRU)
		return passthru_apply(c, ctx, r, vh, err);
	return ntp_apply(c, ctx, r, vh, err);
}
