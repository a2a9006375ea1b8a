// SPDX-License-Identifier: GPL-2.0
/*
 * abi-mismatch: what an object needs that nothing loaded provides. Undefined non-weak symbols
 * that no object of its namespace defines (lazy binding turns each into a crash at first call),
 * version nodes the loaded provider lacks, and objects from a JIT/extension cache built
 * against another build of a library they link.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "array.h"
#include "demangle.h"
#include "detector.h"
#include "elfobj.h"
#include "idxmap.h"
#include "libgraph.h"
#include "symdigest.h"
#include "target.h"

#define MAX_SYMBOL_LINES 10

struct def {
	const char *name;
	const char *version;
	unsigned int obj;
};

struct defs {
	struct def *d;
	size_t n, cap;
	unsigned int obj;
};

static int collect_def(const char *name, const char *version, const GElf_Sym *sym, void *ctx)
{
	struct defs *ds = ctx;

	if (ds->n == ds->cap) {
		if (ARRAY_GROW(ds->d, ds->cap, 4096))
			return -1;
	}
	ds->d[ds->n++] = (struct def){ name, version, ds->obj };
	return 0;
}

static int cmp_def(const void *a, const void *b)
{
	return strcmp(((const struct def *)a)->name, ((const struct def *)b)->name);
}

static const struct def *find_first(const struct defs *ds, const char *name)
{
	size_t lo = 0, hi = ds->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ds->d[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ds->n && !strcmp(ds->d[lo].name, name) ? &ds->d[lo] : NULL;
}

struct undef_scan {
	const struct libgraph *g;
	const struct defs *ds;
	struct finding *f;
	const struct lg_object *o;
	size_t missing;
	char *first; /* first missing symbol, for the title */
	struct findings *out;
	bool cached;
};

static const char cache_why[] =
	"This object comes from a JIT/extension build cache. Such caches are often keyed only on "
	"a library's major.minor version, so an object compiled against one build (another patch "
	"release, CUDA/ROCm variant or C++ ABI) is silently reused by another: symbols it needs "
	"are missing and layouts it assumes have changed, which crashes or computes garbage "
	"instead of failing cleanly.";
static const char cache_fix[] =
	"Delete the cached object so it is rebuilt against the library loaded now, and key the "
	"cache on the full build identity (full version with its local tag, C++ ABI flag, the "
	"build-id of the library it links); do not share one cache directory between "
	"environments.";

static struct finding *ensure_finding(struct undef_scan *s)
{
	if (!s->f) {
		s->f = findings__add(s->out, "abi-mismatch", SEV_ERROR, s->g->pid, "%s",
				     s->o->path);
		if (s->cached)
			finding__explain(s->f, cache_why, cache_fix);
		else
			finding__explain(
				s->f,
				"The loader binds functions lazily: an undefined symbol that nothing "
				"loaded defines stays unbound until the first call, which then "
				"aborts the process (\"symbol lookup error\"). The object was built "
				"against another version of a library than the one loaded beside it.",
				"Rebuild the object against the libraries it is loaded with, or load "
				"the library version it was built for; `dlscope lint` and the "
				"evidence above name the symbols.");
	}
	return s->f;
}

static int check_undef(const char *name, const char *version, bool weak, void *ctx)
{
	struct undef_scan *s = ctx;
	const struct def *d;
	char dem[256];
	bool any = false, versioned_match = false, provider_versioned = false;

	if (weak)
		return 0;
	d = find_first(s->ds, name);
	for (; d && d < s->ds->d + s->ds->n && !strcmp(d->name, name); d++) {
		const struct lg_object *p = s->g->objs[d->obj];

		any = true;
		if (!version || (d->version && !strcmp(d->version, version)))
			versioned_match = true;
		if (p->elf && elfobj__n_verdefs(p->elf))
			provider_versioned = true;
	}
	if (any && (versioned_match || !provider_versioned))
		return 0;
	s->missing++;
	if (!s->first)
		s->first = strdup(name);
	ensure_finding(s);
	if (s->missing <= MAX_SYMBOL_LINES) {
		demangle(name, dem, sizeof(dem));
		finding__evidence(
			s->f, "needs %s%s%s: %s", dem, version ? "@" : "", version ? version : "",
			any ? "defined, but not with that version" : "defined by no loaded object");
	}
	return 0;
}

/* Cache directories of JIT-compiled extensions, from the target's environment and defaults. */
static const char *const jit_cache_vars[] = { "TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR",
					      "TVM_FFI_CACHE_DIR", "CUDA_CACHE_PATH",
					      "XDG_CACHE_HOME" };
#define N_JIT_CACHE_VARS (sizeof(jit_cache_vars) / sizeof(jit_cache_vars[0]))

