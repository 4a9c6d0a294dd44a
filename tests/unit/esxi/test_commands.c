/*
 * test_commands.c - the exact esxcli command per ESXi resource, and the
 * refusal (with nothing composed) of values outside their strict pattern.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "gc/esxi.h"
#include "gc/graph.h"

struct fixture {
	struct gc_graph *g;
	struct gc_target *t;
	int n;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	gc_graph_new(&f->g);
	f->t = gc_graph_add_target(f->g, GC_TARGET_ESXI, "esx01");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	gc_graph_free(f->g);
	free(f);
	return 0;
}

/* A resource with props given as key, value, ..., NULL. */
static struct gc_resource *res(struct fixture *f, enum gc_res_kind kind, const char *id, ...)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_resource *r = NULL;
	const char *k;
	va_list ap;

	assert_int_equal(gc_graph_add(&r, f->g, kind, f->t, id, "esx01", NULL, 0, &err), 0);
	va_start(ap, id);
	while ((k = va_arg(ap, const char *)) != NULL)
		gc_resource_set(f->g, r, k, va_arg(ap, const char *));
	va_end(ap);
	return r;
}

static void expect_cmd(const struct gc_resource *r, const struct gc_esxi_facts *facts,
		       const char *want)
{
	struct gc_error err = GC_ERROR_INIT;
	char *cmd = NULL;

	assert_int_equal(gc_esxi_command(&cmd, r, facts, &err), 0);
	assert_string_equal(cmd, want);
	free(cmd);
}

static void expect_refused(const struct gc_resource *r, const char *msg)
{
	struct gc_error err = GC_ERROR_INIT;
	char *cmd = NULL;

	assert_int_equal(gc_esxi_command(&cmd, r, NULL, &err), GC_EINVAL);
	assert_null(cmd);
	assert_string_equal(err.msg, msg);
}

static void test_exact_commands(void **state)
{
	struct fixture *f = *state;

	expect_cmd(res(f, GC_RES_ESXI_PCI_PASSTHRU, "esx01/esxi.pci_passthru/0000:3b:00.0", "enabled",
		       "true", NULL),
		   NULL, "esxcli hardware pci pcipassthru set -d 0000:3b:00.0 -e true");
	expect_cmd(res(f, GC_RES_ESXI_GRAPHICS, "esx01/esxi.graphics", "default_type", "SharedPassthru",
		       "assignment_policy", "Performance", NULL),
		   NULL,
		   "esxcli graphics host set --default-type SharedPassthru "
		   "--shared-passthru-assignment-policy Performance");
	expect_cmd(res(f, GC_RES_ESXI_VIB, "esx01/esxi.vib/NVD", "name", "NVD", "source",
		       "/vmfs/volumes/ds1/NVD-AIE-800_525.105.14.zip", NULL),
		   NULL, "esxcli software vib install -d /vmfs/volumes/ds1/NVD-AIE-800_525.105.14.zip");
	expect_cmd(res(f, GC_RES_ESXI_VIB, "esx01/esxi.vib/one", "name", "one", "source",
		       "/vmfs/volumes/ds1/nvidia.vib", NULL),
		   NULL, "esxcli software vib install -v /vmfs/volumes/ds1/nvidia.vib");
	expect_cmd(res(f, GC_RES_ESXI_FIREWALL, "esx01/esxi.firewall/pvrdma", "ruleset", "pvrdma",
		       "enabled", "true", NULL),
		   NULL, "esxcli network firewall ruleset set -r pvrdma -e true");
	expect_cmd(res(f, GC_RES_ESXI_ADVANCED, "esx01/esxi.advanced/Net.PVRDMAVmknic", "option",
		       "/Net/PVRDMAVmknic", "value", "vmk1", NULL),
		   NULL, "esxcli system settings advanced set -o /Net/PVRDMAVmknic -s 'vmk1'");
	expect_cmd(res(f, GC_RES_ESXI_NTP, "esx01/esxi.ntp", "servers", "ntp1.lab.example,10.0.0.1",
		       "enabled", "true", NULL),
		   NULL, "esxcli system ntp set -e true -s ntp1.lab.example -s 10.0.0.1");
	expect_cmd(res(f, GC_RES_ESXI_GPU_ECC, "esx01/esxi.gpu_ecc/0000:3b:00.0", "ecc", "disabled",
		       NULL),
		   NULL, "nvidia-smi -i 0000:3b:00.0 -e 0");
}

