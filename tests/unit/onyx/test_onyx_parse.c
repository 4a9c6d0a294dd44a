/*
 * test_onyx_parse.c - port ranges, show parsers on captured text
 * (tests/data/onyx/), the desired state of the SN2700 example, the diff
 * (exact commands) and the drift lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/onyx.h"

static char *data(const char *leaf, size_t *len)
{
	struct gc_error err = GC_ERROR_INIT;
	char *path = gc_xasprintf("%s/tests/data/onyx/%s", GC_SOURCE_DIR, leaf);
	char *text = NULL;
	size_t n = 0;

	if (gc_read_file(&text, &n, path, 1u << 20, &err) != 0)
		fail_msg("%s", err.msg);
	free(path);
	if (len)
		*len = n;
	return text;
}

static struct gc_switch_roce roce_default = {
	.mode = "dscp-lossless",
	.pool_percent = 50.0,
	.priority = 3,
	.ecn_min_kb = 150,
	.ecn_max_kb = 1500,
	.cnp_traffic_class = 6,
	.pfc = true,
	.lldp = true,
	.owned = false,
};

static void sn2700(struct gc_switch *sw, struct gc_switch_roce *r, const char *ports)
{
	memset(sw, 0, sizeof(*sw));
	*r = roce_default;
	sw->name = "sn2700";
	sw->model = "SN2700";
	sw->ports = (char *)ports;
	sw->roce = r;
}

static void assert_cmds(const struct gc_onyx_cmds *c, const char *const *want, size_t n)
{
	size_t i;

	for (i = 0; i < c->n && i < n; i++)
		assert_string_equal(c->v[i], want[i]);
	if (c->n != n) {
		for (i = 0; i < c->n; i++)
			print_message("got[%zu] %s\n", i, c->v[i]);
	}
	assert_int_equal(c->n, n);
}

static void parse_file(struct gc_onyx_state *st, const char *leaf)
{
	struct gc_error err = GC_ERROR_INIT;
	size_t len;
	char *text = data(leaf, &len);

	gc_onyx_state_init(st);
	if (gc_onyx_parse_running_config(st, text, len, &err) != 0)
		fail_msg("%s: %s", leaf, err.msg);
	free(text);
}

/* ---------------------------------------------------------------- ports */

static char *roundtrip(const char *list)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_port_id *ids;
	struct gc_buf b = GC_BUF_INIT;
	size_t n;

	assert_int_equal(gc_onyx_ports_expand(&ids, &n, list, &err), 0);
	gc_onyx_ports_compress(&b, ids, n);
	free(ids);
	return gc_buf_take(&b);
}

static void test_ports(void **state)
{
	static const char *const bad[] = {"", "1/5-1/3", "1/1-2/3", "1/1-1/1/2", "1/0", "1/1,",
					  "1/1 ", "eth1/1", "1/1-", "1/1/1-1/2/1", "1/1;reboot"};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_port_id *ids;
	size_t n, i;
	char *s;

	assert_int_equal(gc_onyx_ports_expand(&ids, &n, "1/9,1/1-1/4,1/3", &err), 0);
	assert_int_equal(n, 5);
	assert_int_equal(ids[4].port, 9);
	free(ids);
	s = roundtrip("1/1-1/32");
	assert_string_equal(s, "1/1-1/32");
	free(s);
	s = roundtrip("1/9,1/1-1/4");
	assert_string_equal(s, "1/1-1/4,1/9");
	free(s);
	s = roundtrip("1/1/1-1/1/4,1/2/1,1/3,1/4,2/5");
	assert_string_equal(s, "1/1/1-1/1/4,1/2/1,1/3-1/4,2/5");
	free(s);
	for (i = 0; i < GC_ARRAY_LEN(bad); i++) {
		gc_error_clear(&err);
		assert_int_equal(gc_onyx_ports_expand(&ids, &n, bad[i], &err), GC_EINVAL);
	}
	assert_int_equal(gc_onyx_ports_expand(&ids, &n, "1/1-1/999,2/1-2/999", &err), GC_ENOMEM);
}

