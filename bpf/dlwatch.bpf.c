// SPDX-License-Identifier: GPL-2.0
/*
 * dlscope's event stream: uprobes on the dynamic loader's API, the OpenMP/BLAS entry points
 * and the GPU module loaders, raw tracepoints for exec/fork/exit, fatal signals and long futex
 * waits. Only processes in the targets map are reported; per-thread state (inside dlopen, and
 * how many parallel regions it started) stays in the kernel.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "dlwatch.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool follow_children = false;
/* --comm: a process that execs a program with this comm becomes a target, in the kernel. */
const volatile bool comm_mode = false;
const volatile char comm_filter[16] = {};
/* The agent: with comm_mode, every process that execs becomes a target, whatever its name. */
const volatile bool comm_any = false;
/* Threads held at the consistent link map until the new objects' probes are in place; the
 * agent holds none (what it judges is read from the model, not from the first calls). */
const volatile bool hold_arrivals = true;
/* Events carry the stack above their sp for unwinding; the agent's carry registers only. */
const volatile bool copy_stacks = true;
/* The agent's --cgroup: with comm_mode, only a process that execs inside target_cgroup. */
const volatile bool cgroup_filter = false;
/* --slurm-job without the job's cgroup: with comm_mode, only a process whose environment holds
 * the entry env_filter ("SLURM_JOB_ID=42", its NUL included in env_filter_len) at its exec. */
const volatile bool env_filter_on = false;
const volatile char env_filter[DLW_ENV_ENTRY_MAX] = {};
const volatile unsigned int env_filter_len = 0;

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
	e->str_state = DLW_STR_READ;
	e->str[0] = '\0';
	if (full) {
		e->path[0] = '\0';
		e->py.status = DLW_PY_NONE;
		e->py.n = 0;
		e->stack_size = 0;
		e->stack_absent = 0;
	}
	bpf_get_current_comm(e->comm, sizeof(e->comm));
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

/* The event and the stack bytes it holds, no more; the slot is free again. */
static __always_inline void stack_submit(struct dlw_event *e, u32 *busy, u64 flags)
{
	u32 size = e->stack_size;

	if (size > DLW_STACK_BYTES)
		size = DLW_STACK_BYTES;
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
	u64 base;
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

	if (bpf_probe_read_user(se->stack + k * PAGE, PAGE, (void *)(w->base + k * PAGE)))
		se->e.stack_absent |= 1u << k;
	else
		se->e.stack_size = (k + 1) * PAGE;
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
	bpf_loop(DLW_STACK_BYTES / PAGE, stack_page, &w, 0);
	end = e->stack_size / PAGE;
	e->stack_absent &= end >= 32 ? ~0u : (1u << end) - 1;
}

/* The user registers of the current task, from a tracepoint (not taken at a user pc). */
static __always_inline const struct pt_regs *task_regs(void)
{
	return (const struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}

/* The Python processes among the targets, and where their interpreter is (user space sets it). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct dlw_pycfg);
} pyprocs SEC(".maps");

/* The Python stack of each dlopen in progress, keyed as its call; LRU: a thread that dies inside
 * dlopen leaves no entry behind for good. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, u64);
	__type(value, struct dlw_pystack);
} pystacks SEC(".maps");

/* A word of the process; 0 when it cannot be read (0 is also what ends every chain). */
static __always_inline u64 user_word(u64 addr)
{
	u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* The walk of bpf_loop's callbacks (bounded loops over unknown offsets are too many states). */
struct py_walk {
	const struct dlw_pycfg *c;
	struct dlw_pystack *ps;
	u64 self, ts, frame;
};

static long py_find_thread(u64 i, void *ctx)
{
	struct py_walk *w = ctx;

	if (!w->ts || user_word(w->ts + w->c->ts_thread_id) == w->self)
		return 1;
	w->ts = user_word(w->ts + w->c->ts_next);
	return 0;
}

/* The thread state of the calling thread: the GIL's last holder, else the interpreter's list. */
static __always_inline u64 py_tstate(struct py_walk *w, u64 interp)
{
	const struct dlw_pycfg *c = w->c;
	struct task_struct *task = bpf_get_current_task_btf();
	u64 gil, ts;

	/* thread_id is pthread_self(), which on x86-64 is the thread's fs base. */
	w->self = BPF_CORE_READ(task, thread.fsbase);
	gil = c->rt_gil >= 0	 ? c->runtime + c->rt_gil :
	      c->is_gil_ptr >= 0 ? user_word(interp + c->is_gil_ptr) :
				   0; /* 3.6: the GIL is in static variables */
	ts = gil ? user_word(gil + c->gil_last_holder) : 0;
	if (ts && user_word(ts + c->ts_thread_id) == w->self)
		return ts;
	w->ts = user_word(interp + c->is_tstate_head);
	bpf_loop(DLW_PY_THREADS, py_find_thread, w, 0);
	return w->ts && user_word(w->ts + c->ts_thread_id) == w->self ? w->ts : 0;
}

/* The next DLW_STR_PART bytes into *@h: @n of them at @at, zero-padded; false when unreadable. */
static __always_inline bool str_part(u64 *h, u64 at, u64 n)
{
	u64 part[DLW_STR_PART / 8] = {};

	if (n > DLW_STR_PART)
		n = DLW_STR_PART;
	if (n && bpf_probe_read_user(part, n, (const void *)at))
		return false;
	for (int i = 0; i < DLW_STR_PART / 8; i++)
		*h = dlw_str_mix(*h, part[i]);
	return true;
}

/* The fingerprint of the str at @s (dlwatch.h), or 0 when it is no compact str or unreadable. */
static __always_inline u64 str_digest(const struct dlw_pycfg *c, u64 s)
{
	u64 len, bytes, data, h;
	u32 state = 0, kind;

	if (!s || bpf_probe_read_user(&state, sizeof(state), (const void *)(s + c->str_state)))
		return 0;
	kind = (state >> 2) & 7;
	len = user_word(s + c->str_length);
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4) || len > (1ULL << 32))
		return 0;
	data = s + ((state >> 6) & 1 ? c->str_ascii : c->str_compact);
	bytes = len * kind;
	h = dlw_str_start(len, state);
	if (!str_part(&h, data, bytes) ||
	    !str_part(&h, data + bytes - DLW_STR_PART, bytes > DLW_STR_PART ? DLW_STR_PART : 0))
		return 0;
	return h ? h : 1;
}

