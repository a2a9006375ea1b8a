/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The runtime inventory of a process: each OpenMP, BLAS/LAPACK, C++, TBB, oneDNN and GPU runtime
 * once, with the fronts that forward to it (Debian's libblas.so.3 and liblapack.so.3 in front of
 * libopenblas.so.0), its real file, version, threading layer and pool size. The one rule that
 * check, libs, watch and the TUI use to decide what is "a second runtime".
 */
#ifndef DLSCOPE_RUNTIMES_H
#define DLSCOPE_RUNTIMES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "roles.h"

struct libgraph;
struct target;
struct threadscan;

struct runtime {
	unsigned int obj;     /* the implementing object, an id of the graph */
	struct obj_role role; /* its role of this kind */
	bool static_copy;     /* a libstdc++ linked into another object, not a library */
	char *real_path;      /* the file behind the link-map name, as the target sees it */
	char threading[16];   /* "pthreads", "openmp", "disabled" (sequential); "" unknown */
	int num_threads;      /* threads its next parallel call would use; -1 unknown */
	const char *num_threads_from; /* where that was read: a variable, the environment... */
	int pool_threads;  /* threads of its pool (its start routine started them, or parked in it);
			   * -1 when threads were not read */
	int pool_running;  /* of them, those /proc said were running (state R); -1 as above */
	char *vendor_file; /* an OpenCL ICD driver: the vendor file that named it (the loader's
			    * /etc/OpenCL/vendors/pocl.icd, as the target sees it); NULL none */
	unsigned int *fronts; /* objects of the same kind that forward to it */
	size_t n_fronts, cap_fronts;
};

struct runtime_list {
	struct runtime *r;
	size_t n;
};

/* Does object @id forward its role of kind @kind to another object (a front)? */
bool runtimes__is_front(const struct libgraph *g, unsigned int id, enum role_kind kind);

/* The object @id is a front for (libblas.so.3 -> libopenblas.so.0), or -1 when it is none. */
int runtimes__front_of(const struct libgraph *g, unsigned int id);

/*
 * Role @k of object @id in words, for every command alike: a front is named as the front of
 * what it forwards to ("BLAS/LAPACK: front of libopenblas.so.0 (OpenBLAS 0.3.21)").
 */
void runtimes__describe_role(const struct libgraph *g, unsigned int id, unsigned int k, char *buf,
			     size_t len);

/* Object @id's roles as JSON (graph_export's form), a front's with "front_of": the path. */
json_t *runtimes__roles_json(const struct libgraph *g, unsigned int id);

/*
 * The rule that makes an inventory of roles, the one check, libs, watch, report and check TRACE
 * decide by: a role of an object that forwards to another object of its kind (a front: @impl,
 * the key of that object, differs from @self) belongs to the runtime of that kind on that
 * object; every other role is a runtime. The keys are the caller's (graph ids, trace records).
 */
struct rt_ref {
	enum role_kind kind;
	long self, impl;
};
/* Fills @owner[i]: the index of the runtime that @refs[i] belongs to (i for a runtime itself, and
 * for a front whose runtime is not in @refs). */
void runtimes__group(const struct rt_ref *refs, size_t n, size_t *owner);

/*
 * The inventory of a process of a trace, from its `loaded` records (@recs, JSON array, one per
 * object: docs/trace-format.md): RUNTIME[] of docs/check-schema.md, each front (a role with
 * `front_of`) under the runtime it forwards to, by runtimes__group as a live check; what only a
 * live process shows (threads, real path, object id) is null. NULL without memory.
 */
json_t *runtimes__from_loaded(const json_t *recs);

/*
 * The inventory of @g. @t (for live values: pool sizes, environment) and @ts (pool threads)
 * may be NULL. Returns 0 or -ENOMEM.
 */
int runtimes__collect(const struct libgraph *g, const struct target *t, const struct threadscan *ts,
		      struct runtime_list *out);
/* The runtimes of kind @kind alone, from the graph (no live values): the live detectors'. */
int runtimes__collect_kind(const struct libgraph *g, enum role_kind kind, struct runtime_list *out);
void runtimes__free(struct runtime_list *l);

/* The runtimes of kind @k: fills @idx (indexes into @l) and returns how many. */
size_t runtimes__of_kind(const struct runtime_list *l, enum role_kind k, size_t *idx, size_t max);

struct thread_info;
/*
 * What a GPU runtime's thread is, in words, or false: by the name the runtime gives it
 * ("cuda-EvtHandlr": the CUDA driver's event handler; NCCL's "NCCL Service"/"NCCL Progress"
 * proxy threads; PyTorch's "pt_nccl_watchdg" watchdog), else by the GPU runtime its start
 * routine lies in ("started by NCCL 2.18.1 (libnccl.so.2)").
 */
bool runtimes__gpu_thread(const struct libgraph *g, const struct thread_info *ti, char *buf,
			  size_t len);

/* One line per runtime, duplicated kinds first; @indent before each line. */
void runtimes__print(const struct runtime_list *l, const struct libgraph *g, const char *indent,
		     FILE *f);
json_t *runtimes__to_json(const struct runtime_list *l, const struct libgraph *g);

#endif
