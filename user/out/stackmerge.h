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

#include "idxmap.h"

struct rank_stacks {
	int rank;
	pid_t pid;
	json_t *doc;	   /* its stacks --json document; NULL when it could not be read */
	const char *error; /* why not, when doc is NULL */
};

/*
 * Merge @n ranks: returns {"groups": [...], "verdict": {...}} (docs/stacks-schema.md), or NULL
 * when out of memory. A thread folded by stackfold (its "group": K) has @table[K] for frames.
 * @python_only: only Python frames make a stack (stacks --python).
 */
json_t *stackmerge__merge(const struct rank_stacks *r, size_t n, const json_t *table,
			  bool python_only);

/*
 * Stacks folded for a fan-in tree (STAT's reduction at each level of its tree): each thread's
 * frames move into one table of distinct stacks, and the thread keeps its stack's index there
 * ("group": K). A relay folds the documents of the nodes under it and sends each stack once,
 * however many ranks share it; the front end folds the relays' tables into one the same way.
 */
struct stackfold {
	json_t *groups; /* [frames, ...]: each stack as the merge reads it, innermost first */
	char **sigs;	/* each stack's signature (what makes two the same), for @map */
	size_t cap;
	struct idxmap map;
};

/* 0, or -ENOMEM. */
int stackfold__init(struct stackfold *sf);
/*
 * Fold the threads of @doc (a stacks --json document; its threads already folded against @in,
 * a table of the node or relay that sent it, or whole) into @sf, in place. 0, or -ENOMEM.
 */
int stackfold__doc(struct stackfold *sf, json_t *doc, const json_t *in, bool python_only);
void stackfold__free(struct stackfold *sf);
/* The groups as text: each group's ranks and threads, then its frames, innermost first. */
void stackmerge__print_groups(const json_t *merged, FILE *out);

#endif
