/*
 * validate.c - `gpuclusterctl validate`: prove the cluster works, changing
 * nothing.
 *
 * Three groups of checks, in this order, all into one report (report.c):
 *
 *  1. Read-back.  The executor observes every target exactly as `plan` does
 *     (gc_exec_run with plan_only) and plans against the spec.  Each
 *     resource the plan would touch is a failed check per differing key
 *     (expected = the spec's value, found = the target's); a resource it
 *     would create is one failed check ("absent"); an owed reboot, a target
 *     that could not be observed, each one failed check; every other
 *     resource of the graph passes.
 *
 *  2. Node checks, one session per guest in parallel: one SSH connection,
 *     the guest driver's own read-only observation script (nvidia-smi -q -x
 *     and the RDMA interface: GPU count, model, mode, framebuffer, licence,
 *     driver branch, peer-memory module, address, MTU, RDMA port state),
 *     then the node probe (docs/probe.md) with `--expect-set` lines derived
 *     from the spec (RDMA device, RoCE v2 GID, active MTU, ToS, trust, PFC,
 *     vector add, GPUDirect) and the copy-bandwidth thresholds of
 *     `validation:`.  The probe is uploaded into the login user's
 *     ~/.cache/gpuclusterctl/ under a name that carries a hash of our
 *     build, so a missing or different (older) probe is replaced and ours
 *     is reused; that file is the only thing validate writes.
 *
 *  3. Pair checks: an RDMA write test between guests over their RDMA
 *     interfaces (the probe's --rdma-server / --rdma-peer), in two rounds
 *     of disjoint pairs - (0,1) (2,3) ... then (1,2) (3,4) ... (n-1,0) - so
 *     no guest is in two tests at once and every guest is in one; the
 *     sessions of step 2 are reused (one connection per guest).
 *
 * Library code: nothing is printed; progress goes through opts->progress.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gc/exec.h"
#include "gc/graph.h"
#include "gc/guest.h"
#include "gc/pattern.h"
#include "gc/plan.h"
#include "gc/ssh.h"
#include "gc/validate.h"
#include "mpi.h"

#define PROBE_OUTPUT_MAX (4u * 1024 * 1024)

struct vctx {
	const struct gc_graph *g;
	const struct gc_validate_opts *o;
	struct gc_validate_report *r;
	pthread_mutex_t mu; /* the report and progress */
	char probe_name[96]; /* "gpuclusterctl-probe-<version>-<hash>" */
};

/* One guest: its connection (kept for the pair rounds) and what it found. */
struct gsess {
	struct vctx *v;
	const struct gc_target *t;
	const struct gc_guest *gst;
	struct gc_ssh_conn *ssh;
	bool usable;          /* connected and the probe is in place */
	char *probe;          /* remote path ("$HOME/..." expanded by the shell) */
	char *rdma_addr;      /* the RDMA interface's address, no prefix */
	char *hca;            /* RDMA device the probe found active */
	int gid_index;        /* its RoCE v2 GID index, -1 unknown */
	bool root;            /* the login user is root */
};

static void add(struct vctx *v, enum gc_check_target k, const char *target, const char *name,
		enum gc_check_status st, const char *exp, const char *found, const char *hint)
{
	pthread_mutex_lock(&v->mu);
	gc_vreport_add(v->r, k, target, name, st, exp, found, hint);
	pthread_mutex_unlock(&v->mu);
}

static void progress(struct vctx *v, const char *target, const char *what)
{
	if (v->o->progress == NULL)
		return;
	pthread_mutex_lock(&v->mu);
	v->o->progress(v->o->progress_arg, target, what);
	pthread_mutex_unlock(&v->mu);
}

/* ---------------------------------------------------------------- 1. read-back */

static enum gc_check_target kind_of_target(const struct gc_target *t)
{
	switch (t->kind) {
	case GC_TARGET_ESXI:
		return GC_CT_ESXI;
	case GC_TARGET_VCENTER:
		return GC_CT_VCENTER;
	case GC_TARGET_SWITCH:
		return GC_CT_SWITCH;
	case GC_TARGET_GUEST:
		return GC_CT_GUEST;
	}
	return GC_CT_ESXI;
}

/* VM resources live on the vCenter target but are reported under the VM. */
static void res_owner(const struct gc_target *t, const char *vm, enum gc_check_target *k,
		      const char **name)
{
	if (t->kind == GC_TARGET_VCENTER && vm != NULL) {
		*k = GC_CT_VM;
		*name = vm;
	} else {
		*k = kind_of_target(t);
		*name = t->name;
	}
}

static const char *config_hint(enum gc_op op)
{
	switch (op) {
	case GC_OP_CREATE:
		return "not there: 'gpuclusterctl apply' creates it (or it was removed by hand)";
	case GC_OP_UPDATE:
		return "changed since the last apply (by hand?): 'gpuclusterctl plan' shows the "
		       "change, 'apply' restores the spec's value";
	case GC_OP_DELETE:
		return "the target holds something the spec owns but no longer names: 'apply' "
		       "removes it";
	case GC_OP_NONE:
		break;
	}
	return NULL;
}

