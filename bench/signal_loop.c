// SPDX-License-Identifier: GPL-2.0
/*
 * N signals a process sends itself (SIGUSR1, handled), as fast as it can: what a signal costs
 * a process nobody watches while dlscope watches another (its signal_generate program runs for
 * every signal on the host).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	(void)sig;
	handled++;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct timespec a, b;
	pid_t self = getpid();

	sigaction(SIGUSR1, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		kill(self, SIGUSR1);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (handled != n)
		return 1;
	printf("%.1f ns per signal\n",
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)n);
	return 0;
}
