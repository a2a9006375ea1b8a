// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "arch.h"
#include "debuginfo_cache.h"
#include "corefile.h"
#include "cu_lookup.h"
#include "demangle.h"
#include "elfobj.h"
#include "framecache.h"
#include "permission.h"
#include "phase.h"
#include "procfs.h"
#include "procmaps.h"
#include "tracee.h"
#include "target.h"
#include "pystate.h"
#include "unwind.h"

/* How much of each stack is copied while the thread is stopped: deep Python stacks fit. */
#define STACK_COPY_MAX (1024 * 1024)

struct captured {
	pid_t tid;
	bool seized, stopped, gone, have_regs;
	int seize_errno,
		regs_errno; /* why PTRACE_SEIZE or PTRACE_GETREGS failed, 0 if they did not */
	struct user_regs_struct regs;
	uint64_t stack_lo;
	size_t stack_len;
	unsigned char *stack;
};

struct capture_set {
	pid_t pid;
	pid_t mem_pid;	/* whose memory is read: pid, or a live thread when the main one exited */
	bool regs_only; /* no stack copies: the Python frames alone are wanted */
	/* The process is our own child: its exit status is its parent's to collect, not ours. */
	bool own_child;
	struct captured *c;
	size_t n;
};

/* How long the threads may take to reach their stop before they are left out. */
#define STOP_TIMEOUT_NS (3 * 1000000000ULL)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The threads to stop: @tids when the caller listed them already, else /proc/PID/task. */
static int list_threads(pid_t pid, const pid_t *tids, size_t n_tids, struct capture_set *cs)
{
	char path[64];
	struct dirent *de;
	size_t cap = 0;
	DIR *d;

	if (tids) {
		cs->c = calloc(n_tids ? n_tids : 1, sizeof(*cs->c));
		if (!cs->c)
			return -ENOMEM;
		for (size_t i = 0; i < n_tids; i++)
			cs->c[cs->n++].tid = tids[i];
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		pid_t tid;

		if (parse_pid(de->d_name, &tid))
			continue;
		if (cs->n == cap) {
			if (ARRAY_GROW(cs->c, cap, 16)) {
				closedir(d);
				return -ENOMEM;
			}
		}
		memset(&cs->c[cs->n], 0, sizeof(cs->c[0]));
		cs->c[cs->n++].tid = tid;
	}
	closedir(d);
	return 0;
}

/*
 * Copy the live part of a stopped thread's stack: from below its red zone to the mapping end,
 * or to its thread pointer when that lies above sp in the same mapping (a thread glibc started:
 * its struct pthread tops the mapping, above the stack's first frame, and no unwind reads it).
 */
static void copy_stack(pid_t pid, const struct procmaps *maps, struct captured *c)
{
	uint64_t sp = arch_regs__sp(&c->regs), lo = sp > ARCH_RED_ZONE ? sp - ARCH_RED_ZONE : 0;
	uint64_t tp = arch_regs__thread_pointer(&c->regs);
	const struct mapping *mp = procmaps__find(maps, sp);
	struct iovec local, remote;
	uint64_t hi, end;
	ssize_t n;

	if (!mp)
		return;
	if (lo < mp->start)
		lo = mp->start;
	end = tp > sp && tp < mp->end ? tp : mp->end;
	hi = end - lo > STACK_COPY_MAX ? lo + STACK_COPY_MAX : end;
	c->stack = malloc(hi - lo);
	if (!c->stack)
		return;
	local = (struct iovec){ c->stack, hi - lo };
	remote = (struct iovec){ (void *)(uintptr_t)lo, hi - lo };
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n <= 0) {
		free(c->stack);
		c->stack = NULL;
		return;
	}
	c->stack_lo = lo;
	c->stack_len = (size_t)n;
}

/*
 * Threads a capture seized that had not reached their stop by its deadline (a parent waiting in
 * vfork, an uninterruptible sleep). PTRACE_DETACH fails on a thread that is not stopped, so each
 * stays seized with its interrupt pending, and would sit in that stop from the moment it leaves
 * its wait for as long as dlscope lives. They are kept here and let go as soon as they stop
 * (stacks__release_pending), or forgotten once they exit. ptrace requests are answered only to
 * the thread that seized: each is released by its own tracer.
 */
struct held {
	pid_t tid;
	pid_t tracer;
	bool keep_exit; /* the leader of our own child: its exit status is its parent's to reap */
};

static struct {
	pthread_mutex_t lock;
	struct held *h;
	size_t n, cap;
} held = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Keep seized thread @tid for a later release; false when there is no memory to. */
static bool held_add(pid_t tid, bool keep_exit)
{
	bool ok = true;

	pthread_mutex_lock(&held.lock);
	if (held.n == held.cap) {
		size_t ncap = held.cap ? held.cap * 2 : 8;
		struct held *nh = realloc(held.h, ncap * sizeof(*nh));

		if (nh) {
			held.h = nh;
			held.cap = ncap;
		} else {
			ok = false;
		}
	}
	if (ok)
		held.h[held.n++] = (struct held){ tid, gettid(), keep_exit };
	pthread_mutex_unlock(&held.lock);
	return ok;
}

/* Take @tid off the list when this thread holds it: a new capture reuses the seize. */
static bool held_take(pid_t tid)
{
	pid_t self = gettid();
	bool found = false;

	pthread_mutex_lock(&held.lock);
	for (size_t i = 0; i < held.n && !found; i++)
		if (held.h[i].tid == tid && held.h[i].tracer == self) {
			held.h[i] = held.h[--held.n];
			found = true;
		}
	pthread_mutex_unlock(&held.lock);
	return found;
}

/*
 * One look, without blocking, at a held thread: true when it is done with (stopped and let go,
 * or exited). A signal that stopped it first goes with it, delivered as it would have been.
 */
static bool held_release(const struct held *h)
{
	int status = 0;

	switch (tracee__look(h->tid, h->keep_exit, &status)) {
	case TRACEE_NOTHING: return false;
	case TRACEE_STOPPED: break;
	default: return true; /* exited, or no longer ours (reaped) */
	}
	/* ESRCH: killed after the stop was reported; its exit comes next. */
	return !ptrace(PTRACE_DETACH, h->tid, NULL,
		       (void *)(long)(tracee__is_interrupt_stop(status) ? 0 : status & 0xff)) ||
	       errno != ESRCH;
}

/* One pass over this thread's held threads; returns how many are still held. */
static size_t held_pass(void)
{
	pid_t self = gettid();
	size_t left = 0;

	pthread_mutex_lock(&held.lock);
	for (size_t i = 0; i < held.n;) {
		if (held.h[i].tracer != self) {
			i++;
		} else if (held_release(&held.h[i])) {
			held.h[i] = held.h[--held.n];
		} else {
			left++;
			i++;
		}
	}
	if (!held.n) {
		free(held.h);
		held.h = NULL;
		held.cap = 0;
	}
	pthread_mutex_unlock(&held.lock);
	return left;
}

size_t stacks__release_pending(unsigned int wait_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)wait_ms * 1000000ULL;
	long delay_ns = 1000000;
	size_t left;

	while ((left = held_pass()) && now_ns() < deadline) {
		nanosleep(&(struct timespec){ 0, delay_ns }, NULL);
		delay_ns = delay_ns * 2 > 20000000 ? 20000000 : delay_ns * 2;
	}
	return left;
}

