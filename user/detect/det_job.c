// SPDX-License-Identifier: GPL-2.0
/*
 * Across the ranks of a job (check --job): objects, versions or builds that not every rank
 * loaded; environment that differs between ranks; more threads computing on a node than the
 * CPUs its ranks may use.
 */
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "detector.h"
#include "paths.h"
#include "job.h"

/* The ranks listed in @ranks as JSON and as text ("0-2,4"). */
static json_t *rank_set(const int *ranks, size_t n, char *text, size_t len)
{
	int *copy = malloc((n ? n : 1) * sizeof(*copy));
	json_t *a = json_array();

	text[0] = '\0';
	if (!copy)
		return a;
	memcpy(copy, ranks, n * sizeof(*copy));
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(ranks[i]));
	job__format_ranks(copy, n, text, len);
	free(copy);
	return a;
}

static size_t readable(const struct job_ctx *ctx, int *ranks)
{
	size_t n = 0;

	for (size_t i = 0; i < ctx->n; i++)
		if (ctx->r[i].read)
			ranks[n++] = ctx->r[i].rank;
	return n;
}

struct obj_entry {
	const struct rank_object *o; /* the first rank's */
	int *ranks;
	size_t n;
};

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Every object some rank maps, once per path and build: which ranks map it. */
struct obj_table {
	struct obj_entry *e;
	size_t n, cap;
};

static int collect_objects(const struct job_ctx *ctx, struct obj_table *t)
{
	for (size_t i = 0; i < ctx->n; i++) {
		const struct rank_view *r = &ctx->r[i];

		for (size_t k = 0; r->read && k < r->n_objs; k++) {
			const struct rank_object *o = &r->objs[k];
			struct obj_entry *e;
			size_t m;

			for (m = 0; m < t->n; m++)
				if (!strcmp(t->e[m].o->path, o->path) &&
				    same_str(t->e[m].o->build_id, o->build_id))
					break;
			if (m == t->n) {
				if (t->n == t->cap && ARRAY_GROW(t->e, t->cap, 256))
					return -1;
				e = &t->e[t->n];
				*e = (struct obj_entry){ .o = o,
							 .ranks = calloc(ctx->n, sizeof(int)) };
				if (!e->ranks)
					return -1;
				t->n++;
			}
			/* One rank may map a file twice (two namespaces): count it once. */
			e = &t->e[m];
			if (!e->n || e->ranks[e->n - 1] != r->rank)
				e->ranks[e->n++] = r->rank;
		}
	}
	return 0;
}

/* The ranks of @all[@nread] that do not map @e, into @missing: how many. */
static size_t missing_ranks(const struct obj_entry *e, const int *all, size_t nread, int *missing)
{
	size_t nm = 0;

	for (size_t a = 0; a < nread; a++) {
		bool has = false;

		for (size_t b = 0; b < e->n && !has; b++)
			has = e->ranks[b] == all[a];
		if (!has)
			missing[nm++] = all[a];
	}
	return nm;
}

/* @e, which ranks @missing[@nm] lack, in the diff's objects and the finding's evidence. */
static void report_object(const struct job_ctx *ctx, const struct obj_entry *e, const int *missing,
			  size_t nm, json_t *diff, struct finding **f, struct findings *out)
{
	char in[256], notin[256];
	json_t *rs = rank_set(e->ranks, e->n, in, sizeof(in));
	json_t *ms = rank_set(missing, nm, notin, sizeof(notin));

	const struct rank_object *o = e->o;

	json_array_append_new(
		diff, json_pack("{s:s, s:o, s:s, s:s?, s:o, s:o}", "path", o->path, "build_id",
				o->build_id ? json_string(o->build_id) : json_null(), "version",
				o->version, "label", o->label[0] ? o->label : NULL, "ranks", rs,
				"missing_in", ms));
	if (!*f)
		*f = findings__add(out, "rank-objects", SEV_WARNING, ctx->launcher,
				   "ranks of %s load different objects", ctx->name);
	if (*f)
		finding__evidence(*f, "%s (%s, build-id %.12s): in rank%s %s, not in rank%s %s",
				  o->path, o->label[0] ? o->label : "version unknown",
				  o->build_id ? o->build_id : "none", e->n == 1 ? "" : "s", in,
				  nm == 1 ? "" : "s", notin);
}

