/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A Slurm job's tasks read on their own nodes, from a login node or any node: a command's node
 * half (`dlscope CMD --job-node JOBID[.STEP]`) runs once on every node of the job, started by
 * `srun --jobid --overlap --ntasks-per-node=1` (a step beside the job's, taking none of its
 * resources), and writes one JSON line: its tasks, each with what CMD read of it. The front
 * end gathers the lines into one job, its ranks in rank order. Shared by stacks and check.
 */
#ifndef DLSCOPE_SLURM_TASKS_H
#define DLSCOPE_SLURM_TASKS_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "cliopt.h"
#include "job.h"
#include "jsonfold.h"

/*
 * A reader of a big job reads at most this many nodes, or relays (STAT's fan-in tree): 1,024
 * nodes are 32 relays of 32 nodes each.
 */
#define SLURM_FANOUT_DEFAULT 32
/* At most this many: a reader names its share's nodes to srun in one argument (128 KiB). */
#define SLURM_FANOUT_MAX 1024

/*
 * The option entries (struct cliopt_def, cliopt.h) of a command that reads a Slurm job on its
 * nodes: its hidden node half (--job-node, cliopt__next() gives @node_val) and relay
 * (--job-relay, 'L'), and --fanout ('F'). @cmd names the command, @how how the tree is told
 * ("as STAT's do"), @what what a relay sends once ("library list once"). Laid out as the
 * tables that use them.
 */
// clang-format off
#define SLURM_TASKS_OPTION_DEFS(cmd, node_val, how, what)				\
	{ .name = "job-node", .val = (node_val), .arg = "JOBID[.STEP]", .hidden = true },	\
	{ .name = "job-relay", .val = 'L', .arg = "JOBID[.STEP]:FIRST:COUNT:WIDTH:NODELIST",	\
	  .hidden = true },								\
	{ .name = "fanout", .val = 'F', .arg = "N",					\
	  .help = "with --job of a Slurm job: past N nodes (2 to "			\
		  CLIOPT_STR(SLURM_FANOUT_MAX) ", default "			\
		  CLIOPT_STR(SLURM_FANOUT_DEFAULT) ") the answers come up a tree, "	\
		  how ": relays (`dlscope " cmd " --job-relay`, on the first node of each "	\
		  "share) read at most N nodes or relays each and send each distinct "	\
		  what "; the front end reads at most N answers" }
// clang-format on

/* The tasks of one job, from any number of nodes. */
struct slurm_tasks {
	struct job *j; /* its ranks, each with its node */
	/*
	 * Each rank's task document, as its node wrote it (owned); as j->ranks. A relay's tasks
	 * carry its node's name ("node") and the tables their payloads refer to ("shared").
	 */
	json_t **task;
	size_t cap;	   /* room of j->ranks and task */
	char *node_errors; /* what some nodes could not read: "n2: why; n3: why"; NULL none */
	/* What came to this reader: answers (lines), their bytes, relays in the tree below. */
	int answers, relays;
	size_t bytes;
};

/*
 * This host's tasks of job @jobid's step @step (-1: any) when the step runs on this host alone:
 * @t->j, and @t->task all NULL for the caller to fill. -EXDEV when the step spans nodes,
 * -ENOENT when it has no task here, -ENOMEM.
 */
int slurm_tasks__here(long jobid, int step, struct slurm_tasks *t);
/*
 * Every node's tasks: `dlscope @cmd --job-node SPEC @args...` on each node of the job (@args
 * NULL-ended), their documents gathered into @t. With more nodes than @fanout (0: no limit),
 * through relays (`dlscope @cmd --job-relay SPEC:FIRST:COUNT:WIDTH`), each reading at most
 * @fanout nodes or relays of its own. -errno with @why when no node answered.
 */
int slurm_tasks__fan_out(long jobid, int step, const char *cmd, char *const *args,
			 unsigned int fanout, struct slurm_tasks *t, char *why, size_t whylen);
/*
 * A task's document folded into @f (jsonfold.h): its payload's big values (a stack, a library
 * list) moved to @f's table. @in: the table of the relay it came through, NULL when it came
 * from its node whole. 0, or -ENOMEM.
 */