/* The target's cache directories, read once per check (not once per object: 5 reads of environ). */
struct jit_dirs {
	char dir[N_JIT_CACHE_VARS][PATH_MAX];
};

static void jit_dirs__read(const struct target *t, struct jit_dirs *d)
{
	for (size_t i = 0; i < N_JIT_CACHE_VARS; i++)
		if (!t || target__getenv(t, jit_cache_vars[i], d->dir[i], sizeof(d->dir[i])))
			d->dir[i][0] = '\0';
}

static bool from_jit_cache(const struct jit_dirs *d, const char *path)
{
	static const char *parts[] = { "/.cache/", "/torch_extensions/", "/tvm-ffi/", "/.triton/" };

	for (size_t i = 0; i < N_JIT_CACHE_VARS; i++)
		if (d->dir[i][0] && !strncmp(path, d->dir[i], strlen(d->dir[i])))
			return true;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (strstr(path, parts[i]))
			return true;
	return false;
}

struct verneed_scan {
	const struct check_ctx *ctx;
	struct undef_scan *u;
};

static int check_verneed(const char *file, const char *version, void *ctx)
{
	struct verneed_scan *v = ctx;
	const struct libgraph *g = v->ctx->g;
	const struct lg_object *o = v->u->o;

	for (size_t i = 0; i < o->n_children; i++) {
		const struct lg_object *p = g->objs[o->children[i]];
		bool has = false;

		if (!p->elf || !p->soname || strcmp(p->soname, file) || !elfobj__n_verdefs(p->elf))
			continue;
		for (size_t k = 0; k < elfobj__n_verdefs(p->elf) && !has; k++)
			has = !strcmp(elfobj__verdef(p->elf, k), version);
		if (has)
			return 0;
		v->u->missing++;
		ensure_finding(v->u);
		finding__evidence(v->u->f, "needs version %s of %s; the loaded %s lacks it",
				  version, file, p->path);
	}
	return 0;
}

/* An object abi-mismatch judges: loaded in @ns with every DT_NEEDED library it asked for. */
static bool judged(const struct lg_object *o, unsigned ns)
{
	/*
	 * An object whose DT_NEEDED libraries are not all loaded cannot be judged: its symbols
	 * may come from them. That is a process caught while the loader starts it (mid-exec),
	 * not a mismatch.
	 */
	return !o->gone && o->elf && o->ns == ns && o->in_link_map && !o->n_unresolved;
}

static bool provides(const struct lg_object *o, unsigned ns)
{
	return !o->gone && o->elf && o->ns == ns && o->in_link_map;
}

/*
 * A set of digest entries, indexed by the base map (user/base/idxmap.h): the names judged
 * objects need, each with what the namespace defines of it, and the versioned definitions of
 * those names. Sorting 60,000 needs and searching them 240,000 times was most of the screen.
 */
struct entry_set {
	uint64_t *key;	/* the entries, in the order added */
	uint8_t *flags; /* of each */
	size_t cap;	/* at most that many: index.n of them */
	struct idxmap index;
};

#define NEED_DEFINED 1
#define NEED_VERSIONED_PROVIDER 2

static int set_init(struct entry_set *s, size_t n)
{
	size_t slots = 1024;

	/* Half of the slots the set had by its own open addressing: the same bound. */
	while (slots < 2 * n)
		slots *= 2;
	s->cap = slots / 2;
	s->key = calloc(s->cap, sizeof(*s->key));
	s->flags = calloc(s->cap, sizeof(*s->flags));
	return s->key && s->flags && !idxmap__reserve(&s->index, s->cap) ? 0 : -ENOMEM;
}

struct entry_key {
	const struct entry_set *s;
	uint64_t e;
};

static bool entry_is(size_t idx, const void *ctx)
{
	const struct entry_key *k = ctx;

	return k->s->key[idx] == k->e;
}

/* The index of @e in @s, or IDXMAP_NONE. */
static size_t set_find(const struct entry_set *s, uint64_t e)
{
	struct entry_key k = { s, e };

	return idxmap__find(&s->index, idxmap__hash_u64(e), entry_is, &k);
}

/* Add @e: 0, or -1 when the set is full (a bound, not a resize) or out of memory. */
static int set_add(struct entry_set *s, uint64_t e)
{
	struct entry_key k = { s, e };
	int added;

	if (s->index.n == s->cap)
		return set_find(s, e) == IDXMAP_NONE ? -1 : 0;
	added = idxmap__insert(&s->index, idxmap__hash_u64(e), s->index.n, entry_is, &k, NULL);
	if (added > 0)
		s->key[s->index.n - 1] = e;
	return added < 0 ? -1 : 0;
}

