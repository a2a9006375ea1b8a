/* SPDX-License-Identifier: GPL-2.0 */
/* The library graph as JSON (docs/libs-schema.md) and as Graphviz. */
#ifndef DLSCOPE_GRAPH_EXPORT_H
#define DLSCOPE_GRAPH_EXPORT_H

#include <jansson.h>
#include <stdio.h>

#include "roles.h"

struct libgraph;
struct lg_object;
struct obj_roles;
struct lv_kinds;

/* One process's graph as a JSON object (new reference), or NULL when out of memory. */
json_t *libgraph__to_json(const struct libgraph *g);
json_t *lg_object__to_json(const struct lg_object *o);
/* An object's roles as the ROLE[] array of docs/libs-schema.md (new reference). */
json_t *obj_roles__to_json(const struct obj_roles *roles);
/*
 * Print a Graphviz digraph; roles as fill colours, dlopen roots as boxes. @roles NULL: every
 * object and edge; else the objects with a role of those kinds and the chains that loaded them
 * (libview__role_subgraph). 0 or -ENOMEM.
 */
int libgraph__print_dot(const struct libgraph *const *graphs, size_t n,
			const struct lv_kinds *roles, FILE *f);
/* "OpenMP runtime: GNU libgomp 5.0.1", for text output. */
void obj_role__describe(const struct obj_role *r, char *buf, size_t len);

#endif