static void test_module_params_keep_unmanaged(void **state)
{
	struct fixture *f = *state;
	struct gc_esxcli_field params[] = {{"pfctx", "0x08"}, {"max_vfs", "2"}, {"trust_state", "2"}};
	struct gc_esxi_facts facts;
	struct gc_resource *r = res(f, GC_RES_ESXI_MODULE_PARAM, "esx01/esxi.module_param/nmlx5_core",
				    "module", "nmlx5_core", "max_vfs", "4,4", NULL);

	expect_cmd(r, NULL, "esxcli system module parameters set -m nmlx5_core -p 'max_vfs=4,4'");
	memset(&facts, 0, sizeof(facts));
	facts.nmlx5_params = params;
	facts.nnmlx5_params = 3;
	expect_cmd(r, &facts,
		   "esxcli system module parameters set -m nmlx5_core -p "
		   "'max_vfs=4,4 pfctx=0x08 trust_state=2'");
}

/* Lossless RoCE at the host: the switch's DSCP trust, PFC on its priority
 * both ways and ECN, in the one string that also holds max_vfs (`parameters
 * set` replaces the whole string) */
static void test_module_params_roce(void **state)
{
	struct fixture *f = *state;
	struct gc_esxcli_field with_ecn[] = {{"max_vfs", "4"}, {"ecn", ""}, {"pfctx", "8"},
					     {"pfcrx", "8"}, {"trust_state", ""}, {"DRSS", "4"}};
	struct gc_esxcli_field no_ecn[] = {{"max_vfs", ""}, {"pfctx", ""}, {"pfcrx", ""},
					   {"trust_state", ""}};
	struct gc_esxi_facts facts;
	struct gc_resource *r = res(f, GC_RES_ESXI_MODULE_PARAM, "esx01/esxi.module_param/nmlx5_core",
				    "module", "nmlx5_core", "max_vfs", "4", "trust_state", "2",
				    "pfctx", "0x08", "pfcrx", "0x08", "ecn", "1", NULL);
	struct gc_resource *pvrdma = res(f, GC_RES_ESXI_MODULE_PARAM, "esx02/esxi.module_param/nmlx5_core",
					 "module", "nmlx5_core", "trust_state", "2", "pfctx", "0x10",
					 "pfcrx", "0x10", "ecn", "1", NULL);

	memset(&facts, 0, sizeof(facts));
	facts.nmlx5_core_present = true;
	facts.nmlx5_params = with_ecn;
	facts.nnmlx5_params = 6;
	/* the managed ones replace the host's spelling; DRSS is kept as it is */
	expect_cmd(r, &facts,
		   "esxcli system module parameters set -m nmlx5_core -p "
		   "'max_vfs=4 trust_state=2 pfctx=0x08 pfcrx=0x08 ecn=1 DRSS=4'");
	/* a driver that lists no ecn would refuse the whole string with it */
	facts.nmlx5_params = no_ecn;
	facts.nnmlx5_params = 4;
	expect_cmd(r, &facts,
		   "esxcli system module parameters set -m nmlx5_core -p "
		   "'max_vfs=4 trust_state=2 pfctx=0x08 pfcrx=0x08'");
	/* PVRDMA only: no max_vfs; priority 4 */
	expect_cmd(pvrdma, NULL,
		   "esxcli system module parameters set -m nmlx5_core -p "
		   "'trust_state=2 pfctx=0x10 pfcrx=0x10 ecn=1'");
}

static void test_hostile_values_refused(void **state)
{
	struct fixture *f = *state;

	expect_refused(res(f, GC_RES_ESXI_PCI_PASSTHRU, "esx01/esxi.pci_passthru/0000:3b:00.0;reboot",
			   "enabled", "true", NULL),
		       "resource 'esx01/esxi.pci_passthru/0000:3b:00.0;reboot': refusing unsafe PCI "
		       "address or flag");
	expect_refused(res(f, GC_RES_ESXI_VIB, "esx01/esxi.vib/x", "source", "/vmfs/$(reboot).zip", NULL),
		       "resource 'esx01/esxi.vib/x': refusing unsafe VIB source path");
	expect_refused(res(f, GC_RES_ESXI_ADVANCED, "esx01/esxi.advanced/x", "option", "/Net/PVRDMAVmknic",
			   "value", "vmk1'; reboot; '", NULL),
		       "resource 'esx01/esxi.advanced/x': refusing unsafe advanced option");
	expect_refused(res(f, GC_RES_ESXI_NTP, "esx01/esxi.ntp", "servers", "ntp1,`id`", NULL),
		       "resource 'esx01/esxi.ntp': refusing unsafe NTP server");
	expect_refused(res(f, GC_RES_ESXI_MODULE_PARAM, "esx01/esxi.module_param/m", "module",
			   "nmlx5_core", "max_vfs", "4' ; reboot", NULL),
		       "resource 'esx01/esxi.module_param/m': refusing unsafe module parameters");
	expect_refused(res(f, GC_RES_ESXI_MODULE_PARAM, "esx01/esxi.module_param/e", "module",
			   "nmlx5_core", NULL),
		       "resource 'esx01/esxi.module_param/e': refusing unsafe module parameters");
	expect_refused(res(f, GC_RES_ESXI_GRAPHICS, "esx01/esxi.graphics", "default_type",
			   "SharedPassthru\nreboot", NULL),
		       "resource 'esx01/esxi.graphics': refusing unsafe graphics type");
}