static void config_action(struct vctx *v, const struct gc_action *a, bool *differs)
{
	enum gc_check_target k;
	const char *who;
	char name[256];

	res_owner(a->target, a->vm, &k, &who);
	if (a->kind == GC_ACT_REBOOT && a->why != NULL && a->resource_id == NULL) {
		/* a reboot owed by an earlier apply, or one a change needs (counted there) */
		bool owed = true;

		for (size_t i = 0; i < a->ndeps; i++)
			if (a->deps[i]->kind == GC_ACT_APPLY && a->deps[i]->target == a->target)
				owed = false;
		if (owed)
			add(v, k, who, "config.reboot", GC_CHECK_FAIL, "no reboot owed", a->why,
			    "a change waits for a reboot: 'gpuclusterctl apply' reboots it in its "
			    "rolling wave");
		return;
	}
	if (a->kind != GC_ACT_APPLY || a->resource_id == NULL)
		return;
	if (a->resource != NULL)
		differs[a->resource->index] = true;
	if (a->op == GC_OP_CREATE || a->op == GC_OP_DELETE || a->nchanges == 0) {
		snprintf(name, sizeof(name), "config %s", a->resource_id);
		add(v, k, who, name, GC_CHECK_FAIL, a->op == GC_OP_DELETE ? "absent" : "present",
		    a->op == GC_OP_DELETE ? "present" : "absent", config_hint(a->op));
		return;
	}
	for (size_t i = 0; i < a->nchanges; i++) {
		const struct gc_change *c = &a->changes[i];

		snprintf(name, sizeof(name), "config %s %s", a->resource_id, c->key);
		add(v, k, who, name, GC_CHECK_FAIL, c->new_value ? c->new_value : "(not set)",
		    c->old_value ? c->old_value : "(not set)", config_hint(a->op));
	}
}

static int config_checks(struct vctx *v, struct gc_error *err)
{
	const struct gc_graph *g = v->g;
	struct gc_exec_opts xo;
	struct gc_exec_report rep;
	bool *differs = gc_xcalloc(g->nresources + 1, sizeof(bool));
	bool *unknown_t = gc_xcalloc(g->ntargets + 1, sizeof(bool));
	struct gc_error xerr = GC_ERROR_INIT;
	int rc;

	memset(&xo, 0, sizeof(xo));
	memset(&rep, 0, sizeof(rep));
	xo.state_dir = v->o->state_dir;
	xo.plan_only = true;
	xo.parallelism = v->o->parallelism;
	xo.drv = v->o->drv;
	progress(v, "gpuclusterctl", "reading back every target");
	rc = gc_exec_run(&rep, g, &xo, &xerr);
	if (rc != 0 && (rep.plan == NULL || rep.plan->nunknown == 0)) {
		gc_error_set(err, xerr.code, "%s", xerr.msg);
		rc = err->code;
		goto out;
	}
	rc = 0;
	for (size_t i = 0; i < g->ntargets; i++) {
		const struct gc_target *t = g->targets[i];
		const char *why = rep.plan->unknown ? rep.plan->unknown[i] : NULL;

		if (why == NULL)
			continue;
		unknown_t[i] = true;
		add(v, kind_of_target(t), t->name, "config.observe", GC_CHECK_FAIL, "observed", why,
		    "the target could not be read: is it up and reachable, are its credentials and "
		    "host key right?");
	}
	for (size_t i = 0; i < rep.plan->nactions; i++)
		config_action(v, rep.plan->actions[i], differs);
	for (size_t i = 0; i < g->nresources; i++) {
		const struct gc_resource *res = g->resources[i];
		enum gc_check_target k;
		const char *who;
		char name[256];

		if (differs[i] || unknown_t[res->target->index])
			continue;
		res_owner(res->target, res->vm, &k, &who);
		snprintf(name, sizeof(name), "config %s", res->id);
		add(v, k, who, name, GC_CHECK_PASS, NULL, "as in the spec", NULL);
	}
out:
	gc_exec_report_free(&rep);
	free(differs);
	free(unknown_t);
	return rc;
}

/* ---------------------------------------------------------------- 2. node checks */

/* A hint belongs to a failure or a skip: dropped on a pass, and "" is none. */
static void gadd(struct gsess *s, const char *name, enum gc_check_status st, const char *exp,
		 const char *found, const char *hint)
{
	if (st == GC_CHECK_PASS || (hint != NULL && hint[0] == '\0'))
		hint = NULL;
	add(s->v, GC_CT_GUEST, s->t->name, name, st, exp, found, hint);
}

/* The shell command that runs `script` as root (sudo -n for others). */
static int run_root(struct gsess *s, const char *script, struct gc_ssh_result *res,
		    struct gc_error *err)
{
	char *cmd = gc_guest_as_root(script);
	int rc = gc_ssh_exec(s->ssh, cmd, res, err);

	free(cmd);
	return rc;
}

static bool sudo_refused(const struct gc_ssh_result *r)
{
	return r->exit_status != 0 && r->err != NULL &&
	       (strstr(r->err, "sudo: a password is required") != NULL ||
		strstr(r->err, "sudo: a terminal is required") != NULL);
}

