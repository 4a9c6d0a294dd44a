/*
 * load.c - gc_spec_load(): bytes -> node tree -> model -> checks.
 *
 * tree.c composes libyaml's parser events into our own node tree (anchors
 * and aliases resolved, every node with its marks); libyaml's marks are
 * 0-based and become 1-based here.  YAML errors (syntax, and the composer's
 * undefined alias or duplicate anchor) become one diagnostic at libyaml's
 * problem mark with its context as the hint.  Aliases share nodes, so a
 * small file can describe a huge tree ("billion laughs"): every visited node
 * is counted against a budget proportional to the document's size.  The
 * cluster is returned only when no error was found; warnings may accompany
 * it.  The tree lives in an arena of its own, freed once the model is built.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct gc_mark spec_mark(struct spec_ctx *x, const struct spec_node *n)
{
	struct gc_mark m = {x->file, (int)n->line + 1, (int)n->col + 1};

	return m;
}

/* ---------------------------------------------------------------- field marks */

/* Index of the table entry whose member is at offset off, or -1.  The end
 * marker of a table carries the size of its struct. */
static int field_at(const struct spec_field *fields, size_t off)
{
	int i;

	for (i = 0; fields[i].key != NULL; i++) {
		bool located = fields[i].type != T_SKIP && (fields[i].type != T_SUB || fields[i].off);

		if (located && fields[i].off == off)
			return i;
	}
	return -1;
}

static bool inside(const struct spec_field *fields, const void *obj, const char *f)
{
	size_t i = 0;

	while (fields[i].key != NULL)
		i++;
	return f >= (const char *)obj && (size_t)(f - (const char *)obj) < fields[i].off;
}

/* The value node of key in map n, looking into merge keys as the parser does. */
static struct spec_node *value_of(struct spec_node *n, const char *key, bool merged)
{
	struct spec_pair *p, *end;

	if (n == NULL || n->type != SPEC_MAP)
		return NULL;
	end = n->u.pairs + n->n;
	for (p = n->u.pairs; p < end; p++) {
		if (p->key->type == SPEC_SCALAR && strcmp(p->key->u.value, key) == 0)
			return p->value;
	}
	if (merged)
		return NULL;
	for (p = n->u.pairs; p < end; p++) {
		struct spec_node *v = p->value, *r;

		if (p->key->type != SPEC_SCALAR || strcmp(p->key->u.value, "<<") != 0)
			continue;
		if (v->type == SPEC_MAP && (r = value_of(v, key, true)) != NULL)
			return r;
		if (v->type != SPEC_SEQ)
			continue;
		for (uint32_t i = 0; i < v->n; i++) {
			if ((r = value_of(v->u.items[i], key, true)) != NULL)
				return r;
		}
	}
	return NULL;
}

static int by_obj(const void *a, const void *b)
{
	const struct spec_objrec *p = a, *q = b;

	if (p->obj != q->obj)
		return (uintptr_t)p->obj < (uintptr_t)q->obj ? -1 : 1;
	return 0;
}

/* The YAML value node a model field was parsed from, or NULL when not given. */
static struct spec_node *field_node(struct spec_ctx *x, const void *field)
{
	const char *f = field;
	size_t lo = 0, hi, i;
	int idx;

	if (x->root == NULL)
		return NULL;
	/* the common case: a question about the map parsed just now */
	if (x->last_obj != NULL && inside(x->last_fields, x->last_obj, f) &&
	    (idx = field_at(x->last_fields, (size_t)(f - (const char *)x->last_obj))) >= 0) {
		if (!(x->last_seen & ((uint64_t)1 << idx)))
			return NULL;
		return value_of((struct spec_node *)x->objs[x->nobjs - 1].node,
				x->last_fields[idx].key, false);
	}
	if (!x->objs_sorted) {
		/* stable enough: maps filling one object (roce + ecn) keep no order */
		qsort(x->objs, x->nobjs, sizeof(*x->objs), by_obj);
		x->objs_sorted = true;
		x->last_obj = NULL; /* objs[nobjs - 1] is no longer the last map */
	}
	/* the last record whose object starts at or before the field */
	hi = x->nobjs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)x->objs[mid].obj <= (uintptr_t)f)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* walk back over maps of embedded structs (host.ssh starts inside host)
	 * and maps sharing one object (roce and its ecn) to the one holding f */
	for (i = lo; i > 0 && lo - i < 16; i--) {
		const struct spec_objrec *r = &x->objs[i - 1];

		if (!inside(r->fields, r->obj, f))
			continue;
		idx = field_at(r->fields, (size_t)(f - (const char *)r->obj));
		if (idx >= 0)
			return value_of((struct spec_node *)r->node, r->fields[idx].key, false);
	}
	return NULL;
}

