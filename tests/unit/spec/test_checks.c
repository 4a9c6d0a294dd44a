/*
 * test_checks.c - derived values and cross-layer checks on small inline
 * specs: MMIO sizing, nmlx5 max_vfs, vGPU placement, dynamic DirectPath,
 * warnings, merge keys, alias bombs, the diagnostic cap and a 10,000-host
 * spec (loaded for correctness; timing lives in benchmarks, not here).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/spec.h"

#define HEAD                                                                                   \
	"apiVersion: gpuclusterctl/v1\n"                                                       \
	"kind: Cluster\n"                                                                      \
	"metadata: {name: t}\n"                                                                \
	"credentials:\n"                                                                       \
	"  - {name: root, username: root, password_env: GC_PW}\n"                              \
	"vcenter: {url: 'https://127.0.0.1/sdk', datacenter: DC0, credentials: root}\n"

/* Load yaml; returns the formatted diagnostics (caller frees), *out the cluster. */
static char *load(const char *yaml, struct gc_cluster **out, struct gc_diags *keep)
{
	struct gc_diags d = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;

	*out = NULL;
	gc_spec_load_buffer(out, &d, "t.yaml", yaml, strlen(yaml), &err);
	gc_diags_format(&b, &d);
	if (keep != NULL)
		*keep = d;
	else
		gc_diags_free(&d);
	return gc_buf_take(&b);
}

static struct gc_cluster *load_ok(const char *yaml)
{
	struct gc_cluster *c;
	char *text = load(yaml, &c, NULL);

	if (c == NULL || text[0] != '\0')
		print_message("%s", text);
	assert_non_null(c);
	assert_string_equal(text, "");
	free(text);
	return c;
}

static void test_mmio_sizes(void **state)
{
	struct gc_cluster *c = load_ok(
		HEAD "hosts:\n"
		     "  - name: h1\n    address: 127.0.0.1\n    credentials: root\n    gpus:\n"
		     "      - {pci: '0000:01:00.0', model: A100-80GB}\n"
		     "      - {pci: '0000:02:00.0', model: H200}\n"
		     "      - {pci: '0000:03:00.0', model: T4}\n"
		     "      - {pci: '0000:04:00.0', model: A100-80GB}\n"
		     "      - {pci: '0000:05:00.0', model: Custom-9, memory_gb: 12}\n"
		     "vms:\n"
		     "  - {name: a, host: h1, gpus: [{host_pci: '0000:01:00.0'}]}\n"
		     "  - {name: b, host: h1, gpus: [{host_pci: '0000:02:00.0'}]}\n"
		     "  - {name: c, host: h1, mmio_size_gb: 64, gpus: [{host_pci: '0000:03:00.0'}]}\n"
		     "  - {name: d, host: h1}\n"
		     "  - {name: e, host: h1, mmio_size_gb: 32}\n"
		     "  - {name: f, host: h1, mmio_size_gb: 256, gpus: [{host_pci: '0000:04:00.0'}]}\n"
		     "  - {name: g, host: h1, gpus: [{host_pci: '0000:05:00.0'}]}\n");

	assert_int_equal(gc_cluster_vm(c, "a")->mmio_gb, 128); /* 80 -> 128 */
	assert_int_equal(gc_cluster_vm(c, "b")->mmio_gb, 256); /* 141 -> 256 */
	assert_int_equal(gc_cluster_vm(c, "c")->mmio_gb, 64);  /* 16 -> 32, 64 given */
	assert_int_equal(gc_cluster_vm(c, "d")->mmio_gb, 0);
	assert_false(gc_cluster_vm(c, "d")->use_64bit_mmio);
	assert_string_equal(gc_cluster_vm(c, "d")->firmware, "bios");
	assert_int_equal(gc_cluster_vm(c, "e")->mmio_gb, 32); /* given without GPUs */
	assert_true(gc_cluster_vm(c, "e")->use_64bit_mmio);
	assert_int_equal(gc_cluster_vm(c, "f")->mmio_gb, 256);
	assert_int_equal(gc_cluster_vm(c, "g")->mmio_gb, 16); /* 12 -> 16 */
	assert_true(gc_cluster_vm(c, "g")->use_64bit_mmio);
	assert_null(c->hosts[0].gpus[4].model);
	assert_int_equal(c->hosts[0].gpus[4].memory_gb, 12);
	assert_int_equal(c->hosts[0].nvms, 7);
	gc_cluster_free(c);
}

static void test_mmio_too_small(void **state)
{
	struct gc_cluster *c;
	char *text = load(HEAD "hosts:\n"
			       "  - name: h1\n    address: 127.0.0.1\n    credentials: root\n"
			       "    gpus: [{pci: '0000:01:00.0', model: A100-80GB}]\n"
			       "vms:\n"
			       "  - {name: a, host: h1, mmio_size_gb: 64, gpus: [{host_pci: "
			       "'0000:01:00.0'}]}\n",
			  &c, NULL);

	assert_null(c);
	assert_string_equal(text,
			    "t.yaml:13:39: error: mmio_size_gb 64 is too small for VM 'a'\n"
			    "   13 |   - {name: a, host: h1, mmio_size_gb: 64, gpus: [{host_pci: "
			    "'0000:01:00.0'}]}\n"
			    "      |                                       ^\n"
			    "   = hint: needs at least 128 (the next power of two above 80 GB of "
			    "passthrough GPU memory)\n");
	free(text);
}

