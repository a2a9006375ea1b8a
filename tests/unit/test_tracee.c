// SPDX-License-Identifier: GPL-2.0
/*
 * tracee__look on a real child: the kernel answers a wait for exits with a tracee's stop, so a
 * stop that comes between the look for stops and the look for exits must be read as a stop. It
 * was read as an exit: under load, `stacks` said a stopped thread "exited before it could be
 * stopped" and a held thread was dropped while stopped. The window is made here at will: the
 * child is stopped before the look for exits alone is made.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procfs.h"
#include "tap.h"
#include "tracee.h"

static void on_usr1(int sig)
{
	(void)sig;
}

/* Until the child's state is @want (up to 5 s); whether it got there. */
static bool state_becomes(pid_t pid, char want)
{
	for (int i = 0; i < 5000; i++) {
		char state = 0;

		if (!proc__read_stat(pid, 0, NULL, 0, &state, NULL) && state == want)
			return true;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return false;
}

/* Seize @pid, interrupt it, and wait (not with waitid) until it is in its ptrace stop. */
static bool seize_and_stop(pid_t pid)
{
	return !ptrace(PTRACE_SEIZE, pid, NULL, NULL) &&
	       !ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) && state_becomes(pid, 't');
}

int main(void)
{
	int status = -1;
	pid_t child;

	signal(SIGUSR1, on_usr1);
	child = fork();
	if (child < 0)
		return 1;
	if (!child) {
		for (;;)
			pause();
	}
	CHECK(!ptrace(PTRACE_SEIZE, child, NULL, NULL), "seize the child");
	CHECK(tracee__look(child, false, &status) == TRACEE_NOTHING, "a sleeping tracee: nothing");
	CHECK(!ptrace(PTRACE_INTERRUPT, child, NULL, NULL) && state_becomes(child, 't'),
	      "interrupted, it stops");
	/* The stop came after a look for stops found nothing: the look for exits sees it. */
	CHECK(tracee__look_for_exit(child, false, &status) == TRACEE_STOPPED,
	      "a stop answering the look for exits is a stop, not an exit");
	CHECK(tracee__is_interrupt_stop(status), "and it is the interrupt's stop");
	CHECK(tracee__look(child, false, &status) == TRACEE_NOTHING, "taken once, not twice");
	CHECK(!ptrace(PTRACE_DETACH, child, NULL, NULL) && state_becomes(child, 'S'),
	      "let go, it sleeps again");

	/* The leader of our own child (WNOWAIT): the stop is left for the next look. */
	CHECK(seize_and_stop(child), "seized and stopped again");
	CHECK(tracee__look_for_exit(child, true, &status) == TRACEE_NOTHING,
	      "keeping exits, the look for exits leaves the stop");
	status = -1;
	CHECK(tracee__look(child, true, &status) == TRACEE_STOPPED &&
		      tracee__is_interrupt_stop(status),
	      "which the next look takes");

	/* A signal's stop is no interrupt's: its number comes with it, to be passed on. */
	kill(child, SIGUSR1);
	CHECK(!ptrace(PTRACE_CONT, child, NULL, NULL), "resumed");
	for (int i = 0; i < 5000; i++) {
		status = -1;
		if (tracee__look(child, false, &status) == TRACEE_STOPPED)
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	CHECK(!tracee__is_interrupt_stop(status) && (status & 0xff) == SIGUSR1,
	      "a signal's stop names the signal");

	/* Killed while seized: our own child's exit is left unreaped with keep_exit. */
	kill(child, SIGKILL);
	for (int i = 0; i < 5000 && tracee__look(child, true, &status) != TRACEE_EXITED; i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	CHECK(waitpid(child, &status, 0) == child && WIFSIGNALED(status),
	      "an exit kept is there for its parent to reap");
	CHECK(tracee__look(child, false, &status) == TRACEE_NOT_OURS, "reaped: no longer ours");
	return tap_done();
}
