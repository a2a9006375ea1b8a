// SPDX-License-Identifier: GPL-2.0
/* The collector's sinks: watch's text lines and trace records (a file, or the TUI's queue). */
#include <errno.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "array.h"
#include "finding.h"
#include "libgraph.h"
#include "objrecord.h"
#include "order.h"
#include "paths.h"
#include "pkgindex.h"
#include "procfs.h"
#include "runtimes.h"
#include "sink.h"
#include "version.h"

/* ---- text ---- */

#define TEXT(s) ((struct text_sink *)(s))

static void rel_time(const struct text_sink *t, uint64_t ts, char *buf, size_t len)
{
	unsigned long long d = ts > t->t0 ? ts - t->t0 : 0;

	snprintf(buf, len, "%5llu.%06llu", d / 1000000000ULL, d / 1000ULL % 1000000ULL);
}

/* "[rank 2] " before the PID of a rank's line; "" for a process that is in no job. */
static const char *rank_tag(bool has, int rank, char *buf, size_t len)
{
	if (!has)
		return "";
	snprintf(buf, len, "[rank %d] ", rank);
	return buf;
}

/* Where a record's lines go: the output, or (ordered) a buffer that waits for its turn. */
struct text_rec {
	FILE *f;
	char *buf;
	size_t len;
};

static FILE *rec_begin(struct text_sink *t, struct text_rec *r)
{
	*r = (struct text_rec){ .f = t->out };
	if (t->ordered) {
		FILE *m = open_memstream(&r->buf, &r->len);

		if (m)
			r->f = m;
	}
	return r->f;
}

/* One record, flushed alone: its lines reach a pipe whole, never cut by a full buffer where
 * the watched command writes to the same one. */
static void text_write(void *ctx, void *p)
{
	fputs(p, ((struct text_sink *)ctx)->out);
	fflush(((struct text_sink *)ctx)->out);
	free(p);
}

/* The record stamped @ts (0: after the latest) written, or queued until the horizon passes. */
static void rec_end(struct text_sink *t, struct text_rec *r, uint64_t ts)
{
	if (r->f == t->out) {
		fflush(t->out);
		return;
	}
	fclose(r->f);
	if (order__push(&t->q, ts, r->buf)) {
		text_write(t, r->buf);
		fflush(t->out);
	}
}

static void text_horizon(struct event_sink *s, uint64_t horizon)
{
	size_t before = TEXT(s)->q.n;

	order__release(&TEXT(s)->q, horizon, text_write, s);
	if (TEXT(s)->q.n != before)
		fflush(TEXT(s)->out);
}

static void text_header(struct event_sink *s, const struct trace_header *h)
{
	TEXT(s)->t0 = h->t0;
}

static void text_event(struct event_sink *s, const struct event *ev)
{
	char t[32], line[PATH_MAX + 256], rk[32];
	struct text_rec r;
	FILE *out = rec_begin(TEXT(s), &r);

	rel_time(TEXT(s), ev->t, t, sizeof(t));
	event__text(ev, 0, line, sizeof(line));
	fprintf(out, "[%s] %s%d/%d %s %s\n", t, rank_tag(ev->has_rank, ev->rank, rk, sizeof(rk)),
		ev->pid, ev->tid, ev->comm, line);
	/* A Python thread's dlopen: the import chain (its frames outside importlib). */
	if (ev->has_python) {
		char *py = py_import__lines(&ev->py, true, "        ");

		if (py)
			fprintf(out, "%s\n", py);
		free(py);
	}
	/* A runtime's first region: where it started (one inside dlopen has its finding's). */
	if (ev->kind == EVENT_OMP_FORK && !ev->in_dlopen && ev->has_stack) {
		for (size_t i = 0; i < ev->stack.n; i++)
			fprintf(out, "        #%zu %s\n", i, ev->stack.frames[i]);
		if (ev->stack.end)
			fprintf(out, "        (%s)\n", ev->stack.end);
	}
	rec_end(TEXT(s), &r, ev->t);
}

