// SPDX-License-Identifier: GPL-2.0
/* dlscope stacks: every thread's stack like gdb's "thread apply all bt", the lock-wait graph
 * and the deadlock verdict. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "inspect.h"
#include "libgraph.h"
#include "lockwait.h"
#include "output.h"
#include "procfs.h"
#include "pystate.h"
#include "target.h"
#include "threadscan.h"
#include "unwind.h"

#define DEFAULT_MAX_FRAMES 256
#define RELEASE_WAIT_MS 100 /* before exiting, for a thread left held to stop */

struct thread_extra {
	int cpu;
	char wchan[64];
};

static void stacks_usage(FILE *f)
{
	fprintf(f,
		"Usage: dlscope stacks [--json] [--python] [--max-frames N] [--stats] PID\n"
		"\n"
		"Print the stack of every thread like gdb's 'thread apply all bt' (CFI unwinding,\n"
		"symbols from .symtab/.dynsym and separate debug info, inline frames, source lines),\n"
		"then the lock-wait graph (mutex owners, glibc's loader lock, joins, OpenMP/BLAS\n"
		"teams, CPython's GIL and locks) and the verdict: every deadlock cycle explained,\n"
		"with what to do. In a CPython process (3.9 to 3.13) each thread's Python frames\n"
		"are shown under the _PyEval_EvalFrameDefault frame that runs them.\n"
		"The threads are stopped only to copy their registers and stacks (PTRACE_SEIZE and\n"
		"PTRACE_INTERRUPT: a killed dlscope leaves nothing stopped or traced).\n"
		"\n"
		"  -j, --json            one JSON document\n"
		"  -p, --python          Python frames only (like py-spy dump)\n"
		"  -n, --max-frames N    frames per thread (default %d)\n"
		"  -s, --stats           say how long the process was stopped\n"
		"  -h, --help\n"
		"\n"
		"Exit status: 0 no deadlock, 1 a deadlock was found, 2 usage error,\n"
		"3 the process could not be inspected.\n",
		DEFAULT_MAX_FRAMES);
}

