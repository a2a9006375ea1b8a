// SPDX-License-Identifier: GPL-2.0
/* STAT-style merge of the ranks' stacks: identical stacks grouped, outliers first, a verdict. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "frame_text.h"
#include "job.h"
#include "paths.h"
#include "stackmerge.h"

/* One thread of one rank, its frames in one list (native, each eval frame's Python frames). */
struct mthread {
	int rank;
	json_int_t tid;
	const char *name;
	const char *error; /* why the thread has no frames (or fewer than it should) */
	bool main;
	char *sig;
	/* The verdict's key: the stack outermost first down to the first frame of a
	 * communication API (@cut, -1 none), named @comm; waits that spin and waits that sleep
	 * under one collective differ only below it (STAT's prefix tree, cut there). */
	char *wait;
	long cut;
	char comm[96];
	json_t *frames;
};

static json_t *python_frame(const json_t *f)
{
	return json_pack("{s:s, s:O, s:n, s:O, s:O}", "kind", "python", "function",
			 json_object_get(f, "function"), "module", "file",
			 json_object_get(f, "file"), "line", json_object_get(f, "line"));
}

/* The thread's frames innermost first, Python frames under the eval frame that runs them. */
static json_t *thread_frames(const json_t *thread, bool python_only)
{
	const json_t *native = json_object_get(thread, "frames");
	const json_t *py = json_object_get(json_object_get(thread, "python"), "frames");
	json_t *out = json_array();
	size_t k, j;
	json_t *f, *p;

	if (!python_only)
		json_array_foreach (native, k, f) {
			json_array_append_new(out, json_pack("{s:s, s:O, s:O, s:O, s:O}", "kind",
							     "native", "function",
							     json_object_get(f, "function"),
							     "module", json_object_get(f, "module"),
							     "file", json_object_get(f, "file"),
							     "line", json_object_get(f, "line")));
			json_array_foreach (py, j, p) {
				const json_t *at = json_object_get(p, "native_frame");

				if (json_is_integer(at) && json_integer_value(at) == (json_int_t)k)
					json_array_append_new(out, python_frame(p));
			}
		}
	/* Python frames whose eval frame the native unwind did not reach (or --python). */
	json_array_foreach (py, j, p) {
		if (python_only || !json_is_integer(json_object_get(p, "native_frame")))
			json_array_append_new(out, python_frame(p));
	}
	return out;
}

/*
 * What makes two stacks the same across ranks: names, not addresses (each rank has its own), of
 * frames [@from, end) of @frames, one line each, innermost first or (@outer_first) outermost
 * first; then the collective @comm they call, when not NULL.
 */
static char *signature_from(const json_t *frames, size_t from, const char *comm, bool outer_first)
{
	size_t len = 0, n = json_array_size(frames);
	char *sig = NULL;
	FILE *f = open_memstream(&sig, &len);

	if (!f)
		return NULL;
	for (size_t k = from; k < n; k++) {
		const json_t *fr = json_array_get(frames, outer_first ? n - 1 - (k - from) : k);
		const char *fn = json_string_value(json_object_get(fr, "function"));

		if (!strcmp(json_string_value(json_object_get(fr, "kind")) ?: "", "python"))
			fprintf(f, "P %s %s:%lld\n", fn ? fn : "??",
				json_string_value(json_object_get(fr, "file")) ?: "?",
				(long long)json_integer_value(json_object_get(fr, "line")));
		else
			fprintf(f, "N %s %s\n", fn ? fn : "??",
				path_base(json_string_value(json_object_get(fr, "module"))));
	}
	if (comm)
		fprintf(f, "C %s\n", comm);
	fclose(f);
	return sig;
}

static char *signature(const json_t *frames)
{
	return signature_from(frames, 0, NULL, false);
}

/*
 * Whether frame @fr is the entry of a communication API (MPI and its implementations' cores,
 * NCCL/RCCL, gloo, PyTorch's c10d, mpi4py and torch.distributed in Python); its name without
 * parameters into @buf.
 */
