/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hold at the loader's consistent link map: a thread that mapped new objects waits until
 * the collector has put their probes in place, never longer than the collector is attentive.
 * A part of dlwatch.bpf.c, included there in order.
 */
#ifndef DLSCOPE_DLWATCH_HOLDS_H
#define DLSCOPE_DLWATCH_HOLDS_H

/*
 * The hold at the loader's consistent link map (DLW_HOLD): the threads waiting, by tid, for
 * user space to write their hold's number here once it attached the new objects' probes.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u64);
} released SEC(".maps");

/* The processes (tgid) whose start-up link map was seen: a later one outside dlopen is not. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u8);
} started SEC(".maps");

/* Holds go on a ring of their own, which the collector reads before any other event. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 10);
} holds SEC(".maps");

__u64 hold_seq;
unsigned long long collector_beat;
/* What the holds cost the targets, as the held threads saw it: holds that waited, their time
 * (start to going on) in all and at most, those ended because the heartbeat went stale, and
 * arrivals not held as it was stale already. */
unsigned long long hold_held, hold_ns_total, hold_ns_max, hold_abandoned, hold_not_held;
/* The oldest the beat was when a hold was refused or let go for it (~0: none had come yet):
 * whether dlscope was really away, or its beat only late. */
unsigned long long hold_stale_age_max;

/*
 * The unloads a process began so far (lm_counts.unloads), sent with each hold: the collector
 * walks the link map from the last entry it knew only while none came since, for a dlclose can
 * take that entry with objects before it, and the next dlopen bring it back, at its place,
 * after new ones.
 */
static __always_inline u64 unloads_of(u32 tgid)
{
	struct lm_counts *n = bpf_map_lookup_elem(&lm_counts, &tgid);

	return n ? n->unloads : 0;
}

/* The open-coded number iterator (kernel 6.4): verified once, whatever its count. */
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

/*
 * Arrivals that need no hold: a dlopen whose every new object is of a file with no probe to put
 * in place goes on at once: the collector found it to need none, or its probes are in place
 * already (in every process, or in this one: dlscope never takes a probe out while it runs).
 * The files, by what identifies a file's content (objcache.h: device, inode, size, mtime,
 * ctime), filled by user space from its ELF cache and from each file it analyses (probes.c:
 * probes__note_no_probes).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DLW_NO_PROBE_FILES_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct dlw_file_key);
	__type(value, u8);
} no_probe_files SEC(".maps");

/* Where a process's link map ended at its last consistent state, and its unloads then: what
 * follows that entry later is new while it unloaded nothing since. */
struct lm_tail {
	u64 lm, unloads;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct lm_tail);
} lm_tails SEC(".maps");

/* Arrivals let go at once: each new object's file needs no probes, or the dlopen mapped
 * nothing. */
unsigned long long hold_no_probes;

/* The first words of a struct link_map (<link.h>; musl's struct dso begins alike). */
struct lm_head {
	u64 l_addr, l_name, l_ld, l_next, l_prev;
};

/* Bounds of the walks: the whole list (else the tail is unknown, and holds as before), and the
 * new entries one dlopen may bring and still go unheld. */
#define LM_WALK_MAX 4096
#define LM_NEW_MAX 64

/* The question to bpf_find_vma, and its answer. */
struct no_probes_q {
	u32 tgid;
	u64 start;
	bool yes;
};

/* bpf_find_vma's answer for a new entry's dynamic section: whether its file has no probe to
 * put in place, in every process or in this one. */
