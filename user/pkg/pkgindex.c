// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "cachefile.h"
#include "objcache.h"
#include "pkgindex.h"

/* No record of a package manager comes near this; a larger file is not one. */
#define MAX_RECORD_FILE (256u << 20)

const char *pkg_manager__id(enum pkg_manager m)
{
	static const char *ids[] = { [PKG_PIP] = "pip", [PKG_CONDA] = "conda", [PKG_DEB] = "deb" };

	return m <= PKG_DEB ? ids[m] : "?";
}

void pkg_owner__describe(const struct pkg_owner *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s (%s)", o->name, o->version[0] ? " " : "", o->version,
		 pkg_manager__id(o->manager));
}

json_t *pkg_owner__to_json(const struct pkg_owner *o)
{
	if (!o)
		return json_null();
	return json_pack("{s:s, s:s, s:s}", "manager", pkg_manager__id(o->manager), "name", o->name,
			 "version", o->version);
}

struct pkg_owner *pkg_owner__dup(const struct pkg_owner *o)
{
	struct pkg_owner *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	c->manager = o->manager;
	c->name = strdup(o->name);
	c->version = strdup(o->version);
	if (!c->name || !c->version) {
		pkg_owner__free(c);
		return NULL;
	}
	return c;
}

void pkg_owner__free(struct pkg_owner *o)
{
	if (!o)
		return;
	free(o->name);
	free(o->version);
	free(o);
}

