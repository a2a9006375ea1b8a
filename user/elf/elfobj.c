// SPDX-License-Identifier: GPL-2.0
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "arch.h"
#include "elfobj.h"
#include "objcache.h"

struct elf_object {
	unsigned int refs; /* elfobj__ref; elfobj__free drops one */
	char *path;
	/*
	 * The libelf handle, opened when a symbol, section or code byte is first asked for: an
	 * object analysed from the persistent cache (objcache.h) never opens one. NULL until then,
	 * and when the file on disk is no longer the one analysed.
	 */
	Elf *elf;
	bool elf_tried;
	bool keep_handle; /* elfobj__drop_handle may not drop it: it could not be opened again */
	int fd;		  /* held for ELF_C_READ's reads on demand; -1 when none */
	void *image;	  /* the file's bytes for elf_memory (small files), or NULL */
	struct objcache_key key;
	/* Where loaded() opens the file again: @path, or the same through a root held here. */
	char *lazy_path;
	int root; /* the held_roots entry lazy_path needs, or -1 */
	int type;
	uint64_t size, inode;
	char *soname;
	char *interp;
	char **needed;
	size_t n_needed;
	char **verdefs;
	size_t n_verdefs;
	char build_id[2 * 64 + 1];
	bool has_build_id;
	bool symbolic;	  /* DT_SYMBOLIC or DF_SYMBOLIC: its own definitions win its lookups */
	char *damage;	  /* the first inconsistency found in its tables, or NULL */
	bool damage_done; /* damage is looked for on first ask (only lint reads it) */
	/* Sections we come back to; NULL when absent. */
	Elf_Scn *dynsym, *symtab, *versym, *verneed, *verdef;
	/* What higher layers keep with the object (roles, symbol digest), freed with it. */
	void *annotation[ELFOBJ_N_NOTES];
	void (*annotation_free[ELFOBJ_N_NOTES])(void *);
	/* The annotation's bytes as the persistent cache held them, or NULL. */
	void *blob;
	size_t blob_len;
	/* Symbols by address for elfobj__symbol_at, built on first ask; names live in @elf. */
	struct addr_index *by_addr[2]; /* [0] data objects, [1] functions */
};

static bool libelf_ready;

static int ensure_libelf(void)
{
	if (libelf_ready)
		return 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	libelf_ready = true;
	return 0;
}

static int push_str(char ***arr, size_t *n, const char *s)
{
	char **na = realloc(*arr, (*n + 1) * sizeof(**arr));

	if (!na)
		return -ENOMEM;
	*arr = na;
	na[*n] = strdup(s);
	if (!na[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int read_dynamic(struct elf_object *o, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count;

	if (!data || !sh->sh_entsize)
		return 0;
	count = data->d_size / sh->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Dyn dyn;
		const char *s;

		if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag == DT_SYMBOLIC ||
		    (dyn.d_tag == DT_FLAGS && (dyn.d_un.d_val & DF_SYMBOLIC)))
			o->symbolic = true;
		if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_SONAME)
			continue;
		s = elf_strptr(o->elf, sh->sh_link, dyn.d_un.d_val);
		if (!s)
			continue;
		if (dyn.d_tag == DT_SONAME && !o->soname)
			o->soname = strdup(s);
		else if (dyn.d_tag == DT_NEEDED && push_str(&o->needed, &o->n_needed, s))
			return -ENOMEM;
	}
	return 0;
}

static int read_verdefs(struct elf_object *o, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t off = 0;

	if (!data)
		return 0;
	/* sh_info is the number of entries; it also bounds a hostile vd_next loop. */
	for (size_t i = 0; i < sh->sh_info && off < data->d_size; i++) {
		GElf_Verdef vd;
		GElf_Verdaux va;
		const char *name;

		if (!gelf_getverdef(data, (int)off, &vd))
			break;
		if (vd.vd_cnt && gelf_getverdaux(data, (int)(off + vd.vd_aux), &va) &&
		    !(vd.vd_flags & VER_FLG_BASE)) {
			name = elf_strptr(o->elf, sh->sh_link, va.vda_name);
			if (name && push_str(&o->verdefs, &o->n_verdefs, name))
				return -ENOMEM;
		}
		if (!vd.vd_next)
			break;
		off += vd.vd_next;
	}
	return 0;
}

static void read_interp(struct elf_object *o, int fd)
{
	size_t nph;

	if (elf_getphdrnum(o->elf, &nph))
		return;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		char buf[4096];

		if (!gelf_getphdr(o->elf, (int)i, &ph) || ph.p_type != PT_INTERP)
			continue;
		if (ph.p_filesz == 0 || ph.p_filesz > sizeof(buf) ||
		    ph.p_offset + ph.p_filesz > o->size)
			return;
		/* Not elf_rawfile: that would read all of a file opened with ELF_C_READ. */
		if (o->image)
			o->interp = strndup((const char *)o->image + ph.p_offset, ph.p_filesz);
		else if (fd >= 0 &&
			 pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz)
			o->interp = strndup(buf, ph.p_filesz);
		return;
	}
}

/* Headers and section contents must lie inside the file: a truncated object says so. */
static int check_bounds(const struct elf_object *o, const GElf_Ehdr *eh)
{
	size_t nsec = eh->e_shnum, nph = eh->e_phnum;
	Elf_Scn *scn = NULL;

	/* Count fields of 0 and 0xffff defer to section 0; libelf resolves those. */
	if ((nsec == 0 && eh->e_shoff) || nph == PN_XNUM) {
		if (eh->e_shoff >= o->size)
			return EOVERFLOW;
		if (elf_getshdrnum(o->elf, &nsec) || elf_getphdrnum(o->elf, &nph))
			return EIO;
	}
	if (nsec && (eh->e_shoff > o->size || nsec > (o->size - eh->e_shoff) / sizeof(Elf64_Shdr)))
		return EOVERFLOW;
	if (nph && (eh->e_phoff > o->size || nph > (o->size - eh->e_phoff) / sizeof(Elf64_Phdr)))
		return EOVERFLOW;
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return EIO;
		if (sh.sh_type != SHT_NOBITS &&
		    (sh.sh_offset > o->size || sh.sh_size > o->size - sh.sh_offset))
			return EOVERFLOW;
	}
	return 0;
}

