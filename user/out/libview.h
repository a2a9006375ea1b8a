/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Views of a library graph made for reading: the loader's spanning forest (which object's
 * DT_NEEDED brought each one in), the runtime objects with the chains that loaded them, and the
 * small subgraph that connects them. A process with `import torch` has 300 objects and 1,300
 * DT_NEEDED edges; these views show each object once and each runtime with one chain.
 */
#ifndef DLSCOPE_LIBVIEW_H
#define DLSCOPE_LIBVIEW_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "roles.h"

struct libgraph;
struct lg_object;

#define LV_NONE UINT_MAX

/*
 * The forest the loader walked: each object under the object whose DT_NEEDED loaded it, by the
 * graph's one rule (libgraph__loaded_by: the first object before it in the loader's order that
 * needs it; none, and it is a root: the program, a preload, a dlopen). Roots are in link-map
 * order, namespace by namespace.
 */
struct libview {
	const struct libgraph *g;
	unsigned int *loaded_by; /* [id]: forest parent; LV_NONE for roots and objects not in it */
	unsigned int *depth;	 /* [id]: 0 for roots; LV_NONE: gone, or mapped in no link map */
	unsigned int *below;	 /* [id]: objects in its subtree, itself excluded */
	unsigned int *roots;	 /* in print order: namespace by namespace, link-map order */
	size_t n_roots;
};

/* 0 or -ENOMEM. */
int libview__build(const struct libgraph *g, struct libview *v);
void libview__free(struct libview *v);
/* Objects other than its forest parent whose DT_NEEDED names @id. */
size_t libview__other_parents(const struct libview *v, unsigned int id);

/* Which role kinds a view shows. */
struct lv_kinds {
	bool on[ROLE__COUNT];
};

/*
 * @arg: NULL for the runtime kinds, "all", or kind ids separated by commas ("openmp,python").
 * Returns 0, or -EINVAL with a one-line reason in @why.
 */
int lv_kinds__parse(struct lv_kinds *ks, const char *arg, char *why, size_t whylen);
/* The first role of @o whose kind is in @ks, or NULL. */
const struct obj_role *lv_kinds__match(const struct lv_kinds *ks, const struct lg_object *o);

/* One edge of the role subgraph. loaded: the forest edge (its DT_NEEDED loaded @to). */
struct lv_edge {
	unsigned int from, to;
	bool loaded;
};

struct lv_subgraph {
	bool *keep; /* [id] */
	size_t n_nodes;
	struct lv_edge *e;
	size_t n_edges, cap_edges;
};

/*
 * The objects with a role in @ks, the forest chains that loaded them, and the edges among those:
 * every forest edge, plus "@from needs @to, directly or through objects left out" wherever no
 * other kept object lies between the two (a transitive reduction). 0 or -ENOMEM.
 */
int libview__role_subgraph(const struct libview *v, const struct lv_kinds *ks,
			   struct lv_subgraph *out);
void lv_subgraph__free(struct lv_subgraph *s);

#endif
