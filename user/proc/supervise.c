// SPDX-License-Identifier: GPL-2.0
/* The ptrace supervisor of check -- CMD: see supervise.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array.h"
#include "output.h"
#include "procfs.h"
#include "supervise.h"

/* The threads of the command, which we trace from their first instruction. */
struct tracees {
	struct tracee {
		pid_t tid;
		pid_t tgid;   /* the process it is a thread of */
		bool started; /* its first stop (the SIGSTOP of a new thread) was seen */
		bool caught;  /* it had a fault that a handler of the program caught */
		siginfo_t fault;
	} * t;
	size_t n, cap;
};

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
	size_t n, cap;
};

/* One run: the command's PID, what is traced, and how far it got. */
struct supervisor {
	const struct supervise_hooks *h;
	struct supervise_result *res;
	char **argv;
	pid_t pid;
	struct tracees ts;
	struct traced_procs ps;
	bool draining; /* the command ended: what it left running is being let go */
	int err;
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
	for (size_t i = 0; i < ts->n; i++)
		if (ts->t[i].tid == tid)
			return &ts->t[i];
	if (ARRAY_RESERVE(ts->t, ts->cap, ts->n + 1))
		return NULL;
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

static struct traced_proc *proc_get(struct traced_procs *ps, pid_t pid)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->p[i].pid == pid)
			return &ps->p[i];
	if (ARRAY_RESERVE(ps->p, ps->cap, ps->n + 1))
		return NULL;
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

