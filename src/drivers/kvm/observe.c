/*
 * observe.c - one exec reads a whole KVM host: the script, and its parser.
 *
 * The script is POSIX sh, run as root.  Every section starts with a marker
 * line `@@gc:<token>:<name>` (gc/sections.h) and holds one read's output,
 * or nothing when the file or tool is absent.  The PCI addresses baked
 * into it come from the graph's resource ids and are checked against
 * gc_valid_pci() before use; nothing else in it comes from the spec.
 *
 * Where the formats come from (docs/kvm-host.md, tests/data/kvm/README):
 * /proc/cmdline, /proc/cpuinfo, os-release, /proc/uptime and the sysfs
 * layout of a PCI device (vendor, device, the driver and iommu_group
 * links, driver_override) were captured on real machines.  grub.cfg's
 * `linux` line and grubby's `args="..."` are read as their documentation
 * shows them.  sriov_totalvfs/sriov_numvfs, mdev_supported_types/<type>/
 * {name,available_instances}, /sys/bus/mdev/devices and NVIDIA's
 * nvidia/{current,creatable}_vgpu_types of a VF need the hardware: their
 * readers are tolerant (unknown lines are skipped, numbers checked) and
 * written from the kernel's and NVIDIA's documentation, not captures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gc/kvm.h"
#include "gc/lines.h"
#include "gc/pattern.h"
#include "gc/sections.h"

/* ---------------------------------------------------------------- freeing */

static void types_free(struct gc_kvm_type *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(t[i].id);
		free(t[i].name);
	}
	free(t);
}

void gc_kvm_facts_free(struct gc_kvm_facts *f)
{
	if (f == NULL)
		return;
	free(f->os_id);
	free(f->os_like);
	free(f->os_version);
	free(f->cmdline);
	free(f->cpu_vendor);
	free(f->boot_id);
	free(f->configured);
	for (size_t i = 0; i < f->ndevs; i++) {
		struct gc_kvm_dev *d = &f->devs[i];

		free(d->vendor);
		free(d->device);
		free(d->driver);
		free(d->override);
		free(d->iommu_group);
		types_free(d->types, d->ntypes);
	}
	free(f->devs);
	for (size_t i = 0; i < f->nvfs; i++) {
		free(f->vfs[i].address);
		types_free(f->vfs[i].creatable, f->vfs[i].ncreatable);
	}
	free(f->vfs);
	for (size_t i = 0; i < f->nmdevs; i++)
		free(f->mdevs[i].type);
	free(f->mdevs);
	for (size_t i = 0; i < f->nfiles; i++) {
		free(f->files[i].path);
		free(f->files[i].content);
	}
	free(f->files);
	memset(f, 0, sizeof(*f));
}

/* ---------------------------------------------------------------- the script */

/* The PCI address a kvm.vfio/kvm.sriov id ends with, or a vGPU's parent. */
static const char *res_pci(const struct gc_resource *r)
{
	const char *slash = strrchr(r->id, '/');

	if (r->kind == GC_RES_KVM_VGPU)
		return gc_resource_prop(r, "parent");
	return slash != NULL ? slash + 1 : NULL;
}

/* Append " word" to a space-separated list unless it is there already. */
static void add_word(struct gc_buf *list, const char *word)
{
	const char *p = gc_buf_str(list);
	size_t n = strlen(word);

	for (p = strstr(p, word); p != NULL; p = strstr(p + 1, word))
		if (p[-1] == ' ' && (p[n] == ' ' || p[n] == '\0'))
			return;
	gc_buf_printf(list, " %s", word);
}

/* A VF index as the graph writes it: 1-4 digits. */
static bool small_number(const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	return n > 0 && n <= 4 && strspn(s, "0123456789") == n;
}

