/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dlscope's persistent cache files (~/.cache/dlscope: the ELF analyses, dpkg's answers): read
 * only when they are ours (owned by the effective user, in a folder of ours, writable by no one
 * else, not a link), written whole to a temporary file renamed over the old one, so that
 * concurrent dlscope processes never see half a file.
 */
#ifndef DLSCOPE_CACHEFILE_H
#define DLSCOPE_CACHEFILE_H

#include <stddef.h>

/*
 * The contents of cache file @path (malloc'd, NUL-terminated beyond @len) when it is ours and
 * at most @max bytes. 0, or -errno (-ENOENT absent, -EPERM not ours, -EFBIG too large).
 */
int cachefile__read(const char *path, size_t max, char **data, size_t *len);
/* Replace cache file @path with @len bytes of @data, making its folders (0700). 0 or -errno. */
int cachefile__write(const char *path, const void *data, size_t len);

#endif
