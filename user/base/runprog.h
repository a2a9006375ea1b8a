/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Run a program and keep what it writes on its standard output: dlscope itself for a report's
 * parts, a scheduler's commands (scontrol, squeue, srun) for a job's nodes.
 */
#ifndef DLSCOPE_RUNPROG_H
#define DLSCOPE_RUNPROG_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Run @argv (argv[0] looked up in PATH unless it holds a slash; @path, when not NULL, is run
 * instead under the name argv[0]), its standard input /dev/null and its standard error too unless
 * @keep_stderr, and
 * wait for it. Its standard output (malloc'ed, NUL-terminated, *@len bytes), or NULL when it
 * could not be started (errno set); *@status as waitpid gives it.
 */
char *runprog__capture(const char *path, char *const argv[], bool keep_stderr, size_t *len,
		       int *status);

#endif
