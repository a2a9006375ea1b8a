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
#include "permission.h"
#include "target.h"
#include "tui.h"
#include "watch.h"

#define EVENT_RING 100000

/* --snapshot is long only: -s is --stats in the other commands. */
static const struct cliopt_def ui_defs[] = {
	{ .name = "pid",
	  .letter = 'p',
	  .arg = "PID",
	  .value = CLIOPT_PID,
	  .help = "this process (repeatable, a comma list, or operands)" },
	{ .name = "follow", .letter = 'f', .help = "also the children they fork (live)" },
	{ .name = "job",
	  .val = 'J',
	  .arg = "PID",
	  .value = CLIOPT_PID,
	  .help = "every rank of the job PID belongs to, and ranks its launcher starts later "
		  "(live; events show their rank)" },
	{ .name = "hot",
	  .val = 'H',
	  .help = "(live) as in watch: a parallel region or OpenBLAS dispatch started inside "
		  "dlopen (others are only counted), and OpenBLAS pool thread starts; every region "
		  "pays a uprobe" },
	{ .name = "dlsym",
	  .val = 'Y',
	  .help = "(live) as in watch: each dlsym and dlvsym call with its result (a probe on "
		  "their return: some 10 us per call)" },
	{ .name = "output",
	  .letter = 'o',
	  .arg = "FILE",
	  .value = CLIOPT_FILE,
	  .help = "the command's stdout and stderr go there (default: a new file in $TMPDIR or "
		  "/tmp), named on the status line; its stdin is /dev/null and it has no "
		  "controlling terminal" },
	{ .name = "futex-ms",
	  .val = 'F',
	  .arg = "MS",
	  .help = "also every futex wait of at least MS ms, from the futex syscall tracepoints "
		  "(they slow every futex call of the machine; off by default: a thread blocked "
		  "inside dlopen is still found, by sampling, within 0.1 s)" },
	{ .name = "replay",
	  .letter = 'r',
	  .arg = "FILE",
	  .value = CLIOPT_FILE,
	  .help = "replay a trace from 'dlscope record' (play, pause, seek), read as it plays; bad "
		  "lines (a cut last line of a killed record) are left out and counted on the "
		  "status line" },
	{ .name = "strict", .val = 'S', .help = "with --replay: refuse a trace with a bad line" },
	{ .name = "snapshot",
	  .val = 's',
	  .help = "no events: what libs, check and stacks see, without root" },
	{},
};

const struct cliopt_cmd ui_cli = {
	.name = "ui",
	.usage = "ui [OPTIONS] PID...\n"
		 "ui [OPTIONS] -- COMMAND [ARGS...]\n"
		 "ui [OPTIONS] --job PID\n"
		 "ui --replay FILE\n"
		 "ui --snapshot PID...",
	.about =
		"A terminal UI over everything dlscope sees: the process tree with ranks, each\n"
		"process's library graph with runtime roles and collisions, threads with what they\n"
		"wait for and their stacks, the live event stream, and the findings. Live mode\n"
		"needs root (eBPF); without root, -p PID falls back to a snapshot (libraries,\n"
		"findings, threads and stacks; no events). Press ? in the UI for the keys.\n",
	.opts = ui_defs,
	.after =
		"The NO_COLOR environment variable turns colours off.\n"
		"\n"
		"Exit status: 0 fine, 2 usage error (or a terminal too small), 3 could not inspect.\n",
	.takes_command = true,
	.operands = CLIOPT_OP_PID,
};

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

/* What the command line of ui asks. */
struct ui_cmd {
	struct watch_opts o; /* futex_ms 0: no futex tracepoints unless asked, as in watch */
	const char *replay_path, *out_path;
	bool snapshot, strict;
	pid_t job_pid;
};

/* The options of ui but the live ones (watch_live_option). */
static int ui_option(struct ui_cmd *u, int c, const char *arg)
{
	switch (c) {
	case 'o': u->out_path = arg; return 0;
	case 'r': u->replay_path = arg; return 0;
	case 's': u->snapshot = true; return 0;
	case 'S': u->strict = true; return 0;
	case 'h': return cliopt__help(&ui_cli);
	default: return DLS_EXIT_USAGE;
	}
}

/* The options and operands into @u: -1 to go on, or the exit status (after one line, or help). */
static int ui_parse(int argc, char **argv, struct ui_cmd *u)
{
	struct cliopt cl;
	int c, ret;

	cliopt__init(&cl, &ui_cli, argc, argv);
	while ((c = cliopt__next(&cl)) != -1) {
		ret = watch_live_option("ui", c, cl.arg, &u->o, &u->job_pid);
		if (ret == 1)
			ret = ui_option(u, c, cl.arg);
		if (ret || c == 'h')
			return ret;
	}
	/* "dlscope ui --snapshot PID", like "dlscope stacks PID"; a command goes after "--". */
	ret = cliopt__pid_operands(&cl, &u->o.pids, &u->o.n_pids, &u->o.cap_pids);
	if (ret)
		return ret;
	if (cl.command && !cl.command[0]) {
		dls_err("ui: no command after --");
		return DLS_EXIT_USAGE;
	}
	/* A command that cannot run is an error now, not a screen about "dlscope (exited)". */
	if (cl.command && (ret = cliopt__runnable(cl.command[0]))) {
		dls_err("ui: cannot run '%s': %s", cl.command[0], strerror(-ret));
		return DLS_EXIT_INSPECT;
	}
	u->o.command = cl.command;
	return -1;
}

/* One usage error line, and its status. */
static int ui_usage_error(const char *msg)
{
	dls_err("ui: %s", msg);
	return DLS_EXIT_USAGE;
}