static long vma_needs_no_probes(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	struct inode *ino = BPF_CORE_READ(vma, vm_file, f_inode);
	struct dlw_file_key k = {};
	struct no_probes_q *q = ctx;

	/* Before 6.11 the times are a struct timespec64: no such entry, held as before. */
	if (!ino || !bpf_core_field_exists(ino->i_mtime_sec))
		return 0;
	k.dev = BPF_CORE_READ(ino, i_sb, s_dev);
	k.ino = BPF_CORE_READ(ino, i_ino);
	k.size = BPF_CORE_READ(ino, i_size);
	k.mtime_ns = BPF_CORE_READ(ino, i_mtime_sec) * 1000000000LL + BPF_CORE_READ(ino, i_mtime_nsec);
	/* The ctime's top nanosecond bit is a flag of the kernel's own (I_CTIME_QUERIED, 6.13). */
	k.ctime_ns = BPF_CORE_READ(ino, i_ctime_sec) * 1000000000LL +
		     (BPF_CORE_READ(ino, i_ctime_nsec) & ~(1U << 31));
	q->yes = bpf_map_lookup_elem(&no_probe_files, &k) != NULL;
	if (!q->yes) {
		k.pid = q->tgid;
		k.start = q->start;
		q->yes = bpf_map_lookup_elem(&no_probe_files, &k) != NULL;
	}
	return 0;
}

/* A walk of the list (lm_walk), one entry a turn of bpf_loop. */
struct lm_walk_state {
	u64 lm, end;
	u32 n_new;
	bool check, all_free;
	struct no_probes_q q; /* the process, for its own probes' entries */
};

static long lm_walk_step(u64 i, void *ctx)
{
	struct lm_walk_state *st = ctx;
	struct lm_head h;

	if (!st->lm || bpf_copy_from_user(&h, sizeof(h), (void *)st->lm))
		return 1;
	if (st->check && i > 0) {
		st->n_new++;
		st->q.yes = false;
		if (st->all_free && st->n_new <= LM_NEW_MAX)
			bpf_find_vma(bpf_get_current_task_btf(), h.l_ld, vma_needs_no_probes,
				     &st->q, 0);
		st->all_free = st->all_free && st->q.yes && st->n_new <= LM_NEW_MAX;
	}
	if (!h.l_next) {
		st->end = st->lm;
		return 1;
	}
	st->lm = h.l_next;
	return 0;
}

/*
 * The list from entry @lm to its end: the last entry (0 when a read fails or it is longer than
 * LM_WALK_MAX). With @check, the entries after @lm are new: *@n_new counts them and *@all_free
 * says whether each is of a file that needs no probes (at most LM_NEW_MAX of them).
 */
static __always_inline u64 lm_walk(u64 lm, bool check, u32 *n_new, bool *all_free)
{
	struct lm_walk_state st = { .lm = lm, .check = check, .all_free = true };
	struct task_struct *task = bpf_get_current_task_btf();

	if (check) {
		st.q.tgid = task->tgid;
		st.q.start = BPF_CORE_READ(task, group_leader, start_boottime) / DLW_NS_PER_TICK;
	}

	bpf_loop(LM_WALK_MAX, lm_walk_step, &st, 0);
	*n_new = st.n_new;
	*all_free = st.all_free;
	return st.end;
}

/* The process's tail, when still valid: it unloaded nothing since it was noted. */
static __always_inline u64 valid_tail(u32 tgid)
{
	struct lm_tail *t = bpf_map_lookup_elem(&lm_tails, &tgid);

	return t && t->unloads == unloads_of(tgid) ? t->lm : 0;
}

static __always_inline void note_tail(u32 tgid, u64 end)
{
	struct lm_tail t = { .lm = end, .unloads = unloads_of(tgid) };

	if (end)
		bpf_map_update_elem(&lm_tails, &tgid, &t, BPF_ANY);
	else
		bpf_map_delete_elem(&lm_tails, &tgid);
}

/* The list's end noted anew, from its known tail or else from its head (@r_map_at: where
 * _r_debug.r_map is; 0 when unknown). */
static __always_inline void renote_tail(u32 tgid, u64 r_map_at)
{
	u64 from = valid_tail(tgid), head = 0;
	u32 n = 0;
	bool all = false;

	if (!from && r_map_at && !bpf_copy_from_user(&head, sizeof(head), (void *)r_map_at))
		from = head;
	note_tail(tgid, lm_walk(from, false, &n, &all));
}

