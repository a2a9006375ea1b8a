// SPDX-License-Identifier: GPL-2.0
/* An object's symbols sorted by address, for elfobj__symbol_at. */
#include <errno.h>
#include <stdlib.h>

#include "array.h"
#include "elfobj.h"
#include "elfobj_impl.h"

/*
 * Symbols by address. A query asks: the first symbol, in table order (.symtab before .dynsym),
 * whose [value, value + size) holds the address; else, for functions, the nearest sizeless one
 * below it. Sorting once per object and binary searching makes each query O(log n) instead of
 * a walk of both tables (perf and libbpf-tools keep the same kind of index).
 */
struct addr_sym {
	uint64_t value, end; /* end == value for a sizeless symbol */
	uint64_t max_end;    /* the largest end among this entry and all before it (sized only) */
	uint32_t order;	     /* its place in the tables: .symtab first, then .dynsym */
	const char *name;
};

struct addr_index {
	struct addr_sym *sized, *sizeless;
	size_t n_sized, n_sizeless;
};

void addr_index__free(struct addr_index *ix)
{
	if (!ix)
		return;
	free(ix->sized);
	free(ix->sizeless);
	free(ix);
}

static int push_addr_sym(struct addr_sym **v, size_t *n, size_t *cap, struct addr_sym e)
{
	if (*n == *cap) {
		if (ARRAY_GROW(*v, *cap, 256))
			return -ENOMEM;
	}
	(*v)[(*n)++] = e;
	return 0;
}

int addr_index__begin(struct addr_index_build *b, bool func)
{
	*b = (struct addr_index_build){ .func = func };
	b->ix = calloc(1, sizeof(*b->ix));
	return b->ix ? 0 : -ENOMEM;
}

int addr_index__collect(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct addr_index_build *b = ctx;
	unsigned type = GELF_ST_TYPE(sym->st_info);
	struct addr_sym e = { .value = sym->st_value, .order = b->order++, .name = name };
	int err;

	if (b->func ? (type != STT_FUNC && type != STT_GNU_IFUNC) :
		      (type != STT_OBJECT && type != STT_TLS))
		return 0;
	if (sym->st_size) {
		e.end = sym->st_value + sym->st_size;
		err = push_addr_sym(&b->ix->sized, &b->ix->n_sized, &b->cap_sized, e);
	} else if (b->func) {
		e.end = e.value;
		err = push_addr_sym(&b->ix->sizeless, &b->ix->n_sizeless, &b->cap_sizeless, e);
	} else {
		return 0;
	}
	if (err)
		b->failed = true;
	return err ? 1 : 0;
}

/* By value; sized ties by table order, sizeless ties by table order reversed (see lookup). */
static int by_value_then_order(const void *a, const void *b)
{
	const struct addr_sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int by_value_then_order_desc(const void *a, const void *b)
{
	const struct addr_sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->order > y->order ? -1 : x->order < y->order;
}

struct addr_index *addr_index__finish(struct addr_index_build *b)
{
	uint64_t max_end = 0;

	if (b->failed) {
		addr_index__free(b->ix);
		return NULL;
	}
	/* qsort of an empty (NULL) array is undefined: an object may have no sized symbol. */
	if (b->ix->n_sized)
		qsort(b->ix->sized, b->ix->n_sized, sizeof(struct addr_sym), by_value_then_order);
	if (b->ix->n_sizeless)
		qsort(b->ix->sizeless, b->ix->n_sizeless, sizeof(struct addr_sym),
		      by_value_then_order_desc);
	for (size_t i = 0; i < b->ix->n_sized; i++) {
		if (b->ix->sized[i].end > max_end)
			max_end = b->ix->sized[i].end;
		b->ix->sized[i].max_end = max_end;
	}
	return b->ix;
}

/* The number of entries whose value is <= @vaddr (they come first: sorted by value). */
static size_t count_at_or_below(const struct addr_sym *v, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].value <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct addr_sym *find(const struct addr_index *ix, uint64_t vaddr)
{
	const struct addr_sym *best = NULL;
	size_t i = count_at_or_below(ix->sized, ix->n_sized, vaddr);

	/* Walk down while some symbol at or below could still reach past vaddr. */
	while (i-- > 0 && ix->sized[i].max_end > vaddr)
		if (ix->sized[i].end > vaddr && (!best || ix->sized[i].order < best->order))
			best = &ix->sized[i];
	if (best)
		return best;
	/* The highest sizeless value below; among equal values the first in table order. */
	i = count_at_or_below(ix->sizeless, ix->n_sizeless, vaddr);
	return i ? &ix->sizeless[i - 1] : NULL;
}

const char *addr_index__lookup(const struct addr_index *ix, uint64_t vaddr, uint64_t *value)
{
	const struct addr_sym *hit = find(ix, vaddr);

	if (!hit)
		return NULL;
	*value = hit->value;
	return hit->name;
}