void rank_objects__job(const struct job_ctx *ctx, struct findings *out)
{
	struct obj_table t = { 0 };
	size_t nread;
	int *all = calloc(ctx->n ? ctx->n : 1, sizeof(*all));
	json_t *diff = json_array();
	struct finding *f = NULL;

	if (!all)
		goto out;
	nread = readable(ctx, all);
	if (collect_objects(ctx, &t))
		goto out;
	for (size_t m = 0; m < t.n; m++) {
		int *missing;
		size_t nm;

		if (t.e[m].n == nread)
			continue;
		missing = calloc(nread, sizeof(*missing));
		if (!missing)
			break;
		nm = missing_ranks(&t.e[m], all, nread, missing);
		report_object(ctx, &t.e[m], missing, nm, diff, &f, out);
		free(missing);
	}
	if (f)
		finding__explain(
			f,
			"The ranks of one job are meant to run the same code: a rank that loads another "
			"library, another build or another copy (a vendored wheel, another "
			"LD_LIBRARY_PATH) computes differently, and collectives that assume the same "
			"code on every rank hang or give different results.",
			"Start every rank from the same installation and environment; each rank's own "
			"findings above say where an extra copy came from and which package to fix.");
out:
	for (size_t m = 0; m < t.n; m++)
		free(t.e[m].ranks);
	free(t.e);
	free(all);
	json_object_set_new(ctx->diff, "objects", diff);
}

/* The value of @name in @r's environment, or NULL when unset. */
static const char *env_value(const struct rank_view *r, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < r->n_env; i++)
		if (!strncmp(r->env[i], name, len) && r->env[i][len] == '=')
			return r->env[i] + len + 1;
	return NULL;
}

/* Every name some rank sets, once, into *@names (*@nn of them); -1 when out of memory. */
static int env_names(const struct job_ctx *ctx, char ***names, size_t *nn)
{
	size_t cap = 0; /* the room of *@names, empty when given */

	for (size_t i = 0; i < ctx->n; i++)
		for (size_t k = 0; ctx->r[i].env_known && k < ctx->r[i].n_env; k++) {
			size_t len = strcspn(ctx->r[i].env[k], "="), m;

			for (m = 0; m < *nn; m++)
				if (strlen((*names)[m]) == len &&
				    !strncmp((*names)[m], ctx->r[i].env[k], len))
					break;
			if (m < *nn)
				continue;
			if (ARRAY_RESERVE(*names, cap, *nn + 1))
				return -1;
			if (!((*names)[*nn] = strndup(ctx->r[i].env[k], len)))
				return -1;
			(*nn)++;
		}
	return 0;
}

/* @name's value in each rank whose environment is known (@vals); whether two differ. */
static bool values_differ(const struct job_ctx *ctx, const char *name, const char **vals)
{
	size_t first = ctx->n;
	bool differ = false;

	for (size_t i = 0; i < ctx->n; i++) {
		if (!ctx->r[i].env_known)
			continue;
		vals[i] = env_value(&ctx->r[i], name);
		if (first == ctx->n)
			first = i;
		else if (!same_str(vals[i], vals[first]))
			differ = true;
	}
	return differ;
}

/*
 * The ranks grouped by @name's value (@vals), in rank order of each value's first rank: as
 * the diff's values, and as the evidence @line ("NAME: "v" in ranks 0-1; unset in rank 2").
 */
