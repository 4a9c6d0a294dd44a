/*
 * journal.c - append-only, fsync'd JSON Lines journal and the flock-based
 * cluster lock (see include/gc/journal.h for what each is for).
 *
 * Each record is one json-c object serialised on one line and written with
 * a single write(2) on an O_APPEND descriptor, then fsync(2): a crash leaves
 * at most a torn last line, which the reader skips.  A mutex serialises
 * writers inside one process (the worker pool).
 *
 * The fsync is a group commit: a writer returns once an fsync that began
 * after its write has ended, whoever ran it.  One writer at a time runs
 * fsync, outside the mutex; the others write their records meanwhile and
 * wait, and the next fsync covers them all.  64 workers journalling at
 * once on a disk whose fsync takes 5 ms wait for a few fsyncs each, not for
 * 63 others' one after another (docs/benchmarks.md, "The journal").  A
 * failed fsync fails its runner and leaves the records it was to cover
 * unsynced: their writers try again, and see the error themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gc/journal.h"
#include "gc/pattern.h"
#include "gc/util.h"

#define JOURNAL_MAX (64u * 1024 * 1024)

struct gc_journal {
	int fd;
	pthread_mutex_t mu;
	pthread_cond_t synced_cv; /* an fsync ended */
	uint64_t written;         /* records written */
	uint64_t synced;          /* the first `synced` of them are on disk */
	bool syncing;             /* a writer runs fsync now */
	unsigned long syncs;      /* fsyncs run (gc_journal_syncs) */
	unsigned sync_delay_ms;   /* test hook: a slow disk */
	char run[40];
};

static const char *const state_names[] = {"start", "done", "failed", "skipped"};

static int ensure_dir(const char *dir, struct gc_error *err)
{
	if (mkdir(dir, 0700) == 0 || errno == EEXIST)
		return 0;
	return gc_error_set_errno(err, GC_EIO, errno, "cannot create state directory '%s'", dir);
}

static char *state_path(const char *dir, const char *cluster, const char *ext,
			struct gc_error *err)
{
	if (!gc_valid_name(cluster)) {
		gc_error_set(err, GC_EINVAL, "invalid cluster name '%s'", cluster);
		return NULL;
	}
	return gc_xasprintf("%s/%s.%s", dir, cluster, ext);
}

int gc_journal_open(struct gc_journal **out, const char *state_dir, const char *cluster,
		    struct gc_error *err)
{
	struct gc_journal *j;
	struct timespec ts;
	char *path;
	int fd;

	if (ensure_dir(state_dir, err) != 0)
		return err->code;
	path = state_path(state_dir, cluster, "journal", err);
	if (path == NULL)
		return err->code;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		gc_error_set_errno(err, GC_EIO, errno, "cannot open journal '%s'", path);
		free(path);
		return err->code;
	}
	free(path);
	j = gc_xcalloc(1, sizeof(*j));
	j->fd = fd;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->synced_cv, NULL);
	/* test hook: each fsync takes this much longer, as on a slow disk */
	if (gc_test_hook("GC_TEST_JOURNAL_SYNC_DELAY_MS") != NULL)
		j->sync_delay_ms =
			(unsigned)strtoul(gc_test_hook("GC_TEST_JOURNAL_SYNC_DELAY_MS"), NULL, 10);
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(j->run, sizeof(j->run), "%lld.%06ld-%d", (long long)ts.tv_sec,
		 ts.tv_nsec / 1000, (int)getpid());
	*out = j;
	return 0;
}

const char *gc_journal_run_id(const struct gc_journal *j)
{
	return j->run;
}

