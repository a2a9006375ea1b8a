// SPDX-License-Identifier: GPL-2.0
/*
 * The link-map walk on memory images laid out as glibc lays them out, good and corrupt; and
 * the read again of this very process around a dlopen and a dlclose.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdint.h>
#include <string.h>

#include "linkmap.h"
#include "tap.h"
#include "target.h"

#define BASE 0x10000ULL

static unsigned char mem[8192];

/* A namespace's r_debug_extended at @rd, its entries from @lm on, names from @names on. */
static void lay_out(size_t rd, size_t lm, size_t names, const char *const *objs, size_t n,
		    size_t next_rd, bool loop)
{
	struct r_debug_extended r = { 0 };

	for (size_t i = 0; i < n; i++) {
		struct link_map l = { 0 };
		size_t at = lm + i * sizeof(l);

		strcpy((char *)mem + names, objs[i]);
		l.l_addr = 0x7f0000000000 + i * 0x100000;
		l.l_name = (char *)(uintptr_t)(BASE + names);
		l.l_next = i + 1 < n ? (struct link_map *)(uintptr_t)(BASE + at + sizeof(l)) :
			   loop	     ? (struct link_map *)(uintptr_t)(BASE + lm) :
				       NULL;
		l.l_prev = i ? (struct link_map *)(uintptr_t)(BASE + at - sizeof(l)) : NULL;
		memcpy(mem + at, &l, sizeof(l));
		names += strlen(objs[i]) + 1;
	}
	r.base.r_version = 2;
	r.base.r_map = (struct link_map *)(uintptr_t)(BASE + lm);
	r.base.r_state = RT_CONSISTENT;
	r.r_next = next_rd ? (struct r_debug_extended *)(uintptr_t)(BASE + next_rd) : NULL;
	memcpy(mem + rd, &r, sizeof(r));
}

static int walk(struct linkmap **lm)
{
	struct target *t = target__from_image(mem, sizeof(mem), BASE);
	int err = t ? linkmap__walk(t, BASE, lm) : -ENOMEM;

	target__free(t);
	return err;
}

static bool same(const struct linkmap *a, const struct linkmap *b)
{
	if (a->n != b->n || a->r_debug != b->r_debug || a->n_namespaces != b->n_namespaces)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->e[i].lm_addr != b->e[i].lm_addr || a->e[i].l_addr != b->e[i].l_addr ||
		    a->e[i].ns != b->e[i].ns || strcmp(a->e[i].name, b->e[i].name))
			return false;
	return true;
}

/* A library of glibc's that this test has not loaded; NULL when none is installed. */
static const char *unloaded_library(void)
{
	static const char *const libs[] = { "libanl.so.1", "libutil.so.1", "libnss_dns.so.2",
					    "libresolv.so.2" };

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		void *h = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);

		if (h) {
			dlclose(h);
			continue;
		}
		return libs[i];
	}
	return NULL;
}

/* linkmap__read_again agrees with a whole read after a dlopen, a dlclose and a stale hint. */
static void read_again_of_self(void)
{
	struct linkmap *before = NULL, *again = NULL, *whole = NULL, *after = NULL;
	struct procmaps *maps = procmaps__read(getpid());
	const char *lib = unloaded_library();
	struct target *t = NULL;
	char why[256];
	void *h = NULL;

	if (!maps || !lib || target__open(getpid(), &t, why, sizeof(why)) ||
	    linkmap__read(t, maps, &before)) {
		CHECK(false, "this process's link map is read, and a library of glibc not loaded "
			     "is found");
		goto out;
	}
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL, "a library of glibc not loaded yet is loaded");
	CHECK(!linkmap__read_again(t, maps, before, &again) && !linkmap__read(t, maps, &whole) &&
		      again->n == before->n + 1 && same(again, whole),
	      "after a dlopen, the read again is the whole read, one object more");
	CHECK(again && strstr(again->e[again->n - 1].name, lib) != NULL, "the new object is named");
	linkmap__free(whole);
	whole = NULL;
	if (h)
		dlclose(h);
	CHECK(!linkmap__read_again(t, maps, again, &after) && !linkmap__read(t, maps, &whole) &&
		      after->n == before->n && same(after, whole) && same(after, before),
	      "after its dlclose, the read again is the whole read and the first one");
	linkmap__free(after);
	after = NULL;
	/* A hint from another loader (another image at that address): the whole read. */
	before->interp_base ^= 0x1000;
	CHECK(!linkmap__read_again(t, maps, before, &after) && same(after, whole) &&
		      after->interp_base == whole->interp_base,
	      "a hint whose loader base does not match is not taken");
