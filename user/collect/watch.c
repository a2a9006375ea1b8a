// SPDX-License-Identifier: GPL-2.0
/*
 * The collector of dlscope watch/record (watch.h): the run, and the dispatcher. Each record the
 * kernel sends, or event made here, is decoded once into a typed event and dispatched: the
 * model follows it (proctable.c), its stack is named (sampling.c), the live detectors see it
 * (live_findings.c) and the sinks get it. The parts are listed in watch_internal.h.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "activity.h"
#include "dlwatch.skel.h"
#include "elfobj.h"
#include "output.h"
#include "phase.h"
#include "pkgowner.h"
#include "pyimport.h"
#include "watch_internal.h"

static bool sinks_want_stacks(const struct watch *w)
{
	for (size_t i = 0; i < w->o->n_sinks; i++)
		if (w->o->sinks[i]->wants_stacks)
			return true;
	return false;
}

/*
 * Name the stack of the event being handled now, while the model may still be read again: a
 * frame in an object the model has not read yet (a constructor's library, inside dlopen; the
 * libraries of a process read at its exec) has the process read again, once, and the stack
 * unwound anew. Naming itself (sampling.c) only reads the model.
 */
static void name_stack(struct watch *w, struct proc_state *ps)
{
	const struct watch_event *we = w->cur.we;

	if (!we || !w->cur.stack || !ps || w->cur.done)
		return;
	w->cur.done = true;
	if (!sampling__unwind(w, ps, we->raw) || w->cur.fresh)
		return;
	w->cur.fresh = true;
	if (!proctable__refresh(w, ps)) {
		thread_stack__clear(&w->cur.ts);
		sampling__unwind(w, ps, we->raw);
	}
}

/*
 * One event, typed: update the model, run the live detectors, tell the sinks. w->cur.stack is
 * the stack bytes it carries (or NULL).
 */
static void dispatch(struct watch *w, struct watch_event *we)
{
	struct event *ev = &we->ev;
	struct proc_state *ps = proctable__find(w, ev->pid);
	struct findings fs = { 0 };

	w->cur.we = we;
	w->cur.done = w->cur.fresh = false;
	w->cur.settling = proctable__settling(w, ps, ev);
	/* The objects a dlopen brought: in the model before its stack is named (frames of a
	 * constructor's library) and before it is announced. */
	if (ps && ev->kind == EVENT_DLOPEN && ev->u.dlopen.handle && !w->cur.settling &&
	    !proctable__unchanged(ps, we)) {
		proctable__refresh(w, ps);
		w->cur.fresh = true;
		reader__let_holds_in(w);
	}
	if (ev->kind == EVENT_SIGNAL) {
		name_stack(w, ps);
		sampling__name_signal(w, ps, we);
	}
	w->cur.python[0] = '\0';
	if (ev->kind == EVENT_DLOPEN && ps && ps->python && we->py &&
	    we->py->status != DLW_PY_NONE &&
	    !py_import__resolve(&ps->py, ps->pid, we->py, ps->codes, &ev->py)) {
		ev->has_python = true;
		py_import__describe(&ev->py, w->cur.python, sizeof(w->cur.python));
	}
	/* A record says it carried a stack even when the stack could not be unwound. A
	 * runtime's first region (or BLAS dispatch) shows its stack in the text too. */
	if (w->cur.stack && (sinks_want_stacks(w) || ev->kind == EVENT_OMP_FORK)) {
		ev->has_stack = true;
		name_stack(w, ps);
		sampling__stack_of(w, ps, we, &ev->stack);
		reader__let_holds_in(w);
	}
	SINKS(w, event, ev);
	ps = proctable__follow(w, ps, we);
	if (ev->kind == EVENT_FORK)
		forkwatch__on_fork(w, ps, ev);
	reader__let_holds_in(w);
	live_findings__on_event(w, ps, ev, &fs);
	/* Findings carry the stack: named before they go out (a dlopen's already was, from the
	 * model read at its return, which is what its objects' findings name). */
	if (fs.n && w->o->n_sinks)
		name_stack(w, ps);
	live_findings__report(w, ps, we, &fs);
	if (ev->kind == EVENT_EXIT) {
		if (ev->pid == w->command.pid)
			w->command.done = true;
		proctable__drop_exited(w, ev->pid);
	}
	event__clear(ev);
	thread_stack__clear(&w->cur.ts);
	w->cur.python[0] = '\0';
	w->cur.we = NULL;
	w->cur.stack = NULL;
}

/* An event made here (stuck.c): counted as the kernel's are, and it carries no stack. */
static void dispatch_made(struct watch *w, struct watch_event *we)
{
	w->st->events++;
	w->cur.stack = NULL;
	dispatch(w, we);
}

