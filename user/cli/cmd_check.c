// SPDX-License-Identifier: GPL-2.0
/* dlscope check: live processes, core files, traces, or a command run to its exit. */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
#include "inspect.h"
#include "job.h"
#include "libgraph.h"
#include "phase.h"
#include "runtimes.h"
#include "outfile.h"
#include "output.h"
#include "procfs.h"
#include "pkgowner.h"
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

/* All selected detectors on one process; findings are appended to @fs. */
static int check_process(struct inspection *in, const struct check_opts *o, struct findings *fs,
			 json_t *procs, struct runtime_list *keep_rt)
{
	const struct target *t = in->t;
	const struct threadscan *ts;
	const struct libgraph *g;
	struct runtime_list rt = { 0 };
	struct check_ctx ctx;
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
	if (procs) {
		struct findings mine = { .f = fs->f + first, .n = fs->n - first };

		/* A core's process is gone: its command line is the one the core kept. */
		char *cmdline = t->core ? strdup(t->core->args) : proc__cmdline(t->pid);

		/* The command line: a report says how to run the program again, elsewhere. */
		json_array_append_new(
			procs,
			json_pack("{s:i, s:s, s:s, s:o*, s:i, s:i, s:o, s:o}", "pid",
				  (json_int_t)t->pid, "comm", t->comm, "exe", t->exe, "cmdline",
				  cmdline ? json_string(cmdline) : json_null(), "object_count",
				  (json_int_t)g->n, "threads", (json_int_t)n_threads, "runtimes",
				  runtimes__to_json(&rt, g), "findings", findings__to_json(&mine)));
		free(cmdline);
		/* The executable's build-id: which build of the program this is. */
		for (size_t k = 0; k < g->n; k++)
			if (g->objs[k]->origin == LG_EXECUTABLE && g->objs[k]->elf &&
			    elfobj__build_id(g->objs[k]->elf)) {
				json_object_set_new(
					json_array_get(procs, json_array_size(procs) - 1),
					"build_id", json_string(elfobj__build_id(g->objs[k]->elf)));
				break;
			}
	} else {
		struct findings mine = { .f = fs->f + first, .n = fs->n - first };

		printf("process %d (%s): %zu object%s, %zu thread%s, %zu finding%s\n", t->pid,
		       t->comm, g->n, g->n == 1 ? "" : "s", n_threads, n_threads == 1 ? "" : "s",
		       mine.n, mine.n == 1 ? "" : "s");
		if (rt.n) {
			printf("runtimes:\n");
			runtimes__print(&rt, g, "  ", stdout);
		}
		if (mine.n) {
			putchar('\n');
			findings__print(&mine, stdout);
		}
	}
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

/* The threads of the command, which we trace from their first instruction. */
struct tracees {
	struct tracee {
		pid_t tid;
		pid_t tgid;   /* the process it is a thread of */
		bool started; /* its first stop (the SIGSTOP of a new thread) was seen */
		bool caught;  /* it had a fault that a handler of the program caught */
		siginfo_t fault;
	} * t;
	size_t n;
};

/* The process @tid is a thread of, from /proc (0 when it is gone). */
static pid_t tgid_of(pid_t tid)
{
	char path[64], line[128];
	pid_t tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

static struct tracee *tracee_get(struct tracees *ts, pid_t tid)
{
	struct tracee *nt;

	for (size_t i = 0; i < ts->n; i++)
		if (ts->t[i].tid == tid)
			return &ts->t[i];
	nt = realloc(ts->t, (ts->n + 1) * sizeof(*nt));
	if (!nt)
		return NULL;
	ts->t = nt;
	ts->t[ts->n] = (struct tracee){ .tid = tid, .tgid = tgid_of(tid) };
	if (!ts->t[ts->n].tgid)
		ts->t[ts->n].tgid = tid;
	return &ts->t[ts->n++];
}

static void tracee_drop(struct tracees *ts, pid_t tid)
{
	for (size_t i = 0; i < ts->n; i++)
		if (ts->t[i].tid == tid) {
			ts->t[i] = ts->t[--ts->n];
			return;
		}
}

static size_t tracee_count(const struct tracees *ts, pid_t tgid)
{
	size_t n = 0;

	for (size_t i = 0; i < ts->n; i++)
		n += ts->t[i].tgid == tgid;
	return n;
}

/* A process of the command's tree: the command, or one it ran (fork and exec). */
struct traced_proc {
	pid_t pid;
	bool execd; /* it ran a program of its own: checked at its exit */
	bool held;  /* its main thread waits at PTRACE_EVENT_EXIT for its other threads */
	bool checked;
	char *cmdline;
};

struct traced_procs {
	struct traced_proc *p;
	size_t n;
	size_t checked; /* the descendants checked */
};

static struct traced_proc *proc_get(struct traced_procs *ps, pid_t pid)
{
	struct traced_proc *np;

	for (size_t i = 0; i < ps->n; i++)
		if (ps->p[i].pid == pid)
			return &ps->p[i];
	np = realloc(ps->p, (ps->n + 1) * sizeof(*np));
	if (!np)
		return NULL;
	ps->p = np;
	ps->p[ps->n] = (struct traced_proc){ .pid = pid };
	return &ps->p[ps->n++];
}

static bool top_checked(const struct traced_procs *ps, pid_t pid)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->p[i].pid == pid)
			return ps->p[i].checked;
	return false;
}

