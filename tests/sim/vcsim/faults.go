// faults.go - injected vCenter faults (-faults FILE), so tests can make one
// VM's task fail the way vCenter fails it.
//
// The file is JSON, read again at every SOAP request; no file (or an empty
// one) means no faults, so a test writes and removes it while vcsim runs:
//
//	{"ReconfigVM_Task": {"worker-03": {"fault": "InvalidDeviceSpec",
//	                                   "message": "Invalid configuration for device '0'."}},
//	 "PowerOnVM_Task":  {"*": {"fault": "InsufficientResourcesFault",
//	                           "message": "...", "times": 1}}}
//
// A call of that method whose _this is the managed entity of that name
// ("*": any) is not handed to vcsim at all, so nothing changes.  For a
// *_Task method an authenticated caller gets a Task at once, as from
// vCenter, and the task ends in error with that fault type and
// info.error.localizedMessage = message (vcsim itself would say the Go
// type name, "*types.InvalidDeviceSpec").  Any other method answers with a
// SOAP fault: faultstring = message, detail of that type.  "times": N
// fires on the first N matching calls after the file was last changed
// (then the call goes through); without it every matching call fails.
// The fault type must be a vim25 fault (a types.BaseMethodFault).
//
// A lost connection instead of a fault:
//
//	{"ReconfigVM_Task": {"worker-03": {"drop": "after", "times": 1,
//	                                   "match": "VirtualPCIPassthroughDeviceBackingInfo"}}}
//
// "drop": "before" closes the connection without handing the call to
// vcsim (nothing changes); "after" lets vcsim carry it out (a task runs to
// its end) and then closes the connection without a reply, the case where
// a client must find out whether its change took.  "match" (any rule)
// narrows the rule to calls whose request body holds that text.
// "drop": "mid" lets the call go through and then sends the first half
// of its reply, under a Content-Length of the whole, and closes the
// connection: a reply that breaks mid-way.
// "replace": [FROM, TO] lets the call go through and replaces the first
// FROM in its reply with TO: a reply vCenter could send that vcsim does
// not (a missingSet on one object of a page).
// "task_ms": N with "drop": "after" on a *_Task method: the connection
// closes at once, and the call is carried out N ms later; meanwhile a
// task of that name runs in the entity's recentTask (as vCenter shows a
// running task), so a client can wait for it instead of sending again.
// "ignore": true on a method that is not a *_Task answers it as done
// without handing it to vcsim: a guest that never acts on ShutdownGuest
// (vCenter answers that call at once; the guest's OS shuts down, or not,
// afterwards; vcsim powers the VM off at once).
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/ioutil"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

type faultRule struct {
	Fault   string   `json:"fault"`
	Message string   `json:"message"`
	Times   int      `json:"times"`
	Drop    string   `json:"drop"`    // "before" | "after" | "mid": close the connection instead
	Match   string   `json:"match"`   // only calls whose body holds this text
	TaskMs  int      `json:"task_ms"` // with drop "after" on a *_Task: the task runs this long
	Replace []string `json:"replace"` // [from, to]: the call goes through, its reply edited
	Ignore  bool     `json:"ignore"`  // not a *_Task: answered as done, vcsim never sees it
}

type faultBook struct {
	file  string
	mu    sync.Mutex
	hash  [32]byte
	fired map[string]int
}

