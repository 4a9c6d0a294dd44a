// inventory.go - the simulator's inventory built from a spec (-inventory FILE)
// instead of vcsim's default VPX model.
//
// tests/sim/lab_spec.py vcsim-inventory SPEC writes the JSON read here:
//
//	{"datacenter": "DC0", "cluster": "gpu", "datastore": "LocalDS_0",
//	 "networks": ["VM Network", "rdma-net"],
//	 "templates": [{"name": "ubuntu-22.04-template", "host": "esx01", "firmware": "efi"}],
//	 "hosts": [{"name": "esx01", "address": "127.0.0.11",
//	            "version": "8.0.2", "build": "22380479",
//	            "pci": [{"id": "0000:3b:00.0", "class_id": 770,
//	                     "vendor_id": 4318, "vendor_name": "NVIDIA Corporation",
//	                     "device_id": 7606, "device_name": "GV100GL [Tesla V100 PCIe 32GB]",
//	                     "passthru_capable": true, "passthru_enabled": true,
//	                     "passthru_active": true},
//	                    {"id": "0000:5e:00.0", ..., "pnic": "vmnic4",
//	                     "driver": "nmlx5_core",
//	                     "sriov": {"vfs": 4, "max_vfs": 127}}],
//	            "vgpu_types": ["grid_t4-16c", ...]}]}
//
// vendor_id, device_id and class_id are the xsd:short values vCenter sends:
// signed 16 bits, so 0x10de is 4318 and 0xa2d6 is -23850.
//
// The model is vcsim's VPX service content with no default datacenter,
// cluster, host, VM or port group.  Everything is then created through
// vcsim's own API (an in-process vim25 client), so the objects are wired as
// vcsim wires them: a datacenter, one cluster holding one HostSystem per
// spec host named exactly as the spec names it, one local datastore mounted
// on every host, the standard networks visible to every host, and one
// powered-off template VM per template name (its firmware, bios unless the
// inventory says efi, 2 CPUs, 4096 MB, a
// pvscsi disk and one vmxnet3 on "VM Network") on its host.  The PCI
// devices, passthrough and SR-IOV state, vGPU types, pnics and ESXi
// version are then set on the hosts directly, before the server listens.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/ioutil"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

type invSriov struct {
	VFs    int32 `json:"vfs"`
	MaxVFs int32 `json:"max_vfs"`
}

type invPci struct {
	ID              string    `json:"id"`
	ClassID         int16     `json:"class_id"`
	VendorID        int16     `json:"vendor_id"`
	VendorName      string    `json:"vendor_name"`
	DeviceID        int16     `json:"device_id"`
	DeviceName      string    `json:"device_name"`
	PassthruCapable bool      `json:"passthru_capable"`
	PassthruEnabled bool      `json:"passthru_enabled"`
	PassthruActive  bool      `json:"passthru_active"`
	Sriov           *invSriov `json:"sriov"`
	Pnic            string    `json:"pnic"`
	Driver          string    `json:"driver"`
}

type invHost struct {
	Name      string   `json:"name"`
	Address   string   `json:"address"`
	Version   string   `json:"version"`
	Build     string   `json:"build"`
	Pci       []invPci `json:"pci"`
	VgpuTypes []string `json:"vgpu_types"`
}

type invTemplate struct {
	Name     string `json:"name"`
	Host     string `json:"host"`
	Firmware string `json:"firmware"` // "efi" | "bios" (default)
}

type inventory struct {
	Datacenter string        `json:"datacenter"`
	Cluster    string        `json:"cluster"`
	Datastore  string        `json:"datastore"`
	Networks   []string      `json:"networks"`
	Templates  []invTemplate `json:"templates"`
	Hosts      []invHost     `json:"hosts"`
}

func readInventory(file string) (*inventory, error) {
	b, err := ioutil.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var inv inventory
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&inv); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if inv.Datacenter == "" || inv.Cluster == "" || len(inv.Hosts) == 0 {
		return nil, fmt.Errorf("%s: needs datacenter, cluster and at least one host", file)
	}
	if inv.Datastore == "" {
		inv.Datastore = "datastore1"
	}
	seen := map[string]bool{}
	for _, h := range inv.Hosts {
		if h.Name == "" || seen[h.Name] {
			return nil, fmt.Errorf("%s: empty or duplicate host name %q", file, h.Name)
		}
		seen[h.Name] = true
		for _, p := range h.Pci {
			if _, _, _, err := parsePciID(p.ID); err != nil {
				return nil, fmt.Errorf("%s: host %s: %v", file, h.Name, err)
			}
		}
	}
	for _, t := range inv.Templates {
		if t.Host != "" && !seen[t.Host] {
			return nil, fmt.Errorf("%s: template %q: no host named %q", file, t.Name, t.Host)
		}
	}
	return &inv, nil
}

