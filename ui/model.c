// SPDX-License-Identifier: GPL-2.0
/* The TUI's model: trace records and snapshots in, what the views show out. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "detector.h"
#include "event.h"
#include "model.h"
#include "paths.h"

static const char *const kind_ids[EV__COUNT] = {
	[EV_DLOPEN] = "dlopen",
	[EV_DLCLOSE] = "dlclose",
	[EV_DLSYM] = "dlsym",
	[EV_OMP_FORK] = "omp_fork",
	[EV_BLAS_THREAD] = "blas_thread",
	[EV_GPU_LOAD] = "gpu_load",
	[EV_EXEC] = "exec",
	[EV_FORK] = "fork",
	[EV_EXIT] = "exit",
	[EV_SIGNAL] = "signal",
	[EV_FUTEX_WAIT] = "futex_wait",
	[EV_LOADED] = "loaded",
	[EV_FINDING] = "finding",
	[EV_ACTIVITY] = "activity",
};

const char *ev_kind__id(enum ev_kind k)
{
	return k < EV__COUNT ? kind_ids[k] : "?";
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

struct model *model__new(size_t ring_cap)
{
	struct model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->ring_cap = ring_cap ? ring_cap : 1;
	m->ring = calloc(m->ring_cap, sizeof(*m->ring));
	if (!m->ring) {
		free(m);
		return NULL;
	}
	return m;
}

static void event_clear(struct m_event *e)
{
	free(e->text);
	free(e->lib);
	free(e->stack);
	memset(e, 0, sizeof(*e));
}

static void lib_clear(struct m_lib *l)
{
	free(l->path);
	free(l->soname);
	for (size_t i = 0; i < l->n_needed_by; i++)
		free(l->needed_by[i]);
	free(l->needed_by);
	free(l->roles);
}

static void threads_clear(struct m_proc *p)
{
	for (size_t i = 0; i < p->n_threads; i++) {
		free(p->threads[i].waits);
		free(p->threads[i].stack);
	}
	free(p->threads);
	for (size_t i = 0; i < p->n_edges; i++)
		free(p->edges[i].what);
	free(p->edges);
	for (size_t i = 0; i < p->n_verdicts; i++)
		free(p->verdicts[i]);
	free(p->verdicts);
	p->threads = NULL;
	p->edges = NULL;
	p->verdicts = NULL;
	p->n_threads = p->n_edges = p->n_verdicts = 0;
}

static void finding_clear(struct m_finding *f)
{
	free(f->id);
	free(f->severity);
	free(f->title);
	for (size_t i = 0; i < f->n_evidence; i++)
		free(f->evidence[i]);
	free(f->evidence);
	free(f->why);
	free(f->remedy);
	free(f->stack);
}

void model__reset(struct model *m)
{
	for (size_t i = 0; i < m->n_procs; i++) {
		struct m_proc *p = &m->procs[i];

		for (size_t k = 0; k < p->n_libs; k++)
			lib_clear(&p->libs[k]);
		free(p->libs);
		threads_clear(p);
	}
	free(m->procs);
	m->procs = NULL;
	m->n_procs = m->cap_procs = 0;
	for (size_t i = 0; i < m->ring_cap; i++)
		event_clear(&m->ring[i]);
	m->ring_n = 0;
	m->next_seq = 0;
	for (size_t i = 0; i < m->n_findings; i++)
		finding_clear(&m->findings[i]);
	free(m->findings);
	m->findings = NULL;
	m->n_findings = m->cap_findings = 0;
	m->t0 = m->t_last = 0;
	m->has_summary = false;
	m->summary_events = m->summary_lost = 0;
	m->bad_records = 0;
	m->generation++;
}

void model__free(struct model *m)
{
	if (!m)
		return;
	model__reset(m);
	free(m->ring);
	free(m);
}

struct m_proc *model__proc(struct model *m, pid_t pid)
{
	for (size_t i = 0; i < m->n_procs; i++)
		if (m->procs[i].pid == pid)
			return &m->procs[i];
	return NULL;
}

struct m_proc *model__proc_get(struct model *m, pid_t pid)
{
	struct m_proc *p = model__proc(m, pid);

	if (p)
		return p;
	if (ARRAY_RESERVE(m->procs, m->cap_procs, m->n_procs + 1))
		return NULL;
	p = &m->procs[m->n_procs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	m->generation++;
	return p;
}

/* Runtimes that must be alone in a process: two holders of one of these kinds collide. */
static bool exclusive_kind(const char *kind)
{
	return !strcmp(kind, "openmp") || !strcmp(kind, "blas") || !strcmp(kind, "cxx-runtime");
}