static json_t *group_by_value(const struct job_ctx *ctx, const char *name, const char **vals,
			      int *ranks, char *line, size_t len)
{
	json_t *values = json_array();
	size_t used = (size_t)snprintf(line, len, "%s:", name);

	for (size_t i = 0; i < ctx->n; i++) {
		bool seen = false;
		char rtext[256];
		size_t nk = 0;

		if (!ctx->r[i].env_known)
			continue;
		for (size_t p = 0; p < i && !seen; p++)
			seen = ctx->r[p].env_known && same_str(vals[p], vals[i]);
		if (seen)
			continue;
		for (size_t p = i; p < ctx->n; p++)
			if (ctx->r[p].env_known && same_str(vals[p], vals[i]))
				ranks[nk++] = ctx->r[p].rank;
		json_array_append_new(
			values, json_pack("{s:o, s:o}", "value",
					  vals[i] ? json_string(vals[i]) : json_null(), "ranks",
					  rank_set(ranks, nk, rtext, sizeof(rtext))));
		if (used >= len)
			continue;
		if (vals[i])
			used += (size_t)snprintf(line + used, len - used, " \"%s\" in rank%s %s;",
						 vals[i], nk == 1 ? "" : "s", rtext);
		else
			used += (size_t)snprintf(line + used, len - used, " unset in rank%s %s;",
						 nk == 1 ? "" : "s", rtext);
	}
	if (used < len && line[used - 1] == ';')
		line[used - 1] = '\0';
	return values;
}

void rank_environment__job(const struct job_ctx *ctx, struct findings *out)
{
	json_t *diff = json_array();
	struct finding *f = NULL;
	bool serious = false;
	int *ranks = calloc(ctx->n ? ctx->n : 1, sizeof(*ranks));
	const char **vals = calloc(ctx->n ? ctx->n : 1, sizeof(*vals));
	char **names = NULL;
	size_t nn = 0;

	if (!ranks || !vals || env_names(ctx, &names, &nn))
		goto out;
	for (size_t m = 0; m < nn; m++) {
		char line[1024];
		json_t *values;

		if (!values_differ(ctx, names[m], vals))
			continue;
		values = group_by_value(ctx, names[m], vals, ranks, line, sizeof(line));
		json_array_append_new(diff,
				      json_pack("{s:s, s:o}", "name", names[m], "values", values));
		/* One device per rank is how GPU jobs are run: worth saying, not a warning. */
		serious |= strcmp(names[m], "CUDA_VISIBLE_DEVICES") &&
			   strcmp(names[m], "HIP_VISIBLE_DEVICES");
		if (!f)
			f = findings__add(out, "rank-environment", SEV_INFO, ctx->launcher,
					  "ranks of %s run with different environments", ctx->name);
		if (f)
			finding__evidence(f, "%s", line);
	}
	if (f) {
		f->sev = serious ? SEV_WARNING : SEV_INFO;
		finding__explain(
			f,
			"Thread counts (*_NUM_THREADS), the libraries found (LD_LIBRARY_PATH, "
			"LD_PRELOAD) and the communication settings (NCCL_*) decide what each rank "
			"runs and how fast: ranks that differ load other code, run other pool sizes "
			"and reach the collectives at other times, so the job runs at the pace of "
			"its slowest rank or hangs when the settings must agree.",
			"Set these variables once for the whole job (in the launcher's environment or "
			"its --env options), not per rank, unless a rank is meant to differ (one GPU "
			"per rank through CUDA_VISIBLE_DEVICES).");
	}
out:
	for (size_t m = 0; m < nn; m++)
		free(names[m]);
	free(names);
	free(ranks);
	free(vals);
	json_object_set_new(ctx->diff, "environment", diff);
}

/*
 * The runtimes whose pools compute: OpenMP, BLAS, TBB, oneDNN. A C++ runtime's "pool" is every
 * std::thread (a communication or I/O thread that mostly sleeps), not a compute pool.
 */
