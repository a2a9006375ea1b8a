/* SPDX-License-Identifier: GPL-2.0 */
/* --slurm-job ID (watch, record, agent): a Slurm job's processes on this node. */
#ifndef DLSCOPE_SLURM_SELECT_H
#define DLSCOPE_SLURM_SELECT_H

#include <limits.h>

#include "watch.h"

struct slurm_select {
	char cgroup[PATH_MAX];
	char entry[64];
	char node_entry[128];
};

/*
 * Make @o select job @id's processes on this node, running or started later: those of its
 * cgroup where Slurm's cgroup/v2 plugin made one (job_ID below /sys/fs/cgroup), else those whose
 * environment holds SLURM_JOB_ID=ID (slurmstepd sets it in every task's; children inherit it), so
 * a job that has not started here yet is selected too. @s keeps what @o points to. Returns -1
 * to go on, or the exit status after one line (@id not a job ID, or with --cgroup).
 */
int slurm_select__apply(const char *cmd, const char *id, struct slurm_select *s,
			struct watch_opts *o);

#endif
