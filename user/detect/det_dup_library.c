// SPDX-License-Identifier: GPL-2.0
/*
 * dup-library: one library loaded more than once (a SONAME from two files, a build twice, one
 * file in two namespaces: det_dup_copies.c), and vague-linkage statics that the loader did not
 * unify, so two objects each use their own copy of what must be one (template statics,
 * TypeIDs, typeinfo).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "demangle.h"
#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
#include "procmaps.h"
#include "static_identity.h"
#include "symdigest.h"
#include "target.h"

#define MAX_SYMBOL_LINES 10

/*
 * ---- Split statics ----
 *
 * A vague-linkage static (a template's static member, an inline variable, a function-local
 * static of an inline function) must exist once per process: the loader makes it so by binding
 * every reference to the first definition in the lookup scope. Objects that resolved their
 * references in different scopes (RTLD_LOCAL groups, namespaces), or bound their own (-Bsymbolic,
 * protected visibility), each use their own copy. That changes what the program does only where
 * a copy's identity shows: its state written through one copy and read through another (a
 * writable static), or its address compared (TypeIDs, typeinfo under libc++). Harmless by
 * construction, and never reported: read-only data (constexpr tables, relro), internal linkage
 * (one copy per translation unit, as the language defines; the digests leave it out), copies
 * within one object (the same), and copies whose symbol versions never bind to each other.
 */

/* Where a split is judged: every object of a check, or those the live collector reported. */
struct split_scope {
	const struct libgraph *g;
	const struct target *t; /* for the GOT slots; NULL: no use is known */
	const bool *reported;	/* live: by object id, asked once per arrival; NULL: every one */
	int added;		/* live: the object that just arrived (-1: none) */
};

static bool in_scope(const struct split_scope *sc, const struct lg_object *o)
{
	return !o->gone && o->elf && o->in_link_map && (!sc->reported || sc->reported[o->id]);
}

/* One vague-linkage definition: a candidate for a split. */
struct vague_def {
	const char *name, *version; /* version: NULL when unversioned */
	unsigned int obj;
	uint64_t addr, size; /* where this object's own copy lives in the target */
	bool binds_own;	     /* protected visibility: its object's references skip the lookup */
	bool writable;	     /* writable at run time (outside RELRO) */
};

struct vague_list {
	struct vague_def *d;
	size_t n, cap;
	unsigned int obj;
	uint64_t base;
	const struct elf_object *elf; /* the object read by name */
	bool hidden;  /* collect .symtab hidden/local definitions instead of exported ones */
	bool by_name; /* read from the symbol tables, not the digests (typeinfo under libc++) */
};

static int push_def(struct vague_list *l, const struct symd_vague *v)
{
	if (l->n == l->cap) {
		if (ARRAY_GROW(l->d, l->cap, 256))
			return -1;
	}
	l->d[l->n++] = (struct vague_def){ v->name, v->version,	  l->obj,     l->base + v->value,
					   v->size, v->binds_own, v->writable };
	return 0;
}

/*
 * Exported definitions read from .dynsym by name, typeinfo included (libc++). The names live as
 * long as the object's tables, which outlive the check.
 */
static int collect_vague(const char *name, const char *version, const GElf_Sym *sym, void *ctx)
{
	struct vague_list *l = ctx;
	struct symd_vague v = {
		.name = (char *)name,
		.version = (char *)version,
		.value = sym->st_value,
		.size = sym->st_size,
		.binds_own = GELF_ST_VISIBILITY(sym->st_other) == STV_PROTECTED,
	};

	if (!symdigest__vague_candidate(name, sym, false, true))
		return 0;
	v.writable = elfobj__writable_at(l->elf, sym->st_value);
	return push_def(l, &v);
}

