// SPDX-License-Identifier: GPL-2.0
/* watch and record --job slurm:JOBID: each node's half, relayed and named (watch_slurm.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "job.h"
#include "output.h"
#include "runprog.h"
#include "slurm_tasks.h"
#include "srun_io.h"
#include "watch_slurm.h"

/* Whether @arg is --job or -o, with its value in it (--job=X, -oX) or next (*@takes_next). */
static bool front_end_only(const char *arg, bool *takes_next)
{
	*takes_next = !strcmp(arg, "--job") || !strcmp(arg, "-o") || !strcmp(arg, "--output");
	return *takes_next || !strncmp(arg, "--job=", 6) || !strncmp(arg, "--output=", 9) ||
	       (!strncmp(arg, "-o", 2) && arg[2]);
}

/* The words of the node halves' srun command line that are made here. */
struct node_words {
	char self[PATH_MAX], idarg[48], nodes[48], ntasks[32], name[64], id[32];
};

/* The node half's command line: srun's options, then dlscope CMD, @argv's options, --slurm-job. */
static char **node_argv(const char *cmd, long jobid, int nodes, int argc, char **argv,
			const char *trace, struct node_words *w)
{
	char **a = calloc((size_t)argc + 24, sizeof(*a)), why[256];
	size_t n = 0;

	if (!a || slurm_tasks__self(w->self, sizeof(w->self), why, sizeof(why))) {
		free(a);
		return NULL;
	}
	snprintf(w->idarg, sizeof(w->idarg), "--jobid=%ld", jobid);
	snprintf(w->nodes, sizeof(w->nodes), "--nodes=%d", nodes);
	/* --ntasks too: inside the job srun would take its task count from SLURM_NTASKS. */
	snprintf(w->ntasks, sizeof(w->ntasks), "--ntasks=%d", nodes);
	/* Its own name, so that SIGINT reaches this step alone (scancel by step). */
	snprintf(w->name, sizeof(w->name), "--job-name=dlscope-%s-%d", cmd, (int)getpid());
	snprintf(w->id, sizeof(w->id), "%ld", jobid);
	const char *fixed[] = { "srun",
				w->idarg,
				"--overlap",
				w->nodes,
				w->ntasks,
				"--ntasks-per-node=1",
				"--mpi=none",
				"--input=none",
				"--label",
				"--quiet",
				"--kill-on-bad-exit=0",
				w->name,
				w->self,
				cmd,
				"--slurm-job",
				w->id };

	for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++)
		a[n++] = (char *)fixed[k];
	for (int i = 0; i < argc; i++) {
		bool next;

		if (front_end_only(argv[i], &next)) {
			i += next;
			continue;
		}
		a[n++] = argv[i];
	}
	if (trace) {
		a[n++] = "-o";
		a[n++] = (char *)trace;
	}
	a[n] = NULL;
	return a;
}

/* Where a node half's lines go: each named by its node. */
struct named_out {
	FILE *to;
	char **nodes;
};

static void named_line(void *arg, long task, const char *text, size_t len)
{
	const struct named_out *o = arg;

	if (task >= 0)
		fprintf(o->to, "%s: %.*s\n", o->nodes[task], (int)len, text);
	else
		fprintf(o->to, "%.*s\n", (int)len, text);
	fflush(o->to);
}