static void mark_collisions(struct m_proc *p)
{
	for (size_t i = 0; i < p->n_libs; i++)
		p->libs[i].collision = false;
	for (size_t i = 0; i < p->n_libs; i++)
		for (size_t r = 0; r < p->libs[i].n_roles; r++) {
			const char *kind = p->libs[i].roles[r].kind;

			/* A front and what it forwards to are one runtime (user/runtimes.h). */
			if (!exclusive_kind(kind) || p->libs[i].roles[r].front)
				continue;
			for (size_t j = i + 1; j < p->n_libs; j++)
				for (size_t s = 0; s < p->libs[j].n_roles; s++)
					if (!strcmp(p->libs[j].roles[s].kind, kind) &&
					    !p->libs[j].roles[s].front) {
						p->libs[i].collision = true;
						p->libs[j].collision = true;
					}
		}
}

/* Add or update (same path and namespace) an object of @pid's graph, then re-mark collisions. */
static struct m_lib *lib_upsert(struct model *m, pid_t pid, const char *path, const char *soname,
				unsigned int ns, const char *origin, const char *const *needed_by,
				size_t n_needed_by, const struct m_role *roles, size_t n_roles)
{
	struct m_proc *p = model__proc_get(m, pid);
	struct m_lib *l = NULL;

	if (!p || !path)
		return NULL;
	for (size_t i = 0; i < p->n_libs && !l; i++)
		if (p->libs[i].ns == ns && !strcmp(p->libs[i].path, path))
			l = &p->libs[i];
	if (!l) {
		if (ARRAY_RESERVE(p->libs, p->cap_libs, p->n_libs + 1))
			return NULL;
		l = &p->libs[p->n_libs++];
	} else {
		lib_clear(l);
	}
	memset(l, 0, sizeof(*l));
	l->path = strdup(path);
	l->soname = dup_or_null(soname);
	l->ns = ns;
	snprintf(l->origin, sizeof(l->origin), "%s", origin ? origin : "");
	l->needed_by = n_needed_by ? calloc(n_needed_by, sizeof(char *)) : NULL;
	for (size_t i = 0; l->needed_by && i < n_needed_by; i++)
		l->needed_by[l->n_needed_by++] = strdup(needed_by[i]);
	l->roles = n_roles ? calloc(n_roles, sizeof(*l->roles)) : NULL;
	if (l->roles) {
		memcpy(l->roles, roles, n_roles * sizeof(*roles));
		l->n_roles = n_roles;
	}
	mark_collisions(p);
	m->generation++;
	return l;
}

void model__set_threads(struct model *m, struct m_proc *p, struct m_thread *threads, size_t n,
			struct m_edge *edges, size_t n_edges, char **verdicts, size_t n_verdicts)
{
	threads_clear(p);
	p->threads = threads;
	p->n_threads = n;
	p->edges = edges;
	p->n_edges = n_edges;
	p->verdicts = verdicts;
	p->n_verdicts = n_verdicts;
	p->threads_known = true;
	m->generation++;
}

