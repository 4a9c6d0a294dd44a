/*
 * parse.c - parsers for Onyx show output: `show version` (text and
 * `| json-print`), `show running-config` and `show roce`.
 *
 * show version: "Key:" padded so values start at column 19 (REAL-FORMATS
 * B.2); we split at the first ':' and trim instead of trusting the column, so
 * a release with a different padding still parses.  The json-print form is a
 * flat object, read with json-c after skipping any echo before the first '{'.
 *
 * show running-config (B.3): `##` banners and `#` comments (secrets are shown
 * as `# radius-server key ********`) are skipped, indentation (3 spaces, or
 * column 0 for many `no ...` lines) is ignored, and lines are tokenized on
 * blanks.  Section titles are NOT used: where ECN/ETS lines live is unknown
 * (B.3, F), so every line is matched on its own.  Only the RoCE lines of the
 * B.4 recipe are interpreted; any other line is left alone.  A line that
 * starts like a RoCE line but does not parse is an error, and so is a config
 * that opens with the "temporary prefix mode" section but lacks the closing
 * `cli default prefix-modes enable` (truncated output would otherwise look
 * like missing settings, or a cut number like a different one).
 *
 * show roce (B.5): "Key : value" lines with approximate indentation; only
 * "RoCE mode" is required.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "gc/onyx.h"

#define MAX_TOKENS 24

/* ---------------------------------------------------------------- helpers */

