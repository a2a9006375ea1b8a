// SPDX-License-Identifier: GPL-2.0
/*
 * An ELF object: opened (from the persistent cache or the file), what its open reads (dynamic
 * section, version definitions, build-id, interpreter), its lifetime and accessors. The rest
 * lives beside it: elfobj_load.c (the libelf handle on demand), elfobj_symbols.c,
 * elfobj_symindex.c, elfobj_versions.c, elfobj_code.c and elfobj_damage.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "elfobj.h"
#include "elfobj_impl.h"
#include "objcache.h"

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

static int push_str(char ***arr, size_t *n, size_t *cap, const char *s)
{
	if (ARRAY_RESERVE(*arr, *cap, *n + 1))
		return -ENOMEM;
	(*arr)[*n] = strdup(s);
	if (!(*arr)[*n])
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
		else if (dyn.d_tag == DT_NEEDED &&
			 push_str(&o->needed, &o->n_needed, &o->cap_needed, s))
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
			if (name && push_str(&o->verdefs, &o->n_verdefs, &o->cap_verdefs, name))
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
	o->key = elfobj_key_of(st);
	o->path = strdup(path);
	if (!o->path) {
		free(o);
		return NULL;
	}
	return o;
}

/*
 * Analysed before (same device, inode, size, mtime and ctime): one stat, nothing opened and no
 * section read until a caller asks for one (elfobj_loaded() checks the key again then). NULL
 * with *@err 0 when the cache does not know the file, with *@err set when out of memory.
 */
static struct elf_object *open_cached(const char *path, int *err)
{
	struct elf_object *o = NULL;
	struct objcache_rec *rec;
	struct objcache_key key;
	struct stat st;
	int fd;

	*err = 0;
	if (!objcache__enabled() || stat(path, &st) || !S_ISREG(st.st_mode))
		return NULL;
	key = elfobj_key_of(&st);
	rec = objcache__find(&key);
	if (!rec)
		return NULL;
	o = new_object(path, &st);
	if (!o || from_record(o, rec)) {
		elfobj__free(o);
		*err = ENOMEM;
		return NULL;
	}
	if (!elfobj_stable_path(o))
		return o;
	/* No path to come back by: the handle now, from a descriptor. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	o->elf_tried = o->keep_handle = true;
	if (fd >= 0 && !fstat(fd, &st) && elfobj_same_key(&key, &o->key) &&
	    !elfobj_begin_elf(o, fd))
		elfobj_index_sections(o);
	else if (fd >= 0)
		close(fd);
	return o;
}

/*
 * What the open reads of the sections: .dynamic, the version definitions, the build-id note (its
 * file offset in *@bid_off). 0 or ENOMEM.
 */
static int read_sections(struct elf_object *o, uint64_t *bid_off)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		size_t at;

		if (!gelf_getshdr(scn, &sh))
			continue;
		switch (sh.sh_type) {
		case SHT_DYNAMIC:
			if (read_dynamic(o, scn, &sh))
				return ENOMEM;
			break;
		case SHT_GNU_verdef:
			if (read_verdefs(o, scn, &sh))
				return ENOMEM;
			break;
		case SHT_NOTE:
			if (!o->has_build_id && elf_getdata(scn, NULL) &&
			    note_build_id(elf_getdata(scn, NULL), o->build_id, &at)) {
				o->has_build_id = true;
				*bid_off = sh.sh_offset + at;
			}
			break;
		}
	}
	return 0;
}

struct elf_object *elfobj__open(const char *path)
{
	struct elf_object *o = NULL;
	GElf_Ehdr eh;
	struct stat st;
	uint64_t bid_off = UINT64_MAX;
	int fd = -1, err = 0;

	if (ensure_libelf())
		return errno = EINVAL, NULL;
	o = open_cached(path, &err);
	if (o)
		return o;
	if (err)
		return errno = err, NULL;
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
	err = elfobj_begin_elf(o, fd);
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
	if (!err)
		err = read_sections(o, &bid_off);
	if (err)
		goto err_free;
	elfobj_index_sections(o);
	{
		/* read_interp reads the image, the held descriptor, or (mapped) the file again. */
		int ifd = o->image || o->fd >= 0 ? o->fd : open(path, O_RDONLY | O_CLOEXEC);

		read_interp(o, ifd);
		if (ifd >= 0 && ifd != o->fd)
			close(ifd);
	}
	to_record(o, bid_off);
	if (elfobj_stable_path(o))
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
	elfobj_release_root(o->root);
	free(o->blob);
	for (int i = 0; i < ELFOBJ_N_NOTES; i++)
		if (o->annotation_free[i])
			o->annotation_free[i](o->annotation[i]);
	elfobj_drop_elf(o);
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
	return elfobj_loaded(o) ? o->elf : NULL;
}
