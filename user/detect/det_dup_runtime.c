// SPDX-License-Identifier: GPL-2.0
/* dup-openmp, dup-blas, dup-cxx-runtime: two copies of a runtime that must be alone. */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "detector.h"
#include "elfobj.h"
#include "environ.h"
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

/*
 * ---- Harm between a BLAS with a pool and one without ----
 *
 * A reference BLAS or a library's own CBLAS (GSL's libgslcblas) beside OpenBLAS is no harm by
 * itself: each serves the callers linked against it, and a caller of the plain one served by
 * the pooled one only runs faster. The harm is the reverse, and it is read, not guessed: a
 * caller whose dependencies reach the pooled copy, whose GOT holds a BLAS function of the
 * plain one (the loader found that one first), runs reference code many times slower.
 */

/* Whether object @from's DT_NEEDED closure reaches copy @r (its object or a front). */
static bool needs_copy(const struct libgraph *g, unsigned int from, const struct runtime *r)
{
	unsigned int *todo = calloc(g->n, sizeof(*todo));
	bool *seen = calloc(g->n, sizeof(*seen)), found = false;
	size_t head = 0, tail = 0;

	if (!todo || !seen)
		goto out;
	todo[tail++] = from;
	seen[from] = true;
	while (head < tail && !found) {
		const struct lg_object *o = g->objs[todo[head++]];

		found = o->id != from && o->id == r->obj;
		for (size_t k = 0; k < r->n_fronts && !found && o->id != from; k++)
			found = o->id == r->fronts[k];
		for (size_t c = 0; c < o->n_children; c++)
			if (o->children[c] < g->n && !seen[o->children[c]]) {
				seen[o->children[c]] = true;
				todo[tail++] = o->children[c];
			}
	}
out:
	free(todo);
	free(seen);
	return found;
}

/* Which copy @o is, its object or a front; -1: none. */
static int copy_of(const struct runtime_list *rt, const size_t *idx, size_t n, unsigned int o)
{
	for (size_t i = 0; i < n; i++) {
		const struct runtime *r = &rt->r[idx[i]];

		if (r->obj == o)
			return (int)i;
		for (size_t k = 0; k < r->n_fronts; k++)
			if (r->fronts[k] == o)
				return (int)i;
	}
	return -1;
}

struct blas_binding {
	const struct check_ctx *ctx;
	const struct lg_object *caller;
	const struct runtime_list *rt;
	const size_t *idx;
	size_t n;
	const char *name; /* the first BLAS function it has bound to a copy without a pool */
	int bound;
	bool lazy; /* not called yet: bound as its first call will be */
};

static int scan_binding(const char *name, uint64_t offset, unsigned type, unsigned sym_type,
			void *arg)
{
	struct blas_binding *b = arg;
	const struct lg_object *lib;
	uint64_t to;
	int i;

	(void)sym_type;
	if ((type != R_X86_64_GLOB_DAT && type != R_X86_64_JUMP_SLOT && type != R_X86_64_64) ||
	    !roles__blas_symbol(name) ||
	    target__read(b->ctx->t, b->caller->base + offset, &to, sizeof(to)))
		return 0;
	/* A lazy slot not called yet points back into the caller's PLT (as one bound to its
	 * own definition does): its first call binds it to the first definition in the global
	 * scope. */
	b->lazy = to >= b->caller->base && to - b->caller->base < elfobj__size(b->caller->elf);
	if (!b->lazy)
		lib = libgraph__object_at(b->ctx->g, to);
	else if (type == R_X86_64_JUMP_SLOT && libgraph__in_global_scope(b->ctx->g, b->caller->id))
		lib = libgraph__first_definer(b->ctx->g, name);
	else
		return 0;
	i = lib ? copy_of(b->rt, b->idx, b->n, lib->id) : -1;
	if (i < 0 || has_pool(b->rt->r[b->idx[i]].role.impl))
		return 0;
	b->name = name;
	b->bound = i;
	return 1;
}

/*
 * The callers linked against a pooled copy and bound to a plain one: one evidence line each
 * (at most 4, then a count) on @f, made when the first is found. Their number.
 */