/* One raw record of the kernel's: decoded, then dispatched. */
static void handle_event(struct watch *w, const void *data, size_t size)
{
	const struct dlw_stack_event *se = data;
	struct watch_event we;
	struct dlw_event copy;
	const struct dlw_event *e;
	char why[128];

	if (size < offsetof(struct dlw_event, path))
		return;
	w->st->events++;
	e = records__with_str(data, size, &copy);
	if (event__decode(&we.ev, e, size, why, sizeof(why)))
		return;
	memcpy(we.comm, e->comm, sizeof(we.comm));
	we.raw = e;
	we.size = size;
	we.py = NULL;
	if (we.ev.kind == EVENT_OMP_FORK && w->hot.counts) {
		const char *rt = activity_counts__path(w->hot.counts, we.ev.u.omp_fork.runtime_id);

		snprintf(we.ev.u.omp_fork.runtime, sizeof(we.ev.u.omp_fork.runtime), "%s",
			 rt ? rt : "");
	}
	w->cur.stack = NULL;
	/* The copy starts at the page of sp: the frames are above sp. The record holds the
	 * event and the stack_size bytes copied. */
	if (size >= sizeof(*e) && e->stack_size <= sizeof(se->stack) &&
	    size - sizeof(*e) >= e->stack_size && e->stack_size > (e->regs.sp & 4095)) {
		w->cur.stack = se->stack + (e->regs.sp & 4095);
		w->cur.len = e->stack_size - (e->regs.sp & 4095);
	}
	/* After the stack's bytes (whole pages: aligned). */
	if (size >= sizeof(*e) && e->py_follows && e->stack_size <= sizeof(se->stack) &&
	    size - sizeof(*e) >= e->stack_size + sizeof(*we.py))
		we.py = (const struct dlw_pystack *)(se->stack + e->stack_size);
	dispatch(w, &we);
}

/*
 * libbpf's reader: a producer faster than we are would keep libbpf reading for ever, so past
 * the batch's time (the event is handled and counts as read) the loop gets control back to
 * look at its deadline, signals and command. After the loop, with the probes off, the rest
 * is read whole when the targets ended by themselves, else for one more batch (and at least
 * DRAIN_MIN_EVENTS).
 */
static int read_event(void *ctx, void *data, size_t size)
{
	struct watch *w = ctx;
	bool stop = stopping(w);

	if (w->loop.counting) {
		w->st->lost_unread++;
		return 0;
	}
	/* A thread waits for each hold: none waits behind the stream. */
	if (w->reader.on) {
		pthread_mutex_unlock(&w->reader.lock);
		pthread_mutex_lock(&w->reader.lock);
	}
	reader__consume_holds(w);
	if (size >= offsetof(struct dlw_event, path)) {
		const struct dlw_event *e = data;

		/* When it was sent: a call's record is stamped with the call's entry. */
		if (e->ts_ns + e->duration_ns > w->order.last_read)
			w->order.last_read = e->ts_ns + e->duration_ns;
		/* A call's record: the call no longer holds the order back (horizon.h). */
		if (e->type == DLW_DLOPEN || e->type == DLW_DLCLOSE || e->type == DLW_DLSYM ||
		    e->type == DLW_GPU_LOAD)
			horizon__read_call(&w->order.hz, e->tid, e->ts_ns);
	}
	handle_event(w, data, size);
	if (w->loop.draining && w->loop.drain_all)
		return stop ? BATCH_OVER : 0;
	/* The last read handles DRAIN_MIN_EVENTS however long they take: on a loaded machine a
	 * short run lost its last events to the batch's time ("unread at stop"). */
	if (w->loop.draining && ++w->loop.drained < DRAIN_MIN_EVENTS)
		return 0;
	if (mono_ns(CLOCK_MONOTONIC) >= w->loop.batch_end || (!w->loop.draining && stop))
		return BATCH_OVER;
	return 0;
}

static void write_header(struct watch *w)
{
	struct trace_header h = {
		.t0 = w->t0,
		.realtime_minus_monotonic_ns =
			(int64_t)(mono_ns(CLOCK_REALTIME) - mono_ns(CLOCK_MONOTONIC)),
		.targets = w->o->pids,
		.n_targets = w->o->n_pids,
		.follow = w->o->follow,
		.hot = w->o->hot,
	};

	SINKS(w, header, &h);
}

