// SPDX-License-Identifier: GPL-2.0
/*
 * The watched processes: each one's model (graph and maps) read again as events call for,
 * and the objects each event brought reported, in the stream's order.
 */
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "dlwatch.skel.h"
#include "paths.h"
#include "elfobj.h"
#include "pkgowner.h"
#include "procfs.h"
#include "procmaps.h"
#include "rtprio.h"
#include "target.h"
#include "watch_internal.h"

/* An object the model gained (or had when we attached: @baseline), to every sink. */
static void loaded(struct watch *w, const struct proc_state *ps, const struct lg_object *o,
		   unsigned long long ts, bool baseline)
{
	struct loaded_obj l = { .t = ts, .pid = ps->pid, .g = ps->g, .o = o, .baseline = baseline };

	SINKS(w, loaded, &l);
}

static struct libgraph *graph_empty(struct watch *w, pid_t pid, const char *comm)
{
	return libgraph__new_cached(pid, comm, w->cache);
}

/*
 * A process that started under a loader with no probe yet (one in a root dlscope had not seen:
 * a followed child entering a container) ran unheld until the holds' reader probed it at its
 * exec (probes__probe_exec_loader), or until this read: its dlopen calls until then were not
 * seen; what they loaded is listed from its link map. Said once, never silent. @g: its graph,
 * or NULL when it was gone before it could be read.
 */
static void unprobed_loader(struct watch *w, struct proc_state *ps, const struct libgraph *g)
{
	const char *comm = g ? g->comm : ps->start.comm;
	unsigned long long exec = ps->start.ev.t;
	char note[2 * PATH_MAX];
	struct late_loader late = { 0 };
	const char *why;

	if (ps->loader_said || ps->start.ev.kind != EVENT_EXEC)
		return;
	if (!probes__late_loader(w, ps->pid, exec, &late)) {
		/* Not seen by the reader (holds off, or the exec read first): as this read finds. */
		late = (struct late_loader){ 0 };
		for (size_t i = 0; g && i < g->n && !late.pid; i++)
			if (probes__is_loader(g->objs[i]) &&
			    !probes__loader_probed(w, ps->pid, g->objs[i]))
				late = (struct late_loader){ .pid = ps->pid,
							     .exec_ns = exec,
							     .probed_ns =
								     mono_ns(CLOCK_MONOTONIC) };
		if (!late.pid)
			return;
		for (size_t i = 0; g && i < g->n; i++)
			if (probes__is_loader(g->objs[i])) {
				snprintf(late.loader, sizeof(late.loader), "%s", g->objs[i]->path);
				late.own = g->objs[i]->origin == LG_EXECUTABLE;
			}
	}
	ps->loader_said = true;
	w->st->late_starts++;
	if (!late.probed_ns)
		w->st->late_starts_gone++;
	else if ((late.probed_ns - exec) / 1e6 > w->st->late_start_ms_max)
		w->st->late_start_ms_max = (late.probed_ns - exec) / 1e6;
	why = late.own ? "a static program with glibc's dlopen, its own loader, not probed before "
			 "it ran" :
			 "a loader not probed before it ran (another root)";
	if (late.probed_ns)
		snprintf(
			note, sizeof(note),
			"dlscope: process %d (%s) started under %s, %s: its dlopen calls in the "
			"%.1f ms from its exec to its probes were not seen; what they loaded is listed",
			ps->pid, comm, late.loader, why, (double)(late.probed_ns - exec) / 1e6);
	else
		snprintf(note, sizeof(note),
			 "dlscope: process %d (%s) started under %s, %s, and was gone before its "
			 "probes could be put in: none of its dlopen calls was seen",
			 ps->pid, comm, late.loader[0] ? late.loader : "its loader", why);
	SINKS(w, note, note);
}

/* The kernel's PF_EXITING (include/linux/sched.h): set on every thread of an exit_group. */
#define PROC_PF_EXITING 0x4UL

/*
 * Whether thread @tid of @pid (0: its leader) is exiting or has exited: no such task, a zombie
 * not reaped yet (*@dead), or in its exit (its address space may be half unmapped already).
 */
static bool ending(pid_t pid, pid_t tid, bool *dead)
{
	unsigned long flags = 0;
	char state = 0;

	*dead = proc__read_stat(pid, tid, NULL, 0, &state, &flags) || state == 'Z' || state == 'X';
	return *dead || (flags & PROC_PF_EXITING);
}

