#!/usr/bin/python3
"""vcsim_edit - change or read a VM on the lab's vCenter by hand, over SOAP.

    vcsim_edit.py --url URL --ca FILE --user U --password-file F VM VERB [ARGS]
        VERB: set-extra KEY VALUE      (an empty VALUE removes the key, as on vCenter)
              firmware efi|bios
              template-firmware efi|bios   (a template: made a VM, reconfigured, made a template again)
              reservation-lock true|false
              remove-device LABEL_OR_TYPE   (every device with that label or xsi:type)
              add-pci PCI          (static passthrough of a device the VM's host offers)
              add-vgpu PROFILE     (a vGPU of that profile)
              power on|off
              cpus N
    vcsim_edit.py ... show VM             the VM as JSON
    vcsim_edit.py ... host HOST           a host: PCI devices, passthrough, vGPU types, pnics,
                                          NTP servers and the ntpd service
    vcsim_edit.py ... config-target HOST  QueryConfigTarget of the host's cluster for that host
    vcsim_edit.py ... dvs NAME            a distributed switch: maxMtu, host members, port groups
    vcsim_edit.py ... dvs-uplink NAME HOST PNIC...  give member HOST these uplinks (operation edit)
    vcsim_edit.py ... inventory           names of datacenters, clusters, hosts, VMs, ...
    vcsim_edit.py ... option KEY          a vCenter advanced setting (QueryOptions): key, value, type
    vcsim_edit.py ... set-option KEY VALUE TYPE   UpdateOptions, the value typed xsd:TYPE
    vcsim_edit.py ... custom-fields       the custom field definitions (key, name, moType) and every
                                          cluster's and datacenter's values of them
    vcsim_edit.py ... add-custom-field NAME MOTYPE   AddCustomFieldDef, as another client would
    vcsim_edit.py ... events TYPE...      vCenter's events of those types (e.g. VmPoweredOffEvent),
                                          oldest first: key, type, vm, created (QueryEvents, <= 1000)
    vcsim_edit.py ... vnics HOST          the host's VMkernel adapters: device, address, switch, port group
    vcsim_edit.py ... set-vnic-ip HOST DEVICE IP MASK   UpdateVirtualNic: a static address

URL is the vCenter's (https://127.0.0.1:8990 or .../sdk); `tests/sim/vcsim.sh
env` prints what to pass.  Edits send ReconfigVM_Task, PowerOnVM_Task or
PowerOffVM_Task and wait for the task; a task that ends in error, or a SOAP
fault, prints "vcsim_edit: FaultType: message" on stderr and exits 1.

This is deliberately independent of gpuclusterctl's C code (python3 stdlib:
http.client, ssl, xml.etree), so tests of drift and read-back do not trust
the code under test.  `Client` can be imported by tests for raw calls.
"""
import argparse
import http.client
import json
import ssl
import sys
import time
import urllib.parse
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

NS_SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
NS_XSI = "http://www.w3.org/2001/XMLSchema-instance"
XSI_TYPE = "{%s}type" % NS_XSI


class Fault(Exception):
    def __init__(self, kind, message):
        super().__init__("%s: %s" % (kind, message))
        self.kind = kind
        self.message = message


def local(tag):
    return tag.rsplit("}", 1)[-1]


def to_py(el):
    """An element as plain data: text for leaves, dicts for structures
    (with "_type" from xsi:type), lists for repeated children."""
    kids = list(el)
    kind = el.get(XSI_TYPE)
    if not kids:
        text = el.text or ""
        if kind is None or kind.startswith("xsd:"):
            return text
        return {"_type": kind} if text == "" else text
    out = {}
    if kind:
        out["_type"] = kind
    for k in kids:
        name = local(k.tag)
        v = to_py(k)
        if name in out:
            if not isinstance(out[name], list) or name not in out.get("_lists", ()):
                out[name] = [out[name]]
                out.setdefault("_lists", []).append(name)
            out[name].append(v)
        else:
            out[name] = v
    out.pop("_lists", None)
    return out


