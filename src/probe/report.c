/*
 * report.c - the probe report as a human table or as JSON.
 *
 * JSON is written by hand (the probe is libc-only): every string goes
 * through pb_json_str(), which escapes quotes, backslashes, control bytes
 * and invalid UTF-8, so text read from sysfs or a tool cannot break the
 * document.  Field names and meanings are documented in docs/probe.md;
 * "schema": 1 changes only when a field changes meaning or goes away.
 */
#include <stdio.h>
#include <string.h>

#include "probe_int.h"

const char *gc_probe_status_name(int status)
{
	switch (status) {
	case GC_PROBE_NOT_RUN: return "not_run";
	case GC_PROBE_OK: return "ok";
	case GC_PROBE_ABSENT: return "absent";
	case GC_PROBE_FAILED: return "failed";
	}
	return "unknown";
}

enum gc_probe_exit gc_probe_verdict(const struct gc_probe_report *r)
{
	if (r->nfailed > 0 || r->rdma_test.status == GC_PROBE_FAILED)
		return GC_PROBE_EXIT_FAIL;
	if (r->nexpect == 0 && r->rdma.status != GC_PROBE_OK && r->cuda.status != GC_PROBE_OK &&
	    r->rdma_test.status != GC_PROBE_OK)
		return GC_PROBE_EXIT_NOTHING;
	return GC_PROBE_EXIT_OK;
}

static const char *verdict_name(enum gc_probe_exit v)
{
	switch (v) {
	case GC_PROBE_EXIT_OK: return "ok";
	case GC_PROBE_EXIT_FAIL: return "failed";
	case GC_PROBE_EXIT_NOTHING: return "nothing_to_check";
	case GC_PROBE_EXIT_USAGE:
	case GC_PROBE_EXIT_INTERRUPTED:
		break;
	}
	return "unknown";
}

/* ---- JSON ---- */

static void key(struct pb_buf *b, bool *first, const char *k)
{
	pb_buf_puts(b, *first ? "" : ",");
	*first = false;
	pb_json_str(b, k);
	pb_buf_puts(b, ":");
}

static void kstr(struct pb_buf *b, bool *first, const char *k, const char *v)
{
	key(b, first, k);
	pb_json_str(b, v);
}

static void kint(struct pb_buf *b, bool *first, const char *k, long long v)
{
	key(b, first, k);
	pb_buf_printf(b, "%lld", v);
}

static void kdbl(struct pb_buf *b, bool *first, const char *k, double v)
{
	key(b, first, k);
	pb_buf_printf(b, "%.3f", v);
}

static void kbool(struct pb_buf *b, bool *first, const char *k, bool v)
{
	key(b, first, k);
	pb_buf_puts(b, v ? "true" : "false");
}

/* -1 is "unknown"/"unset": null in JSON */
static void kopt(struct pb_buf *b, bool *first, const char *k, long long v)
{
	key(b, first, k);
	if (v < 0)
		pb_buf_puts(b, "null");
	else
		pb_buf_printf(b, "%lld", v);
}

static void json_port(struct pb_buf *b, const struct gc_probe_port *p)
{
	bool f = true;
	int i;

	pb_buf_puts(b, "{");
	kint(b, &f, "port", p->num);
	kstr(b, &f, "state", p->state);
	kopt(b, &f, "state_num", p->state_num);
	kint(b, &f, "active_mtu", p->active_mtu);
	kint(b, &f, "max_mtu", p->max_mtu);
	kstr(b, &f, "link_layer", p->link_layer);
	kint(b, &f, "lid", p->lid);
	kstr(b, &f, "netdev", p->netdev);
	kopt(b, &f, "roce_v2_gid_index", p->roce_v2_index);
	kopt(b, &f, "traffic_class", p->traffic_class);
	kopt(b, &f, "default_roce_tos", p->default_tos);
	key(b, &f, "gids");
	pb_buf_puts(b, "[");
	for (i = 0; i < p->ngids; i++) {
		bool g = true;
		pb_buf_puts(b, i ? ",{" : "{");
		kint(b, &g, "index", p->gids[i].index);
		kstr(b, &g, "gid", p->gids[i].gid);
		kstr(b, &g, "type", p->gids[i].type);
		kstr(b, &g, "ipv4", p->gids[i].ipv4);
		kstr(b, &g, "netdev", p->gids[i].ndev);
		pb_buf_puts(b, "}");
	}
	pb_buf_puts(b, "]}");
}

