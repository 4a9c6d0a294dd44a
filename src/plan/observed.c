/*
 * observed.c - the observed-state store and its JSON snapshot reader.
 *
 * Resources, hosts and VMs are kept in insertion-ordered arrays with a hash
 * index each (src/graph/strmap.h); strings live in the store's arena.  The
 * JSON reader uses json-c's tokener (no hand-written parsing) and checks
 * the shape strictly: unknown top-level keys, wrong types and a version
 * other than 1 are errors, so a typo in a snapshot cannot silently plan a
 * change.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "gc/observed.h"
#include "gc/strmap.h"

struct gc_observed {
	struct gc_arena arena;
	struct gc_observed_resource **res;
	size_t nres, capres;
	struct gc_observed_host **hosts;
	size_t nhosts, caphosts;
	struct gc_observed_vm **vms;
	size_t nvms, capvms;
	/* desired values learned on a target (gc_observed_learn), same shape */
	struct gc_observed_resource **lres;
	size_t nlres, caplres;
	struct gc_strmap *rindex, *hindex, *vindex, *lindex;
};

void gc_observed_new(struct gc_observed **out)
{
	struct gc_observed *o = gc_xcalloc(1, sizeof(*o));

	o->rindex = gc_strmap_new();
	o->hindex = gc_strmap_new();
	o->vindex = gc_strmap_new();
	o->lindex = gc_strmap_new();
	*out = o;
}

void gc_observed_free(struct gc_observed *o)
{
	if (o == NULL)
		return;
	gc_strmap_free(o->rindex);
	gc_strmap_free(o->hindex);
	gc_strmap_free(o->vindex);
	gc_strmap_free(o->lindex);
	free(o->lres);
	free(o->res);
	free(o->hosts);
	free(o->vms);
	gc_arena_free(&o->arena);
	free(o);
}

static void *grow(void *arr, size_t n, size_t *cap, size_t elem)
{
	if (n < *cap)
		return arr;
	*cap = *cap ? *cap * 2 : 16;
	return gc_xrealloc(arr, *cap * elem);
}

/* The entry of id in one of the two tables (observed resources, or learned
 * desired values), created when new. */
static struct gc_observed_resource *entry(struct gc_observed *o, struct gc_strmap *index,
					  struct gc_observed_resource ***arr, size_t *n, size_t *cap,
					  const char *id)
{
	struct gc_observed_resource *r = gc_strmap_get(index, id);

	if (r != NULL)
		return r;
	r = gc_arena_alloc(&o->arena, sizeof(*r));
	r->id = gc_arena_strdup(&o->arena, id);
	*arr = grow(*arr, *n, cap, sizeof(**arr));
	(*arr)[(*n)++] = r;
	gc_strmap_put(index, r->id, r);
	return r;
}

static struct gc_observed_resource *resource(struct gc_observed *o, const char *id)
{
	return entry(o, o->rindex, &o->res, &o->nres, &o->capres, id);
}

static void set_prop(struct gc_observed *o, struct gc_observed_resource *r, const char *key,
		     const char *value);

void gc_observed_add(struct gc_observed *o, const char *resource_id)
{
	(void)resource(o, resource_id);
}

void gc_observed_set(struct gc_observed *o, const char *resource_id, const char *key,
		     const char *value)
{
	set_prop(o, resource(o, resource_id), key, value);
}

void gc_observed_learn(struct gc_observed *o, const char *resource_id, const char *key,
		       const char *value)
{
	set_prop(o, entry(o, o->lindex, &o->lres, &o->nlres, &o->caplres, resource_id), key, value);
}

const char *gc_observed_learned(const struct gc_observed *o, const char *resource_id,
				const char *key)
{
	const struct gc_observed_resource *r = gc_strmap_get(o->lindex, resource_id);

	for (size_t i = 0; r != NULL && i < r->nprops; i++) {
		if (strcmp(r->props[i].key, key) == 0)
			return r->props[i].value;
	}
	return NULL;
}

