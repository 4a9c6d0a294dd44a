#!/usr/bin/python3
"""Generate an N-host gpuclusterctl spec for the planning benchmark.

Each host has 8 passthrough GPUs (A100-80GB) and 2 NICs (a ConnectX-6 in
SR-IOV mode and a ConnectX-6 passed through), and runs one VM that takes all
8 GPUs (MMIO 1024 GB), one SR-IOV VF and the passthrough HCA.

    bench/gen_spec.py 1000 > /tmp/spec-1000.yaml

With --guests, each VM also has a guest stage like examples/roce-pair.yaml's
(driver, RDMA stack, peer memory, licence, NTP, RoCE QoS on the VF):

    bench/gen_spec.py --guests 1000 > /tmp/spec-1000-guests.yaml
"""
import sys


def main() -> int:
    args = sys.argv[1:]
    guests = "--guests" in args
    args = [a for a in args if a != "--guests"]
    if len(args) != 1 or not args[0].isdigit():
        print("usage: gen_spec.py [--guests] N", file=sys.stderr)
        return 64
    n = int(args[0])
    out = sys.stdout.write
    out("apiVersion: gpuclusterctl/v1\nkind: Cluster\n")
    out(f"metadata:\n  name: bench-{n}\n")
    out("credentials:\n"
        "  - {name: esxi-root, username: root, password_env: GC_ESXI_PASSWORD}\n"
        "  - {name: vc-admin, username: administrator@vsphere.local, password_env: GC_VC_PASSWORD}\n")
    if guests:
        out("  - {name: guest-user, username: ubuntu, key_file: /root/.ssh/id_ed25519}\n")
    out("vcenter:\n  url: https://vc.bench.example/\n  datacenter: DC1\n  cluster: gpu\n"
        "  credentials: vc-admin\n  ca_file: /etc/gpuclusterctl/vc-ca.pem\n")
    out("rolling: {max_unavailable: 8, allow_vmotion: false}\n")
    out("hosts:\n")
    for i in range(n):
        out(f"  - name: esx{i:05d}\n    address: esx{i:05d}.bench.example\n"
            "    credentials: esxi-root\n    version: 8.0.2\n    gpus:\n")
        for g in range(8):
            out(f"      - {{pci: \"0000:{0x10 + g * 0x10:02x}:00.0\", model: A100-80GB, mode: passthrough}}\n")
        out("    nics:\n"
            "      - {pci: \"0000:c1:00.0\", model: ConnectX-6, device: vmnic4, mode: sriov, vfs: 4}\n"
            "      - {pci: \"0000:c2:00.0\", model: ConnectX-6, mode: passthrough}\n")
    out("vms:\n")
    for i in range(n):
        out(f"  - name: vm{i:05d}\n    host: esx{i:05d}\n    template: ubuntu-22.04-template\n"
            "    cpus: 64\n    memory_gb: 1024\n    gpus:\n")
        for g in range(8):
            out(f"      - {{host_pci: \"0000:{0x10 + g * 0x10:02x}:00.0\"}}\n")
        out("    nics:\n"
            "      - {type: vmxnet3, network: VM Network}\n"
            "      - {type: sriov, pf: \"0000:c1:00.0\", network: rdma-net}\n"
            "      - {type: passthrough, host_pci: \"0000:c2:00.0\"}\n")
        if guests:
            a, b = divmod(i, 250)
            out(f"    guest:\n      address: 10.{a // 250}.{a % 250}.{b + 1}\n"
                f"      rdma_interface: {{name: ens224, address: 198.{18 + a // 250}.{a % 250}.{b + 1}/16, mtu: 9000}}\n"
                "      credentials: guest-user\n      os: ubuntu\n      nvidia_driver: \"535\"\n"
                "      rdma_packages: true\n      peermem: true\n"
                "      license: {server: license.bench.example, feature_type: 4, timeout_s: 120}\n"
                "      ntp: [ntp1.bench.example]\n"
                "      roce_qos: {interface: ens224, rdma_device: mlx5_0, trust: dscp, pfc_priority: 3, tos: 106, ecn: true}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
