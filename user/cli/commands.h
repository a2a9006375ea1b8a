/* SPDX-License-Identifier: GPL-2.0 */
/* The subcommands: each takes argc/argv after its name and returns an enum dls_exit value. */
#ifndef DLSCOPE_COMMANDS_H
#define DLSCOPE_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "version.h"

struct cliopt_cmd;

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	const struct cliopt_cmd *cli; /* its options and help (cliopt.h) */
};

/* Each command's command line, in its cmd_*.c (record's beside watch's). */
extern const struct cliopt_cmd libs_cli, check_cli, lint_cli, stacks_cli, watch_cli, record_cli,
	agent_cli, ui_cli, report_cli, export_cli, merge_cli, capture_cli;

int cmd_libs(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_lint(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_agent(int argc, char **argv);
struct watch_opts;
/*
 * --job PID of watch, record and ui: the launcher and every rank of the job PID belongs to
 * appended to @o's PIDs, and followed. Returns 0, or an exit status after one line.
 */
int watch_job_targets(const char *cmd, pid_t pid, struct watch_opts *o);
/*
 * The options of watch, record and ui that say what to follow live: -p, -f, --job, --hot and
 * --futex-ms, @c as cliopt__next() returned it. 0 when taken into @o (--job's PID into
 * @job_pid), 1 when @c is none of them, or the exit status after one line.
 */
int watch_live_option(const char *cmd, int c, const char *arg, struct watch_opts *o,
		      pid_t *job_pid);
int cmd_ui(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_capture(int argc, char **argv);

/*
 * check TRACE.jsonl: the findings recorded in a trace, by process (host and PID in a merged
 * trace), those @selected keeps (NULL: all); DLS_EXIT_FINDINGS when one is at or above @fail_on.
 */
int check__trace(const char *path, bool json, int fail_on,
		 bool (*selected)(const void *ctx, const char *id), const void *ctx);
/*
 * The document of check TRACE --json (docs/check-schema.md): each process with its name, host,
 * rank, runtime inventory (runtimes__from_loaded, the rule of a live check) and findings (those
 * @selected keeps); with @all every process seen, else those with a finding. NULL, with @why.
 */
struct json_t;
struct json_t *check__trace_doc(const char *path, bool all,
				bool (*selected)(const void *ctx, const char *id), const void *ctx,
				char *why, size_t whylen);

#endif
