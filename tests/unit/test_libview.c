// SPDX-License-Identifier: GPL-2.0
/* The loader's forest, role kinds and the role subgraph on hand-made library graphs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libgraph.h"
#include "libview.h"
#include "tap.h"

#define LIB "/usr/lib/x86_64-linux-gnu/"

/* An object without a file (no roles), or with a real one when @host is given (its roles). */
static unsigned int obj(struct libgraph *g, const char *name, const char *host,
			enum lg_origin origin)
{
	static uint64_t base = 0x10000;
	struct lg_object *o = libgraph__add(g, 0, name, host, base, base + 0x100, 0);

	base += 0x10000;
	o->origin = origin;
	return o->id;
}

/* A DT_NEEDED edge, set by hand: these objects have no files to read it from. */
static void need(struct libgraph *g, unsigned int from, unsigned int to)
{
	struct lg_object *p = g->objs[from], *c = g->objs[to];

	p->children = realloc(p->children, (p->n_children + 1) * sizeof(*p->children));
	p->children[p->n_children++] = to;
	c->parents = realloc(c->parents, (c->n_parents + 1) * sizeof(*c->parents));
	c->parents[c->n_parents++] = from;
}

static void test_forest(void)
{
	struct libgraph *g = libgraph__new(1, "synthetic");
	unsigned int exe, a, b, c, d, r, e, x, y, z;
	struct libview v;

	exe = obj(g, "/bin/exe", NULL, LG_EXECUTABLE);
	a = obj(g, "/lib/libA.so", NULL, LG_NEEDED);
	b = obj(g, "/lib/libB.so", NULL, LG_NEEDED);
	c = obj(g, "/lib/libC.so", NULL, LG_NEEDED);
	d = obj(g, "/lib/libD.so", NULL, LG_NEEDED);
	r = obj(g, "/lib/plugin.so", NULL, LG_DLOPEN);
	e = obj(g, "/lib/libE.so", NULL, LG_NEEDED);
	x = obj(g, "/lib/libX.so", NULL, LG_NEEDED);
	y = obj(g, "/lib/libY.so", NULL, LG_NEEDED);
	z = obj(g, "/lib/libZ.so", NULL, LG_NEEDED);
	/* exe needs A and B; A needs C which needs D; B needs C and D. */
	need(g, exe, a);
	need(g, exe, b);
	need(g, a, c);
	need(g, c, d);
	need(g, b, c);
	need(g, b, d);
	/* A later dlopen needs C (there already), E, and Z which was dlclose'd. */
	need(g, r, c);
	need(g, r, e);
	need(g, r, z);
	g->objs[z]->gone = true;
	/* X and Y need each other and nothing else needs them. */
	need(g, x, y);
	need(g, y, x);

	CHECK(libview__build(g, &v) == 0, "forest built");
	CHECK(v.loaded_by[exe] == LV_NONE && v.depth[exe] == 0, "the executable is a root");
	CHECK(v.loaded_by[c] == a && v.depth[c] == 2, "C: loaded by A, the first to need it");
	CHECK(v.loaded_by[d] == b && v.depth[d] == 2,
	      "D: loaded by B at depth 2 (breadth first), not under C at depth 3");
	CHECK(v.below[exe] == 4 && v.below[a] == 1 && v.below[b] == 1 && v.below[c] == 0,
	      "subtree sizes");
	CHECK(libview__other_parents(&v, c) == 2, "C is also needed by B and the plugin");
	CHECK(libview__other_parents(&v, d) == 1, "D is also needed by C");
	CHECK(v.loaded_by[r] == LV_NONE && v.loaded_by[e] == r && v.below[r] == 1,
	      "the dlopen root loaded only what was new");
	CHECK(v.depth[z] == LV_NONE && v.loaded_by[z] == LV_NONE, "a gone object is not in it");
	CHECK(v.loaded_by[x] == LV_NONE && v.loaded_by[y] == x && v.depth[y] == 1,
	      "a cycle nothing needs gets a root");
	CHECK(libview__other_parents(&v, x) == 1, "the cycle root counts its parent");
	CHECK(v.n_roots == 3 && v.roots[0] == exe && v.roots[1] == r && v.roots[2] == x,
	      "roots in link-map order, cycles last");
	libview__free(&v);
	libgraph__free(g);
}

