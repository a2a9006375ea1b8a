// SPDX-License-Identifier: GPL-2.0
/* A program's standard output, kept (runprog.h). */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runprog.h"

extern char **environ;

char *runprog__capture(const char *path, char *const argv[], bool keep_stderr, size_t *len,
		       int *status)
{
	posix_spawn_file_actions_t fa;
	int pipefd[2], devnull, err;
	char buf[65536], *out = NULL;
	size_t n = 0;
	ssize_t r;
	pid_t pid;
	FILE *f;

	*status = 0;
	if (pipe2(pipefd, O_CLOEXEC))
		return NULL;
	/* Nothing to read: srun would forward our input (or an fd 0 left closed) to a task. */
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	if (devnull >= 0) {
		posix_spawn_file_actions_adddup2(&fa, devnull, 0);
		if (!keep_stderr)
			posix_spawn_file_actions_adddup2(&fa, devnull, 2);
	}
	err = path ? posix_spawn(&pid, path, &fa, NULL, argv, environ) :
		     posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (devnull >= 0)
		close(devnull);
	if (err) {
		close(pipefd[0]);
		errno = err;
		return NULL;
	}
	f = open_memstream(&out, &n);
	while ((r = read(pipefd[0], buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
		if (r > 0 && f)
			fwrite(buf, 1, (size_t)r, f);
	close(pipefd[0]);
	if (f)
		fclose(f);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	if (len)
		*len = out ? n : 0;
	return out;
}
