// SPDX-License-Identifier: GPL-2.0
/* A Slurm job's tasks read on their own nodes and gathered into one job (slurm_tasks.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array.h"
#include "output.h"
#include "procfs.h"
#include "runprog.h"
#include "slurm_tasks.h"
#include "srun_io.h"

void slurm_tasks__free(struct slurm_tasks *t)
{
	for (size_t i = 0; t->j && t->task && i < t->j->n; i++)
		json_decref(t->task[i]);
	free(t->task);
	free(t->node_errors);
	job__free(t->j);
	*t = (struct slurm_tasks){ 0 };
}

/* Room for one more rank in @t. 0 or -ENOMEM. */
static int tasks_grow(struct slurm_tasks *t)
{
	struct job *j = t->j;
	size_t cap = t->cap;

	if (j->n < t->cap)
		return 0;
	if (ARRAY_GROW(j->ranks, cap, 16))
		return -ENOMEM;
	cap = t->cap;
	if (ARRAY_GROW(t->task, cap, 16))
		return -ENOMEM;
	t->cap = cap;
	return 0;
}

static void node_error(struct slurm_tasks *t, const char *node, const char *why)
{
	char *prev = t->node_errors;

	if (asprintf(&t->node_errors, "%s%s%s: %s", prev ? prev : "", prev ? "; " : "", node, why) <
	    0)
		t->node_errors = prev;
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

int slurm_tasks__parse(const char *cmd, const char *spec, long *jobid, int *step)
{
	if (!job__parse_slurm_id(spec, jobid, step))
		return 0;
	dls_err("%s --job: 'slurm:%s' is no Slurm job id (slurm:JOBID or slurm:JOBID.STEP)", cmd,
		spec);
	return -EINVAL;
}

int slurm_tasks__self(char *buf, size_t len, char *why, size_t whylen)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n <= 0) {
		snprintf(why, whylen, "cannot find dlscope's own file: %s", strerror(errno));
		return -ENOENT;
	}
	buf[n] = '\0';
	return 0;
}

int slurm_tasks__here(long jobid, int step, struct slurm_tasks *t)
{
	char why[256];
	struct job *j;

	const char *own_job = getenv("SLURM_JOB_ID"), *own_step = getenv("SLURM_STEP_ID");

	/* Run from a step of the job itself (an interactive srun --pty shell): not a task. */
	if (job__slurm_tasks(jobid, step, NULL,
			     own_job && own_step && atol(own_job) == jobid ? atoi(own_step) : -1,
			     &j, why, sizeof(why)))
		return -ENOENT;
	if (j->step_nodes != 1) {
		job__free(j);
		return -EXDEV;
	}
	t->j = j;
	t->cap = j->n;
	t->task = calloc(j->n ? j->n : 1, sizeof(*t->task));
	return t->task ? 0 : -ENOMEM;
}

/* Keep the ranks of one step: @step, or the one with most ranks (ties: the first). */
static int keep_one_step(struct slurm_tasks *t, int step)
{
	struct job *j = t->j;
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
			json_decref(t->task[i]);
			continue;
		}
		j->ranks[kept] = j->ranks[i];
		t->task[kept++] = t->task[i];
	}
	j->n = kept;
	return step;
}

