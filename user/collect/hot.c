// SPDX-License-Identifier: GPL-2.0
/*
 * --hot: the kernel's counts of parallel regions and BLAS dispatches, read each second as
 * activity records; two pools of one process busy in the same second have their threads counted
 * against the CPUs it may use (live oversubscription), once per process.
 */
#include <bpf/libbpf.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "activity.h"
#include "addrmap.h"
#include "dlwatch.skel.h"
#include "job.h"
#include "output.h"
#include "procfs.h"
#include "procmaps.h"
#include "rtprio.h"
#include "runtimes.h"
#include "target.h"
#include "threadscan.h"
#include "watch_internal.h"

static void emit_activity(void *ctx, const struct activity *a)
{
	struct watch *w = ctx;
	struct busy_pool *b = &w->hot.busy[w->hot.n_busy];

	SINKS(w, activity, a);
	if (w->hot.n_busy == sizeof(w->hot.busy) / sizeof(w->hot.busy[0]))
		return;
	*b = (struct busy_pool){ .pid = a->pid, .runtime = a->runtime, .kind = a->kind, .n = a->n };
	for (size_t i = 0; i < a->n_threads && b->n_starters < 8; i++) {
		b->starter_n[b->n_starters] = a->threads[i].n;
		b->starters[b->n_starters++] = a->threads[i].tid;
	}
	w->hot.n_busy++;
}

/* Scans of a process's threads for its pool sizes, one a second while two pools are busy. */
#define POOL_SCANS 10

/* The most threads seen in @runtime's pool, @n now among them. */
static int pool_most(struct proc_state *ps, const char *runtime, int n)
{
	for (size_t i = 0; i < ps->n_pools; i++)
		if (ps->pools[i].runtime == runtime) {
			if (n > ps->pools[i].most)
				ps->pools[i].most = n;
			return ps->pools[i].most;
		}
	if (ps->n_pools < sizeof(ps->pools) / sizeof(ps->pools[0]))
		ps->pools[ps->n_pools++] = (struct pool_seen){ runtime, n };
	return n;
}

/* A pool's threads: those its runtime started (or parked in it), found without stopping them. */
static int pool_of(const struct runtime_list *rl, const struct libgraph *g, const char *path)
{
	for (size_t i = 0; i < rl->n; i++)
		if (!strcmp(g->objs[rl->r[i].obj]->path, path))
			return rl->r[i].pool_threads > 0 ? rl->r[i].pool_threads : 0;
	return 0;
}

/*
 * The BLAS pools of @b[0..n) that threads of an OpenMP pool dispatched to (threads an OpenMP
 * runtime started run only inside parallel regions), when that BLAS is OpenBLAS's pthreads
 * build: one blas-in-parallel finding into @fs.
 */
static void nested_pools(const struct proc_state *ps, const struct busy_pool *b, size_t n,
			 const struct runtime_list *rl, const struct threadscan *ts,
			 const char *comm, const cpu_set_t *cpus, const char *cpus_list,
			 struct findings *fs)
{
	const struct libgraph *g = ps->g;

	for (size_t i = 0; i < n; i++) {
		struct live_nested ln = { .pid = b[i].pid,
					  .comm = comm,
					  .blas = b[i].runtime,
					  .ncpu = CPU_COUNT(cpus),
					  .cpus_list = cpus_list };
		const struct runtime *r = NULL;

		for (size_t k = 0; k < rl->n && !r; k++)
			if (!strcmp(g->objs[rl->r[k].obj]->path, b[i].runtime))
				r = &rl->r[k];
		if (strcmp(b[i].kind, "blas") || !r || strcmp(r->threading, "pthreads"))
			continue;
		ln.blas_pool = r->pool_threads > 0 ? r->pool_threads : 0;
		for (size_t k = 0; k < b[i].n_starters; k++)
			for (size_t t = 0; t < ts->n; t++) {
				const struct thread_info *ti = &ts->t[t];

				if (ti->tid != b[i].starters[k] || ti->start_obj >= g->n ||
				    !obj_roles__find(lg_object__roles(g->objs[ti->start_obj]),
						     ROLE_OPENMP))
					continue;
				ln.openmp = g->objs[ti->start_obj]->path;
				ln.omp_pool = pool_of(rl, g, ln.openmp);
				ln.omp_callers++;
				ln.calls += b[i].starter_n[k];
			}
		blas_in_parallel__live(&ln, fs);
	}
}