static size_t served_by_plain(const struct check_ctx *ctx, const struct runtime_list *rt,
			      const size_t *idx, size_t n, struct findings *out, struct finding **f,
			      const char *title)
{
	const struct libgraph *g = ctx->g;
	size_t found = 0;

	for (size_t c = 0; ctx->t && c < g->n; c++) {
		const struct lg_object *o = g->objs[c];
		struct blas_binding b = { ctx, o, rt, idx, n, NULL, -1, false };
		int self = copy_of(rt, idx, n, o->id);
		size_t own = n;
		char whose[300];

		if (o->gone || !o->elf || !o->in_link_map ||
		    elfobj__foreach_dynreloc(o->elf, scan_binding, &b) <= 0 || self == b.bound)
			continue;
		/* Its own BLAS: the pooled copy it is part of (OpenBLAS's LAPACK, a front), or
		 * the one its dependencies reach. */
		if (self >= 0 && has_pool(rt->r[idx[self]].role.impl))
			own = (size_t)self;
		for (size_t i = 0; i < n && own == n; i++)
			if (has_pool(rt->r[idx[i]].role.impl) &&
			    needs_copy(g, o->id, &rt->r[idx[i]]))
				own = i;
		/* Linked against the plain copy too: it gets one of its own. */
		if (own == n || (self < 0 && needs_copy(g, o->id, &rt->r[idx[b.bound]])))
			continue;
		if (!*f)
			*f = findings__add(out, "dup-blas", SEV_WARNING, g->pid, "%s", title);
		if (++found > 4)
			continue;
		/* How it came to need the pooled copy: it is that copy, a front of it, or
		 * linked against it. */
		if (self < 0)
			snprintf(whose, sizeof(whose), "linked against %s",
				 lg_object__basename(g->objs[rt->r[idx[own]].obj]));
		else if (rt->r[idx[self]].obj != o->id)
			snprintf(whose, sizeof(whose), "a front of %s",
				 lg_object__basename(g->objs[rt->r[idx[own]].obj]));
		else
			snprintf(whose, sizeof(whose), "itself");
		finding__evidence(*f, "#%u %s, %s, %s %s in %s (%s)", o->id, o->path, whose,
				  b.lazy ? "will call" : "calls", b.name,
				  lg_object__basename(g->objs[rt->r[idx[b.bound]].obj]),
				  b.lazy ? "the first definition in the global scope, where its "
					   "first call binds it" :
					   "its GOT says so");
	}
	if (found > 4)
		finding__evidence(*f, "%zu more objects like these", found - 4);
	return found;
}

/*
 * "label; label" for the title: copies whose labels are alike ("OpenBLAS 0.3.21" twice) are
 * told apart by their file names, else by their paths.
 */
static void copy_labels(const struct libgraph *g, const struct runtime_list *rt, const size_t *idx,
			size_t n, char *buf, size_t len)
{
	char labels[64][256];
	bool alike = false, same_name = false;
	size_t used = 0;

	for (size_t i = 0; i < n; i++)
		obj_role__label(&rt->r[idx[i]].role, labels[i], sizeof(labels[i]));
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(labels[i], labels[j])) {
				alike = true;
				same_name |=
					!strcmp(lg_object__basename(g->objs[rt->r[idx[i]].obj]),
						lg_object__basename(g->objs[rt->r[idx[j]].obj]));
			}
	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		const struct lg_object *o = g->objs[rt->r[idx[i]].obj];

		/* "; " between runtimes: a label has commas of its own (", OpenMP 5.1"). */
		used += (size_t)snprintf(buf + used, len - used, "%s%s%s%s%s", i ? "; " : "",
					 labels[i], alike ? " (" : "",
					 !alike	   ? "" :
					 same_name ? o->path :
						     lg_object__basename(o),
					 alike ? ")" : "");
	}
}

/* OpenBLAS's integer width: "64-bit integers" in its role's detail, else 32. */
static const char *int_width(const struct runtime *r)
{
	if (r->role.impl != IMPL_OPENBLAS)
		return NULL;
	return strstr(r->role.detail, "64-bit") ? "64-bit integers" : "32-bit integers";
}

/*
 * What tells copies apart beyond their labels: the integer width and the threading of each
 * build (a 32-bit caller bound to a 64-bit BLAS passes garbage sizes), and whether two are
 * one build (build-id) in two files.
 */
static void differences(const struct libgraph *g, const struct runtime_list *rt, const size_t *idx,
			size_t n, struct finding *f)
{
	char line[600];
	size_t used = 0;
	bool widths = false, threads = false;

	for (size_t i = 1; i < n; i++) {
		const struct runtime *a = &rt->r[idx[0]], *b = &rt->r[idx[i]];

		widths |= int_width(a) && int_width(b) && strcmp(int_width(a), int_width(b));
		threads |= a->threading[0] && b->threading[0] && strcmp(a->threading, b->threading);
	}
	for (size_t i = 0; (widths || threads) && i < n && used < sizeof(line); i++) {
		const struct runtime *r = &rt->r[idx[i]];

		used += (size_t)snprintf(
			line + used, sizeof(line) - used, "%s%s: %s%s%s%s",
			i ? "; " : "the builds differ: ", lg_object__basename(g->objs[r->obj]),
			widths ? int_width(r) : "", widths && threads ? ", " : "",
			threads ? r->threading : "", threads ? " threading" : "");
	}
	if (used)
		finding__evidence(f, "%s", line);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++) {
			const struct elf_object *a = g->objs[rt->r[idx[i]].obj]->elf,
						*b = g->objs[rt->r[idx[j]].obj]->elf;

			if (a && b && a != b && elfobj__build_id(a) && elfobj__build_id(b) &&
			    !strcmp(elfobj__build_id(a), elfobj__build_id(b)))
				finding__evidence(
					f, "%s and %s are one build (build-id %s) in two files",
					g->objs[rt->r[idx[j]].obj]->path,
					g->objs[rt->r[idx[i]].obj]->path, elfobj__build_id(a));
		}
}

