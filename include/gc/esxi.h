/*
 * esxi.h - the ESXi driver's device knowledge: how a host is observed in
 * one remote exec, how esxcli's machine-readable output is read, and which
 * commands change it.  Transport-free: callers run the commands over
 * gc_ssh and hand the text back here.
 *
 * Observation is one batch: gc_esxi_observe_script() returns a shell
 * sequence that runs every read-only command, each framed by an
 * unguessable marker line (`@@gc:<token>:<n>`) and followed by
 * `|| echo @@gc:<token>:failed` so a failing command is seen per section;
 * gc_esxi_parse_observation() splits the output on the markers and reads
 * each section with libxml2 (esxcli --formatter=xml, REAL-FORMATS A.2).
 */
#ifndef GC_ESXI_H
#define GC_ESXI_H

#include <stdbool.h>
#include <stddef.h>

#include "gc/error.h"
#include "gc/util.h"

/* ---------------------------------------------------------------- esxcli XML */

struct gc_esxcli_field {
	char *name;  /* XML field name, e.g. "DefaultGraphicsType" */
	char *value; /* scalar text; lists joined with "," */
};
struct gc_esxcli_struct {
	char *type_name; /* structure typeName */
	struct gc_esxcli_field *fields;
	size_t nfields;
};
struct gc_esxcli_result {
	struct gc_esxcli_struct *items; /* one for a `get`, many for a `list` */
	size_t nitems;
	char *scalar; /* for scalar roots such as maintenanceMode get, else NULL */
};

/* Parse esxcli --formatter=xml output (namespace with or without trailing
 * slash).  Output over GC_ESXCLI_MAX bytes or not XML is GC_EREMOTE. */
#define GC_ESXCLI_MAX (8u * 1024 * 1024)
int gc_esxcli_parse_xml(struct gc_esxcli_result *out, const char *text, size_t len,
			struct gc_error *err);
void gc_esxcli_result_free(struct gc_esxcli_result *r);
/* Field lookup that ignores case and spaces ("Device ID" == "DeviceID");
 * NULL when absent. */
const char *gc_esxcli_get(const struct gc_esxcli_struct *s, const char *field);

/* sriov.c: every SR-IOV NIC of h is in this `esxcli --formatter=xml network
 * sriovnic list` output, else GC_EREMOTE with the firmware hint (SRIOV_EN,
 * NUM_OF_VFS) for the first one that is not. */
struct gc_host;
int gc_esxi_check_vfs(const struct gc_host *h, const char *xml, size_t len, struct gc_error *err);

/* ---------------------------------------------------------------- observed facts */

struct gc_esxi_vib {
	char *name;
	char *version;
};
struct gc_esxi_passthru {
	char pci[16];
	bool enabled;
};
struct gc_esxi_pci {
	char pci[16];
	bool configured_passthru; /* Configured Owner: VM Passthru */
	bool current_passthru;    /* Current Owner: VM Passthru (what runs now) */
	char *vendor_id;          /* "0x10de" */
	char *device_id;
	char *device_name;
	/* for `discover` (REAL-FORMATS A.2's `hardware pci list` fields; ""
	 * when the host does not send them) */
	char *vmkernel_name; /* "vmnic4"; "" while passthrough owns the port */
	char *module_name;   /* "nmlx5_core", "pciPassthru", "None" */
	char *class_id;      /* Device Class: "0x0302" 3D controller, "0x0200" Ethernet */
};
struct gc_esxi_ruleset {
	char *name;
	bool enabled;
};
/* One MST device of a PCI function (Mellanox MFT, mft.c) and its
 * firmware's SR-IOV settings as `mlxconfig q` shows them: the value for
 * the next boot ("Next Boot"; "Current" in older MFT). */
struct gc_esxi_mft_dev {
	char dev[40];    /* "mt4115_pciconf0.1" (gc_esxi_valid_mst_dev) */
	char pci[16];    /* "0000:03:00.1": mst's bus:dev.fn with the domain added */
	int sriov_en;    /* 1, 0, -1 unknown */
	long num_of_vfs; /* -1 unknown */
};
#define GC_ESXI_MAX_MFT_DEVS 64

