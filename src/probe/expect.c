/*
 * expect.c - what this guest should have, compared with what it has.
 *
 * The expect file is "key = value" lines ('#' comments, blank lines
 * allowed), written by the cluster half of validate from the spec or by
 * hand; the probe is libc-only so no JSON/YAML.  Keys are listed in
 * `evals[]` below and in docs/probe.md.  Each evaluated key becomes one
 * gc_probe_check with the expected value, the found value, and on failure a
 * hint at the usual cause (an MMIO window too small, no IP on the RoCE
 * netdev, PFC not matching the switch, ...).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_int.h"

static bool known_key(const char *k);

static int add(struct gc_probe_expect *e, const char *k, size_t kn, const char *v, size_t vn,
	       int line, const char *file, struct gc_error *err)
{
	char key[48];

	if (kn == 0 || kn >= sizeof(key))
		goto bad;
	pb_copy(key, sizeof(key), k, kn);
	if (!known_key(key)) {
		gc_error_set(err, GC_EUSAGE, "%s:%d: error: unknown key '%s' (see docs/probe.md)",
			     file, line, key);
		return GC_EUSAGE;
	}
	if (vn == 0 || vn >= sizeof(e->items[0].value)) {
		gc_error_set(err, GC_EUSAGE, "%s:%d: error: '%s' needs a value of 1..%zu bytes",
			     file, line, key, sizeof(e->items[0].value) - 1);
		return GC_EUSAGE;
	}
	if (e->n >= GC_PROBE_MAX_CHECKS) {
		gc_error_set(err, GC_EUSAGE, "%s:%d: error: more than %d expectations", file, line,
			     GC_PROBE_MAX_CHECKS);
		return GC_EUSAGE;
	}
	pb_copy(e->items[e->n].key, sizeof(e->items[0].key), key, strlen(key));
	pb_copy(e->items[e->n].value, sizeof(e->items[0].value), v, vn);
	e->items[e->n].line = line;
	e->n++;
	return 0;
bad:
	gc_error_set(err, GC_EUSAGE, "%s:%d: error: expected 'key = value'", file, line);
	return GC_EUSAGE;
}

static int add_kv(struct gc_probe_expect *e, const char *s, size_t n, int line, const char *file,
		  struct gc_error *err)
{
	const char *eqs = memchr(s, '=', n);
	size_t kn, vn;
	const char *k, *v;

	if (!eqs) {
		gc_error_set(err, GC_EUSAGE, "%s:%d: error: expected 'key = value'", file, line);
		return GC_EUSAGE;
	}
	kn = (size_t)(eqs - s);
	k = pb_trim(s, &kn);
	vn = n - (size_t)(eqs - s) - 1;
	v = pb_trim(eqs + 1, &vn);
	return add(e, k, kn, v, vn, line, file, err);
}

int gc_probe_expect_parse(struct gc_probe_expect *out, const char *text, size_t len,
			  const char *file, struct gc_error *err)
{
	const char *p = text, *end = text + len;
	int line = 0, rc;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *hash = memchr(p, '#', n);
		const char *t;

		line++;
		if (hash)
			n = (size_t)(hash - p);
		t = pb_trim(p, &n);
		if (memchr(t, '\0', n)) {
			gc_error_set(err, GC_EUSAGE, "%s:%d: error: NUL byte", file, line);
			return GC_EUSAGE;
		}
		if (n > 0 && (rc = add_kv(out, t, n, line, file, err)) != 0)
			return rc;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int gc_probe_expect_add(struct gc_probe_expect *e, const char *kv, struct gc_error *err)
{
	return add_kv(e, kv, strlen(kv), 0, "--expect-set", err);
}

/* ---- evaluation ---- */

static struct gc_probe_check *check(struct gc_probe_report *r, const char *key,
				    const char *expected)
{
	struct gc_probe_check *c;

	if (r->nexpect >= GC_PROBE_MAX_CHECKS)
		return NULL;
	c = &r->checks[r->nexpect++];
	memset(c, 0, sizeof(*c));
	pb_copy(c->key, sizeof(c->key), key, strlen(key));
	pb_copy(c->expected, sizeof(c->expected), expected, strlen(expected));
	return c;
}

static bool truthy(const char *v)
{
	return strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0 ||
	       strcasecmp(v, "pass") == 0;
}

static bool ci_contains(const char *hay, const char *needle)
{
	size_t n = strlen(needle), i;

	for (i = 0; hay[i]; i++)
		if (strncasecmp(hay + i, needle, n) == 0)
			return true;
	return n == 0;
}

static long num(const char *v, bool *ok)
{
	long x = 0;

	*ok = pb_parse_long(v, strlen(v), &x);
	return x;
}

