// SPDX-License-Identifier: GPL-2.0
/* The job layer of watch: rank labels, the first rank to die, hung ranks (jobwatch.h). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "event.h"
#include "finding.h"
#include "frame_text.h"
#include "job.h"
#include "jobwatch.h"
#include "paths.h"
#include "procfs.h"
#include "stackmerge.h"
#include "unwind.h"
#include "watch.h"

#define SCAN_NS 500000000ULL /* CPU progress is read twice a second */
#define PROGRESS_SHARE 0.02  /* of one CPU over --hang-secs: less is no progress */
#define HUNG_MAX_FRAMES 64

struct jw_proc {
	pid_t pid;
	bool in_job; /* false: looked at, carries no rank */
	int rank;
	bool is_rank; /* the rank itself, not a child of it (a DataLoader worker) */
	bool exited;
	char end[1024]; /* how it ended, once it has */
	/* The last fatal signal delivered, named by the collector. */
	unsigned int signo;
	char sig_at[512], sig_where[256];
	/*
	 * CPU time (ticks, all threads) at the start of the current window, when that window
	 * began, and when the rank last made progress.
	 */
	unsigned long long cpu_base;
	uint64_t base_at, cpu_changed;
	bool cpu_known, hung;
};

struct jobwatch {
	struct event_sink s; /* first: the collector's sink is the job watch */
	struct event_sink *const *down;
	size_t n_down;
	uint64_t hang_ns;
	unsigned long long progress_ticks; /* CPU a rank must use within hang_ns to progress */
	struct jw_proc *p;
	size_t n, cap;
	int first_rank; /* the first rank that died; -1 none yet */
	pid_t first_pid;
	uint64_t last_scan;
	bool captured; /* a stack was captured: threads may be held (stacks__release_pending) */
	bool job_idle; /* every rank made no progress for hang_ns at once */
	uint64_t verdict_at; /* the last stacks verdict (at most one per hang_ns) */
	bool verdict_named;  /* it named a rank: no more until every rank is idle */
	double idle_secs;    /* how long, when it was seen */
	size_t idle_ranks;
	unsigned long long findings;
};