static void test_nmlx5_max_vfs(void **state)
{
	struct gc_cluster *c = load_ok(
		HEAD "hosts:\n"
		     "  - name: h1\n    address: 127.0.0.1\n    credentials: root\n    nics:\n"
		     "      - {pci: '0000:5e:00.0', model: ConnectX-5, mode: sriov, vfs: 8}\n"
		     "      - {pci: '0000:d8:00.1', model: ConnectX-6 Dx, mode: passthrough}\n"
		     "      - {pci: '0000:d8:00.0', model: ConnectX-6 Dx, mode: sriov, vfs: 16}\n"
		     "  - name: h2\n    address: 127.0.0.2\n    credentials: root\n    nics:\n"
		     "      - {pci: '0000:5e:00.0', model: ConnectX-4 Lx, mode: sriov, vfs: 63}\n");

	assert_string_equal(c->hosts[0].nmlx5_max_vfs, "8,16");
	assert_string_equal(c->hosts[1].nmlx5_max_vfs, "63");
	assert_int_equal(c->hosts[0].nics[1].mode, GC_NIC_MODE_PASSTHROUGH);
	gc_cluster_free(c);
}

/* nmlx5_core takes one max_vfs value per port in PCI order (issue 14):
 * spec order does not matter, a port in another mode counts as 0, SR-IOV on
 * port 2 alone is "0,4" even when port 1 is not listed, a passed-through
 * port is not nmlx5_core's, trailing zeros are left out */
static void test_nmlx5_max_vfs_per_port(void **state)
{
	struct gc_cluster *c = load_ok(
		HEAD "hosts:\n"
		     "  - name: h1\n    address: 127.0.0.1\n    credentials: root\n    nics:\n"
		     "      - {pci: '0000:d8:00.0', model: ConnectX-5, mode: sriov, vfs: 2}\n"
		     "      - {pci: '0000:5e:00.0', model: ConnectX-5, mode: sriov, vfs: 8}\n"
		     "  - name: h2\n    address: 127.0.0.2\n    credentials: root\n    nics:\n"
		     "      - {pci: '0000:5e:00.0', model: ConnectX-5, mode: pvrdma, device: vmnic4, "
		     "vmknic: vmk1, dvswitch: d}\n"
		     "      - {pci: '0000:d8:00.0', model: ConnectX-5, mode: sriov, vfs: 4}\n"
		     "  - name: h3\n    address: 127.0.0.3\n    credentials: root\n    nics:\n"
		     "      - {pci: '0000:5e:00.1', model: ConnectX-5, mode: sriov, vfs: 4}\n"
		     "  - name: h4\n    address: 127.0.0.4\n    credentials: root\n    nics:\n"
		     "      - {pci: '0000:3b:00.0', model: ConnectX-6, mode: passthrough}\n"
		     "      - {pci: '0000:3b:00.1', model: ConnectX-6, mode: sriov, vfs: 4}\n"
		     "      - {pci: '0000:af:00.0', model: ConnectX-6, mode: sriov, vfs: 8}\n"
		     "      - {pci: '0000:af:00.1', model: ConnectX-6}\n"
		     "distributed_switches: [{name: d, uplinks: [{host: h2, nic: vmnic4}]}]\n");

	assert_string_equal(c->hosts[0].nmlx5_max_vfs, "8,2");
	assert_string_equal(c->hosts[1].nmlx5_max_vfs, "0,4");
	assert_string_equal(c->hosts[2].nmlx5_max_vfs, "0,4");
	assert_string_equal(c->hosts[3].nmlx5_max_vfs, "4,8");
	gc_cluster_free(c);
}

/* host.roce_switch (issue 14, item 13): an ESXi host whose SR-IOV or PVRDMA
 * NIC is nmlx5_core's follows the first RoCE switch; a passed-through NIC
 * (the guest's own), a plain uplink and a KVM host do not, nor does any
 * host without a RoCE switch */
#define ROCE_HOSTS                                                                             \
	"hosts:\n"                                                                             \
	"  - name: h1\n    address: 127.0.0.1\n    credentials: root\n    nics:\n"            \
	"      - {pci: '0000:5e:00.0', model: ConnectX-5, mode: sriov, vfs: 8}\n"              \
	"  - name: h2\n    address: 127.0.0.2\n    credentials: root\n    nics:\n"            \
	"      - {pci: '0000:5e:00.0', model: ConnectX-5, mode: pvrdma, device: vmnic4, "       \
	"vmknic: vmk1, dvswitch: d}\n"                                                          \
	"  - name: h3\n    address: 127.0.0.3\n    credentials: root\n    nics:\n"            \
	"      - {pci: '0000:3b:00.0', model: ConnectX-6, mode: passthrough}\n"                \
	"      - {pci: '0000:af:00.0', model: ConnectX-6}\n"                                   \
	"  - name: h4\n    address: 127.0.0.4\n    credentials: root\n    hypervisor: kvm\n"  \
	"    nics:\n"                                                                          \
	"      - {pci: '0000:5e:00.0', model: ConnectX-5, device: ens5f0, mode: sriov, vfs: 4}\n" \
	"distributed_switches: [{name: d, uplinks: [{host: h2, nic: vmnic4}]}]\n"

static void test_roce_switch_of_hosts(void **state)
{
	struct gc_cluster *c = load_ok(
		HEAD ROCE_HOSTS "switches:\n"
				"  - {name: mgmt, address: 127.0.0.99, credentials: root}\n"
				"  - {name: leaf, address: 127.0.0.100, credentials: root, roce: {}}\n"
				"  - {name: leaf2, address: 127.0.0.101, credentials: root, roce: {}}\n");

	assert_ptr_equal(c->hosts[0].roce_switch, gc_cluster_switch(c, "leaf"));
	assert_ptr_equal(c->hosts[1].roce_switch, gc_cluster_switch(c, "leaf"));
	assert_null(c->hosts[2].roce_switch);
	assert_null(c->hosts[3].roce_switch);
	gc_cluster_free(c);
	c = load_ok(HEAD ROCE_HOSTS "switches:\n"
				    "  - {name: mgmt, address: 127.0.0.99, credentials: root}\n");
	for (size_t i = 0; i < c->nhosts; i++)
		assert_null(c->hosts[i].roce_switch);
	gc_cluster_free(c);
	(void)state;
}

/* The guides' NICs (issue 14): ConnectX-3 on nmlx4_core, ConnectX-4 (VPI)
 * and Connect-IB on nmlx5_core with their VF maximums, and a model not in
 * the table given with its driver and max_vfs, as GPUs are with memory_gb */
