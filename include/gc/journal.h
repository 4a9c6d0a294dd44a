/*
 * journal.h - the apply journal and the cluster lock, under a state
 * directory (default `.gpuclusterctl/` beside the spec).
 *
 * The journal is append-only JSON Lines, fsync'd after every record, one file
 * per cluster (`<state>/<cluster>.journal`).  Re-observation of the targets
 * is the truth about their state; the journal covers what cannot be observed:
 * that a reboot we started has not been confirmed yet, and that a host is in
 * maintenance mode because *we* put it there (so a re-run takes it out).
 * Records never contain secrets: only ids, targets, states and device
 * messages (which drivers scrub).
 *
 * The lock (`<state>/<cluster>.lock`) is an flock(2) held for the whole
 * apply: the kernel drops it when the process dies, even on SIGKILL, so a
 * stale lock cannot strand the cluster.  The file holds the holder's pid,
 * host and start time so a refused second apply can name it.
 */
#ifndef GC_JOURNAL_H
#define GC_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "gc/error.h"

enum gc_jstate { GC_J_START, GC_J_DONE, GC_J_FAILED, GC_J_SKIPPED };

struct gc_jrecord {
	char *run;      /* run id of the apply that wrote it */
	double ts;      /* seconds since the epoch */
	char *target;   /* "esx01", "vcenter", "sn2700" */
	char *action;   /* stable action id from the plan */
	char *kind;     /* "enter_maintenance", "reboot", "apply", ... */
	enum gc_jstate state;
	char *detail;   /* device message or NULL */
};

struct gc_journal;

/* Open (creating the state dir 0700 and the file 0600) for appending. */
int gc_journal_open(struct gc_journal **out, const char *state_dir, const char *cluster,
		    struct gc_error *err);
const char *gc_journal_run_id(const struct gc_journal *j);
/* Append one record; thread-safe. detail may be NULL.  Returns once an
 * fsync that began after the record's write has ended (one fsync may cover
 * the records of several writers: journal.c). */
int gc_journal_append(struct gc_journal *j, const char *target, const char *action,
		      const char *kind, enum gc_jstate state, const char *detail,
		      struct gc_error *err);
/* How many fsyncs the journal has run (tests, benches). */
unsigned long gc_journal_syncs(struct gc_journal *j);
void gc_journal_close(struct gc_journal *j);

/* Everything the journal of a cluster says, oldest first.  A torn last line
 * (the process died mid-write) is ignored; any other bad line is an error. */
struct gc_jhistory {
	struct gc_jrecord *records;
	size_t n;
};
int gc_journal_read(struct gc_jhistory *out, const char *state_dir, const char *cluster,
		    struct gc_error *err);
/* The same from a journal's bytes (name: for messages, "name:line: ...");
 * what gc_journal_read() runs on the file, and fuzz/fuzz_journal.c on
 * anything. */
int gc_journal_parse(struct gc_jhistory *out, const char *name, const char *data, size_t len,
		     struct gc_error *err);
void gc_jhistory_free(struct gc_jhistory *h);
/* The state of the newest record for (target, kind), across runs; -1 when
 * never recorded.  Used for: reboot started but never confirmed,
 * maintenance entered by us and never exited. */
int gc_jhistory_last(const struct gc_jhistory *h, const char *target, const char *kind);

struct gc_lock;
/* Take the cluster lock without waiting; GC_ELOCKED naming the holder when
 * another process has it. */
int gc_lock_acquire(struct gc_lock **out, const char *state_dir, const char *cluster,
		    struct gc_error *err);
void gc_lock_release(struct gc_lock *l);

#endif