/* First port that is active, else the first port, of the named (or first) device. */
static const struct gc_probe_port *pick_port(const struct gc_probe_rdma *rd,
					     const struct gc_probe_rdma_dev **devp)
{
	int i, j;

	for (i = 0; i < rd->ndev; i++)
		for (j = 0; j < rd->devs[i].nports; j++)
			if (rd->devs[i].ports[j].state_num == 4) {
				*devp = &rd->devs[i];
				return &rd->devs[i].ports[j];
			}
	for (i = 0; i < rd->ndev; i++)
		if (rd->devs[i].nports > 0) {
			*devp = &rd->devs[i];
			return &rd->devs[i].ports[0];
		}
	*devp = rd->ndev ? &rd->devs[0] : NULL;
	return NULL;
}

static void pfc_string(char *out, size_t cap, const int pfc[8])
{
	size_t n = 0;
	int i;

	out[0] = '\0';
	for (i = 0; i < 8; i++) {
		if (pfc[i] < 0) {
			pb_fmt(out, cap, "unknown");
			return;
		}
		if (pfc[i] == 1 && n + 3 < cap)
			n += (size_t)snprintf(out + n, cap - n, "%s%d", n ? "," : "", i);
	}
	if (n == 0)
		pb_fmt(out, cap, "none");
}

static void normalize_list(char *out, size_t cap, const char *in)
{
	int prio[8] = {0}, i, any = 0;
	const char *p = in;
	size_t n = 0;

	/* "3", "3,4", "0,0,0,1,0,0,0,0" (8 flags) or "none" */
	if (strcasecmp(in, "none") == 0) {
		pb_fmt(out, cap, "none");
		return;
	}
	{
		int cnt = 0;
		const char *q;
		for (q = in; *q; q++)
			cnt += *q == ',';
		if (cnt == 7) {
			for (i = 0; i < 8 && *p; i++) {
				prio[i] = *p == '1';
				p = strchr(p, ',');
				p = p ? p + 1 : "";
			}
		} else {
			while (*p) {
				if (*p >= '0' && *p <= '7')
					prio[*p - '0'] = 1;
				p++;
			}
		}
	}
	out[0] = '\0';
	for (i = 0; i < 8; i++)
		if (prio[i] && n + 3 < cap) {
			n += (size_t)snprintf(out + n, cap - n, "%s%d", any ? "," : "", i);
			any = 1;
		}
	if (!any)
		pb_fmt(out, cap, "none");
}

/*
 * What one key's handler sees besides the check it fills (its key and
 * expected value already set): the report and its two halves, the expected
 * value, and the RDMA device and port that the port checks look at
 * (pick_port).
 */
struct eval {
	const struct gc_probe_report *r;
	const struct gc_probe_cuda *cu;
	const struct gc_probe_rdma *rd;
	const char *v;
	const struct gc_probe_rdma_dev *dev;
	const struct gc_probe_port *port;
};

#define FOUND(...) pb_fmt(c->found, sizeof(c->found), __VA_ARGS__)
#define HINT(...) pb_fmt(c->hint, sizeof(c->hint), __VA_ARGS__)

static void eval_gpu_count(struct gc_probe_check *c, const struct eval *e)
{
	bool ok;
	long x;

	x = num(e->v, &ok);
	FOUND("%d", e->cu->ngpu);
	c->pass = ok && x == e->cu->ngpu;
	if (!c->pass && e->cu->ngpu == 0)
		HINT("no GPU visible (%s): is the PCI device attached to the VM, the NVIDIA "
		     "driver loaded (lsmod | grep nvidia)? Large-BAR GPUs need "
		     "pciPassthru.use64bitMMIO and pciPassthru.64bitMMIOSizeGB",
		     e->cu->reason[0] ? e->cu->reason : gc_probe_status_name(e->cu->status));
	else if (!c->pass)
		HINT("a GPU is missing or extra: check the VM's PCI devices / vGPU profiles "
		     "and 'dmesg | grep -i nvrm' for devices the driver refused");
}

static void eval_gpu_model(struct gc_probe_check *c, const struct eval *e)
{
	int i;

	c->pass = e->cu->ngpu > 0;
	FOUND("%s", e->cu->ngpu ? e->cu->gpus[0].name : "no GPU");
	for (i = 0; i < e->cu->ngpu; i++)
		if (!ci_contains(e->cu->gpus[i].name, e->v)) {
			c->pass = false;
			FOUND("%s", e->cu->gpus[i].name);
		}
	if (!c->pass)
		HINT("a different GPU model is attached than the spec says");
}

