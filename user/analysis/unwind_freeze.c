// SPDX-License-Identifier: GPL-2.0
/* The stop: every thread seized, interrupted, copied (registers and stack) and let go. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "arch.h"
#include "permission.h"
#include "procfs.h"
#include "procmaps.h"
#include "rtprio.h"
#include "pystate.h"
#include "target.h"
#include "tracee.h"
#include "unwind.h"
#include "unwind_impl.h"

/* How much of each stack is copied while the thread is stopped: deep Python stacks fit. */
#define STACK_COPY_MAX (1024 * 1024)

/* How long the threads may take to reach their stop before they are left out. */
#define STOP_TIMEOUT_NS (3 * 1000000000ULL)

/* The threads to stop: @tids when the caller listed them already, else /proc/PID/task. */
int unwind_list_threads(pid_t pid, const pid_t *tids, size_t n_tids, struct capture_set *cs)
{
	pid_t *listed = NULL;
	int err = 0;

	if (!tids) {
		err = proc__tids(pid, &listed, &n_tids);
		if (err)
			return err;
		tids = listed;
	}
	cs->c = calloc(n_tids ? n_tids : 1, sizeof(*cs->c));
	if (!cs->c)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < n_tids; i++)
		cs->c[cs->n++].tid = tids[i];
	free(listed);
	return err;
}

/*
 * Copy the live part of a stopped thread's stack: from below its red zone to the mapping end,
 * or to its thread pointer when that lies above sp in the same mapping (a thread glibc started:
 * its struct pthread tops the mapping, above the stack's first frame, and no unwind reads it).
 */
void unwind_copy_stack(pid_t pid, const struct procmaps *maps, struct captured *c)
{
	uint64_t sp = arch_regs__sp(&c->regs), lo = sp > ARCH_RED_ZONE ? sp - ARCH_RED_ZONE : 0;
	uint64_t tp = arch_regs__thread_pointer(&c->regs);
	const struct mapping *mp = procmaps__find(maps, sp);
	struct iovec local, remote;
	uint64_t hi, end;
	bool tp_tops;
	ssize_t n;

	if (!mp)
		return;
	if (lo < mp->start)
		lo = mp->start;
	tp_tops = tp > sp && tp < mp->end;
	end = tp_tops ? tp : mp->end;
	if (tp_tops || (mp->path && !strcmp(mp->path, "[stack]")))
		c->stack_end = end;
	hi = end - lo > STACK_COPY_MAX ? lo + STACK_COPY_MAX : end;
	c->stack = malloc(hi - lo);
	if (!c->stack)
		return;
	local = (struct iovec){ c->stack, hi - lo };
	remote = (struct iovec){ (void *)(uintptr_t)lo, hi - lo };
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n <= 0) {
		free(c->stack);
		c->stack = NULL;
		return;
	}
	c->stack_lo = lo;
	c->stack_len = (size_t)n;
}

/* True when @pid is a child of this process (a command it runs). */
bool unwind_is_own_child(pid_t pid)
{
	pid_t ppid;

	return !proc__ppid_start(pid, NULL, &ppid, NULL) && ppid == getpid();
}

/*
 * One look, without blocking, at a seized thread on its way to its stop: 1 when it is done
 * with (stopped and copied, or gone), 0 when something else happened (a signal passed on), -1
 * when nothing did.
 */
static int collect_one(struct capture_set *cs, struct captured *c, const struct procmaps *maps,
		       struct stacks *out)
{
	/* The leader of our own child is left unreaped: its parent in us collects its status. */
	bool keep_exit = c->tid == cs->pid && cs->own_child;
	int status = 0;

	switch (tracee__look(c->tid, keep_exit, &status)) {
	case TRACEE_NOTHING: return -1;
	case TRACEE_STOPPED: break;
	default: c->gone = true; return 1;
	}
	/*
	 * A signal arrived first: its delivery stop is the thread's stop (resumed, the thread would
	 * run on, as the interrupt may be spent: a 3 s wait, then no stack). The signal goes with
	 * the release (release_all), delivered as it would have been.
	 */
	c->deliver_sig = tracee__held_signal(status);
	c->stopped = true;
	if (!arch_regs__read(c->tid, &c->regs)) {
		c->have_regs = true;
		if (!cs->regs_only) {
			unwind_copy_stack(cs->mem_pid, maps, c);
			out->stack_bytes += c->stack_len;
		}
	} else {
		c->regs_errno = errno;
	}
	return 1;
}

/*
 * Seizing stops nothing: every thread is seized first (then all are interrupted at once). 0, or
 * -EPERM with @why when the process cannot be stopped at all.
 */