/* The child: traced, then the command; what failed before exec goes to @fd as {step, errno}. */
static void __attribute__((noreturn))
run_child(char **argv, const struct supervise_hooks *h, int fd, pid_t parent)
{
	int e[2] = { 0, 0 };

	/*
	 * The command never outlives the check: whenever dlscope dies, even before
	 * PTRACE_O_EXITKILL is set, it is killed, never left in a tracing stop or adopted (and
	 * traced) by the reaper. A parent already gone ends it here.
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(127);
	if (h->stdout_to_stderr)
		dup2(STDERR_FILENO, STDOUT_FILENO);
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
		e[0] = 1; /* already traced: strace -f, a debugger */
	} else {
		execvp(argv[0], argv);
		e[0] = 2;
	}
	e[1] = errno;
	if (write(fd, e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* The command started and stopped at its exec (its PID), or -errno after one line. */
static pid_t start_command(char **argv, const struct supervise_hooks *h)
{
	int status, pipefd[2], e[2] = { 0, 0 };
	pid_t pid, parent;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	parent = getpid();
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		run_child(argv, h, pipefd[1], parent);
	close(pipefd[1]);
	/* The first stop is the exec's SIGTRAP (or the child died before it). */
	if (waitpid(pid, &status, 0) >= 0 && WIFSTOPPED(status)) {
		close(pipefd[0]);
		return pid;
	}
	if (read(pipefd[0], e, sizeof(e)) != sizeof(e))
		dls_err("%s: '%s' did not start", h->cmd, argv[0]);
	else if (e[0] == 1)
		dls_err("%s: cannot trace '%s': %s (dlscope itself runs under a tracer "
			"such as strace -f or a debugger, and a process has only one)",
			h->cmd, argv[0], strerror(e[1]));
	else
		dls_err("%s: cannot run '%s': %s", h->cmd, argv[0], strerror(e[1]));
	close(pipefd[0]);
	return -ECHILD;
}

/* Process @tp at its exit, for the caller to look at. */
static void at_exit(struct supervisor *sv, struct traced_proc *tp)
{
	int e;

	tp->checked = true;
	e = sv->h->at_exit(sv->h->ctx, tp->pid, tp->pid != sv->pid, tp->cmdline);
	if (e)
		sv->err = e;
	sv->res->descendants_checked += tp->pid != sv->pid;
}

/* The command itself ended with @status: what it left running is let go. */
static void command_ended(struct supervisor *sv, int status)
{
	struct supervise_result *res = sv->res;

	res->ended = true;
	if (WIFEXITED(status)) {
		res->exit_status = WEXITSTATUS(status);
	} else {
		res->signo = WTERMSIG(status);
		res->core_dumped = WCOREDUMP(status);
	}
	/* What it left running is let go, untraced and unchecked. */
	for (size_t i = 0; i < sv->ps.n; i++)
		if (sv->ps.p[i].held) {
			ptrace(PTRACE_DETACH, sv->ps.p[i].pid, NULL, NULL);
			tracee_drop(&sv->ts, sv->ps.p[i].pid);
		}
	/*
	 * Each is stopped once more, to be detached at that SIGSTOP with no signal, which
	 * swallows it. One whose first stop (its own SIGSTOP) has not come yet gets none: a second
	 * SIGSTOP pending after the detach would leave it stopped.
	 */
	for (size_t i = 0; i < sv->ts.n; i++)
		if (sv->ts.t[i].started)
			syscall(SYS_tgkill, sv->ts.t[i].tgid, sv->ts.t[i].tid, SIGSTOP);
	if (sv->ts.n)
		dls_warn(
			"%s: %zu thread%s of processes '%s' started are still running: not checked",
			sv->h->cmd, sv->ts.n, sv->ts.n == 1 ? "" : "s", sv->argv[0]);
	sv->draining = true;
}

/* Thread @w of process @tgid is gone; the last one of a held process lets it be checked. */
static void thread_gone(struct supervisor *sv, pid_t w, pid_t tgid, int status)
{
	struct traced_proc *tp;

	tracee_drop(&sv->ts, w);
	if (w == sv->pid) {
		command_ended(sv, status);
		return;
	}
	tp = w == tgid ? NULL : proc_get(&sv->ps, tgid);
	if (!sv->draining && tp && tp->held && tracee_count(&sv->ts, tgid) == 1) {
		at_exit(sv, tp);
		tp->held = false;
		ptrace(PTRACE_CONT, tgid, NULL, NULL);
	}
}

/* A stop after the command ended: its own SIGSTOP detaches it, anything else goes on. */
static void draining_stop(struct supervisor *sv, pid_t w, int status)
{
	/* Any other stop (an event, the program's own signal) goes on: its signal passed on; the
	 * SIGSTOP sent above comes next. */
	if (!(status >> 16) && WSTOPSIG(status) == SIGSTOP) {
		ptrace(PTRACE_DETACH, w, NULL, NULL);
		tracee_drop(&sv->ts, w);
	} else {
		ptrace(PTRACE_CONT, w, NULL,
		       (void *)(long)(status >> 16 || WSTOPSIG(status) == (SIGTRAP | 0x80) ?
					      0 :
					      WSTOPSIG(status)));
	}
}

/* A ptrace event stop of @w: false when it stays stopped (a main thread held at its exit). */
static bool event_stop(struct supervisor *sv, pid_t w, pid_t tgid, int event)
{
	struct traced_proc *tp;
	unsigned long msg;

	if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK ||
	    event == PTRACE_EVENT_VFORK) {
		/* A new thread or process: traced from its first stop. */
		if (!ptrace(PTRACE_GETEVENTMSG, w, NULL, &msg))
			tracee_get(&sv->ts, (pid_t)msg);
	} else if (event == PTRACE_EVENT_EXIT) {
		/* A main thread is held there until its other threads are gone. */
		tp = w == tgid ? proc_get(&sv->ps, tgid) : NULL;
		if (tp && tp->execd && !tp->checked) {
			if (tracee_count(&sv->ts, tgid) > 1) {
				tp->held = true;
				return false;
			}
			at_exit(sv, tp);
		}
	} else if (event == PTRACE_EVENT_EXEC) {
		/* A thread that execs takes the main thread's ID; its own ID just ends. */
		if (!ptrace(PTRACE_GETEVENTMSG, w, NULL, &msg) && (pid_t)msg != tgid)
			tracee_drop(&sv->ts, (pid_t)msg);
		tp = proc_get(&sv->ps, tgid);
		if (tp && tgid != sv->pid) {
			tp->execd = true;
			free(tp->cmdline);
			tp->cmdline = proc__cmdline(tgid);
		}
	}
	return true;
}

/*
 * A signal stop of @w (@tr its tracee, NULL without memory): the signal to pass on, or -1 when
 * the thread is let go (a new process of its own, not followed).
 */
static int signal_stop(struct supervisor *sv, struct tracee *tr, pid_t w, pid_t tgid, int status)
{
	siginfo_t si;

	if (tr && !tr->started && WSTOPSIG(status) == SIGSTOP) {
		/* A new thread's or process's first stop, not a signal of the program. */
		tr->started = true;
		if (tr->tgid == w && tr->tgid != sv->pid && sv->h->no_follow) {
			/* A clone that is a process of its own, not followed. */
			ptrace(PTRACE_DETACH, w, NULL, NULL);
			tracee_drop(&sv->ts, w);
			return -1;
		}
		return 0;
	}
	/* A signal-delivery stop (a group-stop has no siginfo): pass it on. */
	if (ptrace(PTRACE_GETSIGINFO, w, NULL, &si))
		return 0;
	/* The processes the command runs get their signals as they come, unlooked at. */
	if (tgid == sv->pid &&
	    sv->h->signal(sv->h->ctx, sv->pid, w, &si, tr && tr->caught ? &tr->fault : NULL) &&
	    tr) {
		tr->fault = si;
		tr->caught = true;
	}
	return WSTOPSIG(status);
}

/* Every stop and exit until no traced thread is left. */
static void supervise(struct supervisor *sv)
{
	while (sv->ts.n) {
		struct tracee *tr;
		int status, sig = 0;
		pid_t w = waitpid(-1, &status, __WALL), tgid;

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != ECHILD)
				sv->err = -errno;
			break;
		}
		tr = tracee_get(&sv->ts, w);
		tgid = tr ? tr->tgid : w;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			thread_gone(sv, w, tgid, status);
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		if (sv->draining) {
			draining_stop(sv, w, status);
			continue;
		}
		if (status >> 16) {
			if (!event_stop(sv, w, tgid, status >> 16))
				continue;
		} else if ((sig = signal_stop(sv, tr, w, tgid, status)) < 0) {
			continue;
		}
		ptrace(PTRACE_CONT, w, NULL, (void *)(long)sig);
	}
}