static void eval_gpu_memory_mib_min(struct gc_probe_check *c, const struct eval *e)
{
	bool ok;
	long x;
	uint64_t minmib = ~0ull;
	int i;

	x = num(e->v, &ok);
	for (i = 0; i < e->cu->ngpu; i++)
		if (e->cu->gpus[i].mem_bytes / 1048576 < minmib)
			minmib = e->cu->gpus[i].mem_bytes / 1048576;
	if (e->cu->ngpu == 0)
		minmib = 0;
	FOUND("%llu MiB", (unsigned long long)minmib);
	c->pass = ok && e->cu->ngpu > 0 && minmib >= (uint64_t)x;
	if (!c->pass)
		HINT("GPU memory %llu MiB: MMIO too small? check pciPassthru.use64bitMMIO "
		     "and pciPassthru.64bitMMIOSizeGB (>= the sum of the GPUs' memory, "
		     "rounded up to a power of two)", (unsigned long long)minmib);
}

static void eval_gpu_vgpu_framebuffer_mib(struct gc_probe_check *c, const struct eval *e)
{
	bool ok;
	long x;
	uint64_t mib = e->cu->ngpu ? e->cu->gpus[0].mem_bytes / 1048576 : 0;

	x = num(e->v, &ok);
	FOUND("%llu MiB", (unsigned long long)mib);
	/* the guest sees the profile's framebuffer less a small reservation */
	c->pass = ok && x > 0 && mib <= (uint64_t)x && mib * 10 >= (uint64_t)x * 9;
	if (!c->pass)
		HINT("the vGPU profile differs from the spec (e.g. -8Q vs -16Q): check the "
		     "VM's vGPU device; a framebuffer of 0 means the vGPU did not start "
		     "(vGPU manager log on the host)");
}

static void eval_gpu_virtualization(struct gc_probe_check *c, const struct eval *e)
{
	int i;

	c->pass = e->cu->ngpu > 0;
	FOUND("%s", e->cu->ngpu ? (e->cu->gpus[0].virt_mode[0] ? e->cu->gpus[0].virt_mode
							   : "unknown")
			     : "no GPU");
	for (i = 0; i < e->cu->ngpu; i++)
		if (strcasecmp(e->cu->gpus[i].virt_mode, e->v) != 0) {
			c->pass = false;
			FOUND("%s", e->cu->gpus[i].virt_mode[0] ? e->cu->gpus[i].virt_mode
							     : "unknown");
		}
	if (!c->pass)
		HINT("'VGPU' means a vGPU profile, 'Pass-Through' a whole GPU by PCI "
		     "passthrough; 'unknown' means NVML (libnvidia-ml.so.1) was not usable");
}

static void eval_gpu_license(struct gc_probe_check *c, const struct eval *e)
{
	const char *lic = e->cu->ngpu ? e->cu->gpus[0].license : "";
	bool want = truthy(e->v) || strcasecmp(e->v, "licensed") == 0;
	bool is = strncasecmp(lic, "Licensed", 8) == 0;

	FOUND("%s", lic[0] ? lic : "unknown");
	c->pass = want == is;
	if (!c->pass)
		HINT("vGPU licence: check /etc/nvidia/gridd.conf (FeatureType), the client "
		     "configuration token in /etc/nvidia/ClientConfigToken/ and "
		     "'systemctl status nvidia-gridd'");
}

static void eval_gpu_ecc(struct gc_probe_check *c, const struct eval *e)
{
	int i;

	FOUND("%s", e->cu->ngpu && e->cu->gpus[0].ecc[0] ? e->cu->gpus[0].ecc : "unknown");
	c->pass = e->cu->ngpu > 0;
	for (i = 0; i < e->cu->ngpu; i++)
		if (strncasecmp(e->cu->gpus[i].ecc, e->v, strlen(e->v)) != 0)
			c->pass = false;
	if (!c->pass)
		HINT("toggle with 'nvidia-smi -e 0|1' and reboot; vGPU guests often report N/A");
}

static void eval_gpu_peer_access(struct gc_probe_check *c, const struct eval *e)
{
	int pairs = 0, yes = 0, j;
	int i;

	for (i = 0; i < e->cu->ngpu; i++)
		for (j = 0; j < e->cu->ngpu; j++)
			if (i != j) {
				pairs++;
				yes += e->cu->peer[i][j] == 1;
			}
	FOUND("%d of %d pairs", yes, pairs);
	c->pass = truthy(e->v) || strcasecmp(e->v, "all") == 0 ? yes == pairs
							 : true;
	if (!c->pass)
		HINT("GPUs cannot reach each other: set pciPassthru.allowP2P=true on the "
		     "VM and check the host's PCIe topology/ACS");
}

