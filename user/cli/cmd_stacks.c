// SPDX-License-Identifier: GPL-2.0
/* dlscope stacks: every thread's stack like gdb's "thread apply all bt", the lock-wait graph
 * and the deadlock verdict. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "arch.h"
#include "cliopt.h"
#include "commands.h"
#include "corecmd.h"
#include "inspect.h"
#include "job.h"
#include "libgraph.h"
#include "goroutines.h"
#include "heapwarm.h"
#include "lockwait.h"
#include "output.h"
#include "phase.h"
#include "procfs.h"
#include "pystate.h"
#include "runtimes.h"
#include "stackmerge.h"
#include "slurm_tasks.h"
#include "stacks_job.h"
#include "target.h"
#include "threadscan.h"
#include "threadtext.h"
#include "unwind.h"

#define DEFAULT_MAX_FRAMES 256
#define RELEASE_WAIT_MS 100 /* before exiting, for a thread left held to stop */

struct thread_extra {
	int cpu;
	char wchan[64];
};

static void read_extra(pid_t pid, pid_t tid, struct thread_extra *x)
{
	char buf[1024];
	const char *p;
	int field = 3;

	x->cpu = -1;
	x->wchan[0] = '\0';
	if (proc__read(pid, tid, "wchan", buf, sizeof(buf)) > 0 && strcmp(buf, "0"))
		snprintf(x->wchan, sizeof(x->wchan), "%.63s", buf);
	if (proc__read(pid, tid, "stat", buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')))
		return;
	/* Field 39 is the CPU it last ran on; fields count from 1, state is field 3. */
	for (p += 2; *p && field < 39; p++)
		if (*p == ' ')
			field++;
	if (field == 39)
		x->cpu = atoi(p);
}

static const char *futex_op(uint64_t op, char *buf, size_t len)
{
	static const char *cmds[] = {
		"FUTEX_WAIT",		"FUTEX_WAKE",	     "FUTEX_FD",
		"FUTEX_REQUEUE",	"FUTEX_CMP_REQUEUE", "FUTEX_WAKE_OP",
		"FUTEX_LOCK_PI",	"FUTEX_UNLOCK_PI",   "FUTEX_TRYLOCK_PI",
		"FUTEX_WAIT_BITSET",	"FUTEX_WAKE_BITSET", "FUTEX_WAIT_REQUEUE_PI",
		"FUTEX_CMP_REQUEUE_PI", "FUTEX_LOCK_PI2"
	};
	unsigned cmd = op & 0x7f;

	snprintf(buf, len, "%s%s%s", cmd < 14 ? cmds[cmd] : "?", op & 128 ? "_PRIVATE" : "",
		 op & 256 ? "|FUTEX_CLOCK_REALTIME" : "");
	return buf;
}

static void format_syscall(const struct thread_info *ti, char *buf, size_t len)
{
	char op[64];

	if (ti->syscall == -2)
		snprintf(buf, len, "running");
	else if (ti->syscall == -1)
		snprintf(buf, len, "not in a system call");
	else if (ti->syscall == arch_syscall_futex())
		snprintf(buf, len, "futex(0x%" PRIx64 ", %s, %" PRIu64 ")", ti->args[0],
			 futex_op(ti->args[1], op, sizeof(op)), ti->args[2]);
	else if (arch_syscall_name(ti->syscall))
		snprintf(buf, len, "%s(0x%" PRIx64 ", 0x%" PRIx64 ", 0x%" PRIx64 ")",
			 arch_syscall_name(ti->syscall), ti->args[0], ti->args[1], ti->args[2]);
	else
		snprintf(buf, len, "system call %ld(0x%" PRIx64 ", 0x%" PRIx64 ", 0x%" PRIx64 ")",
			 ti->syscall, ti->args[0], ti->args[1], ti->args[2]);
}

static const struct thread_wait *wait_of(const struct lockwait_report *r, pid_t tid)
{
	for (size_t i = 0; r && i < r->n_threads; i++)
		if (r->threads[i].tid == tid)
			return &r->threads[i];
	return NULL;
}

static const struct thread_info *info_of(const struct threadscan *ts, pid_t tid)
{
	for (size_t i = 0; ts && i < ts->n; i++)
		if (ts->t[i].tid == tid)
			return &ts->t[i];
	return NULL;
}

/* One line on the interpreter, or on why its frames are missing; nothing for other programs. */
static void print_python_header(const struct inspection *in, const struct stacks *s, FILE *out)
{
	if (in->py_err == -ENOTSUP) {
		fprintf(out, "Python: no Python frames: %s\n\n", in->py_why);
		return;
	}
	if (in->py_err)
		return;
	fprintf(out, "Python %u.%u", in->py.major, in->py.minor);
	if (in->py.micro_known)
		fprintf(out, ".%u", in->py.micro);
	fprintf(out, " (%s)", in->py.object);
	if (!s->py)
		fprintf(out, ": its state could not be read\n\n");
	else if (s->py->error)
		fprintf(out, ": %s%s\n\n", s->py->error,
			s->py->n ? "" : "; only native frames are shown");
	else
		fprintf(out, ", %zu Python threads\n\n", s->py->n);
}

/*
 * What makes two threads' stacks the same: each frame's object and place in it, the Python
 * frames, and where the unwind ended. A new string (NULL: out of memory).
 */
static char *stack_key(const struct thread_stack *st, bool python_only)
{
	char *key = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&key, &len);

	if (!f)
		return NULL;
	for (size_t k = 0; !python_only && k < st->n_frames; k++) {
		const struct stack_frame *fr = &st->frames[k];

		fprintf(f, "%s+%" PRIx64 "%s;", fr->module ? fr->module : "",
			fr->has_module_offset ? fr->module_offset : fr->pc, fr->inlined ? "i" : "");
	}
	for (size_t k = 0; st->py && k < st->py->n_frames; k++)
		fprintf(f, "%s@%s:%d;", st->py->frames[k].function, st->py->frames[k].file,
			st->py->frames[k].line);
	fprintf(f, "|%s|%d", python_only || !st->error ? "" : st->error, st->truncated);
	fclose(f);
	return key;
}

/* One thread's heading and its wait: "Thread 3 (LWP 812 "python3", ...): state S, ...". */
static void print_thread_head(const struct inspection *in, const struct stacks *s,
			      const struct thread_stack *st, size_t index,
			      const struct threadscan *ts, const struct lockwait_report *r,
			      const char *indent, FILE *out)
{
	const struct thread_info *ti = info_of(ts, st->tid);
	const struct thread_wait *w = wait_of(r, st->tid);
	struct thread_extra x;
	char sc[160], gpu[256];

	read_extra(in->t->pid, st->tid, &x);
	if (ti)
		format_syscall(ti, sc, sizeof(sc));
	fprintf(out, "%sThread %zu (LWP %d \"%s\"", indent, index + 1, st->tid,
		ti ? ti->comm : "?");
	if (ti && runtimes__gpu_thread(in->g, ti, gpu, sizeof(gpu)))
		fprintf(out, ", %s", gpu);
	if (st->py && st->py->name)
		fprintf(out, ", Python \"%s\"", st->py->name);
	fprintf(out, "): state %c, cpu %d%s%s%s\n", ti ? ti->state : '?', x.cpu,
		x.wchan[0] ? ", wchan " : "", x.wchan,
		stacks__holds_gil(s, st) ? ", holds the GIL" : "");
	if (ti)
		fprintf(out, "%s    %s%s%s\n", indent, sc, w && w->kind != WAIT_RUNNING ? ": " : "",
			w && w->kind != WAIT_RUNNING ? w->what : "");
}

/*
 * The threads, each stack printed once: threads whose stacks are the same (a pool of 63
 * workers in one wait) form one group, headed by how many, each with its own id, state and
 * wait, as stacks --job groups ranks. @all: every thread with its own stack, as gdb does.
 */
static void print_threads(const struct inspection *in, const struct stacks *s,
			  const struct threadscan *ts, const struct lockwait_report *r, bool all,
			  bool python_only, FILE *out)
{
	char **keys = calloc(s->n ? s->n : 1, sizeof(*keys));
	bool *done = calloc(s->n ? s->n : 1, sizeof(*done));
	bool first = true;

	for (size_t i = 0; keys && !all && i < s->n; i++)
		keys[i] = stack_key(&s->t[i], python_only);
	for (size_t i = 0; i < s->n; i++) {
		const struct thread_stack *st = &s->t[i];
		size_t same = 1;

		if ((done && done[i]) || (python_only && !st->py))
			continue;
		for (size_t j = i + 1; keys && keys[i] && j < s->n; j++)
			same += keys[j] && !strcmp(keys[i], keys[j]);
		fprintf(out, "%s", first ? "" : "\n");
		first = false;
		if (same == 1 || !done) {
			print_thread_head(in, s, st, i, ts, r, "", out);
		} else {
			fprintf(out, "%zu threads with the same stack:\n", same);
			for (size_t j = i; j < s->n; j++) {
				if (j != i && (!keys[j] || strcmp(keys[i], keys[j])))
					continue;
				done[j] = true;
				print_thread_head(in, s, &s->t[j], j, ts, r, "  ", out);
			}
		}
		thread_stack__print(st, python_only, out);
		if (st->error && !python_only)
			fprintf(out, "    (%s)\n", st->error);
	}
	for (size_t i = 0; keys && i < s->n; i++)
		free(keys[i]);
	free(keys);
	free(done);
}

static void print_text(const struct inspection *in, const struct stacks *s,
		       const struct threadscan *ts, const struct lockwait_report *r,
		       const struct go_state *go, bool stats, bool python_only, bool all, FILE *out)
{
	char *go_summary = go ? go_state__summary(go) : NULL;

	print_python_header(in, s, out);
	print_threads(in, s, ts, r, all, python_only, out);
	if (go && !python_only)
		go_state__print(go, out);
	fprintf(out, "\nLock-wait graph:\n");
	if (!r || (!r->n_edges && !r->never_ends))
		fprintf(out, "    no thread waits for another\n");
	for (size_t e = 0; r && e < r->n_edges; e++)
		fprintf(out, "    %d -> %d  %s: %s\n", r->edges[e].from, r->edges[e].to,
			wait_kind__id(r->edges[e].kind), r->edges[e].what);
	/* Waits with no thread at the other end, that can never end. */
	for (size_t i = 0; r && r->never_ends && i < r->n_threads; i++)
		if (r->threads[i].forever)
			fprintf(out, "    %d -> none  %s: %s\n", r->threads[i].tid,
				wait_kind__id(r->threads[i].kind), r->threads[i].what);
	fprintf(out, "\nVerdict:\n");
	for (size_t v = 0; r && v < r->n_verdicts; v++) {
		fprintf(out, "    %s\n", r->verdicts[v]);
		if (r->remedies[v])
			fprintf(out, "    What to do: %s\n", r->remedies[v]);
	}
	/* Threads are not what waits in a Go program: its goroutines are. */
	if (go_summary)
		fprintf(out, "    %s\n", go_summary);
	free(go_summary);
	if (stats)
		fprintf(out,
			"\nstopped for %.3f ms, each thread at most %.3f ms (%zu thread%s, %" PRIu64
			" KiB of stack copied)\n",
			(double)s->stopped_ns / 1e6, (double)s->held_max_ns / 1e6, s->n,
			s->n == 1 ? "" : "s", s->stack_bytes / 1024);
}

static json_t *python_json(const struct inspection *in, const struct stacks *s)
{
	char version[32];

	if (in->py_err == -ENOTSUP)
		return json_pack("{s:n, s:s}", "version", "error", in->py_why);
	if (in->py_err)
		return json_null();
	snprintf(version, sizeof(version), "%u.%u", in->py.major, in->py.minor);
	if (in->py.micro_known)
		snprintf(version + strlen(version), sizeof(version) - strlen(version), ".%u",
			 in->py.micro);
	return json_pack("{s:s, s:s, s:b, s:o}", "version", version, "object", in->py.object,
			 "finalizing", s->py && s->py->finalizing, "error",
			 !s->py	      ? json_string("its state could not be read") :
			 s->py->error ? json_string(s->py->error) :
					json_null());
}

static json_t *to_json(const struct inspection *in, const struct stacks *s,
		       const struct threadscan *ts, const struct lockwait_report *r,
		       const struct go_state *go)
{
	const struct target *t = in->t;
	json_t *threads = json_array(), *edges = json_array(), *cycles = json_array(),
	       *verdicts = json_array(), *doc;
	char *cmdline;

	for (size_t i = 0; i < s->n; i++) {
		const struct thread_stack *st = &s->t[i];
		const struct thread_info *ti = info_of(ts, st->tid);
		const struct thread_wait *w = wait_of(r, st->tid);
		json_t *frames = json_array();
		struct thread_extra x;
		char sc[160] = "";
		char state[2] = { ti ? ti->state : '?', 0 }, gpu[256];
		json_t *one;

		read_extra(t->pid, st->tid, &x);
		if (ti)
			format_syscall(ti, sc, sizeof(sc));
		for (size_t k = 0; k < st->n_frames; k++)
			json_array_append_new(frames, stack_frame__to_json(&st->frames[k]));
		one = json_pack("{s:i, s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:o, s:b, s:o, s:o}",
				"tid", st->tid, "name", ti ? ti->comm : "", "state", state, "cpu",
				x.cpu, "wchan", x.wchan, "syscall", sc, "wait",
				w ? wait_kind__id(w->kind) : "unknown", "waits_for",
				w ? w->what : "", "frames", frames, "truncated", st->truncated,
				"error", st->error ? json_string(st->error) : json_null(), "python",
				thread_stack__python_json(s, st));
		json_object_set_new(one, "gpu_thread",
				    ti && runtimes__gpu_thread(in->g, ti, gpu, sizeof(gpu)) ?
					    json_string(gpu) :
					    json_null());
		json_array_append_new(threads, one);
	}
	lockwait_report__to_json(r, edges, cycles, verdicts);
	if (go) {
		char *summary = go_state__summary(go);

		if (summary)
			json_array_append_new(verdicts,
					      json_pack("{s:s, s:n}", "text", summary, "remedy"));
		free(summary);
	}
	cmdline = proc__cmdline(t->pid);
	doc = json_pack("{s:i, s:s, s:s, s:o*, s:f, s:f, s:o, s:o, s:o, s:o, s:o}", "pid", t->pid,
			"comm", t->comm, "exe", t->exe, "cmdline",
			cmdline ? json_string(cmdline) : json_null(), "stopped_ms",
			(double)s->stopped_ns / 1e6, "held_max_ms", (double)s->held_max_ns / 1e6,
			"python", python_json(in, s), "threads", threads, "edges", edges, "cycles",
			cycles, "verdicts", verdicts);
	json_object_set_new(doc, "go", go ? go_state__to_json(go) : json_null());
	/* A wait that can never end (a lock or a pool lost in a fork): exit 1, as a cycle. */
	json_object_set_new(doc, "never_ends", json_boolean(r && r->never_ends));
	free(cmdline);
	return doc;
}

/*
 * The document of every --json command: {"dlscope", "processes": [PROCESS...], "errors":
 * [message...]}; stacks has one process, or none when it could not be read.
 */
static int print_json(json_t *proc)
{
	return cliopt__print_processes(json_pack("[o*]", proc));
}

/* In stacks --job's worker: one rank's document, or {"error": why}. */
static json_t *rank_doc(pid_t pid, bool python_only, unsigned int max_frames)
{
	struct inspection *in = NULL;
	json_t *doc;
	char why[512];

	if (inspection__new(pid, &in, why, sizeof(why)))
		doc = json_pack("{s:s}", "error", why);
	else if (inspection__read(in,
				  INSPECT_LOCKWAIT | INSPECT_STACKS |
					  (python_only ? INSPECT_PYTHON_ONLY : 0),
				  max_frames, why, sizeof(why)))
		doc = json_pack("{s:s}", "error", why);
	else if (in->stacks_err)
		doc = json_pack("{s:s}", "error", in->stacks_why);
	else
		doc = to_json(in, in->stacks, in->ts, in->lw, NULL);
	inspection__free(in);
	stacks__release_pending(RELEASE_WAIT_MS);
	return doc;
}

/*
 * stacks --job: every rank read in parallel (each stopped once), the stacks merged, the ranks
 * and the verdict said; 1 on a deadlock, a wait that can never end, or a rank the verdict
 * names; 3 when a rank could not be read. A Slurm job's task (or srun, or the batch script) is
 * read on every node of its step (stacks_slurm.c).
 */
static int stacks_job(const char *what, const struct stacks_job_opts *so)
{
	struct rank_stacks *rs = NULL;
	struct timespec t0;
	struct job *j = NULL;
	char why[512], **errs = NULL;
	int ret = DLS_EXIT_INSPECT;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!strncmp(what, "slurm:", 6))
		return stacks_slurm__job(what + 6, so);
	pid = (pid_t)atoi(what);
	if (stacks_slurm__owns(pid, so, &ret))
		return ret;
	if (job__find(pid, &j, why, sizeof(why))) {
		dls_err("stacks --job: %s", why);
		return DLS_EXIT_INSPECT;
	}
	rs = calloc(j->n, sizeof(*rs));
	errs = calloc(j->n, sizeof(*errs));
	if (!rs || !errs) {
		dls_err("stacks --job: out of memory");
		goto out;
	}
	stacks_job__read(j, rs, errs, so);
	ret = stacks_job__report(j, rs, errs, NULL, NULL, so, stacks_job__ms_since(&t0));
out:
	for (size_t i = 0; rs && i < j->n; i++)
		json_decref(rs[i].doc);
	for (size_t i = 0; errs && i < j->n; i++)
		free(errs[i]);
	free(errs);
	free(rs);
	job__free(j);
	return ret;
}