static void set_prop(struct gc_observed *o, struct gc_observed_resource *r, const char *key,
		     const char *value)
{
	struct gc_prop *p;

	for (size_t i = 0; i < r->nprops; i++) {
		if (strcmp(r->props[i].key, key) == 0) {
			r->props[i].value = gc_arena_strdup(&o->arena, value);
			return;
		}
	}
	if (r->nprops == r->capprops) {
		size_t cap = r->capprops ? r->capprops * 2 : 4;

		p = gc_arena_alloc(&o->arena, cap * sizeof(*p));
		if (r->nprops > 0)
			memcpy(p, r->props, r->nprops * sizeof(*p));
		r->props = p;
		r->capprops = cap;
	}
	r->props[r->nprops].key = gc_arena_strdup(&o->arena, key);
	r->props[r->nprops].value = gc_arena_strdup(&o->arena, value);
	r->nprops++;
}

void gc_observed_set_host(struct gc_observed *o, const char *host, bool maintenance,
			  bool reachable)
{
	struct gc_observed_host *h = gc_strmap_get(o->hindex, host);

	if (h == NULL) {
		h = gc_arena_alloc(&o->arena, sizeof(*h));
		h->name = gc_arena_strdup(&o->arena, host);
		o->hosts = grow(o->hosts, o->nhosts, &o->caphosts, sizeof(*o->hosts));
		o->hosts[o->nhosts++] = h;
		gc_strmap_put(o->hindex, h->name, h);
	}
	h->maintenance = maintenance;
	h->reachable = reachable;
}

static struct gc_observed_host *host_of(struct gc_observed *o, const char *host)
{
	struct gc_observed_host *h = gc_strmap_get(o->hindex, host);

	if (h == NULL) {
		gc_observed_set_host(o, host, false, true);
		h = gc_strmap_get(o->hindex, host);
	}
	return h;
}

void gc_observed_set_host_pending(struct gc_observed *o, const char *host, bool pending,
				  const char *why)
{
	struct gc_observed_host *h = host_of(o, host);

	h->reboot_pending = pending;
	h->reboot_pending_why = why ? gc_arena_strdup(&o->arena, why) : NULL;
}

void gc_observed_set_host_ours(struct gc_observed *o, const char *host, bool ours)
{
	host_of(o, host)->maintenance_ours = ours;
}

void gc_observed_set_vm(struct gc_observed *o, const char *vm, enum gc_power power,
			const char *host, bool live_migratable)
{
	struct gc_observed_vm *v = gc_strmap_get(o->vindex, vm);
	char *id;

	if (v == NULL) {
		v = gc_arena_alloc(&o->arena, sizeof(*v));
		v->name = gc_arena_strdup(&o->arena, vm);
		o->vms = grow(o->vms, o->nvms, &o->capvms, sizeof(*o->vms));
		o->vms[o->nvms++] = v;
		gc_strmap_put(o->vindex, v->name, v);
	}
	v->power = power;
	v->host = host ? gc_arena_strdup(&o->arena, host) : NULL;
	v->live_migratable = live_migratable;
	if (power == GC_POWER_ON || power == GC_POWER_OFF) {
		id = gc_xasprintf("vm/%s/power", vm);
		gc_observed_set(o, id, "power", gc_power_name(power));
		free(id);
	}
}

const struct gc_observed_resource *gc_observed_resource(const struct gc_observed *o,
							const char *resource_id)
{
	return gc_strmap_get(o->rindex, resource_id);
}

const char *gc_observed_get(const struct gc_observed *o, const char *resource_id,
			    const char *key)
{
	const struct gc_observed_resource *r = gc_observed_resource(o, resource_id);

	if (r == NULL)
		return NULL;
	for (size_t i = 0; i < r->nprops; i++)
		if (strcmp(r->props[i].key, key) == 0)
			return r->props[i].value;
	return NULL;
}

const struct gc_observed_host *gc_observed_host(const struct gc_observed *o, const char *host)
{
	return gc_strmap_get(o->hindex, host);
}

const struct gc_observed_vm *gc_observed_vm(const struct gc_observed *o, const char *vm)
{
	return gc_strmap_get(o->vindex, vm);
}

size_t gc_observed_nresources(const struct gc_observed *o)
{
	return o->nres;
}

const struct gc_observed_resource *gc_observed_resource_at(const struct gc_observed *o, size_t i)
{
	return i < o->nres ? o->res[i] : NULL;
}

size_t gc_observed_nvms(const struct gc_observed *o)
{
	return o->nvms;
}

const struct gc_observed_vm *gc_observed_vm_at(const struct gc_observed *o, size_t i)
{
	return i < o->nvms ? o->vms[i] : NULL;
}

