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
#include "owners.h"
#include "procmaps.h"
#include "symdigest.h"
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
		const char *key = by_build_id ? (a->elf ? elfobj__build_id(a->elf) : NULL) :
						a->soname;
		struct finding *f = NULL;
		unsigned int ids[64];
		size_t n_ids = 0;
		char pkg[600];

		if (done[i] || a->gone || !key)
			continue;
		for (size_t j = i + 1; j < g->n; j++) {
			const struct lg_object *b = g->objs[j];
			const char *bkey = by_build_id ?
						   (b->elf ? elfobj__build_id(b->elf) : NULL) :
						   b->soname;
			char origin[256];

			/* The same file twice is the namespace check's business. */
			if (b->gone || !bkey || strcmp(key, bkey) || b->inode == a->inode)
				continue;
			if (!f) {
				f = findings__add(
					out, "dup-library", SEV_ERROR, g->pid,
					by_build_id ?
						"one build (build-id %.12s) loaded from two files: %s and %s" :
						"SONAME %s loaded from two files: %s and %s",
					key, a->path, b->path);
				lg_object__describe_origin(g, a->id, origin, sizeof(origin));
				owners__describe(g, a->id, pkg, sizeof(pkg));
				finding__evidence(f, "#%u %s (namespace %u), loaded by %s%s%s",
						  a->id, a->path, a->ns, origin, pkg[0] ? "; " : "",
						  pkg);
				ids[n_ids++] = a->id;
			}
			done[j] = true;
			lg_object__describe_origin(g, b->id, origin, sizeof(origin));
			owners__describe(g, b->id, pkg, sizeof(pkg));
			finding__evidence(f, "#%u %s (namespace %u), loaded by %s%s%s", b->id,
					  b->path, b->ns, origin, pkg[0] ? "; " : "", pkg);
			if (n_ids < 64)
				ids[n_ids++] = b->id;
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
		owners__remedy(f, g, ids, n_ids);
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
		finding__explain(
			f,
			"dlmopen gives each namespace its own copy with its own statics: "
			"objects passed between namespaces meet a copy that never saw them.",
			"Pass only plain data across namespaces, or load the library once, in "
			"the default namespace.");
	next:;
	}
}

/* One vague-linkage definition: a candidate for a split. */
struct vague_def {
	const char *name;
	unsigned int obj;
	uint64_t addr, size; /* where this object's own copy lives in the target */
	bool binds_own;	     /* protected visibility: its object's references skip the lookup */
};

struct vague_list {
	struct vague_def *d;
	size_t n, cap;
	unsigned int obj;
	uint64_t base;
	bool hidden;  /* collect .symtab hidden/local definitions instead of exported ones */
	bool by_name; /* read from the symbol tables, not the digests (typeinfo under libc++) */
};

/*
 * Statics whose address is their identity: template static members, inline variables and the
 * function-local statics of inline functions (MLIR's TypeID). Not typeinfo under libstdc++,
 * which compares type_info by its mangled name (so copies are harmless), nor vtables, VTTs and
 * construction vtables, whose contents matter, nor guard variables, which follow their static.
 */
static bool identity_by_address(const char *name, bool libcxx)
{
	if (!strncmp(name, "_ZTI", 4) || !strncmp(name, "_ZTS", 4))
		return libcxx; /* libc++ on ELF compares type_info by address */
	return strncmp(name, "_ZTV", 4) && strncmp(name, "_ZTT", 4) && strncmp(name, "_ZTC", 4) &&
	       strncmp(name, "_ZGV", 4);
}

static int push_def(struct vague_list *l, const char *name, uint64_t value, uint64_t size,
		    bool binds_own)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 256;
		struct vague_def *nd = realloc(l->d, ncap * sizeof(*nd));

		if (!nd)
			return -1;
		l->d = nd;
		l->cap = ncap;
	}
	l->d[l->n++] = (struct vague_def){ name, l->obj, l->base + value, size, binds_own };
	return 0;
}

static int collect_vague(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct vague_list *l = ctx;

	if (!symdigest__vague_candidate(name, sym, l->hidden, true))
		return 0;
	return push_def(l, name, sym->st_value, sym->st_size,
			GELF_ST_VISIBILITY(sym->st_other) == STV_PROTECTED);
}

static int cmp_def(const void *a, const void *b)
{
	const struct vague_def *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->obj > y->obj) - (x->obj < y->obj);
}

static bool needs_libcxx(const struct elf_object *e)
{
	for (size_t i = 0; i < elfobj__n_needed(e); i++)
		if (!strncmp(elfobj__needed(e, i), "libc++.so", 9))
			return true;
	return false;
}

