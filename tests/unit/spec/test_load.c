/*
 * test_load.c - every example loads without errors and its model holds
 * exactly the values the spec reference promises (defaults, resolved
 * references, derived MMIO/nmlx5/migration values).
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

static struct gc_cluster *load_ok(const char *path)
{
	struct gc_cluster *c = NULL;
	struct gc_diags d = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	int rc = gc_spec_load(&c, &d, path, &err);

	gc_diags_format(&b, &d);
	if (rc != 0 || d.n != 0)
		print_message("%s: rc %d: %s\n%s", path, rc, err.msg, gc_buf_str(&b));
	assert_int_equal(rc, 0);
	assert_int_equal(d.n, 0);
	assert_non_null(c);
	gc_buf_free(&b);
	gc_diags_free(&d);
	return c;
}

static void test_roce_passthrough(void **state)
{
	struct gc_cluster *c = load_ok("examples/roce-passthrough.yaml");
	size_t i;

	assert_string_equal(c->name, "roce-lab");
	assert_int_equal(c->nhosts, 8);
	assert_int_equal(c->nvms, 8);
	assert_int_equal(c->ncredentials, 4);
	assert_non_null(c->vcenter);
	assert_string_equal(c->vcenter->url, "https://127.0.0.1:8989/sdk");
	assert_ptr_equal(c->vcenter->credentials, gc_cluster_credential(c, "vc-admin"));
	assert_false(c->vcenter->insecure);
	assert_int_equal(c->ssh_defaults.port, 22);
	assert_string_equal(c->ssh_defaults.known_hosts, "/root/.ssh/known_hosts");
	assert_int_equal(c->rolling.max_unavailable, 2);
	assert_true(c->validation.require_gpudirect);
	assert_true(c->validation.min_rdma_gbps == 90.0);
	for (i = 0; i < 8; i++) {
		struct gc_host *h = &c->hosts[i];
		struct gc_vm *vm = &c->vms[i];
		char name[16], addr[16];

		snprintf(name, sizeof(name), "esx%02zu", i + 1);
		snprintf(addr, sizeof(addr), "127.0.0.%zu", 11 + i);
		assert_string_equal(h->name, name);
		assert_string_equal(h->address, addr);
		assert_ptr_equal(gc_cluster_host(c, name), h);
		assert_string_equal(h->credentials->name, "esxi-root");
		assert_int_equal(h->ssh.port, 22);
		assert_int_equal(h->ssh.command_timeout_s, 300);
		assert_int_equal(h->ssh.read_timeout_s, 60);
		assert_int_equal(h->ngpus, 1);
		assert_string_equal(h->gpus[0].model->name, "V100-32GB");
		assert_int_equal(h->gpus[0].memory_gb, 32);
		assert_int_equal(h->gpus[0].mode, GC_GPU_PASSTHROUGH);
		assert_ptr_equal(h->gpus[0].passthrough_vm, vm);
		assert_ptr_equal(h->gpus[0].host, h);
		assert_false(h->needs_vgpu_manager);
		assert_string_equal(h->nmlx5_max_vfs, "4");
		assert_int_equal(h->nics[0].mode, GC_NIC_MODE_SRIOV);
		assert_int_equal(h->nics[0].vfs, 4);
		assert_int_equal(h->nics[0].model->max_vfs, 127);
		assert_int_equal(h->nvms, 1);
		assert_ptr_equal(h->vms[0], vm);

		assert_ptr_equal(vm->host, h);
		assert_int_equal(vm->ngpus, 1);
		assert_int_equal(vm->gpus[0].kind, GC_VMGPU_STATIC);
		assert_ptr_equal(vm->gpus[0].gpu, &h->gpus[0]);
		assert_int_equal(vm->gpus[0].memory_gb, 32);
		assert_int_equal(vm->nnics, 2);
		assert_int_equal(vm->nics[0].kind, GC_VMNIC_VMXNET3);
		assert_string_equal(vm->nics[0].network, "VM Network");
		assert_int_equal(vm->nics[1].kind, GC_VMNIC_SRIOV);
		assert_ptr_equal(vm->nics[1].nic, &h->nics[0]);
		assert_true(vm->has_passthrough);
		assert_false(vm->has_vgpu);
		assert_false(vm->has_pvrdma);
		assert_int_equal(vm->passthrough_gb, 32);
		assert_int_equal(vm->mmio_gb, 64);
		assert_true(vm->use_64bit_mmio);
		assert_true(vm->reservation_full);
		assert_false(vm->live_migratable);
		assert_string_equal(vm->firmware, "efi");
		assert_int_equal(vm->allow_p2p, GC_TRUE);
		assert_true(vm->power_on);
		assert_non_null(vm->guest);
		assert_string_equal(vm->guest->credentials->name, "guest-user");
		assert_true(vm->guest->peermem);
		assert_int_equal(vm->guest->roce_qos->pfc_priority, 3);
		assert_int_equal(vm->guest->roce_qos->tos, 106);
		assert_string_equal(vm->guest->roce_qos->trust, "dscp");
		assert_null(vm->guest->license);
	}
	assert_int_equal(c->nswitches, 1);
	assert_ptr_equal(gc_cluster_switch(c, "sn2700"), &c->switches[0]);
	assert_string_equal(c->switches[0].roce->mode, "dscp-lossless");
	assert_int_equal(c->switches[0].roce->priority, 3);
	assert_int_equal(c->switches[0].roce->ecn_min_kb, 150);
	assert_int_equal(c->switches[0].roce->ecn_max_kb, 1500);
	assert_int_equal(c->switches[0].roce->cnp_traffic_class, 6);
	assert_true(c->switches[0].roce->pool_percent == 50.0);
	assert_string_equal(c->switches[0].ports, "1/1-1/32");
	assert_string_equal(c->switches[0].version, "3.9.0300");
	/* every host's SR-IOV uplink follows the switch's lossless RoCE */
	for (size_t h = 0; h < c->nhosts; h++)
		assert_ptr_equal(c->hosts[h].roce_switch, &c->switches[0]);
	/* marks are 1-based and point at the object */
	assert_int_equal(c->hosts[0].mark.line, 40);
	assert_int_equal(c->hosts[0].mark.col, 5);
	assert_string_equal(c->hosts[0].mark.file, "examples/roce-passthrough.yaml");
	gc_cluster_free(c);
}

