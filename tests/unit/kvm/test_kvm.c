/*
 * test_kvm.c - the KVM host driver without a host: the observation parser
 * on a real capture (this development machine) and on hand-written ones
 * (tests/data/kvm/README.md says which is which), the recorder's exact
 * observed values and problems, the reboot evidence, and every byte of the
 * scripts a change sends.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/kvm.h"
#include "gc/plan.h"

#define TOKEN "0123456789abcdef"
#define UUID0 "9d3f0b1c-5e2a-8f47-b6c1-d2e3f4a5b6c7"
#define UUID1 "1a2b3c4d-5e6f-8a7b-9c8d-0e1f2a3b4c5d"

struct hx {
	struct gc_graph *g;
	struct gc_target *t;
	struct gc_kvm_facts f;
	struct gc_observed *o;
	struct gc_buf problems;
};

/* A resource with props given as key, value, ..., NULL. */
static struct gc_resource *res(struct hx *h, enum gc_res_kind k, const char *id, const char *vm,
                               unsigned flags, ...)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_resource *r;
	const char *key;
	va_list ap;

	assert_int_equal(gc_graph_add(&r, h->g, k, h->t, id, "kvm01", vm, flags, &err), 0);
	va_start(ap, flags);
	while ((key = va_arg(ap, const char *)) != NULL)
		gc_resource_set(h->g, r, key, va_arg(ap, const char *));
	va_end(ap);
	return r;
}

static void hx_new(struct hx *h)
{
	memset(h, 0, sizeof(*h));
	gc_graph_new(&h->g);
	h->t = gc_graph_add_target(h->g, GC_TARGET_KVM, "kvm01");
	gc_observed_new(&h->o);
}

/* The host of examples/kvm-pair.yaml: IOMMU, one GPU for vfio, one PF. */
static void hx_pair(struct hx *h)
{
	hx_new(h);
	res(h, GC_RES_KVM_IOMMU, "kvm01/kvm.iommu", NULL, GC_RES_NEEDS_REBOOT, "iommu", "on",
	    "iommu_mode", "pt", NULL);
	res(h, GC_RES_KVM_VFIO, "kvm01/kvm.vfio/0000:3b:00.0", NULL, GC_RES_AFTER_REBOOT, "driver",
	    "vfio-pci", "persistent", "true", NULL);
	res(h, GC_RES_KVM_SRIOV, "kvm01/kvm.sriov/0000:5e:00.0", NULL, GC_RES_AFTER_REBOOT,
	    "numvfs", "4", "persistent", "true", NULL);
}

static void hx_parse(struct hx *h, const char *name)
{
	struct gc_error err = GC_ERROR_INIT;
	char path[256];
	char *text;
	size_t len;

	snprintf(path, sizeof(path), "tests/data/kvm/%s", name);
	assert_int_equal(gc_read_file(&text, &len, path, 1u << 20, &err), 0);
	assert_int_equal(gc_kvm_parse(&h->f, TOKEN, text, len, &err), 0);
	free(text);
}

static void hx_record(struct hx *h)
{
	gc_kvm_record(h->o, "kvm01", (const struct gc_resource *const *)h->g->resources,
	              h->g->nresources, &h->f, &h->problems);
}

static void hx_free(struct hx *h)
{
	gc_kvm_facts_free(&h->f);
	gc_observed_free(h->o);
	gc_graph_free(h->g);
	gc_buf_free(&h->problems);
}

/* "key=value key=value" of one observed resource, in the order recorded. */
static char *observed(const struct hx *h, const char *id)
{
	const struct gc_observed_resource *o = gc_observed_resource(h->o, id);
	struct gc_buf b = GC_BUF_INIT;

	for (size_t i = 0; o != NULL && i < o->nprops; i++)
		gc_buf_printf(&b, "%s%s=%s", i ? " " : "", o->props[i].key, o->props[i].value);
	if (o == NULL)
		gc_buf_puts(&b, "(absent)");
	return gc_buf_take(&b);
}

static void assert_observed(const struct hx *h, const char *id, const char *want)
{
	char *got = observed(h, id);

	assert_string_equal(got, want);
	free(got);
}