struct gc_esxi_facts {
	char *version;       /* "8.0.2" from `vmware -v`, NULL if unknown */
	char *build;         /* "build-20513097" */
	bool maintenance;
	char *graphics_default_type;  /* "Shared" | "SharedPassthru" */
	char *graphics_policy;        /* "Performance" | "Consolidation" */
	struct gc_esxi_vib *vibs;
	size_t nvibs;
	struct gc_esxi_passthru *passthru;
	size_t npassthru;
	struct gc_esxi_vib *rebooting_vibs; /* image active after the next reboot; */
	size_t nrebooting_vibs;             /* empty when no reboot is pending */
	struct gc_esxi_pci *pci;
	size_t npci;
	struct gc_esxcli_field *nmlx5_params; /* every nmlx5_core parameter the driver lists,
						 value "" when unset */
	size_t nnmlx5_params;
	bool nmlx5_core_present;
	struct gc_esxi_ruleset *rulesets;
	size_t nrulesets;
	char *pvrdma_vmknic;     /* /Net/PVRDMAVmknic string value ("" = unset) */
	bool ntp_enabled;
	char *ntp_servers;       /* comma-joined, NULL if unknown */
	bool have_nvidia_smi;
	int ecc_current;         /* 1 enabled, 0 disabled, -1 unknown/N/A */
	int ecc_pending;
	/* The VIBs the vGPU manager bundle (or .vib) holds, from `software
	 * sources vib list` (run only when the spec gives no vib_name).
	 * source_listed: that command ran and answered; false when it was not
	 * run or failed (the file is not on the host, or unreadable). */
	bool source_listed;
	struct gc_esxi_vib *source_vibs;
	size_t nsource_vibs;
	/* Mellanox MFT (`/opt/mellanox/bin/mlxconfig`), read by the batch's
	 * fixed snippet GC_ESXI_MFT_SCRIPT: mft_present false when the host has
	 * no MFT (the firmware is then checked by its effect after the reboot,
	 * sriov.c); mft the devices `mst status -vv` lists with a PCI address. */
	bool mft_present;
	struct gc_esxi_mft_dev *mft;
	size_t nmft;
	/* `network sriovnic list` as it answered, in the read-back after the
	 * reboot of a host with SR-IOV NICs (gc_esxi_verify_script); NULL when
	 * not asked for or when it failed */
	char *sriov_xml;
	size_t sriov_len;
	/* GC_ESXI_OBS_LEASE: the cluster lease (/UserVars/GpuclusterctlLease)
	 * as the batch read it.  lease_read false: not asked, or the read
	 * failed; else lease_option says whether the option exists and lease
	 * holds its value ("" for none). */
	bool lease_read;
	bool lease_option;
	char *lease;
	/* GC_ESXI_OBS_LEASE with a lease to take (gc_esxi_script_lease): the
	 * snippet wrote it (the option was absent, held no lease, or held one
	 * of ours); lease still holds what it read before writing */
	bool lease_took;
	/* GC_ESXI_OBS_LEASE_CLEAR: what the compare-and-clear after the exit
	 * said (GC_ESXI_LEASE_*); 0 when it did not run or failed */
	int lease_clear;
	/* GC_ESXI_OBS_EXIT_MM: the batch's last command left maintenance mode
	 * (exit_sent), or was refused (exit_failed) */
	bool exit_sent;
	bool exit_failed;
	char **failed;           /* sections whose command failed: "graphics host get: <why>" */
	size_t nfailed;
	/* derived: configured state that only a reboot makes current */
	bool reboot_pending;
	char *reboot_pending_why; /* "passthrough of 0000:3b:00.0 configured, not active" */
};

/* The batch script for one host.  token: [A-Za-z0-9]{8,32}, unique per run.
 * learn_from (may be NULL): the vGPU manager's bundle (.zip) or .vib on the
 * host, whose VIB names and versions the batch also lists
 * (`esxcli --formatter=xml software sources vib list -d|-v PATH`, the path
 * single-quoted); a path that is not gc_valid_abs_path() is left out. */
char *gc_esxi_observe_script(const char *token, const char *learn_from);
/* The same for the read-back after a reboot: with `sriov`, the batch ends
 * with `esxcli --formatter=xml network sriovnic list` (facts.sriov_xml),
 * the VFs the reboot was to make, checked in the same exec. */
