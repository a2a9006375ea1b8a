// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <time.h>

#include "phase.h"

static double now_ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void phase__mark(const char *what)
{
	static int enabled = -1;
	static double last;
	double now;

	if (enabled < 0) {
		const char *e = getenv("DLSCOPE_PHASES");

		enabled = e && *e && *e != '0';
	}
	if (!enabled)
		return;
	/* The process's own CPU clock counts from its start: start-up (loader) shows too. */
	now = now_ms(CLOCK_MONOTONIC);
	fprintf(stderr, "phase %-28s %7.2f ms  (cpu since start %7.2f ms)\n", what,
		last ? now - last : 0.0, now_ms(CLOCK_PROCESS_CPUTIME_ID));
	last = now;
}

double phase__cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}