/* What the command line of stacks asks. */
struct stacks_opts {
	unsigned int max_frames;
	bool json, stats, python_only, job, all;
	const char *core;
	const char *job_node;  /* --job-node JOBID[.STEP]: this node's part of a Slurm job */
	const char *job_relay; /* --job-relay ...: a relay of a Slurm job's fan-in tree */
	unsigned int fanout;   /* --fanout N: nodes one reader of a Slurm job reads; 0: not given */
	struct core_opts co;   /* --exe, --coredump, --ignore-build-id */
	pid_t *pids;
	size_t n_pids, cap_pids;
};

/* --python is long only: -p is a process in every command. */
static const struct cliopt_def stacks_defs[] = {
	{ .name = "pid",
	  .letter = 'p',
	  .arg = "PID",
	  .value = CLIOPT_PID,
	  .help = "the process (or as the operand)" },
	{ .name = "json", .letter = 'j', .help = "one JSON document" },
	{ .name = "python", .val = 'y', .help = "Python frames only (like py-spy dump)" },
	{ .name = "max-frames",
	  .letter = 'n',
	  .arg = "N",
	  .help = "frames per thread (default " CLIOPT_STR(DEFAULT_MAX_FRAMES) ")" },
	{ .name = "stats", .letter = 's', .help = "say how long the process was stopped" },
	{ .name = "all",
	  .val = 'a',
	  .help = "every thread with its own stack; by default threads whose stacks are the same "
		  "(a pool's workers in one wait) are printed as one group, each thread's id, "
		  "name, state and wait kept, the frames once" },
	{ .name = "job",
	  .val = 'J',
	  .help = "every rank of PID's job (torchrun, mpirun, srun; PID is any member: launcher, "
		  "rank, a rank's child), each stopped once, read in parallel, then merged: "
		  "identical stacks grouped with the ranks that share them, outliers first, and "
		  "the verdict naming the rank outside the collective the others wait in. A Slurm "
		  "job (slurm:JOBID, srun's PID, the batch script's or a task's) is read on every "
		  "node of its step, through srun --overlap" },
	SLURM_TASKS_OPTION_DEFS("stacks", 'N', "as STAT's do",
				"stack once, with the threads that have it"),
	{ .name = "core",
	  .val = 'C',
	  .arg = "FILE",
	  .value = CLIOPT_FILE,
	  .help = "a core file (the kernel's, gcore's, dlscope capture's) in place of a process: "
		  "each thread's stack, unwound and named as a live one's (libdwfl's "
		  "`dwfl_core_file_report` and `dwfl_core_file_attach`), and for a crash the "
		  "signal, its code, the faulting address (`NT_SIGINFO`) and the thread that took "
		  "it, listed first. An operand that is an ELF core file is taken as --core too. "
		  "In a CPython process each thread's Python frames are read from the core's "
		  "memory (gcore's and `capture --full`'s cores hold them; capture's small one does "
		  "not, and says so). The lock-wait graph and its verdict come from each thread's "
		  "registers in the core (the system call it was in and its arguments) and the "
		  "mutex and loader-lock owners in its memory; the live state (wait channel, "
		  "thread names) is not shown; exit status 0, or 3 for a core that cannot be read "
		  "(truncated, zeroed notes, another machine's), one line" },
	{ .name = "exe",
	  .val = COREOPT_EXE,
	  .arg = "PATH",
	  .value = CLIOPT_FILE,
	  .help = "the core's executable, when it is no longer where the core's `NT_FILE` note "
		  "says; one whose build-id is not the one in the core (another program, a "
		  "rebuild) is refused in one line, as a changed library is" },
	{ .name = "coredump",
	  .val = COREOPT_COREDUMP,
	  .arg = "MATCH",
	  .help = "systemd-coredump's core of MATCH (a PID, `latest`, or any `coredumpctl` "
		  "match), copied by `coredumpctl -o FILE dump MATCH` and read as a core file; "
		  "refused in one line where systemd does not run or `coredumpctl` is missing "
		  "(`libs`, `check` and `report` take it too)" },
	{ .name = "ignore-build-id",
	  .val = COREOPT_IGNORE_BUILD_ID,
	  .help = "read a core even when a file its process mapped has another build-id here "
		  "(rebuilt since), which is otherwise refused in one line; each such file is "
		  "then a warning line (`libs`, `check` and `report` take it too)" },
	{},
};

