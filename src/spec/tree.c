/*
 * tree.c - the spec's node tree, composed from libyaml's parser events.
 *
 * libyaml's document API (yaml_parser_load) builds a yaml_document_t: a
 * malloc'd tag string per node, a malloc'd item or pair stack per
 * collection, every scalar's value kept in the event's malloc'd buffer, all
 * freed one by one by yaml_document_delete.  We only need the shape, the
 * scalars and the marks, so this file runs the parser (yaml_parser_parse)
 * itself and composes the same tree from its events into an arena: one
 * struct spec_node per scalar, sequence and mapping in document order (the
 * document API's node indexes become ids), each collection's children
 * gathered on one shared stack and copied out once at its end, scalars
 * copied into the arena and each event freed at once (the scanner's next
 * malloc reuses the block).  Nothing recurses: the depth of the YAML is only
 * bounded by the input's size.
 *
 * It is libyaml's composer, event for event (src/loader.c of libyaml
 * 0.2.5): an anchor is registered when its node starts, so an alias inside
 * the anchored collection points back at it (a cycle the walkers bound with
 * their budgets); an alias resolves to the anchored node itself; anchors
 * live for one document; a second anchor of the same name and an undefined
 * alias are composer errors with libyaml's own words and marks, left in the
 * parser like a syntax error so one function (load.c) reports all of them.
 * Tags are ignored, as they were: the document API's default tags were
 * never read.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct frame {
	struct spec_node *node; /* the open sequence or mapping */
	size_t base;            /* where its children start on the stack */
};

struct composer {
	yaml_parser_t *p;
	struct gc_arena *arena;
	struct spec_node **stack; /* children of the open collections, in order */
	size_t top, cap;
	struct frame *frames;
	size_t nframes, capframes;
	struct gc_strmap anchors; /* name (arena) -> node, this document's */
	uint32_t nnodes;
	/* nodes come from slabs of the arena: one allocation per SLAB nodes */
	struct spec_node *slab;
	size_t slab_left;
};

#define SLAB 1024

static void push(struct composer *k, struct spec_node *n)
{
	if (k->top == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 256;
		k->stack = gc_xrealloc(k->stack, k->cap * sizeof(*k->stack));
	}
	k->stack[k->top++] = n;
}

static struct spec_node *node_new(struct composer *k, enum spec_node_type type,
				  const yaml_event_t *ev)
{
	struct spec_node *n;

	if (k->slab_left == 0) {
		k->slab = gc_arena_alloc(k->arena, SLAB * sizeof(*k->slab));
		k->slab_left = SLAB;
	}
	n = k->slab++;
	k->slab_left--;
	n->type = (uint8_t)type;
	n->id = ++k->nnodes;
	n->line = (uint32_t)ev->start_mark.line;
	n->col = (uint32_t)ev->start_mark.column;
	n->start = (uint32_t)ev->start_mark.index;
	n->end = (uint32_t)ev->end_mark.index;
	return n;
}

/* libyaml's register_anchor: false (a composer error in the parser) when
 * the name is taken in this document. */
static bool anchor(struct composer *k, const yaml_char_t *name, struct spec_node *n,
		   const yaml_event_t *ev)
{
	struct spec_node *first;

	if (name == NULL)
		return true;
	first = gc_strmap_put_new(&k->anchors, gc_arena_strdup(k->arena, (const char *)name), n);
	if (first == NULL)
		return true;
	k->p->error = YAML_COMPOSER_ERROR;
	k->p->context = "found duplicate anchor; first occurrence";
	k->p->context_mark = (yaml_mark_t){first->start, first->line, first->col};
	k->p->problem = "second occurrence";
	k->p->problem_mark = ev->start_mark;
	return false;
}

