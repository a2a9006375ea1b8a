// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "array.h"
#include "addrmap.h"
#include "arch.h"
#include "dwarf_member.h"
#include "elfobj.h"
#include "forkorigin.h"
#include "forkpool.h"
#include "libgraph.h"
#include "lockwait.h"
#include "paths.h"
#include "procfs.h"
#include "procmaps.h"
#include "pystate.h"
#include "target.h"
#include "threadscan.h"
#include "unwind.h"

#define FUTEX_CMD_MASK 0x7f

static const char *kind_ids[] = {
	[WAIT_RUNNING] = "running",
	[WAIT_MUTEX] = "mutex",
	[WAIT_LOADER_LOCK] = "loader-lock",
	[WAIT_JOIN] = "join",
	[WAIT_TEAM] = "team",
	[WAIT_FUTEX] = "futex",
	[WAIT_SYSCALL] = "syscall",
	[WAIT_GIL] = "gil",
	[WAIT_PYLOCK] = "python-lock",
	[WAIT_MUTEX_UNOWNED] = "mutex-unowned",
	[WAIT_DEAD_OWNER] = "mutex-dead-owner",
	[WAIT_NO_TEAM] = "team-missing",
};

const char *wait_kind__id(enum wait_kind k)
{
	return kind_ids[k];
}

static bool is_parallel_runtime(const struct libgraph *g, unsigned int id)
{
	const struct obj_roles *r = lg_object__roles(g->objs[id]);

	return obj_roles__find(r, ROLE_OPENMP) || obj_roles__find(r, ROLE_BLAS);
}

/* The object whose file mapping holds @addr, and @addr in that object's own numbering. */
static const struct lg_object *object_at(const struct addrmap *am, uint64_t addr, uint64_t *vaddr)
{
	const struct addr_range *r = addrmap__find(am, addr);

	if (!r || !r->obj || !mapping__is_file(r->mp))
		return NULL;
	*vaddr = addr - r->obj->base;
	return r->obj;
}

/*
 * "lock_a in hang_abba", "_rtld_global._dl_load_lock in ld-linux-x86-64.so.2" (the member from
 * DWARF when debug info is installed), "0x7f.. in libfoo.so", or the bare address.
 */
static void name_address(const struct target *t, const struct libgraph *g,
			 const struct addrmap *maps, uint64_t addr, char *buf, size_t len,
			 const char **symbol)
{
	uint64_t vaddr, off;
	const struct lg_object *o = object_at(maps, addr, &vaddr);
	const char *name;
	char member[64], host[PATH_MAX + 64];

	*symbol = NULL;
	if (o && o->elf && !elfobj__symbol_at(o->elf, vaddr, false, &name, &off)) {
		*symbol = name;
		target__host_path(t, o->path, host, sizeof(host));
		if (off && !dwarf_member_at(host, name, off, member, sizeof(member)))
			snprintf(buf, len, "%s.%s in %s", name, member, lg_object__basename(o));
		else if (off)
			snprintf(buf, len, "%s+0x%" PRIx64 " in %s", name, off,
				 lg_object__basename(o));
		else
			snprintf(buf, len, "%s in %s", name, lg_object__basename(o));
	} else if (o) {
		snprintf(buf, len, "0x%" PRIx64 " in %s", addr, lg_object__basename(o));
	} else {
		snprintf(buf, len, "0x%" PRIx64, addr);
	}
}

static const struct thread_info *find_thread(const struct threadscan *ts, pid_t tid)
{
	for (size_t i = 0; i < ts->n; i++)
		if (ts->t[i].tid == tid)
			return &ts->t[i];
	return NULL;
}

/* The thread a TID read from the target's memory names: in its PID namespace's numbers. */
static pid_t tid_from_memory(const struct threadscan *ts, int32_t id)
{
	for (size_t i = 0; id > 0 && i < ts->n; i++)
		if (ts->t[i].ns_tid == id)
			return ts->t[i].tid;
	return 0;
}

/* The innermost parallel runtime on a thread's stack, and whether the thread is a pool worker
 * (the runtime is its outermost non-system code) or a master (called into it from elsewhere). */
static int runtime_of(const struct libgraph *g, const struct thread_info *ti, bool *worker,
		      bool *busy_elsewhere)
{
	ssize_t first_user = -1, inner_rt = -1;

	for (size_t k = 0; k < ti->n_frames; k++) {
		unsigned int obj = ti->frames[k].obj;

		if (first_user < 0 && !lg_object__is_system(g->objs[obj]))
			first_user = (ssize_t)k;
		if (is_parallel_runtime(g, obj))
			inner_rt = (ssize_t)k;
	}
	if (inner_rt < 0)
		return -1;
	*worker = first_user >= 0 &&
		  g->objs[ti->frames[first_user].obj] == g->objs[ti->frames[inner_rt].obj];
	/* Busy: code other than the runtime and libc runs inside it, or it entered the loader. */
	*busy_elsewhere = false;
	for (size_t k = (size_t)inner_rt + 1; k < ti->n_frames; k++) {
		unsigned int obj = ti->frames[k].obj;

		if ((!lg_object__is_system(g->objs[obj]) && !is_parallel_runtime(g, obj)) ||
		    lg_object__is_loader(g->objs[obj]))
			*busy_elsewhere = true;
	}
	if (*worker && inner_rt >= 0) {
		/* A worker's user code sits between two runtime frames: look past the first. */
		for (size_t k = (size_t)first_user + 1; k < ti->n_frames; k++) {
			unsigned int obj = ti->frames[k].obj;

			if ((!lg_object__is_system(g->objs[obj]) && !is_parallel_runtime(g, obj)) ||
			    lg_object__is_loader(g->objs[obj]))
				*busy_elsewhere = true;
		}
	}
	return (int)ti->frames[inner_rt].obj;
}

