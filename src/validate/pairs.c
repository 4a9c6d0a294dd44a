/*
 * pairs.c - validate's RDMA pair tests: the probe in --rdma-server mode on
 * one guest, --rdma-peer <its RDMA address> on the other, over the sessions
 * of the node checks; two rounds of disjoint pairs so no guest is in two
 * tests at once and every guest is in one (gc_validate_pair_round).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/pattern.h"
#include "validate_int.h"

struct pair_side {
	struct gsess *s;
	char *cmd;
	struct gc_ssh_result res;
	struct gc_error err;
	int rc;
};

static void *pair_side_run(void *arg)
{
	struct pair_side *p = arg;

	p->rc = vd_run_root(p->s, p->cmd, &p->res, &p->err);
	return NULL;
}

static char *pair_cmd(struct gsess *s, const char *peer, const struct gc_validate_opts *o)
{
	const struct gc_roce_qos *q = s->gst->roce_qos;
	struct gc_buf b = GC_BUF_INIT;

	gc_buf_printf(&b, "%s --json --no-cuda --no-bw --rdma-timeout %u --rdma-msg-kib %u "
		      "--rdma-iters %u", s->probe, o->rdma_timeout_s ? o->rdma_timeout_s : 60,
		      o->rdma_msg_kib ? o->rdma_msg_kib : 1024, o->rdma_iters ? o->rdma_iters : 2000);
	if (o->rdma_qp_timeout)
		gc_buf_printf(&b, " --rdma-qp-timeout %u", o->rdma_qp_timeout);
	if (s->hca != NULL) {
		gc_buf_puts(&b, " --rdma-dev ");
		gc_shell_quote(&b, s->hca);
	}
	if (q != NULL)
		gc_buf_printf(&b, " --rdma-tclass %d", q->tos);
	if (peer == NULL) {
		gc_buf_puts(&b, " --rdma-server");
	} else {
		gc_buf_puts(&b, " --rdma-peer ");
		gc_shell_quote(&b, peer);
	}
	return gc_buf_take(&b);
}

static void pair_test(struct vctx *v, struct gsess *a, struct gsess *b)
{
	const struct gc_validation *val = &v->g->cluster->validation;
	struct pair_side side[2];
	pthread_t th;
	char who[256], e[64], f[64], line[320];
	struct gc_vprobe_rdma rt;
	uint64_t t0;

	snprintf(who, sizeof(who), "%s<->%s", a->t->name, b->t->name);
	if (!a->usable || !b->usable || a->rdma_addr == NULL) {
		vd_add(v, GC_CT_PAIR, who, "rdma.write", GC_CHECK_FAIL, "ran",
		    "not run", !a->usable || !b->usable ? "a guest of the pair failed its node checks "
		    "(above)" : "the server side has no rdma_interface address in the spec");
		return;
	}
	vd_progress(v, who, "RDMA write test");
	t0 = gc_now_ns();
	memset(side, 0, sizeof(side));
	side[0].s = a;
	side[0].cmd = pair_cmd(a, NULL, v->o);
	side[1].s = b;
	side[1].cmd = pair_cmd(b, a->rdma_addr, v->o);
	side[0].err = (struct gc_error)GC_ERROR_INIT;
	side[1].err = (struct gc_error)GC_ERROR_INIT;
	if (pthread_create(&th, NULL, pair_side_run, &side[0]) != 0)
		abort();
	pair_side_run(&side[1]);
	pthread_join(th, NULL);

	if (side[1].rc != 0) {
		vd_add(v, GC_CT_PAIR, who, "rdma.write", GC_CHECK_FAIL, "ok", side[1].err.msg, NULL);
		goto out;
	}
	if (side[1].res.out == NULL || side[1].res.out_truncated ||
	    gc_validate_probe_rdma_test(&rt, side[1].res.out, side[1].res.out_len) != 0) {
		vd_add(v, GC_CT_PAIR, who, "rdma.write", GC_CHECK_FAIL, "ok",
		    vd_stderr_line(&side[1].res, line, sizeof(line)), "the probe printed no JSON report");
		goto out;
	}
	if (!rt.ok) {
		vd_add(v, GC_CT_PAIR, who, "rdma.write", GC_CHECK_FAIL, "ok", rt.reason,
		    "no RDMA between the two: RDMA interfaces up with their addresses, the same "
		    "subnet, the switch ports' MTU and PFC, a RoCE v2 GID on both (probe each)");
		goto out;
	}
	vd_add_timed(v, (double)(gc_now_ns() - t0) / 1e9, GC_CT_PAIR, who, "rdma.write",
		     GC_CHECK_PASS, "ok", "ok: data verified", NULL);
	{
		bool ok = val->min_rdma_gbps <= 0 || rt.bw_gbps >= val->min_rdma_gbps;

		snprintf(f, sizeof(f), "%.3f Gb/s", rt.bw_gbps);
		if (val->min_rdma_gbps > 0)
			snprintf(e, sizeof(e), ">= %g Gb/s", val->min_rdma_gbps);
		vd_add(v, GC_CT_PAIR, who, "rdma.write_bandwidth", ok ? GC_CHECK_PASS : GC_CHECK_FAIL,
		    val->min_rdma_gbps > 0 ? e : NULL, f,
		    ok ? NULL : "RDMA slower than the spec wants: a path MTU below 4096, PFC pauses "
				"or congestion (the switch's counters), a PCIe-far HCA, or a link at a "
				"lower speed");
		ok = val->max_rdma_latency_us <= 0 || rt.lat_us <= val->max_rdma_latency_us;
		snprintf(f, sizeof(f), "%.2f us", rt.lat_us);
		if (val->max_rdma_latency_us > 0)
			snprintf(e, sizeof(e), "<= %g us", val->max_rdma_latency_us);
		vd_add(v, GC_CT_PAIR, who, "rdma.write_latency", ok ? GC_CHECK_PASS : GC_CHECK_FAIL,
		    val->max_rdma_latency_us > 0 ? e : NULL, f,
		    ok ? NULL : "a completion round trip slower than the spec wants: interrupt "
				"moderation, a busy vCPU, or hops through more switches");
	}
out:
	for (int i = 0; i < 2; i++) {
		gc_ssh_result_free(&side[i].res);
		free(side[i].cmd);
	}
}

struct round_job {
	struct vctx *v;
	struct gsess *a, *b;
};

static void *round_job_run(void *arg)
{
	struct round_job *j = arg;

	pair_test(j->v, j->a, j->b);
	return NULL;
}

size_t gc_validate_pair_round(size_t (*pairs)[2], size_t n, unsigned round)
{
	size_t np = 0;

	if (n < 2 || round > 1)
		return 0;
	for (size_t i = round; i + 1 < n; i += 2) {
		pairs[np][0] = i;
		pairs[np][1] = i + 1;
		np++;
	}
	if (round == 1 && n % 2 == 0 && n > 2) {
		pairs[np][0] = n - 1;
		pairs[np][1] = 0;
		np++;
	}
	return np;
}

void vd_pair_rounds(struct vctx *v, struct gsess *gs, size_t n)
{
	struct round_job *jobs = gc_xcalloc(n + 1, sizeof(*jobs));
	pthread_t *th = gc_xcalloc(n + 1, sizeof(*th));
	size_t (*pairs)[2] = gc_xcalloc(n + 1, sizeof(*pairs));

	for (unsigned r = 0; r < 2; r++) {
		size_t np = gc_validate_pair_round(pairs, n, r);

		for (size_t i = 0; i < np; i++) {
			jobs[i] = (struct round_job){v, &gs[pairs[i][0]], &gs[pairs[i][1]]};
			if (pthread_create(&th[i], NULL, round_job_run, &jobs[i]) != 0)
				abort();
		}
		for (size_t i = 0; i < np; i++)
			pthread_join(th[i], NULL);
	}
	free(jobs);
	free(th);
	free(pairs);
}

