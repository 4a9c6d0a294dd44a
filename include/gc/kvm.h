/*
 * kvm.h - the KVM host driver's pieces that tests and fuzzers reach: the
 * observation script and its parser, the recorder, and the sh scripts
 * that change a host.  Transport-free: src/drivers/kvm/driver.c runs them
 * over gc_ssh (as root, through `sudo -n` for others).
 *
 * A KVM host is observed with one exec of a POSIX sh script whose
 * sections are framed by marker lines (gc/sections.h): the running kernel
 * arguments (/proc/cmdline), the CPU vendor, os-release, the boot
 * loader's tool and what it boots next (the first `linux` line of
 * grub.cfg, or `grubby --info=DEFAULT`), the IOMMU group count, per PCI
 * device of the spec its driver, driver_override, SR-IOV counts and
 * mediated device types, the VFs of VF-backed vGPUs, the mediated devices
 * that exist, and the files the driver owns.  docs/kvm-host.md says which
 * of these formats were captured on real machines and which are read
 * tolerantly from documentation only.
 */
#ifndef GC_KVM_H
#define GC_KVM_H

#include <stdbool.h>
#include <stddef.h>

#include "gc/error.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/util.h"

/* Files the driver owns on a host (one name each, so a user sees ours). */
#define GC_KVM_GRUB_DROPIN  "/etc/default/grub.d/99-gpuclusterctl-iommu.cfg"
#define GC_KVM_VFIO_MODULES "/etc/modules-load.d/gpuclusterctl-vfio.conf"
/* GC_KVM_RULES_DIR/70-gpuclusterctl-{vfio,sriov}-<pci>.rules */
#define GC_KVM_RULES_DIR "/etc/udev/rules.d"

/* Caps on what one observation may hold (a host can grow its output). */
#define GC_KVM_MAX_DEVS       256
#define GC_KVM_MAX_TYPES      128
#define GC_KVM_MAX_MDEVS      1024
#define GC_KVM_MAX_FILES      256
#define GC_KVM_MAX_FILE_BYTES 65536

/* How the host's boot loader gets kernel arguments. */
enum gc_kvm_loader {
	GC_KVM_LOADER_NONE = 0,
	GC_KVM_LOADER_UPDATE_GRUB, /* Debian, Ubuntu: /etc/default/grub(.d) + update-grub */
	GC_KVM_LOADER_GRUBBY,      /* RHEL family: grubby --update-kernel=ALL */
};

/* A vGPU type: a mediated device type (id "nvidia-222", name "GRID T4-8C")
 * or, on a VF, a creatable type (id "557", name "NVIDIA A100-4C"). */
struct gc_kvm_type {
	char *id;
	char *name;
	int available; /* available_instances; -1 unknown */
};

/* One PCI device the spec names (vfio, SR-IOV PF, vGPU parent). */
struct gc_kvm_dev {
	char pci[16];
	bool present;
	char *vendor, *device;     /* "0x10de", "0x20b5" */
	char *driver;              /* bound driver's name, NULL when none */
	char *override;            /* driver_override, NULL when "(null)" or absent */
	char *iommu_group;         /* NULL when the device has none (IOMMU off) */
	int totalvfs, numvfs;      /* -1: no SR-IOV capability */
	struct gc_kvm_type *types; /* mdev_supported_types */
	size_t ntypes;
};

/* VF `index` of GPU `parent`, for a VF-backed vGPU. */
struct gc_kvm_vf {
	char parent[16];
	unsigned index;
	bool present;
	char *address;                 /* the VF's PCI address */
	long current;                  /* nvidia/current_vgpu_type: 0 none, -1 unreadable */
	struct gc_kvm_type *creatable; /* nvidia/creatable_vgpu_types */
	size_t ncreatable;
};

/* A mediated device that exists (/sys/bus/mdev/devices). */
struct gc_kvm_mdev {
	char uuid[37];
	char parent[16];
	char *type; /* its mdev_type directory, "nvidia-222" */
};

struct gc_kvm_file {
	char *path;
	char *content; /* as read, up to GC_KVM_MAX_FILE_BYTES */
};

