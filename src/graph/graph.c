/*
 * graph.c - the resource graph's storage: targets, resources, properties,
 * edges, the id index, and the topological sort with cycle reporting.
 *
 * Everything small lives in the graph's arena.  The pointer arrays that
 * grow without a known bound (targets, resources, per-resource edge lists,
 * properties) double their capacity; the resource and target arrays are
 * gc_xrealloc'd (freed in gc_graph_free), the per-resource arrays are
 * re-allocated in the arena (the old copy is simply left behind: they are
 * short).  Ids are hashed, so adding an edge or finding a resource is O(1)
 * and building the graph stays linear.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc/graph.h"
#include "gc/heap.h"
#include "gc/strmap.h"

static const char *const kind_names[GC_RES__COUNT] = {
	[GC_RES_ESXI_NTP] = "esxi.ntp",
	[GC_RES_ESXI_PCI_PASSTHRU] = "esxi.pci_passthru",
	[GC_RES_ESXI_MODULE_PARAM] = "esxi.module_param",
	[GC_RES_ESXI_VIB] = "esxi.vib",
	[GC_RES_ESXI_GRAPHICS] = "esxi.graphics",
	[GC_RES_ESXI_GPU_ECC] = "esxi.gpu_ecc",
	[GC_RES_ESXI_ADVANCED] = "esxi.advanced",
	[GC_RES_ESXI_FIREWALL] = "esxi.firewall",
	[GC_RES_DVS] = "dvs",
	[GC_RES_DVS_PORTGROUP] = "dvs.portgroup",
	[GC_RES_VM] = "vm",
	[GC_RES_VM_HW] = "vm.hw",
	[GC_RES_VM_EXTRA_CONFIG] = "vm.extra_config",
	[GC_RES_VM_DEVICE_PCI] = "vm.device.pci",
	[GC_RES_VM_DEVICE_VGPU] = "vm.device.vgpu",
	[GC_RES_VM_NIC_SRIOV] = "vm.nic.sriov",
	[GC_RES_VM_NIC_PVRDMA] = "vm.nic.pvrdma",
	[GC_RES_VM_NIC_VMXNET3] = "vm.nic.vmxnet3",
	[GC_RES_VM_POWER] = "vm.power",
	[GC_RES_SWITCH_ROCE] = "switch.roce",
	[GC_RES_SWITCH_POOL] = "switch.pool",
	[GC_RES_SWITCH_QOS_TRUST] = "switch.qos_trust",
	[GC_RES_SWITCH_ECN] = "switch.ecn",
	[GC_RES_SWITCH_ETS] = "switch.ets",
	[GC_RES_SWITCH_PFC] = "switch.pfc",
	[GC_RES_SWITCH_LLDP] = "switch.lldp",
	[GC_RES_GUEST_DRIVER] = "guest.driver",
	[GC_RES_GUEST_RDMA_STACK] = "guest.rdma_stack",
	[GC_RES_GUEST_RDMA_IF] = "guest.rdma_interface",
	[GC_RES_GUEST_LICENSE] = "guest.license",
	[GC_RES_GUEST_PEERMEM] = "guest.peermem",
	[GC_RES_GUEST_ROCE_QOS] = "guest.roce_qos",
	[GC_RES_GUEST_CONTAINER_TOOLKIT] = "guest.container_toolkit",
	[GC_RES_GUEST_NTP] = "guest.ntp",
	[GC_RES_KVM_IOMMU] = "kvm.iommu",
	[GC_RES_KVM_VFIO] = "kvm.vfio",
	[GC_RES_KVM_SRIOV] = "kvm.sriov",
	[GC_RES_KVM_VGPU] = "kvm.vgpu",
	[GC_RES_LIBVIRT_NETWORK] = "libvirt.network",
	[GC_RES_VM_NIC_VIRTIO] = "vm.nic.virtio",
	[GC_RES_VM_SEED] = "vm.seed",
	[GC_RES_VCENTER_SETTING] = "vcenter.setting",
	[GC_RES_DVS_VMKNIC] = "dvs.vmknic",
	[GC_RES_ESXI_NIC_FIRMWARE] = "esxi.nic_firmware",
};

const char *gc_res_kind_name(enum gc_res_kind kind)
{
	if ((unsigned)kind >= GC_RES__COUNT)
		return "?";
	return kind_names[kind];
}

int gc_res_kind_parse(enum gc_res_kind *out, const char *name)
{
	for (size_t i = 0; i < GC_RES__COUNT; i++) {
		if (strcmp(kind_names[i], name) == 0) {
			*out = (enum gc_res_kind)i;
			return 0;
		}
	}
	return GC_ENOTFOUND;
}

const char *gc_target_kind_name(enum gc_target_kind kind)
{
	switch (kind) {
	case GC_TARGET_ESXI:
		return "esxi";
	case GC_TARGET_VCENTER:
		return "vcenter";
	case GC_TARGET_SWITCH:
		return "switch";
	case GC_TARGET_GUEST:
		return "guest";
	case GC_TARGET_KVM:
		return "kvm";
	case GC_TARGET_LIBVIRT:
		return "libvirt";
	}
	return "?";
}

void gc_graph_new(struct gc_graph **out)
{
	struct gc_graph *g = gc_xcalloc(1, sizeof(*g));

	g->index = gc_strmap_new();
	g->tindex = gc_strmap_new();
	g->vindex = gc_strmap_new();
	g->rolling.max_unavailable = 1;
	*out = g;
}

void gc_graph_free(struct gc_graph *g)
{
	if (g == NULL)
		return;
	gc_strmap_free(g->index);
	gc_strmap_free(g->tindex);
	gc_strmap_free(g->vindex);
	free(g->targets);
	free(g->resources);
	free(g->vms);
	gc_arena_free(&g->arena);
	free(g);
}

/* Grow a gc_xrealloc'd pointer array to hold one more element. */
static void *grow_heap(void *arr, size_t n, size_t *cap, size_t elem)
{
	if (n < *cap)
		return arr;
	*cap = *cap ? *cap * 2 : 16;
	return gc_xrealloc(arr, *cap * elem);
}

