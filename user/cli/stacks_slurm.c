// SPDX-License-Identifier: GPL-2.0
/*
 * stacks --job on a Slurm job, from a login node or any node: by its id (slurm:JOBID[.STEP]),
 * srun's PID, the batch script's or a task's. Each node's tasks are read on that node: one
 * `dlscope stacks --job-node` per node, started by `srun --jobid --overlap --ntasks-per-node=1`
 * (a step beside the job's, on its nodes, taking none of its resources), writes one JSON line
 * of its ranks' stacks; the front end merges them as stacks --job merges one host's ranks. A
 * step on this host alone is read here, without srun.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "commands.h"
#include "job.h"
#include "output.h"
#include "procfs.h"
#include "runprog.h"
#include "stacks_job.h"

/* Ranks read, from any number of nodes, and what could not be read (node by node). */
struct slurm_read {
	struct job *j;
	struct rank_stacks *rs;
	char **errs;
	size_t cap;
	char *node_errors; /* "n2: why; n3: why" */
};

static void read_free(struct slurm_read *r)
{
	for (size_t i = 0; r->j && i < r->j->n; i++) {
		json_decref(r->rs[i].doc);
		free(r->errs[i]);
	}
	free(r->rs);
	free(r->errs);
	free(r->node_errors);
	job__free(r->j);
}

/* Room for one more rank in @r. 0 or -ENOMEM. */
static int read_grow(struct slurm_read *r)
{
	struct job *j = r->j;
	size_t cap = r->cap;

	if (j->n < r->cap)
		return 0;
	if (ARRAY_GROW(j->ranks, cap, 16))
		return -ENOMEM;
	cap = r->cap;
	if (ARRAY_GROW(r->rs, cap, 16))
		return -ENOMEM;
	cap = r->cap;
	if (ARRAY_GROW(r->errs, cap, 16))
		return -ENOMEM;
	r->cap = cap;
	return 0;
}

static void node_error(struct slurm_read *r, const char *node, const char *why)
{
	char *prev = r->node_errors;

	if (asprintf(&r->node_errors, "%s%s%s: %s", prev ? prev : "", prev ? "; " : "", node, why) <
	    0)
		r->node_errors = prev;
	else
		free(prev);
}

/* The node as Slurm names it: SLURMD_NODENAME inside a step, else the host's short name. */
static void node_name(char *buf, size_t len)
{
	const char *n = getenv("SLURMD_NODENAME");

	if (n && *n) {
		snprintf(buf, len, "%s", n);
		return;
	}
	if (gethostname(buf, len))
		snprintf(buf, len, "?");
	buf[len - 1] = '\0';
	buf[strcspn(buf, ".")] = '\0';
}

/*
 * Keep the ranks of one step: @step, or the one with most ranks (the job's main step; ties:
 * the first). Returns the step kept.
 */
static int keep_one_step(struct slurm_read *r, int step)
{
	struct job *j = r->j;
	size_t kept = 0, best_n = 0;
	int best = step;

	for (size_t i = 0; step < 0 && i < j->n; i++) {
		size_t n = 0;

		for (size_t k = 0; k < j->n; k++)
			n += j->ranks[k].step == j->ranks[i].step;
		if (n > best_n || (n == best_n && j->ranks[i].step < best)) {
			best_n = n;
			best = j->ranks[i].step;
		}
	}
	step = best;
	for (size_t i = 0; i < j->n; i++) {
		if (j->ranks[i].step != step) {
			json_decref(r->rs[i].doc);
			free(r->errs[i]);
			continue;
		}
		j->ranks[kept] = j->ranks[i];
		r->rs[kept] = r->rs[i];
		r->errs[kept++] = r->errs[i];
	}
	j->n = kept;
	return step;
}

