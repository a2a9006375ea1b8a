/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A bug report in Markdown, for a GitHub issue: what was inspected, the environment, the
 * runtimes (duplicates first), the findings with evidence, why and fix, the stacks of the
 * threads that matter, a timeline excerpt and the commands that reproduce the capture, built
 * from the JSON documents of check, stacks and a trace. Long sections fold into <details>; what
 * does not fit the size limit moves to a companion file, and the report says so.
 */
#ifndef DLSCOPE_REPORT_H
#define DLSCOPE_REPORT_H

#include <jansson.h>
#include <stddef.h>

/* GitHub refuses an issue body over 65,536 characters. */
#define REPORT_LIMIT 65536

struct report_in {
	const char *title;	/* "process 1234 (python3)", "trace run.jsonl": plain text */
	const char *title_code; /* shown after it as code (the command of "command CMD"), or NULL */
	const char *invocation; /* the dlscope command that made the report */
	const char *captured;	/* when, in UTC */
	const char *version;	/* dlscope's */
	json_t *env;		/* {kernel, glibc, distribution, cpus, cpus_allowed, python} */
	json_t *check;		/* a check --json document (or check --job's); NULL: none */
	json_t *stacks;		/* stacks --json documents (array) or stacks --job's; NULL */
	json_t *timeline;	/* [{t, pid, text}] from a trace; NULL */
	json_t *reproduce;	/* command lines (strings) */
	const char *companion;	/* the companion file's name, said in the report */
	const char *svg;	/* the rendered library graph, when one was made (--svg) */
};

/*
 * Write the report: @main holds at most @limit characters; @extra (NULL when everything fits)
 * holds the sections moved out, in full. Both are malloc'd. Returns 0 or -ENOMEM.
 */
int report__write(const struct report_in *in, size_t limit, char **main, char **extra);

/* What --redact hides besides IP addresses: host names and user names (NULL-terminated). */
struct redact_hints {
	const char *const *hosts;
	const char *const *users;
};

/*
 * @text with home directories, user names, host names and IP addresses replaced, one value by
 * one placeholder everywhere (<home1>, <user1>, <host1>, <ip1>). Returns a malloc'd string, or
 * NULL without memory.
 */
char *report__redact(const char *text, const struct redact_hints *h);

#endif
