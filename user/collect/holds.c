// SPDX-License-Identifier: GPL-2.0
/*
 * A hold's answer (reader.c: read_hold): the objects the held thread's loader added since the
 * last hold of its process, their probes attached, in the least time the thread waits. The first
 * hold of a process reads its whole graph; later ones walk the link map from the r_debug found
 * then, read the path of each entry not met before, and analyse only those (import torch: 339
 * objects, a few new at each of its holds).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "elf_cache.h"
#include "elfobj.h"
#include "libgraph.h"
#include "linkmap.h"
#include "procfs.h"
#include "target.h"
#include "watch_internal.h"

struct hold_proc {
	pid_t pid;
	struct target *t; /* held open: the root its paths are named in */
	uint64_t r_debug;
	uint64_t *met; /* the link-map entries whose probes are attached, sorted */
	size_t n_met, cap_met;
	uint64_t *order; /* their link_maps' addresses, in the last walk's order */
	size_t n_order, cap_order;
	struct lm_entry tail; /* the last entry of the last walk (no name), where the next starts */
	uint64_t tail_unloads;	  /* the process's unloads when it was noted (bpf: unloads) */
	uint64_t unloads;	  /* at the hold being answered */
	unsigned int walks_after; /* walks after the tail since the last whole one */
	/* The graph its first hold read, for the loop until it reads one itself: a short
	 * command can be gone by the time its exec is handled. */
	struct libgraph *first;
	uint64_t first_at; /* when it was read (CLOCK_MONOTONIC) */
	/* The named entries later holds met, until the loop reads the process: a process gone
	 * before the loop read it again is the loop's model and these. */
	struct added_entry {
		struct lm_entry e; /* its name owned here */
		uint64_t at;	   /* when its walk ended */
	} * added;
	size_t n_added, cap_added;
};

/* At most this many entries kept for the loop (a dlopen of 300 objects keeps them all). */
#define ADDED_MAX 4096

/* An entry as met: where its link_map is, and where its file went (a freed and reused
 * link_map holds another object, at another bias). */
static uint64_t entry_key(uint64_t lm_addr, uint64_t l_addr, uint64_t l_ld)
{
	return lm_addr * 0x9e3779b97f4a7c15ULL ^ l_addr ^ (l_ld << 17);
}

static int key_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool met_before(const struct lm_entry *e, void *arg, const char **name)
{
	const struct hold_proc *hp = arg;

	*name = NULL; /* its objects are in the model already: no name needed */
	uint64_t k = entry_key(e->lm_addr, e->l_addr, e->l_ld);

	return hp->n_met && bsearch(&k, hp->met, hp->n_met, sizeof(k), key_cmp);
}

static struct hold_proc *find(struct watch *w, pid_t pid)
{
	for (size_t i = 0; i < w->holds.n_procs; i++)
		if (w->holds.procs[i].pid == pid)
			return &w->holds.procs[i];
	return NULL;
}

/* The entries the holds met before @before (CLOCK_MONOTONIC ns): the loop's read has them. */
static void drop_added(struct hold_proc *hp, uint64_t before)
{
	size_t kept = 0;

	for (size_t i = 0; i < hp->n_added; i++) {
		if (hp->added[i].at < before)
			free(hp->added[i].e.name);
		else
			hp->added[kept++] = hp->added[i];
	}
	hp->n_added = kept;
}

static void release(struct hold_proc *hp)
{
	drop_added(hp, UINT64_MAX);
	free(hp->added);
	target__free(hp->t);
	free(hp->met);
	free(hp->order);
	libgraph__free(hp->first);
}

