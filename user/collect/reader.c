// SPDX-License-Identifier: GPL-2.0
/*
 * The rings: the holds' reader thread (a held thread waits for it), the stream's time order
 * told to the sinks, and the last read once the probes are off.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dlwatch.skel.h"
#include "elf_cache.h"
#include "output.h"
#include "rtprio.h"
#include "linkmap.h"
#include "target.h"
#include "watch_internal.h"

/*
 * A thread held at its loader's consistent link map (bpf/dlwatch/holds.bpf.h: linkmap_consistent):
 * its link map read now, the probes its new objects call for attached, then the thread let go.
 * The model is not touched: the exec or the dlopen that brought the objects reports them, in
 * the stream's order. The kernel made the process a target, even one not in the model yet.
 */
/* Whether this is the holds' reader thread (else the loop, which holds @lock). */
static bool on_reader(const struct watch *w)
{
	return w->reader.on && pthread_equal(pthread_self(), w->reader.thread);
}

/* The reader's work under @lock, taken between two pieces of the loop's (none to take on the
 * loop's own thread): in_hold, while it lasts, keeps the loop's helpers from letting go. */
static void hold_work_begin(struct watch *w)
{
	if (on_reader(w)) {
		__atomic_add_fetch(&w->reader.holds_waiting, 1, __ATOMIC_RELEASE);
		pthread_mutex_lock(&w->reader.lock);
		__atomic_sub_fetch(&w->reader.holds_waiting, 1, __ATOMIC_RELEASE);
	}
	w->reader.in_hold = true;
}

static void hold_work_end(struct watch *w)
{
	w->reader.in_hold = false;
	if (on_reader(w))
		pthread_mutex_unlock(&w->reader.lock);
}

/* A new image (DLW_HOLD_EXEC): its loader probed now, under @lock, if it has no probe yet.
 * Nobody waits: what it did before is said at its exec (proctable.c: unprobed_loader). */
static void exec_loader(struct watch *w, const struct dlw_event *e)
{
	struct rtprio prio;

	if (w->loop.draining)
		return;
	rtprio__raise(&prio);
	hold_work_begin(w);
	probes__probe_exec_loader(w, (pid_t)e->pid, e->arg2, e->ts_ns);
	hold_work_end(w);
	rtprio__restore(&prio);
}

static int read_hold(void *ctx, void *data, size_t size)
{
	struct watch *w = ctx;
	const struct dlw_event *e = data;
	uint32_t tid = e->tid;
	uint64_t seq = e->arg0;
	struct linkmap *walked = NULL;
	struct rtprio prio;

	if (size < offsetof(struct dlw_event, path) || e->type != DLW_HOLD)
		return 0;
	if (e->arg1 == DLW_HOLD_EXEC) {
		exec_loader(w, e);
		return 0;
	}
	/*
	 * The held thread waits busily on its CPU: this work runs at the lowest real-time
	 * priority, so that a collector started at nice 19 on that CPU is not held back by the
	 * very thread waiting for it; then back to what it was (its nice value too).
	 */
	rtprio__raise(&prio);
	/*
	 * On the reader's thread a hold that met nothing new (a dlopen of what is loaded, a
	 * library back at its place) is answered without the loop's lock; one with objects to
	 * analyse and probe takes it, between two pieces of the loop's work.
	 */
	if (!w->loop.draining &&
	    !(on_reader(w) && holds__answer_known(w, (pid_t)e->pid, e->arg2, &walked))) {
		hold_work_begin(w);
		if (!w->loop.draining)
			holds__answer(w, (pid_t)e->pid, e->arg2, walked);
		else
			linkmap__free(walked);
		hold_work_end(w);
	}
	if (w->skel)
		bpf_map__update_elem(w->skel->maps.released, &tid, sizeof(tid), &seq, sizeof(seq),
				     BPF_ANY);
	rtprio__restore(&prio);
	/* What the hold cost is counted by the held thread itself (probes__count_lost). */
	return 0;
}

/* Whether the event ring is empty now: every record reserved so far has been read. */
static bool ring_empty(const struct watch *w)
{
	const unsigned long *cons = w->ring.pos, *prod;

	if (!cons)
		return false; /* unknown: the horizon waits for the newest record read */
	prod = (const unsigned long *)((const char *)w->ring.pos + w->ring.page_size);
	return __atomic_load_n(cons, __ATOMIC_ACQUIRE) == __atomic_load_n(prod, __ATOMIC_ACQUIRE);
}

/* Time order (horizon.h): a look at the calls in progress, before a batch is read. */
void reader__look(struct watch *w)
{
	const struct bpf_map *calls = w->skel->maps.calls;
	unsigned long long key, next, *prev = NULL;
	struct dlw_call c;

	horizon__look(&w->order.hz, mono_ns(CLOCK_MONOTONIC));
	while (!bpf_map__get_next_key(calls, prev, &next, sizeof(next))) {
		key = next;
		prev = &key;
		/* A dlsym without --dlsym never makes a record: nothing to wait for. */
		if (!w->o->dlsym && ((key >> 8) & 0xff) == DLW_DLSYM)
			continue;
		if (!bpf_map__lookup_elem(calls, &key, sizeof(key), &c, sizeof(c), 0))
			horizon__saw_call(&w->order.hz, (unsigned int)(key >> 16), c.ts);
	}
}

