/*
 * parse.c - the table-driven map walker that turns YAML nodes into model
 * fields.
 *
 * Each model struct has a table of struct spec_field (schema.c): key, type,
 * offset into the struct, string pattern or allowed values, numeric range,
 * required flag.  spec_parse_map() walks one YAML mapping against a table:
 * unknown keys get a did-you-mean hint, a key given twice is an error, each
 * value is type-checked with YAML 1.2 core-schema rules on plain scalars
 * (quoted scalars are always strings; a plain 8.0 is a number and must be
 * quoted to be a string), numbers are range-checked, strings are checked
 * with the strict validators of gc/pattern.h.  Each parsed map is recorded
 * (object, table, node) so later checks can find where a field was written.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gc/pattern.h"
#include "internal.h"

enum scalar_kind { K_NULL, K_BOOL, K_INT, K_FLOAT, K_STR };

static bool is_digits(const char *s)
{
	if (*s < '0' || *s > '9')
		return false;
	while (*s >= '0' && *s <= '9')
		s++;
	return *s == '\0';
}

static bool in_list(const char *s, const char *const *list)
{
	for (; *list; list++) {
		if (strcmp(s, *list) == 0)
			return true;
	}
	return false;
}

static const char *const null_words[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const true_words[] = {"true", "True", "TRUE", NULL};
static const char *const false_words[] = {"false", "False", "FALSE", NULL};
static const char *const yaml11_bools[] = {"yes", "Yes", "YES", "no", "No", "NO", "on", "On",
					   "ON", "off", "Off", "OFF", "y", "Y", "n", "N", NULL};

static bool is_float(const char *s)
{
	const char *p = s;
	bool digits = false;

	if (*p == '+' || *p == '-')
		p++;
	while (*p >= '0' && *p <= '9') {
		p++;
		digits = true;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			p++;
			digits = true;
		}
	}
	if (!digits)
		return false;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!is_digits(p))
			return false;
		return true;
	}
	return *p == '\0';
}

static enum scalar_kind classify(const struct spec_node *n)
{
	const char *s = n->u.value;

	if (!n->plain)
		return K_STR;
	/* most scalars are names: no word below starts like them */
	if (strchr("~nNtTfF+-.0123456789", s[0]) == NULL)
		return K_STR;
	if (in_list(s, null_words))
		return K_NULL;
	if (in_list(s, true_words) || in_list(s, false_words))
		return K_BOOL;
	if (is_digits(s[0] == '-' || s[0] == '+' ? s + 1 : s))
		return K_INT;
	if (is_float(s) || strcmp(s, ".inf") == 0 || strcmp(s, "-.inf") == 0 ||
	    strcmp(s, ".nan") == 0)
		return K_FLOAT;
	return K_STR;
}

/* "a mapping", "a string 'x'", "the number 8.0", "null", "the boolean true" */
static const char *describe(struct spec_ctx *x, const struct spec_node *n)
{
	const char *s;

	switch ((enum spec_node_type)n->type) {
	case SPEC_MAP: return "a mapping";
	case SPEC_SEQ: return "a sequence";
	case SPEC_SCALAR: break;
	}
	s = n->u.value;
	switch (classify(n)) {
	case K_NULL: return "null";
	case K_BOOL: return gc_arena_printf(x->arena, "the boolean %s", s);
	case K_INT:
	case K_FLOAT: return gc_arena_printf(x->arena, "the number %s", spec_esc(x, s));
	case K_STR: break;
	}
	return gc_arena_printf(x->arena, "the string '%s'", spec_esc(x, s));
}

/* ---------------------------------------------------------------- string patterns */

static bool valid_url(const char *s)
{
	const char *host, *end;
	char buf[256];
	size_t n;

	if (strncmp(s, "https://", 8) != 0)
		return false;
	host = s + 8;
	if (*host == '[') { /* IPv6 literal: https://[fd00::1]:443/sdk */
		host++;
		end = strchr(host, ']');
		if (end == NULL)
			return false;
		n = (size_t)(end - host);
		if (n == 0 || n >= sizeof(buf))
			return false;
		memcpy(buf, host, n);
		buf[n] = '\0';
		if (strchr(buf, ':') == NULL || !gc_valid_host(buf))
			return false;
		end++;
		goto port;
	}
	end = host + strcspn(host, ":/");
	n = (size_t)(end - host);
	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, host, n);
	buf[n] = '\0';
	if (!gc_valid_host(buf) || strchr(buf, ':') != NULL)
		return false;