/* Everything the run holds; the probes first. */
static void watch_release(struct watch *w)
{
	probes__detach_all(w);
	free(w->probes.files);
	free(w->probes.late);
	proctable__free_all(w);
	holds__free_all(w);
	pthread_mutex_destroy(&w->holds.lock);
	activity_counts__free(w->hot.counts);
	ring_buffer__free(w->ring.rb);
	ring_buffer__free(w->ring.hrb);
	reader__close_rings(w);
	if (w->ring.epfd > 0)
		close(w->ring.epfd);
	dlwatch_bpf__destroy(w->skel);
	/* Every copy of the links closed here: the reaper's are the last. */
	if (w->reader.reaper_fd >= 0)
		close(w->reader.reaper_fd);
	elf_cache__put(w->cache);
	pkg_cache__free(w->pkgs);
}

/* Read batch after batch until the deadline (0: none), a stop, or the targets' end. */
/* watch_opts.live_counts: st's processes and lost, each second, for the sinks' ticks. */
static void live_counts(struct watch *w)
{
	unsigned long long now = mono_ns(CLOCK_MONOTONIC);

	if (!w->o->live_counts || now - w->loop.last_counts < 1000000000ULL)
		return;
	w->loop.last_counts = now;
	w->st->procs_now = w->n_procs;
	probes__count_lost(w, w->st);
}

/*
 * watch_opts.batch_ms: the rest of the period since the last read slept before the next, so
 * that a busy stream is read in batches, not woken for event by event.
 */
static void batch_pause(struct watch *w)
{
	unsigned long long now = mono_ns(CLOCK_MONOTONIC), next;
	struct timespec ts;

	if (!w->o->batch_ms)
		return;
	next = w->loop.batch_at + w->o->batch_ms * 1000000ULL;
	if (now < next && !stopping(w)) {
		ts = (struct timespec){ .tv_sec = (time_t)((next - now) / 1000000000ULL),
					.tv_nsec = (long)((next - now) % 1000000000ULL) };
		nanosleep(&ts, NULL);
	}
	w->loop.batch_at = mono_ns(CLOCK_MONOTONIC);
}

static int read_until_done(struct watch *w, unsigned long long deadline, char *why, size_t whylen)
{
	while (!stopping(w)) {
		int n;

		struct epoll_event ev;

		int wait_ms;

		/* Either ring, at most 100 ms (20 while records wait for their turn); the holds
		 * first, then a batch of the stream. Events submitted without a wake-up (dlsym)
		 * wait for this. */
		wait_ms = w->order.last_read > w->order.horizon && !w->o->unordered ? 20 : 100;
		if (w->reader.on)
			pthread_mutex_unlock(&w->reader.lock);
		batch_pause(w);
		n = epoll_wait(w->ring.epfd, &ev, 1, wait_ms) < 0 ? -errno : 0;
		if (w->reader.on)
			pthread_mutex_lock(&w->reader.lock);
		reader__consume_holds(w);
		if (n >= 0) {
			/* The calls in progress first, then the ring: a call that ended before
			 * the look has sent its record, read below or remembered unread. */
			if (!w->o->unordered)
				reader__look(w);
			w->loop.batch_end = mono_ns(CLOCK_MONOTONIC) + BATCH_NS;
			n = ring_buffer__consume(w->ring.rb);
			if (n >= 0 || n == -EINTR || n == BATCH_OVER)
				reader__release_ordered(w, n == BATCH_OVER);
		}
		if (n < 0 && n != -EINTR && n != BATCH_OVER) {
			snprintf(why, whylen, "reading events failed: %s", strerror(-n));
			return n;
		}
		/* The end first: past it, no second's activity read (nor its pool scan) delays
		 * the stop; the last read after the drain has the rest. */
		if (deadline && mono_ns(CLOCK_MONOTONIC) >= deadline)
			break;
		if (spawn__targets_done(w)) {
			w->loop.drain_all = true;
			break;
		}
		if (w->hot.counts && mono_ns(CLOCK_MONOTONIC) - w->hot.last_activity >= ACTIVITY_NS)
			hot__read_activity(w, mono_ns(CLOCK_MONOTONIC), false);
		/* A trace being written can be followed (tail -f) batch by batch. */
		SINKS(w, flush);
		live_counts(w);
		proctable__settle(w);
		SINKS(w, tick, mono_ns(CLOCK_MONOTONIC));
		stuck__scan(w, dispatch_made);
		forkwatch__tick(w, mono_ns(CLOCK_MONOTONIC));
	}
	return 0;
}