/* ---------------------------------------------------------------- show version */

static void test_version(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_version v;
	size_t len;
	char *t = data("show_version.txt", &len);

	assert_int_equal(gc_onyx_parse_version(&v, t, len, &err), 0);
	assert_string_equal(v.product, "Onyx");
	assert_string_equal(v.release, "3.9.0300");
	assert_string_equal(v.model, "x86onie");
	assert_string_equal(v.summary, "X86_64 3.9.0300 2020-02-26 19:25:24 x86_64");
	free(t);

	t = data("show_version.json", &len);
	memset(&v, 0, sizeof(v));
	assert_int_equal(gc_onyx_parse_version(&v, t, len, &err), 0);
	assert_string_equal(v.product, "Onyx");
	assert_string_equal(v.release, "3.9.0300");
	assert_string_equal(v.model, "x86onie");
	free(t);

	t = data("show_version_mlnxos.txt", &len);
	assert_int_equal(gc_onyx_parse_version(&v, t, len, &err), 0);
	assert_string_equal(v.product, "MLNX-OS");
	assert_string_equal(v.release, "3.6.8130");
	free(t);

	t = data("show_version_truncated.txt", &len);
	assert_int_equal(gc_onyx_parse_version(&v, t, len, &err), GC_EINVAL);
	assert_string_equal(err.msg, "show version: no 'Product name'/'Product release' in output");
	free(t);
	gc_error_clear(&err);
	t = data("show_version_truncated.json", &len);
	assert_int_equal(gc_onyx_parse_version(&v, t, len, &err), GC_EINVAL);
	assert_string_equal(err.msg, "show version: invalid json-print output");
	free(t);
	gc_error_clear(&err);
	assert_int_equal(gc_onyx_parse_version(&v, "[1,2]", 5, &err), GC_EINVAL);

	assert_true(gc_onyx_version_cmp("3.8.2000", "3.9.0300") < 0);
	assert_true(gc_onyx_version_cmp("3.9.0300", "3.8.2000") > 0);
	assert_true(gc_onyx_version_cmp("3.8.2000", "3.8.2000") == 0);
	assert_true(gc_onyx_version_cmp("3.6.8130", "3.8.2000") < 0);
	assert_true(gc_onyx_version_cmp("3.10.1000", "3.9.0300") > 0);
	assert_true(gc_onyx_version_cmp("3.8", "3.8.2000") < 0);
}

/* ---------------------------------------------------------------- running-config */

static void test_running_config(void **state)
{
	struct gc_onyx_port_id id = {1, 7, 0};
	struct gc_onyx_state st;
	struct gc_onyx_port_state *p;
	size_t i;

	parse_file(&st, "running_config.txt");
	assert_string_equal(st.hostname, "sn2700");
	assert_string_equal(st.pool_type, "lossless");
	assert_int_equal(st.pool_percent_x100, 5000);
	assert_int_equal(st.pool_map, 1u << 3);
	assert_true(st.pfc_enabled);
	assert_int_equal(st.pfc_priorities, 1u << 3);
	assert_true(st.lldp);
	assert_string_equal(st.roce_mode, "");
	assert_int_equal(st.nports, 32);
	for (i = 0; i < st.nports; i++) {
		p = &st.ports[i];
		assert_int_equal(p->id.port, i + 1);
		assert_int_equal(p->trust, i == 6 ? GC_ONYX_TRUST_L2 : GC_ONYX_TRUST_L3);
		assert_int_equal(p->cc[3].mode, GC_ONYX_CC_ECN_ABS);
		assert_int_equal(p->cc[3].min_kb, 150);
		assert_int_equal(p->cc[3].max_kb, 1500);
		assert_int_equal(p->cc[0].mode, GC_ONYX_CC_NONE);
		assert_int_equal(p->ets_strict, 1u << 6); /* also from "1/1-1/4,1/9" */
		assert_true(p->pfc_force);
	}
	p = gc_onyx_state_port(&st, &id, false);
	assert_non_null(p);
	gc_onyx_state_free(&st);

	parse_file(&st, "running_config_default.txt");
	assert_string_equal(st.hostname, "switch-b7b218");
	assert_int_equal(st.nports, 0);
	assert_int_equal(st.pool_percent_x100, -1);
	assert_false(st.lldp);
	gc_onyx_state_free(&st);
}

