/*
 * cmd_complete.c - `gpuclusterctl __complete WHAT [ARG]`: what the shell
 * completion scripts (completions/) ask for.  Hidden: not in the command
 * table, so neither in `help` nor in did-you-mean.
 *
 *   __complete commands         the commands, one per line
 *   __complete flags [COMMAND]  its options as its --help shows them, one a
 *                               line, with the argument's name after a space
 *                               when it takes one ("--target NAME|GLOB"; the
 *                               scripts complete FILE, DIR, NAME|GLOB, KINDS,
 *                               GROUPS); without COMMAND: -h --help --version
 *   __complete targets SPEC     the names --target takes: hosts, switches, the
 *                               vCenter and VMs of SPEC; nothing and no
 *                               diagnostics when SPEC does not load
 *
 * Options are read from the --help text, the one list a user reads: in each
 * line whose first word starts with '-', every word that starts with '-'
 * until the first that is neither an option nor its argument (FILE,
 * NAME|GLOB, KEY=VALUE), so "--target NAME|GLOB plan only ..." gives
 * "--target" and "-v, --verbose" gives both.
 *
 * Exit 0; 1 when SPEC does not load; 64 usage.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gc/graph.h"
#include "gc/probe.h"

/* FILE, NAME|GLOB, KEY=VALUE, N: an option's argument as --help spells it */
static bool arg_word(const char *w, size_t n)
{
	bool upper = false;

	for (size_t i = 0; i < n; i++) {
		if (islower((unsigned char)w[i]))
			return false;
		upper = upper || isupper((unsigned char)w[i]);
	}
	return upper;
}

/* The options of one line of --help, each on its own line of out, with
 * the argument's name when one follows it after a space. */
static void line_flags(struct gc_buf *out, const char *line, size_t len)
{
	size_t i = 0;
	bool open = false; /* after an option and one space: its argument's name */

	while (i < len && line[i] == ' ')
		i++;
	while (i < len) {
		size_t n = strcspn(line + i, " ,\n");

		if (n > len - i)
			n = len - i;
		if (n >= 2 && line[i] == '-' &&
		    isalpha((unsigned char)line[i + (line[i + 1] == '-') + 1])) {
			gc_buf_printf(out, "%s%.*s", out->len > 0 ? "\n" : "",
			              (int)strcspn(line + i, "[= ,\n"), line + i);
			/* "--out FILE", not "--json     JSON instead of ..." */
			open = i + n + 1 < len && line[i + n] == ' ' && line[i + n + 1] != ' ';
		} else if (open && arg_word(line + i, n)) {
			gc_buf_printf(out, " %.*s", (int)n, line + i);
			open = false;
		} else {
			break;
		}
		i += n;
		while (i < len && (line[i] == ' ' || line[i] == ','))
			i++;
	}
}

static void usage_flags(struct gc_buf *out, const char *usage)
{
	const char *p = usage;

	while (*p != '\0') {
		size_t len = strcspn(p, "\n"), lead = strspn(p, " ");

		if (lead > 0 && lead < len && p[lead] == '-')
			line_flags(out, p, len);
		p += len + (p[len] == '\n');
	}
	if (out->len > 0)
		gc_buf_putc(out, '\n');
}

static int targets(const char *spec)
{
	struct gc_cluster *cluster = NULL;
	struct gc_graph *graph = NULL;
	struct gc_diags diags = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf out = GC_BUF_INIT;
	int rc = GC_EXIT_ERROR;

	if (gc_spec_load(&cluster, &diags, spec, &err) != 0 ||
	    gc_graph_build(&graph, cluster, &err) != 0)
		goto out;
	for (size_t i = 0; i < graph->ntargets; i++)
		if (graph->targets[i]->kind != GC_TARGET_GUEST) /* a guest is named as its VM */
			gc_buf_printf(&out, "%s\n", graph->targets[i]->name);
	for (size_t i = 0; i < graph->nvms; i++)
		gc_buf_printf(&out, "%s\n", graph->vms[i].name);
	rc = cli_write(&out) ? GC_EXIT_OK : GC_EXIT_ERROR;
out:
	gc_buf_free(&out);
	gc_diags_free(&diags);
	gc_graph_free(graph);
	gc_cluster_free(cluster);
	return rc;
}

int cmd_complete(int argc, char **argv)
{
	struct gc_buf out = GC_BUF_INIT;
	const struct cli_command *c;
	size_t n;
	int rc;

	if (argc == 2 && strcmp(argv[1], "commands") == 0) {
		c = cli_commands(&n);
		for (size_t i = 0; i < n; i++)
			gc_buf_printf(&out, "%s\n", c[i].name);
	} else if (argc == 2 && strcmp(argv[1], "flags") == 0) {
		gc_buf_puts(&out, "-h\n--help\n--version\n");
	} else if (argc == 3 && strcmp(argv[1], "flags") == 0 &&
	           (c = cli_command_find(argv[2])) != NULL) {
#ifdef GC_CLI_FRONT
		if (strcmp(c->name, "probe") == 0)
			return cli_online(); /* the probe's own text is in the online binary */
		usage_flags(&out, c->usage);
#else
		usage_flags(&out, strcmp(c->name, "probe") == 0 ? gc_probe_usage : c->usage);
#endif
	} else if (argc == 3 && strcmp(argv[1], "targets") == 0) {
		return targets(argv[2]);
	} else {
		return cli_usage_error("__complete", "takes 'commands', 'flags [COMMAND]' or "
		                                     "'targets SPEC'");
	}
	rc = cli_write(&out) ? GC_EXIT_OK : GC_EXIT_ERROR;
	gc_buf_free(&out);
	return rc;
}