def kids(p, key):
    """The children of property `key` of a props() result ([] when unset)."""
    e = p.get(key)
    return [] if e is None else list(e)


def aslist(v):
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


class Client:
    def __init__(self, url, cafile, timeout=30):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "https":
            raise ValueError("only https:// URLs")
        self.host, self.port = u.hostname, u.port or 443
        self.path = u.path if u.path.endswith("/sdk") else u.path.rstrip("/") + "/sdk"
        self.ctx = ssl.create_default_context(cafile=cafile)
        self.timeout = timeout
        self.cookie = None
        self.conn = None
        self.content = None

    def _post(self, body):
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                                        timeout=self.timeout)
            headers = {"Content-Type": "text/xml; charset=utf-8", "SOAPAction": "urn:vim25/6.5"}
            if self.cookie:
                headers["Cookie"] = self.cookie
            try:
                self.conn.request("POST", self.path, body.encode("utf-8"), headers)
                r = self.conn.getresponse()
                data = r.read()
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
                continue
            c = r.getheader("Set-Cookie")
            if c:
                self.cookie = c.split(";", 1)[0]
            return r.status, data
        raise AssertionError("unreachable")

    def call(self, method, this_type, this, inner=""):
        """Send one call; return the response's element (its children are
        the returnval elements) or raise Fault."""
        body = ('<?xml version="1.0" encoding="UTF-8"?>'
                '<soapenv:Envelope xmlns:soapenv="%s" xmlns:xsi="%s" '
                'xmlns:xsd="http://www.w3.org/2001/XMLSchema">'
                '<soapenv:Body><%s xmlns="urn:vim25"><_this type="%s">%s</_this>%s</%s>'
                '</soapenv:Body></soapenv:Envelope>'
                % (NS_SOAP, NS_XSI, method, this_type, escape(this), inner, method))
        status, data = self._post(body)
        root = ET.fromstring(data)
        b = root.find("{%s}Body" % NS_SOAP)
        resp = b[0]
        if local(resp.tag) == "Fault":
            msg = resp.findtext("faultstring") or ""
            kind = "Fault"
            detail = resp.find("detail")
            if detail is not None and len(detail):
                kind = detail[0].get(XSI_TYPE) or local(detail[0].tag).replace("Fault", "", 1)
            raise Fault(kind, msg)
        if status != 200:
            raise Fault("HTTP", "status %d" % status)
        return resp

    def login(self, user, password):
        r = self.call("RetrieveServiceContent", "ServiceInstance", "ServiceInstance")
        self.content = {local(e.tag): e.text for e in r[0] if e.get("type")}
        self.call("Login", "SessionManager", self.content["sessionManager"],
                  "<userName>%s</userName><password>%s</password>" % (escape(user), escape(password)))

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def logout(self):
        try:
            self.call("Logout", "SessionManager", self.content["sessionManager"])
        except Exception:  # a failed logout changes nothing for the caller
            pass

    # ------------------------------------------------------------ reading

    def props(self, kind, ref, paths):
        """{path: element} of one object's properties."""
        specs = "".join("<pathSet>%s</pathSet>" % escape(p) for p in paths)
        inner = ("<specSet><propSet><type>%s</type>%s</propSet>"
                 "<objectSet><obj type=\"%s\">%s</obj></objectSet></specSet><options/>"
                 % (kind, specs, kind, escape(ref)))
        r = self.call("RetrievePropertiesEx", "PropertyCollector", self.content["propertyCollector"], inner)
        out = {}
        for obj in r.iter("{urn:vim25}objects"):
            for ms in obj.findall("{urn:vim25}missingSet"):
                raise Fault("missingSet", "%s %s: %s" % (ref, ms.findtext("{urn:vim25}path"),
                                                          ET.tostring(ms, "unicode")))
            for p in obj.findall("{urn:vim25}propSet"):
                out[p.findtext("{urn:vim25}name")] = p.find("{urn:vim25}val")
        return out

    def all(self, kind, paths=("name",)):
        """[(moref, {path: element})] of every object of a kind."""
        return [(ref, vals) for ref, vals, _ in self.all_typed(kind, paths)]

    def all_typed(self, kind, paths=("name",)):
        """[(moref, {path: element}, moref type)] of every object of a kind."""
        v = self.call("CreateContainerView", "ViewManager", self.content["viewManager"],
                      '<container type="Folder">%s</container><type>%s</type><recursive>true</recursive>'
                      % (escape(self.content["rootFolder"]), kind))
        view = v[0].text
        try:
            specs = "".join("<pathSet>%s</pathSet>" % escape(p) for p in paths)
            inner = ('<specSet><propSet><type>%s</type>%s</propSet>'
                     '<objectSet><obj type="ContainerView">%s</obj><skip>true</skip>'
                     '<selectSet xsi:type="TraversalSpec"><name>view</name><type>ContainerView</type>'
                     '<path>view</path><skip>false</skip></selectSet></objectSet></specSet><options/>'
                     % (kind, specs, escape(view)))
            r = self.call("RetrievePropertiesEx", "PropertyCollector", self.content["propertyCollector"], inner)
            out = []
            for obj in r.iter("{urn:vim25}objects"):
                vals = {p.findtext("{urn:vim25}name"): p.find("{urn:vim25}val")
                        for p in obj.findall("{urn:vim25}propSet")}
                o = obj.find("{urn:vim25}obj")
                out.append((o.text, vals, o.get("type")))
            return out
        finally:
            self.call("DestroyView", "ContainerView", view)

    def find(self, kind, name):
        for ref, vals in self.all(kind):
            if vals["name"].text == name:
                return ref
        raise Fault("NotFound", "no %s named '%s'" % (kind, name))

    def name_of(self, kind, ref):
        return self.props(kind, ref, ["name"])["name"].text

    # ------------------------------------------------------------ tasks

    def wait(self, task, timeout=60):
        deadline = time.time() + timeout
        while True:
            p = self.props("Task", task, ["info.state", "info.error"])
            state = p["info.state"].text
            if state == "success":
                return
            if state == "error":
                err = p.get("info.error")
                fault = err.find("{urn:vim25}fault") if err is not None else None
                kind = fault.get(XSI_TYPE) if fault is not None else "Fault"
                msg = err.findtext("{urn:vim25}localizedMessage") if err is not None else ""
                raise Fault(kind, msg or "")
            if time.time() > deadline:
                raise Fault("Timeout", "task %s still %s" % (task, state))
            time.sleep(0.05)

    def task(self, method, this_type, this, inner=""):
        r = self.call(method, this_type, this, inner)
        self.wait(r[0].text)
        return r[0].text

    def reconfigure(self, vm, spec_xml):
        return self.task("ReconfigVM_Task", "VirtualMachine", vm, "<spec>%s</spec>" % spec_xml)


