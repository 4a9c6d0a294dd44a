/*
 * session.c - a SOAP session with one vCenter: connect, Login, Logout.
 *
 * Connecting opens the HTTPS handle (TLS verified unless the spec says
 * insecure), asks RetrieveServiceContent for the managed object ids we need
 * (session manager, property collector, root folder) and the API version,
 * then logs in.  vCenter answers Login with the `vmware_soap_session`
 * cookie; libcurl's in-memory jar keeps it and sends it on every later call,
 * so no session id ever passes through our strings.
 *
 * The password is read at connect time from the environment variable or the
 * file the spec names, into one stack buffer, escaped into a body buffer
 * that is allocated once; both are zeroed right after the call.
 *
 * The first SOAPAction names urn:vim25/6.5, a version every supported
 * vCenter accepts; later calls name the server's own about.apiVersion.
 *
 * Connecting also initialises libxml2 (xmlInitParser) and the connection's
 * mutex, so that threads may share the connection afterwards (soap.c).
 */
#include <libxml/parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/spec.h"
#include "soap.h"

#define BOOTSTRAP_API_VERSION "6.5"

void gc_vcenter_opts_from_spec(struct gc_vcenter_opts *out, const struct gc_vcenter *vc,
			       const struct gc_credential *cred)
{
	memset(out, 0, sizeof(*out));
	out->url = vc->url;
	out->ca_file = vc->ca_file;
	out->insecure = vc->insecure;
	if (cred != NULL) {
		out->username = cred->username;
		out->password_env = cred->password_env;
		out->password_file = cred->password_file;
	}
}

int gc_vcenter_read_password(char *out, const struct gc_vcenter_opts *o, const char *target,
			     struct gc_error *err)
{
	char *file = NULL;
	size_t len = 0;
	int rc = 0;

	if (o->password_env != NULL) {
		const char *v = getenv(o->password_env);

		if (v == NULL)
			return gc_error_set(err, GC_EINVAL,
					    "%s: password environment variable '%s' is not set",
					    target, o->password_env);
		len = strlen(v);
		if (len >= GC_VCENTER_SECRET_MAX)
			return gc_error_set(err, GC_EINVAL, "%s: password in '%s' is too long",
					    target, o->password_env);
		memcpy(out, v, len + 1);
		return 0;
	}
	if (o->password_file == NULL)
		return gc_error_set(err, GC_EINVAL, "%s: no password_env or password_file", target);
	if (gc_read_file(&file, &len, o->password_file, GC_VCENTER_SECRET_MAX, err) < 0) {
		gc_error_prefix(err, "%s: password file: ", target);
		return err ? err->code : GC_EIO;
	}
	if (len > 0 && file[len - 1] == '\n')
		file[--len] = '\0';
	if (len >= GC_VCENTER_SECRET_MAX)
		rc = gc_error_set(err, GC_EINVAL, "%s: password in '%s' is too long", target,
				  o->password_file);
	else
		memcpy(out, file, len + 1);
	memset(file, 0, len);
	free(file);
	return rc;
}

static bool api_version_ok(const char *v)
{
	if (v[0] == '\0')
		return false;
	for (const char *p = v; *p; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '.'))
			return false;
	return true;
}

static int service_content(struct gc_vcenter_conn *vc, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret, sc, about;
	int rc;

	gc_vcenter_soap_begin(&s, "RetrieveServiceContent", "ServiceInstance", "ServiceInstance");
	rc = gc_vcenter_soap_end(&s, vc, err);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, &s, &doc, &ret, err);
	gc_vcenter_soap_free(&s);
	if (rc < 0)
		return rc;
	sc = gc_vcenter_xml_child(ret, "returnval");
	about = gc_vcenter_xml_child(sc, "about");
	gc_vcenter_xml_copy(vc->session_manager, sizeof(vc->session_manager), sc, "sessionManager");
	gc_vcenter_xml_copy(vc->property_collector, sizeof(vc->property_collector), sc,
			    "propertyCollector");
	gc_vcenter_xml_copy(vc->root_folder, sizeof(vc->root_folder), sc, "rootFolder");
	gc_vcenter_xml_copy(vc->setting, sizeof(vc->setting), sc, "setting");
	gc_vcenter_xml_copy(vc->custom_fields, sizeof(vc->custom_fields), sc, "customFieldsManager");
	gc_vcenter_xml_copy(vc->api_version, sizeof(vc->api_version), about, "apiVersion");
	gc_vcenter_xml_copy(vc->full_name, sizeof(vc->full_name), about, "fullName");
	xmlFreeDoc(doc);
	if (!vc->session_manager[0] || !vc->property_collector[0] || !vc->root_folder[0] ||
	    !api_version_ok(vc->api_version))
		return gc_error_set(err, GC_EINVAL,
				    "%s: RetrieveServiceContent: reply lacks the session manager, "
				    "property collector, root folder or a valid API version",
				    vc->target);
	return 0;
}

static int login(struct gc_vcenter_conn *vc, const struct gc_vcenter_opts *o,
		 struct gc_error *err)
{
	struct gc_error lerr = GC_ERROR_INIT;
	struct gc_vcenter_soap s;
	char secret[GC_VCENTER_SECRET_MAX];
	char cookie[8];
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	int rc;