static void test_nic_models_of_the_guides(void **state)
{
	struct gc_cluster *c = load_ok(
		HEAD "hosts:\n"
		     "  - name: h1\n    address: 127.0.0.1\n    credentials: root\n    nics:\n"
		     "      - {pci: '0000:04:00.0', model: ConnectX-3, mode: passthrough}\n"
		     "      - {pci: '0000:5e:00.0', model: ConnectX-4, mode: sriov, vfs: 63}\n"
		     "      - {pci: '0000:86:00.0', model: Connect-IB, mode: sriov, vfs: 62}\n"
		     "      - {pci: '0000:d8:00.0', model: ConnectX-8, driver: nmlx5_core, max_vfs: 127, "
		     "mode: sriov, vfs: 8}\n");
	struct gc_host *h = &c->hosts[0];
	char *text;

	assert_string_equal(h->nics[0].driver, "nmlx4_core");
	assert_null(h->nics[3].model);
	assert_int_equal(h->nics[3].max_vfs, 127);
	assert_string_equal(h->nmlx5_max_vfs, "63,62,8");
	gc_cluster_free(c);

	text = load(HEAD "hosts:\n"
			 "  - name: h1\n    address: 127.0.0.1\n    credentials: root\n    nics:\n"
			 "      - {pci: '0000:04:00.0', model: ConnectX-3, mode: sriov, vfs: 4}\n"
			 "      - {pci: '0000:86:00.0', model: Connect-IB, mode: sriov, vfs: 63}\n"
			 "      - {pci: '0000:af:00.0', model: ConnectX-5, driver: nmlx4_core}\n"
			 "      - {pci: '0000:d8:00.0', model: ConnectX-8, driver: nmlx5_core, mode: sriov, "
			 "vfs: 8}\n",
		    &c, NULL);
	assert_null(c);
	assert_string_equal(
		text,
		"t.yaml:12:56: error: SR-IOV on nmlx4_core NIC '0000:04:00.0' (ConnectX-3) is not "
		"supported\n"
		"   12 |       - {pci: '0000:04:00.0', model: ConnectX-3, mode: sriov, vfs: 4}\n"
		"      |                                                        ^\n"
		"   = hint: how nmlx4_core takes max_vfs on ESXi is not confirmed yet; use pvrdma or "
		"passthrough, or a ConnectX-4 or later\n"
		"t.yaml:13:68: error: vfs 63 exceeds the maximum for Connect-IB\n"
		"   13 |       - {pci: '0000:86:00.0', model: Connect-IB, mode: sriov, vfs: 63}\n"
		"      |                                                                    ^\n"
		"   = hint: at most 62 VFs per port\n"
		"t.yaml:14:58: error: driver 'nmlx4_core' does not match model 'ConnectX-5' "
		"(nmlx5_core)\n"
		"   14 |       - {pci: '0000:af:00.0', model: ConnectX-5, driver: nmlx4_core}\n"
		"      |                                                          ^\n"
		"   = hint: leave driver out for known models\n"
		"t.yaml:15:9: error: NIC '0000:d8:00.0' of a model not in the table needs 'max_vfs' "
		"for sriov\n"
		"   15 |       - {pci: '0000:d8:00.0', model: ConnectX-8, driver: nmlx5_core, mode: "
		"sriov, vfs: 8}\n"
		"      |         ^\n"
		"   = hint: add max_vfs: N (the most VFs per port its driver accepts)\n");
	free(text);
	(void)state;
}

/* license.feature_type (issue 14, REAL-FORMATS C.8): 1 derived for a VM
 * with a vGPU; a passthrough GPU's edition must be named; a vGPU VM given
 * another value is warned */
static void test_license_feature_type(void **state)
{
	struct gc_cluster *c;
	char *text;

	text = load(HEAD "hosts:\n"
			 "  - name: h1\n    address: 127.0.0.1\n    credentials: root\n"
			 "    vgpu: {bundle: /vmfs/volumes/ds1/nvd.zip}\n"
			 "    gpus:\n"
			 "      - {pci: '0000:01:00.0', model: T4, mode: vgpu}\n"
			 "      - {pci: '0000:02:00.0', model: T4}\n"
			 "      - {pci: '0000:03:00.0', model: T4}\n"
			 "vms:\n"
			 "  - {name: a, host: h1, gpus: [{vgpu: grid_t4-4c}], guest: {address: 10.0.0.1, "
			 "credentials: root, license: {server: lic}}}\n"
			 "  - {name: b, host: h1, gpus: [{vgpu: grid_t4-4c}], guest: {address: 10.0.0.2, "
			 "credentials: root, license: {server: lic, feature_type: 4}}}\n"
			 "  - {name: c, host: h1, gpus: [{host_pci: '0000:02:00.0'}], guest: {address: "
			 "10.0.0.3, credentials: root, license: {server: lic, feature_type: 4}}}\n",
		    &c, NULL);
	assert_non_null(c);
	assert_string_equal(text,
			    "t.yaml:18:136: warning: feature_type 4 on VM 'b', which has a vGPU\n"
			    "   18 |   - {name: b, host: h1, gpus: [{vgpu: grid_t4-4c}], guest: {address: "
			    "10.0.0.2, credentials: root, license: {server: lic, feature_type: 4}}}\n"
			    "      |"
			    "                                                                    "
			    "                                                                    "
			    "^\n"
			    "   = hint: a vGPU is licensed with feature_type: 1 (the edition follows the "
			    "vgpu profile); leave feature_type out\n");
	assert_int_equal(gc_cluster_vm(c, "a")->guest->license->feature_type, 1);
	assert_int_equal(gc_cluster_vm(c, "b")->guest->license->feature_type, 4);
	assert_int_equal(gc_cluster_vm(c, "c")->guest->license->feature_type, 4);
	gc_cluster_free(c);
	free(text);

	text = load(HEAD "hosts:\n"
			 "  - name: h1\n    address: 127.0.0.1\n    credentials: root\n"
			 "    gpus: [{pci: '0000:02:00.0', model: T4}]\n"
			 "vms:\n"
			 "  - {name: c, host: h1, gpus: [{host_pci: '0000:02:00.0'}], guest: {address: "
			 "10.0.0.3, credentials: root, license: {server: lic}}}\n",
		    &c, NULL);
	assert_null(c);
	assert_string_equal(text,
			    "t.yaml:13:116: error: the license of VM 'c' needs 'feature_type': its "
			    "GPUs are passed through, not vGPUs\n"
			    "   13 |   - {name: c, host: h1, gpus: [{host_pci: '0000:02:00.0'}], guest: "
			    "{address: 10.0.0.3, credentials: root, license: {server: lic}}}\n"
			    "      |"
			    "                                                                    "
			    "                                                "
			    "^\n"
			    "   = hint: add feature_type: 2 (RTX vWS) or 4 (Virtual Compute Server), the "
			    "edition licensed for it\n");
	free(text);
	(void)state;
}

