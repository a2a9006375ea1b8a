/* SPDX-License-Identifier: GPL-2.0 */
/*
 * check --job: every rank of a job checked as check PID would, then the job detectors across
 * the ranks; a job of this host by any member's PID, or a Slurm job read on its nodes.
 */
#ifndef DLSCOPE_CHECK_JOB_H
#define DLSCOPE_CHECK_JOB_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "check_opts.h"
#include "finding.h"

/*
 * check --job PID: the job PID belongs to, into @fs (the ranks' findings), @jfs (the job's) and
 * @doc (with --json). True when the job or a rank could not be inspected.
 */
bool check_job__pid(pid_t pid, const struct check_opts *o, struct findings *fs,
		    struct findings *jfs, json_t *doc);
/* check --job slurm:JOBID[.STEP] (@spec after "slurm:"), as check_job__pid; *@usage when
 * @spec is no job id. */
bool check_job__slurm(const char *spec, const struct check_opts *o, struct findings *fs,
		      struct findings *jfs, json_t *doc, bool *usage);
/* check --job-node JOBID[.STEP]: this node's tasks checked, one JSON line for the front end. */
int check_job__node(const char *spec, const struct check_opts *o);
/*
 * check --job-relay JOBID[.STEP]:FIRST:COUNT:WIDTH:NODELIST: a relay of the fan-in tree
 * (slurm_tasks__relay), its tasks' library lists and runtimes sent once each.
 */
int check_job__relay(const char *value, const struct check_opts *o);

#endif