static int add_edge(struct lockwait_report *r, pid_t from, pid_t to, enum wait_kind kind,
		    const char *what)
{
	struct wait_edge *ne;

	if (ARRAY_RESERVE(r->edges, r->cap_edges, r->n_edges + 1))
		return -ENOMEM;
	ne = r->edges;
	ne[r->n_edges].from = from;
	ne[r->n_edges].to = to;
	ne[r->n_edges].kind = kind;
	snprintf(ne[r->n_edges].what, sizeof(ne[r->n_edges].what), "%s", what);
	r->n_edges++;
	return 0;
}

/* The Python thread of @tid (3.11+ record their TIDs), or NULL. */
static const struct py_thread *py_thread_of(const struct py_snapshot *py, pid_t tid)
{
	for (size_t i = 0; py && i < py->n; i++)
		if (py->t[i].tid == tid)
			return &py->t[i];
	return NULL;
}

/* "worker (/tmp/t.py:12)": the innermost Python frame of @tid, or "" when unknown. */
static void python_line(const struct py_snapshot *py, pid_t tid, char *buf, size_t len)
{
	const struct py_thread *pt = py_thread_of(py, tid);

	buf[0] = '\0';
	if (pt && pt->n_frames)
		snprintf(buf, len, " at %s (%s:%d)", pt->frames[0].function, pt->frames[0].file,
			 pt->frames[0].line);
}

/* The GIL's condition variable or mutex: the thread waits for the GIL's holder. */
static int gil_wait(const struct py_snapshot *py, const struct thread_info *ti,
		    struct thread_wait *w, struct lockwait_report *r)
{
	const struct py_thread *holder = py->gil_locked ? py_snapshot__thread(py, py->gil_holder) :
							  NULL;
	char line[200];

	w->kind = WAIT_GIL;
	python_line(py, ti->tid, line, sizeof(line));
	if (!holder || !holder->tid || holder->tid == ti->tid) {
		snprintf(w->what, sizeof(w->what), "the GIL%s (being handed over)", line);
		return 0;
	}
	snprintf(w->what, sizeof(w->what), "the GIL%s, held by thread %d", line, holder->tid);
	return add_edge(r, ti->tid, holder->tid, WAIT_GIL, "the GIL (Python's global lock)");
}

/*
 * Is thread @tid, as unwound in the stop, inside CPython's GIL acquisition? take_gil waits on
 * the GIL's condition variable with a 5 ms timeout and loops, so a waiter is often caught
 * running or between two waits, not in the futex: its stack says it all the same. Only frames
 * of the C library and of the interpreter may lie inside the acquiring call.
 */
static bool in_gil_acquisition(const struct stacks *st, const struct py_snapshot *py, pid_t tid)
{
	/* PyGILState_Ensure goes through PyEval_RestoreThread, after allocating (not a wait). */
	static const char *const takers[] = { "PyEval_RestoreThread", "PyEval_AcquireThread",
					      "PyEval_AcquireLock" };
	const struct thread_stack *ts = NULL;
	const char *interp = path_base(py->interp->object);

	for (size_t i = 0; st && i < st->n && !ts; i++)
		if (st->t[i].tid == tid)
			ts = &st->t[i];
	for (size_t k = 0; ts && k < ts->n_frames && k < 16; k++) {
		const struct stack_frame *f = &ts->frames[k];
		const char *mod = path_base(f->module);

		if (strcmp(mod, interp) && strncmp(mod, "libc.so", 7) &&
		    strncmp(mod, "libpthread.so", 13))
			return false;
		if (!f->function || strcmp(mod, interp))
			continue;
		if (!strncmp(f->function, "take_gil", 8))
			return true;
		for (size_t j = 0; j < sizeof(takers) / sizeof(takers[0]); j++)
			if (!strcmp(f->function, takers[j]))
				return true;
	}
	return false;
}

/* Does @ti wait inside CPython's lock acquisition (threading.Lock/RLock.acquire)? */
static bool in_python_lock(const struct libgraph *g, const struct thread_info *ti)
{
	for (size_t k = 0; k < ti->n_frames; k++) {
		const struct lg_object *o = g->objs[ti->frames[k].obj];
		const char *name;
		uint64_t off;

		/* A return address: the call instruction lies just before it. */
		if (o->elf &&
		    !elfobj__symbol_at(o->elf, ti->frames[k].addr - o->base - 1, true, &name,
				       &off) &&
		    (!strcmp(name, "PyThread_acquire_lock_timed") ||
		     /* 3.13 on: threading.Lock is a PyMutex, which parks its waiters */
		     !strcmp(name, "_PyParkingLot_Park")))
			return true;
	}
	return false;
}

/*
 * The owner of the RLock whose lock is the semaphore @sem, found on the waiter's stack: an
 * rlockobject (3.9-3.12: header, rlock_lock, rlock_owner) pointing at @sem, whose type is
 * _thread.RLock. 0 when there is none (a plain Lock, which has no owner).
 */