int model__add_finding(struct model *m, pid_t pid, uint64_t t, const char *id, const char *severity,
		       const char *title, const char *const *evidence, size_t n_evidence,
		       const char *why, const char *remedy, const char *stack)
{
	struct m_finding *f;

	if (ARRAY_RESERVE(m->findings, m->cap_findings, m->n_findings + 1))
		return -ENOMEM;
	f = &m->findings[m->n_findings++];
	memset(f, 0, sizeof(*f));
	f->pid = pid;
	f->t = t;
	f->id = strdup(id ? id : "?");
	f->severity = strdup(severity ? severity : "error");
	f->title = strdup(title ? title : "");
	f->evidence = n_evidence ? calloc(n_evidence, sizeof(char *)) : NULL;
	for (size_t i = 0; f->evidence && i < n_evidence; i++)
		f->evidence[f->n_evidence++] = strdup(evidence[i]);
	f->why = dup_or_null(why);
	f->remedy = dup_or_null(remedy);
	f->stack = dup_or_null(stack);
	m->generation++;
	return 0;
}

void model__drop_snapshot_findings(struct model *m, pid_t pid)
{
	size_t k = 0;

	for (size_t i = 0; i < m->n_findings; i++) {
		if (m->findings[i].pid == pid && !m->findings[i].live)
			finding_clear(&m->findings[i]);
		else
			m->findings[k++] = m->findings[i];
	}
	m->n_findings = k;
	m->generation++;
}

int model__add_event(struct model *m, enum ev_kind kind, uint64_t t, pid_t pid, pid_t tid,
		     const char *comm, const char *text, const char *lib, const char *stack)
{
	struct m_event *e = &m->ring[m->next_seq % m->ring_cap];
	struct m_proc *p = model__proc_get(m, pid);

	event_clear(e);
	e->seq = m->next_seq++;
	e->t = t;
	e->pid = pid;
	e->tid = tid;
	e->kind = kind;
	snprintf(e->comm, sizeof(e->comm), "%s", comm ? comm : "");
	e->text = strdup(text ? text : "");
	e->lib = dup_or_null(lib && *lib ? lib : NULL);
	e->stack = dup_or_null(stack);
	if (m->ring_n < m->ring_cap)
		m->ring_n++;
	if (p) {
		p->n_events++;
		if (comm && *comm && !p->comm[0])
			snprintf(p->comm, sizeof(p->comm), "%s", comm);
	}
	if (t > m->t_last)
		m->t_last = t;
	m->generation++;
	return 0;
}

uint64_t model__first_seq(const struct model *m)
{
	return m->next_seq - m->ring_n;
}

const struct m_event *model__event(const struct model *m, uint64_t seq)
{
	if (seq < model__first_seq(m) || seq >= m->next_seq)
		return NULL;
	return &m->ring[seq % m->ring_cap];
}

bool event_filter__active(const struct event_filter *f)
{
	return f->kinds || f->pid || f->lib[0];
}

bool event_filter__match(const struct event_filter *f, const struct m_event *e)
{
	if (f->kinds && !(f->kinds & (1u << e->kind)))
		return false;
	if (f->pid && e->pid != f->pid)
		return false;
	if (f->lib[0] && (!e->lib || !strstr(e->lib, f->lib)))
		return false;
	return true;
}

static const char *str_of(const json_t *rec, const char *key)
{
	return json_string_value(json_object_get(rec, key));
}

static long long int_of(const json_t *rec, const char *key)
{
	return json_integer_value(json_object_get(rec, key));
}

/* Frames, one per line, from a JSON array of strings; NULL when there is none. */
static char *join_stack(const json_t *arr)
{
	size_t len = 0, i;
	json_t *v;
	char *s, *p;

	if (!json_is_array(arr) || !json_array_size(arr))
		return NULL;
	json_array_foreach (arr, i, v)
		len += strlen(json_string_value(v) ? json_string_value(v) : "?") + 1;
	s = p = malloc(len + 1);
	if (!s)
		return NULL;
	json_array_foreach (arr, i, v) {
		const char *f = json_string_value(v) ? json_string_value(v) : "?";

		p += sprintf(p, "%s%s", i ? "\n" : "", f);
	}
	return s;
}

