/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stacks --job's parts shared by its two sources of ranks: the launcher tree on this host
 * (cmd_stacks.c) and a Slurm job's tasks on every node of its step (stacks_slurm.c).
 */
#ifndef DLSCOPE_STACKS_JOB_H
#define DLSCOPE_STACKS_JOB_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "job.h"
#include "stackmerge.h"

struct stacks_job_opts {
	bool json, python_only, stats;
	unsigned int max_frames;
	unsigned int fanout; /* nodes (or relays) one reader reads; 0: SLURM_FANOUT_DEFAULT */
	/* One process's `stacks --json` document, or {"error": why}; run in a forked worker. */
	json_t *(*rank_doc)(pid_t pid, bool python_only, unsigned int max_frames);
};

/* Each rank of @j read by a worker of its own, side by side: its document or error in @rs[i]
 * (and @errs[i], malloc'ed). */
void stacks_job__read(const struct job *j, struct rank_stacks *rs, char **errs,
		      const struct stacks_job_opts *o);
/*
 * The ranks merged and the verdict said (text or JSON); the exit status. @groups: the stacks
 * table of folded threads (stackmerge__fold), NULL none; @fan_in: how a Slurm job's answers came
 * ({"width", "relays", "answers", "bytes"}), NULL for a job of this host.
 */
int stacks_job__report(const struct job *j, struct rank_stacks *rs, char **errs,
		       const json_t *groups, const json_t *fan_in, const struct stacks_job_opts *o,
		       double wall_ms);

/* Milliseconds since @t (CLOCK_MONOTONIC). */
double stacks_job__ms_since(const struct timespec *t);

/* stacks --job slurm:JOBID[.STEP] (@spec after "slurm:"): every node's tasks. */
int stacks_slurm__job(const char *spec, const struct stacks_job_opts *o);
/*
 * Whether @pid is Slurm's to answer: srun, a batch script, or a task slurmstepd started (not a
 * rank of mpirun or torchrun inside a task); then the answer's exit status is in *@ret.
 */
bool stacks_slurm__owns(pid_t pid, const struct stacks_job_opts *o, int *ret);
/* stacks --job-node JOBID[.STEP]: this node's tasks, one JSON document for the front end. */
int stacks_slurm__node(const char *spec, const struct stacks_job_opts *o);
/*
 * stacks --job-relay JOBID[.STEP]:FIRST:COUNT:WIDTH:NODELIST: a relay of the fan-in tree, run on a node
 * of the job; it reads its share of nodes FIRST..FIRST+COUNT-1 (through relays of its own when
 * more than WIDTH), folds their stacks (stackmerge__fold) and writes one document as a node would.
 */
int stacks_slurm__relay(const char *spec, const struct stacks_job_opts *o);

#endif
