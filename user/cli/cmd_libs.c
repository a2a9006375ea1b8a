// SPDX-License-Identifier: GPL-2.0
/* dlscope libs: print the library graph of live processes as a tree, JSON or Graphviz. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliopt.h"
#include "corefile.h"
#include "commands.h"
#include "corecmd.h"
#include "elfobj.h"
#include "graph_export.h"
#include "libgraph.h"
#include "phase.h"
#include "libview.h"
#include "runtimes.h"
#include "output.h"
#include "pkgowner.h"
#include "target.h"

enum libs_format { FMT_TEXT, FMT_JSON, FMT_DOT };

static void libs_usage(FILE *f)
{
	fprintf(f,
		"Usage: dlscope libs [OPTIONS] PID...\n"
		"       dlscope libs [OPTIONS] CORE | --coredump MATCH\n"
		"\n"
		"Print the library graph of each process, read from the dynamic loader's link maps\n"
		"(every dlmopen namespace) and cross-checked with /proc/PID/maps, without stopping it.\n"
		"Each object shows its runtime role (OpenMP, BLAS, C++ runtime, CUDA, Python), judged\n"
		"by the symbols it defines, its path as the process sees it, load address, build-id\n"
		"and the installed package that owns the file (pip's RECORD, conda-meta, dpkg).\n"
		"The tree shows each object once, under the object whose DT_NEEDED loaded it, with the\n"
		"number of other objects that need it.\n"
		"\n"
		"  -p, --pid PID    a process (as an operand; a comma list \"1,2\" for several)\n"
		"  -j, --json       one JSON document (schema: docs/libs-schema.md)\n"
		"      --dot        a Graphviz digraph; roles as colours\n"
		"  -D, --depth N    cut the tree N levels below each root (0: the roots only)\n"
		"      --roles[=KINDS]\n"
		"                   only the objects with a runtime role, each with the chain that\n"
		"                   loaded it; with --dot, those objects and chains as a small graph.\n"
		"                   KINDS: 'all' or a comma list of openmp, blas, cxx-runtime, cuda,\n"
		"                   python, libc, loader, ... (default: all but python, libc, loader)\n"
		"  -R, --runtimes   the runtime inventory of `dlscope check`: each OpenMP, BLAS/LAPACK,\n"
		"                   C++, TBB, oneDNN and GPU runtime once (fronts under what they\n"
		"                   forward to), real file, version, threading layer, live thread\n"
		"                   counts; with --json, a \"runtimes\" array in each process\n"
		"  -P, --no-packages\n"
		"                   do not look up the owning packages (\"package\": null in JSON)\n"
		"      --exe PATH   with a core: its executable, when not the one it names\n"
		"      --coredump MATCH\n"
		"                   systemd-coredump's core of MATCH (a PID, latest, or a\n"
		"                   coredumpctl match), read through coredumpctl\n"
		"      --ignore-build-id\n"
		"                   with a core: read it even when a file it mapped has changed\n"
		"                   since (its symbols and findings may be wrong)\n"
		"  -h, --help\n"
		"\n"
		"Exit status: 0 fine, 2 usage error, 3 a process could not be inspected.\n");
}

static void print_package(const struct lg_object *o, FILE *f)
{
	char pkg[256];

	if (!o->pkg)
		return;
	pkg_owner__describe(o->pkg, pkg, sizeof(pkg));
	fprintf(f, "  package %s", pkg);
}

static void print_object_line(const struct libgraph *g, const struct lg_object *o,
			      const char *prefix, size_t others, FILE *f)
{
	const struct obj_roles *roles = lg_object__roles(o);
	const char *bid = o->elf ? elfobj__build_id(o->elf) : NULL;

	fprintf(f, "%s#%u %s", prefix, o->id, lg_object__basename(o));
	if (o->origin != LG_NEEDED)
		fprintf(f, "  (%s)", lg_origin__id(o->origin));
	if (others)
		fprintf(f, "  (also needed by %zu other%s)", others, others == 1 ? "" : "s");
	for (unsigned i = 0; i < roles->n; i++) {
		char desc[160];

		runtimes__describe_role(g, o->id, i, desc, sizeof(desc));
		fprintf(f, "  [%s]", desc);
	}
	fprintf(f, "  %s  @0x%" PRIx64, o->path, o->base);
	if (o->soname && strcmp(o->soname, lg_object__basename(o)))
		fprintf(f, "  soname %s", o->soname);
	if (bid)
		fprintf(f, "  build-id %.16s", bid);
	print_package(o, f);
	if (o->deleted)
		fprintf(f, "  (deleted on disk)");
	if (o->error)
		fprintf(f, "  (unreadable: %s)", o->error);
	for (size_t i = 0; i < o->n_unresolved; i++)
		fprintf(f, "%s%s", i ? ", " : "  needs, not loaded: ", o->unresolved[i]);
	fputc('\n', f);
}

/*
 * The tree is the loader's forest (libview.h): each object once, in full, under the object whose
 * DT_NEEDED loaded it; the other objects that need it are a count on that line, not a line each.
 */
