/*
 * domain.c - a VM's libvirt domain XML, built from the graph's resources and
 * read back into the observed store (include/gc/libvirt.h).
 *
 * Element and attribute names follow libvirt's domain XML format
 * (https://libvirt.org/formatdomain.html): <hostdev> for PCI and mediated
 * devices, <interface type='network'>, <memoryBacking><locked/>, <os
 * firmware='efi'> with <firmware><feature> (libvirt 7.2+), <pcihole64> on
 * the PCI root controller and <sysinfo type='fwcfg'> (libvirt 6.5+).  Our
 * devices carry user aliases ("ua-" prefix, kept by libvirt across defines)
 * so each reads back as the resource it came from.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>

#include "gc/libvirt.h"
#include "gc/pattern.h"
#include "lv_int.h"

#define KIB_PER_GB (1024ull * 1024ull)

static int strcmp0(const char *a, const char *b)
{
	return a == NULL || b == NULL ? (a != b) : strcmp(a, b);
}

void gc_lv_volume_name(struct gc_buf *out, const char *vm)
{
	gc_buf_printf(out, "%s.qcow2", vm);
}

void gc_lv_mac(char out[18], const char *vm, size_t index)
{
	uint64_t h = 0xcbf29ce484222325ull;
	char key[96];

	snprintf(key, sizeof(key), "%s/nic/%zu", vm, index);
	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	snprintf(out, 18, "52:54:00:%02x:%02x:%02x", (unsigned)(h >> 16) & 0xffu,
		 (unsigned)(h >> 8) & 0xffu, (unsigned)h & 0xffu);
}

/* ---------------------------------------------------------------- building */

static int bad(struct gc_error *err, const struct gc_resource *r, const char *key, const char *v)
{
	return gc_error_set(err, GC_EINVAL, "resource '%s': invalid %s '%s' for libvirt", r->id,
			    key, v ? v : "(none)");
}

static xmlNodePtr child(xmlNodePtr parent, const char *name, const char *text)
{
	return xmlNewTextChild(parent, NULL, BAD_CAST name, text ? BAD_CAST text : NULL);
}

static void attr(xmlNodePtr n, const char *name, const char *value)
{
	xmlNewProp(n, BAD_CAST name, BAD_CAST value);
}

static unsigned prop_uint(const struct gc_resource *r, const char *key)
{
	const char *v = gc_resource_prop(r, key);

	return v ? (unsigned)strtoul(v, NULL, 10) : 0;
}

/* <address domain='0x0000' bus='0x3b' slot='0x00' function='0x0'/> (a hostdev's
 * source address takes no type) */
static void pci_address(xmlNodePtr parent, const char *pci)
{
	unsigned dom, bus, slot, fn;
	char b[4][8];
	xmlNodePtr a = child(parent, "address", NULL);

	sscanf(pci, "%x:%x:%x.%x", &dom, &bus, &slot, &fn);
	snprintf(b[0], sizeof(b[0]), "0x%04x", dom);
	snprintf(b[1], sizeof(b[1]), "0x%02x", bus);
	snprintf(b[2], sizeof(b[2]), "0x%02x", slot);
	snprintf(b[3], sizeof(b[3]), "0x%x", fn);
	attr(a, "domain", b[0]);
	attr(a, "bus", b[1]);
	attr(a, "slot", b[2]);
	attr(a, "function", b[3]);
}

static void alias(xmlNodePtr dev, const char *kind, const char *idx)
{
	char name[64];

	/* libvirt takes user aliases of [a-zA-Z0-9_-] only */
	snprintf(name, sizeof(name), "ua-%s-%s", kind, idx);
	for (char *p = name; *p; p++)
		if (*p == ':' || *p == '.')
			*p = '_';
	attr(child(dev, "alias", NULL), "name", name);
}

static bool valid_uuid(const char *s)
{
	static const char pat[] = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";

	if (s == NULL || strlen(s) != sizeof(pat) - 1)
		return false;
	for (size_t i = 0; pat[i]; i++) {
		if (pat[i] == '-' ? s[i] != '-' : strchr("0123456789abcdef", s[i]) == NULL)
			return false;
	}
	return true;
}