static bool comm_api(const json_t *fr, char *buf, size_t len)
{
	static const char *const native[] = { "PMPI_",	"MPI_", "ompi_", "opal_progress", "MPIR_",
					      "MPIDI_", "nccl", "rccl",	 "gloo::",	  "c10d::" };
	static const char *const python[] = { "/torch/distributed/", "/mpi4py/" };
	const char *fn = json_string_value(json_object_get(fr, "function"));
	const char *file = json_string_value(json_object_get(fr, "file"));
	bool py = !strcmp(json_string_value(json_object_get(fr, "kind")) ?: "", "python");
	bool hit = false;

	if (!fn)
		return false;
	for (size_t k = 0; py && file && k < sizeof(python) / sizeof(python[0]); k++)
		hit = hit || strstr(file, python[k]);
	for (size_t k = 0; !py && k < sizeof(native) / sizeof(native[0]); k++)
		hit = hit || !strncmp(fn, native[k], strlen(native[k]));
	if (hit)
		snprintf(buf, len, "%.*s", (int)strcspn(fn, "("), fn);
	return hit;
}

/*
 * The verdict's key of @x (its frames set): outermost first (a path down STAT's prefix tree),
 * cut at the outermost communication API frame.
 */
static char *wait_signature(struct mthread *x)
{
	size_t n = json_array_size(x->frames);

	x->cut = -1;
	for (size_t i = n; i-- > 0;)
		if (comm_api(json_array_get(x->frames, i), x->comm, sizeof(x->comm))) {
			x->cut = (long)i;
			return signature_from(x->frames, i + 1, x->comm, true);
		}
	return signature_from(x->frames, 0, NULL, true);
}

/* The length of the first @lines lines of @s (all of it when it has fewer). */
static size_t lines_len(const char *s, size_t lines)
{
	const char *p = s;

	while (lines-- && *p) {
		const char *nl = strchr(p, '\n');

		p = nl ? nl + 1 : p + strlen(p);
	}
	return (size_t)(p - s);
}

/* How many leading lines @a and @b share. */
static size_t common_lines(const char *a, const char *b)
{
	size_t n = 0;

	for (size_t i = 0; a[i] && a[i] == b[i]; i++)
		n += a[i] == '\n';
	return n;
}

/* The C library and the loader: where every wait ends, so never the frame that explains it. */
static bool system_module(const char *module)
{
	const char *b = path_base(module);

	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5) || !strncmp(b, "ld-linux", 8) ||
	       !strncmp(b, "libpthread", 10) || !strncmp(b, "linux-vdso", 10) ||
	       !strcmp(b, "[vdso]");
}

static void describe_frame(const json_t *fr, char *buf, size_t len)
{
	const char *fn = json_string_value(json_object_get(fr, "function"));
	const char *file = json_string_value(json_object_get(fr, "file"));
	json_int_t line = json_integer_value(json_object_get(fr, "line"));
	bool python = !strcmp(json_string_value(json_object_get(fr, "kind")) ?: "", "python");

	if (python)
		snprintf(buf, len, "%s (%s:%lld)", fn ? fn : "??", file ? file : "?",
			 (long long)line);
	else if (file && line > 0)
		snprintf(buf, len, "%s (%s:%lld)", fn ? fn : "??", path_base(file),
			 (long long)line);
	else
		snprintf(buf, len, "%s in %s", fn ? fn : "??",
			 path_base(json_string_value(json_object_get(fr, "module"))));
}

/*
 * The innermost frame that says where a thread is: its innermost Python line when it runs
 * Python, else its innermost named frame outside the C library and the loader.
 */
/*
 * The collective a GPU rank waits in, from the innermost frame of NCCL's or RCCL's API or of
 * PyTorch's NCCL work: "ncclAllReduce", "c10d::ProcessGroupNCCL::WorkNCCL::wait"; NULL none.
 */
static const char *collective(const json_t *frames, char *buf, size_t len)
{
	static const char *const calls[] = { "ncclAllReduce",  "ncclBroadcast",
					     "ncclReduce",     "ncclAllGather",
					     "ncclSend",       "ncclRecv",
					     "ncclGroupEnd",   "ncclCommInit",
					     "WorkNCCL::wait", "WorkNCCL::synchronize" };
	const json_t *fr;
	size_t i;

	json_array_foreach (frames, i, fr) {
		const char *fn = json_string_value(json_object_get(fr, "function"));

		if (!fn || !strcmp(json_string_value(json_object_get(fr, "kind")) ?: "", "python"))
			continue;
		for (size_t k = 0; k < sizeof(calls) / sizeof(calls[0]); k++)
			if (strstr(fn, calls[k])) {
				/* The name without its parameters. */
				snprintf(buf, len, "%.*s", (int)strcspn(fn, "("), fn);
				return buf;
			}
	}
	return NULL;
}

