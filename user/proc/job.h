/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Multi-rank jobs on this host: a process's rank identity, read from its initial environment
 * (/proc/PID/environ: torchrun's RANK/LOCAL_RANK/WORLD_SIZE, OpenMPI's OMPI_COMM_WORLD_*,
 * PMIX_RANK, PMI_RANK, Slurm's SLURM_PROCID/SLURM_LOCALID/SLURM_NTASKS), and the launcher tree:
 * from any member (launcher or agent, rank, a rank's child) the launcher and all its ranks.
 */
#ifndef DLSCOPE_JOB_H
#define DLSCOPE_JOB_H

#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Most specific first: a torchrun started by srun has both RANK and SLURM_PROCID. */
enum job_scheme {
	JOB_TORCHRUN,
	JOB_OMPI,
	JOB_PMIX,
	JOB_PMI,
	JOB_SLURM,
	JOB_SCHEME_NONE,
};

struct job_identity {
	enum job_scheme scheme; /* JOB_SCHEME_NONE: the process carries no rank */
	int rank;
	int local_rank; /* -1 unknown */
	int world_size; /* -1 unknown */
	/* The variable world_size came from: the scheme's own, else another scheme's (Slurm's
	 * PMIx sets no PMIX_SIZE: SLURM_STEP_NUM_TASKS says it). */
	const char *world_var;
	/* Slurm's job and step (-1: none; a batch script has a job and no step) and node. */
	long slurm_job;
	int slurm_step;
	int slurm_nodes; /* the step's nodes (the job's for a batch script), -1 unknown */
	char node[64];
};

struct job_rank {
	pid_t pid;
	int rank, local_rank;
	int step;      /* Slurm's step, -1 none */
	char node[64]; /* Slurm's node name, "" when not known */
	char comm[64];
};

struct job {
	enum job_scheme scheme;
	pid_t launcher; /* the ranks' parent: torchrun's agent, mpirun, slurmstepd */
	char launcher_comm[64];
	char launcher_cmd[256]; /* its command line, spaces between arguments */
	int world_size;		/* -1 when the ranks do not say */
	const char *world_var;	/* the variable that said it */
	struct job_rank *ranks; /* sorted by rank */
	size_t n, cap;
	/* The PID given, and what it is: "launcher", "rank 3", "a child of rank 0". */
	pid_t asked;
	char asked_role[48];
	/* A Slurm job read on its nodes: its id and step (0 and -1 otherwise), the nodes read. */
	long slurm_job;
	int slurm_step;
	char nodes[256];
	int step_nodes; /* job__slurm_tasks: the most nodes a task's step spans, -1 unknown */
};

/*
 * The identity of @pid from its environment. Returns 0 (scheme JOB_SCHEME_NONE when it carries
 * no rank), or -errno: -ESRCH gone, -EACCES not ours to read.
 */
int job__identity(pid_t pid, struct job_identity *out);

/*
 * The job @pid belongs to: its launcher and the ranks on this host. A process whose parent has
 * the same rank is a child of that rank (a DataLoader worker), not a rank. Returns 0, or -errno
 * with one line in @why: -ESRCH (no such process), -EACCES (not ours), -ENOENT (not in a job).
 */
int job__find(pid_t pid, struct job **out, char *why, size_t whylen);
void job__free(struct job *j);
/* {scheme, launcher {pid, comm, cmdline}, world_size, ranks_here, description, asked {pid, role}} */
json_t *job__to_json(const struct job *j);

/* The static name of world-size variable @name (as struct job keeps it), or NULL unknown. */
const char *job__world_var(const char *name);

/* "torchrun", "OpenMPI", "PMIx", "PMI", "Slurm". */
const char *job_scheme__name(enum job_scheme s);

/*
 * "4 ranks (WORLD_SIZE 4)" or "4 of WORLD_SIZE 8 ranks on this host": how much of the job is
 * here, in words.
 */
void job__describe_ranks(const struct job *j, char *buf, size_t len);

/*
 * The variables of @pid's initial environment that make ranks behave differently: every
 * *_NUM_THREADS, OMP_PROC_BIND, OMP_PLACES, KMP_AFFINITY, GOMP_CPU_AFFINITY, LD_LIBRARY_PATH,
 * LD_PRELOAD, CUDA_VISIBLE_DEVICES and NCCL_*, as "NAME=VALUE" strings sorted by name.
 * Returns 0 or -errno; free each string and the array.
 */
int job__environment(pid_t pid, char ***vars, size_t *n);
/* Is @name one of the variables job__environment reports? */
bool job__env_matters(const char *name);

/*
 * The CPUs @pid may run on (Cpus_allowed_list of /proc/PID/status: its affinity within its
 * cpuset), as a set and as the kernel's list ("0-3,8"). Returns 0 or -errno.
 */
int job__cpus_allowed(pid_t pid, cpu_set_t *set, char *list, size_t len);

/* Ranks as ranges, sorted and deduplicated in place: "0-2,4-7". */
void job__format_ranks(int *ranks, size_t n, char *buf, size_t len);

/*
 * The processes below @root now (children, their children ...), by /proc's parent links:
 * malloc'd in @out (free it), @root itself not included. 0 or -errno.
 */
int job__descendants(pid_t root, pid_t **out, size_t *n);

/*
 * The cgroup v2 directory of Slurm job @jobid on this node: Slurm's cgroup/v2 plugin puts each
 * job's steps under a directory named job_ID (system.slice/slurmstepd.scope/job_ID), found
 * below /sys/fs/cgroup. 0 with the path in @buf, or -ENOENT.
 */
int job__slurm_cgroup(const char *jobid, char *buf, size_t len);

/*
 * The tasks of Slurm job @jobid on this host (step @step, or every step when -1; on node @node
 * only, when not NULL: nodes made of network namespaces share one /proc): the processes
 * slurmstepd started, never srun, the batch script or our own step (@own_step, -1 none), and
 * below a wrapper shell (srun bash -c 'python x.py') the program it runs. Sorted by step, then
 * rank; the launcher is the first task's slurmstepd. 0, or -ENOENT with one line in @why.
 */
int job__slurm_tasks(long jobid, int step, const char *node, int own_step, struct job **out,
		     char *why, size_t whylen);

/* "12" or "12.0" into @jobid and @step (-1 when absent). 0, or -EINVAL. */
int job__parse_slurm_id(const char *s, long *jobid, int *step);

/*
 * The Slurm job and step srun @pid runs on this host (scontrol show step: its SrunHost:Pid).
 * 0, or -ENOENT (no step of it, or no scontrol).
 */
int job__slurm_step_of_srun(pid_t pid, long *jobid, int *step);

#endif
