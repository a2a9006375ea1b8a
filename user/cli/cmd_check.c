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
#include "check_job.h"
#include "check_process.h"
#include "check_opts.h"
#include "cliopt.h"
#include "commands.h"
#include "corecmd.h"
#include "heapwarm.h"
#include "corefile.h"
#include "crash.h"
#include "detector.h"
#include "event.h"
#include "inspect.h"
#include "outfile.h"
#include "output.h"
#include "pkgowner.h"
#include "procfs.h"
#include "slurm_tasks.h"
#include "supervise.h"
#include "target.h"
#include "termsafe.h"

/* An argument that names a trace file rather than a process: it exists, or looks like a path. */
static bool is_trace_arg(const char *arg)
{
	struct stat st;
	size_t n = strlen(arg);
	pid_t pid;

	return parse_pid(arg, &pid) &&
	       (!stat(arg, &st) || strchr(arg, '/') || (n > 6 && !strcmp(arg + n - 6, ".jsonl")));
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
	e = check__process(in, o, cc->fs, cc->procs, cc->procs ? NULL : stdout, NULL);
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

static const struct cliopt_def check_defs[] = {
	{ .name = "pid",
	  .letter = 'p',
	  .arg = "PID",
	  .value = CLIOPT_PID,
	  .help = "a process (as an operand; a comma list \"1,2\" for several)" },
	{ .name = "json", .letter = 'j', .help = "one JSON document (docs/check-schema.md)" },
	CHECK_OPTS_SHARED_DEFS,
	{ .name = "no-follow",
	  .val = 'N',
	  .help = "with -- COMMAND: check COMMAND only, not the processes it runs" },
	{ .name = "core",
	  .val = 'C',
	  .arg = "FILE",
	  .value = CLIOPT_FILE,
	  .help = "with -- COMMAND: at its fatal signal, before the signal is delivered, write a "
		  "core of it there (as capture: the crashing thread's registers, its NT_SIGINFO, "
		  "the memory the stacks and the link maps need; the other threads run on and are "
		  "not in it)" },
	{ .name = "job",
	  .val = 'J',
	  .help = "every rank of PID's job (torchrun, mpirun, srun; PID is any member), then what "
		  "differs between the ranks: objects, versions and builds, environment "
		  "(*_NUM_THREADS, LD_*, NCCL_*, CUDA_VISIBLE_DEVICES), and pool threads against "
		  "the CPUs each node's ranks may use (oversubscription). A Slurm job (slurm:JOBID, "
		  "srun's PID, the batch script's or a task's) is checked on each of its nodes, "
		  "through srun --overlap, from any node" },
	SLURM_TASKS_OPTION_DEFS("check", 'D', "as in stacks", "library list once"),
	COREOPT_DEFS,
	{},
};

const struct cliopt_cmd check_cli = {
	.name = "check",
	.usage = "check [OPTIONS] PID...\n"
		 "check [OPTIONS] -- COMMAND [ARGS...]\n"
		 "check --job [OPTIONS] PID | slurm:JOBID[.STEP]\n"
		 "check [OPTIONS] TRACE.jsonl\n"
		 "check [OPTIONS] CORE | --coredump MATCH",
	.about =
		"Run every detector on live processes, without stopping them; or run COMMAND, stop\n"
		"it at its exit (ptrace exit event; no root needed), check the libraries it ended\n"
		"with, and let it exit; each process COMMAND runs (fork and exec: a wrapper's,\n"
		"make's, pytest's) is checked the same way at its exit, named by PID and command\n"
		"line. A command killed by a signal is reported with the signal, the faulting\n"
		"address, the function and object of the pc, and the crashing thread's stack; the\n"
		"signal is still delivered. Each finding has an id, a severity, the evidence, why\n"
		"it breaks and what to do.\n",
	.opts = check_defs,
	.after =
		"Exit status: 0 nothing at or above --fail-on, 1 findings, 2 usage error,\n"
		"3 a process could not be inspected, 4 COMMAND exited non-zero or was killed by\n"
		"a signal. When several apply, the most severe: 4, then 1, then 3 (the findings\n"
		"and the errors are all printed).\n"
		"\n"
		"With TRACE.jsonl (of 'dlscope record', or 'dlscope merge' of several nodes), the\n"
		"findings the live detectors recorded in it, by process (a merged trace's by host\n"
		"and PID); --only and --fail-on apply, 3 when the trace cannot be read.\n",
	.takes_command = true,
	.operands = CLIOPT_OP_PID | CLIOPT_OP_FILE,
};

/* What check's command line names: processes, a command, a job, a core or a trace. */
struct check_args {
	struct check_opts o;
	struct cliopt cl;
	pid_t *pids;
	size_t n_pids, cap_pids;
	const char *core;  /* a core file operand */
	const char *trace; /* a trace operand */
	const char *slurm; /* --job slurm:JOBID[.STEP]: after "slurm:" */
};

/* The options and operands into @a: -1 to go on, or the exit status (after one line, or help). */
static int check_parse(int argc, char **argv, struct check_args *a)
{
	const struct cliopt *cl = &a->cl;
	bool list = false;
	int ret = check_opts__parse(argc, argv, &a->o, &check_cli, &list, &a->cl, &a->pids,
				    &a->n_pids, &a->cap_pids);

	if (ret >= 0)
		return ret == 100 ? DLS_EXIT_OK : ret;
	if (list) {
		check_opts__list_detectors();
		return DLS_EXIT_OK;
	}
	if (a->o.job_node || a->o.job_relay)
		return cl->command || cl->n_ops || a->n_pids || a->o.job ||
				       (a->o.job_node && a->o.job_relay) ?
			       cliopt__usage("check", "--job-node or --job-relay takes no other "
						      "target") :
			       -1;
	if (a->o.fanout && !a->o.job)
		return cliopt__usage("check", "--fanout is for --job (a Slurm job's fan-in tree)");
	/* A Slurm job by its id, read on its nodes. */
	if (a->o.job && !cl->command && !a->n_pids && cl->n_ops == 1 &&
	    !strncmp(cl->ops[0], "slurm:", 6)) {
		a->slurm = cl->ops[0] + 6;
		return -1;
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
		failed = !in || check__process(in, o, fs, procs, procs ? NULL : stdout, NULL);
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
		if (check__process(in, o, fs, procs, procs ? NULL : stdout, NULL))
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
	bool failed, cmd_failed = false, usage = false;
	int ret;

	if (o->json) {
		/* "dlscope" first, as in every document; check_opts__finish() sets it again, to the same. */
		doc = json_pack("{s:s}", "dlscope", DLSCOPE_VERSION);
		procs = json_array();
		json_object_set_new(doc, "processes", procs);
	}
	o->pkgs = pkg_cache__new();
	if (a->slurm)
		failed = check_job__slurm(a->slurm, o, &fs, &jfs, doc, &usage);
	else if (o->job)
		failed = check_job__pid(a->pids[0], o, &fs, &jfs, doc);
	else if (a->cl.command)
		failed = check_command_run(a->cl.command, o, &fs, doc, procs, &cmd_failed);
	else if (a->core)
		failed = check_core(a->core, o, &fs, procs);
	else
		failed = check_pids(a->pids, a->n_pids, o, &fs, procs);
	ret = check_opts__finish(&fs, o, doc, failed);
	if (usage)
		ret = DLS_EXIT_USAGE;
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
	else if (ret < 0 && a.o.job_node) {
		a.o.pkgs = pkg_cache__new();
		ret = check_job__node(a.o.job_node, &a.o);
		pkg_cache__free(a.o.pkgs);
	} else if (ret < 0 && a.o.job_relay) {
		ret = check_job__relay(a.o.job_relay, &a.o);
	} else if (ret < 0) {
		/* A process read once (not a command run and watched). */
		if (a.n_pids)
			heap__warm_enable();
		ret = check_run(&a);
	}
	core_opts__done(&a.o.read_core);
	free(a.pids);
	return ret;
}
