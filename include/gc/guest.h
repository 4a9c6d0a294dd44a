/*
 * guest.h - the Linux guest driver's pieces that tests and fuzzers reach:
 * the observation script, its parser, the recorder and the renderers of
 * what the driver writes into a guest.
 *
 * A guest is observed with one exec of a POSIX sh script (run as root,
 * through `sudo -n` for a non-root user) that prints marker-framed sections
 * (`@@gc:<token>:<name>`); gc_guest_parse() splits them and reads each with
 * the right library: nvidia-smi's XML with libxml2, `ip -j` / `rdma -j` /
 * `dcb -j` with json-c, and the plain KEY=VALUE files (os-release,
 * gridd.conf) and `mlnx_qos` text line by line.
 */
#ifndef GC_GUEST_H
#define GC_GUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "gc/error.h"
#include "gc/graph.h"
#include "gc/observed.h"
#include "gc/spec.h"
#include "gc/util.h"

/* Files the driver owns in a guest (one name each, so a user sees ours). */
#define GC_GUEST_MODULES_CONF "/etc/modules-load.d/gpuclusterctl.conf"
#define GC_GUEST_QOS_SCRIPT "/usr/local/lib/gpuclusterctl/roce-qos.sh"
#define GC_GUEST_QOS_UNIT "gpuclusterctl-roce-qos.service"
#define GC_GUEST_TOKEN "/etc/nvidia/ClientConfigToken/gpuclusterctl.tok"
#define GC_GUEST_GRIDD "/etc/nvidia/gridd.conf"
#define GC_GUEST_STAGE "/var/tmp/gpuclusterctl"

/* How the guest configures its network (what the observation found). */
enum gc_guest_net {
	GC_GNET_UNKNOWN = 0,
	GC_GNET_NETPLAN,  /* Ubuntu */
	GC_GNET_NM,       /* NetworkManager: RHEL 8+, desktops */
	GC_GNET_NETWORKD, /* systemd-networkd */
	GC_GNET_IFCFG,    /* RHEL/CentOS 7 network-scripts */
	GC_GNET_IFUPDOWN, /* Debian's /etc/network/interfaces */
};

enum gc_guest_pm { GC_GPM_APT, GC_GPM_DNF };

struct gc_guest_pkg {
	char *name;
	char *version;
	bool installed; /* dpkg status "ii" / rpm present */
};

struct gc_guest_facts {
	bool root;          /* the login user is root (no sudo) */
	char *os_id;        /* os-release ID: "debian", "ubuntu", "rhel", "rocky", "centos" */
	char *os_like;      /* ID_LIKE */
	char *os_version;   /* VERSION_ID */
	char *kernel;
	char *boot_id;
	struct gc_guest_pkg *pkgs;
	size_t npkgs;
	char **modules;     /* loaded (/proc/modules) */
	size_t nmodules;
	char *modules_conf; /* GC_GUEST_MODULES_CONF, NULL when absent */
	/* NVIDIA */
	bool smi;             /* nvidia-smi answered with XML */
	char *smi_error;      /* its first line when it did not (e.g. "NVIDIA-SMI has failed ...") */
	char *driver_version; /* nvidia-smi's driver_version */
	char *loaded_version; /* /sys/module/nvidia/version */
	char *runfile_version; /* nvidia-installer --version, when a .run installed it */
	char *module_version; /* `modinfo -F version nvidia`: the module on disk for this kernel */
	unsigned ngpus;
	char *product;        /* first GPU's product_name */
	char *virt_mode;      /* "Pass-Through", "VGPU", "None" */
	char *license_status; /* "Licensed (Expiry: ...)", NULL when not reported */
	unsigned fb_mib;
	/* licence configuration */
	char *gridd_server, *gridd_port, *gridd_feature;
	bool gridd_present;
	char *token_cksum;    /* `cksum` of GC_GUEST_TOKEN: "CRC SIZE", NULL when absent */
	/* the RDMA interface */
	bool if_present;
	unsigned mtu;
	char **addrs;         /* IPv4 CIDRs on it */
	size_t naddrs;
	enum gc_guest_net net;
	char *netcfg;         /* our persistent config for it, NULL when absent */
	/* RDMA */
	char *rdma_netdev;    /* netdev of the spec's RDMA device per `rdma -j link` */
	char *rdma_state;     /* its port state, "ACTIVE" */
	char *ofed;           /* `ofed_info -s` */
	/* QoS */
	bool mlnx_qos;        /* the tool in use: mlnx_qos (else iproute2's dcb) */
	char *trust;          /* "dscp" | "pcp" | NULL */
	int pfc_priority;     /* the one PFC-enabled priority, -1 none, -2 several */
	int tos;              /* configfs default_roce_tos, -1 unset */
	int traffic_class;    /* sysfs tc/1/traffic_class, -1 absent */
	int ecn;              /* 1 every ECN knob of the priority on (or none exist), 0 else */
	char *qos_unit;       /* `systemctl is-enabled` of GC_GUEST_QOS_UNIT */
	char *qos_script;     /* GC_GUEST_QOS_SCRIPT's content */
	/* the rest */
	char *ctk_version;    /* nvidia-ctk --version */
	char *chrony_conf;    /* our chrony drop-in */
	bool chrony_active;
};

