/*
 * vmops.c - vCenter tasks and the VM lifecycle: clone, power, guest
 * shutdown, relocation, and the PCI devices a host offers a VM.
 *
 * A *_Task method answers with a Task moref at once; the outcome is in
 * Task.info.  gc_vcenter_run_task() sends such a body and waits: it polls
 * info.state, info.error and info.result with a RetrievePropertiesEx on that
 * one object, starting at 50 ms and backing off to 1 s, until the state is
 * success or error or the deadline passes.  Every *_Task of the driver
 * (ReconfigVM_Task, CloneVM_Task, CreateDVS_Task ...) goes through it, so
 * their errors read alike: "<method> of <object> (<task>): <vCenter's
 * localizedMessage> (<fault type>)".  The connection's lock is not held
 * while a task is waited for (soap.c), so threads waiting on different
 * tasks interleave their polls.  gc_vcenter_wait_idle() polls an entity's
 * recentTask the same way, for the task a call whose reply was lost may
 * have started.
 *
 * Bodies follow govmomi's vim25/types/types.go element order:
 * CloneVM_Task(folder, name, spec{location, template, powerOn}) with
 * VirtualMachineRelocateSpec(folder, datastore, pool, host); QueryConfigTarget
 * answers a ConfigTarget whose pciPassthrough[] and sriov[] entries carry a
 * HostPciDevice and the systemId a static passthrough backing needs.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gc/pattern.h"
#include "soap.h"

#define POLL_FIRST_MS 50u
#define POLL_MAX_MS 1000u
#define PCI_TARGETS_MAX 4096 /* entries of one ConfigTarget we keep */

/* ---------------------------------------------------------------- task wait */

struct task_info {
	char state[32];    /* queued | running | success | error */
	char message[400]; /* info.error.localizedMessage */
	char fault[96];    /* xsi:type of info.error.fault */
	char result[256];  /* info.result: a moref's id, or "" */
	bool result_long;  /* info.result did not fit */
};

/*
 * RetrievePropertiesEx of `paths` of the one object type:id.  On success
 * *doc is the reply (caller frees with xmlFreeDoc) and *objects its
 * returnval's <objects> (NULL when vCenter sent none).
 */
static int retrieve_one(struct gc_vcenter_conn *vc, const char *type, const char *id,
			const char *const *paths, size_t npaths, xmlDocPtr *doc,
			xmlNodePtr *objects, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	xmlNodePtr ret;
	int rc;

	gc_vcenter_soap_begin(&s, "RetrievePropertiesEx", "PropertyCollector",
			      vc->property_collector);
	gc_vcenter_soap_open(&s, "specSet", NULL);
	gc_vcenter_soap_open(&s, "propSet", NULL);
	gc_vcenter_soap_elem(&s, "type", type);
	gc_vcenter_soap_elem(&s, "all", "false");
	for (size_t i = 0; i < npaths; i++)
		gc_vcenter_soap_elem(&s, "pathSet", paths[i]);
	gc_vcenter_soap_close(&s, "propSet");
	gc_vcenter_soap_open(&s, "objectSet", NULL);
	gc_vcenter_soap_moref(&s, "obj", type, id);
	gc_vcenter_soap_elem(&s, "skip", "false");
	gc_vcenter_soap_close(&s, "objectSet");
	gc_vcenter_soap_close(&s, "specSet");
	gc_vcenter_soap_open(&s, "options", NULL);
	gc_vcenter_soap_close(&s, "options");
	rc = gc_vcenter_soap_end(&s, vc, err);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, &s, doc, &ret, err);
	gc_vcenter_soap_free(&s);
	if (rc < 0)
		return rc;
	*objects = gc_vcenter_xml_child(gc_vcenter_xml_child(ret, "returnval"), "objects");
	return 0;
}

