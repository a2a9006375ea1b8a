/* SPDX-License-Identifier: GPL-2.0 */
/* Which member of a global variable an address falls in, from the object's DWARF. */
#ifndef DLSCOPE_DWARF_MEMBER_H
#define DLSCOPE_DWARF_MEMBER_H

#include <stddef.h>
#include <stdint.h>

/*
 * In the object at @path (its separate debug info is found by build-id), name the member of the
 * global @variable at byte @offset: "_dl_load_lock". Returns 0, or -ENOENT without debug info.
 */
int dwarf_member_at(const char *path, const char *variable, uint64_t offset, char *buf, size_t len);

#endif
