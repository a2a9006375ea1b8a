/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What happened to a thread dlscope seized, looked at without blocking. One reader for the
 * stack capture, the core capture and the threads let go later, because the kernel reports a
 * tracee's stop to a wait for exits as well: two looks in a row must tell the stop that came
 * between them from an exit, or a stopped thread is taken for gone (and left stopped).
 */
#ifndef DLSCOPE_TRACEE_H
#define DLSCOPE_TRACEE_H

#include <stdbool.h>
#include <sys/ptrace.h>
#include <sys/types.h>

enum tracee_news {
	TRACEE_NOTHING,	 /* still on its way: look again */
	TRACEE_STOPPED,	 /* stopped; *status is waitid's si_status (event << 8 | signal) */
	TRACEE_EXITED,	 /* exited (reaped, unless @keep_exit) */
	TRACEE_NOT_OURS, /* no child of ours any more (ECHILD): reaped, or detached */
};

/*
 * One look at seized thread @tid. @keep_exit: the exit of the leader of our own child is looked
 * at, not reaped (WNOWAIT), so that the code that runs the child collects its status.
 */
enum tracee_news tracee__look(pid_t tid, bool keep_exit, int *status);

/*
 * Its second half, for a thread the look for stops found running: a stop that came since is
 * reported as a stop (TRACEE_NOTHING with @keep_exit: the next look takes it), never an exit.
 */
enum tracee_news tracee__look_for_exit(pid_t tid, bool keep_exit, int *status);

/* The stop @status reports is the one PTRACE_INTERRUPT asked for (not a signal's). */
static inline bool tracee__is_interrupt_stop(int status)
{
	return (status >> 8) == PTRACE_EVENT_STOP;
}

/* The signal the stop @status holds back, to be delivered at its release: 0 for ours. */
static inline int tracee__held_signal(int status)
{
	return tracee__is_interrupt_stop(status) ? 0 : status & 0xff;
}

/*
 * Let seized thread @tid go, with @sig, the signal its collected stop held back. One not
 * collected yet (!@collected) is looked at first: a signal's stop that came meanwhile goes
 * with its signal, never released with 0. 0 when detached; -ECHILD when the look found it
 * exited (or no longer ours); else PTRACE_DETACH's -errno: running, not stopped yet, or
 * killed in its stop (ESRCH), its exit still to be reaped.
 */
int tracee__release(pid_t tid, bool keep_exit, bool collected, int sig);

#endif /* DLSCOPE_TRACEE_H */
