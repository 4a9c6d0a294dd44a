// SPDX-License-Identifier: GPL-2.0
/*
 * nvidia_peermem.c - gpuclusterctl lab STAND-IN for NVIDIA's nvidia-peermem
 * (GPUDirect RDMA peer memory, REAL-FORMATS C.3/C.9; needs a real GPU and
 * HCA).  Loads and does nothing, but depends, like the real one, on nvidia
 * and ib_core: `modprobe nvidia_peermem` loads both, `lsmod` shows
 * `nvidia_peermem`.
 */
#include <linux/init.h>
#include <linux/module.h>

/* the driver version it stands in for: image.sh builds one per version */
#ifndef GC_NV_VERSION
#define GC_NV_VERSION "535.183.01"
#endif
#include <rdma/ib_verbs.h>

extern int nvidia_gclab_present(void);

static int __init nvidia_peermem_gclab_init(void)
{
	pr_info("nvidia_peermem: gpuclusterctl lab stand-in loaded (nvidia %d, ib_core: %s)\n",
		nvidia_gclab_present(), ib_event_msg(IB_EVENT_PORT_ACTIVE));
	return 0;
}

static void __exit nvidia_peermem_gclab_exit(void)
{
}

module_init(nvidia_peermem_gclab_init);
module_exit(nvidia_peermem_gclab_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpuclusterctl lab stand-in for nvidia-peermem (loads, does nothing)");
MODULE_VERSION(GC_NV_VERSION);
