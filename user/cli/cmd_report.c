// SPDX-License-Identifier: GPL-2.0
/*
 * dlscope report: one Markdown file for a bug report. The facts come from dlscope's own
 * commands (check and stacks, run as children with --json, so the report says exactly what they
 * say) or from a trace; report.c writes them out.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <gnu/libc-version.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "account.h"
#include "cliopt.h"
#include "commands.h"
#include "corecmd.h"
#include "event.h"
#include "job.h"
#include "outfile.h"
#include "output.h"
#include "procfs.h"
#include "report.h"
#include "runprog.h"
#include "slurm_tasks.h"
#include "report_trace.h"
#include "target.h"

extern char **environ;

/* --redact, --svg, --limit and --job are long only: -r, -s, -l, -j mean others elsewhere. */
static const struct cliopt_def report_defs[] = {
	{ .name = "pid",
	  .letter = 'p',
	  .arg = "PID",
	  .value = CLIOPT_PID,
	  .help = "a process (as an operand; a comma list \"1,2\" for several)" },
	{ .name = "output",
	  .letter = 'o',
	  .arg = "FILE",
	  .value = CLIOPT_FILE,
	  .help = "write there (default: standard output)" },
	{ .name = "svg",
	  .val = 's',
	  .help = "also draw the runtimes' library graph (libs --dot --roles, collisions in red) "
		  "with graphviz into FILE.svg" },
	{ .name = "redact",
	  .val = 'r',
	  .help = "replace home directories, user names, host names and IP addresses, one "
		  "placeholder per value, everywhere" },
	{ .name = "limit", .val = 'l', .arg = "CHARS", .help = "the size limit (default 65536)" },
	{ .name = "job",
	  .val = 'j',
	  .arg = "PID",
	  .value = CLIOPT_PID,
	  .help = "a multi-rank job, named by any member's PID, or a Slurm job by its id "
		  "(slurm:JOBID), read on each of its nodes" },
	COREOPT_DEFS,
	{},
};

const struct cliopt_cmd report_cli = {
	.name = "report",
	.usage = "report [OPTIONS] PID...\n"
		 "report [OPTIONS] --job PID | --job slurm:JOBID[.STEP]\n"
		 "report [OPTIONS] TRACE.jsonl\n"
		 "report [OPTIONS] CORE | --coredump MATCH\n"
		 "report [OPTIONS] -- COMMAND [ARGS...]",
	.about =
		"Write one Markdown file to paste into a bug report (a GitHub issue): what was\n"
		"inspected and when, the environment, the runtimes (duplicates first, with their\n"
		"packages), the findings with evidence, why and fix, the stacks of the threads that\n"
		"matter, a timeline from a trace, and the commands that reproduce the capture.\n"
		"It stays under GitHub's 65,536-character limit; what does not fit goes to a\n"
		"companion file, named in the report.\n",
	.opts = report_defs,
	.after =
		"Exit status: 0 written, 2 usage error, 3 nothing could be inspected or written.\n",
	.takes_command = true,
	.operands = CLIOPT_OP_PID | CLIOPT_OP_FILE,
};

/* Run dlscope itself with @argv (after its name); its standard output, or NULL. */
static char *run_self(char *const *argv, int *status)
{
	size_t n = 0;
	char **args, *out;

	while (argv[n])
		n++;
	args = calloc(n + 2, sizeof(*args));
	if (!args)
		return NULL;
	args[0] = "dlscope";
	memcpy(args + 1, argv, n * sizeof(*args));
	out = runprog__capture("/proc/self/exe", args, false, NULL, status);
	free(args);
	return out;
}

static json_t *self_json(char *const *argv, int *code)
{
	int status = 0;
	char *out = run_self(argv, &status);
	json_t *doc = out ? json_loads(out, 0, NULL) : NULL;

	free(out);
	*code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return doc;
}

static void os_release(char *buf, size_t len)
{
	char text[4096], *p;

	buf[0] = '\0';
	if (proc__read_small("/etc/os-release", text, sizeof(text)) <= 0 ||
	    !(p = strstr(text, "PRETTY_NAME=")))
		return;
	p += strlen("PRETTY_NAME=");
	if (*p == '"')
		p++;
	snprintf(buf, len, "%.*s", (int)strcspn(p, "\"\n"), p);
}

static void cpus_allowed(pid_t pid, char *buf, size_t len)
{
	if (proc__status_field(pid, 0, "Cpus_allowed_list", buf, len))
		buf[0] = '\0';
}