/* A _PyStackRef's object (3.14+): tag bits cleared; 0 for a tagged int. */
static __always_inline u64 stackref_ptr(const struct dlw_pycfg *c, u64 ref)
{
	if (!c->fr_tagged)
		return ref;
	return (ref & 3) == 3 ? 0 : ref & ~3ULL;
}

/* One frame: eval call shims (owner 3 and up, 3.12+) skipped; the innermost kept, the outermost in a ring. */
static long py_frame(u64 i, void *ctx)
{
	struct py_walk *w = ctx;
	const struct dlw_pycfg *c = w->c;
	u64 frame = w->frame, code;
	struct dlw_pyframe *f;
	u32 slot, n;
	u8 owner = 0;

	if (!frame)
		return 1;
	w->frame = user_word(frame + c->fr_previous);
	if (c->fr_owner >= 0)
		bpf_probe_read_user(&owner, sizeof(owner), (const void *)(frame + c->fr_owner));
	if (owner >= 3)
		return 0;
	code = stackref_ptr(c, user_word(frame + c->fr_code));
	/* The count is kept in the map value, which the verifier does not track: on the stack,
	 * each known count would be a new state, and the walk verified once per frame. */
	n = w->ps->n;
	slot = n < DLW_PY_INNER ? n : DLW_PY_INNER + (n - DLW_PY_INNER) % DLW_PY_OUTER;
	f = &w->ps->f[slot & (DLW_PY_FRAMES - 1)];
	f->code = code;
	if (c->fr_lasti >= 0) {
		int lasti = 0;

		bpf_probe_read_user(&lasti, sizeof(lasti), (const void *)(frame + c->fr_lasti));
		f->offset = lasti < 0 ? 0 : (u32)lasti * (u32)c->lasti_scale;
	} else {
		u64 instr = user_word(frame + c->fr_instr), start = code + c->co_code;

		f->offset = instr >= start ? (u32)((instr - start) / 2) : 0;
	}
	f->local0 = stackref_ptr(c, user_word(frame + c->fr_local0));
	f->file = user_word(code + c->co_filename);
	f->func = user_word(code + c->co_func);
	f->file_hash = f->file ? user_word(f->file + c->str_hash) : 0;
	f->file_digest = str_digest(c, f->file);
	f->local0_hash = f->local0 ? user_word(f->local0 + c->str_hash) : 0;
	f->name[0] = '\0';
	if (f->func)
		bpf_probe_read_user_str(f->name, sizeof(f->name),
					(const void *)(f->func + c->str_ascii));
	w->ps->n = n + 1;
	return 0;
}

/*
 * The Python stack of the thread entering dlopen, under @key. It holds the GIL (an import, or
 * ctypes, which keeps it across dlopen), so no other thread changes its frames meanwhile. Per
 * frame: the code object, the instruction offset, the first local, the code's file and name.
 */
static __always_inline void py_capture(u32 tgid, u64 key)
{
	static const struct dlw_pystack empty;
	struct py_walk w = {};
	u64 interp, ts, frame;

	w.c = bpf_map_lookup_elem(&pyprocs, &tgid);
	if (!w.c || bpf_map_update_elem(&pystacks, &key, &empty, BPF_ANY))
		return;
	w.ps = bpf_map_lookup_elem(&pystacks, &key);
	if (!w.ps)
		return;
	w.ps->status = DLW_PY_UNREADABLE;
	interp = user_word(w.c->runtime + w.c->interp_head);
	if (!interp)
		return;
	ts = py_tstate(&w, interp);
	if (!ts) {
		w.ps->status = DLW_PY_NO_THREAD;
		return;
	}
	frame = user_word(ts + w.c->ts_frame);
	if (frame && w.c->ts_frame2 >= 0)
		frame = user_word(frame + w.c->ts_frame2);
	w.frame = frame;
	bpf_loop(DLW_PY_WALK, py_frame, &w, 0);
	w.ps->status = DLW_PY_OK;
	w.ps->more = w.frame != 0;
}

