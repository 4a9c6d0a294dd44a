/*
 * driver.c - the libvirt driver: a KVM host's VMs and SR-IOV networks
 * through the libvirt C API, one connection per host (struct gc_driver).
 *
 * Observation reads every domain and network the spec names in one pass
 * (virDomainGetXMLDesc of the persistent definition, virDomainGetState, the
 * overlay volume's XML) and records them in the graph's property shape
 * (domain.c).  A change to any part of a VM writes its whole definition
 * once per run (virDomainDefineXML keeps the UUID): the domain XML is a
 * function of the spec, so a second part's action finds it written and
 * sends nothing.  The VM is off for it (the planner powers it off first).
 * Power-on starts the inactive networks the domain uses; power-off asks
 * the guest (ACPI) and destroys the domain after the timeout.
 *
 * Errors: a connection that cannot open is a transport fault (retried);
 * everything libvirt refuses is GC_EREMOTE with libvirt's own message, for
 * that VM alone (the connection is shared by the host's VMs).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>

#include "gc/libvirt.h"
#include "gc/pattern.h"
#include "gc/sys/driver.h"
#include "lv_int.h"

#define SHUTDOWN_TIMEOUT_S 300u

/* How long a power-off waits for the guest's own shutdown before the
 * destroy: 300 s, or GC_GUEST_SHUTDOWN_TIMEOUT_MS (tests; the vCenter
 * driver reads the same, docs/vcenter.md). */
static unsigned shutdown_timeout_ms(void)
{
	const char *v = gc_test_hook("GC_GUEST_SHUTDOWN_TIMEOUT_MS");

	return v != NULL && *v != '\0' ? (unsigned)strtoul(v, NULL, 10) : SHUTDOWN_TIMEOUT_S * 1000u;
}
#define DEFINED_MAX 1024

struct lvconn {
	virConnectPtr c;
	const struct gc_target *t;
	const struct gc_resource *const *res; /* the target's, from observe (the graph's) */
	size_t nres;
	char domain_type[8];
	pthread_mutex_t mu;
	char *defined[DEFINED_MAX]; /* VMs whose definition this run wrote */
	size_t ndefined;
	virConnectPtr dead[8]; /* connections replaced after they dropped (closed at the end:
	                          another VM's step may still hold one) */
	size_t ndead;
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/*
 * Test hook of test_kvm's race tests: GC_TEST_LIBVIRT_CREATE_PAUSE="NAME:MS"
 * holds the run MS ms before it creates the network or volume NAME, or
 * defines, starts or destroys the domain NAME, after it looked at it, so
 * that a test can do the same in the gap (what a killed run's call, finished
 * by libvirtd after it, leaves; or a VM that went off by itself).  `doing`
 * words the note: "creating it", "defining it", "starting it", "destroying
 * it".
 */
static void test_pause(struct gc_drv_ctx *ctx, const struct gc_target *t, const char *name,
		       const char *doing)
{
	const char *v = gc_test_hook("GC_TEST_LIBVIRT_CREATE_PAUSE"), *colon;
	size_t n = strlen(name);
	unsigned ms;

	if (v == NULL || (colon = strrchr(v, ':')) == NULL || (size_t)(colon - v) != n ||
	    strncmp(v, name, n) != 0)
		return;
	ms = (unsigned)strtoul(colon + 1, NULL, 10);
	gc_drv_note(ctx, t, "%s: pausing %u ms before %s (test hook)", name, ms, doing);
	sleep_ms(ms);
}

/* libvirt prints errors to stderr by default: a library never prints */
static void quiet(void *data, virErrorPtr e)
{
	(void)data;
	(void)e;
}

static int lv_fail(struct gc_error *err, int code, const char *what, const char *name)
{
	const char *m = virGetLastErrorMessage();

	return gc_error_set(err, code, "%s '%s': %s", what, name, m ? m : "libvirt failed");
}

static const char *host_of(const struct lvconn *c)
{
	return c->t->host != NULL ? c->t->host->name : c->t->name;
}

static int lv_connect(void **conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
		      struct gc_error *err)
{
	const char *uri = t->host != NULL ? t->host->libvirt_uri : NULL;
	struct lvconn *c;

