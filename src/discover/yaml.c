/*
 * yaml.c - discover's JSON document as a spec, written with libyaml's
 * emitter (never printf: every scalar goes through one function that lets
 * libyaml quote it), so what a host sends cannot change the YAML's shape.
 *
 * The spec is the input's connection sections copied from the loaded
 * model (credentials are references: variable names and file paths, never
 * secrets), then what was read: hosts (version, NTP, GPUs in passthrough,
 * Mellanox NICs with their SR-IOV VFs), distributed switches, and each
 * switch's Onyx release.  Only values that pass the spec's own patterns
 * go in, so `check` accepts the result.  What a spec cannot hold goes into
 * comments around the document (gc_buf_put_shown() escapes control
 * characters, so a newline from a host cannot end a comment): the header
 * says what to add, the notes what was left out and why, the footer lists
 * the VMs, VIBs and vGPU types as vCenter and the hosts hold them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "gc/discover.h"
#include "gc/pattern.h"

struct out {
	yaml_emitter_t em;
	struct gc_buf *buf;
	struct gc_buf notes; /* "#   ..." lines for the header */
	bool failed;
};

static int write_cb(void *data, unsigned char *bytes, size_t size)
{
	gc_buf_put(data, (const char *)bytes, size);
	return 1;
}

static void emit(struct out *o, yaml_event_t *ev)
{
	if (!o->failed && !yaml_emitter_emit(&o->em, ev))
		o->failed = true;
}

/* A plain scalar where YAML cannot read it as anything but this string,
 * double-quoted otherwise ("8.0.2", "0000:3b:00.0", "true", "4"). */
static bool plain_ok(const char *s)
{
	static const char *const words[] = {"true", "false", "yes", "no", "on", "off", "null",
					    "y", "n", "~"};

	if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
		return false;
	for (const char *p = s; *p; p++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.@/", *p))
			return false;
	for (size_t i = 0; i < GC_ARRAY_LEN(words); i++)
		if (strcasecmp(s, words[i]) == 0)
			return false;
	return true;
}

static void scalar_styled(struct out *o, const char *s, yaml_scalar_style_t style)
{
	yaml_event_t ev;

	yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1, style);
	emit(o, &ev);
}

/* Every string of the document goes through here. */
static void scalar(struct out *o, const char *s, bool quote)
{
	scalar_styled(o, s, quote || !plain_ok(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
						  : YAML_PLAIN_SCALAR_STYLE);
}

static void key_str(struct out *o, const char *k, const char *v)
{
	if (v == NULL)
		return;
	scalar(o, k, false);
	scalar(o, v, false);
}

static void key_uint(struct out *o, const char *k, unsigned v)
{
	char n[16];

	snprintf(n, sizeof(n), "%u", v);
	scalar(o, k, false);
	scalar_styled(o, n, YAML_PLAIN_SCALAR_STYLE);
}

static void key_bool(struct out *o, const char *k, bool v)
{
	scalar(o, k, false);
	scalar_styled(o, v ? "true" : "false", YAML_PLAIN_SCALAR_STYLE);
}

static void map_start(struct out *o, bool flow)
{
	yaml_event_t ev;

	yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
					    flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
	emit(o, &ev);
}

static void map_end(struct out *o)
{
	yaml_event_t ev;

	yaml_mapping_end_event_initialize(&ev);
	emit(o, &ev);
}

static void seq_start(struct out *o, const char *key, bool flow)
{
	yaml_event_t ev;

	scalar(o, key, false);
	yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
					     flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
	emit(o, &ev);
}

static void seq_end(struct out *o)
{
	yaml_event_t ev;

	yaml_sequence_end_event_initialize(&ev);
	emit(o, &ev);
}

/*
 * One comment line; text from a target is shown with control characters
 * escaped (gc_buf_put_shown), and U+2028/U+2029 too, which YAML 1.1 (and
 * libyaml's reader) count as line breaks: nothing ends the comment early.
 */
static void comment(struct gc_buf *b, const char *fmt, ...) GC_PRINTF(2, 3);
static void comment(struct gc_buf *b, const char *fmt, ...)
{
	struct gc_buf t = GC_BUF_INIT, shown = GC_BUF_INIT;
	const char *p;
	va_list ap;

	va_start(ap, fmt);
	gc_buf_vprintf(&t, fmt, ap);
	va_end(ap);
	gc_buf_put_shown(&shown, gc_buf_str(&t), false);
	gc_buf_puts(b, "# ");
	for (p = gc_buf_str(&shown); *p; p++) {
		if (strncmp(p, "\xe2\x80\xa8", 3) == 0 || strncmp(p, "\xe2\x80\xa9", 3) == 0) {
			gc_buf_printf(b, "\\u%04x", p[2] == '\xa8' ? 0x2028u : 0x2029u);
			p += 2;
		} else {
			gc_buf_putc(b, *p);
		}
	}
	gc_buf_putc(b, '\n');
	gc_buf_free(&shown);
	gc_buf_free(&t);
}

/* ---------------------------------------------------------------- JSON access */

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

static int jint(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int)
		       ? json_object_get_int(v)
		       : 0;
}

