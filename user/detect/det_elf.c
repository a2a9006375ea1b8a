// SPDX-License-Identifier: GPL-2.0
/*
 * elf-defects: sections sharing one name with conflicting flags (which JIT linkers mishandle:
 * the quack/CUTLASS .o with two .text sections), segments both writable and executable, and an
 * executable stack. An empty section conflicts with nothing: it holds no byte to map with the
 * wrong permissions (compiler-rt's crtbegin.o opens its .eh_frame list with an empty writable
 * .eh_frame beside the real read-only one, and every linker takes it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
#include "symdigest.h"

static void flag_string(uint64_t flags, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", flags & SHF_ALLOC ? "A" : "", flags & SHF_WRITE ? "W" : "",
		 flags & SHF_EXECINSTR ? "X" : "");
	if (!buf[0])
		snprintf(buf, len, "-");
}

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

/*
 * Sort the allocated sections by name, so that objects with thousands of sections stay cheap.
 * Only sections with a size count: an empty one (a marker such as __EH_FRAME_LIST__'s) has no
 * contents whose permissions could be wrong.
 */
static void dup_sections(const char *path, Elf *elf, pid_t pid, struct findings *out)
{
	const uint64_t mask = SHF_WRITE | SHF_ALLOC | SHF_EXECINSTR;
	struct named_section *secs;
	size_t shstrndx, nsec, n = 0;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) || elf_getshdrnum(elf, &nsec) || !nsec)
		return;
	secs = calloc(nsec, sizeof(*secs));
	if (!secs)
		return;
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
		struct finding *f = NULL;
		size_t j = i + 1;

		while (j < n && !strcmp(secs[j].name, secs[i].name))
			j++;
		for (size_t k = i + 1; k < j; k++) {
			char fa[8], fb[8];

			if ((secs[k].flags & mask) == (secs[i].flags & mask))
				continue;
			if (!f)
				f = findings__add(out, "elf-defects", SEV_ERROR, pid,
						  "%s: two %s sections with conflicting flags",
						  path, secs[i].name);
			flag_string(secs[i].flags, fa, sizeof(fa));
			flag_string(secs[k].flags, fb, sizeof(fb));
			finding__evidence(f, "section [%zu] %s flags %s, section [%zu] %s flags %s",
					  secs[i].index, secs[i].name, fa, secs[k].index,
					  secs[k].name, fb);
		}
		finding__explain(
			f,
			"Linkers merge sections by name. Two sections of one name with different "
			"permissions (code R-X and data RW-) are mishandled by JIT linkers such as "
			"LLVM's MCJIT, which merges or mis-maps them and corrupts code pages: "
			"non-deterministic crashes, more frequent with more processes; JITLink "
			"refuses the object outright.",
			"Fix the code generator to give the data section its own name (.data.rel, "
			".text.dtors); until then rebuild the cached object, or harmonize the flags "
			"before loading and use a linker that checks them.");
		i = j;
	}
	free(secs);
}

static void segments(const char *path, Elf *elf, int type, pid_t pid, struct findings *out)
{
	bool gnu_stack = false;
	size_t nph;

	if (type != ET_EXEC && type != ET_DYN)
		return;
	if (elf_getphdrnum(elf, &nph))
		return;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		struct finding *f;

		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && (ph.p_flags & PF_X)) {
			f = findings__add(out, "elf-defects", SEV_WARNING, pid,
					  "%s: a segment is both writable and executable", path);
			finding__evidence(f, "program header %zu: PT_LOAD at 0x%llx flags RWX", i,
					  (unsigned long long)ph.p_vaddr);
			finding__explain(
				f,
				"Writable code lets any memory-corruption bug become code "
				"execution, and SELinux and hardened kernels refuse to map "
				"it.",
				"Relink without -z execstack/--omagic or custom linker "
				"scripts that merge code and data.");
		}
		if (ph.p_type == PT_GNU_STACK) {
			gnu_stack = true;
			if (ph.p_flags & PF_X) {
				f = findings__add(out, "elf-defects", SEV_WARNING, pid,
						  "%s: asks for an executable stack", path);
				finding__evidence(f, "PT_GNU_STACK flags RWX");
				finding__explain(
					f,
					"Loading it makes every thread stack of the process "
					"executable; glibc 2.41 and later refuse to dlopen it.",
					"Find the object file without a .note.GNU-stack section "
					"(often hand-written assembly) and rebuild with -z noexecstack.");
			}
		}
	}
	if (!gnu_stack && nph) {
		struct finding *f = findings__add(out, "elf-defects", SEV_WARNING, pid,
						  "%s: has no PT_GNU_STACK header", path);

		finding__explain(f,
				 "Without PT_GNU_STACK the loader assumes the object needs an "
				 "executable stack.",
				 "Rebuild with -z noexecstack.");
	}
}

void elf_defects__object(const char *path, struct elf_object *o, pid_t pid, struct findings *out)
{
	Elf *elf = elfobj__elf(o);

	dup_sections(path, elf, pid, out);
	segments(path, elf, elfobj__type(o), pid, out);
}

void elf_defects__process(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		bool seen = false;

		if (o->gone || !o->elf)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = g->objs[j]->elf == o->elf;
		if (!seen) {
			const struct symdigest *d = symdigest__of(o->elf);

			/* A file its digest found sound is not opened again. */
			if (!d || d->elf_defects)
				elf_defects__object(o->path, o->elf, g->pid, out);
		}
	}
}

void elf_defects__files(const struct lint_file *files, size_t n, struct findings *out)
{
	for (size_t i = 0; i < n; i++)
		elf_defects__object(files[i].path, files[i].elf, 0, out);
}