static __always_inline int call_enter(u32 type, const void *str, u64 arg0, u64 arg1, u64 arg2)
{
	u64 id = current_id();
	u64 key = dlw_call_key((u32)id, type, type == DLW_DLOPEN ? dlopen_depth((u32)id) : 0);
	struct dlw_call *p;
	static const struct dlw_call zero;

	if (!probe_for(id >> 32))
		return 0;
	if (bpf_map_update_elem(&calls, &key, &zero, BPF_ANY)) {
		count_lost_as(DLW_LOST_CALLS);
		return 0;
	}
	p = bpf_map_lookup_elem(&calls, &key);
	if (!p)
		return 0;
	p->ts = bpf_ktime_get_ns();
	p->arg0 = arg0;
	p->arg1 = arg1;
	p->arg2 = arg2;
	p->type = type;
	p->pid = id >> 32;
	p->strptr = (u64)str;
	/* Not read (page not present): read again at return, else by user space. */
	if (!str)
		p->str_state = DLW_STR_NULL;
	else if (bpf_probe_read_user_str(p->str, sizeof(p->str), str) < 0)
		p->str_state = DLW_STR_UNREAD;
	if (type == DLW_DLOPEN) {
		u32 tid = (u32)id, one = 1, *d = bpf_map_lookup_elem(&in_dlopen, &tid);

		if (d)
			__sync_fetch_and_add(d, 1);
		else
			bpf_map_update_elem(&in_dlopen, &tid, &one, BPF_ANY);
		py_capture(id >> 32, key);
	}
	return 0;
}

/*
 * A GPU call's result, at its return: cl_int and ze_result_t are 32 bits (the upper half of
 * rax is not theirs); an OpenCL create call returns the program and leaves its result in
 * *errcode_ret, whose address its entry kept in arg2.
 */
static __always_inline void gpu_result(struct dlw_event *e, long ret)
{
	u64 fn = e->arg0 & DLW_GPU_FN_MASK;
	int code = 0;

	if (fn == CL_CREATE_PROGRAM_WITH_SOURCE || fn == CL_CREATE_PROGRAM_WITH_BINARY ||
	    fn == CL_CREATE_PROGRAM_WITH_IL || fn == CL_LINK_PROGRAM) {
		if (!e->arg2 || bpf_probe_read_user(&code, sizeof(code), (void *)e->arg2))
			e->arg0 |= DLW_GPU_NO_RESULT;
		e->arg2 = ret;
		e->ret = code;
	} else if (fn == CL_BUILD_PROGRAM || fn == CL_COMPILE_PROGRAM) {
		e->ret = (int)ret;
	} else if (fn == ZE_MODULE_CREATE) {
		e->ret = (u32)ret;
	}
}

/*
 * A failed dlopen's error, as dlerror() will say it: the errstring of glibc's per-thread
 * struct dl_action_result { int errcode; bool returned, malloced; const char *objname;
 * char *errstring; } into path[], its errcode into arg2. Nothing where the slot is unknown.
 */
static __always_inline void dlopen_error(struct dlw_event *e)
{
	u32 tgid = e->pid;
	u64 *slot = bpf_map_lookup_elem(&dlerror_slot, &tgid), result = 0, msg = 0;
	struct task_struct *task = bpf_get_current_task_btf();
	s64 tpoff = 0;
	int code = 0;

	if (!slot || bpf_probe_read_user(&tpoff, sizeof(tpoff), (void *)*slot) || !tpoff)
		return;
	/* NULL, or a sentinel (the malloc of the result failed): below any real address. */
	if (bpf_probe_read_user(&result, sizeof(result),
				(void *)(BPF_CORE_READ(task, thread.fsbase) + tpoff)) ||
	    result < PAGE)
		return;
	if (bpf_probe_read_user(&msg, sizeof(msg), (void *)(result + 16)) || !msg ||
	    bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)msg) <= 0)
		return;
	if (!bpf_probe_read_user(&code, sizeof(code), (void *)result))
		e->arg2 = (u32)code;
}

