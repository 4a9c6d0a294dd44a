/*
 * tables.c - the hardware the spec knows by name: GPU models (framebuffer,
 * PCI ids, vGPU profiles) and Mellanox/NVIDIA NICs (max VFs per port).
 *
 * Sources and confidence, so nobody mistakes this for a datasheet:
 *   - GPU memory: the product names themselves (V100-32GB) and NVIDIA
 *     datasheets.  "V100" alone is rejected as ambiguous (16 or 32 GB).
 *   - PCI device ids: PCI ID repository (pci.ids) entries of the PCIe SKUs
 *     named in the comments.  SXM variants have other ids; a dynamic
 *     DirectPath pci_id that is not in this table is resolved through the
 *     host GPUs' models only.  H200 (NVL, 0x233b) is the least certain.
 *   - vGPU profiles: NVIDIA Virtual GPU Software user guide, "Virtual GPU
 *     Types for Supported GPUs"
 *     (https://docs.nvidia.com/vgpu/10.0/grid-vgpu-user-guide/index.html
 *     and later releases; C-series also in NVIDIA AI Enterprise's "vGPU
 *     Types" reference pages), in the spelling ESXi uses
 *     (`pciPassthru0.vgpu = "grid_t4-16c"`).  C-series (compute) types start
 *     at 4 GB on these boards, so there is no grid_t4-1c.  Only Q- and
 *     C-series and MIG-backed C-series of the A100/A30/H100 are listed; B/A
 *     series (desktop/app streaming) are left out on purpose.  Newer vSphere
 *     releases also print the nvidia_ prefix (nvidia_a100-40c): both
 *     spellings are accepted.  H200: no vGPU types are listed (we have not
 *     verified them), so vGPU on it is rejected until someone adds them.
 *   - NIC VFs: NVIDIA "ConnectX-4/ConnectX-5 NATIVE ESXi Driver for VMware
 *     vSphere User Manual", SR-IOV chapter: "up to 63/127 virtual instances
 *     ... depending on the firmware capabilities" and "nmlx5_core Driver"
 *     for ConnectX-4 onward
 *     (docs.nvidia.com/networking/display/vmwareumv416711).  We take 127
 *     for ConnectX-5 and later and the conservative 63 for ConnectX-4 and
 *     ConnectX-4 Lx.
 *   - ConnectX-3 (Pro): the mlx4 family, nmlx4_core on ESXi; 63 VFs per
 *     port from Mellanox's mlx4 VPI user manual (num_vfs: "the maximum
 *     number of VFs on each physical port must be 63").  That ESXi's
 *     nmlx4_core takes max_vfs per port the same way is unconfirmed, so
 *     the loader refuses SR-IOV on nmlx4_core NICs for now.
 *   - Connect-IB: an mlx5-family (InfiniBand) HCA, up to 62 VFs
 *     (MLNX_OFED 4.5 SR-IOV chapter: "ConnectX-4/Connect-IB adapter cards
 *     up to 62 virtual instances").  Whether ESXi's nmlx5_core drives it is
 *     unconfirmed: NVIDIA's ESXi manuals name ConnectX-4 onward.
 *   - A NIC not in the table is accepted with `driver` (and `max_vfs` for
 *     SR-IOV) given in the spec, as GPUs are with memory_gb.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * Per row, what was checked against NVIDIA's type tables (issue 14, item 3):
 *   P100 (PCIe 16GB): "Tesla P100 PCIe 16GB Virtual GPU Types" name their
 *     types P100-<fb><series>; the P100C- names belong to the 12 GB board
 *     ("Tesla P100 PCIe 12GB", P100C-1Q..12Q), which is its own row below.
 *     The guides' own clusters use grid_p100-8q.  The C-series rows of both
 *     boards (4c/8c/16c and 4c/6c/12c) could not be re-read in this pass:
 *     unconfirmed, kept because the Q-series framebuffer steps match.
 *   V100-16GB / V100-32GB: "Tesla V100 PCIe" (V100-) and "Tesla V100 PCIe
 *     32GB" (V100D-) tables; other V100 boards have their own prefixes
 *     (V100X- SXM2, V100DX- SXM2 32GB, V100L- FHHL, V100S-), as NVIDIA AI
 *     Enterprise's Volta reference lists V100L-4C/8C/16C.  Q rows not
 *     re-read in this pass: unconfirmed.
 *   T4: C-series T4-16C/8C/4C confirmed (NVIDIA AI Enterprise 8, "Turing
 *     Architecture vGPU Types", table "NVIDIA vGPU for Compute for NVIDIA
 *     Tesla T4"); Q-series 1q..16q from the user guide, not re-read.
 *   A100-40GB/80GB, A30, L4, L40S, H100: not re-read in this pass:
 *     unconfirmed (time-sliced C types and the MIG-backed <slices>-<fb>c).
 *   P40, P4, A10, A16, A40: no rows; a spec naming them needs memory_gb
 *     and cannot use vGPU until rows with a source are added.
 */
