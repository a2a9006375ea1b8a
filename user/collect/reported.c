// SPDX-License-Identifier: GPL-2.0
/*
 * What of a process's objects has been reported ("loaded" line and record): a mark on each
 * object of its model, carried from snapshot to snapshot to the same load of the same object
 * (known by its link map entry or by its file and base), as htop carries its process table.
 */

#include <string.h>

#include "watch_internal.h"

/*
 * One load of one object: its link map entry while it has one (a snapshot taken while the loader
 * is still mapping it knows neither its inode nor, sometimes, its base), else its file and base.
 */
bool reported__same_load(const struct lg_object *a, const struct lg_object *b)
{
	/* A link_map freed by a dlclose and reused by the next dlopen is another load, of
	 * another file: the path tells them apart (the same file again, only its hold does). */
	if (a->lm_addr || b->lm_addr)
		return a->lm_addr == b->lm_addr && a->ns == b->ns && !strcmp(a->path, b->path);
	return a->inode == b->inode && a->base == b->base;
}

/* Set (or clear) the mark of @o and of every object of @g that is the same load. */
static void set_mark(struct libgraph *g, const struct lg_object *o, bool on, uint64_t t)
{
	for (size_t i = 0; i < g->n; i++)
		if (reported__same_load(g->objs[i], o)) {
			g->objs[i]->reported = on;
			g->objs[i]->reported_at = t;
		}
}

void reported__mark(struct libgraph *g, const struct lg_object *o, uint64_t t)
{
	set_mark(g, o, true, t);
}

void reported__forget(struct libgraph *g, const struct lg_object *o)
{
	set_mark(g, o, false, 0);
}

/*
 * A new snapshot @g of a process whose last one was @old: each object of @g that is the same
 * load as a reported one of @old is reported too, and one that a dlopen seen earlier brought in
 * came by it, whatever the link map's order says.
 */
void reported__carry(const struct libgraph *old, struct libgraph *g)
{
	for (size_t k = 0; old && k < old->n; k++) {
		const struct lg_object *was = old->objs[k];

		for (size_t i = 0; was->reported && i < g->n; i++) {
			if (!reported__same_load(was, g->objs[i]))
				continue;
			g->objs[i]->reported = true;
			g->objs[i]->reported_at = was->reported_at;
			if (was->dlopened)
				libgraph__saw_dlopen(g->objs[i]);
		}
	}
}
