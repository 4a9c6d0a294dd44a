/*
 * discover.c - `discover`'s reading: every ESXi host, Onyx switch and the
 * vCenter of a (partial) spec, one after the other, each over its own
 * connection with the spec's credentials and SSH settings (host keys
 * checked as for apply: gc_ssh_opts_from_spec), read-only:
 *
 *   ESXi     the ESXi driver's observation batch (gc_esxi_observe_script:
 *            `vmware -v`, esxcli get/list commands, `nvidia-smi -q -d ECC`)
 *   Onyx     `show version` and `show running-config` (gc_onyx_session_observe)
 *   vCenter  one RetrievePropertiesEx of the whole inventory (gc_vcenter_observe)
 *
 * A target that cannot be read carries its error in the document and the
 * others are still read; the first failure is returned.  KVM hosts are
 * listed as not read, without an error: discover knows ESXi only.
 */
#include <stdlib.h>
#include <string.h>

#include "discover_int.h"
#include "gc/discover.h"
#include "gc/json.h"
#include "gc/ssh.h"

static int read_esxi(json_object *o, const struct gc_host *h, const struct gc_drv_settings *set,
		     struct gc_error *err)
{
	struct gc_ssh_opts so;
	struct gc_ssh_conn *ssh = NULL;
	struct gc_ssh_result res;
	struct gc_esxi_facts f;
	char token[17], *known = NULL, *script;
	int rc;

	gc_ssh_opts_from_spec(&so, &known, set, h->address, &h->ssh, h->credentials, "root");
	/* it only reads, as the observation */
	so.command_timeout_ms = gc_ssh_read_cap_ms(&h->ssh, so.command_timeout_ms);
	rc = gc_ssh_connect(&ssh, &so, err);
	free(known);
	if (rc != 0)
		return rc;
	gc_random_token(token);
	script = gc_esxi_observe_script(token, NULL);
	rc = gc_ssh_exec(ssh, script, &res, err);
	free(script);
	if (rc == 0) {
		rc = gc_esxi_parse_observation(&f, token, res.out, res.out_len, err);
		gc_ssh_result_free(&res);
	}
	gc_ssh_free(ssh);
	if (rc != 0)
		return rc;
	discover_esxi_json(o, &f);
	gc_esxi_facts_free(&f);
	return 0;
}

static int read_switch(json_object *o, const struct gc_switch *sw,
		       const struct gc_drv_settings *set, struct gc_error *err)
{
	struct gc_ssh_opts so;
	struct gc_ssh_conn *ssh = NULL;
	struct gc_ssh_shell *shell = NULL;
	struct gc_onyx_session *s = NULL;
	struct gc_onyx_session_opts oo;
	struct gc_onyx_version v;
	struct gc_onyx_state st;
	struct gc_onyx_chan ch;
	char *known = NULL;
	int rc;

	gc_onyx_state_init(&st);
	gc_ssh_opts_from_spec(&so, &known, set, sw->address, &sw->ssh, sw->credentials, "admin");
	rc = gc_ssh_connect(&ssh, &so, err);
	free(known);
	if (rc == 0)
		rc = gc_ssh_shell_open(&shell, ssh, err);
	if (rc == 0) {
		memset(&oo, 0, sizeof(oo));
		oo.switch_name = sw->name;
		oo.enable_password_env = sw->enable_password_env;
		oo.timeout_ms = (int)gc_ssh_read_cap_ms(&sw->ssh, so.command_timeout_ms);
		gc_onyx_chan_ssh(&ch, shell);
		rc = gc_onyx_session_open(&s, &ch, &oo, err);
	}
	if (rc == 0)
		rc = gc_onyx_session_observe(s, &v, &st, false, err);
	if (rc == 0) {
		json_object_object_add(o, "product", gc_json_text(v.product));
		json_object_object_add(o, "release", gc_json_text(v.release));
		json_object_object_add(o, "model", v.model[0] ? gc_json_text(v.model) : NULL);
		json_object_object_add(o, "hostname", gc_json_text(gc_onyx_session_hostname(s)));
	}
	gc_onyx_session_close(s);
	gc_ssh_shell_close(shell);
	gc_ssh_free(ssh);
	gc_onyx_state_free(&st);
	return rc;
}