static bool seen_inode(const struct libgraph *g, size_t upto, uint64_t inode)
{
	for (size_t j = 0; j < upto; j++)
		if (!g->objs[j]->gone && g->objs[j]->elf && g->objs[j]->inode == inode)
			return true;
	return false;
}

static bool any_needs_libcxx(const struct libgraph *g)
{
	for (size_t i = 0; i < g->n; i++)
		if (!g->objs[i]->gone && g->objs[i]->elf && needs_libcxx(g->objs[i]->elf))
			return true;
	return false;
}

/* Every loaded file's definitions, once per file. */
static void collect_loaded(const struct libgraph *g, struct vague_list *l)
{
	/* Typeinfo is a candidate only under libc++, and digests leave it out: read the tables. */
	bool tables = l->by_name = !l->hidden && any_needs_libcxx(g);

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		const struct symdigest *d;
		const struct symd_vague *v;
		size_t n;

		/* Each file once: the same file in two namespaces is reported as such. */
		if (o->gone || !o->elf || !o->in_link_map || seen_inode(g, i, o->inode))
			continue;
		l->obj = o->id;
		l->base = o->base;
		if (tables) {
			elfobj__foreach_defined(o->elf, ELFOBJ_DYNSYM, collect_vague, l);
			continue;
		}
		d = symdigest__of(o->elf);
		v = !d ? NULL : l->hidden ? d->hidden : d->vague;
		n = !d ? 0 : l->hidden ? d->n_hidden : d->n_vague;
		for (size_t k = 0; k < n; k++)
			if (push_def(l, v[k].name, v[k].value, v[k].size, v[k].binds_own))
				return;
	}
	if (l->n)
		qsort(l->d, l->n, sizeof(*l->d), cmp_def);
}

/* Whether @o's dynamic symbols name any of @names: only then can its relocations use one. */
static bool names_any(const struct elf_object *o, const uint64_t *hashes, size_t n)
{
	const struct symdigest *d = symdigest__of(o);

	if (!d)
		return true; /* unknown: let the relocations tell */
	for (size_t k = 0; k < n; k++)
		if (symdigest__has(d->undefs, d->n_undefs, hashes[k], false) ||
		    symdigest__has(d->defs, d->n_defs, hashes[k], false))
			return true;
	return false;
}

/* A name defined more than once whose copies' identity is their address. */
struct split_name {
	const char *name;
	size_t first, n; /* its definitions in the sorted vague_list */
};

/* An object that really uses a copy: the address its reference resolved to. */
struct static_use {
	size_t name; /* index into the split_name array */
	unsigned int obj;
	uint64_t addr;
	bool own; /* bound to its own copy without a lookup (-Bsymbolic, protected) */
};

struct use_scan {
	const struct check_ctx *ctx;
	const struct lg_object *o;
	const struct split_name *names;
	size_t n_names;
	struct static_use *u;
	size_t n, cap;
};

static int cmp_split_name(const void *key, const void *elem)
{
	return strcmp(key, ((const struct split_name *)elem)->name);
}

static int push_use(struct use_scan *s, size_t name, unsigned int obj, uint64_t addr, bool own)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		struct static_use *nu = realloc(s->u, ncap * sizeof(*nu));

		if (!nu)
			return -1;
		s->u = nu;
		s->cap = ncap;
	}
	s->u[s->n++] = (struct static_use){ name, obj, addr, own };
	return 0;
}

/*
 * A dynamic relocation naming a candidate is a reference the loader resolved: the GOT slot
 * (GLOB_DAT) or data word (64) now holds the address of the copy this object uses; a COPY
 * relocation makes the executable's own copy the one everybody should bind to.
 */
static int scan_use(const char *name, uint64_t offset, unsigned type, unsigned sym_type, void *ctx)
{
	struct use_scan *s = ctx;
	const struct split_name *n;
	uint64_t addr = s->o->base + offset;

	if (type != R_X86_64_GLOB_DAT && type != R_X86_64_64 && type != R_X86_64_COPY)
		return 0;
	n = bsearch(name, s->names, s->n_names, sizeof(*s->names), cmp_split_name);
	if (!n)
		return 0;
	if (type != R_X86_64_COPY && target__read(s->ctx->t, addr, &addr, sizeof(addr)))
		return 0;
	return push_use(s, (size_t)(n - s->names), s->o->id, addr, false) ? -1 : 0;
}

