/*
 * workload.c - `validate --mpirun`: Open MPI's mpirun on the first guest
 * (the launcher), as the login user, with a hostfile and the NCCL
 * environment from the spec (mpi.c); its output parsed (mpi_parse.c) into
 * checks, NCCL's fallback to sockets where the spec gives RDMA a failure.
 * And --emit-mpijob / --emit-slurm: the same job for other launchers.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gc/pattern.h"
#include "mpi.h"
#include "validate_int.h"

static void mpi_add(struct vctx *v, const char *name, enum gc_check_status st, const char *exp,
		    const char *found, const char *hint)
{
	vd_add(v, GC_CT_MPI, "mpirun", name, st, exp, found, st == GC_CHECK_PASS ? NULL : hint);
}

/* The job of the spec with what the probes found (the first guest's RDMA
 * device and GID index); NULL hca / -1 when nothing was probed. */
static int mpi_job(struct gc_mpi_job *job, struct gc_arena *arena, struct vctx *v,
		   struct gsess *gs, size_t n, struct gc_error *err)
{
	const char *hca = NULL;
	int gid = -1;

	for (size_t i = 0; i < n && hca == NULL; i++)
		if (gs[i].hca != NULL) {
			hca = gs[i].hca;
			gid = gs[i].gid_index;
		}
	return gc_mpi_job_from_spec(job, arena, v->g->cluster, hca, gid, err);
}

static void mpi_results(struct vctx *v, const struct gc_mpi_job *job, const struct gc_mpi_result *m)
{
	char f[160], e[64];

	if (m->kind == GC_MPI_RESULT_NCCL) {
		const struct gc_mpi_net *net = &m->net;
		bool fallback = job->expect_rdma && net->socket_fallback;

		snprintf(f, sizeof(f), "%.2f GB/s average, %.2f GB/s at %llu bytes", m->nccl.avg_busbw_gbs,
			 m->nccl.max_busbw_gbs, (unsigned long long)m->nccl.max_bytes);
		mpi_add(v, "nccl.bus_bandwidth", GC_CHECK_PASS, NULL, f, NULL);
		snprintf(f, sizeof(f), "%llu", (unsigned long long)m->nccl.wrong);
		mpi_add(v, "nccl.wrong", !m->nccl.wrong_checked ? GC_CHECK_SKIP
				      : m->nccl.wrong == 0 ? GC_CHECK_PASS : GC_CHECK_FAIL,
			"0", m->nccl.wrong_checked ? f : NULL,
			m->nccl.wrong_checked ? "the all-reduce computed wrong values: a GPU or "
						"memory fault, or a broken GPUDirect path"
					      : "the run did not check its results (-c 0)");
		snprintf(f, sizeof(f), "%s%s%s", net->net_name[0] ? net->net_name : gc_mpi_transport_name(net->transport),
			 net->ib_devices[0] ? " " : "", net->ib_devices);
		mpi_add(v, "nccl.transport", fallback ? GC_CHECK_FAIL : GC_CHECK_PASS,
			job->expect_rdma ? "IB (RDMA)" : NULL, f,
			net->ib_no_device
				? "NCCL found no usable RDMA device (NET/IB : No device found) and fell back to "
				  "TCP sockets without failing: NCCL_IB_HCA names a device that is absent or "
				  "down, or libibverbs/the provider is missing in the guest"
				: "NCCL moved the data over TCP sockets, not RDMA (the silent fallback the "
				  "guides warn about): check NCCL_IB_HCA, NCCL_IB_GID_INDEX and that the "
				  "RDMA device is ACTIVE on every node");
		return;
	}
	snprintf(f, sizeof(f), "%.3f-%.3f Gb/s over %u pairs of %u ranks", m->bw.pair_min_gbs * 8,
		 m->bw.pair_max_gbs * 8, m->bw.pairs, m->bw.ranks);
	mpi_add(v, "mpi.pair_bandwidth", GC_CHECK_PASS, NULL, f, NULL);
	snprintf(f, sizeof(f), "%.3f Gb/s", m->bw.allreduce_gbs * 8);
	mpi_add(v, "mpi.allreduce_bandwidth", GC_CHECK_PASS, NULL, f, NULL);
	snprintf(e, sizeof(e), "%u", gc_mpi_job_ranks(job));
	snprintf(f, sizeof(f), "%u", m->bw.ranks);
	mpi_add(v, "mpi.ranks", m->bw.ranks == gc_mpi_job_ranks(job) ? GC_CHECK_PASS : GC_CHECK_FAIL,
		e, f, "fewer ranks ran than the hostfile has slots");
	mpi_add(v, "mpi.data", m->bw.data_ok ? GC_CHECK_PASS : GC_CHECK_FAIL, "verified",
		m->bw.data_ok ? "verified" : "corrupted", "messages arrived changed");
}

