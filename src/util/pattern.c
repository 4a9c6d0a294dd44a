/*
 * pattern.c - strict whole-string validators for values that reach remote
 * command lines, and a POSIX single-quote shell quoter.
 *
 * Each validator walks the string once with explicit character classes (no
 * locale, no regex engine): anything outside the class, any control byte and
 * any byte >= 0x80 fails.  Lengths are capped so a hostile spec cannot make
 * a command line arbitrarily long.
 */
#include <stdlib.h>
#include <string.h>

#include "gc/pattern.h"

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
static bool is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool all_in(const char *s, const char *extra, size_t max)
{
	size_t n = 0;

	for (; *s; s++, n++) {
		if (n >= max)
			return false;
		if (!is_alnum(*s) && (extra == NULL || strchr(extra, *s) == NULL))
			return false;
	}
	return n > 0;
}

bool gc_valid_name(const char *s)
{
	return s && is_alnum(s[0]) && all_in(s, "._-", 63);
}

static bool valid_ipv4(const char *s)
{
	int parts = 0;

	while (*s) {
		int v = 0, digits = 0;

		while (is_digit(*s)) {
			v = v * 10 + (*s - '0');
			if (++digits > 3 || v > 255)
				return false;
			s++;
		}
		if (digits == 0)
			return false;
		parts++;
		if (*s == '.') {
			s++;
			if (*s == '\0')
				return false;
		} else if (*s != '\0') {
			return false;
		}
	}
	return parts == 4;
}

static bool valid_ipv6(const char *s)
{
	size_t n = strlen(s);

	if (n < 2 || n > 45 || strchr(s, ':') == NULL)
		return false;
	return all_in(s, ":.", 45) && strspn(s, "0123456789abcdefABCDEF:.") == n;
}

bool gc_valid_host(const char *s)
{
	size_t len, label = 0;
	bool all_numeric = true;
	const char *p;

	if (s == NULL || *s == '\0')
		return false;
	if (valid_ipv4(s) || valid_ipv6(s))
		return true;
	len = strlen(s);
	if (len > 253)
		return false;
	for (p = s; *p; p++) {
		if (*p == '.') {
			if (label == 0 || p[-1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!is_alnum(*p) && *p != '-')
			return false;
		if (*p == '-' && label == 0)
			return false;
		if (!is_digit(*p))
			all_numeric = false;
		if (++label > 63)
			return false;
	}
	if (label == 0 || p[-1] == '-')
		return false;
	/* "1.2.3" is neither a valid IPv4 address nor a sensible name */
	return !all_numeric;
}

static bool hex_run(const char **p, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (!is_xdigit((*p)[i]))
			return false;
	}
	*p += n;
	return true;
}

bool gc_valid_pci(const char *s)
{
	if (s == NULL || strlen(s) != 12)
		return false;
	if (!hex_run(&s, 4) || *s++ != ':' || !hex_run(&s, 2) || *s++ != ':' || !hex_run(&s, 2) ||
	    *s++ != '.')
		return false;
	return *s >= '0' && *s <= '7' && s[1] == '\0';
}

bool gc_valid_pci_id(const char *s)
{
	if (s == NULL || strlen(s) != 9)
		return false;
	return hex_run(&s, 4) && *s++ == ':' && hex_run(&s, 4) && *s == '\0';
}

bool gc_valid_abs_path(const char *s)
{
	/* a file: "/" alone and a trailing '/' (a directory) are refused */
	if (s == NULL || s[0] != '/' || strlen(s) > 1024 || s[strlen(s) - 1] == '/')
		return false;
	if (strstr(s, "/../") || strstr(s, "/./") || strstr(s, "//"))
		return false;
	{
		size_t n = strlen(s);

		if ((n >= 3 && strcmp(s + n - 3, "/..") == 0) || (n >= 2 && strcmp(s + n - 2, "/.") == 0))
			return false;
	}
	return all_in(s, "._/+-", 1024);
}

bool gc_valid_ifname(const char *s)
{
	const char *p = s;

	if (s == NULL || strlen(s) > 15 || !is_alpha(*p))
		return false;
	while (*p >= 'a' && *p <= 'z')
		p++;
	if (!is_digit(*p))
		return false;
	while (is_digit(*p))
		p++;
	return *p == '\0';
}

/* "1/1" or "1/1/2" (split port): 1-3 numbers of 1-3 digits separated by '/' */
static bool port(const char **pp)
{
	const char *p = *pp;
	int parts = 0;

	for (;;) {
		int d = 0;

		while (is_digit(*p) && d < 4) {
			p++;
			d++;
		}
		if (d == 0 || d > 3)
			return false;
		parts++;
		if (*p != '/' || parts == 3)
			break;
		p++;
	}
	*pp = p;
	return parts >= 2;
}

bool gc_valid_port_range(const char *s)
{
	const char *p = s;

	if (s == NULL || *s == '\0' || strlen(s) > 255)
		return false;
	for (;;) {
		if (!port(&p))
			return false;
		if (*p == '-') {
			p++;
			if (!port(&p))
				return false;
		}
		if (*p == '\0')
			return true;
		if (*p != ',')
			return false;
		p++;
	}
}

bool gc_valid_version(const char *s)
{
	/* starts with a letter or digit: never an option ("-rf", "--help") */
	return s && is_alnum(s[0]) && all_in(s, ".+_-", 64);
}

bool gc_valid_vgpu_profile(const char *s)
{
	const char *p;

	if (s == NULL || *s == '\0' || strlen(s) > 64)
		return false;
	for (p = s; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || is_digit(*p) || *p == '_' || *p == '-'))
			return false;
	}
	return true;
}

