/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dlscope's persistent cache files (~/.cache/dlscope: the ELF analyses, dpkg's answers): read
 * only when they are ours (owned by the effective user, in a folder of ours, writable by no one
 * else, not a link), written whole to a temporary file renamed over the old one, so that
 * concurrent dlscope processes never see half a file.
 */
#ifndef DLSCOPE_CACHEFILE_H
#define DLSCOPE_CACHEFILE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The contents of cache file @path (malloc'd, NUL-terminated beyond @len) when it is ours and
 * at most @max bytes. 0, or -errno (-ENOENT absent, -EPERM not ours, -EFBIG too large).
 */
int cachefile__read(const char *path, size_t max, char **data, size_t *len);
/* Replace cache file @path with @len bytes of @data, making its folders (0700). 0 or -errno. */
int cachefile__write(const char *path, const void *data, size_t len);

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
