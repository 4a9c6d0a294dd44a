// SPDX-License-Identifier: GPL-2.0
/*
 * nvidia.c - gpuclusterctl lab STAND-IN for NVIDIA's nvidia.ko (which needs a
 * real NVIDIA GPU).  A real kernel module built for the guest image's kernel
 * that only loads: `lsmod` shows `nvidia`, /sys/module/nvidia exists (the
 * nvidia-smi stand-in checks it), and nvidia_peermem depends on it.
 */
#include <linux/init.h>
#include <linux/module.h>

/* the driver version it stands in for: image.sh builds one per version */
#ifndef GC_NV_VERSION
#define GC_NV_VERSION "535.183.01"
#endif

int nvidia_gclab_present(void)
{
	return 1;
}
EXPORT_SYMBOL_GPL(nvidia_gclab_present);

static int __init nvidia_gclab_init(void)
{
	pr_info("nvidia: gpuclusterctl lab stand-in " GC_NV_VERSION " loaded (no GPU behind it)\n");
	return 0;
}

static void __exit nvidia_gclab_exit(void)
{
}

module_init(nvidia_gclab_init);
module_exit(nvidia_gclab_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpuclusterctl lab stand-in for the NVIDIA driver (loads, does nothing)");
MODULE_VERSION(GC_NV_VERSION);
