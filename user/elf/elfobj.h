/* SPDX-License-Identifier: GPL-2.0 */
/* One ELF file, read with libelf: identity, dependencies, symbols, versions, runtime roles. */
#ifndef DLSCOPE_ELFOBJ_H
#define DLSCOPE_ELFOBJ_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_object;

enum elfobj_symtab {
	ELFOBJ_DYNSYM = 1 << 0,
	ELFOBJ_SYMTAB = 1 << 1,
};

/*
 * Open and index @path: from the persistent cache when it is on and knows the file (nothing but
 * the build-id is read then), else read with pread, never mapped; symbols and sections are read
 * when first asked for. Returns NULL and sets errno: ENOEXEC for a file that
 * is not ELF, EINVAL for an ELF this build cannot read (32-bit, other machine), EIO for a corrupt
 * one, EOVERFLOW for a truncated one. Small files are held in memory, larger ones keep their
 * descriptor for reads on demand (at most 256 at once; past that they are mapped, as before).
 */
struct elf_object *elfobj__open(const char *path);
/*
 * The caller closes descriptor @fd, through which it named objects (/proc/self/fd/FD/...):
 * the next path through that number is checked again (it may be another directory).
 */
void elfobj__root_closed(int fd);
/* Objects are reference counted: ref adds a holder, free drops one and frees the last. */
struct elf_object *elfobj__ref(struct elf_object *o);
void elfobj__free(struct elf_object *o);
/* Held by more than one holder. */
bool elfobj__shared(const struct elf_object *o);
/* The reason for an errno of elfobj__open, in words (EOVERFLOW: truncated). */
const char *elfobj__strerror(int err);
/*
 * The first inconsistency found in the object's tables (program headers past the end,
 * .dynamic/.dynsym/.symtab/version sections linking to no string table, names outside their
 * table, version chains leaving their section), in words; NULL for a sound object. The object
 * is still usable: the loader reads none of this, so a process may run with it.
 */
const char *elfobj__damage(const struct elf_object *o);

const char *elfobj__path(const struct elf_object *o);
int elfobj__type(const struct elf_object *o);		/* ET_EXEC, ET_DYN, ET_REL ... */
const char *elfobj__soname(const struct elf_object *o); /* NULL when it has none */
size_t elfobj__n_needed(const struct elf_object *o);
const char *elfobj__needed(const struct elf_object *o, size_t i);
const char *elfobj__build_id(const struct elf_object *o); /* lowercase hex, or NULL */
const char *elfobj__interp(const struct elf_object *o);	  /* PT_INTERP, or NULL */
size_t elfobj__n_verdefs(const struct elf_object *o);
const char *elfobj__verdef(const struct elf_object *o, size_t i);
/*
 * What higher layers keep with the object, computed once per file: the runtime roles of
 * roles.h, the symbol digest of symdigest.h. NULL until set; @free_fn frees it with the object.
 */
enum elfobj_note { ELFOBJ_NOTE_ROLES, ELFOBJ_NOTE_SYMBOLS, ELFOBJ_N_NOTES };
void *elfobj__annotation(const struct elf_object *o, enum elfobj_note which);
void elfobj__annotate(const struct elf_object *o, enum elfobj_note which, void *data,
		      void (*free_fn)(void *));
/*
 * The annotation as bytes, for the persistent cache (objcache.h): what was stored for this file
 * by an earlier run (NULL, 0 when nothing), and storing it for the next one (a no-op when the
 * cache is off). The higher layer that owns the annotation defines and checks its bytes.
 */
const void *elfobj__cached_annotation(const struct elf_object *o, size_t *len);
void elfobj__cache_annotation(const struct elf_object *o, const void *data, size_t len);
/* What identifies the file's content (device, inode, size, mtime, ctime): a cache's key. */
struct objcache_key;
const struct objcache_key *elfobj__content_key(const struct elf_object *o);
/*
 * Free the libelf handle and the bytes read for it (the next question opens the file again, if
 * it is still the same file): a caller that analysed many objects once keeps its memory small.
 */
