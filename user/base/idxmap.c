// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "idxmap.h"

/* The room of a map's first slots: a few records cost a small allocation. */
#define IDXMAP_FIRST 64

/* Every record of @old (@ocap slots) into @m's empty slots, by the hashes kept. */
static void rehash(struct idxmap *m, const struct idxmap_slot *old, size_t ocap)
{
	size_t mask = m->cap - 1;

	for (size_t k = 0; k < ocap; k++) {
		size_t i = old[k].hash & mask;

		if (!old[k].idx)
			continue;
		while (m->slots[i].idx)
			i = (i + 1) & mask;
		m->slots[i] = old[k];
	}
}

/* @m with @ncap slots (a power of two, at least twice its records, at most 2^32): 0 or -ENOMEM. */
static int resize(struct idxmap *m, size_t ncap)
{
	struct idxmap_slot *old = m->slots, *ns;
	size_t ocap = m->cap;

	if (ncap - 1 > UINT32_MAX || !(ns = calloc(ncap, sizeof(*ns))))
		return -ENOMEM;
	m->slots = ns;
	m->cap = ncap;
	rehash(m, old, ocap);
	free(old);
	return 0;
}

int idxmap__grow_(struct idxmap *m)
{
	return resize(m, m->cap ? m->cap * 2 : IDXMAP_FIRST);
}

int idxmap__reserve(struct idxmap *m, size_t n)
{
	size_t ncap = m->cap ? m->cap : IDXMAP_FIRST;

	if (n >= UINT32_MAX / 2)
		return -ENOMEM;
	while (n * 2 > ncap)
		ncap *= 2;
	return ncap == m->cap ? 0 : resize(m, ncap);
}

void idxmap__clear(struct idxmap *m)
{
	if (m->cap)
		memset(m->slots, 0, m->cap * sizeof(*m->slots));
	m->n = 0;
}

void idxmap__free(struct idxmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