#define JW(s) ((struct jobwatch *)(s))
#define DOWN(jw, cb, ...)                                       \
	do {                                                    \
		for (size_t i_ = 0; i_ < (jw)->n_down; i_++) {  \
			struct event_sink *s_ = (jw)->down[i_]; \
			if (s_->cb)                             \
				s_->cb(s_, ##__VA_ARGS__);      \
		}                                               \
	} while (0)

static struct jw_proc *find(struct jobwatch *jw, pid_t pid)
{
	for (size_t i = 0; i < jw->n; i++)
		if (jw->p[i].pid == pid)
			return &jw->p[i];
	return NULL;
}

static pid_t parent_of(pid_t pid)
{
	pid_t ppid;

	return proc__ppid_start(pid, NULL, &ppid, NULL) ? 0 : ppid;
}

/* @pid's entry, a new one (in no job) when it has none; NULL when out of memory. */
static struct jw_proc *slot(struct jobwatch *jw, pid_t pid)
{
	struct jw_proc *p = find(jw, pid);

	if (p)
		return p;
	if (jw->n == jw->cap) {
		if (ARRAY_GROW(jw->p, jw->cap, 16))
			return NULL; /* unlabelled, not wrong */
	}
	p = &jw->p[jw->n++];
	*p = (struct jw_proc){ .pid = pid };
	return p;
}

/*
 * What @pid is now (it exec'ed, was forked, or is seen for the first time): a rank, a child of
 * one (its parent has the same rank: a worker, labelled but not a rank), or in no job (kept,
 * so that its environment is read once).
 */
static void learn(struct jobwatch *jw, pid_t pid)
{
	struct job_identity id, pid_id;
	struct jw_proc *p = slot(jw, pid);
	pid_t ppid;

	if (!p || p->exited)
		return;
	if (job__identity(pid, &id) || id.scheme == JOB_SCHEME_NONE) {
		/* An exec into an environment without a rank: no longer labelled. */
		*p = (struct jw_proc){ .pid = pid };
		return;
	}
	*p = (struct jw_proc){ .pid = pid, .rank = id.rank, .in_job = true };
	ppid = parent_of(pid);
	p->is_rank = !(ppid > 0 && !job__identity(ppid, &pid_id) && pid_id.scheme == id.scheme &&
		       pid_id.rank == id.rank);
}

/* The job entry of @pid, learnt the first time it is seen (--comm's processes, -p's); NULL
 * when it is in no job. */
static struct jw_proc *job_proc(struct jobwatch *jw, pid_t pid)
{
	struct jw_proc *p = find(jw, pid);

	if (!p) {
		learn(jw, pid);
		p = find(jw, pid);
	}
	return p && p->in_job ? p : NULL;
}

/* Is @pid in the job? Then its rank is set in @rank. */
static bool rank_of(struct jobwatch *jw, pid_t pid, int *rank)
{
	const struct jw_proc *p = job_proc(jw, pid);

	if (p)
		*rank = p->rank;
	return p != NULL;
}

/* "running", "sleeping in pipe_read", "exited with status 3": @p's state now, in words. */
static void state_of(const struct jw_proc *p, char *buf, size_t len)
{
	char wchan[128] = "", state = '?', ts;
	bool running = false;
	pid_t *tids;
	size_t n;

	if (p->exited) {
		snprintf(buf, len, "%s", p->end);
		return;
	}
	if (proc__tids(p->pid, &tids, &n)) {
		snprintf(buf, len, "gone");
		return;
	}
	/* A process runs when any of its threads runs; else it is where its main thread is. */
	for (size_t i = 0; i < n; i++) {
		if (proc__read_stat(p->pid, tids[i], NULL, 0, &ts, NULL))
			continue;
		running |= ts == 'R';
		if (tids[i] == p->pid)
			state = ts;
	}
	free(tids);
	if (running)
		state = 'R';
	switch (state) {
	case 'R': snprintf(buf, len, "running"); break;
	case 'S':
	case 'D':
		if (proc__read(p->pid, 0, "wchan", wchan, sizeof(wchan)) > 0 && strcmp(wchan, "0"))
			snprintf(buf, len, "sleeping in %s", wchan);
		else
			snprintf(buf, len, "sleeping");
		break;
	case 'T':
	case 't': snprintf(buf, len, "stopped"); break;
	case 'Z': snprintf(buf, len, "exited (not yet reaped)"); break;
	default: snprintf(buf, len, "gone"); break;
	}
}

static void emit_finding(struct jobwatch *jw, const struct jw_proc *p, uint64_t t, pid_t tid,
			 const char *comm, struct finding *f, const struct event_stack *stack)
{
	struct live_finding lf = {
		.t = t,
		.pid = p->pid,
		.tid = tid,
		.comm = comm,
		.f = f,
		.stack = stack,
		.has_rank = true,
		.rank = p->rank,
	};

	DOWN(jw, finding, &lf);
	jw->findings++;
}

/* Every other rank's state, as evidence lines of @f. */
static void others_state(struct jobwatch *jw, const struct jw_proc *self, struct finding *f)
{
	char state[1100];

	for (size_t i = 0; i < jw->n; i++) {
		const struct jw_proc *o = &jw->p[i];

		if (o == self || !o->is_rank)
			continue;
		state_of(o, state, sizeof(state));
		finding__evidence(f, "rank %d (PID %d): %s", o->rank, o->pid, state);
	}
}

/* @p, a rank, ended with wait status @status: said once, the first death as a finding. */
static void rank_ended(struct jobwatch *jw, struct jw_proc *p, const struct event *ev)
{
	unsigned int status = (unsigned int)ev->u.exit.wait_status;
	unsigned int sig = status & 0x7f, code = (status >> 8) & 0xff;
	struct findings fs = { 0 };
	struct finding *f;
	char sn[32];

	if (!sig && !code) {
		p->exited = true;
		snprintf(p->end, sizeof(p->end), "exited with status 0");
		return;
	}
	if (sig && p->signo == sig) {
		/* "crash_lib_store+0x4 (libcrash.so)" reads "crash_lib_store+0x4 from libcrash.so". */
		char *open = strrchr(p->sig_at, '(');
		size_t n = strlen(p->sig_at);

		if (open && open > p->sig_at && open[-1] == ' ' && p->sig_at[n - 1] == ')' &&
		    !strstr(p->sig_at, " in "))
			snprintf(p->end, sizeof(p->end), "%s in %.*s from %.*s (fault address %s)",
				 event__signal_name((int)sig, sn, sizeof(sn)),
				 (int)(open - 1 - p->sig_at), p->sig_at,
				 (int)(p->sig_at + n - 1 - open - 1), open + 1,
				 p->sig_where[0] ? p->sig_where : "?");
		else
			snprintf(p->end, sizeof(p->end), "%s at %s (fault address %s)",
				 event__signal_name((int)sig, sn, sizeof(sn)),
				 p->sig_at[0] ? p->sig_at : "?",
				 p->sig_where[0] ? p->sig_where : "?");
	} else if (sig) {
		snprintf(p->end, sizeof(p->end), "killed by %s",
			 event__signal_name((int)sig, sn, sizeof(sn)));
	} else {
		snprintf(p->end, sizeof(p->end), "exited with status %u", code);
	}
	/*
	 * SIGTERM, SIGINT and SIGHUP ask a process to end (scancel, a time limit, Ctrl-C, a
	 * launcher tearing the job down for a failure elsewhere): no rank died here, the job was
	 * ended. Its exit line says it; no finding blames it.
	 */
	if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
		p->exited = true;
		return;
	}
	if (jw->first_rank < 0) {
		jw->first_rank = p->rank;
		jw->first_pid = p->pid;
		f = findings__add(&fs, "rank-died", SEV_ERROR, p->pid,
				  "rank %d (PID %d) died first: %s", p->rank, p->pid, p->end);
		if (f) {
			/* The others as they were when it died, before they react to it. */
			others_state(jw, p, f);
			finding__explain(
				f,
				"the first rank to die is where the job broke; the others "
				"then fail or wait on it in their collectives, and their "
				"errors (timeouts, broken pipes) only repeat that",
				"look at this rank first: its signal and faulting object above, "
				"or the error it printed before exiting");
		}
	} else {
		f = findings__add(&fs, "rank-died", SEV_WARNING, p->pid,
				  "rank %d (PID %d) died after rank %d (PID %d): %s", p->rank,
				  p->pid, jw->first_rank, jw->first_pid, p->end);
		if (f)
			finding__explain(f, "it followed the first death (rank-died above)",
					 "look at the first rank that died");
	}
	p->exited = true;
	if (f)
		emit_finding(jw, p, ev->t, ev->tid, ev->comm, f, NULL);
	findings__free(&fs);
}