static void copy_trim(char *dst, size_t cap, const char *s, size_t n)
{
	while (n > 0 && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* Next line of [*pp, end): sets *line and *n (without "\r\n"), advances. */
static bool next_line(const char **pp, const char *end, const char **line, size_t *n)
{
	const char *p = *pp, *nl;

	if (p >= end)
		return false;
	nl = memchr(p, '\n', (size_t)(end - p));
	*line = p;
	*n = nl ? (size_t)(nl - p) : (size_t)(end - p);
	*pp = nl ? nl + 1 : end;
	while (*n > 0 && ((*line)[*n - 1] == '\r' || (*line)[*n - 1] == ' '))
		(*n)--;
	return true;
}

static bool parse_uint(const char *s, unsigned max, unsigned *out)
{
	unsigned long v = 0;

	if (*s == '\0' || strlen(s) > 9)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (v > max)
		return false;
	*out = (unsigned)v;
	return true;
}

/* "50.00", "50.0", "50" -> 5000 (0..100) */
static bool parse_percent(const char *s, int *x100)
{
	unsigned whole = 0, frac = 0;
	const char *dot = strchr(s, '.');
	char w[8];

	if (dot == NULL)
		return parse_uint(s, 100, &whole) && (*x100 = (int)whole * 100, true);
	if ((size_t)(dot - s) >= sizeof(w) || dot == s)
		return false;
	memcpy(w, s, (size_t)(dot - s));
	w[dot - s] = '\0';
	if (!parse_uint(w, 100, &whole) || strlen(dot + 1) < 1 || strlen(dot + 1) > 2 ||
	    !parse_uint(dot + 1, 99, &frac))
		return false;
	if (strlen(dot + 1) == 1)
		frac *= 10;
	if (whole * 100 + frac > 10000)
		return false;
	*x100 = (int)(whole * 100 + frac);
	return true;
}

/* ---------------------------------------------------------------- show version */

static const char *json_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int version_json(struct gc_onyx_version *v, const char *text, size_t len,
			struct gc_error *err)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root;
	const char *s;
	int rc = 0;

	if (len > INT32_MAX)
		len = INT32_MAX;
	root = json_tokener_parse_ex(tok, text, (int)len);
	if (root == NULL || !json_object_is_type(root, json_type_object)) {
		rc = gc_error_set(err, GC_EINVAL, "show version: invalid json-print output");
		goto out;
	}
	if ((s = json_str(root, "Product name")) != NULL)
		copy_trim(v->product, sizeof(v->product), s, strlen(s));
	if ((s = json_str(root, "Product release")) != NULL)
		copy_trim(v->release, sizeof(v->release), s, strlen(s));
	if ((s = json_str(root, "Product model")) != NULL)
		copy_trim(v->model, sizeof(v->model), s, strlen(s));
	if ((s = json_str(root, "Version summary")) != NULL)
		copy_trim(v->summary, sizeof(v->summary), s, strlen(s));
out:
	json_object_put(root);
	json_tokener_free(tok);
	return rc;
}

static void version_text(struct gc_onyx_version *v, const char *text, size_t len)
{
	const char *p = text, *end = text + len, *line;
	size_t n;

	while (next_line(&p, end, &line, &n)) {
		const char *colon = memchr(line, ':', n);
		char key[32];

		if (colon == NULL || colon == line || (size_t)(colon - line) >= sizeof(key))
			continue;
		copy_trim(key, sizeof(key), line, (size_t)(colon - line));
		n -= (size_t)(colon + 1 - line);
		if (strcmp(key, "Product name") == 0)
			copy_trim(v->product, sizeof(v->product), colon + 1, n);
		else if (strcmp(key, "Product release") == 0)
			copy_trim(v->release, sizeof(v->release), colon + 1, n);
		else if (strcmp(key, "Product model") == 0)
			copy_trim(v->model, sizeof(v->model), colon + 1, n);
		else if (strcmp(key, "Version summary") == 0)
			copy_trim(v->summary, sizeof(v->summary), colon + 1, n);
	}
}

int gc_onyx_parse_version(struct gc_onyx_version *out, const char *text, size_t len,
			  struct gc_error *err)
{
	struct gc_onyx_version v;
	const char *brace;
	size_t i;

	memset(&v, 0, sizeof(v));
	if (len > GC_ONYX_MAX_OUTPUT)
		return gc_error_set(err, GC_ENOMEM, "show version: output too large");
	/* json-print: the first non-blank character of some line is '{' */
	brace = NULL;
	for (i = 0; i < len; i++) {
		if (text[i] == '{') {
			brace = text + i;
			break;
		}
		if (text[i] == ':')
			break; /* a text "Key:" came first */
	}
	if (brace) {
		int rc = version_json(&v, brace, len - (size_t)(brace - text), err);

		if (rc)
			return rc;
	} else {
		version_text(&v, text, len);
	}
	if (v.product[0] == '\0' || v.release[0] == '\0')
		return gc_error_set(err, GC_EINVAL,
				    "show version: no 'Product name'/'Product release' in output");
	if (!isdigit((unsigned char)v.release[0]))
		return gc_error_set(err, GC_EINVAL, "show version: unexpected release '%s'",
				    v.release);
	*out = v;
	return 0;
}

int gc_onyx_version_cmp(const char *a, const char *b)
{
	for (;;) {
		unsigned long x = 0, y = 0;
		int dx = 0, dy = 0;

		while (isdigit((unsigned char)*a) && dx < 9)
			x = x * 10 + (unsigned long)(*a++ - '0'), dx++;
		while (isdigit((unsigned char)*b) && dy < 9)
			y = y * 10 + (unsigned long)(*b++ - '0'), dy++;
		if (x != y)
			return x < y ? -1 : 1;
		if (*a != '.' && *b != '.')
			return 0;
		if (*a != '.')
			return -1; /* "3.8" < "3.8.1" */
		if (*b != '.')
			return 1;
		a++;
		b++;
	}
}

/* ---------------------------------------------------------------- running-config */

struct line {
	char buf[GC_ONYX_MAX_LINE];
	char *tok[MAX_TOKENS];
	size_t ntok;
	bool neg;
};

static bool tokenize(struct line *l, const char *s, size_t n)
{
	char *p;

	memcpy(l->buf, s, n);
	l->buf[n] = '\0';
	l->ntok = 0;
	for (p = strtok(l->buf, " \t"); p; p = strtok(NULL, " \t")) {
		if (l->ntok == MAX_TOKENS)
			return false;
		l->tok[l->ntok++] = p;
	}
	l->neg = l->ntok > 0 && strcmp(l->tok[0], "no") == 0;
	return true;
}

static bool tok_is(const struct line *l, size_t i, const char *s)
{
	return i < l->ntok && strcmp(l->tok[i], s) == 0;
}

static bool tc_num(const struct line *l, size_t i, unsigned *out)
{
	return i < l->ntok && parse_uint(l->tok[i], 7, out);
}

/* `[no] traffic pool roce ...` with t at "traffic" */
static bool pool_line(struct gc_onyx_state *st, const struct line *l, size_t t)
{
	unsigned p;
	size_t i;

	if (!tok_is(l, t + 2, "roce"))
		return true; /* other pools are not ours */
	t += 3;
	if (tok_is(l, t, "type")) {
		if (l->neg) {
			st->pool_type[0] = '\0';
			return true;
		}
		if (!tok_is(l, t + 1, "lossless") && !tok_is(l, t + 1, "lossy") &&
		    !tok_is(l, t + 1, "lossy-mc"))
			return false;
		snprintf(st->pool_type, sizeof(st->pool_type), "%s", l->tok[t + 1]);
		return l->ntok == t + 2;
	}
	if (tok_is(l, t, "memory") && tok_is(l, t + 1, "percent")) {
		if (l->neg) {
			st->pool_percent_x100 = -1;
			return true;
		}
		return l->ntok == t + 3 && parse_percent(l->tok[t + 2], &st->pool_percent_x100);
	}
	if (tok_is(l, t, "map") && tok_is(l, t + 1, "switch-priority")) {
		if (l->ntok < t + 3)
			return false;
		for (i = t + 2; i < l->ntok; i++) {
			if (!parse_uint(l->tok[i], 7, &p))
				return false;
			if (l->neg)
				st->pool_map &= (uint8_t) ~(1u << p);
			else
				st->pool_map |= (uint8_t)(1u << p);
		}
		return true;
	}
	if (l->ntok == t && l->neg) { /* no traffic pool roce */
		st->pool_type[0] = '\0';
		st->pool_percent_x100 = -1;
		st->pool_map = 0;
	}
	return true; /* other pool settings (prefix-mode opener, ...) are not ours */
}

/* `[no] dcb priority-flow-control ...` (global) with t at "dcb" */
static bool pfc_line(struct gc_onyx_state *st, const struct line *l, size_t t)
{
	unsigned p;

	if (!tok_is(l, t + 1, "priority-flow-control"))
		return true;
	t += 2;
	if (tok_is(l, t, "enable")) {
		if (l->ntok > t + 2 || (l->ntok == t + 2 && !tok_is(l, t + 1, "force")))
			return false;
		st->pfc_enabled = !l->neg;
		return true;
	}
	if (tok_is(l, t, "priority")) {
		if (!tc_num(l, t + 1, &p) || !tok_is(l, t + 2, "enable") || l->ntok != t + 3)
			return false;
		if (l->neg)
			st->pfc_priorities &= (uint8_t) ~(1u << p);
		else
			st->pfc_priorities |= (uint8_t)(1u << p);
	}
	return true;
}

/* The per-port part after `interface ethernet RANGE`, applied to one port. */
static bool port_setting(struct gc_onyx_port_state *ps, const struct line *l, size_t t)
{
	unsigned tc, a, b;

	if (tok_is(l, t, "qos") && tok_is(l, t + 1, "trust")) {
		if (l->neg) {
			ps->trust = GC_ONYX_TRUST_UNSET;
			return true;
		}
		if (l->ntok != t + 3)
			return false;
		if (tok_is(l, t + 2, "L2"))
			ps->trust = GC_ONYX_TRUST_L2;
		else if (tok_is(l, t + 2, "L3"))
			ps->trust = GC_ONYX_TRUST_L3;
		else if (tok_is(l, t + 2, "both"))
			ps->trust = GC_ONYX_TRUST_BOTH;
		else
			return false;
		return true;
	}
	if (tok_is(l, t, "traffic-class")) {
		if (!tc_num(l, t + 1, &tc))
			return false;
		if (tok_is(l, t + 2, "congestion-control")) {
			if (l->neg) {
				memset(&ps->cc[tc], 0, sizeof(ps->cc[tc]));
				return true;
			}
			if (l->ntok != t + 8 || !parse_uint(l->tok[t + 5], 1u << 30, &a) ||
			    !parse_uint(l->tok[t + 7], 1u << 30, &b))
				return false;
			if (!tok_is(l, t + 3, "ecn") && !tok_is(l, t + 3, "red") &&
			    !tok_is(l, t + 3, "both"))
				return false;
			ps->cc[tc].min_kb = a;
			ps->cc[tc].max_kb = b;
			ps->cc[tc].mode = tok_is(l, t + 3, "ecn") &&
						  tok_is(l, t + 4, "minimum-absolute") &&
						  tok_is(l, t + 6, "maximum-absolute")
					  ? GC_ONYX_CC_ECN_ABS
					  : GC_ONYX_CC_OTHER;
			return true;
		}
		if (tok_is(l, t + 2, "dcb") && tok_is(l, t + 3, "ets")) {
			if (l->neg || !tok_is(l, t + 4, "strict"))
				ps->ets_strict &= (uint8_t) ~(1u << tc);
			else
				ps->ets_strict |= (uint8_t)(1u << tc);
			return l->neg || l->ntok >= t + 5;
		}
		return true;
	}
	if (tok_is(l, t, "dcb") && tok_is(l, t + 1, "priority-flow-control") &&
	    tok_is(l, t + 2, "mode")) {
		if (l->neg)
			ps->pfc_force = false;
		else if (tok_is(l, t + 3, "on"))
			ps->pfc_force = tok_is(l, t + 4, "force") && l->ntok == t + 5;
		else if (tok_is(l, t + 3, "auto") || tok_is(l, t + 3, "off"))
			ps->pfc_force = false;
		else
			return false;
		return true;
	}
	return true;
}

static bool known_port_setting(const struct line *l, size_t t)
{
	return (tok_is(l, t, "qos") && tok_is(l, t + 1, "trust")) || tok_is(l, t, "traffic-class") ||
	       (tok_is(l, t, "dcb") && tok_is(l, t + 1, "priority-flow-control"));
}

static int iface_line(struct gc_onyx_state *st, struct line *l, size_t t,
		      struct gc_error *err)
{
	struct gc_onyx_port_id *ids = NULL;
	size_t n = 0, i, s = t + 3;
	int rc = 0;

	if (!tok_is(l, t + 1, "ethernet") || t + 3 > l->ntok)
		return 0; /* port-channel, mlag-port-channel, vlan, ...: not ours */
	if (tok_is(l, s, "no") && !l->neg) {
		/* `interface ethernet 1/1 no qos trust`: the flat form of a negation */
		l->neg = true;
		s++;
	}
	if (!known_port_setting(l, s))
		return 0;
	rc = gc_onyx_ports_expand(&ids, &n, l->tok[t + 2], err);
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		struct gc_onyx_port_state *ps = gc_onyx_state_port(st, &ids[i], true);

		if (ps == NULL) {
			rc = gc_error_set(err, GC_ENOMEM, "more than %d ports", GC_ONYX_MAX_PORTS);
			break;
		}
		if (!port_setting(ps, l, s)) {
			rc = gc_error_set(err, GC_EINVAL, "unexpected interface setting");
			break;
		}
	}
	free(ids);
	return rc;
}

