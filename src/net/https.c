/*
 * https.c - the HTTPS transport over libcurl (the only file that includes it).
 *
 * One gc_https handle wraps one libcurl easy handle.  libcurl keeps the
 * connection of an easy handle open between transfers, so every request of
 * one vCenter after the first rides the same TLS connection (the
 * `connections` counter proves it).  The handle's cookie engine is switched
 * on with an empty jar that lives only in memory: the SOAP session cookie is
 * stored by libcurl and sent back by it, and never passes through our
 * strings except in gc_https_cookie().
 *
 * The base URL is parsed once with libcurl's URL API; each request replaces
 * its path.  Only https is allowed, redirects are never followed.  Verified
 * TLS is the default (system store, or ca_file alone when set).
 *
 * Errors are converted at this boundary: the CURLcode goes to err->libcode,
 * the error buffer (or curl_easy_strerror()) into the message, and the code
 * is classified (timeout -> GC_ETIMEOUT, untrusted certificate ->
 * GC_EHOSTKEY, cap -> GC_ENOMEM, the rest of the transport -> GC_ENET).
 * Nothing we send (body, headers, credentials) ever goes into a message.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gc/https.h"
#include "gc/util.h"

#define DEFAULT_CONNECT_TIMEOUT_MS 10000u
#define DEFAULT_TIMEOUT_MS 120000u

struct gc_https {
	CURL *easy;
	CURLU *base;
	char target[512];
	char errbuf[CURL_ERROR_SIZE];
	size_t max_response;
	bool overflow; /* the write callback refused more than max_response */
	struct gc_buf body;
	struct gc_https_stats stats;
	/* the body of the `once` request in flight (borrowed) */
	const char *once_body;
	size_t once_len, once_pos;
	bool once_sent;
};

static atomic_uint_fast64_t g_requests;
static atomic_uint_fast64_t g_responses;
static atomic_uint_fast64_t g_connections;
static atomic_uint_fast64_t g_sent;
static atomic_uint_fast64_t g_received;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CURLcode init_rc;

static void global_init(void)
{
	init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct gc_https *h = arg;
	size_t n = size * nmemb;

	if (n > h->max_response - h->body.len) {
		h->overflow = true;
		return 0; /* libcurl stops with CURLE_WRITE_ERROR */
	}
	gc_buf_put(&h->body, data, n);
	return n;
}

/* Trailing newline of libcurl's error buffer stripped. */
static const char *detail(struct gc_https *h, CURLcode rc)
{
	size_t n = strlen(h->errbuf);

	while (n > 0 && (h->errbuf[n - 1] == '\n' || h->errbuf[n - 1] == '\r'))
		h->errbuf[--n] = '\0';
	return n > 0 ? h->errbuf : curl_easy_strerror(rc);
}

static int curl_fail(struct gc_https *h, CURLcode rc, const char *what, struct gc_error *err)
{
	int code = GC_ENET;
	int r;

	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		code = GC_ETIMEOUT;
		break;
	case CURLE_PEER_FAILED_VERIFICATION:
		code = GC_EHOSTKEY;
		r = gc_error_set(err, code, "%s: certificate not trusted: %s", h->target,
				 detail(h, rc));
		goto out;
	case CURLE_FILESIZE_EXCEEDED: /* Content-Length over the cap: nothing read */
		h->overflow = true;
		GC_FALLTHROUGH;
	case CURLE_WRITE_ERROR:
		if (h->overflow) {
			code = GC_ENOMEM;
			r = gc_error_set(err, code, "%s: %s: response larger than %zu bytes",
					 h->target, what, h->max_response);
			goto out;
		}
		break;
	case CURLE_SEND_FAIL_REWIND: /* a `once` request libcurl wanted to send again */
		r = gc_error_set(err, code,
				 "%s: %s: the connection closed before the reply; the request "
				 "may have been carried out and was not sent again",
				 h->target, what);
		goto out;
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		code = GC_EINVAL;
		break;
	default:
		break;
	}
	r = gc_error_set(err, code, "%s: %s: %s", h->target, what, detail(h, rc));
