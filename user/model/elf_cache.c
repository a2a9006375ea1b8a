// SPDX-License-Identifier: GPL-2.0
/* The analysed ELF files that graphs share (elf_cache.h); libgraph.c opens objects through it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "elf_cache.h"
#include "elfobj.h"
#include "idxmap.h"
#include "roles.h"

/*
 * One analysis per file: dlmopen namespaces and renamed copies map the same inode twice, and a
 * collector that re-reads a process after every dlopen meets the same files again. The cache
 * holds a reference to each analysis and every graph object one more; analyses no graph holds
 * any longer are dropped, oldest first, past ELF_CACHE_IDLE of them (looked for when a graph
 * lets its analyses go, and once every ELF_CACHE_IDLE / 2 new analyses), so that a process
 * loading and unloading thousands of libraries does not grow a collector without bound.
 */
#define ELF_CACHE_IDLE 64

struct elf_cache_entry {
	uint64_t inode;
	uint64_t size;
	struct elf_object *elf;
};

struct elf_cache {
	struct elf_cache_entry *e;
	size_t n, cap;
	struct idxmap by_inode; /* inode -> its first entry in e */
	size_t trim_at;		/* the count at which cache_trim looks again */
	unsigned int refs;
	void (*pause)(void *);
	void *pause_arg;
};

struct elf_cache *elf_cache__new(void)
{
	struct elf_cache *c = calloc(1, sizeof(*c));

	if (c)
		c->refs = 1;
	return c;
}

size_t elf_cache__size(const struct elf_cache *c)
{
	return c->n;
}

struct elf_cache *elf_cache__get(struct elf_cache *c)
{
	c->refs++;
	return c;
}

struct inode_key {
	const struct elf_cache *c;
	uint64_t inode;
};

static bool inode_eq(size_t idx, const void *ctx)
{
	const struct inode_key *k = ctx;

	return k->c->e[idx].inode == k->inode;
}

/* Entry @i in the index, unless an earlier one has its inode: 0 or -ENOMEM. */
static int index_entry(struct elf_cache *c, size_t i)
{
	struct inode_key k = { c, c->e[i].inode };

	return idxmap__insert(&c->by_inode, idxmap__hash_u64(k.inode), i, inode_eq, &k, NULL) < 0 ?
		       -ENOMEM :
		       0;
}

/* Drop the oldest analyses no graph holds, down to ELF_CACHE_IDLE / 2 idle ones. */
static void cache_trim(struct elf_cache *c)
{
	size_t idle = 0, kept = 0;

	/* Looked at again only after ELF_CACHE_IDLE / 2 more analyses: a look at every open
	 * read every analysis's count, 250,000 reads for a process of 500 objects. */
	if (c->n < c->trim_at)
		return;
	c->trim_at = c->n + ELF_CACHE_IDLE / 2;
	for (size_t i = 0; i < c->n; i++)
		idle += !elfobj__shared(c->e[i].elf);
	if (idle <= ELF_CACHE_IDLE)
		return;
	for (size_t i = 0; i < c->n; i++) {
		if (idle > ELF_CACHE_IDLE / 2 && !elfobj__shared(c->e[i].elf)) {
			elfobj__free(c->e[i].elf);
			idle--;
			continue;
		}
		c->e[kept++] = c->e[i];
	}
	c->n = kept;
	c->trim_at = c->n + ELF_CACHE_IDLE / 2;
	/* The index anew: the entries moved. Out of memory leaves some unindexed, found no
	 * more (analysed again), never a wrong one. */
	idxmap__clear(&c->by_inode);
	for (size_t i = 0; i < c->n; i++)
		if (index_entry(c, i))
			break;
}

void elf_cache__put(struct elf_cache *c)
{
	if (!c)
		return;
	if (--c->refs) {
		/* A graph let its analyses go: those it alone held are idle now, and a collector
		 * may open nothing new for a long while (a quiet node after a process ended). */
		c->trim_at = 0;
		cache_trim(c);
		return;
	}
	for (size_t i = 0; i < c->n; i++)
		elfobj__free(c->e[i].elf);
	free(c->e);
	idxmap__free(&c->by_inode);
	free(c);
}

static struct elf_object *cache_find(const struct elf_cache *c, uint64_t inode)
{
	struct inode_key k = { c, inode };
	size_t i = idxmap__find(&c->by_inode, idxmap__hash_u64(inode), inode_eq, &k);

	return i == IDXMAP_NONE ? NULL : c->e[i].elf;
}

void elf_cache__set_pause(struct elf_cache *c, void (*fn)(void *), void *arg)
{
	c->pause = fn;
	c->pause_arg = arg;
}

/*
 * Open @host_path once per file; the cache owns the result. @inode, when known from the mapping,
 * finds a cached analysis without a system call and proves that the file on disk is still the
 * one mapped: a mismatch (the file was replaced) falls back to @mapped_path, the mapping itself.
 */
struct elf_object *elf_cache__open(struct elf_cache *c, const char *host_path,
				   const char *mapped_path, uint64_t inode, char **error)
{
	struct elf_object *elf;

	if (c->pause)
		c->pause(c->pause_arg);
	elf = inode ? cache_find(c, inode) : NULL;
	if (elf)
		return elfobj__ref(elf);
	elf = elfobj__open(host_path);
	if ((!elf || (inode && elfobj__inode(elf) != inode)) && mapped_path) {
		elfobj__free(elf);
		elf = elfobj__open(mapped_path);
	}
	if (!elf) {
		*error = strdup(elfobj__strerror(errno));
		return NULL;
	}
	/* Opened by path because the mapping was not known yet: maybe analysed already. */
	if (!inode && cache_find(c, elfobj__inode(elf))) {
		struct elf_object *known = cache_find(c, elfobj__inode(elf));

		elfobj__free(elf);
		return elfobj__ref(known);
	}
	cache_trim(c);
	if (c->n == c->cap) {
		if (ARRAY_GROW(c->e, c->cap, 64)) {
			elfobj__free(elf);
			*error = strdup("out of memory");
			return NULL;
		}
	}
	c->e[c->n++] = (struct elf_cache_entry){ elfobj__inode(elf), elfobj__size(elf), elf };
	if (index_entry(c, c->n - 1)) {
		/* Unindexed it would be analysed anew each time: not kept. */
		c->n--;
		elfobj__free(elf);
		*error = strdup("out of memory");
		return NULL;
	}
	/*
	 * Its roles now, while its bytes are in memory; then the bytes go, so that the next
	 * object's reuse this memory instead of faulting in pages of their own.
	 */
	roles__of(elf);
	elfobj__drop_handle(elf);
	return elfobj__ref(elf);
}
