/*
 * observe.c - one exec reads a whole guest: the script, and its parser.
 *
 * The script is POSIX sh, run as root.  Every section starts with a marker
 * line `@@gc:<token>:<name>` (a fresh random token per run, so nothing the
 * guest prints can fake a section) and holds one command's output, or
 * nothing when the tool or file is absent.  Every value baked into the
 * script comes from the spec and was checked against a strict pattern at
 * load (interface and RDMA device names, package names, a priority number);
 * they are checked again here before use.
 *
 * Each section is then read with a real parser: nvidia-smi -q -x with
 * libxml2 (element names from a capture on a real H100 passthrough guest,
 * tests/data/guest/nvidia-smi-q-x.xml), `ip -j` / `rdma -j` / `dcb -j`
 * with json-c, os-release and gridd.conf as KEY=VALUE lines, and the
 * `mlnx_qos` report by its labelled lines (REAL-FORMATS C.1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "gc/guest.h"
#include "gc/pattern.h"
#include "gc/sections.h"
#include "gc/ssh.h"

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void gc_guest_facts_free(struct gc_guest_facts *f)
{
	if (f == NULL)
		return;
	free(f->os_id);
	free(f->os_like);
	free(f->os_version);
	free(f->kernel);
	free(f->boot_id);
	for (size_t i = 0; i < f->npkgs; i++) {
		free(f->pkgs[i].name);
		free(f->pkgs[i].version);
	}
	free(f->pkgs);
	free_strv(f->modules, f->nmodules);
	free(f->modules_conf);
	free(f->smi_error);
	free(f->driver_version);
	free(f->loaded_version);
	free(f->runfile_version);
	free(f->module_version);
	free(f->product);
	free(f->virt_mode);
	free(f->license_status);
	free(f->gridd_server);
	free(f->gridd_port);
	free(f->gridd_feature);
	free(f->token_cksum);
	free_strv(f->addrs, f->naddrs);
	free(f->netcfg);
	free(f->rdma_netdev);
	free(f->rdma_state);
	free(f->ofed);
	free(f->trust);
	free(f->qos_unit);
	free(f->qos_script);
	free(f->ctk_version);
	free(f->chrony_conf);
	memset(f, 0, sizeof(*f));
}

/* ---------------------------------------------------------------- per OS */

static bool os_is(const struct gc_guest *g, const char *os)
{
	return g->os != NULL && strcmp(g->os, os) == 0;
}

enum gc_guest_pm gc_guest_pm(const struct gc_guest *g)
{
	return os_is(g, "rhel") || os_is(g, "centos") || os_is(g, "rocky") ? GC_GPM_DNF : GC_GPM_APT;
}

/* The usual package of a branch: Ubuntu's nvidia-driver-<branch>-server,
 * Debian's nvidia-driver (one branch per release), and the RHEL-family
 * name of NVIDIA's CUDA repository (a dnf module stream picks the branch). */
const char *gc_guest_driver_package(const struct gc_guest *g, char *buf, size_t n)
{
	if (g->driver != NULL && g->driver->package != NULL)
		return g->driver->package;
	if (os_is(g, "ubuntu") && g->nvidia_driver != NULL) {
		long major = strtol(g->nvidia_driver, NULL, 10);

		snprintf(buf, n, "nvidia-driver-%ld-server", major);
		return buf;
	}
	return "nvidia-driver";
}

void gc_guest_rdma_packages(const struct gc_guest *g, const char **out, size_t *n)
{
	/* Debian/Ubuntu: rdma-core, ibverbs-utils, perftest, infiniband-diags;
	 * RHEL: rdma-core, libibverbs-utils, perftest, infiniband-diags */
	out[0] = "rdma-core";
	out[1] = gc_guest_pm(g) == GC_GPM_DNF ? "libibverbs-utils" : "ibverbs-utils";
	out[2] = "perftest";
	out[3] = "infiniband-diags";
	*n = 4;
}

const char *gc_guest_chrony_service(const struct gc_guest *g)
{
	return gc_guest_pm(g) == GC_GPM_DNF ? "chronyd" : "chrony";
}

