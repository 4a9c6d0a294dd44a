// vnic.go - HostNetworkSystem.AddVirtualNic and UpdateVirtualNic for a
// VMkernel adapter on a distributed port group, as vCenter does them.
//
// vcsim 0.24's HostNetworkSystem has neither method (host_network_system.go
// adds vSwitches and standard port groups only), and its hosts keep the one
// vmk0 of esx.HostConfigInfo.  Each host's network system is replaced,
// under the same managed object reference, by hostNetworkSystem, which
// embeds vcsim's (every other method stays vcsim's) and adds:
//
//   - AddVirtualNic(portgroup, nic): with portgroup "" the adapter goes on
//     nic.distributedVirtualPort, whose switchUuid must name a switch the
//     host is a member of and whose portgroupKey a port group of that
//     switch (else InvalidArgument on "nic.distributedVirtualPort", where
//     vCenter answers with a fault of its own).  The adapter gets the
//     lowest free vmkN, as ESXi numbers them, and the device is returned.
//     A standard port group name is refused (NotSupported): the lab only
//     needs the distributed case.
//   - UpdateVirtualNic(device, nic): replaces the adapter's ip (and its
//     distributed port, when given); NotFound for an unknown device.
//
// The host's config.network.vnic and the network system's networkInfo.vnic
// both change, under the host's lock, so a PropertyCollector read sees it.
package main

import (
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

type hostNetworkSystem struct {
	*simulator.HostNetworkSystem
}

// wrapNetworkSystems replaces every host's network system.
func wrapNetworkSystems() {
	for _, e := range simulator.Map.All("HostSystem") {
		h, ok := e.(*simulator.HostSystem)
		if !ok || h.ConfigManager.NetworkSystem == nil {
			continue
		}
		if ns, ok := simulator.Map.Get(*h.ConfigManager.NetworkSystem).(*simulator.HostNetworkSystem); ok {
			simulator.Map.Put(&hostNetworkSystem{ns})
		}
	}
}

func (s *hostNetworkSystem) host() *simulator.HostSystem {
	for _, e := range simulator.Map.All("HostSystem") {
		h, ok := e.(*simulator.HostSystem)
		if ok && h.ConfigManager.NetworkSystem != nil && *h.ConfigManager.NetworkSystem == s.Self {
			return h
		}
	}
	return nil
}

// dvPortOK: the switch with that uuid has the host as a member and the port group.
func dvPortOK(host types.ManagedObjectReference, p *types.DistributedVirtualSwitchPortConnection) bool {
	if p == nil {
		return false
	}
	for _, e := range simulator.Map.All("DistributedVirtualSwitch") {
		s, ok := e.(*simulator.DistributedVirtualSwitch)
		if !ok || s.Uuid != p.SwitchUuid {
			continue
		}
		member, group := false, false
		simulator.Map.WithLock(s, func() {
			for _, m := range s.Summary.HostMember {
				member = member || m == host
			}
			for _, pg := range s.Portgroup {
				group = group || pg.Value == p.PortgroupKey
			}
		})
		return member && group
	}
	return false
}

func badPort() types.BaseMethodFault {
	return &types.InvalidArgument{InvalidProperty: "nic.distributedVirtualPort"}
}

func (s *hostNetworkSystem) AddVirtualNic(req *types.AddVirtualNic) soap.HasFault {
	r := &methods.AddVirtualNicBody{}
	h := s.host()
	switch {
	case h == nil:
		r.Fault_ = simulator.Fault("", &types.NotFound{})
	case req.Portgroup != "":
		r.Fault_ = simulator.Fault("the lab adds VMkernel adapters to distributed port groups only",
			&types.NotSupported{})
	case !dvPortOK(h.Self, req.Nic.DistributedVirtualPort):
		r.Fault_ = simulator.Fault("", badPort())
	}
	if r.Fault_ != nil {
		return r
	}
	var device string
	simulator.Map.WithLock(h, func() {
		used := map[string]bool{}
		for _, v := range h.Config.Network.Vnic {
			used[v.Device] = true
		}
		for i := 0; ; i++ {
			if device = fmt.Sprintf("vmk%d", i); !used[device] {
				break
			}
		}
		spec := req.Nic
		nic := types.HostVirtualNic{
			Device: device,
			Key:    "key-vim.host.VirtualNic-" + device,
			Spec:   spec,
		}
		h.Config.Network.Vnic = append(h.Config.Network.Vnic, nic)
		s.NetworkInfo.Vnic = append([]types.HostVirtualNic(nil), h.Config.Network.Vnic...)
	})
	r.Res = &types.AddVirtualNicResponse{Returnval: device}
	return r
}

func (s *hostNetworkSystem) UpdateVirtualNic(req *types.UpdateVirtualNic) soap.HasFault {
	r := &methods.UpdateVirtualNicBody{}
	h := s.host()
	if h == nil {
		r.Fault_ = simulator.Fault("", &types.NotFound{})
		return r
	}
	if p := req.Nic.DistributedVirtualPort; p != nil && !dvPortOK(h.Self, p) {
		r.Fault_ = simulator.Fault("", badPort())
		return r
	}
	found := false
	simulator.Map.WithLock(h, func() {
		for i := range h.Config.Network.Vnic {
			v := &h.Config.Network.Vnic[i]
			if v.Device != req.Device {
				continue
			}
			found = true
			if req.Nic.Ip != nil {
				v.Spec.Ip = req.Nic.Ip
			}
			if req.Nic.DistributedVirtualPort != nil {
				v.Spec.DistributedVirtualPort = req.Nic.DistributedVirtualPort
			}
		}
		s.NetworkInfo.Vnic = append([]types.HostVirtualNic(nil), h.Config.Network.Vnic...)
	})
	if !found {
		r.Fault_ = simulator.Fault("", &types.NotFound{})
		return r
	}
	r.Res = &types.UpdateVirtualNicResponse{}
	return r
}