static uint64_t rlock_owner(const struct target *t, const struct addrmap *am,
			    const struct thread_info *ti, uint64_t sem)
{
	uint64_t words[1024];
	size_t n = 0;

	for (; n < 1024 && !target__read(t, ti->sp + n * 8, &words[n], 8 * 64); n += 64)
		;
	for (size_t i = 0; i < n; i++) {
		const struct addr_range *ar = addrmap__find(am, words[i]);
		uint64_t obj[4], tp_name;
		char name[32];

		if (!ar || mapping__is_file(ar->mp) || words[i] & 7 ||
		    target__read(t, words[i], obj, sizeof(obj)) || obj[2] != sem)
			continue;
		if (!target__read(t, obj[1] + 24, &tp_name, sizeof(tp_name)) &&
		    target__read_str(t, tp_name, name, sizeof(name)) > 0 &&
		    !strcmp(name, "_thread.RLock"))
			return obj[3];
	}
	return 0;
}

static int python_lock_wait(const struct target *t, const struct addrmap *am,
			    const struct py_snapshot *py, const struct thread_info *ti,
			    struct thread_wait *w, struct lockwait_report *r)
{
	uint64_t owner = rlock_owner(t, am, ti, w->addr);
	char line[200];

	w->kind = WAIT_PYLOCK;
	python_line(py, ti->tid, line, sizeof(line));
	for (size_t i = 0; owner && i < py->n; i++) {
		if (py->t[i].pthread_id != owner || !py->t[i].tid || py->t[i].tid == ti->tid)
			continue;
		snprintf(w->what, sizeof(w->what), "a threading.RLock%s, held by thread %d", line,
			 py->t[i].tid);
		return add_edge(r, ti->tid, py->t[i].tid, WAIT_PYLOCK, "a threading.RLock");
	}
	snprintf(w->what, sizeof(w->what),
		 "a Python threading.Lock%s; its holder is unknown (CPython's locks are semaphores "
		 "without an owner)",
		 line);
	return 0;
}

/*
 * musl's pthread_mutex_t: _m_type, then _m_lock (the futex word), _m_waiters, and, in an owned
 * mutex of a type that records its owner, the owner's robust-list links (_m_prev, _m_next).
 */
#define MUSL_MUTEX_SIZE 40
#define MUSL_LOCK_AT 4
#define MUSL_PREV_AT 24
#define MUSL_WAITERS_BIT 0x80000000u
#define MUSL_OWNER_MASK 0x3fffffffu
#define MUSL_EBUSY 16

/*
 * A wait on a musl mutex: the futex word is _m_lock, and the value it sleeps on is the lock's
 * with the waiters bit. A normal mutex holds EBUSY, no owner; a recursive or error-checking one
 * its owner's TID, and links itself into the owner's robust list. Anything else (a semaphore's
 * -1, a condition variable's sequence, musl's internal locks) is not taken for a mutex.
 * 1 when @w was classified (with an edge added for a known owner), 0 when it is no mutex.
 */
static int musl_mutex_wait(const struct target *t, const struct threadscan *ts,
			   const struct thread_info *ti, const char *where, struct thread_wait *w,
			   struct lockwait_report *r)
{
	uint32_t val = (uint32_t)ti->args[2], own = val & MUSL_OWNER_MASK;
	unsigned char m[MUSL_MUTEX_SIZE];
	int32_t type;
	uint64_t prev;
	pid_t owner;
	char what[240];

	if (!(val & MUSL_WAITERS_BIT) || !own || own == MUSL_OWNER_MASK ||
	    target__read(t, w->addr - MUSL_LOCK_AT, m, sizeof(m)))
		return 0;
	memcpy(&type, m, sizeof(type));
	memcpy(&prev, m + MUSL_PREV_AT, sizeof(prev));
	if (type & ~0x8f)
		return 0; /* not a mutex type: its kind (0-2), robust (4), PI (8), shared (128) */
	snprintf(what, sizeof(what), "mutex %s", where);
	if ((type & 3) == 0) {
		if (own != MUSL_EBUSY)
			return 0;
		w->kind = WAIT_MUTEX_UNOWNED;
		snprintf(w->what, sizeof(w->what),
			 "%s, whose holder is unknown (musl's default mutex type does not record "
			 "its owner)",
			 what);
		return 1;
	}
	owner = tid_from_memory(ts, (int32_t)own);
	if (!owner || owner == ti->tid || !prev || (prev & 7))
		return 0;
	w->kind = WAIT_MUTEX;
	snprintf(w->what, sizeof(w->what), "%s, held by thread %d", what, owner);
	return add_edge(r, ti->tid, owner, WAIT_MUTEX, what) ?: 1;
}

/*
 * A glibc mutex, locked, whose owner is no thread of the process: its waiter sleeps on __lock
 * (2: locked, with waiters) and __owner names a thread that exited holding it, or one of the
 * parent's that held it when this process was forked from it. Nothing can unlock it. The words
 * are __lock, __count, __owner, __nusers, __kind: a kind glibc knows, someone counted in.
 */
