// SPDX-License-Identifier: GPL-2.0
/*
 * N dlopen calls of a library already loaded, each a few calls deep: every one is a
 * stack-carrying event for the collector (its registers and stack copy, unwound and named).
 * Then it stays S seconds: the collector handles every event while the process lives, as it
 * would in a real one (after its exit the model cannot be read and the work is skipped).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void *open_it(const char *name)
{
	void *h = dlopen(name, RTLD_NOW);

	__asm__ volatile("" ::: "memory"); /* no tail call: a frame of its own */
	return h;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	struct timespec a, b;

	if (!dlopen("libm.so.6", RTLD_NOW))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		if (!open_it("libm.so.6"))
			return 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.0f calls/s\n", n / ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9));
	fflush(stdout);
	if (argc > 2)
		sleep((unsigned)atoi(argv[2]));
	return 0;
}