port:
	if (*end == ':') {
		unsigned long port;
		char *e;

		end++;
		if (*end < '0' || *end > '9')
			return false;
		errno = 0;
		port = strtoul(end, &e, 10);
		if (errno || port == 0 || port > 65535 || (*e != '\0' && *e != '/'))
			return false;
		end = e;
	}
	if (strlen(end) > 512)
		return false;
	for (; *end; end++) {
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~/-",
			   *end) == NULL)
			return false;
	}
	return true;
}

static bool valid_charset(const char *s, const char *set, size_t max)
{
	size_t n = strlen(s);

	return n > 0 && n <= max && strspn(s, set) == n;
}

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

/* One line of printable UTF-8 (descriptions, never sent anywhere). */
static bool valid_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (strlen(s) > 1024)
		return false;
	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return false;
	}
	return true;
}

/* Hardware model names: "V100-32GB", "ConnectX-6 Dx" (one inner space allowed). */
static bool valid_model(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 63 && strspn(s, ALNUM) > 0 && s[n - 1] != ' ' &&
	       strstr(s, "  ") == NULL && strspn(s, ALNUM " ._-") == n;
}

static bool pat_ok(enum spec_pat p, const char *s)
{
	switch (p) {
	case P_ANY: return true;
	case P_NAME: return gc_valid_name(s);
	case P_HOST: return gc_valid_host(s);
	case P_PCI: return gc_valid_pci(s);
	case P_PCI_ID: return gc_valid_pci_id(s);
	case P_PATH: return gc_valid_abs_path(s);
	case P_IFNAME: return gc_valid_ifname(s);
	case P_PORTS: return gc_valid_port_range(s);
	case P_VERSION: return gc_valid_version(s);
	case P_PROFILE: return gc_valid_vgpu_profile(s);
	case P_ENV: return gc_valid_env_name(s);
	case P_LABEL: return gc_valid_label(s);
	case P_VCNAME: return gc_valid_label(s) && strlen(s) <= 80;
	case P_URL: return valid_url(s);
	case P_NETDEV: return s[0] != '-' && valid_charset(s, ALNUM "._-", 15);
	case P_RDMADEV: return valid_charset(s, ALNUM "_", 31);
	case P_USER: return s[0] != '-' && valid_charset(s, ALNUM "._@-", 128);
	case P_TEXT: return valid_text(s);
	case P_MODEL: return valid_model(s);
	case P_CIDR: return gc_valid_ipv4_cidr(s);
	case P_PACKAGE: return gc_valid_package(s);
	case P_LIBVIRT_URI: return gc_valid_libvirt_uri(s);
	case P_NICDEV: return gc_valid_ifname(s) || pat_ok(P_NETDEV, s);
	/* vCenter names VMkernel adapters vmk0, vmk1, ... (HostVirtualNic.device) */
	case P_VMKNIC:
		return strncmp(s, "vmk", 3) == 0 && s[3] != '\0' && strlen(s) <= 7 &&
		       strspn(s + 3, "0123456789") == strlen(s + 3);
	}
	return false;
}

/* The noun used in "invalid NOUN 'value'"; NULL: "invalid value '...' for 'key'". */
static const char *pat_noun(enum spec_pat p)
{
	switch (p) {
	case P_NAME: return "name";
	case P_HOST: return "address";
	case P_PCI: return "PCI address";
	case P_PCI_ID: return "PCI id";
	case P_PATH: return "path";
	case P_IFNAME: return "ESXi device name";
	case P_PORTS: return "port range";
	case P_VERSION: return "version";
	case P_PROFILE: return "vgpu profile";
	case P_ENV: return "environment variable name";
	case P_URL: return "URL";
	case P_NETDEV: return "interface name";
	case P_RDMADEV: return "RDMA device name";
	case P_USER: return "user name";
	case P_MODEL: return "model name";
	case P_CIDR: return "address";
	case P_PACKAGE: return "package name";
	case P_LIBVIRT_URI: return "libvirt URI";
	case P_NICDEV: return "device name";
	case P_VMKNIC: return "VMkernel adapter name";
	case P_ANY:
	case P_VCNAME:
	case P_LABEL:
	case P_TEXT: return NULL;
	}
	return NULL;
}