/* The last segment of a resource id ("vm/w1/nic.sriov/1" -> "1"). */
static const char *id_key(const struct gc_resource *r)
{
	const char *s = strrchr(r->id, '/');

	return s ? s + 1 : r->id;
}

static int add_hostdev_pci(xmlNodePtr devs, const struct gc_resource *r, const char *pci,
			   const char *kind, struct gc_error *err)
{
	xmlNodePtr h;

	if (!gc_valid_pci(pci))
		return bad(err, r, "PCI address", pci);
	h = child(devs, "hostdev", NULL);
	attr(h, "mode", "subsystem");
	attr(h, "type", "pci");
	attr(h, "managed", "yes");
	pci_address(child(h, "source", NULL), pci);
	alias(h, kind, id_key(r));
	return 0;
}

static int add_device(xmlNodePtr devs, const struct gc_resource *r, const struct gc_lv_env *env,
		      size_t *nvgpu, size_t *nnic, const char *vm, struct gc_error *err)
{
	const char *v;
	xmlNodePtr n;

	switch (r->kind) {
	case GC_RES_VM_DEVICE_PCI:
		v = gc_resource_prop(r, "device");
		return add_hostdev_pci(devs, r, gc_resource_prop(r, "host_pci"),
				       v && strcmp(v, "nic") == 0 ? "nic" : "gpu", err);
	case GC_RES_VM_DEVICE_VGPU:
		v = gc_resource_prop(r, "mechanism");
		if (v != NULL && strcmp(v, "vf") == 0) {
			const char *vf = *nvgpu < env->nvgpu_vf_pci ? env->vgpu_vf_pci[*nvgpu] : NULL;

			const char *idx = gc_resource_prop(r, "vf"), *gpu = gc_resource_prop(r, "host_pci");

			(*nvgpu)++;
			if (vf == NULL)
				return gc_error_set(err, GC_ENOTFOUND,
						    "resource '%s': the host shows no VF %s of GPU %s "
						    "(is SR-IOV on? see docs/kvm.md)",
						    r->id, idx ? idx : "?", gpu ? gpu : "?");
			return add_hostdev_pci(devs, r, vf, "vgpu", err);
		}
		(*nvgpu)++;
		v = gc_resource_prop(r, "uuid");
		if (!valid_uuid(v))
			return bad(err, r, "uuid", v);
		n = child(devs, "hostdev", NULL);
		attr(n, "mode", "subsystem");
		attr(n, "type", "mdev");
		attr(n, "model", "vfio-pci");
		attr(child(child(n, "source", NULL), "address", NULL), "uuid", v);
		alias(n, "vgpu", id_key(r));
		return 0;
	case GC_RES_VM_NIC_SRIOV:
	case GC_RES_VM_NIC_VIRTIO: {
		char mac[18];

		v = gc_resource_prop(r, "network");
		if (v == NULL || !gc_valid_name(v))
			return bad(err, r, "network", v);
		n = child(devs, "interface", NULL);
		attr(n, "type", "network");
		gc_lv_mac(mac, vm, (size_t)strtoul(id_key(r), NULL, 10));
		attr(child(n, "mac", NULL), "address", mac);
		attr(child(n, "source", NULL), "network", v);
		if (r->kind == GC_RES_VM_NIC_VIRTIO)
			attr(child(n, "model", NULL), "type", "virtio");
		alias(n, r->kind == GC_RES_VM_NIC_SRIOV ? "sriov" : "virtio", id_key(r));
		(*nnic)++;
		return 0;
	}
	default:
		return 0;
	}
}

/* A virtio disk backed by volume `vol` of the VM's pool, `format` qcow2 or raw. */
static xmlNodePtr volume_disk(xmlNodePtr devs, const char *pool, const char *vol,
			      const char *format, const char *dev)
{
	xmlNodePtr d = child(devs, "disk", NULL), n;

	attr(d, "type", "volume");
	attr(d, "device", "disk");
	n = child(d, "driver", NULL);
	attr(n, "name", "qemu");
	attr(n, "type", format);
	n = child(d, "source", NULL);
	attr(n, "pool", pool);
	attr(n, "volume", vol);
	n = child(d, "target", NULL);
	attr(n, "dev", dev);
	attr(n, "bus", "virtio");
	return d;
}

