// SPDX-License-Identifier: GPL-2.0
/*
 * The layout defects of an ELF file, read with libelf. An empty section conflicts with nothing:
 * it holds no byte to map with the wrong permissions (compiler-rt's crtbegin.o opens its
 * .eh_frame list with an empty writable .eh_frame beside the real read-only one, and every
 * linker takes it).
 */
#include <stdlib.h>
#include <string.h>

#include "elfdefects.h"
#include "elfobj.h"

struct named_section {
	const char *name;
	size_t index;
	uint64_t flags;
};

static int cmp_section(const void *a, const void *b)
{
	const struct named_section *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* Sorted by name, so that objects with thousands of sections stay cheap. */
static size_t dup_sections(Elf *elf, elf_defect_cb cb, void *ctx)
{
	const uint64_t mask = SHF_WRITE | SHF_ALLOC | SHF_EXECINSTR;
	struct named_section *secs;
	size_t shstrndx, nsec, n = 0, found = 0;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) || elf_getshdrnum(elf, &nsec) || !nsec)
		return 0;
	secs = calloc(nsec, sizeof(*secs));
	if (!secs)
		return 0;
	while ((scn = elf_nextscn(elf, scn)) && n < nsec) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && *name)
			secs[n++] = (struct named_section){ name, elf_ndxscn(scn), sh.sh_flags };
	}
	qsort(secs, n, sizeof(*secs), cmp_section);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;

		while (j < n && !strcmp(secs[j].name, secs[i].name))
			j++;
		for (size_t k = i + 1; k < j; k++) {
			struct elf_defect d = { .kind = ELF_DEFECT_SECTION_FLAGS,
						.section = secs[i].name,
						.first = secs[i].index,
						.other = secs[k].index,
						.first_flags = secs[i].flags,
						.other_flags = secs[k].flags };

			if ((secs[k].flags & mask) == (secs[i].flags & mask))
				continue;
			found++;
			if (cb)
				cb(&d, ctx);
		}
		i = j;
	}
	free(secs);
	return found;
}

static size_t segments(Elf *elf, int type, elf_defect_cb cb, void *ctx)
{
	bool gnu_stack = false;
	size_t nph, found = 0;
	GElf_Ehdr eh;

	/*
	 * What the loader and the kernel make of the segments: only for a program or a library.
	 * A file for no machine (Guile's compiled .go modules, which Guile maps itself) is never
	 * loaded by them, and its lack of PT_GNU_STACK says nothing.
	 */
	if (type != ET_EXEC && type != ET_DYN)
		return 0;
	if (!gelf_getehdr(elf, &eh) || eh.e_machine == EM_NONE)
		return 0;
	if (elf_getphdrnum(elf, &nph))
		return 0;
	for (size_t i = 0; i < nph; i++) {
		struct elf_defect d = { .phdr = i };
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && (ph.p_flags & PF_X)) {
			d.kind = ELF_DEFECT_RWX_SEGMENT;
			d.vaddr = ph.p_vaddr;
		} else if (ph.p_type == PT_GNU_STACK) {
			gnu_stack = true;
			if (!(ph.p_flags & PF_X))
				continue;
			d.kind = ELF_DEFECT_EXEC_STACK;
		} else {
			continue;
		}
		found++;
		if (cb)
			cb(&d, ctx);
	}
	if (!gnu_stack && nph) {
		struct elf_defect d = { .kind = ELF_DEFECT_NO_GNU_STACK };

		found++;
		if (cb)
			cb(&d, ctx);
	}
	return found;
}

size_t elfdefects__scan(const struct elf_object *o, elf_defect_cb cb, void *ctx)
{
	Elf *elf = elfobj__elf(o);

	if (!elf)
		return 0;
	return dup_sections(elf, cb, ctx) + segments(elf, elfobj__type(o), cb, ctx);
}
