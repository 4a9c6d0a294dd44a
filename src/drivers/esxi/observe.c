/*
 * observe.c - observe one ESXi host in one remote exec.
 *
 * The batch runs every read-only command of the driver in a fixed order,
 * each introduced by `echo @@gc:<token>:<n>` and followed by
 * `|| echo @@gc:<token>:failed`, and ends with `@@gc:<token>:end`.  The token
 * is fresh per run, so device output cannot forge a marker.  A missing end
 * marker means the output was cut short (connection dropped): the whole
 * observation is then GC_ENET, safe to retry.  A failed section is recorded
 * in facts->failed, except where failure is itself the answer (nvidia-smi
 * absent: no vGPU manager; nmlx5_core absent: no Mellanox driver; the
 * vGPU manager's bundle not on the host: its VIB names are not known yet).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

#include "gc/esxi.h"
#include "gc/pattern.h"

enum section {
	S_VERSION = 1,
	S_MAINT,
	S_GRAPHICS,
	S_VIBS,
	S_PASSTHRU,
	S_NMLX5,
	S_FIREWALL,
	S_PVRDMA,
	S_NTP,
	S_ECC,
	S_VIBS_REBOOT,
	S_PCI,
	S_SOURCE_VIBS, /* only when the script was given a bundle to learn from */
	S_MFT,         /* the fixed MFT snippet (mft.c): always */
	S_SRIOV,       /* only in the read-back after a reboot of an SR-IOV host */
	S_LEASE,       /* GC_ESXI_OBS_LEASE: the fixed lease snippet (the apply's observation) */
	S_EXIT,        /* GC_ESXI_OBS_EXIT_MM: leaving maintenance mode, after every read */
	S_LEASE_CLEAR, /* GC_ESXI_OBS_LEASE_CLEAR: the lease's compare-and-clear, after the exit */
	S_COUNT
};

static const char *const commands[S_COUNT] = {
	[S_VERSION] = "vmware -v",
	[S_MAINT] = "esxcli --formatter=xml system maintenanceMode get",
	[S_GRAPHICS] = "esxcli --formatter=xml graphics host get",
	[S_VIBS] = "esxcli --formatter=xml software vib list",
	[S_PASSTHRU] = "esxcli --formatter=xml hardware pci pcipassthru list",
	[S_NMLX5] = "esxcli --formatter=xml system module parameters list -m nmlx5_core",
	[S_FIREWALL] = "esxcli --formatter=xml network firewall ruleset list",
	[S_PVRDMA] = "esxcli --formatter=xml system settings advanced list -o /Net/PVRDMAVmknic",
	[S_NTP] = "esxcli --formatter=xml system ntp get",
	[S_ECC] = "nvidia-smi -q -d ECC",
	[S_VIBS_REBOOT] = "esxcli --formatter=xml software vib list --rebooting-image",
	[S_PCI] = "esxcli --formatter=xml hardware pci list",
	[S_SOURCE_VIBS] = "esxcli --formatter=xml software sources vib list",
	[S_MFT] = "sh -c (MFT: mst status, mlxconfig q)",
	[S_SRIOV] = "esxcli --formatter=xml network sriovnic list",
	[S_LEASE] = "sh -c (the cluster lease)",
	[S_EXIT] = GC_ESXI_CMD_EXIT_MAINTENANCE,
	[S_LEASE_CLEAR] = "sh -c (the cluster lease's compare-and-clear)",
};

char *gc_esxi_observe_script(const char *token, const char *learn_from)
{
	return gc_esxi_script(token, learn_from, 0);
}

char *gc_esxi_verify_script(const char *token, const char *learn_from, bool sriov)
{
	return gc_esxi_script(token, learn_from, sriov ? GC_ESXI_OBS_SRIOV : 0);
}

/* One section: its marker, the command, the failure marker. */
static void section(struct gc_buf *b, const char *token, int sec)
{
	gc_buf_printf(b, "echo @@gc:%s:%d; %s || echo @@gc:%s:failed; ", token, sec, commands[sec], token);
}

/* A section that is a fixed snippet, its only argument the token: nothing
 * of the spec in it. */
static void snippet(struct gc_buf *b, const char *token, int sec, const char *script,
		    const char *name)
{
	gc_buf_printf(b, "echo @@gc:%s:%d; sh -c ", token, sec);
	gc_shell_quote(b, script);
	gc_buf_printf(b, " %s %s || echo @@gc:%s:failed; ", name, token, token);
}