static void read_task_info(struct task_info *ti, xmlNodePtr objects)
{
	char name[64];

	for (xmlNodePtr p = gc_vcenter_xml_child(objects, "propSet"); p != NULL;
	     p = gc_vcenter_xml_next(p, "propSet")) {
		xmlNodePtr val = gc_vcenter_xml_child(p, "val");

		gc_vcenter_xml_copy(name, sizeof(name), p, "name");
		if (strcmp(name, "info.state") == 0) {
			gc_vcenter_xml_copy(ti->state, sizeof(ti->state), val, NULL);
		} else if (strcmp(name, "info.error") == 0) {
			xmlNodePtr f = gc_vcenter_xml_child(val, "fault");

			gc_vcenter_xml_copy(ti->message, sizeof(ti->message), val,
					    "localizedMessage");
			if (gc_vcenter_xml_type(f, ti->fault, sizeof(ti->fault)) == NULL)
				ti->fault[0] = '\0';
		} else if (strcmp(name, "info.result") == 0) {
			char big[sizeof(ti->result) + 1];

			gc_vcenter_xml_copy(big, sizeof(big), val, NULL);
			ti->result_long = strlen(big) >= sizeof(ti->result);
			if (!ti->result_long)
				memcpy(ti->result, big, strlen(big) + 1);
		}
	}
}

static int poll_task(struct gc_vcenter_conn *vc, const char *task, struct task_info *ti,
		     struct gc_error *err)
{
	static const char *const paths[] = {"info.state", "info.error", "info.result"};
	xmlDocPtr doc = NULL;
	xmlNodePtr objects;
	int rc = retrieve_one(vc, "Task", task, paths, GC_ARRAY_LEN(paths), &doc, &objects, err);

	if (rc < 0)
		return rc;
	memset(ti, 0, sizeof(*ti));
	read_task_info(ti, objects);
	xmlFreeDoc(doc);
	return 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

int gc_vcenter_task_wait_result(struct gc_vcenter_conn *vc, const char *task, const char *what,
				unsigned timeout_ms, char *result, size_t n, struct gc_error *err)
{
	uint64_t deadline = gc_now_ns() + (uint64_t)timeout_ms * 1000000u;
	unsigned pause = POLL_FIRST_MS;
	struct task_info ti;
	int rc;

	for (;;) {
		rc = poll_task(vc, task, &ti, err);
		if (rc < 0)
			return rc;
		if (strcmp(ti.state, "success") == 0)
			break;
		if (strcmp(ti.state, "error") == 0)
			return gc_error_set(err, GC_EREMOTE, "%s: %s: %s (%s)", vc->target, what,
					    ti.message[0] ? ti.message : "task failed",
					    ti.fault[0] ? ti.fault : "no fault type");
		if (ti.state[0] == '\0')
			return gc_error_set(err, GC_EREMOTE, "%s: %s: no such task", vc->target,
					    what);
		if (gc_now_ns() + (uint64_t)pause * 1000000u > deadline)
			return gc_error_set(err, GC_ETIMEOUT, "%s: %s: still %s after %u ms",
					    vc->target, what, ti.state, timeout_ms);
		sleep_ms(pause);
		pause = pause * 2 > POLL_MAX_MS ? POLL_MAX_MS : pause * 2;
	}
	if (result == NULL)
		return 0;
	if (ti.result_long || strlen(ti.result) >= n)
		return gc_error_set(err, GC_EREMOTE, "%s: %s: the task's result does not fit in "
				    "%zu bytes", vc->target, what, n);
	memcpy(result, ti.result, strlen(ti.result) + 1);
	return 0;
}

int gc_vcenter_task_wait(struct gc_vcenter_conn *vc, const char *task, const char *what,
			 unsigned timeout_ms, struct gc_error *err)
{
	return gc_vcenter_task_wait_result(vc, task, what, timeout_ms, NULL, 0, err);
}

int gc_vcenter_run_task(struct gc_vcenter_conn *vc, struct gc_vcenter_soap *s, const char *object,
			unsigned timeout_ms, char *result, size_t n, struct gc_error *err)
{
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	char task[128], what[256];
	int rc;

	rc = gc_vcenter_soap_end(s, vc, err);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, s, &doc, &ret, err);
	if (rc < 0) {
		gc_vcenter_soap_free(s);
		return rc;
	}
	gc_vcenter_xml_copy(task, sizeof(task), ret, "returnval");
	xmlFreeDoc(doc);
	if (task[0] == '\0')
		rc = gc_error_set(err, GC_EREMOTE, "%s: %s of %s returned no task", vc->target,
				  s->method, object);
	snprintf(what, sizeof(what), "%s of %s (%s)", s->method, object, task);
	gc_vcenter_soap_free(s);
	if (rc < 0)
		return rc;
	return gc_vcenter_task_wait_result(vc, task, what, timeout_ms, result, n, err);
}