static void test_vgpu_pvrdma(void **state)
{
	struct gc_cluster *c = load_ok("examples/vgpu-pvrdma.yaml");
	struct gc_vm *master = gc_cluster_vm(c, "k8s-master");
	struct gc_dvswitch *dvs = gc_cluster_dvswitch(c, "dvs-rdma");
	size_t i;

	assert_int_equal(c->nhosts, 5);
	assert_int_equal(c->nvms, 5);
	assert_non_null(dvs);
	assert_int_equal(dvs->mtu, 9000);
	assert_int_equal(dvs->nuplinks, 4);
	assert_int_equal(dvs->portgroups[0].vlan, 100);
	for (i = 1; i <= 4; i++) {
		char name[16];
		struct gc_vm *vm;
		struct gc_host *h;

		snprintf(name, sizeof(name), "worker-%02zu", i);
		vm = gc_cluster_vm(c, name);
		assert_non_null(vm);
		h = vm->host;
		assert_true(h->needs_vgpu_manager);
		assert_non_null(h->vgpu);
		/* anchors resolve: every host shares the x-vgpu map */
		assert_string_equal(h->vgpu->default_type, "SharedPassthru");
		assert_string_equal(h->vgpu->vib_name, "NVD-AIE_ESXi_8.0.0_Driver");
		assert_int_equal(h->vgpu->ecc, GC_FALSE);
		assert_null(h->nmlx5_max_vfs);
		assert_ptr_equal(h->nics[0].dvswitch, dvs);
		assert_int_equal(vm->gpus[0].kind, GC_VMGPU_VGPU);
		assert_ptr_equal(vm->gpus[0].gpu, &h->gpus[0]);
		assert_int_equal(vm->gpus[0].memory_gb, 16);
		assert_string_equal(h->gpus[0].vgpu_profile, "grid_t4-16c");
		assert_int_equal(h->gpus[0].vgpu_used_gb, 16);
		assert_null(h->gpus[0].passthrough_vm);
		assert_true(vm->has_vgpu);
		assert_true(vm->has_pvrdma);
		assert_false(vm->has_passthrough);
		assert_int_equal(vm->mmio_gb, 0);
		assert_false(vm->use_64bit_mmio);
		assert_true(vm->reservation_full);
		assert_true(vm->live_migratable);
		assert_string_equal(vm->firmware, "efi");
		assert_ptr_equal(vm->nics[1].portgroup, &dvs->portgroups[0]);
		assert_string_equal(vm->nics[1].protocol, "rocev2");
		/* merge key: the guest template plus its own address */
		assert_string_equal(vm->guest->nvidia_driver, "525.105.17");
		assert_string_equal(vm->guest->license->server, "license.lab.example");
		assert_int_equal(vm->guest->license->port, 7070);
		assert_int_equal(vm->guest->license->feature_type, 1); /* derived: a vGPU */
	}
	assert_non_null(master);
	assert_int_equal(master->ngpus, 0);
	assert_null(master->firmware); /* a clone that needs no EFI: its template's */
	assert_false(master->reservation_full);
	assert_true(master->live_migratable);
	assert_int_equal(master->mmio_gb, 0);
	assert_int_equal(master->reserve_all_memory, GC_UNSET);
	assert_true(c->rolling.allow_vmotion);
	gc_cluster_free(c);
}