static bool jbool(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

static json_object *jarr(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array) ? v
												   : NULL;
}

#define JFOR(i, a) for (size_t i = 0; (a) != NULL && i < json_object_array_length(a); i++)

/* ---------------------------------------------------------------- the input's sections */

static void credentials(struct out *o, const struct gc_cluster *c)
{
	if (c->ncredentials == 0)
		return;
	seq_start(o, "credentials", false);
	for (size_t i = 0; i < c->ncredentials; i++) {
		const struct gc_credential *cr = &c->credentials[i];

		map_start(o, true);
		key_str(o, "name", cr->name);
		key_str(o, "username", cr->username);
		key_str(o, "password_env", cr->password_env);
		key_str(o, "password_file", cr->password_file);
		key_str(o, "key_file", cr->key_file);
		key_str(o, "key_passphrase_env", cr->key_passphrase_env);
		if (cr->agent)
			key_bool(o, "agent", true);
		map_end(o);
	}
	seq_end(o);
}

static void ssh_map(struct out *o, const struct gc_ssh *s)
{
	scalar(o, "ssh", false);
	map_start(o, true);
	key_uint(o, "port", s->port);
	key_str(o, "known_hosts", s->known_hosts);
	key_bool(o, "trust_new_host_keys", s->trust_new_host_keys);
	key_uint(o, "connect_timeout_s", s->connect_timeout_s);
	key_uint(o, "command_timeout_s", s->command_timeout_s);
	key_uint(o, "read_timeout_s", s->read_timeout_s);
	key_uint(o, "keepalive_s", s->keepalive_s);
	map_end(o);
}

static bool ssh_same(const struct gc_ssh *a, const struct gc_ssh *b)
{
	bool kh = (a->known_hosts == NULL && b->known_hosts == NULL) ||
		  (a->known_hosts && b->known_hosts && strcmp(a->known_hosts, b->known_hosts) == 0);

	return kh && a->port == b->port && a->trust_new_host_keys == b->trust_new_host_keys &&
	       a->connect_timeout_s == b->connect_timeout_s &&
	       a->command_timeout_s == b->command_timeout_s &&
	       a->read_timeout_s == b->read_timeout_s && a->keepalive_s == b->keepalive_s;
}

static void vcenter(struct out *o, const struct gc_vcenter *vc)
{
	if (vc == NULL)
		return;
	scalar(o, "vcenter", false);
	map_start(o, false);
	key_str(o, "url", vc->url);
	key_str(o, "datacenter", vc->datacenter);
	key_str(o, "cluster", vc->cluster);
	key_str(o, "datastore", vc->datastore);
	key_str(o, "credentials", vc->credentials_name);
	key_str(o, "ca_file", vc->ca_file);
	if (vc->insecure)
		key_bool(o, "insecure", true);
	key_uint(o, "max_tasks", vc->max_tasks);
	key_uint(o, "max_tasks_per_host", vc->max_tasks_per_host);
	key_uint(o, "shutdown_timeout_s", vc->shutdown_timeout_s);
	map_end(o);
}