/* Whether @pid has exited or is exiting, by its leader. */
static bool gone(pid_t pid)
{
	bool dead;

	return ending(pid, 0, &dead);
}

/*
 * Whether @g, just read from @ps's process, may be of an address space its exit was taking
 * apart: the process is exiting, and the read is not of a dlopen being handled that found the
 * object the call returned. Such a read would say a dlopen's dependencies unknown, or objects
 * unloaded by the dlclose being handled. One read of its stat (two when its main thread is
 * gone); none for a dlopen's that found its object.
 */
static bool torn_read(struct watch *w, const struct proc_state *ps, const struct libgraph *g)
{
	const struct watch_event *we = w->cur.we;
	uint64_t handle = we && we->ev.kind == EVENT_DLOPEN && we->ev.pid == ps->pid ?
				  we->ev.u.dlopen.handle :
				  0;
	bool dead;
	pid_t task;

	for (size_t i = 0; handle && i < g->n; i++)
		if (!g->objs[i]->gone && g->objs[i]->lm_addr == handle)
			return false;
	if (!ending(ps->pid, 0, &dead))
		return false;
	if (!dead)
		return true; /* its leader in an exit_group */
	/* A main thread gone by pthread_exit leaves the process to the others: it is exiting
	 * when the thread its files are read through is. */
	task = proc__live_task(ps->pid);
	return task <= 0 || task == ps->pid || ending(ps->pid, task, &dead);
}

static void keep_gone(struct proc_state *ps, const struct libgraph *old, const struct lg_object *o);

/*
 * At most this many processes' targets are kept open (proc_state.t): three descriptors each,
 * against a soft limit of 1,024 that the probes' links share (--follow of a parallel build).
 */
#define TARGETS_KEPT_MAX 64

/* proc_state.t: dropped at its exec and exit. */
static void drop_target(struct watch *w, struct proc_state *ps)
{
	if (ps->t)
		w->n_targets_kept--;
	target__free(ps->t);
	ps->t = NULL;
}

/* @ps's process opened for reading: the one kept (proc_state.t) while it still checks out. */
static int open_target(struct watch *w, struct proc_state *ps, struct target **t, char *why,
		       size_t len)
{
	if (ps->t && !target__recheck(ps->t, why, len)) {
		*t = ps->t;
		return 0;
	}
	drop_target(w, ps);
	if (target__open(ps->pid, t, why, len))
		return -1;
	if (!w->o->settle_ms && w->n_targets_kept < TARGETS_KEPT_MAX) {
		ps->t = *t;
		w->n_targets_kept++;
	}
	return 0;
}

/*
 * Whether @we, a dlopen or dlclose of @ps, left its link map as it was (the kernel saw the
 * loader change nothing while it ran) with the model holding what a dlopen returned: a read
 * would find what the last one found. Such a read (a dlopen of a library loaded already, or
 * dlopen(NULL)) cost some 50 us of the collector's CPU and a moment of the target's mmap lock.
 */
bool proctable__unchanged(const struct proc_state *ps, const struct watch_event *we)
{
	const struct event *ev = &we->ev;

	if (!ps || !ps->g || !we->raw || we->size < offsetof(struct dlw_event, path) ||
	    !we->raw->lm_unchanged)
		return false;
	if (ev->kind == EVENT_DLCLOSE)
		return true;
	for (size_t i = 0; ev->kind == EVENT_DLOPEN && ev->u.dlopen.handle && i < ps->g->n; i++)
		if (!ps->g->objs[i]->gone && ps->g->objs[i]->lm_addr == ev->u.dlopen.handle)
			return true;
	return false;
}