// inventoryModel is vcsim's VPX model with nothing in it: Create() makes
// only the service instance and its root folder.
func inventoryModel() *simulator.Model {
	m := simulator.VPX()
	m.Datacenter = 0
	m.Portgroup = 0
	m.Host = 0
	m.Cluster = 0
	m.ClusterHost = 0
	m.Datastore = 0
	m.Machine = 0
	return m
}

func parsePciID(id string) (bus, slot, fn byte, err error) {
	// "0000:3b:00.0": domain:bus:slot.function, hex
	var dom, b, s, f uint64
	p := strings.Split(id, ":")
	if len(p) == 3 {
		sf := strings.Split(p[2], ".")
		if len(sf) == 2 {
			dom, err = strconv.ParseUint(p[0], 16, 16)
			if err == nil {
				b, err = strconv.ParseUint(p[1], 16, 8)
			}
			if err == nil {
				s, err = strconv.ParseUint(sf[0], 16, 5)
			}
			if err == nil {
				f, err = strconv.ParseUint(sf[1], 16, 3)
			}
			if err == nil && len(p[0]) == 4 && len(p[1]) == 2 && len(sf[0]) == 2 {
				_ = dom
				return byte(b), byte(s), byte(f), nil
			}
		}
	}
	return 0, 0, 0, fmt.Errorf("bad PCI id %q (want 0000:3b:00.0)", id)
}

// buildInventory creates inv in the (empty) model m through vcsim's API.
func buildInventory(m *simulator.Model, inv *inventory) error {
	ctx := context.Background()
	c, err := vim25.NewClient(ctx, m.Service)
	if err != nil {
		return err
	}
	root := object.NewRootFolder(c)
	dc, err := root.CreateDatacenter(ctx, inv.Datacenter)
	if err != nil {
		return err
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		return err
	}
	cluster, err := folders.HostFolder.CreateCluster(ctx, inv.Cluster, types.ClusterConfigSpecEx{})
	if err != nil {
		return err
	}
	hosts := map[string]*object.HostSystem{}
	for _, h := range inv.Hosts {
		task, err := cluster.AddHost(ctx, types.HostConnectSpec{HostName: h.Name}, true, nil, nil)
		if err != nil {
			return err
		}
		res, err := task.WaitForResult(ctx, nil)
		if err != nil {
			return fmt.Errorf("host %s: %v", h.Name, err)
		}
		hosts[h.Name] = object.NewHostSystem(c, res.Result.(types.ManagedObjectReference))
	}

	dir, err := ioutil.TempDir("", "gcvcsim-"+inv.Datastore+"-")
	if err != nil {
		return err
	}
	tempDirs = append(tempDirs, dir)
	for _, h := range inv.Hosts {
		dss, err := hosts[h.Name].ConfigManager().DatastoreSystem(ctx)
		if err != nil {
			return err
		}
		if _, err = dss.CreateLocalDatastore(ctx, inv.Datastore, dir); err != nil {
			return fmt.Errorf("datastore %s on %s: %v", inv.Datastore, h.Name, err)
		}
	}

	for _, name := range inv.Networks {
		if err := addNetwork(ctx, c, folders, name); err != nil {
			return err
		}
	}
	for _, h := range inv.Hosts {
		configureHost(simulator.Map.Get(hosts[h.Name].Reference()).(*simulator.HostSystem), h)
	}

	pool, err := cluster.ResourcePool(ctx)
	if err != nil {
		return err
	}
	for _, t := range inv.Templates {
		host := t.Host
		if host == "" {
			host = inv.Hosts[0].Name
		}
		if err := addTemplate(ctx, c, folders, pool, hosts[host], inv.Datastore, t.Name, t.Firmware); err != nil {
			return fmt.Errorf("template %s: %v", t.Name, err)
		}
	}
	// vCenter 6.7 Update 1 and later list vgpu.hotmigrate.enabled ("vGPU
	// hot migration", False) among their advanced settings; vcsim 0.24's
	// VPX settings do not.  A boolean, as the vSphere Client's checkbox.
	opt := object.NewOptionManager(c, *c.ServiceContent.Setting)
	return opt.Update(ctx, []types.BaseOptionValue{
		&types.OptionValue{Key: "vgpu.hotmigrate.enabled", Value: false}})
}

