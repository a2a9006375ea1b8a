/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The persistent cache of each ELF file's analysis (identity, dependencies, version definitions,
 * and an opaque annotation a higher layer stores: the runtime roles), so that a second
 * `dlscope libs` reads no section of an unchanged file. One file,
 * $XDG_CACHE_HOME/dlscope/elf-v1.cache (~/.cache/dlscope without XDG_CACHE_HOME), keyed by device,
 * inode, size, mtime and ctime (ns): a warm lookup is one stat, the file is not opened. It is
 * read once and trusted only when it is ours (cachefile.h: the effective user's, in folders no
 * one else controls), whole (length and checksum) and of this format;
 * it is written back once, at exit, to a temporary file renamed over the old one, so concurrent
 * dlscope processes never see half a file. A cache never changes what dlscope reports.
 */
#ifndef DLSCOPE_OBJCACHE_H
#define DLSCOPE_OBJCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What identifies one file's content. ctime too: every write to a file sets it, and no one can
 * set it back (a file rewritten in place and given its old mtime has a new ctime).
 */
struct objcache_key {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
};

/* One file's analysis: what elfobj__open reads and what a higher layer keeps (blob). */
struct objcache_rec {
	struct objcache_key key;
	char build_id[2 * 64 + 1]; /* lowercase hex, "" when the file has none */
	uint64_t bid_off;	   /* the file offset of its bytes; UINT64_MAX: none */
	uint16_t type;		   /* e_type */
	bool symbolic;
	char *soname, *interp; /* NULL when absent */
	char **needed, **verdefs;
	size_t n_needed, n_verdefs;
	void *blob; /* the annotation of a higher layer (roles.c), or NULL */
	size_t blob_len;
	bool used; /* read or written by this process: kept first when the file is trimmed */
};

/*
 * Turn the cache on for this process when the persistent caches are (cachefile__enable: the CLI,
 * unless --no-cache or DLSCOPE_CACHE=off) and a cache folder is known: loads the file on first
 * use and saves it at exit when something was added. Off by default, so tests and library users
 * read files only.
 */
void objcache__enable(void);
bool objcache__enabled(void);

/* The record for @key, or NULL (not cached, or the cache is off). */
struct objcache_rec *objcache__find(const struct objcache_key *key);
/* Add a record (copied) for @rec->key, replacing an older one; the stored record, or NULL. */
struct objcache_rec *objcache__put(const struct objcache_rec *rec);
/* Attach @blob (copied) to the record of @key. */
void objcache__set_blob(const struct objcache_key *key, const void *blob, size_t len);
/* Call @fn on every record (loading the file first): the collector's look over what it knows. */
void objcache__for_each(void (*fn)(const struct objcache_rec *rec, void *arg), void *arg);
/* Write the cache now when it changed (also done at exit). 0 or -errno. */
int objcache__save(void);

/* This build of dlscope (its build-id): a cache file another build wrote is foreign to it. */
void objcache__producer(char out[48]);
/* The checksum dlscope's cache files carry over their payload (FNV-1a, 64 bits). */
uint64_t objcache__checksum(const void *p, size_t len);

/* Pure parts, for the tests: the file image of @n records, and the records of an image. */
int objcache__encode(struct objcache_rec *const *recs, size_t n, void **image, size_t *len);
/* 0 and the records (free each with objcache_rec__free), or -EINVAL for any flaw at all. */
int objcache__decode(const void *image, size_t len, struct objcache_rec ***recs, size_t *n);
void objcache_rec__free(struct objcache_rec *r);

#endif
