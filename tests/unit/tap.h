/* SPDX-License-Identifier: GPL-2.0 */
/* Minimal TAP output for the C unit tests; tests/run_tests.py counts the lines. */
#ifndef DLSCOPE_TAP_H
#define DLSCOPE_TAP_H

#include <stdio.h>

static int tap_n, tap_failed;

#define CHECK(cond, name)                                                                       \
	do {                                                                                    \
		tap_n++;                                                                        \
		if (cond) {                                                                     \
			printf("ok %d - %s\n", tap_n, name);                                    \
		} else {                                                                        \
			tap_failed++;                                                           \
			printf("not ok %d - %s (%s:%d: %s)\n", tap_n, name, __FILE__, __LINE__, \
			       #cond);                                                          \
		}                                                                               \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
