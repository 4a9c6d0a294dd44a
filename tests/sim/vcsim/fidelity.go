// fidelity.go - the /sdk handler in front of vcsim's: fault injection
// (faults.go) and the fixes that make vcsim 0.24 answer as vCenter does
// where the driver depends on it.
//
// vcsim runs every task before it replies, so when vcsim's reply names a
// Task that task has ended; a fix runs after a successful task and changes
// the objects under their simulator lock, with simulator.Map.Update so
// property collector waiters see the change.  Each fix, and why:
//
//   - ReconfigVM_Task, CloneVM_Task, extraConfig: vCenter replaces the
//     entry with the same key and removes a key whose new value is empty;
//     vcsim appends every entry.  After the task the VM's extraConfig is
//     rewritten to vCenter's result: entries in order, one per key, a later
//     value replacing an earlier one in place, an empty (or missing) value
//     removing the key.
//   - CloneVM_Task: vcsim puts the clone on the template's host and
//     ignores spec.location.host, spec.config other than extraConfig and
//     deviceChange, and spec.powerOn; it also starts the clone's firmware
//     from its own default (bios), where vCenter copies the source's.
//     After the task the clone moves to the requested host (runtime.host,
//     summary.runtime.host and both hosts' vm lists), gets its source's
//     firmware and then the rest of spec.config (CPUs, memory, firmware,
//     the reservation lock, ...) with ReconfigVM_Tasks of its own, and is
//     powered on when asked.
//   - RelocateVM_Task: vcsim changes runtime.host but leaves the VM in the
//     old host's vm list; it is moved.
//   - CreateDVS_Task: vcsim drops VMwareDVSConfigSpec.maxMtu and the host
//     members of the spec.  After the task the members are added (by
//     vcsim's own ReconfigureDvs_Task, so hosts and port groups are wired as
//     vcsim wires them), config.maxMtu is what was asked (1500 when unset,
//     vCenter's default), config.host lists each member with its pnic
//     backing, and configVersion is "1".
//   - ReconfigureDvs_Task: vcsim keeps summary.hostMember only, refuses an
//     "edit" of a member (NotSupported) and drops maxMtu.  Edits of current
//     members are taken out of the body handed to vcsim; after the task
//     config.host gets each add, edit (new backing) and remove, maxMtu
//     changes when the spec sets it, and configVersion goes up by one.
//     vcsim does not check the spec's configVersion, vCenter does.
//   - A distributed port backing (ReconfigVM_Task, CloneVM_Task,
//     CreateVM_Task): vcsim wants every host of the cluster in the switch,
//     vCenter the VM's host (widenSwitches).
package main