/* The host's facts, and those of the first process inspected. */
static json_t *environment(pid_t pid, const json_t *stacks)
{
	struct utsname u;
	char distro[256], cpus[64], allowed[256] = "";
	const json_t *py = NULL;
	json_t *env;

	uname(&u);
	os_release(distro, sizeof(distro));
	snprintf(cpus, sizeof(cpus), "%ld online", sysconf(_SC_NPROCESSORS_ONLN));
	if (pid > 0)
		cpus_allowed(pid, allowed, sizeof(allowed));
	if (json_is_array(stacks))
		py = json_object_get(json_array_get(stacks, 0), "python");
	env = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kernel", u.release, "glibc",
			gnu_get_libc_version(), "distribution", distro, "cpus", cpus,
			"cpus_allowed", allowed);
	if (env && json_is_object(py) && json_is_string(json_object_get(py, "version"))) {
		char text[300];

		snprintf(text, sizeof(text), "%s (%s)",
			 json_string_value(json_object_get(py, "version")),
			 json_string_value(json_object_get(py, "object")) ?: "?");
		json_object_set_new(env, "python", json_string(text));
	}
	return env;
}

static char *joined_command(int argc, char **argv)
{
	size_t len = 0;
	char *s = NULL;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	for (int i = 0; i < argc; i++)
		fprintf(f, "%s%s", i ? " " : "", argv[i]);
	fclose(f);
	return s;
}

/* @argv as one shell line that runs it again: each argument quoted where the shell would split it. */
static char *shell_line(int argc, char *const *argv)
{
	size_t len = 0;
	char *s = NULL;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		fputs(i ? " " : "", f);
		if (*a && strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				    "0123456789_./:=@%+,-") == strlen(a)) {
			fputs(a, f);
			continue;
		}
		fputc('\'', f);
		for (; *a; a++)
			if (*a == '\'')
				fputs("'\\''", f);
			else
				fputc(*a, f);
		fputc('\'', f);
	}
	fclose(f);
	return s;
}

/* The command line process @pid runs, as a shell line (NULL when it cannot be read). */
static char *pid_command(const char *pid)
{
	char buf[8192], *argv[256], *end;
	long id = strtol(pid, &end, 10);
	int argc = 0;
	ssize_t n;

	if (*end || id <= 0 || (n = proc__read((pid_t)id, 0, "cmdline", buf, sizeof(buf))) <= 0)
		return NULL;
	for (char *p = buf; p < buf + n && argc < 256; p += strlen(p) + 1)
		argv[argc++] = p;
	return shell_line(argc, argv);
}

/* Adds @name (owned) to @users unless it is root or there is no room. */
static void add_user(char **users, size_t *nu, size_t maxu, char *name)
{
	if (name && strcmp(name, "root") && *nu < maxu - 1)
		users[(*nu)++] = name;
	else
		free(name);
}

/* Names --redact hides: this user, the sudo caller, the target's owner, every /home/NAME. */
static void redact_names(pid_t pid, const char *trace_host, char **users, size_t maxu, char **hosts,
			 size_t maxh)
{
	char host[256] = "", uid[64];
	size_t nu = 0, nh = 0;
	struct dirent *de;
	DIR *d;

	add_user(users, &nu, maxu, account__name(getuid()));
	if (getenv("SUDO_USER") && nu < maxu - 1)
		users[nu++] = strdup(getenv("SUDO_USER"));
	if (pid > 0 && !proc__status_field(pid, 0, "Uid", uid, sizeof(uid)))
		add_user(users, &nu, maxu, account__name((uid_t)strtoul(uid, NULL, 10)));
	if ((d = opendir("/home"))) {
		while ((de = readdir(d)) && nu < maxu - 1)
			if (de->d_name[0] != '.')
				users[nu++] = strdup(de->d_name);
		closedir(d);
	}
	if (!gethostname(host, sizeof(host) - 1) && host[0] && nh < maxh - 1)
		hosts[nh++] = strdup(host);
	if (trace_host && trace_host[0] && nh < maxh - 1)
		hosts[nh++] = strdup(trace_host);
	users[nu] = hosts[nh] = NULL;
}