/* vm.firmware (issue 14, item 5): EFI with passthrough or a vGPU; a clone
 * that needs neither keeps its template's (NULL, not managed: the OS it
 * brings boots only with it); a VM without a template gets bios, and what
 * the spec gives is kept */
static void test_firmware_of_clones(void **state)
{
	struct gc_cluster *c = load_ok(
		HEAD "hosts:\n"
		     "  - name: h1\n    address: 127.0.0.1\n    credentials: root\n"
		     "    gpus: [{pci: '0000:01:00.0', model: T4}]\n"
		     "vms:\n"
		     "  - {name: gpu, host: h1, template: t, gpus: [{host_pci: '0000:01:00.0'}]}\n"
		     "  - {name: plain, host: h1, template: t}\n"
		     "  - {name: given, host: h1, template: t, firmware: bios}\n"
		     "  - {name: scratch, host: h1}\n");

	assert_string_equal(gc_cluster_vm(c, "gpu")->firmware, "efi");
	assert_null(gc_cluster_vm(c, "plain")->firmware);
	assert_string_equal(gc_cluster_vm(c, "given")->firmware, "bios");
	assert_string_equal(gc_cluster_vm(c, "scratch")->firmware, "bios");
	gc_cluster_free(c);
	(void)state;
}

/* vGPU vMotion came with vSphere 6.7 Update 1 (issue 14, item 11): a vGPU
 * VM on an ESXi 6.5 host cannot be live-migrated; on 6.7 and 8.0 it can,
 * and a passthrough VM never can */
static void test_vgpu_vmotion_by_esxi_version(void **state)
{
	struct gc_cluster *c = load_ok(
		HEAD "x-t4: &t4 [{pci: '0000:01:00.0', model: T4, mode: vgpu}]\n"
		     "hosts:\n"
		     "  - {name: h65, address: 127.0.0.1, credentials: root, version: '6.5.0', "
		     "gpus: *t4, vgpu: {bundle: /vmfs/volumes/ds1/nvd.zip, ecc: false}}\n"
		     "  - {name: h67, address: 127.0.0.2, credentials: root, version: '6.7.0', "
		     "gpus: *t4, vgpu: {bundle: /vmfs/volumes/ds1/nvd.zip}}\n"
		     "  - {name: h80, address: 127.0.0.3, credentials: root, "
		     "gpus: *t4, vgpu: {bundle: /vmfs/volumes/ds1/nvd.zip}}\n"
		     "vms:\n"
		     "  - {name: a, host: h65, gpus: [{vgpu: grid_t4-16c}]}\n"
		     "  - {name: b, host: h67, gpus: [{vgpu: grid_t4-16c}]}\n"
		     "  - {name: c, host: h80, gpus: [{vgpu: grid_t4-16c}]}\n"
		     "rolling: {allow_vmotion: true}\n");

	assert_false(gc_cluster_vm(c, "a")->live_migratable);
	assert_true(gc_cluster_vm(c, "b")->live_migratable);
	assert_true(gc_cluster_vm(c, "c")->live_migratable);
	gc_cluster_free(c);
	(void)state;
}

#define NS_HOSTS                                                                               \
	"x-gpu: &gpu [{pci: '0000:01:00.0', model: T4}]\n"                                    \
	"hosts:\n"                                                                             \
	"  - {name: h67, address: 127.0.0.1, credentials: root, version: '6.7.0', "            \
	"gpus: *gpu, ntp: [pool.ntp.org]}\n"                                                   \
	"  - {name: h70, address: 127.0.0.2, credentials: root, version: '7.0', "              \
	"gpus: *gpu, ntp: [pool.ntp.org]}\n"                                                   \
	"  - {name: h701, address: 127.0.0.3, credentials: root, version: 7.0.1, "             \
	"gpus: *gpu, ntp: [pool.ntp.org]}\n"                                                   \
	"  - {name: hnone, address: 127.0.0.4, credentials: root, gpus: *gpu}\n"

/* Passthrough and NTP of an ESXi host older than the esxcli namespaces for
 * them (7.0, 7.0 U1) go through vCenter (issue 14, item 1): the derived
 * flags per version */
static void test_esxi_namespaces_by_version(void **state)
{
	struct gc_cluster *c = load_ok(HEAD NS_HOSTS);

	assert_true(gc_cluster_host(c, "h67")->passthru_via_vcenter);
	assert_true(gc_cluster_host(c, "h67")->ntp_via_vcenter);
	assert_false(gc_cluster_host(c, "h70")->passthru_via_vcenter);
	assert_true(gc_cluster_host(c, "h70")->ntp_via_vcenter);
	assert_false(gc_cluster_host(c, "h701")->passthru_via_vcenter);
	assert_false(gc_cluster_host(c, "h701")->ntp_via_vcenter);
	assert_false(gc_cluster_host(c, "hnone")->passthru_via_vcenter);
	assert_false(gc_cluster_host(c, "hnone")->ntp_via_vcenter);
	gc_cluster_free(c);
	(void)state;
}

