/*
 * record.c - a guest's facts as its resources' observed properties.
 *
 * The rule of every recorder: exactly the keys the desired resource has,
 * spelled as the graph spells them, so a setting that holds compares equal
 * and a drifted one shows as precisely that property ("mtu: 1500 → 9000").
 * Files the driver writes (network config, QoS script, chrony drop-in) are
 * compared with what the renderer would write now; a hand edit reads as
 * "different".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/guest.h"

static void put(struct gc_observed *obs, const struct gc_resource *r, const char *key,
		const char *value)
{
	if (gc_resource_prop(r, key) != NULL)
		gc_observed_set(obs, r->id, key, value ? value : "");
}

static void putd(struct gc_observed *obs, const struct gc_resource *r, const char *key, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", v);
	put(obs, r, key, buf);
}

static const struct gc_guest_pkg *pkg(const struct gc_guest_facts *f, const char *name)
{
	for (size_t i = 0; i < f->npkgs; i++)
		if (strcmp(f->pkgs[i].name, name) == 0 && f->pkgs[i].installed)
			return &f->pkgs[i];
	return NULL;
}

static bool loaded(const struct gc_guest_facts *f, const char *module)
{
	for (size_t i = 0; i < f->nmodules; i++)
		if (strcmp(f->modules[i], module) == 0)
			return true;
	return false;
}

/* "1:535.183.01-1~gclab" -> "535.183.01" (epoch and revision dropped). */
static void upstream(char *out, size_t n, const char *v)
{
	const char *colon = strchr(v, ':');

	if (colon != NULL)
		v = colon + 1;
	snprintf(out, n, "%.*s", (int)strcspn(v, "-~"), v);
}

/* The driver version installed in the guest (package or .run), or "". */
void gc_guest_installed_driver(char *out, size_t n, const struct gc_guest *g,
			       const struct gc_guest_facts *f)
{
	char name[96];
	const struct gc_guest_pkg *k = pkg(f, gc_guest_driver_package(g, name, sizeof(name)));

	out[0] = '\0';
	if (k != NULL)
		upstream(out, n, k->version);
	else if (f->runfile_version != NULL)
		snprintf(out, n, "%s", f->runfile_version);
	else if (f->module_version != NULL && g->driver != NULL &&
		 strcmp(g->driver->source, "runfile") == 0)
		snprintf(out, n, "%s", f->module_version); /* a .run without nvidia-installer */
}

/* Does version v belong to branch b ("535" holds "535.183.01")? */
static bool in_branch(const char *v, const char *b)
{
	size_t n = strlen(b);

	return strncmp(v, b, n) == 0 && (v[n] == '\0' || v[n] == '.');
}

static void record_driver(struct gc_observed *obs, const struct gc_resource *r,
			  const struct gc_guest *g, const struct gc_guest_facts *f)
{
	char inst[64], major[16];
	const char *branch = gc_resource_prop(r, "branch");

	gc_guest_installed_driver(inst, sizeof(inst), g, f);
	if (inst[0] == '\0') {
		put(obs, r, "branch", "none");
		put(obs, r, "version", "none");
		return;
	}
	snprintf(major, sizeof(major), "%.*s", (int)strcspn(inst, "."), inst);
	put(obs, r, "branch", branch != NULL && in_branch(inst, branch) ? branch : major);
	put(obs, r, "version", inst);
}

static void record_rdma_if(struct gc_observed *obs, const struct gc_resource *r,
			   const struct gc_guest *g, const struct gc_guest_facts *f)
{
	const struct gc_rdma_if *ri = g->rdma_interface;
	const char *want = gc_resource_prop(r, "address");
	const char *have = f->naddrs > 0 ? f->addrs[0] : "none";
	char *cfg;

	put(obs, r, "name", f->if_present ? ri->name : "absent");
	for (size_t i = 0; want != NULL && i < f->naddrs; i++)
		if (strcmp(f->addrs[i], want) == 0)
			have = want;
	put(obs, r, "address", have);
	putd(obs, r, "mtu", (long)f->mtu);
	cfg = gc_guest_render_netcfg(ri, f->net);
	if (f->netcfg == NULL)
		put(obs, r, "persistent", f->net == GC_GNET_UNKNOWN ? "no network backend found"
								    : "false");
	else
		put(obs, r, "persistent", strcmp(f->netcfg, cfg) == 0 ? "true" : "different");
	free(cfg);
}

static void record_license(struct gc_observed *obs, const struct gc_resource *r,
			   const struct gc_guest_facts *f, const char *token_want)
{
	const char *st = f->license_status;

	put(obs, r, "server", f->gridd_server ? f->gridd_server : "none");
	put(obs, r, "port", f->gridd_port ? f->gridd_port : "none");
	put(obs, r, "feature_type", f->gridd_feature ? f->gridd_feature : "none");
	if (f->token_cksum == NULL)
		put(obs, r, "token_file", "none");
	else if (token_want != NULL && strcmp(f->token_cksum, token_want) == 0)
		put(obs, r, "token_file", gc_resource_prop(r, "token_file"));
	else
		put(obs, r, "token_file", "a different token");
	if (st != NULL && strncmp(st, "Licensed", 8) == 0)
		put(obs, r, "status", "licensed");
	else
		put(obs, r, "status", st != NULL ? st : f->smi ? "not reported" : "no driver");
}

