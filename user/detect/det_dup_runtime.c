// SPDX-License-Identifier: GPL-2.0
/* dup-openmp, dup-blas, dup-cxx-runtime: two copies of a runtime that must be alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
#include "owners.h"
#include "target.h"
#include "runtimes.h"
#include "threadscan.h"

/* How @id came in, up to its root: "DT_NEEDED of libtorch_cpu.so <- _C.so (dlopen)". */
static void describe_chain(const struct libgraph *g, unsigned int id, char *buf, size_t len)
{
	size_t used = 0;
	unsigned int hops = 0;

	while (libgraph__loaded_by(g, id) != LG_NONE && hops++ < 8 && used < len) {
		id = libgraph__loaded_by(g, id);
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 used ? " <- " : "DT_NEEDED of ",
					 lg_object__basename(g->objs[id]));
	}
	if (used >= len)
		return;
	if (used)
		snprintf(buf + used, len - used, " (%s)",
			 g->objs[id]->origin == LG_DLOPEN ? "dlopen" :
							    lg_origin__id(g->objs[id]->origin));
	else
		lg_object__describe_origin(g, id, buf, len);
}

/* Runtimes of this kind with a thread pool of their own (reference BLAS and LAPACK have none). */
static bool has_pool(enum role_impl impl)
{
	return impl != IMPL_OTHER_BLAS && impl != IMPL_LAPACK;
}

static void dup_runtime(const struct check_ctx *ctx, struct findings *out, const char *id,
			enum role_kind kind, const char *what, const char *why, const char *remedy)
{
	const struct libgraph *g = ctx->g;
	struct runtime_list own = { 0 };
	const struct runtime_list *rt = ctx->rt;
	size_t idx[64], n, pools = 0;
	unsigned int ids[64];
	char names[512] = "";
	struct finding *f;

	if (!rt) {
		if (runtimes__collect(g, ctx->t, ctx->ts, &own))
			return;
		rt = &own;
	}
	n = runtimes__of_kind(rt, kind, idx, 64);
	if (n > 64)
		n = 64;
	for (size_t i = 0; i < n; i++)
		pools += has_pool(rt->r[idx[i]].role.impl);
	if (n < 2)
		goto out;
	for (size_t i = 0; i < n; i++) {
		char label[256];
		size_t used = strlen(names);

		obj_role__label(&rt->r[idx[i]].role, label, sizeof(label));
		/* "; " between runtimes: a label has commas of its own (", OpenMP 5.1"). */
		snprintf(names + used, sizeof(names) - used, "%s%s", i ? "; " : "", label);
	}
	/* Two pools fight over the CPUs; one pool beside a plain BLAS only shadows symbols. */
	f = findings__add(out, id, pools >= 2 ? SEV_ERROR : SEV_WARNING, g->pid,
			  "%zu %s in process %d (%s): %s", n, what, g->pid, g->comm, names);
	for (size_t i = 0; i < n; i++) {
		const struct runtime *r = &rt->r[idx[i]];
		const struct lg_object *o = g->objs[r->obj];
		char chain[512], fronts[256] = "", pkg[600], label[256];
		size_t used = 0;

		char pool[32] = "";

		ids[i] = o->id;
		describe_chain(g, o->id, chain, sizeof(chain));
		owners__describe(g, o->id, pkg, sizeof(pkg));
		for (size_t k = 0; k < r->n_fronts && used < sizeof(fronts); k++)
			used += (size_t)snprintf(fronts + used, sizeof(fronts) - used, "%s%s",
						 k ? ", " : "; fronts: ",
						 lg_object__basename(g->objs[r->fronts[k]]));
		/* Unknown (threads not read, as live) is not said to be none. */
		if (r->pool_threads >= 0)
			snprintf(pool, sizeof(pool), ", %d pool thread%s", r->pool_threads,
				 r->pool_threads == 1 ? "" : "s");
		obj_role__label(&r->role, label, sizeof(label));
		finding__evidence(f, "#%u %s: %s, loaded by %s%s%s%s%s", o->id, o->path, label,
				  chain, pool, fronts, pkg[0] ? "; " : "", pkg);
	}
	if (ctx->ts) {
		size_t running = 0;

		/* A running thread has no stack read: only its start routine can place it. */
		for (size_t i = 0; i < ctx->ts->n; i++)
			running += ctx->ts->t[i].syscall == -2 && !ctx->ts->t[i].start_known;
		if (running)
			finding__evidence(f, "%zu thread%s running, not attributed to a pool",
					  running, running == 1 ? " was" : "s were");
	}
	if (pools >= 2)
		finding__explain(f, why, remedy);
	else
		finding__explain(
			f,
			"Both define the same BLAS/LAPACK entry points, and the loader binds every "
			"caller to whichever it found first: code built for the optimized library may "
			"run the reference one (correct, but many times slower), or the reverse.",
			"Keep one BLAS: on Debian select it with update-alternatives (libblas.so.3, "
			"liblapack.so.3), or make the packages link the same one.");
	owners__remedy(f, g, ids, n);
out:
	runtimes__free(&own);
}