/* True when @pid is a child of this process (a command it runs). */
static bool is_own_child(pid_t pid)
{
	char path[64], buf[1024];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (proc__read_small(path, buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')))
		return false;
	/* ") S PPID ...": the state, then the parent. */
	return atoi(p + 4) == getpid();
}

/*
 * One look, without blocking, at a seized thread on its way to its stop: 1 when it is done
 * with (stopped and copied, or gone), 0 when something else happened (a signal passed on), -1
 * when nothing did.
 */
static int collect_one(struct capture_set *cs, struct captured *c, const struct procmaps *maps,
		       struct stacks *out)
{
	/* The leader of our own child is left unreaped: its parent in us collects its status. */
	bool keep_exit = c->tid == cs->pid && cs->own_child;
	int status = 0;

	switch (tracee__look(c->tid, keep_exit, &status)) {
	case TRACEE_NOTHING: return -1;
	case TRACEE_STOPPED: break;
	default: c->gone = true; return 1;
	}
	if (!tracee__is_interrupt_stop(status)) {
		/* A signal arrived first: let it be delivered, our stop comes next. */
		ptrace(PTRACE_CONT, c->tid, NULL, (void *)(long)(status & 0xff));
		return 0;
	}
	c->stopped = true;
	if (!ptrace(PTRACE_GETREGS, c->tid, NULL, &c->regs)) {
		c->have_regs = true;
		if (!cs->regs_only) {
			copy_stack(cs->mem_pid, maps, c);
			out->stack_bytes += c->stack_len;
		}
	} else {
		c->regs_errno = errno;
	}
	return 1;
}

/*
 * While the target is stopped, this thread runs ahead of it: with every CPU taken by the
 * target's own busy threads (and those released first), a thread of normal priority waits its
 * turn behind each of them between two ptrace calls, and the stop lasts as long as they make it.
 * The lowest real-time priority, for the stop only; without the right to it (CAP_SYS_NICE or
 * RLIMIT_RTPRIO), the stop runs at the priority it has. Returns whether it was raised.
 */
static bool stop_priority_raise(int *policy, struct sched_param *param)
{
	*policy = sched_getscheduler(0);
	if (*policy < 0 || sched_getparam(0, param))
		return false;
	if (*policy == SCHED_FIFO || *policy == SCHED_RR)
		return false;
	return !sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ .sched_priority = 1 });
}

static void stop_priority_restore(bool raised, int policy, const struct sched_param *param)
{
	if (raised)
		sched_setscheduler(0, policy, param);
}

/*
 * The only window in which the target is stopped: seize every thread, interrupt them all, wait
 * for each to stop, take its registers and stack, release them all. The stop reported is the
 * one the target sees: from the first interrupt to the last thread released.
 */
static int freeze_and_copy(struct capture_set *cs, const struct procmaps *maps,
			   const struct py_interp *py, unsigned int max_frames, struct stacks *out,
			   char *why, size_t whylen)
{
	uint64_t t0, delay_ns = 20000;
	struct sched_param param;
	size_t pending = 0;
	bool raised;
	int err = 0, policy;

	/* Threads an earlier capture could not stop and that stopped since are let go first. */
	held_pass();
	/* Seizing stops nothing: every thread is seized first, then all are interrupted at once. */
	for (size_t i = 0; i < cs->n; i++) {
		struct captured *c = &cs->c[i];

		/* Still held from an earlier capture: seized already (a second seize is EPERM). */
		if (held_take(c->tid)) {
			c->seized = true;
			continue;
		}
		if (ptrace(PTRACE_SEIZE, c->tid, NULL, NULL)) {
			/* A main thread that exited (pthread_exit) is a zombie the others outlive. */
			if (errno == EPERM && i == 0 && proc__live_task(cs->pid) == cs->pid) {
				char comm[64] = "?", reason[512];

				proc__read_stat(cs->pid, 0, comm, sizeof(comm), NULL, NULL);
				permission__explain(cs->pid, ACCESS_SEIZE, reason, sizeof(reason));
				snprintf(why, whylen,
					 "permission denied stopping process %d (%s): %s", cs->pid,
					 comm, reason);
				err = -EPERM;
				break;
			}
			c->seize_errno = errno; /* the thread exited, or another tracer holds it */
			continue;
		}
		c->seized = true;
	}
	raised = !err && stop_priority_raise(&policy, &param);
	t0 = now_ns();
	for (size_t i = 0; !err && i < cs->n; i++)
		if (cs->c[i].seized) {
			ptrace(PTRACE_INTERRUPT, cs->c[i].tid, NULL, NULL);
			pending++;
		}
	/*
	 * Collect the stops in whatever order they come: a thread group leader killed meanwhile
	 * is reported only after the other threads, which we must reap first. A thread that does
	 * not stop in time (uninterruptible sleep) is left out, not waited for forever. Only the
	 * threads seized here are waited for: a wait for any child could take the exit status of
	 * a command the caller runs.
	 */
	while (!err && pending) {
		bool progress = false;

		for (size_t i = 0; i < cs->n; i++) {
			struct captured *c = &cs->c[i];

			if (!c->seized || c->stopped || c->gone)
				continue;
			switch (collect_one(cs, c, maps, out)) {
			case 1:
				pending--;
				/* fall through */
			case 0: progress = true; break;
			}
		}
		if (!pending || now_ns() - t0 >= STOP_TIMEOUT_NS)
			break;
		/* Always a pause: at real-time priority, a pass never gives up its CPU otherwise. */
		delay_ns = progress ? 20000 : delay_ns;
		nanosleep(&(struct timespec){ 0, (long)delay_ns }, NULL);
		if (!progress)
			delay_ns = delay_ns * 2 > 1000000 ? 1000000 : delay_ns * 2;
	}
	/* The interpreter's state is read while every thread stands still: one consistent view. */
	if (!err && py && py_snapshot__read(py, cs->pid, max_frames, &out->py))
		err = -ENOMEM;
	/*
	 * A thread that has not stopped (one that stops just now is detached here), or was killed
	 * in its stop, cannot be detached: it is held, let go once it stops, its exit reaped.
	 */
	for (size_t i = 0; i < cs->n; i++) {
		struct captured *c = &cs->c[i];

		if (c->seized && !c->gone && ptrace(PTRACE_DETACH, c->tid, NULL, NULL))
			held_add(c->tid, c->tid == cs->pid && cs->own_child);
	}
	if (!err)
		out->stopped_ns = now_ns() - t0;
	stop_priority_restore(raised, policy, &param);
	return err;
}

/* libdwfl callbacks over the copies: stack words come from them, the rest from the target. */
static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct capture_set *cs = arg;
	struct captured *c = *thread_argp;
	size_t i = c ? (size_t)(c - cs->c) + 1 : 0;

	for (; i < cs->n; i++)
		if (cs->c[i].have_regs) {
			*thread_argp = &cs->c[i];
			return cs->c[i].tid;
		}
	return 0;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct capture_set *cs = arg;

	for (size_t i = 0; i < cs->n; i++)
		if (cs->c[i].tid == tid && cs->c[i].have_regs) {
			*thread_argp = &cs->c[i];
			return true;
		}
	return false;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct capture_set *cs = arg;
	struct iovec local = { result, sizeof(*result) };
	struct iovec remote = { (void *)(uintptr_t)addr, sizeof(*result) };

	for (size_t i = 0; i < cs->n; i++) {
		const struct captured *c = &cs->c[i];

		if (c->stack && addr >= c->stack_lo &&
		    addr + sizeof(*result) <= c->stack_lo + c->stack_len) {
			memcpy(result, c->stack + (addr - c->stack_lo), sizeof(*result));
			return true;
		}
	}
	return process_vm_readv(cs->mem_pid, &local, 1, &remote, 1, 0) == sizeof(*result);
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct captured *c = thread_arg;
	uint64_t v[ARCH_DWARF_REGS];
	Dwarf_Word regs[ARCH_DWARF_REGS];

	arch_regs__dwarf(&c->regs, v);
	for (size_t i = 0; i < ARCH_DWARF_REGS; i++)
		regs[i] = v[i];
	return dwfl_thread_state_registers(thread, 0, ARCH_DWARF_REGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

struct walk {
	struct thread_stack *ts;
	unsigned int max;
	size_t cap;
	Dwarf_Word last_pc, last_sp; /* the previous frame's state, when it had an SP */
	bool have_last;
	const struct sample_access *acc; /* a sample's: frames must be in executable mappings */
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	struct thread_stack *ts = w->ts;
	Dwarf_Addr pc;
	Dwarf_Word sp;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	/* A corrupt stack unwinds to garbage: a pc no user code can have ends the walk. */
	if (pc >= ARCH_USER_ADDR_END) {
		free(ts->error);
		if (asprintf(&ts->error,
			     "frame #%zu's return address 0x%" PRIx64 " is no user-space address "
			     "(a corrupt stack); stopped there",
			     ts->n_frames, (uint64_t)pc) < 0)
			ts->error = NULL;
		ts->truncated = true;
		return DWARF_CB_ABORT;
	}
	/* A return address lies in the caller's code: pc - 1 is inside its call. */
	if (w->acc && w->acc->pc_ok && !w->acc->pc_ok(w->acc->ctx, activation ? pc : pc - 1)) {
		free(ts->error);
		if (asprintf(&ts->error,
			     "frame #%zu (0x%" PRIx64 ") is in no executable mapping; "
			     "stopped there",
			     ts->n_frames, (uint64_t)pc) < 0)
			ts->error = NULL;
		ts->truncated = true;
		return DWARF_CB_ABORT;
	}
	/*
	 * A frame whose pc and stack pointer are the previous one's made no progress: the next
	 * step would give it again. A recursion has the same pc at a new SP each time.
	 */
	if (!dwfl_frame_reg(state, ARCH_DWARF_SP, &sp)) {
		if (w->have_last && w->last_pc == pc && w->last_sp == sp) {
			ts->truncated = true;
			free(ts->error);
			ts->error = strdup("the stack loops on one frame (the same pc and stack "
					   "pointer twice); stopped there");
			return DWARF_CB_ABORT;
		}
		w->last_pc = pc;
		w->last_sp = sp;
		w->have_last = true;
	} else {
		w->have_last = false;
	}
	if (ts->n_frames >= w->max) {
		ts->truncated = true;
		free(ts->error);
		if (asprintf(&ts->error, "more than %u frames; the rest left out", w->max) < 0)
			ts->error = NULL;
		return DWARF_CB_ABORT;
	}
	if (ts->n_frames == w->cap) {
		if (ARRAY_GROW(ts->frames, w->cap, 32))
			return DWARF_CB_ABORT;
	}
	memset(&ts->frames[ts->n_frames], 0, sizeof(ts->frames[0]));
	ts->frames[ts->n_frames].pc = pc;
	ts->frames[ts->n_frames++].activation = activation;
	return DWARF_CB_OK;
}

static char *die_function_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = NULL;
	char buf[1024];

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (name) {
		demangle(name, buf, sizeof(buf));
		return strdup(buf);
	}
	if (dwarf_attr_integrate(die, DW_AT_name, &attr))
		name = dwarf_formstring(&attr);
	return name ? strdup(name) : NULL;
}