void elfobj__drop_handle(const struct elf_object *o);
/* Linked -Bsymbolic (DT_SYMBOLIC, DF_SYMBOLIC): the object's references bind to its own
 * definitions before the loader's search order is consulted. */
bool elfobj__symbolic(const struct elf_object *o);
uint64_t elfobj__size(const struct elf_object *o);
uint64_t elfobj__inode(const struct elf_object *o); /* of the file opened, for identity checks */

/*
 * Call @cb for each symbol of the chosen tables that is defined in this object (not SHN_UNDEF).
 * Stops early and returns @cb's value when it is non-zero.
 */
typedef int (*elfobj_sym_cb)(const char *name, const GElf_Sym *sym, void *ctx);
int elfobj__foreach_defined(const struct elf_object *o, unsigned tables, elfobj_sym_cb cb,
			    void *ctx);

/*
 * The defined symbol @name of the chosen tables: .dynsym through its GNU hash table (as the
 * dynamic linker finds it, without a scan), .symtab by a scan. 0 with @sym, or -ENOENT.
 */
int elfobj__lookup(const struct elf_object *o, const char *name, unsigned tables, GElf_Sym *sym);

/* Call @cb for each undefined dynamic symbol with its required version (NULL when unversioned). */
typedef int (*elfobj_undef_cb)(const char *name, const char *version, bool weak, void *ctx);
int elfobj__foreach_undefined(const struct elf_object *o, elfobj_undef_cb cb, void *ctx);

/* Call @cb for each (needed file, version) pair of .gnu.version_r. */
typedef int (*elfobj_verneed_cb)(const char *file, const char *version, void *ctx);
int elfobj__foreach_verneed(const struct elf_object *o, elfobj_verneed_cb cb, void *ctx);

/*
 * The file offset of the code of function @name (.dynsym first, then .symtab), as uprobes want it.
 * Versioned aliases at one address (dlopen@GLIBC_2.2.5, dlopen@@GLIBC_2.34) are one answer.
 * Returns 0, -ENOENT when not defined here, -ERANGE when not inside a loadable segment.
 */
int elfobj__func_offset(const struct elf_object *o, const char *name, uint64_t *offset);
/* The most returns elfobj__func_exits gives of one function. */
#define ELFOBJ_EXITS_MAX 16
/*
 * The places to probe function @name's returns (x86-64) at, as file offsets: its ret
 * instructions, found through its .eh_frame CFI (a row that starts after the entry with the CFA
 * back at rsp+8 and a 0xc3 byte). A probe there reads the return value without a uretprobe,
 * which would replace the return address that dlopen and dlsym read to find their caller
 * (RUNPATH search, RTLD_NEXT). Each is moved where it can to the stack protector's check before
 * its ret (arch.h: arch_early_exit), whose probe the kernel emulates where it single-steps one
 * on a ret (some 13 us a hit on this VM): @early, with the return value in register @value_reg
 * or (@in_slot) at rsp + @slot; else the ret, the value in rax. The code bytes are read from
 * @file (the object's own path when NULL). Returns 0 with *n > 0, or -errno.
 */
struct elfobj_exit {
	uint64_t offset;
	bool early, in_slot;
	unsigned int value_reg;
	int32_t slot;
};
int elfobj__func_exits(const struct elf_object *o, const char *file, const char *name,
		       struct elfobj_exit *exits, size_t max, size_t *n);
/*
 * The direct calls to function @name (x86-64 call or jmp rel32) in the object's code, from @file
 * (its own path when NULL): their virtual addresses and file offsets, at most @max. A probe on
 * a call is emulated by the kernel, where one on a function that is a bare ret is single-stepped.
 * -ENOENT: none; -EXDEV: a branch that may not be taken reaches it too; -E2BIG: more than @max,
 * or over 64 MiB of code in a segment; -ENODATA: a match outside every function the unwind
 * tables describe (no CFI: musl). Any error: probe @name.
 */
int elfobj__calls_to(const struct elf_object *o, const char *file, const char *name,
		     uint64_t *vaddrs, uint64_t *offsets, size_t max, size_t *n);

