/*
 * error.h - the one error type of the engine.
 *
 * Every fallible function takes `struct gc_error *err` as its last argument
 * and returns a negative gc_code on failure.  The first error set wins: later
 * calls to gc_error_set() on an already-set error only add context through
 * gc_error_prefix().  There is no thread-local error state: apply is parallel.
 */
#ifndef GC_ERROR_H
#define GC_ERROR_H

#include <stdarg.h>
#include <stddef.h>

enum gc_code {
	GC_OK = 0,
	GC_ERROR = -1,     /* generic failure */
	GC_EINVAL = -2,    /* bad argument or bad input */
	GC_ENOTFOUND = -3, /* a named thing does not exist */
	GC_ENOMEM = -4,    /* a size cap was hit (allocation failure aborts) */
	GC_EIO = -5,       /* local I/O failed; errnum is set */
	GC_ESPEC = -6,     /* the spec is invalid; see the diagnostics */
	GC_ECYCLE = -7,    /* the resource graph has a cycle */
	GC_ENET = -8,      /* transport failure; safe to retry */
	GC_EREMOTE = -9,   /* the target ran the command and said no */
	GC_ETIMEOUT = -10, /* a deadline passed */
	GC_EHOSTKEY = -11, /* SSH host key unknown or changed; TLS certificate not trusted */
	GC_EAUTH = -12,    /* authentication failed */
	GC_ELOCKED = -13,  /* another apply holds the lock */
	GC_EUSAGE = -14,   /* command-line usage error */
	GC_EINTR = -15,    /* interrupted by the user */
	GC_ENOTSUP = -16,  /* not supported by this target/build */
};

#define GC_ERROR_MSG_MAX 1024

struct gc_error {
	int code;        /* enum gc_code, 0 when unset */
	int errnum;      /* errno at the time, 0 if none */
	long libcode;    /* the library's own code (libssh2, CURLcode, ...) */
	char file[256];  /* source location, when the error is about input */
	int line;
	int col;
	char msg[GC_ERROR_MSG_MAX];
};

#define GC_ERROR_INIT {0, 0, 0, {0}, 0, 0, {0}}

#if defined(__GNUC__)
#define GC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GC_PRINTF(a, b)
#endif
/* For the va_list variants: the format is argument a, checked at their callers. */
#define GC_VPRINTF(a) GC_PRINTF(a, 0)

/* Set err (if not already set) and return code. err may be NULL. */
int gc_error_set(struct gc_error *err, int code, const char *fmt, ...) GC_PRINTF(3, 4);
int gc_error_setv(struct gc_error *err, int code, const char *fmt, va_list ap) GC_VPRINTF(3);
/* Like gc_error_set, also records errno. */
int gc_error_set_errno(struct gc_error *err, int code, int errnum, const char *fmt, ...)
	GC_PRINTF(4, 5);
/* Attach a source location (only if the error has none yet). */
void gc_error_at(struct gc_error *err, const char *file, int line, int col);
/* Prefix context to an existing message ("host 'esx01': " + msg). */
void gc_error_prefix(struct gc_error *err, const char *fmt, ...) GC_PRINTF(2, 3);
void gc_error_clear(struct gc_error *err);
/* Short name of a code, e.g. "ENET". */
const char *gc_code_name(int code);

#endif
