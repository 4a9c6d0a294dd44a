/*
 * esxcli_xml.c - read `esxcli --formatter=xml` output with libxml2.
 *
 * The shape (REAL-FORMATS A.2): <output xmlns="...esxcli"><root> then either
 * <list type="structure"> of <structure typeName=..>, a single <structure>,
 * or a bare scalar (<string>, <integer>, <boolean>).  A field holds one typed
 * value element, a nested structure (flattened as "Outer.Inner"), or a
 * <list> of scalars (joined with ",").  Elements are matched by local name
 * so the namespace URI, with or without its trailing slash, does not matter.
 */
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

#include "gc/esxi.h"

static bool named(const xmlNode *n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static const xmlNode *first_child(const xmlNode *n, const char *name)
{
	for (n = n ? n->children : NULL; n != NULL; n = n->next) {
		if (named(n, name))
			return n;
	}
	return NULL;
}

static bool is_scalar(const xmlNode *n)
{
	return named(n, "string") || named(n, "integer") || named(n, "boolean") || named(n, "long") ||
	       named(n, "double");
}

static char *text_of(const xmlNode *n)
{
	xmlChar *t = xmlNodeGetContent(n);
	char *s = gc_xstrdup(t ? (const char *)t : "");

	xmlFree(t);
	return s;
}

static void add_field(struct gc_esxcli_struct *s, const char *name, char *value)
{
	s->fields = gc_xrealloc(s->fields, (s->nfields + 1) * sizeof(*s->fields));
	s->fields[s->nfields].name = gc_xstrdup(name);
	s->fields[s->nfields].value = value; /* now owned by the struct */
	s->nfields++;
}

static void read_structure(struct gc_esxcli_struct *s, const xmlNode *st, const char *prefix);

static void read_field(struct gc_esxcli_struct *s, const xmlNode *field, const char *prefix)
{
	xmlChar *fname = xmlGetProp(field, (const xmlChar *)"name");
	char *name;
	const xmlNode *v;

	if (fname == NULL)
		return;
	name = prefix ? gc_xasprintf("%s.%s", prefix, (const char *)fname) : gc_xstrdup((const char *)fname);
	xmlFree(fname);
	for (v = field->children; v != NULL; v = v->next) {
		if (is_scalar(v)) {
			add_field(s, name, text_of(v));
			break;
		}
		if (named(v, "structure")) {
			read_structure(s, v, name);
			break;
		}
		if (named(v, "list")) {
			struct gc_buf b = GC_BUF_INIT;
			const xmlNode *item;

			for (item = v->children; item != NULL; item = item->next) {
				if (!is_scalar(item))
					continue;
				char *t = text_of(item);

				if (b.len)
					gc_buf_putc(&b, ',');
				gc_buf_puts(&b, t);
				free(t);
			}
			add_field(s, name, gc_buf_take(&b));
			break;
		}
	}
	free(name);
}

static void read_structure(struct gc_esxcli_struct *s, const xmlNode *st, const char *prefix)
{
	const xmlNode *f;

	for (f = st->children; f != NULL; f = f->next) {
		if (named(f, "field"))
			read_field(s, f, prefix);
	}
}

static void add_item(struct gc_esxcli_result *r, const xmlNode *st)
{
	struct gc_esxcli_struct *s;
	xmlChar *type = xmlGetProp(st, (const xmlChar *)"typeName");

	r->items = gc_xrealloc(r->items, (r->nitems + 1) * sizeof(*r->items));
	s = &r->items[r->nitems++];
	memset(s, 0, sizeof(*s));
	s->type_name = gc_xstrdup(type ? (const char *)type : "");
	xmlFree(type);
	read_structure(s, st, NULL);
}

int gc_esxcli_parse_xml(struct gc_esxcli_result *out, const char *text, size_t len,
			struct gc_error *err)
{
	struct gc_esxcli_result r = {NULL, 0, NULL};
	const xmlNode *root, *body, *n;
	xmlDoc *doc;

	if (len > GC_ESXCLI_MAX)
		return gc_error_set(err, GC_EREMOTE, "esxcli output larger than %u bytes", GC_ESXCLI_MAX);
	doc = xmlReadMemory(text, (int)len, "esxcli.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOBLANKS);
	if (doc == NULL)
		return gc_error_set(err, GC_EREMOTE, "esxcli output is not XML");
	root = xmlDocGetRootElement(doc);
	if (root == NULL || !named(root, "output") || (body = first_child(root, "root")) == NULL) {
		xmlFreeDoc(doc);
		return gc_error_set(err, GC_EREMOTE, "esxcli XML has no <output><root>");
	}
	for (n = body->children; n != NULL; n = n->next) {
		if (named(n, "list")) {
			const xmlNode *st;

			for (st = n->children; st != NULL; st = st->next) {
				if (named(st, "structure"))
					add_item(&r, st);
				else if (is_scalar(st) && r.scalar == NULL)
					r.scalar = text_of(st);
			}
		} else if (named(n, "structure")) {
			add_item(&r, n);
		} else if (is_scalar(n) && r.scalar == NULL) {
			r.scalar = text_of(n);
		}
	}
	xmlFreeDoc(doc);
	*out = r;
	return 0;
}

void gc_esxcli_result_free(struct gc_esxcli_result *r)
{
	size_t i, k;

	if (r == NULL)
		return;
	for (i = 0; i < r->nitems; i++) {
		for (k = 0; k < r->items[i].nfields; k++) {
			free(r->items[i].fields[k].name);
			free(r->items[i].fields[k].value);
		}
		free(r->items[i].fields);
		free(r->items[i].type_name);
	}
	free(r->items);
	free(r->scalar);
	memset(r, 0, sizeof(*r));
}

static bool same_name(const char *a, const char *b)
{
	for (;;) {
		while (*a == ' ')
			a++;
		while (*b == ' ')
			b++;
		if (*a == '\0' || *b == '\0')
			return *a == *b;
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return false;
		a++;
		b++;
	}
}

const char *gc_esxcli_get(const struct gc_esxcli_struct *s, const char *field)
{
	size_t i;

	for (i = 0; i < s->nfields; i++) {
		if (same_name(s->fields[i].name, field))
			return s->fields[i].value;
	}
	return NULL;
}
