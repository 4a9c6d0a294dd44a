"""Hostile values in every spec field that reaches a remote command line are
rejected by `gpuclusterctl check` (and so by plan/apply, which load the same
way) with exit 1 and a diagnostic at the value's own file:line:col, before
anything is touched.  Each value goes into one field of an otherwise valid
spec; the test prints how many (field, value) cases it ran.
"""
import os
import re
import subprocess
import tempfile
import unittest

from labtest import BIN

TEMPLATE = """\
apiVersion: gpuclusterctl/v1
kind: Cluster
metadata: {name: hostile}
credentials:
  - {name: esxi-root, username: root, password_env: GC_ESXI_PASSWORD}
  - {name: sw, username: admin, password_env: GC_SWITCH_PASSWORD}
  - {name: vc, username: administrator@vsphere.local, password_env: GC_VC_PASSWORD}
  - {name: guest, username: ubuntu, key_file: /root/.ssh/id_ed25519}
hosts:
  - name: esx01
    address: @ADDRESS@
    credentials: esxi-root
    version: @VERSION@
    ntp: [@NTP@]
    gpus:
      - {pci: @GPU_PCI@, model: T4, mode: vgpu}
    vgpu:
      bundle: @BUNDLE@
      vib_name: @VIB_NAME@
      default_type: SharedPassthru
    nics:
      - {pci: "0000:5e:00.0", model: ConnectX-5, device: @DEVICE@, mode: pvrdma, vmknic: @VMKNIC@, dvswitch: dvs1}
      - {pci: "0000:5e:00.1", model: ConnectX-5, device: vmnic5, mode: pvrdma, dvswitch: dvs1,
         vmknic: {name: @VMKNIC_NAME@, portgroup: @VMKNIC_PG@, address: @VMKNIC_ADDRESS@}}
distributed_switches:
  - name: dvs1
    uplinks: [{host: esx01, nic: vmnic4}, {host: esx01, nic: vmnic5}]
    port_groups: [{name: pg1}]
switches:
  - name: sn2700
    address: 127.0.0.100
    credentials: sw
    ports: @PORTS@
    roce: {mode: dscp-lossless, priority: 3}
vcenter: {url: "https://127.0.0.1:8989/sdk", datacenter: DC0, cluster: gpu, credentials: vc}
vms:
  - name: vm1
    host: esx01
    template: tpl
    cpus: 4
    memory_gb: 16
    gpus: [{vgpu: grid_t4-8c}]
    guest:
      address: @GUEST_ADDRESS@
      credentials: guest
      os: ubuntu
      nvidia_driver: @GUEST_DRIVER_BRANCH@
      driver: {runfile: @GUEST_RUNFILE@, version: @GUEST_DRIVER_VERSION@}
      rdma_stack: {installer: @GUEST_OFED@}
      rdma_interface: {name: @GUEST_IF@, address: @GUEST_CIDR@, mtu: 9000}
      license: {server: @GUEST_LICENSE_SERVER@}
      roce_qos: {interface: @GUEST_QOS_IF@, rdma_device: @GUEST_RDMA_DEV@, pfc_priority: 3}
      ntp: [@GUEST_NTP@]
  - name: vm2
    host: esx01
    template: tpl
    cpus: 4
    memory_gb: 16
    gpus: [{vgpu: grid_t4-8c}]
    guest:
      address: 127.0.0.52
      credentials: guest
      os: debian
      nvidia_driver: "535"
      driver: {package: @GUEST_PACKAGE@}
      license: {token_file: @GUEST_TOKEN@}
"""
FIELDS = {
    "ADDRESS": "127.0.0.11",
    "VERSION": "8.0.2",
    "NTP": "ntp1.lab.example",
    "GPU_PCI": "0000:3b:00.0",
    "BUNDLE": "/vmfs/volumes/ds1/NVD-AIE-800.zip",
    "VIB_NAME": "NVD-AIE_ESXi_8.0.0_Driver",
    "DEVICE": "vmnic4",
    "VMKNIC": "vmk1",
    # the vmknic vCenter creates (AddVirtualNic's SOAP body)
    "VMKNIC_NAME": "vmk2",
    "VMKNIC_PG": "pg1",
    "VMKNIC_ADDRESS": "192.168.10.21/24",
    "PORTS": "1/1-1/32",
    # guest fields that reach a guest's shell (tests/integration/test_guest.py)
    "GUEST_ADDRESS": "127.0.0.51",
    "GUEST_DRIVER_BRANCH": "535",
    "GUEST_RUNFILE": "/opt/nvidia/NVIDIA-Linux-x86_64-535.183.01-grid.run",
    "GUEST_DRIVER_VERSION": "535.183.01",
    "GUEST_OFED": "/opt/mlnx/MLNX_OFED_LINUX-5.8-1.1.2.1-ubuntu22.04-x86_64.tgz",
    "GUEST_IF": "ens224",
    "GUEST_CIDR": "198.18.0.51/24",
    "GUEST_LICENSE_SERVER": "license.lab.example",
    "GUEST_QOS_IF": "ens224",
    "GUEST_RDMA_DEV": "mlx5_0",
    "GUEST_NTP": "ntp1.lab.example",
    "GUEST_PACKAGE": "nvidia-driver-535-server",
    "GUEST_TOKEN": "/etc/gpuclusterctl/client_configuration_token.tok",
}

