/*
 * exec_int.h - private to src/exec: the driver registry.
 */
#ifndef GC_EXEC_INT_H
#define GC_EXEC_INT_H

#include "gc/sys/driver.h"

extern const struct gc_driver gc_driver_esxi;
extern const struct gc_driver gc_driver_onyx;

#endif
