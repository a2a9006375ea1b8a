// SPDX-License-Identifier: GPL-2.0
/*
 * dup-library: one library loaded more than once (a SONAME from two files, a build twice, one
 * file in two namespaces), and vague-linkage statics that the loader did not unify, so two
 * objects each use their own copy of what must be one (template statics, TypeIDs, typeinfo).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
#include "procmaps.h"
#include "target.h"

#define MAX_SYMBOL_LINES 10

static bool per_namespace_by_design(const struct lg_object *o)
{
	const struct obj_roles *r = lg_object__roles(o);

	return o->origin == LG_VDSO || obj_roles__find(r, ROLE_LIBC) ||
	       obj_roles__find(r, ROLE_LOADER);
}

static void same_identity(const struct check_ctx *ctx, struct findings *out, bool by_build_id)
{
	const struct libgraph *g = ctx->g;
	bool *done = calloc(g->n ? g->n : 1, sizeof(*done));

	if (!done)
		return;
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *a = g->objs[i];
		const char *key = by_build_id ? (a->elf ? elfobj__build_id(a->elf) : NULL) : a->soname;
		struct finding *f = NULL;

		if (done[i] || a->gone || !key)
			continue;
		for (size_t j = i + 1; j < g->n; j++) {
			const struct lg_object *b = g->objs[j];
			const char *bkey = by_build_id ? (b->elf ? elfobj__build_id(b->elf) : NULL) :
							 b->soname;
			char origin[256];

			/* The same file twice is the namespace check's business. */
			if (b->gone || !bkey || strcmp(key, bkey) || b->inode == a->inode)
				continue;
			if (!f) {
				f = findings__add(out, "dup-library", SEV_ERROR, g->pid,
						  by_build_id ?
							  "one build (build-id %.12s) loaded from two files: %s and %s" :
							  "SONAME %s loaded from two files: %s and %s",
						  key, a->path, b->path);
				lg_object__describe_origin(g, a->id, origin, sizeof(origin));
				finding__evidence(f, "#%u %s (namespace %u), loaded by %s", a->id,
						  a->path, a->ns, origin);
			}
			done[j] = true;
			lg_object__describe_origin(g, b->id, origin, sizeof(origin));
			finding__evidence(f, "#%u %s (namespace %u), loaded by %s", b->id, b->path,
					  b->ns, origin);
		}
		finding__explain(
			f,
			"Two copies of one library each have their own globals, caches, registries "
			"and thread pools. Code bound to one copy and data created by the other do not "
			"agree: registrations made in one are invisible in the other, and two pools "
			"fight over the CPUs. Wheels often vendor a renamed copy of a library another "
			"wheel or the system already provides.",
			"Keep one copy: make the packages depend on a shared one instead of vendoring "
			"it, or load the wanted copy first with RTLD_GLOBAL so the SONAME match reuses "
			"it.");
	}
	free(done);
}

static void same_file_in_namespaces(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *a = g->objs[i];
		struct finding *f = NULL;

		if (a->gone || !a->inode || per_namespace_by_design(a))
			continue;
		for (size_t j = 0; j < i; j++)
			if (g->objs[j]->inode == a->inode && g->objs[j]->ns != a->ns &&
			    !g->objs[j]->gone)
				goto next; /* reported with the first one */
		for (size_t j = i + 1; j < g->n; j++) {
			const struct lg_object *b = g->objs[j];

			if (b->gone || b->inode != a->inode || b->ns == a->ns)
				continue;
			if (!f) {
				f = findings__add(out, "dup-library", SEV_WARNING, g->pid,
						  "%s is loaded in more than one namespace",
						  lg_object__basename(a));
				finding__evidence(f, "#%u %s in namespace %u at 0x%" PRIx64, a->id,
						  a->path, a->ns, a->base);
			}
			finding__evidence(f, "#%u %s in namespace %u at 0x%" PRIx64, b->id, b->path,
					  b->ns, b->base);
		}
		finding__explain(f,
				 "dlmopen gives each namespace its own copy with its own statics: "
				 "objects passed between namespaces meet a copy that never saw them.",
				 "Pass only plain data across namespaces, or load the library once, in "
				 "the default namespace.");
next:;
	}
}

/* One exported vague-linkage definition: the candidates for a split. */
struct vague_def {
	const char *name;
	unsigned int obj;
	uint64_t addr; /* where this object's own copy lives in the target */
};

struct vague_list {
	struct vague_def *d;
	size_t n, cap;
	unsigned int obj;
	uint64_t base;
	bool hidden; /* collect .symtab hidden/local definitions instead of exported ones */
};

