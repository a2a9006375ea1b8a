// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pathmap.h"

/* Copied keys live in chunks of at least 64 KiB: one allocation per few thousand paths. */
struct pm_chunk {
	struct pm_chunk *next;
	size_t used, size;
	char data[];
};

/* Eight bytes at a time, mixed by multiplication: hashing 10 MB of dpkg lists takes a few ms. */
static uint32_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ len;

	for (; len >= 8; s += 8, len -= 8) {
		uint64_t w;

		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	if (len) {
		uint64_t w = 0;

		memcpy(&w, s, len);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	}
	h ^= h >> 29;
	return (uint32_t)h;
}

static const char *arena_copy(struct pathmap *m, const char *key, size_t len)
{
	struct pm_chunk *c = m->arena;

	if (!c || c->size - c->used < len + 1) {
		size_t size = len + 1 > 65536 ? len + 1 : 65536;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = size;
		c->next = m->arena;
		m->arena = c;
	}
	memcpy(c->data + c->used, key, len);
	c->data[c->used + len] = '\0';
	c->used += len + 1;
	return c->data + c->used - len - 1;
}

static struct pm_slot *find(const struct pathmap *m, const char *key, size_t len, uint32_t h)
{
	size_t mask = m->cap - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct pm_slot *s = &m->slots[i];

		if (!s->key || (s->hash == h && s->len == len && !memcmp(s->key, key, len)))
			return s;
	}
}

static int grow(struct pathmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 1024;
	struct pm_slot *old = m->slots, *ns = calloc(ncap, sizeof(*ns));
	size_t ocap = m->cap;

	if (!ns)
		return -ENOMEM;
	m->slots = ns;
	m->cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].key)
			*find(m, old[i].key, old[i].len, old[i].hash) = old[i];
	free(old);
	return 0;
}

int pathmap__put(struct pathmap *m, const char *key, size_t len, void *val, int copy)
{
	uint32_t h = hash_bytes(key, len);
	struct pm_slot *s;

	/* At most half full: probes stay short. */
	if ((m->n + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	s = find(m, key, len, h);
	if (s->key)
		return 0;
	if (copy && !(key = arena_copy(m, key, len)))
		return -ENOMEM;
	*s = (struct pm_slot){ .key = key, .len = (uint32_t)len, .hash = h, .val = val };
	m->n++;
	return 1;
}

void *pathmap__get(const struct pathmap *m, const char *key, size_t len)
{
	struct pm_slot *s;

	if (!m->cap)
		return NULL;
	s = find(m, key, len, hash_bytes(key, len));
	return s->key ? s->val : NULL;
}

uint32_t pathmap__hash(const char *key, size_t len)
{
	return hash_bytes(key, len);
}

void pathmap__free(struct pathmap *m)
{
	while (m->arena) {
		struct pm_chunk *next = m->arena->next;

		free(m->arena);
		m->arena = next;
	}
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
