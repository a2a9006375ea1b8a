/* SPDX-License-Identifier: GPL-2.0 */
/*
 * GDB-like stacks of every thread, through libdwfl. Threads are seized and interrupted
 * (PTRACE_SEIZE + PTRACE_INTERRUPT: a dlscope killed at any moment leaves no thread stopped or
 * traced), their registers and live stacks copied, and released at once; unwinding (CFI) and
 * symbolization (.symtab, .dynsym, separate debug info, inline frames) run on the copies.
 */
#ifndef DLSCOPE_UNWIND_H
#define DLSCOPE_UNWIND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct stack_frame {
	uint64_t pc;
	bool activation; /* pc is exact (innermost or signal frame), not a return address */
	bool inlined;	 /* an inline frame: same pc as the frame below it */
	bool scanned;	 /* found by scanning the stack, the frame below having no CFI */
	char *function;	 /* NULL when unknown */
	uint64_t offset; /* from the start of the function's symbol */
	char *module;	 /* path of the object */
	/* pc as an address of the object's file (addr2line -e MODULE): libfoo.so+0x1234 */
	uint64_t module_offset;
	bool has_module_offset;
	char *file; /* source file, NULL when unknown */
	int line;
};

/* The address to look @f up by: a return address lies after its call, so pc - 1 is in the
 * calling function (and its line, its CFI). */
static inline uint64_t stack_frame__lookup_pc(const struct stack_frame *f)
{
	return f->activation ? f->pc : f->pc - 1;
}

struct py_thread;

struct thread_stack {
	pid_t tid;
	uint64_t thread_pointer;    /* fs_base: pthread_self() of the thread */
	const struct py_thread *py; /* its Python frames (in stacks.py), NULL when none */
	struct stack_frame *frames;
	size_t n_frames;
	bool truncated; /* stopped at the frame limit or a loop */
	char *error;	/* why unwinding stopped early, or why it could not start */
};

struct stacks {
	struct thread_stack *t;
	size_t n;
	uint64_t stopped_ns;	/* from the first thread stopped to the last released */
	uint64_t held_max_ns;	/* the longest one thread was held: its interrupt to its release */
	uint64_t stack_bytes;	/* stack memory copied while stopped */
	struct py_snapshot *py; /* the Python threads, read while stopped; NULL when not Python */
	char py_why[256];	/* why a Python process has no Python frames here, or "" */
};

struct procmaps;
struct py_interp;
/*
 * Capture the stacks of the threads @tids of @pid (NULL: every thread of /proc/PID/task), with
 * its mappings @maps as the caller read them (not freed here; NULL: read them). With @py (the
 * process's CPython), its threads' Python frames are read in the same stop; with
 * STACKS_PYTHON_ONLY in @flags, only those (no stack copied, nothing unwound). Returns 0, or
 * -errno with a one-line reason in @why: -EPERM (not allowed to ptrace), -ESRCH (it exited).
 */
enum stacks_flags {
	/* In a CPython process: its Python frames only, no native unwinding (stacks --python). */
	STACKS_PYTHON_ONLY = 1 << 0,
};

int stacks__capture(pid_t pid, const struct procmaps *maps, const struct py_interp *py,
		    unsigned int flags, const pid_t *tids, size_t n_tids, unsigned int max_frames,
		    struct stacks **out, char *why, size_t whylen);
/*
 * The stack of thread @tid of @pid, which the caller holds in a ptrace stop as its tracer (a
 * signal-delivery stop of a command it runs): nothing is seized, stopped or released here; the
 * caller resumes the thread. Returns 0 with one thread in @out, or -errno with a reason in @why.
 */
int stacks__capture_stopped(pid_t pid, pid_t tid, unsigned int max_frames, struct stacks **out,
			    char *why, size_t whylen);
struct corefile;
/*
 * The stacks of every thread of @core (as corefile__open read it), in its notes' order (a kernel
 * core's first thread is the one that took the signal), unwound and named as stacks__capture's;
 * @exe is the executable's file (NULL: the one the core's NT_FILE names). Returns 0, or -errno
 * with a one-line reason in @why.
 */
int stacks__from_core(const struct corefile *core, const char *exe, unsigned int max_frames,
		      struct stacks **out, char *why, size_t whylen);
/*
 * The Python frames of @s, stacks__from_core's stacks of @core: its interpreter found in @pi
 * (which must outlive @s), each thread's frames read from the core's memory into s->py and
 * linked to its thread. Returns 0; -ENOENT when the core is not a Python process; -ENOTSUP with
 * a reason in @why for a version without a layout; -ENOMEM.
 */