static void expect_bad(const char *leaf, const char *msg)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_state st;
	size_t len;
	char *text = data(leaf, &len);

	gc_onyx_state_init(&st);
	assert_int_equal(gc_onyx_parse_running_config(&st, text, len, &err), GC_EINVAL);
	assert_string_equal(err.msg, msg);
	gc_onyx_state_free(&st);
	free(text);
}

static void test_running_config_bad(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_state st;
	static const char nul[] = "   lldp\n   hostname a\0b\n";

	expect_bad("running_config_truncated.txt",
		   "running-config is truncated (no closing 'cli default prefix-modes enable')");
	expect_bad("running_config_bad_tc.txt",
		   "running-config line 37: unexpected interface setting");
	expect_bad("running_config_bad_range.txt",
		   "running-config line 35: invalid port list '1/9-1/7'");
	gc_onyx_state_init(&st);
	assert_int_equal(gc_onyx_parse_running_config(&st, nul, sizeof(nul) - 1, &err), GC_EINVAL);
	gc_onyx_state_free(&st);
	/* a cut number does not pass as a smaller one */
	gc_error_clear(&err);
	gc_onyx_state_init(&st);
	assert_int_equal(gc_onyx_parse_running_config(
				 &st, "traffic pool roce memory percent 50.", 36, &err),
			 GC_EINVAL);
	gc_onyx_state_free(&st);
}

static void test_show_roce(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_state st;
	size_t len;
	char *t;

	gc_onyx_state_init(&st);
	t = data("show_roce.txt", &len);
	assert_int_equal(gc_onyx_parse_show_roce(&st, t, len, &err), 0);
	assert_string_equal(st.roce_mode, "lossless");
	free(t);
	t = data("show_roce_na.txt", &len);
	assert_int_equal(gc_onyx_parse_show_roce(&st, t, len, &err), 0);
	assert_string_equal(st.roce_mode, "");
	free(t);
	t = data("show_roce_truncated.txt", &len);
	assert_int_equal(gc_onyx_parse_show_roce(&st, t, len, &err), GC_EINVAL);
	assert_string_equal(err.msg, "show roce: no 'RoCE mode' line in output");
	free(t);
}

/* ---------------------------------------------------------------- desired + diff */

static const char *const full_sn2700[] = {
	"traffic pool roce type lossless",
	"traffic pool roce memory percent 50.00",
	"traffic pool roce map switch-priority 3",
	"interface ethernet 1/1-1/32 qos trust L3",
	"interface ethernet 1/1-1/32 traffic-class 3 congestion-control ecn minimum-absolute 150 "
	"maximum-absolute 1500",
	"interface ethernet 1/1-1/32 traffic-class 6 dcb ets strict",
	"dcb priority-flow-control enable force",
	"dcb priority-flow-control priority 3 enable",
	"interface ethernet 1/1-1/32 dcb priority-flow-control mode on force",
	"lldp",
};

static void test_desired_sn2700_exact(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_switch sw;
	struct gc_switch_roce r;
	struct gc_onyx_desired d;
	struct gc_onyx_state obs;
	struct gc_onyx_cmds c = {NULL, 0};

	sn2700(&sw, &r, "1/1-1/32");
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	parse_file(&obs, "running_config_default.txt");
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, false, &err), 0);
	assert_cmds(&c, full_sn2700, GC_ARRAY_LEN(full_sn2700));
	gc_onyx_cmds_free(&c);
	/* owned changes nothing on a switch with no RoCE config */
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, true, &err), 0);
	assert_cmds(&c, full_sn2700, GC_ARRAY_LEN(full_sn2700));
	gc_onyx_cmds_free(&c);
	gc_onyx_state_free(&obs);
	gc_onyx_desired_free(&d);
}

