// SPDX-License-Identifier: GPL-2.0
/* The command-line grammar shared by every command; see cliopt.h. */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cliopt.h"
#include "commands.h"
#include "corefile.h"
#include "output.h"
#include "slurm_tasks.h"
#include "target.h"

/* Whether short option @ch takes a value that must be the next argument when not attached. */
static bool short_wants_value(const char *shortopts, char ch)
{
	const char *p = strchr(shortopts, ch);

	return ch != ':' && p && p[1] == ':' && p[2] != ':';
}

static const struct option *long_find(const struct option *opts, const char *name, size_t len)
{
	const struct option *hit = NULL;

	for (; opts && opts->name; opts++) {
		if (strncmp(opts->name, name, len))
			continue;
		if (strlen(opts->name) == len)
			return opts;
		/* getopt_long takes a unique prefix: so does the scan for "--". */
		hit = hit ? NULL : opts;
	}
	return hit;
}

/* The "--" that ends the options: not one that is an option's value ("-o --"). */
static int find_end(int argc, char **argv, const char *shortopts, const struct option *opts)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--"))
			return i;
		if (a[0] != '-' || !a[1])
			continue;
		if (a[1] == '-') {
			const struct option *o = long_find(opts, a + 2, strcspn(a + 2, "="));

			if (o && o->has_arg == required_argument && !strchr(a, '='))
				i++;
			continue;
		}
		for (const char *p = a + 1; *p; p++) {
			const char *q = strchr(shortopts, *p);

			if (!q || q[1] != ':')
				continue;
			/* The rest of the word is the value; a last letter takes the next word. */
			if (!p[1] && short_wants_value(shortopts, *p))
				i++;
			break;
		}
	}
	return argc;
}

const struct cliopt_def *cliopt__def_next(const struct cliopt_cmd *def, const struct cliopt_def *d,
					  bool hidden_too)
{
	/* The option every command has, after its own. */
	static const struct cliopt_def help_def = { .name = "help",
						    .letter = 'h',
						    .help = "this help" };

	if (d == &help_def)
		return NULL;
	for (d = d ? d + 1 : def->opts; d->name; d++)
		if ((hidden_too || !d->hidden) && (!d->only || !strcmp(d->only, def->name)))
			return d;
	return &help_def;
}

void cliopt__init(struct cliopt *c, const struct cliopt_cmd *def, int argc, char **argv)
{
	size_t n = 0, s = 1;

	*c = (struct cliopt){
		.cmd = def->name, .argc = argc, .argv = argv, .takes_command = def->takes_command
	};
	/* ':' first: a missing value is told apart from an unknown option. */
	c->shortopts[0] = ':';
	for (const struct cliopt_def *d = cliopt__def_next(def, NULL, true); d;
	     d = cliopt__def_next(def, d, true)) {
		if (n == CLIOPT_MAX) {
			/* A table too long for getopt's arrays is a bug of the build, not of input. */
			fprintf(stderr, "dlscope: %s: more than %d options\n", def->name,
				CLIOPT_MAX);
			abort();
		}
		c->longopts[n++] = (struct option){
			.name = d->name,
			.has_arg = !d->arg     ? no_argument :
				   d->optional ? optional_argument :
						 required_argument,
			.val = d->letter ? d->letter : d->val,
		};
		if (d->letter) {
			c->shortopts[s++] = d->letter;
			if (d->arg)
				c->shortopts[s++] = ':';
			if (d->arg && d->optional)
				c->shortopts[s++] = ':';
		}
	}
	c->shortopts[s] = '\0';
	c->end = find_end(argc, argv, c->shortopts + 1, c->longopts);
	output__set_command(def->name);
	optind = 0; /* glibc: start afresh, permutation state included */
	opterr = 0;
}

int cliopt__usage(const char *cmd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "dlscope: %s: %s\n", cmd, msg);
	return DLS_EXIT_USAGE;
}

/* The options' end: operands gathered, the command (or more operands) after "--". */
static void finish(struct cliopt *c)
{
	int first = optind;

	if (c->end < c->argc && !c->takes_command) {
		/* "--" only ends the options: what follows is operands ("lint -- -odd-name"). */
		memmove(c->argv + c->end, c->argv + c->end + 1,
			(size_t)(c->argc - c->end) * sizeof(*c->argv));
		c->argc--;
		c->end = c->argc;
	}
	c->ops = c->argv + first;
	c->n_ops = c->end - first;
	c->command = c->end < c->argc ? c->argv + c->end + 1 : NULL;
}

