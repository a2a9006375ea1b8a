// SPDX-License-Identifier: GPL-2.0
/*
 * dlscope agent: the collector of watch on every process of the node, for as long as it runs,
 * publishing what is true now where operators look (docs/agent.md): a metrics file for
 * node_exporter's textfile collector, one JSON line per finding, and a bounded ring of report
 * files, each a small trace that 'dlscope report' and 'check' read.
 */
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "cliopt.h"
#include "commands.h"
#include "job.h"
#include "slurm_select.h"
#include "output.h"
#include "outfile.h"
#include "phase.h"
#include "promfile.h"
#include "sink.h"
#include "watch.h"

#define AGENT_INTERVAL_S 15
#define AGENT_REPORTS_KEEP 100
/* A process's model read at most once a second: its calls in between judged together. */
#define AGENT_SETTLE_MS 1000
/* The stream read ten times a second: a busy node's events in batches, not one wake-up each. */
#define AGENT_BATCH_MS 100
/* Half watch's ring: libbpf maps it twice, and a node's budget is 100 MiB. */
#define AGENT_RING_MB 8

static const struct cliopt_def agent_defs[] = {
	{ .name = "textfile-dir",
	  .val = 'T',
	  .arg = "DIR",
	  .value = CLIOPT_DIR,
	  .help = "write DIR/dlscope.prom (Prometheus text format) for node_exporter's textfile "
		  "collector: a dlscope_finding series per finding of a live process, and the "
		  "agent's counts; removed when the agent stops" },
	{ .name = "interval",
	  .val = 'i',
	  .arg = "SECS",
	  .help = "how often the file is written (default " CLIOPT_STR(AGENT_INTERVAL_S) ")" },
	{ .name = "comm",
	  .letter = 'c',
	  .arg = "NAME",
	  .help = "only the processes named NAME (their comm), and the workers they fork without "
		  "exec" },
	{ .name = "cgroup",
	  .val = 'g',
	  .arg = "DIR",
	  .value = CLIOPT_DIR,
	  .help = "only the processes of cgroup v2 directory DIR or below (a container's, a "
		  "systemd unit's), running or started there later" },
	{ .name = "slurm-job",
	  .val = 'S',
	  .arg = "ID",
	  .help = "only Slurm job ID's processes on this node: its cgroup job_ID (Slurm's "
		  "cgroup/v2 plugin), else those with SLURM_JOB_ID=ID in their environment" },
	{ .name = "json",
	  .val = 'j',
	  .arg = "FILE",
	  .value = CLIOPT_FILE,
	  .help = "each new finding as one JSON object per line, the trace's finding record "
		  "(docs/trace-format.md), to FILE (default: standard output; '-' too)" },
	{ .name = "reports-dir",
	  .val = 'r',
	  .arg = "DIR",
	  .value = CLIOPT_DIR,
	  .help = "keep each finding as a small trace in DIR (finding-TIME-PID-CHECK.jsonl: the "
		  "header, the process's objects and the finding with its evidence), for "
		  "'dlscope report FILE'" },
	{ .name = "reports-keep",
	  .val = 'k',
	  .arg = "N",
	  .help = "the newest N report files are kept (default " CLIOPT_STR(
		  AGENT_REPORTS_KEEP) ")" },
	{ .name = "duration", .letter = 'd', .arg = "SECS", .help = "stop after SECS seconds" },
	{ .name = "ring-mb",
	  .val = 'R',
	  .arg = "N",
	  .help = "the ring buffer, N MiB (a power of two; default " CLIOPT_STR(
		  AGENT_RING_MB) "); what does not fit is counted lost" },
	{},
};

const struct cliopt_cmd agent_cli = {
	.name = "agent",
	.usage = "agent [OPTIONS]",
	.about = "Watch every process of this node (or those --comm, --cgroup or --slurm-job\n"
		 "select), running or started later, with watch's probes and live detectors;\n"
		 "judge each process found running as check does (its threads are not read:\n"
		 "nothing is stopped); publish each finding that is true of a live process now.\n"
		 "Runs until SIGTERM, SIGINT or --duration. Needs root, kernel BTF and uprobes\n"
		 "(docs/agent.md).\n",
	.opts = agent_defs,
	.after =
		"The probes are in every process that maps the C library: each dlopen, dlclose and\n"
		"dlsym of the node pays a trap (docs/reliability.md gives the cost per call).\n"
		"\n"
		"Exit status: 0 after a stop, 2 usage error, 3 could not start.\n",
};

