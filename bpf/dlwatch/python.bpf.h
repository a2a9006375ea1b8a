/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Python frames of a target's threads, walked in the kernel (pyprocs: where each
 * interpreter is, as user space found it).
 * A part of dlwatch.bpf.c, included there in order.
 */
#ifndef DLSCOPE_DLWATCH_PYTHON_H
#define DLSCOPE_DLWATCH_PYTHON_H

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

#endif