static bool is_vague_candidate(const char *name, const GElf_Sym *sym)
{
	if (GELF_ST_TYPE(sym->st_info) != STT_OBJECT || !sym->st_size || name[0] != '_' ||
	    name[1] != 'Z')
		return false;
	/* Function-local statics and guard variables have their own protocols. */
	return strncmp(name, "_ZZ", 3) && strncmp(name, "_ZGV", 4) && strncmp(name, "_ZTV", 4);
}

static int collect_vague(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct vague_list *l = ctx;
	unsigned bind = GELF_ST_BIND(sym->st_info);

	if (!is_vague_candidate(name, sym))
		return 0;
	/* Hidden definitions become local at link time; anonymous namespaces are meant local. */
	if (l->hidden ? (bind != STB_LOCAL || strstr(name, "_GLOBAL__N_")) :
			(bind != STB_WEAK && bind != STB_GNU_UNIQUE))
		return 0;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 256;
		struct vague_def *nd = realloc(l->d, ncap * sizeof(*nd));

		if (!nd)
			return -1;
		l->d = nd;
		l->cap = ncap;
	}
	l->d[l->n++] = (struct vague_def){ name, l->obj, l->base + sym->st_value };
	return 0;
}

static int cmp_def(const void *a, const void *b)
{
	const struct vague_def *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->obj > y->obj) - (x->obj < y->obj);
}

struct got_lookup {
	const char *name;
	uint64_t offset;
	bool found;
};

static int find_got(const char *name, uint64_t offset, unsigned type, void *ctx)
{
	struct got_lookup *l = ctx;

	if ((type == R_X86_64_GLOB_DAT || type == R_X86_64_64) && !strcmp(name, l->name)) {
		l->offset = offset;
		l->found = true;
		return 1;
	}
	return 0;
}

/* The copy object @o really uses: what its GOT slot holds, or its own when it has no slot. */
static uint64_t bound_address(const struct check_ctx *ctx, const struct lg_object *o,
			      const char *name, uint64_t own)
{
	struct got_lookup l = { .name = name };
	uint64_t val;

	elfobj__foreach_dynreloc(o->elf, find_got, &l);
	if (!l.found || target__read(ctx->t, o->base + l.offset, &val, sizeof(val)))
		return own;
	return val;
}

static bool seen_inode(const struct libgraph *g, size_t upto, uint64_t inode)
{
	for (size_t j = 0; j < upto; j++)
		if (!g->objs[j]->gone && g->objs[j]->elf && g->objs[j]->inode == inode)
			return true;
	return false;
}

static void split_statics(const struct check_ctx *ctx, struct findings *out, bool hidden)
{
	const struct libgraph *g = ctx->g;
	struct vague_list l = { .hidden = hidden };
	struct finding *f = NULL;
	size_t lines = 0, splits = 0;

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		/* Each file once per namespace: the same file in two namespaces is split anyway. */
		if (o->gone || !o->elf || !o->in_link_map || seen_inode(g, i, o->inode))
			continue;
		l.obj = o->id;
		l.base = o->base;
		elfobj__foreach_defined(o->elf, hidden ? ELFOBJ_SYMTAB : ELFOBJ_DYNSYM,
					collect_vague, &l);
	}
	if (l.n)
		qsort(l.d, l.n, sizeof(*l.d), cmp_def);
	for (size_t i = 0; i < l.n;) {
		size_t j = i + 1, distinct = 1;
		uint64_t first;

		while (j < l.n && !strcmp(l.d[j].name, l.d[i].name))
			j++;
		if (j - i < 2)
			goto next;
		/* Exported copies may still be unified: ask each object's GOT which one it uses. */
		first = hidden ? l.d[i].addr :
				 bound_address(ctx, g->objs[l.d[i].obj], l.d[i].name, l.d[i].addr);
		for (size_t k = i + 1; k < j && !hidden; k++)
			distinct += bound_address(ctx, g->objs[l.d[k].obj], l.d[k].name,
						  l.d[k].addr) != first;
		if (!hidden && distinct < 2)
			goto next;
		splits++;
		if (!f)
			f = findings__add(out, "dup-library", hidden ? SEV_WARNING : SEV_ERROR,
					  g->pid, "vague-linkage statics split between objects");
		if (lines++ < MAX_SYMBOL_LINES) {
			char dem[512], objs[512] = "";
			size_t used = 0;

			demangle(l.d[i].name, dem, sizeof(dem));
			for (size_t k = i; k < j && used < sizeof(objs); k++)
				used += (size_t)snprintf(objs + used, sizeof(objs) - used, "%s%s",
							 k > i ? ", " : "",
							 lg_object__basename(g->objs[l.d[k].obj]));
			finding__evidence(f, "%s: %zu copies, each used by its own object (%s)", dem,
					  j - i, objs);
		}
next:
		i = j;
	}
	if (f) {
		if (splits > MAX_SYMBOL_LINES)
			finding__evidence(f, "... and %zu more symbols", splits - MAX_SYMBOL_LINES);
		free(f->title);
		if (asprintf(&f->title, "%zu vague-linkage static%s split between objects%s", splits,
			     splits == 1 ? "" : "s",
			     hidden ? " (hidden copies linked into each)" :
				      " (exported, but loaded RTLD_LOCAL)") < 0)
			f->title = strdup("vague-linkage statics split between objects");
		finding__explain(
			f,
			"Template static members, TypeID-style singletons and typeinfo must exist once "
			"per process: their address is their identity. Each object here uses its own "
			"copy, so a type registered through one is unknown to the other and isa/"
			"dynamic_cast/registry lookups fail across them (the MLIR TypeID split).",
			hidden ? "Do not link the same static library into two extensions: put it in "
				 "one shared library both depend on (one SONAME), so its statics "
				 "exist once." :
				 "Load the objects with RTLD_GLOBAL (or load the library that owns the "
				 "statics first, RTLD_GLOBAL), or move the statics into one shared "
				 "library both link; GCC's STB_GNU_UNIQUE (not emitted by clang or "
				 "with -fno-gnu-unique) would also unify them.");
	}
	free(l.d);
}

