/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Phase timing for profiling: with DLSCOPE_PHASES=1 in the environment each phase__mark prints
 * on stderr the milliseconds since the previous mark (and since the start of the process).
 * Costs one getenv per process when unset.
 */
#ifndef DLSCOPE_PHASE_H
#define DLSCOPE_PHASE_H

void phase__mark(const char *what);
/* This process's own CPU time so far, user and system, all threads: seconds. */
double phase__cpu_seconds(void);

#endif
