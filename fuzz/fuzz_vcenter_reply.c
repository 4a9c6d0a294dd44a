/*
 * fuzz_vcenter_reply.c - any vCenter SOAP reply as gc_vcenter_soap_call()
 * reads it (soap.c: the envelope, the <METHODResponse> check, SOAP faults
 * into "faultstring (FaultType)" and GC_EAUTH/GC_EREMOTE), and a
 * QueryConfigTarget reply read into PCI passthrough targets (vmops.c).
 * fuzz_vcenter_observe covers the RetrievePropertiesEx replies.
 *
 * The input's first line is "METHOD STATUS" (the method called and the
 * HTTP status), the rest the body.  Seeds (fuzz/corpus/vcenter_reply):
 * replies captured from the lab's vcsim (RetrieveServiceContent, Login
 * with a wrong and the right password, QueryConfigTarget, a task on a VM
 * that does not exist, a call after Logout), the QueryConfigTarget reply
 * of tests/unit/vcenter/test_vmops.c with SR-IOV entries, and the
 * QueryOptions replies of tests/unit/vcenter/test_options.c.
 *
 * Checked: a reply is either a <METHODResponse> under HTTP 200 or an error
 * naming the vCenter and the method; a fault's text is what the error says
 * and only a fault is GC_EAUTH; every PCI target has a valid PCI address; a
 * QueryOptions reply's setting (options.c) is the key asked for, with a
 * value and a type.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "gc/pattern.h"
#include "../src/drivers/vcenter/soap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void pci_targets(xmlNodePtr ret)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_pci_target *t = NULL;
	size_t n = 0;

	if (gc_vcenter_pci_targets(&t, &n, ret, "vCenter", &err) != 0) {
		must(err.code == GC_EREMOTE && t == NULL);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		must(gc_valid_pci(t[i].id));
		touch(t[i].device_name);
		touch(t[i].system_id);
	}
	free(t);
}

static void option(xmlNodePtr ret)
{
	struct gc_vcenter_setting s = {0};
	struct gc_arena a = {0};

	if (gc_vcenter_options_parse(&s, &a, ret, "vgpu.hotmigrate.enabled") > 0)
		must(strcmp(s.key, "vgpu.hotmigrate.enabled") == 0 && s.value != NULL &&
		     s.type != NULL);
	gc_arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	struct gc_error err = GC_ERROR_INIT;
	char method[48], fault[512] = "", prefix[64];
	xmlDocPtr doc = NULL;
	xmlNodePtr ret = NULL;
	long status;
	size_t hlen;

	if (nl == NULL || (hlen = (size_t)(nl - (const char *)data)) >= 64)
		return 0;
	memcpy(prefix, data, hlen);
	prefix[hlen] = '\0';
	if (sscanf(prefix, "%47[A-Za-z_] %ld", method, &status) != 2)
		return 0;
	if (gc_vcenter_soap_parse("vCenter", method, status, nl + 1, size - hlen - 1, &doc, &ret,
				  fault, sizeof(fault), &err) != 0) {
		snprintf(prefix, sizeof(prefix), "vCenter: %s: ", method);
		must(doc == NULL && strncmp(err.msg, prefix, strlen(prefix)) == 0);
		must(fault[0] == '\0' || strstr(err.msg, fault) != NULL);
		must(fault[0] != '\0' ? err.code == GC_EAUTH || err.code == GC_EREMOTE
				       : err.code != GC_EAUTH);
		return 0;
	}
	must(status == 200 && doc != NULL && ret != NULL && fault[0] == '\0');
	if (strcmp(method, "QueryConfigTarget") == 0)
		pci_targets(ret);
	if (strcmp(method, "QueryOptions") == 0)
		option(ret);
	xmlFreeDoc(doc);
	return 0;
}