/* SIGINT to the node halves' step alone: each ends its watch with its summary. */
static void stop_step(const char *cmd, long jobid)
{
	char id[32], name[64], *out, *save = NULL;
	char *q[] = { "squeue", "--noheader", "--steps", id, "--format=%i %j", NULL };
	int status;

	snprintf(id, sizeof(id), "--jobs=%ld", jobid);
	snprintf(name, sizeof(name), "dlscope-%s-%d", cmd, (int)getpid());
	out = runprog__capture(NULL, q, false, NULL, &status);
	for (char *l = out ? strtok_r(out, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(l, ' ');

		if (sp && !strcmp(sp + 1, name)) {
			char *s[] = { "scancel", "--signal=INT", l, NULL };

			*sp = '\0';
			free(runprog__capture(NULL, s, false, NULL, &status));
			break;
		}
	}
	free(out);
}

/* How the front end ends the node halves when asked (@stop). */
struct stopper {
	const char *cmd;
	long jobid;
	pid_t srun;
	volatile sig_atomic_t *stop;
	int stage; /* 0 running, 1 SIGINT to the step, 2 SIGTERM to srun, 3 SIGKILL */
	struct timespec since;
};

/*
 * srun_io's tick: on @stop, SIGINT to the node halves' step; when srun has not ended 30 s
 * later, SIGTERM to srun, and SIGKILL 5 s after that.
 */
static void stop_tick(void *arg)
{
	static const int waits_s[] = { 30, 5 }, sigs[] = { SIGTERM, SIGKILL };
	struct stopper *st = arg;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (*st->stop && !st->stage) {
		st->stage = 1;
		st->since = now;
		stop_step(st->cmd, st->jobid);
	} else if (st->stage && st->stage < 3 &&
		   now.tv_sec - st->since.tv_sec >= waits_s[st->stage - 1]) {
		kill(st->srun, sigs[st->stage - 1]);
		st->stage++;
		st->since = now;
	}
}

/* record's end: the nodes' traces (FILE.NODE) merged into FILE. The exit status. */
static int merge_traces(const char *out, char **nodes, int n)
{
	char **argv = calloc((size_t)n + 5, sizeof(*argv)), *said;
	size_t k = 0;
	int status = 0;

	if (!argv)
		return DLS_EXIT_INSPECT;
	argv[k++] = "dlscope";
	argv[k++] = "merge";
	for (int i = 0; i < n; i++)
		if (asprintf(&argv[k], "%s.%s", out, nodes[i]) >= 0)
			k++;
	argv[k++] = "-o";
	argv[k++] = (char *)out;
	said = runprog__capture("/proc/self/exe", argv, true, NULL, &status);
	if (said)
		fputs(said, stdout);
	for (size_t i = 2; i < k - 2; i++)
		free(argv[i]);
	free(argv);
	if (!said)
		return DLS_EXIT_INSPECT;
	free(said);
	return WIFEXITED(status) ? WEXITSTATUS(status) : DLS_EXIT_INSPECT;
}

int watch_slurm__run(const char *cmd, const char *spec, int argc, char **argv, const char *out,
		     volatile sig_atomic_t *stop)
{
	struct srun_stream *r = calloc(2, sizeof(*r));
	struct named_out sout, serr;
	struct stopper st;
	char why[512], trace[PATH_MAX + 8], **nodes = NULL, **a = NULL;
	struct node_words words;
	int fo, fe, n = 0, ret = DLS_EXIT_INSPECT, step, status;
	long jobid;
	pid_t srun;

	if (job__parse_slurm_id(spec, &jobid, &step) || step >= 0) {
		dls_err("%s --job: 'slurm:%s' is no Slurm job id (slurm:JOBID: the whole job is "
			"watched on each of its nodes)",
			cmd, spec);
		free(r);
		return DLS_EXIT_USAGE;
	}
	/* One merged file: each node's is FILE.NODE, named here to merge them. */
	if (out && strchr(out, '%')) {
		dls_err("%s --job: -o %s: with slurm:JOBID, -o names the one merged trace (each "
			"node's is FILE.NODE): no %% in it",
			cmd, out);
		free(r);
		return DLS_EXIT_USAGE;
	}
	if (slurm_tasks__nodes(jobid, &nodes, &n, why, sizeof(why))) {
		dls_err("%s --job: %s", cmd, why);
		goto out;
	}
	snprintf(trace, sizeof(trace), "%s.%%n", out ? out : "");
	a = node_argv(cmd, jobid, n, argc, argv, out ? trace : NULL, &words);
	if (!a || !r) {
		dls_err("%s --job: cannot build srun's command line", cmd);
		goto out;
	}
	srun = srun_io__start(a, &fo, &fe);
	if (srun < 0) {
		dls_err("%s --job: cannot run srun: %s", cmd, strerror((int)-srun));
		goto out;
	}
	sout = (struct named_out){ .to = stdout, .nodes = nodes };
	serr = (struct named_out){ .to = stderr, .nodes = nodes };
	r[0] = (struct srun_stream){ .fd = fo, .line = named_line, .arg = &sout, .ntasks = n };
	r[1] = (struct srun_stream){ .fd = fe, .line = named_line, .arg = &serr, .ntasks = n };
	st = (struct stopper){ .cmd = cmd, .jobid = jobid, .srun = srun, .stop = stop };
	status = srun_io__relay(srun, r, stop_tick, &st);
	/*
	 * srun's status is its worst task's (1 findings, 3 a node that could not watch), unless
	 * srun itself failed (127: not found; a step it could not create, with no node's line) or
	 * was killed.
	 */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !r[0].labelled && !r[1].labelled) {
		dls_err("%s --job: cannot run srun (is Slurm's client installed and in PATH?)",
			cmd);
		goto out;
	}
	if (!WIFEXITED(status) || (WEXITSTATUS(status) && !r[0].labelled && !r[1].labelled)) {
		dls_err("%s --job: srun ended without the nodes' watches (%s %d): see its lines above",
			cmd, WIFEXITED(status) ? "status" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		goto out;
	}
	ret = WEXITSTATUS(status);
	if (out && ret != DLS_EXIT_INSPECT) {
		int m = merge_traces(out, nodes, n);

		if (m)
			ret = m;
	}
out:
	for (int i = 0; i < n; i++)
		free(nodes[i]);
	free(nodes);
	free(a);
	free(r);
	return ret;
}