/* libs --dot --roles PID, rendered by graphviz's dot into @svg. 0, or -1 with a warning. */
static int draw_graph(pid_t pid, const char *svg)
{
	char pidtext[16], why[512], *dot_argv[] = { "dot", "-Tsvg", NULL };
	int status = 0, in[2], out;
	char *graph;
	pid_t child;
	posix_spawn_file_actions_t fa;

	snprintf(pidtext, sizeof(pidtext), "%d", pid);
	graph = run_self((char *[]){ "libs", "--dot", "--roles", pidtext, NULL }, &status);
	if (!graph || !WIFEXITED(status) || WEXITSTATUS(status) || pipe2(in, O_CLOEXEC)) {
		free(graph);
		dls_warn("report: the library graph of process %d could not be read", pid);
		return -1;
	}
	/* dot writes to a file opened here: it would follow any link at the path itself. */
	out = outfile__open("report", svg, 0, why, sizeof(why));
	if (out < 0) {
		close(in[0]);
		close(in[1]);
		free(graph);
		dls_warn("report: no graph drawn: %s", why);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	if (posix_spawnp(&child, "dot", &fa, NULL, dot_argv, environ)) {
		posix_spawn_file_actions_destroy(&fa);
		close(in[0]);
		close(in[1]);
		close(out);
		unlink(svg);
		free(graph);
		dls_warn("report: no graph drawn: graphviz's dot is not installed");
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out);
	{
		/* dot may quit early: a broken pipe is its error to say, not a signal to us. */
		void (*old)(int) = signal(SIGPIPE, SIG_IGN);

		if (write(in[1], graph, strlen(graph)) != (ssize_t)strlen(graph))
			status = -1;
		signal(SIGPIPE, old);
	}
	close(in[1]);
	free(graph);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		dls_warn("report: graphviz's dot could not draw %s", svg);
		return -1;
	}
	return 0;
}

static int write_out(const char *path, const char *text, char *why, size_t whylen)
{
	FILE *f = path ? outfile__fopen("report", path, why, whylen) : stdout;

	if (!f)
		return -EIO;
	if (fputs(text, f) < 0 || fflush(f) || (path && fclose(f))) {
		snprintf(why, whylen, "cannot write %s: %s", path ? path : "standard output",
			 strerror(errno));
		return -EIO;
	}
	return 0;
}

/* What the command line asks of report. */
struct report_opts {
	const char *output, *job;
	bool redact, svg;
	unsigned long limit;
	struct cliopt cl;
	pid_t *pids; /* -p's and the operands' */
	size_t n_pids, cap_pids;
	char **pid_args; /* the same PIDs as text, for the commands run on them */
	int n_pid_args;
	const char *core;    /* a core file: the operand, or --coredump's copy */
	struct core_opts co; /* --exe, --coredump, --ignore-build-id */
};

/* What a report is made of, and its title. */
struct report_run {
	struct report_in in;
	struct from_trace tr;
	char why[512], title[512], captured[64], companion[4096], svgpath[4096];
	char *invocation, *command;
	pid_t first_pid; /* the process --svg draws and the environment is read of */
};

/* A source failed: "dlscope: report: WHY" follows. Otherwise 0 or an exit status. */
#define REPORT_FAIL (-1)

/* The options into @o: -1 to go on, or the exit status (after one line, or the help). */
static int report_parse(int argc, char **argv, struct report_opts *o)
{
	char *end;
	int c, code;

	cliopt__init(&o->cl, &report_cli, argc, argv);
	while ((c = cliopt__next(&o->cl)) != -1) {
		const char *optarg = o->cl.arg;

		if (core_opts__take(&o->co, c, optarg))
			continue;
		switch (c) {
		case 'p':
			code = cliopt__pids("report", optarg, &o->pids, &o->n_pids, &o->cap_pids);
			if (code)
				return code;
			break;
		case 'o': o->output = optarg; break;
		case 'r': o->redact = true; break;
		case 's': o->svg = true; break;
		case 'l':
			o->limit = strtoul(optarg, &end, 10);
			if (*end || o->limit < 1024)
				return cliopt__usage(
					"report",
					"--limit takes a number of characters (at least "
					"1024), not '%s'",
					optarg);
			break;
		case 'j': o->job = optarg; break;
		case 'h': return cliopt__help(&report_cli);
		default: return DLS_EXIT_USAGE;
		}
	}
	return -1;
}

/*
 * The operands: a trace (one operand that is a file), a core, or PIDs ("1,2" too), each of which
 * must exist, into @o->pid_args. -1 to go on, or the exit status after one line.
 */