static volatile sig_atomic_t agent_stop;

/* A process's present objects as their trace records, for its report files. */
struct agent_obj {
	char *path;
	char *line; /* the loaded record, compact */
};
struct agent_proc {
	pid_t pid;
	struct agent_obj *objs;
	size_t n, cap;
};

/*
 * The agent's budget, 1% of one CPU: over it for the last minute, it reads each process and
 * the stream half as often (up to 8 times), said in its log; well under it for a minute, back.
 */
#define BUDGET_CPU_SHARE 0.01
#define BUDGET_WINDOW_NS (60ULL * 1000000000ULL)
#define BUDGET_MAX_SHED 8

struct budget {
	struct event_sink s;
	uint64_t window_start; /* CLOCK_MONOTONIC ns */
	double cpu_start;      /* the agent's CPU seconds then */
	unsigned int shed;     /* the periods' factor: 1 within budget */
};

struct agent {
	struct json_sink findings; /* findings as JSON lines, the report files' records */
	struct budget budget;
	void (*json_event)(struct event_sink *s, const struct event *ev);
	const char *textfile_dir, *json_path, *reports_dir;
	const char *slurm_job;
	struct slurm_select slurm;
	const struct watch_stats *st; /* the collector's, current (live_counts) */
	struct agent_proc *procs;     /* with --reports-dir */
	size_t n_procs, cap_procs;
	double interval_s;
	unsigned int reports_keep;
	FILE *json_out;
	json_t *header; /* the run's header record, at the top of every report file */
	unsigned long long reports_written, reports_failed;
	struct watch_opts o;
};

static int agent_option(struct agent *a, int c, const char *arg)
{
	double v;

	switch (c) {
	case 'T': a->textfile_dir = arg; return 0;
	case 'i':
		if (cliopt__number(arg, 86400, false, &a->interval_s) || a->interval_s < 0.1)
			return cliopt__usage("agent",
					     "--interval takes a number of seconds from 0.1 to "
					     "86400, not '%s'",
					     arg);
		return 0;
	case 'c':
		if (!arg[0] || strlen(arg) > 15)
			return cliopt__usage("agent",
					     "--comm takes a process name of 1 to 15 characters "
					     "(the kernel's comm), not '%s'",
					     arg);
		a->o.comm = arg;
		return 0;
	case 'j': a->json_path = arg; return 0;
	case 'g': a->o.cgroup = arg; return 0;
	case 'S': a->slurm_job = arg; return 0;
	case 'r': a->reports_dir = arg; return 0;
	case 'k':
		if (cliopt__number(arg, 1000000, true, &v))
			return cliopt__usage(
				"agent", "--reports-keep takes a whole number above 0, not '%s'",
				arg);
		a->reports_keep = (unsigned int)v;
		return 0;
	case 'd':
		if (cliopt__number(arg, 86400 * 365, false, &a->o.duration_s))
			return cliopt__usage(
				"agent", "--duration takes a positive number of seconds, not '%s'",
				arg);
		return 0;
	case 'R':
		if (cliopt__number(arg, 4096, true, &v) || ((unsigned)v & ((unsigned)v - 1)))
			return cliopt__usage(
				"agent", "--ring-mb takes a power of two from 1 to 4096, not '%s'",
				arg);
		a->o.ring_mb = (unsigned int)v;
		return 0;
	case 'h': return cliopt__help(&agent_cli);
	default: return DLS_EXIT_USAGE;
	}
}

static int agent_parse(int argc, char **argv, struct agent *a)
{
	struct cliopt cl;
	int c, err;

	cliopt__init(&cl, &agent_cli, argc, argv);
	while ((c = cliopt__next(&cl)) != -1) {
		if (c == CLIOPT_ERR)
			return DLS_EXIT_USAGE;
		err = agent_option(a, c, cl.arg);
		if (err || c == 'h')
			return err;
	}
	if (cl.n_ops)
		return cliopt__usage("agent",
				     "takes no operand ('%s'): it watches every process, or those "
				     "of --comm, --cgroup or --slurm-job",
				     cl.ops[0]);
	return -1;
}

