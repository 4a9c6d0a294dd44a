/*
 * lv_int.h - the libvirt driver's lookups of a host's node devices that the
 * tests reach (a custom test:// driver holds the devices).
 */
#ifndef GC_LV_INT_H
#define GC_LV_INT_H

#include <libvirt/libvirt.h>
#include <libxml/xpath.h>

/* The address of VF `n` (0-based) of the PCI device `parent`, from its node
 * device (libvirt's formatnode: capability virt_functions); NULL when the
 * host has no such device or VF.  Caller frees. */
char *gc_lv_vf_of(virConnectPtr conn, const char *parent, unsigned n);
/* The parent (capability phys_function) and index of VF `vf`; 0, or -1
 * when the host cannot tell.  *parent: caller frees. */
int gc_lv_vf_parent(virConnectPtr conn, const char *vf, char **parent, unsigned *n);

/* The string value of XPath `expr` in `xml`, or NULL (caller frees). */
char *gc_lv_xml_get(const char *xml, const char *expr);
/* The same in a parsed document, at xp's context node; NULL when empty. */
char *gc_lv_xpath_str(xmlXPathContextPtr xp, const char *expr);

#endif
