// SPDX-License-Identifier: GPL-2.0
/*
 * loader-lock-hazard: a thread running library constructors inside dlopen (ld.so frames on its
 * stack, outer to the rest) that is inside, or waiting on, an OpenMP or BLAS parallel region
 * (a runtime's frames inner to them). dlopen holds glibc's loader lock all that while; the
 * region's workers that call dlsym/dlopen wait for it, and the master waits for them.
 */
#include <stdio.h>
#include <string.h>

#include "detector.h"
#include "libgraph.h"
#include "target.h"
#include "threadscan.h"

#define NR_FUTEX 202

static bool is_loader(const struct libgraph *g, unsigned int id)
{
	return obj_roles__find(lg_object__roles(g->objs[id]), ROLE_LOADER) != NULL;
}

static const struct obj_role *parallel_role(const struct libgraph *g, unsigned int id)
{
	const struct obj_roles *r = lg_object__roles(g->objs[id]);
	const struct obj_role *role = obj_roles__find(r, ROLE_OPENMP);

	return role ? role : obj_roles__find(r, ROLE_BLAS);
}

static bool is_system(const struct libgraph *g, unsigned int id)
{
	const struct obj_roles *r = lg_object__roles(g->objs[id]);

	return obj_roles__find(r, ROLE_LIBC) || obj_roles__find(r, ROLE_LOADER);
}

/* Threads other than @skip whose stack goes from a runtime into the loader (dlsym, dlopen). */
static unsigned int workers_in_loader(const struct check_ctx *ctx, pid_t skip, char *tids,
				      size_t len)
{
	unsigned int n = 0;
	size_t used = 0;

	tids[0] = '\0';
	for (size_t i = 0; i < ctx->ts->n; i++) {
		const struct thread_info *ti = &ctx->ts->t[i];
		bool in_runtime = false, then_loader = false;

		if (ti->tid == skip)
			continue;
		for (size_t k = 0; k < ti->n_frames; k++) {
			if (parallel_role(ctx->g, ti->frames[k].obj))
				in_runtime = true;
			else if (in_runtime && is_loader(ctx->g, ti->frames[k].obj))
				then_loader = true;
		}
		if (in_runtime && then_loader) {
			n++;
			if (used < len)
				used += (size_t)snprintf(tids + used, len - used, "%s%d", n > 1 ? ", " : "",
							 ti->tid);
		}
	}
	return n;
}

void loader_lock__process(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;

	if (!ctx->ts)
		return;
	for (size_t i = 0; i < ctx->ts->n; i++) {
		const struct thread_info *ti = &ctx->ts->t[i];
		const struct obj_role *role = NULL;
		ssize_t loader_at = -1, runtime_at = -1, ctor_at = -1;
		unsigned int waiting;
		struct finding *f;
		char tids[256];

		for (size_t k = 0; k < ti->n_frames; k++) {
			unsigned int obj = ti->frames[k].obj;

			if (is_loader(g, obj) && runtime_at < 0) {
				loader_at = (ssize_t)k;
				ctor_at = -1;
			} else if (loader_at >= 0 && ctor_at < 0 && !is_system(g, obj)) {
				ctor_at = (ssize_t)k; /* first object the loader called into */
			}
			if (loader_at >= 0 && runtime_at < 0 && (role = parallel_role(g, obj)))
				runtime_at = (ssize_t)k;
		}
		if (loader_at < 0 || runtime_at < 0)
			continue;
		waiting = workers_in_loader(ctx, ti->tid, tids, sizeof(tids));
		f = findings__add(out, "loader-lock-hazard", SEV_ERROR, g->pid,
				  "thread %d (%s) runs a %s parallel region from a constructor inside "
				  "dlopen%s",
				  ti->tid, ti->comm, role_impl__name(role->impl),
				  waiting ? ", and its workers wait for the loader lock" : "");
		finding__evidence(f, "thread %d: in %s (loader) -> constructor of %s -> %s (%s)%s",
				  ti->tid, lg_object__basename(g->objs[ti->frames[loader_at].obj]),
				  ctor_at >= 0 ?
					  g->objs[ti->frames[ctor_at].obj]->path :
					  "?",
				  lg_object__basename(g->objs[ti->frames[runtime_at].obj]),
				  role_impl__name(role->impl),
				  ti->syscall == NR_FUTEX ? ", blocked in futex wait" : "");
		if (waiting)
			finding__evidence(f,
					  "%u worker thread%s (%s) went from the runtime into the "
					  "loader (dlsym/dlopen) and wait for the lock this thread holds",
					  waiting, waiting == 1 ? "" : "s", tids);
		finding__explain(
			f,
			"dlopen holds glibc's loader lock while constructors run. A parallel region "
			"started there hands work to pool threads; any of them that calls dlsym or "
			"dlopen (MKL and OpenBLAS look up kernels that way) blocks on that lock while "
			"the constructor waits for them at the region's join: a deadlock (always before "
			"glibc 2.34, and still whenever a worker needs the lock for real).",
			"Do no parallel work in constructors or at import time: import the library "
			"that runs it (e.g. numpy) before loading the extension whose constructor "
			"imports it, move the work out of the constructor, or set OMP_NUM_THREADS=1 / "
			"MKL_NUM_THREADS=1 / OPENBLAS_NUM_THREADS=1 while it runs.");
	}
}