struct gc_mark spec_field_mark(struct spec_ctx *x, const void *field, struct gc_mark fallback)
{
	struct spec_node *n = field_node(x, field);

	return n ? spec_mark(x, n) : fallback;
}

bool spec_field_given(struct spec_ctx *x, const void *field)
{
	return field_node(x, field) != NULL;
}

bool spec_visit(struct spec_ctx *x, const struct spec_node *n)
{
	if (x->over_budget)
		return false;
	if (x->budget > 0) {
		x->budget--;
		return true;
	}
	x->over_budget = true;
	spec_diag(x, GC_SEV_ERROR, spec_mark(x, n),
		  "aliases that repeat large parts of the document are not supported",
		  "the spec expands to too many nodes");
	return false;
}

/* Line and column (1-based, in characters) of a byte offset. */
static struct gc_mark offset_mark(struct spec_ctx *x, size_t off)
{
	struct gc_mark m = {x->file, 1, 1};
	size_t i;

	for (i = 0; i < off && i < x->len; i++) {
		unsigned char c = (unsigned char)x->data[i];

		if (c == '\n') {
			m.line++;
			m.col = 1;
		} else if ((c & 0xc0) != 0x80) {
			m.col++;
		}
	}
	return m;
}

static void yaml_error(struct spec_ctx *x, const yaml_parser_t *p)
{
	struct gc_mark m = {x->file, (int)p->problem_mark.line + 1,
			    (int)p->problem_mark.column + 1};
	const char *problem = p->problem ? p->problem : "unknown error";

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		spec_diag(x, GC_SEV_ERROR, (struct gc_mark){x->file, 0, 0}, NULL,
			  "invalid yaml: out of memory");
		return;
	case YAML_READER_ERROR:
		m = offset_mark(x, p->problem_offset);
		if (p->problem_value != -1)
			spec_diag(x, GC_SEV_ERROR, m, "a spec is UTF-8 text",
				  "invalid yaml: %s (byte 0x%02x)", problem, p->problem_value & 0xff);
		else
			spec_diag(x, GC_SEV_ERROR, m, "a spec is UTF-8 text", "invalid yaml: %s",
				  problem);
		return;
	case YAML_NO_ERROR:
	case YAML_SCANNER_ERROR:
	case YAML_PARSER_ERROR:
	case YAML_COMPOSER_ERROR:
	case YAML_WRITER_ERROR:
	case YAML_EMITTER_ERROR:
		break;
	}
	if (p->context != NULL)
		spec_diag(x, GC_SEV_ERROR, m,
			  gc_arena_printf(x->arena, "%s at line %d, column %d", p->context,
					  (int)p->context_mark.line + 1,
					  (int)p->context_mark.column + 1),
			  "invalid yaml: %s", problem);
	else
		spec_diag(x, GC_SEV_ERROR, m,
			  p->error == YAML_COMPOSER_ERROR
				  ? "an alias (*name) must come after its anchor (&name) in the file"
				  : "check the indentation, and quote values that contain ': ' or "
				    "start with a special character",
			  "invalid yaml: %s", problem);
}

void gc_cluster_free(struct gc_cluster *c)
{
	if (c == NULL)
		return;
	if (c->index != NULL) {
		gc_strmap_clear(&c->index->hosts);
		gc_strmap_clear(&c->index->vms);
		gc_strmap_clear(&c->index->switches);
		gc_strmap_clear(&c->index->dvswitches);
		gc_strmap_clear(&c->index->credentials);
		gc_strmap_clear(&c->index->portgroups);
		free(c->index);
	}
	gc_arena_free(&c->arena);
	free(c);
}

