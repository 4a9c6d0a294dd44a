/*
 * rdma.c - what RDMA this guest has, read from sysfs/configfs/procfs, with
 * libibverbs (if loadable) adding what sysfs does not show (MTUs), and
 * mlnx_qos (if on PATH) giving trust mode and PFC.
 *
 * Sources, all under the root prefix (GC_PROBE_SYSFS, a test hook):
 *   /sys/class/infiniband/<dev>/{fw_ver,node_guid}
 *   /sys/class/infiniband/<dev>/ports/<p>/{state,link_layer,lid,gids/<i>,
 *       gid_attrs/types/<i>,gid_attrs/ndevs/<i>}
 *   /sys/class/infiniband/<dev>/tc/<p>/traffic_class   ("Global tclass=106")
 *   /sys/kernel/config/rdma_cm/<dev>/ports/<p>/default_roce_tos
 *   /proc/modules                                       (nvidia_peermem, nv_peer_mem)
 * No device directory means "no RDMA device": status ABSENT, not a failure.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_int.h"

#define IB_CLASS "/sys/class/infiniband"

static int cmp_str(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* Sorted names of a directory under the root (no dot entries); returns count. */
static int list_dir(char names[][64], int max, const char *path)
{
	char full[1024];
	struct dirent *e;
	DIR *d;
	int n = 0;

	pb_fmt(full, sizeof(full), "%s%s", pb_root(), path);
	d = opendir(full);
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL && n < max) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= 64)
			continue;
		pb_copy(names[n], 64, e->d_name, strlen(e->d_name));
		n++;
	}
	closedir(d);
	qsort(names, (size_t)n, 64, cmp_str);
	return n;
}