static void assert_script(const struct hx *h, const char *id, const char *want)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	int rc = gc_kvm_script(&b, gc_graph_find(h->g, id), &h->f, &err);

	if (rc != 0)
		fail_msg("%s: %s", id, err.msg);
	assert_string_equal(gc_buf_str(&b), want);
	gc_buf_free(&b);
}

static void assert_script_fails(const struct hx *h, const char *id, int code, const char *msg)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;

	assert_int_equal(gc_kvm_script(&b, gc_graph_find(h->g, id), &h->f, &err), code);
	assert_string_equal(err.msg, msg);
	gc_buf_free(&b);
}

/* ---------------------------------------------------------------- the real capture */

/* This development machine (a Firecracker VM running Debian 12): the
 * script's real output, no GRUB, no IOMMU, virtio devices. */
static void test_parse_real_capture(void **state)
{
	struct hx h;
	char buf[64];

	hx_new(&h);
	hx_parse(&h, "observe-firecracker-debian12.txt");
	assert_true(h.f.root);
	assert_string_equal(h.f.os_id, "debian");
	assert_string_equal(h.f.os_version, "12");
	assert_string_equal(h.f.cpu_vendor, "AuthenticAMD");
	assert_string_equal(gc_kvm_iommu_key(&h.f), "amd_iommu");
	assert_string_equal(h.f.boot_id, "7ac60901-b4fa-4580-bd68-78cf5e439a52");
	assert_true(h.f.uptime_s > 24679.10 && h.f.uptime_s < 24679.12);
	assert_int_equal(h.f.loader, GC_KVM_LOADER_NONE);
	assert_null(h.f.configured);
	assert_int_equal(h.f.iommu_groups, 0);
	assert_string_equal(gc_kvm_arg(h.f.cmdline, "console", buf, sizeof(buf)), "ttyS0");
	/* what follows "--" is init's, not the kernel's */
	assert_null(gc_kvm_arg(h.f.cmdline, "--addr", buf, sizeof(buf)));
	assert_int_equal(h.f.ndevs, 4);
	assert_string_equal(h.f.devs[0].pci, "0000:00:03.0");
	assert_true(h.f.devs[0].present);
	assert_string_equal(h.f.devs[0].vendor, "0x1af4");
	assert_string_equal(h.f.devs[0].device, "0x1041");
	assert_string_equal(h.f.devs[0].driver, "virtio-pci");
	assert_null(h.f.devs[0].override); /* the kernel's "(null)" */
	assert_null(h.f.devs[0].iommu_group);
	assert_int_equal(h.f.devs[0].totalvfs, -1);
	assert_false(gc_kvm_dev(&h.f, "0000:5e:00.0")->present);
	assert_int_equal(h.f.nvfs, 1);
	assert_false(h.f.vfs[0].present);
	assert_int_equal(h.f.nmdevs, 0);
	assert_int_equal(h.f.nfiles, 0);
	(void)state;
	hx_free(&h);
}

/* The spec's devices the host lacks, and a host without a boot loader tool,
 * fail the target before anything changes: exactly these lines. */
static void test_record_real_capture_problems(void **state)
{
	struct hx h;

	hx_new(&h);
	res(&h, GC_RES_KVM_IOMMU, "kvm01/kvm.iommu", NULL, GC_RES_NEEDS_REBOOT, "iommu", "on",
	    "iommu_mode", "pt", NULL);
	res(&h, GC_RES_KVM_VFIO, "kvm01/kvm.vfio/0000:00:03.0", NULL, GC_RES_AFTER_REBOOT, "driver",
	    "vfio-pci", "persistent", "true", NULL);
	res(&h, GC_RES_KVM_SRIOV, "kvm01/kvm.sriov/0000:00:02.0", NULL, GC_RES_AFTER_REBOOT,
	    "numvfs", "4", "persistent", "true", NULL);
	res(&h, GC_RES_KVM_SRIOV, "kvm01/kvm.sriov/0000:5e:00.0", NULL, GC_RES_AFTER_REBOOT,
	    "numvfs", "4", "persistent", "true", NULL);
	hx_parse(&h, "observe-firecracker-debian12.txt");
	hx_record(&h);
	assert_string_equal(
	    gc_buf_str(&h.problems),
	    "host 'kvm01' has neither update-grub nor grubby: cannot set the kernel "
	    "arguments amd_iommu=on iommu=pt (set them in its boot loader by hand)\n"
	    "host 'kvm01': PCI device 0000:00:02.0 has no SR-IOV capability (no "
	    "sriov_totalvfs)\n"
	    "host 'kvm01' has no PCI device 0000:5e:00.0\n");
	assert_observed(&h, "kvm01/kvm.iommu", "iommu=off iommu_mode=none");
	assert_observed(&h, "kvm01/kvm.vfio/0000:00:03.0", "driver=virtio-pci persistent=false");
	assert_observed(&h, "kvm01/kvm.sriov/0000:5e:00.0", "(absent)");
	(void)state;
	hx_free(&h);
}