static __always_inline int call_exit(void *ctx, u32 type, long ret)
{
	u64 id = current_id();
	u32 depth = type == DLW_DLOPEN ? dlopen_depth((u32)id) : 0;
	u64 key = dlw_call_key((u32)id, type, depth ? depth - 1 : 0);
	struct dlw_call *p = bpf_map_lookup_elem(&calls, &key);
	bool with_stack = type == DLW_DLOPEN || type == DLW_GPU_LOAD;
	struct dlw_event *e;
	u32 *busy = NULL;

	/* Only a call whose entry was recorded takes its level back: one entered before the
	 * probes were attached changes no depth. */
	if (type == DLW_DLOPEN && depth && p) {
		u32 tid = (u32)id, *d = bpf_map_lookup_elem(&in_dlopen, &tid);

		if (d && *d > 1)
			__sync_fetch_and_add(d, -1);
		else
			bpf_map_delete_elem(&in_dlopen, &tid);
	}
	if (!p)
		return 0;
	e = with_stack ? stack_reserve(type, &busy) : reserve(type);
	if (e) {
		e->duration_ns = e->ts_ns - p->ts;
		e->ts_ns = p->ts;
		e->arg0 = p->arg0;
		e->arg1 = p->arg1;
		e->arg2 = p->arg2;
		e->ret = ret;
		__builtin_memcpy(e->str, p->str, sizeof(e->str));
		e->str_state = p->str_state;
		/* A name that was not readable at entry: the call has read it since, normally. */
		if (p->str_state == DLW_STR_UNREAD) {
			if (bpf_probe_read_user_str(e->str, sizeof(e->str),
						    (const void *)p->strptr) >= 0)
				e->str_state = DLW_STR_READ;
			else
				__builtin_memcpy(e->str, &p->strptr, sizeof(p->strptr));
		}
		/* glibc's handle is the struct link_map: l_name, its second field, is the file. */
		if (type == DLW_DLOPEN && ret) {
			u64 name = 0;

			if (!bpf_probe_read_user(&name, sizeof(name), (void *)(ret + 8)) && name)
				bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)name);
		} else if (type == DLW_DLOPEN) {
			dlopen_error(e);
		}
		if (type == DLW_GPU_LOAD)
			gpu_result(e, ret);
		if (type == DLW_DLOPEN) {
			struct dlw_pystack *py = bpf_map_lookup_elem(&pystacks, &key);

			if (py)
				bpf_probe_read_kernel(&e->py, sizeof(e->py), py);
		}
		/* On the ret instruction: the pc is still in the loader's function. */
		if (busy) {
			take_stack(e, ctx);
			stack_submit(e, busy, 0);
		} else {
			/* dlsym can come by the hundred thousand: no wake-up each, the
			 * collector's poll (at most 100 ms) or the next other event drains
			 * them in order. */
			bpf_ringbuf_submit(e, type == DLW_DLSYM ? BPF_RB_NO_WAKEUP : 0);
		}
	}
	bpf_map_delete_elem(&calls, &key);
	if (type == DLW_DLOPEN)
		bpf_map_delete_elem(&pystacks, &key);
	return 0;
}

/*
 * dlopen(file, flags) and, with the cookie DLW_AT_DLMOPEN, dlmopen(lmid, file, flags): one
 * program, verified once (its Python stack walk is most of the object's verification time).
 */
SEC("uprobe")
int BPF_KPROBE(dlopen_enter)
{
	/* All three read at their fixed offsets: the verifier refuses a computed one. */
	u64 a1 = PT_REGS_PARM1(ctx), a2 = PT_REGS_PARM2(ctx), a3 = PT_REGS_PARM3(ctx);
	bool m = bpf_get_attach_cookie(ctx) == DLW_AT_DLMOPEN;

	return GUARDED(call_enter(DLW_DLOPEN, (const void *)(m ? a2 : a1), m ? a3 : a2, m ? a1 : 0, 0));
}

SEC("uretprobe")
int BPF_KRETPROBE(dlopen_exit, long ret)
{
	return GUARDED(call_exit(ctx, DLW_DLOPEN, ret));
}

SEC("uprobe")
int BPF_KPROBE(dlclose_enter, void *handle)
{
	return GUARDED(call_enter(DLW_DLCLOSE, NULL, (u64)handle, 0, 0));
}

SEC("uretprobe")
int BPF_KRETPROBE(dlclose_exit, long ret)
{
	return GUARDED(call_exit(ctx, DLW_DLCLOSE, ret));
}

/*
 * dlsym and dlvsym. Without --dlsym no return is probed: the call stays in the table until the
 * thread's next one, with the stack pointer at entry and the return address it points to,
 * which tell user space whether a thread blocked now is still inside it (stuck.c).
 */
SEC("uprobe")
int BPF_KPROBE(dlsym_enter, void *handle, const char *name)
{
	u64 sp = PT_REGS_SP(ctx), ra = 0;

	bpf_probe_read_user(&ra, sizeof(ra), (void *)sp);
	return GUARDED(call_enter(DLW_DLSYM, name, (u64)handle, sp, ra));
}

SEC("uretprobe")
int BPF_KRETPROBE(dlsym_exit, long ret)
{
	return GUARDED(call_exit(ctx, DLW_DLSYM, ret));
}

/* GOMP_parallel, GOMP_parallel_start, __kmpc_fork_call, exec_blas (--hot only): counted per
 * thread and runtime (the attach cookie: dlw_cookie()); an event, with its stack, for the first
 * region of each runtime in a process and for a region started inside dlopen (seed-002). */
static __always_inline int omp_fork(struct pt_regs *ctx)
{
	u64 id = current_id(), one = 1, *n, *c, cookie = bpf_get_attach_cookie(ctx);
	u32 tid = (u32)id, *busy = NULL;
	struct dlw_activity_key k = { .pid = id >> 32, .tid = tid, .runtime = cookie >> 8 };
	u64 fk = (id & ~0xffffffffULL) | k.runtime;
	u8 yes = 1;
	bool first;
	struct dlw_event *e;

	if (!probe_for(id >> 32))
		return 0;
	n = bpf_map_lookup_elem(&regions, &tid);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&regions, &tid, &one, BPF_ANY);
	c = bpf_map_lookup_elem(&activity, &k);
	if (c)
		__sync_fetch_and_add(c, 1);
	else if (bpf_map_update_elem(&activity, &k, &one, BPF_NOEXIST))
		/* Another CPU cannot add this thread's key: only a full map fails. */
		count_lost_as(DLW_LOST_ACTIVITY);
	/* A lookup first: most regions are not the first, and it takes no bucket lock. */
	first = !bpf_map_lookup_elem(&first_region, &fk) &&
		!bpf_map_update_elem(&first_region, &fk, &yes, BPF_NOEXIST);
	if (!first && !dlopen_depth(tid))
		return 0;
	e = stack_reserve(DLW_OMP_FORK, &busy);
	if (e && busy) {
		e->arg0 = cookie & 0xff;
		e->arg1 = n ? *n : 1;
		e->ret = k.runtime;
		take_stack(e, ctx);
		stack_submit(e, busy, 0);
	}
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(omp_fork_enter)
{
	return GUARDED(omp_fork(ctx));
}

