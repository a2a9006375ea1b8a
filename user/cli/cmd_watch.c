// SPDX-License-Identifier: GPL-2.0
/* dlscope watch and dlscope record: the eBPF event stream, live or into a JSON Lines trace. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <limits.h>
#include <sys/utsname.h>

#include "array.h"
#include "cliopt.h"
#include "commands.h"
#include "job.h"
#include "jobwatch.h"
#include "sink.h"
#include "outfile.h"
#include "slurm_select.h"
#include "watch_slurm.h"
#include "output.h"
#include "target.h"
#include "dlwatch.h"
#include "watch.h"

/* One table for watch and record: where they differ, an entry each (.only). */
static const struct cliopt_def watch_defs[] = {
	{ .name = "pid",
	  .letter = 'p',
	  .arg = "PID",
	  .value = CLIOPT_PID,
	  .help = "watch this process (repeatable, a comma list \"1,2\", or PIDs as operands)" },
	{ .name = "comm",
	  .letter = 'c',
	  .arg = "NAME",
	  .help = "every process named NAME (its comm), running or started later, and the "
		  "workers they fork without exec (a prefork server's), until --duration or "
		  "Ctrl-C" },
	{ .name = "follow",
	  .letter = 'f',
	  .help = "also the children they fork (torchrun's ranks)" },
	{ .name = "job",
	  .val = 'J',
	  .arg = "PID",
	  .value = CLIOPT_PID,
	  .only = "watch",
	  .help = "every rank of the job PID belongs to (any member: the launcher, a rank, a "
		  "rank's child), and the ranks the launcher starts later (implies --follow); "
		  "slurm:JOBID: every node of a Slurm job, from any node (srun --overlap runs watch "
		  "--slurm-job on each; lines named by node)" },
	{ .name = "job",
	  .val = 'J',
	  .arg = "PID",
	  .value = CLIOPT_PID,
	  .only = "record",
	  .help = "every rank of the job PID belongs to (any member: the launcher, a rank, a "
		  "rank's child), and the ranks the launcher starts later (implies --follow); "
		  "slurm:JOBID: every node of a Slurm job, from any node (srun --overlap runs "
		  "record --slurm-job on each; lines named by node), each node's trace in "
		  "FILE.NODE, merged into FILE" },
	{ .name = "slurm-job",
	  .val = 'S',
	  .arg = "ID",
	  .help = "every process of Slurm job ID on this node, running or started later (with "
		  "--comm: of that name): the job's cgroup job_ID where Slurm's cgroup/v2 plugin "
		  "made one, else those with SLURM_JOB_ID=ID in their environment, tested in the "
		  "kernel at each exec" },
	{ .name = "hang-secs",
	  .val = 'G',
	  .arg = "N",
	  .help = "a rank whose threads use no CPU for N seconds while another rank's do is "
		  "reported hung, with its stack (default 10)" },
	{ .name = "hot",
	  .val = 'H',
	  .help = "also probe the OpenMP and OpenBLAS entry points (GOMP_parallel, "
		  "GOMP_parallel_start, __kmpc_fork_call, exec_blas): a parallel region or BLAS "
		  "dispatch started inside dlopen is reported, with the thread's count so far, and "
		  "flagged, and each runtime's first one; the others are counted per thread and "
		  "runtime in the kernel: a line per busy runtime each second, totals at the end, "
		  "and a live oversubscription finding when two busy pools have more threads than "
		  "CPUs. Also a line per OpenBLAS pool thread start. Every region then pays a "
		  "uprobe (tens of microseconds)" },
	{ .name = "dlsym",
	  .val = 'Y',
	  .help = "also each dlsym and dlvsym call with its result: a probe at their return (on "
		  "the stack protector's check before it where there is one, else on the ret "
		  "instruction, which costs the process some 10 us more per call on a VM); without "
		  "it, their entry alone: a thread blocked in dlsym is still found and named" },
	{ .name = "duration",
	  .letter = 'd',
	  .arg = "SECS",
	  .help = "stop SECS seconds after the probes are attached (the \"watching\" line); no "
		  "activity line is stamped after that end" },
	{ .name = "futex-ms",
	  .val = 'F',
	  .arg = "MS",
	  .help = "also report every futex wait of at least MS ms, from the futex syscall "
		  "tracepoints (they slow every futex call of the machine; without them, a thread "
		  "blocked inside dlopen is still found, by sampling, within 0.1 s)" },
	{ .name = "ring-mb",
	  .val = 'R',
	  .arg = "N",
	  .help = "the ring buffer, N MiB (a power of two; default 16); what does not fit is "
		  "counted lost, never dropped unsaid" },
	{ .name = "output",
	  .letter = 'o',
	  .arg = "FILE",
	  .value = CLIOPT_FILE,
	  .only = "watch",
	  .help = "also write the JSON Lines trace (docs/trace-format.md); %h in FILE is the host "
		  "name (one file per node), %n Slurm's node name (the host name outside a step), "
		  "%% a %" },
	{ .name = "output",
	  .letter = 'o',
	  .arg = "FILE",
	  .value = CLIOPT_FILE,
	  .only = "record",
	  .help = "(required) the JSON Lines trace (docs/trace-format.md); %h in FILE is the host "
		  "name (one file per node), %n Slurm's node name (the host name outside a step), "
		  "%% a %" },
	{ .name = "quiet", .letter = 'q', .help = "no line per event" },
	{},
};

