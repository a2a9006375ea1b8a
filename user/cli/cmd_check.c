// SPDX-License-Identifier: GPL-2.0
/* dlscope check: live processes, core files, traces, or a command run to its exit. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "check_opts.h"
#include "cliopt.h"
#include "commands.h"
#include "corecmd.h"
#include "corefile.h"
#include "crash.h"
#include "detector.h"
#include "elfobj.h"
#include "event.h"
#include "inspect.h"
#include "job.h"
#include "libgraph.h"
#include "outfile.h"
#include "output.h"
#include "phase.h"
#include "pkgowner.h"
#include "procfs.h"
#include "runtimes.h"
#include "static_tls.h"
#include "supervise.h"
#include "target.h"
#include "termsafe.h"
#include "threadscan.h"

/* An argument that names a trace file rather than a process: it exists, or looks like a path. */
static bool is_trace_arg(const char *arg)
{
	struct stat st;
	size_t n = strlen(arg);
	pid_t pid;

	return parse_pid(arg, &pid) &&
	       (!stat(arg, &st) || strchr(arg, '/') || (n > 6 && !strcmp(arg + n - 6, ".jsonl")));
}

/* The static TLS block's room left, when it could be read. */
static json_t *static_tls_json(const struct static_tls *st, bool known)
{
	if (!known)
		return json_null();
	return json_pack("{s:I, s:I, s:I, s:I}", "size", (json_int_t)st->size, "descriptor",
			 (json_int_t)st->tcb, "used", (json_int_t)st->used, "left",
			 (json_int_t)st->left);
}

/* check --json: a process's entry in "processes", with @mine, its findings. */
static void append_process(json_t *procs, const struct target *t, const struct libgraph *g,
			   size_t n_threads, const struct runtime_list *rt,
			   const struct findings *mine)
{
	struct static_tls st;
	bool st_known = !static_tls__read(t, g, &st);

	/* A core's process is gone: its command line is the one the core kept. */
	char *cmdline = t->core ? strdup(t->core->args) : proc__cmdline(t->pid);

	/* The command line: a report says how to run the program again, elsewhere. */
	json_array_append_new(
		procs, json_pack("{s:i, s:s, s:s, s:o*, s:i, s:i, s:o, s:o}", "pid",
				 (json_int_t)t->pid, "comm", t->comm, "exe", t->exe, "cmdline",
				 cmdline ? json_string(cmdline) : json_null(), "object_count",
				 (json_int_t)g->n, "threads", (json_int_t)n_threads, "runtimes",
				 runtimes__to_json(rt, g), "findings", findings__to_json(mine)));
	free(cmdline);
	json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "static_tls",
			    static_tls_json(&st, st_known));
	/* The executable's build-id: which build of the program this is. */
	for (size_t k = 0; k < g->n; k++)
		if (g->objs[k]->origin == LG_EXECUTABLE && g->objs[k]->elf &&
		    elfobj__build_id(g->objs[k]->elf)) {
			json_object_set_new(json_array_get(procs, json_array_size(procs) - 1),
					    "build_id",
					    json_string(elfobj__build_id(g->objs[k]->elf)));
			break;
		}
}

/* check's text: a process's counts, runtimes and @mine, its findings. */
static void print_process(const struct target *t, const struct libgraph *g, size_t n_threads,
			  const struct runtime_list *rt, const struct findings *mine)
{
	printf("process %d (%s): %zu object%s, %zu thread%s, %zu finding%s\n", t->pid, t->comm,
	       g->n, g->n == 1 ? "" : "s", n_threads, n_threads == 1 ? "" : "s", mine->n,
	       mine->n == 1 ? "" : "s");
	struct static_tls st;

	if (rt->n) {
		printf("runtimes:\n");
		runtimes__print(rt, g, "  ", stdout);
	}
	/* What a later dlopen of initial-exec TLS (libgomp, many wheels) may still take. */
	if (!static_tls__read(t, g, &st))
		printf("static TLS: %llu of %llu bytes left for objects loaded later (%u object%s in "
		       "it, %llu bytes taken)\n",
		       (unsigned long long)st.left, (unsigned long long)(st.size - st.tcb),
		       st.objects, st.objects == 1 ? "" : "s", (unsigned long long)st.used);
	if (mine->n) {
		putchar('\n');
		findings__print(mine, stdout);
	}
}