/* After the batch: the sinks told what can go out. @batch_over: the read stopped at its
 * time limit. */
void reader__release_ordered(struct watch *w, bool batch_over)
{
	unsigned long long h =
		horizon__after_read(&w->order.hz, !batch_over && ring_empty(w), w->order.last_read);

	if (h > w->order.horizon) {
		w->order.horizon = h;
		SINKS(w, horizon, h);
	}
}

/*
 * The holds' reader. A held thread spins on its CPU until it is answered; the loop, started at
 * nice 19 beside 1000 runnable threads, could take seconds to be scheduled at all, and the hold
 * ran out (3 s). This thread sleeps in epoll at SCHED_FIFO 1 (it costs nothing while no hold
 * comes) and answers at once; it takes no signal (they are the loop's).
 */
static void *hold_reader(void *arg)
{
	struct watch *w = arg;
	struct sched_param rt = { .sched_priority = 1 };
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt);
	/* The holds' ring and the stop's eventfd: a stop wakes it at once. */
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, ring_buffer__epoll_fd(w->ring.hrb), &ev) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, w->reader.wake, &ev)) {
		if (ep >= 0)
			close(ep);
		ep = ring_buffer__epoll_fd(w->ring.hrb);
	}
	while (!__atomic_load_n(&w->reader.stop, __ATOMIC_ACQUIRE)) {
		if (epoll_wait(ep, &ev, 1, 50) <= 0)
			continue;
		/* The ring is this thread's alone while it runs (reader__consume_holds). */
		ring_buffer__consume(w->ring.hrb);
	}
	if (ep != ring_buffer__epoll_fd(w->ring.hrb))
		close(ep);
	return NULL;
}

/*
 * The loop, between two pieces of its own work (a file it analyses, a part of a refresh): a
 * thread held in its loader waits for the reader, which waits for @lock; the lock goes to the
 * reader now (a priority-inheriting unlock hands it to the waiter) and comes back after the
 * hold. Never inside a hold's own work.
 */
void reader__let_holds_in(struct watch *w)
{
	if (!w->reader.on || w->reader.in_hold ||
	    !__atomic_load_n(&w->reader.holds_waiting, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_unlock(&w->reader.lock);
	pthread_mutex_lock(&w->reader.lock);
}

bool reader__unlock(struct watch *w)
{
	/* Decided once: while the lock is let go, the reader's hold sets in_hold. */
	bool go = w->reader.on && !w->reader.in_hold;

	if (go)
		pthread_mutex_unlock(&w->reader.lock);
	return go;
}

void reader__relock(struct watch *w, bool unlocked)
{
	if (unlocked)
		pthread_mutex_lock(&w->reader.lock);
}

static void let_holds_in(void *arg)
{
	reader__let_holds_in(arg);
}

/* The loop waits for a process to move on without @lock: the hold it may wait for is answered. */
static void sleep_unlocked(const struct target *t, long ns)
{
	bool unlocked = reader__unlock(t->sleep_arg);

	nanosleep(&(struct timespec){ .tv_nsec = ns }, NULL);
	reader__relock(t->sleep_arg, unlocked);
}

static void pause_for_holds(const struct target *t)
{
	reader__let_holds_in(t->sleep_arg);
}

void reader__sleep_unlocked(struct watch *w, struct target *t)
{
	t->sleep = sleep_unlocked;
	t->pause = pause_for_holds;
	t->sleep_arg = w;
}

/* A thread of the collector's that takes no signal (they are the loop's): true if started. */
static bool start_quiet(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, was;
	bool ok;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	ok = !pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	return ok;
}

/*
 * The heartbeat the BPF holds look at (DLW_BEAT_STALE_NS): a thread of its own, at real-time
 * priority, so that neither a hold's long attach nor a collector at nice 19 makes it late,
 * while a SIGSTOP, a SIGKILL or the collector's exit stop it and with it every hold.
 */
static void *beat(void *arg)
{
	struct watch *w = arg;
	/* Above the collector's own real-time work (priority 1: a hold, a refresh), which can
	 * take both CPUs of a small machine for longer than the beat may wait. */
	struct sched_param rt = { .sched_priority = 2 };
	struct timespec every = { 0, (long)DLW_BEAT_EVERY_NS };

	pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt);
	while (!__atomic_load_n(&w->reader.beat_stop, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&w->skel->bss->collector_beat, mono_ns(CLOCK_MONOTONIC),
				 __ATOMIC_RELEASE);
		nanosleep(&every, NULL);
	}
	__atomic_store_n(&w->skel->bss->collector_beat, 0, __ATOMIC_RELEASE);
	return NULL;
}

static void beat_start(struct watch *w)
{
	/* The first beat before any probe is attached: no hold finds the collector absent. */
	w->skel->bss->collector_beat = mono_ns(CLOCK_MONOTONIC);
	w->reader.beat_on = start_quiet(&w->reader.beat, beat, w);
	if (!w->reader.beat_on)
		dls_warn("cannot start the heartbeat: the loader is not held for new objects' "
			 "probes, which may come after their first calls");
}

static void beat_stop(struct watch *w)
{
	if (!w->reader.beat_on)
		return;
	__atomic_store_n(&w->reader.beat_stop, true, __ATOMIC_RELEASE);
	pthread_join(w->reader.beat, NULL);
	w->reader.beat_on = false;
}

void reader__start(struct watch *w)
{
	pthread_mutexattr_t a;

	if (pthread_mutexattr_init(&a) || pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT) ||
	    pthread_mutex_init(&w->reader.lock, &a))
		return;
	pthread_mutexattr_destroy(&a);
	beat_start(w);
	w->reader.wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_lock(&w->reader.lock);
	w->reader.on = start_quiet(&w->reader.thread, hold_reader, w);
	if (w->reader.on) {
		elf_cache__set_pause(w->cache, let_holds_in, w);
		/* The holds are the reader's: the loop no longer wakes for them. */
		epoll_ctl(w->ring.epfd, EPOLL_CTL_DEL, ring_buffer__epoll_fd(w->ring.hrb), NULL);
	}
	if (!w->reader.on) {
		pthread_mutex_unlock(&w->reader.lock);
		pthread_mutex_destroy(&w->reader.lock);
		if (w->reader.wake >= 0)
			close(w->reader.wake);
	}
}