const struct cliopt_cmd stacks_cli = {
	.name = "stacks",
	.usage = "stacks [OPTIONS] PID\n"
		 "stacks --job [OPTIONS] PID | slurm:JOBID[.STEP]\n"
		 "stacks [OPTIONS] CORE | --core CORE [--exe PATH]",
	.about =
		"Print the stack of every thread like gdb's 'thread apply all bt' (CFI unwinding,\n"
		"symbols from .symtab/.dynsym and separate debug info, inline frames, source lines),\n"
		"then the lock-wait graph (mutex owners, glibc's loader lock, joins, OpenMP/BLAS\n"
		"teams, CPython's GIL and locks) and the verdict: every deadlock cycle explained,\n"
		"with what to do. In a CPython process (3.6 to 3.15) each thread's Python frames\n"
		"are shown under the _PyEval_EvalFrameDefault frame that runs them.\n"
		"The threads are stopped only to copy their registers and stacks (PTRACE_SEIZE and\n"
		"PTRACE_INTERRUPT: a killed dlscope leaves nothing stopped or traced).\n",
	.opts = stacks_defs,
	.after = "Exit status: 0 no deadlock, 1 a deadlock or a wait that can never end (a\n"
		 "lock or a pool lost in a fork) was found, or with --job a rank the verdict\n"
		 "names as the one that hangs, 2 usage error,\n"
		 "3 the process (with --job: a rank, or the job) could not be inspected.\n",
	.operands = CLIOPT_OP_PID | CLIOPT_OP_FILE,
};

