/*
 * render.c - the exact files and sh scripts the KVM host driver sends.
 *
 * Each script is built only from constants, values checked here against
 * strict patterns (PCI addresses, a UUID, numbers, a type directory name)
 * and files rendered below, written whole with printf and renamed into
 * place, so tests can assert every byte and a second apply finds the files
 * equal.  Every script is idempotent: it reads the state it is about to
 * change and leaves what already holds.
 *
 *   kvm.iommu  Debian/Ubuntu: a drop-in of ours in /etc/default/grub.d that
 *              appends intel_iommu=on|amd_iommu=on iommu=pt to
 *              GRUB_CMDLINE_LINUX, then update-grub (grub-mkconfig sources
 *              the drop-ins after /etc/default/grub, so the user's file is
 *              untouched); RHEL family: grubby --update-kernel=ALL --args.
 *   kvm.vfio   now: driver_override, unbind, drivers_probe; at boot: a udev
 *              rule setting driver_override on the device's "add" event
 *              (what driverctl does, per address, not per vendor:device id
 *              as `options vfio-pci ids=` would: two GPUs of one model may
 *              serve passthrough and vGPU) and vfio-pci in modules-load.d.
 *   kvm.sriov  sriov_numvfs (through 0 when changing a nonzero count: the
 *              kernel refuses N -> M) and a udev rule for the PF's "bind"
 *              event (sriov_numvfs needs the PF's driver bound; "add" comes
 *              before it).
 *   kvm.vgpu   mdev: UUID written to the type's `create`, defined with
 *              mdevctl (--auto) where it is installed; vf: the type id that
 *              the VF's nvidia/creatable_vgpu_types gives the profile's name
 *              written to its nvidia/current_vgpu_type (through 0 when it
 *              held another); a GPU without VFs first gets them from
 *              NVIDIA's sriov-manage -e (gc_kvm_vf_enable_script).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/kvm.h"
#include "gc/pattern.h"

#define HEADER "# written by gpuclusterctl: do not edit, the next apply puts it back\n"

void gc_kvm_rule_path(char *buf, size_t n, const char *kind, const char *pci)
{
	snprintf(buf, n, GC_KVM_RULES_DIR "/70-gpuclusterctl-%s-%s.rules", kind, pci);
}

char *gc_kvm_render_vfio_rule(const char *pci)
{
	return gc_xasprintf(HEADER "# %s goes to vfio-pci at boot (device assignment)\n"
	                           "ACTION==\"add\", SUBSYSTEM==\"pci\", KERNEL==\"%s\", "
	                           "ATTR{driver_override}=\"vfio-pci\"\n",
	                    pci, pci);
}

char *gc_kvm_render_vfio_modules(void)
{
	return gc_xstrdup(HEADER "# vfio-pci takes the devices whose driver_override names it\n"
	                         "vfio-pci\n");
}

char *gc_kvm_render_sriov_rule(const char *pci, unsigned numvfs)
{
	return gc_xasprintf(HEADER "# %u SR-IOV VFs of %s at boot, once its driver is bound\n"
	                           "ACTION==\"bind\", SUBSYSTEM==\"pci\", KERNEL==\"%s\", "
	                           "ATTR{sriov_numvfs}=\"%u\"\n",
	                    numvfs, pci, pci, numvfs);
}

char *gc_kvm_render_grub_dropin(const char *iommu_key)
{
	return gc_xasprintf(HEADER
	                    "# the IOMMU for VFIO device assignment, in passthrough mode for "
	                    "the host's own devices\n"
	                    "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX %s=on iommu=pt\"\n",
	                    iommu_key);
}

/* Append a step that writes `content` (no single quotes) to `path` whole. */
static void put_file(struct gc_buf *b, const char *path, const char *content)
{
	gc_buf_printf(b, "mkdir -p \"$(dirname %s)\"\nprintf %%s ", path);
	gc_shell_quote(b, content);
	gc_buf_printf(b, " > %s.gc-new\nchmod 644 %s.gc-new && mv -f %s.gc-new %s\n", path, path,
	              path, path);
}

/* ---------------------------------------------------------------- per kind */

