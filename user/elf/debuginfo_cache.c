// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachefile.h"
#include "debuginfo_cache.h"

#define SUBDIR "debuginfo" /* of the cache folder (cachefile.h) */
#define TRAILER_MAGIC "dlsdbg01"
#define MAX_SHDRS (16u << 20) /* a section header table larger than this is damaged */

/* What a module's userdata holds (libdwfl leaves it to the application). */
#define MAIN_TRUSTED ((uintptr_t)1)
#define DEBUG_UNTRUSTED ((uintptr_t)2)

/*
 * After the ELF image of a cached file. The image is not checksummed whole (glibc's is 10 to 25
 * MB, read on every run that needs its DWARF); its headers are, and every section must lie
 * within its length: a file emptied, cut short or written over by another is refused.
 */
struct trailer {
	char magic[8];
	uint64_t image; /* the ELF image's length: the trailer starts there */
	uint64_t sum; /* cachefile__checksum_bytewise of the ELF header, then the section headers */
	uint32_t bidlen, pad;
	unsigned char bid[64];
};

void debuginfo_cache__note_main(void **userdata, int fd)
{
	struct stat st;

	if (!fstat(fd, &st) && cachefile__trusted_source(&st))
		*userdata = (void *)((uintptr_t)*userdata | MAIN_TRUSTED);
}

bool debuginfo_cache__trusted(Dwfl_Module *mod)
{
	void **ud = NULL;
	uintptr_t v;

	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	v = ud ? (uintptr_t)*ud : 0;
	return (v & MAIN_TRUSTED) && !(v & DEBUG_UNTRUSTED);
}

static bool has_compressed_sections(int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	bool found = false;

	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		found = gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED);
	}
	elf_end(elf);
	return found;
}

/* The checksum of @fd's ELF header and section headers, each section checked to lie within
 * @image bytes. 0 or -EINVAL. */
static int header_sum(int fd, uint64_t image, uint64_t *sum)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	unsigned char *buf = NULL;
	size_t shnum, shsize;
	GElf_Ehdr eh;
	int err = -EINVAL;

	if (!elf || !gelf_getehdr(elf, &eh) || elf_getshdrnum(elf, &shnum))
		goto out;
	shsize = shnum * eh.e_shentsize;
	if (shsize > MAX_SHDRS || eh.e_ehsize > image || eh.e_shoff > image ||
	    shsize > image - eh.e_shoff)
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_NOBITS &&
		     (sh.sh_offset > image || sh.sh_size > image - sh.sh_offset)))
			goto out;
	}
	buf = malloc(eh.e_ehsize + shsize + 1);
	if (!buf || pread(fd, buf, eh.e_ehsize, 0) != eh.e_ehsize ||
	    pread(fd, buf + eh.e_ehsize, shsize, (off_t)eh.e_shoff) != (ssize_t)shsize)
		goto out;
	*sum = cachefile__checksum_bytewise(buf, eh.e_ehsize + shsize);
	err = 0;
out:
	free(buf);
	if (elf)
		elf_end(elf);
	return err;
}

/* The cached file @name for build-id @bid: a descriptor when it is ours and whole, else -errno. */
static int open_cached(const char *name, const unsigned char *bid, int bidlen)
{
	struct trailer t;
	struct stat st;
	uint64_t sum;
	int fd = cachefile__open(SUBDIR, name, SIZE_MAX, &st);

	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size < sizeof(t) ||
	    pread(fd, &t, sizeof(t), st.st_size - (off_t)sizeof(t)) != sizeof(t) ||
	    memcmp(t.magic, TRAILER_MAGIC, sizeof(t.magic)) ||
	    t.image != (uint64_t)st.st_size - sizeof(t) || t.bidlen != (uint32_t)bidlen ||
	    memcmp(t.bid, bid, (size_t)bidlen) || header_sum(fd, t.image, &sum) || sum != t.sum) {
		close(fd);
		return -EBADMSG;
	}
	return fd;
}

/* Copy @src to @fd (a new file) and inflate its compressed sections in place, with libelf. */
static int write_inflated(int src, int fd)
{
	struct stat st;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	off_t off = 0;
	int err = 0;

	if (fstat(src, &st))
		return -errno;
	while (off < st.st_size)
		if (sendfile(fd, src, &off, (size_t)(st.st_size - off)) <= 0)
			return -EIO;
	elf = elf_begin(fd, ELF_C_RDWR, NULL);
	if (!elf)
		return -EIO;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
		    elf_compress(scn, 0, 0) < 0) {
			err = -EIO;
			break;
		}
	}
	if (!err && elf_update(elf, ELF_C_WRITE) < 0)
		err = -EIO;
	elf_end(elf);
	return err;
}

/* Write the inflated copy of @src as @name, its trailer last, renamed into place whole. */
static void store(int src, const char *name, const unsigned char *bid, int bidlen)
{
	struct trailer t = { .bidlen = (uint32_t)bidlen };
	char tmp[NAME_MAX + 1];
	struct stat st;
	bool ok;
	int fd = cachefile__create(SUBDIR, name, tmp, sizeof(tmp));

	if (fd < 0)
		return;
	memcpy(t.magic, TRAILER_MAGIC, sizeof(t.magic));
	memcpy(t.bid, bid, (size_t)bidlen);
	ok = !write_inflated(src, fd) && !fstat(fd, &st);
	if (ok) {
		t.image = (uint64_t)st.st_size;
		ok = !header_sum(fd, t.image, &t.sum) &&
		     pwrite(fd, &t, sizeof(t), st.st_size) == sizeof(t);
	}
	if (close(fd))
		ok = false;
	cachefile__commit(SUBDIR, tmp, name, ok);
}

int debuginfo_cache__find(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	char name[2 * 64 + 8];
	const unsigned char *bits;
	struct stat st;
	GElf_Addr vaddr;
	int fd, src, len;

	len = dwfl_module_build_id(mod, &bits, &vaddr);
	if (len > 0 && len <= 64) {
		for (int i = 0; i < len; i++)
			snprintf(name + 2 * i, 3, "%02x", bits[i]);
		strcat(name, ".debug");
		/* Found before the standard search: that one keeps the file it opens. */
		fd = open_cached(name, bits, len);
		if (fd >= 0) {
			char dir[PATH_MAX];

			*debuginfo_file_name = NULL;
			if (!cachefile__root(dir, sizeof(dir)) &&
			    asprintf(debuginfo_file_name, "%s/" SUBDIR "/%s", dir, name) < 0)
				*debuginfo_file_name = NULL;
			return fd;
		}
	}
	fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					  debuglink_crc, debuginfo_file_name);
	if (fd >= 0 && (fstat(fd, &st) || !cachefile__trusted_source(&st)))
		*userdata = (void *)((uintptr_t)*userdata | DEBUG_UNTRUSTED);
	if (fd < 0 || len <= 0 || len > 64 || !*debuginfo_file_name || !cachefile__enabled() ||
	    cachefile__dir(SUBDIR, false) == -EPERM)
		return fd;
	/* Inflate a copy for the next run; this run goes on with the original. */
	src = open(*debuginfo_file_name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (src < 0)
		return fd;
	if (!fstat(src, &st) && S_ISREG(st.st_mode) && cachefile__trusted_source(&st) &&
	    has_compressed_sections(src))
		store(src, name, bits, len);
	close(src);
	return fd;
}
