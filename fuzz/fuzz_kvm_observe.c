/*
 * fuzz_kvm_observe.c - the KVM host observation parser and what is built
 * on its facts: marker framing, os-release, /proc/cmdline arguments, the
 * boot loader's line, per-device sysfs lines, VF vGPU types, mdevs, the
 * length-prefixed files; then the recorder (problems included) and every
 * change script of a host with an IOMMU, a vfio GPU, a PF and one vGPU of
 * each mechanism.  The token is fixed ("0123456789abcdef", as in
 * tests/unit/kvm/test_kvm.c).  Checks: the caps hold, every string is
 * read to its end, a script that comes out holds only printable ASCII,
 * tabs and newlines (nothing the host printed reaches it but checked ids),
 * and every problem is one whole line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "gc/kvm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gc_graph *host(void)
{
	static struct gc_graph *g;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_target *t;
	struct gc_resource *r;

	if (g != NULL)
		return g;
	gc_graph_new(&g);
	t = gc_graph_add_target(g, GC_TARGET_KVM, "kvm01");
	gc_graph_add(&r, g, GC_RES_KVM_IOMMU, t, "kvm01/kvm.iommu", "kvm01", NULL, 0, &err);
	gc_resource_set(g, r, "iommu", "on");
	gc_resource_set(g, r, "iommu_mode", "pt");
	gc_graph_add(&r, g, GC_RES_KVM_VFIO, t, "kvm01/kvm.vfio/0000:3b:00.0", "kvm01", NULL, 0,
	             &err);
	gc_resource_set(g, r, "driver", "vfio-pci");
	gc_resource_set(g, r, "persistent", "true");
	gc_graph_add(&r, g, GC_RES_KVM_SRIOV, t, "kvm01/kvm.sriov/0000:5e:00.0", "kvm01", NULL, 0,
	             &err);
	gc_resource_set(g, r, "numvfs", "4");
	gc_resource_set(g, r, "persistent", "true");
	gc_graph_add(&r, g, GC_RES_KVM_VGPU, t, "kvm01/kvm.vgpu/w1/0", "kvm01", "w1", 0, &err);
	gc_resource_set(g, r, "parent", "0000:41:00.0");
	gc_resource_set(g, r, "profile", "grid_t4-8c");
	gc_resource_set(g, r, "mechanism", "mdev");
	gc_resource_set(g, r, "uuid", "9d3f0b1c-5e2a-8f47-b6c1-d2e3f4a5b6c7");
	gc_graph_add(&r, g, GC_RES_KVM_VGPU, t, "kvm01/kvm.vgpu/w2/0", "kvm01", "w2", 0, &err);
	gc_resource_set(g, r, "parent", "0000:3b:00.0");
	gc_resource_set(g, r, "profile", "grid_a100d-40c");
	gc_resource_set(g, r, "mechanism", "vf");
	gc_resource_set(g, r, "vf", "1");
	return g;
}

static void check_facts(const struct gc_kvm_facts *f)
{
	must(f->ndevs <= GC_KVM_MAX_DEVS && f->nvfs <= GC_KVM_MAX_DEVS);
	must(f->nmdevs <= GC_KVM_MAX_MDEVS && f->nfiles <= GC_KVM_MAX_FILES);
	touch(f->os_id);
	touch(f->cmdline);
	touch(f->cpu_vendor);
	touch(f->configured);
	for (size_t i = 0; i < f->ndevs; i++) {
		must(f->devs[i].ntypes <= GC_KVM_MAX_TYPES);
		touch(f->devs[i].driver);
		touch(f->devs[i].override);
		for (size_t k = 0; k < f->devs[i].ntypes; k++)
			touch(f->devs[i].types[k].name);
	}
	for (size_t i = 0; i < f->nvfs; i++)
		for (size_t k = 0; k < f->vfs[i].ncreatable; k++)
			must(strspn(f->vfs[i].creatable[k].id, "0123456789") ==
			     strlen(f->vfs[i].creatable[k].id));
	for (size_t i = 0; i < f->nmdevs; i++)
		touch(f->mdevs[i].type);
	for (size_t i = 0; i < f->nfiles; i++)
		must(f->files[i].path[0] == '/' &&
		     strlen(f->files[i].content) <= GC_KVM_MAX_FILE_BYTES);
}

static bool plain_text(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 0x20 && *s < 0x7f) || *s == '\n' || *s == '\t'))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct gc_graph *g = host();
	struct gc_error err = GC_ERROR_INIT;
	struct gc_kvm_facts f;
	struct gc_observed *o;
	struct gc_buf problems = GC_BUF_INIT, s = GC_BUF_INIT;
	char why[512];

	if (gc_kvm_parse(&f, "0123456789abcdef", (const char *)data, size, &err) != 0)
		return 0;
	check_facts(&f);
	gc_observed_new(&o);
	gc_kvm_record(o, "kvm01", (const struct gc_resource *const *)g->resources, g->nresources,
	              &f, &problems);
	(void)gc_kvm_reboot_pending(&f, why, sizeof(why));
	for (size_t i = 0; i < g->nresources; i++) {
		gc_error_clear(&err);
		gc_buf_reset(&s);
		if (gc_kvm_script(&s, g->resources[i], &f, &err) == 0)
			must(plain_text(gc_buf_str(&s)));
	}
	must(problems.len == 0 || problems.ptr[problems.len - 1] == '\n');
	gc_buf_free(&s);
	gc_buf_free(&problems);
	gc_observed_free(o);
	gc_kvm_facts_free(&f);
	return 0;
}