/*
 * After a run was stopped: every node's processes that carry the run's tag
 * killed, over the node's own connection (the launcher's ranks are orphaned
 * when mpirun itself had to be killed; a node's orted may still be stopping
 * its own).  The nodes with something left, and those the sweep could not
 * reach, go into `left` ("worker-01: 2 killed, worker-02: not swept (...)");
 * returns the number of nodes not swept.
 */
static size_t sweep_nodes(struct gsess *gs, size_t n, const char *tag, char *left, size_t cap)
{
	struct gc_buf cmd = GC_BUF_INIT;
	struct gc_error err = GC_ERROR_INIT;
	size_t i, len = 0, failed = 0;

	left[0] = '\0';
	if (gc_mpi_sweep_command(&cmd, tag, &err) != 0)
		return n;
	for (i = 0; i < n; i++) {
		struct gc_ssh_result r = {0};
		const char *name = gs[i].t->name;
		char line[96];
		unsigned long k = 0;
		char *end = NULL;
		int w = 0;

		if (!gs[i].usable || gs[i].ssh == NULL) {
			failed++;
			w = snprintf(left + len, cap - len, "%s%s: not swept (no connection)",
				     len ? ", " : "", name);
		} else {
			gc_ssh_set_command_timeout(gs[i].ssh, 60000u);
			if (gc_ssh_exec(gs[i].ssh, gc_buf_str(&cmd), &r, &err) != 0 || r.exit_status != 0 ||
			    r.out == NULL || (k = strtoul(r.out, &end, 10), end == r.out)) {
				failed++;
				w = snprintf(left + len, cap - len, "%s%s: not swept (%s)", len ? ", " : "",
					     name, err.code ? err.msg : vd_stderr_line(&r, line, sizeof(line)));
				gc_error_clear(&err);
			} else if (k > 0) {
				w = snprintf(left + len, cap - len, "%s%s: %lu killed", len ? ", " : "", name,
					     k);
			}
			gc_ssh_result_free(&r);
		}
		if (w > 0)
			len = (size_t)w < cap - len ? len + (size_t)w : cap - 1;
	}
	gc_buf_free(&cmd);
	return failed;
}

/*
 * A run that was stopped (`what`: why, `how`: by what signals): its nodes
 * swept, and mpi.run failed with `found` and a hint that says what the sweep
 * found, or where it could not look.
 */
static void report_stopped(struct vctx *v, struct gsess *gs, size_t n, const char *tag,
			   const char *found, const char *what, const char *how, const char *advice)
{
	char h[1024], left[256];

	if (sweep_nodes(gs, n, tag, left, sizeof(left)) > 0)
		snprintf(h, sizeof(h),
			 "%s and mpirun was stopped, but ranks may still run where the sweep for them "
			 "failed (%s): look for processes with " GC_MPI_RUN_TAG_VAR "=%s in their "
			 "environment",
			 what, left, tag);
	else
		snprintf(h, sizeof(h), "%s and was stopped on every node (%s; %s%s)%s", what, how,
			 left[0] ? "what it left behind was killed by its " GC_MPI_RUN_TAG_VAR ", "
				 : "no process of it left on any node",
			 left, advice);
	mpi_add(v, "mpi.run", GC_CHECK_FAIL, "exit 0 and a result", found, h);
}