const char *gc_guest_chrony_path(const struct gc_guest *g)
{
	/* Debian and Ubuntu's chrony.conf reads confdir /etc/chrony/conf.d;
	 * RHEL's reads /etc/chrony.conf only, so the driver adds an include */
	return gc_guest_pm(g) == GC_GPM_DNF ? "/etc/chrony.d/gpuclusterctl.conf"
					    : "/etc/chrony/conf.d/gpuclusterctl.conf";
}

/* ---------------------------------------------------------------- the script */

char *gc_guest_as_root(const char *script)
{
	return gc_ssh_as_root(script);
}

static const char *qos_if(const struct gc_guest *g)
{
	if (g->rdma_interface != NULL)
		return g->rdma_interface->name;
	return g->roce_qos != NULL ? g->roce_qos->interface : NULL;
}

char *gc_guest_observe_script(const struct gc_guest *g, const char *token)
{
	struct gc_buf b = GC_BUF_INIT;
	const char *pk[8];
	size_t npk = 0;
	char dpkg[96];
	const char *ifn = qos_if(g);
	const char *rdev = g->roce_qos != NULL && g->roce_qos->rdma_device != NULL
				   ? g->roce_qos->rdma_device : NULL;
	int prio = g->roce_qos != NULL ? g->roce_qos->pfc_priority : -1;

	if (ifn != NULL && !(ifn[0] != '-' && gc_valid_package(ifn)))
		ifn = NULL; /* never reached: the loader checked it (defence in depth) */
	if (rdev != NULL && !gc_valid_package(rdev))
		rdev = NULL;
	gc_buf_printf(&b, "export LC_ALL=C PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
			  "/sbin:/bin\nm() { printf '\\n@@gc:%s:%%s\\n' \"$1\"; }\n", token);
	gc_buf_puts(&b, "m id; id -u\n"
			"m os; cat /etc/os-release 2>/dev/null\n"
			"m kernel; uname -r\n"
			"m boot_id; cat /proc/sys/kernel/random/boot_id\n");
	gc_guest_rdma_packages(g, pk, &npk);
	pk[npk++] = gc_guest_driver_package(g, dpkg, sizeof(dpkg));
	pk[npk++] = "nvidia-container-toolkit";
	pk[npk++] = "chrony";
	gc_buf_puts(&b, "m pkgs; if command -v dpkg-query >/dev/null; then dpkg-query -W "
			"-f='${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'");
	for (size_t i = 0; i < npk; i++)
		if (gc_valid_package(pk[i]))
			gc_buf_printf(&b, " %s", pk[i]);
	gc_buf_puts(&b, " 2>/dev/null; elif command -v rpm >/dev/null; then for p in");
	for (size_t i = 0; i < npk; i++)
		if (gc_valid_package(pk[i]))
			gc_buf_printf(&b, " %s", pk[i]);
	gc_buf_puts(&b, "; do rpm -q --qf '%{NAME}\\t%{VERSION}-%{RELEASE}\\tii \\n' \"$p\" "
			"2>/dev/null | grep -v 'not installed'; done; fi\n");
	gc_buf_puts(&b, "m modules; cut -d' ' -f1 /proc/modules\n"
			"m modules_conf; cat " GC_GUEST_MODULES_CONF " 2>/dev/null\n"
			"m smi; command -v nvidia-smi >/dev/null && nvidia-smi -q -x 2>&1 | head -c 1048576\n"
			"m nvidia_loaded; cat /sys/module/nvidia/version 2>/dev/null\n"
			"m nvidia_modinfo; modinfo -F version nvidia 2>/dev/null\n"
			"m nvidia_installer; command -v nvidia-installer >/dev/null && "
			"nvidia-installer --version 2>/dev/null | head -5\n"
			"m gridd; cat " GC_GUEST_GRIDD " 2>/dev/null\n"
			"m token; [ -r " GC_GUEST_TOKEN " ] && cksum < " GC_GUEST_TOKEN "\n"
			"m ofed; command -v ofed_info >/dev/null && ofed_info -s 2>/dev/null\n"
			"m ctk; command -v nvidia-ctk >/dev/null && nvidia-ctk --version 2>/dev/null | "
			"head -3\n");
	gc_buf_puts(&b, "m net; if command -v netplan >/dev/null && [ -d /etc/netplan ]; then "
			"echo netplan; elif systemctl is-active -q NetworkManager 2>/dev/null; then "
			"echo nm; elif systemctl is-enabled -q systemd-networkd 2>/dev/null; then "
			"echo networkd; elif [ -d /etc/sysconfig/network-scripts ]; then echo ifcfg; "
			"elif [ -f /etc/network/interfaces ]; then echo ifupdown; fi\n");
	if (ifn != NULL) {
		gc_buf_printf(&b, "m ip; ip -j addr show dev %s 2>/dev/null\n", ifn);
		gc_buf_printf(&b, "m netcfg; for f in /etc/netplan/60-gpuclusterctl-%s.yaml "
				  "/etc/NetworkManager/system-connections/gpuclusterctl-%s.nmconnection "
				  "/etc/systemd/network/60-gpuclusterctl-%s.network "
				  "/etc/sysconfig/network-scripts/ifcfg-%s "
				  "/etc/network/interfaces.d/gpuclusterctl-%s; do [ -r \"$f\" ] && "
				  "{ echo \"#file $f\"; cat \"$f\"; }; done\n",
			      ifn, ifn, ifn, ifn, ifn);
		gc_buf_printf(&b, "m qos; if command -v mlnx_qos >/dev/null; then echo 'tool: mlnx_qos';"
				  " mlnx_qos -i %s 2>&1; fi\n", ifn);
		gc_buf_printf(&b, "m dcb_pfc; command -v mlnx_qos >/dev/null || dcb -j pfc show dev %s "
				  "2>/dev/null\n", ifn);
		gc_buf_printf(&b, "m dcb_app; command -v mlnx_qos >/dev/null || dcb -j app show dev %s "
				  "2>/dev/null\n", ifn);
		if (prio >= 0 && prio <= 7)
			gc_buf_printf(&b, "m ecn; for d in np rp; do f=/sys/class/net/%s/ecn/roce_$d/"
					  "enable/%d; [ -r \"$f\" ] && echo \"$d $(cat \"$f\")\"; done\n",
				      ifn, prio);
	}
	gc_buf_puts(&b, "m rdma; rdma -j link show 2>/dev/null\n");
	if (rdev != NULL) {
		gc_buf_printf(&b, "m tos; cat /sys/kernel/config/rdma_cm/%s/ports/1/default_roce_tos "
				  "2>/dev/null\n", rdev);
		gc_buf_printf(&b, "m tclass; cat /sys/class/infiniband/%s/tc/1/traffic_class "
				  "2>/dev/null\n", rdev);
	}
	gc_buf_puts(&b, "m qos_unit; systemctl is-enabled " GC_GUEST_QOS_UNIT " 2>/dev/null\n"
			"m qos_script; cat " GC_GUEST_QOS_SCRIPT " 2>/dev/null\n");
	gc_buf_printf(&b, "m chrony_conf; cat %s 2>/dev/null\n", gc_guest_chrony_path(g));
	gc_buf_printf(&b, "m chrony_active; systemctl is-active %s 2>/dev/null\n",
		      gc_guest_chrony_service(g));
	gc_buf_puts(&b, "m end\n");
	return gc_buf_take(&b);
}

