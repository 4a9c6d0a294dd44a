/*
 * internal.h - private plumbing of the spec module (never installed).
 *
 * The loader works in three passes over one struct spec_ctx:
 *   1. tree.c    libyaml's parser events become our own compact node tree
 *                in an arena (anchors and aliases resolved to the anchored
 *                node, every node with its start and end mark);
 *   2. parse.c   table-driven walk of that tree into the typed model: every
 *                map is checked against a field table (unknown keys,
 *                duplicates, types, ranges, strict string patterns);
 *   3. check.c   references are resolved through hash tables, derived values
 *                are computed and the cross-layer checks run.
 * Every problem becomes a diagnostic (diag.c); the caller gets them sorted by
 * position.  Nothing here prints.
 */
#ifndef GC_SPEC_INTERNAL_H
#define GC_SPEC_INTERNAL_H

#include <yaml.h>

#include "gc/spec.h"
/* the loader's name and PCI-address indexes: embedded, zero-initialised
 * string maps; a name put twice keeps its first object (gc_strmap_put_new) */
#include "gc/strmap.h"

/* ---------------------------------------------------------------- node tree (tree.c) */

enum spec_node_type { SPEC_SCALAR = 1, SPEC_SEQ, SPEC_MAP };

struct spec_pair;
/* One node of the document, as libyaml's composer would have made it: an
 * alias is the anchored node itself (shared, possibly a cycle).  Marks are
 * libyaml's: 0-based line and column, index in characters. */
struct spec_node {
	uint8_t type;  /* enum spec_node_type */
	bool plain;    /* a scalar written plain (neither quoted nor block) */
	uint32_t id;   /* 1.. in document order (libyaml's node index) */
	uint32_t line, col;
	uint32_t start, end; /* mark indexes of the first and past the last character */
	uint32_t n;          /* scalar: length in bytes; sequence: items; mapping: pairs */
	union {
		char *value; /* NUL-terminated; may hold a NUL before n */
		struct spec_node **items;
		struct spec_pair *pairs;
	} u;
};
struct spec_pair {
	struct spec_node *key, *value;
};

struct spec_ctx;
/* Compose the stream's documents from the parser's events into x->tree:
 * x->root is the first document's root (NULL for an empty stream), x->nnodes
 * its node count.  A YAML error (syntax, undefined alias, duplicate anchor)
 * is left in the parser as libyaml's loader leaves it and returns false; a
 * second document returns true with *second set to its root. */
bool spec_tree_load(struct spec_ctx *x, yaml_parser_t *p, struct spec_node **second);

/* ---------------------------------------------------------------- context */

/* Name lookups of a loaded cluster (struct gc_cluster's private index). */
struct gc_spec_index {
	struct gc_strmap hosts, vms, switches, dvswitches, credentials, portgroups;
};

#define SPEC_RAW_DIAG_MAX 10000 /* collected before sorting; the rest are counted */
/* Size caps (real hardware stays far below; they keep per-host loops short) */
#define SPEC_HOST_DEVICES_MAX 64 /* GPUs, and NICs (ports), per host */
#define SPEC_VM_GPUS_MAX 32      /* passthrough devices per VM in vSphere 8 */
#define SPEC_VM_NICS_MAX 10      /* network adapters per VM in vSphere */

struct spec_ctx {
	struct gc_cluster *c;
	struct gc_arena *arena; /* the cluster's arena */
	const char *file;       /* = c->source_path */
	const char *outname;    /* the caller's name: marks of returned diagnostics borrow it */
	const char *data;       /* the source text (for source lines) */
	size_t len;
	size_t *line_starts; /* lazily built index of line offsets */
	size_t nlines;
	struct gc_arena tree;   /* the node tree, freed once the model is built */
	struct spec_node *root; /* NULL outside loading */
	size_t nnodes;
	struct gc_diags diags; /* unsorted, uncapped up to SPEC_RAW_DIAG_MAX */
	/* every parsed map: which object it filled and from which node, so the
	 * mark of a field is found only when a diagnostic (or a "was it given?"
	 * question) needs it; the last map parsed is cached */
	struct spec_objrec *objs;
	size_t nobjs, capobjs;
	bool objs_sorted;
	const void *last_obj;
	const struct spec_field *last_fields;
	uint64_t last_seen; /* bit i: fields[i] was given */
	size_t budget; /* nodes we may still visit (alias bombs) */
	bool over_budget;
	/* while set, each diagnostic gets it as a note ("for VM 'w2' at line 19"):
	 * a check says whom a problem found at a shared anchor is about (anchors.c) */
	const char *note_for;
};

