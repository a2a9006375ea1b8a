// SPDX-License-Identifier: GPL-2.0
/*
 * The snapshot source: what libs, check and stacks read from a live process without root,
 * turned into the model. The same modules do the work; this file only translates.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "finding.h"
#include "frame_text.h"
#include "inspect.h"
#include "libgraph.h"
#include "lockwait.h"
#include "objrecord.h"
#include "pystate.h"
#include "source.h"
#include "target.h"
#include "threadscan.h"
#include "unwind.h"

#define SNAPSHOT_MAX_FRAMES 64

/*
 * Each object as the "loaded" record a trace has of it, applied as a live or replayed one is;
 * without "t": the object is there, no event says when it came.
 */
static void put_libs(struct model *m, pid_t pid, const struct libgraph *g)
{
	for (size_t i = 0; i < g->n; i++) {
		json_t *rec;

		if (g->objs[i]->gone)
			continue;
		rec = obj_record__loaded(g, g->objs[i], pid, false, 0);
		if (rec)
			model__apply(m, rec);
		json_decref(rec);
	}
}

static void put_findings(struct model *m, pid_t pid, const struct check_ctx *ctx)
{
	struct findings fs = { 0 };

	for (size_t i = 0; i < n_detectors; i++)
		if (detectors[i].process)
			detectors[i].process(ctx, &fs);
	model__drop_snapshot_findings(m, pid);
	for (size_t i = 0; i < fs.n; i++) {
		const struct finding *f = &fs.f[i];

		model__add_finding(m, pid, 0, f->id, severity__name(f->sev), f->title,
				   (const char *const *)f->evidence, f->n_evidence, f->why,
				   f->remedy, NULL);
	}
	findings__free(&fs);
}

/* "    [py] worker (/tmp/t.py:12)": a Python frame under the eval frame that runs it. */
static void put_py_frame(const struct py_frame *f, FILE *out)
{
	fprintf(out, "\n        [py] %s (%s", f->function, f->file);
	if (f->line >= 0)
		fprintf(out, ":%d", f->line);
	fputc(')', out);
}

/*
 * Frames as stacks prints them, "#N 0xPC in function+off from module at file:line", one per
 * line, each eval frame followed by the Python frames it runs.
 */
static char *stack_text(const struct thread_stack *st)
{
	size_t n_py = st->py ? st->py->n_frames : 0, j = 0, len = 0;
	long *at = calloc(n_py ? n_py : 1, sizeof(*at));
	char *s = NULL;
	FILE *out;

	if (!at || !(out = open_memstream(&s, &len))) {
		free(at);
		return NULL;
	}
	thread_stack__place_python(st, at);
	for (size_t k = 0; k < st->n_frames; k++) {
		if (k)
			fputc('\n', out);
		frame_text__fprint(out, &st->frames[k], k ? &st->frames[k - 1] : NULL, k,
				   FRAME_FULL);
		for (; j < n_py && at[j] == (long)k; j++)
			put_py_frame(&st->py->frames[j], out);
	}
	for (; j < n_py; j++)
		put_py_frame(&st->py->frames[j], out);
	if (st->error)
		fprintf(out, "%s(%s)", st->n_frames || n_py ? "\n" : "", st->error);
	if (st->py && st->py->error)
		fprintf(out, "\n(Python frames stop early: %s)", st->py->error);
	fclose(out);
	free(at);
	return s;
}

static bool in_cycle(const struct lockwait_report *r, pid_t tid)
{
	for (size_t c = 0; r && c < r->n_cycles; c++)
		for (size_t k = 0; k < r->cycle_len[c]; k++)
			if (r->cycles[c][k] == tid)
				return true;
	return false;
}

