/*
 * soap.c - SOAP over the vCenter's HTTPS handle: bodies out, libxml2 trees in.
 *
 * Bodies are written as strictly escaped text in the shape govmomi and
 * pyvmomi send (REAL-FORMATS D.3): the method element carries the default
 * namespace urn:vim25, its children are unprefixed, subclasses are marked
 * with xsi:type.  XML Schema types use the prefix `xsd` (xsd:string), as
 * govmomi and pyvmomi write them: vCenter resolves any prefix by namespace,
 * but govmomi 0.24's decoder (vcsim) matches "xsd:" literally and drops a
 * value typed "xs:string".  The caller writes children in XSD order; this
 * file only escapes, nests and closes.
 *
 * Replies are parsed with libxml2 (no network, no entity loading) as
 * UTF-8, whatever encoding they declare: vCenter sends UTF-8, and a reply
 * in another declared encoding with a byte that encoding cannot convert
 * made libxml2 print to stderr (found by fuzz_vcenter_observe).  They are
 * navigated by local element name.  A SOAP fault is turned into a gc_error
 * here, with vCenter's own faultstring and the fault type (the xsi:type of
 * the element under <detail>, e.g. InvalidLogin).  The body we sent never
 * goes into an error: it may hold a password.
 *
 * Threads: the connection's mutex is held for the HTTP exchange only (and
 * for the call counters and last_fault), so a task poll of one thread
 * waits for at most one other call, never for another thread's task.
 */
#include <assert.h>
#include <errno.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soap.h"

#define XSI_NS "http://www.w3.org/2001/XMLSchema-instance"
#define BODY_RESERVE 16384 /* > envelope + a 1 KiB password escaped 6-fold */

static const char envelope_open[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\""
	" xmlns:xsi=\"" XSI_NS "\" xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\">"
	"<soapenv:Body>";

/* Text and attribute values: markup characters as entities, whitespace
 * controls as character references (so no parser normalises them), other
 * controls refused (XML 1.0 cannot carry them). */
static void put_escaped(struct gc_vcenter_soap *s, const char *text)
{
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		switch (*p) {
		case '&': gc_buf_puts(&s->b, "&amp;"); break;
		case '<': gc_buf_puts(&s->b, "&lt;"); break;
		case '>': gc_buf_puts(&s->b, "&gt;"); break;
		case '"': gc_buf_puts(&s->b, "&quot;"); break;
		case '\'': gc_buf_puts(&s->b, "&apos;"); break;
		case '\t': gc_buf_puts(&s->b, "&#9;"); break;
		case '\n': gc_buf_puts(&s->b, "&#10;"); break;
		case '\r': gc_buf_puts(&s->b, "&#13;"); break;
		default:
			if (*p < 0x20)
				s->bad = true;
			else
				gc_buf_putc(&s->b, (char)*p);
		}
	}
}

void gc_vcenter_soap_begin(struct gc_vcenter_soap *s, const char *method, const char *this_type,
			   const char *this_id)
{
	memset(s, 0, sizeof(*s));
	s->method = method;
	/* One allocation up front, so a password is never left behind in a
	 * buffer that realloc() moved away from. */
	s->b.ptr = gc_xmalloc(BODY_RESERVE);
	s->b.cap = BODY_RESERVE;
	gc_buf_reset(&s->b);
	gc_buf_puts(&s->b, envelope_open);
	gc_buf_printf(&s->b, "<%s xmlns=\"urn:vim25\">", method);
	gc_vcenter_soap_moref(s, "_this", this_type, this_id);
}

void gc_vcenter_soap_elem(struct gc_vcenter_soap *s, const char *name, const char *text)
{
	gc_buf_printf(&s->b, "<%s>", name);
	put_escaped(s, text);
	gc_buf_printf(&s->b, "</%s>", name);
}

void gc_vcenter_soap_text(struct gc_vcenter_soap *s, const char *text)
{
	put_escaped(s, text);
}