static void eval_cuda_vector_add(struct gc_probe_check *c, const struct eval *e)
{
	FOUND("%s", gc_probe_status_name(e->cu->vadd_status));
	c->pass = truthy(e->v) ? e->cu->vadd_status == GC_PROBE_OK : true;
	if (!c->pass)
		HINT("the CUDA driver cannot run a kernel (%s): driver and kernel module "
		     "mismatch? check 'dmesg | grep -i xid'",
		     e->cu->vadd_reason[0] ? e->cu->vadd_reason : e->cu->reason);
}

static void eval_rdma_device(struct gc_probe_check *c, const struct eval *e)
{
	const struct gc_probe_rdma_dev *d = NULL;
	bool active = false;
	int i, j;

	for (i = 0; i < e->rd->ndev; i++)
		if (strcasecmp(e->v, "any") == 0 || truthy(e->v) ||
		    strcmp(e->rd->devs[i].name, e->v) == 0) {
			d = &e->rd->devs[i];
			for (j = 0; j < d->nports; j++)
				active |= d->ports[j].state_num == 4;
			if (active)
				break;
		}
	if (!d)
		FOUND("no RDMA device");
	else
		FOUND("%s %s", d->name, active ? "active" : "no active port");
	c->pass = d && active;
	if (!d)
		HINT("no RDMA device: is the SR-IOV VF or PVRDMA adapter attached to the VM "
		     "and its driver (mlx5_ib, vmw_pvrdma) loaded?");
	else if (!active)
		HINT("port not active: check the link (ibdev2netdev, 'rdma link') and the "
		     "switch port");
}

static void eval_rdma_link_layer(struct gc_probe_check *c, const struct eval *e)
{
	FOUND("%s", e->port ? e->port->link_layer : "no RDMA port");
	c->pass = e->port && strcasecmp(e->port->link_layer, e->v) == 0;
	if (!c->pass)
		HINT("RoCE needs link_layer Ethernet; a VPI card may need its port type set "
		     "with mlxconfig LINK_TYPE_P1");
}

static void eval_rdma_mtu(struct gc_probe_check *c, const struct eval *e)
{
	bool ok;
	long x;

	x = num(e->v, &ok);
	FOUND("%d", e->port ? e->port->active_mtu : 0);
	c->pass = ok && e->port && e->port->active_mtu >= x;
	if (!c->pass)
		HINT("active MTU follows the netdev MTU for RoCE: set the interface and the "
		     "switch port/vSwitch MTU to 9000 for 4096");
}

static void eval_rdma_roce_v2_gid(struct gc_probe_check *c, const struct eval *e)
{
	bool have = e->port && e->port->roce_v2_index >= 0;

	FOUND("%s", have ? "yes" : "no");
	c->pass = have == truthy(e->v);
	if (!c->pass)
		HINT("no RoCE v2 GID: the RoCE netdev has no IP address, or RoCE v2 is off "
		     "(cma_roce_mode -d DEV -p 1 -m 2)");
}

static void eval_rdma_gid_index(struct gc_probe_check *c, const struct eval *e)
{
	bool ok;
	long x;

	x = num(e->v, &ok);
	FOUND("%d", e->port ? e->port->roce_v2_index : -1);
	c->pass = ok && e->port && e->port->roce_v2_index == x;
	if (!c->pass)
		HINT("the RoCE v2 IPv4 GID sits at another index: set NCCL_IB_GID_INDEX to "
		     "the found index or fix the interface addresses");
}

static void eval_rdma_tos(struct gc_probe_check *c, const struct eval *e)
{
	bool ok;
	long x;
	int tc = e->port ? e->port->traffic_class : -1;

	x = num(e->v, &ok);
	if (e->port && e->port->default_tos >= 0 && tc < 0)
		tc = e->port->default_tos;
	if (tc < 0)
		FOUND("unset");
	else
		FOUND("%d", tc);
	c->pass = ok && tc == x;
	if (!c->pass)
		HINT("set with 'echo %ld > /sys/class/infiniband/%s/tc/1/traffic_class' and "
		     "'cma_roce_tos -d %s -t %ld'", x, e->dev ? e->dev->name : "DEV",
		     e->dev ? e->dev->name : "DEV", x);
}

