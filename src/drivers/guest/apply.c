/*
 * apply.c - what each guest resource sends, and the guest's reboot.
 *
 * Every change is one sh script run as root, composed only of constants,
 * values the loader checked against strict patterns (package, interface
 * and device names, CIDRs, host names, numbers) and files rendered by
 * render.c, written through a quoted here-document.  Scripts are
 * idempotent: a retry after a dropped connection first lets dpkg finish
 * what it was doing (`dpkg --configure -a`) and then asks again.  Files
 * from the operator's machine (a .run driver, an OFED archive, the licence
 * token) go up on the command's standard input, never in argv.
 * Runtime settings are persisted the OS's own way: modules-load.d, the
 * network backend's config, a oneshot unit that re-applies the RoCE QoS at
 * every boot, chrony's drop-in directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gc/pattern.h"
#include "guest_int.h"

/* An apt or dpkg still running (an earlier session's, orphaned when its
 * connection dropped, or unattended-upgrades) is waited for, bounded, before
 * anything else; then an interrupted dpkg is finished, then the install. */
#define WAIT_PM "i=0; while pgrep -x 'dpkg|apt|apt-get|unattended-upgr|dnf|rpm' >/dev/null " \
		"2>&1 && [ $i -lt 600 ]; do sleep 1; i=$((i + 1)); done; "
/* The package lists are refreshed when our last refresh is over an hour
 * old (as Ansible's apt cache_valid_time does), or a source was added or
 * edited since, not before every install: a first apply installs four
 * times, and each `apt-get update` re-reads every source. */
#define APT_STAMP "/var/lib/gpuclusterctl/apt-update.stamp"
#define APT_STALE "[ -z \"$(find " APT_STAMP " -mmin -60 2>/dev/null)\" ] || " \
		  "[ -n \"$(find /etc/apt/sources.list /etc/apt/sources.list.d -newer " APT_STAMP \
		  " 2>/dev/null)\" ]"
#define APT "export DEBIAN_FRONTEND=noninteractive; " WAIT_PM "dpkg --configure -a; " \
	    "if " APT_STALE "; then " \
	    "apt-get -q -o DPkg::Lock::Timeout=300 update >/dev/null 2>&1 && " \
	    "mkdir -p /var/lib/gpuclusterctl && touch " APT_STAMP "; fi; " \
	    "apt-get -q -y -o DPkg::Lock::Timeout=300 install --no-install-recommends"
#define DNF WAIT_PM "dnf -y -q install"

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Append a script step that writes `content` to `path` atomically. */
static void put_file(struct gc_buf *b, const char *path, const char *content, const char *mode)
{
	char tok[17];

	gc_random_token(tok);
	gc_buf_printf(b, "mkdir -p \"$(dirname %s)\"\ncat > %s.gc-new <<'GC_EOF_%s'\n%sGC_EOF_%s\n"
			 "chmod %s %s.gc-new && mv -f %s.gc-new %s\n",
		      path, path, tok, content, tok, mode, path, path, path);
}

static void install_cmd(struct gc_buf *b, const struct gc_guest *g, const char *const *pkgs,
			size_t n)
{
	gc_buf_puts(b, gc_guest_pm(g) == GC_GPM_DNF ? DNF : APT);
	for (size_t i = 0; i < n; i++)
		gc_buf_printf(b, " %s", pkgs[i]);
	gc_buf_puts(b, "\n");
}