// addNetwork makes a standard network (a port group on every host's
// vSwitch0, as on a real cluster) visible to every host of the datacenter.
// "VM Network" exists already: vcsim adds it to each datacenter.
func addNetwork(ctx context.Context, c *vim25.Client, folders *object.DatacenterFolders, name string) error {
	nf := simulator.Map.Get(folders.NetworkFolder.Reference()).(*simulator.Folder)
	var ref types.ManagedObjectReference
	if e := simulator.Map.FindByName(name, nf.ChildEntity); e != nil {
		ref = e.Reference()
	} else {
		// HostNetworkSystem.AddPortGroup creates the Network entity (once).
		h := simulator.Map.Any("HostSystem").(*simulator.HostSystem)
		ns := object.NewHostNetworkSystem(c, *h.ConfigManager.NetworkSystem)
		err := ns.AddPortGroup(ctx, types.HostPortGroupSpec{Name: name, VswitchName: "vSwitch0",
			Policy: types.HostNetworkPolicy{}})
		if err != nil {
			return fmt.Errorf("network %s: %v", name, err)
		}
		ref = simulator.Map.FindByName(name, nf.ChildEntity).Reference()
	}
	net := simulator.Map.Get(ref).(*mo.Network)
	for _, e := range simulator.Map.All("HostSystem") {
		h := e.(*simulator.HostSystem)
		if simulator.FindReference(h.Network, ref) == nil {
			h.Network = append(h.Network, ref)
		}
		if simulator.FindReference(net.Host, h.Self) == nil {
			net.Host = append(net.Host, h.Self)
		}
		ns := simulator.Map.Get(*h.ConfigManager.NetworkSystem).(*simulator.HostNetworkSystem)
		addHostPortgroup(ns, name)
	}
	for _, e := range simulator.Map.All("ClusterComputeResource") {
		cr := e.(*simulator.ClusterComputeResource)
		if simulator.FindReference(cr.Network, ref) == nil {
			cr.Network = append(cr.Network, ref)
		}
	}
	return nil
}

func addHostPortgroup(ns *simulator.HostNetworkSystem, name string) {
	for _, pg := range ns.NetworkInfo.Portgroup {
		if pg.Spec.Name == name {
			return
		}
	}
	ns.NetworkInfo.Portgroup = append(ns.NetworkInfo.Portgroup, types.HostPortGroup{
		Key:  "key-vim.host.PortGroup-" + name,
		Spec: types.HostPortGroupSpec{Name: name, VswitchName: "vSwitch0"},
	})
	for i := range ns.NetworkInfo.Vswitch {
		if ns.NetworkInfo.Vswitch[i].Name == "vSwitch0" {
			ns.NetworkInfo.Vswitch[i].Portgroup = append(ns.NetworkInfo.Vswitch[i].Portgroup,
				"key-vim.host.PortGroup-"+name)
		}
	}
}

// configureHost gives a host the spec's ESXi version and hardware.
func configureHost(h *simulator.HostSystem, spec invHost) {
	if spec.Version != "" {
		p := h.Config.Product
		p.Version = spec.Version
		if spec.Build != "" {
			p.Build = spec.Build
		}
		p.FullName = fmt.Sprintf("VMware ESXi %s build-%s", p.Version, p.Build)
		parts := strings.Split(spec.Version, ".")
		if len(parts) >= 2 {
			p.ApiVersion = parts[0] + "." + parts[1] + ".0.0"
			if len(parts) == 3 && parts[2] != "0" {
				p.ApiVersion = spec.Version + ".0"
			}
		}
		h.Config.Product = p
		h.Summary.Config.Product = &p
	}
	if spec.Address != "" && h.Config.Network != nil && len(h.Config.Network.Vnic) > 0 {
		h.Config.Network.Vnic[0].Spec.Ip.IpAddress = spec.Address
	}

	// The template's own devices (a VMware virtual chipset) stay; the
	// spec's devices come after them, as on a host with those cards.
	pci := append([]types.HostPciDevice(nil), h.Hardware.PciDevice...)
	var passthru []types.BaseHostPciPassthruInfo
	for _, p := range spec.Pci {
		bus, slot, fn, _ := parsePciID(p.ID)
		pci = append(pci, types.HostPciDevice{
			Id: p.ID, ClassId: p.ClassID, Bus: bus, Slot: slot, Function: fn,
			VendorId: p.VendorID, SubVendorId: p.VendorID, VendorName: p.VendorName,
			DeviceId: p.DeviceID, DeviceName: p.DeviceName,
		})
		info := types.HostPciPassthruInfo{Id: p.ID, PassthruEnabled: p.PassthruEnabled,
			PassthruCapable: p.PassthruCapable, PassthruActive: p.PassthruActive}
		if p.Sriov != nil {
			passthru = append(passthru, &types.HostSriovInfo{HostPciPassthruInfo: info,
				SriovEnabled: p.Sriov.VFs > 0, SriovCapable: true, SriovActive: p.Sriov.VFs > 0,
				NumVirtualFunctionRequested: p.Sriov.VFs, NumVirtualFunction: p.Sriov.VFs,
				MaxVirtualFunctionSupported: p.Sriov.MaxVFs})
		} else {
			passthru = append(passthru, &info)
		}
		if p.Pnic != "" && h.Config.Network != nil {
			addPnic(h, p, len(h.Config.Network.Pnic))
		}
	}
	h.Hardware.PciDevice = pci
	h.Config.PciPassthruInfo = passthru
	h.Config.SharedPassthruGpuTypes = spec.VgpuTypes
}