static const char *stderr_line(const struct gc_ssh_result *r, char *buf, size_t n)
{
	const char *src = r->err_len > 0 ? r->err : (r->out ? r->out : "");
	size_t k = strcspn(src, "\r\n");

	snprintf(buf, n, "%.*s", (int)(k > 300 ? 300 : k), src);
	return buf;
}

/* The GPU family of a model name: "V100-32GB" -> "V100", "T4" -> "T4". */
static void gpu_family(char *out, size_t n, const char *model)
{
	size_t k = strcspn(model, "-");

	snprintf(out, n, "%.*s", (int)k, model);
}

static unsigned vm_gpu_mib(const struct gc_vm *vm)
{
	return vm->ngpus > 0 ? vm->gpus[0].memory_gb * 1024u : 0;
}

/* What nvidia-smi (through the guest driver's observation) must show. */
static void facts_checks(struct gsess *s, const struct gc_guest_facts *f)
{
	const struct gc_vm *vm = s->t->vm;
	const struct gc_guest *g = s->gst;
	char e[128], fnd[256];

	if (g->nvidia_driver != NULL || vm->ngpus > 0) {
		if (!f->smi) {
			gadd(s, "gpu.driver", GC_CHECK_FAIL,
			     g->nvidia_driver ? g->nvidia_driver : "an NVIDIA driver",
			     f->smi_error ? f->smi_error : "nvidia-smi not found",
			     "nvidia-smi does not answer: the driver is not installed or its module "
			     "is not loaded ('gpuclusterctl apply' installs it; a GPU the VM cannot "
			     "see needs pciPassthru.use64bitMMIO and a large enough MMIO window)");
			return;
		}
		if (g->nvidia_driver != NULL) {
			size_t n = strlen(g->nvidia_driver);
			const char *dv = f->driver_version ? f->driver_version : "";
			bool ok = strncmp(dv, g->nvidia_driver, n) == 0 &&
				  (dv[n] == '\0' || dv[n] == '.');

			gadd(s, "gpu.driver", ok ? GC_CHECK_PASS : GC_CHECK_FAIL, g->nvidia_driver, dv,
			     ok ? NULL
				: "another driver branch runs: a vGPU guest driver must match the host's "
				  "vGPU manager release; 'apply' installs the spec's");
		}
	}
	if (vm->ngpus > 0) {
		const struct gc_vm_gpu *vg = &vm->gpus[0];
		const char *mode = vg->kind == GC_VMGPU_VGPU ? "VGPU" : "Pass-Through";

		snprintf(e, sizeof(e), "%zu", vm->ngpus);
		snprintf(fnd, sizeof(fnd), "%u", f->ngpus);
		gadd(s, "gpu.count", f->ngpus == vm->ngpus ? GC_CHECK_PASS : GC_CHECK_FAIL, e, fnd,
		     f->ngpus < vm->ngpus
			     ? "fewer GPUs than the VM has: a GPU without enough 64-bit MMIO space "
			       "(pciPassthru.64bitMMIOSizeGB) or in a bad state on the host is not "
			       "initialised by the driver (dmesg: NVRM)"
			     : "more GPUs than the spec gives this VM");
		if (vg->gpu != NULL && vg->gpu->model != NULL) {
			gpu_family(e, sizeof(e), vg->gpu->model->name);
			bool ok = f->product != NULL && strcasestr(f->product, e) != NULL;

			gadd(s, "gpu.model", ok ? GC_CHECK_PASS : GC_CHECK_FAIL, e,
			     f->product ? f->product : "", ok ? NULL : "another GPU model is attached");
		}
		bool mode_ok = f->virt_mode != NULL && strcmp(f->virt_mode, mode) == 0;

		gadd(s, "gpu.virtualization", mode_ok ? GC_CHECK_PASS : GC_CHECK_FAIL, mode,
		     f->virt_mode ? f->virt_mode : "",
		     mode_ok ? NULL
			     : "a vGPU guest driver sees 'VGPU', a passthrough GPU 'Pass-Through': the "
			       "VM has another device type than the spec says");
		if (vg->kind == GC_VMGPU_VGPU && vm_gpu_mib(vm) > 0) {
			unsigned want = vm_gpu_mib(vm);
			bool ok = f->fb_mib >= want * 9 / 10 && f->fb_mib <= want;

			snprintf(e, sizeof(e), "%u MiB (90-100 %%)", want);
			snprintf(fnd, sizeof(fnd), "%u MiB", f->fb_mib);
			gadd(s, "gpu.vgpu_framebuffer", ok ? GC_CHECK_PASS : GC_CHECK_FAIL, e, fnd,
			     ok ? NULL : "another vGPU profile is attached than the spec's");
		}
	}
	if (g->license != NULL) {
		bool ok = f->license_status != NULL && strncmp(f->license_status, "Licensed", 8) == 0;

		gadd(s, "gpu.license", ok ? GC_CHECK_PASS : GC_CHECK_FAIL, "Licensed",
		     f->license_status ? f->license_status : "not reported",
		     ok ? NULL
			: "nvidia-gridd has no licence: check /etc/nvidia/gridd.conf (FeatureType, "
			  "ServerAddress), the client token in /etc/nvidia/ClientConfigToken/, that "
			  "the licence server is reachable and the clock is right "
			  "(journalctl -u nvidia-gridd)");
	}
	if (g->peermem) {
		bool ok = false;

		for (size_t i = 0; i < f->nmodules; i++)
			ok |= strcmp(f->modules[i], "nvidia_peermem") == 0 ||
			      strcmp(f->modules[i], "nv_peer_mem") == 0;
		gadd(s, "rdma.peermem", ok ? GC_CHECK_PASS : GC_CHECK_FAIL, "loaded",
		     ok ? "loaded" : "not loaded",
		     ok ? NULL
			: "without nvidia_peermem (nv_peer_mem before R470) GPUDirect RDMA falls back "
			  "to copies through host memory: 'modprobe nvidia-peermem', persisted in "
			  "modules-load.d");
	}
	if (g->rdma_interface != NULL) {
		const struct gc_rdma_if *ri = g->rdma_interface;
		bool have = false;

		for (size_t i = 0; i < f->naddrs; i++)
			have |= strcmp(f->addrs[i], ri->address) == 0;
		snprintf(fnd, sizeof(fnd), "%s%s", f->if_present ? "" : "no interface ",
			 f->naddrs > 0 ? f->addrs[0] : (f->if_present ? "no address" : ri->name));
		gadd(s, "net.address", have ? GC_CHECK_PASS : GC_CHECK_FAIL, ri->address, fnd,
		     have ? NULL : "the RDMA interface lacks its address: RoCE v2 needs an IP on it");
		snprintf(e, sizeof(e), "%u", ri->mtu);
		snprintf(fnd, sizeof(fnd), "%u", f->mtu);
		gadd(s, "net.mtu", f->mtu == ri->mtu ? GC_CHECK_PASS : GC_CHECK_FAIL, e, fnd,
		     f->mtu == ri->mtu ? NULL
				       : "an MTU below the spec's caps the RoCE path MTU (and must "
					 "match the switch ports and the peers)");
	}
}

