/*
 * sriov.c - after a host's reboot, do its SR-IOV NICs have VFs?
 *
 * nmlx5_core creates a port's VFs at load only when the adapter's firmware
 * has SR-IOV on (SRIOV_EN) and offers enough of them (NUM_OF_VFS >= the
 * port's max_vfs); both are firmware settings that only Mellanox's MFT
 * (`/opt/mellanox/bin/mlxconfig`) reads and sets, and that ESXi's esxcli
 * does not show.  So after the reboot that loads `max_vfs`, the driver
 * reads `esxcli --formatter=xml network sriovnic list` (the NICs that have
 * SR-IOV enabled; REAL-FORMATS A.7 names its columns Name, PCI Device,
 * Driver, Link, Speed, ...) and fails with the firmware hint for each
 * SR-IOV NIC of the spec that is not listed.  No XML capture of that
 * command is known: a NIC is found by the field PCIDevice or by Name (its
 * vmnic), whatever other fields there are.
 */
#include <stdio.h>
#include <string.h>

#include "gc/esxi.h"
#include "gc/spec.h"

static bool listed(const struct gc_esxcli_result *r, const struct gc_host_nic *n)
{
	for (size_t i = 0; i < r->nitems; i++) {
		const char *pci = gc_esxcli_get(&r->items[i], "PCI Device");
		const char *name = gc_esxcli_get(&r->items[i], "Name");

		if ((pci != NULL && strcmp(pci, n->pci) == 0) ||
		    (name != NULL && n->device != NULL && strcmp(name, n->device) == 0))
			return true;
	}
	return false;
}

int gc_esxi_check_vfs(const struct gc_host *h, const char *xml, size_t len, struct gc_error *err)
{
	struct gc_esxcli_result r = {NULL, 0, NULL};
	int rc = gc_esxcli_parse_xml(&r, xml, len, err);

	if (rc != 0) {
		gc_error_prefix(err, "host '%s': esxcli network sriovnic list: ", h->name);
		return rc;
	}
	for (size_t i = 0; i < h->nnics && rc == 0; i++) {
		const struct gc_host_nic *n = &h->nics[i];

		if (n->mode != GC_NIC_MODE_SRIOV || listed(&r, n))
			continue;
		rc = gc_error_set(err, GC_EREMOTE,
				  "host '%s': NIC %s%s%s%s has no SR-IOV VFs after the reboot (not in "
				  "`esxcli network sriovnic list`): its firmware needs SRIOV_EN=1 and "
				  "NUM_OF_VFS>=%u; set them with Mellanox MFT on the host "
				  "(/opt/mellanox/bin/mlxconfig -d DEVICE set SRIOV_EN=1 NUM_OF_VFS=%u) "
				  "and apply again",
				  h->name, n->pci, n->device ? " (" : "", n->device ? n->device : "",
				  n->device ? ")" : "", n->vfs, n->vfs);
	}
	gc_esxcli_result_free(&r);
	return rc;
}