static void set_free(struct entry_set *s)
{
	free(s->key);
	free(s->flags);
	idxmap__free(&s->index);
}

/*
 * The rule of check_undef on the symbol digests, by hash: marks in @suspect the objects that
 * may miss a symbol, which alone are then judged by name. false when out of memory.
 */
static bool screen(const struct libgraph *g, unsigned ns, bool *suspect)
{
	struct entry_set need = { 0 }, versioned = { 0 };
	size_t n_undefs = 0;
	bool ok = false;

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		const struct symdigest *d = provides(o, ns) ? symdigest__of(o->elf) : NULL;

		n_undefs += d && judged(o, ns) ? d->n_undefs : 0;
	}
	/* Versioned definitions of needed names: a few versions of each at most. */
	if (set_init(&need, n_undefs) || set_init(&versioned, 2 * n_undefs))
		goto out;
	for (size_t i = 0; i < g->n; i++) {
		const struct symdigest *d =
			judged(g->objs[i], ns) ? symdigest__of(g->objs[i]->elf) : NULL;

		for (size_t k = 0; d && k < d->n_undefs; k++)
			if (!SYMD_WEAK(d->undefs[k]) && set_add(&need, SYMD_NAME(d->undefs[k])) < 0)
				goto out;
	}
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		const struct symdigest *d = provides(o, ns) ? symdigest__of(o->elf) : NULL;
		uint8_t provider = d && elfobj__n_verdefs(o->elf) ? NEED_VERSIONED_PROVIDER : 0;

		for (size_t k = 0; d && k < d->n_defs; k++) {
			uint64_t e = d->defs[k];
			size_t at = set_find(&need, SYMD_NAME(e));

			if (at == IDXMAP_NONE)
				continue;
			need.flags[at] |= NEED_DEFINED | provider;
			if (SYMD_VERSION(e) && set_add(&versioned, e) < 0)
				goto out;
		}
	}
	for (size_t i = 0; i < g->n; i++) {
		const struct symdigest *d =
			judged(g->objs[i], ns) ? symdigest__of(g->objs[i]->elf) : NULL;

		for (size_t k = 0; d && k < d->n_undefs && !suspect[i]; k++) {
			uint64_t u = d->undefs[k];
			size_t at;
			uint8_t f;

			if (SYMD_WEAK(u))
				continue;
			at = set_find(&need, SYMD_NAME(u));
			f = at == IDXMAP_NONE ? 0 : need.flags[at];
			suspect[i] = !(f & NEED_DEFINED) ||
				     (SYMD_VERSION(u) && (f & NEED_VERSIONED_PROVIDER) &&
				      set_find(&versioned, u) == IDXMAP_NONE);
		}
	}
	ok = true;
out:
	set_free(&need);
	set_free(&versioned);
	return ok;
}

void abi_mismatch__process(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;
	struct jit_dirs *jd = malloc(sizeof(*jd));
	bool *suspect = calloc(g->n ? g->n : 1, sizeof(*suspect));

	if (!jd || !suspect)
		goto out;
	jit_dirs__read(ctx->t, jd);
	for (unsigned ns = 0; ns < g->n_namespaces; ns++) {
		struct defs ds = { 0 };
		bool any = false;

		memset(suspect, 0, g->n * sizeof(*suspect));
		if (!screen(g, ns, suspect))
			memset(suspect, 1, g->n * sizeof(*suspect));
		for (size_t i = 0; i < g->n && !any; i++)
			any = suspect[i];
		/* Names only where the hashes say a symbol may be missing: they confirm it. */
		for (size_t i = 0; any && i < g->n; i++) {
			const struct lg_object *o = g->objs[i];

			if (!provides(o, ns))
				continue;
			ds.obj = o->id;
			elfobj__foreach_defined_versioned(o->elf, collect_def, &ds);
		}
		if (ds.n)
			qsort(ds.d, ds.n, sizeof(*ds.d), cmp_def);
		for (size_t i = 0; i < g->n; i++) {
			const struct lg_object *o = g->objs[i];
			const struct symdigest *d;
			struct undef_scan s = { .g = g, .ds = &ds, .o = o, .out = out };
			struct verneed_scan v = { ctx, &s };
			char origin[256];

			if (!judged(o, ns))
				continue;
			d = symdigest__of(o->elf);
			s.cached = from_jit_cache(jd, o->path);
			if (suspect[i])
				elfobj__foreach_undefined(o->elf, check_undef, &s);
			for (size_t k = 0; d && k < d->n_verneed; k++)
				check_verneed(d->verneed[k].file, d->verneed[k].version, &v);
			if (!s.f)
				continue;
			if (s.missing > MAX_SYMBOL_LINES)
				finding__evidence(s.f, "... and %zu more",
						  s.missing - MAX_SYMBOL_LINES);
			lg_object__describe_origin(g, o->id, origin, sizeof(origin));
			finding__evidence(s.f, "#%u %s, loaded by %s", o->id, o->path, origin);
			free(s.f->title);
			if (asprintf(&s.f->title,
				     "%s%s needs %zu symbol%s nothing loaded provides%s%s",
				     s.cached ? "JIT-cache object " : "", lg_object__basename(o),
				     s.missing, s.missing == 1 ? "" : "s", s.first ? ", e.g. " : "",
				     s.first ? s.first : "") < 0)
				s.f->title = strdup(o->path);
			free(s.first);
		}
		free(ds.d);
	}
out:
	free(suspect);
	free(jd);
}

