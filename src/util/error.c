/*
 * error.c - struct gc_error: first error wins, context is prefixed.
 */
#include <stdio.h>
#include <string.h>

#include "gc/error.h"

int gc_error_setv(struct gc_error *err, int code, const char *fmt, va_list ap)
{
	if (err == NULL || err->code != 0)
		return code;
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return code;
}

int gc_error_set(struct gc_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gc_error_setv(err, code, fmt, ap);
	va_end(ap);
	return code;
}

int gc_error_set_errno(struct gc_error *err, int code, int errnum, const char *fmt, ...)
{
	va_list ap;
	size_t len;

	if (err == NULL || err->code != 0)
		return code;
	va_start(ap, fmt);
	gc_error_setv(err, code, fmt, ap);
	va_end(ap);
	err->errnum = errnum;
	len = strlen(err->msg);
	if (errnum != 0 && len < sizeof(err->msg))
		snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(errnum));
	return code;
}

void gc_error_at(struct gc_error *err, const char *file, int line, int col)
{
	if (err == NULL || err->line != 0)
		return;
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
	err->line = line;
	err->col = col;
}

void gc_error_prefix(struct gc_error *err, const char *fmt, ...)
{
	char pre[GC_ERROR_MSG_MAX];
	char old[GC_ERROR_MSG_MAX];
	va_list ap;

	if (err == NULL || err->code == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	{
		size_t n = strnlen(pre, sizeof(err->msg) - 1);

		memcpy(err->msg, pre, n);
		memcpy(err->msg + n, old, sizeof(err->msg) - n - 1);
		err->msg[sizeof(err->msg) - 1] = '\0';
	}
}

void gc_error_clear(struct gc_error *err)
{
	if (err != NULL)
		memset(err, 0, sizeof(*err));
}

const char *gc_code_name(int code)
{
	switch ((enum gc_code)code) {
	case GC_OK: return "OK";
	case GC_ERROR: return "ERROR";
	case GC_EINVAL: return "EINVAL";
	case GC_ENOTFOUND: return "ENOTFOUND";
	case GC_ENOMEM: return "ENOMEM";
	case GC_EIO: return "EIO";
	case GC_ESPEC: return "ESPEC";
	case GC_ECYCLE: return "ECYCLE";
	case GC_ENET: return "ENET";
	case GC_EREMOTE: return "EREMOTE";
	case GC_ETIMEOUT: return "ETIMEOUT";
	case GC_EHOSTKEY: return "EHOSTKEY";
	case GC_EAUTH: return "EAUTH";
	case GC_ELOCKED: return "ELOCKED";
	case GC_EUSAGE: return "EUSAGE";
	case GC_EINTR: return "EINTR";
	case GC_ENOTSUP: return "ENOTSUP";
	}
	return "UNKNOWN";
}