/*
 * Append room inside the arena for arrays whose capacity is implicit: the
 * smallest power of two >= n, at least `min` (the old copy is abandoned;
 * these arrays are short).  Saves a capacity field per array.
 */
static void *grow_arena(struct gc_arena *a, void *arr, size_t n, size_t min, size_t elem)
{
	size_t cap;
	void *p;

	if (n != 0 && (n < min || (n & (n - 1)) != 0))
		return arr; /* room left */
	cap = n == 0 ? min : n * 2;
	p = gc_arena_alloc(a, cap * elem);
	if (n > 0)
		memcpy(p, arr, n * elem);
	return p;
}

static const char *target_key(struct gc_arena *a, enum gc_target_kind kind, const char *name,
			      char *tmp, size_t tmpsz)
{
	size_t n = strlen(name);

	if (a != NULL)
		return gc_arena_printf(a, "%d:%s", (int)kind, name);
	if (n + 4 > tmpsz)
		return NULL;
	tmp[0] = (char)('0' + (int)kind);
	tmp[1] = ':';
	memcpy(tmp + 2, name, n + 1);
	return tmp;
}

struct gc_target *gc_graph_target(const struct gc_graph *g, enum gc_target_kind kind,
				  const char *name)
{
	char tmp[512];
	const char *key = target_key(NULL, kind, name, tmp, sizeof(tmp));

	if (key == NULL)
		return NULL;
	return gc_strmap_get(g->tindex, key);
}

struct gc_target *gc_graph_add_target(struct gc_graph *g, enum gc_target_kind kind,
				      const char *name)
{
	struct gc_target *t = gc_graph_target(g, kind, name);

	if (t != NULL)
		return t;
	t = gc_arena_alloc(&g->arena, sizeof(*t));
	t->kind = kind;
	t->name = gc_arena_strdup(&g->arena, name);
	t->index = g->ntargets;
	g->targets = grow_heap(g->targets, g->ntargets, &g->captargets, sizeof(*g->targets));
	g->targets[g->ntargets++] = t;
	gc_strmap_put(g->tindex, target_key(&g->arena, kind, name, NULL, 0), t);
	return t;
}

