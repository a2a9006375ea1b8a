// SPDX-License-Identifier: GPL-2.0
/*
 * The /proc/PID/maps reader against sscanf's reading of the same lines: every live process's
 * maps, and lines made to be odd (a path with spaces, a deleted file, no path, bad fields).
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procmaps.h"
#include "tap.h"

/* The mappings sscanf finds in @text, as the reader did before it was made by hand. */
static struct procmaps *by_sscanf(const char *text)
{
	struct procmaps *m = calloc(1, sizeof(*m));
	const char *line = text;
	size_t cap = 0;

	while (m && line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[4096 + 256];
		struct mapping mp = { 0 };
		int pos = 0;

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		line = eol ? eol + 1 : NULL;
		if (sscanf(buf, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &mp.start, &mp.end, mp.perms, &mp.offset, &mp.dev_major, &mp.dev_minor,
			   &mp.inode, &pos) < 7)
			continue;
		if (pos && buf[pos]) {
			size_t plen = strlen(buf + pos);

			if (plen > 10 && !strcmp(buf + pos + plen - 10, " (deleted)")) {
				mp.deleted = true;
				buf[pos + plen - 10] = '\0';
			}
			mp.path = strdup(buf + pos);
		}
		if (m->n == cap) {
			cap = cap ? cap * 2 : 64;
			m->maps = realloc(m->maps, cap * sizeof(*m->maps));
		}
		m->maps[m->n++] = mp;
	}
	return m;
}

static bool same(const struct procmaps *a, const struct procmaps *b)
{
	if (!a || !b || a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct mapping *x = &a->maps[i], *y = &b->maps[i];

		if (x->start != y->start || x->end != y->end || x->offset != y->offset ||
		    x->inode != y->inode || x->dev_major != y->dev_major ||
		    x->dev_minor != y->dev_minor || strcmp(x->perms, y->perms) ||
		    x->deleted != y->deleted || !x->path != !y->path ||
		    (x->path && strcmp(x->path, y->path)))
			return false;
	}
	return true;
}

static char *slurp(const char *path)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 4096)
			buf = realloc(buf, cap *= 2);
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

int main(void)
{
	static const char odd[] =
		"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
		"7f0000000000-7f0000001000 rw-p 00001000 fe:00 42    /tmp/a b  c.so (deleted)\n"
		"7f0000001000-7f0000002000 rw-p 00000000 00:00 0 \n"
		"7f0000002000-7f0000003000 ---p 00000000 00:00 0\n"
		"7ffd0000-7ffd1000 r-xp 00000000 00:00 0                  [vdso]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n"
		"7f0000003000-7f0000004000 r--s 00000000 103:0a 9       /dev/shm/x (deleted)\n"
		"garbage line\n"
		"12-\n"
		"1000-2000 rw-p zz 00:00 0\n"
		"1000-2000 rw-p 0 00:00\n"
		"\n"
		"3000-4000 r--p 00000000 00:1f 77 /last/line/without/newline";
	struct procmaps *a = procmaps__parse(odd), *b = by_sscanf(odd);
	size_t files = 0, agreed = 0;
	DIR *d;
	struct dirent *de;

	CHECK(same(a, b), "made-up lines: as sscanf reads them");
	CHECK(a && a->n == 8 && a->maps[1].deleted && !strcmp(a->maps[1].path, "/tmp/a b  c.so") &&
		      !a->maps[2].path && !a->maps[3].path && a->maps[6].dev_major == 0x103 &&
		      !strcmp(a->maps[7].path, "/last/line/without/newline"),
	      "paths with spaces, deleted files, no path, the last line");
	procmaps__free(a);
	procmaps__free(b);

	d = opendir("/proc");
	while (d && (de = readdir(d))) {
		char path[300], *text;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/maps", de->d_name);
		if (!(text = slurp(path)))
			continue;
		a = procmaps__parse(text);
		b = by_sscanf(text);
		files++;
		agreed += same(a, b);
		procmaps__free(a);
		procmaps__free(b);
		free(text);
	}
	if (d)
		closedir(d);
	CHECK(files > 0 && agreed == files, "every live process's maps: as sscanf reads them");
	return tap_done();
}