static bool dead_owner_mutex(const struct threadscan *ts, const struct thread_info *ti,
			     const int32_t word[5])
{
	unsigned cmd = (unsigned)ti->args[1] & FUTEX_CMD_MASK;
	int32_t kind = word[4] & ~(128 | 256 | 512); /* pshared, elision */

	return (cmd == 0 || cmd == 9) && (uint32_t)ti->args[2] == 2 && word[0] == 2 &&
	       word[2] > 0 && !tid_from_memory(ts, word[2]) && word[3] >= 1 && kind >= 0 &&
	       kind <= 3;
}

static int classify_futex(const struct target *t, const struct libgraph *g,
			  const struct addrmap *maps, const struct threadscan *ts,
			  const struct py_snapshot *py, const struct thread_info *ti,
			  struct thread_wait *w, struct lockwait_report *r)
{
	int32_t word[5] = { 0 };
	const char *symbol;
	char where[128];
	uint64_t vaddr;
	const struct lg_object *o;
	pid_t joined, owner;

	w->addr = ti->args[0];
	name_address(t, g, maps, w->addr, where, sizeof(where), &symbol);
	if (target__read(t, w->addr, word, sizeof(word)))
		memset(word, 0, sizeof(word));
	/* pthread_join sleeps on the joined thread's TID word until the kernel clears it. */
	joined = word[0] > 2 ? tid_from_memory(ts, word[0]) : 0;
	if (joined && joined != ti->tid) {
		w->kind = WAIT_JOIN;
		snprintf(w->what, sizeof(w->what), "joins thread %d (pthread_join)", joined);
		return add_edge(r, ti->tid, joined, WAIT_JOIN, "pthread_join of it");
	}
	if (libgraph__libc(g) == IMPL_MUSL) {
		int got = musl_mutex_wait(t, ts, ti, where, w, r);

		if (got)
			return got < 0 ? got : 0;
	}
	/* A locked glibc mutex: __lock is nonzero and __owner holds the owner's TID. */
	o = object_at(maps, w->addr, &vaddr);
	owner = word[0] != 0 ? tid_from_memory(ts, word[2]) : 0;
	if (owner) {
		bool loader = o && lg_object__is_loader(o) && symbol &&
			      !strcmp(symbol, "_rtld_global");
		char what[240];

		w->kind = loader ? WAIT_LOADER_LOCK : WAIT_MUTEX;
		if (loader)
			snprintf(what, sizeof(what), "glibc's loader lock (%s)", where);
		else
			snprintf(what, sizeof(what), "mutex %s", where);
		snprintf(w->what, sizeof(w->what), "%s, held by thread %d", what, owner);
		return add_edge(r, ti->tid, owner, w->kind, what);
	}
	if (libgraph__libc(g) != IMPL_MUSL && dead_owner_mutex(ts, ti, word)) {
		w->kind = WAIT_DEAD_OWNER;
		snprintf(w->what, sizeof(w->what),
			 "mutex %s, held by thread %d, which is no thread of this process", where,
			 word[2]);
		w->forever = r->never_ends = true;
		return 0;
	}
	if (py && py_snapshot__is_gil_wait(py, w->addr))
		return gil_wait(py, ti, w, r);
	if (py && in_python_lock(g, ti))
		return python_lock_wait(t, maps, py, ti, w, r);
	w->kind = WAIT_FUTEX;
	snprintf(w->what, sizeof(w->what),
		 "futex %s with no owner (condition variable, barrier or semaphore)", where);
	return 0;
}

/*
 * A master blocked in GNU libgomp whose pool has no thread in the process: the process was
 * forked after its parent ran a region, libgomp kept the pool's bookkeeping but not its threads
 * (it has no atfork handler, unlike LLVM's and Intel's runtimes), and the next region waits at
 * the pool's dock for workers that will never come. A dock is a barrier, whose futex word is a
 * generation (BAR_INCR steps); libgomp's locks and semaphores wait on -1 or 0 instead (an
 * omp_lock_t another thread holds is no missing team).
 */
static bool team_missing(const struct libgraph *g, const struct threadscan *ts,
			 const struct thread_info *ti, int rt)
{
	const struct obj_role *omp = obj_roles__find(lg_object__roles(g->objs[rt]), ROLE_OPENMP);
	uint32_t expected = (uint32_t)ti->args[2];

	if (!omp || omp->impl != IMPL_GNU_LIBGOMP || expected == 0 || expected == UINT32_MAX)
		return false;
	for (size_t i = 0; i < ts->n; i++) {
		const struct thread_info *o = &ts->t[i];
		bool worker, busy;

		if (o == ti)
			continue;
		if ((o->start_known && o->start_obj == (unsigned)rt) ||
		    (runtime_of(g, o, &worker, &busy) == rt && worker))
			return false;
	}
	return true;
}

/* An OpenMP/BLAS master blocked in its runtime waits for the workers busy elsewhere. */
static int team_edges(const struct libgraph *g, const struct threadscan *ts,
		      const struct thread_info *ti, struct thread_wait *w,
		      struct lockwait_report *r)
{
	bool worker, busy;
	int rt = runtime_of(g, ti, &worker, &busy);
	char what[240];