out:
	if (err != NULL && err->code == code && err->libcode == 0)
		err->libcode = rc;
	return r;
}

static int parse_base(struct gc_https *h, const struct gc_https_opts *o, struct gc_error *err)
{
	char *scheme = NULL, *host = NULL, *port = NULL;
	int rc = 0;

	h->base = curl_url();
	if (h->base == NULL)
		abort(); /* out of memory */
	if (o->url == NULL || curl_url_set(h->base, CURLUPART_URL, o->url, 0) != CURLUE_OK ||
	    curl_url_get(h->base, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(h->base, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		rc = gc_error_set(err, GC_EINVAL, "%s: bad URL '%s'", o->name ? o->name : "https",
				  o->url ? o->url : "");
		goto out;
	}
	if (strcmp(scheme, "https") != 0) {
		rc = gc_error_set(err, GC_EINVAL, "%s: URL '%s' is not https://",
				  o->name ? o->name : "https", o->url);
		goto out;
	}
	curl_url_get(h->base, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
	curl_url_set(h->base, CURLUPART_USER, NULL, 0);
	curl_url_set(h->base, CURLUPART_PASSWORD, NULL, 0);
	curl_url_set(h->base, CURLUPART_FRAGMENT, NULL, 0);
	snprintf(h->target, sizeof(h->target), "%s (https://%s:%s)", o->name ? o->name : "https",
		 host, port ? port : "443");
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	return rc;
}

static int check_ca_file(const struct gc_https *h, const char *path, struct gc_error *err)
{
	if (access(path, R_OK) != 0)
		return gc_error_set_errno(err, GC_EINVAL, errno, "%s: cannot read ca_file '%s'",
					  h->target, path);
	return 0;
}

static void set_common(struct gc_https *h, const struct gc_https_opts *o)
{
	CURL *e = h->easy;

	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
#else
	curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)CURLPROTO_HTTPS);
#endif
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_COOKIEFILE, ""); /* cookie engine, in memory only */
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(o->connect_timeout_ms ? o->connect_timeout_ms
						      : DEFAULT_CONNECT_TIMEOUT_MS));
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
			 (long)(o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS));
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)h->max_response);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "gpuclusterctl/" GC_VERSION);
	if (o->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	} else {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
		if (o->ca_file != NULL) {
			curl_easy_setopt(e, CURLOPT_CAINFO, o->ca_file);
			curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
		}
	}
}

int gc_https_new(struct gc_https **out, const struct gc_https_opts *o, struct gc_error *err)
{
	struct gc_https *h;
	int rc;

	pthread_once(&init_once, global_init);
	if (init_rc != CURLE_OK)
		return gc_error_set(err, GC_ERROR, "libcurl initialisation failed: %s",
				    curl_easy_strerror(init_rc));
	h = gc_xcalloc(1, sizeof(*h));
	h->max_response = o->max_response ? o->max_response : GC_HTTPS_RESPONSE_MAX;
	rc = parse_base(h, o, err);
	if (rc == 0 && o->ca_file != NULL && !o->insecure)
		rc = check_ca_file(h, o->ca_file, err);
	if (rc < 0) {
		gc_https_free(h);
		return rc;
	}
	h->easy = curl_easy_init();
	if (h->easy == NULL)
		abort(); /* out of memory */
	set_common(h, o);
	*out = h;
	return 0;
}

void gc_https_free(struct gc_https *h)
{
	if (h == NULL)
		return;
	if (h->easy != NULL)
		curl_easy_cleanup(h->easy);
	curl_url_cleanup(h->base);
	gc_buf_free(&h->body);
	free(h);
}

const char *gc_https_target(const struct gc_https *h)
{
	return h->target;
}

/*
 * The body of a `once` request, read by libcurl through a callback so that
 * libcurl must ask to rewind it before sending it again: a rewind after
 * bytes went out is refused, and the transfer fails with
 * CURLE_SEND_FAIL_REWIND instead of repeating a request the server may
 * have carried out.  (POSTFIELDS bodies are rewound without asking;
 * libcurl 7.88 has no option against the re-send itself.)
 */