static void test_missing_prop_and_wrong_kind(void **state)
{
	struct fixture *f = *state;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_resource *vm;
	char *cmd = NULL;

	assert_int_equal(gc_esxi_command(&cmd, res(f, GC_RES_ESXI_FIREWALL, "esx01/esxi.firewall/x",
						    "ruleset", "pvrdma", NULL),
					 NULL, &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "resource 'esx01/esxi.firewall/x' has no property 'enabled'");
	gc_error_clear(&err);
	vm = res(f, GC_RES_VM_POWER, "vm/w1/power", "power", "on", NULL);
	assert_int_equal(gc_esxi_command(&cmd, vm, NULL, &err), GC_ENOTSUP);
	assert_string_equal(err.msg, "resource 'vm/w1/power' (vm.power) is not applied over the ESXi shell");
}

/* An SR-IOV PF's firmware through MFT: the MST device the observation saw
 * at the PF's address, -y for mlxconfig's prompt (issue 14, item 14); no
 * device seen, or a value outside its pattern: nothing composed. */
static void test_nic_firmware_command(void **state)
{
	struct fixture *f = *state;
	struct gc_esxi_mft_dev devs[2] = {{"mt4119_pciconf0", "0000:5e:00.0", 0, 0},
					  {"mt4119_pciconf0.1", "0000:5e:00.1", 1, 8}};
	struct gc_esxi_facts facts;
	struct gc_error err = GC_ERROR_INIT;
	char *cmd = NULL;

	memset(&facts, 0, sizeof(facts));
	facts.mft_present = true;
	facts.mft = devs;
	facts.nmft = 2;
	expect_cmd(res(f, GC_RES_ESXI_NIC_FIRMWARE, "esx01/esxi.nic_firmware/0000:5e:00.0", "sriov_en",
		       "true", "num_of_vfs", "4", NULL),
		   &facts, "/opt/mellanox/bin/mlxconfig -y -d mt4119_pciconf0 set SRIOV_EN=1 NUM_OF_VFS=4");
	expect_cmd(res(f, GC_RES_ESXI_NIC_FIRMWARE, "esx01/esxi.nic_firmware/0000:5e:00.1", "sriov_en",
		       "true", "num_of_vfs", "16", NULL),
		   &facts, "/opt/mellanox/bin/mlxconfig -y -d mt4119_pciconf0.1 set SRIOV_EN=1 NUM_OF_VFS=16");
	assert_int_equal(gc_esxi_command(&cmd, res(f, GC_RES_ESXI_NIC_FIRMWARE,
						   "esx01/esxi.nic_firmware/0000:af:00.0", "sriov_en",
						   "true", "num_of_vfs", "4", NULL),
					 &facts, &err),
			 GC_ENOTFOUND);
	assert_null(cmd);
	assert_string_equal(err.msg, "resource 'esx01/esxi.nic_firmware/0000:af:00.0': MFT shows no "
				     "device at 0000:af:00.0");
	expect_refused(res(f, GC_RES_ESXI_NIC_FIRMWARE, "esx01/esxi.nic_firmware/0000:5e:00.3", "sriov_en",
			   "true", "num_of_vfs", "4;reboot", NULL),
		       "resource 'esx01/esxi.nic_firmware/0000:5e:00.3': refusing unsafe firmware setting");
	strcpy(devs[0].dev, "mt4119_pciconf0;id");
	gc_error_clear(&err);
	assert_int_equal(gc_esxi_command(&cmd, gc_graph_find(f->g, "esx01/esxi.nic_firmware/0000:5e:00.0"),
					 &facts, &err),
			 GC_ENOTFOUND);
	assert_null(cmd);
	assert_false(gc_esxi_valid_mst_dev("mt4119_pciconf0_cable_0"));
	assert_false(gc_esxi_valid_mst_dev("mt_pciconf0"));
	assert_false(gc_esxi_valid_mst_dev("mt4119_pciconf0."));
	assert_true(gc_esxi_valid_mst_dev("mt4123_pciconf12.3"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exact_commands, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nic_firmware_command, setup, teardown),
		cmocka_unit_test_setup_teardown(test_module_params_keep_unmanaged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_module_params_roce, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_values_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_prop_and_wrong_kind, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