const char *spec_pat_hint(enum spec_pat p)
{
	switch (p) {
	case P_ANY: return NULL;
	case P_NAME:
		return "expected 1-63 letters, digits, '.', '_' or '-', starting with a letter or "
		       "digit";
	case P_HOST: return "expected a hostname, an IPv4 or an IPv6 address, e.g. 127.0.0.11";
	case P_PCI: return "expected domain:bus:slot.function in hex, e.g. 0000:3b:00.0";
	case P_PCI_ID: return "expected vendor:device in hex, e.g. 10de:1db6";
	case P_PATH:
		return "expected an absolute path of letters, digits and '._/+-', e.g. "
		       "/etc/gpuclusterctl/ca.pem";
	case P_IFNAME: return "expected an ESXi device name like vmnic4 or vmk1";
	case P_PORTS: return "expected Onyx ports like 1/1, 1/1-1/32 or 1/1-1/4,1/9";
	case P_VERSION: return "expected letters, digits and '.+_-', e.g. 8.0.2";
	case P_PROFILE: return "expected a profile name like grid_t4-16c";
	case P_ENV: return "expected letters, digits and '_', e.g. GC_ESXI_PASSWORD";
	case P_LABEL:
		return "expected printable ASCII without quotes, backslash, backtick or '$', at "
		       "most 255 characters";
	case P_VCNAME:
		return "vCenter allows names of at most 80 bytes: printable ASCII without quotes, "
		       "backslash, backtick or '$'";
	case P_URL: return "expected https://host[:port][/path], e.g. https://vc.lab.example/sdk";
	case P_NETDEV: return "expected a Linux interface name like ens224 (at most 15 characters)";
	case P_RDMADEV: return "expected an RDMA device name like mlx5_0";
	case P_USER: return "expected letters, digits and '._@-', e.g. administrator@vsphere.local";
	case P_TEXT: return "expected one line of printable text, at most 1024 bytes";
	case P_MODEL: return "expected a model name like V100-32GB or ConnectX-5";
	case P_CIDR: return "expected an IPv4 address with its prefix length, e.g. 198.18.0.51/24";
	case P_PACKAGE: return "expected a package name like nvidia-driver-535-server";
	case P_NICDEV:
		return "expected an ESXi device name like vmnic4, or on a KVM host the Linux "
		       "interface name like ens1f0";
	case P_VMKNIC: return "expected a VMkernel adapter name like vmk1";
	case P_LIBVIRT_URI:
		return "expected qemu:///system or qemu+ssh://[USER@]HOST[:PORT]/system[?keyfile=PATH]";
	}
	return NULL;
}

/* ---------------------------------------------------------------- values */

static void type_error(struct spec_ctx *x, const struct spec_node *v, const char *key,
		       const char *want)
{
	const char *hint = NULL;

	if (v->type == SPEC_SCALAR && strcmp(want, "a string") == 0 &&
	    (classify(v) == K_INT || classify(v) == K_FLOAT || classify(v) == K_BOOL))
		hint = gc_arena_printf(x->arena, "quote it: %s: \"%s\"", key,
				       spec_esc(x, v->u.value));
	else if (v->type == SPEC_SCALAR && strstr(want, "true or false") != NULL &&
		 in_list(v->u.value, yaml11_bools))
		hint = "write true or false (YAML 1.2 booleans)";
	else if (strcmp(want, "a list") == 0)
		hint = "write [a, b] or one '- item' per line";
	spec_diag(x, GC_SEV_ERROR, spec_mark(x, v), hint, "'%s' must be %s, got %s", key, want,
		  describe(x, v));
}

