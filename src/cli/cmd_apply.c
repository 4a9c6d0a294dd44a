/*
 * cmd_apply.c - `gpuclusterctl apply`: observe, plan, carry out, report.
 *
 * Everything happens in src/exec; this file parses options, shows the plan
 * it is about to carry out, prints progress events (a line per target kept
 * up to date on a TTY, plain lines otherwise), has the outcome printed
 * (apply_report.c: the summary, or the --json report) and picks the exit
 * code.  SIGINT, SIGTERM (a service manager, a CI job
 * cancelled, kill(1)) or SIGHUP (the operator's terminal or SSH session gone)
 * asks the executor to finish the actions in flight, start no new ones and
 * take the hosts whose window it stopped out of maintenance mode (exit 130).
 * A second signal of any of them stops at once, but first prints what the
 * events told us: the hosts left in maintenance mode, the VMs it powered
 * off and not yet on again, then the per-target summary, then exits 130.  They are taken by a thread of their
 * own (sigwait), so the printing runs outside signal context.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gc/exec.h"
#include "gc/graph.h"
#include "gc/plan.h"
#include "gc/ssh.h"

static volatile sig_atomic_t interrupted;
/* The approval question is on the terminal: a signal cancels it (approve()
 * says so), there are no steps in flight to finish. */
static volatile sig_atomic_t asking;

/* What the events told us of one target: enough for a summary when a
 * second Ctrl-C does not wait for the executor's report. */
struct tally {
	size_t planned; /* its actions in the plan */
	size_t done, failed, skipped;
	char *error;     /* first failure */
	char *running;   /* the action in flight, or NULL */
	bool in_maint;   /* in maintenance mode (entered, or planned to leave) */
};

/* A VM the plan powers on (after a window, or a change of its own), or
 * moves back to its host after the window (move): what the events told us
 * of it, for the second Ctrl-C. */
struct vmtally {
	const char *vm;     /* the plan's */
	size_t target;      /* graph index of its vCenter or libvirt */
	bool move;          /* a vMotion pair, not a power-off and power-on */
	bool off_started;   /* its power-off (move away) went out (may be in flight) */
	bool off_done;
	bool on_done;       /* powered on (moved back): its step, or the recovery's */
};

/* A MIGRATE that returns its VM to the host it left (the pair's second half). */
static bool migrates_back(const struct gc_action *a)
{
	return a->kind == GC_ACT_MIGRATE && a->vm != NULL && a->host != NULL &&
	       a->dest_host != NULL && strcmp(a->dest_host, a->host) == 0;
}

struct ui {
	bool tty;
	bool verbose;
	bool json;
	FILE *f;
	size_t ntargets;
	char **lines; /* TTY: current line per target (graph index) */
	size_t drawn; /* lines drawn last time */
	pthread_mutex_t mu; /* events vs the second Ctrl-C */
	struct tally *tally; /* per target (graph index) */
	struct vmtally *vms; /* sorted by (target, vm) */
	size_t nvms;
};

static const char *kind_word(const struct gc_action *a)
{
	return gc_action_kind_name(a->kind);
}

static void redraw(struct ui *u, const struct gc_graph *g)
{
	size_t i;

	if (u->drawn > 0)
		fprintf(u->f, "\033[%zuA", u->drawn);
	for (i = 0; i < u->ntargets; i++)
		fprintf(u->f, "\r\033[K%-12s %s\n", g->targets[i]->name, u->lines[i] ? u->lines[i] : "");
	u->drawn = u->ntargets;
	fflush(u->f);
}

struct evctx {
	struct ui *u;
	const struct gc_graph *g;
};

static int vmtally_cmp(const void *pa, const void *pb)
{
	const struct vmtally *a = pa, *b = pb;

	if (a->target != b->target)
		return a->target < b->target ? -1 : 1;
	if (a->move != b->move)
		return a->move ? 1 : -1;
	return strcmp(a->vm, b->vm);
}

/* The VM `vm` (of length len) on graph target `target`, or NULL. */
static struct vmtally *vmtally_find(struct ui *u, size_t target, const char *vm, size_t len,
				    bool move)
{
	char name[256];
	struct vmtally key;

	if (u->nvms == 0 || len >= sizeof(name))
		return NULL;
	memcpy(name, vm, len);
	name[len] = '\0';
	key.vm = name;
	key.target = target;
	key.move = move;
	return bsearch(&key, u->vms, u->nvms, sizeof(*u->vms), vmtally_cmp);
}