/* Entries of a directory but . and .. */
static long count_dir(const char *path)
{
	char full[1024];
	struct dirent *e;
	DIR *d;
	long n = 0;

	pb_fmt(full, sizeof(full), "%s%s", pb_root(), path);
	d = opendir(full);
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static bool is_zero_gid(const char *g)
{
	for (; *g; g++)
		if (*g != '0' && *g != ':')
			return false;
	return true;
}

/* ::ffff:a.b.c.d GIDs carry an IPv4 address. */
static void gid_ipv4(struct gc_probe_gid *g)
{
	unsigned a, b, c, d;

	if (strncmp(g->gid, "0000:0000:0000:0000:0000:ffff:", 30) != 0)
		return;
	if (sscanf(g->gid + 30, "%2x%2x:%2x%2x", &a, &b, &c, &d) == 4)
		pb_fmt(g->ipv4, sizeof(g->ipv4), "%u.%u.%u.%u", a, b, c, d);
}

/* Pick the GID index to use: RoCE v2 with IPv4 first, then any non-link-local v2. */
static void pick_roce_index(struct gc_probe_port *p)
{
	int i, pass;

	p->roce_v2_index = -1;
	for (pass = 0; pass < 3 && p->roce_v2_index < 0; pass++) {
		for (i = 0; i < p->ngids; i++) {
			const struct gc_probe_gid *g = &p->gids[i];

			if (strcmp(g->type, "RoCE v2") != 0)
				continue;
			if ((pass == 0 && g->ipv4[0]) ||
			    (pass == 1 && strncmp(g->gid, "fe80", 4) != 0) || pass == 2) {
				p->roce_v2_index = g->index;
				break;
			}
		}
	}
}

static void read_port(struct gc_probe_port *p, const char *dev, const char *pname)
{
	char path[512], val[128];
	char *txt;
	size_t len;
	long x;
	long ng;

	pb_fmt(path, sizeof(path), IB_CLASS "/%s/ports/%s/state", dev, pname);
	if (pb_read_sys(val, sizeof(val), path) == 0) {
		/* "4: ACTIVE" */
		char *colon = strchr(val, ':');
		if (colon && pb_parse_long(val, (size_t)(colon - val), &x)) {
			const char *word = colon + 1;
			while (*word == ' ')
				word++;
			p->state_num = (int)x;
			pb_fmt(p->state, sizeof(p->state), "PORT_%s", word);
		}
	}
	pb_fmt(path, sizeof(path), IB_CLASS "/%s/ports/%s/link_layer", dev, pname);
	if (pb_read_sys(val, sizeof(val), path) == 0)
		pb_copy(p->link_layer, sizeof(p->link_layer), val, strlen(val));
	pb_fmt(path, sizeof(path), IB_CLASS "/%s/ports/%s/lid", dev, pname);
	if (pb_read_sys(val, sizeof(val), path) == 0)
		p->lid = (int)strtol(val, NULL, 0);

	/* Index order, by name: the table has 256 entries on mlx5 and 1024 on
	 * rdma_rxe, listed by readdir in hash order, so a capped listing can
	 * miss index 0 and 1.  Every entry is tried, gaps allowed. */
	pb_fmt(path, sizeof(path), IB_CLASS "/%s/ports/%s/gids", dev, pname);
	ng = count_dir(path);
	for (long idx = 0, seen = 0; seen < ng && idx < 65536 && p->ngids < GC_PROBE_MAX_GIDS; idx++) {
		struct gc_probe_gid *g = &p->gids[p->ngids];
		int rc;

		pb_fmt(path, sizeof(path), IB_CLASS "/%s/ports/%s/gids/%ld", dev, pname, idx);
		rc = pb_read_sys(val, sizeof(val), path);
		if (rc == GC_ENOTFOUND)
			continue;
		seen++;
		if (rc != 0 || strlen(val) != 39 || is_zero_gid(val))
			continue;
		memset(g, 0, sizeof(*g));
		g->index = (int)idx;
		pb_copy(g->gid, sizeof(g->gid), val, 39);
		pb_fmt(path, sizeof(path), IB_CLASS "/%s/ports/%s/gid_attrs/types/%ld", dev, pname, idx);
		if (pb_read_sys(val, sizeof(val), path) == 0)
			pb_copy(g->type, sizeof(g->type), val, strlen(val));
		pb_fmt(path, sizeof(path), IB_CLASS "/%s/ports/%s/gid_attrs/ndevs/%ld", dev, pname, idx);
		if (pb_read_sys(val, sizeof(val), path) == 0)
			pb_copy(g->ndev, sizeof(g->ndev), val, strlen(val));
		gid_ipv4(g);
		if (!p->netdev[0] && g->ndev[0])
			pb_copy(p->netdev, sizeof(p->netdev), g->ndev, strlen(g->ndev));
		p->ngids++;
	}
	pick_roce_index(p);

	pb_fmt(path, sizeof(path), IB_CLASS "/%s/tc/%s/traffic_class", dev, pname);
	if (pb_read_sys_all(&txt, &len, path) == 0) {
		int tc = -1;
		if (gc_probe_parse_traffic_class(&tc, txt, len, NULL) == 0)
			p->traffic_class = tc;
		free(txt);
	}
	pb_fmt(path, sizeof(path), "/sys/kernel/config/rdma_cm/%s/ports/%s/default_roce_tos", dev,
	       pname);
	if (pb_read_sys(val, sizeof(val), path) == 0 && pb_parse_long(val, strlen(val), &x))
		p->default_tos = (int)x;
}

static void read_qos(struct gc_probe_rdma_dev *d, const struct gc_probe_options *o)
{
	const char *ifname = NULL;
	char *argv[4];
	char *out = NULL;
	size_t len = 0;
	int i, st = 0;
	struct gc_error err = GC_ERROR_INIT;

	for (i = 0; i < d->nports && !ifname; i++)
		if (d->ports[i].netdev[0])
			ifname = d->ports[i].netdev;
	if (!ifname) {
		pb_fmt(d->qos.reason, sizeof(d->qos.reason), "no net device for %s", d->name);
		return;
	}
	if (o->no_tools || !pb_tool_on_path("mlnx_qos")) {
		pb_fmt(d->qos.reason, sizeof(d->qos.reason), "mlnx_qos not %s",
		       o->no_tools ? "run (tools disabled)" : "found on PATH");
		return;
	}
	argv[0] = "mlnx_qos";
	argv[1] = "-i";
	argv[2] = (char *)ifname;
	argv[3] = NULL;
	if (pb_run_tool(&out, &len, argv, PB_TOOL_TIMEOUT_MS, &st) != 0 || st != 0) {
		pb_fmt(d->qos.reason, sizeof(d->qos.reason), "mlnx_qos -i %s failed (exit %d)",
		       ifname, st);
		free(out);
		return;
	}
	if (gc_probe_parse_mlnx_qos(&d->qos, out, len, &err) != 0) {
		d->qos.present = false;
		pb_fmt(d->qos.reason, sizeof(d->qos.reason), "%s", err.msg);
	}
	pb_copy(d->qos.netdev, sizeof(d->qos.netdev), ifname, strlen(ifname));
	free(out);
}

static void read_peermem(struct gc_probe_rdma *r)
{
	char *mods;
	size_t len;
	const char *p;

	if (pb_read_sys_all(&mods, &len, "/proc/modules") != 0)
		return;
	for (p = mods; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "nvidia_peermem ", 15) == 0) {
			pb_copy(r->peermem, sizeof(r->peermem), "nvidia_peermem", 14);
			break;
		}
		if (strncmp(p, "nv_peer_mem ", 12) == 0)
			pb_copy(r->peermem, sizeof(r->peermem), "nv_peer_mem", 11);
	}
	free(mods);
}