#define WATCH_ABOUT                                                                           \
	"Stream the loader's calls (dlopen, dlmopen, dlclose; dlsym, dlvsym with --dlsym),\n" \
	"GPU module loads (cuModuleLoad*, cuLibraryLoad*, hipModuleLoad*), exec/fork/exit,\n" \
	"fatal signals with the faulting object, from eBPF probes; keep each process's\n"     \
	"library graph current and flag, live, a second OpenMP/BLAS/C++ runtime arriving\n"   \
	"and threads created, waiting or starting parallel regions inside dlopen.\n"          \
	"Needs root, kernel BTF and uprobes.\n"

#define WATCH_AFTER                                                                       \
	"A rank's lines and records carry its rank ([rank 2], \"rank\": 2), from RANK,\n" \
	"OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID in its environment;\n" \
	"the first rank to die (its fatal signal and faulting object, or exit status)\n"  \
	"is a rank-died finding with the other ranks' state, a hung rank rank-hung.\n"    \
	"\n"                                                                              \
	"Exit status: 0 fine, 1 live findings, 2 usage error, 3 could not watch.\n"

const struct cliopt_cmd watch_cli = {
	.name = "watch",
	.usage = "watch [OPTIONS] PID...\n"
		 "watch [OPTIONS] --comm NAME\n"
		 "watch [OPTIONS] -- COMMAND [ARGS...]\n"
		 "watch [OPTIONS] --job PID | --job slurm:JOBID\n"
		 "watch [OPTIONS] --slurm-job ID",
	.about = WATCH_ABOUT,
	.opts = watch_defs,
	.after = WATCH_AFTER,
	.takes_command = true,
	.operands = CLIOPT_OP_PID,
};

const struct cliopt_cmd record_cli = {
	.name = "record",
	.usage = "record [OPTIONS] -o FILE PID...\n"
		 "record [OPTIONS] -o FILE --comm NAME\n"
		 "record [OPTIONS] -o FILE -- COMMAND [ARGS...]\n"
		 "record [OPTIONS] -o FILE --job PID | --job slurm:JOBID\n"
		 "record [OPTIONS] -o FILE --slurm-job ID",
	.about = "Write what 'dlscope watch' sees, every event and finding, to FILE as a JSON\n"
		 "Lines trace for 'dlscope ui --replay', 'check', 'report' and 'export'; no\n"
		 "line per event on the terminal (the counts at the end).\n"
		 "\n" WATCH_ABOUT,
	.opts = watch_defs,
	.after = WATCH_AFTER,
	.takes_command = true,
	.operands = CLIOPT_OP_PID,
};

static volatile sig_atomic_t stop_requested;

/*
 * -o's name with %h replaced by this host's name (as the trace's header gives it) and %% by %,
 * so that one command line on every node of a job (srun) writes one file per node.
 */