/* A Python file of a library (site-packages, the standard library): not the user's line. */
static bool library_file(const char *file)
{
	return !file || strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") ||
	       strstr(file, "/lib/python") || !strncmp(file, "<frozen", 7);
}

/*
 * Where frames [@from, end) of a thread are, said in @buf: the user's innermost Python line
 * (outside site-packages and the standard library; else the innermost Python line) when it runs
 * Python, else its innermost named frame outside the C library and the loader; then the
 * collective it waits in (@comm, or a NCCL call found in @frames).
 */
static void where_of(const json_t *frames, size_t from, const char *comm, char *buf, size_t len)
{
	const json_t *named = NULL, *py = NULL, *user_py = NULL, *fr;
	char call[160];
	size_t i, n;

	json_array_foreach (frames, i, fr) {
		if (i < from ||
		    strcmp(json_string_value(json_object_get(fr, "kind")) ?: "", "python"))
			continue;
		if (!py)
			py = fr;
		if (!user_py && !library_file(json_string_value(json_object_get(fr, "file"))))
			user_py = fr;
	}
	if (!comm)
		comm = collective(frames, call, sizeof(call));
	if (py) {
		describe_frame(user_py ? user_py : py, buf, len);
		/* A Python line hides the collective under it: name both. */
		n = strlen(buf);
		if (comm && n < len)
			snprintf(buf + n, len - n, ", waiting in %s", comm);
		return;
	}
	json_array_foreach (frames, i, fr) {
		if (i < from || !json_string_value(json_object_get(fr, "function")))
			continue;
		if (!system_module(json_string_value(json_object_get(fr, "module")))) {
			named = fr;
			break;
		}
		if (!named)
			named = fr;
	}
	if (named)
		describe_frame(named, buf, len);
	else
		snprintf(buf, len, "%s",
			 json_array_size(frames) > from ? "unnamed code" : "no frames");
	n = strlen(buf);
	if (comm && from && n < len)
		snprintf(buf + n, len - n, ", waiting in %s", comm);
}

static void meaningful_frame(const json_t *frames, char *buf, size_t len)
{
	where_of(frames, 0, NULL, buf, len);
}

/*
 * Stack @k of a relay's @table as the merge reads it: an array of frame objects, each with its
 * kind. Anything else (an index past the table, a relay's bad JSON) is a stack of no frames.
 * A new reference.
 */
static json_t *table_stack(const json_t *table, const json_t *k)
{
	json_t *frames = json_is_integer(k) ? json_array_get(table, (size_t)json_integer_value(k)) :
					      NULL;
	const json_t *fr;
	size_t i;

	json_array_foreach (frames, i, fr)
		if (!json_is_string(json_object_get(fr, "kind")))
			return json_array();
	return json_is_array(frames) ? json_incref(frames) : json_array();
}

static int cmp_sig(const void *a, const void *b)
{
	const struct mthread *x = a, *y = b;
	int c = strcmp(x->sig, y->sig);

	if (c)
		return c;
	return x->rank != y->rank ? (x->rank > y->rank) - (x->rank < y->rank) :
				    (x->tid > y->tid) - (x->tid < y->tid);
}

struct group {
	size_t first, n; /* threads [first, first + n) of the sorted array */
	size_t n_ranks;	 /* distinct ranks */
	int min_rank;
};

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->n_ranks != y->n_ranks)
		return (x->n_ranks > y->n_ranks) - (x->n_ranks < y->n_ranks);
	if (x->n != y->n)
		return (x->n > y->n) - (x->n < y->n);
	return (x->min_rank > y->min_rank) - (x->min_rank < y->min_rank);
}

static json_t *ranks_json(int *ranks, size_t n, char *text, size_t len)
{
	json_t *a = json_array();

	job__format_ranks(ranks, n, text, len);
	for (size_t i = 0; i < n; i++)
		if (!i || ranks[i] != ranks[i - 1])
			json_array_append_new(a, json_integer(ranks[i]));
	return a;
}

/* The main threads of the ranks, grouped by stack: the verdict. */
struct vgroup {
	char *sig; /* where the members' paths go, down to the level where the ranks part */
	int *ranks;
	size_t n;
	const json_t *frames;
	size_t from;	  /* frames outer than the collective's entry start here */
	const char *comm; /* the collective they wait in, NULL none */
};

