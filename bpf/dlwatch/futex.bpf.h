/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Long futex waits (--futex-ms): the syscall tracepoints, only when asked.
 * A part of dlwatch.bpf.c, included there in order.
 */
#ifndef DLSCOPE_DLWATCH_FUTEX_H
#define DLSCOPE_DLWATCH_FUTEX_H

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

#endif
