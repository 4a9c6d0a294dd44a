/*
 * commands.c - from a resource's desired properties to the esxcli command
 * that sets them (REAL-FORMATS A.3-A.10; an adapter's firmware: MFT's
 * mlxconfig).
 *
 * Defence in depth: the spec loader already rejected hostile values, but
 * every value is checked again here against the narrowest pattern that
 * fits it, because a graph can also be built by hand or from a snapshot.
 * Values with no narrower pattern (module parameter strings) are checked
 * against their own grammar and single-quoted.
 */
#include <string.h>

#include "gc/esxi.h"
#include "gc/graph.h"
#include "gc/pattern.h"

static const char *need(const struct gc_resource *r, const char *key, struct gc_error *err)
{
	const char *v = gc_resource_prop(r, key);

	if (v == NULL)
		gc_error_set(err, GC_EINVAL, "resource '%s' has no property '%s'", r->id, key);
	return v;
}

static int bad(struct gc_buf *b, const struct gc_resource *r, const char *what,
	       struct gc_error *err)
{
	gc_buf_free(b);
	return gc_error_set(err, GC_EINVAL, "resource '%s': refusing unsafe %s", r->id, what);
}

/* Last '/'-separated segment of the id: the PCI address of per-device resources. */
static const char *id_key(const struct gc_resource *r)
{
	const char *slash = strrchr(r->id, '/');

	return slash ? slash + 1 : r->id;
}

static bool is_bool(const char *v)
{
	return strcmp(v, "true") == 0 || strcmp(v, "false") == 0;
}

/* nmlx5_core parameter strings: name=value pairs separated by spaces, values
 * of digits, commas and 0x-hex ("max_vfs=4,4 pfctx=0x08"). */
static bool valid_module_params(const char *s)
{
	size_t n = 0;

	if (*s == '\0' || strlen(s) > 255)
		return false;
	for (; *s; s++, n++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '=' || c == ',' || c == ' '))
			return false;
	}
	return true;
}

static bool one_of(const char *v, const char *const *allowed)
{
	for (; *allowed; allowed++) {
		if (strcmp(v, *allowed) == 0)
			return true;
	}
	return false;
}

/*
 * The whole parameter string of nmlx5_core: `parameters set` replaces it,
 * so it holds the parameters the resource manages, in the graph's order
 * (max_vfs, trust_state, pfctx, pfcrx, ecn), then every other parameter the
 * host has a value for, as it has it.  `ecn` goes only to a driver that
 * lists it (facts known): NVIDIA's 4.17 manual has it, not every release
 * need; an unknown one would make the driver refuse the whole string.
 */
static void nmlx5_params(struct gc_buf *out, const struct gc_resource *r,
			 const struct gc_esxi_facts *facts)
{
	for (size_t i = 0; i < r->nprops; i++) {
		const char *k = r->props[i].key;

		if (strcmp(k, "module") == 0 ||
		    (strcmp(k, "ecn") == 0 && facts && !gc_esxi_facts_nmlx5_accepts(facts, k)))
			continue;
		gc_buf_printf(out, "%s%s=%s", out->len ? " " : "", k, r->props[i].value);
	}
	for (size_t i = 0; facts && i < facts->nnmlx5_params; i++) {
		const struct gc_esxcli_field *p = &facts->nmlx5_params[i];

		if (p->value[0] != '\0' && gc_resource_prop(r, p->name) == NULL)
			gc_buf_printf(out, "%s%s=%s", out->len ? " " : "", p->name, p->value);
	}
}

/*
 * One builder per resource kind: each checks the values it needs against
 * the narrowest pattern and appends its command to b (bad() frees b).
 */
typedef int (*builder_fn)(struct gc_buf *b, const struct gc_resource *r,
			  const struct gc_esxi_facts *facts, struct gc_error *err);

static int passthru_command(struct gc_buf *b, const struct gc_resource *r,
			    const struct gc_esxi_facts *facts, struct gc_error *err)
{
	const char *v = need(r, "enabled", err);

	(void)facts;
	if (v == NULL)
		return err->code;
	if (!gc_valid_pci(id_key(r)) || !is_bool(v))
		return bad(b, r, "PCI address or flag", err);
	gc_buf_printf(b, "esxcli hardware pci pcipassthru set -d %s -e %s", id_key(r), v);
	return 0;
}