/* The ids of the tasks in the entity's recentTask. */
static int recent_tasks(struct gc_vcenter_conn *vc, const char *type, const char *id,
			char (*out)[128], size_t max, size_t *n, struct gc_error *err)
{
	static const char *const paths[] = {"recentTask"};
	xmlDocPtr doc = NULL;
	xmlNodePtr objects, p;
	int rc = retrieve_one(vc, type, id, paths, GC_ARRAY_LEN(paths), &doc, &objects, err);

	if (rc < 0)
		return rc;
	*n = 0;
	for (p = gc_vcenter_xml_child(objects, "propSet"); p != NULL;
	     p = gc_vcenter_xml_next(p, "propSet")) {
		xmlNodePtr val = gc_vcenter_xml_child(p, "val");

		/* ArrayOfManagedObjectReference: <ManagedObjectReference type="Task"> */
		for (xmlNodePtr t = gc_vcenter_xml_child(val, "ManagedObjectReference");
		     t != NULL && *n < max; t = gc_vcenter_xml_next(t, "ManagedObjectReference"))
			gc_vcenter_xml_copy(out[(*n)++], sizeof(out[0]), t, NULL);
	}
	xmlFreeDoc(doc);
	return 0;
}

int gc_vcenter_wait_idle(struct gc_vcenter_conn *vc, const char *type, const char *id,
			 unsigned timeout_ms, struct gc_error *err)
{
	uint64_t deadline = gc_now_ns() + (uint64_t)timeout_ms * 1000000u;
	unsigned pause = POLL_FIRST_MS;
	char tasks[32][128], busy[128];
	struct task_info ti;
	size_t n;
	int rc;

	for (;;) {
		rc = recent_tasks(vc, type, id, tasks, GC_ARRAY_LEN(tasks), &n, err);
		if (rc < 0)
			return rc;
		busy[0] = '\0';
		for (size_t i = 0; i < n && busy[0] == '\0'; i++) {
			if (tasks[i][0] == '\0')
				continue;
			rc = poll_task(vc, tasks[i], &ti, err);
			if (rc < 0)
				return rc;
			if (strcmp(ti.state, "queued") == 0 || strcmp(ti.state, "running") == 0)
				memcpy(busy, tasks[i], sizeof(busy)); /* same size, NUL-ended */
		}
		if (busy[0] == '\0')
			return 0;
		if (gc_now_ns() + (uint64_t)pause * 1000000u > deadline)
			return gc_error_set(err, GC_ETIMEOUT, "%s: %s %s: task %s still running after "
					    "%u ms", vc->target, type, id, busy, timeout_ms);
		sleep_ms(pause);
		pause = pause * 2 > POLL_MAX_MS ? POLL_MAX_MS : pause * 2;
	}
}

/* ---------------------------------------------------------------- VM lifecycle */

static int need(const struct gc_vcenter_conn *vc, const char *method, const char *what,
		const char *v, struct gc_error *err)
{
	if (v == NULL || v[0] == '\0')
		return gc_error_set(err, GC_EINVAL, "%s: %s: no %s", vc->target, method, what);
	return 0;
}

void gc_vcenter_clone_body(struct gc_vcenter_soap *s, const char *from, const char *name,
			   const char *folder, const char *pool, const char *host,
			   const char *datastore)
{
	gc_vcenter_soap_begin(s, "CloneVM_Task", "VirtualMachine", from);
	gc_vcenter_soap_moref(s, "folder", "Folder", folder);
	gc_vcenter_soap_elem(s, "name", name);
	gc_vcenter_soap_open(s, "spec", NULL);
	gc_vcenter_soap_open(s, "location", NULL);
	gc_vcenter_soap_moref_opt(s, "datastore", "Datastore", datastore);
	gc_vcenter_soap_moref_opt(s, "pool", "ResourcePool", pool);
	gc_vcenter_soap_moref_opt(s, "host", "HostSystem", host);
	gc_vcenter_soap_close(s, "location");
	gc_vcenter_soap_elem(s, "template", "false");
	gc_vcenter_soap_elem(s, "powerOn", "false");
	gc_vcenter_soap_close(s, "spec");
}