char *gc_esxi_verify_script(const char *token, const char *learn_from, bool sriov);
/*
 * The batch with more in it (flags):
 *   GC_ESXI_OBS_SRIOV    as gc_esxi_verify_script's `sriov`
 *   GC_ESXI_OBS_LEASE    the cluster lease, read by the fixed snippet
 *                        GC_ESXI_LEASE_READ_SCRIPT (facts.lease): the
 *                        apply's observation, so the lease costs no read of
 *                        its own
 *   GC_ESXI_OBS_EXIT_MM  last, after every read: leave maintenance mode
 *                        (facts.exit_sent / exit_failed): the read-back
 *                        after a reboot and the exit in one exec
 */
#define GC_ESXI_OBS_SRIOV 1u
#define GC_ESXI_OBS_LEASE 2u
#define GC_ESXI_OBS_EXIT_MM 4u
#define GC_ESXI_OBS_LEASE_CLEAR 8u
char *gc_esxi_script(const char *token, const char *learn_from, unsigned flags);
/*
 * The same with the cluster lease taken or cleared in the batch:
 *   take (with GC_ESXI_OBS_LEASE): the lease string to write, by the fixed
 *     snippet GC_ESXI_LEASE_TAKE_SCRIPT instead of the read, when the
 *     option is absent, holds no lease or holds one with `lock=LOCK;`
 *     (facts.lease_took); another's is only read, never written
 *   GC_ESXI_OBS_LEASE_CLEAR (with GC_ESXI_OBS_EXIT_MM): after the exit of
 *     maintenance mode, and only when it worked, the compare-and-clear
 *     snippet GC_ESXI_LEASE_CLEAR_SCRIPT with `lock` (facts.lease_clear)
 * lock: [0-9a-f]{16}; take: [A-Za-z0-9@._:;=+-]; anything else is left out
 * (no take, no clear).
 */
char *gc_esxi_script_lease(const char *token, const char *learn_from, unsigned flags,
			   const char *lock, const char *take);
/*
 * The read-back after a reboot carried by the poll that finds the host back
 * (src/drivers/esxi/reboot.c): `echo @@gc:TOKEN:up; sh -c GC_ESXI_UPTIME_GUARD_SCRIPT
 * up BOUND || exit 0; ` and then gc_esxi_script_lease's batch.  The guard
 * prints the uptime (microseconds, `esxcli system stats uptime get`) and
 * lets the batch run only when it is below BOUND, the least uptime a host
 * that did not reboot can have at that moment (its uptime before the reboot
 * plus the time since, less a margin); a host not yet down, or whose uptime
 * cannot be read or compared, ends the exec there and runs nothing of the
 * batch, its exit of maintenance mode least of all.  bound_us > 0.
 * busybox sh on ESXi: `$(...)` as in the lease snippets, and test's `-lt`
 * on the microseconds (ESXi's userworld is 64-bit; a number test cannot
 * take fails the test, and nothing runs).
 */
#define GC_ESXI_UPTIME_GUARD_SCRIPT \
	"u=$(esxcli system stats uptime get) || exit 2; echo \"$u\"; [ \"$u\" -lt \"$1\" ]"
char *gc_esxi_script_guarded(const char *token, const char *learn_from, unsigned flags,
			     const char *lock, long long bound_us);
/* Such an exec's output: the uptime the guard printed (*uptime_us, -1 when
 * none) and where the batch's output starts (*rest); true when the batch
 * ran (its output follows the uptime). */
bool gc_esxi_guard_split(const char *token, const char *text, size_t len, long long *uptime_us,
			 size_t *rest);
#define GC_ESXI_LEASE_CLEARED 1 /* it held our lease, now none */
#define GC_ESXI_LEASE_KEPT 2    /* it held another's lease, or none: untouched */
#define GC_ESXI_LEASE_ABSENT 3  /* no option: never leased */
/*
 * The lease snippets, fixed text (nothing of the spec in them), run as
 * `sh -c SCRIPT lease ARG`; busybox sh on ESXi.
 *   READ, ARG the batch's token: `advanced list -o` of the lease option
 *     (XML), or `@@lease:TOKEN:none` when the option does not exist
 *     (esxcli's "Unable to find option": never leased); exit 1 with
 *     esxcli's words on any other failure.
 *   CLEAR, ARG our lock ([0-9a-f]{16}): sets the option to `none` when its
 *     value holds `lock=ARG;` and prints `@@lease:cleared`; else prints
 *     `@@lease:kept` (another apply's, or none) or `@@lease:none` (no
 *     option).  A compare-and-clear in one exec.
 */