static int cmp_use(const void *a, const void *b)
{
	const struct static_use *x = a, *y = b;

	if (x->name != y->name)
		return (x->name > y->name) - (x->name < y->name);
	if (x->addr != y->addr)
		return (x->addr > y->addr) - (x->addr < y->addr);
	return (x->obj > y->obj) - (x->obj < y->obj);
}

/* The object whose copy lies at @addr, or NULL when none of the definitions does. */
static const struct lg_object *copy_owner(const struct libgraph *g, const struct vague_list *l,
					  const struct split_name *n, uint64_t addr)
{
	for (size_t k = n->first; k < n->first + n->n; k++)
		if (addr >= l->d[k].addr && addr < l->d[k].addr + l->d[k].size)
			return g->objs[l->d[k].obj];
	return NULL;
}

/* Where the object at @id came from at the root of its DT_NEEDED chain. */
static const struct lg_object *chain_root(const struct libgraph *g, unsigned int id)
{
	for (unsigned int hops = 0; libgraph__loaded_by(g, id) != LG_NONE && hops < 64; hops++)
		id = libgraph__loaded_by(g, id);
	return g->objs[id];
}

/* What made the copies apart, read off the users of one split name. */
enum split_cause {
	CAUSE_SYMBOLIC = 1 << 0,  /* a user bound to its own copy without a lookup */
	CAUSE_NAMESPACE = 1 << 1, /* users in different link-map namespaces */
	CAUSE_LOCAL = 1 << 2,	  /* users in separate dlopen groups, none in the global scope */
};

static unsigned describe_split(const struct libgraph *g, const struct vague_list *l,
			       const struct split_name *n, const struct static_use *u, size_t nu,
			       char *buf, size_t len)
{
	unsigned cause = 0;
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < nu && used < len; i++) {
		const struct lg_object *owner = copy_owner(g, l, n, u[i].addr);
		const struct lg_object *user = g->objs[u[i].obj];

		if (!i || u[i].addr != u[i - 1].addr) {
			if (owner)
				used += (size_t)snprintf(buf + used, len - used,
							 "%s%s's copy used by ", i ? "; " : "",
							 lg_object__basename(owner));
			else
				used += (size_t)snprintf(buf + used, len - used,
							 "%sthe copy at 0x%" PRIx64 " used by ",
							 i ? "; " : "", u[i].addr);
		} else {
			used += (size_t)snprintf(buf + used, len - used, ", ");
		}
		if (used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 lg_object__basename(user),
						 u[i].own ? " (binds its own)" : "");
		if (u[i].own)
			cause |= CAUSE_SYMBOLIC;
		if (user->ns != g->objs[u[0].obj]->ns)
			cause |= CAUSE_NAMESPACE;
		if (chain_root(g, user->id)->origin == LG_DLOPEN)
			cause |= CAUSE_LOCAL;
	}
	return cause;
}

static const char split_why[] =
	"Template static members, inline variables and the function-local statics of inline "
	"functions (TypeID-style singletons) must exist once per process: their address is their "
	"identity. The objects listed use different copies, so a type or entry registered through "
	"one is unknown to the other and isa/registry lookups fail across them (the MLIR TypeID "
	"split).";

static const char *split_fix(unsigned cause)
{
	if (cause & CAUSE_SYMBOLIC)
		return "An object linked -Bsymbolic (or defining the static with protected "
		       "visibility) binds to its own copy before the loader looks: link it without "
		       "-Bsymbolic for data (-Bsymbolic-functions keeps the speed), or move the "
		       "statics into one shared library every user links.";
	if (cause & CAUSE_NAMESPACE)
		return "Objects in different dlmopen namespaces never share definitions: load them "
		       "into one namespace, or pass only plain data between them.";
	return "The objects were dlopen'ed RTLD_LOCAL (Python's default for extensions), so none "
	       "sees the other's definition: load the library that owns the statics first with "
	       "RTLD_GLOBAL (sys.setdlopenflags or ctypes.CDLL(..., RTLD_GLOBAL)), or move the "
	       "statics into one shared library all of them link.";
}

/* A candidate's name by its digest hash, to find the relocations that name it. */
struct name_hash {
	uint64_t name;
	size_t k;
};

static int cmp_name_hash(const void *a, const void *b)
{
	uint64_t x = ((const struct name_hash *)a)->name, y = ((const struct name_hash *)b)->name;

	return (x > y) - (x < y);
}

