/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The detectors of dlscope check, lint and the live collector (watch, record, ui). Each lives in
 * its own det_*.c file and is one row of the table in detectors.c: adding a detector is adding a
 * file and a row. A live finding is built by the same code as the batch one, so both carry the
 * same id, severity, title form, evidence, why and fix.
 */
#ifndef DLSCOPE_DETECTOR_H
#define DLSCOPE_DETECTOR_H

#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "finding.h"
#include "rank_view.h"

struct target;
struct libgraph;
struct threadscan;
struct elf_object;
struct runtime_list;
struct lockwait_report;

/* What a process-level detector may look at. Nothing here stops the process. */
struct check_ctx {
	const struct target *t;
	const struct libgraph *g;
	const struct threadscan *ts;   /* NULL when the threads could not be read */
	const struct runtime_list *rt; /* the runtime inventory; NULL: detectors make their own */
	/* The lock-wait graph the caller built (one inspection); NULL: none, no deadlock judged. */
	const struct lockwait_report *lw;
};

/* One file of lint, or one loaded object of check. */
struct lint_file {
	const char *path; /* as shown to the user */
	struct elf_object *elf;
};

/* A job's ranks (rank_view.h), of one host or many; each job detector adds its part of the
 * cross-rank diff. */
struct job_ctx {
	pid_t launcher;	  /* 0: none on this host (a Slurm job read on its nodes) */
	const char *name; /* "job 1234" (its launcher), "Slurm job 12": in the findings' titles */
	const struct rank_view *r;
	size_t n;
	json_t *diff; /* an object: "objects", "environment", "cpus" */
};

struct lg_object;

/*
 * What the live collector knows of a process when a live hook runs: its model (the objects read
 * from its link maps), of which only those already reported to the user count as present; the
 * rest arrive after the event being handled.
 */
struct live_ctx {
	const struct libgraph *g;
	bool (*reported)(const struct live_ctx *lc, const struct lg_object *o);
	void *arg; /* the collector's */
	/* How the call that brought the object was made, when a Python thread made it:
	 * "`import sklearn` at train.py:3"; NULL when unknown. */
	const char *arrived_through;
	/* Called between pieces of a long judgement: the collector's threads held in their
	 * loader get its lock meanwhile. NULL: nothing to let in (check, lint). */
	void (*pause)(void *pause_arg);
	void *pause_arg;
};

/* A detector's yield point inside long work (struct live_ctx: pause). */
static inline void live_ctx__pause(const struct live_ctx *lc)
{
	if (lc && lc->pause)
		lc->pause(lc->pause_arg);
}

/* Live events a detector can judge, decoded by the collector. */
enum live_event_kind {
	LIVE_PARALLEL_IN_DLOPEN, /* a thread inside dlopen started a parallel region or BLAS call */
	LIVE_FUTEX_IN_DLOPEN,	 /* a thread inside dlopen blocks on a futex */
	LIVE_LOADER_LOCK_CYCLE,	 /* that thread, and another waiting in dlsym for the loader lock */
	LIVE_DLOPEN_FAILED,	 /* a dlopen returned NULL, with dlerror's text */
};

/* OpenMP and BLAS entry points of LIVE_PARALLEL_IN_DLOPEN (the BPF probes' numbering). */
enum live_parallel_entry {
	LIVE_GOMP_PARALLEL = 1,
	LIVE_GOMP_PARALLEL_START = 2,
	LIVE_KMPC_FORK_CALL = 3,
	LIVE_OPENBLAS_EXEC = 4,
};

struct live_event {
	enum live_event_kind kind;
	pid_t pid, tid;		 /* the thread inside dlopen */
	const char *comm;	 /* its name */
	unsigned int entry;	 /* LIVE_PARALLEL_IN_DLOPEN: an enum live_parallel_entry */
	const char *dlopen_file; /* the file the dlopen loads; NULL or "" when unknown */
	/* LIVE_LOADER_LOCK_CYCLE: the thread that waits in dlsym, and the symbol it looks up. */
	pid_t waiter_tid;
	const char *waiter_symbol;
	/* LIVE_DLOPEN_FAILED: dlerror's text (without the object's name), the process opened
	 * for reading (NULL: gone), and the file the dlopen named as an absolute path the
	 * process sees (a relative one from its working directory; NULL for a bare name, which
	 * the loader searched for). */
	const char *error;
	const struct target *t;
	const char *file;
};

struct detector {
	const char *id;
	/* Its findings' severity, unless the finding itself says less (a BLAS beside a plain one). */
	enum severity severity;
	const char *summary;
	/* On a live process; NULL when the detector only looks at files. */
	void (*process)(const struct check_ctx *ctx, struct findings *out);
	/* On a set of files with no process (lint); NULL when it needs a process. */
	void (*files)(const struct lint_file *files, size_t n, struct findings *out);
	/* Live: the model gained @o, now reported. NULL when the detector has no live rule. */
	void (*on_object)(const struct live_ctx *lc, const struct lg_object *o,
			  struct findings *out);
	/* Live: an event of the process. NULL when the detector judges none. */
	void (*on_event)(const struct live_ctx *lc, const struct live_event *e,
			 struct findings *out);
	/* Across the ranks of a job (check --job). NULL when the detector looks at one process. */
	void (*job)(const struct job_ctx *ctx, struct findings *out);
};

