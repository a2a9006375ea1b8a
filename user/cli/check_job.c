// SPDX-License-Identifier: GPL-2.0
/*
 * check --job: each rank checked as check PID would, then the job detectors across the ranks.
 * Nothing is stopped. A job of this host is found from any member's PID (job.h); a Slurm job's
 * tasks are checked on their own nodes by `check --job-node` (slurm_tasks.h), each sending its
 * text, its process entry and its view for the job detectors, which run at the front end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_job.h"
#include "check_process.h"
#include "commands.h"
#include "detector.h"
#include "inspect.h"
#include "job.h"
#include "output.h"
#include "rank_view.h"
#include "runtimes.h"
#include "slurm_tasks.h"

/* The cross-rank diff in words, from the job detectors' JSON. */
/* A JSON array of ranks as "0-2,4". */
static void ranks_text(const json_t *ranks, char *buf, size_t len)
{
	int r[1024];
	size_t n = 0, k;
	const json_t *v;

	json_array_foreach (ranks, k, v)
		if (n < 1024)
			r[n++] = (int)json_integer_value(v);
	job__format_ranks(r, n, buf, len);
}

static void print_job_diff(const json_t *diff, size_t n_ranks)
{
	const json_t *objs = json_object_get(diff, "objects"),
		     *env = json_object_get(diff, "environment"),
		     *cpus = json_object_get(diff, "cpus"), *x;
	size_t i;

	printf("\nacross the %zu ranks:\n", n_ranks);
	/* A detector left out by --only says nothing, not "the same". */
	if (objs && !json_array_size(objs))
		printf("  objects: the same in every rank\n");
	else if (objs)
		printf("  objects not in every rank:\n");
	json_array_foreach (objs, i, x) {
		const char *bid = json_string_value(json_object_get(x, "build_id"));
		const char *label = json_string_value(json_object_get(x, "label"));
		char in[256], notin[256];

		ranks_text(json_object_get(x, "ranks"), in, sizeof(in));
		ranks_text(json_object_get(x, "missing_in"), notin, sizeof(notin));
		printf("    %s (%s, build-id %.12s): in rank%s %s, not in rank%s %s\n",
		       json_string_value(json_object_get(x, "path")),
		       label ? label : "version unknown", bid ? bid : "none",
		       strpbrk(in, ",-") ? "s" : "", in, strpbrk(notin, ",-") ? "s" : "", notin);
	}
	if (env && !json_array_size(env))
		printf("  environment (*_NUM_THREADS, LD_*, NCCL_*, CUDA_VISIBLE_DEVICES): the same in every rank\n");
	json_array_foreach (env, i, x) {
		const json_t *v;
		size_t k;

		printf("  %s:", json_string_value(json_object_get(x, "name")));
		json_array_foreach (json_object_get(x, "values"), k, v) {
			const char *val = json_string_value(json_object_get(v, "value"));
			char rtext[256];

			ranks_text(json_object_get(v, "ranks"), rtext, sizeof(rtext));
			printf("%s %s%s%s in rank%s %s", k ? ";" : "", val ? "\"" : "",
			       val ? val : "unset", val ? "\"" : "",
			       json_array_size(json_object_get(v, "ranks")) == 1 ? "" : "s", rtext);
		}
		putchar('\n');
	}
	json_array_foreach (json_object_get(cpus, "nodes"), i, x) {
		const char *node = json_string_value(json_object_get(x, "node")) ?: "";
		json_int_t ncpu = json_integer_value(json_object_get(x, "cpus"));

		printf("  CPUs%s%s: the ranks may use %lld CPU%s and run %lld threads (main and pool "
		       "threads)\n",
		       node[0] ? " on " : "", node, (long long)ncpu, ncpu == 1 ? "" : "s",
		       (long long)json_integer_value(json_object_get(x, "threads")));
	}
}

/*
 * Rank @i of @j checked as check PID would, its view (@rv) filled for the job detectors. False
 * when it could not be.
 */
static bool check_rank(const struct job *j, size_t i, const struct check_opts *o,
		       struct findings *fs, json_t *procs, struct rank_view *rv, const void *arg)
{
	struct runtime_list rt = { 0 };
	struct inspection *in;
	pid_t rp = j->ranks[i].pid;
	char why[512];
	bool ok;

