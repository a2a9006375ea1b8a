// SPDX-License-Identifier: GPL-2.0
/*
 * A rank's view as a node sends it and the front end reads it back (rank_view.c), and the job
 * detectors on views of two nodes: CPUs are counted node by node.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "rank_view.h"
#include "tap.h"

/* A rank on @node with one object (@extra: a second, libgomp) and an OpenBLAS of @pool threads. */
static void make_view(struct rank_view *rv, int rank, const char *node, bool extra, int pool)
{
	*rv = (struct rank_view){
		.rank = rank, .pid = 1000 + rank, .comm = "python3", .node = node
	};
	rv->read = true;
	rv->objs = calloc(2, sizeof(*rv->objs));
	rv->objs[rv->n_objs++] = (struct rank_object){ .path = strdup("/usr/bin/python3.11"),
						       .build_id = strdup("c561f3aa"),
						       .version = strdup(""),
						       .label = strdup("") };
	if (extra)
		rv->objs[rv->n_objs++] =
			(struct rank_object){ .path = strdup("/lib/libgomp.so.1"),
					      .build_id = NULL,
					      .version = strdup("5.1"),
					      .label = strdup("GNU libgomp (GCC 12), OpenMP 5.1") };
	rv->rts = calloc(1, sizeof(*rv->rts));
	rv->rts[rv->n_rts++] = (struct rank_runtime){ .kind = ROLE_BLAS,
						      .impl = IMPL_OPENBLAS,
						      .pool_threads = pool,
						      .path = strdup("/lib/libopenblas.so.0"),
						      .version = strdup("0.3.21"),
						      .label = strdup("OpenBLAS 0.3.21") };
	rv->env = calloc(1, sizeof(*rv->env));
	rv->env[rv->n_env++] = strdup(rank ? "OMP_NUM_THREADS=1" : "OMP_NUM_THREADS=2");
	rv->env_known = true;
	CPU_ZERO(&rv->cpus);
	CPU_SET(0, &rv->cpus);
	CPU_SET(1, &rv->cpus);
	snprintf(rv->cpus_list, sizeof(rv->cpus_list), "0-1");
	rv->cpus_known = true;
}

static void test_round_trip(void)
{
	struct rank_view a, b = { .rank = 1 };
	json_t *j;

	make_view(&a, 1, "n2", true, 3);
	j = rank_view__to_json(&a);
	CHECK(j != NULL, "a view writes as JSON");
	CHECK(!rank_view__from_json(&b, j), "and reads back");
	CHECK(b.read && b.n_objs == 2 && !strcmp(b.objs[1].path, "/lib/libgomp.so.1") &&
		      !b.objs[1].build_id && !strcmp(b.objs[0].build_id, "c561f3aa") &&
		      !strcmp(b.objs[1].label, a.objs[1].label),
	      "objects with their build-ids (none kept as none) and labels");
	CHECK(b.n_rts == 1 && b.rts[0].kind == ROLE_BLAS && b.rts[0].impl == IMPL_OPENBLAS &&
		      b.rts[0].pool_threads == 3 && !strcmp(b.rts[0].version, "0.3.21"),
	      "runtimes with kind, implementation, pool and version");
	CHECK(b.env_known && b.n_env == 1 && !strcmp(b.env[0], "OMP_NUM_THREADS=1"),
	      "the environment");
	CHECK(b.cpus_known && CPU_COUNT(&b.cpus) == 2 && CPU_ISSET(1, &b.cpus) &&
		      !strcmp(b.cpus_list, "0-1"),
	      "the CPUs");
	json_decref(j);
	rank_view__free(&b);

	/* A newer node's runtime kind is skipped; a view without objects is none. */
	j = json_pack("{s:[], s:[{s:s, s:s, s:i, s:s, s:s, s:s}], s:n, s:n}", "objects", "runtimes",
		      "kind", "quantum", "impl", "libq", "pool_threads", 1, "path", "/q", "version",
		      "", "label", "", "environment", "cpus");
	b = (struct rank_view){ 0 };
	CHECK(!rank_view__from_json(&b, j) && b.n_rts == 0 && !b.env_known && !b.cpus_known,
	      "an unknown runtime kind is skipped, unknown environment and CPUs stay unknown");
	rank_view__free(&b);
	json_decref(j);
	j = json_pack("{s:[]}", "runtimes");
	b = (struct rank_view){ 0 };
	CHECK(rank_view__from_json(&b, j) == -EINVAL && !b.read, "no objects: not a view");
	json_decref(j);
	rank_view__free(&a);
}

static bool title_has(const struct findings *fs, const char *id, const char *part)
{
	for (size_t i = 0; i < fs->n; i++)
		if (!strcmp(fs->f[i].id, id) && strstr(fs->f[i].title, part))
			return true;
	return false;
}

static void test_detectors_by_node(void)
{
	struct rank_view v[3];
	struct findings fs = { 0 };
	json_t *diff = json_object();
	struct job_ctx ctx = { .name = "Slurm job 7", .r = v, .n = 3, .diff = diff };

	/* n1: ranks 0 and 1, 1 + 3 and 1 + 1 threads on 2 CPUs; n2: rank 2 alone, 1 + 1. */
	make_view(&v[0], 0, "n1", false, 3);
	make_view(&v[1], 1, "n1", false, 1);
	make_view(&v[2], 2, "n2", true, 1);
	oversubscription__job(&ctx, &fs);
	rank_objects__job(&ctx, &fs);
	rank_environment__job(&ctx, &fs);
	CHECK(title_has(&fs, "oversubscription", "Slurm job 7 on node n1 run 6 threads"),
	      "n1's ranks oversubscribe its CPUs");
	CHECK(!title_has(&fs, "oversubscription", "node n2"),
	      "n2's rank does not: the same CPU numbers on two nodes are two CPUs");
	CHECK(json_array_size(json_object_get(json_object_get(diff, "cpus"), "nodes")) == 2,
	      "the diff counts CPUs node by node");
	CHECK(title_has(&fs, "rank-objects", "ranks of Slurm job 7 load different objects"),
	      "libgomp in rank 2 alone");
	CHECK(title_has(&fs, "rank-environment", "Slurm job 7"), "OMP_NUM_THREADS differs");
	for (int i = 0; i < 3; i++)
		rank_view__free(&v[i]);
	findings__free(&fs);
	json_decref(diff);
}

int main(void)
{
	test_round_trip();
	test_detectors_by_node();
	return tap_done();
}