static void test_gpudirect_pair(void **state)
{
	struct gc_cluster *c = load_ok("examples/gpudirect-pair.yaml");
	size_t i;

	for (i = 0; i < 2; i++) {
		struct gc_vm *vm = &c->vms[i];

		assert_int_equal(vm->passthrough_gb, 40);
		assert_int_equal(vm->mmio_gb, 64);
		assert_true(vm->use_64bit_mmio);
		assert_int_equal(vm->allow_p2p, GC_TRUE);
		assert_int_equal(vm->nics[1].kind, GC_VMNIC_PASSTHROUGH);
		assert_ptr_equal(vm->nics[1].nic, &vm->host->nics[0]);
		assert_true(vm->guest->peermem);
		assert_true(vm->guest->credentials->agent);
		assert_false(vm->live_migratable);
		/* the cluster-wide ssh defaults apply when no ssh: is given */
		assert_int_equal(vm->guest->ssh.port, 22);
		assert_int_equal(vm->guest->ssh.keepalive_s, 15);
		assert_null(vm->guest->ssh.known_hosts);
	}
	assert_null(c->hosts[0].nmlx5_max_vfs);
	assert_int_equal(c->vcenter->max_tasks, 8);
	assert_int_equal(c->vcenter->max_tasks_per_host, 2);
	assert_int_equal(c->vcenter->shutdown_timeout_s, 300);
	assert_int_equal(c->rolling.max_unavailable, 1);
	gc_cluster_free(c);
}

static void test_multi_gpu_vm(void **state)
{
	struct gc_cluster *c = load_ok("examples/multi-gpu-vm.yaml");
	struct gc_vm *vm = gc_cluster_vm(c, "trainer");

	assert_non_null(vm);
	assert_int_equal(vm->ngpus, 2);
	assert_int_equal(vm->gpus[0].kind, GC_VMGPU_STATIC);
	assert_int_equal(vm->gpus[1].kind, GC_VMGPU_DYNAMIC);
	assert_string_equal(vm->gpus[1].pci_id, "10de:1db4");
	assert_int_equal(vm->gpus[1].memory_gb, 16);
	assert_int_equal(vm->passthrough_gb, 32);
	assert_int_equal(vm->mmio_gb, 64);
	assert_true(vm->use_64bit_mmio);
	assert_string_equal(vm->firmware, "efi");
	assert_null(gc_cluster_vm(c, "nobody"));
	assert_null(gc_cluster_host(c, "esx99"));
	gc_cluster_free(c);
}

static void test_io_error(void **state)
{
	struct gc_cluster *c = NULL;
	struct gc_diags d = {0};
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_spec_load(&c, &d, "tests/data/spec/does-not-exist.yaml", &err),
			 GC_EIO);
	assert_null(c);
	assert_int_equal(d.n, 0);
	assert_string_equal(err.msg, "cannot open 'tests/data/spec/does-not-exist.yaml': No such file or directory");
}

static void test_too_large(void **state)
{
	static const char small[] = "apiVersion: gpuclusterctl/v1\n";
	struct gc_cluster *c = NULL;
	struct gc_diags d = {0};
	struct gc_error err = GC_ERROR_INIT;

	/* the size is checked before a byte is read */
	assert_int_equal(gc_spec_load_buffer(&c, &d, "big.yaml", small, GC_SPEC_MAX_BYTES + 1u,
					     &err),
			 GC_ENOMEM);
	assert_null(c);
	assert_int_equal(d.n, 0);
	assert_string_equal(err.msg, "'big.yaml' is larger than 67108864 bytes");
}

static void test_ipv6_vcenter(void **state)
{
	static const char spec[] =
		"apiVersion: gpuclusterctl/v1\nkind: Cluster\nmetadata: {name: v6}\n"
		"credentials: [{name: vc, username: administrator@vsphere.local, agent: true}]\n"
		"vcenter: {url: 'https://[fd00::10]:8443/sdk', datacenter: DC0, credentials: vc,\n"
		"          shutdown_timeout_s: 900}\n";
	struct gc_cluster *c = NULL;
	struct gc_diags d = {0};
	struct gc_error err = GC_ERROR_INIT;

	assert_int_equal(gc_spec_load_buffer(&c, &d, "v6.yaml", spec, strlen(spec), &err), 0);
	assert_string_equal(c->vcenter->url, "https://[fd00::10]:8443/sdk");
	assert_int_equal(c->vcenter->shutdown_timeout_s, 900);
	assert_int_equal(d.n, 0);
	gc_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roce_passthrough),
		cmocka_unit_test(test_vgpu_pvrdma),
		cmocka_unit_test(test_gpudirect_pair),
		cmocka_unit_test(test_multi_gpu_vm),
		cmocka_unit_test(test_io_error),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_ipv6_vcenter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
