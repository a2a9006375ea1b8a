/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What check's detectors (abi-mismatch, dup-library, elf-defects) need from one object's symbol
 * tables and headers, in compact form, computed once per file content and kept in the persistent
 * cache ($cache/symbols-v1.cache, a record per content key; a record of another digest format
 * is refused), so that a second `check` of a process opens no object's symbol tables: on a torch
 * process those tables hold 240,000 definitions, and reading and sorting them by name was two
 * thirds of `check`.
 *
 * Names are kept as 48-bit hashes with a 15-bit hash of their version: a detector that finds a
 * symbol missing by hash goes back to the names (elfobj) to confirm it and to word its evidence,
 * so a collision can only hide a finding, never make one up. The vague-linkage candidates of
 * dup-library are few and kept by name.
 */
#ifndef DLSCOPE_SYMDIGEST_H
#define DLSCOPE_SYMDIGEST_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_object;

/* A symbol as a digest keeps it: name hash << 16 | version hash << 1 | weak. */
#define SYMD_NAME(e) ((e) >> 16)
#define SYMD_VERSION(e) (((e) >> 1) & 0x7fff) /* 0: unversioned */
#define SYMD_WEAK(e) ((e)&1)

/* A definition of a vague-linkage static (template static member, inline variable ...). */
struct symd_vague {
	char *name;
	char *version; /* its version (.gnu.version_d) when exported and versioned, else NULL */
	uint64_t value, size;
	bool binds_own; /* protected visibility: its object binds to it without a lookup */
	bool writable;	/* it can be written at run time (elfobj__writable_at) */
};

/*
 * A dynamic relocation that may bind a reference to a vague-linkage static: its name (as an
 * entry, SYMD_NAME compares) and its place, vaddr << 8 | relocation type.
 */
struct symd_ref {
	uint64_t name, place;
};

/* A version node the object needs from a file (.gnu.version_r). */
struct symd_verneed {
	char *file, *version;
};

struct symdigest {
	uint64_t *defs, *undefs; /* .dynsym's defined and undefined symbols, sorted */
	size_t n_defs, n_undefs;
	/* Candidates of dup-library: exported (.dynsym, weak or unique) and hidden (.symtab). */
	struct symd_vague *vague, *hidden;
	size_t n_vague, n_hidden;
	struct symd_verneed *verneed;
	size_t n_verneed;
	/* GLOB_DAT, 64 and COPY relocations naming a data symbol that may be a candidate. */
	struct symd_ref *refs;
	size_t n_refs;
	bool elf_defects; /* elf-defects has something to say about the file */
};

/* A symbol's entry as the digest keeps it (SYMD_NAME and SYMD_VERSION of it compare). */
uint64_t symdigest__entry(const char *name, const char *version, bool weak);
/*
 * Whether dup-library keeps this symbol as a candidate: an object with a size and a C++ name,
 * weak or unique when exported, local when @hidden, and never with internal linkage
 * (symdigest__internal_linkage) or a compiler's local suffix (".lto_priv.0", ".constprop.0");
 * nor what dup-library's identity table (static_identity__of) says copies of are harmless
 * (vtables, VTTs, guard variables ...); typeinfo only with @typeinfo (libc++ compares it by
 * address). A file's hidden names with two copies in it are dropped by the digest itself.
 */
bool symdigest__vague_candidate(const char *name, const GElf_Sym *sym, bool hidden, bool typeinfo);
/*
 * Whether the mangled @name is an entity with internal linkage, which the language gives one
 * copy per translation unit: GCC marks such a name with L before its source name (_ZL9moduledef,
 * _ZN2v88internalL3rspE, _ZStL8__ioinit), and a function-local static takes its function's
 * (_ZZL10initializeP10JavaThreadE11initialized); an anonymous namespace (_GLOBAL__N_) too.
 * False when the name cannot be read that far (a class member, a shape not parsed).
 */
bool symdigest__internal_linkage(const char *name);
/*
 * Whether dup-library weighs this relocation: a GOT slot, data word or copy (@type) for a data
 * symbol (@sym_type object, or untyped when unresolved at link time) with a C++ name that can be
 * a candidate (not a vtable, VTT, guard or typeinfo).
 */
bool symdigest__ref_candidate(const char *name, unsigned type, unsigned sym_type);
/*
 * The digest of @o: from the object's memory, the persistent cache (when on) or its symbol
 * tables. NULL when its tables cannot be read (the file is gone or changed): nothing to judge.
 * Kept with the object and freed with it.
 */
const struct symdigest *symdigest__of(const struct elf_object *o);
/* Whether the sorted @v holds an entry with the name (and, when @version, the version) of @e. */
bool symdigest__has(const uint64_t *v, size_t n, uint64_t e, bool version);

/*
 * Pure parts, for the tests: a digest of the file content @key as bytes, and back (-EINVAL for
 * any flaw, another build's or another file's image).
 */
struct objcache_key;
int symdigest__encode(const struct symdigest *d, const struct objcache_key *key, void **image,
		      size_t *len);
int symdigest__decode(const void *image, size_t len, const struct objcache_key *key,
		      struct symdigest **d);
void symdigest__free(struct symdigest *d);

#endif
