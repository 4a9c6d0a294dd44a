/*
 * utf8.h - inside gc_util only: the UTF-8 decoder behind gc_buf_put_shown(),
 * gc_buf_put_utf8() and the JSON writer's gc_jsonw_text() (util.c).
 */
#ifndef GC_UTIL_UTF8_H
#define GC_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length of the UTF-8 sequence at p (1-4) and its code point, or 0
 * when it is not well formed (overlong, surrogate, past U+10FFFF, cut).
 * Reads no further than a byte that is not a continuation byte (a NUL). */
size_t gc_utf8_seq(const unsigned char *p, uint32_t *cp);

#endif