static int report_targets(struct report_opts *o)
{
	const struct cliopt *cl = &o->cl;
	struct stat st;
	int code;

	if (cl->command && (!cl->command[0] || cl->n_ops || o->n_pids || o->job))
		return cliopt__usage(
			"report",
			!cl->command[0] ?
				"no command after --" :
				"-- COMMAND runs a command: no PID, trace or --job with it");
	/* A core file (the operand, --coredump MATCH), read as a process. */
	code = core_opts__path(&o->co, cl, NULL, cl->command || o->n_pids || o->job, &o->core);
	if (code)
		return code;
	if (o->core || cl->command ||
	    (cl->n_ops == 1 && !o->n_pids && !stat(cl->ops[0], &st) && S_ISREG(st.st_mode)))
		return -1;
	for (int i = 0; i < cl->n_ops; i++) {
		/* A word like a path is a trace that cannot be read, not a bad PID. */
		if (cl->n_ops == 1 && !o->n_pids && strpbrk(cl->ops[i], "./")) {
			dls_err("report: cannot read %s: %s", cl->ops[i],
				stat(cl->ops[i], &st) ? strerror(errno) : "not a regular file");
			return DLS_EXIT_INSPECT;
		}
		code = cliopt__pids("report", cl->ops[i], &o->pids, &o->n_pids, &o->cap_pids);
		if (code)
			return code;
	}
	/* Every PID is in the report or none is: a gone one is no silent omission. */
	for (size_t i = 0; i < o->n_pids; i++) {
		if (proc__gone(o->pids[i], 0)) {
			dls_err("report: no process with PID %d", o->pids[i]);
			return DLS_EXIT_INSPECT;
		}
	}
	o->pid_args = calloc(o->n_pids + 1, sizeof(*o->pid_args));
	for (size_t i = 0; o->pid_args && i < o->n_pids; i++)
		if (asprintf(&o->pid_args[o->n_pid_args], "%d", o->pids[i]) > 0)
			o->n_pid_args++;
	if (!o->pid_args || o->n_pid_args != (int)o->n_pids) {
		dls_err("report: out of memory");
		return DLS_EXIT_INSPECT;
	}
	return -1;
}

/* How to reproduce a Slurm job's report: a rank's command line, run under srun. */
static void reproduce_slurm(const struct report_opts *o, struct report_in *in)
{
	const json_t *procs = json_object_get(in->check, "processes");
	const char *cmd = json_string_value(json_object_get(json_array_get(procs, 0), "cmdline"));

	if (cmd && *cmd) {
		json_array_append_new(
			in->reproduce,
			json_string("# the job's ranks ran, under srun on every node:"));
		json_array_append_new(in->reproduce, json_sprintf("# %s", cmd));
		json_array_append_new(
			in->reproduce,
			json_string("# then, once it shows the problem, from any node:"));
	}
	json_array_append_new(in->reproduce, json_sprintf("dlscope report --job %s", o->job));
}

/*
 * --job PID or slurm:JOBID: check --job and stacks --job of it; the launcher's command line to
 * reproduce.
 */
static int report_job(const struct report_opts *o, struct report_run *r)
{
	struct report_in *in = &r->in;
	const char *launcher;
	bool slurm = !strncmp(o->job, "slurm:", 6);
	char role[48];
	struct job *j;
	long jobid;
	pid_t pid = 0;
	int code, step;

	if (o->cl.n_ops || o->n_pid_args || (!slurm && parse_pid(o->job, &pid)))
		return cliopt__usage("report",
				     "--job takes one process ID or slurm:JOBID and nothing else");
	/* A PID in no job is an error, as in check --job and stacks --job: no report. */
	code = slurm ? 1 : slurm_tasks__job_of(pid, "report", &jobid, &step, role, sizeof(role));
	if (code < 0)
		return DLS_EXIT_INSPECT;
	if (!code && job__find(pid, &j, r->why, sizeof(r->why))) {
		dls_err("report: --job: %s", r->why);
		return DLS_EXIT_INSPECT;
	}
	if (!code)
		job__free(j);
	in->check =
		self_json((char *[]){ "check", "--job", "--json", (char *)o->job, NULL }, &code);
	in->stacks =
		self_json((char *[]){ "stacks", "--job", "--json", (char *)o->job, NULL }, &code);
	if (!in->check) {
		snprintf(r->why, sizeof(r->why), "job %s could not be checked", o->job);
		return REPORT_FAIL;
	}
	/* A Slurm job's ranks may run on other hosts: no PID of this one to read. */
	r->first_pid = slurm ? 0 : pid;
	snprintf(
		r->title, sizeof(r->title), "%s%s (%s)",
		slurm ? "Slurm job " : "the job of process ", slurm ? o->job + 6 : o->job,
		json_string_value(json_object_get(json_object_get(in->check, "job"), "description")) ?:
			"");
	if (json_object_get(json_object_get(in->check, "job"), "slurm")) {
		reproduce_slurm(o, in);
		return 0;
	}
	/* The launcher's command line, not a PID of this machine. */
	launcher = json_string_value(json_object_get(
		json_object_get(json_object_get(in->check, "job"), "launcher"), "cmdline"));
	if (launcher && *launcher) {
		json_array_append_new(in->reproduce, json_string("# the job's launcher ran:"));
		json_array_append_new(in->reproduce, json_sprintf("%s &", launcher));
		json_array_append_new(in->reproduce,
				      json_string("# then, once it shows the problem:"));
		json_array_append_new(in->reproduce, json_string("dlscope report --job $!"));
	} else {
		json_array_append_new(in->reproduce,
				      json_sprintf("dlscope report --job %s", o->job));
	}
	return 0;
}

