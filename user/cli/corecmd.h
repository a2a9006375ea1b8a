/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The core-file side of libs, check, stacks and report (cmd_core.c): the options they share
 * (--exe, --coredump, --ignore-build-id), which core file a command line names, and the process
 * a core holds as a target, refused when a file it mapped changed since the core was written.
 */
#ifndef DLSCOPE_CORECMD_H
#define DLSCOPE_CORECMD_H

#include <getopt.h>
#include <stdbool.h>

struct cliopt;
struct corefile;
struct target;

/* Long options only, with values above any letter: none clashes with a command's own. */
enum {
	COREOPT_EXE = 0x200,
	COREOPT_COREDUMP,
	COREOPT_IGNORE_BUILD_ID,
};

/* Their entries of an option table (cliopt.h), the same in libs, check and report. */
#define COREOPT_DEFS                                                                                           \
	{ .name = "exe",                                                                                       \
	  .val = COREOPT_EXE,                                                                                  \
	  .arg = "PATH",                                                                                       \
	  .value = CLIOPT_FILE,                                                                                \
	  .help = "with a core: its executable, when it is no longer where the core's `NT_FILE` "              \
		  "note says" },                                                                               \
		{ .name = "coredump",                                                                          \
		  .val = COREOPT_COREDUMP,                                                                     \
		  .arg = "MATCH",                                                                              \
		  .help = "systemd-coredump's core of MATCH (a PID, `latest`, or a `coredumpctl` "             \
			  "match), read through `coredumpctl`, as in `stacks`" },                              \
	{                                                                                                      \
		.name = "ignore-build-id", .val = COREOPT_IGNORE_BUILD_ID,                                     \
		.help = "with a core: read it even when a file its process mapped has another "                \
			"build-id here (changed since: its symbols, frames and findings may be wrong), as in " \
			"`stacks`"                                                                             \
	}

struct core_opts {
	const char *exe;      /* --exe PATH, or NULL for the one the core names */
	const char *coredump; /* --coredump MATCH */
	bool any_build_id;    /* --ignore-build-id */
	/* What errors call the core (its path, or "--coredump MATCH"), and --coredump's copy. */
	const char *label;
	char coredump_label[80];
	char fetched[64];
};

/* Whether @c (of cliopt__next) is one of the core options: then taken into @o. */
bool core_opts__take(struct core_opts *o, int c, const char *arg);
/*
 * The core file @cl names: --coredump's, copied out of systemd-coredump's store now, else
 * @given (stacks --core FILE), else its one operand when that is a core file and @others (PIDs,
 * --job) is false; NULL in @path when none. 0, or an exit status after one line (a core with
 * other operands, --exe without a core, --coredump where systemd does not run).
 */
int core_opts__path(struct core_opts *o, const struct cliopt *cl, const char *given, bool others,
		    const char **path);
/* The end of a command: --coredump's copy removed. */
void core_opts__done(struct core_opts *o);
/*
 * Whether the files core @path mapped are those here: 0 after a line for each that is gone, or
 * an exit status after one line naming the first whose build-id differs (unless
 * --ignore-build-id, which makes it a line each and 0).
 */
int core_opts__check(const char *path, const struct core_opts *o);
/*
 * @argv (room for 8) for `dlscope CMD --json` on core @path as report runs it: the --exe of @o,
 * and --ignore-build-id (core_opts__check() has said what changed).
 */
void core_opts__argv(const struct core_opts *o, const char *cmd, const char *path, char **argv);

/*
 * The process core @path holds, as a target (target__from_core) for libs and check, after
 * core_opts__check(); 0, or the exit status after one line.
 */
int core_target__open(const char *path, const struct core_opts *o, struct corefile **c,
		      struct target **t);
/* stacks CORE: every thread of the core, its crash, its Python frames and lock-wait graph;
 * @python_only (text): the Python threads' Python frames. */
int cmd_stacks_core(const char *path, const struct core_opts *o, bool json, bool python_only,
		    unsigned int max_frames);

#endif
