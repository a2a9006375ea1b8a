/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What package managers record about the files they installed, read through a root directory
 * (a process's /proc/PID/root): pip's *.dist-info/RECORD and *.egg-info/installed-files.txt, conda's
 * conda-meta/NAME.json, dpkg's info/PACKAGE.list with the versions of its status file. Each source adds
 * "absolute path as seen under the root -> installed distribution" to an index.
 */
#ifndef DLSCOPE_PKGINDEX_H
#define DLSCOPE_PKGINDEX_H

#include <jansson.h>
#include <stddef.h>

#include "pathmap.h"

enum pkg_manager {
	PKG_PIP,
	PKG_CONDA,
	PKG_DEB,
};

/* One installed distribution: "torch 2.1.0 (pip)", "libc6 2.36-9+deb12u4 (deb)". */
struct pkg_owner {
	enum pkg_manager manager;
	char *name;
	char *version; /* "" when the record has none */
};

struct pkg_index {
	struct pathmap files; /* path -> struct pkg_owner * (keys copied) */
	struct pkg_owner **owners;
	size_t n_owners, cap_owners;
};

/*
 * pip: the distributions installed in directory @dir (a site-packages, or any --target): each
 * *.dist-info with a RECORD (paths relative to @dir) and each *.egg-info with an
 * installed-files.txt (relative to itself). A dist-info whose INSTALLER is conda is left to
 * conda; one with no INSTALLER (what Debian's packages ship) and every egg-info go to
 * @unclaimed, to be asked after the system's package manager. @root_fd: the root directory
 * @dir is under. Returns the distributions added, or -errno.
 */
int pkgindex__add_site(struct pkg_index *ix, struct pkg_index *unclaimed, int root_fd,
		       const char *dir);
/* conda: the packages of the environment at @prefix, from its conda-meta/NAME.json. */
int pkgindex__add_conda(struct pkg_index *ix, int root_fd, const char *prefix);
/*
 * What a pass over dpkg's lists learnt of each one: the directories its paths are in, as a
 * 512-bit Bloom filter. A later pass (watch asks again after every dlopen) opens only the lists
 * that may name a wanted path's directory, and the lists it has not seen. A list rewritten
 * during the run (a package upgraded meanwhile) is trusted as first read.
 */
struct dpkg_answers;
struct dpkg_lists {
	struct pathmap blooms; /* list file name -> uint64_t[8] */
	/* dpkg's answers file, read once while dpkg changes nothing and written back once, at
	 * dpkg_lists__free: a live collector looks up each new object as it arrives, and read
	 * and rewrote the whole file each time (0.8 ms, in a thread's hold). */
	struct dpkg_answers *answers;
};
void dpkg_lists__free(struct dpkg_lists *l);

/*
 * dpkg: the packages whose file lists under @admindir ("/var/lib/dpkg") name a path of @wanted
 * (keys only), versions from its status file. Only those paths are added: indexing all of a
 * system's 180,000 would cost more than reading the lists once per batch of lookups. @learnt
 * (may be NULL) is read and extended. Returns the packages found, or -errno.
 */
int pkgindex__add_dpkg(struct pkg_index *ix, int root_fd, const char *admindir,
		       const struct pathmap *wanted, struct dpkg_lists *learnt);
/* The distribution that lists @path (absolute, as seen under the root), or NULL. */
const struct pkg_owner *pkgindex__get(const struct pkg_index *ix, const char *path);
void pkgindex__free(struct pkg_index *ix);

/* "pip", "conda", "deb". */
const char *pkg_manager__id(enum pkg_manager m);
/* "torch 2.1.0 (pip)". */
void pkg_owner__describe(const struct pkg_owner *o, char *buf, size_t len);
/* {"manager": "pip"|"conda"|"deb", "name", "version"}; null for NULL. */
json_t *pkg_owner__to_json(const struct pkg_owner *o);
/* A copy the caller frees with pkg_owner__free; NULL when out of memory. */
struct pkg_owner *pkg_owner__dup(const struct pkg_owner *o);
void pkg_owner__free(struct pkg_owner *o);

/*
 * Collapse "." and ".." and repeated slashes of an absolute path in place ("/a/b/../c" -> "/a/c");
 * ".." stops at "/". Returns its new length.
 */
size_t pkg_path__normalize(char *path);

#endif