/* All selected detectors on one process; findings are appended to @fs. */
static int check_process(struct inspection *in, const struct check_opts *o, struct findings *fs,
			 json_t *procs, struct runtime_list *keep_rt)
{
	const struct target *t = in->t;
	const struct threadscan *ts;
	const struct libgraph *g;
	struct runtime_list rt = { 0 };
	struct check_ctx ctx;
	struct findings mine;
	size_t first = fs->n, n_threads;
	char why[512];
	int err;

	/* The lock-wait graph is built once, here, when the deadlock detector will read it. */
	err = inspection__read(
		in, INSPECT_THREADS | (check_opts__selected(o, "deadlock") ? INSPECT_LOCKWAIT : 0),
		0, why, sizeof(why));
	if (err) {
		dls_err("%s", why);
		return err;
	}
	/* Owners before the detectors, whose findings name the packages to rebuild. */
	if (libgraph__find_packages(in->g, t, o->pkgs))
		dls_warn("process %d (%s): out of memory naming the packages of its objects",
			 t->pid, t->comm);
	g = in->g;
	ts = in->ts;
	err = t->core ? 0 : in->ts_err; /* a core has no live threads to read */
	if (err)
		dls_warn("process %d (%s): cannot read its threads (%s); thread counts and the "
			 "loader-lock check are left out",
			 t->pid, t->comm, strerror(-err));
	phase__mark("packages");
	if (runtimes__collect(g, t->core ? NULL : t, ts, &rt))
		dls_warn("process %d (%s): out of memory listing its runtimes", t->pid, t->comm);
	phase__mark("runtimes");
	ctx = (struct check_ctx){ .t = t, .g = g, .ts = ts, .rt = &rt, .lw = in->lw };
	for (size_t i = 0; i < n_detectors; i++)
		if (detectors[i].process && check_opts__selected(o, detectors[i].id)) {
			detectors[i].process(&ctx, fs);
			phase__mark(detectors[i].id);
		}
	/* A core's threads are its NT_PRSTATUS notes. */
	n_threads = ts ? ts->n : t->core ? t->core->n_threads : 0;
	mine = (struct findings){ .f = fs->f + first, .n = fs->n - first };
	if (procs)
		append_process(procs, t, g, n_threads, &rt, &mine);
	else
		print_process(t, g, n_threads, &rt, &mine);
	/* check --job compares the ranks' runtimes after every rank is checked. */
	if (keep_rt)
		*keep_rt = rt;
	else
		runtimes__free(&rt);
	return 0;
}

/* How the command ended. */
struct cmd_outcome {
	bool ended;
	int exit_status; /* when it exited */
	int signo;	 /* when a signal killed it, else 0 */
	bool core_dumped;
	struct crash *crash; /* the fatal signal's details, when it had a delivery stop */
};

/* What check -- CMD keeps between the supervisor's calls. */
struct command_check {
	const struct check_opts *o;
	struct findings *fs;
	json_t *procs;
	struct crash *crash; /* the first fatal signal's details */
};

/*
 * supervise_hooks.at_exit: check a process of the command's tree, its main thread at
 * PTRACE_EVENT_EXIT and its other threads gone; one the command ran is named by PID and command
 * line.
 */
static int check_at_exit(void *ctx, pid_t pid, bool descendant, const char *cmdline)
{
	const struct command_check *cc = ctx;
	const struct check_opts *o = cc->o;
	struct inspection *in;
	char why[512];
	int e;

	e = inspection__new(pid, &in, why, sizeof(why));
	if (e) {
		dls_err("%s", why);
		return e;
	}
	if (descendant && !o->json)
		printf("process %d, run by the command: %s\n", pid, cmdline ? cmdline : "?");
	e = check_process(in, o, cc->fs, cc->procs, NULL);
	if (!e && cc->procs)
		json_object_set_new(json_array_get(cc->procs, json_array_size(cc->procs) - 1),
				    "cmdline", cmdline ? json_string(cmdline) : json_null());
	if (descendant && !o->json)
		putchar('\n');
	inspection__free(in);
	return e;
}

