/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The targets and their per-thread state, the event ring (reserve, lost counts, the stop's
 * `running` count), the ids of a task as its PID namespace numbers it, and the copy of a user
 * stack that goes with an event.
 * A part of dlwatch.bpf.c, included there in order.
 */
#ifndef DLSCOPE_DLWATCH_RING_H
#define DLSCOPE_DLWATCH_RING_H

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} target_cgroup SEC(".maps");
const volatile unsigned long long futex_threshold_ns = 10000000;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u8);
} targets SEC(".maps");

/*
 * The big per-thread maps are allocated as entries come (BPF_F_NO_PREALLOC): preallocated,
 * their 10 MiB were a good part of the object's load at every start.
 */
/* Calls in progress, per thread (dlopen and dlsym may nest: a constructor calling dlsym). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, u64); /* call_key(): tid, type and, for dlopen, the nesting depth */
	__type(value, struct dlw_call);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, u32);
} in_dlopen SEC(".maps");

/*
 * Per process (tgid), the address of glibc's GOT slot that holds __libc_dlerror_result's
 * offset from the thread pointer (2.34 and later): a dlopen that fails reads its error there
 * before it returns, and the caller's dlerror() or the next failure can free it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, u64);
} dlerror_slot SEC(".maps");

/* Parallel regions started per thread: counted here, not sent one by one. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, u64);
} regions SEC(".maps");

/* --hot: regions and BLAS dispatches per thread and runtime, read by user space each second
 * (entries outlive their thread: user space drops them once read after the thread ended). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, DLW_ACTIVITY_MAX);
	__type(key, struct dlw_activity_key);
	__type(value, u64);
} activity SEC(".maps");

/* The runtimes of each process that started a region: its first one is sent with its stack. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u64); /* tgid << 32 | runtime */
	__type(value, u8);
} first_region SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, struct dlw_call);
} futex_start SEC(".maps");

/*
 * 16 MiB: userspace maps the ring twice (for records that wrap), all of it resident, so the
 * ring is most of watch's memory; a torch+scipy+sklearn import's 289 events fill 2% of it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DLW_LOST__COUNT);
	__type(key, u32);
	__type(value, u64);
} lost SEC(".maps");

/*
 * The stop (user/collect/probes.c: probes__stop). The collector turns `stopping` on, then waits
 * until no program is past its check (`running`, per CPU): what the rings hold then is all
 * there will be, so their rest is read whole and counted exactly, and the links' slow close
 * (a grace period each) can be left to a reaper off the collector's path.
 */
volatile bool stopping;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} running SEC(".maps");

/* The program's slot in `running`, counted in; NULL once the collector stops. */
static __always_inline u64 *run_begin(void)
{
	u32 zero = 0;
	u64 *n = bpf_map_lookup_elem(&running, &zero), was;

	if (!n)
		return NULL;
	/* A fetching atomic is a full barrier: the flag is read after the count went up (the
	 * collector sets the flag, then reads the count: one of the two sees the other). */
	was = __sync_fetch_and_add(n, 1);
	asm volatile("" : "+r"(was));
	if (!stopping)
		return n;
	__sync_fetch_and_add(n, -1);
	return NULL;
}

/* @body, run unless the collector stopped, counted in `running` while it runs. */
#define GUARDED(body)                                        \
	({                                                   \
		u64 *__slot = run_begin();                   \
		int __ret = 0;                               \
		if (__slot) {                                \
			__ret = (body);                      \
			__sync_fetch_and_add(__slot, -1);    \
		}                                            \
		__ret;                                       \
	})

/*
 * The PID namespace whose numbers every ID here is in: 0, the kernel's own (the host's); else
 * the collector's (a debug container sharing its target's namespace, kubectl debug --target),
 * whose processes have other numbers in the host's. Its device and inode: /proc/self/ns/pid.
 */
const volatile unsigned long long pidns_dev = 0, pidns_ino = 0;