/* ... and without a vcenter section that is an error at the host's version */
static void test_esxi_namespaces_need_vcenter(void **state)
{
	struct gc_cluster *c;
	char *text = load("apiVersion: gpuclusterctl/v1\n"
			  "kind: Cluster\n"
			  "metadata: {name: t}\n"
			  "credentials:\n"
			  "  - {name: root, username: root, password_env: GC_PW}\n" NS_HOSTS,
			  &c, NULL);

	assert_null(c);
	assert_string_equal(
		text,
		"t.yaml:8:65: error: host 'h67' runs ESXi 6.7.0, which has no 'esxcli hardware pci "
		"pcipassthru' (ESXi 7.0 and later): its passthrough needs vCenter\n"
		"    8 |   - {name: h67, address: 127.0.0.1, credentials: root, version: '6.7.0', "
		"gpus: *gpu, ntp: [pool.ntp.org]}\n"
		"      |                                                                 ^\n"
		"   = hint: add a vcenter section: passthrough is then set through it "
		"(HostPciPassthruSystem.UpdatePassthruConfig)\n"
		"t.yaml:8:65: error: host 'h67' runs ESXi 6.7.0, which has no 'esxcli system ntp' "
		"(ESXi 7.0 Update 1 and later): its NTP needs vCenter\n"
		"    8 |   - {name: h67, address: 127.0.0.1, credentials: root, version: '6.7.0', "
		"gpus: *gpu, ntp: [pool.ntp.org]}\n"
		"      |                                                                 ^\n"
		"   = hint: add a vcenter section: NTP is then set through it "
		"(HostDateTimeSystem.UpdateDateTimeConfig)\n"
		"t.yaml:9:65: error: host 'h70' runs ESXi 7.0, which has no 'esxcli system ntp' "
		"(ESXi 7.0 Update 1 and later): its NTP needs vCenter\n"
		"    9 |   - {name: h70, address: 127.0.0.2, credentials: root, version: '7.0', "
		"gpus: *gpu, ntp: [pool.ntp.org]}\n"
		"      |                                                                 ^\n"
		"   = hint: add a vcenter section: NTP is then set through it "
		"(HostDateTimeSystem.UpdateDateTimeConfig)\n");
	free(text);
	(void)state;
}

#define VGPU_HOST                                                                              \
	"hosts:\n"                                                                             \
	"  - name: h1\n    address: 127.0.0.1\n    credentials: root\n"                        \
	"    vgpu: {bundle: /vmfs/volumes/ds1/nvd.zip}\n"                                      \
	"    gpus:\n"                                                                          \
	"      - {pci: '0000:01:00.0', model: T4, mode: vgpu}\n"                               \
	"      - {pci: '0000:02:00.0', model: T4, mode: vgpu}\n"

static void test_vgpu_first_fit(void **state)
{
	struct gc_cluster *c = load_ok(
		HEAD VGPU_HOST "vms:\n"
			       "  - {name: a, host: h1, gpus: [{vgpu: grid_t4-8c}]}\n"
			       "  - {name: b, host: h1, gpus: [{vgpu: grid_t4-4c}]}\n"
			       "  - {name: c, host: h1, gpus: [{vgpu: nvidia_t4-8c}]}\n"
			       "  - {name: d, host: h1, gpus: [{vgpu: grid_t4-4c, host_pci: "
			       "'0000:02:00.0'}]}\n");
	struct gc_host *h = &c->hosts[0];

	/* the pinned one (d) is placed first; a and c share GPU 1 (8c + 8c);
	 * b goes to GPU 2 beside d */
	assert_ptr_equal(gc_cluster_vm(c, "a")->gpus[0].gpu, &h->gpus[0]);
	assert_ptr_equal(gc_cluster_vm(c, "b")->gpus[0].gpu, &h->gpus[1]);
	assert_ptr_equal(gc_cluster_vm(c, "c")->gpus[0].gpu, &h->gpus[0]);
	assert_ptr_equal(gc_cluster_vm(c, "d")->gpus[0].gpu, &h->gpus[1]);
	assert_int_equal(h->gpus[0].vgpu_used_gb, 16);
	assert_int_equal(h->gpus[1].vgpu_used_gb, 8);
	assert_string_equal(h->gpus[1].vgpu_profile, "grid_t4-4c");
	assert_int_equal(gc_cluster_vm(c, "b")->gpus[0].memory_gb, 4);
	assert_true(h->needs_vgpu_manager);
	assert_string_equal(h->vgpu->default_type, "SharedPassthru");
	gc_cluster_free(c);
}

/* NVIDIA's vGPU user guide: the 16 GB P100 offers P100-<fb>Q (the guides'
 * grid_p100-8q), the P100C- types belong to the 12 GB board (issue 14) */
#define P100_HOST                                                                              \
	"hosts:\n"                                                                             \
	"  - name: h1\n    address: 127.0.0.1\n    credentials: root\n"                        \
	"    vgpu: {bundle: /vmfs/volumes/ds1/nvd.zip}\n"                                      \
	"    gpus:\n"                                                                          \
	"      - {pci: '0000:01:00.0', model: P100, mode: vgpu}\n"                             \
	"      - {pci: '0000:02:00.0', model: P100-12GB, mode: vgpu}\n"