struct gc_kvm_facts {
	bool root; /* the login user is root (no sudo) */
	char *os_id, *os_like, *os_version;
	char *cmdline;    /* the running kernel's arguments */
	char *cpu_vendor; /* "GenuineIntel", "AuthenticAMD", NULL when none */
	char *boot_id;
	double uptime_s; /* -1 unknown */
	enum gc_kvm_loader loader;
	char *configured;  /* the arguments the boot loader boots next; NULL unknown */
	long iommu_groups; /* entries of /sys/kernel/iommu_groups; -1 unknown */
	struct gc_kvm_dev *devs;
	size_t ndevs;
	struct gc_kvm_vf *vfs;
	size_t nvfs;
	struct gc_kvm_mdev *mdevs;
	size_t nmdevs;
	struct gc_kvm_file *files;
	size_t nfiles;
};

void gc_kvm_facts_free(struct gc_kvm_facts *f);

/* The observation script for the target's resources (gc_xmalloc'd); token: 16 hex. */
char *gc_kvm_observe_script(const struct gc_resource *const *res, size_t nres, const char *token);
/* Parse its output.  GC_EREMOTE when the output was cut short (no `end`). */
int gc_kvm_parse(struct gc_kvm_facts *out, const char *token, const char *text, size_t len,
                 struct gc_error *err);

/* Lookups in the facts (NULL when absent; borrowed). */
const struct gc_kvm_dev *gc_kvm_dev(const struct gc_kvm_facts *f, const char *pci);
const struct gc_kvm_vf *gc_kvm_vf(const struct gc_kvm_facts *f, const char *parent, unsigned index);
const struct gc_kvm_mdev *gc_kvm_mdev(const struct gc_kvm_facts *f, const char *uuid);
const char *gc_kvm_file(const struct gc_kvm_facts *f, const char *path);

/* "intel_iommu" or "amd_iommu" by the CPU vendor (Hygon counts as AMD);
 * NULL for another vendor. */
const char *gc_kvm_iommu_key(const struct gc_kvm_facts *f);
/* The value of the last `key=value` in a kernel command line, copied to
 * buf; NULL when the key is absent (a bare `key` reads as ""). */
const char *gc_kvm_arg(const char *cmdline, const char *key, char *buf, size_t n);
/* True when the boot loader boots other IOMMU arguments than the running
 * kernel has; *why says which ("intel_iommu=on iommu=pt configured, running
 * without them"). */
bool gc_kvm_reboot_pending(const struct gc_kvm_facts *f, char *why, size_t n);

/*
 * Does a vGPU type's name ("GRID T4-8C", "NVIDIA A100-40C") name the
 * spec's profile ("grid_t4-8c", "nvidia_a100-40c")?  Compared without case,
 * with ' ' and '_' as '-', and without a leading "grid-"/"nvidia-".
 */
bool gc_kvm_profile_matches(const char *profile, const char *type_name);

/* Record the facts as the target's resources' observed properties; one
 * line in `problems` per thing the spec names that the host lacks. */
void gc_kvm_record(struct gc_observed *obs, const char *host, const struct gc_resource *const *res,
                   size_t nres, const struct gc_kvm_facts *f, struct gc_buf *problems);

/* ---------------------------------------------------------------- what the driver writes */

/* "/etc/udev/rules.d/70-gpuclusterctl-vfio-0000:3b:00.0.rules" (kind "vfio" or "sriov"). */
void gc_kvm_rule_path(char *buf, size_t n, const char *kind, const char *pci);
char *gc_kvm_render_vfio_rule(const char *pci);
char *gc_kvm_render_vfio_modules(void);
char *gc_kvm_render_sriov_rule(const char *pci, unsigned numvfs);
char *gc_kvm_render_grub_dropin(const char *iommu_key);

/*
 * The whole sh script that applies resource r (created or updated) on a
 * host with these facts: every value checked again (PCI addresses, UUIDs,
 * numbers, type ids), files written whole and renamed into place.
 * GC_EINVAL for a bad value, GC_EREMOTE when the host cannot take it (no
 * boot loader tool, no vGPU type of the profile).
 */
int gc_kvm_script(struct gc_buf *out, const struct gc_resource *r, const struct gc_kvm_facts *f,
                  struct gc_error *err);

/* A GPU without VFs gets them from NVIDIA's sriov-manage (a VF-backed vGPU
 * needs one); the driver observes again before gc_kvm_script(). */
void gc_kvm_vf_enable_script(struct gc_buf *out, const char *parent);

/* The reboot: detached, so the command returns before sshd goes down. */
#define GC_KVM_REBOOT_SCRIPT "nohup sh -c 'sleep 1; systemctl reboot || reboot' >/dev/null 2>&1 &"

#endif
