// SPDX-License-Identifier: GPL-2.0
/*
 * check TRACE.jsonl: the findings the live detectors recorded in a trace (record, or merge's
 * trace of several nodes), by process, read in one pass that keeps only the findings, the
 * objects with a runtime role and a table of the processes seen (a process of a merged trace is
 * its host and PID). Each process's runtime inventory is made from its `loaded` records by the
 * rule of a live check (runtimes__from_loaded); report TRACE shows this same document.
 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "idxmap.h"
#include "commands.h"
#include "finding.h"
#include "output.h"
#include "roles.h"
#include "runtimes.h"
#include "tracefile.h"

struct tproc {
	size_t host; /* index in hosts; 0 is "" (a trace of one node) */
	pid_t pid;
	char comm[16];
	char exe[16];	  /* its executable's file name: the name when no record has a comm */
	json_t *rank;	  /* the record's "rank", when one has it */
	json_t *findings; /* its finding records */
	json_t *loaded;	  /* its objects with a runtime role since its last exec: loaded records */
};

struct tstate {
	char **hosts;
	size_t n_hosts, cap_hosts;
	struct tproc *p;
	size_t n, cap;
	struct idxmap index; /* (host, pid) -> its index in p */
};

static long host_index(struct tstate *s, const char *h)
{
	for (size_t i = 0; i < s->n_hosts; i++)
		if (!strcmp(s->hosts[i], h))
			return (long)i;
	if (ARRAY_RESERVE(s->hosts, s->cap_hosts, s->n_hosts + 1))
		return -1;
	if (!(s->hosts[s->n_hosts] = strdup(h)))
		return -1;
	return (long)s->n_hosts++;
}

struct proc_key {
	const struct tproc *p;
	size_t host;
	pid_t pid;
};

static bool proc_is(size_t idx, const void *ctx)
{
	const struct proc_key *k = ctx;

	return k->p[idx].host == k->host && k->p[idx].pid == k->pid;
}

static struct tproc *proc_of(struct tstate *s, size_t host, pid_t pid)
{
	uint64_t h = idxmap__hash_u64((uint64_t)host << 32 | (uint32_t)pid);
	struct proc_key k = { NULL, host, pid };
	size_t at;
	int added;

	if (ARRAY_RESERVE(s->p, s->cap, s->n + 1))
		return NULL;
	k.p = s->p;
	added = idxmap__insert(&s->index, h, s->n, proc_is, &k, &at);
	if (added < 0)
		return NULL;
	if (added)
		s->p[s->n++] = (struct tproc){
			.host = host, .pid = pid, .findings = json_array(), .loaded = json_array()
		};
	return &s->p[at];
}

static bool has_runtime_role(const json_t *rec)
{
	const json_t *r;
	size_t i;

	json_array_foreach (json_object_get(rec, "roles"), i, r)
		if (json_is_true(json_object_get(r, "runtime")))
			return true;
	return false;
}

/* A loaded record: its executable's name, and the object when it has a runtime role (the last
 * record of a path in a namespace wins: an object loaded again after a dlclose is one). */
/* An object the process no longer has: no runtime of its inventory any more. */
static void note_unloaded(struct tproc *p, const json_t *rec)
{
	const char *path = json_string_value(json_object_get(rec, "path"));
	const json_t *o;
	size_t i;

	json_array_foreach (p->loaded, i, o)
		if (path && !strcmp(json_string_value(json_object_get(o, "path")), path)) {
			json_array_remove(p->loaded, i);
			return;
		}
}