static int expand_output_path(const char *pattern, char *buf, size_t len)
{
	const char *node = getenv("SLURMD_NODENAME");
	struct utsname u;
	size_t n = 0;

	if (uname(&u))
		snprintf(u.nodename, sizeof(u.nodename), "unknown");
	/* Slurm's name for the node, which two nodes sharing one kernel's host name still differ
	 * in; the host name outside a step. */
	if (!node || !*node)
		node = u.nodename;
	for (const char *p = pattern; *p; p++) {
		const char *add = p;
		size_t k = 1;

		if (*p == '%') {
			if (p[1] == 'h')
				add = u.nodename, k = strlen(u.nodename);
			else if (p[1] == 'n')
				add = node, k = strlen(node);
			else if (p[1] != '%')
				return -EINVAL;
			p++;
		}
		if (n + k >= len)
			return -ENAMETOOLONG;
		memcpy(buf + n, add, k);
		n += k;
	}
	buf[n] = '\0';
	return 0;
}

/* --job PID: the launcher and every rank of the job on this host, followed. */
int watch_job_targets(const char *cmd, pid_t pid, struct watch_opts *o)
{
	struct job *j;
	char why[512];
	int err;

	err = job__find(pid, &j, why, sizeof(why));
	if (err) {
		dls_err("%s: %s", cmd, why);
		/* As stacks --job: a PID in no job, gone or not ours cannot be inspected. */
		return DLS_EXIT_INSPECT;
	}
	err = ARRAY_PUSH(o->pids, o->n_pids, o->cap_pids, j->launcher);
	for (size_t i = 0; !err && i < j->n; i++)
		err = ARRAY_PUSH(o->pids, o->n_pids, o->cap_pids, j->ranks[i].pid);
	if (!err) {
		char ranks[128];

		job__describe_ranks(j, ranks, sizeof(ranks));
		fprintf(stderr, "dlscope: %s job: launcher %d (%s), %s\n",
			job_scheme__name(j->scheme), j->launcher, j->launcher_comm, ranks);
	}
	job__free(j);
	if (err) {
		dls_err("%s: out of memory", cmd);
		return DLS_EXIT_INSPECT;
	}
	/* Ranks the launcher starts later (an elastic restart) are its children. */
	o->follow = true;
	return 0;
}

/*
 * "dlscope: CMD: reason" through dls_err (cliopt__usage's line, cut where dls_err's is), and
 * the usage status.
 */
static int __attribute__((format(printf, 2, 3)))
watch_usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dls_err("%s: %s", cmd, msg);
	return DLS_EXIT_USAGE;
}

int watch_live_option(const char *cmd, int c, const char *arg, struct watch_opts *o, pid_t *job_pid)
{
	double v;

	switch (c) {
	case 'p': return cliopt__pids(cmd, arg, &o->pids, &o->n_pids, &o->cap_pids);
	case 'f': o->follow = true; return 0;
	case 'H': o->hot = true; return 0;
	case 'Y': o->dlsym = true; return 0;
	case 'F':
		if (cliopt__number(arg, 3600000, true, &v))
			return watch_usage_error(
				cmd, "--futex-ms takes a whole number of milliseconds, not '%s'",
				arg);
		o->futex_ms = (unsigned int)v;
		return 0;
	case 'J':
		if (parse_pid(arg, job_pid))
			return watch_usage_error(cmd, "--job takes a process ID, not '%s'", arg);
		return 0;
	default: return 1;
	}
}

/* What the command line of watch or record asks. */
struct watch_cmd {
	const char *cmd; /* "watch" or "record" */
	bool record, quiet;
	const char *out_path; /* -o, %h expanded once the options are read */
	char out_buf[PATH_MAX];
	double hang_secs;
	pid_t job_pid;
	const char *job_slurm; /* --job slurm:JOBID: after "slurm:", watched on every node */
	const char *slurm_job; /* --slurm-job ID */
	struct slurm_select slurm;
	struct watch_opts o;
};

/* The options of watch and record but the live ones (watch_live_option). */
static int watch_option(struct watch_cmd *w, int c, const char *arg)
{
	const char *cmd = w->cmd;
	double v;

	switch (c) {
	case 'c':
		if (!arg[0] || strlen(arg) > 15)
			return watch_usage_error(
				cmd,
				"--comm takes a process name of 1 to 15 characters (the "
				"kernel's comm), not '%s'",
				arg);
		w->o.comm = arg;
		return 0;
	case 'd':
		if (cliopt__number(arg, 86400 * 365, false, &w->o.duration_s))
			return watch_usage_error(
				cmd, "--duration takes a positive number of seconds, not '%s'",
				arg);
		return 0;
	case 'o': w->out_path = arg; return 0;
	case 'q': w->quiet = true; return 0;
	case 'S': w->slurm_job = arg; return 0;
	case 'R':
		if (cliopt__number(arg, 4096, true, &v) || v < 1 || (unsigned)v != v ||
		    ((unsigned)v & ((unsigned)v - 1)))
			return watch_usage_error(
				cmd, "--ring-mb takes a power of two from 1 to 4096, not '%s'",
				arg);
		w->o.ring_mb = (unsigned int)v;
		return 0;
	case 'G':
		if (cliopt__number(arg, 86400, false, &w->hang_secs))
			return watch_usage_error(
				cmd, "--hang-secs takes a positive number of seconds, not '%s'",
				arg);
		return 0;
	case 'h': return cliopt__help(w->record ? &record_cli : &watch_cli);
	default: return DLS_EXIT_USAGE;
	}
}