static __always_inline int blas_thread(void)
{
	struct dlw_event *e;

	if (!probe_for(current_id() >> 32))
		return 0;
	e = reserve(DLW_BLAS_THREAD);
	if (e)
		bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(blas_thread_enter)
{
	return GUARDED(blas_thread());
}

/* The size of a CUDA image: a fatbin header says it, a cubin's ELF header implies it. */
static __always_inline u64 image_size(const void *image)
{
	struct {
		u32 magic;
		u16 version, header_size;
		u64 fat_size;
	} fb;
	Elf64_Ehdr eh;

	if (!image || bpf_probe_read_user(&fb, sizeof(fb), image))
		return 0;
	if (fb.magic == 0xBA55ED50)
		return fb.header_size + fb.fat_size;
	if (fb.magic == 0x464c457f && !bpf_probe_read_user(&eh, sizeof(eh), image))
		return eh.e_shoff + (u64)eh.e_shnum * eh.e_shentsize;
	return 0;
}

/* cuModuleLoad(mod, fname), cuModuleLoadData(mod, image), cuModuleLoadDataEx(mod, image, ...),
 * cuModuleLoadFatBinary(mod, fatbin), cuLibraryLoadData(lib, code, ...),
 * cuLibraryLoadFromFile(lib, fname, ...): the cookie says which. */
SEC("uprobe")
int BPF_KPROBE(cuda_load_enter, void *handle, const void *image)
{
	u64 fn = bpf_get_attach_cookie(ctx);
	bool by_name = fn == CUDA_MODULE_LOAD || fn == CUDA_LIBRARY_LOAD_FILE ||
		       fn == HIP_MODULE_LOAD;

	return GUARDED(call_enter(DLW_GPU_LOAD, by_name ? image : NULL, fn,
				  by_name ? 0 : image_size(image), by_name ? 0 : (u64)image));
}

/* The return of every GPU function probed, CUDA's, HIP's, OpenCL's and Level Zero's. */
SEC("uretprobe")
int BPF_KRETPROBE(cuda_load_exit, long ret)
{
	return GUARDED(call_exit(ctx, DLW_GPU_LOAD, ret));
}

/* The sum of the first source strings' lengths (clCreateProgramWithSource's lengths[]). */
static __always_inline u64 cl_source_bytes(const u64 *lengths, u64 count)
{
	u64 sum = 0, len;

	for (int i = 0; i < 8; i++) {
		if (i >= count || bpf_probe_read_user(&len, sizeof(len), &lengths[i]))
			break;
		sum += len;
	}
	return sum;
}

/* The x86-64 stack argument @n (7 for the seventh), at a function's entry. */
static __always_inline u64 stack_arg(struct pt_regs *ctx, int n)
{
	u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)(PT_REGS_SP(ctx) + 8 * (n - 6)));
	return v;
}

/*
 * OpenCL's program calls, in the ICD loader, and Level Zero's zeModuleCreate, in its loader:
 * the cookie says which. Their result is read at return (gpu_result): an OpenCL create call
 * keeps its errcode_ret in arg2 until then.
 *   clCreateProgramWithSource(ctx, count, strings, lengths, errcode_ret)
 *   clCreateProgramWithBinary(ctx, ndev, devices, lengths, binaries, status, errcode_ret)
 *   clCreateProgramWithIL(ctx, il, length, errcode_ret)
 *   clBuildProgram(program, ndev, devices, options, notify, data)
 *   clCompileProgram(program, ndev, devices, options, nheaders, headers, names, notify, data)
 *   clLinkProgram(ctx, ndev, devices, options, ninputs, inputs, notify, data, errcode_ret)
 *   zeModuleCreate(ctx, device, desc, module, build_log)
 */