/* A string value: NULL (and a diagnostic) when the node is not one. */
static const char *get_string(struct spec_ctx *x, struct spec_node *v, const char *key)
{
	const char *s;

	if (v->type != SPEC_SCALAR || classify(v) != K_STR) {
		type_error(x, v, key, "a string");
		return NULL;
	}
	s = v->u.value;
	if (strlen(s) != v->n) {
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, v), "remove the \\0 escape",
			  "'%s' contains a NUL byte", key);
		return NULL;
	}
	return s;
}

static bool check_string(struct spec_ctx *x, struct spec_node *v, const char *key, const char *s,
			 enum spec_pat pat, const char *const *choices)
{
	if (choices != NULL) {
		struct gc_buf all = GC_BUF_INIT;
		const char *best;
		size_t n = 0;

		if (in_list(s, choices))
			return true;
		while (choices[n])
			n++;
		best = gc_did_you_mean(s, choices, n);
		for (n = 0; choices[n]; n++)
			gc_buf_printf(&all, "%s%s", n ? ", " : "", choices[n]);
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, v),
			  best ? gc_arena_printf(x->arena, "did you mean '%s'? (one of: %s)", best,
						 gc_buf_str(&all))
			       : gc_arena_printf(x->arena, "expected one of: %s", gc_buf_str(&all)),
			  "invalid value '%s' for '%s'", spec_esc(x, s), key);
		gc_buf_free(&all);
		return false;
	}
	if (pat_ok(pat, s))
		return true;
	if (pat == P_URL && strncmp(s, "https://", 8) != 0)
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, v), "vCenter is only reached over https",
			  "'%s' must be an https URL, got '%s'", key, spec_esc(x, s));
	else if (pat_noun(pat) != NULL)
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, v), spec_pat_hint(pat), "invalid %s '%s'",
			  pat_noun(pat), spec_esc(x, s));
	else
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, v), spec_pat_hint(pat),
			  "invalid value '%s' for '%s'", spec_esc(x, s), key);
	return false;
}

static bool get_number(struct spec_ctx *x, struct spec_node *v, const struct spec_field *f,
		       double *out)
{
	const char *s;
	enum scalar_kind k = v->type == SPEC_SCALAR ? classify(v) : K_STR;
	bool integer = f->type != T_NUM;
	double d;

	if (v->type != SPEC_SCALAR || !(k == K_INT || (!integer && k == K_FLOAT))) {
		type_error(x, v, f->key, integer ? "an integer" : "a number");
		return false;
	}
	s = v->u.value;
	errno = 0;
	if (integer) {
		long long ll = strtoll(s, NULL, 10);

		d = errno == ERANGE ? (s[0] == '-' ? -1e300 : 1e300) : (double)ll;
	} else {
		d = strtod(s, NULL);
	}
	if (isnan(d) || d < f->min || d > f->max) {
		if (integer)
			spec_diag(x, GC_SEV_ERROR, spec_mark(x, v), NULL,
				  "'%s' must be between %.0f and %.0f, got %s", f->key, f->min,
				  f->max, spec_esc(x, s));
		else
			spec_diag(x, GC_SEV_ERROR, spec_mark(x, v), NULL,
				  "'%s' must be between %g and %g, got %s", f->key, f->min, f->max,
				  spec_esc(x, s));
		return false;
	}
	*out = d;
	return true;
}

static void get_bool(struct spec_ctx *x, struct spec_node *v, const struct spec_field *f, void *p)
{
	const char *s;

	if (v->type != SPEC_SCALAR || classify(v) != K_BOOL) {
		type_error(x, v, f->key, "true or false");
		return;
	}
	s = v->u.value;
	if (f->type == T_BOOL)
		*(bool *)p = in_list(s, true_words);
	else
		*(enum gc_tristate *)p = in_list(s, true_words) ? GC_TRUE : GC_FALSE;
}