static int compute_pool(const struct rank_runtime *rt)
{
	enum role_kind k = rt->kind;

	if (rt->pool_threads <= 0)
		return 0;
	return k == ROLE_OPENMP || k == ROLE_BLAS || k == ROLE_TBB || k == ROLE_ONEDNN ?
		       rt->pool_threads :
		       0;
}

/* The threads @r computes with: its main thread and its compute pools' threads. */
static int rank_pool(const struct rank_view *r)
{
	int pool = 0;

	for (size_t k = 0; k < r->n_rts; k++)
		pool += compute_pool(&r->rts[k]);
	return pool;
}

/* The ranks of one node (@node, "" this host), their threads and the CPUs they may use. */
struct node_load {
	const char *node;
	cpu_set_t cpus;
	int threads, pools;
};

static void node_load(const struct job_ctx *ctx, const char *node, struct node_load *nl)
{
	*nl = (struct node_load){ .node = node };
	CPU_ZERO(&nl->cpus);
	for (size_t i = 0; i < ctx->n; i++) {
		const struct rank_view *r = &ctx->r[i];

		if (!r->read || strcmp(r->node ?: "", node))
			continue;
		if (r->cpus_known)
			CPU_OR(&nl->cpus, &nl->cpus, &r->cpus);
		/* The main thread computes beside its pool in every parallel region. */
		nl->threads += 1 + rank_pool(r);
		nl->pools += rank_pool(r);
	}
}

/* Each rank of @nl's node that computes, as evidence: its pools and its CPUs. */
static void node_evidence(const struct job_ctx *ctx, const struct node_load *nl, struct finding *f)
{
	for (size_t i = 0; i < ctx->n; i++) {
		const struct rank_view *r = &ctx->r[i];
		char pools_text[512] = "";
		size_t used = 0;
		int pool = 0;

		if (!r->read || strcmp(r->node ?: "", nl->node))
			continue;
		for (size_t k = 0; k < r->n_rts && used < sizeof(pools_text); k++) {
			const struct rank_runtime *rt = &r->rts[k];

			if (!compute_pool(rt))
				continue;
			pool += rt->pool_threads;
			used += (size_t)snprintf(pools_text + used, sizeof(pools_text) - used,
						 "%s%s %s: %d", used ? ", " : "",
						 role_impl__name(rt->impl), path_base(rt->path),
						 rt->pool_threads);
		}
		finding__evidence(
			f,
			"rank %d (pid %d%s%s): main thread + %d pool thread%s%s%s%s; may use CPUs %s",
			r->rank, r->pid, nl->node[0] ? " on " : "", nl->node, pool,
			pool == 1 ? "" : "s", used ? " (" : "", pools_text, used ? ")" : "",
			r->cpus_known ? r->cpus_list : "?");
	}
}

/* Whether rank @i is the first of its node, so that each node is judged once. */
static bool first_of_node(const struct job_ctx *ctx, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (!strcmp(ctx->r[k].node ?: "", ctx->r[i].node ?: ""))
			return false;
	return true;
}