static void parse_document(struct spec_ctx *x, yaml_parser_t *parser)
{
	struct spec_node *second;

	if (!spec_tree_load(x, parser, &second)) {
		yaml_error(x, parser);
		goto out;
	}
	if (x->root == NULL) {
		spec_diag(x, GC_SEV_ERROR, (struct gc_mark){x->file, 1, 1},
			  "a spec starts with apiVersion: " GC_SPEC_API_VERSION, "the spec is empty");
		goto out;
	}
	if (second != NULL) {
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, second),
			  "split the file: a spec is one YAML document",
			  "more than one YAML document in the spec");
		goto out;
	}
	x->budget = x->nnodes * 8 + 1000000;
	spec_parse_root(x, x->root);
	x->last_obj = NULL; /* checks look fields up by address */
	spec_check(x);
	spec_anchor_notes(x);
out:
	x->root = NULL;
	gc_arena_free(&x->tree);
}

int gc_spec_load_buffer(struct gc_cluster **out, struct gc_diags *diags, const char *name,
			const char *data, size_t len, struct gc_error *err)
{
	struct spec_ctx x;
	struct gc_cluster *c;
	yaml_parser_t parser;
	int rc = 0;

	if (len > GC_SPEC_MAX_BYTES)
		return gc_error_set(err, GC_ENOMEM, "'%s' is larger than %u bytes",
				    name ? name : "<spec>", GC_SPEC_MAX_BYTES);
	c = gc_xcalloc(1, sizeof(*c));
	c->source_path = gc_arena_strdup(&c->arena, name ? name : "<spec>");
	memset(&x, 0, sizeof(x));
	x.c = c;
	x.arena = &c->arena;
	x.file = c->source_path;
	x.outname = name ? name : "<spec>";
	x.data = data;
	x.len = len;
	if (!yaml_parser_initialize(&parser)) {
		gc_cluster_free(c);
		return gc_error_set(err, GC_ENOMEM, "cannot initialise the YAML parser");
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	parse_document(&x, &parser);
	yaml_parser_delete(&parser);

	if (x.diags.nerrors > 0) {
		rc = gc_error_set(err, GC_ESPEC, "%s: %zu error%s in the spec", c->source_path,
				  x.diags.nerrors, x.diags.nerrors == 1 ? "" : "s");
		spec_diags_finish(&x, diags);
		gc_cluster_free(c);
	} else {
		spec_diags_finish(&x, diags);
		/* the marks' file names point into the arena: they stay valid */
		*out = c;
		c = NULL; /* now owned by the caller */
	}
	free(x.objs);
	free(x.line_starts);
	return rc;
}

int gc_spec_load(struct gc_cluster **out, struct gc_diags *diags, const char *path,
		 struct gc_error *err)
{
	char *data;
	size_t len;
	int rc;

	rc = gc_read_file(&data, &len, path, GC_SPEC_MAX_BYTES, err);
	if (rc != 0)
		return rc;
	rc = gc_spec_load_buffer(out, diags, path, data, len, err);
	free(data);
	return rc;
}

/* ---------------------------------------------------------------- lookups */

/* Hashed for loaded clusters; a linear scan for clusters built by hand (tests). */
#define LOOKUP(field, arr, n)                                                                  \
	do {                                                                                   \
		size_t i_;                                                                     \
		if (c == NULL || name == NULL)                                                 \
			return NULL;                                                           \
		if (c->index != NULL)                                                          \
			return gc_strmap_get(&c->index->field, name);                        \
		for (i_ = 0; i_ < c->n; i_++) {                                                \
			if (c->arr[i_].name != NULL && strcmp(c->arr[i_].name, name) == 0)     \
				return &c->arr[i_];                                            \
		}                                                                              \
		return NULL;                                                                   \
	} while (0)

struct gc_host *gc_cluster_host(const struct gc_cluster *c, const char *name)
{
	LOOKUP(hosts, hosts, nhosts);
}

struct gc_vm *gc_cluster_vm(const struct gc_cluster *c, const char *name)
{
	LOOKUP(vms, vms, nvms);
}

struct gc_switch *gc_cluster_switch(const struct gc_cluster *c, const char *name)
{
	LOOKUP(switches, switches, nswitches);
}

struct gc_dvswitch *gc_cluster_dvswitch(const struct gc_cluster *c, const char *name)
{
	LOOKUP(dvswitches, dvswitches, ndvswitches);
}

struct gc_credential *gc_cluster_credential(const struct gc_cluster *c, const char *name)
{
	LOOKUP(credentials, credentials, ncredentials);
}
