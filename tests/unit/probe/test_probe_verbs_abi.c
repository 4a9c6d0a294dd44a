/*
 * test_probe_verbs_abi.c - the probe's own verbs declarations (verbs_abi.h)
 * against rdma-core's <infiniband/verbs.h>: every size and offset the probe
 * relies on, checked at compile time.  Built only where the header exists.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <infiniband/verbs.h>

#include "probe_int.h"
#include "verbs_abi.h"

#define SAME_SIZE(a, b) _Static_assert(sizeof(struct a) == sizeof(struct b), #a " size")
#define SAME_OFF(a, b, f) \
	_Static_assert(offsetof(struct a, f) == offsetof(struct b, f), #a "." #f " offset")

_Static_assert(sizeof(union pb_ibv_gid) == sizeof(union ibv_gid), "gid size");
SAME_SIZE(pb_ibv_device_attr, ibv_device_attr);
SAME_OFF(pb_ibv_device_attr, ibv_device_attr, fw_ver);
SAME_OFF(pb_ibv_device_attr, ibv_device_attr, phys_port_cnt);
SAME_SIZE(pb_ibv_port_attr, ibv_port_attr);
SAME_OFF(pb_ibv_port_attr, ibv_port_attr, state);
SAME_OFF(pb_ibv_port_attr, ibv_port_attr, active_mtu);
SAME_OFF(pb_ibv_port_attr, ibv_port_attr, lid);
SAME_OFF(pb_ibv_port_attr, ibv_port_attr, link_layer);
SAME_OFF(pb_ibv_port_attr, ibv_port_attr, port_cap_flags2);
SAME_OFF(pb_ibv_context, ibv_context, device);
SAME_OFF(pb_ibv_context, ibv_context, ops);
SAME_OFF(pb_ibv_context, ibv_context, cmd_fd);
SAME_OFF(pb_ibv_context, ibv_context, num_comp_vectors);
SAME_SIZE(pb_ibv_context_ops, ibv_context_ops);
SAME_OFF(pb_ibv_context_ops, ibv_context_ops, poll_cq);
SAME_OFF(pb_ibv_context_ops, ibv_context_ops, post_send);
SAME_OFF(pb_ibv_cq, ibv_cq, context);
SAME_OFF(pb_ibv_qp, ibv_qp, context);
SAME_OFF(pb_ibv_qp, ibv_qp, pd);
SAME_OFF(pb_ibv_qp, ibv_qp, handle);
SAME_OFF(pb_ibv_qp, ibv_qp, qp_num);
SAME_OFF(pb_ibv_qp, ibv_qp, qp_type);
SAME_SIZE(pb_ibv_mr, ibv_mr);
SAME_OFF(pb_ibv_mr, ibv_mr, addr);
SAME_OFF(pb_ibv_mr, ibv_mr, lkey);
SAME_OFF(pb_ibv_mr, ibv_mr, rkey);
SAME_SIZE(pb_ibv_qp_cap, ibv_qp_cap);
SAME_SIZE(pb_ibv_qp_init_attr, ibv_qp_init_attr);
SAME_OFF(pb_ibv_qp_init_attr, ibv_qp_init_attr, cap);
SAME_OFF(pb_ibv_qp_init_attr, ibv_qp_init_attr, qp_type);
SAME_OFF(pb_ibv_qp_init_attr, ibv_qp_init_attr, sq_sig_all);
SAME_SIZE(pb_ibv_global_route, ibv_global_route);
SAME_OFF(pb_ibv_global_route, ibv_global_route, sgid_index);
SAME_OFF(pb_ibv_global_route, ibv_global_route, traffic_class);
SAME_SIZE(pb_ibv_ah_attr, ibv_ah_attr);
SAME_OFF(pb_ibv_ah_attr, ibv_ah_attr, dlid);
SAME_OFF(pb_ibv_ah_attr, ibv_ah_attr, is_global);
SAME_OFF(pb_ibv_ah_attr, ibv_ah_attr, port_num);
SAME_SIZE(pb_ibv_qp_attr, ibv_qp_attr);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, path_mtu);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, rq_psn);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, sq_psn);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, dest_qp_num);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, qp_access_flags);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, ah_attr);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, pkey_index);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, max_rd_atomic);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, max_dest_rd_atomic);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, min_rnr_timer);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, port_num);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, timeout);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, retry_cnt);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, rnr_retry);
SAME_OFF(pb_ibv_qp_attr, ibv_qp_attr, rate_limit);
SAME_SIZE(pb_ibv_sge, ibv_sge);
SAME_SIZE(pb_ibv_send_wr, ibv_send_wr);
SAME_OFF(pb_ibv_send_wr, ibv_send_wr, sg_list);
SAME_OFF(pb_ibv_send_wr, ibv_send_wr, num_sge);
SAME_OFF(pb_ibv_send_wr, ibv_send_wr, opcode);
SAME_OFF(pb_ibv_send_wr, ibv_send_wr, send_flags);
SAME_OFF(pb_ibv_send_wr, ibv_send_wr, imm_data);
SAME_OFF(pb_ibv_send_wr, ibv_send_wr, wr.rdma.remote_addr);
SAME_OFF(pb_ibv_send_wr, ibv_send_wr, wr.rdma.rkey);
SAME_SIZE(pb_ibv_wc, ibv_wc);
SAME_OFF(pb_ibv_wc, ibv_wc, status);
SAME_OFF(pb_ibv_wc, ibv_wc, vendor_err);
SAME_OFF(pb_ibv_wc, ibv_wc, qp_num);

_Static_assert(PB_IBV_PORT_ACTIVE == IBV_PORT_ACTIVE, "");
_Static_assert(PB_IBV_LINK_LAYER_INFINIBAND == IBV_LINK_LAYER_INFINIBAND, "");
_Static_assert(PB_IBV_LINK_LAYER_ETHERNET == IBV_LINK_LAYER_ETHERNET, "");
_Static_assert(PB_IBV_QPT_RC == IBV_QPT_RC, "");
_Static_assert(PB_IBV_QPS_INIT == IBV_QPS_INIT, "");
_Static_assert(PB_IBV_QPS_RTR == IBV_QPS_RTR, "");
_Static_assert(PB_IBV_QPS_RTS == IBV_QPS_RTS, "");
_Static_assert(PB_IBV_WR_RDMA_WRITE == IBV_WR_RDMA_WRITE, "");
_Static_assert(PB_IBV_SEND_SIGNALED == IBV_SEND_SIGNALED, "");
_Static_assert(PB_IBV_WC_SUCCESS == IBV_WC_SUCCESS, "");
_Static_assert(PB_IBV_ACCESS_LOCAL_WRITE == IBV_ACCESS_LOCAL_WRITE, "");
_Static_assert(PB_IBV_ACCESS_REMOTE_WRITE == IBV_ACCESS_REMOTE_WRITE, "");
_Static_assert(PB_IBV_ACCESS_REMOTE_READ == IBV_ACCESS_REMOTE_READ, "");
_Static_assert(PB_IBV_QP_STATE == IBV_QP_STATE, "");
_Static_assert(PB_IBV_QP_ACCESS_FLAGS == IBV_QP_ACCESS_FLAGS, "");
_Static_assert(PB_IBV_QP_PKEY_INDEX == IBV_QP_PKEY_INDEX, "");
_Static_assert(PB_IBV_QP_PORT == IBV_QP_PORT, "");
_Static_assert(PB_IBV_QP_AV == IBV_QP_AV, "");
_Static_assert(PB_IBV_QP_PATH_MTU == IBV_QP_PATH_MTU, "");
_Static_assert(PB_IBV_QP_TIMEOUT == IBV_QP_TIMEOUT, "");
_Static_assert(PB_IBV_QP_RETRY_CNT == IBV_QP_RETRY_CNT, "");
_Static_assert(PB_IBV_QP_RNR_RETRY == IBV_QP_RNR_RETRY, "");
_Static_assert(PB_IBV_QP_RQ_PSN == IBV_QP_RQ_PSN, "");
_Static_assert(PB_IBV_QP_MAX_QP_RD_ATOMIC == IBV_QP_MAX_QP_RD_ATOMIC, "");
_Static_assert(PB_IBV_QP_MIN_RNR_TIMER == IBV_QP_MIN_RNR_TIMER, "");
_Static_assert(PB_IBV_QP_SQ_PSN == IBV_QP_SQ_PSN, "");
_Static_assert(PB_IBV_QP_MAX_DEST_RD_ATOMIC == IBV_QP_MAX_DEST_RD_ATOMIC, "");
_Static_assert(PB_IBV_QP_DEST_QPN == IBV_QP_DEST_QPN, "");
_Static_assert(IBV_MTU_4096 == 5 && IBV_MTU_256 == 1, "mtu enum used by mtu_bytes()");

/* The run-time half: the library (if installed) has every symbol we dlopen. */
static void test_layouts_compiled(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct pb_ibv_wc), sizeof(struct ibv_wc));
}