/* A section's name for messages ("section 7" when it has none). */
static const char *sh_name(const struct elf_object *o, Elf_Scn *scn)
{
	static __thread char buf[32];
	size_t shstrndx;
	GElf_Shdr sh;
	const char *n = NULL;

	if (!elf_getshdrstrndx(o->elf, &shstrndx) && gelf_getshdr(scn, &sh))
		n = elf_strptr(o->elf, shstrndx, sh.sh_name);
	if (n && *n)
		return n;
	snprintf(buf, sizeof(buf), "section %zu", elf_ndxscn(scn));
	return buf;
}

/* DT_NEEDED entries of .dynamic, read or not (read_dynamic drops names it cannot find). */
static size_t count_needed(const struct elf_object *o, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = 0, count = data && sh->sh_entsize ? data->d_size / sh->sh_entsize : 0;

	(void)o;
	for (size_t i = 0; i < count; i++) {
		GElf_Dyn dyn;

		if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		n += dyn.d_tag == DT_NEEDED;
	}
	return n;
}

/* What is wrong with section @idx as a string table, or NULL: it must end its last string. */
static const char *strtab_problem(const struct elf_object *o, size_t idx)
{
	Elf_Scn *scn = elf_getscn(o->elf, idx);
	GElf_Shdr sh;
	Elf_Data *d;

	if (!idx || !scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB)
		return "links to no string table";
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_size || ((const char *)d->d_buf)[d->d_size - 1] != '\0')
		return "links to a string table whose last string is not terminated";
	return NULL;
}

/* Every symbol's name lies inside its string table. */
static bool names_in_table(const struct elf_object *o, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	Elf_Data *strs = elf_getdata(elf_getscn(o->elf, sh->sh_link), NULL);
	size_t n = d && sh->sh_entsize ? d->d_size / sh->sh_entsize : 0;

	for (size_t i = 0; strs && i < n; i++) {
		GElf_Sym sym;

		if (!gelf_getsym(d, (int)i, &sym) || sym.st_name >= strs->d_size)
			return false;
	}
	return strs != NULL;
}

/* A version chain (verdef or verneed) whose links stay inside its section. */
static bool version_chain_sound(Elf_Scn *scn, const GElf_Shdr *sh, bool def)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0;

	if (!d)
		return false;
	for (size_t i = 0; i < sh->sh_info; i++) {
		size_t next, aux, cnt, entsz = def ? sizeof(Elf64_Verdef) : sizeof(Elf64_Verneed);

		if (off > d->d_size || d->d_size - off < entsz)
			return false;
		if (def) {
			GElf_Verdef vd;

			if (!gelf_getverdef(d, (int)off, &vd))
				return false;
			next = vd.vd_next, aux = vd.vd_aux, cnt = vd.vd_cnt;
		} else {
			GElf_Verneed vn;

			if (!gelf_getverneed(d, (int)off, &vn))
				return false;
			next = vn.vn_next, aux = vn.vn_aux, cnt = vn.vn_cnt;
		}
		if (cnt &&
		    (aux > d->d_size - off ||
		     d->d_size - off - aux < (def ? sizeof(Elf64_Verdaux) : sizeof(Elf64_Vernaux))))
			return false;
		if (!next)
			return i + 1 == sh->sh_info;
		off += next;
	}
	return true;
}

/*
 * The first inconsistency in the tables dlscope reads, in words, or NULL: program headers past
 * the end of the file, links to sections that are no string table, names outside their table,
 * version chains leaving their section. The loader itself reads none of the section headers,
 * so such a file may still load; lint says so, the process commands read what they can.
 */
static char *find_damage(const struct elf_object *o, const GElf_Ehdr *eh)
{
	size_t nph = 0, dynsyms = 0;
	Elf_Scn *scn = NULL;
	char *why = NULL;

	if (!elf_getphdrnum(o->elf, &nph))
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(o->elf, (int)i, &ph))
				return strdup("a program header cannot be read");
			if (ph.p_type != PT_NULL &&
			    (ph.p_offset > o->size || ph.p_filesz > o->size - ph.p_offset) &&
			    asprintf(&why,
				     "program header %zu (type %#x) covers bytes past the end of "
				     "the file",
				     i, (unsigned)ph.p_type) > 0)
				return why;
		}
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		const char *what = NULL, *str;
		const char *sec = sh_name(o, scn);

		if (!gelf_getshdr(scn, &sh))
			continue;
		switch (sh.sh_type) {
		case SHT_DYNAMIC:
			if ((str = strtab_problem(o, sh.sh_link)))
				what = str;
			else if (o->n_needed < count_needed(o, scn, &sh))
				what = "has a name outside its string table";
			break;
		case SHT_DYNSYM:
		case SHT_SYMTAB:
			if ((str = strtab_problem(o, sh.sh_link)))
				what = str;
			else if (!names_in_table(o, scn, &sh))
				what = "has a symbol whose name lies outside its string table";
			if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize)
				dynsyms = sh.sh_size / sh.sh_entsize;
			break;
		case SHT_GNU_verdef:
		case SHT_GNU_verneed:
			if ((str = strtab_problem(o, sh.sh_link)))
				what = str;
			else if (!version_chain_sound(scn, &sh, sh.sh_type == SHT_GNU_verdef))
				what = "has a version chain that leaves the section";
			break;
		}
		if (what && asprintf(&why, "%s %s", sec, what) > 0)
			return why;
	}
	if (o->versym && dynsyms) {
		GElf_Shdr sh;

		if (gelf_getshdr(o->versym, &sh) && sh.sh_size / 2 != dynsyms)
			return strdup(".gnu.version does not have one entry per dynamic symbol");
	}
	(void)eh;
	return NULL;
}

static bool loaded(const struct elf_object *o);

const char *elfobj__damage(const struct elf_object *o)
{
	struct elf_object *m = (struct elf_object *)o; /* found on first ask, then kept */
	GElf_Ehdr eh;

	if (!m->damage_done && loaded(o) && gelf_getehdr(o->elf, &eh)) {
		m->damage = find_damage(o, &eh);
		m->damage_done = true;
	}
	return o->damage;
}

