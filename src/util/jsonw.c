/*
 * jsonw.c - the streaming JSON writer (include/gc/jsonw.h).
 *
 * The writer keeps only what it needs to place the next byte: how many
 * containers are open, and per level whether it is an object and has a
 * member yet (two bit sets).  Bytes go into a gc_buf; in file mode that
 * buffer is written out whenever it passes 64 KiB, so a 250 MB plan never
 * sits in memory.
 *
 * The layout and escaping copy json-c 0.16's json_object.c, so that the
 * same document comes out byte for byte:
 *   - a container opens with '[' or '{' and, with PRETTY, a newline, even
 *     when it stays empty ("[\n  ]");
 *   - members are separated by ',' (PRETTY: ",\n"); each starts with a
 *     space when SPACED without PRETTY, or with PRETTY by two spaces per
 *     level; a key is followed by "\": " (SPACED) or "\":";
 *   - a container closes, with PRETTY, by a newline when it has members
 *     and its own indent; " ]" / " }" when SPACED without PRETTY;
 *   - json_escape_str(): \b \n \r \t \f \" \\ by name, '/' as \/ unless
 *     NOSLASHESCAPE, every other byte below 0x20 as \u00xx (lower-case hex),
 *     DEL and every byte from 0x80 as it is;
 *   - integers as "%" PRId64 prints them.
 * gc_jsonw_text() first does what gc_buf_put_utf8() does (a byte that is not
 * part of well-formed UTF-8 becomes U+FFFD), in the same pass.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "gc/jsonw.h"
#include "utf8.h"

#define FLUSH_AT (64u * 1024u)

static const char spaces[2 * GC_JSONW_DEPTH + 1] =
    "                                                                "
    "                                                                ";

static void flush(struct gc_jsonw *w)
{
	struct gc_buf *b = w->out;

	if (w->f != NULL && b->len > 0) {
		if (w->errnum == 0 && fwrite(b->ptr, 1, b->len, w->f) != b->len)
			w->errnum = errno != 0 ? errno : EIO;
		gc_buf_reset(b);
	}
}

static void maybe_flush(struct gc_jsonw *w)
{
	if (w->f != NULL && w->out->len >= FLUSH_AT)
		flush(w);
}

static void put(struct gc_jsonw *w, const char *s, size_t n)
{
	gc_buf_put(w->out, s, n); /* inline while the buffer has room (util.h) */
}

#define PUT_LIT(w, lit) put((w), (lit), sizeof(lit) - 1)

static void indent(struct gc_jsonw *w, int level)
{
	put(w, spaces, (size_t)level * 2);
}

static bool pretty(const struct gc_jsonw *w)
{
	return (w->flags & GC_JSONW_PRETTY) != 0;
}

static bool spaced_plain(const struct gc_jsonw *w)
{
	return (w->flags & (GC_JSONW_SPACED | GC_JSONW_PRETTY)) == GC_JSONW_SPACED;
}

static uint64_t top_bit(const struct gc_jsonw *w)
{
	return (uint64_t)1 << (w->depth - 1);
}

/* What goes before a member of the container open at w->depth. */
static void member_prefix(struct gc_jsonw *w)
{
	uint64_t bit = top_bit(w);

	if (w->has_child & bit) {
		if (pretty(w))
			PUT_LIT(w, ",\n");
		else
			PUT_LIT(w, ",");
	}
	w->has_child |= bit;
	if (spaced_plain(w))
		PUT_LIT(w, " ");
	if (pretty(w))
		indent(w, w->depth);
}

/* Before any value: its object key already wrote the prefix; an array
 * element writes its own; a top-level value has none. */
static void before_value(struct gc_jsonw *w)
{
	if (w->key_written) {
		w->key_written = false;
		return;
	}
	if (w->depth == 0)
		return;
	assert(!(w->is_object & top_bit(w)) && "a value in an object needs a key first");
	member_prefix(w);
}

static void put_u00(struct gc_jsonw *w, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};

	put(w, u, sizeof(u));
}

/* What a byte of a string needs: ESC_NONE, copied as it is; ESC_SLASH,
 * '/', escaped unless NOSLASHESCAPE; ESC_HIGH, from 0x80, a UTF-8 check for
 * text; ESC_NAMED, '"', '\\' and every byte below 0x20. */