/*
 * Ctrl-C, SIGTERM or SIGHUP (the operator's session gone) while the job
 * runs: the first sets the flag (the launcher
 * connection then ends the command's stdin, and the command stops mpirun:
 * GC_MPI_STOP_ON_EOF_PROLOGUE), the second exits at once, as the signal
 * would have.  Installed around the launcher's exec only; elsewhere validate
 * keeps the CLI's handling (exit at once: it has nothing running to stop).
 */
static volatile sig_atomic_t job_interrupted;

static void on_job_signal(int sig)
{
	static const char msg[] = "\ngpuclusterctl: interrupted: stopping the MPI job on every "
				  "node (again to exit at once)\n";

	if (job_interrupted)
		_exit(128 + sig);
	job_interrupted = 1;
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
}

struct job_signals {
	struct sigaction old_int, old_term, old_hup;
};

static void job_signals_on(struct job_signals *js)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_job_signal;
	sigemptyset(&sa.sa_mask);
	job_interrupted = 0;
	/* a signal whoever started us ignores stays ignored (nohup, a script's
	 * background job) */
	sigaction(SIGINT, NULL, &js->old_int);
	sigaction(SIGTERM, NULL, &js->old_term);
	sigaction(SIGHUP, NULL, &js->old_hup);
	if (js->old_int.sa_handler != SIG_IGN)
		sigaction(SIGINT, &sa, NULL);
	if (js->old_term.sa_handler != SIG_IGN)
		sigaction(SIGTERM, &sa, NULL);
	if (js->old_hup.sa_handler != SIG_IGN)
		sigaction(SIGHUP, &sa, NULL);
}

static void job_signals_off(struct job_signals *js)
{
	sigaction(SIGINT, &js->old_int, NULL);
	sigaction(SIGTERM, &js->old_term, NULL);
	sigaction(SIGHUP, &js->old_hup, NULL);
}

/* How the launcher's exec of the job ended. */
enum launch_end {
	LAUNCH_ANSWERED,    /* it answered: res holds the exit status and output */
	LAUNCH_FAILED,      /* the exec failed on a live connection: err says why */
	LAUNCH_INTERRUPTED, /* SIGINT, SIGTERM or SIGHUP: the job was told to stop */
	LAUNCH_LOST,        /* the connection failed under the job: err says how */
};

/* The hostfile written and the job run on the launcher, signals handled as
 * above while it runs. */
static enum launch_end launch(struct gsess *l, const struct gc_buf *hosts,
			      const struct gc_buf *cmd, const char *hostfile, unsigned limit_s,
			      struct gc_ssh_result *res, struct gc_error *err)
{
	struct gc_buf w = GC_BUF_INIT;
	struct job_signals js;
	int erc;

	gc_buf_puts(&w, "printf '%s' ");
	gc_shell_quote(&w, gc_buf_str(hosts));
	gc_buf_printf(&w, " > %s || exit; ", hostfile);
	gc_buf_put(&w, cmd->ptr, cmd->len);
	/*
	 * The limit is kept on the launcher (coreutils' timeout around mpirun,
	 * mpi.c), so that a job over it is stopped on every node rather than
	 * left running when we hang up; our own wait is a backstop, long
	 * enough for timeout's TERM, its KILL and mpirun's cleanup.
	 */
	gc_ssh_set_command_timeout(l->ssh, (limit_s + GC_MPI_KILL_AFTER_S + 30) * 1000u);
	job_signals_on(&js);
	gc_ssh_set_interrupt(l->ssh, &job_interrupted);
	erc = gc_ssh_exec(l->ssh, gc_buf_str(&w), res, err);
	gc_ssh_set_interrupt(l->ssh, NULL);
	job_signals_off(&js);
	gc_buf_free(&w);
	if (job_interrupted)
		return LAUNCH_INTERRUPTED;
	if (erc == 0)
		return LAUNCH_ANSWERED;
	return gc_ssh_alive(l->ssh) ? LAUNCH_FAILED : LAUNCH_LOST;
}

