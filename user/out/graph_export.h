/* SPDX-License-Identifier: GPL-2.0 */
/* The library graph as JSON (docs/libs-schema.md) and as Graphviz. */
#ifndef DLSCOPE_GRAPH_EXPORT_H
#define DLSCOPE_GRAPH_EXPORT_H

#include <jansson.h>
#include <stdio.h>

struct libgraph;
struct lg_object;
struct lv_kinds;

/* One process's graph as a JSON object (new reference), or NULL when out of memory. */
json_t *libgraph__to_json(const struct libgraph *g);
/*
 * Print a Graphviz digraph; roles as fill colours, dlopen roots as boxes. @roles NULL: every
 * object and edge; else the objects with a role of those kinds and the chains that loaded them
 * (libview__role_subgraph). 0 or -ENOMEM.
 */
struct runtime_list;
/*
 * With @runtimes (one list per graph, or NULL), the objects of a kind that has more than one
 * runtime in a process are drawn in red: the collisions. Objects whose package is known are
 * grouped in a box per package.
 */
int libgraph__print_dot(const struct libgraph *const *graphs, size_t n,
			const struct runtime_list *runtimes, const struct lv_kinds *roles, FILE *f);

#endif
