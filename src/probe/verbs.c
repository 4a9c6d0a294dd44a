/*
 * verbs.c - libibverbs through dlopen(): port queries, GPU-memory
 * registration for GPUDirect RDMA, and the RC RDMA-write test between two
 * probes (`--rdma-server` on one guest, `--rdma-peer HOST` on the other).
 *
 * The test follows the classic perftest ib_write_bw/lat flow:
 *   open device -> PD -> MR over a page-aligned buffer -> CQ -> RC QP
 *   -> INIT (port, access flags) -> exchange QP info over TCP (qpx.c)
 *   -> RTR (path MTU = min of both, dest QPN, RQ PSN, AV with GRH: RoCE
 *      needs is_global=1 and the sgid index; IB uses the LID)
 *   -> RTS (timeout 14, retry 7, rnr_retry 7, SQ PSN) -> "READY" both ways.
 * The client then times
 *   latency: N signaled 64-byte RDMA writes, one in flight, completion
 *            latency per write (post to CQE; ib_write_lat reports half a
 *            ping-pong instead, so numbers differ by design), median;
 *   bandwidth: msg-sized RDMA writes kept `depth` in flight, every one
 *            signaled, bytes / (last CQE - first post).
 * It writes a known pattern; the server checks it after "DONE" and answers
 * "OK" or "BADDATA", so a test that "ran fast" but moved nothing fails.
 * Every poll loop has a deadline.  What could not be run on real RDMA
 * hardware is listed in docs/probe.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe_int.h"
#include "verbs_abi.h"

struct pb_verbs {
	void *dl;
	struct pb_ibv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct pb_ibv_device **list);
	const char *(*get_device_name)(struct pb_ibv_device *dev);
	struct pb_ibv_context *(*open_device)(struct pb_ibv_device *dev);
	int (*close_device)(struct pb_ibv_context *ctx);
	int (*query_device)(struct pb_ibv_context *ctx, struct pb_ibv_device_attr *attr);
	int (*query_port)(struct pb_ibv_context *ctx, uint8_t port, struct pb_ibv_port_attr *attr);
	int (*query_gid)(struct pb_ibv_context *ctx, uint8_t port, int index,
			 union pb_ibv_gid *gid);
	struct pb_ibv_pd *(*alloc_pd)(struct pb_ibv_context *ctx);
	int (*dealloc_pd)(struct pb_ibv_pd *pd);
	struct pb_ibv_mr *(*reg_mr)(struct pb_ibv_pd *pd, void *addr, size_t len, int access);
	int (*dereg_mr)(struct pb_ibv_mr *mr);
	struct pb_ibv_cq *(*create_cq)(struct pb_ibv_context *ctx, int cqe, void *cq_context,
				       void *channel, int comp_vector);
	int (*destroy_cq)(struct pb_ibv_cq *cq);
	struct pb_ibv_qp *(*create_qp)(struct pb_ibv_pd *pd, struct pb_ibv_qp_init_attr *attr);
	int (*modify_qp)(struct pb_ibv_qp *qp, struct pb_ibv_qp_attr *attr, int mask);
	int (*destroy_qp)(struct pb_ibv_qp *qp);
};

int pb_verbs_load(struct pb_verbs **out, char *why, size_t whycap)
{
	struct pb_verbs *v = calloc(1, sizeof(*v));
	const struct pb_sym syms[] = {
		{{"ibv_get_device_list"}, (void **)&v->get_device_list, false},
		{{"ibv_free_device_list"}, (void **)&v->free_device_list, false},
		{{"ibv_get_device_name"}, (void **)&v->get_device_name, false},
		{{"ibv_open_device"}, (void **)&v->open_device, false},
		{{"ibv_close_device"}, (void **)&v->close_device, false},
		{{"ibv_query_device"}, (void **)&v->query_device, false},
		{{"ibv_query_port"}, (void **)&v->query_port, false},
		{{"ibv_query_gid"}, (void **)&v->query_gid, false},
		{{"ibv_alloc_pd"}, (void **)&v->alloc_pd, false},
		{{"ibv_dealloc_pd"}, (void **)&v->dealloc_pd, false},
		{{"ibv_reg_mr"}, (void **)&v->reg_mr, false},
		{{"ibv_dereg_mr"}, (void **)&v->dereg_mr, false},
		{{"ibv_create_cq"}, (void **)&v->create_cq, false},
		{{"ibv_destroy_cq"}, (void **)&v->destroy_cq, false},
		{{"ibv_create_qp"}, (void **)&v->create_qp, false},
		{{"ibv_modify_qp"}, (void **)&v->modify_qp, false},
		{{"ibv_destroy_qp"}, (void **)&v->destroy_qp, false},
	};
	const char *lib = getenv("GC_PROBE_LIBIBVERBS");
	int rc;

	if (!v)
		abort();
	rc = pb_dl_open(&v->dl, lib && *lib ? lib : "libibverbs.so.1", syms,
			sizeof(syms) / sizeof(syms[0]), why, whycap);
	if (rc != 0) {
		free(v);
		return rc;
	}
	*out = v;
	return 0;
}

void pb_verbs_unload(struct pb_verbs *v)
{
	if (!v)
		return;
	/* providers register atexit handlers in some versions: keep the library mapped */
	free(v);
}

