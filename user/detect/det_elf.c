// SPDX-License-Identifier: GPL-2.0
/*
 * elf-defects: sections sharing one name with conflicting flags (which JIT linkers mishandle:
 * the quack/CUTLASS .o with two .text sections), segments both writable and executable, and an
 * executable stack, as findings. The facts come from elfdefects.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "elfdefects.h"
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

struct defect_findings {
	const char *path;
	pid_t pid;
	struct findings *out;
	struct finding *section; /* the finding of the section name being told */
	size_t section_first;
};

static void add_defect(const struct elf_defect *d, void *ctx)
{
	struct defect_findings *df = ctx;
	struct finding *f;
	char fa[8], fb[8];

	switch (d->kind) {
	case ELF_DEFECT_SECTION_FLAGS:
		/* One finding per name; each conflicting pair of it an evidence line. */
		if (!df->section || df->section_first != d->first) {
			df->section = f = findings__add(
				df->out, "elf-defects", SEV_ERROR, df->pid,
				"%s: two %s sections with conflicting flags", df->path, d->section);
			df->section_first = d->first;
			finding__explain(
				f,
				"Linkers merge sections by name. Two sections of one name with "
				"different permissions (code R-X and data RW-) are mishandled by JIT "
				"linkers such as LLVM's MCJIT, which merges or mis-maps them and "
				"corrupts code pages: non-deterministic crashes, more frequent with "
				"more processes; JITLink refuses the object outright.",
				"Fix the code generator to give the data section its own name "
				"(.data.rel, .text.dtors); until then rebuild the cached object, or "
				"harmonize the flags before loading and use a linker that checks them.");
		}
		flag_string(d->first_flags, fa, sizeof(fa));
		flag_string(d->other_flags, fb, sizeof(fb));
		finding__evidence(df->section,
				  "section [%zu] %s flags %s, section [%zu] %s flags %s", d->first,
				  d->section, fa, d->other, d->section, fb);
		break;
	case ELF_DEFECT_RWX_SEGMENT:
		f = findings__add(df->out, "elf-defects", SEV_WARNING, df->pid,
				  "%s: a segment is both writable and executable", df->path);
		finding__evidence(f, "program header %zu: PT_LOAD at 0x%llx flags RWX", d->phdr,
				  (unsigned long long)d->vaddr);
		finding__explain(
			f,
			"Writable code lets any memory-corruption bug become code "
			"execution, and SELinux and hardened kernels refuse to map it.",
			"Relink without -z execstack/--omagic or custom linker scripts that "
			"merge code and data.");
		break;
	case ELF_DEFECT_EXEC_STACK:
		f = findings__add(df->out, "elf-defects", SEV_WARNING, df->pid,
				  "%s: asks for an executable stack", df->path);
		finding__evidence(f, "PT_GNU_STACK flags RWX");
		finding__explain(f,
				 "Loading it makes every thread stack of the process executable; "
				 "glibc 2.41 and later refuse to dlopen it.",
				 "Find the object file without a .note.GNU-stack section (often "
				 "hand-written assembly) and rebuild with -z noexecstack.");
		break;
	case ELF_DEFECT_NO_GNU_STACK:
		f = findings__add(df->out, "elf-defects", SEV_WARNING, df->pid,
				  "%s: has no PT_GNU_STACK header", df->path);
		finding__explain(f,
				 "Without PT_GNU_STACK the loader assumes the object needs an "
				 "executable stack.",
				 "Rebuild with -z noexecstack.");
		break;
	}
}

/* elf-defects on one file, @path as the findings name it. */
static void defects_of(const char *path, const struct elf_object *o, pid_t pid,
		       struct findings *out)
{
	struct defect_findings df = { .path = path, .pid = pid, .out = out };

	elfdefects__scan(o, add_defect, &df);
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
				defects_of(o->path, o->elf, g->pid, out);
		}
	}
}

void elf_defects__files(const struct lint_file *files, size_t n, struct findings *out)
{
	for (size_t i = 0; i < n; i++)
		defects_of(files[i].path, files[i].elf, 0, out);
}