const char *gc_power_name(enum gc_power p)
{
	switch (p) {
	case GC_POWER_UNKNOWN:
		return "unknown";
	case GC_POWER_OFF:
		return "off";
	case GC_POWER_ON:
		return "on";
	case GC_POWER_SUSPENDED:
		return "suspended";
	}
	return "unknown";
}

int gc_power_parse(enum gc_power *out, const char *s)
{
	static const enum gc_power all[] = {GC_POWER_UNKNOWN, GC_POWER_OFF, GC_POWER_ON,
					    GC_POWER_SUSPENDED};

	for (size_t i = 0; i < GC_ARRAY_LEN(all); i++) {
		if (strcmp(gc_power_name(all[i]), s) == 0) {
			*out = all[i];
			return 0;
		}
	}
	return GC_EINVAL;
}

/* ---------------------------------------------------------------- JSON snapshot */

static int bad(struct gc_error *err, const char *name, const char *path, const char *what)
{
	return gc_error_set(err, GC_EINVAL, "%s: %s: %s", name, path, what);
}

/* "resources" and "learned": id -> {key: string}; learned values do not
 * make a resource exist. */
static int load_props(struct gc_observed *o, const char *name, const char *section,
		      json_object *res, struct gc_error *err)
{
	bool learned = strcmp(section, "learned") == 0;

	if (!json_object_is_type(res, json_type_object))
		return bad(err, name, section, "expected an object");
	json_object_object_foreach(res, id, props)
	{
		if (!json_object_is_type(props, json_type_object))
			return gc_error_set(err, GC_EINVAL, "%s: %s.\"%s\": expected an object",
					    name, section, id);
		if (!learned)
			gc_observed_add(o, id);
		json_object_object_foreach(props, key, val)
		{
			if (!json_object_is_type(val, json_type_string))
				return gc_error_set(err, GC_EINVAL,
						    "%s: %s.\"%s\".%s: expected a string", name,
						    section, id, key);
			if (learned)
				gc_observed_learn(o, id, key, json_object_get_string(val));
			else
				gc_observed_set(o, id, key, json_object_get_string(val));
		}
	}
	return 0;
}

/* Optional boolean member; *out keeps its default when absent. */
static int get_bool(bool *out, json_object *obj, const char *key, const char *name,
		    const char *what, struct gc_error *err)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return gc_error_set(err, GC_EINVAL, "%s: %s.%s: expected true or false", name, what,
				    key);
	*out = json_object_get_boolean(v);
	return 0;
}

static int check_keys(json_object *obj, const char *const *allowed, size_t n, const char *name,
		      const char *what, struct gc_error *err)
{
	json_object_object_foreach(obj, key, val)
	{
		size_t i;

		(void)val;
		for (i = 0; i < n; i++)
			if (strcmp(key, allowed[i]) == 0)
				break;
		if (i == n)
			return gc_error_set(err, GC_EINVAL, "%s: %s: unknown key '%s'", name, what,
					    key);
	}
	return 0;
}

static int load_hosts(struct gc_observed *o, const char *name, json_object *hosts,
		      struct gc_error *err)
{
	static const char *const keys[] = {"maintenance", "reachable", "reboot_pending",
					   "reboot_pending_why", "maintenance_ours"};

	if (!json_object_is_type(hosts, json_type_object))
		return bad(err, name, "hosts", "expected an object");
	json_object_object_foreach(hosts, host, facts)
	{
		bool maint = false, reachable = true, pending = false, ours = false;
		const char *why = NULL;
		char *what = gc_xasprintf("hosts.\"%s\"", host);
		json_object *v;
		int rc;

		if (!json_object_is_type(facts, json_type_object))
			rc = bad(err, name, what, "expected an object");
		else if ((rc = check_keys(facts, keys, GC_ARRAY_LEN(keys), name, what, err)) == 0 &&
			 (rc = get_bool(&maint, facts, "maintenance", name, what, err)) == 0 &&
			 (rc = get_bool(&pending, facts, "reboot_pending", name, what, err)) == 0 &&
			 (rc = get_bool(&ours, facts, "maintenance_ours", name, what, err)) == 0)
			rc = get_bool(&reachable, facts, "reachable", name, what, err);
		if (rc == 0 && json_object_object_get_ex(facts, "reboot_pending_why", &v)) {
			if (json_object_is_type(v, json_type_string))
				why = json_object_get_string(v);
			else
				rc = gc_error_set(err, GC_EINVAL, "%s: %s.reboot_pending_why: expected a string",
						  name, what);
		}
		free(what);
		if (rc != 0)
			return rc;
		gc_observed_set_host(o, host, maint, reachable);
		if (pending)
			gc_observed_set_host_pending(o, host, true, why);
		if (ours)
			gc_observed_set_host_ours(o, host, true);
	}
	return 0;
}

