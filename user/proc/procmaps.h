/* SPDX-License-Identifier: GPL-2.0 */
/* The mappings of /proc/PID/maps: the kernel's view of what a process has mapped. */
#ifndef DLSCOPE_PROCMAPS_H
#define DLSCOPE_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mapping {
	uint64_t start, end, offset;
	uint64_t inode;
	unsigned int dev_major, dev_minor;
	char perms[5];
	bool deleted; /* the file was unlinked or replaced after it was mapped */
	char *path;   /* NULL for anonymous mappings; "[vdso]" etc. for special ones */
};

struct procmaps {
	struct mapping *maps;
	size_t n;
};

/* Read /proc/PID/maps. Returns NULL and sets errno on failure. */
struct procmaps *procmaps__read(pid_t pid);
struct corefile;
/*
 * The mappings of the process a core file holds: its PT_LOAD segments (permissions from their
 * flags), named by its NT_FILE note (file offset too), [vdso] at AT_SYSINFO_EHDR; a file's
 * inode is the one of the file at that path here (a stand-in, one per path, when it is gone).
 * NULL with errno on failure.
 */
struct procmaps *procmaps__from_core(const struct corefile *c);
/* Parse maps text (exposed for unit tests). */
struct procmaps *procmaps__parse(const char *text);
void procmaps__free(struct procmaps *m);
/* The mapping containing @addr, or NULL. Mappings are sorted, so this is a binary search. */
const struct mapping *procmaps__find(const struct procmaps *m, uint64_t addr);
/* True when the mapping is backed by a regular file (not anonymous, not [special]). */
bool mapping__is_file(const struct mapping *mp);

#endif