int supervise__run(char **argv, const struct supervise_hooks *h, struct supervise_result *res)
{
	struct supervisor sv = { .h = h, .res = res, .argv = argv };
	struct traced_proc *top;
	int status;

	sv.pid = start_command(argv, h);
	if (sv.pid < 0)
		return sv.pid;
	/*
	 * Later execs report PTRACE_EVENT_EXEC: every SIGTRAP after this one is the program's.
	 * Unless --no-follow, the processes it forks are traced too, and each that runs a program
	 * of its own is checked at its exit: CI jobs run wrappers, make, pytest, tox.
	 */
	ptrace(PTRACE_SETOPTIONS, sv.pid, NULL,
	       (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL | PTRACE_O_TRACECLONE |
			      PTRACE_O_TRACEEXEC |
			      (h->no_follow ? 0 : PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK)));
	top = proc_get(&sv.ps, sv.pid);
	if (!tracee_get(&sv.ts, sv.pid) || !top) {
		kill(sv.pid, SIGKILL);
		waitpid(sv.pid, &status, 0);
		free(sv.ts.t);
		free(sv.ps.p);
		return -ENOMEM;
	}
	res->started = true;
	top->execd = true;
	top->cmdline = joined_args(argv);
	sv.ts.t[0].started = true;
	ptrace(PTRACE_CONT, sv.pid, NULL, NULL);
	supervise(&sv);
	free(sv.ts.t);
	res->checked = top_checked(&sv.ps, sv.pid);
	for (size_t i = 0; i < sv.ps.n; i++)
		free(sv.ps.p[i].cmdline);
	free(sv.ps.p);
	return sv.err;
}