// lookup returns the rule for method on the entity named name, if any, and
// counts it as fired.
func (fb *faultBook) lookup(method, name string, body []byte) (*faultRule, error) {
	if fb.file == "" {
		return nil, nil
	}
	b, err := ioutil.ReadFile(fb.file)
	if os.IsNotExist(err) || (err == nil && len(bytes.TrimSpace(b)) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rules map[string]map[string]faultRule
	if err := json.Unmarshal(b, &rules); err != nil {
		return nil, fmt.Errorf("%s: %v", fb.file, err)
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if h := sha256.Sum256(b); h != fb.hash || fb.fired == nil {
		fb.hash = h
		fb.fired = map[string]int{}
	}
	byName, ok := rules[method]
	if !ok {
		return nil, nil
	}
	key := name
	r, ok := byName[name]
	if !ok {
		if r, ok = byName["*"]; !ok {
			return nil, nil
		}
		key = "*"
	}
	if r.Match != "" && !bytes.Contains(body, []byte(r.Match)) {
		return nil, nil
	}
	id := method + "\x00" + key
	if r.Times > 0 && fb.fired[id] >= r.Times {
		return nil, nil
	}
	fb.fired[id]++
	return &r, nil
}

func newFault(name string) (types.BaseMethodFault, error) {
	t, ok := types.TypeFunc()(name)
	if ok {
		if f, ok := reflect.New(t).Interface().(types.BaseMethodFault); ok {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%q is not a vim25 fault type", name)
}

func entityName(ref types.ManagedObjectReference) string {
	obj := simulator.Map.Get(ref)
	e, ok := obj.(mo.Entity)
	if !ok {
		return ""
	}
	var name string
	simulator.Map.WithLock(obj, func() { name = e.Entity().Name })
	return name
}

// authenticated asks vcsim whether the request's session cookie is valid:
// CurrentTime needs a session.
func authenticated(inner http.Handler, r *http.Request) bool {
	body := `<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope ` +
		`xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>` +
		`<CurrentTime xmlns="urn:vim25"><_this type="ServiceInstance">ServiceInstance</_this>` +
		`</CurrentTime></soapenv:Body></soapenv:Envelope>`
	probe := httptest.NewRequest(http.MethodPost, r.URL.String(), strings.NewReader(body))
	for _, c := range r.Cookies() {
		probe.AddCookie(c)
	}
	probe.Header.Set("Content-Type", "text/xml")
	rec := httptest.NewRecorder()
	inner.ServeHTTP(rec, probe)
	return rec.Code == http.StatusOK
}

const soapHead = `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
	`<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" ` +
	`xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" ` +
	`xmlns:xsd="http://www.w3.org/2001/XMLSchema" ` +
	`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>`
const soapTail = `</soapenv:Body></soapenv:Envelope>`

func escapeText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// injectTask answers a *_Task call with a task that has failed.
func injectTask(w http.ResponseWriter, method string, this types.ManagedObjectReference, fault types.BaseMethodFault, msg string) {
	obj := simulator.Map.Get(this)
	id := strings.TrimSuffix(method, "_Task")
	id = strings.ToLower(id[:1]) + id[1:]
	task := simulator.CreateTask(obj, id, func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		return nil, fault
	})
	ref := task.Run()
	simulator.Map.WithLock(task, func() {
		simulator.Map.Update(task, []types.PropertyChange{
			{Name: "info.error", Val: types.LocalizedMethodFault{Fault: fault, LocalizedMessage: msg}},
			{Name: "info.entityName", Val: entityName(this)},
		})
	})
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, `%s<%sResponse xmlns="urn:vim25"><returnval type="Task">%s</returnval></%sResponse>%s`,
		soapHead, method, escapeText(ref.Value), method, soapTail)
}

// injectSoapFault answers any other call with a SOAP fault.
func injectSoapFault(w http.ResponseWriter, fault types.BaseMethodFault, msg string) {
	kind := reflect.TypeOf(fault).Elem().Name()
	var detail bytes.Buffer
	start := xml.StartElement{Name: xml.Name{Local: kind + "Fault"}, Attr: []xml.Attr{
		{Name: xml.Name{Local: "xmlns"}, Value: "urn:vim25"},
		{Name: xml.Name{Local: "xsi:type"}, Value: kind}}}
	if err := xml.NewEncoder(&detail).EncodeElement(fault, start); err != nil {
		log.Printf("vcsim: -faults: encoding %s: %v", kind, err)
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	fmt.Fprintf(w, `%s<soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>%s</faultstring><detail>%s</detail></soapenv:Fault>%s`,
		soapHead, escapeText(msg), detail.String(), soapTail)
}

// inject answers the call itself when the faults file says so (true); a
// rule that drops the connection is returned as "before" or "after" for
// the caller to carry out; else the call goes on to vcsim.
func (fb *faultBook) inject(w http.ResponseWriter, r *http.Request, inner http.Handler, m *simulator.Method, body []byte) (bool, *faultRule) {
	task := strings.HasSuffix(m.Name, "_Task")
	if task && simulator.Map.Get(m.This) == nil {
		return false, nil // vcsim answers ManagedObjectNotFound
	}
	rule, err := fb.lookup(m.Name, entityName(m.This), body)
	if err != nil {
		log.Printf("vcsim: -faults: %v", err)
		return false, nil
	}
	if rule == nil {
		return false, nil
	}
	if len(rule.Replace) == 2 {
		return false, rule
	}
	if rule.Ignore {
		if task || !authenticated(inner, r) {
			return false, nil // a task is never ignored; vcsim refuses the unauthenticated
		}
		w.Header().Set("Content-Type", "text/xml; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, `%s<%sResponse xmlns="urn:vim25"></%sResponse>%s`, soapHead, m.Name, m.Name, soapTail)
		return true, nil
	}
	switch rule.Drop {
	case "before", "after", "mid":
		return false, rule
	case "":
	default:
		log.Printf("vcsim: -faults %s: %s: drop %q is neither before nor after", fb.file, m.Name, rule.Drop)
		return false, nil
	}
	fault, err := newFault(rule.Fault)
	if err != nil {
		log.Printf("vcsim: -faults %s: %s: %v", fb.file, m.Name, err)
		fault = &types.InvalidRequest{}
	}
	if task {
		if !authenticated(inner, r) {
			return false, nil // vcsim refuses it: NotAuthenticated
		}
		injectTask(w, m.Name, m.This, fault, rule.Message)
		return true, nil
	}
	injectSoapFault(w, fault, rule.Message)
	return true, nil
}