	if (rt < 0 || worker)
		return 0;
	if (ti->pc_obj != UINT32_MAX && ti->pc_obj != (unsigned)rt &&
	    !lg_object__is_system(g->objs[ti->pc_obj]))
		return 0;
	snprintf(what, sizeof(what), "the end of a %s parallel region (its team's workers)",
		 role_impl__name(
			 obj_roles__find(lg_object__roles(g->objs[rt]), ROLE_OPENMP) ?
				 obj_roles__find(lg_object__roles(g->objs[rt]), ROLE_OPENMP)->impl :
				 obj_roles__find(lg_object__roles(g->objs[rt]), ROLE_BLAS)->impl));
	for (size_t i = 0; i < ts->n; i++) {
		const struct thread_info *o = &ts->t[i];
		bool ow, obusy;

		if (o == ti || runtime_of(g, o, &ow, &obusy) != rt || !ow || !obusy)
			continue;
		w->kind = WAIT_TEAM;
		snprintf(w->what, sizeof(w->what), "waits at %s", what);
		if (add_edge(r, ti->tid, o->tid, WAIT_TEAM, what))
			return -ENOMEM;
	}
	if (w->kind == WAIT_FUTEX && team_missing(g, ts, ti, rt)) {
		w->kind = WAIT_NO_TEAM;
		snprintf(
			w->what, sizeof(w->what),
			"the workers of a GNU libgomp parallel region (%s), and the process has no "
			"thread of that pool",
			lg_object__basename(g->objs[rt]));
		w->forever = r->never_ends = true;
	}
	return 0;
}

/* Append a verdict and its remedy (NULL when there is nothing to do); takes both strings. */
static int add_verdict(struct lockwait_report *r, char *text, char *remedy)
{
	if (ARRAY_RESERVE(r->verdicts, r->cap_verdicts, r->n_verdicts + 1) ||
	    ARRAY_RESERVE(r->remedies, r->cap_remedies, r->n_verdicts + 1) || !text) {
		free(text);
		free(remedy);
		return -ENOMEM;
	}
	r->verdicts[r->n_verdicts] = text;
	r->remedies[r->n_verdicts++] = remedy;
	return 0;
}

/* Tarjan's strongly connected components; each of size > 1 becomes a cycle. */
struct tarjan {
	struct lockwait_report *r;
	int *index, *low, *stack;
	bool *on;
	int next, sp;
	int err;
};

static int thread_index(const struct lockwait_report *r, pid_t tid)
{
	for (size_t i = 0; i < r->n_threads; i++)
		if (r->threads[i].tid == tid)
			return (int)i;
	return -1;
}

static void emit_cycle(struct tarjan *tj, int *members, int n)
{
	struct lockwait_report *r = tj->r;
	pid_t *cyc = calloc((size_t)n + 1, sizeof(*cyc));
	bool *in = calloc(r->n_threads, sizeof(*in));
	int len = 0, cur;

	if (!cyc || !in)
		goto oom;
	for (int i = 0; i < n; i++)
		in[members[i]] = true;
	/* Walk the component from its first member along edges that stay inside it. */
	cur = members[0];
	do {
		int nxt = -1;

		cyc[len++] = r->threads[cur].tid;
		for (size_t e = 0; e < r->n_edges && nxt < 0; e++) {
			int to = thread_index(r, r->edges[e].to);

			if (r->edges[e].from == r->threads[cur].tid && to >= 0 && in[to]) {
				bool seen = false;

				for (int k = 0; k < len; k++)
					seen |= cyc[k] == r->threads[to].tid;
				if (!seen || to == members[0])
					nxt = to;
			}
		}
		cur = nxt;
	} while (cur >= 0 && cur != members[0] && len < n);
	cyc[len++] = cyc[0];
	if (ARRAY_RESERVE(r->cycles, r->cap_cycles, r->n_cycles + 1) ||
	    ARRAY_RESERVE(r->cycle_len, r->cap_cycle_len, r->n_cycles + 1))
		goto oom;
	r->cycles[r->n_cycles] = cyc;
	r->cycle_len[r->n_cycles++] = (size_t)len;
	free(in);
	return;
oom:
	free(cyc);
	free(in);
	tj->err = -ENOMEM;
}

static void strongconnect(struct tarjan *tj, int v)
{
	struct lockwait_report *r = tj->r;

	tj->index[v] = tj->low[v] = tj->next++;
	tj->stack[tj->sp++] = v;
	tj->on[v] = true;
	for (size_t e = 0; e < r->n_edges; e++) {
		int w;

		if (r->edges[e].from != r->threads[v].tid)
			continue;
		w = thread_index(r, r->edges[e].to);
		if (w < 0)
			continue;
		if (tj->index[w] < 0) {
			strongconnect(tj, w);
			if (tj->low[w] < tj->low[v])
				tj->low[v] = tj->low[w];
		} else if (tj->on[w] && tj->index[w] < tj->low[v]) {
			tj->low[v] = tj->index[w];
		}
	}
	if (tj->low[v] == tj->index[v]) {
		int start = tj->sp;

		do
			tj->on[tj->stack[--start]] = false;
		while (tj->stack[start] != v);
		if (tj->sp - start > 1)
			emit_cycle(tj, tj->stack + start, tj->sp - start);
		tj->sp = start;
	}
}