# ---------------------------------------------------------------- views

INT_FIELDS = {"key", "controllerKey", "unitNumber", "vendorId", "capacityInKB", "capacityInBytes",
              "virtualFunctionIndex", "busNumber", "numVirtualFunction"}


def typed(v, name=None):
    """to_py() output with ints for INT_FIELDS, bools for true/false and
    "type" for the xsi:type of structures."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            out["type" if k == "_type" else k] = typed(x, k)
        return out
    if isinstance(v, list):
        return [typed(x, name) for x in v]
    if name in INT_FIELDS and v.lstrip("-").isdigit():
        return int(v)
    if v in ("true", "false"):
        return v == "true"
    return v


def device_view(c, d, pg_names):
    """One virtual device: its fields (typed), plus the label, the network
    or port group it is on and the SR-IOV physical function it uses."""
    item = typed(to_py(d))
    if not isinstance(item, dict):
        return item
    item.setdefault("type", local(d.tag))
    info = item.get("deviceInfo") or {}
    item["label"] = info.get("label") if isinstance(info, dict) else None
    item["summary"] = info.get("summary") if isinstance(info, dict) else None
    b = item.get("backing")
    if isinstance(b, dict):
        port = b.get("port")
        if isinstance(port, dict) and port.get("portgroupKey"):
            key = port["portgroupKey"]
            if key not in pg_names:
                try:
                    pg_names[key] = c.name_of("DistributedVirtualPortgroup", key)
                except Fault:
                    pg_names[key] = None
            item["portgroup"] = item["network"] = pg_names[key]
        elif b.get("type") == "VirtualEthernetCardNetworkBackingInfo":
            item["network"] = b.get("deviceName")
    sb = item.get("sriovBacking")
    if isinstance(sb, dict) and isinstance(sb.get("physicalFunctionBacking"), dict):
        item["sriov_pf"] = sb["physicalFunctionBacking"].get("id")
    return item


def show_vm(c, name):
    ref = c.find("VirtualMachine", name)
    p = c.props("VirtualMachine", ref, [
        "name", "config.template", "config.firmware", "config.memoryReservationLockedToMax",
        "config.hardware.numCPU", "config.hardware.memoryMB", "config.hardware.device",
        "config.extraConfig", "runtime.powerState", "runtime.host"])

    def text(k):
        e = p.get(k)
        return None if e is None else e.text

    pg_names = {}
    devices = [device_view(c, d, pg_names) for d in kids(p, "config.hardware.device")]
    entries = [[o.findtext("{urn:vim25}key"), o.findtext("{urn:vim25}value")]
               for o in kids(p, "config.extraConfig")]
    host = text("runtime.host")
    lock = text("config.memoryReservationLockedToMax")
    return {
        "name": text("name"), "moref": ref,
        "template": text("config.template") == "true",
        "firmware": text("config.firmware"),
        "reservation_locked": None if lock is None else lock == "true",
        "cpus": int(text("config.hardware.numCPU") or 0),
        "memory_mb": int(text("config.hardware.memoryMB") or 0),
        "power": text("runtime.powerState"),
        "host": c.name_of("HostSystem", host) if host else None,
        # a dict for lookups, and every entry in order (a key twice shows there)
        "extra_config": {k: v for k, v in entries},
        "extra_config_entries": entries,
        "devices": devices,
    }


def show_host(c, name):
    ref = c.find("HostSystem", name)
    p = c.props("HostSystem", ref, [
        "name", "parent", "config.product.version", "config.product.build",
        "hardware.systemInfo.uuid", "hardware.pciDevice", "config.pciPassthruInfo",
        "config.sharedPassthruGpuTypes", "config.network.pnic", "datastore", "network",
        "config.dateTimeInfo", "config.service"])
    pci = [to_py(d) for d in kids(p, "hardware.pciDevice")]
    passthru = []
    for e in kids(p, "config.pciPassthruInfo"):
        item = to_py(e)
        item["type"] = item.pop("_type", "HostPciPassthruInfo")
        passthru.append(item)
    parent = p["parent"]
    dt = p.get("config.dateTimeInfo")
    ntp = dt.find("{urn:vim25}ntpConfig") if dt is not None else None
    ntpd = [to_py(e) for e in (p.get("config.service") or [])
            if e.findtext("{urn:vim25}key") == "ntpd"]
    return {
        "name": p["name"].text, "moref": ref,
        "cluster": c.name_of(parent.get("type"), parent.text),
        "version": p["config.product.version"].text, "build": p["config.product.build"].text,
        "system_uuid": p["hardware.systemInfo.uuid"].text,
        "pci_devices": pci,
        "passthru": passthru,
        "vgpu_types": [s.text for s in kids(p, "config.sharedPassthruGpuTypes")],
        "pnics": [{"device": n.findtext("{urn:vim25}device"), "pci": n.findtext("{urn:vim25}pci"),
                   "driver": n.findtext("{urn:vim25}driver")}
                  for n in kids(p, "config.network.pnic")],
        "datastores": [c.name_of("Datastore", d.text) for d in kids(p, "datastore")],
        "networks": sorted(c.name_of(n.get("type"), n.text) for n in kids(p, "network")),
        "ntp_servers": [e.text for e in ntp.findall("{urn:vim25}server")] if ntp is not None else [],
        "ntpd": ({"running": ntpd[0].get("running") == "true", "policy": ntpd[0].get("policy")}
                 if ntpd else None),
    }


def show_vnics(c, host_name):
    """The host's VMkernel adapters (config.network.vnic), each with the name
    of the switch and port group of its distributed port."""
    ref = c.find("HostSystem", host_name)
    p = c.props("HostSystem", ref, ["config.network.vnic"])
    switches = {}
    for sref, v, t in c.all_typed("DistributedVirtualSwitch", ("name", "uuid")):
        switches[v["uuid"].text] = v["name"].text
    out = []
    for n in kids(p, "config.network.vnic"):
        v = to_py(n)
        spec = v.get("spec") or {}
        ip = spec.get("ip") or {}
        port = spec.get("distributedVirtualPort") or {}
        key = port.get("portgroupKey")
        out.append({"device": v.get("device"), "dhcp": ip.get("dhcp"), "ip": ip.get("ipAddress"),
                    "mask": ip.get("subnetMask"), "switch": switches.get(port.get("switchUuid")),
                    "portgroup": c.name_of("DistributedVirtualPortgroup", key) if key
                    else v.get("portgroup")})
    return out


def set_vnic_ip(c, host_name, device, ip, mask):
    """UpdateVirtualNic: the adapter's static address, by hand."""
    ns = c.props("HostSystem", c.find("HostSystem", host_name),
                 ["configManager.networkSystem"])["configManager.networkSystem"].text
    c.call("UpdateVirtualNic", "HostNetworkSystem", ns,
           "<device>%s</device><nic><ip><dhcp>false</dhcp><ipAddress>%s</ipAddress>"
           "<subnetMask>%s</subnetMask></ip></nic>" % (escape(device), escape(ip), escape(mask)))