import (
	"bytes"
	"context"
	"io"
	"io/ioutil"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

const maxBody = 64 << 20

type sdkHandler struct {
	inner  http.Handler
	faults *faultBook
	client *vim25.Client // in-process, for the follow-up calls of a fix
}

func newSdkHandler(inner http.Handler, faultsFile string, c *vim25.Client) *sdkHandler {
	return &sdkHandler{inner: inner, faults: &faultBook{file: faultsFile}, client: c}
}

func (h *sdkHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/sdk") {
		h.inner.ServeHTTP(w, r)
		return
	}
	body, err := ioutil.ReadAll(io.LimitReader(r.Body, maxBody+1))
	_ = r.Body.Close()
	if err != nil || len(body) > maxBody {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	sent := body // as the client sent it, for -host-calls and -dvs-calls
	body = bytes.Replace(body, []byte(`type="VmwareDistributedVirtualSwitch"`), []byte(`type="DistributedVirtualSwitch"`), -1)
	body = bytes.Replace(body, []byte(`<type>VmwareDistributedVirtualSwitch</type>`), []byte(`<type>DistributedVirtualSwitch</type>`), -1)
	r.Body = ioutil.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	tw := &dvsTypeWriter{ResponseWriter: w}
	w = tw
	defer tw.flush()
	m, err := simulator.UnmarshalBody(types.TypeFunc(), body)
	if err != nil {
		h.inner.ServeHTTP(w, r) // vcsim answers with its own fault
		return
	}
	logHostCall(m.Name, sent) // -host-calls, -dvs-calls (hostconfig.go)
	handled, rule := h.faults.inject(w, r, h.inner, m, body)
	if handled {
		return
	}
	drop := ""
	if rule != nil {
		drop = rule.Drop
	}
	if drop == "before" {
		tw.abort()
	}
	if drop == "mid" {
		tw.truncate = true
	}
	if rule != nil && len(rule.Replace) == 2 {
		tw.replace = rule.Replace
	}
	if drop == "after" && rule.TaskMs > 0 && strings.HasSuffix(m.Name, "_Task") {
		h.later(r, body, m, time.Duration(rule.TaskMs)*time.Millisecond)
		tw.abort()
	}
	if servePaging(w, r, h.inner, m) { // -paging (paging.go)
		if drop == "after" {
			tw.abort()
		}
		return
	}
	switch m.Name {
	case "CreateDVS_Task", "ReconfigureDvs_Task", "AddDVPortgroup_Task", "ReconfigureDVPortgroup_Task",
		"Destroy_Task":
		// switches change one call at a time, never while widened
		widenMu.Lock()
		defer widenMu.Unlock()
	}
	var post func(*simulator.Task)
	switch req := m.Body.(type) {
	case *types.ReconfigVM_Task:
		post = func(*simulator.Task) { normalizeExtraConfig(req.This) }
	case *types.CloneVM_Task:
		post = func(t *simulator.Task) { h.fixClone(req, t) }
	case *types.RelocateVM_Task:
		post = func(*simulator.Task) { fixRelocate(req) }
	case *types.CreateDVS_Task:
		post = func(t *simulator.Task) { h.fixCreateDVS(req, t) }
	case *types.ReconfigureDvs_Task:
		ops := append([]types.DistributedVirtualSwitchHostMemberConfigSpec(nil),
			req.Spec.GetDVSConfigSpec().Host...)
		if stripEdits(req) {
			if b, err := encodeRequest(&methods.ReconfigureDvs_TaskBody{Req: req}); err == nil {
				r.Body = ioutil.NopCloser(bytes.NewReader(b))
				r.ContentLength = int64(len(b))
			} else {
				log.Printf("vcsim: ReconfigureDvs_Task: re-encoding: %v", err)
			}
		}
		post = func(*simulator.Task) { fixReconfigureDvs(req, ops) }
	}
	if restore := widenSwitches(m, body); restore != nil {
		defer restore()
	}
	if post == nil && drop == "" {
		h.inner.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	h.inner.ServeHTTP(rec, r)
	if rec.Code == http.StatusOK && post != nil {
		if t := finishedTask(rec.Body.Bytes()); t != nil {
			post(t)
		}
	}
	if drop == "after" {
		tw.abort() // done, and the reply is lost
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// later carries out a call whose reply was lost (-faults "task_ms") after d,
// with a task of its name running on the entity until then: in the
// entity's recentTask, as vCenter lists the tasks that operate on it.  Only
// the call itself runs (no fix-ups: the rule is for ReconfigVM_Task).
func (h *sdkHandler) later(r *http.Request, body []byte, m *simulator.Method, d time.Duration) {
	obj := simulator.Map.Get(m.This)
	id := strings.TrimSuffix(m.Name, "_Task")
	id = strings.ToLower(id[:1]) + id[1:]
	task := simulator.CreateTask(obj, id, func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		return nil, nil
	})
	simulator.Map.Update(task, []types.PropertyChange{
		{Name: "info.state", Val: types.TaskInfoStateRunning},
		{Name: "info.entityName", Val: entityName(m.This)},
	})
	setRecentTask(m.This, task.Self, true)
	req := httptest.NewRequest(http.MethodPost, r.URL.String(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	go func() {
		time.Sleep(d)
		rec := httptest.NewRecorder()
		h.inner.ServeHTTP(rec, req)
		state := types.TaskInfoStateSuccess
		if rec.Code != http.StatusOK || finishedTask(rec.Body.Bytes()) == nil {
			state = types.TaskInfoStateError
		}
		simulator.Map.Update(task, []types.PropertyChange{{Name: "info.state", Val: state}})
		setRecentTask(m.This, task.Self, false)
	}()
}

// setRecentTask adds the task to, or takes it from, the entity's recentTask.
func setRecentTask(ref, task types.ManagedObjectReference, add bool) {
	obj := simulator.Map.Get(ref)
	e, ok := obj.(mo.Entity)
	if !ok {
		return
	}
	simulator.Map.WithLock(obj, func() {
		var list []types.ManagedObjectReference
		for _, t := range e.Entity().RecentTask {
			if t != task {
				list = append(list, t)
			}
		}
		if add {
			list = append(list, task)
		}
		simulator.Map.Update(obj, []types.PropertyChange{{Name: "recentTask", Val: list}})
	})
}

// dvsTypeWriter keeps the reply until it is complete and then gives
// distributed switches vCenter's type: vcsim files them as
// "DistributedVirtualSwitch", vCenter's are "VmwareDistributedVirtualSwitch"
// (morefs, type="..." attributes; xsi:type is left alone).  Requests get
// the reverse, in morefs and in property and view specs' <type> (ServeHTTP),
// so a client may use either name.
type dvsTypeWriter struct {
	http.ResponseWriter
	buf      bytes.Buffer
	code     int
	dropped  bool
	truncate bool     // -faults "drop": "mid"
	replace  []string // -faults "replace": [from, to]
}

func (d *dvsTypeWriter) WriteHeader(code int) { d.code = code }

func (d *dvsTypeWriter) Write(b []byte) (int, error) { return d.buf.Write(b) }

var dvsType = regexp.MustCompile(`(\s)type="DistributedVirtualSwitch"`)

// abort closes the connection without a reply (-faults "drop"): net/http
// ends a handler that panics with ErrAbortHandler by closing the
// connection (HTTP/1.1) or resetting the stream (HTTP/2), quietly.
func (d *dvsTypeWriter) abort() {
	d.dropped = true
	panic(http.ErrAbortHandler)
}

func (d *dvsTypeWriter) flush() {
	if d.dropped {
		return
	}
	out := d.buf.Bytes()
	if bytes.Contains(out, []byte(`type="DistributedVirtualSwitch"`)) {
		out = dvsType.ReplaceAll(out, []byte(`${1}type="VmwareDistributedVirtualSwitch"`))
	}
	if d.code == 0 {
		d.code = http.StatusOK
	}
	if len(d.replace) == 2 {
		out = bytes.Replace(out, []byte(d.replace[0]), []byte(d.replace[1]), 1)
	}
	if d.truncate {
		// the whole length announced, half the bytes sent, then the
		// connection closed: a reply that breaks mid-way
		d.ResponseWriter.Header().Set("Content-Length", strconv.Itoa(len(out)))
		d.ResponseWriter.WriteHeader(d.code)
		_, _ = d.ResponseWriter.Write(out[:len(out)/2])
		if f, ok := d.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	d.ResponseWriter.Header().Del("Content-Length")
	d.ResponseWriter.WriteHeader(d.code)
	_, _ = d.ResponseWriter.Write(out)
}

var taskRef = regexp.MustCompile(`<returnval type="Task">([^<]+)</returnval>`)

// finishedTask is the task a reply names, when it ended successfully.
func finishedTask(reply []byte) *simulator.Task {
	m := taskRef.FindSubmatch(reply)
	if m == nil {
		return nil
	}
	t, ok := simulator.Map.Get(types.ManagedObjectReference{Type: "Task", Value: string(m[1])}).(*simulator.Task)
	if !ok {
		return nil
	}
	var state types.TaskInfoState
	simulator.Map.WithLock(t, func() { state = t.Info.State })
	if state != types.TaskInfoStateSuccess {
		return nil
	}
	return t
}

func encodeRequest(body interface{}) ([]byte, error) {
	b, err := xml.Marshal(soap.Envelope{Body: body})
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), b...), nil
}

// ---------------------------------------------------------------- extraConfig

func optionString(v types.AnyType) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return "x" // any non-string value is not empty
	}
}

// vcenterExtraConfig applies the entries in order with vCenter's rules.
func vcenterExtraConfig(in []types.BaseOptionValue) []types.BaseOptionValue {
	var out []types.BaseOptionValue
	at := map[string]int{}
	for _, o := range in {
		v := o.GetOptionValue()
		i, seen := at[v.Key]
		switch {
		case optionString(v.Value) == "" && seen:
			out = append(out[:i], out[i+1:]...)
			delete(at, v.Key)
			for k, j := range at {
				if j > i {
					at[k] = j - 1
				}
			}
		case optionString(v.Value) == "":
		case seen:
			out[i] = o
		default:
			at[v.Key] = len(out)
			out = append(out, o)
		}
	}
	return out
}

func normalizeExtraConfig(ref types.ManagedObjectReference) {
	vm, ok := simulator.Map.Get(ref).(*simulator.VirtualMachine)
	if !ok {
		return
	}
	simulator.Map.WithLock(vm, func() {
		if vm.Config == nil {
			return
		}
		simulator.Map.Update(vm, []types.PropertyChange{
			{Name: "config.extraConfig", Val: vcenterExtraConfig(vm.Config.ExtraConfig)},
		})
	})
}

// ---------------------------------------------------------------- clone, relocate

// placeVM puts vm on host: its runtime and the hosts' vm lists.
func placeVM(vmRef, hostRef types.ManagedObjectReference) {
	vm, ok := simulator.Map.Get(vmRef).(*simulator.VirtualMachine)
	if !ok {
		return
	}
	if _, ok := simulator.Map.Get(hostRef).(*simulator.HostSystem); !ok {
		return
	}
	simulator.Map.WithLock(vm, func() {
		simulator.Map.Update(vm, []types.PropertyChange{
			{Name: "runtime.host", Val: hostRef},
			{Name: "summary.runtime.host", Val: hostRef},
		})
	})
	for _, e := range simulator.Map.All("HostSystem") {
		h := e.(*simulator.HostSystem)
		if h.Self == hostRef {
			simulator.Map.AddReference(h, &h.Vm, vmRef)
		} else {
			simulator.Map.RemoveReference(h, &h.Vm, vmRef)
		}
	}
}

func fixRelocate(req *types.RelocateVM_Task) {
	if req.Spec.Host != nil {
		placeVM(req.This, *req.Spec.Host)
	}
}

func (h *sdkHandler) fixClone(req *types.CloneVM_Task, t *simulator.Task) {
	ref, ok := t.Info.Result.(types.ManagedObjectReference)
	if !ok {
		return
	}
	normalizeExtraConfig(ref)
	if req.Spec.Location.Host != nil {
		placeVM(ref, *req.Spec.Location.Host)
	}
	if req.Spec.Template {
		return
	}
	ctx := context.Background()
	vm := object.NewVirtualMachine(h.client, ref)
	if src, ok := simulator.Map.Get(req.This).(*simulator.VirtualMachine); ok && src.Config.Firmware != "" {
		spec := types.VirtualMachineConfigSpec{Firmware: src.Config.Firmware}
		if task, err := vm.Reconfigure(ctx, spec); err != nil {
			log.Printf("vcsim: CloneVM_Task %s: firmware: %v", req.Name, err)
		} else if err := task.Wait(ctx); err != nil {
			log.Printf("vcsim: CloneVM_Task %s: firmware: %v", req.Name, err)
		}
	}
	if req.Spec.Config != nil {
		spec := *req.Spec.Config
		spec.ExtraConfig = nil  // applied by vcsim's clone
		spec.DeviceChange = nil // likewise
		spec.Name = ""
		if task, err := vm.Reconfigure(ctx, spec); err != nil {
			log.Printf("vcsim: CloneVM_Task %s: config: %v", req.Name, err)
		} else if err := task.Wait(ctx); err != nil {
			log.Printf("vcsim: CloneVM_Task %s: config: %v", req.Name, err)
		}
	}
	if req.Spec.PowerOn {
		if task, err := vm.PowerOn(ctx); err != nil {
			log.Printf("vcsim: CloneVM_Task %s: power on: %v", req.Name, err)
		} else if err := task.Wait(ctx); err != nil {
			log.Printf("vcsim: CloneVM_Task %s: power on: %v", req.Name, err)
		}
	}
}

// ---------------------------------------------------------------- distributed switches

var switchUUID = regexp.MustCompile(`<switchUuid>([^<]+)</switchUuid>`)

// widenMu: one widened call, or one call that changes a switch, at a time
// (see widenSwitches and ServeHTTP).
var widenMu sync.Mutex

// widenSwitches works around vcsim's check of a distributed port backing,
// which wants every host of the VM's cluster to be a member of the switch;
// vCenter wants the VM's host to be one.  When the VM's host is a member,
// the switch's summary.hostMember is widened to the whole cluster for the
// duration of the call, and the returned func restores it.  nil: nothing
// to do.
func widenSwitches(m *simulator.Method, body []byte) func() {
	ids := switchUUID.FindAllSubmatch(body, -1)
	var host *types.ManagedObjectReference
	switch req := m.Body.(type) {
	case *types.ReconfigVM_Task:
		if vm, ok := simulator.Map.Get(req.This).(*simulator.VirtualMachine); ok {
			simulator.Map.WithLock(vm, func() { host = vm.Runtime.Host })
		}
	case *types.CloneVM_Task:
		host = req.Spec.Location.Host
		if vm, ok := simulator.Map.Get(req.This).(*simulator.VirtualMachine); ok {
			simulator.Map.WithLock(vm, func() {
				if host == nil {
					host = vm.Runtime.Host
				}
				for _, d := range vm.Config.Hardware.Device {
					if b, ok := d.GetVirtualDevice().Backing.(*types.VirtualEthernetCardDistributedVirtualPortBackingInfo); ok {
						ids = append(ids, [][]byte{nil, []byte(b.Port.SwitchUuid)})
					}
				}
			})
		}
	case *types.CreateVM_Task:
		host = req.Host
	}
	if host == nil || len(ids) == 0 {
		return nil
	}
	h, ok := simulator.Map.Get(*host).(*simulator.HostSystem)
	if !ok {
		return nil
	}
	var cluster []types.ManagedObjectReference
	switch cr := simulator.Map.Get(*h.Parent).(type) {
	case *simulator.ClusterComputeResource:
		simulator.Map.WithLock(cr, func() { cluster = append(cluster, cr.Host...) })
	default:
		return nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[string(id[1])] = true
	}
	widenMu.Lock()
	var undo []func()
	for _, e := range simulator.Map.All("DistributedVirtualSwitch") {
		dvs := e.(*simulator.DistributedVirtualSwitch)
		simulator.Map.WithLock(dvs, func() {
			if !want[dvs.Uuid] || simulator.FindReference(dvs.Summary.HostMember, *host) == nil {
				return
			}
			orig := dvs.Summary.HostMember
			wide := append([]types.ManagedObjectReference(nil), orig...)
			for _, ref := range cluster {
				if simulator.FindReference(wide, ref) == nil {
					wide = append(wide, ref)
				}
			}
			dvs.Summary.HostMember = wide
			undo = append(undo, func() {
				simulator.Map.WithLock(dvs, func() { dvs.Summary.HostMember = orig })
			})
		})
	}
	return func() {
		for _, f := range undo {
			f()
		}
		widenMu.Unlock()
	}
}

func dvsOf(ref types.ManagedObjectReference) *simulator.DistributedVirtualSwitch {
	dvs, _ := simulator.Map.Get(ref).(*simulator.DistributedVirtualSwitch)
	return dvs
}

func member(dvs *simulator.DistributedVirtualSwitch, op types.DistributedVirtualSwitchHostMemberConfigSpec) types.DistributedVirtualSwitchHostMember {
	host := op.Host
	return types.DistributedVirtualSwitchHostMember{
		Config: types.DistributedVirtualSwitchHostMemberConfigInfo{
			Host:                 &host,
			MaxProxySwitchPorts:  op.MaxProxySwitchPorts,
			VendorSpecificConfig: op.VendorSpecificConfig,
			Backing:              op.Backing,
		},
		ProductInfo: dvs.Summary.ProductInfo,
		Status:      "up",
	}
}

// applyMembers applies the host operations to config.host.
func applyMembers(dvs *simulator.DistributedVirtualSwitch, cfg *types.DVSConfigInfo, ops []types.DistributedVirtualSwitchHostMemberConfigSpec) {
	find := func(host types.ManagedObjectReference) int {
		for i := range cfg.Host {
			if cfg.Host[i].Config.Host != nil && *cfg.Host[i].Config.Host == host {
				return i
			}
		}
		return -1
	}
	for _, op := range ops {
		i := find(op.Host)
		switch types.ConfigSpecOperation(op.Operation) {
		case types.ConfigSpecOperationAdd:
			if i < 0 {
				cfg.Host = append(cfg.Host, member(dvs, op))
			}
		case types.ConfigSpecOperationEdit:
			if i >= 0 {
				if op.Backing != nil {
					cfg.Host[i].Config.Backing = op.Backing
				}
				if op.MaxProxySwitchPorts != 0 {
					cfg.Host[i].Config.MaxProxySwitchPorts = op.MaxProxySwitchPorts
				}
			}
		case types.ConfigSpecOperationRemove:
			if i >= 0 {
				cfg.Host = append(cfg.Host[:i], cfg.Host[i+1:]...)
			}
		}
	}
}

// stripEdits takes the edits of current members out of req (vcsim refuses
// them); true when something was taken out.
func stripEdits(req *types.ReconfigureDvs_Task) bool {
	dvs := dvsOf(req.This)
	if dvs == nil {
		return false
	}
	spec := req.Spec.GetDVSConfigSpec()
	var members []types.ManagedObjectReference
	simulator.Map.WithLock(dvs, func() {
		members = append(members, dvs.Summary.HostMember...)
	})
	var keep []types.DistributedVirtualSwitchHostMemberConfigSpec
	for _, op := range spec.Host {
		if types.ConfigSpecOperation(op.Operation) == types.ConfigSpecOperationEdit &&
			simulator.FindReference(members, op.Host) != nil {
			continue
		}
		keep = append(keep, op)
	}
	if len(keep) == len(spec.Host) {
		return false
	}
	spec.Host = keep
	return true
}

func setDvsConfig(dvs *simulator.DistributedVirtualSwitch, spec types.BaseDVSConfigSpec,
	ops []types.DistributedVirtualSwitchHostMemberConfigSpec, create bool) {
	simulator.Map.WithLock(dvs, func() {
		if dvs.Config == nil {
			return
		}
		cfg := dvs.Config.GetDVSConfigInfo()
		applyMembers(dvs, cfg, ops)
		if v, ok := dvs.Config.(*types.VMwareDVSConfigInfo); ok {
			if s, ok := spec.(*types.VMwareDVSConfigSpec); ok && s.MaxMtu != 0 {
				v.MaxMtu = s.MaxMtu
			} else if create {
				v.MaxMtu = 1500
			}
		}
		n, _ := strconv.Atoi(cfg.ConfigVersion)
		cfg.ConfigVersion = strconv.Itoa(n + 1)
		if create {
			cfg.ConfigVersion = "1"
		}
		simulator.Map.Update(dvs, []types.PropertyChange{{Name: "config", Val: dvs.Config}})
	})
}

func (h *sdkHandler) fixCreateDVS(req *types.CreateDVS_Task, t *simulator.Task) {
	ref, ok := t.Info.Result.(types.ManagedObjectReference)
	dvs := dvsOf(ref)
	if !ok || dvs == nil {
		return
	}
	spec := req.Spec.ConfigSpec
	var adds []types.DistributedVirtualSwitchHostMemberConfigSpec
	for _, op := range spec.GetDVSConfigSpec().Host {
		if types.ConfigSpecOperation(op.Operation) == types.ConfigSpecOperationAdd {
			adds = append(adds, op)
		}
	}
	if len(adds) != 0 {
		ctx := context.Background()
		sw := object.NewDistributedVirtualSwitch(h.client, ref)
		task, err := sw.Reconfigure(ctx, &types.DVSConfigSpec{Host: adds})
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			log.Printf("vcsim: CreateDVS_Task %s: adding hosts: %v", dvs.Name, err)
		}
	}
	setDvsConfig(dvs, spec, adds, true)
}

func fixReconfigureDvs(req *types.ReconfigureDvs_Task, ops []types.DistributedVirtualSwitchHostMemberConfigSpec) {
	if dvs := dvsOf(req.This); dvs != nil {
		setDvsConfig(dvs, req.Spec, ops, false)
	}
}