int lockwait__find_cycles(struct lockwait_report *r)
{
	size_t n = r->n_threads ? r->n_threads : 1;
	struct tarjan tj = { .r = r };

	tj.index = malloc(n * sizeof(int));
	tj.low = malloc(n * sizeof(int));
	tj.stack = malloc(n * sizeof(int));
	tj.on = calloc(n, sizeof(bool));
	if (!tj.index || !tj.low || !tj.stack || !tj.on) {
		tj.err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < r->n_threads; i++)
		tj.index[i] = -1;
	for (size_t i = 0; i < r->n_threads && !tj.err; i++)
		if (tj.index[i] < 0)
			strongconnect(&tj, (int)i);
out:
	free(tj.index);
	free(tj.low);
	free(tj.stack);
	free(tj.on);
	return tj.err;
}

/*
 * The library whose constructor a thread runs inside dlopen: the code the innermost ld.so frame
 * called. (The top of the main stack also holds an ld.so frame from start-up: not that one.)
 */
static const char *constructor_of(const struct libgraph *g, const struct thread_info *ti)
{
	for (size_t k = ti->n_frames; k-- > 1;) {
		unsigned int obj = ti->frames[k].obj, outer = ti->frames[k - 1].obj;

		if (!lg_object__is_system(g->objs[obj]) && lg_object__is_loader(g->objs[outer]))
			return g->objs[obj]->path;
	}
	return NULL;
}

static const char *runtime_name(const struct libgraph *g, const struct threadscan *ts)
{
	for (size_t i = 0; i < ts->n; i++) {
		bool worker, busy;
		int rt = runtime_of(g, &ts->t[i], &worker, &busy);

		if (rt >= 0) {
			const struct obj_roles *roles = lg_object__roles(g->objs[rt]);
			const struct obj_role *role = obj_roles__find(roles, ROLE_OPENMP);

			if (!role)
				role = obj_roles__find(roles, ROLE_BLAS);
			return role_impl__name(role->impl);
		}
	}
	return "the parallel runtime";
}

/* What to do about a cycle, from the kinds of wait in it (a new string, NULL: no memory). */
static char *remedy_for(bool loader, bool team, bool join, bool gil)
{
	if (loader && team)
		return strdup(
			"Keep parallel work out of library constructors and import-time code: "
			"import the module that runs it (e.g. numpy) before loading the "
			"extension whose constructor triggers it, move the work out of the "
			"constructor, or run it single-threaded there (OMP_NUM_THREADS=1, "
			"MKL_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1).");
	if (loader && join)
		return strdup("Do not wait in a constructor for a thread that loads libraries "
			      "or looks up symbols: start it after dlopen returns, or do "
			      "not join it there.");
	if (gil)
		return strdup("A thread holds Python's GIL while it blocks on a lock that a thread "
			      "waiting for the GIL holds: the C extension must release the GIL "
			      "(Py_BEGIN_ALLOW_THREADS) before it blocks, or take that lock only "
			      "with the GIL released.");
	if (loader)
		return strdup("Do not wait, while inside dlopen, for a thread that needs the "
			      "loader lock (dlopen, dlsym, dlclose, dl_iterate_phdr).");
	return strdup("Take the locks in one global order (or use pthread_mutex_"
		      "trylock and back off), so no thread holds one while waiting "
		      "for another that a waiter holds.");
}

/* The verdict on cycle @c of @r: each wait in it, who holds the loader lock and why. */
static int cycle_verdict(const struct libgraph *g, const struct threadscan *ts,
			 struct lockwait_report *r, size_t c)
{
	bool loader = false, team = false, join = false, gil = false;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	pid_t holder = 0;

	if (!f)
		return -ENOMEM;
	fprintf(f, "Deadlock between %zu threads:", r->cycle_len[c] - 1);
	for (size_t k = 0; k + 1 < r->cycle_len[c]; k++) {
		pid_t a = r->cycles[c][k], b = r->cycles[c][k + 1];
		const struct thread_wait *wa = &r->threads[thread_index(r, a)];
		const struct thread_wait *wb = &r->threads[thread_index(r, b)];

		for (size_t e = 0; e < r->n_edges; e++) {
			const struct wait_edge *ed = &r->edges[e];

			if (ed->from != a || ed->to != b)
				continue;
			fprintf(f, " thread %d (%s) waits for thread %d (%s): %s%s;", a, wa->comm,
				b, wb->comm,
				ed->kind == WAIT_TEAM ? "at " :
				ed->kind == WAIT_JOIN ? "" :
							"it holds ",
				ed->what);
			loader |= ed->kind == WAIT_LOADER_LOCK;
			team |= ed->kind == WAIT_TEAM;
			join |= ed->kind == WAIT_JOIN;
			gil |= ed->kind == WAIT_GIL;
			if (ed->kind == WAIT_LOADER_LOCK)
				holder = b;
			break;
		}
	}
	if (holder) {
		const struct thread_info *ti = find_thread(ts, holder);
		const char *ctor = ti ? constructor_of(g, ti) : NULL;

		fprintf(f, " thread %d holds the loader lock because it is inside dlopen", holder);
		if (ctor)
			fprintf(f, ", running the constructor of %s", ctor);
		fprintf(f, ";");
	}
	if (team)
		fprintf(f, " the runtime involved is %s;", runtime_name(g, ts));
	fprintf(f, " none of them can proceed.");
	fclose(f);
	return add_verdict(r, text, remedy_for(loader, team, join, gil)) ? -ENOMEM : 0;
}

/*
 * True when every thread waits for a lock or a join, at least one of them on a mutex with no
 * recorded owner: no thread is left to release any of them. A thread in any other wait (a
 * condition variable, I/O, a sleep) or running could, so it is not said then.
 */