	*rv = (struct rank_view){ .rank = j->ranks[i].rank, .pid = rp, .comm = j->ranks[i].comm };
	if (!o->json)
		printf("\nrank %d, ", j->ranks[i].rank);
	if (inspection__new(rp, &in, why, sizeof(why))) {
		if (!o->json)
			printf("process %d: could not be inspected\n", rp);
		dls_err("check --job: rank %d: %s", j->ranks[i].rank, why);
		return false;
	}
	ok = !check__process(in, o, fs, procs, procs ? NULL : stdout, &rt);
	if (ok && procs)
		json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "rank",
				    json_integer(j->ranks[i].rank));
	if (ok && rank_view__fill(rv, in->g, &rt)) {
		dls_err("check --job: rank %d: out of memory", j->ranks[i].rank);
		rank_view__free(rv);
		ok = false;
	}
	runtimes__free(&rt);
	inspection__free(in);
	return ok;
}

/* The job detectors across the ranks of @rv, into @jfs and @diff; then said. */
static void compare_ranks(const struct job *j, const struct rank_view *rv,
			  const struct check_opts *o, struct findings *jfs, json_t *doc)
{
	json_t *diff = json_object();
	char name[64];
	struct job_ctx ctx = {
		.launcher = j->launcher, .name = name, .r = rv, .n = j->n, .diff = diff
	};

	if (j->slurm_job > 0)
		snprintf(name, sizeof(name), "Slurm job %ld", j->slurm_job);
	else
		snprintf(name, sizeof(name), "job %d", j->launcher);

	for (size_t d = 0; d < n_detectors; d++)
		if (detectors[d].job && check_opts__selected(o, detectors[d].id))
			detectors[d].job(&ctx, jfs);
	if (doc) {
		json_object_set_new(doc, "job", job__to_json(j));
		json_object_set(doc, "diff", diff);
		json_object_set_new(doc, "job_findings", findings__to_json(jfs));
	} else {
		print_job_diff(diff, j->n);
		if (jfs->n) {
			putchar('\n');
			findings__print(jfs, stdout);
		}
	}
	json_decref(diff);
}

/* One rank of @j checked, said, and its view into @rv; false when it could not be. */
typedef bool (*rank_checker)(const struct job *j, size_t i, const struct check_opts *o,
			     struct findings *fs, json_t *procs, struct rank_view *rv,
			     const void *arg);

/* The job's line: its launcher here, or its Slurm id and nodes. */
static void print_job_line(const struct job *j)
{
	char desc[128];

	job__describe_ranks(j, desc, sizeof(desc));
	if (j->slurm_job > 0)
		printf("Slurm job %ld step %d (%s): %s on %s", j->slurm_job, j->slurm_step,
		       job_scheme__name(j->scheme), desc, j->nodes);
	else
		printf("%s job: launcher %d (%s: %s), %s", job_scheme__name(j->scheme), j->launcher,
		       j->launcher_comm, j->launcher_cmd, desc);
	if (j->asked > 0)
		printf("; %d is %s", j->asked, j->asked_role);
	putchar('\n');
}

/* Every rank of @j checked by @one, then the job detectors across them. True when a rank
 * could not be checked. */
static bool check_ranks(const struct job *j, rank_checker one, const void *arg,
			const struct check_opts *o, struct findings *fs, struct findings *jfs,
			json_t *doc)
{
	json_t *procs = doc ? json_object_get(doc, "processes") : NULL;
	struct rank_view *rv = calloc(j->n ? j->n : 1, sizeof(*rv));
	bool failed = false;

	if (!rv) {
		dls_err("check --job: out of memory");
		return true;
	}
	if (!o->json)
		print_job_line(j);
	for (size_t i = 0; i < j->n; i++)
		if (!one(j, i, o, fs, procs, &rv[i], arg))
			failed = true;
	compare_ranks(j, rv, o, jfs, doc);
	for (size_t i = 0; i < j->n; i++)
		rank_view__free(&rv[i]);
	free(rv);
	return failed;
}

/*
 * One task of a Slurm job checked where it runs: {"text", "process", "view"}, its findings
 * counted in neither (the front end takes them from "process"). NULL with @why.
 */