size_t pkg_path__normalize(char *path)
{
	char *out = path, *p = path;

	/* out always ends without a slash; components are appended as "/name". */
	while (*p) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (!len)
			break;
		if (len == 1 && p[0] == '.') {
			/* nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (out > path && *--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, p, len);
			out += len;
		}
		p += len;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
	return (size_t)(out - path);
}

/* @path under the root as a relative name for openat(root_fd, ...). */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

/*
 * The whole file, NUL-terminated, in a malloc'd buffer; NULL (errno set) when unreadable or
 * not a regular file (O_NONBLOCK: a FIFO planted as a record must not hang us).
 */
static char *read_at(int root_fd, const char *path, size_t max, size_t *lenp)
{
	int fd = openat(root_fd, rel(path), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	size_t len = 0, cap;
	char *buf = NULL;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size > MAX_RECORD_FILE) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	cap = (size_t)st.st_size < max ? (size_t)st.st_size : max;
	buf = malloc(cap + 1);
	while (buf && len < cap) {
		ssize_t r = read(fd, buf + len, cap - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
}

static DIR *opendir_at(int root_fd, const char *dir)
{
	int fd = openat(root_fd, rel(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (fd >= 0 && !d)
		close(fd);
	return d;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a > b && !strcmp(s + a - b, suffix);
}

static struct pkg_owner *new_owner(struct pkg_index *ix, enum pkg_manager m, const char *name,
				   size_t name_len, const char *version, size_t version_len)
{
	struct pkg_owner *o;

	if (ARRAY_RESERVE(ix->owners, ix->cap_owners, ix->n_owners + 1))
		return NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->manager = m;
	o->name = strndup(name, name_len);
	o->version = strndup(version, version_len);
	if (!o->name || !o->version) {
		pkg_owner__free(o);
		return NULL;
	}
	ix->owners[ix->n_owners++] = o;
	return o;
}

/* @base "/" @name, normalized, into the index (a copy of the key). */
static int put_joined(struct pkg_index *ix, const char *base, const char *name, size_t name_len,
		      struct pkg_owner *o)
{
	char path[PATH_MAX * 2];
	int n;

	if (!name_len)
		return 0;
	if (name[0] == '/')
		n = snprintf(path, sizeof(path), "%.*s", (int)name_len, name);
	else
		n = snprintf(path, sizeof(path), "%s/%.*s", base, (int)name_len, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return 0; /* no real path is this long */
	n = (int)pkg_path__normalize(path);
	return pathmap__put(&ix->files, path, (size_t)n, o, 1) < 0 ? -ENOMEM : 0;
}

/* "Name:" and "Version:" of a core-metadata header (METADATA, PKG-INFO). */
static void metadata_field(const char *text, const char *field, const char **val, size_t *len)
{
	size_t flen = strlen(field);

	for (const char *l = text; l && *l && *l != '\n'; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		if (strncasecmp(l, field, flen) || l[flen] != ':')
			continue;
		l += flen + 1;
		l += strspn(l, " \t");
		*val = l;
		*len = strcspn(l, "\r\n");
		while (*len && (l[*len - 1] == ' ' || l[*len - 1] == '\t'))
			(*len)--;
		return;
	}
}

/*
 * The distribution a *.dist-info or *.egg-info directory describes: Name and Version of its
 * metadata file, else the directory's own name ("foo_bar-1.2.dist-info").
 */
static struct pkg_owner *site_owner(struct pkg_index *ix, int root_fd, const char *infodir,
				    const char *entry, const char *metafile)
{
	char path[PATH_MAX * 2];
	const char *name = entry, *version = "", *suffix = strrchr(entry, '.');
	size_t name_len = strcspn(entry, "-"), version_len = 0;
	struct pkg_owner *o;
	char *meta;

	/* "foo_bar-1.2.dist-info", "foo-1.2-py3.11.egg-info": name, then version up to a '-'. */
	if (name_len > (size_t)(suffix - entry))
		name_len = (size_t)(suffix - entry);
	if (entry[name_len] == '-') {
		version = entry + name_len + 1;
		version_len = strcspn(version, "-");
		if (version_len > (size_t)(suffix - version))
			version_len = (size_t)(suffix - version);
	}
	snprintf(path, sizeof(path), "%s/%s", infodir, metafile);
	/* The header comes first; the long description after it is not needed. */
	meta = read_at(root_fd, path, 16384, NULL);
	if (meta) {
		metadata_field(meta, "Name", &name, &name_len);
		metadata_field(meta, "Version", &version, &version_len);
	}
	o = new_owner(ix, PKG_PIP, name, name_len, version, version_len);
	free(meta);
	return o;
}

/* The first field of a RECORD line (CSV: quoted when it holds a comma or a quote). */
static size_t csv_first(const char *line, size_t len, char *out, size_t outlen)
{
	size_t n = 0;

	if (!len || line[0] != '"') {
		size_t f = 0;

		while (f < len && line[f] != ',')
			f++;
		if (f >= outlen)
			return 0;
		memcpy(out, line, f);
		return f;
	}
	for (size_t i = 1; i < len && n + 1 < outlen; i++) {
		if (line[i] == '"') {
			if (i + 1 < len && line[i + 1] == '"') {
				out[n++] = '"';
				i++;
				continue;
			}
			break;
		}
		out[n++] = line[i];
	}
	return n;
}

static int add_dist_info(struct pkg_index *ix, struct pkg_index *unclaimed, int root_fd,
			 const char *dir, const char *entry)
{
	char infodir[PATH_MAX], path[PATH_MAX + 32], field[PATH_MAX];
	struct pkg_owner *o;
	char *record, *installer;
	size_t len;
	int err = 0;

	snprintf(infodir, sizeof(infodir), "%s/%s", dir, entry);
	snprintf(path, sizeof(path), "%s/INSTALLER", infodir);
	installer = read_at(root_fd, path, 64, NULL);
	/* conda installs pip-built packages with their dist-info: conda-meta names them. */
	if (installer && !strncmp(installer, "conda", 5)) {
		free(installer);
		return 0;
	}
	/* No INSTALLER: Debian's python3-scipy ships a RECORD too; dpkg answers first. */
	if (!installer)
		ix = unclaimed;
	free(installer);
	snprintf(path, sizeof(path), "%s/RECORD", infodir);
	record = read_at(root_fd, path, MAX_RECORD_FILE, &len);
	if (!record)
		return 0; /* Debian's python3-* ship dist-info without RECORD: dpkg knows them */
	o = site_owner(ix, root_fd, infodir, entry, "METADATA");
	if (!o) {
		free(record);
		return -ENOMEM;
	}
	for (char *l = record; !err && l < record + len;) {
		size_t ll = strcspn(l, "\n"), f = csv_first(l, ll, field, sizeof(field));

		while (f && field[f - 1] == '\r')
			f--;
		err = put_joined(ix, dir, field, f, o);
		l += ll + 1;
	}
	free(record);
	return err ? err : 1;
}

static int add_egg_info(struct pkg_index *ix, int root_fd, const char *dir, const char *entry)
{
	char infodir[PATH_MAX], path[PATH_MAX + 32];
	struct pkg_owner *o;
	char *files;
	size_t len;
	int err = 0;

	snprintf(infodir, sizeof(infodir), "%s/%s", dir, entry);
	snprintf(path, sizeof(path), "%s/installed-files.txt", infodir);
	files = read_at(root_fd, path, MAX_RECORD_FILE, &len);
	if (!files)
		return 0;
	o = site_owner(ix, root_fd, infodir, entry, "PKG-INFO");
	if (!o) {
		free(files);
		return -ENOMEM;
	}
	for (char *l = files; !err && l < files + len;) {
		size_t ll = strcspn(l, "\n"), f = ll;

		while (f && l[f - 1] == '\r')
			f--;
		err = put_joined(ix, infodir, l, f, o);
		l += ll + 1;
	}
	free(files);
	return err ? err : 1;
}

int pkgindex__add_site(struct pkg_index *ix, struct pkg_index *unclaimed, int root_fd,
		       const char *dir)
{
	DIR *d = opendir_at(root_fd, dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int r = 0;

		if (ends_with(de->d_name, ".dist-info"))
			r = add_dist_info(ix, unclaimed, root_fd, dir, de->d_name);
		else if (ends_with(de->d_name, ".egg-info"))
			r = add_egg_info(unclaimed, root_fd, dir, de->d_name);
		if (r < 0) {
			closedir(d);
			return r;
		}
		n += r;
	}
	closedir(d);
	return n;
}

static int add_conda_record(struct pkg_index *ix, int root_fd, const char *prefix, const char *path)
{
	size_t len;
	char *text = read_at(root_fd, path, MAX_RECORD_FILE, &len);
	json_t *doc = text ? json_loadb(text, len, 0, NULL) : NULL, *files, *f;
	const char *name = doc ? json_string_value(json_object_get(doc, "name")) : NULL;
	const char *version = doc ? json_string_value(json_object_get(doc, "version")) : NULL;
	struct pkg_owner *o;
	size_t i;
	int err = 0;

	free(text);
	if (!name) {
		json_decref(doc);
		return 0; /* not a package record */
	}
	if (!version)
		version = "";
	o = new_owner(ix, PKG_CONDA, name, strlen(name), version, strlen(version));
	files = o ? json_object_get(doc, "files") : NULL;
	json_array_foreach (files, i, f) {
		const char *s = json_string_value(f);

		if (s && !err)
			err = put_joined(ix, prefix, s, strlen(s), o);
	}
	json_decref(doc);
	return !o ? -ENOMEM : err ? err : 1;
}

int pkgindex__add_conda(struct pkg_index *ix, int root_fd, const char *prefix)
{
	char meta[PATH_MAX], path[PATH_MAX * 2];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(meta, sizeof(meta), "%s/conda-meta", strcmp(prefix, "/") ? prefix : "");
	if (!(d = opendir_at(root_fd, meta)))
		return -errno;
	while ((de = readdir(d))) {
		int r;

		if (!ends_with(de->d_name, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", meta, de->d_name);
		r = add_conda_record(ix, root_fd, strcmp(prefix, "/") ? prefix : "", path);
		if (r < 0) {
			closedir(d);
			return r;
		}
		n += r;
	}
	closedir(d);
	return n;
}

/*
 * Lines of a file read through one buffer, reused from file to file: dpkg's lists are 10 MB on a
 * desktop system, and only the few lines a lookup wants are kept. A line longer than the buffer
 * is cut (no path is that long).
 */
struct line_reader {
	int fd;
	char *buf;
	size_t cap, start, end;
	bool eof;
};

static void lr_open(struct line_reader *lr, int fd)
{
	lr->fd = fd;
	lr->start = lr->end = 0;
	lr->eof = false;
}

/* The next line (not NUL-terminated, without its newline), or NULL at the end. */
static const char *lr_next(struct line_reader *lr, size_t *len)
{
	for (;;) {
		char *nl = memchr(lr->buf + lr->start, '\n', lr->end - lr->start);
		const char *line = lr->buf + lr->start;
		ssize_t r;

		if (nl || (lr->eof && lr->end > lr->start) || lr->end - lr->start == lr->cap) {
			*len = nl ? (size_t)(nl - line) : lr->end - lr->start;
			lr->start += *len + (nl != NULL);
			return line;
		}
		if (lr->eof)
			return NULL;
		memmove(lr->buf, line, lr->end - lr->start);
		lr->end -= lr->start;
		lr->start = 0;
		r = read(lr->fd, lr->buf + lr->end, lr->cap - lr->end);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			lr->eof = true;
		else
			lr->end += (size_t)r;
	}
}

static void set_version(struct pkg_owner *o, const char *ver)
{
	char *v;

	if (!o || o->version[0] || !(v = strdup(ver)))
		return;
	free(o->version);
	o->version = v;
}

/* Fill in the versions of @owners (stem "name" or "name:arch" -> owner) from dpkg's status. */
static void read_dpkg_versions(struct line_reader *lr, int root_fd, const char *admindir,
			       struct pathmap *owners)
{
	char path[PATH_MAX], pkg[256] = "", arch[64] = "", ver[256] = "";
	const char *line;
	size_t len;
	int fd;

	snprintf(path, sizeof(path), "%s/status", admindir);
	fd = openat(root_fd, rel(path), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return; /* the packages are still named, without versions */
	lr_open(lr, fd);
	do {
		line = lr_next(lr, &len);
		if (line && len) {
			if (len > 9 && !strncmp(line, "Package: ", 9))
				snprintf(pkg, sizeof(pkg), "%.*s", (int)(len - 9), line + 9);
			else if (len > 14 && !strncmp(line, "Architecture: ", 14))
				snprintf(arch, sizeof(arch), "%.*s", (int)(len - 14), line + 14);
			else if (len > 9 && !strncmp(line, "Version: ", 9))
				snprintf(ver, sizeof(ver), "%.*s", (int)(len - 9), line + 9);
			continue;
		}
		/* The end of a paragraph: the list of "libc6:amd64" or of plain "python3.11". */
		if (pkg[0] && ver[0]) {
			char key[sizeof(pkg) + sizeof(arch)];

			snprintf(key, sizeof(key), "%s:%s", pkg, arch);
			set_version(pathmap__get(owners, key, strlen(key)), ver);
			set_version(pathmap__get(owners, pkg, strlen(pkg)), ver);
		}
		pkg[0] = arch[0] = ver[0] = '\0';
	} while (line);
	close(fd);
}

/*
 * A first sieve over the lists' lines, before a hash: the length and the last four bytes of each
 * wanted path, as a bit in 2^16. Nearly every line of the 180,000 fails it with one load.
 */
#define SIEVE_BITS 65536

static unsigned int sieve_bit(const char *s, size_t len)
{
	uint32_t tail = 0;

	memcpy(&tail, s + (len >= 4 ? len - 4 : 0), len >= 4 ? 4 : len);
	return (unsigned int)(((tail * 0x9e3779b1u) ^ (uint32_t)len * 0x85ebca6bu) >> 16);
}

#define BLOOM_WORDS 8

/* The two bits of a path's directory in a list's Bloom filter. */
static void dir_bits(const char *path, size_t len, unsigned int bits[2])
{
	const char *slash = memrchr(path, '/', len);
	uint32_t h = pathmap__hash(path, slash ? (size_t)(slash - path) : 0);

	bits[0] = h % (BLOOM_WORDS * 64);
	bits[1] = (h >> 16) % (BLOOM_WORDS * 64);
}

static bool bloom_has(const uint64_t *bloom, const unsigned int bits[2])
{
	return (bloom[bits[0] / 64] >> (bits[0] % 64) & 1) &&
	       (bloom[bits[1] / 64] >> (bits[1] % 64) & 1);
}

static void bloom_add(uint64_t *bloom, const unsigned int bits[2])
{
	bloom[bits[0] / 64] |= 1ull << (bits[0] % 64);
	bloom[bits[1] / 64] |= 1ull << (bits[1] % 64);
}

static void answers_drop(struct dpkg_answers *a);

void dpkg_lists__free(struct dpkg_lists *l)
{
	answers_drop(l->answers);
	l->answers = NULL;
	for (size_t i = 0; i < l->blooms.n; i++)
		free(l->blooms.e[i].val);
	pathmap__free(&l->blooms);
}

/* May the list @name hold one of the @n wanted directories? Unknown lists may. */
static bool may_list(const struct dpkg_lists *learnt, const char *name,
		     const unsigned int (*want)[2], size_t n)
{
	const uint64_t *bloom = learnt ? pathmap__get(&learnt->blooms, name, strlen(name)) : NULL;

	for (size_t i = 0; bloom && i < n; i++)
		if (bloom_has(bloom, want[i]))
			return true;
	return !bloom;
}

/*
 * The lines of dpkg's list @list, open on @lr: each an absolute path, and those @wanted (the
 * @sieve first) recorded as the package's, made on the first one (*@o, also in @owners). With
 * @bloom, every line's directory is learnt into it. 0 or -ENOMEM.
 */
static int read_list(struct pkg_index *ix, struct line_reader *lr, const char *list,
		     const uint64_t *sieve, const struct pathmap *wanted, uint64_t *bloom,
		     struct pathmap *owners, struct pkg_owner **o)
{
	size_t stem = strlen(list) - 5, len, name_len;
	const char *line;
	int err = 0;

	while (!err && (line = lr_next(lr, &len))) {
		unsigned int b = len ? sieve_bit(line, len) : 0;

		if (bloom && len) {
			unsigned int bits[2];

			dir_bits(line, len, bits);
			bloom_add(bloom, bits);
		}
		if (!len || !(sieve[b / 64] & (1ull << (b % 64))) ||
		    !pathmap__get(wanted, line, len))
			continue;
		/* "libc6:amd64.list": a Multi-Arch: same package, named by its stem. */
		name_len = strcspn(list, ":");
		if (!*o && (!(*o = new_owner(ix, PKG_DEB, list, name_len < stem ? name_len : stem,
					     "", 0)) ||
			    pathmap__put(owners, list, stem, *o, 1) < 0))
			err = -ENOMEM;
		if (!err && pathmap__put(&ix->files, line, len, *o, 1) < 0)
			err = -ENOMEM;
	}
	return err;
}

static int scan_dpkg_lists(struct pkg_index *ix, int root_fd, const char *admindir,
			   const struct pathmap *wanted, struct dpkg_lists *learnt)
{
	uint64_t sieve[SIEVE_BITS / 64] = { 0 };
	unsigned int(*want)[2] = calloc(wanted->n ? wanted->n : 1, sizeof(*want));
	size_t n_want = 0;
	struct line_reader lr = { .cap = 256 * 1024 };
	struct pathmap owners = { 0 };
	char info[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n = 0, err = 0, info_fd;

	snprintf(info, sizeof(info), "%s/info", admindir);
	if (!want || !(d = opendir_at(root_fd, info))) {
		err = want ? -errno : -ENOMEM;
		free(want);
		return err;
	}
	info_fd = dirfd(d);
	for (size_t i = 0; i < wanted->n; i++) {
		const struct pm_entry *w = &wanted->e[i];
		unsigned int b = sieve_bit(w->key, w->len);

		sieve[b / 64] |= 1ull << (b % 64);
		dir_bits(w->key, w->len, want[n_want++]);
	}
	lr.buf = malloc(lr.cap);
	while (lr.buf && !err && (de = readdir(d))) {
		struct pkg_owner *o = NULL;
		uint64_t *bloom = NULL;
		int fd;

		if (!ends_with(de->d_name, ".list") || !may_list(learnt, de->d_name, want, n_want))
			continue;
		fd = openat(info_fd, de->d_name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		/* A list read for the first time: learn its directories. */
		if (learnt && !pathmap__get(&learnt->blooms, de->d_name, strlen(de->d_name)))
			bloom = calloc(BLOOM_WORDS, sizeof(*bloom));
		lr_open(&lr, fd);
		err = read_list(ix, &lr, de->d_name, sieve, wanted, bloom, &owners, &o);
		close(fd);
		if (bloom && (err || pathmap__put(&learnt->blooms, de->d_name, strlen(de->d_name),
						  bloom, 1) != 1))
			free(bloom);
		n += o != NULL;
	}
	closedir(d);
	free(want);
	if (!lr.buf)
		err = -ENOMEM;
	if (!err && n)
		read_dpkg_versions(&lr, root_fd, admindir, &owners);
	free(lr.buf);
	pathmap__free(&owners);
	return err ? err : n;
}

/*
 * dpkg's answers kept between runs (~/.cache/dlscope/dpkg-DEV-INO.cache, for the info folder
 * DEV:INO: a container's dpkg is another), so that a second `libs` opens none of the system's
 * thousand lists. Valid while dpkg changes nothing: installing, removing or upgrading a package
 * renames files into info/ (its mtime and ctime) and rewrites status.
 */
#define ANSWERS_MAGIC "dlscope-dpkg-answers 2"
#define ANSWERS_MAX_FILE (16u << 20)

struct dpkg_answers {
	char name[96];	    /* in the cache folder (cachefile.h) */
	char stamp[256];    /* the first line: magic, info's and status's identity and times */
	char *data;	    /* the file: after the stamp, "PATH\tPACKAGE\tVERSION\n" lines */
	struct pathmap map; /* PATH -> "PACKAGE\tVERSION" (empty: no package lists it) */
	char **learnt;	    /* the values of answers added since it was read (kept answers) */
	size_t n_learnt, cap_learnt;
};

static int64_t ns_of(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* Where the answers for @admindir under @root_fd live, and the stamp they must carry. */
/* The answers file's name and first line for dpkg's state now. 0 or -errno. */
static int answers_identity(char *name, size_t namelen, char *stamp, size_t stamplen, int root_fd,
			    const char *admindir)
{
	char info[PATH_MAX], status[PATH_MAX];
	struct stat si, ss;

	if (!objcache__enabled())
		return -ENOENT;
	snprintf(info, sizeof(info), "%s/info", admindir);
	snprintf(status, sizeof(status), "%s/status", admindir);
	if (fstatat(root_fd, rel(info), &si, 0) || fstatat(root_fd, rel(status), &ss, 0))
		return -errno;
	snprintf(name, namelen, "dpkg-%llx-%llx.cache", (unsigned long long)si.st_dev,
		 (unsigned long long)si.st_ino);
	snprintf(stamp, stamplen, ANSWERS_MAGIC " %lld %lld %lld %lld %lld %lld\n",
		 (long long)ns_of(&si.st_mtim), (long long)ns_of(&si.st_ctim),
		 (long long)ss.st_size, (long long)ns_of(&ss.st_mtim),
		 (long long)ns_of(&ss.st_ctim), (long long)ss.st_ino);
	return 0;
}

static int answers_open(struct dpkg_answers *a, int root_fd, const char *admindir)
{
	size_t len;
	int err;

	memset(a, 0, sizeof(*a));
	err = answers_identity(a->name, sizeof(a->name), a->stamp, sizeof(a->stamp), root_fd,
			       admindir);
	if (err)
		return err;
	/* A file of another stamp, not ours or damaged (sealed: a cut or changed byte shows) is
	 * no answer: the lists are read. */
	if (cachefile__read_sealed(NULL, a->name, ANSWERS_MAX_FILE, &a->data, &len))
		return 0;
	if (!len || strncmp(a->data, a->stamp, strlen(a->stamp)) || a->data[len - 1] != '\n')
		return 0;
	for (char *line = a->data + strlen(a->stamp); *line;) {
		char *end = strchr(line, '\n'), *tab = memchr(line, '\t', (size_t)(end - line));

		*end = '\0';
		if (!tab || !strchr(tab + 1, '\t') ||
		    pathmap__put(&a->map, line, (size_t)(tab - line), tab + 1, 1) < 0) {
			pathmap__free(&a->map);
			memset(&a->map, 0, sizeof(a->map));
			return 0;
		}
		line = end + 1;
	}
	return 0;
}

/* The answers kept, plus those of @asked (found in @ix or not), written back. */
static void answers_save(struct dpkg_answers *a, const struct pkg_index *ix,
			 const struct pathmap *asked)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return;
	fputs(a->stamp, f);
	for (int pass = 0; pass < 2; pass++) {
		const struct pathmap *m = pass ? asked : &a->map;

		for (size_t i = 0; i < m->n && ftell(f) < (long)ANSWERS_MAX_FILE - PATH_MAX; i++) {
			const struct pm_entry *w = &m->e[i];
			const struct pkg_owner *o;

			/* A line per path: one with a tab or a newline is not kept. */
			if (memchr(w->key, '\t', w->len) || memchr(w->key, '\n', w->len))
				continue;
			if (!pass) {
				if (!pathmap__get(asked, w->key, w->len))
					fprintf(f, "%.*s\t%s\n", (int)w->len, w->key,
						(const char *)w->val);
				continue;
			}
			o = pathmap__get(&ix->files, w->key, w->len);
			fprintf(f, "%.*s\t%s\t%s\n", (int)w->len, w->key, o ? o->name : "",
				o ? o->version : "");
		}
	}
	if (!fclose(f))
		cachefile__write_sealed(NULL, a->name, out, len);
	free(out);
}

static void answers_free(struct dpkg_answers *a)
{
	pathmap__free(&a->map);
	free(a->data);
	for (size_t i = 0; i < a->n_learnt; i++)
		free(a->learnt[i]);
	free(a->learnt);
}

/* The answers of @asked (found in @ix or not) added to the kept @a, to be written back later. */
static int answers_learn(struct dpkg_answers *a, const struct pkg_index *ix,
			 const struct pathmap *asked)
{
	for (size_t i = 0; i < asked->n; i++) {
		const struct pm_entry *w = &asked->e[i];
		const struct pkg_owner *o;
		char *val;

		o = pathmap__get(&ix->files, w->key, w->len);
		if (a->n_learnt == a->cap_learnt && ARRAY_GROW(a->learnt, a->cap_learnt, 64))
			return -ENOMEM;
		if (asprintf(&val, "%s\t%s", o ? o->name : "", o ? o->version : "") < 0)
			return -ENOMEM;
		a->learnt[a->n_learnt++] = val;
		if (pathmap__put(&a->map, w->key, w->len, val, 1) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The kept answers written back (when something was learnt) and freed. */
static void answers_drop(struct dpkg_answers *a)
{
	static const struct pathmap none;

	if (!a)
		return;
	if (a->n_learnt)
		answers_save(a, NULL, &none);
	answers_free(a);
	free(a);
}

/*
 * The answers @learnt keeps, read again when dpkg changed something since (or first): NULL
 * when there are none to keep (no cache, no dpkg).
 */
static struct dpkg_answers *kept_answers(struct dpkg_lists *learnt, int root_fd,
					 const char *admindir)
{
	char name[96], stamp[256];
	struct dpkg_answers *a = learnt->answers;

	if (answers_identity(name, sizeof(name), stamp, sizeof(stamp), root_fd, admindir))
		return NULL;
	if (a && !strcmp(a->name, name) && !strcmp(a->stamp, stamp))
		return a;
	answers_drop(a);
	learnt->answers = a = malloc(sizeof(*a));
	if (a && answers_open(a, root_fd, admindir)) {
		answers_free(a);
		free(a);
		learnt->answers = a = NULL;
	}
	return a;
}

int pkgindex__add_dpkg(struct pkg_index *ix, int root_fd, const char *admindir,
		       const struct pathmap *wanted, struct dpkg_lists *learnt)
{
	struct dpkg_answers own, *a = &own;
	struct pathmap rest = { 0 }, owners = { 0 };
	int n = 0, err = 0;

	if (learnt)
		a = kept_answers(learnt, root_fd, admindir);
	else if (answers_open(&own, root_fd, admindir))
		a = NULL;
	if (!a)
		return scan_dpkg_lists(ix, root_fd, admindir, wanted, learnt);
	for (size_t i = 0; i < wanted->n && !err; i++) {
		const struct pm_entry *w = &wanted->e[i];
		const char *ans = pathmap__get(&a->map, w->key, w->len);
		struct pkg_owner *o;
		const char *tab;

		if (!ans) {
			err = pathmap__put(&rest, w->key, w->len, (void *)1, 1) < 0 ? -ENOMEM : 0;
			continue;
		}
		if (!*ans || *ans == '\t')
			continue; /* no package lists it */
		tab = strchr(ans, '\t');
		o = pathmap__get(&owners, ans, (size_t)(tab - ans));
		if (!o) {
			o = new_owner(ix, PKG_DEB, ans, (size_t)(tab - ans), tab + 1,
				      strlen(tab + 1));
			if (!o || pathmap__put(&owners, ans, (size_t)(tab - ans), o, 1) < 0) {
				err = -ENOMEM;
				break;
			}
			n++;
		}
		if (pathmap__put(&ix->files, w->key, w->len, o, 1) < 0)
			err = -ENOMEM;
	}
	if (!err && rest.n) {
		int found = scan_dpkg_lists(ix, root_fd, admindir, &rest, learnt);

		if (found < 0)
			err = found;
		else {
			n += found;
			if (a == &own)
				answers_save(a, ix, &rest);
			else if (answers_learn(a, ix, &rest))
				err = -ENOMEM;
		}
	}
	pathmap__free(&rest);
	pathmap__free(&owners);
	if (a == &own)
		answers_free(a);
	return err ? err : n;
}

const struct pkg_owner *pkgindex__get(const struct pkg_index *ix, const char *path)
{
	return pathmap__get(&ix->files, path, strlen(path));
}

void pkgindex__free(struct pkg_index *ix)
{
	for (size_t i = 0; i < ix->n_owners; i++)
		pkg_owner__free(ix->owners[i]);
	free(ix->owners);
	pathmap__free(&ix->files);
	memset(ix, 0, sizeof(*ix));
}
