/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Identical JSON values sent once: the reduction a fan-in tree's relays do (STAT's, at each
 * level of its tree). A table holds each distinct value once; a document keeps, in place of a
 * value moved there, {"folded": K}, its index in the table. A relay folds what its nodes sent
 * (the same library list or stack from every rank) and sends its table beside them; the reader
 * above folds again into its own table, or unfolds.
 */
#ifndef DLSCOPE_JSONFOLD_H
#define DLSCOPE_JSONFOLD_H

#include <jansson.h>
#include <stddef.h>

#include "idxmap.h"

struct jsonfold {
	json_t *values; /* the table: each distinct value once */
	char **keys;	/* what makes two values the same, each value's (for @map) */
	size_t cap;
	struct idxmap map;
};

/* 0, or -ENOMEM. */
int jsonfold__init(struct jsonfold *f);
void jsonfold__free(struct jsonfold *f);
/*
 * @value (taken) in the table, under @key (NULL: its compact JSON text), unless a value of that
 * key is there: its index into *@at. 0, or -ENOMEM.
 */
int jsonfold__add(struct jsonfold *f, json_t *value, const char *key, size_t *at);
/*
 * @obj's member @name moved into the table, {"folded": K} in its place; when it is folded
 * already, against @in (the table of the reader below), its value is taken from there, and
 * when @in has no such value the member becomes null. A member that is not there, or null,
 * stays. 0, or -ENOMEM.
 */
int jsonfold__member(struct jsonfold *f, json_t *obj, const char *name, const json_t *in);
/* Whether @v stands for a value of a table: its index into *@at. */
int jsonfold__ref(const json_t *v, size_t *at);
/*
 * @obj's member @name given its value back from @table (shared, not copied) when it is folded.
 * 0, or -EINVAL when its index is past @table.
 */
int jsonfold__unfold_member(json_t *obj, const char *name, const json_t *table);

#endif
