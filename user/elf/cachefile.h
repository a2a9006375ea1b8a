/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dlscope's persistent cache files ($DLSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/dlscope, else
 * ~/.cache/dlscope: the ELF analyses, the symbol digests, dpkg's answers, debuginfo/, frames/).
 *
 * Trust: the cache folder is reached from "/" one component at a time (openat, O_NOFOLLOW);
 * each folder above it must belong to the effective user or root and be writable by no one else
 * (a sticky folder such as /tmp excepted: no one can rename what another put there), a symbolic
 * link on the way is followed only when it belongs to the effective user or root, and the cache
 * folder, its subfolders and every file read must belong to the effective user and be writable
 * by no one else. Anything else is ignored, with one line on stderr per run. Files are opened
 * inside the folder checked (openat), never following a link or blocking (a FIFO), regular
 * files of bounded size only, and written whole to a new temporary file (O_EXCL) renamed into
 * place, so concurrent dlscope processes never see half a file.
 */
#ifndef DLSCOPE_CACHEFILE_H
#define DLSCOPE_CACHEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/*
 * Turn the persistent caches on for this process (the CLI does, unless --no-cache or
 * DLSCOPE_CACHE=off/0/no). Off by default: tests and library users read files only.
 */
void cachefile__enable(void);
bool cachefile__enabled(void);
/* The cache folder's path in @buf: 0, -ENOENT when there is none (no absolute HOME), or
 * -ENAMETOOLONG. Absolute paths only: a relative one would follow the working directory. */
int cachefile__root(char *buf, size_t len);

/*
 * The cache folder (@sub NULL) or its subfolder @sub ("frames"), checked as above: a descriptor
 * this module keeps (do not close it), made (0700) when @create. -ENOENT (caches off, no such
 * folder), -EPERM (not trusted: said once on stderr) or another -errno.
 */
int cachefile__dir(const char *sub, bool create);

/*
 * Cache file @name of folder @sub open for reading (O_RDONLY), when it is a regular file of
 * ours of at most @max bytes; *@st its stat. The descriptor, or -errno: -ENOENT absent, -EPERM
 * not ours (said once), -EINVAL not a regular file, -EFBIG larger.
 */
int cachefile__open(const char *sub, const char *name, size_t max, struct stat *st);
/* Its contents (malloc'd, NUL-terminated beyond @len). 0 or -errno as above. */
int cachefile__read(const char *sub, const char *name, size_t max, char **data, size_t *len);
/* Replace it with @len bytes of @data, making the folders (0700). 0 or -errno. */
int cachefile__write(const char *sub, const char *name, const void *data, size_t len);

/*
 * The same with a seal: a trailer (magic, length, checksum) written after the data and checked
 * before any of it is used, for formats without a checksum of their own. A file cut short, or
 * with any byte changed, reads as -EBADMSG.
 */
int cachefile__read_sealed(const char *sub, const char *name, size_t max, char **data, size_t *len);
int cachefile__write_sealed(const char *sub, const char *name, const void *data, size_t len);

/*
 * For a writer that builds its file itself (libelf): a new empty file (0600, O_EXCL) under a
 * temporary name in @sub, made when needed; the descriptor (read-write) and the name in @tmp,
 * or -errno. cachefile__commit renames it over @name when @ok, else removes it.
 */
int cachefile__create(const char *sub, const char *name, char *tmp, size_t tmplen);
int cachefile__commit(const char *sub, const char *tmp, const char *name, bool ok);

/*
 * Whether what was read from a file may go into a cache whose key the file itself claims (a
 * build-id): the file belongs to the effective user or root and no one else can write to it.
 * Another user's file could claim the build-id of the system's libc.
 */
bool cachefile__trusted_source(const struct stat *st);

/* The checksum dlscope's cache files carry (FNV-1a by 64-bit words, folded). */
uint64_t cachefile__checksum(const void *p, size_t len);
/* FNV-1a a byte at a time, the sum before 2026-11-30: debuginfo files' trailers keep it, so that
 * the inflated copies (10 to 25 MB each) written before stay valid. */
uint64_t cachefile__checksum_bytewise(const void *p, size_t len);

/* A cache file's image being built: bytes appended as it grows; @oom once an allocation failed. */
struct cache_wbuf {
	unsigned char *p;
	size_t len, cap;
	bool oom;
};
void cache_wbuf__put(struct cache_wbuf *w, const void *data, size_t len);

/* An image being read back: each read checked against what is left; @bad once one was short. */
struct cache_rbuf {
	const unsigned char *p;
	size_t left;
	bool bad;
};
/* @len bytes into @out, or zeros and @bad set. */
void cache_rbuf__get(struct cache_rbuf *r, void *out, size_t len);
/* The next @len bytes as a string (malloc'd), or NULL and @bad: past @max, short, or with a NUL. */
char *cache_rbuf__str(struct cache_rbuf *r, size_t len, size_t max);

#endif
