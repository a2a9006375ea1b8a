// SPDX-License-Identifier: GPL-2.0
/*
 * A job of N tiny ranks on one machine (bench/job_scale_bench.py): each rank is this program
 * exec'd with RANK, LOCAL_RANK and WORLD_SIZE in its environment (what dlscope reads), blocked
 * in a read of a pipe nobody writes (the collective), except the last, which sleeps in
 * nanosleep (the rank that never comes). Prints "ready PID" once every rank is at its wait.
 *
 *     tiny_ranks N
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static __attribute__((noinline)) void collective(int fd)
{
	char c;

	while (read(fd, &c, 1) <= 0)
		;
}

static __attribute__((noinline)) void stays_away(void)
{
	for (;;)
		nanosleep(&(struct timespec){ 3600, 0 }, NULL);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0, p[2], ready[2];
	char self[4096], buf[3][32];
	ssize_t len;

	if (argc > 2 && !strcmp(argv[1], "--rank")) {
		int rank = atoi(argv[2]), world = atoi(argv[3]);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (write(4, "r", 1) != 1)
			return 1;
		close(4);
		if (rank == world - 1)
			stays_away();
		collective(3);
		return 0;
	}
	if (n < 2 || n > 100000 || pipe(p) || pipe(ready)) {
		fprintf(stderr, "usage: tiny_ranks N (2 to 100000)\n");
		return 2;
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return 1;
	self[len] = '\0';
	for (int r = 0; r < n; r++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid)
			continue;
		dup2(p[0], 3);
		dup2(ready[1], 4);
		snprintf(buf[0], sizeof(buf[0]), "%d", r);
		snprintf(buf[1], sizeof(buf[1]), "%d", n);
		setenv("RANK", buf[0], 1);
		setenv("LOCAL_RANK", buf[0], 1);
		setenv("WORLD_SIZE", buf[1], 1);
		execl(self, "tiny_ranks", "--rank", buf[0], buf[1], (char *)NULL);
		_exit(127);
	}
	close(ready[1]);
	for (int r = 0; r < n; r++) {
		char c;

		if (read(ready[0], &c, 1) != 1)
			return 1;
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (;;)
		pause();
}