/* ---------------------------------------------------------------- KEY=VALUE */

char *gc_guest_kv(const char *text, const char *key)
{
	size_t kl = strlen(key);
	const char *p = text;

	while (p != NULL && *p) {
		const char *le = strchr(p, '\n');
		size_t n = le ? (size_t)(le - p) : strlen(p);

		while (n > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			n--;
		}
		if (n > kl && memcmp(p, key, kl) == 0 && p[kl] == '=') {
			const char *v = p + kl + 1;
			size_t vn = n - kl - 1;

			while (vn > 0 && (v[vn - 1] == '\r' || v[vn - 1] == ' '))
				vn--;
			if (vn >= 2 && (v[0] == '"' || v[0] == '\'') && v[vn - 1] == v[0]) {
				v++;
				vn -= 2;
			}
			return gc_xstrndup(v, vn);
		}
		p = le ? le + 1 : NULL;
	}
	return NULL;
}

/* ---------------------------------------------------------------- nvidia-smi -q -x */

static char *child_text(xmlNode *parent, const char *name)
{
	for (xmlNode *c = parent ? parent->children : NULL; c; c = c->next) {
		if (c->type == XML_ELEMENT_NODE && xmlStrcmp(c->name, BAD_CAST name) == 0) {
			xmlChar *t = xmlNodeGetContent(c);
			char *s = gc_xstrdup(t ? (const char *)t : "");
			size_t n = strlen(s);

			xmlFree(t);
			while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\t' || s[n - 1] == ' '))
				s[--n] = '\0';
			return s;
		}
	}
	return NULL;
}

