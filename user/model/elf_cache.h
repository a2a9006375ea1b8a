/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The analysed ELF files, shared by graphs (refcounted): a collector that re-reads a process
 * after every dlopen analyses each file once. Keyed by inode.
 */
#ifndef DLSCOPE_ELF_CACHE_H
#define DLSCOPE_ELF_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct elf_cache;
struct elf_object;

struct elf_cache *elf_cache__new(void);
/* One more reference to @c, for a graph that shares it. */
struct elf_cache *elf_cache__get(struct elf_cache *c);
void elf_cache__put(struct elf_cache *c);
/* Analyses held: those some graph uses, and at most ELF_CACHE_IDLE (64) others once a graph let
 * its analyses go (32 more may be opened in between), newest kept. */
size_t elf_cache__size(const struct elf_cache *c);
/*
 * Open @host_path once per file; the cache owns the result (a reference for the caller). @inode,
 * when known from the mapping, finds a cached analysis without a system call and proves that
 * the file on disk is still the one mapped: a mismatch (the file was replaced) falls back to
 * @mapped_path, the mapping itself. NULL with *@error set (malloc'ed) when it cannot be read.
 */
/*
 * Call @fn(@arg) at each elf_cache__open, before the cache is looked at: a collector whose loop
 * reads a process's files lets a thread waiting for it in between two (NULL: none).
 */
void elf_cache__set_pause(struct elf_cache *c, void (*fn)(void *), void *arg);
struct elf_object *elf_cache__open(struct elf_cache *c, const char *host_path,
				   const char *mapped_path, uint64_t inode, char **error);

#endif