def config_target(c, host_name):
    href = c.find("HostSystem", host_name)
    parent = c.props("HostSystem", href, ["parent"])["parent"]
    eb = c.props(parent.get("type"), parent.text, ["environmentBrowser"])["environmentBrowser"].text
    r = c.call("QueryConfigTarget", "EnvironmentBrowser", eb, '<host type="HostSystem">%s</host>' % href)
    t = to_py(r[0])
    return {"pciPassthrough": aslist(t.get("pciPassthrough")), "sriov": aslist(t.get("sriov")),
            "sharedGpuPassthroughTypes": aslist(t.get("sharedGpuPassthroughTypes")),
            "network": [n.get("name") for n in aslist(t.get("network"))],
            "datastore": [d.get("name") for d in aslist(t.get("datastore"))]}


def show_dvs(c, name):
    found = [(ref, t) for ref, v, t in c.all_typed("DistributedVirtualSwitch") if v["name"].text == name]
    if not found:
        raise Fault("NotFound", "no distributed switch named '%s'" % name)
    ref, kind = found[0]
    p = c.props(kind, ref,
                ["name", "config", "summary.hostMember", "portgroup"])
    cfg = to_py(p["config"])
    members = []
    for m in aslist(cfg.get("host")):
        mc = m.get("config") or {}
        backing = mc.get("backing") or {}
        members.append({"host": c.name_of("HostSystem", mc.get("host")) if mc.get("host") else None,
                        "pnics": [s.get("pnicDevice") for s in aslist(backing.get("pnicSpec"))]})
    pgs = []
    for pg in kids(p, "portgroup"):
        q = c.props("DistributedVirtualPortgroup", pg.text, ["name", "config.defaultPortConfig"])
        vlan = to_py(q["config.defaultPortConfig"]).get("vlan") if q.get("config.defaultPortConfig") is not None else None
        pgs.append({"name": q["name"].text, "key": pg.text,
                    "vlan": vlan.get("vlanId") if isinstance(vlan, dict) else None})
    return {"name": p["name"].text, "moref": ref, "type": kind, "max_mtu": cfg.get("maxMtu"),
            "config_version": cfg.get("configVersion"),
            "host_members": [c.name_of("HostSystem", h.text) for h in kids(p, "summary.hostMember")],
            "config_hosts": members, "portgroups": pgs}


