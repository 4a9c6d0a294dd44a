/*
 * test_vmops.c - the VM lifecycle on the lab's vcsim (its own lab dir, port
 * 8980): the exact CloneVM_Task and RelocateVM_Task bodies, then clone,
 * power off/on, ShutdownGuest, the power state, vMotion and
 * QueryConfigTarget, each read back by an observation; tasks that fail carry
 * vCenter's message; several threads share one connection.
 *
 * vcsim starts with --host-gpus giving DC0_C0_H1 one passthrough device
 * (0000:00:0f.0, a device of vcsim's own hardware.pciDevice list), so
 * QueryConfigTarget has something to list there; every other host is as
 * vcsim's default model makes it.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../src/drivers/vcenter/soap.h"
#include "fixture.h"
#include "gc/vcenter.h"

#define PORT_VCSIM 8980
#define THREADS 4

static struct vcsim sim;

static int group_setup(void **state)
{
	char gpus[600], args[700];
	FILE *f;

	snprintf(gpus, sizeof(gpus), "%s/test-vmops-host-gpus.json", GC_BINARY_DIR);
	f = fopen(gpus, "w");
	if (f == NULL)
		return -1;
	fputs("{\"DC0_C0_H1\": {\"passthru\": [{\"id\": \"0000:00:0f.0\", \"enabled\": true, "
	      "\"capable\": true, \"active\": true}]}}\n",
	      f);
	fclose(f);
	snprintf(args, sizeof(args), "--host-gpus '%s'", gpus);
	return vcsim_setup(&sim, "test_vmops", PORT_VCSIM, args);
}

static int group_teardown(void **state)
{
	vcsim_stop(&sim);
	return 0;
}

/* "<task-id>): rest" after the task id in err.msg, which must start with prefix. */
static const char *after_task(const char *msg, const char *prefix)
{
	const char *p;

	if (strncmp(msg, prefix, strlen(prefix)) != 0)
		fail_msg("'%s' does not start with '%s'", msg, prefix);
	p = strstr(msg + strlen(prefix), "): ");
	if (p == NULL)
		fail_msg("no task id in '%s'", msg);
	return p + 3;
}

static void test_clone_and_relocate_bodies(void **state)
{
	struct gc_vcenter_soap s;

	gc_vcenter_clone_body(&s, "vm-60", "worker-01", "group-v3", "resgroup-8", "host-21",
			      NULL);
	assert_string_equal(strstr(s.b.ptr, "<CloneVM_Task"),
			    "<CloneVM_Task xmlns=\"urn:vim25\"><_this type=\"VirtualMachine\">vm-60"
			    "</_this><folder type=\"Folder\">group-v3</folder><name>worker-01</name>"
			    "<spec><location><pool type=\"ResourcePool\">resgroup-8</pool>"
			    "<host type=\"HostSystem\">host-21</host></location>"
			    "<template>false</template><powerOn>false</powerOn></spec>");
	gc_vcenter_soap_free(&s);
	gc_vcenter_clone_body(&s, "vm-60", "w", "group-v3", NULL, NULL, "datastore-12");
	assert_non_null(strstr(s.b.ptr, "<spec><location><datastore type=\"Datastore\">"
					"datastore-12</datastore></location><template>"));
	gc_vcenter_soap_free(&s);
	gc_vcenter_relocate_body(&s, "vm-61", "host-30", "resgroup-8");
	assert_string_equal(strstr(s.b.ptr, "<RelocateVM_Task"),
			    "<RelocateVM_Task xmlns=\"urn:vim25\"><_this type=\"VirtualMachine\">"
			    "vm-61</_this><spec><pool type=\"ResourcePool\">resgroup-8</pool>"
			    "<host type=\"HostSystem\">host-30</host></spec>");
	gc_vcenter_soap_free(&s);
}

/*
 * vcsim 0.24's own CloneVM_Task puts the clone on the source's host whatever
 * spec.location.host says; the lab's stand-in (tests/sim/vcsim/fidelity.go)
 * then moves it to the requested host, as vCenter places it.  Then a
 * RelocateVM_Task moves it on.
 */
