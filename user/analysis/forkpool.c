// SPDX-License-Identifier: GPL-2.0
/* GNU libgomp's pool threads in a process (forkpool.h). */
#include <errno.h>
#include <stdio.h>

#include "addrmap.h"
#include "forkpool.h"
#include "libgraph.h"
#include "procmaps.h"
#include "roles.h"
#include "runtimes.h"
#include "target.h"
#include "threadscan.h"

static const struct lg_object *gomp_of(const struct libgraph *g)
{
	for (size_t i = 0; g && i < g->n; i++) {
		const struct obj_role *r =
			obj_roles__find(lg_object__roles(g->objs[i]), ROLE_OPENMP);

		if (r && r->impl == IMPL_GNU_LIBGOMP && !g->objs[i]->gone &&
		    !runtimes__is_front(g, g->objs[i]->id, ROLE_OPENMP))
			return g->objs[i];
	}
	return NULL;
}

bool forkpool__has_gomp(const struct libgraph *g, char *path, size_t len)
{
	const struct lg_object *o = gomp_of(g);

	if (o && path)
		snprintf(path, len, "%s", o->path);
	return o != NULL;
}

int forkpool__gomp_threads(pid_t pid, struct elf_cache *cache, char *path, size_t len)
{
	struct runtime_list rl = { 0 };
	struct threadscan *ts = NULL;
	struct libgraph *g = NULL;
	struct addrmap *am = NULL;
	struct procmaps *maps;
	const struct lg_object *o;
	struct target *t;
	char why[256];
	int n = 0;

	if (target__open(pid, &t, why, sizeof(why)))
		return -ESRCH;
	maps = procmaps__read(pid);
	if (!maps || libgraph__snapshot_maps(t, maps, cache, &g, why, sizeof(why))) {
		n = -ESRCH;
		goto out;
	}
	o = gomp_of(g);
	if (!o)
		goto out;
	snprintf(path, len, "%s", o->path);
	am = addrmap__build(maps, g);
	if (!am || threadscan__scan(t, g, am, &ts) || runtimes__collect(g, t, ts, &rl)) {
		n = -ESRCH;
		goto out;
	}
	for (size_t i = 0; i < rl.n; i++)
		if (rl.r[i].obj == o->id && rl.r[i].role.kind == ROLE_OPENMP &&
		    rl.r[i].pool_threads > 0)
			n = rl.r[i].pool_threads;
out:
	runtimes__free(&rl);
	threadscan__free(ts);
	addrmap__free(am);
	libgraph__free(g);
	procmaps__free(maps);
	target__free(t);
	return n;
}
