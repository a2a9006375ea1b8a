// SPDX-License-Identifier: GPL-2.0
/* The one address-to-object lookup: mappings tied to objects by file and base, binary search. */
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "libgraph.h"
#include "procmaps.h"
#include "tap.h"

static const char maps_text[] =
	"555555554000-555555555000 r--p 00000000 08:01 100 /usr/bin/prog\n"
	"555555555000-555555556000 r-xp 00001000 08:01 100 /usr/bin/prog\n"
	"7ffff7a00000-7ffff7a10000 r-xp 00000000 08:01 200 /usr/lib/liba.so\n"
	"7ffff7a10000-7ffff7a20000 rw-p 00000000 00:00 0 \n"
	"7ffff7b00000-7ffff7b10000 r-xp 00000000 08:01 200 /usr/lib/liba.so\n"
	"7ffff7fc0000-7ffff7fc2000 r-xp 00000000 00:00 0 [vdso]\n"
	"7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n";

int main(void)
{
	/* liba.so mapped twice (dlmopen): each mapping belongs to the copy loaded below it. */
	struct lg_object objs[] = {
		{ .id = 0, .base = 0x555555554000, .inode = 100, .origin = LG_EXECUTABLE },
		{ .id = 1, .base = 0x7ffff7a00000, .inode = 200 },
		{ .id = 2, .base = 0x7ffff7b00000, .inode = 200 },
		{ .id = 3, .base = 0x7ffff7fc0000, .origin = LG_VDSO },
		{ .id = 4, .base = 0x7ffff7a00000, .inode = 200, .gone = true },
	};
	struct lg_object *ptrs[] = { &objs[0], &objs[1], &objs[2], &objs[3], &objs[4] };
	struct libgraph g = { .objs = ptrs, .n = 5 };
	struct procmaps *maps = procmaps__parse(maps_text);
	struct addrmap *am = maps ? addrmap__build(maps, &g) : NULL;
	const struct addr_range *r;

	CHECK(am && am->n == 7, "every mapping is in the map");
	if (!am)
		return tap_done();
	r = addrmap__find(am, 0x555555555123);
	CHECK(r && r->obj == &objs[0] && r->mp->perms[2] == 'x', "the executable's code");
	r = addrmap__find(am, 0x7ffff7a00010);
	CHECK(r && r->obj == &objs[1], "the first copy of liba, not the gone one");
	r = addrmap__find(am, 0x7ffff7b0fff8);
	CHECK(r && r->obj == &objs[2], "the second copy of liba: nearest base below");
	r = addrmap__find(am, 0x7ffff7a10000);
	CHECK(r && !r->obj, "an anonymous mapping has no object");
	r = addrmap__find(am, 0x7ffff7fc1000);
	CHECK(r && r->obj == &objs[3], "the vDSO");
	r = addrmap__find(am, 0x7ffffffff000);
	CHECK(!r, "the end of the last mapping is outside it");
	CHECK(!addrmap__find(am, 0x1000), "below every mapping");
	CHECK(!addrmap__find(am, 0x7ffff7a20000), "a hole between mappings");
	addrmap__free(am);
	procmaps__free(maps);
	return tap_done();
}