static json_t *check_task(const struct job_rank *r, const struct check_opts *o, char *why,
			  size_t whylen)
{
	struct rank_view rv = { .rank = r->rank, .pid = r->pid, .comm = r->comm };
	struct runtime_list rt = { 0 };
	struct findings fs = { 0 };
	struct inspection *in;
	json_t *procs, *out = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (inspection__new(r->pid, &in, why, whylen))
		return NULL;
	procs = json_array();
	f = open_memstream(&text, &len);
	if (!f || !procs) {
		snprintf(why, whylen, "out of memory");
	} else if (check__process(in, o, &fs, procs, f, &rt)) {
		snprintf(why, whylen, "process %d could not be read (the node's errors say why)",
			 r->pid);
	} else if (!json_array_size(procs)) {
		snprintf(why, whylen, "process %d's entry could not be written as JSON", r->pid);
	} else if (rank_view__fill(&rv, in->g, &rt)) {
		snprintf(why, whylen, "out of memory");
	} else {
		fclose(f);
		f = NULL;
		out = json_pack("{s:s%, s:O, s:o}", "text", text, len, "process",
				json_array_get(procs, 0), "view", rank_view__to_json(&rv));
		if (!out)
			snprintf(why, whylen, "out of memory");
	}
	if (f)
		fclose(f);
	free(text);
	json_decref(procs);
	rank_view__free(&rv);
	runtimes__free(&rt);
	findings__free(&fs);
	inspection__free(in);
	return out;
}

int check_job__node(const char *spec, const struct check_opts *o)
{
	char node[256], why[512];
	struct job *j = NULL;
	json_t *tasks = json_array();
	int err = slurm_tasks__of_node("check", spec, &j, node, sizeof(node), why, sizeof(why));

	if (err == -EINVAL) {
		json_decref(tasks);
		return DLS_EXIT_USAGE;
	}
	for (size_t i = 0; !err && i < j->n; i++) {
		char twhy[512] = "";
		json_t *chk = check_task(&j->ranks[i], o, twhy, sizeof(twhy));

		json_array_append_new(tasks,
				      slurm_tasks__task_json(&j->ranks[i], "check", chk, twhy));
	}
	slurm_tasks__write_node("check", node, err ? NULL : j, tasks, why, NULL);
	job__free(j);
	return DLS_EXIT_OK;
}

/*
 * The big values of a task's check, the same in most ranks of a job (its objects, its
 * runtimes), folded into @f (slurm_fold_fn).
 */
static int fold_check(json_t *task, struct jsonfold *f, const json_t *in, const void *arg)
{
	json_t *chk = json_object_get(task, "check");
	json_t *view = json_object_get(chk, "view"), *proc = json_object_get(chk, "process");

	if (!json_is_object(chk))
		return 0;
	return jsonfold__member(f, view, "objects", in) ||
			       jsonfold__member(f, view, "runtimes", in) ||
			       jsonfold__member(f, proc, "runtimes", in) ?
		       -ENOMEM :
		       0;
}

int check_job__relay(const char *value, const struct check_opts *o)
{
	char *args[] = { o->only ? "--only" : NULL, (char *)o->only, NULL };

	return slurm_tasks__relay("check", value, args, fold_check, o);
}

/*
 * The checks of @t's tasks that came through relays given back their folded values; one whose
 * relay's table lacks one is sent no more (its rank said unchecked). 0, or -ENOMEM.
 */
static int unfold_relayed(struct slurm_tasks *t)
{
	for (size_t i = 0; i < t->j->n; i++) {
		const json_t *table = slurm_tasks__table(t->task[i]);
		json_t *chk = json_object_get(t->task[i], "check");
		json_t *view = json_object_get(chk, "view"),
		       *proc = json_object_get(chk, "process");
		int err;

		if (!table)
			continue;
		err = jsonfold__unfold_member(view, "objects", table);
		err = err ?: jsonfold__unfold_member(view, "runtimes", table);
		err = err ?: jsonfold__unfold_member(proc, "runtimes", table);
		if (err == -ENOMEM)
			return err;
		if (err)
			json_object_set_new(t->task[i], "check", json_null());
		json_object_del(t->task[i], "shared");
	}
	return 0;
}

/* A rank's findings as its node sent them, counted in @fs for the exit status. */
static void count_findings(const json_t *proc, pid_t pid, struct findings *fs)
{
	const json_t *f;
	size_t i;

	json_array_foreach (json_object_get(proc, "findings"), i, f) {
		const char *sev_name = json_string_value(json_object_get(f, "severity"));
		const char *id = json_string_value(json_object_get(f, "id")) ?: "";
		const char *known = "other"; /* a finding keeps its id's pointer: a lasting one */
		int sev = sev_name ? severity__parse(sev_name) : -EINVAL;

		for (size_t d = 0; d < n_detectors; d++)
			if (!strcmp(detectors[d].id, id))
				known = detectors[d].id;
		/* One of a newer node's severities counts as the gravest. */
		findings__add(fs, known, sev < 0 ? SEV_ERROR : sev, pid, "%s",
			      json_string_value(json_object_get(f, "title")) ?: "");
	}
}