/* The spec's devices (" 0000:3b:00.0 ...") and VFs (" 0000:3b:00.0/0 ..."). */
static void spec_devices(struct gc_buf *pcis, struct gc_buf *vfs,
                         const struct gc_resource *const *res, size_t nres)
{
	gc_buf_puts(pcis, "");
	gc_buf_puts(vfs, "");
	for (size_t i = 0; i < nres; i++) {
		const struct gc_resource *r = res[i];
		const char *pci, *mech, *vf;
		char pv[40];

		if (r->kind != GC_RES_KVM_VFIO && r->kind != GC_RES_KVM_SRIOV &&
		    r->kind != GC_RES_KVM_VGPU)
			continue;
		pci = res_pci(r);
		if (pci == NULL || !gc_valid_pci(pci))
			continue; /* never reached: the loader checked it (defence in depth) */
		add_word(pcis, pci);
		mech = gc_resource_prop(r, "mechanism");
		vf = gc_resource_prop(r, "vf");
		if (mech != NULL && strcmp(mech, "vf") == 0 && small_number(vf)) {
			snprintf(pv, sizeof(pv), "%s/%s", pci, vf);
			add_word(vfs, pv);
		}
	}
}

char *gc_kvm_observe_script(const struct gc_resource *const *res, size_t nres, const char *token)
{
	struct gc_buf b = GC_BUF_INIT, pcis = GC_BUF_INIT, vfs = GC_BUF_INIT;

	spec_devices(&pcis, &vfs, res, nres);
	gc_buf_printf(&b,
	              "export LC_ALL=C PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
	              "/sbin:/bin\nm() { printf '\\n@@gc:%s:%%s\\n' \"$1\"; }\n",
	              token);
	gc_buf_puts(
	    &b, "m id; id -u\n"
	        "m os; cat /etc/os-release 2>/dev/null\n"
	        "m cmdline; cat /proc/cmdline\n"
	        "m cpu; grep -m1 '^vendor_id' /proc/cpuinfo 2>/dev/null\n"
	        "m boot_id; cat /proc/sys/kernel/random/boot_id\n"
	        "m uptime; cat /proc/uptime\n"
	        "m loader; if command -v update-grub >/dev/null; then echo update-grub; "
	        "elif command -v grubby >/dev/null; then echo grubby; fi\n"
	        "m grub_cfg; for f in /boot/grub/grub.cfg /boot/grub2/grub.cfg; do if [ -r $f ]; "
	        "then grep -m1 -E '^[[:space:]]*linux(16|efi)?[[:space:]]' $f; break; fi; done\n"
	        "m grubby; command -v grubby >/dev/null && grubby --info=DEFAULT 2>/dev/null | "
	        "grep '^args='\n"
	        "m iommu_groups; ls /sys/kernel/iommu_groups 2>/dev/null | wc -l\n");
	gc_buf_printf(
	    &b,
	    "m dev; for p in%s; do d=/sys/bus/pci/devices/$p; "
	    "if [ ! -e $d ]; then echo \"$p absent\"; continue; fi; "
	    "echo \"$p vendor $(cat $d/vendor)\"; echo \"$p device $(cat $d/device)\"; "
	    "[ -e $d/driver ] && echo \"$p driver $(basename \"$(readlink $d/driver)\")\"; "
	    "[ -r $d/driver_override ] && echo \"$p override $(cat $d/driver_override)\"; "
	    "[ -e $d/iommu_group ] && echo \"$p iommu_group "
	    "$(basename \"$(readlink $d/iommu_group)\")\"; "
	    "[ -r $d/sriov_totalvfs ] && echo \"$p totalvfs $(cat $d/sriov_totalvfs)\" && "
	    "echo \"$p numvfs $(cat $d/sriov_numvfs)\"; "
	    "for t in $d/mdev_supported_types/*; do [ -d \"$t\" ] && echo \"$p mdev_type "
	    "$(basename \"$t\") $(cat \"$t/available_instances\" 2>/dev/null || echo -) "
	    "$(cat \"$t/name\" 2>/dev/null)\"; done; done\n",
	    gc_buf_str(&pcis));
	gc_buf_printf(&b,
	              "m vf; for pv in%s; do v=/sys/bus/pci/devices/${pv%%/*}/virtfn${pv#*/}; "
	              "if [ ! -e $v ]; then echo \"$pv absent\"; continue; fi; "
	              "echo \"$pv address $(basename \"$(readlink $v)\")\"; "
	              "[ -r $v/nvidia/current_vgpu_type ] && echo \"$pv current "
	              "$(cat $v/nvidia/current_vgpu_type)\"; "
	              "[ -r $v/nvidia/creatable_vgpu_types ] && while IFS= read -r l; do "
	              "echo \"$pv creatable $l\"; done < $v/nvidia/creatable_vgpu_types; done\n",
	              gc_buf_str(&vfs));
	gc_buf_puts(&b,
	            "m mdev; for u in /sys/bus/mdev/devices/*; do [ -e \"$u\" ] || continue; "
	            "d=$(readlink -f \"$u\"); echo \"$(basename \"$u\") $(basename \"${d%/*}\") "
	            "$(basename \"$(readlink -f \"$u/mdev_type\")\")\"; done\n");
	gc_buf_puts(&b,
	            "m files; for f in " GC_KVM_RULES_DIR
	            "/70-gpuclusterctl-*.rules " GC_KVM_VFIO_MODULES " " GC_KVM_GRUB_DROPIN
	            "; do [ -r \"$f\" ] && "
	            "{ printf '#file %s %s\\n' \"$(wc -c < \"$f\")\" \"$f\"; head -c 65536 \"$f\"; "
	            "echo; }; done\n"
	            "m end\n");
	gc_buf_free(&pcis);
	gc_buf_free(&vfs);
	return gc_buf_take(&b);
}