static int load_vms(struct gc_observed *o, const char *name, json_object *vms,
		    struct gc_error *err)
{
	static const char *const keys[] = {"power", "host", "live_migratable"};

	if (!json_object_is_type(vms, json_type_object))
		return bad(err, name, "vms", "expected an object");
	json_object_object_foreach(vms, vm, facts)
	{
		enum gc_power power = GC_POWER_UNKNOWN;
		const char *host = NULL;
		bool migratable = false;
		char *what = gc_xasprintf("vms.\"%s\"", vm);
		json_object *v;
		int rc = 0;

		if (!json_object_is_type(facts, json_type_object))
			rc = bad(err, name, what, "expected an object");
		if (rc == 0)
			rc = check_keys(facts, keys, GC_ARRAY_LEN(keys), name, what, err);
		if (rc == 0 && json_object_object_get_ex(facts, "power", &v) &&
		    (!json_object_is_type(v, json_type_string) ||
		     gc_power_parse(&power, json_object_get_string(v)) != 0))
			rc = gc_error_set(err, GC_EINVAL,
					  "%s: %s.power: expected \"on\", \"off\", \"suspended\" or "
					  "\"unknown\"",
					  name, what);
		if (rc == 0 && json_object_object_get_ex(facts, "host", &v)) {
			if (json_object_is_type(v, json_type_string))
				host = json_object_get_string(v);
			else
				rc = bad(err, name, what, "host: expected a string");
		}
		if (rc == 0)
			rc = get_bool(&migratable, facts, "live_migratable", name, what, err);
		free(what);
		if (rc != 0)
			return rc;
		gc_observed_set_vm(o, vm, power, host, migratable);
	}
	return 0;
}

int gc_observed_load_json_buffer(struct gc_observed **out, const char *name, const char *data,
				 size_t len, struct gc_error *err)
{
	static const char *const keys[] = {"version", "resources", "hosts", "vms", "learned",
					   "comment"};
	struct json_tokener *tok = json_tokener_new();
	struct gc_observed *o = NULL;
	json_object *root, *v;
	int rc = 0;

	if (len > GC_OBSERVED_MAX_BYTES) {
		rc = gc_error_set(err, GC_ENOMEM, "%s: larger than %u bytes", name,
				  GC_OBSERVED_MAX_BYTES);
		root = NULL;
		goto out;
	}
	root = json_tokener_parse_ex(tok, data, (int)len);
	if (root == NULL || json_tokener_get_parse_end(tok) < len) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		if (root != NULL && e == json_tokener_success)
			rc = gc_error_set(err, GC_EINVAL, "%s: trailing data after the JSON document",
					  name);
		else
			rc = gc_error_set(err, GC_EINVAL, "%s: invalid JSON: %s", name,
					  e == json_tokener_continue ? "unexpected end of input"
								     : json_tokener_error_desc(e));
		goto out;
	}
	if (!json_object_is_type(root, json_type_object)) {
		rc = gc_error_set(err, GC_EINVAL, "%s: expected a JSON object", name);
		goto out;
	}
	if ((rc = check_keys(root, keys, GC_ARRAY_LEN(keys), name, "top level", err)) != 0)
		goto out;
	if (!json_object_object_get_ex(root, "version", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int(v) != 1) {
		rc = gc_error_set(err, GC_EINVAL, "%s: \"version\" must be 1", name);
		goto out;
	}
	gc_observed_new(&o);
	if (json_object_object_get_ex(root, "resources", &v) &&
	    (rc = load_props(o, name, "resources", v, err)) != 0)
		goto out;
	if (json_object_object_get_ex(root, "learned", &v) &&
	    (rc = load_props(o, name, "learned", v, err)) != 0)
		goto out;
	if (json_object_object_get_ex(root, "hosts", &v) && (rc = load_hosts(o, name, v, err)) != 0)
		goto out;
	if (json_object_object_get_ex(root, "vms", &v) && (rc = load_vms(o, name, v, err)) != 0)
		goto out;
	*out = o;
	o = NULL; /* now owned by the caller */
out:
	gc_observed_free(o);
	json_object_put(root);
	json_tokener_free(tok);
	return rc;
}