/* Where group @g is, in words. */
static void group_where(const struct vgroup *g, char *buf, size_t len)
{
	where_of(g->frames, g->from, g->comm, buf, len);
}

static int cmp_vgroup(const void *a, const void *b)
{
	const struct vgroup *x = a, *y = b;

	if (x->n != y->n)
		return (x->n < y->n) - (x->n > y->n); /* largest first */
	return (x->ranks[0] > y->ranks[0]) - (x->ranks[0] < y->ranks[0]);
}

/*
 * The main threads grouped by stack (@g, at most one group per rank): how many groups. One
 * that could not be read is nowhere (no group of "no frames"): its rank goes to @bad and
 * @unreadable.
 */
static size_t group_main_threads(const struct mthread *t, size_t nt, size_t n, struct vgroup *g,
				 int *bad, size_t *nbad, json_t *unreadable)
{
	const char *first = NULL;
	size_t ng = 0, shared = (size_t)-1;

	/*
	 * STAT's prefix tree: the paths (outermost first) part at some depth; the ranks are
	 * grouped by where they go there. Below it, the frames of a spinning rank and of a
	 * sleeping one, of a root and of a leaf, differ without telling anything.
	 */
	for (size_t i = 0; i < nt; i++) {
		if (!t[i].main || !json_array_size(t[i].frames))
			continue;
		if (!first)
			first = t[i].wait;
		else if (common_lines(first, t[i].wait) < shared)
			shared = common_lines(first, t[i].wait);
	}
	for (size_t i = 0; i < nt; i++) {
		size_t k, klen;

		if (!t[i].main)
			continue;
		if (!json_array_size(t[i].frames)) {
			bad[(*nbad)++] = t[i].rank;
			json_array_append_new(unreadable, json_integer(t[i].rank));
			continue;
		}
		klen = shared == (size_t)-1 ? strlen(t[i].wait) : lines_len(t[i].wait, shared + 1);
		for (k = 0;
		     k < ng && (strlen(g[k].sig) != klen || strncmp(g[k].sig, t[i].wait, klen));
		     k++)
			;
		if (k == ng) {
			g[ng] = (struct vgroup){ .sig = strndup(t[i].wait, klen),
						 .frames = t[i].frames,
						 .from = t[i].cut < 0 ? 0 : (size_t)t[i].cut + 1,
						 .comm = t[i].cut < 0 ? NULL : t[i].comm,
						 .ranks = calloc(n, sizeof(int)) };
			if (!g[ng].ranks || !g[ng].sig) {
				free(g[ng].ranks);
				free(g[ng].sig);
				continue;
			}
			ng++;
		}
		g[k].ranks[g[k].n++] = t[i].rank;
	}
	return ng;
}

/*
 * Whether the ranks in no collective are the culprits: some groups wait in a collective, others
 * are in none, and the former are no fewer (one rank of two in a collective names the other).
 */
static bool outside_collective(const struct vgroup *g, size_t ng)
{
	size_t in = 0, out = 0;

	for (size_t k = 0; k < ng; k++)
		*(g[k].comm ? &in : &out) += g[k].n;
	return in && out && in >= out;
}

/* Group @g as a culprit: said to @f (after @sep), its ranks into @outliers and @ofr. */
static void say_culprit(FILE *f, const char *sep, const struct vgroup *g, json_t *outliers,
			json_t *ofr)
{
	char rtext[256], where[512];
	json_t *rs;

	group_where(g, where, sizeof(where));
	rs = ranks_json(g->ranks, g->n, rtext, sizeof(rtext));
	for (size_t m = 0; m < g->n; m++)
		json_array_append_new(outliers, json_integer(g->ranks[m]));
	json_array_append_new(ofr, json_pack("{s:o, s:s}", "ranks", rs, "frame", where));
	fprintf(f, "%srank%s %s %s in %s", sep, g->n == 1 ? "" : "s", rtext,
		g->n == 1 ? "is" : "are", where);
}

/*
 * Where the groups (@g, largest first) are, said to @f: all in one place, split evenly, or the
 * culprits (into @outliers and @ofr): the ranks in no collective while the others wait in one,
 * else the smaller groups apart from the majority.
 */
