/*
 * seed.c - a KVM VM's cloud-init NoCloud seed: meta-data, user-data and
 * network-config on an ISO 9660 volume labelled "cidata" (cloud-init's
 * NoCloud datasource, cloudinit.readthedocs.io: datasources/nocloud), written
 * with libisofs, fingerprinted so a changed spec reads as drift.
 *
 * What it gives the guest at its first boot (and again whenever the seed
 * changes: its instance-id is the fingerprint): the VM's name as hostname,
 * the guest credential's user with its public key (`key_file` + ".pub") and
 * passwordless sudo, and the static address of each virtio NIC that has one,
 * matched by the MAC the domain gives it.  The three files are JSON, which is
 * YAML (user-data starts with its "#cloud-config" line), built with json-c:
 * the library quotes, we only validate.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
/* libisofs declares struct burn_source itself when libburn is not used */
#define LIBISOFS_WITHOUT_LIBBURN 1
#include <libisofs/libisofs.h>

#include "gc/libvirt.h"
#include "gc/pattern.h"

#define PUBKEY_MAX 16384

/* An OpenSSH public key line: "<type> <base64>[ comment]", printable ASCII. */
static bool valid_pubkey(const char *s)
{
	static const char *const types[] = {"ssh-", "ecdsa-", "sk-", NULL};
	bool typed = false;

	for (size_t i = 0; types[i] != NULL; i++)
		typed = typed || strncmp(s, types[i], strlen(types[i])) == 0;
	if (!typed || strchr(s, ' ') == NULL)
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			return false;
	return true;
}