/* The compare-and-set as one command, for an exec of its own or a chain's
 * first (GC_ESXI_LEASE_CAS_SCRIPT); NULL for a lock or lease that does not
 * fit their characters (caller frees). */
char *gc_esxi_lease_cas_command(const char *token, const char *lock, const char *value)
{
	struct gc_buf cmd = GC_BUF_INIT;

	if (lock == NULL || lock[0] == '\0' || strspn(lock, "0123456789abcdef") != strlen(lock) ||
	    value == NULL || value[0] == '\0' ||
	    strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._:;=+-") !=
		    strlen(value))
		return NULL;
	gc_buf_puts(&cmd, "sh -c ");
	gc_shell_quote(&cmd, GC_ESXI_LEASE_CAS_SCRIPT);
	gc_buf_printf(&cmd, " lease %s %s ", token, lock);
	gc_shell_quote(&cmd, value);
	return gc_buf_take(&cmd);
}

/* The holder's lease in a refusal of that command ("@@lease:TOKEN:held:V"
 * on a line of text), gc_xmalloc'd; NULL when it is not one. */
char *gc_esxi_lease_held(const char *token, const char *text)
{
	char mark[48];
	const char *p;
	size_t n;

	snprintf(mark, sizeof(mark), "@@lease:%s:held:", token);
	p = text != NULL ? strstr(text, mark) : NULL;
	if (p == NULL)
		return NULL;
	p += strlen(mark);
	n = strcspn(p, "\r\n");
	return gc_xstrndup(p, n);
}

char *gc_esxi_script(const char *token, const char *learn_from, unsigned flags)
{
	return gc_esxi_script_lease(token, learn_from, flags, NULL, NULL);
}

static bool lease_arg_ok(const char *s, const char *chars)
{
	return s != NULL && s[0] != '\0' && strspn(s, chars) == strlen(s);
}

#define LOCK_CHARS "0123456789abcdef"
#define LEASE_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._:;=+-"

char *gc_esxi_script_lease(const char *token, const char *learn_from, unsigned flags,
			   const char *lock, const char *take)
{
	struct gc_buf b = GC_BUF_INIT;
	bool have_lock = lease_arg_ok(lock, LOCK_CHARS);
	int i;

	for (i = S_VERSION; i < S_SOURCE_VIBS; i++)
		section(&b, token, i);
	if (learn_from != NULL && gc_valid_abs_path(learn_from)) {
		const char *dot = strrchr(learn_from, '.');

		/* -d: an offline bundle (depot .zip); -v: a single .vib, as
		 * `vib install` takes them (commands.c) */
		gc_buf_printf(&b, "echo @@gc:%s:%d; %s %s ", token, S_SOURCE_VIBS,
			      commands[S_SOURCE_VIBS], dot && strcmp(dot, ".zip") == 0 ? "-d" : "-v");
		gc_shell_quote(&b, learn_from);
		gc_buf_printf(&b, " || echo @@gc:%s:failed; ", token);
	}
	snippet(&b, token, S_MFT, GC_ESXI_MFT_SCRIPT, "mft");
	if (flags & GC_ESXI_OBS_SRIOV)
		section(&b, token, S_SRIOV);
	if ((flags & GC_ESXI_OBS_LEASE) && have_lock && lease_arg_ok(take, LEASE_CHARS)) {
		/* read, and write ours when the host is free or ours already */
		gc_buf_printf(&b, "echo @@gc:%s:%d; sh -c ", token, S_LEASE);
		gc_shell_quote(&b, GC_ESXI_LEASE_TAKE_SCRIPT);
		gc_buf_printf(&b, " lease %s %s ", token, lock);
		gc_shell_quote(&b, take);
		gc_buf_printf(&b, " || echo @@gc:%s:failed; ", token);
	} else if (flags & GC_ESXI_OBS_LEASE) {
		snippet(&b, token, S_LEASE, GC_ESXI_LEASE_READ_SCRIPT, "lease");
	}
	/* last: every read above saw the host still in maintenance mode; the
	 * lease is cleared only once the host is out of it */
	if ((flags & GC_ESXI_OBS_EXIT_MM) && (flags & GC_ESXI_OBS_LEASE_CLEAR) && have_lock) {
		gc_buf_printf(&b, "echo @@gc:%s:%d; %s && echo @@gc:%s:%d && sh -c ", token, S_EXIT,
			      commands[S_EXIT], token, S_LEASE_CLEAR);
		gc_shell_quote(&b, GC_ESXI_LEASE_CLEAR_SCRIPT);
		gc_buf_printf(&b, " lease %s || echo @@gc:%s:failed; ", lock, token);
	} else if (flags & GC_ESXI_OBS_EXIT_MM) {
		section(&b, token, S_EXIT);
	}
	gc_buf_printf(&b, "echo @@gc:%s:end", token);
	return gc_buf_take(&b);
}