/*
 * A dlopen that added nothing to a loader's only list (musl, which signals RT_ADD at every
 * dlopen's start and RT_CONSISTENT at its end): its two changes are not changes for the call
 * either, so that its record says the link map is as it was and the collector need not read
 * the process for it. Another thread's change in between (musl's dlopen takes a lock, so none
 * but a start-up's) leaves the call changed.
 */
static __always_inline bool dlopen_added_nothing(u32 tgid, u32 tid, u32 depth)
{
	u64 key = dlw_call_key(tid, DLW_DLOPEN, depth - 1);
	struct dlw_call *c = bpf_map_lookup_elem(&calls, &key);

	if (c && c->lm_changes && lm_changes_of(tgid) == c->lm_changes + 2)
		c->lm_changes += 2;
	return true;
}

/*
 * Whether the objects this dlopen added (after the known tail) all need no probes: then no
 * hold. The tail moves to the list's end either way (a hold's answer leaves it there too).
 */
static __always_inline bool arrivals_need_no_probes(u32 tgid, u32 tid, u32 depth, bool one_list)
{
	u64 tail = valid_tail(tgid), end;
	u32 n_new = 0;
	bool all_free = true;

	if (!tail)
		return false;
	end = lm_walk(tail, true, &n_new, &all_free);
	note_tail(tgid, end);
	if (!end)
		return false;
	if (n_new)
		return all_free;
	/* Nothing added: in glibc, objects may have gone to another namespace's list, which is
	 * not walked (held); a loader with one list (musl) mapped nothing. */
	return one_list && dlopen_added_nothing(tgid, tid, depth);
}

/*
 * Whether the dlopen this thread is in (at nesting @depth) mapped nothing: glibc's loader
 * signals RT_ADD (a _dl_debug_state call) before it maps any object, in any namespace, so an
 * RT_CONSISTENT that is the process's only change since the call's entry ends a dlopen of what
 * was loaded already. glibc 2.41 signals it even then; without this, each such dlopen was held
 * and read for. Another thread's change in between makes the counts differ: held, as before.
 */
static __always_inline bool dlopen_mapped_nothing(u32 tgid, u32 tid, u32 depth)
{
	u64 key = dlw_call_key(tid, DLW_DLOPEN, depth - 1);
	struct dlw_call *c = bpf_map_lookup_elem(&calls, &key);

	if (!c || !c->lm_changes || lm_changes_of(tgid) != c->lm_changes + 1)
		return false;
	/* Not a change for this call either: its record says the link map is as it was
	 * (lm_unchanged), and the collector need not read the process for it. */
	c->lm_changes++;
	return true;
}

/*
 * When a signal that stops or ends the collector was sent to it (CLOCK_MONOTONIC ns; 0: none,
 * handle_collector_signal): it is away from then, whatever its heartbeat's age, so that a
 * SIGKILL or a SIGSTOP lets every hold go at once. Its threads stop only as each comes to the
 * signal (a thread in a long system call, later), and its heartbeat may beat meanwhile: a
 * SIGCONT ends the away, or the collector beating on for DLW_AWAY_HEALS_NS after the signal
 * (one it did not act on after all: a SIGTSTP to an orphaned process group).
 */
unsigned long long collector_away_since;
#define DLW_AWAY_HEALS_NS (1000ULL * 1000 * 1000)
/* Holds let go or refused as such a signal had been sent. */
unsigned long long hold_signalled;
/* The collector's process ID (in its own namespace, as task_id gives it); 0: not known. */
const volatile unsigned int collector_tgid = 0;

enum collector_state {
	COLLECTOR_ATTENTIVE,
	COLLECTOR_SIGNALLED, /* sent a signal that stops or ends it, not continued since */
	COLLECTOR_STALE,     /* no beat for DLW_BEAT_STALE_NS (or none at all) */
};