static void test_vgpu_p100_profiles(void **state)
{
	struct gc_cluster *c = load_ok(
		HEAD P100_HOST "vms:\n"
			       "  - {name: a, host: h1, gpus: [{vgpu: grid_p100-8q}]}\n"
			       "  - {name: b, host: h1, gpus: [{vgpu: grid_p100-8q}]}\n"
			       "  - {name: c, host: h1, gpus: [{vgpu: grid_p100c-12q}]}\n");
	struct gc_host *h = &c->hosts[0];
	char *text;

	assert_ptr_equal(gc_cluster_vm(c, "a")->gpus[0].gpu, &h->gpus[0]);
	assert_ptr_equal(gc_cluster_vm(c, "b")->gpus[0].gpu, &h->gpus[0]);
	assert_ptr_equal(gc_cluster_vm(c, "c")->gpus[0].gpu, &h->gpus[1]);
	assert_int_equal(h->gpus[0].vgpu_used_gb, 16);
	assert_int_equal(h->gpus[1].memory_gb, 12);
	assert_int_equal(gc_gpu_model_find("P100-12GB")->device_id, 0x15f7);
	gc_cluster_free(c);

	text = load(HEAD P100_HOST "vms:\n"
				   "  - {name: a, host: h1, gpus: [{vgpu: grid_p100c-8q, host_pci: "
				   "'0000:01:00.0'}]}\n",
		    &c, NULL);
	assert_null(c);
	assert_string_equal(text,
			    "t.yaml:16:39: error: vgpu profile 'grid_p100c-8q' is not offered by "
			    "P100\n"
			    "   16 |   - {name: a, host: h1, gpus: [{vgpu: grid_p100c-8q, host_pci: "
			    "'0000:01:00.0'}]}\n"
			    "      |                                       ^\n"
			    "   = hint: P100 offers: grid_p100-1q grid_p100-2q grid_p100-4q "
			    "grid_p100-8q grid_p100-16q grid_p100-4c grid_p100-8c grid_p100-16c\n");
	free(text);
}

static void test_vgpu_no_room(void **state)
{
	struct gc_cluster *c;
	char *text = load(HEAD VGPU_HOST "vms:\n"
					 "  - {name: a, host: h1, gpus: [{vgpu: grid_t4-16c}]}\n"
					 "  - {name: b, host: h1, gpus: [{vgpu: grid_t4-16c}]}\n"
					 "  - {name: c, host: h1, gpus: [{vgpu: grid_t4-16c}]}\n",
			  &c, NULL);

	assert_null(c);
	assert_string_equal(text,
			    "t.yaml:18:39: error: no GPU on host 'h1' has room for vgpu profile "
			    "'grid_t4-16c'\n"
			    "   18 |   - {name: c, host: h1, gpus: [{vgpu: grid_t4-16c}]}\n"
			    "      |                                       ^\n"
			    "   = hint: 2 GPUs in vgpu mode; all VMs on one GPU use the same profile "
			    "and their framebuffers must fit\n");
	free(text);
}

static void test_dynamic_directpath(void **state)
{
	struct gc_cluster *c;
	char *text = load(HEAD "hosts:\n"
			       "  - name: h1\n    address: 127.0.0.1\n    credentials: root\n"
			       "    gpus:\n"
			       "      - {pci: '0000:01:00.0', model: V100-32GB}\n"
			       "      - {pci: '0000:02:00.0', model: V100-32GB}\n"
			       "vms:\n"
			       "  - {name: a, host: h1, gpus: [{pci_id: '10de:1db6'}]}\n"
			       "  - {name: b, host: h1, gpus: [{host_pci: '0000:02:00.0'}]}\n"
			       "  - {name: c, host: h1, gpus: [{pci_id: '10de:1db6'}]}\n"
			       "  - {name: d, host: h1, gpus: [{pci_id: '10de:1eb8'}]}\n",
			  &c, NULL);

	assert_null(c);
	assert_string_equal(
		text, "t.yaml:17:41: error: all GPUs with PCI id '10de:1db6' on host 'h1' are taken\n"
		      "   17 |   - {name: c, host: h1, gpus: [{pci_id: '10de:1db6'}]}\n"
		      "      |                                         ^\n"
		      "   = hint: 2 such GPUs, all passed through or requested already\n"
		      "t.yaml:18:41: error: no passthrough GPU on host 'h1' has PCI id '10de:1eb8'\n"
		      "   18 |   - {name: d, host: h1, gpus: [{pci_id: '10de:1eb8'}]}\n"
		      "      |                                         ^\n"
		      "   = hint: dynamic DirectPath picks a passthrough GPU of the VM's host with "
		      "this id\n");
	free(text);
}

static void test_insecure_warning(void **state)
{
	struct gc_cluster *c;
	struct gc_diags d;
	char *text = load("apiVersion: gpuclusterctl/v1\nkind: Cluster\nmetadata: {name: t}\n"
			  "credentials: [{name: root, username: root, agent: true}]\n"
			  "vcenter: {url: 'https://vc.lab.example', datacenter: DC0, credentials: "
			  "root, insecure: true}\n",
			  &c, &d);

	assert_non_null(c);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.nerrors, 0);
	assert_int_equal(d.items[0].severity, GC_SEV_WARNING);
	assert_string_equal(text,
			    "t.yaml:5:88: warning: TLS certificate checks for vCenter are off "
			    "(insecure: true)\n"
			    "    5 | vcenter: {url: 'https://vc.lab.example', datacenter: DC0, "
			    "credentials: root, insecure: true}\n"
			    "      |                                                               "
			    "                         ^\n"
			    "   = hint: give ca_file: PATH to verify vCenter's certificate\n");
	assert_true(c->vcenter->insecure);
	gc_diags_free(&d);
	gc_cluster_free(c);
	free(text);
}

static void test_merge_key_own_keys_win(void **state)
{
	struct gc_cluster *c = load_ok(
		HEAD "x-ssh: &ssh {port: 2222, keepalive_s: 0, read_timeout_s: 240}\n"
		     "ssh: {port: 22, command_timeout_s: 60, read_timeout_s: 90}\n"
		     "hosts:\n"
		     "  - name: h1\n    address: 127.0.0.1\n    credentials: root\n"
		     "    ssh: {<<: *ssh, port: 2200}\n"
		     "  - {name: h2, address: 127.0.0.2, credentials: root}\n");

	assert_int_equal(c->hosts[0].ssh.port, 2200);
	assert_int_equal(c->hosts[0].ssh.keepalive_s, 0);
	assert_int_equal(c->hosts[0].ssh.command_timeout_s, 60); /* from the cluster default */
	assert_int_equal(c->hosts[1].ssh.port, 22);
	assert_int_equal(c->hosts[1].ssh.keepalive_s, 15);
	assert_int_equal(c->hosts[0].ssh.read_timeout_s, 240); /* its own, from the anchor */
	assert_int_equal(c->hosts[1].ssh.read_timeout_s, 90);  /* the cluster default */
	gc_cluster_free(c);
}

