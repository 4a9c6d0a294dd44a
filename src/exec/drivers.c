/*
 * drivers.c - the drivers compiled into this build, by target kind.
 */
#include <stddef.h>

#include "exec_int.h"
#include "gc/exec.h"

const struct gc_driver *gc_exec_driver(enum gc_target_kind kind)
{
	switch (kind) {
	case GC_TARGET_ESXI:
		return &gc_driver_esxi;
	case GC_TARGET_SWITCH:
		return &gc_driver_onyx;
	case GC_TARGET_VCENTER:
		return &gc_driver_vcenter;
	case GC_TARGET_GUEST:
		return &gc_driver_guest;
	case GC_TARGET_LIBVIRT:
		return &gc_driver_libvirt;
	case GC_TARGET_KVM:
		return &gc_driver_kvm;
	}
	return NULL;
}