struct spec_field;
struct spec_objrec {
	const void *obj;
	const struct spec_field *fields;
	const struct spec_node *node; /* the mapping */
};

/* ---------------------------------------------------------------- diagnostics (diag.c) */

void spec_diag(struct spec_ctx *x, enum gc_severity sev, struct gc_mark m, const char *hint,
	       const char *fmt, ...) GC_PRINTF(5, 6);
/* Escape a value for a message: non-printables as \xNN, capped length. Arena string. */
const char *spec_esc(struct spec_ctx *x, const char *s);
/* Move the collected diagnostics, sorted and capped, into out. */
void spec_diags_finish(struct spec_ctx *x, struct gc_diags *out);
/* Free a diagnostic's notes (none left). */
void spec_diag_free_notes(struct gc_diag *d);
/* While the document is loaded: one copy of each diagnostic that aliases
 * repeated, with a note per host or VM that uses the anchor (anchors.c). */
void spec_anchor_notes(struct spec_ctx *x);

/* ---------------------------------------------------------------- marks (load.c) */

struct gc_mark spec_mark(struct spec_ctx *x, const struct spec_node *n);
/* Where a field's value was written, else the fallback mark.  `field` must be
 * the address of a member named in a field table (T_SUB members need an off). */
struct gc_mark spec_field_mark(struct spec_ctx *x, const void *field, struct gc_mark fallback);
bool spec_field_given(struct spec_ctx *x, const void *field);
/* Count a visited node; false (and one error) once the alias budget is gone. */
bool spec_visit(struct spec_ctx *x, const struct spec_node *n);

/* ---------------------------------------------------------------- field tables (parse.c) */

enum spec_type {
	T_STR,     /* char * */
	T_UINT,    /* unsigned */
	T_INT,     /* int */
	T_BOOL,    /* bool */
	T_TRI,     /* enum gc_tristate */
	T_NUM,     /* double */
	T_STRLIST, /* char **, size_t at off_n */
	T_SUB,     /* handled by sub(ctx, value node, object) */
	T_SKIP,    /* a known key handled elsewhere */
};

enum spec_pat {
	P_ANY,
	P_NAME,
	P_HOST,
	P_PCI,
	P_PCI_ID,
	P_PATH,
	P_IFNAME,
	P_PORTS,
	P_VERSION,
	P_PROFILE,
	P_ENV,
	P_LABEL,
	P_VCNAME, /* a name vCenter holds: a label of at most 80 bytes */
	P_URL,
	P_NETDEV,
	P_RDMADEV,
	P_USER,
	P_TEXT,
	P_MODEL,
	P_CIDR,
	P_PACKAGE,
	P_LIBVIRT_URI,
	P_NICDEV, /* a host NIC's device: ESXi vmnicN or a KVM host's Linux name */
	P_VMKNIC, /* a VMkernel adapter's device: vmkN */
};

struct spec_field {
	const char *key;
	enum spec_type type;
	size_t off;   /* 0 for T_SUB/T_SKIP without a member of their own */
	size_t off_n; /* T_STRLIST: offset of the count */
	enum spec_pat pat;
	const char *const *choices; /* T_STR: the allowed values, NULL-terminated */
	double min, max;            /* numbers */
	bool required;
	bool prefix; /* T_SKIP: every key starting with `key` ("x-") */
	void (*sub)(struct spec_ctx *x, struct spec_node *value, void *obj);
};

/* Parse one map against a NULL-key-terminated field table (at most 64
 * fields); `what` names it in messages. */
void spec_parse_map(struct spec_ctx *x, struct spec_node *n, const struct spec_field *fields,
		    void *obj, const char *what);
/* Hint text describing a pattern's expected form. */
const char *spec_pat_hint(enum spec_pat p);
/* A checked string scalar (borrowed from the document), or NULL after a diagnostic. */
const char *spec_string(struct spec_ctx *x, struct spec_node *v, const char *key, enum spec_pat pat,
			const char *const *choices);
void spec_type_error(struct spec_ctx *x, struct spec_node *v, const char *key, const char *want);
void spec_parse_root(struct spec_ctx *x, struct spec_node *root);

/* ---------------------------------------------------------------- checks (check.c) */

void spec_check(struct spec_ctx *x);

/* ---------------------------------------------------------------- tables (tables.c) */

/* Is the profile offered by the model? Accepts the grid_ and nvidia_ spellings. */
bool spec_gpu_model_has_profile(const struct gc_gpu_model *m, const char *profile);
const struct gc_gpu_model *spec_gpu_model_by_pci_id(const char *pci_id);

#endif
