/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the TUI shows, and nothing about how: processes, each one's library graph, threads and
 * lock-wait edges, a bounded ring of events and the findings. Live, replayed and snapshot
 * sources all fill it, from trace records (docs/trace-format.md) or from plain values; the
 * views only read it. No ncurses and no /proc here, so the unit tests drive it directly.
 */
#ifndef DLSCOPE_UI_MODEL_H
#define DLSCOPE_UI_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum ev_kind {
	EV_DLOPEN,
	EV_DLCLOSE,
	EV_DLSYM,
	EV_OMP_FORK,
	EV_BLAS_THREAD,
	EV_GPU_LOAD,
	EV_EXEC,
	EV_FORK,
	EV_EXIT,
	EV_SIGNAL,
	EV_FUTEX_WAIT,
	EV_LOADED,
	EV_FINDING,
	EV_ACTIVITY, /* --hot: a runtime's parallel regions or BLAS dispatches in the last second */
	EV__COUNT,
};

struct m_event {
	uint64_t seq; /* 0, 1, 2...: stable across ring rotation */
	uint64_t t;   /* CLOCK_MONOTONIC ns */
	pid_t pid, tid;
	enum ev_kind kind;
	char comm[16];
	char *text;  /* one line: what happened */
	char *lib;   /* the object it concerns (path), or NULL: the library filter */
	char *stack; /* frames, one per line, or NULL */
};

struct m_role {
	char kind[16];	/* "openmp", "blas", "cxx-runtime"... (docs/libs-schema.md) */
	char impl[24];	/* "libgomp" */
	char label[96]; /* "OpenMP runtime: GNU libgomp 5.1" */
	bool front;	/* forwards to another object of its kind: one runtime with it */
};

struct m_lib {
	char *path, *soname;
	unsigned int ns;
	char origin[16];
	char **needed_by;
	size_t n_needed_by;
	struct m_role *roles;
	size_t n_roles;
	bool collision; /* holds a runtime role another object of the process also holds */
};

struct m_thread {
	pid_t tid;
	char comm[64];
	char state;
	char wait_kind[16]; /* "mutex", "loader-lock", "running"... */
	char *waits;	    /* what it waits for, in words, or NULL */
	char *stack;	    /* frames, one per line, or NULL */
	bool in_cycle;	    /* part of a deadlock cycle */
};

struct m_edge {
	pid_t from, to;
	char kind[16];
	char *what;
};

struct m_proc {
	pid_t pid, ppid; /* ppid 0: unknown */
	char comm[64];
	pid_t ns_pid;		       /* its PID in its own PID namespace; 0: ours */
	char container[96];	       /* its container as its cgroup names it; "" for none */
	char rank[16], local_rank[16]; /* "" when unset */
	bool env_read;		       /* rank lookup done (by the source) */
	bool exited;
	int exit_code;
	uint64_t n_events;
	struct m_lib *libs;
	size_t n_libs, cap_libs;
	struct m_thread *threads;
	size_t n_threads;
	struct m_edge *edges;
	size_t n_edges;
	char **verdicts; /* deadlock verdicts and remedies, one paragraph each */
	size_t n_verdicts;
	bool threads_known; /* a snapshot filled threads/edges */
};

struct m_finding {
	pid_t pid;
	uint64_t t;
	char *id, *severity, *title;
	char **evidence;
	size_t n_evidence;
	char *why, *remedy;
	char *stack;
	bool live; /* from the collector (a trace record), not replaced by a snapshot */
};

struct model {
	struct m_proc *procs;
	size_t n_procs, cap_procs;
	struct m_event *ring;
	size_t ring_cap, ring_n; /* the oldest event has seq next_seq - ring_n */
	uint64_t next_seq;
	struct m_finding *findings;
	size_t n_findings, cap_findings;
	uint64_t t0, t_last; /* header t0, latest record time */
	bool has_summary;
	uint64_t summary_events, summary_lost;
	unsigned long long bad_records;
	unsigned int generation; /* bumped on every change: views redraw when it moves */
};

struct event_filter {
	uint32_t kinds; /* bit per enum ev_kind shown; 0 means all */
	pid_t pid;	/* 0: all */
	char lib[128];	/* substring of the event's object, "" for all */
};

/* An empty model keeping the last @ring_cap events. NULL and errno on failure. */
struct model *model__new(size_t ring_cap);
void model__free(struct model *m);
/* Forget everything (replay seeks back by replaying from the start). */
void model__reset(struct model *m);

/*
 * Apply one trace record (header, event, loaded, finding, summary). Returns 0, or -EINVAL for
 * a record that is not an object with a known "type" (counted in bad_records). A "loaded"
 * record adds or updates (same path and namespace) an object of its process, and the event
 * line of its arrival when it has "t" (a snapshot's has none: docs/trace-format.md's record of
 * an object it read, user/out/objrecord.h).
 */
int model__apply(struct model *m, const json_t *rec);

struct m_proc *model__proc(struct model *m, pid_t pid);
/* The process, created when unknown (NULL only when out of memory). */
struct m_proc *model__proc_get(struct model *m, pid_t pid);

/* Replace the threads, edges and verdicts of @p (a snapshot's). Takes the arrays' ownership. */
void model__set_threads(struct model *m, struct m_proc *p, struct m_thread *threads, size_t n,
			struct m_edge *edges, size_t n_edges, char **verdicts, size_t n_verdicts);
/* Add a finding, copying every string; @evidence may be NULL. */
int model__add_finding(struct model *m, pid_t pid, uint64_t t, const char *id, const char *severity,
		       const char *title, const char *const *evidence, size_t n_evidence,
		       const char *why, const char *remedy, const char *stack);
/* Drop @pid's findings from snapshots (a fresh snapshot replaces them); live ones stay. */
void model__drop_snapshot_findings(struct model *m, pid_t pid);
/* Add one event; @text, @lib and @stack are copied. */
int model__add_event(struct model *m, enum ev_kind kind, uint64_t t, pid_t pid, pid_t tid,
		     const char *comm, const char *text, const char *lib, const char *stack);

/* The event of sequence number @seq, or NULL when it left the ring or is not there yet. */
const struct m_event *model__event(const struct model *m, uint64_t seq);
uint64_t model__first_seq(const struct model *m);
bool event_filter__match(const struct event_filter *f, const struct m_event *e);
bool event_filter__active(const struct event_filter *f);

const char *ev_kind__id(enum ev_kind k);

/* One row of the library tree: an object, how deep, whether it has children. */
struct lib_row {
	size_t lib; /* index in m_proc.libs */
	unsigned int depth;
	bool has_children, collapsed;
	size_t other_parents; /* needed by that many objects besides the one it is shown under */
};

/*
 * Flatten @p's graph into tree rows: roots are objects nothing needs (the executable, dlopened
 * ones, the vdso); each other object appears once, under its first parent. @collapsed(path)
 * says which subtrees are folded. Returns the number of rows (*out malloc'd) or -ENOMEM.
 */
ssize_t model__lib_tree(const struct m_proc *p, bool (*collapsed)(void *ctx, const char *path),
			void *ctx, struct lib_row **out);

/* Processes in tree order (children after their parent); depth per row. Returns the count. */
ssize_t model__proc_tree(const struct model *m, size_t **order, unsigned int **depth);

#endif
