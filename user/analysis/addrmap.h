/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which loaded object an address of a process belongs to: every mapping of /proc/PID/maps tied
 * to its libgraph object once, sorted, looked up by binary search. The one address-to-object
 * lookup of the thread scan, the lock-wait analysis and whoever else holds an inspection.
 */
#ifndef DLSCOPE_ADDRMAP_H
#define DLSCOPE_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

struct procmaps;
struct mapping;
struct libgraph;
struct lg_object;

struct addr_range {
	const struct mapping *mp;    /* one mapping of the process, [mp->start, mp->end) */
	const struct lg_object *obj; /* the object mapped there, NULL for none */
};

struct addrmap {
	const struct procmaps *maps;
	struct addr_range *r; /* r[i] is maps->maps[i]'s */
	size_t n;
};

/*
 * Tie each mapping of @maps to the object of @g with the same file (inode; the vDSO for
 * [vdso]) and the nearest base at or below it. @maps and @g must outlive the map. NULL on ENOMEM.
 */
struct addrmap *addrmap__build(const struct procmaps *maps, const struct libgraph *g);
void addrmap__free(struct addrmap *am);
/* The range holding @addr, or NULL when nothing is mapped there. */
const struct addr_range *addrmap__find(const struct addrmap *am, uint64_t addr);

#endif