/* A directory the agent writes into: it must exist (a typo is no new directory). */
static int writable_dir(const char *opt, const char *dir)
{
	struct stat st;

	if (stat(dir, &st)) {
		dls_err("agent: %s %s: %s", opt, dir, strerror(errno));
		return DLS_EXIT_INSPECT;
	}
	if (!S_ISDIR(st.st_mode)) {
		dls_err("agent: %s %s: not a directory", opt, dir);
		return DLS_EXIT_INSPECT;
	}
	if (access(dir, W_OK)) {
		dls_err("agent: %s %s: not writable: %s", opt, dir, strerror(errno));
		return DLS_EXIT_INSPECT;
	}
	return -1;
}

static int name_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The ring: report files past the newest @keep are removed, oldest first (names sort by time). */
static void prune_reports(const char *dir, unsigned int keep)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;

	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (strncmp(de->d_name, "finding-", 8) || len < 6 ||
		    strcmp(de->d_name + len - 6, ".jsonl"))
			continue;
		if (n == cap && ARRAY_GROW(names, cap, 64))
			break;
		if (!(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	if (d)
		closedir(d);
	qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i + keep < n) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			unlink(path);
		}
		free(names[i]);
	}
	free(names);
}

static struct agent_proc *proc_of(struct agent *a, pid_t pid, bool add)
{
	for (size_t i = 0; i < a->n_procs; i++)
		if (a->procs[i].pid == pid)
			return &a->procs[i];
	if (!add || (a->n_procs == a->cap_procs && ARRAY_GROW(a->procs, a->cap_procs, 64)))
		return NULL;
	a->procs[a->n_procs] = (struct agent_proc){ .pid = pid };
	return &a->procs[a->n_procs++];
}

static void obj_free(struct agent_obj *o)
{
	free(o->path);
	free(o->line);
}

/* The process's objects forgotten: it exited, or its exec starts a new image. */
static void proc_forget(struct agent *a, pid_t pid)
{
	struct agent_proc *p = proc_of(a, pid, false);

	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		obj_free(&p->objs[i]);
	free(p->objs);
	*p = a->procs[--a->n_procs];
}

static void proc_loaded(struct agent *a, json_t *rec)
{
	struct agent_proc *p =
		proc_of(a, (pid_t)json_integer_value(json_object_get(rec, "pid")), true);
	const char *path = json_string_value(json_object_get(rec, "path"));
	struct agent_obj o = { .path = strdup(path ? path : ""),
			       .line = json_dumps(rec, JSON_COMPACT) };

	if (!p || !o.path || !o.line || (p->n == p->cap && ARRAY_GROW(p->objs, p->cap, 32))) {
		obj_free(&o);
		return;
	}
	p->objs[p->n++] = o;
}

static void proc_unloaded(struct agent *a, json_t *rec)
{
	struct agent_proc *p =
		proc_of(a, (pid_t)json_integer_value(json_object_get(rec, "pid")), false);
	const char *path = json_string_value(json_object_get(rec, "path"));

	for (size_t i = 0; p && path && i < p->n; i++)
		if (!strcmp(p->objs[i].path, path)) {
			obj_free(&p->objs[i]);
			memmove(&p->objs[i], &p->objs[i + 1], (p->n - i - 1) * sizeof(*p->objs));
			p->n--;
			return;
		}
}

static void capture_record(void *ctx, json_t *rec)
{
	*(json_t **)ctx = json_incref(rec);
}

/* The run's counts now, as the summary record a trace ends with (sink.h builds it). */
static json_t *summary_now(const struct agent *a)
{
	struct json_sink cap;
	json_t *rec = NULL;

	json_sink__init(&cap, capture_record, NULL, &rec);
	cap.s.summary(&cap.s, a->st);
	return rec;
}

static int put_record(FILE *f, const json_t *rec)
{
	return rec && !json_dumpf(rec, f, JSON_COMPACT) && fputc('\n', f) != EOF ? 0 : -1;
}

/*
 * One finding as a small whole trace, written whole or not at all: the header, the process's
 * objects then, the finding with its evidence, and the counts so far.
 */