/* The options into @o and @cl: -1 to go on, or the exit status (after one line, or help). */
static int stacks_parse(int argc, char **argv, struct stacks_opts *o, struct cliopt *cl)
{
	unsigned long v;
	char *end;
	int c, err;

	cliopt__init(cl, &stacks_cli, argc, argv);
	while ((c = cliopt__next(cl)) != -1) {
		const char *arg = cl->arg;

		if (core_opts__take(&o->co, c, arg))
			continue;
		switch (c) {
		case 'p':
			err = cliopt__pids("stacks", arg, &o->pids, &o->n_pids, &o->cap_pids);
			if (err)
				return err;
			break;
		case 'j': o->json = true; break;
		case 'y': o->python_only = true; break;
		case 'n':
			v = strtoul(arg, &end, 10);
			if (*end || !v || v > 100000)
				return cliopt__usage(
					"stacks",
					"--max-frames takes a number from 1 to 100000, not '%s'",
					arg);
			o->max_frames = (unsigned int)v;
			break;
		case 's': o->stats = true; break;
		case 'J': o->job = true; break;
		case 'N': o->job_node = arg; break;
		case 'L': o->job_relay = arg; break;
		case 'F':
			err = cliopt__fanout("stacks", arg, &o->fanout);
			if (err)
				return err;
			break;
		case 'a': o->all = true; break;
		case 'C': o->core = arg; break;
		case 'h': return cliopt__help(&stacks_cli);
		default: return DLS_EXIT_USAGE;
		}
	}
	return -1;
}