/* Where the inline instance @die was called from: file (new string) and line. */
static char *call_site(Dwarf_Die *cudie, Dwarf_Die *die, int *line)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word v;
	size_t nfiles;
	const char *name;

	if (dwarf_attr(die, DW_AT_call_line, &attr) && !dwarf_formudata(&attr, &v))
		*line = (int)v;
	if (!dwarf_attr(die, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &v) ||
	    dwarf_getsrcfiles(cudie, &files, &nfiles) || v >= nfiles)
		return NULL;
	name = dwarf_filesrc(files, v, NULL, NULL);
	return name ? strdup(name) : NULL;
}

static int push_frame(struct thread_stack *ts, size_t *cap, const struct stack_frame *f)
{
	if (ts->n_frames == *cap) {
		if (ARRAY_GROW(ts->frames, *cap, 32))
			return -ENOMEM;
	}
	ts->frames[ts->n_frames++] = *f;
	return 0;
}

/*
 * Name each frame as gdb would: the DWARF subprogram (and the inline frames at that pc, innermost
 * first) when debug info is there, else the ELF symbol. Return addresses are looked up at pc - 1,
 * inside the call.
 */
static int symbolize_frames(Dwfl *dwfl, struct thread_stack *ts)
{
	struct stack_frame *raw = ts->frames;
	size_t n = ts->n_frames, cap = 0;

	ts->frames = NULL;
	ts->n_frames = 0;
	for (size_t i = 0; i < n; i++) {
		struct stack_frame f = raw[i];
		Dwarf_Addr lookup = f.activation ? f.pc : f.pc - 1, bias = 0;
		Dwfl_Module *mod = dwfl_addrmodule(dwfl, lookup);
		Dwarf *dbg = mod ? dwfl_module_getdwarf(mod, &bias) : NULL;
		Dwarf_Die cu_mem, *cudie = NULL;
		/* The unit from .debug_aranges read in place; libdwfl's lookup builds the whole
		 * table (see cu_lookup.h), so it is asked only when the scan finds nothing. */
		bool scanned = dbg && !cu_lookup(dbg, lookup - bias, &cu_mem);
		Dwarf_Die *scopes = NULL;
		int nscopes;
		const char *modname = NULL, *symname = NULL;
		GElf_Off off = 0;
		GElf_Sym sym;

		if (scanned)
			cudie = &cu_mem;
		else if (dbg)
			cudie = dwfl_module_addrdie(mod, lookup, &bias);
		nscopes = cudie ? dwarf_getscopes(cudie, lookup - bias, &scopes) : 0;

		if (mod) {
			dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &modname, NULL);
			symname = dwfl_module_addrinfo(mod, lookup, &off, &sym, NULL, NULL, NULL);
		}
		f.module = modname ? strdup(modname) : NULL;
		f.offset = symname ? off + (lookup != f.pc) : 0;
		if (scanned) {
			/* The same row dwfl_module_getsrc picks: the last one at or below the pc. */
			Dwarf_Line *line = dwarf_getsrc_die(cudie, lookup - bias);
			const char *src = line ? dwarf_linesrc(line, NULL, NULL) : NULL;

			if (line)
				dwarf_lineno(line, &f.line);
			f.file = src ? strdup(src) : NULL;
		} else if (dbg) {
			Dwfl_Line *line = dwfl_module_getsrc(mod, lookup);
			const char *src =
				line ? dwfl_lineinfo(line, NULL, &f.line, NULL, NULL, NULL) : NULL;

			f.file = src ? strdup(src) : NULL;
		}
		/*
		 * Inline frames, innermost first; each outer one is at its callee's call site. The
		 * scopes after an inlined subroutine are those of its abstract definition: its
		 * callers come from the scopes that contain the inlined DIE itself.
		 */
		for (int k = 0; k < nscopes;) {
			Dwarf_Die *die = &scopes[k], *outer = NULL;
			int tag = dwarf_tag(die), nouter;

			if (tag == DW_TAG_subprogram) {
				f.function = die_function_name(die);
				break;
			}
			if (tag != DW_TAG_inlined_subroutine) {
				k++;
				continue;
			}
			f.function = die_function_name(die);
			/* Inline frames are printed before the real frame of their pc. */
			f.inlined = true;
			if (push_frame(ts, &cap, &f))
				goto oom;
			f.inlined = false;
			f.function = NULL;
			f.module = f.module ? strdup(f.module) : NULL;
			f.file = call_site(cudie, die, &f.line);
			nouter = dwarf_getscopes_die(die, &outer);
			free(scopes);
			scopes = outer;
			nscopes = nouter;
			k = 1; /* outer[0] is the inlined DIE itself */
		}
		if (!f.function && symname) {
			char buf[1024];

			demangle(symname, buf, sizeof(buf));
			f.function = strdup(buf);
		}
		free(scopes);
		if (push_frame(ts, &cap, &f))
			goto oom;
		continue;
	oom:
		free(scopes);
		free(raw);
		return -ENOMEM;
	}
	free(raw);
	return 0;
}

/*
 * The threads of one process share most of their frames (64 pool threads, one wait): each pc
 * is named once, then copied. libdwfl's symbol lookup is a linear scan of the symbol table.
 */
struct pc_memo {
	struct {
		uint64_t pc;
		bool activation;
		struct thread_stack named; /* the frames this pc expands to */
	} * e;
	size_t n;
};

static void free_frames(struct stack_frame *f, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		free(f[k].function);
		free(f[k].module);
		free(f[k].file);
	}
	free(f);
}

static int copy_frame(struct stack_frame *dst, const struct stack_frame *src)
{
	*dst = *src;
	dst->function = src->function ? strdup(src->function) : NULL;
	dst->module = src->module ? strdup(src->module) : NULL;
	dst->file = src->file ? strdup(src->file) : NULL;
	return (src->function && !dst->function) || (src->module && !dst->module) ||
			       (src->file && !dst->file) ?
		       -ENOMEM :
		       0;
}

/*
 * One pc (@one holds its raw frame) named from the frame cache when the object's build-id has it
 * there, else from DWARF and then kept in the cache.
 */