/* The recovery's note "<prefix>VM<infix>...": its VM's tally. */
static struct vmtally *noted_vm(struct ui *u, const struct gc_exec_event *ev, const char *prefix,
				const char *infix, bool move)
{
	size_t n = strlen(prefix);
	const char *end;

	if (strncmp(ev->message, prefix, n) != 0 || (end = strstr(ev->message + n, infix)) == NULL)
		return NULL;
	return vmtally_find(u, ev->target->index, ev->message + n, (size_t)(end - ev->message - n),
			    move);
}

/* The VM steps of an event: its VM's tally (power-off, power-on, the
 * vMotion away and back, or the recovery's notes "powered VM back on
 * after ..." and "moved VM back to ..."). */
static void tally_vm(struct ui *u, const struct gc_exec_event *ev)
{
	const struct gc_action *a = ev->action;
	struct vmtally *v;
	bool move;

	if (ev->kind == GC_EV_NOTE) {
		if (ev->message != NULL &&
		    ((v = noted_vm(u, ev, "powered ", " back on after ", false)) != NULL ||
		     (v = noted_vm(u, ev, "moved ", " back to ", true)) != NULL))
			v->on_done = true;
		return;
	}
	if (a == NULL || a->vm == NULL ||
	    (a->kind != GC_ACT_POWER_OFF && a->kind != GC_ACT_POWER_ON && a->kind != GC_ACT_MIGRATE))
		return;
	move = a->kind == GC_ACT_MIGRATE;
	if ((v = vmtally_find(u, ev->target->index, a->vm, strlen(a->vm), move)) == NULL)
		return;
	if ((a->kind == GC_ACT_POWER_ON || migrates_back(a)) && ev->kind == GC_EV_DONE)
		v->on_done = true;
	else if (a->kind != GC_ACT_POWER_ON && !migrates_back(a) && ev->kind == GC_EV_START)
		v->off_started = true;
	else if (a->kind != GC_ACT_POWER_ON && !migrates_back(a) && ev->kind == GC_EV_DONE)
		v->off_done = true;
}

/* Hosts that are in maintenance mode before anything runs: the plan
 * leaves maintenance without entering it.  The VMs it powers on. */
static void tally_plan(struct ui *u, const struct gc_plan *p)
{
	size_t i;

	for (i = 0; i < p->nactions; i++) {
		const struct gc_action *a = p->actions[i];

		u->tally[a->target->index].planned++;
		if (a->kind == GC_ACT_EXIT_MAINTENANCE)
			u->tally[a->target->index].in_maint = true;
		if ((a->kind == GC_ACT_POWER_ON && a->vm != NULL) || migrates_back(a))
			u->nvms++;
	}
	u->vms = gc_xcalloc(u->nvms ? u->nvms : 1, sizeof(*u->vms));
	u->nvms = 0;
	for (i = 0; i < p->nactions; i++) {
		const struct gc_action *a = p->actions[i];

		if ((a->kind == GC_ACT_POWER_ON && a->vm != NULL) || migrates_back(a)) {
			u->vms[u->nvms].vm = a->vm;
			u->vms[u->nvms].move = a->kind == GC_ACT_MIGRATE;
			u->vms[u->nvms++].target = a->target->index;
		}
	}
	qsort(u->vms, u->nvms, sizeof(*u->vms), vmtally_cmp);
	for (i = 0; i < p->nactions; i++) {
		const struct gc_action *a = p->actions[i];

		if (a->kind == GC_ACT_ENTER_MAINTENANCE)
			u->tally[a->target->index].in_maint = false;
	}
}

