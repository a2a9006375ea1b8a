/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which installed distribution owns a file a process maps: a pip wheel (its RECORD), a conda
 * package (conda-meta) or a Debian package (dpkg's lists), read through the process's root so
 * that a container's own package databases answer. Each root's databases are read once, and
 * only those the files need: the site-packages directories and conda prefixes the files live
 * under, and dpkg's lists when no Python installer claims a file. Order: a RECORD whose
 * INSTALLER names pip (or any installer but conda), conda-meta, dpkg, then a RECORD with no
 * INSTALLER (Debian's own python3-* packages ship those).
 */
#ifndef DLSCOPE_PKGOWNER_H
#define DLSCOPE_PKGOWNER_H

#include "pkgindex.h"

struct pkg_cache;

struct pkg_cache *pkg_cache__new(void);
void pkg_cache__free(struct pkg_cache *c);

/*
 * The distribution that owns @path (absolute, as the process under @root_fd sees it), or NULL:
 * no package lists it, or the databases are unreadable (no error: nothing is owned). Symbolic
 * links are followed inside the root, so the real file is attributed (libopenblas.so.0 through
 * /etc/alternatives to OpenBLAS's own file), and a file under /usr-merged /lib is also looked up
 * as /usr/lib (and the reverse) when both names are one file. The result is the cache's, valid
 * until pkg_cache__free.
 */
const struct pkg_owner *pkg_cache__lookup(struct pkg_cache *c, int root_fd, const char *path);
/*
 * The same for @n paths at once, into @out (NULL where none): dpkg's lists are read once for all
 * the paths no Python installer claimed. @real (NULL: none) marks the paths that hold no link
 * (the kernel's names of mappings): not resolved again, a system call less each. 0, or -ENOMEM
 * (@out then holds what was found).
 */
int pkg_cache__lookup_many(struct pkg_cache *c, int root_fd, const char *const *paths,
			   const bool *real, size_t n, const struct pkg_owner **out);

/*
 * @path with its symbolic links resolved inside the root @root_fd (an absolute link starts again
 * at that root, ".." stops there), into @out. 0, or -errno (-ENOENT, -ELOOP, -ENAMETOOLONG).
 */
int pkg_path__resolve(int root_fd, const char *path, char *out, size_t outlen);

#endif
