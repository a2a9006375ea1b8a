/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A process's life: exec (with --comm, --slurm-job and the agent's filters), fork, exit
 * and fatal signals.
 * A part of dlwatch.bpf.c, included there in order.
 */
#ifndef DLSCOPE_DLWATCH_LIFECYCLE_H
#define DLSCOPE_DLWATCH_LIFECYCLE_H

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

/* The loaders whose r_brk is probed (filled by user space as it probes them). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct dlw_loader_key);
	__type(value, u8);
} probed_loaders SEC(".maps");

/* bpf_find_vma's answer: the file mapped there, by device and inode. */
static long vma_file(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	struct dlw_loader_key *k = ctx;
	struct inode *ino = BPF_CORE_READ(vma, vm_file, f_inode);

	if (ino) {
		k->ino = BPF_CORE_READ(ino, i_ino);
		k->dev = BPF_CORE_READ(ino, i_sb, s_dev);
	}
	return 0;
}

/*
 * The new image's loader to the holds' reader, which reads that ring before any event: one
 * dlscope has not probed yet (a program of another root, its own ld.so) runs unheld, its
 * dlopens unseen, until its probes are in, and the event ring may be long in being read.
 */
static __always_inline void exec_to_reader(u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct dlw_loader_key k = {};
	struct dlw_event *e;

	/* exec has set the registers the image starts with: its loader's entry, for a
	 * dynamic program. One probed already (the common case) wakes nobody. */
	bpf_find_vma(task, BPF_CORE_READ(regs, ip), vma_file, &k, 0);
	if (k.ino && bpf_map_lookup_elem(&probed_loaders, &k))
		return;
	k.pid = tgid;
	if (k.ino && bpf_map_lookup_elem(&probed_loaders, &k))
		return;
	e = bpf_ringbuf_reserve(&holds, __builtin_offsetof(struct dlw_event, path), 0);
	if (!e)
		return;
	init_event(e, DLW_HOLD, false);
	e->arg1 = DLW_HOLD_EXEC;
	e->arg2 = k.ino;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
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
	/* A new image: its start-up link map is news again, its unloads none, its list's end
	 * unknown. */
	bpf_map_delete_elem(&started, &tgid);
	bpf_map_delete_elem(&lm_counts, &tgid);
	bpf_map_delete_elem(&lm_tails, &tgid);
	if (!traced(tgid))
		return 0;
	e = reserve(DLW_EXEC);
	if (e) {
		bpf_probe_read_kernel_str(e->str, sizeof(e->str), BPF_CORE_READ(bprm, filename));
		bpf_ringbuf_submit(e, 0);
	}
	if (hold_arrivals)
		exec_to_reader(tgid);
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
		bpf_map_delete_elem(&lm_counts, &tgid);
		bpf_map_delete_elem(&lm_tails, &tgid);
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

/*
 * A fatal signal as it is delivered: one of the faults or an abort with its default action. A
 * signal a handler takes is not fatal: the JVM's SIGSEGV handler serves its null checks and
 * safepoints (a dozen in a second of start-up), Go's and Python's faulthandler theirs; a
 * handler that gives up resets the default and raises again, and that delivery is the one seen.
 */
static __always_inline int on_signal(struct bpf_raw_tracepoint_args *ctx)
{
	int sig = (int)ctx->args[0];
	struct kernel_siginfo *info = (struct kernel_siginfo *)ctx->args[1];
	struct k_sigaction *ka = (struct k_sigaction *)ctx->args[2];
	struct dlw_event *e;
	u32 *busy = NULL;

	if (!traced(current_id() >> 32) ||
	    !(sig == DLW_SIGILL || sig == DLW_SIGTRAP || sig == DLW_SIGABRT || sig == DLW_SIGBUS ||
	      sig == DLW_SIGFPE || sig == DLW_SIGSEGV))
		return 0;
	if (ka && BPF_CORE_READ(ka, sa.sa_handler) != NULL /* SIG_DFL */)
		return 0;
	e = stack_reserve(DLW_SIGNAL, &busy);
	if (e && busy) {
		e->arg0 = sig;
		/* Sent by kill, tgkill or raise (si_code <= 0: SI_USER, SI_TKILL, SI_QUEUE...): no
		 * fault address, the sender's PID (arg2 = its PID + 1; 0: a fault). */
		if (info && BPF_CORE_READ(info, si_code) <= 0)
			e->arg2 = (u64)BPF_CORE_READ(info, _sifields._kill._pid) + 1;
		else if (info)
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

#endif
