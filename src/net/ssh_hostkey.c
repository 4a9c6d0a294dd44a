/*
 * ssh_hostkey.c - host keys for the SSH transport: the OpenSSH known_hosts
 * file read line by line into a libssh2 knownhost collection, only the lines
 * that may be the connecting host's (line_for; lines libssh2 cannot parse -
 * markers, certificates, unknown key types - are skipped, as OpenSSH skips
 * what it does not use), lookups of "host" (port 22) or
 * "[host]:port", hashed or not, the SHA256 fingerprint in OpenSSH's form for
 * messages, and the one plain line appended when the user trusts a new key.
 * The key types known_hosts already records for a host are preferred in the
 * handshake, as OpenSSH does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/sha.h>

#include "ssh_int.h"


static const char *key_type_name(int type)
{
	switch (type) {
	case LIBSSH2_HOSTKEY_TYPE_RSA:
		return "ssh-rsa";
	case LIBSSH2_HOSTKEY_TYPE_DSS:
		return "ssh-dss";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
		return "ecdsa-sha2-nistp256";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
		return "ecdsa-sha2-nistp384";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
		return "ecdsa-sha2-nistp521";
	case LIBSSH2_HOSTKEY_TYPE_ED25519:
		return "ssh-ed25519";
	}
	return NULL;
}

static int known_key_bits(int type)
{
	switch (type) {
	case LIBSSH2_HOSTKEY_TYPE_RSA:
		return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
	case LIBSSH2_HOSTKEY_TYPE_DSS:
		return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
		return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
		return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
		return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
	case LIBSSH2_HOSTKEY_TYPE_ED25519:
		return LIBSSH2_KNOWNHOST_KEY_ED25519;
	}
	return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
}

static void base64(struct gc_buf *b, const unsigned char *p, size_t n, bool pad)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		gc_buf_putc(b, tab[v >> 18 & 63]);
		gc_buf_putc(b, tab[v >> 12 & 63]);
		gc_buf_putc(b, tab[v >> 6 & 63]);
		gc_buf_putc(b, tab[v & 63]);
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);

		gc_buf_putc(b, tab[v >> 18 & 63]);
		gc_buf_putc(b, tab[v >> 12 & 63]);
		if (i + 1 < n)
			gc_buf_putc(b, tab[v >> 6 & 63]);
		else if (pad)
			gc_buf_putc(b, '=');
		if (pad)
			gc_buf_putc(b, '=');
	}
}

/* The name OpenSSH files a host under: "host" on port 22, else "[host]:port". */
static void known_hosts_name(char *out, size_t n, const char *host, unsigned port)
{
	if (port == 22)
		snprintf(out, n, "%s", host);
	else
		snprintf(out, n, "[%s]:%u", host, port);
}

char *gc_ssh_default_known_hosts(void)
{
	const char *home = getenv("HOME");

	return gc_xasprintf("%s/.ssh/known_hosts", home && *home ? home : ".");
}

/* The 20 bytes of an SHA-1 salt or hash in base64 (28 characters, one '='). */
static bool sha1_b64(unsigned char out[SHA_DIGEST_LENGTH], const char *b64, size_t len)
{
	unsigned char buf[32];

	if (len != 28 || b64[27] != '=' || b64[26] == '=')
		return false;
	if (EVP_DecodeBlock(buf, (const unsigned char *)b64, 28) != 21)
		return false; /* 21: the padding's zero byte is counted */
	memcpy(out, buf, SHA_DIGEST_LENGTH);
	return true;
}

/* HMAC-SHA1 for the hashed lines of one load: fetched once (OpenSSL 3's
 * one-shot HMAC() fetches the digest at every call, most of its cost). */
struct hmac_sha1 {
	EVP_MAC *mac;
	EVP_MAC_CTX *ctx;
	bool failed;
};

static void hmac_sha1_free(struct hmac_sha1 *h)
{
	EVP_MAC_CTX_free(h->ctx);
	EVP_MAC_free(h->mac);
}

