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
#include "target.h"

extern char **environ;

static void report_usage(FILE *f)
{
	fprintf(f,
		"Usage: dlscope report [OPTIONS] PID...\n"
		"       dlscope report [OPTIONS] --job PID\n"
		"       dlscope report [OPTIONS] TRACE.jsonl\n"
		"       dlscope report [OPTIONS] CORE | --coredump MATCH\n"
		"       dlscope report [OPTIONS] -- COMMAND [ARGS...]\n"
		"\n"
		"Write one Markdown file to paste into a bug report (a GitHub issue): what was\n"
		"inspected and when, the environment, the runtimes (duplicates first, with their\n"
		"packages), the findings with evidence, why and fix, the stacks of the threads that\n"
		"matter, a timeline from a trace, and the commands that reproduce the capture.\n"
		"It stays under GitHub's 65,536-character limit; what does not fit goes to a\n"
		"companion file, named in the report.\n"
		"\n"
		"  -p, --pid PID         a process (as an operand; a comma list \"1,2\" for several)\n"
		"  -o, --output FILE     write there (default: standard output)\n"
		"      --svg             also draw the runtimes' library graph (libs --dot --roles,\n"
		"                        collisions in red) with graphviz into FILE.svg\n"
		"      --redact          replace home directories, user names, host names and IP\n"
		"                        addresses, one placeholder per value, everywhere\n"
		"      --limit CHARS     the size limit (default 65536)\n"
		"      --job PID         a multi-rank job, named by any member's PID\n" COREOPT_USAGE
		"  -h, --help\n"
		"\n"
		"Exit status: 0 written, 2 usage error, 3 nothing could be inspected or written.\n");
}