static int roce_line(struct gc_onyx_state *st, const struct line *l, size_t t)
{
	const char *mode = t + 1 < l->ntok ? l->tok[t + 1] : "lossless";

	if (l->neg) {
		st->roce_mode[0] = '\0';
		return 0;
	}
	if (strcmp(mode, "lossless") != 0 && strcmp(mode, "lossy") != 0 &&
	    strcmp(mode, "semi-lossless") != 0)
		return 0; /* `roce ...` sub-settings are not ours */
	snprintf(st->roce_mode, sizeof(st->roce_mode), "%s", mode);
	return 0;
}

static int config_line(struct gc_onyx_state *st, struct line *l, struct gc_error *err)
{
	size_t t = l->neg ? 1 : 0;

	if (t >= l->ntok)
		return 0;
	if (tok_is(l, t, "hostname") && !l->neg && l->ntok == 2) {
		snprintf(st->hostname, sizeof(st->hostname), "%s", l->tok[1]);
		return 0;
	}
	if (tok_is(l, t, "lldp") && l->ntok == t + 1) {
		st->lldp = !l->neg;
		return 0;
	}
	if (tok_is(l, t, "roce"))
		return roce_line(st, l, t);
	if (tok_is(l, t, "traffic") && tok_is(l, t + 1, "pool"))
		return pool_line(st, l, t) ? 0 : gc_error_set(err, GC_EINVAL, "bad traffic pool line");
	if (tok_is(l, t, "dcb"))
		return pfc_line(st, l, t) ? 0 : gc_error_set(err, GC_EINVAL, "bad PFC line");
	if (tok_is(l, t, "interface"))
		return iface_line(st, l, t, err);
	return 0;
}