/* -- COMMAND: run it under check to its end. */
static int report_command(const struct report_opts *o, struct report_run *r)
{
	int n_cmd = o->cl.argc - (int)(o->cl.command - o->cl.argv), code;
	char **args = calloc((size_t)n_cmd + 4, sizeof(*args));
	char *cmd = joined_command(n_cmd, o->cl.command), *line;

	if (!args || !cmd) {
		free(args);
		free(cmd);
		return REPORT_FAIL;
	}
	args[0] = "check";
	args[1] = "--json";
	args[2] = "--";
	for (int i = 0; i < n_cmd; i++)
		args[3 + i] = o->cl.command[i];
	r->in.check = self_json(args, &code);
	free(args);
	/* A command that never ran (no such file, not executable) is no report of "no findings":
	 * check's own reason, as watch and record give it. */
	if (!json_array_size(json_object_get(r->in.check, "processes"))) {
		const char *e = json_string_value(
			json_array_get(json_object_get(r->in.check, "errors"), 0));

		if (e && !strncmp(e, "check: ", 7))
			e += 7;
		snprintf(r->why, sizeof(r->why), "%s",
			 e ? e : "the command could not be run under check");
		free(cmd);
		return REPORT_FAIL;
	}
	snprintf(r->title, sizeof(r->title), "command");
	r->in.title_code = cmd;
	line = shell_line(n_cmd, o->cl.command);
	json_array_append_new(r->in.reproduce, json_sprintf("dlscope report -- %s", line ?: cmd));
	json_array_append_new(r->in.reproduce,
			      json_sprintf("dlscope record -o trace.jsonl -- %s", line ?: cmd));
	free(line);
	r->command = cmd; /* the title's, freed at the end */
	return 0;
}

/* A core file: check and stacks on it, as on a process, once its files are known. */
static int report_core(const struct report_opts *o, struct report_run *r)
{
	const struct core_opts *co = &o->co;
	char *args[8];
	json_t *doc, *proc;
	int code;

	if ((code = core_opts__check(o->core, co)))
		return code;
	core_opts__argv(co, "stacks", o->core, args);
	doc = self_json(args, &code);
	core_opts__argv(co, "check", o->core, args);
	r->in.check = self_json(args, &code);
	if (!r->in.check || !doc) {
		json_decref(doc);
		snprintf(r->why, sizeof(r->why),
			 "core file %s could not be read (run 'dlscope stacks %s' to see why)",
			 co->label, co->label);
		return REPORT_FAIL;
	}
	/* stacks --json: {"processes": [PROCESS]}, as for a PID. */
	proc = json_array_get(json_object_get(doc, "processes"), 0);
	r->in.stacks = json_array();
	if (proc)
		json_array_append(r->in.stacks, proc);
	snprintf(r->title, sizeof(r->title),
		 co->coredump ? "systemd-coredump's core of %s (%s)" : "core file %s (%s)",
		 co->coredump ? co->coredump : o->core,
		 json_string_value(json_object_get(proc, "comm")) ?: "?");
	json_decref(doc);
	json_array_append_new(r->in.reproduce, json_sprintf("dlscope check %s", co->label));
	json_array_append_new(r->in.reproduce, json_sprintf("dlscope stacks %s", co->label));
	return 0;
}

