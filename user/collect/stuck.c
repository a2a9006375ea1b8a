// SPDX-License-Identifier: GPL-2.0
#include <bpf/libbpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dlwatch.skel.h"
#include "procfs.h"
#include "termsafe.h"
#include "watch_internal.h"

/*
 * Threads that stay inside dlopen, found without a per-syscall probe: every 50 ms, the calls in
 * progress (the BPF calls map) are scanned for outermost dlopens older than STUCK_NS, and such a
 * thread's current system call is read from /proc. One blocked in futex, on anything but the
 * loader's own locks, holds the loader lock while it waits for another thread: the seed-002
 * hazard, reported once per dlopen.
 */
#define STUCK_NS 50000000ULL

/* Whether thread @tid is blocked in futex now: its address, and its user stack pointer. */
static bool blocked_in_futex(pid_t pid, pid_t tid, unsigned long long *uaddr,
			     unsigned long long *sp)
{
	char buf[256];
	unsigned long long a[5];
	long nr;

	if (proc__read(pid, tid, "syscall", buf, sizeof(buf)) <= 0)
		return false;
	/* "NR ARG1 ... ARG6 SP PC" */
	return sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx %llx", &nr, uaddr, &a[0], &a[1],
		      &a[2], &a[3], &a[4], sp) == 8 &&
	       nr == SYS_futex;
}

/*
 * Whether a dlsym whose return is not probed (no --dlsym) is still in progress: the thread is
 * deeper than the call's entry (its stack pointer @sp below the entry's, c->arg1) and the
 * return address the entry saw there (c->arg2) is still in place. A call that returned has
 * had that word overwritten by the calls the thread made since, as it got this deep again.
 */
static bool dlsym_in_progress(const struct dlw_call *c, unsigned long long sp)
{
	uint64_t word = 0;
	struct iovec local = { &word, sizeof(word) },
		     remote = { (void *)(uintptr_t)c->arg1, sizeof(word) };

	return c->arg1 && sp < c->arg1 &&
	       process_vm_readv((pid_t)c->pid, &local, 1, &remote, 1, 0) == sizeof(word) &&
	       word == c->arg2;
}

/* Report once per call: a (thread, start time) pair remembered in a small ring. */
static bool first_report(struct watch *w, pid_t tid, unsigned long long since)
{
	const size_t cap = sizeof(w->stuck.calls) / sizeof(w->stuck.calls[0]);

	for (size_t i = 0; i < w->stuck.n && i < cap; i++)
		if (w->stuck.calls[i].tid == tid && w->stuck.calls[i].since == since)
			return false;
	w->stuck.calls[w->stuck.n++ % cap] = (struct stuck){ tid, since };
	return true;
}

/*
 * The event of a thread found blocked in a futex inside the call @c (its outermost dlopen, or a
 * dlsym) of type @type: made here, in the model's terms, as no kernel record says it.
 */
static void stuck_event(struct watch_event *we, const struct dlw_call *c, unsigned int type,
			pid_t tid, unsigned long long uaddr, unsigned long long now)
{
	memset(we, 0, sizeof(*we));
	we->ev = (struct event){ .kind = EVENT_FUTEX_WAIT,
				 .t = now,
				 .pid = (pid_t)c->pid,
				 .tid = tid,
				 .in_dlopen = type == DLW_DLOPEN };
	we->ev.u.futex.what = type == DLW_DLOPEN ? EVENT_FUTEX_BLOCKED_DLOPEN :
						   EVENT_FUTEX_BLOCKED_DLSYM;
	we->ev.u.futex.futex = uaddr;
	we->ev.u.futex.duration_ns = now - c->ts;
	memcpy(we->ev.u.futex.call, c->str, sizeof(we->ev.u.futex.call));
	/* Blocked before it read the name (dlsym waits for the loader lock first). */
	if (c->str_state == DLW_STR_UNREAD)
		records__read_str((pid_t)c->pid, c->strptr, we->ev.u.futex.call,
				  sizeof(we->ev.u.futex.call));
	we->ev.u.futex.call[sizeof(we->ev.u.futex.call) - 1] = '\0';
	proc__comm((pid_t)c->pid, tid, we->comm, sizeof(we->comm));
	/* The thread names itself (prctl): shown escaped, as event__decode shows it. */
	termsafe__escape(we->comm, sizeof(we->comm), we->ev.comm, sizeof(we->ev.comm));
}

/* A thread waits inside dlopen while another waits in dlsym for the lock it holds. */
static void loader_lock_cycle(struct watch *w, const struct watch_event *holder,
			      const struct watch_event *waiter)
{
	struct proc_state *ps = proctable__find(w, holder->ev.pid);
	struct live_ctx lc = live_findings__ctx(w, ps);
	struct findings fs = { 0 };
	struct live_event le = {
		.kind = LIVE_LOADER_LOCK_CYCLE,
		.pid = holder->ev.pid,
		.tid = holder->ev.tid,
		.comm = holder->comm,
		.dlopen_file = holder->ev.u.futex.call,
		.waiter_tid = waiter->ev.tid,
		.waiter_symbol = waiter->ev.u.futex.call,
	};

	detectors__on_event(&lc, &le, &fs);
	live_findings__report(w, ps, waiter, &fs);
}

/*
 * The calls in progress, scanned at most every STUCK_NS / 2 (not with --futex-ms, whose
 * tracepoints see every wait): each thread newly found blocked goes to @dispatch as an event,
 * and a loader-lock cycle between two of them is reported.
 */
void stuck__scan(struct watch *w, void (*dispatch)(struct watch *w, struct watch_event *we))
{
	const struct bpf_map *calls = w->skel->maps.calls;
	unsigned long long key, next, now = mono_ns(CLOCK_MONOTONIC), uaddr, sp;
	unsigned long long *prev = NULL;
	struct watch_event holder = { 0 }, waiter = { 0 }, we;
	struct dlw_call c;

	if (w->o->futex_ms || now - w->loop.last_scan < STUCK_NS / 2)
		return;
	w->loop.last_scan = now;
	while (!bpf_map__get_next_key(calls, prev, &next, sizeof(next))) {
		unsigned int type = (next >> 8) & 0xff;
		pid_t tid = (pid_t)(next >> 16);

		key = next;
		prev = &key;
		/* The outermost dlopen of a thread (it holds the loader lock), or a dlsym. */
		if ((type != DLW_DLOPEN && type != DLW_DLSYM) || (key & 0xff) ||
		    bpf_map__lookup_elem(calls, &key, sizeof(key), &c, sizeof(c), 0) ||
		    now - c.ts < STUCK_NS || !blocked_in_futex((pid_t)c.pid, tid, &uaddr, &sp))
			continue;
		if (type == DLW_DLSYM && !w->o->dlsym && !dlsym_in_progress(&c, sp))
			continue;
		/* A dlopen queued behind another one's holds nothing: that one is the news. */
		if (type == DLW_DLOPEN &&
		    live_findings__loader_lock(proctable__find(w, (pid_t)c.pid), uaddr))
			continue;
		stuck_event(&we, &c, type, tid, uaddr, now);
		if (type == DLW_DLOPEN)
			holder = we;
		else if (!waiter.ev.pid || waiter.ev.pid != holder.ev.pid)
			waiter = we;
		if (first_report(w, tid, c.ts))
			dispatch(w, &we);
	}
	if (holder.ev.pid && holder.ev.pid == waiter.ev.pid && first_report(w, -holder.ev.tid, 0))
		loader_lock_cycle(w, &holder, &waiter);
}
