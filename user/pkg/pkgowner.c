// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "pkgowner.h"

#define MAX_LINKS 40 /* as the kernel's path walk */

/* The databases of one root directory, read as files ask for them. */
struct pkg_root {
	dev_t dev;
	ino_t ino;
	int fd;
	struct pathmap dirs; /* directories already looked at for dist-info and conda-meta */
	struct pkg_index pip, conda, deb;
	struct pkg_index unclaimed; /* RECORDs no INSTALLER claims: after dpkg */
	struct dpkg_lists lists;    /* what earlier passes over dpkg's lists learnt */
	bool deb_read;
	struct pathmap memo;	  /* path as asked -> owner, or &no_owner */
	struct pathmap real_dirs; /* directory as asked -> its resolved path (a copy) */
};

struct pkg_cache {
	struct pkg_root **roots;
	size_t n, cap;
};

static const struct pkg_owner no_owner;

struct pkg_cache *pkg_cache__new(void)
{
	return calloc(1, sizeof(struct pkg_cache));
}

void pkg_cache__free(struct pkg_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		struct pkg_root *r = c->roots[i];

		close(r->fd);
		pathmap__free(&r->dirs);
		pathmap__free(&r->memo);
		for (size_t k = 0; k < r->real_dirs.n; k++)
			free(r->real_dirs.e[k].val);
		pathmap__free(&r->real_dirs);
		pkgindex__free(&r->pip);
		pkgindex__free(&r->conda);
		pkgindex__free(&r->deb);
		pkgindex__free(&r->unclaimed);
		dpkg_lists__free(&r->lists);
		free(r);
	}
	free(c->roots);
	free(c);
}

/* Processes in one container (or on the host) share a root: keyed by its device and inode. */
static struct pkg_root *root_of(struct pkg_cache *c, int root_fd)
{
	struct pkg_root *r;
	struct stat st;

	if (fstat(root_fd, &st))
		return NULL;
	for (size_t i = 0; i < c->n; i++)
		if (c->roots[i]->dev == st.st_dev && c->roots[i]->ino == st.st_ino)
			return c->roots[i];
	if (ARRAY_RESERVE(c->roots, c->cap, c->n + 1))
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
	if (r->fd < 0) {
		free(r);
		return NULL;
	}
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	c->roots[c->n++] = r;
	return r;
}

static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

int pkg_path__resolve(int root_fd, const char *path, char *out, size_t outlen)
{
	/* @rest: what is left to walk; @out: the resolved part, without a trailing slash. */
	char rest[PATH_MAX * 2], target[PATH_MAX];
	size_t used = 0, pos = 0;
	int links = 0;

	if (snprintf(rest, sizeof(rest), "%s", path) >= (int)sizeof(rest) || outlen < 2)
		return -ENAMETOOLONG;
	out[0] = '\0';
	while (rest[pos]) {
		size_t len;
		ssize_t tl;

		while (rest[pos] == '/')
			pos++;
		len = strcspn(rest + pos, "/");
		if (!len)
			break;
		if (len == 1 && rest[pos] == '.') {
			pos += len;
			continue;
		}
		if (len == 2 && rest[pos] == '.' && rest[pos + 1] == '.') {
			while (used && out[--used] != '/')
				;
			out[used] = '\0';
			pos += len;
			continue;
		}
		if (used + 1 + len >= outlen)
			return -ENAMETOOLONG;
		out[used] = '/';
		memcpy(out + used + 1, rest + pos, len);
		out[used + 1 + len] = '\0';
		pos += len;
		tl = readlinkat(root_fd, out + 1, target, sizeof(target) - 1);
		if (tl < 0) {
			if (errno != EINVAL)
				return -errno;
			used += 1 + len; /* not a link: keep the component */
			continue;
		}
		if (++links > MAX_LINKS)
			return -ELOOP;
		target[tl] = '\0';
		/* The link's target, then what was left after the link. */
		if (strlen(target) + 1 + strlen(rest + pos) >= sizeof(rest))
			return -ENAMETOOLONG;
		memmove(rest + strlen(target) + 1, rest + pos, strlen(rest + pos) + 1);
		memcpy(rest, target, strlen(target));
		rest[strlen(target)] = '/';
		pos = 0;
		if (target[0] == '/')
			used = 0;
		out[used] = '\0';
	}
	if (!used)
		snprintf(out, outlen, "/");
	return 0;
}

/*
 * Look at each directory above @path once: a *.dist-info or *.egg-info in it makes it a
 * site-packages (pip's records), a conda-meta makes it a conda prefix.
 */