void gc_vcenter_soap_open(struct gc_vcenter_soap *s, const char *name, const char *xsi_type)
{
	gc_buf_printf(&s->b, "<%s", name);
	if (xsi_type != NULL) {
		gc_buf_puts(&s->b, " xsi:type=\"");
		put_escaped(s, xsi_type);
		gc_buf_putc(&s->b, '"');
	}
	gc_buf_putc(&s->b, '>');
}

void gc_vcenter_soap_close(struct gc_vcenter_soap *s, const char *name)
{
	gc_buf_printf(&s->b, "</%s>", name);
}

void gc_vcenter_soap_moref_opt(struct gc_vcenter_soap *s, const char *name, const char *type,
			       const char *id)
{
	if (id != NULL)
		gc_vcenter_soap_moref(s, name, type, id);
}

void gc_vcenter_soap_int(struct gc_vcenter_soap *s, const char *name, long v)
{
	gc_buf_printf(&s->b, "<%s>%ld</%s>", name, v, name);
}

void gc_vcenter_soap_moref(struct gc_vcenter_soap *s, const char *name, const char *type,
			   const char *id)
{
	gc_buf_printf(&s->b, "<%s type=\"", name);
	put_escaped(s, type);
	gc_buf_puts(&s->b, "\">");
	put_escaped(s, id);
	gc_buf_printf(&s->b, "</%s>", name);
}

int gc_vcenter_soap_end(struct gc_vcenter_soap *s, const struct gc_vcenter_conn *vc,
			struct gc_error *err)
{
	gc_buf_printf(&s->b, "</%s></soapenv:Body></soapenv:Envelope>", s->method);
	if (s->bad)
		return gc_error_set(err, GC_EINVAL,
				    "%s: %s: a value holds a control character XML cannot carry",
				    vc->target, s->method);
	return 0;
}

void gc_vcenter_soap_free(struct gc_vcenter_soap *s)
{
	if (s->b.ptr != NULL)
		memset(s->b.ptr, 0, s->b.cap);
	gc_buf_free(&s->b);
}

/* ---------------------------------------------------------------- replies */

xmlNodePtr gc_vcenter_xml_child(xmlNodePtr parent, const char *name)
{
	if (parent == NULL)
		return NULL;
	for (xmlNodePtr n = parent->children; n != NULL; n = n->next)
		if (n->type == XML_ELEMENT_NODE && xmlStrcmp(n->name, BAD_CAST name) == 0)
			return n;
	return NULL;
}

xmlNodePtr gc_vcenter_xml_next(xmlNodePtr node, const char *name)
{
	for (xmlNodePtr n = node ? node->next : NULL; n != NULL; n = n->next)
		if (n->type == XML_ELEMENT_NODE && xmlStrcmp(n->name, BAD_CAST name) == 0)
			return n;
	return NULL;
}

static xmlNodePtr first_element(xmlNodePtr parent)
{
	for (xmlNodePtr n = parent ? parent->children : NULL; n != NULL; n = n->next)
		if (n->type == XML_ELEMENT_NODE)
			return n;
	return NULL;
}

const char *gc_vcenter_xml_type(xmlNodePtr node, char *buf, size_t n)
{
	xmlChar *v = node ? xmlGetNsProp(node, BAD_CAST "type", BAD_CAST XSI_NS) : NULL;
	const char *colon;

	if (v == NULL)
		return NULL;
	colon = strchr((const char *)v, ':');
	snprintf(buf, n, "%s", colon ? colon + 1 : (const char *)v);
	xmlFree(v);
	return buf;
}

const char *gc_vcenter_xml_text(struct gc_arena *a, xmlNodePtr node, const char *name)
{
	xmlChar *v;
	const char *s;

	if (name != NULL)
		node = gc_vcenter_xml_child(node, name);
	if (node == NULL)
		return NULL;
	v = xmlNodeGetContent(node);
	s = gc_arena_strdup(a, v ? (const char *)v : "");
	xmlFree(v);
	return s;
}