/* check --core FILE -- CMD: the core of @pid at @tid's fatal signal, held in its stop. */
static void write_crash_core(const char *path, pid_t pid, pid_t tid, const siginfo_t *si)
{
	struct capture_stats st;
	char why[1024];
	int fd = outfile__open("check", path, 0, why, sizeof(why));

	if (fd < 0) {
		dls_warn("check: --core: %s", why);
		return;
	}
	if (capture__write_stopped(pid, tid, si, fd, &st, why, sizeof(why))) {
		dls_warn("check: --core: %s", why);
		if (ftruncate(fd, 0))
			dls_warn("check: --core: cannot empty %s", path);
	} else {
		char sig[32];

		fprintf(stderr,
			"dlscope: check: the core at %s of thread %d is in %s (%" PRIu64 " KiB)\n",
			event__signal_name(si->si_signo, sig, sizeof(sig)), tid, path,
			st.file_size / 1024);
	}
	close(fd);
}

/*
 * supervise_hooks.signal: the details of the command's fatal signal (and its core, --core),
 * taken before it is delivered; a fault a handler catches is remembered for them.
 */
static bool command_signal(void *ctx, pid_t pid, pid_t tid, const siginfo_t *si,
			   const siginfo_t *caught)
{
	struct command_check *cc = ctx;

	/* The first fatal signal is the one that ends it. */
	if (cc->crash)
		return false;
	if (!crash__signal_kills(pid, tid, si))
		return crash__is_fault(si);
	if (crash__capture(pid, tid, si, caught, &cc->crash))
		dls_warn("check: out of memory describing the crash");
	if (cc->o->core)
		write_crash_core(cc->o->core, pid, tid, si);
	return false;
}

/* check -- CMD: run @argv under the supervisor (supervise.h), check it and what it runs. */
static int check_command(char **argv, const struct check_opts *o, struct findings *fs,
			 json_t *procs, struct cmd_outcome *res)
{
	struct command_check cc = { .o = o, .fs = fs, .procs = procs };
	struct supervise_hooks h = { .cmd = "check",
				     .no_follow = o->no_follow,
				     .stdout_to_stderr = o->json,
				     .at_exit = check_at_exit,
				     .signal = command_signal,
				     .ctx = &cc };
	struct supervise_result r = { 0 };
	int err = supervise__run(argv, &h, &r);

	*res = (struct cmd_outcome){ .ended = r.ended,
				     .exit_status = r.exit_status,
				     .signo = r.signo,
				     .core_dumped = r.core_dumped,
				     .crash = cc.crash };
	if (!r.started)
		return err;
	if (!o->no_follow && !o->json && r.descendants_checked)
		printf("(%zu process%s run by the command checked at their exit; --no-follow "
		       "checks the command only)\n",
		       r.descendants_checked, r.descendants_checked == 1 ? "" : "es");
	/* Details taken at a stop whose signal did not end it after all (a handler appeared). */
	if (res->crash && res->crash->signo != res->signo) {
		crash__free(res->crash);
		res->crash = NULL;
	}
	if (!r.checked && !err) {
		dls_err("check: '%s' exited before dlscope could stop it", argv[0]);
		err = -ESRCH;
	}
	return err;
}

/* "CMD exited with status 3", or "CMD was killed by SIGSEGV (...)" and the crash's details. */
static void print_outcome(const char *cmd, const struct cmd_outcome *res)
{
	char sig[32];

	if (!res->signo) {
		printf("\n%s exited with status %d\n", cmd, res->exit_status);
		return;
	}
	printf("\n%s was killed by %s (%s)%s\n", cmd, signal__name(res->signo, sig, sizeof(sig)),
	       sigdescr_np(res->signo) ? sigdescr_np(res->signo) : "unknown signal",
	       res->core_dumped ? ", core dumped" : "");
	if (res->crash)
		crash__print(res->crash, stdout);
}

static json_t *outcome_to_json(const struct cmd_outcome *res)
{
	char sig[32];

	return json_pack("{s:o, s:o, s:b, s:o}", "exit_status",
			 res->signo ? json_null() : json_integer(res->exit_status), "signal",
			 res->signo ? json_string(signal__name(res->signo, sig, sizeof(sig))) :
				      json_null(),
			 "core_dumped", res->core_dumped, "crash",
			 res->crash ? crash__to_json(res->crash) : json_null());
}

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
	if (!json_array_size(objs))
		printf("  objects: the same in every rank\n");
	else
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
	if (!json_array_size(env))
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
	if (cpus)
		printf("  CPUs: the ranks may use %lld CPU%s and run %lld threads (main and pool threads)\n",
		       (long long)json_integer_value(json_object_get(cpus, "cpus")),
		       json_integer_value(json_object_get(cpus, "cpus")) == 1 ? "" : "s",
		       (long long)json_integer_value(json_object_get(cpus, "threads")));
}

