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
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "account.h"
#include "cachefile.h"
#include "output.h"

#define MAX_LINKS 40 /* the kernel's own bound on links followed in one path */
#define MAX_SUBS 4   /* the root, frames/, debuginfo/ */

struct cf_dir {
	char sub[32]; /* "" for the cache folder itself */
	int fd;
};

static struct {
	bool enabled, warned;
	struct cf_dir dirs[MAX_SUBS];
	size_t n;
} cf;

void cachefile__enable(void)
{
	const char *env = getenv("DLSCOPE_CACHE");

	cf.enabled = !(env && (!strcmp(env, "off") || !strcmp(env, "0") || !strcmp(env, "no")));
}

bool cachefile__enabled(void)
{
	return cf.enabled;
}

int cachefile__root(char *buf, size_t len)
{
	const char *dir = getenv("DLSCOPE_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int n;

	/* XDG's rules call a relative XDG_CACHE_HOME invalid. */
	if (dir && dir[0] == '/')
		n = snprintf(buf, len, "%s", dir);
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/dlscope", xdg);
	else if (home && home[0] == '/')
		n = snprintf(buf, len, "%s/.cache/dlscope", home);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

uint64_t cachefile__checksum_bytewise(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

uint64_t cachefile__checksum(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ len, w;
	size_t i = 0;

	/*
	 * FNV-1a over eight bytes a step (a byte a step took 5% of libs' time, on dpkg's answers).
	 * Each step maps the state one-to-one for a given word, so any one word changed changes
	 * the sum.
	 */
	for (; i + sizeof(w) <= len; i += sizeof(w)) {
		memcpy(&w, b + i, sizeof(w));
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static bool owner_ok(uid_t uid)
{
	return uid == geteuid() || uid == 0;
}

bool cachefile__trusted_source(const struct stat *st)
{
	return owner_ok(st->st_uid) && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* A folder above the cache: ours or root's, and no one else may rename what is in it. */
static bool above_ok(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && owner_ok(st->st_uid) &&
	       (!(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX));
}

/* The cache folder, its subfolders and files: the effective user's alone. */
static bool ours(const struct stat *st)
{
	return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * Say once per run why a cache is not used: @path failed the rule (@st its stat; @by_owner: for
 * its owner, else for its mode), @what is the cache or file left alone. Silent failures (no such
 * folder, a read-only disk) only cost time; these mean someone else could have written what
 * dlscope would read, or could redirect what it writes.
 */
static void untrusted(const char *what, const char *path, const struct stat *st, bool by_owner)
{
	const char *subject = strcmp(what, path) ? path : "it";
	char owner[96], me[96], why[PATH_MAX + 256];

	if (cf.warned)
		return;
	cf.warned = true;
	account__describe(st->st_uid, owner, sizeof(owner));
	account__describe(geteuid(), me, sizeof(me));
	if (by_owner)
		snprintf(why, sizeof(why), "%s belongs to %s, not to %s", subject, owner, me);
	else if (S_ISLNK(st->st_mode))
		snprintf(why, sizeof(why), "%s is a symbolic link", subject);
	else
		snprintf(why, sizeof(why), "%s is writable by %s (mode %04o)", subject,
			 st->st_mode & S_IWOTH ? "others" : "its group",
			 (unsigned)(st->st_mode & 07777));
	dls_warn("not using the cache %s: %s; a cache must be its user's own and writable by no "
		 "one else (see DLSCOPE_CACHE_DIR, --no-cache)",
		 what, why);
}

/* @shown += "/" @comp, for messages. */
static void show_add(char *shown, size_t len, const char *comp)
{
	size_t at = strlen(shown);

	snprintf(shown + at, len - at, "%s%s", at && shown[at - 1] == '/' ? "" : "/", comp);
}

/* Where a walk is: the folder reached, what is left of the path, and that path as shown. */
struct walk_at {
	int fd, links;
	char rest[2 * PATH_MAX], shown[PATH_MAX];
	const char *p;
	struct stat st; /* of the last thing looked at */
};

/* walk_link's answer for a link that is neither ours nor root's: the walk stops there. */
#define WALK_ABOVE 1

/*
 * The component @comp just reached is a symbolic link (@w->st): go on through its target, from
 * "/" when it is absolute. 0 to go on, WALK_ABOVE, or -errno with @w->fd closed.
 */
static int walk_link(struct walk_at *w, const char *comp)
{
	char target[PATH_MAX], next[2 * PATH_MAX];
	ssize_t n;

	show_add(w->shown, sizeof(w->shown), comp);
	if (!owner_ok(w->st.st_uid))
		return WALK_ABOVE;
	n = readlinkat(w->fd, comp, target, sizeof(target) - 1);
	if (n <= 0 || ++w->links > MAX_LINKS) {
		close(w->fd);
		return n < 0 ? -errno : -ELOOP;
	}
	target[n] = '\0';
	if (snprintf(next, sizeof(next), "%s/%s", target, w->p) >= (int)sizeof(w->rest)) {
		close(w->fd);
		return -ENAMETOOLONG;
	}
	memcpy(w->rest, next, strlen(next) + 1);
	w->p = w->rest;
	if (target[0] == '/') {
		close(w->fd);
		w->fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (w->fd < 0)
			return -errno;
		snprintf(w->shown, sizeof(w->shown), "/");
	} else {
		*strrchr(w->shown, '/') = '\0';
	}
	return 0;
}

/*
 * The folder @path opened (O_PATH) by walking from "/" through folders checked with above_ok,
 * following only links of ours or root's, making the missing ones (0700) when @create; the last
 * must be ours(). -EPERM (said once) when a folder or link fails the rule.
 */
static int walk(const char *path, bool create)
{
	struct walk_at w = { .fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), .shown = "/" };
	char comp[NAME_MAX + 1];
	int err;

	if (w.fd < 0)
		return -errno;
	if (fstat(w.fd, &w.st)) {
		close(w.fd);
		return -EIO;
	}
	if (!above_ok(&w.st))
		goto above;
	snprintf(w.rest, sizeof(w.rest), "%s", path);
	w.p = w.rest;
	for (;;) {
		size_t clen;
		int nfd;

		while (*w.p == '/')
			w.p++;
		if (!*w.p)
			break;
		clen = strcspn(w.p, "/");
		if (clen > NAME_MAX) {
			close(w.fd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, w.p, clen);
		comp[clen] = '\0';
		w.p += clen;
		if (!strcmp(comp, "."))
			continue;
		nfd = openat(w.fd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && create &&
		    (!mkdirat(w.fd, comp, 0700) || errno == EEXIST))
			nfd = openat(w.fd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		err = nfd < 0 ? -errno : 0;
		if ((err == -ENOTDIR || err == -ELOOP) &&
		    !fstatat(w.fd, comp, &w.st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(w.st.st_mode)) {
			err = walk_link(&w, comp);
			if (err == WALK_ABOVE)
				goto above;
			if (err)
				return err;
			continue;
		}
		if (nfd < 0) {
			close(w.fd);
			return err;
		}
		close(w.fd);
		w.fd = nfd;
		show_add(w.shown, sizeof(w.shown), comp);
		if (fstat(w.fd, &w.st)) {
			close(w.fd);
			return -EIO;
		}
		if (!above_ok(&w.st))
			goto above;
	}
	/* Of the folder reached (the last thing looked at may have been a link to "/"). */
	if (fstat(w.fd, &w.st)) {
		close(w.fd);
		return -EIO;
	}
	if (ours(&w.st))
		return w.fd;
	close(w.fd);
	untrusted(path, w.shown, &w.st, w.st.st_uid != geteuid());
	return -EPERM;
above:
	close(w.fd);
	untrusted(path, w.shown, &w.st, !owner_ok(w.st.st_uid));
	return -EPERM;
}

/* @sub of the cache folder opened and checked: an O_PATH descriptor, or -errno. */
static int open_sub(int rfd, const char *sub, bool create)
{
	char path[PATH_MAX + 64];
	struct stat st;
	int fd = openat(rfd, sub, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT && create && (!mkdirat(rfd, sub, 0700) || errno == EEXIST))
		fd = openat(rfd, sub, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		/* A link there is not followed: the cache's folders are its own. */
		if (fstatat(rfd, sub, &st, AT_SYMLINK_NOFOLLOW) || !S_ISLNK(st.st_mode))
			return err;
	} else if (!fstat(fd, &st) && ours(&st)) {
		return fd;
	} else {
		close(fd);
	}
	if (cachefile__root(path, sizeof(path)))
		return -EPERM;
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", sub);
	untrusted(path, path, &st, !S_ISLNK(st.st_mode) && st.st_uid != geteuid());
	return -EPERM;
}

int cachefile__dir(const char *sub, bool create)
{
	char root[PATH_MAX];
	int fd;

	if (!cf.enabled)
		return -ENOENT;
	sub = sub ? sub : "";
	/* A folder found untrusted stays so for the run (-EPERM kept): said once, walked once. */
	for (size_t i = 0; i < cf.n; i++)
		if (!strcmp(cf.dirs[i].sub, sub))
			return cf.dirs[i].fd;
	if (cf.n == MAX_SUBS || strlen(sub) >= sizeof(cf.dirs[0].sub) || strchr(sub, '/'))
		return -EINVAL;
	if (sub[0]) {
		int rfd = cachefile__dir(NULL, create);

		fd = rfd < 0 ? rfd : open_sub(rfd, sub, create);
	} else {
		fd = cachefile__root(root, sizeof(root));
		if (!fd)
			fd = walk(root, create);
	}
	if (fd >= 0 || fd == -EPERM) {
		snprintf(cf.dirs[cf.n].sub, sizeof(cf.dirs[0].sub), "%s", sub);
		cf.dirs[cf.n++].fd = fd;
	}
	return fd;
}

/* @name in @sub, for messages. */
static void file_path(const char *sub, const char *name, char *buf, size_t len)
{
	if (cachefile__root(buf, len))
		snprintf(buf, len, "?");
	snprintf(buf + strlen(buf), len - strlen(buf), "%s%s/%s", sub ? "/" : "", sub ? sub : "",
		 name);
}

int cachefile__open(const char *sub, const char *name, size_t max, struct stat *st)
{
	int dfd = cachefile__dir(sub, false), fd;

	if (dfd < 0)
		return dfd;
	if (strchr(name, '/'))
		return -EINVAL;
	/* No link followed, no wait for a FIFO's writer, no terminal taken. */
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EINVAL : -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (!ours(st)) {
		char path[PATH_MAX + 64];

		close(fd);
		file_path(sub, name, path, sizeof(path));
		untrusted(path, path, st, st->st_uid != geteuid());
		return -EPERM;
	}
	if ((uint64_t)st->st_size > max) {
		close(fd);
		return -EFBIG;
	}
	return fd;
}

int cachefile__read(const char *sub, const char *name, size_t max, char **data, size_t *len)
{
	struct stat st;
	size_t got = 0;
	char *buf;
	int fd;

	*data = NULL;
	*len = 0;
	fd = cachefile__open(sub, name, max, &st);
	if (fd < 0)
		return fd;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	/* One byte more than its size: a file that grew meanwhile is not half-read. */
	while (got <= (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)st.st_size + 1 - got, (off_t)got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		free(buf);
		return -EIO; /* it changed under us */
	}
	buf[got] = '\0';
	*data = buf;
	*len = got;
	return 0;
}

int cachefile__create(const char *sub, const char *name, char *tmp, size_t tmplen)
{
	static unsigned seq;
	struct timespec ts;
	int dfd = cachefile__dir(sub, true), fd = -EEXIST;

	if (dfd < 0)
		return dfd;
	if (strchr(name, '/'))
		return -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	for (int i = 0; i < 16 && fd == -EEXIST; i++) {
		if (snprintf(tmp, tmplen, "%s.%d-%lx-%u.tmp", name, (int)getpid(),
			     (unsigned long)ts.tv_nsec, seq++) >= (int)tmplen)
			return -ENAMETOOLONG;
		fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			fd = -errno;
	}
	return fd;
}

int cachefile__commit(const char *sub, const char *tmp, const char *name, bool ok)
{
	int dfd = cachefile__dir(sub, false), err;

	if (dfd < 0)
		return dfd;
	/* rename is atomic: a reader sees the old file or the new one, never a mix. */
	if (ok && !renameat(dfd, tmp, dfd, name))
		return 0;
	err = ok ? -errno : -EIO;
	unlinkat(dfd, tmp, 0);
	return err;
}

static int write_parts(const char *sub, const char *name, const struct iovec *iov, int n)
{
	char tmp[NAME_MAX + 1];
	bool ok = true;
	int fd = cachefile__create(sub, name, tmp, sizeof(tmp));

	if (fd < 0)
		return fd;
	for (int i = 0; i < n && ok; i++) {
		const char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left && ok) {
			ssize_t w = write(fd, p, left);

			ok = w > 0;
			if (ok) {
				p += w;
				left -= (size_t)w;
			}
		}
	}
	if (close(fd))
		ok = false;
	return cachefile__commit(sub, tmp, name, ok);
}

int cachefile__write(const char *sub, const char *name, const void *data, size_t len)
{
	struct iovec iov = { (void *)data, len };

	return write_parts(sub, name, &iov, 1);
}

/* After the data: a file cut short loses it, and a changed byte fails its checksum. */
struct seal {
	char magic[8];
	uint64_t len, sum;
};
#define SEAL_MAGIC "dlsseal2" /* 2: the checksum by words */

int cachefile__write_sealed(const char *sub, const char *name, const void *data, size_t len)
{
	struct seal s = { .len = len, .sum = cachefile__checksum(data, len) };
	struct iovec iov[2] = { { (void *)data, len }, { &s, sizeof(s) } };

	memcpy(s.magic, SEAL_MAGIC, sizeof(s.magic));
	return write_parts(sub, name, iov, 2);
}

int cachefile__read_sealed(const char *sub, const char *name, size_t max, char **data, size_t *len)
{
	struct seal s;
	int err = cachefile__read(sub, name, max + sizeof(s), data, len);

	if (err)
		return err;
	if (*len >= sizeof(s)) {
		memcpy(&s, *data + *len - sizeof(s), sizeof(s));
		if (!memcmp(s.magic, SEAL_MAGIC, sizeof(s.magic)) && s.len == *len - sizeof(s) &&
		    s.sum == cachefile__checksum(*data, (size_t)s.len)) {
			*len = (size_t)s.len;
			(*data)[*len] = '\0';
			return 0;
		}
	}
	free(*data);
	*data = NULL;
	*len = 0;
	return -EBADMSG;
}

void cache_wbuf__put(struct cache_wbuf *w, const void *data, size_t len)
{
	if (w->oom || !len)
		return;
	if (ARRAY_RESERVE(w->p, w->cap, w->len + len)) {
		w->oom = true;
		return;
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