/* The RoCE path MTU an interface MTU allows: the largest IB MTU (256..4096)
 * that fits with the RoCE headers (Eth 14 + IP 20 + UDP 8 + BTH 12 + RETH 16
 * + ICRC 4 = 74 bytes).  rdma_rxe subtracts its own header maximum the same
 * way; an MTU within a few bytes of a boundary may round differently on a
 * given driver, the values in use (1500, 4200, 9000) do not. */
unsigned gc_validate_roce_mtu(unsigned ifmtu)
{
	unsigned m = 4096;

	while (m > 256 && m + 74 > ifmtu)
		m /= 2;
	return m;
}

static void expect(struct gc_buf *b, const char *k, const char *v)
{
	char kv[160];

	snprintf(kv, sizeof(kv), "%s=%s", k, v);
	gc_buf_puts(b, " --expect-set ");
	gc_shell_quote(b, kv);
}

/* The probe's command line for the node checks. */
static char *probe_node_cmd(struct gsess *s)
{
	const struct gc_guest *g = s->gst;
	const struct gc_validation *val = &s->v->g->cluster->validation;
	bool cuda = !(s->v->o->skip & GC_VSKIP_CUDA) && s->t->vm->ngpus > 0;
	struct gc_buf b = GC_BUF_INIT;
	char n[32];

	gc_buf_puts(&b, s->probe);
	gc_buf_puts(&b, " --json");
	if (!cuda)
		gc_buf_puts(&b, " --no-cuda");
	if (g->rdma_interface != NULL || g->roce_qos != NULL) {
		const struct gc_roce_qos *q = g->roce_qos;

		expect(&b, "rdma.device", q && q->rdma_device ? q->rdma_device : "any");
		expect(&b, "rdma.link_layer", "Ethernet");
		expect(&b, "rdma.roce_v2_gid", "yes");
		if (g->rdma_interface != NULL) {
			snprintf(n, sizeof(n), "%u", gc_validate_roce_mtu(g->rdma_interface->mtu));
			expect(&b, "rdma.mtu", n);
		}
		if (q != NULL) {
			snprintf(n, sizeof(n), "%d", q->tos);
			expect(&b, "rdma.tos", n);
			expect(&b, "rdma.trust", q->trust ? q->trust : "dscp");
			if (q->pfc_priority >= 0) {
				snprintf(n, sizeof(n), "%d", q->pfc_priority);
				expect(&b, "rdma.pfc", n);
			}
		}
	}
	if (cuda) {
		expect(&b, "cuda.vector_add", "yes");
		if (val->require_gpudirect)
			expect(&b, "gdr.ready", "yes");
	}
	return gc_buf_take(&b);
}

