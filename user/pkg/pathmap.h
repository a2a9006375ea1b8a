/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A hash map from file paths to values, for the package indexes: a Debian system lists about
 * 180,000 paths, looked up a few hundred times. Keys are borrowed (a file buffer the index keeps)
 * or copied into the map's own arena; the first value put for a key stays. The entries are
 * walked in the order they were put.
 */
#ifndef DLSCOPE_PATHMAP_H
#define DLSCOPE_PATHMAP_H

#include <stddef.h>
#include <stdint.h>

#include "idxmap.h"

/* A key and its value, in the order put: what callers walk (pathmap.e[0 .. n)). */
struct pm_entry {
	const char *key;
	uint32_t len;
	void *val;
};

struct pm_chunk;

struct pathmap {
	struct pm_entry *e;
	size_t n, cap;
	struct idxmap index; /* idxmap__hash_bytes of the key -> its entry */
	struct pm_chunk *arena;
};

/*
 * Put @key (@len bytes, no NUL needed) -> @val unless the key is there. @copy: the map keeps its
 * own copy of the key; else the key must outlive the map. 1 when added, 0 when the key was
 * there, -ENOMEM.
 */
int pathmap__put(struct pathmap *m, const char *key, size_t len, void *val, int copy);
/* The value of @key, or NULL. */
void *pathmap__get(const struct pathmap *m, const char *key, size_t len);
void pathmap__free(struct pathmap *m);
/* The hash the map uses, for callers that sieve keys before asking. */
uint32_t pathmap__hash(const char *key, size_t len);

#endif