static void test_kinds(void)
{
	struct lv_kinds ks;
	char why[256] = "";

	CHECK(lv_kinds__parse(&ks, NULL, why, sizeof(why)) == 0, "default kinds");
	CHECK(ks.on[ROLE_OPENMP] && ks.on[ROLE_BLAS] && ks.on[ROLE_CXX_RUNTIME] &&
		      !ks.on[ROLE_LIBC] && !ks.on[ROLE_LOADER] && !ks.on[ROLE_PYTHON],
	      "the default is the runtimes: no libc, loader or Python");
	for (int k = 0; k < ROLE__COUNT; k++)
		if (k != ROLE_LIBC && k != ROLE_LOADER && k != ROLE_PYTHON && !ks.on[k])
			CHECK(0, role_kind__id(k));
	CHECK(lv_kinds__parse(&ks, "all", why, sizeof(why)) == 0 && ks.on[ROLE_LIBC] &&
		      ks.on[ROLE_PYTHON] && ks.on[ROLE_OPENMP],
	      "all");
	CHECK(lv_kinds__parse(&ks, "python,openmp", why, sizeof(why)) == 0 && ks.on[ROLE_PYTHON] &&
		      ks.on[ROLE_OPENMP] && !ks.on[ROLE_BLAS],
	      "a list");
	CHECK(lv_kinds__parse(&ks, "openmp,gpus", why, sizeof(why)) == -EINVAL &&
		      strstr(why, "'gpus'") && strstr(why, "cxx-runtime"),
	      "an unknown kind is named, with the known ones");
	CHECK(lv_kinds__parse(&ks, ",openmp", why, sizeof(why)) == -EINVAL, "an empty kind");
}

static bool has_edge(const struct lv_subgraph *s, unsigned int from, unsigned int to, bool loaded)
{
	for (size_t i = 0; i < s->n_edges; i++)
		if (s->e[i].from == from && s->e[i].to == to && s->e[i].loaded == loaded)
			return true;
	return false;
}

static void test_role_subgraph(void)
{
	struct libgraph *g = libgraph__new(1, "synthetic");
	unsigned int p, q, s, m, gomp, cxx, libc, other;
	struct lv_subgraph sg;
	struct lv_kinds ks;
	struct libview v;
	char why[64];

	p = obj(g, "/lib/plugin.so", NULL, LG_DLOPEN);
	q = obj(g, "/lib/libQ.so", NULL, LG_NEEDED);
	s = obj(g, "/lib/libS.so", NULL, LG_NEEDED);
	m = obj(g, "/lib/libM.so", NULL, LG_NEEDED);
	cxx = obj(g, LIB "libstdc++.so.6", LIB "libstdc++.so.6", LG_NEEDED);
	gomp = obj(g, LIB "libgomp.so.1", LIB "libgomp.so.1", LG_NEEDED);
	libc = obj(g, LIB "libc.so.6", LIB "libc.so.6", LG_NEEDED);
	other = obj(g, "/lib/unrelated.so", NULL, LG_DLOPEN);
	CHECK(g->objs[gomp]->elf && g->objs[cxx]->elf && g->objs[libc]->elf,
	      "system libgomp, libstdc++ and libc read");
	need(g, p, q);
	need(g, p, s);
	need(g, q, m);
	need(g, q, cxx);
	need(g, m, gomp);
	need(g, m, cxx);
	need(g, s, cxx);
	need(g, cxx, libc);
	need(g, other, libc);

	libview__build(g, &v);
	lv_kinds__parse(&ks, NULL, why, sizeof(why));
	CHECK(libview__role_subgraph(&v, &ks, &sg) == 0, "role subgraph");
	CHECK(sg.n_nodes == 5 && sg.keep[p] && sg.keep[q] && sg.keep[m] && sg.keep[gomp] &&
		      sg.keep[cxx],
	      "the runtimes and their chains; not S, libc or an unrelated root");
	CHECK(has_edge(&sg, p, q, true) && has_edge(&sg, q, m, true) &&
		      has_edge(&sg, m, gomp, true) && has_edge(&sg, q, cxx, true),
	      "the chain edges");
	CHECK(has_edge(&sg, m, cxx, false), "M needs libstdc++ too: dashed");
	CHECK(!has_edge(&sg, p, gomp, false) && !has_edge(&sg, p, cxx, false) &&
		      !has_edge(&sg, q, gomp, false),
	      "what a kept object already leads to is not repeated");
	CHECK(sg.n_edges == 5, "five edges");
	lv_subgraph__free(&sg);

	lv_kinds__parse(&ks, "libc", why, sizeof(why));
	libview__role_subgraph(&v, &ks, &sg);
	CHECK(sg.n_nodes == 4 && sg.keep[libc] && sg.keep[cxx] && sg.keep[q] && sg.keep[p] &&
		      !sg.keep[other],
	      "libc alone: its own chain, through libstdc++");
	lv_subgraph__free(&sg);
	libview__free(&v);
	libgraph__free(g);
}

int main(void)
{
	test_forest();
	test_kinds();
	test_role_subgraph();
	return tap_done();
}