/* A problem inside an anchor that four VMs merge: once, at the anchor, with a
 * note per VM that uses it (a typo) or that it fails for (no room). */
static void test_anchor_reported_once(void **state)
{
	struct gc_cluster *c;
	char *text = load(HEAD VGPU_HOST "x-worker-vm: &w\n"
					 "  host: h1\n"
					 "  cpus: 8\n"
					 "  memroy_gb: 64\n"
					 "  gpus: [{vgpu: grid_t4-16c}]\n"
					 "vms:\n"
					 "  - {<<: *w, name: w1}\n"
					 "  - {<<: *w, name: w2}\n"
					 "  - {<<: *w, name: w3}\n"
					 "  - {<<: *w, name: w4}\n"
					 "  - {<<: *w, name: w5}\n",
			  &c, NULL);

	assert_null(c);
	assert_string_equal(text,
			    "t.yaml:18:3: error: unknown key 'memroy_gb'\n"
			    "   18 |   memroy_gb: 64\n"
			    "      |   ^\n"
			    "   = hint: did you mean 'memory_gb'?\n"
			    "   = note: used by VM 'w1' at line 21\n"
			    "   = note: used by VM 'w2' at line 22\n"
			    "   = note: used by VM 'w3' at line 23\n"
			    "   = note: used by VM 'w4' at line 24\n"
			    "   = note: used by VM 'w5' at line 25\n"
			    "t.yaml:19:17: error: no GPU on host 'h1' has room for vgpu profile "
			    "'grid_t4-16c'\n"
			    "   19 |   gpus: [{vgpu: grid_t4-16c}]\n"
			    "      |                 ^\n"
			    "   = hint: 2 GPUs in vgpu mode; all VMs on one GPU use the same profile "
			    "and their framebuffers must fit\n"
			    "   = note: for VM 'w3' at line 23\n"
			    "   = note: for VM 'w4' at line 24\n"
			    "   = note: for VM 'w5' at line 25\n");
	free(text);
	(void)state;
}

/* 20 VMs merging a typo: 15 notes, then how many more */
static void test_anchor_notes_capped(void **state)
{
	struct gc_buf y = GC_BUF_INIT;
	struct gc_cluster *c;
	char *text;
	int i;

	gc_buf_puts(&y, HEAD "hosts: [{name: h1, address: 127.0.0.1, credentials: root}]\n"
			     "x-vm: &w {host: h1, cpus: 4, memroy_gb: 8}\nvms:\n");
	for (i = 1; i <= 20; i++)
		gc_buf_printf(&y, "  - {<<: *w, name: w%d}\n", i);
	text = load(y.ptr, &c, NULL);
	assert_null(c);
	assert_non_null(strstr(text, "   = note: used by VM 'w15' at line 24\n"
				     "   = note: and 5 more\n"));
	assert_null(strstr(text, "w16"));
	assert_int_equal(strstr(text, "error: unknown key 'memroy_gb'") -
				 strstr(text, "error:"), 0); /* the one error */
	assert_null(strstr(strstr(text, "error:") + 1, "error:"));
	free(text);
	gc_buf_free(&y);
	(void)state;
}

static void test_alias_bomb(void **state)
{
	struct gc_buf y = GC_BUF_INIT;
	struct gc_cluster *c;
	struct gc_diags d;
	char *text;
	int i;

	/* 1,000 hosts sharing one 2,000-entry ntp list: 2 * 10^6 scalars to visit
	 * from a document of ~3,000 nodes */
	gc_buf_puts(&y, HEAD "x-ntp: &ntp [");
	for (i = 0; i < 2000; i++)
		gc_buf_puts(&y, i ? ", ntp.lab.example" : "ntp.lab.example");
	gc_buf_puts(&y, "]\nx-h: &h {name: h, address: 127.0.0.1, credentials: root, ntp: *ntp}\n"
			"hosts: [");
	for (i = 0; i < 1000; i++)
		gc_buf_puts(&y, i ? ", *h" : "*h");
	gc_buf_puts(&y, "]\n");
	text = load(y.ptr, &c, &d);
	assert_null(c);
	assert_non_null(strstr(text, "error: the spec expands to too many nodes\n"));
	/* it stopped early: the budget (8 x ~3,000 nodes + 1,000,000 visits) ends
	 * about half way; every host is the anchor &h, so its duplicate name is
	 * reported once, at the anchor (anchors.c) */
	assert_int_equal(d.n, 2);
	assert_int_equal(d.nerrors, 2);
	assert_non_null(strstr(text, "t.yaml:8:16: error: duplicate host name 'h'\n"));
	gc_diags_free(&d);
	gc_buf_free(&y);
	free(text);
}

static void test_diag_cap_and_order(void **state)
{
	struct gc_buf y = GC_BUF_INIT;
	struct gc_cluster *c;
	struct gc_diags d;
	char *text;
	size_t i;

	gc_buf_puts(&y, HEAD "hosts:\n");
	for (i = 0; i < 150; i++)
		gc_buf_printf(&y, "  - {name: h%zu, address: 'bad host', credentials: root}\n", i);
	/* an error early in the file, found last (a dangling VM host) */
	gc_buf_puts(&y, "vms: [{name: v, host: nowhere}]\n");
	text = load(y.ptr, &c, &d);
	assert_null(c);
	assert_int_equal(d.nerrors, 151);
	assert_int_equal(d.n, GC_DIAG_MAX);
	assert_int_equal(d.dropped, 51);
	for (i = 1; i < d.n; i++)
		assert_true(d.items[i - 1].mark.line < d.items[i].mark.line);
	assert_int_equal(d.items[0].mark.line, 8);
	assert_string_equal(d.items[0].mark.file, "t.yaml");
	assert_non_null(strstr(text, "\nnote: 51 more diagnostics not shown\n"));
	gc_diags_free(&d);
	gc_buf_free(&y);
	free(text);
}