static int add_disk(xmlNodePtr devs, const struct gc_resource *vmr, const char *vm,
		    struct gc_error *err)
{
	const char *pool = gc_resource_prop(vmr, "pool");
	struct gc_buf vol = GC_BUF_INIT;

	if (pool == NULL || !gc_valid_name(pool))
		return bad(err, vmr, "pool", pool);
	gc_lv_volume_name(&vol, vm);
	alias(volume_disk(devs, pool, gc_buf_str(&vol), "qcow2", "vda"), "disk", "0");
	gc_buf_free(&vol);
	return 0;
}

/* The NoCloud seed, read-only on the second virtio disk (the initramfs of
 * a minimal image has virtio_blk, rarely a CD-ROM driver); its alias
 * carries the seed's fingerprint, which is what reads back.  (add_disk
 * checked the pool.) */
static int add_seed_disk(xmlNodePtr devs, const struct gc_resource *vmr, const char *vm,
			 const char *digest, struct gc_error *err)
{
	struct gc_buf vol = GC_BUF_INIT;
	xmlNodePtr d;

	if (strlen(digest) != 16 || strspn(digest, "0123456789abcdef") != 16)
		return bad(err, vmr, "seed digest", digest);
	gc_lv_seed_volume_name(&vol, vm);
	d = volume_disk(devs, gc_resource_prop(vmr, "pool"), gc_buf_str(&vol), "raw", "vdb");
	child(d, "readonly", NULL);
	alias(d, "seed", digest);
	gc_buf_free(&vol);
	return 0;
}

static void add_os(xmlNodePtr dom, const struct gc_resource *hw)
{
	const char *fw = hw ? gc_resource_prop(hw, "firmware") : NULL;
	xmlNodePtr os = child(dom, "os", NULL), t;

	t = child(os, "type", "hvm");
	attr(t, "arch", "x86_64");
	attr(t, "machine", "q35");
	if (fw != NULL && strcmp(fw, "efi") == 0) {
		/* OVMF picked by its features, Secure Boot off: the unsigned
		 * NVIDIA modules a GPU guest loads need it off, and without the
		 * features libvirt picks the Secure Boot build (docs/kvm.md) */
		xmlNodePtr f = child(os, "firmware", NULL), e;

		attr(os, "firmware", "efi");
		e = child(f, "feature", NULL);
		attr(e, "enabled", "no");
		attr(e, "name", "secure-boot");
		e = child(f, "feature", NULL);
		attr(e, "enabled", "no");
		attr(e, "name", "enrolled-keys");
	}
	attr(child(os, "boot", NULL), "dev", "hd");
}

/*
 * The 64-bit PCI window: QEMU's pci-hole64 on the q35 root (<pcihole64>)
 * and OVMF's own aperture, opt/ovmf/X-PciMmio64Mb through fw_cfg.  OVMF
 * before edk2-stable202211 keeps a 32 GB aperture unless told; libvirt
 * reserves the opt/ovmf/ names in <sysinfo type='fwcfg'> ("That firmware
 * name is reserved"), so the entry goes in as QEMU arguments in libvirt's
 * qemu namespace, the way NVIDIA's and the distributions' large-BAR notes
 * do (libvirt marks such a domain "tainted: custom-argv").
 */
#define QEMU_NS "http://libvirt.org/schemas/domain/qemu/1.0"

