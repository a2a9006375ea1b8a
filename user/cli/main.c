// SPDX-License-Identifier: GPL-2.0
/* dlscope: a live inspector for the native libraries, runtimes and locks of Linux processes. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cachefile.h"
#include "commands.h"
#include "objcache.h"
#include "output.h"
#include "termsafe.h"

static const struct command commands[] = {
	{ "libs", cmd_libs, "the library graph of live processes, with runtime roles" },
	{ "check", cmd_check, "find runtime collisions in live processes or a command's run" },
	{ "lint", cmd_lint, "the object-level checks on files and directory trees" },
	{ "stacks", cmd_stacks,
	  "every thread's stack, the lock-wait graph and the deadlock verdict" },
	{ "watch", cmd_watch, "the eBPF event stream: loader calls, runtimes, GPU loads, live" },
	{ "record", cmd_record, "the event stream into a JSON Lines trace" },
	{ "agent", cmd_agent, "every process of the node, its findings for Prometheus and logs" },
	{ "ui", cmd_ui, "the terminal UI: processes, libraries, threads, events, findings" },
	{ "report", cmd_report, "one Markdown file for a bug report: findings, runtimes, stacks" },
	{ "export", cmd_export, "a recorded trace as Chrome trace-event JSON, for Perfetto" },
	{ "merge", cmd_merge, "several nodes' traces as one, on one clock, hosts kept apart" },
	{ "capture", cmd_capture, "a small core file of a live process, to attach to an issue" },
};

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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'dlscope COMMAND --help' describes each one.\n"
		   "\nExit status: 0 fine, 1 findings, 2 usage error, 3 could not inspect,\n"
		   "4 the command of 'check -- CMD' failed.\n");
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
	termsafe__guard_stdio();
	argc = take_no_cache(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return DLS_EXIT_USAGE;
	}
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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name)) {
			int ret = commands[i].run(argc - 1, argv + 1);

			/* Every usage error is one line, then where the whole story is. */
			if (ret == DLS_EXIT_USAGE)
				fprintf(stderr, "try 'dlscope %s --help'\n", argv[1]);
			return ret;
		}
	dls_err("unknown command '%s' (try 'dlscope --help')", argv[1]);
	return DLS_EXIT_USAGE;
}