/* The commands, read back as a running-config, are converged. */
#ifdef GC_HAVE_SPEC
/* The same list from the shipped example spec, through the real loader. */
static void test_desired_from_example_spec(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_diags diags = {0};
	struct gc_cluster *c = NULL;
	struct gc_switch *sw;
	struct gc_onyx_desired d;
	struct gc_onyx_state obs;
	struct gc_onyx_cmds cmds = {NULL, 0};
	char *path = gc_xasprintf("%s/examples/roce-passthrough.yaml", GC_SOURCE_DIR);

	if (gc_spec_load(&c, &diags, path, &err) != 0)
		fail_msg("%s: %s (%zu diagnostics)", path, err.msg, diags.n);
	sw = gc_cluster_switch(c, "sn2700");
	assert_non_null(sw);
	assert_int_equal(gc_onyx_desired(&d, sw, &err), 0);
	gc_onyx_state_init(&obs);
	assert_int_equal(gc_onyx_diff(&cmds, &d, &obs, sw->roce->owned, &err), 0);
	assert_cmds(&cmds, full_sn2700, GC_ARRAY_LEN(full_sn2700));
	gc_onyx_cmds_free(&cmds);
	gc_onyx_desired_free(&d);
	gc_cluster_free(c);
	gc_diags_free(&diags);
	free(path);
}
#endif

static void test_diff_converged(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_switch sw;
	struct gc_switch_roce r;
	struct gc_onyx_desired d;
	struct gc_onyx_state obs;
	struct gc_onyx_cmds c = {NULL, 0};
	struct gc_buf text = GC_BUF_INIT, drift = GC_BUF_INIT;
	size_t i;

	sn2700(&sw, &r, "1/1-1/32");
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	for (i = 0; i < GC_ARRAY_LEN(full_sn2700); i++)
		gc_buf_printf(&text, "   %s\n", full_sn2700[i]);
	gc_onyx_state_init(&obs);
	assert_int_equal(gc_onyx_parse_running_config(&obs, text.ptr, text.len, &err), 0);
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, true, &err), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(gc_onyx_drift(&drift, &d, &obs, true), 0);
	assert_string_equal(gc_buf_str(&drift), "");
	gc_buf_free(&text);
	gc_onyx_state_free(&obs);
	gc_onyx_desired_free(&d);
}

static void test_diff_one_hand_change(void **state)
{
	static const char *const want[] = {"interface ethernet 1/7 qos trust L3"};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_switch sw;
	struct gc_switch_roce r;
	struct gc_onyx_desired d;
	struct gc_onyx_state obs;
	struct gc_onyx_cmds c = {NULL, 0};
	struct gc_buf drift = GC_BUF_INIT;

	sn2700(&sw, &r, "1/1-1/32");
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	parse_file(&obs, "running_config.txt");
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, false, &err), 0);
	assert_cmds(&c, want, 1);
	gc_onyx_cmds_free(&c);
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, true, &err), 0);
	assert_cmds(&c, want, 1);
	gc_onyx_cmds_free(&c);
	assert_int_equal(gc_onyx_drift(&drift, &d, &obs, false), 1);
	assert_string_equal(gc_buf_str(&drift), "  interface ethernet 1/7 qos trust: L2 -> L3\n");
	gc_buf_free(&drift);
	gc_onyx_state_free(&obs);
	gc_onyx_desired_free(&d);
}

