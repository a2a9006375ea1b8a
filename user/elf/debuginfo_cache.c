// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debuginfo_cache.h"

int debuginfo_cache__dir(const char *sub, char *buf, size_t len)
{
	const char *dir = getenv("DLSCOPE_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");

	int n;

	/* Absolute paths only: a relative one would follow the working directory (and XDG's
	 * rules call a relative XDG_CACHE_HOME invalid). */
	if (dir && dir[0] == '/')
		n = snprintf(buf, len, "%s/%s", dir, sub);
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/dlscope/%s", xdg, sub);
	else if (home && home[0] == '/')
		n = snprintf(buf, len, "%s/.cache/dlscope/%s", home, sub);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int cache_dir(char *buf, size_t len)
{
	return debuginfo_cache__dir("debuginfo", buf, len);
}

int debuginfo_cache__mkdir(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return mkdir(path, 0700) && errno != EEXIST ? -errno : 0;
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

/* Copy @src to @dst (a new file) and inflate its compressed sections in place, with libelf. */
static int write_inflated(int src, const char *dst)
{
	struct stat st;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	off_t off = 0;
	int fd, err = 0;

	if (fstat(src, &st))
		return -errno;
	fd = open(dst, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (off < st.st_size)
		if (sendfile(fd, src, &off, (size_t)(st.st_size - off)) <= 0) {
			err = -EIO;
			goto out;
		}
	elf = elf_begin(fd, ELF_C_RDWR, NULL);
	if (!elf) {
		err = -EIO;
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
		    elf_compress(scn, 0, 0) < 0) {
			err = -EIO;
			goto out;
		}
	}
	if (elf_update(elf, ELF_C_WRITE) < 0)
		err = -EIO;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (err)
		unlink(dst);
	return err;
}

int debuginfo_cache__find(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	char dir[PATH_MAX], path[PATH_MAX + 160], tmp[PATH_MAX + 200];
	const unsigned char *bits;
	GElf_Addr vaddr;
	int fd, src, len;

	len = dwfl_module_build_id(mod, &bits, &vaddr);
	if (len > 0 && len <= 64 && !cache_dir(dir, sizeof(dir))) {
		snprintf(path, sizeof(path), "%s/", dir);
		for (int i = 0; i < len; i++)
			snprintf(path + strlen(path), 3, "%02x", bits[i]);
		strcat(path, ".debug");
		/* Found before the standard search: that one keeps the file it opens. */
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			*debuginfo_file_name = strdup(path);
			return fd;
		}
	}
	fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					  debuglink_crc, debuginfo_file_name);
	if (fd < 0 || len <= 0 || len > 64 || !*debuginfo_file_name || cache_dir(dir, sizeof(dir)))
		return fd;
	/* Inflate a copy for the next run; this run goes on with the original. */
	src = open(*debuginfo_file_name, O_RDONLY | O_CLOEXEC);
	if (src < 0)
		return fd;
	if (has_compressed_sections(src) && !debuginfo_cache__mkdir(dir)) {
		/* Written under a temporary name and renamed: concurrent runs never see half. */
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, getpid());
		if (write_inflated(src, tmp) || rename(tmp, path))
			unlink(tmp);
	}
	close(src);
	return fd;
}