static void test_tables(void **state)
{
	size_t n;

	assert_int_equal(gc_gpu_model_find("T4")->memory_gb, 16);
	assert_int_equal(gc_gpu_model_find("V100-32GB")->device_id, 0x1db6);
	assert_null(gc_gpu_model_find("V100"));
	assert_int_equal(gc_nic_model_find("ConnectX-4 Lx")->max_vfs, 63);
	assert_int_equal(gc_nic_model_find("ConnectX-7")->max_vfs, 127);
	assert_non_null(gc_gpu_models(&n));
	assert_int_equal(n, 12);
	assert_non_null(gc_nic_models(&n));
	assert_int_equal(n, 10);
	assert_string_equal(gc_nic_model_find("ConnectX-3")->driver, "nmlx4_core");
	assert_string_equal(gc_nic_model_find("ConnectX-4")->driver, "nmlx5_core");
	assert_int_equal(gc_nic_model_find("Connect-IB")->max_vfs, 62);
	assert_int_equal(gc_vgpu_profile_fb_gb("grid_t4-16c"), 16);
	assert_int_equal(gc_vgpu_profile_fb_gb("grid_t4-1q"), 1);
	assert_int_equal(gc_vgpu_profile_fb_gb("grid_a100-3-20c"), 20);
	assert_int_equal(gc_vgpu_profile_fb_gb("nvidia_a100-40c"), 40);
	assert_int_equal(gc_vgpu_profile_fb_gb("grid_t4"), 0);
	assert_int_equal(gc_vgpu_profile_fb_gb("grid_t4-16x"), 0);
	assert_int_equal(gc_vgpu_profile_fb_gb("grid_t4-16cc"), 0);
	assert_int_equal(gc_vgpu_profile_fb_gb(NULL), 0);
}

static void test_hand_built_lookup(void **state)
{
	struct gc_host hosts[2] = {{.name = "a"}, {.name = "b"}};
	struct gc_cluster c = {.hosts = hosts, .nhosts = 2};

	assert_ptr_equal(gc_cluster_host(&c, "b"), &hosts[1]);
	assert_null(gc_cluster_host(&c, "z"));
	assert_null(gc_cluster_vm(&c, "a"));
}

static void test_ten_thousand_hosts(void **state)
{
	struct gc_buf y = GC_BUF_INIT;
	struct gc_cluster *c;
	size_t i, g;

	gc_buf_puts(&y, HEAD "hosts:\n");
	for (i = 0; i < 10000; i++) {
		gc_buf_printf(&y, "  - name: esx%05zu\n    address: 10.%zu.%zu.%zu\n"
				  "    credentials: root\n    gpus:\n",
			      i, i / 65536, (i / 256) % 256, i % 256);
		for (g = 0; g < 8; g++)
			gc_buf_printf(&y, "      - {pci: '0000:%02zx:00.0', model: H100}\n", g + 1);
		gc_buf_puts(&y, "    nics:\n"
				"      - {pci: '0000:a0:00.0', model: ConnectX-7, mode: sriov, vfs: 8}\n"
				"      - {pci: '0000:a0:00.1', model: ConnectX-7, mode: sriov, vfs: 8}\n");
	}
	gc_buf_puts(&y, "vms:\n");
	for (i = 0; i < 10000; i++) {
		gc_buf_printf(&y, "  - name: vm%05zu\n    host: esx%05zu\n    gpus:\n", i, i);
		for (g = 0; g < 8; g++)
			gc_buf_printf(&y, "      - host_pci: '0000:%02zx:00.0'\n", g + 1);
		gc_buf_puts(&y, "    nics: [{type: sriov, pf: '0000:a0:00.0', network: rdma}]\n");
	}
	c = load_ok(y.ptr);
	assert_int_equal(c->nhosts, 10000);
	assert_int_equal(c->nvms, 10000);
	assert_int_equal(c->vms[9999].passthrough_gb, 640);
	assert_int_equal(c->vms[9999].mmio_gb, 1024);
	assert_string_equal(c->hosts[9999].nmlx5_max_vfs, "8,8");
	assert_ptr_equal(gc_cluster_host(c, "esx04242"), &c->hosts[4242]);
	gc_cluster_free(c);
	gc_buf_free(&y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mmio_sizes),
		cmocka_unit_test(test_mmio_too_small),
		cmocka_unit_test(test_nmlx5_max_vfs),
		cmocka_unit_test(test_nmlx5_max_vfs_per_port),
		cmocka_unit_test(test_roce_switch_of_hosts),
		cmocka_unit_test(test_vgpu_vmotion_by_esxi_version),
		cmocka_unit_test(test_esxi_namespaces_by_version),
		cmocka_unit_test(test_esxi_namespaces_need_vcenter),
		cmocka_unit_test(test_firmware_of_clones),
		cmocka_unit_test(test_nic_models_of_the_guides),
		cmocka_unit_test(test_license_feature_type),
		cmocka_unit_test(test_vgpu_first_fit),
		cmocka_unit_test(test_vgpu_no_room),
		cmocka_unit_test(test_vgpu_p100_profiles),
		cmocka_unit_test(test_dynamic_directpath),
		cmocka_unit_test(test_insecure_warning),
		cmocka_unit_test(test_merge_key_own_keys_win),
		cmocka_unit_test(test_anchor_reported_once),
		cmocka_unit_test(test_anchor_notes_capped),
		cmocka_unit_test(test_alias_bomb),
		cmocka_unit_test(test_diag_cap_and_order),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_hand_built_lookup),
		cmocka_unit_test(test_ten_thousand_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
