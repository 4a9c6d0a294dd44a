/*
 * pattern.h - strict validators for every value that may reach a remote
 * command line, and a POSIX shell quoter for the rare free-form value.
 *
 * The spec loader checks each field with these at load time (so a hostile
 * value is rejected with file:line:col before anything is touched); drivers
 * check again right before composing a command (defence in depth).  Each
 * returns true when the whole string matches; all reject NUL-free but
 * non-ASCII, control characters, and anything longer than the stated cap.
 */
#ifndef GC_PATTERN_H
#define GC_PATTERN_H

#include <stdbool.h>
#include <stddef.h>

#include "gc/util.h"

/* Object names in the spec: [A-Za-z0-9][A-Za-z0-9._-]{0,62} */
bool gc_valid_name(const char *s);
/* DNS hostname (RFC 1123 labels, <=253) or IPv4 dotted quad or IPv6 literal. */
bool gc_valid_host(const char *s);
/* PCI address: 0000:3b:00.0 (4 hex domain, 2 hex bus, 2 hex slot, 1 octal fn). */
bool gc_valid_pci(const char *s);
/* PCI vendor:device id, "10de:1db6" (4+4 hex). */
bool gc_valid_pci_id(const char *s);
/* Absolute path of a file: safe characters [A-Za-z0-9._/+-], no "..", no trailing '/', <=1024. */
bool gc_valid_abs_path(const char *s);
/* ESXi device names: vmnic0, vmk1, vmhba2, vmrdma0 ([a-z]+[0-9]+, <=15). */
bool gc_valid_ifname(const char *s);
/* Onyx ethernet port or range list: "1/1", "1/1-1/32", "1/1-1/4,1/9" (also 1/1/2 split ports). */
bool gc_valid_port_range(const char *s);
/* Version strings: [0-9A-Za-z][0-9A-Za-z.+_-]{0,63} (never an option). */
bool gc_valid_version(const char *s);
/* vGPU profile names: grid_t4-16c, nvidia_a100-40c ([a-z0-9_-]{1,64}). */
bool gc_valid_vgpu_profile(const char *s);
/* Environment variable names [A-Za-z_][A-Za-z0-9_]{0,127}. */
bool gc_valid_env_name(const char *s);
/* Free text that is safe to pass as one quoted argument: printable ASCII, no
 * quotes/backslash/backtick/$, <=255 (VM names, port groups, templates). */
bool gc_valid_label(const char *s);

/* IPv4 address with a prefix length: "198.18.0.51/24" (prefix 1..32). */
bool gc_valid_ipv4_cidr(const char *s);
/* Distribution package names (dpkg and rpm): [A-Za-z0-9][A-Za-z0-9+._-]{0,127}. */
bool gc_valid_package(const char *s);

/*
 * libvirt connection URIs gpuclusterctl hands to virConnectOpen():
 * DRIVER[+TRANSPORT]://[USER@][HOST[:PORT]]/PATH[?keyfile=ABSPATH], with
 * DRIVER qemu or test, TRANSPORT ssh, libssh2, libssh or tls, PATH system,
 * session or default, USER as gc_valid_name, HOST as gc_valid_host (an IPv6
 * literal in brackets).  Nothing else: libvirt runs ssh with the host part,
 * and other query parameters change which program it runs (`command=`).
 */
bool gc_valid_libvirt_uri(const char *s);

/* Append s to b as one POSIX-shell single-quoted word. */
void gc_shell_quote(struct gc_buf *b, const char *s);

#endif
