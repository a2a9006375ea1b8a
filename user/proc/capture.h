/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A core file of a live process, small enough to attach to an issue: every thread's registers
 * (NT_PRSTATUS, NT_FPREGSET, NT_X86_XSTATE), NT_PRPSINFO, NT_AUXV and NT_FILE; of its memory
 * only what unwinding, the link maps and the objects' identities need: each thread's stack
 * from its stack pointer up, the loader's and libc's writable data, the pages of every
 * link_map entry and name, each object's dynamic section and first page (ELF header, build-id
 * note), and the vDSO. Code and read-only data stay in the files NT_FILE names (gdb, eu-stack
 * and dlscope read them there). The threads are stopped (PTRACE_SEIZE + PTRACE_INTERRUPT) only
 * while their registers and that memory are copied; the file is written after they run again.
 * With full, every readable mapping is written, as gcore does, and as gcore does while the
 * threads are stopped: streamed to the file in 1 MiB pieces, never held whole.
 */
#ifndef DLSCOPE_CAPTURE_H
#define DLSCOPE_CAPTURE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct capture_stats {
	uint64_t stopped_ns; /* from the first thread seized to the last released */
	size_t threads;	     /* with registers in the core */
	size_t left_out;     /* threads that did not stop in time or exited meanwhile */
	size_t segments;     /* PT_LOAD headers */
	uint64_t dumped;     /* bytes of memory written */
	uint64_t file_size;
};

/*
 * Write the core of process @pid to @fd (from offset 0; the caller opened it). Returns 0, or
 * -errno with a one-line reason in @why (-ESRCH: gone, -EPERM: not ours to stop, -EIO: the
 * file could not be written).
 */
int capture__write(pid_t pid, int fd, bool full, struct capture_stats *st, char *why,
		   size_t whylen);

/*
 * The same core of process @pid at a fatal signal's delivery stop of its thread @tid, which the
 * caller holds as its tracer (check -- CMD): @tid's registers, and NT_SIGINFO from @si; the
 * other threads run on and are not in it. Nothing is seized or let go here.
 */
int capture__write_stopped(pid_t pid, pid_t tid, const siginfo_t *si, int fd,
			   struct capture_stats *st, char *why, size_t whylen);

#endif