const char *elfobj__strerror(int err)
{
	switch (err) {
	case ENOEXEC: return "not an ELF file";
	case EINVAL: return "not a 64-bit ELF object";
	case EIO: return "corrupt ELF headers";
	case EOVERFLOW: return "truncated: its headers or sections end past the end of the file";
	default: return strerror(err);
	}
}

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
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static struct objcache_key key_of(const struct stat *st)
{
	return (struct objcache_key){
		(uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
		(int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
		(int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec
	};
}

static bool same_key(const struct objcache_key *a, const struct objcache_key *b)
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

static void addr_index__free(struct addr_index *ix);

static void drop_elf(struct elf_object *o)
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
static int begin_elf(struct elf_object *o, int fd)
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
static void index_sections(struct elf_object *o)
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

static void release_root(int i)
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
static int stable_path(struct elf_object *o)
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
		release_root(o->root);
		o->root = -1;
		return -1;
	}
	return 0;
}

/*
 * The libelf handle of an object analysed from the persistent cache, opened on first need from
 * its path: only when the file is still the one analysed (same device, inode, size, mtime).
 */
static bool loaded(const struct elf_object *o)
{
	struct elf_object *m = (struct elf_object *)o; /* opening is no change to what it says */
	struct stat st;
	int fd;

	pthread_mutex_lock(&load_lock);
	if (!m->elf_tried) {
		m->elf_tried = true;
		fd = open(o->lazy_path ? o->lazy_path : o->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !fstat(fd, &st)) {
			struct objcache_key k = key_of(&st);

			if (same_key(&k, &o->key) && !begin_elf(m, fd)) {
				index_sections(m);
				fd = -1;
			} else if (m->elf || m->image) {
				drop_elf(m);
				fd = -1;
			}
		}
		if (fd >= 0)
			close(fd);
	}
	pthread_mutex_unlock(&load_lock);
	return o->elf != NULL;
}

/* The build-id of the GNU note in @data, as lowercase hex, and the offset of its bytes. */
static bool note_build_id(Elf_Data *data, char *out, size_t *desc_at)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const unsigned char *desc = (const unsigned char *)data->d_buf + desc_off;

		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) || !nh.n_descsz ||
		    nh.n_descsz > 64)
			continue;
		for (size_t i = 0; i < nh.n_descsz; i++)
			snprintf(out + 2 * i, 3, "%02x", desc[i]);
		*desc_at = desc_off;
		return true;
	}
	return false;
}

static char **dup_strs(char **v, size_t n)
{
	char **d = n ? calloc(n, sizeof(*d)) : NULL;

	for (size_t i = 0; d && i < n; i++)
		if (!(d[i] = strdup(v[i]))) {
			while (i--)
				free(d[i]);
			free(d);
			return NULL;
		}
	return d;
}

/* Fill @o from the cache's record. 0 or ENOMEM. */
static int from_record(struct elf_object *o, const struct objcache_rec *r)
{
	o->type = r->type;
	o->symbolic = r->symbolic;
	if (r->build_id[0]) {
		memcpy(o->build_id, r->build_id, sizeof(o->build_id));
		o->has_build_id = true;
	}
	if ((r->soname && !(o->soname = strdup(r->soname))) ||
	    (r->interp && !(o->interp = strdup(r->interp))))
		return ENOMEM;
	if (r->n_needed && !(o->needed = dup_strs(r->needed, r->n_needed)))
		return ENOMEM;
	o->n_needed = r->n_needed;
	if (r->n_verdefs && !(o->verdefs = dup_strs(r->verdefs, r->n_verdefs)))
		return ENOMEM;
	o->n_verdefs = r->n_verdefs;
	if (r->blob_len) {
		if (!(o->blob = malloc(r->blob_len)))
			return ENOMEM;
		memcpy(o->blob, r->blob, r->blob_len);
		o->blob_len = r->blob_len;
	}
	return 0;
}

/* What the analysis found, into the persistent cache. */
static void to_record(const struct elf_object *o, uint64_t bid_off)
{
	struct objcache_rec r = {
		.key = o->key,
		.type = (uint16_t)o->type,
		.symbolic = o->symbolic,
		.soname = o->soname,
		.interp = o->interp,
		.needed = o->needed,
		.n_needed = o->n_needed,
		.verdefs = o->verdefs,
		.n_verdefs = o->n_verdefs,
		.bid_off = bid_off,
	};

	if (o->has_build_id)
		memcpy(r.build_id, o->build_id, sizeof(r.build_id));
	objcache__put(&r);
}

/* An object for the regular file @st at @path, nothing read yet; NULL when out of memory. */
static struct elf_object *new_object(const char *path, const struct stat *st)
{
	struct elf_object *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->refs = 1;
	o->fd = -1;
	o->root = -1;
	o->size = (uint64_t)st->st_size;
	o->inode = (uint64_t)st->st_ino;
	o->key = key_of(st);
	o->path = strdup(path);
	if (!o->path) {
		free(o);
		return NULL;
	}
	return o;
}

struct elf_object *elfobj__open(const char *path)
{
	struct elf_object *o = NULL;
	struct objcache_rec *rec;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	struct stat st;
	uint64_t bid_off = UINT64_MAX;
	int fd = -1, err = 0;

	if (ensure_libelf())
		return errno = EINVAL, NULL;
	/*
	 * Analysed before (same device, inode, size, mtime and ctime): one stat, nothing opened
	 * and no section read until a caller asks for one (loaded() checks the key again then).
	 */
	if (objcache__enabled() && !stat(path, &st) && S_ISREG(st.st_mode)) {
		struct objcache_key key = key_of(&st);

		rec = objcache__find(&key);
		if (rec) {
			o = new_object(path, &st);
			if (!o || from_record(o, rec)) {
				err = ENOMEM;
				goto err_free;
			}
			if (!stable_path(o))
				return o;
			/* No path to come back by: the handle now, from a descriptor. */
			fd = open(path, O_RDONLY | O_CLOEXEC);
			o->elf_tried = o->keep_handle = true;
			if (fd >= 0 && !fstat(fd, &st) && same_key(&key, &o->key) &&
			    !begin_elf(o, fd))
				index_sections(o);
			else if (fd >= 0)
				close(fd);
			return o;
		}
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? EISDIR : ENOEXEC;
		goto err_close;
	}
	o = new_object(path, &st);
	if (!o) {
		err = ENOMEM;
		goto err_close;
	}
	o->elf_tried = true;
	err = begin_elf(o, fd);
	fd = -1;
	if (err || elf_kind(o->elf) != ELF_K_ELF) {
		err = o->size < sizeof(Elf64_Ehdr) ? EOVERFLOW : err == ENOMEM ? ENOMEM : ENOEXEC;
		goto err_free;
	}
	if (!gelf_getehdr(o->elf, &eh)) {
		err = EIO;
		goto err_free;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64) {
		err = EINVAL;
		goto err_free;
	}
	o->type = eh.e_type;
	err = check_bounds(o, &eh);
	if (err)
		goto err_free;

	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		size_t at;