/* "[t] PID runs as pid 1 in its PID namespace, in container docker 3f2a9c1b5e7d". */
static void text_where(struct event_sink *s, const struct loaded_obj *l)
{
	char t[32], rk[32];
	struct text_rec r;
	FILE *out;

	rel_time(TEXT(s), l->t, t, sizeof(t));
	out = rec_begin(TEXT(s), &r);
	fprintf(out, "[%s] %s%d (%s) runs", t, rank_tag(l->has_rank, l->rank, rk, sizeof(rk)),
		l->pid, l->g->comm);
	if (l->g->ns_pid)
		fprintf(out, " as pid %d in its PID namespace", l->g->ns_pid);
	if (l->g->container[0])
		fprintf(out, "%s in container %s", l->g->ns_pid ? "," : "", l->g->container);
	fprintf(out, "\n");
	rec_end(TEXT(s), &r, l->t);
}

static void text_loaded(struct event_sink *s, const struct loaded_obj *l)
{
	char desc[160] = "", t[32], pkg[256] = "", rk[32], where[160] = "";
	struct text_rec r;

	if (l->baseline) {
		/* A process attached to: its objects are no news, where it runs is. */
		if (l->o->origin == LG_EXECUTABLE && (l->g->ns_pid || l->g->container[0]))
			text_where(s, l);
		return;
	}
	if (l->o->pkg) {
		strcpy(pkg, "  package ");
		pkg_owner__describe(l->o->pkg, pkg + 10, sizeof(pkg) - 10);
	}
	if (lg_object__roles(l->o)->n) {
		desc[0] = ' ';
		desc[1] = '[';
		runtimes__describe_role(l->g, l->o->id, 0, desc + 2, sizeof(desc) - 3);
		strcat(desc, "]");
	}
	/* The program's line says where the process runs, when not as we do. */
	if (l->o->origin == LG_EXECUTABLE && l->g->ns_pid)
		snprintf(where + strlen(where), sizeof(where) - strlen(where),
			 "  pid %d in its PID namespace", l->g->ns_pid);
	if (l->o->origin == LG_EXECUTABLE && l->g->container[0])
		snprintf(where + strlen(where), sizeof(where) - strlen(where), "%s container %s",
			 where[0] ? "," : " ", l->g->container);
	rel_time(TEXT(s), l->t, t, sizeof(t));
	fprintf(rec_begin(TEXT(s), &r), "[%s] %s%d + %s%s (%s)%s%s\n", t,
		rank_tag(l->has_rank, l->rank, rk, sizeof(rk)), l->pid, l->o->path, desc,
		lg_origin__id(l->o->origin), where, pkg);
	rec_end(TEXT(s), &r, l->t);
}

static void text_unloaded(struct event_sink *s, uint64_t t, pid_t pid, pid_t tid, const char *path)
{
	struct text_rec r;

	(void)tid;
	fprintf(rec_begin(TEXT(s), &r), "        %d - %s\n", pid, path);
	rec_end(TEXT(s), &r, t);
}

static void text_note(struct event_sink *s, const char *line)
{
	struct text_rec r;

	fprintf(rec_begin(TEXT(s), &r), "%s\n", line);
	rec_end(TEXT(s), &r, 0);
}

/* The finding, and under it the stack of the event that caused it. */
static void text_finding(struct event_sink *s, const struct live_finding *f)
{
	struct text_rec r;
	FILE *out = rec_begin(TEXT(s), &r);
	char t[32], rk[32];

	rel_time(TEXT(s), f->t, t, sizeof(t));
	fprintf(out, "[%s] %s%d/%d %s FINDING %s %s: %s\n", t,
		rank_tag(f->has_rank, f->rank, rk, sizeof(rk)), f->pid, f->tid, f->comm,
		severity__name(f->f->sev), f->f->id, f->f->title);
	finding__print_body(f->f, "      ", out);
	for (size_t i = 0; f->stack && i < f->stack->n; i++)
		fprintf(out, "        #%zu %s\n", i, f->stack->frames[i]);
	if (f->stack && f->stack->end)
		fprintf(out, "        (%s)\n", f->stack->end);
	rec_end(TEXT(s), &r, f->t);
}

/* "libgomp.so.1" of "/usr/lib/x86_64-linux-gnu/libgomp.so.1": lines stay short. */

static const char *activity_unit(const struct activity *a)
{
	return strcmp(a->kind, "blas") ? "parallel regions" : "BLAS dispatches";
}

