// hostconfig.go - the host configuration objects through which vCenter sets
// an ESXi host's PCI passthrough and NTP, as gpuclusterctl does for ESXi 6.x
// hosts (no `esxcli hardware pci pcipassthru` before 7.0, no `esxcli system
// ntp` before 7.0 U1).
//
// vcsim 0.24 copies ESX's configManager into every HostSystem, so each host
// names "ha-pcipassthrusystem", "dateTimeSystem" and "serviceSystem", but
// none of the three is in simulator.Map: a call on them answers
// ManagedObjectNotFound.  wireHostConfig gives every host its own three
// objects ("pciPassthruSystem-host-21", ...; the host's configManager
// pointing at them) and
// its config a dateTimeInfo (UTC, no NTP server: an unconfigured host).
// Their methods change the host's own config, which RetrievePropertiesEx
// reads, as vCenter's do (vSphere Web Services API reference, all since
// API 4.0; none is a task):
//
//   - HostPciPassthruSystem.UpdatePassthruConfig(config[]): each entry's
//     passthruEnabled goes to config.pciPassthruInfo of that id.  On vCenter
//     passthruActive follows at the host's next reboot; the lab's hosts
//     reboot in the ESXi simulator (tests/sim/esxi_sim.py), which vcsim
//     does not hear of, so here passthruActive follows at once (the one
//     liberty taken: QueryConfigTarget then offers the device, as vCenter
//     does once the planned reboot is done).  An id the host does not
//     list, or a device not passthruCapable, answers InvalidArgument
//     naming it and changes nothing.
//   - HostDateTimeSystem.UpdateDateTimeConfig(config): ntpConfig.server
//     replaces config.dateTimeInfo.ntpConfig.server; timeZone, when given,
//     the time zone's key.
//   - HostServiceSystem.UpdateServicePolicy(id, policy), StartService(id),
//     RestartService(id), StopService(id): the config.service entry keyed
//     id (policy "on", "off" or "automatic"; running true/false).  An
//     unknown id answers NotFound.
//
// With -host-calls FILE every call of these methods is appended to FILE as
// it arrived, one line each: the method's element of the SOAP body, so a
// test asserts the exact body a client sent (fidelity.go calls
// logHostCall before vcsim runs it).  -dvs-calls FILE does the same for
// the distributed switch calls (CreateDVS_Task, ReconfigureDvs_Task).
package main

import (
	"bytes"
	"log"
	"os"
	"regexp"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

var (
	hostCallsFile string // -host-calls
	dvsCallsFile  string // -dvs-calls
	hostCallsMu   sync.Mutex
	hostMethods   = map[string]bool{"UpdatePassthruConfig": true, "UpdateDateTimeConfig": true,
		"UpdateServicePolicy": true, "StartService": true, "RestartService": true,
		"StopService": true}
	dvsMethods = map[string]bool{"CreateDVS_Task": true, "ReconfigureDvs_Task": true}
	soapBodyRe = regexp.MustCompile(`(?s)<(?:[A-Za-z0-9_]+:)?Body[^>]*>(.*)</(?:[A-Za-z0-9_]+:)?Body>`)
)

// logHostCall appends the method element of a host configuration call to
// -host-calls, of a distributed switch call to -dvs-calls.
func logHostCall(method string, body []byte) {
	file := ""
	if hostMethods[method] {
		file = hostCallsFile
	} else if dvsMethods[method] {
		file = dvsCallsFile
	}
	if file == "" {
		return
	}
	inner := body
	if m := soapBodyRe.FindSubmatch(body); m != nil {
		inner = m[1]
	}
	inner = bytes.TrimSpace(bytes.ReplaceAll(inner, []byte("\n"), nil))
	hostCallsMu.Lock()
	defer hostCallsMu.Unlock()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Printf("vcsim: %s: %v", file, err)
		return
	}
	_, _ = f.Write(append(inner, '\n'))
	_ = f.Close()
}

type pciPassthruSystem struct {
	mo.HostPciPassthruSystem
	host types.ManagedObjectReference
}

type dateTimeSystem struct {
	mo.HostDateTimeSystem
	host types.ManagedObjectReference
}

type serviceSystem struct {
	mo.HostServiceSystem
	host types.ManagedObjectReference
}

// wireHostConfig gives each host its own passthrough, date/time and service systems.
func wireHostConfig() {
	for _, e := range simulator.Map.All("HostSystem") {
		h := e.(*simulator.HostSystem)
		simulator.Map.WithLock(h, func() {
			// the types vCenter names them by: the SOAP _this carries them
			ref := func(t, prefix string) types.ManagedObjectReference {
				return types.ManagedObjectReference{Type: t, Value: prefix + "-" + h.Self.Value}
			}
			p := &pciPassthruSystem{host: h.Self}
			p.Self = ref("HostPciPassthruSystem", "pciPassthruSystem")
			d := &dateTimeSystem{host: h.Self}
			d.Self = ref("HostDateTimeSystem", "dateTimeSystem")
			v := &serviceSystem{host: h.Self}
			v.Self = ref("HostServiceSystem", "serviceSystem")
			pt := simulator.Map.Put(p).Reference()
			dt := simulator.Map.Put(d).Reference()
			sv := simulator.Map.Put(v).Reference()
			h.ConfigManager.PciPassthruSystem = &pt
			h.ConfigManager.DateTimeSystem = &dt
			h.ConfigManager.ServiceSystem = &sv
			if h.Config != nil && h.Config.DateTimeInfo == nil {
				h.Config.DateTimeInfo = &types.HostDateTimeInfo{
					TimeZone:  types.HostDateTimeSystemTimeZone{Key: "UTC", Name: "UTC", GmtOffset: 0},
					NtpConfig: &types.HostNtpConfig{},
				}
			}
		})
	}
}

