// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "elfobj.h"
#include "graph_export.h"
#include "libgraph.h"
#include "libview.h"
#include "objrecord.h"
#include "pkgindex.h"
#include "runtimes.h"

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *hex(uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_string(buf);
}

static json_t *ids_json(const unsigned int *ids, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, json_integer(ids[i]));
	return arr;
}

/* libs --json's record of @o: where it is mapped, its graph's edges, how it was found. */
static json_t *object_json(const struct libgraph *g, const struct lg_object *o)
{
	json_t *needed = json_array(), *unresolved = json_array(), *own;

	if (o->elf)
		for (size_t i = 0; i < elfobj__n_needed(o->elf); i++)
			json_array_append_new(needed, json_string(elfobj__needed(o->elf, i)));
	for (size_t i = 0; i < o->n_unresolved; i++)
		json_array_append_new(unresolved, json_string(o->unresolved[i]));
	own = json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:b, s:b, s:b, s:o}", "id",
			(json_int_t)o->id, "build_id",
			str_or_null(o->elf ? elfobj__build_id(o->elf) : NULL), "base", hex(o->base),
			"link_map", o->lm_addr ? hex(o->lm_addr) : json_null(), "parents",
			ids_json(o->parents, o->n_parents), "children",
			ids_json(o->children, o->n_children), "needed", needed, "unresolved_needed",
			unresolved, "in_link_map", o->in_link_map, "in_maps", o->in_maps, "deleted",
			o->deleted, "gone", o->gone, "error", str_or_null(o->error));
	return own ? obj_record__new(g, o, false, own) : NULL;
}

static json_t *id_or_null(unsigned int id)
{
	return id == LV_NONE ? json_null() : json_integer(id);
}

json_t *libgraph__to_json(const struct libgraph *g)
{
	json_t *objs = json_array();
	struct libview v;

	if (libview__build(g, &v)) {
		json_decref(objs);
		return NULL;
	}
	for (size_t i = 0; objs && i < g->n; i++) {
		json_t *o = object_json(g, g->objs[i]);

		/* The loader's forest, which the text tree and --roles chains are drawn from. */
		json_object_set_new(o, "loaded_by", id_or_null(v.loaded_by[i]));
		json_object_set_new(o, "depth", id_or_null(v.depth[i]));
		json_object_set_new(o, "below", json_integer(v.below[i]));
		json_array_append_new(objs, o);
	}
	libview__free(&v);
	return json_pack("{s:i, s:s, s:s, s:s, s:b, s:i, s:o, s:o, s:o}", "pid", (json_int_t)g->pid,
			 "comm", g->comm, "exe", g->exe, "source",
			 g->from_link_map ? "link-map" :
			 g->static_exe	  ? "static" :
					    "maps",
			 "consistent", g->consistent, "namespaces", (json_int_t)g->n_namespaces,
			 "r_debug", g->r_debug ? hex(g->r_debug) : json_null(), "r_brk",
			 g->r_brk ? hex(g->r_brk) : json_null(), "objects", objs);
}

static const char *role_colour(enum role_kind k)
{
	static const char *colours[ROLE__COUNT] = {
		[ROLE_OPENMP] = "#f4a261",	[ROLE_BLAS] = "#e9c46a",
		[ROLE_CXX_RUNTIME] = "#90be6d", [ROLE_CUDA] = "#76b900",
		[ROLE_PYTHON] = "#8ecae6",	[ROLE_LIBC] = "#dddddd",
		[ROLE_LOADER] = "#cccccc",	[ROLE_TBB] = "#b5838d",
		[ROLE_ONEDNN] = "#cdb4db",
	};

	/* A kind without a colour of its own still stands out from the plain objects. */
	return k < ROLE__COUNT && colours[k] ? colours[k] : "#cdb4db";
}

static void dot_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
}

/* Is @o one of two runtimes of one kind in its process? */
static bool collides(const struct runtime_list *rl, const struct lg_object *o)
{
	for (size_t i = 0; rl && i < rl->n; i++) {
		size_t same = 0;

		if (rl->r[i].obj != o->id)
			continue;
		for (size_t k = 0; k < rl->n; k++)
			same += rl->r[k].role.kind == rl->r[i].role.kind;
		if (same > 1)
			return true;
	}
	return false;
}

static void dot_node(FILE *f, const struct libgraph *g, const struct lg_object *o,
		     const struct obj_role *role, const struct runtime_list *rl)
{
	char desc[160] = "";

	if (role)
		obj_role__describe(role, desc, sizeof(desc));
	fprintf(f, "\t\tp%d_o%u [label=\"", g->pid, o->id);
	dot_escape(f, lg_object__basename(o));
	if (o->ns)
		fprintf(f, " [ns %u]", o->ns);
	if (desc[0]) {
		fputs("\\n", f);
		dot_escape(f, desc);
	}
	fprintf(f, "\", fillcolor=\"%s\"%s%s];\n", role ? role_colour(role->kind) : "#ffffff",
		o->origin == LG_DLOPEN	   ? ", shape=box" :
		o->origin == LG_EXECUTABLE ? ", shape=doubleoctagon" :
					     "",
		collides(rl, o) ? ", color=\"red\", penwidth=3, fontcolor=\"red\"" : "");
}

