/*
 * cmd_unlock.c - `gpuclusterctl unlock --force SPEC`: clear the cluster
 * lease that an apply holds on the targets (src/exec/lease.c), for when its
 * holder died and cannot clear it (a killed apply from another copy of the
 * spec).  The targets are observed to reach them; nothing else changes.  The
 * local flock is taken as for apply: an apply running from this state
 * directory is never unlocked under its feet.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gc/exec.h"
#include "gc/graph.h"

static void unlock_event(void *arg, const struct gc_exec_event *ev)
{
	const char *who = ev->target ? ev->target->name : "gpuclusterctl";
	const char *what;

	(void)arg;
	if (ev->kind == GC_EV_WARN)
		what = "";
	else if (ev->kind == GC_EV_FAILED)
		what = "FAILED: ";
	else if (ev->kind == GC_EV_RETRY)
		what = "retrying after: ";
	else
		return;
	fprintf(stderr, "%s: %s", who, what);
	cli_put_shown(stderr, ev->message, true);
	fputc('\n', stderr);
}

int cmd_unlock(int argc, char **argv)
{
	static const struct option opts[] = {
		{"force", no_argument, NULL, 'f'},     {"only", required_argument, NULL, 'o'},
		{"target", required_argument, NULL, 't'}, {"known-hosts", required_argument, NULL, 'k'},
		{"trust-new-host-keys", no_argument, NULL, 'T'},
		{"state-dir", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct gc_exec_opts o;
	struct gc_exec_report rep;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_cluster *cluster = NULL;
	struct gc_graph *full = NULL, *g = NULL;
	char *targets[64], *state_dir = NULL;
	size_t ntargets = 0, left_out = 0;
	bool force = false;
	int c, rc = GC_EXIT_ERROR;

	memset(&o, 0, sizeof(o));
	memset(&rep, 0, sizeof(rep));
	o.plan = (struct gc_plan_opts)GC_PLAN_OPTS_INIT;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case 'o':
			if (cli_parse_kinds(&o.kinds, optarg) != 0)
				return cli_usage_error("unlock", "--only takes a comma list of esxi, switch, "
						       "vcenter, guest, kvm, libvirt; got '%s'", optarg);
			break;
		case 't':
			if (ntargets == GC_ARRAY_LEN(targets))
				return cli_usage_error("unlock", "at most %zu --target options", GC_ARRAY_LEN(targets));
			targets[ntargets++] = optarg;
			break;
		case 'k':
			o.drv.known_hosts = optarg;
			break;
		case 'T':
			o.drv.trust_new_host_keys = true;
			break;
		case 's':
			o.state_dir = optarg;
			break;
		case 'h':
			return cli_print_usage("unlock");
		default:
			return cli_usage_error("unlock", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("unlock", optind >= argc ? "missing SPEC" : "too many arguments");
	if (!force)
		return cli_usage_error("unlock", "unlock clears another apply's lease: pass --force once "
				       "you know that apply is dead");
	if (cli_load_spec(&cluster, argv[optind]) != 0)
		return GC_EXIT_ERROR;
	if (gc_graph_build(&full, cluster, &err) != 0) {
		cli_error("%s", err.msg);
		goto out;
	}
	if ((rc = cli_scope(&g, full, o.kinds, (const char *const *)targets, ntargets, &left_out)) != 0)
		goto out;
	if (o.state_dir == NULL)
		o.state_dir = state_dir = cli_default_state_dir(argv[optind]);
	o.plan_only = true;
	o.unlock = true;
	o.event = unlock_event;
	rc = gc_exec_run(&rep, g, &o, &err);
	if (rc != 0) {
		cli_error("%s", err.msg);
		rc = GC_EXIT_ERROR;
	} else {
		if (rep.done == 0)
			puts("No cluster lease to clear.");
		else
			printf("Cleared the cluster lease on %zu target%s.\n", rep.done, rep.done == 1 ? "" : "s");
		rc = GC_EXIT_OK;
	}
	gc_exec_report_free(&rep);
out:
	gc_graph_free(g);
	gc_graph_free(full);
	gc_cluster_free(cluster);
	free(state_dir);
	return rc;
}