static bool all_wait_for_locks(const struct lockwait_report *r)
{
	bool unowned = false;

	for (size_t i = 0; i < r->n_threads; i++) {
		enum wait_kind k = r->threads[i].kind;

		if (k != WAIT_MUTEX && k != WAIT_MUTEX_UNOWNED && k != WAIT_LOADER_LOCK &&
		    k != WAIT_JOIN)
			return false;
		unowned |= k == WAIT_MUTEX_UNOWNED;
	}
	return unowned;
}

/* With no cycle, the one verdict says who waits for whom, or that no thread waits. */
static int no_cycle_verdict(struct lockwait_report *r)
{
	size_t blocked = 0, len = 0;
	char *text = NULL;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return -ENOMEM;
	/* Stuck for good, though no owner is known to draw the cycle. */
	fprintf(f,
		all_wait_for_locks(r) ? "No deadlock cycle can be drawn." : "No deadlock cycle.");
	for (size_t i = 0; i < r->n_edges; i++, blocked++)
		fprintf(f, " Thread %d waits for thread %d (%s).", r->edges[i].from, r->edges[i].to,
			r->edges[i].what);
	/* A wait whose holder cannot be known is still a wait, said as such. */
	for (size_t i = 0; i < r->n_threads; i++, blocked++) {
		const struct thread_wait *w = &r->threads[i];
		bool has_edge = false;

		for (size_t e = 0; e < r->n_edges && !has_edge; e++)
			has_edge = r->edges[e].from == w->tid;
		if ((w->kind == WAIT_PYLOCK || w->kind == WAIT_MUTEX_UNOWNED) && !has_edge)
			fprintf(f, " Thread %d waits for %s.", w->tid, w->what);
		else
			blocked--;
	}
	if (!blocked)
		fprintf(f, " No thread waits for another one.");
	else if (all_wait_for_locks(r))
		fprintf(f, " Every thread of the process waits for a lock or for another thread, "
			   "and none runs: none of those locks can be released, so these threads "
			   "are stuck for good (a deadlock whose cycle the C library's records "
			   "cannot show, or a lock whose holder exited).");
	fclose(f);
	return add_verdict(r, text, NULL) ? -ENOMEM : 0;
}

/* Whether thread @tid (as the process's PID namespace numbers it) is a thread of @pid. */
static bool thread_of(pid_t pid, pid_t tid)
{
	struct ns_tid *ids = NULL;
	size_t n = proc__ns_tids(pid, &ids);
	bool found = false;

	for (size_t i = 0; i < n && !found; i++)
		found = ids[i].theirs == tid;
	free(ids);
	if (n)
		return found;
	/* Where it cannot tell, it is one: a wait never said endless on a doubt. */
	return !proc__gone(pid, tid);
}

/* One verdict per wait that can never end, with the fork that made it so when one is known. */
static int never_ends_verdict(const struct target *t, const struct thread_wait *w,
			      struct lockwait_report *r)
{
	struct fork_origin fo;
	char forked[256] = "", *text = NULL, *remedy;
	size_t len = 0;
	FILE *f;

	if (!t->core && !t->image && !fork_origin__read(t->pid, &fo))
		fork_origin__describe(&fo, forked, sizeof(forked));
	f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	if (w->kind == WAIT_NO_TEAM) {
		fprintf(f, "Thread %d (%s) waits for %s. ", w->tid, w->comm, w->what);
		if (forked[0])
			fprintf(f, "Process %d was %s; ", t->pid, forked);
		else
			fprintf(f, "The process was most likely forked after its parent ran a "
				   "parallel region; ");
		fprintf(f, "%s The wait can never end.", FORKPOOL_WHY);
		remedy = strdup(FORKPOOL_REMEDY);
	} else if (w->kind == WAIT_PYLOCK) {
		fprintf(f, "Thread %d (%s) waits for %s. ", w->tid, w->comm, w->what);
		if (forked[0])
			fprintf(f,
				"Process %d was %s: one of the parent's threads most likely held "
				"the lock at the fork, ",
				t->pid, forked);
		else
			fprintf(f, "A thread that exited held it, or this thread took it twice, ");
		fprintf(f, "and a Python Lock has no owner to free it. The wait can never end.");
		remedy = strdup(
			"A lock another thread holds at fork() stays locked in the child: use "
			"the spawn or forkserver start method (multiprocessing."
			"set_start_method(\"spawn\")), or reinitialise the lock in the child "
			"(os.register_at_fork(after_in_child=...)); a lock taken twice by one "
			"thread wants an RLock.");
	} else {
		pid_t owner = (pid_t)strtol(strstr(w->what, "held by thread ") + 15, NULL, 10);

		fprintf(f, "Thread %d (%s) waits for %s. ", w->tid, w->comm, w->what);
		if (forked[0] && fo.parent && thread_of(fo.parent, owner))
			fprintf(f,
				"Process %d was %s, while the parent's thread %d held the mutex; "
				"that thread is still there, in the parent: ",
				t->pid, forked, owner);
		else if (forked[0])
			fprintf(f,
				"Process %d was %s; thread %d held the mutex when it was "
				"forked, or exited holding it: ",
				t->pid, forked, owner);
		else
			fprintf(f,
				"Thread %d exited holding it, or the process was forked while "
				"it held it: ",
				owner);
		fprintf(f, "nothing can unlock it. The wait can never end.");
		remedy = strdup(
			"A mutex another thread holds at fork() stays locked for ever in the "
			"child: fork before starting threads, take the lock in a "
			"pthread_atfork prepare handler and release it in both the parent and "
			"the child handlers, or exec in the child (posix_spawn, or "
			"multiprocessing's spawn or forkserver start method).");
	}
	fclose(f);
	return add_verdict(r, text, remedy) ? -ENOMEM : 0;
}

