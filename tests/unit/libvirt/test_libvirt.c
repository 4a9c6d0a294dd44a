/*
 * test_libvirt.c - the libvirt driver's domain XML against libvirt's own
 * in-process test driver (test:///default, no daemon): what we build is
 * accepted by virDomainDefineXMLFlags(VALIDATE), reads back (after
 * libvirt's own rewrite) as exactly the spec's properties, and a hand edit
 * or an extra device shows as drift.  The MMIO window of a VM with two
 * 80 GB GPUs is the same number on ESXi and KVM.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "gc/graph.h"
#include "gc/libvirt.h"
#include "gc/spec.h"
#include "lv_int.h"

static const char spec_yaml[] =
	"apiVersion: gpuclusterctl/v1\n"
	"kind: Cluster\n"
	"metadata: {name: t}\n"
	"credentials:\n"
	"  - {name: root, username: root, key_file: /root/.ssh/id_ed25519}\n"
	"  - {name: esx, username: root, password_env: GC_ESXI_PASSWORD}\n"
	"  - {name: vc, username: admin, password_env: GC_VC_PASSWORD}\n"
	"vcenter: {url: https://127.0.0.1:8989/sdk, datacenter: DC0, cluster: c, credentials: vc}\n"
	"hosts:\n"
	"  - name: kvm01\n"
	"    hypervisor: kvm\n"
	"    address: 127.0.0.21\n"
	"    libvirt_uri: test:///default\n"
	"    credentials: root\n"
	"    gpus:\n"
	"      - {pci: \"0000:3b:00.0\", model: A100-80GB, mode: passthrough}\n"
	"      - {pci: \"0000:86:00.0\", model: A100-80GB, mode: passthrough}\n"
	"      - {pci: \"0000:af:00.0\", model: T4, mode: vgpu}\n"
	"    vgpu: {release: \"16.1\"}\n"
	"    nics:\n"
	"      - {pci: \"0000:5e:00.0\", model: ConnectX-6, device: ens5f0, mode: sriov, vfs: 4}\n"
	"  - name: esx01\n"
	"    address: 127.0.0.11\n"
	"    credentials: esx\n"
	"    gpus:\n"
	"      - {pci: \"0000:3b:00.0\", model: A100-80GB, mode: passthrough}\n"
	"      - {pci: \"0000:86:00.0\", model: A100-80GB, mode: passthrough}\n"
	"vms:\n"
	"  - name: kvm-w1\n"
	"    host: kvm01\n"
	"    image: /default-pool/base.img\n"
	"    pool: default-pool\n"
	"    cpus: 8\n"
	"    memory_gb: 64\n"
	"    power_on: false\n"
	"    gpus: [{host_pci: \"0000:3b:00.0\"}, {host_pci: \"0000:86:00.0\"}]\n"
	"    nics:\n"
	"      - {type: virtio, network: default}\n"
	"      - {type: sriov, pf: \"0000:5e:00.0\", network: kvm01-rdma}\n"
	"  - name: kvm-v1\n"
	"    host: kvm01\n"
	"    image: /default-pool/base.img\n"
	"    pool: default-pool\n"
	"    cpus: 4\n"
	"    memory_gb: 16\n"
	"    gpus: [{vgpu: grid_t4-8c}]\n"
	"  - name: esx-w1\n"
	"    host: esx01\n"
	"    template: tmpl\n"
	"    gpus: [{host_pci: \"0000:3b:00.0\"}, {host_pci: \"0000:86:00.0\"}]\n";

struct fx {
	struct gc_cluster *c;
	struct gc_graph *g;
	virConnectPtr conn;
};

static void quiet(void *d, virErrorPtr e)
{
	(void)d;
	(void)e;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct gc_diags d = {0};
	struct gc_error err = GC_ERROR_INIT;

	if (gc_spec_load_buffer(&f->c, &d, "t.yaml", spec_yaml, strlen(spec_yaml), &err) != 0) {
		struct gc_buf b = GC_BUF_INIT;

		gc_diags_format(&b, &d);
		fprintf(stderr, "%s%s\n", gc_buf_str(&b), err.msg);
		gc_buf_free(&b);
		return -1;
	}
	gc_diags_free(&d);
	if (gc_graph_build(&f->g, f->c, &err) != 0)
		return -1;
	virSetErrorFunc(NULL, quiet);
	f->conn = virConnectOpen("test:///default");
	if (f->conn == NULL)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	virConnectClose(f->conn);
	gc_graph_free(f->g);
	gc_cluster_free(f->c);
	free(f);
	return 0;
}

static const struct gc_resource *const *res(struct fx *f, size_t *n)
{
	*n = f->g->nresources;
	return (const struct gc_resource *const *)f->g->resources;
}

/* Build, define (libvirt validates against its schema), read back. */
static char *define(struct fx *f, const char *vm, struct gc_observed **obs)
{
	struct gc_lv_env env = {.domain_type = "test"};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf xml = GC_BUF_INIT;
	size_t n;
	const struct gc_resource *const *r = res(f, &n);
	virDomainPtr d = virDomainLookupByName(f->conn, vm);
	char uuid[VIR_UUID_STRING_BUFLEN];
	char *back;

	/* a redefinition keeps the domain's UUID, as the driver does */
	if (d != NULL && virDomainGetUUIDString(d, uuid) == 0)
		env.uuid = uuid;
	if (d != NULL)
		virDomainFree(d);

	assert_int_equal(gc_lv_domain_xml(&xml, vm, r, n, &env, &err), 0);
	d = virDomainDefineXMLFlags(f->conn, gc_buf_str(&xml), VIR_DOMAIN_DEFINE_VALIDATE);
	if (d == NULL)
		fail_msg("libvirt refused our XML: %s\n%s", virGetLastErrorMessage(), gc_buf_str(&xml));
	back = virDomainGetXMLDesc(d, VIR_DOMAIN_XML_INACTIVE);
	assert_non_null(back);
	gc_observed_new(obs);
	assert_int_equal(gc_lv_record_domain(*obs, vm, "kvm01", back, false, NULL, r, n, &err), 0);
	virDomainFree(d);
	gc_buf_free(&xml);
	return back;
}