		if (!gelf_getshdr(scn, &sh))
			continue;
		switch (sh.sh_type) {
		case SHT_DYNAMIC:
			if (read_dynamic(o, scn, &sh)) {
				err = ENOMEM;
				goto err_free;
			}
			break;
		case SHT_GNU_verdef:
			if (read_verdefs(o, scn, &sh)) {
				err = ENOMEM;
				goto err_free;
			}
			break;
		case SHT_NOTE:
			if (!o->has_build_id && elf_getdata(scn, NULL) &&
			    note_build_id(elf_getdata(scn, NULL), o->build_id, &at)) {
				o->has_build_id = true;
				bid_off = sh.sh_offset + at;
			}
			break;
		}
	}
	index_sections(o);
	{
		/* read_interp reads the image, the held descriptor, or (mapped) the file again. */
		int ifd = o->image || o->fd >= 0 ? o->fd : open(path, O_RDONLY | O_CLOEXEC);

		read_interp(o, ifd);
		if (ifd >= 0 && ifd != o->fd)
			close(ifd);
	}
	to_record(o, bid_off);
	if (stable_path(o))
		o->keep_handle = true; /* no path to come back by */
	return o;

err_free:
	elfobj__free(o);
err_close:
	if (fd >= 0)
		close(fd);
	errno = err;
	return NULL;
}

void elfobj__drop_handle(const struct elf_object *o)
{
	struct elf_object *m = (struct elf_object *)o; /* loaded() opens it again on need */

	pthread_mutex_lock(&load_lock);
	if (!o->keep_handle && o->elf) {
		drop_elf(m);
		m->dynsym = m->symtab = m->versym = m->verneed = m->verdef = NULL;
		m->elf_tried = false;
	}
	pthread_mutex_unlock(&load_lock);
}

const void *elfobj__cached_annotation(const struct elf_object *o, size_t *len)
{
	*len = o->blob_len;
	return o->blob;
}

void elfobj__cache_annotation(const struct elf_object *o, const void *data, size_t len)
{
	objcache__set_blob(&o->key, data, len);
}

const struct objcache_key *elfobj__content_key(const struct elf_object *o)
{
	return &o->key;
}

struct elf_object *elfobj__ref(struct elf_object *o)
{
	if (o)
		o->refs++;
	return o;
}

bool elfobj__shared(const struct elf_object *o)
{
	return o->refs > 1;
}

void elfobj__free(struct elf_object *o)
{
	if (!o || --o->refs)
		return;
	for (size_t i = 0; i < o->n_needed; i++)
		free(o->needed[i]);
	for (size_t i = 0; i < o->n_verdefs; i++)
		free(o->verdefs[i]);
	free(o->needed);
	free(o->verdefs);
	free(o->soname);
	free(o->interp);
	free(o->damage);
	free(o->path);
	free(o->lazy_path);
	release_root(o->root);
	free(o->blob);
	for (int i = 0; i < ELFOBJ_N_NOTES; i++)
		if (o->annotation_free[i])
			o->annotation_free[i](o->annotation[i]);
	drop_elf(o);
	free(o);
}

const char *elfobj__path(const struct elf_object *o)
{
	return o->path;
}

int elfobj__type(const struct elf_object *o)
{
	return o->type;
}

const char *elfobj__soname(const struct elf_object *o)
{
	return o->soname;
}

size_t elfobj__n_needed(const struct elf_object *o)
{
	return o->n_needed;
}

const char *elfobj__needed(const struct elf_object *o, size_t i)
{
	return i < o->n_needed ? o->needed[i] : NULL;
}

const char *elfobj__build_id(const struct elf_object *o)
{
	return o->has_build_id ? o->build_id : NULL;
}

const char *elfobj__interp(const struct elf_object *o)
{
	return o->interp;
}

size_t elfobj__n_verdefs(const struct elf_object *o)
{
	return o->n_verdefs;
}

const char *elfobj__verdef(const struct elf_object *o, size_t i)
{
	return i < o->n_verdefs ? o->verdefs[i] : NULL;
}

bool elfobj__symbolic(const struct elf_object *o)
{
	return o->symbolic;
}

void *elfobj__annotation(const struct elf_object *o, enum elfobj_note which)
{
	return o->annotation[which];
}

void elfobj__annotate(const struct elf_object *o, enum elfobj_note which, void *data,
		      void (*free_fn)(void *))
{
	/* A cache kept with the object, not a change to what it describes. */
	struct elf_object *m = (struct elf_object *)o;

	if (m->annotation_free[which])
		m->annotation_free[which](m->annotation[which]);
	m->annotation[which] = data;
	m->annotation_free[which] = free_fn;
}

uint64_t elfobj__size(const struct elf_object *o)
{
	return o->size;
}

uint64_t elfobj__inode(const struct elf_object *o)
{
	return o->inode;
}

Elf *elfobj__elf(const struct elf_object *o)
{
	return loaded(o) ? o->elf : NULL;
}