/* The names a failed completion is reported by are the header's, value for value. */
static void test_wc_status_names_are_the_headers(void **state)
{
	(void)state;
#define NAMED(e) assert_string_equal(pb_wc_status_name(e), #e)
	NAMED(IBV_WC_SUCCESS);
	NAMED(IBV_WC_LOC_LEN_ERR);
	NAMED(IBV_WC_LOC_QP_OP_ERR);
	NAMED(IBV_WC_LOC_EEC_OP_ERR);
	NAMED(IBV_WC_LOC_PROT_ERR);
	NAMED(IBV_WC_WR_FLUSH_ERR);
	NAMED(IBV_WC_MW_BIND_ERR);
	NAMED(IBV_WC_BAD_RESP_ERR);
	NAMED(IBV_WC_LOC_ACCESS_ERR);
	NAMED(IBV_WC_REM_INV_REQ_ERR);
	NAMED(IBV_WC_REM_ACCESS_ERR);
	NAMED(IBV_WC_REM_OP_ERR);
	NAMED(IBV_WC_RETRY_EXC_ERR);
	NAMED(IBV_WC_RNR_RETRY_EXC_ERR);
	NAMED(IBV_WC_LOC_RDD_VIOL_ERR);
	NAMED(IBV_WC_REM_INV_RD_REQ_ERR);
	NAMED(IBV_WC_REM_ABORT_ERR);
	NAMED(IBV_WC_INV_EECN_ERR);
	NAMED(IBV_WC_INV_EEC_STATE_ERR);
	NAMED(IBV_WC_FATAL_ERR);
	NAMED(IBV_WC_RESP_TIMEOUT_ERR);
	NAMED(IBV_WC_GENERAL_ERR);
	NAMED(IBV_WC_TM_ERR);
	NAMED(IBV_WC_TM_RNDV_INCOMPLETE);
#undef NAMED
	assert_null(pb_wc_status_name(IBV_WC_TM_RNDV_INCOMPLETE + 1));
	assert_null(pb_wc_status_name(-1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layouts_compiled),
		cmocka_unit_test(test_wc_status_names_are_the_headers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