/*
 * The nodes @keep names (NULL: every object), boxed by owning package: one cluster per package,
 * the objects of no known package outside any.
 */
static void dot_nodes(FILE *f, const struct libgraph *g, const bool *keep,
		      const struct lv_kinds *ks, const struct runtime_list *rl)
{
	bool *done = calloc(g->n ? g->n : 1, sizeof(*done));
	unsigned int cluster = 0;

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		const struct pkg_owner *pkg = o->pkg;
		char name[512];

		if (o->gone || (keep && !keep[i]) || (done && done[i]))
			continue;
		if (pkg && done) {
			pkg_owner__describe(pkg, name, sizeof(name));
			fprintf(f, "\t\tsubgraph cluster_%d_pkg%u {\n\t\t\tlabel=\"", g->pid,
				cluster++);
			dot_escape(f, name);
			fprintf(f, "\";\n\t\t\tstyle=rounded;\n\t\t\tcolor=\"#888888\";\n");
		}
		for (size_t k = i; k < g->n; k++) {
			const struct lg_object *q = g->objs[k];
			const struct obj_roles *r = lg_object__roles(q);

			if (q->gone || (keep && !keep[k]) || (done && done[k]))
				continue;
			/* Same package: same owner record, or same name and version. */
			if (k != i && (!pkg || !q->pkg ||
				       (q->pkg != pkg && (strcmp(q->pkg->name, pkg->name) ||
							  strcmp(q->pkg->version, pkg->version)))))
				continue;
			if (done)
				done[k] = true;
			fputs(pkg ? "\t" : "", f);
			dot_node(f, g, q, ks ? lv_kinds__match(ks, q) : r->n ? &r->r[0] : NULL, rl);
			if (!pkg || !done)
				break;
		}
		if (pkg && done)
			fprintf(f, "\t\t}\n");
	}
	free(done);
}

/* Every object and every DT_NEEDED edge. */
static void dot_whole(FILE *f, const struct libgraph *g, const struct runtime_list *rl)
{
	dot_nodes(f, g, NULL, NULL, rl);
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		for (size_t j = 0; j < o->n_children; j++)
			fprintf(f, "\t\tp%d_o%u -> p%d_o%u;\n", g->pid, o->id, g->pid,
				o->children[j]);
	}
}

/* The runtimes, the chains that loaded them, and a transitive reduction of what they need. */
static int dot_roles(FILE *f, const struct libgraph *g, const struct lv_kinds *ks,
		     const struct runtime_list *rl)
{
	struct lv_subgraph s;
	struct libview v;

	if (libview__build(g, &v))
		return -ENOMEM;
	if (libview__role_subgraph(&v, ks, &s)) {
		libview__free(&v);
		return -ENOMEM;
	}
	dot_nodes(f, g, s.keep, ks, rl);
	for (size_t i = 0; i < s.n_edges; i++)
		fprintf(f, "\t\tp%d_o%u -> p%d_o%u%s;\n", g->pid, s.e[i].from, g->pid, s.e[i].to,
			s.e[i].loaded ? "" : " [style=dashed]");
	lv_subgraph__free(&s);
	libview__free(&v);
	return 0;
}

int libgraph__print_dot(const struct libgraph *const *graphs, size_t n,
			const struct runtime_list *runtimes, const struct lv_kinds *roles, FILE *f)
{
	int err = 0;

	fprintf(f, "digraph dlscope {\n\trankdir=LR;\n\tnode [shape=ellipse, style=filled, "
		   "fontname=\"monospace\"];\n");
	for (size_t k = 0; k < n && !err; k++) {
		const struct libgraph *g = graphs[k];

		fprintf(f, "\tsubgraph cluster_%d {\n\t\tlabel=\"%d (", g->pid, g->pid);
		dot_escape(f, g->comm);
		if (roles)
			fputs("): runtimes and the chains that loaded them\nsolid: its DT_NEEDED "
			      "loaded it; dashed: also needs it (directly or through objects not shown)",
			      f);
		else
			fputc(')', f);
		fprintf(f, "\";\n");
		if (roles)
			err = dot_roles(f, g, roles, runtimes ? &runtimes[k] : NULL);
		else
			dot_whole(f, g, runtimes ? &runtimes[k] : NULL);
		fprintf(f, "\t}\n");
	}
	fprintf(f, "}\n");
	return err;
}
