/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers on path strings, shared by every layer. */
#ifndef DLSCOPE_PATHS_H
#define DLSCOPE_PATHS_H

#include <string.h>

/* The last component of @path ("libc.so.6" of "/lib/x86_64-linux-gnu/libc.so.6"); "" for NULL. */
static inline const char *path_base(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path ? path : "";
}

#endif