bool gc_valid_env_name(const char *s)
{
	if (s == NULL || !(is_alpha(*s) || *s == '_'))
		return false;
	return all_in(s, "_", 128);
}

bool gc_valid_label(const char *s)
{
	size_t n = 0;

	if (s == NULL || *s == '\0')
		return false;
	for (; *s; s++, n++) {
		unsigned char c = (unsigned char)*s;

		if (n >= 255 || c < 0x20 || c >= 0x7f || strchr("'\"\\`$", c) != NULL)
			return false;
	}
	return true;
}

bool gc_valid_ipv4_cidr(const char *s)
{
	char addr[16];
	const char *slash;
	size_t n;
	int prefix = 0, digits = 0;

	if (s == NULL || (slash = strchr(s, '/')) == NULL)
		return false;
	n = (size_t)(slash - s);
	if (n == 0 || n >= sizeof(addr))
		return false;
	memcpy(addr, s, n);
	addr[n] = '\0';
	if (!valid_ipv4(addr))
		return false;
	for (s = slash + 1; is_digit(*s); s++) {
		prefix = prefix * 10 + (*s - '0');
		if (++digits > 2)
			return false;
	}
	return digits > 0 && *s == '\0' && prefix >= 1 && prefix <= 32;
}

bool gc_valid_package(const char *s)
{
	size_t n = 0;

	if (s == NULL || !is_alnum(*s))
		return false;
	for (; *s; s++, n++)
		if (n >= 128 || !(is_alnum(*s) || strchr("+._-", *s) != NULL) || *s == '\0')
			return false;
	return true;
}

void gc_shell_quote(struct gc_buf *b, const char *s)
{
	gc_buf_putc(b, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			gc_buf_puts(b, "'\\''");
		else
			gc_buf_putc(b, *s);
	}
	gc_buf_putc(b, '\'');
}

bool gc_valid_libvirt_uri(const char *s)
{
	static const char *const schemes[] = {"qemu", "qemu+ssh", "qemu+libssh2", "qemu+libssh",
					      "qemu+tls", "test", NULL};
	static const char *const paths[] = {"system", "session", "default", NULL};
	const char *sep, *auth, *path, *at, *q;
	char host[256];
	size_t i, n;
	bool ok = false;

	if (s == NULL || strlen(s) > 1024 || (sep = strstr(s, "://")) == NULL)
		return false;
	for (i = 0; schemes[i] != NULL; i++)
		if (strlen(schemes[i]) == (size_t)(sep - s) &&
		    strncmp(s, schemes[i], (size_t)(sep - s)) == 0)
			ok = true;
	if (!ok)
		return false;
	auth = sep + 3;
	path = strchr(auth, '/');
	if (path == NULL)
		return false;
	at = memchr(auth, '@', (size_t)(path - auth));
	if (at != NULL) {
		char user[64];

		n = (size_t)(at - auth);
		if (n == 0 || n >= sizeof(user))
			return false;
		memcpy(user, auth, n);
		user[n] = '\0';
		if (!gc_valid_name(user))
			return false;
		auth = at + 1;
	}
	n = (size_t)(path - auth);
	if (n >= sizeof(host))
		return false;
	memcpy(host, auth, n);
	host[n] = '\0';
	if (n > 0) {
		char *port = NULL;

		if (host[0] == '[') {
			char *close = strchr(host, ']');

			if (close == NULL || (close[1] != '\0' && close[1] != ':'))
				return false;
			if (close[1] == ':')
				port = close + 2;
			*close = '\0';
			memmove(host, host + 1, strlen(host + 1) + 1);
			if (!valid_ipv6(host))
				return false;
		} else {
			port = strchr(host, ':');
			if (port != NULL)
				*port++ = '\0';
			if (!gc_valid_host(host) || valid_ipv6(host))
				return false;
		}
		if (port != NULL && (*port == '\0' || strlen(port) > 5 ||
				     strspn(port, "0123456789") != strlen(port) || atoi(port) > 65535 ||
				     atoi(port) == 0))
			return false;
	} else if (at != NULL) {
		return false;
	}
	path++;
	q = strchr(path, '?');
	n = q ? (size_t)(q - path) : strlen(path);
	ok = false;
	for (i = 0; paths[i] != NULL; i++)
		if (strlen(paths[i]) == n && strncmp(path, paths[i], n) == 0)
			ok = true;
	if (!ok)
		return false;
	if (q == NULL)
		return true;
	if (strncmp(q, "?keyfile=", 9) != 0)
		return false;
	return gc_valid_abs_path(q + 9);
}