static void probe_node(struct gsess *s)
{
	struct gc_ssh_result res = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vprobe_in in = {
		.target = s->t->name,
		.val = &s->v->g->cluster->validation,
		.gpus = s->t->vm->ngpus > 0,
		.skip_cuda = (s->v->o->skip & GC_VSKIP_CUDA) != 0,
	};
	struct gc_vprobe_out got = {NULL, -1};
	char *cmd = probe_node_cmd(s), line[320];
	int rc;

	progress(s->v, s->t->name, "running the probe");
	if (run_root(s, cmd, &res, &err) != 0) {
		gadd(s, "probe", GC_CHECK_FAIL, "ran", err.msg, "the connection failed while the "
		     "probe ran");
		goto out;
	}
	pthread_mutex_lock(&s->v->mu);
	rc = res.out == NULL || res.out_truncated
		     ? GC_EINVAL
		     : gc_validate_probe_checks(s->v->r, &in, res.out, res.out_len, &got);
	pthread_mutex_unlock(&s->v->mu);
	if (rc != 0) {
		stderr_line(&res, line, sizeof(line));
		gadd(s, "probe", GC_CHECK_FAIL, "ran", line,
		     res.exit_status == 127 || strstr(line, "GLIBC") != NULL
			     ? "the probe cannot start on this guest: see docs/probe.md, 'Which guests "
			       "it runs on'"
			     : "the probe printed no JSON report");
		goto out;
	}
	s->hca = got.hca; /* now owned by the session */
	s->gid_index = got.gid_index;
out:
	gc_ssh_result_free(&res);
	free(cmd);
}

/* FNV-1a 64 of a file: part of the probe's name on the guests. */
static int file_hash(uint64_t *h, const char *path, struct gc_error *err)
{
	char *data;
	size_t len;

	if (gc_read_file(&data, &len, path, 64u * 1024 * 1024, err) != 0)
		return err->code;
	*h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++)
		*h = (*h ^ (unsigned char)data[i]) * 1099511628211ull;
	free(data);
	return 0;
}

/* Put our probe on the guest unless this very build is there already.  The
 * path is absolute, in the login user's home (the probe then runs through
 * sudo, whose $HOME is root's). */
static int place_probe(struct gsess *s, struct gc_error *err)
{
	struct gc_ssh_result res = {0};
	struct gc_buf cmd = GC_BUF_INIT;
	char line[320];
	size_t n;
	int fd, rc;

	gc_buf_printf(&cmd, "printf '%%s\\n' \"$HOME\"; test -x \"$HOME/.cache/gpuclusterctl/%s\" "
		      "&& echo present", s->v->probe_name);
	rc = gc_ssh_exec(s->ssh, gc_buf_str(&cmd), &res, err);
	if (rc != 0)
		goto out;
	n = res.out ? strcspn(res.out, "\n") : 0;
	s->probe = gc_xasprintf("%.*s/.cache/gpuclusterctl/%s", (int)n, res.out ? res.out : "",
				s->v->probe_name);
	if (!gc_valid_abs_path(s->probe)) { /* it goes into commands unquoted */
		rc = gc_error_set(err, GC_EREMOTE, "the login user's $HOME is not a plain absolute "
				  "path ('%.*s')", (int)(n > 80 ? 80 : n), res.out ? res.out : "");
		goto out;
	}
	if (strstr(res.out + n, "present") != NULL)
		goto out;
	gc_ssh_result_free(&res);
	progress(s->v, s->t->name, "uploading the probe");
	fd = open(s->v->o->probe_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = gc_error_set_errno(err, GC_EIO, errno, "cannot open the probe '%s'",
					s->v->o->probe_path);
		goto out;
	}
	gc_buf_reset(&cmd);
	/* older builds of ours go; the new one appears whole (rename) */
	gc_buf_printf(&cmd,
		      "set -e; d=\"$HOME/.cache/gpuclusterctl\"; mkdir -p \"$d\"; "
		      "rm -f \"$d\"/gpuclusterctl-probe-*; cat > \"$d/.probe.$$\"; "
		      "chmod 755 \"$d/.probe.$$\"; mv -f \"$d/.probe.$$\" \"$d/%s\"", s->v->probe_name);
	rc = gc_ssh_exec_stdin(s->ssh, gc_buf_str(&cmd), fd, &res, err);
	close(fd);
	if (rc == 0 && res.exit_status != 0)
		rc = gc_error_set(err, GC_EREMOTE, "cannot write the probe: %s",
				  stderr_line(&res, line, sizeof(line)));
out:
	gc_ssh_result_free(&res);
	gc_buf_free(&cmd);
	return rc;
}

