// SPDX-License-Identifier: GPL-2.0
/*
 * N rounds of dlopen and dlclose of a library the process does not hold otherwise: each dlopen
 * maps it anew (a new object in the link map, so watch holds the thread once). Prints the mean
 * time of one dlopen in microseconds.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	const char *lib = argc > 2 ? argv[2] : "libz.so.1";
	long n = argc > 1 ? atol(argv[1]) : 100;
	double total = 0;

	for (long i = 0; i < n; i++) {
		struct timespec a, b;
		void *h;

		clock_gettime(CLOCK_MONOTONIC, &a);
		h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (!h)
			return 1;
		total +=
			(double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
		dlclose(h);
	}
	printf("%.1f us per dlopen\n", total / (double)n);
	return 0;
}