def show_inventory(c):
    out = {}
    for kind in ("Datacenter", "ClusterComputeResource", "HostSystem", "Datastore", "Network",
                 "DistributedVirtualPortgroup", "DistributedVirtualSwitch"):
        out[kind] = sorted(v["name"].text for _, v in c.all(kind))
    vms, templates = [], []
    for _, v in c.all("VirtualMachine", ("name", "config.template")):
        (templates if v["config.template"].text == "true" else vms).append(v["name"].text)
    out["VirtualMachine"] = sorted(vms)
    out["Template"] = sorted(templates)
    return out


def show_option(c, key):
    """QueryOptions on the service content's setting manager: the entry with
    exactly that key (vcsim answers every key it starts)."""
    r = c.call("QueryOptions", "OptionManager", c.content["setting"],
               "<name>%s</name>" % escape(key))
    for v in r.findall("{urn:vim25}returnval"):
        if v.findtext("{urn:vim25}key") == key:
            val = v.find("{urn:vim25}value")
            return {"key": key, "value": val.text if val is not None else None,
                    "type": (val.get(XSI_TYPE) or "").rsplit(":", 1)[-1] if val is not None else None}
    raise Fault("InvalidName", "no setting '%s'" % key)


def set_option(c, key, value, kind):
    c.call("UpdateOptions", "OptionManager", c.content["setting"],
           '<changedValue><key>%s</key><value xsi:type="xsd:%s">%s</value></changedValue>'
           % (escape(key), escape(kind), escape(value)))