static void test_clone_then_relocate(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = vcsim_observe(vc);
	struct gc_error err = GC_ERROR_INIT;
	const struct gc_vcenter_datacenter *dc = gc_vcenter_inventory_datacenter(inv, "DC0");
	const struct gc_vcenter_vm *src = gc_vcenter_inventory_vm(inv, "DC0_H0_VM1");
	const struct gc_vcenter_host *target = gc_vcenter_inventory_host(inv, "DC0_C0_H2");
	const struct gc_vcenter_host *next = gc_vcenter_inventory_host(inv, "DC0_C0_H0");
	const struct gc_vcenter_compute *cluster = gc_vcenter_inventory_compute(inv, target->parent);
	const struct gc_vcenter_vm *vm;
	char moref[64], pool[64], target_host[64], next_host[64];

	assert_string_equal(cluster->name, "DC0_C0");
	assert_string_equal(cluster->type, "ClusterComputeResource");
	assert_string_equal(src->host_name, "DC0_H0");
	snprintf(pool, sizeof(pool), "%s", cluster->resource_pool);
	snprintf(target_host, sizeof(target_host), "%s", target->moref);
	snprintf(next_host, sizeof(next_host), "%s", next->moref);
	assert_int_equal(gc_vcenter_clone(moref, sizeof(moref), vc, src->moref, "clone-01",
					  dc->vm_folder, pool, target_host, NULL, 10000, &err),
			 0);
	assert_memory_equal(moref, "vm-", 3);
	gc_vcenter_inventory_free(inv);

	inv = vcsim_observe(vc);
	vm = gc_vcenter_inventory_vm(inv, "clone-01");
	assert_non_null(vm);
	assert_string_equal(vm->moref, moref);
	assert_string_equal(vm->host_moref, target_host);
	assert_string_equal(vm->resource_pool, pool);
	assert_string_equal(vm->power_state, "poweredOff");
	assert_false(vm->is_template);
	assert_int_equal(vm->num_cpus, 1); /* the source's */
	assert_int_equal(vm->memory_mb, 32);
	gc_vcenter_inventory_free(inv);

	assert_int_equal(gc_vcenter_relocate(vc, moref, next_host, NULL, 10000, &err), 0);
	inv = vcsim_observe(vc);
	vm = gc_vcenter_inventory_vm(inv, "clone-01");
	assert_string_equal(vm->host_moref, next_host);
	assert_string_equal(vm->host_name, "DC0_C0_H0");
	assert_string_equal(vm->resource_pool, pool);
	assert_int_equal(gc_vcenter_calls(vc, "CloneVM_Task"), 1);
	assert_int_equal(gc_vcenter_calls(vc, "RelocateVM_Task"), 1);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

static void assert_power(struct gc_vcenter_conn *vc, const char *vm, const char *want)
{
	struct gc_error err = GC_ERROR_INIT;
	char state[32];

	assert_int_equal(gc_vcenter_power_state(vc, vm, state, sizeof(state), &err), 0);
	assert_string_equal(state, want);
}

static void test_power_off_on_and_shutdown(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_inventory *inv;
	char prefix[256];

	assert_power(vc, "vm-57", "poweredOn");
	assert_int_equal(gc_vcenter_power_off(vc, "vm-57", 10000, &err), 0);
	assert_power(vc, "vm-57", "poweredOff");
	inv = vcsim_observe(vc);
	assert_string_equal(gc_vcenter_inventory_vm(inv, "DC0_H0_VM0")->power_state, "poweredOff");
	gc_vcenter_inventory_free(inv);

	/* Off again: the task fails with vCenter's message (vcsim's is the Go type). */
	assert_int_equal(gc_vcenter_power_off(vc, "vm-57", 10000, &err), GC_EREMOTE);
	snprintf(prefix, sizeof(prefix), "%s: PowerOffVM_Task of vm-57 (task-", sim.target);
	assert_string_equal(after_task(err.msg, prefix),
			    "*types.InvalidPowerState (InvalidPowerState)");

	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(gc_vcenter_power_on(vc, "vm-57", 10000, &err), 0);
	assert_power(vc, "vm-57", "poweredOn");
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(gc_vcenter_power_on(vc, "vm-57", 10000, &err), GC_EREMOTE);
	snprintf(prefix, sizeof(prefix), "%s: PowerOnVM_Task of vm-57 (task-", sim.target);
	assert_string_equal(after_task(err.msg, prefix),
			    "*types.InvalidPowerState (InvalidPowerState)");

	/* vcsim's ShutdownGuest needs no Tools: the VM is simply off after it. */
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(gc_vcenter_shutdown_guest(vc, "vm-57", &err), 0);
	assert_power(vc, "vm-57", "poweredOff");
	assert_int_equal(gc_vcenter_shutdown_guest(vc, "vm-57", &err), GC_EREMOTE);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8980): ShutdownGuest: "
				     "fault without a message (InvalidPowerState)");
	assert_int_equal(gc_vcenter_calls(vc, "ShutdownGuest"), 2);
	gc_vcenter_free(vc);
}