/* What check --job holds of each rank while the job detectors compare them. */
struct rank_checks {
	struct inspection **in;
	struct runtime_list *rt;
	struct rank_view *rv;
};

/* Rank @i of @j checked as check PID would, into @rc's views. False when it could not be. */
static bool check_rank(const struct job *j, size_t i, const struct check_opts *o,
		       struct findings *fs, json_t *procs, struct rank_checks *rc)
{
	struct rank_view *rv = &rc->rv[i];
	pid_t rp = j->ranks[i].pid;
	char why[512];

	*rv = (struct rank_view){ .rank = j->ranks[i].rank, .pid = rp, .comm = j->ranks[i].comm };
	if (!o->json)
		printf("%srank %d, ", i ? "\n" : "", j->ranks[i].rank);
	if (inspection__new(rp, &rc->in[i], why, sizeof(why))) {
		if (!o->json)
			printf("process %d: could not be inspected\n", rp);
		dls_err("check --job: rank %d: %s", j->ranks[i].rank, why);
		return false;
	}
	if (check_process(rc->in[i], o, fs, procs, &rc->rt[i]))
		return false;
	if (procs)
		json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "rank",
				    json_integer(j->ranks[i].rank));
	rv->g = rc->in[i]->g;
	rv->rt = &rc->rt[i];
	rv->env_known = !job__environment(rp, &rv->env, &rv->n_env);
	rv->cpus_known = !job__cpus_allowed(rp, &rv->cpus, rv->cpus_list, sizeof(rv->cpus_list));
	return true;
}

static void rank_checks__free(struct rank_checks *rc, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (rc->rv) {
			for (size_t k = 0; k < rc->rv[i].n_env; k++)
				free(rc->rv[i].env[k]);
			free(rc->rv[i].env);
		}
		if (rc->rt)
			runtimes__free(&rc->rt[i]);
		if (rc->in)
			inspection__free(rc->in[i]);
	}
	free(rc->in);
	free(rc->rt);
	free(rc->rv);
}

/* The job detectors across the ranks of @rv, into @jfs and @diff; then said. */
static void compare_ranks(const struct job *j, const struct rank_checks *rc,
			  const struct check_opts *o, struct findings *jfs, json_t *diff,
			  json_t *doc)
{
	struct job_ctx ctx = { .launcher = j->launcher, .r = rc->rv, .n = j->n, .diff = diff };

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
}

/*
 * check --job: each rank checked as check PID would, then the job detectors across the ranks.
 * Nothing is stopped. Returns true when the job or a rank could not be inspected.
 */
static bool check_job(pid_t pid, const struct check_opts *o, struct findings *fs,
		      struct findings *jfs, json_t *doc)
{
	struct rank_checks rc = { 0 };
	json_t *procs = doc ? json_object_get(doc, "processes") : NULL, *diff = json_object();
	struct job *j = NULL;
	char why[512], desc[128];
	bool failed = false;

	if (job__find(pid, &j, why, sizeof(why))) {
		dls_err("check --job: %s", why);
		json_decref(diff);
		return true;
	}
	rc.in = calloc(j->n, sizeof(*rc.in));
	rc.rt = calloc(j->n, sizeof(*rc.rt));
	rc.rv = calloc(j->n, sizeof(*rc.rv));
	if (!rc.in || !rc.rt || !rc.rv) {
		dls_err("check --job: out of memory");
		failed = true;
		goto out;
	}
	job__describe_ranks(j, desc, sizeof(desc));
	if (!o->json)
		printf("%s job: launcher %d (%s: %s), %s; %d is %s\n\n",
		       job_scheme__name(j->scheme), j->launcher, j->launcher_comm, j->launcher_cmd,
		       desc, j->asked, j->asked_role);
	for (size_t i = 0; i < j->n; i++)
		if (!check_rank(j, i, o, fs, procs, &rc))
			failed = true;
	compare_ranks(j, &rc, o, jfs, diff, doc);
out:
	rank_checks__free(&rc, j->n);
	json_decref(diff);
	job__free(j);
	return failed;
}