#define GC_ESXI_LEASE_OPTION "/UserVars/GpuclusterctlLease"
/*
 *   TAKE, ARGS the batch's token, our lock, the lease: what READ prints,
 *     then `@@lease:TOKEN:took` once it wrote the lease: when the option
 *     does not exist (created with `none` as its value and default, then
 *     set), or its value holds no `lock=` (no lease) or `lock=LOCK;` (a
 *     run of ours).  Another's lease, even expired, is left to the caller.
 * TAKE and CLEAR judge the option's value alone (the XML's StringValue
 * field, cut out with the shell's own ${r#...} and ${v%%...}): an option
 * that an older apply created with its lease as the default string value
 * keeps that lease there, whoever holds the value now.  The option is
 * created with the default `none`.
 */
#define GC_ESXI_LEASE_TAKE_SCRIPT                                                                \
	"r=$(esxcli --formatter=xml system settings advanced list -o " GC_ESXI_LEASE_OPTION         \
	" 2>&1) || { case \"$r\" in *\"Unable to find option\"*) echo @@lease:$1:none; "            \
	"esxcli system settings advanced add -o GpuclusterctlLease -t string -s none "             \
	"-d 'gpuclusterctl cluster lease' && esxcli system settings advanced set -o "               \
	GC_ESXI_LEASE_OPTION " -s \"$3\" && echo @@lease:$1:took; exit 0;; esac; echo \"$r\" >&2; "  \
	"exit 1; }; echo \"$r\"; v=${r#*\\\"StringValue\\\">}; v=${v%%</field>*}; "                  \
	"case \"$v\" in *\"lock=$2;\"*) ;; *\"lock=\"*) exit 0;; esac; "                               \
	"esxcli system settings advanced set -o " GC_ESXI_LEASE_OPTION " -s \"$3\" && "              \
	"echo @@lease:$1:took; exit 0"
/*
 *   CAS, ARGS the batch's token, our lock, the lease: TAKE's compare-and-set
 *     without its reading aloud, for a chain of commands (the first
 *     changing exec of a host: src/exec/lease.c) and for the plain write of
 *     a lease: silent and exit 0 once it wrote the lease (the same cases as
 *     TAKE); when the value holds another's `lock=`, the line
 *     `@@lease:TOKEN:held:VALUE` on stderr (the <string> of the listing's
 *     StringValue field) and exit 1, so that the chain
 *     stops before its first change and the caller names the holder; exit 1
 *     with esxcli's words on any other failure.
 */
#define GC_ESXI_LEASE_CAS_SCRIPT                                                                 \
	"r=$(esxcli --formatter=xml system settings advanced list -o " GC_ESXI_LEASE_OPTION         \
	" 2>&1) || { case \"$r\" in *\"Unable to find option\"*) esxcli system settings advanced "   \
	"add -o GpuclusterctlLease -t string -s none -d 'gpuclusterctl cluster lease' && esxcli "    \
	"system settings advanced set -o " GC_ESXI_LEASE_OPTION " -s \"$3\"; exit;; esac; "          \
	"echo \"$r\" >&2; exit 1; }; v=${r#*\\\"StringValue\\\">}; v=${v%%</field>*}; "               \
	"case \"$v\" in *\"lock=$2;\"*) ;; *\"lock=\"*) v=${v#*<string>}; echo "                    \
	"\"@@lease:$1:held:${v%%</string>*}\" >&2; exit 1;; esac; esxcli system settings advanced set -o " GC_ESXI_LEASE_OPTION " -s \"$3\""
/* `sh -c CAS lease TOKEN LOCK VALUE`, its arguments quoted, for an exec of
 * its own or the head of a host's first changing exec (gc_xmalloc'd); NULL
 * for a lock outside [0-9a-f] or a value outside [A-Za-z0-9@._:;=+-].  And
 * the holder's lease in its refusal, as on a line of text (the device's
 * words): what follows `@@lease:TOKEN:held:` up to the line's end,
 * gc_xmalloc'd, or NULL when text has none with that token. */