static xmlNode *child(xmlNode *parent, const char *name)
{
	for (xmlNode *c = parent ? parent->children : NULL; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE && xmlStrcmp(c->name, BAD_CAST name) == 0)
			return c;
	return NULL;
}

/*
 * nvidia_smi_log: driver_version, attached_gpus, gpu/product_name,
 * gpu/gpu_virtualization_mode/virtualization_mode, gpu/fb_memory_usage/total
 * ("81559 MiB").  vgpu_software_licensed_product/license_status appears on
 * licensed products only (a passthrough capture has none); its exact nesting
 * is not in our captures, so it is looked for under gpu and at the top.
 */
int gc_guest_parse_smi_xml(struct gc_guest_facts *f, const char *xml, size_t len)
{
	xmlDoc *doc;
	xmlNode *root, *gpu, *lic;
	char *s;

	if (len == 0 || len > 4u * 1024 * 1024)
		return -1;
	doc = xmlReadMemory(xml, (int)len, "nvidia-smi.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (doc == NULL)
		return -1;
	root = xmlDocGetRootElement(doc);
	if (root == NULL || xmlStrcmp(root->name, BAD_CAST "nvidia_smi_log") != 0) {
		xmlFreeDoc(doc);
		return -1;
	}
	f->smi = true;
	f->driver_version = child_text(root, "driver_version");
	s = child_text(root, "attached_gpus");
	f->ngpus = s ? (unsigned)strtoul(s, NULL, 10) : 0;
	free(s);
	gpu = child(root, "gpu");
	f->product = child_text(gpu, "product_name");
	f->virt_mode = child_text(child(gpu, "gpu_virtualization_mode"), "virtualization_mode");
	s = child_text(child(gpu, "fb_memory_usage"), "total");
	f->fb_mib = s ? (unsigned)strtoul(s, NULL, 10) : 0;
	free(s);
	lic = child(gpu, "vgpu_software_licensed_product");
	if (lic == NULL)
		lic = child(root, "vgpu_software_licensed_product");
	f->license_status = child_text(lic, "license_status");
	xmlFreeDoc(doc);
	return 0;
}

/* ---------------------------------------------------------------- ip -j, rdma -j, dcb -j */

/* The string member key of o; NULL when absent or not a string (a guest may
 * print null or a number where iproute2 prints a name). */
static const char *json_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool json_str_is(struct json_object *o, const char *key, const char *want)
{
	const char *v = json_str(o, key);

	return v != NULL && strcmp(v, want) == 0;
}

int gc_guest_parse_ip_json(struct gc_guest_facts *f, const char *ifname, const char *json)
{
	struct json_object *arr = json ? json_tokener_parse(json) : NULL;
	size_t n;

	if (arr == NULL || !json_object_is_type(arr, json_type_array)) {
		json_object_put(arr);
		return -1;
	}
	n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(arr, i), *v, *ai;

		if (!json_str_is(o, "ifname", ifname))
			continue;
		f->if_present = true;
		if (json_object_object_get_ex(o, "mtu", &v))
			f->mtu = (unsigned)json_object_get_int(v);
		if (!json_object_object_get_ex(o, "addr_info", &ai) ||
		    !json_object_is_type(ai, json_type_array))
			break;
		for (size_t k = 0; k < json_object_array_length(ai) && f->naddrs < 16; k++) {
			struct json_object *a = json_object_array_get_idx(ai, k), *pl;
			const char *loc = json_str(a, "local");
			char buf[64];

			if (!json_str_is(a, "family", "inet") || loc == NULL ||
			    !json_object_object_get_ex(a, "prefixlen", &pl))
				continue;
			snprintf(buf, sizeof(buf), "%s/%d", loc, json_object_get_int(pl));
			f->addrs = gc_xrealloc(f->addrs, (f->naddrs + 1) * sizeof(*f->addrs));
			f->addrs[f->naddrs++] = gc_xstrdup(buf);
		}
		break;
	}
	json_object_put(arr);
	return 0;
}