static int cmp_by_rank(const void *a, const void *b)
{
	const struct job_rank *x = a, *y = b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Ranks in rank order (they came node by node): the three arrays sorted alike. */
static void sort_ranks(struct slurm_read *r)
{
	struct job *j = r->j;

	for (size_t i = 1; i < j->n; i++)
		for (size_t k = i; k > 0 && cmp_by_rank(&j->ranks[k - 1], &j->ranks[k]) > 0; k--) {
			struct job_rank t = j->ranks[k];
			struct rank_stacks s = r->rs[k];
			char *e = r->errs[k];

			j->ranks[k] = j->ranks[k - 1];
			r->rs[k] = r->rs[k - 1];
			r->errs[k] = r->errs[k - 1];
			j->ranks[k - 1] = t;
			r->rs[k - 1] = s;
			r->errs[k - 1] = e;
		}
	for (size_t i = 0; i < j->n; i++)
		r->rs[i].error = r->errs[i];
}

/* The names of the nodes ranks were read on, "n1,n2", into @j->nodes. */
static void name_nodes(struct job *j)
{
	size_t off = 0;

	j->nodes[0] = '\0';
	for (size_t i = 0; i < j->n; i++) {
		bool seen = false;

		for (size_t k = 0; k < i && !seen; k++)
			seen = !strcmp(j->ranks[k].node, j->ranks[i].node);
		if (seen || !j->ranks[i].node[0] || off >= sizeof(j->nodes))
			continue;
		off += (size_t)snprintf(j->nodes + off, sizeof(j->nodes) - off, "%s%s",
					off ? "," : "", j->ranks[i].node);
	}
	if (!j->nodes[0])
		snprintf(j->nodes, sizeof(j->nodes), "this host");
}

/* The tasks of one node document into @r: their stacks, or why each could not be read. */
static int take_node_doc(struct slurm_read *r, const json_t *doc)
{
	const char *node = json_string_value(json_object_get(doc, "node")) ?: "?";
	const json_t *t;
	size_t i;

	if (json_is_string(json_object_get(doc, "error")))
		node_error(r, node, json_string_value(json_object_get(doc, "error")));
	if (json_integer_value(json_object_get(doc, "world_size")) > r->j->world_size) {
		r->j->world_size = (int)json_integer_value(json_object_get(doc, "world_size"));
		r->j->world_var =
			job__world_var(json_string_value(json_object_get(doc, "world_var")));
	}
	json_array_foreach (json_object_get(doc, "tasks"), i, t) {
		struct job_rank *jr;
		const char *err = json_string_value(json_object_get(t, "error"));

		if (read_grow(r))
			return -ENOMEM;
		jr = &r->j->ranks[r->j->n];
		*jr = (struct job_rank){
			.pid = (pid_t)json_integer_value(json_object_get(t, "pid")),
			.rank = (int)json_integer_value(json_object_get(t, "rank")),
			.local_rank =
				json_is_integer(json_object_get(t, "local_rank")) ?
					(int)json_integer_value(json_object_get(t, "local_rank")) :
					-1,
			.step = (int)json_integer_value(json_object_get(t, "step")),
		};
		snprintf(jr->node, sizeof(jr->node), "%s", node);
		snprintf(jr->comm, sizeof(jr->comm), "%s",
			 json_string_value(json_object_get(t, "comm")) ?: "?");
		r->rs[r->j->n] = (struct rank_stacks){ .rank = jr->rank, .pid = jr->pid };
		r->errs[r->j->n] = NULL;
		if (json_is_object(json_object_get(t, "stacks")))
			r->rs[r->j->n].doc = json_incref(json_object_get(t, "stacks"));
		else
			r->errs[r->j->n] = strdup(err ? err : "no stacks came back");
		if (r->j->scheme == JOB_SCHEME_NONE || !r->j->n) {
			const char *s = json_string_value(json_object_get(doc, "scheme")) ?: "";

			for (int k = 0; k < JOB_SCHEME_NONE; k++)
				if (!strcmp(s, job_scheme__name(k)))
					r->j->scheme = k;
		}
		r->j->n++;
	}
	return 0;
}

/* The number of nodes of job @jobid, from squeue's JSON. -errno with @why. */
static int job_nodes(long jobid, int *nodes, char *why, size_t whylen)
{
	char id[32], *out;
	char *argv[] = { "squeue", "--json", "--jobs", id, NULL };
	const json_t *job = NULL, *x;
	json_error_t jerr;
	json_t *doc;
	size_t i;
	int status;

	snprintf(id, sizeof(id), "%ld", jobid);
	out = runprog__capture(NULL, argv, false, NULL, &status);
	if (!out) {
		snprintf(why, whylen, "cannot run squeue: %s", strerror(errno));
		return -ENOENT;
	}
	doc = json_loads(out, 0, &jerr);
	free(out);
	/* squeue 22.05 gives every job with --json, whatever --jobs asks. */
	json_array_foreach (json_object_get(doc, "jobs"), i, x)
		if (json_integer_value(json_object_get(x, "job_id")) == jobid)
			job = x;
	if (!job || strcmp(json_string_value(json_object_get(job, "job_state")) ?: "", "RUNNING")) {
		snprintf(why, whylen, "Slurm job %ld is %s", jobid,
			 !doc ? "not known (squeue gave no JSON)" :
			 job  ? json_string_value(json_object_get(job, "job_state")) ?:
										       "not running" :
				"not known to squeue");
		json_decref(doc);
		return -ENOENT;
	}
	*nodes = (int)json_integer_value(json_object_get(job, "node_count"));
	json_decref(doc);
	if (*nodes <= 0) {
		snprintf(why, whylen, "squeue gives Slurm job %ld no nodes", jobid);
		return -ENOENT;
	}
	return 0;
}

/*
 * Every node's tasks, through srun: one `stacks --job-node` per node, its JSON lines parsed
 * one document after another. -errno with @why when nothing came back.
 */
static int fan_out(long jobid, int step, const struct stacks_job_opts *o, struct slurm_read *r,
		   char *why, size_t whylen)
{
	char self[PATH_MAX], idarg[48], nodesarg[32], spec[48], frames[16], *out;
	char *argv[24];
	struct {
		FILE *f;
		char *text;
		size_t len;
	} * bufs;
	size_t n = 0, len = 0;
	ssize_t sl;
	int nodes, status, err, docs = 0;

	err = job_nodes(jobid, &nodes, why, whylen);
	if (err)
		return err;
	sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0) {
		snprintf(why, whylen, "cannot find dlscope's own file: %s", strerror(errno));
		return -ENOENT;
	}
	self[sl] = '\0';
	snprintf(idarg, sizeof(idarg), "--jobid=%ld", jobid);
	snprintf(nodesarg, sizeof(nodesarg), "--nodes=%d", nodes);
	if (step >= 0)
		snprintf(spec, sizeof(spec), "%ld.%d", jobid, step);
	else
		snprintf(spec, sizeof(spec), "%ld", jobid);
	snprintf(frames, sizeof(frames), "%u", o->max_frames);
	/* A step of its own beside the job's: on every node once, sharing the job's CPUs
	 * (--overlap), no MPI set-up, and no node's failure killing the others' reads. */
	char *fixed[] = { "srun",	  idarg,
			  "--overlap",	  "--ntasks-per-node=1",
			  nodesarg,	  "--mpi=none",
			  "--input=none", "--label",
			  "--quiet",	  "--kill-on-bad-exit=0",
			  self,		  "stacks",
			  "--job-node",	  spec,
			  "--max-frames", frames };

	for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++)
		argv[n++] = fixed[k];
	if (o->python_only)
		argv[n++] = "--python";
	argv[n] = NULL;
	out = runprog__capture(NULL, argv, true, &len, &status);
	if (!out) {
		snprintf(why, whylen, "cannot run srun: %s", strerror(errno));
		return -ENOENT;
	}
	/*
	 * "N: " before each piece of task N's output: srun cuts a long line into pieces of its
	 * buffer's size, each labelled and ended by a newline, and the pieces of two tasks
	 * interleave. A compact JSON document has no newline of its own: each task's pieces,
	 * joined without their newlines, are its document.
	 */
	bufs = calloc((size_t)nodes, sizeof(*bufs));
	for (char *line = out, *next; bufs && line < out + len; line = next) {
		char *colon, *end;
		long task;

		next = memchr(line, '\n', (size_t)(out + len - line));
		next = next ? next + 1 : out + len;
		task = strtol(line, &end, 10);
		colon = end;
		if (end == line || *colon != ':' || task < 0 || task >= nodes)
			continue; /* not a labelled line: srun's own words */
		colon += colon[1] == ' ' ? 2 : 1;
		if (!bufs[task].f)
			bufs[task].f = open_memstream(&bufs[task].text, &bufs[task].len);
		if (bufs[task].f)
			fwrite(colon, 1, (size_t)(next - colon) - (next[-1] == '\n'), bufs[task].f);
	}
	for (int t = 0; bufs && t < nodes; t++) {
		json_error_t jerr;
		json_t *doc;

		if (!bufs[t].f)
			continue;
		fclose(bufs[t].f);
		doc = json_loadb(bufs[t].text, bufs[t].len, 0, &jerr);
		free(bufs[t].text);
		if (!doc)
			continue;
		docs++;
		if (!err)
			err = take_node_doc(r, doc);
		json_decref(doc);
	}
	free(bufs);
	if (err) {
		free(out);
		snprintf(why, whylen, "out of memory");
		return err;
	}
	free(out);
	if (docs < nodes)
		node_error(r, "srun",
			   docs ? "some nodes gave no answer" : "no node gave an answer");
	if (!docs) {
		snprintf(why, whylen,
			 "srun %s on Slurm job %ld's %d node%s gave no answer (status %d)",
			 "--overlap", jobid, nodes, nodes == 1 ? "" : "s",
			 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		return -ENOENT;
	}
	return 0;
}