char *gc_esxi_lease_cas_command(const char *token, const char *lock, const char *value);
char *gc_esxi_lease_held(const char *token, const char *text);
#define GC_ESXI_LEASE_READ_SCRIPT                                                                \
	"r=$(esxcli --formatter=xml system settings advanced list -o " GC_ESXI_LEASE_OPTION         \
	" 2>&1) && { echo \"$r\"; exit 0; }; case \"$r\" in *\"Unable to find option\"*) "           \
	"echo @@lease:$1:none;; *) echo \"$r\" >&2; exit 1;; esac"
#define GC_ESXI_LEASE_CLEAR_SCRIPT                                                               \
	"r=$(esxcli --formatter=xml system settings advanced list -o " GC_ESXI_LEASE_OPTION         \
	" 2>&1) || { case \"$r\" in *\"Unable to find option\"*) echo @@lease:none; exit 0;; esac; " \
	"echo \"$r\" >&2; exit 1; }; v=${r#*\\\"StringValue\\\">}; v=${v%%</field>*}; "             \
	"case \"$v\" in *\"lock=$1;\"*) esxcli system settings advanced set -o " GC_ESXI_LEASE_OPTION  \
	" -s none && echo @@lease:cleared;; *) echo @@lease:kept;; esac"
/* Read `esxcli --formatter=xml software sources vib list` output: the Name
 * and Version of each VIB, looked up by field name (order and extra fields
 * do not matter).  At most GC_ESXI_MAX_SOURCE_VIBS; a name or version that
 * is not gc_valid_version(), or no VIB at all, is GC_EREMOTE. */
#define GC_ESXI_MAX_SOURCE_VIBS 64
int gc_esxi_parse_source_vibs(struct gc_esxi_vib **out, size_t *n, const char *text, size_t len,
			      struct gc_error *err);
/*
 * The batch's MFT section: a fixed snippet (no value of the spec in it) run
 * as `sh -c GC_ESXI_MFT_SCRIPT mft TOKEN`, so $1 is the batch's token.
 * Without mlxconfig it prints `@@mft:TOKEN:none`; else `mst status -vv`,
 * then for each MST device of a PCI function `@@mft:TOKEN:dev:DEV` and
 * `mlxconfig -d DEV q SRIOV_EN NUM_OF_VFS` (`@@mft:TOKEN:failed` when that
 * fails).  busybox sh and grep (-o -w -E) on ESXi.
 */
#define GC_ESXI_MFT_BIN "/opt/mellanox/bin"
#define GC_ESXI_MFT_SCRIPT                                                                       \
	"M=" GC_ESXI_MFT_BIN "; if [ ! -x $M/mlxconfig ]; then echo @@mft:$1:none; exit 0; fi; "   \
	"s=$($M/mst status -vv) || exit 1; echo \"$s\"; "                                           \
	"for d in $(echo \"$s\" | grep -owE \"mt[0-9]+_pciconf[0-9]+(\\.[0-9]+)?\"); do "            \
	"echo @@mft:$1:dev:$d; $M/mlxconfig -d $d q SRIOV_EN NUM_OF_VFS || echo @@mft:$1:failed; done"
/* "mt4115_pciconf0", "mt4115_pciconf0.1": what may go on a command line. */
bool gc_esxi_valid_mst_dev(const char *s);
/* Read the MFT section (its text between the batch's markers) into f:
 * tolerant of column layout (see mft.c); GC_EREMOTE only for more than
 * GC_ESXI_MAX_MFT_DEVS devices. */
int gc_esxi_parse_mft(struct gc_esxi_facts *f, const char *token, const char *text, size_t len,
		      struct gc_error *err);
/* The MST device at a PCI address ("0000:03:00.0"), NULL when none. */
const struct gc_esxi_mft_dev *gc_esxi_facts_mft(const struct gc_esxi_facts *f, const char *pci);

/* Parse the batch's stdout into facts. */
int gc_esxi_parse_observation(struct gc_esxi_facts *out, const char *token, const char *stdout_text,
			      size_t len, struct gc_error *err);