static void tally_event(struct ui *u, const struct gc_exec_event *ev)
{
	struct tally *t;
	struct gc_buf b = GC_BUF_INIT;

	if (ev->kind == GC_EV_PLANNED) {
		tally_plan(u, ev->plan);
		return;
	}
	if (ev->target == NULL)
		return;
	tally_vm(u, ev);
	t = &u->tally[ev->target->index];
	switch (ev->kind) {
	case GC_EV_START:
		gc_action_describe(&b, ev->action);
		free(t->running);
		t->running = gc_buf_take(&b);
		/* from the moment the command may have gone out (a batch's
		 * events end together, after its one exec) */
		if (ev->action->kind == GC_ACT_ENTER_MAINTENANCE)
			t->in_maint = true;
		return;
	case GC_EV_DONE:
		t->done++;
		if (ev->action->kind == GC_ACT_EXIT_MAINTENANCE)
			t->in_maint = false;
		break;
	case GC_EV_FAILED:
		t->failed++;
		/* the host said no: not in maintenance because of us (exec's view) */
		if (ev->action != NULL && ev->action->kind == GC_ACT_ENTER_MAINTENANCE)
			t->in_maint = false;
		if (t->error == NULL && ev->message != NULL)
			t->error = gc_xstrdup(ev->message);
		break;
	case GC_EV_SKIPPED:
		t->skipped++;
		return;
	case GC_EV_NOTE:
		/* the recovery's exit (after a failure or the first Ctrl-C) is
		 * not a plan action */
		if (ev->message != NULL && strncmp(ev->message, "left maintenance mode after the ",
						   strlen("left maintenance mode after the ")) == 0)
			t->in_maint = false;
		return;
	case GC_EV_CONNECT:
	case GC_EV_OBSERVED:
	case GC_EV_RETRY:
	case GC_EV_WARN:
	case GC_EV_WAVE:
	case GC_EV_PLANNED:
		return;
	}
	free(t->running);
	t->running = NULL;
}

static void show_event(struct evctx *c, const struct gc_exec_event *ev);

static void on_event(void *arg, const struct gc_exec_event *ev)
{
	struct evctx *c = arg;
	struct ui *u = c->u;

	pthread_mutex_lock(&u->mu);
	tally_event(u, ev);
	show_event(c, ev);
	pthread_mutex_unlock(&u->mu);
}

/* ---------------------------------------------------------------- Ctrl-C */

struct sigctx {
	struct evctx *ec;
	sigset_t set;
	volatile bool finished; /* the run is over: the next signal only ends the thread */
	int wake;               /* a signal of set: sigint_stop sends it to end the thread */
};

/* The second Ctrl-C: the steps in flight are abandoned.  Hosts in
 * maintenance mode first, then what each target got, then exit 130. */
static void abandon(struct evctx *ec)
{
	struct ui *u = ec->u;
	/* --json: standard output holds a report or nothing, never this */
	FILE *out = u->json ? stderr : stdout;
	size_t i, done = 0, failed = 0, skipped = 0, unreached = 0;

	pthread_mutex_lock(&u->mu); /* held until exit: no event prints after this */
	if (u->tty)
		fputs("\n", u->f);
	fflush(u->f);
	for (i = 0; i < u->ntargets; i++) {
		const struct tally *t = &u->tally[i];

		if (!t->in_maint)
			continue;
		fprintf(out, "!!! host '%s' is LEFT IN MAINTENANCE MODE: interrupted twice",
			ec->g->targets[i]->name);
		if (t->running != NULL) {
			fputs(" during '", out);
			cli_put_shown(out, t->running, true);
			fputc('\'', out);
		}
		fputs("; re-run apply to finish (the journal remembers)\n", out);
	}
	/* a VM this run powered off whose power-on (its step, or the
	 * recovery's) did not come: the next apply powers it on */
	for (i = 0; i < u->nvms; i++) {
		const struct vmtally *v = &u->vms[i];

		if (!v->off_started || v->on_done)
			continue;
		if (v->move) { /* it runs: not loud */
			fprintf(out, "VM '%s' %s where vMotion moved it: interrupted twice; re-run "
				"apply to move it back\n", v->vm, v->off_done ? "runs" : "may run");
			continue;
		}
		fprintf(out,
			"!!! VM '%s' %s LEFT POWERED OFF: interrupted twice%s; re-run apply to "
			"power it on\n",
			v->vm, v->off_done ? "is" : "may be", v->off_done ? "" : " during its power-off");
	}
	fputs("\nSummary (interrupted twice: the steps in flight were abandoned):\n", out);
	for (i = 0; i < u->ntargets; i++) {
		const struct tally *t = &u->tally[i];
		/* neither done, failed, skipped nor in flight: the steps after an
		 * abandoned one, and those of waves that never started */
		size_t seen = t->done + t->failed + t->skipped + (t->running != NULL);
		size_t left = t->planned > seen ? t->planned - seen : 0;

		done += t->done;
		failed += t->failed;
		skipped += t->skipped;
		unreached += left;
		if (t->done + t->failed + t->skipped + left == 0 && t->running == NULL &&
		    t->error == NULL)
			continue;
		fprintf(out, "  %-12s %-8s %zu done, %zu failed, %zu skipped", ec->g->targets[i]->name,
			gc_target_kind_name(ec->g->targets[i]->kind), t->done, t->failed, t->skipped);
		if (left > 0)
			fprintf(out, ", %zu not reached", left);
		if (t->running != NULL) {
			fputs("; abandoned: ", out);
			cli_put_shown(out, t->running, true);
		}
		if (t->error != NULL) {
			fputs(": ", out);
			cli_put_shown(out, t->error, true);
		}
		fputc('\n', out);
	}
	fprintf(out, "\nApply interrupted: %zu actions done, %zu failed, %zu skipped, %zu not reached.\n",
		done, failed, skipped, unreached);
	fflush(out);
	fputs("gpuclusterctl: error: interrupted twice: stopped with steps in flight\n", stderr);
	fflush(stderr);
	_exit(GC_EXIT_INTERRUPTED); /* the journal is fsync'd; the kernel drops the lock */
}

