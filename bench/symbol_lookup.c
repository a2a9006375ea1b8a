// SPDX-License-Identifier: GPL-2.0
/*
 * Cost of naming an address (elfobj__symbol_at), as the collector, the loader-lock detector and
 * the lock graph ask it once per frame: libc's debug file (a full .symtab), 20,000 addresses
 * inside its functions. Prints "<objects symbols> <queries> <ns per query>". Built against a
 * build's libdlscope-core.a by symbol_lookup_bench.py, so two builds compare on one program.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "elfobj.h"

struct addrs {
	uint64_t v[20000];
	size_t n, seen;
};

static int take(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct addrs *a = ctx;

	(void)name;
	a->seen++;
	if (GELF_ST_TYPE(sym->st_info) == STT_FUNC && sym->st_size && a->n < 20000)
		a->v[a->n++] = sym->st_value + sym->st_size / 2;
	return 0;
}

int main(int argc, char **argv)
{
	struct elf_object *o = argc > 1 ? elfobj__open(argv[1]) : NULL;
	static struct addrs a;
	struct timespec t0, t1;
	const char *name;
	uint64_t off;
	size_t named = 0;

	if (!o) {
		fprintf(stderr, "usage: symbol_lookup ELF (an object with a .symtab)\n");
		return 2;
	}
	elfobj__foreach_defined(o, ELFOBJ_SYMTAB | ELFOBJ_DYNSYM, take, &a);
	/* Spread the queries over the address space, as frames of many functions are. */
	for (size_t i = a.n; i > 1; i--) {
		size_t j = (size_t)rand() % i;
		uint64_t t = a.v[i - 1];

		a.v[i - 1] = a.v[j];
		a.v[j] = t;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < a.n; i++)
		named += !elfobj__symbol_at(o, a.v[i], true, &name, &off);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%zu %zu %.0f\n", a.seen, named,
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (a.n ? a.n : 1));
	elfobj__free(o);
	return 0;
}
