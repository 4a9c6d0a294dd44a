/*
 * cmd_plan.c - `gpuclusterctl plan`: load the spec, build the resource graph,
 * observe, plan, print.
 *
 * Observation sources: --offline (nothing exists), --observed FILE (a JSON
 * snapshot, docs/observed-json.md).  Live observation plugs in at
 * observe_live() below once the drivers and src/exec land; until then a
 * plan without a source is a usage error that says what to pass.
 *
 * Exit: 0 no changes, 2 changes, 1 error, 64 usage.
 * -v/--verbose prints the drivers' notes (GC_EV_NOTE) to stderr, e.g. the
 * vCenter's "observed N VMs and M hosts in 3 property-collector round trips";
 * stdout (the plan) is the same with or without it.
 * GC_PLAN_TIMING=1 prints the time of each phase to stderr (benchmarks).
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/exec.h"
#include "gc/plan.h"

const char cmd_plan_usage[] =
	"usage: gpuclusterctl plan [--offline | --observed FILE] [--only KINDS] [--target NAME]...\n"
	"                          [--json] [-v] SPEC\n"
	"\n"
	"Show what apply would change, in order: resource changes (+ create, ~ update,\n"
	"- delete) and the steps they need (maintenance mode, one reboot per host,\n"
	"powering VMs off and on, migrations), grouped in waves that respect\n"
	"rolling.max_unavailable.  A delete removes what the spec owns but no longer\n"
	"names (a passthrough, vGPU, SR-IOV or PVRDMA device of a VM in the spec; a\n"
	"switch's RoCE settings with roce.owned); VMs are never deleted.\n"
	"\n"
	"Options:\n"
	"Without --offline or --observed the targets are observed live: one SSH\n"
	"connection per target, one batch of read-only commands each; nothing is\n"
	"changed.\n"
	"\n"
	"  --offline          plan as if nothing exists yet; touch nothing\n"
	"  --observed FILE    plan against an observed-state snapshot (JSON); touch nothing\n"
	"  --only KINDS       plan only for these target kinds\n"
	"                     (esxi,switch,vcenter,guest,kvm,libvirt)\n"
	"  --target NAME|GLOB plan only for this host, switch, vCenter or VM (fnmatch\n"
	"                     pattern; repeatable)\n"
	"  --json             print the plan as JSON (format_version 1)\n"
	"  --out FILE         live: also save the plan (with a fingerprint of every\n"
	"                     target) for 'apply FILE', which carries out exactly it\n"
	"  --parallelism N    live: targets observed at once (default 64)\n"
	"  --known-hosts FILE live: known_hosts file instead of the spec's\n"
	"  --trust-new-host-keys  live: record unknown host keys (changed ones are refused)\n"
	"  --state-dir DIR    live: where the journal and lock are (default .gpuclusterctl/\n"
	"                     beside SPEC); the journal says which reboots are owed\n"
	"  -v, --verbose      live: print the drivers' notes to stderr (e.g. how many\n"
	"                     vCenter property-collector round trips observing took)\n"
	"  -h, --help         show this help\n"
	"\n"
	"Terraform spellings work too: -out FILE, -target NAME; -detailed-exitcode is\n"
	"how plan always exits.\n"
	"\n"
	"Exit status: 0 no changes, 2 changes, 1 error, 64 usage, 130 interrupted.\n";

enum source { SRC_NONE, SRC_OFFLINE, SRC_FILE };

/* Live plan: warnings and failures of the observation go to stderr, and
 * with --verbose (arg points at true) the drivers' notes too. */
#ifndef GC_CLI_FRONT /* the front binary does not observe */
static void plan_event(void *arg, const struct gc_exec_event *ev)
{
	const char *who = ev->target ? ev->target->name : "gpuclusterctl";
	bool verbose = *(const bool *)arg;
	const char *what;

	if (ev->kind == GC_EV_NOTE && verbose)
		what = "";
	else if (ev->kind == GC_EV_WARN)
		what = "warning: ";
	else if (ev->kind == GC_EV_FAILED)
		what = "";
	else if (ev->kind == GC_EV_RETRY)
		what = "retrying after: ";
	else
		return;
	fprintf(stderr, "%s: %s", who, what);
	cli_put_shown(stderr, ev->message, true);
	fputc('\n', stderr);
}
#endif

/* --only: "esxi,switch" -> bitmask of target kinds; -1 on an unknown word. */
int cli_parse_kinds(unsigned *kinds, const char *list)
{
	static const struct {
		const char *name;
		enum gc_target_kind kind;
	} words[] = {{"esxi", GC_TARGET_ESXI},
		     {"switch", GC_TARGET_SWITCH},
		     {"vcenter", GC_TARGET_VCENTER},
		     {"guest", GC_TARGET_GUEST},
		     {"kvm", GC_TARGET_KVM},
		     {"libvirt", GC_TARGET_LIBVIRT}};
	const char *p = list;

	*kinds = 0;
	while (*p) {
		size_t n = strcspn(p, ","), i;
		bool found = false;

		for (i = 0; i < GC_ARRAY_LEN(words); i++) {
			if (strlen(words[i].name) == n && strncmp(p, words[i].name, n) == 0) {
				*kinds |= 1u << words[i].kind;
				found = true;
			}
		}
		if (!found)
			return -1;
		p += n + (p[n] == ',');
	}
	return *kinds ? 0 : -1;
}