/* Every desired property of every resource of vm, observed equal. */
static void assert_converged(struct fx *f, const struct gc_observed *o, const char *vm,
			     size_t min)
{
	size_t checked = 0;

	for (size_t i = 0; i < f->g->nresources; i++) {
		const struct gc_resource *r = f->g->resources[i];

		/* power is the domain's state, not its XML */
		if (r->vm == NULL || strcmp(r->vm, vm) != 0 || r->target->kind != GC_TARGET_LIBVIRT ||
		    r->kind == GC_RES_VM_POWER)
			continue;
		for (size_t k = 0; k < r->nprops; k++) {
			const char *got = gc_observed_get(o, r->id, r->props[k].key);

			/* image and pool come from the storage volume, which this
			 * test does not create; the test driver drops the qemu
			 * namespace that carries OVMF's window (test_mmio_xml) */
			if (strcmp(r->props[k].key, "image") == 0 || strcmp(r->props[k].key, "pool") == 0 ||
			    strcmp(r->props[k].key, "mmio64_gb") == 0)
				continue;
			if (got == NULL || strcmp(got, r->props[k].value) != 0)
				fail_msg("%s %s: want '%s', read back '%s'", r->id, r->props[k].key,
					 r->props[k].value, got ? got : "(none)");
			checked++;
		}
	}
	assert_int_equal(checked, min);
}

static void test_round_trip(void **state)
{
	struct fx *f = *state;
	struct gc_observed *o;
	char *xml = define(f, "kvm-w1", &o);

	/* what a reviewer looks for in the XML libvirt kept */
	assert_non_null(strstr(xml, "<hostdev mode='subsystem' type='pci' managed='yes'>"));
	assert_non_null(strstr(xml, "<address domain='0x0000' bus='0x3b' slot='0x00' function='0x0'/>"));
	assert_non_null(strstr(xml, "<alias name='ua-gpu-0000_3b_00_0'/>"));
	assert_non_null(strstr(xml, "<locked/>"));
	assert_non_null(strstr(xml, "<pcihole64 unit='KiB'>268435456</pcihole64>"));
	assert_non_null(strstr(xml, "<source network='kvm01-rdma'/>"));
	assert_converged(f, o, "kvm-w1", 11);
	/* stable: the same spec builds the same MACs */
	{
		char a[18], b[18];

		gc_lv_mac(a, "kvm-w1", 1);
		gc_lv_mac(b, "kvm-w1", 1);
		assert_string_equal(a, b);
		assert_non_null(strstr(xml, a));
	}
	gc_observed_free(o);
	free(xml);
}