/* Is runtime @r present live: its object or one of its fronts reported, @skip aside? */
static bool runtime_reported(const struct live_ctx *lc, const struct runtime *r, int skip)
{
	const struct libgraph *g = lc->g;

	if ((int)r->obj != skip && lc->reported(lc, g->objs[r->obj]))
		return true;
	for (size_t k = 0; k < r->n_fronts; k++)
		if ((int)r->fronts[k] != skip && lc->reported(lc, g->objs[r->fronts[k]]))
			return true;
	return false;
}

/*
 * The batch rule applied as objects arrive: over the runtimes reported so far, the finding
 * dup_runtime makes, once, when @o brings their number to two.
 */
static void dup_runtime_live(const struct live_ctx *lc, const struct lg_object *o,
			     struct findings *out, const char *id, enum role_kind kind,
			     const char *what, const char *why, const char *remedy)
{
	struct runtime_list all, now = { 0 };
	struct check_ctx ctx = { .g = lc->g, .rt = &now };
	size_t before = 0;

	if (!lc->g || !obj_roles__find(lg_object__roles(o), kind) ||
	    runtimes__collect_kind(lc->g, kind, &all))
		return;
	now.r = all.n ? calloc(all.n, sizeof(*now.r)) : NULL;
	for (size_t i = 0; now.r && i < all.n; i++) {
		if (!runtime_reported(lc, &all.r[i], -1))
			continue;
		now.r[now.n++] = all.r[i]; /* borrowed: freed with @all */
		before += runtime_reported(lc, &all.r[i], (int)o->id);
	}
	if (before < 2 && now.n >= 2) {
		size_t had = out->n;

		dup_runtime(&ctx, out, id, kind, what, why, remedy);
		/* The Python line that brought the new copy: where to look first. */
		if (out->n > had && lc->arrived_through)
			finding__evidence(&out->f[out->n - 1], "%s arrived through %s",
					  lg_object__basename(o), lc->arrived_through);
	}
	free(now.r);
	runtimes__free(&all);
}

static const char omp_what[] = "OpenMP runtimes";
static const char omp_why[] =
	"Each OpenMP runtime keeps its own thread pool, thread-local state and affinity "
	"settings, and each sizes its pool to every core: together they oversubscribe "
	"the CPUs, and code built against one that resolves omp_*/GOMP_* symbols to "
	"the other (libomp exports the GOMP_ entry points too) mixes their state, which "
	"hangs, crashes or corrupts results.";
static const char omp_fix[] =
	"Make every package use one runtime: rebuild or reinstall the ones that vendor "
	"the extra copy (each copy's package is named above where it is known, else its "
	"path says which wheel brought it) against the same OpenMP, or LD_PRELOAD the one "
	"to keep so every lookup finds it first; meanwhile bound both pools with "
	"OMP_NUM_THREADS.";

void dup_openmp__process(const struct check_ctx *ctx, struct findings *out)
{
	dup_runtime(ctx, out, "dup-openmp", ROLE_OPENMP, omp_what, omp_why, omp_fix);
}

