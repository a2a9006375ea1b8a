// SPDX-License-Identifier: GPL-2.0
/* Seized threads that had not stopped in time, let go as soon as they stop. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "tracee.h"
#include "unwind.h"
#include "unwind_impl.h"

/*
 * Threads a capture seized that had not reached their stop by its deadline (a parent waiting in
 * vfork, an uninterruptible sleep). PTRACE_DETACH fails on a thread that is not stopped, so each
 * stays seized with its interrupt pending, and would sit in that stop from the moment it leaves
 * its wait for as long as dlscope lives. They are kept here and let go as soon as they stop
 * (stacks__release_pending), or forgotten once they exit. ptrace requests are answered only to
 * the thread that seized: each is released by its own tracer.
 */
struct held {
	pid_t tid;
	pid_t tracer;
	bool keep_exit; /* the leader of our own child: its exit status is its parent's to reap */
};

static struct {
	pthread_mutex_t lock;
	struct held *h;
	size_t n, cap;
} held = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Keep seized thread @tid for a later release; false when there is no memory to. */
bool held__add(pid_t tid, bool keep_exit)
{
	bool ok = true;

	pthread_mutex_lock(&held.lock);
	if (held.n == held.cap && ARRAY_GROW(held.h, held.cap, 8))
		ok = false;
	if (ok)
		held.h[held.n++] = (struct held){ tid, gettid(), keep_exit };
	pthread_mutex_unlock(&held.lock);
	return ok;
}

/* Take @tid off the list when this thread holds it: a new capture reuses the seize. */
bool held__take(pid_t tid)
{
	pid_t self = gettid();
	bool found = false;

	pthread_mutex_lock(&held.lock);
	for (size_t i = 0; i < held.n && !found; i++)
		if (held.h[i].tid == tid && held.h[i].tracer == self) {
			held.h[i] = held.h[--held.n];
			found = true;
		}
	pthread_mutex_unlock(&held.lock);
	return found;
}

/*
 * One look, without blocking, at a held thread: true when it is done with (stopped and let go,
 * or exited). A signal that stopped it first goes with it, delivered as it would have been.
 */
static bool held_release(const struct held *h)
{
	int status = 0;

	switch (tracee__look(h->tid, h->keep_exit, &status)) {
	case TRACEE_NOTHING: return false;
	case TRACEE_STOPPED: break;
	default: return true; /* exited, or no longer ours (reaped) */
	}
	/* ESRCH: killed after the stop was reported; its exit comes next. */
	return !ptrace(PTRACE_DETACH, h->tid, NULL, (void *)(long)tracee__held_signal(status)) ||
	       errno != ESRCH;
}

/* One pass over this thread's held threads; returns how many are still held. */
size_t held__pass(void)
{
	pid_t self = gettid();
	size_t left = 0;

	pthread_mutex_lock(&held.lock);
	for (size_t i = 0; i < held.n;) {
		if (held.h[i].tracer != self) {
			i++;
		} else if (held_release(&held.h[i])) {
			held.h[i] = held.h[--held.n];
		} else {
			left++;
			i++;
		}
	}
	if (!held.n) {
		free(held.h);
		held.h = NULL;
		held.cap = 0;
	}
	pthread_mutex_unlock(&held.lock);
	return left;
}

size_t stacks__release_pending(unsigned int wait_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)wait_ms * 1000000ULL;
	long delay_ns = 1000000;
	size_t left;

	while ((left = held__pass()) && now_ns() < deadline) {
		nanosleep(&(struct timespec){ 0, delay_ns }, NULL);
		delay_ns = delay_ns * 2 > 20000000 ? 20000000 : delay_ns * 2;
	}
	return left;
}