/* stacks PID: every thread's stack, the lock-wait graph and the verdict. */
static int stacks_pid(pid_t pid, const struct stacks_opts *o)
{
	struct inspection *in = NULL;
	const struct lockwait_report *r;
	const struct target *t;
	struct go_state *go = NULL;
	int ret = DLS_EXIT_INSPECT;
	char why[512];

	if (inspection__new(pid, &in, why, sizeof(why))) {
		dls_err("%s", why);
		if (o->json)
			print_json(NULL);
		return DLS_EXIT_INSPECT;
	}
	t = in->t;
	/* --python prints no native frame: none is unwound (unless --json wants them). */
	if (inspection__read(in,
			     INSPECT_LOCKWAIT | INSPECT_STACKS |
				     (o->python_only && !o->json ? INSPECT_PYTHON_ONLY : 0),
			     o->max_frames, why, sizeof(why))) {
		dls_err("%s", why);
		goto out;
	}
	r = in->lw;
	if (in->ts_err || in->lw_err) {
		if (!target__alive(t)) {
			dls_err("process %d (%s) exited while being read", pid, t->comm);
			goto out;
		}
		dls_warn("process %d (%s): the lock-wait graph could not be built", pid, t->comm);
	}
	if (in->stacks_err) {
		dls_err("%s", in->stacks_why);
		goto out;
	}
	/* A Go program's goroutines, read after the stop (a parked one stays where it is). */
	if (go_state__read(t, in->g, &go) == -ENOMEM)
		go = NULL;
	if (o->json) {
		if (print_json(to_json(in, in->stacks, in->ts, r, go)))
			dls_err("stacks: cannot write the JSON document");
	} else {
		if (o->python_only && in->py_err) {
			dls_err("stacks: process %d (%s) %s", pid, t->comm,
				in->py_err == -ENOTSUP ? in->py_why : "runs no Python interpreter");
			goto out;
		}
		print_text(in, in->stacks, in->ts, r, go, o->stats, o->python_only, o->all, stdout);
	}
	phase__mark("printed");
	ret = r && (r->n_cycles || r->never_ends) ? DLS_EXIT_FINDINGS : DLS_EXIT_OK;
out:
	/* With --json a failure is a document too, as parseable as a result. */
	if (o->json && ret == DLS_EXIT_INSPECT)
		print_json(NULL);
	go_state__free(go);
	inspection__free(in);
	phase__mark("freed");
	/* A thread that did not stop in time is held; our exit lets it go, this a moment earlier. */
	stacks__release_pending(RELEASE_WAIT_MS);
	return ret;
}