def show_custom_fields(c):
    mgr = c.content["customFieldsManager"]
    p = c.props("CustomFieldsManager", mgr, ["field"])
    fields = [{"key": f.findtext("{urn:vim25}key"), "name": f.findtext("{urn:vim25}name"),
               "moType": f.findtext("{urn:vim25}managedObjectType")} for f in kids(p, "field")]
    values = {}
    for kind in ("ClusterComputeResource", "Datacenter"):
        for _, v in c.all(kind, ("name", "customValue")):
            cv = v.get("customValue")
            values[v["name"].text] = {e.findtext("{urn:vim25}key"): e.findtext("{urn:vim25}value")
                                      for e in (list(cv) if cv is not None else [])}
    return {"fields": fields, "values": values}


def add_custom_field(c, name, motype):
    r = c.call("AddCustomFieldDef", "CustomFieldsManager", c.content["customFieldsManager"],
               "<name>%s</name><moType>%s</moType>" % (escape(name), escape(motype)))
    return {"key": r.findtext("{urn:vim25}returnval/{urn:vim25}key")}


def show_events(c, types):
    """QueryEvents on the service content's event manager, filtered by
    eventTypeId, as [{key, type, vm, created}] in the order vCenter recorded
    them (its event keys grow by one per event).  1000 is the most one page
    holds (EventFilterSpec.maxCount)."""
    ids = "".join("<eventTypeId>%s</eventTypeId>" % escape(t) for t in types)
    r = c.call("QueryEvents", "EventManager", c.content["eventManager"],
               "<filter>%s<maxCount>1000</maxCount></filter>" % ids)
    out = []
    for e in r.findall("{urn:vim25}returnval"):
        out.append({"key": int(e.findtext("{urn:vim25}key")),
                    "type": (e.get(XSI_TYPE) or "").rsplit(":", 1)[-1],
                    "vm": e.findtext("{urn:vim25}vm/{urn:vim25}name"),
                    "created": e.findtext("{urn:vim25}createdTime")})
    return sorted(out, key=lambda x: x["key"])


# ---------------------------------------------------------------- edits