/* After a lost reply, wait for the task it started: vcsim runs the call
 * 1.5 s late (faults.json task_ms) with a running task in the VM's
 * recentTask meanwhile. */
static void test_wait_idle_after_a_lost_reply(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_option opt = {"gc.test.lost", "yes"};
	struct gc_vcenter_vm_change ch = {.reservation_locked = -1, .extra_config = &opt,
					  .nextra_config = 1};
	struct gc_vcenter_inventory *inv;
	char path[700], want[256];
	FILE *f;

	(void)state;
	assert_int_equal(gc_vcenter_wait_idle(vc, "VirtualMachine", "vm-57", 1000, &err), 0);
	snprintf(path, sizeof(path), "%s/faults.json", sim.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"ReconfigVM_Task\": {\"DC0_H0_VM0\": {\"drop\": \"after\", \"times\": 1, "
	      "\"task_ms\": 1500}}}",
	      f);
	fclose(f);
	assert_int_equal(gc_vcenter_reconfigure(vc, "vm-57", &ch, 10000, &err), GC_ENET);
	gc_error_clear(&err);
	/* too short a wait names the task still running */
	assert_int_equal(gc_vcenter_wait_idle(vc, "VirtualMachine", "vm-57", 100, &err),
			 GC_ETIMEOUT);
	snprintf(want, sizeof(want), "%s: VirtualMachine vm-57: task task-", sim.target);
	assert_memory_equal(err.msg, want, strlen(want));
	assert_non_null(strstr(err.msg, " still running after 100 ms"));
	gc_error_clear(&err);
	assert_int_equal(gc_vcenter_wait_idle(vc, "VirtualMachine", "vm-57", 10000, &err), 0);
	unlink(path);
	/* and then the change is there, once */
	inv = vcsim_observe(vc);
	assert_string_equal(gc_vcenter_vm_option(gc_vcenter_inventory_vm(inv, "DC0_H0_VM0"),
						 "gc.test.lost"),
			    "yes");
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

static void test_unknown_vm(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_error err = GC_ERROR_INIT;
	char s[32];

	assert_int_equal(gc_vcenter_power_state(vc, "vm-9999", s, sizeof(s), &err), GC_EREMOTE);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8980): RetrievePropertiesEx: "
				     "The object has already been deleted or has not been "
				     "completely created (ManagedObjectNotFound)");
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(gc_vcenter_power_on(vc, "vm-9999", 10000, &err), GC_EREMOTE);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8980): PowerOnVM_Task: "
				     "managed object not found: VirtualMachine:vm-9999 "
				     "(ManagedObjectNotFound)");
	gc_vcenter_free(vc);
}

/* A default host offers nothing; DC0_C0_H1 (--host-gpus) offers its one
 * enabled, active passthrough device with the host's systemId. */
