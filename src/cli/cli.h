/*
 * cli.h - what the command files of src/cli share: the command table entry,
 * exit codes, and the few helpers that print (only src/cli prints).
 *
 * Adding a verb: write cmd_<verb>.c with `int cmd_<verb>(int argc, char **argv)`
 * (argv[0] is the verb), declare it below, add one line to commands[] in
 * main.c and the file to CMakeLists.txt.
 */
#ifndef GC_CLI_H
#define GC_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "gc/spec.h"
#include "gc/util.h"

/* Exit codes, one contract for every command (the man page's EXIT STATUS;
 * plan's 0/2/1 like `terraform plan -detailed-exitcode`). */
#define GC_EXIT_OK 0            /* success, no changes */
#define GC_EXIT_ERROR 1         /* failure (spec, I/O, remote, a failed check) */
#define GC_EXIT_CHANGES 2       /* success, the plan has changes */
#define GC_EXIT_NOTHING 5       /* validate, probe: nothing was checked (GC_PROBE_EXIT_NOTHING) */
#define GC_EXIT_USAGE 64        /* command-line usage error (EX_USAGE) */
#define GC_EXIT_INTERRUPTED 130 /* SIGINT (128 + 2): main.c for all, apply its own way */

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary; /* one line for `help` */
	const char *usage;   /* full --help text */
};

/* The arguments main() was given, untouched (main.c): what the front binary
 * passes on to gpuclusterctl-online. */
char **cli_argv(void);
/* The first of the paths rel[0..n), relative to the directory of the
 * running program, that is an executable file (caller frees), or NULL. */
char *cli_find_beside(const char *const *rel, size_t n);
/* In the front binary (front.c): become gpuclusterctl-online with the same
 * arguments; returns only when that fails (reported, GC_EXIT_ERROR). */
int cli_online(void);

/* The command table (main.c). */
const struct cli_command *cli_commands(size_t *n);
const struct cli_command *cli_command_find(const char *name);

int cmd_plan(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_unlock(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_discover(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_complete(int argc, char **argv); /* hidden: `__complete` for completions/ */

extern const char cmd_plan_usage[];
extern const char cmd_apply_usage[];
extern const char cmd_unlock_usage[];
extern const char cmd_validate_usage[];
extern const char cmd_discover_usage[];
extern const char cmd_probe_usage[];
extern const char cmd_check_usage[];
extern const char cmd_graph_usage[];
extern const char cmd_version_usage[];
extern const char cmd_help_usage[];

/* "gpuclusterctl <verb>: <message>" on stderr, then "usage:" hint; returns GC_EXIT_USAGE. */
int cli_usage_error(const char *verb, const char *fmt, ...) GC_PRINTF(2, 3);
/* "gpuclusterctl: error: <message>" on stderr (shown: the message may quote
 * a remote host); returns GC_EXIT_ERROR. */
int cli_error(const char *fmt, ...) GC_PRINTF(1, 2);
/* Write s to f as gc_buf_put_shown() shows it: what a remote host said
 * cannot drive the terminal. */
void cli_put_shown(FILE *f, const char *s, bool multiline);
/* apply_report.c: apply's summary (text), its -v round-trip counters
 * (stderr) and its --json report (stdout) */
struct gc_exec_report;
struct gc_graph;
void cli_apply_print_summary(FILE *f, const struct gc_exec_report *rep, const struct gc_graph *g);
void cli_apply_print_round_trips(const struct gc_exec_report *rep);
void cli_apply_print_json(const struct gc_exec_report *rep, int status);
/* Print a command's --help text to stdout; returns GC_EXIT_OK. */
int cli_print_usage(const char *verb);
/* Colour on this stream: a TTY and NO_COLOR unset or empty. */
bool cli_color(FILE *f);
/* Write a whole buffer to stdout; false on a write error (reported). */
bool cli_write(const struct gc_buf *b);

/*
 * Load and check a spec.  Diagnostics (warnings too) go to stderr exactly as
 * gc_diags_format() renders them; on errors also "gpuclusterctl: N errors
 * in SPEC".  Returns 0 with *out set, or GC_EXIT_ERROR.
 */
int cli_load_spec(struct gc_cluster **out, const char *path);

/*
 * --only KINDS and --target NAME|GLOB (repeatable): the part of g the command
 * acts on, in *out (borrowing from g).  Every pattern must match a target or
 * a VM of the spec: else an error naming it, and GC_EXIT_USAGE.  *out is g's
 * copy when neither option was given.
 */
struct gc_graph;
int cli_scope(struct gc_graph **out, const struct gc_graph *g, unsigned kinds,
	      const char *const *targets, size_t ntargets, size_t *left_out);
/* --only: "esxi,switch" -> bitmask of target kinds; -1 on an unknown word. */
int cli_parse_kinds(unsigned *kinds, const char *list);
/* What a "left out" message names: "--only", "--target" or "--only/--target". */
const char *cli_scope_flags(unsigned kinds, size_t ntargets);

/* ---------------------------------------------------------------- saved plans (saved_plan.c) */

struct json_object;
struct gc_plan;
struct gc_exec_report;

struct cli_saved_plan {
	struct json_object *root;         /* owns everything below */
	const char *spec;                 /* absolute path */
	const char *spec_hash;
	unsigned kinds;                   /* --only of the plan, 0: all */
	const char **targets;             /* --target patterns of the plan */
	size_t ntargets;
	struct json_object *fingerprints; /* target name -> fingerprint */
	struct json_object *plan;         /* `plan --json` of the plan */
};

/* "fnv1a64:<hex>" of a file's bytes; GC_EXIT_ERROR (reported) on failure. */
int cli_spec_hash(char **out, const char *path);
/* A plan file rather than a spec (its first non-blank byte is '{'). */
bool cli_is_plan_file(const char *path);
int cli_plan_write(const char *path, const char *spec, unsigned kinds, const char *const *targets,
		   size_t ntargets, const struct gc_exec_report *rep, const struct gc_plan *plan);
int cli_plan_read(struct cli_saved_plan *out, const char *path);
/* The same from the file's bytes, printing nothing: -1 when they are not a
 * plan file of this version (fuzz/fuzz_saved_plan.c feeds it anything). */
int cli_plan_parse(struct cli_saved_plan *out, const char *text, size_t len);
/* Per target of g: the saved fingerprint or NULL; caller frees the array. */
const char **cli_plan_fingerprints(const struct cli_saved_plan *p, const struct gc_graph *g);
/* The plan equals the saved one (as `plan --json` renders both). */
bool cli_plan_same(const struct cli_saved_plan *p, const struct gc_plan *plan);
void cli_saved_plan_free(struct cli_saved_plan *p);

/* Where apply keeps its journal and lock by default: .gpuclusterctl/ beside
 * the spec.  Caller frees. */
char *cli_default_state_dir(const char *spec);

#endif