static const char *const p100_profiles[] = {
	"grid_p100-1q", "grid_p100-2q", "grid_p100-4q", "grid_p100-8q", "grid_p100-16q",
	"grid_p100-4c", "grid_p100-8c", "grid_p100-16c", NULL};
static const char *const p100c_profiles[] = {
	"grid_p100c-1q", "grid_p100c-2q", "grid_p100c-4q", "grid_p100c-6q", "grid_p100c-12q",
	"grid_p100c-4c", "grid_p100c-6c", "grid_p100c-12c", NULL};
static const char *const v100_profiles[] = {
	"grid_v100-1q", "grid_v100-2q", "grid_v100-4q", "grid_v100-8q", "grid_v100-16q",
	"grid_v100-4c", "grid_v100-8c", "grid_v100-16c", NULL};
static const char *const v100d_profiles[] = {
	"grid_v100d-1q", "grid_v100d-2q", "grid_v100d-4q", "grid_v100d-8q", "grid_v100d-16q",
	"grid_v100d-32q", "grid_v100d-4c", "grid_v100d-8c", "grid_v100d-16c", "grid_v100d-32c",
	NULL};
static const char *const t4_profiles[] = {
	"grid_t4-1q", "grid_t4-2q", "grid_t4-4q", "grid_t4-8q", "grid_t4-16q",
	"grid_t4-4c", "grid_t4-8c", "grid_t4-16c", NULL};
static const char *const a100_profiles[] = {
	"grid_a100-4c", "grid_a100-5c", "grid_a100-8c", "grid_a100-10c", "grid_a100-20c",
	"grid_a100-40c", "grid_a100-1-5c", "grid_a100-2-10c", "grid_a100-3-20c",
	"grid_a100-4-20c", "grid_a100-7-40c", NULL};
static const char *const a100d_profiles[] = {
	"grid_a100d-4c", "grid_a100d-8c", "grid_a100d-10c", "grid_a100d-16c", "grid_a100d-20c",
	"grid_a100d-40c", "grid_a100d-80c", "grid_a100d-1-10c", "grid_a100d-2-20c",
	"grid_a100d-3-40c", "grid_a100d-4-40c", "grid_a100d-7-80c", NULL};
static const char *const a30_profiles[] = {
	"grid_a30-4c", "grid_a30-6c", "grid_a30-8c", "grid_a30-12c", "grid_a30-24c",
	"grid_a30-1-6c", "grid_a30-2-12c", "grid_a30-4-24c", NULL};
static const char *const l4_profiles[] = {
	"grid_l4-1q", "grid_l4-2q", "grid_l4-3q", "grid_l4-4q", "grid_l4-6q", "grid_l4-8q",
	"grid_l4-12q", "grid_l4-24q", "grid_l4-4c", "grid_l4-6c", "grid_l4-8c", "grid_l4-12c",
	"grid_l4-24c", NULL};
static const char *const l40s_profiles[] = {
	"grid_l40s-1q", "grid_l40s-2q", "grid_l40s-3q", "grid_l40s-4q", "grid_l40s-6q",
	"grid_l40s-8q", "grid_l40s-12q", "grid_l40s-16q", "grid_l40s-24q", "grid_l40s-48q",
	"grid_l40s-4c", "grid_l40s-6c", "grid_l40s-8c", "grid_l40s-12c", "grid_l40s-16c",
	"grid_l40s-24c", "grid_l40s-48c", NULL};
static const char *const h100_profiles[] = {
	"grid_h100-4c", "grid_h100-5c", "grid_h100-10c", "grid_h100-20c", "grid_h100-40c",
	"grid_h100-80c", "grid_h100-1-10c", "grid_h100-2-20c", "grid_h100-3-40c",
	"grid_h100-4-40c", "grid_h100-7-80c", NULL};
static const char *const no_profiles[] = {NULL};

static const struct gc_gpu_model gpu_models[] = {
	{"P100", 16, 0x10de, 0x15f8, p100_profiles, false},    /* Tesla P100 PCIe 16GB */
	{"P100-12GB", 12, 0x10de, 0x15f7, p100c_profiles, false}, /* Tesla P100 PCIe 12GB */
	{"V100-16GB", 16, 0x10de, 0x1db4, v100_profiles, false}, /* Tesla V100 PCIe 16GB */
	{"V100-32GB", 32, 0x10de, 0x1db6, v100d_profiles, false}, /* Tesla V100 PCIe 32GB */
	{"T4", 16, 0x10de, 0x1eb8, t4_profiles, false},        /* Tesla T4 */
	{"A100-40GB", 40, 0x10de, 0x20f1, a100_profiles, true},  /* A100 PCIe 40GB */
	{"A100-80GB", 80, 0x10de, 0x20b5, a100d_profiles, true}, /* A100 PCIe 80GB */
	{"A30", 24, 0x10de, 0x20b7, a30_profiles, true},    /* A30 */
	{"L4", 24, 0x10de, 0x27b8, l4_profiles, true},     /* L4 */
	{"L40S", 48, 0x10de, 0x26b9, l40s_profiles, true},  /* L40S */
	{"H100", 80, 0x10de, 0x2331, h100_profiles, true},  /* H100 PCIe 80GB */
	{"H200", 141, 0x10de, 0x233b, no_profiles, true},   /* H200 NVL (id unverified) */
};