/* The options and operands into @w: -1 to go on, or the exit status (after one line, or help). */
static int watch_parse(int argc, char **argv, struct watch_cmd *w)
{
	const char *cmd = w->cmd;
	struct cliopt cl;
	int c, err;

	cliopt__init(&cl, w->record ? &record_cli : &watch_cli, argc, argv);
	while ((c = cliopt__next(&cl)) != -1) {
		if (c == 'J' && !strncmp(cl.arg, "slurm:", 6)) {
			w->job_slurm = cl.arg + 6;
			continue;
		}
		err = watch_live_option(cmd, c, cl.arg, &w->o, &w->job_pid);
		if (err == 1)
			err = watch_option(w, c, cl.arg);
		if (err || c == 'h')
			return err;
	}
	/* PIDs as operands, as in libs and stacks; a command goes after "--". */
	err = cliopt__pid_operands(&cl, &w->o.pids, &w->o.n_pids, &w->o.cap_pids);
	if (err)
		return err;
	if (cl.command && !cl.command[0])
		return cliopt__usage(cmd, "no command after --");
	w->o.command = cl.command;
	return -1;
}

/* What to watch, checked; --job's processes found. -1 to go on, or the exit status. */
static int watch_targets(struct watch_cmd *w)
{
	const char *cmd = w->cmd;
	int err;

	if (w->job_slurm &&
	    (w->o.command || w->o.comm || w->slurm_job || w->o.n_pids || w->job_pid))
		return cliopt__usage(cmd,
				     "--job slurm:JOBID watches the job on each of its nodes: "
				     "no -- COMMAND, --comm, --slurm-job, PIDs or other --job");
	if (w->job_slurm)
		return w->record && !w->out_path ? cliopt__usage("record", "-o FILE is required") :
						   -1;
	if (w->job_pid && (w->o.command || w->o.comm || w->slurm_job))
		return cliopt__usage(cmd,
				     "--job watches a running job: not with -- COMMAND, --comm "
				     "or --slurm-job");
	if (w->slurm_job && (w->o.command || w->o.n_pids))
		return cliopt__usage(cmd, "--slurm-job selects the job's processes: not with -- "
					  "COMMAND or PIDs");
	if (!w->o.n_pids && !w->o.command && !w->o.comm && !w->job_pid && !w->slurm_job)
		return cliopt__usage(cmd, "nothing to watch: give -p PID, --comm NAME, --job PID, "
					  "--slurm-job ID or -- COMMAND");
	if (w->record && !w->out_path)
		return cliopt__usage("record", "-o FILE is required");
	if (w->job_pid) {
		err = watch_job_targets(cmd, w->job_pid, &w->o);
		if (err)
			return err;
	}
	if (w->slurm_job) {
		err = slurm_select__apply(cmd, w->slurm_job, &w->slurm, &w->o);
		if (err >= 0)
			return err;
		w->o.every_process = !w->o.comm;
	}
	/* A command that cannot run is an error now, not an empty watch and a bogus exit. */
	if (w->o.command && (err = cliopt__runnable(w->o.command[0]))) {
		dls_err("%s: cannot run '%s': %s", cmd, w->o.command[0], strerror(-err));
		return DLS_EXIT_INSPECT;
	}
	return -1;
}