static int write_report(struct agent *a, json_t *rec)
{
	char path[4096], tmp[4096];
	const char *id = json_string_value(json_object_get(rec, "id"));
	struct timespec now;
	const struct agent_proc *proc;
	json_t *summary;
	FILE *f;
	int err = 0;

	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(path, sizeof(path), "%s/finding-%020llu-%lld-%s.jsonl", a->reports_dir,
		 (unsigned long long)now.tv_sec * 1000000000ULL + (unsigned long long)now.tv_nsec,
		 (long long)json_integer_value(json_object_get(rec, "pid")), id ? id : "finding");
	snprintf(tmp, sizeof(tmp), "%s/.report.tmp", a->reports_dir);
	f = outfile__temp(tmp, &err);
	if (!f)
		return err;
	proc = proc_of(a, (pid_t)json_integer_value(json_object_get(rec, "pid")), false);
	summary = summary_now(a);
	if (put_record(f, a->header))
		err = -EIO;
	for (size_t i = 0; !err && proc && i < proc->n; i++)
		if (fputs(proc->objs[i].line, f) == EOF || fputc('\n', f) == EOF)
			err = -EIO;
	if (!err && (put_record(f, rec) || put_record(f, summary)))
		err = -EIO;
	json_decref(summary);
	err = outfile__rename_into(f, tmp, path, err);
	if (!err)
		prune_reports(a->reports_dir, a->reports_keep);
	return err;
}

/* The trace's records: the header kept, each finding a line (and a report file); the rest not. */
static void agent_emit(void *ctx, json_t *rec)
{
	struct agent *a = ctx;
	const char *type = json_string_value(json_object_get(rec, "type"));

	if (!type)
		return;
	if (!strcmp(type, "header")) {
		json_decref(a->header);
		a->header = json_deep_copy(rec);
		return;
	}
	if (a->reports_dir && !strcmp(type, "loaded"))
		proc_loaded(a, rec);
	else if (a->reports_dir && !strcmp(type, "unloaded"))
		proc_unloaded(a, rec);
	else if (a->reports_dir && (!strcmp(type, "exec") || !strcmp(type, "exit")))
		proc_forget(a, (pid_t)json_integer_value(json_object_get(rec, "pid")));
	if (strcmp(type, "finding"))
		return;
	if (json_dumpf(rec, a->json_out, JSON_COMPACT) || fputc('\n', a->json_out) == EOF ||
	    fflush(a->json_out))
		dls_warn("agent: cannot write a finding to %s: %s", a->json_path, strerror(errno));
	if (a->reports_dir) {
		int err = write_report(a, rec);

		if (err && !a->reports_failed++)
			dls_warn("agent: cannot keep a report in %s: %s", a->reports_dir,
				 strerror(-err));
		else if (!err)
			a->reports_written++;
	}
}

/*
 * Of the events, only a process's exec and exit matter here (its objects start again, or go):
 * the others are not made into records at all, which a thousand dlopens a second would cost.
 */
static void agent_event(struct event_sink *s, const struct event *ev)
{
	struct agent *a = (struct agent *)((char *)s - offsetof(struct agent, findings.s));

	if (a->reports_dir && (ev->kind == EVENT_EXEC || ev->kind == EVENT_EXIT))
		a->json_event(s, ev);
}

/* Each minute: the share of one CPU the agent took, and its periods set to keep it in budget. */
static void budget_tick(struct event_sink *s, uint64_t now)
{
	struct agent *a = (struct agent *)((char *)s - offsetof(struct agent, budget.s));
	struct budget *b = &a->budget;
	double cpu = phase__cpu_seconds(), share;
	unsigned int was = b->shed;

	if (!b->window_start) {
		b->window_start = now;
		b->cpu_start = cpu;
		return;
	}
	if (now - b->window_start < BUDGET_WINDOW_NS)
		return;
	share = (cpu - b->cpu_start) / ((double)(now - b->window_start) / 1e9);
	if (share > BUDGET_CPU_SHARE && b->shed < BUDGET_MAX_SHED)
		b->shed *= 2;
	else if (share < BUDGET_CPU_SHARE / 4 && b->shed > 1)
		b->shed /= 2;
	if (b->shed != was) {
		a->o.settle_ms = AGENT_SETTLE_MS * b->shed;
		a->o.batch_ms = AGENT_BATCH_MS * b->shed;
		dls_warn(
			"agent: %.2f%% of one CPU over the last minute (budget %.0f%%): each "
			"process's libraries now read at most every %.0f s, the events every %u ms",
			share * 100, BUDGET_CPU_SHARE * 100, a->o.settle_ms / 1e3, a->o.batch_ms);
	}
	b->window_start = now;
	b->cpu_start = cpu;
}

