/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The threads of a process and the objects on their live stacks, found without stopping them:
 * /proc/PID/task/TID/syscall gives a blocked thread's stack pointer, and every word between it
 * and the top of its stack that points just after a call instruction in a loaded object's code
 * is taken as a return address. Good enough to say whether a thread is running constructors
 * inside dlopen; the unwinder gives exact stacks. A running thread has no stack pointer there:
 * each thread's start routine, read from glibc's thread list, says which runtime started it
 * whatever its state, and so which runtime's pool it belongs to.
 */
#ifndef DLSCOPE_THREADSCAN_H
#define DLSCOPE_THREADSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct target;
struct libgraph;
struct addrmap;

struct thread_frame {
	uint64_t addr;
	unsigned int obj; /* libgraph object id */
};

struct thread_info {
	pid_t tid;
	pid_t ns_tid; /* as the target's PID namespace numbers it (a container's), else tid */
	char comm[64];
	char state;   /* /proc's: 'R' running (or runnable), 'S', 'D'... */
	long syscall; /* -1: blocked outside a system call, -2: running (no stack read) */
	uint64_t args[6];
	uint64_t sp, pc;
	unsigned int pc_obj;	     /* object holding pc, or UINT32_MAX */
	struct thread_frame *frames; /* outermost first */
	size_t n_frames;
	bool start_known;	/* glibc listed the thread: start_routine is what it was given */
	uint64_t start_routine; /* 0 for the main thread */
	unsigned int start_obj; /* object whose code holds it, or UINT32_MAX */
};

struct threadscan {
	struct thread_info *t;
	size_t n;
};

/*
 * Scan every thread of @t; objects are those @am (an inspection's mappings tied to @g) names,
 * start routines read through @g's glibc. Returns 0 or -errno (-ESRCH: it exited).
 */
int threadscan__scan(const struct target *t, const struct libgraph *g, const struct addrmap *am,
		     struct threadscan **out);
/*
 * The same of the process a core file holds (@t from target__from_core): each thread's system
 * call and stack pointer from its registers in the core, its stack from the core's memory.
 */
int threadscan__from_core(const struct target *t, const struct libgraph *g,
			  const struct addrmap *am, struct threadscan **out);
void threadscan__free(struct threadscan *ts);

#endif