static void test_query_pci(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = vcsim_observe(vc);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_pci_target *t = (void *)1;
	size_t n = 99;
	const struct gc_vcenter_host *h0 = gc_vcenter_inventory_host(inv, "DC0_H0");
	const struct gc_vcenter_host *h1 = gc_vcenter_inventory_host(inv, "DC0_C0_H1");
	const struct gc_vcenter_compute *cr0 = gc_vcenter_inventory_compute(inv, h0->parent);
	const struct gc_vcenter_compute *cr1 = gc_vcenter_inventory_compute(inv, h1->parent);

	assert_int_equal(gc_vcenter_query_pci(&t, &n, vc, cr0->environment_browser, h0->moref,
					      &err),
			 0);
	assert_int_equal(n, 0);
	assert_null(t);
	assert_int_equal(gc_vcenter_query_pci(&t, &n, vc, cr1->environment_browser, h1->moref,
					      &err),
			 0);
	assert_int_equal(n, 1);
	assert_string_equal(t[0].id, "0000:00:0f.0");
	assert_int_equal(t[0].vendor_id, 5549); /* 0x15ad */
	assert_int_equal(t[0].device_id, 1029); /* 0x0405 */
	assert_string_equal(t[0].device_name, "SVGA II Adapter");
	assert_true(strlen(t[0].system_id) > 0);
	assert_false(t[0].sriov);
	/* the same device in the host's hardware.pciDevice */
	assert_int_equal(gc_vcenter_host_pci(h1, "0000:00:0f.0")->device_id, t[0].device_id);
	free(t);
	assert_int_equal(gc_vcenter_calls(vc, "QueryConfigTarget"), 2);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

/*
 * A QueryConfigTarget reply in the shape vCenter sends.  Constructed, not
 * captured: element names and order from the WSDL (govmomi types.go
 * ConfigTarget, VirtualMachinePciPassthroughInfo, VirtualMachineSriovInfo,
 * HostPciDevice); values from a host with an A100 and a ConnectX-6 Dx.
 */
static const char config_target[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
	"<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" "
	"xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"><soapenv:Body>"
	"<QueryConfigTargetResponse xmlns=\"urn:vim25\"><returnval>"
	"<numCpus>2</numCpus><numCpuCores>64</numCpuCores><numNumaNodes>2</numNumaNodes>"
	"<smcPresent>false</smcPresent><maxMemMBOptimalPerf>1048576</maxMemMBOptimalPerf>"
	"<pciPassthrough xsi:type=\"VirtualMachinePciPassthroughInfo\"><name>0000:3b:00.0</name>"
	"<pciDevice><id>0000:3b:00.0</id><classId>770</classId><bus>59</bus><slot>0</slot>"
	"<function>0</function><vendorId>4318</vendorId><subVendorId>4318</subVendorId>"
	"<vendorName>NVIDIA Corporation</vendorName><deviceId>8433</deviceId>"
	"<subDeviceId>5007</subDeviceId><parentBridge>0000:3a:00.0</parentBridge>"
	"<deviceName>GA100 [A100 PCIe 40GB]</deviceName></pciDevice>"
	"<systemId>5f2b0c3e-8b4e-11ec-9a1b-3cecef0a1b2c</systemId></pciPassthrough>"
	"<pciPassthrough xsi:type=\"VirtualMachinePciPassthroughInfo\"><name>bad</name>"
	"<pciDevice><id>not-a-pci-id</id><vendorId>1</vendorId><deviceId>2</deviceId>"
	"<deviceName>x</deviceName></pciDevice><systemId>y</systemId></pciPassthrough>"
	"<sriov><name>0000:af:00.0</name><pciDevice><id>0000:af:00.0</id><classId>512</classId>"
	"<bus>175</bus><slot>0</slot><function>0</function><vendorId>5555</vendorId>"
	"<subVendorId>5555</subVendorId><vendorName>Mellanox Technologies</vendorName>"
	"<deviceId>4125</deviceId><subDeviceId>22</subDeviceId>"
	"<deviceName>MT2892 Family [ConnectX-6 Dx]</deviceName></pciDevice>"
	"<systemId>5f2b0c3e-8b4e-11ec-9a1b-3cecef0a1b2c</systemId>"
	"<virtualFunction>false</virtualFunction><pnic>vmnic4</pnic></sriov>"
	"<sriov><name>0000:af:00.2</name><pciDevice><id>0000:af:00.2</id><vendorId>5555</vendorId>"
	"<deviceId>4126</deviceId><deviceName>ConnectX Family mlx5Gen Virtual Function"
	"</deviceName></pciDevice><systemId>5f2b</systemId>"
	"<virtualFunction>true</virtualFunction></sriov>"
	"</returnval></QueryConfigTargetResponse></soapenv:Body></soapenv:Envelope>";

static void test_config_target_parser(void **state)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_pci_target *t = NULL;
	size_t n = 0;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;

	assert_int_equal(gc_vcenter_soap_parse("vc", "QueryConfigTarget", 200, config_target,
					       strlen(config_target), &doc, &ret, NULL, 0, &err),
			 0);
	assert_int_equal(gc_vcenter_pci_targets(&t, &n, ret, "vc", &err), 0);
	xmlFreeDoc(doc);
	/* the entry without a PCI id and the virtual function are left out */
	assert_int_equal(n, 2);
	assert_string_equal(t[0].id, "0000:3b:00.0");
	assert_int_equal(t[0].vendor_id, 4318);
	assert_int_equal(t[0].device_id, 8433);
	assert_string_equal(t[0].device_name, "GA100 [A100 PCIe 40GB]");
	assert_string_equal(t[0].system_id, "5f2b0c3e-8b4e-11ec-9a1b-3cecef0a1b2c");
	assert_false(t[0].sriov);
	assert_string_equal(t[1].id, "0000:af:00.0");
	assert_int_equal(t[1].vendor_id, 5555);
	assert_int_equal(t[1].device_id, 4125);
	assert_string_equal(t[1].device_name, "MT2892 Family [ConnectX-6 Dx]");
	assert_true(t[1].sriov);
	free(t);
}

/* ---------------------------------------------------------------- threads */

struct worker {
	struct gc_vcenter_conn *vc;
	const char *from, *folder, *pool;
	int i;
	char moref[64];
	char state[32];
	int rc;
	struct gc_error err;
};

/* Clone, power on, read the state, power off: one VM per thread. */
static void *work(void *arg)
{
	struct worker *w = arg;
	char name[32];

	snprintf(name, sizeof(name), "thread-%d", w->i);
	w->rc = gc_vcenter_clone(w->moref, sizeof(w->moref), w->vc, w->from, name, w->folder,
				 w->pool, NULL, NULL, 10000, &w->err);
	if (w->rc == 0)
		w->rc = gc_vcenter_power_on(w->vc, w->moref, 10000, &w->err);
	if (w->rc == 0)
		w->rc = gc_vcenter_power_state(w->vc, w->moref, w->state, sizeof(w->state),
					       &w->err);
	if (w->rc == 0)
		w->rc = gc_vcenter_power_off(w->vc, w->moref, 10000, &w->err);
	return NULL;
}

static void test_threads_share_one_connection(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = vcsim_observe(vc);
	const struct gc_vcenter_vm *src = gc_vcenter_inventory_vm(inv, "DC0_C0_RP0_VM0");
	const struct gc_vcenter_datacenter *dc = gc_vcenter_inventory_datacenter(inv, "DC0");
	struct worker w[THREADS];
	pthread_t t[THREADS];
	struct gc_https_stats st;

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.vc = vc, .from = src->moref, .folder = dc->vm_folder,
				       .pool = src->resource_pool, .i = i,
				       .err = GC_ERROR_INIT};
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		if (w[i].rc != 0)
			fail_msg("thread %d: %s", i, w[i].err.msg);
		assert_string_equal(w[i].state, "poweredOn");
	}
	gc_vcenter_inventory_free(inv);
	inv = vcsim_observe(vc);
	for (int i = 0; i < THREADS; i++) {
		char name[32];
		const struct gc_vcenter_vm *vm;

		snprintf(name, sizeof(name), "thread-%d", i);
		vm = gc_vcenter_inventory_vm(inv, name);
		assert_non_null(vm);
		assert_string_equal(vm->moref, w[i].moref);
		assert_string_equal(vm->power_state, "poweredOff");
	}
	assert_int_equal(gc_vcenter_calls(vc, "CloneVM_Task"), THREADS);
	assert_int_equal(gc_vcenter_calls(vc, "PowerOnVM_Task"), THREADS);
	assert_int_equal(gc_vcenter_calls(vc, "PowerOffVM_Task"), THREADS);
	gc_vcenter_https_stats(vc, &st);
	assert_int_equal(st.connections, 1); /* one kept-alive TLS connection, shared */
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clone_and_relocate_bodies),
		cmocka_unit_test(test_config_target_parser),
		cmocka_unit_test(test_clone_then_relocate),
		cmocka_unit_test(test_power_off_on_and_shutdown),
		cmocka_unit_test(test_wait_idle_after_a_lost_reply),
		cmocka_unit_test(test_unknown_vm),
		cmocka_unit_test(test_query_pci),
		cmocka_unit_test(test_threads_share_one_connection),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