void gc_vcenter_xml_copy(char *buf, size_t n, xmlNodePtr node, const char *name)
{
	xmlChar *v;

	if (name != NULL)
		node = gc_vcenter_xml_child(node, name);
	v = node ? xmlNodeGetContent(node) : NULL;
	snprintf(buf, n, "%s", v ? (const char *)v : "");
	xmlFree(v);
}

int gc_vcenter_xml_int(xmlNodePtr node, const char *name, int dflt)
{
	char buf[32], *end;
	long v;

	if (name != NULL)
		node = gc_vcenter_xml_child(node, name);
	if (node == NULL)
		return dflt;
	gc_vcenter_xml_copy(buf, sizeof(buf), node, NULL);
	if (buf[0] == '\0')
		return dflt;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno != 0 || *end != '\0' || v < -2147483647L - 1 || v > 2147483647L)
		return dflt;
	return (int)v;
}

/* ---------------------------------------------------------------- one call */

void gc_vcenter_lock(const struct gc_vcenter_conn *vc)
{
	/* The mutex is the one field a const reader changes. */
	int rc = pthread_mutex_lock((pthread_mutex_t *)&vc->lock);

	assert(rc == 0);
	(void)rc;
}

void gc_vcenter_unlock(const struct gc_vcenter_conn *vc)
{
	int rc = pthread_mutex_unlock((pthread_mutex_t *)&vc->lock);

	assert(rc == 0);
	(void)rc;
}

/* Under the lock. */
static void count_call(struct gc_vcenter_conn *vc, const char *method)
{
	size_t i;

	for (i = 0; i < GC_VCENTER_METHODS_MAX && vc->calls[i].method[0]; i++)
		if (strcmp(vc->calls[i].method, method) == 0)
			break;
	if (i == GC_VCENTER_METHODS_MAX)
		return;
	snprintf(vc->calls[i].method, sizeof(vc->calls[i].method), "%s", method);
	vc->calls[i].n++;
}

static int fault(const char *target, const char *method, xmlNodePtr f, char *out, size_t nout,
		 struct gc_error *err)
{
	char text[400], tbuf[96], both[512];
	xmlNodePtr d = first_element(gc_vcenter_xml_child(f, "detail"));
	const char *type = gc_vcenter_xml_type(d, tbuf, sizeof(tbuf));
	int code = GC_EREMOTE;

	if (type == NULL && d != NULL) {
		size_t n;

		snprintf(tbuf, sizeof(tbuf), "%s", (const char *)d->name);
		n = strlen(tbuf);
		if (n > 5 && strcmp(tbuf + n - 5, "Fault") == 0)
			tbuf[n - 5] = '\0';
		type = tbuf;
	}
	gc_vcenter_xml_copy(text, sizeof(text), f, "faultstring");
	if (type != NULL && (strcmp(type, "InvalidLogin") == 0 ||
			     strcmp(type, "NotAuthenticated") == 0))
		code = GC_EAUTH;
	snprintf(both, sizeof(both), "%s (%s)", text[0] ? text : "fault without a message",
		 type ? type : "no detail");
	if (out != NULL)
		snprintf(out, nout, "%s", both);
	return gc_error_set(err, code, "%s: %s: %s", target, method, both);
}

