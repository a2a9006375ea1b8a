/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The OpenMP and OpenBLAS entry points (--hot): regions and BLAS dispatches, counted per
 * thread and runtime.
 * A part of dlwatch.bpf.c, included there in order.
 */
#ifndef DLSCOPE_DLWATCH_RUNTIMES_H
#define DLSCOPE_DLWATCH_RUNTIMES_H

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

#endif