/* `rdma -j link show`: [{"ifname":"rxe0","port":1,"state":"ACTIVE",
 * "physical_state":"LINK_UP","netdev":"eth1"}, ...] (REAL-FORMATS C.7). */
int gc_guest_parse_rdma_json(struct gc_guest_facts *f, const char *dev, const char *json)
{
	struct json_object *arr = json ? json_tokener_parse(json) : NULL;

	if (arr == NULL || !json_object_is_type(arr, json_type_array)) {
		json_object_put(arr);
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *o = json_object_array_get_idx(arr, i);
		const char *v;

		if (!json_str_is(o, "ifname", dev))
			continue;
		if ((v = json_str(o, "netdev")) != NULL)
			f->rdma_netdev = gc_xstrdup(v);
		if ((v = json_str(o, "state")) != NULL)
			f->rdma_state = gc_xstrdup(v);
		break;
	}
	json_object_put(arr);
	return 0;
}

/*
 * iproute2's `dcb -j pfc show` and `dcb -j app show`.  Their JSON layout is
 * not in our captures (REAL-FORMATS C.7 has the commands, not the output),
 * so this reads it tolerantly: PFC from an object "prio_pfc" whose keys are
 * priorities and values booleans, DSCP trust from any non-empty member
 * whose name starts with "dscp" in the app table.
 */
void gc_guest_parse_dcb(struct gc_guest_facts *f, const char *pfc_json, const char *app_json)
{
	struct json_object *pfc = pfc_json ? json_tokener_parse(pfc_json) : NULL, *v;
	struct json_object *app = app_json ? json_tokener_parse(app_json) : NULL;

	if (pfc != NULL && json_object_object_get_ex(pfc, "prio_pfc", &v) &&
	    json_object_is_type(v, json_type_object)) {
		f->pfc_priority = -1;
		json_object_object_foreach(v, key, val)
		{
			/* a priority is "0".."7"; any other key is not one */
			if (key[0] >= '0' && key[0] <= '7' && key[1] == '\0' &&
			    json_object_get_boolean(val))
				f->pfc_priority = f->pfc_priority == -1 ? key[0] - '0' : -2;
		}
	}
	if (app != NULL && json_object_is_type(app, json_type_object)) {
		free(f->trust);
		f->trust = gc_xstrdup("pcp");
		json_object_object_foreach(app, key, val)
		{
			if (strncmp(key, "dscp", 4) == 0 && json_object_is_type(val, json_type_array) &&
			    json_object_array_length(val) > 0) {
				free(f->trust);
				f->trust = gc_xstrdup("dscp");
			}
		}
	}
	json_object_put(pfc);
	json_object_put(app);
}

/* `mlnx_qos -i IF` (REAL-FORMATS C.1): "Priority trust state: dscp" and,
 * under "PFC configuration:", the row "enabled 0 0 0 1 0 0 0 0". */
void gc_guest_parse_mlnx_qos(struct gc_guest_facts *f, const char *text)
{
	const char *p = text;
	bool in_pfc = false;

	while (p != NULL && *p) {
		const char *le = strchr(p, '\n');
		size_t n = le ? (size_t)(le - p) : strlen(p);
		char line[512];

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), p);
		if (strncmp(line, "Priority trust state:", 21) == 0) {
			char *v = line + 21;

			v += strspn(v, " \t");
			v[strcspn(v, " \t\r")] = '\0';
			free(f->trust);
			f->trust = gc_xstrdup(v);
		} else if (strncmp(line, "PFC configuration:", 18) == 0) {
			in_pfc = true;
		} else if (in_pfc) {
			const char *q = line + strspn(line, " \t");

			if (strncmp(q, "enabled", 7) == 0) {
				int prio = 0;

				f->pfc_priority = -1;
				for (q += 7; *q && prio < 8; prio++) {
					char *end;
					long v = strtol(q, &end, 10);

					if (end == q)
						break;
					if (v == 1)
						f->pfc_priority = f->pfc_priority == -1 ? prio : -2;
					q = end;
				}
				in_pfc = false;
			}
		}
		p = le ? le + 1 : NULL;
	}
}

/* ---------------------------------------------------------------- the rest */

