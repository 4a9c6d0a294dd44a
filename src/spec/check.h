/*
 * check.h - what check.c and gpus.c share: the state of one checking pass
 * and small helpers.  Private to src/spec.
 */
#ifndef GC_SPEC_CHECK_H
#define GC_SPEC_CHECK_H

#include <string.h>

#include "internal.h"

#define HINT_CANDIDATES_MAX 2000 /* no did-you-mean over larger sets */
#define HINT_DIAGS_MAX 1000      /* nor once this many diagnostics were collected */

struct check {
	struct spec_ctx *x;
	struct gc_cluster *c;
	struct gc_arena scratch;
	struct gc_strmap gpus;    /* "hostidx/pci" -> struct gc_host_gpu */
	struct gc_strmap nics;    /* "hostidx/pci" -> struct gc_host_nic */
	struct gc_strmap gpu_any; /* "pci" -> first struct gc_host_gpu with it */
	struct gc_strmap uplinks; /* "dvsidx/host[/nic]" -> struct gc_dvs_uplink */
	size_t *gpu_base, *nic_base; /* per host: ordinal of its first GPU / NIC */
	bool *gpu_dyn;               /* per GPU: taken by a dynamic DirectPath request */
	unsigned *vf_used;           /* per NIC: VFs handed out */
	struct gc_vm **nic_owner;    /* per NIC: the VM it is passed through to */
	const char **cred_names, **host_names, **dvs_names, **pg_names;
	size_t ncred_names, nhost_names, ndvs_names, npg_names;
	struct gc_dvswitch *pvrdma_dvs; /* the one dvswitch of all PVRDMA VMs */
	const struct gc_vm *pvrdma_first;
};

static inline const char *q(const char *s)
{
	return s ? s : "?";
}

static inline size_t host_idx(struct check *k, const struct gc_host *h)
{
	return (size_t)(h - k->c->hosts);
}

/* "idx/pci", as "%zu/%s" prints it, without the printf machinery: two keys
 * per GPU and NIC of every host. */
static inline const char *pci_key(struct check *k, size_t idx, const char *pci)
{
	char digits[24], *key, *w;
	size_t n = 0, len = strlen(pci);

	do {
		digits[n++] = (char)('0' + idx % 10);
		idx /= 10;
	} while (idx > 0);
	key = w = gc_arena_alloc(&k->scratch, n + 1 + len + 1);
	while (n > 0)
		*w++ = digits[--n];
	*w++ = '/';
	memcpy(w, pci, len + 1);
	return key;
}

static inline struct gc_mark fmark(struct check *k, const void *field, struct gc_mark fallback)
{
	return spec_field_mark(k->x, field, fallback);
}

/* A mark resolved only when a diagnostic is actually emitted. */
struct where {
	const void *field;
	struct gc_mark fallback;
};

static inline struct gc_mark at(struct check *k, struct where w)
{
	return fmark(k, w.field, w.fallback);
}

/* gpus.c: claim host GPUs for static passthrough, vGPUs and dynamic DirectPath */
void chk_assign_gpus(struct check *k);
/* roce.c: the switches' roce sections and everything that must agree with them */
void chk_roce(struct check *k);
/* releases.c: rules of some releases only (ECC before vGPU 9.0, vGPU vMotion from
 * 6.7 U1, passthrough and NTP through vCenter before ESXi 7.0 / 7.0 U1) */
void chk_releases(struct check *k);

#endif
