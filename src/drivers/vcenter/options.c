/*
 * options.c - vCenter advanced settings: the OptionManager that the service
 * content names `setting` ("VpxSettings" on vCenter and vcsim).
 *
 * QueryOptions(name) answers the OptionValue entries of that name (vcsim:
 * every key starting with it, so the reply is searched for the exact key),
 * or the fault InvalidName when vCenter has no such setting: the key is
 * then left out of the inventory, which is how a setting that came with a
 * later release shows (vgpu.hotmigrate.enabled: vCenter 6.7 Update 1).
 * UpdateOptions(changedValue[]) sets one, with the xsi:type the value was
 * read with (a boolean setting takes xsd:boolean), and answers nothing;
 * it is no task.  Element order as in the vSphere API reference
 * (OptionValue: key, value); values xsd-typed as soap.c explains.
 */
#include <stdio.h>
#include <string.h>

#include "gc/pattern.h"
#include "soap.h"

#define SETTINGS_MAX 64 /* keys asked for in one observation */

void gc_vcenter_query_options_body(struct gc_vcenter_soap *s, const char *manager, const char *key)
{
	gc_vcenter_soap_begin(s, "QueryOptions", "OptionManager", manager);
	gc_vcenter_soap_elem(s, "name", key);
}

void gc_vcenter_update_options_body(struct gc_vcenter_soap *s, const char *manager, const char *key,
				    const char *value, const char *type)
{
	char xsi[32];

	gc_vcenter_soap_begin(s, "UpdateOptions", "OptionManager", manager);
	gc_vcenter_soap_open(s, "changedValue", NULL);
	gc_vcenter_soap_elem(s, "key", key);
	snprintf(xsi, sizeof(xsi), "xsd:%s", type);
	gc_vcenter_soap_open(s, "value", xsi);
	gc_vcenter_soap_text(s, value);
	gc_vcenter_soap_close(s, "value");
	gc_vcenter_soap_close(s, "changedValue");
}

int gc_vcenter_options_parse(struct gc_vcenter_setting *out, struct gc_arena *a, xmlNodePtr ret,
			     const char *key)
{
	for (xmlNodePtr v = gc_vcenter_xml_child(ret, "returnval"); v != NULL;
	     v = gc_vcenter_xml_next(v, "returnval")) {
		const char *k = gc_vcenter_xml_text(a, v, "key");
		xmlNodePtr val = gc_vcenter_xml_child(v, "value");
		char tbuf[64];
		const char *type = gc_vcenter_xml_type(val, tbuf, sizeof(tbuf));
		const char *colon = type ? strchr(type, ':') : NULL;

		if (k == NULL || strcmp(k, key) != 0)
			continue;
		out->key = k;
		out->value = val != NULL ? gc_vcenter_xml_text(a, val, NULL) : "";
		out->type = gc_arena_strdup(a, colon ? colon + 1 : (type ? type : "string"));
		return 1;
	}
	return 0;
}

static bool is_invalid_name(const char *fault)
{
	static const char tail[] = "(InvalidName)";
	size_t n = strlen(fault);

	return n >= sizeof(tail) - 1 && strcmp(fault + n - (sizeof(tail) - 1), tail) == 0;
}

int gc_vcenter_query_settings(struct gc_vcenter_inventory *inv, struct gc_vcenter_conn *vc,
			      const char *const *keys, size_t n, struct gc_error *err)
{
	if (n > SETTINGS_MAX)
		return gc_error_set(err, GC_EINVAL, "%s: more than %d settings to read", vc->target,
				    SETTINGS_MAX);
	if (n > 0 && vc->setting[0] == '\0')
		return gc_error_set(err, GC_EREMOTE, "%s: the service content names no setting "
						     "manager (OptionManager)",
				    vc->target);
	inv->settings = gc_arena_alloc(&inv->arena, (n ? n : 1) * sizeof(*inv->settings));
	inv->nsettings = 0;
	for (size_t i = 0; i < n; i++) {
		struct gc_vcenter_soap s;
		xmlDocPtr doc = NULL;
		xmlNodePtr ret;
		char fault[512] = "";
		int rc;

		gc_vcenter_query_options_body(&s, vc->setting, keys[i]);
		rc = gc_vcenter_soap_end(&s, vc, err);
		if (rc == 0)
			rc = gc_vcenter_soap_call_fault(vc, &s, &doc, &ret, fault, sizeof(fault), err);
		gc_vcenter_soap_free(&s);
		if (rc != 0 && is_invalid_name(fault)) {
			gc_error_clear(err); /* vCenter has no such setting */
			continue;
		}
		if (rc != 0)
			return rc;
		if (gc_vcenter_options_parse(&inv->settings[inv->nsettings], &inv->arena, ret,
					     keys[i]) > 0)
			inv->nsettings++;
		xmlFreeDoc(doc);
	}
	return 0;
}

const struct gc_vcenter_setting *gc_vcenter_inventory_setting(const struct gc_vcenter_inventory *inv,
							      const char *key)
{
	for (size_t i = 0; i < inv->nsettings; i++)
		if (strcmp(inv->settings[i].key, key) == 0)
			return &inv->settings[i];
	return NULL;
}

int gc_vcenter_update_setting(struct gc_vcenter_conn *vc, const char *key, const char *value,
			      const char *type, struct gc_error *err)
{
	struct gc_vcenter_soap s;

	if (type == NULL)
		type = "string";
	if (!gc_valid_label(key) ||
	    (strcmp(type, "boolean") == 0
		     ? strcmp(value, "true") != 0 && strcmp(value, "false") != 0
		     : strcmp(type, "string") != 0 || !gc_valid_label(value)))
		return gc_error_set(err, GC_EINVAL, "%s: refusing the setting '%s' = '%s' (%s)",
				    vc->target, key, value, type);
	gc_vcenter_update_options_body(&s, vc->setting, key, value, type);
	return gc_vcenter_soap_run(vc, &s, err);
}
