/*
 * fixture.h - cluster models built in C for graph/plan/cli tests and the
 * scale benchmark, independent of the YAML loader.
 *
 * fx_cluster() builds `nhosts` ESXi hosts named esx01, esx02, ... each
 * with `ngpus` GPUs (0000:3b:00.0, 0000:3c:00.0, ...), two ConnectX-5 NICs
 * and one VM (worker-01, ...) using all of them, a distributed switch with
 * a port group, a managed guest per VM and one Onyx switch sw01:
 *
 *   FX_PASSTHROUGH: GPUs passed through, the first NIC in SR-IOV mode
 *                   (max_vfs 8,8), the VM gets a VF; not migratable.
 *   FX_VGPU:        GPUs in vGPU mode (T4, vGPU manager bundle, ECC off),
 *                   the first NIC is a PVRDMA uplink (vmk1), the VM gets one
 *                   vGPU per GPU and a PVRDMA NIC; migratable.
 *
 * host.roce_switch stays NULL (the hosts' nmlx5_core gets only max_vfs, no
 * lossless RoCE parameters) unless a test points it at sw01.
 */
#ifndef GC_TEST_FIXTURE_H
#define GC_TEST_FIXTURE_H

#include <stddef.h>

#include "gc/spec.h"

enum fx_mode { FX_PASSTHROUGH, FX_VGPU };

struct gc_cluster *fx_cluster(size_t nhosts, size_t ngpus, enum fx_mode mode);
void fx_free(struct gc_cluster *c);

#endif
