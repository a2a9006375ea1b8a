/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The stacks of a job's ranks merged STAT-style: threads whose stacks are the same (native
 * function names and objects, Python functions, files and lines) form one group with the set of
 * ranks that share it, outliers first, and the verdict names the rank whose main thread is
 * somewhere the others are not. Works on the documents of `stacks --json`, one per rank.
 */
#ifndef DLSCOPE_STACKMERGE_H
#define DLSCOPE_STACKMERGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "jsonfold.h"

struct rank_stacks {
	int rank;
	pid_t pid;
	json_t *doc;	   /* its stacks --json document; NULL when it could not be read */
	const char *error; /* why not, when doc is NULL */
};

/*
 * Merge @n ranks: returns {"groups": [...], "verdict": {...}} (docs/stacks-schema.md), or NULL
 * when out of memory. A folded thread (stackmerge__fold: its "group": K) has @table[K] for frames.
 * @python_only: only Python frames make a stack (stacks --python).
 */
json_t *stackmerge__merge(const struct rank_stacks *r, size_t n, const json_t *table,
			  bool python_only);

/*
 * The threads of @doc (a stacks --json document) folded for a fan-in tree (jsonfold.h): each
 * thread's stack, as the merge reads it, moves into @f's table, keyed by what makes two stacks
 * the same here, and the thread keeps its index ("group": K). Threads folded already (by the
 * relay below, against its table @in) are folded again into @f; a stack @in does not hold
 * (a bad index, no @in, a frame without its kind) is a stack of no frames. 0, or -ENOMEM.
 */
int stackmerge__fold(struct jsonfold *f, json_t *doc, const json_t *in, bool python_only);
/* The groups as text: each group's ranks and threads, then its frames, innermost first. */
void stackmerge__print_groups(const json_t *merged, FILE *out);

#endif