static int mtu_bytes(int e)
{
	return e >= 1 && e <= 5 ? 128 << e : 0;
}

/* Opens the named device; NULL if absent. */
static struct pb_ibv_context *open_named(struct pb_verbs *v, const char *name)
{
	struct pb_ibv_device **list;
	struct pb_ibv_context *ctx = NULL;
	int i, n = 0;

	list = v->get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n && !ctx; i++)
		if (strcmp(v->get_device_name(list[i]), name) == 0)
			ctx = v->open_device(list[i]);
	v->free_device_list(list);
	return ctx;
}

static int query_port(struct pb_verbs *v, struct pb_ibv_context *ctx, int port,
		      struct pb_ibv_port_attr *pa)
{
	memset(pa, 0, sizeof(*pa)); /* what the verbs.h inline does before the compat call */
	return v->query_port(ctx, (uint8_t)port, pa);
}

void pb_verbs_query_ports(struct pb_verbs *v, struct gc_probe_rdma *r)
{
	int i, j;

	for (i = 0; i < r->ndev; i++) {
		struct gc_probe_rdma_dev *d = &r->devs[i];
		struct pb_ibv_context *ctx = open_named(v, d->name);
		struct pb_ibv_device_attr da;

		if (!ctx)
			continue;
		memset(&da, 0, sizeof(da));
		if (!d->fw_ver[0] && v->query_device(ctx, &da) == 0)
			pb_copy(d->fw_ver, sizeof(d->fw_ver), da.fw_ver, strnlen(da.fw_ver, 64));
		for (j = 0; j < d->nports; j++) {
			struct gc_probe_port *p = &d->ports[j];
			struct pb_ibv_port_attr pa;

			if (query_port(v, ctx, p->num, &pa) != 0)
				continue;
			p->active_mtu = mtu_bytes(pa.active_mtu);
			p->max_mtu = mtu_bytes(pa.max_mtu);
			p->lid = pa.lid;
			if (p->state_num < 0)
				p->state_num = pa.state;
			if (!p->link_layer[0])
				pb_copy(p->link_layer, sizeof(p->link_layer),
					pa.link_layer == PB_IBV_LINK_LAYER_ETHERNET ? "Ethernet"
										   : "InfiniBand",
					pa.link_layer == PB_IBV_LINK_LAYER_ETHERNET ? 8 : 10);
		}
		v->close_device(ctx);
	}
}

int pb_verbs_try_reg(struct pb_verbs *v, const char *dev, void *addr, size_t len, char *why,
		     size_t whycap)
{
	struct pb_ibv_context *ctx = open_named(v, dev);
	struct pb_ibv_pd *pd = NULL;
	struct pb_ibv_mr *mr = NULL;
	int rc = GC_ERROR;

	if (!ctx) {
		pb_fmt(why, whycap, "cannot open RDMA device %s", dev);
		return GC_ENOTFOUND;
	}
	pd = v->alloc_pd(ctx);
	if (!pd) {
		pb_fmt(why, whycap, "ibv_alloc_pd on %s failed: %s", dev, strerror(errno));
		goto out;
	}
	errno = 0;
	mr = v->reg_mr(pd, addr, len,
		       PB_IBV_ACCESS_LOCAL_WRITE | PB_IBV_ACCESS_REMOTE_WRITE |
			       PB_IBV_ACCESS_REMOTE_READ);
	if (!mr) {
		pb_fmt(why, whycap, "ibv_reg_mr of %zu bytes of GPU memory on %s failed: %s", len,
		       dev, strerror(errno ? errno : EFAULT));
		goto out;
	}
	pb_fmt(why, whycap, "registered %zu bytes of GPU memory with %s (lkey 0x%x)", len, dev,
	       mr->lkey);
	rc = 0;
out:
	if (mr)
		v->dereg_mr(mr);
	if (pd)
		v->dealloc_pd(pd);
	v->close_device(ctx);
	return rc;
}