/* What a known_hosts line is to the name a connection checks. */
enum line_for {
	LINE_NOT,	   /* can never match it: left out */
	LINE_MAYBE,	   /* libssh2 decides */
	LINE_HASHED_NAME, /* a hashed entry for exactly this name */
};

/* A hashed host field "|1|salt|hash" (OpenSSH's HashKnownHosts): is it
 * name's?  The hash is HMAC-SHA1 keyed by the salt over the name, as
 * libssh2 computes it in libssh2_knownhost_check.  A field that is not as
 * OpenSSH writes it (20-byte salt and hash in padded base64), or an HMAC
 * that cannot be computed, is left to libssh2 (LINE_MAYBE). */
static enum line_for hashed_for(struct hmac_sha1 *h, const char *field, size_t len,
				const char *name, size_t name_len)
{
	unsigned char salt[SHA_DIGEST_LENGTH], hash[SHA_DIGEST_LENGTH], mac[EVP_MAX_MD_SIZE];
	char digest[] = "SHA1";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_end(),
	};
	size_t mac_len = 0;
	const char *bar;

	if (len < 3 || memcmp(field, "|1|", 3) != 0)
		return LINE_MAYBE;
	field += 3;
	len -= 3;
	bar = memchr(field, '|', len);
	if (bar == NULL || !sha1_b64(salt, field, (size_t)(bar - field)) ||
	    !sha1_b64(hash, bar + 1, len - (size_t)(bar + 1 - field)))
		return LINE_MAYBE;
	if (h->ctx == NULL && !h->failed) {
		h->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
		h->ctx = h->mac ? EVP_MAC_CTX_new(h->mac) : NULL;
		h->failed = h->ctx == NULL || !EVP_MAC_CTX_set_params(h->ctx, params);
	}
	if (h->failed || !EVP_MAC_init(h->ctx, salt, sizeof(salt), NULL) ||
	    !EVP_MAC_update(h->ctx, (const unsigned char *)name, name_len) ||
	    !EVP_MAC_final(h->ctx, mac, &mac_len, sizeof(mac)) || mac_len != SHA_DIGEST_LENGTH)
		return LINE_MAYBE;
	return memcmp(mac, hash, SHA_DIGEST_LENGTH) == 0 ? LINE_HASHED_NAME : LINE_NOT;
}

/*
 * Can this line's entry be one for name?  libssh2 matches a plain entry by
 * strcmp() of name with one of the line's comma-separated host names, and a
 * hashed one ("|1|salt|hash") by HMAC-SHA1 of name keyed by the salt: so a
 * plain host field that does not hold name as a substring, or a hashed one
 * whose hash is not name's, can never match, and is not handed to libssh2
 * at all.  Every check of a connection is for the one name, so the
 * collection it builds holds only what could answer it.  Before, a
 * known_hosts of a few thousand hosts cost every connection a decode of
 * every line and, for each of about nine checks, a walk of them all
 * (libssh2_knownhost_readline, _check), with an HMAC at every hashed line:
 * an apply's CPU grew with the square of its hosts (docs/benchmarks.md,
 * "known_hosts").  *field_end: where the host field ends in line.
 */
static enum line_for line_for(struct hmac_sha1 *h, const char *line, size_t len,
			      const char *name, size_t name_len, size_t *field_end)
{
	size_t lead = 0, field;

	while (lead < len && (line[lead] == ' ' || line[lead] == '\t')) /* libssh2 skips them too */
		lead++;
	line += lead;
	len -= lead;
	field = strcspn(line, " \t");
	if (field > len)
		field = len;
	*field_end = lead + field;
	if (field > 0 && line[0] == '|')
		return hashed_for(h, line, field, name, name_len);
	return name_len > 0 && field >= name_len && memmem(line, field, name, name_len) != NULL
		       ? LINE_MAYBE
		       : LINE_NOT;
}

/* Add to kh the lines of text (NUL-terminated, changed in place) that may be
 * entries for name (line_for; every line for a NULL name), skipping lines
 * libssh2 cannot use.  A hashed line of name's goes in as a plain line of
 * name: libssh2 then matches it by strcmp() as it matched it by its HMAC,
 * without an HMAC at each of the connection's checks. */