# Shell metacharacters, command substitution, quotes, newlines and other
# control characters, globbing, option injection, format strings, escape
# sequences, very long values and bytes that are not UTF-8.
HOSTILE = [
    ";reboot", "a;b", "$(reboot)", "`reboot`", "a|b", "a&b", "a&&b", "a||b", "a>b", "a<b",
    "a\nreboot", "a\rb", "a\tb", "'a'", "\"a\"", "a\\b", "a b", "$HOME", "${IFS}reboot", "*",
    "a?", "[a]", "~root", "a#b", "!1", "{a,b}", "-rf", "--help", "%s%n", "\x1b[31m",
    "a\x7fb", "a\u2028b", "\uff41", "../../etc/passwd", "/", "", " ", "x" * 300,
    "0000:3b:00.0;x", "127.0.0.1;reboot", "vmk1 && reboot", "1/1-1/32;reload", "$(id)$(id)",
    "a\x00b", b"\xff\xfe".decode("latin-1"), "\u00e9", "a\\nb", "$((1+1))", "a`b`c", "a$(b)c",
]
NON_UTF8 = [b"\xff\xfe", b"\xc3\x28", b"\xe2\x82"]


def yaml_scalar(v):
    """A YAML double-quoted scalar holding exactly v."""
    out = []
    for ch in v:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif o < 0x20 or o == 0x7f or 0x80 <= o < 0xa0 or o in (0x2028, 0x2029):
            out.append("\\x%02x" % o if o < 0x100 else "\\u%04x" % o)
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


class Hostile(unittest.TestCase):
    def spec_with(self, field, raw):
        text = TEMPLATE
        for k, v in FIELDS.items():
            if k != field:
                text = text.replace("@%s@" % k, '"%s"' % v)
        data = text.encode()
        marker = ("@%s@" % field).encode()
        before = data[:data.index(marker)]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        return data.replace(marker, raw), line, col

    def check(self, data):
        with tempfile.NamedTemporaryFile(suffix=".yaml", delete=False) as f:
            f.write(data)
        try:
            r = subprocess.run([BIN, "check", f.name], capture_output=True, timeout=30)
        finally:
            os.unlink(f.name)
        return f.name, r

    def test_template_itself_is_valid(self):
        data, _, _ = self.spec_with("ADDRESS", b'"127.0.0.11"')
        _, r = self.check(data)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))

    def test_hostile_values_rejected_at_their_position(self):
        cases = 0
        for field in FIELDS:
            for v in HOSTILE:
                if v == FIELDS[field]:
                    continue
                data, line, col = self.spec_with(field, yaml_scalar(v).encode("utf-8"))
                name, r = self.check(data)
                err = r.stderr.decode("utf-8", errors="replace")
                with self.subTest(field=field, value=repr(v)):
                    self.assertEqual(r.returncode, 1, err)
                    self.assertRegex(err, r"^%s:%d:%d: error: " % (re.escape(name), line, col))
                    self.assertNotIn("\x1b", err)         # no raw escape reaches the terminal
                    self.assertEqual(r.stdout, b"")
                cases += 1
            for raw in NON_UTF8:
                data, line, col = self.spec_with(field, b'"' + raw + b'"')
                name, r = self.check(data)
                err = r.stderr.decode("utf-8", errors="replace")
                with self.subTest(field=field, value=repr(raw)):
                    self.assertEqual(r.returncode, 1, err)
                    self.assertRegex(err, r"^%s:%d:\d+: error: " % (re.escape(name), line))
                cases += 1
        print("\nhostile: %d (field, value) cases rejected at load" % cases)
        self.assertGreaterEqual(cases, 50)


if __name__ == "__main__":
    unittest.main()