static void *sigint_thread(void *arg)
{
	struct sigctx *sc = arg;
	int sig;

	for (;;) {
		if (sigwait(&sc->set, &sig) != 0 || sc->finished)
			return NULL;
		if (!interrupted) {
			interrupted = 1;
			if (!sc->ec->u->json && !asking) {
				struct ui *u = sc->ec->u;
				const char *then = "";

				pthread_mutex_lock(&u->mu);
				for (size_t i = 0; i < u->ntargets; i++)
					if (u->tally[i].in_maint)
						then = ", then taking hosts out of maintenance mode";
				if (sig == SIGINT)
					fprintf(u->f, "gpuclusterctl: interrupted: finishing the steps in "
						"flight%s (Ctrl-C again stops at once)\n", then);
				else
					fprintf(u->f,
						"gpuclusterctl: %s: finishing the steps in flight%s (a "
						"second signal or Ctrl-C stops at once)\n",
						sig == SIGTERM ? "terminated (SIGTERM)"
							       : "hung up (SIGHUP)", then);
				fflush(u->f);
				if (u->tty)
					u->drawn = 0;
				pthread_mutex_unlock(&u->mu);
			}
			continue;
		}
		abandon(sc->ec);
	}
}

static void show_event(struct evctx *c, const struct gc_exec_event *ev)
{
	struct ui *u = c->u;
	struct gc_buf b = GC_BUF_INIT, shown = GC_BUF_INIT;
	const char *name = ev->target ? ev->target->name : "";

	if (u->json)
		return;
	switch (ev->kind) {
	case GC_EV_PLANNED:
		if (!gc_plan_empty(ev->plan)) {
			gc_plan_render_text(&b, ev->plan, cli_color(stdout) ? GC_RENDER_COLOR : 0);
			fputs(gc_buf_str(&b), stdout);
			fputc('\n', stdout);
			fflush(stdout);
		}
		gc_buf_free(&b);
		return;
	case GC_EV_WAVE:
		if (!u->tty)
			fprintf(u->f, "wave %zu\n", ev->wave + 1);
		return;
	case GC_EV_CONNECT:
		gc_buf_puts(&b, "observing");
		break;
	case GC_EV_OBSERVED:
		gc_buf_puts(&b, "observed");
		break;
	case GC_EV_START:
		gc_action_describe(&b, ev->action);
		gc_buf_puts(&b, " ...");
		break;
	case GC_EV_DONE:
		gc_action_describe(&b, ev->action);
		gc_buf_puts(&b, " done");
		break;
	case GC_EV_FAILED:
		if (ev->action)
			gc_action_describe(&b, ev->action);
		else
			gc_buf_puts(&b, "observe");
		gc_buf_printf(&b, " FAILED: %s", ev->message ? ev->message : "");
		break;
	case GC_EV_SKIPPED:
		gc_buf_printf(&b, "%s skipped: %s", kind_word(ev->action), ev->message ? ev->message : "");
		if (ev->action->resource_id)
			gc_buf_printf(&b, " (%s)", ev->action->resource_id);
		break;
	case GC_EV_RETRY:
		gc_buf_printf(&b, "retrying after: %s", ev->message ? ev->message : "");
		break;
	case GC_EV_WARN:
		fprintf(u->f, "%s: warning: ", ev->target ? name : "gpuclusterctl");
		cli_put_shown(u->f, ev->message, true);
		fputc('\n', u->f);
		fflush(u->f);
		gc_buf_free(&b);
		if (u->tty)
			u->drawn = 0; /* the warning scrolled the target lines */
		return;
	case GC_EV_NOTE:
		if (!u->verbose && !u->tty) {
			gc_buf_free(&b);
			return;
		}
		gc_buf_puts(&b, ev->message ? ev->message : "");
		break;
	}
	/* messages quote remote hosts: shown, never obeyed; a TTY line stays
	 * one line, or the redraw would lose its place */
	gc_buf_put_shown(&shown, gc_buf_str(&b), !(u->tty && ev->target != NULL));
	gc_buf_free(&b);
	if (u->tty && ev->target != NULL) {
		free(u->lines[ev->target->index]);
		u->lines[ev->target->index] = gc_buf_take(&shown);
		redraw(u, c->g);
	} else {
		fprintf(u->f, "%s: %s\n", ev->target ? name : "gpuclusterctl", gc_buf_str(&shown));
		fflush(u->f);
	}
	gc_buf_free(&shown);
}