static void parse_pkgs(struct gc_guest_facts *f, const char *text)
{
	const char *p = text;

	while (p != NULL && *p && f->npkgs < 64) {
		const char *le = strchr(p, '\n');
		size_t n = le ? (size_t)(le - p) : strlen(p);
		const char *t1 = memchr(p, '\t', n), *t2;

		if (t1 != NULL && (t2 = memchr(t1 + 1, '\t', (size_t)(p + n - t1 - 1))) != NULL) {
			struct gc_guest_pkg *k;

			f->pkgs = gc_xrealloc(f->pkgs, (f->npkgs + 1) * sizeof(*f->pkgs));
			k = &f->pkgs[f->npkgs++];
			k->name = gc_xstrndup(p, (size_t)(t1 - p));
			k->version = gc_xstrndup(t1 + 1, (size_t)(t2 - t1 - 1));
			/* dpkg's abbreviated status: "ii " = installed */
			k->installed = t2[1] == 'i' && t2[2] == 'i' && *k->version != '\0';
		}
		p = le ? le + 1 : NULL;
	}
}

static char **lines_of(const char *text, size_t *n, size_t cap)
{
	char **v = NULL;
	const char *p = text;

	*n = 0;
	while (p != NULL && *p && *n < cap) {
		const char *le = strchr(p, '\n');
		size_t len = le ? (size_t)(le - p) : strlen(p);

		if (len > 0) {
			v = gc_xrealloc(v, (*n + 1) * sizeof(*v));
			v[(*n)++] = gc_xstrndup(p, len);
		}
		p = le ? le + 1 : NULL;
	}
	return v;
}

static int int_or(const char *s, int dflt)
{
	char *end;
	long v;

	if (s == NULL)
		return dflt;
	s += strspn(s, " \n\t");
	/* sysfs traffic_class: "Global tclass=106" (REAL-FORMATS C.1) */
	if (strncmp(s, "Global tclass=", 14) == 0)
		s += 14;
	v = strtol(s, &end, 10);
	return end == s ? dflt : (int)v;
}

static enum gc_guest_net net_of(const char *s)
{
	if (s == NULL)
		return GC_GNET_UNKNOWN;
	if (strncmp(s, "netplan", 7) == 0)
		return GC_GNET_NETPLAN;
	if (strncmp(s, "nm", 2) == 0)
		return GC_GNET_NM;
	if (strncmp(s, "networkd", 8) == 0)
		return GC_GNET_NETWORKD;
	if (strncmp(s, "ifcfg", 5) == 0)
		return GC_GNET_IFCFG;
	if (strncmp(s, "ifupdown", 8) == 0)
		return GC_GNET_IFUPDOWN;
	return GC_GNET_UNKNOWN;
}

/* "#file PATH" then the content, per candidate file: keep the content of
 * the one that belongs to the guest's network backend. */
static char *pick_netcfg(const char *text, enum gc_guest_net net, const char *ifname)
{
	char want[160];
	const char *p, *start, *next;

	if (text == NULL || net == GC_GNET_UNKNOWN || ifname == NULL)
		return NULL;
	gc_guest_netcfg_path(net, ifname, want, sizeof(want));
	for (p = strstr(text, "#file "); p != NULL; p = next) {
		const char *le = strchr(p, '\n');

		next = le ? strstr(le, "\n#file ") : NULL;
		if (next != NULL)
			next++;
		if (le == NULL)
			break;
		if ((size_t)(le - p - 6) == strlen(want) && strncmp(p + 6, want, strlen(want)) == 0) {
			start = le + 1;
			return gc_xstrndup(start, next ? (size_t)(next - start) : strlen(start));
		}
	}
	return NULL;
}