static int symbolize_cached(Dwfl *dwfl, struct framecache *fc, struct thread_stack *one)
{
	const struct stack_frame raw = one->frames[0];
	Dwarf_Addr lookup = raw.activation ? raw.pc : raw.pc - 1, elf_bias = 0, bias;
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, lookup);
	const struct fc_frame *hit;
	const unsigned char *bid = NULL;
	const char *modname = NULL;
	GElf_Addr vaddr;
	size_t n = 0;
	int bidlen = 0, err;

	/* Keyed by the pc as an address of the ELF file (the bias libdwfl names it with): the
	 * same file mapped elsewhere, or only in part, has the same keys. */
	if (mod && dwfl_module_getelf(mod, &elf_bias)) {
		dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &modname, NULL);
		bidlen = dwfl_module_build_id(mod, &bid, &vaddr);
	}
	hit = bidlen > 0 ? framecache__get(fc, bid, bidlen, raw.pc - elf_bias, raw.activation, &n) :
			   NULL;
	if (!hit) {
		struct fc_frame *keep;

		err = symbolize_frames(dwfl, one);
		/* Names from DWARF only: a module without can gain it (a debug package). And only
		 * from files root's or ours: another user's could claim the build-id of libc. */
		if (err || bidlen <= 0 || !dwfl_module_getdwarf(mod, &bias) ||
		    !debuginfo_cache__trusted(mod))
			return err;
		keep = calloc(one->n_frames ? one->n_frames : 1, sizeof(*keep));
		if (!keep)
			return -ENOMEM;
		for (size_t k = 0; k < one->n_frames; k++) {
			const struct stack_frame *f = &one->frames[k];

			keep[k] = (struct fc_frame){ .inlined = f->inlined,
						     .function = f->function,
						     .offset = f->offset,
						     .file = f->file,
						     .line = f->line };
		}
		err = framecache__put(fc, bid, bidlen, raw.pc - elf_bias, raw.activation, keep,
				      one->n_frames);
		free(keep);
		return err;
	}
	free(one->frames);
	one->n_frames = 0;
	one->frames = calloc(n, sizeof(*one->frames));
	if (!one->frames)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		struct stack_frame *f = &one->frames[one->n_frames++];

		f->pc = raw.pc;
		f->activation = raw.activation;
		f->inlined = hit[k].inlined;
		f->offset = hit[k].offset;
		f->line = hit[k].line;
		f->function = hit[k].function ? strdup(hit[k].function) : NULL;
		f->file = hit[k].file ? strdup(hit[k].file) : NULL;
		f->module = modname ? strdup(modname) : NULL;
		if ((hit[k].function && !f->function) || (hit[k].file && !f->file) ||
		    (modname && !f->module))
			return -ENOMEM;
	}
	return 0;
}

/* The pc of @raw as an address of its object's file, on each frame @one names it with. */
static void set_module_offset(Dwfl *dwfl, const struct stack_frame *raw, struct thread_stack *one)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, raw->activation ? raw->pc : raw->pc - 1);
	Dwarf_Addr bias = 0;

	if (!mod || !dwfl_module_getelf(mod, &bias))
		return;
	for (size_t k = 0; k < one->n_frames; k++) {
		one->frames[k].module_offset = raw->pc - bias;
		one->frames[k].has_module_offset = true;
	}
}

static int symbolize(Dwfl *dwfl, struct framecache *fc, struct pc_memo *memo,
		     struct thread_stack *ts)
{
	struct stack_frame *raw = ts->frames;
	size_t n = ts->n_frames, cap = 0;
	int err = 0;

	ts->frames = NULL;
	ts->n_frames = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const struct thread_stack *named = NULL;

		for (size_t m = 0; m < memo->n && !named; m++)
			if (memo->e[m].pc == raw[i].pc &&
			    memo->e[m].activation == raw[i].activation)
				named = &memo->e[m].named;
		if (!named) {
			void *ne = realloc(memo->e, (memo->n + 1) * sizeof(*memo->e));
			struct thread_stack one = { .frames = malloc(sizeof(raw[i])),
						    .n_frames = 1 };

			if (!ne || !one.frames) {
				free(one.frames);
				err = -ENOMEM;
				break;
			}
			memo->e = ne;
			one.frames[0] = raw[i];
			err = fc ? symbolize_cached(dwfl, fc, &one) : symbolize_frames(dwfl, &one);
			if (err) {
				free_frames(one.frames, one.n_frames);
				break;
			}
			set_module_offset(dwfl, &raw[i], &one);
			memo->e[memo->n].pc = raw[i].pc;
			memo->e[memo->n].activation = raw[i].activation;
			memo->e[memo->n].named = one;
			named = &memo->e[memo->n++].named;
		}
		for (size_t k = 0; k < named->n_frames && !err; k++) {
			struct stack_frame f;

			err = copy_frame(&f, &named->frames[k]);
			if (!err)
				err = push_frame(ts, &cap, &f);
		}
	}
	free(raw);
	/* Thousands of threads keep their frames to the end (the output): no room to spare. */
	if (!err && ts->n_frames && ts->n_frames < cap) {
		struct stack_frame *fit = realloc(ts->frames, ts->n_frames * sizeof(*fit));

		if (fit)
			ts->frames = fit;
	}
	return err;
}

static void pc_memo__free(struct pc_memo *memo)
{
	for (size_t m = 0; m < memo->n; m++)
		free_frames(memo->e[m].named.frames, memo->e[m].named.n_frames);
	free(memo->e);
}

/* The process whose modules are being reported (libdwfl's find_elf has no context for it). */
static __thread pid_t reporting_pid;

/*
 * Open a module's file as the process sees it: through /proc/PID/root, so that a library that
 * exists only in the target's mount namespace (a container) is found, not looked for on the host.
 */
static int find_elf_in_root(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
			    char **file_name, Elf **elfp)
{
	if (name[0] == '/' && reporting_pid > 0) {
		char path[PATH_MAX + 32];
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/root%s", reporting_pid, name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			/* Read through the root, named as the process names it. */
			*file_name = strdup(name);
			debuginfo_cache__note_main(userdata, fd);
			return fd;
		}
	}
	return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
}

/* Where libdwfl looks for separate debug files (NULL: its default, ":.debug:/usr/lib/debug"). */
static char *proc_debuginfo_path;

/*
 * A process in another root (a container, or dlscope-static run from a bare chroot) has its
 * debug files under its own /usr/lib/debug: look there after ours. One capture at a time uses
 * the path, and its Dwfl ends with it, so the previous string can go.
 */
static void set_debuginfo_root(pid_t pid)
{
	char root[64];
	struct stat ours, theirs;

	free(proc_debuginfo_path);
	proc_debuginfo_path = NULL;
	snprintf(root, sizeof(root), "/proc/%d/root/", pid);
	if (stat("/", &ours) || stat(root, &theirs) ||
	    (ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino))
		return;
	if (asprintf(&proc_debuginfo_path, ":.debug:/usr/lib/debug:/proc/%d/root/usr/lib/debug",
		     pid) < 0)
		proc_debuginfo_path = NULL;
}

/*
 * Everything that can be read without stopping the process: its modules, and its mappings
 * unless the caller has read them (@*mapsp set).
 */
static int proc_begin(pid_t pid, Dwfl **dwflp, struct procmaps **mapsp, char *why, size_t whylen)
{
	static const Dwfl_Callbacks proc_callbacks = {
		.find_elf = find_elf_in_root,
		.find_debuginfo = debuginfo_cache__find,
		.debuginfo_path = &proc_debuginfo_path,
	};
	/* A main thread that exited has no maps or root: a live thread has them. */
	pid_t task = proc__live_task(pid);
	bool own_maps = !*mapsp;
	Dwfl *dwfl;
	int err;

	if (task <= 0)
		task = pid;
	*dwflp = NULL;
	set_debuginfo_root(task);
	dwfl = dwfl_begin(&proc_callbacks);
	if (!dwfl)
		return -ENOMEM;
	dwfl_report_begin(dwfl);
	reporting_pid = task;
	err = dwfl_linux_proc_report(dwfl, task);
	dwfl_report_end(dwfl, NULL, NULL);
	if (own_maps)
		*mapsp = procmaps__read(pid);
	if (err || !*mapsp) {
		snprintf(why, whylen, "process %d exited while being read", pid);
		if (own_maps) {
			procmaps__free(*mapsp);
			*mapsp = NULL;
		}
		dwfl_end(dwfl);
		return -ESRCH;
	}
	*dwflp = dwfl;
	return 0;
}

/*
 * The ELF whose machine libdwfl's unwinder takes its register set from: dlscope's own
 * executable (the targets are of its machine). Left to choose (NULL), libdwfl takes the first
 * module with an ELF image, and a module that is no object of this machine (a file a process
 * mapped, one replaced meanwhile) failed an assertion in its frame state (state_alloc).
 */
static Elf *arch_elf(void)
{
	static Elf *elf;
	int fd;

	if (elf)
		return elf;
	elf_version(EV_CURRENT);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		close(fd);
	return elf; /* fd stays open with it, for the life of the process */
}

static int count_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
			void *arg)
{
	(void)mod, (void)userdata, (void)name, (void)start;
	++*(size_t *)arg;
	return DWARF_CB_OK;
}