static void record_qos(struct gc_observed *obs, const struct gc_resource *r,
		       const struct gc_guest *g, const struct gc_guest_facts *f)
{
	const struct gc_roce_qos *q = g->roce_qos;
	char *script = gc_guest_render_qos_script(q);

	put(obs, r, "interface", f->if_present ? q->interface : "absent");
	if (q->rdma_device != NULL)
		put(obs, r, "rdma_device",
		    f->rdma_netdev == NULL ? "absent"
		    : strcmp(f->rdma_netdev, q->interface) == 0 ? q->rdma_device : f->rdma_netdev);
	put(obs, r, "trust", f->trust ? f->trust : "unknown");
	putd(obs, r, "pfc_priority", f->pfc_priority);
	putd(obs, r, "tos", f->tos);
	put(obs, r, "ecn", f->ecn ? "true" : "false");
	if (f->qos_unit == NULL || strcmp(f->qos_unit, "enabled") != 0)
		put(obs, r, "boot_unit", f->qos_unit ? f->qos_unit : "absent");
	else
		put(obs, r, "boot_unit", f->qos_script != NULL && strcmp(f->qos_script, script) == 0
						 ? "enabled" : "different script");
	free(script);
}

static void record_ntp(struct gc_observed *obs, const struct gc_resource *r,
		       const struct gc_guest *g, const struct gc_guest_facts *f)
{
	char *want = gc_guest_render_chrony(g->ntp, g->nntp);
	size_t n = strlen(want);

	/* trimmed() dropped the trailing newline of the file */
	if (f->chrony_conf != NULL && strncmp(f->chrony_conf, want, n - 1) == 0 &&
	    f->chrony_conf[n - 1] == '\0')
		put(obs, r, "servers", gc_resource_prop(r, "servers"));
	else
		put(obs, r, "servers", f->chrony_conf ? "different" : "none");
	/* running, and from a package dpkg calls installed (not half-configured) */
	put(obs, r, "service", f->chrony_active && pkg(f, "chrony") != NULL ? "running" : "stopped");
	free(want);
}

static void record_stack(struct gc_observed *obs, const struct gc_resource *r,
			 const struct gc_guest *g, const struct gc_guest_facts *f)
{
	const char *rp[8];
	size_t nrp;
	bool all = true;

	gc_guest_rdma_packages(g, rp, &nrp);
	for (size_t k = 0; k < nrp; k++)
		all = all && pkg(f, rp[k]) != NULL;
	if (f->ofed != NULL) {
		char ver[128];

		snprintf(ver, sizeof(ver), "%.*s", (int)strcspn(f->ofed, ":\n"), f->ofed);
		put(obs, r, "stack", "ofed");
		put(obs, r, "version", ver);
	} else {
		put(obs, r, "stack", all ? "packages" : "none");
		put(obs, r, "version", "none");
	}
}

static void record_peermem(struct gc_observed *obs, const struct gc_resource *r,
			   const struct gc_guest_facts *f)
{
	const char *v = gc_resource_prop(r, "module");

	put(obs, r, "module", v);
	put(obs, r, "loaded", v != NULL && loaded(f, v) ? "true" : "false");
	put(obs, r, "persistent",
	    v != NULL && f->modules_conf != NULL && strstr(f->modules_conf, v) != NULL ? "true"
										       : "false");
}

void gc_guest_record(struct gc_observed *obs, const struct gc_guest *g,
		     const struct gc_resource *const *res, size_t nres,
		     const struct gc_guest_facts *f, const char *token_want)
{
	/* an if chain: only guest kinds are a guest's resources */
	for (size_t i = 0; i < nres; i++) {
		const struct gc_resource *r = res[i];

		if (r->kind == GC_RES_GUEST_DRIVER)
			record_driver(obs, r, g, f);
		else if (r->kind == GC_RES_GUEST_RDMA_STACK)
			record_stack(obs, r, g, f);
		else if (r->kind == GC_RES_GUEST_RDMA_IF)
			record_rdma_if(obs, r, g, f);
		else if (r->kind == GC_RES_GUEST_LICENSE)
			record_license(obs, r, f, token_want);
		else if (r->kind == GC_RES_GUEST_PEERMEM)
			record_peermem(obs, r, f);
		else if (r->kind == GC_RES_GUEST_ROCE_QOS)
			record_qos(obs, r, g, f);
		else if (r->kind == GC_RES_GUEST_CONTAINER_TOOLKIT)
			put(obs, r, "installed",
			    pkg(f, "nvidia-container-toolkit") != NULL && f->ctk_version != NULL
				    ? "true" : "false");
		else if (r->kind == GC_RES_GUEST_NTP)
			record_ntp(obs, r, g, f);
	}
}