/* @old with the entries the holds met after @after added: NULL when they met none. */
static struct libgraph *old_and_added(const struct hold_proc *hp, const struct libgraph *old,
				      uint64_t after)
{
	struct libgraph *g = NULL;

	for (size_t i = 0; i < hp->n_added; i++) {
		const struct lm_entry *e = &hp->added[i].e;
		char host[PATH_MAX + 64];
		bool known = false;

		if (hp->added[i].at <= after)
			continue;
		if (!g && !(g = libgraph__clone(old, hp->pid)))
			return NULL;
		for (size_t k = 0; k < g->n && !known; k++)
			known = !g->objs[k]->gone && g->objs[k]->lm_addr == e->lm_addr &&
				g->objs[k]->base == e->l_addr;
		if (known)
			continue;
		/* A relative name is the gone process's working directory's: no file to open. */
		if (e->name[0] == '/')
			target__host_path(hp->t, e->name, host, sizeof(host));
		if (!libgraph__add(g, e->ns, e->name, e->name[0] == '/' ? host : NULL, e->l_addr,
				   e->lm_addr, e->l_ld))
			break;
	}
	if (g && libgraph__link(g)) {
		libgraph__free(g);
		g = NULL;
	}
	return g;
}

struct libgraph *holds__take_graph(struct watch *w, pid_t pid, const struct libgraph *old,
				   uint64_t started, uint64_t ended)
{
	struct hold_proc *hp;
	struct libgraph *g = NULL;

	pthread_mutex_lock(&w->holds.lock);
	hp = find(w, pid);
	/* A whole graph newer than the model's: read after the model's read ended. */
	if (hp && hp->first && (!old || !old->n || hp->first_at > ended)) {
		g = hp->first;
		hp->first = NULL;
	} else if (hp && old && old->n) {
		g = old_and_added(hp, old, started);
	}
	pthread_mutex_unlock(&w->holds.lock);
	return g;
}

void holds__drop_graph(struct watch *w, pid_t pid, uint64_t before)
{
	struct hold_proc *hp;

	pthread_mutex_lock(&w->holds.lock);
	hp = find(w, pid);
	if (hp && hp->first && hp->first_at < before) {
		libgraph__free(hp->first);
		hp->first = NULL;
	}
	if (hp)
		drop_added(hp, before);
	pthread_mutex_unlock(&w->holds.lock);
}

static void forget(struct watch *w, pid_t pid)
{
	struct hold_proc *hp = find(w, pid);

	if (!hp)
		return;
	release(hp);
	*hp = w->holds.procs[--w->holds.n_procs];
}

void holds__forget(struct watch *w, pid_t pid)
{
	pthread_mutex_lock(&w->holds.lock);
	forget(w, pid);
	pthread_mutex_unlock(&w->holds.lock);
}

void holds__free_all(struct watch *w)
{
	/* The reader has stopped: nothing else reads them. */
	for (size_t i = 0; i < w->holds.n_procs; i++)
		release(&w->holds.procs[i]);
	free(w->holds.procs);
	w->holds.procs = NULL;
	w->holds.n_procs = w->holds.cap_procs = 0;
}

/* The entries of this walk (@keys, @addrs in its order): what the next hold has met. */
static void remember(struct hold_proc *hp, const uint64_t *keys, uint64_t *addrs, size_t n)
{
	uint64_t *met = malloc((n ? n : 1) * sizeof(*met));

	free(hp->order);
	hp->order = addrs;
	hp->n_order = hp->cap_order = addrs ? n : 0;
	if (!met) {
		hp->n_met = 0; /* the next hold names every entry again: slower, never wrong */
		return;
	}
	memcpy(met, keys, n * sizeof(*met));
	qsort(met, n, sizeof(*met), key_cmp);
	free(hp->met);
	hp->met = met;
	hp->n_met = n;
	hp->cap_met = n ? n : 1;
}

/* A new entry: its file analysed (once per file, w->cache) and what its roles call for. */
static void attach_entry(struct watch *w, struct hold_proc *hp, const struct lm_entry *e)
{
	struct lg_object o = { .path = e->name,
			       .base = e->l_addr,
			       .lm_addr = e->lm_addr,
			       .l_ld = e->l_ld,
			       .in_link_map = true,
			       .origin = LG_DLOPEN };
	char host[PATH_MAX + 64];
	struct stat st;

	/* The program and the vDSO were there at the first hold; "" and unreadable names are
	 * nothing to open. A relative name is the target's working directory's. */
	if (!e->name || !e->name[0])
		return;
	if (e->name[0] == '/')
		target__host_path(hp->t, e->name, host, sizeof(host));
	else
		proc__file_path(host, sizeof(host), hp->pid, e->name);
	if (stat(host, &st))
		return;
	o.inode = st.st_ino;
	o.elf = elf_cache__open(w->cache, host, NULL, st.st_ino, &o.error);
	if (o.elf) {
		probes__attach_object(w, hp->pid, &o);
		probes__note_no_probes(w, hp->pid, &o);
	}
	elfobj__free(o.elf);
	free(o.error);
}