void dup_openmp__on_object(const struct live_ctx *lc, const struct lg_object *o,
			   struct findings *out)
{
	dup_runtime_live(lc, o, out, "dup-openmp", ROLE_OPENMP, omp_what, omp_why, omp_fix);
}

static const char blas_what[] = "BLAS libraries";
static const char blas_why[] =
	"Each BLAS library starts its own thread pool sized to every core; two pools "
	"oversubscribe the CPUs and, with OpenBLAS, two copies' server threads have been "
	"seen running over each other and crashing. Symbols such as cblas_dgemm resolve "
	"to whichever copy the loader found first, so code can call a BLAS other than "
	"the one it was built for (32- vs 64-bit integers give wrong results).";
static const char blas_fix[] =
	"Build the packages against one BLAS (or none: a build that found a stray "
	"OpenBLAS links it opportunistically); until then limit the pools with "
	"OPENBLAS_NUM_THREADS=1 or threadpoolctl, and import the package whose BLAS "
	"should win first.";

void dup_blas__process(const struct check_ctx *ctx, struct findings *out)
{
	dup_runtime(ctx, out, "dup-blas", ROLE_BLAS, blas_what, blas_why, blas_fix);
}

void dup_blas__on_object(const struct live_ctx *lc, const struct lg_object *o, struct findings *out)
{
	dup_runtime_live(lc, o, out, "dup-blas", ROLE_BLAS, blas_what, blas_why, blas_fix);
}

static const char cxx_why[] =
	"A C++ runtime has process-wide state (the locale and facet registry, iostream "
	"initialization, the exception and RTTI machinery, the new-handler). A second copy, "
	"shared or linked statically into an extension with -static-libstdc++, initializes its "
	"own and objects cross between them: a facet or stream built by one copy is used by the "
	"other, which crashes in codecvt or iostream code far from the cause.";
static const char cxx_fix[] =
	"Link every C++ extension against the shared libstdc++ (the manylinux toolchains link "
	"only the symbols newer than the base system statically), or load the shared "
	"libstdc++.so.6 first (ctypes.CDLL(..., RTLD_GLOBAL) or LD_PRELOAD) so exported copies "
	"resolve to it; a stripped copy with hidden symbols can only be fixed by rebuilding.";

static bool is_cxx_runtime(const struct lg_object *o, char *gcc, size_t gcclen)
{
	if (gcc)
		gcc[0] = '\0';
	return !o->gone && o->elf &&
	       (obj_roles__find(lg_object__roles(o), ROLE_CXX_RUNTIME) ||
		roles__static_libstdcxx(o->elf, gcc, gcclen));
}

/*
 * The C++ runtimes of @g (with @lc, those reported live, but for @skip): one finding when there
 * are two or more and, live, fewer without @skip.
 */
static void dup_cxx(const struct libgraph *g, const struct live_ctx *lc, int skip,
		    struct findings *out)
{
	unsigned int ids[64];
	char gccs[64][32];
	size_t n = 0, before = 0;
	struct finding *f;

	for (size_t i = 0; i < g->n && n < 64; i++) {
		const struct lg_object *o = g->objs[i];

		if ((lc && !lc->reported(lc, o)) || !is_cxx_runtime(o, gccs[n], sizeof(gccs[n])))
			continue;
		before += (int)o->id != skip;
		ids[n++] = o->id;
	}
	if (n < 2 || (lc && before >= 2))
		return;
	f = findings__add(out, "dup-cxx-runtime", SEV_ERROR, g->pid,
			  "%zu C++ runtimes in process %d (%s)", n, g->pid, g->comm);
	for (size_t i = 0; i < n; i++) {
		const struct lg_object *o = g->objs[ids[i]];
		const struct obj_role *r = obj_roles__find(lg_object__roles(o), ROLE_CXX_RUNTIME);
		char origin[256], pkg[600];

		lg_object__describe_origin(g, o->id, origin, sizeof(origin));
		owners__describe(g, o->id, pkg, sizeof(pkg));
		if (roles__static_libstdcxx(o->elf, NULL, 0))
			finding__evidence(
				f,
				"#%u %s: a statically linked libstdc++%s%s%s%s, loaded by %s%s%s",
				o->id, o->path, gccs[i][0] ? " (GCC " : "", gccs[i],
				gccs[i][0] ? ")" : "",
				r ? " with its symbols exported" : " with hidden symbols", origin,
				pkg[0] ? "; " : "", pkg);
		else {
			char label[256];

			obj_role__label(r, label, sizeof(label));
			finding__evidence(f, "#%u %s: %s, shared, loaded by %s%s%s", o->id, o->path,
					  label, origin, pkg[0] ? "; " : "", pkg);
		}
	}
	finding__explain(f, cxx_why, cxx_fix);
	owners__remedy(f, g, ids, n);
}

