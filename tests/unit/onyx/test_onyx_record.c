/*
 * test_onyx_record.c - the observed switch in the graph's shape: the
 * example spec (examples/roce-passthrough.yaml) through the real loader,
 * graph builder and planner, with the switch observed from captured
 * running-config text.  The plan's switch actions must be exactly the
 * drift: none when converged, one update of switch.qos_trust for a port
 * someone set to L2, deletions only when roce.owned.
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
#include "gc/plan.h"

struct fixture {
	struct gc_cluster *c;
	struct gc_graph *g;
	struct gc_switch *sw;
	const struct gc_resource **res;
	size_t nres;
	struct gc_onyx_desired d;
};

static void load(struct fixture *f)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_diags diags = {0};
	char *path = gc_xasprintf("%s/examples/roce-passthrough.yaml", GC_SOURCE_DIR);

	memset(f, 0, sizeof(*f));
	if (gc_spec_load(&f->c, &diags, path, &err) != 0)
		fail_msg("%s: %s", path, err.msg);
	gc_diags_free(&diags);
	free(path);
	f->sw = gc_cluster_switch(f->c, "sn2700");
	assert_non_null(f->sw);
}

static void build(struct fixture *f)
{
	struct gc_error err = GC_ERROR_INIT;
	size_t i;

	assert_int_equal(gc_graph_build(&f->g, f->c, &err), 0);
	f->res = gc_xcalloc(f->g->nresources + 1, sizeof(*f->res));
	for (i = 0; i < f->g->nresources; i++) {
		if (f->g->resources[i]->target->kind == GC_TARGET_SWITCH)
			f->res[f->nres++] = f->g->resources[i];
	}
	assert_int_equal(gc_onyx_desired(&f->d, f->sw, &err), 0);
}

static void unload(struct fixture *f)
{
	gc_onyx_desired_free(&f->d);
	free(f->res);
	gc_graph_free(f->g);
	gc_cluster_free(f->c);
}

/* The switch actions of the plan, "~ sn2700/switch.qos_trust" each line. */
static char *switch_plan(struct fixture *f, const char *runcfg_leaf, const char *runcfg_text)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_plan_opts po = GC_PLAN_OPTS_INIT;
	struct gc_observed *obs;
	struct gc_onyx_state st;
	struct gc_plan *p = NULL;
	struct gc_buf out = GC_BUF_INIT;
	char *text = NULL;
	size_t len = 0, i;

	if (runcfg_leaf) {
		char *path = gc_xasprintf("%s/tests/data/onyx/%s", GC_SOURCE_DIR, runcfg_leaf);

		assert_int_equal(gc_read_file(&text, &len, path, 1 << 20, &err), 0);
		free(path);
	} else {
		text = gc_xstrdup(runcfg_text);
		len = strlen(text);
	}
	gc_onyx_state_init(&st);
	assert_int_equal(gc_onyx_parse_running_config(&st, text, len, &err), 0);
	free(text);
	gc_observed_new(&obs);
	gc_onyx_record(obs, f->sw, &f->d, &st, f->res, f->nres);
	if (gc_plan_build(&p, f->g, obs, &po, &err) != 0)
		fail_msg("%s", err.msg);
	for (i = 0; i < p->nactions; i++) {
		const struct gc_action *a = p->actions[i];
		size_t k;

		if (a->target == NULL || a->target->kind != GC_TARGET_SWITCH)
			continue;
		gc_action_describe(&out, a);
		for (k = 0; k < a->nchanges; k++)
			gc_buf_printf(&out, " %s=%s->%s", a->changes[k].key,
				      a->changes[k].old_value ? a->changes[k].old_value : "(none)",
				      a->changes[k].new_value ? a->changes[k].new_value : "(none)");
		gc_buf_putc(&out, '\n');
	}
	gc_plan_free(p);
	gc_observed_free(obs);
	gc_onyx_state_free(&st);
	return gc_buf_take(&out);
}

static const char converged_cfg[] =
	"   traffic pool roce type lossless\n"
	"   traffic pool roce memory percent 50.00\n"
	"   traffic pool roce map switch-priority 3\n"
	"   interface ethernet 1/1-1/32 qos trust L3\n"
	"   interface ethernet 1/1-1/32 traffic-class 3 congestion-control ecn minimum-absolute 150 "
	"maximum-absolute 1500\n"
	"   interface ethernet 1/1-1/32 traffic-class 6 dcb ets strict\n"
	"   dcb priority-flow-control enable force\n"
	"   dcb priority-flow-control priority 3 enable\n"
	"   interface ethernet 1/1-1/32 dcb priority-flow-control mode on force\n"
	"   lldp\n";

static void test_record_converged(void **state)
{
	struct fixture f;
	char *plan;

	load(&f);
	build(&f);
	assert_int_equal(f.nres, 6);
	plan = switch_plan(&f, NULL, converged_cfg);
	assert_string_equal(plan, "");
	free(plan);
	unload(&f);
}

static void test_record_one_port(void **state)
{
	struct fixture f;
	char *plan;

	load(&f);
	build(&f);
	plan = switch_plan(&f, "running_config.txt", NULL);
	assert_string_equal(plan, "~ sn2700/switch.qos_trust ports=1/1-1/6,1/8-1/32->1/1-1/32 "
				  "trust=L2->L3\n");
	free(plan);
	unload(&f);
}

static void test_record_fresh_switch(void **state)
{
	struct fixture f;
	char *plan;

	load(&f);
	build(&f);
	plan = switch_plan(&f, "running_config_default.txt", NULL);
	/* every category differs: one action per resource */
	assert_non_null(strstr(plan, "~ sn2700/switch.pool "));
	assert_non_null(strstr(plan, "~ sn2700/switch.ecn ports=none->1/1-1/32"));
	assert_non_null(strstr(plan, "~ sn2700/switch.lldp enabled=false->true"));
	free(plan);
	unload(&f);
}

static void test_record_owned_deletes(void **state)
{
	struct fixture f;
	char *plan;

	load(&f);
	f.sw->roce->pfc = false;
	f.sw->roce->lldp = false;
	build(&f);
	assert_int_equal(f.nres, 4);
	/* not owned: the leftovers stay, nothing to do */
	plan = switch_plan(&f, NULL, converged_cfg);
	assert_string_equal(plan, "");
	free(plan);
	f.sw->roce->owned = true;
	plan = switch_plan(&f, NULL, converged_cfg);
	assert_non_null(strstr(plan, "- sn2700/switch.pfc"));
	assert_non_null(strstr(plan, "- sn2700/switch.lldp"));
	assert_null(strstr(plan, "~ "));
	free(plan);
	unload(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_converged),
		cmocka_unit_test(test_record_one_port),
		cmocka_unit_test(test_record_fresh_switch),
		cmocka_unit_test(test_record_owned_deletes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