static __always_inline int gpu_build(struct pt_regs *ctx)
{
	u64 fn = bpf_get_attach_cookie(ctx);
	u64 a1 = PT_REGS_PARM1(ctx), a2 = PT_REGS_PARM2(ctx), a3 = PT_REGS_PARM3(ctx);
	u64 a4 = PT_REGS_PARM4(ctx), a5 = PT_REGS_PARM5(ctx);
	struct {
		u32 stype;
		u32 pad;
		u64 next;
		u32 format;
		u32 pad2;
		u64 size, input, flags;
	} zd = {};
	u64 len = 0;

	switch (fn) {
	case CL_CREATE_PROGRAM_WITH_SOURCE:
		return call_enter(DLW_GPU_LOAD, NULL, dlw_gpu_arg0(fn, a2),
				  a4 ? cl_source_bytes((const u64 *)a4, a2) : 0, a5);
	case CL_CREATE_PROGRAM_WITH_BINARY:
		if (a4)
			bpf_probe_read_user(&len, sizeof(len), (void *)a4);
		return call_enter(DLW_GPU_LOAD, NULL, dlw_gpu_arg0(fn, a2), len, stack_arg(ctx, 7));
	case CL_CREATE_PROGRAM_WITH_IL: return call_enter(DLW_GPU_LOAD, NULL, fn, a3, a4);
	case CL_BUILD_PROGRAM:
		return call_enter(DLW_GPU_LOAD, (const void *)a4, dlw_gpu_arg0(fn, a2), 0, a1);
	case CL_COMPILE_PROGRAM:
		return call_enter(DLW_GPU_LOAD, (const void *)a4, dlw_gpu_arg0(fn, a2), 0, a1);
	case CL_LINK_PROGRAM:
		return call_enter(DLW_GPU_LOAD, (const void *)a4, dlw_gpu_arg0(fn, a5), 0,
				  stack_arg(ctx, 9));
	case ZE_MODULE_CREATE:
		if (a3)
			bpf_probe_read_user(&zd, sizeof(zd), (void *)a3);
		return call_enter(DLW_GPU_LOAD, (const void *)zd.flags, dlw_gpu_arg0(fn, zd.format),
				  zd.size, zd.input);
	default: return 0;
	}
}

SEC("uprobe")
int BPF_KPROBE(gpu_build_enter)
{
	return GUARDED(gpu_build(ctx));
}

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

/*
 * Per process (tgid), the unloads begun so far (_dl_debug_state with RT_DELETE), sent with each
 * hold: the collector walks the link map from the last entry it knew only while none came
 * since, for a dlclose can take that entry with objects before it, and the next dlopen bring
 * it back, at its place, after new ones.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u64);
} unloads SEC(".maps");

static __always_inline u64 unloads_of(u32 tgid)
{
	u64 *n = bpf_map_lookup_elem(&unloads, &tgid);

	return n ? *n : 0;
}

/* Whether the collector has answered lately (its heartbeat, DLW_BEAT_STALE_NS). */
static __always_inline bool collector_attentive(u64 now)
{
	u64 beat = *(volatile unsigned long long *)&collector_beat;

	return beat && now - beat <= DLW_BEAT_STALE_NS;
}

/* The open-coded number iterator (kernel 6.4): verified once, whatever its count. */
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

/*
 * A held thread's wait, by tid: kept in a map rather than on the program's stack, which a
 * sleepable program preempted on its CPU has been seen to find overwritten (a per-CPU private
 * stack), ending the wait at once.
 */
struct hold_wait {
	u64 seq, start, deadline, pc;
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
	u64 *v = bpf_map_lookup_elem(&released, &tid);
	u8 byte;