static int foreach_in(const struct elf_object *o, Elf_Scn *scn, bool defined, elfobj_sym_cb cb,
		      void *ctx)
{
	Elf_Data *data;
	GElf_Shdr sh;
	size_t count;

	if (!loaded(o))
		return 0;

	if (!scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return 0;
	data = elf_getdata(scn, NULL);
	if (!data)
		return 0;
	count = data->d_size / sh.sh_entsize;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		int ret;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if ((sym.st_shndx == SHN_UNDEF) == defined)
			continue;
		name = elf_strptr(o->elf, sh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		ret = cb(name, &sym, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

int elfobj__foreach_defined(const struct elf_object *o, unsigned tables, elfobj_sym_cb cb,
			    void *ctx)
{
	int ret = 0;

	if (!loaded(o)) /* before o->dynsym and o->symtab are read */
		return 0;
	if (tables & ELFOBJ_DYNSYM)
		ret = foreach_in(o, o->dynsym, true, cb, ctx);
	if (!ret && (tables & ELFOBJ_SYMTAB))
		ret = foreach_in(o, o->symtab, true, cb, ctx);
	return ret;
}

/* The GNU hash of a symbol name (the dynamic linker's dl_new_hash). */
static uint32_t gnu_hash(const char *name)
{
	uint32_t h = 5381;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	return h;
}

/*
 * Look @name up through .gnu.hash as ld.so would: bloom filter, bucket, then the chain of
 * equal hashes. 1 found, 0 absent, -1 when there is no usable table (the caller scans).
 */
static int gnu_hash_lookup(const struct elf_object *o, const char *name, GElf_Sym *out)
{
	Elf_Data *hd, *sd;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh, ssh;
	const uint32_t *w;
	uint32_t nbuckets, symoffset, bloom_size, bloom_shift, h, idx;
	size_t nwords, nsyms;

	if (!loaded(o))
		return -1;

	while ((scn = elf_nextscn(o->elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_HASH)
			break;
	if (!scn || !o->dynsym || !gelf_getshdr(o->dynsym, &ssh) || !ssh.sh_entsize)
		return -1;
	hd = elf_getdata(scn, NULL);
	sd = elf_getdata(o->dynsym, NULL);
	if (!hd || !sd || hd->d_size < 16 || gelf_getclass(o->elf) != ELFCLASS64)
		return -1;
	w = hd->d_buf;
	nwords = hd->d_size / 4;
	nsyms = sd->d_size / ssh.sh_entsize;
	nbuckets = w[0];
	symoffset = w[1];
	bloom_size = w[2];
	bloom_shift = w[3];
	if (!nbuckets || !bloom_size || 4 + (size_t)bloom_size * 2 + nbuckets > nwords)
		return -1;
	h = gnu_hash(name);
	{
		const uint64_t *bloom = (const uint64_t *)(w + 4);
		uint64_t word = bloom[(h / 64) % bloom_size];

		if (!((word >> (h % 64)) & (word >> ((h >> bloom_shift) % 64)) & 1))
			return 0;
	}
	idx = w[4 + bloom_size * 2 + h % nbuckets];
	if (idx < symoffset)
		return 0;
	for (;; idx++) {
		size_t chain = 4 + (size_t)bloom_size * 2 + nbuckets + (idx - symoffset);
		const char *sname;
		GElf_Sym sym;

		if (chain >= nwords || idx >= nsyms || !gelf_getsym(sd, (int)idx, &sym))
			return 0;
		if ((w[chain] | 1) == (h | 1) && sym.st_shndx != SHN_UNDEF &&
		    (sname = elf_strptr(o->elf, ssh.sh_link, sym.st_name)) &&
		    !strcmp(sname, name)) {
			*out = sym;
			return 1;
		}
		if (w[chain] & 1)
			return 0;
	}
}

struct find_any {
	const char *name;
	GElf_Sym sym;
	bool found;
};

static int match_any(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct find_any *f = ctx;

	if (strcmp(name, f->name))
		return 0;
	f->sym = *sym;
	f->found = true;
	return 1;
}

int elfobj__lookup(const struct elf_object *o, const char *name, unsigned tables, GElf_Sym *sym)
{
	struct find_any f = { .name = name };

	if (tables & ELFOBJ_DYNSYM) {
		int r = gnu_hash_lookup(o, name, sym);

		if (r > 0)
			return 0;
		if (r < 0)
			elfobj__foreach_defined(o, ELFOBJ_DYNSYM, match_any, &f);
	}
	if (!f.found && (tables & ELFOBJ_SYMTAB))
		elfobj__foreach_defined(o, ELFOBJ_SYMTAB, match_any, &f);
	if (!f.found)
		return -ENOENT;
	*sym = f.sym;
	return 0;
}

/* Map a version index of .gnu.version to the version name .gnu.version_r gives it. */
static const char *verneed_name(const struct elf_object *o, unsigned idx)
{
	Elf_Data *data;
	GElf_Shdr sh;
	size_t off = 0;

	if (!o->verneed || !gelf_getshdr(o->verneed, &sh))
		return NULL;
	data = elf_getdata(o->verneed, NULL);
	if (!data)
		return NULL;
	for (size_t i = 0; i < sh.sh_info && off < data->d_size; i++) {
		GElf_Verneed vn;
		size_t aoff;

		if (!gelf_getverneed(data, (int)off, &vn))
			return NULL;
		aoff = off + vn.vn_aux;
		for (unsigned j = 0; j < vn.vn_cnt && aoff < data->d_size; j++) {
			GElf_Vernaux va;

			if (!gelf_getvernaux(data, (int)aoff, &va))
				return NULL;
			if ((va.vna_other & 0x7fff) == idx)
				return elf_strptr(o->elf, sh.sh_link, va.vna_name);
			if (!va.vna_next)
				break;
			aoff += va.vna_next;
		}
		if (!vn.vn_next)
			break;
		off += vn.vn_next;
	}
	return NULL;
}

int elfobj__foreach_verneed(const struct elf_object *o, elfobj_verneed_cb cb, void *ctx)
{
	Elf_Data *data;
	GElf_Shdr sh;
	size_t off = 0;

	if (!loaded(o))
		return 0;

	if (!o->verneed || !gelf_getshdr(o->verneed, &sh))
		return 0;
	data = elf_getdata(o->verneed, NULL);
	if (!data)
		return 0;
	for (size_t i = 0; i < sh.sh_info && off < data->d_size; i++) {
		GElf_Verneed vn;
		const char *file;
		size_t aoff;

		if (!gelf_getverneed(data, (int)off, &vn))
			break;
		file = elf_strptr(o->elf, sh.sh_link, vn.vn_file);
		aoff = off + vn.vn_aux;
		for (unsigned j = 0; j < vn.vn_cnt && aoff < data->d_size; j++) {
			GElf_Vernaux va;
			const char *ver;
			int ret;

			if (!gelf_getvernaux(data, (int)aoff, &va))
				break;
			ver = elf_strptr(o->elf, sh.sh_link, va.vna_name);
			if (file && ver) {
				ret = cb(file, ver, ctx);
				if (ret)
					return ret;
			}
			if (!va.vna_next)
				break;
			aoff += va.vna_next;
		}
		if (!vn.vn_next)
			break;
		off += vn.vn_next;
	}
	return 0;
}

struct find_func {
	const char *name;
	GElf_Sym sym;
	bool found;
};

static int match_func(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct find_func *f = ctx;
	size_t len = strlen(f->name);

	/* .symtab spells versioned definitions "dlopen@@GLIBC_2.34"; both spellings are one. */
	if (strncmp(name, f->name, len) || (name[len] && name[len] != '@'))
		return 0;
	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC && GELF_ST_TYPE(sym->st_info) != STT_GNU_IFUNC)
		return 0;
	f->sym = *sym;
	f->found = true;
	return 1;
}

/* The file offset of virtual address @vaddr, through the PT_LOAD that maps it. */
static int vaddr_to_offset(const struct elf_object *o, uint64_t vaddr, uint64_t *offset)
{
	size_t nph;

	if (!loaded(o))
		return -ERANGE;

	if (elf_getphdrnum(o->elf, &nph))
		return -ERANGE;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(o->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*offset = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ERANGE;
}

bool elfobj__writable_at(const struct elf_object *o, uint64_t vaddr)
{
	bool writable = false;
	size_t nph;

	if (!loaded(o) || elf_getphdrnum(o->elf, &nph))
		return false;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(o->elf, (int)i, &ph) || vaddr < ph.p_vaddr ||
		    vaddr - ph.p_vaddr >= ph.p_memsz)
			continue;
		/* The loader makes PT_GNU_RELRO read-only once it has relocated it. */
		if (ph.p_type == PT_GNU_RELRO)
			return false;
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W))
			writable = true;
	}
	return writable;
}

int elfobj__offset_to_vaddr(const struct elf_object *o, uint64_t offset, uint64_t *vaddr)
{
	size_t nph;

	if (!loaded(o))
		return -ERANGE;

	if (elf_getphdrnum(o->elf, &nph))
		return -ERANGE;
	/* The file bytes of a segment first, then its zero-filled tail (.bss past the file). */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			uint64_t size;

			if (!gelf_getphdr(o->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			size = pass ? ph.p_memsz : ph.p_filesz;
			if (offset >= ph.p_offset && offset < ph.p_offset + size) {
				*vaddr = offset - ph.p_offset + ph.p_vaddr;
				return 0;
			}
		}
	return -ERANGE;
}

/* A defined function named @name, from .dynsym first, then .symtab. */
static bool find_function(const struct elf_object *o, const char *name, GElf_Sym *sym)
{
	struct find_func f = { .name = name };

	elfobj__foreach_defined(o, ELFOBJ_DYNSYM, match_func, &f);
	if (!f.found)
		elfobj__foreach_defined(o, ELFOBJ_SYMTAB, match_func, &f);
	*sym = f.sym;
	return f.found;
}

int elfobj__func_offset(const struct elf_object *o, const char *name, uint64_t *offset)
{
	GElf_Sym sym;

	if (!find_function(o, name, &sym))
		return -ENOENT;
	return vaddr_to_offset(o, sym.st_value, offset);
}

/* True when the CFA rule of @frame is "the stack pointer + 8": nothing left on the stack. */
static bool cfa_is_sp_plus_8(Dwarf_Frame *frame)
{
	Dwarf_Op *ops;
	size_t nops;

	return !dwarf_frame_cfa(frame, &ops, &nops) && nops == 1 && ops[0].atom == DW_OP_bregx &&
	       ops[0].number == 7 /* rsp */ && ops[0].number2 == 8;
}

int elfobj__func_returns(const struct elf_object *o, const char *file, const char *name,
			 uint64_t *offsets, size_t max, size_t *n)
{
	Dwarf_CFI *cfi;
	GElf_Sym sym;
	GElf_Ehdr eh;
	int fd;

	if (!loaded(o))
		return -ENOENT;

	*n = 0;
	if (!gelf_getehdr(o->elf, &eh) || eh.e_machine != EM_X86_64)
		return -ENOTSUP;
	if (!find_function(o, name, &sym) || !sym.st_size)
		return -ENOENT;
	/*
	 * The code bytes are read from the file, not from libelf's mapping of it: the kernel
	 * writes the int3 of every uprobe on the file (another dlscope's, or ours on an earlier
	 * function) into each private mapping that may execute, ours included.
	 */
	fd = open(file ? file : o->lazy_path ? o->lazy_path : o->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	cfi = dwarf_getcfi_elf(o->elf);
	if (!cfi) {
		close(fd);
		return -ENODATA;
	}
	for (uint64_t pc = sym.st_value; pc < sym.st_value + sym.st_size && *n < max;) {
		Dwarf_Frame *frame;
		Dwarf_Addr start, end;
		unsigned char byte;
		uint64_t off;

		if (dwarf_cfi_addrframe(cfi, pc, &frame))
			break;
		if (dwarf_frame_info(frame, &start, &end, NULL) < 0 || end <= pc) {
			free(frame);
			break;
		}
		/* A row starts at an instruction; a ret there, with the frame popped, returns. */
		if (start > sym.st_value && cfa_is_sp_plus_8(frame) &&
		    !vaddr_to_offset(o, start, &off) && pread(fd, &byte, 1, (off_t)off) == 1 &&
		    arch_is_ret(byte))
			offsets[(*n)++] = off;
		free(frame);
		pc = end;
	}
	dwarf_cfi_end(cfi);
	close(fd);
	return *n ? 0 : -ENOENT;
}

/* @len bytes at virtual address @vaddr, read from the file (see func_returns for why). */
int elfobj__read_vaddr(const struct elf_object *o, uint64_t vaddr, void *buf, size_t len)
{
	uint64_t off, last;
	ssize_t got;
	int fd;

	/* Both ends in one segment's file bytes. */
	if (!len || vaddr_to_offset(o, vaddr, &off) || vaddr_to_offset(o, vaddr + len - 1, &last) ||
	    last != off + len - 1)
		return -ERANGE;
	fd = open(o->lazy_path ? o->lazy_path : o->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* Opened through a target's descriptor (/proc/self/fd/N), closed since: the bytes
		 * of libelf's mapping of the file (uprobes write only into executable mappings). */
		size_t size = 0;
		const char *raw = elf_rawfile(o->elf, &size);

		if (!raw || off + len > size)
			return -errno;
		memcpy(buf, raw + off, len);
		return 0;
	}
	got = pread(fd, buf, len, (off_t)off);
	close(fd);
	return got == (ssize_t)len ? 0 : -EIO;
}

int elfobj__func_code(const struct elf_object *o, const char *name, void *buf, size_t len,
		      uint64_t *vaddr)
{
	GElf_Sym sym;
	GElf_Ehdr eh;

	if (!loaded(o))
		return -ENOENT;

	if (!gelf_getehdr(o->elf, &eh) || eh.e_machine != EM_X86_64)
		return -ENOTSUP;
	if (!find_function(o, name, &sym))
		return -ENOENT;
	*vaddr = sym.st_value;
	return elfobj__read_vaddr(o, sym.st_value, buf, len) ? -EIO : 0;
}

int elfobj__func_constant(const struct elf_object *o, const char *name, int64_t *imm,
			  uint64_t *vaddr)
{
	unsigned char code[16];
	uint64_t entry;
	int err = elfobj__func_code(o, name, code, sizeof(code), &entry);

	return err ? err : arch_decode_return_constant(code, sizeof(code), entry, imm, vaddr);
}

const void *elfobj__section(const struct elf_object *o, const char *name, size_t *size)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!loaded(o))
		return NULL;

	if (elf_getshdrstrndx(o->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		const char *sname;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		sname = elf_strptr(o->elf, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, name))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			return NULL;
		*size = data->d_size;
		return data->d_buf;
	}
	return NULL;
}

int elfobj__foreach_dynreloc(const struct elf_object *o, elfobj_reloc_cb cb, void *ctx)
{
	Elf_Scn *scn = NULL;
	size_t dynsym_ndx;

	if (!loaded(o))
		return 0;

	if (!o->dynsym)
		return 0;
	dynsym_ndx = elf_ndxscn(o->dynsym);
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh, symsh;
		Elf_Data *data, *syms;
		size_t count;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || sh.sh_link != dynsym_ndx ||
		    !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		syms = elf_getdata(o->dynsym, NULL);
		if (!data || !syms || !gelf_getshdr(o->dynsym, &symsh))
			continue;
		count = data->d_size / sh.sh_entsize;
		for (size_t i = 0; i < count; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *name;
			int ret;

			if (!gelf_getrela(data, (int)i, &r) || !GELF_R_SYM(r.r_info))
				continue;
			if (!gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
				continue;
			name = elf_strptr(o->elf, symsh.sh_link, sym.st_name);
			if (!name)
				continue;
			ret = cb(name, r.r_offset, (unsigned)GELF_R_TYPE(r.r_info),
				 (unsigned)GELF_ST_TYPE(sym.st_info), ctx);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* The name of version definition @idx of .gnu.version_d. */
static const char *verdef_name(const struct elf_object *o, unsigned idx)
{
	Elf_Data *data;
	GElf_Shdr sh;
	size_t off = 0;

	if (!o->verdef || !gelf_getshdr(o->verdef, &sh))
		return NULL;
	data = elf_getdata(o->verdef, NULL);
	for (size_t i = 0; data && i < sh.sh_info && off < data->d_size; i++) {
		GElf_Verdef vd;
		GElf_Verdaux va;

		if (!gelf_getverdef(data, (int)off, &vd))
			return NULL;
		if (vd.vd_ndx == idx && vd.vd_cnt &&
		    gelf_getverdaux(data, (int)(off + vd.vd_aux), &va))
			return elf_strptr(o->elf, sh.sh_link, va.vda_name);
		if (!vd.vd_next)
			break;
		off += vd.vd_next;
	}
	return NULL;
}

/*
 * Walk .dynsym with each symbol's version: the node it defines (.gnu.version_d) for defined
 * symbols, the one it needs (.gnu.version_r) for undefined ones. Version indexes are small, so
 * names found once are remembered.
 */
static int foreach_versioned(const struct elf_object *o, bool defined, elfobj_vsym_cb cb, void *ctx)
{
	const char *names[64] = { 0 };
	bool looked[64] = { 0 };
	Elf_Data *data, *vdata = NULL;
	GElf_Shdr sh;
	size_t count;

	if (!loaded(o))
		return 0;

	if (!o->dynsym || !gelf_getshdr(o->dynsym, &sh) || !sh.sh_entsize)
		return 0;
	data = elf_getdata(o->dynsym, NULL);
	if (!data)
		return 0;
	if (o->versym)
		vdata = elf_getdata(o->versym, NULL);
	count = data->d_size / sh.sh_entsize;
	for (size_t i = 1; i < count; i++) {
		const char *name, *version = NULL;
		GElf_Versym vs;
		GElf_Sym sym;
		int ret;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if ((sym.st_shndx != SHN_UNDEF) != defined)
			continue;
		name = elf_strptr(o->elf, sh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (vdata && gelf_getversym(vdata, (int)i, &vs) && (vs & 0x7fff) > 1) {
			unsigned idx = vs & 0x7fff;

			if (idx >= 64)
				version = defined ? verdef_name(o, idx) : verneed_name(o, idx);
			else if (looked[idx])
				version = names[idx];
			else {
				version = names[idx] = defined ? verdef_name(o, idx) :
								 verneed_name(o, idx);
				looked[idx] = true;
			}
		}
		ret = cb(name, version, &sym, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

int elfobj__foreach_defined_versioned(const struct elf_object *o, elfobj_vsym_cb cb, void *ctx)
{
	return foreach_versioned(o, true, cb, ctx);
}

struct undef_adapter {
	elfobj_undef_cb cb;
	void *ctx;
};

static int undef_adapt(const char *name, const char *version, const GElf_Sym *sym, void *ctx)
{
	struct undef_adapter *a = ctx;

	return a->cb(name, version, GELF_ST_BIND(sym->st_info) == STB_WEAK, a->ctx);
}

int elfobj__foreach_undefined(const struct elf_object *o, elfobj_undef_cb cb, void *ctx)
{
	struct undef_adapter a = { cb, ctx };

	return foreach_versioned(o, false, undef_adapt, &a);
}

/*
 * Symbols by address. A query asks: the first symbol, in table order (.symtab before .dynsym),
 * whose [value, value + size) holds the address; else, for functions, the nearest sizeless one
 * below it. Sorting once per object and binary searching makes each query O(log n) instead of
 * a walk of both tables (perf and libbpf-tools keep the same kind of index).
 */
struct addr_sym {
	uint64_t value, end; /* end == value for a sizeless symbol */
	uint64_t max_end;    /* the largest end among this entry and all before it (sized only) */
	uint32_t order;	     /* its place in the tables: .symtab first, then .dynsym */
	const char *name;
};

struct addr_index {
	struct addr_sym *sized, *sizeless;
	size_t n_sized, n_sizeless;
};

static void addr_index__free(struct addr_index *ix)
{
	if (!ix)
		return;
	free(ix->sized);
	free(ix->sizeless);
	free(ix);
}

struct index_build {
	struct addr_index *ix;
	size_t cap_sized, cap_sizeless;
	uint32_t order;
	bool func;
	bool failed;
};

static int push_addr_sym(struct addr_sym **v, size_t *n, size_t *cap, struct addr_sym e)
{
	if (*n == *cap) {
		if (ARRAY_GROW(*v, *cap, 256))
			return -ENOMEM;
	}
	(*v)[(*n)++] = e;
	return 0;
}

static int collect_addr_sym(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct index_build *b = ctx;
	unsigned type = GELF_ST_TYPE(sym->st_info);
	struct addr_sym e = { .value = sym->st_value, .order = b->order++, .name = name };
	int err;

	if (b->func ? (type != STT_FUNC && type != STT_GNU_IFUNC) :
		      (type != STT_OBJECT && type != STT_TLS))
		return 0;
	if (sym->st_size) {
		e.end = sym->st_value + sym->st_size;
		err = push_addr_sym(&b->ix->sized, &b->ix->n_sized, &b->cap_sized, e);
	} else if (b->func) {
		e.end = e.value;
		err = push_addr_sym(&b->ix->sizeless, &b->ix->n_sizeless, &b->cap_sizeless, e);
	} else {
		return 0;
	}
	if (err)
		b->failed = true;
	return err ? 1 : 0;
}

/* By value; sized ties by table order, sizeless ties by table order reversed (see lookup). */
static int by_value_then_order(const void *a, const void *b)
{
	const struct addr_sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int by_value_then_order_desc(const void *a, const void *b)
{
	const struct addr_sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->order > y->order ? -1 : x->order < y->order;
}

static struct addr_index *build_addr_index(const struct elf_object *o, bool func)
{
	struct index_build b = { .func = func };
	uint64_t max_end = 0;

	b.ix = calloc(1, sizeof(*b.ix));
	if (!b.ix)
		return NULL;
	elfobj__foreach_defined(o, ELFOBJ_SYMTAB, collect_addr_sym, &b);
	elfobj__foreach_defined(o, ELFOBJ_DYNSYM, collect_addr_sym, &b);
	if (b.failed) {
		addr_index__free(b.ix);
		return NULL;
	}
	/* qsort of an empty (NULL) array is undefined: an object may have no sized symbol. */
	if (b.ix->n_sized)
		qsort(b.ix->sized, b.ix->n_sized, sizeof(struct addr_sym), by_value_then_order);
	if (b.ix->n_sizeless)
		qsort(b.ix->sizeless, b.ix->n_sizeless, sizeof(struct addr_sym),
		      by_value_then_order_desc);
	for (size_t i = 0; i < b.ix->n_sized; i++) {
		if (b.ix->sized[i].end > max_end)
			max_end = b.ix->sized[i].end;
		b.ix->sized[i].max_end = max_end;
	}
	return b.ix;
}

/* The number of entries whose value is <= @vaddr (they come first: sorted by value). */
static size_t count_at_or_below(const struct addr_sym *v, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].value <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct addr_sym *addr_index__lookup(const struct addr_index *ix, uint64_t vaddr)
{
	const struct addr_sym *best = NULL;
	size_t i = count_at_or_below(ix->sized, ix->n_sized, vaddr);

	/* Walk down while some symbol at or below could still reach past vaddr. */
	while (i-- > 0 && ix->sized[i].max_end > vaddr)
		if (ix->sized[i].end > vaddr && (!best || ix->sized[i].order < best->order))
			best = &ix->sized[i];
	if (best)
		return best;
	/* The highest sizeless value below; among equal values the first in table order. */
	i = count_at_or_below(ix->sizeless, ix->n_sizeless, vaddr);
	return i ? &ix->sizeless[i - 1] : NULL;
}

int elfobj__symbol_at(const struct elf_object *o, uint64_t vaddr, bool func, const char **name,
		      uint64_t *offset)
{
	struct elf_object *m = (struct elf_object *)o; /* the index is a cache of what it says */
	const struct addr_sym *hit;

	struct addr_index *fresh = NULL;

	if (!loaded(o))
		return -ENOENT;
	pthread_mutex_lock(&load_lock);
	if (!m->by_addr[func]) {
		/* Built outside the lock (the walk takes it); the first to finish installs it. */
		pthread_mutex_unlock(&load_lock);
		fresh = build_addr_index(o, func);
		pthread_mutex_lock(&load_lock);
		if (!m->by_addr[func] && o->elf) {
			m->by_addr[func] = fresh;
			fresh = NULL;
		}
	}
	hit = m->by_addr[func] ? addr_index__lookup(m->by_addr[func], vaddr) : NULL;
	if (hit) {
		*name = hit->name;
		*offset = vaddr - hit->value;
	}
	pthread_mutex_unlock(&load_lock);
	addr_index__free(fresh);
	return hit ? 0 : -ENOENT;
}
