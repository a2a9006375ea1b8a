// SPDX-License-Identifier: GPL-2.0
/* A live process's stacks: its modules, the stop (unwind_freeze.c), the copies unwound. */
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "arch.h"
#include "debuginfo_cache.h"
#include "framecache.h"
#include "phase.h"
#include "procfs.h"
#include "procmaps.h"
#include "unwind.h"
#include "unwind_impl.h"

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

		/* Offsets, not ends: an address near the top wraps addr + 8 round to zero (a Go
		 * program's frame pointer read as one). */
		if (c->stack && addr >= c->stack_lo && c->stack_len >= sizeof(*result) &&
		    addr - c->stack_lo <= c->stack_len - sizeof(*result)) {
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

/*
 * The process whose modules are being reported (libdwfl's find_elf has no context for it), and
 * its root where it is not ours: libdwfl names modules from its maps, whose paths lead with it.
 */
static __thread pid_t reporting_pid;
static __thread char reporting_root[PATH_MAX];

/*
 * Open a module's file as the process sees it: through /proc/PID/root, so that a library that
 * exists only in the target's mount namespace (a container) is found, not looked for on the host.
 */
static int find_elf_in_root(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
			    char **file_name, Elf **elfp)
{
	if (name[0] == '/' && reporting_pid > 0) {
		const char *own = proc__path_in_root(reporting_root, name);
		char path[PATH_MAX + 32];
		int fd;

		proc__file_path(path, sizeof(path), reporting_pid, own);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			/* Read through the root, named as the process names it. */
			*file_name = strdup(own);
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
	proc__path(root, sizeof(root), pid, 0, "root");
	if (stat("/", &ours) || stat(root, &theirs) ||
	    (ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino))
		return;
	proc__file_path(root, sizeof(root), pid, "/usr/lib/debug");
	if (asprintf(&proc_debuginfo_path, ":.debug:/usr/lib/debug:%s", root) < 0)
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
	if (proc__root_prefix(task, reporting_root, sizeof(reporting_root)) < 0)
		reporting_root[0] = '\0';
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

static int count_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
			void *arg)
{
	(void)mod, (void)userdata, (void)name, (void)start;
	++*(size_t *)arg;
	return DWARF_CB_OK;
}

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

/*
 * Is @pc (a lookup pc) in a function known by name to be a thread's or the program's first
 * frame: no caller to scan for above it. A stripped program's (octave-cli's _start has no
 * symbol) is known by its CFI instead (UNWIND_CFI_OUTERMOST).
 */
static bool named_outermost(Dwfl *dwfl, Dwarf_Addr pc)
{
	static const char *const names[] = { "_start",	 "__clone",	 "clone",	  "clone3",
					     "__clone3", "start_thread", "__thread_start" };
	Dwfl_Module *m = dwfl_addrmodule(dwfl, pc);
	const char *name = m ? dwfl_module_addrname(m, pc) : NULL;

	for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/*
 * Could the call that ends at return address @ret have led to @callee_pc? An indirect call
 * could; a direct one calls a function of its own module (a PLT stub, a local function), or
 * one in the callee's module within 1 MiB of @callee_pc.
 */
static bool call_reaches(Dwfl *dwfl, const unsigned char before[8], uint64_t ret,
			 uint64_t callee_pc)
{
	Dwfl_Module *target_mod, *callee_mod = dwfl_addrmodule(dwfl, callee_pc);
	uint64_t target;

	if (!arch_direct_call_target(before, ret, &target))
		return true;
	target_mod = dwfl_addrmodule(dwfl, target);
	if (!target_mod)
		return false;
	/* Near, not before: the call may reach a stub that jumps on (musl's __syscall_cp). */
	if (target_mod == callee_mod)
		return target - callee_pc + (1u << 20) < (2u << 20);
	return target_mod == dwfl_addrmodule(dwfl, ret - 1);
}

/*
 * Words of stack scanned for a return address (64 KiB: OpenBLAS's sgemm_kernel_PRESCOTT keeps
 * buffers of 4 and 11 KiB below its own), and how many times a walk is resumed.
 */
#define SCAN_WORDS 8192
#define SCAN_RESUMES 16

/* Is @pc in a module's code (an executable section), not its data: _PyRuntime is in python3. */
static bool in_code(Dwfl *dwfl, Dwarf_Addr pc)
{
	Dwfl_Module *m = dwfl_addrmodule(dwfl, pc);
	Dwarf_Addr addr = pc, bias;
	GElf_Shdr mem, *shdr;
	Elf_Scn *scn;

	if (!m || !(scn = dwfl_module_address_section(m, &addr, &bias)))
		return false;
	shdr = gelf_getshdr(scn, &mem);
	return shdr && (shdr->sh_flags & SHF_EXECINSTR);
}

/*
 * The word at @at, when it is a return address whose call could have led to @callee_pc: it
 * lies in a module's code, just after a call instruction. 0 when it is not; *@unreadable when the
 * stack ends there.
 */
static uint64_t return_address_at(Dwfl *dwfl, struct capture_set *cs, uint64_t at,
				  uint64_t callee_pc, bool *unreadable)
{
	unsigned char call[8];
	struct iovec local = { call, sizeof(call) }, remote;
	Dwarf_Word v;

	*unreadable = !cb_memory_read(dwfl, at, &v, cs);
	if (*unreadable || v < 4096 || v >= ARCH_USER_ADDR_END || !in_code(dwfl, v - 1))
		return 0;
	remote = (struct iovec){ (void *)(uintptr_t)(v - 8), sizeof(call) };
	return process_vm_readv(cs->mem_pid, &local, 1, &remote, 1, 0) == sizeof(call) &&
			       arch_follows_call(call) && call_reaches(dwfl, call, v, callee_pc) ?
		       v :
		       0;
}

/*
 * Whether the walk resumed at frame @from went on as a real one does: to a thread's first
 * function, or to the frame limit, or to another frame without CFI (scanned on from in turn).
 * A stale word that only follows a call (a pc of the interpreter's left in a kernel's buffer)
 * leads within a few frames to a pc in no module's code, to garbage, or to a frame whose CFI
 * gives no caller.
 */
static bool resumed_sanely(Dwfl *dwfl, const struct walk *w, size_t from)
{
	const struct thread_stack *ts = w->ts;
	const struct stack_frame *end;
	Dwarf_Addr pc;

	if (ts->n_frames == from)
		return false;
	if (ts->n_frames >= w->max)
		return true; /* its error says the rest is left out */
	if (ts->error)
		return false;
	end = &ts->frames[ts->n_frames - 1];
	pc = stack_frame__lookup_pc(end);
	/* A thread's first frame (by its CFI's mark or its name), or one without CFI. */
	return in_code(dwfl, pc) &&
	       (unwind_cfi_at(dwfl, pc) != UNWIND_CFI_CALLER || named_outermost(dwfl, pc));
}

/*
 * The walk stopped at a pc without CFI: hand-written assembly (glibc's clone3 after its FDE
 * ends, musl's __syscall_cp_asm, OpenBLAS's kernels), or a C library built without unwind
 * tables (Debian's musl, whose libc.so has 4 FDEs). As breakpad does, the stack above that
 * frame is scanned for a word that is a return address (it lies in a module, just after a
 * call instruction), and the walk resumes from there, that frame marked as found by scanning:
 * likely, not certain. A direct call must be able to reach the frame below, the walk from it
 * must go on sanely (else the next word is tried), and nothing is scanned above a thread's
 * first function.
 */
static void scan_on(Dwfl *dwfl, struct capture_set *cs, struct captured *c, struct walk *w)
{
	arch_regs saved = c->regs;
	struct thread_stack *ts = w->ts;

	for (int resume = 0; resume < SCAN_RESUMES; resume++) {
		size_t before = ts->n_frames;
		bool resumed = false, unreadable = false, truncated = ts->truncated;
		bool met_return = false;
		uint64_t sp, callee, lookup;
		char *kept;

		if (!before || before >= w->max || !w->have_last)
			break;
		callee = ts->frames[before - 1].pc;
		lookup = stack_frame__lookup_pc(&ts->frames[before - 1]);
		/* A pc in no module: the walk already went astray, nothing to go on from. */
		if (!dwfl_addrmodule(dwfl, lookup) ||
		    unwind_cfi_at(dwfl, lookup) != UNWIND_CFI_NONE || named_outermost(dwfl, lookup))
			break; /* it stopped for another reason: the end of the stack */
		sp = w->last_sp;
		/* Why the walk stopped: gone once it goes on, unless it stops again so. */
		kept = w->no_cfi;
		w->no_cfi = NULL;
		for (size_t k = 0; k < SCAN_WORDS && !resumed && !unreadable; k++) {
			uint64_t ret = return_address_at(dwfl, cs, sp + 8 * k, callee, &unreadable);

			if (!ret)
				continue;
			met_return = true;
			arch_regs__set_pc_sp(&c->regs, ret, sp + 8 * k + 8);
			w->have_last = false;
			dwfl_getthread_frames(dwfl, c->tid, unwind_frame_cb, w);
			resumed = resumed_sanely(dwfl, w, before);
			if (resumed)
				break;
			ts->n_frames = before; /* raw frames: nothing named yet to free */
			ts->truncated = truncated;
			free(ts->error);
			ts->error = NULL;
			free(w->no_cfi);
			w->no_cfi = NULL;
		}
		if (!resumed && !kept && !met_return && c->stack_end && sp < c->stack_end &&
		    (unreadable || sp + 8 * SCAN_WORDS >= c->stack_end)) {
			/* The scan covered the rest of the thread's stack and met no return address
			 * at all: nothing above that frame but the stack's end (musl's __clone,
			 * which has no CFI, starts its threads). A stack pointer elsewhere (in a
			 * module's data) is no such end, and a return address whose walk was
			 * refused may be a caller lost: both keep the error. */
			break;
		}
		if (!resumed) {
			/* Why the stack ends there, when libdwfl made no guess to say it by. */
			char *why = kept ? NULL : unwind_no_cfi_why(dwfl, &ts->frames[before - 1]);

			w->no_cfi = kept;
			if (why && asprintf(&w->no_cfi, "frame #%zu %s", before - 1, why) < 0)
				w->no_cfi = NULL;
			free(why);
			break;
		}
		free(kept);
		ts->frames[before].activation = false; /* a return address */
		ts->frames[before].scanned = true;
	}
	c->regs = saved;
}

/* Unwind and name the copied threads of @cs into @s; the target runs again by now. */
static int unwind_copies(Dwfl *dwfl, struct capture_set *cs, unsigned int max_frames,
			 struct stacks *s, char *why, size_t whylen)
{
	struct pc_memo memo = { 0 };
	struct framecache *fc;
	int err = 0;

	if (!dwfl_attach_state(dwfl, unwind_arch_elf(), cs->pid, &thread_callbacks, cs)) {
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
		struct walk w = { .ts = ts, .max = max_frames, .scan_no_cfi = true };

		ts->tid = cs->c[i].tid;
		if (cs->c[i].have_regs)
			ts->thread_pointer = arch_regs__thread_pointer(&cs->c[i].regs);
		if (!cs->c[i].have_regs) {
			ts->error = left_out_reason(cs->pid, &cs->c[i]);
			continue;
		}
		if (dwfl_getthread_frames(dwfl, ts->tid, unwind_frame_cb, &w) && !ts->error) {
			scan_on(dwfl, cs, &cs->c[i], &w);
			if (!ts->n_frames)
				ts->error = strdup(dwfl_errmsg(-1));
		}
		/* A frame with no CFI whose frame-pointer guess led nowhere, nor the scan above. */
		if (w.no_cfi && !ts->error) {
			ts->truncated = true;
			if (asprintf(&ts->error,
				     "%s; a scan of the stack above it found no return address "
				     "to go on from; stopped there",
				     w.no_cfi) < 0)
				ts->error = NULL;
		}
		free(w.no_cfi);
		/* Unwound: its copy is done with (thousands of threads never hold all at once). */
		free(cs->c[i].stack);
		cs->c[i].stack = NULL;
		if (unwind_symbolize(dwfl, fc, &memo, ts)) {
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

int stacks__capture(pid_t pid, const struct procmaps *given, const struct py_interp *py,
		    unsigned int flags, const pid_t *tids, size_t n_tids, unsigned int max_frames,
		    struct stacks **out, char *why, size_t whylen)
{
	struct capture_set cs = { .pid = pid,
				  .mem_pid = proc__live_task(pid),
				  .own_child = unwind_is_own_child(pid),
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
	err = unwind_list_threads(pid, tids, n_tids, &cs);
	if (err) {
		snprintf(why, whylen, "process %d exited while being read", pid);
		goto out;
	}
	err = unwind_freeze_and_copy(&cs, maps, py, max_frames, s, why, whylen);
	phase__mark("unwind: stopped and copied");
	if (!err)
		err = cs.regs_only ? threads_without_frames(&cs, s) :
				     unwind_copies(dwfl, &cs, max_frames, s, why, whylen);
	if (!err)
		unwind_link_python(s);
out:
	capture_set__free(&cs);
	return unwind_capture_end(s, given ? NULL : maps, dwfl, err, out);
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
	if (arch_regs__read(tid, &one.regs)) {
		err = -errno;
		snprintf(why, whylen, "cannot read the registers of thread %d: %s", tid,
			 strerror(-err));
		goto out;
	}
	one.have_regs = true;
	unwind_copy_stack(tid, maps, &one);
	s->stack_bytes = one.stack_len;
	err = unwind_copies(dwfl, &cs, max_frames, s, why, whylen);
out:
	free(one.stack);
	return unwind_capture_end(s, maps, dwfl, err, out);
}