static size_t once_read(char *buf, size_t size, size_t nitems, void *arg)
{
	struct gc_https *h = arg;
	size_t n = size * nitems, left = h->once_len - h->once_pos;

	if (n > left)
		n = left;
	memcpy(buf, h->once_body + h->once_pos, n);
	h->once_pos += n;
	h->once_sent = h->once_sent || n > 0;
	return n;
}

static int once_seek(void *arg, curl_off_t offset, int origin)
{
	struct gc_https *h = arg;

	if (h->once_sent || origin != SEEK_SET || offset != 0)
		return CURL_SEEKFUNC_FAIL;
	h->once_pos = 0;
	return CURL_SEEKFUNC_OK;
}

/* Per-request options: method, URL, headers, body, credentials. */
static int prepare(struct gc_https *h, const struct gc_https_request *q, struct curl_slist **hdrs,
		   struct gc_error *err)
{
	CURL *e = h->easy;
	CURLU *u = curl_url_dup(h->base);
	char *url = NULL;
	struct curl_slist *l = NULL;
	char line[256];

	if (u == NULL)
		abort(); /* out of memory */
	if (curl_url_set(u, CURLUPART_URL, q->path, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK) {
		curl_url_cleanup(u);
		return gc_error_set(err, GC_EINVAL, "%s: bad request path", h->target);
	}
	curl_url_cleanup(u);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_free(url);

	curl_easy_setopt(e, CURLOPT_HTTPGET, 1L); /* resets POST state */
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
	h->once_body = NULL;
	h->once_len = h->once_pos = 0;
	h->once_sent = false;
	if (strcmp(q->method, "POST") == 0 && q->once) {
		h->once_body = q->body ? q->body : "";
		h->once_len = q->body ? q->body_len : 0;
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, NULL);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)h->once_len);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, once_read);
		curl_easy_setopt(e, CURLOPT_READDATA, h);
		curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, once_seek);
		curl_easy_setopt(e, CURLOPT_SEEKDATA, h);
	} else if (strcmp(q->method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body_len);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, q->body ? q->body : "");
	} else if (strcmp(q->method, "GET") != 0) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, q->method);
	}
	l = curl_slist_append(l, "Expect:");
	if (q->content_type != NULL) {
		snprintf(line, sizeof(line), "Content-Type: %s", q->content_type);
		l = curl_slist_append(l, line);
	}
	for (size_t i = 0; q->headers != NULL && q->headers[i] != NULL; i++)
		l = curl_slist_append(l, q->headers[i]);
	if (l == NULL)
		abort(); /* out of memory */
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, l);
	*hdrs = l;
	if (q->username != NULL && q->password != NULL) {
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(e, CURLOPT_USERNAME, q->username);
		curl_easy_setopt(e, CURLOPT_PASSWORD, q->password);
	}
	return 0;
}

/* Forget per-request state that must not leak into the next request. */
static void unprepare(struct gc_https *h, struct curl_slist *hdrs)
{
	curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h->easy, CURLOPT_USERNAME, NULL);
	curl_easy_setopt(h->easy, CURLOPT_PASSWORD, NULL);
	curl_easy_setopt(h->easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_NONE);
	curl_easy_setopt(h->easy, CURLOPT_READFUNCTION, NULL);
	curl_easy_setopt(h->easy, CURLOPT_READDATA, NULL);
	curl_easy_setopt(h->easy, CURLOPT_SEEKFUNCTION, NULL);
	curl_easy_setopt(h->easy, CURLOPT_SEEKDATA, NULL);
	h->once_body = NULL;
	curl_slist_free_all(hdrs);
}

static void count(struct gc_https *h, long connects, size_t sent, bool answered)
{
	h->stats.requests++;
	h->stats.connections += (uint64_t)connects;
	h->stats.bytes_sent += sent;
	atomic_fetch_add(&g_requests, 1);
	atomic_fetch_add(&g_connections, (uint64_t)connects);
	atomic_fetch_add(&g_sent, sent);
	if (answered) {
		h->stats.responses++;
		h->stats.bytes_received += h->body.len;
		atomic_fetch_add(&g_responses, 1);
		atomic_fetch_add(&g_received, h->body.len);
	}
}