static void read_extra(pid_t pid, pid_t tid, struct thread_extra *x)
{
	char path[96], buf[1024];
	const char *p;
	int field = 3;

	x->cpu = -1;
	x->wchan[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", pid, tid);
	if (proc__read_small(path, buf, sizeof(buf)) > 0 && strcmp(buf, "0"))
		snprintf(x->wchan, sizeof(x->wchan), "%.63s", buf);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	if (proc__read_small(path, buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')))
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
	else if (ti->syscall == 202)
		snprintf(buf, len, "futex(0x%" PRIx64 ", %s, %" PRIu64 ")", ti->args[0],
			 futex_op(ti->args[1], op, sizeof(op)), ti->args[2]);
	else
		snprintf(buf, len, "syscall %ld(0x%" PRIx64 ", 0x%" PRIx64 ", 0x%" PRIx64 ")",
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

/* "    worker (/tmp/t.py:12)": one Python frame, as py-bt and py-spy name it. */
static void print_py_frame(const struct py_frame *f, const char *indent, FILE *out)
{
	if (f->line >= 0)
		fprintf(out, "%s%s (%s:%d)\n", indent, f->function, f->file, f->line);
	else
		fprintf(out, "%s%s (%s)\n", indent, f->function, f->file);
}

/* Native frames with each eval frame's Python frames under it; or the Python frames alone. */
static void print_frames(const struct thread_stack *st, bool python_only, FILE *out)
{
	size_t n_py = st->py ? st->py->n_frames : 0;
	long *at = calloc(n_py ? n_py : 1, sizeof(*at));
	size_t j = 0;

	if (!at)
		return;
	thread_stack__place_python(st, at);
	if (python_only) {
		for (j = 0; j < n_py; j++)
			print_py_frame(&st->py->frames[j], "    ", out);
	} else {
		for (size_t k = 0; k < st->n_frames; k++) {
			stack_frame__print(&st->frames[k], k ? &st->frames[k - 1] : NULL, k, "",
					   out);
			for (; j < n_py && at[j] == (long)k; j++)
				print_py_frame(&st->py->frames[j], "        [py] ", out);
		}
		/* Frames whose eval call lies past where the native unwind ended. */
		if (j < n_py)
			fprintf(out, "    (%zu Python frames below the last native frame:)\n",
				n_py - j);
		for (; j < n_py; j++)
			print_py_frame(&st->py->frames[j], "        [py] ", out);
	}
	if (st->py && st->py->truncated)
		fprintf(out, "    (more Python frames: raise --max-frames)\n");
	if (st->py && st->py->error)
		fprintf(out, "    (Python frames stop early: %s)\n", st->py->error);
	free(at);
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

static void print_text(const struct inspection *in, const struct stacks *s,
		       const struct threadscan *ts, const struct lockwait_report *r, bool stats,
		       bool python_only, FILE *out)
{
	const struct target *t = in->t;

	print_python_header(in, s, out);
	for (size_t i = 0; i < s->n; i++) {
		const struct thread_stack *st = &s->t[i];
		const struct thread_info *ti = info_of(ts, st->tid);
		const struct thread_wait *w = wait_of(r, st->tid);
		struct thread_extra x;
		char sc[160];

		if (python_only && !st->py)
			continue;
		read_extra(t->pid, st->tid, &x);
		if (ti)
			format_syscall(ti, sc, sizeof(sc));
		fprintf(out, "%sThread %zu (LWP %d \"%s\"", i ? "\n" : "", i + 1, st->tid,
			ti ? ti->comm : "?");
		if (st->py && st->py->name)
			fprintf(out, ", Python \"%s\"", st->py->name);
		fprintf(out, "): state %c, cpu %d%s%s%s\n", ti ? ti->state : '?', x.cpu,
			x.wchan[0] ? ", wchan " : "", x.wchan,
			stacks__holds_gil(s, st) ? ", holds the GIL" : "");
		if (ti)
			fprintf(out, "    %s%s%s\n", sc, w && w->kind != WAIT_RUNNING ? ": " : "",
				w && w->kind != WAIT_RUNNING ? w->what : "");
		print_frames(st, python_only, out);
		if (st->error && !python_only)
			fprintf(out, "    (%s)\n", st->error);
	}
	fprintf(out, "\nLock-wait graph:\n");
	if (!r || !r->n_edges)
		fprintf(out, "    no thread waits for another\n");
	for (size_t e = 0; r && e < r->n_edges; e++)
		fprintf(out, "    %d -> %d  %s: %s\n", r->edges[e].from, r->edges[e].to,
			wait_kind__id(r->edges[e].kind), r->edges[e].what);
	fprintf(out, "\nVerdict:\n");
	for (size_t v = 0; r && v < r->n_verdicts; v++) {
		fprintf(out, "    %s\n", r->verdicts[v]);
		if (r->remedies[v])
			fprintf(out, "    What to do: %s\n", r->remedies[v]);
	}
	if (stats)
		fprintf(out,
			"\nstopped for %.3f ms (%zu threads, %" PRIu64 " KiB of stack copied)\n",
			(double)s->stopped_ns / 1e6, s->n, s->stack_bytes / 1024);
}

static json_t *python_thread_json(const struct stacks *s, const struct thread_stack *st)
{
	size_t n = st->py ? st->py->n_frames : 0;
	long *at = calloc(n ? n : 1, sizeof(*at));
	json_t *frames = json_array();

	if (!st->py || !at) {
		free(at);
		json_decref(frames);
		return json_null();
	}
	thread_stack__place_python(st, at);
	for (size_t j = 0; j < n; j++) {
		const struct py_frame *f = &st->py->frames[j];

		json_array_append_new(
			frames,
			json_pack("{s:s, s:s, s:o, s:o}", "function", f->function, "file", f->file,
				  "line", f->line >= 0 ? json_integer(f->line) : json_null(),
				  "native_frame", at[j] >= 0 ? json_integer(at[j]) : json_null()));
	}
	free(at);
	return json_pack("{s:I, s:o, s:o, s:b, s:b, s:o}", "thread_id",
			 (json_int_t)st->py->pthread_id, "name",
			 st->py->name ? json_string(st->py->name) : json_null(), "frames", frames,
			 "holds_gil", stacks__holds_gil(s, st), "truncated", st->py->truncated,
			 "error", st->py->error ? json_string(st->py->error) : json_null());
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
		       const struct threadscan *ts, const struct lockwait_report *r)
{
	const struct target *t = in->t;
	json_t *threads = json_array(), *edges = json_array(), *cycles = json_array(),
	       *verdicts = json_array();

	for (size_t i = 0; i < s->n; i++) {
		const struct thread_stack *st = &s->t[i];
		const struct thread_info *ti = info_of(ts, st->tid);
		const struct thread_wait *w = wait_of(r, st->tid);
		json_t *frames = json_array();
		struct thread_extra x;
		char sc[160] = "";
		char state[2] = { ti ? ti->state : '?', 0 };

		read_extra(t->pid, st->tid, &x);
		if (ti)
			format_syscall(ti, sc, sizeof(sc));
		for (size_t k = 0; k < st->n_frames; k++)
			json_array_append_new(frames, stack_frame__to_json(&st->frames[k]));
		json_array_append_new(
			threads,
			json_pack("{s:i, s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:o, s:b, s:o, s:o}",
				  "tid", st->tid, "name", ti ? ti->comm : "", "state", state, "cpu",
				  x.cpu, "wchan", x.wchan, "syscall", sc, "wait",
				  w ? wait_kind__id(w->kind) : "unknown", "waits_for",
				  w ? w->what : "", "frames", frames, "truncated", st->truncated,
				  "error", st->error ? json_string(st->error) : json_null(),
				  "python", python_thread_json(s, st)));
	}
	for (size_t e = 0; r && e < r->n_edges; e++)
		json_array_append_new(edges, json_pack("{s:i, s:i, s:s, s:s}", "from",
						       r->edges[e].from, "to", r->edges[e].to,
						       "kind", wait_kind__id(r->edges[e].kind),
						       "what", r->edges[e].what));
	for (size_t c = 0; r && c < r->n_cycles; c++) {
		json_t *cyc = json_array();

		for (size_t k = 0; k < r->cycle_len[c]; k++)
			json_array_append_new(cyc, json_integer(r->cycles[c][k]));
		json_array_append_new(cycles, cyc);
	}
	for (size_t v = 0; r && v < r->n_verdicts; v++)
		json_array_append_new(verdicts,
				      json_pack("{s:s, s:o}", "text", r->verdicts[v], "remedy",
						r->remedies[v] ? json_string(r->remedies[v]) :
								 json_null()));
	return json_pack("{s:s, s:i, s:s, s:f, s:o, s:o, s:o, s:o, s:o}", "dlscope",
			 DLSCOPE_VERSION, "pid", t->pid, "comm", t->comm, "stopped_ms",
			 (double)s->stopped_ns / 1e6, "python", python_json(in, s), "threads",
			 threads, "edges", edges, "cycles", cycles, "verdicts", verdicts);
}

int cmd_stacks(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "python", no_argument, NULL, 'p' },
		{ "max-frames", required_argument, NULL, 'n' },
		{ "stats", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	unsigned int max_frames = DEFAULT_MAX_FRAMES;
	struct inspection *in = NULL;
	const struct lockwait_report *r;
	const struct threadscan *ts;
	const struct stacks *s;
	const struct target *t;
	bool json = false, stats = false, python_only = false;
	int c, err, ret = DLS_EXIT_INSPECT;
	char why[512];
	pid_t pid;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jpn:sh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'p': python_only = true; break;
		case 'n': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || !v || v > 100000) {
				dls_err("stacks: --max-frames takes a number from 1 to 100000, not "
					"'%s'",
					optarg);
				return DLS_EXIT_USAGE;
			}
			max_frames = (unsigned int)v;
			break;
		}
		case 's': stats = true; break;
		case 'h': stacks_usage(stdout); return DLS_EXIT_OK;
		default: stacks_usage(stderr); return DLS_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || parse_pid(argv[optind], &pid)) {
		dls_err("stacks: give one process ID (usage: dlscope stacks [--json] PID)");
		return DLS_EXIT_USAGE;
	}
	output__set_json(json);
	err = inspection__new(pid, &in, why, sizeof(why));
	if (err) {
		dls_err("%s", why);
		return DLS_EXIT_INSPECT;
	}
	t = in->t;
	/* --python prints no native frame: none is unwound (unless --json wants them). */
	if (inspection__read(in,
			     INSPECT_LOCKWAIT | INSPECT_STACKS |
				     (python_only && !json ? INSPECT_PYTHON_ONLY : 0),
			     max_frames, why, sizeof(why))) {
		dls_err("%s", why);
		goto out;
	}
	ts = in->ts;
	r = in->lw;
	if (in->ts_err || in->lw_err) {
		if (!target__alive(t)) {
			dls_err("process %d (%s) exited while being read", pid, t->comm);
			goto out;
		}
		dls_warn("process %d (%s): the lock-wait graph could not be built", pid, t->comm);
	}
	s = in->stacks;
	if (in->stacks_err) {
		dls_err("%s", in->stacks_why);
		goto out;
	}
	if (json) {
		json_t *doc = to_json(in, s, ts, r);

		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) < 0)
			dls_err("stacks: cannot write the JSON document");
		putchar('\n');
		json_decref(doc);
	} else {
		if (python_only && in->py_err) {
			dls_err("stacks: process %d (%s) %s", pid, t->comm,
				in->py_err == -ENOTSUP ? in->py_why : "runs no Python interpreter");
			goto out;
		}
		print_text(in, s, ts, r, stats, python_only, stdout);
	}
	ret = r && r->n_cycles ? DLS_EXIT_FINDINGS : DLS_EXIT_OK;
out:
	inspection__free(in);
	/* A thread that did not stop in time is held; our exit lets it go, this a moment earlier. */
	stacks__release_pending(RELEASE_WAIT_MS);
	return ret;
}
