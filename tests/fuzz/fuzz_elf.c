// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness: any bytes as an ELF file, through everything dlscope reads from one
 * (identity, dependencies, symbols, versions, relocations, CFI return sites, roles) and every
 * lint detector. A crash, a hang or a sanitizer report is a bug.
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "detector.h"
#include "elfobj.h"
#include "roles.h"

static int count_sym(const char *name, const GElf_Sym *sym, void *ctx)
{
	(void)name, (void)sym;
	++*(size_t *)ctx;
	return 0;
}

static int count_undef(const char *name, const char *version, bool weak, void *ctx)
{
	(void)name, (void)version, (void)weak;
	++*(size_t *)ctx;
	return 0;
}

static int count_verneed(const char *file, const char *version, void *ctx)
{
	(void)file, (void)version;
	++*(size_t *)ctx;
	return 0;
}

static int count_reloc(const char *name, uint64_t offset, unsigned type, unsigned sym_type,
		       void *ctx)
{
	(void)name, (void)offset, (void)type, (void)sym_type;
	++*(size_t *)ctx;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	char path[64], gcc[32];
	struct elf_object *o;
	struct findings fs = { 0 };
	size_t n = 0, size_out;
	uint64_t off;
	int64_t imm;
	const char *name;

	if (fd < 0 && (fd = memfd_create("fuzz-elf", MFD_CLOEXEC)) < 0)
		return 0;
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	o = elfobj__open(path);
	if (!o)
		return 0;
	elfobj__soname(o);
	elfobj__build_id(o);
	elfobj__interp(o);
	for (size_t i = 0; i < elfobj__n_needed(o); i++)
		elfobj__needed(o, i);
	for (size_t i = 0; i < elfobj__n_verdefs(o); i++)
		elfobj__verdef(o, i);
	elfobj__foreach_defined(o, ELFOBJ_DYNSYM | ELFOBJ_SYMTAB, count_sym, &n);
	elfobj__foreach_undefined(o, count_undef, &n);
	elfobj__foreach_verneed(o, count_verneed, &n);
	elfobj__foreach_dynreloc(o, count_reloc, &n);
	elfobj__func_offset(o, "dlopen", &off);
	{
		struct elfobj_exit exits[ELFOBJ_EXITS_MAX];

		elfobj__func_exits(o, NULL, "dlopen", exits, ELFOBJ_EXITS_MAX, &n);
	}
	elfobj__relative_target(o, 0x1000, &off);
	elfobj__func_constant(o, "openblas_get_parallel", &imm, &off);
	elfobj__symbol_at(o, 0x1000, true, &name, &off);
	elfobj__section(o, ".rodata", &size_out);
	roles__static_libstdcxx(o, gcc, sizeof(gcc));
	{
		struct lint_file lf = { .path = path, .elf = o };

		for (size_t i = 0; i < n_detectors; i++)
			if (detectors[i].files)
				detectors[i].files(&lf, 1, &fs);
	}
	findings__free(&fs);
	elfobj__free(o);
	return 0;
}