static int parse_uint(unsigned *out, const char *s)
{
	char *end;
	unsigned long v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	v = strtoul(s, &end, 10);
	if (*end != '\0' || v == 0 || v > 4096)
		return -1;
	*out = (unsigned)v;
	return 0;
}

struct plan_args {
	enum source src;
	const char *observed_path, *out_path, *spec;
	bool json, verbose;
	struct gc_plan_opts popts;
	struct gc_exec_opts xo; /* --only, --known-hosts, --state-dir, ... */
	char *targets[64];
	size_t ntargets;
};

/* Plan's options into a: -1 when the plan goes on, else the exit code (usage, --help). */
static int parse_args(struct plan_args *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{"offline", no_argument, NULL, 'o'},   {"observed", required_argument, NULL, 'O'},
		{"json", no_argument, NULL, 'j'},      {"parallelism", required_argument, NULL, 'p'},
		{"only", required_argument, NULL, 'k'}, {"known-hosts", required_argument, NULL, 'K'},
		{"target", required_argument, NULL, 't'},
		{"out", required_argument, NULL, 'w'},
		{"trust-new-host-keys", no_argument, NULL, 'T'},
		{"state-dir", required_argument, NULL, 's'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},      {NULL, 0, NULL, 0},
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hv", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
		case 'O':
			if (a->src == (c == 'o' ? SRC_FILE : SRC_OFFLINE))
				return cli_usage_error("plan", "--offline and --observed exclude each other");
			a->src = c == 'o' ? SRC_OFFLINE : SRC_FILE;
			if (c == 'O')
				a->observed_path = optarg;
			break;
		case 'j':
			a->json = true;
			break;
		case 'p':
			if (parse_uint(&a->popts.parallelism, optarg) != 0)
				return cli_usage_error("plan", "--parallelism needs a number from 1 to 4096, not '%s'",
						       optarg);
			break;
		case 'k':
			if (cli_parse_kinds(&a->xo.kinds, optarg) != 0)
				return cli_usage_error("plan", "--only takes a comma list of esxi, switch, "
							       "vcenter, guest, kvm, libvirt; got '%s'", optarg);
			break;
		case 'w':
			a->out_path = optarg;
			break;
		case 't':
			if (a->ntargets == GC_ARRAY_LEN(a->targets))
				return cli_usage_error("plan", "at most %zu --target options",
						       GC_ARRAY_LEN(a->targets));
			a->targets[a->ntargets++] = optarg;
			break;
		case 'K':
			a->xo.drv.known_hosts = optarg;
			break;
		case 'T':
			a->xo.drv.trust_new_host_keys = true;
			break;
		case 's':
			a->xo.state_dir = optarg;
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'h':
			return cli_print_usage("plan");
		case ':':
			return cli_usage_error("plan", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_usage_error("plan", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (a->out_path != NULL && a->src != SRC_NONE)
		return cli_usage_error("plan", "--out saves a live plan (what the targets hold now); "
					       "not with --offline or --observed");
	if (optind >= argc)
		return cli_usage_error("plan", "missing SPEC");
	if (optind + 1 < argc)
		return cli_usage_error("plan", "too many arguments (one SPEC)");
	a->spec = argv[optind];
	return -1;
}

#ifndef GC_CLI_FRONT
/*
 * Live: the executor observes every target once and plans, changing
 * nothing.  *partial: some targets could not be observed, and the plan of
 * the others is shown before the error.  Exit code, or -1 to go on.
 */
static int observe_live(struct plan_args *a, const struct gc_graph *graph,
			struct gc_exec_report *rep, char **state_dir, bool *partial,
			struct gc_error *err)
{
	if (a->xo.state_dir == NULL)
		a->xo.state_dir = *state_dir = cli_default_state_dir(a->spec);
	a->xo.plan_only = true;
	a->xo.event = plan_event;
	a->xo.event_arg = &a->verbose;
	a->xo.parallelism = a->popts.parallelism;
	a->xo.plan = a->popts;
	if (gc_exec_run(rep, graph, &a->xo, err) != 0) {
		if (rep->plan == NULL || rep->plan->nunknown == 0)
			return cli_error("%s", err->msg);
		*partial = true;
	}
	return -1;
}
#endif

/* On stderr after the plan: what the scope left out, and GC_PLAN_TIMING's phases. */
static void print_footer(const struct plan_args *a, size_t left_out, const uint64_t t[5],
			 const struct gc_graph *graph, const struct gc_plan *plan)
{
	if (left_out > 0 && a->ntargets > 0)
		fprintf(stderr, "gpuclusterctl: %s: %zu resources on other targets left out\n",
			cli_scope_flags(a->xo.kinds, a->ntargets), left_out);
	else if (left_out > 0)
		fprintf(stderr, "gpuclusterctl: --only: %zu resources on other target kinds left out\n",
			left_out);
	if (getenv("GC_PLAN_TIMING") != NULL && getenv("GC_PLAN_TIMING")[0] != '\0')
		fprintf(stderr,
			"gpuclusterctl: timing: load %.3f s, graph %.3f s (observe included), plan %.3f s, "
			"render %.3f s; %zu resources, %zu actions, critical path %zu\n",
			(double)(t[1] - t[0]) / 1e9, (double)(t[2] - t[1]) / 1e9,
			(double)(t[3] - t[2]) / 1e9, (double)(t[4] - t[3]) / 1e9, graph->nresources,
			plan->nactions, plan->stats.critical_path);
}

int cmd_plan(int argc, char **argv)
{
	struct plan_args a = {.src = SRC_NONE, .popts = GC_PLAN_OPTS_INIT};
	struct gc_cluster *cluster = NULL;
	struct gc_graph *graph = NULL, *scoped = NULL;
	struct gc_observed *obs = NULL;
	struct gc_plan *plan = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_exec_report rep = {0};
	char *state_dir = NULL;
	size_t left_out = 0;
	bool partial = false;
	uint64_t t[5] = {0};
	int rc = parse_args(&a, argc, argv);

	if (rc >= 0)
		return rc;
	rc = GC_EXIT_ERROR;
#ifdef GC_CLI_FRONT
	if (a.src == SRC_NONE)
		return cli_online(); /* live observation: the online binary (front.c) */
#endif
	t[0] = gc_now_ns();
	if (cli_load_spec(&cluster, a.spec) != 0)
		goto out;
	t[1] = gc_now_ns();
	if (gc_graph_build(&graph, cluster, &err) != 0) {
		cli_error("%s", err.msg);
		goto out;
	}
	if (a.xo.kinds != 0 || a.ntargets > 0) {
		if ((rc = cli_scope(&scoped, graph, a.xo.kinds, (const char *const *)a.targets,
				    a.ntargets, &left_out)) != 0)
			goto out;
		rc = GC_EXIT_ERROR;
		gc_graph_free(graph);
		graph = scoped; /* now owned through graph */
	}
	if (a.src == SRC_FILE && gc_observed_load_json(&obs, a.observed_path, &err) != 0) {
		cli_error("%s", err.msg);
		goto out;
	}
#ifndef GC_CLI_FRONT
	if (a.src == SRC_NONE) {
		if (observe_live(&a, graph, &rep, &state_dir, &partial, &err) >= 0)
			goto out;
		plan = rep.plan; /* now owned by plan */
		rep.plan = NULL;
	}
#endif
	t[2] = gc_now_ns();
	if (plan == NULL && gc_plan_build(&plan, graph, obs, &a.popts, &err) != 0) {
		cli_error("%s", err.msg);
		goto out;
	}
	t[3] = gc_now_ns();
	if (a.json) { /* streamed: 250 MB at 10,000 hosts, never held whole */
		if (gc_plan_write_json(stdout, plan, &err) != 0 || fflush(stdout) != 0) {
			cli_error("writing the output failed");
			goto out;
		}
	} else if (gc_plan_write_text(stdout, plan, cli_color(stdout) ? GC_RENDER_COLOR : 0) != 0 ||
		   fflush(stdout) != 0) { /* streamed too: 80 MB at 10,000 hosts */
		cli_error("writing the output failed");
		goto out;
	}
	t[4] = gc_now_ns();
	if (a.out_path != NULL && !partial) {
		if (cli_plan_write(a.out_path, a.spec, a.xo.kinds, (const char *const *)a.targets,
				   a.ntargets, &rep, plan) != 0)
			goto out;
		if (!a.json)
			printf("\nSaved the plan to %s: 'gpuclusterctl apply %s' carries out exactly this "
			       "plan, or refuses if a target changed.\n", a.out_path, a.out_path);
	}
	print_footer(&a, left_out, t, graph, plan);
	if (partial) {
		cli_error("%s", err.msg);
		goto out; /* exit 1: part of the plan is unknown */
	}
	rc = gc_plan_empty(plan) ? GC_EXIT_OK : GC_EXIT_CHANGES;
out:
#ifndef GC_CLI_FRONT
	gc_exec_report_free(&rep);
#endif
	free(state_dir);
	gc_plan_free(plan);
	gc_observed_free(obs);
	gc_graph_free(graph);
	gc_cluster_free(cluster);
	return rc;
}
