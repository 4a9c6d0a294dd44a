/*
 * parse.c - parsers of the text the RDMA and GPU tools print
 * (shared/REAL-FORMATS.md C.1, C.2, C.4, C.5): ibv_devinfo, show_gids,
 * mlnx_qos, sysfs traffic_class and nvidia-smi -q.
 *
 * All work on (text, len) without needing a NUL terminator, walk the text a
 * line at a time and never read past len: they are fuzzed.  They are
 * lenient about what they do not know (extra lines, new fields) and strict
 * about what they use (a port line before any hca_id, a number that is not
 * one, a truncated table row): those are GC_EINVAL with the line number.
 * Results go into fixed-size arrays; entries past the caps are dropped.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/lines.h"

#include "probe_int.h"

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && memcmp(s, prefix, k) == 0;
}

/* Split "key:  value" at the first ':'; both trimmed. */
static bool split_colon(const char *s, size_t n, const char **k, size_t *kn, const char **v,
			size_t *vn)
{
	const char *c = memchr(s, ':', n);

	if (!c)
		return false;
	*kn = (size_t)(c - s);
	*k = pb_trim(s, kn);
	*vn = n - (size_t)(c - s) - 1;
	*v = pb_trim(c + 1, vn);
	return true;
}

static bool eq(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* Leading decimal of "4096 (5)" or "PORT_ACTIVE (4)" in parentheses. */
static bool leading_long(const char *s, size_t n, long *v)
{
	size_t k = 0;

	while (k < n && isdigit((unsigned char)s[k]))
		k++;
	return k > 0 && pb_parse_long(s, k, v);
}

static bool paren_long(const char *s, size_t n, long *v)
{
	const char *o = memchr(s, '(', n);
	const char *c;

	if (!o)
		return false;
	c = memchr(o, ')', n - (size_t)(o - s));
	return c && pb_parse_long(o + 1, (size_t)(c - o - 1), v);
}

static int bad(struct gc_error *err, const char *what, int line, const char *msg)
{
	return gc_error_set(err, GC_EINVAL, "%s:%d: %s", what, line, msg);
}

static struct gc_probe_rdma_dev *find_dev(struct gc_probe_rdma *r, const char *name, size_t n,
					  bool create)
{
	int i;

	for (i = 0; i < r->ndev; i++)
		if (eq(name, n, r->devs[i].name))
			return &r->devs[i];
	if (!create || r->ndev >= GC_PROBE_MAX_RDMA || n == 0 || n >= sizeof(r->devs[0].name))
		return NULL;
	memset(&r->devs[r->ndev], 0, sizeof(r->devs[0]));
	pb_copy(r->devs[r->ndev].name, sizeof(r->devs[0].name), name, n);
	return &r->devs[r->ndev++];
}

static void port_init(struct gc_probe_port *p, int num)
{
	memset(p, 0, sizeof(*p));
	p->num = num;
	p->state_num = -1;
	p->roce_v2_index = -1;
	p->traffic_class = -1;
	p->default_tos = -1;
}

static struct gc_probe_port *find_port(struct gc_probe_rdma_dev *d, int num, bool create)
{
	int i;

	for (i = 0; i < d->nports; i++)
		if (d->ports[i].num == num)
			return &d->ports[i];
	if (!create || d->nports >= GC_PROBE_MAX_PORTS)
		return NULL;
	port_init(&d->ports[d->nports], num);
	return &d->ports[d->nports++];
}

int gc_probe_parse_ibv_devinfo(struct gc_probe_rdma *out, const char *text, size_t len,
			       struct gc_error *err)
{
	struct gc_lines it = {text, text + len, 0};
	struct gc_probe_rdma_dev *dev = NULL;
	struct gc_probe_port *port = NULL;
	bool dropped = false;
	const char *s, *k, *v;
	size_t n, kn, vn;
	long x;

	while (gc_lines_next(&it, &s, &n)) {
		size_t tn = n;
		const char *t = pb_trim(s, &tn);

		if (tn == 0 || !split_colon(t, tn, &k, &kn, &v, &vn))
			continue;
		if (eq(k, kn, "hca_id")) {
			if (vn == 0)
				return bad(err, "ibv_devinfo", it.no, "empty hca_id");
			dev = find_dev(out, v, vn, true);
			dropped = dev == NULL;
			port = NULL;
			continue;
		}
		if (dropped)
			continue;
		if (!dev) {
			/* "No IB devices found" and banners carry no ':' pairs we use */
			if (eq(k, kn, "port") || eq(k, kn, "state") || eq(k, kn, "fw_ver"))
				return bad(err, "ibv_devinfo", it.no, "field before any hca_id");
			continue;
		}
		if (eq(k, kn, "port")) {
			if (!pb_parse_long(v, vn, &x) || x < 1 || x > 255)
				return bad(err, "ibv_devinfo", it.no, "bad port number");
			port = find_port(dev, (int)x, true);
		} else if (port && eq(k, kn, "state")) {
			if (!paren_long(v, vn, &x))
				return bad(err, "ibv_devinfo", it.no, "bad port state");
			port->state_num = (int)x;
			{
				const char *sp = memchr(v, ' ', vn);
				pb_copy(port->state, sizeof(port->state), v,
					sp ? (size_t)(sp - v) : vn);
			}
		} else if (port && eq(k, kn, "active_mtu")) {
			if (!leading_long(v, vn, &x))
				return bad(err, "ibv_devinfo", it.no, "bad active_mtu");
			port->active_mtu = (int)x;
		} else if (port && eq(k, kn, "max_mtu")) {
			if (!leading_long(v, vn, &x))
				return bad(err, "ibv_devinfo", it.no, "bad max_mtu");
			port->max_mtu = (int)x;
		} else if (port && eq(k, kn, "link_layer")) {
			pb_copy(port->link_layer, sizeof(port->link_layer), v, vn);
		} else if (port && eq(k, kn, "port_lid")) {
			if (!pb_parse_long(v, vn, &x))
				return bad(err, "ibv_devinfo", it.no, "bad port_lid");
			port->lid = (int)x;
		} else if (!port && eq(k, kn, "transport")) {
			pb_copy(dev->transport, sizeof(dev->transport), v, vn);
		} else if (!port && eq(k, kn, "fw_ver")) {
			pb_copy(dev->fw_ver, sizeof(dev->fw_ver), v, vn);
		} else if (!port && eq(k, kn, "node_guid")) {
			pb_copy(dev->node_guid, sizeof(dev->node_guid), v, vn);
		}
	}
	return 0;
}

/* "fe80:0000:...:03da": 8 groups of 4 hex digits. */
static bool is_gid(const char *s, size_t n)
{
	size_t i;

	if (n != 39)
		return false;
	for (i = 0; i < n; i++) {
		if (i % 5 == 4) {
			if (s[i] != ':')
				return false;
		} else if (!isxdigit((unsigned char)s[i])) {
			return false;
		}
	}
	return true;
}

/* Next tab-or-space separated field of [*p, end); tabs separate empty fields too. */
static bool next_field(const char **p, const char *end, const char **f, size_t *fn)
{
	const char *s = *p;

	while (s < end && (*s == '\t' || *s == ' '))
		s++;
	if (s >= end)
		return false;
	*f = s;
	while (s < end && *s != '\t' && *s != ' ')
		s++;
	*fn = (size_t)(s - *f);
	*p = s;
	return true;
}

int gc_probe_parse_show_gids(struct gc_probe_rdma *out, const char *text, size_t len,
			     struct gc_error *err)
{
	struct gc_lines it = {text, text + len, 0};
	const char *s;
	size_t n;

	while (gc_lines_next(&it, &s, &n)) {
		const char *p = s, *end = s + n, *f[8];
		size_t fn[8];
		int nf = 0;
		long port, idx;
		struct gc_probe_rdma_dev *dev;
		struct gc_probe_port *pt;
		struct gc_probe_gid *g;
		int ver_at;

		if (n == 0 || starts(s, n, "DEV") || starts(s, n, "---") ||
		    starts(s, n, "n_gids_found"))
			continue;
		while (nf < 8 && next_field(&p, end, &f[nf], &fn[nf]))
			nf++;
		/* DEV PORT INDEX GID [IPv4] VER NETDEV: 6 or 7 fields */
		if (nf < 5)
			return bad(err, "show_gids", it.no, "truncated row");
		if (!pb_parse_long(f[1], fn[1], &port) || port < 1 || port > 255 ||
		    !pb_parse_long(f[2], fn[2], &idx) || idx < 0 || idx > 65535)
			return bad(err, "show_gids", it.no, "bad port or index");
		if (!is_gid(f[3], fn[3]))
			return bad(err, "show_gids", it.no, "bad GID");
		ver_at = (nf >= 7) ? 5 : 4;
		if (!(eq(f[ver_at], fn[ver_at], "v1") || eq(f[ver_at], fn[ver_at], "v2"))) {
			/* row with IPv4 but no netdev: 6 fields with VER at 5 */
			if (nf == 6 && (eq(f[5], fn[5], "v1") || eq(f[5], fn[5], "v2")))
				ver_at = 5;
			else
				return bad(err, "show_gids", it.no, "bad GID version");
		}
		dev = find_dev(out, f[0], fn[0], true);
		if (!dev)
			continue;
		pt = find_port(dev, (int)port, true);
		if (!pt || pt->ngids >= GC_PROBE_MAX_GIDS)
			continue;
		g = &pt->gids[pt->ngids++];
		memset(g, 0, sizeof(*g));
		g->index = (int)idx;
		pb_copy(g->gid, sizeof(g->gid), f[3], fn[3]);
		pb_copy(g->type, sizeof(g->type), f[ver_at][1] == '2' ? "RoCE v2" : "IB/RoCE v1",
			f[ver_at][1] == '2' ? 7 : 10);
		if (ver_at == 5 && fn[4] < sizeof(g->ipv4))
			pb_copy(g->ipv4, sizeof(g->ipv4), f[4], fn[4]);
		if (ver_at + 1 < nf)
			pb_copy(g->ndev, sizeof(g->ndev), f[ver_at + 1], fn[ver_at + 1]);
	}
	return 0;
}

int gc_probe_parse_mlnx_qos(struct gc_probe_qos *out, const char *text, size_t len,
			    struct gc_error *err)
{
	struct gc_lines it = {text, text + len, 0};
	bool in_pfc = false, saw_prio = false;
	const char *s;
	size_t n;
	int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < 8; i++)
		out->pfc[i] = -1;
	while (gc_lines_next(&it, &s, &n)) {
		size_t tn = n;
		const char *t = pb_trim(s, &tn);

		if (starts(t, tn, "Priority trust state:")) {
			size_t vn = tn - 21;
			const char *v = pb_trim(t + 21, &vn);
			if (vn == 0)
				return bad(err, "mlnx_qos", it.no, "empty trust state");
			pb_copy(out->trust, sizeof(out->trust), v, vn);
		} else if (starts(t, tn, "DCBX mode:")) {
			size_t vn = tn - 10;
			const char *v = pb_trim(t + 10, &vn);
			pb_copy(out->dcbx, sizeof(out->dcbx), v, vn);
		} else if (starts(t, tn, "PFC configuration:")) {
			in_pfc = true;
		} else if (in_pfc && starts(t, tn, "priority")) {
			saw_prio = true;
		} else if (in_pfc && starts(t, tn, "enabled")) {
			const char *p = t + 7, *end = t + tn, *f;
			size_t fn;
			long x;

			if (!saw_prio)
				return bad(err, "mlnx_qos", it.no, "PFC 'enabled' row before header");
			for (i = 0; i < 8; i++) {
				if (!next_field(&p, end, &f, &fn))
					return bad(err, "mlnx_qos", it.no,
						   "PFC 'enabled' row has fewer than 8 values");
				if (!pb_parse_long(f, fn, &x) || (x != 0 && x != 1))
					return bad(err, "mlnx_qos", it.no,
						   "PFC 'enabled' value is not 0 or 1");
				out->pfc[i] = (int)x;
			}
			in_pfc = false;
		} else if (in_pfc && tn > 0 && !starts(t, tn, "buffer")) {
			in_pfc = false;
		}
	}
	if (out->trust[0] == '\0')
		return gc_error_set(err, GC_EINVAL, "mlnx_qos: no 'Priority trust state' line");
	out->present = true;
	return 0;
}