/* The trace file of -o, opened (its fd, -1 without -o); or -1 and the exit status in @ret. */
static int watch_open_trace(struct watch_cmd *w, int *ret)
{
	char why[512];
	int fd;

	*ret = -1;
	if (!w->out_path)
		return -1;
	if (expand_output_path(w->out_path, w->out_buf, sizeof(w->out_buf))) {
		dls_err("%s: -o %s: a %% is followed by h (the host name), n (Slurm's node name) or "
			"%%, and the name must "
			"fit in %zu bytes",
			w->cmd, w->out_path, sizeof(w->out_buf) - 1);
		*ret = DLS_EXIT_USAGE;
		return -1;
	}
	w->out_path = w->out_buf;
	/* One writer per trace: a second recorder on it would truncate and interleave it. */
	fd = outfile__open_alone(w->cmd, w->out_path, 0, true, why, sizeof(why));
	if (fd < 0) {
		dls_err("%s: %s", w->cmd, why);
		*ret = DLS_EXIT_INSPECT;
	}
	return fd;
}

/* The run's counts on stderr: events, what was lost and why, the arrivals held. */
static void print_watch_stats(const struct watch_stats *st)
{
	char late[160] = "";

	/* A process begun under a loader not probed yet (another root): its first moments. */
	if (st->late_starts)
		snprintf(late, sizeof(late),
			 " (and %llu process%s began under a loader not probed yet: dlopens in the "
			 "first %.1f ms at most not seen%s)",
			 st->late_starts, st->late_starts == 1 ? "" : "es", st->late_start_ms_max,
			 st->late_starts_gone ? ", nor any of one gone before its probes" : "");
	/* "0 lost" only when nothing can have been missed: no late probes, no running start. */
	fprintf(stderr,
		"dlscope: %llu event%s, %llu lost%s, %llu finding%s; probes attached in %.1f ms; "
		"collector CPU %.2f s; processes read %llu time%s\n",
		st->events, st->events == 1 ? "" : "s", st->lost,
		st->holds_late	     ? " (and probes late, below)" :
		st->late_starts	     ? late :
		st->attached_running ? " since the attach (what ran before it is not seen)" :
				       "",
		st->findings, st->findings == 1 ? "" : "s", st->attach_ms, st->cpu_s, st->reads,
		st->reads == 1 ? "" : "s");
	/* A "library load": a dlopen, or the start-up, paused in the loader before the new
	 * libraries run until dlscope's probes are in them (docs/watch-internals.md). */
	if (st->holds)
		fprintf(stderr,
			"dlscope: %llu library load%s paused until dlscope's probes were in the new "
			"libraries (%.2f ms each on average, %.2f ms at most, as the paused threads "
			"saw it)\n",
			st->holds, st->holds == 1 ? "" : "s", st->hold_ms_total / (double)st->holds,
			st->hold_ms_max);
	if (st->holds_no_probes)
		fprintf(stderr,
			"dlscope: %llu library load%s not paused: nothing to probe in the new "
			"libraries (none needed, or probed already)\n",
			st->holds_no_probes, st->holds_no_probes == 1 ? "" : "s");
	if (st->holds_late) {
		fprintf(stderr,
			"dlscope: uncounted: %llu library loads whose probes came late (%llu let go and "
			"%llu not held because dlscope was stopped or killed, or silent for %.0f ms, "
			"the rest not answered within %.0f s): their first calls may be missing",
			st->holds_late, st->holds_abandoned, st->holds_not_held,
			DLW_BEAT_STALE_NS / 1e6, DLW_HOLD_MAX_NS / 1e9);
		/* Whether dlscope was away, or its heartbeat only late. */
		if (st->holds_signalled)
			fprintf(stderr, "; %llu as a signal had stopped or ended dlscope",
				st->holds_signalled);
		if (st->holds_stale_age_ns == ~0ULL)
			fprintf(stderr, "; its heartbeat had not begun");
		else if (st->holds_stale_age_ns)
			fprintf(stderr, "; its heartbeat was %.1f ms old at most",
				(double)st->holds_stale_age_ns / 1e6);
		fputc('\n', stderr);
	}
	if (st->outside_procs) {
		fprintf(stderr,
			"dlscope: %llu process%s outside the watch hit its probes %llu times (they are "
			"in every process that maps a probed file):",
			st->outside_procs, st->outside_procs == 1 ? "" : "es", st->outside_hits);
		for (size_t i = 0; i < st->n_outside_top; i++)
			fprintf(stderr, "%s %d (%s) %llu", i ? "," : "", st->outside_top[i].pid,
				st->outside_top[i].comm, st->outside_top[i].hits);
		fprintf(stderr, "%s\n", st->outside_procs > st->n_outside_top ? ", ..." : "");
	}
	if (st->lost)
		fprintf(stderr,
			"dlscope: lost: %llu with the ring buffer full (a larger --ring-mb, or fewer "
			"events: no --hot), %llu with the call table full, %llu probe hits the "
			"kernel ran no program for (another BPF program was running on that CPU), "
			"%llu still unread when the run ended (the target sent faster than dlscope "
			"reads)\n",
			st->lost_ring, st->lost_calls, st->lost_skipped, st->lost_unread);
}

