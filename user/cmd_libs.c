// SPDX-License-Identifier: GPL-2.0
/* dlscope libs: print the library graph of live processes as a tree, JSON or Graphviz. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "elfobj.h"
#include "graph_export.h"
#include "libgraph.h"
#include "runtimes.h"
#include "output.h"
#include "target.h"

enum libs_format { FMT_TEXT, FMT_JSON, FMT_DOT };

static void libs_usage(FILE *f)
{
	fprintf(f,
		"Usage: dlscope libs [--json | --dot] PID...\n"
		"\n"
		"Print the library graph of each process, read from the dynamic loader's link maps\n"
		"(every dlmopen namespace) and cross-checked with /proc/PID/maps, without stopping it.\n"
		"Each object shows its runtime role (OpenMP, BLAS, C++ runtime, CUDA, Python), judged\n"
		"by the symbols it defines, its path as the process sees it, load address and build-id.\n"
		"\n"
		"  -j, --json   one JSON document (schema: docs/libs-schema.md)\n"
		"  -d, --dot    a Graphviz digraph; roles as colours\n"
		"  -v, --verbose\n"
		"  -h, --help\n"
		"\n"
		"Exit status: 0 fine, 2 usage error, 3 a process could not be inspected.\n");
}

static void print_object_line(const struct libgraph *g, const struct lg_object *o,
			      const char *prefix, FILE *f)
{
	const struct obj_roles *roles = lg_object__roles(o);
	const char *bid = o->elf ? elfobj__build_id(o->elf) : NULL;

	fprintf(f, "%s#%u %s", prefix, o->id, lg_object__basename(o));
	if (o->origin != LG_NEEDED)
		fprintf(f, "  (%s)", lg_origin__id(o->origin));
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
	if (o->deleted)
		fprintf(f, "  (deleted on disk)");
	if (o->error)
		fprintf(f, "  (unreadable: %s)", o->error);
	for (size_t i = 0; i < o->n_unresolved; i++)
		fprintf(f, "%s%s", i ? ", " : "  needs, not loaded: ", o->unresolved[i]);
	fputc('\n', f);
}

struct tree_walk {
	const struct libgraph *g;
	bool *printed;
	char prefix[512];
	FILE *f;
};

static void print_subtree(struct tree_walk *w, const struct lg_object *o)
{
	size_t plen = strlen(w->prefix);

	for (size_t i = 0; i < o->n_children; i++) {
		const struct lg_object *c = w->g->objs[o->children[i]];
		bool last = i + 1 == o->n_children;
		char line[600];

		snprintf(line, sizeof(line), "%s%s", w->prefix, last ? "└─ " : "├─ ");
		if (w->printed[c->id]) {
			fprintf(w->f, "%s#%u %s (see above)\n", line, c->id, lg_object__basename(c));
			continue;
		}
		w->printed[c->id] = true;
		print_object_line(w->g, c, line, w->f);
		if (plen + 8 < sizeof(w->prefix)) {
			strcat(w->prefix, last ? "   " : "│  ");
			print_subtree(w, c);
			w->prefix[plen] = '\0';
		}
	}
}

static void print_root(struct tree_walk *w, const struct lg_object *o)
{
	if (w->printed[o->id])
		return;
	w->printed[o->id] = true;
	print_object_line(w->g, o, "", w->f);
	w->prefix[0] = '\0';
	print_subtree(w, o);
}

static void print_summary(const struct libgraph *g, FILE *f)
{
	unsigned counts[ROLE__COUNT] = { 0 };
	bool any = false;

	for (size_t i = 0; i < g->n; i++) {
		const struct obj_roles *r = lg_object__roles(g->objs[i]);

		if (g->objs[i]->gone)
			continue;
		for (unsigned k = 0; k < r->n; k++)
			counts[r->r[k].kind]++;
	}
	for (int k = 0; k < ROLE__COUNT; k++) {
		if (!counts[k] || k == ROLE_LIBC || k == ROLE_LOADER)
			continue;
		fprintf(f, "%s%s x%u", any ? ", " : "runtimes: ", role_kind__label(k), counts[k]);
		any = true;
	}
	if (any)
		fputc('\n', f);
}

static int print_text(const struct libgraph *g, FILE *f)
{
	struct tree_walk w = { .g = g, .f = f };
	size_t live = 0;

	w.printed = calloc(g->n ? g->n : 1, sizeof(*w.printed));
	if (!w.printed)
		return -ENOMEM;
	for (size_t i = 0; i < g->n; i++)
		live += !g->objs[i]->gone;
	fprintf(f, "process %d (%s)  %zu objects  %u namespace%s  source: %s%s\n", g->pid, g->comm,
		live, g->n_namespaces, g->n_namespaces == 1 ? "" : "s",
		g->from_link_map ? "loader link maps" : "/proc/PID/maps (link maps unreadable)",
		g->consistent ? "" : "  (a dlopen was in progress: the lists may be incomplete)");
	for (unsigned ns = 0; ns < g->n_namespaces; ns++) {
		if (g->n_namespaces > 1)
			fprintf(f, "namespace %u%s:\n", ns, ns ? " (dlmopen)" : " (default)");
		/* Roots: what nothing else needs, in the loader's order. */
		for (size_t i = 0; i < g->n; i++) {
			const struct lg_object *o = g->objs[i];

			if (o->ns == ns && !o->gone && o->origin != LG_MAPPED_ONLY &&
			    !o->n_parents)
				print_root(&w, o);
		}
		/* Cycles without a root (A needs B needs A, nothing else needs either). */
		for (size_t i = 0; i < g->n; i++) {
			const struct lg_object *o = g->objs[i];

			if (o->ns == ns && !o->gone && o->origin != LG_MAPPED_ONLY)
				print_root(&w, o);
		}
	}
	for (size_t i = 0, shown = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		if (o->origin != LG_MAPPED_ONLY || o->gone)
			continue;
		if (!shown++)
			fprintf(f, "mapped, in no link map:\n");
		print_object_line(g, o, "", f);
	}
	print_summary(g, f);
	free(w.printed);
	return 0;
}