/* A trace: its processes as check TRACE reads them, and its timeline. */
static int report_trace(const char *path, struct report_run *r)
{
	if (report_trace__read(path, &r->tr, r->why, sizeof(r->why)))
		return REPORT_FAIL;
	r->in.check = r->tr.check;
	r->in.timeline = r->tr.timeline;
	snprintf(r->title, sizeof(r->title), "trace %s", path);
	json_array_append_new(r->in.reproduce, json_sprintf("dlscope ui --replay %s", path));
	json_array_append_new(r->in.reproduce,
			      json_sprintf("dlscope export --perfetto %s -o trace.json", path));
	return 0;
}

/*
 * A PID means nothing on another machine: the command line each process runs, started again,
 * then the report of it ($! the process just started).
 */
static void reproduce_pids(json_t *reproduce, char **pid_args, int n_pid_args)
{
	for (int i = 0; i < n_pid_args; i++) {
		char *line = pid_command(pid_args[i]);

		if (!line) {
			json_array_append_new(reproduce,
					      json_sprintf("dlscope report %s  # its command line "
							   "could not be read",
							   pid_args[i]));
			continue;
		}
		json_array_append_new(reproduce,
				      json_sprintf("# process %s ran (from its directory):",
						   pid_args[i]));
		json_array_append_new(reproduce, json_sprintf("%s &", line));
		json_array_append_new(reproduce, json_string("# then, once it shows the problem:"));
		json_array_append_new(reproduce, json_string("dlscope report $!"));
		json_array_append_new(reproduce, json_string("# or, from its start:"));
		json_array_append_new(reproduce,
				      json_sprintf("dlscope record -o trace.jsonl -- %s", line));
		free(line);
	}
}

/* PIDs: check of them all, stacks of each. */
static int report_pids(const struct report_opts *o, struct report_run *r)
{
	char **args = calloc((size_t)o->n_pid_args + 3, sizeof(*args)), *list;
	int code;

	parse_pid(o->pid_args[0], &r->first_pid);
	if (!args)
		return REPORT_FAIL;
	args[0] = "check";
	args[1] = "--json";
	for (int i = 0; i < o->n_pid_args; i++)
		args[2 + i] = o->pid_args[i];
	r->in.check = self_json(args, &code);
	free(args);
	if (!r->in.check || !json_array_size(json_object_get(r->in.check, "processes"))) {
		snprintf(r->why, sizeof(r->why),
			 "no process could be inspected (run 'dlscope check %s' to see why)",
			 o->pid_args[0]);
		return REPORT_FAIL;
	}
	r->in.stacks = json_array();
	for (int i = 0; i < o->n_pid_args; i++) {
		json_t *doc =
			self_json((char *[]){ "stacks", "--json", o->pid_args[i], NULL }, &code);
		/* stacks --json: {"processes": [PROCESS]}, none when it could not be read. */
		json_t *proc = json_array_get(json_object_get(doc, "processes"), 0);

		if (proc)
			json_array_append(r->in.stacks, proc);
		json_decref(doc);
	}
	list = joined_command(o->n_pid_args, o->pid_args);
	if (o->n_pid_args == 1)
		snprintf(
			r->title, sizeof(r->title), "process %s (%s)", list ? list : "",
			json_string_value(json_object_get(json_array_get(json_object_get(r->in.check, "processes"), 0), "comm")) ?:
				"?");
	else
		snprintf(r->title, sizeof(r->title), "processes %s", list ? list : "");
	reproduce_pids(r->in.reproduce, o->pid_args, o->n_pid_args);
	free(list);
	return 0;
}

/* The facts of what the command line names, into @r. */
static int report_gather(const struct report_opts *o, struct report_run *r)
{
	if (o->job)
		return report_job(o, r);
	if (o->cl.command)
		return report_command(o, r);
	if (o->core)
		return report_core(o, r);
	if (!o->n_pid_args && o->cl.n_ops == 1)
		return report_trace(o->cl.ops[0], r);
	if (o->n_pid_args)
		return report_pids(o, r);
	return cliopt__usage("report",
			     "name what to report on: PID..., --job PID, -- COMMAND or a trace");
}

