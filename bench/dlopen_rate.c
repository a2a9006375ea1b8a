// SPDX-License-Identifier: GPL-2.0
/*
 * dlopen and dlclose of LIB at RATE pairs a second for SECS seconds (the agent's "one process
 * loading and unloading a library a thousand times a second"), paced by absolute deadlines.
 * Prints the pairs done and the mean and 99th percentile of one pair's time, in microseconds:
 * what the probes cost the process per call.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long rate = argc > 2 ? atol(argv[2]) : 1000;
	double secs = argc > 3 ? atof(argv[3]) : 60, sum = 0;
	long n = (long)(rate * secs), done = 0;
	double *took = calloc((size_t)(n > 0 ? n : 1), sizeof(*took));
	struct timespec next;

	if (argc < 2 || rate <= 0 || !took) {
		fprintf(stderr, "usage: dlopen_rate LIB [RATE [SECS]]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (; done < n; done++) {
		double t0 = now_us();
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);

		if (!h || dlclose(h)) {
			fprintf(stderr, "dlopen_rate: %s\n", dlerror());
			return 1;
		}
		took[done] = now_us() - t0;
		sum += took[done];
		next.tv_nsec += 1000000000L / rate;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	qsort(took, (size_t)done, sizeof(*took), cmp);
	printf("pairs %ld mean_us %.1f p99_us %.1f\n", done, sum / (double)done,
	       took[(size_t)((double)done * 0.99)]);
	return 0;
}
