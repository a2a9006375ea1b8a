// SPDX-License-Identifier: GPL-2.0
/* Segments and code: file offsets and addresses, a function's bytes and its returns. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "elfobj.h"
#include "elfobj_impl.h"

struct find_func {
	const char *name;
	GElf_Sym sym;
	bool found;
};

static int match_func(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct find_func *f = ctx;
	size_t len = strlen(f->name);

	/* .symtab spells versioned definitions "dlopen@@GLIBC_2.34"; both spellings are one. */
	if (strncmp(name, f->name, len) || (name[len] && name[len] != '@'))
		return 0;
	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC && GELF_ST_TYPE(sym->st_info) != STT_GNU_IFUNC)
		return 0;
	f->sym = *sym;
	f->found = true;
	return 1;
}

/* The file offset of virtual address @vaddr, through the PT_LOAD that maps it. */
static int vaddr_to_offset(const struct elf_object *o, uint64_t vaddr, uint64_t *offset)
{
	size_t nph;

	if (!elfobj_loaded(o))
		return -ERANGE;

	if (elf_getphdrnum(o->elf, &nph))
		return -ERANGE;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(o->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*offset = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ERANGE;
}

bool elfobj__writable_at(const struct elf_object *o, uint64_t vaddr)
{
	bool writable = false;
	size_t nph;

	if (!elfobj_loaded(o) || elf_getphdrnum(o->elf, &nph))
		return false;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(o->elf, (int)i, &ph) || vaddr < ph.p_vaddr ||
		    vaddr - ph.p_vaddr >= ph.p_memsz)
			continue;
		/* The loader makes PT_GNU_RELRO read-only once it has relocated it. */
		if (ph.p_type == PT_GNU_RELRO)
			return false;
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W))
			writable = true;
	}
	return writable;
}

