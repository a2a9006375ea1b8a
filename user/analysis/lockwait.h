/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lock-wait graph of a process, built without stopping it: which thread waits for which,
 * and why (a pthread mutex and its owner, glibc's loader lock, a join, an OpenMP or BLAS master
 * waiting for its team), every cycle in it, and a verdict in words.
 */
#ifndef DLSCOPE_LOCKWAIT_H
#define DLSCOPE_LOCKWAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct target;
struct libgraph;
struct threadscan;
struct addrmap;
struct py_snapshot;
struct stacks;

enum wait_kind {
	WAIT_RUNNING,	    /* not blocked */
	WAIT_MUTEX,	    /* a pthread mutex with an owner */
	WAIT_LOADER_LOCK,   /* glibc's loader lock (dlopen, dlsym, dlclose, dl_iterate_phdr) */
	WAIT_JOIN,	    /* pthread_join of another thread */
	WAIT_TEAM,	    /* an OpenMP/BLAS master waiting for its team's workers */
	WAIT_FUTEX,	    /* a futex with no owner: condition variable, barrier, semaphore */
	WAIT_SYSCALL,	    /* another blocking system call (I/O, sleep, poll) */
	WAIT_GIL,	    /* CPython's GIL, held by another thread */
	WAIT_PYLOCK,	    /* a Python threading.Lock or RLock */
	WAIT_MUTEX_UNOWNED, /* a mutex whose owner the C library does not record (musl's normal) */
	/* Waits that can never end: */
	WAIT_DEAD_OWNER, /* a mutex whose owner is no thread of the process (exited, or a fork) */
	WAIT_NO_TEAM,	 /* a parallel region waiting for pool workers the process does not have */
};

struct wait_edge {
	pid_t from, to;
	enum wait_kind kind;
	char what[240]; /* "mutex lock_a in hang_abba", "glibc's loader lock" */
};

struct thread_wait {
	pid_t tid;
	char comm[64];
	enum wait_kind kind;
	uint64_t addr;	/* futex address, when waiting on one */
	char what[320]; /* what it waits for, in words */
	bool forever;	/* a wait that can never end (lockwait_report.never_ends) */
};

struct lockwait_report {
	struct thread_wait *threads;
	size_t n_threads;
	struct wait_edge *edges;
	size_t n_edges, cap_edges;
	pid_t **cycles; /* each a list of TIDs in wait order, ending where it started */
	size_t *cycle_len;
	size_t n_cycles, cap_cycles, cap_cycle_len;
	char **verdicts; /* one paragraph per cycle, or one describing the hang without a cycle */
	char **remedies;
	size_t n_verdicts, cap_verdicts, cap_remedies;
	/* A wait that can never end (WAIT_DEAD_OWNER, WAIT_NO_TEAM): a hang as sure as a cycle. */
	bool never_ends;
};

/*
 * Build the graph from @ts (threads and the objects on their stacks), the process's mappings
 * tied to @g (@am, an inspection's) and the target's memory (mutex owners); with @py (its
 * Python threads, NULL when none), the waits for the GIL and for Python locks; with @st (the
 * stacks unwound in the stop, or NULL), a GIL waiter caught between two of its timed waits.
 * 0 or -errno.
 */
int lockwait__analyze(const struct target *t, const struct libgraph *g, const struct addrmap *am,
		      const struct threadscan *ts, const struct py_snapshot *py,
		      const struct stacks *st, struct lockwait_report **out);
void lockwait__free(struct lockwait_report *r);
const char *wait_kind__id(enum wait_kind k);

/* Strongly connected components of size > 1 of a wait graph, as cycles (exposed for tests). */
int lockwait__find_cycles(struct lockwait_report *r);

#endif