int gc_probe_parse_traffic_class(int *tclass, const char *text, size_t len,
				 struct gc_error *err)
{
	struct gc_lines it = {text, text + len, 0};
	const char *s;
	size_t n;
	long x;

	while (gc_lines_next(&it, &s, &n)) {
		size_t tn = n;
		const char *t = pb_trim(s, &tn);

		if (tn == 0)
			continue;
		if (!starts(t, tn, "Global tclass="))
			return bad(err, "traffic_class", it.no,
				   "expected 'Global tclass=N'");
		if (!pb_parse_long(t + 14, tn - 14, &x) || x < 0 || x > 255)
			return bad(err, "traffic_class", it.no, "tclass is not 0..255");
		*tclass = (int)x;
		return 0; /* further lines are per-rule classes */
	}
	*tclass = -1; /* empty file: unset */
	return 0;
}

/*
 * nvidia-smi -q: "Key : Value" lines indented 4 spaces per level; a GPU
 * block starts at "GPU 00000000:01:00.0" in column 0.  We track the current
 * section (the last key without a value, per indent level) to tell the ECC
 * "Current" from the clocks' "Current" and the FB "Total" from BAR1's.
 */
#define NVSMI_DEPTH 6

int gc_probe_parse_nvsmi(struct gc_probe_nvsmi *out, const char *text, size_t len,
			 struct gc_error *err)
{
	struct gc_lines it = {text, text + len, 0};
	char section[NVSMI_DEPTH][48];
	struct gc_probe_nvsmi_gpu *g = NULL;
	const char *s, *k, *v;
	size_t n, kn, vn;
	int i;