/* Whether the collector answers: not signalled away, and a heartbeat lately (*@beat: the beat
 * it was judged by). */
static __always_inline enum collector_state collector_state(u64 now, u64 *beat_seen)
{
	u64 beat = *beat_seen = *(volatile unsigned long long *)&collector_beat;
	u64 away = *(volatile unsigned long long *)&collector_away_since;

	if (beat && away && (s64)(beat - away) < (s64)DLW_AWAY_HEALS_NS)
		return COLLECTOR_SIGNALLED;
	/* Signed: a beat written after @now was read is fresh, not 2^64 ns old. */
	return beat && (s64)(now - beat) <= (s64)DLW_BEAT_STALE_NS ? COLLECTOR_ATTENTIVE
								    : COLLECTOR_STALE;
}

/*
 * A hold refused or let go at @now as the collector was away: counted by why; for a stale
 * @beat, its age (racy: a maximum).
 */
static __always_inline void note_away(enum collector_state why, u64 now, u64 beat)
{
	u64 age = beat ? now - beat : ~0ULL;

	if (why == COLLECTOR_SIGNALLED)
		__sync_fetch_and_add(&hold_signalled, 1);
	else if (age > hold_stale_age_max)
		hold_stale_age_max = age;
}

/* The signals whose default action is none. */
static __always_inline bool default_ignored(int sig)
{
	return sig == DLW_SIGCHLD || sig == DLW_SIGCONT || sig == DLW_SIGURG || sig == DLW_SIGWINCH;
}

/* Whether @sig, sent to @task, stops or ends it: SIGKILL and SIGSTOP always; another one when
 * its default action does that and the process left it at the default. */
static __always_inline bool signal_stops_or_ends(struct task_struct *task, int sig)
{
	struct sighand_struct *sh;
	unsigned long handler = 1;

	if (sig == DLW_SIGKILL || sig == DLW_SIGSTOP)
		return true;
	if (sig < 1 || sig > 64)
		return false;
	sh = BPF_CORE_READ(task, sighand);
	if (!sh)
		return false;
	bpf_probe_read_kernel(&handler, sizeof(handler),
			      (void *)sh + bpf_core_field_offset(struct sighand_struct, action) +
				      (sig - 1) * bpf_core_type_size(struct k_sigaction) +
				      bpf_core_field_offset(struct k_sigaction, sa.sa_handler));
	return handler == 0; /* SIG_DFL */
}

/* signal_struct's flag of a process that is dying (<linux/sched/signal.h>; a #define, not in
 * BTF): every signal sent to it from then on is dropped, a SIGCONT too. */
#define DLW_SIGNAL_GROUP_EXIT 0x00000004

/* signal_generate(sig, info, task, group, result): one to the collector that stops or ends it
 * marks it away (collector_away_since); a SIGCONT, which continues it even when it is
 * ignored, ends that, unless the collector is dying: a terminal's hangup sends SIGHUP and
 * SIGCONT to its session, so that closing the tmux window of a ui just killed had it
 * attentive again, and a hold in progress waited for the stale beat (230 ms). */
static __always_inline int on_signal_generate(struct bpf_raw_tracepoint_args *ctx)
{
	int sig = (int)ctx->args[0], result = (int)ctx->args[4];
	struct task_struct *task = (struct task_struct *)ctx->args[2];

	if (!collector_tgid || task_id(task, true) != collector_tgid)
		return 0;
	if (BPF_CORE_READ(task, signal, flags) & DLW_SIGNAL_GROUP_EXIT) {
		if (!collector_away_since)
			collector_away_since = bpf_ktime_get_ns();
		return 0;
	}
	if (sig != DLW_SIGCONT && (result == TRACE_SIGNAL_IGNORED || default_ignored(sig)))
		return 0;
	if (sig == DLW_SIGCONT)
		collector_away_since = 0;
	else if (signal_stops_or_ends(task, sig))
		collector_away_since = bpf_ktime_get_ns();
	return 0;
}