static void *guest_session(void *arg)
{
	struct gsess *s = arg;
	struct gc_ssh_opts so;
	struct gc_ssh_result res = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_guest_facts f;
	char token[17], line[320], *known = NULL, *script = NULL;
	bool have_facts = false;

	memset(&f, 0, sizeof(f));
	progress(s->v, s->t->name, "connecting");
	gc_ssh_opts_from_spec(&so, &known, &s->v->o->drv, s->gst->address, &s->gst->ssh,
			      s->gst->credentials, "root");
	if (gc_ssh_connect(&s->ssh, &so, &err) != 0) {
		gadd(s, "ssh", GC_CHECK_FAIL, "connected", err.msg,
		     "the guest does not answer SSH: is the VM powered on, its address and "
		     "credentials right, its host key known?");
		goto out;
	}
	gc_ssh_set_command_timeout(s->ssh, 600u * 1000u);
	progress(s->v, s->t->name, "reading nvidia-smi and the RDMA interface");
	gc_random_token(token);
	script = gc_guest_observe_script(s->gst, token);
	if (run_root(s, script, &res, &err) != 0) {
		gadd(s, "observe", GC_CHECK_FAIL, "read", err.msg, NULL);
		goto out;
	}
	if (sudo_refused(&res)) {
		gadd(s, "sudo", GC_CHECK_FAIL, "sudo -n", stderr_line(&res, line, sizeof(line)),
		     "validate reads nvidia-smi, mlnx_qos and the probe as root: give the user "
		     "NOPASSWD sudo or connect as root");
		goto out;
	}
	if (gc_guest_parse(&f, s->gst, token, res.out ? res.out : "", res.out_len, &err) != 0) {
		/* the probe may still tell what works */
		gadd(s, "observe", GC_CHECK_FAIL, "read", err.msg, NULL);
	} else {
		have_facts = true;
		s->root = f.root;
		facts_checks(s, &f);
	}
	if (s->v->o->skip & GC_VSKIP_NODE) {
		gadd(s, "probe", GC_CHECK_SKIP, NULL, NULL, "--skip node");
		goto out;
	}
	if (place_probe(s, &err) != 0) {
		gadd(s, "probe", GC_CHECK_FAIL, "uploaded", err.msg, NULL);
		goto out;
	}
	s->usable = true;
	probe_node(s);
out:
	if (s->gst->rdma_interface != NULL)
		s->rdma_addr = gc_xstrndup(s->gst->rdma_interface->address,
					   strcspn(s->gst->rdma_interface->address, "/"));
	if (have_facts)
		gc_guest_facts_free(&f);
	gc_ssh_result_free(&res);
	free(script);
	free(known);
	return NULL;
}

/* ---------------------------------------------------------------- 3. pairs */

struct pair_side {
	struct gsess *s;
	char *cmd;
	struct gc_ssh_result res;
	struct gc_error err;
	int rc;
};

static void *pair_side_run(void *arg)
{
	struct pair_side *p = arg;

	p->rc = run_root(p->s, p->cmd, &p->res, &p->err);
	return NULL;
}

static char *pair_cmd(struct gsess *s, const char *peer, const struct gc_validate_opts *o)
{
	const struct gc_roce_qos *q = s->gst->roce_qos;
	struct gc_buf b = GC_BUF_INIT;

	gc_buf_printf(&b, "%s --json --no-cuda --no-bw --rdma-timeout %u --rdma-msg-kib %u "
		      "--rdma-iters %u", s->probe, o->rdma_timeout_s ? o->rdma_timeout_s : 60,
		      o->rdma_msg_kib ? o->rdma_msg_kib : 1024, o->rdma_iters ? o->rdma_iters : 2000);
	if (s->hca != NULL) {
		gc_buf_puts(&b, " --rdma-dev ");
		gc_shell_quote(&b, s->hca);
	}
	if (q != NULL)
		gc_buf_printf(&b, " --rdma-tclass %d", q->tos);
	if (peer == NULL) {
		gc_buf_puts(&b, " --rdma-server");
	} else {
		gc_buf_puts(&b, " --rdma-peer ");
		gc_shell_quote(&b, peer);
	}
	return gc_buf_take(&b);
}

