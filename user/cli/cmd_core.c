// SPDX-License-Identifier: GPL-2.0
/*
 * The post-mortem side of the commands: `stacks CORE` gives every thread of a core file as
 * `stacks PID` gives a live one's, with the signal that ended the process, its faulting address
 * and the thread that took it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cliopt.h"
#include "commands.h"
#include "corecmd.h"
#include "corefile.h"
#include "elfobj.h"
#include "event.h"
#include "inspect.h"
#include "lockwait.h"
#include "output.h"
#include "pystate.h"
#include "target.h"
#include "threadtext.h"
#include "unwind.h"

/* One line on how the process ended, or that it did not: "thread 12 took SIGSEGV ...". */
static void crash_line(const struct corefile *c, char *buf, size_t len)
{
	const char *code = corefile__si_code_name(c->signo, c->si_code);
	char name[32];
	int n;

	if (!c->have_siginfo || !corefile__fatal_signal(c->signo)) {
		snprintf(buf, len, "no fatal signal: the core was taken from a running process");
		return;
	}
	n = snprintf(buf, len, "thread %d took %s", c->signal_tid,
		     event__signal_name(c->signo, name, sizeof(name)));
	if (code && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " (%s)", code);
	if (c->si_code > 0 && c->signo != SIGABRT && c->signo != SIGQUIT && n >= 0 &&
	    (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " at address 0x%" PRIx64, c->fault_addr);
	else if (c->si_code <= 0 && c->sender_pid && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " sent by process %d", c->sender_pid);
}

static bool is_crash(const struct corefile *c)
{
	return c->have_siginfo && corefile__fatal_signal(c->signo);
}

/* The interpreter's line, as stacks PID has it; nothing for other programs. */
static void print_python(int py_err, const char *py_why, const struct py_interp *pi,
			 const struct stacks *s)
{
	if (py_err == -ENOTSUP)
		printf("Python: no Python frames: %s\n", py_why);
	if (py_err)
		return;
	printf("Python %u.%u", pi->major, pi->minor);
	if (pi->micro_known)
		printf(".%u", pi->micro);
	printf(" (%s)", pi->object);
	if (!s->py)
		printf(": its state could not be read\n");
	else if (s->py->error)
		printf(": %s%s\n", s->py->error,
		       s->py->n ? "" :
				  "; only native frames are shown (a core without the heap: "
				  "take it with gcore or dlscope capture --full)");
	else
		printf(", %zu Python threads\n", s->py->n);
}

/* What thread @tid waited for when the core was taken, from the lock-wait graph; or NULL. */
static const struct thread_wait *wait_of(const struct lockwait_report *r, pid_t tid)
{
	for (size_t i = 0; r && i < r->n_threads; i++)
		if (r->threads[i].tid == tid)
			return r->threads[i].kind == WAIT_RUNNING ? NULL : &r->threads[i];
	return NULL;
}

/* The lock-wait graph and its verdicts, as stacks PID prints them. */
static void print_lockwait(const struct lockwait_report *r)
{
	printf("\nLock-wait graph:\n");
	if (!r || !r->n_edges)
		printf("    %s\n", r ? "no thread waits for another" :
				       "unknown (the core's threads could not be read)");
	for (size_t e = 0; r && e < r->n_edges; e++)
		printf("    %d -> %d  %s: %s\n", r->edges[e].from, r->edges[e].to,
		       wait_kind__id(r->edges[e].kind), r->edges[e].what);
	printf("\nVerdict:\n");
	for (size_t v = 0; r && v < r->n_verdicts; v++) {
		printf("    %s\n", r->verdicts[v]);
		if (r->remedies[v])
			printf("    What to do: %s\n", r->remedies[v]);
	}
}

static void print_text(const struct corefile *c, const char *exe, const struct stacks *s,
		       int py_err, const char *py_why, const struct py_interp *pi,
		       const struct lockwait_report *r, bool python_only)
{
	char crash[256];

	crash_line(c, crash, sizeof(crash));
	printf("Core file %s: process %d (%s)", c->path, c->pid, c->comm);
	if (c->args[0])
		printf(", \"%s\"", c->args);
	printf("\nExecutable: %s\n", exe ? exe : "unknown (give --exe PATH)");
	printf("%s%s\n", is_crash(c) ? "Crash: " : "", crash);
	print_python(py_err, py_why, pi, s);
	for (size_t i = 0; i < s->n; i++) {
		const struct thread_stack *st = &s->t[i];
		char name[32];

		/* --python: the threads that run Python, their Python frames only (stacks PID's). */
		if (python_only && !st->py)
			continue;
		printf("\nThread %zu (LWP %d", i + 1, st->tid);
		if (st->py && st->py->name)
			printf(", Python \"%s\"", st->py->name);
		putchar(')');
		if (is_crash(c) && st->tid == c->signal_tid)
			printf(": took %s", event__signal_name(c->signo, name, sizeof(name)));
		putchar('\n');
		if (wait_of(r, st->tid) && !(is_crash(c) && st->tid == c->signal_tid))
			printf("    wait: %s\n", wait_of(r, st->tid)->what);
		thread_stack__print(st, python_only, stdout);
		if (st->error && !python_only)
			printf("    (%s)\n", st->error);
	}
	print_lockwait(r);
}

static json_t *to_json(const struct corefile *c, const char *exe, const struct stacks *s,
		       const struct lockwait_report *r)
{
	json_t *threads = json_array(), *sig = json_null(), *edges = json_array(),
	       *cycles = json_array(), *verdicts;
	char name[32], crash[256];

	crash_line(c, crash, sizeof(crash));
	for (size_t i = 0; i < s->n; i++) {
		const struct thread_stack *st = &s->t[i];
		bool took = is_crash(c) && st->tid == c->signal_tid;
		const struct thread_wait *w = wait_of(r, st->tid);
		json_t *frames = json_array();
		char took_text[300];

		snprintf(took_text, sizeof(took_text), "nothing: it %s", strstr(crash, "took"));
		for (size_t k = 0; k < st->n_frames; k++)
			json_array_append_new(frames, stack_frame__to_json(&st->frames[k]));
		/* wait and waits_for as stacks PID has them, from what a core can tell; a core
		 * holds no thread name, state or wait channel: empty, as the schema allows. */
		json_array_append_new(
			threads,
			json_pack("{s:i, s:s, s:s, s:n, s:n, s:n, s:o, s:b, s:o, s:s, s:s, s:o}",
				  "tid", st->tid, "name", "", "state", "", "cpu", "wchan",
				  "syscall", "frames", frames, "truncated", st->truncated, "error",
				  st->error ? json_string(st->error) : json_null(), "wait",
				  took ? "signal" :
				  w    ? wait_kind__id(w->kind) :
					 "core",
				  "waits_for",
				  took ? took_text :
				  w    ? w->what :
					 "nothing another thread holds",
				  "python", thread_stack__python_json(s, st)));
	}
	if (is_crash(c)) {
		const char *code = corefile__si_code_name(c->signo, c->si_code);

		sig = json_pack("{s:i, s:s, s:i, s:o, s:o, s:i, s:s}", "number", c->signo, "name",
				event__signal_name(c->signo, name, sizeof(name)), "code",
				c->si_code, "code_name", code ? json_string(code) : json_null(),
				"address",
				c->si_code > 0 ?
					json_sprintf("0x%llx", (unsigned long long)c->fault_addr) :
					json_null(),
				"tid", c->signal_tid, "text", crash);
	}
	verdicts = json_pack("[{s:s, s:n}]", "text", crash, "remedy");
	lockwait_report__to_json(r, edges, cycles, verdicts);
	/* A process of the stacks document (stacks.schema.json), with the core it came from. */
	return json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:n, s:o, s:o, s:o, s:o, s:o, s:b}", "pid",
			 c->pid, "comm", c->comm, "exe", exe ? exe : "", "cmdline", c->args, "core",
			 c->path, "stopped_ms", 0, "python", "signal", sig, "threads", threads,
			 "edges", edges, "cycles", cycles, "verdicts", verdicts, "never_ends",
			 r && r->never_ends);
}