/* Unwind and name the copied threads of @cs into @s; the target runs again by now. */
/* Why a thread has no registers, said as it is: never "exited" on a guess. NULL: no memory. */
static char *left_out_reason(pid_t pid, const struct captured *c)
{
	char text[160], state = 0;

	if (c->tid == pid && !c->seized && !proc__read_stat(pid, 0, NULL, 0, &state, NULL) &&
	    state == 'Z')
		snprintf(text, sizeof(text),
			 "the main thread has exited (pthread_exit); the process runs on in its "
			 "other threads");
	else if (c->seized && !c->stopped && !c->gone)
		snprintf(
			text, sizeof(text),
			"the thread did not stop within 3 s (an uninterruptible sleep, or a parent "
			"waiting in vfork); left out, and let go once it stops");
	else if (c->stopped)
		snprintf(text, sizeof(text),
			 "the thread stopped but its registers could not be read (%s)",
			 strerror(c->regs_errno));
	else if (!c->seized && c->seize_errno && c->seize_errno != ESRCH)
		snprintf(text, sizeof(text), "the thread could not be seized (%s)",
			 strerror(c->seize_errno));
	else
		snprintf(text, sizeof(text), "the thread exited before it could be stopped");
	return strdup(text);
}

/* The threads alone, for their Python frames: identities and reasons, no native frames. */
static int threads_without_frames(struct capture_set *cs, struct stacks *s)
{
	s->t = calloc(cs->n ? cs->n : 1, sizeof(*s->t));
	if (!s->t)
		return -ENOMEM;
	for (size_t i = 0; i < cs->n; i++) {
		struct thread_stack *ts = &s->t[s->n++];

		ts->tid = cs->c[i].tid;
		if (cs->c[i].have_regs)
			ts->thread_pointer = arch_regs__thread_pointer(&cs->c[i].regs);
		else
			ts->error = left_out_reason(cs->pid, &cs->c[i]);
	}
	return 0;
}

static int unwind_copies(Dwfl *dwfl, struct capture_set *cs, unsigned int max_frames,
			 struct stacks *s, char *why, size_t whylen)
{
	struct pc_memo memo = { 0 };
	struct framecache *fc;
	int err = 0;

	if (!dwfl_attach_state(dwfl, arch_elf(), cs->pid, &thread_callbacks, cs)) {
		/* No module with an ELF image: the process was caught inside execve, between
		 * its old program and its new one ("Couldn't find architecture of any ELF"). */
		size_t modules = 0;

		dwfl_getmodules(dwfl, count_module, &modules, 0);
		if (!modules)
			snprintf(
				why, whylen,
				"cannot unwind process %d: it has no program mapped (caught in the "
				"middle of exec); run the command again",
				cs->pid);
		else
			snprintf(why, whylen, "cannot unwind process %d: %s", cs->pid,
				 dwfl_errmsg(-1));
		return -EINVAL;
	}
	phase__mark("unwind: state attached");
	s->t = calloc(cs->n ? cs->n : 1, sizeof(*s->t));
	if (!s->t)
		return -ENOMEM;
	fc = framecache__new(); /* none (no memory): every pc is named from DWARF */
	for (size_t i = 0; i < cs->n; i++) {
		struct thread_stack *ts = &s->t[s->n++];
		struct walk w = { .ts = ts, .max = max_frames };

		ts->tid = cs->c[i].tid;
		if (cs->c[i].have_regs)
			ts->thread_pointer = arch_regs__thread_pointer(&cs->c[i].regs);
		if (!cs->c[i].have_regs) {
			ts->error = left_out_reason(cs->pid, &cs->c[i]);
			continue;
		}
		if (dwfl_getthread_frames(dwfl, ts->tid, frame_cb, &w) && !ts->error &&
		    !ts->n_frames)
			ts->error = strdup(dwfl_errmsg(-1));
		/* Unwound: its copy is done with (thousands of threads never hold all at once). */
		free(cs->c[i].stack);
		cs->c[i].stack = NULL;
		if (symbolize(dwfl, fc, &memo, ts)) {
			err = -ENOMEM;
			break;
		}
		/* Inline frames count against the limit too. */
		while (ts->n_frames > max_frames) {
			struct stack_frame *f = &ts->frames[--ts->n_frames];

			free(f->function);
			free(f->module);
			free(f->file);
			ts->truncated = true;
		}
	}
	pc_memo__free(&memo);
	framecache__close(fc);
	phase__mark("unwind: unwound and named");
	return err;
}

static void capture_set__free(struct capture_set *cs)
{
	for (size_t i = 0; i < cs->n; i++)
		free(cs->c[i].stack);
	free(cs->c);
}

/* What every capture ends with: the result on success, everything freed either way. */
static int capture_end(struct stacks *s, struct procmaps *maps, Dwfl *dwfl, int err,
		       struct stacks **out)
{
	procmaps__free(maps);
	if (dwfl)
		dwfl_end(dwfl);
	if (err)
		stacks__free(s);
	else
		*out = s;
	return err;
}

/*
 * Each thread's Python frames: by its TID (3.11+) or its pthread_self() (3.9, 3.10), which
 * then gives the Python thread its TID for the lock-wait graph.
 */
static void link_python(struct stacks *s)
{
	for (size_t i = 0; s->py && i < s->n; i++) {
		struct thread_stack *ts = &s->t[i];

		for (size_t k = 0; k < s->py->n && !ts->py; k++) {
			struct py_thread *pt = &s->py->t[k];

			if (pt->tid ? pt->tid == ts->tid :
				      ts->thread_pointer && pt->pthread_id == ts->thread_pointer) {
				pt->tid = ts->tid;
				ts->py = pt;
			}
		}
	}
}

int stacks__capture(pid_t pid, const struct procmaps *given, const struct py_interp *py,
		    unsigned int flags, const pid_t *tids, size_t n_tids, unsigned int max_frames,
		    struct stacks **out, char *why, size_t whylen)
{
	struct capture_set cs = { .pid = pid,
				  .mem_pid = proc__live_task(pid),
				  .own_child = is_own_child(pid),
				  .regs_only = (flags & STACKS_PYTHON_ONLY) && py };
	struct procmaps *maps = (struct procmaps *)given;
	struct stacks *s;

	if (cs.mem_pid <= 0)
		cs.mem_pid = pid;
	Dwfl *dwfl = NULL;
	int err;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	/* Everything that can be read without stopping the process is read first. */
	if (!cs.regs_only)
		err = proc_begin(pid, &dwfl, &maps, why, whylen);
	else if (!maps && !(maps = procmaps__read(pid)))
		err = -errno;
	else
		err = 0;
	phase__mark("unwind: modules reported");
	if (err)
		goto out;
	err = list_threads(pid, tids, n_tids, &cs);
	if (err) {
		snprintf(why, whylen, "process %d exited while being read", pid);
		goto out;
	}
	err = freeze_and_copy(&cs, maps, py, max_frames, s, why, whylen);
	phase__mark("unwind: stopped and copied");
	if (!err)
		err = cs.regs_only ? threads_without_frames(&cs, s) :
				     unwind_copies(dwfl, &cs, max_frames, s, why, whylen);
	if (!err)
		link_python(s);
out:
	capture_set__free(&cs);
	return capture_end(s, given ? NULL : maps, dwfl, err, out);
}

int stacks__capture_stopped(pid_t pid, pid_t tid, unsigned int max_frames, struct stacks **out,
			    char *why, size_t whylen)
{
	struct captured one = { .tid = tid, .seized = true, .stopped = true };
	struct capture_set cs = { .pid = pid, .mem_pid = tid, .c = &one, .n = 1 };
	struct procmaps *maps = NULL;
	struct stacks *s;
	Dwfl *dwfl = NULL;
	int err;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	err = proc_begin(pid, &dwfl, &maps, why, whylen);
	if (err)
		goto out;
	if (ptrace(PTRACE_GETREGS, tid, NULL, &one.regs)) {
		err = -errno;
		snprintf(why, whylen, "cannot read the registers of thread %d: %s", tid,
			 strerror(-err));
		goto out;
	}
	one.have_regs = true;
	copy_stack(tid, maps, &one);
	s->stack_bytes = one.stack_len;
	err = unwind_copies(dwfl, &cs, max_frames, s, why, whylen);
out:
	free(one.stack);
	return capture_end(s, maps, dwfl, err, out);
}