static void test_mdev_vgpu(void **state)
{
	struct fx *f = *state;
	struct gc_observed *o;
	const struct gc_resource *r = gc_graph_find(f->g, "vm/kvm-v1/device.vgpu/0");
	char *xml;

	assert_non_null(r);
	/* a T4 (no SR-IOV) on release 16: a mediated device by UUID */
	assert_string_equal(gc_resource_prop(r, "mechanism"), "mdev");
	xml = define(f, "kvm-v1", &o);
	assert_non_null(strstr(xml, "type='mdev'"));
	assert_non_null(strstr(xml, gc_resource_prop(r, "uuid")));
	assert_converged(f, o, "kvm-v1", 7);
	/* the host side carries the same UUID and the profile */
	r = gc_graph_find(f->g, "kvm01/kvm.vgpu/kvm-v1/0");
	assert_non_null(r);
	assert_string_equal(gc_resource_prop(r, "profile"), "grid_t4-8c");
	assert_string_equal(gc_resource_prop(r, "uuid"),
			    gc_resource_prop(gc_graph_find(f->g, "vm/kvm-v1/device.vgpu/0"), "uuid"));
	gc_observed_free(o);
	free(xml);
}

/* A hand edit: memory raised, one GPU removed, a stranger's hostdev added. */
static void test_drift(void **state)
{
	struct fx *f = *state;
	struct gc_observed *o;
	struct gc_error err = GC_ERROR_INIT;
	size_t n;
	const struct gc_resource *const *r = res(f, &n);
	char *xml = define(f, "kvm-w1", &o), *p, *edited;
	virDomainPtr d;

	gc_observed_free(o);
	edited = calloc(1, strlen(xml) + 512);
	/* memory 64 GiB -> 96 GiB */
	p = strstr(xml, "<memory unit='KiB'>67108864</memory>");
	assert_non_null(p);
	memcpy(edited, xml, (size_t)(p - xml));
	strcat(edited, "<memory unit='KiB'>100663296</memory>");
	strcat(edited, p + strlen("<memory unit='KiB'>67108864</memory>"));
	/* the GPU at 86:00.0 becomes 0000:d8:00.0, without our alias */
	p = strstr(edited, "bus='0x86'");
	assert_non_null(p);
	memcpy(p, "bus='0xd8'", 10);
	p = strstr(edited, "<alias name='ua-gpu-0000_86_00_0'/>");
	assert_non_null(p);
	memset(p, ' ', strlen("<alias name='ua-gpu-0000_86_00_0'/>"));
	d = virDomainDefineXML(f->conn, edited);
	assert_non_null(d);
	free(xml);
	xml = virDomainGetXMLDesc(d, VIR_DOMAIN_XML_INACTIVE);
	gc_observed_new(&o);
	assert_int_equal(gc_lv_record_domain(o, "kvm-w1", "kvm01", xml, false, NULL, r, n, &err), 0);
	assert_string_equal(gc_observed_get(o, "vm/kvm-w1", "memory_gb"), "96");
	assert_null(gc_observed_resource(o, "vm/kvm-w1/device.pci/0000:86:00.0"));
	assert_string_equal(gc_observed_get(o, "vm/kvm-w1/device.pci/0000:d8:00.0", "host_pci"),
			    "0000:d8:00.0");
	assert_string_equal(gc_observed_get(o, "vm/kvm-w1/device.pci/0000:3b:00.0", "device"), "gpu");
	virDomainFree(d);
	gc_observed_free(o);
	free(xml);
	free(edited);
}

static void test_same_mmio_on_esxi_and_kvm(void **state)
{
	struct fx *f = *state;
	const struct gc_resource *kvm = gc_graph_find(f->g, "vm/kvm-w1/hw");
	const struct gc_resource *esx = gc_graph_find(f->g, "vm/esx-w1/extra_config");

	assert_non_null(kvm);
	assert_non_null(esx);
	/* two 80 GB GPUs: 160 GB, the next power of two is 256 */
	assert_string_equal(gc_resource_prop(kvm, "mmio64_gb"), "256");
	assert_string_equal(gc_resource_prop(esx, "pciPassthru.64bitMMIOSizeGB"), "256");
}