/* bpf_get_current_pid_tgid in the collector's namespace: 0 for a task outside it. */
static __always_inline u64 current_id(void)
{
	struct bpf_pidns_info ns;

	if (!pidns_ino)
		return bpf_get_current_pid_tgid();
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return 0;
	return (u64)ns.tgid << 32 | ns.pid;
}

#define MAX_PIDNS_LEVEL 32

/* Each level of @p from the top: its number there, while it is not the collector's one. */
struct ns_nr_walk {
	struct pid *p;
	unsigned int level;
	u32 nr;
};

static long ns_nr_step(u64 i, void *ctx)
{
	struct ns_nr_walk *w = ctx;
	void *up = (void *)w->p + bpf_core_field_offset(struct pid, numbers) +
		   i * bpf_core_type_size(struct upid);
	struct pid_namespace *ns = NULL;
	int nr = 0;

	if (i > w->level)
		return 1;
	bpf_probe_read_kernel(&ns, sizeof(ns), up + bpf_core_field_offset(struct upid, ns));
	if (ns && BPF_CORE_READ(ns, ns.inum) == pidns_ino) {
		bpf_probe_read_kernel(&nr, sizeof(nr), up + bpf_core_field_offset(struct upid, nr));
		w->nr = (u32)nr;
		return 1;
	}
	return 0;
}

/* @task's thread ID (@group: its process's) in the collector's namespace; 0 outside it. */
static __always_inline u32 task_id(struct task_struct *task, bool group)
{
	struct ns_nr_walk w = { 0 };
	struct pid *p;

	if (!pidns_ino)
		return group ? BPF_CORE_READ(task, tgid) : BPF_CORE_READ(task, pid);
	p = group ? BPF_CORE_READ(task, group_leader, thread_pid) : BPF_CORE_READ(task, thread_pid);
	if (!p)
		return 0;
	w.p = p;
	w.level = BPF_CORE_READ(p, level);
	bpf_loop(MAX_PIDNS_LEVEL, ns_nr_step, &w, 0);
	return w.nr;
}

static __always_inline bool traced(u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/*
 * Processes outside the watch whose calls ran a probe (probes attached to every process that
 * maps a file: --comm, --follow, --job), with their hits: the summary names who paid.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, struct dlw_outside);
} outside SEC(".maps");

/* traced(), at a uprobe's entry: a hit of an untraced process is counted for it. */
static __always_inline bool probe_for(u32 tgid)
{
	struct dlw_outside first = { .hits = 1 }, *o;

	if (traced(tgid))
		return true;
	if (!tgid)
		return false; /* outside the collector's PID namespace: it has no number here */
	o = bpf_map_lookup_elem(&outside, &tgid);
	if (o) {
		__sync_fetch_and_add(&o->hits, 1);
	} else {
		/* Named now: it may be gone by the summary. */
		bpf_get_current_comm(first.comm, sizeof(first.comm));
		bpf_map_update_elem(&outside, &tgid, &first, BPF_NOEXIST);
	}
	return false;
}

static __always_inline u32 dlopen_depth(u32 tid)
{
	u32 *d = bpf_map_lookup_elem(&in_dlopen, &tid);

	return d ? *d : 0;
}

/* Events with a stack or a resolved path are full size; the rest stop before path[]. */
static __always_inline bool full_event(u32 type)
{
	return type == DLW_DLOPEN || type == DLW_GPU_LOAD || type == DLW_OMP_FORK ||
	       type == DLW_FORK || type == DLW_SIGNAL;
}

static __always_inline void count_lost_as(u32 why)
{
	u64 *n = bpf_map_lookup_elem(&lost, &why);

	if (n)
		(*n)++;
}

static __always_inline void count_lost(void)
{
	count_lost_as(DLW_LOST_RING);
}

static __always_inline void init_event(struct dlw_event *e, u32 type, bool full)
{
	u64 id = current_id();

	e->ts_ns = bpf_ktime_get_ns();
	e->pid = id >> 32;
	e->tid = (u32)id;
	e->type = type;
	e->duration_ns = 0;
	e->arg0 = e->arg1 = e->arg2 = 0;
	e->ret = 0;
	e->in_dlopen = dlopen_depth((u32)id);
	e->lm_unchanged = 0;
	e->str_state = DLW_STR_READ;
	e->str[0] = '\0';
	if (full) {
		e->path[0] = '\0';
		e->py_follows = 0;
		e->stack_size = 0;
		e->stack_absent = 0;
	}
	bpf_get_current_comm(e->comm, sizeof(e->comm));
}

/*
 * The flags of a record sent without waking the collector: its poll (at most 100 ms) or the
 * next record that wakes it drains it, in order. Unless the ring holds more than an eighth of
 * its size unread: a loop of dlopens each with 32 KiB of stack fills 16 MiB in 100 ms, and a
 * wake-up is cheaper than a lost record. (A plain submit would not wake it then: the kernel
 * wakes only for a record the collector is waiting on, the first unread.) One such wake-up a
 * millisecond: the collector takes a while to come, and each one costs the sender 10 us here.
 */
#define QUIET_WAKE_EVERY_NS 1000000ULL
unsigned long long quiet_woken_ns;

static __always_inline u64 quiet_submit(void)
{
	u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE), now;

	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) <= size / 8)
		return BPF_RB_NO_WAKEUP;
	now = bpf_ktime_get_ns();
	if (now - *(volatile u64 *)&quiet_woken_ns < QUIET_WAKE_EVERY_NS)
		return BPF_RB_NO_WAKEUP;
	quiet_woken_ns = now;
	return BPF_RB_FORCE_WAKEUP;
}

