/*
 * pbutil.c - the probe's own small helpers: buffer, JSON string escaping,
 * capped file reads under a configurable root, running a tool without a
 * shell, and dlopen() symbol tables.
 *
 * The probe must build with libc alone, so none of this comes from gc_util.
 * Tools (mlnx_qos, nvidia-smi) are run with fork/execvp, stdout into a pipe,
 * stderr to /dev/null, killed after a deadline; their output is capped.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_int.h"

void *pb_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fputs("gpuclusterctl-probe: out of memory\n", stderr);
		abort();
	}
	return p;
}

static void buf_grow(struct pb_buf *b, size_t more)
{
	size_t need = b->len + more + 1;
	char *p;

	if (need <= b->cap)
		return;
	if (need < 256)
		need = 256;
	if (need < b->cap * 2)
		need = b->cap * 2;
	p = realloc(b->ptr, need);
	if (!p) {
		fputs("gpuclusterctl-probe: out of memory\n", stderr);
		abort();
	}
	b->ptr = p;
	b->cap = need;
}

void pb_buf_put(struct pb_buf *b, const void *p, size_t n)
{
	buf_grow(b, n);
	if (n)
		memcpy(b->ptr + b->len, p, n);
	b->len += n;
	b->ptr[b->len] = '\0';
}

void pb_buf_puts(struct pb_buf *b, const char *s)
{
	pb_buf_put(b, s, strlen(s));
}

void pb_buf_printf(struct pb_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *pb_buf_take(struct pb_buf *b)
{
	char *s;

	if (!b->ptr)
		buf_grow(b, 0);
	s = b->ptr;
	b->ptr = NULL;
	b->len = b->cap = 0;
	return s;
}

void pb_buf_free(struct pb_buf *b)
{
	free(b->ptr);
	b->ptr = NULL;
	b->len = b->cap = 0;
}

/* Length of a valid UTF-8 sequence at s (max n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t k, i;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		k = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		k = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		k = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (k > n)
		return 0;
	for (i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

void pb_json_str(struct pb_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	pb_buf_put(b, "\"", 1);
	while (n > 0) {
		size_t k;

		if (*p == '"' || *p == '\\') {
			char e[2] = {'\\', (char)*p};
			pb_buf_put(b, e, 2);
			k = 1;
		} else if (*p == '\n') {
			pb_buf_put(b, "\\n", 2), k = 1;
		} else if (*p == '\t') {
			pb_buf_put(b, "\\t", 2), k = 1;
		} else if (*p == '\r') {
			pb_buf_put(b, "\\r", 2), k = 1;
		} else if (*p < 0x20 || *p == 0x7f) {
			pb_buf_printf(b, "\\u%04x", *p), k = 1;
		} else if ((k = utf8_len(p, n)) == 0) {
			/* invalid UTF-8: replacement character, one byte consumed */
			pb_buf_puts(b, "\\ufffd"), k = 1;
		} else {
			pb_buf_put(b, p, k);
		}
		p += k;
		n -= k;
	}
	pb_buf_put(b, "\"", 1);
}

void pb_copy(char *dst, size_t cap, const char *src, size_t n)
{
	if (cap == 0)
		return;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

void pb_fmt(char *dst, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (cap == 0)
		return;
	va_start(ap, fmt);
	if (vsnprintf(dst, cap, fmt, ap) < 0)
		dst[0] = '\0';
	va_end(ap);
}

const char *pb_trim(const char *s, size_t *n)
{
	size_t len = *n;

	while (len > 0 && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'))
		s++, len--;
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r' ||
			   s[len - 1] == '\n'))
		len--;
	*n = len;
	return s;
}

bool pb_parse_long(const char *s, size_t n, long *v)
{
	char tmp[32];
	char *end;
	long x;

	s = pb_trim(s, &n);
	if (n == 0 || n >= sizeof(tmp))
		return false;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (!(tmp[0] == '-' || (tmp[0] >= '0' && tmp[0] <= '9')))
		return false;
	errno = 0;
	x = strtol(tmp, &end, 10);
	if (errno || *end != '\0')
		return false;
	*v = x;
	return true;
}

