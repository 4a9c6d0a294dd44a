/*
 * fuzz_libvirt_domain.c - the libvirt driver's readers of what libvirtd
 * returns: a domain's XML (gc_lv_record_domain, XPath through libxml2) and
 * a network's (gc_lv_record_network).  The first byte picks the reader;
 * the resources are those of a VM with two passthrough GPUs, a vGPU, a
 * virtio and an SR-IOV NIC, built by hand (the graph's own calls).  Seeds
 * in fuzz/corpus/libvirt_domain/: `virsh dumpxml --inactive` and
 * `virsh net-dumpxml` of the lab's libvirtd after test_kvm's apply, and
 * the domain with its SR-IOV interface as libvirt places it when defined
 * without its network (an emulated rtl8139, docs/kvm.md).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc/graph.h"
#include "gc/libvirt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gc_graph *g;

static void add(enum gc_res_kind kind, const char *id, const char *k1, const char *v1,
		const char *k2, const char *v2)
{
	struct gc_target *t = gc_graph_add_target(g, GC_TARGET_LIBVIRT, "kvm01");
	struct gc_resource *r = NULL;
	struct gc_error err = GC_ERROR_INIT;

	if (gc_graph_add(&r, g, kind, t, id, "kvm01", "w1", 0, &err) != 0)
		abort();
	if (k1 != NULL)
		gc_resource_set(g, r, k1, v1);
	if (k2 != NULL)
		gc_resource_set(g, r, k2, v2);
}

static void build(void)
{
	gc_graph_new(&g);
	add(GC_RES_VM, "vm/w1", "memory_gb", "64", "disk_gb", "40");
	add(GC_RES_VM_HW, "vm/w1/hw", "firmware", "efi", "mmio64_gb", "256");
	add(GC_RES_VM_DEVICE_PCI, "vm/w1/device.pci/0000:3b:00.0", "host_pci", "0000:3b:00.0",
	    "device", "gpu");
	add(GC_RES_VM_DEVICE_PCI, "vm/w1/device.pci/0000:5e:00.0", "host_pci", "0000:5e:00.0",
	    "device", "nic");
	add(GC_RES_VM_DEVICE_VGPU, "vm/w1/device.vgpu/2", "mechanism", "mdev", NULL, NULL);
	add(GC_RES_VM_NIC_VIRTIO, "vm/w1/nic.virtio/0", "network", "default", NULL, NULL);
	add(GC_RES_VM_NIC_SRIOV, "vm/w1/nic.sriov/1", "network", "kvm01-rdma", NULL, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gc_lv_disk disk = {.pool = "default", .backing = "/var/lib/libvirt/images/b.qcow2",
				  .capacity = 40ull << 30};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_observed *o;
	char *xml;

	if (g == NULL)
		build();
	if (size < 1)
		return 0;
	xml = malloc(size);
	memcpy(xml, data + 1, size - 1);
	xml[size - 1] = '\0';
	gc_observed_new(&o);
	if (data[0] & 1)
		gc_lv_record_network(o, "kvm01/libvirt.network/kvm01-rdma", xml, true, &err);
	else
		gc_lv_record_domain(o, "w1", "kvm01", xml, data[0] & 2, &disk,
				    (const struct gc_resource *const *)g->resources, g->nresources,
				    &err);
	gc_observed_free(o);
	free(xml);
	return 0;
}
