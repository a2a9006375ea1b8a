/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where the TUI's model gets its content: a live collector (watch__run on its own thread), a
 * recorded trace replayed in time, or a snapshot taken without root. All fill the same model.
 */
#ifndef DLSCOPE_UI_SOURCE_H
#define DLSCOPE_UI_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model.h"

struct watch_opts;

/*
 * A recorded trace, read from its file as it plays: what is held is one record read ahead and
 * a few numbers, whatever the trace's size. Seeking back rebuilds the model from the start.
 */
struct replay {
	FILE *f;
	char *buf;		       /* one line, REPLAY_MAX_LINE bytes */
	size_t n, pos;		       /* good records; pos: the next to apply */
	char *next;		       /* the record at pos, read ahead (NULL at the end) */
	uint64_t next_t;	       /* its time, made non-decreasing */
	uint64_t applied_t;	       /* the time of the last record applied */
	uint64_t t_first, t_last, now; /* now: trace time shown */
	/*
	 * The first state, where a replay opens and '{' goes: the time of the first record and of
	 * the "loaded" records right after it (a -p target's libraries, an exec's start-up objects).
	 */
	uint64_t t_open;
	size_t skipped;	      /* bad lines left out: not JSON, too long, or cut short */
	size_t first_skipped; /* the line number of the first of them */
	double speed;	      /* 1: real time; 0: as fast as possible */
	bool paused;
	double wall_anchor; /* wall seconds when now was trace_anchor */
	uint64_t trace_anchor;
	json_t *hosts; /* a merged trace's hosts (dlscope merge), from its header */
};

/* The longest record a trace may hold; a longer line is bad (a stack has 127 frames at most). */
#define REPLAY_MAX_LINE (1 << 20)

/*
 * Open a trace (every line one JSON object, the first a dlscope header) and read it through
 * once to count and time its records. A bad line (a cut last line of a killed record, a line
 * that is not a JSON object) is left out and counted in skipped; with @strict it rejects the
 * trace instead. Returns 0 or -errno with one line in @why naming the file and the line.
 */
int replay__open(const char *path, bool strict, struct replay **out, char *why, size_t whylen);
void replay__free(struct replay *r);
/* Back to before the first record (the model is the caller's to reset). */
void replay__rewind(struct replay *r);
/* Show trace time @t (clamped to t_open..t_last): forward applies, backward rebuilds. */
void replay__seek(struct replay *r, struct model *m, uint64_t t, double wall_now);
/* Play on to wall time @wall_now, applying at most @budget records. Returns how many. */
size_t replay__tick(struct replay *r, struct model *m, double wall_now, size_t budget);
void replay__pause(struct replay *r, bool paused, double wall_now);
void replay__set_speed(struct replay *r, double speed, double wall_now);
bool replay__at_end(const struct replay *r);

/* The live collector: watch__run on a thread, its records through a bounded queue. */
struct live;

/*
 * Start watching with @o (copied; sink and stop are set here). Returns 0 or -errno.
 * The collector's own failures (not root, no BTF) arrive later through live__finished.
 */
int live__start(const struct watch_opts *o, struct live **out);
/* Apply at most @budget queued records to @m on the caller's thread. Returns how many. */
size_t live__drain(struct live *l, struct model *m, size_t budget);
/* True once the collector returned; @err and @why say how. */
bool live__finished(struct live *l, int *err, char *why, size_t whylen);
/* Records dropped because the UI fell behind (plain events only; graph records are kept). */
unsigned long long live__dropped(struct live *l);
/* Stop the collector, wait for it and free everything. */
void live__free(struct live *l);

/*
 * Snapshot @pid without root: library graph, runtime roles, every detector's findings, threads
 * with the lock-wait graph and, when @stacks, every thread's stack (the threads are stopped
 * only to copy their registers: stacks__capture). Replaces what @m knew from a previous
 * snapshot of @pid. Returns 0 or -errno with one line in @why; a failure after the graph was
 * read (threads, stacks) is only a warning in @warn.
 */
int snapshot__take(struct model *m, pid_t pid, bool stacks, char *why, size_t whylen, char *warn,
		   size_t warnlen);
/*
 * Let go of the threads a snapshot could not stop in time, once they stop or exit
 * (stacks__release_pending), waiting up to @wait_ms. The TUI's thread, which takes every
 * snapshot (in live mode too), calls it on every tick and before it ends. Returns how many
 * are still held.
 */
size_t snapshot__release(unsigned int wait_ms);

#endif