int gc_journal_append(struct gc_journal *j, const char *target, const char *action,
		      const char *kind, enum gc_jstate state, const char *detail,
		      struct gc_error *err)
{
	struct json_object *o = json_object_new_object();
	struct timespec ts;
	const char *line;
	size_t len;
	char *rec;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	json_object_object_add(o, "run", json_object_new_string(j->run));
	json_object_object_add(o, "ts", json_object_new_double((double)ts.tv_sec + ts.tv_nsec / 1e9));
	json_object_object_add(o, "target", json_object_new_string(target ? target : ""));
	json_object_object_add(o, "action", json_object_new_string(action ? action : ""));
	json_object_object_add(o, "kind", json_object_new_string(kind ? kind : ""));
	json_object_object_add(o, "state", json_object_new_string(state_names[state]));
	if (detail != NULL)
		json_object_object_add(o, "detail", json_object_new_string(detail));
	line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	rec = gc_xasprintf("%s\n", line);
	len = strlen(rec);
	json_object_put(o);

	pthread_mutex_lock(&j->mu);
	if (write(j->fd, rec, len) != (ssize_t)len) {
		rc = gc_error_set_errno(err, GC_EIO, errno, "cannot write the journal");
	} else {
		uint64_t mine = ++j->written;

		while (rc == 0 && j->synced < mine) {
			uint64_t upto;
			int e = 0;

			if (j->syncing) { /* the running fsync may have begun before our write */
				pthread_cond_wait(&j->synced_cv, &j->mu);
				continue;
			}
			j->syncing = true;
			upto = j->written;
			pthread_mutex_unlock(&j->mu);
			if (j->sync_delay_ms != 0)
				usleep(j->sync_delay_ms * 1000u);
			if (fsync(j->fd) != 0)
				e = errno;
			pthread_mutex_lock(&j->mu);
			j->syncing = false;
			j->syncs++;
			if (e == 0 && upto > j->synced)
				j->synced = upto;
			if (e != 0)
				rc = gc_error_set_errno(err, GC_EIO, e, "cannot fsync the journal");
			pthread_cond_broadcast(&j->synced_cv);
		}
	}
	pthread_mutex_unlock(&j->mu);
	free(rec);
	return rc;
}

unsigned long gc_journal_syncs(struct gc_journal *j)
{
	unsigned long n;

	pthread_mutex_lock(&j->mu);
	n = j->syncs;
	pthread_mutex_unlock(&j->mu);
	return n;
}

void gc_journal_close(struct gc_journal *j)
{
	if (j == NULL)
		return;
	close(j->fd);
	pthread_cond_destroy(&j->synced_cv);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

static char *dup_field(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return gc_xstrdup(json_object_get_string(v));
}

static int parse_record(struct gc_jrecord *r, const char *line, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = json_tokener_parse_ex(tok, line, (int)len);
	struct json_object *v;
	char *state;
	size_t i;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(o, json_type_object))
		goto out;
	r->run = dup_field(o, "run");
	r->target = dup_field(o, "target");
	r->action = dup_field(o, "action");
	r->kind = dup_field(o, "kind");
	r->detail = dup_field(o, "detail");
	if (json_object_object_get_ex(o, "ts", &v))
		r->ts = json_object_get_double(v);
	state = dup_field(o, "state");
	for (i = 0; state && i < GC_ARRAY_LEN(state_names); i++) {
		if (strcmp(state, state_names[i]) == 0) {
			r->state = (enum gc_jstate)i;
			rc = 0;
		}
	}
	free(state);
	if (r->run == NULL || r->target == NULL || r->kind == NULL)
		rc = -1;
out:
	json_object_put(o);
	json_tokener_free(tok);
	return rc;
}

static void record_free(struct gc_jrecord *r)
{
	free(r->run);
	free(r->target);
	free(r->action);
	free(r->kind);
	free(r->detail);
}

int gc_journal_parse(struct gc_jhistory *out, const char *name, const char *data, size_t len,
		     struct gc_error *err)
{
	struct gc_jhistory h = {NULL, 0};
	const char *p;
	size_t lineno = 0;