static int apply_loaded(struct model *m, const json_t *rec)
{
	const json_t *by = json_object_get(rec, "needed_by"),
		     *roles = json_object_get(rec, "roles");
	size_t n_by = json_array_size(by), n_roles = json_array_size(roles), i;
	const char **names = n_by ? calloc(n_by, sizeof(char *)) : NULL;
	struct m_role *r = n_roles ? calloc(n_roles, sizeof(*r)) : NULL;
	const char *path = str_of(rec, "path");
	char text[4200];
	json_t *v;
	int err = 0;

	if (!path || (n_by && !names) || (n_roles && !r)) {
		err = -EINVAL;
		goto out;
	}
	json_array_foreach (by, i, v)
		names[i] = json_string_value(v) ? json_string_value(v) : "?";
	json_array_foreach (roles, i, v) {
		const char *name = str_of(v, "name"), *ver = str_of(v, "version");
		const char *front = str_of(v, "front_of"), *label = str_of(v, "label");

		snprintf(r[i].kind, sizeof(r[i].kind), "%s",
			 str_of(v, "kind") ? str_of(v, "kind") : "?");
		snprintf(r[i].impl, sizeof(r[i].impl), "%s",
			 str_of(v, "impl") ? str_of(v, "impl") : "?");
		r[i].front = front != NULL;
		if (front)
			snprintf(r[i].label, sizeof(r[i].label), "front of %s", front);
		else if (label) /* its versions named (a trace of an older dlscope has none) */
			snprintf(r[i].label, sizeof(r[i].label), "%s", label);
		else
			snprintf(r[i].label, sizeof(r[i].label), "%s%s%s", name ? name : r[i].impl,
				 ver ? " " : "", ver ? ver : "");
	}
	/* A process watched from -p has no exec record: its executable names it, as comm would. */
	if (str_of(rec, "origin") && !strcmp(str_of(rec, "origin"), "executable")) {
		struct m_proc *p = model__proc_get(m, (pid_t)int_of(rec, "pid"));
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

		if (p && !p->comm[0])
			snprintf(p->comm, sizeof(p->comm), "%.15s", base);
		/* Where it runs (the program's record says, where it is not where we run). */
		if (p && int_of(rec, "ns_pid") > 0)
			p->ns_pid = (pid_t)int_of(rec, "ns_pid");
		if (p && str_of(rec, "container"))
			snprintf(p->container, sizeof(p->container), "%s",
				 str_of(rec, "container"));
	}
	lib_upsert(m, (pid_t)int_of(rec, "pid"), path, str_of(rec, "soname"),
		   (unsigned int)int_of(rec, "namespace"), str_of(rec, "origin"), names, n_by, r,
		   n_roles);
	snprintf(text, sizeof(text), "+ %s (%s)%s%s", path,
		 str_of(rec, "origin") ? str_of(rec, "origin") : "?", n_roles ? " " : "",
		 n_roles ? r[0].label : "");
	/* A snapshot's record has no "t": the object is there, no event says when it came. */
	if (json_object_get(rec, "t"))
		model__add_event(m, EV_LOADED, (uint64_t)int_of(rec, "t"),
				 (pid_t)int_of(rec, "pid"), 0, NULL, text, path, NULL);
out:
	free(names);
	free(r);
	return err;
}

/*
 * A live finding. dlscope-trace/2 carries check --json's fields (severity, title, evidence, why,
 * remedy); a /1 record only "text": its severity is then its detector's.
 */