/* Re-read the process's graph and maps; attach probes to any runtime it now has. */
int proctable__refresh(struct watch *w, struct proc_state *ps)
{
	struct libgraph *old = ps->g, *g = NULL;
	struct procmaps *maps;
	uint64_t started;
	bool unlocked, opened;
	struct rtprio prio;
	struct target *t;
	char why[256];

	w->st->reads++;
	started = mono_ns(CLOCK_MONOTONIC);
	/* Its memory, its maps and the uprobes attached take its mmap lock: at a real-time
	 * priority, so that a starved collector never holds it (rtprio.h). */
	rtprio__raise(&prio);
	/* Its /proc files are read without the loop's lock (they are nobody else's): its maps
	 * alone took 0.6 ms with 200 objects, which a thread held for its probes waited. */
	unlocked = reader__unlock(w);
	opened = !open_target(w, ps, &t, why, sizeof(why));
	/* One read of its maps: the graph's and the one kept for the unwinder. */
	maps = opened ? procmaps__read(ps->pid) : NULL;
	reader__relock(w, unlocked);
	if (opened) {
		reader__sleep_unlocked(w, t);
		if (maps &&
		    !libgraph__snapshot_again(t, maps, w->cache, old, &g, why, sizeof(why))) {
			reader__let_holds_in(w);
			/* Objects seen before answer from the cache; out of memory only leaves
			 * owners out. The package index (cold, the host's dpkg database: 30 ms)
			 * is the loop's alone: a new image's loader is probed meanwhile. */
			unlocked = reader__unlock(w);
			libgraph__find_packages(g, t, w->pkgs);
			reader__relock(w, unlocked);
			procmaps__free(ps->maps);
			ps->maps = maps;
			maps = NULL;
		}
		if (t != ps->t)
			target__free(t);
	}
	procmaps__free(maps);
	if (g && torn_read(w, ps, g)) {
		libgraph__free(g);
		g = NULL;
	}
	/* Gone (a short command) before it was read again: the graph its first hold read, if
	 * that came after the model's. Only then: a failed read of a live process (a link map
	 * rewritten all along) keeps the model it has. */
	if (!g && gone(ps->pid))
		g = holds__take_graph(w, ps->pid, old, ps->read_started, ps->read_at);
	if (g)
		holds__drop_graph(w, ps->pid, started);
	if (!g) {
		rtprio__restore(&prio);
		return -ESRCH;
	}
	reader__let_holds_in(w);
	ps->g = g;
	ps->read_at = mono_ns(CLOCK_MONOTONIC);
	ps->read_started = started;
	ps->unsettled = false;
	reported__carry(old, g);
	unprobed_loader(w, ps, g);
	for (size_t i = 0; i < g->n; i++) {
		probes__attach_object(w, ps->pid, g->objs[i]);
		if (!ps->dlerror_noted)
			ps->dlerror_noted = probes__note_dlerror(w, ps->pid, g->objs[i]);
	}
	pyprocs__find(w, ps);
	rtprio__restore(&prio);
	if (!old && !ps->seen_all) {
		/* Attached to a running process: its present objects are the baseline, in a
		 * trace too, so that a replay starts from the whole graph. */
		unsigned long long now = mono_ns(CLOCK_MONOTONIC);

		ps->seen_all = true;
		w->st->attached_running++;
		for (size_t i = 0; i < g->n; i++) {
			reported__mark(g, g->objs[i], now);
			loaded(w, ps, g->objs[i], now, true);
		}
		if (w->o->check_running)
			live_findings__check_running(w, ps);
	}
	/* What was reported and is gone from the new snapshot: once per load, said with the
	 * dlclose that did it (unloads_said). */
	ps->refreshes++;
	for (size_t k = 0; old && k < old->n; k++) {
		bool still = false;

		for (size_t i = 0; i < g->n && !still; i++)
			still = reported__same_load(old->objs[k], g->objs[i]);
		if (still || !old->objs[k]->reported)
			continue;
		reported__forget(old, old->objs[k]);
		if (old->objs[k]->origin != LG_VDSO)
			keep_gone(ps, old, old->objs[k]);
	}
	libgraph__free(old);
	return 0;
}

/* The object @o of @old is gone: kept, with what it needed, until an event claims it. */
static void keep_gone(struct proc_state *ps, const struct libgraph *old, const struct lg_object *o)
{
	struct gone_obj *x;

	if (ps->n_gone == ps->cap_gone && ARRAY_GROW(ps->gone, ps->cap_gone, 16))
		return;
	x = &ps->gone[ps->n_gone];
	*x = (struct gone_obj){ .lm_addr = o->lm_addr,
				.path = strdup(o->path),
				.snapshot = ps->refreshes,
				.loaded_at = o->reported_at };
	if (!x->path)
		return;
	x->needs = calloc(o->n_children ? o->n_children : 1, sizeof(*x->needs));
	for (size_t c = 0; x->needs && c < o->n_children; c++)
		x->needs[x->n_needs++] = old->objs[o->children[c]]->lm_addr;
	ps->n_gone++;
}