/* One line per process and runtime and second: the regions, and which threads started them. */
static void text_activity(struct event_sink *s, const struct activity *a)
{
	struct text_rec r;
	FILE *out = rec_begin(TEXT(s), &r);
	char t[32], rk[32];

	rel_time(TEXT(s), a->t, t, sizeof(t));
	fprintf(out, "[%s] %s%d activity %s: %llu %s (%llu so far), threads", t,
		rank_tag(a->has_rank, a->rank, rk, sizeof(rk)), a->pid, path_base(a->runtime),
		(unsigned long long)a->n, activity_unit(a), (unsigned long long)a->total);
	for (size_t i = 0; i < a->n_threads; i++)
		fprintf(out, " %d:%llu", a->threads[i].tid, (unsigned long long)a->threads[i].n);
	fputc('\n', out);
	rec_end(TEXT(s), &r, a->t);
}

/* --hot: the run's totals per runtime, then per thread. */
static void text_summary(struct event_sink *s, const struct watch_stats *st)
{
	FILE *out = TEXT(s)->out;

	/* Everything held goes first: the run is over. */
	text_horizon(s, UINT64_MAX);
	order__free(&TEXT(s)->q);
	for (size_t i = 0; i < st->n_activity; i++) {
		const struct activity *a = &st->activity[i];

		fprintf(out, "activity: process %d, %s (%s): %llu %s\n", a->pid, a->runtime,
			a->kind, (unsigned long long)a->total, activity_unit(a));
		for (size_t k = 0; k < a->n_threads; k++)
			fprintf(out, "          thread %d: %llu\n", a->threads[k].tid,
				(unsigned long long)a->threads[k].n);
	}
	if (st->activity_uncounted)
		fprintf(out,
			"activity: %llu regions not counted (the kernel's thread table was full)\n",
			st->activity_uncounted);
	fflush(out);
}

void text_sink__init(struct text_sink *t, FILE *out)
{
	*t = (struct text_sink){
		.s = { .header = text_header,
		       .event = text_event,
		       .loaded = text_loaded,
		       .unloaded = text_unloaded,
		       .note = text_note,
		       .finding = text_finding,
		       .activity = text_activity,
		       .horizon = text_horizon,
		       .summary = text_summary },
		.out = out,
	};
}

void text_sink__order(struct text_sink *t)
{
	t->ordered = true;
}

static void drop_line(void *ctx, void *p)
{
	free(p);
}

void text_sink__drop_held(struct text_sink *t)
{
	order__release(&t->q, UINT64_MAX, drop_line, NULL);
	order__free(&t->q);
}

/* ---- trace records ---- */

#define JSON(s) ((struct json_sink *)(s))

/* A rank's record says its rank (docs/trace-format.md). */
static json_t *with_rank(json_t *rec, bool has, int rank)
{
	if (rec && has)
		json_object_set_new(rec, "rank", json_integer(rank));
	return rec;
}

static void json_write(void *ctx, void *p)
{
	struct json_sink *j = ctx;

	j->emit(j->ctx, p);
	json_decref(p);
}

/* The record now, or (ordered) once the horizon passes its "t" (none: after the latest). */
static void emit(struct event_sink *s, json_t *rec)
{
	if (!rec)
		return;
	if (JSON(s)->ordered &&
	    !order__push(&JSON(s)->q, (uint64_t)json_integer_value(json_object_get(rec, "t")), rec))
		return;
	json_write(s, rec);
}

static void json_horizon(struct event_sink *s, uint64_t horizon)
{
	order__release(&JSON(s)->q, horizon, json_write, s);
}

