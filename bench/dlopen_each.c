// SPDX-License-Identifier: GPL-2.0
/*
 * dlopen, once each and in order, the objects named one per line in a list file: every dlopen
 * brings an object the process never had (gen_libs.sh: each needs the one before it, already
 * loaded). Prints the mean time of one dlopen in microseconds.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
	char line[4096];
	double total = 0;
	long n = 0;
	FILE *f = argc > 1 ? fopen(argv[1], "r") : NULL;

	if (!f) {
		fprintf(stderr, "usage: dlopen_each LIST\n");
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		struct timespec a, b;

		line[strcspn(line, "\n")] = '\0';
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (!dlopen(line, RTLD_NOW | RTLD_LOCAL)) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		total += (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
		n++;
	}
	fclose(f);
	printf("%.1f us per dlopen\n", n ? total / (double)n : 0.0);
	return 0;
}