/* What to show, checked (on a terminal); --job's processes found. -1 to go on, or the status. */
static int ui_targets(struct ui_cmd *u)
{
	const struct watch_opts *o = &u->o;
	int ret;

	if (u->job_pid && (u->replay_path || o->command || u->snapshot))
		return ui_usage_error("--job watches a running job live: not with --replay, "
				      "--snapshot or -- COMMAND");
	if (u->job_pid) {
		ret = watch_job_targets("ui", u->job_pid, &u->o);
		if (ret)
			return ret;
	}
	if (u->replay_path && (o->n_pids || o->command || u->snapshot))
		return ui_usage_error("--replay FILE shows a recorded trace; it takes no -p, "
				      "--snapshot or command");
	if (!u->replay_path && !o->n_pids && !o->command)
		return ui_usage_error(
			"nothing to show: give -p PID, --job PID, -- COMMAND or --replay FILE");
	if (u->out_path && !o->command)
		return ui_usage_error("-o FILE takes the output of a command: it needs -- COMMAND");
	if (u->snapshot && o->command)
		return ui_usage_error("--snapshot needs running processes (-p PID), not a command");
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		return ui_usage_error("needs a terminal (stdin and stdout); for scripts use libs, "
				      "check, stacks or watch");
	return -1;
}

/*
 * The source: a replay, live, or a snapshot (asked, or without root instead of live, said by
 * @fallback). 0, or -1 after one line.
 */
static int ui_source(struct ui_cmd *u, struct ui *ui, bool *fallback)
{
	char why[512];

	if (u->replay_path) {
		ui->src = SRC_REPLAY;
		if (replay__open(u->replay_path, u->strict, &ui->replay, why, sizeof(why))) {
			dls_err("ui: %s", why);
			return -1;
		}
		/* A killed recorder leaves its last line cut: the rest still replays. */
		if (ui->replay->skipped)
			ui__status(ui, true,
				   "%zu bad line%s left out of %s (the first at line %zu; "
				   "--strict refuses such a trace)",
				   ui->replay->skipped, ui->replay->skipped == 1 ? "" : "s",
				   u->replay_path, ui->replay->first_skipped);
	} else if (!u->snapshot && permission__can_trace(why, sizeof(why))) {
		if (u->o.command) {
			dls_err("ui: live mode runs a command under watch: %s; without them, 'dlscope "
				"ui --snapshot -p PID' shows a running process",
				why);
			return -1;
		}
		u->snapshot = true;
		*fallback = true;
	}
	if (u->snapshot)
		ui->src = SRC_SNAPSHOT;
	return 0;
}

/* The -p targets are read before the screen starts: a wrong PID is one plain line. */
static int ui_snapshots(const struct ui_cmd *u, struct ui *ui, bool fallback)
{
	char why[512], warn[512];

	for (size_t i = 0; i < u->o.n_pids && !u->replay_path; i++) {
		if (snapshot__take(ui->m, u->o.pids[i], true, why, sizeof(why), warn,
				   sizeof(warn))) {
			dls_err("ui: %s", why);
			return -1;
		}
		if (warn[0])
			ui__status(ui, true, "%s", warn);
	}
	ui->snap_pids = u->o.pids;
	ui->n_snap_pids = u->o.n_pids;
	if (fallback)
		ui__status(ui, true,
			   "not root, so no live events: a snapshot instead (libraries, "
			   "findings, threads, stacks)");
	else if (ui->src == SRC_SNAPSHOT && !ui->status[0])
		ui__status(ui, false, "snapshot of %zu process%s: r takes a new one", u->o.n_pids,
			   u->o.n_pids == 1 ? "" : "es");
	return 0;
}

/* The model, the source and the command's output made ready for the screen: 0, or -1. */
static int ui_prepare(struct ui_cmd *u, struct ui *ui, char *tmp, size_t tmplen, int stdio[3])
{
	bool fallback = false;

	ui->m = model__new(EVENT_RING);
	if (!ui->m) {
		dls_err("ui: out of memory");
		return -1;
	}
	if (ui_source(u, ui, &fallback) || ui_snapshots(u, ui, fallback))
		return -1;
	if (u->o.command && open_command_output(u->out_path, tmp, tmplen, stdio))
		return -1;
	if (u->o.command) {
		u->o.command_stdio = stdio;
		ui->cmd_out_fd = stdio[1];
		ui->cmd_out_path = u->out_path ? u->out_path : tmp;
		ui->cmd_name = u->o.command[0];
		ui__status(ui, false, "the output of '%s' goes to %s", u->o.command[0],
			   ui->cmd_out_path);
	}
	if (ui->src == SRC_LIVE)
		ui->live_opts = &u->o;
	return 0;
}

int cmd_ui(int argc, char **argv)
{
	struct ui_cmd u = { 0 };
	struct ui ui = { .src = SRC_LIVE, .cmd_out_fd = -1 };
	char tmp_path[PATH_MAX] = "", why[512];
	int cmd_stdio[3] = { -1, -1, -1 };
	int ret = ui_parse(argc, argv, &u);

	if (ret < 0)
		ret = ui_targets(&u);
	if (ret < 0 && ui_prepare(&u, &ui, tmp_path, sizeof(tmp_path), cmd_stdio))
		ret = DLS_EXIT_INSPECT;
	if (ret < 0) {
		ret = tui__run(&ui, why, sizeof(why));
		if (why[0])
			dls_err("ui: %s", why);
	}
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
	free(u.o.pids);
	return ret;
}
