/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One inspection of a live process, read once and shared: the target, its mappings (one read
 * of /proc/PID/maps), the objects the loader has (link maps), the address-to-object lookup,
 * its threads, the lock-wait graph and, on request, every thread's stack. check, stacks and
 * the TUI's snapshot all read a process through this.
 */
#ifndef DLSCOPE_INSPECT_H
#define DLSCOPE_INSPECT_H

#include <stddef.h>
#include <sys/types.h>

#include "pystate.h"

enum inspect_what {
	INSPECT_THREADS = 1 << 0,     /* the threads and the objects on their stacks */
	INSPECT_LOCKWAIT = 1 << 1,    /* the lock-wait graph (reads the threads too) */
	INSPECT_STACKS = 1 << 2,      /* every thread's stack: the threads are stopped a moment */
	INSPECT_PYTHON_ONLY = 1 << 3, /* with INSPECT_STACKS: a CPython's Python frames alone */
};

struct inspection {
	struct target *t;
	struct procmaps *maps;
	struct libgraph *g;
	struct addrmap *am;
	/* Each part asked for, or the -errno that kept it out (the inspection still holds). */
	struct threadscan *ts;
	int ts_err;
	struct lockwait_report *lw;
	int lw_err;
	struct stacks *stacks;
	int stacks_err;
	char stacks_why[512]; /* why the stacks are missing, in one line */
	/* The CPython interpreter it runs, when py_err is 0 (-ENOENT: not Python). */
	struct py_interp py;
	int py_err;
	char py_why[256];
	/* Its Python threads read without a stop, for the lock-wait graph when no stacks are. */
	struct py_snapshot *py_live;
};

/*
 * Open @pid (target__open): the one step that refuses a process (gone, zombie, kernel thread,
 * not ours to read). Returns 0, or -errno with a one-line reason in @why.
 */
int inspection__new(pid_t pid, struct inspection **out, char *why, size_t whylen);
/*
 * An inspection of @t, which it owns from now on (a core file's target__from_core): what
 * needs the live process (threads, lock-wait graph, stacks) stays out, its _err -ENOTSUP.
 */
struct inspection *inspection__from_target(struct target *t);
/*
 * Read what @what names (enum inspect_what), after the mappings and the objects, which are
 * always read. Stacks have at most @max_frames frames. Returns 0 when the objects could be
 * read (a missing part says why in its _err), or -errno with a one-line reason in @why.
 */
int inspection__read(struct inspection *in, unsigned int what, unsigned int max_frames, char *why,
		     size_t whylen);
void inspection__free(struct inspection *in);

#endif
