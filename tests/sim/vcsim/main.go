// main.go - the lab's vCenter simulator: govmomi's simulator package behind
// a small command line, built by tests/sim/vcsim.sh in GOPATH mode.
//
// Debian 12's golang-github-vmware-govmomi-dev (0.24.2) ships the simulator
// library but not govmomi's own vcsim command, so the files of this
// directory stand in for it.  Without -inventory it serves the default VPX
// model (1 datacenter, 1 cluster of 3 hosts, 1 standalone host, 4 VMs).  It
// serves TLS from the given certificate, accepts one
// username whose password is read from a file (never from argv), and prints
// "export GOVC_URL=... GOVC_SIM_PID=..." once it listens.  SIGINT/SIGTERM
// stop it.
//
// -inventory FILE replaces the default model by a spec's inventory
// (inventory.go; tests/sim/lab_spec.py vcsim-inventory SPEC writes it).
// In either model each compute resource's EnvironmentBrowser answers
// QueryConfigTarget with the hosts' PCI devices (configtarget.go).
//
// Every SOAP request passes fidelity.go first: -faults FILE injects
// vCenter faults (faults.go), and a few calls are fixed up after vcsim ran
// them so that the result is vCenter's (extraConfig, clone placement and
// config, distributed switch maxMtu, members and type).  docs/vcenter.md
// lists them, and what vcsim still does not model.
//
// -host-gpus FILE gives named hosts what the default model lacks: PCI
// passthrough devices (config.pciPassthruInfo) and the vGPU types they offer
// (config.sharedPassthruGpuTypes), from JSON:
//
//	{"DC0_H0": {"passthru": [{"id": "0000:3b:00.0", "enabled": true,
//	             "capable": true, "active": true}],
//	            "vgpu_types": ["grid_t4-16c"]}}
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io/ioutil"
	"log"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"

	// Optional endpoints: /rest (vAPI sessions) and the lookup service.
	_ "github.com/vmware/govmomi/lookup/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator"
)

func readSecret(path string) string {
	b, err := ioutil.ReadFile(path)
	if err != nil {
		log.Fatalf("vcsim: cannot read the password file: %v", err)
	}
	return strings.TrimRight(string(b), "\r\n")
}

func methodDelays(spec string) map[string]int {
	m := make(map[string]int)
	for _, s := range strings.Split(spec, ",") {
		kv := strings.Split(strings.TrimSpace(s), ":")
		if len(kv) != 2 {
			log.Fatalf("vcsim: -method-delay wants method:ms[,method:ms...], got %q", s)
		}
		ms, err := strconv.Atoi(kv[1])
		if err != nil {
			log.Fatalf("vcsim: -method-delay %q: %v", s, err)
		}
		m[kv[0]] = ms
	}
	return m
}

type hostGPUs struct {
	Passthru []struct {
		ID      string `json:"id"`
		Enabled bool   `json:"enabled"`
		Capable bool   `json:"capable"`
		Active  bool   `json:"active"`
	} `json:"passthru"`
	VgpuTypes []string `json:"vgpu_types"`
}

func loadHostGPUs(path string) {
	b, err := ioutil.ReadFile(path)
	if err != nil {
		log.Fatalf("vcsim: -host-gpus: %v", err)
	}
	var want map[string]hostGPUs
	if err := json.Unmarshal(b, &want); err != nil {
		log.Fatalf("vcsim: -host-gpus %s: %v", path, err)
	}
	for _, e := range simulator.Map.All("HostSystem") {
		h := e.(*simulator.HostSystem)
		g, ok := want[h.Name]
		if !ok || h.Config == nil {
			continue
		}
		var info []types.BaseHostPciPassthruInfo
		for _, p := range g.Passthru {
			info = append(info, &types.HostPciPassthruInfo{Id: p.ID,
				PassthruEnabled: p.Enabled, PassthruCapable: p.Capable,
				PassthruActive: p.Active})
		}
		h.Config.PciPassthruInfo = info
		h.Config.SharedPassthruGpuTypes = g.VgpuTypes
		delete(want, h.Name)
	}
	for name := range want {
		log.Fatalf("vcsim: -host-gpus %s: no host named %q", path, name)
	}
}

