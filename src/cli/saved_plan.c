/*
 * saved_plan.c - `plan --out FILE` and `apply FILE`: a plan saved for review
 * and applied exactly as reviewed.
 *
 * The file is one JSON object (docs/plan-json.md, "Saved plans"): the spec's
 * absolute path and a hash of its bytes, the --only kinds and --target
 * patterns the plan was made with, one fingerprint per observed target
 * (src/exec/rollout.c: a hash of everything the planner read of it), and
 * the plan itself as `plan --json` prints it.  `apply FILE` loads the spec
 * again, refuses when its bytes changed, observes, refuses naming the first
 * target whose fingerprint differs, plans again and refuses unless that
 * plan equals the saved one.  Nothing is changed before all three hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gc/exec.h"
#include "gc/graph.h"
#include "gc/plan.h"

#define PLAN_FILE_MAX (64u * 1024 * 1024)

static const struct {
	const char *name;
	enum gc_target_kind kind;
} kind_words[] = {{"esxi", GC_TARGET_ESXI},
		  {"switch", GC_TARGET_SWITCH},
		  {"vcenter", GC_TARGET_VCENTER},
		  {"guest", GC_TARGET_GUEST},
		  {"kvm", GC_TARGET_KVM},
		  {"libvirt", GC_TARGET_LIBVIRT}};

/*
 * A target's key among the plan file's fingerprints: its name, and for the
 * two targets of a KVM host (which share the host's name) "kvm:NAME" and
 * "libvirt:NAME".  The older kinds keep the bare name plan files have.
 */
static const char *fp_key(char *buf, size_t n, const struct gc_target *t)
{
	if (t->kind != GC_TARGET_KVM && t->kind != GC_TARGET_LIBVIRT)
		return t->name;
	snprintf(buf, n, "%s:%s", gc_target_kind_name(t->kind), t->name);
	return buf;
}

/* The whole file, NUL-terminated; NULL (errno set) on failure or when larger than max. */
static char *slurp(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct gc_buf b = GC_BUF_INIT;
	char chunk[8192];
	size_t n;

	if (f == NULL)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		gc_buf_put(&b, chunk, n);
		if (b.len > max) {
			fclose(f);
			gc_buf_free(&b);
			errno = EFBIG;
			return NULL;
		}
	}
	if (ferror(f)) {
		fclose(f);
		gc_buf_free(&b);
		errno = EIO;
		return NULL;
	}
	fclose(f);
	*len = b.len;
	return gc_buf_take(&b);
}

int cli_spec_hash(char **out, const char *path)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t len = 0, i;
	char *data = slurp(path, PLAN_FILE_MAX, &len);

	if (data == NULL)
		return cli_error("cannot read '%s': %s", path, strerror(errno));
	for (i = 0; i < len; i++) {
		h ^= (unsigned char)data[i];
		h *= 0x100000001b3ull;
	}
	free(data);
	*out = gc_xasprintf("fnv1a64:%016llx", (unsigned long long)h);
	return 0;
}

bool cli_is_plan_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	int c;

	if (f == NULL)
		return false;
	while ((c = fgetc(f)) == ' ' || c == '\n' || c == '\t' || c == '\r')
		;
	fclose(f);
	return c == '{'; /* a spec is YAML that never starts a document with a flow map here */
}