/* ---------------------------------------------------------------- Debian: before, pending, after
 */

static void test_fresh_host(void **state)
{
	struct hx h;
	char why[256];

	hx_pair(&h);
	hx_parse(&h, "observe-debian12-a100-fresh.txt");
	assert_int_equal(h.f.loader, GC_KVM_LOADER_UPDATE_GRUB);
	assert_string_equal(h.f.configured,
	                    "root=UUID=2f1c7a4e-5b0e-4d2b-9d7e-8a1f3c6b2e90 ro  quiet");
	hx_record(&h);
	assert_string_equal(gc_buf_str(&h.problems), "");
	assert_observed(&h, "kvm01/kvm.iommu", "iommu=off iommu_mode=none");
	assert_observed(&h, "kvm01/kvm.vfio/0000:3b:00.0", "driver=nvidia persistent=false");
	assert_observed(&h, "kvm01/kvm.sriov/0000:5e:00.0", "numvfs=0 persistent=false");
	assert_false(gc_kvm_reboot_pending(&h.f, why, sizeof(why)));
	(void)state;
	hx_free(&h);
}

/* update-grub ran, the reboot did not: recorded as configured (nothing is
 * written twice), and the reboot is owed. */
static void test_pending_reboot(void **state)
{
	struct hx h;
	char why[256];

	hx_pair(&h);
	hx_parse(&h, "observe-debian12-a100-pending.txt");
	hx_record(&h);
	assert_string_equal(gc_buf_str(&h.problems), "");
	assert_observed(&h, "kvm01/kvm.iommu", "iommu=on iommu_mode=pt");
	assert_true(gc_kvm_reboot_pending(&h.f, why, sizeof(why)));
	assert_string_equal(why, "kernel arguments intel_iommu=on iommu=pt configured, the running "
	                         "kernel has intel_iommu=off iommu=none");
	(void)state;
	hx_free(&h);
}

static void test_converged_host(void **state)
{
	struct hx h;
	char why[256];

	hx_pair(&h);
	hx_parse(&h, "observe-debian12-a100-converged.txt");
	assert_int_equal(h.f.nfiles, 4);
	hx_record(&h);
	assert_string_equal(gc_buf_str(&h.problems), "");
	assert_observed(&h, "kvm01/kvm.iommu", "iommu=on iommu_mode=pt");
	assert_observed(&h, "kvm01/kvm.vfio/0000:3b:00.0", "driver=vfio-pci persistent=true");
	assert_observed(&h, "kvm01/kvm.sriov/0000:5e:00.0", "numvfs=4 persistent=true");
	assert_false(gc_kvm_reboot_pending(&h.f, why, sizeof(why)));
	assert_string_equal(gc_kvm_dev(&h.f, "0000:3b:00.0")->iommu_group, "38");
	(void)state;
	hx_free(&h);
}

/* A rule edited by hand reads as "different"; the running kernel with the
 * arguments but no IOMMU groups is the firmware's VT-d switch. */
static void test_drift_and_firmware(void **state)
{
	struct hx h;
	struct gc_error err = GC_ERROR_INIT;
	char *text, *p;
	size_t len;

	hx_pair(&h);
	assert_int_equal(gc_read_file(&text, &len,
	                              "tests/data/kvm/observe-debian12-a100-converged.txt",
	                              1u << 20, &err),
	                 0);
	p = strstr(text, "sriov_numvfs}=\"4\"");
	p[15] = '8';
	p = strstr(text, "iommu_groups\n142");
	memcpy(p + 13, "  0", 3);
	assert_int_equal(gc_kvm_parse(&h.f, TOKEN, text, len, &err), 0);
	free(text);
	hx_record(&h);
	assert_observed(&h, "kvm01/kvm.sriov/0000:5e:00.0", "numvfs=4 persistent=different");
	assert_string_equal(gc_buf_str(&h.problems),
	                    "host 'kvm01' runs with intel_iommu=on but has "
	                    "no IOMMU groups: turn on VT-d in its firmware\n");
	(void)state;
	hx_free(&h);
}

