/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the unwind_*.c files share and no other module sees; unwind.h is the interface. A live
 * capture stops the threads only to copy them (unwind_freeze.c, its leftovers held in
 * unwind_held.c), then unwinds the copies (unwind_live.c); a core (unwind_core.c) and the eBPF
 * samples (unwind_sample.c) are unwound with the same frame walk (unwind.c), and every pc is
 * named the same way (unwind_names.c).
 */
#ifndef DLSCOPE_UNWIND_IMPL_H
#define DLSCOPE_UNWIND_IMPL_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>
#include <time.h>

#include "arch.h"
#include "unwind.h"

struct framecache;
struct procmaps;
struct py_interp;

struct captured {
	pid_t tid;
	bool seized, stopped, gone, have_regs;
	/* The signal whose delivery stop was taken as the thread's stop: delivered at release. */
	int deliver_sig;
	/* Its interrupt and its release (CLOCK_MONOTONIC ns): how long this thread was held. */
	uint64_t t_interrupt, t_release;
	int seize_errno,
		regs_errno; /* why PTRACE_SEIZE or PTRACE_GETREGS failed, 0 if they did not */
	arch_regs regs;
	uint64_t stack_lo;
	size_t stack_len;
	unsigned char *stack;
	/* Where the thread's stack ends, when known: its thread pointer above sp in the same
	 * mapping (its C library's thread block tops the stack), or the end of [stack]; else 0. */
	uint64_t stack_end;
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

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* unwind_freeze.c: the threads stopped, copied and let go. */

/* The threads to stop: @tids when the caller listed them already, else /proc/PID/task. */
int unwind_list_threads(pid_t pid, const pid_t *tids, size_t n_tids, struct capture_set *cs);
/* The live part of a stopped thread's stack, copied into @c. */
void unwind_copy_stack(pid_t pid, const struct procmaps *maps, struct captured *c);
/* True when @pid is a child of this process (a command it runs). */
bool unwind_is_own_child(pid_t pid);
/* The only window in which the target is stopped (see there). 0 or -errno, with @why said. */
int unwind_freeze_and_copy(struct capture_set *cs, const struct procmaps *maps,
			   const struct py_interp *py, unsigned int max_frames, struct stacks *out,
			   char *why, size_t whylen);

/* unwind_held.c: seized threads that had not stopped in time, let go once they stop. */

/* Keep seized thread @tid for a later release; false when there is no memory to. */
bool held__add(pid_t tid, bool keep_exit);
/* Take @tid off the list when this thread holds it: a new capture reuses the seize. */
bool held__take(pid_t tid);
/* One pass over this thread's held threads; returns how many are still held. */
size_t held__pass(void);

/* unwind.c: the frame walk every unwind uses, and what its results share. */

struct walk {
	struct thread_stack *ts;
	unsigned int max;
	size_t cap;
	Dwarf_Word last_pc, last_sp; /* the previous frame's state, when it had an SP */
	bool have_last;
	const struct sample_access *acc; /* a sample's: frames must be in executable mappings */
	/*
	 * A live walk scans on from a frame with no CFI (unwind_live.c: scan_on): where libdwfl's
	 * frame-pointer guess for it gives no user address, the walk ends without an error, the
	 * reason kept in @no_cfi, said only if the scan finds no caller either (as it is when
	 * libdwfl made no guess).
	 */
	bool scan_no_cfi;
	char *no_cfi;
};

/* What the CFI of the object holding @pc (.eh_frame, else .debug_frame) says there: none, a
 * caller to unwind to, or the stack's first frame (its return address "undefined"). */
enum unwind_cfi { UNWIND_CFI_NONE, UNWIND_CFI_CALLER, UNWIND_CFI_OUTERMOST };
enum unwind_cfi unwind_cfi_at(Dwfl *dwfl, Dwarf_Addr pc);
/*
 * "(FUNCTION in FILE) has no unwind information (CFI)" when frame @f's pc is in a module that
 * has no CFI for it (libdwfl then guesses by the frame pointer), else NULL.
 */
char *unwind_no_cfi_why(Dwfl *dwfl, const struct stack_frame *f);
/* libdwfl's frame callback: each frame's pc into @arg (a struct walk), within its checks. */
int unwind_frame_cb(Dwfl_Frame *state, void *arg);
/* The ELF libdwfl's unwinder takes its machine from: dlscope's own executable. */
Elf *unwind_arch_elf(void);
/* Each thread's Python frames joined to its native stack (see there). */
void unwind_link_python(struct stacks *s);
/* What every capture ends with: the result on success, everything freed either way. */
int unwind_capture_end(struct stacks *s, struct procmaps *maps, Dwfl *dwfl, int err,
		       struct stacks **out);

/* unwind_names.c: pcs named as gdb names them. */

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
	size_t n, cap;
};

/* The frames of @ts named, each pc once per @memo, from @fc when given (see there). */
int unwind_symbolize(Dwfl *dwfl, struct framecache *fc, struct pc_memo *memo,
		     struct thread_stack *ts);
void unwind_free_frames(struct stack_frame *f, size_t n);
void pc_memo__free(struct pc_memo *memo);
/* Freed and empty, ready for new pcs. */
void pc_memo__clear(struct pc_memo *memo);
/* Forgets the pcs that had no module (modules were added since). */
void pc_memo__drop_unnamed(struct pc_memo *memo);

#endif