	(void)ctx;
	virSetErrorFunc(NULL, quiet);
	if (uri == NULL || !gc_valid_libvirt_uri(uri))
		return gc_error_set(err, GC_EINVAL, "KVM host '%s': invalid libvirt URI '%s'",
				    t->name, uri ? uri : "(none)");
	c = gc_xcalloc(1, sizeof(*c));
	c->t = t;
	c->c = virConnectOpen(uri);
	if (c->c == NULL) {
		lv_fail(err, GC_ENET, "libvirt at", uri);
		free(c);
		return err->code;
	}
	pthread_mutex_init(&c->mu, NULL);
	*conn = c;
	return 0;
}

/*
 * A connection that dropped (a remote host rebooted under qemu+ssh, libvirtd
 * restarted) is opened again before the next step: the executor keeps a
 * shared connection for the whole run.
 */
static int keep_alive(struct lvconn *c, struct gc_error *err)
{
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	if (virConnectIsAlive(c->c) != 1) {
		virConnectPtr n = virConnectOpen(c->t->host->libvirt_uri);

		if (n == NULL) {
			rc = lv_fail(err, GC_ENET, "libvirt at", c->t->host->libvirt_uri);
		} else if (c->ndead < GC_ARRAY_LEN(c->dead)) {
			c->dead[c->ndead++] = c->c;
			c->c = n;
		} else {
			virConnectClose(n); /* eight reconnects in one run: keep failing */
			rc = gc_error_set(err, GC_ENET, "libvirt at %s keeps dropping the connection",
					  c->t->host->libvirt_uri);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static void lv_disconnect(void *conn)
{
	struct lvconn *c = conn;

	if (c == NULL)
		return;
	for (size_t i = 0; i < c->ndead; i++)
		virConnectClose(c->dead[i]);
	virConnectClose(c->c);
	for (size_t i = 0; i < c->ndefined; i++)
		free(c->defined[i]);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* ---------------------------------------------------------------- small XML reads */

/* "kvm" when the host offers KVM for x86_64 guests, else "qemu" (TCG);
 * the spec's accel: tcg asks for TCG (a host whose /dev/kvm cannot run
 * the guest, like the lab's). */
static void probe_domain_type(struct lvconn *c)
{
	if (c->t->host != NULL && c->t->host->accel != NULL &&
	    strcmp(c->t->host->accel, "tcg") == 0) {
		snprintf(c->domain_type, sizeof(c->domain_type), "qemu");
		return;
	}
	char *caps = virConnectGetCapabilities(c->c);
	char *kvm = gc_lv_xml_get(caps, "string(/capabilities/guest[arch/@name='x86_64']"
				  "/arch/domain[@type='kvm']/@type)");

	snprintf(c->domain_type, sizeof(c->domain_type), "%s", kvm ? "kvm" : "qemu");
	free(kvm);
	free(caps);
}

/* ---------------------------------------------------------------- observing */

static const struct gc_resource *find_res(const struct lvconn *c, enum gc_res_kind kind,
					  const char *vm)
{
	for (size_t i = 0; i < c->nres; i++)
		if (c->res[i]->kind == kind && c->res[i]->vm != NULL && strcmp(c->res[i]->vm, vm) == 0)
			return c->res[i];
	return NULL;
}

struct disk_info {
	struct gc_lv_disk d;
	char *pool, *backing;
};

static void read_disk(struct lvconn *c, const struct gc_resource *vmr, struct disk_info *di)
{
	const char *pool = gc_resource_prop(vmr, "pool");
	struct gc_buf name = GC_BUF_INIT;
	virStoragePoolPtr p;
	virStorageVolPtr v;

	memset(di, 0, sizeof(*di));
	if (pool == NULL || (p = virStoragePoolLookupByName(c->c, pool)) == NULL)
		return;
	gc_lv_volume_name(&name, vmr->vm);
	v = virStorageVolLookupByName(p, gc_buf_str(&name));
	if (v != NULL) {
		char *xml = virStorageVolGetXMLDesc(v, 0);
		virStorageVolInfo info;

		di->backing = gc_lv_xml_get(xml, "string(/volume/backingStore/path)");
		di->pool = gc_xstrdup(pool);
		if (virStorageVolGetInfo(v, &info) == 0)
			di->d.capacity = info.capacity;
		free(xml);
		virStorageVolFree(v);
	}
	virStoragePoolFree(p);
	gc_buf_free(&name);
	di->d.pool = di->pool;
	di->d.backing = di->backing;
}

struct rec_arg {
	struct lvconn *c;
	const char *seed_digest; /* what the spec's seed is now, NULL when none */
	const char *vm;
	const char *xml;
	bool running;
	const struct gc_lv_disk *disk;
	const char *net_id;
	bool autostart;
	struct gc_error *err;
	int rc;
};

static void rec_domain(struct gc_observed *obs, void *arg)
{
	struct rec_arg *a = arg;

	a->rc = a->xml == NULL ? 0 :
		gc_lv_record_domain(obs, a->vm, host_of(a->c), a->xml, a->running, a->disk,
				    a->c->res, a->c->nres, a->err);
	if (a->seed_digest != NULL) {
		char *id = gc_xasprintf("vm/%s/seed", a->vm);

		gc_observed_learn(obs, id, "digest", a->seed_digest);
		free(id);
	}
	/* a VF-backed vGPU reads back as the VF's address: its GPU and index
	 * come from the host's node devices */
	for (size_t i = 0; a->rc == 0 && i < a->c->nres; i++) {
		const struct gc_resource *r = a->c->res[i];
		const char *vf;
		char *parent = NULL;
		unsigned n = 0;

		if (r->kind != GC_RES_VM_DEVICE_VGPU || r->vm == NULL || strcmp(r->vm, a->vm) != 0 ||
		    (vf = gc_observed_get(obs, r->id, "vf_address")) == NULL)
			continue;
		if (gc_lv_vf_parent(a->c->c, vf, &parent, &n) == 0) {
			char num[16];

			snprintf(num, sizeof(num), "%u", n);
			gc_observed_set(obs, r->id, "host_pci", parent);
			gc_observed_set(obs, r->id, "vf", num);
			free(parent);
		}
	}
}

static void rec_network(struct gc_observed *obs, void *arg)
{
	struct rec_arg *a = arg;

	a->rc = gc_lv_record_network(obs, a->net_id, a->xml, a->autostart, a->err);
}

/*
 * The fingerprint of the seed the spec gives VM `vm` now (a desired value
 * only the driver can compute: it reads the guest's public key), into
 * out[17]; false when the VM has no seed or it cannot be built (apply then
 * says why).
 */
static bool seed_digest(struct lvconn *c, struct gc_drv_ctx *ctx, const char *vm, char out[17])
{
	const struct gc_vm *v = gc_cluster_vm(gc_drv_cluster(ctx), vm);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_lv_seed s;

	if (find_res(c, GC_RES_VM_SEED, vm) == NULL || v == NULL ||
	    gc_lv_seed_build(&s, v, &err) != 0)
		return false;
	memcpy(out, s.digest, 17);
	gc_lv_seed_free(&s);
	return true;
}

static int observe_domain(struct lvconn *c, struct gc_drv_ctx *ctx, const struct gc_resource *r,
			  struct gc_error *err)
{
	virDomainPtr d = virDomainLookupByName(c->c, r->vm);
	struct rec_arg a = {.c = c, .vm = r->vm, .err = err};
	struct disk_info di;
	int state = 0, reason = 0;
	char *xml, digest[17];

	if (seed_digest(c, ctx, r->vm, digest))
		a.seed_digest = digest;
	if (d == NULL) {
		virErrorPtr e = virGetLastError();

		if (e != NULL && e->code == VIR_ERR_NO_DOMAIN) {
			gc_drv_record(ctx, rec_domain, &a); /* absent: learn the seed only */
			return 0;
		}
		return lv_fail(err, GC_ENET, "domain", r->vm);
	}
	xml = virDomainGetXMLDesc(d, VIR_DOMAIN_XML_INACTIVE);
	if (xml == NULL || virDomainGetState(d, &state, &reason, 0) != 0) {
		free(xml);
		virDomainFree(d);
		return lv_fail(err, GC_EREMOTE, "domain", r->vm);
	}
	read_disk(c, r, &di);
	a.xml = xml;
	a.running = state == VIR_DOMAIN_RUNNING || state == VIR_DOMAIN_PAUSED ||
		    state == VIR_DOMAIN_BLOCKED || state == VIR_DOMAIN_PMSUSPENDED;
	a.disk = &di.d;
	gc_drv_record(ctx, rec_domain, &a);
	free(di.pool);
	free(di.backing);
	free(xml);
	virDomainFree(d);
	return a.rc;
}

static int observe_network(struct lvconn *c, struct gc_drv_ctx *ctx, const struct gc_resource *r,
			   struct gc_error *err)
{
	const char *name = strrchr(r->id, '/') + 1;
	virNetworkPtr n = virNetworkLookupByName(c->c, name);
	struct rec_arg a = {.c = c, .net_id = r->id, .err = err};
	int autostart = 0;
	char *xml;

	if (n == NULL)
		return 0;
	/* forward mode and PF read the same live or persistent (and the test
	 * driver takes no flags here) */
	xml = virNetworkGetXMLDesc(n, 0);
	if (xml == NULL || virNetworkGetAutostart(n, &autostart) != 0) {
		free(xml);
		virNetworkFree(n);
		return lv_fail(err, GC_EREMOTE, "network", name);
	}
	a.xml = xml;
	a.autostart = autostart != 0;
	gc_drv_record(ctx, rec_network, &a);
	free(xml);
	virNetworkFree(n);
	return a.rc;
}

static int lv_observe(void *conn, struct gc_drv_ctx *ctx, const struct gc_target *t,
		      const struct gc_resource *const *res, size_t nres, struct gc_buf *problems,
		      struct gc_error *err)
{
	struct lvconn *c = conn;
	int rc = 0;

	(void)problems;
	if (keep_alive(c, err) != 0)
		return err->code;
	c->res = res;
	c->nres = nres;
	probe_domain_type(c);
	gc_drv_note(ctx, t, "reading %zu resources", nres);
	for (size_t i = 0; rc == 0 && i < nres; i++) {
		if (res[i]->kind == GC_RES_VM)
			rc = observe_domain(c, ctx, res[i], err);
		else if (res[i]->kind == GC_RES_LIBVIRT_NETWORK)
			rc = observe_network(c, ctx, res[i], err);
	}
	if (rc != 0)
		gc_error_prefix(err, "KVM host '%s': ", t->name);
	return rc;
}

/* ---------------------------------------------------------------- changing */

/* Remember that this run wrote vm's definition; false when it already had. */
static bool first_define(struct lvconn *c, const char *vm)
{
	bool first = true;

	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->ndefined && first; i++)
		first = strcmp(c->defined[i], vm) != 0;
	if (first && c->ndefined < DEFINED_MAX)
		c->defined[c->ndefined++] = gc_xstrdup(vm);
	pthread_mutex_unlock(&c->mu);
	return first;
}

static void forget_define(struct lvconn *c, const char *vm)
{
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->ndefined; i++) {
		if (strcmp(c->defined[i], vm) == 0) {
			free(c->defined[i]);
			c->defined[i] = c->defined[--c->ndefined];
			break;
		}
	}
	pthread_mutex_unlock(&c->mu);
}

/* The overlay volume "<vm>.qcow2" in the VM's pool, backed by its image. */
static int ensure_volume(struct lvconn *c, struct gc_drv_ctx *ctx, const struct gc_resource *vmr,
			 struct gc_error *err)
{
	const char *pool = gc_resource_prop(vmr, "pool"), *image = gc_resource_prop(vmr, "image");
	const char *disk_gb = gc_resource_prop(vmr, "disk_gb");
	struct gc_buf name = GC_BUF_INIT, xml = GC_BUF_INIT;
	virStoragePoolPtr p = NULL;
	virStorageVolPtr base = NULL, v = NULL;
	virStorageVolInfo info;
	char *bxml = NULL, *fmt = NULL;
	unsigned long long cap;
	int rc = 0;

	if (pool == NULL || !gc_valid_name(pool) || image == NULL || !gc_valid_abs_path(image))
		return gc_error_set(err, GC_EINVAL, "VM '%s': invalid pool or image", vmr->vm);
	gc_lv_volume_name(&name, vmr->vm);
	p = virStoragePoolLookupByName(c->c, pool);
	if (p == NULL) {
		rc = lv_fail(err, GC_EREMOTE, "storage pool", pool);
		goto out;
	}
	v = virStorageVolLookupByName(p, gc_buf_str(&name));
	if (v != NULL)
		goto grow; /* an earlier run made it */
	base = virStorageVolLookupByPath(c->c, image);
	if (base == NULL || virStorageVolGetInfo(base, &info) != 0) {
		rc = gc_error_set(err, GC_EREMOTE,
				  "VM '%s': image '%s' is not a volume of a storage pool on host "
				  "'%s' (%s): keep base images in a pool's directory",
				  vmr->vm, image, host_of(c), virGetLastErrorMessage());
		goto out;
	}
	bxml = virStorageVolGetXMLDesc(base, 0);
	fmt = gc_lv_xml_get(bxml, "string(/volume/target/format/@type)");
	cap = disk_gb ? strtoull(disk_gb, NULL, 10) << 30 : info.capacity;
	if (cap < info.capacity) {
		rc = gc_error_set(err, GC_EREMOTE,
				  "VM '%s': disk_gb %s is below the size of image '%s' (%llu bytes)",
				  vmr->vm, disk_gb, image, info.capacity);
		goto out;
	}
	gc_buf_printf(&xml,
		      "<volume><name>%s</name><capacity unit='bytes'>%llu</capacity>"
		      "<target><format type='qcow2'/></target>"
		      "<backingStore><path>%s</path><format type='%s'/></backingStore></volume>",
		      gc_buf_str(&name), cap, image,
		      fmt != NULL && gc_valid_name(fmt) ? fmt : "raw");
	gc_drv_count_change(ctx);
	test_pause(ctx, c->t, gc_buf_str(&name), "creating it");
	v = virStorageVolCreateXML(p, gc_buf_str(&xml), 0);
	if (v != NULL)
		goto out;
	rc = lv_fail(err, GC_EREMOTE, "volume", gc_buf_str(&name));
	/* made meanwhile: a killed run's create that libvirtd finished after its
	 * client was gone (see define_vm).  Kept, as one an earlier run made:
	 * an overlay holds the VM's disk, so it is never deleted */
	v = virStorageVolLookupByName(p, gc_buf_str(&name));
	if (v == NULL)
		goto out;
	gc_drv_note(ctx, c->t, "%s: volume %s created meanwhile: keeping it", vmr->vm,
		    gc_buf_str(&name));
	rc = 0;
grow: {
	/* grow it to disk_gb, never shrink */
	unsigned long long want = disk_gb ? strtoull(disk_gb, NULL, 10) << 30 : 0;

	if (want == 0 || virStorageVolGetInfo(v, &info) != 0 || info.capacity == want)
		goto out;
	if (info.capacity > want) {
		rc = gc_error_set(err, GC_EREMOTE,
				  "VM '%s': its disk %s is %llu GB, disk_gb %s would shrink "
				  "it (gpuclusterctl only grows disks)",
				  vmr->vm, gc_buf_str(&name), info.capacity >> 30, disk_gb);
		goto out;
	}
	gc_drv_count_change(ctx);
	if (virStorageVolResize(v, want, 0) != 0)
		rc = lv_fail(err, GC_EREMOTE, "volume", gc_buf_str(&name));
}
out:
	if (v != NULL)
		virStorageVolFree(v);
	if (base != NULL)
		virStorageVolFree(base);
	if (p != NULL)
		virStoragePoolFree(p);
	free(bxml);
	free(fmt);
	gc_buf_free(&name);
	gc_buf_free(&xml);
	return rc;
}

/*
 * The VM's NoCloud seed as the volume "<vm>-seed.iso" in its pool, written
 * anew (a seed is a few KiB); digest[17] gets its fingerprint.
 */
static int write_seed(struct lvconn *c, struct gc_drv_ctx *ctx, const struct gc_resource *vmr,
		      char digest[17], struct gc_error *err)
{
	const struct gc_vm *v = gc_cluster_vm(gc_drv_cluster(ctx), vmr->vm);
	struct gc_buf iso = GC_BUF_INIT, name = GC_BUF_INIT, xml = GC_BUF_INIT;
	const char *pool = gc_resource_prop(vmr, "pool");
	virStoragePoolPtr p = NULL;
	virStorageVolPtr vol = NULL;
	virStreamPtr st = NULL;
	struct gc_lv_seed s;
	int rc;

	if (v == NULL)
		return gc_error_set(err, GC_ENOTFOUND, "VM '%s' is not in the spec", vmr->vm);
	rc = gc_lv_seed_build(&s, v, err);
	if (rc != 0)
		return rc;
	rc = gc_lv_seed_iso(&iso, &s, err);
	memcpy(digest, s.digest, 17);
	gc_lv_seed_free(&s);
	if (rc != 0)
		goto out;
	gc_lv_seed_volume_name(&name, vmr->vm);
	p = virStoragePoolLookupByName(c->c, pool);
	if (p == NULL) {
		rc = lv_fail(err, GC_EREMOTE, "storage pool", pool);
		goto out;
	}
	gc_buf_printf(&xml,
		      "<volume><name>%s</name><capacity unit='bytes'>%zu</capacity>"
		      "<target><format type='raw'/></target></volume>",
		      gc_buf_str(&name), iso.len);
	gc_drv_count_change(ctx);
	/* the old seed goes first; twice when one appears between the delete and
	 * the create (a killed run's, finished by libvirtd, see define_vm) */
	for (int attempt = 0; attempt < 2 && vol == NULL; attempt++) {
		vol = virStorageVolLookupByName(p, gc_buf_str(&name));
		if (vol != NULL) {
			if (attempt > 0)
				gc_drv_note(ctx, c->t, "%s: volume %s created meanwhile: writing it again",
					    vmr->vm, gc_buf_str(&name));
			virStorageVolDelete(vol, 0);
			virStorageVolFree(vol);
		}
		if (attempt == 0)
			test_pause(ctx, c->t, gc_buf_str(&name), "creating it");
		vol = virStorageVolCreateXML(p, gc_buf_str(&xml), 0);
	}
	st = vol ? virStreamNew(c->c, 0) : NULL;
	if (vol == NULL || st == NULL || virStorageVolUpload(vol, st, 0, iso.len, 0) != 0) {
		rc = lv_fail(err, GC_EREMOTE, "seed volume", gc_buf_str(&name));
		goto out;
	}
	for (size_t off = 0; off < iso.len;) {
		int n = virStreamSend(st, gc_buf_str(&iso) + off, iso.len - off);

		if (n < 0) {
			rc = lv_fail(err, GC_EREMOTE, "seed volume", gc_buf_str(&name));
			virStreamAbort(st);
			goto out;
		}
		off += (size_t)n;
	}
	if (virStreamFinish(st) != 0)
		rc = lv_fail(err, GC_EREMOTE, "seed volume", gc_buf_str(&name));
out:
	if (st != NULL)
		virStreamFree(st);
	if (vol != NULL)
		virStorageVolFree(vol);
	if (p != NULL)
		virStoragePoolFree(p);
	gc_buf_free(&iso);
	gc_buf_free(&name);
	gc_buf_free(&xml);
	return rc;
}

/* The domain XML of one VM (domain.c) with the VFs of its VF-backed vGPUs,
 * in the order of the VM's vGPUs. */
static int vm_xml(struct lvconn *c, const char *vm, struct gc_lv_env *env, struct gc_buf *xml,
		  struct gc_error *err)
{
	char *vfs[16];
	size_t nvf = 0;
	int rc;

	for (size_t i = 0; i < c->nres && nvf < GC_ARRAY_LEN(vfs); i++) {
		const struct gc_resource *r = c->res[i];
		const char *mech = gc_resource_prop(r, "mechanism");
		const char *idx = gc_resource_prop(r, "vf");

		if (r->kind != GC_RES_VM_DEVICE_VGPU || r->vm == NULL || strcmp(r->vm, vm) != 0 ||
		    mech == NULL || strcmp(mech, "vf") != 0)
			continue;
		vfs[nvf++] = idx ? gc_lv_vf_of(c->c, gc_resource_prop(r, "host_pci"),
					 (unsigned)strtoul(idx, NULL, 10))
				 : NULL;
	}
	env->vgpu_vf_pci = (const char *const *)vfs;
	env->nvgpu_vf_pci = nvf;
	rc = gc_lv_domain_xml(xml, vm, c->res, c->nres, env, err);
	for (size_t i = 0; i < nvf; i++)
		free(vfs[i]);
	env->vgpu_vf_pci = NULL;
	env->nvgpu_vf_pci = 0;
	return rc;
}

static int define_vm(struct lvconn *c, struct gc_drv_ctx *ctx, const char *vm,
		     struct gc_error *err)
{
	const struct gc_resource *vmr = find_res(c, GC_RES_VM, vm);
	struct gc_lv_env env = {.domain_type = c->domain_type};
	struct gc_buf xml = GC_BUF_INIT;
	char uuid[VIR_UUID_STRING_BUFLEN], seed[17] = "";
	virDomainPtr d;
	int rc;

	if (vmr == NULL)
		return gc_error_set(err, GC_ENOTFOUND, "VM '%s' is not in the spec of host '%s'", vm,
				    host_of(c));
	if (!first_define(c, vm))
		return 0; /* this run wrote the whole definition already */
	rc = ensure_volume(c, ctx, vmr, err);
	if (rc == 0 && find_res(c, GC_RES_VM_SEED, vm) != NULL)
		rc = write_seed(c, ctx, vmr, seed, err);
	if (rc == 0 && seed[0] != '\0')
		env.seed_digest = seed;
	d = rc == 0 ? virDomainLookupByName(c->c, vm) : NULL;
	if (d != NULL && virDomainGetUUIDString(d, uuid) == 0)
		env.uuid = uuid;
	if (rc == 0)
		rc = vm_xml(c, vm, &env, &xml, err);
	if (rc == 0) {
		virDomainPtr nd;

		gc_drv_count_change(ctx);
		if (d == NULL)
			test_pause(ctx, c->t, vm, "defining it");
		nd = virDomainDefineXMLFlags(c->c, gc_buf_str(&xml), VIR_DOMAIN_DEFINE_VALIDATE);
		if (nd == NULL && d == NULL) {
			/*
			 * "already exists with uuid": a domain of this name appeared after
			 * the look-up above.  A run killed in the middle of its own define
			 * leaves exactly that: libvirtd finishes the call after its client
			 * is gone (the soak found it, docs/fuzzing.md).  The definition is
			 * the spec's either way: write it again over that domain's UUID.
			 * Any other failure is reported with libvirt's first message.
			 */
			struct gc_error first = {0};

			lv_fail(&first, GC_EREMOTE, "domain", vm);
			d = virDomainLookupByName(c->c, vm);
			if (d != NULL && virDomainGetUUIDString(d, uuid) == 0) {
				gc_drv_note(ctx, c->t, "%s: defined meanwhile (uuid %s): defining it again",
					    vm, uuid);
				env.uuid = uuid;
				gc_buf_reset(&xml);
				rc = vm_xml(c, vm, &env, &xml, err);
				if (rc == 0)
					nd = virDomainDefineXMLFlags(c->c, gc_buf_str(&xml),
								     VIR_DOMAIN_DEFINE_VALIDATE);
				if (rc == 0 && nd == NULL)
					rc = lv_fail(err, GC_EREMOTE, "domain", vm);
			} else {
				*err = first;
				rc = first.code;
			}
		} else if (nd == NULL) {
			rc = lv_fail(err, GC_EREMOTE, "domain", vm);
		}
		if (nd != NULL)
			virDomainFree(nd);
	}
	if (d != NULL)
		virDomainFree(d);
	if (rc != 0)
		forget_define(c, vm);
	gc_buf_free(&xml);
	return rc;
}

static int define_network(struct lvconn *c, struct gc_drv_ctx *ctx, const struct gc_resource *r,
			  struct gc_error *err)
{
	const char *name = strrchr(r->id, '/') + 1;
	struct gc_buf xml = GC_BUF_INIT;
	virNetworkPtr n = NULL;
	int rc = 0;

	/*
	 * Over an existing network's UUID (libvirt refuses a name it holds under
	 * another UUID); a second time when the first define meets a network of
	 * this name that appeared after the look-up (a killed run's define that
	 * libvirtd finished after its client was gone, as for domains).
	 */
	for (int attempt = 0; attempt < 2 && rc == 0 && n == NULL; attempt++) {
		virNetworkPtr old = virNetworkLookupByName(c->c, name);
		char uuid[VIR_UUID_STRING_BUFLEN];
		bool had = old != NULL;

		if (attempt > 0 && !had)
			break;
		gc_buf_reset(&xml);
		rc = gc_lv_network_xml(&xml, name, gc_resource_prop(r, "pf"),
				       had && virNetworkGetUUIDString(old, uuid) == 0 ? uuid : NULL,
				       err);
		if (old != NULL)
			virNetworkFree(old);
		if (rc != 0)
			break;
		if (attempt == 0)
			gc_drv_count_change(ctx);
		if (!had && attempt == 0)
			test_pause(ctx, c->t, name, "creating it");
		n = virNetworkDefineXML(c->c, gc_buf_str(&xml));
		if (n == NULL)
			rc = lv_fail(err, GC_EREMOTE, "network", name);
		if (n == NULL && !had && attempt == 0) {
			struct gc_error first = *err;

			rc = 0; /* look again: did it appear meanwhile? */
			old = virNetworkLookupByName(c->c, name);
			if (old == NULL) {
				*err = first;
				rc = first.code;
			} else {
				virNetworkFree(old);
				gc_drv_note(ctx, c->t, "network %s: defined meanwhile: defining it again",
					    name);
			}
		}
	}
	if (n != NULL) {
		if (virNetworkSetAutostart(n, 1) != 0)
			rc = lv_fail(err, GC_EREMOTE, "network", name);
		virNetworkFree(n);
	}
	gc_buf_free(&xml);
	return rc;
}

/* Networks of the domain's interfaces that are not running yet. */
static int start_networks(struct lvconn *c, const char *vm, struct gc_error *err)
{
	for (size_t i = 0; i < c->nres; i++) {
		const struct gc_resource *r = c->res[i];
		const char *net;
		virNetworkPtr n;
		int rc = 0;

		if ((r->kind != GC_RES_VM_NIC_SRIOV && r->kind != GC_RES_VM_NIC_VIRTIO) ||
		    r->vm == NULL || strcmp(r->vm, vm) != 0 ||
		    (net = gc_resource_prop(r, "network")) == NULL)
			continue;
		n = virNetworkLookupByName(c->c, net);
		if (n == NULL)
			return lv_fail(err, GC_EREMOTE, "network", net);
		if (virNetworkIsActive(n) == 0 && virNetworkCreate(n) != 0)
			rc = lv_fail(err, GC_EREMOTE, "network", net);
		virNetworkFree(n);
		if (rc != 0) {
			gc_error_prefix(err, "VM '%s': ", vm);
			return rc;
		}
	}
	return 0;
}

static int power(struct lvconn *c, struct gc_drv_ctx *ctx, const struct gc_action *a, bool on,
		 struct gc_error *err)
{
	virDomainPtr d = virDomainLookupByName(c->c, a->vm);
	int state = 0, reason = 0, rc = 0;

	if (d == NULL)
		return lv_fail(err, GC_EREMOTE, "domain", a->vm);
	if (virDomainGetState(d, &state, &reason, 0) != 0) {
		rc = lv_fail(err, GC_EREMOTE, "domain", a->vm);
	} else if (on && state != VIR_DOMAIN_RUNNING) {
		rc = start_networks(c, a->vm, err);
		gc_drv_count_change(ctx);
		if (rc == 0)
			test_pause(ctx, a->target, a->vm, "starting it");
		if (rc == 0 && virDomainCreate(d) != 0) {
			/* running now: a killed run's start that libvirtd finished
			 * after the run was gone (see define_vm) met ours */
			rc = lv_fail(err, GC_EREMOTE, "VM", a->vm);
			if (virDomainGetState(d, &state, &reason, 0) == 0 && state == VIR_DOMAIN_RUNNING) {
				gc_drv_note(ctx, a->target, "%s: started meanwhile: it runs", a->vm);
				gc_error_clear(err);
				rc = 0;
			}
		}
	} else if (!on && state != VIR_DOMAIN_SHUTOFF) {
		unsigned limit = shutdown_timeout_ms(), waited = 0;

		gc_drv_count_change(ctx);
		if (virDomainShutdown(d) != 0)
			waited = limit; /* no ACPI: go straight to destroy */
		while (waited < limit && virDomainGetState(d, &state, &reason, 0) == 0 &&
		       state != VIR_DOMAIN_SHUTOFF && !gc_drv_interrupted(ctx)) {
			unsigned step = limit - waited < 1000 ? limit - waited : 1000;

			gc_drv_note(ctx, a->target, "%s: guest shutdown, %u s", a->vm, waited / 1000);
			sleep_ms(step);
			waited += step;
		}
		/* Ctrl-C: the shutdown asked stays asked, but a graceful stop
		 * forces nothing off (nor waits out the rest of the timeout) */
		if (waited < limit && gc_drv_interrupted(ctx) &&
		    virDomainGetState(d, &state, &reason, 0) == 0 && state != VIR_DOMAIN_SHUTOFF) {
			virDomainFree(d);
			return gc_error_set(err, GC_EINTR, "VM '%s': interrupted %u s into its guest "
					    "shutdown: not destroyed (the guest may still shut down)",
					    a->vm, waited / 1000);
		}
		if (virDomainGetState(d, &state, &reason, 0) == 0 && state != VIR_DOMAIN_SHUTOFF) {
			test_pause(ctx, a->target, a->vm, "destroying it");
			if (virDomainDestroy(d) != 0) {
				rc = lv_fail(err, GC_EREMOTE, "VM", a->vm);
				/* it went off between the look and the destroy: what we wanted */
				if (virDomainGetState(d, &state, &reason, 0) == 0 &&
				    state == VIR_DOMAIN_SHUTOFF) {
					gc_drv_note(ctx, a->target, "%s: went off by itself before "
						    "the destroy", a->vm);
					gc_error_clear(err);
					rc = 0;
				}
			}
		}
	}
	virDomainFree(d);
	return rc;
}

static int lv_apply(void **conn, struct gc_drv_ctx *ctx, const struct gc_action *a,
		    struct gc_error *err)
{
	struct lvconn *c = *conn;

	if (keep_alive(c, err) != 0)
		return err->code;
	switch (a->kind) {
	case GC_ACT_POWER_ON:
		return power(c, ctx, a, true, err);
	case GC_ACT_POWER_OFF:
		return power(c, ctx, a, false, err);
	case GC_ACT_APPLY:
		break;
	default:
		return gc_error_set(err, GC_ENOTSUP, "libvirt driver: no '%s' step on KVM host '%s'",
				    gc_action_kind_name(a->kind), host_of(c));
	}
	if (a->res_kind == GC_RES_LIBVIRT_NETWORK && a->resource != NULL)
		return define_network(c, ctx, a->resource, err);
	if (a->vm == NULL)
		return gc_error_set(err, GC_ENOTSUP, "libvirt driver: resource '%s' is not a VM's",
				    a->resource_id ? a->resource_id : "?");
	if (a->res_kind == GC_RES_VM_POWER && a->resource != NULL) {
		const char *want = gc_resource_prop(a->resource, "power");

		return power(c, ctx, a, want != NULL && strcmp(want, "on") == 0, err);
	}
	return define_vm(c, ctx, a->vm, err);
}

const struct gc_driver gc_driver_libvirt = {
	.name = "libvirt",
	.kind = GC_TARGET_LIBVIRT,
	.shared_conn = true,
	.connect = lv_connect,
	.observe = lv_observe,
	.apply = lv_apply,
	.disconnect = lv_disconnect,
};