static void get_strlist(struct spec_ctx *x, struct spec_node *v, const struct spec_field *f,
			void *obj)
{
	char ***arr = (void *)((char *)obj + f->off);
	size_t *n = (void *)((char *)obj + f->off_n);
	uint32_t i;

	if (v->type != SPEC_SEQ) {
		type_error(x, v, f->key, "a list");
		return;
	}
	*arr = gc_arena_alloc(x->arena, sizeof(char *) * ((size_t)v->n + 1));
	*n = 0;
	for (i = 0; i < v->n; i++) {
		struct spec_node *e = v->u.items[i];
		const char *s;

		if (!spec_visit(x, e))
			return;
		s = get_string(x, e, f->key);
		if (s == NULL || !check_string(x, e, f->key, s, f->pat, f->choices))
			continue;
		(*arr)[(*n)++] = gc_arena_strdup(x->arena, s);
	}
}

static void set_field(struct spec_ctx *x, struct spec_node *v, const struct spec_field *f, void *obj)
{
	void *p = (char *)obj + f->off;
	double d;
	const char *s;

	switch (f->type) {
	case T_STR:
		s = get_string(x, v, f->key);
		if (s != NULL && check_string(x, v, f->key, s, f->pat, f->choices))
			*(char **)p = gc_arena_strdup(x->arena, s);
		break;
	case T_UINT:
		if (get_number(x, v, f, &d))
			*(unsigned *)p = (unsigned)d;
		break;
	case T_INT:
		if (get_number(x, v, f, &d))
			*(int *)p = (int)d;
		break;
	case T_NUM:
		if (get_number(x, v, f, &d))
			*(double *)p = d;
		break;
	case T_BOOL:
	case T_TRI: get_bool(x, v, f, p); break;
	case T_STRLIST: get_strlist(x, v, f, obj); break;
	case T_SUB: f->sub(x, v, obj); break;
	case T_SKIP: break;
	}
}

/* ---------------------------------------------------------------- maps */

static const char *unknown_key_hint(struct spec_ctx *x, const char *key,
				    const struct spec_field *fields)
{
	const char *names[64] = {NULL};
	struct gc_buf all = GC_BUF_INIT;
	const char *best, *r;
	size_t n = 0;

	if (strcmp(key, "password") == 0 || strcmp(key, "passphrase") == 0 ||
	    strcmp(key, "key_passphrase") == 0 || strcmp(key, "token") == 0)
		return "secrets are never written in the spec: name an environment variable "
		       "(password_env) or a file (password_file)";
	for (size_t i = 0; fields[i].key != NULL && n < GC_ARRAY_LEN(names); i++) {
		if (!fields[i].prefix)
			names[n++] = fields[i].key;
	}
	best = gc_did_you_mean(key, names, n);
	if (best != NULL)
		return gc_arena_printf(x->arena, "did you mean '%s'?", best);
	for (size_t i = 0; i < n; i++)
		gc_buf_printf(&all, "%s%s", i ? ", " : "", names[i]);
	r = gc_arena_printf(x->arena, "expected one of: %s", gc_buf_str(&all));
	gc_buf_free(&all);
	return r;
}

static void parse_pairs(struct spec_ctx *x, struct spec_node *n, const struct spec_field *fields,
			size_t nf, void *obj, int *seen_line, bool merged)
{
	struct spec_pair *pair, *end = n->u.pairs + n->n;
	size_t i;

	for (pair = n->u.pairs; pair < end; pair++) {
		struct spec_node *k = pair->key, *v = pair->value;
		const char *key;

		if (!spec_visit(x, k) || !spec_visit(x, v))
			return;
		if (k->type != SPEC_SCALAR || classify(k) != K_STR) {
			spec_diag(x, GC_SEV_ERROR, spec_mark(x, k), "keys are names: quote it",
				  "keys must be strings, got %s", describe(x, k));
			continue;
		}
		key = k->u.value;
		if (strlen(key) != k->n) {
			spec_diag(x, GC_SEV_ERROR, spec_mark(x, k), "remove the \\0 escape",
				  "key '%s' contains a NUL byte", spec_esc(x, key));
			continue;
		}
		if (strcmp(key, "<<") == 0 && k->plain)
			continue; /* merges are applied after the map's own keys */
		for (i = 0; i < nf; i++) {
			if (fields[i].key[0] == key[0] &&
			    (fields[i].prefix ? strncmp(fields[i].key, key, strlen(fields[i].key)) == 0
					      : strcmp(fields[i].key, key) == 0))
				break;
		}
		if (i == nf) {
			spec_diag(x, GC_SEV_ERROR, spec_mark(x, k),
				  unknown_key_hint(x, key, fields), "unknown key '%s'",
				  spec_esc(x, key));
			continue;
		}
		if (fields[i].prefix)
			continue;
		if (seen_line[i] != 0) {
			if (!merged)
				spec_diag(x, GC_SEV_ERROR, spec_mark(x, k),
					  gc_arena_printf(x->arena, "first given at line %d",
							  seen_line[i]),
					  "duplicate key '%s'", key);
			continue; /* a merged key never overrides the map's own */
		}
		seen_line[i] = spec_mark(x, k).line;
		set_field(x, v, &fields[i], obj);
	}
}