int cmd_libs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "dot", no_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	enum libs_format fmt = FMT_TEXT;
	struct libgraph **graphs = NULL;
	size_t n_graphs = 0;
	int c, ret = DLS_EXIT_OK;
	json_t *doc = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jdvh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			fmt = FMT_JSON;
			break;
		case 'd':
			fmt = FMT_DOT;
			break;
		case 'v':
			output__set_verbose(1);
			break;
		case 'h':
			libs_usage(stdout);
			return DLS_EXIT_OK;
		default:
			libs_usage(stderr);
			return DLS_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		dls_err("libs: no PID given (usage: dlscope libs [--json|--dot] PID...)");
		return DLS_EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++) {
		pid_t pid;

		if (parse_pid(argv[i], &pid)) {
			dls_err("libs: '%s' is not a process ID", argv[i]);
			return DLS_EXIT_USAGE;
		}
	}
	output__set_json(fmt == FMT_JSON);
	graphs = calloc((size_t)(argc - optind), sizeof(*graphs));
	if (!graphs) {
		dls_err("out of memory");
		return DLS_EXIT_INSPECT;
	}
	for (int i = optind; i < argc; i++) {
		struct target *t;
		char why[512];
		pid_t pid;
		int err;

		parse_pid(argv[i], &pid);
		err = target__open(pid, &t, why, sizeof(why));
		if (!err) {
			err = libgraph__snapshot(t, &graphs[n_graphs], why, sizeof(why));
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
			if (print_text(graphs[i], stdout))
				ret = DLS_EXIT_INSPECT;
		}
		break;
	case FMT_JSON: {
		json_t *procs = json_array();

		for (size_t i = 0; i < n_graphs; i++)
			json_array_append_new(procs, libgraph__to_json(graphs[i]));
		doc = json_pack("{s:s, s:o}", "dlscope", DLSCOPE_VERSION, "processes", procs);
		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) < 0) {
			dls_err("libs: cannot write the JSON document");
			ret = DLS_EXIT_INSPECT;
		}
		fputc('\n', stdout);
		json_decref(doc);
		break;
	}
	case FMT_DOT:
		libgraph__print_dot((const struct libgraph *const *)graphs, n_graphs, stdout);
		break;
	}
	for (size_t i = 0; i < n_graphs; i++)
		libgraph__free(graphs[i]);
	free(graphs);
	return ret;
}
