// SPDX-License-Identifier: GPL-2.0
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "corefile.h"
#include "procfs.h"
#include "procmaps.h"

static char *slurp(const char *path)
{
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (!buf || fd < 0)
		goto err;
	/* /proc files report size 0: read until EOF, growing the buffer. */
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 4096 && ARRAY_GROW(buf, cap, 65536))
			goto err;
	}
	if (n < 0)
		goto err;
	buf[len] = '\0';
	close(fd);
	return buf;
err : {
	int saved = errno;

	free(buf);
	if (fd >= 0)
		close(fd);
	errno = saved;
}
	return NULL;
}

/* A number in @base at *@p (no sign, no prefix), then the byte @sep. false: not there. */
static bool number(const char **p, int base, char sep, uint64_t *out)
{
	uint64_t v = 0;
	const char *q = *p;

	for (;; q++) {
		int d = *q >= '0' && *q <= '9'		     ? *q - '0' :
			base == 16 && *q >= 'a' && *q <= 'f' ? *q - 'a' + 10 :
			base == 16 && *q >= 'A' && *q <= 'F' ? *q - 'A' + 10 :
							       -1;

		if (d < 0)
			break;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	if (q == *p || *q != sep)
		return false;
	*out = v;
	*p = q + 1;
	return true;
}

/*
 * One line of /proc/PID/maps, "START-END PERMS OFFSET MAJOR:MINOR INODE [PATH]", of @len bytes
 * at @line into @mp (its path not copied: *@path, *@pathlen). The kernel writes the fields
 * with one space between them and pads before the path; a line that is not so is skipped. A
 * hand-made reader: sscanf took a fifth of a refresh's CPU in the collector (perf, a dlopen
 * loop under watch).
 */
static bool parse_line(const char *line, size_t len, struct mapping *mp, const char **path,
		       size_t *pathlen)
{
	const char *p = line, *end = line + len;
	uint64_t major, minor;
	size_t n = 0;

	if (!number(&p, 16, '-', &mp->start) || !number(&p, 16, ' ', &mp->end))
		return false;
	while (p < end && *p != ' ' && n < sizeof(mp->perms) - 1)
		mp->perms[n++] = *p++;
	mp->perms[n] = '\0';
	if (p >= end || *p++ != ' ' || !number(&p, 16, ' ', &mp->offset) ||
	    !number(&p, 16, ':', &major) || !number(&p, 16, ' ', &minor) || major > UINT_MAX ||
	    minor > UINT_MAX)
		return false;
	mp->dev_major = (unsigned int)major;
	mp->dev_minor = (unsigned int)minor;
	/* The inode ends at the padding, or at the line's end for an anonymous mapping. */
	mp->inode = 0;
	for (n = 0; p < end && *p >= '0' && *p <= '9'; p++, n++)
		mp->inode = mp->inode * 10 + (uint64_t)(*p - '0');
	if (!n || (p < end && *p != ' '))
		return false;
	while (p < end && *p == ' ')
		p++;
	*path = p;
	*pathlen = (size_t)(end - p);
	return true;
}

struct procmaps *procmaps__parse(const char *text)
{
	struct procmaps *m = calloc(1, sizeof(*m));
	size_t cap = 0;
	const char *line = text;

	if (!m)
		return NULL;
	while (line && *line) {
		const char *eol = strchr(line, '\n'), *path;
		size_t linelen = eol ? (size_t)(eol - line) : strlen(line), plen;
		struct mapping mp = { 0 };

		if (linelen > 4096 + 256)
			linelen = 4096 + 256;
		if (!parse_line(line, linelen, &mp, &path, &plen)) {
			line = eol ? eol + 1 : NULL;
			continue;
		}
		line = eol ? eol + 1 : NULL;
		if (plen) {
			if (plen > 10 && !memcmp(path + plen - 10, " (deleted)", 10)) {
				mp.deleted = true;
				plen -= 10;
			}
			mp.path = strndup(path, plen);
			if (!mp.path)
				goto err;
		}
		if (m->n == cap) {
			if (ARRAY_GROW(m->maps, cap, 256)) {
				free(mp.path);
				goto err;
			}
		}
		m->maps[m->n++] = mp;
	}
	return m;
err:
	procmaps__free(m);
	errno = ENOMEM;
	return NULL;
}

/* Each file's path as the process names it, where its root is not ours (proc__root_prefix). */
static void paths_in_root(struct procmaps *m, pid_t pid)
{
	char root[PATH_MAX];

	if (proc__root_prefix(pid, root, sizeof(root)) <= 0)
		return;
	for (size_t i = 0; i < m->n; i++) {
		char *path = m->maps[i].path;
		const char *own = path ? proc__path_in_root(root, path) : NULL;

		if (own && own != path)
			memmove(path, own, strlen(own) + 1);
	}
}

struct procmaps *procmaps__read(pid_t pid)
{
	char path[64];
	struct procmaps *m;
	char *text;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	text = slurp(path);
	/* No mapping at all: the main thread exited, and another thread has the memory. */
	if (text && !text[0]) {
		pid_t live = proc__live_task(pid);

		if (live > 0 && live != pid) {
			free(text);
			snprintf(path, sizeof(path), "/proc/%d/maps", live);
			text = slurp(path);
		}
	}
	if (!text)
		return NULL;
	m = procmaps__parse(text);
	free(text);
	if (m)
		paths_in_root(m, pid);
	return m;
}

/* A stand-in inode for @path when it is gone: one per path, never 0. */
static uint64_t path_inode(const char *path)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *path; path++)
		h = (h ^ (unsigned char)*path) * 1099511628211ULL;
	return h >> 1 | 1;
}

