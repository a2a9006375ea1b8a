// SPDX-License-Identifier: GPL-2.0
/*
 * check TRACE.jsonl: the findings the live detectors recorded in a trace (record, or merge's
 * trace of several nodes), by process, read in one pass that keeps only the findings and a table
 * of the processes seen (a process of a merged trace is its host and PID).
 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "finding.h"
#include "output.h"
#include "tracefile.h"

struct tproc {
	size_t host; /* index in hosts; 0 is "" (a trace of one node) */
	pid_t pid;
	char comm[16];
	json_t *rank;	  /* the record's "rank", when one has it */
	json_t *findings; /* its finding records */
};

struct tstate {
	char **hosts;
	size_t n_hosts;
	struct tproc *p;
	size_t n, cap;
	size_t *slots; /* open addressing: index + 1 into p, 0 free */
	size_t n_slots;
};

static long host_index(struct tstate *s, const char *h)
{
	char **nh;

	for (size_t i = 0; i < s->n_hosts; i++)
		if (!strcmp(s->hosts[i], h))
			return (long)i;
	nh = realloc(s->hosts, (s->n_hosts + 1) * sizeof(*nh));
	if (!nh)
		return -1;
	s->hosts = nh;
	if (!(nh[s->n_hosts] = strdup(h)))
		return -1;
	return (long)s->n_hosts++;
}

static size_t slot_of(const struct tstate *s, size_t host, pid_t pid)
{
	uint64_t k = ((uint64_t)host << 32 | (uint32_t)pid) * 0x9E3779B97F4A7C15ULL;

	return (size_t)(k >> 20) & (s->n_slots - 1);
}