static void test_diff_owned_removal(void **state)
{
	static const char *const owned[] = {
		"interface ethernet 1/7 qos trust L3",
		"no lldp",
		"interface ethernet 1/1-1/32 no dcb priority-flow-control mode force",
		"no dcb priority-flow-control priority 3 enable",
		"no dcb priority-flow-control enable",
		"interface ethernet 1/17-1/32 no traffic-class 6 dcb ets",
		"interface ethernet 1/17-1/32 no traffic-class 3 congestion-control",
		"interface ethernet 1/17-1/32 no qos trust",
	};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_switch sw;
	struct gc_switch_roce r;
	struct gc_onyx_desired d;
	struct gc_onyx_state obs;
	struct gc_onyx_cmds c = {NULL, 0};
	struct gc_buf drift = GC_BUF_INIT;

	sn2700(&sw, &r, "1/1-1/16");
	r.pfc = false;
	r.lldp = false;
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	parse_file(&obs, "running_config.txt");
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, false, &err), 0);
	assert_cmds(&c, owned, 1);
	gc_onyx_cmds_free(&c);
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, true, &err), 0);
	assert_cmds(&c, owned, GC_ARRAY_LEN(owned));
	gc_onyx_cmds_free(&c);
	/* one category at a time, as plan actions ask for it */
	assert_int_equal(gc_onyx_diff_only(&c, &d, &obs, true, GC_ONYX_CAT_PFC, &err), 0);
	assert_cmds(&c, owned + 2, 3);
	gc_onyx_cmds_free(&c);
	assert_int_equal(gc_onyx_diff_only(&c, &d, &obs, true, GC_ONYX_CAT_TRUST, &err), 0);
	assert_cmds(&c, (const char *const[]){owned[0], owned[7]}, 2);
	gc_onyx_cmds_free(&c);
	assert_int_equal(gc_onyx_diff_only(&c, &d, &obs, true, GC_ONYX_CAT_POOL, &err), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(gc_onyx_drift(&drift, &d, &obs, true), GC_ARRAY_LEN(owned));
	assert_non_null(strstr(gc_buf_str(&drift),
			       "  interface ethernet 1/17-1/32 traffic-class 3 congestion-control: "
			       "ecn 150/1500 KB -> none\n"));
	assert_non_null(strstr(gc_buf_str(&drift), "  lldp: enabled -> disabled\n"));
	gc_buf_free(&drift);
	gc_onyx_state_free(&obs);
	gc_onyx_desired_free(&d);
}

static void test_diff_priority_change(void **state)
{
	static const char *const want[] = {
		"traffic pool roce map switch-priority 4",
		"interface ethernet 1/1-1/32 traffic-class 4 congestion-control ecn minimum-absolute "
		"200 maximum-absolute 1500",
		"dcb priority-flow-control priority 4 enable",
		"no dcb priority-flow-control priority 3 enable",
		"interface ethernet 1/1-1/32 no traffic-class 3 congestion-control",
		"no traffic pool roce map switch-priority 3",
	};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_switch sw;
	struct gc_switch_roce r;
	struct gc_onyx_desired d;
	struct gc_onyx_state obs;
	struct gc_onyx_cmds c = {NULL, 0};

	sn2700(&sw, &r, "1/1-1/32");
	r.priority = 4;
	r.ecn_min_kb = 200;
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	parse_file(&obs, "running_config.txt");
	obs.ports[6].trust = GC_ONYX_TRUST_L3; /* only the priority moves */
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, true, &err), 0);
	assert_cmds(&c, want, GC_ARRAY_LEN(want));
	gc_onyx_cmds_free(&c);
	/* not owned: the old priority's settings stay */
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, false, &err), 0);
	assert_cmds(&c, want, 3);
	gc_onyx_cmds_free(&c);
	gc_onyx_state_free(&obs);
	gc_onyx_desired_free(&d);
}

static void test_diff_split_list(void **state)
{
	static const char *const want[] = {
		"interface ethernet 1/1-1/4 qos trust L3",
		"interface ethernet 1/9 qos trust L3",
	};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_switch sw;
	struct gc_switch_roce r;
	struct gc_onyx_desired d;
	struct gc_onyx_state obs;
	struct gc_onyx_cmds c = {NULL, 0};

	sn2700(&sw, &r, "1/9,1/1-1/4");
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	parse_file(&obs, "running_config_default.txt");
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, false, &err), 0);
	assert_int_equal(c.n, 14); /* 4 per-port settings x 2 ranges + 6 global */
	assert_string_equal(c.v[3], want[0]);
	assert_string_equal(c.v[4], want[1]);
	gc_onyx_cmds_free(&c);
	gc_onyx_state_free(&obs);
	gc_onyx_desired_free(&d);
}