	if (!h)
		return 1;
	if (v && *v >= h->seq) {
		h->done = 1;
		return 1;
	}
	if (!collector_attentive(bpf_ktime_get_ns())) {
		h->stale = 1;
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
	u64 id = current_id(), delta = bpf_get_attach_cookie(ctx);
	u32 tgid = id >> 32, tid = (u32)id, depth = dlopen_depth(tid), state = 0;
	struct hold_wait h = { .pc = PT_REGS_IP(ctx) }, *hp;
	u64 start, took;
	struct bpf_iter_num it;
	int dummy = 0;
	struct dlw_event *e;
	u8 yes = 1;

	if (!probe_for(tgid))
		return 0;
	if (delta &&
	    !bpf_probe_read_user(&state, sizeof(state), (void *)(PT_REGS_IP(ctx) + (s64)delta)) &&
	    state != 0 /* RT_CONSISTENT */) {
		if (state == 2 /* RT_DELETE */) {
			u64 one = 1, *n = bpf_map_lookup_elem(&unloads, &tgid);

			if (n)
				__sync_fetch_and_add(n, 1);
			else
				bpf_map_update_elem(&unloads, &tgid, &one, BPF_ANY);
		}
		return 0;
	}
	if (!hold_arrivals)
		return 0;
	/* Outside dlopen only the start-up's link map is news (then a dlclose's is not). */
	if (!depth && bpf_map_update_elem(&started, &tgid, &yes, BPF_NOEXIST))
		return 0;
	start = bpf_ktime_get_ns();
	/* A collector stopped, killed or starved holds nobody until it beats again. */
	if (!collector_attentive(start)) {
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
	hp = bpf_map_lookup_elem(&holding, &tid);
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
	return 0;
}

SEC("uprobe.s")
int BPF_KPROBE(linkmap_consistent)
{
	return GUARDED(linkmap_hold(ctx));
}

/*
 * The new image's environment, read from its stack as exec left it (mm->env_start..env_end),
 * matched against env_filter a byte at a time: every exec of the host pays this scan while a
 * --slurm-job runs, about 10 ns a byte, so no more than ENV_SCAN_MAX bytes are read. The scan's
 * state lives in a map value, not on the stack, for the verifier (as take_stack's does).
 */
#define ENV_CHUNK 256
#define ENV_SCAN_MAX (64 * 1024)

struct env_scan {
	u64 at, end;
	u32 matched;  /* bytes of env_filter matched, from an entry's first */
	u32 at_start; /* the next byte is an entry's first */
	u32 found;
	char buf[ENV_CHUNK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct env_scan);
} env_scans SEC(".maps");

/* bpf_loop's context is on the stack: the scan it points to is not. */
struct env_walk {
	struct env_scan *s;
};

static long env_byte(u64 i, void *ctx)
{
	struct env_scan *s = ((struct env_walk *)ctx)->s;
	char c = s->buf[i & (ENV_CHUNK - 1)];
	u32 m = s->matched;

	/* env_filter holds one NUL, its last byte: a mismatch restarts at the next entry. */
	if (m || s->at_start)
		m = c == env_filter[m & (DLW_ENV_ENTRY_MAX - 1)] ? m + 1 : 0;
	s->at_start = !c;
	s->matched = m;
	if (m >= env_filter_len) {
		s->found = 1;
		return 1;
	}
	return 0;
}

static long env_chunk(u64 i, void *ctx)
{
	struct env_walk w = { .s = ((struct env_walk *)ctx)->s };
	struct env_scan *s = w.s;
	u64 left = s->end - s->at;
	u32 n = left > ENV_CHUNK ? ENV_CHUNK : (u32)left;

	if (!n || bpf_probe_read_user(s->buf, n, (void *)s->at))
		return 1;
	s->at += n;
	bpf_loop(n, env_byte, &w, 0);
	return s->found ? 1 : 0;
}

static __always_inline bool env_holds_filter(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct env_walk w;
	struct env_scan *s;
	u32 zero = 0;

	s = bpf_map_lookup_elem(&env_scans, &zero);
	if (!s || !env_filter_len)
		return false;
	s->at = BPF_CORE_READ(task, mm, env_start);
	s->end = BPF_CORE_READ(task, mm, env_end);
	if (s->end <= s->at)
		return false;
	if (s->end - s->at > ENV_SCAN_MAX)
		s->end = s->at + ENV_SCAN_MAX;
	s->matched = 0;
	s->at_start = 1;
	s->found = 0;
	w.s = s;
	bpf_loop(ENV_SCAN_MAX / ENV_CHUNK, env_chunk, &w, 0);
	return s->found ? 1 : 0;
}

static __always_inline int on_exec(struct bpf_raw_tracepoint_args *ctx)
{
	struct linux_binprm *bprm = (struct linux_binprm *)ctx->args[2];
	u32 tgid = current_id() >> 32;
	struct dlw_event *e;

	if (!tgid)
		return 0; /* outside the collector's PID namespace: never its target */
	if (comm_any) {
		char comm[16];

		/* Every process, or a job's: never a dlscope (a job's stacks, run by its batch
		 * script, a target, or on its nodes), not even a target's child that becomes one. */
		bpf_get_current_comm(comm, sizeof(comm));
		if (!bpf_strncmp(comm, sizeof(comm), "dlscope")) {
			bpf_map_delete_elem(&targets, &tgid);
			return 0;
		}
	}
	if (comm_mode && !traced(tgid)) {
		char comm[16];
		u8 one = 1;

		if (cgroup_filter && bpf_current_task_under_cgroup(&target_cgroup, 0) != 1)
			return 0;

		bpf_get_current_comm(comm, sizeof(comm));
		for (int i = 0; i < 16 && !comm_any; i++) {
			if (comm[i] != comm_filter[i])
				return 0;
			if (!comm[i])
				break;
		}
		if (env_filter_on && !env_holds_filter())
			return 0;
		bpf_map_update_elem(&targets, &tgid, &one, BPF_ANY);
	}
	/* A new image: its start-up link map is news again, its unloads none. */
	bpf_map_delete_elem(&started, &tgid);
	bpf_map_delete_elem(&unloads, &tgid);
	if (!traced(tgid))
		return 0;
	e = reserve(DLW_EXEC);
	if (e) {
		bpf_probe_read_kernel_str(e->str, sizeof(e->str), BPF_CORE_READ(bprm, filename));
		bpf_ringbuf_submit(e, 0);
	}
	return 0;
}

SEC("raw_tp/sched_process_exec")
int handle_exec(struct bpf_raw_tracepoint_args *ctx)
{
	return GUARDED(on_exec(ctx));
}

static __always_inline int on_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx->args[0];
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	u32 ptgid = task_id(parent, true), ctgid = task_id(child, true);
	u32 cpid = task_id(child, false);
	struct dlw_event *e;
	u8 one = 1;

	if (!traced(ptgid))
		return 0;
	/* --comm: a worker forked without exec carries the name (Apache's prefork, PostgreSQL's
	 * backends, gunicorn's workers) and is one of them. */
	if (ctgid != ptgid && (follow_children || comm_mode))
		bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
	/* A forked child has its parent's memory: its dlerror slot is at the same place. */
	if (ctgid != ptgid) {
		u64 *slot = bpf_map_lookup_elem(&dlerror_slot, &ptgid);

		if (slot)
			bpf_map_update_elem(&dlerror_slot, &ctgid, slot, BPF_ANY);
	}
	/* Threads are reported only when created inside dlopen: a pool born in a constructor. */
	if (ctgid == ptgid && !dlopen_depth((u32)current_id()))
		return 0;
	/* A thread created inside dlopen: the stack says which constructor. */
	if (ctgid == ptgid) {
		u32 *busy = NULL;

		e = stack_reserve(DLW_FORK, &busy);
		if (!e || !busy)
			return 0;
		e->arg0 = cpid;
		e->arg1 = DLW_FORK_THREAD;
		take_stack(e, task_regs());
		stack_submit(e, busy, 0);
		return 0;
	}
	e = reserve(DLW_FORK);
	if (!e)
		return 0;
	e->arg0 = ctgid;
	e->arg1 = DLW_FORK_PROCESS;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int handle_fork(struct bpf_raw_tracepoint_args *ctx)
{
	return GUARDED(on_fork(ctx));
}

static __always_inline int on_exit(struct bpf_raw_tracepoint_args *ctx)
{
	u64 id = current_id();
	u32 tid = (u32)id, tgid = id >> 32;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	u64 dlsym_key = dlw_call_key(tid, DLW_DLSYM, 0);
	struct dlw_event *e;

	bpf_map_delete_elem(&in_dlopen, &tid);
	bpf_map_delete_elem(&regions, &tid);
	/* An entry-only dlsym's call (no --dlsym) would stay for good. */
	bpf_map_delete_elem(&calls, &dlsym_key);
	if (tid == tgid) {
		bpf_map_delete_elem(&started, &tgid);
		bpf_map_delete_elem(&unloads, &tgid);
	}
	if (!traced(tgid) || tid != tgid)
		return 0;
	e = reserve(DLW_EXIT);
	if (e) {
		e->arg0 = BPF_CORE_READ(task, exit_code);
		bpf_ringbuf_submit(e, 0);
	}
	/* Its last record: forgotten here, not by two system calls of the collector's each
	 * (the agent sees hundreds of exits a second on a node running shell loops). */
	bpf_map_delete_elem(&targets, &tgid);
	bpf_map_delete_elem(&dlerror_slot, &tgid);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int handle_exit(struct bpf_raw_tracepoint_args *ctx)
{
	return GUARDED(on_exit(ctx));
}

static __always_inline int on_signal(struct bpf_raw_tracepoint_args *ctx)
{
	int sig = (int)ctx->args[0];
	struct kernel_siginfo *info = (struct kernel_siginfo *)ctx->args[1];
	struct dlw_event *e;
	u32 *busy = NULL;

	if (!traced(current_id() >> 32) ||
	    !(sig == DLW_SIGILL || sig == DLW_SIGTRAP || sig == DLW_SIGABRT || sig == DLW_SIGBUS ||
	      sig == DLW_SIGFPE || sig == DLW_SIGSEGV))
		return 0;
	e = stack_reserve(DLW_SIGNAL, &busy);
	if (e && busy) {
		e->arg0 = sig;
		if (info)
			e->arg1 = (u64)BPF_CORE_READ(info, _sifields._sigfault._addr);
		take_stack(e, task_regs());
		stack_submit(e, busy, 0);
	}
	return 0;
}

SEC("raw_tp/signal_deliver")
int handle_signal(struct bpf_raw_tracepoint_args *ctx)
{
	return GUARDED(on_signal(ctx));
}

/* The syscalls:sys_enter_futex record: only futex calls pay for this probe. */
struct futex_enter_args {
	unsigned long long common;
	long nr;
	unsigned long long uaddr;
	long op;
};

static __always_inline int on_futex_enter(struct futex_enter_args *ctx)
{
	u64 id = current_id();
	u32 tid = (u32)id;
	struct dlw_call p = {};

	p.arg1 = ctx->op & DLW_FUTEX_CMD_MASK;
	if ((p.arg1 != DLW_FUTEX_WAIT_OP && p.arg1 != DLW_FUTEX_WAIT_BITSET_OP) ||
	    !traced(id >> 32))
		return 0;
	p.ts = bpf_ktime_get_ns();
	p.arg0 = ctx->uaddr;
	bpf_map_update_elem(&futex_start, &tid, &p, BPF_ANY);
	/* Blocking inside dlopen (under the loader lock) is reported at once: it may never end. */
	if (dlopen_depth(tid)) {
		u32 *busy = NULL;
		struct dlw_event *e = stack_reserve(DLW_FUTEX_WAIT, &busy);

		if (e && busy) {
			e->arg0 = p.arg0;
			e->arg1 = DLW_FUTEX_BEGINS_IN_DLOPEN;
			take_stack(e, task_regs());
			stack_submit(e, busy, 0);
		}
	}
	return 0;
}

SEC("tp/syscalls/sys_enter_futex")
int handle_futex_enter(struct futex_enter_args *ctx)
{
	return GUARDED(on_futex_enter(ctx));
}

static __always_inline int on_futex_exit(void *ctx)
{
	u64 id = current_id();
	u32 tid = (u32)id;
	struct dlw_call *p = bpf_map_lookup_elem(&futex_start, &tid);
	struct dlw_event *e;
	u64 now;

	if (!p)
		return 0;
	now = bpf_ktime_get_ns();
	if (now - p->ts >= futex_threshold_ns) {
		e = reserve(DLW_FUTEX_WAIT);
		if (e) {
			e->ts_ns = p->ts;
			e->duration_ns = now - p->ts;
			e->arg0 = p->arg0;
			e->arg1 = DLW_FUTEX_ENDED;
			bpf_ringbuf_submit(e, 0);
		}
	}
	bpf_map_delete_elem(&futex_start, &tid);
	return 0;
}

SEC("tp/syscalls/sys_exit_futex")
int handle_futex_exit(void *ctx)
{
	return GUARDED(on_futex_exit(ctx));
}
