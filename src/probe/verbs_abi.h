/*
 * verbs_abi.h - the slice of the rdma-core libibverbs ABI the probe uses,
 * declared here so the probe builds without <infiniband/verbs.h> and loads
 * libibverbs.so.1 with dlopen() at run time.
 *
 * Layouts follow rdma-core's verbs.h (checked against rdma-core 44 and
 * stable since libibverbs 1.1 / IBVERBS_1.1): every struct the probe
 * allocates or passes by pointer for the library to fill is declared in
 * full; the library-owned objects (context, qp, cq) only up to the fields
 * read.  tests/unit/probe/test_verbs_abi.c static-asserts sizeof/offsetof of
 * each against the real header when <infiniband/verbs.h> exists.
 *
 * ibv_post_send() and ibv_poll_cq() are static inline in verbs.h: they call
 * through qp->context->ops.post_send and cq->context->ops.poll_cq, so we do
 * the same through pb_ibv_context.ops (slots 25 and 11 of ibv_context_ops).
 * ibv_query_port() is a macro in verbs.h: when the provider has no extended
 * query_port it memsets the attribute and calls the exported ibv_query_port
 * symbol, which fills the compat prefix (everything but port_cap_flags2);
 * we do exactly that.  ibv_reg_mr() is a macro that calls the exported
 * ibv_reg_mr symbol for access flags without IBV_ACCESS_OPTIONAL_RANGE,
 * which is all we use.
 */
#ifndef GC_PROBE_VERBS_ABI_H
#define GC_PROBE_VERBS_ABI_H

#include <stdint.h>
#include <stddef.h>

union pb_ibv_gid {
	uint8_t raw[16];
	struct {
		uint64_t subnet_prefix; /* big endian */
		uint64_t interface_id;
	} global;
};

struct pb_ibv_device; /* opaque */
struct pb_ibv_pd;     /* opaque: we only pass it back */

struct pb_ibv_device_attr {
	char fw_ver[64];
	uint64_t node_guid;
	uint64_t sys_image_guid;
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	int max_qp;
	int max_qp_wr;
	unsigned int device_cap_flags;
	int max_sge;
	int max_sge_rd;
	int max_cq;
	int max_cqe;
	int max_mr;
	int max_pd;
	int max_qp_rd_atom;
	int max_ee_rd_atom;
	int max_res_rd_atom;
	int max_qp_init_rd_atom;
	int max_ee_init_rd_atom;
	int atomic_cap; /* enum */
	int max_ee;
	int max_rdd;
	int max_mw;
	int max_raw_ipv6_qp;
	int max_raw_ethy_qp;
	int max_mcast_grp;
	int max_mcast_qp_attach;
	int max_total_mcast_qp_attach;
	int max_ah;
	int max_fmr;
	int max_map_per_fmr;
	int max_srq;
	int max_srq_wr;
	int max_srq_sge;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
};

struct pb_ibv_port_attr {
	int state;      /* enum ibv_port_state: 4 = ACTIVE */
	int max_mtu;    /* enum ibv_mtu: 1=256 .. 5=4096 */
	int active_mtu;
	int gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer; /* 1 = InfiniBand, 2 = Ethernet */
	uint8_t flags;
	uint16_t port_cap_flags2;
};

struct pb_ibv_cq;
struct pb_ibv_qp;
struct pb_ibv_send_wr;
struct pb_ibv_wc;

/* struct ibv_context_ops: 32 pointer slots; we call two of them. */
struct pb_ibv_context_ops {
	void *slots_0_10[11];
	int (*poll_cq)(struct pb_ibv_cq *cq, int num_entries, struct pb_ibv_wc *wc); /* 11 */
	void *slots_12_24[13];
	int (*post_send)(struct pb_ibv_qp *qp, struct pb_ibv_send_wr *wr,
			 struct pb_ibv_send_wr **bad_wr); /* 25 */
	void *slots_26_31[6];
};

/* Prefix of struct ibv_context (owned by the library). */
struct pb_ibv_context {
	struct pb_ibv_device *device;
	struct pb_ibv_context_ops ops;
	int cmd_fd;
	int async_fd;
	int num_comp_vectors;
};

/* Prefix of struct ibv_cq. */
struct pb_ibv_cq {
	struct pb_ibv_context *context;
};