void gc_guest_facts_free(struct gc_guest_facts *f);

/* The packages the observation asks about and the driver installs, for the
 * guest's OS.  Names are static or from the spec; *n is set. */
enum gc_guest_pm gc_guest_pm(const struct gc_guest *g);
const char *gc_guest_driver_package(const struct gc_guest *g, char *buf, size_t n);
void gc_guest_rdma_packages(const struct gc_guest *g, const char **out, size_t *n);
const char *gc_guest_chrony_service(const struct gc_guest *g);

/* The observation script for a guest (gc_xmalloc'd); token: 16 hex. */
char *gc_guest_observe_script(const struct gc_guest *g, const char *token);
/* Wrap a script so it runs as root: directly for root, else `sudo -n`. */
char *gc_guest_as_root(const char *script);

/* Parse the output of the observation script. */
int gc_guest_parse(struct gc_guest_facts *out, const struct gc_guest *g, const char *token,
		   const char *text, size_t len, struct gc_error *err);
/* Section parsers (each tolerant of what real tools print; exposed for tests). */
int gc_guest_parse_smi_xml(struct gc_guest_facts *f, const char *xml, size_t len);
int gc_guest_parse_ip_json(struct gc_guest_facts *f, const char *ifname, const char *json);
int gc_guest_parse_rdma_json(struct gc_guest_facts *f, const char *dev, const char *json);
void gc_guest_parse_mlnx_qos(struct gc_guest_facts *f, const char *text);
void gc_guest_parse_dcb(struct gc_guest_facts *f, const char *pfc_json, const char *app_json);
/* KEY=VALUE files: the value of key (quotes stripped), gc_xmalloc'd, or NULL. */
char *gc_guest_kv(const char *text, const char *key);

/* The NVIDIA driver version installed in the guest (its package's upstream
 * version, or what the .run installer reports), "" when none. */
void gc_guest_installed_driver(char *out, size_t n, const struct gc_guest *g,
			       const struct gc_guest_facts *f);

/* Record the facts as the guest's resources' observed properties. */
void gc_guest_record(struct gc_observed *obs, const struct gc_guest *g,
		     const struct gc_resource *const *res, size_t nres,
		     const struct gc_guest_facts *f, const char *token_cksum_want);

/* What the driver writes (exact file contents, tested byte for byte). */
char *gc_guest_render_netcfg(const struct gc_rdma_if *ri, enum gc_guest_net net);
const char *gc_guest_netcfg_path(enum gc_guest_net net, const char *ifname, char *buf, size_t n);
char *gc_guest_render_qos_script(const struct gc_roce_qos *q);
char *gc_guest_render_chrony(char *const *servers, size_t n);
const char *gc_guest_chrony_path(const struct gc_guest *g);

/* POSIX cksum(1) of a local file: "CRC SIZE" (for comparing a token without
 * printing it), gc_xmalloc'd; NULL with err set when unreadable. */
char *gc_guest_cksum_file(const char *path, struct gc_error *err);

#endif