int cli_plan_write(const char *path, const char *spec, unsigned kinds, const char *const *targets,
		   size_t ntargets, const struct gc_exec_report *rep, const struct gc_plan *plan)
{
	struct json_object *o = json_object_new_object(), *only = json_object_new_array();
	struct json_object *pats = json_object_new_array(), *fps = json_object_new_object();
	struct json_object *pj;
	struct gc_buf b = GC_BUF_INIT;
	char abs[PATH_MAX], *hash = NULL, *tmp = NULL;
	const char *text;
	size_t i;
	int fd, rc = GC_EXIT_ERROR;

	if (realpath(spec, abs) == NULL) {
		cli_error("cannot resolve '%s': %s", spec, strerror(errno));
		goto out;
	}
	if (cli_spec_hash(&hash, abs) != 0)
		goto out;
	gc_plan_render_json(&b, plan);
	pj = json_tokener_parse(gc_buf_str(&b));
	json_object_object_add(o, "gpuclusterctl_plan", json_object_new_int(1));
	json_object_object_add(o, "spec", json_object_new_string(abs));
	json_object_object_add(o, "spec_hash", json_object_new_string(hash));
	for (i = 0; i < GC_ARRAY_LEN(kind_words); i++) {
		if (kinds & (1u << kind_words[i].kind))
			json_object_array_add(only, json_object_new_string(kind_words[i].name));
	}
	json_object_object_add(o, "only", only);
	for (i = 0; i < ntargets; i++)
		json_object_array_add(pats, json_object_new_string(targets[i]));
	json_object_object_add(o, "targets", pats);
	for (i = 0; i < rep->ntargets; i++) {
		char key[300];

		if (rep->targets[i].fingerprint[0] != '\0')
			json_object_object_add(fps, fp_key(key, sizeof(key), rep->targets[i].target),
					       json_object_new_string(rep->targets[i].fingerprint));
	}
	json_object_object_add(o, "fingerprints", fps);
	json_object_object_add(o, "plan", pj);
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED);
	/* write beside, then rename: a reader never sees half a plan */
	tmp = gc_xasprintf("%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || write(fd, "\n", 1) != 1 ||
	    fsync(fd) != 0) {
		cli_error("cannot write the plan to '%s': %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (rename(tmp, path) != 0) {
		cli_error("cannot write the plan to '%s': %s", path, strerror(errno));
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	json_object_put(o);
	gc_buf_free(&b);
	free(hash);
	free(tmp);
	return rc;
}

static const char *str_field(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int cli_plan_parse(struct cli_saved_plan *out, const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *v, *arr;
	size_t i, k, tlen = strnlen(text, len); /* as far as json_tokener_parse() reads */

	memset(out, 0, sizeof(*out));
	out->root = json_tokener_parse_ex(tok, text, tlen > INT_MAX ? INT_MAX : (int)tlen);
	if (json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(out->root);
		out->root = NULL;
	}
	json_tokener_free(tok);
	if (out->root == NULL || !json_object_object_get_ex(out->root, "gpuclusterctl_plan", &v) ||
	    json_object_get_int(v) != 1 || str_field(out->root, "spec") == NULL ||
	    str_field(out->root, "spec_hash") == NULL ||
	    !json_object_object_get_ex(out->root, "fingerprints", &out->fingerprints) ||
	    !json_object_is_type(out->fingerprints, json_type_object) ||
	    !json_object_object_get_ex(out->root, "plan", &out->plan) ||
	    !json_object_is_type(out->plan, json_type_object)) {
		cli_saved_plan_free(out);
		return -1;
	}
	out->spec = str_field(out->root, "spec");
	out->spec_hash = str_field(out->root, "spec_hash");
	if (json_object_object_get_ex(out->root, "only", &arr) && json_object_is_type(arr, json_type_array)) {
		for (i = 0; i < json_object_array_length(arr); i++) {
			const char *w = json_object_get_string(json_object_array_get_idx(arr, i));

			for (k = 0; w != NULL && k < GC_ARRAY_LEN(kind_words); k++) {
				if (strcmp(w, kind_words[k].name) == 0)
					out->kinds |= 1u << kind_words[k].kind;
			}
		}
	}
	if (json_object_object_get_ex(out->root, "targets", &arr) && json_object_is_type(arr, json_type_array)) {
		size_t n = json_object_array_length(arr);

		out->targets = gc_xcalloc(n ? n : 1, sizeof(*out->targets));
		for (i = 0; i < n; i++) {
			const char *w = json_object_get_string(json_object_array_get_idx(arr, i));

			if (w != NULL)
				out->targets[out->ntargets++] = w;
		}
	}
	return 0;
}

int cli_plan_read(struct cli_saved_plan *out, const char *path)
{
	size_t len = 0;
	char *text = slurp(path, PLAN_FILE_MAX, &len);
	int rc;

	memset(out, 0, sizeof(*out));
	if (text == NULL)
		return cli_error("cannot read '%s': %s", path, strerror(errno));
	rc = cli_plan_parse(out, text, len);
	free(text);
	if (rc != 0)
		return cli_error("'%s' is not a plan file of this version (plan --out FILE writes one)", path);
	return 0;
}

const char **cli_plan_fingerprints(const struct cli_saved_plan *p, const struct gc_graph *g)
{
	const char **fp = gc_xcalloc(g->ntargets ? g->ntargets : 1, sizeof(*fp));
	size_t i;

	for (i = 0; i < g->ntargets; i++) {
		char key[300];

		fp[i] = str_field(p->fingerprints, fp_key(key, sizeof(key), g->targets[i]));
	}
	return fp;
}

bool cli_plan_same(const struct cli_saved_plan *p, const struct gc_plan *plan)
{
	struct gc_buf b = GC_BUF_INIT;
	struct json_object *now;
	bool same;

	gc_plan_render_json(&b, plan);
	now = json_tokener_parse(gc_buf_str(&b));
	same = now != NULL && json_object_equal(now, p->plan);
	json_object_put(now);
	gc_buf_free(&b);
	return same;
}

void cli_saved_plan_free(struct cli_saved_plan *p)
{
	json_object_put(p->root);
	free(p->targets);
	memset(p, 0, sizeof(*p));
}
