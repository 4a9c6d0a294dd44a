/*
 * main.c - gpuclusterctl's entry point and command table (git.c style).
 *
 * `gpuclusterctl [-h|--help|--version] <command> [options] [args]`.  Each
 * command lives in cmd_<verb>.c and parses its own options; this file only
 * dispatches.  Ctrl-C exits 130 from every command (apply takes SIGINT
 * itself to finish the steps in flight first).
 */
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifndef GC_CLI_FRONT
#include <libxml/parser.h> /* the online program only: the front links no libxml2 */
#endif

#include "cli.h"
#include "gc/exec.h"
#include "gc/graph.h"

static const struct cli_command commands[] = {
	{"plan", cmd_plan, "show what apply would change, in order", cmd_plan_usage},
	{"check", cmd_check, "load and check a spec; print diagnostics", cmd_check_usage},
	{"graph", cmd_graph, "print the resource graph (DOT or JSON)", cmd_graph_usage},
	{"apply", cmd_apply, "observe, plan and carry the plan out", cmd_apply_usage},
	{"unlock", cmd_unlock, "clear the cluster lease a dead apply left (--force)", cmd_unlock_usage},
	{"validate", cmd_validate, "prove the cluster works: read-back, probes, RDMA pairs", cmd_validate_usage},
	{"discover", cmd_discover, "read what the targets are now and print it as a spec", cmd_discover_usage},
	{"probe", cmd_probe, "check this node: RDMA, RoCE QoS, CUDA, bandwidth", cmd_probe_usage},
	{"version", cmd_version, "print the version", cmd_version_usage},
	{"help", cmd_help, "show help for gpuclusterctl or a command", cmd_help_usage},
};

const struct cli_command *cli_commands(size_t *n)
{
	*n = GC_ARRAY_LEN(commands);
	return commands;
}

