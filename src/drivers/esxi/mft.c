/*
 * mft.c - an SR-IOV adapter's firmware settings through Mellanox MFT.
 *
 * nmlx5_core makes a port's VFs only when the adapter's NVCONFIG has
 * SRIOV_EN=1 and NUM_OF_VFS >= max_vfs (issue 14, item 14).  esxcli cannot
 * show those; MFT's `mlxconfig` reads and sets them.  The observation
 * batch runs the fixed snippet GC_ESXI_MFT_SCRIPT (esxi.h), and this file
 * reads what it printed:
 *
 *   `mst status -vv` (NVIDIA MFT user manual, "VMware ESXi" section of the
 *   mst page), e.g.
 *       PCI devices:
 *       ------------
 *       DEVICE_TYPE             MST                           PCI       RDMA            NET                       NUMA
 *       ConnectX4(rev:0)        mt4115_pciconf0               03:00.0                   net-vmnic4
 *       ConnectX4(rev:0)        mt4115_pciconf0.1             03:00.1                   net-vmnic5
 *   (PCI is bus:dev.fn without the PCI domain);
 *
 *   `mlxconfig -d DEV q SRIOV_EN NUM_OF_VFS` (NVIDIA's MLNX_OFED/RHEL
 *   "SR-IOV Configuration" page), e.g.
 *       Device #1:
 *       ----------
 *       Device type:    ConnectX4
 *       PCI device:     mt4115_pciconf0
 *       Configurations:                              Next Boot
 *                SRIOV_EN                            True(1)
 *                NUM_OF_VFS                          8
 *   (older MFT heads the column "Current"; both are the value the next boot
 *   loads, which is what a set changes).
 *
 * NOT VERIFIED against a host: the exact column layout of both.  So the
 * parsers are tolerant: an mst row is any line with a word that is an MST
 * device name and a word that is a PCI address (with or without domain), in
 * any column; an mlxconfig row is found by its key (first word) and its
 * value is the last word, as True(1)/False(0)/True/False/1/0 or a number.
 * With `-e` mlxconfig prints Default, Current and Next Boot: the last one is
 * still the next boot's.  docs/mft.md lists what this relies on.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gc/esxi.h"

bool gc_esxi_valid_mst_dev(const char *s)
{
	const char *p = s;

	if (strncmp(p, "mt", 2) != 0 || !isdigit((unsigned char)p[2]))
		return false;
	for (p += 2; isdigit((unsigned char)*p); p++)
		;
	if (strncmp(p, "_pciconf", 8) != 0 || !isdigit((unsigned char)p[8]))
		return false;
	for (p += 8; isdigit((unsigned char)*p); p++)
		;
	if (*p == '.') {
		if (!isdigit((unsigned char)p[1]))
			return false;
		for (p++; isdigit((unsigned char)*p); p++)
			;
	}
	return *p == '\0' && (size_t)(p - s) < sizeof(((struct gc_esxi_mft_dev *)0)->dev);
}

/* "03:00.1" or "0000:03:00.1" (hex, function 0-7) -> "0000:03:00.1" in out. */
static bool mst_pci(char out[16], const char *w)
{
	size_t n = strlen(w), i;
	const char *tmpl = n == 7 ? "xx:xx.f" : "xxxx:xx:xx.f";

	if (n != 7 && n != 12)
		return false;
	for (i = 0; i < n; i++) {
		char t = tmpl[i], c = w[i];

		if ((t == 'x' && !isxdigit((unsigned char)c)) || (t == 'f' && (c < '0' || c > '7')) ||
		    (t != 'x' && t != 'f' && c != t))
			return false;
	}
	strcpy(out, n == 7 ? "0000:" : "");
	strcat(out, w);
	for (i = 0; out[i]; i++)
		out[i] = (char)tolower((unsigned char)out[i]);
	return true;
}

/* Up to `max` whitespace-separated words of one line, each NUL-ended in place. */
static size_t split_words(char *line, char **w, size_t max)
{
	size_t n = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(line, " \t\r", &save); tok != NULL && n < max;
	     tok = strtok_r(NULL, " \t\r", &save))
		w[n++] = tok;
	return n;
}

/* True(1) False(0) True False 1 0 -> 1/0; anything else -1. */
static int fw_bool(const char *v)
{
	const char *paren = strchr(v, '(');

	if (paren != NULL && (paren[1] == '0' || paren[1] == '1') && paren[2] == ')' && paren[3] == '\0')
		return paren[1] - '0';
	if (strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0)
		return 1;
	if (strcasecmp(v, "false") == 0 || strcmp(v, "0") == 0)
		return 0;
	return -1;
}