static const struct gc_nic_model nic_models[] = {
	{"ConnectX-3", 63, 2, "nmlx4_core"},
	{"ConnectX-3 Pro", 63, 2, "nmlx4_core"},
	{"Connect-IB", 62, 2, "nmlx5_core"},
	{"ConnectX-4", 63, 2, "nmlx5_core"},
	{"ConnectX-4 Lx", 63, 2, "nmlx5_core"},
	{"ConnectX-5", 127, 2, "nmlx5_core"},
	{"ConnectX-6", 127, 2, "nmlx5_core"},
	{"ConnectX-6 Dx", 127, 2, "nmlx5_core"},
	{"ConnectX-7", 127, 2, "nmlx5_core"},
	{"BlueField-2", 127, 2, "nmlx5_core"},
};

const struct gc_gpu_model *gc_gpu_models(size_t *n)
{
	*n = GC_ARRAY_LEN(gpu_models);
	return gpu_models;
}

const struct gc_nic_model *gc_nic_models(size_t *n)
{
	*n = GC_ARRAY_LEN(nic_models);
	return nic_models;
}

const struct gc_gpu_model *gc_gpu_model_find(const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < GC_ARRAY_LEN(gpu_models); i++) {
		if (strcmp(gpu_models[i].name, name) == 0)
			return &gpu_models[i];
	}
	return NULL;
}

const struct gc_nic_model *gc_nic_model_find(const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < GC_ARRAY_LEN(nic_models); i++) {
		if (strcmp(nic_models[i].name, name) == 0)
			return &nic_models[i];
	}
	return NULL;
}

const struct gc_gpu_model *spec_gpu_model_by_pci_id(const char *pci_id)
{
	size_t i;
	unsigned long vendor, device;
	char *end;

	if (pci_id == NULL || strlen(pci_id) != 9 || pci_id[4] != ':')
		return NULL;
	vendor = strtoul(pci_id, &end, 16);
	if (end != pci_id + 4)
		return NULL;
	device = strtoul(pci_id + 5, &end, 16);
	if (*end != '\0')
		return NULL;
	for (i = 0; i < GC_ARRAY_LEN(gpu_models); i++) {
		if (gpu_models[i].vendor_id == vendor && gpu_models[i].device_id == device)
			return &gpu_models[i];
	}
	return NULL;
}

bool spec_gpu_model_has_profile(const struct gc_gpu_model *m, const char *profile)
{
	const char *const *p;
	const char *bare = profile;

	if (m == NULL || profile == NULL)
		return false;
	if (strncmp(profile, "nvidia_", 7) == 0)
		bare = profile + 7;
	else if (strncmp(profile, "grid_", 5) == 0)
		bare = profile + 5;
	for (p = m->vgpu_profiles; *p; p++) {
		if (strcmp(*p + 5, bare) == 0) /* table entries all start with "grid_" */
			return true;
	}
	return false;
}

bool gc_gpu_model_has_profile(const struct gc_gpu_model *m, const char *profile)
{
	return spec_gpu_model_has_profile(m, profile);
}

/* grid_t4-8c and nvidia_t4-8c name the same vGPU type */
bool gc_vgpu_profile_same(const char *a, const char *b)
{
	a += strncmp(a, "grid_", 5) == 0 ? 5 : strncmp(a, "nvidia_", 7) == 0 ? 7 : 0;
	b += strncmp(b, "grid_", 5) == 0 ? 5 : strncmp(b, "nvidia_", 7) == 0 ? 7 : 0;
	return strcmp(a, b) == 0;
}

unsigned gc_vgpu_profile_fb_gb(const char *profile)
{
	const char *dash, *p;
	unsigned v = 0;

	if (profile == NULL)
		return 0;
	dash = strrchr(profile, '-');
	if (dash == NULL || dash[1] < '0' || dash[1] > '9')
		return 0;
	for (p = dash + 1; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned)(*p - '0');
		if (v > 100000)
			return 0;
	}
	/* one series letter: q (virtual workstation), c (compute), b, a */
	if (p[0] == '\0' || p[1] != '\0' || strchr("qcba", p[0]) == NULL)
		return 0;
	return v;
}
