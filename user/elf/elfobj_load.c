// SPDX-License-Identifier: GPL-2.0
/* The libelf handle of an object: opened on open or first need, dropped on demand. */
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfobj.h"
#include "elfobj_impl.h"
#include "objcache.h"

/*
 * Files up to SMALL_FILE are read whole with one pread and parsed from memory (elf_memory);
 * larger ones with ELF_C_READ, which preads each section when first asked for. Neither maps the
 * file: on a virtual machine every munmap flushes the TLB through the hypervisor, and that was a
 * third of `libs` on 500 objects.
 */
#ifndef SMALL_FILE
#define SMALL_FILE (64u << 10)
#endif
/*
 * Files from LARGE_FILE on are mapped: their symbol tables run to megabytes, which pread would
 * copy, and they are few (one mapping each costs less than copying the tables).
 */
#ifndef LARGE_FILE
#define LARGE_FILE (1u << 20)
#endif
/* Descriptors that objects read with ELF_C_READ may hold at once; past that a large file is
 * mapped and its descriptor closed at once, as before. */
#define MAX_HELD_FDS 256
static unsigned int held_fds;
pthread_mutex_t elfobj_load_lock = PTHREAD_MUTEX_INITIALIZER;

struct objcache_key elfobj_key_of(const struct stat *st)
{
	return (struct objcache_key){
		(uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
		(int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
		(int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec
	};
}

bool elfobj_same_key(const struct objcache_key *a, const struct objcache_key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

static int pread_full(int fd, void *buf, size_t len, off_t off)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

void elfobj_drop_elf(struct elf_object *o)
{
	for (int i = 0; i < 2; i++) {
		addr_index__free(o->by_addr[i]);
		o->by_addr[i] = NULL;
	}
	if (o->elf)
		elf_end(o->elf);
	o->elf = NULL;
	free(o->image);
	o->image = NULL;
	if (o->fd >= 0) {
		close(o->fd);
		held_fds--;
		o->fd = -1;
	}
}

/* Start libelf on @fd, which is consumed (closed, or held for ELF_C_READ). 0 or an errno. */
int elfobj_begin_elf(struct elf_object *o, int fd)
{
	if (o->size <= SMALL_FILE) {
		o->image = malloc(o->size ? o->size : 1);
		if (!o->image || pread_full(fd, o->image, o->size, 0)) {
			close(fd);
			return o->image ? EIO : ENOMEM;
		}
		close(fd);
		o->elf = elf_memory(o->image, o->size);
	} else if (held_fds < MAX_HELD_FDS && o->size < LARGE_FILE) {
		o->elf = elf_begin(fd, ELF_C_READ, NULL);
		o->fd = fd;
		held_fds++;
	} else {
		o->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (o->elf)
			elf_cntl(o->elf, ELF_C_FDDONE);
		close(fd);
	}
	return o->elf ? 0 : ENOEXEC;
}

/* The sections the accessors come back to. */
void elfobj_index_sections(struct elf_object *o)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		switch (sh.sh_type) {
		case SHT_DYNSYM: o->dynsym = scn; break;
		case SHT_SYMTAB: o->symtab = scn; break;
		case SHT_GNU_versym: o->versym = scn; break;
		case SHT_GNU_verneed: o->verneed = scn; break;
		case SHT_GNU_verdef: o->verdef = scn; break;
		}
	}
}

/*
 * Paths such as /proc/self/fd/N/usr/lib/libc.so.6 name a file through a descriptor of the caller
 * (a target's root) that may be closed before the libelf handle is first needed. Such roots are
 * duplicated here, once per root however many objects use it, and released with the last one.
 */
#define MAX_HELD_ROOTS 16
static struct held_root {
	int orig, fd;
	dev_t dev;
	ino_t ino;
	unsigned int refs;
	bool live; /* @orig is still the descriptor it was (elfobj__root_closed clears it) */
} held_roots[MAX_HELD_ROOTS];

static pthread_mutex_t roots_lock = PTHREAD_MUTEX_INITIALIZER;

void elfobj_release_root(int i)
{
	pthread_mutex_lock(&roots_lock);
	if (i >= 0 && !--held_roots[i].refs) {
		close(held_roots[i].fd);
		held_roots[i].fd = -1;
	}
	pthread_mutex_unlock(&roots_lock);
}

void elfobj__root_closed(int fd)
{
	pthread_mutex_lock(&roots_lock);
	for (int i = 0; i < MAX_HELD_ROOTS; i++)
		if (held_roots[i].orig == fd)
			held_roots[i].live = false;
	pthread_mutex_unlock(&roots_lock);
}

/* A path for @o that stays valid while it lives. 0, or -1: keep the file's handle now instead. */
int elfobj_stable_path(struct elf_object *o)
{
	const char *rest;
	struct stat st;
	int n, orig, free_slot = -1;

	o->root = -1;
	if (sscanf(o->path, "/proc/self/fd/%d%n", &orig, &n) != 1)
		return 0; /* another path: it stays valid for as long as the caller's did */
	rest = o->path + n;
	if (*rest != '/')
		return -1; /* the descriptor is the file itself (an executable) */
	pthread_mutex_lock(&roots_lock);
	/* The root held for this descriptor, not closed since: no fstat for each object. */
	for (int i = 0; i < MAX_HELD_ROOTS && o->root < 0; i++)
		if (held_roots[i].refs && held_roots[i].live && held_roots[i].orig == orig)
			o->root = i;
	if (o->root < 0 && fstat(orig, &st)) {
		pthread_mutex_unlock(&roots_lock);
		return -1;
	}
	for (int i = 0; i < MAX_HELD_ROOTS && o->root < 0; i++) {
		struct held_root *r = &held_roots[i];

		if (r->refs && r->orig == orig && r->dev == st.st_dev && r->ino == st.st_ino) {
			o->root = i;
			r->live = true;
			break;
		}
		if (!r->refs && free_slot < 0)
			free_slot = i;
	}
	if (o->root < 0) {
		int fd = free_slot < 0 ? -1 : fcntl(orig, F_DUPFD_CLOEXEC, 0);

		if (fd < 0) {
			pthread_mutex_unlock(&roots_lock);
			return -1;
		}
		held_roots[free_slot] =
			(struct held_root){ orig, fd, st.st_dev, st.st_ino, 0, true };
		o->root = free_slot;
	}
	held_roots[o->root].refs++;
	pthread_mutex_unlock(&roots_lock);
	if (asprintf(&o->lazy_path, "/proc/self/fd/%d%s", held_roots[o->root].fd, rest) < 0) {
		o->lazy_path = NULL;
		elfobj_release_root(o->root);
		o->root = -1;
		return -1;
	}
	return 0;
}

/*
 * The libelf handle of an object analysed from the persistent cache, opened on first need from
 * its path: only when the file is still the one analysed (same device, inode, size, mtime).
 */
bool elfobj_loaded(const struct elf_object *o)
{
	struct elf_object *m = (struct elf_object *)o; /* opening is no change to what it says */
	struct stat st;
	int fd;

	pthread_mutex_lock(&elfobj_load_lock);
	if (!m->elf_tried) {
		m->elf_tried = true;
		fd = open(o->lazy_path ? o->lazy_path : o->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !fstat(fd, &st)) {
			struct objcache_key k = elfobj_key_of(&st);

			if (elfobj_same_key(&k, &o->key) && !elfobj_begin_elf(m, fd)) {
				elfobj_index_sections(m);
				fd = -1;
			} else if (m->elf || m->image) {
				elfobj_drop_elf(m);
				fd = -1;
			}
		}
		if (fd >= 0)
			close(fd);
	}
	pthread_mutex_unlock(&elfobj_load_lock);
	return o->elf != NULL;
}

void elfobj__drop_handle(const struct elf_object *o)
{
	struct elf_object *m = (struct elf_object *)o; /* elfobj_loaded() opens it again on need */

	pthread_mutex_lock(&elfobj_load_lock);
	if (!o->keep_handle && o->elf) {
		elfobj_drop_elf(m);
		m->dynsym = m->symtab = m->versym = m->verneed = m->verdef = NULL;
		m->elf_tried = false;
	}
	pthread_mutex_unlock(&elfobj_load_lock);
}
