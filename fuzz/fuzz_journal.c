/*
 * fuzz_journal.c - the apply journal as a resumed apply reads it
 * (gc_journal_parse, the reader of gc_journal_read): JSON Lines through
 * json-c, a torn last line skipped, any other bad line an error.
 *
 * On success every record must carry run, target and kind (the recall in
 * src/exec/recover.c compares them with strcmp) and a state of the enum,
 * and gc_jhistory_last() must find each record's (target, kind) again with
 * the state of the newest such record.  A failure must name the line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "gc/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gc_error err = GC_ERROR_INIT;
	struct gc_jhistory h;
	size_t i;

	if (gc_journal_parse(&h, "fuzz.journal", (const char *)data, size, &err) != 0) {
		must(err.code == GC_EIO && strncmp(err.msg, "fuzz.journal:", 13) == 0);
		return 0;
	}
	for (i = 0; i < h.n; i++) {
		const struct gc_jrecord *r = &h.records[i];
		int last;

		must(r->run != NULL && r->target != NULL && r->kind != NULL);
		must(r->state >= GC_J_START && r->state <= GC_J_SKIPPED);
		last = gc_jhistory_last(&h, r->target, r->kind);
		must(last >= (int)GC_J_START && last <= (int)GC_J_SKIPPED);
	}
	if (h.n > 0) {
		const struct gc_jrecord *r = &h.records[h.n - 1];

		must(gc_jhistory_last(&h, r->target, r->kind) == (int)r->state);
	}
	gc_jhistory_free(&h);
	return 0;
}