/* The uses of @o's candidates by the relocations its digest kept. */
static int digest_uses(struct use_scan *s, const struct symdigest *d,
		       const struct name_hash *by_hash)
{
	for (size_t r = 0; r < d->n_refs; r++) {
		struct name_hash key = { SYMD_NAME(d->refs[r].name), 0 };
		const struct name_hash *hit =
			bsearch(&key, by_hash, s->n_names, sizeof(*by_hash), cmp_name_hash);
		unsigned type = (unsigned)(d->refs[r].place & 0xff);
		uint64_t addr = s->o->base + (d->refs[r].place >> 8);

		if (!hit)
			continue;
		if (type != R_X86_64_COPY && target__read(s->ctx->t, addr, &addr, sizeof(addr)))
			continue;
		if (push_use(s, hit->k, s->o->id, addr, false))
			return -1;
	}
	return 0;
}

/*
 * Every use of a candidate: what each referencing object's relocation resolved to (by the
 * digests' relocations, or @by_name from the tables), and the copies definers use unasked.
 */
static int collect_uses(const struct vague_list *l, struct use_scan *s, bool by_name)
{
	const struct libgraph *g = s->ctx->g;
	const struct split_name *names = s->names;
	struct name_hash *by_hash = calloc(s->n_names, sizeof(*by_hash));
	uint64_t *hashes = calloc(s->n_names, sizeof(*hashes));
	int err = -1;

	s->n = 0;
	if (!by_hash || !hashes)
		goto out;
	for (size_t k = 0; k < s->n_names; k++) {
		hashes[k] = symdigest__entry(names[k].name, NULL, false);
		by_hash[k] = (struct name_hash){ SYMD_NAME(hashes[k]), k };
	}
	qsort(by_hash, s->n_names, sizeof(*by_hash), cmp_name_hash);
	for (size_t i = 0; i < g->n; i++) {
		const struct symdigest *d;

		s->o = g->objs[i];
		if (s->o->gone || !s->o->elf || !s->o->in_link_map)
			continue;
		d = by_name ? NULL : symdigest__of(s->o->elf);
		if (d ? digest_uses(s, d, by_hash) :
			names_any(s->o->elf, hashes, s->n_names) &&
				    elfobj__foreach_dynreloc(s->o->elf, scan_use, s) < 0)
			goto out;
	}
	/* A definer linked -Bsymbolic or defining it protected uses its own copy unasked. */
	for (size_t k = 0; k < s->n_names; k++)
		for (size_t d = names[k].first; d < names[k].first + names[k].n; d++)
			if ((l->d[d].binds_own || elfobj__symbolic(g->objs[l->d[d].obj]->elf)) &&
			    push_use(s, k, l->d[d].obj, l->d[d].addr, true))
				goto out;
	if (s->n)
		qsort(s->u, s->n, sizeof(*s->u), cmp_use);
	err = 0;
out:
	free(by_hash);
	free(hashes);
	return err;
}

/* Whether some name's users ended up with different copies (uses sorted by name, address). */
static bool any_split(const struct use_scan *s)
{
	for (size_t i = 1; i < s->n; i++)
		if (s->u[i].name == s->u[i - 1].name && s->u[i].addr != s->u[i - 1].addr)
			return true;
	return false;
}

/*
 * Exported copies split: resolve each reference as the loader did (read what it wrote into
 * each GOT slot) and report the names whose users ended up with different copies. Copies that
 * nothing references by name are not splits: no two users can disagree about them.
 */