char *gc_esxi_script_guarded(const char *token, const char *learn_from, unsigned flags,
			     const char *lock, long long bound_us)
{
	struct gc_buf b = GC_BUF_INIT;
	char *batch = gc_esxi_script_lease(token, learn_from, flags, lock, NULL);

	gc_buf_printf(&b, "echo @@gc:%s:up; sh -c ", token);
	gc_shell_quote(&b, GC_ESXI_UPTIME_GUARD_SCRIPT);
	gc_buf_printf(&b, " up %lld || exit 0; %s", bound_us, batch);
	free(batch);
	return gc_buf_take(&b);
}

bool gc_esxi_guard_split(const char *token, const char *text, size_t len, long long *uptime_us,
			 size_t *rest)
{
	char mark[48];
	size_t m = (size_t)snprintf(mark, sizeof(mark), "@@gc:%s:up\n", token);
	size_t plen = m - strlen("up\n"), off = m; /* plen: "@@gc:TOKEN:" */

	*uptime_us = -1;
	*rest = len;
	if (len < m || memcmp(text, mark, m) != 0)
		return false;
	/* the uptime's line, when the guard could read it */
	if (off < len && isdigit((unsigned char)text[off])) {
		char *end;
		long long v = strtoll(text + off, &end, 10);

		if (end < text + len && *end == '\n') {
			*uptime_us = v;
			off = (size_t)(end + 1 - text);
		}
	}
	/* the batch's first marker right after it: the guard let it run */
	if (*uptime_us < 0 || len - off < plen || memcmp(text + off, mark, plen) != 0)
		return false;
	*rest = off;
	return true;
}

/* The lease snippet's answer: "@@lease:TOKEN:none" when the option does
 * not exist (never leased), else `advanced list -o`'s XML. */
static int read_lease(struct gc_esxi_facts *f, const char *token, const char *text, size_t len,
		      struct gc_error *err)
{
	struct gc_esxcli_result r = {NULL, 0, NULL};
	char none[64];
	const char *v;
	char took[64];
	int n = snprintf(none, sizeof(none), "@@lease:%s:none", token);
	int t = snprintf(took, sizeof(took), "@@lease:%s:took", token);

	/* the take snippet's last line: it wrote our lease after reading */
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		len--;
	if (len >= (size_t)t && memcmp(text + len - t, took, (size_t)t) == 0 &&
	    (len == (size_t)t || text[len - t - 1] == '\n')) {
		f->lease_took = true;
		len -= (size_t)t;
	}
	if (len >= (size_t)n && memcmp(text, none, (size_t)n) == 0) {
		f->lease_read = true;
		f->lease_option = false;
		f->lease = gc_xstrdup("");
		return 0;
	}
	if (gc_esxcli_parse_xml(&r, text, len, err) != 0) {
		gc_error_prefix(err, "the cluster lease: ");
		return err->code;
	}
	v = r.nitems > 0 ? gc_esxcli_get(&r.items[0], "StringValue") : NULL;
	f->lease_read = true;
	f->lease_option = true;
	f->lease = gc_xstrdup(v == NULL || strcmp(v, "none") == 0 ? "" : v);
	gc_esxcli_result_free(&r);
	return 0;
}

static void free_vibs(struct gc_esxi_vib *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].version);
	}
	free(v);
}

/*
 * The sources listing.  No capture of its output is in REAL-FORMATS: the
 * human table's columns (Name, Version, Vendor, Creation Date, Acceptance
 * Level, Status) are the esxcli reference's, the XML typeName is inferred.
 * So nothing here depends on the order or set of fields: Name and Version
 * are looked up by field name in each structure, whatever else it holds.
 */
int gc_esxi_parse_source_vibs(struct gc_esxi_vib **out, size_t *n, const char *text, size_t len,
			      struct gc_error *err)
{
	struct gc_esxcli_result r = {NULL, 0, NULL};
	struct gc_esxi_vib *v = NULL;
	size_t i, nv = 0;
	int rc;

