/*
 * test_https.c - the HTTPS transport (src/net/https.c) against real servers
 * on loopback: a private vcsim with a test CA (port 8991), an `openssl
 * s_server -www` with a self-signed certificate (8993), a socket that never
 * answers (8994) and a closed port (8995).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "gc/https.h"

#define PORT_VCSIM 8991
#define PORT_SELFSIGNED 8993
#define PORT_SILENT 8994
#define PORT_CLOSED 8995

static struct vcsim sim;
static char ss_dir[600], ss_cert[700];
static pid_t ss_pid = -1;
static int silent_fd = -1;

static bool port_open(unsigned port)
{
	struct sockaddr_in a = {0};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok;

	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* openssl s_server -www with a self-signed certificate for 127.0.0.1. */
static int start_selfsigned(void)
{
	char key[700];

	snprintf(ss_dir, sizeof(ss_dir), "%s/test-https-selfsigned", GC_BINARY_DIR);
	snprintf(ss_cert, sizeof(ss_cert), "%s/cert.pem", ss_dir);
	snprintf(key, sizeof(key), "%s/key.pem", ss_dir);
	if (sh("mkdir -p '%s' && openssl req -x509 -newkey rsa:2048 -nodes -days 2 "
	       "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout '%s' -out '%s' "
	       ">'%s/openssl.log' 2>&1",
	       ss_dir, key, ss_cert, ss_dir) != 0)
		return -1;
	ss_pid = fork();
	if (ss_pid == 0) {
		char accept[32];

		snprintf(accept, sizeof(accept), "127.0.0.1:%d", PORT_SELFSIGNED);
		if (freopen("/dev/null", "w", stdout) == NULL || freopen("/dev/null", "r", stdin) == NULL)
			_exit(127);
		execlp("openssl", "openssl", "s_server", "-accept", accept, "-cert", ss_cert, "-key",
		       key, "-www", "-quiet", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		if (port_open(PORT_SELFSIGNED))
			return 0;
		usleep(50000);
	}
	return -1;
}

/* A socket that accepts TCP connections in the kernel and never answers. */
static int start_silent(void)
{
	struct sockaddr_in a = {0};
	int one = 1;

	silent_fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(silent_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_family = AF_INET;
	a.sin_port = htons(PORT_SILENT);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(silent_fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(silent_fd, 8) != 0)
		return -1;
	return 0;
}

static int group_setup(void **state)
{
	if (vcsim_setup(&sim, "test_https", PORT_VCSIM, "") != 0)
		return -1;
	if (start_selfsigned() != 0 || start_silent() != 0) {
		fprintf(stderr, "test_https: local servers did not start\n");
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	vcsim_stop(&sim);
	if (ss_pid > 0) {
		kill(ss_pid, SIGTERM);
		waitpid(ss_pid, NULL, 0);
	}
	if (silent_fd >= 0)
		close(silent_fd);
	return 0;
}

static struct gc_https *open_handle(const char *url, const char *ca_file, bool insecure)
{
	struct gc_https_opts o = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https *h = NULL;

	o.url = url;
	o.ca_file = ca_file;
	o.insecure = insecure;
	o.connect_timeout_ms = 5000;
	o.timeout_ms = 10000;
	assert_int_equal(gc_https_new(&h, &o, &err), 0);
	return h;
}

static int get(struct gc_https *h, const char *path, struct gc_https_response *r,
	       struct gc_error *err)
{
	struct gc_https_request q = {.method = "GET", .path = path};

	return gc_https_request(h, &q, r, err);
}

static void test_verified_with_ca_file(void **state)
{
	struct gc_https *h = open_handle(sim.url, sim.ca_file, false);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_response r;

	assert_int_equal(get(h, "/about", &r, &err), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "application/json");
	assert_int_equal(r.body[0], '{');
	assert_int_equal(r.body_len, strlen(r.body));
	gc_https_response_free(&r);
	assert_string_equal(gc_https_target(h), "https (https://127.0.0.1:8991)");
	gc_https_free(h);
}

static void test_private_ca_refused_without_ca_file(void **state)
{
	struct gc_https *h = open_handle(sim.url, NULL, false);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_response r;

	assert_int_equal(get(h, "/about", &r, &err), GC_EHOSTKEY);
	assert_int_equal(err.code, GC_EHOSTKEY);
	assert_int_equal(err.libcode, 60); /* CURLE_PEER_FAILED_VERIFICATION */
	assert_string_equal(err.msg, "https (https://127.0.0.1:8991): certificate not trusted: "
				     "SSL certificate problem: unable to get local issuer certificate");
	gc_https_free(h);
}

static void test_self_signed_refused_without_ca_file(void **state)
{
	char url[64];
	struct gc_https *h;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_response r;

	snprintf(url, sizeof(url), "https://127.0.0.1:%d", PORT_SELFSIGNED);
	h = open_handle(url, NULL, false);
	assert_int_equal(get(h, "/", &r, &err), GC_EHOSTKEY);
	assert_string_equal(err.msg, "https (https://127.0.0.1:8993): certificate not trusted: "
				     "SSL certificate problem: self-signed certificate");
	gc_https_free(h);
	/* The same certificate named as ca_file is trusted. */
	h = open_handle(url, ss_cert, false);
	gc_error_clear(&err);
	assert_int_equal(get(h, "/", &r, &err), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "text/html");
	gc_https_response_free(&r);
	gc_https_free(h);
}

static void test_wrong_ca_file_refused(void **state)
{
	struct gc_https *h = open_handle(sim.url, ss_cert, false);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_response r;

	assert_int_equal(get(h, "/about", &r, &err), GC_EHOSTKEY);
	assert_string_equal(err.msg, "https (https://127.0.0.1:8991): certificate not trusted: "
				     "SSL certificate problem: unable to get local issuer certificate");
	gc_https_free(h);
}

static void test_insecure_only_when_asked(void **state)
{
	struct gc_https *h = open_handle(sim.url, NULL, true);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_response r;

	assert_int_equal(get(h, "/about", &r, &err), 0);
	assert_int_equal(r.status, 200);
	gc_https_response_free(&r);
	gc_https_free(h);
}

static void test_keepalive_and_counters(void **state)
{
	struct gc_https *h = open_handle(sim.url, sim.ca_file, false);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_response r;
	struct gc_https_stats st, g0, g1;
	size_t body = 0;

	gc_https_stats_global(&g0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(get(h, "/about", &r, &err), 0);
		body += r.body_len;
		gc_https_response_free(&r);
	}
	gc_https_stats(h, &st);
	assert_int_equal(st.requests, 5);
	assert_int_equal(st.responses, 5);
	assert_int_equal(st.connections, 1);
	assert_int_equal(st.bytes_sent, 0);
	assert_int_equal(st.bytes_received, body);
	gc_https_stats_global(&g1);
	assert_int_equal(g1.requests - g0.requests, 5);
	assert_int_equal(g1.connections - g0.connections, 1);
	gc_https_free(h);
}


static int service_content(struct gc_https *h, bool once, struct gc_https_response *r,
			struct gc_error *err)
{
	static const char body[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?><soapenv:Envelope "
		"xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body>"
		"<RetrieveServiceContent xmlns=\"urn:vim25\"><_this type=\"ServiceInstance\">ServiceInstance"
		"</_this></RetrieveServiceContent></soapenv:Body></soapenv:Envelope>";
	struct gc_https_request q = {.method = "POST", .path = "/sdk",
				     .content_type = "text/xml; charset=utf-8", .body = body,
				     .body_len = sizeof(body) - 1, .once = once};

	return gc_https_request(h, &q, r, err);
}

/*
 * vCenter carries a request out and the kept-alive connection dies before
 * the reply: libcurl sends an ordinary request again by itself on a new
 * connection; a `once` request fails instead, saying it may have been done.
 */
static void test_once_is_never_sent_again_by_libcurl(void **state)
{
	struct gc_https *h = open_handle(sim.url, sim.ca_file, false);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_response r;
	struct gc_https_stats st;
	char want[256];

	(void)state;
	assert_int_equal(get(h, "/about", &r, &err), 0); /* a connection to reuse */
	gc_https_response_free(&r);
	vcsim_faults(&sim, "{\"RetrieveServiceContent\": {\"*\": {\"drop\": \"after\", \"times\": 1}}}");
	assert_int_equal(service_content(h, false, &r, &err), 0); /* sent twice */
	assert_int_equal(r.status, 200);
	gc_https_response_free(&r);
	gc_https_stats(h, &st);
	assert_int_equal(st.connections, 2);

	vcsim_faults(&sim, "{\"RetrieveServiceContent\": "
			   "{\"*\": {\"drop\": \"after\", \"times\": 1, \"match\": \"\"}}}");
	assert_int_equal(service_content(h, true, &r, &err), GC_ENET);
	snprintf(want, sizeof(want),
		 "https (%s): POST /sdk: the connection closed before the reply; the request may "
		 "have been carried out and was not sent again",
		 sim.url);
	assert_string_equal(err.msg, want);
	assert_int_equal(err.libcode, 65); /* CURLE_SEND_FAIL_REWIND */
	gc_https_stats(h, &st);
	/* libcurl connects again, then cannot rewind the body: nothing is sent
	 * on the new connection (the integration tests see no device twice) */
	assert_int_equal(st.connections, 3);
	gc_error_clear(&err);
	/* the handle goes on: the next request connects again and is answered */
	assert_int_equal(service_content(h, true, &r, &err), 0);
	assert_int_equal(r.status, 200);
	gc_https_response_free(&r);
	vcsim_faults(&sim, NULL);
	gc_https_free(h);
}

static void test_response_cap(void **state)
{
	struct gc_https_opts o = {.url = sim.url, .ca_file = sim.ca_file, .max_response = 100};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https *h = NULL;
	struct gc_https_response r;

	struct gc_https_request q = {.method = "POST", .path = "/sdk", .body = "x",
				     .body_len = 1, .content_type = "text/xml"};

	assert_int_equal(gc_https_new(&h, &o, &err), 0);
	/* streamed (chunked): stopped when the cap is crossed */
	assert_int_equal(get(h, "/about", &r, &err), GC_ENOMEM);
	assert_string_equal(err.msg, "https (https://127.0.0.1:8991): GET /about: "
				     "response larger than 100 bytes");
	/* announced (a 538-byte SOAP fault with Content-Length): refused up front */
	gc_error_clear(&err);
	assert_int_equal(gc_https_request(h, &q, &r, &err), GC_ENOMEM);
	assert_int_equal(err.libcode, 63); /* CURLE_FILESIZE_EXCEEDED */
	assert_string_equal(err.msg, "https (https://127.0.0.1:8991): POST /sdk: "
				     "response larger than 100 bytes");
	gc_https_free(h);
}

static void test_timeout(void **state)
{
	struct gc_https_opts o = {.url = "https://127.0.0.1:8994", .name = "vCenter 'slow'",
				  .connect_timeout_ms = 300, .timeout_ms = 300};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https *h = NULL;
	struct gc_https_response r;
	const char *want = "vCenter 'slow' (https://127.0.0.1:8994): GET /: ";

	assert_int_equal(gc_https_new(&h, &o, &err), 0);
	assert_int_equal(get(h, "/", &r, &err), GC_ETIMEOUT);
	assert_int_equal(err.libcode, 28); /* CURLE_OPERATION_TIMEDOUT */
	assert_memory_equal(err.msg, want, strlen(want));
	gc_https_free(h);
}

static void test_connection_refused(void **state)
{
	struct gc_https *h = open_handle("https://127.0.0.1:8995", NULL, false);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_response r;
	const char *want = "https (https://127.0.0.1:8995): GET /about: Failed to connect to "
			   "127.0.0.1 port 8995 after ";

	assert_int_equal(get(h, "/about", &r, &err), GC_ENET);
	assert_int_equal(err.libcode, 7); /* CURLE_COULDNT_CONNECT */
	assert_memory_equal(err.msg, want, strlen(want));
	gc_https_free(h);
}

static void test_401_is_eauth_and_secrets_stay_out(void **state)
{
	struct gc_https *h = open_handle(sim.url, sim.ca_file, false);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_response r;
	struct gc_https_request q = {.method = "POST", .path = "/rest/com/vmware/cis/session",
				     .username = "gcadmin", .password = sim.password};
	const char *hdr[] = {"vmware-api-session-id: not-a-session-42", NULL};

	/* A REST session (vcsim's /rest checks only that both are non-empty). */
	assert_int_equal(gc_https_request(h, &q, &r, &err), 0);
	assert_int_equal(r.status, 200);
	assert_memory_equal(r.body, "{\"value\":\"", 10);
	gc_https_response_free(&r);
	/* No credentials the next time: they must not stick to the handle. */
	q.username = q.password = NULL;
	q.headers = hdr;
	q.method = "GET";
	assert_int_equal(gc_https_request(h, &q, &r, &err), GC_EAUTH);
	assert_int_equal(err.libcode, 401);
	assert_string_equal(err.msg, "https (https://127.0.0.1:8991): GET "
				     "/rest/com/vmware/cis/session: 401 Unauthorized");
	assert_null(strstr(err.msg, sim.password));
	assert_null(strstr(err.msg, "not-a-session-42"));
	gc_https_free(h);
}

static void test_bad_options(void **state)
{
	struct gc_https_opts o = {.url = "http://127.0.0.1:8991", .name = "vCenter"};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https *h = NULL;

	assert_int_equal(gc_https_new(&h, &o, &err), GC_EINVAL);
	assert_string_equal(err.msg, "vCenter: URL 'http://127.0.0.1:8991' is not https://");
	assert_null(h);
	gc_error_clear(&err);
	o.url = "https://127.0.0.1:8991";
	o.ca_file = "/nonexistent/ca.pem";
	assert_int_equal(gc_https_new(&h, &o, &err), GC_EINVAL);
	assert_string_equal(err.msg, "vCenter (https://127.0.0.1:8991): cannot read ca_file "
				     "'/nonexistent/ca.pem': No such file or directory");
	gc_error_clear(&err);
	o.url = "not a url";
	o.ca_file = NULL;
	assert_int_equal(gc_https_new(&h, &o, &err), GC_EINVAL);
	assert_string_equal(err.msg, "vCenter: bad URL 'not a url'");
	gc_https_free(NULL);
}

static void test_cookie_jar(void **state)
{
	struct gc_https *h = open_handle(sim.url, sim.ca_file, false);
	struct gc_error err = GC_ERROR_INIT;
	struct gc_https_response r;
	struct gc_https_request q = {.method = "POST", .path = "/rest/com/vmware/cis/session",
				     .username = "gcadmin", .password = sim.password};
	char v[128], small[4];

	assert_int_equal(gc_https_cookie(h, "vmware-api-session-id", v, sizeof(v)), GC_ENOTFOUND);
	assert_int_equal(gc_https_request(h, &q, &r, &err), 0);
	gc_https_response_free(&r);
	assert_int_equal(gc_https_cookie(h, "vmware-api-session-id", v, sizeof(v)), 0);
	assert_int_equal(strlen(v), 36); /* a UUID */
	assert_int_equal(gc_https_cookie(h, "vmware-api-session-id", small, sizeof(small)),
			 GC_ENOMEM);
	/* The jar sends it back: an authenticated GET of the session works. */
	q.method = "GET";
	q.username = q.password = NULL;
	assert_int_equal(gc_https_request(h, &q, &r, &err), 0);
	assert_int_equal(r.status, 200);
	gc_https_response_free(&r);
	gc_https_clear_cookies(h);
	assert_int_equal(gc_https_cookie(h, "vmware-api-session-id", v, sizeof(v)), GC_ENOTFOUND);
	assert_int_equal(gc_https_request(h, &q, &r, &err), GC_EAUTH);
	gc_https_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verified_with_ca_file),
		cmocka_unit_test(test_private_ca_refused_without_ca_file),
		cmocka_unit_test(test_self_signed_refused_without_ca_file),
		cmocka_unit_test(test_wrong_ca_file_refused),
		cmocka_unit_test(test_insecure_only_when_asked),
		cmocka_unit_test(test_keepalive_and_counters),
		cmocka_unit_test(test_response_cap),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_connection_refused),
		cmocka_unit_test(test_401_is_eauth_and_secrets_stay_out),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_cookie_jar),
		cmocka_unit_test(test_once_is_never_sent_again_by_libcurl),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