enum { ESC_NONE, ESC_SLASH, ESC_HIGH, ESC_NAMED };
#define ESC_HIGH16 ESC_HIGH, ESC_HIGH, ESC_HIGH, ESC_HIGH, ESC_HIGH, ESC_HIGH, ESC_HIGH, ESC_HIGH, \
                   ESC_HIGH, ESC_HIGH, ESC_HIGH, ESC_HIGH, ESC_HIGH, ESC_HIGH, ESC_HIGH, ESC_HIGH
#define ESC_NAMED16 ESC_NAMED, ESC_NAMED, ESC_NAMED, ESC_NAMED, ESC_NAMED, ESC_NAMED, ESC_NAMED, \
                    ESC_NAMED, ESC_NAMED, ESC_NAMED, ESC_NAMED, ESC_NAMED, ESC_NAMED, ESC_NAMED, \
                    ESC_NAMED, ESC_NAMED
static const unsigned char esc_class[256] = {
	ESC_NAMED16, ESC_NAMED16, /* 0x00-0x1f */
	[0x80] = ESC_HIGH16, ESC_HIGH16, ESC_HIGH16, ESC_HIGH16,
	ESC_HIGH16, ESC_HIGH16, ESC_HIGH16, ESC_HIGH16,
	['"'] = ESC_NAMED, ['\\'] = ESC_NAMED, ['/'] = ESC_SLASH,
};

/* s[0..n) as a JSON string; text: bytes that are not well-formed UTF-8
 * become U+FFFD (s is NUL-terminated then, which bounds gc_utf8_seq). */
static void put_string(struct gc_jsonw *w, const char *str, size_t n, bool text)
{
	const unsigned char *s = (const unsigned char *)str, *p = s, *end = s + n, *run = s;
	bool slash = (w->flags & GC_JSONW_NOSLASHESCAPE) == 0;

	PUT_LIT(w, "\"");
	while (p < end) {
		unsigned char c = *p;
		uint32_t cp;
		size_t len;

		if (esc_class[c] == ESC_NONE || (esc_class[c] == ESC_SLASH && !slash)) {
			p++;
			continue;
		}
		if (c >= 0x80) {
			if (!text) {
				p++;
				continue;
			}
			if ((len = gc_utf8_seq(p, &cp)) != 0) {
				p += len;
				continue;
			}
		}
		put(w, (const char *)run, (size_t)(p - run));
		switch (c) {
		case '\b': PUT_LIT(w, "\\b"); break;
		case '\n': PUT_LIT(w, "\\n"); break;
		case '\r': PUT_LIT(w, "\\r"); break;
		case '\t': PUT_LIT(w, "\\t"); break;
		case '\f': PUT_LIT(w, "\\f"); break;
		case '"': PUT_LIT(w, "\\\""); break;
		case '\\': PUT_LIT(w, "\\\\"); break;
		case '/': PUT_LIT(w, "\\/"); break;
		default:
			if (c < 0x20)
				put_u00(w, c);
			else
				PUT_LIT(w, "\xef\xbf\xbd"); /* U+FFFD for the one stray byte */
			break;
		}
		run = ++p;
	}
	put(w, (const char *)run, (size_t)(p - run));
	PUT_LIT(w, "\"");
}

static void init(struct gc_jsonw *w, unsigned flags)
{
	assert((flags & ~(GC_JSONW_SPACED | GC_JSONW_PRETTY | GC_JSONW_NOSLASHESCAPE)) == 0);
	w->flags = flags;
	w->depth = 0;
	w->key_written = false;
	w->has_child = 0;
	w->is_object = 0;
	w->errnum = 0;
}

void gc_jsonw_init_file(struct gc_jsonw *w, FILE *f, unsigned flags)
{
	init(w, flags);
	w->pending = (struct gc_buf)GC_BUF_INIT;
	w->out = &w->pending;
	w->f = f;
}

void gc_jsonw_init_buf(struct gc_jsonw *w, struct gc_buf *out, unsigned flags)
{
	init(w, flags);
	w->pending = (struct gc_buf)GC_BUF_INIT;
	w->out = out;
	w->f = NULL;
}

