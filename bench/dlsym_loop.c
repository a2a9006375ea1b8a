// SPDX-License-Identifier: GPL-2.0
/* N dlsym calls as fast as possible: an event source for the collector's throughput. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct timespec a, b;
	void *h = dlopen("libm.so.6", RTLD_NOW);

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		if (!dlsym(h, "cos"))
			return 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.0f calls/s\n", n / ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9));
	return 0;
}
