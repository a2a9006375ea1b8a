/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The compile unit that covers an address, from .debug_aranges read in place. libdw 0.188's
 * dwarf_getaranges (under dwfl_module_addrdie and dwfl_module_getsrc) builds the table of every
 * unit, one allocation per range and a lookup of each unit: for glibc's 2,000 units that is
 * most of the time `stacks` spends naming pcs. Scanning the section for the few pcs of a stack
 * allocates nothing, and only the units up to the one found are read.
 */
#ifndef DLSCOPE_CU_LOOKUP_H
#define DLSCOPE_CU_LOOKUP_H

#include <elfutils/libdw.h>

/*
 * The unit DIE covering @addr (an address in @dbg's terms) in @cudie: 0, or -ENOENT when the
 * section is absent, compressed, malformed, or names no unit for @addr (then the caller asks
 * libdw, whose answer is the same table's).
 */
int cu_lookup(Dwarf *dbg, Dwarf_Addr addr, Dwarf_Die *cudie);

#endif