/* ---------------------------------------------------------------- hosts */

static void host_gpus(struct out *o, json_object *h, const char *name)
{
	json_object *gpus = jarr(h, "gpus");
	size_t n = 0;

	JFOR(i, gpus) {
		json_object *g = json_object_array_get_idx(gpus, i);
		const char *mode = jstr(g, "mode"), *model = jstr(g, "model");

		if (strcmp(mode, "passthrough") != 0 || model == NULL) {
			comment(&o->notes, "  host '%s': GPU %s (%s, %s) %s: add it with the mode you "
				"want%s", name, jstr(g, "pci"), model ? model : "model not in the table",
				jstr(g, "device_name") ? jstr(g, "device_name") : "?",
				strcmp(mode, "vgpu") == 0 ? "is in vGPU mode (host graphics SharedPassthru)"
				: strcmp(mode, "unused") == 0 ? "is neither passthrough nor vGPU"
							       : "is in passthrough",
				strcmp(mode, "vgpu") == 0 ? " and a vgpu: section naming the bundle" :
				model == NULL ? " and memory_gb" : "");
			continue;
		}
		if (n++ == 0)
			seq_start(o, "gpus", false);
		map_start(o, true);
		key_str(o, "pci", jstr(g, "pci"));
		key_str(o, "model", model);
		key_str(o, "mode", "passthrough");
		map_end(o);
	}
	if (n > 0)
		seq_end(o);
}

static void host_nics(struct out *o, json_object *h, const char *name)
{
	json_object *nics = jarr(h, "nics");
	size_t n = 0;

	JFOR(i, nics) {
		json_object *x = json_object_array_get_idx(nics, i);
		const char *mode = jstr(x, "mode"), *model = jstr(x, "model");

		if (model == NULL) {
			comment(&o->notes, "  host '%s': Mellanox NIC %s (%s) is not in the NIC table: add "
				"it with model and driver", name, jstr(x, "pci"),
				jstr(x, "device_name") ? jstr(x, "device_name") : "?");
			continue;
		}
		if (n++ == 0)
			seq_start(o, "nics", false);
		map_start(o, true);
		key_str(o, "pci", jstr(x, "pci"));
		key_str(o, "model", model);
		key_str(o, "device", jstr(x, "vmnic"));
		if (strcmp(mode, "none") != 0)
			key_str(o, "mode", mode);
		if (strcmp(mode, "sriov") == 0)
			key_uint(o, "vfs", (unsigned)jint(x, "vfs"));
		map_end(o);
	}
	if (n > 0)
		seq_end(o);
}

static void host_ntp(struct out *o, json_object *h, const char *name)
{
	json_object *ntp = jarr(h, "ntp");

	if (ntp == NULL) {
		comment(&o->notes, "  host '%s': NTP not read (no `esxcli system ntp` on this "
			"release): add ntp: if you manage it", name);
		return;
	}
	if (json_object_array_length(ntp) == 0)
		return;
	seq_start(o, "ntp", true);
	JFOR(i, ntp)
		scalar(o, json_object_get_string(json_object_array_get_idx(ntp, i)), false);
	seq_end(o);
}

static void host_unavailable(struct out *o, json_object *h, const char *name)
{
	json_object *u = jarr(h, "unavailable");
	struct gc_buf b = GC_BUF_INIT;

	JFOR(i, u)
		gc_buf_printf(&b, "%s%s", i ? ", " : "", json_object_get_string(json_object_array_get_idx(u, i)));
	if (b.len > 0)
		comment(&o->notes, "  host '%s' (ESXi %s) does not answer: %s", name,
			jstr(h, "version") ? jstr(h, "version") : "?", gc_buf_str(&b));
	gc_buf_free(&b);
}

