/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A command run to its end under ptrace (check -- CMD): every thread traced from its first
 * instruction, so that a crash in any of them is seen at its signal-delivery stop; each process
 * of its tree that runs a program (the command, and what it forks and execs) held at its main
 * thread's exit (PTRACE_EVENT_EXIT: its memory is still there) once its other threads are gone,
 * for the caller to look at, then let go. Signals are passed on as they come: a fatal one still
 * kills it, after the caller looked. A child of ours may be traced without root.
 */
#ifndef DLSCOPE_SUPERVISE_H
#define DLSCOPE_SUPERVISE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct supervise_hooks {
	const char *cmd;       /* the dlscope command, for its error lines ("check") */
	bool no_follow;	       /* the command only, not the processes it forks */
	bool stdout_to_stderr; /* the command writes its stdout to stderr (ours is a document) */
	/*
	 * Process @pid at its exit, its memory still there: @descendant when the command ran it
	 * (else it is the command), @cmdline as far as known. 0, or -errno: the run's error.
	 */
	int (*at_exit)(void *ctx, pid_t pid, bool descendant, const char *cmdline);
	/*
	 * A signal-delivery stop of thread @tid of the command itself (not of the processes it
	 * runs), @caught the fault a handler of the program caught on that thread before, or NULL.
	 * Returns true when @si is a fault to remember as caught (it comes back as @caught).
	 */
	bool (*signal)(void *ctx, pid_t pid, pid_t tid, const siginfo_t *si,
		       const siginfo_t *caught);
	void *ctx;
};

/* How the command ended, and what was looked at. */
struct supervise_result {
	bool started; /* the command ran (else the error says why not) */
	bool ended;
	int exit_status; /* when it exited */
	int signo;	 /* when a signal killed it, else 0 */
	bool core_dumped;
	bool checked;		    /* at_exit saw the command itself */
	size_t descendants_checked; /* the processes it ran that at_exit saw */
};

/*
 * Run @argv (argv[0] looked up in $PATH) so, to its end. 0, or -errno: -ECHILD after one line
 * when it could not be started, else the first error of the run or of at_exit.
 */
int supervise__run(char **argv, const struct supervise_hooks *h, struct supervise_result *res);

#endif
