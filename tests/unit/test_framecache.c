// SPDX-License-Identifier: GPL-2.0
/*
 * The frame cache: what one run keeps the next run reads back the same (inline flags, offsets,
 * lines, absent names); a name it cannot store is not kept; a damaged, truncated or foreign
 * file is ignored and rewritten whole.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachefile.h"
#include "framecache.h"
#include "tap.h"

static const unsigned char bid[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3 };
static char dir[] = "/tmp/dlscope-fc-XXXXXX";

static void write_file(const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/frames/deadbeef01020300000000000000000000000000", dir);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static bool same(const struct fc_frame *a, const struct fc_frame *b)
{
	return a->inlined == b->inlined && a->offset == b->offset && a->line == b->line &&
	       !a->function == !b->function && !a->file == !b->file &&
	       (!a->function || !strcmp(a->function, b->function)) &&
	       (!a->file || !strcmp(a->file, b->file));
}

int main(void)
{
	struct fc_frame two[2] = {
		{ .inlined = true, .function = "inner", .file = "a.h", .line = 7 },
		{ .function = "outer", .offset = 0x1e8, .file = "a.c", .line = 42 },
	};
	struct fc_frame nofile = { .function = "_start", .offset = 0x21 };
	struct fc_frame tab = { .function = "bad\tname", .file = "x.c", .line = 1 };
	const struct fc_frame *got;
	struct framecache *fc;
	size_t n;

	if (!mkdtemp(dir) || setenv("DLSCOPE_CACHE_DIR", dir, 1))
		return 1;
	cachefile__enable();
	fc = framecache__new();
	CHECK(!framecache__get(fc, bid, 20, 0x10, false, &n) && !n, "empty cache: no entry");
	CHECK(!framecache__put(fc, bid, 20, 0x10, false, two, 2), "put two frames");
	CHECK(!framecache__put(fc, bid, 20, 0x10, true, &nofile, 1), "put one without a file");
	CHECK(!framecache__put(fc, bid, 20, 0x20, false, &tab, 1), "a name with a tab: not kept");
	framecache__close(fc);

	fc = framecache__new();
	got = framecache__get(fc, bid, 20, 0x10, false, &n);
	CHECK(got && n == 2 && same(&got[0], &two[0]) && same(&got[1], &two[1]),
	      "the next run reads the inline chain back");
	got = framecache__get(fc, bid, 20, 0x10, true, &n);
	CHECK(got && n == 1 && same(got, &nofile),
	      "activation is part of the key; no file stays none");
	CHECK(!framecache__get(fc, bid, 20, 0x20, false, &n), "the tab name was not kept");
	CHECK(!framecache__get(fc, bid, 19, 0x10, false, &n), "another build-id has none");
	framecache__close(fc);

	const char *damaged[] = {
		"garbage\n",
		"dlscope frames 1 deadbeef01020300000000000000000000000000\nE 10 0 2\nF 0 0 1 1 1\tf\tg\n",
		"dlscope frames 1 deadbeef01020300000000000000000000000000\nE 10 0 1\nF 7 0 1 1 1\tf\tg\n",
		"dlscope frames 1 cafe\nE 10 0 1\nF 0 0 1 1 1\tf\tg\n",
		"dlscope frames 1 deadbeef01020300000000000000000000000000\nE 10 0 1\nF 0 0 1 1 1 f g\n",
	};
	for (size_t i = 0; i < sizeof(damaged) / sizeof(damaged[0]); i++) {
		char name[64];

		write_file(damaged[i]);
		fc = framecache__new();
		snprintf(name, sizeof(name), "damaged file %zu is ignored", i);
		CHECK(!framecache__get(fc, bid, 20, 0x10, false, &n) && !n, name);
		framecache__put(fc, bid, 20, 0x10, false, two, 2);
		framecache__close(fc);
		fc = framecache__new();
		got = framecache__get(fc, bid, 20, 0x10, false, &n);
		snprintf(name, sizeof(name), "damaged file %zu is rewritten whole", i);
		CHECK(got && n == 2 && same(&got[1], &two[1]), name);
		framecache__close(fc);
	}
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return tap_done();
}