int gc_graph_add(struct gc_resource **out, struct gc_graph *g, enum gc_res_kind kind,
		 const struct gc_target *target, const char *id, const char *host, const char *vm,
		 unsigned flags, struct gc_error *err)
{
	struct gc_resource *r = gc_arena_alloc(&g->arena, sizeof(*r));

	r->id = gc_arena_strdup(&g->arena, id);
	if (gc_strmap_put_new(g->index, r->id, r) != NULL)
		return gc_error_set(err, GC_EINVAL, "duplicate resource id '%s'", id);
	r->index = g->nresources;
	r->kind = kind;
	r->target = target;
	/* resources come in runs of one host / one VM: share the copies */
	if (host != NULL && (g->last_host == NULL || strcmp(g->last_host, host) != 0))
		g->last_host = gc_arena_strdup(&g->arena, host);
	if (vm != NULL && (g->last_vm == NULL || strcmp(g->last_vm, vm) != 0))
		g->last_vm = gc_arena_strdup(&g->arena, vm);
	r->host = host ? g->last_host : NULL;
	r->vm = vm ? g->last_vm : NULL;
	r->flags = flags;
	g->resources = grow_heap(g->resources, g->nresources, &g->capresources,
				 sizeof(*g->resources));
	g->resources[g->nresources++] = r;
	*out = r;
	return 0;
}

void gc_resource_set_borrowed(struct gc_graph *g, struct gc_resource *r, const char *key,
			      const char *value)
{
	r->props = grow_arena(&g->arena, r->props, r->nprops, 4, sizeof(*r->props));
	r->props[r->nprops].key = key;
	r->props[r->nprops].value = value;
	r->nprops++;
}

void gc_resource_set(struct gc_graph *g, struct gc_resource *r, const char *key,
		     const char *value)
{
	gc_resource_set_borrowed(g, r, gc_arena_strdup(&g->arena, key),
				 gc_arena_strdup(&g->arena, value));
}

void gc_resource_setf(struct gc_graph *g, struct gc_resource *r, const char *key,
		      const char *fmt, ...)
{
	struct gc_buf b = GC_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	gc_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	gc_resource_set(g, r, key, gc_buf_str(&b));
	gc_buf_free(&b);
}

void gc_resource_describe(struct gc_buf *out, const struct gc_resource *r)
{
	if (r->summary == NULL) {
		gc_buf_puts(out, r->id);
		return;
	}
	gc_buf_puts(out, r->summary);
	if (r->detail != NULL)
		gc_buf_printf(out, " %s", r->detail);
}

const char *gc_resource_prop(const struct gc_resource *r, const char *key)
{
	for (size_t i = 0; i < r->nprops; i++)
		if (strcmp(r->props[i].key, key) == 0)
			return r->props[i].value;
	return NULL;
}

void gc_graph_add_edge(struct gc_graph *g, const struct gc_resource *before,
		       const struct gc_resource *after)
{
	struct gc_resource *b = (struct gc_resource *)before;
	struct gc_resource *a = (struct gc_resource *)after;

	/* edge lists are short (a handful per resource): a linear duplicate check is fine */
	for (size_t i = 0; i < a->ndeps; i++)
		if (a->deps[i] == before)
			return;
	a->deps = grow_arena(&g->arena, a->deps, a->ndeps, 2, sizeof(*a->deps));
	a->deps[a->ndeps++] = before;
	b->rdeps = grow_arena(&g->arena, b->rdeps, b->nrdeps, 2, sizeof(*b->rdeps));
	b->rdeps[b->nrdeps++] = after;
	g->nedges++;
}

void gc_graph_add_vm(struct gc_graph *g, const struct gc_graph_vm *vm)
{
	struct gc_graph_vm *v;

	g->vms = grow_heap(g->vms, g->nvms, &g->capvms, sizeof(*g->vms));
	v = &g->vms[g->nvms++];
	v->name = gc_arena_strdup(&g->arena, vm->name);
	v->host = gc_arena_strdup(&g->arena, vm->host);
	v->live_migratable = vm->live_migratable;
	v->power_on = vm->power_on;
	v->pinned_by = gc_arena_strdup(&g->arena, vm->pinned_by);
	v->target = vm->target;
	/* the array moves as it grows: index by position, not pointer */
	gc_strmap_put(g->vindex, v->name, (void *)(uintptr_t)g->nvms);
}