/* Prefix of struct ibv_qp, up to qp_type. */
struct pb_ibv_qp {
	struct pb_ibv_context *context;
	void *qp_context;
	struct pb_ibv_pd *pd;
	struct pb_ibv_cq *send_cq;
	struct pb_ibv_cq *recv_cq;
	void *srq;
	uint32_t handle;
	uint32_t qp_num;
	int state;
	int qp_type;
};

struct pb_ibv_mr {
	struct pb_ibv_context *context;
	struct pb_ibv_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
};

struct pb_ibv_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

struct pb_ibv_qp_init_attr {
	void *qp_context;
	struct pb_ibv_cq *send_cq;
	struct pb_ibv_cq *recv_cq;
	void *srq;
	struct pb_ibv_qp_cap cap;
	int qp_type; /* IBV_QPT_RC = 2 */
	int sq_sig_all;
};

struct pb_ibv_global_route {
	union pb_ibv_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

struct pb_ibv_ah_attr {
	struct pb_ibv_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
};

struct pb_ibv_qp_attr {
	int qp_state;
	int cur_qp_state;
	int path_mtu;
	int path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned int qp_access_flags;
	struct pb_ibv_qp_cap cap;
	struct pb_ibv_ah_attr ah_attr;
	struct pb_ibv_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint32_t rate_limit;
};

struct pb_ibv_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct pb_ibv_mw_bind_info {
	void *mr;
	uint64_t addr;
	uint64_t length;
	unsigned int mw_access_flags;
};

struct pb_ibv_send_wr {
	uint64_t wr_id;
	struct pb_ibv_send_wr *next;
	struct pb_ibv_sge *sg_list;
	int num_sge;
	int opcode; /* IBV_WR_RDMA_WRITE = 0 */
	unsigned int send_flags;
	uint32_t imm_data;
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			void *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
	} wr;
	union {
		struct {
			uint32_t remote_srqn;
		} xrc;
	} qp_type;
	union {
		struct {
			void *mw;
			uint32_t rkey;
			struct pb_ibv_mw_bind_info bind_info;
		} bind_mw;
		struct {
			void *hdr;
			uint16_t hdr_sz;
			uint16_t mss;
		} tso;
	} u;
};

struct pb_ibv_wc {
	uint64_t wr_id;
	int status; /* IBV_WC_SUCCESS = 0 */
	int opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

/* enum values used (same names as verbs.h with PB_ prefix) */
#define PB_IBV_PORT_ACTIVE         4
#define PB_IBV_LINK_LAYER_INFINIBAND 1
#define PB_IBV_LINK_LAYER_ETHERNET 2
#define PB_IBV_QPT_RC              2
#define PB_IBV_QPS_INIT            1
#define PB_IBV_QPS_RTR             2
#define PB_IBV_QPS_RTS             3
#define PB_IBV_WR_RDMA_WRITE       0
#define PB_IBV_SEND_SIGNALED       (1 << 1)
#define PB_IBV_WC_SUCCESS          0
#define PB_IBV_ACCESS_LOCAL_WRITE  1
#define PB_IBV_ACCESS_REMOTE_WRITE (1 << 1)
#define PB_IBV_ACCESS_REMOTE_READ  (1 << 2)
#define PB_IBV_QP_STATE            (1 << 0)
#define PB_IBV_QP_ACCESS_FLAGS     (1 << 3)
#define PB_IBV_QP_PKEY_INDEX       (1 << 4)
#define PB_IBV_QP_PORT             (1 << 5)
#define PB_IBV_QP_AV               (1 << 7)
#define PB_IBV_QP_PATH_MTU         (1 << 8)
#define PB_IBV_QP_TIMEOUT          (1 << 9)
#define PB_IBV_QP_RETRY_CNT        (1 << 10)
#define PB_IBV_QP_RNR_RETRY        (1 << 11)
#define PB_IBV_QP_RQ_PSN           (1 << 12)
#define PB_IBV_QP_MAX_QP_RD_ATOMIC (1 << 13)
#define PB_IBV_QP_MIN_RNR_TIMER    (1 << 15)
#define PB_IBV_QP_SQ_PSN           (1 << 16)
#define PB_IBV_QP_MAX_DEST_RD_ATOMIC (1 << 17)
#define PB_IBV_QP_DEST_QPN         (1 << 20)

#endif