/* Say gone object @i at @we, and what it needed that went with it. */
static void say_gone(struct watch *w, struct proc_state *ps, size_t i, const struct watch_event *we,
		     unsigned int depth)
{
	struct gone_obj *x = &ps->gone[i];

	if (x->said || depth > 64)
		return;
	x->said = true;
	SINKS(w, unloaded, we->ev.t, ps->pid, we->ev.tid, x->path);
	/* What it needed, gone in the same snapshot (a link_map's address names one load). */
	for (size_t n = 0; n < x->n_needs; n++)
		for (size_t j = 0; j < ps->n_gone; j++)
			if (x->needs[n] && ps->gone[j].lm_addr == x->needs[n] &&
			    ps->gone[j].snapshot == x->snapshot)
				say_gone(w, ps, j, we, depth + 1);
}

void proctable__forget_gone(struct proc_state *ps)
{
	for (size_t i = 0; i < ps->n_gone; i++) {
		free(ps->gone[i].path);
		free(ps->gone[i].needs);
	}
	free(ps->gone);
	ps->gone = NULL;
	ps->n_gone = ps->cap_gone = 0;
	for (size_t i = 0; i < ps->n_opened; i++)
		free(ps->opened[i].path);
	free(ps->opened);
	ps->opened = NULL;
	ps->n_opened = ps->cap_opened = 0;
}

/* The path of what handle @h is, as the latest dlopen that returned it said; NULL unknown. */
static const char *opened_path(const struct proc_state *ps, uint64_t h)
{
	for (size_t i = 0; h && i < ps->n_opened; i++)
		if (ps->opened[i].handle == h)
			return ps->opened[i].path;
	return NULL;
}

static void note_opened(struct proc_state *ps, uint64_t h, const char *path)
{
	char *dup = strdup(path);
	size_t i;

	if (!dup)
		return;
	for (i = 0; i < ps->n_opened && ps->opened[i].handle != h; i++)
		;
	if (i == ps->n_opened) {
		if (ps->n_opened == ps->cap_opened && ARRAY_GROW(ps->opened, ps->cap_opened, 16)) {
			free(dup);
			return;
		}
		ps->opened[ps->n_opened++] = (struct handle_path){ h, NULL };
	}
	free(ps->opened[i].path);
	ps->opened[i].path = dup;
}

/* Two names of one file: the model's and a dlopen's may differ in their directory part. */
static bool same_file_name(const char *a, const char *b)
{
	return a && b && !strcmp(path_base(a), path_base(b));
}

/*
 * The unloads @we did: a dlclose's are its handle's object and what it needed that left with
 * it (a later dlclose's stay for its own record); an exec or an exit says whatever is left.
 */
static void unloads_said(struct watch *w, struct proc_state *ps, const struct watch_event *we)
{
	size_t kept = 0;
	const char *closed =
		we->ev.kind == EVENT_DLCLOSE ? opened_path(ps, we->ev.u.dlclose.handle) : NULL;

	/* A dlclose's: the oldest load gone at its handle (the link_map may have held
	 * another since). */
	for (size_t i = 0; i < ps->n_gone; i++) {
		if (we->ev.kind != EVENT_DLCLOSE) {
			say_gone(w, ps, i, we, 0);
		} else if (we->ev.u.dlclose.handle &&
			   ps->gone[i].lm_addr == we->ev.u.dlclose.handle &&
			   ps->gone[i].loaded_at <= we->ev.t &&
			   (!closed || same_file_name(closed, ps->gone[i].path))) {
			say_gone(w, ps, i, we, 0);
			break;
		}
	}
	for (size_t i = 0; i < ps->n_gone; i++) {
		if (ps->gone[i].said) {
			free(ps->gone[i].path);
			free(ps->gone[i].needs);
		} else {
			ps->gone[kept++] = ps->gone[i];
		}
	}
	ps->n_gone = kept;
}

static void announce_one(struct watch *w, struct proc_state *ps, const struct lg_object *o,
			 const struct watch_event *cause)
{
	reported__mark(ps->g, o, cause->ev.t);
	loaded(w, ps, o, cause->ev.t, false);
	live_findings__on_object(w, ps, cause, o);
	/* A dlopen that brings 300 objects runs 300 objects' detectors: a hold waits for one. */
	reader__let_holds_in(w);
}

/* Report @o and what it needs that is not reported yet, depth first in DT_NEEDED order. */
static void announce_closure(struct watch *w, struct proc_state *ps, const struct lg_object *o,
			     const struct watch_event *cause, unsigned int depth)
{
	if (o->gone || o->reported || depth > 64)
		return;
	announce_one(w, ps, o, cause);
	for (size_t c = 0; c < o->n_children; c++)
		announce_closure(w, ps, ps->g->objs[o->children[c]], cause, depth + 1);
}