const struct cli_command *cli_command_find(const char *name)
{
	for (size_t i = 0; i < GC_ARRAY_LEN(commands); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

int cli_usage_error(const char *verb, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "gpuclusterctl%s%s: ", verb ? " " : "", verb ? verb : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'gpuclusterctl %s%s--help' for more information.\n",
		verb ? verb : "", verb ? " " : "");
	return GC_EXIT_USAGE;
}

void cli_put_shown(FILE *f, const char *s, bool multiline)
{
	struct gc_buf b = GC_BUF_INIT;

	gc_buf_put_shown(&b, s, multiline);
	fputs(gc_buf_str(&b), f);
	gc_buf_free(&b);
}

int cli_error(const char *fmt, ...)
{
	struct gc_buf b = GC_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	gc_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	fputs("gpuclusterctl: error: ", stderr);
	cli_put_shown(stderr, gc_buf_str(&b), true);
	fputc('\n', stderr);
	gc_buf_free(&b);
	return GC_EXIT_ERROR;
}

int cli_print_usage(const char *verb)
{
	const struct cli_command *c = cli_command_find(verb);

	if (c != NULL)
		fputs(c->usage, stdout);
	return GC_EXIT_OK;
}

bool cli_color(FILE *f)
{
	const char *nc = getenv("NO_COLOR");

	return isatty(fileno(f)) && (nc == NULL || nc[0] == '\0');
}

bool cli_write(const struct gc_buf *b)
{
	if (b->len > 0 && fwrite(b->ptr, 1, b->len, stdout) != b->len) {
		cli_error("writing the output failed");
		return false;
	}
	if (fflush(stdout) != 0) {
		cli_error("writing the output failed");
		return false;
	}
	return true;
}

int cli_load_spec(struct gc_cluster **out, const char *path)
{
	struct gc_diags diags = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	int rc = gc_spec_load(out, &diags, path, &err);

	gc_diags_format(&b, &diags);
	fputs(gc_buf_str(&b), stderr);
	gc_buf_free(&b);
	if (rc == GC_ESPEC) {
		size_t n = diags.nerrors;

		fprintf(stderr, "gpuclusterctl: %zu error%s in %s\n", n, n == 1 ? "" : "s", path);
	} else if (rc != 0) {
		cli_error("%s", err.msg);
	}
	gc_diags_free(&diags);
	return rc == 0 ? 0 : GC_EXIT_ERROR;
}

int cli_scope(struct gc_graph **out, const struct gc_graph *g, unsigned kinds,
	      const char *const *targets, size_t ntargets, size_t *left_out)
{
	struct gc_error err = GC_ERROR_INIT;
	size_t i, k;

	for (i = 0; i < ntargets; i++) {
		bool found = false;

		for (k = 0; !found && k < g->ntargets; k++)
			found = gc_exec_target_matches(&targets[i], 1, g->targets[k]->name);
		for (k = 0; !found && k < g->nvms; k++)
			found = gc_exec_target_matches(&targets[i], 1, g->vms[k].name);
		if (!found) {
			cli_error("--target '%s' matches no host, switch, vCenter or VM of the spec",
				  targets[i]);
			return GC_EXIT_USAGE;
		}
	}
	if (gc_exec_scope_select(out, g, kinds, targets, ntargets, left_out, &err) != 0)
		return cli_error("%s", err.msg);
	return 0;
}

const char *cli_scope_flags(unsigned kinds, size_t ntargets)
{
	if (kinds != 0 && ntargets > 0)
		return "--only/--target";
	return ntargets > 0 ? "--target" : "--only";
}

/*
 * What Terraform users type: -auto-approve, -out, -target, -parallelism
 * (with or without "=") mean our --yes, --out, --target, --parallelism;
 * plan's -detailed-exitcode is how our plan always exits (0, 2, 1) and is
 * dropped; anywhere else it is refused naming what to use.  argv[0] is the
 * verb.  *out is a copy the caller frees (argc strings).
 */
static int terraform_spellings(int argc, char **argv, char ***out, int *outc)
{
	static const struct {
		const char *tf, *ours;
	} map[] = {{"-auto-approve", "--yes"},
		   {"-out", "--out"},
		   {"-target", "--target"},
		   {"-parallelism", "--parallelism"}};
	char **args = gc_xcalloc((size_t)argc + 1, sizeof(*args));
	int i, n = 0;
	bool plain = false; /* after "--": operands only */

	*out = args;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];
		size_t k;
		bool done = false;

		if (i == 0 || plain || a[0] != '-' || a[1] == '-' || a[1] == '\0' || a[2] == '\0') {
			plain = plain || (i > 0 && strcmp(a, "--") == 0);
			args[n++] = gc_xstrdup(a);
			continue;
		}
		if (strcmp(a, "-detailed-exitcode") == 0) {
			if (strcmp(argv[0], "plan") == 0)
				continue; /* what our plan always does */
			*outc = n;
			return cli_usage_error(argv[0], "-detailed-exitcode is a plan option (our plan "
						 "always exits 0 for no changes, 2 for changes, 1 for an error)");
		}
		for (k = 0; k < GC_ARRAY_LEN(map) && !done; k++) {
			size_t len = strlen(map[k].tf);

			if (strncmp(a, map[k].tf, len) == 0 && (a[len] == '\0' || a[len] == '=')) {
				args[n++] = gc_xasprintf("%s%s", map[k].ours, a + len);
				done = true;
			}
		}
		if (!done)
			args[n++] = gc_xstrdup(a);
	}
	*outc = n;
	return 0;
}

static void print_main_usage(FILE *f)
{
	size_t n;
	const struct cli_command *c = cli_commands(&n);

	fputs("usage: gpuclusterctl [-h | --help] [--version] <command> [<args>]\n\n"
	      "Build and check GPU clusters on virtualized hosts from one YAML spec.\n\n"
	      "Commands:\n",
	      f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "   %-10s %s\n", c[i].name, c[i].summary);
	fputs("\nExit status: 0 success (plan: no changes), 1 failure, 2 the plan has changes,\n"
	      "5 probe: nothing to check, 64 usage, 130 interrupted (Ctrl-C).\n"
	      "See 'gpuclusterctl help <command>' or man gpuclusterctl.\n",
	      f);
}