/* The executable to read: @given (which must be readable), else the one the core names. */
static int pick_exe(const struct corefile *c, const char *given, const char **exe)
{
	*exe = given;
	if (given) {
		if (access(given, R_OK)) {
			dls_err("cannot read the executable %s: %s", given, strerror(errno));
			return -errno;
		}
		return 0;
	}
	*exe = corefile__exe(c);
	if (*exe && access(*exe, R_OK)) {
		dls_warn("the core's executable %s is not here (%s); its frames are unnamed: "
			 "give --exe PATH",
			 *exe, strerror(errno));
		*exe = NULL;
	}
	return 0;
}

/* @path without the " (deleted)" the kernel adds to a file removed since it was mapped. */
static void live_path(const char *path, char *buf, size_t len)
{
	size_t n;

	snprintf(buf, len, "%s", path);
	n = strlen(buf);
	if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
		buf[n - 10] = '\0';
}

/*
 * How the file core @c mapped at @f compares with @path, the one here: 0 the same (or the core
 * does not hold its build-id), 1 changed (its build-id in @mem, the file's in @disk), -ENOENT
 * gone.
 */
static int file_changed(const struct corefile *c, const struct core_file_map *f, const char *path,
			char *mem, char *disk, size_t len)
{
	struct elf_object *o;
	const char *id;
	int ret;

	if (f->offset || !corefile__build_id_at(c, f->start, mem, len))
		return 0;
	o = elfobj__open(path);
	if (!o)
		return -ENOENT;
	id = elfobj__build_id(o);
	snprintf(disk, len, "%s", id ? id : "none");
	ret = !id || strcmp(id, mem);
	elfobj__free(o);
	return ret;
}

