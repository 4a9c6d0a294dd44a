/*
 * schema_guest.c - the spec language of a VM's `guest:` map: what apply does
 * inside the VM (driver, licence, RDMA stack and interface, peer memory,
 * RoCE QoS, NTP).  Like schema.c, handlers check only what one object can
 * check alone; cross-object checks live in check.c.
 */
#include <string.h>

#include "schema_int.h"

/* ---------------------------------------------------------------- guests */

static const struct spec_field license_fields[] = {
	FSTR(struct gc_license, "server", server, P_HOST, false),
	FUINT(struct gc_license, "port", port, 1, 65535, false),
	FUINT(struct gc_license, "feature_type", feature_type, 0, 4, false),
	FSTR(struct gc_license, "token_file", token_file, P_PATH, false),
	FUINT(struct gc_license, "timeout_s", timeout_s, 5, 3600, false),
	FEND(struct gc_license),
};

static void guest_license(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_guest *g = obj;
	struct gc_license *l = gc_arena_alloc(x->arena, sizeof(*l));

	l->mark = spec_mark(x, v);
	l->port = 7070;
	l->timeout_s = 300; /* feature_type: derived from the VM's GPUs (check.c) */
	spec_parse_map(x, v, license_fields, l, "license");
	g->license = l;
	if (v->type != SPEC_MAP)
		return;
	if (!spec_field_given(x, &l->server) && !spec_field_given(x, &l->token_file))
		spec_diag(x, GC_SEV_ERROR, l->mark,
			  "give server: HOST (legacy license server) or token_file: PATH (NLS)",
			  "license needs 'server' or 'token_file'");
	else if (spec_field_given(x, &l->server) && spec_field_given(x, &l->token_file))
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &l->token_file, l->mark),
			  "token_file for NLS, server for a legacy license server: keep one",
			  "give either 'server' or 'token_file', not both");
}

static const struct spec_field roce_qos_fields[] = {
	FSTR(struct gc_roce_qos, "interface", interface, P_NETDEV, true),
	FSTR(struct gc_roce_qos, "rdma_device", rdma_device, P_RDMADEV, false),
	FENUM(struct gc_roce_qos, "trust", trust, ((const char *const[]){"dscp", "pcp", NULL}),
	      false),
	FINT(struct gc_roce_qos, "pfc_priority", pfc_priority, 0, 7, true),
	FINT(struct gc_roce_qos, "tos", tos, 0, 255, false),
	FBOOL(struct gc_roce_qos, "ecn", ecn),
	FEND(struct gc_roce_qos),
};

static void guest_roce_qos(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_guest *g = obj;
	struct gc_roce_qos *q = gc_arena_alloc(x->arena, sizeof(*q));

	q->mark = spec_mark(x, v);
	q->trust = "dscp";
	q->pfc_priority = -1;
	q->tos = 106;
	q->ecn = true;
	spec_parse_map(x, v, roce_qos_fields, q, "roce_qos");
	g->roce_qos = q;
}

static const struct spec_field rdma_if_fields[] = {
	FSTR(struct gc_rdma_if, "name", name, P_NETDEV, true),
	FSTR(struct gc_rdma_if, "address", address, P_CIDR, false),
	FUINT(struct gc_rdma_if, "mtu", mtu, 576, 9216, false),
	FEND(struct gc_rdma_if),
};

static void guest_rdma_interface(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_guest *g = obj;
	struct gc_rdma_if *r = gc_arena_alloc(x->arena, sizeof(*r));

	r->mark = spec_mark(x, v);
	r->mtu = 9000;
	spec_parse_map(x, v, rdma_if_fields, r, "rdma_interface");
	g->rdma_interface = r;
}

static const struct spec_field guest_driver_fields[] = {
	FENUM(struct gc_guest_driver, "source", source,
	      ((const char *const[]){"packages", "runfile", NULL}), false),
	FSTR(struct gc_guest_driver, "runfile", runfile, P_PATH, false),
	FSTR(struct gc_guest_driver, "version", version, P_VERSION, false),
	FSTR(struct gc_guest_driver, "package", package, P_PACKAGE, false),
	FEND(struct gc_guest_driver),
};

static void guest_driver(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_guest *g = obj;
	struct gc_guest_driver *d = gc_arena_alloc(x->arena, sizeof(*d));
	bool runfile;

	d->mark = spec_mark(x, v);
	spec_parse_map(x, v, guest_driver_fields, d, "driver");
	g->driver = d;
	if (v->type != SPEC_MAP)
		return;
	runfile = spec_field_given(x, &d->runfile);
	if (d->source == NULL)
		d->source = runfile ? "runfile" : "packages";
	if (strcmp(d->source, "runfile") == 0 && !runfile)
		spec_diag(x, GC_SEV_ERROR, d->mark,
			  "give runfile: /path/NVIDIA-Linux-x86_64-<version>-grid.run (it is uploaded)",
			  "driver source 'runfile' needs 'runfile'");
	else if (strcmp(d->source, "packages") == 0 && runfile)
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &d->runfile, d->mark),
			  "remove runfile, or set source: runfile",
			  "'runfile' does not apply to driver source 'packages'");
	if (strcmp(d->source, "runfile") == 0 && spec_field_given(x, &d->package))
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &d->package, d->mark), "remove it",
			  "'package' does not apply to driver source 'runfile'");
}