static void json_header(struct event_sink *s, const struct trace_header *h)
{
	struct utsname u;
	json_t *pids = json_array();
	char boot[64] = "";

	uname(&u);
	/* The boot's id tells two boots of one host apart: their PIDs and clocks are unrelated
	 * (dlscope merge). */
	if (proc__read_small("/proc/sys/kernel/random/boot_id", boot, sizeof(boot)) > 0)
		boot[strcspn(boot, "\n")] = '\0';
	for (size_t i = 0; i < h->n_targets; i++)
		json_array_append_new(pids, json_integer(h->targets[i]));
	/* Recorded in a Slurm step: the node's name, which merge labels it by (two slurmds of a
	 * test cluster share one host name and boot). */
	const char *node = getenv("SLURMD_NODENAME");

	emit(s,
	     json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s?, s:s, s:s, s:s, s:I, s:I, s:o, s:b, s:b}",
		       "type", "header", "format", TRACE_FORMAT, "dlscope", DLSCOPE_VERSION, "host",
		       u.nodename, "node", node && *node ? node : NULL, "boot_id",
		       boot[0] ? boot : NULL, "kernel", u.release, "glibc", gnu_get_libc_version(),
		       "clock", "CLOCK_MONOTONIC", "t0", (json_int_t)h->t0,
		       "realtime_minus_monotonic_ns", (json_int_t)h->realtime_minus_monotonic_ns,
		       "targets", pids, "follow", h->follow, "hot", h->hot));
}

static void json_event(struct event_sink *s, const struct event *ev)
{
	emit(s, event__to_json(ev));
}

static void json_loaded(struct event_sink *s, const struct loaded_obj *l)
{
	emit(s,
	     with_rank(obj_record__loaded(l->g, l->o, l->pid, true, l->t), l->has_rank, l->rank));
}

/* What a process no longer has: {"type": "unloaded", "t", "pid", "tid", "path"}. */
static void json_unloaded(struct event_sink *s, uint64_t t, pid_t pid, pid_t tid, const char *path)
{
	emit(s, json_pack("{s:s, s:I, s:i, s:i, s:s}", "type", "unloaded", "t", (json_int_t)t,
			  "pid", pid, "tid", tid, "path", path));
}

static void json_finding(struct event_sink *s, const struct live_finding *f)
{
	static const struct event_stack none;
	json_t *j = finding__record(f->f, f->t, f->pid, f->tid);

	/* A finding always says where: an empty stack when its event carried none. */
	if (j)
		event_stack__to_json(f->stack ? f->stack : &none, j);
	emit(s, with_rank(j, f->has_rank, f->rank));
}

/* An activity's runtime and counts: {"pid", "runtime", "kind", "n", "threads": {tid: n}}. */
static json_t *activity_json(const struct activity *a)
{
	json_t *threads = json_object();

	for (size_t i = 0; threads && i < a->n_threads; i++) {
		char tid[16];

		snprintf(tid, sizeof(tid), "%d", a->threads[i].tid);
		json_object_set_new(threads, tid, json_integer((json_int_t)a->threads[i].n));
	}
	return json_pack("{s:i, s:s, s:s, s:I, s:o}", "pid", a->pid, "runtime", a->runtime, "kind",
			 a->kind, "n", (json_int_t)a->n, "threads", threads);
}

static void json_activity(struct event_sink *s, const struct activity *a)
{
	json_t *j = activity_json(a);

	if (j) {
		json_object_set_new(j, "type", json_string("activity"));
		json_object_set_new(j, "t", json_integer((json_int_t)a->t));
		json_object_set_new(j, "total", json_integer((json_int_t)a->total));
	}
	emit(s, with_rank(j, a->has_rank, a->rank));
}

static void json_summary(struct event_sink *s, const struct watch_stats *st)
{
	json_t *act = json_array();

	/* Everything held goes first: the run is over. */
	json_horizon(s, UINT64_MAX);
	order__free(&JSON(s)->q);
	JSON(s)->ordered = false;
	for (size_t i = 0; act && i < st->n_activity; i++)
		json_array_append_new(act, activity_json(&st->activity[i]));
	emit(s, json_pack("{s:s, s:I, s:I, s:{s:I, s:I, s:I, s:I}, s:I, s:o, s:I, s:I, s:I, s:f, "
			  "s:f, s:I, s:I, s:I, s:I, s:b, s:I, s:I, s:I, s:f, s:I}",
			  "type", "summary", "events", (json_int_t)st->events, "lost",
			  (json_int_t)st->lost, "lost_by", "ring_full", (json_int_t)st->lost_ring,
			  "calls_full", (json_int_t)st->lost_calls, "skipped_by_kernel",
			  (json_int_t)st->lost_skipped, "unread_at_stop",
			  (json_int_t)st->lost_unread, "findings", (json_int_t)st->findings,
			  "activity", act, "activity_uncounted", (json_int_t)st->activity_uncounted,
			  "holds", (json_int_t)st->holds, "holds_late", (json_int_t)st->holds_late,
			  "hold_ms_max", st->hold_ms_max, "hold_ms_total", st->hold_ms_total,
			  "holds_abandoned", (json_int_t)st->holds_abandoned, "holds_not_held",
			  (json_int_t)st->holds_not_held, "holds_signalled",
			  (json_int_t)st->holds_signalled, "holds_no_probes",
			  (json_int_t)st->holds_no_probes, "probes_everywhere",
			  st->probes_everywhere, "outside_processes", (json_int_t)st->outside_procs,
			  "outside_hits", (json_int_t)st->outside_hits, "late_starts",
			  (json_int_t)st->late_starts, "late_start_ms_max", st->late_start_ms_max,
			  "late_starts_gone", (json_int_t)st->late_starts_gone));
}