static void jw_event(struct event_sink *s, const struct event *ev)
{
	struct jobwatch *jw = JW(s);
	struct event e = *ev;
	struct jw_proc *p;

	if (ev->kind == EVENT_EXEC)
		learn(jw, ev->pid);
	else if (ev->kind == EVENT_FORK && !ev->u.fork.thread)
		learn(jw, ev->u.fork.child);
	p = job_proc(jw, ev->pid);
	if (p) {
		e.has_rank = true;
		e.rank = p->rank;
	}
	DOWN(jw, event, &e);
	if (!p && ev->kind == EVENT_EXIT && (p = find(jw, ev->pid))) {
		/* A process in no job is forgotten when it ends (its PID may come back). */
		*p = jw->p[--jw->n];
		return;
	}
	if (!p || !p->is_rank || p->exited)
		return;
	if (ev->kind == EVENT_SIGNAL) {
		p->signo = ev->u.signal.signo;
		snprintf(p->sig_at, sizeof(p->sig_at), "%s", ev->u.signal.at);
		snprintf(p->sig_where, sizeof(p->sig_where), "%s", ev->u.signal.where);
	} else if (ev->kind == EVENT_EXIT) {
		rank_ended(jw, p, ev);
	}
}

static void jw_loaded(struct event_sink *s, const struct loaded_obj *l)
{
	struct loaded_obj c = *l;

	c.has_rank = rank_of(JW(s), l->pid, &c.rank);
	DOWN(JW(s), loaded, &c);
}

