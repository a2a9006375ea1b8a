// SPDX-License-Identifier: GPL-2.0
/* N tiny OpenMP regions of two threads; prints the time per region. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	volatile long sink = 0;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
#pragma omp parallel num_threads(2)
		sink += omp_get_thread_num();
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.3f us/region\n",
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / (double)n);
	return 0;
}