/* ---------------------------------------------------------------- the scripts, byte for byte */

static void test_scripts_debian(void **state)
{
	struct hx h;

	hx_pair(&h);
	hx_parse(&h, "observe-debian12-a100-fresh.txt");
	assert_script(
	    &h, "kvm01/kvm.iommu",
	    "set -e\n"
	    "mkdir -p \"$(dirname /etc/default/grub.d/99-gpuclusterctl-iommu.cfg)\"\n"
	    "printf %s '# written by gpuclusterctl: do not edit, the next apply puts it back\n"
	    "# the IOMMU for VFIO device assignment, in passthrough mode for the host'\\''s own "
	    "devices\n"
	    "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX intel_iommu=on iommu=pt\"\n"
	    "' > /etc/default/grub.d/99-gpuclusterctl-iommu.cfg.gc-new\n"
	    "chmod 644 /etc/default/grub.d/99-gpuclusterctl-iommu.cfg.gc-new && mv -f "
	    "/etc/default/grub.d/99-gpuclusterctl-iommu.cfg.gc-new "
	    "/etc/default/grub.d/99-gpuclusterctl-iommu.cfg\n"
	    "update-grub 2>&1\n");
	assert_script(
	    &h, "kvm01/kvm.vfio/0000:3b:00.0",
	    "set -e\nmodprobe vfio-pci\nd=/sys/bus/pci/devices/0000:3b:00.0\n"
	    "drv() { [ -e $d/driver ] && basename \"$(readlink $d/driver)\"; }\n"
	    "echo vfio-pci > $d/driver_override\n"
	    "if [ -e $d/driver ] && [ \"$(drv)\" != vfio-pci ]; then echo 0000:3b:00.0 > "
	    "$d/driver/unbind; fi\n"
	    "[ -e $d/driver ] || echo 0000:3b:00.0 > /sys/bus/pci/drivers_probe\n"
	    "[ \"$(drv)\" = vfio-pci ] || { echo \"0000:3b:00.0: vfio-pci did not take it (driver: "
	    "$(drv || echo none); no IOMMU group? see dmesg)\" >&2; exit 1; }\n"
	    "mkdir -p \"$(dirname /etc/modules-load.d/gpuclusterctl-vfio.conf)\"\n"
	    "printf %s '# written by gpuclusterctl: do not edit, the next apply puts it back\n"
	    "# vfio-pci takes the devices whose driver_override names it\nvfio-pci\n' > "
	    "/etc/modules-load.d/gpuclusterctl-vfio.conf.gc-new\n"
	    "chmod 644 /etc/modules-load.d/gpuclusterctl-vfio.conf.gc-new && mv -f "
	    "/etc/modules-load.d/gpuclusterctl-vfio.conf.gc-new "
	    "/etc/modules-load.d/gpuclusterctl-vfio.conf\n"
	    "mkdir -p \"$(dirname /etc/udev/rules.d/70-gpuclusterctl-vfio-0000:3b:00.0.rules)\"\n"
	    "printf %s '# written by gpuclusterctl: do not edit, the next apply puts it back\n"
	    "# 0000:3b:00.0 goes to vfio-pci at boot (device assignment)\n"
	    "ACTION==\"add\", SUBSYSTEM==\"pci\", KERNEL==\"0000:3b:00.0\", "
	    "ATTR{driver_override}=\"vfio-pci\"\n' > "
	    "/etc/udev/rules.d/70-gpuclusterctl-vfio-0000:3b:00.0.rules.gc-new\n"
	    "chmod 644 /etc/udev/rules.d/70-gpuclusterctl-vfio-0000:3b:00.0.rules.gc-new && mv -f "
	    "/etc/udev/rules.d/70-gpuclusterctl-vfio-0000:3b:00.0.rules.gc-new "
	    "/etc/udev/rules.d/70-gpuclusterctl-vfio-0000:3b:00.0.rules\n");
	assert_script(
	    &h, "kvm01/kvm.sriov/0000:5e:00.0",
	    "set -e\nf=/sys/bus/pci/devices/0000:5e:00.0/sriov_numvfs\ncur=$(cat $f)\n"
	    "if [ \"$cur\" != 4 ]; then\n\t[ \"$cur\" = 0 ] || echo 0 > $f\n\techo 4 > $f\nfi\n"
	    "mkdir -p \"$(dirname /etc/udev/rules.d/70-gpuclusterctl-sriov-0000:5e:00.0.rules)\"\n"
	    "printf %s '# written by gpuclusterctl: do not edit, the next apply puts it back\n"
	    "# 4 SR-IOV VFs of 0000:5e:00.0 at boot, once its driver is bound\n"
	    "ACTION==\"bind\", SUBSYSTEM==\"pci\", KERNEL==\"0000:5e:00.0\", "
	    "ATTR{sriov_numvfs}=\"4\"\n' > "
	    "/etc/udev/rules.d/70-gpuclusterctl-sriov-0000:5e:00.0.rules.gc-new\n"
	    "chmod 644 /etc/udev/rules.d/70-gpuclusterctl-sriov-0000:5e:00.0.rules.gc-new && mv -f "
	    "/etc/udev/rules.d/70-gpuclusterctl-sriov-0000:5e:00.0.rules.gc-new "
	    "/etc/udev/rules.d/70-gpuclusterctl-sriov-0000:5e:00.0.rules\n");
	(void)state;
	hx_free(&h);
}

