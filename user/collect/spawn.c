// SPDX-License-Identifier: GPL-2.0
/*
 * The command: started stopped before its exec (the probes first), its end found without
 * taking another thread's stop, and ended, with everything below it, when the run ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job.h"
#include "watch_internal.h"

int spawn__resolve(const char *argv0, char *out, size_t len)
{
	char path[PATH_MAX], found[PATH_MAX];
	const char *dirs = getenv("PATH");

	/* execvp's search: a name with a slash is a path, else each PATH entry in turn. */
	if (strchr(argv0, '/')) {
		snprintf(path, sizeof(path), "%s", argv0);
	} else {
		path[0] = '\0';
		for (const char *d = dirs ? dirs : "/usr/bin:/bin"; d && !path[0];) {
			const char *end = strchr(d, ':');
			int n = end ? (int)(end - d) : (int)strlen(d);

			snprintf(found, sizeof(found), "%.*s/%s", n, n ? d : ".", argv0);
			if (!access(found, X_OK))
				snprintf(path, sizeof(path), "%s", found);
			d = end ? end + 1 : NULL;
		}
	}
	if (!path[0] || !realpath(path, found) || strlen(found) >= len)
		return -ENOENT;
	memcpy(out, found, strlen(found) + 1);
	return 0;
}

/* Start the command stopped before exec, so probes are in place from its first instruction. */
pid_t spawn__held(char **argv, const int *stdio, int *release_fd)
{
	pid_t pid, parent = getpid();
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		char c;

		/*
		 * A dlscope killed (SIGKILL) must not leave its command running under init, as
		 * check -- CMD does not; a parent already gone ends it here.
		 */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(127);
		close(p[1]);
		if (stdio) {
			/* dup2 clears CLOEXEC on 0-2; the originals close at exec. */
			if (setsid() < 0)
				_exit(127);
			for (int fd = 0; fd < 3; fd++)
				if (stdio[fd] != fd && dup2(stdio[fd], fd) < 0)
					_exit(127);
		}
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "dlscope: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	*release_fd = p[1];
	return pid;
}

/*
 * Whether the command has ended, without taking anything from the wait queue. A stop of it may
 * be waiting there too: the TUI's snapshot seizes it from another thread of ours, and ptrace
 * reports a tracee's stops to every thread of the tracer's process. That stop is the
 * snapshot's to collect (to let the thread go): a wait for the exit must not consume it.
 */
static bool command_ended(pid_t pid)
{
	siginfo_t si = { 0 };

	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT))
		return errno == ECHILD;
	return si.si_pid == pid &&
	       (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED);
}

/* Whether the run is over by itself: the command ended, or every process given by PID. */
bool spawn__targets_done(struct watch *w)
{
	int status;

	if (w->command.pid > 0) {
		if (command_ended(w->command.pid) &&
		    waitpid(w->command.pid, &status, WNOHANG) == w->command.pid) {
			w->st->command_status = WIFEXITED(status) ? WEXITSTATUS(status) :
								    128 + WTERMSIG(status);
			w->command.done = true;
		}
		return w->command.done && w->st->command_status >= 0;
	}
	return !w->n_procs && w->o->n_pids;
}

/*
 * A command still running when the run ends goes with it, and so does every process below it
 * (torchrun's ranks outlived their launcher): all are stopped first, so that none forks past
 * the walk, then killed. Only processes below the command dlscope started are touched.
 */
void spawn__end_command(struct watch *w)
{
	pid_t *below = NULL;
	size_t n = 0;
	int status;

	if (w->command.pid <= 0 || w->st->command_status >= 0)
		return;
	kill(w->command.pid, SIGSTOP);
	for (int round = 0; round < 2; round++) {
		free(below);
		if (job__descendants(w->command.pid, &below, &n))
			break;
		for (size_t i = 0; i < n; i++)
			kill(below[i], SIGSTOP);
	}
	for (size_t i = 0; i < n; i++)
		kill(below[i], SIGKILL);
	free(below);
	kill(w->command.pid, SIGKILL);
	/* A ptrace stop (see command_ended) may come before its end. */
	while (waitpid(w->command.pid, &status, __WALL) == w->command.pid && !WIFEXITED(status) &&
	       !WIFSIGNALED(status))
		;
}