int gc_vcenter_soap_parse(const char *target, const char *method, long status, const char *body,
			  size_t len, xmlDocPtr *doc, xmlNodePtr *ret, char *fault_out,
			  size_t nfault, struct gc_error *err)
{
	char want[96];
	xmlDocPtr d;
	xmlNodePtr root, first;
	int rc;

	if (len > (size_t)0x7fffffff)
		return gc_error_set(err, GC_ENOMEM, "%s: %s: reply too large", target, method);
	d = xmlReadMemory(body, (int)len, "sdk.xml", "UTF-8",
			  XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	root = d ? xmlDocGetRootElement(d) : NULL;
	first = first_element(gc_vcenter_xml_child(root, "Body"));
	if (first == NULL) {
		rc = gc_error_set(err, status >= 500 ? GC_ENET : GC_EINVAL,
				  "%s: %s: HTTP %ld without a SOAP reply", target, method, status);
		goto fail;
	}
	if (xmlStrcmp(first->name, BAD_CAST "Fault") == 0) {
		rc = fault(target, method, first, fault_out, nfault, err);
		goto fail;
	}
	snprintf(want, sizeof(want), "%sResponse", method);
	if (status != 200 || xmlStrcmp(first->name, BAD_CAST want) != 0) {
		rc = gc_error_set(err, GC_EINVAL, "%s: %s: HTTP %ld with <%s>, not <%s>", target,
				  method, status, (const char *)first->name, want);
		goto fail;
	}
	*doc = d;
	*ret = first;
	return 0;
fail:
	xmlFreeDoc(d);
	return rc;
}

/*
 * Methods that only read (or, like Login and Logout, may be sent twice to
 * no harm): libcurl may send them again by itself on a new connection.
 * Every other method changes vCenter and goes out at most once (`once` in
 * gc/https.h): after a lost reply the executor observes again and decides.
 */
static bool rereadable(const char *method)
{
	static const char *const reads[] = {
		"RetrieveServiceContent", "RetrievePropertiesEx", "ContinueRetrievePropertiesEx",
		"RetrieveProperties",     "QueryConfigTarget",    "CurrentTime",
		"Login",                  "Logout",               "QueryOptions",
	};

	for (size_t i = 0; i < GC_ARRAY_LEN(reads); i++)
		if (strcmp(method, reads[i]) == 0)
			return true;
	return false;
}

int gc_vcenter_soap_call(struct gc_vcenter_conn *vc, const struct gc_vcenter_soap *s,
			 xmlDocPtr *doc, xmlNodePtr *ret, struct gc_error *err)
{
	char fbuf[512];

	return gc_vcenter_soap_call_fault(vc, s, doc, ret, fbuf, sizeof(fbuf), err);
}

int gc_vcenter_soap_call_fault(struct gc_vcenter_conn *vc, const struct gc_vcenter_soap *s,
			       xmlDocPtr *doc, xmlNodePtr *ret, char *fbuf, size_t nfbuf,
			       struct gc_error *err)
{
	char action[64];
	const char *headers[2];
	struct gc_https_request q = {0};
	struct gc_https_response r;
	int rc;

	snprintf(action, sizeof(action), "SOAPAction: \"urn:vim25/%s\"", vc->api_version);
	headers[0] = action;
	headers[1] = NULL;
	q.method = "POST";
	q.path = "/sdk";
	q.content_type = "text/xml; charset=utf-8";
	q.body = s->b.ptr;
	q.body_len = s->b.len;
	q.headers = headers;
	q.once = !rereadable(s->method);
	gc_vcenter_lock(vc);
	count_call(vc, s->method);
	vc->last_fault[0] = '\0';
	rc = gc_https_request(vc->https, &q, &r, err);
	if (rc == GC_ENET || rc == GC_ETIMEOUT || rc == GC_EHOSTKEY)
		vc->logged_in = false; /* unreachable: no Logout round trip on free */
	gc_vcenter_unlock(vc);
	if (rc < 0)
		return rc;
	/* Parsing needs no lock: another thread's call may go out meanwhile. */
	fbuf[0] = '\0';
	rc = gc_vcenter_soap_parse(vc->target, s->method, r.status, r.body, r.body_len, doc, ret,
				   fbuf, nfbuf, err);
	gc_https_response_free(&r);
	if (fbuf[0] != '\0') {
		gc_vcenter_lock(vc);
		snprintf(vc->last_fault, sizeof(vc->last_fault), "%s", fbuf);
		gc_vcenter_unlock(vc);
	}
	return rc;
}

int gc_vcenter_soap_run(struct gc_vcenter_conn *vc, struct gc_vcenter_soap *s,
			struct gc_error *err)
{
	xmlDocPtr doc = NULL;
	xmlNodePtr ret;
	int rc;

	rc = gc_vcenter_soap_end(s, vc, err);
	if (rc == 0)
		rc = gc_vcenter_soap_call(vc, s, &doc, &ret, err);
	gc_vcenter_soap_free(s);
	xmlFreeDoc(doc);
	return rc;
}
