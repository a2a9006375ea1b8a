// SPDX-License-Identifier: GPL-2.0
/*
 * deadlock: every cycle of the lock-wait graph, with the verdict of dlscope stacks; fork-hang:
 * every wait in it that can never end (a mutex whose owner is no thread of the process, a
 * GNU libgomp region whose pool the process lacks), most often what a fork() left.
 */
#include <stdio.h>
#include <stdlib.h>

#include "detector.h"
#include "forkorigin.h"
#include "forkpool.h"
#include "libgraph.h"
#include "lockwait.h"
#include "roles.h"
#include "runtimes.h"
#include "target.h"

void deadlock__process(const struct check_ctx *ctx, struct findings *out)
{
	const struct lockwait_report *r = ctx->lw;

	if (!r)
		return;
	for (size_t c = 0; c < r->n_cycles; c++) {
		struct finding *f =
			findings__add(out, "deadlock", SEV_ERROR, ctx->g->pid,
				      "%zu threads of process %d (%s) wait for each other",
				      r->cycle_len[c] - 1, ctx->g->pid, ctx->g->comm);

		for (size_t k = 0; k + 1 < r->cycle_len[c]; k++)
			for (size_t e = 0; e < r->n_edges; e++)
				if (r->edges[e].from == r->cycles[c][k] &&
				    r->edges[e].to == r->cycles[c][k + 1]) {
					finding__evidence(f,
							  "thread %d waits for thread %d: %s (%s)",
							  r->edges[e].from, r->edges[e].to,
							  r->edges[e].what,
							  wait_kind__id(r->edges[e].kind));
					break;
				}
		finding__explain(f, r->verdicts[c], r->remedies[c]);
	}
}

/* The threads of @g's GNU libgomp pool in the inventory @rt, or -1 when it has none. */
static int own_gomp_pool(const struct libgraph *g, const struct runtime_list *rt)
{
	for (size_t i = 0; rt && i < rt->n; i++)
		if (rt->r[i].role.kind == ROLE_OPENMP && rt->r[i].role.impl == IMPL_GNU_LIBGOMP &&
		    !runtimes__is_front(g, rt->r[i].obj, ROLE_OPENMP))
			return rt->r[i].pool_threads;
	return -1;
}

/*
 * Not hung yet: a child forked without exec from a parent whose GNU libgomp pool has threads,
 * while it has none. If the pool was there at the fork (the likely case: a pool lives as long
 * as its process), the child's first parallel region waits for ever. A warning: the fork's
 * moment cannot be read back.
 */
static void fork_hazard(const struct check_ctx *ctx, struct findings *out)
{
	struct fork_origin fo;
	char path[4096], forked[256];
	struct finding *f;
	int parent_pool;

	if (!ctx->t || ctx->t->core || ctx->t->image || own_gomp_pool(ctx->g, ctx->rt) != 0 ||
	    fork_origin__read(ctx->g->pid, &fo) || !fo.parent || !fo.same_program)
		return;
	parent_pool = forkpool__gomp_threads(fo.parent, NULL, path, sizeof(path));
	if (parent_pool <= 0)
		return;
	fork_origin__describe(&fo, forked, sizeof(forked));
	f = findings__add(out, "fork-hang", SEV_WARNING, ctx->g->pid,
			  "process %d (%s) was forked without exec from process %d, whose GNU "
			  "libgomp pool has %d thread%s; it has none: its first parallel region "
			  "would wait for ever",
			  ctx->g->pid, ctx->g->comm, fo.parent, parent_pool,
			  parent_pool == 1 ? "" : "s");
	finding__evidence(f, "process %d %s", ctx->g->pid, forked);
	finding__evidence(f, "process %d runs a GNU libgomp pool of %d thread%s (%s)", fo.parent,
			  parent_pool, parent_pool == 1 ? "" : "s", path);
	finding__evidence(f, "process %d maps the same libgomp and has no thread of its pool",
			  ctx->g->pid);
	finding__explain(f, FORKPOOL_WHY, FORKPOOL_REMEDY);
}

void fork_hang__process(const struct check_ctx *ctx, struct findings *out)
{
	const struct lockwait_report *r = ctx->lw;
	size_t v;

	if (!r || !r->never_ends) {
		if (ctx->g && forkpool__has_gomp(ctx->g, NULL, 0))
			fork_hazard(ctx, out);
		return;
	}
	/* The verdicts: one per cycle, then one per wait that can never end, in thread order. */
	v = r->n_cycles;
	for (size_t i = 0; i < r->n_threads; i++) {
		const struct thread_wait *w = &r->threads[i];
		struct finding *f;

		if (!w->forever)
			continue;
		f = findings__add(
			out, "fork-hang", SEV_ERROR, ctx->g->pid,
			"thread %d of process %d (%s) waits for ever: %s", w->tid, ctx->g->pid,
			ctx->g->comm,
			w->kind == WAIT_NO_TEAM ? "an OpenMP pool it does not have" :
			w->kind == WAIT_PYLOCK	? "a Python lock no thread of it can release" :
						  "a mutex no thread of it holds");
		finding__evidence(f, "thread %d waits for %s (%s)", w->tid, w->what,
				  wait_kind__id(w->kind));
		if (v < r->n_verdicts) {
			finding__explain(f, r->verdicts[v], r->remedies[v]);
			v++;
		}
	}
}

/*
 * Live: a thread blocked on a futex inside dlopen (it holds the loader lock) while another
 * waits in dlsym for that lock. The batch finding's form; its why is the verdict dlscope
 * stacks would give, its fix the one for a wait on the loader lock (lockwait.c).
 */
void deadlock__on_event(const struct live_ctx *lc, const struct live_event *e, struct findings *out)
{
	const char *file = e->dlopen_file ? e->dlopen_file : "";
	const char *sym = e->waiter_symbol ? e->waiter_symbol : "";
	char *why = NULL;
	struct finding *f;

	if (e->kind != LIVE_LOADER_LOCK_CYCLE)
		return;
	f = findings__add(out, "deadlock", SEV_ERROR, e->pid,
			  "%d threads of process %d (%s) wait for each other", 2, e->pid,
			  lc->g ? lc->g->comm : e->comm);
	finding__evidence(f,
			  "thread %d waits for thread %d: glibc's loader lock (dlsym(\"%s\")) (%s)",
			  e->waiter_tid, e->tid, sym, wait_kind__id(WAIT_LOADER_LOCK));
	finding__evidence(f,
			  "thread %d holds the loader lock inside dlopen(\"%s\") and waits on a "
			  "futex; thread %d waits in dlsym(\"%s\") for the loader lock: a deadlock",
			  e->tid, file, e->waiter_tid, sym);
	if (asprintf(&why,
		     "Deadlock between 2 threads: thread %d waits in dlsym for the loader lock, "
		     "which thread %d holds because it is inside dlopen(\"%s\"); thread %d waits "
		     "on a futex, for another thread to finish (a parallel region, a join); none "
		     "of them can proceed.",
		     e->waiter_tid, e->tid, file, e->tid) < 0)
		why = NULL;
	finding__explain(
		f, why,
		"Do not wait, while inside dlopen, for a thread that needs the loader lock "
		"(dlopen, dlsym, dlclose, dl_iterate_phdr).");
	free(why);
}