	rc = gc_vcenter_read_password(secret, o, vc->target, err);
	if (rc < 0)
		return rc;
	gc_vcenter_soap_begin(&s, "Login", "SessionManager", vc->session_manager);
	gc_vcenter_soap_elem(&s, "userName", o->username);
	gc_vcenter_soap_elem(&s, "password", secret);
	memset(secret, 0, sizeof(secret));
	rc = gc_vcenter_soap_end(&s, vc, &lerr);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, &s, &doc, &ret, &lerr);
	gc_vcenter_soap_free(&s);
	xmlFreeDoc(doc);
	if (rc == GC_EAUTH && vc->last_fault[0])
		return gc_error_set(err, GC_EAUTH, "%s: login as '%s' refused: %s", vc->target,
				    o->username, vc->last_fault);
	if (rc < 0) {
		rc = gc_error_set(err, lerr.code, "%s", lerr.msg);
		if (err != NULL && err->libcode == 0)
			err->libcode = lerr.libcode;
		return rc;
	}
	/* The jar holds the session; only its presence is checked here. */
	if (gc_https_cookie(vc->https, "vmware_soap_session", cookie, sizeof(cookie)) ==
	    GC_ENOTFOUND)
		return gc_error_set(err, GC_EREMOTE, "%s: Login set no vmware_soap_session cookie",
				    vc->target);
	memset(cookie, 0, sizeof(cookie));
	vc->logged_in = true;
	return 0;
}

int gc_vcenter_connect(struct gc_vcenter_conn **out, const struct gc_vcenter_opts *o,
		       struct gc_error *err)
{
	struct gc_vcenter_conn *vc;
	struct gc_https_opts ho = {0};
	int rc;

	if (o->username == NULL || o->username[0] == '\0')
		return gc_error_set(err, GC_EINVAL, "%s (%s): no username",
				    o->name ? o->name : "vCenter", o->url ? o->url : "no URL");
	/* Before any thread may parse a reply: libxml2 wants this once. */
	xmlInitParser();
	vc = gc_xcalloc(1, sizeof(*vc));
	if (pthread_mutex_init(&vc->lock, NULL) != 0)
		abort(); /* default attributes: only out of memory, which aborts anyway */
	ho.url = o->url;
	ho.name = o->name ? o->name : "vCenter";
	ho.ca_file = o->ca_file;
	ho.insecure = o->insecure;
	ho.connect_timeout_ms = o->connect_timeout_ms;
	ho.timeout_ms = o->timeout_ms;
	ho.max_response = o->max_response;
	rc = gc_https_new(&vc->https, &ho, err);
	if (rc < 0)
		goto fail;
	snprintf(vc->target, sizeof(vc->target), "%s", gc_https_target(vc->https));
	snprintf(vc->api_version, sizeof(vc->api_version), "%s", BOOTSTRAP_API_VERSION);
	rc = service_content(vc, err);
	if (rc == 0)
		rc = login(vc, o, err);
	if (rc < 0)
		goto fail;
	*out = vc;
	return 0;
fail:
	gc_vcenter_free(vc);
	return rc;
}

int gc_vcenter_logout(struct gc_vcenter_conn *vc, struct gc_error *err)
{
	struct gc_vcenter_soap s;
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	bool in;
	int rc;

	gc_vcenter_lock(vc);
	in = vc->logged_in;
	gc_vcenter_unlock(vc);
	if (!in)
		return 0;
	gc_vcenter_soap_begin(&s, "Logout", "SessionManager", vc->session_manager);
	rc = gc_vcenter_soap_end(&s, vc, err);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, &s, &doc, &ret, err);
	gc_vcenter_soap_free(&s);
	xmlFreeDoc(doc);
	/* Whatever the answer, this session is over for us. */
	gc_vcenter_lock(vc);
	vc->logged_in = false;
	gc_https_clear_cookies(vc->https);
	gc_vcenter_unlock(vc);
	return rc;
}

void gc_vcenter_free(struct gc_vcenter_conn *vc)
{
	if (vc == NULL)
		return;
	if (vc->https != NULL) {
		gc_vcenter_rest_logout(vc, NULL);
		gc_vcenter_logout(vc, NULL);
	}
	gc_https_free(vc->https);
	pthread_mutex_destroy(&vc->lock);
	free(vc);
}

const char *gc_vcenter_target(const struct gc_vcenter_conn *vc)
{
	return vc->target;
}

const char *gc_vcenter_api_version(const struct gc_vcenter_conn *vc)
{
	return vc->api_version;
}

const char *gc_vcenter_full_name(const struct gc_vcenter_conn *vc)
{
	return vc->full_name;
}

uint64_t gc_vcenter_calls(const struct gc_vcenter_conn *vc, const char *method)
{
	uint64_t n = 0;

	gc_vcenter_lock(vc);
	for (size_t i = 0; i < GC_VCENTER_METHODS_MAX && vc->calls[i].method[0]; i++)
		if (strcmp(vc->calls[i].method, method) == 0)
			n = vc->calls[i].n;
	gc_vcenter_unlock(vc);
	return n;
}

void gc_vcenter_https_stats(const struct gc_vcenter_conn *vc, struct gc_https_stats *out)
{
	gc_vcenter_lock(vc);
	gc_https_stats(vc->https, out);
	gc_vcenter_unlock(vc);
}