/* ---- the RC RDMA-write test ---- */

#define TEST_DEPTH   64
#define LAT_ITERS    1000
#define LAT_BYTES    64
#define RETRY_CNT    7
/*
 * A completion is waited for 5 s beyond the time the transport itself takes
 * to give up on an unanswered write: RETRY_CNT + 1 local ACK timeouts of
 * 4.096 us * 2^qp_timeout (IBTA's definition of the QP's Timeout field).
 */
static uint64_t poll_timeout_ns(int qp_timeout)
{
	return 5000000000ull + (uint64_t)(RETRY_CNT + 1) * (4096ull << qp_timeout);
}

struct rc {
	struct pb_verbs *v;
	struct pb_ibv_context *ctx;
	struct pb_ibv_pd *pd;
	struct pb_ibv_cq *cq;
	struct pb_ibv_qp *qp;
	struct pb_ibv_mr *mr;
	void *buf;
	size_t size;
	int port, gid_index, mtu, qp_timeout;
	union pb_ibv_gid gid;
	uint16_t lid;
	bool ethernet;
};

static void rc_free(struct rc *c)
{
	if (c->qp)
		c->v->destroy_qp(c->qp);
	if (c->mr)
		c->v->dereg_mr(c->mr);
	if (c->cq)
		c->v->destroy_cq(c->cq);
	if (c->pd)
		c->v->dealloc_pd(c->pd);
	if (c->ctx)
		c->v->close_device(c->ctx);
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

static int fail(struct gc_probe_rdma_test *t, const char *what)
{
	pb_fmt(t->reason, sizeof(t->reason), "%s: %s", what, errno ? strerror(errno) : "failed");
	t->status = GC_PROBE_FAILED;
	return -1;
}

static int rc_setup(struct rc *c, struct gc_probe_rdma_test *t, const struct gc_probe_options *o)
{
	struct pb_ibv_qp_init_attr ia;
	struct pb_ibv_qp_attr qa;
	struct pb_ibv_port_attr pa;

	c->ctx = open_named(c->v, t->device);
	if (!c->ctx)
		return fail(t, "ibv_open_device");
	errno = 0;
	if (query_port(c->v, c->ctx, c->port, &pa) != 0)
		return fail(t, "ibv_query_port");
	if (pa.state != PB_IBV_PORT_ACTIVE) {
		pb_fmt(t->reason, sizeof(t->reason), "%s port %d is not active (state %d)",
		       t->device, c->port, pa.state);
		t->status = GC_PROBE_FAILED;
		return -1;
	}
	c->mtu = pa.active_mtu;
	c->lid = pa.lid;
	c->ethernet = pa.link_layer == PB_IBV_LINK_LAYER_ETHERNET;
	memset(&c->gid, 0, sizeof(c->gid));
	if (c->gid_index >= 0 && c->v->query_gid(c->ctx, (uint8_t)c->port, c->gid_index, &c->gid) != 0)
		return fail(t, "ibv_query_gid");
	if (c->ethernet && c->gid_index < 0) {
		pb_fmt(t->reason, sizeof(t->reason),
		       "%s port %d is RoCE but has no RoCE v2 GID (no IP address on its netdev?)",
		       t->device, c->port);
		t->status = GC_PROBE_FAILED;
		return -1;
	}
	c->pd = c->v->alloc_pd(c->ctx);
	if (!c->pd)
		return fail(t, "ibv_alloc_pd");
	c->size = (size_t)o->rdma_msg_bytes;
	if (c->size < LAT_BYTES)
		c->size = LAT_BYTES;
	c->buf = aligned_alloc(4096, (c->size + 4095) & ~(size_t)4095);
	if (!c->buf)
		return fail(t, "aligned_alloc");
	memset(c->buf, 0, c->size);
	c->mr = c->v->reg_mr(c->pd, c->buf, c->size,
			     PB_IBV_ACCESS_LOCAL_WRITE | PB_IBV_ACCESS_REMOTE_WRITE |
				     PB_IBV_ACCESS_REMOTE_READ);
	if (!c->mr)
		return fail(t, "ibv_reg_mr");
	c->cq = c->v->create_cq(c->ctx, TEST_DEPTH * 2, NULL, NULL, 0);
	if (!c->cq)
		return fail(t, "ibv_create_cq");
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = c->cq;
	ia.recv_cq = c->cq;
	ia.cap.max_send_wr = TEST_DEPTH;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.qp_type = PB_IBV_QPT_RC;
	ia.sq_sig_all = 0;
	c->qp = c->v->create_qp(c->pd, &ia);
	if (!c->qp)
		return fail(t, "ibv_create_qp");
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = PB_IBV_QPS_INIT;
	qa.pkey_index = 0;
	qa.port_num = (uint8_t)c->port;
	qa.qp_access_flags = PB_IBV_ACCESS_LOCAL_WRITE | PB_IBV_ACCESS_REMOTE_WRITE |
			     PB_IBV_ACCESS_REMOTE_READ;
	errno = 0;
	if (c->v->modify_qp(c->qp, &qa,
			    PB_IBV_QP_STATE | PB_IBV_QP_PKEY_INDEX | PB_IBV_QP_PORT |
				    PB_IBV_QP_ACCESS_FLAGS) != 0)
		return fail(t, "ibv_modify_qp(INIT)");
	return 0;
}

static int rc_connect(struct rc *c, struct gc_probe_rdma_test *t, const struct gc_probe_qpinfo *me,
		      const struct gc_probe_qpinfo *peer, int tclass)
{
	struct pb_ibv_qp_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = PB_IBV_QPS_RTR;
	qa.path_mtu = c->mtu < peer->mtu ? c->mtu : peer->mtu;
	qa.dest_qp_num = peer->qpn;
	qa.rq_psn = peer->psn;
	qa.max_dest_rd_atomic = 1;
	qa.min_rnr_timer = 12;
	qa.ah_attr.dlid = peer->lid;
	qa.ah_attr.sl = 0;
	qa.ah_attr.src_path_bits = 0;
	qa.ah_attr.port_num = (uint8_t)c->port;
	if (c->ethernet || c->gid_index >= 0) {
		qa.ah_attr.is_global = 1;
		memcpy(qa.ah_attr.grh.dgid.raw, peer->gid, 16);
		qa.ah_attr.grh.sgid_index = (uint8_t)(c->gid_index < 0 ? 0 : c->gid_index);
		qa.ah_attr.grh.hop_limit = 64;
		qa.ah_attr.grh.traffic_class = (uint8_t)tclass;
	}
	errno = 0;
	if (c->v->modify_qp(c->qp, &qa,
			    PB_IBV_QP_STATE | PB_IBV_QP_AV | PB_IBV_QP_PATH_MTU |
				    PB_IBV_QP_DEST_QPN | PB_IBV_QP_RQ_PSN |
				    PB_IBV_QP_MAX_DEST_RD_ATOMIC | PB_IBV_QP_MIN_RNR_TIMER) != 0)
		return fail(t, "ibv_modify_qp(RTR)");
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = PB_IBV_QPS_RTS;
	qa.timeout = (uint8_t)c->qp_timeout;
	qa.retry_cnt = RETRY_CNT;
	qa.rnr_retry = 7;
	qa.sq_psn = me->psn;
	qa.max_rd_atomic = 1;
	errno = 0;
	if (c->v->modify_qp(c->qp, &qa,
			    PB_IBV_QP_STATE | PB_IBV_QP_TIMEOUT | PB_IBV_QP_RETRY_CNT |
				    PB_IBV_QP_RNR_RETRY | PB_IBV_QP_SQ_PSN |
				    PB_IBV_QP_MAX_QP_RD_ATOMIC) != 0)
		return fail(t, "ibv_modify_qp(RTS)");
	return 0;
}

static int post_write(struct rc *c, const struct gc_probe_qpinfo *peer, size_t len, uint64_t id)
{
	struct pb_ibv_sge sge;
	struct pb_ibv_send_wr wr, *bad = NULL;

	sge.addr = (uintptr_t)c->buf;
	sge.length = (uint32_t)len;
	sge.lkey = c->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = PB_IBV_WR_RDMA_WRITE;
	wr.send_flags = PB_IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = peer->addr;
	wr.wr.rdma.rkey = peer->rkey;
	/* ibv_post_send() is static inline in verbs.h: the same call through ops */
	return c->qp->context->ops.post_send(c->qp, &wr, &bad);
}

/*
 * A work completion's status by its name in rdma-core's <infiniband/verbs.h>
 * (enum ibv_wc_status; test_probe_verbs_abi holds every value to the
 * header), so an operator can look it up; NULL past the known ones.
 */
const char *pb_wc_status_name(int status)
{
	static const char *const names[] = {
		"IBV_WC_SUCCESS",	     "IBV_WC_LOC_LEN_ERR",	 "IBV_WC_LOC_QP_OP_ERR",
		"IBV_WC_LOC_EEC_OP_ERR",     "IBV_WC_LOC_PROT_ERR",	 "IBV_WC_WR_FLUSH_ERR",
		"IBV_WC_MW_BIND_ERR",	     "IBV_WC_BAD_RESP_ERR",	 "IBV_WC_LOC_ACCESS_ERR",
		"IBV_WC_REM_INV_REQ_ERR",    "IBV_WC_REM_ACCESS_ERR",	 "IBV_WC_REM_OP_ERR",
		"IBV_WC_RETRY_EXC_ERR",	     "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
		"IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR",	 "IBV_WC_INV_EECN_ERR",
		"IBV_WC_INV_EEC_STATE_ERR",  "IBV_WC_FATAL_ERR",	 "IBV_WC_RESP_TIMEOUT_ERR",
		"IBV_WC_GENERAL_ERR",	     "IBV_WC_TM_ERR",		 "IBV_WC_TM_RNDV_INCOMPLETE",
	};

	return status >= 0 && (size_t)status < sizeof(names) / sizeof(names[0]) ? names[status]
										 : NULL;
}

/* What a failed RDMA write's status most often means, in our words. */
static const char *wc_status_hint(int status)
{
	switch (status) {
	case 9: /* IBV_WC_REM_INV_REQ_ERR */
		return ": the peer's responder rejected a request (length, opcode sequence or a "
		       "retransmission it could not take)";
	case 10: /* IBV_WC_REM_ACCESS_ERR */
		return ": the peer refused the write (rkey or address outside its registration)";
	case 12: /* IBV_WC_RETRY_EXC_ERR */
		return ": retry exceeded, peer unreachable over RDMA (GID/ToS/VLAN/PFC?)";
	case 13: /* IBV_WC_RNR_RETRY_EXC_ERR */
		return ": the peer was not ready to receive (RNR) on every retry";
	default:
		return "";
	}
}

/* Poll until `want` completions arrived; 0, or -1 with reason set. */
static int wait_cqes(struct rc *c, struct gc_probe_rdma_test *t, int want)
{
	struct pb_ibv_wc wc[16];
	uint64_t wait = poll_timeout_ns(c->qp_timeout), deadline = pb_now_ns() + wait;
	int got = 0, i, n;

	while (got < want) {
		n = c->cq->context->ops.poll_cq(c->cq, want - got < 16 ? want - got : 16, wc);
		if (n < 0) {
			pb_fmt(t->reason, sizeof(t->reason), "ibv_poll_cq failed (%d)", n);
			return -1;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].status != PB_IBV_WC_SUCCESS) {
				const char *name = pb_wc_status_name((int)wc[i].status);

				pb_fmt(t->reason, sizeof(t->reason),
				       "RDMA write completed with status %d (%s, vendor error 0x%x)%s",
				       wc[i].status, name ? name : "unknown", wc[i].vendor_err,
				       wc_status_hint((int)wc[i].status));
				return -1;
			}
		}
		got += n;
		if (n == 0 && pb_now_ns() > deadline) {
			pb_fmt(t->reason, sizeof(t->reason),
			       "no RDMA completion within %.1f s (%d of %d)", (double)wait / 1e9,
			       got, want);
			return -1;
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint8_t pattern(uint32_t psn, size_t i)
{
	return (uint8_t)((psn + i * 131u) & 0xff);
}

static int run_client(struct rc *c, struct gc_probe_rdma_test *t, const struct gc_probe_qpinfo *me,
		      const struct gc_probe_qpinfo *peer, int iters)
{
	uint64_t *lat, t0, t1;
	size_t msg = c->size < peer->size ? c->size : (size_t)peer->size, i;
	int k, posted = 0, done = 0;

	for (i = 0; i < msg; i++)
		((uint8_t *)c->buf)[i] = pattern(me->psn, i);
	lat = calloc(LAT_ITERS, sizeof(*lat));
	if (!lat)
		abort();
	for (k = 0; k < LAT_ITERS; k++) {
		t0 = pb_now_ns();
		if (post_write(c, peer, LAT_BYTES, (uint64_t)k) != 0) {
			free(lat);
			return fail(t, "ibv_post_send");
		}
		if (wait_cqes(c, t, 1) != 0) {
			free(lat);
			t->status = GC_PROBE_FAILED;
			return -1;
		}
		lat[k] = pb_now_ns() - t0;
	}
	qsort(lat, LAT_ITERS, sizeof(*lat), cmp_u64);
	t->lat_us = (double)lat[LAT_ITERS / 2] / 1000.0;
	free(lat);

	t0 = pb_now_ns();
	while (done < iters) {
		while (posted < iters && posted - done < TEST_DEPTH) {
			if (post_write(c, peer, msg, (uint64_t)posted) != 0)
				return fail(t, "ibv_post_send");
			posted++;
		}
		if (wait_cqes(c, t, 1) != 0) {
			t->status = GC_PROBE_FAILED;
			return -1;
		}
		done++;
	}
	t1 = pb_now_ns();
	t->msg_bytes = msg;
	t->iters = iters;
	t->bw_gbs = (double)msg * iters / (double)(t1 - t0);
	return 0;
}

/* The test's device and port: named, or the first active one; 0, or -1
 * with t's status and reason set. */
static int choose_port(struct gc_probe_rdma_test *t, const struct gc_probe_rdma *r,
		       const struct gc_probe_options *o)
{
	for (int i = 0; i < r->ndev && !t->device[0]; i++) {
		const struct gc_probe_rdma_dev *d = &r->devs[i];
		if (o->rdma_dev && strcmp(o->rdma_dev, d->name) != 0)
			continue;
		for (int j = 0; j < d->nports; j++) {
			const struct gc_probe_port *p = &d->ports[j];
			if (o->rdma_ib_port ? p->num != o->rdma_ib_port
					    : p->state_num != PB_IBV_PORT_ACTIVE)
				continue;
			pb_copy(t->device, sizeof(t->device), d->name, strlen(d->name));
			t->port = p->num;
			/* RoCE needs a GID (GRH); InfiniBand without one routes by LID */
			t->gid_index = o->rdma_gid_index >= 0 ? o->rdma_gid_index : p->roce_v2_index;
			break;
		}
	}
	if (r->ndev == 0) {
		t->status = GC_PROBE_ABSENT;
		pb_fmt(t->reason, sizeof(t->reason), "no RDMA device");
		return -1;
	}
	if (!t->device[0]) {
		t->status = GC_PROBE_FAILED;
		pb_fmt(t->reason, sizeof(t->reason), "no active port%s%s", o->rdma_dev ? " on " : "",
		       o->rdma_dev ? o->rdma_dev : "");
		return -1;
	}
	return 0;
}

/* The server's half once both QPs are ready: wait for the client's DONE,
 * check every byte it wrote and answer; 0 with t's status set, or -1 on a
 * side-channel error (in err). */
static int serve(struct rc *c, struct gc_probe_rdma_test *t, const struct gc_probe_qpinfo *peer,
		 int fd, int tmo, struct gc_error *err)
{
	char line[64];
	size_t k, n;
	bool good = true;

	/* the client runs the test; wait for DONE (or an abort) */
	if (gc_probe_line_recv(line, sizeof(line), fd, tmo + 120000, err) < 0)
		return -1;
	if (strcmp(line, "GCPROBE-DONE\n") != 0) {
		t->status = GC_PROBE_FAILED;
		pb_fmt(t->reason, sizeof(t->reason), "client aborted the test");
		return 0;
	}
	n = c->size < peer->size ? c->size : (size_t)peer->size;
	for (k = 0; k < n && good; k++)
		good = ((uint8_t *)c->buf)[k] == pattern(peer->psn, k);
	gc_probe_line_send(fd, good ? "GCPROBE-OK\n" : "GCPROBE-BADDATA\n", err);
	t->msg_bytes = n;
	if (!good) {
		t->status = GC_PROBE_FAILED;
		pb_fmt(t->reason, sizeof(t->reason), "data written by the peer differs at byte %zu",
		       k - 1);
		return 0;
	}
	t->status = GC_PROBE_OK;
	pb_fmt(t->reason, sizeof(t->reason), "peer wrote %zu bytes correctly", n);
	return 0;
}

void pb_rdma_test(struct gc_probe_rdma_test *t, const struct gc_probe_rdma *r,
		  const struct gc_probe_options *o)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_probe_qpinfo me, peer;
	struct rc c;
	char line[64];
	int lfd = -1, fd = -1, tmo = o->rdma_timeout_s * 1000;

	memset(&c, 0, sizeof(c));
	pb_copy(t->role, sizeof(t->role), o->rdma_server ? "server" : "client", 6);
	if (o->rdma_peer)
		pb_copy(t->peer, sizeof(t->peer), o->rdma_peer, strlen(o->rdma_peer));
	t->gid_index = -1;
	if (choose_port(t, r, o) != 0)
		return;
	if (!r->verbs_loaded || pb_verbs_load(&c.v, t->reason, sizeof(t->reason)) != 0) {
		t->status = GC_PROBE_ABSENT;
		if (!t->reason[0])
			pb_fmt(t->reason, sizeof(t->reason), "%s", r->verbs_reason);
		return;
	}
	c.port = t->port;
	c.gid_index = t->gid_index;
	c.qp_timeout = o->rdma_qp_timeout;
	if (rc_setup(&c, t, o) != 0)
		goto out;

	memset(&me, 0, sizeof(me));
	me.qpn = c.qp->qp_num;
	me.psn = (uint32_t)(pb_now_ns() ^ (uint64_t)getpid()) & 0xffffff;
	me.lid = c.lid;
	me.mtu = c.mtu;
	memcpy(me.gid, c.gid.raw, 16);
	me.rkey = c.mr->rkey;
	me.addr = (uintptr_t)c.buf;
	me.size = c.size;

	if (o->rdma_server) {
		if (gc_probe_tcp_listen(&lfd, o->rdma_tcp_port, NULL, &err) != 0 ||
		    gc_probe_tcp_accept(&fd, lfd, tmo, &err) != 0)
			goto neterr;
	} else if (gc_probe_tcp_connect(&fd, o->rdma_peer, o->rdma_tcp_port, tmo, &err) != 0) {
		goto neterr;
	}
	if (gc_probe_qp_exchange(&peer, fd, &me, tmo, &err) != 0)
		goto neterr;
	if (rc_connect(&c, t, &me, &peer, o->rdma_tclass) != 0)
		goto out;
	if (gc_probe_line_send(fd, "GCPROBE-READY\n", &err) != 0 ||
	    gc_probe_line_recv(line, sizeof(line), fd, tmo, &err) < 0)
		goto neterr;
	if (strcmp(line, "GCPROBE-READY\n") != 0) {
		gc_error_set(&err, GC_EINVAL, "peer did not get ready");
		goto neterr;
	}
	if (o->rdma_server) {
		if (serve(&c, t, &peer, fd, tmo, &err) != 0)
			goto neterr;
		goto out;
	}
	if (run_client(&c, t, &me, &peer, o->rdma_iters) != 0) {
		gc_probe_line_send(fd, "GCPROBE-ABORT\n", &err);
		goto out;
	}
	if (gc_probe_line_send(fd, "GCPROBE-DONE\n", &err) != 0 ||
	    gc_probe_line_recv(line, sizeof(line), fd, tmo, &err) < 0)
		goto neterr;
	if (strcmp(line, "GCPROBE-OK\n") != 0) {
		t->status = GC_PROBE_FAILED;
		pb_fmt(t->reason, sizeof(t->reason), "server found the written data wrong");
		goto out;
	}
	t->status = GC_PROBE_OK;
	goto out;
neterr:
	t->status = GC_PROBE_FAILED;
	pb_fmt(t->reason, sizeof(t->reason), "%s", err.msg);
out:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	if (c.v) {
		struct pb_verbs *v = c.v;
		rc_free(&c);
		pb_verbs_unload(v);
	}
}