int gc_jsonw_finish(struct gc_jsonw *w, struct gc_error *err)
{
	int errnum;

	assert(w->depth == 0 && !w->key_written && "finish: the document is not complete");
	flush(w);
	gc_buf_free(&w->pending);
	errnum = w->errnum;
	w->errnum = 0;
	if (errnum != 0)
		return gc_error_set_errno(err, GC_EIO, errnum, "writing JSON failed");
	return 0;
}

static void open_container(struct gc_jsonw *w, bool object)
{
	uint64_t bit;

	before_value(w);
	assert(w->depth < GC_JSONW_DEPTH && "JSON nested too deep");
	if (object)
		PUT_LIT(w, "{");
	else
		PUT_LIT(w, "[");
	if (pretty(w))
		PUT_LIT(w, "\n");
	w->depth++;
	bit = top_bit(w);
	w->has_child &= ~bit;
	if (object)
		w->is_object |= bit;
	else
		w->is_object &= ~bit;
	maybe_flush(w);
}

static void close_container(struct gc_jsonw *w, bool object)
{
	uint64_t bit;

	assert(w->depth > 0 && !w->key_written &&
	       "an end without its begin, or a key without a value");
	bit = top_bit(w);
	assert(((w->is_object & bit) != 0) == object && "the end does not match its begin");
	if (pretty(w)) {
		if (w->has_child & bit)
			PUT_LIT(w, "\n");
		indent(w, w->depth - 1);
	}
	if (spaced_plain(w))
		PUT_LIT(w, " ");
	if (object)
		PUT_LIT(w, "}");
	else
		PUT_LIT(w, "]");
	w->depth--;
	maybe_flush(w);
}

void gc_jsonw_object_begin(struct gc_jsonw *w)
{
	open_container(w, true);
}

void gc_jsonw_object_end(struct gc_jsonw *w)
{
	close_container(w, true);
}

void gc_jsonw_array_begin(struct gc_jsonw *w)
{
	open_container(w, false);
}

void gc_jsonw_array_end(struct gc_jsonw *w)
{
	close_container(w, false);
}

void gc_jsonw_key(struct gc_jsonw *w, const char *key)
{
	assert(w->depth > 0 && (w->is_object & top_bit(w)) && !w->key_written &&
	       "a key outside an object, or two keys in a row");
	member_prefix(w);
	put_string(w, key, strlen(key), false);
	if (w->flags & GC_JSONW_SPACED)
		PUT_LIT(w, ": ");
	else
		PUT_LIT(w, ":");
	w->key_written = true;
}

void gc_jsonw_string_len(struct gc_jsonw *w, const char *s, size_t n)
{
	before_value(w);
	put_string(w, s, n, false);
	maybe_flush(w);
}

void gc_jsonw_string(struct gc_jsonw *w, const char *s)
{
	if (s == NULL)
		gc_jsonw_null(w);
	else
		gc_jsonw_string_len(w, s, strlen(s));
}

void gc_jsonw_text(struct gc_jsonw *w, const char *s)
{
	if (s == NULL) {
		gc_jsonw_null(w);
		return;
	}
	before_value(w);
	put_string(w, s, strlen(s), true);
	maybe_flush(w);
}

void gc_jsonw_int(struct gc_jsonw *w, int64_t v)
{
	char digits[24], *p = digits + sizeof(digits);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	before_value(w);
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		*--p = '-';
	put(w, p, (size_t)(digits + sizeof(digits) - p));
	maybe_flush(w);
}

void gc_jsonw_bool(struct gc_jsonw *w, bool v)
{
	before_value(w);
	if (v)
		PUT_LIT(w, "true");
	else
		PUT_LIT(w, "false");
	maybe_flush(w);
}

void gc_jsonw_null(struct gc_jsonw *w)
{
	before_value(w);
	PUT_LIT(w, "null");
	maybe_flush(w);
}

void gc_jsonw_raw(struct gc_jsonw *w, const char *s, size_t n)
{
	put(w, s, n);
	maybe_flush(w);
}