/* This host's tasks of a step that runs here alone, read here. -errno when there are none. */
static int read_here(long jobid, int step, const struct stacks_job_opts *o, struct slurm_read *r)
{
	char why[256];
	struct job *j;

	if (job__slurm_tasks(jobid, step, NULL, -1, &j, why, sizeof(why)))
		return -ENOENT;
	if (j->step_nodes != 1) {
		job__free(j);
		return -EXDEV;
	}
	r->rs = calloc(j->n, sizeof(*r->rs));
	r->errs = calloc(j->n, sizeof(*r->errs));
	r->j = j;
	r->cap = j->n;
	if (!r->rs || !r->errs)
		return -ENOMEM;
	stacks_job__read(j, r->rs, r->errs, o);
	return 0;
}

/* Job @jobid's step @step (-1: its main one) read on its nodes, merged and said. */
static int slurm_job(long jobid, int step, pid_t asked, const char *role,
		     const struct stacks_job_opts *o)
{
	struct slurm_read r = { 0 };
	struct timespec t0;
	char why[512];
	int err, ret = DLS_EXIT_INSPECT;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = read_here(jobid, step, o, &r);
	if (err == -EXDEV || err == -ENOENT) {
		r.j = calloc(1, sizeof(*r.j));
		if (!r.j) {
			dls_err("stacks --job: out of memory");
			return DLS_EXIT_INSPECT;
		}
		*r.j = (struct job){ .scheme = JOB_SCHEME_NONE, .world_size = -1 };
		err = fan_out(jobid, step, o, &r, why, sizeof(why));
		if (err) {
			dls_err("stacks --job: %s", why);
			goto out;
		}
	} else if (err) {
		dls_err("stacks --job: out of memory");
		goto out;
	}
	if (!r.j->n) {
		dls_err("stacks --job: Slurm job %ld has no task on its nodes%s%s", jobid,
			r.node_errors ? ": " : "", r.node_errors ? r.node_errors : "");
		goto out;
	}
	r.j->slurm_job = jobid;
	r.j->slurm_step = keep_one_step(&r, step);
	r.j->asked = asked;
	snprintf(r.j->asked_role, sizeof(r.j->asked_role), "%s", role);
	sort_ranks(&r);
	name_nodes(r.j);
	if (r.node_errors)
		dls_warn("stacks --job: not every node answered: %s", r.node_errors);
	ret = stacks_job__report(r.j, r.rs, r.errs, o, stacks_job__ms_since(&t0));
	if (r.node_errors && ret != DLS_EXIT_FINDINGS)
		ret = DLS_EXIT_INSPECT;
out:
	read_free(&r);
	return ret;
}