static int script_iommu(struct gc_buf *out, const struct gc_kvm_facts *f, struct gc_error *err)
{
	const char *key = gc_kvm_iommu_key(f);
	char *dropin;

	if (key == NULL)
		return gc_error_set(err, GC_EREMOTE, "CPU vendor '%s' is neither Intel nor AMD",
		                    f->cpu_vendor ? f->cpu_vendor : "(none)");
	switch (f->loader) {
	case GC_KVM_LOADER_UPDATE_GRUB:
		dropin = gc_kvm_render_grub_dropin(key);
		gc_buf_puts(out, "set -e\n");
		put_file(out, GC_KVM_GRUB_DROPIN, dropin);
		gc_buf_puts(out, "update-grub 2>&1\n");
		free(dropin);
		return 0;
	case GC_KVM_LOADER_GRUBBY:
		gc_buf_printf(out, "set -e\ngrubby --update-kernel=ALL --args='%s=on iommu=pt'\n",
		              key);
		return 0;
	case GC_KVM_LOADER_NONE: break;
	}
	return gc_error_set(err, GC_EREMOTE,
	                    "neither update-grub nor grubby: cannot set the kernel "
	                    "arguments %s=on iommu=pt",
	                    key);
}

static int script_vfio(struct gc_buf *out, const char *pci)
{
	char path[160];
	char *rule = gc_kvm_render_vfio_rule(pci), *mods = gc_kvm_render_vfio_modules();

	gc_buf_printf(out,
	              "set -e\nmodprobe vfio-pci\nd=/sys/bus/pci/devices/%s\n"
	              "drv() { [ -e $d/driver ] && basename \"$(readlink $d/driver)\"; }\n"
	              "echo vfio-pci > $d/driver_override\n"
	              "if [ -e $d/driver ] && [ \"$(drv)\" != vfio-pci ]; then "
	              "echo %s > $d/driver/unbind; fi\n"
	              "[ -e $d/driver ] || echo %s > /sys/bus/pci/drivers_probe\n"
	              "[ \"$(drv)\" = vfio-pci ] || { echo \"%s: vfio-pci did not take it (driver: "
	              "$(drv || echo none); no IOMMU group? see dmesg)\" >&2; exit 1; }\n",
	              pci, pci, pci, pci);
	put_file(out, GC_KVM_VFIO_MODULES, mods);
	gc_kvm_rule_path(path, sizeof(path), "vfio", pci);
	put_file(out, path, rule);
	free(rule);
	free(mods);
	return 0;
}

static int script_sriov(struct gc_buf *out, const char *pci, unsigned n)
{
	char path[160];
	char *rule = gc_kvm_render_sriov_rule(pci, n);

	gc_buf_printf(out,
	              "set -e\nf=/sys/bus/pci/devices/%s/sriov_numvfs\ncur=$(cat $f)\n"
	              "if [ \"$cur\" != %u ]; then\n\t[ \"$cur\" = 0 ] || echo 0 > $f\n"
	              "\techo %u > $f\nfi\n",
	              pci, n, n);
	gc_kvm_rule_path(path, sizeof(path), "sriov", pci);
	put_file(out, path, rule);
	free(rule);
	return 0;
}

/* 8-4-4-4-12 hex digits. */
static bool valid_uuid(const char *s)
{
	if (s == NULL || strlen(s) != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : strchr("0123456789abcdefABCDEF", s[i]) == NULL)
			return false;
	}
	return true;
}