/* Ranks in rank order (they came node by node): both arrays sorted alike. */
static void sort_ranks(struct slurm_tasks *t)
{
	struct job *j = t->j;

	for (size_t i = 1; i < j->n; i++)
		for (size_t k = i; k > 0 && j->ranks[k - 1].rank > j->ranks[k].rank; k--) {
			struct job_rank r = j->ranks[k];
			json_t *d = t->task[k];

			j->ranks[k] = j->ranks[k - 1];
			t->task[k] = t->task[k - 1];
			j->ranks[k - 1] = r;
			t->task[k - 1] = d;
		}
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

bool slurm_tasks__settle(struct slurm_tasks *t, long jobid, int step, pid_t asked, const char *role)
{
	if (!t->j->n)
		return false;
	t->j->slurm_job = jobid;
	t->j->slurm_step = keep_one_step(t, step);
	t->j->asked = asked;
	snprintf(t->j->asked_role, sizeof(t->j->asked_role), "%s", role);
	sort_ranks(t);
	name_nodes(t->j);
	return true;
}

int slurm_tasks__gather(long jobid, int step, const char *cmd, char *const *args,
			unsigned int fanout,
			void (*read_here)(struct slurm_tasks *t, const void *arg), const void *arg,
			pid_t asked, const char *role, struct slurm_tasks *t)
{
	char why[512];
	int err = slurm_tasks__here(jobid, step, t);

	if (!err)
		read_here(t, arg);
	if (err == -EXDEV || err == -ENOENT) {
		slurm_tasks__free(t);
		err = slurm_tasks__fan_out(jobid, step, cmd, args,
					   fanout ? fanout : SLURM_FANOUT_DEFAULT, t, why,
					   sizeof(why));
		if (err) {
			dls_err("%s --job: %s", cmd, why);
			return err;
		}
	} else if (err) {
		dls_err("%s --job: out of memory", cmd);
		return err;
	}
	if (!slurm_tasks__settle(t, jobid, step, asked, role)) {
		dls_err("%s --job: Slurm job %ld has no task on its nodes%s%s", cmd, jobid,
			t->node_errors ? ": " : "", t->node_errors ? t->node_errors : "");
		return -ENOENT;
	}
	if (t->node_errors)
		dls_warn("%s --job: not every node answered: %s", cmd, t->node_errors);
	return 0;
}

/* The tasks of one node's document into @t, each task document kept whole. */
static int take_node_doc(struct slurm_tasks *t, const json_t *doc)
{
	const char *node = json_string_value(json_object_get(doc, "node")) ?: "?";
	const char *scheme = json_string_value(json_object_get(doc, "scheme")) ?: "";
	json_int_t world = json_integer_value(json_object_get(doc, "world_size"));
	json_t *x;
	size_t i;

	const json_t *shared = json_object_get(doc, "shared");

	if (json_is_string(json_object_get(doc, "error")))
		node_error(t, node, json_string_value(json_object_get(doc, "error")));
	/* A relay's: what the nodes under it could not read, each named by its node. */
	if (json_is_string(json_object_get(doc, "node_errors")))
		node_error(t, node, json_string_value(json_object_get(doc, "node_errors")));
	t->relays += (int)json_integer_value(json_object_get(doc, "relays"));
	if (world > t->j->world_size) {
		t->j->world_size = (int)world;
		t->j->world_var =
			job__world_var(json_string_value(json_object_get(doc, "world_var")));
	}
	json_array_foreach (json_object_get(doc, "tasks"), i, x) {
		const json_t *lr = json_object_get(x, "local_rank");
		struct job_rank *jr;

		if (!json_is_object(x))
			continue; /* a bad answer's: no task */
		if (tasks_grow(t))
			return -ENOMEM;
		jr = &t->j->ranks[t->j->n];
		*jr = (struct job_rank){
			.pid = (pid_t)json_integer_value(json_object_get(x, "pid")),
			.rank = (int)json_integer_value(json_object_get(x, "rank")),
			.local_rank = json_is_integer(lr) ? (int)json_integer_value(lr) : -1,
			.step = (int)json_integer_value(json_object_get(x, "step")),
		};
		/* A relay names each task's node; a node half, itself. */
		snprintf(jr->node, sizeof(jr->node), "%s",
			 json_string_value(json_object_get(x, "node")) ?: node);
		snprintf(jr->comm, sizeof(jr->comm), "%s",
			 json_string_value(json_object_get(x, "comm")) ?: "?");
		if (shared && json_object_set(x, "shared", (json_t *)shared))
			return -ENOMEM;
		t->task[t->j->n++] = json_incref(x);
		for (int k = 0; t->j->scheme == JOB_SCHEME_NONE && k < JOB_SCHEME_NONE; k++)
			if (!strcmp(scheme, job_scheme__name(k)))
				t->j->scheme = k;
	}
	return 0;
}

/*
 * The number of nodes of job @jobid, from squeue's JSON, and their list as Slurm writes it
 * ("n[1-2]") into @list when not NULL. -errno with @why.
 */
static int job_nodes(long jobid, int *nodes, char *list, size_t listlen, char *why, size_t whylen)
{
	char id[32], *out;
	char *argv[] = { "squeue", "--json", "--jobs", id, NULL };
	const json_t *job = NULL, *x, *state = NULL, *count;
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
	/* job_state: "RUNNING" in Slurm 22.05's JSON, ["RUNNING"] from 23.11 on. */
	state = json_object_get(job, "job_state");
	if (json_is_array(state))
		state = json_array_get(state, 0);
	if (!job || strcmp(json_string_value(state) ?: "", "RUNNING")) {
		snprintf(why, whylen, "Slurm job %ld is %s", jobid,
			 !doc ? "not known (squeue gave no JSON)" :
			 job  ? json_string_value(state) ?: "not running" :
				"not known to squeue");
		json_decref(doc);
		return -ENOENT;
	}
	/* node_count: a number in 22.05, {"set", "infinite", "number"} from 23.11 on. */
	count = json_object_get(job, "node_count");
	if (json_is_object(count))
		count = json_object_get(count, "number");
	*nodes = (int)json_integer_value(count);
	if (list)
		snprintf(list, listlen, "%s",
			 json_string_value(json_object_get(job, "nodes")) ?: "");
	json_decref(doc);
	if (*nodes <= 0) {
		snprintf(why, whylen, "squeue gives Slurm job %ld no nodes", jobid);
		return -ENOENT;
	}
	return 0;
}

/* What the node halves write: each task's JSON document, its errors named by its node. */
struct node_answers {
	struct {
		FILE *f;
		char *text;
		size_t len;
	} * bufs;
	char **nodes;
};

/*
 * A node half's output: srun cuts a long line into labelled pieces, and the pieces of two tasks
 * interleave; a compact JSON document has no newline of its own, so each task's pieces joined
 * are its document.
 */
static void answer_line(void *arg, long task, const char *text, size_t len)
{
	struct node_answers *a = arg;

	if (task < 0)
		return; /* srun's own words on its output: none are expected */
	if (!a->bufs[task].f)
		a->bufs[task].f = open_memstream(&a->bufs[task].text, &a->bufs[task].len);
	if (a->bufs[task].f)
		fwrite(text, 1, len, a->bufs[task].f);
}

/* A node half's errors, named by its node rather than srun's task number. */
static void error_line(void *arg, long task, const char *text, size_t len)
{
	const struct node_answers *a = arg;

	if (task >= 0)
		fprintf(stderr, "%s: %.*s\n", a->nodes[task], (int)len, text);
	else
		fprintf(stderr, "%.*s\n", (int)len, text);
}

/* Each task's document (@a) into @t; how many nodes answered, -errno in *@err. */
static int take_answers(struct node_answers *a, int nodes, struct slurm_tasks *t, int *err)
{
	int docs = 0;

	for (int k = 0; k < nodes; k++) {
		json_error_t jerr;
		json_t *doc;

		if (!a->bufs[k].f)
			continue;
		fclose(a->bufs[k].f);
		doc = json_loadb(a->bufs[k].text, a->bufs[k].len, 0, &jerr);
		t->bytes += a->bufs[k].len;
		free(a->bufs[k].text);
		if (!doc)
			continue;
		docs++;
		t->answers++;
		if (!*err)
			*err = take_node_doc(t, doc);
		json_decref(doc);
	}
	return docs;
}

/* The job's id as the node halves and relays take it: JOBID or JOBID.STEP. */
static void job_spec(long jobid, int step, char *buf, size_t len)
{
	if (step >= 0)
		snprintf(buf, len, "%ld.%d", jobid, step);
	else
		snprintf(buf, len, "%ld", jobid);
}

/* @names (@n of them) as srun's --nodelist: "--nodelist=n1,n2" (malloc'ed), NULL no memory. */
static char *nodelist_arg(char *const *names, size_t n)
{
	char *arg = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&arg, &len);

	if (!f)
		return NULL;
	fputs("--nodelist=", f);
	for (size_t k = 0; k < n; k++)
		fprintf(f, "%s%s", k ? "," : "", names[k]);
	if (fclose(f)) {
		free(arg);
		return NULL;
	}
	return arg;
}