static bool seen_tid(const pid_t *tids, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/*
 * Pools @b[0..n) of one process ran regions in the same second: count their threads (a scan of
 * its threads' stacks, which does not stop it) against the CPUs it may use. Once per process.
 */
static void check_pools(struct watch *w, const struct busy_pool *b, size_t n)
{
	struct proc_state *ps = proctable__find(w, b[0].pid);
	struct runtime_list rl = { 0 };
	struct live_pool lp[8];
	struct findings fs = { 0 };
	struct threadscan *ts = NULL;
	struct addrmap *am = NULL;
	struct procmaps *maps = NULL;
	struct target *t = NULL;
	pid_t starters[64];
	size_t n_starters = 0;
	char list[256], comm[32] = "?", why[256];
	struct rtprio prio;
	bool scanned;
	cpu_set_t cpus;

	if (!ps || !ps->g || !ps->maps || (ps->oversubscribed && ps->nested_said) ||
	    ps->pool_scans >= POOL_SCANS || n < 2 ||
	    job__cpus_allowed(b[0].pid, &cpus, list, sizeof(list)) ||
	    target__open(b[0].pid, &t, why, sizeof(why)))
		return;
	ps->pool_scans++;
	/* Maps read now: the pools' thread stacks are younger than the collector's copy. Its
	 * maps and stacks read take its mmap lock: at a real-time priority (rtprio.h). */
	rtprio__raise(&prio);
	maps = procmaps__read(b[0].pid);
	am = maps ? addrmap__build(maps, ps->g) : NULL;
	scanned = am && !threadscan__scan(t, ps->g, am, &ts) &&
		  !runtimes__collect(ps->g, t, ts, &rl);
	rtprio__restore(&prio);
	if (scanned) {
		if (n > 8)
			n = 8;
		for (size_t i = 0; i < n; i++) {
			lp[i] = (struct live_pool){ b[i].runtime, b[i].n,
						    pool_most(ps, b[i].runtime,
							      pool_of(&rl, ps->g, b[i].runtime)) };
			for (size_t k = 0; k < b[i].n_starters && n_starters < 64; k++)
				if (!seen_tid(starters, n_starters, b[i].starters[k]))
					starters[n_starters++] = b[i].starters[k];
		}
		proc__comm(b[0].pid, 0, comm, sizeof(comm));
		if (!ps->nested_said)
			nested_pools(ps, b, n, &rl, ts, comm, &cpus, list, &fs);
		if (!ps->oversubscribed)
			oversubscription__live(&(struct live_pools){ .pid = b[0].pid,
								     .comm = comm,
								     .p = lp,
								     .n = n,
								     .starters = (int)n_starters,
								     .ncpu = CPU_COUNT(&cpus),
								     .cpus_list = list },
					       &fs);
	}
	for (size_t i = 0; i < fs.n; i++) {
		struct live_finding lf = { .t = w->hot.last_activity,
					   .pid = b[0].pid,
					   .tid = b[0].pid,
					   .comm = comm,
					   .f = &fs.f[i] };

		if (!strcmp(fs.f[i].id, "blas-in-parallel"))
			ps->nested_said = true;
		else
			ps->oversubscribed = true;
		w->st->findings++;
		SINKS(w, finding, &lf);
	}
	findings__free(&fs);
	runtimes__free(&rl);
	threadscan__free(ts);
	addrmap__free(am);
	procmaps__free(maps);
	target__free(t);
}

/*
 * The counts since the last read, as activity records stamped @t. @last: the read after the run
 * ended (the probes are off), stamped with the run's end, not the later moment of the read, and
 * without the scan of the busy pools' threads (a finding after the end would be news to no one).
 */
void hot__read_activity(struct watch *w, unsigned long long t, bool last)
{
	w->hot.last_activity = t;
	w->hot.n_busy = 0;
	if (activity_counts__read(w->hot.counts, bpf_map__fd(w->skel->maps.activity),
				  w->hot.last_activity, emit_activity, w))
		dls_warn("cannot read the activity counts: out of memory");
	/* The busy runtimes come grouped by process. */
	for (size_t i = 0, j; i < w->hot.n_busy && !last; i = j) {
		for (j = i + 1; j < w->hot.n_busy && w->hot.busy[j].pid == w->hot.busy[i].pid; j++)
			;
		if (j - i >= 2)
			check_pools(w, &w->hot.busy[i], j - i);
	}
}
