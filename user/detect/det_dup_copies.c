// SPDX-License-Identifier: GPL-2.0
/*
 * dup-library's first half: one library loaded more than once, as a SONAME from two files, one
 * build (build-id) from two files, or one file in two dlmopen namespaces. Its statics half, the
 * copies of vague-linkage statics, is det_dup_library.c.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
#include "owners.h"

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

void dup_library__copies(const struct check_ctx *ctx, struct findings *out)
{
	same_identity(ctx, out, false);
	same_identity(ctx, out, true);
	same_file_in_namespaces(ctx, out);
}