/* A new entry @e, for the loop should the process be gone before it reads it (holds__take_graph). */
static void note_added(struct hold_proc *hp, const struct lm_entry *e)
{
	char *name;

	if (!e->name[0] || hp->n_added >= ADDED_MAX ||
	    (hp->n_added == hp->cap_added && ARRAY_GROW(hp->added, hp->cap_added, 16)) ||
	    !(name = strdup(e->name)))
		return;
	hp->added[hp->n_added++] = (struct added_entry){ .e = *e, .at = mono_ns(CLOCK_MONOTONIC) };
	hp->added[hp->n_added - 1].e.name = name;
}

/*
 * The walk's last entry (one namespace), where the next hold's walk starts while the process
 * unloads nothing: the loader appends what it maps.
 */
static void note_tail(struct hold_proc *hp, const struct linkmap *lm)
{
	const struct lm_entry *e = lm->n && lm->n_namespaces == 1 ? &lm->e[lm->n - 1] : NULL;

	/* A walk after the tail that met nothing leaves the tail where it was. */
	if (lm->after_tail && !lm->n)
		return;
	hp->tail = e ? (struct lm_entry){ .lm_addr = e->lm_addr,
					  .l_addr = e->l_addr,
					  .l_ld = e->l_ld } :
		       (struct lm_entry){ 0 };
	hp->tail_unloads = hp->unloads;
}

/* Entries of a walk after the tail (@keys, @addrs, @n of them): met from now on too. */
static void remember_more(struct hold_proc *hp, const uint64_t *keys, uint64_t *addrs, size_t n)
{
	if (!ARRAY_RESERVE(hp->met, hp->cap_met, hp->n_met + n)) {
		memcpy(hp->met + hp->n_met, keys, n * sizeof(*hp->met));
		hp->n_met += n;
		qsort(hp->met, hp->n_met, sizeof(*hp->met), key_cmp);
	} else {
		hp->n_met = 0; /* the next hold names every entry again: slower, never wrong */
	}
	if (addrs && !ARRAY_RESERVE(hp->order, hp->cap_order, hp->n_order + n)) {
		memcpy(hp->order + hp->n_order, addrs, n * sizeof(*hp->order));
		hp->n_order += n;
	}
	free(addrs);
}

/*
 * A later hold's walk: after the known tail, where the loader appends what it maps (what
 * dlclose took out stays met, and whole walks now and then let it go); whole when the tail
 * is not as it was or unknown.
 */
static int walk(struct hold_proc *hp, struct linkmap **lm)
{
	/* An unload since the tail was noted may have taken it and brought it back after new
	 * objects: then the whole list. */
	if (hp->tail.lm_addr && hp->walks_after < 64 && hp->tail_unloads == hp->unloads &&
	    !linkmap__walk_after(hp->t, hp->r_debug, &hp->tail, met_before, hp, lm)) {
		hp->walks_after++;
		return 0;
	}
	hp->walks_after = 0;
	return linkmap__walk_new(hp->t, hp->r_debug, hp->order, hp->n_order, met_before, hp, lm);
}

/* A walk's entries (@lm, freed): the new ones (named) analysed and probed, all remembered. */
static int apply_walk(struct watch *w, struct hold_proc *hp, struct linkmap *lm)
{
	uint64_t *keys, *addrs;

	keys = malloc((lm->n ? lm->n : 1) * sizeof(*keys));
	addrs = malloc((lm->n ? lm->n : 1) * sizeof(*addrs));
	if (!keys) {
		free(addrs);
		linkmap__free(lm);
		return -ENOMEM;
	}
	for (size_t i = 0; i < lm->n; i++) {
		const struct lm_entry *e = &lm->e[i];

		keys[i] = entry_key(e->lm_addr, e->l_addr, e->l_ld);
		if (addrs)
			addrs[i] = e->lm_addr;
		if (e->name) {
			attach_entry(w, hp, e);
			note_added(hp, e);
		}
	}
	if (lm->after_tail)
		remember_more(hp, keys, addrs, lm->n);
	else
		remember(hp, keys, addrs, lm->n);
	free(keys);
	note_tail(hp, lm);
	linkmap__free(lm);
	return 0;
}