static int apply_finding(struct model *m, const json_t *rec)
{
	const json_t *ev = json_object_get(rec, "evidence");
	const char *id = str_of(rec, "id"), *title = str_of(rec, "title");
	const char *sev = str_of(rec, "severity");
	pid_t pid = (pid_t)int_of(rec, "pid");
	uint64_t t = (uint64_t)int_of(rec, "t");
	size_t n_ev = json_array_size(ev), i;
	const char **lines = n_ev ? calloc(n_ev, sizeof(*lines)) : NULL;
	const struct detector *d = detector__find(id);
	char line[4200], *stack;
	json_t *v;

	if (!id || (!title && !str_of(rec, "text")) || (n_ev && !lines) ||
	    (sev && severity__parse(sev) < 0)) {
		free(lines);
		m->bad_records++;
		return -EINVAL;
	}
	if (!title)
		title = str_of(rec, "text");
	if (!sev)
		sev = d ? severity__name(d->severity) : "error";
	json_array_foreach (ev, i, v)
		lines[i] = json_string_value(v) ? json_string_value(v) : "?";
	stack = join_stack(json_object_get(rec, "stack"));
	if (!model__add_finding(m, pid, t, id, sev, title, lines, n_ev, str_of(rec, "why"),
				str_of(rec, "remedy"), stack))
		m->findings[m->n_findings - 1].live = true;
	snprintf(line, sizeof(line), "FINDING %s %s: %s", sev, id, title);
	model__add_event(m, EV_FINDING, t, pid, (pid_t)int_of(rec, "tid"), NULL, line, NULL, stack);
	free(stack);
	free(lines);
	return 0;
}

/* Frames, one per line; NULL when there is none. */
static char *stack_lines(const struct event_stack *st)
{
	size_t len = 1;
	char *s, *p;

	if (!st->n)
		return NULL;
	for (size_t i = 0; i < st->n; i++)
		len += strlen(st->frames[i]) + 1;
	s = p = malloc(len);
	for (size_t i = 0; s && i < st->n; i++)
		p += sprintf(p, "%s%s", i ? "\n" : "", st->frames[i]);
	return s;
}

static void apply_process_event(struct model *m, const struct event *ev)
{
	struct m_proc *p = model__proc_get(m, ev->pid);

	if (!p)
		return;
	if (ev->kind == EVENT_EXEC && ev->comm[0])
		snprintf(p->comm, sizeof(p->comm), "%s", ev->comm);
	if (ev->kind == EVENT_EXIT) {
		p->exited = true;
		p->exit_code = (int)ev->u.exit.wait_status;
	}
	if (ev->kind == EVENT_FORK && !ev->u.fork.thread) {
		struct m_proc *c = model__proc_get(m, ev->u.fork.child);

		/* model__proc_get may have moved the array: look the parent up again. */
		p = model__proc(m, ev->pid);
		if (c && p && c != p) {
			c->ppid = ev->pid;
			if (!c->comm[0])
				snprintf(c->comm, sizeof(c->comm), "%s", p->comm);
		}
	}
}

/* The event kinds of the trace and of the model's ring are one list, in one order. */
static enum ev_kind ev_kind_of(enum event_kind k)
{
	return (enum ev_kind)(k - EVENT_DLOPEN + EV_DLOPEN);
}

_Static_assert(EV_FUTEX_WAIT - EV_DLOPEN == EVENT_FUTEX_WAIT - EVENT_DLOPEN,
	       "ui/model.h's event kinds follow user/event.h's");

/* An activity record as an event line, with the runtime as its object (the library filter). */
static int apply_activity(struct model *m, const json_t *rec)
{
	const char *runtime = str_of(rec, "runtime"), *base, *kind = str_of(rec, "kind");
	const json_t *threads = json_object_get(rec, "threads"), *n;
	const char *tid;
	char text[1024];
	size_t len;

	if (!runtime || !json_is_integer(json_object_get(rec, "n"))) {
		m->bad_records++;
		return -EINVAL;
	}
	base = path_base(runtime);
	len = (size_t)snprintf(text, sizeof(text), "activity %s: %lld %s (%lld so far), threads",
			       base, (long long)int_of(rec, "n"),
			       kind && !strcmp(kind, "blas") ? "BLAS dispatches" :
							       "parallel regions",
			       (long long)int_of(rec, "total"));
	json_object_foreach ((json_t *)threads, tid, n)
		if (len < sizeof(text))
			len += (size_t)snprintf(text + len, sizeof(text) - len, " %s:%lld", tid,
						(long long)json_integer_value(n));
	model__add_event(m, EV_ACTIVITY, (uint64_t)int_of(rec, "t"), (pid_t)int_of(rec, "pid"), 0,
			 NULL, text, runtime, NULL);
	return 0;
}

