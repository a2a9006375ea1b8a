// SPDX-License-Identifier: GPL-2.0
/*
 * A fork while a fork-unsafe pool has threads (forkpool.h), said live before the child hangs:
 * at a process's fork, its GNU libgomp pool is counted; a child that still runs its parent's
 * program a moment later (it did not exec, as a multiprocessing or DataLoader worker) gets the
 * warning, naming both. A child that execs, or exits first, was never at risk.
 */
#include <stdio.h>
#include <string.h>

#include "finding.h"
#include "forkorigin.h"
#include "forkpool.h"
#include "watch_internal.h"

/* How long a child has to exec before its fork is said: fork-and-exec takes well under this. */
#define FORK_EXEC_GRACE_NS (50ULL * 1000 * 1000)
/* A parent that forks again within this reuses its last count (a pool scan reads its threads). */
#define POOL_RECOUNT_NS (1000ULL * 1000 * 1000)

void forkwatch__on_fork(struct watch *w, const struct proc_state *ps, const struct event *ev)
{
	struct fork_pending *p;
	char path[sizeof(p->runtime)];
	int threads;

	if (!ps || !ps->g || ev->u.fork.thread || !forkpool__has_gomp(ps->g, NULL, 0) ||
	    w->forks.n == sizeof(w->forks.pending) / sizeof(w->forks.pending[0]))
		return;
	if (w->forks.pool_count.pid == ev->pid && ev->t - w->forks.pool_count.t < POOL_RECOUNT_NS) {
		threads = w->forks.pool_count.threads;
		snprintf(path, sizeof(path), "%s", w->forks.pool_count.runtime);
	} else {
		threads = forkpool__gomp_threads(ev->pid, w->cache, path, sizeof(path));
		w->forks.pool_count.pid = ev->pid;
		w->forks.pool_count.t = ev->t;
		w->forks.pool_count.threads = threads;
		snprintf(w->forks.pool_count.runtime, sizeof(w->forks.pool_count.runtime), "%s",
			 path);
	}
	if (threads <= 0)
		return;
	p = &w->forks.pending[w->forks.n++];
	*p = (struct fork_pending){
		.parent = ev->pid, .child = (pid_t)ev->u.fork.child, .threads = threads, .t = ev->t
	};
	snprintf(p->runtime, sizeof(p->runtime), "%s", path);
	snprintf(p->comm, sizeof(p->comm), "%s", ev->comm);
}

static void say(struct watch *w, const struct fork_pending *p, const struct fork_origin *fo)
{
	struct findings fs = { 0 };
	struct finding *f;

	(void)fo;
	f = findings__add(&fs, "fork-hang", SEV_WARNING, p->child,
			  "process %d (%s) forked %d without exec while its GNU libgomp pool had "
			  "%d thread%s: the child's first parallel region will wait for ever",
			  p->parent, p->comm, p->child, p->threads, p->threads == 1 ? "" : "s");
	finding__evidence(f, "process %d's GNU libgomp pool had %d thread%s at the fork (%s)",
			  p->parent, p->threads, p->threads == 1 ? "" : "s", p->runtime);
	finding__evidence(
		f,
		"process %d still ran its parent's program and command line %.0f ms after "
		"the fork: it did not exec",
		p->child, (double)FORK_EXEC_GRACE_NS / 1e6);
	finding__explain(f, FORKPOOL_WHY, FORKPOOL_REMEDY);
	for (size_t i = 0; i < fs.n; i++) {
		struct live_finding lf = { .t = p->t,
					   .pid = p->parent,
					   .tid = p->parent,
					   .comm = p->comm,
					   .f = &fs.f[i] };

		w->st->findings++;
		SINKS(w, finding, &lf);
	}
	findings__free(&fs);
}

void forkwatch__tick(struct watch *w, unsigned long long now)
{
	size_t kept = 0;

	for (size_t i = 0; i < w->forks.n; i++) {
		const struct fork_pending *p = &w->forks.pending[i];
		struct fork_origin fo;

		if (now - p->t < FORK_EXEC_GRACE_NS && !w->loop.draining) {
			w->forks.pending[kept++] = *p;
			continue;
		}
		/* Still its parent's program: it did not exec (nor exit). */
		if (!fork_origin__read(p->child, &fo) && fo.parent == p->parent && fo.same_program)
			say(w, p, &fo);
	}
	w->forks.n = kept;
}
