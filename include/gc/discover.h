/*
 * discover.h - read what a cluster already is (`gpuclusterctl discover`).
 *
 * gc_discover_run() connects to every ESXi host, Onyx switch and the
 * vCenter a (partial) spec names, with the spec's own credentials, SSH
 * settings and host-key policy, runs only read-only commands (the ESXi
 * driver's observation batch, the switch's `show version` and `show
 * running-config`, one vCenter RetrievePropertiesEx) and returns the result
 * as one JSON document (specs/discover-v1.schema.json).
 * gc_discover_yaml() turns that document into a spec that `check` accepts:
 * the input's connection sections, the discovered hosts, switches and
 * distributed switches, and as comments what a spec cannot hold (VMs, VIBs,
 * GPUs in vGPU mode, commands the host's ESXi release lacks).
 */
#ifndef GC_DISCOVER_H
#define GC_DISCOVER_H

#include <json-c/json.h>

#include "gc/error.h"
#include "gc/spec.h"
#include "gc/sys/driver.h"
#include "gc/util.h"

/*
 * Read every target of c.  *out is always set (a target that could not be
 * read carries "error"); returns 0 when every target was read, else the
 * first failure's code with err naming its target.  set: --known-hosts and
 * --trust-new-host-keys (NULL: the spec's).
 */
int gc_discover_run(json_object **out, const struct gc_cluster *c,
		    const struct gc_drv_settings *set, struct gc_error *err);

/* The spec fragment for doc (from gc_discover_run on c), emitted with
 * libyaml, appended to out. */
int gc_discover_yaml(struct gc_buf *out, const struct gc_cluster *c, json_object *doc,
		     struct gc_error *err);

#endif