/*
 * Each file core @c mapped whose file here is not the one the process had: gone (a line each),
 * or changed (its build-id in the core's memory differs from the file's): refused in one line
 * naming the first, unless --ignore-build-id makes it a line each. 0, or an exit status.
 */
static int check_files(const struct corefile *c, const struct core_opts *o)
{
	char first[PATH_MAX + 600] = "", path[PATH_MAX], mem[256], disk[256];
	const char *exe = corefile__exe(c), *what;
	size_t changed = 0;

	for (size_t i = 0; i < c->n_files; i++) {
		const struct core_file_map *f = &c->files[i];
		/* --exe stands for the executable: it must be the file the process ran. */
		bool is_exe = exe && !strcmp(exe, f->path), seen = false;
		int r;

		for (size_t k = 0; k < i && !seen; k++)
			seen = !strcmp(c->files[k].path, f->path);
		if (is_exe && o->exe)
			snprintf(path, sizeof(path), "%s", o->exe);
		else
			live_path(f->path, path, sizeof(path));
		r = seen ? 0 : file_changed(c, f, path, mem, disk, sizeof(mem));
		if (r == -ENOENT && !is_exe)
			dls_warn("%s, mapped with build-id %s, is no longer here: its symbols and "
				 "findings are missing",
				 path, mem); /* the executable's: pick_exe said so */
		if (r != 1)
			continue;
		what = is_exe && o->exe ? "is not the executable the process ran" :
					  "changed since the core was written";
		if (o->any_build_id)
			dls_warn("%s %s (build-id %s in the core, %s on disk); read anyway "
				 "(--ignore-build-id): its symbols and findings may be wrong",
				 path, what, mem, disk);
		else if (!changed++)
			snprintf(first, sizeof(first),
				 "%s %s (build-id %s in the core, %s on disk)", path, what, mem,
				 disk);
	}
	if (!changed)
		return 0;
	if (changed > 1)
		snprintf(first + strlen(first), sizeof(first) - strlen(first),
			 ", and %zu other file%s too", changed - 1, changed > 2 ? "s" : "");
	dls_err("%s%s: %s; give --ignore-build-id to read it anyway",
		o->coredump ? "" : "core file ", o->label ? o->label : c->path, first);
	return DLS_EXIT_INSPECT;
}