/* lint: hidden definitions read from .symtab, as the digests keep them. */
static int collect_hidden(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct vague_list *l = ctx;
	struct symd_vague v = { .name = (char *)name,
				.value = sym->st_value,
				.size = sym->st_size };

	if (!symdigest__vague_candidate(name, sym, true, false))
		return 0;
	v.writable = elfobj__writable_at(l->elf, sym->st_value);
	return push_def(l, &v);
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

static bool seen_inode(const struct split_scope *sc, size_t upto, uint64_t inode)
{
	for (size_t j = 0; j < upto; j++)
		if (in_scope(sc, sc->g->objs[j]) && sc->g->objs[j]->inode == inode)
			return true;
	return false;
}

static bool any_needs_libcxx(const struct split_scope *sc)
{
	for (size_t i = 0; i < sc->g->n; i++)
		if (in_scope(sc, sc->g->objs[i]) && needs_libcxx(sc->g->objs[i]->elf))
			return true;
	return false;
}

/* Every loaded file's definitions, once per file. */
static void collect_loaded(const struct split_scope *sc, struct vague_list *l)
{
	const struct libgraph *g = sc->g;
	/* Typeinfo is a candidate only under libc++, and digests leave it out: read the tables. */
	bool tables = l->by_name = !l->hidden && any_needs_libcxx(sc);

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		const struct symdigest *d;
		const struct symd_vague *v;
		size_t n;

		/* Each file once: the same file in two namespaces is reported as such. */
		if (!in_scope(sc, o) || seen_inode(sc, i, o->inode))
			continue;
		l->obj = o->id;
		l->base = o->base;
		l->elf = o->elf;
		if (tables) {
			elfobj__foreach_defined_versioned(o->elf, collect_vague, l);
			continue;
		}
		d = symdigest__of(o->elf);
		v = !d ? NULL : l->hidden ? d->hidden : d->vague;
		n = !d ? 0 : l->hidden ? d->n_hidden : d->n_vague;
		for (size_t k = 0; k < n; k++)
			if (push_def(l, &v[k]))
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

/* A name defined more than once whose copies' identity shows (copies_matter). */
struct split_name {
	const char *name;
	size_t first, n;		  /* its definitions in the sorted vague_list */
	const struct identity_rule *rule; /* the table's entry; NULL: by the section */
};

/*
 * Whether copies of the name defined at l->d[first..first+n) can make the program behave
 * differently: the table says its address is compared (always, or under libc++), or by default
 * every copy can be written at run time. One read-only copy makes the static a constant (a
 * COPY relocation's place in the executable's .bss does not make it less so).
 */
static bool copies_matter(const struct vague_list *l, size_t first, size_t n, bool libcxx,
			  const struct identity_rule **rule)
{
	const struct identity_rule *e = static_identity__rule(l->d[first].name);

	*rule = e;
	if (e)
		return e->id == ID_ADDRESS || (e->id == ID_ADDRESS_LIBCXX && libcxx);
	for (size_t k = first; k < first + n; k++)
		if (!l->d[k].writable)
			return false;
	return true;
}

/* An object that really uses a copy: the address its reference resolved to. */
struct static_use {
	size_t name; /* index into the split_name array */
	unsigned int obj;
	uint64_t addr;
	bool own; /* bound to its own copy without a lookup (-Bsymbolic, protected) */
};

struct use_scan {
	const struct split_scope *sc;
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
		if (ARRAY_GROW(s->u, s->cap, 64))
			return -1;
	}
	s->u[s->n++] = (struct static_use){ name, obj, addr, own };
	return 0;
}

/*
 * The address a relocation at @place left: the GOT slot or data word the loader filled, or for
 * a COPY relocation the place itself. 0 when unknown, or not relocated yet (a live collector
 * can look while the loader works): no use.
 */
static uint64_t resolved(const struct use_scan *s, uint64_t place, unsigned type)
{
	uint64_t addr = place;

	if (type != R_X86_64_COPY &&
	    (!s->sc->t || target__read(s->sc->t, place, &addr, sizeof(addr))))
		return 0;
	return addr;
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
	uint64_t addr;

	if (type != R_X86_64_GLOB_DAT && type != R_X86_64_64 && type != R_X86_64_COPY)
		return 0;
	n = bsearch(name, s->names, s->n_names, sizeof(*s->names), cmp_split_name);
	if (!n || !(addr = resolved(s, s->o->base + offset, type)))
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

/* The definition whose copy lies at @addr, or NULL when none does. */
static const struct vague_def *copy_def(const struct vague_list *l, const struct split_name *n,
					uint64_t addr)
{
	for (size_t k = n->first; k < n->first + n->n; k++)
		if (addr >= l->d[k].addr && addr < l->d[k].addr + l->d[k].size)
			return &l->d[k];
	return NULL;
}

/*
 * Whether two definitions' versions let one bind a reference to the other. glibc matches an
 * unversioned reference with a default (@@) version and a versioned one with an unversioned
 * definition, so only two different version names never meet (libLLVM-14's @@LLVM_14 beside
 * libLLVM-15's @@LLVM_15: two libraries by design).
 */
static bool versions_meet(const char *a, const char *b)
{
	return !a || !b || !strcmp(a, b);
}

/*
 * Whether the uses @u[0..nu) of one name (sorted by address) are a split: two copies in use
 * that could be one, leaving out the uses by the object @skip and of its copy (-1: none).
 */
static bool split_among(const struct vague_list *l, const struct split_name *n,
			const struct static_use *u, size_t nu, int skip)
{
	for (size_t i = 0; i < nu; i++) {
		const struct vague_def *a = copy_def(l, n, u[i].addr);

		if ((int)u[i].obj == skip || (a && (int)a->obj == skip))
			continue;
		for (size_t j = i + 1; j < nu; j++) {
			const struct vague_def *b = copy_def(l, n, u[j].addr);

			if (u[j].addr == u[i].addr || (int)u[j].obj == skip ||
			    (b && (int)b->obj == skip))
				continue;
			if (versions_meet(a ? a->version : NULL, b ? b->version : NULL))
				return true;
		}
	}
	return false;
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
	const char *versions[8];
	size_t n_versions = 0;
	bool unversioned = false, writable = true;

	buf[0] = '\0';
	for (size_t i = 0; i < nu && used < len; i++) {
		const struct vague_def *def = copy_def(l, n, u[i].addr);
		const struct lg_object *user = g->objs[u[i].obj];

		if (!i || u[i].addr != u[i - 1].addr) {
			if (def)
				used += (size_t)snprintf(buf + used, len - used,
							 "%s%s's copy used by ", i ? "; " : "",
							 lg_object__basename(g->objs[def->obj]));
			else
				used += (size_t)snprintf(buf + used, len - used,
							 "%sthe copy at 0x%" PRIx64 " used by ",
							 i ? "; " : "", u[i].addr);
			writable &= def && def->writable;
			if (!def || !def->version) {
				unversioned = true;
			} else {
				size_t k = 0;

				while (k < n_versions && strcmp(versions[k], def->version))
					k++;
				if (k == n_versions && n_versions < 8)
					versions[n_versions++] = def->version;
			}
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
		if (g->objs[libgraph__root(g, user->id)]->origin == LG_DLOPEN)
			cause |= CAUSE_LOCAL;
	}
	/* What shows that the split matters, and that the copies could be one. */
	if (used < len)
		used += (size_t)snprintf(buf + used, len - used, " [%s%s%s%s",
					 writable ? "writable at run time" : "",
					 writable && n->rule ? ", " : "",
					 n->rule ? "compared by address: " : "",
					 n->rule ? n->rule->label : "");
	for (size_t k = 0; k < n_versions && used < len; k++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", k ? ", " : "; versions ",
					 versions[k]);
	if (used < len)
		snprintf(buf + used, len - used, "%s]",
			 !n_versions ? "; unversioned" :
			 unversioned ? ", unversioned" :
				       "");
	return cause;
}

static const char split_why[] =
	"Template static members, inline variables and the function-local statics of inline "
	"functions (TypeID-style singletons) must exist once per process. The objects listed use "
	"different copies of statics that are written at run time or whose address is compared, "
	"so state written through one copy is not seen through the other, and a type or entry "
	"registered through one is unknown to the other: isa/registry lookups fail across them "
	"(the MLIR TypeID split). Their symbol versions let one definition serve all of them.";

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
		uint64_t addr;

		if (!hit || !(addr = resolved(s, s->o->base + (d->refs[r].place >> 8),
					      (unsigned)(d->refs[r].place & 0xff))))
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
	const struct libgraph *g = s->sc->g;
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
		if (!in_scope(s->sc, s->o))
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
 * each GOT slot) and report the names whose users ended up with different copies, when the
 * copies matter (copies_matter) and could be one (split_among). Copies that nothing references
 * by name are not splits: no two users can disagree about them. Live, only what the object
 * that just arrived made a split.
 */
static void split_exported(const struct split_scope *sc, struct findings *out)
{
	const struct libgraph *g = sc->g;
	struct vague_list l = { 0 };
	struct split_name *names = NULL;
	struct use_scan s = { .sc = sc };
	struct finding *f = NULL;
	size_t n_names = 0, splits = 0, lines = 0;
	unsigned causes = 0;

	collect_loaded(sc, &l);
	names = calloc(l.n ? l.n : 1, sizeof(*names));
	if (!names)
		goto out;
	for (size_t i = 0, j; i < l.n; i = j) {
		const struct identity_rule *rule;
		bool libcxx = false;

		for (j = i; j < l.n && !strcmp(l.d[j].name, l.d[i].name); j++)
			libcxx |= needs_libcxx(g->objs[l.d[j].obj]->elf);
		if (j - i >= 2 && copies_matter(&l, i, j - i, libcxx, &rule))
			names[n_names++] = (struct split_name){ l.d[i].name, i, j - i, rule };
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
		const struct split_name *n = &names[s.u[i].name];
		size_t copies = 1;

		for (j = i + 1; j < s.n && s.u[j].name == s.u[i].name; j++)
			copies += s.u[j].addr != s.u[j - 1].addr;
		if (copies < 2 || !split_among(&l, n, &s.u[i], j - i, -1) ||
		    (sc->added >= 0 && split_among(&l, n, &s.u[i], j - i, sc->added)))
			continue;
		splits++;
		if (!f)
			f = findings__add(out, "dup-library", SEV_ERROR, g->pid,
					  "vague-linkage statics split between objects");
		{
			char dem[512], users[1024];
			unsigned cause =
				describe_split(g, &l, n, &s.u[i], j - i, users, sizeof(users));

			causes |= cause;
			if (lines++ < MAX_SYMBOL_LINES) {
				demangle(n->name, dem, sizeof(dem));
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
 * Hidden copies (a static library linked into several objects, its symbols hidden or localized
 * by a version script) are used by their own object alone, by construction: nothing shows that
 * the objects ever exchange what the static identifies, and most such statics are private on
 * purpose (a lookup table such as agg's sRGB_conv_base<T>::lut, a runtime's own state). Only a
 * static whose address the table says is an identity (a TypeID) is reported, as a warning.
 */
static bool hidden_matters(const char *name, const struct identity_rule **rule)
{
	*rule = static_identity__rule(name);
	return *rule && (*rule)->id == ID_ADDRESS;
}

static const char hidden_why[] =
	"Each object carries its own hidden copy of a static whose address is an identity (a "
	"TypeID): a type or entry registered through one object's copy is unknown to the other, "
	"so isa/registry lookups fail when the objects pass such values to each other (the MLIR "
	"TypeID split).";

/* The hidden copies of the objects in @sc; live, only those the object that arrived adds. */
static void split_hidden(const struct split_scope *sc, struct findings *out)
{
	const struct libgraph *g = sc->g;
	struct vague_list l = { .hidden = true };
	struct finding *f = NULL;
	size_t splits = 0;

	collect_loaded(sc, &l);
	for (size_t i = 0, j; i < l.n; i = j) {
		const struct identity_rule *rule;
		bool added = false;

		for (j = i; j < l.n && !strcmp(l.d[j].name, l.d[i].name); j++)
			added |= (int)l.d[j].obj == sc->added;
		/* Live: reported when the object that arrived made the second copy. */
		if (j - i < 2 || !hidden_matters(l.d[i].name, &rule) ||
		    (sc->added >= 0 && (!added || j - i > 2)))
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
			finding__evidence(f,
					  "%s: %zu copies, each used by its own object (%s) "
					  "[compared by address: %s]",
					  dem, j - i, objs, rule->label);
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
			f, hidden_why,
			"Do not link the same static library into two extensions: put it in "
			"one shared library both depend on (one SONAME), so its statics "
			"exist once.");
	}
	free(l.d);
}

void dup_library__process(const struct check_ctx *ctx, struct findings *out)
{
	struct split_scope sc = { .g = ctx->g, .t = ctx->t, .added = -1 };

	dup_library__copies(ctx, out);
	split_exported(&sc, out);
	split_hidden(&sc, out);
}

/* How many objects of @sc but @o define the name of the digest entry @e (by its hash). */
static size_t others_defining(const struct split_scope *sc, const struct lg_object *o, uint64_t e,
			      size_t enough)
{
	size_t n = 0;

	for (size_t i = 0; i < sc->g->n && n < enough; i++) {
		const struct lg_object *x = sc->g->objs[i];
		const struct symdigest *d;

		if (x != o && in_scope(sc, x) && x->inode != o->inode &&
		    (d = symdigest__of(x->elf)) && symdigest__has(d->defs, d->n_defs, e, false))
			n++;
	}
	return n;
}

/*
 * Whether the object that arrived can take part in an exported split: it defines a candidate
 * another object defines too, or references one that two others define. Most objects do
 * neither, and a live collector then spends nothing more on them.
 */
static bool arrival_involved(const struct live_ctx *lc, const struct split_scope *sc,
			     const struct lg_object *o, const struct symdigest *d)
{
	/* Each name asks every object: libtorch_cpu's 10,000 names among 339 objects take
	 * 13 ms, which a thread held in its loader should not wait for whole. */
	for (size_t k = 0; k < d->n_vague; k++) {
		if (k % 256 == 255)
			live_ctx__pause(lc);
		if (others_defining(sc, o, symdigest__entry(d->vague[k].name, NULL, false), 1))
			return true;
	}
	for (size_t r = 0; r < d->n_refs; r++) {
		if (r % 256 == 255)
			live_ctx__pause(lc);
		if (others_defining(sc, o, d->refs[r].name, 2) >= 2)
			return true;
	}
	return false;
}

/*
 * Live (watch, record): the split rules of check on the objects reported so far, each time one
 * arrives, reporting what that object made a split. The GOT slots are read from the process as
 * check reads them.
 */
void dup_library__on_object(const struct live_ctx *lc, const struct lg_object *o,
			    struct findings *out)
{
	struct split_scope sc = { .g = lc->g, .added = o ? (int)o->id : -1 };
	const struct identity_rule *rule;
	const struct symdigest *d;
	struct target *t = NULL;
	bool *reported;
	char why[256];

	if (!lc->g || !o || o->gone || !o->elf || !o->in_link_map ||
	    !(reported = calloc(lc->g->n, sizeof(*reported))))
		return;
	for (size_t i = 0; i < lc->g->n; i++)
		reported[i] = lc->reported(lc, lc->g->objs[i]);
	sc.reported = reported;
	if (!in_scope(&sc, o) || !(d = symdigest__of(o->elf)))
		goto out;
	for (size_t k = 0; k < d->n_hidden; k++)
		if (hidden_matters(d->hidden[k].name, &rule)) {
			split_hidden(&sc, out);
			break;
		}
	/* Under libc++ typeinfo counts, and the digests leave it out: no shortcut then. */
	if ((!any_needs_libcxx(&sc) && !arrival_involved(lc, &sc, o, d)) ||
	    target__open(lc->g->pid, &t, why, sizeof(why)))
		goto out;
	sc.t = t;
	split_exported(&sc, out);
	target__free(t);
out:
	free(reported);
}

/* lint: hidden copies of a static whose address is an identity, in two files or more. */
static void split_statics_files(const struct lint_file *files, size_t n, struct findings *out)
{
	struct vague_list l = { .hidden = true };
	struct finding *f = NULL;
	size_t splits = 0;

	/*
	 * The tables, not the digests: a lint of a whole tree would fill the digest store with
	 * files no check reads. The same candidates as the digests keep (collect_hidden).
	 */
	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		for (size_t j = 0; j < i && !dup; j++)
			dup = elfobj__inode(files[j].elf) == elfobj__inode(files[i].elf);
		if (dup || elfobj__type(files[i].elf) != ET_DYN)
			continue;
		l.obj = (unsigned int)i;
		l.elf = files[i].elf;
		elfobj__foreach_defined(files[i].elf, ELFOBJ_SYMTAB, collect_hidden, &l);
	}
	if (l.n)
		qsort(l.d, l.n, sizeof(*l.d), cmp_def);
	for (size_t i = 0; i < l.n;) {
		const struct identity_rule *rule;
		size_t j = i + 1, copies = 0, first = l.n;

		while (j < l.n && !strcmp(l.d[j].name, l.d[i].name))
			j++;
		/* A file that defines the name twice holds two translation units' own. */
		for (size_t k = i; k < j; k++)
			if ((k == i || l.d[k - 1].obj != l.d[k].obj) &&
			    (k + 1 == j || l.d[k + 1].obj != l.d[k].obj) && !copies++)
				first = k;
		if (copies >= 2 && hidden_matters(l.d[i].name, &rule) &&
		    splits++ < MAX_SYMBOL_LINES) {
			char dem[512];

			if (!f)
				f = findings__add(
					out, "dup-library", SEV_WARNING, 0,
					"vague-linkage statics linked into several objects");
			demangle(l.d[i].name, dem, sizeof(dem));
			finding__evidence(f,
					  "%s: a hidden copy in %s and %zu other object%s "
					  "[compared by address: %s]",
					  dem, files[l.d[first].obj].path, copies - 1,
					  copies > 2 ? "s" : "", rule->label);
		}
		i = j;
	}
	if (splits > MAX_SYMBOL_LINES)
		finding__evidence(f, "... and %zu more symbols", splits - MAX_SYMBOL_LINES);
	finding__explain(f,
			 "Each object has its own copy of a static whose address is an identity (a "
			 "TypeID): a process loading two of them splits it.",
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