out:
	linkmap__free(before);
	linkmap__free(again);
	linkmap__free(whole);
	linkmap__free(after);
	target__free(t);
	procmaps__free(maps);
}

/*
 * target__read_strs, which the walk reads its names with, against target__read_str one by one
 * on this process: a short string, one that ends at the last byte before an unmapped page,
 * one longer than a batch reads of each, one too long for the buffer, and an address that
 * cannot be read (the strings after it are still read).
 */
static void strings_in_one_go(void)
{
	char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static char longer[1000], too_long[5000];
	char bufs[6][4096], *bp[6], one[4096];
	uint64_t addrs[6];
	struct target *t = NULL;
	int res[6], want[6];
	char why[256];
	bool same = true;

	if (pages == MAP_FAILED || munmap(pages + 4096, 4096) ||
	    target__open(getpid(), &t, why, sizeof(why))) {
		CHECK(false, "a page before an unmapped one, and this process as a target");
		return;
	}
	memset(longer, 'l', sizeof(longer) - 1);
	memset(too_long, 't', sizeof(too_long) - 1);
	memcpy(pages + 4096 - 6, "edge!", 6);
	addrs[0] = (uintptr_t) "libc.so.6";
	addrs[1] = (uintptr_t)(pages + 4096 - 6);
	addrs[2] = (uintptr_t)longer;
	addrs[3] = (uintptr_t)too_long;
	addrs[4] = (uintptr_t)(pages + 4096); /* unmapped */
	addrs[5] = (uintptr_t) "after it";
	for (int i = 0; i < 6; i++)
		bp[i] = bufs[i];
	target__read_strs(t, addrs, 6, bp, sizeof(bufs[0]), res);
	for (int i = 0; i < 6; i++) {
		want[i] = target__read_str(t, addrs[i], one, sizeof(one));
		same = same && res[i] == want[i] && (want[i] < 0 || !strcmp(one, bufs[i]));
	}
	CHECK(same && res[0] == 9 && res[1] == 5 && res[2] == 999 && res[3] == -ENAMETOOLONG &&
		      res[4] == -EFAULT && !strcmp(bufs[5], "after it"),
	      "strings read in one go are what one read each gives");
	munmap(pages, 4096);
	target__free(t);
}

int main(void)
{
	static const char *const ns0[] = { "", "/lib/x86_64-linux-gnu/libc.so.6",
					   "/lib64/ld-linux-x86-64.so.2" };
	static const char *const ns1[] = { "/opt/libplain.so", "/lib/x86_64-linux-gnu/libc.so.6" };
	struct linkmap *lm = NULL;
	int err;

	memset(mem, 0, sizeof(mem));
	lay_out(0, 0x400, 0x1000, ns0, 3, 0x100, false);
	lay_out(0x100, 0x800, 0x1400, ns1, 2, 0, false);
	err = walk(&lm);
	CHECK(!err && lm->n == 5 && lm->n_namespaces == 2, "two namespaces, five objects");
	CHECK(!err && !strcmp(lm->e[1].name, ns0[1]) && lm->e[3].ns == 1 &&
		      !strcmp(lm->e[3].name, ns1[0]),
	      "names and namespaces as laid out");
	if (!err)
		linkmap__free(lm);

	memset(mem, 0, sizeof(mem));
	lay_out(0, 0x400, 0x1000, ns0, 3, 0, true);
	CHECK(walk(&lm) == -EFAULT, "a list that loops back is refused at once");

	memset(mem, 0, sizeof(mem));
	lay_out(0, 0x400, 0x1000, ns0, 3, 0, false);
	((struct link_map *)(void *)(mem + 0x400 + sizeof(struct link_map)))->l_next =
		(struct link_map *)(uintptr_t)(BASE + 0x100000);
	CHECK(walk(&lm) == -EFAULT, "an entry pointing outside memory is -EFAULT");

	memset(mem, 0, sizeof(mem));
	lay_out(0, 0x400, 0x1000, ns0, 3, 0, false);
	memset(mem + 0x1000, 'x', sizeof(mem) - 0x1000);
	CHECK(walk(&lm) == -EFAULT, "a name running off the end of memory is -EFAULT");

	read_again_of_self();
	strings_in_one_go();
	return tap_done();
}