static const struct spec_field rdma_stack_fields[] = {
	FENUM(struct gc_rdma_stack, "source", source,
	      ((const char *const[]){"packages", "ofed", NULL}), false),
	FSTR(struct gc_rdma_stack, "installer", installer, P_PATH, false),
	FSTR(struct gc_rdma_stack, "version", version, P_VERSION, false),
	FEND(struct gc_rdma_stack),
};

static void guest_rdma_stack(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_guest *g = obj;
	struct gc_rdma_stack *r = gc_arena_alloc(x->arena, sizeof(*r));
	bool inst;

	r->mark = spec_mark(x, v);
	spec_parse_map(x, v, rdma_stack_fields, r, "rdma_stack");
	g->rdma_stack = r;
	if (v->type != SPEC_MAP)
		return;
	inst = spec_field_given(x, &r->installer);
	if (r->source == NULL)
		r->source = inst ? "ofed" : "packages";
	if (strcmp(r->source, "ofed") == 0 && !inst)
		spec_diag(x, GC_SEV_ERROR, r->mark,
			  "give installer: /path/MLNX_OFED_LINUX-<version>-<os>-x86_64.tgz (it is uploaded)",
			  "rdma_stack source 'ofed' needs 'installer'");
	else if (strcmp(r->source, "packages") == 0 && inst)
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &r->installer, r->mark),
			  "remove installer, or set source: ofed",
			  "'installer' does not apply to rdma_stack source 'packages'");
	if (strcmp(r->source, "packages") == 0 && spec_field_given(x, &r->version))
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &r->version, r->mark),
			  "the distribution's rdma-core has no ofed_info: remove version",
			  "'version' does not apply to rdma_stack source 'packages'");
}

static const struct spec_field guest_fields[] = {
	FSTR(struct gc_guest, "address", address, P_HOST, true),
	FSTR(struct gc_guest, "credentials", credentials_name, P_NAME, true),
	FSUB("ssh", spec_guest_ssh, false),
	FENUM(struct gc_guest, "os", os,
	      ((const char *const[]){"ubuntu", "debian", "rhel", "centos", "rocky", NULL}), false),
	FSTR(struct gc_guest, "nvidia_driver", nvidia_driver, P_VERSION, false),
	FSUB("driver", guest_driver, false),
	FSUB("license", guest_license, false),
	FBOOL(struct gc_guest, "rdma_packages", rdma_packages),
	FSUB("rdma_stack", guest_rdma_stack, false),
	FSUB("rdma_interface", guest_rdma_interface, false),
	FBOOL(struct gc_guest, "peermem", peermem),
	FSUB("roce_qos", guest_roce_qos, false),
	FBOOL(struct gc_guest, "container_toolkit", container_toolkit),
	FLIST(struct gc_guest, "ntp", ntp, P_HOST),
	FEND(struct gc_guest),
};

void spec_vm_guest(struct spec_ctx *x, struct spec_node *v, void *obj)
{
	struct gc_vm *vm = obj;
	struct gc_guest *g = gc_arena_alloc(x->arena, sizeof(*g));

	g->mark = spec_mark(x, v);
	g->ssh = x->c->ssh_defaults;
	spec_parse_map(x, v, guest_fields, g, "guest");
	vm->guest = g;
	if (v->type != SPEC_MAP)
		return;
	if (g->os == NULL)
		g->os = "ubuntu";
	if (g->rdma_packages && g->rdma_stack != NULL)
		spec_diag(x, GC_SEV_ERROR, g->rdma_stack->mark,
			  "rdma_packages: true is short for rdma_stack: {source: packages}: keep one",
			  "give either 'rdma_packages' or 'rdma_stack', not both");
	if (g->driver != NULL && g->nvidia_driver == NULL)
		spec_diag(x, GC_SEV_ERROR, g->driver->mark,
			  "add nvidia_driver: BRANCH (e.g. \"535\"), the branch the guest must run",
			  "'driver' needs 'nvidia_driver'");
	if (g->rdma_interface != NULL && g->roce_qos != NULL && g->roce_qos->interface != NULL &&
	    g->rdma_interface->name != NULL &&
	    strcmp(g->rdma_interface->name, g->roce_qos->interface) != 0)
		spec_diag(x, GC_SEV_ERROR, spec_field_mark(x, &g->roce_qos->interface, g->roce_qos->mark),
			  gc_arena_printf(x->arena, "RoCE QoS belongs on the RDMA interface: use "
						    "interface: %s", g->rdma_interface->name),
			  "roce_qos interface '%s' is not the rdma_interface '%s'",
			  g->roce_qos->interface, g->rdma_interface->name);
}