void oversubscription__job(const struct job_ctx *ctx, struct findings *out)
{
	json_t *ranks = json_array(), *nodes = json_array();
	int total = 0, cpus = 0;

	for (size_t i = 0; i < ctx->n; i++) {
		const struct rank_view *r = &ctx->r[i];

		if (!r->read)
			continue;
		json_array_append_new(
			ranks,
			json_pack("{s:i, s:i, s:s?, s:o, s:i, s:i}", "rank", r->rank, "pid", r->pid,
				  "node", r->node && r->node[0] ? r->node : NULL, "cpus_allowed",
				  r->cpus_known ? json_string(r->cpus_list) : json_null(),
				  "pool_threads", rank_pool(r), "threads", 1 + rank_pool(r)));
	}
	/* CPUs are a node's own: the ranks of two nodes never share one. */
	for (size_t i = 0; i < ctx->n; i++) {
		struct node_load nl;
		struct finding *f;
		int ncpu;

		if (!ctx->r[i].read || !first_of_node(ctx, i))
			continue;
		node_load(ctx, ctx->r[i].node ?: "", &nl);
		ncpu = CPU_COUNT(&nl.cpus);
		total += nl.threads;
		cpus += ncpu;
		json_array_append_new(nodes, json_pack("{s:s, s:i, s:i}", "node", nl.node, "cpus",
						       ncpu, "threads", nl.threads));
		if (!nl.pools || !ncpu || nl.threads <= ncpu)
			continue;
		f = findings__add(out, "oversubscription", SEV_WARNING, ctx->launcher,
				  "the ranks of %s%s%s run %d threads (main and pool threads) on "
				  "the %d CPU%s they may use",
				  ctx->name, nl.node[0] ? " on node " : "", nl.node, nl.threads,
				  ncpu, ncpu == 1 ? "" : "s");
		if (!f)
			continue;
		node_evidence(ctx, &nl, f);
		finding__explain(
			f,
			"Each rank sizes its thread pools to the CPUs it sees, not knowing that other "
			"ranks share them: together they run more threads than there are CPUs, so "
			"threads wait for a CPU inside parallel regions, spinning barriers burn the "
			"time of the others, and the collectives wait for the slowest rank.",
			"Give each rank its share: OMP_NUM_THREADS (and MKL_NUM_THREADS, "
			"OPENBLAS_NUM_THREADS) = CPUs / ranks on the node, at least 1; or bind each "
			"rank to CPUs of its own (mpirun --bind-to core, srun --cpu-bind=cores, "
			"taskset).");
	}
	json_object_set_new(ctx->diff, "cpus",
			    json_pack("{s:o, s:i, s:i, s:o}", "ranks", ranks, "cpus", cpus,
				      "threads", total, "nodes", nodes));
}

/*
 * Two pools busy in the same second, with more threads between them (their pool threads and the
 * threads that start their regions) than the CPUs the process may use.
 */
void oversubscription__live(const struct live_pools *lp, struct findings *out)
{
	int total = lp->starters, busy = 0;
	struct finding *f;

	for (size_t i = 0; i < lp->n; i++) {
		total += lp->p[i].pool_threads;
		busy += lp->p[i].regions > 0;
	}
	if (busy < 2 || lp->ncpu <= 0 || total <= lp->ncpu)
		return;
	f = findings__add(out, "oversubscription", SEV_WARNING, lp->pid,
			  "process %d (%s) runs %d threads in %d thread pools at once on the %d "
			  "CPU%s it may use",
			  lp->pid, lp->comm, total, busy, lp->ncpu, lp->ncpu == 1 ? "" : "s");
	if (!f)
		return;
	for (size_t i = 0; i < lp->n; i++)
		if (lp->p[i].regions)
			finding__evidence(
				f, "%s: %llu parallel regions in one second, %d pool thread%s",
				lp->p[i].runtime, lp->p[i].regions, lp->p[i].pool_threads,
				lp->p[i].pool_threads == 1 ? "" : "s");
	finding__evidence(f, "%d thread%s started those regions; may use CPUs %s", lp->starters,
			  lp->starters == 1 ? "" : "s", lp->cpus_list);
	finding__explain(
		f,
		"Each runtime sizes its pool to the CPUs it sees, not knowing about the other: "
		"running at the same time, their threads wait for a CPU inside parallel regions and "
		"the spinning barriers of one pool burn the time of the other.",
		"Use one runtime (one OpenMP, a BLAS built on it), or give each pool its share: "
		"OMP_NUM_THREADS and OPENBLAS_NUM_THREADS (or threadpoolctl's limits) so that together "
		"they fit the CPUs; OMP_WAIT_POLICY=passive stops idle pools from spinning.");
}

/*
 * rank-gpu-versions: a GPU library whose version differs between ranks. NCCL first (the ranks'
 * NCCLs must agree on the wire protocol: a mismatch hangs at the first collective), then RCCL,
 * the CUDA runtime, cuDNN and cuBLAS (ranks that compute differently).
 */