static int graphics_command(struct gc_buf *b, const struct gc_resource *r,
			    const struct gc_esxi_facts *facts, struct gc_error *err)
{
	static const char *const types[] = {"Shared", "SharedPassthru", NULL};
	static const char *const policies[] = {"Performance", "Consolidation", NULL};
	const char *v = need(r, "default_type", err), *w;

	(void)facts;
	if (v == NULL)
		return err->code;
	if (!one_of(v, types))
		return bad(b, r, "graphics type", err);
	gc_buf_printf(b, "esxcli graphics host set --default-type %s", v);
	w = gc_resource_prop(r, "assignment_policy");
	if (w != NULL) {
		if (!one_of(w, policies))
			return bad(b, r, "assignment policy", err);
		gc_buf_printf(b, " --shared-passthru-assignment-policy %s", w);
	}
	return 0;
}

static int vib_command(struct gc_buf *b, const struct gc_resource *r,
		       const struct gc_esxi_facts *facts, struct gc_error *err)
{
	const char *v = need(r, "source", err), *w;

	(void)facts;
	if (v == NULL)
		return err->code;
	if (!gc_valid_abs_path(v))
		return bad(b, r, "VIB source path", err);
	w = strrchr(v, '.');
	gc_buf_printf(b, "esxcli software vib install %s %s", w && strcmp(w, ".zip") == 0 ? "-d" : "-v",
		      v);
	return 0;
}

static int module_param_command(struct gc_buf *b, const struct gc_resource *r,
				const struct gc_esxi_facts *facts, struct gc_error *err)
{
	struct gc_buf params = GC_BUF_INIT;
	const char *v = need(r, "module", err);

	if (v == NULL)
		return err->code;
	nmlx5_params(&params, r, facts);
	if (strcmp(v, "nmlx5_core") != 0 || params.len == 0 ||
	    !valid_module_params(gc_buf_str(&params))) {
		gc_buf_free(&params);
		return bad(b, r, "module parameters", err);
	}
	gc_buf_printf(b, "esxcli system module parameters set -m %s -p ", v);
	gc_shell_quote(b, gc_buf_str(&params));
	gc_buf_free(&params);
	return 0;
}

static int firewall_command(struct gc_buf *b, const struct gc_resource *r,
			    const struct gc_esxi_facts *facts, struct gc_error *err)
{
	const char *v, *w;

	(void)facts;
	if ((v = need(r, "ruleset", err)) == NULL || (w = need(r, "enabled", err)) == NULL)
		return err->code;
	if (!gc_valid_name(v) || !is_bool(w))
		return bad(b, r, "firewall ruleset", err);
	gc_buf_printf(b, "esxcli network firewall ruleset set -r %s -e %s", v, w);
	return 0;
}

static int advanced_command(struct gc_buf *b, const struct gc_resource *r,
			    const struct gc_esxi_facts *facts, struct gc_error *err)
{
	const char *v, *w;

	(void)facts;
	if ((v = need(r, "option", err)) == NULL || (w = need(r, "value", err)) == NULL)
		return err->code;
	if (!gc_valid_abs_path(v) || (*w != '\0' && !gc_valid_ifname(w)))
		return bad(b, r, "advanced option", err);
	gc_buf_printf(b, "esxcli system settings advanced set -o %s -s ", v);
	gc_shell_quote(b, w);
	return 0;
}

/*
 * `esxcli system ntp set` (ESXi 7.0 U1+): -e/--enabled, -s/--server
 * repeated per server.  The flag spelling is inferred from esxcli's
 * conventions; REAL-FORMATS has no capture of it.
 */