/*
 * Call @cb for each dynamic relocation naming a symbol: its name, place (vaddr) and type, and
 * the symbol's type (STT_OBJECT, STT_FUNC ...).
 */
typedef int (*elfobj_reloc_cb)(const char *name, uint64_t offset, unsigned type, unsigned sym_type,
			       void *ctx);
int elfobj__foreach_dynreloc(const struct elf_object *o, elfobj_reloc_cb cb, void *ctx);
/*
 * Where the pointer at @vaddr points once loaded: the addend of the relative relocation there
 * (R_X86_64_RELATIVE), as a virtual address of the object. musl's _dl_debug_addr is such a
 * pointer, to its static struct debug. 0 with *@target, or -ENOENT.
 */
int elfobj__relative_target(const struct elf_object *o, uint64_t vaddr, uint64_t *target);

/* Like foreach_defined on .dynsym, with each symbol's version name (NULL when unversioned). */
typedef int (*elfobj_vsym_cb)(const char *name, const char *version, const GElf_Sym *sym,
			      void *ctx);
int elfobj__foreach_defined_versioned(const struct elf_object *o, elfobj_vsym_cb cb, void *ctx);

/*
 * The symbol containing @vaddr (an address in the object's own numbering): a function when
 * @func, else a data object. Functions of unknown size match the nearest one below. Returns 0
 * and sets @name and @offset, or -ENOENT.
 */
int elfobj__symbol_at(const struct elf_object *o, uint64_t vaddr, bool func, const char **name,
		      uint64_t *offset);

/* @len bytes at the object's virtual address @vaddr, read from its file. 0 or -errno. */
int elfobj__read_vaddr(const struct elf_object *o, uint64_t vaddr, void *buf, size_t len);
/* The first @len code bytes of function @name (x86-64 only), read from the file; its vaddr. */
int elfobj__func_code(const struct elf_object *o, const char *name, void *buf, size_t len,
		      uint64_t *vaddr);
/*
 * What function @name returns when it is a constant (x86-64): 1 with *@imm for
 * "mov $imm32, %eax; ret" (openblas_get_parallel), 2 with *@vaddr for "lea rel(%rip), %rax;
 * ret" (TBB_runtime_version, dnnl_version), 3 with *@vaddr for "mov rel(%rip), %rax; ret"
 * (CPython 3.6's PyInterpreterState_Head). -ENOENT when the code has another shape: the
 * answer is read off the library's own code, never guessed.
 */
int elfobj__func_constant(const struct elf_object *o, const char *name, int64_t *imm,
			  uint64_t *vaddr);
/*
 * The virtual address (the object's own numbering) of file offset @offset, through the PT_LOAD
 * that maps it; an offset past a segment's file bytes but inside its memory size is its .bss.
 * Returns 0 or -ERANGE.
 */
int elfobj__offset_to_vaddr(const struct elf_object *o, uint64_t offset, uint64_t *vaddr);

/*
 * Whether the object's bytes at @vaddr (its own numbering) can be written at run time: inside a
 * writable PT_LOAD and outside PT_GNU_RELRO, which the loader makes read-only after relocating
 * (.data.rel.ro: vtables, typeinfo, constant tables of pointers). False when unknown.
 */
bool elfobj__writable_at(const struct elf_object *o, uint64_t vaddr);
/*
 * The directories its dependencies are searched in first: DT_RUNPATH (*@runpath true), else
 * DT_RPATH, as written ("$ORIGIN/../lib"); "" when neither. 0, or -ENOENT when unreadable.
 */
int elfobj__search_path(const struct elf_object *o, char *buf, size_t len, bool *runpath);
/*
 * Its thread-local storage: PT_TLS's memory size and alignment (0 without), and whether it is
 * marked DF_STATIC_TLS (initial-exec TLS: a dlopen must find room in the static TLS block).
 */
bool elfobj__static_tls(const struct elf_object *o, uint64_t *size, uint64_t *align);
/* The bytes of the first section called @name, or NULL. */
const void *elfobj__section(const struct elf_object *o, const char *name, size_t *size);
/* The underlying libelf handle, for the object-level checks of lint. */
Elf *elfobj__elf(const struct elf_object *o);

#endif