/* Rank @i of @t as its node checked it: said, and its view into @rv. False when it was not. */
static bool take_task(const struct job *j, size_t i, const struct check_opts *o,
		      struct findings *fs, json_t *procs, struct rank_view *rv, const void *arg)
{
	const struct slurm_tasks *t = arg;
	const struct job_rank *r = &j->ranks[i];
	const json_t *chk = json_object_get(t->task[i], "check");
	const char *err = json_string_value(json_object_get(t->task[i], "error"));
	json_t *proc;

	*rv = (struct rank_view){ .rank = r->rank, .pid = r->pid, .comm = r->comm, .node = r->node };
	if (!o->json)
		printf("\nrank %d%s%s, ", r->rank, r->node[0] ? " on " : "", r->node);
	if (!json_is_object(chk) || rank_view__from_json(rv, json_object_get(chk, "view"))) {
		if (!o->json)
			printf("process %d: could not be inspected\n", r->pid);
		dls_err("check --job: rank %d%s%s: %s", r->rank, r->node[0] ? " on " : "", r->node,
			err ? err : "its node sent no check of it");
		return false;
	}
	if (!o->json)
		fputs(json_string_value(json_object_get(chk, "text")) ?: "\n", stdout);
	proc = json_deep_copy(json_object_get(chk, "process"));
	count_findings(proc, r->pid, fs);
	if (procs && proc) {
		json_object_set_new(proc, "rank", json_integer(r->rank));
		json_object_set_new(proc, "node", json_string(r->node));
		json_array_append(procs, proc);
	}
	json_decref(proc);
	return true;
}

/* This host's tasks (@t's) checked here, each as the document a node would have sent. */
static void check_here(struct slurm_tasks *t, const void *arg)
{
	char why[512];

	for (size_t i = 0; i < t->j->n; i++) {
		json_t *chk = check_task(&t->j->ranks[i], arg, why, sizeof(why));

		t->task[i] = slurm_tasks__task_json(&t->j->ranks[i], "check", chk, why);
	}
}

/* Job @jobid's step @step (-1: its main one) checked on its nodes. True when not all was. */
static bool check_slurm_job(long jobid, int step, pid_t asked, const char *role,
			    const struct check_opts *o, struct findings *fs, struct findings *jfs,
			    json_t *doc)
{
	struct slurm_tasks t = { 0 };
	char *args[] = { o->only ? "--only" : NULL, (char *)o->only, NULL };
	bool failed = true;

	if (slurm_tasks__gather(jobid, step, "check", args, o->fanout, check_here, o, asked, role,
				&t)) {
		/* said */
	} else if (unfold_relayed(&t)) {
		dls_err("check --job: out of memory");
	} else {
		failed = check_ranks(t.j, take_task, &t, o, fs, jfs, doc) || t.node_errors;
		json_t *fan_in = doc ? slurm_tasks__fan_in(&t, o->fanout) : NULL;

		if (fan_in)
			json_object_set_new(doc, "fan_in", fan_in);
	}
	slurm_tasks__free(&t);
	return failed;
}

bool check_job__slurm(const char *spec, const struct check_opts *o, struct findings *fs,
		      struct findings *jfs, json_t *doc, bool *usage)
{
	long jobid;
	int step;

	if (slurm_tasks__parse("check", spec, &jobid, &step)) {
		*usage = true;
		return true;
	}
	return check_slurm_job(jobid, step, 0, "", o, fs, jfs, doc);
}

bool check_job__pid(pid_t pid, const struct check_opts *o, struct findings *fs,
		    struct findings *jfs, json_t *doc)
{
	struct job *j = NULL;
	char why[512], role[48];
	long jobid;
	int step, slurm = slurm_tasks__job_of(pid, "check", &jobid, &step, role, sizeof(role));
	bool failed;

	if (slurm < 0)
		return true;
	if (slurm)
		return check_slurm_job(jobid, step, pid, role, o, fs, jfs, doc);
	if (job__find(pid, &j, why, sizeof(why))) {
		dls_err("check --job: %s", why);
		return true;
	}
	failed = check_ranks(j, check_rank, NULL, o, fs, jfs, doc);
	job__free(j);
	return failed;
}
