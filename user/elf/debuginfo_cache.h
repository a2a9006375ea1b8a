/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Separate debug info, found like libdwfl's standard callback, but with compressed sections
 * (Debian's libc6-dbg) inflated once into a per-user cache keyed by build-id: inflating
 * glibc's .debug_info costs a quarter of a second every run otherwise.
 */
#ifndef DLSCOPE_DEBUGINFO_CACHE_H
#define DLSCOPE_DEBUGINFO_CACHE_H

#include <elfutils/libdwfl.h>

/* A Dwfl_Callbacks.find_debuginfo. The cache lives in $DLSCOPE_CACHE_DIR, else
 * $XDG_CACHE_HOME/dlscope, else ~/.cache/dlscope; without one, it behaves as the standard one. */
int debuginfo_cache__find(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name);

/*
 * dlscope's cache folder's entry @sub ("debuginfo", "frames", "elf-v1.cache") in @buf: under
 * $DLSCOPE_CACHE_DIR, $XDG_CACHE_HOME/dlscope or $HOME/.cache/dlscope (absolute paths only).
 * -ENOENT when there is none, -ENAMETOOLONG.
 */
int debuginfo_cache__dir(const char *sub, char *buf, size_t len);
/* mkdir -p @path (modified while it runs, restored), mode 0700. */
int debuginfo_cache__mkdir(char *path);

#endif