/* The window as we write it, read back: pcihole64 and OVMF's fw_cfg agree. */
static void test_mmio_xml(void **state)
{
	struct fx *f = *state;
	struct gc_lv_env env = {.domain_type = "kvm"};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf xml = GC_BUF_INIT;
	struct gc_observed *o;
	size_t n;
	const struct gc_resource *const *r = res(f, &n);
	char *p;

	assert_int_equal(gc_lv_domain_xml(&xml, "kvm-w1", r, n, &env, &err), 0);
	assert_non_null(strstr(gc_buf_str(&xml), "<pcihole64 unit=\"KiB\">268435456</pcihole64>"));
	assert_non_null(strstr(gc_buf_str(&xml),
			       "<qemu:arg value=\"name=opt/ovmf/X-PciMmio64Mb,string=262144\"/>"));
	assert_non_null(strstr(gc_buf_str(&xml), "<cpu mode=\"host-passthrough\"/>"));
	gc_observed_new(&o);
	assert_int_equal(gc_lv_record_domain(o, "kvm-w1", "kvm01", gc_buf_str(&xml), false, NULL, r,
					     n, &err), 0);
	assert_string_equal(gc_observed_get(o, "vm/kvm-w1/hw", "mmio64_gb"), "256");
	gc_observed_free(o);
	/* OVMF told another size: not the window the spec wants */
	p = strstr(gc_buf_str(&xml), "string=262144");
	memcpy(p, "string=131072", 13);
	gc_observed_new(&o);
	assert_int_equal(gc_lv_record_domain(o, "kvm-w1", "kvm01", gc_buf_str(&xml), false, NULL, r,
					     n, &err), 0);
	assert_string_equal(gc_observed_get(o, "vm/kvm-w1/hw", "mmio64_gb"),
			    "(OVMF X-PciMmio64Mb differs from pcihole64)");
	gc_observed_free(o);
	gc_buf_free(&xml);
}

static void test_network_xml(void **state)
{
	struct fx *f = *state;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf xml = GC_BUF_INIT;
	struct gc_observed *o;
	virNetworkPtr n;
	char *back;

	assert_int_equal(gc_lv_network_xml(&xml, "kvm01-rdma", "ens5f0", NULL, &err), 0);
	n = virNetworkDefineXML(f->conn, gc_buf_str(&xml));
	if (n == NULL)
		fail_msg("%s", virGetLastErrorMessage());
	back = virNetworkGetXMLDesc(n, 0);
	if (back == NULL)
		fail_msg("%s", virGetLastErrorMessage());
	gc_observed_new(&o);
	assert_int_equal(gc_lv_record_network(o, "kvm01/libvirt.network/kvm01-rdma", back, true, &err), 0);
	assert_string_equal(gc_observed_get(o, "kvm01/libvirt.network/kvm01-rdma", "forward"), "hostdev");
	assert_string_equal(gc_observed_get(o, "kvm01/libvirt.network/kvm01-rdma", "pf"), "ens5f0");
	/* redefining it (its PF changed): libvirt refuses the name under a UUID
	 * of its own making, and takes the definition over the network's UUID */
	{
		char uuid[VIR_UUID_STRING_BUFLEN];
		virNetworkPtr again;

		assert_int_equal(virNetworkGetUUIDString(n, uuid), 0);
		gc_buf_reset(&xml);
		assert_int_equal(gc_lv_network_xml(&xml, "kvm01-rdma", "ens6f0", NULL, &err), 0);
		assert_null(virNetworkDefineXML(f->conn, gc_buf_str(&xml)));
		assert_non_null(strstr(virGetLastErrorMessage(), "already exists with uuid"));
		gc_buf_reset(&xml);
		assert_int_equal(gc_lv_network_xml(&xml, "kvm01-rdma", "ens6f0", uuid, &err), 0);
		again = virNetworkDefineXML(f->conn, gc_buf_str(&xml));
		if (again == NULL)
			fail_msg("%s", virGetLastErrorMessage());
		free(back);
		back = virNetworkGetXMLDesc(again, 0);
		if (back == NULL)
			fail_msg("%s", virGetLastErrorMessage());
		assert_non_null(strstr(back, "<pf dev='ens6f0'/>"));
		virNetworkFree(again);
		gc_buf_reset(&xml);
		assert_int_equal(gc_lv_network_xml(&xml, "kvm01-rdma", "ens5f0", "not-a-uuid", &err),
				 GC_EINVAL);
	}
	/* a hostile interface name never reaches the XML */
	gc_buf_reset(&xml);
	assert_int_equal(gc_lv_network_xml(&xml, "x", "eth0'/><forward", NULL, &err), GC_EINVAL);
	gc_observed_free(o);
	free(back);
	virNetworkFree(n);
	gc_buf_free(&xml);
}