static void json_rdma(struct pb_buf *b, const struct gc_probe_rdma *r)
{
	bool f = true;
	int i, j;

	pb_buf_puts(b, "{");
	kstr(b, &f, "status", gc_probe_status_name(r->status));
	kstr(b, &f, "reason", r->reason);
	kbool(b, &f, "verbs_loaded", r->verbs_loaded);
	kstr(b, &f, "verbs_reason", r->verbs_reason);
	kstr(b, &f, "peermem", r->peermem);
	key(b, &f, "devices");
	pb_buf_puts(b, "[");
	for (i = 0; i < r->ndev; i++) {
		const struct gc_probe_rdma_dev *d = &r->devs[i];
		bool g = true, q = true;

		pb_buf_puts(b, i ? ",{" : "{");
		kstr(b, &g, "name", d->name);
		kstr(b, &g, "fw_ver", d->fw_ver);
		kstr(b, &g, "node_guid", d->node_guid);
		key(b, &g, "ports");
		pb_buf_puts(b, "[");
		for (j = 0; j < d->nports; j++) {
			if (j)
				pb_buf_puts(b, ",");
			json_port(b, &d->ports[j]);
		}
		pb_buf_puts(b, "]");
		key(b, &g, "qos");
		pb_buf_puts(b, "{");
		kbool(b, &q, "present", d->qos.present);
		kstr(b, &q, "netdev", d->qos.netdev);
		kstr(b, &q, "dcbx", d->qos.dcbx);
		kstr(b, &q, "trust", d->qos.trust);
		key(b, &q, "pfc_enabled");
		if (d->qos.present) {
			pb_buf_puts(b, "[");
			for (j = 0; j < 8; j++)
				pb_buf_printf(b, "%s%d", j ? "," : "", d->qos.pfc[j]);
			pb_buf_puts(b, "]");
		} else {
			pb_buf_puts(b, "null");
		}
		kstr(b, &q, "reason", d->qos.reason);
		pb_buf_puts(b, "}}");
	}
	pb_buf_puts(b, "]}");
}

static void json_cuda(struct pb_buf *b, const struct gc_probe_cuda *c)
{
	bool f = true;
	int i, j;

	pb_buf_puts(b, "{");
	kstr(b, &f, "status", gc_probe_status_name(c->status));
	kstr(b, &f, "reason", c->reason);
	kint(b, &f, "cuda_driver_version", c->cuda_driver_version);
	kstr(b, &f, "driver_version", c->driver_version);
	kstr(b, &f, "nvml_status", gc_probe_status_name(c->nvml_status));
	kstr(b, &f, "nvml_reason", c->nvml_reason);
	key(b, &f, "gpus");
	pb_buf_puts(b, "[");
	for (i = 0; i < c->ngpu; i++) {
		const struct gc_probe_gpu *g = &c->gpus[i];
		bool h = true;

		pb_buf_puts(b, i ? ",{" : "{");
		kint(b, &h, "index", g->index);
		kstr(b, &h, "name", g->name);
		kint(b, &h, "memory_bytes", (long long)g->mem_bytes);
		kint(b, &h, "memory_mib", (long long)(g->mem_bytes / 1048576));
		kstr(b, &h, "pci_bus_id", g->pci_bus_id);
		key(b, &h, "compute_capability");
		pb_buf_printf(b, "\"%d.%d\"", g->cc_major, g->cc_minor);
		kstr(b, &h, "virtualization_mode", g->virt_mode);
		kstr(b, &h, "ecc", g->ecc);
		kstr(b, &h, "license", g->license);
		kdbl(b, &h, "h2d_gbs", g->h2d_gbs);
		kdbl(b, &h, "d2h_gbs", g->d2h_gbs);
		kdbl(b, &h, "d2d_gbs", g->d2d_gbs);
		pb_buf_puts(b, "}");
	}
	pb_buf_puts(b, "]");
	key(b, &f, "vector_add");
	{
		bool v = true;
		pb_buf_puts(b, "{");
		kstr(b, &v, "status", gc_probe_status_name(c->vadd_status));
		kstr(b, &v, "detail", c->vadd_reason);
		pb_buf_puts(b, "}");
	}
	key(b, &f, "bandwidth");
	{
		bool v = true;
		pb_buf_puts(b, "{");
		kstr(b, &v, "status", gc_probe_status_name(c->bw_status));
		kstr(b, &v, "reason", c->bw_reason);
		kint(b, &v, "bytes", (long long)c->bw_bytes);
		kint(b, &v, "reps", c->bw_reps);
		kint(b, &v, "trials", c->bw_trials);
		kstr(b, &v, "method", "pinned host memory, async copies on one stream timed with "
				      "CUDA events after 3 warm-up copies; median trial; GB/s = 1e9 "
				      "bytes copied per second");
		pb_buf_puts(b, "}");
	}
	key(b, &f, "peer_access");
	pb_buf_puts(b, "[");
	for (i = 0; i < c->ngpu; i++) {
		pb_buf_puts(b, i ? ",[" : "[");
		for (j = 0; j < c->ngpu; j++)
			pb_buf_puts(b, j == i ? (j ? ",null" : "null")
					      : c->peer[i][j] == 1 ? (j ? ",true" : "true")
								   : (j ? ",false" : "false"));
		pb_buf_puts(b, "]");
	}
	pb_buf_puts(b, "]}");
}

