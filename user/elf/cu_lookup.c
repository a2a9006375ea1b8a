// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <gelf.h>
#include <string.h>

#include "cu_lookup.h"

static const Elf_Data *aranges_data(Dwarf *dbg)
{
	Elf *elf = dwarf_getelf(dbg);
	const char *ident = elf ? elf_getident(elf, NULL) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	/* The scan below reads little-endian words. */
	if (!ident || ident[EI_DATA] != ELFDATA2LSB || elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".debug_aranges"))
			continue;
		/* libdw inflates the sections it reads; one left compressed is libdw's to read. */
		return sh.sh_flags & SHF_COMPRESSED ? NULL : elf_getdata(scn, NULL);
	}
	return NULL;
}

static uint64_t get_le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* The .debug_info offset of the unit whose ranges hold @addr, or -1. */
static int64_t unit_of(const unsigned char *p, size_t len, uint64_t addr)
{
	size_t off = 0;

	while (off + 4 <= len) {
		uint64_t unit_len = get_le(p + off, 4), info;
		size_t hdr = off + 4, end, t;
		unsigned offsz = 4, asz, segsz, tuple;

		if (unit_len == 0xffffffff) {
			if (hdr + 8 > len)
				return -1;
			unit_len = get_le(p + hdr, 8);
			hdr += 8;
			offsz = 8;
		} else if (unit_len >= 0xfffffff0) {
			return -1;
		}
		if (unit_len > len - hdr || unit_len < 2 + offsz + 2)
			return -1;
		end = hdr + unit_len;
		if (get_le(p + hdr, 2) != 2) /* the only version of the section */
			return -1;
		info = get_le(p + hdr + 2, offsz);
		asz = p[hdr + 2 + offsz];
		segsz = p[hdr + 3 + offsz];
		if ((asz != 4 && asz != 8) || segsz)
			return -1;
		tuple = 2 * asz;
		/* Tuples start at a multiple of their size from the set's start. */
		t = hdr + 4 + offsz - off;
		t = off + (t + tuple - 1) / tuple * tuple;
		for (; t + tuple <= end; t += tuple) {
			uint64_t a = get_le(p + t, asz), l = get_le(p + t + asz, asz);

			if (!a && !l)
				break;
			if (addr >= a && addr - a < l)
				return (int64_t)info;
		}
		off = end;
	}
	return -1;
}

int cu_lookup(Dwarf *dbg, Dwarf_Addr addr, Dwarf_Die *cudie)
{
	const Elf_Data *d = dbg ? aranges_data(dbg) : NULL;
	Dwarf_Off next;
	size_t hsize;
	int64_t unit;

	if (!d || !d->d_buf)
		return -ENOENT;
	unit = unit_of(d->d_buf, d->d_size, addr);
	if (unit < 0 ||
	    dwarf_next_unit(dbg, (Dwarf_Off)unit, &next, &hsize, NULL, NULL, NULL, NULL, NULL,
			    NULL) ||
	    !dwarf_offdie(dbg, (Dwarf_Off)unit + hsize, cudie))
		return -ENOENT;
	return 0;
}