static void jw_finding(struct event_sink *s, const struct live_finding *f)
{
	struct live_finding c = *f;

	c.has_rank = rank_of(JW(s), f->pid, &c.rank);
	DOWN(JW(s), finding, &c);
}

static void jw_activity(struct event_sink *s, const struct activity *a)
{
	struct activity c = *a;

	c.has_rank = rank_of(JW(s), a->pid, &c.rank);
	DOWN(JW(s), activity, &c);
}

static void jw_header(struct event_sink *s, const struct trace_header *h)
{
	DOWN(JW(s), header, h);
}

static void jw_unloaded(struct event_sink *s, uint64_t t, pid_t pid, pid_t tid, const char *path)
{
	DOWN(JW(s), unloaded, t, pid, tid, path);
}

static void jw_note(struct event_sink *s, const char *line)
{
	DOWN(JW(s), note, line);
}

static void jw_horizon(struct event_sink *s, uint64_t horizon)
{
	DOWN(JW(s), horizon, horizon);
}

static void jw_flush(struct event_sink *s)
{
	DOWN(JW(s), flush);
}

/* utime + stime of every thread of @pid, in clock ticks; -errno when it is gone. */
static int cpu_ticks(pid_t pid, unsigned long long *out)
{
	unsigned long long sum = 0, t;
	pid_t *tids;
	size_t n;
	int err = proc__tids(pid, &tids, &n);

	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		if (!proc__cpu_ticks(pid, tids[i], &t))
			sum += t;
	free(tids);
	*out = sum;
	return 0;
}

/* The frame a reader wants named: the first outside libc and the loader (a syscall wrapper). */
static const struct stack_frame *telling_frame(const struct thread_stack *ts)
{
	for (size_t i = 0; i < ts->n_frames; i++) {
		const char *m = ts->frames[i].module, *b = path_base(m);

		if (ts->frames[i].function && m && strncmp(b, "libc.so", 7) &&
		    strncmp(b, "libpthread", 10) && strncmp(b, "ld-linux", 8) &&
		    strncmp(b, "linux-vdso", 10))
			return &ts->frames[i];
	}
	return ts->n_frames ? &ts->frames[0] : NULL;
}

/*
 * @p hangs the job, a finding with its stack: it made no progress for @idle_s while ranks
 * @progressing did (@idle_s 0: it is one of them, and ranks @idle wait; @progressing NULL:
 * every rank is idle); @verdict, when the stacks named it, says why.
 */