int stacks_slurm__job(const char *spec, const struct stacks_job_opts *o)
{
	long jobid;
	int step;

	if (job__parse_slurm_id(spec, &jobid, &step)) {
		dls_err("stacks --job: 'slurm:%s' is no Slurm job id (slurm:JOBID or "
			"slurm:JOBID.STEP)",
			spec);
		return DLS_EXIT_USAGE;
	}
	return slurm_job(jobid, step, 0, "", o);
}

bool stacks_slurm__owns(pid_t pid, const struct stacks_job_opts *o, int *ret)
{
	struct job_identity id;
	struct job *j = NULL;
	char comm[64] = "", why[512], role[48];
	long jobid;
	int step;

	if (proc__read_stat(pid, 0, comm, sizeof(comm), NULL, NULL))
		return false;
	if (!strcmp(comm, "srun")) {
		if (job__slurm_step_of_srun(pid, &jobid, &step)) {
			dls_err("stacks --job: srun %d runs no step that scontrol shows (is the job "
				"still starting, or is scontrol missing?)",
				pid);
			*ret = DLS_EXIT_INSPECT;
			return true;
		}
		snprintf(role, sizeof(role), "srun of step %ld.%d", jobid, step);
		*ret = slurm_job(jobid, step, pid, role, o);
		return true;
	}
	if (job__identity(pid, &id) || id.slurm_job <= 0)
		return false;
	/*
	 * A job of mpirun or torchrun inside the allocation (or a task) is theirs: its launcher is
	 * here, and so are its ranks. A rank under a wrapper shell climbs to slurmstepd.
	 */
	if (!job__find(pid, &j, why, sizeof(why)) && strcmp(j->launcher_comm, "slurmstepd")) {
		job__free(j);
		return false;
	}
	if (id.slurm_step < 0)
		snprintf(role, sizeof(role), "the batch script of job %ld", id.slurm_job);
	else if (j && j->asked == pid && strncmp(j->asked_role, "the launcher", 12))
		snprintf(role, sizeof(role), "%s", j->asked_role);
	else
		snprintf(role, sizeof(role), "in step %ld.%d", id.slurm_job, id.slurm_step);
	job__free(j);
	*ret = slurm_job(id.slurm_job, id.slurm_step, pid, role, o);
	return true;
}