void pb_rdma_probe(struct gc_probe_rdma *r, const struct gc_probe_options *o)
{
	char names[GC_PROBE_MAX_RDMA][64], pnames[GC_PROBE_MAX_PORTS][64], path[512];
	struct pb_verbs *v = NULL;
	int i, j, n, np;

	read_peermem(r);
	n = list_dir(names, GC_PROBE_MAX_RDMA, IB_CLASS);
	for (i = 0; i < n; i++) {
		struct gc_probe_rdma_dev *d = &r->devs[r->ndev++];

		memset(d, 0, sizeof(*d));
		pb_copy(d->name, sizeof(d->name), names[i], strlen(names[i]));
		pb_fmt(path, sizeof(path), IB_CLASS "/%s/fw_ver", d->name);
		pb_read_sys(d->fw_ver, sizeof(d->fw_ver), path);
		pb_fmt(path, sizeof(path), IB_CLASS "/%s/node_guid", d->name);
		pb_read_sys(d->node_guid, sizeof(d->node_guid), path);
		pb_fmt(path, sizeof(path), IB_CLASS "/%s/ports", d->name);
		np = list_dir(pnames, GC_PROBE_MAX_PORTS, path);
		for (j = 0; j < np; j++) {
			long num;
			struct gc_probe_port *p = &d->ports[d->nports];

			if (!pb_parse_long(pnames[j], strlen(pnames[j]), &num) || num < 1 ||
			    num > 255)
				continue;
			memset(p, 0, sizeof(*p));
			p->num = (int)num;
			p->state_num = -1;
			p->traffic_class = -1;
			p->default_tos = -1;
			read_port(p, d->name, pnames[j]);
			d->nports++;
		}
		read_qos(d, o);
	}
	if (pb_verbs_load(&v, r->verbs_reason, sizeof(r->verbs_reason)) == 0) {
		r->verbs_loaded = true;
		pb_verbs_query_ports(v, r);
		pb_verbs_unload(v);
	}
	if (r->ndev == 0) {
		r->status = GC_PROBE_ABSENT;
		pb_fmt(r->reason, sizeof(r->reason), "no RDMA device (%s%s is empty or missing)",
		       pb_root(), IB_CLASS);
		return;
	}
	r->status = GC_PROBE_OK;
}
