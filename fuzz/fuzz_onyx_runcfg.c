/*
 * fuzz_onyx_runcfg.c - libFuzzer target: `show running-config` and
 * `show roce` parsers, and the diff of whatever parsed against the SN2700
 * desired state (the diff must never emit an unsafe command).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc/onyx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gc_switch_roce r = {.mode = "dscp-lossless", .pool_percent = 50.0,
					  .priority = 3, .ecn_min_kb = 150, .ecn_max_kb = 1500,
					  .cnp_traffic_class = 6, .pfc = true, .lldp = true};
	struct gc_switch sw = {.name = "sn2700", .ports = "1/1-1/32", .roce = &r};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_onyx_state st;
	struct gc_onyx_desired d;
	struct gc_onyx_cmds cmds = {NULL, 0};
	struct gc_buf drift = GC_BUF_INIT;
	size_t i;

	gc_onyx_state_init(&st);
	if (gc_onyx_parse_running_config(&st, (const char *)data, size, &err) == 0 &&
	    gc_onyx_desired(&d, &sw, &err) == 0) {
		if (gc_onyx_diff(&cmds, &d, &st, true, &err) == 0) {
			for (i = 0; i < cmds.n; i++) {
				if (strchr(cmds.v[i], '\n') || strchr(cmds.v[i], ';'))
					abort();
			}
		}
		gc_onyx_drift(&drift, &d, &st, true);
		gc_onyx_cmds_free(&cmds);
		gc_onyx_desired_free(&d);
	}
	gc_onyx_state_free(&st);
	gc_buf_free(&drift);
	gc_onyx_state_init(&st);
	gc_error_clear(&err);
	gc_onyx_parse_show_roce(&st, (const char *)data, size, &err);
	gc_onyx_state_free(&st);
	return 0;
}