static int read_vcenter(json_object *o, const struct gc_vcenter *vc, struct gc_error *err)
{
	struct gc_vcenter_opts vo;
	struct gc_vcenter_conn *conn = NULL;
	struct gc_vcenter_inventory *inv = NULL;
	int rc;

	gc_vcenter_opts_from_spec(&vo, vc, vc->credentials);
	rc = gc_vcenter_connect(&conn, &vo, err);
	if (rc == 0) {
		json_object_object_add(o, "api_version", gc_json_text(gc_vcenter_api_version(conn)));
		json_object_object_add(o, "full_name", gc_json_text(gc_vcenter_full_name(conn)));
		rc = gc_vcenter_observe(&inv, conn, err);
	}
	if (rc == 0)
		discover_vcenter_json(o, inv);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(conn);
	return rc;
}

/* A target's entry: name, address, read, error; the first failure wins. */
static json_object *target_json(const char *name, const char *address)
{
	json_object *o = json_object_new_object();

	if (name != NULL)
		json_object_object_add(o, "name", gc_json_text(name));
	json_object_object_add(o, "address", gc_json_text(address));
	return o;
}

static void settle(json_object *o, int rc, const char *what, const char *name,
		   struct gc_error *tmp, struct gc_error *err, int *first)
{
	json_object_object_add(o, "read", json_object_new_boolean(rc == 0));
	json_object_object_add(o, "error", rc == 0 ? NULL : gc_json_text(tmp->msg));
	if (rc != 0 && *first == 0) {
		*first = rc;
		gc_error_set(err, rc, "%s '%s': %s", what, name, tmp->msg);
	}
}

static json_object *read_hosts(const struct gc_cluster *c, const struct gc_drv_settings *set,
			       struct gc_error *err, int *first)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < c->nhosts; i++) {
		const struct gc_host *h = &c->hosts[i];
		json_object *o = target_json(h->name, h->address);
		struct gc_error tmp = GC_ERROR_INIT;
		int rc;

		json_object_object_add(o, "hypervisor",
				       json_object_new_string(h->hypervisor == GC_HV_KVM ? "kvm" : "esxi"));
		if (h->hypervisor == GC_HV_KVM) {
			/* not read, and not a failure: discover knows ESXi only */
			json_object_object_add(o, "read", json_object_new_boolean(false));
			json_object_object_add(o, "error", NULL);
			json_object_array_add(a, o);
			continue;
		}
		rc = read_esxi(o, h, set, &tmp);
		settle(o, rc, "host", h->name, &tmp, err, first);
		json_object_array_add(a, o);
	}
	return a;
}

int gc_discover_run(json_object **out, const struct gc_cluster *c,
		    const struct gc_drv_settings *set, struct gc_error *err)
{
	json_object *doc = json_object_new_object(), *sws = json_object_new_array(), *vco = NULL;
	int first = 0;

	json_object_object_add(doc, "format_version", json_object_new_int(1));
	json_object_object_add(doc, "spec", gc_json_text(c->source_path));
	json_object_object_add(doc, "hosts", read_hosts(c, set, err, &first));
	for (size_t i = 0; i < c->nswitches; i++) {
		const struct gc_switch *sw = &c->switches[i];
		json_object *o = target_json(sw->name, sw->address);
		struct gc_error tmp = GC_ERROR_INIT;

		settle(o, read_switch(o, sw, set, &tmp), "switch", sw->name, &tmp, err, &first);
		json_object_array_add(sws, o);
	}
	json_object_object_add(doc, "switches", sws);
	if (c->vcenter != NULL) {
		struct gc_error tmp = GC_ERROR_INIT;

		vco = json_object_new_object();
		json_object_object_add(vco, "url", gc_json_text(c->vcenter->url));
		settle(vco, read_vcenter(vco, c->vcenter, &tmp), "vCenter", c->vcenter->url, &tmp, err,
		       &first);
	}
	json_object_object_add(doc, "vcenter", vco);
	*out = doc;
	return first;
}
