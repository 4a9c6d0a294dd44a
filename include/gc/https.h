/*
 * https.h - the HTTPS transport: one kept-alive connection per vCenter.
 *
 * src/net/https.c is the only user of libcurl.  A handle owns one libcurl
 * easy handle, so consecutive requests reuse one TLS connection, and an
 * in-memory cookie jar (the SOAP session cookie lives there and nowhere
 * else).  TLS is always verified: against the system store, or against
 * ca_file when set; `insecure` turns verification off and is only for a
 * spec that says `insecure: true`.  Only https:// URLs are accepted and
 * redirects are not followed.
 *
 *     struct gc_https_opts o = {.url = "https://vc01.example.com",
 *                               .name = "vCenter 'vc01'",
 *                               .ca_file = "/etc/gc/vc-ca.pem"};
 *     struct gc_https *h;
 *     struct gc_https_response r;
 *     struct gc_https_request q = {.method = "POST", .path = "/sdk",
 *                                  .content_type = "text/xml; charset=utf-8",
 *                                  .body = xml, .body_len = strlen(xml)};
 *     if (gc_https_new(&h, &o, &err) < 0) ...
 *     if (gc_https_request(h, &q, &r, &err) < 0) ...
 *     ... r.status, r.body ...
 *     gc_https_response_free(&r);
 *     gc_https_free(h);
 *
 * Errors (messages name the target by opts.name and URL origin, never a
 * password, cookie, session id or body):
 *   GC_ENET      transport failure: refused, reset, TLS handshake, bad reply.
 *                Safe to retry; for a request marked `once` only after
 *                finding out whether it took.
 *   GC_ETIMEOUT  the connect or request deadline passed.  Safe to retry.
 *   GC_EAUTH     the server answered 401.
 *   GC_EHOSTKEY  the server's certificate is not trusted (unknown CA,
 *                self-signed, expired, wrong name): never retried.
 *   GC_ENOMEM    the response was larger than max_response.
 *   GC_EINVAL    bad options (not https://, unreadable ca_file).
 * Every other HTTP status is returned to the caller (SOAP faults come as 500
 * with a body to read).  err->libcode holds the CURLcode of a transport
 * failure, or the HTTP status of a 401.
 *
 * Threads: libcurl is initialised once.  One handle is used by one thread at
 * a time; different handles may be used in parallel threads.
 */
#ifndef GC_HTTPS_H
#define GC_HTTPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/error.h"

/* Default cap of one response body. */
#define GC_HTTPS_RESPONSE_MAX ((size_t)64 << 20)

struct gc_https_opts {
	const char *url;      /* "https://host[:port]"; any path in it is ignored */
	const char *name;     /* for messages, e.g. "vCenter 'vc01'"; NULL: "https" */
	const char *ca_file;  /* PEM bundle; NULL: the system store */
	bool insecure;        /* no certificate or name check at all */
	unsigned connect_timeout_ms; /* TCP + TLS handshake; 0: 10 s */
	unsigned timeout_ms;         /* one whole request; 0: 120 s */
	size_t max_response;         /* 0: GC_HTTPS_RESPONSE_MAX */
};

struct gc_https;

struct gc_https_request {
	const char *method;       /* "GET", "POST", "DELETE" */
	const char *path;         /* "/sdk", "/api/session"; may hold a query */
	const char *content_type; /* NULL: no body type */
	const char *body;         /* NULL: empty */
	size_t body_len;
	/* Extra "Name: value" header lines, NULL-terminated; may carry a
	 * session id (never logged, never in errors). */
	const char *const *headers;
	/* HTTP Basic credentials, both or neither (REST session login). */
	const char *username;
	const char *password;
	/*
	 * The request changes the server: send it at most once.  libcurl
	 * sends a request again by itself, on a new connection, when the
	 * kept-alive one dies before the reply, even a POST that was sent
	 * whole and carried out.  A request marked `once` fails instead
	 * (GC_ENET, "may have been carried out"), and the caller observes
	 * before it decides to send it again.
	 */
	bool once;
};

/* The answer to one request.  body is NUL-terminated and never NULL after a
 * successful gc_https_request(). */
struct gc_https_response {
	long status;
	char *body;
	size_t body_len;
	char content_type[128]; /* "" when the server sent none */
};

int gc_https_new(struct gc_https **out, const struct gc_https_opts *opts, struct gc_error *err);
/* Closes the connection.  Accepts NULL. */
void gc_https_free(struct gc_https *h);
/* "vCenter 'vc01' (https://host:port)", for messages.  Borrowed. */
const char *gc_https_target(const struct gc_https *h);

/*
 * Send one request and read the whole answer.  Returns 0 for any HTTP status
 * but 401 (GC_EAUTH); on success *resp is filled and owned by the caller, on
 * failure it is untouched.
 */
int gc_https_request(struct gc_https *h, const struct gc_https_request *req,
		     struct gc_https_response *resp, struct gc_error *err);
void gc_https_response_free(struct gc_https_response *resp);

/* The value of cookie `name` in the handle's jar, copied into out (NUL-
 * terminated).  Returns 0, GC_ENOTFOUND, or GC_ENOMEM when it does not fit.
 * For the session layer (logout, tests); a secret: never log it. */
int gc_https_cookie(struct gc_https *h, const char *name, char *out, size_t n);
/* Forget every cookie (after logout). */
void gc_https_clear_cookies(struct gc_https *h);

/* ---------------------------------------------------------------- counters */

/* Totals, per handle and process-wide, for tests and benchmarks. */
struct gc_https_stats {
	uint64_t requests;    /* requests started */
	uint64_t responses;   /* HTTP responses received (any status) */
	uint64_t connections; /* new TCP connections (keep-alive keeps this at 1) */
	uint64_t bytes_sent;  /* request bodies */
	uint64_t bytes_received; /* response bodies */
};
void gc_https_stats(const struct gc_https *h, struct gc_https_stats *out);
void gc_https_stats_global(struct gc_https_stats *out);
void gc_https_stats_reset_global(void);

#endif