	if ((rc = gc_esxcli_parse_xml(&r, text, len, err)) != 0)
		return rc;
	if (r.nitems == 0) {
		rc = gc_error_set(err, GC_EREMOTE, "the bundle lists no VIB");
		goto out;
	}
	if (r.nitems > GC_ESXI_MAX_SOURCE_VIBS) {
		rc = gc_error_set(err, GC_EREMOTE, "the bundle lists more than %d VIBs",
				  GC_ESXI_MAX_SOURCE_VIBS);
		goto out;
	}
	v = gc_xcalloc(r.nitems, sizeof(*v));
	for (i = 0; i < r.nitems; i++) {
		const char *name = gc_esxcli_get(&r.items[i], "Name");
		const char *ver = gc_esxcli_get(&r.items[i], "Version");

		/* the names go into the plan and are compared with `vib list`:
		 * only the characters VIB names and versions are made of */
		if (name == NULL || ver == NULL || !gc_valid_version(name) || !gc_valid_version(ver)) {
			rc = gc_error_set(err, GC_EREMOTE, "VIB %zu of the bundle has no valid %s", i + 1,
					  name == NULL || !gc_valid_version(name) ? "Name" : "Version");
			goto out;
		}
		v[nv].name = gc_xstrdup(name);
		v[nv].version = gc_xstrdup(ver);
		nv++;
	}
	*out = v;
	*n = nv;
	v = NULL; /* now owned by the caller */
	nv = 0;
out:
	free_vibs(v, nv);
	gc_esxcli_result_free(&r);
	return rc;
}

int gc_esxi_parse_version(char **version, char **build, const char *line, struct gc_error *err)
{
	const char *p = strstr(line, "VMware ESXi ");
	const char *v, *e;

	if (p == NULL)
		return gc_error_set(err, GC_EREMOTE, "unexpected 'vmware -v' output");
	v = p + strlen("VMware ESXi ");
	for (e = v; isdigit((unsigned char)*e) || *e == '.'; e++)
		;
	if (e == v)
		return gc_error_set(err, GC_EREMOTE, "unexpected 'vmware -v' output");
	*version = gc_xstrndup(v, (size_t)(e - v));
	p = strstr(e, "build-");
	if (p != NULL) {
		for (e = p + 6; isdigit((unsigned char)*e); e++)
			;
		*build = gc_xstrndup(p, (size_t)(e - p));
	} else {
		*build = NULL;
	}
	return 0;
}

static bool truthy(const char *s)
{
	return s && (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0 || strcasecmp(s, "on") == 0 ||
		     strcasecmp(s, "enabled") == 0);
}

static const char *field_or_empty(const struct gc_esxcli_struct *it, const char *name)
{
	const char *v = gc_esxcli_get(it, name);

	return v != NULL ? v : "";
}

static void note_failure(struct gc_esxi_facts *f, int sec, const char *why)
{
	f->failed = gc_xrealloc(f->failed, (f->nfailed + 1) * sizeof(*f->failed));
	f->failed[f->nfailed++] = gc_xasprintf("%s: %s", commands[sec], why);
}

/* nvidia-smi -q -d ECC: "ECC Mode" then "Current : Enabled", "Pending : ..." (C.5) */
static void parse_ecc(struct gc_esxi_facts *f, const char *text)
{
	const char *line = text;
	bool in_mode = false;

	f->ecc_current = f->ecc_pending = -1;
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char buf[256];
		char *key, *colon, *val;

		if (n >= sizeof(buf))
			n = sizeof(buf) - 1;
		memcpy(buf, line, n);
		buf[n] = '\0';
		line = nl ? nl + 1 : NULL;
		key = buf + strspn(buf, " \t");
		if (strncmp(key, "ECC Mode", 8) == 0) {
			in_mode = true;
			continue;
		}
		colon = strchr(key, ':');
		if (!in_mode || colon == NULL)
			continue;
		val = colon + 1 + strspn(colon + 1, " ");
		if (strncmp(key, "Current", 7) == 0 && strcmp(val, "N/A") != 0)
			f->ecc_current = (f->ecc_current == 1 || strcmp(val, "Enabled") == 0) ? 1 : 0;
		else if (strncmp(key, "Pending", 7) == 0 && strcmp(val, "N/A") != 0)
			f->ecc_pending = (f->ecc_pending == 1 || strcmp(val, "Enabled") == 0) ? 1 : 0;
		else if (strncmp(key, "Pending", 7) == 0)
			in_mode = false;
	}
}