void dup_cxx__process(const struct check_ctx *ctx, struct findings *out)
{
	dup_cxx(ctx->g, NULL, -1, out);
}

void dup_cxx__on_object(const struct live_ctx *lc, const struct lg_object *o, struct findings *out)
{
	if (lc->g && is_cxx_runtime(o, NULL, 0))
		dup_cxx(lc->g, lc, (int)o->id, out);
}

void dup_cxx__files(const struct lint_file *files, size_t n, struct findings *out)
{
	struct finding *f = NULL;
	size_t copies = 0;

	for (size_t i = 0; i < n; i++)
		copies += roles__static_libstdcxx(files[i].elf, NULL, 0);
	for (size_t i = 0; i < n; i++) {
		char gcc[32];

		if (!roles__static_libstdcxx(files[i].elf, gcc, sizeof(gcc)))
			continue;
		if (!f)
			f = findings__add(out, "dup-cxx-runtime",
					  copies > 1 ? SEV_ERROR : SEV_WARNING, 0,
					  "%zu object%s a statically linked libstdc++", copies,
					  copies == 1 ? " carries" : "s carry");
		finding__evidence(f, "%s: libstdc++%s%s%s", files[i].path, gcc[0] ? " (GCC " : "",
				  gcc, gcc[0] ? ")" : "");
	}
	finding__explain(f, cxx_why, cxx_fix);
}

/*
 * dup-gpu-runtime: GPU libraries that must be one version per process. The CUDA runtime by its
 * major (a framework built for CUDA 11 beside one built for 12), cuDNN, cuBLAS, NCCL and RCCL
 * by their release. Other GPU libraries (the driver, cuFFT, OpenCL's loader and drivers) may
 * be several at once or are not told apart by version.
 */
static const enum role_impl gpu_single[] = { IMPL_CUDA_RUNTIME, IMPL_CUDNN, IMPL_CUBLAS, IMPL_NCCL,
					     IMPL_RCCL };

/* What two copies of @r must share: the CUDA runtime's major, the others' release. */
static void gpu_key(const struct obj_role *r, char *key, size_t len)
{
	const char *v = r->release[0] ? r->release : r->version;

	snprintf(key, len, "%s", v);
	if (r->impl == IMPL_CUDA_RUNTIME)
		key[strcspn(key, ".")] = '\0';
}

static const char gpu_why[] =
	"Each of these libraries keeps process-wide state (a context, handles, a library of "
	"kernels) and exports the same entry points in every version. The loader binds each "
	"caller to whichever copy it finds first, so code built for one version is served by the "
	"other: structures and enums changed between them, and what follows is a crash, a wrong "
	"result or an error such as \"loaded runtime CuDNN library 8.x but source was compiled "
	"with 9.x\"; two CUDA runtimes also hold two primary contexts on one device.";
static const char gpu_fix[] =
	"Install one set of GPU libraries: the frameworks of one environment must be built for "
	"the same CUDA (torch and tensorflow wheels for cu11 and cu12 do not mix); keep one of the "
	"wheels named above (or the nvidia-*-cu11/-cu12 packages they pull in), or import the "
	"framework whose copy should serve both first and rebuild the other against it.";

