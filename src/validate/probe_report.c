/*
 * probe_report.c - the node probe's JSON report (docs/probe.md, "schema": 1)
 * as validate reads it: the probe's own expectation results become checks,
 * the copy bandwidth is held against `validation:`, and the RDMA device and
 * GID index the pair rounds need are picked out; the RDMA write test's
 * result of a pair.
 *
 * The text comes from a guest, so nothing in it is trusted: json-c parses
 * it (anything but one JSON object is an error), every field is looked up
 * by name and type, a missing or mistyped one reads as absent, and strings
 * reach the report only through gc_vreport_add (cut at
 * GC_VREPORT_VALUE_MAX; made printable when rendered).  Fuzzed by
 * fuzz/fuzz_validate_probe.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "gc/validate.h"

static struct json_object *jget(struct json_object *o, const char *k)
{
	struct json_object *v;

	return o != NULL && json_object_is_type(o, json_type_object) &&
			       json_object_object_get_ex(o, k, &v)
		       ? v
		       : NULL;
}

static const char *jstr(struct json_object *o, const char *k)
{
	struct json_object *v = jget(o, k);

	return v != NULL && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
								     : NULL;
}

static double jnum(struct json_object *o, const char *k, double dflt)
{
	struct json_object *v = jget(o, k);

	if (v == NULL ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return dflt;
	return json_object_get_double(v);
}

static size_t jlen(struct json_object *a)
{
	return a != NULL && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static struct json_object *parse(const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;

	if (len > (size_t)0x7fffffff) {
		json_tokener_free(tok);
		return NULL;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* A hint belongs to a failure or a skip: dropped on a pass, and "" is none. */
static void padd(struct gc_validate_report *r, const char *target, const char *name,
		 enum gc_check_status st, const char *exp, const char *found, const char *hint)
{
	if (st == GC_CHECK_PASS || (hint != NULL && hint[0] == '\0'))
		hint = NULL;
	gc_vreport_add(r, GC_CT_GUEST, target, name, st, exp, found, hint);
}

static void bandwidth_checks(struct gc_validate_report *r, const struct gc_vprobe_in *in,
			     struct json_object *cuda)
{
	static const char *const dir[3] = {"h2d", "d2h", "d2d"};
	const double want[3] = {in->val->min_h2d_gbps, in->val->min_d2h_gbps,
				in->val->min_d2d_gbps};
	struct json_object *gpus = jget(cuda, "gpus");
	size_t n = jlen(gpus);

	for (int d = 0; d < 3; d++) {
		char key[16], name[48], e[48], f[48];

		if (want[d] <= 0)
			continue;
		snprintf(key, sizeof(key), "%s_gbs", dir[d]);
		if (n == 0)
			padd(r, in->target, d == 0 ? "gpu.h2d_bandwidth" : d == 1 ? "gpu.d2h_bandwidth"
										 : "gpu.d2d_bandwidth",
			     GC_CHECK_FAIL, "measured", "no GPU in the probe's report",
			     "CUDA listed no GPU");
		for (size_t i = 0; i < n && i < 64; i++) {
			double got = jnum(json_object_array_get_idx(gpus, i), key, 0);
			bool ok = got >= want[d];

			snprintf(name, sizeof(name), "gpu%zu.%s_bandwidth", i, dir[d]);
			snprintf(e, sizeof(e), ">= %.1f GB/s", want[d]);
			snprintf(f, sizeof(f), "%.2f GB/s", got);
			padd(r, in->target, name, ok ? GC_CHECK_PASS : GC_CHECK_FAIL, e, f,
			     d == 2 ? "device memory slower than the model's: a vGPU time-sliced with "
				      "busy neighbours, clocks throttled (nvidia-smi -q -d PERFORMANCE)"
				    : "host<->GPU copies below the spec's: the GPU in a narrower or "
				      "slower PCIe link than it should (nvidia-smi -q: Link Width/Gen), "
				      "or a NUMA-far socket");
		}
	}
}

/* The first device with an ACTIVE port, and that port's RoCE v2 GID index. */
static void active_device(struct json_object *root, struct gc_vprobe_out *out)
{
	struct json_object *devs = jget(jget(root, "rdma"), "devices");

	for (size_t i = 0; i < jlen(devs) && out->hca == NULL; i++) {
		struct json_object *d = json_object_array_get_idx(devs, i), *ports = jget(d, "ports");

		for (size_t p = 0; p < jlen(ports); p++) {
			struct json_object *pt = json_object_array_get_idx(ports, p);
			const char *st = jstr(pt, "state"), *name = jstr(d, "name");
			double gid = jnum(pt, "roce_v2_gid_index", -1);

			if (st != NULL && strcmp(st, "PORT_ACTIVE") == 0 && name != NULL &&
			    name[0] != '\0' && strlen(name) < 64) {
				out->hca = gc_xstrdup(name);
				out->gid_index = gid >= 0 && gid < 65536 ? (int)gid : -1;
				break;
			}
		}
	}
}

int gc_validate_probe_checks(struct gc_validate_report *r, const struct gc_vprobe_in *in,
			     const char *text, size_t len, struct gc_vprobe_out *out)
{
	struct json_object *root = parse(text, len), *checks, *cuda;

	out->hca = NULL;
	out->gid_index = -1;
	if (root == NULL)
		return GC_EINVAL;
	active_device(root, out);
	checks = jget(jget(root, "expectations"), "checks");
	for (size_t i = 0; i < jlen(checks); i++) {
		struct json_object *c = json_object_array_get_idx(checks, i), *pass = jget(c, "pass");
		const char *key = jstr(c, "key");

		if (key == NULL)
			continue;
		padd(r, in->target, key,
		     pass != NULL && json_object_is_type(pass, json_type_boolean) &&
				     json_object_get_boolean(pass)
			     ? GC_CHECK_PASS
			     : GC_CHECK_FAIL,
		     jstr(c, "expected"), jstr(c, "found"), jstr(c, "hint"));
	}
	cuda = jget(root, "cuda");
	if (in->gpus) {
		const char *st = jstr(cuda, "status");

		if (in->skip_cuda) {
			padd(r, in->target, "cuda", GC_CHECK_SKIP, NULL, NULL, "--skip cuda");
		} else if (st == NULL || strcmp(st, "ok") != 0) {
			const char *why = jstr(cuda, "reason");

			padd(r, in->target, "cuda", GC_CHECK_FAIL, "ok",
			     why != NULL && why[0] != '\0' ? why : (st ? st : "not reported"),
			     "CUDA does not work: libcuda.so.1 comes with the NVIDIA driver; a GPU "
			     "without enough MMIO space or an unlicensed vGPU fails cuInit");
		} else {
			bandwidth_checks(r, in, cuda);
		}
	}
	json_object_put(root);
	return 0;
}

int gc_validate_probe_rdma_test(struct gc_vprobe_rdma *out, const char *text, size_t len)
{
	struct json_object *root = parse(text, len), *rt;
	const char *st, *why;

	memset(out, 0, sizeof(*out));
	if (root == NULL)
		return GC_EINVAL;
	rt = jget(root, "rdma_test");
	st = jstr(rt, "status");
	why = jstr(rt, "reason");
	out->ok = st != NULL && strcmp(st, "ok") == 0;
	snprintf(out->reason, sizeof(out->reason), "%s", why ? why : (st ? st : "no RDMA test result"));
	out->bw_gbps = jnum(rt, "bw_gbs", 0) * 8.0;
	out->lat_us = jnum(rt, "lat_us", 0);
	json_object_put(root);
	return 0;
}