/* What @o and @cl name: a systemd-coredump core, a core file, a job or one process. */
static int stacks_run(struct stacks_opts *o, const struct cliopt *cl)
{
	pid_t pid;
	int err;

	struct stacks_job_opts so = { .json = o->json,
				      .python_only = o->python_only,
				      .stats = o->stats,
				      .max_frames = o->max_frames,
				      .fanout = o->fanout,
				      .rank_doc = rank_doc };

	if (o->fanout && !o->job)
		return cliopt__usage("stacks", "--fanout is for --job (a Slurm job's fan-in tree)");
	if (o->job_node)
		return stacks_slurm__node(o->job_node, &so);
	if (o->job_relay)
		return stacks_slurm__relay(o->job_relay, &so);
	/* A Slurm job by its id: slurm:JOBID[.STEP]. */
	if (o->job && cl->n_ops == 1 && !strncmp(cl->ops[0], "slurm:", 6)) {
		output__set_json(o->json);
		return stacks_job(cl->ops[0], &so);
	}
	/* A core file (the operand, --core FILE, --coredump MATCH) in place of the process. */
	err = core_opts__path(&o->co, cl, o->core, o->n_pids || o->job, &o->core);
	if (err || o->core)
		return err ? err :
			     cmd_stacks_core(o->core, &o->co, o->json, o->python_only,
					     o->max_frames);
	err = cliopt__pid_operands(cl, &o->pids, &o->n_pids, &o->cap_pids);
	pid = o->n_pids ? o->pids[0] : 0;
	if (err)
		return err;
	if (o->n_pids != 1)
		return cliopt__usage("stacks", "give one process ID");
	output__set_json(o->json);
	phase__mark("stacks start");
	if (o->job) {
		char what[32];

		snprintf(what, sizeof(what), "%d", pid);
		return stacks_job(what, &so);
	}
	return stacks_pid(pid, o);
}

int cmd_stacks(int argc, char **argv)
{
	struct stacks_opts o = { .max_frames = DEFAULT_MAX_FRAMES };
	struct cliopt cl;
	int ret = stacks_parse(argc, argv, &o, &cl);

	if (ret < 0) {
		heap__warm_enable();
		ret = stacks_run(&o, &cl);
	}
	core_opts__done(&o.co);
	free(o.pids);
	return ret;
}