/* A core's module files, found by build-id or by the path the core names (dwfl's own search). */
static int find_elf_for_core(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
			     char **file_name, Elf **elfp)
{
	int fd = dwfl_build_id_find_elf(mod, userdata, name, base, file_name, elfp);

	if (fd >= 0)
		debuginfo_cache__note_main(userdata, fd);
	return fd;
}

struct core_walk {
	struct stacks *s;
	unsigned int max;
	size_t seen;
};

static int core_thread_cb(Dwfl_Thread *thread, void *arg)
{
	struct core_walk *cw = arg;
	pid_t tid = dwfl_thread_tid(thread);

	for (size_t i = 0; i < cw->s->n; i++) {
		struct thread_stack *ts = &cw->s->t[i];
		struct walk w = { .ts = ts, .max = cw->max };

		if (ts->tid != tid || ts->n_frames || ts->error)
			continue;
		cw->seen++;
		if (dwfl_thread_getframes(thread, frame_cb, &w) && !ts->error && !ts->n_frames)
			ts->error = strdup(dwfl_errmsg(-1));
		break;
	}
	return DWARF_CB_OK;
}

int stacks__from_core(const struct corefile *core, const char *exe, unsigned int max_frames,
		      struct stacks **out, char *why, size_t whylen)
{
	struct core_walk cw;
	static char *debuginfo_path;
	static const Dwfl_Callbacks core_callbacks = {
		.find_elf = find_elf_for_core,
		.find_debuginfo = debuginfo_cache__find,
		.debuginfo_path = &debuginfo_path,
	};
	struct pc_memo memo = { 0 };
	struct framecache *fc = NULL;
	struct stacks *s = calloc(1, sizeof(*s));
	Dwfl *dwfl = dwfl_begin(&core_callbacks);
	int err = 0;

	*out = NULL;
	if (!s || !dwfl || !(s->t = calloc(core->n_threads, sizeof(*s->t)))) {
		err = -ENOMEM;
		snprintf(why, whylen, "out of memory reading core file %s", core->path);
		goto out;
	}
	dwfl_report_begin(dwfl);
	if (dwfl_core_file_report(dwfl, core->elf, exe) < 0) {
		dwfl_report_end(dwfl, NULL, NULL);
		snprintf(why, whylen, "cannot read the modules of core file %s: %s", core->path,
			 dwfl_errmsg(-1));
		err = -EINVAL;
		goto out;
	}
	dwfl_report_end(dwfl, NULL, NULL);
	if (dwfl_core_file_attach(dwfl, core->elf) < 0) {
		snprintf(why, whylen, "cannot read the threads of core file %s: %s", core->path,
			 dwfl_errmsg(-1));
		err = -EINVAL;
		goto out;
	}
	/* Every thread in one pass: dwfl_getthread_frames on a core leaked 16 bytes a call
	 * (elfutils 0.188, seen under LeakSanitizer). */
	for (size_t i = 0; i < core->n_threads; i++)
		s->t[s->n++].tid = core->threads[i].tid;
	cw = (struct core_walk){ .s = s, .max = max_frames };
	if (dwfl_getthreads(dwfl, core_thread_cb, &cw) && !cw.seen)
		for (size_t i = 0; i < s->n; i++)
			s->t[i].error = strdup(dwfl_errmsg(-1));
	for (size_t i = 0; i < s->n; i++)
		if (!s->t[i].n_frames && !s->t[i].error)
			s->t[i].error = strdup("libdwfl read no registers for this thread");
	fc = framecache__new();
	for (size_t i = 0; i < s->n && !err; i++) {
		struct thread_stack *ts = &s->t[i];

		err = symbolize(dwfl, fc, &memo, ts);
		while (!err && ts->n_frames > max_frames) {
			struct stack_frame *f = &ts->frames[--ts->n_frames];

			free(f->function);
			free(f->module);
			free(f->file);
			ts->truncated = true;
		}
	}
	if (err)
		snprintf(why, whylen, "out of memory unwinding core file %s", core->path);
out:
	pc_memo__free(&memo);
	framecache__close(fc);
	return capture_end(s, NULL, dwfl, err, out);
}

int stacks__core_python(struct stacks *s, const struct corefile *core, const char *exe,
			unsigned int max_frames, struct py_interp *pi, char *why, size_t whylen)
{
	const char *core_exe = corefile__exe(core);
	struct py_object_ref refs[8];
	struct elf_object *objs[8];
	size_t n = 0;
	int err;

	/* The executable first (a static embedding), then any object named like libpython. */
	for (size_t i = 0; i < core->n_files && n < 8; i++) {
		const struct core_file_map *f = &core->files[i];
		const char *base = strrchr(f->path, '/');
		bool is_exe = core_exe && !strcmp(f->path, core_exe), seen = false;

		for (size_t k = 0; k < i && !seen; k++)
			seen = !strcmp(core->files[k].path, f->path);
		if (seen || f->offset || (!is_exe && !strstr(base ? base : f->path, "python")))
			continue;
		if (!(objs[n] = elfobj__open(is_exe && exe ? exe : f->path)))
			continue;
		refs[n] = (struct py_object_ref){ f->path, objs[n],
						  elfobj__type(objs[n]) == ET_EXEC ? 0 : f->start };
		if (is_exe && n) { /* keep the executable at 0 */
			struct py_object_ref r = refs[0];
			struct elf_object *o = objs[0];

			refs[0] = refs[n], objs[0] = objs[n];
			refs[n] = r, objs[n] = o;
		}
		n++;
	}
	err = py_interp__find(refs, n, pi, why, whylen);
	if (!err && py_snapshot__read_core(pi, core, max_frames, &s->py))
		err = -ENOMEM;
	if (!err)
		link_python(s);
	for (size_t i = 0; i < n; i++)
		elfobj__free(objs[i]);
	return err;
}

void thread_stack__clear(struct thread_stack *ts)
{
	free_frames(ts->frames, ts->n_frames);
	free(ts->error);
	ts->frames = NULL;
	ts->n_frames = 0;
	ts->error = NULL;
	ts->truncated = false;
}

static void pc_memo__clear(struct pc_memo *memo)
{
	pc_memo__free(memo);
	memset(memo, 0, sizeof(*memo));
}

static void memo_drop_unnamed(struct pc_memo *memo)
{
	size_t k = 0;

	for (size_t m = 0; m < memo->n; m++) {
		if (memo->e[m].named.n_frames && memo->e[m].named.frames[0].module)
			memo->e[k++] = memo->e[m];
		else
			free_frames(memo->e[m].named.frames, memo->e[m].named.n_frames);
	}
	memo->n = k;
}

/* Samples: one Dwfl per process, its modules reported from the caller's model. */
struct sample_unwinder {
	pid_t pid;
	unsigned int refs; /* processes that share it (sample_unwinder__share) */
	dev_t root_dev;	   /* the root its objects' paths resolve in */
	ino_t root_ino;
	Dwfl *dwfl;
	bool attached;
	struct sample_module *mods; /* as reported: name, file and bias owned here */
	size_t n_mods;
	struct pc_memo memo;
	/* The sample being unwound. */
	const struct stack_sample *s;
	const struct sample_access *acc;
	uint64_t missed; /* an address above the copy that was needed and not there */
};

/* The symbol memo is dropped when it grows past this (or the modules change). */
#define SAMPLE_MEMO_MAX 4096

static char *sample_debuginfo_path;
static const Dwfl_Callbacks sample_dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = debuginfo_cache__find,
	.debuginfo_path = &sample_debuginfo_path,
};

/*
 * Pcs of samples are named in one session for every process: each object (its name and
 * build-id) is reported there once, at an address of its own above any user address, and a
 * pc is named at its offset in it. Each process's session only unwinds (CFI); names, source
 * lines and the debug info behind them are read once, however many processes load the
 * object where. (A session per process held glibc's debug info once per process: 200 busy
 * processes, 690 MiB.) A fixed-address executable (ET_EXEC) cannot be moved: its pcs are
 * named in its process's own session.
 */
#define NAMER_BASE (1ULL << 48)
#define NAMER_ALIGN (1ULL << 20)

static struct {
	pthread_mutex_t lock;
	unsigned int users; /* live sample unwinders */
	Dwfl *dwfl;
	struct namer_object {
		char *key;     /* the name, then its build-id (or its file) */
		uint64_t bias; /* where it is reported here */
	} * o;
	size_t n;
	uint64_t next;
	struct pc_memo memo;
} namer = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void namer_release(void)
{
	pthread_mutex_lock(&namer.lock);
	if (!--namer.users) {
		if (namer.dwfl)
			dwfl_end(namer.dwfl);
		namer.dwfl = NULL;
		for (size_t i = 0; i < namer.n; i++)
			free(namer.o[i].key);
		free(namer.o);
		namer.o = NULL;
		namer.n = 0;
		pc_memo__free(&namer.memo);
	}
	pthread_mutex_unlock(&namer.lock);
}