/* @path without its ".md", then @suffix: FILE.svg, FILE.extra.md beside FILE.md. */
static void beside_output(char *buf, size_t len, const char *path, const char *suffix)
{
	size_t n = strlen(path);

	snprintf(buf, len, "%.*s%s", (int)(n > 3 && !strcmp(path + n - 3, ".md") ? n - 3 : n), path,
		 suffix);
}

/* --redact: @md and @extra with the names of this machine, its users and the trace's hosts hidden. */
static int report_redact(const struct report_run *r, char **md, char **extra)
{
	char *users[64] = { 0 }, *hosts[64] = { 0 }, *r1, *r2 = NULL;
	struct redact_hints h = { (const char *const *)hosts, (const char *const *)users };
	int ret = 0;

	redact_names(r->first_pid, r->tr.host, users, 64, hosts, 64);
	/* A merged trace's hosts too, as many as the list holds. */
	for (size_t i = 0, n = 0; i < json_array_size(r->tr.hosts); i++) {
		while (hosts[n])
			n++;
		if (n < 63)
			hosts[n] = strdup(json_string_value(json_array_get(r->tr.hosts, i)));
	}
	r1 = report__redact(*md, &h);
	if (*extra)
		r2 = report__redact(*extra, &h);
	if (!r1 || (*extra && !r2)) {
		free(r1);
		free(r2);
		ret = -ENOMEM;
	} else {
		free(*md);
		free(*extra);
		*md = r1;
		*extra = r2;
	}
	for (size_t i = 0; users[i]; i++)
		free(users[i]);
	for (size_t i = 0; hosts[i]; i++)
		free(hosts[i]);
	return ret;
}

/* The graph (--svg), then the report and its companion, written. */
static int report_finish(const struct report_opts *o, struct report_run *r)
{
	char *md = NULL, *extra = NULL;
	int ret = REPORT_FAIL;

	if (o->svg && r->first_pid > 0) {
		beside_output(r->svgpath, sizeof(r->svgpath), o->output ?: "dlscope-report",
			      ".svg");
		if (!draw_graph(r->first_pid, r->svgpath))
			r->in.svg = r->svgpath;
	} else if (o->svg) {
		dls_warn("report: --svg draws a live process's graph; there is none here");
	}
	r->in.env = r->tr.env ? r->tr.env : environment(r->first_pid, r->in.stacks);
	r->in.title = r->title;
	r->in.invocation = r->invocation ? r->invocation : "dlscope report";
	r->in.captured = r->captured;
	r->in.companion = r->companion;
	if (report__write(&r->in, o->limit, &md, &extra) ||
	    (o->redact && report_redact(r, &md, &extra))) {
		snprintf(r->why, sizeof(r->why), "out of memory");
		goto out;
	}
	if (write_out(o->output, md, r->why, sizeof(r->why)) ||
	    (extra && write_out(r->companion, extra, r->why, sizeof(r->why))))
		goto out;
	if (extra)
		dls_warn(
			"report: %zu characters did not fit the %lu-character limit: they are in %s",
			strlen(extra), o->limit, r->companion);
	ret = DLS_EXIT_OK;
out:
	free(md);
	free(extra);
	return ret;
}

int cmd_report(int argc, char **argv)
{
	struct report_opts o = { .limit = REPORT_LIMIT };
	struct report_run r = { .in = { .version = DLSCOPE_VERSION } };
	time_t now = time(NULL);
	int ret = report_parse(argc, argv, &o);

	if (ret < 0)
		ret = report_targets(&o);
	if (ret >= 0)
		goto out;
	r.invocation = joined_command(argc + 1, argv - 1);
	strftime(r.captured, sizeof(r.captured), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	beside_output(r.companion, sizeof(r.companion), o.output ?: "dlscope-report", ".extra.md");
	r.in.reproduce = json_array();
	ret = report_gather(&o, &r);
	if (!ret)
		ret = report_finish(&o, &r);
	if (ret == REPORT_FAIL) {
		dls_err("report: %s", r.why[0] ? r.why : "out of memory");
		ret = DLS_EXIT_INSPECT;
	}
	free(r.invocation);
	free(r.command);
	json_decref(r.in.check);
	json_decref(r.in.stacks);
	json_decref(r.in.env);
	json_decref(r.in.timeline);
	json_decref(r.in.reproduce);
	json_decref(r.tr.hosts);
out:
	core_opts__done(&o.co);
	free(o.pids);
	for (int i = 0; i < o.n_pid_args; i++)
		free(o.pid_args[i]);
	free(o.pid_args);
	return ret;
}