static void add_mmio(xmlNodePtr dom, xmlNodePtr devs, unsigned gb)
{
	char kib[32], arg[96];
	xmlNodePtr c, e, cl;
	xmlNsPtr ns;

	if (gb == 0)
		return;
	snprintf(kib, sizeof(kib), "%llu", (unsigned long long)gb * KIB_PER_GB);
	snprintf(arg, sizeof(arg), "name=opt/ovmf/X-PciMmio64Mb,string=%llu",
		 (unsigned long long)gb * 1024ull);
	c = child(devs, "controller", NULL);
	attr(c, "type", "pci");
	attr(c, "index", "0");
	attr(c, "model", "pcie-root");
	e = child(c, "pcihole64", kib);
	attr(e, "unit", "KiB");
	ns = xmlNewNs(dom, BAD_CAST QEMU_NS, BAD_CAST "qemu");
	cl = xmlNewChild(dom, ns, BAD_CAST "commandline", NULL);
	xmlNewProp(xmlNewChild(cl, ns, BAD_CAST "arg", NULL), BAD_CAST "value", BAD_CAST "-fw_cfg");
	xmlNewProp(xmlNewChild(cl, ns, BAD_CAST "arg", NULL), BAD_CAST "value", BAD_CAST arg);
}

int gc_lv_domain_xml(struct gc_buf *out, const char *vm, const struct gc_resource *const *res,
		     size_t nres, const struct gc_lv_env *env, struct gc_error *err)
{
	const struct gc_resource *vmr = NULL, *hw = NULL;
	xmlDocPtr doc;
	xmlNodePtr dom, devs, n;
	xmlChar *text = NULL;
	int len = 0, rc = 0;
	size_t nvgpu = 0, nnic = 0;
	char num[32];

	if (!gc_valid_name(vm))
		return gc_error_set(err, GC_EINVAL, "invalid VM name '%s' for libvirt", vm);
	for (size_t i = 0; i < nres; i++) {
		if (res[i]->vm == NULL || strcmp(res[i]->vm, vm) != 0)
			continue;
		if (res[i]->kind == GC_RES_VM)
			vmr = res[i];
		else if (res[i]->kind == GC_RES_VM_HW)
			hw = res[i];
	}
	if (vmr == NULL)
		return gc_error_set(err, GC_ENOTFOUND, "no resource vm/%s to build its domain", vm);
	if (env->uuid != NULL && !valid_uuid(env->uuid))
		return gc_error_set(err, GC_EINVAL, "invalid domain UUID '%s'", env->uuid);

	doc = xmlNewDoc(BAD_CAST "1.0");
	dom = xmlNewNode(NULL, BAD_CAST "domain");
	xmlDocSetRootElement(doc, dom);
	attr(dom, "type", env->domain_type ? env->domain_type : "kvm");
	child(dom, "name", vm);
	if (env->uuid != NULL)
		child(dom, "uuid", env->uuid);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)prop_uint(vmr, "memory_gb") * KIB_PER_GB);
	attr(child(dom, "memory", prop_uint(vmr, "memory_gb") ? num : "1048576"), "unit", "KiB");
	snprintf(num, sizeof(num), "%u", prop_uint(vmr, "cpus") ? prop_uint(vmr, "cpus") : 1);
	child(dom, "vcpu", num);
	if (hw != NULL && strcmp0(gc_resource_prop(hw, "memory_reservation"), "full") == 0)
		child(child(dom, "memoryBacking", NULL), "locked", NULL);
	add_os(dom, hw);
	n = child(dom, "features", NULL);
	child(n, "acpi", NULL);
	child(n, "apic", NULL);
	/* host-passthrough needs KVM; TCG (a lab without KVM) runs QEMU's "max" */
	n = child(dom, "cpu", NULL);
	attr(n, "mode", strcmp(env->domain_type ? env->domain_type : "kvm", "kvm") == 0 ?
				"host-passthrough" : "maximum");
	devs = child(dom, "devices", NULL);
	rc = add_disk(devs, vmr, vm, err);
	if (rc == 0 && env->seed_digest != NULL)
		rc = add_seed_disk(devs, vmr, vm, env->seed_digest, err);
	if (rc == 0 && hw != NULL)
		add_mmio(dom, devs, prop_uint(hw, "mmio64_gb"));
	for (size_t i = 0; rc == 0 && i < nres; i++) {
		if (res[i]->vm != NULL && strcmp(res[i]->vm, vm) == 0)
			rc = add_device(devs, res[i], env, &nvgpu, &nnic, vm, err);
	}
	if (rc == 0) {
		/* a serial console, and the guest agent's channel for a clean shutdown */
		attr(child(devs, "serial", NULL), "type", "pty");
		attr(child(devs, "console", NULL), "type", "pty");
		xmlDocDumpFormatMemory(doc, &text, &len, 1);
		gc_buf_put(out, (const char *)text, (size_t)len);
		xmlFree(text);
	}
	xmlFreeDoc(doc);
	return rc;
}