int gc_probe_render_json(char **out, const struct gc_probe_report *r)
{
	struct pb_buf b = {0};
	bool f = true, g;
	int i;

	pb_buf_puts(&b, "{");
	kint(&b, &f, "schema", 1);
	kstr(&b, &f, "probe_version", GC_VERSION);
	kstr(&b, &f, "result", verdict_name(gc_probe_verdict(r)));
	key(&b, &f, "rdma");
	json_rdma(&b, &r->rdma);
	key(&b, &f, "cuda");
	json_cuda(&b, &r->cuda);
	key(&b, &f, "gpudirect_rdma");
	g = true;
	pb_buf_puts(&b, "{");
	kstr(&b, &g, "status", gc_probe_status_name(r->gdr.status));
	kstr(&b, &g, "reason", r->gdr.reason);
	pb_buf_puts(&b, "}");
	key(&b, &f, "rdma_test");
	g = true;
	pb_buf_puts(&b, "{");
	kstr(&b, &g, "status", gc_probe_status_name(r->rdma_test.status));
	kstr(&b, &g, "role", r->rdma_test.role);
	kstr(&b, &g, "peer", r->rdma_test.peer);
	kstr(&b, &g, "device", r->rdma_test.device);
	kint(&b, &g, "port", r->rdma_test.port);
	kopt(&b, &g, "gid_index", r->rdma_test.gid_index);
	kint(&b, &g, "msg_bytes", (long long)r->rdma_test.msg_bytes);
	kint(&b, &g, "iters", r->rdma_test.iters);
	kdbl(&b, &g, "bw_gbs", r->rdma_test.bw_gbs);
	kdbl(&b, &g, "lat_us", r->rdma_test.lat_us);
	kstr(&b, &g, "reason", r->rdma_test.reason);
	pb_buf_puts(&b, "}");
	key(&b, &f, "expectations");
	g = true;
	pb_buf_puts(&b, "{");
	kint(&b, &g, "evaluated", r->nexpect);
	kint(&b, &g, "failed", r->nfailed);
	key(&b, &g, "checks");
	pb_buf_puts(&b, "[");
	for (i = 0; i < r->nexpect; i++) {
		const struct gc_probe_check *c = &r->checks[i];
		bool h = true;
		pb_buf_puts(&b, i ? ",{" : "{");
		kstr(&b, &h, "key", c->key);
		kbool(&b, &h, "pass", c->pass);
		kstr(&b, &h, "expected", c->expected);
		kstr(&b, &h, "found", c->found);
		kstr(&b, &h, "hint", c->hint);
		pb_buf_puts(&b, "}");
	}
	pb_buf_puts(&b, "]}}\n");
	*out = pb_buf_take(&b);
	return 0;
}

/* ---- human table ---- */

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