static bool parse_uint(unsigned *out, const char *s, unsigned min, unsigned max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v < min || v > max)
		return false;
	*out = (unsigned)v;
	return true;
}

char *cli_default_state_dir(const char *spec)
{
	const char *slash = strrchr(spec, '/');

	if (slash == NULL)
		return gc_xstrdup(".gpuclusterctl");
	return gc_xasprintf("%.*s/.gpuclusterctl", (int)(slash - spec), spec);
}

/* ---------------------------------------------------------------- approval */

struct approval {
	bool yes;                         /* --yes / --auto-approve */
	const struct cli_saved_plan *saved; /* apply FILE */
	bool declined, differs;
	bool cancelled; /* Ctrl-C (or SIGTERM, SIGHUP) at the question */
};

/* One line from the terminal, or false on end of file, an error or a signal
 * (the signal thread sets `interrupted`; this thread has them blocked, so a
 * plain read would wait on for the line). */
static bool read_answer(char *line, size_t n)
{
	struct pollfd p = {STDIN_FILENO, POLLIN, 0};

	while (!interrupted) {
		int r = poll(&p, 1, 100);

		if (r < 0 && errno != EINTR)
			return false;
		if (r > 0)
			return fgets(line, (int)n, stdin) != NULL && !interrupted;
	}
	return false;
}

/* Called once the plan is shown, before anything changes: a saved plan must
 * be this very plan; else --yes, or the operator types "yes". */
static bool approve(void *arg, const struct gc_plan *p)
{
	struct approval *ap = arg;
	char line[64];

	if (ap->saved != NULL) {
		ap->differs = !cli_plan_same(ap->saved, p);
		return !ap->differs;
	}
	if (ap->yes)
		return true;
	fputs("Do you want to perform these actions?\n"
	      "  Only 'yes' will be accepted to approve.\n\n"
	      "  Enter a value: ", stdout);
	fflush(stdout);
	asking = 1;
	if (!read_answer(line, sizeof(line)))
		line[0] = '\0';
	asking = 0;
	line[strcspn(line, "\r\n")] = '\0';
	ap->cancelled = interrupted;
	ap->declined = strcmp(line, "yes") != 0;
	return !ap->declined;
}

struct apply_args {
	struct gc_exec_opts *o;
	struct ui *u;
	bool *yes;
	char *targets[64];
	size_t ntargets;
	const char *state_dir, *spec;
	unsigned reboot_s, verify_s;
};

