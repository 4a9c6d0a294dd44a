/*
 * discover_int.h - what the files of src/discover share: each target
 * kind's facts as discover's JSON (specs/discover-v1.schema.json).
 */
#ifndef GC_DISCOVER_INT_H
#define GC_DISCOVER_INT_H

#include <json-c/json.h>

#include "gc/esxi.h"
#include "gc/onyx.h"
#include "gc/vcenter.h"

/* esxi.c: the host's facts into o (version, gpus, nics, ntp, vibs, ...). */
void discover_esxi_json(json_object *o, const struct gc_esxi_facts *f);
/* vcenter.c: the inventory into o (datacenters, hosts, dvswitches, vms). */
void discover_vcenter_json(json_object *o, const struct gc_vcenter_inventory *inv);

#endif
