// SPDX-License-Identifier: GPL-2.0
/* dlscope capture: a small core file of a live process, to attach to an issue. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "cliopt.h"
#include "commands.h"
#include "outfile.h"
#include "output.h"
#include "procmaps.h"
#include "target.h"

static const struct cliopt_def capture_defs[] = {
	{ .name = "pid",
	  .letter = 'p',
	  .arg = "PID",
	  .value = CLIOPT_PID,
	  .help = "the process (or as the operand)" },
	{ .name = "output",
	  .letter = 'o',
	  .arg = "FILE",
	  .value = CLIOPT_FILE,
	  .help = "write the core there (required)" },
	{ .name = "full", .val = 'F', .help = "every readable mapping, as gcore writes it" },
	{ .name = "stats",
	  .letter = 's',
	  .help = "say how long the process was stopped, on standard error" },
	{},
};

const struct cliopt_cmd capture_cli = {
	.name = "capture",
	.usage = "capture [OPTIONS] -o FILE PID",
	.about = "Write an ELF core file of a live process, small enough to attach to an issue,\n"
		 "that gdb, eu-stack and 'dlscope stacks|libs|check FILE' read: every thread's\n"
		 "registers, the process's auxv and mapped files, and of its memory what the\n"
		 "stacks and the library graph need (each thread's stack from its stack pointer\n"
		 "up, the loader's and libc's writable data, the link maps, each object's first\n"
		 "page with its build-id, the vDSO); code and read-only data stay in the files\n"
		 "the core names. The threads are stopped (PTRACE_SEIZE) only while that memory\n"
		 "is copied, and run again before the file is written.\n",
	.opts = capture_defs,
	.after = "Exit status: 0 written, 2 usage error, 3 the process could not be read or the\n"
		 "file written.\n",
	.operands = CLIOPT_OP_PID,
};

/* Does @pid map a CPython interpreter (python3.11, libpython3.12.so.1.0)? */
static bool runs_python(pid_t pid)
{
	struct procmaps *m = procmaps__read(pid);
	bool py = false;

	for (size_t i = 0; m && i < m->n && !py; i++) {
		const char *base = m->maps[i].path ? strrchr(m->maps[i].path, '/') : NULL;

		py = base &&
		     (!strncmp(base + 1, "python", 6) || !strncmp(base + 1, "libpython", 9));
	}
	procmaps__free(m);
	return py;
}

struct capture_args {
	pid_t pid;
	const char *output;
	bool full, stats;
};

/* The command line into @a: -1 to go on, or the exit status (after --help, or one line). */
static int parse_args(int argc, char **argv, struct capture_args *a)
{
	pid_t *pids = NULL;
	size_t n_pids = 0, cap_pids = 0;
	struct cliopt cl;
	bool help = false;
	int c, err = 0;

	cliopt__init(&cl, &capture_cli, argc, argv);
	while (!err && (c = cliopt__next(&cl)) != -1) {
		switch (c) {
		case 'p': err = cliopt__pids("capture", cl.arg, &pids, &n_pids, &cap_pids); break;
		case 'o': a->output = cl.arg; break;
		case 'F': a->full = true; break;
		case 's': a->stats = true; break;
		case 'h':
			cliopt__help(&capture_cli);
			help = true;
			err = -1;
			break;
		default: err = DLS_EXIT_USAGE; break;
		}
	}
	err = err ?: cliopt__pid_operands(&cl, &pids, &n_pids, &cap_pids);
	if (!err && n_pids != 1)
		err = cliopt__usage("capture", "give one process ID");
	if (!err && !a->output)
		err = cliopt__usage("capture", "give the file to write with -o FILE");
	a->pid = n_pids ? pids[0] : 0;
	free(pids);
	return help ? DLS_EXIT_OK : err ? err : -1;
}

/* The core of @a's process in its file; 0, or an exit status after one line. */
static int write_file(const struct capture_args *a, struct capture_stats *st)
{
	struct target *t;
	struct stat sb;
	char why[1024];
	int fd, err;

	/* A process that cannot be read is said before any file is made. */
	if (target__open(a->pid, &t, why, sizeof(why))) {
		dls_err("%s", why);
		return DLS_EXIT_INSPECT;
	}
	target__free(t);
	fd = outfile__open("capture", a->output, 0, why, sizeof(why));
	if (fd < 0) {
		dls_err("%s", why);
		return DLS_EXIT_INSPECT;
	}
	err = capture__write(a->pid, fd, a->full, st, why, sizeof(why));
	/* What was written of a failed capture is no core: nothing is left to take for one. */
	if (err && !fstat(fd, &sb) && S_ISREG(sb.st_mode) && ftruncate(fd, 0))
		dls_warn("capture: cannot empty %s: %m", a->output);
	if (close(fd) && !err) {
		snprintf(why, sizeof(why), "cannot write %s: %m", a->output);
		err = -1;
	}
	if (err) {
		dls_err("%s", why);
		return DLS_EXIT_INSPECT;
	}
	return 0;
}

int cmd_capture(int argc, char **argv)
{
	struct capture_args a = { 0 };
	struct capture_stats st;
	int ret = parse_args(argc, argv, &a);

	if (ret >= 0)
		return ret;
	ret = write_file(&a, &st);
	if (ret || !a.stats)
		return ret;
	if (!a.full && runs_python(a.pid))
		fprintf(stderr,
			"dlscope: capture: process %d runs Python: its frames are in the heap, which "
			"a capture without --full leaves out; take it with --full for them\n",
			a.pid);
	fprintf(stderr,
		"dlscope: capture: process %d: %zu thread%s%s, stopped %.3f ms; %zu segments, "
		"%" PRIu64 " KiB of memory, %" PRIu64 " KiB written to %s\n",
		a.pid, st.threads, st.threads == 1 ? "" : "s",
		st.left_out ? " (some left out)" : "", (double)st.stopped_ns / 1e6, st.segments,
		st.dumped / 1024, st.file_size / 1024, a.output);
	return DLS_EXIT_OK;
}