/* Apply's options: -1 when the apply goes on, else the exit code (usage, --help). */
static int parse_args(struct apply_args *a, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"only", required_argument, NULL, 'o'},
		{"target", required_argument, NULL, 't'},
		{"yes", no_argument, NULL, 'y'},
		{"auto-approve", no_argument, NULL, 'y'},
		{"parallelism", required_argument, NULL, 'p'},
		{"fail-fast", no_argument, NULL, 'F'},
		{"continue-on-error", no_argument, NULL, 'C'},
		{"verify-timeout", required_argument, NULL, 'V'},
		{"trust-new-host-keys", no_argument, NULL, 'T'},
		{"known-hosts", required_argument, NULL, 'k'},
		{"state-dir", required_argument, NULL, 's'},
		{"reboot-timeout", required_argument, NULL, 'r'},
		{"json", no_argument, NULL, 'j'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hv", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (cli_parse_kinds(&a->o->kinds, optarg) != 0)
				return cli_usage_error("apply", "--only takes a comma list of esxi, switch, vcenter, guest, kvm, libvirt; got '%s'", optarg);
			break;
		case 'y':
			*a->yes = true;
			break;
		case 't':
			if (a->ntargets == GC_ARRAY_LEN(a->targets))
				return cli_usage_error("apply", "at most %zu --target options", GC_ARRAY_LEN(a->targets));
			a->targets[a->ntargets++] = optarg;
			break;
		case 'p':
			if (!parse_uint(&a->o->parallelism, optarg, 1, 4096))
				return cli_usage_error("apply", "--parallelism takes a number from 1 to 4096; got '%s'", optarg);
			break;
		case 'F':
			a->o->fail_fast = true;
			break;
		case 'C':
			a->o->continue_on_error = true;
			break;
		case 'V':
			if (!parse_uint(&a->verify_s, optarg, 1, 86400))
				return cli_usage_error("apply", "--verify-timeout takes seconds from 1 to 86400; got '%s'", optarg);
			break;
		case 'T':
			a->o->drv.trust_new_host_keys = true;
			break;
		case 'k':
			a->o->drv.known_hosts = optarg;
			break;
		case 's':
			a->state_dir = optarg;
			break;
		case 'r':
			if (!parse_uint(&a->reboot_s, optarg, 1, 86400))
				return cli_usage_error("apply", "--reboot-timeout takes seconds from 1 to 86400; got '%s'", optarg);
			break;
		case 'j':
			a->u->json = true;
			break;
		case 'v':
			a->u->verbose = true;
			break;
		case 'h':
			return cli_print_usage("apply");
		default:
			return cli_usage_error("apply", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("apply", optind >= argc ? "missing SPEC" : "too many arguments");
	a->spec = argv[optind];
	return -1;
}

/* The outcome in words (without --json): the summary table, the totals, what
 * the scope left out, the error, and with -v the counters. */
static void print_text_result(const struct apply_args *a, const struct gc_exec_report *rep,
			      const struct gc_graph *g, int rc, const struct gc_error *err,
			      size_t left_out, const struct gc_ssh_stats *st)
{
	if (rep->plan != NULL && rep->done + rep->failed + rep->skipped == 0 && rc == 0) {
		if (left_out > 0 && a->ntargets > 0)
			printf("No changes on the selected targets (%s; %zu resources on other "
			       "targets were left out).\n", cli_scope_flags(a->o->kinds, a->ntargets), left_out);
		else if (left_out > 0)
			printf("No changes on the selected targets (--only; %zu resources on other "
			       "target kinds were left out).\n", left_out);
		else
			fputs("No changes: the cluster matches the spec.\n", stdout);
	} else if (rep->plan != NULL && rep->done + rep->failed + rep->skipped > 0) {
		cli_apply_print_summary(stdout, rep, g);
		printf("\n%s: %zu actions done, %zu failed, %zu skipped.\n",
		       rc == 0 ? "Apply complete" : rc == GC_EINTR ? "Apply interrupted" : "Apply FAILED",
		       rep->done, rep->failed, rep->skipped);
		if (left_out > 0 && a->ntargets > 0)
			printf("(%s: %zu resources on other targets were left out.)\n",
			       cli_scope_flags(a->o->kinds, a->ntargets), left_out);
		else if (left_out > 0)
			printf("(--only: %zu resources on other target kinds were left out.)\n",
			       left_out);
	}
	if (rc != 0)
		cli_error("%s", err->msg);
	if (a->u->verbose) {
		fprintf(stderr,
			"gpuclusterctl: %llu changing commands; SSH: %llu connections, %llu commands, "
			"%llu shells; observe %.2f s, apply %.2f s, cluster lease %.2f s\n",
			(unsigned long long)rep->changing_commands, (unsigned long long)st->connections,
			(unsigned long long)st->commands, (unsigned long long)st->shells, rep->observe_s,
			rep->apply_s, rep->lease_s);
		cli_apply_print_round_trips(rep);
		if (rep->lease_taken + rep->lease_cleared > 0 && rep->lease_taken_in_step > 0)
			fprintf(stderr, "gpuclusterctl: cluster lease taken on %zu targets (%zu in their "
				"observation, %zu in their first step), cleared on %zu (%zu with their last "
				"step)\n", rep->lease_taken, rep->lease_taken_observing,
				rep->lease_taken_in_step, rep->lease_cleared, rep->lease_cleared_last_step);
		else if (rep->lease_taken + rep->lease_cleared > 0)
			fprintf(stderr, "gpuclusterctl: cluster lease taken on %zu targets (%zu in their "
				"observation), cleared on %zu (%zu with their last step)\n", rep->lease_taken,
				rep->lease_taken_observing, rep->lease_cleared, rep->lease_cleared_last_step);
	}
}

/* apply FILE: take the saved plan's spec, scope and fingerprints.  -1 when
 * the apply goes on (*spec is the plan's spec), else the exit code. */
static int use_saved_plan(struct apply_args *args, struct approval *ap, struct cli_saved_plan *saved,
			  const char **spec, char **hash)
{
	if (args->o->kinds != 0 || args->ntargets > 0)
		return cli_usage_error("apply", "a saved plan carries its own --only and --target");
	if (cli_plan_read(saved, *spec) != 0)
		return GC_EXIT_ERROR;
	ap->saved = saved;
	*spec = saved->spec;
	args->o->kinds = saved->kinds;
	args->ntargets = saved->ntargets < GC_ARRAY_LEN(args->targets) ? saved->ntargets
								       : GC_ARRAY_LEN(args->targets);
	for (size_t i = 0; i < args->ntargets; i++)
		args->targets[i] = (char *)saved->targets[i];
	if (cli_spec_hash(hash, *spec) != 0 || strcmp(*hash, saved->spec_hash) != 0) {
		if (*hash != NULL)
			cli_error("the spec '%s' changed since the plan was saved: nothing was "
				  "changed; run plan --out again and review it", *spec);
		return GC_EXIT_ERROR;
	}
	return -1;
}

/* The progress display and the run's event hook, for graph g. */
static void ui_start(struct ui *u, struct evctx *ec, struct gc_exec_opts *o, const struct gc_graph *g)
{
	u->f = stderr;
	u->tty = !u->json && isatty(fileno(stderr)) && getenv("TERM") &&
		 strcmp(getenv("TERM"), "dumb") != 0;
	u->ntargets = g->ntargets;
	u->lines = gc_xcalloc(g->ntargets ? g->ntargets : 1, sizeof(*u->lines));
	ec->u = u;
	ec->g = g;
	o->event = on_event;
	o->event_arg = ec;
	pthread_mutex_init(&u->mu, NULL);
	u->tally = gc_xcalloc(g->ntargets ? g->ntargets : 1, sizeof(*u->tally));
}

static void ui_free(struct ui *u)
{
	for (size_t i = 0; i < u->ntargets; i++) {
		free(u->lines[i]);
		free(u->tally[i].error);
		free(u->tally[i].running);
	}
	free(u->lines);
	free(u->tally);
	free(u->vms);
	pthread_mutex_destroy(&u->mu);
}

/* SIGINT, SIGTERM and SIGHUP blocked here and in every thread the run starts:
 * only sigint_thread takes them.  One that whoever started us ignores stays
 * ignored (nohup's SIGHUP, a script's background job's SIGINT): a blocked
 * signal is never discarded, so sigwait would take it.  False when no thread
 * could start: then Ctrl-C exits 130 at once (main.c) and the others end the
 * process. */
static bool sigint_start(struct sigctx *sc, struct evctx *ec, pthread_t *th)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction now;

	sc->ec = ec;
	sc->finished = false;
	sc->wake = 0;
	sigemptyset(&sc->set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		if (sigaction(sigs[i], NULL, &now) == 0 && now.sa_handler == SIG_IGN)
			continue;
		sigaddset(&sc->set, sigs[i]);
		if (sc->wake == 0)
			sc->wake = sigs[i];
	}
	if (sc->wake == 0)
		return false;
	pthread_sigmask(SIG_BLOCK, &sc->set, NULL);
	if (pthread_create(th, NULL, sigint_thread, sc) == 0)
		return true;
	pthread_sigmask(SIG_UNBLOCK, &sc->set, NULL);
	return false;
}