static void test_not_a_domain(void **state)
{
	struct fx *f = *state;
	struct gc_observed *o;
	struct gc_error err = GC_ERROR_INIT;
	size_t n;
	const struct gc_resource *const *r = res(f, &n);

	gc_observed_new(&o);
	assert_int_equal(gc_lv_record_domain(o, "x", "kvm01", "<network/>", false, NULL, r, n, &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "libvirt returned XML that is not a <domain>");
	gc_observed_free(o);
}

/*
 * An SR-IOV interface that libvirt placed without its network: defined while
 * the hostdev network did not exist, libvirt 9.0's qemu driver gave it an
 * emulated model and a conventional PCI slot behind a pcie-to-pci-bridge
 * (what the short soak left; the interface below is what `virsh dumpxml`
 * printed here).  It must not read as converged, so the plan defines the
 * domain again; placed as a hostdev (no <model>) it reads as the network.
 * And the graph defines each SR-IOV network before the domain.
 */
static void test_sriov_placed_without_its_network(void **state)
{
	struct fx *f = *state;
	struct gc_observed *o;
	struct gc_error err = GC_ERROR_INIT;
	size_t n;
	const struct gc_resource *const *r = res(f, &n);
	const struct gc_resource *vm = gc_graph_find(f->g, "vm/kvm-w1");
	const char *head = "<domain type='qemu'><name>kvm-w1</name><memory unit='KiB'>67108864</memory>"
			   "<vcpu>8</vcpu><os><type arch='x86_64' machine='pc-q35-7.2'>hvm</type></os>"
			   "<devices>";
	const char *emulated =
		"<interface type='network'><mac address='52:54:00:6f:2a:11'/>"
		"<source network='kvm01-rdma'/><model type='rtl8139'/><alias name='ua-sriov-1'/>"
		"<address type='pci' domain='0x0000' bus='0x03' slot='0x01' function='0x0'/>"
		"</interface>";
	const char *hostdev = "<interface type='network'><mac address='52:54:00:6f:2a:11'/>"
			      "<source network='kvm01-rdma'/><alias name='ua-sriov-1'/>"
			      "<address type='pci' domain='0x0000' bus='0x02' slot='0x00' "
			      "function='0x0'/></interface>";
	char xml[2048];
	bool after_network = false;

	snprintf(xml, sizeof(xml), "%s%s</devices></domain>", head, emulated);
	gc_observed_new(&o);
	assert_int_equal(gc_lv_record_domain(o, "kvm-w1", "kvm01", xml, false, NULL, r, n, &err), 0);
	assert_string_equal(gc_observed_get(o, "vm/kvm-w1/nic.sriov/1", "network"),
			    "kvm01-rdma (an emulated rtl8139 NIC: defined before the network existed)");
	gc_observed_free(o);

	snprintf(xml, sizeof(xml), "%s%s</devices></domain>", head, hostdev);
	gc_observed_new(&o);
	assert_int_equal(gc_lv_record_domain(o, "kvm-w1", "kvm01", xml, false, NULL, r, n, &err), 0);
	assert_string_equal(gc_observed_get(o, "vm/kvm-w1/nic.sriov/1", "network"), "kvm01-rdma");
	gc_observed_free(o);

	assert_non_null(vm);
	for (size_t i = 0; i < vm->ndeps; i++)
		after_network |= strcmp(vm->deps[i]->id, "kvm01/libvirt.network/kvm01-rdma") == 0;
	assert_true(after_network);
}

/* A VF-backed vGPU's VF: found from the GPU and back (node devices). */
static void test_vf_lookup(void **state)
{
	virConnectPtr c = virConnectOpen("test://" GC_TEST_NODEDEV_XML);
	char *vf, *parent = NULL;
	unsigned n = 99;

	(void)state;
	if (c == NULL)
		fail_msg("%s", virGetLastErrorMessage());
	vf = gc_lv_vf_of(c, "0000:3b:00.0", 1);
	assert_non_null(vf);
	assert_string_equal(vf, "0000:3b:00.5");
	assert_null(gc_lv_vf_of(c, "0000:3b:00.0", 2)); /* only two VFs */
	assert_null(gc_lv_vf_of(c, "0000:af:00.0", 0)); /* no such GPU */
	assert_int_equal(gc_lv_vf_parent(c, vf, &parent, &n), 0);
	assert_string_equal(parent, "0000:3b:00.0");
	assert_int_equal(n, 1);
	free(parent);
	assert_int_equal(gc_lv_vf_parent(c, "0000:3b:00.0", &parent, &n), -1); /* a PF */
	free(vf);
	virConnectClose(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_mdev_vgpu),
		cmocka_unit_test(test_drift),
		cmocka_unit_test(test_same_mmio_on_esxi_and_kvm),
		cmocka_unit_test(test_mmio_xml),
		cmocka_unit_test(test_network_xml),
		cmocka_unit_test(test_not_a_domain),
		cmocka_unit_test(test_sriov_placed_without_its_network),
		cmocka_unit_test(test_vf_lookup),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
