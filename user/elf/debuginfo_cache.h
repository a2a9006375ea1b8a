/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Separate debug info, found like libdwfl's standard callback, but with compressed sections
 * (Debian's libc6-dbg) inflated once into a per-user cache keyed by build-id: inflating
 * glibc's .debug_info costs a quarter of a second every run otherwise.
 */
#ifndef DLSCOPE_DEBUGINFO_CACHE_H
#define DLSCOPE_DEBUGINFO_CACHE_H

#include <elfutils/libdwfl.h>

/*
 * A Dwfl_Callbacks.find_debuginfo. The cache is the cache folder's debuginfo/ (cachefile.h: the
 * user's own, reached through folders no one else controls); without one, or with caches off,
 * it behaves as the standard one. A cached file is used only when whole: it ends with a trailer
 * naming the build-id, its length and a checksum of its ELF and section headers (a file emptied
 * or cut short, or another's, is ignored and written again). Only a debug file of root's or the
 * user's, writable by no one else, is copied in: another user's could claim any build-id.
 */
int debuginfo_cache__find(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name);

/*
 * A find_elf callback tells, with the descriptor it opened a module's file from, whether that
 * file is root's or the user's and writable by no one else (kept in the module's userdata).
 */
void debuginfo_cache__note_main(void **userdata, int fd);
/*
 * Whether names read from @mod's DWARF may be kept under its build-id (the frames cache): its
 * file was noted trusted, and its separate debug file, if any, is trusted too.
 */
bool debuginfo_cache__trusted(Dwfl_Module *mod);

#endif
