/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DLSCOPE_IDXMAP_H
#define DLSCOPE_IDXMAP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * The one hash map (issue 38): an index from a 64-bit hash to the records of the caller's own
 * array (a record's index), by open addressing: linear probing, a power-of-two capacity, at most
 * half full. The caller keeps the records and says when two keys are equal (eq, on an index);
 * the map keeps 32 bits of each record's hash (its slot is 8 bytes), so it grows without asking
 * for keys again and compares hashes before keys. At most 2^32 - 1 records. No deletion: a map
 * is filled, read, then cleared or freed whole.
 *
 * A zeroed struct idxmap is an empty map.
 */

struct idxmap_slot {
	uint32_t hash; /* the low 32 bits: a capacity is at most 2^32 */
	uint32_t idx;  /* the record's index + 1; 0: empty */
};

struct idxmap {
	struct idxmap_slot *slots;
	size_t cap, n; /* cap: a power of two, or 0 */
};

/* Not found (idxmap__find). */
#define IDXMAP_NONE SIZE_MAX

/* Is the record at @idx the key @ctx stands for? The caller's: @ctx holds its array and key. */
typedef bool (*idxmap_eq_fn)(size_t idx, const void *ctx);

/* Room for @n records without growing: 0 or -ENOMEM (the map as it was). */
int idxmap__reserve(struct idxmap *m, size_t n);
/* Forget every record; the room stays. */
void idxmap__clear(struct idxmap *m);
void idxmap__free(struct idxmap *m);

/* The string hash: eight bytes at a time, mixed by multiplication (10 MB of paths in a few ms). */
static inline uint64_t idxmap__hash_bytes(const void *p, size_t len)
{
	const unsigned char *s = p;
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
	return h;
}
/* A 64-bit key mixed (murmur3's finalizer): every bit of the key in the low bits. */
static inline uint64_t idxmap__hash_u64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/* The slot of the record of @hash that @eq says is @ctx's key, or the empty slot it would go to. */
static inline struct idxmap_slot *idxmap__slot_(const struct idxmap *m, uint64_t hash,
						idxmap_eq_fn eq, const void *ctx)
{
	size_t mask = m->cap - 1;

	for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
		struct idxmap_slot *s = &m->slots[i];

		if (!s->idx || (s->hash == (uint32_t)hash && eq(s->idx - 1, ctx)))
			return s;
	}
}

/* The index of the record of @hash and key @ctx (by @eq), or IDXMAP_NONE. */
static inline size_t idxmap__find(const struct idxmap *m, uint64_t hash, idxmap_eq_fn eq,
				  const void *ctx)
{
	const struct idxmap_slot *s = m->cap ? idxmap__slot_(m, hash, eq, ctx) : NULL;

	return s && s->idx ? s->idx - 1 : IDXMAP_NONE;
}

int idxmap__grow_(struct idxmap *m);

/*
 * Index record @idx under @hash unless a record of the same key (@eq, @ctx) is there: 1 when
 * added, 0 when there (its index in *@at, @idx when added; @at may be NULL), -ENOMEM with the
 * map as it was. The caller adds the record at @idx when 1 (eq is never asked about @idx).
 */
static inline int idxmap__insert(struct idxmap *m, uint64_t hash, size_t idx, idxmap_eq_fn eq,
				 const void *ctx, size_t *at)
{
	struct idxmap_slot *s;

	if (idx >= UINT32_MAX || ((m->n + 1) * 2 > m->cap && idxmap__grow_(m)))
		return -ENOMEM;
	s = idxmap__slot_(m, hash, eq, ctx);
	if (s->idx) {
		if (at)
			*at = s->idx - 1;
		return 0;
	}
	s->hash = (uint32_t)hash;
	s->idx = (uint32_t)idx + 1;
	m->n++;
	if (at)
		*at = idx;
	return 1;
}

#endif