/* The command's arguments with spaces between them. */
static char *joined_args(char **argv)
{
	size_t len = 1;
	char *s;

	for (size_t i = 0; argv[i]; i++)
		len += strlen(argv[i]) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	s[0] = '\0';
	for (size_t i = 0; argv[i]; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

/*
 * Check a process of the command's tree, its main thread at PTRACE_EVENT_EXIT and its other
 * threads gone; one the command ran is named by PID and command line.
 */
static void check_at_exit(struct traced_proc *tp, bool descendant, const struct check_opts *o,
			  struct findings *fs, json_t *procs, int *err)
{
	struct inspection *in;
	char why[512];
	int e;

	tp->checked = true;
	e = inspection__new(tp->pid, &in, why, sizeof(why));
	if (e) {
		dls_err("%s", why);
		*err = e;
		return;
	}
	if (descendant && !o->json)
		printf("process %d, run by the command: %s\n", tp->pid,
		       tp->cmdline ? tp->cmdline : "?");
	e = check_process(in, o, fs, procs, NULL);
	if (e)
		*err = e;
	else if (procs)
		json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "cmdline",
				    tp->cmdline ? json_string(tp->cmdline) : json_null());
	if (descendant && !o->json)
		putchar('\n');
	inspection__free(in);
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
		fprintf(stderr,
			"dlscope: check: the core at SIG%s of thread %d is in %s (%" PRIu64
			" KiB)\n",
			sigabbrev_np(si->si_signo) ?: "?", tid, path, st.file_size / 1024);
	}
	close(fd);
}

/*
 * Run @argv under ptrace, every thread traced (a crash in any of them is seen at its
 * signal-delivery stop), check it at its main thread's exit (PTRACE_EVENT_EXIT: its memory is
 * still there) once its other threads are gone, and let it exit. Signals are passed on as they come: a fatal one still kills it,
 * after its details are taken. A child of ours may be traced without root.
 */