static void host(struct out *o, const struct gc_cluster *c, const struct gc_host *sh,
		 json_object *h)
{
	map_start(o, false);
	key_str(o, "name", sh->name);
	key_str(o, "address", sh->address);
	if (sh->hypervisor == GC_HV_KVM)
		key_str(o, "hypervisor", "kvm");
	key_str(o, "credentials", sh->credentials_name);
	if (!ssh_same(&sh->ssh, &c->ssh_defaults))
		ssh_map(o, &sh->ssh);
	if (sh->hypervisor == GC_HV_KVM) {
		comment(&o->notes, "  host '%s' is a KVM host: discover reads ESXi hosts only",
			sh->name);
		map_end(o);
		return;
	}
	if (!jbool(h, "read")) {
		comment(&o->notes, "  host '%s' was not read: %s", sh->name, jstr(h, "error"));
		map_end(o);
		return;
	}
	key_str(o, "version", jstr(h, "version"));
	host_ntp(o, h, sh->name);
	host_gpus(o, h, sh->name);
	host_nics(o, h, sh->name);
	host_unavailable(o, h, sh->name);
	map_end(o);
}

static void hosts(struct out *o, const struct gc_cluster *c, json_object *doc)
{
	json_object *a = jarr(doc, "hosts");

	if (c->nhosts == 0)
		return;
	seq_start(o, "hosts", false);
	for (size_t i = 0; i < c->nhosts; i++)
		host(o, c, &c->hosts[i], json_object_array_get_idx(a, i));
	seq_end(o);
}

/* ---------------------------------------------------------------- vCenter and switches */

/* The spec host a vCenter host name stands for: by name, else by address. */
static const char *spec_host(const struct gc_cluster *c, const char *vc_name)
{
	for (size_t i = 0; vc_name != NULL && i < c->nhosts; i++)
		if (strcmp(c->hosts[i].name, vc_name) == 0 || strcmp(c->hosts[i].address, vc_name) == 0)
			return c->hosts[i].name;
	return NULL;
}

static void dvs_uplinks(struct out *o, const struct gc_cluster *c, json_object *d)
{
	json_object *up = jarr(d, "uplinks");
	size_t n = 0;

	JFOR(i, up) {
		json_object *u = json_object_array_get_idx(up, i);
		const char *h = spec_host(c, jstr(u, "host")), *nic = jstr(u, "nic");

		if (h == NULL || nic == NULL || !gc_valid_ifname(nic))
			continue;
		if (n++ == 0)
			seq_start(o, "uplinks", false);
		map_start(o, true);
		key_str(o, "host", h);
		key_str(o, "nic", nic);
		map_end(o);
	}
	if (n > 0)
		seq_end(o);
}

static bool vc_name_ok(const char *s)
{
	return s != NULL && gc_valid_label(s) && strlen(s) <= 80;
}

/*
 * A port group whose VLAN is not one id (a trunk) is left out: a spec port
 * group has one VLAN.  The switch's uplink port group is such a trunk
 * (0-4094, as vCenter and govmomi's simulator create it), and no spec
 * lists it.
 */
static void dvs_portgroups(struct out *o, json_object *d)
{
	json_object *pgs = jarr(d, "port_groups"), *v;
	size_t n = 0;

	JFOR(i, pgs) {
		json_object *p = json_object_array_get_idx(pgs, i);
		int vlan = jint(p, "vlan");

		if (!vc_name_ok(jstr(p, "name")))
			continue;
		if (!json_object_object_get_ex(p, "vlan", &v) || v == NULL) {
			comment(&o->notes, "  port group '%s' of '%s': a VLAN trunk, not one VLAN (an "
				"uplink port group)", jstr(p, "name"), jstr(d, "name"));
			continue;
		}
		if (n++ == 0)
			seq_start(o, "port_groups", false);
		map_start(o, true);
		key_str(o, "name", jstr(p, "name"));
		if (vlan > 0 && vlan <= 4094)
			key_uint(o, "vlan", (unsigned)vlan);
		map_end(o);
	}
	if (n > 0)
		seq_end(o);
}