/*
 * Python locks no thread can release: CPython's Lock has no owner, so a wait on one ends only
 * when some thread releases it. When every thread of the process waits for good (a lock, a
 * join, an untimed Python lock) none can: a lock a parent's thread held at a fork, or one a
 * thread took twice. A timed acquire (a timeout argument) ends by itself and is left alone.
 */
static void python_locks_lost(const struct threadscan *ts, struct lockwait_report *r)
{
	bool any = false;

	for (size_t i = 0; i < r->n_threads; i++) {
		const struct thread_wait *w = &r->threads[i];
		const struct thread_info *ti = find_thread(ts, w->tid);
		bool untimed = ti && ti->args[3] == 0;

		if (w->kind == WAIT_PYLOCK && untimed)
			any = true;
		else if (!w->forever && w->kind != WAIT_MUTEX && w->kind != WAIT_LOADER_LOCK &&
			 w->kind != WAIT_JOIN && w->kind != WAIT_MUTEX_UNOWNED)
			return;
	}
	for (size_t i = 0; any && i < r->n_threads; i++) {
		struct thread_wait *w = &r->threads[i];

		if (w->kind == WAIT_PYLOCK && !w->forever) {
			w->forever = r->never_ends = true;
			snprintf(w->what + strlen(w->what), sizeof(w->what) - strlen(w->what),
				 ", and no thread of the process is left to release it");
		}
	}
}

static int write_verdicts(const struct target *t, const struct libgraph *g,
			  const struct threadscan *ts, struct lockwait_report *r)
{
	for (size_t c = 0; c < r->n_cycles; c++)
		if (cycle_verdict(g, ts, r, c))
			return -ENOMEM;
	python_locks_lost(ts, r);
	for (size_t i = 0; r->never_ends && i < r->n_threads; i++)
		if (r->threads[i].forever && never_ends_verdict(t, &r->threads[i], r))
			return -ENOMEM;
	return r->n_cycles || r->never_ends ? 0 : no_cycle_verdict(r);
}

int lockwait__analyze(const struct target *t, const struct libgraph *g, const struct addrmap *maps,
		      const struct threadscan *ts, const struct py_snapshot *py,
		      const struct stacks *st, struct lockwait_report **out)
{
	struct lockwait_report *r = calloc(1, sizeof(*r));
	int err = 0;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->threads = calloc(ts->n ? ts->n : 1, sizeof(*r->threads));
	if (!r->threads) {
		err = -ENOMEM;
		goto err;
	}
	r->n_threads = ts->n;
	for (size_t i = 0; i < ts->n && !err; i++) {
		const struct thread_info *ti = &ts->t[i];
		struct thread_wait *w = &r->threads[i];
		const char *sc;

		w->tid = ti->tid;
		snprintf(w->comm, sizeof(w->comm), "%s", ti->comm);
		if (py && py->gil && in_gil_acquisition(st, py, ti->tid)) {
			err = gil_wait(py, ti, w, r);
			continue;
		}
		if (ti->syscall == -2) {
			w->kind = WAIT_RUNNING;
			snprintf(w->what, sizeof(w->what), "running");
			continue;
		}
		if (ti->syscall == arch_syscall_futex()) {
			unsigned cmd = (unsigned)ti->args[1] & FUTEX_CMD_MASK;

			/* FUTEX_WAIT, FUTEX_LOCK_PI, FUTEX_WAIT_BITSET, FUTEX_LOCK_PI2 */
			if (cmd == 0 || cmd == 6 || cmd == 9 || cmd == 13) {
				err = classify_futex(t, g, maps, ts, py, ti, w, r);
				if (!err && w->kind == WAIT_FUTEX)
					err = team_edges(g, ts, ti, w, r);
				continue;
			}
		}
		w->kind = WAIT_SYSCALL;
		sc = arch_syscall_name(ti->syscall);
		if (ti->syscall < 0)
			snprintf(w->what, sizeof(w->what), "blocked outside a system call");
		else if (sc)
			snprintf(w->what, sizeof(w->what), "in %s()", sc);
		else
			snprintf(w->what, sizeof(w->what), "in system call %ld", ti->syscall);
	}
	if (!err)
		err = lockwait__find_cycles(r);
	if (!err)
		err = write_verdicts(t, g, ts, r);
	if (err)
		goto err;
	*out = r;
	return 0;
err:
	lockwait__free(r);
	return err;
}

void lockwait__free(struct lockwait_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_cycles; i++)
		free(r->cycles[i]);
	for (size_t i = 0; i < r->n_verdicts; i++) {
		free(r->verdicts[i]);
		free(r->remedies[i]);
	}
	free(r->cycles);
	free(r->cycle_len);
	free(r->verdicts);
	free(r->remedies);
	free(r->threads);
	free(r->edges);
	free(r);
}