static int grow(struct tstate *s)
{
	size_t n = s->n_slots ? s->n_slots * 2 : 1024, *ns = calloc(n, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	free(s->slots);
	s->slots = ns;
	s->n_slots = n;
	for (size_t i = 0; i < s->n; i++) {
		size_t j = slot_of(s, s->p[i].host, s->p[i].pid);

		while (s->slots[j])
			j = (j + 1) & (n - 1);
		s->slots[j] = i + 1;
	}
	return 0;
}

static struct tproc *proc_of(struct tstate *s, size_t host, pid_t pid)
{
	size_t j;

	if ((s->n + 1) * 2 > s->n_slots && grow(s))
		return NULL;
	for (j = slot_of(s, host, pid); s->slots[j]; j = (j + 1) & (s->n_slots - 1)) {
		struct tproc *p = &s->p[s->slots[j] - 1];

		if (p->host == host && p->pid == pid)
			return p;
	}
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		struct tproc *np = realloc(s->p, ncap * sizeof(*np));

		if (!np)
			return NULL;
		s->p = np;
		s->cap = ncap;
	}
	s->p[s->n] = (struct tproc){ .host = host, .pid = pid, .findings = json_array() };
	s->slots[j] = ++s->n;
	return &s->p[s->n - 1];
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

int check__trace(const char *path, bool json, int fail_on,
		 bool (*selected)(const void *ctx, const char *id), const void *ctx)
{
	struct tstate s = { 0 };
	struct trace_end end = { .records = 1 }; /* the header, read by tracefile__open */
	json_t *hdr = NULL, *doc = NULL, *procs = NULL;
	char *line = NULL, why[512], cut[256] = "";
	bool complete;
	size_t cap = 0, with = 0, n_findings = 0;
	ssize_t len;
	struct stat st;
	FILE *f;
	int max = -1, ret = DLS_EXIT_OK;

	if (tracefile__open(path, &f, &hdr, &st, why, sizeof(why))) {
		dls_err("check: %s", why);
		return DLS_EXIT_INSPECT;
	}
	if (host_index(&s, "") < 0)
		goto oom;
	while ((len = getline(&line, &cap, f)) > 0) {
		json_t *rec = json_loadb(line, (size_t)len, 0, NULL);
		const char *type = json_string_value(json_object_get(rec, "type")),
			   *host = json_string_value(json_object_get(rec, "host")),
			   *comm = json_string_value(json_object_get(rec, "comm"));
		const json_t *pid = json_object_get(rec, "pid"),
			     *rank = json_object_get(rec, "rank");
		long h = host ? host_index(&s, host) : 0;
		struct tproc *p;

		trace_end__see(&end, line, (size_t)len, rec);
		if (!type || !json_is_integer(pid) || !strcmp(type, "activity")) {
			json_decref(rec);
			continue;
		}
		p = h < 0 ? NULL : proc_of(&s, (size_t)h, (pid_t)json_integer_value(pid));
		if (!p) {
			json_decref(rec);
			goto oom;
		}
		/* Named by its main thread, else the first record that names it. */
		if (comm &&
		    (!p->comm[0] || json_integer_value(json_object_get(rec, "tid")) == p->pid))
			snprintf(p->comm, sizeof(p->comm), "%s", comm);
		if (json_is_integer(rank) && !p->rank)
			p->rank = json_incref((json_t *)rank);
		if (!strcmp(type, "finding") &&
		    (!selected ||
		     selected(ctx, json_string_value(json_object_get(rec, "id")) ?: "")))
			json_array_append(p->findings, rec);
		json_decref(rec);
	}
	complete = !trace_end__cut(&end, cut, sizeof(cut));
	for (size_t i = 0; i < s.n; i++) {
		size_t n = json_array_size(s.p[i].findings);
		int m = max_severity(s.p[i].findings);

		with += n > 0;
		n_findings += n;
		max = m > max ? m : max;
	}
	if (json) {
		doc = json_pack("{s:s, s:s, s:O*, s:I, s:b, s:s*, s:I, s:[]}", "dlscope",
				DLSCOPE_VERSION, "trace", path, "hosts",
				json_object_get(hdr, "hosts"), "processes_seen", (json_int_t)s.n,
				"complete", complete, "cut", complete ? NULL : cut, "lost",
				(json_int_t)end.lost, "processes");
		procs = json_object_get(doc, "processes");
	} else {
		printf("trace %s: %zu process%s, %zu finding%s", path, s.n, s.n == 1 ? "" : "es",
		       n_findings, n_findings == 1 ? "" : "s");
		if (s.n_hosts > 1)
			printf(", from %zu host%s", s.n_hosts - 1, s.n_hosts == 2 ? "" : "s");
		printf("\n");
		if (!complete)
			printf("%s\n", cut);
		else if (end.lost)
			printf("the recorder lost %llu events (its summary says so): findings that "
			       "needed them may be missing\n",
			       end.lost);
	}
	/* With --json, on stderr too: a script that reads findings alone still sees it. */
	if (!complete && json)
		dls_warn("check: %s: %s", path, cut);
	for (size_t i = 0; i < s.n; i++) {
		struct tproc *p = &s.p[i];
		const json_t *rec;
		size_t k, n = json_array_size(p->findings);

		if (!n)
			continue;
		if (procs) {
			json_t *one = json_pack("{s:I, s:s, s:s*, s:O*, s:[]}", "pid",
						(json_int_t)p->pid, "comm",
						p->comm[0] ? p->comm : "?", "host",
						p->host ? s.hosts[p->host] : NULL, "rank", p->rank,
						"findings");

			json_array_foreach (p->findings, k, rec) {
				json_t *c = json_copy((json_t *)rec);

				json_object_del(c, "type");
				json_array_append_new(json_object_get(one, "findings"), c);
			}
			json_array_append_new(procs, one);
			continue;
		}
		printf("\n");
		if (p->host)
			printf("host %s: ", s.hosts[p->host]);
		if (p->rank)
			printf("rank %" JSON_INTEGER_FORMAT ": ", json_integer_value(p->rank));
		printf("process %d (%s): %zu finding%s\n\n", p->pid, p->comm[0] ? p->comm : "?", n,
		       n == 1 ? "" : "s");
		json_array_foreach (p->findings, k, rec) {
			if (k)
				putchar('\n');
			print_finding(rec);
		}
	}
	if (doc) {
		json_dumpf(doc, stdout, JSON_INDENT(2));
		putchar('\n');
	}
	ret = max >= fail_on ? DLS_EXIT_FINDINGS : DLS_EXIT_OK;
	goto out;
oom:
	dls_err("check: out of memory reading %s", path);
	ret = DLS_EXIT_INSPECT;
out:
	fclose(f);
	free(line);
	json_decref(hdr);
	json_decref(doc);
	for (size_t i = 0; i < s.n; i++) {
		json_decref(s.p[i].rank);
		json_decref(s.p[i].findings);
	}
	for (size_t i = 0; i < s.n_hosts; i++)
		free(s.hosts[i]);
	free(s.hosts);
	free(s.p);
	free(s.slots);
	return ret;
}
