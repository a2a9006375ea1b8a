// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachefile.h"

/* Ours: owned by the effective user and writable by no one else. */
static bool ours(const struct stat *st)
{
	return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * The last folder found ours: check reads and writes a file per object in one folder, and
 * asking again for each (a stat, and a mkdir per component to write) was most of a cold run.
 */
static char trusted_dir[PATH_MAX];

static bool dir_ours(const char *path)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return false;
	*slash = '\0';
	if (!strcmp(dir, trusted_dir))
		return true;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode) || !ours(&st))
		return false;
	snprintf(trusted_dir, sizeof(trusted_dir), "%s", dir);
	return true;
}

int cachefile__read(const char *path, size_t max, char **data, size_t *len)
{
	struct stat st;
	char *buf;
	int fd, err = 0;

	*data = NULL;
	*len = 0;
	if (!dir_ours(path))
		return -EPERM;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !ours(&st))
		err = -EPERM;
	else if ((uint64_t)st.st_size > max)
		err = -EFBIG;
	else if (!(buf = malloc((size_t)st.st_size + 1)))
		err = -ENOMEM;
	else if (pread(fd, buf, (size_t)st.st_size + 1, 0) != st.st_size) {
		free(buf);
		err = -EIO; /* it changed under us */
	} else {
		buf[st.st_size] = '\0';
		*data = buf;
		*len = (size_t)st.st_size;
	}
	close(fd);
	return err;
}

/* mkdir -p for the folder of @file, private. */
static int make_dirs(const char *file)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", file);
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

int cachefile__write(const char *path, const void *data, size_t len)
{
	char tmp[PATH_MAX];
	ssize_t wr;
	int fd, err = 0;

	if ((!dir_ours(path) && make_dirs(path)) || !dir_ours(path))
		return -EACCES;
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	wr = write(fd, data, len);
	if (wr != (ssize_t)len)
		err = -EIO;
	if (close(fd) && !err)
		err = -EIO;
	/* rename is atomic: a reader sees the old file or the new one, never a mix. */
	if (err || rename(tmp, path)) {
		err = err ? err : -errno;
		unlink(tmp);
	}
	return err;
}

void cache_wbuf__put(struct cache_wbuf *w, const void *data, size_t len)
{
	if (w->oom || !len)
		return;
	if (w->len + len > w->cap) {
		size_t ncap = w->cap ? w->cap : 4096;
		unsigned char *np;

		while (ncap < w->len + len)
			ncap *= 2;
		np = realloc(w->p, ncap);
		if (!np) {
			w->oom = true;
			return;
		}
		w->p = np;
		w->cap = ncap;
	}
	memcpy(w->p + w->len, data, len);
	w->len += len;
}

void cache_rbuf__get(struct cache_rbuf *r, void *out, size_t len)
{
	if (!len)
		return;
	if (r->bad || r->left < len) {
		r->bad = true;
		memset(out, 0, len);
		return;
	}
	memcpy(out, r->p, len);
	r->p += len;
	r->left -= len;
}

char *cache_rbuf__str(struct cache_rbuf *r, size_t len, size_t max)
{
	char *s;

	if (r->bad || len > max || r->left < len || memchr(r->p, '\0', len)) {
		r->bad = true;
		return NULL;
	}
	s = strndup((const char *)r->p, len);
	if (!s)
		r->bad = true;
	r->p += len;
	r->left -= len;
	return s;
}
