// SPDX-License-Identifier: GPL-2.0
/*
 * blas-in-parallel: OpenBLAS built with its own pthreads pool, called from inside OpenMP
 * parallel regions. Each of the N OpenMP threads that calls it hands its work to OpenBLAS's
 * pool of up to N threads: N x N threads on N CPUs, the pools spinning against each other
 * (OpenBLAS #2197, #1193: "Detect OpenMP Loop and this application may hang", a warning later
 * OpenBLAS builds no longer print). An OpenMP-threaded OpenBLAS runs such calls on one thread.
 */
#include <stdio.h>
#include <string.h>

#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
#include "runtimes.h"
#include "threadscan.h"

static const char why[] =
	"This OpenBLAS is built with its own pthreads thread pool, which knows nothing of OpenMP: "
	"a BLAS call made by a thread inside an OpenMP parallel region hands its work to OpenBLAS's "
	"pool all the same, so each OpenMP thread wakes a pool sized to every CPU (N x N threads "
	"on N CPUs) and the two pools' spinning threads take each other's CPU time. An OpenBLAS "
	"built with OpenMP runs a call made inside a region on the calling thread.";
static const char fix[] =
	"Use the OpenMP build of OpenBLAS (Debian: libopenblas0-openmp; pip: a wheel built with "
	"USE_OPENMP=1), or limit OpenBLAS to one thread where it is called from parallel code "
	"(OPENBLAS_NUM_THREADS=1, threadpoolctl.threadpool_limits(1, \"blas\")).";

void blas_in_parallel__live(const struct live_nested *ln, struct findings *out)
{
	int team = ln->omp_pool + 1, per_call = ln->blas_pool + 1;
	struct finding *f;

	if (ln->omp_callers < 1)
		return;
	f = findings__add(out, "blas-in-parallel", SEV_WARNING, ln->pid,
			  "process %d (%s) calls OpenBLAS's pthreads pool from inside OpenMP "
			  "parallel regions: %d threads wanted on %d CPU%s",
			  ln->pid, ln->comm, team * per_call, ln->ncpu, ln->ncpu == 1 ? "" : "s");
	finding__evidence(f,
			  "%d thread%s of %s's pool (threads that run only inside parallel "
			  "regions) made %llu BLAS dispatches to %s since the last count",
			  ln->omp_callers, ln->omp_callers == 1 ? "" : "s", ln->openmp, ln->calls,
			  ln->blas);
	finding__evidence(f,
			  "each of a region's %d threads (%s's pool of %d and the thread that "
			  "starts it) splits its call for %d threads (OpenBLAS's pool of %d and "
			  "itself): %d x %d",
			  team, ln->openmp, ln->omp_pool, per_call, ln->blas_pool, team, per_call);
	finding__evidence(f, "the process may use CPUs %s", ln->cpus_list);
	finding__explain(f, why, fix);
}

/* Does @o start OpenMP regions (import a fork entry) and call BLAS (import its functions)? */
struct imports {
	bool omp, blas;
	char first_blas[64];
};

static int scan_import(const char *name, const char *version, bool weak, void *arg)
{
	struct imports *im = arg;

	(void)version;
	(void)weak;
	if (!strcmp(name, "GOMP_parallel") || !strcmp(name, "GOMP_parallel_start") ||
	    !strcmp(name, "__kmpc_fork_call"))
		im->omp = true;
	else if (roles__blas_symbol(name) && !im->blas) {
		im->blas = true;
		snprintf(im->first_blas, sizeof(im->first_blas), "%s", name);
	}
	return 0;
}

/* Is @id the object of runtime @r or one of its fronts? */
static bool of_runtime(const struct runtime *r, unsigned int id)
{
	if (r->obj == id)
		return true;
	for (size_t k = 0; k < r->n_fronts; k++)
		if (r->fronts[k] == id)
			return true;
	return false;
}

/* A thread of @omp's pool found inside @blas (its stack read): the call is made in a region. */
static const struct thread_info *
nested_thread(const struct check_ctx *ctx, const struct runtime *omp, const struct runtime *blas)
{
	for (size_t i = 0; ctx->ts && i < ctx->ts->n; i++) {
		const struct thread_info *ti = &ctx->ts->t[i];

		for (size_t k = 0; of_runtime(omp, ti->start_obj) && k < ti->n_frames; k++)
			if (of_runtime(blas, ti->frames[k].obj))
				return ti;
	}
	return NULL;
}

/*
 * check: a pthreads OpenBLAS with a pool beside an OpenMP runtime with a pool, and code that
 * does both (starts regions, calls BLAS). Whether its BLAS calls are made inside its regions
 * is not in the files: info, unless a thread of the OpenMP pool is found inside OpenBLAS
 * (a warning: it happens). watch --hot sees the calls themselves.
 */
void blas_in_parallel__process(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;
	const struct runtime_list *rt = ctx->rt;
	const struct runtime *blas = NULL, *omp = NULL;
	const struct thread_info *proof;
	size_t n_blas = 0;
	struct finding *f = NULL;

	for (size_t i = 0; rt && i < rt->n; i++) {
		const struct runtime *r = &rt->r[i];

		n_blas += r->role.kind == ROLE_BLAS && r->role.impl != IMPL_LAPACK;
		if (r->role.impl == IMPL_OPENBLAS && !strcmp(r->threading, "pthreads") &&
		    r->pool_threads > 0)
			blas = r;
		if (r->role.kind == ROLE_OPENMP && r->pool_threads > 0)
			omp = r;
	}
	/* Two BLAS libraries are dup-blas's: which one a caller gets is its business. */
	if (!blas || !omp || n_blas != 1)
		return;
	proof = nested_thread(ctx, omp, blas);
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		struct imports im = { 0 };

		if (o->gone || !o->elf || !o->in_link_map || of_runtime(blas, o->id) ||
		    of_runtime(omp, o->id))
			continue;
		elfobj__foreach_undefined(o->elf, scan_import, &im);
		if (!im.omp || !im.blas)
			continue;
		if (!f)
			f = findings__add(
				out, "blas-in-parallel", proof ? SEV_WARNING : SEV_INFO, g->pid,
				proof ? "process %d (%s) calls OpenBLAS's pthreads pool (%s) "
					"from inside OpenMP parallel regions" :
					"process %d (%s) runs OpenMP regions and OpenBLAS's "
					"pthreads pool (%s): a BLAS call made inside a region "
					"would wake that pool from each OpenMP thread",
				g->pid, g->comm, lg_object__basename(g->objs[blas->obj]));
		finding__evidence(f, "#%u %s starts OpenMP regions and calls BLAS (%s)", o->id,
				  o->path, im.first_blas);
	}
	if (!f)
		return;
	finding__evidence(f, "%s: %d pool thread%s; %s: %d pool thread%s",
			  lg_object__basename(g->objs[omp->obj]), omp->pool_threads,
			  omp->pool_threads == 1 ? "" : "s",
			  lg_object__basename(g->objs[blas->obj]), blas->pool_threads,
			  blas->pool_threads == 1 ? "" : "s");
	if (proof)
		finding__evidence(f, "thread %d, of %s's pool, is inside %s", proof->tid,
				  lg_object__basename(g->objs[omp->obj]),
				  lg_object__basename(g->objs[blas->obj]));
	else
		finding__evidence(f,
				  "no thread of %s's pool was found inside %s (a running "
				  "thread's stack is not read): watch --hot sees the calls",
				  lg_object__basename(g->objs[omp->obj]),
				  lg_object__basename(g->objs[blas->obj]));
	finding__explain(f, why, fix);
}