int watch__run(const struct watch_opts *o, struct watch_stats *st, char *why, size_t whylen)
{
	struct watch w = { .o = o, .st = st, .reader.reaper_fd = -1 };
	unsigned long long deadline = 0, t_attach, t_end;
	int err, release_fd = -1;

	memset(st, 0, sizeof(*st));
	st->command_status = -1;
	err = probes__check_capabilities(why, whylen);
	if (err)
		return err;
	/* "Attached in": until events can flow, the BPF object's load and verification too. */
	t_attach = mono_ns(CLOCK_MONOTONIC);
	w.cache = elf_cache__new();
	w.pkgs = pkg_cache__new();
	if (!w.cache || !w.pkgs) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (o->hot && !(w.hot.counts = activity_counts__new())) {
		snprintf(why, whylen, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	phase__mark("watch: caches");
	err = probes__load(&w, why, whylen);
	if (!err)
		err = reader__open_rings(&w, read_event, why, whylen);
	if (err)
		goto out;
	reader__start(&w);
	phase__mark("watch: BPF object loaded and attached");
	w.t0 = mono_ns(CLOCK_MONOTONIC);
	write_header(&w);
	err = proctable__add_targets(&w, &release_fd, why, whylen);
	if (err)
		goto out;
	phase__mark("watch: targets added");
	st->attach_ms = (double)(mono_ns(CLOCK_MONOTONIC) - t_attach) / 1e6;
	/* Tests and scripts wait for this line before they make the target act. Probes in
	 * every process are said on it: whoever reads it sees what the host pays. */
	fprintf(stderr,
		"dlscope: watching %zu process%s%s%s%s%s%s%s%s; probes attached in %.1f ms (%zu "
		"uprobes)%s%s%s\n",
		w.n_procs, w.n_procs == 1 ? "" : "es", o->comm ? " named " : "",
		o->comm ? o->comm : "", o->env_entry ? " whose environment has " : "",
		o->env_entry ? o->env_entry : "",
		o->cgroup && watch__by_exec(o) ? " in cgroup " : "",
		o->cgroup && watch__by_exec(o) ? o->cgroup : "",
		watch__by_exec(o) ? " and those that start" : "", st->attach_ms, w.probes.n_probes,
		w.probes.pid_filter ? "" : "; with ",
		w.probes.pid_filter ? "" :
		o->comm		    ? "--comm" :
		o->every_process    ? "every process watched" :
				      "--follow",
		w.probes.pid_filter ? "" :
				      " they are in every process that maps a probed file (the C "
				      "library, each runtime), which pays a trap per probed call "
				      "(docs/reliability.md); the summary names who did");

	if (release_fd >= 0) {
		if (write(release_fd, "g", 1) != 1)
			dls_warn("cannot release '%s'", o->command[0]);
		close(release_fd);
	}
	/* --duration counts from the moment events can flow (the window is whole however long
	 * the start took); no activity record is stamped past its end. */
	if (o->duration_s > 0)
		deadline = mono_ns(CLOCK_MONOTONIC) + (unsigned long long)(o->duration_s * 1e9);
	st->cpu_s = -phase__cpu_seconds();
	err = read_until_done(&w, deadline, why, whylen);
	t_end = mono_ns(CLOCK_MONOTONIC);
	if (deadline && t_end > deadline)
		t_end = deadline;
	phase__mark("watch: run");
	reader__drain(&w);
	phase__mark("watch: drained");
	/* The probes are off: this read has the run's last regions. */
	if (w.hot.counts) {
		hot__read_activity(&w, t_end, true);
		st->activity =
			activity_counts__totals(w.hot.counts, w.hot.last_activity, &st->n_activity);
	}
	st->cpu_s += phase__cpu_seconds();
	probes__count_lost(&w, st);
	SINKS(&w, summary, st);
	phase__mark("watch: summary");
out:
	reader__stop(&w);
	spawn__end_command(&w);
	watch_release(&w);
	phase__mark("watch: released");
	return err;
}

struct watch *watch__offline_new(const struct watch_opts *o, struct watch_stats *st)
{
	struct watch *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	*w = (struct watch){
		.o = o, .st = st, .t0 = mono_ns(CLOCK_MONOTONIC), .reader.reaper_fd = -1
	};
	memset(st, 0, sizeof(*st));
	st->command_status = -1;
	w->cache = elf_cache__new();
	w->pkgs = pkg_cache__new();
	pthread_mutex_init(&w->holds.lock, NULL);
	if (!w->cache || !w->pkgs) {
		elf_cache__put(w->cache);
		pkg_cache__free(w->pkgs);
		free(w);
		return NULL;
	}
	write_header(w);
	return w;
}

int watch__offline_add(struct watch *w, pid_t pid, const char *comm)
{
	return proctable__add_empty(w, pid, comm, false);
}

void watch__offline_feed(struct watch *w, const void *raw, size_t size)
{
	handle_event(w, raw, size);
}

void watch__offline_end(struct watch *w)
{
	SINKS(w, summary, w->st);
	watch_release(w);
	free(w);
}