/* The collector run into the sinks (lines unless quiet, the trace) under the job layer. */
static int watch_stream(struct watch_cmd *w, int trace_fd)
{
	struct event_sink *sinks[2], *job_sink;
	struct text_sink text;
	struct json_sink trace;
	struct trace_file tf;
	struct jobwatch *jw;
	struct watch_stats st;
	struct stat sb;
	char why[512];
	int err, werr = 0;

	w->o.sinks = sinks;
	if (!w->quiet) {
		text_sink__init(&text, stdout);
		text_sink__order(&text);
		sinks[w->o.n_sinks++] = &text.s;
	}
	if (trace_fd >= 0) {
		json_sink__init_file(&trace, &tf, trace_fd);
		json_sink__order(&trace);
		sinks[w->o.n_sinks++] = &trace.s;
	}
	/* The job layer labels ranks' lines and names the first to die and a hung one. */
	jw = jobwatch__new(w->o.sinks, w->o.n_sinks, w->hang_secs);
	if (!jw) {
		dls_err("%s: out of memory", w->cmd);
		if (trace_fd >= 0)
			trace_file__close(&tf);
		return DLS_EXIT_INSPECT;
	}
	for (size_t i = 0; i < w->o.n_pids; i++)
		jobwatch__add(jw, w->o.pids[i]);
	job_sink = jobwatch__sink(jw);
	w->o.sinks = &job_sink;
	w->o.n_sinks = 1;
	/* Before the collector says "watching": a signal sent as soon as that is read must be
	 * honoured. */
	cliopt__stop_on_signals(&stop_requested);
	err = watch__run(&w->o, &st, why, sizeof(why));
	st.findings += jobwatch__findings(jw);
	jobwatch__free(jw);
	/* A run that failed sent no summary: what the sinks still hold goes unwritten. */
	if (!w->quiet)
		text_sink__drop_held(&text);
	if (trace_fd >= 0) {
		json_sink__drop_held(&trace);
		werr = trace_file__close(&tf);
	}
	if (err) {
		dls_err("%s: %s", w->cmd, why);
		/* No trace of nothing is left behind (a FIFO or device named is left alone). */
		if (trace_fd >= 0 && !stat(w->out_path, &sb) && S_ISREG(sb.st_mode))
			unlink(w->out_path);
		return DLS_EXIT_INSPECT;
	}
	print_watch_stats(&st);
	/* A trace that did not reach the disk whole is a failed record, whatever was seen. */
	if (werr) {
		dls_err("%s: cannot write %s: %s: %llu of %llu records not written; the trace is "
			"cut after record %llu",
			w->cmd, w->out_path, strerror(-werr), tf.unwritten,
			tf.written + tf.unwritten, tf.written);
		return DLS_EXIT_INSPECT;
	}
	return st.findings ? DLS_EXIT_FINDINGS : DLS_EXIT_OK;
}

static int run(int argc, char **argv, bool record)
{
	struct watch_cmd w = { .cmd = record ? "record" : "watch",
			       .record = record,
			       .quiet = record,
			       .hang_secs = 10,
			       .o = { .stop = &stop_requested } };
	int ret = watch_parse(argc, argv, &w), trace_fd = -1;

	if (ret < 0)
		ret = watch_targets(&w);
	if (ret < 0 && w.job_slurm) {
		cliopt__stop_on_signals(&stop_requested);
		ret = watch_slurm__run(w.cmd, w.job_slurm, argc - 1, argv + 1, w.out_path,
				       &stop_requested);
	}
	if (ret < 0)
		trace_fd = watch_open_trace(&w, &ret);
	if (ret < 0)
		ret = watch_stream(&w, trace_fd);
	free(w.o.pids);
	return ret;
}

int cmd_watch(int argc, char **argv)
{
	return run(argc, argv, false);
}

int cmd_record(int argc, char **argv)
{
	return run(argc, argv, true);
}
