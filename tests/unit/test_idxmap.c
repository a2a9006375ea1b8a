// SPDX-License-Identifier: GPL-2.0
/*
 * The one hash map (user/base/idxmap.h): an empty map, many keys through many growths, hashes
 * that all collide (eq tells the keys apart), integer keys, reserve and clear, and the string and
 * integer hashes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idxmap.h"
#include "tap.h"

/* The caller's records: strings, looked up by a (string, array) context. */
struct str_ctx {
	char (*rec)[16];
	const char *key;
};

static bool str_eq(size_t idx, const void *ctx)
{
	const struct str_ctx *c = ctx;

	return !strcmp(c->rec[idx], c->key);
}

/* Integer records: the key is the record. */
static bool u64_eq(size_t idx, const void *ctx)
{
	const uint64_t *const *c = ctx;

	return c[0][idx] == *c[1];
}

#define U64_FIND(m, rec, k) \
	idxmap__find(m, idxmap__hash_u64(k), u64_eq, (const uint64_t *[]){ rec, &(k) })
#define U64_ADD(m, rec, k, i, at) \
	idxmap__insert(m, idxmap__hash_u64(k), i, u64_eq, (const uint64_t *[]){ rec, &(k) }, at)

static int eq_calls;

static bool counted_eq(size_t idx, const void *ctx)
{
	eq_calls++;
	return str_eq(idx, ctx);
}

/* Every hash the same: only eq tells the keys apart. */
#define COLLIDE 0x1234

static void test_empty(void)
{
	struct idxmap m = { 0 };
	char rec[1][16] = { "x" };
	struct str_ctx c = { rec, "x" };

	CHECK(idxmap__find(&m, 0, str_eq, &c) == IDXMAP_NONE, "empty: nothing found");
	CHECK(idxmap__find(&m, 42, counted_eq, &c) == IDXMAP_NONE && !eq_calls,
	      "empty: eq never asked");
	idxmap__clear(&m);
	CHECK(m.n == 0 && m.cap == 0, "empty: clear keeps it empty");
	idxmap__free(&m);
	idxmap__free(&m);
	CHECK(!m.slots && !m.cap && !m.n, "empty: freed twice");
}

static void test_many(void)
{
	enum { N = 100000 };
	char(*rec)[16] = calloc(N, sizeof(*rec));
	struct idxmap m = { 0 };
	size_t grown = 0, cap = 0, at = 0, wrong = 0, missing = 0, dup = 0;
	int ok = 1;

	for (size_t i = 0; rec && i < N && ok; i++) {
		struct str_ctx c = { rec, rec[i] };

		snprintf(rec[i], sizeof(rec[i]), "key-%zu", i);
		ok = idxmap__insert(&m, idxmap__hash_bytes(rec[i], strlen(rec[i])), i, str_eq, &c,
				    &at) == 1 &&
		     at == i;
		grown += m.cap != cap;
		cap = m.cap;
		ok = ok && m.n * 2 <= m.cap;
	}
	CHECK(rec && ok, "many: 100000 keys added, never over half full");
	CHECK(m.n == N && grown > 5 && !(m.cap & (m.cap - 1)), "many: grew, power of two");
	for (size_t i = 0; rec && i < N; i++) {
		struct str_ctx c = { rec, rec[i] };
		size_t got =
			idxmap__find(&m, idxmap__hash_bytes(rec[i], strlen(rec[i])), str_eq, &c);

		wrong += got != i;
		/* Again: found, not added. */
		dup += idxmap__insert(&m, idxmap__hash_bytes(rec[i], strlen(rec[i])), N + i, str_eq,
				      &c, &at) != 0 ||
		       at != i;
	}
	CHECK(!wrong, "many: each found at its index");
	CHECK(!dup && m.n == N, "many: a key added again is found, the map unchanged");
	for (size_t i = 0; rec && i < 1000; i++) {
		char key[16];
		struct str_ctx c = { rec, key };

		snprintf(key, sizeof(key), "nokey-%zu", i);
		missing += idxmap__find(&m, idxmap__hash_bytes(key, strlen(key)), str_eq, &c) ==
			   IDXMAP_NONE;
	}
	CHECK(missing == 1000, "many: keys never added are not found");
	idxmap__free(&m);
	free(rec);
}