int gc_observed_load_json(struct gc_observed **out, const char *path, struct gc_error *err)
{
	char *data = NULL;
	size_t len = 0;
	int rc;

	rc = gc_read_file(&data, &len, path, GC_OBSERVED_MAX_BYTES, err);
	if (rc != 0)
		return rc;
	rc = gc_observed_load_json_buffer(out, path, data, len, err);
	free(data);
	return rc;
}

/* ---------------------------------------------------------------- writing */

#define JSON_FLAGS (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/* json-c serializes each entry; the frame is written around them so a big
 * store never becomes one big json-c tree. */
static void put_entry(struct gc_buf *out, const char *key, json_object *val, bool last)
{
	json_object *k = json_object_new_string(key);
	const char *s = json_object_to_json_string_ext(val, JSON_FLAGS), *nl;

	gc_buf_puts(out, "    ");
	gc_buf_puts(out, json_object_to_json_string_ext(k, JSON_FLAGS));
	gc_buf_puts(out, ": ");
	while ((nl = strchr(s, '\n')) != NULL) {
		gc_buf_put(out, s, (size_t)(nl - s) + 1);
		gc_buf_puts(out, "    ");
		s = nl + 1;
	}
	gc_buf_puts(out, s);
	gc_buf_puts(out, last ? "\n" : ",\n");
	json_object_put(k);
	json_object_put(val);
}

void gc_observed_render_json(struct gc_buf *out, const struct gc_observed *o)
{
	gc_buf_puts(out, "{\n  \"version\": 1,\n  \"resources\": {\n");
	for (size_t i = 0; i < o->nres; i++) {
		const struct gc_observed_resource *r = o->res[i];
		json_object *props = json_object_new_object();

		for (size_t k = 0; k < r->nprops; k++)
			json_object_object_add(props, r->props[k].key,
					       json_object_new_string(r->props[k].value));
		put_entry(out, r->id, props, i + 1 == o->nres);
	}
	gc_buf_puts(out, "  },\n  \"hosts\": {\n");
	for (size_t i = 0; i < o->nhosts; i++) {
		const struct gc_observed_host *h = o->hosts[i];
		json_object *f = json_object_new_object();

		json_object_object_add(f, "maintenance", json_object_new_boolean(h->maintenance));
		json_object_object_add(f, "reachable", json_object_new_boolean(h->reachable));
		if (h->reboot_pending) {
			json_object_object_add(f, "reboot_pending", json_object_new_boolean(true));
			if (h->reboot_pending_why != NULL)
				json_object_object_add(f, "reboot_pending_why",
						       json_object_new_string(h->reboot_pending_why));
		}
		if (h->maintenance_ours)
			json_object_object_add(f, "maintenance_ours", json_object_new_boolean(true));
		put_entry(out, h->name, f, i + 1 == o->nhosts);
	}
	gc_buf_puts(out, "  },\n  \"vms\": {\n");
	for (size_t i = 0; i < o->nvms; i++) {
		const struct gc_observed_vm *v = o->vms[i];
		json_object *f = json_object_new_object();

		json_object_object_add(f, "power", json_object_new_string(gc_power_name(v->power)));
		if (v->host != NULL)
			json_object_object_add(f, "host", json_object_new_string(v->host));
		if (v->live_migratable)
			json_object_object_add(f, "live_migratable", json_object_new_boolean(true));
		put_entry(out, v->name, f, i + 1 == o->nvms);
	}
	gc_buf_puts(out, "  }");
	if (o->nlres > 0) { /* only when a driver learned something: older snapshots stay byte-equal */
		gc_buf_puts(out, ",\n  \"learned\": {\n");
		for (size_t i = 0; i < o->nlres; i++) {
			const struct gc_observed_resource *r = o->lres[i];
			json_object *props = json_object_new_object();

			for (size_t k = 0; k < r->nprops; k++)
				json_object_object_add(props, r->props[k].key,
						       json_object_new_string(r->props[k].value));
			put_entry(out, r->id, props, i + 1 == o->nlres);
		}
		gc_buf_puts(out, "  }");
	}
	gc_buf_puts(out, "\n}\n");
}
