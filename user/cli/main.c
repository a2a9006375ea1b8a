// SPDX-License-Identifier: GPL-2.0
/* dlscope: a live inspector for the native libraries, runtimes and locks of Linux processes. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cachefile.h"
#include "cliopt.h"
#include "commands.h"
#include "objcache.h"
#include "output.h"
#include "termsafe.h"

static const struct command commands[] = {
	{ "libs", cmd_libs, "the library graph of live processes, with runtime roles", &libs_cli },
	{ "check", cmd_check, "find runtime collisions in live processes or a command's run",
	  &check_cli },
	{ "lint", cmd_lint, "the object-level checks on files and directory trees", &lint_cli },
	{ "stacks", cmd_stacks,
	  "every thread's stack, the lock-wait graph and the deadlock verdict", &stacks_cli },
	{ "watch", cmd_watch, "the eBPF event stream: loader calls, runtimes, GPU loads, live",
	  &watch_cli },
	{ "record", cmd_record, "the event stream into a JSON Lines trace", &record_cli },
	{ "agent", cmd_agent, "every process of the node, its findings for Prometheus and logs",
	  &agent_cli },
	{ "ui", cmd_ui, "the terminal UI: processes, libraries, threads, events, findings",
	  &ui_cli },
	{ "report", cmd_report, "one Markdown file for a bug report: findings, runtimes, stacks",
	  &report_cli },
	{ "export", cmd_export, "a recorded trace as Chrome trace-event JSON, for Perfetto",
	  &export_cli },
	{ "merge", cmd_merge, "several nodes' traces as one, on one clock, hosts kept apart",
	  &merge_cli },
	{ "capture", cmd_capture, "a small core file of a live process, to attach to an issue",
	  &capture_cli },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

#ifdef DLSCOPE_STATIC
#define BUILD_KIND " (static)"
/*
 * dlscope-static loads no shared object: one loaded into a static process brings a second glibc,
 * the host's, beside the one linked in. libdw's dlopen of libdebuginfod (linked with
 * --wrap=dlopen) fails here as when the library is not installed: no debuginfod lookups.
 */
void *__wrap_dlopen(const char *file, int mode);
void *__wrap_dlopen(const char *file, int mode)
{
	(void)file, (void)mode;
	return NULL;
}
#else
#define BUILD_KIND ""
#endif

static void usage(FILE *f)
{
	fprintf(f, "Usage: dlscope COMMAND [OPTIONS] ...\n\nCommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'dlscope COMMAND --help' describes each one.\n"
		   "\nExit status: 0 fine, 1 findings, 2 usage error, 3 could not inspect,\n"
		   "4 the command of 'check -- CMD' failed.\n");
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/*
 * For packagers and the shell, not in the usage: "help --man-options", the man page's OPTIONS
 * entries of every command (make docs splices them into docs/dlscope.1.md); "help --complete
 * [CMD]", the commands, or what CMD's options and operands are (dlscope-completion.bash).
 * Returns an exit status, or -1 when @argv is neither.
 */
static int help_generated(int argc, char **argv)
{
	const struct command *cmd;

	if (argc == 3 && !strcmp(argv[2], "--man-options")) {
		for (size_t i = 0; i < N_COMMANDS; i++)
			cliopt__print_man(commands[i].cli, stdout);
		return DLS_EXIT_OK;
	}
	if (argc < 3 || argc > 4 || strcmp(argv[2], "--complete"))
		return -1;
	if (argc == 3) {
		for (size_t i = 0; i < N_COMMANDS; i++)
			printf("%s\n", commands[i].name);
		return DLS_EXIT_OK;
	}
	cmd = find_command(argv[3]);
	if (!cmd) {
		dls_err("unknown command '%s' (try 'dlscope --help')", argv[3]);
		return DLS_EXIT_USAGE;
	}
	cliopt__print_complete(cmd->cli, stdout);
	return DLS_EXIT_OK;
}

/*
 * --no-cache, anywhere before a "--" (after which a command's own arguments begin), turns every
 * persistent cache off for any command (ELF analyses, symbol digests, dpkg's answers, debug
 * info, frames); DLSCOPE_CACHE=off does the same.
 */
static int take_no_cache(int argc, char **argv)
{
	bool off = false;
	int n = 0, i = 0;

	for (; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--no-cache"))
			off = true;
		else
			argv[n++] = argv[i];
	for (; i < argc; i++)
		argv[n++] = argv[i];
	argv[n] = NULL;
	if (!off) {
		cachefile__enable();
		objcache__enable();
	}
	return n;
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	int ret;

	termsafe__guard_stdio();
	argc = take_no_cache(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return DLS_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help") && (ret = help_generated(argc, argv)) >= 0)
		return ret;
	/* "dlscope help CMD" is "dlscope CMD --help". */
	if (!strcmp(argv[1], "help") && argc > 2) {
		argv[1] = argv[2];
		argv[2] = "--help";
		argc = 3;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return DLS_EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("dlscope %s%s\n", DLSCOPE_VERSION, BUILD_KIND);
		return DLS_EXIT_OK;
	}
	cmd = find_command(argv[1]);
	if (cmd) {
		ret = cmd->run(argc - 1, argv + 1);
		/* Every usage error is one line, then where the whole story is. */
		if (ret == DLS_EXIT_USAGE)
			fprintf(stderr, "try 'dlscope %s --help'\n", argv[1]);
		return ret;
	}
	dls_err("unknown command '%s' (try 'dlscope --help')", argv[1]);
	return DLS_EXIT_USAGE;
}