static void dvswitches(struct out *o, const struct gc_cluster *c, json_object *vc)
{
	json_object *a = vc && jbool(vc, "read") ? jarr(vc, "dvswitches") : NULL;
	size_t n = 0;

	JFOR(i, a) {
		json_object *d = json_object_array_get_idx(a, i);
		int mtu = jint(d, "mtu");

		if (!gc_valid_name(jstr(d, "name"))) {
			comment(&o->notes, "  distributed switch '%s': its name is not a spec name",
				jstr(d, "name"));
			continue;
		}
		if (n++ == 0)
			seq_start(o, "distributed_switches", false);
		map_start(o, false);
		key_str(o, "name", jstr(d, "name"));
		if (mtu >= 1280 && mtu <= 9000)
			key_uint(o, "mtu", (unsigned)mtu);
		dvs_uplinks(o, c, d);
		dvs_portgroups(o, d);
		map_end(o);
	}
	if (n > 0)
		seq_end(o);
}

static void switches(struct out *o, const struct gc_cluster *c, json_object *doc)
{
	json_object *a = jarr(doc, "switches");

	if (c->nswitches == 0)
		return;
	seq_start(o, "switches", false);
	for (size_t i = 0; i < c->nswitches; i++) {
		const struct gc_switch *sw = &c->switches[i];
		json_object *s = json_object_array_get_idx(a, i);
		const char *rel = jstr(s, "release");

		map_start(o, false);
		key_str(o, "name", sw->name);
		key_str(o, "address", sw->address);
		key_str(o, "credentials", sw->credentials_name);
		key_str(o, "enable_password_env", sw->enable_password_env);
		if (!ssh_same(&sw->ssh, &c->ssh_defaults))
			ssh_map(o, &sw->ssh);
		if (!jbool(s, "read"))
			comment(&o->notes, "  switch '%s' was not read: %s", sw->name, jstr(s, "error"));
		else if (rel != NULL && gc_valid_version(rel))
			key_str(o, "version", rel);
		map_end(o);
	}
	seq_end(o);
}

/* ---------------------------------------------------------------- comments */

static void footer_vm(struct gc_buf *b, json_object *vm)
{
	json_object *devs = jarr(vm, "devices");
	struct gc_buf d = GC_BUF_INIT;

	JFOR(i, devs) {
		json_object *x = json_object_array_get_idx(devs, i);

		gc_buf_printf(&d, "; %s", jstr(x, "type") ? jstr(x, "type") : "?");
		if (jstr(x, "pci"))
			gc_buf_printf(&d, " %s", jstr(x, "pci"));
		if (jstr(x, "vgpu"))
			gc_buf_printf(&d, " %s", jstr(x, "vgpu"));
		if (jstr(x, "sriov_pf"))
			gc_buf_printf(&d, " pf %s", jstr(x, "sriov_pf"));
		if (jstr(x, "network"))
			gc_buf_printf(&d, " network '%s'", jstr(x, "network"));
	}
	comment(b, "  %s%s on %s: %s, %d CPUs, %d MB, %s%s", jstr(vm, "name"),
		jbool(vm, "template") ? " (template)" : "", jstr(vm, "host") ? jstr(vm, "host") : "?",
		jstr(vm, "power_state") ? jstr(vm, "power_state") : "?", jint(vm, "cpus"),
		jint(vm, "memory_mb"), jstr(vm, "firmware") ? jstr(vm, "firmware") : "?", gc_buf_str(&d));
	gc_buf_free(&d);
}