int core_target__open(const char *path, const struct core_opts *o, struct corefile **cp,
		      struct target **tp)
{
	const char *exe;
	char why[512];
	int ret;

	*cp = NULL;
	*tp = NULL;
	if (corefile__open(path, cp, why, sizeof(why))) {
		dls_err("%s", why);
		return DLS_EXIT_INSPECT;
	}
	ret = pick_exe(*cp, o->exe, &exe) ? DLS_EXIT_INSPECT : check_files(*cp, o);
	if (!ret && !(*tp = target__from_core(*cp, exe))) {
		dls_err("out of memory");
		ret = DLS_EXIT_INSPECT;
	}
	if (ret) {
		corefile__free(*cp);
		*cp = NULL;
	}
	return ret;
}

int core_opts__check(const char *path, const struct core_opts *o)
{
	struct corefile *c;
	const char *exe;
	char why[512];
	int ret;

	if (corefile__open(path, &c, why, sizeof(why))) {
		dls_err("%s", why);
		return DLS_EXIT_INSPECT;
	}
	ret = pick_exe(c, o->exe, &exe) ? DLS_EXIT_INSPECT : check_files(c, o);
	corefile__free(c);
	return ret;
}

int cmd_stacks_core(const char *path, const struct core_opts *o, bool json, bool python_only,
		    unsigned int max_frames)
{
	struct corefile *c = NULL;
	struct stacks *s = NULL;
	struct inspection *in = NULL;
	struct target *t;
	struct py_interp pi;
	const char *exe;
	char why[512], py_why[512] = "", *name;
	int ret = DLS_EXIT_INSPECT, py_err;

	output__set_json(json);
	if (corefile__open(path, &c, why, sizeof(why))) {
		dls_err("%s", why);
		goto out;
	}
	/* --coredump's copy is gone once this is read: the core is named by its match. */
	if (o->coredump && o->label && (name = strdup(o->label))) {
		free(c->path);
		c->path = name;
	}
	if (pick_exe(c, o->exe, &exe) || check_files(c, o))
		goto out;
	if (stacks__from_core(c, exe, max_frames, &s, why, sizeof(why))) {
		dls_err("%s", why);
		goto out;
	}
	py_err = stacks__core_python(s, c, exe, max_frames, &pi, py_why, sizeof(py_why));
	if (py_err == -ENOMEM) {
		dls_err("out of memory reading the Python state of core file %s", path);
		goto out;
	}
	/* The lock-wait graph from the threads' registers and the core's memory, as check's. */
	t = target__from_core(c, exe);
	if (t && !(in = inspection__from_target(t)))
		target__free(t);
	if (in && inspection__read(in, INSPECT_LOCKWAIT, 1, why, sizeof(why)))
		dls_warn("no lock-wait graph: %s", why);
	if (json) {
		json_t *doc = json_pack("{s:s, s:[o*], s:o}", "dlscope", DLSCOPE_VERSION,
					"processes", to_json(c, exe, s, in ? in->lw : NULL),
					"errors", output__errors_json());

		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) < 0)
			dls_err("stacks: cannot write the JSON document");
		putchar('\n');
		json_decref(doc);
	} else if (python_only && (py_err || !s->py || !s->py->n)) {
		/* No Python frame to show is no answer of --python: say why, as stacks PID does. */
		dls_err("stacks: core file %s: %s", path,
			py_err == -ENOTSUP ? py_why :
			py_err		   ? "the process ran no Python interpreter" :
				 "no Python thread could be read (a core without the heap: take "
				 "it with gcore or dlscope capture --full)");
		goto out;
	} else {
		print_text(c, exe, s, py_err, py_why, &pi, in ? in->lw : NULL, python_only);
	}
	/* A deadlock or a wait that can never end, as stacks PID says it of the live process. */
	ret = in && in->lw && (in->lw->n_cycles || in->lw->never_ends) ? DLS_EXIT_FINDINGS :
									 DLS_EXIT_OK;