static void eval_rdma_trust(struct gc_probe_check *c, const struct eval *e)
{
	FOUND("%s", e->dev && e->dev->qos.present ? e->dev->qos.trust : "unknown");
	c->pass = e->dev && e->dev->qos.present && strcasecmp(e->dev->qos.trust, e->v) == 0;
	if (!c->pass)
		HINT("'mlnx_qos -i %s --trust %s'%s%s",
		     e->dev && e->dev->qos.netdev[0] ? e->dev->qos.netdev : "IF", e->v,
		     e->dev && !e->dev->qos.present ? "; " : "",
		     e->dev && !e->dev->qos.present ? e->dev->qos.reason : "");
}

static void eval_rdma_pfc(struct gc_probe_check *c, const struct eval *e)
{
	char want[32], got[32];

	normalize_list(want, sizeof(want), e->v);
	if (e->dev && e->dev->qos.present)
		pfc_string(got, sizeof(got), e->dev->qos.pfc);
	else
		pb_fmt(got, sizeof(got), "unknown");
	pb_fmt(c->expected, sizeof(c->expected), "%s", want);
	FOUND("%s", got);
	c->pass = strcmp(want, got) == 0;
	if (!c->pass)
		HINT("PFC must be on exactly the switch's lossless priority: 'mlnx_qos -i %s "
		     "--pfc 0,0,0,1,0,0,0,0' for priority 3",
		     e->dev && e->dev->qos.netdev[0] ? e->dev->qos.netdev : "IF");
}

static void eval_rdma_peermem(struct gc_probe_check *c, const struct eval *e)
{
	FOUND("%s", e->rd->peermem[0] ? e->rd->peermem : "not loaded");
	c->pass = (e->rd->peermem[0] != '\0') == truthy(e->v);
	if (!c->pass)
		HINT("'modprobe nvidia-peermem' (driver >= R470; nv_peer_mem is the legacy "
		     "module)");
}

static void eval_gdr_ready(struct gc_probe_check *c, const struct eval *e)
{
	FOUND("%s", gc_probe_status_name(e->r->gdr.status));
	c->pass = (e->r->gdr.status == GC_PROBE_OK) == truthy(e->v);
	if (!c->pass)
		HINT("%s; needs nvidia_peermem and pciPassthru.allowP2P / ACS allowing the "
		     "HCA to reach the GPU BAR", e->r->gdr.reason);
}

#undef FOUND
#undef HINT

/* Every key an expect file may hold and its handler, in docs/probe.md's order. */
static const struct key_eval {
	const char *key;
	void (*eval)(struct gc_probe_check *c, const struct eval *e);
} evals[] = {
	{"gpu.count", eval_gpu_count},
	{"gpu.model", eval_gpu_model},
	{"gpu.memory_mib_min", eval_gpu_memory_mib_min},
	{"gpu.vgpu_framebuffer_mib", eval_gpu_vgpu_framebuffer_mib},
	{"gpu.virtualization", eval_gpu_virtualization},
	{"gpu.license", eval_gpu_license},
	{"gpu.ecc", eval_gpu_ecc},
	{"gpu.peer_access", eval_gpu_peer_access},
	{"cuda.vector_add", eval_cuda_vector_add},
	{"rdma.device", eval_rdma_device},
	{"rdma.link_layer", eval_rdma_link_layer},
	{"rdma.mtu", eval_rdma_mtu},
	{"rdma.roce_v2_gid", eval_rdma_roce_v2_gid},
	{"rdma.gid_index", eval_rdma_gid_index},
	{"rdma.tos", eval_rdma_tos},
	{"rdma.trust", eval_rdma_trust},
	{"rdma.pfc", eval_rdma_pfc},
	{"rdma.peermem", eval_rdma_peermem},
	{"gdr.ready", eval_gdr_ready},
};

static const struct key_eval *key_eval(const char *k)
{
	size_t i;

	for (i = 0; i < sizeof(evals) / sizeof(evals[0]); i++)
		if (strcmp(evals[i].key, k) == 0)
			return &evals[i];
	return NULL;
}

static bool known_key(const char *k)
{
	return key_eval(k) != NULL;
}

static void eval_one(struct gc_probe_report *r, const char *k, const char *v)
{
	const struct key_eval *ke = key_eval(k);
	struct eval e = {.r = r, .cu = &r->cuda, .rd = &r->rdma, .v = v};
	struct gc_probe_check *c = check(r, k, v);

	if (!c)
		return;
	e.port = pick_port(&r->rdma, &e.dev);
	if (ke)
		ke->eval(c, &e);
	if (!c->pass)
		r->nfailed++;
}

int gc_probe_expect_eval(struct gc_probe_report *r, const struct gc_probe_expect *e)
{
	int i;

	r->nexpect = 0;
	r->nfailed = 0;
	for (i = 0; i < e->n; i++)
		eval_one(r, e->items[i].key, e->items[i].value);
	return r->nfailed;
}
