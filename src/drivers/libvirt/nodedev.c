/*
 * nodedev.c - what the libvirt driver reads of a host's node devices: the
 * VFs of a GPU (formatnode.html: capability virt_functions on a PF,
 * phys_function on a VF), and a small XPath reader shared by the driver.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>

#include "gc/pattern.h"
#include "gc/util.h"
#include "lv_int.h"

/* The string value of XPath `expr` in `xml`, or NULL (caller frees). */
char *gc_lv_xpath_str(xmlXPathContextPtr xp, const char *expr)
{
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, xp);
	char *s = NULL;

	if (o != NULL) {
		xmlChar *v = xmlXPathCastToString(o);

		if (v != NULL && v[0] != '\0')
			s = gc_xstrdup((const char *)v);
		xmlFree(v);
		xmlXPathFreeObject(o);
	}
	return s;
}

char *gc_lv_xml_get(const char *xml, const char *expr)
{
	xmlDocPtr doc;
	xmlXPathContextPtr xp;
	char *s;

	if (xml == NULL)
		return NULL;
	doc = xmlReadMemory(xml, (int)strlen(xml), "libvirt.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (doc == NULL)
		return NULL;
	xp = xmlXPathNewContext(doc);
	s = gc_lv_xpath_str(xp, expr);
	xmlXPathFreeContext(xp);
	xmlFreeDoc(doc);
	return s;
}

/* libvirt's node device name of a PCI address: "pci_0000_3b_00_0". */
static void nodedev_name(char out[32], const char *pci)
{
	unsigned dom = 0, bus = 0, slot = 0, fn = 0;

	sscanf(pci, "%x:%x:%x.%x", &dom, &bus, &slot, &fn);
	snprintf(out, 32, "pci_%04x_%02x_%02x_%x", dom, bus, slot, fn);
}

static char *nodedev_xml(virConnectPtr conn, const char *pci)
{
	virNodeDevicePtr d;
	char name[32], *xml = NULL;

	if (pci == NULL || !gc_valid_pci(pci))
		return NULL;
	nodedev_name(name, pci);
	d = virNodeDeviceLookupByName(conn, name);
	if (d != NULL) {
		xml = virNodeDeviceGetXMLDesc(d, 0);
		virNodeDeviceFree(d);
	}
	return xml;
}

/* "0000:3b:00.4" from the address element that XPath `base` selects. */
static char *xml_pci(const char *xml, const char *base)
{
	static const char *const parts[] = {"domain", "bus", "slot", "function"};
	unsigned long v[4];
	char expr[256];

	for (size_t i = 0; i < 4; i++) {
		char *s;

		snprintf(expr, sizeof(expr), "string(%s/@%s)", base, parts[i]);
		s = gc_lv_xml_get(xml, expr);
		if (s == NULL)
			return NULL;
		v[i] = strtoul(s, NULL, 16);
		free(s);
	}
	return gc_xasprintf("%04lx:%02lx:%02lx.%lx", v[0], v[1], v[2], v[3]);
}

char *gc_lv_vf_of(virConnectPtr conn, const char *parent, unsigned n)
{
	char *xml = nodedev_xml(conn, parent), *out;
	char base[160];

	snprintf(base, sizeof(base),
		 "/device/capability[@type='pci']/capability[@type='virt_functions']/address[%u]",
		 n + 1);
	out = xml ? xml_pci(xml, base) : NULL;
	free(xml);
	return out;
}

int gc_lv_vf_parent(virConnectPtr conn, const char *vf, char **parent, unsigned *n)
{
	char *xml = nodedev_xml(conn, vf);

	*parent = xml ? xml_pci(xml, "/device/capability[@type='pci']"
				     "/capability[@type='phys_function']/address") : NULL;
	free(xml);
	for (unsigned i = 0; *parent != NULL && i < 4096; i++) {
		char *a = gc_lv_vf_of(conn, *parent, i);
		bool end = a == NULL, same = a != NULL && strcmp(a, vf) == 0;

		free(a);
		if (end)
			break;
		if (same) {
			*n = i;
			return 0;
		}
	}
	free(*parent);
	*parent = NULL;
	return -1;
}

