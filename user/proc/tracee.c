// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include "tracee.h"

enum tracee_news tracee__look_for_exit(pid_t tid, bool keep_exit, int *status)
{
	siginfo_t si = { 0 };

	if (waitid(P_PID, (id_t)tid, &si, WEXITED | WNOHANG | __WALL | (keep_exit ? WNOWAIT : 0)) ||
	    si.si_pid != tid)
		return TRACEE_NOTHING;
	if (si.si_code == CLD_TRAPPED || si.si_code == CLD_STOPPED) {
		/* A stop that came since the look for stops: taken here, or (WNOWAIT) by the next. */
		if (keep_exit)
			return TRACEE_NOTHING;
		*status = si.si_status;
		return TRACEE_STOPPED;
	}
	return TRACEE_EXITED;
}

enum tracee_news tracee__look(pid_t tid, bool keep_exit, int *status)
{
	siginfo_t si = { 0 };

	/* Stops first: a wait for stops alone never reaps a thread that exits meanwhile. */
	if (waitid(P_PID, (id_t)tid, &si, WSTOPPED | WNOHANG | __WALL))
		return TRACEE_NOT_OURS;
	if (si.si_pid == tid) {
		*status = si.si_status;
		return TRACEE_STOPPED;
	}
	return tracee__look_for_exit(tid, keep_exit, status);
}

int tracee__release(pid_t tid, bool keep_exit, bool collected, int sig)
{
	int status = 0;

	if (!collected) {
		switch (tracee__look(tid, keep_exit, &status)) {
		case TRACEE_NOTHING: break;
		case TRACEE_STOPPED: sig = tracee__held_signal(status); break;
		default: return -ECHILD;
		}
	}
	return ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig) ? -errno : 0;
}