/*
 * Two record sizes, each a constant for the verifier: a short event (dlsym: the collector
 * drains millions, they carry no path and no stack) and a full one. Events with a stack are
 * built in a scratch slot (stack_reserve) and sent at their own size.
 */
static __always_inline struct dlw_event *reserve(u32 type)
{
	bool full = full_event(type);
	struct dlw_event *e;

	if (full)
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	else
		e = bpf_ringbuf_reserve(&events, __builtin_offsetof(struct dlw_event, path), 0);
	if (!e) {
		count_lost();
		return NULL;
	}
	init_event(e, type, full);
	return e;
}

/*
 * Scratch records for events with a stack, two per CPU: uprobe programs run with migration
 * disabled but may be preempted, and a program of another task can run on the CPU meanwhile.
 * A slot is taken by exchanging its flag; with both taken the event is counted lost.
 */
#define SCRATCH_SLOTS 2

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS); /* user space sets SCRATCH_SLOTS per possible CPU */
	__type(key, u32);
	__type(value, struct dlw_stack_event);
} scratch SEC(".maps");

struct scratch_busy {
	u32 slot[SCRATCH_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct scratch_busy);
} scratch_busy SEC(".maps");

static __always_inline struct dlw_event *stack_reserve(u32 type, u32 **busy)
{
	u32 zero = 0, key;
	struct scratch_busy *b = bpf_map_lookup_elem(&scratch_busy, &zero);
	struct dlw_event *e;
	int slot;

	if (!b)
		return NULL;
	if (!__sync_lock_test_and_set(&b->slot[0], 1))
		slot = 0;
	else if (!__sync_lock_test_and_set(&b->slot[1], 1))
		slot = 1;
	else {
		count_lost();
		return NULL;
	}
	*busy = &b->slot[slot];
	key = bpf_get_smp_processor_id() * SCRATCH_SLOTS + slot;
	e = bpf_map_lookup_elem(&scratch, &key);
	if (!e) {
		**busy = 0;
		count_lost();
		return NULL;
	}
	init_event(e, type, true);
	return e;
}

