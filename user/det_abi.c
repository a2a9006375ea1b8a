// SPDX-License-Identifier: GPL-2.0
/*
 * abi-mismatch: what an object needs that nothing loaded provides. Undefined non-weak symbols
 * that no object of its namespace defines (lazy binding turns each into a crash at first call),
 * version nodes the loaded provider lacks, and objects from a JIT/extension cache built
 * against another build of a library they link.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
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
		size_t ncap = ds->cap ? ds->cap * 2 : 4096;
		struct def *nd = realloc(ds->d, ncap * sizeof(*nd));

		if (!nd)
			return -1;
		ds->d = nd;
		ds->cap = ncap;
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
		finding__evidence(s->f, "needs %s%s%s: %s", dem, version ? "@" : "",
				  version ? version : "",
				  any ? "defined, but not with that version" :
					"defined by no loaded object");
	}
	return 0;
}

/* Cache directories of JIT-compiled extensions, from the target's environment and defaults. */
static bool from_jit_cache(const struct check_ctx *ctx, const char *path)
{
	static const char *vars[] = { "TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR",
				      "TVM_FFI_CACHE_DIR", "CUDA_CACHE_PATH", "XDG_CACHE_HOME" };
	static const char *parts[] = { "/.cache/", "/torch_extensions/", "/tvm-ffi/",
				       "/.triton/" };
	char dir[PATH_MAX];

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (!target__getenv(ctx->t, vars[i], dir, sizeof(dir)) && dir[0] &&
		    !strncmp(path, dir, strlen(dir)))
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
		finding__evidence(v->u->f, "needs version %s of %s; the loaded %s lacks it", version,
				  file, p->path);
	}
	return 0;
}

void abi_mismatch__process(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;

	for (unsigned ns = 0; ns < g->n_namespaces; ns++) {
		struct defs ds = { 0 };

		for (size_t i = 0; i < g->n; i++) {
			const struct lg_object *o = g->objs[i];

			if (o->gone || !o->elf || o->ns != ns || !o->in_link_map)
				continue;
			ds.obj = o->id;
			elfobj__foreach_defined_versioned(o->elf, collect_def, &ds);
		}
		if (ds.n)
			qsort(ds.d, ds.n, sizeof(*ds.d), cmp_def);
		for (size_t i = 0; i < g->n; i++) {
			const struct lg_object *o = g->objs[i];
			struct undef_scan s = { .g = g, .ds = &ds, .o = o, .out = out };
			struct verneed_scan v = { ctx, &s };
			char origin[256];

			if (o->gone || !o->elf || o->ns != ns || !o->in_link_map)
				continue;
			s.cached = from_jit_cache(ctx, o->path);
			elfobj__foreach_undefined(o->elf, check_undef, &s);
			elfobj__foreach_verneed(o->elf, check_verneed, &v);
			if (!s.f)
				continue;
			if (s.missing > MAX_SYMBOL_LINES)
				finding__evidence(s.f, "... and %zu more", s.missing - MAX_SYMBOL_LINES);
			lg_object__describe_origin(g, o->id, origin, sizeof(origin));
			finding__evidence(s.f, "#%u %s, loaded by %s", o->id, o->path, origin);
			free(s.f->title);
			if (asprintf(&s.f->title, "%s%s needs %zu symbol%s nothing loaded provides%s%s",
				     s.cached ? "JIT-cache object " : "", lg_object__basename(o),
				     s.missing, s.missing == 1 ? "" : "s", s.first ? ", e.g. " : "",
				     s.first ? s.first : "") < 0)
				s.f->title = strdup(o->path);
			free(s.first);
		}
		free(ds.d);
	}
}
