// SPDX-License-Identifier: GPL-2.0
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "debuginfo_cache.h"
#include "dwarf_member.h"

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	return dwarf_attr_integrate(die, DW_AT_name, &attr) ? dwarf_formstring(&attr) : NULL;
}

/* The structure type of @var, through typedefs and qualifiers. */
static bool struct_type(Dwarf_Die *var, Dwarf_Die *type)
{
	Dwarf_Attribute attr;
	Dwarf_Die *die = var;

	for (int depth = 0; depth < 16; depth++) {
		if (!dwarf_attr_integrate(die, DW_AT_type, &attr) ||
		    !dwarf_formref_die(&attr, type))
			return false;
		switch (dwarf_tag(type)) {
		case DW_TAG_structure_type:
		case DW_TAG_union_type: return true;
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type: die = type; break;
		default: return false;
		}
	}
	return false;
}

static int member_at(Dwarf_Die *type, uint64_t offset, char *buf, size_t len)
{
	Dwarf_Die member;

	if (dwarf_child(type, &member))
		return -ENOENT;
	do {
		Dwarf_Attribute attr;
		Dwarf_Word where;
		Dwarf_Die mtype;
		Dwarf_Word size;
		const char *name = die_name(&member);

		if (dwarf_tag(&member) != DW_TAG_member || !name ||
		    !dwarf_attr(&member, DW_AT_data_member_location, &attr) ||
		    dwarf_formudata(&attr, &where) ||
		    !dwarf_attr_integrate(&member, DW_AT_type, &attr) ||
		    !dwarf_formref_die(&attr, &mtype) || dwarf_aggregate_size(&mtype, &size))
			continue;
		if (offset >= where && offset < where + size) {
			snprintf(buf, len, "%s", name);
			return 0;
		}
	} while (!dwarf_siblingof(&member, &member));
	return -ENOENT;
}

int dwarf_member_at(const char *path, const char *variable, uint64_t offset, char *buf, size_t len)
{
	static char *debuginfo_path;
	static const Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = debuginfo_cache__find,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &debuginfo_path,
	};
	Dwfl *dwfl = dwfl_begin(&callbacks);
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias;
	Dwfl_Module *mod;
	int err = -ENOENT;

	if (!dwfl)
		return -ENOMEM;
	mod = dwfl_report_offline(dwfl, "", path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	while (mod && err && (cu = dwfl_module_nextcu(mod, cu, &bias))) {
		Dwarf_Die die, type;
		Dwarf_Attribute attr;

		if (dwarf_child(cu, &die))
			continue;
		do {
			const char *name = die_name(&die);

			if (dwarf_tag(&die) != DW_TAG_variable || !name || strcmp(name, variable) ||
			    !dwarf_attr(&die, DW_AT_location, &attr))
				continue;
			if (struct_type(&die, &type))
				err = member_at(&type, offset, buf, len);
			break;
		} while (!dwarf_siblingof(&die, &die));
	}
	dwfl_end(dwfl);
	return err;
}