/*
 * Report what @cause brought into the model: at exec, the start-up objects (the executable,
 * the loader, preloads and their DT_NEEDED closure); at a dlopen's return, the object it
 * returned and its closure; at exit, whatever no event claimed. Returns false when a dlopen's
 * object is not in the model.
 */
static bool announce(struct watch *w, struct proc_state *ps, const struct watch_event *cause)
{
	const struct event *ev = &cause->ev;
	uint64_t handle = ev->kind == EVENT_DLOPEN ? ev->u.dlopen.handle : 0;
	struct libgraph *g = ps->g;
	bool found = false, by_handle = false;

	if (!g)
		return false;
	for (size_t i = 0; handle && i < g->n; i++)
		by_handle = by_handle || g->objs[i]->lm_addr == handle;
	/* The exec was handled while the loader was still mapping the start-up objects. */
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		if (o->origin == LG_EXECUTABLE || o->origin == LG_INTERPRETER ||
		    o->origin == LG_VDSO || o->origin == LG_PRELOAD)
			announce_closure(w, ps, o, ps->start.ev.kind ? &ps->start : cause, 0);
	}
	for (size_t i = 0; i < g->n; i++) {
		struct lg_object *o = g->objs[i];

		switch (ev->kind) {
		case EVENT_EXEC: break;
		case EVENT_DLOPEN:
			/* By its handle, the link_map: an object of that path at another is
			 * another load (a later one, read ahead of the stream). */
			if (handle ? o->lm_addr == handle :
				     ev->u.dlopen.file[0] && !strcmp(o->path, ev->u.dlopen.file)) {
				found = true;
				/*
				 * New at its dlopen's return: that dlopen brought it, even where
				 * something loaded since (read in the same snapshot) needs it.
				 */
				if (!o->gone && !o->reported &&
				    (!by_handle || o->lm_addr == handle))
					libgraph__saw_dlopen(o);
				announce_closure(w, ps, o, cause, 0);
			}
			break;
		default: announce_closure(w, ps, o, cause, 0);
		}
	}
	return found;
}

/*
 * The process exited before we could read it: judge the object dlopen returned from its file
 * alone (the path comes from the link map, read in the kernel at dlopen's return).
 */
static void loaded_after_exit(struct watch *w, struct proc_state *ps, const struct watch_event *we)
{
	const char *file = we->ev.u.dlopen.file;
	uint64_t handle = we->ev.u.dlopen.handle;
	struct lg_object *o;
	char host[PATH_MAX + 64], note[PATH_MAX + 128];

	if (!file[0] || !(ps->g = ps->g ?: graph_empty(w, ps->pid, we->comm)))
		return;
	if (proc__file_path(host, sizeof(host), we->ev.pid, file) || access(host, R_OK))
		snprintf(host, sizeof(host), "%s", file);
	o = libgraph__add(ps->g, 0, file, host, handle, handle, 0);
	if (!o || !o->elf)
		return;
	o->inode = elfobj__inode(o->elf);
	libgraph__saw_dlopen(o);
	if (gone(ps->pid))
		snprintf(note, sizeof(note),
			 "        %d: the process is gone; %s's dependencies are unknown", ps->pid,
			 file);
	else
		snprintf(note, sizeof(note),
			 "        %d: %s had left the link map when the process was read (a "
			 "dlclose since); its dependencies are unknown",
			 ps->pid, file);
	SINKS(w, note, note);
	announce_one(w, ps, o, we);
}

/* A process caught at its exec (a command, --comm): everything it loads is news. */
int proctable__add_empty(struct watch *w, pid_t pid, const char *comm, bool kernel_knows)
{
	uint32_t key = (uint32_t)pid;
	uint8_t one = 1;

	if (ARRAY_RESERVE(w->procs, w->cap_procs, w->n_procs + 1))
		return -ENOMEM;
	w->procs[w->n_procs++] = (struct proc_state){
		.pid = pid,
		.g = graph_empty(w, pid, comm),
		.seen_all = true,
	};
	/* Offline (tests): no BPF map to tell; an exec by name, the kernel's exec handler did. */
	return w->skel && !kernel_knows ?
		       bpf_map__update_elem(w->skel->maps.targets, &key, sizeof(key), &one,
					    sizeof(one), BPF_ANY) :
		       0;
}

static void settle_one(struct watch *w, struct proc_state *ps, uint64_t now);