static void report_hung(struct jobwatch *jw, struct jw_proc *p, uint64_t now, double idle_s,
			const char *progressing, const char *idle, const char *verdict)
{
	struct event_stack es = { 0 };
	struct findings fs = { 0 };
	const struct thread_stack *main_ts = NULL;
	struct stacks *st = NULL;
	char why[256] = "", in[600] = "", frame[512], comm[64] = "";
	struct finding *f;
	int err;

	p->hung = true;
	/* A short stop of its threads, released at once (user/analysis/unwind.h). */
	err = stacks__capture(p->pid, NULL, NULL, 0, NULL, 0, HUNG_MAX_FRAMES, &st, why,
			      sizeof(why));
	jw->captured = true;
	for (size_t i = 0; !err && i < st->n; i++)
		if (st->t[i].tid == p->pid || !main_ts)
			main_ts = &st->t[i];
	if (main_ts) {
		const struct stack_frame *tf = telling_frame(main_ts);

		for (size_t i = 0; i < main_ts->n_frames; i++) {
			frame_text__short(&main_ts->frames[i], frame, sizeof(frame));
			event_stack__push(&es, frame, main_ts->frames[i].pc);
		}
		if (tf) {
			frame_text__short(tf, frame, sizeof(frame));
			snprintf(in, sizeof(in), "; it is in %s", frame);
		}
	}
	proc__read_stat(p->pid, 0, comm, sizeof(comm), NULL, NULL);
	if (progressing && idle_s > 0)
		f = findings__add(&fs, "rank-hung", SEV_ERROR, p->pid,
				  "rank %d (PID %d) is hung: no CPU progress (under 2%% of a CPU) "
				  "for %.0f s while ranks %s progress%s",
				  p->rank, p->pid, idle_s, progressing, in);
	else if (progressing)
		f = findings__add(
			&fs, "rank-hung", SEV_ERROR, p->pid,
			"rank %d (PID %d) hangs the job: it runs on elsewhere while ranks "
			"%s make no CPU progress where they wait%s",
			p->rank, p->pid, idle, in);
	else
		f = findings__add(&fs, "rank-hung", SEV_ERROR, p->pid,
				  "rank %d (PID %d) hangs the job: every rank made no CPU progress "
				  "for %.0f s, and it waits where the others do not%s",
				  p->rank, p->pid, idle_s, in);
	if (f) {
		if (verdict)
			finding__evidence(f, "the ranks' stacks: %s", verdict);
		others_state(jw, p, f);
		if (err)
			finding__evidence(f, "its stack could not be read: %s", why);
		finding__explain(
			f,
			"the other ranks run on, so they will soon wait for it in their "
			"next collective: the job hangs on this rank",
			"look at where it waits (its stack below): a lock, a read that never "
			"returns, a rank-dependent branch that skipped a collective");
		emit_finding(jw, p, now, p->pid, comm, f, main_ts ? &es : NULL);
	}
	findings__free(&fs);
	event_stack__clear(&es);
	stacks__free(st);
}

/*
 * The live ranks' main threads, each stopped once in turn and released, merged as stacks --job
 * merges them: the verdict (NULL when fewer than two ranks were read).
 */
static json_t *stack_verdict(struct jobwatch *jw)
{
	struct rank_stacks *rs = calloc(jw->n ? jw->n : 1, sizeof(*rs));
	json_t *merged = NULL, *v = NULL;
	size_t n = 0;

	for (size_t i = 0; rs && i < jw->n; i++) {
		const struct jw_proc *p = &jw->p[i];
		struct stacks *st = NULL;
		json_t *frames;
		char why[256];

		if (!p->is_rank || p->exited ||
		    stacks__capture(p->pid, NULL, NULL, 0, &p->pid, 1, HUNG_MAX_FRAMES, &st, why,
				    sizeof(why)))
			continue;
		jw->captured = true;
		frames = json_array();
		for (size_t k = 0; st->n && k < st->t[0].n_frames; k++)
			json_array_append_new(frames, stack_frame__to_json(&st->t[0].frames[k]));
		rs[n++] = (struct rank_stacks){
			.rank = p->rank,
			.pid = p->pid,
			.doc = json_pack("{s:[{s:i, s:s, s:o, s:n}]}", "threads", "tid", p->pid,
					 "name", "", "frames", frames, "python"),
		};
		stacks__free(st);
	}
	if (n >= 2)
		merged = stackmerge__merge(rs, n, NULL, false);
	if (merged)
		v = json_incref(json_object_get(merged, "verdict"));
	for (size_t i = 0; i < n; i++)
		json_decref(rs[i].doc);
	free(rs);
	json_decref(merged);
	return v;
}