static void footer(struct gc_buf *b, json_object *doc)
{
	json_object *vc = NULL, *hs = jarr(doc, "hosts"), *a;

	json_object_object_get_ex(doc, "vcenter", &vc);
	JFOR(i, hs) {
		json_object *h = json_object_array_get_idx(hs, i), *vibs = jarr(h, "vibs");

		if (vibs == NULL || json_object_array_length(vibs) == 0)
			continue;
		comment(b, "VIBs installed on '%s':", jstr(h, "name"));
		JFOR(j, vibs) {
			json_object *v = json_object_array_get_idx(vibs, j);

			comment(b, "  %s %s", jstr(v, "name"), jstr(v, "version"));
		}
	}
	if (vc == NULL || !jbool(vc, "read"))
		return;
	a = jarr(vc, "hosts");
	JFOR(i, a) {
		json_object *h = json_object_array_get_idx(a, i), *t = jarr(h, "vgpu_types");
		struct gc_buf l = GC_BUF_INIT;

		JFOR(j, t)
			gc_buf_printf(&l, "%s%s", j ? " " : "", json_object_get_string(json_object_array_get_idx(t, j)));
		if (l.len > 0)
			comment(b, "vGPU types '%s' offers: %s", jstr(h, "name"), gc_buf_str(&l));
		gc_buf_free(&l);
	}
	a = jarr(vc, "vms");
	if (a != NULL && json_object_array_length(a) > 0)
		comment(b, "VMs and templates as vCenter holds them (write vms: entries for those "
			"to manage):");
	JFOR(i, a)
		footer_vm(b, json_object_array_get_idx(a, i));
}

static void header(struct gc_buf *b, const struct gc_cluster *c, const struct gc_buf *notes)
{
	comment(b, "Discovered by `gpuclusterctl discover` from the targets of %s (read-only).",
		c->source_path ? c->source_path : "the spec");
	comment(b, "Connection settings and credential references are the input's; no secret is here.");
	comment(b, "Review, then add what discover cannot know: vms:, each switch's roce: section,");
	comment(b, "the vGPU manager bundle of vGPU hosts.  What the targets hold that a spec");
	comment(b, "cannot say is listed after the document.");
	if (notes->len > 0) {
		comment(b, "Left out:");
		gc_buf_put(b, notes->ptr, notes->len);
	}
}

static void document(struct out *o, const struct gc_cluster *c, json_object *doc)
{
	json_object *vc = NULL;

	json_object_object_get_ex(doc, "vcenter", &vc);
	map_start(o, false);
	key_str(o, "apiVersion", "gpuclusterctl/v1");
	key_str(o, "kind", "Cluster");
	scalar(o, "metadata", false);
	map_start(o, false);
	key_str(o, "name", c->name);
	key_str(o, "description", c->description);
	map_end(o);
	credentials(o, c);
	ssh_map(o, &c->ssh_defaults);
	vcenter(o, c->vcenter);
	hosts(o, c, doc);
	dvswitches(o, c, vc);
	switches(o, c, doc);
	map_end(o);
}

int gc_discover_yaml(struct gc_buf *out, const struct gc_cluster *c, json_object *doc,
		     struct gc_error *err)
{
	struct out o = {.buf = NULL, .notes = GC_BUF_INIT, .failed = false};
	struct gc_buf body = GC_BUF_INIT;
	yaml_event_t ev;

	if (!yaml_emitter_initialize(&o.em))
		return gc_error_set(err, GC_ENOMEM, "libyaml: cannot start the emitter");
	yaml_emitter_set_output(&o.em, write_cb, &body);
	yaml_emitter_set_unicode(&o.em, 1);
	yaml_emitter_set_width(&o.em, 100);
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	emit(&o, &ev);
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
	emit(&o, &ev);
	document(&o, c, doc);
	yaml_document_end_event_initialize(&ev, 1);
	emit(&o, &ev);
	yaml_stream_end_event_initialize(&ev);
	emit(&o, &ev);
	yaml_emitter_delete(&o.em);
	if (!o.failed) {
		header(out, c, &o.notes);
		gc_buf_put(out, body.ptr, body.len);
		footer(out, doc);
	}
	gc_buf_free(&body);
	gc_buf_free(&o.notes);
	return o.failed ? gc_error_set(err, GC_ERROR, "libyaml could not emit the spec") : 0;
}