static void say_where_groups_are(FILE *f, const struct vgroup *g, size_t ng, json_t *outliers,
				 json_t *ofr)
{
	char rtext[256], where[512];
	const char *sep = "";

	if (!ng) {
		fprintf(f, "no rank's main thread could be read");
	} else if (ng == 1) {
		group_where(&g[0], where, sizeof(where));
		if (g[0].n == 1)
			fprintf(f, "the only rank read is in %s", where);
		else
			fprintf(f, "all %zu ranks are in %s", g[0].n, where);
	} else if (outside_collective(g, ng)) {
		/* Smallest first, as below; then where the others wait. */
		for (size_t k = ng; k-- > 0;)
			if (!g[k].comm) {
				say_culprit(f, sep, &g[k], outliers, ofr);
				sep = "; ";
			}
		fprintf(f, ", in no collective");
		for (size_t k = 0; k < ng; k++) {
			if (!g[k].comm)
				continue;
			group_where(&g[k], where, sizeof(where));
			job__format_ranks(g[k].ranks, g[k].n, rtext, sizeof(rtext));
			fprintf(f, "; rank%s %s %s in %s", g[k].n == 1 ? "" : "s", rtext,
				g[k].n == 1 ? "is" : "are", where);
		}
	} else if (g[0].n == g[1].n) {
		/* No majority to stand out from. */
		fprintf(f, "the ranks are split:");
		for (size_t k = 0; k < ng; k++) {
			group_where(&g[k], where, sizeof(where));
			job__format_ranks(g[k].ranks, g[k].n, rtext, sizeof(rtext));
			fprintf(f, "%s rank%s %s %s in %s", k ? ";" : "", g[k].n == 1 ? "" : "s",
				rtext, g[k].n == 1 ? "is" : "are", where);
		}
	} else {
		/* Smallest groups first: the rarest place is the likeliest culprit. */
		for (size_t k = ng - 1; k >= 1; k--) {
			say_culprit(f, sep, &g[k], outliers, ofr);
			sep = "; ";
		}
		group_where(&g[0], where, sizeof(where));
		if (g[0].n == 1)
			fprintf(f, "; the other waits in %s", where);
		else
			fprintf(f, "; the %zu others wait in %s", g[0].n, where);
	}
}

/*
 * What could not be read, said to @f: the main threads of ranks @bad[@nbad] (the first one's
 * reason with them), then the ranks without a stacks document (into @unreadable too).
 */
static void say_what_was_unread(FILE *f, const struct mthread *t, size_t nt,
				const struct rank_stacks *r, size_t n, int *bad, size_t nbad,
				json_t *unreadable)
{
	char rtext[256];

	if (nbad) {
		job__format_ranks(bad, nbad, rtext, sizeof(rtext));
		fprintf(f, "; the main thread%s of rank%s %s could not be read",
			nbad == 1 ? "" : "s", nbad == 1 ? "" : "s", rtext);
		for (size_t i = 0; i < nt; i++)
			if (t[i].main && !json_array_size(t[i].frames) && t[i].error) {
				fprintf(f, " (%s)", t[i].error);
				break;
			}
	}
	nbad = 0;
	for (size_t i = 0; i < n; i++)
		if (!r[i].doc) {
			bad[nbad++] = r[i].rank;
			json_array_append_new(unreadable, json_integer(r[i].rank));
		}
	if (nbad) {
		job__format_ranks(bad, nbad, rtext, sizeof(rtext));
		fprintf(f, "; rank%s %s could not be read", nbad == 1 ? "" : "s", rtext);
	}
}

/* The main threads of the ranks, grouped by stack: the verdict's text and JSON. */
static json_t *verdict(const struct mthread *t, size_t nt, const struct rank_stacks *r, size_t n)
{
	struct vgroup *g = calloc(n ? n : 1, sizeof(*g));
	json_t *outliers = json_array(), *ofr = json_array(), *unreadable = json_array(), *v;
	char *text = NULL, rtext[256], where[512];
	size_t ng = 0, tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	int *bad = calloc(n + nt + 1, sizeof(*bad));
	size_t nbad = 0;
	long maj = -1;

	if (!g || !f || !bad) {
		free(g);
		free(bad);
		if (f)
			fclose(f);
		free(text);
		json_decref(outliers);
		json_decref(ofr);
		json_decref(unreadable);
		return NULL;
	}
	ng = group_main_threads(t, nt, n, g, bad, &nbad, unreadable);
	qsort(g, ng, sizeof(*g), cmp_vgroup);
	say_where_groups_are(f, g, ng, outliers, ofr);
	say_what_was_unread(f, t, nt, r, n, bad, nbad, unreadable);
	fclose(f);
	/* The majority: the largest group in a collective when the culprits are in none. */
	if (ng > 1 && outside_collective(g, ng))
		for (maj = 0; !g[maj].comm; maj++)
			;
	else if (ng > 1 && g[0].n > g[1].n)
		maj = 0;
	if (maj >= 0)
		group_where(&g[maj], where, sizeof(where));
	v = json_pack("{s:s, s:o, s:o, s:o, s:o}", "text", text ? text : "", "outliers", outliers,
		      "outlier_frames", ofr, "majority",
		      maj >= 0 ? json_pack("{s:o, s:s}", "ranks",
					   ranks_json(g[maj].ranks, g[maj].n, rtext, sizeof(rtext)),
					   "frame", where) :
				 json_null(),
		      "unreadable", unreadable);
	for (size_t k = 0; k < ng; k++) {
		free(g[k].ranks);
		free(g[k].sig);
	}
	free(g);
	free(bad);
	free(text);
	return v;
}