/* Run dlscope itself with @argv (after its name); its standard output, or NULL. */
static char *run_self(char *const *argv, int *status)
{
	size_t n = 0, len = 0;
	char **args, *out = NULL;
	posix_spawn_file_actions_t fa;
	int pipefd[2], devnull;
	pid_t pid;
	FILE *f;
	char buf[65536];
	ssize_t r;

	while (argv[n])
		n++;
	args = calloc(n + 2, sizeof(*args));
	if (!args)
		return NULL;
	args[0] = "dlscope";
	memcpy(args + 1, argv, n * sizeof(*args));
	if (pipe2(pipefd, O_CLOEXEC)) {
		free(args);
		return NULL;
	}
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	if (devnull >= 0)
		posix_spawn_file_actions_adddup2(&fa, devnull, 2);
	if (posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ)) {
		posix_spawn_file_actions_destroy(&fa);
		close(pipefd[0]);
		close(pipefd[1]);
		if (devnull >= 0)
			close(devnull);
		free(args);
		return NULL;
	}
	free(args);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (devnull >= 0)
		close(devnull);
	f = open_memstream(&out, &len);
	while ((r = read(pipefd[0], buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
		if (r > 0 && f)
			fwrite(buf, 1, (size_t)r, f);
	close(pipefd[0]);
	if (f)
		fclose(f);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
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
	char path[64], text[8192], *p;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (proc__read_small(path, text, sizeof(text)) > 0 &&
	    (p = strstr(text, "Cpus_allowed_list:"))) {
		p += strlen("Cpus_allowed_list:");
		p += strspn(p, " \t");
		snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
	}
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

/* A trace: its header's host and a timeline; its processes as check TRACE reads them. */
struct from_trace {
	json_t *env, *check, *timeline;
	char host[256];
	json_t *hosts; /* a merged trace's host names (dlscope merge), for --redact */
};

/* A runtime role of a loaded record, in words: "GNU libgomp (GCC 12), OpenMP 5.1 arrived",
 * a front as what it forwards to ("front of /lib/.../libopenblas.so.0 arrived"). */
static bool runtime_arrival(const json_t *rec, char *text, size_t len)
{
	const json_t *r;
	size_t i;

	json_array_foreach (json_object_get(rec, "roles"), i, r) {
		const char *front = json_string_value(json_object_get(r, "front_of"));

		if (!json_is_true(json_object_get(r, "runtime")))
			continue;
		if (front)
			snprintf(text, len, "front of %s arrived: %s", front,
				 json_string_value(json_object_get(rec, "path")) ?: "?");
		else
			snprintf(text, len, "%s arrived: %s",
				 json_string_value(json_object_get(r, "label"))	       ?:
					 json_string_value(json_object_get(r, "name")) ?:
											 "runtime",
				 json_string_value(json_object_get(rec, "path")) ?: "?");
		return true;
	}
	return false;
}

static int read_trace(const char *path, struct from_trace *tr, char *why, size_t whylen)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t t0 = 0;
	bool header = false;

	if (!f) {
		snprintf(why, whylen, "cannot read %s: %s", path, strerror(errno));
		return -errno;
	}
	tr->timeline = json_array();
	while ((len = getline(&line, &cap, f)) > 0) {
		json_t *rec = json_loadb(line, (size_t)len, 0, NULL);
		const char *type = json_string_value(json_object_get(rec, "type"));
		double t = 0;
		char text[1024] = "";

		if (!header) {
			const char *fmt = json_string_value(json_object_get(rec, "format"));

			if (!type || strcmp(type, "header") || !fmt ||
			    strncmp(fmt, "dlscope-trace/", 14)) {
				snprintf(
					why, whylen,
					"%s is not a dlscope trace (its first line is no header; make "
					"one with 'dlscope record')",
					path);
				json_decref(rec);
				free(line);
				fclose(f);
				json_decref(tr->timeline);
				tr->timeline = NULL;
				return -EINVAL;
			}
			header = true;
			t0 = (uint64_t)json_integer_value(json_object_get(rec, "t0"));
			snprintf(tr->host, sizeof(tr->host), "%s",
				 json_string_value(json_object_get(rec, "host")) ?: "");
			/* A merged trace names its nodes' hosts in its inputs. */
			if (json_is_array(json_object_get(rec, "inputs"))) {
				const json_t *inp;
				size_t k;

				tr->hosts = json_array();
				json_array_foreach (json_object_get(rec, "inputs"), k, inp)
					if (json_is_string(json_object_get(inp, "hostname")))
						json_array_append(tr->hosts,
								  json_object_get(inp, "hostname"));
			}
			tr->env = json_pack("{s:s?, s:s?, s:s?}", "kernel",
					    json_string_value(json_object_get(rec, "kernel")),
					    "glibc",
					    json_string_value(json_object_get(rec, "glibc")),
					    "distribution", "");
			json_decref(rec);
			continue;
		}
		if (!type || !json_is_integer(json_object_get(rec, "pid"))) {
			json_decref(rec);
			continue;
		}
		t = (double)((uint64_t)json_integer_value(json_object_get(rec, "t")) - t0) / 1e9;
		if (!strcmp(type, "loaded")) {
			runtime_arrival(rec, text, sizeof(text));
		} else if (!strcmp(type, "finding")) {
			snprintf(text, sizeof(text), "finding %s: %s",
				 json_string_value(json_object_get(rec, "id")) ?: "?",
				 json_string_value(json_object_get(rec, "title")) ?: "");
		} else if (event_kind__parse(type) == EVENT_SIGNAL ||
			   event_kind__parse(type) == EVENT_EXEC ||
			   event_kind__parse(type) == EVENT_EXIT ||
			   event_kind__parse(type) == EVENT_GPU_LOAD) {
			/* A GPU module load in its runtime's terms (HIP's or CUDA's result name). */
			struct event ev;
			char err[128];

			if (!event__from_json(rec, &ev, err, sizeof(err))) {
				event__text(&ev, 0, text, sizeof(text));
				event__clear(&ev);
			}
		}
		if (text[0])
			json_array_append_new(tr->timeline,
					      json_pack("{s:f, s:O, s:s, s:O*}", "t", t, "pid",
							json_object_get(rec, "pid"), "text", text,
							"host", json_object_get(rec, "host")));
		json_decref(rec);
	}
	free(line);
	fclose(f);
	if (!header) {
		snprintf(why, whylen, "%s is empty, not a dlscope trace", path);
		json_decref(tr->timeline);
		tr->timeline = NULL;
		return -EINVAL;
	}
	/* The processes, their names, runtimes and findings: what check TRACE says of them. */
	tr->check = check__trace_doc(path, true, NULL, NULL, why, whylen);
	if (!tr->check) {
		json_decref(tr->timeline);
		tr->timeline = NULL;
		return -EINVAL;
	}
	return 0;
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
	char path[64], buf[8192], *argv[256];
	int argc = 0, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
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
	char host[256] = "", path[64], text[4096], *p;
	size_t nu = 0, nh = 0;
	struct dirent *de;
	DIR *d;

	add_user(users, &nu, maxu, account__name(getuid()));
	if (getenv("SUDO_USER") && nu < maxu - 1)
		users[nu++] = strdup(getenv("SUDO_USER"));
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (pid > 0 && proc__read_small(path, text, sizeof(text)) > 0 && (p = strstr(text, "Uid:")))
		add_user(users, &nu, maxu, account__name((uid_t)strtoul(p + 4, NULL, 10)));
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

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "redact", no_argument, NULL, 'r' },
		{ "limit", required_argument, NULL, 'l' },
		{ "job", required_argument, NULL, 'j' },
		{ "svg", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		COREOPT_LONGOPTS,
		{},
	};
	const char *output = NULL, *job = NULL;
	bool redact = false, svg = false;
	unsigned long limit = REPORT_LIMIT;
	struct report_in in = { .version = DLSCOPE_VERSION };
	struct from_trace tr = { 0 };
	char why[512] = "", title[512], captured[64], companion[4096], svgpath[4096], *invocation,
	     *md = NULL, *extra = NULL, *command = NULL;
	char *users[64] = { 0 }, *hosts[64] = { 0 };
	pid_t first_pid = 0;
	int c, code, ret = DLS_EXIT_INSPECT;
	time_t now = time(NULL);
	struct stat st;
	struct cliopt cl;
	pid_t *pids = NULL;
	size_t n_pids = 0;
	char **pid_args = NULL;
	int n_pid_args = 0;
	const char *optarg, *core = NULL;
	struct core_opts co = { 0 };

	/* --redact, --svg, --limit and --job are long only: -r, -s, -l, -j mean others elsewhere. */
	cliopt__init(&cl, "report", argc, argv, "p:o:h", opts, true);
	while ((c = cliopt__next(&cl)) != -1) {
		optarg = cl.arg;
		if (core_opts__take(&co, c, optarg))
			continue;
		switch (c) {
		case 'p':
			code = cliopt__pids("report", optarg, &pids, &n_pids);
			if (code) {
				free(pids);
				return code;
			}
			break;
		case 'o': output = optarg; break;
		case 'r': redact = true; break;
		case 's': svg = true; break;
		case 'l': {
			char *end;

			limit = strtoul(optarg, &end, 10);
			if (*end || limit < 1024) {
				free(pids);
				return cliopt__usage(
					"report",
					"--limit takes a number of characters (at least "
					"1024), not '%s'",
					optarg);
			}
			break;
		}
		case 'j': job = optarg; break;
		case 'h':
			free(pids);
			report_usage(stdout);
			return DLS_EXIT_OK;
		default: free(pids); return DLS_EXIT_USAGE;
		}
	}
	if (cl.command && (!cl.command[0] || cl.n_ops || n_pids || job)) {
		free(pids);
		return cliopt__usage(
			"report",
			!cl.command[0] ?
				"no command after --" :
				"-- COMMAND runs a command: no PID, trace or --job with it");
	}
	/* A core file (the operand, --coredump MATCH); a trace is one operand that is a file;
	 * otherwise the operands are PIDs ("1,2" too). */
	code = core_opts__path(&co, &cl, NULL, cl.command || n_pids || job, &core);
	if (code) {
		free(pids);
		return code;
	}
	if (!cl.command &&
	    !(cl.n_ops == 1 && !n_pids && !stat(cl.ops[0], &st) && S_ISREG(st.st_mode))) {
		for (int i = 0; i < cl.n_ops; i++) {
			/* A word like a path is a trace that cannot be read, not a bad PID. */
			if (cl.n_ops == 1 && !n_pids && strpbrk(cl.ops[i], "./")) {
				dls_err("report: cannot read %s: %s", cl.ops[i],
					stat(cl.ops[i], &st) ? strerror(errno) :
							       "not a regular file");
				free(pids);
				return DLS_EXIT_INSPECT;
			}
			code = cliopt__pids("report", cl.ops[i], &pids, &n_pids);
			if (code) {
				free(pids);
				return code;
			}
		}
		/* Every PID is in the report or none is: a gone one is no silent omission. */
		for (size_t i = 0; i < n_pids; i++) {
			char proc[32];

			snprintf(proc, sizeof(proc), "/proc/%d", pids[i]);
			if (access(proc, F_OK)) {
				dls_err("report: no process with PID %d", pids[i]);
				free(pids);
				return DLS_EXIT_INSPECT;
			}
		}
		pid_args = calloc(n_pids + 1, sizeof(*pid_args));
		for (size_t i = 0; pid_args && i < n_pids; i++)
			if (asprintf(&pid_args[n_pid_args], "%d", pids[i]) > 0)
				n_pid_args++;
		free(pids);
		if (!pid_args || n_pid_args != (int)n_pids) {
			dls_err("report: out of memory");
			for (int i = 0; pid_args && i < n_pid_args; i++)
				free(pid_args[i]);
			free(pid_args);
			return DLS_EXIT_INSPECT;
		}
	} else {
		free(pids);
	}
	invocation = joined_command(argc + 1, argv - 1);
	strftime(captured, sizeof(captured), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	if (output) {
		size_t n = strlen(output);

		snprintf(companion, sizeof(companion), "%.*s.extra.md",
			 (int)(n > 3 && !strcmp(output + n - 3, ".md") ? n - 3 : n), output);
	} else {
		snprintf(companion, sizeof(companion), "dlscope-report.extra.md");
	}
	in.reproduce = json_array();
	if (job) {
		pid_t pid;

		if (cl.n_ops || n_pid_args || parse_pid(job, &pid)) {
			cliopt__usage("report", "--job takes one process ID and nothing else");
			goto usage;
		}
		/* A PID in no job is an error, as in check --job and stacks --job: no report. */
		{
			struct job *j;

			if (job__find(pid, &j, why, sizeof(why))) {
				dls_err("report: --job: %s", why);
				ret = DLS_EXIT_INSPECT;
				goto out;
			}
			job__free(j);
		}
		in.check = self_json((char *[]){ "check", "--job", "--json", (char *)job, NULL },
				     &code);
		in.stacks = self_json((char *[]){ "stacks", "--job", "--json", (char *)job, NULL },
				      &code);
		if (!in.check) {
			snprintf(why, sizeof(why), "job of process %s could not be checked", job);
			goto fail;
		}
		first_pid = pid;
		snprintf(
			title, sizeof(title), "the job of process %s (%s)", job,
			json_string_value(json_object_get(json_object_get(in.check, "job"), "description")) ?:
				"");
		{
			/* The launcher's command line, not a PID of this machine. */
			const char *launcher = json_string_value(json_object_get(
				json_object_get(json_object_get(in.check, "job"), "launcher"),
				"cmdline"));

			if (launcher && *launcher) {
				json_array_append_new(in.reproduce,
						      json_string("# the job's launcher ran:"));
				json_array_append_new(in.reproduce, json_sprintf("%s &", launcher));
				json_array_append_new(
					in.reproduce,
					json_string("# then, once it shows the problem:"));
				json_array_append_new(in.reproduce,
						      json_string("dlscope report --job $!"));
			} else {
				json_array_append_new(in.reproduce,
						      json_sprintf("dlscope report --job %s", job));
			}
		}
	} else if (cl.command) {
		/* -- COMMAND: run it under check to its end. */
		int n_cmd = cl.argc - (int)(cl.command - cl.argv);
		char **args = calloc((size_t)n_cmd + 4, sizeof(*args));
		char *cmd = joined_command(n_cmd, cl.command);

		if (!args || !cmd) {
			free(args);
			free(cmd);
			goto fail;
		}
		args[0] = "check";
		args[1] = "--json";
		args[2] = "--";
		for (int i = 0; i < n_cmd; i++)
			args[3 + i] = cl.command[i];
		in.check = self_json(args, &code);
		free(args);
		if (!in.check) {
			snprintf(why, sizeof(why), "the command could not be run under check");
			free(cmd);
			goto fail;
		}
		snprintf(title, sizeof(title), "command");
		in.title_code = cmd;
		{
			char *line = shell_line(n_cmd, cl.command);

			json_array_append_new(in.reproduce,
					      json_sprintf("dlscope report -- %s", line ?: cmd));
			json_array_append_new(in.reproduce,
					      json_sprintf("dlscope record -o trace.jsonl -- %s",
							   line ?: cmd));
			free(line);
		}
		command = cmd; /* the title's, freed at the end */
	} else if (core) {
		/* A core file: check and stacks on it, as on a process, once its files are known. */
		char *args[8];
		json_t *doc;

		if ((ret = core_opts__check(core, &co)))
			goto out;
		ret = DLS_EXIT_INSPECT;
		core_opts__argv(&co, "stacks", core, args);
		doc = self_json(args, &code);
		core_opts__argv(&co, "check", core, args);
		in.check = self_json(args, &code);
		if (!in.check || !doc) {
			json_decref(doc);
			snprintf(
				why, sizeof(why),
				"core file %s could not be read (run 'dlscope stacks %s' to see why)",
				co.label, co.label);
			goto fail;
		}
		/* stacks --json: {"processes": [PROCESS]}, as for a PID. */
		json_t *proc = json_array_get(json_object_get(doc, "processes"), 0);

		in.stacks = json_array();
		if (proc)
			json_array_append(in.stacks, proc);
		snprintf(title, sizeof(title),
			 co.coredump ? "systemd-coredump's core of %s (%s)" : "core file %s (%s)",
			 co.coredump ? co.coredump : core,
			 json_string_value(json_object_get(proc, "comm")) ?: "?");
		json_decref(doc);
		json_array_append_new(in.reproduce, json_sprintf("dlscope check %s", co.label));
		json_array_append_new(in.reproduce, json_sprintf("dlscope stacks %s", co.label));
	} else if (!n_pid_args && cl.n_ops == 1) {
		if (read_trace(cl.ops[0], &tr, why, sizeof(why)))
			goto fail;
		in.check = tr.check;
		in.timeline = tr.timeline;
		snprintf(title, sizeof(title), "trace %s", cl.ops[0]);
		json_array_append_new(in.reproduce,
				      json_sprintf("dlscope ui --replay %s", cl.ops[0]));
		json_array_append_new(in.reproduce,
				      json_sprintf("dlscope export --perfetto %s -o trace.json",
						   cl.ops[0]));
	} else if (n_pid_args) {
		char **args = calloc((size_t)n_pid_args + 3, sizeof(*args));
		char *list;

		parse_pid(pid_args[0], &first_pid);
		if (!args)
			goto fail;
		args[0] = "check";
		args[1] = "--json";
		for (int i = 0; i < n_pid_args; i++)
			args[2 + i] = pid_args[i];
		in.check = self_json(args, &code);
		free(args);
		if (!in.check || !json_array_size(json_object_get(in.check, "processes"))) {
			snprintf(why, sizeof(why),
				 "no process could be inspected (run 'dlscope check "
				 "%s' to see why)",
				 pid_args[0]);
			goto fail;
		}
		in.stacks = json_array();
		for (int i = 0; i < n_pid_args; i++) {
			json_t *doc = self_json((char *[]){ "stacks", "--json", pid_args[i], NULL },
						&code);

			/* stacks --json: {"processes": [PROCESS]}, none when it could not be read. */
			json_t *proc = json_array_get(json_object_get(doc, "processes"), 0);

			if (proc)
				json_array_append(in.stacks, proc);
			json_decref(doc);
		}
		list = joined_command(n_pid_args, pid_args);
		if (n_pid_args == 1)
			snprintf(
				title, sizeof(title), "process %s (%s)", list ? list : "",
				json_string_value(json_object_get(json_array_get(json_object_get(in.check, "processes"), 0), "comm")) ?:
					"?");
		else
			snprintf(title, sizeof(title), "processes %s", list ? list : "");
		/*
		 * A PID means nothing on another machine: the command line each process runs,
		 * started again, then the report of it ($! the process just started).
		 */
		for (int i = 0; i < n_pid_args; i++) {
			char *line = pid_command(pid_args[i]);

			if (line) {
				json_array_append_new(
					in.reproduce,
					json_sprintf("# process %s ran (from its directory):",
						     pid_args[i]));
				json_array_append_new(in.reproduce, json_sprintf("%s &", line));
				json_array_append_new(
					in.reproduce,
					json_string("# then, once it shows the problem:"));
				json_array_append_new(in.reproduce,
						      json_string("dlscope report $!"));
				json_array_append_new(in.reproduce,
						      json_string("# or, from its start:"));
				json_array_append_new(
					in.reproduce,
					json_sprintf("dlscope record -o trace.jsonl -- %s", line));
			} else {
				json_array_append_new(
					in.reproduce,
					json_sprintf("dlscope report %s  # its command line "
						     "could not be read",
						     pid_args[i]));
			}
			free(line);
		}
		free(list);
	} else {
		cliopt__usage("report",
			      "name what to report on: PID..., --job PID, -- COMMAND or a "
			      "trace");
		goto usage;
	}
	if (svg && first_pid > 0) {
		size_t n = output ? strlen(output) : 0;

		snprintf(svgpath, sizeof(svgpath), "%.*s.svg",
			 output ? (int)(n > 3 && !strcmp(output + n - 3, ".md") ? n - 3 : n) : 14,
			 output ? output : "dlscope-report");
		if (!draw_graph(first_pid, svgpath))
			in.svg = svgpath;
	} else if (svg) {
		dls_warn("report: --svg draws a live process's graph; there is none here");
	}
	in.env = tr.env ? tr.env : environment(first_pid, in.stacks);
	in.title = title;
	in.invocation = invocation ? invocation : "dlscope report";
	in.captured = captured;
	in.companion = companion;
	if (report__write(&in, limit, &md, &extra)) {
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	if (redact) {
		struct redact_hints h = { (const char *const *)hosts, (const char *const *)users };
		char *r1, *r2 = NULL;

		redact_names(first_pid, tr.host, users, 64, hosts, 64);
		/* A merged trace's hosts too, as many as the list holds. */
		for (size_t i = 0, n = 0; i < json_array_size(tr.hosts); i++) {
			while (hosts[n])
				n++;
			if (n < 63)
				hosts[n] = strdup(json_string_value(json_array_get(tr.hosts, i)));
		}
		r1 = report__redact(md, &h);
		if (extra)
			r2 = report__redact(extra, &h);
		if (!r1 || (extra && !r2)) {
			free(r1);
			free(r2);
			snprintf(why, sizeof(why), "out of memory");
			goto fail;
		}
		free(md);
		free(extra);
		md = r1;
		extra = r2;
	}
	if (write_out(output, md, why, sizeof(why)) ||
	    (extra && write_out(companion, extra, why, sizeof(why))))
		goto fail;
	if (extra)
		dls_warn(
			"report: %zu characters did not fit the %lu-character limit: they are in %s",
			strlen(extra), limit, companion);
	ret = DLS_EXIT_OK;
	goto out;
usage:
	ret = DLS_EXIT_USAGE;
	goto out;
fail:
	dls_err("report: %s", why[0] ? why : "out of memory");
out:
	core_opts__done(&co);
	for (size_t i = 0; users[i]; i++)
		free(users[i]);
	for (size_t i = 0; hosts[i]; i++)
		free(hosts[i]);
	free(md);
	free(extra);
	free(invocation);
	free(command);
	json_decref(in.check);
	json_decref(in.stacks);
	json_decref(in.env);
	json_decref(in.timeline);
	json_decref(in.reproduce);
	json_decref(tr.hosts);
	for (int i = 0; i < n_pid_args; i++)
		free(pid_args[i]);
	free(pid_args);
	return ret;
}
