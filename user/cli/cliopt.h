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
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#define CLIOPT_ERR (-2)

/*
 * ^C, kill and a closed terminal (SIGINT, SIGTERM, SIGHUP) set *@flag: the run ends with its
 * summary. One flag per process (watch's, record's, agent's).
 */
void cliopt__stop_on_signals(volatile sig_atomic_t *flag);

/*
 * What an option's value is, for the shell's completion: what it may offer after the option
 * (none after a number, a name or a match: no file or PID is it).
 */
enum cliopt_value {
	CLIOPT_NONE,
	CLIOPT_PID,
	CLIOPT_FILE,
	CLIOPT_DIR,
	CLIOPT_WORDS, /* one of ->word's, or a comma list of them */
};

/*
 * One option of a command: the one source of its parsing (getopt's tables), its --help line,
 * its entry in the man page's OPTIONS and its completion. Adding an option is adding an entry.
 */
struct cliopt_def {
	const char *name; /* the long option, without "--" */
	char letter;	  /* its short option, or 0: long only */
	/*
	 * What cliopt__next() returns for it when it has no letter: a letter that means something
	 * else as a short option of another command (-s, -j), or a value above 0xff.
	 */
	int val;
	const char *arg; /* the value's name (PID, FILE); NULL: it takes none */
	bool optional;	 /* the value only as "--name=value" (--roles[=KINDS]) */
	/* One text for --help and the man page, wrapped there; `code` is code in the man page. */
	const char *help;
	enum cliopt_value value;
	const char *(*word)(size_t i); /* CLIOPT_WORDS: the i-th word, NULL after the last */
	const char *only;	       /* NULL, or the one command of a shared table it is for */
	bool hidden; /* run by dlscope itself (srun --overlap's --job-node): no help, no completion */
};

/* What a command's operands are, for completion: a set of these. */
enum cliopt_operands {
	CLIOPT_OP_PID = 1,
	CLIOPT_OP_FILE = 2,
};

/* A command's command line: its options (-h, --help added to them) and the text around them. */
struct cliopt_cmd {
	const char *name;
	const char *usage; /* its forms, one a line, each after "dlscope " */
	/*
	 * The paragraphs between the forms and the options, and after the options (notes, exit
	 * status): a blank line between two, each wrapped to 80 columns when printed.
	 */
	const char *about;
	const struct cliopt_def *opts; /* ends with an entry without a name */
	const char *after;
	bool takes_command;    /* what follows "--" is a command, not operands */
	unsigned int operands; /* enum cliopt_operands */
};

#define CLIOPT_MAX 40 /* options in one command's table, --help included */

/* A number's digits in a help text: "(default " CLIOPT_STR(DEFAULT_X) ")". */
#define CLIOPT_STR_(x) #x
#define CLIOPT_STR(x) CLIOPT_STR_(x)

struct cliopt {
	const char *cmd;
	int argc;
	char **argv;
	char shortopts[2 * CLIOPT_MAX + 2];
	struct option longopts[CLIOPT_MAX + 1];
	bool takes_command;
	int end;	 /* the index of the "--" that ends the options, or argc */
	const char *arg; /* the value of the option cliopt__next() returned */
	/* After the last cliopt__next(): the operands, and the command after "--" (NULL: none). */
	char **ops;
	int n_ops;
	char **command;
};

/*
 * The option of @def after @d (NULL: the first), those for @def->name only, --help last; the
 * hidden ones too with @hidden_too. NULL after the last.
 */
const struct cliopt_def *cliopt__def_next(const struct cliopt_cmd *def, const struct cliopt_def *d,
					  bool hidden_too);
/* getopt's tables made from @def's. */
void cliopt__init(struct cliopt *c, const struct cliopt_cmd *def, int argc, char **argv);
/*
 * The next option's letter (or val), -1 at the end of the options, or CLIOPT_ERR after one line.
 * 'h' is --help: cliopt__help() prints it.
 */
int cliopt__next(struct cliopt *c);
/* CMD --help, on stdout; returns DLS_EXIT_OK. */
int cliopt__help(const struct cliopt_cmd *def);
/* The options of @def as the man page's OPTIONS gives them: "### CMD", an entry each. */
void cliopt__print_man(const struct cliopt_cmd *def, FILE *f);
/*
 * What the shell's completion needs of @def, a line each: "operands pid file", then
 * "--NAME -L|- none|required|optional KIND [WORD...]" per option (KIND: none, pid, file, dir,
 * words).
 */
void cliopt__print_complete(const struct cliopt_cmd *def, FILE *f);
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
 * --fanout N of a Slurm job's fan-in tree (2 to SLURM_FANOUT_MAX: one would be a tree of no width) into
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