/* An mdev type directory as sysfs names it: "nvidia-222", "i915-GVTg_V5_4". */
static bool valid_type_dir(const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	return n > 0 && n <= 64 && s[0] != '-' && s[0] != '.' &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static int script_mdev(struct gc_buf *out, const struct gc_resource *r,
                       const struct gc_kvm_facts *f, struct gc_error *err)
{
	const char *parent = gc_resource_prop(r, "parent"),
	           *profile = gc_resource_prop(r, "profile");
	const char *uuid = gc_resource_prop(r, "uuid");
	const struct gc_kvm_dev *d = gc_kvm_dev(f, parent);
	const char *type = NULL;

	if (!valid_uuid(uuid))
		return gc_error_set(err, GC_EINVAL, "'%s': invalid mdev UUID", r->id);
	for (size_t i = 0; d != NULL && i < d->ntypes && type == NULL; i++)
		if (gc_kvm_profile_matches(profile, d->types[i].name))
			type = d->types[i].id;
	if (type == NULL || !valid_type_dir(type))
		return gc_error_set(err, GC_EREMOTE, "GPU %s offers no vGPU type '%s'", parent,
		                    profile ? profile : "");
	gc_buf_printf(
	    out,
	    "set -e\nu=%s\nm=/sys/bus/mdev/devices/$u\n"
	    "if [ -e $m ] && [ \"$(basename \"$(readlink -f $m/mdev_type)\")\" != %s ]; "
	    "then echo 1 > $m/remove; fi\n"
	    "[ -e $m ] || echo $u > /sys/bus/pci/devices/%s/mdev_supported_types/%s/create\n"
	    "if command -v mdevctl >/dev/null; then mdevctl list --defined --uuid $u | "
	    "grep -q . || mdevctl define --uuid $u --parent %s --type %s --auto; fi\n",
	    uuid, type, parent, type, parent, type);
	return 0;
}

void gc_kvm_vf_enable_script(struct gc_buf *out, const char *parent)
{
	if (!gc_valid_pci(parent))
		return; /* never reached: checked by the caller (defence in depth) */
	gc_buf_printf(out,
	              "set -e\nif [ -x /usr/lib/nvidia/sriov-manage ]; then "
	              "/usr/lib/nvidia/sriov-manage -e %s; else echo \"%s: no "
	              "/usr/lib/nvidia/sriov-manage (NVIDIA's vGPU manager for KVM) to enable "
	              "its VFs\" >&2; exit 1; fi\n",
	              parent, parent);
}

static int script_vf(struct gc_buf *out, const struct gc_resource *r, const struct gc_kvm_facts *f,
                     struct gc_error *err)
{
	const char *parent = gc_resource_prop(r, "parent"),
	           *profile = gc_resource_prop(r, "profile");
	const char *idx = gc_resource_prop(r, "vf");
	const struct gc_kvm_vf *v;
	const char *type = NULL;
	struct gc_buf names = GC_BUF_INIT;
	unsigned n;

	if (idx == NULL || strlen(idx) == 0 || strlen(idx) > 4 ||
	    strspn(idx, "0123456789") != strlen(idx))
		return gc_error_set(err, GC_EINVAL, "'%s': invalid VF index", r->id);
	n = (unsigned)strtoul(idx, NULL, 10);
	v = gc_kvm_vf(f, parent, n);
	if (v == NULL || !v->present)
		return gc_error_set(err, GC_EREMOTE,
		                    "GPU %s has no VF %u: enable its VFs "
		                    "(/usr/lib/nvidia/sriov-manage -e %s)",
		                    parent, n, parent);
	for (size_t i = 0; i < v->ncreatable && type == NULL; i++)
		if (gc_kvm_profile_matches(profile, v->creatable[i].name))
			type = v->creatable[i].id;
	if (type != NULL) {
		/* ids are numbers (the parser keeps only those) */
		gc_buf_printf(
		    out,
		    "set -e\nt=/sys/bus/pci/devices/%s/virtfn%u/nvidia/current_vgpu_type\n"
		    "cur=$(cat $t)\nif [ \"$cur\" != %s ]; then\n"
		    "\t[ \"$cur\" = 0 ] || echo 0 > $t\n\techo %s > $t\nfi\n",
		    parent, n, type, type);
		return 0;
	}
	for (size_t i = 0; i < v->ncreatable && i < 12; i++)
		gc_buf_printf(&names, "%s%s", i ? ", " : "", v->creatable[i].name);
	gc_error_set(err, GC_EREMOTE,
	             "VF %u of GPU %s cannot take vGPU type '%s' (it can take: %s)", n, parent,
	             profile ? profile : "", names.len ? gc_buf_str(&names) : "none");
	gc_buf_free(&names);
	return err->code;
}

int gc_kvm_script(struct gc_buf *out, const struct gc_resource *r, const struct gc_kvm_facts *f,
                  struct gc_error *err)
{
	const char *pci = strrchr(r->id, '/');
	const char *mech = gc_resource_prop(r, "mechanism");

	pci = pci != NULL ? pci + 1 : "";
	if (r->kind == GC_RES_KVM_IOMMU)
		return script_iommu(out, f, err);
	if (r->kind == GC_RES_KVM_VGPU) {
		const char *parent = gc_resource_prop(r, "parent");

		if (parent == NULL || !gc_valid_pci(parent))
			return gc_error_set(err, GC_EINVAL, "'%s': invalid parent PCI address",
			                    r->id);
		if (mech != NULL && strcmp(mech, "vf") == 0)
			return script_vf(out, r, f, err);
		return script_mdev(out, r, f, err);
	}
	if (!gc_valid_pci(pci))
		return gc_error_set(err, GC_EINVAL, "'%s': invalid PCI address", r->id);
	if (r->kind == GC_RES_KVM_VFIO)
		return script_vfio(out, pci);
	if (r->kind == GC_RES_KVM_SRIOV) {
		const char *n = gc_resource_prop(r, "numvfs");

		if (n == NULL || strspn(n, "0123456789") != strlen(n) || strlen(n) == 0 ||
		    strlen(n) > 4)
			return gc_error_set(err, GC_EINVAL, "'%s': invalid numvfs", r->id);
		return script_sriov(out, pci, (unsigned)strtoul(n, NULL, 10));
	}
	return gc_error_set(err, GC_ENOTSUP, "'%s' is not a KVM host resource", r->id);
}
