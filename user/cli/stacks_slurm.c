// SPDX-License-Identifier: GPL-2.0
/*
 * stacks --job on a Slurm job, from a login node or any node: by its id (slurm:JOBID[.STEP]),
 * srun's PID, the batch script's or a task's. Each node's tasks are read on that node by
 * `dlscope stacks --job-node` (slurm_tasks.h), each task's document holding its stacks; the
 * front end merges them as stacks --job merges one host's ranks. A step on this host alone is
 * read here, without srun.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "job.h"
#include "output.h"
#include "slurm_tasks.h"
#include "stacks_job.h"

/* @n ranks' stacks and errors, and the arrays that held them. */
static void reads_free(struct rank_stacks *rs, char **errs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (rs)
			json_decref(rs[i].doc);
		if (errs)
			free(errs[i]);
	}
	free(rs);
	free(errs);
}

/* This host's tasks (@t's) read here, each as the document a node would have sent. */
static void read_here(struct slurm_tasks *t, const void *arg)
{
	const struct stacks_job_opts *o = arg;
	struct rank_stacks *rs = calloc(t->j->n ? t->j->n : 1, sizeof(*rs));
	char **errs = calloc(t->j->n ? t->j->n : 1, sizeof(*errs));

	if (rs && errs)
		stacks_job__read(t->j, rs, errs, o);
	for (size_t i = 0; i < t->j->n; i++) {
		t->task[i] = slurm_tasks__task_json(&t->j->ranks[i], "stacks",
						    rs ? rs[i].doc : NULL,
						    errs && errs[i] ? errs[i] : "out of memory");
		if (errs)
			free(errs[i]);
	}
	free(rs);
	free(errs);
}

/* A task's stacks folded into @f (slurm_fold_fn); @arg: the options. */
static int fold_stacks(json_t *task, struct jsonfold *f, const json_t *in, const void *arg)
{
	const struct stacks_job_opts *o = arg;
	json_t *doc = json_object_get(task, "stacks");

	return json_is_object(doc) ? stackmerge__fold(f, doc, in, o->python_only) : 0;
}

/* The stacks of @t's tasks that came through relays, folded into @f (the merge's table). */
static int fold_relayed(struct slurm_tasks *t, struct jsonfold *f, const struct stacks_job_opts *o)
{
	for (size_t i = 0; i < t->j->n; i++) {
		const json_t *table = slurm_tasks__table(t->task[i]);

		if (table && fold_stacks(t->task[i], f, table, o))
			return -ENOMEM;
		json_object_del(t->task[i], "shared");
	}
	return 0;
}

/* The arguments of the node halves and relays below this reader: @o's, NULL-ended. */
struct node_args {
	char frames[16];
	char *argv[8];
};

static void node_args(struct node_args *a, const struct stacks_job_opts *o)
{
	size_t n = 0;

	snprintf(a->frames, sizeof(a->frames), "%u", o->max_frames);
	a->argv[n++] = "--max-frames";
	a->argv[n++] = a->frames;
	if (o->python_only)
		a->argv[n++] = "--python";
	a->argv[n] = NULL;
}

/* Job @jobid's step @step (-1: its main one) read on its nodes, merged and said. */
static int slurm_job(long jobid, int step, pid_t asked, const char *role,
		     const struct stacks_job_opts *o)
{
	struct slurm_tasks t = { 0 };
	struct rank_stacks *rs = NULL;
	struct jsonfold f = { 0 };
	struct node_args a;
	struct timespec t0;
	json_t *fan_in = NULL;
	char **errs = NULL;
	int ret = DLS_EXIT_INSPECT;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	node_args(&a, o);
	if (slurm_tasks__gather(jobid, step, "stacks", a.argv, o->fanout, read_here, o, asked, role,
				&t))
		goto out;
	rs = calloc(t.j->n, sizeof(*rs));
	errs = calloc(t.j->n, sizeof(*errs));
	if (!rs || !errs || jsonfold__init(&f) || fold_relayed(&t, &f, o)) {
		dls_err("stacks --job: out of memory");
		goto out;
	}
	for (size_t i = 0; i < t.j->n; i++) {
		const json_t *doc = json_object_get(t.task[i], "stacks");
		const char *e = json_string_value(json_object_get(t.task[i], "error"));

		rs[i] = (struct rank_stacks){ .rank = t.j->ranks[i].rank,
					      .pid = t.j->ranks[i].pid };
		if (json_is_object(doc))
			rs[i].doc = json_incref((json_t *)doc);
		else
			rs[i].error = errs[i] = strdup(e ? e : "no stacks came back");
	}
	fan_in = slurm_tasks__fan_in(&t, o->fanout);
	ret = stacks_job__report(t.j, rs, errs, f.values, fan_in, o, stacks_job__ms_since(&t0));
	if (t.node_errors && ret != DLS_EXIT_FINDINGS)
		ret = DLS_EXIT_INSPECT;
out:
	json_decref(fan_in);
	jsonfold__free(&f);
	reads_free(rs, errs, t.j ? t.j->n : 0);
	slurm_tasks__free(&t);
	return ret;
}

int stacks_slurm__job(const char *spec, const struct stacks_job_opts *o)
{
	long jobid;
	int step;

	if (slurm_tasks__parse("stacks", spec, &jobid, &step)) {
		return DLS_EXIT_USAGE;
	}
	return slurm_job(jobid, step, 0, "", o);
}

bool stacks_slurm__owns(pid_t pid, const struct stacks_job_opts *o, int *ret)
{
	char role[48];
	long jobid;
	int step, mine = slurm_tasks__job_of(pid, "stacks", &jobid, &step, role, sizeof(role));

	if (mine < 0)
		*ret = DLS_EXIT_INSPECT;
	else if (mine)
		*ret = slurm_job(jobid, step, pid, role, o);
	return mine != 0;
}

int stacks_slurm__node(const char *spec, const struct stacks_job_opts *o)
{
	struct rank_stacks *rs = NULL;
	char node[256], why[512], **errs = NULL;
	struct job *j = NULL;
	json_t *tasks = json_array();
	int err = slurm_tasks__of_node("stacks", spec, &j, node, sizeof(node), why, sizeof(why));

	if (err == -EINVAL) {
		json_decref(tasks);
		return DLS_EXIT_USAGE;
	}
	if (!err) {
		rs = calloc(j->n ? j->n : 1, sizeof(*rs));
		errs = calloc(j->n ? j->n : 1, sizeof(*errs));
		if (rs && errs)
			stacks_job__read(j, rs, errs, o);
		for (size_t i = 0; i < j->n; i++)
			json_array_append_new(tasks,
					      slurm_tasks__task_json(
						      &j->ranks[i], "stacks",
						      rs ? json_incref(rs[i].doc) : NULL,
						      errs && errs[i] ? errs[i] : "out of memory"));
	}
	slurm_tasks__write_node("stacks", node, err ? NULL : j, tasks, why, NULL);
	reads_free(rs, errs, j ? j->n : 0);
	job__free(j);
	return DLS_EXIT_OK;
}

int stacks_slurm__relay(const char *value, const struct stacks_job_opts *o)
{
	struct node_args a;

	node_args(&a, o);
	return slurm_tasks__relay("stacks", value, a.argv, fold_stacks, o);
}