/* A record of a rank's process says its rank: the process has it from then on. */
static void note_rank(struct model *m, const json_t *rec)
{
	const json_t *rank = json_object_get(rec, "rank");
	struct m_proc *p;

	if (!json_is_integer(rank) || !(p = model__proc_get(m, (pid_t)int_of(rec, "pid"))))
		return;
	if (!p->rank[0]) {
		snprintf(p->rank, sizeof(p->rank), "%lld", (long long)json_integer_value(rank));
		m->generation++;
	}
}

int model__apply(struct model *m, const json_t *rec)
{
	const char *type = str_of(rec, "type");
	char text[4200], why[256], *stack;
	struct event ev;

	if (!json_is_object(rec) || !type)
		goto bad;
	note_rank(m, rec);
	if (!strcmp(type, "header")) {
		m->t0 = (uint64_t)int_of(rec, "t0");
		m->generation++;
		return 0;
	}
	if (!strcmp(type, "summary")) {
		m->has_summary = true;
		m->summary_events = (uint64_t)int_of(rec, "events");
		m->summary_lost = (uint64_t)int_of(rec, "lost");
		m->generation++;
		return 0;
	}
	if (!strcmp(type, "loaded"))
		return apply_loaded(m, rec) ? (m->bad_records++, -EINVAL) : 0;
	/* An object gone, with the dlclose (or exec, exit) that took it: "- PATH". */
	if (!strcmp(type, "unloaded") && str_of(rec, "path")) {
		snprintf(text, sizeof(text), "- %s", str_of(rec, "path"));
		return model__add_event(m, EV_LOADED, (uint64_t)int_of(rec, "t"),
					(pid_t)int_of(rec, "pid"), (pid_t)int_of(rec, "tid"), NULL,
					text, str_of(rec, "path"), NULL);
	}
	/* --hot's counts per second, a line each: "libgomp.so.1: 248 parallel regions". */
	if (!strcmp(type, "activity"))
		return apply_activity(m, rec);
	if (!strcmp(type, "finding"))
		return apply_finding(m, rec);
	/* An event: decoded by the one decoder, its line by the one formatter. */
	if (event__from_json(rec, &ev, why, sizeof(why)))
		goto bad;
	apply_process_event(m, &ev);
	event__text(&ev, EVENT_TEXT_RESOLVED, text, sizeof(text));
	stack = stack_lines(&ev.stack);
	/* A dlopen's Python stack above its native one. */
	if (ev.has_python) {
		char *py = py_import__lines(&ev.py, false, ""), *both = NULL;

		if (py && asprintf(&both, "python:\n%s%s%s", py, stack ? "\n\nnative:\n" : "",
				   stack ? stack : "") >= 0) {
			free(stack);
			stack = both;
		}
		free(py);
	}
	model__add_event(m, ev_kind_of(ev.kind), ev.t, ev.pid, ev.tid, ev.comm, text,
			 event__object(&ev), stack);
	free(stack);
	event__clear(&ev);
	return 0;
bad:
	m->bad_records++;
	return -EINVAL;
}

struct tree_walk {
	const struct m_proc *p;
	bool (*collapsed)(void *ctx, const char *path);
	void *ctx;
	struct lib_row *rows;
	size_t n;
	bool *placed;
};

/* Is @child shown under @parent: its first needed_by names the parent. */
static bool shown_under(const struct m_lib *child, const struct m_lib *parent)
{
	return child->n_needed_by && !strcmp(child->needed_by[0], parent->path) && child != parent;
}