static void split_exported(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;
	struct vague_list l = { 0 };
	struct split_name *names = NULL;
	struct use_scan s = { .ctx = ctx };
	struct finding *f = NULL;
	size_t n_names = 0, splits = 0, lines = 0;
	unsigned causes = 0;

	collect_loaded(g, &l);
	names = calloc(l.n ? l.n : 1, sizeof(*names));
	if (!names)
		goto out;
	for (size_t i = 0, j; i < l.n; i = j) {
		bool libcxx = false;

		for (j = i; j < l.n && !strcmp(l.d[j].name, l.d[i].name); j++)
			libcxx |= needs_libcxx(g->objs[l.d[j].obj]->elf);
		if (j - i >= 2 && identity_by_address(l.d[i].name, libcxx))
			names[n_names++] = (struct split_name){ l.d[i].name, i, j - i };
	}
	if (!n_names)
		goto out;
	s.names = names;
	s.n_names = n_names;
	/* By the digests' hashes first; a split they show is confirmed by names (a collision). */
	if (collect_uses(&l, &s, l.by_name) ||
	    (!l.by_name && any_split(&s) && collect_uses(&l, &s, true)))
		goto out;
	for (size_t i = 0, j; i < s.n; i = j) {
		size_t copies = 1;

		for (j = i + 1; j < s.n && s.u[j].name == s.u[i].name; j++)
			copies += s.u[j].addr != s.u[j - 1].addr;
		if (copies < 2)
			continue;
		splits++;
		if (!f)
			f = findings__add(out, "dup-library", SEV_ERROR, g->pid,
					  "vague-linkage statics split between objects");
		{
			char dem[512], users[768];
			unsigned cause = describe_split(g, &l, &names[s.u[i].name], &s.u[i], j - i,
							users, sizeof(users));

			causes |= cause;
			if (lines++ < MAX_SYMBOL_LINES) {
				demangle(names[s.u[i].name].name, dem, sizeof(dem));
				finding__evidence(f, "%s: %zu copies in use: %s", dem, copies,
						  users);
			}
		}
	}
	if (f) {
		if (splits > MAX_SYMBOL_LINES)
			finding__evidence(f, "... and %zu more statics", splits - MAX_SYMBOL_LINES);
		free(f->title);
		if (asprintf(&f->title, "%zu vague-linkage static%s split between objects (%s)",
			     splits, splits == 1 ? "" : "s",
			     causes & CAUSE_SYMBOLIC  ? "bound locally by -Bsymbolic or protected "
							"visibility" :
			     causes & CAUSE_NAMESPACE ? "objects in different namespaces" :
			     causes & CAUSE_LOCAL ? "dlopen'ed RTLD_LOCAL, each resolved in its "
						    "own group" :
						    "resolved to different copies") < 0)
			f->title = strdup("vague-linkage statics split between objects");
		finding__explain(f, split_why, split_fix(causes));
	}
out:
	free(s.u);
	free(names);
	free(l.d);
}

/*
 * Hidden copies: a static library linked into several objects leaves each a local copy of its
 * statics (visible only in .symtab), used by that object alone.
 */
static void split_hidden(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;
	struct vague_list l = { .hidden = true };
	struct finding *f = NULL;
	size_t splits = 0;

	collect_loaded(g, &l);
	for (size_t i = 0, j; i < l.n; i = j) {
		for (j = i + 1; j < l.n && !strcmp(l.d[j].name, l.d[i].name); j++)
			;
		if (j - i < 2 || !identity_by_address(l.d[i].name, false))
			continue;
		if (!f)
			f = findings__add(out, "dup-library", SEV_WARNING, g->pid,
					  "vague-linkage statics split between objects");
		if (splits++ < MAX_SYMBOL_LINES) {
			char dem[512], objs[512] = "";
			size_t used = 0;

			demangle(l.d[i].name, dem, sizeof(dem));
			for (size_t k = i; k < j && used < sizeof(objs); k++)
				used += (size_t)snprintf(objs + used, sizeof(objs) - used, "%s%s",
							 k > i ? ", " : "",
							 lg_object__basename(g->objs[l.d[k].obj]));
			finding__evidence(f, "%s: %zu copies, each used by its own object (%s)",
					  dem, j - i, objs);
		}
	}
	if (f) {
		if (splits > MAX_SYMBOL_LINES)
			finding__evidence(f, "... and %zu more statics", splits - MAX_SYMBOL_LINES);
		free(f->title);
		if (asprintf(&f->title,
			     "%zu vague-linkage static%s split between objects (hidden copies linked "
			     "into each)",
			     splits, splits == 1 ? "" : "s") < 0)
			f->title = strdup("vague-linkage statics split between objects");
		finding__explain(
			f, split_why,
			"Do not link the same static library into two extensions: put it in "
			"one shared library both depend on (one SONAME), so its statics "
			"exist once.");
	}
	free(l.d);
}
void dup_library__process(const struct check_ctx *ctx, struct findings *out)
{
	same_identity(ctx, out, false);
	same_identity(ctx, out, true);
	same_file_in_namespaces(ctx, out);
	split_exported(ctx, out);
	split_hidden(ctx, out);
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
		if (j - i >= 2 && identity_by_address(l.d[i].name, false) &&
		    splits++ < MAX_SYMBOL_LINES) {
			char dem[512];

			if (!f)
				f = findings__add(
					out, "dup-library", SEV_WARNING, 0,
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

			if (!b || strcmp(b, bid) ||
			    elfobj__inode(files[j].elf) == elfobj__inode(files[i].elf))
				continue;
			if (!f) {
				f = findings__add(
					out, "dup-library", SEV_WARNING, 0,
					"one build (build-id %.12s) present as several files", bid);
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
