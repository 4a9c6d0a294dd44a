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
 *  3. Pair checks (pairs.c): an RDMA write test between guests over their
 *     RDMA interfaces (the probe's --rdma-server / --rdma-peer), in two
 *     rounds of disjoint pairs - (0,1) (2,3) ... then (1,2) (3,4) ...
 *     (n-1,0) - so no guest is in two tests at once and every guest is in
 *     one; the sessions of step 2 are reused (one connection per guest).
 *
 *  4. With --mpirun, the Open MPI job across the guests (workload.c); and
 *     --emit-mpijob / --emit-slurm write the same job for other launchers.
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
#include "validate_int.h"

#define PROBE_OUTPUT_MAX (4u * 1024 * 1024)


void vd_add(struct vctx *v, enum gc_check_target k, const char *target, const char *name,
		enum gc_check_status st, const char *exp, const char *found, const char *hint)
{
	pthread_mutex_lock(&v->mu);
	gc_vreport_add(v->r, k, target, name, st, exp, found, hint);
	pthread_mutex_unlock(&v->mu);
}

void vd_add_timed(struct vctx *v, double seconds, enum gc_check_target k, const char *target,
		  const char *name, enum gc_check_status st, const char *exp, const char *found,
		  const char *hint)
{
	pthread_mutex_lock(&v->mu);
	gc_vreport_add(v->r, k, target, name, st, exp, found, hint)->seconds = seconds;
	pthread_mutex_unlock(&v->mu);
}

void vd_progress(struct vctx *v, const char *target, const char *what)
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
	case GC_TARGET_KVM:
	case GC_TARGET_LIBVIRT:
		return GC_CT_KVM;
	}
	return GC_CT_ESXI;
}

/* VM resources live on the vCenter target but are reported under the VM. */
static void res_owner(const struct gc_target *t, const char *vm, enum gc_check_target *k,
		      const char **name)
{
	if (gc_target_holds_vms(t->kind) && vm != NULL) {
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
			vd_add(v, k, who, "config.reboot", GC_CHECK_FAIL, "no reboot owed", a->why,
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
		vd_add(v, k, who, name, GC_CHECK_FAIL, a->op == GC_OP_DELETE ? "absent" : "present",
		    a->op == GC_OP_DELETE ? "present" : "absent", config_hint(a->op));
		return;
	}
	for (size_t i = 0; i < a->nchanges; i++) {
		const struct gc_change *c = &a->changes[i];

		snprintf(name, sizeof(name), "config %s %s", a->resource_id, c->key);
		vd_add(v, k, who, name, GC_CHECK_FAIL, c->new_value ? c->new_value : "(not set)",
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
	vd_progress(v, "gpuclusterctl", "reading back every target");
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
		vd_add(v, kind_of_target(t), t->name, "config.observe", GC_CHECK_FAIL, "observed", why,
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
		vd_add(v, k, who, name, GC_CHECK_PASS, NULL, "as in the spec", NULL);
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
	vd_add(s->v, GC_CT_GUEST, s->t->name, name, st, exp, found, hint);
}

/* The shell command that runs `script` as root (sudo -n for others). */
int vd_run_root(struct gsess *s, const char *script, struct gc_ssh_result *res,
		    struct gc_error *err)
{
	char *cmd = gc_guest_as_root(script);
	int rc = gc_ssh_exec(s->ssh, cmd, res, err);

	free(cmd);
	return rc;
}

const char *vd_stderr_line(const struct gc_ssh_result *r, char *buf, size_t n)
{
	const char *src = r->err_len > 0 ? r->err : (r->out ? r->out : "");
	size_t k;

	/* ssh's own notices (a host key added on first contact) are not the cause */
	while (strncmp(src, "Warning: Permanently added", 26) == 0 && strchr(src, '\n') != NULL)
		src = strchr(src, '\n') + 1;
	k = strcspn(src, "\r\n");
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
	uint64_t t0;
	int rc;

	vd_progress(s->v, s->t->name, "running the probe");
	t0 = gc_now_ns();
	if (vd_run_root(s, cmd, &res, &err) != 0) {
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
		vd_stderr_line(&res, line, sizeof(line));
		gadd(s, "probe", GC_CHECK_FAIL, "ran", line,
		     res.exit_status == 127 || strstr(line, "GLIBC") != NULL
			     ? "the probe cannot start on this guest: see docs/probe.md, 'Which guests "
			       "it runs on'"
			     : "the probe printed no JSON report");
		goto out;
	}
	{
		double secs = (double)(gc_now_ns() - t0) / 1e9;

		snprintf(line, sizeof(line), "ran in %.1f s (exit %d)", secs, res.exit_status);
		vd_add_timed(s->v, secs, GC_CT_GUEST, s->t->name, "probe", GC_CHECK_PASS, "ran", line,
			     NULL);
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
	vd_progress(s->v, s->t->name, "uploading the probe");
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
				  vd_stderr_line(&res, line, sizeof(line)));
out:
	gc_ssh_result_free(&res);
	gc_buf_free(&cmd);
	return rc;
}

static int guest_connect(struct gsess *s, struct gc_error *err)
{
	struct gc_ssh_opts so;
	char *known = NULL;
	int rc;

	gc_ssh_opts_from_spec(&so, &known, &s->v->o->drv, s->gst->address, &s->gst->ssh,
			      s->gst->credentials, "root");
	rc = gc_ssh_connect(&s->ssh, &so, err);
	free(known);
	if (rc == 0)
		gc_ssh_set_command_timeout(s->ssh, 600u * 1000u);
	return rc;
}

int vd_reconnect(struct gsess *s, struct gc_error *err)
{
	gc_ssh_free(s->ssh);
	s->ssh = NULL;
	return guest_connect(s, err);
}

static void *guest_session(void *arg)
{
	struct gsess *s = arg;
	struct gc_ssh_result res = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_guest_facts f;
	char token[17], line[320], *script = NULL;
	bool have_facts = false;

	memset(&f, 0, sizeof(f));
	vd_progress(s->v, s->t->name, "connecting");
	if (guest_connect(s, &err) != 0) {
		gadd(s, "ssh", GC_CHECK_FAIL, "connected", err.msg,
		     "the guest does not answer SSH: is the VM powered on, its address and "
		     "credentials right, its host key known?");
		goto out;
	}
	vd_progress(s->v, s->t->name, "reading nvidia-smi and the RDMA interface");
	gc_random_token(token);
	script = gc_guest_observe_script(s->gst, token);
	if (vd_run_root(s, script, &res, &err) != 0) {
		gadd(s, "observe", GC_CHECK_FAIL, "read", err.msg, NULL);
		goto out;
	}
	if (gc_ssh_sudo_refused(&res)) {
		gadd(s, "sudo", GC_CHECK_FAIL, "sudo -n", vd_stderr_line(&res, line, sizeof(line)),
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
	return NULL;
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
			vd_add(&v, GC_CT_PAIR, "pairs", "rdma.write", GC_CHECK_SKIP, NULL, NULL,
			    "--skip pairs");
	} else if (!(o->skip & GC_VSKIP_NODE)) {
		vd_pair_rounds(&v, gs, ng);
	}
	if (o->mpirun && !(o->skip & GC_VSKIP_NODE))
		vd_workload(&v, gs, ng);
	if (v.r->interrupted) /* the user asked to stop: no files written after that */
		goto out;
	if ((o->emit_mpijob != NULL || o->emit_slurm != NULL) && (rc = vd_emit(&v, gs, ng, err)) != 0)
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