/* The later holds: the walk from the known r_debug, new entries only. -errno: read it whole. */
static int answer_known(struct watch *w, struct hold_proc *hp)
{
	struct linkmap *lm = NULL;
	int err = walk(hp, &lm);

	return err ? err : apply_walk(w, hp, lm);
}

/* The first hold of a process (or one whose walk failed): its whole graph, as a refresh. */
static void answer_whole(struct watch *w, struct hold_proc *hp)
{
	struct libgraph *g;
	uint64_t *keys, *addrs;
	size_t n = 0;
	char why[128];

	if (libgraph__snapshot_cached(hp->t, w->cache, &g, why, sizeof(why)))
		return;
	keys = malloc((g->n ? g->n : 1) * sizeof(*keys));
	addrs = malloc((g->n ? g->n : 1) * sizeof(*addrs));
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		probes__attach_object(w, hp->pid, o);
		probes__note_no_probes(w, hp->pid, o);
		if (keys && addrs && o->in_link_map) {
			addrs[n] = o->lm_addr;
			keys[n++] = entry_key(o->lm_addr, o->base, o->l_ld);
		}
	}
	hp->r_debug = g->from_link_map ? g->r_debug : 0;
	if (keys && addrs)
		remember(hp, keys, addrs, n);
	else
		free(addrs);
	free(keys);
	libgraph__free(hp->first);
	hp->first = g;
	hp->first_at = mono_ns(CLOCK_MONOTONIC);
}

static void answer(struct watch *w, pid_t pid)
{
	struct hold_proc *hp = find(w, pid);
	char why[128];

	if (hp && hp->r_debug && !answer_known(w, hp))
		return;
	/* Its first hold; or its r_debug is no list any more (an exec): read again from the
	 * start, the process opened anew. */
	if (hp && hp->r_debug) {
		forget(w, pid);
		hp = NULL;
	}
	if (!hp) {
		struct target *t;

		if (w->holds.n_procs == w->holds.cap_procs &&
		    ARRAY_GROW(w->holds.procs, w->holds.cap_procs, 16))
			return;
		if (target__open(pid, &t, why, sizeof(why)))
			return;
		hp = &w->holds.procs[w->holds.n_procs++];
		*hp = (struct hold_proc){ .pid = pid, .t = t };
	}
	answer_whole(w, hp);
}

void holds__answer(struct watch *w, pid_t pid, uint64_t unloads, struct linkmap *walked)
{
	struct hold_proc *hp;

	pthread_mutex_lock(&w->holds.lock);
	hp = find(w, pid);
	if (hp)
		hp->unloads = unloads;
	/* The walk holds__answer_known made: the thread is held, the link map as it was. */
	if (walked && hp && hp->r_debug)
		apply_walk(w, hp, walked);
	else {
		linkmap__free(walked);
		answer(w, pid);
	}
	pthread_mutex_unlock(&w->holds.lock);
}

bool holds__answer_known(struct watch *w, pid_t pid, uint64_t unloads, struct linkmap **walked)
{
	struct linkmap *lm = NULL;
	struct hold_proc *hp;
	bool known = false;

	*walked = NULL;
	pthread_mutex_lock(&w->holds.lock);
	hp = find(w, pid);
	if (hp)
		hp->unloads = unloads;
	if (hp && hp->r_debug && !walk(hp, &lm)) {
		/* An entry named is one not met: it wants its file analysed and probed, under
		 * the loop's lock (holds__answer, given this walk). */
		known = true;
		for (size_t i = 0; i < lm->n && known; i++)
			known = lm->e[i].name == NULL;
		if (known)
			apply_walk(w, hp, lm);
		else
			*walked = lm;
	}
	pthread_mutex_unlock(&w->holds.lock);
	return known;
}