/*
 * `dlscope @cmd @mode @value @args...` once on each of @nodes (@n, Slurm's order; @whole: all
 * the job's, named to srun by their count alone), in a step of its own beside job @jobid's,
 * each one's line taken into @t. 0, or -errno with @why.
 */
static int run_on_nodes(long jobid, char **nodes, size_t n, bool whole, const char *cmd,
			const char *mode, const char *value, char *const *args,
			struct slurm_tasks *t, char *why, size_t whylen)
{
	char self[PATH_MAX], idarg[48], nodesarg[32], ntasks[32], *nodelist = NULL;
	char *argv[32];
	struct node_answers answers = { 0 };
	struct srun_stream *s = NULL;
	size_t argc = 0;
	int status, err, docs, fo, fe;
	pid_t pid;

	err = slurm_tasks__self(self, sizeof(self), why, whylen);
	if (err)
		return err;
	snprintf(idarg, sizeof(idarg), "--jobid=%ld", jobid);
	snprintf(nodesarg, sizeof(nodesarg), "--nodes=%zu", n);
	/* --ntasks too: inside the job (a batch script) srun would take SLURM_NTASKS. */
	snprintf(ntasks, sizeof(ntasks), "--ntasks=%zu", n);
	/* A share's nodes by name: at most --fanout of them, so the list fits an argument. */
	nodelist = whole ? NULL : nodelist_arg(nodes, n);
	answers.bufs = calloc(n, sizeof(*answers.bufs));
	answers.nodes = nodes;
	s = calloc(2, sizeof(*s));
	if ((!whole && !nodelist) || !answers.bufs || !s) {
		snprintf(why, whylen, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	/* A step of its own beside the job's: on each node once, sharing the job's CPUs
	 * (--overlap), no MPI set-up, and no node's failure killing the others' reads. */
	char *fixed[] = { "srun",	  idarg,       "--overlap",  "--ntasks-per-node=1",
			  ntasks,	  nodesarg,    nodelist,     "--mpi=none",
			  "--input=none", "--label",   "--quiet",    "--kill-on-bad-exit=0",
			  self,		  (char *)cmd, (char *)mode, (char *)value };

	for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++)
		if (fixed[k])
			argv[argc++] = fixed[k];
	for (size_t k = 0; args && args[k] && argc < sizeof(argv) / sizeof(argv[0]) - 1; k++)
		argv[argc++] = args[k];
	argv[argc] = NULL;
	pid = srun_io__start(argv, &fo, &fe);
	if (pid < 0) {
		snprintf(why, whylen, "cannot run srun: %s", strerror((int)-pid));
		err = -ENOENT;
		goto out;
	}
	s[0] = (struct srun_stream){
		.fd = fo, .line = answer_line, .arg = &answers, .ntasks = (long)n
	};
	s[1] = (struct srun_stream){
		.fd = fe, .line = error_line, .arg = &answers, .ntasks = (long)n
	};
	status = srun_io__relay(pid, s, NULL, NULL);
	docs = take_answers(&answers, (int)n, t, &err);
	if (err) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	if ((size_t)docs < n)
		node_error(t, "srun",
			   docs ? "some nodes gave no answer" : "no node gave an answer");
	if (!docs) {
		snprintf(why, whylen,
			 "srun --overlap on Slurm job %ld's %zu node%s gave no answer (%s %d)",
			 jobid, n, n == 1 ? "" : "s", WIFEXITED(status) ? "status" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		err = -ENOENT;
	}
out:
	free(nodelist);
	free(answers.bufs);
	free(s);
	return err;
}

size_t slurm_tasks__chunk(size_t count, unsigned int fanout)
{
	size_t per_relay;

	if (!fanout || count <= fanout)
		return count;
	per_relay = (count + fanout - 1) / fanout;
	return per_relay > fanout ? per_relay : fanout;
}

/*
 * Nodes [@first, @first + @count) of @names read into @t: each by its node half when they are
 * at most @fanout, else through relays, each on the first node of its share
 * (slurm_tasks__chunk) and reading the share.
 */
static int fan_out_range(long jobid, const char *spec, const char *list, char **names, size_t total,
			 size_t first, size_t count, unsigned int fanout, const char *cmd,
			 char *const *args, struct slurm_tasks *t, char *why, size_t whylen)
{
	size_t chunk = slurm_tasks__chunk(count, fanout), n = 0;
	char **relays, *value = NULL;
	int err;

	if (chunk >= count)
		return run_on_nodes(jobid, names + first, count, first == 0 && count == total, cmd,
				    "--job-node", spec, args, t, why, whylen);
	relays = calloc((count + chunk - 1) / chunk, sizeof(*relays));
	if (!relays) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	for (size_t k = first; k < first + count; k += chunk)
		relays[n++] = names[k];
	/* The job's node list goes along: a step's environment names the step's nodes only. */
	if (asprintf(&value, "%s:%zu:%zu:%u:%s", spec, first, count, fanout, list) < 0) {
		free(relays);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	err = run_on_nodes(jobid, relays, n, false, cmd, "--job-relay", value, args, t, why,
			   whylen);
	free(value);
	free(relays);
	return err;
}

/* A job's ranks, none yet, into @t when it has none. 0, or -ENOMEM with @why. */
static int tasks_start(struct slurm_tasks *t, char *why, size_t whylen)
{
	if (t->j)
		return 0;
	t->j = calloc(1, sizeof(*t->j));
	if (!t->j) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	*t->j = (struct job){ .scheme = JOB_SCHEME_NONE, .world_size = -1 };
	return 0;
}

static void free_names(char **names, int n)
{
	for (int k = 0; k < n; k++)
		free(names[k]);
	free(names);
}

/* Slurm's node list @list ("n[1-3]") as names, in its order: *@names (*@n). -errno, @why. */
static int hostnames(const char *list, char ***names, int *n, char *why, size_t whylen)
{
	char *out, *save = NULL;
	char *argv[] = { "scontrol", "show", "hostnames", (char *)list, NULL };
	int status, cap = 0;

	*names = NULL;
	*n = 0;
	/* scontrol expands the list itself, asking no daemon. */
	out = runprog__capture(NULL, argv, false, NULL, &status);
	for (char *t = out ? strtok_r(out, "\n", &save) : NULL; t;
	     t = strtok_r(NULL, "\n", &save)) {
		char *name = strdup(t);

		if (!name || (*n == cap && ARRAY_GROW(*names, cap, 16))) {
			free(name);
			free(out);
			free_names(*names, *n);
			*names = NULL;
			*n = 0;
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		(*names)[(*n)++] = name;
	}
	free(out);
	if (*n)
		return 0;
	free(*names);
	*names = NULL;
	snprintf(why, whylen, "scontrol show hostnames %s named no node", list);
	return -ENOENT;
}

static int job_nodes_named(long jobid, char *list, size_t listlen, char ***names, int *n, char *why,
			   size_t whylen)
{
	int nodes, err = job_nodes(jobid, &nodes, list, listlen, why, whylen);

	*names = NULL;
	*n = 0;
	if (!err)
		err = hostnames(list, names, n, why, whylen);
	if (err || *n == nodes)
		return err;
	free_names(*names, *n);
	*names = NULL;
	*n = 0;
	snprintf(why, whylen, "scontrol show hostnames %s did not name Slurm job %ld's %d nodes",
		 list, jobid, nodes);
	return -ENOENT;
}

int slurm_tasks__fan_out(long jobid, int step, const char *cmd, char *const *args,
			 unsigned int fanout, struct slurm_tasks *t, char *why, size_t whylen)
{
	char spec[48], list[4096], **names = NULL;
	int nodes = 0, err = tasks_start(t, why, whylen);

	if (!err)
		err = job_nodes_named(jobid, list, sizeof(list), &names, &nodes, why, whylen);
	if (err)
		return err;
	job_spec(jobid, step, spec, sizeof(spec));
	err = fan_out_range(jobid, spec, list, names, (size_t)nodes, 0, (size_t)nodes, fanout, cmd,
			    args, t, why, whylen);
	free_names(names, nodes);
	return err;
}

/* Whether @launcher is a Slurm task of a step that runs on more than one node. */
static bool launcher_spans_nodes(pid_t launcher)
{
	struct job_identity id;

	return launcher > 0 && !job__identity(launcher, &id) && id.slurm_step >= 0 &&
	       id.slurm_nodes > 1;
}

int slurm_tasks__job_of(pid_t pid, const char *cmd, long *jobid, int *step, char *role,
			size_t rolelen)
{
	struct job_identity id;
	struct job *j = NULL;
	char comm[64] = "", why[512];

	if (proc__read_stat(pid, 0, comm, sizeof(comm), NULL, NULL))
		return 0;
	if (!strcmp(comm, "srun")) {
		if (job__slurm_step_of_srun(pid, jobid, step)) {
			dls_err("%s --job: srun %d runs no step that scontrol shows (is the job "
				"still starting, or is scontrol missing?)",
				cmd, pid);
			return -1;
		}
		snprintf(role, rolelen, "srun of step %ld.%d", *jobid, *step);
		return 1;
	}
	if (job__identity(pid, &id) || id.slurm_job <= 0)
		return 0;
	/*
	 * A job of mpirun or torchrun inside the allocation (or a task) is theirs: its launcher is
	 * here, and so are its ranks; unless the launcher is a task of a step over several nodes
	 * (srun torchrun on each node), whose other nodes hold ranks too. A rank under a wrapper
	 * shell climbs to slurmstepd.
	 */
	if (!job__find(pid, &j, why, sizeof(why)) && strcmp(j->launcher_comm, "slurmstepd") &&
	    !launcher_spans_nodes(j->launcher)) {
		job__free(j);
		return 0;
	}
	if (id.slurm_step < 0)
		snprintf(role, rolelen, "the batch script of job %ld", id.slurm_job);
	else if (j && j->asked == pid && strncmp(j->asked_role, "the launcher", 12))
		snprintf(role, rolelen, "%s", j->asked_role);
	else
		snprintf(role, rolelen, "in step %ld.%d", id.slurm_job, id.slurm_step);
	job__free(j);
	*jobid = id.slurm_job;
	*step = id.slurm_step;
	return 1;
}

int slurm_tasks__of_node(const char *cmd, const char *spec, struct job **j, char *node,
			 size_t nodelen, char *why, size_t whylen)
{
	const char *own_job = getenv("SLURM_JOB_ID"), *own_step = getenv("SLURM_STEP_ID");
	const char *name = getenv("SLURMD_NODENAME");
	long jobid;
	int step, own = -1;

	node_name(node, nodelen);
	if (job__parse_slurm_id(spec, &jobid, &step)) {
		dls_err("%s --job-node: '%s' is no Slurm job id (JOBID or JOBID.STEP)", cmd, spec);
		return -EINVAL;
	}
	/* Our own step (the one srun started for us) is no task of the job's to read. */
	if (own_job && own_step && atol(own_job) == jobid)
		own = atoi(own_step);
	if (job__slurm_tasks(jobid, step, name && *name ? name : NULL, own, j, why, whylen))
		return -ENOENT;
	return 0;
}

json_t *slurm_tasks__task_json(const struct job_rank *t, const char *key, json_t *payload,
			       const char *err)
{
	return json_pack("{s:i, s:o, s:i, s:i, s:s, s:o, s:s?}", "rank", t->rank, "local_rank",
			 t->local_rank >= 0 ? json_integer(t->local_rank) : json_null(), "pid",
			 t->pid, "step", t->step, "comm", t->comm, key,
			 payload ? payload : json_null(), "error", payload ? NULL : err);
}

void slurm_tasks__write_node(const char *cmd, const char *node, const struct job *j, json_t *tasks,
			     const char *why, json_t *extra)
{
	json_t *doc;

	if (!j)
		doc = json_pack("{s:s, s:s, s:o}", "node", node, "error", why, "tasks", tasks);
	else
		doc = json_pack("{s:s, s:s, s:i, s:s?, s:o}", "node", node, "scheme",
				job_scheme__name(j->scheme), "world_size", j->world_size,
				"world_var", j->world_var, "tasks", tasks);
	if (doc && extra)
		json_object_update(doc, extra);
	json_decref(extra);
	if (!doc || json_dumpf(doc, stdout, JSON_COMPACT) < 0)
		dls_err("%s --job-node: cannot write the JSON document", cmd);
	putchar('\n');
	fflush(stdout);
	json_decref(doc);
}

int slurm_tasks__nodes(long jobid, char ***names, int *n, char *why, size_t whylen)
{
	char list[4096];

	return job_nodes_named(jobid, list, sizeof(list), names, n, why, whylen);
}

/*
 * A relay's share of the tree (@value: its --job-relay argument), read into @t (its job's id
 * and step into @jobid, @step). -EINVAL when @value is malformed (said, with @cmd's name), or
 * -errno with @why.
 */
static int relay_read(const char *cmd, const char *value, char *const *args, struct slurm_tasks *t,
		      long *jobid, int *step, char *why, size_t whylen)
{
	const char *list, *me = getenv("SLURMD_NODENAME");
	char spec[48], **names = NULL;
	size_t first, count, chunk, at;
	unsigned int fanout;
	int n = 0, used = 0, err;

	if (sscanf(value, "%47[^:]:%zu:%zu:%u:%n", spec, &first, &count, &fanout, &used) != 4 ||
	    !used || !value[used] || fanout < 2 || !count ||
	    job__parse_slurm_id(spec, jobid, step)) {
		dls_err("%s --job-relay: '%s' is not JOBID[.STEP]:FIRST:COUNT:WIDTH:NODELIST", cmd,
			value);
		return -EINVAL;
	}
	list = value + used;
	err = tasks_start(t, why, whylen);
	if (err)
		return err;
	if (!me) {
		snprintf(why, whylen,
			 "a relay runs in a step of the job (no SLURMD_NODENAME here)");
		return -ENOENT;
	}
	/* The job's nodes, in the order the reader above cut them into shares. */
	err = hostnames(list, &names, &n, why, whylen);
	if (err)
		return err;
	for (at = 0; at < (size_t)n && strcmp(names[at], me); at++)
		;
	chunk = slurm_tasks__chunk(count, fanout);
	if (first + count > (size_t)n || at < first || at >= first + count ||
	    (at - first) % chunk) {
		snprintf(why, whylen, "node %s heads no share of nodes %zu-%zu of %s", me, first,
			 first + count - 1, list);
		err = -ENOENT;
	} else {
		count = first + count - at < chunk ? first + count - at : chunk;
		err = fan_out_range(*jobid, spec, list, names, (size_t)n, at, count, fanout, cmd,
				    args, t, why, whylen);
	}
	free_names(names, n);
	return err;
}

json_t *slurm_tasks__fan_in(const struct slurm_tasks *t, unsigned int fanout)
{
	if (!t->answers)
		return NULL;
	return json_pack("{s:i, s:i, s:i, s:I}", "width",
			 (int)(fanout ? fanout : SLURM_FANOUT_DEFAULT), "relays", t->relays,
			 "answers", t->answers, "bytes", (json_int_t)t->bytes);
}

const json_t *slurm_tasks__table(const json_t *task)
{
	return json_object_get(json_object_get(task, "shared"), "values");
}

int slurm_tasks__relay(const char *cmd, const char *value, char *const *args, slurm_fold_fn fold,
		       const void *arg)
{
	struct slurm_tasks t = { 0 };
	struct jsonfold f = { 0 };
	char node[256], why[512] = "";
	json_t *tasks = json_array(), *extra = NULL;
	long jobid;
	int step, err;

	node_name(node, sizeof(node));
	err = relay_read(cmd, value, args, &t, &jobid, &step, why, sizeof(why));
	if (err == -EINVAL) {
		json_decref(tasks);
		return DLS_EXIT_USAGE;
	}
	if (!err && (!tasks || jsonfold__init(&f)))
		err = -ENOMEM;
	/* Each task folded into this relay's table, named by its node. */
	for (size_t i = 0; !err && t.j && i < t.j->n; i++) {
		json_t *x = t.task[i];

		if (fold(x, &f, slurm_tasks__table(x), arg) ||
		    json_object_set_new(x, "node", json_string(t.j->ranks[i].node)) ||
		    json_array_append(tasks, x))
			err = -ENOMEM;
		json_object_del(x, "shared");
	}
	if (err == -ENOMEM)
		snprintf(why, sizeof(why), "out of memory");
	if (!err)
		extra = json_pack("{s:{s:O}, s:i, s:s?}", "shared", "values", f.values, "relays",
				  1 + t.relays, "node_errors", t.node_errors);
	slurm_tasks__write_node(cmd, node, err ? NULL : t.j, tasks, why, extra);
	jsonfold__free(&f);
	slurm_tasks__free(&t);
	return DLS_EXIT_OK;
}