/* A hostile id never reaches a script; a host without a boot loader tool
 * is told so. */
static void test_script_refusals(void **state)
{
	struct hx h;

	hx_new(&h);
	res(&h, GC_RES_KVM_IOMMU, "kvm01/kvm.iommu", NULL, GC_RES_NEEDS_REBOOT, "iommu", "on",
	    "iommu_mode", "pt", NULL);
	res(&h, GC_RES_KVM_VFIO, "kvm01/kvm.vfio/0000:3b:00.0;reboot", NULL, 0, "driver",
	    "vfio-pci", NULL);
	res(&h, GC_RES_KVM_SRIOV, "kvm01/kvm.sriov/0000:5e:00.0", NULL, 0, "numvfs", "4$(id)",
	    NULL);
	hx_parse(&h, "observe-firecracker-debian12.txt");
	assert_script_fails(&h, "kvm01/kvm.iommu", GC_EREMOTE,
	                    "neither update-grub nor grubby: cannot set the kernel arguments "
	                    "amd_iommu=on iommu=pt");
	assert_script_fails(&h, "kvm01/kvm.vfio/0000:3b:00.0;reboot", GC_EINVAL,
	                    "'kvm01/kvm.vfio/0000:3b:00.0;reboot': invalid PCI address");
	assert_script_fails(&h, "kvm01/kvm.sriov/0000:5e:00.0", GC_EINVAL,
	                    "'kvm01/kvm.sriov/0000:5e:00.0': invalid numvfs");
	(void)state;
	hx_free(&h);
}

/* ---------------------------------------------------------------- RHEL: grubby, mdev */