/*
 * The launcher's connection broke under the job (or our backstop wait ran
 * out): the job's stdin ended with it, and its watcher sends mpirun SIGTERM
 * (GC_MPI_STOP_ON_EOF_PROLOGUE).  Whatever of it still runs goes by its tag:
 * on the launcher through a new connection, on the other nodes through theirs.
 */
static void report_lost(struct vctx *v, struct gsess *gs, size_t n, const char *tag, double took,
			const struct gc_error *err)
{
	struct gsess *l = &gs[0];
	struct gc_error rerr = GC_ERROR_INIT;
	char f[64], what[640];
	int w;

	w = snprintf(what, sizeof(what), "the run lost its connection to the launcher %s (%s)",
		     l->t->name, err->msg);
	if (vd_reconnect(l, &rerr) != 0) {
		l->usable = false;
		snprintf(what + w, sizeof(what) - (size_t)w, "; a new one failed (%s)", rerr.msg);
		gc_error_clear(&rerr);
	}
	snprintf(f, sizeof(f), "connection lost after %.0f s", took);
	report_stopped(v, gs, n, tag, f, what, "its stdin ended with the connection: SIGTERM to mpirun",
		       ": look at the network to the launcher and its sshd's log");
}

/* mpirun on the first guest (the launcher), over its SSH connection, as the
 * login user: Open MPI starts the other ranks over SSH between the guests. */