int cliopt__next(struct cliopt *c)
{
	const char *word;
	int ch;

	ch = getopt_long(c->end, c->argv, c->shortopts, c->longopts, NULL);
	c->arg = optarg;
	if (ch == -1) {
		finish(c);
		return -1;
	}
	if (ch != '?' && ch != ':')
		return ch;
	word = c->argv[optind - 1];
	if (ch == ':') {
		if (word[0] == '-' && word[1] == '-')
			cliopt__usage(c->cmd, "option '%s' needs a value", word);
		else
			cliopt__usage(c->cmd, "option '-%c' needs a value", optopt);
		return CLIOPT_ERR;
	}
	if (word[0] == '-' && word[1] == '-') {
		size_t len = strcspn(word + 2, "=");
		const struct option *o = long_find(c->longopts, word + 2, len);

		if (o && o->has_arg == no_argument && word[2 + len])
			cliopt__usage(c->cmd, "option '--%s' takes no value", o->name);
		else
			cliopt__usage(c->cmd, "unknown option '%.*s'", (int)len + 2, word);
	} else {
		cliopt__usage(c->cmd, "unknown option '-%c'", optopt);
	}
	return CLIOPT_ERR;
}

int cliopt__pids(const char *cmd, const char *s, pid_t **pids, size_t *n, size_t *cap)
{
	const char *p = s;

	do {
		size_t len = strcspn(p, ",");
		char word[32];
		int err;

		if (len >= sizeof(word)) {
			return cliopt__usage(cmd, "'%.*s' is not a process ID",
					     (int)(len > 40 ? 40 : len), p);
		}
		memcpy(word, p, len);
		word[len] = '\0';
		err = parse_pid_append(word, pids, n, cap);
		if (err == -EINVAL)
			return cliopt__usage(cmd, "'%s' is not a process ID", word);
		if (err) {
			dls_err("%s: out of memory", cmd);
			return DLS_EXIT_INSPECT;
		}
		p += len;
	} while (*p++ == ',');
	return 0;
}

int cliopt__pid_operands(const struct cliopt *c, pid_t **pids, size_t *n, size_t *cap)
{
	for (int i = 0; i < c->n_ops; i++) {
		int err = cliopt__pids(c->cmd, c->ops[i], pids, n, cap);

		if (err)
			return err;
	}
	return 0;
}

const char *cliopt__core_operand(const struct cliopt *c)
{
	const char *op = c->n_ops == 1 ? c->ops[0] : NULL;

	if (!op || !op[strspn(op, "0123456789,")])
		return NULL;
	return corefile__probe(op) == 1 ? op : NULL;
}

static int runnable_path(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode) || access(path, X_OK))
		return -EACCES;
	return 0;
}

int cliopt__number(const char *s, double max, bool whole, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > max || (whole && v != (double)(long)v))
		return -EINVAL;
	*out = v;
	return 0;
}

int cliopt__runnable(const char *file)
{
	const char *path = getenv("PATH"), *p;
	int err = -ENOENT;

	if (!*file)
		return -ENOENT;
	if (strchr(file, '/'))
		return runnable_path(file);
	/* execvp's default search path when PATH is unset. */
	if (!path)
		path = "/bin:/usr/bin";
	for (p = path;; p += strcspn(p, ":") + 1) {
		size_t n = strcspn(p, ":");
		char full[4096];
		int e;

		snprintf(full, sizeof(full), "%.*s%s%s", (int)n, n ? p : ".", "/", file);
		e = runnable_path(full);
		if (!e)
			return 0;
		/* As execvp: EACCES when a match was not executable, else ENOENT. */
		if (e == -EACCES)
			err = e;
		if (!p[n])
			break;
	}
	return err;
}

int cliopt__print_processes(json_t *procs)
{
	json_t *doc = json_pack("{s:s, s:o, s:o}", "dlscope", DLSCOPE_VERSION, "processes", procs,
				"errors", output__errors_json());
	int ret = doc && json_dumpf(doc, stdout, JSON_INDENT(2)) >= 0 ? 0 : -EIO;

	putchar('\n');
	json_decref(doc);
	return ret;
}

static volatile sig_atomic_t *stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	*stop_flag = 1;
}

void cliopt__stop_on_signals(volatile sig_atomic_t *flag)
{
	struct sigaction sa = { .sa_handler = on_stop };

	stop_flag = flag;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int cliopt__fanout(const char *cmd, const char *s, unsigned int *out)
{
	double v;

	if (cliopt__number(s, SLURM_FANOUT_MAX, true, &v) || v < 2)
		return cliopt__usage(cmd, "--fanout takes a number from 2 to %d, not '%s'",
				     SLURM_FANOUT_MAX, s);
	*out = (unsigned int)v;
	return 0;
}