/* YAML merge keys (<<: *anchor or <<: [*a, *b]): earlier merges win. */
static void parse_merges(struct spec_ctx *x, struct spec_node *n, const struct spec_field *fields,
			 size_t nf, void *obj, int *seen_line)
{
	struct spec_pair *pair, *end = n->u.pairs + n->n;

	for (pair = n->u.pairs; pair < end; pair++) {
		struct spec_node *k = pair->key, *v = pair->value;
		uint32_t i;

		if (k->type != SPEC_SCALAR ||
		    !k->plain ||
		    strcmp(k->u.value, "<<") != 0)
			continue;
		if (v->type == SPEC_MAP) {
			parse_pairs(x, v, fields, nf, obj, seen_line, true);
			continue;
		}
		if (v->type != SPEC_SEQ) {
			type_error(x, v, "<<", "a mapping or a list of mappings");
			continue;
		}
		for (i = 0; i < v->n; i++) {
			struct spec_node *e = v->u.items[i];

			if (!spec_visit(x, e))
				return;
			if (e->type != SPEC_MAP)
				type_error(x, e, "<<", "a mapping");
			else
				parse_pairs(x, e, fields, nf, obj, seen_line, true);
		}
	}
}

void spec_parse_map(struct spec_ctx *x, struct spec_node *n, const struct spec_field *fields,
		    void *obj, const char *what)
{
	int seen_line[64];
	size_t nf = 0, i;

	if (n->type != SPEC_MAP) {
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, n), "write key: value pairs here",
			  "%s must be a mapping, got %s", what, describe(x, n));
		x->last_obj = NULL;
		return;
	}
	while (fields[nf].key != NULL)
		nf++;
	assert(nf <= GC_ARRAY_LEN(seen_line));
	memset(seen_line, 0, sizeof(seen_line));
	parse_pairs(x, n, fields, nf, obj, seen_line, false);
	parse_merges(x, n, fields, nf, obj, seen_line);
	x->last_seen = 0;
	for (i = 0; i < nf; i++) {
		if (seen_line[i] != 0)
			x->last_seen |= (uint64_t)1 << i;
		if (fields[i].required && seen_line[i] == 0)
			spec_diag(x, GC_SEV_ERROR, spec_mark(x, n),
				  gc_arena_printf(x->arena, "add %s: ...", fields[i].key),
				  "missing required key '%s' in %s", fields[i].key, what);
	}
	if (x->nobjs == x->capobjs) {
		x->capobjs = x->capobjs ? x->capobjs * 2 : 1024;
		x->objs = gc_xrealloc(x->objs, x->capobjs * sizeof(*x->objs));
	}
	x->objs[x->nobjs].obj = obj;
	x->objs[x->nobjs].fields = fields;
	x->objs[x->nobjs].node = n;
	x->nobjs++;
	x->objs_sorted = false;
	x->last_obj = obj;
	x->last_fields = fields;
}

const char *spec_string(struct spec_ctx *x, struct spec_node *v, const char *key, enum spec_pat pat,
			const char *const *choices)
{
	const char *s = get_string(x, v, key);

	if (s == NULL || !check_string(x, v, key, s, pat, choices))
		return NULL;
	return s;
}

void spec_type_error(struct spec_ctx *x, struct spec_node *v, const char *key, const char *want)
{
	type_error(x, v, key, want);
}
