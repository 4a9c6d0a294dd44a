/*
 * test_dvs.c - distributed switches on the lab's vcsim (its own lab dir,
 * port 8981): the exact CreateDVS_Task, ReconfigureDvs_Task,
 * AddDVPortgroup_Task and ReconfigureDVPortgroup_Task bodies, then a switch
 * created with an MTU, a host member added with its uplink pnic, a port
 * group with VLAN 100 (then 200), and a VM NIC on that port group, each
 * read back by an observation; bad values are refused before sending; a
 * refused task carries vCenter's message.  A VMkernel adapter on that port
 * group (AddVirtualNic, UpdateVirtualNic: exact bodies, then read back).
 *
 * The tests run in order and build on each other (one switch).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../src/drivers/vcenter/soap.h"
#include "fixture.h"
#include "gc/vcenter.h"

#define PORT_VCSIM 8981

static struct vcsim sim;

static int group_setup(void **state)
{
	return vcsim_setup(&sim, "test_dvs", PORT_VCSIM, "");
}

static int group_teardown(void **state)
{
	vcsim_stop(&sim);
	return 0;
}

static void test_bodies(void **state)
{
	static const char *const p21[] = {"vmnic5"}, *const p40[] = {"vmnic4", "vmnic6"};
	const struct gc_vcenter_dvs_uplink up[] = {
		{"host-21", p21, 1, false}, {"host-34", NULL, 0, false}, {"host-40", p40, 2, true}};
	struct gc_vcenter_soap s;

	gc_vcenter_create_dvs_body(&s, "group-n6", "gc-rdma", 9000);
	assert_string_equal(strstr(s.b.ptr, "<CreateDVS_Task"),
			    "<CreateDVS_Task xmlns=\"urn:vim25\"><_this type=\"Folder\">group-n6"
			    "</_this><spec><configSpec xsi:type=\"VMwareDVSConfigSpec\">"
			    "<name>gc-rdma</name><maxMtu>9000</maxMtu></configSpec></spec>");
	gc_vcenter_soap_free(&s);

	gc_vcenter_reconfigure_dvs_body(&s, "dvs-9", "3", 9000, up, 3);
	assert_string_equal(strstr(s.b.ptr, "<ReconfigureDvs_Task"),
			    "<ReconfigureDvs_Task xmlns=\"urn:vim25\">"
			    "<_this type=\"VmwareDistributedVirtualSwitch\">dvs-9</_this>"
			    "<spec xsi:type=\"VMwareDVSConfigSpec\"><configVersion>3</configVersion>"
			    "<host><operation>add</operation><host type=\"HostSystem\">host-21</host>"
			    "<backing xsi:type=\"DistributedVirtualSwitchHostMemberPnicBacking\">"
			    "<pnicSpec><pnicDevice>vmnic5</pnicDevice></pnicSpec></backing></host>"
			    "<host><operation>add</operation><host type=\"HostSystem\">host-34</host>"
			    "<backing xsi:type=\"DistributedVirtualSwitchHostMemberPnicBacking\">"
			    "</backing></host>"
			    "<host><operation>edit</operation><host type=\"HostSystem\">host-40</host>"
			    "<backing xsi:type=\"DistributedVirtualSwitchHostMemberPnicBacking\">"
			    "<pnicSpec><pnicDevice>vmnic4</pnicDevice></pnicSpec>"
			    "<pnicSpec><pnicDevice>vmnic6</pnicDevice></pnicSpec></backing></host>"
			    "<maxMtu>9000</maxMtu></spec>");
	gc_vcenter_soap_free(&s);

	gc_vcenter_add_portgroup_body(&s, "dvs-9", "gc-rdma-pg", 100);
	assert_string_equal(strstr(s.b.ptr, "<AddDVPortgroup_Task"),
			    "<AddDVPortgroup_Task xmlns=\"urn:vim25\">"
			    "<_this type=\"VmwareDistributedVirtualSwitch\">dvs-9</_this>"
			    "<spec><name>gc-rdma-pg</name><numPorts>8</numPorts>"
			    "<defaultPortConfig xsi:type=\"VMwareDVSPortSetting\">"
			    "<vlan xsi:type=\"VmwareDistributedVirtualSwitchVlanIdSpec\">"
			    "<inherited>false</inherited><vlanId>100</vlanId></vlan>"
			    "</defaultPortConfig><type>earlyBinding</type>"
			    "<autoExpand>true</autoExpand></spec>");
	gc_vcenter_soap_free(&s);

	gc_vcenter_portgroup_vlan_body(&s, "dvportgroup-20", "2", 0);
	assert_string_equal(strstr(s.b.ptr, "<ReconfigureDVPortgroup_Task"),
			    "<ReconfigureDVPortgroup_Task xmlns=\"urn:vim25\">"
			    "<_this type=\"DistributedVirtualPortgroup\">dvportgroup-20</_this>"
			    "<spec><configVersion>2</configVersion>"
			    "<defaultPortConfig xsi:type=\"VMwareDVSPortSetting\">"
			    "<vlan xsi:type=\"VmwareDistributedVirtualSwitchVlanIdSpec\">"
			    "<inherited>false</inherited><vlanId>0</vlanId></vlan>"
			    "</defaultPortConfig></spec>");
	gc_vcenter_soap_free(&s);
}

static void test_bad_values_refused_before_sending(void **state)
{
	static const char *const bad[] = {"vmnic4", "eth0;reboot"};
	const struct gc_vcenter_dvs_uplink bad_nic[] = {{"host-21", bad, 2, false}};
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_error err = GC_ERROR_INIT;
	char moref[64];

	assert_int_equal(gc_vcenter_create_dvs(moref, sizeof(moref), vc, "group-n6", "x", 9216,
					       10000, &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8981): CreateDVS_Task: mtu 9216 "
				     "is not 0 (unchanged) to 9000");
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(gc_vcenter_create_dvs(moref, sizeof(moref), vc, "group-n6", "", 0, 10000,
					       &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8981): CreateDVS_Task: switch "
				     "name '' is empty, longer than 80 bytes or holds a control "
				     "character");
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(gc_vcenter_reconfigure_dvs(vc, "dvs-9", "1", 0, bad_nic, 1, 10000, &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8981): ReconfigureDvs_Task of "
				     "dvs-9: pnic 'eth0;reboot' of host-21 is not a NIC name "
				     "(vmnic5)");
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(gc_vcenter_add_portgroup(vc, "dvs-9", "pg", 4095, 10000, &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8981): AddDVPortgroup_Task: "
				     "VLAN 4095 is not 0 (none) to 4094");
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(gc_vcenter_portgroup_vlan(vc, "dvportgroup-13", NULL, -1, 10000, &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8981): "
				     "ReconfigureDVPortgroup_Task: VLAN -1 is not 0 (none) to 4094");
	assert_int_equal(gc_vcenter_calls(vc, "CreateDVS_Task"), 0);
	assert_int_equal(gc_vcenter_calls(vc, "ReconfigureDvs_Task"), 0);
	assert_int_equal(gc_vcenter_calls(vc, "AddDVPortgroup_Task"), 0);
	assert_int_equal(gc_vcenter_calls(vc, "ReconfigureDVPortgroup_Task"), 0);
	gc_vcenter_free(vc);
}

/* vcsim's default inventory, as the observation reads it. */
static void test_default_network_inventory(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = vcsim_observe(vc);
	const struct gc_vcenter_dvs *d = gc_vcenter_inventory_dvs(inv, "DVS0");
	const struct gc_vcenter_network *pg = gc_vcenter_inventory_network(inv, "DC0_DVPG0");
	const struct gc_vcenter_network *up = gc_vcenter_inventory_network(inv, "DVS0-DVUplinks-9");
	const struct gc_vcenter_network *std = gc_vcenter_inventory_network(inv, "VM Network");

	assert_int_equal(inv->round_trips, 1);
	assert_int_equal(inv->ndvs, 1);
	assert_string_equal(d->moref, "dvs-9");
	assert_non_null(d->uuid);
	assert_int_equal(d->nmembers, 4); /* every host; vcsim gives them no pnics */
	for (size_t i = 0; i < d->nmembers; i++)
		assert_int_equal(d->members[i].npnics, 0);
	assert_int_equal(inv->nnetworks, 3);
	assert_string_equal(std->type, "Network");
	assert_null(std->portgroup_key);
	assert_int_equal(std->vlan, -1);
	assert_string_equal(pg->type, "DistributedVirtualPortgroup");
	assert_string_equal(pg->portgroup_key, pg->moref);
	assert_string_equal(pg->dvs, "dvs-9");
	assert_int_equal(pg->vlan, 0);
	assert_int_equal(up->vlan, -1); /* a trunk (VlanTrunkSpec), not one id */
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

static char dvs_moref[64];

static void test_create_switch_member_portgroup(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = vcsim_observe(vc);
	struct gc_error err = GC_ERROR_INIT;
	const struct gc_vcenter_datacenter *dc = gc_vcenter_inventory_datacenter(inv, "DC0");
	const struct gc_vcenter_host *h = gc_vcenter_inventory_host(inv, "DC0_H0");
	static const char *const vmnic1[] = {"vmnic1"}, *const vmnic2_3[] = {"vmnic2", "vmnic3"};
	struct gc_vcenter_dvs_uplink up = {NULL, vmnic1, 1, false};
	const struct gc_vcenter_dvs *d;
	const struct gc_vcenter_network *pg;
	char host[64], cv[32];

	snprintf(host, sizeof(host), "%s", h->moref);
	up.host = host;
	assert_int_equal(gc_vcenter_create_dvs(dvs_moref, sizeof(dvs_moref), vc,
					       dc->network_folder, "gc-rdma", 9000, 10000, &err),
			 0);
	gc_vcenter_inventory_free(inv);
	inv = vcsim_observe(vc);
	d = gc_vcenter_inventory_dvs(inv, "gc-rdma");
	assert_non_null(d);
	assert_string_equal(d->moref, dvs_moref);
	assert_true(strlen(d->uuid) > 0);
	assert_int_equal(d->max_mtu, 9000);
	assert_int_equal(d->nmembers, 0);
	snprintf(cv, sizeof(cv), "%s", d->config_version);

	assert_int_equal(gc_vcenter_reconfigure_dvs(vc, dvs_moref, cv, 0, &up, 1, 10000, &err), 0);
	gc_vcenter_inventory_free(inv);
	inv = vcsim_observe(vc);
	d = gc_vcenter_inventory_dvs(inv, "gc-rdma");
	assert_int_equal(d->nmembers, 1);
	assert_string_equal(d->members[0].host, host);
	assert_int_equal(d->members[0].npnics, 1);
	assert_string_equal(d->members[0].pnics[0], "vmnic1");
	assert_int_equal(d->max_mtu, 9000); /* unchanged */
	assert_string_not_equal(d->config_version, cv);

	/* the member's uplink moves to two other pnics, both in its backing */
	snprintf(cv, sizeof(cv), "%s", d->config_version);
	up.pnics = vmnic2_3;
	up.npnics = 2;
	up.edit = true;
	assert_int_equal(gc_vcenter_reconfigure_dvs(vc, dvs_moref, cv, 0, &up, 1, 10000, &err), 0);
	gc_vcenter_inventory_free(inv);
	inv = vcsim_observe(vc);
	d = gc_vcenter_inventory_dvs(inv, "gc-rdma");
	assert_int_equal(d->nmembers, 1);
	assert_int_equal(d->members[0].npnics, 2);
	assert_string_equal(d->members[0].pnics[0], "vmnic2");
	assert_string_equal(d->members[0].pnics[1], "vmnic3");
	assert_string_not_equal(d->config_version, cv);

	assert_int_equal(gc_vcenter_add_portgroup(vc, dvs_moref, "gc-rdma-pg", 100, 10000, &err),
			 0);
	gc_vcenter_inventory_free(inv);
	inv = vcsim_observe(vc);
	pg = gc_vcenter_inventory_network(inv, "gc-rdma-pg");
	assert_non_null(pg);
	assert_string_equal(pg->type, "DistributedVirtualPortgroup");
	assert_string_equal(pg->dvs, dvs_moref);
	assert_non_null(pg->portgroup_key);
	assert_int_equal(pg->vlan, 100);

	assert_int_equal(gc_vcenter_portgroup_vlan(vc, pg->moref, pg->config_version, 200, 10000,
						   &err),
			 0);
	gc_vcenter_inventory_free(inv);
	inv = vcsim_observe(vc);
	pg = gc_vcenter_inventory_network(inv, "gc-rdma-pg");
	assert_int_equal(pg->vlan, 200);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

/* A VM of the member host gets a vmxnet3 on the new port group. */
static void test_nic_on_the_portgroup(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = vcsim_observe(vc);
	struct gc_error err = GC_ERROR_INIT;
	const struct gc_vcenter_dvs *d = gc_vcenter_inventory_dvs(inv, "gc-rdma");
	const struct gc_vcenter_network *pg = gc_vcenter_inventory_network(inv, "gc-rdma-pg");
	struct gc_vcenter_devspec nic = {.op = GC_VCENTER_DEV_ADD,
					 .kind = GC_VCENTER_NIC_VMXNET3,
					 .key = -100,
					 .dvs_uuid = d->uuid,
					 .portgroup_key = pg->portgroup_key};
	struct gc_vcenter_vm_change c = {.devices = &nic, .ndevices = 1, .reservation_locked = -1};
	struct gc_vcenter_inventory *after;
	const struct gc_vcenter_vm *vm;
	const struct gc_vcenter_device *dev;

	assert_int_equal(gc_vcenter_reconfigure(vc, "vm-60", &c, 10000, &err), 0);
	after = vcsim_observe(vc);
	vm = gc_vcenter_inventory_vm(after, "DC0_H0_VM1");
	assert_int_equal(vm->ndevices, 14);
	dev = &vm->devices[13];
	assert_string_equal(dev->type, "VirtualVmxnet3");
	assert_string_equal(dev->backing_type,
			    "VirtualEthernetCardDistributedVirtualPortBackingInfo");
	assert_string_equal(dev->portgroup_key, pg->portgroup_key);
	assert_null(dev->network);
	gc_vcenter_inventory_free(after);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

/* The PVRDMA vmknic's exact bodies; bad values never reach vCenter. */
static void test_vnic_bodies_and_bad_values(void **state)
{
	const struct gc_vcenter_vnic_spec w = {"50 2a 8e", "dvportgroup-12", "192.168.10.21", 24};
	struct gc_vcenter_vnic_spec bad = w;
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_soap s;
	char dev[16];

	gc_vcenter_add_vnic_body(&s, "hostNetworkSystem-7", &w);
	assert_string_equal(strstr(s.b.ptr, "<AddVirtualNic"),
			    "<AddVirtualNic xmlns=\"urn:vim25\">"
			    "<_this type=\"HostNetworkSystem\">hostNetworkSystem-7</_this>"
			    "<portgroup></portgroup><nic><ip><dhcp>false</dhcp>"
			    "<ipAddress>192.168.10.21</ipAddress><subnetMask>255.255.255.0"
			    "</subnetMask></ip><distributedVirtualPort><switchUuid>50 2a 8e"
			    "</switchUuid><portgroupKey>dvportgroup-12</portgroupKey>"
			    "</distributedVirtualPort></nic>");
	gc_vcenter_soap_free(&s);
	bad.prefix = 17;
	gc_vcenter_update_vnic_body(&s, "hostNetworkSystem-7", "vmk1", &bad);
	assert_string_equal(strstr(s.b.ptr, "<UpdateVirtualNic"),
			    "<UpdateVirtualNic xmlns=\"urn:vim25\">"
			    "<_this type=\"HostNetworkSystem\">hostNetworkSystem-7</_this>"
			    "<device>vmk1</device><nic><ip><dhcp>false</dhcp>"
			    "<ipAddress>192.168.10.21</ipAddress><subnetMask>255.255.128.0"
			    "</subnetMask></ip><distributedVirtualPort><switchUuid>50 2a 8e"
			    "</switchUuid><portgroupKey>dvportgroup-12</portgroupKey>"
			    "</distributedVirtualPort></nic>");
	gc_vcenter_soap_free(&s);

	bad.ip = "192.168.10.21; reboot";
	assert_int_equal(gc_vcenter_add_vnic(dev, sizeof(dev), vc, "hostNetworkSystem-7", &bad,
					     &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8981): AddVirtualNic: "
				     "'192.168.10.21; reboot/17' is not an IPv4 address with a "
				     "prefix length");
	err = (struct gc_error)GC_ERROR_INIT;
	assert_int_equal(gc_vcenter_update_vnic(vc, "hostNetworkSystem-7", "vmk1;x", &w, &err),
			 GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8981): UpdateVirtualNic: "
				     "'vmk1;x' is not a VMkernel adapter name");
	assert_int_equal(gc_vcenter_calls(vc, "AddVirtualNic"), 0);
	assert_int_equal(gc_vcenter_calls(vc, "UpdateVirtualNic"), 0);
	gc_vcenter_free(vc);
}

/* A member host gets vmk1 on the new port group; its address changes; the
 * observation reads both back. */
static void test_vnic_on_the_portgroup(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = vcsim_observe(vc);
	struct gc_error err = GC_ERROR_INIT;
	const struct gc_vcenter_dvs *d = gc_vcenter_inventory_dvs(inv, "gc-rdma");
	const struct gc_vcenter_network *pg = gc_vcenter_inventory_network(inv, "gc-rdma-pg");
	const struct gc_vcenter_host *h = gc_vcenter_inventory_host(inv, "DC0_H0");
	struct gc_vcenter_vnic_spec w = {d->uuid, pg->portgroup_key, "192.168.10.21", 24};
	struct gc_vcenter_inventory *after;
	const struct gc_vcenter_vnic *v;
	char dev[16];

	assert_int_equal(h->nvnics, 1);
	assert_string_equal(h->vnics[0].device, "vmk0");
	assert_null(h->vnics[0].portgroup_key);
	assert_int_equal(gc_vcenter_add_vnic(dev, sizeof(dev), vc, h->network_system, &w, &err), 0);
	assert_string_equal(dev, "vmk1");
	w.ip = "192.168.10.31";
	w.prefix = 16;
	assert_int_equal(gc_vcenter_update_vnic(vc, h->network_system, "vmk1", &w, &err), 0);
	after = vcsim_observe(vc);
	h = gc_vcenter_inventory_host(after, "DC0_H0");
	assert_int_equal(h->nvnics, 2);
	v = &h->vnics[1];
	assert_string_equal(v->device, "vmk1");
	assert_string_equal(v->switch_uuid, d->uuid);
	assert_string_equal(v->portgroup_key, pg->portgroup_key);
	assert_false(v->dhcp);
	assert_string_equal(v->ip, "192.168.10.31");
	assert_string_equal(v->mask, "255.255.0.0");
	gc_vcenter_inventory_free(after);
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

/* A host that is a member already: the task fails with vCenter's message. */
static void test_refused_task(void **state)
{
	struct gc_vcenter_conn *vc = vcsim_connect(&sim);
	struct gc_vcenter_inventory *inv = vcsim_observe(vc);
	struct gc_error err = GC_ERROR_INIT;
	const struct gc_vcenter_host *h = gc_vcenter_inventory_host(inv, "DC0_H0");
	static const char *const vmnic1[] = {"vmnic1"};
	struct gc_vcenter_dvs_uplink up = {h->moref, vmnic1, 1, false};
	char want[256];
	const char *p;

	assert_int_equal(gc_vcenter_reconfigure_dvs(vc, dvs_moref, NULL, 0, &up, 1, 10000, &err),
			 GC_EREMOTE);
	snprintf(want, sizeof(want), "%s: ReconfigureDvs_Task of %s (task-", sim.target,
		 dvs_moref);
	assert_memory_equal(err.msg, want, strlen(want));
	p = strstr(err.msg + strlen(want), "): ");
	assert_non_null(p);
	assert_string_equal(p, "): *types.AlreadyExists (AlreadyExists)");
	gc_vcenter_inventory_free(inv);
	gc_vcenter_free(vc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bodies),
		cmocka_unit_test(test_bad_values_refused_before_sending),
		cmocka_unit_test(test_default_network_inventory),
		cmocka_unit_test(test_create_switch_member_portgroup),
		cmocka_unit_test(test_nic_on_the_portgroup),
		cmocka_unit_test(test_vnic_bodies_and_bad_values),
		cmocka_unit_test(test_vnic_on_the_portgroup),
		cmocka_unit_test(test_refused_task),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
