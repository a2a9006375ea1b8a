/* SPDX-License-Identifier: GPL-2.0 */
/* check of one process, shared by check PID, check -- CMD, check CORE and check --job. */
#ifndef DLSCOPE_CHECK_PROCESS_H
#define DLSCOPE_CHECK_PROCESS_H

#include <jansson.h>
#include <stdio.h>

#include "check_opts.h"
#include "finding.h"

struct inspection;
struct runtime_list;

/*
 * All selected detectors on one process (check_process.c); findings appended to @fs, its entry to
 * @procs (when not NULL) and its text to @text (when not NULL); its runtimes into @keep_rt
 * (when not NULL, for the caller to free). 0, or -errno after one line.
 */
int check__process(struct inspection *in, const struct check_opts *o, struct findings *fs,
		   json_t *procs, FILE *text, struct runtime_list *keep_rt);

#endif