static void test_refuses_bad_values(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_switch sw;
	struct gc_switch_roce r;
	struct gc_onyx_desired d;
	struct gc_onyx_state obs;
	struct gc_onyx_cmds c = {NULL, 0};

	sn2700(&sw, &r, "1/1;reload");
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), GC_EINVAL);
	assert_string_equal(err.msg, "switch 'sn2700': invalid ports '1/1;reload'");
	gc_error_clear(&err);
	sn2700(&sw, &r, "1/1-1/32");
	r.priority = 8;
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), GC_EINVAL);
	gc_error_clear(&err);
	r.priority = 3;
	r.mode = "magic";
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), GC_EINVAL);
	gc_error_clear(&err);
	r.mode = NULL;
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	/* a corrupted desired state never reaches the wire */
	snprintf(d.st.pool_type, sizeof(d.st.pool_type), "lossless\nreload");
	gc_onyx_state_init(&obs);
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, false, &err), GC_EINVAL);
	assert_int_equal(c.n, 0);
	gc_onyx_desired_free(&d);
}

static void test_oneshot_and_version_gate(void **state)
{
	static const char *const want[] = {"roce lossless"};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_switch sw;
	struct gc_switch_roce r;
	struct gc_onyx_desired d;
	struct gc_onyx_state obs;
	struct gc_onyx_cmds c = {NULL, 0};
	struct gc_onyx_version old = {"MLNX-OS", "3.6.8130", "", ""};
	struct gc_onyx_version ok = {"Onyx", "3.8.2000", "", ""};
	struct gc_buf drift = GC_BUF_INIT;

	sn2700(&sw, &r, "1/1-1/32");
	r.mode = "oneshot";
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	assert_true(d.oneshot);
	gc_onyx_state_init(&obs);
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, true, &err), 0);
	assert_cmds(&c, want, 1);
	gc_onyx_cmds_free(&c);
	assert_int_equal(gc_onyx_drift(&drift, &d, &obs, true), 1);
	assert_string_equal(gc_buf_str(&drift), "  roce mode: N/A -> lossless\n");
	gc_buf_free(&drift);
	snprintf(obs.roce_mode, sizeof(obs.roce_mode), "lossless");
	assert_int_equal(gc_onyx_diff(&c, &d, &obs, true, &err), 0);
	assert_int_equal(c.n, 0);

	assert_int_equal(gc_onyx_check_version(&d, &ok, "sn2700", &err), 0);
	assert_int_equal(gc_onyx_check_version(&d, &old, "sn2700", &err), GC_ENOTSUP);
	assert_string_equal(err.msg, "switch 'sn2700': roce mode 'oneshot' needs Onyx 3.8.2000 or "
				     "later (the `roce` command); the switch runs MLNX-OS 3.6.8130");
	gc_onyx_desired_free(&d);
	r.mode = NULL;
	assert_int_equal(gc_onyx_desired(&d, &sw, &err), 0);
	assert_int_equal(gc_onyx_check_version(&d, &old, "sn2700", NULL), 0);
	gc_onyx_desired_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_running_config),
		cmocka_unit_test(test_running_config_bad),
		cmocka_unit_test(test_show_roce),
		cmocka_unit_test(test_desired_sn2700_exact),
#ifdef GC_HAVE_SPEC
		cmocka_unit_test(test_desired_from_example_spec),
#endif
		cmocka_unit_test(test_diff_converged),
		cmocka_unit_test(test_diff_one_hand_change),
		cmocka_unit_test(test_diff_owned_removal),
		cmocka_unit_test(test_diff_priority_change),
		cmocka_unit_test(test_diff_split_list),
		cmocka_unit_test(test_refuses_bad_values),
		cmocka_unit_test(test_oneshot_and_version_gate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
