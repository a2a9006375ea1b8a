// SPDX-License-Identifier: GPL-2.0
/*
 * What of a process's objects has been reported ("loaded" line and record): one load of one
 * object, known by its link map entry or by its file and base.
 */
#include <stdlib.h>

#include "watch_internal.h"

/*
 * One load of one object: its link map entry while it has one (a snapshot taken while the loader
 * is still mapping it knows neither its inode nor, sometimes, its base), else its file and base.
 */
bool reported__same_load(const struct announced *a, const struct lg_object *o)
{
	if (a->lm_addr || o->lm_addr)
		return a->lm_addr == o->lm_addr && a->ns == o->ns;
	return a->inode == o->inode && a->base == o->base;
}

bool reported__is(const struct proc_state *ps, const struct lg_object *o)
{
	for (size_t i = 0; i < ps->n_seen; i++)
		if (reported__same_load(&ps->seen[i], o))
			return true;
	return false;
}

void reported__mark(struct proc_state *ps, const struct lg_object *o)
{
	struct announced *n;

	if (reported__is(ps, o))
		return;
	n = realloc(ps->seen, (ps->n_seen + 1) * sizeof(*n));
	if (!n)
		return;
	ps->seen = n;
	ps->seen[ps->n_seen++] =
		(struct announced){ o->lm_addr, o->inode, o->base, o->ns, o->dlopened };
}

void reported__forget(struct proc_state *ps, const struct lg_object *o)
{
	for (size_t i = 0; i < ps->n_seen; i++)
		if (reported__same_load(&ps->seen[i], o)) {
			ps->seen[i] = ps->seen[--ps->n_seen];
			return;
		}
}