void gc_esxi_facts_free(struct gc_esxi_facts *f);
const struct gc_esxi_vib *gc_esxi_facts_vib(const struct gc_esxi_facts *f, const char *name);
/* The VIB as installed or as pending in the rebooting image, NULL if neither. */
const struct gc_esxi_vib *gc_esxi_facts_vib_any(const struct gc_esxi_facts *f, const char *name);
const struct gc_esxi_pci *gc_esxi_facts_pci(const struct gc_esxi_facts *f, const char *pci);
/* -1 when the device is not in the passthrough list. */
int gc_esxi_facts_passthru(const struct gc_esxi_facts *f, const char *pci);
/* Value of an nmlx5_core parameter, NULL when unset. */
const char *gc_esxi_facts_nmlx5_param(const struct gc_esxi_facts *f, const char *name);
/* Whether the loaded nmlx5_core lists the parameter at all: driver
 * releases differ (`ecn` is in NVIDIA's 4.17 manual; that every later
 * release keeps it is not confirmed), and what a driver lacks is refused. */
bool gc_esxi_facts_nmlx5_accepts(const struct gc_esxi_facts *f, const char *name);
/* -1 when the ruleset is unknown. */
int gc_esxi_facts_ruleset(const struct gc_esxi_facts *f, const char *name);

/* ---------------------------------------------------------------- changing commands */

struct gc_resource;

/*
 * The one esxcli (or nvidia-smi) command that brings resource r to its
 * desired properties.  `facts` (may be NULL) is the host as last observed:
 * `module parameters set -p` replaces the module's whole parameter string,
 * so parameters we do not manage are carried over from it.  Every value is checked against its strict pattern
 * (include/gc/pattern.h) before it is placed on the command line, and
 * free-form values are single-quoted; a value that fails is GC_EINVAL naming
 * the resource, and nothing is sent.  *out is gc_xmalloc'd.
 */
int gc_esxi_command(char **out, const struct gc_resource *r, const struct gc_esxi_facts *facts,
		    struct gc_error *err);

/*
 * Several changing commands in one exec (batch.c): an `&&` chain, each
 * command after a marker line `@@gc:<token>:c<i>`, the last line
 * `@@gc:<token>:end`, so the host stops at the first command that fails.
 * token: [A-Za-z0-9]{8,32}; cmds: gc_esxi_command()'s or the fixed ones.
 */
char *gc_esxi_batch_script(const char *token, const char *const *cmds, size_t n);
/* How far it got: gc_batch_parse() (gc/sections.h). */
/* Fixed commands of the synthesized steps. */
#define GC_ESXI_CMD_ENTER_MAINTENANCE "esxcli system maintenanceMode set -e true"
#define GC_ESXI_CMD_EXIT_MAINTENANCE "esxcli system maintenanceMode set -e false"
#define GC_ESXI_CMD_REBOOT "esxcli system shutdown reboot -r gpuclusterctl"

/* ---------------------------------------------------------------- facts -> observed store */

struct gc_observed;

/*
 * Record what facts say about the host's resources `res` (those of one
 * target, from the graph) into the planner's observed store, in the same
 * property shape as the desired side: only keys the resource wants are
 * recorded, and the VIB's `source` (not observable) is carried over when the
 * named VIB is installed or pending.  Also records the host's maintenance
 * mode.  A resource whose device the host does not have (a PCI address that
 * `hardware pci list` does not show, nmlx5_core not loaded) is reported as
 * one line per problem in `problems` and left absent.
 */
void gc_esxi_record(struct gc_observed *obs, const char *host,
		    const struct gc_resource *const *res, size_t nres,
		    const struct gc_esxi_facts *facts, struct gc_buf *problems);

/* The spec's ESXi `version` against the host's (`vmware -v`): each number the
 * spec gives must be the host's ("8.0" matches 8.0.2); NULL on either side
 * matches.  gc_esxi_check_version() adds a problem line naming both when
 * they differ and returns false. */
bool gc_esxi_version_matches(const char *want, const char *have);
bool gc_esxi_check_version(const char *host, const char *want, const struct gc_esxi_facts *f,
			   struct gc_buf *problems);

/* Parse `vmware -v` ("VMware ESXi 8.0.0 build-20513097"); 0 or GC_EREMOTE. */
int gc_esxi_parse_version(char **version, char **build, const char *line, struct gc_error *err);

#endif