struct tree_walk {
	const struct libview *v;
	unsigned int max_depth; /* LV_NONE: no cut */
	char prefix[512];
	FILE *f;
};

static bool is_tree_child(const struct libview *v, const struct lg_object *o, size_t i)
{
	return v->loaded_by[o->children[i]] == o->id;
}

static void print_subtree(struct tree_walk *w, const struct lg_object *o)
{
	const struct libgraph *g = w->v->g;
	size_t plen = strlen(w->prefix), left = 0;

	if (w->max_depth != LV_NONE && w->v->depth[o->id] >= w->max_depth) {
		unsigned int below = w->v->below[o->id];

		if (below)
			fprintf(w->f, "%s└─ +%u object%s below\n", w->prefix, below,
				below == 1 ? "" : "s");
		return;
	}
	for (size_t i = 0; i < o->n_children; i++)
		left += is_tree_child(w->v, o, i);
	for (size_t i = 0; i < o->n_children; i++) {
		const struct lg_object *c;
		char line[600];
		bool last;

		if (!is_tree_child(w->v, o, i))
			continue;
		c = g->objs[o->children[i]];
		last = --left == 0;
		snprintf(line, sizeof(line), "%s%s", w->prefix, last ? "└─ " : "├─ ");
		print_object_line(g, c, line, libview__other_parents(w->v, c->id), w->f);
		/* Past 170 levels the prefix is full: what is deeper is only counted. */
		if (plen + 8 < sizeof(w->prefix)) {
			strcat(w->prefix, last ? "   " : "│  ");
			print_subtree(w, c);
			w->prefix[plen] = '\0';
		} else if (w->v->below[c->id]) {
			fprintf(w->f, "%s   └─ +%u objects below (too deep to draw)\n", w->prefix,
				w->v->below[c->id]);
		}
	}
}

static void print_header(const struct libgraph *g, FILE *f)
{
	size_t live = 0;

	for (size_t i = 0; i < g->n; i++)
		live += !g->objs[i]->gone;
	fprintf(f, "process %d (%s)  %zu objects  %u namespace%s  source: %s%s\n", g->pid, g->comm,
		live, g->n_namespaces, g->n_namespaces == 1 ? "" : "s",
		g->from_link_map ? "loader link maps" : "/proc/PID/maps (link maps unreadable)",
		g->consistent ? "" : "  (a dlopen was in progress: the lists may be incomplete)");
}

static void print_summary(const struct libgraph *g, FILE *f)
{
	unsigned counts[ROLE__COUNT] = { 0 }, fronts[ROLE__COUNT] = { 0 };
	bool any = false;

	for (size_t i = 0; i < g->n; i++) {
		const struct obj_roles *r = lg_object__roles(g->objs[i]);

		if (g->objs[i]->gone)
			continue;
		/* A front is no runtime of its own: counted as check's inventory counts it. */
		for (unsigned k = 0; k < r->n; k++) {
			if (runtimes__is_front(g, g->objs[i]->id, r->r[k].kind))
				fronts[r->r[k].kind]++;
			else
				counts[r->r[k].kind]++;
		}
	}
	for (int k = 0; k < ROLE__COUNT; k++) {
		if (!counts[k] || k == ROLE_LIBC || k == ROLE_LOADER)
			continue;
		fprintf(f, "%s%s x%u", any ? ", " : "runtimes: ", role_kind__label(k), counts[k]);
		if (fronts[k])
			fprintf(f, " (+%u front%s)", fronts[k], fronts[k] == 1 ? "" : "s");
		any = true;
	}
	if (any)
		fputc('\n', f);
}