/*
 * watch_opts.settle_ms: @ps (a fork's copy of its parent, a new image) is read only once it has
 * lived settle_ms, by proctable__settle; one gone before is never read at all, which is what
 * keeps a node's storm of short commands (a shell loop, a build) from costing a read each.
 */
static bool settle_later(struct watch *w, struct proc_state *ps)
{
	if (!w->o->settle_ms)
		return false;
	ps->read_at = mono_ns(CLOCK_MONOTONIC);
	ps->unsettled = true;
	return true;
}

/*
 * Watch @pid from now on. A forked child (@parent > 0) that exits before it can be read keeps
 * a copy of its parent's model: fork copied the parent's objects, which are not news.
 */
int proctable__add(struct watch *w, pid_t pid, pid_t parent)
{
	struct proc_state *ps, *pp;
	uint8_t one = 1;
	uint32_t key = (uint32_t)pid;
	int err;

	if (proctable__find(w, pid))
		return 0;
	if (ARRAY_RESERVE(w->procs, w->cap_procs, w->n_procs + 1))
		return -ENOMEM;
	w->procs[w->n_procs] = (struct proc_state){ .pid = pid };
	w->n_procs++;
	/* A fork's child is a target already: the kernel's fork handler made it one. */
	if (w->skel && parent <= 0)
		bpf_map__update_elem(w->skel->maps.targets, &key, sizeof(key), &one, sizeof(one),
				     BPF_ANY);
	ps = &w->procs[w->n_procs - 1];
	pp = parent > 0 ? proctable__find(w, parent) : NULL;
	if (pp && pp->g) {
		ps->g = libgraph__clone(pp->g, pid);
		ps->seen_all = true;
		ps->start = pp->start;
		/* settle_ms: read once it has lived that long (a shell's fork-exec never is). */
		if (ps->g && settle_later(w, ps))
			return 0;
	}
	err = proctable__refresh(w, ps);
	return err && ps->g ? 0 : err;
}

void proctable__drop(struct watch *w, pid_t pid)
{
	uint32_t key = (uint32_t)pid;

	if (w->skel) {
		bpf_map__delete_elem(w->skel->maps.targets, &key, sizeof(key), 0);
		bpf_map__delete_elem(w->skel->maps.dlerror_slot, &key, sizeof(key), 0);
	}
	proctable__drop_exited(w, pid);
}

/* Its exit's record read: the kernel forgot it already (its maps' entries). */
void proctable__drop_exited(struct watch *w, pid_t pid)
{
	for (size_t i = 0; i < w->n_procs; i++) {
		if (w->procs[i].pid != pid)
			continue;
		libgraph__free(w->procs[i].g);
		procmaps__free(w->procs[i].maps);
		drop_target(w, &w->procs[i]);
		proctable__forget_gone(&w->procs[i]);
		sample_unwinder__free(w->procs[i].uw);
		py_code_cache__free(w->procs[i].codes);
		w->procs[i] = w->procs[--w->n_procs];
		break;
	}
	pyprocs__forget(w, NULL, pid);
	holds__forget(w, pid);
}

/*
 * Whether running process @pid's initial environment holds what the watch selects by: its
 * entry (NAME=VALUE) and its node's (each when set), from one read of the environment.
 */
static bool environ_selected(const struct watch *w, pid_t pid)
{
	const char *entry = w->o->env_entry, *node = w->o->env_node;
	size_t size;
	char *env;
	bool has;

	if (!entry && !node)
		return true;
	if (proc__environ(pid, &env, &size))
		return false;
	has = (!entry || proc__environ_has(env, size, entry)) &&
	      (!node || proc__environ_has(env, size, node));
	free(env);
	return has;
}