extern const struct detector detectors[];
extern const size_t n_detectors;

/* The detector of id @id, or NULL. */
const struct detector *detector__find(const char *id);
/* Every detector's live hook, in table order; findings are appended to @out. */
void detectors__on_object(const struct live_ctx *lc, const struct lg_object *o,
			  struct findings *out);
void detectors__on_event(const struct live_ctx *lc, const struct live_event *e,
			 struct findings *out);

/* Detector entry points, one pair per det_*.c. */
void dup_openmp__process(const struct check_ctx *ctx, struct findings *out);
void dup_openmp__on_object(const struct live_ctx *lc, const struct lg_object *o,
			   struct findings *out);
void dup_gpu__process(const struct check_ctx *ctx, struct findings *out);
void dup_gpu__on_object(const struct live_ctx *lc, const struct lg_object *o, struct findings *out);
void cuda_driver__process(const struct check_ctx *ctx, struct findings *out);
void dup_blas__process(const struct check_ctx *ctx, struct findings *out);
void dup_blas__on_object(const struct live_ctx *lc, const struct lg_object *o,
			 struct findings *out);
void dup_cxx__process(const struct check_ctx *ctx, struct findings *out);
void dup_cxx__files(const struct lint_file *files, size_t n, struct findings *out);
void dup_cxx__on_object(const struct live_ctx *lc, const struct lg_object *o, struct findings *out);
void dup_library__process(const struct check_ctx *ctx, struct findings *out);
/* Its findings of one library loaded more than once (det_dup_copies.c). */
void dup_library__copies(const struct check_ctx *ctx, struct findings *out);
void dup_library__files(const struct lint_file *files, size_t n, struct findings *out);
void dup_library__on_object(const struct live_ctx *lc, const struct lg_object *o,
			    struct findings *out);
void abi_mismatch__process(const struct check_ctx *ctx, struct findings *out);
void abi_mismatch__files(const struct lint_file *files, size_t n, struct findings *out);
void loader_lock__process(const struct check_ctx *ctx, struct findings *out);
void loader_lock__on_event(const struct live_ctx *lc, const struct live_event *e,
			   struct findings *out);
void deadlock__process(const struct check_ctx *ctx, struct findings *out);
void fork_hang__process(const struct check_ctx *ctx, struct findings *out);
void deadlock__on_event(const struct live_ctx *lc, const struct live_event *e,
			struct findings *out);
void shadowed__process(const struct check_ctx *ctx, struct findings *out);
void shadowed__on_event(const struct live_ctx *lc, const struct live_event *e,
			struct findings *out);
void dup_proto__process(const struct check_ctx *ctx, struct findings *out);
void dup_proto__files(const struct lint_file *files, size_t n, struct findings *out);
void static_tls__files(const struct lint_file *files, size_t n, struct findings *out);
void static_tls__on_event(const struct live_ctx *lc, const struct live_event *e,
			  struct findings *out);
void elf_defects__process(const struct check_ctx *ctx, struct findings *out);
void elf_defects__files(const struct lint_file *files, size_t n, struct findings *out);

void rank_gpu__job(const struct job_ctx *ctx, struct findings *out);
void rank_objects__job(const struct job_ctx *ctx, struct findings *out);
void rank_environment__job(const struct job_ctx *ctx, struct findings *out);
void oversubscription__job(const struct job_ctx *ctx, struct findings *out);

/* Live (watch --hot): the thread pools of one process that ran regions in the same second. */
struct live_pool {
	const char *runtime;	    /* the object */
	unsigned long long regions; /* in that second */
	int pool_threads;	    /* its pool's threads (besides those that start regions) */
};
struct live_pools {
	pid_t pid;
	const char *comm;
	const struct live_pool *p;
	size_t n;
	int starters;	       /* the threads that started regions in them */
	int ncpu;	       /* CPUs the process may use */
	const char *cpus_list; /* "0-3" */
};
void oversubscription__live(const struct live_pools *lp, struct findings *out);

/* Live (watch --hot): a pthreads OpenBLAS dispatched to by threads of an OpenMP pool. */
struct live_nested {
	pid_t pid;
	const char *comm;
	const char *blas, *openmp; /* the objects */
	int omp_callers;	   /* threads of the OpenMP pool that dispatched BLAS calls */
	unsigned long long calls;  /* their dispatches, in that second */
	int blas_pool;		   /* OpenBLAS's pool threads */
	int omp_pool;		   /* the OpenMP runtime's pool threads */
	int ncpu;
	const char *cpus_list;
};
void blas_in_parallel__live(const struct live_nested *ln, struct findings *out);
void blas_in_parallel__process(const struct check_ctx *ctx, struct findings *out);

#endif