static void scan_ancestors(struct pkg_root *r, const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	while ((slash = strrchr(dir, '/'))) {
		bool site = false, conda = false;
		struct dirent *de;
		int fd, put;
		DIR *d;

		*slash = '\0';
		put = pathmap__put(&r->dirs, dir, strlen(dir), &r->dirs, 1);
		if (put == 0)
			break; /* this one and those above were looked at for an earlier file */
		if (put < 0)
			return;
		fd = openat(r->fd, rel(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || !(d = fdopendir(fd))) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		while ((de = readdir(d)) && !(site && conda)) {
			const char *dot = strrchr(de->d_name, '.');

			site = site ||
			       (dot && (!strcmp(dot, ".dist-info") || !strcmp(dot, ".egg-info")));
			conda = conda || !strcmp(de->d_name, "conda-meta");
		}
		closedir(d);
		/* An unreadable record is no owner: nothing to tell the user. */
		if (site)
			pkgindex__add_site(&r->pip, &r->unclaimed, r->fd, dir[0] ? dir : "/");
		if (conda)
			pkgindex__add_conda(&r->conda, r->fd, dir[0] ? dir : "/");
	}
}

/* The other name of a /usr-merged path: /lib/x -> /usr/lib/x, /usr/bin/x -> /bin/x. */
static bool usr_alias(const char *path, char *out, size_t len)
{
	static const char *const merged[] = {
		"bin/", "sbin/", "lib/", "lib32/", "lib64/", "libx32/"
	};
	const char *tail = !strncmp(path, "/usr/", 5) ? path + 5 : path + 1;

	for (size_t i = 0; i < sizeof(merged) / sizeof(merged[0]); i++) {
		if (strncmp(tail, merged[i], strlen(merged[i])))
			continue;
		return snprintf(out, len, "%s/%s", tail == path + 1 ? "/usr" : "", tail) < (int)len;
	}
	return false;
}

static bool same_file(int root_fd, const char *a, const char *b)
{
	struct stat sa, sb;

	return !fstatat(root_fd, rel(a), &sa, 0) && !fstatat(root_fd, rel(b), &sb, 0) &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* dpkg lists @path, or its /usr-merge alias when that is the same file. */
static const struct pkg_owner *deb_lookup(struct pkg_root *r, const char *path)
{
	const struct pkg_owner *o = pkgindex__get(&r->deb, path);
	char alias[PATH_MAX];

	if (!o && usr_alias(path, alias, sizeof(alias)) && (o = pkgindex__get(&r->deb, alias)) &&
	    !same_file(r->fd, path, alias))
		o = NULL;
	return o;
}

/* A path no Python installer claimed: its names, for one pass over dpkg's lists. */
struct pending {
	size_t i;
	char *asked, *real;
};

static int want(struct pathmap *wanted, const char *path)
{
	char alias[PATH_MAX];

	if (pathmap__put(wanted, path, strlen(path), wanted, 1) < 0)
		return -ENOMEM;
	if (usr_alias(path, alias, sizeof(alias)) &&
	    pathmap__put(wanted, alias, strlen(alias), wanted, 1) < 0)
		return -ENOMEM;
	return 0;
}

/* The resolved path of directory @dir (@len bytes of a path), looked up once per root. */
static const char *real_dir(struct pkg_root *r, const char *dir, size_t len)
{
	char asked[PATH_MAX], real[PATH_MAX], *copy = pathmap__get(&r->real_dirs, dir, len);

	if (copy)
		return copy;
	snprintf(asked, sizeof(asked), "%.*s", (int)len, dir);
	if (pkg_path__resolve(r->fd, len ? asked : "/", real, sizeof(real)) ||
	    !(copy = strdup(real)))
		return NULL;
	if (pathmap__put(&r->real_dirs, dir, len, copy, 1) < 0) {
		free(copy);
		return NULL;
	}
	return copy;
}

/*
 * @path (normalized) resolved inside the root, as pkg_path__resolve, but with each directory
 * resolved once for all the files in it (a process maps hundreds of files from a few
 * directories, most of them links such as libz.so.1 -> libz.so.1.2.13): then only the file's own
 * name is read as a link.
 */
static int resolve_cached(struct pkg_root *r, const char *path, char *out, size_t outlen)
{
	char cur[PATH_MAX * 2], link[PATH_MAX];

	snprintf(cur, sizeof(cur), "%s", path);
	for (int links = 0; links <= MAX_LINKS; links++) {
		const char *slash = strrchr(cur, '/'),
			   *dir = real_dir(r, cur, (size_t)(slash - cur));
		char joined[PATH_MAX * 2];
		ssize_t tl;

		if (!dir)
			return pkg_path__resolve(r->fd, path, out, outlen);
		snprintf(joined, sizeof(joined), "%s%s%s", dir, strcmp(dir, "/") ? "/" : "",
			 slash + 1);
		tl = readlinkat(r->fd, rel(joined), link, sizeof(link) - 1);
		if (tl < 0 && errno != EINVAL)
			return -errno;
		if (tl < 0) /* not a link: the real name */
			return snprintf(out, outlen, "%s", joined) < (int)outlen ? 0 :
										   -ENAMETOOLONG;
		link[tl] = '\0';
		/* Relative to the link's real directory, where ".." is plain text to fold. */
		if (link[0] == '/')
			snprintf(cur, sizeof(cur), "%s", link);
		else
			snprintf(cur, sizeof(cur), "%s/%s", strcmp(dir, "/") ? dir : "", link);
		pkg_path__normalize(cur);
	}
	return -ELOOP;
}

/* The real file is what the mapping holds; a link to it is only a name. @resolved: @asked holds
 * no link. */
static const struct pkg_owner *python_lookup(struct pkg_root *r, char *asked, bool resolved,
					     char *real, size_t len)
{
	const struct pkg_owner *o;

	pkg_path__normalize(asked);
	if (resolved || resolve_cached(r, asked, real, len))
		snprintf(real, len, "%s", asked);
	scan_ancestors(r, real);
	if ((o = pkgindex__get(&r->pip, real)) || (o = pkgindex__get(&r->conda, real)))
		return o;
	return NULL;
}

int pkg_cache__lookup_many(struct pkg_cache *c, int root_fd, const char *const *paths,
			   const bool *real_paths, size_t n, const struct pkg_owner **out)
{
	struct pending *pend = NULL;
	struct pathmap wanted = { 0 };
	struct pkg_root *r;
	size_t n_pend = 0;
	int err = 0;

	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	if (!c || root_fd < 0 || !(r = root_of(c, root_fd)))
		return 0; /* no root, no owners */
	pend = calloc(n ? n : 1, sizeof(*pend));
	if (!pend)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char asked[PATH_MAX], real[PATH_MAX];
		const struct pkg_owner *o;
		struct pending *p = &pend[n_pend];

		if (!paths[i] || paths[i][0] != '/')
			continue;
		if ((o = pathmap__get(&r->memo, paths[i], strlen(paths[i])))) {
			out[i] = o == &no_owner ? NULL : o;
			continue;
		}
		snprintf(asked, sizeof(asked), "%s", paths[i]);
		if ((out[i] = python_lookup(r, asked, real_paths && real_paths[i], real,
					    sizeof(real))))
			continue;
		p->i = i;
		p->asked = strdup(asked);
		p->real = strdup(real);
		n_pend++;
		if (!p->asked || !p->real || want(&wanted, real) || want(&wanted, asked)) {
			err = -ENOMEM;
			goto out;
		}
	}
	/* One pass over dpkg's lists for everything the Python installers left. */
	if (n_pend &&
	    pkgindex__add_dpkg(&r->deb, r->fd, "/var/lib/dpkg", &wanted, &r->lists) == -ENOMEM) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < n_pend; k++) {
		struct pending *p = &pend[k];

		out[p->i] = deb_lookup(r, p->real);
		if (!out[p->i] && strcmp(p->real, p->asked))
			out[p->i] = deb_lookup(r, p->asked);
		if (!out[p->i])
			out[p->i] = pkgindex__get(&r->unclaimed, p->real);
	}
	for (size_t i = 0; i < n; i++)
		if (paths[i] && paths[i][0] == '/' &&
		    pathmap__put(&r->memo, paths[i], strlen(paths[i]),
				 (void *)(out[i] ? out[i] : &no_owner), 1) < 0)
			err = -ENOMEM;
out:
	for (size_t k = 0; k < n_pend; k++) {
		free(pend[k].asked);
		free(pend[k].real);
	}
	pathmap__free(&wanted);
	free(pend);
	return err;
}

const struct pkg_owner *pkg_cache__lookup(struct pkg_cache *c, int root_fd, const char *path)
{
	const struct pkg_owner *o = NULL;

	pkg_cache__lookup_many(c, root_fd, &path, NULL, 1, &o);
	return o;
}