/* SIGTERM (systemd's, the kubelet's), SIGINT and SIGHUP end the run; a log shipper that went
 * away (SIGPIPE) is no reason to die: its write fails and is said. */
static void install_stop_handlers(void)
{
	cliopt__stop_on_signals(&agent_stop);
	signal(SIGPIPE, SIG_IGN);
}

static int agent_run(struct agent *a)
{
	struct event_sink *sinks[3];
	struct prom_sink prom;
	struct watch_stats st;
	char why[512];
	int err;

	a->o.sinks = sinks;
	json_sink__init(&a->findings, agent_emit, NULL, a);
	/* Only findings are written, with their own stacks: no event's stack is unwound. */
	a->findings.s.wants_stacks = false;
	a->json_event = a->findings.s.event;
	a->findings.s.event = agent_event;
	sinks[a->o.n_sinks++] = &a->findings.s;
	a->budget = (struct budget){ .s = { .tick = budget_tick }, .shed = 1 };
	sinks[a->o.n_sinks++] = &a->budget.s;
	if (a->textfile_dir) {
		err = prom_sink__init(&prom, a->textfile_dir, a->interval_s, &st, why, sizeof(why));
		if (err) {
			dls_err("agent: %s", why);
			return DLS_EXIT_INSPECT;
		}
		sinks[a->o.n_sinks++] = &prom.s;
	}
	install_stop_handlers();
	a->st = &st;
	err = watch__run(&a->o, &st, why, sizeof(why));
	if (a->textfile_dir)
		prom_sink__free(&prom);
	json_decref(a->header);
	while (a->n_procs)
		proc_forget(a, a->procs[0].pid);
	free(a->procs);
	if (err) {
		dls_err("agent: %s", why);
		return DLS_EXIT_INSPECT;
	}
	fprintf(stderr,
		"dlscope: agent stopped: %llu event%s, %llu lost, %llu finding%s, %llu report "
		"file%s kept; collector CPU %.2f s\n",
		st.events, st.events == 1 ? "" : "s", st.lost, st.findings,
		st.findings == 1 ? "" : "s", a->reports_written, a->reports_written == 1 ? "" : "s",
		st.cpu_s);
	return DLS_EXIT_OK;
}

int cmd_agent(int argc, char **argv)
{
	struct agent a = { .interval_s = AGENT_INTERVAL_S,
			   .reports_keep = AGENT_REPORTS_KEEP,
			   .o = { .check_running = true,
				  .live_counts = true,
				  .settle_ms = AGENT_SETTLE_MS,
				  .no_holds = true,
				  .no_stacks = true,
				  .unordered = true,
				  .batch_ms = AGENT_BATCH_MS,
				  .ring_mb = AGENT_RING_MB,
				  .stop = &agent_stop } };
	int ret = agent_parse(argc, argv, &a);
	char why[512];

	if (ret < 0 && a.textfile_dir)
		ret = writable_dir("--textfile-dir", a.textfile_dir);
	if (ret < 0 && a.reports_dir)
		ret = writable_dir("--reports-dir", a.reports_dir);
	if (ret < 0)
		ret = a.slurm_job ? slurm_select__apply("agent", a.slurm_job, &a.slurm, &a.o) : -1;
	if (ret >= 0)
		return ret;
	/* --comm narrows the agent to one name; every process otherwise. */
	a.o.every_process = !a.o.comm;
	a.json_out = stdout;
	if (a.json_path && strcmp(a.json_path, "-")) {
		/* Appended: a restarted agent adds to what a shipper may not have read yet. */
		int fd = outfile__open("agent", a.json_path, O_APPEND, why, sizeof(why));

		if (fd < 0 || !(a.json_out = fdopen(fd, "w"))) {
			dls_err("agent: %s", fd < 0 ? why : strerror(errno));
			if (fd >= 0)
				close(fd);
			return DLS_EXIT_INSPECT;
		}
	}
	if (!a.json_path)
		a.json_path = "standard output";
	ret = agent_run(&a);
	if (a.json_out != stdout)
		fclose(a.json_out);
	return ret;
}
