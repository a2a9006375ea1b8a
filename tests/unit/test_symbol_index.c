// SPDX-License-Identifier: GPL-2.0
/*
 * elfobj__symbol_at answers from a sorted index; it must give, for every address, what a walk
 * of .symtab then .dynsym gives (the first symbol holding the address in table order, else the
 * nearest sizeless function below). The walk is kept here as the reference, and both are asked
 * at every symbol's edges and at pseudo-random addresses, in real objects: the test binary
 * (.symtab), libc (.dynsym only, aliases of one address) and libc's debug file (both tables).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "tap.h"

struct ref_query {
	uint64_t vaddr;
	bool func, exact;
	const char *best;
	uint64_t best_value;
};

static int ref_match(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct ref_query *q = ctx;
	unsigned type = GELF_ST_TYPE(sym->st_info);

	if (q->func ? (type != STT_FUNC && type != STT_GNU_IFUNC) :
		      (type != STT_OBJECT && type != STT_TLS))
		return 0;
	if (sym->st_value > q->vaddr)
		return 0;
	if (sym->st_size && q->vaddr < sym->st_value + sym->st_size) {
		q->best = name;
		q->best_value = sym->st_value;
		q->exact = true;
		return 1;
	}
	if (q->func && !sym->st_size && (!q->best || sym->st_value > q->best_value)) {
		q->best = name;
		q->best_value = sym->st_value;
	}
	return 0;
}

static int ref_symbol_at(const struct elf_object *o, uint64_t vaddr, bool func, const char **name,
			 uint64_t *off)
{
	struct ref_query q = { .vaddr = vaddr, .func = func };

	elfobj__foreach_defined(o, ELFOBJ_SYMTAB, ref_match, &q);
	if (!q.exact)
		elfobj__foreach_defined(o, ELFOBJ_DYNSYM, ref_match, &q);
	if (!q.best)
		return -ENOENT;
	*name = q.best;
	*off = vaddr - q.best_value;
	return 0;
}

struct probes {
	uint64_t *v;
	size_t n, cap;
};

static void add_probe(struct probes *p, uint64_t v)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 1024;
		p->v = realloc(p->v, p->cap * sizeof(*p->v));
		if (!p->v)
			exit(2);
	}
	p->v[p->n++] = v;
}

/* Every 7th symbol's edges: the walk costs the whole tables per address. */
static int collect_probes(const char *name, const GElf_Sym *sym, void *ctx)
{
	static unsigned seen;

	(void)name;
	if (seen++ % 7)
		return 0;
	add_probe(ctx, sym->st_value);
	add_probe(ctx, sym->st_value - 1);
	add_probe(ctx, sym->st_value + sym->st_size / 2);
	add_probe(ctx, sym->st_value + sym->st_size);
	return 0;
}

/* Compares both answers at every probe; the number of addresses where they differ. */
static size_t compare(const struct elf_object *o, const struct probes *p, bool func, size_t *named)
{
	size_t bad = 0;

	for (size_t i = 0; i < p->n; i++) {
		const char *a = NULL, *b = NULL;
		uint64_t ao = 0, bo = 0;
		int ra = elfobj__symbol_at(o, p->v[i], func, &a, &ao);
		int rb = ref_symbol_at(o, p->v[i], func, &b, &bo);

		if (ra != rb || (!ra && (strcmp(a, b) || ao != bo))) {
			if (bad++ < 3)
				printf("# %#llx %s: index %s+%llu, walk %s+%llu\n",
				       (unsigned long long)p->v[i], func ? "func" : "data",
				       ra ? "-" : a, (unsigned long long)ao, rb ? "-" : b,
				       (unsigned long long)bo);
		}
		*named += !ra;
	}
	return bad;
}

static void check_object(const char *path)
{
	struct elf_object *o = elfobj__open(path);
	struct probes p = { 0 };
	uint64_t x = 0x9e3779b97f4a7c15ull, hi = 0;
	size_t named = 0, bad;
	char name[512];

	if (!o) {
		printf("# %s: %s\n", path, elfobj__strerror(errno));
		CHECK(0, "the object opens");
		return;
	}
	elfobj__foreach_defined(o, ELFOBJ_SYMTAB | ELFOBJ_DYNSYM, collect_probes, &p);
	for (size_t i = 0; i < p.n; i++)
		hi = p.v[i] > hi && p.v[i] < (1ull << 48) ? p.v[i] : hi;
	for (int i = 0; i < 2000 && hi; i++) { /* xorshift: the same addresses every run */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		add_probe(&p, x % (hi + 4096));
	}
	bad = compare(o, &p, true, &named) + compare(o, &p, false, &named);
	snprintf(name, sizeof(name), "%s: index and walk agree at %zu addresses (%zu named)", path,
		 2 * p.n, named);
	CHECK(bad == 0 && named > 0, name);
	free(p.v);
	elfobj__free(o);
}

int main(int argc, char **argv)
{
	struct elf_object *libc = elfobj__open("/lib/x86_64-linux-gnu/libc.so.6");
	const char *bid = libc ? elfobj__build_id(libc) : NULL;
	char debug[256];

	(void)argc;
	check_object(argv[0]);
	check_object("/lib/x86_64-linux-gnu/libc.so.6");
	check_object("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
	/* libc's debug file (libc6-dbg): a full .symtab with aliases and locals of one address. */
	if (bid && strlen(bid) > 2) {
		snprintf(debug, sizeof(debug), "/usr/lib/debug/.build-id/%.2s/%s.debug", bid,
			 bid + 2);
		check_object(debug);
	} else {
		CHECK(0, "libc has a build-id");
	}
	elfobj__free(libc);
	return tap_done();
}