static void check_usage(FILE *f)
{
	fprintf(f,
		"Usage: dlscope check [OPTIONS] PID...\n"
		"       dlscope check [OPTIONS] -- COMMAND [ARGS...]\n"
		"       dlscope check --job [OPTIONS] PID\n"
		"       dlscope check [OPTIONS] TRACE.jsonl\n"
		"       dlscope check [OPTIONS] CORE | --coredump MATCH\n"
		"\n"
		"Run every detector on live processes, without stopping them; or run COMMAND, stop\n"
		"it at its exit (ptrace exit event; no root needed), check the libraries it ended\n"
		"with, and let it exit; each process COMMAND runs (fork and exec: a wrapper's,\n"
		"make's, pytest's) is checked the same way at its exit, named by PID and command\n"
		"line. A command killed by a signal is reported with the signal, the faulting\n"
		"address, the function and object of the pc, and the crashing thread's stack; the\n"
		"signal is still delivered. Each finding has an id, a severity, the evidence, why\n"
		"it breaks and what to do.\n"
		"\n"
		"  -p, --pid PID         a process (as an operand; a comma list \"1,2\" for several)\n"
		"  -j, --json            one JSON document (docs/check-schema.md)\n"
		"      --fail-on LEVEL   exit 1 when a finding at or above LEVEL (info, warning,\n"
		"                        error; default error) is found\n"
		"      --only IDS        run only these detectors (comma-separated)\n"
		"  -l, --list            list the detectors\n"
		"      --progress        a progress line on stderr (default when it is a terminal)\n"
		"      --no-follow       with -- COMMAND: check COMMAND only, not the processes it runs\n"
		"      --core FILE       with -- COMMAND: at its fatal signal, before the signal is\n"
		"                        delivered, write a core of it there (as capture: the\n"
		"                        crashing thread, its signal and the memory it needs)\n"
		"      --job             every rank of PID's job (torchrun, mpirun, srun; PID is\n"
		"                        any member), then what differs between the ranks:\n"
		"                        objects, versions and builds, environment (*_NUM_THREADS,\n"
		"                        LD_*, NCCL_*, CUDA_VISIBLE_DEVICES), and pool threads\n"
		"                        against the CPUs the ranks may use (oversubscription)\n" COREOPT_USAGE
		"  -h, --help\n"
		"\n"
		"Exit status: 0 nothing at or above --fail-on, 1 findings, 2 usage error,\n"
		"3 a process could not be inspected, 4 COMMAND exited non-zero or was killed by\n"
		"a signal. When several apply, the most severe: 4, then 1, then 3 (the findings\n"
		"and the errors are all printed).\n"
		"\n"
		"With TRACE.jsonl (of 'dlscope record', or 'dlscope merge' of several nodes), the\n"
		"findings the live detectors recorded in it, by process (a merged trace's by host\n"
		"and PID); --only and --fail-on apply, 3 when the trace cannot be read.\n");
}

/* What check's command line names: processes, a command, a job, a core or a trace. */
struct check_args {
	struct check_opts o;
	struct cliopt cl;
	pid_t *pids;
	size_t n_pids, cap_pids;
	const char *core;  /* a core file operand */
	const char *trace; /* a trace operand */
};

/* The options and operands into @a: -1 to go on, or the exit status (after one line, or help). */
static int check_parse(int argc, char **argv, struct check_args *a)
{
	const struct cliopt *cl = &a->cl;
	bool list = false;
	int ret = check_opts__parse(argc, argv, &a->o, "check", check_usage, &list, &a->cl,
				    &a->pids, &a->n_pids, &a->cap_pids);

	if (ret >= 0)
		return ret == 100 ? DLS_EXIT_OK : ret;
	if (list) {
		check_opts__list_detectors();
		return DLS_EXIT_OK;
	}
	if (cl->command && (!cl->command[0] || a->n_pids || cl->n_ops || a->o.job))
		return cliopt__usage("check",
				     !cl->command[0] ?
					     "no command after --" :
					     "-- COMMAND runs a command: no PID or --job with it");
	/* A core file (the operand, --coredump MATCH): the process it holds, checked as a live one. */
	ret = core_opts__path(&a->o.read_core, cl, NULL, cl->command || a->o.job || a->n_pids,
			      &a->core);
	if (ret)
		return ret;
	/* A trace rather than processes: what its live detectors found. */
	if (!a->core && !cl->command && !a->o.job && !a->n_pids && cl->n_ops == 1 &&
	    is_trace_arg(cl->ops[0])) {
		a->trace = cl->ops[0];
		return -1;
	}
	if (!cl->command && !a->core) {
		ret = cliopt__pid_operands(cl, &a->pids, &a->n_pids, &a->cap_pids);
		if (ret)
			return ret;
		if (!a->n_pids)
			return cliopt__usage("check", "no PID or command given");
	}
	if (a->o.job && a->n_pids != 1)
		return cliopt__usage("check", "--job takes one process ID, any member of the job");
	return -1;
}