int gc_https_request(struct gc_https *h, const struct gc_https_request *q,
		     struct gc_https_response *resp, struct gc_error *err)
{
	struct curl_slist *hdrs = NULL;
	char what[160];
	long status = 0, connects = 0;
	char *ctype = NULL;
	CURLcode rc;
	int r;

	snprintf(what, sizeof(what), "%s %s", q->method, q->path);
	if (prepare(h, q, &hdrs, err) < 0)
		return GC_EINVAL;
	gc_buf_reset(&h->body);
	h->overflow = false;
	h->errbuf[0] = '\0';
	rc = curl_easy_perform(h->easy);
	unprepare(h, hdrs);
	curl_easy_getinfo(h->easy, CURLINFO_NUM_CONNECTS, &connects);
	curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
	count(h, connects, q->body ? q->body_len : 0, rc == CURLE_OK && status != 0);
	if (rc != CURLE_OK)
		return curl_fail(h, rc, what, err);
	if (status == 401) {
		r = gc_error_set(err, GC_EAUTH, "%s: %s: 401 Unauthorized", h->target, what);
		if (err != NULL && err->code == GC_EAUTH && err->libcode == 0)
			err->libcode = status;
		return r;
	}
	memset(resp, 0, sizeof(*resp));
	resp->status = status;
	if (curl_easy_getinfo(h->easy, CURLINFO_CONTENT_TYPE, &ctype) == CURLE_OK && ctype)
		snprintf(resp->content_type, sizeof(resp->content_type), "%s", ctype);
	resp->body_len = h->body.len;
	resp->body = gc_buf_take(&h->body); /* now owned by resp */
	return 0;
}

void gc_https_response_free(struct gc_https_response *resp)
{
	if (resp == NULL)
		return;
	free(resp->body);
	resp->body = NULL;
	resp->body_len = 0;
}

/* Netscape cookie lines: domain, tailmatch, path, secure, expires, name, value. */
int gc_https_cookie(struct gc_https *h, const char *name, char *out, size_t n)
{
	struct curl_slist *list = NULL;
	int rc = GC_ENOTFOUND;

	if (curl_easy_getinfo(h->easy, CURLINFO_COOKIELIST, &list) != CURLE_OK)
		return GC_ENOTFOUND;
	for (struct curl_slist *c = list; c != NULL && rc == GC_ENOTFOUND; c = c->next) {
		const char *f = c->data;
		size_t len;

		for (int i = 0; i < 5 && f != NULL; i++) {
			f = strchr(f, '\t');
			f = f ? f + 1 : NULL;
		}
		if (f == NULL)
			continue;
		len = strlen(name);
		if (strncmp(f, name, len) != 0 || f[len] != '\t')
			continue;
		f += len + 1;
		if (strlen(f) >= n) {
			rc = GC_ENOMEM;
			break;
		}
		memcpy(out, f, strlen(f) + 1);
		rc = 0;
	}
	curl_slist_free_all(list);
	return rc;
}

void gc_https_clear_cookies(struct gc_https *h)
{
	curl_easy_setopt(h->easy, CURLOPT_COOKIELIST, "ALL");
}

void gc_https_stats(const struct gc_https *h, struct gc_https_stats *out)
{
	*out = h->stats;
}

void gc_https_stats_global(struct gc_https_stats *out)
{
	out->requests = atomic_load(&g_requests);
	out->responses = atomic_load(&g_responses);
	out->connections = atomic_load(&g_connections);
	out->bytes_sent = atomic_load(&g_sent);
	out->bytes_received = atomic_load(&g_received);
}

void gc_https_stats_reset_global(void)
{
	atomic_store(&g_requests, 0);
	atomic_store(&g_responses, 0);
	atomic_store(&g_connections, 0);
	atomic_store(&g_sent, 0);
	atomic_store(&g_received, 0);
}
