// SPDX-License-Identifier: GPL-2.0
/* The consistency of an object's tables, for lint: elfobj__damage. */
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "elfobj_impl.h"

/* A section's name for messages ("section 7" when it has none). */
static const char *sh_name(const struct elf_object *o, Elf_Scn *scn)
{
	static __thread char buf[32];
	size_t shstrndx;
	GElf_Shdr sh;
	const char *n = NULL;

	if (!elf_getshdrstrndx(o->elf, &shstrndx) && gelf_getshdr(scn, &sh))
		n = elf_strptr(o->elf, shstrndx, sh.sh_name);
	if (n && *n)
		return n;
	snprintf(buf, sizeof(buf), "section %zu", elf_ndxscn(scn));
	return buf;
}

/*
 * The entries of .dynamic that name a string (DT_NEEDED, DT_SONAME, ...): all of them, and the
 * DT_NEEDED ones in *@needed, read or not (read_dynamic drops names it cannot find).
 */
static size_t count_names(Elf_Scn *scn, const GElf_Shdr *sh, size_t *needed)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = 0, count = data && sh->sh_entsize ? data->d_size / sh->sh_entsize : 0;

	*needed = 0;
	for (size_t i = 0; i < count; i++) {
		GElf_Dyn dyn;

		if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		*needed += dyn.d_tag == DT_NEEDED;
		n += dyn.d_tag == DT_NEEDED || dyn.d_tag == DT_SONAME || dyn.d_tag == DT_RPATH ||
		     dyn.d_tag == DT_RUNPATH || dyn.d_tag == DT_AUXILIARY || dyn.d_tag == DT_FILTER;
	}
	return n;
}

/* What is wrong with section @idx as a string table, or NULL: it must end its last string. */
static const char *strtab_problem(const struct elf_object *o, size_t idx)
{
	Elf_Scn *scn = elf_getscn(o->elf, idx);
	GElf_Shdr sh;
	Elf_Data *d;

	if (!idx || !scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB)
		return "links to no string table";
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_size || ((const char *)d->d_buf)[d->d_size - 1] != '\0')
		return "links to a string table whose last string is not terminated";
	return NULL;
}

/* Every symbol's name lies inside its string table. */
static bool names_in_table(const struct elf_object *o, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	Elf_Data *strs = elf_getdata(elf_getscn(o->elf, sh->sh_link), NULL);
	size_t n = d && sh->sh_entsize ? d->d_size / sh->sh_entsize : 0;

	for (size_t i = 0; strs && i < n; i++) {
		GElf_Sym sym;

		if (!gelf_getsym(d, (int)i, &sym) || sym.st_name >= strs->d_size)
			return false;
	}
	return strs != NULL;
}

/* A version chain (verdef or verneed) whose links stay inside its section. */
static bool version_chain_sound(Elf_Scn *scn, const GElf_Shdr *sh, bool def)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0;

	if (!d)
		return false;
	for (size_t i = 0; i < sh->sh_info; i++) {
		size_t next, aux, cnt, entsz = def ? sizeof(Elf64_Verdef) : sizeof(Elf64_Verneed);

		if (off > d->d_size || d->d_size - off < entsz)
			return false;
		if (def) {
			GElf_Verdef vd;

			if (!gelf_getverdef(d, (int)off, &vd))
				return false;
			next = vd.vd_next, aux = vd.vd_aux, cnt = vd.vd_cnt;
		} else {
			GElf_Verneed vn;

			if (!gelf_getverneed(d, (int)off, &vn))
				return false;
			next = vn.vn_next, aux = vn.vn_aux, cnt = vn.vn_cnt;
		}
		if (cnt &&
		    (aux > d->d_size - off ||
		     d->d_size - off - aux < (def ? sizeof(Elf64_Verdaux) : sizeof(Elf64_Vernaux))))
			return false;
		if (!next)
			return i + 1 == sh->sh_info;
		off += next;
	}
	return true;
}

/*
 * The first inconsistency in the tables dlscope reads, in words, or NULL: program headers past
 * the end of the file, links to sections that are no string table, names outside their table,
 * version chains leaving their section. The loader itself reads none of the section headers,
 * so such a file may still load; lint says so, the process commands read what they can.
 */
static char *find_damage(const struct elf_object *o, const GElf_Ehdr *eh)
{
	size_t nph = 0, dynsyms = 0, needed;
	Elf_Scn *scn = NULL;
	char *why = NULL;

	if (!elf_getphdrnum(o->elf, &nph))
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(o->elf, (int)i, &ph))
				return strdup("a program header cannot be read");
			if (ph.p_type != PT_NULL &&
			    (ph.p_offset > o->size || ph.p_filesz > o->size - ph.p_offset) &&
			    asprintf(&why,
				     "program header %zu (type %#x) covers bytes past the end of "
				     "the file",
				     i, (unsigned)ph.p_type) > 0)
				return why;
		}
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		const char *what = NULL, *str;
		const char *sec = sh_name(o, scn);

		if (!gelf_getshdr(scn, &sh))
			continue;
		switch (sh.sh_type) {
		case SHT_DYNAMIC:
			/* A .dynamic that names no string needs no string table: Guile's compiled
			 * .go modules, ELF files for no machine, link none. */
			if (!count_names(scn, &sh, &needed))
				break;
			if ((str = strtab_problem(o, sh.sh_link)))
				what = str;
			else if (o->n_needed < needed)
				what = "has a name outside its string table";
			break;
		case SHT_DYNSYM:
		case SHT_SYMTAB:
			if ((str = strtab_problem(o, sh.sh_link)))
				what = str;
			else if (!names_in_table(o, scn, &sh))
				what = "has a symbol whose name lies outside its string table";
			if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize)
				dynsyms = sh.sh_size / sh.sh_entsize;
			break;
		case SHT_GNU_verdef:
		case SHT_GNU_verneed:
			if ((str = strtab_problem(o, sh.sh_link)))
				what = str;
			else if (!version_chain_sound(scn, &sh, sh.sh_type == SHT_GNU_verdef))
				what = "has a version chain that leaves the section";
			break;
		}
		if (what && asprintf(&why, "%s %s", sec, what) > 0)
			return why;
	}
	if (o->versym && dynsyms) {
		GElf_Shdr sh;

		if (gelf_getshdr(o->versym, &sh) && sh.sh_size / 2 != dynsyms)
			return strdup(".gnu.version does not have one entry per dynamic symbol");
	}
	(void)eh;
	return NULL;
}

const char *elfobj__damage(const struct elf_object *o)
{
	struct elf_object *m = (struct elf_object *)o; /* found on first ask, then kept */
	GElf_Ehdr eh;

	if (!m->damage_done && elfobj_loaded(o) && gelf_getehdr(o->elf, &eh)) {
		m->damage = find_damage(o, &eh);
		m->damage_done = true;
	}
	return o->damage;
}