/* "8" -> 8; "8(...)" too; anything else -1.  At most 6 digits. */
static long fw_number(const char *v)
{
	size_t n = strspn(v, "0123456789");

	if (n == 0 || n > 6 || (v[n] != '\0' && v[n] != '('))
		return -1;
	return strtol(v, NULL, 10);
}

static struct gc_esxi_mft_dev *find_dev(struct gc_esxi_facts *f, const char *dev)
{
	for (size_t i = 0; i < f->nmft; i++)
		if (strcmp(f->mft[i].dev, dev) == 0)
			return &f->mft[i];
	return NULL;
}

/* An `mst status -vv` row: an MST device and its PCI address, in any column. */
static int mst_row(struct gc_esxi_facts *f, char **w, size_t n, struct gc_error *err)
{
	const char *dev = NULL;
	char pci[16] = "";

	for (size_t i = 0; i < n; i++) {
		if (dev == NULL && gc_esxi_valid_mst_dev(w[i]))
			dev = w[i];
		else if (pci[0] == '\0')
			mst_pci(pci, w[i]);
	}
	if (dev == NULL || pci[0] == '\0' || find_dev(f, dev) != NULL)
		return 0;
	if (f->nmft >= GC_ESXI_MAX_MFT_DEVS)
		return gc_error_set(err, GC_EREMOTE, "mst status lists more than %d devices",
				    GC_ESXI_MAX_MFT_DEVS);
	f->mft = gc_xrealloc(f->mft, (f->nmft + 1) * sizeof(*f->mft));
	memset(&f->mft[f->nmft], 0, sizeof(f->mft[0]));
	strcpy(f->mft[f->nmft].dev, dev);
	strcpy(f->mft[f->nmft].pci, pci);
	f->mft[f->nmft].sriov_en = -1;
	f->mft[f->nmft].num_of_vfs = -1;
	f->nmft++;
	return 0;
}

/* An `mlxconfig q` row of the device in `cur` (NULL: not one of mst's). */
static void q_row(struct gc_esxi_mft_dev *cur, char **w, size_t n)
{
	if (cur == NULL || n < 2)
		return;
	if (strcmp(w[0], "SRIOV_EN") == 0)
		cur->sriov_en = fw_bool(w[n - 1]);
	else if (strcmp(w[0], "NUM_OF_VFS") == 0)
		cur->num_of_vfs = fw_number(w[n - 1]);
}

/* One line of the section; *cur is the device whose query is running. */
static int mft_line(struct gc_esxi_facts *f, struct gc_esxi_mft_dev **cur, bool *in_query,
		    const char *prefix, char *line, struct gc_error *err)
{
	size_t plen = strlen(prefix);
	char *w[16];
	size_t n;

	if (strncmp(line, prefix, plen) == 0) {
		const char *tag = line + plen;

		if (strcmp(tag, "none") == 0)
			f->mft_present = false;
		else if (strncmp(tag, "dev:", 4) == 0)
			*cur = find_dev(f, tag + 4);
		else if (*cur != NULL) { /* "failed": what it printed is no answer */
			(*cur)->sriov_en = -1;
			(*cur)->num_of_vfs = -1;
			*cur = NULL;
		}
		*in_query = true;
		return 0;
	}
	n = split_words(line, w, sizeof(w) / sizeof(w[0]));
	if (!*in_query)
		return mst_row(f, w, n, err);
	q_row(*cur, w, n);
	return 0;
}

int gc_esxi_parse_mft(struct gc_esxi_facts *f, const char *token, const char *text, size_t len,
		      struct gc_error *err)
{
	char *copy = gc_xstrndup(text, len), *save = NULL, *line;
	char *prefix = gc_xasprintf("@@mft:%s:", token);
	struct gc_esxi_mft_dev *cur = NULL;
	bool in_query = false;
	int rc = 0;

	f->mft_present = true;
	for (line = strtok_r(copy, "\n", &save); line != NULL && rc == 0;
	     line = strtok_r(NULL, "\n", &save))
		rc = mft_line(f, &cur, &in_query, prefix, line, err);
	if (!f->mft_present) {
		free(f->mft);
		f->mft = NULL;
		f->nmft = 0;
	}
	free(prefix);
	free(copy);
	return rc;
}

const struct gc_esxi_mft_dev *gc_esxi_facts_mft(const struct gc_esxi_facts *f, const char *pci)
{
	for (size_t i = 0; i < f->nmft; i++)
		if (strcasecmp(f->mft[i].pci, pci) == 0)
			return &f->mft[i];
	return NULL;
}
