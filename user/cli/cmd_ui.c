// SPDX-License-Identifier: GPL-2.0
/* dlscope ui: the TUI over a live collector, a recorded trace, or a snapshot without root. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cliopt.h"
#include "commands.h"
#include "outfile.h"
#include "output.h"
#include "target.h"
#include "tui.h"
#include "watch.h"

#define EVENT_RING 100000

static void ui_usage(FILE *f)
{
	fprintf(f,
		"Usage: dlscope ui [OPTIONS] PID...\n"
		"       dlscope ui [OPTIONS] -- COMMAND [ARGS...]\n"
		"       dlscope ui [OPTIONS] --job PID\n"
		"       dlscope ui --replay FILE\n"
		"       dlscope ui --snapshot PID...\n"
		"\n"
		"A terminal UI over everything dlscope sees: the process tree with ranks, each\n"
		"process's library graph with runtime roles and collisions, threads with what they\n"
		"wait for and their stacks, the live event stream, and the findings. Live mode\n"
		"needs root (eBPF); without root, -p PID falls back to a snapshot (libraries,\n"
		"findings, threads and stacks; no events). Press ? in the UI for the keys.\n"
		"\n"
		"  -p, --pid PID         this process (repeatable, a comma list, or operands)\n"
		"  -f, --follow          also the children they fork (live)\n"
		"      --job PID         every rank of the job PID belongs to, and ranks its\n"
		"                        launcher starts later (live; events show their rank)\n"
		"      --hot             (live) as in watch: a parallel region or OpenBLAS dispatch\n"
		"                        started inside dlopen (others are only counted), and\n"
		"                        OpenBLAS pool thread starts; every region pays a uprobe\n"
		"  -o, --output FILE     the command's stdout and stderr go there (default: a new\n"
		"                        file in $TMPDIR or /tmp), named on the status line; its\n"
		"                        stdin is /dev/null and it has no controlling terminal\n"
		"      --futex-ms MS     also every futex wait of at least MS ms, from the futex\n"
		"                        syscall tracepoints (they slow every futex call of the\n"
		"                        machine; off by default: a thread blocked inside dlopen\n"
		"                        is still found, by sampling, within 0.1 s)\n"
		"  -r, --replay FILE     replay a trace from 'dlscope record' (play, pause, seek),\n"
		"                        read as it plays; bad lines (a cut last line of a killed\n"
		"                        record) are left out and counted on the status line\n"
		"      --strict          with --replay: refuse a trace with a bad line\n"
		"      --snapshot       no events: what libs, check and stacks see, without root\n"
		"  -h, --help\n"
		"\n"
		"The NO_COLOR environment variable turns colours off.\n"
		"Exit status: 0 fine, 2 usage error (or a terminal too small), 3 could not inspect.\n");
}

/*
 * The command's stdio: stdin /dev/null (the UI owns the keyboard), stdout and stderr one file,
 * appended to, so that the two interleave as written and nothing can block the command (a
 * pipe the UI were slow to read would). @out_path, or a new file in $TMPDIR (its name in
 * @tmp). Returns 0, or -errno after one error line.
 */
