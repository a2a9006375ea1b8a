// SPDX-License-Identifier: GPL-2.0
/*
 * loader-lock-hazard: a thread running library constructors inside dlopen (ld.so frames on its
 * stack, outer to the rest) that is inside, or waiting on, an OpenMP or BLAS parallel region
 * (a runtime's frames inner to them). dlopen holds glibc's loader lock all that while; the
 * region's workers that call dlsym/dlopen wait for it, and the master waits for them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
#include "runtimes.h"
#include "target.h"
#include "threadscan.h"

static const struct obj_role *parallel_role(const struct libgraph *g, unsigned int id)
{
	const struct obj_roles *r = lg_object__roles(g->objs[id]);
	const struct obj_role *role = obj_roles__find(r, ROLE_OPENMP);

	return role ? role : obj_roles__find(r, ROLE_BLAS);
}

/*
 * A frame that takes the loader lock: ld.so's code, or libc's dl* entry points (since glibc
 * 2.34 dlsym and dlopen live in libc and wait for the lock there).
 */
static bool enters_loader(const struct libgraph *g, const struct thread_frame *fr)
{
	const struct lg_object *o = g->objs[fr->obj];
	const char *name = NULL;
	uint64_t off;

	if (lg_object__is_loader(g->objs[fr->obj]))
		return true;
	if (!obj_roles__find(lg_object__roles(o), ROLE_LIBC) || !o->elf ||
	    elfobj__symbol_at(o->elf, fr->addr - o->base, true, &name, &off))
		return false;
	name += strspn(name, "_");
	return !strncmp(name, "dlsym", 5) || !strncmp(name, "dlvsym", 6) ||
	       !strncmp(name, "dlopen", 6) || !strncmp(name, "dlmopen", 7) ||
	       !strncmp(name, "dlclose", 7) || !strncmp(name, "dlerror_run", 11);
}

/*
 * Where a worker entered the loader: the innermost frame of ordinary code before libc/ld.so,
 * named "function (object)". Empty when it cannot be told.
 */
static void loader_call_site(const struct check_ctx *ctx, const struct thread_info *ti, size_t from,
			     char *buf, size_t len)
{
	const struct libgraph *g = ctx->g;
	ssize_t site = -1;

	buf[0] = '\0';
	for (size_t k = from; k < ti->n_frames; k++) {
		if (lg_object__is_system(g->objs[ti->frames[k].obj]))
			break;
		site = (ssize_t)k;
	}
	if (site >= 0) {
		const struct lg_object *o = g->objs[ti->frames[site].obj];
		const char *name = NULL;
		uint64_t off;

		if (o->elf &&
		    !elfobj__symbol_at(o->elf, ti->frames[site].addr - o->base, true, &name, &off))
			snprintf(buf, len, "%s (%s)", name, lg_object__basename(o));
		else
			snprintf(buf, len, "0x%" PRIx64 " (%s)", ti->frames[site].addr,
				 lg_object__basename(o));
	}
}

/*
 * Threads other than @skip whose stack goes from a runtime into the loader (dlsym, dlopen);
 * @site gets the call into the loader of the first of them.
 */
static unsigned int workers_in_loader(const struct check_ctx *ctx, pid_t skip, char *tids,
				      size_t len, char *site, size_t sitelen)
{
	unsigned int n = 0;
	size_t used = 0;

	tids[0] = site[0] = '\0';
	for (size_t i = 0; i < ctx->ts->n; i++) {
		const struct thread_info *ti = &ctx->ts->t[i];
		bool then_loader = false;
		ssize_t runtime_at = -1;

		if (ti->tid == skip)
			continue;
		for (size_t k = 0; k < ti->n_frames; k++) {
			if (parallel_role(ctx->g, ti->frames[k].obj))
				runtime_at = (ssize_t)k;
			else if (runtime_at >= 0 && enters_loader(ctx->g, &ti->frames[k]))
				then_loader = true;
		}
		if (runtime_at >= 0 && then_loader) {
			if (!n++)
				loader_call_site(ctx, ti, (size_t)runtime_at + 1, site, sitelen);
			if (used < len)
				used += (size_t)snprintf(tids + used, len - used, "%s%d",
							 n > 1 ? ", " : "", ti->tid);
		}
	}
	return n;
}