	memset(out, 0, sizeof(*out));
	memset(section, 0, sizeof(section));
	while (gc_lines_next(&it, &s, &n)) {
		const char *parent;
		size_t ind = 0;
		int lvl;

		while (ind < n && s[ind] == ' ')
			ind++;
		if (ind == n)
			continue;
		lvl = (int)(ind / 4);
		if (ind == 0 && starts(s, n, "GPU ") && !memchr(s, ':', 4)) {
			size_t bn = n - 4;
			const char *b = pb_trim(s + 4, &bn);
			if (bn == 0 || bn >= sizeof(out->gpus[0].bus_id))
				return bad(err, "nvidia-smi -q", it.no, "bad GPU bus id");
			if (out->ngpu >= GC_PROBE_MAX_GPUS) {
				g = NULL;
				continue;
			}
			g = &out->gpus[out->ngpu++];
			memset(g, 0, sizeof(*g));
			g->fb_total_mib = -1;
			pb_copy(g->bus_id, sizeof(g->bus_id), b, bn);
			memset(section, 0, sizeof(section));
			continue;
		}
		if (!split_colon(s + ind, n - ind, &k, &kn, &v, &vn)) {
			/* a section title without a colon ("GPU Virtualization Mode") */
			if (lvl < NVSMI_DEPTH) {
				size_t tn = n - ind;
				const char *t = pb_trim(s + ind, &tn);
				pb_copy(section[lvl], sizeof(section[lvl]), t, tn);
				for (i = lvl + 1; i < NVSMI_DEPTH; i++)
					section[i][0] = '\0';
			}
			continue;
		}
		if (vn == 0) {
			if (lvl < NVSMI_DEPTH) {
				pb_copy(section[lvl], sizeof(section[lvl]), k, kn);
				for (i = lvl + 1; i < NVSMI_DEPTH; i++)
					section[i][0] = '\0';
			}
			continue;
		}
		if (lvl == 0) {
			if (eq(k, kn, "Driver Version"))
				pb_copy(out->driver_version, sizeof(out->driver_version), v, vn);
			else if (eq(k, kn, "CUDA Version"))
				pb_copy(out->cuda_version, sizeof(out->cuda_version), v, vn);
			continue;
		}
		if (!g)
			continue;
		/* the section this key is in; keys deeper than we track have none */
		parent = (lvl >= 1 && lvl <= NVSMI_DEPTH) ? section[lvl - 1] : "";
		if (lvl == 1 && eq(k, kn, "Product Name")) {
			pb_copy(g->product, sizeof(g->product), v, vn);
		} else if (eq(k, kn, "Virtualization Mode")) {
			pb_copy(g->virt_mode, sizeof(g->virt_mode), v, vn);
		} else if (eq(k, kn, "Host VGPU Mode")) {
			pb_copy(g->host_vgpu_mode, sizeof(g->host_vgpu_mode), v, vn);
		} else if (lvl >= 2 && strcmp(parent, "vGPU Software Licensed Product") == 0) {
			if (eq(k, kn, "Product Name"))
				pb_copy(g->licensed_product, sizeof(g->licensed_product), v, vn);
			else if (eq(k, kn, "License Status"))
				pb_copy(g->license, sizeof(g->license), v, vn);
		} else if (lvl >= 2 && strcmp(parent, "ECC Mode") == 0 &&
			   eq(k, kn, "Current")) {
			pb_copy(g->ecc_current, sizeof(g->ecc_current), v, vn);
		} else if (lvl >= 2 && strcmp(parent, "FB Memory Usage") == 0 &&
			   eq(k, kn, "Total")) {
			long x;
			size_t dn = 0;
			while (dn < vn && isdigit((unsigned char)v[dn]))
				dn++;
			if (dn == 0 || !pb_parse_long(v, dn, &x))
				return bad(err, "nvidia-smi -q", it.no, "bad FB Memory Usage Total");
			g->fb_total_mib = x;
		}
	}
	return 0;
}