static void pair_test(struct vctx *v, struct gsess *a, struct gsess *b)
{
	const struct gc_validation *val = &v->g->cluster->validation;
	struct pair_side side[2];
	pthread_t th;
	char who[256], e[64], f[64], line[320];
	struct gc_vprobe_rdma rt;

	snprintf(who, sizeof(who), "%s<->%s", a->t->name, b->t->name);
	if (!a->usable || !b->usable || a->rdma_addr == NULL) {
		add(v, GC_CT_PAIR, who, "rdma.write", GC_CHECK_FAIL, "ran",
		    "not run", !a->usable || !b->usable ? "a guest of the pair failed its node checks "
		    "(above)" : "the server side has no rdma_interface address in the spec");
		return;
	}
	progress(v, who, "RDMA write test");
	memset(side, 0, sizeof(side));
	side[0].s = a;
	side[0].cmd = pair_cmd(a, NULL, v->o);
	side[1].s = b;
	side[1].cmd = pair_cmd(b, a->rdma_addr, v->o);
	side[0].err = (struct gc_error)GC_ERROR_INIT;
	side[1].err = (struct gc_error)GC_ERROR_INIT;
	if (pthread_create(&th, NULL, pair_side_run, &side[0]) != 0)
		abort();
	pair_side_run(&side[1]);
	pthread_join(th, NULL);

	if (side[1].rc != 0) {
		add(v, GC_CT_PAIR, who, "rdma.write", GC_CHECK_FAIL, "ok", side[1].err.msg, NULL);
		goto out;
	}
	if (side[1].res.out == NULL || side[1].res.out_truncated ||
	    gc_validate_probe_rdma_test(&rt, side[1].res.out, side[1].res.out_len) != 0) {
		add(v, GC_CT_PAIR, who, "rdma.write", GC_CHECK_FAIL, "ok",
		    stderr_line(&side[1].res, line, sizeof(line)), "the probe printed no JSON report");
		goto out;
	}
	if (!rt.ok) {
		add(v, GC_CT_PAIR, who, "rdma.write", GC_CHECK_FAIL, "ok", rt.reason,
		    "no RDMA between the two: RDMA interfaces up with their addresses, the same "
		    "subnet, the switch ports' MTU and PFC, a RoCE v2 GID on both (probe each)");
		goto out;
	}
	add(v, GC_CT_PAIR, who, "rdma.write", GC_CHECK_PASS, "ok", "ok: data verified", NULL);
	{
		bool ok = val->min_rdma_gbps <= 0 || rt.bw_gbps >= val->min_rdma_gbps;

		snprintf(f, sizeof(f), "%.3f Gb/s", rt.bw_gbps);
		if (val->min_rdma_gbps > 0)
			snprintf(e, sizeof(e), ">= %g Gb/s", val->min_rdma_gbps);
		add(v, GC_CT_PAIR, who, "rdma.write_bandwidth", ok ? GC_CHECK_PASS : GC_CHECK_FAIL,
		    val->min_rdma_gbps > 0 ? e : NULL, f,
		    ok ? NULL : "RDMA slower than the spec wants: a path MTU below 4096, PFC pauses "
				"or congestion (the switch's counters), a PCIe-far HCA, or a link at a "
				"lower speed");
		ok = val->max_rdma_latency_us <= 0 || rt.lat_us <= val->max_rdma_latency_us;
		snprintf(f, sizeof(f), "%.2f us", rt.lat_us);
		if (val->max_rdma_latency_us > 0)
			snprintf(e, sizeof(e), "<= %g us", val->max_rdma_latency_us);
		add(v, GC_CT_PAIR, who, "rdma.write_latency", ok ? GC_CHECK_PASS : GC_CHECK_FAIL,
		    val->max_rdma_latency_us > 0 ? e : NULL, f,
		    ok ? NULL : "a completion round trip slower than the spec wants: interrupt "
				"moderation, a busy vCPU, or hops through more switches");
	}
out:
	for (int i = 0; i < 2; i++) {
		gc_ssh_result_free(&side[i].res);
		free(side[i].cmd);
	}
}

struct round_job {
	struct vctx *v;
	struct gsess *a, *b;
};

static void *round_job_run(void *arg)
{
	struct round_job *j = arg;

	pair_test(j->v, j->a, j->b);
	return NULL;
}

size_t gc_validate_pair_round(size_t (*pairs)[2], size_t n, unsigned round)
{
	size_t np = 0;

	if (n < 2 || round > 1)
		return 0;
	for (size_t i = round; i + 1 < n; i += 2) {
		pairs[np][0] = i;
		pairs[np][1] = i + 1;
		np++;
	}
	if (round == 1 && n % 2 == 0 && n > 2) {
		pairs[np][0] = n - 1;
		pairs[np][1] = 0;
		np++;
	}
	return np;
}

static void pair_rounds(struct vctx *v, struct gsess *gs, size_t n)
{
	struct round_job *jobs = gc_xcalloc(n + 1, sizeof(*jobs));
	pthread_t *th = gc_xcalloc(n + 1, sizeof(*th));
	size_t (*pairs)[2] = gc_xcalloc(n + 1, sizeof(*pairs));

	for (unsigned r = 0; r < 2; r++) {
		size_t np = gc_validate_pair_round(pairs, n, r);

		for (size_t i = 0; i < np; i++) {
			jobs[i] = (struct round_job){v, &gs[pairs[i][0]], &gs[pairs[i][1]]};
			if (pthread_create(&th[i], NULL, round_job_run, &jobs[i]) != 0)
				abort();
		}
		for (size_t i = 0; i < np; i++)
			pthread_join(th[i], NULL);
	}
	free(jobs);
	free(th);
	free(pairs);
}

/* ---------------------------------------------------------------- 4. the workload */