int gc_vcenter_clone(char *out, size_t n, struct gc_vcenter_conn *vc, const char *from,
		     const char *name, const char *folder, const char *pool, const char *host,
		     const char *datastore, unsigned timeout_ms, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	int rc;

	if ((rc = need(vc, "CloneVM_Task", "source VM", from, err)) < 0 ||
	    (rc = need(vc, "CloneVM_Task", "name", name, err)) < 0 ||
	    (rc = need(vc, "CloneVM_Task", "folder", folder, err)) < 0)
		return rc;
	if (strlen(name) > 80) /* vCenter's limit for an entity name */
		return gc_error_set(err, GC_EINVAL, "%s: CloneVM_Task of %s: name '%.80s...' is "
				    "longer than 80 bytes", vc->target, from, name);
	gc_vcenter_clone_body(&s, from, name, folder, pool, host, datastore);
	return gc_vcenter_run_task(vc, &s, from, timeout_ms, out, n, err);
}

static int vm_task(struct gc_vcenter_conn *vc, const char *method, const char *vm,
		   unsigned timeout_ms, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	int rc = need(vc, method, "VM", vm, err);

	if (rc < 0)
		return rc;
	gc_vcenter_soap_begin(&s, method, "VirtualMachine", vm);
	return gc_vcenter_run_task(vc, &s, vm, timeout_ms, NULL, 0, err);
}

int gc_vcenter_power_on(struct gc_vcenter_conn *vc, const char *vm, unsigned timeout_ms,
			struct gc_error *err)
{
	return vm_task(vc, "PowerOnVM_Task", vm, timeout_ms, err);
}

int gc_vcenter_power_off(struct gc_vcenter_conn *vc, const char *vm, unsigned timeout_ms,
			 struct gc_error *err)
{
	return vm_task(vc, "PowerOffVM_Task", vm, timeout_ms, err);
}

int gc_vcenter_shutdown_guest(struct gc_vcenter_conn *vc, const char *vm, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	int rc = need(vc, "ShutdownGuest", "VM", vm, err);

	if (rc < 0)
		return rc;
	gc_vcenter_soap_begin(&s, "ShutdownGuest", "VirtualMachine", vm);
	return gc_vcenter_soap_run(vc, &s, err);
}

void gc_vcenter_relocate_body(struct gc_vcenter_soap *s, const char *vm, const char *host,
			      const char *pool)
{
	gc_vcenter_soap_begin(s, "RelocateVM_Task", "VirtualMachine", vm);
	gc_vcenter_soap_open(s, "spec", NULL);
	gc_vcenter_soap_moref_opt(s, "pool", "ResourcePool", pool);
	gc_vcenter_soap_moref(s, "host", "HostSystem", host);
	gc_vcenter_soap_close(s, "spec");
}

int gc_vcenter_relocate(struct gc_vcenter_conn *vc, const char *vm, const char *host,
			const char *pool, unsigned timeout_ms, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	int rc;

	if ((rc = need(vc, "RelocateVM_Task", "VM", vm, err)) < 0 ||
	    (rc = need(vc, "RelocateVM_Task", "host", host, err)) < 0)
		return rc;
	gc_vcenter_relocate_body(&s, vm, host, pool);
	return gc_vcenter_run_task(vc, &s, vm, timeout_ms, NULL, 0, err);
}

int gc_vcenter_power_state(struct gc_vcenter_conn *vc, const char *vm, char *out, size_t n,
			   struct gc_error *err)
{
	static const char *const paths[] = {"runtime.powerState"};
	xmlDocPtr doc = NULL;
	xmlNodePtr objects, p;
	char state[64] = "";
	int rc = need(vc, "RetrievePropertiesEx", "VM", vm, err);

