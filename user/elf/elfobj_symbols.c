// SPDX-License-Identifier: GPL-2.0
/* Symbol tables: walks, lookups by name (.gnu.hash first) and by address, relocations. */
#include <errno.h>
#include <libelf.h>
#include <pthread.h>
#include <string.h>

#include "elfobj.h"
#include "elfobj_impl.h"

static int foreach_in(const struct elf_object *o, Elf_Scn *scn, bool defined, elfobj_sym_cb cb,
		      void *ctx)
{
	Elf_Data *data;
	GElf_Shdr sh;
	size_t count;

	if (!elfobj_loaded(o))
		return 0;

	if (!scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return 0;
	data = elf_getdata(scn, NULL);
	if (!data)
		return 0;
	count = data->d_size / sh.sh_entsize;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		int ret;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if ((sym.st_shndx == SHN_UNDEF) == defined)
			continue;
		name = elf_strptr(o->elf, sh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		ret = cb(name, &sym, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

int elfobj__foreach_defined(const struct elf_object *o, unsigned tables, elfobj_sym_cb cb,
			    void *ctx)
{
	int ret = 0;

	if (!elfobj_loaded(o)) /* before o->dynsym and o->symtab are read */
		return 0;
	if (tables & ELFOBJ_DYNSYM)
		ret = foreach_in(o, o->dynsym, true, cb, ctx);
	if (!ret && (tables & ELFOBJ_SYMTAB))
		ret = foreach_in(o, o->symtab, true, cb, ctx);
	return ret;
}

/* The GNU hash of a symbol name (the dynamic linker's dl_new_hash). */
static uint32_t gnu_hash(const char *name)
{
	uint32_t h = 5381;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	return h;
}

/*
 * Look @name up through .gnu.hash as ld.so would: bloom filter, bucket, then the chain of
 * equal hashes. 1 found, 0 absent, -1 when there is no usable table (the caller scans).
 */
static int gnu_hash_lookup(const struct elf_object *o, const char *name, GElf_Sym *out)
{
	Elf_Data *hd, *sd;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh, ssh;
	const uint32_t *w;
	uint32_t nbuckets, symoffset, bloom_size, bloom_shift, h, idx;
	size_t nwords, nsyms;

	if (!elfobj_loaded(o))
		return -1;

	while ((scn = elf_nextscn(o->elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_HASH)
			break;
	if (!scn || !o->dynsym || !gelf_getshdr(o->dynsym, &ssh) || !ssh.sh_entsize)
		return -1;
	hd = elf_getdata(scn, NULL);
	sd = elf_getdata(o->dynsym, NULL);
	if (!hd || !sd || hd->d_size < 16 || gelf_getclass(o->elf) != ELFCLASS64)
		return -1;
	w = hd->d_buf;
	nwords = hd->d_size / 4;
	nsyms = sd->d_size / ssh.sh_entsize;
	nbuckets = w[0];
	symoffset = w[1];
	bloom_size = w[2];
	bloom_shift = w[3];
	if (!nbuckets || !bloom_size || 4 + (size_t)bloom_size * 2 + nbuckets > nwords)
		return -1;
	h = gnu_hash(name);
	{
		const uint64_t *bloom = (const uint64_t *)(w + 4);
		uint64_t word = bloom[(h / 64) % bloom_size];

		if (!((word >> (h % 64)) & (word >> ((h >> bloom_shift) % 64)) & 1))
			return 0;
	}
	idx = w[4 + bloom_size * 2 + h % nbuckets];
	if (idx < symoffset)
		return 0;
	for (;; idx++) {
		size_t chain = 4 + (size_t)bloom_size * 2 + nbuckets + (idx - symoffset);
		const char *sname;
		GElf_Sym sym;

		if (chain >= nwords || idx >= nsyms || !gelf_getsym(sd, (int)idx, &sym))
			return 0;
		if ((w[chain] | 1) == (h | 1) && sym.st_shndx != SHN_UNDEF &&
		    (sname = elf_strptr(o->elf, ssh.sh_link, sym.st_name)) &&
		    !strcmp(sname, name)) {
			*out = sym;
			return 1;
		}
		if (w[chain] & 1)
			return 0;
	}
}

struct find_any {
	const char *name;
	GElf_Sym sym;
	bool found;
};

static int match_any(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct find_any *f = ctx;

	if (strcmp(name, f->name))
		return 0;
	f->sym = *sym;
	f->found = true;
	return 1;
}

int elfobj__lookup(const struct elf_object *o, const char *name, unsigned tables, GElf_Sym *sym)
{
	struct find_any f = { .name = name };

	if (tables & ELFOBJ_DYNSYM) {
		int r = gnu_hash_lookup(o, name, sym);

		if (r > 0)
			return 0;
		if (r < 0)
			elfobj__foreach_defined(o, ELFOBJ_DYNSYM, match_any, &f);
	}
	if (!f.found && (tables & ELFOBJ_SYMTAB))
		elfobj__foreach_defined(o, ELFOBJ_SYMTAB, match_any, &f);
	if (!f.found)
		return -ENOENT;
	*sym = f.sym;
	return 0;
}

int elfobj__foreach_dynreloc(const struct elf_object *o, elfobj_reloc_cb cb, void *ctx)
{
	Elf_Scn *scn = NULL;
	size_t dynsym_ndx;

	if (!elfobj_loaded(o))
		return 0;

	if (!o->dynsym)
		return 0;
	dynsym_ndx = elf_ndxscn(o->dynsym);
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh, symsh;
		Elf_Data *data, *syms;
		size_t count;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || sh.sh_link != dynsym_ndx ||
		    !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		syms = elf_getdata(o->dynsym, NULL);
		if (!data || !syms || !gelf_getshdr(o->dynsym, &symsh))
			continue;
		count = data->d_size / sh.sh_entsize;
		for (size_t i = 0; i < count; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *name;
			int ret;

			if (!gelf_getrela(data, (int)i, &r) || !GELF_R_SYM(r.r_info))
				continue;
			if (!gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
				continue;
			name = elf_strptr(o->elf, symsh.sh_link, sym.st_name);
			if (!name)
				continue;
			ret = cb(name, r.r_offset, (unsigned)GELF_R_TYPE(r.r_info),
				 (unsigned)GELF_ST_TYPE(sym.st_info), ctx);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int elfobj__relative_target(const struct elf_object *o, uint64_t vaddr, uint64_t *target)
{
	Elf_Scn *scn = NULL;

	if (!elfobj_loaded(o))
		return -ENOENT;
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		/* Relative relocations name no symbol: in .rela.dyn, whatever its link. */
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < data->d_size / sh.sh_entsize; i++) {
			GElf_Rela r;

			if (gelf_getrela(data, (int)i, &r) && r.r_offset == vaddr &&
			    GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE && r.r_addend > 0) {
				*target = (uint64_t)r.r_addend;
				return 0;
			}
		}
	}
	return -ENOENT;
}

static struct addr_index *build_addr_index(const struct elf_object *o, bool func)
{
	struct addr_index_build b;

	if (addr_index__begin(&b, func))
		return NULL;
	elfobj__foreach_defined(o, ELFOBJ_SYMTAB, addr_index__collect, &b);
	elfobj__foreach_defined(o, ELFOBJ_DYNSYM, addr_index__collect, &b);
	return addr_index__finish(&b);
}

int elfobj__symbol_at(const struct elf_object *o, uint64_t vaddr, bool func, const char **name,
		      uint64_t *offset)
{
	struct elf_object *m = (struct elf_object *)o; /* the index is a cache of what it says */
	const char *hit = NULL;
	uint64_t value = 0;
	struct addr_index *fresh = NULL;

	if (!elfobj_loaded(o))
		return -ENOENT;
	pthread_mutex_lock(&elfobj_load_lock);
	if (!m->by_addr[func]) {
		/* Built outside the lock (the walk takes it); the first to finish installs it. */
		pthread_mutex_unlock(&elfobj_load_lock);
		fresh = build_addr_index(o, func);
		pthread_mutex_lock(&elfobj_load_lock);
		if (!m->by_addr[func] && o->elf) {
			m->by_addr[func] = fresh;
			fresh = NULL;
		}
	}
	hit = m->by_addr[func] ? addr_index__lookup(m->by_addr[func], vaddr, &value) : NULL;
	if (hit) {
		*name = hit;
		*offset = vaddr - value;
	}
	pthread_mutex_unlock(&elfobj_load_lock);
	addr_index__free(fresh);
	return hit ? 0 : -ENOENT;
}