/*
 * ---- Settings that hide a collision ----
 *
 * The environment as the process has it now (environ.h): a variable Python code set at import
 * is in force though the process did not start with it.
 */

/* "NAME=VALUE" and where it came from on @f, or @unset_why when the variable is not set. */
static enum env_source say_env(const struct check_ctx *ctx, struct finding *f, const char *name,
			       const char *set_why, const char *unset_why)
{
	char v[256];
	enum env_source src = environ__get(ctx->t, ctx->g, name, v, sizeof(v));

	if (src == ENV_UNKNOWN || (src == ENV_UNSET && !unset_why))
		return src;
	if (src == ENV_UNSET)
		finding__evidence(f, "%s is not set: %s", name, unset_why);
	else
		finding__evidence(f, "%s=%s%s%s", name, v,
				  src == ENV_CHANGED ? " (set by the process after it started)" :
				  src == ENV_INITIAL ? " (as the process started; now unread)" :
						       "",
				  set_why ? set_why : "");
	return src;
}

/* libomp's and libiomp5's reading of a true KMP_ setting. */
static bool kmp_true(const char *v)
{
	return !strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "on") ||
	       !strcasecmp(v, "yes") || !strcasecmp(v, ".true.");
}

static void settings_evidence(const struct check_ctx *ctx, struct finding *f, enum role_kind kind,
			      const struct runtime_list *rt, const size_t *idx, size_t n,
			      size_t pools)
{
	size_t kmp = 0;
	enum env_source dup_ok;
	char v[64];

	if (!ctx->t)
		return;
	for (size_t i = 0; i < n; i++) {
		enum role_impl impl = rt->r[idx[i]].role.impl;

		kmp += impl == IMPL_LLVM_LIBOMP || impl == IMPL_INTEL_LIBIOMP5;
	}
	/* Two Intel/LLVM runtimes abort at start ("OMP: Error #15") unless this is set. */
	dup_ok = kmp >= 2 ? environ__get(ctx->t, ctx->g, "KMP_DUPLICATE_LIB_OK", v, sizeof(v)) :
			    ENV_UNSET;
	if (dup_ok != ENV_UNSET && dup_ok != ENV_UNKNOWN && kmp_true(v))
		say_env(ctx, f, "KMP_DUPLICATE_LIB_OK",
			": the runtimes' own check for a second copy (OMP: Error #15) is off, the "
			"setting that \"may cause crashes or silently produce incorrect results\" "
			"(threadpoolctl and scikit-learn set it at import)",
			NULL);
	if (pools < 2)
		return;
	if (kind == ROLE_OPENMP) {
		say_env(ctx, f, "OMP_NUM_THREADS", ": it bounds every OpenMP pool",
			"each pool is sized to every CPU the process may run on");
		return;
	}
	/* OpenBLAS reads its own variable first, then OpenMP's. */
	if (say_env(ctx, f, "OPENBLAS_NUM_THREADS", ": it bounds OpenBLAS's pools", NULL) ==
		    ENV_UNSET &&
	    say_env(ctx, f, "OMP_NUM_THREADS", ": it bounds the BLAS pools that read it", NULL) ==
		    ENV_UNSET)
		finding__evidence(f, "neither OPENBLAS_NUM_THREADS nor OMP_NUM_THREADS is set: "
				     "each pool is sized to every CPU the process may run on");
}

static void dup_runtime(const struct check_ctx *ctx, struct findings *out, const char *id,
			enum role_kind kind, const char *what, const char *why, const char *remedy)
{
	const struct libgraph *g = ctx->g;
	struct runtime_list own = { 0 };
	const struct runtime_list *rt = ctx->rt;
	size_t idx[64], n, pools = 0;
	unsigned int ids[64];
	char names[512] = "", title[700];
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
	copy_labels(g, rt, idx, n, names, sizeof(names));
	snprintf(title, sizeof(title), "%zu %s in process %d (%s): %s", n, what, g->pid, g->comm,
		 names);
	/* Two pools fight over the CPUs; one pool beside a plain BLAS is harm only where a
	 * caller of the pooled one was served by the plain one. */
	f = NULL;
	if (pools >= 2)
		f = findings__add(out, id, SEV_ERROR, g->pid, "%s", title);
	else if (!served_by_plain(ctx, rt, idx, n, out, &f, title))
		goto out;
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
	differences(g, rt, idx, n, f);
	settings_evidence(ctx, f, kind, rt, idx, n, pools);
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
			"Both define the same BLAS entry points, and the loader binds every caller to "
			"whichever it found first: the callers above were built against the optimized "
			"library and run the plain one (correct, but many times slower).",
			"Load the optimized BLAS first (import what uses it first, or LD_PRELOAD it) or "
			"link those callers against one BLAS; where the plain copy is Debian's reference "
			"libblas.so.3, select OpenBLAS with update-alternatives instead.");
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