func addPnic(h *simulator.HostSystem, p invPci, n int) {
	link := &types.PhysicalNicLinkInfo{SpeedMb: 100000, Duplex: true}
	mac := fmt.Sprintf("b8:ce:f6:%02x:%02x:%02x", len(h.Name)&0xff, n, pnicHash(h.Name))
	h.Config.Network.Pnic = append(h.Config.Network.Pnic, types.PhysicalNic{
		Key: "key-vim.host.PhysicalNic-" + p.Pnic, Device: p.Pnic, Pci: p.ID,
		Driver: p.Driver, LinkSpeed: link,
		ValidLinkSpecification: []types.PhysicalNicLinkInfo{*link},
		Spec:                   types.PhysicalNicSpec{Ip: &types.HostIpConfig{}, LinkSpeed: link},
		Mac:                    mac,
	})
}

func pnicHash(s string) int {
	h := 0
	for _, c := range s {
		h = (h*31 + int(c)) & 0xff
	}
	return h
}

// addTemplate creates a powered-off VM on host and marks it as a template.
func addTemplate(ctx context.Context, c *vim25.Client, folders *object.DatacenterFolders,
	pool *object.ResourcePool, host *object.HostSystem, datastore, name, firmware string) error {
	var devices object.VirtualDeviceList
	if firmware == "" {
		firmware = string(types.GuestOsDescriptorFirmwareTypeBios)
	}
	scsi, err := devices.CreateSCSIController("pvscsi")
	if err != nil {
		return err
	}
	devices = append(devices, scsi)
	disk := devices.CreateDisk(scsi.(types.BaseVirtualController), types.ManagedObjectReference{},
		"["+datastore+"] "+path.Join(name, name+".vmdk"))
	disk.CapacityInKB = 16 * 1024 * 1024
	devices = append(devices, disk)
	nf := simulator.Map.Get(folders.NetworkFolder.Reference()).(*simulator.Folder)
	vmnet := simulator.Map.FindByName("VM Network", nf.ChildEntity)
	if vmnet == nil {
		return fmt.Errorf("no network named %q", "VM Network")
	}
	backing, err := object.NewNetwork(c, vmnet.Reference()).EthernetCardBackingInfo(ctx)
	if err != nil {
		return err
	}
	nic, err := object.EthernetCardTypes().CreateEthernetCard("vmxnet3", backing)
	if err != nil {
		return err
	}
	devices = append(devices, nic)
	change, err := devices.ConfigSpec(types.VirtualDeviceConfigSpecOperationAdd)
	if err != nil {
		return err
	}
	config := types.VirtualMachineConfigSpec{
		Name: name, GuestId: "ubuntu64Guest", NumCPUs: 2, NumCoresPerSocket: 1, MemoryMB: 4096,
		Firmware:     firmware,
		Files:        &types.VirtualMachineFileInfo{VmPathName: "[" + datastore + "]"},
		DeviceChange: change,
	}
	task, err := folders.VmFolder.CreateVM(ctx, config, pool, host)
	if err != nil {
		return err
	}
	res, err := task.WaitForResult(ctx, nil)
	if err != nil {
		return err
	}
	vm := object.NewVirtualMachine(c, res.Result.(types.ManagedObjectReference))
	return vm.MarkAsTemplate(ctx)
}

var tempDirs []string

func removeTempDirs() {
	for _, d := range tempDirs {
		_ = os.RemoveAll(d)
	}
}