struct gc_resource *gc_graph_find(const struct gc_graph *g, const char *id)
{
	return gc_strmap_get(g->index, id);
}

const struct gc_graph_vm *gc_graph_vm(const struct gc_graph *g, const char *name)
{
	uintptr_t i = (uintptr_t)gc_strmap_get(g->vindex, name);

	return i == 0 ? NULL : &g->vms[i - 1];
}

/* ---------------------------------------------------------------- topological sort */

/*
 * Name one cycle among the resources Kahn's algorithm could not order
 * (indeg > 0): walk deps backwards staying inside the remainder until a
 * resource repeats.
 */
static int report_cycle(const struct gc_graph *g, const size_t *indeg, struct gc_error *err)
{
	size_t n = g->nresources, start = n, len = 0;
	size_t *seen = gc_xcalloc(n, sizeof(*seen)); /* step+1 at which it was visited */
	const struct gc_resource **path = gc_xcalloc(n + 1, sizeof(*path));
	const struct gc_resource *r;
	struct gc_buf b = GC_BUF_INIT;
	int rc;

	for (size_t i = 0; i < n && start == n; i++)
		if (indeg[i] > 0)
			start = i;
	r = g->resources[start];
	while (seen[r->index] == 0) {
		seen[r->index] = ++len;
		path[len - 1] = r;
		for (size_t i = 0; i < r->ndeps; i++) {
			if (indeg[r->deps[i]->index] > 0) {
				r = r->deps[i];
				break;
			}
		}
	}
	/* path[seen-1 .. len-1] walks dependents -> dependencies; print it forwards */
	gc_buf_puts(&b, r->id);
	for (size_t i = len; i-- > seen[r->index] - 1;)
		gc_buf_printf(&b, " -> %s", path[i]->id);
	rc = gc_error_set(err, GC_ECYCLE, "dependency cycle: %s", gc_buf_str(&b));
	gc_buf_free(&b);
	free(seen);
	free(path);
	return rc;
}

int gc_graph_toposort(const struct gc_resource ***order, const struct gc_graph *g,
		      struct gc_error *err)
{
	size_t n = g->nresources, k = 0;
	size_t *indeg = gc_xcalloc(n ? n : 1, sizeof(*indeg));
	const struct gc_resource **out = gc_xcalloc(n ? n : 1, sizeof(*out));
	struct gc_heap h = {gc_xcalloc(n ? n : 1, sizeof(size_t)), 0}; /* resource indexes */
	int rc = 0;

	size_t c = 0; /* the scan: every ready resource below c is in the heap */

	for (size_t i = 0; i < n; i++)
		indeg[i] = g->resources[i]->ndeps;
	/* Kahn's walk, the ready resource of least index first.  The ready
	 * ones at or past c are found by the scan; only a resource that gets
	 * ready behind it goes into the heap, and the heap's least is always
	 * below c.  Most deps point backwards, so the heap stays small: the
	 * same order as a heap of every ready resource, without its log n of
	 * scattered reads per step (a 10,000-host graph has 260,000). */
	for (;;) {
		const struct gc_resource *r;

		if (h.n > 0) {
			r = g->resources[gc_heap_pop(&h)];
		} else {
			while (c < n && indeg[c] != 0)
				c++;
			if (c == n)
				break;
			r = g->resources[c++];
		}
		out[k++] = r;
		for (size_t i = 0; i < r->nrdeps; i++) {
			size_t j = r->rdeps[i]->index;

			if (--indeg[j] == 0 && j < c)
				gc_heap_push(&h, j);
		}
	}
	if (k < n) {
		rc = report_cycle(g, indeg, err);
		free(out);
		goto out;
	}
	*order = out;
out:
	free(h.v);
	free(indeg);
	return rc;
}
