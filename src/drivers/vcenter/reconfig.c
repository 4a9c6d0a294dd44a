/*
 * reconfig.c - ReconfigVM_Task and waiting for a vCenter task.
 *
 * A change is written as a VirtualMachineConfigSpec with only the elements
 * it sets, in XSD order (REAL-FORMATS D.2: ... extraConfig ... firmware ...
 * memoryReservationLockedToMax).  OptionValue.value carries
 * xsi:type="xsd:string", as govmomi and pyvmomi send it (see soap.c on the
 * prefix).
 *
 * ReconfigVM_Task answers with a Task moref at once; the outcome is in
 * Task.info.  We poll info.state and info.error with a RetrievePropertiesEx
 * on that one object, starting at 50 ms and backing off to 1 s, until the
 * state is success or error or the deadline passes.  A task error is
 * reported with vCenter's localizedMessage and the fault type.
 */
#include <string.h>
#include <time.h>

#include "soap.h"

#define POLL_FIRST_MS 50u
#define POLL_MAX_MS 1000u

static void write_change(struct gc_vcenter_soap *s, const struct gc_vcenter_vm_change *c)
{
	gc_vcenter_soap_open(s, "spec", NULL);
	for (size_t i = 0; i < c->nextra_config; i++) {
		gc_vcenter_soap_open(s, "extraConfig", NULL);
		gc_vcenter_soap_elem(s, "key", c->extra_config[i].key);
		gc_vcenter_soap_open(s, "value", "xsd:string");
		gc_vcenter_soap_text(s, c->extra_config[i].value);
		gc_vcenter_soap_close(s, "value");
		gc_vcenter_soap_close(s, "extraConfig");
	}
	if (c->firmware != NULL)
		gc_vcenter_soap_elem(s, "firmware", c->firmware);
	if (c->reservation_locked >= 0)
		gc_vcenter_soap_elem(s, "memoryReservationLockedToMax",
				     c->reservation_locked ? "true" : "false");
	gc_vcenter_soap_close(s, "spec");
}

void gc_vcenter_reconfig_body(struct gc_vcenter_soap *s, const char *vm_moref,
			      const struct gc_vcenter_vm_change *change)
{
	gc_vcenter_soap_begin(s, "ReconfigVM_Task", "VirtualMachine", vm_moref);
	write_change(s, change);
}

int gc_vcenter_reconfigure(struct gc_vcenter_conn *vc, const char *vm_moref,
			   const struct gc_vcenter_vm_change *change, unsigned timeout_ms,
			   struct gc_error *err)
{
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	char task[128], what[192];
	int rc;

	if (change->firmware != NULL && strcmp(change->firmware, "efi") != 0 &&
	    strcmp(change->firmware, "bios") != 0)
		return gc_error_set(err, GC_EINVAL, "%s: firmware '%s' is neither efi nor bios",
				    vc->target, change->firmware);
	gc_vcenter_reconfig_body(&s, vm_moref, change);
	rc = gc_vcenter_soap_end(&s, vc, err);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, &s, &doc, &ret, err);
	gc_vcenter_soap_free(&s);
	if (rc < 0)
		return rc;
	gc_vcenter_xml_copy(task, sizeof(task), ret, "returnval");
	xmlFreeDoc(doc);
	if (task[0] == '\0')
		return gc_error_set(err, GC_EREMOTE, "%s: ReconfigVM_Task of %s returned no task",
				    vc->target, vm_moref);
	snprintf(what, sizeof(what), "ReconfigVM_Task of %s (%s)", vm_moref, task);
	return gc_vcenter_task_wait(vc, task, what, timeout_ms, err);
}

/* ---------------------------------------------------------------- task wait */

struct task_info {
	char state[32];    /* queued | running | success | error */
	char message[400]; /* info.error.localizedMessage */
	char fault[96];    /* xsi:type of info.error.fault */
};

static void read_task_info(struct task_info *ti, xmlNodePtr ret)
{
	xmlNodePtr objects = gc_vcenter_xml_child(gc_vcenter_xml_child(ret, "returnval"), "objects");
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
		}
	}
}

static int poll_task(struct gc_vcenter_conn *vc, const char *task, struct task_info *ti,
		     struct gc_error *err)
{
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	int rc;

	gc_vcenter_soap_begin(&s, "RetrievePropertiesEx", "PropertyCollector",
			      vc->property_collector);
	gc_vcenter_soap_open(&s, "specSet", NULL);
	gc_vcenter_soap_open(&s, "propSet", NULL);
	gc_vcenter_soap_elem(&s, "type", "Task");
	gc_vcenter_soap_elem(&s, "all", "false");
	gc_vcenter_soap_elem(&s, "pathSet", "info.state");
	gc_vcenter_soap_elem(&s, "pathSet", "info.error");
	gc_vcenter_soap_close(&s, "propSet");
	gc_vcenter_soap_open(&s, "objectSet", NULL);
	gc_vcenter_soap_moref(&s, "obj", "Task", task);
	gc_vcenter_soap_elem(&s, "skip", "false");
	gc_vcenter_soap_close(&s, "objectSet");
	gc_vcenter_soap_close(&s, "specSet");
	gc_vcenter_soap_open(&s, "options", NULL);
	gc_vcenter_soap_close(&s, "options");
	rc = gc_vcenter_soap_end(&s, vc, err);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, &s, &doc, &ret, err);
	gc_vcenter_soap_free(&s);
	if (rc < 0)
		return rc;
	memset(ti, 0, sizeof(*ti));
	read_task_info(ti, ret);
	xmlFreeDoc(doc);
	return 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

int gc_vcenter_task_wait(struct gc_vcenter_conn *vc, const char *task, const char *what,
			 unsigned timeout_ms, struct gc_error *err)
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
			return 0;
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
}