static void read_vibs(struct gc_esxi_vib **out, size_t *n, const struct gc_esxcli_result *r)
{
	size_t i;

	*out = gc_xcalloc(r->nitems, sizeof(**out));
	for (i = 0; i < r->nitems; i++) {
		const char *name = gc_esxcli_get(&r->items[i], "Name");
		const char *ver = gc_esxcli_get(&r->items[i], "Version");

		if (name == NULL)
			continue;
		(*out)[*n].name = gc_xstrdup(name);
		(*out)[*n].version = gc_xstrdup(ver ? ver : "");
		(*n)++;
	}
}

/* Configured state that is not running yet: a reboot is owed.  (Module
 * parameters have no running view in esxcli; the journal covers those.) */
static void derive_pending(struct gc_esxi_facts *f)
{
	size_t i;

	for (i = 0; i < f->npci && !f->reboot_pending; i++) {
		if (f->pci[i].configured_passthru != f->pci[i].current_passthru) {
			f->reboot_pending = true;
			f->reboot_pending_why = gc_xasprintf("passthrough of %s configured %s, running %s",
							     f->pci[i].pci,
							     f->pci[i].configured_passthru ? "on" : "off",
							     f->pci[i].current_passthru ? "on" : "off");
		}
	}
	for (i = 0; i < f->nrebooting_vibs && !f->reboot_pending; i++) {
		const struct gc_esxi_vib *now = gc_esxi_facts_vib(f, f->rebooting_vibs[i].name);

		if (now == NULL || strcmp(now->version, f->rebooting_vibs[i].version) != 0) {
			f->reboot_pending = true;
			f->reboot_pending_why = gc_xasprintf("VIB %s %s installed, active after reboot",
							     f->rebooting_vibs[i].name,
							     f->rebooting_vibs[i].version);
		}
	}
	if (!f->reboot_pending && f->ecc_current >= 0 && f->ecc_pending >= 0 &&
	    f->ecc_current != f->ecc_pending) {
		f->reboot_pending = true;
		f->reboot_pending_why = gc_xasprintf("GPU ECC %s pending", f->ecc_pending ? "on" : "off");
	}
}

static void read_pci(struct gc_esxi_facts *f, const struct gc_esxcli_result *r)
{
	f->pci = gc_xcalloc(r->nitems, sizeof(*f->pci));
	for (size_t i = 0; i < r->nitems; i++) {
		const struct gc_esxcli_struct *it = &r->items[i];
		const char *addr = gc_esxcli_get(it, "Address");
		const char *conf = gc_esxcli_get(it, "ConfiguredOwner");
		const char *cur = gc_esxcli_get(it, "CurrentOwner");
		struct gc_esxi_pci *d = &f->pci[f->npci];

		if (addr == NULL || strlen(addr) >= sizeof(d->pci))
			continue;
		strcpy(d->pci, addr);
		d->configured_passthru = conf && strcmp(conf, "VM Passthru") == 0;
		d->current_passthru = cur && strcmp(cur, "VM Passthru") == 0;
		d->vendor_id = gc_xstrdup(field_or_empty(it, "VendorID"));
		d->device_id = gc_xstrdup(field_or_empty(it, "DeviceID"));
		d->device_name = gc_xstrdup(field_or_empty(it, "DeviceName"));
		d->vmkernel_name = gc_xstrdup(field_or_empty(it, "VMkernelName"));
		d->module_name = gc_xstrdup(field_or_empty(it, "ModuleName"));
		d->class_id = gc_xstrdup(field_or_empty(it, "DeviceClass"));
		f->npci++;
	}
}

static void read_passthru(struct gc_esxi_facts *f, const struct gc_esxcli_result *r)
{
	f->passthru = gc_xcalloc(r->nitems, sizeof(*f->passthru));
	for (size_t i = 0; i < r->nitems; i++) {
		const char *id = gc_esxcli_get(&r->items[i], "DeviceID");

		if (id == NULL || strlen(id) >= sizeof(f->passthru[0].pci))
			continue;
		strcpy(f->passthru[f->npassthru].pci, id);
		f->passthru[f->npassthru].enabled = truthy(gc_esxcli_get(&r->items[i], "Enabled"));
		f->npassthru++;
	}
}