/*
 * Does the code choose its team size itself (a num_threads clause, omp_set_num_threads)? Then
 * OMP_NUM_THREADS cannot help. Known when the region runs more threads than the environment
 * allows (OMP_NUM_THREADS=1 with workers), or than the runtime's default.
 */
static bool team_size_set_by_code(const struct check_ctx *ctx, unsigned int runtime_obj)
{
	unsigned int workers = 0;
	char env[32];

	for (size_t i = 0; ctx->rt && i < ctx->rt->n; i++)
		if (ctx->rt->r[i].obj == runtime_obj && ctx->rt->r[i].pool_threads > 0)
			workers = (unsigned)ctx->rt->r[i].pool_threads;

	if (ctx->t && !target__getenv(ctx->t, "OMP_NUM_THREADS", env, sizeof(env)) &&
	    atoi(env) > 0 && workers + 1 > (unsigned)atoi(env))
		return true;
	for (size_t i = 0; ctx->rt && i < ctx->rt->n; i++)
		if (ctx->rt->r[i].obj == runtime_obj && ctx->rt->r[i].num_threads > 0 &&
		    ctx->rt->r[i].pool_threads >= 0 &&
		    (unsigned)ctx->rt->r[i].num_threads < workers + 1)
			return true;
	return false;
}

static const char why[] =
	"dlopen holds glibc's loader lock while constructors run. A parallel region "
	"started there hands work to pool threads; any of them that calls dlsym or "
	"dlopen (MKL and OpenBLAS look up kernels that way) blocks on that lock while "
	"the constructor waits for them at the region's join: a deadlock (always before "
	"glibc 2.34, and still whenever a worker needs the lock for real).";
static const char fix_code_sets_team[] =
	"Do no parallel work in constructors or at import time: move the "
	"region (or the dlsym/dlopen its workers make) out of the constructor, "
	"or import the library that runs it before loading the extension. The "
	"code sets its team size itself (num_threads or omp_set_num_threads), "
	"so OMP_NUM_THREADS does not help here.";
static const char fix[] = "Do no parallel work in constructors or at import time: import the "
			  "library that runs it (e.g. numpy) before loading the extension whose "
			  "constructor imports it, move the work out of the constructor, or, "
			  "unless the code sets its team size itself, set OMP_NUM_THREADS=1 / "
			  "MKL_NUM_THREADS=1 / OPENBLAS_NUM_THREADS=1 while it runs.";

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
		char tids[256], site[256];

		for (size_t k = 0; k < ti->n_frames; k++) {
			unsigned int obj = ti->frames[k].obj;

			if (lg_object__is_loader(g->objs[obj]) && runtime_at < 0) {
				loader_at = (ssize_t)k;
				ctor_at = -1;
			} else if (loader_at >= 0 && ctor_at < 0 &&
				   !lg_object__is_system(g->objs[obj])) {
				ctor_at = (ssize_t)k; /* first object the loader called into */
			}
			if (loader_at >= 0 && runtime_at < 0 && (role = parallel_role(g, obj)))
				runtime_at = (ssize_t)k;
		}
		if (loader_at < 0 || runtime_at < 0)
			continue;
		waiting = workers_in_loader(ctx, ti->tid, tids, sizeof(tids), site, sizeof(site));
		f = findings__add(
			out, "loader-lock-hazard", SEV_ERROR, g->pid,
			"thread %d (%s) runs a %s parallel region from a constructor inside "
			"dlopen%s",
			ti->tid, ti->comm, role_impl__name(role->impl),
			waiting ? ", and its workers wait for the loader lock" : "");
		finding__evidence(f, "thread %d: in %s (loader) -> constructor of %s -> %s (%s)%s",
				  ti->tid, lg_object__basename(g->objs[ti->frames[loader_at].obj]),
				  ctor_at >= 0 ? g->objs[ti->frames[ctor_at].obj]->path : "?",
				  lg_object__basename(g->objs[ti->frames[runtime_at].obj]),
				  role_impl__name(role->impl),
				  ti->syscall == arch_syscall_futex() ? ", blocked in futex wait" :
									"");
		if (waiting)
			finding__evidence(
				f,
				"%u worker thread%s (%s) went from the runtime into the "
				"loader (dlsym/dlopen)%s%s and wait%s for the lock this thread "
				"holds",
				waiting, waiting == 1 ? "" : "s", tids, site[0] ? " from " : "",
				site, waiting == 1 ? "s" : "");
		finding__explain(f, why,
				 team_size_set_by_code(ctx, ti->frames[runtime_at].obj) ?
					 fix_code_sets_team :
					 fix);
	}
}