static void text_rdma(struct pb_buf *b, const struct gc_probe_rdma *rd)
{
	int i, j, k;

	pb_buf_puts(b, "RDMA\n");
	if (rd->status == GC_PROBE_NOT_RUN)
		pb_buf_puts(b, "  not run\n");
	else if (rd->status != GC_PROBE_OK)
		pb_buf_printf(b, "  %s: %s\n", gc_probe_status_name(rd->status), rd->reason);
	if (!rd->verbs_loaded && rd->status != GC_PROBE_NOT_RUN)
		pb_buf_printf(b, "  verbs: %s\n", or_dash(rd->verbs_reason));
	for (i = 0; i < rd->ndev; i++) {
		const struct gc_probe_rdma_dev *d = &rd->devs[i];

		pb_buf_printf(b, "  %-12s fw %s  guid %s\n", d->name, or_dash(d->fw_ver),
			      or_dash(d->node_guid));
		pb_buf_printf(b, "    %-4s %-14s %-6s %-10s %-8s %-9s %-5s %s\n", "PORT", "STATE",
			      "MTU", "LINK", "NETDEV", "ROCEv2IDX", "TCLASS", "DEFAULT_TOS");
		for (j = 0; j < d->nports; j++) {
			const struct gc_probe_port *p = &d->ports[j];
			char mtu[16], idx[16], tc[16], tos[16];

			pb_fmt(mtu, sizeof(mtu), "%d", p->active_mtu);
			pb_fmt(idx, sizeof(idx), "%d", p->roce_v2_index);
			pb_fmt(tc, sizeof(tc), "%d", p->traffic_class);
			pb_fmt(tos, sizeof(tos), "%d", p->default_tos);
			pb_buf_printf(b, "    %-4d %-14s %-6s %-10s %-8s %-9s %-6s %s\n", p->num,
				      or_dash(p->state), p->active_mtu ? mtu : "?",
				      or_dash(p->link_layer), or_dash(p->netdev),
				      p->roce_v2_index >= 0 ? idx : "none",
				      p->traffic_class >= 0 ? tc : "unset",
				      p->default_tos >= 0 ? tos : "unknown");
			for (k = 0; k < p->ngids; k++)
				pb_buf_printf(b, "      gid %-3d %s %-10s %s\n", p->gids[k].index,
					      p->gids[k].gid, or_dash(p->gids[k].type),
					      p->gids[k].ipv4);
		}
		if (d->qos.present) {
			pb_buf_printf(b, "    qos %s: trust %s, PFC", d->qos.netdev, d->qos.trust);
			for (k = 0; k < 8; k++)
				pb_buf_printf(b, " %d", d->qos.pfc[k]);
			pb_buf_printf(b, " (dcbx %s)\n", or_dash(d->qos.dcbx));
		} else {
			pb_buf_printf(b, "    qos: %s\n", or_dash(d->qos.reason));
		}
	}
	if (rd->status != GC_PROBE_NOT_RUN)
		pb_buf_printf(b, "  peermem: %s\n", rd->peermem[0] ? rd->peermem : "not loaded");
}

