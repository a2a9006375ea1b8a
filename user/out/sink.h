/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where the collector's output goes: watch's text lines, a trace file, the TUI. Each receives
 * the run's header, events, loaded and unloaded objects, findings and summary through one
 * struct of callbacks (any may be NULL); the collector neither formats nor writes anything.
 */
#ifndef DLSCOPE_SINK_H
#define DLSCOPE_SINK_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "event.h"
#include "order.h"

struct finding;
struct libgraph;
struct lg_object;

/*
 * --hot: the parallel regions (or BLAS dispatches) that the threads of one process started in
 * one runtime, over an interval (an "activity" record, a second) or the whole run (the summary).
 */
struct activity_thread {
	pid_t tid;
	uint64_t n;
};
struct activity {
	uint64_t t; /* CLOCK_MONOTONIC ns: when the counts were read */
	pid_t pid;
	const char *runtime;		       /* the object the probes are attached to */
	const char *kind;		       /* "openmp" or "blas" */
	uint64_t n;			       /* in the interval */
	uint64_t total;			       /* since the run started */
	const struct activity_thread *threads; /* each thread's n in the interval, by tid */
	size_t n_threads;
	bool has_rank; /* the process's rank in a job ("rank") */
	int rank;
};

/* The counts of a run, said in its summary. */
struct watch_stats {
	unsigned long long events, lost, findings;
	/*
	 * lost, by cause: the ring buffer (or the stack scratch slots) full, the table of calls
	 * in progress full, and programs the kernel skipped (one BPF program per CPU at a time:
	 * a probe hit while another ran on that CPU is not run; bpf_prog_info.recursion_misses),
	 * and events still in the ring when the run ended (a target sending faster than the
	 * collector reads).
	 */
	unsigned long long lost_ring, lost_calls, lost_skipped, lost_unread;
	double attach_ms;   /* attaching every probe to the initial targets */
	double cpu_s;	    /* the collector's own CPU time, user + system */
	int command_status; /* -1 when no command ran */
	/* --hot: per process and runtime, the run's totals (n == total); regions not counted
	 * because the kernel's table of threads was full. */
	const struct activity *activity;
	size_t n_activity;
	unsigned long long activity_uncounted;
	/*
	 * Threads held at the loader's consistent link map until the new objects' probes were in
	 * place (their total and longest wait), and holds given up because the collector did not
	 * answer in time: the probes of those arrivals may have come after their first calls.
	 */
	unsigned long long holds, holds_late;
	double hold_ms_total, hold_ms_max;
	/* Of the late ones: holds ended, and arrivals not held, as the collector was away (sent a
	 * signal that stops or ends it, or its heartbeat stale: DLW_BEAT_STALE_NS); of those, the
	 * ones for a signal. */
	unsigned long long holds_abandoned, holds_not_held, holds_signalled;
	unsigned long long holds_stale_age_ns; /* the beat's age then, at most; ~0: none yet */
	unsigned long long holds_no_probes;    /* arrivals not held: no probes to put in place */
	/*
	 * Probes in every process that maps a probed file (--comm, --follow, --job): the
	 * processes outside the watch whose calls hit them, their hits, and the busiest few.
	 */
	bool probes_everywhere;
	unsigned long long outside_procs, outside_hits;
	struct outside_proc {
		int pid;
		char comm[64]; /* escaped for a terminal (termsafe.h) */
		unsigned long long hits;
	} outside_top[5];
	size_t n_outside_top;
	/* Processes watched from a running state: what they did before the attach is not seen. */
	unsigned long long attached_running;
	/* Processes that began under a loader not probed before they ran (another root): their
	 * dlopens until it was probed are not seen (a note says each one's window). */
	unsigned long long late_starts;
	double late_start_ms_max;	     /* the longest such window */
	unsigned long long late_starts_gone; /* of those, gone before it could be probed */
	/* Reads of a watched process (its maps, link maps and memory: each takes its mmap lock
	 * for a moment), at its start and after each dlopen or dlclose that changed its objects. */
	unsigned long long reads;
	/* The processes watched now. With watch_opts.live_counts, it and the counts of lost
	 * events and holds above are kept current during the run (each second). */
	unsigned long long procs_now;
};

struct trace_header {
	uint64_t t0; /* CLOCK_MONOTONIC ns: the run's start */
	int64_t realtime_minus_monotonic_ns;
	const pid_t *targets;
	size_t n_targets;
	bool follow, hot;
};

