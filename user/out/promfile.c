// SPDX-License-Identifier: GPL-2.0
/* The agent's metrics file for node_exporter's textfile collector (promfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "outfile.h"
#include "output.h"
#include "phase.h"
#include "procfs.h"
#include "promfile.h"

#define PROM(s) ((struct prom_sink *)(s))

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Whether @s is still the process it was: alive, not a zombie, the same start. */
static bool still_there(const struct prom_series *s)
{
	unsigned long long start;
	char state;

	/* One read of its stat: each write checks every series. */
	return !proc__ppid_start(s->pid, &state, NULL, &start) && state != 'Z' && state != 'X' &&
	       start == s->start;
}

static void drop_pid(struct prom_sink *p, pid_t pid)
{
	size_t k = 0;

	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].pid != pid)
			p->v[k++] = p->v[i];
	p->n = k;
}

/* A finding of a live process: its series, once per process and check (the worst severity). */
static void prom_finding(struct event_sink *s, const struct live_finding *lf)
{
	struct prom_sink *p = PROM(s);
	struct prom_series n = { .pid = lf->pid, .sev = lf->f->sev };

	if (!lf->pid || proc__ppid_start(lf->pid, NULL, NULL, &n.start))
		return; /* gone already: nothing true of a live process */
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].pid == n.pid && p->v[i].start == n.start &&
		    !strcmp(p->v[i].check, lf->f->id)) {
			if (n.sev > p->v[i].sev)
				p->v[i].sev = n.sev;
			return;
		}
	if (p->n == p->cap && ARRAY_GROW(p->v, p->cap, 16))
		return;
	snprintf(n.check, sizeof(n.check), "%s", lf->f->id);
	if (proc__read_stat(n.pid, 0, n.comm, sizeof(n.comm), NULL, NULL))
		snprintf(n.comm, sizeof(n.comm), "%s", lf->comm ? lf->comm : "");
	if (proc__container(n.pid, n.container, sizeof(n.container)))
		n.container[0] = '\0';
	p->v[p->n++] = n;
	p->next_write = 0; /* news: in the file at the next tick, not the next interval */
}

/*
 * A new image's findings are its own: the old one's go with it. An exit of a process with a
 * series has the file written at the next tick (which drops what is no longer there).
 */
static void prom_event(struct event_sink *s, const struct event *ev)
{
	struct prom_sink *p = PROM(s);

	if (ev->kind == EVENT_EXEC && p->n) {
		size_t n = p->n;

		drop_pid(p, ev->pid);
		if (p->n != n)
			p->next_write = 0;
	}
	for (size_t i = 0; ev->kind == EVENT_EXIT && i < p->n; i++)
		if (p->v[i].pid == ev->pid)
			p->next_write = 0;
}

/* A label value as the exposition format quotes it: \\, \" and \n escaped. */
static void put_label(FILE *f, const char *name, const char *v, bool last)
{
	fprintf(f, "%s=\"", name);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputs(last ? "\"" : "\",", f);
}

static void put_metrics(struct prom_sink *p, FILE *f)
{
	const struct watch_stats *st = p->st;

	fputs("# HELP dlscope_finding A dlscope finding that is true of a live process now.\n"
	      "# TYPE dlscope_finding gauge\n",
	      f);
	for (size_t i = 0; i < p->n; i++) {
		const struct prom_series *s = &p->v[i];
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", s->pid);
		fputs("dlscope_finding{", f);
		put_label(f, "check", s->check, false);
		put_label(f, "severity", severity__name(s->sev), false);
		put_label(f, "pid", pid, false);
		put_label(f, "comm", s->comm, false);
		put_label(f, "container", s->container, true);
		fputs("} 1\n", f);
	}
	fprintf(f,
		"# HELP dlscope_agent_processes Processes the agent watches now.\n"
		"# TYPE dlscope_agent_processes gauge\n"
		"dlscope_agent_processes %llu\n"
		"# HELP dlscope_agent_events_total Events the agent's probes reported.\n"
		"# TYPE dlscope_agent_events_total counter\n"
		"dlscope_agent_events_total %llu\n"
		"# HELP dlscope_agent_lost_events_total Events lost (ring buffer or call table "
		"full, probe hits not run, unread).\n"
		"# TYPE dlscope_agent_lost_events_total counter\n"
		"dlscope_agent_lost_events_total %llu\n"
		"# HELP dlscope_agent_cpu_seconds_total The agent's own CPU time, user and system.\n"
		"# TYPE dlscope_agent_cpu_seconds_total counter\n"
		"dlscope_agent_cpu_seconds_total %.3f\n",
		st->procs_now, st->events, st->lost, phase__cpu_seconds());
}

int prom_sink__write(struct prom_sink *p)
{
	size_t k = 0;
	FILE *f;
	int err = 0;

	/* Only what is true now: a process that exited (or whose PID was reused) has none. */
	for (size_t i = 0; i < p->n; i++)
		if (still_there(&p->v[i]))
			p->v[k++] = p->v[i];
	p->n = k;
	f = outfile__temp(p->tmp, &err);
	if (!f)
		return err;
	put_metrics(p, f);
	return outfile__rename_into(f, p->tmp, p->path, 0);
}

static void prom_tick(struct event_sink *s, uint64_t now)
{
	struct prom_sink *p = PROM(s);
	int err;

	if (now < p->next_write)
		return;
	p->next_write = now + p->interval_ns;
	/* Written early (news), the file is still rewritten an interval later at the latest. */
	err = prom_sink__write(p);
	/* Said once when it starts failing (a full disk), once when it works again. */
	if (err && err != p->write_err)
		dls_warn("agent: cannot write %s: %s; the metrics are stale until it can", p->path,
			 strerror(-err));
	else if (!err && p->write_err)
		dls_warn("agent: %s written again", p->path);
	p->write_err = err;
}

int prom_sink__init(struct prom_sink *p, const char *dir, double interval_s,
		    const struct watch_stats *st, char *why, size_t whylen)
{
	int err;

	*p = (struct prom_sink){
		.s = { .finding = prom_finding, .event = prom_event, .tick = prom_tick },
		.interval_ns = (uint64_t)(interval_s * 1e9),
		.st = st
	};
	/* node_exporter reads *.prom only: the temporary name is never read half-written. */
	if ((size_t)snprintf(p->path, sizeof(p->path), "%s/dlscope.prom", dir) >= sizeof(p->path) ||
	    (size_t)snprintf(p->tmp, sizeof(p->tmp), "%s/.dlscope.prom.tmp", dir) >=
		    sizeof(p->tmp)) {
		snprintf(why, whylen, "--textfile-dir %s: the name is too long", dir);
		return -ENAMETOOLONG;
	}
	err = prom_sink__write(p);
	if (err)
		snprintf(why, whylen, "--textfile-dir %s: cannot write %s: %s", dir, p->path,
			 strerror(-err));
	p->next_write = now_ns() + p->interval_ns;
	return err;
}

void prom_sink__free(struct prom_sink *p)
{
	unlink(p->path);
	free(p->v);
	p->v = NULL;
	p->n = p->cap = 0;
}