def set_uplink(c, dvs_name, host_name, pnics):
    """ReconfigureDvs_Task: member host_name's uplinks become pnics, in that order."""
    found = [(ref, t) for ref, v, t in c.all_typed("DistributedVirtualSwitch") if v["name"].text == dvs_name]
    if not found:
        raise Fault("NotFound", "no distributed switch named '%s'" % dvs_name)
    ref, kind = found[0]
    version = c.props(kind, ref, ["config.configVersion"])["config.configVersion"].text
    host = c.find("HostSystem", host_name)
    c.task("ReconfigureDvs_Task", kind, ref,
           '<spec xsi:type="VMwareDVSConfigSpec"><configVersion>%s</configVersion>'
           '<host><operation>edit</operation><host type="HostSystem">%s</host>'
           '<backing xsi:type="DistributedVirtualSwitchHostMemberPnicBacking">%s'
           '</backing></host></spec>'
           % (escape(version or ""), escape(host),
              "".join("<pnicSpec><pnicDevice>%s</pnicDevice></pnicSpec>" % escape(p) for p in pnics)))


def edit(c, vm_name, verb, args):
    vm = c.find("VirtualMachine", vm_name)
    if verb == "set-extra" and len(args) == 2:
        c.reconfigure(vm, '<extraConfig><key>%s</key><value xsi:type="xsd:string">%s</value></extraConfig>'
                      % (escape(args[0]), escape(args[1])))
    elif verb == "firmware" and len(args) == 1 and args[0] in ("efi", "bios"):
        c.reconfigure(vm, "<firmware>%s</firmware>" % args[0])
    elif verb == "template-firmware" and len(args) == 1 and args[0] in ("efi", "bios"):
        # vCenter (and vcsim) reconfigure no template: as an operator does,
        # MarkAsVirtualMachine into its host's cluster, change, MarkAsTemplate
        host = c.props("VirtualMachine", vm, ["runtime.host"])["runtime.host"]
        parent = c.props("HostSystem", host.text, ["parent"])["parent"]
        pool = c.props(parent.get("type"), parent.text, ["resourcePool"])["resourcePool"].text
        c.call("MarkAsVirtualMachine", "VirtualMachine", vm,
               '<pool type="ResourcePool">%s</pool><host type="HostSystem">%s</host>'
               % (escape(pool), escape(host.text)))
        c.reconfigure(vm, "<firmware>%s</firmware>" % args[0])
        c.call("MarkAsTemplate", "VirtualMachine", vm)
    elif verb == "reservation-lock" and len(args) == 1 and args[0] in ("true", "false"):
        c.reconfigure(vm, "<memoryReservationLockedToMax>%s</memoryReservationLockedToMax>" % args[0])
    elif verb == "cpus" and len(args) == 1 and args[0].isdigit():
        c.reconfigure(vm, "<numCPUs>%d</numCPUs>" % int(args[0]))
    elif verb == "power" and len(args) == 1 and args[0] in ("on", "off"):
        method = "PowerOnVM_Task" if args[0] == "on" else "PowerOffVM_Task"
        c.task(method, "VirtualMachine", vm)
    elif verb == "add-pci" and len(args) == 1:
        host = c.props("VirtualMachine", vm, ["runtime.host"])["runtime.host"].text
        offered = [t for t in config_target(c, c.name_of("HostSystem", host))["pciPassthrough"]
                   if (t.get("pciDevice") or {}).get("id") == args[0]]
        if not offered:
            raise Fault("NotFound", "the host of '%s' offers no passthrough device '%s'" % (vm_name, args[0]))
        dev, system_id = offered[0]["pciDevice"], offered[0].get("systemId", "")
        # HostPciDevice.deviceId is a signed short; the backing wants it in hex
        c.reconfigure(vm, '<deviceChange><operation>add</operation><device xsi:type="VirtualPCIPassthrough">'
                      "<key>-1</key><backing xsi:type=\"VirtualPCIPassthroughDeviceBackingInfo\">"
                      "<deviceName>%s</deviceName><useAutoDetect>false</useAutoDetect><id>%s</id>"
                      "<deviceId>%x</deviceId><systemId>%s</systemId><vendorId>%s</vendorId>"
                      "</backing></device></deviceChange>"
                      % (escape(dev.get("deviceName") or ""), escape(dev["id"]),
                         int(dev.get("deviceId") or 0) & 0xFFFF, escape(system_id),
                         escape(str(dev.get("vendorId") or 0))))
    elif verb == "add-vgpu" and len(args) == 1:
        c.reconfigure(vm, '<deviceChange><operation>add</operation><device xsi:type="VirtualPCIPassthrough">'
                      '<key>-1</key><backing xsi:type="VirtualPCIPassthroughVmiopBackingInfo">'
                      "<vgpu>%s</vgpu></backing></device></deviceChange>" % escape(args[0]))
    elif verb == "remove-device" and len(args) == 1:
        devs = c.props("VirtualMachine", vm, ["config.hardware.device"])
        changes = []
        for d in kids(devs, "config.hardware.device"):
            kind = d.get(XSI_TYPE)
            label = d.findtext("{urn:vim25}deviceInfo/{urn:vim25}label")
            if args[0] in (kind, label):
                changes.append('<deviceChange><operation>remove</operation><device xsi:type="%s">'
                               "<key>%s</key></device></deviceChange>"
                               % (escape(kind), d.findtext("{urn:vim25}key")))
        if not changes:
            raise Fault("NotFound", "VM '%s' has no device labelled or typed '%s'" % (vm_name, args[0]))
        c.reconfigure(vm, "".join(changes))
    else:
        raise SystemExit("vcsim_edit: bad arguments for '%s': %s (see --help)" % (verb, " ".join(args)))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--url", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--password-file", required=True)
    ap.add_argument("words", nargs="+")
    a = ap.parse_args(argv)
    with open(a.password_file, encoding="utf-8") as f:
        password = f.read().rstrip("\r\n")
    c = Client(a.url, a.ca)
    w = a.words
    try:
        c.login(a.user, password)
        if w[0] == "show" and len(w) == 2:
            out = show_vm(c, w[1])
        elif w[0] == "host" and len(w) == 2:
            out = show_host(c, w[1])
        elif w[0] == "vnics" and len(w) == 2:
            out = show_vnics(c, w[1])
        elif w[0] == "set-vnic-ip" and len(w) == 5:
            set_vnic_ip(c, w[1], w[2], w[3], w[4])
            out = None
        elif w[0] == "config-target" and len(w) == 2:
            out = config_target(c, w[1])
        elif w[0] == "dvs" and len(w) == 2:
            out = show_dvs(c, w[1])
        elif w[0] == "dvs-uplink" and len(w) >= 4:
            set_uplink(c, w[1], w[2], w[3:])
            out = None
        elif w[0] == "inventory" and len(w) == 1:
            out = show_inventory(c)
        elif w[0] == "option" and len(w) == 2:
            out = show_option(c, w[1])
        elif w[0] == "set-option" and len(w) == 4:
            set_option(c, w[1], w[2], w[3])
            out = None
        elif w[0] == "custom-fields" and len(w) == 1:
            out = show_custom_fields(c)
        elif w[0] == "add-custom-field" and len(w) == 3:
            out = add_custom_field(c, w[1], w[2])
        elif w[0] == "events" and len(w) >= 2:
            out = show_events(c, w[1:])
        elif len(w) >= 2:
            edit(c, w[0], w[1], w[2:])
            out = None
        else:
            ap.error("say what to do")
        c.logout()
        c.close()
    except Fault as e:
        print("vcsim_edit: %s: %s" % (e.kind, e.message), file=sys.stderr)
        return 1
    except (OSError, ssl.SSLError, http.client.HTTPException) as e:
        print("vcsim_edit: %s: %s" % (a.url, e), file=sys.stderr)
        return 1
    if out is not None:
        json.dump(out, sys.stdout, indent=1, sort_keys=True)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