int elfobj__offset_to_vaddr(const struct elf_object *o, uint64_t offset, uint64_t *vaddr)
{
	size_t nph;

	if (!elfobj_loaded(o))
		return -ERANGE;

	if (elf_getphdrnum(o->elf, &nph))
		return -ERANGE;
	/* The file bytes of a segment first, then its zero-filled tail (.bss past the file). */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			uint64_t size;

			if (!gelf_getphdr(o->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			size = pass ? ph.p_memsz : ph.p_filesz;
			if (offset >= ph.p_offset && offset < ph.p_offset + size) {
				*vaddr = offset - ph.p_offset + ph.p_vaddr;
				return 0;
			}
		}
	return -ERANGE;
}

/* A defined function named @name, from .dynsym first, then .symtab. */
static bool find_function(const struct elf_object *o, const char *name, GElf_Sym *sym)
{
	struct find_func f = { .name = name };

	elfobj__foreach_defined(o, ELFOBJ_DYNSYM, match_func, &f);
	if (!f.found)
		elfobj__foreach_defined(o, ELFOBJ_SYMTAB, match_func, &f);
	*sym = f.sym;
	return f.found;
}

int elfobj__func_offset(const struct elf_object *o, const char *name, uint64_t *offset)
{
	GElf_Sym sym;

	if (!find_function(o, name, &sym))
		return -ENOENT;
	return vaddr_to_offset(o, sym.st_value, offset);
}

/* True when the CFA rule of @frame is "the stack pointer + 8": nothing left on the stack. */
static bool cfa_is_sp_plus_8(Dwarf_Frame *frame)
{
	Dwarf_Op *ops;
	size_t nops;

	return !dwarf_frame_cfa(frame, &ops, &nops) && nops == 1 && ops[0].atom == DW_OP_bregx &&
	       ops[0].number == 7 /* rsp */ && ops[0].number2 == 8;
}

/* The object's file, to read its code from: @file, or its own path when NULL; -errno. */
static int code_fd(const struct elf_object *o, const char *file)
{
	int fd;

	if (file)
		fd = open(file, O_RDONLY | O_CLOEXEC);
	else if (o->keep_handle) /* its path named a descriptor of ours, closed since */
		fd = o->fd >= 0 ? fcntl(o->fd, F_DUPFD_CLOEXEC, 0) : -1;
	else
		fd = open(o->lazy_path ? o->lazy_path : o->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return o->keep_handle && !file ? -ENOENT : -errno;
	return fd;
}

/*
 * The ret instructions of function @sym, through its .eh_frame CFI: a row that starts after the
 * entry with the CFA back at rsp+8 and a 0xc3 byte. Their virtual addresses and file offsets,
 * read from open @fd.
 */
static int find_returns(const struct elf_object *o, int fd, const GElf_Sym *sym, uint64_t *vaddrs,
			uint64_t *offsets, size_t max, size_t *n)
{
	Dwarf_CFI *cfi = dwarf_getcfi_elf(o->elf);

	*n = 0;
	if (!cfi)
		return -ENODATA;
	for (uint64_t pc = sym->st_value; pc < sym->st_value + sym->st_size && *n < max;) {
		Dwarf_Frame *frame;
		Dwarf_Addr start, end;
		unsigned char byte;
		uint64_t off;

		if (dwarf_cfi_addrframe(cfi, pc, &frame))
			break;
		if (dwarf_frame_info(frame, &start, &end, NULL) < 0 || end <= pc) {
			free(frame);
			break;
		}
		/* A row starts at an instruction; a ret there, with the frame popped, returns. */
		if (start > sym->st_value && cfa_is_sp_plus_8(frame) &&
		    !vaddr_to_offset(o, start, &off) && pread(fd, &byte, 1, (off_t)off) == 1 &&
		    arch_is_ret(byte)) {
			vaddrs[*n] = start;
			offsets[(*n)++] = off;
		}
		free(frame);
		pc = end;
	}
	dwarf_cfi_end(cfi);
	return *n ? 0 : -ENOENT;
}

/* Function @name, and a descriptor to read its code from, or -errno. */
static int open_function(const struct elf_object *o, const char *file, const char *name,
			 GElf_Sym *sym)
{
	GElf_Ehdr eh;

	if (!elfobj_loaded(o))
		return -ENOENT;
	if (!gelf_getehdr(o->elf, &eh) || eh.e_machine != EM_X86_64)
		return -ENOTSUP;
	if (!find_function(o, name, sym) || !sym->st_size)
		return -ENOENT;
	/*
	 * The code bytes are read from the file, not from libelf's mapping of it: the kernel
	 * writes the int3 of every uprobe on the file (another dlscope's, or ours on an earlier
	 * function) into each private mapping that may execute, ours included.
	 */
	return code_fd(o, file);
}

/* The largest function whose bytes elfobj__func_exits reads to look for branches. */
#define EXITS_CODE_MAX (64u << 10)

int elfobj__func_exits(const struct elf_object *o, const char *file, const char *name,
		       struct elfobj_exit *exits, size_t max, size_t *n)
{
	uint64_t vaddrs[ELFOBJ_EXITS_MAX], offs[ELFOBJ_EXITS_MAX], start;
	unsigned char *code = NULL;
	GElf_Sym sym;
	int fd, err;

	*n = 0;
	fd = open_function(o, file, name, &sym);
	if (fd < 0)
		return fd;
	err = find_returns(o, fd, &sym, vaddrs, offs,
			   max < ELFOBJ_EXITS_MAX ? max : ELFOBJ_EXITS_MAX, n);
	if (!err && sym.st_size <= EXITS_CODE_MAX && !vaddr_to_offset(o, sym.st_value, &start) &&
	    (code = malloc(sym.st_size)) &&
	    pread(fd, code, sym.st_size, (off_t)start) != (ssize_t)sym.st_size) {
		free(code);
		code = NULL;
	}
	for (size_t i = 0; !err && i < *n; i++) {
		struct arch_early_exit e;

		exits[i] = (struct elfobj_exit){ .offset = offs[i] };
		if (code && arch_early_exit(code, sym.st_size, sym.st_value, vaddrs[i], &e)) {
			exits[i].offset = e.at - sym.st_value + start;
			exits[i].early = true;
			exits[i].value_reg = e.value_reg;
			exits[i].in_slot = e.in_slot;
			exits[i].slot = e.slot;
		}
	}
	free(code);
	close(fd);
	return err;
}

/* The most code bytes elfobj__calls_to reads from one segment. */
#define CALLS_SCAN_MAX (64u << 20)

/* The direct calls to @target in executable segment @ph, read from @fd, into @vaddrs. */
static int segment_calls(int fd, const GElf_Phdr *ph, uint64_t target, uint64_t *vaddrs, size_t max,
			 size_t *n)
{
	unsigned char *code;
	size_t found = 0;
	int err = 0;

	/* A loader's code is a few hundred KiB; a giant static program's is probed at the
	 * function rather than copied whole. */
	if (ph->p_filesz > CALLS_SCAN_MAX)
		return -E2BIG;
	code = malloc(ph->p_filesz ? ph->p_filesz : 1);
	if (!code)
		return -ENOMEM;
	if (pread(fd, code, ph->p_filesz, (off_t)ph->p_offset) != (ssize_t)ph->p_filesz)
		err = -EIO;
	else if (!arch_direct_calls_to(code, ph->p_filesz, ph->p_vaddr, target, vaddrs + *n,
				       max - *n, &found))
		err = -EXDEV;
	else if (found > max - *n)
		err = -E2BIG;
	else
		*n += found;
	free(code);
	return err;
}

/* True when every one of @vaddrs lies inside a function the CFI describes. */
static bool all_in_cfi(const struct elf_object *o, const uint64_t *vaddrs, size_t n)
{
	Dwarf_CFI *cfi = dwarf_getcfi_elf(o->elf);
	bool ok = cfi != NULL;

	for (size_t i = 0; ok && i < n; i++) {
		Dwarf_Frame *frame;

		ok = !dwarf_cfi_addrframe(cfi, vaddrs[i], &frame);
		if (ok)
			free(frame);
	}
	if (cfi)
		dwarf_cfi_end(cfi);
	return ok;
}

int elfobj__calls_to(const struct elf_object *o, const char *file, const char *name,
		     uint64_t *vaddrs, uint64_t *offsets, size_t max, size_t *n)
{
	GElf_Sym sym;
	GElf_Ehdr eh;
	size_t nph;
	int fd, err = 0;

	*n = 0;
	if (!elfobj_loaded(o) || !find_function(o, name, &sym))
		return -ENOENT;
	if (!gelf_getehdr(o->elf, &eh) || eh.e_machine != EM_X86_64 || elf_getphdrnum(o->elf, &nph))
		return -ENOTSUP;
	fd = code_fd(o, file);
	if (fd < 0)
		return fd;
	for (size_t i = 0; i < nph && !err; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(o->elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_flags & PF_X))
			err = segment_calls(fd, &ph, sym.st_value, vaddrs, max, n);
	}
	close(fd);
	if (!err && !*n)
		err = -ENOENT;
	/* A match outside every function's unwind table is no call the compiler wrote. */
	if (!err && !all_in_cfi(o, vaddrs, *n))
		err = -ENODATA;
	for (size_t i = 0; !err && i < *n; i++)
		err = vaddr_to_offset(o, vaddrs[i], &offsets[i]);
	if (err)
		*n = 0;
	return err;
}

/* @len bytes at virtual address @vaddr, read from the file (see open_function for why). */
int elfobj__read_vaddr(const struct elf_object *o, uint64_t vaddr, void *buf, size_t len)
{
	uint64_t off, last;
	ssize_t got;
	int fd;

	/* Both ends in one segment's file bytes. */
	if (!len || vaddr_to_offset(o, vaddr, &off) || vaddr_to_offset(o, vaddr + len - 1, &last) ||
	    last != off + len - 1)
		return -ERANGE;
	/* An object kept by its handle has no path to come back by: its path named a descriptor
	 * of ours (/proc/self/fd/N) that was closed, its number perhaps reused since. */
	if (o->keep_handle && o->fd >= 0)
		return pread(o->fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -EIO;
	fd = o->keep_handle ? -1 :
			      open(o->lazy_path ? o->lazy_path : o->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* The bytes of libelf's mapping of the file (uprobes write only into executable
		 * mappings, never data). */
		size_t size = 0;
		const char *raw = o->elf ? elf_rawfile(o->elf, &size) : NULL;

		if (!raw || off + len > size)
			return -ENOENT;
		memcpy(buf, raw + off, len);
		return 0;
	}
	got = pread(fd, buf, len, (off_t)off);
	close(fd);
	return got == (ssize_t)len ? 0 : -EIO;
}

int elfobj__func_code(const struct elf_object *o, const char *name, void *buf, size_t len,
		      uint64_t *vaddr)
{
	GElf_Sym sym;
	GElf_Ehdr eh;

	if (!elfobj_loaded(o))
		return -ENOENT;

	if (!gelf_getehdr(o->elf, &eh) || eh.e_machine != EM_X86_64)
		return -ENOTSUP;
	if (!find_function(o, name, &sym))
		return -ENOENT;
	*vaddr = sym.st_value;
	return elfobj__read_vaddr(o, sym.st_value, buf, len) ? -EIO : 0;
}

int elfobj__func_constant(const struct elf_object *o, const char *name, int64_t *imm,
			  uint64_t *vaddr)
{
	unsigned char code[16];
	uint64_t entry;
	int err = elfobj__func_code(o, name, code, sizeof(code), &entry);

	return err ? err : arch_decode_return_constant(code, sizeof(code), entry, imm, vaddr);
}

const void *elfobj__section(const struct elf_object *o, const char *name, size_t *size)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elfobj_loaded(o))
		return NULL;

	if (elf_getshdrstrndx(o->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		const char *sname;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		sname = elf_strptr(o->elf, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, name))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			return NULL;
		*size = data->d_size;
		return data->d_buf;
	}
	return NULL;
}