/* The event that starts a node, or a collection's end. */
static bool event(struct composer *k, yaml_event_t *ev)
{
	struct spec_node *n;
	struct frame *f;
	size_t i, count;

	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		n = gc_strmap_get(&k->anchors, (const char *)ev->data.alias.anchor);
		if (n == NULL) {
			k->p->error = YAML_COMPOSER_ERROR;
			k->p->problem = "found undefined alias";
			k->p->problem_mark = ev->start_mark;
			return false;
		}
		push(k, n);
		return true;
	case YAML_SCALAR_EVENT:
		n = node_new(k, SPEC_SCALAR, ev);
		n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		n->n = (uint32_t)ev->data.scalar.length;
		n->u.value = gc_arena_strndup(k->arena, (const char *)ev->data.scalar.value,
					      ev->data.scalar.length);
		push(k, n);
		return anchor(k, ev->data.scalar.anchor, n, ev);
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		n = node_new(k, ev->type == YAML_SEQUENCE_START_EVENT ? SPEC_SEQ : SPEC_MAP, ev);
		push(k, n);
		if (k->nframes == k->capframes) {
			k->capframes = k->capframes ? k->capframes * 2 : 16;
			k->frames = gc_xrealloc(k->frames, k->capframes * sizeof(*k->frames));
		}
		k->frames[k->nframes++] = (struct frame){n, k->top};
		return anchor(k,
			      ev->type == YAML_SEQUENCE_START_EVENT ? ev->data.sequence_start.anchor
								    : ev->data.mapping_start.anchor,
			      n, ev);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		f = &k->frames[--k->nframes];
		n = f->node;
		count = k->top - f->base;
		n->end = (uint32_t)ev->end_mark.index;
		if (n->type == SPEC_SEQ) {
			n->n = (uint32_t)count;
			n->u.items = gc_arena_alloc(k->arena, (count ? count : 1) * sizeof(*n->u.items));
			memcpy(n->u.items, k->stack + f->base, count * sizeof(*n->u.items));
		} else {
			n->n = (uint32_t)(count / 2); /* the parser alternates keys and values */
			n->u.pairs = gc_arena_alloc(k->arena, (n->n ? n->n : 1) * sizeof(*n->u.pairs));
			for (i = 0; i < n->n; i++)
				n->u.pairs[i] = (struct spec_pair){k->stack[f->base + 2 * i],
								   k->stack[f->base + 2 * i + 1]};
		}
		k->top = f->base;
		return true;
	case YAML_NO_EVENT:
	case YAML_STREAM_START_EVENT:
	case YAML_STREAM_END_EVENT:
	case YAML_DOCUMENT_START_EVENT:
	case YAML_DOCUMENT_END_EVENT:
		break;
	}
	return true; /* the parser never sends these inside a document */
}

/* After DOCUMENT-START: the document's root, or NULL with the parser's error set. */
static struct spec_node *document(struct composer *k)
{
	yaml_event_t ev;
	bool ok;

	k->top = 0;
	k->nframes = 0;
	for (;;) {
		if (!yaml_parser_parse(k->p, &ev))
			return NULL;
		if (ev.type == YAML_DOCUMENT_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		ok = event(k, &ev);
		yaml_event_delete(&ev);
		if (!ok)
			return NULL;
	}
	gc_strmap_clear(&k->anchors); /* anchors live for one document */
	return k->top > 0 ? k->stack[0] : NULL;
}

/* The next event: true with *more set when a document starts, false on error. */
static bool next_document(yaml_parser_t *p, bool *more)
{
	yaml_event_t ev;

	if (!yaml_parser_parse(p, &ev))
		return false;
	*more = ev.type == YAML_DOCUMENT_START_EVENT;
	yaml_event_delete(&ev);
	return true;
}

bool spec_tree_load(struct spec_ctx *x, yaml_parser_t *p, struct spec_node **second)
{
	struct composer k;
	yaml_event_t ev;
	bool ok = false, more;

	memset(&k, 0, sizeof(k));
	k.p = p;
	k.arena = &x->tree;
	x->root = NULL;
	*second = NULL;
	if (!yaml_parser_parse(p, &ev)) /* STREAM-START */
		goto out;
	yaml_event_delete(&ev);
	if (!next_document(p, &more))
		goto out;
	if (!more) {
		ok = true; /* an empty stream */
		goto out;
	}
	x->root = document(&k);
	if (x->root == NULL)
		goto out;
	x->nnodes = k.nnodes;
	/* one document per file: compose what follows as libyaml's loader would */
	if (!next_document(p, &more))
		goto out;
	if (more && (*second = document(&k)) == NULL)
		goto out;
	ok = true;
out:
	gc_strmap_clear(&k.anchors);
	free(k.stack);
	free(k.frames);
	return ok;
}
