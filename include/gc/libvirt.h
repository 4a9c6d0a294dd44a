/*
 * libvirt.h - the KVM host's libvirt driver: its VMs as libvirt domains and
 * the networks that hand out SR-IOV VFs, through the libvirt C API (never
 * `virsh` output).
 *
 * The domain XML is built with libxml2 from the graph's resources of one VM
 * (gc_lv_domain_xml) and read back with XPath into the observed store in the
 * graph's own property shape (gc_lv_record_domain), so the planner's diff is
 * the generic one.  Both are pure: the unit tests run them against libvirt's
 * in-process test:///default driver and against captured XML.
 *
 * What the XML carries for each resource (docs/kvm.md):
 *   vm                 name, memory, vcpu; the disk: a qcow2 overlay volume
 *                      "<vm>.qcow2" in the VM's pool, backed by `image`
 *   vm.hw              firmware (OVMF chosen by feature, Secure Boot off, or
 *                      SeaBIOS), <memoryBacking><locked/> for a full
 *                      reservation, the 64-bit PCI window: <pcihole64> on the
 *                      pcie-root controller and OVMF's opt/ovmf/X-PciMmio64Mb
 *   vm.device.pci      <hostdev type='pci' managed='yes'>, alias ua-gpu-N/ua-nic-N
 *   vm.device.vgpu     mdev: <hostdev type='mdev'> by UUID; vf: the VF as a PCI hostdev
 *   vm.nic.sriov       <interface type='network'> on the PF's hostdev network
 *   vm.nic.virtio      <interface type='network'> with model virtio
 *   vm.power           the domain's state
 */
#ifndef GC_LIBVIRT_H
#define GC_LIBVIRT_H

#include <stdbool.h>
#include <stddef.h>

#include "gc/error.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/spec.h"
#include "gc/util.h"

/* What the host adds to the spec's resources when a domain is written. */
struct gc_lv_env {
	const char *domain_type; /* "kvm" when the host offers it, else "qemu" (TCG) */
	const char *uuid;        /* the existing domain's UUID, or NULL for a new one */
	/* the PCI address of the VF that carries each VF-backed vGPU, in the
	 * order of the VM's vm.device.vgpu resources (NULL: not resolved) */
	const char *const *vgpu_vf_pci;
	size_t nvgpu_vf_pci;
	const char *seed_digest; /* the NoCloud seed volume's fingerprint, when it has one */
};

/* The overlay volume of a VM: "<vm>.qcow2". */
void gc_lv_volume_name(struct gc_buf *out, const char *vm);

/*
 * The whole domain XML of VM `vm` from its resources among res[0..nres)
 * (those whose ->vm is `vm`).  Every value is checked again (PCI
 * addresses, names, UUIDs) before it goes into the XML: GC_EINVAL names the
 * resource and key.
 */
int gc_lv_domain_xml(struct gc_buf *out, const char *vm, const struct gc_resource *const *res,
		     size_t nres, const struct gc_lv_env *env, struct gc_error *err);

/* What the host's storage says about a VM's disk (virStorageVol*). */
struct gc_lv_disk {
	const char *pool;    /* pool holding the overlay, or NULL */
	const char *backing; /* its backing image path, or NULL */
	unsigned long long capacity; /* bytes, 0 unknown */
};

/*
 * Record the domain XML of VM `vm` (as virDomainGetXMLDesc returns it,
 * VIR_DOMAIN_XML_INACTIVE) for the resources of that VM in res[]: every
 * property the graph has for them, as the XML (and `disk`) shows it, plus
 * PCI hostdevs the spec does not name (vm/<vm>/device.pci/<address>, so the
 * plan removes them).  A VF-backed vGPU is recorded with `vf_address` (the
 * hostdev's PCI address): the driver turns it into `host_pci` and `vf`
 * through the host's node devices.  GC_EINVAL when the XML is not a domain.
 */
int gc_lv_record_domain(struct gc_observed *obs, const char *vm, const char *host,
			const char *xml, bool running, const struct gc_lv_disk *disk,
			const struct gc_resource *const *res, size_t nres, struct gc_error *err);

/* A libvirt network that pools one PF's VFs (forward mode hostdev); with
 * `uuid` (NULL: libvirt makes one up) it redefines the network holding it. */
int gc_lv_network_xml(struct gc_buf *out, const char *name, const char *pf_dev,
		      const char *uuid, struct gc_error *err);
/* Record a network's XML and autostart flag for resource `id`. */
int gc_lv_record_network(struct gc_observed *obs, const char *id, const char *xml,
			 bool autostart, struct gc_error *err);

/* ---------------------------------------------------------------- the NoCloud seed (seed.c) */

/* cloud-init's NoCloud files for a VM and their fingerprint. */
struct gc_lv_seed {
	struct gc_buf meta_data, user_data, network_config;
	char digest[17]; /* 16 hex digits: FNV-1a 64 of the VM's name and the files */
};

/* The seed of `vm` (which has a guest): reads its credential's public key
 * (key_file + ".pub").  GC_EIO/GC_EINVAL name the VM and the file. */
int gc_lv_seed_build(struct gc_lv_seed *s, const struct gc_vm *vm, struct gc_error *err);
void gc_lv_seed_free(struct gc_lv_seed *s);
/* The seed as an ISO 9660 image (Rock Ridge, Joliet) labelled cidata. */
int gc_lv_seed_iso(struct gc_buf *out, const struct gc_lv_seed *s, struct gc_error *err);
/* The seed volume of a VM: "<vm>-seed.iso". */
void gc_lv_seed_volume_name(struct gc_buf *out, const char *vm);

/* The deterministic MAC of NIC `index` of VM `vm` (52:54:00:xx:xx:xx, KVM's prefix). */
void gc_lv_mac(char out[18], const char *vm, size_t index);

#endif