static const enum role_impl rank_gpu[] = { IMPL_NCCL, IMPL_RCCL, IMPL_CUDA_RUNTIME, IMPL_CUDNN,
					   IMPL_CUBLAS };

struct gpu_version {
	const char *version, *label, *path; /* the first rank's */
	int *ranks;
	size_t n;
};

/* Each version of @impl across the ranks, with the ranks that load it: returns how many. */
static size_t gpu_versions(const struct job_ctx *ctx, enum role_impl impl, struct gpu_version *v,
			   size_t max)
{
	size_t nv = 0;

	for (size_t i = 0; i < ctx->n; i++) {
		const struct rank_view *rv = &ctx->r[i];

		for (size_t k = 0; rv->read && k < rv->n_rts; k++) {
			const struct rank_runtime *r = &rv->rts[k];
			size_t m;

			if (r->impl != impl || !r->version[0])
				continue;
			for (m = 0; m < nv; m++)
				if (!strcmp(v[m].version, r->version))
					break;
			if (m == nv) {
				if (nv == max)
					continue;
				v[nv] = (struct gpu_version){
					.version = r->version,
					.label = r->label,
					.path = r->path,
					.ranks = calloc(ctx->n, sizeof(int)),
				};
				if (!v[nv].ranks)
					continue;
				nv++;
			}
			if (!v[m].n || v[m].ranks[v[m].n - 1] != rv->rank)
				v[m].ranks[v[m].n++] = rv->rank;
		}
	}
	return nv;
}

void rank_gpu__job(const struct job_ctx *ctx, struct findings *out)
{
	json_t *diff = json_array();

	for (size_t k = 0; k < sizeof(rank_gpu) / sizeof(rank_gpu[0]); k++) {
		struct gpu_version v[16];
		size_t nv = gpu_versions(ctx, rank_gpu[k], v, 16);
		json_t *versions = json_array();
		struct finding *f = NULL;

		for (size_t m = 0; nv >= 2 && m < nv; m++) {
			char in[256];
			json_t *rs = rank_set(v[m].ranks, v[m].n, in, sizeof(in));

			json_array_append_new(versions, json_pack("{s:s, s:s, s:s, s:o}", "version",
								  v[m].version, "label", v[m].label,
								  "path", v[m].path, "ranks", rs));
			if (!f)
				f = findings__add(out, "rank-gpu-versions", SEV_ERROR,
						  ctx->launcher,
						  "ranks of %s load %zu versions of %s", ctx->name,
						  nv, role_impl__name(rank_gpu[k]));
			finding__evidence(f, "%s (%s): in rank%s %s", v[m].label, v[m].path,
					  v[m].n == 1 ? "" : "s", in);
		}
		if (f) {
			finding__explain(
				f,
				rank_gpu[k] == IMPL_NCCL || rank_gpu[k] == IMPL_RCCL ?
					"The ranks of a job talk through NCCL, whose versions need not "
					"agree on the protocol, buffer sizes and algorithms they pick: "
					"ranks with different NCCLs hang at their first collective or "
					"exchange garbage." :
					"The ranks of one job are meant to compute the same thing: another "
					"CUDA runtime, cuDNN or cuBLAS picks other kernels and algorithms, "
					"so ranks diverge or disagree in results.",
				"Start every rank from the same environment: the same wheels (torch and "
				"the nvidia-nccl-cu12 it pins), the same LD_LIBRARY_PATH and container "
				"image on every node; the paths above say which installation each rank "
				"loaded from.");
			json_array_append_new(diff, json_pack("{s:s, s:s, s:o}", "impl",
							      role_impl__id(rank_gpu[k]), "name",
							      role_impl__name(rank_gpu[k]),
							      "versions", versions));
		} else {
			json_decref(versions);
		}
		for (size_t m = 0; m < nv; m++)
			free(v[m].ranks);
	}
	json_object_set_new(ctx->diff, "gpu", diff);
}
