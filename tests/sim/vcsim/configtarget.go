// configtarget.go - EnvironmentBrowser.QueryConfigTarget with the hosts'
// PCI devices, as vCenter answers it.
//
// vcsim 0.24's QueryConfigTarget fills CPUs, datastores and networks but
// never pciPassthrough, sriov or sharedGpuPassthroughTypes, which is where a
// client finds the systemId of a static DirectPath backing, the SR-IOV
// physical functions and the vGPU profiles a VM can use.
//
// The simulator dispatches a SOAP call by reflection on the object stored
// under the call's _this in simulator.Map (simulator.go call(), registry.go
// Put()), and no vcsim code type-asserts an EnvironmentBrowser outside
// model.go.  So each compute resource's browser is replaced, under the same
// managed object reference, by envBrowser: it embeds vcsim's browser (every
// other method and property stays vcsim's) and its QueryConfigTarget calls
// the original, then appends for the requested host (req.host; all hosts of
// the compute resource when unset):
//
//   - pciPassthrough: a VirtualMachinePciPassthroughInfo per device whose
//     passthrough is enabled and active (SR-IOV physical functions are not
//     passthrough devices), name = the PCI id, pciDevice = the host's
//     hardware.pciDevice entry (only the id when the host has none, as
//     with -host-gpus), systemId = the host's
//     hardware.systemInfo.uuid;
//   - sriov: a VirtualMachineSriovInfo per SR-IOV physical function with
//     SR-IOV enabled, virtualFunction false, pnic = its vmnic name;
//   - sharedGpuPassthroughTypes: one entry per config.sharedPassthruGpuTypes
//     profile (name = vgpu = the profile), each profile once.
package main

import (
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

type envBrowser struct {
	*simulator.EnvironmentBrowser
}

// wrapEnvironmentBrowsers replaces every compute resource's browser.
func wrapEnvironmentBrowsers() {
	var refs []*types.ManagedObjectReference
	for _, e := range simulator.Map.All("ClusterComputeResource") {
		refs = append(refs, e.(*simulator.ClusterComputeResource).EnvironmentBrowser)
	}
	for _, e := range simulator.Map.All("ComputeResource") {
		if cr, ok := e.(*mo.ComputeResource); ok {
			refs = append(refs, cr.EnvironmentBrowser)
		}
	}
	for _, ref := range refs {
		if ref == nil {
			continue
		}
		if b, ok := simulator.Map.Get(*ref).(*simulator.EnvironmentBrowser); ok {
			simulator.Map.Put(&envBrowser{b})
		}
	}
}

// browserHosts are the hosts of the compute resource that owns browser.
func browserHosts(browser types.ManagedObjectReference) []types.ManagedObjectReference {
	for _, e := range simulator.Map.All("ClusterComputeResource") {
		cr := e.(*simulator.ClusterComputeResource)
		if cr.EnvironmentBrowser != nil && *cr.EnvironmentBrowser == browser {
			return cr.Host
		}
	}
	for _, e := range simulator.Map.All("ComputeResource") {
		if cr, ok := e.(*mo.ComputeResource); ok && cr.EnvironmentBrowser != nil && *cr.EnvironmentBrowser == browser {
			return cr.Host
		}
	}
	return nil
}

func (b *envBrowser) QueryConfigTarget(ctx *simulator.Context, req *types.QueryConfigTarget) soap.HasFault {
	res := b.EnvironmentBrowser.QueryConfigTarget(ctx, req)
	body, ok := res.(*methods.QueryConfigTargetBody)
	if !ok || body.Fault_ != nil || body.Res == nil || body.Res.Returnval == nil {
		return res
	}
	target := body.Res.Returnval
	hosts := browserHosts(b.Self)
	if req.Host != nil {
		hosts = []types.ManagedObjectReference{*req.Host}
	}
	seenVgpu := map[string]bool{}
	for _, ref := range hosts {
		h, ok := simulator.Map.Get(ref).(*simulator.HostSystem)
		if !ok || h.Config == nil || h.Hardware == nil {
			continue
		}
		simulator.Map.WithLock(h, func() {
			appendHostTargets(target, h, seenVgpu)
		})
	}
	return body
}

func appendHostTargets(target *types.ConfigTarget, h *simulator.HostSystem, seenVgpu map[string]bool) {
	devices := map[string]types.HostPciDevice{}
	for _, d := range h.Hardware.PciDevice {
		devices[d.Id] = d
	}
	pnics := map[string]string{}
	if h.Config.Network != nil {
		for _, n := range h.Config.Network.Pnic {
			pnics[n.Pci] = n.Device
		}
	}
	systemID := h.Hardware.SystemInfo.Uuid
	for _, bi := range h.Config.PciPassthruInfo {
		id := bi.GetHostPciPassthruInfo().Id
		dev, ok := devices[id]
		if !ok {
			dev = types.HostPciDevice{Id: id} // -host-gpus names no hardware
		}
		info := types.VirtualMachinePciPassthroughInfo{
			VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: dev.Id},
			PciDevice:                dev,
			SystemId:                 systemID,
		}
		switch p := bi.(type) {
		case *types.HostSriovInfo:
			if p.SriovEnabled && p.SriovActive {
				target.Sriov = append(target.Sriov, types.VirtualMachineSriovInfo{
					VirtualMachinePciPassthroughInfo: info,
					VirtualFunction:                  false,
					Pnic:                             pnics[dev.Id],
				})
			}
		case *types.HostPciPassthruInfo:
			if p.PassthruEnabled && p.PassthruActive {
				target.PciPassthrough = append(target.PciPassthrough, &info)
			}
		}
	}
	for _, v := range h.Config.SharedPassthruGpuTypes {
		if seenVgpu[v] {
			continue
		}
		seenVgpu[v] = true
		target.SharedGpuPassthroughTypes = append(target.SharedGpuPassthroughTypes,
			types.VirtualMachinePciSharedGpuPassthroughInfo{
				VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: v},
				Vgpu:                     v,
			})
	}
}
