// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "pathmap.h"

/* Copied keys live in chunks of at least 64 KiB: one allocation per few thousand paths. */
struct pm_chunk {
	struct pm_chunk *next;
	size_t used, size;
	char data[];
};

/* Room for a copy of a key of @len bytes in the arena: 0 or -ENOMEM. */
static int arena_room(struct pathmap *m, size_t len)
{
	struct pm_chunk *c = m->arena;

	if (!c || c->size - c->used < len + 1) {
		size_t size = len + 1 > 65536 ? len + 1 : 65536;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return -ENOMEM;
		c->used = 0;
		c->size = size;
		c->next = m->arena;
		m->arena = c;
	}
	return 0;
}

/* A copy of @key in the room arena_room() made. */
static const char *arena_copy(struct pathmap *m, const char *key, size_t len)
{
	struct pm_chunk *c = m->arena;

	memcpy(c->data + c->used, key, len);
	c->data[c->used + len] = '\0';
	c->used += len + 1;
	return c->data + c->used - len - 1;
}

struct pm_key {
	const struct pm_entry *e;
	const char *key;
	size_t len;
};

static bool entry_is(size_t idx, const void *ctx)
{
	const struct pm_key *k = ctx;

	return k->e[idx].len == k->len && !memcmp(k->e[idx].key, k->key, k->len);
}

int pathmap__put(struct pathmap *m, const char *key, size_t len, void *val, int copy)
{
	struct pm_key k = { NULL, key, len };
	int added;

	/* Room first: once indexed, the entry is there. */
	if (ARRAY_RESERVE(m->e, m->cap, m->n + 1) || (copy && arena_room(m, len)))
		return -ENOMEM;
	k.e = m->e;
	added = idxmap__insert(&m->index, idxmap__hash_bytes(key, len), m->n, entry_is, &k, NULL);
	if (added <= 0)
		return added;
	m->e[m->n++] =
		(struct pm_entry){ copy ? arena_copy(m, key, len) : key, (uint32_t)len, val };
	return 1;
}

void *pathmap__get(const struct pathmap *m, const char *key, size_t len)
{
	struct pm_key k = { m->e, key, len };
	size_t at = idxmap__find(&m->index, idxmap__hash_bytes(key, len), entry_is, &k);

	return at == IDXMAP_NONE ? NULL : m->e[at].val;
}

uint32_t pathmap__hash(const char *key, size_t len)
{
	return (uint32_t)idxmap__hash_bytes(key, len);
}

void pathmap__free(struct pathmap *m)
{
	while (m->arena) {
		struct pm_chunk *next = m->arena->next;

		free(m->arena);
		m->arena = next;
	}
	free(m->e);
	idxmap__free(&m->index);
	memset(m, 0, sizeof(*m));
}