static int open_command_output(const char *out_path, char *tmp, size_t tmplen, int stdio[3])
{
	const char *dir = getenv("TMPDIR");
	int fd;

	if (out_path) {
		char why[512];

		fd = outfile__open("ui", out_path, O_RDWR | O_APPEND, why, sizeof(why));
		if (fd < 0) {
			dls_err("ui: the command's output: %s", why);
			tmp[0] = '\0';
			return fd;
		}
	} else {
		snprintf(tmp, tmplen, "%s/dlscope-ui-XXXXXX.log", dir && *dir ? dir : "/tmp");
		fd = mkostemps(tmp, 4, O_APPEND | O_CLOEXEC);
	}
	if (fd < 0) {
		int err = -errno;

		dls_err("ui: cannot write the command's output to %s: %s",
			out_path ? out_path : tmp, strerror(errno));
		tmp[0] = '\0';
		return err;
	}
	stdio[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (stdio[0] < 0) {
		int err = -errno;

		dls_err("ui: cannot open /dev/null: %s", strerror(errno));
		close(fd);
		return err;
	}
	stdio[1] = stdio[2] = fd;
	return 0;
}

/* Say where the command's output is; a file of our own making with nothing in it goes. */
static void command_output_done(const struct ui *ui, bool ours)
{
	struct stat st;

	if (fstat(ui->cmd_out_fd, &st))
		return;
	if (st.st_size)
		fprintf(stderr, "dlscope: ui: the output of '%s' is in %s\n", ui->cmd_name,
			ui->cmd_out_path);
	else if (ours)
		unlink(ui->cmd_out_path);
}

int cmd_ui(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "follow", no_argument, NULL, 'f' },
		{ "job", required_argument, NULL, 'J' },
		{ "hot", no_argument, NULL, 'H' },
		{ "futex-ms", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		{ "replay", required_argument, NULL, 'r' },
		{ "snapshot", no_argument, NULL, 's' },
		{ "strict", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	/* futex_ms 0: no futex tracepoints unless asked, as in watch. */
	struct watch_opts o = { 0 };
	struct ui ui = { .src = SRC_LIVE, .cmd_out_fd = -1 };
	const char *replay_path = NULL, *out_path = NULL;
	char tmp_path[PATH_MAX] = "";
	int cmd_stdio[3] = { -1, -1, -1 };
	bool snapshot = false, fallback = false, strict = false;
	int c, ret = DLS_EXIT_USAGE;
	pid_t job_pid = 0;
	char why[512], warn[512];
	struct cliopt cl;

	/* --snapshot is long only: -s is --stats in the other commands. */
	cliopt__init(&cl, "ui", argc, argv, "p:fr:o:h", opts, true);
	while ((c = cliopt__next(&cl)) != -1) {
		const char *optarg = cl.arg;

		switch (c) {
		case 'p': {
			ret = cliopt__pids("ui", optarg, &o.pids, &o.n_pids);
			if (ret)
				goto out;
			ret = DLS_EXIT_USAGE;
			break;
		}
		case 'f': o.follow = true; break;
		case 'J':
			if (parse_pid(optarg, &job_pid)) {
				dls_err("ui: --job takes a process ID, not '%s'", optarg);
				goto out;
			}
			break;
		case 'H': o.hot = true; break;
		case 'F': {
			double v;

			if (cliopt__number(optarg, 3600000, true, &v)) {
				dls_err("ui: --futex-ms takes a whole number of milliseconds, not '%s'",
					optarg);
				goto out;
			}
			o.futex_ms = (unsigned int)v;
			break;
		}
		case 'o': out_path = optarg; break;
		case 'r': replay_path = optarg; break;
		case 's': snapshot = true; break;
		case 'S': strict = true; break;
		case 'h':
			ui_usage(stdout);
			ret = DLS_EXIT_OK;
			goto out;
		default: goto out;
		}
	}
	/* "dlscope ui --snapshot PID", like "dlscope stacks PID"; a command goes after "--". */
	ret = cliopt__pid_operands(&cl, &o.pids, &o.n_pids);
	if (ret)
		goto out;
	ret = DLS_EXIT_USAGE;
	if (cl.command && !cl.command[0]) {
		dls_err("ui: no command after --");
		goto out;
	}
	o.command = cl.command;
	if (job_pid && (replay_path || o.command || snapshot)) {
		dls_err("ui: --job watches a running job live: not with --replay, --snapshot or "
			"-- COMMAND");
		goto out;
	}
	if (job_pid) {
		ret = watch_job_targets("ui", job_pid, &o);
		if (ret)
			goto out;
		ret = DLS_EXIT_USAGE;
	}
	if (replay_path && (o.n_pids || o.command || snapshot)) {
		dls_err("ui: --replay FILE shows a recorded trace; it takes no -p, --snapshot or "
			"command");
		goto out;
	}
	if (!replay_path && !o.n_pids && !o.command) {
		dls_err("ui: nothing to show: give -p PID, --job PID, -- COMMAND or --replay FILE");
		goto out;
	}
	if (out_path && !o.command) {
		dls_err("ui: -o FILE takes the output of a command: it needs -- COMMAND");
		goto out;
	}
	if (snapshot && o.command) {
		dls_err("ui: --snapshot needs running processes (-p PID), not a command");
		goto out;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		dls_err("ui: needs a terminal (stdin and stdout); for scripts use libs, check, "
			"stacks or watch");
		goto out;
	}
	ret = DLS_EXIT_INSPECT;
	ui.m = model__new(EVENT_RING);
	if (!ui.m) {
		dls_err("ui: out of memory");
		goto out;
	}
	if (replay_path) {
		ui.src = SRC_REPLAY;
		if (replay__open(replay_path, strict, &ui.replay, why, sizeof(why))) {
			dls_err("ui: %s", why);
			goto out;
		}
		/* A killed recorder leaves its last line cut: the rest still replays. */
		if (ui.replay->skipped)
			ui__status(&ui, true,
				   "%zu bad line%s left out of %s (the first at line %zu; "
				   "--strict refuses such a trace)",
				   ui.replay->skipped, ui.replay->skipped == 1 ? "" : "s",
				   replay_path, ui.replay->first_skipped);
	} else if (!snapshot && geteuid() != 0) {
		if (o.command) {
			dls_err("ui: live mode needs root (CAP_BPF, CAP_PERFMON) to run a command under "
				"watch; without root, 'dlscope ui --snapshot -p PID' shows a running "
				"process");
			goto out;
		}
		snapshot = true;
		fallback = true;
	}
	if (snapshot)
		ui.src = SRC_SNAPSHOT;
	/* The -p targets are read before the screen starts: a wrong PID is one plain line. */
	for (size_t i = 0; i < o.n_pids && !replay_path; i++) {
		if (snapshot__take(ui.m, o.pids[i], true, why, sizeof(why), warn, sizeof(warn))) {
			dls_err("ui: %s", why);
			goto out;
		}
		if (warn[0])
			ui__status(&ui, true, "%s", warn);
	}
	ui.snap_pids = o.pids;
	ui.n_snap_pids = o.n_pids;
	if (fallback)
		ui__status(&ui, true,
			   "not root, so no live events: a snapshot instead (libraries, "
			   "findings, threads, stacks)");
	else if (ui.src == SRC_SNAPSHOT && !ui.status[0])
		ui__status(&ui, false, "snapshot of %zu process%s: r takes a new one", o.n_pids,
			   o.n_pids == 1 ? "" : "es");
	if (o.command && open_command_output(out_path, tmp_path, sizeof(tmp_path), cmd_stdio))
		goto out;
	if (o.command) {
		o.command_stdio = cmd_stdio;
		ui.cmd_out_fd = cmd_stdio[1];
		ui.cmd_out_path = out_path ? out_path : tmp_path;
		ui.cmd_name = o.command[0];
		ui__status(&ui, false, "the output of '%s' goes to %s", o.command[0],
			   ui.cmd_out_path);
	}
	if (ui.src == SRC_LIVE)
		ui.live_opts = &o;
	ret = tui__run(&ui, why, sizeof(why));
	if (why[0])
		dls_err("ui: %s", why);
out:
	/* The command is gone once the collector is: its output file is complete. */
	live__free(ui.live);
	ui.live = NULL;
	if (ui.cmd_out_path)
		command_output_done(&ui, tmp_path[0]);
	for (int i = 0; i < 3; i++)
		if (cmd_stdio[i] >= 0 && (i == 0 || cmd_stdio[i] != cmd_stdio[i - 1]))
			close(cmd_stdio[i]);
	replay__free(ui.replay);
	model__free(ui.m);
	for (size_t i = 0; i < ui.n_collapsed; i++)
		free(ui.collapsed[i]);
	free(ui.collapsed);
	free(ui.popup_text);
	free(o.pids);
	return ret;
}