out:
	/* With --json a failure is a document too: no process, and why (as stacks PID). */
	if (json && ret == DLS_EXIT_INSPECT) {
		json_t *doc = json_pack("{s:s, s:[], s:o}", "dlscope", DLSCOPE_VERSION, "processes",
					"errors", output__errors_json());

		if (doc && json_dumpf(doc, stdout, JSON_INDENT(2)) >= 0)
			putchar('\n');
		json_decref(doc);
	}
	inspection__free(in);
	stacks__free(s);
	corefile__free(c);
	return ret;
}

/*
 * systemd-coredump's core for @match (a PID, "latest", or any coredumpctl match), copied by
 * `coredumpctl -o FILE dump MATCH` into a temporary file whose path goes in @path. Refused, in
 * one line, where systemd does not run or coredumpctl is missing. 0, or an exit status.
 */
static int coredump_fetch(const char *match, char *path, size_t len)
{
	const char *tool = "/usr/bin/coredumpctl";
	int fd, status;
	pid_t child;

	if (access("/run/systemd/system", F_OK)) {
		dls_err("--coredump %s: systemd is not running here (no /run/systemd/system), so "
			"there is no systemd-coredump store to read: give the core file itself",
			match);
		return DLS_EXIT_INSPECT;
	}
	if (access(tool, X_OK)) {
		dls_err("--coredump %s: coredumpctl is not installed (%s: %s)", match, tool,
			strerror(errno));
		return DLS_EXIT_INSPECT;
	}
	snprintf(path, len, "/tmp/dlscope-coredump-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0) {
		dls_err("--coredump %s: cannot make a temporary file: %s", match, strerror(errno));
		return DLS_EXIT_INSPECT;
	}
	close(fd);
	child = fork();
	if (child == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDOUT_FILENO), dup2(null, STDERR_FILENO);
		if (!strcmp(match, "latest"))
			execl(tool, tool, "-q", "-o", path, "dump", (char *)NULL);
		else
			execl(tool, tool, "-q", "-o", path, "dump", match, (char *)NULL);
		_exit(127);
	}
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		dls_err("--coredump %s: coredumpctl found no core to dump for it", match);
		unlink(path);
		return DLS_EXIT_INSPECT;
	}
	return 0;
}

bool core_opts__take(struct core_opts *o, int c, const char *arg)
{
	switch (c) {
	case COREOPT_EXE: o->exe = arg; return true;
	case COREOPT_COREDUMP: o->coredump = arg; return true;
	case COREOPT_IGNORE_BUILD_ID: o->any_build_id = true; return true;
	default: return false;
	}
}

int core_opts__path(struct core_opts *o, const struct cliopt *cl, const char *given, bool others,
		    const char **path)
{
	int ret;

	*path = NULL;
	if (o->coredump) {
		if (given || others || cl->n_ops)
			return cliopt__usage(cl->cmd, "--coredump goes alone");
		snprintf(o->coredump_label, sizeof(o->coredump_label), "--coredump %.60s",
			 o->coredump);
		o->label = o->coredump_label;
		ret = coredump_fetch(o->coredump, o->fetched, sizeof(o->fetched));
		if (ret)
			o->fetched[0] = '\0';
		*path = ret ? NULL : o->fetched;
		return ret;
	}
	*path = given ? given : others ? NULL : cliopt__core_operand(cl);
	if (*path && (others || cl->n_ops > !given))
		return cliopt__usage(cl->cmd, "give one core file, alone");
	if (!*path && (o->exe || o->any_build_id))
		return cliopt__usage(cl->cmd, "%s goes with a core file",
				     o->exe ? "--exe" : "--ignore-build-id");
	o->label = *path;
	return 0;
}

void core_opts__done(struct core_opts *o)
{
	if (o->fetched[0])
		unlink(o->fetched);
	o->fetched[0] = '\0';
}

void core_opts__argv(const struct core_opts *o, const char *cmd, const char *path, char **argv)
{
	size_t n = 0;

	argv[n++] = (char *)cmd;
	argv[n++] = "--json";
	argv[n++] = "--ignore-build-id";
	if (o->exe) {
		argv[n++] = "--exe";
		argv[n++] = (char *)o->exe;
	}
	argv[n++] = (char *)path;
	argv[n] = NULL;
}