/*
 * The copies of @impl among @rt (with @lc, those reported live) when they have two versions:
 * one finding; live, only when @skip (the object just reported) brought the second version.
 */
static void dup_gpu_impl(const struct libgraph *g, const struct runtime_list *rt,
			 const struct live_ctx *lc, int skip, enum role_impl impl,
			 struct findings *out)
{
	size_t idx[32], n = 0, distinct = 0, before = 0;
	char keys[32][48], names[512] = "";
	unsigned int ids[32];
	struct finding *f;

	for (size_t i = 0; i < rt->n && n < 32; i++) {
		const struct runtime *r = &rt->r[i];

		if (r->role.impl != impl || (lc && !lc->reported(lc, g->objs[r->obj])))
			continue;
		gpu_key(&r->role, keys[n], sizeof(keys[n]));
		idx[n++] = i;
	}
	/* Versions, counted once each: a copy of unknown version is no second version. */
	for (size_t i = 0; i < n; i++) {
		bool seen = !keys[i][0],
		     seen_before = !keys[i][0] || (int)rt->r[idx[i]].obj == skip;

		for (size_t j = 0; j < i; j++) {
			seen |= !strcmp(keys[j], keys[i]);
			seen_before |= !strcmp(keys[j], keys[i]) && (int)rt->r[idx[j]].obj != skip;
		}
		distinct += !seen;
		before += !seen_before;
	}
	if (distinct < 2 || (lc && before >= 2))
		return;
	for (size_t i = 0; i < n; i++) {
		char label[256];
		size_t used = strlen(names);

		obj_role__label(&rt->r[idx[i]].role, label, sizeof(label));
		snprintf(names + used, sizeof(names) - used, "%s%s", i ? "; " : "", label);
	}
	f = findings__add(out, "dup-gpu-runtime", SEV_ERROR, g->pid,
			  "%zu versions of %s in process %d (%s): %s", distinct,
			  role_impl__name(impl), g->pid, g->comm, names);
	for (size_t i = 0; i < n; i++) {
		const struct runtime *r = &rt->r[idx[i]];
		const struct lg_object *o = g->objs[r->obj];
		char chain[512], pkg[600], label[256];

		ids[i] = o->id;
		describe_chain(g, o->id, chain, sizeof(chain));
		owners__describe(g, o->id, pkg, sizeof(pkg));
		obj_role__label(&r->role, label, sizeof(label));
		finding__evidence(f, "#%u %s: %s, loaded by %s%s%s", o->id, o->path, label, chain,
				  pkg[0] ? "; " : "", pkg);
	}
	if (lc && lc->arrived_through && skip >= 0)
		finding__evidence(f, "%s arrived through %s", lg_object__basename(g->objs[skip]),
				  lc->arrived_through);
	finding__explain(f, gpu_why, gpu_fix);
	owners__remedy(f, g, ids, n);
}

static void dup_gpu(const struct libgraph *g, const struct runtime_list *rt,
		    const struct live_ctx *lc, int skip, struct findings *out)
{
	for (size_t k = 0; k < sizeof(gpu_single) / sizeof(gpu_single[0]); k++)
		dup_gpu_impl(g, rt, lc, skip, gpu_single[k], out);
}

void dup_gpu__process(const struct check_ctx *ctx, struct findings *out)
{
	struct runtime_list own = { 0 };

	if (ctx->rt) {
		dup_gpu(ctx->g, ctx->rt, NULL, -1, out);
		return;
	}
	if (runtimes__collect_kind(ctx->g, ROLE_CUDA, &own))
		return;
	dup_gpu(ctx->g, &own, NULL, -1, out);
	runtimes__free(&own);
}

void dup_gpu__on_object(const struct live_ctx *lc, const struct lg_object *o, struct findings *out)
{
	struct runtime_list all;

	if (!lc->g || !obj_roles__find(lg_object__roles(o), ROLE_CUDA) ||
	    runtimes__collect_kind(lc->g, ROLE_CUDA, &all))
		return;
	dup_gpu(lc->g, &all, lc, (int)o->id, out);
	runtimes__free(&all);
}