static void read_nmlx5(struct gc_esxi_facts *f, const struct gc_esxcli_result *r)
{
	f->nmlx5_core_present = true;
	f->nmlx5_params = gc_xcalloc(r->nitems, sizeof(*f->nmlx5_params));
	for (size_t i = 0; i < r->nitems; i++) {
		const char *name = gc_esxcli_get(&r->items[i], "Name");
		const char *val = gc_esxcli_get(&r->items[i], "Value");

		/* kept without a value too: the list names every parameter
		 * the loaded driver accepts */
		if (name == NULL)
			continue;
		f->nmlx5_params[f->nnmlx5_params].name = gc_xstrdup(name);
		f->nmlx5_params[f->nnmlx5_params].value = gc_xstrdup(val ? val : "");
		f->nnmlx5_params++;
	}
}

static void read_firewall(struct gc_esxi_facts *f, const struct gc_esxcli_result *r)
{
	f->rulesets = gc_xcalloc(r->nitems, sizeof(*f->rulesets));
	for (size_t i = 0; i < r->nitems; i++) {
		const char *name = gc_esxcli_get(&r->items[i], "Name");

		if (name == NULL)
			continue;
		f->rulesets[f->nrulesets].name = gc_xstrdup(name);
		f->rulesets[f->nrulesets].enabled = truthy(gc_esxcli_get(&r->items[i], "Enabled"));
		f->nrulesets++;
	}
}

/* The sections of one record: maintenance, graphics, the PVRDMA tag, NTP. */
static void read_one(struct gc_esxi_facts *f, int sec, const struct gc_esxcli_result *r)
{
	const struct gc_esxcli_struct *it = r->nitems > 0 ? &r->items[0] : NULL;
	const char *v;

	if (sec == S_MAINT) {
		f->maintenance = r->scalar && strcmp(r->scalar, "Enabled") == 0;
	} else if (sec == S_GRAPHICS && it != NULL) {
		v = gc_esxcli_get(it, "DefaultGraphicsType");
		f->graphics_default_type = v ? gc_xstrdup(v) : NULL;
		v = gc_esxcli_get(it, "SharedPassthruAssignmentPolicy");
		f->graphics_policy = v ? gc_xstrdup(v) : NULL;
	} else if (sec == S_PVRDMA && it != NULL) {
		f->pvrdma_vmknic = gc_xstrdup(field_or_empty(it, "StringValue"));
	} else if (sec == S_NTP && it != NULL) {
		/* ESXi 7.0U1+ `system ntp get`: Enabled and Server(s); the XML
		 * field name of the server list is not captured in
		 * REAL-FORMATS, so accept both spellings. */
		if ((v = gc_esxcli_get(it, "Server")) == NULL)
			v = gc_esxcli_get(it, "Servers");
		f->ntp_enabled = truthy(gc_esxcli_get(it, "Enabled"));
		f->ntp_servers = gc_xstrdup(v ? v : "");
	}
}

/* The sections that are not esxcli XML: vmware -v, nvidia-smi, the
 * bundle's VIB list, MFT.  1: sec is not one of them. */
static int read_text_section(struct gc_esxi_facts *f, int sec, const char *token, const char *text,
			     size_t len, struct gc_error *err)
{
	char *copy;
	int rc = 0;

	switch (sec) {
	case S_MFT:
		return gc_esxi_parse_mft(f, token, text, len, err);
	case S_LEASE:
		return read_lease(f, token, text, len, err);
	case S_EXIT: /* the command prints nothing when it works */
		f->exit_sent = true;
		return 0;
	case S_LEASE_CLEAR: /* the compare-and-clear's one line */
		copy = gc_xstrndup(text, len);
		if (strstr(copy, "@@lease:cleared") != NULL)
			f->lease_clear = GC_ESXI_LEASE_CLEARED;
		else if (strstr(copy, "@@lease:kept") != NULL)
			f->lease_clear = GC_ESXI_LEASE_KEPT;
		else if (strstr(copy, "@@lease:none") != NULL)
			f->lease_clear = GC_ESXI_LEASE_ABSENT;
		free(copy);
		return 0;
	case S_SRIOV: /* read against the spec by sriov.c, after the reboot */
		free(f->sriov_xml);
		f->sriov_xml = gc_xstrndup(text, len);
		f->sriov_len = len;
		return 0;
	case S_VERSION:
		copy = gc_xstrndup(text, len);
		rc = gc_esxi_parse_version(&f->version, &f->build, copy, err);
		free(copy);
		return rc;
	case S_ECC:
		copy = gc_xstrndup(text, len);
		f->have_nvidia_smi = true;
		parse_ecc(f, copy);
		free(copy);
		return 0;
	case S_SOURCE_VIBS:
		if (gc_esxi_parse_source_vibs(&f->source_vibs, &f->nsource_vibs, text, len, err) != 0) {
			gc_error_prefix(err, "'%s': ", commands[sec]);
			return err->code;
		}
		f->source_listed = true;
		return 0;
	default:
		return 1;
	}
}

