/*
 * render.c - the exact files the guest driver writes into a guest.
 *
 * Each function renders one file from validated spec values, so what a
 * guest holds can be compared byte for byte with what the spec wants (the
 * observation reads the file back) and tests can assert the content:
 *
 *   the RDMA interface's address and MTU, in the OS's own network config
 *   (netplan, NetworkManager keyfile, systemd-networkd, ifcfg, ifupdown);
 *   the RoCE QoS script that the boot unit runs (trust and PFC with
 *   mlnx_qos, else iproute2's dcb; ToS through rdma_cm's configfs as
 *   cma_roce_tos does and mlx5's traffic_class; ECN where the NIC has the
 *   knobs; REAL-FORMATS C.1 and C.7);
 *   the chrony drop-in with the spec's servers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gc/guest.h"

#define HEADER "# written by gpuclusterctl: do not edit, the next apply puts it back\n"

const char *gc_guest_netcfg_path(enum gc_guest_net net, const char *ifname, char *buf, size_t n)
{
	switch (net) {
	case GC_GNET_NETPLAN:
		snprintf(buf, n, "/etc/netplan/60-gpuclusterctl-%s.yaml", ifname);
		return buf;
	case GC_GNET_NM:
		snprintf(buf, n, "/etc/NetworkManager/system-connections/gpuclusterctl-%s.nmconnection",
			 ifname);
		return buf;
	case GC_GNET_NETWORKD:
		snprintf(buf, n, "/etc/systemd/network/60-gpuclusterctl-%s.network", ifname);
		return buf;
	case GC_GNET_IFCFG:
		snprintf(buf, n, "/etc/sysconfig/network-scripts/ifcfg-%s", ifname);
		return buf;
	case GC_GNET_IFUPDOWN:
		snprintf(buf, n, "/etc/network/interfaces.d/gpuclusterctl-%s", ifname);
		return buf;
	case GC_GNET_UNKNOWN:
		break;
	}
	return NULL;
}

char *gc_guest_render_netcfg(const struct gc_rdma_if *ri, enum gc_guest_net net)
{
	struct gc_buf b = GC_BUF_INIT;
	const char *a = ri->address;

	switch (net) {
	case GC_GNET_NETPLAN:
		gc_buf_printf(&b, HEADER "network:\n  version: 2\n  ethernets:\n    %s:\n", ri->name);
		if (a != NULL)
			gc_buf_printf(&b, "      addresses: [%s]\n", a);
		gc_buf_printf(&b, "      mtu: %u\n", ri->mtu);
		break;
	case GC_GNET_NM:
		gc_buf_printf(&b, HEADER "[connection]\nid=gpuclusterctl-%s\ntype=ethernet\n"
				  "interface-name=%s\n\n[ethernet]\nmtu=%u\n\n[ipv4]\n",
			      ri->name, ri->name, ri->mtu);
		if (a != NULL)
			gc_buf_printf(&b, "method=manual\naddress1=%s\n", a);
		else
			gc_buf_puts(&b, "method=disabled\n");
		gc_buf_puts(&b, "\n[ipv6]\nmethod=ignore\n");
		break;
	case GC_GNET_NETWORKD:
		gc_buf_printf(&b, HEADER "[Match]\nName=%s\n\n[Link]\nMTUBytes=%u\n\n[Network]\n",
			      ri->name, ri->mtu);
		if (a != NULL)
			gc_buf_printf(&b, "Address=%s\n", a);
		gc_buf_puts(&b, "LinkLocalAddressing=no\nConfigureWithoutCarrier=yes\n");
		break;
	case GC_GNET_IFCFG: {
		const char *slash = a ? strchr(a, '/') : NULL;

		gc_buf_printf(&b, HEADER "DEVICE=%s\nONBOOT=yes\nBOOTPROTO=none\nMTU=%u\n", ri->name,
			      ri->mtu);
		if (slash != NULL)
			gc_buf_printf(&b, "IPADDR=%.*s\nPREFIX=%s\n", (int)(slash - a), a, slash + 1);
		break;
	}
	case GC_GNET_IFUPDOWN:
		gc_buf_printf(&b, HEADER "auto %s\n", ri->name);
		if (a != NULL)
			gc_buf_printf(&b, "iface %s inet static\n    address %s\n    mtu %u\n", ri->name, a,
				      ri->mtu);
		else
			gc_buf_printf(&b, "iface %s inet manual\n    mtu %u\n", ri->name, ri->mtu);
		break;
	case GC_GNET_UNKNOWN:
		break;
	}
	return gc_buf_take(&b);
}

char *gc_guest_render_qos_script(const struct gc_roce_qos *q)
{
	struct gc_buf b = GC_BUF_INIT;
	const char *dev = q->rdma_device ? q->rdma_device : "";
	const char *trust = q->trust ? q->trust : "dscp";
	int dscp = q->tos >> 2;

	gc_buf_printf(&b, "#!/bin/sh\n" HEADER
			  "# RoCE QoS of %s, run at every boot by " GC_GUEST_QOS_UNIT "\n"
			  "set -e\nIF=%s DEV=%s TRUST=%s PRIO=%d TOS=%d ECN=%d\n",
		      q->interface, q->interface, dev, trust, q->pfc_priority, q->tos, q->ecn ? 1 : 0);
	gc_buf_puts(&b, "i=0\nwhile [ ! -e /sys/class/net/$IF ] || { [ -n \"$DEV\" ] && "
			"[ ! -e /sys/class/infiniband/$DEV ]; }; do\n"
			"\ti=$((i + 1)); [ $i -le 60 ] || { echo \"roce-qos: $IF/$DEV not present\" >&2; "
			"exit 1; }; sleep 1\ndone\n");
	gc_buf_puts(&b, "if command -v mlnx_qos >/dev/null; then\n"
			"\tmlnx_qos -i $IF --trust $TRUST >/dev/null\n\tmlnx_qos -i $IF --pfc ");
	for (int p = 0; p < 8; p++)
		gc_buf_printf(&b, "%s%d", p ? "," : "", p == q->pfc_priority ? 1 : 0);
	gc_buf_puts(&b, " >/dev/null\nelse\n\tdcb pfc set dev $IF prio-pfc");
	for (int p = 0; p < 8; p++)
		gc_buf_printf(&b, " %d:%s", p, p == q->pfc_priority ? "on" : "off");
	gc_buf_puts(&b, "\n");
	if (strcmp(trust, "dscp") == 0)
		gc_buf_printf(&b, "\tdcb app replace dev $IF dscp-prio %d:%d\n", dscp,
			      q->pfc_priority);
	gc_buf_puts(&b, "fi\n");
	gc_buf_puts(&b, "if [ -n \"$DEV\" ]; then\n"
			"\tmountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config\n"
			"\tmodprobe rdma_cm 2>/dev/null || true\n"
			"\tmkdir -p /sys/kernel/config/rdma_cm/$DEV\n"
			"\techo $TOS > /sys/kernel/config/rdma_cm/$DEV/ports/1/default_roce_tos\n"
			"\tif [ -w /sys/class/infiniband/$DEV/tc/1/traffic_class ]; then\n"
			"\t\techo $TOS > /sys/class/infiniband/$DEV/tc/1/traffic_class\n\tfi\nfi\n"
			"for d in np rp; do\n\tf=/sys/class/net/$IF/ecn/roce_$d/enable/$PRIO\n"
			"\tif [ -w $f ]; then echo $ECN > $f; fi\ndone\n");
	return gc_buf_take(&b);
}

char *gc_guest_render_chrony(char *const *servers, size_t n)
{
	struct gc_buf b = GC_BUF_INIT;

	gc_buf_puts(&b, HEADER);
	for (size_t i = 0; i < n; i++)
		gc_buf_printf(&b, "server %s iburst\n", servers[i]);
	return gc_buf_take(&b);
}

/* ---------------------------------------------------------------- cksum */