static int check_command(char **argv, const struct check_opts *o, struct findings *fs,
			 json_t *procs, struct cmd_outcome *res)
{
	struct tracees ts = { 0 };
	struct traced_procs ps = { 0 };
	struct traced_proc *top;
	int status, err = 0, pipefd[2];
	bool checked = false, draining = false;
	pid_t pid, parent;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	parent = getpid();
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* What failed before exec, for the parent: {step, errno}. */
		int e[2] = { 0, 0 };

		/*
		 * The command never outlives the check: whenever dlscope dies, even before
		 * PTRACE_O_EXITKILL is set, it is killed, never left in a tracing stop or
		 * adopted (and traced) by the reaper. A parent already gone ends it here.
		 */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(127);
		/* With --json, stdout carries the document: the command writes to stderr. */
		if (o->json)
			dup2(STDERR_FILENO, STDOUT_FILENO);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
			e[0] = 1; /* already traced: strace -f, a debugger */
		} else {
			execvp(argv[0], argv);
			e[0] = 2;
		}
		e[1] = errno;
		if (write(pipefd[1], e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	/* The first stop is the exec's SIGTRAP (or the child died before it). */
	if (waitpid(pid, &status, 0) < 0 || !WIFSTOPPED(status)) {
		int e[2] = { 0, 0 };

		if (read(pipefd[0], e, sizeof(e)) != sizeof(e))
			dls_err("check: '%s' did not start", argv[0]);
		else if (e[0] == 1)
			dls_err("check: cannot trace '%s': %s (dlscope itself runs under a tracer "
				"such as strace -f or a debugger, and a process has only one)",
				argv[0], strerror(e[1]));
		else
			dls_err("check: cannot run '%s': %s", argv[0], strerror(e[1]));
		close(pipefd[0]);
		return -ECHILD;
	}
	close(pipefd[0]);
	/*
	 * Later execs report PTRACE_EVENT_EXEC: every SIGTRAP after this one is the program's.
	 * Unless --no-follow, the processes it forks are traced too, and each that runs a program
	 * of its own is checked at its exit: CI jobs run wrappers, make, pytest, tox.
	 */
	ptrace(PTRACE_SETOPTIONS, pid, NULL,
	       (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL | PTRACE_O_TRACECLONE |
			      PTRACE_O_TRACEEXEC |
			      (o->no_follow ? 0 : PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK)));
	top = proc_get(&ps, pid);
	if (!tracee_get(&ts, pid) || !top) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		free(ts.t);
		free(ps.p);
		return -ENOMEM;
	}
	top->execd = true;
	top->cmdline = joined_args(argv);
	ts.t[0].started = true;
	ptrace(PTRACE_CONT, pid, NULL, NULL);
	while (ts.n) {
		struct tracee *tr;
		struct traced_proc *tp;
		unsigned long msg;
		siginfo_t si;
		int sig = 0, event;
		pid_t w = waitpid(-1, &status, __WALL), tgid;

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != ECHILD)
				err = -errno;
			break;
		}
		tr = tracee_get(&ts, w);
		tgid = tr ? tr->tgid : w;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			tracee_drop(&ts, w);
			if (w == pid) {
				res->ended = true;
				if (WIFEXITED(status)) {
					res->exit_status = WEXITSTATUS(status);
				} else {
					res->signo = WTERMSIG(status);
					res->core_dumped = WCOREDUMP(status);
				}
				/* What it left running is let go, untraced and unchecked. */
				for (size_t i = 0; i < ps.n; i++)
					if (ps.p[i].held) {
						ptrace(PTRACE_DETACH, ps.p[i].pid, NULL, NULL);
						tracee_drop(&ts, ps.p[i].pid);
					}
				/*
				 * Each is stopped once more, to be detached at that SIGSTOP with
				 * no signal, which swallows it. One whose first stop (its own
				 * SIGSTOP) has not come yet gets none: a second SIGSTOP pending
				 * after the detach would leave it stopped.
				 */
				for (size_t i = 0; i < ts.n; i++)
					if (ts.t[i].started)
						syscall(SYS_tgkill, ts.t[i].tgid, ts.t[i].tid,
							SIGSTOP);
				if (ts.n)
					dls_warn(
						"check: %zu thread%s of processes '%s' started are "
						"still running: not checked",
						ts.n, ts.n == 1 ? "" : "s", argv[0]);
				draining = true;
				continue;
			}
			tp = w == tgid ? NULL : proc_get(&ps, tgid);
			if (!draining && tp && tp->held && tracee_count(&ts, tgid) == 1) {
				check_at_exit(tp, tgid != pid, o, fs, procs, &err);
				ps.checked += tgid != pid;
				tp->held = false;
				ptrace(PTRACE_CONT, tgid, NULL, NULL);
			}
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		if (draining) {
			/* Any other stop (an event, the program's own signal) goes on: its
			 * signal passed on; the SIGSTOP sent above comes next. */
			if (!(status >> 16) && WSTOPSIG(status) == SIGSTOP) {
				ptrace(PTRACE_DETACH, w, NULL, NULL);
				tracee_drop(&ts, w);
			} else {
				ptrace(PTRACE_CONT, w, NULL,
				       (void *)(long)(status >> 16 || WSTOPSIG(status) ==
									      (SIGTRAP | 0x80) ?
							      0 :
							      WSTOPSIG(status)));
			}
			continue;
		}
		event = status >> 16;
		if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK ||
		    event == PTRACE_EVENT_VFORK) {
			/* A new thread or process: traced from its first stop. */
			if (!ptrace(PTRACE_GETEVENTMSG, w, NULL, &msg))
				tracee_get(&ts, (pid_t)msg);
		} else if (event == PTRACE_EVENT_EXIT) {
			/* A main thread is held there until its other threads are gone. */
			tp = w == tgid ? proc_get(&ps, tgid) : NULL;
			if (tp && tp->execd && !tp->checked) {
				if (tracee_count(&ts, tgid) > 1) {
					tp->held = true;
					continue;
				}
				check_at_exit(tp, tgid != pid, o, fs, procs, &err);
				ps.checked += tgid != pid;
			}
		} else if (event == PTRACE_EVENT_EXEC) {
			/* A thread that execs takes the main thread's ID; its own ID just ends. */
			if (!ptrace(PTRACE_GETEVENTMSG, w, NULL, &msg) && (pid_t)msg != tgid)
				tracee_drop(&ts, (pid_t)msg);
			tp = proc_get(&ps, tgid);
			if (tp && tgid != pid) {
				tp->execd = true;
				free(tp->cmdline);
				tp->cmdline = proc__cmdline(tgid);
			}
		} else if (event) {
			/* Nothing to pass on. */
		} else if (tr && !tr->started && WSTOPSIG(status) == SIGSTOP) {
			/* A new thread's or process's first stop, not a signal of the program. */
			tr->started = true;
			if (tr->tgid == w && tr->tgid != pid && o->no_follow) {
				/* A clone that is a process of its own, not followed. */
				ptrace(PTRACE_DETACH, w, NULL, NULL);
				tracee_drop(&ts, w);
				continue;
			}
		} else if (!ptrace(PTRACE_GETSIGINFO, w, NULL, &si)) {
			/* A signal-delivery stop (a group-stop has no siginfo): pass it on. */
			sig = WSTOPSIG(status);
			if (tgid != pid || res->crash) {
				/*
				 * The first fatal signal is the one that ends it; the processes it
				 * runs get theirs as they come.
				 */
			} else if (crash__signal_kills(pid, w, &si)) {
				if (crash__capture(pid, w, &si,
						   tr && tr->caught ? &tr->fault : NULL,
						   &res->crash))
					dls_warn("check: out of memory describing the crash");
				if (o->core)
					write_crash_core(o->core, pid, w, &si);
			} else if (tr && crash__is_fault(&si)) {
				tr->fault = si;
				tr->caught = true;
			}
		}
		ptrace(PTRACE_CONT, w, NULL, (void *)(long)sig);
	}
	free(ts.t);
	checked = top_checked(&ps, pid);
	if (!o->no_follow && !o->json && ps.checked)
		printf("(%zu process%s run by the command checked at their exit; --no-follow "
		       "checks the command only)\n",
		       ps.checked, ps.checked == 1 ? "" : "es");
	for (size_t i = 0; i < ps.n; i++)
		free(ps.p[i].cmdline);
	free(ps.p);
	/* Details taken at a stop whose signal did not end it after all (a handler appeared). */
	if (res->crash && res->crash->signo != res->signo) {
		crash__free(res->crash);
		res->crash = NULL;
	}
	if (!checked && !err) {
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

/*
 * check --job: each rank checked as check PID would, then the job detectors across the ranks.
 * Nothing is stopped. Returns true when the job or a rank could not be inspected.
 */
static bool check_job(pid_t pid, const struct check_opts *o, struct findings *fs,
		      struct findings *jfs, json_t *doc)
{
	struct inspection **in = NULL;
	struct runtime_list *rt = NULL;
	struct rank_view *rv = NULL;
	json_t *procs = doc ? json_object_get(doc, "processes") : NULL, *diff = json_object();
	struct job *j = NULL;
	char why[512], desc[128];
	bool failed = false;

	if (job__find(pid, &j, why, sizeof(why))) {
		dls_err("check --job: %s", why);
		json_decref(diff);
		return true;
	}
	in = calloc(j->n, sizeof(*in));
	rt = calloc(j->n, sizeof(*rt));
	rv = calloc(j->n, sizeof(*rv));
	if (!in || !rt || !rv) {
		dls_err("check --job: out of memory");
		failed = true;
		goto out;
	}
	job__describe_ranks(j, desc, sizeof(desc));
	if (!o->json)
		printf("%s job: launcher %d (%s: %s), %s; %d is %s\n\n",
		       job_scheme__name(j->scheme), j->launcher, j->launcher_comm, j->launcher_cmd,
		       desc, j->asked, j->asked_role);
	for (size_t i = 0; i < j->n; i++) {
		pid_t rp = j->ranks[i].pid;

		rv[i] = (struct rank_view){ .rank = j->ranks[i].rank,
					    .pid = rp,
					    .comm = j->ranks[i].comm };
		if (!o->json)
			printf("%srank %d, ", i ? "\n" : "", j->ranks[i].rank);
		if (inspection__new(rp, &in[i], why, sizeof(why))) {
			if (!o->json)
				printf("process %d: could not be inspected\n", rp);
			dls_err("check --job: rank %d: %s", j->ranks[i].rank, why);
			failed = true;
			continue;
		}
		if (check_process(in[i], o, fs, procs, &rt[i])) {
			failed = true;
			continue;
		}
		if (procs)
			json_object_set_new(json_array_get(procs, json_array_size(procs) - 1),
					    "rank", json_integer(j->ranks[i].rank));
		rv[i].g = in[i]->g;
		rv[i].rt = &rt[i];
		rv[i].env_known = !job__environment(rp, &rv[i].env, &rv[i].n_env);
		rv[i].cpus_known = !job__cpus_allowed(rp, &rv[i].cpus, rv[i].cpus_list,
						      sizeof(rv[i].cpus_list));
	}
	{
		struct job_ctx ctx = { .launcher = j->launcher, .r = rv, .n = j->n, .diff = diff };

		for (size_t d = 0; d < n_detectors; d++)
			if (detectors[d].job && check_opts__selected(o, detectors[d].id))
				detectors[d].job(&ctx, jfs);
	}
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
out:
	for (size_t i = 0; j && i < j->n; i++) {
		if (rv) {
			for (size_t k = 0; k < rv[i].n_env; k++)
				free(rv[i].env[k]);
			free(rv[i].env);
		}
		if (rt)
			runtimes__free(&rt[i]);
		if (in)
			inspection__free(in[i]);
	}
	free(in);
	free(rt);
	free(rv);
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

int cmd_check(int argc, char **argv)
{
	struct check_opts o = { 0 };
	struct findings fs = { 0 };
	json_t *doc = NULL, *procs = NULL;
	struct cmd_outcome res = { 0 };
	bool list = false, failed = false, cmd_failed = false;
	const char *core = NULL;
	struct cliopt cl;
	pid_t *pids = NULL;
	size_t n_pids = 0;
	int ret;

	ret = check_opts__parse(argc, argv, &o, "check", check_usage, &list, &cl, &pids, &n_pids);
	if (ret >= 0) {
		free(pids);
		return ret == 100 ? DLS_EXIT_OK : ret;
	}
	if (list) {
		free(pids);
		check_opts__list_detectors();
		return DLS_EXIT_OK;
	}
	if (cl.command && (!cl.command[0] || n_pids || cl.n_ops || o.job)) {
		free(pids);
		return cliopt__usage("check",
				     !cl.command[0] ?
					     "no command after --" :
					     "-- COMMAND runs a command: no PID or --job with it");
	}
	/* A core file (the operand, --coredump MATCH): the process it holds, checked as a live one. */
	ret = core_opts__path(&o.read_core, &cl, NULL, cl.command || o.job || n_pids, &core);
	if (ret) {
		free(pids);
		return ret;
	}
	/* A trace rather than processes: what its live detectors found. */
	if (!core && !cl.command && !o.job && !n_pids && cl.n_ops == 1 && is_trace_arg(cl.ops[0]))
		return check__trace(cl.ops[0], o.json, o.fail_on, check_opts__selected_cb, &o);
	if (!cl.command && !core) {
		ret = cliopt__pid_operands(&cl, &pids, &n_pids);
		if (ret) {
			free(pids);
			return ret;
		}
		if (!n_pids)
			return cliopt__usage("check", "no PID or command given");
	}
	if (o.job && n_pids != 1) {
		free(pids);
		return cliopt__usage("check", "--job takes one process ID, any member of the job");
	}
	if (o.json) {
		/* "dlscope" first, as in every document; check_opts__finish() sets it again, to the same. */
		doc = json_pack("{s:s}", "dlscope", DLSCOPE_VERSION);
		procs = json_array();
		json_object_set_new(doc, "processes", procs);
	}
	o.pkgs = pkg_cache__new();
	if (o.job) {
		struct findings jfs = { 0 };

		failed = check_job(pids[0], &o, &fs, &jfs, doc);
		ret = check_opts__finish(&fs, &o, doc, failed);
		/* The cross-rank findings count for the exit status like a rank's own. */
		if (ret != DLS_EXIT_FINDINGS && findings__max_severity(&jfs) >= o.fail_on)
			ret = DLS_EXIT_FINDINGS;
		findings__free(&jfs);
		pkg_cache__free(o.pkgs);
		findings__free(&fs);
		free(pids);
		return ret;
	}
	if (cl.command) {
		failed = check_command(cl.command, &o, &fs, procs, &res) != 0;
		cmd_failed = res.ended && (res.signo || res.exit_status);
		if (!o.json && res.ended)
			print_outcome(cl.command[0], &res);
		if (doc && res.ended) {
			json_object_set_new(doc, "command_status",
					    json_integer(res.signo ? 128 + res.signo :
								     res.exit_status));
			json_object_set_new(doc, "command", outcome_to_json(&res));
		}
		crash__free(res.crash);
	} else if (core) {
		struct corefile *cf;
		struct inspection *in;
		struct target *t;

		failed = true;
		if (!core_target__open(core, &o.read_core, &cf, &t)) {
			in = inspection__from_target(t);
			if (!in)
				target__free(t);
			failed = !in || check_process(in, &o, &fs, procs, NULL);
			inspection__free(in);
			corefile__free(cf);
		}
		core_opts__done(&o.read_core);
	} else {
		for (size_t i = 0; i < n_pids; i++) {
			struct inspection *in;
			char why[512];

			if (inspection__new(pids[i], &in, why, sizeof(why))) {
				dls_err("%s", why);
				failed = true;
				continue;
			}
			if (!o.json && i)
				putchar('\n');
			if (check_process(in, &o, &fs, procs, NULL))
				failed = true;
			inspection__free(in);
		}
	}
	ret = check_opts__finish(&fs, &o, doc, failed);
	pkg_cache__free(o.pkgs);
	/* The command's own failure comes first: findings and inspection errors are still shown. */
	if (cmd_failed && ret != DLS_EXIT_USAGE)
		ret = DLS_EXIT_COMMAND;
	findings__free(&fs);
	free(pids);
	return ret;
}
