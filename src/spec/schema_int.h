/*
 * schema_int.h - the field-table macros of the spec language, shared by
 * schema.c (the root map, hosts, switches, policies), schema_vm.c (VMs)
 * and schema_guest.c (a VM's guest).
 */
#ifndef GC_SPEC_SCHEMA_INT_H
#define GC_SPEC_SCHEMA_INT_H

#include <stddef.h>

#include "internal.h"

#define FSTR(S, k, m, p, req) {.key = k, .type = T_STR, .off = offsetof(S, m), .pat = p, .required = req}
#define FENUM(S, k, m, ch, req) {.key = k, .type = T_STR, .off = offsetof(S, m), .choices = ch, .required = req}
#define FUINT(S, k, m, lo, hi, req) {.key = k, .type = T_UINT, .off = offsetof(S, m), .min = lo, .max = hi, .required = req}
#define FINT(S, k, m, lo, hi, req) {.key = k, .type = T_INT, .off = offsetof(S, m), .min = lo, .max = hi, .required = req}
#define FNUM(S, k, m, lo, hi) {.key = k, .type = T_NUM, .off = offsetof(S, m), .min = lo, .max = hi}
#define FBOOL(S, k, m) {.key = k, .type = T_BOOL, .off = offsetof(S, m)}
#define FTRI(S, k, m) {.key = k, .type = T_TRI, .off = offsetof(S, m)}
#define FLIST(S, k, m, p) {.key = k, .type = T_STRLIST, .off = offsetof(S, m), .off_n = offsetof(S, n##m), .pat = p}
#define FSUB(k, fn, req) {.key = k, .type = T_SUB, .sub = fn, .required = req}
#define FSUBO(k, fn, S, m, req) {.key = k, .type = T_SUB, .sub = fn, .off = offsetof(S, m), .required = req}
#define FSKIP(k) {.key = k, .type = T_SKIP}
#define FEND(S) {.key = NULL, .off = sizeof(S)} /* the off of the end marker: the struct's size */

/* schema.c: lists of objects (the array sized from the sequence, each
 * element's first member its struct gc_mark; at most max, the rest an
 * error), and a value given for a key that does not apply (an error at it) */
typedef void (*spec_item_fn)(struct spec_ctx *x, struct spec_node *n, void *elem);
void *spec_parse_list_max(struct spec_ctx *x, struct spec_node *v, const char *key, size_t elem,
			  size_t *count, spec_item_fn item, size_t max);
void *spec_parse_list(struct spec_ctx *x, struct spec_node *v, const char *key, size_t elem,
		      size_t *count, spec_item_fn item);
void spec_not_applicable(struct spec_ctx *x, const void *field, bool given, const char *key,
			 const char *what);
/* schema_vm.c: the root's `vms:` list */
void spec_root_vms(struct spec_ctx *x, struct spec_node *v, void *obj);
/* schema.c: a guest's `ssh:` map; schema_guest.c: a VM's `guest:` map */
void spec_guest_ssh(struct spec_ctx *x, struct spec_node *v, void *obj);
void spec_vm_guest(struct spec_ctx *x, struct spec_node *v, void *obj);

#endif