int cmd_help(int argc, char **argv)
{
	const struct cli_command *c;

	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))
		return cli_print_usage("help");
	if (argc > 2)
		return cli_usage_error("help", "too many arguments");
	if (argc < 2) {
		print_main_usage(stdout);
		return GC_EXIT_OK;
	}
	c = cli_command_find(argv[1]);
	if (c == NULL)
		return cli_usage_error("help", "unknown command '%s'", argv[1]);
	fputs(c->usage, stdout);
	return GC_EXIT_OK;
}

const char cmd_help_usage[] = "usage: gpuclusterctl help [<command>]\n\n"
			      "Show the list of commands, or the help of one command.\n\n"
			      "Options:\n"
			      "  -h, --help   show this help\n";

char *cli_find_beside(const char *const *rel, size_t n)
{
	char self[PATH_MAX], *dir;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		return NULL;
	self[len] = '\0';
	dir = dirname(self);
	for (size_t i = 0; i < n; i++) {
		char *p = gc_xasprintf("%s/%s", dir, rel[i]);

		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	return NULL;
}

static char **saved_argv;

char **cli_argv(void)
{
	return saved_argv;
}

static void on_sigint(int sig)
{
	(void)sig;
	_exit(GC_EXIT_INTERRUPTED); /* the journal is fsync'd; the kernel drops the locks */
}

int main(int argc, char **argv)
{
	const struct cli_command *c;
	size_t n;
	const char *const *names;

	saved_argv = argv;
	/* An inherited SIG_IGN stays (a background job of a script): whoever
	 * started us chose it. */
	if (signal(SIGINT, SIG_IGN) != SIG_IGN)
		signal(SIGINT, on_sigint);
#ifndef GC_CLI_FRONT
	/*
	 * libxml2 wants xmlInitParser() once, from the main thread, before any
	 * thread uses it: the drivers parse XML on parallel workers (esxcli,
	 * vCenter, nvidia-smi, libvirt), and two first uses at once each made
	 * libxml2's global mutex, one of them leaked (LeakSanitizer caught it
	 * in the kvm-pair soak: 40 bytes from xmlNewMutex).
	 */
	xmlInitParser();
#endif

	if (argc < 2) {
		print_main_usage(stderr);
		return GC_EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		print_main_usage(stdout);
		return GC_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0)
		return cmd_version(1, argv + 1);
	if (strcmp(argv[1], "__complete") == 0)
		return cmd_complete(argc - 1, argv + 1);
	c = cli_command_find(argv[1]);
	if (c != NULL && (strcmp(c->name, "plan") == 0 || strcmp(c->name, "apply") == 0)) {
		char **args = NULL;
		int nargs = 0, rc = terraform_spellings(argc - 1, argv + 1, &args, &nargs);

		if (rc == 0)
			rc = c->run(nargs, args);
		for (int i = 0; i < nargs; i++)
			free(args[i]);
		free(args);
		return rc;
	}
	if (c != NULL)
		return c->run(argc - 1, argv + 1);
	{
		const struct cli_command *all = cli_commands(&n);
		const char *v[16];
		const char *hint;

		for (size_t i = 0; i < n && i < GC_ARRAY_LEN(v); i++)
			v[i] = all[i].name;
		names = v;
		hint = gc_did_you_mean(argv[1], names, n < GC_ARRAY_LEN(v) ? n : GC_ARRAY_LEN(v));
		fprintf(stderr, "gpuclusterctl: '%s' is not a gpuclusterctl command", argv[1]);
		if (hint != NULL)
			fprintf(stderr, " (did you mean '%s'?)", hint);
		fputs("\nSee 'gpuclusterctl --help'.\n", stderr);
	}
	return GC_EXIT_USAGE;
}
