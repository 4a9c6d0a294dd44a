/*
 * fuzz_check.h - what the fuzz targets check besides the sanitizers: an
 * invariant that does not hold aborts (a crash in every build type, so the
 * corpus replay fails too), and a string read to its end lets ASan see one
 * that is dangling or unterminated.  Header-only: each target is its own
 * program.
 */
#ifndef GC_FUZZ_CHECK_H
#define GC_FUZZ_CHECK_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static inline void must(bool ok)
{
	if (!ok)
		abort();
}

static volatile size_t fuzz_sink;

static inline void touch(const char *s)
{
	fuzz_sink += s ? strlen(s) : 0;
}

#endif