void vd_workload(struct vctx *v, struct gsess *gs, size_t n)
{
	struct gc_arena arena = GC_ARENA_INIT;
	struct gc_mpi_job job;
	struct gc_mpi_result m;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_ssh_result res = {0};
	struct gc_buf hosts = GC_BUF_INIT, cmd = GC_BUF_INIT;
	struct gsess *l = n > 0 ? &gs[0] : NULL;
	char line[320], tag[17], *hostfile = NULL;
	uint64_t t0 = gc_now_ns();
	unsigned limit_s = v->o->mpi_timeout_s ? v->o->mpi_timeout_s : 600;
	enum launch_end end;
	double took;

	if (mpi_job(&job, &arena, v, gs, n, &err) != 0) {
		mpi_add(v, "mpi.run", GC_CHECK_FAIL, "ran", err.msg, NULL);
		goto out;
	}
	if (l == NULL || !l->usable) {
		mpi_add(v, "mpi.run", GC_CHECK_FAIL, "ran", "not run",
			"the launcher (the first guest) failed its node checks");
		goto out;
	}
	job.command = v->o->mpi_command;
	job.probe_path = l->probe;
	job.as_root = l->root;
	job.time_limit_s = limit_s;
	gc_random_token(tag);
	job.run_tag = tag;
	job.stop_on_eof = true;
	vd_progress(v, "mpirun", "running the workload");
	hostfile = gc_xasprintf("%.*s/mpi-hosts", (int)(strrchr(l->probe, '/') - l->probe), l->probe);
	if (gc_mpi_hostfile(&hosts, &job, &err) != 0 ||
	    gc_mpi_command(&cmd, &job, hostfile, &err) != 0) {
		mpi_add(v, "mpi.run", GC_CHECK_FAIL, "ran", err.msg, NULL);
		goto out;
	}
	end = launch(l, &hosts, &cmd, hostfile, limit_s, &res, &err);
	took = (double)(gc_now_ns() - t0) / 1e9;
	if (end == LAUNCH_FAILED) {
		mpi_add(v, "mpi.run", GC_CHECK_FAIL, "ran", err.msg, NULL);
		goto out;
	}
	if (end == LAUNCH_LOST) {
		report_lost(v, gs, n, tag, took, &err);
		goto out;
	}
	if (end == LAUNCH_INTERRUPTED) {
		char f[64];

		v->r->interrupted = true;
		snprintf(f, sizeof(f), "interrupted after %.0f s, stopped", took);
		report_stopped(v, gs, n, tag, f, "the run was interrupted (SIGINT, SIGTERM or SIGHUP)",
			       "SIGTERM to mpirun", "");
		goto out;
	}
	/* timeout(1): 124 when it sent SIGTERM, 128+9 when it had to send
	 * SIGKILL; the time tells a job's own 124 from ours */
	if ((res.exit_status == 124 || res.exit_status == 137) && took >= (double)limit_s) {
		char f[64], what[64], how[64];

		snprintf(f, sizeof(f), "timed out after %u s, stopped%s", limit_s,
			 res.exit_status == 137 ? " (SIGKILL)" : "");
		snprintf(what, sizeof(what), "the job ran past --mpi-timeout (%u s)", limit_s);
		snprintf(how, sizeof(how), "SIGTERM to mpirun, SIGKILL %u s later", GC_MPI_KILL_AFTER_S);
		report_stopped(v, gs, n, tag, f, what, how,
			       ": give a longer workload more time, or look for a rank waiting on a "
			       "peer it cannot reach");
		goto out;
	}
	if (res.exit_status != 0 || gc_mpi_parse_output(&m, res.out ? res.out : "", res.out_len, &err) != 0) {
		const char *why = res.exit_status != 0 ? vd_stderr_line(&res, line, sizeof(line)) : err.msg;

		mpi_add(v, "mpi.run", GC_CHECK_FAIL, "exit 0 and a result", why,
			"mpirun needs Open MPI on every guest and passwordless SSH between the guests as "
			"the login user (docs/validate.md, 'The workload')");
		goto out;
	}
	{
		char f[64];

		snprintf(f, sizeof(f), "exit 0 in %.1f s, %u ranks", took, gc_mpi_job_ranks(&job));
		vd_add_timed(v, took, GC_CT_MPI, "mpirun", "mpi.run",
			     GC_CHECK_PASS, "exit 0 and a result", f, NULL);
	}
	mpi_results(v, &job, &m);
out:
	free(hostfile);
	gc_ssh_result_free(&res);
	gc_buf_free(&hosts);
	gc_buf_free(&cmd);
	gc_arena_free(&arena);
}

/* --emit-mpijob / --emit-slurm: the same job for other launchers. */
static int emit_file(const char *path, const struct gc_buf *b, struct gc_error *err)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return gc_error_set_errno(err, GC_EIO, errno, "cannot write '%s'", path);
	if (fwrite(b->ptr, 1, b->len, f) != b->len || fclose(f) != 0)
		return gc_error_set_errno(err, GC_EIO, errno, "cannot write '%s'", path);
	return 0;
}

int vd_emit(struct vctx *v, struct gsess *gs, size_t n, struct gc_error *err)
{
	struct gc_arena arena = GC_ARENA_INIT;
	struct gc_mpi_job job;
	struct gc_buf b = GC_BUF_INIT;
	int rc;

	if ((rc = mpi_job(&job, &arena, v, gs, n, err)) != 0)
		goto out;
	job.command = v->o->mpi_command;
	if (v->o->emit_mpijob != NULL &&
	    ((rc = gc_mpi_emit_mpijob(&b, &job, v->g->cluster->name, v->o->mpi_image, err)) != 0 ||
	     (rc = emit_file(v->o->emit_mpijob, &b, err)) != 0))
		goto out;
	gc_buf_reset(&b);
	if (v->o->emit_slurm != NULL && ((rc = gc_mpi_emit_slurm(&b, &job, err)) != 0 ||
					 (rc = emit_file(v->o->emit_slurm, &b, err)) != 0))
		goto out;
out:
	gc_buf_free(&b);
	gc_arena_free(&arena);
	return rc;
}