static int read_section(struct gc_esxi_facts *f, int sec, const char *token, const char *text,
			size_t len, struct gc_error *err)
{
	struct gc_esxcli_result r = {NULL, 0, NULL};
	int rc = read_text_section(f, sec, token, text, len, err);

	if (rc <= 0)
		return rc;
	if (gc_esxcli_parse_xml(&r, text, len, err) != 0) {
		gc_error_prefix(err, "'%s': ", commands[sec]);
		return err->code;
	}
	if (sec == S_VIBS)
		read_vibs(&f->vibs, &f->nvibs, &r);
	else if (sec == S_VIBS_REBOOT)
		read_vibs(&f->rebooting_vibs, &f->nrebooting_vibs, &r);
	else if (sec == S_PCI)
		read_pci(f, &r);
	else if (sec == S_PASSTHRU)
		read_passthru(f, &r);
	else if (sec == S_NMLX5)
		read_nmlx5(f, &r);
	else if (sec == S_FIREWALL)
		read_firewall(f, &r);
	else
		read_one(f, sec, &r);
	gc_esxcli_result_free(&r);
	return 0;
}

/* The n of "@@gc:<token>:<n>", read within its length (the output is not
 * NUL-terminated): 1-3 digits, else -1. */
static int marker_number(const char *tag, size_t len)
{
	int v = 0;
	size_t i;

	if (len == 0 || len > 3)
		return -1;
	for (i = 0; i < len; i++) {
		if (tag[i] < '0' || tag[i] > '9')
			return -1;
		v = v * 10 + (tag[i] - '0');
	}
	return v;
}

int gc_esxi_parse_observation(struct gc_esxi_facts *out, const char *token, const char *text,
			      size_t len, struct gc_error *err)
{
	struct gc_esxi_facts f;
	const char *p = text, *end = text + len;
	const char *sec_start = NULL;
	char prefix[64];
	size_t plen;
	int sec = 0;
	unsigned seen = 0; /* each section once: a repeat would be read twice */
	bool failed = false, done = false;

	memset(&f, 0, sizeof(f));
	f.ecc_current = f.ecc_pending = -1;
	plen = (size_t)snprintf(prefix, sizeof(prefix), "@@gc:%s:", token);
	while (p < end && !done) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;
		size_t n = (size_t)((nl ? nl : end) - p);

		if (n > plen && memcmp(p, prefix, plen) == 0) {
			const char *tag = p + plen;
			size_t tlen = n - plen;
			int newsec = -1;

			if (tlen == 6 && memcmp(tag, "failed", 6) == 0) {
				failed = true;
				p = next;
				continue;
			}
			if (tlen == 3 && memcmp(tag, "end", 3) == 0)
				done = true;
			else
				newsec = marker_number(tag, tlen);
			/* close the running section */
			if (sec > 0) {
				size_t slen = (size_t)(p - sec_start);

				if (failed) {
					/* no SR-IOV list: sriov_xml stays NULL, which the
					 * read-back reports as its own failure */
					/* the lease unread: the driver reads it by itself;
					 * the exit refused: the driver says so */
					/* the lease's clear failed: cleared at the run's end */
					if (sec == S_EXIT)
						f.exit_failed = true;
					else if (sec != S_ECC && sec != S_NMLX5 && sec != S_SOURCE_VIBS &&
						 sec != S_SRIOV && sec != S_LEASE && sec != S_LEASE_CLEAR)
						note_failure(&f, sec, "command failed");
				} else if (read_section(&f, sec, token, sec_start, slen, err) != 0) {
					gc_esxi_facts_free(&f);
					return err->code;
				}
			}
			sec = newsec;
			failed = false;
			sec_start = next;
			if (!done && (sec <= 0 || sec >= S_COUNT)) {
				gc_esxi_facts_free(&f);
				return gc_error_set(err, GC_EREMOTE, "unexpected observation marker");
			}
			if (!done && (seen & (1u << sec)) != 0) {
				gc_esxi_facts_free(&f);
				return gc_error_set(err, GC_EREMOTE, "observation section %d repeated", sec);
			}
			if (!done)
				seen |= 1u << sec;
		}
		p = next;
	}
	if (!done) {
		gc_esxi_facts_free(&f);
		return gc_error_set(err, GC_ENET, "observation output was cut short (no end marker)");
	}
	derive_pending(&f);
	*out = f;
	return 0;
}