/* The event and the stack bytes it holds (and the Python stack after them), no more; the slot
 * is free again. */
static __always_inline void stack_submit(struct dlw_event *e, u32 *busy, u64 flags)
{
	u32 size = e->stack_size;

	if (size > DLW_STACK_BYTES)
		size = DLW_STACK_BYTES;
	if (e->py_follows)
		size += sizeof(struct dlw_pystack);
	if (bpf_ringbuf_output(&events, e, sizeof(*e) + size, flags))
		count_lost();
	*busy = 0;
}

#define PAGE 4096

/*
 * The user registers of @regs and the stack above their sp, for CFI unwinding in user space.
 * Whole pages from the one that holds sp (constant offsets and sizes, as the verifier wants):
 * at least DLW_STACK_BYTES - 4 KiB above sp. A page that cannot be read here (never touched:
 * a big alloca not yet written; or past the top of the stack's mapping) is marked absent and
 * the copy goes on; it ends after the last page read.
 */
/* The walk of take_stack's pages, one bpf_loop turn a page. */
struct stack_walk {
	struct dlw_stack_event *se;
	u64 base, end; /* the first page, and where the stack's mapping ends */
};

/*
 * One page. What the turns learn goes to the event (a map value, which the verifier does not
 * track), not to the walk on the stack: a known count there makes each turn a new state, and
 * the verifier would walk the loop once per page and per combination of pages read.
 */
static long stack_page(u64 i, void *ctx)
{
	struct stack_walk *w = ctx;
	struct dlw_stack_event *se = w->se;
	u32 k = (u32)i & (DLW_STACK_BYTES / PAGE - 1);

	if (w->base + k * PAGE >= w->end)
		return 1;
	if (bpf_probe_read_user(se->stack + k * PAGE, PAGE, (void *)(w->base + k * PAGE)))
		se->e.stack_absent |= 1u << k;
	else
		se->e.stack_size = (k + 1) * PAGE;
	return 0;
}

/* bpf_find_vma's answer: where the mapping that holds the stack pointer ends. */
static long stack_vma_end(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	*(u64 *)ctx = BPF_CORE_READ(vma, vm_end);
	return 0;
}

static __always_inline void take_stack(struct dlw_event *e, const struct pt_regs *regs)
{
	struct stack_walk w = { .se = (struct dlw_stack_event *)e };
	u32 end;

	/* Field by field: a copy of pt_regs would not fit beside a caller's locals. */
	e->regs.ip = BPF_CORE_READ(regs, ip);
	e->regs.sp = BPF_CORE_READ(regs, sp);
	e->regs.bp = BPF_CORE_READ(regs, bp);
	e->regs.bx = BPF_CORE_READ(regs, bx);
	e->regs.r12 = BPF_CORE_READ(regs, r12);
	e->regs.r13 = BPF_CORE_READ(regs, r13);
	e->regs.r14 = BPF_CORE_READ(regs, r14);
	e->regs.r15 = BPF_CORE_READ(regs, r15);
	e->stack_size = 0;
	e->stack_absent = 0;
	if (!e->regs.sp || !copy_stacks)
		return;
	w.base = e->regs.sp & ~(u64)(PAGE - 1);
	/* No read past the stack's mapping: each is a page fault, some 4 us on a nested VM, and
	 * a main thread's stack often ends a page or two above its sp. */
	w.end = w.base + DLW_STACK_BYTES;
	bpf_find_vma(bpf_get_current_task_btf(), e->regs.sp, stack_vma_end, &w.end, 0);
	bpf_loop(DLW_STACK_BYTES / PAGE, stack_page, &w, 0);
	end = e->stack_size / PAGE;
	e->stack_absent &= end >= 32 ? ~0u : (1u << end) - 1;
}

/* The user registers of the current task, from a tracepoint (not taken at a user pc). */
static __always_inline const struct pt_regs *task_regs(void)
{
	return (const struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}

#endif
