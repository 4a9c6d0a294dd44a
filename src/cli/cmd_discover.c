/*
 * cmd_discover.c - `gpuclusterctl discover [--json] [--out FILE] SPEC`:
 * read what the targets SPEC names are now (read-only) and print it as a
 * spec (src/discover).  SPEC needs only the connection sections: hosts by
 * name, address and credentials, switches likewise, the vCenter; its
 * credentials, SSH settings and host-key policy are used as every other
 * command uses them.  Each target that cannot be read is named on stderr
 * and the others are still printed; exit 1 then.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gc/discover.h"
#include "gc/json.h"

/* Each target that could not be read, on stderr. */
static void report_failures(json_object *doc)
{
	static const char *const lists[] = {"hosts", "switches"};
	json_object *a, *vc;

	for (size_t l = 0; l < GC_ARRAY_LEN(lists); l++) {
		if (!json_object_object_get_ex(doc, lists[l], &a))
			continue;
		for (size_t i = 0; i < json_object_array_length(a); i++) {
			json_object *t = json_object_array_get_idx(a, i), *e, *n;

			if (json_object_object_get_ex(t, "error", &e) && e != NULL &&
			    json_object_object_get_ex(t, "name", &n))
				cli_error("%s '%s': %s", l == 0 ? "host" : "switch",
					  json_object_get_string(n), json_object_get_string(e));
		}
	}
	if (json_object_object_get_ex(doc, "vcenter", &vc) && vc != NULL) {
		json_object *e;

		if (json_object_object_get_ex(vc, "error", &e) && e != NULL)
			cli_error("vCenter: %s", json_object_get_string(e));
	}
}

/* FILE written whole (a temporary beside it, renamed), or stdout. */
static bool put(const struct gc_buf *b, const char *path)
{
	char *tmp;
	FILE *f;
	bool ok;

	if (path == NULL)
		return cli_write(b);
	tmp = gc_xasprintf("%s.tmp.%ld", path, (long)getpid());
	f = fopen(tmp, "w");
	ok = f != NULL && fwrite(b->ptr, 1, b->len, f) == b->len;
	if (f != NULL && fclose(f) != 0)
		ok = false;
	if (ok && rename(tmp, path) != 0)
		ok = false;
	if (!ok) {
		cli_error("cannot write '%s'", path);
		unlink(tmp);
	}
	free(tmp);
	return ok;
}

static int run(const char *spec, const struct gc_drv_settings *set, bool json, const char *out)
{
	struct gc_cluster *c = NULL;
	struct gc_error err = GC_ERROR_INIT;
	struct gc_buf b = GC_BUF_INIT;
	json_object *doc = NULL;
	int rc, read_rc;

	if (cli_load_spec(&c, spec) != 0)
		return GC_EXIT_ERROR;
	if (c->nhosts == 0 && c->nswitches == 0 && c->vcenter == NULL) {
		gc_cluster_free(c);
		return cli_error("'%s' names no host, switch or vCenter to discover", spec);
	}
	read_rc = gc_discover_run(&doc, c, set, &err);
	report_failures(doc);
	if (json) {
		gc_json_put(&b, json_object_get(doc), 0);
		gc_buf_putc(&b, '\n');
		rc = 0;
	} else {
		rc = gc_discover_yaml(&b, c, doc, &err);
		if (rc != 0)
			cli_error("%s", err.msg);
	}
	if (rc == 0 && !put(&b, out))
		rc = GC_EXIT_ERROR;
	json_object_put(doc);
	gc_buf_free(&b);
	gc_cluster_free(c);
	return rc != 0 || read_rc != 0 ? GC_EXIT_ERROR : GC_EXIT_OK;
}

int cmd_discover(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},         {"out", required_argument, NULL, 'o'},
		{"known-hosts", required_argument, NULL, 'k'},
		{"trust-new-host-keys", no_argument, NULL, 'T'}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct gc_drv_settings set;
	const char *out = NULL;
	bool json = false;
	int c;

	memset(&set, 0, sizeof(set));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'o':
			out = optarg;
			break;
		case 'k':
			set.known_hosts = optarg;
			break;
		case 'T':
			set.trust_new_host_keys = true;
			break;
		case 'h':
			return cli_print_usage("discover");
		default:
			return cli_usage_error("discover", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("discover", optind >= argc ? "missing SPEC" : "too many arguments");
	return run(argv[optind], &set, json, out);
}
