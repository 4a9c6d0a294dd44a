/*
 * lines.h - walk a text a line at a time, without copying: the parsers of
 * tool output (the probe's, libc only, and validate's) share it, header-only
 * so the probe-only build needs no library for it.
 */
#ifndef GC_LINES_H
#define GC_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct gc_lines {
	const char *p, *end;
	int no; /* 1-based number of the line last returned */
};

/* The next line in *s and *n, without its '\n' or "\r\n"; false at the end. */
static inline bool gc_lines_next(struct gc_lines *it, const char **s, size_t *n)
{
	const char *nl;

	if (it->p >= it->end)
		return false;
	nl = (const char *)memchr(it->p, '\n', (size_t)(it->end - it->p));
	*s = it->p;
	*n = nl ? (size_t)(nl - it->p) : (size_t)(it->end - it->p);
	it->p = nl ? nl + 1 : it->end;
	if (*n > 0 && (*s)[*n - 1] == '\r')
		(*n)--;
	it->no++;
	return true;
}

#endif