static void test_rhel_grubby_mdev(void **state)
{
	struct hx h;
	char why[256];

	hx_new(&h);
	res(&h, GC_RES_KVM_IOMMU, "kvm01/kvm.iommu", NULL, GC_RES_NEEDS_REBOOT, "iommu", "on",
	    "iommu_mode", "pt", NULL);
	res(&h, GC_RES_KVM_VGPU, "kvm01/kvm.vgpu/w1/0", "w1", GC_RES_AFTER_REBOOT, "parent",
	    "0000:41:00.0", "profile", "grid_t4-8c", "mechanism", "mdev", "uuid", UUID0, NULL);
	res(&h, GC_RES_KVM_VGPU, "kvm01/kvm.vgpu/w2/0", "w2", GC_RES_AFTER_REBOOT, "parent",
	    "0000:41:00.0", "profile", "grid_t4-4c", "mechanism", "mdev", "uuid", UUID1, NULL);
	hx_parse(&h, "observe-rhel9-t4-mdev.txt");
	assert_int_equal(h.f.loader, GC_KVM_LOADER_GRUBBY);
	assert_string_equal(h.f.configured,
	                    "ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M "
	                    "resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root rd.lvm.lv=rhel/swap "
	                    "rhgb quiet amd_iommu=on iommu=pt");
	assert_int_equal(gc_kvm_dev(&h.f, "0000:41:00.0")->ntypes, 7);
	assert_string_equal(gc_kvm_dev(&h.f, "0000:41:00.0")->types[5].name, "GRID T4-8C");
	assert_int_equal(gc_kvm_dev(&h.f, "0000:41:00.0")->types[5].available, 1);
	hx_record(&h);
	assert_string_equal(gc_buf_str(&h.problems), "");
	assert_observed(&h, "kvm01/kvm.iommu", "iommu=on iommu_mode=pt");
	assert_false(gc_kvm_reboot_pending(&h.f, why, sizeof(why)));
	assert_observed(&h, "kvm01/kvm.vgpu/w1/0",
	                "parent=0000:41:00.0 profile=grid_t4-8c mechanism=mdev uuid=" UUID0);
	assert_observed(&h, "kvm01/kvm.vgpu/w2/0", "(absent)");
	assert_script(
	    &h, "kvm01/kvm.vgpu/w2/0",
	    "set -e\nu=" UUID1 "\nm=/sys/bus/mdev/devices/$u\n"
	    "if [ -e $m ] && [ \"$(basename \"$(readlink -f $m/mdev_type)\")\" != nvidia-319 ]; "
	    "then echo 1 > $m/remove; fi\n"
	    "[ -e $m ] || echo $u > /sys/bus/pci/devices/0000:41:00.0/mdev_supported_types/"
	    "nvidia-319/create\n"
	    "if command -v mdevctl >/dev/null; then mdevctl list --defined --uuid $u | grep -q . "
	    "|| "
	    "mdevctl define --uuid $u --parent 0000:41:00.0 --type nvidia-319 --auto; fi\n");
	assert_script(&h, "kvm01/kvm.iommu",
	              "set -e\ngrubby --update-kernel=ALL --args='amd_iommu=on iommu=pt'\n");
	(void)state;
	hx_free(&h);
}

/* A profile the GPU does not offer, and a GPU without mediated types. */
static void test_mdev_problems(void **state)
{
	struct hx h;

	hx_new(&h);
	res(&h, GC_RES_KVM_VGPU, "kvm01/kvm.vgpu/w1/0", "w1", GC_RES_AFTER_REBOOT, "parent",
	    "0000:41:00.0", "profile", "grid_t4-2c", "mechanism", "mdev", "uuid", UUID1, NULL);
	hx_parse(&h, "observe-rhel9-t4-mdev.txt");
	hx_record(&h);
	assert_string_equal(
	    gc_buf_str(&h.problems),
	    "host 'kvm01': GPU 0000:41:00.0 offers no vGPU type 'grid_t4-2c' (it "
	    "offers GRID T4-1B, GRID T4-2B, GRID T4-8Q, GRID T4-16Q, GRID T4-4C, GRID "
	    "T4-8C, GRID T4-16C)\n");
	assert_script_fails(&h, "kvm01/kvm.vgpu/w1/0", GC_EREMOTE,
	                    "GPU 0000:41:00.0 offers no vGPU type 'grid_t4-2c'");
	gc_kvm_facts_free(&h.f);
	gc_buf_reset(&h.problems);
	hx_parse(&h, "observe-debian12-a100-fresh.txt");
	gc_graph_find(h.g, "kvm01/kvm.vgpu/w1/0")->props[0].value = "0000:3b:00.0";
	hx_record(&h);
	assert_string_equal(
	    gc_buf_str(&h.problems),
	    "host 'kvm01': GPU 0000:3b:00.0 offers no mediated device types "
	    "(mdev_supported_types): is NVIDIA's vGPU manager for KVM installed?\n");
	(void)state;
	hx_free(&h);
}

/* ---------------------------------------------------------------- VF-backed vGPUs */