void gc_ssh_known_hosts_add(LIBSSH2_KNOWNHOSTS *kh, char *text, const char *name)
{
	size_t name_len = name ? strlen(name) : 0;
	bool plain_ok = name != NULL && name_len > 0 && strcspn(name, " \t,#@|") == name_len;
	struct hmac_sha1 h = {NULL, NULL, false};
	struct gc_buf as_plain = GC_BUF_INIT;
	char *line, *next;

	for (line = text; line != NULL && *line != '\0'; line = next) {
		enum line_for f = LINE_MAYBE;
		size_t len, field_end = 0;

		next = strchr(line, '\n');
		len = next ? (size_t)(next - line) : strlen(line);
		if (next)
			*next++ = '\0';
		while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
			line[--len] = '\0';
		if (len == 0 || line[0] == '#' || line[0] == '@')
			continue;
		if (name != NULL && (f = line_for(&h, line, len, name, name_len, &field_end)) ==
					    LINE_NOT)
			continue;
		if (f == LINE_HASHED_NAME && plain_ok) {
			gc_buf_reset(&as_plain);
			gc_buf_puts(&as_plain, name);
			gc_buf_put(&as_plain, line + field_end, len - field_end);
			(void)libssh2_knownhost_readline(kh, gc_buf_str(&as_plain), as_plain.len,
							 LIBSSH2_KNOWNHOST_FILE_OPENSSH);
			continue;
		}
		(void)libssh2_knownhost_readline(kh, line, len, LIBSSH2_KNOWNHOST_FILE_OPENSSH);
	}
	gc_buf_free(&as_plain);
	hmac_sha1_free(&h);
}

/* Load into kh the file's lines that may be entries for name. A missing file
 * is empty. */
static int load_known_hosts(LIBSSH2_KNOWNHOSTS *kh, const char *path, const char *name,
			    struct gc_error *err)
{
	char *text = NULL;
	struct gc_error e = GC_ERROR_INIT;

	if (access(path, F_OK) != 0 && errno == ENOENT)
		return 0;
	if (gc_read_file(&text, NULL, path, (size_t)64 << 20, &e) < 0)
		return gc_error_set(err, GC_EIO, "known_hosts: %s", e.msg);
	gc_ssh_known_hosts_add(kh, text, name);
	free(text);
	return 0;
}

static int mkdirs(char *path, mode_t mode)
{
	char *p;

	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, mode) < 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return 0;
}

static int append_known_host(const char *path, const char *name, const char *type,
			     const char *key64, struct gc_error *err)
{
	char *dir = gc_xstrdup(path);
	struct gc_buf line = GC_BUF_INIT;
	struct stat st;
	int fd, rc = 0;

	if (mkdirs(dir, 0700) < 0) {
		rc = gc_error_set_errno(err, GC_EIO, errno, "cannot create the directory of '%s'",
					path);
		goto out;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = gc_error_set_errno(err, GC_EIO, errno, "cannot open '%s'", path);
		goto out;
	}
	flock(fd, LOCK_EX);
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		/* keep the file line-structured if its last line had no newline */
		int rfd = open(path, O_RDONLY | O_CLOEXEC);
		char last = '\n';

		if (rfd >= 0) {
			if (pread(rfd, &last, 1, st.st_size - 1) != 1)
				last = '\n';
			close(rfd);
		}
		if (last != '\n')
			gc_buf_putc(&line, '\n');
	}
	gc_buf_printf(&line, "%s %s %s\n", name, type, key64);
	if (write(fd, line.ptr, line.len) != (ssize_t)line.len)
		rc = gc_error_set_errno(err, GC_EIO, errno, "cannot append to '%s'", path);
	if (fsync(fd) < 0 && rc == 0)
		rc = gc_error_set_errno(err, GC_EIO, errno, "cannot sync '%s'", path);
	close(fd);