static void put_threads(struct model *m, struct m_proc *p, const struct threadscan *ts,
			const struct lockwait_report *r, const struct stacks *s)
{
	size_t n = ts ? ts->n : s ? s->n : 0, n_edges = r ? r->n_edges : 0;
	size_t n_verdicts = r ? r->n_verdicts : 0;
	struct m_thread *th = n ? calloc(n, sizeof(*th)) : NULL;
	struct m_edge *ed = n_edges ? calloc(n_edges, sizeof(*ed)) : NULL;
	char **verdicts = n_verdicts ? calloc(n_verdicts, sizeof(char *)) : NULL;

	if ((n && !th) || (n_edges && !ed) || (n_verdicts && !verdicts)) {
		free(th);
		free(ed);
		free(verdicts);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct m_thread *t = &th[i];

		t->tid = ts ? ts->t[i].tid : s->t[i].tid;
		t->state = ts ? ts->t[i].state : '?';
		snprintf(t->comm, sizeof(t->comm), "%s", ts ? ts->t[i].comm : "");
		snprintf(t->wait_kind, sizeof(t->wait_kind), "unknown");
		for (size_t w = 0; r && w < r->n_threads; w++)
			if (r->threads[w].tid == t->tid) {
				snprintf(t->wait_kind, sizeof(t->wait_kind), "%s",
					 wait_kind__id(r->threads[w].kind));
				if (r->threads[w].kind != WAIT_RUNNING)
					t->waits = strdup(r->threads[w].what);
			}
		for (size_t k = 0; s && k < s->n; k++)
			if (s->t[k].tid == t->tid)
				t->stack = stack_text(&s->t[k]);
		t->in_cycle = in_cycle(r, t->tid);
	}
	for (size_t e = 0; e < n_edges; e++) {
		ed[e].from = r->edges[e].from;
		ed[e].to = r->edges[e].to;
		snprintf(ed[e].kind, sizeof(ed[e].kind), "%s", wait_kind__id(r->edges[e].kind));
		ed[e].what = strdup(r->edges[e].what);
	}
	for (size_t v = 0; v < n_verdicts; v++) {
		const char *rem = r->remedies[v];

		if (asprintf(&verdicts[v], "%s%s%s", r->verdicts[v], rem ? " What to do: " : "",
			     rem ? rem : "") < 0)
			verdicts[v] = NULL;
	}
	model__set_threads(m, p, th, n, ed, n_edges, verdicts, n_verdicts);
}

int snapshot__take(struct model *m, pid_t pid, bool want_stacks, char *why, size_t whylen,
		   char *warn, size_t warnlen)
{
	struct inspection *in = NULL;
	const struct target *t;
	struct check_ctx ctx;
	struct m_proc *p;
	int err;

	warn[0] = '\0';
	err = inspection__new(pid, &in, why, whylen);
	if (err)
		return err;
	t = in->t;
	err = inspection__read(in, INSPECT_LOCKWAIT | (want_stacks ? INSPECT_STACKS : 0),
			       SNAPSHOT_MAX_FRAMES, why, whylen);
	if (err)
		goto out;
	if (in->ts_err || in->lw_err)
		snprintf(warn, warnlen, "process %d (%s): the lock-wait graph could not be built",
			 pid, t->comm);
	if (want_stacks && in->stacks_err)
		snprintf(warn, warnlen, "no stacks: %s", in->stacks_why);
	p = model__proc_get(m, pid);
	if (!p) {
		err = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	snprintf(p->comm, sizeof(p->comm), "%s", t->comm);
	if (!p->env_read) {
		p->env_read = true;
		target__getenv(t, "RANK", p->rank, sizeof(p->rank));
		target__getenv(t, "LOCAL_RANK", p->local_rank, sizeof(p->local_rank));
	}
	put_libs(m, pid, in->g);
	/* The deadlock detector reads the lock-wait graph built here, not a second one. */
	ctx = (struct check_ctx){ .t = t, .g = in->g, .ts = in->ts, .lw = in->lw };
	put_findings(m, pid, &ctx);
	/* put_libs and put_findings may have moved the process array. */
	put_threads(m, model__proc(m, pid), in->ts, in->lw, in->stacks);
out:
	inspection__free(in);
	return err;
}

size_t snapshot__release(unsigned int wait_ms)
{
	return stacks__release_pending(wait_ms);
}
