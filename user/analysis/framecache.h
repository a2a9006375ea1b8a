/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What each code address of an object names (function, inline chain, source lines), kept
 * across runs in the per-user cache (frames/<build-id>), keyed by the object's build-id and the
 * address in the file's terms (the pc less its load bias). Naming a pc from DWARF makes libdw read the header
 * of every compile unit before it (all of glibc's 2,000, about 20 ms) and allocate for each; a
 * stack of the same program taken again names its pcs from here without opening its DWARF.
 * Only names read from DWARF are kept (a debug package installed later is not hidden), and a
 * file that is unreadable, foreign or damaged is ignored and rewritten.
 */
#ifndef DLSCOPE_FRAMECACHE_H
#define DLSCOPE_FRAMECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One frame of a pc's names: the caller adds the pc and the module. */
struct fc_frame {
	bool inlined;
	char *function; /* NULL when unknown */
	uint64_t offset;
	char *file; /* NULL when unknown */
	int line;
};

struct framecache;

struct framecache *framecache__new(void);
/* The frames cached for (@bid, @off, @activation), innermost first, or NULL with *@n 0. */
const struct fc_frame *framecache__get(struct framecache *fc, const unsigned char *bid, int bidlen,
				       uint64_t off, bool activation, size_t *n);
/* Keep @n frames for the key (copied; not kept when a name has a tab or newline). */
int framecache__put(struct framecache *fc, const unsigned char *bid, int bidlen, uint64_t off,
		    bool activation, const struct fc_frame *f, size_t n);
/* Write the objects that gained entries (each file replaced whole, by rename), then free. */
void framecache__close(struct framecache *fc);

#endif