static int print_text(const struct libgraph *g, unsigned int max_depth, FILE *f)
{
	struct tree_walk w = { .max_depth = max_depth, .f = f };
	struct libview v;
	unsigned int n_ns = g->n_namespaces;

	if (libview__build(g, &v))
		return -ENOMEM;
	w.v = &v;
	print_header(g, f);
	for (size_t r = 0; r < v.n_roots; r++)
		if (g->objs[v.roots[r]]->ns >= n_ns)
			n_ns = g->objs[v.roots[r]]->ns + 1;
	for (unsigned ns = 0; ns < n_ns; ns++) {
		if (g->n_namespaces > 1)
			fprintf(f, "namespace %u%s:\n", ns, ns ? " (dlmopen)" : " (default)");
		/* Roots: what nothing else needs, in the loader's order; then cycles. */
		for (size_t r = 0; r < v.n_roots; r++) {
			const struct lg_object *o = g->objs[v.roots[r]];

			if (o->ns != ns)
				continue;
			print_object_line(g, o, "", libview__other_parents(&v, o->id), f);
			w.prefix[0] = '\0';
			print_subtree(&w, o);
		}
	}
	for (size_t i = 0, shown = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		if (o->origin != LG_MAPPED_ONLY || o->gone)
			continue;
		if (!shown++)
			fprintf(f, "mapped, in no link map:\n");
		print_object_line(g, o, "", 0, f);
	}
	print_summary(g, f);
	libview__free(&v);
	return 0;
}

/* One line per object with a role in @ks: its roles, then the chain that loaded it. */
static int print_roles(const struct libgraph *g, const struct lv_kinds *ks, FILE *f)
{
	struct libview v;
	size_t shown = 0;

	if (libview__build(g, &v))
		return -ENOMEM;
	print_header(g, f);
	/* Grouped by kind, so that two runtimes of one kind sit together. */
	for (int k = 0; k < ROLE__COUNT; k++) {
		for (size_t i = 0; i < g->n; i++) {
			const struct lg_object *o = g->objs[i];
			const struct obj_role *m = o->gone ? NULL : lv_kinds__match(ks, o);
			const struct obj_roles *roles = lg_object__roles(o);
			size_t others = libview__other_parents(&v, o->id);
			unsigned int x;

			if (!m || (int)m->kind != k)
				continue;
			shown++;
			fprintf(f, "#%u %s", o->id, lg_object__basename(o));
			if (o->ns)
				fprintf(f, " [ns %u]", o->ns);
			for (unsigned r = 0; r < roles->n; r++) {
				char desc[160];

				runtimes__describe_role(g, o->id, r, desc, sizeof(desc));
				fprintf(f, "  [%s]", desc);
			}
			fputs(" ", f);
			for (x = v.loaded_by[o->id]; x != LV_NONE; x = v.loaded_by[x])
				fprintf(f, " <- %s", lg_object__basename(g->objs[x]));
			x = o->id;
			while (v.loaded_by[x] != LV_NONE)
				x = v.loaded_by[x];
			if (o->origin == LG_MAPPED_ONLY)
				fprintf(f, " (mapped, in no link map)");
			else
				fprintf(f, " (%s)", lg_origin__id(g->objs[x]->origin));
			if (others)
				fprintf(f, "  (also needed by %zu other%s)", others,
					others == 1 ? "" : "s");
			fprintf(f, "  %s", o->path);
			print_package(o, f);
			fputc('\n', f);
		}
	}
	if (!shown) {
		fprintf(f, "no object with a role of kind");
		for (int k = 0, n = 0; k < ROLE__COUNT; k++)
			if (ks->on[k])
				fprintf(f, "%s %s", n++ ? "," : "", role_kind__id(k));
		fputc('\n', f);
	}
	libview__free(&v);
	return 0;
}

