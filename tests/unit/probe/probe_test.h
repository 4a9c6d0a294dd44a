/* probe_test.h - helpers shared by the probe tests. */
#ifndef GC_PROBE_TEST_H
#define GC_PROBE_TEST_H

#include <stdlib.h>

#include "gc/util.h"

/* Read tests/data/probe/<rel>; aborts the test when missing. */
static inline char *probe_data(const char *rel, size_t *len)
{
	struct gc_error err = GC_ERROR_INIT;
	char *path = gc_xasprintf("%s/tests/data/probe/%s", GC_SOURCE_DIR, rel);
	char *data = NULL;

	if (gc_read_file(&data, len, path, 1u << 20, &err) != 0) {
		fprintf(stderr, "cannot read %s: %s\n", path, err.msg);
		abort();
	}
	free(path);
	return data;
}

#endif