/*
 * The ranks the stacks name (outliers not reported yet), each reported; how many. @idle_s and
 * @progressing say what the CPU showed (@progressing NULL: no rank progressed).
 */
static size_t report_named(struct jobwatch *jw, const json_t *v, uint64_t now, double idle_s,
			   const char *progressing, const char *idle)
{
	const char *text = json_string_value(json_object_get(v, "text"));
	const json_t *o;
	size_t i, named = 0;

	json_array_foreach (json_object_get(v, "outliers"), i, o) {
		for (size_t k = 0; k < jw->n; k++) {
			struct jw_proc *p = &jw->p[k];

			if (!p->is_rank || p->exited || p->rank != json_integer_value(o))
				continue;
			named++;
			if (p->hung)
				continue;
			/* A named rank that used CPU runs elsewhere: no idle time to say. */
			report_hung(jw, p, now, now - p->cpu_changed >= jw->hang_ns ? idle_s : 0.0,
				    progressing, idle, text);
		}
	}
	return named;
}

/* The ranks (into @ranks, their count) that made progress within hang_ns. */
static size_t progressing_ranks(const struct jobwatch *jw, uint64_t now, int *ranks)
{
	size_t k = 0;

	for (size_t j = 0; j < jw->n; j++)
		if (jw->p[j].is_rank && !jw->p[j].exited && jw->p[j].cpu_known &&
		    now - jw->p[j].cpu_changed < jw->hang_ns)
			ranks[k++] = jw->p[j].rank;
	return k;
}

/*
 * Whether a rank made no progress for hang_ns: then the stacks decide (a rank idle while the
 * others compute may be the one waiting for a rank that computes elsewhere, and when every
 * rank sleeps one may still sleep where the others do not). Once a verdict named a rank, the
 * next is taken only when every rank is idle (ranks going idle one after another wait for it).
 */
static void decide_with_stacks(struct jobwatch *jw, uint64_t now, size_t live, size_t moving,
			       int *ranks)
{
	char progressing[256], idle_text[256];
	int idle[256];
	size_t k, ni = 0, named = 0;
	json_t *v;

	if (now - jw->verdict_at < jw->hang_ns || (jw->verdict_named && moving))
		return;
	jw->verdict_at = now;
	k = progressing_ranks(jw, now, ranks);
	job__format_ranks(ranks, k, progressing, sizeof(progressing));
	for (size_t j = 0; j < jw->n && ni < 256; j++)
		if (jw->p[j].is_rank && !jw->p[j].exited && jw->p[j].cpu_known &&
		    now - jw->p[j].cpu_changed >= jw->hang_ns)
			idle[ni++] = jw->p[j].rank;
	job__format_ranks(idle, ni, idle_text, sizeof(idle_text));
	v = stack_verdict(jw);
	if (v)
		/* Progressing ranks named run outside the collective the idle ones wait in. */
		named = report_named(jw, v, now, (double)jw->hang_ns / 1e9,
				     moving ? progressing : NULL, idle_text);
	if (named) {
		jw->verdict_named = true;
	} else if (moving && k + 1 == live) {
		/* The stacks tell nothing apart: the one rank idle while all others run. */
		for (size_t i = 0; i < jw->n; i++) {
			struct jw_proc *p = &jw->p[i];

			if (p->is_rank && !p->exited && !p->hung && p->cpu_known &&
			    now - p->cpu_changed >= jw->hang_ns) {
				report_hung(jw, p, now, (double)(now - p->cpu_changed) / 1e9,
					    progressing, NULL, NULL);
				jw->verdict_named = true;
			}
		}
	}
	json_decref(v);
}