static void json_flush(struct event_sink *s)
{
	if (JSON(s)->flush)
		JSON(s)->flush(JSON(s)->ctx);
}

void json_sink__init(struct json_sink *j, void (*emit_fn)(void *ctx, json_t *rec),
		     void (*flush)(void *ctx), void *ctx)
{
	*j = (struct json_sink){
		.s = { .header = json_header,
		       .event = json_event,
		       .loaded = json_loaded,
		       .unloaded = json_unloaded,
		       .finding = json_finding,
		       .summary = json_summary,
		       .activity = json_activity,
		       .horizon = json_horizon,
		       .flush = json_flush,
		       .wants_stacks = true },
		.emit = emit_fn,
		.flush = flush,
		.ctx = ctx,
	};
}

#define TRACE_BUF (256 * 1024)

/* Writes the buffer; on a failure, the records not wholly written are counted and dropped. */
static void file_flush(void *ctx)
{
	struct trace_file *tf = ctx;
	size_t done = 0;

	while (!tf->err && done < tf->len) {
		ssize_t w = write(tf->fd, tf->buf + done, tf->len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			tf->err = w < 0 ? errno : EIO;
		else
			done += (size_t)w;
	}
	/* Each record ends with its only newline (compact JSON escapes those in strings). */
	for (size_t i = 0; i < tf->len; i++)
		if (tf->buf[i] == '\n') {
			if (i < done)
				tf->written++;
			else
				tf->unwritten++;
		}
	tf->len = 0;
}

static void file_emit(void *ctx, json_t *rec)
{
	struct trace_file *tf = ctx;
	size_t need;

	if (tf->err) {
		tf->unwritten++;
		return;
	}
	need = json_dumpb(rec, NULL, 0, JSON_COMPACT) + 1;
	if (tf->len + need > tf->cap)
		file_flush(tf);
	if (need > tf->cap && ARRAY_RESERVE(tf->buf, tf->cap, need)) {
		tf->err = ENOMEM;
		tf->unwritten++;
		return;
	}
	if (tf->err) {
		tf->unwritten++;
		return;
	}
	tf->len += json_dumpb(rec, tf->buf + tf->len, tf->cap - tf->len, JSON_COMPACT);
	tf->buf[tf->len++] = '\n';
}

void json_sink__init_file(struct json_sink *j, struct trace_file *tf, int fd)
{
	*tf = (struct trace_file){ .fd = fd, .buf = malloc(TRACE_BUF), .cap = TRACE_BUF };
	if (!tf->buf) {
		tf->cap = 0;
		tf->err = ENOMEM;
	}
	json_sink__init(j, file_emit, file_flush, tf);
}

void json_sink__order(struct json_sink *j)
{
	j->ordered = true;
}

static void drop_record(void *ctx, void *p)
{
	json_decref(p);
}

void json_sink__drop_held(struct json_sink *j)
{
	order__release(&j->q, UINT64_MAX, drop_record, NULL);
	order__free(&j->q);
}

int trace_file__close(struct trace_file *tf)
{
	file_flush(tf);
	if (close(tf->fd) && !tf->err)
		tf->err = errno;
	free(tf->buf);
	tf->buf = NULL;
	tf->cap = 0;
	return -tf->err;
}