out:
	gc_buf_free(&line);
	free(dir);
	return rc;
}

/* Host key algorithms of libssh2 and the key type each one proves. */
static int alg_key_type(const char *alg)
{
	static const struct {
		const char *alg;
		int type;
	} map[] = {
		{"ssh-ed25519", LIBSSH2_HOSTKEY_TYPE_ED25519},
		{"ecdsa-sha2-nistp256", LIBSSH2_HOSTKEY_TYPE_ECDSA_256},
		{"ecdsa-sha2-nistp384", LIBSSH2_HOSTKEY_TYPE_ECDSA_384},
		{"ecdsa-sha2-nistp521", LIBSSH2_HOSTKEY_TYPE_ECDSA_521},
		{"rsa-sha2-512", LIBSSH2_HOSTKEY_TYPE_RSA},
		{"rsa-sha2-256", LIBSSH2_HOSTKEY_TYPE_RSA},
		{"ssh-rsa", LIBSSH2_HOSTKEY_TYPE_RSA},
		{"ssh-dss", LIBSSH2_HOSTKEY_TYPE_DSS},
	};
	size_t i;

	for (i = 0; i < GC_ARRAY_LEN(map); i++)
		if (strcmp(alg, map[i].alg) == 0)
			return map[i].type;
	return LIBSSH2_HOSTKEY_TYPE_UNKNOWN;
}

/* Is there an entry for name with a key of this type?  A dummy key of the
 * type gives MISMATCH exactly when one exists. */
static bool known_type(LIBSSH2_KNOWNHOSTS *kh, const char *name, int type)
{
	struct libssh2_knownhost *found = NULL;

	return libssh2_knownhost_check(kh, name, "-", 1,
				       LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW |
					       known_key_bits(type),
				       &found) == LIBSSH2_KNOWNHOST_CHECK_MISMATCH;
}

/* The name of another key type recorded for name, or NULL. */
static const char *other_known_type(LIBSSH2_KNOWNHOSTS *kh, const char *name, int type)
{
	static const int types[] = {LIBSSH2_HOSTKEY_TYPE_ED25519, LIBSSH2_HOSTKEY_TYPE_ECDSA_256,
				    LIBSSH2_HOSTKEY_TYPE_ECDSA_384, LIBSSH2_HOSTKEY_TYPE_ECDSA_521,
				    LIBSSH2_HOSTKEY_TYPE_RSA, LIBSSH2_HOSTKEY_TYPE_DSS};
	size_t i;

	for (i = 0; i < GC_ARRAY_LEN(types); i++)
		if (types[i] != type && known_type(kh, name, types[i]))
			return key_type_name(types[i]);
	return NULL;
}

/*
 * Load known_hosts and, like OpenSSH, ask first for the host key types
 * already recorded for this host: libssh2's own order prefers ECDSA, and a
 * host known by its ed25519 key would otherwise look unknown.
 */
int gc_ssh_load_known_hosts(struct gc_ssh_conn *c, LIBSSH2_KNOWNHOSTS **khp, const char *path,
			    struct gc_error *err)
{
	LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(c->session);
	struct gc_buf first = GC_BUF_INIT, rest = GC_BUF_INIT;
	const char **algs = NULL;
	char name[300];
	int n, i, rc;

	if (kh == NULL)
		return gc_ssh_fail(c, LIBSSH2_ERROR_ALLOC, "known_hosts", err);
	known_hosts_name(name, sizeof(name), c->host, c->port);
	if ((rc = load_known_hosts(kh, path, name, err)) < 0) {
		libssh2_knownhost_free(kh);
		return rc;
	}
	*khp = kh;
	n = libssh2_session_supported_algs(c->session, LIBSSH2_METHOD_HOSTKEY, &algs);
	for (i = 0; i < n; i++) {
		int type = alg_key_type(algs[i]);
		struct gc_buf *b = known_type(kh, name, type) ? &first : &rest;

		if (type == LIBSSH2_HOSTKEY_TYPE_UNKNOWN)
			continue; /* certificates: not used */
		gc_buf_printf(b, "%s%s", b->len ? "," : "", algs[i]);
	}
	if (first.len > 0) {
		if (rest.len > 0)
			gc_buf_printf(&first, ",%s", gc_buf_str(&rest));
		libssh2_session_method_pref(c->session, LIBSSH2_METHOD_HOSTKEY, gc_buf_str(&first));
	}
	if (n > 0)
		libssh2_free(c->session, algs);
	gc_buf_free(&first);
	gc_buf_free(&rest);
	return 0;
}