static void test_vf_vgpu(void **state)
{
	struct hx h;
	struct gc_buf b = GC_BUF_INIT;

	hx_new(&h);
	res(&h, GC_RES_KVM_VGPU, "kvm01/kvm.vgpu/w1/0", "w1", GC_RES_AFTER_REBOOT, "parent",
	    "0000:3b:00.0", "profile", "grid_a100d-40c", "mechanism", "vf", "vf", "0", NULL);
	res(&h, GC_RES_KVM_VGPU, "kvm01/kvm.vgpu/w2/0", "w2", GC_RES_AFTER_REBOOT, "parent",
	    "0000:3b:00.0", "profile", "grid_a100d-40c", "mechanism", "vf", "vf", "1", NULL);
	res(&h, GC_RES_KVM_VGPU, "kvm01/kvm.vgpu/w3/0", "w3", GC_RES_AFTER_REBOOT, "parent",
	    "0000:3b:00.0", "profile", "grid_a100d-80c", "mechanism", "vf", "vf", "0", NULL);
	hx_parse(&h, "observe-ubuntu2404-a100-vf.txt");
	assert_int_equal(h.f.nvfs, 2);
	assert_string_equal(h.f.vfs[0].address, "0000:3b:00.4");
	assert_int_equal(h.f.vfs[0].current, 0);
	assert_int_equal(h.f.vfs[0].ncreatable, 6); /* the header line is not a type */
	assert_string_equal(h.f.vfs[0].creatable[5].id, "698");
	assert_string_equal(h.f.vfs[0].creatable[5].name, "NVIDIA A100D-40C");
	hx_record(&h);
	assert_string_equal(gc_buf_str(&h.problems), "");
	assert_observed(&h, "kvm01/kvm.vgpu/w1/0", "(absent)");
	assert_observed(&h, "kvm01/kvm.vgpu/w2/0",
	                "parent=0000:3b:00.0 profile=grid_a100d-40c mechanism=vf vf=1");
	assert_script(
	    &h, "kvm01/kvm.vgpu/w1/0",
	    "set -e\nt=/sys/bus/pci/devices/0000:3b:00.0/virtfn0/nvidia/current_vgpu_type\n"
	    "cur=$(cat $t)\nif [ \"$cur\" != 698 ]; then\n\t[ \"$cur\" = 0 ] || echo 0 > $t\n"
	    "\techo 698 > $t\nfi\n");
	assert_script_fails(
	    &h, "kvm01/kvm.vgpu/w3/0", GC_EREMOTE,
	    "VF 0 of GPU 0000:3b:00.0 cannot take vGPU type 'grid_a100d-80c' (it can "
	    "take: NVIDIA A100D-4C, NVIDIA A100D-8C, NVIDIA A100D-10C, NVIDIA "
	    "A100D-16C, NVIDIA A100D-20C, NVIDIA A100D-40C)");
	gc_kvm_vf_enable_script(&b, "0000:3b:00.0");
	assert_string_equal(
	    gc_buf_str(&b),
	    "set -e\nif [ -x /usr/lib/nvidia/sriov-manage ]; then "
	    "/usr/lib/nvidia/sriov-manage -e 0000:3b:00.0; else echo \"0000:3b:00.0: no "
	    "/usr/lib/nvidia/sriov-manage (NVIDIA's vGPU manager for KVM) to enable its "
	    "VFs\" >&2; exit 1; fi\n");
	gc_buf_free(&b);
	(void)state;
	hx_free(&h);
}

/* ---------------------------------------------------------------- small readers */

static void test_profile_names(void **state)
{
	assert_true(gc_kvm_profile_matches("grid_t4-8c", "GRID T4-8C"));
	assert_true(gc_kvm_profile_matches("grid_a100d-40c", "NVIDIA A100D-40C"));
	assert_true(gc_kvm_profile_matches("nvidia_a100-40c", "NVIDIA A100-40C"));
	assert_true(gc_kvm_profile_matches("grid_a100-3-20c", "NVIDIA A100-3-20C"));
	assert_false(gc_kvm_profile_matches("grid_t4-8c", "GRID T4-8Q"));
	assert_false(gc_kvm_profile_matches("grid_a100-40c", "NVIDIA A100D-40C"));
	assert_false(gc_kvm_profile_matches("grid_t4-8c", ""));
	assert_false(gc_kvm_profile_matches(NULL, "GRID T4-8C"));
	(void)state;
}