int gc_guest_parse(struct gc_guest_facts *out, const struct gc_guest *g, const char *token,
		   const char *text, size_t len, struct gc_error *err)
{
	struct gc_guest_facts f;
	struct gc_sections s = {0};
	const char *t;
	char *id, *v;

	memset(&f, 0, sizeof(f));
	gc_sections_split(&s, token, text, len);
	if (gc_sections_get(&s, "end") == NULL) {
		gc_sections_free(&s);
		return gc_error_set(err, GC_EREMOTE, "the observation ended early (%zu of its sections "
				    "came back)", s.n);
	}
	id = gc_sections_trimmed(&s, "id");
	f.root = id != NULL && strcmp(id, "0") == 0;
	free(id);
	if ((t = gc_sections_get(&s, "os")) != NULL) {
		f.os_id = gc_guest_kv(t, "ID");
		f.os_like = gc_guest_kv(t, "ID_LIKE");
		f.os_version = gc_guest_kv(t, "VERSION_ID");
	}
	f.kernel = gc_sections_trimmed(&s, "kernel");
	f.boot_id = gc_sections_trimmed(&s, "boot_id");
	parse_pkgs(&f, gc_sections_get(&s, "pkgs"));
	f.modules = lines_of(gc_sections_get(&s, "modules"), &f.nmodules, 4096);
	f.modules_conf = gc_sections_trimmed(&s, "modules_conf");
	if ((t = gc_sections_get(&s, "smi")) != NULL) {
		const char *x = t + strspn(t, "\n \t");

		if (*x != '\0' && gc_guest_parse_smi_xml(&f, x, strlen(x)) != 0)
			f.smi_error = gc_xstrndup(x, strcspn(x, "\n"));
	}
	f.loaded_version = gc_sections_trimmed(&s, "nvidia_loaded");
	f.module_version = gc_sections_trimmed(&s, "nvidia_modinfo");
	if ((v = gc_sections_trimmed(&s, "nvidia_installer")) != NULL) {
		/* "nvidia-installer:  version 535.183.01  (...)": the first dotted number */
		const char *q = v;

		while (*q && !(q[0] >= '0' && q[0] <= '9' && strchr(q, '.') != NULL))
			q++;
		if (*q)
			f.runfile_version = gc_xstrndup(q, strspn(q, "0123456789."));
		free(v);
	}
	if ((t = gc_sections_get(&s, "gridd")) != NULL && strspn(t, "\n \t") < strlen(t)) {
		f.gridd_present = true;
		f.gridd_server = gc_guest_kv(t, "ServerAddress");
		f.gridd_port = gc_guest_kv(t, "ServerPort");
		f.gridd_feature = gc_guest_kv(t, "FeatureType");
	}
	f.token_cksum = gc_sections_trimmed(&s, "token");
	f.ofed = gc_sections_trimmed(&s, "ofed");
	f.ctk_version = gc_sections_trimmed(&s, "ctk");
	v = gc_sections_trimmed(&s, "net");
	f.net = net_of(v);
	free(v);
	f.pfc_priority = -1;
	f.tos = int_or(gc_sections_get(&s, "tos"), -1);
	f.traffic_class = int_or(gc_sections_get(&s, "tclass"), -1);
	f.qos_unit = gc_sections_trimmed(&s, "qos_unit");
	t = gc_sections_get(&s, "qos_script");
	f.qos_script = t != NULL ? gc_xstrdup(t) : NULL;
	if (f.qos_script != NULL && *f.qos_script == '\0') {
		free(f.qos_script);
		f.qos_script = NULL;
	}
	f.chrony_conf = gc_sections_trimmed(&s, "chrony_conf");
	v = gc_sections_trimmed(&s, "chrony_active");
	f.chrony_active = v != NULL && strcmp(v, "active") == 0;
	free(v);
	f.netcfg = pick_netcfg(gc_sections_get(&s, "netcfg"), f.net, qos_if(g));
	if ((t = gc_sections_get(&s, "qos")) != NULL && strstr(t, "tool: mlnx_qos") != NULL) {
		f.mlnx_qos = true;
		gc_guest_parse_mlnx_qos(&f, t);
	} else {
		gc_guest_parse_dcb(&f, gc_sections_get(&s, "dcb_pfc"), gc_sections_get(&s, "dcb_app"));
	}
	f.ecn = 1; /* every knob that exists is on; a NIC without ECN knobs (virtio) has none */
	if ((t = gc_sections_get(&s, "ecn")) != NULL) {
		size_t n;
		char **l = lines_of(t, &n, 4);

		for (size_t i = 0; i < n; i++)
			if (strstr(l[i], " 1") == NULL)
				f.ecn = 0;
		free_strv(l, n);
	}
	if (qos_if(g) != NULL)
		gc_guest_parse_ip_json(&f, qos_if(g), gc_sections_get(&s, "ip"));
	if (g->roce_qos != NULL && g->roce_qos->rdma_device != NULL)
		gc_guest_parse_rdma_json(&f, g->roce_qos->rdma_device, gc_sections_get(&s, "rdma"));
	*out = f;
	gc_sections_free(&s);
	return 0;
}