void gc_esxi_facts_free(struct gc_esxi_facts *f)
{
	size_t i;

	if (f == NULL)
		return;
	free(f->lease);
	free(f->version);
	free(f->build);
	free(f->graphics_default_type);
	free(f->graphics_policy);
	for (i = 0; i < f->nvibs; i++) {
		free(f->vibs[i].name);
		free(f->vibs[i].version);
	}
	free(f->vibs);
	for (i = 0; i < f->nrebooting_vibs; i++) {
		free(f->rebooting_vibs[i].name);
		free(f->rebooting_vibs[i].version);
	}
	free(f->rebooting_vibs);
	free_vibs(f->source_vibs, f->nsource_vibs);
	for (i = 0; i < f->npci; i++) {
		free(f->pci[i].vendor_id);
		free(f->pci[i].device_id);
		free(f->pci[i].device_name);
		free(f->pci[i].vmkernel_name);
		free(f->pci[i].module_name);
		free(f->pci[i].class_id);
	}
	free(f->pci);
	free(f->sriov_xml);
	free(f->reboot_pending_why);
	free(f->passthru);
	for (i = 0; i < f->nnmlx5_params; i++) {
		free(f->nmlx5_params[i].name);
		free(f->nmlx5_params[i].value);
	}
	free(f->nmlx5_params);
	for (i = 0; i < f->nrulesets; i++)
		free(f->rulesets[i].name);
	free(f->rulesets);
	free(f->pvrdma_vmknic);
	free(f->ntp_servers);
	free(f->mft);
	for (i = 0; i < f->nfailed; i++)
		free(f->failed[i]);
	free(f->failed);
	memset(f, 0, sizeof(*f));
}

const struct gc_esxi_vib *gc_esxi_facts_vib(const struct gc_esxi_facts *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->nvibs; i++) {
		if (strcmp(f->vibs[i].name, name) == 0)
			return &f->vibs[i];
	}
	return NULL;
}

const struct gc_esxi_vib *gc_esxi_facts_vib_any(const struct gc_esxi_facts *f, const char *name)
{
	const struct gc_esxi_vib *v = gc_esxi_facts_vib(f, name);
	size_t i;

	for (i = 0; i < f->nrebooting_vibs && v == NULL; i++) {
		if (strcmp(f->rebooting_vibs[i].name, name) == 0)
			v = &f->rebooting_vibs[i];
	}
	return v;
}

const struct gc_esxi_pci *gc_esxi_facts_pci(const struct gc_esxi_facts *f, const char *pci)
{
	size_t i;

	for (i = 0; i < f->npci; i++) {
		if (strcasecmp(f->pci[i].pci, pci) == 0)
			return &f->pci[i];
	}
	return NULL;
}

int gc_esxi_facts_passthru(const struct gc_esxi_facts *f, const char *pci)
{
	size_t i;

	for (i = 0; i < f->npassthru; i++) {
		if (strcasecmp(f->passthru[i].pci, pci) == 0)
			return f->passthru[i].enabled;
	}
	return -1;
}

static const struct gc_esxcli_field *nmlx5_param(const struct gc_esxi_facts *f, const char *name)
{
	for (size_t i = 0; i < f->nnmlx5_params; i++) {
		if (strcmp(f->nmlx5_params[i].name, name) == 0)
			return &f->nmlx5_params[i];
	}
	return NULL;
}

const char *gc_esxi_facts_nmlx5_param(const struct gc_esxi_facts *f, const char *name)
{
	const struct gc_esxcli_field *p = nmlx5_param(f, name);

	return p != NULL && p->value[0] != '\0' ? p->value : NULL;
}

bool gc_esxi_facts_nmlx5_accepts(const struct gc_esxi_facts *f, const char *name)
{
	return nmlx5_param(f, name) != NULL;
}

int gc_esxi_facts_ruleset(const struct gc_esxi_facts *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->nrulesets; i++) {
		if (strcmp(f->rulesets[i].name, name) == 0)
			return f->rulesets[i].enabled;
	}
	return -1;
}