static int ntp_command(struct gc_buf *b, const struct gc_resource *r,
		       const struct gc_esxi_facts *facts, struct gc_error *err)
{
	const char *v = need(r, "servers", err), *w, *p;

	(void)facts;
	if (v == NULL)
		return err->code;
	w = gc_resource_prop(r, "enabled");
	if (w != NULL && !is_bool(w))
		return bad(b, r, "NTP flag", err);
	gc_buf_printf(b, "esxcli system ntp set -e %s", w ? w : "true");
	for (p = v; *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		char host[256];

		if (n == 0 || n >= sizeof(host))
			return bad(b, r, "NTP server", err);
		memcpy(host, p, n);
		host[n] = '\0';
		if (!gc_valid_host(host))
			return bad(b, r, "NTP server", err);
		gc_buf_printf(b, " -s %s", host);
		p += n + (comma ? 1 : 0);
	}
	return 0;
}

static int gpu_ecc_command(struct gc_buf *b, const struct gc_resource *r,
			   const struct gc_esxi_facts *facts, struct gc_error *err)
{
	const char *v = need(r, "ecc", err);

	(void)facts;
	if (v == NULL)
		return err->code;
	if (!gc_valid_pci(id_key(r)) || (strcmp(v, "enabled") != 0 && strcmp(v, "disabled") != 0))
		return bad(b, r, "GPU ECC setting", err);
	gc_buf_printf(b, "nvidia-smi -i %s -e %d", id_key(r), strcmp(v, "enabled") == 0);
	return 0;
}

/*
 * An SR-IOV PF's firmware through MFT (REAL-FORMATS A.8, NVIDIA's
 * "SR-IOV Configuration" page): `mlxconfig -y -d DEV set SRIOV_EN=1
 * NUM_OF_VFS=N`; -y answers its "Apply new Configuration?" prompt.  DEV is
 * the MST device that the observation saw at the PF's PCI address (never a
 * spec value); the new values load at the host's next boot.
 */
static int firmware_command(struct gc_buf *b, const struct gc_resource *r,
			    const struct gc_esxi_facts *facts, struct gc_error *err)
{
	const struct gc_esxi_mft_dev *d = facts ? gc_esxi_facts_mft(facts, id_key(r)) : NULL;
	const char *en, *n;

	if ((en = need(r, "sriov_en", err)) == NULL || (n = need(r, "num_of_vfs", err)) == NULL)
		return err->code;
	if (strcmp(en, "true") != 0 || strspn(n, "0123456789") != strlen(n) || strlen(n) > 4 ||
	    *n == '\0' || !gc_valid_pci(id_key(r)))
		return bad(b, r, "firmware setting", err);
	if (d == NULL || !gc_esxi_valid_mst_dev(d->dev))
		return gc_error_set(err, GC_ENOTFOUND, "resource '%s': MFT shows no device at %s",
				    r->id, id_key(r));
	gc_buf_printf(b, GC_ESXI_MFT_BIN "/mlxconfig -y -d %s set SRIOV_EN=1 NUM_OF_VFS=%s", d->dev, n);
	return 0;
}

/* The kinds the ESXi shell applies; every other kind is another driver's. */
static const builder_fn builders[GC_RES__COUNT] = {
	[GC_RES_ESXI_PCI_PASSTHRU] = passthru_command,
	[GC_RES_ESXI_GRAPHICS] = graphics_command,
	[GC_RES_ESXI_VIB] = vib_command,
	[GC_RES_ESXI_MODULE_PARAM] = module_param_command,
	[GC_RES_ESXI_FIREWALL] = firewall_command,
	[GC_RES_ESXI_ADVANCED] = advanced_command,
	[GC_RES_ESXI_NTP] = ntp_command,
	[GC_RES_ESXI_GPU_ECC] = gpu_ecc_command,
	[GC_RES_ESXI_NIC_FIRMWARE] = firmware_command,
};

int gc_esxi_command(char **out, const struct gc_resource *r, const struct gc_esxi_facts *facts,
		    struct gc_error *err)
{
	struct gc_buf b = GC_BUF_INIT;
	int rc;

	if ((unsigned)r->kind >= GC_RES__COUNT || builders[r->kind] == NULL)
		return gc_error_set(err, GC_ENOTSUP, "resource '%s' (%s) is not applied over the ESXi shell",
				    r->id, gc_res_kind_name(r->kind));
	if ((rc = builders[r->kind](&b, r, facts, err)) != 0) {
		gc_buf_free(&b); /* bad() freed it already; freeing twice is safe */
		return rc;
	}
	*out = gc_buf_take(&b);
	return 0;
}
