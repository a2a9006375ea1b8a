// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cliopt.h"
#include "job.h"
#include "slurm_select.h"

int slurm_select__apply(const char *cmd, const char *id, struct slurm_select *s,
			struct watch_opts *o)
{
	int err;

	if (o->cgroup)
		return cliopt__usage(cmd, "--slurm-job is a cgroup or an environment: not with "
					  "--cgroup");
	err = job__slurm_cgroup(id, s->cgroup, sizeof(s->cgroup));
	if (err == -EINVAL)
		return cliopt__usage(cmd, "--slurm-job takes a job ID (digits), not '%s'", id);
	if (!err) {
		o->cgroup = s->cgroup;
		return -1;
	}
	/* No cgroup of the job here (another proctrack or cgroup plugin, a hybrid hierarchy, or
	 * no step yet): the variable every task of the job has. */
	snprintf(s->entry, sizeof(s->entry), "SLURM_JOB_ID=%s", id);
	o->env_entry = s->entry;
	/* Run in a step (watch --job slurm:JOBID's node half): this node's tasks alone, where
	 * two slurmds share one kernel (a test cluster) and each sees the other's. */
	if (getenv("SLURMD_NODENAME") && *getenv("SLURMD_NODENAME")) {
		snprintf(s->node_entry, sizeof(s->node_entry), "SLURMD_NODENAME=%s",
			 getenv("SLURMD_NODENAME"));
		o->env_node = s->node_entry;
	}
	return -1;
}