static void sigint_stop(struct sigctx *sc, pthread_t th)
{
	sc->finished = true;
	pthread_kill(th, sc->wake);
	pthread_join(th, NULL);
}

/* The spec's graph, and the part of it that --only and --target leave
 * (*g; *full keeps the whole one then, else NULL); 0 or the exit code. */
static int load_graph(const struct apply_args *a, const char *spec, struct gc_cluster **cluster,
		      struct gc_graph **full, struct gc_graph **g, size_t *left_out)
{
	struct gc_error err = GC_ERROR_INIT;

	if (cli_load_spec(cluster, spec) != 0)
		return GC_EXIT_ERROR;
	if (gc_graph_build(full, *cluster, &err) != 0)
		return cli_error("%s", err.msg);
	if (a->o->kinds != 0 || a->ntargets > 0)
		return cli_scope(g, *full, a->o->kinds, (const char *const *)a->targets, a->ntargets,
				 left_out);
	*g = *full;
	*full = NULL;
	return 0;
}

/* What the run did, as text or JSON; the exit code.  rc is gc_exec_run's. */
static int report_result(const struct apply_args *a, const struct approval *ap,
			 const struct gc_exec_report *rep, const struct gc_graph *g, int rc,
			 const struct gc_error *err, size_t left_out, const struct gc_ssh_stats *st)
{
	int status = rc == 0 ? GC_EXIT_OK : rc == GC_EINTR ? GC_EXIT_INTERRUPTED : GC_EXIT_ERROR;

	if (ap->declined || ap->differs) {
		if (ap->declined)
			fputs("\nApply cancelled.\n", stdout);
		else
			cli_error("the plan differs from the saved plan: nothing was changed; run plan "
				  "--out again and review it");
		return ap->cancelled ? GC_EXIT_INTERRUPTED : GC_EXIT_ERROR;
	}
	if (a->u->json) {
		if (rep->plan != NULL)
			cli_apply_print_json(rep, status);
		else
			cli_error("%s", err->msg);
	} else {
		print_text_result(a, rep, g, rc, err, left_out, st);
	}
	return status;
}