int gc_ssh_check_host_key(struct gc_ssh_conn *c, const struct gc_ssh_opts *o,
			  LIBSSH2_KNOWNHOSTS *kh, const char *path, struct gc_error *err)
{
	struct libssh2_knownhost *found = NULL;
	const char *key, *tname, *hash;
	char name[300];
	struct gc_buf fp = GC_BUF_INIT, key64 = GC_BUF_INIT;
	const char *other;
	size_t len = 0;
	int type = 0, rc = 0, check;

	key = libssh2_session_hostkey(c->session, &len, &type);
	hash = libssh2_hostkey_hash(c->session, LIBSSH2_HOSTKEY_HASH_SHA256);
	tname = key_type_name(type);
	if (key == NULL || hash == NULL || tname == NULL) {
		rc = gc_ssh_fail(c, LIBSSH2_ERROR_HOSTKEY_INIT, "reading the host key", err);
		goto out;
	}
	gc_buf_puts(&fp, "SHA256:");
	base64(&fp, (const unsigned char *)hash, 32, false);
	base64(&key64, (const unsigned char *)key, len, true);
	known_hosts_name(name, sizeof(name), c->host, c->port);

	check = libssh2_knownhost_check(kh, name, key, len,
					LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW |
						known_key_bits(type),
					&found);
	switch (check) {
	case LIBSSH2_KNOWNHOST_CHECK_MATCH:
		break;
	case LIBSSH2_KNOWNHOST_CHECK_MISMATCH:
		rc = gc_error_set(err, GC_EHOSTKEY,
				  "HOST KEY CHANGED for '%s': it now offers %s key %s, which does "
				  "not match the key recorded for '%s' in '%s'. Someone may be "
				  "intercepting the connection, or the host was reinstalled. "
				  "Refusing to connect (trusting new keys never replaces a known "
				  "one); if the change is expected, remove the old entry with: "
				  "ssh-keygen -R '%s' -f '%s'",
				  c->host, tname, gc_buf_str(&fp), name, path, name, path);
		break;
	case LIBSSH2_KNOWNHOST_CHECK_NOTFOUND:
		if ((other = other_known_type(kh, name, type)) != NULL) {
			/* a known host offering a new key type: not a new host */
			rc = gc_error_set(err, GC_EHOSTKEY,
					  "HOST KEY CHANGED for '%s': '%s' records a %s key for "
					  "'%s', but the host offered only %s key %s. Refusing to "
					  "connect (trusting new keys applies to new hosts only); if "
					  "the change is expected, remove the old entry with: "
					  "ssh-keygen -R '%s' -f '%s'",
					  c->host, path, other, name, tname, gc_buf_str(&fp), name,
					  path);
			break;
		}
		if (!o->trust_new_host_keys) {
			rc = gc_error_set(err, GC_EHOSTKEY,
					  "host key of '%s' is not known: %s key %s is not in '%s' "
					  "under '%s'; if this is the right host, trust it with "
					  "'ssh.trust_new_host_keys: true' in the spec or "
					  "--trust-new-host-keys",
					  c->host, tname, gc_buf_str(&fp), path, name);
			break;
		}
		rc = append_known_host(path, name, tname, gc_buf_str(&key64), err);
		break;
	default:
		rc = gc_ssh_fail(c, LIBSSH2_ERROR_HOSTKEY_INIT, "checking the host key", err);
		break;
	}
out:
	gc_buf_free(&fp);
	gc_buf_free(&key64);
	return rc;
}