/* ---------------------------------------------------------------- lookups */

const struct gc_kvm_dev *gc_kvm_dev(const struct gc_kvm_facts *f, const char *pci)
{
	for (size_t i = 0; pci != NULL && i < f->ndevs; i++)
		if (strcmp(f->devs[i].pci, pci) == 0)
			return &f->devs[i];
	return NULL;
}

const struct gc_kvm_vf *gc_kvm_vf(const struct gc_kvm_facts *f, const char *parent, unsigned index)
{
	for (size_t i = 0; parent != NULL && i < f->nvfs; i++)
		if (f->vfs[i].index == index && strcmp(f->vfs[i].parent, parent) == 0)
			return &f->vfs[i];
	return NULL;
}

const struct gc_kvm_mdev *gc_kvm_mdev(const struct gc_kvm_facts *f, const char *uuid)
{
	for (size_t i = 0; uuid != NULL && i < f->nmdevs; i++)
		if (strcasecmp(f->mdevs[i].uuid, uuid) == 0)
			return &f->mdevs[i];
	return NULL;
}

const char *gc_kvm_file(const struct gc_kvm_facts *f, const char *path)
{
	for (size_t i = 0; i < f->nfiles; i++)
		if (strcmp(f->files[i].path, path) == 0)
			return f->files[i].content;
	return NULL;
}

/* ---------------------------------------------------------------- small readers */

/* The next space-separated word of *p (moved past it), or NULL at the end. */
static const char *word(const char **p, size_t *n)
{
	const char *s = *p + strspn(*p, " \t");

	*n = strcspn(s, " \t");
	*p = s + *n;
	return *n > 0 ? s : NULL;
}

/* The rest of the line after its leading blanks, trimmed, gc_xmalloc'd. */
static char *rest(const char *p)
{
	size_t n;

	p += strspn(p, " \t");
	n = strlen(p);
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
		n--;
	return gc_xstrndup(p, n);
}

/* A decimal number of at most 9 digits; -1 when the text is not one. */
static long number(const char *s)
{
	size_t n;

	if (s == NULL)
		return -1;
	s += strspn(s, " \t\n");
	n = strspn(s, "0123456789");
	if (n == 0 || n > 9 || (s[n] != '\0' && strchr(" \t\r\n", s[n]) == NULL))
		return -1;
	return strtol(s, NULL, 10);
}