static int note_loaded(struct tproc *p, const json_t *rec)
{
	const char *path = json_string_value(json_object_get(rec, "path"));
	const char *origin = json_string_value(json_object_get(rec, "origin"));
	const json_t *ns = json_object_get(rec, "namespace"), *o;
	size_t i;

	if (!path)
		return 0;
	if (origin && !strcmp(origin, "executable"))
		snprintf(p->exe, sizeof(p->exe), "%s",
			 strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
	if (!has_runtime_role(rec))
		return 0;
	json_array_foreach (p->loaded, i, o)
		if (!strcmp(json_string_value(json_object_get(o, "path")), path) &&
		    json_equal(json_object_get(o, "namespace") ?: json_null(), ns ?: json_null())) {
			json_array_remove(p->loaded, i);
			break;
		}
	return json_array_append_new(p->loaded,
				     json_pack("{s:s, s:O*, s:O*, s:O*}", "path", path, "namespace",
					       ns, "roles", json_object_get(rec, "roles"),
					       "package", json_object_get(rec, "package")));
}

/* One recorded finding as check prints it, with the stack of the event that raised it. */
static void print_finding(const json_t *rec)
{
	struct finding f = { .id = json_string_value(json_object_get(rec, "id")) ?: "?" };
	const json_t *v;
	size_t i;
	int sev = severity__parse(json_string_value(json_object_get(rec, "severity")) ?: "");

	f.sev = sev < 0 ? SEV_INFO : (enum severity)sev;
	f.title = (char *)(json_string_value(json_object_get(rec, "title"))	   ?:
				   json_string_value(json_object_get(rec, "text")) ?:
										     "");
	f.why = (char *)json_string_value(json_object_get(rec, "why"));
	f.remedy = (char *)json_string_value(json_object_get(rec, "remedy"));
	printf("%s %s: %s\n", severity__name(f.sev), f.id, f.title);
	json_array_foreach (json_object_get(rec, "evidence"), i, v)
		if (json_is_string(v))
			printf("  - %s\n", json_string_value(v));
	finding__print_body(&f, "", stdout);
	if (json_array_size(json_object_get(rec, "stack"))) {
		printf("  stack:\n");
		json_array_foreach (json_object_get(rec, "stack"), i, v)
			printf("    #%-2zu %s\n", i, json_string_value(v) ?: "?");
	}
}

static int max_severity(const json_t *findings)
{
	const json_t *f;
	size_t i;
	int max = -1, s;

	json_array_foreach (findings, i, f) {
		s = severity__parse(json_string_value(json_object_get(f, "severity")) ?: "");
		max = s > max ? s : max;
	}
	return max;
}

/* A process's runtimes as check prints them: kinds with more than one first. */
static void print_runtimes(const json_t *rts)
{
	const json_t *rt, *f;
	size_t i, k;

	if (!json_array_size(rts))
		return;
	printf("runtimes:\n");
	for (int pass = 0; pass < 2; pass++)
		json_array_foreach (rts, i, rt) {
			const char *kind = json_string_value(json_object_get(rt, "kind")) ?: "?";
			const json_t *pkg = json_object_get(rt, "package");
			size_t same = 0;
			int kid = role_kind__parse(kind);

			json_array_foreach (rts, k, f)
				same += !strcmp(json_string_value(json_object_get(f, "kind")) ?: "",
						kind);
			if ((pass == 0) != (same > 1))
				continue;
			printf("  %-14s %s%s%s",
			       kid < 0 ? kind : role_kind__label((enum role_kind)kid),
			       json_string_value(json_object_get(rt, "label"))	      ?:
				       json_string_value(json_object_get(rt, "name")) ?:
											"?",
			       json_is_true(json_object_get(rt, "static")) ?
				       ", linked statically into " :
				       ": ",
			       json_string_value(json_object_get(rt, "path")) ?: "?");
			json_array_foreach (json_object_get(rt, "fronts"), k, f) {
				const char *fp = json_string_value(f) ?: "?";

				printf("%s%s", k ? ", " : "; front: ",
				       strrchr(fp, '/') ? strrchr(fp, '/') + 1 : fp);
			}
			if (json_is_object(pkg))
				printf("; package %s %s (%s)",
				       json_string_value(json_object_get(pkg, "name")) ?: "?",
				       json_string_value(json_object_get(pkg, "version")) ?: "",
				       json_string_value(json_object_get(pkg, "manager")) ?: "?");
			printf("%s\n", pass == 0 ? "  [more than one]" : "");
		}
}

/* A record of the trace into its process's name, rank, objects and findings: 0, or -1 (OOM). */
static int take_record(struct tstate *s, const json_t *rec,
		       bool (*selected)(const void *ctx, const char *id), const void *ctx)
{
	const char *type = json_string_value(json_object_get(rec, "type")),
		   *host = json_string_value(json_object_get(rec, "host")),
		   *comm = json_string_value(json_object_get(rec, "comm"));
	const json_t *pid = json_object_get(rec, "pid"), *rank = json_object_get(rec, "rank");
	long h;
	struct tproc *p;
	int err = 0;

	/* Every host is indexed as first seen, a record of no process's too. */
	h = host ? host_index(s, host) : 0;
	if (!type || !json_is_integer(pid) || !strcmp(type, "activity"))
		return 0;
	p = h < 0 ? NULL : proc_of(s, (size_t)h, (pid_t)json_integer_value(pid));
	if (!p)
		return -1;
	/* Named by its main thread, else the first record that names it. */
	if (comm && (!p->comm[0] || json_integer_value(json_object_get(rec, "tid")) == p->pid))
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	if (json_is_integer(rank) && !p->rank)
		p->rank = json_incref((json_t *)rank);
	/* A new program: the objects of the old one are gone. */
	if (!strcmp(type, "exec"))
		err = json_array_clear(p->loaded);
	else if (!strcmp(type, "loaded"))
		err = note_loaded(p, rec);
	else if (!strcmp(type, "unloaded"))
		note_unloaded(p, rec);
	else if (!strcmp(type, "finding") &&
		 (!selected || selected(ctx, json_string_value(json_object_get(rec, "id")) ?: "")))
		err = json_array_append(p->findings, (json_t *)rec);
	return err ? -1 : 0;
}

/* Process @p's entry (name, host, rank, runtimes, findings) appended to @procs: 0, or -1. */
static int add_process(json_t *procs, const struct tstate *s, const struct tproc *p)
{
	json_t *rts = runtimes__from_loaded(p->loaded), *one;

	one = json_pack("{s:I, s:s, s:s*, s:O*, s:o*, s:[]}", "pid", (json_int_t)p->pid, "comm",
			p->comm[0] ? p->comm :
			p->exe[0]  ? p->exe :
				     "?",
			"host", p->host ? s->hosts[p->host] : NULL, "rank", p->rank, "runtimes",
			rts, "findings");
	if (!one || !rts || json_array_append_new(procs, one))
		return -1;
	for (size_t k = 0; k < json_array_size(p->findings); k++) {
		json_t *c = json_copy(json_array_get(p->findings, k));

		json_object_del(c, "type");
		if (json_array_append_new(json_object_get(one, "findings"), c))
			return -1;
	}
	return 0;
}

static void tstate__free(struct tstate *s)
{
	for (size_t i = 0; i < s->n; i++) {
		json_decref(s->p[i].rank);
		json_decref(s->p[i].findings);
		json_decref(s->p[i].loaded);
	}
	for (size_t i = 0; i < s->n_hosts; i++)
		free(s->hosts[i]);
	free(s->hosts);
	free(s->p);
	idxmap__free(&s->index);
}

json_t *check__trace_doc(const char *path, bool all,
			 bool (*selected)(const void *ctx, const char *id), const void *ctx,
			 char *why, size_t whylen)
{
	struct tstate s = { 0 };
	struct trace_reader r;
	json_t *doc = NULL, *procs, *rec;
	char cut[256] = "";
	bool complete;

	if (trace_reader__open(&r, path, why, whylen))
		return NULL;
	if (host_index(&s, "") < 0)
		goto oom;
	while (trace_reader__next(&r, &rec)) {
		int err = take_record(&s, rec, selected, ctx);

		json_decref(rec);
		if (err)
			goto oom;
	}
	/* Whether the trace is whole: a reader of findings alone must learn what is missing. */
	complete = !trace_end__cut(&r.end, cut, sizeof(cut));
	doc = json_pack("{s:s, s:s, s:O*, s:I, s:b, s:s*, s:I, s:[]}", "dlscope", DLSCOPE_VERSION,
			"trace", path, "hosts", json_object_get(r.hdr, "hosts"), "processes_seen",
			(json_int_t)s.n, "complete", complete, "cut", complete ? NULL : cut, "lost",
			(json_int_t)r.end.lost, "processes");
	procs = json_object_get(doc, "processes");
	if (!procs)
		goto oom;
	for (size_t i = 0; i < s.n; i++)
		if ((all || json_array_size(s.p[i].findings)) && add_process(procs, &s, &s.p[i]))
			goto oom;
	goto out;
oom:
	snprintf(why, whylen, "out of memory reading %s", path);
	json_decref(doc);
	doc = NULL;
out:
	trace_reader__close(&r);
	tstate__free(&s);
	return doc;
}

int check__trace(const char *path, bool json, int fail_on,
		 bool (*selected)(const void *ctx, const char *id), const void *ctx)
{
	char why[512];
	json_t *doc = check__trace_doc(path, false, selected, ctx, why, sizeof(why)), *p, *rec;
	size_t i, k, n_findings = 0, n_hosts;
	int max = -1;

	if (!doc) {
		dls_err("check: %s", why);
		return DLS_EXIT_INSPECT;
	}
	json_array_foreach (json_object_get(doc, "processes"), i, p) {
		int m = max_severity(json_object_get(p, "findings"));

		n_findings += json_array_size(json_object_get(p, "findings"));
		max = m > max ? m : max;
	}
	if (json) {
		json_dumpf(doc, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		json_int_t seen = json_integer_value(json_object_get(doc, "processes_seen"));

		printf("trace %s: %lld process%s, %zu finding%s", path, (long long)seen,
		       seen == 1 ? "" : "es", n_findings, n_findings == 1 ? "" : "s");
		n_hosts = json_array_size(json_object_get(doc, "hosts"));
		if (n_hosts)
			printf(", from %zu host%s", n_hosts, n_hosts == 1 ? "" : "s");
		printf("\n");
		if (json_is_string(json_object_get(doc, "cut")))
			printf("%s\n", json_string_value(json_object_get(doc, "cut")));
		else if (json_integer_value(json_object_get(doc, "lost")))
			printf("the recorder lost %lld events (its summary says so): findings that "
			       "needed them may be missing\n",
			       (long long)json_integer_value(json_object_get(doc, "lost")));
	}
	/* With --json, on stderr too: a script that reads findings alone still sees it. */
	if (json && json_is_string(json_object_get(doc, "cut")))
		dls_warn("check: %s: %s", path, json_string_value(json_object_get(doc, "cut")));
	json_array_foreach (json_object_get(doc, "processes"), i, p) {
		const json_t *fds = json_object_get(p, "findings"),
			     *rank = json_object_get(p, "rank");
		size_t n = json_array_size(fds);

		if (json)
			break;
		printf("\n");
		if (json_is_string(json_object_get(p, "host")))
			printf("host %s: ", json_string_value(json_object_get(p, "host")));
		if (json_is_integer(rank))
			printf("rank %" JSON_INTEGER_FORMAT ": ", json_integer_value(rank));
		printf("process %lld (%s): %zu finding%s\n",
		       (long long)json_integer_value(json_object_get(p, "pid")),
		       json_string_value(json_object_get(p, "comm")) ?: "?", n, n == 1 ? "" : "s");
		print_runtimes(json_object_get(p, "runtimes"));
		printf("\n");
		json_array_foreach (fds, k, rec) {
			if (k)
				putchar('\n');
			print_finding(rec);
		}
	}
	json_decref(doc);
	return max >= fail_on ? DLS_EXIT_FINDINGS : DLS_EXIT_OK;
}