void reader__stop(struct watch *w)
{
	beat_stop(w);
	if (!w->reader.on)
		return;
	elf_cache__set_pause(w->cache, NULL, NULL);
	__atomic_store_n(&w->reader.stop, true, __ATOMIC_RELEASE);
	if (w->reader.wake >= 0 && eventfd_write(w->reader.wake, 1))
		dls_warn("cannot wake the holds' reader: %s", strerror(errno));
	pthread_mutex_unlock(&w->reader.lock);
	pthread_join(w->reader.thread, NULL);
	pthread_mutex_destroy(&w->reader.lock);
	if (w->reader.wake >= 0)
		close(w->reader.wake);
	w->reader.on = false;
}

/*
 * The probes go first, so the ring holds a known rest: handled (see watch.c: read_event), and what is
 * left after that counted lost (generated = events + lost stays exact).
 */
void reader__consume_holds(struct watch *w)
{
	if (!w->reader.on)
		ring_buffer__consume(w->ring.hrb);
}

void reader__drain(struct watch *w)
{
	/* Threads held now go at once (nothing more is attached), before the stop, which waits
	 * for every program in progress. */
	w->loop.draining = true;
	reader__consume_holds(w);
	probes__stop(w, reader__let_holds_in);
	w->loop.batch_end = mono_ns(CLOCK_MONOTONIC) + BATCH_NS;
	if (ring_buffer__consume(w->ring.rb) == BATCH_OVER) {
		w->loop.counting = true;
		ring_buffer__consume(w->ring.rb);
	}
}

/* The event ring, read by @on_event, and the holds' ring, beside it in one epoll set. */
int reader__open_rings(struct watch *w, int (*on_event)(void *ctx, void *data, size_t size),
		       char *why, size_t whylen)
{
	int err;

	w->ring.rb = ring_buffer__new(bpf_map__fd(w->skel->maps.events), on_event, w, NULL);
	w->ring.hrb = ring_buffer__new(bpf_map__fd(w->skel->maps.holds), read_hold, w, NULL);
	w->ring.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->ring.rb && w->ring.hrb && w->ring.epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		if (epoll_ctl(w->ring.epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(w->ring.rb),
			      &ev) ||
		    epoll_ctl(w->ring.epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(w->ring.hrb),
			      &ev)) {
			ring_buffer__free(w->ring.rb);
			w->ring.rb = NULL;
		}
	}
	if (!w->ring.rb || !w->ring.hrb || w->ring.epfd < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot open the ring buffer: %s", strerror(errno));
		return err;
	}
	/* The ring's consumer and producer positions, read-only, for ring_empty. Without them
	 * (never seen) the order only waits longer. */
	w->ring.page_size = (size_t)sysconf(_SC_PAGESIZE);
	w->ring.pos = mmap(NULL, 2 * w->ring.page_size, PROT_READ, MAP_SHARED,
			   bpf_map__fd(w->skel->maps.events), 0);
	if (w->ring.pos == MAP_FAILED)
		w->ring.pos = NULL;
	return 0;
}

/* What reader__open_rings mapped, and the calls the horizon remembers. */
void reader__close_rings(struct watch *w)
{
	if (w->ring.pos)
		munmap(w->ring.pos, 2 * w->ring.page_size);
	w->ring.pos = NULL;
	horizon__free(&w->order.hz);
}