/* The model follows the event: processes come and go, their graphs are read again. */
struct proc_state *proctable__follow(struct watch *w, struct proc_state *ps,
				     const struct watch_event *we)
{
	const struct event *ev = &we->ev;

	/* proctable__add may move w->procs: @ps is found again. */
	/* --follow, and --comm: a child forked without exec has its parent's name. */
	if (ev->kind == EVENT_FORK && !ev->u.fork.thread &&
	    (w->o->follow || watch__by_exec(w->o))) {
		proctable__add(w, ev->u.fork.child, ev->pid);
		ps = proctable__find(w, ev->pid);
	}
	if (!ps && ev->kind == EVENT_EXEC && watch__by_exec(w->o) &&
	    (!w->o->env_node || environ_selected(w, ev->pid)) &&
	    !proctable__add_empty(w, ev->pid, ev->comm, true))
		ps = proctable__find(w, ev->pid);
	if (ps && ev->kind == EVENT_EXEC) {
		/* A new image: everything it has is news, nothing of the old one "left". */
		libgraph__free(ps->g);
		ps->g = graph_empty(w, ps->pid, ev->comm);
		drop_target(w, ps);
		holds__forget(w, ps->pid);
		/* The old image's handles mean nothing in the new one. */
		for (size_t i = 0; i < ps->n_opened; i++)
			free(ps->opened[i].path);
		ps->n_opened = 0;
		if (!ps->py_preset)
			pyprocs__forget(w, ps, ps->pid);
		ps->py_preset = false;
		ps->seen_all = true;
		/* Its time, thread and name: an exec carries no stack. */
		ps->start = (struct watch_event){
			.ev = { .kind = ev->kind, .t = ev->t, .pid = ev->pid, .tid = ev->tid }
		};
		memcpy(ps->start.ev.comm, ev->comm, sizeof(ev->comm));
		memcpy(ps->start.comm, we->comm, sizeof(we->comm));
		if (settle_later(w, ps))
			w->cur.settling = true;
	}
	if (ps && !w->cur.settling &&
	    ((ev->kind == EVENT_DLOPEN && ev->u.dlopen.handle) || ev->kind == EVENT_DLCLOSE ||
	     ev->kind == EVENT_EXEC)) {
		/* A dlclose that only dropped a reference unloaded nothing: nothing to say. */
		if (ev->kind != EVENT_DLOPEN &&
		    !(ev->kind == EVENT_DLCLOSE && proctable__unchanged(ps, we))) {
			if (proctable__refresh(w, ps) && ev->kind == EVENT_EXEC)
				unprobed_loader(w, ps, NULL);
			unloads_said(w, ps, we);
		}
		if (ev->kind != EVENT_DLCLOSE && !announce(w, ps, we) && ev->kind == EVENT_DLOPEN)
			loaded_after_exit(w, ps, we);
		if (ev->kind == EVENT_DLOPEN && ev->u.dlopen.file[0])
			note_opened(ps, ev->u.dlopen.handle, ev->u.dlopen.file);
	}
	/* A fatal signal is the last moment it can be read: what it loaded is judged now. */
	if (ps && ev->kind == EVENT_SIGNAL && ps->unsettled) {
		settle_one(w, ps, ev->t);
		ps = proctable__find(w, ev->pid);
	}
	if (ps && ev->kind == EVENT_EXIT) {
		announce(w, ps, we);
		unloads_said(w, ps, we);
	}
	return ps;
}

/*
 * watch_opts.settle_ms: whether @ev, a dlopen or dlclose of @ps, is left for the process's next
 * read, which came less than settle_ms ago (marked: proctable__settle reads it in time).
 */
bool proctable__settling(struct watch *w, struct proc_state *ps, const struct event *ev)
{
	if (!w->o->settle_ms || !ps || !ps->g ||
	    !((ev->kind == EVENT_DLOPEN && ev->u.dlopen.handle) || ev->kind == EVENT_DLCLOSE) ||
	    mono_ns(CLOCK_MONOTONIC) - ps->read_at >= w->o->settle_ms * 1000000ULL)
		return false;
	ps->unsettled = true;
	return true;
}

/*
 * The processes whose calls were left for a later read, read now that settle_ms has passed:
 * what they loaded and unloaded meanwhile is said at once, claimed by no one call (as an
 * exit's leftovers are), at this moment and on the process's own thread.
 */
static void settle_one(struct watch *w, struct proc_state *ps, uint64_t now)
{
	/* No call's kind: announce and unloads_said take it as "whatever is new". */
	struct watch_event at = {
		.ev = { .kind = EVENT__COUNT, .t = now, .pid = ps->pid, .tid = ps->pid }
	};
	pid_t pid = ps->pid;

	/* Its exec's name; one found running has its graph's. */
	snprintf(at.comm, sizeof(at.comm), "%.15s",
		 ps->start.comm[0] || !ps->g ? ps->start.comm : ps->g->comm);
	memcpy(at.ev.comm, at.comm, sizeof(at.ev.comm));
	if (proctable__refresh(w, ps))
		ps->unsettled = false; /* gone: its exit says what is left */
	if ((ps = proctable__find(w, pid))) {
		unloads_said(w, ps, &at);
		announce(w, ps, &at);
	}
}

