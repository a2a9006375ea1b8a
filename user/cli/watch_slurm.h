/* SPDX-License-Identifier: GPL-2.0 */
/*
 * watch and record --job slurm:JOBID, from a login node or any node: one `watch --slurm-job` (or
 * `record --slurm-job`) per node of the job, in a step of its own beside the job's (srun
 * --overlap, one task per node); their lines relayed as they come, each named by its node.
 * Ctrl-C (or SIGTERM) ends every node's watch with its summary: SIGINT to that step alone.
 * record writes each node's trace beside -o FILE (FILE.NODE, on a file system every node
 * sees) and merges them into FILE at the end.
 */
#ifndef DLSCOPE_WATCH_SLURM_H
#define DLSCOPE_WATCH_SLURM_H

#include <signal.h>

/*
 * @cmd ("watch" or "record") of Slurm job @spec (after "slurm:") on every node: each node's
 * half gets @argv's options (the command line after @cmd) but --job and -o; @out, record's -o.
 * @stop is set by the caller's signal handlers. The exit status.
 */
int watch_slurm__run(const char *cmd, const char *spec, int argc, char **argv, const char *out,
		     volatile sig_atomic_t *stop);

#endif