/* check -- CMD, and how it ended said (in @doc with --json). True when it could not be checked. */
static bool check_command_run(char **command, const struct check_opts *o, struct findings *fs,
			      json_t *doc, json_t *procs, bool *cmd_failed)
{
	struct cmd_outcome res = { 0 };
	bool failed = check_command(command, o, fs, procs, &res) != 0;

	*cmd_failed = res.ended && (res.signo || res.exit_status);
	if (!o->json && res.ended)
		print_outcome(command[0], &res);
	if (doc && res.ended) {
		json_object_set_new(doc, "command_status",
				    json_integer(res.signo ? 128 + res.signo : res.exit_status));
		json_object_set_new(doc, "command", outcome_to_json(&res));
	}
	crash__free(res.crash);
	return failed;
}

/* check CORE: the process the core holds. True when it could not be checked. */
static bool check_core(const char *core, const struct check_opts *o, struct findings *fs,
		       json_t *procs)
{
	struct corefile *cf;
	struct inspection *in;
	struct target *t;
	bool failed = true;

	if (!core_target__open(core, &o->read_core, &cf, &t)) {
		in = inspection__from_target(t);
		if (!in)
			target__free(t);
		failed = !in || check_process(in, o, fs, procs, NULL);
		inspection__free(in);
		corefile__free(cf);
	}
	return failed;
}

/* check PID...: each process. True when one could not be checked. */
static bool check_pids(const pid_t *pids, size_t n_pids, const struct check_opts *o,
		       struct findings *fs, json_t *procs)
{
	bool failed = false;

	for (size_t i = 0; i < n_pids; i++) {
		struct inspection *in;
		char why[512];

		if (inspection__new(pids[i], &in, why, sizeof(why))) {
			dls_err("%s", why);
			failed = true;
			continue;
		}
		if (!o->json && i)
			putchar('\n');
		if (check_process(in, o, fs, procs, NULL))
			failed = true;
		inspection__free(in);
	}
	return failed;
}

/* The check @a names, and its exit status. */
static int check_run(struct check_args *a)
{
	struct check_opts *o = &a->o;
	struct findings fs = { 0 }, jfs = { 0 };
	json_t *doc = NULL, *procs = NULL;
	bool failed, cmd_failed = false;
	int ret;

	if (o->json) {
		/* "dlscope" first, as in every document; check_opts__finish() sets it again, to the same. */
		doc = json_pack("{s:s}", "dlscope", DLSCOPE_VERSION);
		procs = json_array();
		json_object_set_new(doc, "processes", procs);
	}
	o->pkgs = pkg_cache__new();
	if (o->job)
		failed = check_job(a->pids[0], o, &fs, &jfs, doc);
	else if (a->cl.command)
		failed = check_command_run(a->cl.command, o, &fs, doc, procs, &cmd_failed);
	else if (a->core)
		failed = check_core(a->core, o, &fs, procs);
	else
		failed = check_pids(a->pids, a->n_pids, o, &fs, procs);
	ret = check_opts__finish(&fs, o, doc, failed);
	/* The cross-rank findings count for the exit status like a rank's own. */
	if (o->job && ret != DLS_EXIT_FINDINGS && findings__max_severity(&jfs) >= o->fail_on)
		ret = DLS_EXIT_FINDINGS;
	/* The command's own failure comes first: findings and inspection errors are still shown. */
	if (cmd_failed && ret != DLS_EXIT_USAGE)
		ret = DLS_EXIT_COMMAND;
	findings__free(&jfs);
	pkg_cache__free(o->pkgs);
	findings__free(&fs);
	return ret;
}

int cmd_check(int argc, char **argv)
{
	struct check_args a = { 0 };
	int ret = check_parse(argc, argv, &a);

	if (ret < 0 && a.trace)
		ret = check__trace(a.trace, a.o.json, a.o.fail_on, check_opts__selected_cb, &a.o);
	else if (ret < 0)
		ret = check_run(&a);
	core_opts__done(&a.o.read_core);
	free(a.pids);
	return ret;
}