int gc_onyx_parse_running_config(struct gc_onyx_state *st, const char *text, size_t len,
				 struct gc_error *err)
{
	const char *p = text, *end = text + len, *s;
	struct line *l = gc_xmalloc(sizeof(*l));
	bool opened = false, closed = false;
	size_t n, lineno = 0;
	int rc = 0;

	if (len > GC_ONYX_MAX_OUTPUT) {
		rc = gc_error_set(err, GC_ENOMEM, "running-config: output too large");
		goto out;
	}
	while (next_line(&p, end, &s, &n)) {
		lineno++;
		while (n > 0 && (*s == ' ' || *s == '\t'))
			s++, n--;
		if (n == 0 || *s == '#') {
			if (n > 2 && memmem(s, n, "temporary prefix mode", 21))
				opened = true;
			continue;
		}
		if (memchr(s, '\0', n) != NULL) {
			rc = gc_error_set(err, GC_EINVAL, "running-config line %zu: NUL byte", lineno);
			goto out;
		}
		if (n >= GC_ONYX_MAX_LINE || !tokenize(l, s, n)) {
			rc = gc_error_set(err, GC_EINVAL, "running-config line %zu: line too long",
					  lineno);
			goto out;
		}
		closed = l->ntok == 4 && tok_is(l, 0, "cli") && tok_is(l, 1, "default") &&
			 tok_is(l, 2, "prefix-modes") && tok_is(l, 3, "enable");
		rc = config_line(st, l, err);
		if (rc) {
			gc_error_prefix(err, "running-config line %zu: ", lineno);
			goto out;
		}
	}
	if (opened && !closed)
		rc = gc_error_set(err, GC_EINVAL,
				  "running-config is truncated (no closing "
				  "'cli default prefix-modes enable')");
out:
	free(l);
	return rc;
}