int cmd_libs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "dot", no_argument, NULL, 'd' },
		{ "depth", required_argument, NULL, 'D' },
		{ "roles", optional_argument, NULL, 'r' },
		{ "runtimes", no_argument, NULL, 'R' },
		{ "no-packages", no_argument, NULL, 'P' },
		COREOPT_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	enum libs_format fmt = FMT_TEXT;
	unsigned int max_depth = LV_NONE;
	bool roles = false, runtimes = false, packages = true;
	struct pkg_cache *pkgs = NULL;
	struct runtime_list *inventories = NULL;
	struct lv_kinds kinds;
	char why[512];
	struct libgraph **graphs = NULL;
	size_t n_graphs = 0, n_pids = 0;
	pid_t *pids = NULL;
	int c, ret = DLS_EXIT_OK;
	json_t *doc = NULL;
	struct cliopt cl;
	const char *core;
	struct corefile *cf = NULL;
	struct core_opts co = { 0 };

	lv_kinds__parse(&kinds, NULL, why, sizeof(why));
	cliopt__init(&cl, "libs", argc, argv, "p:jD:RPh", opts, false);
	while ((c = cliopt__next(&cl)) != -1) {
		optarg = (char *)cl.arg;
		if (core_opts__take(&co, c, optarg))
			continue;
		switch (c) {
		case 'p':
			ret = cliopt__pids("libs", optarg, &pids, &n_pids);
			if (ret)
				goto out_pids;
			break;
		case 'j': fmt = FMT_JSON; break;
		case 'd': fmt = FMT_DOT; break;
		case 'D': {
			char *end;
			unsigned long d;

			errno = 0;
			d = strtoul(optarg, &end, 10);
			if (!*optarg || *end || optarg[0] == '-' || errno || d >= LV_NONE) {
				ret = cliopt__usage("libs",
						    "--depth wants a number of levels (0 or more), "
						    "not '%s'",
						    optarg);
				goto out_pids;
			}
			max_depth = (unsigned int)d;
			break;
		}
		case 'r':
			roles = true;
			/* "--roles openmp PID": a word that is no PID but a list of kinds is KINDS. */
			if (!optarg && optind < cl.end && parse_pid(argv[optind], &(pid_t){ 0 }) &&
			    argv[optind][0] != '-' &&
			    !lv_kinds__parse(&kinds, argv[optind], why, sizeof(why))) {
				optind++;
				break;
			}
			if (lv_kinds__parse(&kinds, optarg, why, sizeof(why))) {
				ret = cliopt__usage("libs", "--roles: %s", why);
				goto out_pids;
			}
			break;
		case 'R': runtimes = true; break;
		case 'P': packages = false; break;
		case 'h': libs_usage(stdout); return DLS_EXIT_OK;
		default: ret = DLS_EXIT_USAGE; goto out_pids;
		}
	}
	/* A core file, in place of the PIDs: the process it holds. */
	ret = core_opts__path(&co, &cl, NULL, n_pids, &core);
	if (!ret && !core)
		ret = cliopt__pid_operands(&cl, &pids, &n_pids);
	if (ret)
		goto out_pids;
	n_pids += core != NULL;
	if (!n_pids) {
		ret = cliopt__usage("libs", "no PID given");
		goto out_pids;
	}
	/* JSON is the whole graph, with the fields these views are made from (loaded_by, depth). */
	if (fmt == FMT_JSON && (roles || max_depth != LV_NONE)) {
		ret = cliopt__usage(
			"libs", "--json always has the whole graph; --depth and --roles shape the "
				"text and --dot views");
		goto out_pids;
	}
	if (runtimes && (roles || max_depth != LV_NONE || fmt == FMT_DOT)) {
		ret = cliopt__usage("libs", "--runtimes is a view of its own, in text or --json");
		goto out_pids;
	}
	if (roles && max_depth != LV_NONE) {
		ret = cliopt__usage(
			"libs",
			"--depth cuts the tree and --roles lists runtimes: use one of them");
		goto out_pids;
	}
	if (fmt == FMT_DOT && max_depth != LV_NONE) {
		ret = cliopt__usage(
			"libs", "--depth cuts the text tree; for a small graph use --dot --roles");
		goto out_pids;
	}
	output__set_json(fmt == FMT_JSON);
	graphs = calloc(n_pids, sizeof(*graphs));
	inventories = calloc(n_pids, sizeof(*inventories));
	/* One cache for all the PIDs: processes sharing a root read its databases once. */
	pkgs = packages ? pkg_cache__new() : NULL;
	if (!graphs || !inventories || (packages && !pkgs)) {
		pkg_cache__free(pkgs);
		free(graphs);
		free(inventories);
		free(pids);
		dls_err("out of memory");
		return DLS_EXIT_INSPECT;
	}
	for (size_t i = 0; i < n_pids; i++) {
		struct target *t;
		pid_t pid = core ? 0 : pids[i];
		int err;

		phase__mark("start");
		if (core && (ret = core_target__open(core, &co, &cf, &t)))
			break;
		err = core ? 0 : target__open(pid, &t, why, sizeof(why));
		phase__mark("target");
		if (!err) {
			err = libgraph__snapshot(t, &graphs[n_graphs], why, sizeof(why));
			phase__mark("libgraph snapshot");
			if (!err && pkgs && libgraph__find_packages(graphs[n_graphs], t, pkgs)) {
				libgraph__free(graphs[n_graphs]);
				snprintf(why, sizeof(why), "out of memory");
				err = -ENOMEM;
			}
			phase__mark("packages");
			/* Live values (thread counts) are read while the target is open. */
			/* --dot marks the collisions: the runtimes of one kind, two or more. */
			if (!err && (runtimes || fmt == FMT_DOT) &&
			    runtimes__collect(graphs[n_graphs], t, NULL, &inventories[n_graphs])) {
				libgraph__free(graphs[n_graphs]);
				snprintf(why, sizeof(why), "out of memory");
				err = -ENOMEM;
			}
			target__free(t);
		}
		if (err) {
			dls_err("%s", why);
			ret = DLS_EXIT_INSPECT;
			continue;
		}
		n_graphs++;
	}

	switch (fmt) {
	case FMT_TEXT:
		for (size_t i = 0; i < n_graphs; i++) {
			if (i)
				fputc('\n', stdout);
			if (runtimes) {
				print_header(graphs[i], stdout);
				runtimes__print(&inventories[i], graphs[i], "  ", stdout);
			} else if (roles ? print_roles(graphs[i], &kinds, stdout) :
					   print_text(graphs[i], max_depth, stdout)) {
				dls_err("out of memory");
				ret = DLS_EXIT_INSPECT;
			}
		}
		break;
	case FMT_JSON: {
		json_t *procs = json_array();

		for (size_t i = 0; i < n_graphs; i++) {
			json_t *p = libgraph__to_json(graphs[i]);

			if (p && runtimes)
				json_object_set_new(p, "runtimes",
						    runtimes__to_json(&inventories[i], graphs[i]));
			json_array_append_new(procs, p);
		}
		doc = json_pack("{s:s, s:o, s:o}", "dlscope", DLSCOPE_VERSION, "processes", procs,
				"errors", output__errors_json());
		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) < 0) {
			dls_err("libs: cannot write the JSON document");
			ret = DLS_EXIT_INSPECT;
		}
		fputc('\n', stdout);
		json_decref(doc);
		break;
	}
	case FMT_DOT:
		if (libgraph__print_dot((const struct libgraph *const *)graphs, n_graphs,
					inventories, roles ? &kinds : NULL, stdout)) {
			dls_err("out of memory");
			ret = DLS_EXIT_INSPECT;
		}
		break;
	}
	for (size_t i = 0; i < n_graphs; i++) {
		runtimes__free(&inventories[i]);
		libgraph__free(graphs[i]);
	}
	pkg_cache__free(pkgs);
	free(inventories);
	free(graphs);
	corefile__free(cf);
out_pids:
	core_opts__done(&co);
	free(pids);
	return ret;
}
