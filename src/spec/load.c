/*
 * load.c - gc_spec_load(): bytes -> libyaml document -> model -> checks.
 *
 * libyaml's document API (yaml_parser_load) builds the node tree, resolving
 * anchors and aliases; its marks are 0-based and become 1-based here.  YAML
 * syntax errors become one diagnostic at libyaml's problem mark with its
 * context as the hint.  Aliases share nodes, so a small file can describe a
 * huge tree ("billion laughs"): every visited node is counted against a
 * budget proportional to the document's size.  The cluster is returned only
 * when no error was found; warnings may accompany it.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct gc_mark spec_mark(struct spec_ctx *x, const yaml_node_t *n)
{
	struct gc_mark m = {x->file, (int)n->start_mark.line + 1, (int)n->start_mark.column + 1};

	return m;
}

yaml_node_t *spec_node(struct spec_ctx *x, int index)
{
	return yaml_document_get_node(x->doc, index);
}

struct gc_mark spec_field_mark(struct spec_ctx *x, const void *field, struct gc_mark fallback)
{
	const struct gc_mark *m = spec_markmap_get(&x->marks, field);

	return m ? *m : fallback;
}

bool spec_field_given(struct spec_ctx *x, const void *field)
{
	return spec_markmap_get(&x->marks, field) != NULL;
}

bool spec_visit(struct spec_ctx *x, const yaml_node_t *n)
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
		spec_diag(x, GC_SEV_ERROR, m, NULL, "invalid yaml: %s", problem);
}

void gc_cluster_free(struct gc_cluster *c)
{
	if (c == NULL)
		return;
	if (c->index != NULL) {
		spec_strmap_free(&c->index->hosts);
		spec_strmap_free(&c->index->vms);
		spec_strmap_free(&c->index->switches);
		spec_strmap_free(&c->index->dvswitches);
		spec_strmap_free(&c->index->credentials);
		spec_strmap_free(&c->index->portgroups);
		free(c->index);
	}
	gc_arena_free(&c->arena);
	free(c);
}

static void parse_document(struct spec_ctx *x, yaml_parser_t *parser)
{
	yaml_document_t doc, next;
	yaml_node_t *root;

	if (!yaml_parser_load(parser, &doc)) {
		yaml_error(x, parser);
		return;
	}
	x->doc = &doc;
	root = yaml_document_get_root_node(&doc);
	if (root == NULL) {
		spec_diag(x, GC_SEV_ERROR, (struct gc_mark){x->file, 1, 1},
			  "a spec starts with apiVersion: " GC_SPEC_API_VERSION, "the spec is empty");
		goto out;
	}
	/* one document per file: look at what follows before doing any work */
	if (!yaml_parser_load(parser, &next)) {
		yaml_error(x, parser);
		goto out;
	}
	if (yaml_document_get_root_node(&next) != NULL) {
		spec_diag(x, GC_SEV_ERROR, spec_mark(x, yaml_document_get_root_node(&next)),
			  "split the file: a spec is one YAML document",
			  "more than one YAML document in the spec");
		yaml_document_delete(&next);
		goto out;
	}
	yaml_document_delete(&next);
	x->budget = (size_t)(doc.nodes.top - doc.nodes.start) * 8 + 1000000;
	spec_parse_root(x, root);
	spec_check(x);
out:
	yaml_document_delete(&doc);
	x->doc = NULL;
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
	spec_markmap_free(&x.marks);
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
			return spec_strmap_get(&c->index->field, name);                        \
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