// onHost runs f on the host's config under the host's lock.
func onHost(ref types.ManagedObjectReference, f func(*types.HostConfigInfo)) {
	h, ok := simulator.Map.Get(ref).(*simulator.HostSystem)
	if !ok || h.Config == nil {
		return
	}
	simulator.Map.WithLock(h, func() { f(h.Config) })
}

func (s *pciPassthruSystem) UpdatePassthruConfig(req *types.UpdatePassthruConfig) soap.HasFault {
	body := &methods.UpdatePassthruConfigBody{}
	var bad string
	onHost(s.host, func(cfg *types.HostConfigInfo) {
		find := func(id string) *types.HostPciPassthruInfo {
			for _, p := range cfg.PciPassthruInfo {
				if info := p.GetHostPciPassthruInfo(); info.Id == id {
					return info
				}
			}
			return nil
		}
		for _, c := range req.Config {
			pc := c.GetHostPciPassthruConfig()
			if info := find(pc.Id); info == nil || !info.PassthruCapable {
				bad = pc.Id
				return
			}
		}
		for _, c := range req.Config {
			pc := c.GetHostPciPassthruConfig()
			info := find(pc.Id)
			info.PassthruEnabled = pc.PassthruEnabled
			info.PassthruActive = pc.PassthruEnabled
		}
	})
	if bad != "" {
		body.Fault_ = simulator.Fault("A specified parameter was not correct: "+bad,
			&types.InvalidArgument{InvalidProperty: bad})
		return body
	}
	body.Res = &types.UpdatePassthruConfigResponse{}
	return body
}

func (s *dateTimeSystem) UpdateDateTimeConfig(req *types.UpdateDateTimeConfig) soap.HasFault {
	onHost(s.host, func(cfg *types.HostConfigInfo) {
		info := cfg.DateTimeInfo
		if info == nil {
			info = &types.HostDateTimeInfo{}
			cfg.DateTimeInfo = info
		}
		if req.Config.NtpConfig != nil {
			info.NtpConfig = &types.HostNtpConfig{Server: append([]string(nil), req.Config.NtpConfig.Server...)}
		}
		if req.Config.TimeZone != "" {
			info.TimeZone.Key = req.Config.TimeZone
		}
	})
	return &methods.UpdateDateTimeConfigBody{Res: &types.UpdateDateTimeConfigResponse{}}
}

// withService runs f on the config.service entry keyed id; false when the host has none.
func (s *serviceSystem) withService(id string, f func(*types.HostService)) bool {
	found := false
	onHost(s.host, func(cfg *types.HostConfigInfo) {
		if cfg.Service == nil {
			return
		}
		for i := range cfg.Service.Service {
			if cfg.Service.Service[i].Key == id {
				f(&cfg.Service.Service[i])
				found = true
				return
			}
		}
	})
	return found
}

func notFound(id string) *soap.Fault {
	return simulator.Fault("The object or item referred to could not be found: "+id, &types.NotFound{})
}

func (s *serviceSystem) UpdateServicePolicy(req *types.UpdateServicePolicy) soap.HasFault {
	body := &methods.UpdateServicePolicyBody{}
	switch types.HostServicePolicy(req.Policy) {
	case types.HostServicePolicyOn, types.HostServicePolicyOff, types.HostServicePolicyAutomatic:
	default:
		body.Fault_ = simulator.Fault("A specified parameter was not correct: policy",
			&types.InvalidArgument{InvalidProperty: "policy"})
		return body
	}
	if !s.withService(req.Id, func(svc *types.HostService) { svc.Policy = req.Policy }) {
		body.Fault_ = notFound(req.Id)
		return body
	}
	body.Res = &types.UpdateServicePolicyResponse{}
	return body
}

func (s *serviceSystem) StartService(req *types.StartService) soap.HasFault {
	body := &methods.StartServiceBody{}
	if !s.withService(req.Id, func(svc *types.HostService) { svc.Running = true }) {
		body.Fault_ = notFound(req.Id)
		return body
	}
	body.Res = &types.StartServiceResponse{}
	return body
}

func (s *serviceSystem) RestartService(req *types.RestartService) soap.HasFault {
	body := &methods.RestartServiceBody{}
	if !s.withService(req.Id, func(svc *types.HostService) { svc.Running = true }) {
		body.Fault_ = notFound(req.Id)
		return body
	}
	body.Res = &types.RestartServiceResponse{}
	return body
}

func (s *serviceSystem) StopService(req *types.StopService) soap.HasFault {
	body := &methods.StopServiceBody{}
	if !s.withService(req.Id, func(svc *types.HostService) { svc.Running = false }) {
		body.Fault_ = notFound(req.Id)
		return body
	}
	body.Res = &types.StopServiceResponse{}
	return body
}
