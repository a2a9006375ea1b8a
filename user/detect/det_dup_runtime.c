// SPDX-License-Identifier: GPL-2.0
/* dup-openmp, dup-blas, dup-cxx-runtime: two copies of a runtime that must be alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
#include "target.h"
#include "runtimes.h"
#include "threadscan.h"

/* How @id came in, up to its root: "DT_NEEDED of libtorch_cpu.so <- _C.so (dlopen)". */
static void describe_chain(const struct libgraph *g, unsigned int id, char *buf, size_t len)
{
	size_t used = 0;
	unsigned int hops = 0;

	while (g->objs[id]->n_parents && hops++ < 8 && used < len) {
		id = g->objs[id]->parents[0];
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 used ? " <- " : "DT_NEEDED of ",
					 lg_object__basename(g->objs[id]));
	}
	if (used >= len)
		return;
	if (used)
		snprintf(buf + used, len - used, " (%s)",
			 g->objs[id]->origin == LG_DLOPEN ? "dlopen" : lg_origin__id(g->objs[id]->origin));
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
		const struct obj_role *r = &rt->r[idx[i]].role;
		size_t used = strlen(names);

		snprintf(names + used, sizeof(names) - used, "%s%s%s%s", i ? ", " : "",
			 role_impl__name(r->impl), r->version[0] ? " " : "", r->version);
	}
	/* Two pools fight over the CPUs; one pool beside a plain BLAS only shadows symbols. */
	f = findings__add(out, id, pools >= 2 ? SEV_ERROR : SEV_WARNING, g->pid,
			  "%zu %s in process %d (%s): %s", n, what, g->pid, g->comm, names);
	for (size_t i = 0; i < n; i++) {
		const struct runtime *r = &rt->r[idx[i]];
		const struct lg_object *o = g->objs[r->obj];
		char chain[512], fronts[256] = "";
		size_t used = 0;

		describe_chain(g, o->id, chain, sizeof(chain));
		for (size_t k = 0; k < r->n_fronts && used < sizeof(fronts); k++)
			used += (size_t)snprintf(fronts + used, sizeof(fronts) - used, "%s%s",
						 k ? ", " : "; fronts: ",
						 lg_object__basename(g->objs[r->fronts[k]]));
		finding__evidence(f, "#%u %s: %s%s%s%s%s, loaded by %s, %d pool thread%s%s", o->id,
				  o->path, role_impl__name(r->role.impl),
				  r->role.version[0] ? " " : "", r->role.version,
				  r->role.detail[0] ? ", " : "", r->role.detail, chain,
				  r->pool_threads > 0 ? r->pool_threads : 0,
				  r->pool_threads == 1 ? "" : "s", fronts);
	}
	if (ctx->ts) {
		size_t running = 0;

		for (size_t i = 0; i < ctx->ts->n; i++)
			running += ctx->ts->t[i].syscall == -2;
		if (running)
			finding__evidence(f, "%zu thread%s running, not attributed to a pool", running,
					  running == 1 ? " was" : "s were");
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
out:
	runtimes__free(&own);
}

void dup_openmp__process(const struct check_ctx *ctx, struct findings *out)
{
	dup_runtime(ctx, out, "dup-openmp", ROLE_OPENMP, "OpenMP runtimes",
		    "Each OpenMP runtime keeps its own thread pool, thread-local state and affinity "
		    "settings, and each sizes its pool to every core: together they oversubscribe "
		    "the CPUs, and code built against one that resolves omp_*/GOMP_* symbols to "
		    "the other (libomp exports the GOMP_ entry points too) mixes their state, which "
		    "hangs, crashes or corrupts results.",
		    "Make every package use one runtime: rebuild or reinstall the ones that vendor "
		    "the extra copy (the paths above say which wheel brought each) against the same "
		    "OpenMP, or LD_PRELOAD the one to keep so every lookup finds it first; meanwhile "
		    "bound both pools with OMP_NUM_THREADS.");
}

void dup_blas__process(const struct check_ctx *ctx, struct findings *out)
{
	dup_runtime(ctx, out, "dup-blas", ROLE_BLAS, "BLAS libraries",
		    "Each BLAS library starts its own thread pool sized to every core; two pools "
		    "oversubscribe the CPUs and, with OpenBLAS, two copies' server threads have been "
		    "seen running over each other and crashing. Symbols such as cblas_dgemm resolve "
		    "to whichever copy the loader found first, so code can call a BLAS other than "
		    "the one it was built for (32- vs 64-bit integers give wrong results).",
		    "Build the packages against one BLAS (or none: a build that found a stray "
		    "OpenBLAS links it opportunistically); until then limit the pools with "
		    "OPENBLAS_NUM_THREADS=1 or threadpoolctl, and import the package whose BLAS "
		    "should win first.");
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

void dup_cxx__process(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;
	unsigned int ids[64];
	char gccs[64][32];
	size_t n = 0;
	struct finding *f;

	for (size_t i = 0; i < g->n && n < 64; i++) {
		const struct lg_object *o = g->objs[i];

		if (o->gone || !o->elf)
			continue;
		gccs[n][0] = '\0';
		if (obj_roles__find(lg_object__roles(o), ROLE_CXX_RUNTIME) ||
		    roles__static_libstdcxx(o->elf, gccs[n], sizeof(gccs[n])))
			ids[n++] = o->id;
	}
	if (n < 2)
		return;
	f = findings__add(out, "dup-cxx-runtime", SEV_ERROR, g->pid,
			  "%zu C++ runtimes in process %d (%s)", n, g->pid, g->comm);
	for (size_t i = 0; i < n; i++) {
		const struct lg_object *o = g->objs[ids[i]];
		const struct obj_role *r = obj_roles__find(lg_object__roles(o), ROLE_CXX_RUNTIME);
		char origin[256];

		lg_object__describe_origin(g, o->id, origin, sizeof(origin));
		if (roles__static_libstdcxx(o->elf, NULL, 0))
			finding__evidence(f,
					  "#%u %s: a statically linked libstdc++%s%s%s%s, loaded by %s",
					  o->id, o->path, gccs[i][0] ? " (GCC " : "", gccs[i],
					  gccs[i][0] ? ")" : "",
					  r ? " with its symbols exported" :
					      " with hidden symbols",
					  origin);
		else
			finding__evidence(f, "#%u %s: %s%s%s (shared), loaded by %s", o->id, o->path,
					  role_impl__name(r->impl), r->version[0] ? " GLIBCXX_" : "",
					  r->version, origin);
	}
	finding__explain(f, cxx_why, cxx_fix);
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
			f = findings__add(out, "dup-cxx-runtime", copies > 1 ? SEV_ERROR : SEV_WARNING,
					  0, "%zu object%s a statically linked libstdc++",
					  copies, copies == 1 ? " carries" : "s carry");
		finding__evidence(f, "%s: libstdc++%s%s%s", files[i].path, gcc[0] ? " (GCC " : "",
				  gcc, gcc[0] ? ")" : "");
	}
	finding__explain(f, cxx_why, cxx_fix);
}