/* A Linux user name: [a-z_][a-z0-9_-]{0,31}. */
static bool valid_user(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n > 0 && n <= 32 && ((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_') &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static int read_pubkey(char **out, const char *key_file, const char *vm, struct gc_error *err)
{
	char path[1100], line[PUBKEY_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s.pub", key_file);
	f = fopen(path, "re");
	if (f == NULL)
		return gc_error_set(err, GC_EIO,
				    "VM '%s': cannot read %s, the public half of its guest's key_file "
				    "(its seed gives the guest that key)",
				    vm, path);
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	if (!valid_pubkey(line))
		return gc_error_set(err, GC_EINVAL, "VM '%s': %s is not an OpenSSH public key", vm,
				    path);
	*out = gc_xstrdup(line);
	return 0;
}

static void put(struct gc_buf *b, struct json_object *o, const char *head)
{
	gc_buf_puts(b, head);
	gc_buf_puts(b, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							  JSON_C_TO_STRING_NOSLASHESCAPE));
	gc_buf_putc(b, '\n');
	json_object_put(o);
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull; /* a separator between parts */
}

void gc_lv_seed_volume_name(struct gc_buf *out, const char *vm)
{
	gc_buf_printf(out, "%s-seed.iso", vm);
}

void gc_lv_seed_free(struct gc_lv_seed *s)
{
	gc_buf_free(&s->meta_data);
	gc_buf_free(&s->user_data);
	gc_buf_free(&s->network_config);
}

int gc_lv_seed_build(struct gc_lv_seed *s, const struct gc_vm *vm, struct gc_error *err)
{
	const struct gc_guest *g = vm->guest;
	const struct gc_credential *cr = g ? g->credentials : NULL;
	struct json_object *ud, *users, *u, *keys, *nc, *eths;
	char *key = NULL;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t nn = 0;

	memset(s, 0, sizeof(*s));
	if (!gc_valid_name(vm->name))
		return gc_error_set(err, GC_EINVAL, "invalid VM name '%s' for a seed", vm->name);
	if (cr == NULL || cr->key_file == NULL)
		return gc_error_set(err, GC_EINVAL,
				    "VM '%s': its guest's credential needs key_file: the seed gives "
				    "the guest its public half",
				    vm->name);
	if (!valid_user(cr->username))
		return gc_error_set(err, GC_EINVAL, "VM '%s': '%s' is not a Linux user name",
				    vm->name, cr->username ? cr->username : "");
	if (read_pubkey(&key, cr->key_file, vm->name, err) != 0)
		return err->code;

	ud = json_object_new_object();
	json_object_object_add(ud, "hostname", json_object_new_string(vm->name));
	users = json_object_new_array();
	u = json_object_new_object();
	json_object_object_add(u, "name", json_object_new_string(cr->username));
	keys = json_object_new_array();
	json_object_array_add(keys, json_object_new_string(key));
	json_object_object_add(u, "ssh_authorized_keys", keys);
	json_object_object_add(u, "sudo", json_object_new_string("ALL=(ALL) NOPASSWD:ALL"));
	json_object_object_add(u, "shell", json_object_new_string("/bin/bash"));
	json_object_array_add(users, u);
	json_object_object_add(ud, "users", users);
	json_object_object_add(ud, "ssh_pwauth", json_object_new_boolean(0));
	/* the hostname in /etc/hosts (sudo resolves it); the image's locale
	 * left as it is (a minimal image has no update-locale) */
	json_object_object_add(ud, "manage_etc_hosts", json_object_new_boolean(1));
	json_object_object_add(ud, "locale", json_object_new_boolean(0));
	put(&s->user_data, ud, "#cloud-config\n");
	free(key);

	nc = json_object_new_object();
	json_object_object_add(nc, "version", json_object_new_int(2));
	eths = json_object_new_object();
	for (size_t i = 0; i < vm->nnics; i++) {
		const struct gc_vm_nic *n = &vm->nics[i];
		struct json_object *e, *m, *a;
		char mac[18], name[16];

		if (n->kind != GC_VMNIC_VIRTIO || n->address == NULL)
			continue;
		if (!gc_valid_ipv4_cidr(n->address) || (n->gateway && !gc_valid_host(n->gateway))) {
			json_object_put(nc);
			json_object_put(eths);
			gc_lv_seed_free(s);
			return gc_error_set(err, GC_EINVAL, "VM '%s': invalid address of NIC %zu",
					    vm->name, i);
		}
		gc_lv_mac(mac, vm->name, i);
		e = json_object_new_object();
		m = json_object_new_object();
		json_object_object_add(m, "macaddress", json_object_new_string(mac));
		json_object_object_add(e, "match", m);
		a = json_object_new_array();
		json_object_array_add(a, json_object_new_string(n->address));
		json_object_object_add(e, "addresses", a);
		if (n->gateway != NULL) {
			struct json_object *routes = json_object_new_array(), *r = json_object_new_object();

			json_object_object_add(r, "to", json_object_new_string("default"));
			json_object_object_add(r, "via", json_object_new_string(n->gateway));
			json_object_array_add(routes, r);
			json_object_object_add(e, "routes", routes);
		}
		snprintf(name, sizeof(name), "nic%zu", nn++);
		json_object_object_add(eths, name, e);
	}
	json_object_object_add(nc, "ethernets", eths);
	put(&s->network_config, nc, "");

	h = fnv(h, vm->name);
	h = fnv(h, gc_buf_str(&s->user_data));
	h = fnv(h, gc_buf_str(&s->network_config));
	snprintf(s->digest, sizeof(s->digest), "%016llx", (unsigned long long)h);
	{
		struct json_object *md = json_object_new_object();
		char iid[40];

		snprintf(iid, sizeof(iid), "gc-%s", s->digest);
		json_object_object_add(md, "instance-id", json_object_new_string(iid));
		json_object_object_add(md, "local-hostname", json_object_new_string(vm->name));
		put(&s->meta_data, md, "");
	}
	return 0;
}

/* ---------------------------------------------------------------- the ISO */

static pthread_once_t iso_once = PTHREAD_ONCE_INIT;
static int iso_ready;

static void iso_start(void)
{
	iso_ready = iso_init() == 1;
}

static int add_file(IsoImage *img, const char *name, const struct gc_buf *content)
{
	size_t n = content->len;
	unsigned char *copy = malloc(n ? n : 1);
	IsoStream *st = NULL;
	IsoFile *f = NULL;
	int rc;

	if (copy == NULL)
		return -1;
	memcpy(copy, gc_buf_str(content), n);
	if (iso_memory_stream_new(copy, n, &st) != 1) { /* takes copy */
		free(copy);
		return -1;
	}
	rc = iso_image_add_new_file(img, iso_image_get_root(img), name, st, &f); /* takes st */
	if (rc < 0)
		iso_stream_unref(st);
	return rc < 0 ? -1 : 0;
}

int gc_lv_seed_iso(struct gc_buf *out, const struct gc_lv_seed *s, struct gc_error *err)
{
	IsoImage *img = NULL;
	IsoWriteOpts *opts = NULL;
	struct burn_source *bs = NULL;
	unsigned char block[2048];
	int rc = 0, n;

	pthread_once(&iso_once, iso_start);
	if (!iso_ready)
		return gc_error_set(err, GC_ERROR, "libisofs did not initialise");
	if (iso_image_new("cidata", &img) != 1)
		return gc_error_set(err, GC_ENOMEM, "libisofs: no image");
	/* NoCloud finds the seed by this label, "cidata" or "CIDATA" (ISO 9660
	 * stores volume ids in capitals, and libisofs does) */
	iso_image_set_volume_id(img, "cidata");
	if (add_file(img, "meta-data", &s->meta_data) != 0 ||
	    add_file(img, "user-data", &s->user_data) != 0 ||
	    add_file(img, "network-config", &s->network_config) != 0) {
		rc = gc_error_set(err, GC_ENOMEM, "libisofs: cannot add the seed's files");
		goto out;
	}
	/* Rock Ridge and Joliet keep the lower-case names with dashes */
	if (iso_write_opts_new(&opts, 0) != 1 || iso_write_opts_set_rockridge(opts, 1) != 1 ||
	    iso_write_opts_set_joliet(opts, 1) != 1 ||
	    iso_image_create_burn_source(img, opts, &bs) != 1) {
		rc = gc_error_set(err, GC_ERROR, "libisofs: cannot start writing the seed");
		goto out;
	}
	while ((n = bs->read_xt(bs, block, (int)sizeof(block))) > 0)
		gc_buf_put(out, (const char *)block, (size_t)n);
	if (n < 0)
		rc = gc_error_set(err, GC_ERROR, "libisofs: writing the seed failed");
out:
	if (bs != NULL) {
		bs->free_data(bs);
		free(bs);
	}
	if (opts != NULL)
		iso_write_opts_free(opts);
	if (img != NULL)
		iso_image_unref(img);
	return rc;
}
