// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "libgraph.h"
#include "libview.h"

/* In the loader's lists: mapped-only objects have no edges, gone ones were dlclose'd. */
static bool in_forest(const struct lg_object *o)
{
	return !o->gone && o->origin != LG_MAPPED_ONLY;
}

/* Breadth-first from the sources already queued in @queue[*head..*tail), along loaded_by. */
static void walk(struct libview *v, unsigned int *queue, size_t *head, size_t *tail)
{
	const struct libgraph *g = v->g;

	while (*head < *tail) {
		const struct lg_object *x = g->objs[queue[(*head)++]];

		for (size_t i = 0; i < x->n_children; i++) {
			unsigned int c = x->children[i];

			if (c >= g->n || v->loaded_by[c] != x->id || v->depth[c] != LV_NONE)
				continue;
			v->depth[c] = v->depth[x->id] + 1;
			queue[(*tail)++] = c;
		}
	}
}

int libview__build(const struct libgraph *g, struct libview *v)
{
	size_t n = g->n ? g->n : 1, head = 0, tail = 0;
	unsigned int n_ns = g->n_namespaces, *queue;

	memset(v, 0, sizeof(*v));
	v->g = g;
	v->loaded_by = malloc(n * sizeof(*v->loaded_by));
	v->depth = malloc(n * sizeof(*v->depth));
	v->below = calloc(n, sizeof(*v->below));
	v->roots = malloc(n * sizeof(*v->roots));
	queue = malloc(n * sizeof(*queue));
	if (!v->loaded_by || !v->depth || !v->below || !v->roots || !queue) {
		free(queue);
		libview__free(v);
		return -ENOMEM;
	}
	/* Who loaded each object is the graph's one rule (libgraph__loaded_by). */
	for (size_t i = 0; i < g->n; i++) {
		unsigned int by = in_forest(g->objs[i]) ? libgraph__loaded_by(g, (unsigned int)i) :
							  LV_NONE;

		v->loaded_by[i] = by < g->n && in_forest(g->objs[by]) ? by : LV_NONE;
		v->depth[i] = LV_NONE;
		if (g->objs[i]->ns >= n_ns)
			n_ns = g->objs[i]->ns + 1;
	}
	/* Roots namespace by namespace in the loader's order, each with what it loaded. */
	for (unsigned int ns = 0; ns < n_ns; ns++) {
		for (size_t i = 0; i < g->n; i++) {
			const struct lg_object *o = g->objs[i];

			if (o->ns != ns || !in_forest(o) || v->loaded_by[i] != LV_NONE)
				continue;
			v->depth[i] = 0;
			v->roots[v->n_roots++] = (unsigned int)i;
			queue[tail++] = (unsigned int)i;
			walk(v, queue, &head, &tail);
		}
	}
	/*
	 * Every loaded_by chain ends at a root (the loader came earlier in the loader's order):
	 * children come after their parent in the walk, so the subtrees sum backwards.
	 */
	for (size_t k = tail; k-- > 0;) {
		unsigned int x = queue[k];

		if (v->loaded_by[x] != LV_NONE)
			v->below[v->loaded_by[x]] += v->below[x] + 1;
	}
	free(queue);
	return 0;
}

void libview__free(struct libview *v)
{
	free(v->loaded_by);
	free(v->depth);
	free(v->below);
	free(v->roots);
	memset(v, 0, sizeof(*v));
}

size_t libview__other_parents(const struct libview *v, unsigned int id)
{
	const struct lg_object *o = v->g->objs[id];

	return o->n_parents - (v->loaded_by[id] != LV_NONE);
}

int lv_kinds__parse(struct lv_kinds *ks, const char *arg, char *why, size_t whylen)
{
	memset(ks, 0, sizeof(*ks));
	if (!arg) {
		for (int k = 0; k < ROLE__COUNT; k++)
			ks->on[k] = role_kind__is_runtime(k);
		return 0;
	}
	if (!strcmp(arg, "all")) {
		for (int k = 0; k < ROLE__COUNT; k++)
			ks->on[k] = true;
		return 0;
	}
	for (const char *p = arg; *p;) {
		size_t len = strcspn(p, ",");
		int k;

		for (k = 0; k < ROLE__COUNT; k++)
			if (strlen(role_kind__id(k)) == len && !strncmp(p, role_kind__id(k), len))
				break;
		if (k == ROLE__COUNT) {
			int n = snprintf(why, whylen, "unknown role kind '%.*s' (kinds: all",
					 (int)len, p);

			for (k = 0; k < ROLE__COUNT && n > 0 && (size_t)n < whylen; k++)
				n += snprintf(why + n, whylen - (size_t)n, ", %s",
					      role_kind__id(k));
			if (n > 0 && (size_t)n < whylen)
				snprintf(why + n, whylen - (size_t)n, ")");
			return -EINVAL;
		}
		ks->on[k] = true;
		p += len;
		p += *p == ',';
	}
	return 0;
}