static int cmp_start(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The permissions a file mapping the core left out had: those of the file's PT_LOAD that maps
 * its page offset (its code, "r-xp"), or "r--p" when the file does not say.
 */
static void undumped_perms(const struct core_file_map *f, char perms[5])
{
	int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	size_t phnum;
	Elf *e;

	snprintf(perms, 5, "r--p");
	if (fd < 0)
		return;
	e = !fstat(fd, &st) && S_ISREG(st.st_mode) && elf_version(EV_CURRENT) != EV_NONE ?
		    elf_begin(fd, ELF_C_READ_MMAP, NULL) :
		    NULL;
	for (size_t i = 0; e && !elf_getphdrnum(e, &phnum) && i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_offset & ~0xfffULL) != f->offset)
			continue;
		snprintf(perms, 5, "%c%c%cp", ph.p_flags & PF_R ? 'r' : '-',
			 ph.p_flags & PF_W ? 'w' : '-', ph.p_flags & PF_X ? 'x' : '-');
		break;
	}
	if (e)
		elf_end(e);
	close(fd);
}

struct procmaps *procmaps__from_core(const struct corefile *c)
{
	struct procmaps *m = calloc(1, sizeof(*m));
	uint64_t vdso = corefile__auxv(c, AT_SYSINFO_EHDR);
	size_t cap = c->n_segs + c->n_files;

	if (!m || !(m->maps = calloc(cap ? cap : 1, sizeof(*m->maps)))) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < c->n_segs; i++) {
		const struct core_segment *s = &c->segs[i];
		const struct core_file_map *f = corefile__file_at(c, s->vaddr);
		struct mapping *mp = &m->maps[m->n++];

		mp->start = s->vaddr;
		mp->end = s->vaddr + s->memsz;
		snprintf(mp->perms, sizeof(mp->perms), "%c%c%cp", s->flags & PF_R ? 'r' : '-',
			 s->flags & PF_W ? 'w' : '-', s->flags & PF_X ? 'x' : '-');
		if (f) {
			mp->offset = f->offset + (s->vaddr - f->start);
			mp->path = strdup(f->path);
		} else if (vdso && s->vaddr == vdso) {
			mp->path = strdup("[vdso]");
		}
	}
	/* Files the core names but did not dump (gcore leaves some out). */
	for (size_t i = 0; i < c->n_files; i++) {
		const struct core_file_map *f = &c->files[i];
		bool dumped = false;

		for (size_t k = 0; k < c->n_segs && !dumped; k++)
			dumped = c->segs[k].vaddr == f->start;
		if (!dumped) {
			m->maps[m->n] = (struct mapping){ .start = f->start,
							  .end = f->end,
							  .offset = f->offset,
							  .path = strdup(f->path) };
			undumped_perms(f, m->maps[m->n++].perms);
		}
	}
	for (size_t i = 0; i < m->n; i++) {
		struct mapping *mp = &m->maps[i];
		size_t plen;

		if (!mp->path)
			continue;
		plen = strlen(mp->path);
		if (plen > 10 && !strcmp(mp->path + plen - 10, " (deleted)")) {
			mp->deleted = true;
			mp->path[plen - 10] = '\0';
		}
		if (mp->path[0] == '/') {
			struct stat st;

			mp->inode = stat(mp->path, &st) ? path_inode(mp->path) :
							  (uint64_t)st.st_ino;
		}
	}
	qsort(m->maps, m->n, sizeof(*m->maps), cmp_start);
	for (size_t i = 0; i < m->n; i++)
		if (m->maps[i].path == NULL && corefile__file_at(c, m->maps[i].start)) {
			procmaps__free(m);
			errno = ENOMEM; /* a strdup failed */
			return NULL;
		}
	return m;
}

void procmaps__free(struct procmaps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->maps[i].path);
	free(m->maps);
	free(m);
}

const struct mapping *procmaps__find(const struct procmaps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct mapping *mp = &m->maps[mid];

		if (addr < mp->start)
			hi = mid;
		else if (addr >= mp->end)
			lo = mid + 1;
		else
			return mp;
	}
	return NULL;
}

bool mapping__is_file(const struct mapping *mp)
{
	return mp->path && mp->path[0] == '/' && mp->inode != 0;
}