void dup_library__process(const struct check_ctx *ctx, struct findings *out)
{
	same_identity(ctx, out, false);
	same_identity(ctx, out, true);
	same_file_in_namespaces(ctx, out);
	split_statics(ctx, out, false);
	split_statics(ctx, out, true);
}

/* lint: hidden vague statics that two files each carry a copy of. */
static void split_statics_files(const struct lint_file *files, size_t n, struct findings *out)
{
	struct vague_list l = { .hidden = true };
	struct finding *f = NULL;
	size_t splits = 0;

	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		for (size_t j = 0; j < i && !dup; j++)
			dup = elfobj__inode(files[j].elf) == elfobj__inode(files[i].elf);
		if (dup || elfobj__type(files[i].elf) != ET_DYN)
			continue;
		l.obj = (unsigned int)i;
		elfobj__foreach_defined(files[i].elf, ELFOBJ_SYMTAB, collect_vague, &l);
	}
	if (l.n)
		qsort(l.d, l.n, sizeof(*l.d), cmp_def);
	for (size_t i = 0; i < l.n;) {
		size_t j = i + 1;

		while (j < l.n && !strcmp(l.d[j].name, l.d[i].name))
			j++;
		if (j - i >= 2 && splits++ < MAX_SYMBOL_LINES) {
			char dem[512];

			if (!f)
				f = findings__add(out, "dup-library", SEV_WARNING, 0,
						  "vague-linkage statics linked into several objects");
			demangle(l.d[i].name, dem, sizeof(dem));
			finding__evidence(f, "%s: a hidden copy in %s and %zu other object%s", dem,
					  files[l.d[i].obj].path, j - i - 1, j - i > 2 ? "s" : "");
		}
		i = j;
	}
	if (splits > MAX_SYMBOL_LINES)
		finding__evidence(f, "... and %zu more symbols", splits - MAX_SYMBOL_LINES);
	finding__explain(f,
			 "Each object has its own copy of statics that must be unique per process "
			 "(template statics, TypeIDs): a process loading two of them splits them.",
			 "Put the library that owns them in one shared library both objects link.");
	free(l.d);
}

void dup_library__files(const struct lint_file *files, size_t n, struct findings *out)
{
	split_statics_files(files, n, out);
	for (size_t i = 0; i < n; i++) {
		const char *bid = elfobj__build_id(files[i].elf);
		struct finding *f = NULL;

		if (!bid)
			continue;
		for (size_t j = 0; j < i; j++)
			if (elfobj__build_id(files[j].elf) &&
			    !strcmp(elfobj__build_id(files[j].elf), bid))
				goto next;
		for (size_t j = i + 1; j < n; j++) {
			const char *b = elfobj__build_id(files[j].elf);

			if (!b || strcmp(b, bid) || elfobj__inode(files[j].elf) ==
							     elfobj__inode(files[i].elf))
				continue;
			if (!f) {
				f = findings__add(out, "dup-library", SEV_WARNING, 0,
						  "one build (build-id %.12s) present as several files",
						  bid);
				finding__evidence(f, "%s", files[i].path);
			}
			finding__evidence(f, "%s", files[j].path);
		}
		finding__explain(f,
				 "If a process loads more than one of these files it gets separate "
				 "copies of the library's state.",
				 "Ship one copy and let the others depend on it.");
next:;
	}
}