const struct obj_role *lv_kinds__match(const struct lv_kinds *ks, const struct lg_object *o)
{
	const struct obj_roles *r = lg_object__roles(o);

	for (unsigned int i = 0; i < r->n; i++)
		if (r->r[i].kind < ROLE__COUNT && ks->on[r->r[i].kind])
			return &r->r[i];
	return NULL;
}

static int push_edge(struct lv_subgraph *s, unsigned int from, unsigned int to, bool loaded)
{
	return ARRAY_PUSH(s->e, s->n_edges, s->cap_edges, ((struct lv_edge){ from, to, loaded }));
}

/* reach[a * k + b]: kept object a needs kept object b, directly or through any others. */
static int kept_reachability(const struct libview *v, const unsigned int *kept, size_t k,
			     const unsigned int *slot, bool *reach)
{
	const struct libgraph *g = v->g;
	unsigned int *seen = calloc(g->n, sizeof(*seen)), *queue = malloc(g->n * sizeof(*queue));

	if (!seen || !queue) {
		free(seen);
		free(queue);
		return -ENOMEM;
	}
	for (size_t a = 0; a < k; a++) {
		size_t head = 0, tail = 0;
		unsigned int stamp = (unsigned int)a + 1;

		queue[tail++] = kept[a];
		seen[kept[a]] = stamp;
		while (head < tail) {
			const struct lg_object *x = g->objs[queue[head++]];

			for (size_t i = 0; i < x->n_children; i++) {
				unsigned int c = x->children[i];

				if (c >= g->n || seen[c] == stamp || g->objs[c]->gone)
					continue;
				seen[c] = stamp;
				queue[tail++] = c;
				if (slot[c] != LV_NONE)
					reach[a * k + slot[c]] = true;
			}
		}
	}
	free(seen);
	free(queue);
	return 0;
}

int libview__role_subgraph(const struct libview *v, const struct lv_kinds *ks,
			   struct lv_subgraph *out)
{
	const struct libgraph *g = v->g;
	unsigned int *kept = NULL, *slot = NULL;
	bool *reach = NULL;
	size_t k = 0;
	int err = -ENOMEM;

	memset(out, 0, sizeof(*out));
	out->keep = calloc(g->n ? g->n : 1, sizeof(*out->keep));
	kept = malloc((g->n ? g->n : 1) * sizeof(*kept));
	slot = malloc((g->n ? g->n : 1) * sizeof(*slot));
	if (!out->keep || !kept || !slot)
		goto out;
	for (size_t i = 0; i < g->n; i++) {
		if (g->objs[i]->gone || !lv_kinds__match(ks, g->objs[i]))
			continue;
		for (unsigned int x = (unsigned int)i; x != LV_NONE && !out->keep[x];
		     x = v->loaded_by[x])
			out->keep[x] = true;
	}
	for (size_t i = 0; i < g->n; i++) {
		slot[i] = out->keep[i] ? (unsigned int)k : LV_NONE;
		if (out->keep[i])
			kept[k++] = (unsigned int)i;
	}
	out->n_nodes = k;
	reach = calloc(k ? k * k : 1, sizeof(*reach));
	if (!reach || kept_reachability(v, kept, k, slot, reach))
		goto out;
	err = 0;
	for (size_t b = 0; b < k && !err; b++)
		if (v->loaded_by[kept[b]] != LV_NONE)
			err = push_edge(out, v->loaded_by[kept[b]], kept[b], true);
	for (size_t a = 0; a < k && !err; a++) {
		for (size_t b = 0; b < k && !err; b++) {
			bool between = false;

			if (a == b || !reach[a * k + b] || v->loaded_by[kept[b]] == kept[a])
				continue;
			for (size_t c = 0; c < k && !between; c++)
				between = c != a && c != b && reach[a * k + c] && reach[c * k + b];
			if (!between)
				err = push_edge(out, kept[a], kept[b], false);
		}
	}
out:
	free(kept);
	free(slot);
	free(reach);
	if (err)
		lv_subgraph__free(out);
	return err;
}

void lv_subgraph__free(struct lv_subgraph *s)
{
	free(s->keep);
	free(s->e);
	memset(s, 0, sizeof(*s));
}