/* ---------------------------------------------------------------- show roce */

int gc_onyx_parse_show_roce(struct gc_onyx_state *st, const char *text, size_t len,
			    struct gc_error *err)
{
	const char *p = text, *end = text + len, *line;
	size_t n;

	if (len > GC_ONYX_MAX_OUTPUT)
		return gc_error_set(err, GC_ENOMEM, "show roce: output too large");
	while (next_line(&p, end, &line, &n)) {
		const char *colon = memchr(line, ':', n);
		char key[32], val[sizeof(st->roce_mode)];
		size_t i;

		if (colon == NULL || (size_t)(colon - line) >= sizeof(key))
			continue;
		copy_trim(key, sizeof(key), line, (size_t)(colon - line));
		if (strcmp(key, "RoCE mode") != 0)
			continue;
		copy_trim(val, sizeof(val), colon + 1, n - (size_t)(colon + 1 - line));
		for (i = 0; val[i]; i++) {
			if (!isalnum((unsigned char)val[i]) && val[i] != '-' && val[i] != '/')
				return gc_error_set(err, GC_EINVAL, "show roce: unexpected mode");
		}
		if (val[0] == '\0')
			return gc_error_set(err, GC_EINVAL, "show roce: empty RoCE mode");
		snprintf(st->roce_mode, sizeof(st->roce_mode), "%s",
			 strcmp(val, "N/A") == 0 ? "" : val);
		return 0;
	}
	return gc_error_set(err, GC_EINVAL, "show roce: no 'RoCE mode' line in output");
}