static void walk(struct tree_walk *w, size_t lib, unsigned int depth)
{
	const struct m_proc *p = w->p;
	struct lib_row *r;

	if (w->placed[lib])
		return;
	w->placed[lib] = true;
	r = &w->rows[w->n++];
	*r = (struct lib_row){ .lib = lib, .depth = depth };
	r->other_parents = p->libs[lib].n_needed_by ? p->libs[lib].n_needed_by - 1 : 0;
	for (size_t c = 0; c < p->n_libs; c++)
		if (!w->placed[c] && shown_under(&p->libs[c], &p->libs[lib]))
			r->has_children = true;
	r->collapsed = r->has_children && w->collapsed && w->collapsed(w->ctx, p->libs[lib].path);
	if (r->collapsed) {
		/* Folded: its subtree is still "placed", so it does not surface as roots. */
		for (size_t c = 0; c < p->n_libs; c++)
			if (!w->placed[c] && shown_under(&p->libs[c], &p->libs[lib])) {
				size_t before = w->n;

				walk(w, c, depth + 1);
				w->n = before;
			}
		return;
	}
	for (size_t c = 0; c < p->n_libs; c++)
		if (!w->placed[c] && shown_under(&p->libs[c], &p->libs[lib]))
			walk(w, c, depth + 1);
}

static bool parent_known(const struct m_proc *p, const struct m_lib *l)
{
	for (size_t i = 0; l->n_needed_by && i < p->n_libs; i++)
		if (shown_under(l, &p->libs[i]))
			return true;
	return false;
}

ssize_t model__lib_tree(const struct m_proc *p, bool (*collapsed)(void *ctx, const char *path),
			void *ctx, struct lib_row **out)
{
	struct tree_walk w = { .p = p, .collapsed = collapsed, .ctx = ctx };

	*out = NULL;
	if (!p->n_libs)
		return 0;
	w.rows = calloc(p->n_libs, sizeof(*w.rows));
	w.placed = calloc(p->n_libs, sizeof(bool));
	if (!w.rows || !w.placed) {
		free(w.rows);
		free(w.placed);
		return -ENOMEM;
	}
	/* Roots first in load order, then whatever a cycle or a missing parent left out. */
	for (size_t i = 0; i < p->n_libs; i++)
		if (!parent_known(p, &p->libs[i]))
			walk(&w, i, 0);
	for (size_t i = 0; i < p->n_libs; i++)
		walk(&w, i, 0);
	free(w.placed);
	*out = w.rows;
	return (ssize_t)w.n;
}

static void proc_walk(const struct model *m, size_t i, unsigned int depth, bool *placed,
		      size_t *order, unsigned int *dep, size_t *n)
{
	if (placed[i])
		return;
	placed[i] = true;
	order[*n] = i;
	dep[(*n)++] = depth;
	for (size_t c = 0; c < m->n_procs; c++)
		if (m->procs[c].ppid == m->procs[i].pid)
			proc_walk(m, c, depth + 1, placed, order, dep, n);
}

ssize_t model__proc_tree(const struct model *m, size_t **order, unsigned int **depth)
{
	bool *placed = calloc(m->n_procs + 1, sizeof(bool));
	size_t n = 0;

	*order = calloc(m->n_procs + 1, sizeof(**order));
	*depth = calloc(m->n_procs + 1, sizeof(**depth));
	if (!placed || !*order || !*depth) {
		free(placed);
		free(*order);
		free(*depth);
		*order = NULL;
		*depth = NULL;
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n_procs; i++) {
		bool has_parent = false;

		for (size_t j = 0; j < m->n_procs && !has_parent; j++)
			has_parent = j != i && m->procs[i].ppid &&
				     m->procs[j].pid == m->procs[i].ppid;
		if (!has_parent)
			proc_walk(m, i, 0, placed, *order, *depth, &n);
	}
	for (size_t i = 0; i < m->n_procs; i++)
		proc_walk(m, i, 0, placed, *order, *depth, &n);
	free(placed);
	return (ssize_t)n;
}