/* Upload a local file to GC_GUEST_STAGE/<its name> through stdin. */
static int upload(struct guest_conn *c, struct gc_drv_ctx *ctx, const char *local,
		  char *remote, size_t n, struct gc_error *err)
{
	const char *base = strrchr(local, '/');
	struct gc_buf s = GC_BUF_INIT;
	int fd, rc;

	base = base ? base + 1 : local;
	if (!gc_valid_abs_path(local) || *base == '\0')
		return gc_error_set(err, GC_EINVAL, "guest '%s': unsafe path '%s'", c->t->name, local);
	fd = open(local, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gc_error_set(err, GC_EIO, "guest '%s': cannot read '%s': %s", c->t->name, local,
				    strerror(errno));
	snprintf(remote, n, GC_GUEST_STAGE "/%s", base);
	gc_buf_printf(&s, "umask 077; mkdir -p " GC_GUEST_STAGE " && cat > %s.part && mv -f %s.part %s",
		      remote, remote, remote);
	gc_drv_note(ctx, c->t, "uploading %s", base);
	rc = guest_run(c, ctx, "upload", gc_buf_str(&s), fd, true, err);
	close(fd);
	gc_buf_free(&s);
	return rc;
}

/* ---------------------------------------------------------------- steps */

/*
 * The changes that run as plain scripts: the packages they install and the
 * rest of their script.  Alone, a step is one exec: `set -e`, its install,
 * its body.  In a batch (guest_apply_batch) the batch's packages go in one
 * install, then each body in a subshell of its own.
 */
static void step_init(struct guest_step *st, const char *what, const char *note)
{
	memset(st, 0, sizeof(*st));
	st->what = what;
	snprintf(st->note, sizeof(st->note), "%s", note);
}

static bool driver_from_packages(const struct gc_guest *g)
{
	return !(g->driver != NULL && strcmp(g->driver->source, "runfile") == 0) &&
	       !(gc_guest_pm(g) == GC_GPM_DNF && (g->driver == NULL || g->driver->package == NULL));
}

static bool rdma_from_packages(const struct gc_guest *g)
{
	return !(g->rdma_stack != NULL && strcmp(g->rdma_stack->source, "ofed") == 0);
}

static void step_driver(struct guest_conn *c, struct guest_step *st)
{
	step_init(st, "NVIDIA driver install", "installing the NVIDIA driver");
	st->pkgs[st->npkgs++] = gc_guest_driver_package(c->g, st->pkgname, sizeof(st->pkgname));
}

static void step_rdma_stack(struct guest_conn *c, struct guest_step *st)
{
	step_init(st, "RDMA stack install", "installing the RDMA stack");
	gc_guest_rdma_packages(c->g, st->pkgs, &st->npkgs);
}

static int run_step(struct guest_conn *c, struct gc_drv_ctx *ctx, struct guest_step *st,
		    struct gc_error *err)
{
	struct gc_buf s = GC_BUF_INIT;
	int rc;

	gc_buf_puts(&s, "set -e\n");
	if (st->npkgs > 0)
		install_cmd(&s, c->g, st->pkgs, st->npkgs);
	gc_buf_puts(&s, gc_buf_str(&st->body));
	gc_drv_note(ctx, c->t, "%s", st->note);
	rc = guest_run(c, ctx, st->what, gc_buf_str(&s), -1, true, err);
	gc_buf_free(&s);
	gc_buf_free(&st->body);
	return rc;
}

static int apply_driver(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	const struct gc_guest *g = c->g;
	struct gc_buf s = GC_BUF_INIT;
	char remote[1200];
	struct guest_step st;
	int rc;

	if (driver_from_packages(g)) {
		step_driver(c, &st);
		return run_step(c, ctx, &st, err);
	}
	if (g->driver != NULL && strcmp(g->driver->source, "runfile") == 0) {
		if ((rc = upload(c, ctx, g->driver->runfile, remote, sizeof(remote), err)) != 0)
			return rc;
		/* --silent: no questions, the licence accepted (NVIDIA's installer) */
		gc_buf_printf(&s, "sh %s --silent", remote);
	} else {
		/* NVIDIA's CUDA repository: one dnf module stream per branch */
		gc_buf_printf(&s, "dnf -y -q module install nvidia-driver:%ld-dkms",
			      strtol(g->nvidia_driver, NULL, 10));
	}
	gc_drv_note(ctx, c->t, "installing the NVIDIA driver");
	rc = guest_run(c, ctx, "NVIDIA driver install", gc_buf_str(&s), -1, true, err);
	gc_buf_free(&s);
	return rc;
}

static int apply_rdma_stack(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	const struct gc_guest *g = c->g;
	struct gc_buf s = GC_BUF_INIT;
	char remote[1200];
	struct guest_step st;
	int rc;

	if (rdma_from_packages(g)) {
		step_rdma_stack(c, &st);
		return run_step(c, ctx, &st, err);
	}
	if ((rc = upload(c, ctx, g->rdma_stack->installer, remote, sizeof(remote), err)) != 0)
		return rc;
	gc_buf_printf(&s, "cd " GC_GUEST_STAGE " && rm -rf ofed && mkdir ofed && "
			  "tar -xzf %s -C ofed && cd ofed/* && ./mlnxofedinstall --force "
			  "--without-fw-update", remote);
	gc_drv_note(ctx, c->t, "installing the RDMA stack");
	rc = guest_run(c, ctx, "RDMA stack install", gc_buf_str(&s), -1, true, err);
	gc_buf_free(&s);
	return rc;
}

static int step_rdma_if(struct guest_conn *c, struct guest_step *st, struct gc_error *err)
{
	const struct gc_rdma_if *ri = c->g->rdma_interface;
	struct gc_buf *s;
	enum gc_guest_net net = c->have_facts ? c->facts.net : GC_GNET_UNKNOWN;
	char path[200], note[96];
	char *cfg;

	snprintf(note, sizeof(note), "configuring %s", ri->name);
	step_init(st, "RDMA interface", note);
	s = &st->body;
	if (net == GC_GNET_UNKNOWN)
		return gc_error_set(err, GC_EREMOTE, "guest '%s': no network configuration system "
				    "found (netplan, NetworkManager, systemd-networkd, ifcfg or "
				    "ifupdown): cannot persist '%s'", c->t->name, ri->name);
	gc_buf_printf(s, "ip link set dev %s mtu %u up\n", ri->name, ri->mtu);
	if (ri->address != NULL)
		gc_buf_printf(s, "ip -4 addr flush dev %s scope global\nip addr add %s dev %s\n",
			      ri->name, ri->address, ri->name);
	cfg = gc_guest_render_netcfg(ri, net);
	gc_guest_netcfg_path(net, ri->name, path, sizeof(path));
	put_file(s, path, cfg, net == GC_GNET_NM ? "600" : "644");
	free(cfg);
	switch (net) {
	case GC_GNET_NETPLAN:
		gc_buf_puts(s, "netplan generate\n");
		break;
	case GC_GNET_NM:
		gc_buf_printf(s, "nmcli connection reload && nmcli connection up gpuclusterctl-%s "
				 ">/dev/null\n", ri->name);
		break;
	case GC_GNET_NETWORKD:
		gc_buf_printf(s, "networkctl reload && networkctl reconfigure %s\n", ri->name);
		break;
	case GC_GNET_IFCFG:
	case GC_GNET_IFUPDOWN:
	case GC_GNET_UNKNOWN:
		break; /* read at boot; the runtime state is set above */
	}
	return 0;
}

/* Wait (bounded) until the driver reports the licence (REAL-FORMATS C.4). */
static int wait_licence(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	unsigned timeout_s = c->g->license->timeout_s ? c->g->license->timeout_s : 300;
	uint64_t t0 = gc_now_ns(), deadline = t0 + (uint64_t)timeout_s * 1000000000u;
	const char *seen = "nothing";

	for (;;) {
		int rc = guest_observe_now(c, ctx, NULL, err);

		if (rc != 0)
			return rc;
		if (c->facts.license_status != NULL &&
		    strncmp(c->facts.license_status, "Licensed", 8) == 0)
			return 0;
		seen = c->facts.license_status ? c->facts.license_status
		       : c->facts.smi_error    ? c->facts.smi_error
					       : "no licence status";
		if (gc_drv_interrupted(ctx)) /* not the timeout: say what happened */
			return gc_error_set(err, GC_EINTR, "guest '%s': interrupted %.0f s into the "
					    "wait for the licence (nvidia-smi: '%s')", c->t->name,
					    (double)(gc_now_ns() - t0) / 1e9, seen);
		if (gc_now_ns() >= deadline)
			break;
		gc_drv_note(ctx, c->t, "waiting for the licence (%.0f s): %s",
			    (double)(gc_now_ns() - t0) / 1e9, seen);
		sleep_ms(2000);
	}
	return gc_error_set(err, GC_EREMOTE, "guest '%s': the licence did not come within %u s "
			    "(nvidia-smi: '%s'); check the licence server or token and %s",
			    c->t->name, timeout_s, seen, GC_GUEST_GRIDD);
}

static int apply_license(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	const struct gc_license *l = c->g->license;
	struct gc_buf s = GC_BUF_INIT;
	int rc;

	if (l->token_file != NULL) {
		int fd = open(l->token_file, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return gc_error_set(err, GC_EIO, "guest '%s': cannot read the licence token "
					    "'%s': %s", c->t->name, l->token_file, strerror(errno));
		rc = guest_run(c, ctx, "licence token upload",
			       "umask 022; mkdir -p /etc/nvidia/ClientConfigToken && cat > "
			       GC_GUEST_TOKEN ".part && chmod 744 " GC_GUEST_TOKEN ".part && mv -f "
			       GC_GUEST_TOKEN ".part " GC_GUEST_TOKEN, fd, true, err);
		close(fd);
		if (rc != 0)
			return rc;
	}
	/* keep the rest of gridd.conf (from NVIDIA's template) and set our keys */
	gc_buf_puts(&s, "set -e\nf=" GC_GUEST_GRIDD "\nmkdir -p /etc/nvidia\n"
			"[ -f $f ] || cp $f.template $f 2>/dev/null || : > $f\n"
			"setkey() { grep -v \"^$1=\" $f > $f.gc-new || true; echo \"$1=$2\" >> $f.gc-new; "
			"mv -f $f.gc-new $f; }\n");
	if (l->server != NULL && gc_valid_host(l->server))
		gc_buf_printf(&s, "setkey ServerAddress %s\nsetkey ServerPort %u\n", l->server, l->port);
	gc_buf_printf(&s, "setkey FeatureType %u\nsystemctl restart nvidia-gridd\n", l->feature_type);
	gc_drv_note(ctx, c->t, "licensing");
	rc = guest_run(c, ctx, "licence", gc_buf_str(&s), -1, true, err);
	gc_buf_free(&s);
	return rc != 0 ? rc : wait_licence(c, ctx, err);
}

static void step_qos(struct guest_conn *c, struct guest_step *st)
{
	const struct gc_roce_qos *q = c->g->roce_qos;
	struct gc_buf unit = GC_BUF_INIT;
	char *script = gc_guest_render_qos_script(q);
	char note[96];

	gc_buf_printf(&unit, "# written by gpuclusterctl\n[Unit]\nDescription=RoCE QoS of %s "
			     "(gpuclusterctl)\nAfter=network-pre.target systemd-modules-load.service\n"
			     "Wants=network-pre.target\n\n[Service]\nType=oneshot\n"
			     "RemainAfterExit=yes\nExecStart=/bin/sh " GC_GUEST_QOS_SCRIPT "\n\n"
			     "[Install]\nWantedBy=multi-user.target\n", q->interface);
	snprintf(note, sizeof(note), "RoCE QoS on %s", q->interface);
	step_init(st, "RoCE QoS", note);
	put_file(&st->body, GC_GUEST_QOS_SCRIPT, script, "755");
	put_file(&st->body, "/etc/systemd/system/" GC_GUEST_QOS_UNIT, gc_buf_str(&unit), "644");
	gc_buf_puts(&st->body, "systemctl daemon-reload\nsystemctl enable -q " GC_GUEST_QOS_UNIT "\n"
			       "sh " GC_GUEST_QOS_SCRIPT "\n");
	free(script);
	gc_buf_free(&unit);
}

static int step_peermem(struct guest_conn *c, const struct gc_resource *r, struct guest_step *st,
			struct gc_error *err)
{
	const char *mod = gc_resource_prop(r, "module");
	struct gc_buf conf = GC_BUF_INIT;
	char note[96];

	if (mod == NULL || !gc_valid_package(mod))
		return gc_error_set(err, GC_EINVAL, "guest '%s': no valid module name", c->t->name);
	snprintf(note, sizeof(note), "loading %s", mod);
	step_init(st, "peer memory module", note);
	gc_buf_printf(&st->body, "modprobe %s\n", mod);
	gc_buf_printf(&conf, "# written by gpuclusterctl: GPUDirect RDMA\n%s\n", mod);
	put_file(&st->body, GC_GUEST_MODULES_CONF, gc_buf_str(&conf), "644");
	gc_buf_free(&conf);
	return 0;
}

static void step_toolkit(struct guest_step *st)
{
	step_init(st, "NVIDIA Container Toolkit", "installing the NVIDIA Container Toolkit");
	st->pkgs[st->npkgs++] = "nvidia-container-toolkit";
	/* the container runtimes present get the nvidia runtime (REAL-FORMATS C.6) */
	gc_buf_puts(&st->body, "for rt in docker containerd; do if command -v $rt >/dev/null; then "
			       "nvidia-ctk runtime configure --runtime=$rt && systemctl restart $rt; "
			       "fi; done\n");
}

static void step_ntp(struct guest_conn *c, struct guest_step *st)
{
	const struct gc_guest *g = c->g;
	char *conf = gc_guest_render_chrony(g->ntp, g->nntp);

	/* installed every time: idempotent, and it waits for (and finishes) a
	 * package manager an earlier, dropped session left behind */
	step_init(st, "NTP", "NTP");
	st->pkgs[st->npkgs++] = "chrony";
	put_file(&st->body, gc_guest_chrony_path(g), conf, "644");
	if (gc_guest_pm(g) == GC_GPM_DNF)
		gc_buf_puts(&st->body, "grep -q '^include /etc/chrony.d/' /etc/chrony.conf || echo "
				       "'include /etc/chrony.d/*.conf' >> /etc/chrony.conf\n");
	gc_buf_printf(&st->body, "systemctl enable -q %s\nsystemctl restart %s\n",
		      gc_guest_chrony_service(g), gc_guest_chrony_service(g));
	free(conf);
}

bool guest_batchable_resource(const struct gc_guest *g, const struct gc_resource *r)
{
	switch (r->kind) {
	case GC_RES_GUEST_DRIVER:
		return driver_from_packages(g);
	case GC_RES_GUEST_RDMA_STACK:
		return rdma_from_packages(g);
	case GC_RES_GUEST_RDMA_IF:
	case GC_RES_GUEST_PEERMEM:
	case GC_RES_GUEST_ROCE_QOS:
	case GC_RES_GUEST_CONTAINER_TOOLKIT:
	case GC_RES_GUEST_NTP:
		return true;
	default: /* the licence waits for the driver's word; uploads go first */
		return false;
	}
}

int guest_step_of(struct guest_conn *c, const struct gc_resource *r, struct guest_step *st,
		  struct gc_error *err)
{
	switch (r->kind) {
	case GC_RES_GUEST_DRIVER:
		step_driver(c, st);
		return 0;
	case GC_RES_GUEST_RDMA_STACK:
		step_rdma_stack(c, st);
		return 0;
	case GC_RES_GUEST_RDMA_IF:
		return step_rdma_if(c, st, err);
	case GC_RES_GUEST_PEERMEM:
		return step_peermem(c, r, st, err);
	case GC_RES_GUEST_ROCE_QOS:
		step_qos(c, st);
		return 0;
	case GC_RES_GUEST_CONTAINER_TOOLKIT:
		step_toolkit(st);
		return 0;
	case GC_RES_GUEST_NTP:
		step_ntp(c, st);
		return 0;
	default:
		return gc_error_set(err, GC_ENOTSUP, "guest '%s': '%s' is not a batch step",
				    c->t->name, r->id);
	}
}

void guest_install_cmd(struct gc_buf *b, const struct gc_guest *g, const char *const *pkgs,
		       size_t n)
{
	install_cmd(b, g, pkgs, n);
}

int guest_apply_resource(struct guest_conn *c, struct gc_drv_ctx *ctx,
			 const struct gc_resource *r, struct gc_error *err)
{
	struct guest_step st;

	/* an if chain: only guest kinds reach a guest's driver */
	if (r->kind == GC_RES_GUEST_DRIVER)
		return apply_driver(c, ctx, err);
	if (r->kind == GC_RES_GUEST_RDMA_STACK)
		return apply_rdma_stack(c, ctx, err);
	if (r->kind == GC_RES_GUEST_LICENSE)
		return apply_license(c, ctx, err);
	if (guest_batchable_resource(c->g, r)) {
		if (guest_step_of(c, r, &st, err) != 0)
			return err->code;
		return run_step(c, ctx, &st, err);
	}
	return gc_error_set(err, GC_ENOTSUP, "guest '%s': '%s' is not a guest resource", c->t->name,
			    r->id);
}

/* ---------------------------------------------------------------- reboot */

/* detached, so the command returns before sshd goes down */
#define GUEST_REBOOT "nohup sh -c 'sleep 1; systemctl reboot' >/dev/null 2>&1 &"

int guest_reboot(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	int rc;

	/* the boot id before: WAIT_HOST wants a different one */
	if ((rc = guest_observe_now(c, ctx, NULL, err)) != 0)
		return rc;
	snprintf(c->boot_before, sizeof(c->boot_before), "%s",
		 c->facts.boot_id ? c->facts.boot_id : "");
	c->reboot_sent_ns = gc_now_ns();
	gc_drv_note(ctx, c->t, "rebooting the guest");
	rc = guest_run(c, ctx, "reboot", GUEST_REBOOT, -1, true, err);
	if (rc == GC_ENET || rc == GC_ETIMEOUT) {
		gc_error_clear(err); /* it went down under us: WAIT_HOST tells */
		rc = 0;
	}
	return rc;
}

/* gc_drv_wait_reboot's view of the guest. */
static int wr_connect(void *arg, unsigned connect_ms, struct gc_error *err)
{
	struct guest_conn *c = arg;

	return guest_ssh_open(c, c->ctx, connect_ms, err);
}

static void wr_disconnect(void *arg)
{
	struct guest_conn *c = arg;

	gc_ssh_free(c->ssh);
	c->ssh = NULL;
}

/* The guest is observed whole: the next step finds its facts fresh. */
static int wr_boot_id(void *arg, char *out, size_t n, struct gc_error *err)
{
	struct guest_conn *c = arg;
	int rc = guest_observe_now(c, c->ctx, NULL, err);

	if (rc == 0)
		snprintf(out, n, "%s", c->facts.boot_id ? c->facts.boot_id : "");
	return rc;
}

static int wr_resend(void *arg, struct gc_error *err)
{
	struct guest_conn *c = arg;

	return guest_run(c, c->ctx, "reboot", GUEST_REBOOT, -1, true, err);
}

int guest_wait(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	/* up with the old boot id two minutes after the reboot went out: once more */
	struct gc_drv_reboot r = {.t = c->t, .noun = "guest", .before = c->boot_before,
				  .sent_ns = c->reboot_sent_ns, .grace_s = 120, .arg = c,
				  .connect = wr_connect, .disconnect = wr_disconnect,
				  .boot_id = wr_boot_id, .resend = wr_resend};
	int rc;

	c->ctx = ctx;
	rc = gc_drv_wait_reboot(ctx, &r, err);
	c->ctx = NULL;
	return rc;
}

int guest_verify(struct guest_conn *c, struct gc_drv_ctx *ctx, struct gc_error *err)
{
	int rc = guest_observe_now(c, ctx, NULL, err);

	if (rc != 0)
		return rc;
	if (c->reboot_pending)
		return gc_error_set(err, GC_EREMOTE, "guest '%s': after the reboot %s (installed %s, "
				    "running %s)", c->t->name,
				    "the NVIDIA driver running is still not the one installed",
				    c->facts.driver_version ? c->facts.driver_version : "?",
				    c->facts.loaded_version ? c->facts.loaded_version : "none");
	for (size_t i = 0; i < c->nres; i++) {
		const struct gc_resource *r = c->res[i];

		if ((r->flags & GC_RES_NEEDS_REBOOT) && !gc_drv_resource_converged(ctx, r))
			return gc_error_set(err, GC_EREMOTE, "guest '%s': after the reboot '%s' still "
					    "differs from the spec", c->t->name, r->id);
	}
	return 0;
}