/* Every thread of every rank (@r[@n]) with its frames and their signature, into *@t. */
static int collect_threads(const struct rank_stacks *r, size_t n, const json_t *groups,
			   bool python_only, struct mthread **t, size_t *nt)
{
	size_t cap = 0;

	for (size_t i = 0; i < n; i++) {
		const json_t *threads = json_object_get(r[i].doc, "threads"), *th;
		size_t k;

		json_array_foreach (threads, k, th) {
			const json_t *folded = json_object_get(th, "group");
			struct mthread *x;
			json_t *frames;

			/* --python: a thread that runs no Python has nothing to show (a relay
			 * folds no stack for it). */
			if (!json_is_object(th))
				continue; /* a relay's bad JSON */
			if (folded)
				frames = table_stack(groups, folded);
			else if (python_only && !json_is_object(json_object_get(th, "python")))
				continue;
			else
				frames = thread_frames(th, python_only);
			if (!frames || (*nt == cap && ARRAY_GROW(*t, cap, 64))) {
				json_decref(frames);
				return -ENOMEM;
			}
			x = &(*t)[*nt];
			*x = (struct mthread){
				.rank = r[i].rank,
				.tid = json_integer_value(json_object_get(th, "tid")),
				.name = json_string_value(json_object_get(th, "name")),
				.error = json_string_value(json_object_get(th, "error")),
				.frames = frames,
				.sig = signature(frames),
			};
			x->wait = wait_signature(x);
			x->main = x->tid == r[i].pid;
			if (!x->sig || !x->wait) {
				free(x->sig);
				free(x->wait);
				json_decref(frames);
				return -ENOMEM;
			}
			(*nt)++;
		}
	}
	return 0;
}

/* The threads (sorted by signature) in groups of one stack each, into @gs: how many. */
static size_t group_by_stack(const struct mthread *t, size_t nt, struct group *gs)
{
	size_t ng = 0;

	for (size_t i = 0; i < nt;) {
		size_t k = i;

		while (k < nt && !strcmp(t[k].sig, t[i].sig))
			k++;
		gs[ng] = (struct group){ .first = i, .n = k - i, .min_rank = t[i].rank };
		for (size_t m = i; m < k; m++)
			gs[ng].n_ranks += m == i || t[m].rank != t[m - 1].rank;
		ng++;
		i = k;
	}
	return ng;
}

/* One group as JSON: its ranks, threads, where it is and its frames; @ranks is scratch. */
static json_t *group_json(const struct mthread *t, const struct group *gr, int *ranks)
{
	json_t *threads = json_array(), *rs;
	char rtext[1024], where[512];

	for (size_t m = 0; m < gr->n; m++) {
		const struct mthread *x = &t[gr->first + m];

		ranks[m] = x->rank;
		json_array_append_new(threads,
				      json_pack("{s:i, s:I, s:s, s:b, s:s?}", "rank", x->rank,
						"tid", x->tid, "name", x->name ? x->name : "",
						"main", x->main, "error", x->error));
	}
	rs = ranks_json(ranks, gr->n, rtext, sizeof(rtext));
	meaningful_frame(t[gr->first].frames, where, sizeof(where));
	return json_pack("{s:o, s:s, s:o, s:s, s:O}", "ranks", rs, "ranks_text", rtext, "threads",
			 threads, "where", where, "frames", t[gr->first].frames);
}