void proctable__settle(struct watch *w)
{
	uint64_t now = mono_ns(CLOCK_MONOTONIC);

	for (size_t i = 0; w->o->settle_ms && i < w->n_procs; i++)
		if (w->procs[i].unsettled &&
		    now - w->procs[i].read_at >= w->o->settle_ms * 1000000ULL)
			settle_one(w, &w->procs[i], now);
}

/* A running process of --comm (NULL: any name), --cgroup's or not, with the environment entry
 * asked for or not, watched from now on. */
static void add_running(struct watch *w, pid_t pid, const char *comm)
{
	char name[32];

	if (pid == getpid() || proctable__find(w, pid))
		return;
	if (proc__comm(pid, 0, name, sizeof(name)))
		return;
	/* Any name: but never another dlscope, as the kernel's exec filter (a job's stacks). */
	if (comm ? strcmp(name, comm) != 0 : !strcmp(name, "dlscope"))
		return;
	if (!environ_selected(w, pid))
		return;
	if (proctable__add(w, pid, 0))
		proctable__drop(w, pid); /* exited, a zombie, or a kernel thread */
}

/* --cgroup: the processes of cgroup @dir and of every cgroup below it, by their cgroup.procs. */
static void add_cgroup(struct watch *w, const char *dir, const char *comm, unsigned int depth)
{
	char path[PATH_MAX];
	struct dirent *de;
	FILE *f;
	DIR *d;
	int pid;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if ((f = fopen(path, "re"))) {
		while (fscanf(f, "%d", &pid) == 1)
			add_running(w, pid, comm);
		fclose(f);
	}
	if (depth > 32 || !(d = opendir(dir)))
		return;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.' &&
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < sizeof(path))
			add_cgroup(w, path, comm, depth + 1);
	closedir(d);
}

/*
 * --comm: the processes already running under that name (threads' own names do not count);
 * NULL: every process (the agent's), but dlscope; with --cgroup, those of the cgroup only.
 */
void proctable__add_by_comm(struct watch *w, const char *comm)
{
	DIR *d;
	struct dirent *de;
	pid_t pid;

	if (w->o->cgroup) {
		add_cgroup(w, w->o->cgroup, comm, 0);
		return;
	}
	d = opendir("/proc");
	while (d && (de = readdir(d)))
		if (!parse_pid(de->d_name, &pid))
			add_running(w, pid, comm);
	if (d)
		closedir(d);
}

/* The processes to watch, the command started (held until @release_fd is written), by name. */
int proctable__add_targets(struct watch *w, int *release_fd, char *why, size_t whylen)
{
	const struct watch_opts *o = w->o;

	for (size_t i = 0; i < o->n_pids; i++) {
		struct target *t;
		int err;

		/* What is no process to watch says why: none, a kernel thread, a zombie. */
		err = target__open(o->pids[i], &t, why, whylen);
		if (err)
			return err;
		target__free(t);
		err = proctable__add(w, o->pids[i], 0);
		if (err) {
			snprintf(why, whylen,
				 "cannot watch process %d: it does not exist or exited",
				 o->pids[i]);
			return err;
		}
	}
	if (o->command) {
		w->command.pid = spawn__held(o->command, o->command_stdio, release_fd);
		if (w->command.pid < 0) {
			int err = -errno;

			snprintf(why, whylen, "cannot start '%s': %s", o->command[0],
				 strerror(errno));
			return err;
		}
		probes__attach_own_libc(w, w->command.pid);
		probes__attach_command_loader(w, w->command.pid, o->command[0]);
		if (!proctable__add_empty(w, w->command.pid, o->command[0], false))
			pyprocs__of_command(w, proctable__find(w, w->command.pid), o->command[0]);
	}
	if (watch__by_exec(o)) {
		probes__attach_own_libc(w, getpid());
		proctable__add_by_comm(w, o->comm);
	}
	return 0;
}

/* Every process's model, at the run's end. */
void proctable__free_all(struct watch *w)
{
	for (size_t i = 0; i < w->n_procs; i++) {
		libgraph__free(w->procs[i].g);
		procmaps__free(w->procs[i].maps);
		drop_target(w, &w->procs[i]);
		proctable__forget_gone(&w->procs[i]);
		sample_unwinder__free(w->procs[i].uw);
		py_code_cache__free(w->procs[i].codes);
	}
	free(w->procs);
	w->procs = NULL;
	w->n_procs = w->cap_procs = 0;
}