static uint32_t crc_step(uint32_t crc, unsigned char c)
{
	crc ^= (uint32_t)c << 24;
	for (int i = 0; i < 8; i++)
		crc = crc & 0x80000000u ? (crc << 1) ^ 0x04c11db7u : crc << 1;
	return crc;
}

/* POSIX cksum: CRC-32 (polynomial 0x04c11db7, MSB first) of the data and
 * then of its length in as few bytes as it takes, least significant first,
 * complemented. */
char *gc_guest_cksum_file(const char *path, struct gc_error *err)
{
	unsigned char buf[8192];
	uint32_t crc = 0;
	uint64_t len = 0, l;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char out[48];

	if (fd < 0) {
		gc_error_set(err, GC_EIO, "cannot read '%s': %s", path, strerror(errno));
		return NULL;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			crc = crc_step(crc, buf[i]);
		len += (uint64_t)n;
	}
	close(fd);
	if (n < 0) {
		gc_error_set(err, GC_EIO, "cannot read '%s'", path);
		return NULL;
	}
	for (l = len; l != 0; l >>= 8)
		crc = crc_step(crc, (unsigned char)(l & 0xff));
	snprintf(out, sizeof(out), "%u %llu", (unsigned)~crc, (unsigned long long)len);
	return gc_xstrdup(out);
}