/* An object a process's graph gained (or had when the collector attached). */
struct loaded_obj {
	uint64_t t;
	pid_t pid;
	const struct libgraph *g;
	const struct lg_object *o;
	/* Had when the collector attached: not news to a reader (no text line), but a trace
	 * keeps it, so that a replay starts from the whole graph. */
	bool baseline;
	bool has_rank; /* the process's rank in a job ("rank") */
	int rank;
};

/*
 * A finding of a live detector (check's: id, severity, title, evidence, why, fix) with the time,
 * thread and stack of the event that raised it (@stack NULL: none).
 */
struct live_finding {
	uint64_t t;
	pid_t pid, tid;
	const char *comm;
	const struct finding *f;
	const struct event_stack *stack;
	bool has_rank; /* the process's rank in a job ("rank") */
	int rank;
};

struct event_sink {
	void (*header)(struct event_sink *s, const struct trace_header *h);
	void (*event)(struct event_sink *s, const struct event *ev);
	void (*loaded)(struct event_sink *s, const struct loaded_obj *l);
	/* An object the process no longer has: at @t, by thread @tid's dlclose (or its exec or
	 * exit). */
	void (*unloaded)(struct event_sink *s, uint64_t t, pid_t pid, pid_t tid, const char *path);
	/* A remark for the reader of watch's output, not part of a trace. */
	void (*note)(struct event_sink *s, const char *line);
	void (*finding)(struct event_sink *s, const struct live_finding *f);
	void (*summary)(struct event_sink *s, const struct watch_stats *st);
	/* --hot: one process's regions in one runtime over the last second (n > 0). */
	void (*activity)(struct event_sink *s, const struct activity *a);
	/* A batch of events was handled: a trace being written can be followed (tail -f). */
	void (*flush)(struct event_sink *s);
	/*
	 * No record stamped at or before @horizon (CLOCK_MONOTONIC ns) can come any more: an
	 * ordered sink writes those it holds, oldest first. The summary writes every one.
	 */
	void (*horizon)(struct event_sink *s, uint64_t horizon);
	/* About every 100 ms on the collector's thread, events or not (@now CLOCK_MONOTONIC). */
	void (*tick)(struct event_sink *s, uint64_t now);
	/* Events' stacks are unwound only when a sink keeps them (text shows a finding's). */
	bool wants_stacks;
};

/* watch's output: a line per event, object and finding, times relative to the header's t0. */
struct text_sink {
	struct event_sink s;
	FILE *out;
	uint64_t t0;
	bool ordered;
	struct order_queue q;
};
void text_sink__init(struct text_sink *t, FILE *out);
/* Records held until the collector's horizon passes them (order.h), written in time order. */
void text_sink__order(struct text_sink *t);
void text_sink__drop_held(struct text_sink *t); /* as json_sink__drop_held */

/* Trace records (docs/trace-format.md), each handed to @emit, which borrows it. */
struct json_sink {
	struct event_sink s;
	void (*emit)(void *ctx, json_t *rec);
	void (*flush)(void *ctx);
	void *ctx;
	bool ordered;
	struct order_queue q;
};
void json_sink__init(struct json_sink *j, void (*emit)(void *ctx, json_t *rec),
		     void (*flush)(void *ctx), void *ctx);
/*
 * A trace file: JSON Lines written to a descriptor through a buffer of its own, so that a
 * failed write (a full disk) is known record by record: the records that did not reach the
 * file are counted, and none is written after the first failure (the file ends cut).
 */
struct trace_file {
	int fd;
	char *buf;
	size_t len, cap;
	int err; /* the first write's errno, 0 while every record went out */
	unsigned long long written, unwritten; /* records */
};
/* Records held until the collector's horizon passes them (order.h), emitted in time order. */
void json_sink__order(struct json_sink *j);
/*
 * A run that ended without its summary (an error before or while watching): what an ordered
 * sink still holds is dropped, unwritten. Nothing after a summary, which writes every record.
 */
void json_sink__drop_held(struct json_sink *j);
/* A JSON sink that writes JSON Lines through @tf to @fd (owned: trace_file__close). */
void json_sink__init_file(struct json_sink *j, struct trace_file *tf, int fd);
/* Writes what is buffered and closes the descriptor: 0, or -errno of the first failure. */
int trace_file__close(struct trace_file *tf);

#endif