static void mpi_add(struct vctx *v, const char *name, enum gc_check_status st, const char *exp,
		    const char *found, const char *hint)
{
	add(v, GC_CT_MPI, "mpirun", name, st, exp, found, st == GC_CHECK_PASS ? NULL : hint);
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

/* mpirun on the first guest (the launcher), over its SSH connection, as the
 * login user: Open MPI starts the other ranks over SSH between the guests. */
static void mpi_workload(struct vctx *v, struct gsess *gs, size_t n)
{
	struct gc_arena arena = GC_ARENA_INIT;
	struct gc_mpi_job job;
	struct gc_mpi_result m;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_ssh_result res = {0};
	struct gc_buf hosts = GC_BUF_INIT, cmd = GC_BUF_INIT;
	struct gsess *l = n > 0 ? &gs[0] : NULL;
	char line[320], *hostfile = NULL;
	uint64_t t0 = gc_now_ns();

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
	progress(v, "mpirun", "running the workload");
	hostfile = gc_xasprintf("%.*s/mpi-hosts", (int)(strrchr(l->probe, '/') - l->probe), l->probe);
	if (gc_mpi_hostfile(&hosts, &job, &err) != 0 ||
	    gc_mpi_command(&cmd, &job, hostfile, &err) != 0) {
		mpi_add(v, "mpi.run", GC_CHECK_FAIL, "ran", err.msg, NULL);
		goto out;
	}
	{
		struct gc_buf w = GC_BUF_INIT;

		gc_buf_puts(&w, "printf '%s' ");
		gc_shell_quote(&w, gc_buf_str(&hosts));
		gc_buf_printf(&w, " > %s && ", hostfile);
		gc_buf_put(&w, cmd.ptr, cmd.len);
		gc_ssh_set_command_timeout(l->ssh, (v->o->mpi_timeout_s ? v->o->mpi_timeout_s : 600) * 1000u);
		if (gc_ssh_exec(l->ssh, gc_buf_str(&w), &res, &err) != 0) {
			gc_buf_free(&w);
			mpi_add(v, "mpi.run", GC_CHECK_FAIL, "ran", err.msg, NULL);
			goto out;
		}
		gc_buf_free(&w);
	}
	if (res.exit_status != 0 || gc_mpi_parse_output(&m, res.out ? res.out : "", res.out_len, &err) != 0) {
		const char *why = res.exit_status != 0 ? stderr_line(&res, line, sizeof(line)) : err.msg;

		mpi_add(v, "mpi.run", GC_CHECK_FAIL, "exit 0 and a result", why,
			"mpirun needs Open MPI on every guest and passwordless SSH between the guests as "
			"the login user (docs/validate.md, 'The workload')");
		goto out;
	}
	{
		char f[64];

		snprintf(f, sizeof(f), "exit 0 in %.1f s, %u ranks", (double)(gc_now_ns() - t0) / 1e9,
			 gc_mpi_job_ranks(&job));
		mpi_add(v, "mpi.run", GC_CHECK_PASS, "exit 0 and a result", f, NULL);
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

static int emit(struct vctx *v, struct gsess *gs, size_t n, struct gc_error *err)
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

/* ---------------------------------------------------------------- running it */

int gc_validate_run(struct gc_validate_report *r, const struct gc_graph *g,
		    const struct gc_validate_opts *o, struct gc_error *err)
{
	struct vctx v;
	struct gsess *gs = NULL;
	pthread_t *th = NULL;
	size_t ng = 0;
	uint64_t hash = 0, t0 = gc_now_ns();
	int rc = 0;

	memset(&v, 0, sizeof(v));
	r->started = time(NULL);
	v.g = g;
	v.o = o;
	v.r = r;
	pthread_mutex_init(&v.mu, NULL);
	if (!(o->skip & GC_VSKIP_NODE) && o->probe_path != NULL &&
	    (rc = file_hash(&hash, o->probe_path, err)) != 0)
		goto out;
	snprintf(v.probe_name, sizeof(v.probe_name), "gpuclusterctl-probe-%s-%016llx", GC_VERSION,
		 (unsigned long long)hash);
	if (!(o->skip & GC_VSKIP_CONFIG)) {
		if ((rc = config_checks(&v, err)) != 0)
			goto out;
	}
	for (size_t i = 0; i < g->ntargets; i++)
		ng += g->targets[i]->kind == GC_TARGET_GUEST && g->targets[i]->vm != NULL &&
		      g->targets[i]->vm->guest != NULL;
	gs = gc_xcalloc(ng + 1, sizeof(*gs));
	th = gc_xcalloc(ng + 1, sizeof(*th));
	ng = 0;
	for (size_t i = 0; i < g->ntargets; i++) {
		const struct gc_target *t = g->targets[i];

		if (t->kind != GC_TARGET_GUEST || t->vm == NULL || t->vm->guest == NULL)
			continue;
		gs[ng] = (struct gsess){.v = &v, .t = t, .gst = t->vm->guest, .gid_index = -1};
		ng++;
	}
	for (size_t i = 0; i < ng; i++)
		if (pthread_create(&th[i], NULL, guest_session, &gs[i]) != 0)
			abort();
	for (size_t i = 0; i < ng; i++)
		pthread_join(th[i], NULL);
	if (o->skip & GC_VSKIP_PAIRS) {
		if (ng >= 2)
			add(&v, GC_CT_PAIR, "pairs", "rdma.write", GC_CHECK_SKIP, NULL, NULL,
			    "--skip pairs");
	} else if (!(o->skip & GC_VSKIP_NODE)) {
		pair_rounds(&v, gs, ng);
	}
	if (o->mpirun && !(o->skip & GC_VSKIP_NODE))
		mpi_workload(&v, gs, ng);
	if ((o->emit_mpijob != NULL || o->emit_slurm != NULL) && (rc = emit(&v, gs, ng, err)) != 0)
		goto out;
out:
	for (size_t i = 0; gs != NULL && i < ng; i++) {
		gc_ssh_free(gs[i].ssh);
		free(gs[i].probe);
		free(gs[i].rdma_addr);
		free(gs[i].hca);
	}
	free(gs);
	free(th);
	pthread_mutex_destroy(&v.mu);
	r->wall_s = (double)(gc_now_ns() - t0) / 1e9;
	return rc;
}