static void text_cuda(struct pb_buf *b, const struct gc_probe_cuda *c)
{
	int i, j;

	pb_buf_puts(b, "CUDA\n");
	if (c->status == GC_PROBE_NOT_RUN) {
		pb_buf_puts(b, "  not run\n");
	} else if (c->status != GC_PROBE_OK) {
		pb_buf_printf(b, "  %s: %s\n", gc_probe_status_name(c->status), c->reason);
	} else {
		pb_buf_printf(b, "  driver %s (CUDA %d.%d)%s%s\n", or_dash(c->driver_version),
			      c->cuda_driver_version / 1000, c->cuda_driver_version % 1000 / 10,
			      c->nvml_status == GC_PROBE_OK ? "" : "  nvml: ",
			      c->nvml_status == GC_PROBE_OK ? "" : c->nvml_reason);
		pb_buf_printf(b, "  %-3s %-28s %-10s %-14s %-4s %-13s %-8s %8s %8s %8s\n", "GPU",
			      "NAME", "MEMORY", "PCI", "CC", "VIRT", "ECC", "H2D GB/s",
			      "D2H GB/s", "D2D GB/s");
		for (i = 0; i < c->ngpu; i++) {
			const struct gc_probe_gpu *g = &c->gpus[i];
			char mem[24], cc[8];

			pb_fmt(mem, sizeof(mem), "%llu MiB", (unsigned long long)(g->mem_bytes >> 20));
			pb_fmt(cc, sizeof(cc), "%d.%d", g->cc_major, g->cc_minor);
			pb_buf_printf(b, "  %-3d %-28s %-10s %-14s %-4s %-13s %-8s", g->index, g->name,
				      mem, g->pci_bus_id, cc, or_dash(g->virt_mode), or_dash(g->ecc));
			if (c->bw_status == GC_PROBE_NOT_RUN)
				pb_buf_printf(b, " %8s %8s %8s\n", "-", "-", "-");
			else
				pb_buf_printf(b, " %8.1f %8.1f %8.1f\n", g->h2d_gbs, g->d2h_gbs,
					      g->d2d_gbs);
			if (g->license[0])
				pb_buf_printf(b, "      vGPU licence: %s\n", g->license);
		}
		pb_buf_printf(b, "  vector-add: %s (%s)\n", gc_probe_status_name(c->vadd_status),
			      or_dash(c->vadd_reason));
		if (c->bw_status == GC_PROBE_NOT_RUN)
			pb_buf_puts(b, "  bandwidth: not run\n");
		else
			pb_buf_printf(b, "  bandwidth: %s, %llu MiB x %d copies, median of %d%s%s\n",
				      gc_probe_status_name(c->bw_status),
				      (unsigned long long)(c->bw_bytes >> 20), c->bw_reps,
				      c->bw_trials, c->bw_reason[0] ? ": " : "", c->bw_reason);
		if (c->ngpu > 1) {
			pb_buf_puts(b, "  peer access (row -> column):\n      ");
			for (j = 0; j < c->ngpu; j++)
				pb_buf_printf(b, " %3d", j);
			pb_buf_puts(b, "\n");
			for (i = 0; i < c->ngpu; i++) {
				pb_buf_printf(b, "    %2d", i);
				for (j = 0; j < c->ngpu; j++)
					pb_buf_printf(b, " %3s", i == j ? "-"
							     : c->peer[i][j] == 1 ? "yes" : "no");
				pb_buf_puts(b, "\n");
			}
		}
	}
}

int gc_probe_render_text(char **out, const struct gc_probe_report *r)
{
	struct pb_buf b = {0};
	int i;

	text_rdma(&b, &r->rdma);
	text_cuda(&b, &r->cuda);
	if (r->gdr.status == GC_PROBE_NOT_RUN)
		pb_buf_puts(&b, "GPUDirect RDMA\n  not run\n");
	else
		pb_buf_printf(&b, "GPUDirect RDMA\n  %s: %s\n", gc_probe_status_name(r->gdr.status),
			      or_dash(r->gdr.reason));
	if (r->rdma_test.status != GC_PROBE_NOT_RUN) {
		const struct gc_probe_rdma_test *t = &r->rdma_test;
		pb_buf_printf(&b, "RDMA test (%s%s%s)\n  %s", t->role, t->peer[0] ? " -> " : "",
			      t->peer, gc_probe_status_name(t->status));
		if (t->status == GC_PROBE_OK && t->bw_gbs > 0)
			pb_buf_printf(&b, ": %s port %d gid %d, write bw %.2f GB/s (%llu B x %d), "
				      "latency %.2f us", t->device, t->port, t->gid_index, t->bw_gbs,
				      (unsigned long long)t->msg_bytes, t->iters, t->lat_us);
		pb_buf_printf(&b, "%s%s\n", t->reason[0] ? ": " : "", t->reason);
	}
	if (r->nexpect > 0) {
		pb_buf_printf(&b, "Expectations: %d checked, %d failed\n", r->nexpect, r->nfailed);
		for (i = 0; i < r->nexpect; i++) {
			const struct gc_probe_check *ck = &r->checks[i];
			pb_buf_printf(&b, "  %-4s %-26s expected %s, found %s\n",
				      ck->pass ? "ok" : "FAIL", ck->key, ck->expected, ck->found);
			if (!ck->pass && ck->hint[0])
				pb_buf_printf(&b, "       hint: %s\n", ck->hint);
		}
	}
	if (gc_probe_verdict(r) == GC_PROBE_EXIT_NOTHING)
		pb_buf_puts(&b, "Nothing to check: no RDMA device, no CUDA GPU and no expectation "
				"(exit 5)\n");
	*out = pb_buf_take(&b);
	return 0;
}
