// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "libgraph.h"
#include "procmaps.h"

/* The object a mapping belongs to: same file, nearest load base at or below its start. */
static const struct lg_object *object_of(const struct mapping *mp, const struct libgraph *g)
{
	bool vdso = mp->path && !strcmp(mp->path, "[vdso]");
	const struct lg_object *best = NULL;

	if (!mapping__is_file(mp) && !vdso)
		return NULL;
	for (size_t k = 0; k < g->n; k++) {
		const struct lg_object *o = g->objs[k];

		if (o->gone)
			continue;
		if (vdso ? o->origin != LG_VDSO : o->inode != mp->inode)
			continue;
		if (o->base <= mp->start && (!best || o->base > best->base))
			best = o;
	}
	return best;
}

struct addrmap *addrmap__build(const struct procmaps *maps, const struct libgraph *g)
{
	struct addrmap *am = calloc(1, sizeof(*am));

	if (!am)
		return NULL;
	am->maps = maps;
	am->r = calloc(maps->n ? maps->n : 1, sizeof(*am->r));
	if (!am->r) {
		free(am);
		return NULL;
	}
	/* /proc/PID/maps lists mappings in address order: the array is sorted as built. */
	for (size_t i = 0; i < maps->n; i++)
		am->r[am->n++] =
			(struct addr_range){ &maps->maps[i], object_of(&maps->maps[i], g) };
	return am;
}

void addrmap__free(struct addrmap *am)
{
	if (!am)
		return;
	free(am->r);
	free(am);
}

const struct addr_range *addrmap__find(const struct addrmap *am, uint64_t addr)
{
	/* One range per mapping, in the mappings' order: the mapping's index is the range's. */
	const struct mapping *mp = procmaps__find(am->maps, addr);

	return mp ? &am->r[mp - am->maps->maps] : NULL;
}