/* lint: version nodes a file needs that the library it would be loaded with lacks. */
static const char *const system_libdirs[] = { "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
					      "/lib64", "/usr/lib64", "/usr/local/lib" };

struct lint_verneed {
	const struct lint_file *files;
	size_t n, self;
	struct elf_object **system; /* providers opened from the system's directories, by name */
	char **system_names;
	size_t n_system, cap_system, cap_system_names;
	struct findings *out;
	struct finding *f;
};

/* The provider of SONAME @file: among the linted files first, then the system's libraries. */
static const struct elf_object *find_provider(struct lint_verneed *v, const char *file,
					      const char **where)
{
	char path[PATH_MAX];
	struct elf_object *o;

	for (size_t i = 0; i < v->n; i++) {
		const char *soname = elfobj__soname(v->files[i].elf);

		if (i != v->self && soname && !strcmp(soname, file)) {
			*where = v->files[i].path;
			return v->files[i].elf;
		}
	}
	for (size_t i = 0; i < v->n_system; i++)
		if (!strcmp(v->system_names[i], file)) {
			*where = v->system[i] ? elfobj__path(v->system[i]) : NULL;
			return v->system[i];
		}
	o = NULL;
	for (size_t d = 0; d < sizeof(system_libdirs) / sizeof(system_libdirs[0]) && !o; d++) {
		snprintf(path, sizeof(path), "%s/%s", system_libdirs[d], file);
		o = elfobj__open(path);
	}
	/* Remember misses too, so each name is searched once. */
	if (ARRAY_RESERVE(v->system, v->cap_system, v->n_system + 1) ||
	    ARRAY_RESERVE(v->system_names, v->cap_system_names, v->n_system + 1) ||
	    !(v->system_names[v->n_system] = strdup(file))) {
		elfobj__free(o);
		return NULL;
	}
	v->system[v->n_system++] = o;
	*where = o ? elfobj__path(o) : NULL;
	return o;
}

static int lint_check_verneed(const char *file, const char *version, void *ctx)
{
	struct lint_verneed *v = ctx;
	const struct elf_object *p;
	const char *where = NULL, *newest = NULL;

	p = find_provider(v, file, &where);
	if (!p || !elfobj__n_verdefs(p))
		return 0;
	for (size_t k = 0; k < elfobj__n_verdefs(p); k++) {
		const char *d = elfobj__verdef(p, k);

		if (!strcmp(d, version))
			return 0;
		if (!strncmp(d, version, strcspn(version, "0123456789")) &&
		    (!newest || version_cmp(d, newest) > 0))
			newest = d;
	}
	if (!v->f) {
		v->f = findings__add(v->out, "abi-mismatch", SEV_ERROR, 0,
				     "%s needs versions its libraries lack here",
				     v->files[v->self].path);
		finding__explain(
			v->f,
			"The loader refuses to load an object that needs a version node its "
			"provider does not define (\"version `GLIBCXX_3.4.32' not found\"): it "
			"was built against a newer library than the one it would be loaded "
			"with.",
			"Build it against the oldest library it must run with (a manylinux "
			"toolchain), ship the newer library with it, or upgrade the system's.");
	}
	finding__evidence(v->f, "needs %s of %s; %s provides %s%s", version, file, where,
			  newest ? "up to " : "other versions only", newest ? newest : "");
	return 0;
}

void abi_mismatch__files(const struct lint_file *files, size_t n, struct findings *out)
{
	struct lint_verneed v = { .files = files, .n = n, .out = out };

	for (size_t i = 0; i < n; i++) {
		v.self = i;
		v.f = NULL;
		elfobj__foreach_verneed(files[i].elf, lint_check_verneed, &v);
	}
	for (size_t i = 0; i < v.n_system; i++) {
		elfobj__free(v.system[i]);
		free(v.system_names[i]);
	}
	free(v.system);
	free(v.system_names);
}