int stacks__core_python(struct stacks *s, const struct corefile *core, const char *exe,
			unsigned int max_frames, struct py_interp *pi, char *why, size_t whylen);
/*
 * A thread that does not reach its stop within a capture's deadline (an uninterruptible sleep,
 * a parent waiting in vfork) is left out of the stacks, but stays seized with its interrupt
 * pending: it would stop when it leaves that wait and stay stopped while dlscope lives. Such
 * threads are held, and this lets go of those that stopped (or forgets those that exited)
 * since, waiting up to @wait_ms for the rest. Only the threads the calling thread seized are
 * looked at (ptrace answers the tracer thread only). Whoever captures stacks and lives on (the
 * TUI) calls it on every tick and before it ends; a one-shot command before it exits. Returns
 * how many of the caller's threads are still held.
 */
size_t stacks__release_pending(unsigned int wait_ms);
void stacks__free(struct stacks *s);
/*
 * Where each Python frame of @ts runs: @native[j] is the index of the native frame
 * (_PyEval_EvalFrameDefault) that evaluates Python frame j, or -1 when the native stack ends
 * before it. @native holds ts->py->n_frames entries. Returns how many were placed.
 */
size_t thread_stack__place_python(const struct thread_stack *ts, long *native);
/* Does @ts hold the GIL of @s's interpreter? */
bool stacks__holds_gil(const struct stacks *s, const struct thread_stack *ts);
/* Free the frames and error of one stack, leaving it empty. */
void thread_stack__clear(struct thread_stack *ts);

/*
 * Stacks sampled elsewhere (a BPF probe): the registers CFI needs and a copy of the stack
 * memory from sp up, unwound and named like the stacks above, after the thread has run on.
 */
struct stack_sample {
	uint64_t ip, sp, bp, bx, r12, r13, r14, r15;
	const unsigned char *stack; /* stack_len bytes of the thread's memory at sp */
	size_t stack_len;
	uint32_t absent; /* bit i: the page at (sp & ~4095) + i * 4096 is not in the copy */
};

/* What a sample lacks, from the caller's model of the process. */
struct sample_access {
	/* A word outside the stack copy (a read-only file mapping); false when unknown. */
	bool (*read)(void *ctx, uint64_t addr, uint64_t *word);
	/* Whether @pc lies in an executable mapping: the unwind stops at the first that does not. */
	bool (*pc_ok)(void *ctx, uint64_t pc);
	void *ctx;
};

/* An object mapped in the process: its name (as the process sees it), file and load bias. */
struct sample_module {
	const char *name;
	const char *file;
	uint64_t bias;
};

struct sample_unwinder;

struct sample_unwinder *sample_unwinder__new(pid_t pid);
/* Let go of @u: freed when its last user lets go. */
void sample_unwinder__free(struct sample_unwinder *u);
/*
 * The objects of the process now. Objects already known are kept (with their CFI and symbols
 * read once); a set that lost an object is rebuilt. Returns 0 or -errno.
 */
int sample_unwinder__set_modules(struct sample_unwinder *u, const struct sample_module *m,
				 size_t n);
/*
 * Processes laid out alike (the children of one fork: the same objects at the same addresses,
 * in the same root) share one unwinder, its CFI, symbols and names read once: 200 such
 * processes held 200 copies of glibc's debug info otherwise. serves: whether @u has exactly
 * the objects @m at the same places, for @pid's root; share: one more user (each calls
 * sample_unwinder__free); shared: whether another uses it too (then set_modules must not
 * change it: its user takes an unwinder of its own instead).
 */
bool sample_unwinder__serves(const struct sample_unwinder *u, pid_t pid,
			     const struct sample_module *m, size_t n);
struct sample_unwinder *sample_unwinder__share(struct sample_unwinder *u);
/* How many unwinders are alive (each a libdwfl session and its objects' CFI). */
size_t sample_unwinder__live(void);
bool sample_unwinder__shared(const struct sample_unwinder *u);
/*
 * Unwind and name @s into @out (frames innermost first, as stacks__capture gives them; error
 * says why it ended early). Returns 0, or -errno when nothing could be unwound.
 */
int sample_unwinder__unwind(struct sample_unwinder *u, const struct stack_sample *s,
			    const struct sample_access *acc, unsigned int max_frames,
			    struct thread_stack *out);

/* A frame as text: frame_text.h. */
json_t *stack_frame__to_json(const struct stack_frame *f);

#endif