static void test_kernel_args(void **state)
{
	char b[32];

	assert_string_equal(gc_kvm_arg("iommu=nopt ro iommu=pt quiet", "iommu", b, sizeof(b)),
	                    "pt");
	assert_null(gc_kvm_arg("intel_iommu=on", "iommu", b, sizeof(b)));
	assert_string_equal(gc_kvm_arg("ro quiet", "quiet", b, sizeof(b)), "");
	assert_null(gc_kvm_arg("ro -- iommu=pt", "iommu", b, sizeof(b)));
	assert_null(gc_kvm_arg("", "iommu", b, sizeof(b)));
	(void)state;
}

/* A cut-off observation is an error, and a forged marker in a file's
 * content is that file's content, nothing more. */
static void test_truncated_and_forged(void **state)
{
	struct gc_kvm_facts f;
	struct gc_error err = GC_ERROR_INIT;
	const char *forged =
	    "\n@@gc:" TOKEN ":cmdline\nro quiet\n"
	    "\n@@gc:" TOKEN ":files\n#file 45 /etc/modules-load.d/gpuclusterctl-vfio.conf\n"
	    "@@gc:fedcba9876543210:cmdline\nintel_iommu=on\n\n"
	    "\n@@gc:" TOKEN ":end\n";
	char *text;
	size_t len;

	assert_int_equal(gc_read_file(&text, &len,
	                              "tests/data/kvm/observe-firecracker-debian12.txt", 1u << 20,
	                              &err),
	                 0);
	/* the connection dropped while the host listed its mediated devices */
	len = (size_t)(strstr(text, "@@gc:" TOKEN ":mdev") - text);
	assert_int_equal(gc_kvm_parse(&f, TOKEN, text, len, &err), GC_EREMOTE);
	assert_string_equal(err.msg, "the observation ended early (12 of its sections came back)");
	free(text);
	gc_error_clear(&err);
	assert_int_equal(gc_kvm_parse(&f, TOKEN, forged, strlen(forged), &err), 0);
	assert_string_equal(f.cmdline, "ro quiet");
	assert_int_equal(f.nfiles, 1);
	assert_string_equal(f.files[0].content, "@@gc:fedcba9876543210:cmdline\nintel_iommu=on\n");
	gc_kvm_facts_free(&f);
	(void)state;
}

/* The script asks only about the spec's devices, each once, checked. */
static void test_observe_script_devices(void **state)
{
	struct hx h;
	char *s;

	hx_pair(&h);
	res(&h, GC_RES_KVM_VGPU, "kvm01/kvm.vgpu/w1/0", "w1", GC_RES_AFTER_REBOOT, "parent",
	    "0000:3b:00.0", "profile", "grid_a100d-40c", "mechanism", "vf", "vf", "2", NULL);
	res(&h, GC_RES_KVM_VFIO, "kvm01/kvm.vfio/0000:af:00.0;id", NULL, 0, "driver", "vfio-pci",
	    NULL);
	s = gc_kvm_observe_script((const struct gc_resource *const *)h.g->resources,
	                          h.g->nresources, TOKEN);
	assert_non_null(strstr(s, "m dev; for p in 0000:3b:00.0 0000:5e:00.0; do "));
	assert_non_null(strstr(s, "m vf; for pv in 0000:3b:00.0/2; do "));
	assert_null(strstr(s, ";id"));
	assert_non_null(strstr(s, "m() { printf '\\n@@gc:" TOKEN ":%s\\n' \"$1\"; }\n"));
	free(s);
	(void)state;
	hx_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_real_capture),
	    cmocka_unit_test(test_record_real_capture_problems),
	    cmocka_unit_test(test_fresh_host),
	    cmocka_unit_test(test_pending_reboot),
	    cmocka_unit_test(test_converged_host),
	    cmocka_unit_test(test_drift_and_firmware),
	    cmocka_unit_test(test_scripts_debian),
	    cmocka_unit_test(test_script_refusals),
	    cmocka_unit_test(test_rhel_grubby_mdev),
	    cmocka_unit_test(test_mdev_problems),
	    cmocka_unit_test(test_vf_vgpu),
	    cmocka_unit_test(test_profile_names),
	    cmocka_unit_test(test_kernel_args),
	    cmocka_unit_test(test_truncated_and_forged),
	    cmocka_unit_test(test_observe_script_devices),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