int gc_lv_network_xml(struct gc_buf *out, const char *name, const char *pf_dev,
		      const char *uuid, struct gc_error *err)
{
	xmlDocPtr doc;
	xmlNodePtr net, fwd;
	xmlChar *text = NULL;
	int len = 0;

	if (!gc_valid_name(name))
		return gc_error_set(err, GC_EINVAL, "invalid network name '%s' for libvirt", name);
	if (pf_dev == NULL || pf_dev[0] == '-' || strlen(pf_dev) > 15 ||
	    strspn(pf_dev, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
		    strlen(pf_dev))
		return gc_error_set(err, GC_EINVAL,
				    "network '%s': invalid PF interface name '%s' (give the host "
				    "NIC's device:)",
				    name, pf_dev ? pf_dev : "(none)");
	if (uuid != NULL && !valid_uuid(uuid))
		return gc_error_set(err, GC_EINVAL, "network '%s': invalid UUID '%s'", name, uuid);
	doc = xmlNewDoc(BAD_CAST "1.0");
	net = xmlNewNode(NULL, BAD_CAST "network");
	xmlDocSetRootElement(doc, net);
	child(net, "name", name);
	if (uuid != NULL)
		child(net, "uuid", uuid);
	fwd = child(net, "forward", NULL);
	attr(fwd, "mode", "hostdev");
	attr(fwd, "managed", "yes");
	attr(child(fwd, "pf", NULL), "dev", pf_dev);
	xmlDocDumpFormatMemory(doc, &text, &len, 1);
	gc_buf_put(out, (const char *)text, (size_t)len);
	xmlFree(text);
	xmlFreeDoc(doc);
	return 0;
}

/* ---------------------------------------------------------------- reading back */

struct reader {
	xmlDocPtr doc;
	xmlXPathContextPtr xp;
};

static int reader_open(struct reader *rd, const char *xml, const char *root, struct gc_error *err)
{
	if (xml == NULL)
		return gc_error_set(err, GC_EINVAL, "libvirt returned no <%s> XML", root);
	rd->doc = xmlReadMemory(xml, (int)strlen(xml), "libvirt.xml", NULL,
				XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (rd->doc == NULL || xmlDocGetRootElement(rd->doc) == NULL ||
	    strcmp((const char *)xmlDocGetRootElement(rd->doc)->name, root) != 0) {
		xmlFreeDoc(rd->doc);
		rd->doc = NULL;
		return gc_error_set(err, GC_EINVAL, "libvirt returned XML that is not a <%s>", root);
	}
	rd->xp = xmlXPathNewContext(rd->doc);
	return 0;
}

static void reader_close(struct reader *rd)
{
	xmlXPathFreeContext(rd->xp);
	xmlFreeDoc(rd->doc);
}

/* The string value of an XPath expression relative to `at` (NULL: the
 * document), or NULL when empty; caller frees with free(). */
static char *xstr(struct reader *rd, xmlNodePtr at, const char *expr)
{
	rd->xp->node = at ? at : xmlDocGetRootElement(rd->doc);
	return gc_lv_xpath_str(rd->xp, expr);
}

static void set_owned(struct gc_observed *obs, const char *id, const char *key, char *v)
{
	if (v != NULL)
		gc_observed_set(obs, id, key, v);
	free(v);
}

static void setu(struct gc_observed *obs, const char *id, const char *key,
		 unsigned long long v)
{
	char num[32];

	snprintf(num, sizeof(num), "%llu", v);
	gc_observed_set(obs, id, key, num);
}

/* KiB text -> whole GB when exact, else two decimals (what vCenter's reader does). */
static void set_gb(struct gc_observed *obs, const char *id, const char *key, const char *kib_s,
		   unsigned long long mult)
{
	unsigned long long kib;
	char num[48];

	if (kib_s == NULL)
		return;
	kib = strtoull(kib_s, NULL, 10) * mult;
	if (kib % KIB_PER_GB == 0)
		snprintf(num, sizeof(num), "%llu", kib / KIB_PER_GB);
	else
		snprintf(num, sizeof(num), "%.2f", (double)kib / (double)KIB_PER_GB);
	gc_observed_set(obs, id, key, num);
}

/* Unit multiplier to KiB of a libvirt memory/size unit attribute. */
static unsigned long long unit_kib(const char *unit)
{
	if (unit == NULL || strcmp(unit, "KiB") == 0 || strcmp(unit, "k") == 0 ||
	    strcmp(unit, "K") == 0)
		return 1;
	if (strcmp(unit, "MiB") == 0 || strcmp(unit, "M") == 0)
		return 1024;
	if (strcmp(unit, "GiB") == 0 || strcmp(unit, "G") == 0)
		return 1024ull * 1024;
	return 1;
}

/* "0000:3b:00.0" from a <source><address .../>, or NULL. */
static char *hostdev_pci(struct reader *rd, xmlNodePtr hd)
{
	char *d = xstr(rd, hd, "string(source/address/@domain)");
	char *b = xstr(rd, hd, "string(source/address/@bus)");
	char *s = xstr(rd, hd, "string(source/address/@slot)");
	char *f = xstr(rd, hd, "string(source/address/@function)");
	char *out = NULL;

	if (b != NULL && s != NULL && f != NULL)
		out = gc_xasprintf("%04lx:%02lx:%02lx.%lx", d ? strtoul(d, NULL, 16) : 0ul,
				   strtoul(b, NULL, 16), strtoul(s, NULL, 16), strtoul(f, NULL, 16));
	free(d);
	free(b);
	free(s);
	free(f);
	return out;
}

static const struct gc_resource *vm_res(const struct gc_resource *const *res, size_t nres,
					const char *vm, enum gc_res_kind kind, const char *key)
{
	for (size_t i = 0; i < nres; i++) {
		const struct gc_resource *r = res[i];

		if (r->kind == kind && r->vm != NULL && strcmp(r->vm, vm) == 0 &&
		    (key == NULL || strcmp(id_key(r), key) == 0))
			return r;
	}
	return NULL;
}

static void record_hostdevs(struct gc_observed *obs, struct reader *rd, const char *vm,
			    const struct gc_resource *const *res, size_t nres)
{
	xmlXPathObjectPtr o;

	rd->xp->node = xmlDocGetRootElement(rd->doc);
	o = xmlXPathEvalExpression(BAD_CAST "devices/hostdev", rd->xp);
	for (int i = 0; o && o->nodesetval && i < o->nodesetval->nodeNr; i++) {
		xmlNodePtr hd = o->nodesetval->nodeTab[i];
		char *type = xstr(rd, hd, "string(@type)");
		char *al = xstr(rd, hd, "string(alias/@name)");
		char *id = NULL;

		if (strcmp0(type, "mdev") == 0) {
			/* ours: ua-vgpu-N; another mdev is not the spec's */
			if (al != NULL && strncmp(al, "ua-vgpu-", 8) == 0) {
				id = gc_xasprintf("vm/%s/device.vgpu/%s", vm, al + 8);
				gc_observed_add(obs, id);
				gc_observed_set(obs, id, "mechanism", "mdev");
				set_owned(obs, id, "uuid", xstr(rd, hd, "string(source/address/@uuid)"));
			}
		} else if (strcmp0(type, "pci") == 0) {
			char *pci = hostdev_pci(rd, hd);

			if (pci != NULL && al != NULL && strncmp(al, "ua-vgpu-", 8) == 0) {
				id = gc_xasprintf("vm/%s/device.vgpu/%s", vm, al + 8);
				gc_observed_add(obs, id);
				gc_observed_set(obs, id, "mechanism", "vf");
				gc_observed_set(obs, id, "vf_address", pci);
			} else if (pci != NULL) {
				const struct gc_resource *r =
					vm_res(res, nres, vm, GC_RES_VM_DEVICE_PCI, pci);

				id = gc_xasprintf("vm/%s/device.pci/%s", vm, pci);
				gc_observed_add(obs, id);
				gc_observed_set(obs, id, "host_pci", pci);
				/* gpu or nic: our alias says; a hostdev added by hand
				 * takes the spec's word (it is removed otherwise) */
				if (al != NULL && strncmp(al, "ua-nic-", 7) == 0)
					gc_observed_set(obs, id, "device", "nic");
				else if (al != NULL && strncmp(al, "ua-gpu-", 7) == 0)
					gc_observed_set(obs, id, "device", "gpu");
				else if (r != NULL && gc_resource_prop(r, "device") != NULL)
					gc_observed_set(obs, id, "device", gc_resource_prop(r, "device"));
			}
			free(pci);
		}
		free(id);
		free(type);
		free(al);
	}
	xmlXPathFreeObject(o);
}

static void record_interfaces(struct gc_observed *obs, struct reader *rd, const char *vm)
{
	xmlXPathObjectPtr o;

	rd->xp->node = xmlDocGetRootElement(rd->doc);
	o = xmlXPathEvalExpression(BAD_CAST "devices/interface", rd->xp);
	for (int i = 0; o && o->nodesetval && i < o->nodesetval->nodeNr; i++) {
		xmlNodePtr in = o->nodesetval->nodeTab[i];
		char *al = xstr(rd, in, "string(alias/@name)");
		char *type = xstr(rd, in, "string(@type)");
		char *id = NULL;
		const bool sriov = al != NULL && strncmp(al, "ua-sriov-", 9) == 0;

		if (sriov)
			id = gc_xasprintf("vm/%s/nic.sriov/%s", vm, al + 9);
		else if (al != NULL && strncmp(al, "ua-virtio-", 10) == 0)
			id = gc_xasprintf("vm/%s/nic.virtio/%s", vm, al + 10);
		if (id != NULL) {
			/* ours carry no <model>: an SR-IOV interface with one was
			 * defined while its hostdev network did not exist, and libvirt
			 * made it an emulated NIC behind a PCI bridge (graph build.c);
			 * a network that reads differently makes the plan define the
			 * domain again, now that the network is there */
			char *model = sriov ? xstr(rd, in, "string(model/@type)") : NULL;

			gc_observed_add(obs, id);
			if (strcmp0(type, "network") == 0 && model != NULL) {
				char *net = xstr(rd, in, "string(source/@network)");
				char *v = gc_xasprintf("%s (an emulated %s NIC: defined before the "
						       "network existed)",
						       net ? net : "?", model);

				gc_observed_set(obs, id, "network", v);
				free(v);
				free(net);
			} else if (strcmp0(type, "network") == 0) {
				set_owned(obs, id, "network", xstr(rd, in, "string(source/@network)"));
			} else {
				gc_observed_set(obs, id, "network", type ? type : "?");
			}
			free(model);
		}
		free(id);
		free(type);
		free(al);
	}
	xmlXPathFreeObject(o);
}

int gc_lv_record_domain(struct gc_observed *obs, const char *vm, const char *host,
			const char *xml, bool running, const struct gc_lv_disk *disk,
			const struct gc_resource *const *res, size_t nres, struct gc_error *err)
{
	struct reader rd;
	char *id, *v, *unit;

	if (reader_open(&rd, xml, "domain", err) != 0)
		return err->code;
	id = gc_xasprintf("vm/%s", vm);
	gc_observed_add(obs, id);
	gc_observed_set(obs, id, "host", host);
	if (disk != NULL && disk->backing != NULL)
		gc_observed_set(obs, id, "image", disk->backing);
	if (disk != NULL && disk->pool != NULL)
		gc_observed_set(obs, id, "pool", disk->pool);
	if (disk != NULL && disk->capacity > 0) {
		const struct gc_resource *r = vm_res(res, nres, vm, GC_RES_VM, NULL);

		/* the overlay's size shows as disk_gb only when the spec sets one */
		if (r != NULL && gc_resource_prop(r, "disk_gb") != NULL)
			setu(obs, id, "disk_gb", disk->capacity >> 30);
	}
	set_owned(obs, id, "cpus", xstr(&rd, NULL, "string(vcpu)"));
	v = xstr(&rd, NULL, "string(memory)");
	unit = xstr(&rd, NULL, "string(memory/@unit)");
	set_gb(obs, id, "memory_gb", v, unit_kib(unit));
	free(v);
	free(unit);
	free(id);

	id = gc_xasprintf("vm/%s/hw", vm);
	gc_observed_add(obs, id);
	v = xstr(&rd, NULL, "string(os/@firmware)");
	if (v == NULL)
		v = xstr(&rd, NULL, "string(os/loader[@type='pflash'])");
	gc_observed_set(obs, id, "firmware", v != NULL ? "efi" : "bios");
	free(v);
	v = xstr(&rd, NULL, "name(memoryBacking/locked)");
	gc_observed_set(obs, id, "memory_reservation", v != NULL ? "full" : "none");
	free(v);
	v = xstr(&rd, NULL, "string(devices/controller[@type='pci'][@index='0']/pcihole64)");
	unit = xstr(&rd, NULL, "string(devices/controller[@type='pci'][@index='0']/pcihole64/@unit)");
	if (v != NULL) {
		/* the window counts when OVMF is told the same size */
		char *fw = xstr(&rd, NULL,
				"string(*[local-name()='commandline']/*[local-name()='arg']"
				"[starts-with(@value,'name=opt/ovmf/X-PciMmio64Mb,string=')]/@value)");
		unsigned long long mb = fw ? strtoull(strchr(fw, '=') ? strrchr(fw, '=') + 1 : "0",
						      NULL, 10) : 0;
		unsigned long long kib = strtoull(v, NULL, 10) * unit_kib(unit);

		if (mb * 1024ull == kib)
			set_gb(obs, id, "mmio64_gb", v, unit_kib(unit));
		else
			gc_observed_set(obs, id, "mmio64_gb",
					fw ? "(OVMF X-PciMmio64Mb differs from pcihole64)"
					   : "(no OVMF X-PciMmio64Mb)");
		free(fw);
	}
	free(v);
	free(unit);
	free(id);

	v = xstr(&rd, NULL, "string(devices/disk/alias[starts-with(@name,'ua-seed-')]/@name)");
	if (v != NULL) {
		id = gc_xasprintf("vm/%s/seed", vm);
		gc_observed_add(obs, id);
		gc_observed_set(obs, id, "datasource", "nocloud");
		gc_observed_set(obs, id, "digest", v + 8);
		free(id);
		free(v);
	}
	record_hostdevs(obs, &rd, vm, res, nres);
	record_interfaces(obs, &rd, vm);

	id = gc_xasprintf("vm/%s/power", vm);
	gc_observed_add(obs, id);
	gc_observed_set(obs, id, "power", running ? "on" : "off");
	free(id);
	gc_observed_set_vm(obs, vm, running ? GC_POWER_ON : GC_POWER_OFF, host, false);
	reader_close(&rd);
	return 0;
}

int gc_lv_record_network(struct gc_observed *obs, const char *id, const char *xml,
			 bool autostart, struct gc_error *err)
{
	struct reader rd;

	if (reader_open(&rd, xml, "network", err) != 0)
		return err->code;
	gc_observed_add(obs, id);
	set_owned(obs, id, "forward", xstr(&rd, NULL, "string(forward/@mode)"));
	set_owned(obs, id, "pf", xstr(&rd, NULL, "string(forward/pf/@dev)"));
	gc_observed_set(obs, id, "autostart", autostart ? "true" : "false");
	reader_close(&rd);
	return 0;
}
