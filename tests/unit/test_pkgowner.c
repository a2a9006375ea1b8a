// SPDX-License-Identifier: GPL-2.0
/*
 * The package owner lookup on a root directory made here: a pip site-packages with a RECORD (a
 * vendored library, a quoted name), an egg-info, a conda prefix whose pip-built package conda
 * installed, dpkg's lists and status with a /usr-merged /lib and an alternatives link. Absolute
 * links resolve inside that root, as a container's do.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pkgowner.h"
#include "tap.h"

static char top[PATH_MAX];

/* Write @text at @path under the test root, making the directories on the way. */
static void put(const char *path, const char *text)
{
	char full[PATH_MAX * 2];
	FILE *f;

	snprintf(full, sizeof(full), "%s%s", top, path);
	for (char *p = full + strlen(top) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(full, 0755);
		*p = '/';
	}
	f = fopen(full, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void link_at(const char *target, const char *path)
{
	char full[PATH_MAX * 2];

	snprintf(full, sizeof(full), "%s%s", top, path);
	if (symlink(target, full))
		perror(full);
}

/* "name version (manager)" of the owner of @path, or "-" for none. */
static const char *owner(struct pkg_cache *c, int fd, const char *path)
{
	static char buf[256];
	const struct pkg_owner *o = pkg_cache__lookup(c, fd, path);

	if (!o)
		return "-";
	pkg_owner__describe(o, buf, sizeof(buf));
	return buf;
}

#define SITE "/usr/local/lib/python3.11/site-packages"
#define CONDA "/opt/conda"
#define DEB_SITE "/usr/lib/python3/dist-packages"

static void make_tree(void)
{
	/* pip: a wheel with a vendored library (auditwheel's foo.libs) and a quoted name. */
	put(SITE "/foo-1.2.dist-info/METADATA",
	    "Metadata-Version: 2.1\nName: Foo\nVersion: 1.2.post1\n\nName: not-this\n");
	put(SITE "/foo-1.2.dist-info/RECORD", "foo/__init__.py,sha256=abc,12\r\n"
					      "foo.libs/libbar-abcd1234.so,sha256=def,100\r\n"
					      "\"foo/we,ird\"\"s.so\",sha256=x,1\r\n"
					      "foo-1.2.dist-info/RECORD,,\r\n");
	put(SITE "/foo-1.2.dist-info/INSTALLER", "pip\n");
	put(SITE "/foo/__init__.py", "");
	put(SITE "/foo.libs/libbar-abcd1234.so", "elf");
	put(SITE "/foo/we,ird\"s.so", "elf");
	put(SITE "/unlisted.so", "elf");
	/* An egg-info lists its files relative to itself; no metadata file: the directory's name. */
	put(SITE "/baz-0.9-py3.11.egg-info/installed-files.txt", "../baz/_c.so\n");
	put(SITE "/baz/_c.so", "elf");
	/* Debian's python3-scipy ships a RECORD but no INSTALLER: dpkg's list names it first. */
	put(DEB_SITE "/scipy-1.10.1.dist-info/RECORD", "scipy/_x.so,,\n");
	put(DEB_SITE "/scipy/_x.so", "elf");
	put("/var/lib/dpkg/info/python3-scipy.list", DEB_SITE "/scipy/_x.so\n");
	/* Without INSTALLER and in no dpkg list: still the RECORD's distribution. */
	put(DEB_SITE "/loose-1.0.dist-info/RECORD", "loose/_y.so,,\n");
	put(DEB_SITE "/loose/_y.so", "elf");
	/* conda: a pip-built package conda installed (INSTALLER conda): conda-meta names it. */
	put(CONDA "/conda-meta/libgomp-12.2.0-h1.json",
	    "{\"name\": \"libgomp\", \"version\": \"12.2.0\", \"files\": [\"lib/libgomp.so.1.0.0\"]}");
	put(CONDA "/conda-meta/bar-2.0-py311.json",
	    "{\"name\": \"bar\", \"version\": \"2.0\", \"files\": "
	    "[\"lib/python3.11/site-packages/bar/_ext.so\"]}");
	put(CONDA "/conda-meta/history", "");
	put(CONDA "/lib/libgomp.so.1.0.0", "elf");
	link_at("libgomp.so.1.0.0", CONDA "/lib/libgomp.so.1");
	put(CONDA "/lib/python3.11/site-packages/bar-2.0.dist-info/INSTALLER", "conda\n");
	put(CONDA "/lib/python3.11/site-packages/bar-2.0.dist-info/RECORD", "bar/_ext.so,,\n");
	put(CONDA "/lib/python3.11/site-packages/bar/_ext.so", "elf");
	/* dpkg, with /lib a link to usr/lib as on a /usr-merged system. */
	put("/var/lib/dpkg/info/libc6:amd64.list",
	    "/.\n/lib\n/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu/libc.so.6\n");
	put("/var/lib/dpkg/info/libc6:amd64.md5sums", "x  lib/x86_64-linux-gnu/libc.so.6\n");
	put("/var/lib/dpkg/info/libalt0.list", "/usr/lib/real\n/usr/lib/real/libalt-r0.so\n");
	put("/var/lib/dpkg/info/libalt-front.list", "/usr/lib/libalt.so.0\n");
	put("/var/lib/dpkg/info/python3.11-minimal.list", "/usr/bin/python3.11\n");
	put("/var/lib/dpkg/info/oldtool.list", "/sbin/tool\n");
	put("/var/lib/dpkg/status", "Package: libc6\nStatus: install ok installed\n"
				    "Architecture: amd64\nVersion: 2.36-9\n\n"
				    "Package: libc6\nArchitecture: i386\nVersion: 2.36-1\n\n"
				    "Package: libalt0\nArchitecture: amd64\nVersion: 0.3-1\n"
				    "Description: a library\n with a long description\n\n"
				    "Package: libalt-front\nVersion: 1.0\n\n"
				    "Package: python3.11-minimal\nVersion: 3.11.2-6\n");
	put("/usr/lib/x86_64-linux-gnu/libc.so.6", "elf");
	link_at("usr/lib", "/lib");
	put("/usr/lib/real/libalt-r0.so", "elf");
	put("/etc/alternatives/.keep", "");
	link_at("/usr/lib/real/libalt-r0.so", "/etc/alternatives/libalt.so.0");
	link_at("/etc/alternatives/libalt.so.0", "/usr/lib/libalt.so.0");
	put("/usr/bin/python3.11", "elf");
	/* Not merged here: /sbin/tool and /usr/sbin/tool are two files; dpkg lists only one. */
	put("/sbin/tool", "elf");
	put("/usr/sbin/tool", "elf");
	link_at("/loop/a", "/loop");
	link_at(SITE "/foo.libs/libbar-abcd1234.so", "/opt/abs-link.so");
}

int main(void)
{
	char empty[PATH_MAX], buf[PATH_MAX];
	struct pkg_cache *c = pkg_cache__new();
	int fd, efd;

	snprintf(top, sizeof(top), "/tmp/dlscope-pkgowner-XXXXXX");
	snprintf(empty, sizeof(empty), "/tmp/dlscope-pkgowner-empty-XXXXXX");
	if (!mkdtemp(top) || !mkdtemp(empty)) {
		perror("mkdtemp");
		return 1;
	}
	make_tree();
	fd = open(top, O_PATH | O_DIRECTORY);
	efd = open(empty, O_PATH | O_DIRECTORY);

	CHECK(!strcmp(owner(c, fd, SITE "/foo.libs/libbar-abcd1234.so"), "Foo 1.2.post1 (pip)"),
	      "a wheel's vendored library: METADATA's name and version, not the text after");
	CHECK(!strcmp(owner(c, fd, SITE "/foo/we,ird\"s.so"), "Foo 1.2.post1 (pip)"),
	      "a quoted RECORD name with a comma and a doubled quote");
	CHECK(!strcmp(owner(c, fd, SITE "/unlisted.so"), "-"),
	      "a file in a site-packages that no RECORD lists has no owner");
	CHECK(!strcmp(owner(c, fd, SITE "/baz/_c.so"), "baz 0.9 (pip)"),
	      "an egg-info's installed-files.txt, relative to itself; name from the directory");
	CHECK(!strcmp(owner(c, fd, DEB_SITE "/scipy/_x.so"), "python3-scipy (deb)"),
	      "a RECORD without INSTALLER that dpkg also lists: dpkg's package");
	CHECK(!strcmp(owner(c, fd, DEB_SITE "/loose/_y.so"), "loose 1.0 (pip)"),
	      "a RECORD without INSTALLER that dpkg does not list: the RECORD's distribution");
	CHECK(!strcmp(owner(c, fd, "/opt/abs-link.so"), "Foo 1.2.post1 (pip)"),
	      "an absolute link resolves inside the root, to the wheel's file");
	CHECK(!strcmp(owner(c, fd, CONDA "/lib/libgomp.so.1"), "libgomp 12.2.0 (conda)"),
	      "conda-meta names the real file behind a conda library's link");
	CHECK(!strcmp(owner(c, fd, CONDA "/lib/python3.11/site-packages/bar/_ext.so"),
		      "bar 2.0 (conda)"),
	      "a dist-info that conda installed is conda's package, not pip's");
	CHECK(!strcmp(owner(c, fd, "/lib/x86_64-linux-gnu/libc.so.6"), "libc6 2.36-9 (deb)"),
	      "dpkg: /lib (a link to usr/lib) as listed; Multi-Arch stem, its arch's version");
	CHECK(!strcmp(owner(c, fd, "/usr/lib/x86_64-linux-gnu/libc.so.6"), "libc6 2.36-9 (deb)"),
	      "dpkg: the /usr/lib name of a file listed under /lib");
	CHECK(!strcmp(owner(c, fd, "/usr/lib/libalt.so.0"), "libalt0 0.3-1 (deb)"),
	      "an alternatives link: the package of the real file, not of the link");
	CHECK(!strcmp(owner(c, fd, "/usr/bin/python3.11"), "python3.11-minimal 3.11.2-6 (deb)"),
	      "a package name with dots");
	CHECK(!strcmp(owner(c, fd, "/sbin/tool"), "oldtool (deb)"),
	      "a package missing from the status file: named, without a version");
	CHECK(!strcmp(owner(c, fd, "/usr/sbin/tool"), "-"),
	      "without /usr-merge, /usr/sbin/tool is another file than the /sbin/tool listed");
	CHECK(!strcmp(owner(c, fd, "/no/such/file.so"), "-"), "a missing file has no owner");
	CHECK(!strcmp(owner(c, efd, "/usr/lib/x86_64-linux-gnu/libc.so.6"), "-"),
	      "a root without package databases: no owner, no error");
	/* A package installed after the lists were first read: its list is new, so it is read. */
	put("/usr/lib/late/liblate.so.1", "elf");
	put("/var/lib/dpkg/info/liblate1.list", "/usr/lib/late\n/usr/lib/late/liblate.so.1\n");
	CHECK(!strcmp(owner(c, fd, "/usr/lib/late/liblate.so.1"), "liblate1 (deb)"),
	      "a list that appeared after an earlier pass is read");
	CHECK(!strcmp(owner(c, fd, "/usr/bin/python3.11-copy"), "-") &&
		      !strcmp(owner(c, fd, "/lib/x86_64-linux-gnu/./libc.so.6"),
			      "libc6 2.36-9 (deb)"),
	      "later passes skip lists by what they learnt, and still find what they list");
	CHECK(pkg_cache__lookup(c, fd, "/usr/lib/libalt.so.0") ==
		      pkg_cache__lookup(c, fd, "/usr/lib/libalt.so.0"),
	      "a second lookup answers from the cache");
	{
		const char *paths[] = { "/usr/lib/libalt.so.0", NULL, "relative.so",
					SITE "/baz/_c.so", "/lib/x86_64-linux-gnu/libc.so.6" };
		const struct pkg_owner *out[5];

		CHECK(!pkg_cache__lookup_many(c, fd, paths, NULL, 5, out) && out[0] &&
			      !strcmp(out[0]->name, "libalt0") && !out[1] && !out[2] && out[3] &&
			      out[3]->manager == PKG_PIP && out[4] &&
			      !strcmp(out[4]->version, "2.36-9"),
		      "a batch gives what single lookups give; NULL and relative paths none");
	}
	CHECK(pkg_path__resolve(fd, "/loop/x", buf, sizeof(buf)) == -ELOOP,
	      "a link loop ends with ELOOP");
	CHECK(!pkg_path__resolve(fd, "/lib/../lib/x86_64-linux-gnu/./libc.so.6", buf,
				 sizeof(buf)) &&
		      !strcmp(buf, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
	      "resolve folds . and .. after each link");
	snprintf(buf, sizeof(buf), "//a/./b/../../../c//d/");
	pkg_path__normalize(buf);
	CHECK(!strcmp(buf, "/c/d"), "normalize: .. stops at /, slashes collapse");

	pkg_cache__free(c);
	close(fd);
	close(efd);
	{
		char cmd[PATH_MAX * 2 + 32];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", top, empty);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", top);
	}
	return tap_done();
}
