// SPDX-License-Identifier: GPL-2.0
/*
 * The persistent ELF cache's file image: what is written reads back the same, and any flaw at
 * all (a flipped byte anywhere, a short or long file, another build's file) reads as nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objcache.h"
#include "tap.h"

static struct objcache_rec *sample(unsigned i)
{
	static char *needed[] = { "libm.so.6", "libc.so.6" }, *verdefs[] = { "GOMP_1.0" };
	static const unsigned char blob[] = { 1, 2, 0, 4 };
	struct objcache_rec r = {
		.key = { 64769, 1000 + i, 16384 + i, 1700000000123456789ll + i },
		.build_id = "0123456789abcdef",
		.bid_off = 0x2a8,
		.type = 3,
		.symbolic = i & 1,
		.soname = i & 2 ? NULL : "libgen.so",
		.interp = i & 4 ? "/lib64/ld-linux-x86-64.so.2" : NULL,
		.needed = needed,
		.n_needed = i % 3,
		.verdefs = verdefs,
		.n_verdefs = i & 1,
		.blob = (void *)blob,
		.blob_len = i % 5,
	};
	struct objcache_rec *c = malloc(sizeof(*c));

	*c = r;
	return c;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool same(const struct objcache_rec *a, const struct objcache_rec *b)
{
	if (memcmp(&a->key, &b->key, sizeof(a->key)) || strcmp(a->build_id, b->build_id) ||
	    a->bid_off != b->bid_off || a->type != b->type || a->symbolic != b->symbolic ||
	    !same_str(a->soname, b->soname) || !same_str(a->interp, b->interp) ||
	    a->n_needed != b->n_needed || a->n_verdefs != b->n_verdefs ||
	    a->blob_len != b->blob_len || (a->blob_len && memcmp(a->blob, b->blob, a->blob_len)))
		return false;
	for (size_t i = 0; i < a->n_needed; i++)
		if (strcmp(a->needed[i], b->needed[i]))
			return false;
	for (size_t i = 0; i < a->n_verdefs; i++)
		if (strcmp(a->verdefs[i], b->verdefs[i]))
			return false;
	return true;
}

static void free_all(struct objcache_rec **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		objcache_rec__free(v[i]);
	free(v);
}

int main(void)
{
	enum { N = 8 };
	struct objcache_rec *in[N], **out = NULL;
	size_t len, n = 0, accepted = 0;
	unsigned char *img;
	bool all_same = true;

	for (unsigned i = 0; i < N; i++)
		in[i] = sample(i);
	CHECK(!objcache__encode(in, N, (void **)&img, &len) && len > 88, "records encoded");

	CHECK(!objcache__decode(img, len, &out, &n) && n == N, "all records read back");
	for (size_t i = 0; i < n && i < N; i++)
		all_same &= same(in[i], out[i]);
	CHECK(all_same, "every field of every record read back as written");
	free_all(out, n);

	/* Every byte flipped, one at a time: the header's checks or the checksum refuse it. */
	for (size_t at = 0; at < len; at++) {
		img[at] ^= 0x5a;
		if (!objcache__decode(img, len, &out, &n)) {
			accepted++;
			free_all(out, n);
		}
		img[at] ^= 0x5a;
	}
	printf("# %zu of %zu single-byte corruptions accepted\n", accepted, len);
	CHECK(accepted == 0, "no single-byte corruption is accepted");

	/* Every shorter length, and a longer file. */
	accepted = 0;
	for (size_t l = 0; l < len; l++)
		if (!objcache__decode(img, l, &out, &n)) {
			accepted++;
			free_all(out, n);
		}
	{
		unsigned char *longer = calloc(1, len + 8);

		memcpy(longer, img, len);
		if (!objcache__decode(longer, len + 8, &out, &n)) {
			accepted++;
			free_all(out, n);
		}
		free(longer);
	}
	CHECK(accepted == 0, "no truncated or extended image is accepted");
	free(img);

	/* Bounded: no more than 4096 records are written, however many there are. */
	{
		enum { MANY = 5000 };
		struct objcache_rec **many = malloc(MANY * sizeof(*many));

		for (unsigned i = 0; i < MANY; i++)
			many[i] = in[i % N];
		n = 0;
		if (!objcache__encode(many, MANY, (void **)&img, &len) &&
		    !objcache__decode(img, len, &out, &n))
			free_all(out, n);
		CHECK(n == 4096, "5000 records are written as 4096");
		free(img);
		free(many);
	}
	for (unsigned i = 0; i < N; i++)
		free(in[i]);
	return tap_done();
}
