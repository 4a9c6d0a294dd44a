/*
 * rest.c - the REST (vSphere Automation) session beside the SOAP one.
 *
 * Login is POST /api/session with HTTP Basic credentials (vSphere 7.0U2+:
 * 201 and a JSON string, the token).  A server without /api answers 404, and
 * we fall back to the older POST /rest/com/vmware/cis/session
 * ({"value": "<token>"}).  Later requests carry the token in the
 * `vmware-api-session-id` header; logout is DELETE on the same session path.
 *
 * Every exchange holds the connection's mutex (soap.c): the REST calls share
 * the one libcurl handle with the SOAP ones.
 *
 * JSON is read with json-c.  The token is a secret: it is checked to be a
 * plain printable word (it goes into a header line), kept in the connection
 * only, zeroed at logout, and never put into an error.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soap.h"

#define API_SESSION "/api/session"
#define REST_SESSION "/rest/com/vmware/cis/session"

static const char *session_path(const struct gc_vcenter_conn *vc)
{
	return strcmp(vc->rest_base, "/api") == 0 ? API_SESSION : REST_SESSION;
}

/* The token: from a JSON string (/api) or {"value": string} (/rest). */
static int read_token(struct gc_vcenter_conn *vc, const char *body, bool wrapped,
		      struct gc_error *err)
{
	json_object *root = json_tokener_parse(body);
	json_object *v = root;
	const char *t = NULL;
	int rc = 0;

	if (wrapped && root != NULL && !json_object_object_get_ex(root, "value", &v))
		v = NULL;
	if (v != NULL && json_object_is_type(v, json_type_string))
		t = json_object_get_string(v);
	if (t == NULL || t[0] == '\0' || strlen(t) >= sizeof(vc->rest_token) ||
	    strspn(t, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_.:+/=") !=
		    strlen(t))
		rc = gc_error_set(err, GC_EREMOTE, "%s: REST login: no usable session token in the "
				  "reply", vc->target);
	else {
		gc_vcenter_lock(vc);
		snprintf(vc->rest_token, sizeof(vc->rest_token), "%s", t);
		gc_vcenter_unlock(vc);
	}
	json_object_put(root); /* frees t's storage too */
	return rc;
}

static int post_session(struct gc_vcenter_conn *vc, const char *path, const char *user,
			const char *password, struct gc_https_response *r, struct gc_error *err)
{
	struct gc_https_request q = {0};
	int rc;

	q.method = "POST";
	q.path = path;
	q.username = user;
	q.password = password;
	gc_vcenter_lock(vc);
	rc = gc_https_request(vc->https, &q, r, err);
	gc_vcenter_unlock(vc);
	return rc;
}

int gc_vcenter_rest_login(struct gc_vcenter_conn *vc, const struct gc_vcenter_opts *o,
			  struct gc_error *err)
{
	struct gc_error lerr = GC_ERROR_INIT;
	struct gc_https_response r = {0};
	char secret[GC_VCENTER_SECRET_MAX];
	bool wrapped = false;
	int rc;

	rc = gc_vcenter_read_password(secret, o, vc->target, err);
	if (rc < 0)
		return rc;
	rc = post_session(vc, API_SESSION, o->username, secret, &r, &lerr);
	if (rc == 0 && r.status == 404) {
		gc_https_response_free(&r);
		wrapped = true;
		rc = post_session(vc, REST_SESSION, o->username, secret, &r, &lerr);
	}
	memset(secret, 0, sizeof(secret));
	if (rc == GC_EAUTH)
		return gc_error_set(err, GC_EAUTH, "%s: REST login as '%s' refused (401 on %s)",
				    vc->target, o->username, wrapped ? REST_SESSION : API_SESSION);
	if (rc < 0)
		return gc_error_set(err, lerr.code, "%s", lerr.msg);
	if (r.status != 200 && r.status != 201)
		rc = gc_error_set(err, GC_EREMOTE, "%s: REST login: HTTP %ld on %s", vc->target,
				  r.status, wrapped ? REST_SESSION : API_SESSION);
	else
		rc = read_token(vc, r.body, wrapped, err);
	if (rc == 0) {
		gc_vcenter_lock(vc);
		snprintf(vc->rest_base, sizeof(vc->rest_base), "%s", wrapped ? "/rest" : "/api");
		gc_vcenter_unlock(vc);
	}
	gc_https_response_free(&r);
	return rc;
}

int gc_vcenter_rest(struct gc_vcenter_conn *vc, const char *method, const char *path,
		    struct gc_https_response *resp, struct gc_error *err)
{
	struct gc_https_request q = {0};
	char header[sizeof(vc->rest_token) + 32];
	const char *headers[2] = {header, NULL};
	int rc;

	gc_vcenter_lock(vc);
	if (vc->rest_token[0] == '\0') {
		gc_vcenter_unlock(vc);
		return gc_error_set(err, GC_EAUTH, "%s: %s %s: no REST session", vc->target, method,
				    path);
	}
	snprintf(header, sizeof(header), "vmware-api-session-id: %s", vc->rest_token);
	q.method = method;
	q.path = path;
	q.headers = headers;
	rc = gc_https_request(vc->https, &q, resp, err);
	gc_vcenter_unlock(vc);
	memset(header, 0, sizeof(header));
	return rc;
}

int gc_vcenter_rest_logout(struct gc_vcenter_conn *vc, struct gc_error *err)
{
	struct gc_https_response r;
	char path[64];
	int rc;

	gc_vcenter_lock(vc);
	snprintf(path, sizeof(path), "%s", vc->rest_token[0] ? session_path(vc) : "");
	gc_vcenter_unlock(vc);
	if (path[0] == '\0')
		return 0;
	rc = gc_vcenter_rest(vc, "DELETE", path, &r, err);
	gc_vcenter_lock(vc);
	memset(vc->rest_token, 0, sizeof(vc->rest_token));
	vc->rest_base[0] = '\0';
	gc_vcenter_unlock(vc);
	if (rc < 0)
		return rc;
	if (r.status != 200 && r.status != 204)
		rc = gc_error_set(err, GC_EREMOTE, "%s: REST logout: HTTP %ld", vc->target,
				  r.status);
	gc_https_response_free(&r);
	return rc;
}

/* "/api" and "/rest" are literals, so the answer outlives the lock. */
const char *gc_vcenter_rest_flavour(const struct gc_vcenter_conn *vc)
{
	const char *f = NULL;

	gc_vcenter_lock(vc);
	if (strcmp(vc->rest_base, "/api") == 0)
		f = "/api";
	else if (strcmp(vc->rest_base, "/rest") == 0)
		f = "/rest";
	gc_vcenter_unlock(vc);
	return f;
}