static int seize_all(struct capture_set *cs, char *why, size_t whylen)
{
	for (size_t i = 0; i < cs->n; i++) {
		struct captured *c = &cs->c[i];

		/* Still held from an earlier capture: seized already (a second seize is EPERM). */
		if (held__take(c->tid)) {
			c->seized = true;
			continue;
		}
		if (ptrace(PTRACE_SEIZE, c->tid, NULL, NULL)) {
			/* A main thread that exited (pthread_exit) is a zombie the others outlive. */
			if (errno == EPERM && i == 0 && proc__live_task(cs->pid) == cs->pid) {
				char comm[64] = "?", reason[512];

				proc__read_stat(cs->pid, 0, comm, sizeof(comm), NULL, NULL);
				permission__explain(cs->pid, ACCESS_SEIZE, reason, sizeof(reason));
				snprintf(why, whylen,
					 "permission denied stopping process %d (%s): %s", cs->pid,
					 comm, reason);
				return -EPERM;
			}
			c->seize_errno = errno; /* the thread exited, or another tracer holds it */
			continue;
		}
		c->seized = true;
	}
	return 0;
}

/*
 * Collect the stops of the @pending threads interrupted at @t0 in whatever order they come: a
 * thread group leader killed meanwhile is reported only after the other threads, which we must
 * reap first. A thread that does not stop in time (uninterruptible sleep) is left out, not
 * waited for forever. Only the threads seized here are waited for: a wait for any child could
 * take the exit status of a command the caller runs.
 */
static void collect_stops(struct capture_set *cs, const struct procmaps *maps, struct stacks *out,
			  uint64_t t0, size_t pending)
{
	uint64_t delay_ns = 20000;

	while (pending) {
		bool progress = false;

		for (size_t i = 0; i < cs->n; i++) {
			struct captured *c = &cs->c[i];

			if (!c->seized || c->stopped || c->gone)
				continue;
			switch (collect_one(cs, c, maps, out)) {
			case 1:
				pending--;
				/* fall through */
			case 0: progress = true; break;
			}
		}
		if (!pending || now_ns() - t0 >= STOP_TIMEOUT_NS)
			break;
		/* Always a pause: at real-time priority, a pass never gives up its CPU otherwise. */
		delay_ns = progress ? 20000 : delay_ns;
		nanosleep(&(struct timespec){ 0, (long)delay_ns }, NULL);
		if (!progress)
			delay_ns = delay_ns * 2 > 1000000 ? 1000000 : delay_ns * 2;
	}
}

/*
 * Every seized thread let go, with the signal its stop held back. One not collected yet is
 * looked at first: a stop that came meanwhile (a signal's) is taken, so that its signal goes
 * with the detach rather than being dropped. One that has not stopped, or was killed in its
 * stop, cannot be detached: it is held, let go once it stops, its exit reaped.
 */
static void release_all(struct capture_set *cs)
{
	for (size_t i = 0; i < cs->n; i++) {
		struct captured *c = &cs->c[i];
		bool keep_exit = c->tid == cs->pid && cs->own_child;
		int err;

		if (!c->seized || c->gone)
			continue;
		err = tracee__release(c->tid, keep_exit, c->stopped, c->deliver_sig);
		if (err == -ECHILD) {
			c->gone = true;
			continue;
		}
		if (err)
			held__add(c->tid, keep_exit);
		c->t_release = now_ns();
	}
}

/*
 * The only window in which the target is stopped: seize every thread, interrupt them all, wait
 * for each to stop, take its registers and stack, release them all. The stop reported is the
 * one the target sees: from the first interrupt to the last thread released.
 */
int unwind_freeze_and_copy(struct capture_set *cs, const struct procmaps *maps,
			   const struct py_interp *py, unsigned int max_frames, struct stacks *out,
			   char *why, size_t whylen)
{
	struct rtprio prio = { 0 };
	size_t pending = 0;
	uint64_t t0;
	int err;

	/* Threads an earlier capture could not stop and that stopped since are let go first. */
	held__pass();
	err = seize_all(cs, why, whylen);
	/* While the target is stopped, this thread runs ahead of it: at normal priority, with
	 * every CPU taken by the target's busy threads, it would wait its turn behind each of
	 * them between two ptrace calls, and the stop last as long as they make it. */
	if (!err)
		rtprio__raise(&prio);
	t0 = now_ns();
	for (size_t i = 0; !err && i < cs->n; i++)
		if (cs->c[i].seized) {
			cs->c[i].t_interrupt = now_ns();
			ptrace(PTRACE_INTERRUPT, cs->c[i].tid, NULL, NULL);
			pending++;
		}
	if (!err)
		collect_stops(cs, maps, out, t0, pending);
	/* The interpreter's state is read while every thread stands still: one consistent view. */
	if (!err && py && py_snapshot__read(py, cs->pid, max_frames, &out->py))
		err = -ENOMEM;
	release_all(cs);
	if (!err)
		out->stopped_ns = now_ns() - t0;
	for (size_t i = 0; !err && i < cs->n; i++) {
		const struct captured *c = &cs->c[i];

		if (c->t_interrupt && c->t_release > c->t_interrupt &&
		    c->t_release - c->t_interrupt > out->held_max_ns)
			out->held_max_ns = c->t_release - c->t_interrupt;
	}
	rtprio__restore(&prio);
	return err;
}