/*
 * Where @mod of a process is reported in the namer: @off is added to a pc of @mod to name it
 * there. False when it cannot be (an ET_EXEC, a file that cannot be read). Under namer.lock.
 */
static bool namer_place(Dwfl_Module *mod, uint64_t *off)
{
	const unsigned char *bits;
	const char *name, *file;
	Dwarf_Addr low, high, bias;
	GElf_Addr vaddr;
	GElf_Ehdr eh;
	char *key;
	int len = dwfl_module_build_id(mod, &bits, &vaddr);
	Elf *elf = dwfl_module_getelf(mod, &bias);
	size_t kl;

	name = dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, &file, NULL);
	if (!elf || !name || !file || !gelf_getehdr(elf, &eh) || eh.e_type != ET_DYN || high < bias)
		return false;
	kl = strlen(name) + 2 + (len > 0 ? 2 * (size_t)len : strlen(file));
	key = malloc(kl);
	if (!key)
		return false;
	if (len > 0) {
		char *p = key + sprintf(key, "%s", name) + 1;

		key[strlen(name)] = '\0';
		for (int i = 0; i < len; i++)
			p += sprintf(p, "%02x", bits[i]);
	} else {
		sprintf(key, "%s", name);
		strcpy(key + strlen(name) + 1, file);
	}
	for (size_t i = 0; i < namer.n; i++)
		if (!strcmp(namer.o[i].key, key) &&
		    !strcmp(namer.o[i].key + strlen(key) + 1, key + strlen(key) + 1)) {
			free(key);
			*off = namer.o[i].bias - bias;
			return true;
		}
	if (!namer.dwfl) {
		namer.dwfl = dwfl_begin(&sample_dwfl_callbacks);
		namer.next = NAMER_BASE;
	}
	void *no = realloc(namer.o, (namer.n + 1) * sizeof(*namer.o));

	if (!namer.dwfl || !no) {
		free(key);
		return false;
	}
	namer.o = no;
	dwfl_report_begin_add(namer.dwfl);
	if (!dwfl_report_elf(namer.dwfl, name, file, -1, namer.next, true)) {
		dwfl_report_end(namer.dwfl, NULL, NULL);
		free(key);
		return false;
	}
	dwfl_report_end(namer.dwfl, NULL, NULL);
	namer.o[namer.n++] = (struct namer_object){ key, namer.next };
	*off = namer.next - bias;
	namer.next += (high - bias + 2 * NAMER_ALIGN - 1) & ~(NAMER_ALIGN - 1);
	return true;
}

/*
 * Name the frames of @ts, unwound in @u's session: in the namer when their object can be
 * placed there, else in @u's own. Each frame may become several (inline frames).
 */
static int name_sample(struct sample_unwinder *u, struct thread_stack *ts)
{
	struct stack_frame *raw = ts->frames;
	size_t n = ts->n_frames;
	int err = 0;

	ts->frames = NULL;
	ts->n_frames = 0;
	pthread_mutex_lock(&namer.lock);
	if (namer.memo.n > SAMPLE_MEMO_MAX)
		pc_memo__clear(&namer.memo);
	if (u->memo.n > SAMPLE_MEMO_MAX)
		pc_memo__clear(&u->memo);
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t lookup = raw[i].activation ? raw[i].pc : raw[i].pc - 1, off = 0;
		Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, lookup);
		bool shared = mod && namer_place(mod, &off);
		struct thread_stack one = { .frames = malloc(sizeof(*raw)), .n_frames = 1 };
		void *grown;

		if (!one.frames) {
			err = -ENOMEM;
			break;
		}
		one.frames[0] = raw[i];
		one.frames[0].pc += off;
		err = shared ? symbolize(namer.dwfl, NULL, &namer.memo, &one) :
			       symbolize(u->dwfl, NULL, &u->memo, &one);
		grown = err ? NULL :
			      realloc(ts->frames, (ts->n_frames + one.n_frames) * sizeof(*raw));
		if (!grown) {
			free_frames(one.frames, one.n_frames);
			err = -ENOMEM;
			break;
		}
		ts->frames = grown;
		for (size_t k = 0; k < one.n_frames; k++) {
			one.frames[k].pc = raw[i].pc;
			ts->frames[ts->n_frames++] = one.frames[k];
		}
		free(one.frames);
	}
	pthread_mutex_unlock(&namer.lock);
	free(raw);
	return err;
}

static pid_t sample_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct sample_unwinder *u = arg;

	if (*thread_argp || !u->s)
		return 0;
	*thread_argp = u;
	return u->pid;
}

static bool sample_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct sample_unwinder *u = arg;

	*thread_argp = u;
	return u->s != NULL;
}

static bool sample_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct sample_unwinder *u = arg;
	const struct stack_sample *s = u->s;
	uint64_t word;

	uint64_t page0 = s->sp & ~4095ULL;

	if (addr >= s->sp && addr - s->sp <= s->stack_len &&
	    s->stack_len - (addr - s->sp) >= sizeof(*result) &&
	    !(s->absent & (1U << ((addr - page0) >> 12 & 31))) &&
	    !(s->absent & (1U << ((addr + sizeof(*result) - 1 - page0) >> 12 & 31)))) {
		memcpy(result, s->stack + (addr - s->sp), sizeof(*result));
		return true;
	}
	if (u->acc && u->acc->read && u->acc->read(u->acc->ctx, addr, &word)) {
		*result = word;
		return true;
	}
	if (addr >= s->sp && !u->missed)
		u->missed = addr;
	return false;
}

static bool sample_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct sample_unwinder *u = thread_arg;
	const struct stack_sample *s = u->s;
	/* The caller-saved registers were not taken and stay unknown. */
	Dwarf_Word bx = s->bx, bp_sp[2] = { s->bp, s->sp },
		   r12_15[4] = { s->r12, s->r13, s->r14, s->r15 };
	Dwarf_Word ip = s->ip;

	return dwfl_thread_state_registers(thread, ARCH_DWARF_BX, 1, &bx) &&
	       dwfl_thread_state_registers(thread, ARCH_DWARF_BP, 2, bp_sp) &&
	       dwfl_thread_state_registers(thread, ARCH_DWARF_R12, 4, r12_15) &&
	       dwfl_thread_state_registers(thread, ARCH_DWARF_PC, 1, &ip);
}

static const Dwfl_Thread_Callbacks sample_callbacks = {
	.next_thread = sample_next_thread,
	.get_thread = sample_get_thread,
	.memory_read = sample_memory_read,
	.set_initial_registers = sample_set_initial_registers,
};

struct sample_unwinder *sample_unwinder__new(pid_t pid)
{
	struct sample_unwinder *u = calloc(1, sizeof(*u));
	char root[64];
	struct stat st;

	if (!u)
		return NULL;
	u->pid = pid;
	u->refs = 1;
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	if (!stat(root, &st)) {
		u->root_dev = st.st_dev;
		u->root_ino = st.st_ino;
	}
	u->dwfl = dwfl_begin(&sample_dwfl_callbacks);
	if (!u->dwfl) {
		free(u);
		return NULL;
	}
	pthread_mutex_lock(&namer.lock);
	namer.users++;
	pthread_mutex_unlock(&namer.lock);
	return u;
}

static void free_modules(struct sample_module *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)m[i].name);
		free((char *)m[i].file);
	}
	free(m);
}

void sample_unwinder__free(struct sample_unwinder *u)
{
	if (!u || --u->refs)
		return;
	dwfl_end(u->dwfl);
	free_modules(u->mods, u->n_mods);
	pc_memo__free(&u->memo);
	free(u);
	namer_release();
}

static bool same_module(const struct sample_module *a, const struct sample_module *b)
{
	return a->bias == b->bias && !strcmp(a->name, b->name);
}

/* Whether @x is in @m; the caller's order is mostly stable, so @hint (its index) first. */
static bool has_module(const struct sample_module *m, size_t n, const struct sample_module *x,
		       size_t hint)
{
	if (hint < n && same_module(&m[hint], x))
		return true;
	for (size_t i = 0; i < n; i++)
		if (same_module(&m[i], x))
			return true;
	return false;
}