static void scan_progress(struct jobwatch *jw, uint64_t now)
{
	size_t live = 0, moving = 0;
	int *ranks;

	for (size_t i = 0; i < jw->n; i++) {
		struct jw_proc *p = &jw->p[i];
		unsigned long long cpu;

		if (!p->is_rank || p->exited || cpu_ticks(p->pid, &cpu))
			continue;
		if (!p->cpu_known || cpu - p->cpu_base >= jw->progress_ticks) {
			p->cpu_base = cpu;
			p->base_at = p->cpu_changed = now;
			p->cpu_known = true;
		} else if (now - p->base_at >= jw->hang_ns) {
			/* A window without progress: the next one starts here (no slow creep). */
			p->cpu_base = cpu;
			p->base_at = now;
		}
		live++;
		if (now - p->cpu_changed < jw->hang_ns)
			moving++;
	}
	if (live < 2 || moving == live)
		return;
	if (!moving && !jw->job_idle) {
		/* Everyone waits: a job-wide wait (said in the summary), unless the stacks name
		 * one rank that waits where the others do not. */
		jw->job_idle = true;
		jw->idle_secs = (double)jw->hang_ns / 1e9;
		jw->idle_ranks = live;
	}
	ranks = calloc(jw->n, sizeof(*ranks));
	if (ranks)
		decide_with_stacks(jw, now, live, moving, ranks);
	free(ranks);
}

static void jw_tick(struct event_sink *s, uint64_t now)
{
	struct jobwatch *jw = JW(s);

	DOWN(jw, tick, now);
	if (now - jw->last_scan < SCAN_NS)
		return;
	jw->last_scan = now;
	scan_progress(jw, now);
	/* A thread the capture could not stop in time is let go as soon as it can be. */
	if (jw->captured)
		stacks__release_pending(0);
}

static void jw_summary(struct event_sink *s, const struct watch_stats *st)
{
	struct jobwatch *jw = JW(s);
	struct watch_stats c = *st;
	char line[256];

	if (jw->job_idle) {
		snprintf(line, sizeof(line),
			 "job: all %zu ranks made no CPU progress for %.0f s at once: a job-wide "
			 "wait%s",
			 jw->idle_ranks, jw->idle_secs,
			 jw->verdict_named ? "" :
					     " (every rank waits in one place; no rank is the "
					     "one that hangs)");
		DOWN(jw, note, line);
	}
	c.findings += jw->findings;
	DOWN(jw, summary, &c);
}

struct jobwatch *jobwatch__new(struct event_sink *const *down, size_t n_down, double hang_secs)
{
	struct jobwatch *jw = calloc(1, sizeof(*jw));

	if (!jw)
		return NULL;
	jw->s = (struct event_sink){
		.header = jw_header,
		.event = jw_event,
		.loaded = jw_loaded,
		.unloaded = jw_unloaded,
		.note = jw_note,
		.finding = jw_finding,
		.summary = jw_summary,
		.activity = jw_activity,
		.flush = jw_flush,
		.horizon = jw_horizon,
		.tick = jw_tick,
	};
	for (size_t i = 0; i < n_down; i++)
		jw->s.wants_stacks |= down[i]->wants_stacks;
	jw->down = down;
	jw->n_down = n_down;
	jw->hang_ns = (uint64_t)(hang_secs * 1e9);
	/*
	 * Progress is 2% of a CPU over the window, not a tick: a rank blocked in a collective
	 * keeps gaining a tick or two a second from its runtime's background threads (gloo's,
	 * torch's), which must not make it look busy.
	 */
	jw->progress_ticks =
		(unsigned long long)(hang_secs * PROGRESS_SHARE * (double)sysconf(_SC_CLK_TCK));
	if (!jw->progress_ticks)
		jw->progress_ticks = 1;
	jw->first_rank = -1;
	return jw;
}

struct event_sink *jobwatch__sink(struct jobwatch *jw)
{
	return &jw->s;
}

void jobwatch__add(struct jobwatch *jw, pid_t pid)
{
	learn(jw, pid);
}

unsigned long long jobwatch__findings(const struct jobwatch *jw)
{
	return jw->findings;
}

void jobwatch__free(struct jobwatch *jw)
{
	if (!jw)
		return;
	if (jw->captured)
		stacks__release_pending(200);
	free(jw->p);
	free(jw);
}