	for (p = data; p < data + len;) {
		const char *nl = memchr(p, '\n', (size_t)(data + len - p));
		struct gc_jrecord r;

		lineno++;
		if (nl == NULL)
			break; /* torn last line: the writer died mid-record */
		if (nl > p) {
			if (parse_record(&r, p, (size_t)(nl - p)) != 0) {
				record_free(&r);
				gc_jhistory_free(&h);
				return gc_error_set(err, GC_EIO, "%s:%zu: corrupt journal record", name,
						    lineno);
			}
			h.records = gc_xrealloc(h.records, (h.n + 1) * sizeof(*h.records));
			h.records[h.n++] = r;
		}
		p = nl + 1;
	}
	*out = h;
	return 0;
}

int gc_journal_read(struct gc_jhistory *out, const char *state_dir, const char *cluster,
		    struct gc_error *err)
{
	char *path, *data = NULL;
	size_t len = 0;
	int rc;

	path = state_path(state_dir, cluster, "journal", err);
	if (path == NULL)
		return err->code;
	if (access(path, F_OK) != 0) {
		free(path);
		out->records = NULL;
		out->n = 0;
		return 0;
	}
	rc = gc_read_file(&data, &len, path, JOURNAL_MAX, err);
	if (rc == 0)
		rc = gc_journal_parse(out, path, data, len, err);
	free(data);
	free(path);
	return rc;
}

void gc_jhistory_free(struct gc_jhistory *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		record_free(&h->records[i]);
	free(h->records);
	h->records = NULL;
	h->n = 0;
}

int gc_jhistory_last(const struct gc_jhistory *h, const char *target, const char *kind)
{
	size_t i = h->n;

	while (i-- > 0) {
		if (strcmp(h->records[i].target, target) == 0 && strcmp(h->records[i].kind, kind) == 0)
			return (int)h->records[i].state;
	}
	return -1;
}

struct gc_lock {
	int fd;
	char *path;
};

int gc_lock_acquire(struct gc_lock **out, const char *state_dir, const char *cluster,
		    struct gc_error *err)
{
	char host[256] = "", holder[512] = "", *path;
	struct gc_lock *l;
	ssize_t n;
	int fd;

	if (ensure_dir(state_dir, err) != 0)
		return err->code;
	path = state_path(state_dir, cluster, "lock", err);
	if (path == NULL)
		return err->code;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		gc_error_set_errno(err, GC_EIO, errno, "cannot open lock '%s'", path);
		free(path);
		return err->code;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		n = pread(fd, holder, sizeof(holder) - 1, 0);
		holder[n > 0 ? n : 0] = '\0';
		holder[strcspn(holder, "\n")] = '\0';
		close(fd);
		if (e == EWOULDBLOCK)
			gc_error_set(err, GC_ELOCKED,
				     "cluster '%s' is locked by another apply (%s); lock file '%s'",
				     cluster, holder[0] ? holder : "holder unknown", path);
		else
			gc_error_set_errno(err, GC_EIO, e, "cannot lock '%s'", path);
		free(path);
		return err->code;
	}
	gethostname(host, sizeof(host) - 1);
	{
		char info[512];
		time_t now = time(NULL);
		struct tm tm;
		char when[32];
		int len;

		gmtime_r(&now, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		len = snprintf(info, sizeof(info), "pid %d on %s since %s\n", (int)getpid(), host, when);
		if (ftruncate(fd, 0) != 0 || pwrite(fd, info, (size_t)len, 0) != len) {
			gc_error_set_errno(err, GC_EIO, errno, "cannot write lock '%s'", path);
			close(fd);
			free(path);
			return err->code;
		}
	}
	l = gc_xcalloc(1, sizeof(*l));
	l->fd = fd;
	l->path = path;
	*out = l;
	return 0;
}

void gc_lock_release(struct gc_lock *l)
{
	if (l == NULL)
		return;
	if (ftruncate(l->fd, 0) != 0) {
		/* the holder line is informational only; the flock is what counts */
	}
	flock(l->fd, LOCK_UN);
	close(l->fd);
	free(l->path);
	free(l);
}
