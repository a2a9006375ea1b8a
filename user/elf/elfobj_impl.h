/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the elfobj_*.c files share and no other module sees: the object itself, and the libelf
 * handle each of them opens on demand (elfobj_load.c). elfobj.h is the interface.
 */
#ifndef DLSCOPE_ELFOBJ_IMPL_H
#define DLSCOPE_ELFOBJ_IMPL_H

#include <libelf.h>
#include <pthread.h>
#include <sys/stat.h>

#include "elfobj.h"
#include "objcache.h"

struct elf_object {
	unsigned int refs; /* elfobj__ref; elfobj__free drops one */
	char *path;
	/*
	 * The libelf handle, opened when a symbol, section or code byte is first asked for: an
	 * object analysed from the persistent cache (objcache.h) never opens one. NULL until then,
	 * and when the file on disk is no longer the one analysed.
	 */
	Elf *elf;
	bool elf_tried;
	bool keep_handle; /* elfobj__drop_handle may not drop it: it could not be opened again */
	int fd;		  /* held for ELF_C_READ's reads on demand; -1 when none */
	void *image;	  /* the file's bytes for elf_memory (small files), or NULL */
	struct objcache_key key;
	/* Where loaded() opens the file again: @path, or the same through a root held here. */
	char *lazy_path;
	int root; /* the held_roots entry lazy_path needs, or -1 */
	int type;
	uint64_t size, inode;
	char *soname;
	char *interp;
	char **needed;
	size_t n_needed, cap_needed;
	char **verdefs;
	size_t n_verdefs, cap_verdefs;
	char build_id[2 * 64 + 1];
	bool has_build_id;
	bool symbolic;	  /* DT_SYMBOLIC or DF_SYMBOLIC: its own definitions win its lookups */
	char *damage;	  /* the first inconsistency found in its tables, or NULL */
	bool damage_done; /* damage is looked for on first ask (only lint reads it) */
	/* Sections we come back to; NULL when absent. */
	Elf_Scn *dynsym, *symtab, *versym, *verneed, *verdef;
	/* What higher layers keep with the object (roles, symbol digest), freed with it. */
	void *annotation[ELFOBJ_N_NOTES];
	void (*annotation_free[ELFOBJ_N_NOTES])(void *);
	/* The annotation's bytes as the persistent cache held them, or NULL. */
	void *blob;
	size_t blob_len;
	/* Symbols by address for elfobj__symbol_at, built on first ask; names live in @elf. */
	struct addr_index *by_addr[2]; /* [0] data objects, [1] functions */
};

/* elfobj_load.c: the libelf handle, opened on first need and dropped on demand. */

/* Taken while a handle is opened or dropped, and while the symbol index is installed. */
extern pthread_mutex_t elfobj_load_lock;
/* Whether @o has its libelf handle, opening it now if it can (the file is still the one read). */
bool elfobj_loaded(const struct elf_object *o);
struct objcache_key elfobj_key_of(const struct stat *st);
bool elfobj_same_key(const struct objcache_key *a, const struct objcache_key *b);
/* Start libelf on @fd, which is consumed (closed, or held for ELF_C_READ). 0 or an errno. */
int elfobj_begin_elf(struct elf_object *o, int fd);
/* The sections the accessors come back to. */
void elfobj_index_sections(struct elf_object *o);
/* Ends the handle and what lives in it (the symbol index), and gives back its descriptor. */
void elfobj_drop_elf(struct elf_object *o);
/* A path for @o that stays valid while it lives. 0, or -1: keep the file's handle now instead. */
int elfobj_stable_path(struct elf_object *o);
/* Drops @o's hold on root @i (-1: none) of elfobj_stable_path. */
void elfobj_release_root(int i);

/*
 * elfobj_symindex.c: an object's symbols sorted by address, for elfobj__symbol_at. It knows no
 * object: elfobj_symbols.c feeds it the tables through addr_index__collect.
 */
struct addr_index;
struct addr_index_build {
	struct addr_index *ix;
	size_t cap_sized, cap_sizeless;
	uint32_t order;
	bool func;
	bool failed;
};

/* An empty index for functions (@func) or data objects. -ENOMEM or 0. */
int addr_index__begin(struct addr_index_build *b, bool func);
/* An elfobj_sym_cb: each symbol of the tables, .symtab first, then .dynsym. */
int addr_index__collect(const char *name, const GElf_Sym *sym, void *ctx);
/* The index sorted for lookups; NULL (and nothing left) when a symbol could not be kept. */
struct addr_index *addr_index__finish(struct addr_index_build *b);
/* The name of the symbol that holds @vaddr (see elfobj__symbol_at) and its value, or NULL. */
const char *addr_index__lookup(const struct addr_index *ix, uint64_t vaddr, uint64_t *value);
void addr_index__free(struct addr_index *ix);

#endif