int cmd_apply(int argc, char **argv)
{
	struct gc_exec_opts o;
	struct gc_exec_report rep;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_cluster *cluster = NULL;
	struct gc_graph *g = NULL, *full = NULL;
	size_t left_out = 0;
	struct gc_ssh_stats st;
	struct ui u;
	struct evctx ec;
	struct sigctx sc;
	struct approval ap = {0};
	struct cli_saved_plan saved = {0};
	const char **fps = NULL;
	const char *spec;
	char *hash = NULL;
	pthread_t sigth;
	bool have_sigthread;
	char *state_dir = NULL;
	struct apply_args args = {0};
	int rc;

	memset(&o, 0, sizeof(o));
	memset(&u, 0, sizeof(u));
	o.plan = (struct gc_plan_opts)GC_PLAN_OPTS_INIT;
	args.o = &o;
	args.u = &u;
	args.yes = &ap.yes;
	args.reboot_s = 1200;
	args.verify_s = 300;
	if ((rc = parse_args(&args, argc, argv)) >= 0)
		return rc;
	spec = args.spec;
	if (cli_is_plan_file(spec)) {
		/* a saved plan: its spec, scope and fingerprints; no question asked */
		if ((rc = use_saved_plan(&args, &ap, &saved, &spec, &hash)) >= 0)
			goto out;
	} else if (!ap.yes && (!isatty(STDIN_FILENO) || u.json)) {
		return cli_usage_error("apply", "%s, so nobody can approve the plan: pass --yes (or "
				       "--auto-approve) to apply without asking, or save a plan with "
				       "'plan --out FILE' and apply that FILE",
				       u.json ? "--json shows no plan" : "standard input is not a terminal");
	}
	if ((rc = load_graph(&args, spec, &cluster, &full, &g, &left_out)) != 0)
		goto out;
	state_dir = args.state_dir ? gc_xstrdup(args.state_dir) : cli_default_state_dir(spec);
	o.state_dir = state_dir;
	if (ap.saved != NULL)
		o.expect_fingerprints = fps = cli_plan_fingerprints(&saved, g);
	o.approve = approve;
	o.approve_arg = &ap;
	o.drv.reboot_timeout_ms = args.reboot_s * 1000u;
	o.drv.verify_timeout_ms = args.verify_s * 1000u;
	if (gc_test_hook("GC_REBOOT_POLL_MS") != NULL) /* faster polling in the lab */
		parse_uint(&o.drv.reboot_poll_ms, gc_test_hook("GC_REBOOT_POLL_MS"), 10, 60000);
	o.interrupted = &interrupted;
	ui_start(&u, &ec, &o, g);
	have_sigthread = sigint_start(&sc, &ec, &sigth);
	gc_ssh_stats_reset();

	rc = gc_exec_run(&rep, g, &o, &err);
	if (have_sigthread)
		sigint_stop(&sc, sigth);
	gc_ssh_stats_get(&st);
	rc = report_result(&args, &ap, &rep, g, rc, &err, left_out, &st);
	gc_exec_report_free(&rep);
	ui_free(&u);
out:
	gc_graph_free(g);
	gc_graph_free(full);
	gc_cluster_free(cluster);
	free(state_dir);
	free(fps);
	free(hash);
	cli_saved_plan_free(&saved);
	return rc;
}
