/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A fatal signal in a command dlscope runs as its tracer: taken at the signal-delivery stop, before
 * the signal is passed on. The signal and why it came (si_code, the sender), the pc and the
 * faulting address named as object + symbol (procmaps + elfobj), and the thread's stack (unwind).
 */
#ifndef DLSCOPE_CRASH_H
#define DLSCOPE_CRASH_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "unwind.h"

/* An address of the crashed process and what was there. */
struct crash_place {
	uint64_t addr;
	bool mapped;
	char perms[5];	 /* of the mapping, "" when nothing is mapped there */
	char *object;	 /* the file mapped there (or whose .bss it is), NULL otherwise */
	char *region;	 /* "[stack]", "[heap]", "[vdso]"..., NULL for a file or anonymous memory */
	char *symbol;	 /* the function (pc) or data object (address) holding it, NULL if none */
	uint64_t offset; /* from the start of @symbol */
};

struct crash {
	pid_t pid, tid;
	char thread[64]; /* the crashing thread's name */
	int signo, code;
	pid_t sender; /* the process that sent it (kill, tgkill, sigqueue), else 0 */
	bool fault;   /* addr is a faulting address (of this signal, or of caught_signo) */
	/*
	 * A fault the process's own handler caught before it raised the fatal signal (Python's
	 * faulthandler, pytest): its signal and code, else 0. addr is that fault's address.
	 */
	int caught_signo, caught_code;
	struct crash_place pc, addr;
	struct stacks *stack; /* the crashing thread only; NULL with stack_error */
	char *stack_error;
};

/*
 * True when @si, at a signal-delivery stop of thread @tid of @pid, will kill the process once
 * passed on: its default action terminates, and the process neither catches nor ignores it (for
 * a fault, the kernel has already reset a blocked or ignored handler by now).
 */
bool crash__signal_kills(pid_t pid, pid_t tid, const siginfo_t *si);
/* A fault with a data address (SIGSEGV, SIGBUS from the kernel): worth remembering when caught. */
bool crash__is_fault(const siginfo_t *si);
/*
 * Describe the crash of thread @tid, held by the caller in that stop. @caught: the last fault of
 * this thread that a handler caught, or NULL. Returns 0 or -ENOMEM.
 */
int crash__capture(pid_t pid, pid_t tid, const siginfo_t *si, const siginfo_t *caught,
		   struct crash **out);
void crash__free(struct crash *c);

/* "SIGSEGV", "SIGRTMIN+3", "SIG33". */
const char *signal__name(int sig, char *buf, size_t len);

/* The details under "CMD was killed by SIGSEGV": thread, pc, address, sender, stack. */
void crash__print(const struct crash *c, FILE *out);
json_t *crash__to_json(const struct crash *c);

#endif
