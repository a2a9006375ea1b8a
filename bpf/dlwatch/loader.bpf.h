/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The loader's API: dlopen, dlclose, dlsym (and dlmopen, dlvsym), entry and return, with the
 * calls in flight and dlerror's text.
 * A part of dlwatch.bpf.c, included there in order.
 */
#ifndef DLSCOPE_DLWATCH_LOADER_H
#define DLSCOPE_DLWATCH_LOADER_H

/*
 * Per process (tgid), its loader's calls of _dl_debug_state so far: all of them (changes) and
 * those with RT_DELETE (unloads, holds.bpf.h). glibc makes one before it maps a new object or
 * unmaps one, so a dlopen or dlclose during which changes stayed put changed nothing in the
 * link map (dlw_event.lm_unchanged), and the collector need not read the process again for
 * it. changes counts from 1: 0 is a process not seen yet.
 */
struct lm_counts {
	u64 changes, unloads;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct lm_counts);
} lm_counts SEC(".maps");

static __always_inline u64 lm_changes_of(u32 tgid)
{
	struct lm_counts *n = bpf_map_lookup_elem(&lm_counts, &tgid);

	return n ? n->changes : 0;
}

static __always_inline void count_lm_change(u32 tgid, bool unload)
{
	struct lm_counts first = { 1, unload }, *n = bpf_map_lookup_elem(&lm_counts, &tgid);

	if (!n) {
		bpf_map_update_elem(&lm_counts, &tgid, &first, BPF_ANY);
		return;
	}
	__sync_fetch_and_add(&n->changes, 1);
	if (unload)
		__sync_fetch_and_add(&n->unloads, 1);
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
	if (type == DLW_DLOPEN || type == DLW_DLCLOSE)
		p->lm_changes = lm_changes_of(id >> 32);
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

/* A dlopen's Python stack (python.bpf.h: py_capture), right after the stack bytes copied. */
static __always_inline void py_after_stack(struct dlw_stack_event *se, u64 key)
{
	struct dlw_pystack *py = bpf_map_lookup_elem(&pystacks, &key);
	u32 at = se->e.stack_size;

	if (!py || py->status == DLW_PY_NONE)
		return;
	if (at > DLW_STACK_BYTES)
		at = DLW_STACK_BYTES;
	if (!bpf_probe_read_kernel(se->stack + at, sizeof(*py), py))
		se->e.py_follows = 1;
}

/*
 * The call's result at its return probe: rax on the ret instruction (or at a uretprobe); where
 * the probe was moved before the ret (DLW_AT_EARLY), the register or stack word the epilogue
 * moves into rax.
 */
static __always_inline long exit_value(struct pt_regs *ctx)
{
	u64 c = bpf_get_attach_cookie(ctx);
	long v = 0;

	if (!(c & DLW_AT_EARLY))
		return PT_REGS_RC(ctx);
	if (c & DLW_AT_SLOT) {
		bpf_probe_read_user(&v, sizeof(v),
				    (void *)(PT_REGS_SP(ctx) + (s64)DLW_AT_SLOT_OFF(c)));
		return v;
	}
	switch (DLW_AT_REG(c)) {
	case 0: return ctx->ax;
	case 1: return ctx->cx;
	case 2: return ctx->dx;
	case 3: return ctx->bx;
	case 5: return ctx->bp;
	case 6: return ctx->si;
	case 7: return ctx->di;
	case 8: return ctx->r8;
	case 9: return ctx->r9;
	case 10: return ctx->r10;
	case 11: return ctx->r11;
	case 12: return ctx->r12;
	case 13: return ctx->r13;
	case 14: return ctx->r14;
	case 15: return ctx->r15;
	}
	return 0;
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
	u64 flags;

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
		e->lm_unchanged = p->lm_changes && p->lm_changes == lm_changes_of(p->pid);
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
		/*
		 * No wake-up for what the collector need not act on at once: dlsym comes by the
		 * hundred thousand, and a dlopen or dlclose that changed no object leaves nothing
		 * to read before it changes again (a wake-up took 10 us of each dlclose here).
		 */
		flags = type == DLW_DLSYM || e->lm_unchanged ? quiet_submit() : 0;
		/* On the ret instruction: the pc is still in the loader's function. */
		if (busy) {
			take_stack(e, ctx);
			if (type == DLW_DLOPEN)
				py_after_stack((struct dlw_stack_event *)e, key);
			stack_submit(e, busy, flags);
		} else {
			bpf_ringbuf_submit(e, flags);
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
int BPF_KPROBE(dlopen_exit)
{
	return GUARDED(call_exit(ctx, DLW_DLOPEN, exit_value(ctx)));
}

SEC("uprobe")
int BPF_KPROBE(dlclose_enter, void *handle)
{
	return GUARDED(call_enter(DLW_DLCLOSE, NULL, (u64)handle, 0, 0));
}

SEC("uretprobe")
int BPF_KPROBE(dlclose_exit)
{
	return GUARDED(call_exit(ctx, DLW_DLCLOSE, exit_value(ctx)));
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
int BPF_KPROBE(dlsym_exit)
{
	return GUARDED(call_exit(ctx, DLW_DLSYM, exit_value(ctx)));
}

#endif