static void test_collide(void)
{
	enum { N = 300 };
	char rec[N][16];
	struct idxmap m = { 0 };
	size_t wrong = 0, at;
	int ok = 1;

	for (size_t i = 0; i < N && ok; i++) {
		struct str_ctx c = { rec, rec[i] };

		snprintf(rec[i], sizeof(rec[i]), "c%zu", i);
		ok = idxmap__insert(&m, COLLIDE, i, str_eq, &c, &at) == 1 && at == i;
	}
	CHECK(ok && m.n == N, "collide: 300 keys of one hash added");
	for (size_t i = 0; i < N; i++) {
		struct str_ctx c = { rec, rec[i] };

		wrong += idxmap__find(&m, COLLIDE, str_eq, &c) != i;
	}
	CHECK(!wrong, "collide: each found by eq");
	{
		struct str_ctx c = { rec, "absent" };

		eq_calls = 0;
		CHECK(idxmap__find(&m, COLLIDE, counted_eq, &c) == IDXMAP_NONE && eq_calls == N,
		      "collide: an absent key is asked of each, then not found");
		eq_calls = 0;
		CHECK(idxmap__find(&m, COLLIDE + 1, counted_eq, &c) == IDXMAP_NONE && eq_calls == 0,
		      "collide: another hash asks eq nothing");
	}
	/* Low bits alike, high bits not: one first slot, told apart by the hash kept. */
	{
		struct idxmap h = { 0 };
		uint64_t keys[200];
		size_t bad = 0;

		for (uint64_t i = 0; i < 200; i++) {
			struct str_ctx c = { rec, "c0" };

			keys[i] = i;
			eq_calls = 0;
			bad += idxmap__insert(&h, i << 20, (size_t)i, counted_eq, &c, NULL) != 1 ||
			       eq_calls;
		}
		for (uint64_t i = 0; i < 200; i++) {
			struct str_ctx c = { rec, "c0" };

			bad += idxmap__find(&h, i << 20, counted_eq, &c) != (i ? IDXMAP_NONE : 0);
		}
		CHECK(!bad && keys[199] == 199,
		      "collide: one first slot, other hashes never asked");
		idxmap__free(&h);
	}
	idxmap__free(&m);
}

static void test_u64(void)
{
	enum { N = 5000 };
	static uint64_t rec[N + 1];
	struct idxmap m = { 0 };
	size_t bad = 0, at = 0;

	for (size_t i = 0; i < N; i++) {
		rec[i] = (uint64_t)(i + 1) * 4096; /* aligned addresses: the low bits alike */
		bad += U64_ADD(&m, rec, rec[i], i, NULL) != 1;
	}
	rec[N] = 4096;
	bad += U64_ADD(&m, rec, rec[N], N, &at) != 0 || at != 0;
	for (size_t i = 0; i < N; i++)
		bad += U64_FIND(&m, rec, rec[i]) != i;
	{
		uint64_t none = 4096ull * (N + 1);

		bad += U64_FIND(&m, rec, none) != IDXMAP_NONE;
	}
	CHECK(!bad && m.n == N, "u64: aligned keys added, found, added again");
	idxmap__free(&m);
}

static void test_reserve_clear(void)
{
	static uint64_t rec[1000];
	struct idxmap m = { 0 };
	size_t cap, bad = 0;
	uint64_t five = 5;

	CHECK(!idxmap__reserve(&m, 1000) && m.cap >= 2000 && !(m.cap & (m.cap - 1)),
	      "reserve: room for 1000 at half full");
	cap = m.cap;
	for (size_t i = 0; i < 1000; i++) {
		rec[i] = i;
		bad += U64_ADD(&m, rec, rec[i], i, NULL) != 1;
	}
	CHECK(!bad && m.cap == cap, "reserve: 1000 added without growing");
	CHECK(!idxmap__reserve(&m, 10) && m.cap == cap, "reserve: less asked keeps the room");
	idxmap__clear(&m);
	CHECK(m.n == 0 && m.cap == cap && U64_FIND(&m, rec, five) == IDXMAP_NONE,
	      "clear: nothing found, the room kept");
	CHECK(U64_ADD(&m, rec, five, 5, NULL) == 1 && U64_FIND(&m, rec, five) == 5,
	      "clear: filled again");
	idxmap__free(&m);
}

static void test_hashes(void)
{
	/* pathmap's hash, kept: dpkg list Bloom filters learnt from it (its low 32 bits). */
	CHECK((uint32_t)idxmap__hash_bytes("", 0) ==
		      (uint32_t)(0x9e3779b97f4a7c15ull ^ (0x9e3779b97f4a7c15ull >> 29)),
	      "hash_bytes: the empty string");
	CHECK(idxmap__hash_bytes("/usr/lib", 8) != idxmap__hash_bytes("/usr/lib/", 9) &&
		      idxmap__hash_bytes("abcdefgh1", 9) != idxmap__hash_bytes("abcdefgh2", 9) &&
		      idxmap__hash_bytes("a\0", 2) != idxmap__hash_bytes("a", 1),
	      "hash_bytes: tails and lengths count");
	CHECK(idxmap__hash_u64(1) != idxmap__hash_u64(2) &&
		      (idxmap__hash_u64(1) & 1023) != (idxmap__hash_u64(1025) & 1023),
	      "hash_u64: low bits mixed");
}

int main(void)
{
	test_empty();
	test_many();
	test_collide();
	test_u64();
	test_reserve_clear();
	test_hashes();
	return tap_done();
}