static char *kv(const char *text, const char *key)
{
	size_t kl = strlen(key);
	struct gc_lines it = {text, text + strlen(text), 0};
	const char *l;
	size_t n;

	while (gc_lines_next(&it, &l, &n)) {
		if (n > kl && memcmp(l, key, kl) == 0 && l[kl] == '=') {
			const char *v = l + kl + 1;
			size_t vn = n - kl - 1;

			if (vn >= 2 && (v[0] == '"' || v[0] == '\'') && v[vn - 1] == v[0]) {
				v++;
				vn -= 2;
			}
			return gc_xstrndup(v, vn);
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------- sections */

/* `grep -m1 linux /boot/grub/grub.cfg`: "\tlinux\t/vmlinuz-6.1.0-18-amd64 root=UUID=.. ro quiet";
 * the arguments are what follows the kernel's path. */
static char *grub_cfg_args(const char *line)
{
	const char *p = line;
	size_t n;

	if (word(&p, &n) == NULL || word(&p, &n) == NULL)
		return NULL;
	return rest(p);
}

/* `grubby --info=DEFAULT | grep ^args=`: args="ro crashkernel=... quiet" */
static char *grubby_args(const char *text)
{
	return kv(text, "args");
}

static struct gc_kvm_dev *dev_get(struct gc_kvm_facts *f, const char *pci, size_t n)
{
	struct gc_kvm_dev *d;

	if (n >= sizeof(d->pci))
		return NULL;
	for (size_t i = 0; i < f->ndevs; i++)
		if (strlen(f->devs[i].pci) == n && memcmp(f->devs[i].pci, pci, n) == 0)
			return &f->devs[i];
	if (f->ndevs >= GC_KVM_MAX_DEVS)
		return NULL;
	f->devs = gc_xrealloc(f->devs, (f->ndevs + 1) * sizeof(*f->devs));
	d = &f->devs[f->ndevs++];
	memset(d, 0, sizeof(*d));
	memcpy(d->pci, pci, n);
	d->totalvfs = d->numvfs = -1;
	return d;
}

static void type_add(struct gc_kvm_type **v, size_t *n, const char *id, size_t idn, int avail,
                     const char *name)
{
	struct gc_kvm_type *t;

	if (*n >= GC_KVM_MAX_TYPES)
		return;
	*v = gc_xrealloc(*v, (*n + 1) * sizeof(**v));
	t = &(*v)[(*n)++];
	t->id = gc_xstrndup(id, idn);
	t->name = rest(name);
	t->available = avail;
}

static void set_str(char **dst, const char *p)
{
	free(*dst);
	*dst = rest(p);
	if (**dst == '\0') {
		free(*dst);
		*dst = NULL;
	}
}

/* "<pci> <key> <value>" lines of the dev section. */
static void parse_devs(struct gc_kvm_facts *f, const char *text)
{
	struct gc_lines it = {text, text + strlen(text), 0};
	const char *l;
	size_t n;

	while (gc_lines_next(&it, &l, &n)) {
		char *line = gc_xstrndup(l, n);
		const char *p = line, *pci, *key, *id;
		size_t pn, kn, idn;
		struct gc_kvm_dev *d;

		if ((pci = word(&p, &pn)) == NULL || (key = word(&p, &kn)) == NULL ||
		    (d = dev_get(f, pci, pn)) == NULL) {
			free(line);
			continue;
		}
		d->present = !(kn == 6 && memcmp(key, "absent", 6) == 0);
		if (kn == 6 && memcmp(key, "vendor", 6) == 0)
			set_str(&d->vendor, p);
		else if (kn == 6 && memcmp(key, "device", 6) == 0)
			set_str(&d->device, p);
		else if (kn == 6 && memcmp(key, "driver", 6) == 0)
			set_str(&d->driver, p);
		else if (kn == 8 && memcmp(key, "override", 8) == 0)
			set_str(&d->override, p);
		else if (kn == 11 && memcmp(key, "iommu_group", 11) == 0)
			set_str(&d->iommu_group, p);
		else if (kn == 8 && memcmp(key, "totalvfs", 8) == 0)
			d->totalvfs = (int)number(p);
		else if (kn == 6 && memcmp(key, "numvfs", 6) == 0)
			d->numvfs = (int)number(p);
		else if (kn == 9 && memcmp(key, "mdev_type", 9) == 0 &&
		         (id = word(&p, &idn)) != NULL) {
			const char *avail;
			size_t an;
			char a[16];

			avail = word(&p, &an);
			snprintf(a, sizeof(a), "%.*s", (int)(an < 15 ? an : 15),
			         avail ? avail : "");
			type_add(&d->types, &d->ntypes, id, idn, (int)number(a), p);
		}
		free(line);
	}
	for (size_t i = 0; i < f->ndevs; i++) {
		struct gc_kvm_dev *d = &f->devs[i];

		if (d->override != NULL && strcmp(d->override, "(null)") == 0) {
			free(d->override); /* the kernel's word for no override */
			d->override = NULL;
		}
	}
}

static struct gc_kvm_vf *vf_get(struct gc_kvm_facts *f, const char *pv, size_t n)
{
	const char *slash = memchr(pv, '/', n);
	struct gc_kvm_vf *v;
	char idx[8];
	size_t pn;
	long k;

	if (slash == NULL || (pn = (size_t)(slash - pv)) >= sizeof(v->parent) || n - pn - 1 == 0 ||
	    n - pn - 1 >= sizeof(idx))
		return NULL;
	memcpy(idx, slash + 1, n - pn - 1);
	idx[n - pn - 1] = '\0';
	if ((k = number(idx)) < 0 || k > 9999)
		return NULL;
	for (size_t i = 0; i < f->nvfs; i++)
		if (f->vfs[i].index == (unsigned)k && strlen(f->vfs[i].parent) == pn &&
		    memcmp(f->vfs[i].parent, pv, pn) == 0)
			return &f->vfs[i];
	if (f->nvfs >= GC_KVM_MAX_DEVS)
		return NULL;
	f->vfs = gc_xrealloc(f->vfs, (f->nvfs + 1) * sizeof(*f->vfs));
	v = &f->vfs[f->nvfs++];
	memset(v, 0, sizeof(*v));
	memcpy(v->parent, pv, pn);
	v->index = (unsigned)k;
	v->current = -1;
	return v;
}

/* One line of nvidia/creatable_vgpu_types, "557   : NVIDIA A100-4C" (NVIDIA's
 * vGPU user guide; the header "ID    : vGPU Name" and anything else that
 * does not start with a number is skipped). */
static void creatable_line(struct gc_kvm_vf *v, const char *p)
{
	size_t idn;

	p += strspn(p, " \t");
	idn = strspn(p, "0123456789");
	if (idn == 0 || idn > 9)
		return;
	type_add(&v->creatable, &v->ncreatable, p, idn, -1, p + idn + strspn(p + idn, " \t:"));
}

/* "<gpu>/<n> <key> <value>" lines of the vf section. */
static void parse_vfs(struct gc_kvm_facts *f, const char *text)
{
	struct gc_lines it = {text, text + strlen(text), 0};
	const char *l;
	size_t n;

	while (gc_lines_next(&it, &l, &n)) {
		char *line = gc_xstrndup(l, n);
		const char *p = line, *pv, *key;
		size_t pn, kn;
		struct gc_kvm_vf *v;

		if ((pv = word(&p, &pn)) != NULL && (key = word(&p, &kn)) != NULL &&
		    (v = vf_get(f, pv, pn)) != NULL) {
			v->present = !(kn == 6 && memcmp(key, "absent", 6) == 0);
			if (kn == 7 && memcmp(key, "address", 7) == 0)
				set_str(&v->address, p);
			else if (kn == 7 && memcmp(key, "current", 7) == 0)
				v->current = number(p);
			else if (kn == 9 && memcmp(key, "creatable", 9) == 0)
				creatable_line(v, p);
		}
		free(line);
	}
}

/* "<uuid> <parent pci> <type dir>" per mediated device. */
static void parse_mdevs(struct gc_kvm_facts *f, const char *text)
{
	struct gc_lines it = {text, text + strlen(text), 0};
	const char *l;
	size_t n;

	while (gc_lines_next(&it, &l, &n) && f->nmdevs < GC_KVM_MAX_MDEVS) {
		char *line = gc_xstrndup(l, n);
		const char *p = line, *u, *par, *ty;
		size_t un, parn, tyn;
		struct gc_kvm_mdev *m;

		if ((u = word(&p, &un)) != NULL && un == 36 && (par = word(&p, &parn)) != NULL &&
		    parn < sizeof(m->parent) && (ty = word(&p, &tyn)) != NULL) {
			f->mdevs = gc_xrealloc(f->mdevs, (f->nmdevs + 1) * sizeof(*f->mdevs));
			m = &f->mdevs[f->nmdevs++];
			memset(m, 0, sizeof(*m));
			memcpy(m->uuid, u, un);
			memcpy(m->parent, par, parn);
			m->type = gc_xstrndup(ty, tyn);
		}
		free(line);
	}
}

/* "#file <bytes> <path>\n" then exactly that many bytes (at most
 * GC_KVM_MAX_FILE_BYTES were sent) and a newline, per file. */
static void parse_files(struct gc_kvm_facts *f, const char *text)
{
	const char *p = text, *end = text + strlen(text);

	while (p < end && f->nfiles < GC_KVM_MAX_FILES) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *q;
		char *head;
		long len;
		size_t pn;
		struct gc_kvm_file *fl;

		if (nl == NULL)
			break;
		if (strncmp(p, "#file ", 6) != 0) {
			p = nl + 1;
			continue;
		}
		head = gc_xstrndup(p + 6, (size_t)(nl - p - 6));
		q = head;
		len = number(head);
		word(&q, &pn);
		q += strspn(q, " ");
		if (len < 0 || *q != '/') {
			free(head);
			p = nl + 1;
			continue;
		}
		if (len > GC_KVM_MAX_FILE_BYTES)
			len = GC_KVM_MAX_FILE_BYTES;
		if ((size_t)len > (size_t)(end - nl - 1))
			len = (long)(end - nl - 1);
		f->files = gc_xrealloc(f->files, (f->nfiles + 1) * sizeof(*f->files));
		fl = &f->files[f->nfiles++];
		fl->path = gc_xstrdup(q);
		fl->content = gc_xstrndup(nl + 1, (size_t)len);
		free(head);
		p = nl + 1 + len;
		if (p < end && *p == '\n')
			p++;
	}
}

static enum gc_kvm_loader loader_of(const char *s)
{
	if (s != NULL && strcmp(s, "update-grub") == 0)
		return GC_KVM_LOADER_UPDATE_GRUB;
	if (s != NULL && strcmp(s, "grubby") == 0)
		return GC_KVM_LOADER_GRUBBY;
	return GC_KVM_LOADER_NONE;
}

int gc_kvm_parse(struct gc_kvm_facts *out, const char *token, const char *text, size_t len,
                 struct gc_error *err)
{
	struct gc_kvm_facts f;
	struct gc_sections s = {0};
	const char *t;
	char *v;

	memset(&f, 0, sizeof(f));
	gc_sections_split(&s, token, text, len);
	if (gc_sections_get(&s, "end") == NULL) {
		size_t n = s.n;

		gc_sections_free(&s);
		return gc_error_set(err, GC_EREMOTE,
		                    "the observation ended early (%zu of its sections "
		                    "came back)",
		                    n);
	}
	v = gc_sections_trimmed(&s, "id");
	f.root = v != NULL && strcmp(v, "0") == 0;
	free(v);
	if ((t = gc_sections_get(&s, "os")) != NULL) {
		f.os_id = kv(t, "ID");
		f.os_like = kv(t, "ID_LIKE");
		f.os_version = kv(t, "VERSION_ID");
	}
	f.cmdline = gc_sections_trimmed(&s, "cmdline");
	if ((v = gc_sections_trimmed(&s, "cpu")) != NULL) {
		/* "vendor_id\t: GenuineIntel" */
		const char *c = strchr(v, ':');

		if (c != NULL && c[1 + strspn(c + 1, " \t")] != '\0')
			f.cpu_vendor = rest(c + 1);
		free(v);
	}
	f.boot_id = gc_sections_trimmed(&s, "boot_id");
	f.uptime_s = -1;
	if ((v = gc_sections_trimmed(&s, "uptime")) != NULL) {
		/* "12345.67 45678.90": seconds since boot, then idle time */
		char *e;
		double up = strtod(v, &e);

		if (e != v && up >= 0)
			f.uptime_s = up;
		free(v);
	}
	v = gc_sections_trimmed(&s, "loader");
	f.loader = loader_of(v);
	free(v);
	if (f.loader == GC_KVM_LOADER_UPDATE_GRUB &&
	    (v = gc_sections_trimmed(&s, "grub_cfg")) != NULL) {
		f.configured = grub_cfg_args(v);
		free(v);
	} else if (f.loader == GC_KVM_LOADER_GRUBBY &&
	           (t = gc_sections_get(&s, "grubby")) != NULL) {
		f.configured = grubby_args(t);
	}
	v = gc_sections_trimmed(&s, "iommu_groups");
	f.iommu_groups = number(v);
	free(v);
	if ((t = gc_sections_get(&s, "dev")) != NULL)
		parse_devs(&f, t);
	if ((t = gc_sections_get(&s, "vf")) != NULL)
		parse_vfs(&f, t);
	if ((t = gc_sections_get(&s, "mdev")) != NULL)
		parse_mdevs(&f, t);
	if ((t = gc_sections_get(&s, "files")) != NULL)
		parse_files(&f, t);
	gc_sections_free(&s);
	*out = f;
	return 0;
}
