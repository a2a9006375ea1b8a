/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DLSCOPE_ELFDEFECTS_H
#define DLSCOPE_ELFDEFECTS_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

struct elf_object;

/*
 * What is wrong in an ELF file's layout, as facts: elf-defects (det_elf.c) turns them into
 * findings, and the symbol digest remembers whether a file has any, so that a sound file is not
 * opened again on the next check.
 */
enum elf_defect_kind {
	ELF_DEFECT_SECTION_FLAGS, /* two non-empty allocated sections of one name, flags differ */
	ELF_DEFECT_RWX_SEGMENT,	  /* a PT_LOAD both writable and executable */
	ELF_DEFECT_EXEC_STACK,	  /* PT_GNU_STACK asks for an executable stack */
	ELF_DEFECT_NO_GNU_STACK,  /* no PT_GNU_STACK: the loader assumes an executable stack */
};

struct elf_defect {
	enum elf_defect_kind kind;
	/* SECTION_FLAGS: the first section of the name and one that conflicts with it. */
	const char *section;
	size_t first, other;
	uint64_t first_flags, other_flags;
	/* RWX_SEGMENT: the program header and its address. */
	size_t phdr;
	uint64_t vaddr;
};

/*
 * Call @cb for each defect of @o (in section order for names, then program headers); @cb may be
 * NULL to count only. Conflicts of one section name come one after another, the same @first.
 * Returns the number of defects.
 */
typedef void (*elf_defect_cb)(const struct elf_defect *d, void *ctx);
size_t elfdefects__scan(const struct elf_object *o, elf_defect_cb cb, void *ctx);

#endif