	if (rc < 0)
		return rc;
	rc = retrieve_one(vc, "VirtualMachine", vm, paths, GC_ARRAY_LEN(paths), &doc, &objects,
			  err);
	if (rc < 0)
		return rc;
	for (p = gc_vcenter_xml_child(objects, "propSet"); p != NULL;
	     p = gc_vcenter_xml_next(p, "propSet")) {
		char name[64];

		gc_vcenter_xml_copy(name, sizeof(name), p, "name");
		if (strcmp(name, "runtime.powerState") == 0)
			gc_vcenter_xml_copy(state, sizeof(state), p, "val");
	}
	xmlFreeDoc(doc);
	if (state[0] == '\0')
		return gc_error_set(err, GC_EREMOTE, "%s: RetrievePropertiesEx: no "
				    "runtime.powerState for %s", vc->target, vm);
	if (strlen(state) >= n)
		return gc_error_set(err, GC_EINVAL, "%s: power state '%s' of %s does not fit in "
				    "%zu bytes", vc->target, state, vm, n);
	memcpy(out, state, strlen(state) + 1);
	return 0;
}

/* ---------------------------------------------------------------- QueryConfigTarget */

/* One VirtualMachinePciPassthroughInfo (or its subclass VirtualMachineSriovInfo). */
static bool read_target(struct gc_vcenter_pci_target *t, xmlNodePtr e, bool sriov)
{
	xmlNodePtr dev = gc_vcenter_xml_child(e, "pciDevice");
	char id[64];

	gc_vcenter_xml_copy(id, sizeof(id), dev, "id");
	if (!gc_valid_pci(id))
		return false;
	memset(t, 0, sizeof(*t));
	memcpy(t->id, id, strlen(id) + 1); /* a PCI address is 12 bytes */
	t->vendor_id = gc_vcenter_xml_int(dev, "vendorId", 0);
	t->device_id = gc_vcenter_xml_int(dev, "deviceId", 0);
	gc_vcenter_xml_copy(t->device_name, sizeof(t->device_name), dev, "deviceName");
	gc_vcenter_xml_copy(t->system_id, sizeof(t->system_id), e, "systemId");
	t->sriov = sriov;
	return true;
}

int gc_vcenter_pci_targets(struct gc_vcenter_pci_target **out, size_t *nout, xmlNodePtr ret,
			   const char *target, struct gc_error *err)
{
	static const char *const lists[] = {"pciPassthrough", "sriov"};
	xmlNodePtr ct = gc_vcenter_xml_child(ret, "returnval");
	struct gc_vcenter_pci_target *t = NULL;
	size_t n = 0, cap = 0;

	for (size_t l = 0; l < GC_ARRAY_LEN(lists); l++) {
		bool sriov = l == 1;

		for (xmlNodePtr e = gc_vcenter_xml_child(ct, lists[l]); e != NULL;
		     e = gc_vcenter_xml_next(e, lists[l])) {
			char vf[8];

			/* A virtual function is not something a VM is given by id. */
			gc_vcenter_xml_copy(vf, sizeof(vf), e, "virtualFunction");
			if (sriov && strcmp(vf, "true") == 0)
				continue;
			if (n == PCI_TARGETS_MAX) {
				free(t);
				return gc_error_set(err, GC_EREMOTE, "%s: QueryConfigTarget: more "
						    "than %d PCI devices", target,
						    PCI_TARGETS_MAX);
			}
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				t = gc_xrealloc(t, cap * sizeof(*t));
			}
			n += read_target(&t[n], e, sriov);
		}
	}
	*out = t;
	*nout = n;
	return 0;
}

int gc_vcenter_query_pci(struct gc_vcenter_pci_target **out, size_t *nout,
			 struct gc_vcenter_conn *vc, const char *environment_browser,
			 const char *host, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	int rc;

	if ((rc = need(vc, "QueryConfigTarget", "environment browser", environment_browser,
		       err)) < 0 ||
	    (rc = need(vc, "QueryConfigTarget", "host", host, err)) < 0)
		return rc;
	gc_vcenter_soap_begin(&s, "QueryConfigTarget", "EnvironmentBrowser", environment_browser);
	gc_vcenter_soap_moref(&s, "host", "HostSystem", host);
	rc = gc_vcenter_soap_end(&s, vc, err);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, &s, &doc, &ret, err);
	gc_vcenter_soap_free(&s);
	if (rc < 0)
		return rc;
	rc = gc_vcenter_pci_targets(out, nout, ret, vc->target, err);
	xmlFreeDoc(doc);
	return rc;
}