/* The value of .dynamic's first entry @tag (its string for a string tag); false when none. */
static bool dynamic_entry(const struct elf_object *o, Elf64_Sxword tag, GElf_Dyn *out,
			  const char **str)
{
	Elf_Scn *scn = NULL;

	if (!elfobj_loaded(o))
		return false;
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < data->d_size / sh.sh_entsize; i++) {
			if (!gelf_getdyn(data, (int)i, out) || out->d_tag == DT_NULL)
				break;
			if (out->d_tag != tag)
				continue;
			if (str)
				*str = elf_strptr(o->elf, sh.sh_link, out->d_un.d_val);
			return !str || *str;
		}
	}
	return false;
}

int elfobj__search_path(const struct elf_object *o, char *buf, size_t len, bool *runpath)
{
	GElf_Dyn dyn;
	const char *s = NULL;

	if (!elfobj_loaded(o))
		return -ENOENT;
	*runpath = dynamic_entry(o, DT_RUNPATH, &dyn, &s);
	if (!*runpath && !dynamic_entry(o, DT_RPATH, &dyn, &s))
		s = "";
	snprintf(buf, len, "%s", s);
	return 0;
}

bool elfobj__static_tls(const struct elf_object *o, uint64_t *size, uint64_t *align)
{
	GElf_Dyn dyn;
	size_t nph;

	*size = *align = 0;
	if (!elfobj_loaded(o) || elf_getphdrnum(o->elf, &nph))
		return false;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(o->elf, (int)i, &ph) && ph.p_type == PT_TLS) {
			*size = ph.p_memsz;
			*align = ph.p_align;
		}
	}
	return dynamic_entry(o, DT_FLAGS, &dyn, NULL) && (dyn.d_un.d_val & DF_STATIC_TLS);
}