SEC("raw_tp/signal_generate")
int handle_collector_signal(struct bpf_raw_tracepoint_args *ctx)
{
	return GUARDED(on_signal_generate(ctx));
}

/*
 * A held thread's wait, by tid: kept in a map rather than on the program's stack, which a
 * sleepable program preempted on its CPU has been seen to find overwritten (a per-CPU private
 * stack), ending the wait at once.
 */
struct hold_wait {
	u64 seq, start, deadline, pc, r_map_at;
	u32 done, stale;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct hold_wait);
} holding SEC(".maps");

/* One turn of the wait: released, or past the deadline, ends it (1). */
static long hold_poll(u64 i, void *ctx)
{
	u32 tid = (u32)current_id();
	struct hold_wait *h = bpf_map_lookup_elem(&holding, &tid);
	u64 *v = bpf_map_lookup_elem(&released, &tid), now, beat;
	enum collector_state away;
	u8 byte;

	if (!h)
		return 1;
	if (v && *v >= h->seq) {
		h->done = 1;
		return 1;
	}
	now = bpf_ktime_get_ns();
	away = collector_state(now, &beat);
	if (away != COLLECTOR_ATTENTIVE) {
		h->stale = 1;
		note_away(away, now, beat);
		return 1;
	}
	/*
	 * A read of the thread's own code through the page tables (get_user_pages): it calls
	 * cond_resched(), so that a kernel without preemption (PREEMPT_NONE) runs the collector
	 * meanwhile, even on this CPU; the wait is a busy one otherwise.
	 */
	bpf_copy_from_user_task(&byte, 1, (void *)h->pc, bpf_get_current_task_btf(), 0);
	return bpf_ktime_get_ns() > h->deadline;
}

/* Whether the wait goes on: neither released nor past its deadline. */
static __always_inline bool hold_waiting(void)
{
	u32 tid = (u32)current_id();
	struct hold_wait *h = bpf_map_lookup_elem(&holding, &tid);

	return h && !h->done && !h->stale && bpf_ktime_get_ns() <= h->deadline;
}

/*
 * _dl_debug_state, the loader's r_brk: called with r_state RT_CONSISTENT once the objects a
 * dlopen maps (or those of the start-up) are in the link map, before they are relocated and
 * before any of their constructors runs. The cookie is where r_state (_r_debug) is from the
 * probed function, so that RT_ADD and RT_DELETE pass. The thread then waits here, in the
 * kernel (no stop a parent or debugger could see), until user space has attached what the new
 * objects need, at most DLW_HOLD_MAX_NS. Sleepable: outside RCU's read side, since attaching
 * a uprobe waits for an RCU grace period (the dup_mmap_sem write), which a program spinning
 * under rcu_read_lock() would hold back until its hold ran out.
 */