/* One task of this node as the front end reads it. */
static json_t *task_json(const struct job_rank *t, json_t *doc, const char *err)
{
	return json_pack("{s:i, s:o, s:i, s:i, s:s, s:o, s:s?}", "rank", t->rank, "local_rank",
			 t->local_rank >= 0 ? json_integer(t->local_rank) : json_null(), "pid",
			 t->pid, "step", t->step, "comm", t->comm, "stacks",
			 doc ? json_incref(doc) : json_null(), "error", err);
}

int stacks_slurm__node(const char *spec, const struct stacks_job_opts *o)
{
	const char *own_job = getenv("SLURM_JOB_ID"), *own_step = getenv("SLURM_STEP_ID");
	const char *node = getenv("SLURMD_NODENAME");
	struct rank_stacks *rs = NULL;
	char name[256], why[512], **errs = NULL;
	struct job *j = NULL;
	json_t *doc, *tasks = json_array();
	long jobid;
	int step, own = -1;

	node_name(name, sizeof(name));
	if (job__parse_slurm_id(spec, &jobid, &step)) {
		dls_err("stacks --job-node: '%s' is no Slurm job id (JOBID or JOBID.STEP)", spec);
		return DLS_EXIT_USAGE;
	}
	/* Our own step (the one srun started for us) is no task of the job's to read. */
	if (own_job && own_step && atol(own_job) == jobid)
		own = atoi(own_step);
	if (job__slurm_tasks(jobid, step, node && *node ? node : NULL, own, &j, why, sizeof(why))) {
		doc = json_pack("{s:s, s:s, s:o}", "node", name, "error", why, "tasks", tasks);
	} else {
		rs = calloc(j->n, sizeof(*rs));
		errs = calloc(j->n, sizeof(*errs));
		if (rs && errs)
			stacks_job__read(j, rs, errs, o);
		for (size_t i = 0; i < j->n; i++)
			json_array_append_new(tasks, task_json(&j->ranks[i], rs ? rs[i].doc : NULL,
							       errs ? errs[i] : "out of memory"));
		doc = json_pack("{s:s, s:s, s:i, s:s?, s:o}", "node", name, "scheme",
				job_scheme__name(j->scheme), "world_size", j->world_size,
				"world_var", j->world_var, "tasks", tasks);
	}
	if (!doc || json_dumpf(doc, stdout, JSON_COMPACT) < 0)
		dls_err("stacks --job-node: cannot write the JSON document");
	putchar('\n');
	fflush(stdout);
	json_decref(doc);
	for (size_t i = 0; j && i < j->n; i++) {
		if (rs)
			json_decref(rs[i].doc);
		if (errs)
			free(errs[i]);
	}
	free(rs);
	free(errs);
	job__free(j);
	return DLS_EXIT_OK;
}