func main() {
	model := simulator.VPX()
	flag.IntVar(&model.ClusterHost, "host", model.ClusterHost, "hosts per cluster (default model)")
	flag.IntVar(&model.Host, "standalone-host", model.Host, "standalone hosts (default model)")
	flag.IntVar(&model.Machine, "vm", model.Machine, "VMs per resource pool (default model)")
	invFile := flag.String("inventory", "", "JSON file: build this inventory instead of the default model")
	listen := flag.String("l", "127.0.0.1:8990", "listen address")
	cert := flag.String("tlscert", "", "TLS certificate (PEM)")
	key := flag.String("tlskey", "", "TLS key (PEM)")
	user := flag.String("username", "", "the one accepted username")
	passFile := flag.String("password-file", "", "file holding its password")
	delay := flag.String("method-delay", "", "method:ms[,method:ms...]")
	trace := flag.String("trace-file", "", "write SOAP traffic here")
	gpus := flag.String("host-gpus", "", "JSON file: passthrough devices and vGPU types per host")
	faults := flag.String("faults", "", "JSON file of injected faults, read at every request (faults.go)")
	flag.BoolVar(&pagingOn, "paging", false, "page RetrievePropertiesEx results by options.maxObjects, as vCenter does (paging.go)")
	flag.StringVar(&hostCallsFile, "host-calls", "", "append host configuration calls here (hostconfig.go)")
	flag.StringVar(&dvsCallsFile, "dvs-calls", "", "append distributed switch calls here (hostconfig.go)")
	flag.Parse()

	if *cert == "" || *key == "" || *user == "" || *passFile == "" {
		log.Fatal("vcsim: -tlscert, -tlskey, -username and -password-file are required")
	}
	if *delay != "" {
		model.DelayConfig.MethodDelay = methodDelays(*delay)
	}
	if *trace != "" {
		f, err := os.Create(*trace)
		if err != nil {
			log.Fatal(err)
		}
		simulator.TraceFile = f
		simulator.Trace = true
	}
	var inv *inventory
	if *invFile != "" {
		var err error
		if inv, err = readInventory(*invFile); err != nil {
			log.Fatalf("vcsim: -inventory: %v", err)
		}
		delays := model.DelayConfig
		model = inventoryModel()
		model.DelayConfig = delays
	}
	if err := model.Create(); err != nil {
		log.Fatal(err)
	}
	if inv != nil {
		if err := buildInventory(model, inv); err != nil {
			log.Fatalf("vcsim: -inventory %s: %v", *invFile, err)
		}
	}
	wrapEnvironmentBrowsers()
	wireHostConfig()
	wrapNetworkSystems()
	if *gpus != "" {
		loadHostGPUs(*gpus)
	}
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		log.Fatal(err)
	}
	model.Service.RegisterEndpoints = true
	model.Service.Listen = &url.URL{Host: *listen,
		User: url.UserPassword(*user, readSecret(*passFile))}
	model.Service.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	s := model.Service.NewServer()
	// The /sdk handler in front of vcsim's (fidelity.go).  NewServer has
	// started serving, but nobody knows the port before the line below is
	// printed, so no request can race with this assignment.
	client, err := vim25.NewClient(context.Background(), model.Service)
	if err != nil {
		log.Fatal(err)
	}
	s.Config.Handler = newSdkHandler(s.Config.Handler, *faults, client)
	u := *s.URL
	u.User = nil
	fmt.Printf("export GOVC_URL=%s GOVC_SIM_PID=%d\n", u.String(), os.Getpid())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	s.Close()
	model.Remove()
	removeTempDirs()
}