static char g_root[512];

void pb_set_root(const char *root)
{
	size_t n;

	pb_copy(g_root, sizeof(g_root), root ? root : "", root ? strlen(root) : 0);
	n = strlen(g_root);
	while (n > 0 && g_root[n - 1] == '/')
		g_root[--n] = '\0';
}

const char *pb_root(void)
{
	return g_root;
}

int pb_read_sys_all(char **out, size_t *len, const char *path)
{
	char full[1024];
	struct pb_buf b = {0};
	char chunk[4096];
	ssize_t got;
	int fd;

	pb_fmt(full, sizeof(full), "%s%s", g_root, path);
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? GC_ENOTFOUND : GC_EIO;
	for (;;) {
		got = read(fd, chunk, sizeof(chunk));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			close(fd);
			pb_buf_free(&b);
			return GC_EIO;
		}
		if (got == 0 || b.len + (size_t)got > PB_FILE_MAX)
			break;
		pb_buf_put(&b, chunk, (size_t)got);
	}
	close(fd);
	*len = b.len;
	*out = pb_buf_take(&b);
	return 0;
}

int pb_read_sys(char *out, size_t cap, const char *path)
{
	char *all;
	size_t len;
	const char *t;
	int rc = pb_read_sys_all(&all, &len, path);

	if (rc != 0)
		return rc;
	t = pb_trim(all, &len);
	pb_copy(out, cap, t, len);
	free(all);
	return 0;
}

uint64_t pb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool pb_tool_on_path(const char *name)
{
	const char *path = getenv("PATH");
	char full[1024];

	if (!path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);

		if (n > 0 && n < 900) {
			pb_fmt(full, sizeof(full), "%.*s/%s", (int)n, path, name);
			if (access(full, X_OK) == 0)
				return true;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

int pb_run_tool(char **out, size_t *len, char *const argv[], int timeout_ms, int *status)
{
	struct pb_buf b = {0};
	uint64_t deadline = pb_now_ns() + (uint64_t)timeout_ms * 1000000u;
	int pfd[2];
	pid_t pid;
	int wst = 0, rc = 0;

	if (pipe2(pfd, O_CLOEXEC) != 0)
		return GC_EIO;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return GC_EIO;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		dup2(pfd[1], 1);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		char chunk[8192];
		struct pollfd p = {pfd[0], POLLIN, 0};
		uint64_t now = pb_now_ns();
		ssize_t got;
		int pr;

		if (now >= deadline) {
			rc = GC_ETIMEOUT;
			break;
		}
		pr = poll(&p, 1, (int)((deadline - now) / 1000000u) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			rc = pr == 0 ? GC_ETIMEOUT : GC_EIO;
			break;
		}
		got = read(pfd[0], chunk, sizeof(chunk));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (b.len + (size_t)got > PB_TOOL_MAX) {
			rc = GC_ENOMEM;
			break;
		}
		pb_buf_put(&b, chunk, (size_t)got);
	}
	close(pfd[0]);
	if (rc != 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
		;
	if (rc != 0) {
		pb_buf_free(&b);
		return rc;
	}
	*status = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128;
	*len = b.len;
	*out = pb_buf_take(&b);
	return 0;
}

int pb_dl_open(void **handle, const char *lib, const struct pb_sym *syms, size_t n, char *why,
	       size_t whycap)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	size_t i, k;

	if (!h) {
		const char *e = dlerror();
		pb_fmt(why, whycap, "%s not loadable: %s", lib, e ? e : "unknown error");
		return GC_ENOTFOUND;
	}
	for (i = 0; i < n; i++) {
		void *p = NULL;

		for (k = 0; k < 3 && syms[i].names[k] && !p; k++)
			p = dlsym(h, syms[i].names[k]);
		*syms[i].slot = p;
		if (!p && !syms[i].optional) {
			pb_fmt(why, whycap, "%s lacks symbol %s", lib, syms[i].names[0]);
			dlclose(h);
			return GC_ENOTSUP;
		}
	}
	*handle = h;
	return 0;
}