/*
 * The runtime a probed entry point belongs to, named as the batch finding names it: the
 * process's one OpenMP runtime when it has one (libomp exports the GOMP_ entry points too).
 */
static const char *entry_runtime(const struct live_ctx *lc, unsigned int entry)
{
	const struct obj_role *only = NULL;
	size_t n = 0;

	if (entry == LIVE_OPENBLAS_EXEC)
		return role_impl__name(IMPL_OPENBLAS);
	for (size_t i = 0; lc->g && i < lc->g->n; i++) {
		const struct lg_object *o = lc->g->objs[i];
		const struct obj_role *r = obj_roles__find(lg_object__roles(o), ROLE_OPENMP);

		if (r && !o->gone && (!only || only->impl != r->impl)) {
			only = r;
			n++;
		}
	}
	if (n == 1)
		return role_impl__name(only->impl);
	return role_impl__name(entry == LIVE_KMPC_FORK_CALL ? IMPL_LLVM_LIBOMP : IMPL_GNU_LIBGOMP);
}

/*
 * Live: the moment a thread inside dlopen starts a parallel region or BLAS dispatch, or blocks
 * on a futex there. The event knows no frames of other threads: the finding is the batch one
 * for that thread, its fix the one that holds unless the code sets its team size.
 */
void loader_lock__on_event(const struct live_ctx *lc, const struct live_event *e,
			   struct findings *out)
{
	const char *in = e->dlopen_file && e->dlopen_file[0] ? e->dlopen_file : NULL;
	struct finding *f;

	if (e->kind == LIVE_PARALLEL_IN_DLOPEN) {
		bool blas = e->entry == LIVE_OPENBLAS_EXEC;

		f = findings__add(
			out, "loader-lock-hazard", SEV_ERROR, e->pid,
			"thread %d (%s) runs a %s parallel region from a constructor inside "
			"dlopen",
			e->tid, e->comm, entry_runtime(lc, e->entry));
		finding__evidence(
			f, "%s",
			blas ? "a BLAS call dispatched to OpenBLAS's thread pool by a thread inside "
			       "dlopen (a constructor); the pool deadlocks if it needs the loader lock" :
			       "a parallel region started by a thread inside dlopen (a constructor); its "
			       "workers deadlock if they need the loader lock");
	} else if (e->kind == LIVE_FUTEX_IN_DLOPEN) {
		f = findings__add(
			out, "loader-lock-hazard", SEV_ERROR, e->pid,
			"thread %d (%s) waits for other threads from a constructor inside "
			"dlopen",
			e->tid, e->comm);
		finding__evidence(
			f, "a thread inside dlopen blocks on a futex: a constructor waits for "
			   "other threads (a parallel region, a join) while it holds the loader "
			   "lock");
	} else {
		return;
	}
	if (in)
		finding__evidence(f, "thread %d is inside dlopen(\"%s\")", e->tid, in);
	finding__explain(f, why, fix);
}