static __always_inline int linkmap_hold(struct pt_regs *ctx)
{
	u64 id = current_id(), cookie = bpf_get_attach_cookie(ctx);
	/* r_state's place from the probe, sign-extended (DLW_LM_DELTA_BITS). */
	s64 delta = (s64)(cookie << (64 - DLW_LM_DELTA_BITS)) >> (64 - DLW_LM_DELTA_BITS);
	bool one_list = cookie & DLW_LM_ONE_LIST;
	u32 tgid = id >> 32, tid = (u32)id, depth = dlopen_depth(tid), state = 0;
	struct hold_wait h = { .pc = PT_REGS_IP(ctx) }, *hp;
	u64 start, took, r_map_at, beat;
	struct bpf_iter_num it;
	int dummy = 0;
	enum collector_state away;
	struct dlw_event *e;
	u8 yes = 1;

	if (!probe_for(tgid))
		return 0;
	if (delta &&
	    !bpf_probe_read_user(&state, sizeof(state), (void *)(PT_REGS_IP(ctx) + delta)) &&
	    state != 0 /* RT_CONSISTENT */) {
		count_lm_change(tgid, state == 2 /* RT_DELETE */);
		return 0;
	}
	count_lm_change(tgid, false);
	if (!hold_arrivals)
		return 0;
	r_map_at = delta ? PT_REGS_IP(ctx) + delta - 16 : 0;
	/* Outside dlopen only the start-up's link map is news (then a dlclose's, or a load of
	 * libc's own, is not: only where the list ends now is noted). */
	if (!depth && bpf_map_update_elem(&started, &tgid, &yes, BPF_NOEXIST)) {
		renote_tail(tgid, r_map_at);
		return 0;
	}
	/* r_map_at: the loader's r_debug is known, so are its RT_ADD calls. glibc signals one
	 * only before it maps; musl at every dlopen's start (one_list): two changes a call,
	 * never "mapped nothing" by the count. */
	if (depth && r_map_at &&
	    (dlopen_mapped_nothing(tgid, tid, depth) ||
	     arrivals_need_no_probes(tgid, tid, depth, one_list))) {
		__sync_fetch_and_add(&hold_no_probes, 1);
		return 0;
	}
	start = bpf_ktime_get_ns();
	/* A collector stopped, killed or starved holds nobody until it answers again. */
	away = collector_state(start, &beat);
	if (away != COLLECTOR_ATTENTIVE) {
		note_away(away, start, beat);
		__sync_fetch_and_add(&hold_not_held, 1);
		count_lost_as(DLW_LOST_HOLD);
		return 0;
	}
	h.seq = __sync_fetch_and_add(&hold_seq, 1) + 1;
	e = bpf_ringbuf_reserve(&holds, __builtin_offsetof(struct dlw_event, path), 0);
	if (!e) {
		count_lost();
		return 0;
	}
	init_event(e, DLW_HOLD, false);
	e->arg0 = h.seq;
	e->arg1 = depth ? DLW_HOLD_DLOPEN : DLW_HOLD_STARTUP;
	e->arg2 = unloads_of(tgid);
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	h.start = start;
	h.deadline = start + DLW_HOLD_MAX_NS;
	h.r_map_at = r_map_at;
	if (bpf_map_update_elem(&holding, &tid, &h, BPF_ANY))
		return 0;
	/*
	 * bpf_loop's turns (8M, some 100 ms here) in rounds, until the deadline or the release:
	 * bpf_loop cannot nest, and a bounded loop would be verified once per round.
	 */
	bpf_iter_num_new(&it, 0, 1024);
	while (bpf_iter_num_next(&it) && hold_waiting())
		bpf_loop(1 << 23, hold_poll, &dummy, 0);
	bpf_iter_num_destroy(&it);
	/* The thread's own, not what the stack may hold by now. */
	tid = (u32)current_id();
	tgid = current_id() >> 32;
	hp = bpf_map_lookup_elem(&holding, &tid);
	r_map_at = hp ? hp->r_map_at : 0;
	if (hp && !hp->done)
		count_lost_as(DLW_LOST_HOLD);
	if (hp) {
		if (!hp->done && hp->stale)
			__sync_fetch_and_add(&hold_abandoned, 1);
		/* The hold as the thread saw it (its start from the map, as the rest). */
		took = bpf_ktime_get_ns() - hp->start;
		__sync_fetch_and_add(&hold_held, 1);
		__sync_fetch_and_add(&hold_ns_total, took);
		if (took > hold_ns_max)
			hold_ns_max = took; /* racy between CPUs: a maximum, not a sum */
	}
	bpf_map_delete_elem(&holding, &tid);
	bpf_map_delete_elem(&released, &tid);
	/* The start-up, or a dlopen after an unload: where the list ends, for the next dlopen. */
	if (r_map_at && !valid_tail(tgid))
		renote_tail(tgid, r_map_at);
	return 0;
}

SEC("uprobe.s")
int BPF_KPROBE(linkmap_consistent)
{
	return GUARDED(linkmap_hold(ctx));
}

#endif