typedef int (*slurm_fold_fn)(json_t *task, struct jsonfold *f, const json_t *in, const void *arg);
/*
 * `dlscope @cmd --job-relay SPEC:FIRST:COUNT:WIDTH:NODELIST` (@value): a relay of the fan-in
 * tree, on the first node of its share. It reads the share (its node halves, or relays of its
 * own, with @args), folds every task by @fold into one table, and writes one line as a node
 * half does, with the table ("shared": {"values"}), how many relays it stands for and what its
 * nodes could not read. The exit status.
 */
int slurm_tasks__relay(const char *cmd, const char *value, char *const *args, slurm_fold_fn fold,
		       const void *arg);
/*
 * How @t's answers came, for the JSON ("fan_in"): {"width": @fanout (0: the default), "relays", "answers",
 * "bytes"}; NULL when none came through srun (read on this host).
 */
json_t *slurm_tasks__fan_in(const struct slurm_tasks *t, unsigned int fanout);
/* The table a task that came through a relay refers to; NULL when it came whole. */
const json_t *slurm_tasks__table(const json_t *task);
/*
 * How many nodes of @count one relay under a reader of @fanout takes: @count itself when the
 * reader reads them all (no relays), else at least @fanout, and few enough that the reader has
 * at most @fanout relays.
 */
size_t slurm_tasks__chunk(size_t count, unsigned int fanout);
/*
 * Job @jobid's step @step (-1: its main one) read into @t: here by @read_here (which fills
 * @t->task for the ranks of @t->j) when the step runs on this host alone, else on every node by
 * `dlscope @cmd --job-node` with @args (slurm_tasks__fan_out, @fanout or, when 0,
 * SLURM_FANOUT_DEFAULT); then settled (slurm_tasks__settle, @asked and @role).
 * 0, or -errno after one line naming why (@cmd's).
 */
int slurm_tasks__gather(long jobid, int step, const char *cmd, char *const *args,
			unsigned int fanout,
			void (*read_here)(struct slurm_tasks *t, const void *arg), const void *arg,
			pid_t asked, const char *role, struct slurm_tasks *t);
/*
 * The tasks of one step kept (@step, or the job's main one: most ranks), in rank order; the
 * job's id, step, nodes and what was asked (@asked, @role) set. False when no task is left.
 */
bool slurm_tasks__settle(struct slurm_tasks *t, long jobid, int step, pid_t asked,
			 const char *role);
void slurm_tasks__free(struct slurm_tasks *t);
/*
 * The names of job @jobid's nodes, in Slurm's order (a step of one task per node puts task K on
 * the K-th): *@names (malloc'ed, each too), *@n of them. -errno with @why.
 */
int slurm_tasks__nodes(long jobid, char ***names, int *n, char *why, size_t whylen);

/*
 * slurm:JOBID[.STEP]'s id (@spec after "slurm:") into @jobid and @step (-1 none). 0, or
 * -EINVAL after one line naming it (@cmd's).
 */
int slurm_tasks__parse(const char *cmd, const char *spec, long *jobid, int *step);
/* dlscope's own file, which srun runs on every node (at the same path there). 0, or -errno
 * with @why. */
int slurm_tasks__self(char *buf, size_t len, char *why, size_t whylen);

/*
 * Whether @pid is Slurm's to answer: srun, a batch script, or a task slurmstepd started (not a
 * rank of mpirun or torchrun inside a task). 1 with its job, step and @role ("srun of step
 * 12.0"); 0 when it is not; -1 after one line naming why (@cmd's) when it cannot be told.
 */
int slurm_tasks__job_of(pid_t pid, const char *cmd, long *jobid, int *step, char *role,
			size_t rolelen);

/*
 * The node half's tasks: this node's tasks of @spec (JOBID[.STEP]), without the step that runs
 * the node half itself, into *@j; @node named as Slurm names this node. 0, -EINVAL when @spec
 * is no job id (said, with @cmd's name), or -ENOENT with @why (the node's document says it).
 */
int slurm_tasks__of_node(const char *cmd, const char *spec, struct job **j, char *node,
			 size_t nodelen, char *why, size_t whylen);
/* One task as the front end reads it: its identity, and @payload under @key (NULL: @err). */
json_t *slurm_tasks__task_json(const struct job_rank *t, const char *key, json_t *payload,
			       const char *err);
/*
 * The node half's one line: @tasks (stolen) of @j, or @why when @j is NULL; the members of
 * @extra (stolen, NULL none) added (a relay's "shared", "relays", "node_errors").
 */
void slurm_tasks__write_node(const char *cmd, const char *node, const struct job *j, json_t *tasks,
			     const char *why, json_t *extra);

#endif
