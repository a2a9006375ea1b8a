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
#include "heapwarm.h"
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
	fprintf(f, "process %d (%s)  %zu object%s  %u namespace%s  source: %s%s\n", g->pid, g->comm,
		live, live == 1 ? "" : "s", g->n_namespaces, g->n_namespaces == 1 ? "" : "s",
		g->from_link_map ? "loader link maps" :
		g->static_exe ? "/proc/PID/maps (statically linked: no loader, no shared library)" :
				"/proc/PID/maps (link maps unreadable)",
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

/* What the command line of libs asks. */
struct libs_opts {
	enum libs_format fmt;
	unsigned int max_depth; /* LV_NONE: the whole tree */
	bool roles, runtimes, packages;
	struct lv_kinds kinds; /* --roles=KINDS */
	pid_t *pids;
	size_t n_pids, cap_pids; /* with a core, 1 */
	const char *core;
	struct core_opts co; /* --exe, --coredump, --ignore-build-id */
};

/* --depth N into @o: 0, or the usage status after one line. */
static int libs_depth(const char *arg, struct libs_opts *o)
{
	char *end;
	unsigned long d;

	errno = 0;
	d = strtoul(arg, &end, 10);
	if (!*arg || *end || arg[0] == '-' || errno || d >= LV_NONE)
		return cliopt__usage("libs",
				     "--depth wants a number of levels (0 or more), not '%s'", arg);
	o->max_depth = (unsigned int)d;
	return 0;
}

/* --roles[=KINDS] into @o, from @cl's next word when that is a list of kinds (not a PID). */
static int libs_roles(const char *arg, struct cliopt *cl, char **argv, struct libs_opts *o)
{
	char why[512];

	o->roles = true;
	/* "--roles openmp PID": a word that is no PID but a list of kinds is KINDS. */
	if (!arg && optind < cl->end && parse_pid(argv[optind], &(pid_t){ 0 }) &&
	    argv[optind][0] != '-' && !lv_kinds__parse(&o->kinds, argv[optind], why, sizeof(why))) {
		optind++;
		return 0;
	}
	if (lv_kinds__parse(&o->kinds, arg, why, sizeof(why)))
		return cliopt__usage("libs", "--roles: %s", why);
	return 0;
}

/* --roles' words: all, then each kind. */
static const char *libs_role_word(size_t i)
{
	return !i ? "all" : i <= ROLE__COUNT ? role_kind__id((enum role_kind)(i - 1)) : NULL;
}

static const struct cliopt_def libs_defs[] = {
	{ .name = "pid",
	  .letter = 'p',
	  .arg = "PID",
	  .value = CLIOPT_PID,
	  .help = "a process (as an operand; a comma list \"1,2\" for several)" },
	{ .name = "json", .letter = 'j', .help = "one JSON document (schema: docs/libs-schema.md)" },
	{ .name = "dot", .val = 'd', .help = "a Graphviz digraph; roles as colours" },
	{ .name = "depth",
	  .letter = 'D',
	  .arg = "N",
	  .help = "cut the tree N levels below each root (0: the roots only)" },
	{ .name = "roles",
	  .val = 'r',
	  .arg = "KINDS",
	  .optional = true,
	  .value = CLIOPT_WORDS,
	  .word = libs_role_word,
	  .help = "only the objects with a runtime role, each with the chain that loaded it; with "
		  "--dot, those objects and chains as a small graph. KINDS: 'all' or a comma list "
		  "of openmp, blas, cxx-runtime, cuda, python, libc, loader, ... (default: all but "
		  "python, libc, loader)" },
	{ .name = "runtimes",
	  .letter = 'R',
	  .help = "the runtime inventory of `dlscope check`: each OpenMP, BLAS/LAPACK, C++, TBB, "
		  "oneDNN and GPU runtime once (fronts under what they forward to), real file, "
		  "version, threading layer, live thread counts; with --json, a \"runtimes\" array "
		  "in each process" },
	{ .name = "no-packages",
	  .letter = 'P',
	  .help = "do not look up the owning packages (\"package\": null in JSON)" },
	COREOPT_DEFS,
	{},
};

const struct cliopt_cmd libs_cli = {
	.name = "libs",
	.usage = "libs [OPTIONS] PID...\n"
		 "libs [OPTIONS] CORE | --coredump MATCH",
	.about =
		"Print the library graph of each process, read from the dynamic loader's link maps\n"
		"(every dlmopen namespace) and cross-checked with /proc/PID/maps, without stopping it.\n"
		"Each object shows its runtime role (OpenMP, BLAS, C++ runtime, CUDA, Python), judged\n"
		"by the symbols it defines, its path as the process sees it, load address, build-id\n"
		"and the installed package that owns the file (pip's RECORD, conda-meta, dpkg).\n"
		"The tree shows each object once, under the object whose DT_NEEDED loaded it, with the\n"
		"number of other objects that need it.\n",
	.opts = libs_defs,
	.after = "Exit status: 0 fine, 2 usage error, 3 a process could not be inspected.\n",
	.operands = CLIOPT_OP_PID | CLIOPT_OP_FILE,
};

/* The options into @o and @cl: -1 to go on, or the exit status (after one line, or help). */
static int libs_options(int argc, char **argv, struct libs_opts *o, struct cliopt *cl)
{
	int c, ret = 0;

	cliopt__init(cl, &libs_cli, argc, argv);
	while (!ret && (c = cliopt__next(cl)) != -1) {
		const char *arg = cl->arg;

		if (core_opts__take(&o->co, c, arg))
			continue;
		switch (c) {
		case 'p':
			ret = cliopt__pids("libs", arg, &o->pids, &o->n_pids, &o->cap_pids);
			break;
		case 'j': o->fmt = FMT_JSON; break;
		case 'd': o->fmt = FMT_DOT; break;
		case 'D': ret = libs_depth(arg, o); break;
		case 'r': ret = libs_roles(arg, cl, argv, o); break;
		case 'R': o->runtimes = true; break;
		case 'P': o->packages = false; break;
		case 'h': return cliopt__help(&libs_cli);
		default: return DLS_EXIT_USAGE;
		}
	}
	return ret ? ret : -1;
}

/* The options and operands into @o, and whether the views asked go together. */
static int libs_parse(int argc, char **argv, struct libs_opts *o)
{
	struct cliopt cl;
	int ret = libs_options(argc, argv, o, &cl);

	if (ret >= 0)
		return ret;
	/* A core file (the operand, --coredump MATCH), in place of the PIDs: the process it holds. */
	ret = core_opts__path(&o->co, &cl, NULL, o->n_pids, &o->core);
	if (!ret && !o->core)
		ret = cliopt__pid_operands(&cl, &o->pids, &o->n_pids, &o->cap_pids);
	if (ret)
		return ret;
	o->n_pids += o->core != NULL;
	if (!o->n_pids)
		return cliopt__usage("libs", "no PID given");
	/* JSON is the whole graph, with the fields these views are made from (loaded_by, depth). */
	if (o->fmt == FMT_JSON && (o->roles || o->max_depth != LV_NONE))
		return cliopt__usage("libs", "--json always has the whole graph; --depth and "
					     "--roles shape the text and --dot views");
	if (o->runtimes && (o->roles || o->max_depth != LV_NONE || o->fmt == FMT_DOT))
		return cliopt__usage("libs", "--runtimes is a view of its own, in text or --json");
	if (o->roles && o->max_depth != LV_NONE)
		return cliopt__usage(
			"libs",
			"--depth cuts the tree and --roles lists runtimes: use one of them");
	if (o->fmt == FMT_DOT && o->max_depth != LV_NONE)
		return cliopt__usage(
			"libs", "--depth cuts the text tree; for a small graph use --dot --roles");
	return -1;
}

/* The graphs read, with their packages and runtimes, and what they came from. */
struct libs_graphs {
	struct libgraph **g;
	struct runtime_list *rt;
	size_t n;
	struct pkg_cache *pkgs; /* one for all the PIDs: a shared root's databases read once */
	struct corefile *cf;
};

/* The graph of @t into @lg's next slot, its packages and runtimes: 0, or -errno with @why. */
static int libs_snapshot(const struct libs_opts *o, struct libs_graphs *lg, struct target *t,
			 char *why, size_t whylen)
{
	int err = libgraph__snapshot(t, &lg->g[lg->n], why, whylen);

	phase__mark("libgraph snapshot");
	if (!err && lg->pkgs && libgraph__find_packages(lg->g[lg->n], t, lg->pkgs)) {
		libgraph__free(lg->g[lg->n]);
		snprintf(why, whylen, "out of memory");
		err = -ENOMEM;
	}
	phase__mark("packages");
	/* Live values (thread counts) are read while the target is open. */
	/* --dot marks the collisions: the runtimes of one kind, two or more. */
	if (!err && (o->runtimes || o->fmt == FMT_DOT) &&
	    runtimes__collect(lg->g[lg->n], t, NULL, &lg->rt[lg->n])) {
		libgraph__free(lg->g[lg->n]);
		snprintf(why, whylen, "out of memory");
		err = -ENOMEM;
	}
	return err;
}

/* Each process (or the core's) read into @lg: DLS_EXIT_OK, or the status of a failure. */
static int libs_read(const struct libs_opts *o, struct libs_graphs *lg)
{
	int ret = DLS_EXIT_OK;
	char why[512];

	for (size_t i = 0; i < o->n_pids; i++) {
		struct target *t;
		pid_t pid = o->core ? 0 : o->pids[i];
		int err;

		phase__mark("start");
		if (o->core && (ret = core_target__open(o->core, &o->co, &lg->cf, &t)))
			break;
		err = o->core ? 0 : target__open(pid, &t, why, sizeof(why));
		phase__mark("target");
		if (!err) {
			err = libs_snapshot(o, lg, t, why, sizeof(why));
			target__free(t);
		}
		if (err) {
			dls_err("%s", why);
			ret = DLS_EXIT_INSPECT;
			continue;
		}
		lg->n++;
	}
	return ret;
}

/* The graphs in the view asked: the text tree, roles, runtimes, JSON or Graphviz. */
static int libs_print(const struct libs_opts *o, const struct libs_graphs *lg, int ret)
{
	json_t *procs;

	switch (o->fmt) {
	case FMT_TEXT:
		for (size_t i = 0; i < lg->n; i++) {
			if (i)
				fputc('\n', stdout);
			if (o->runtimes) {
				print_header(lg->g[i], stdout);
				runtimes__print(&lg->rt[i], lg->g[i], "  ", stdout);
			} else if (o->roles ? print_roles(lg->g[i], &o->kinds, stdout) :
					      print_text(lg->g[i], o->max_depth, stdout)) {
				dls_err("out of memory");
				ret = DLS_EXIT_INSPECT;
			}
		}
		break;
	case FMT_JSON:
		procs = json_array();
		for (size_t i = 0; i < lg->n; i++) {
			json_t *p = libgraph__to_json(lg->g[i]);

			if (p && o->runtimes)
				json_object_set_new(p, "runtimes",
						    runtimes__to_json(&lg->rt[i], lg->g[i]));
			json_array_append_new(procs, p);
		}
		if (cliopt__print_processes(procs)) {
			dls_err("libs: cannot write the JSON document");
			ret = DLS_EXIT_INSPECT;
		}
		break;
	case FMT_DOT:
		if (libgraph__print_dot((const struct libgraph *const *)lg->g, lg->n, lg->rt,
					o->roles ? &o->kinds : NULL, stdout)) {
			dls_err("out of memory");
			ret = DLS_EXIT_INSPECT;
		}
		break;
	}
	return ret;
}

int cmd_libs(int argc, char **argv)
{
	struct libs_opts o = { .fmt = FMT_TEXT, .max_depth = LV_NONE, .packages = true };
	struct libs_graphs lg = { 0 };
	char why[512];
	int ret;

	lv_kinds__parse(&o.kinds, NULL, why, sizeof(why));
	ret = libs_parse(argc, argv, &o);
	if (ret >= 0)
		goto out;
	output__set_json(o.fmt == FMT_JSON);
	heap__warm_enable();
	lg.g = calloc(o.n_pids, sizeof(*lg.g));
	lg.rt = calloc(o.n_pids, sizeof(*lg.rt));
	lg.pkgs = o.packages ? pkg_cache__new() : NULL;
	if (!lg.g || !lg.rt || (o.packages && !lg.pkgs)) {
		dls_err("out of memory");
		ret = DLS_EXIT_INSPECT;
	} else {
		ret = libs_print(&o, &lg, libs_read(&o, &lg));
	}
	for (size_t i = 0; i < lg.n; i++) {
		runtimes__free(&lg.rt[i]);
		libgraph__free(lg.g[i]);
	}
	pkg_cache__free(lg.pkgs);
	free(lg.rt);
	free(lg.g);
	corefile__free(lg.cf);
out:
	core_opts__done(&o.co);
	free(o.pids);
	return ret;
}