json_t *stackmerge__merge(const struct rank_stacks *r, size_t n, const json_t *table,
			  bool python_only)
{
	struct mthread *t = NULL;
	struct group *gs = NULL;
	size_t nt = 0, ng;
	json_t *groups = json_array(), *out = NULL, *v;
	int *ranks = NULL;

	if (collect_threads(r, n, table, python_only, &t, &nt))
		goto out;
	if (nt)
		qsort(t, nt, sizeof(*t), cmp_sig);
	gs = calloc(nt ? nt : 1, sizeof(*gs));
	ranks = calloc(nt ? nt : 1, sizeof(*ranks));
	if (!gs || !ranks)
		goto out;
	ng = group_by_stack(t, nt, gs);
	qsort(gs, ng, sizeof(*gs), cmp_group);
	for (size_t g = 0; g < ng; g++)
		json_array_append_new(groups, group_json(t, &gs[g], ranks));
	v = verdict(t, nt, r, n);
	if (v)
		out = json_pack("{s:O, s:o}", "groups", groups, "verdict", v);
out:
	for (size_t i = 0; i < nt; i++) {
		free(t[i].sig);
		free(t[i].wait);
		json_decref(t[i].frames);
	}
	free(t);
	free(gs);
	free(ranks);
	json_decref(groups);
	return out;
}

int stackmerge__fold(struct jsonfold *f, json_t *doc, const json_t *in, bool python_only)
{
	json_t *th;
	size_t i, at;
	char *sig;
	int err;

	json_array_foreach (json_object_get(doc, "threads"), i, th) {
		const json_t *folded = json_object_get(th, "group");
		json_t *frames;

		if (!json_is_object(th))
			continue; /* a relay's bad JSON: no thread */
		/* Folded below: its stack from that table (none from a node, which never folds). */
		if (folded)
			frames = table_stack(in, folded);
		else if (python_only && !json_is_object(json_object_get(th, "python")))
			frames = NULL; /* not merged (collect_threads): no stack to send */
		else
			frames = thread_frames(th, python_only);
		json_object_del(th, "frames");
		json_object_del(th, "python");
		json_object_del(th, "group");
		if (!frames)
			continue;
		sig = signature(frames);
		err = sig ? jsonfold__add(f, frames, sig, &at) : -ENOMEM;
		free(sig);
		if (!sig)
			json_decref(frames);
		if (err || json_object_set_new(th, "group", json_integer((json_int_t)at)))
			return -ENOMEM;
	}
	return 0;
}

void stackmerge__print_groups(const json_t *merged, FILE *out)
{
	const json_t *g;
	size_t i;

	json_array_foreach (json_object_get(merged, "groups"), i, g) {
		const json_t *threads = json_object_get(g, "threads"), *fr;
		size_t nthreads = json_array_size(threads), nranks, k, level = 0;

		nranks = json_array_size(json_object_get(g, "ranks"));
		fprintf(out, "%s%s %s: ", i ? "\n" : "", nranks == 1 ? "rank" : "ranks",
			json_string_value(json_object_get(g, "ranks_text")));
		if (nthreads == 1)
			fprintf(out, "1 thread (LWP %lld \"%s\")\n",
				(long long)json_integer_value(
					json_object_get(json_array_get(threads, 0), "tid")),
				json_string_value(
					json_object_get(json_array_get(threads, 0), "name")));
		else
			fprintf(out, "%zu thread%s%s\n", nthreads, nthreads == 1 ? "" : "s",
				nthreads == nranks ? ", one per rank" : "");
		if (!json_array_size(json_object_get(g, "frames"))) {
			const char *why = json_string_value(
				json_object_get(json_array_get(threads, 0), "error"));

			fprintf(out, "    no frames%s%s\n", why ? ": " : "", why ? why : "");
		}
		json_array_foreach (json_object_get(g, "frames"), k, fr) {
			const char *fn = json_string_value(json_object_get(fr, "function"));
			const char *file = json_string_value(json_object_get(fr, "file"));
			json_int_t line = json_integer_value(json_object_get(fr, "line"));
			struct stack_frame v;

			if (!strcmp(json_string_value(json_object_get(fr, "kind")) ?: "",
				    "python")) {
				fprintf(out, "        [py] %s (%s:%lld)\n", fn ? fn : "??",
					file ? file : "?", (long long)line);
				continue;
			}
			frame_text__from_json(fr, &v);
			fputs("    ", out);
			frame_text__fprint(out, &v, NULL, level++, FRAME_FULL);
			fputc('\n', out);
		}
	}
}
