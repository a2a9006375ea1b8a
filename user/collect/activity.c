// SPDX-License-Identifier: GPL-2.0
/* --hot's counts of parallel regions and BLAS dispatches, read from the kernel each second. */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "activity.h"
#include "dlwatch.h"
#include "procfs.h"

/* One thread's count in one runtime: what the kernel said last, and the run's total. */
struct counter {
	struct dlw_activity_key k;
	uint64_t seen;	/* the map's value at the last read (0 after the entry was dropped) */
	uint64_t total; /* since the run started */
	uint64_t delta; /* in the interval being read */
};

struct runtime_name {
	unsigned int id;
	char *path;
	const char *kind;
};

struct activity_counts {
	struct counter *c; /* sorted by pid, runtime, tid */
	size_t n, cap;
	struct runtime_name *rt;
	size_t n_rt, cap_rt;
	/* What activity_counts__totals and __read hand out: room for n counters' groups. */
	struct activity *out;
	struct activity_thread *threads;
	size_t cap_out, cap_threads;
};

static int key_cmp(const struct dlw_activity_key *a, const struct dlw_activity_key *b)
{
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->runtime != b->runtime)
		return a->runtime < b->runtime ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return 0;
}

static int counter_cmp(const void *a, const void *b)
{
	return key_cmp(&((const struct counter *)a)->k, &((const struct counter *)b)->k);
}

struct activity_counts *activity_counts__new(void)
{
	return calloc(1, sizeof(struct activity_counts));
}

void activity_counts__free(struct activity_counts *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_rt; i++)
		free(a->rt[i].path);
	free(a->rt);
	free(a->c);
	free(a->out);
	free(a->threads);
	free(a);
}

int activity_counts__name(struct activity_counts *a, unsigned int id, const char *path,
			  const char *kind)
{
	struct runtime_name *nr;

	if (ARRAY_RESERVE(a->rt, a->cap_rt, a->n_rt + 1))
		return -ENOMEM;
	nr = a->rt;
	nr[a->n_rt] = (struct runtime_name){ id, strdup(path), kind };
	if (!nr[a->n_rt].path)
		return -ENOMEM;
	a->n_rt++;
	return 0;
}

static const struct runtime_name *name_of(const struct activity_counts *a, unsigned int id)
{
	for (size_t i = 0; i < a->n_rt; i++)
		if (a->rt[i].id == id)
			return &a->rt[i];
	return NULL;
}

const char *activity_counts__path(const struct activity_counts *a, unsigned int id)
{
	const struct runtime_name *r = name_of(a, id);

	return r ? r->path : NULL;
}

static struct counter *counter_of(struct activity_counts *a, const struct dlw_activity_key *k)
{
	struct counter probe = { .k = *k }, *c;

	/* bsearch and qsort take no NULL array, even empty. */
	c = a->n ? bsearch(&probe, a->c, a->n, sizeof(*a->c), counter_cmp) : NULL;
	if (c)
		return c;
	if (a->n == a->cap && ARRAY_GROW(a->c, a->cap, 64))
		return NULL;
	a->c[a->n] = probe;
	a->n++;
	qsort(a->c, a->n, sizeof(*a->c), counter_cmp);
	return bsearch(&probe, a->c, a->n, sizeof(*a->c), counter_cmp);
}

/* A thread that ended starts no more regions: its entry can go (a reused tid starts at 0). */
static bool thread_ended(const struct dlw_activity_key *k)
{
	return proc__gone((pid_t)k->pid, (pid_t)k->tid);
}

/*
 * The counters grouped by process and runtime (they are sorted so): for each group, an activity
 * with @n the sum of each counter's @field, and its threads with a non-zero one.
 */
static size_t group(struct activity_counts *a, uint64_t t, bool totals)
{
	size_t n_out = 0, n_thr = 0;
	struct activity *out;
	struct activity_thread *thr;

	if (ARRAY_RESERVE(a->out, a->cap_out, a->n ? a->n : 1) ||
	    ARRAY_RESERVE(a->threads, a->cap_threads, a->n ? a->n : 1))
		return 0;
	out = a->out;
	thr = a->threads;
	for (size_t i = 0; i < a->n;) {
		const struct runtime_name *r = name_of(a, a->c[i].k.runtime);
		struct activity *act = &out[n_out];
		size_t j = i;

		*act = (struct activity){ .t = t,
					  .pid = (pid_t)a->c[i].k.pid,
					  .runtime = r ? r->path : "?",
					  .kind = r ? r->kind : "?",
					  .threads = thr + n_thr };
		for (; j < a->n && a->c[j].k.pid == a->c[i].k.pid &&
		       a->c[j].k.runtime == a->c[i].k.runtime;
		     j++) {
			uint64_t v = totals ? a->c[j].total : a->c[j].delta;

			act->total += a->c[j].total;
			if (!v)
				continue;
			act->n += v;
			thr[n_thr++] = (struct activity_thread){ (pid_t)a->c[j].k.tid, v };
			act->n_threads++;
		}
		if (act->n)
			n_out++;
		i = j;
	}
	return n_out;
}

int activity_counts__read(struct activity_counts *a, int map_fd, uint64_t t,
			  void (*emit)(void *ctx, const struct activity *act), void *ctx)
{
	struct dlw_activity_key k, next, *prev = NULL;
	size_t n;

	for (size_t i = 0; i < a->n; i++)
		a->c[i].delta = 0;
	while (!bpf_map_get_next_key(map_fd, prev, &next)) {
		struct counter *c;
		uint64_t v;

		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(map_fd, &k, &v))
			continue; /* dropped since: nothing to add */
		c = counter_of(a, &k);
		if (!c)
			return -ENOMEM;
		/* Fewer than last time: the entry was dropped and its tid came back. */
		c->delta = v >= c->seen ? v - c->seen : v;
		c->seen = v;
		c->total += c->delta;
	}
	n = group(a, t, false);
	for (size_t i = 0; i < n; i++)
		emit(ctx, &a->out[i]);
	/* After the counts are taken: the kernel's table holds only live threads. */
	for (size_t i = 0; i < a->n; i++) {
		uint64_t v;

		/* Ended first, then unchanged: an ended thread adds nothing after the check. */
		if (!a->c[i].seen || !thread_ended(&a->c[i].k) ||
		    bpf_map_lookup_elem(map_fd, &a->c[i].k, &v) || v != a->c[i].seen)
			continue;
		if (!bpf_map_delete_elem(map_fd, &a->c[i].k))
			a->c[i].seen = 0;
	}
	return 0;
}

const struct activity *activity_counts__totals(struct activity_counts *a, uint64_t t, size_t *n)
{
	*n = group(a, t, true);
	return a->out;
}
