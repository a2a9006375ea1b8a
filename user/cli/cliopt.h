/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one command-line grammar of every command: options anywhere before "--" (GNU order),
 * "--opt=value" and "--opt value", "--" ends the options (and starts the command of check,
 * watch, record, ui and report; for the others what follows is operands). Errors are one line,
 * "dlscope: CMD: reason"; main() adds "try 'dlscope CMD --help'" to every usage error (exit 2).
 */
#ifndef DLSCOPE_CLIOPT_H
#define DLSCOPE_CLIOPT_H

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#define CLIOPT_ERR (-2)

/*
 * ^C, kill and a closed terminal (SIGINT, SIGTERM, SIGHUP) set *@flag: the run ends with its
 * summary. One flag per process (watch's, record's, agent's).
 */
void cliopt__stop_on_signals(volatile sig_atomic_t *flag);

struct cliopt {
	const char *cmd;
	int argc;
	char **argv;
	char shortopts[64];
	const struct option *longopts;
	bool takes_command;
	int end;	 /* the index of the "--" that ends the options, or argc */
	const char *arg; /* the value of the option cliopt__next() returned */
	/* After the last cliopt__next(): the operands, and the command after "--" (NULL: none). */
	char **ops;
	int n_ops;
	char **command;
};

/* @shortopts as getopt's, with no leading '+' or ':'. */
void cliopt__init(struct cliopt *c, const char *cmd, int argc, char **argv, const char *shortopts,
		  const struct option *longopts, bool takes_command);
/* The next option's value, -1 at the end of the options, or CLIOPT_ERR after one line. */
int cliopt__next(struct cliopt *c);
/* "dlscope: CMD: reason" on stderr; returns DLS_EXIT_USAGE. */
int cliopt__usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * A PID or a comma list of them ("1,2") appended to @pids (@n of them, room for @cap); 0, or
 * DLS_EXIT_USAGE after "dlscope: CMD: 'x' is not a process ID", or DLS_EXIT_INSPECT when out
 * of memory.
 */
int cliopt__pids(const char *cmd, const char *s, pid_t **pids, size_t *n, size_t *cap);
/* The operands of @c, each a PID or a comma list, appended to @pids (as cliopt__pids). */
int cliopt__pid_operands(const struct cliopt *c, pid_t **pids, size_t *n, size_t *cap);

/*
 * An option's number: above 0 and at most @max, whole when @whole ("0.5" ms of a futex wait
 * would be 0, which means off). 0, or -EINVAL: the caller names the option in its error.
 */
int cliopt__number(const char *s, double max, bool whole, double *out);

/*
 * --fanout N of a Slurm job's fan-in tree (2 to 100000: one would be a tree of no width) into
 * *@out. 0, or the usage status after one line.
 */
int cliopt__fanout(const char *cmd, const char *s, unsigned int *out);

/*
 * The operand of @c that names a core file (an ELF ET_CORE file, not a number): NULL when there
 * is none, or when there is more than one operand.
 */
const char *cliopt__core_operand(const struct cliopt *c);

/*
 * The document of the --json commands that list processes: {"dlscope": VERSION, "processes":
 * @procs (taken; NULL fails), "errors": [message...]}, indented, then a newline, on stdout.
 * 0, or -EIO.
 */
struct json_t;
int cliopt__print_processes(struct json_t *procs);

/*
 * Whether execvp(@file) could run: a path that is an executable file, or a name found so in
 * $PATH. 0, or -errno (ENOENT, EACCES, EISDIR) as execvp would fail.
 */
int cliopt__runnable(const char *file);

#endif