bool sample_unwinder__serves(const struct sample_unwinder *u, pid_t pid,
			     const struct sample_module *m, size_t n)
{
	char root[64];
	struct stat st;

	if (n != u->n_mods)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!has_module(u->mods, u->n_mods, &m[i], i))
			return false;
	if (pid == u->pid)
		return true;
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	return !stat(root, &st) && st.st_dev == u->root_dev && st.st_ino == u->root_ino;
}

size_t sample_unwinder__live(void)
{
	size_t n;

	pthread_mutex_lock(&namer.lock);
	n = namer.users;
	pthread_mutex_unlock(&namer.lock);
	return n;
}

struct sample_unwinder *sample_unwinder__share(struct sample_unwinder *u)
{
	u->refs++;
	return u;
}

bool sample_unwinder__shared(const struct sample_unwinder *u)
{
	return u->refs > 1;
}

int sample_unwinder__set_modules(struct sample_unwinder *u, const struct sample_module *m, size_t n)
{
	bool only_added = true, changed = n != u->n_mods;
	struct sample_module *copy;

	for (size_t i = 0; i < u->n_mods && only_added; i++)
		only_added = has_module(m, n, &u->mods[i], i);
	for (size_t i = 0; i < n && !changed; i++)
		changed = !has_module(u->mods, u->n_mods, &m[i], i);
	if (!changed && only_added)
		return 0;
	copy = calloc(n ? n : 1, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		copy[i].name = strdup(m[i].name);
		copy[i].file = strdup(m[i].file);
		copy[i].bias = m[i].bias;
		if (!copy[i].name || !copy[i].file) {
			free_modules(copy, n);
			return -ENOMEM;
		}
	}
	/* Additions keep every module libdwfl has; a removal re-reports the set, and libdwfl
	 * keeps the modules reported again unchanged. */
	if (only_added)
		dwfl_report_begin_add(u->dwfl);
	else
		dwfl_report_begin(u->dwfl);
	for (size_t i = 0; i < n; i++) {
		if (only_added && has_module(u->mods, u->n_mods, &m[i], i))
			continue;
		/* The file through the process's root, else the path as it names it (the
		 * process is gone, and had our root). */
		if (!dwfl_report_elf(u->dwfl, m[i].name, m[i].file, -1, m[i].bias, true))
			dwfl_report_elf(u->dwfl, m[i].name, m[i].name, -1, m[i].bias, true);
	}
	dwfl_report_end(u->dwfl, NULL, NULL);
	free_modules(u->mods, u->n_mods);
	u->mods = copy;
	u->n_mods = n;
	/* Names stay right while modules are only added, but for pcs that had no module. */
	if (only_added)
		memo_drop_unnamed(&u->memo);
	else
		pc_memo__clear(&u->memo);
	if (!u->attached)
		u->attached = dwfl_attach_state(u->dwfl, arch_elf(), u->pid, &sample_callbacks, u);
	return 0;
}

int sample_unwinder__unwind(struct sample_unwinder *u, const struct stack_sample *s,
			    const struct sample_access *acc, unsigned int max_frames,
			    struct thread_stack *out)
{
	struct walk w = { .ts = out, .max = max_frames, .acc = acc };
	int err, rc;

	memset(out, 0, sizeof(*out));
	out->tid = u->pid;
	if (!u->attached) {
		out->error = strdup("none of the process's objects could be read");
		return -ENOENT;
	}
	u->s = s;
	u->acc = acc;
	u->missed = 0;
	rc = dwfl_getthread_frames(u->dwfl, u->pid, frame_cb, &w);
	/*
	 * The first pc has no CFI (glibc's clone3 ends its FDE before the syscall): as in a leaf
	 * function, the return address is the word at sp. Kept only when it lies in code and
	 * CFI goes on from there.
	 */
	if (rc && !out->error && out->n_frames == 1 && s->stack_len >= 8 && !(s->absent & 1)) {
		struct stack_sample leaf = *s;
		uint64_t missed = u->missed;

		memcpy(&leaf.ip, s->stack, sizeof(leaf.ip));
		leaf.sp = s->sp + 8;
		leaf.stack = s->stack + 8;
		leaf.stack_len = s->stack_len - 8;
		u->s = &leaf;
		rc = dwfl_getthread_frames(u->dwfl, u->pid, frame_cb, &w);
		if (out->n_frames > 1) {
			out->frames[1].activation = false; /* a return address: pc - 1 names it */
		} else {
			free(out->error);
			out->error = NULL;
			u->missed = missed;
			rc = -1;
		}
	}
	/* libdwfl takes a return address it cannot read for the end of the stack. */
	if ((rc || u->missed) && !out->error) {
		if (u->missed &&
		    asprintf(&out->error, "the rest of the stack lies above the %zu bytes copied",
			     s->stack_len) >= 0)
			out->truncated = true;
		else
			out->error = strdup(dwfl_errmsg(-1));
	}
	u->s = NULL;
	u->acc = NULL;
	err = name_sample(u, out);
	while (!err && out->n_frames > max_frames) {
		struct stack_frame *f = &out->frames[--out->n_frames];

		free(f->function);
		free(f->module);
		free(f->file);
		out->truncated = true;
	}
	return err;
}

size_t thread_stack__place_python(const struct thread_stack *ts, long *native)
{
	size_t j = 0, placed = 0, n = ts->py ? ts->py->n_frames : 0;

	for (size_t i = 0; i < n; i++)
		native[i] = -1;
	/* Innermost first on both sides: each eval call runs the frames down to its entry one. */
	for (size_t k = 0; k < ts->n_frames && j < n; k++) {
		const struct stack_frame *f = &ts->frames[k];

		if (f->inlined || !f->function || strcmp(f->function, "_PyEval_EvalFrameDefault"))
			continue;
		while (j < n) {
			bool entry = ts->py->frames[j].eval_entry;

			native[j++] = (long)k;
			placed++;
			if (entry)
				break;
		}
	}
	return placed;
}

bool stacks__holds_gil(const struct stacks *s, const struct thread_stack *ts)
{
	return s->py && ts->py && s->py->gil_locked && ts->py->tstate == s->py->gil_holder;
}

void stacks__free(struct stacks *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		for (size_t k = 0; k < s->t[i].n_frames; k++) {
			free(s->t[i].frames[k].function);
			free(s->t[i].frames[k].module);
			free(s->t[i].frames[k].file);
		}
		free(s->t[i].frames);
		free(s->t[i].error);
	}
	free(s->t);
	py_snapshot__free(s->py);
	free(s);
}

/*
 * As gdb: the address on the first frame of a pc (the innermost of an inline chain) only; the
 * frames of a recursion share a pc and each shows it.
 */
void stack_frame__print(const struct stack_frame *f, const struct stack_frame *prev, size_t n,
			const char *indent, FILE *out)
{
	bool same_pc = prev && prev->pc == f->pc && prev->inlined;

	if (same_pc)
		fprintf(out, "%s#%-3zu %18s    %s", indent, n, "",
			f->function ? f->function : "??");
	else
		fprintf(out, "%s#%-3zu 0x%016" PRIx64 " in %s", indent, n, f->pc,
			f->function ? f->function : "??");
	if (f->function && f->offset && !f->inlined)
		fprintf(out, "+0x%" PRIx64, f->offset);
	/* No name: where in its file, as addr2line takes it. */
	if (!f->function && f->module && f->has_module_offset)
		fprintf(out, " (%s+0x%" PRIx64 ")",
			strrchr(f->module, '/') ? strrchr(f->module, '/') + 1 : f->module,
			f->module_offset);
	if (f->module)
		fprintf(out, " from %s", f->module);
	if (f->file)
		fprintf(out, " at %s:%d", f->file, f->line);
	fputc('\n', out);
}

json_t *stack_frame__to_json(const struct stack_frame *f)
{
	char pc[24], moff[24];

	/* An address is a hex string in every document (docs/schema/common.schema.json). */
	snprintf(pc, sizeof(pc), "0x%" PRIx64, (uint64_t)f->pc);
	snprintf(moff, sizeof(moff), "0x%" PRIx64, f->module_offset);
	return json_pack("{s:s, s:b, s:o, s:I, s:o, s:o, s:o, s:i}", "pc", pc, "inlined",
			 f->inlined, "function",
			 f->function ? json_string(f->function) : json_null(), "offset",
			 (json_int_t)f->offset, "module",
			 f->module ? json_string(f->module) : json_null(), "module_offset",
			 f->has_module_offset ? json_string(moff) : json_null(), "file",
			 f->file ? json_string(f->file) : json_null(), "line", f->line);
}
