/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One rank of a job as the cross-rank detectors compare it: what it maps and runs, its
 * environment and CPUs, flattened from its library graph so that a node can send it as JSON
 * to the front end that compares ranks of many nodes (check --job slurm:JOBID).
 */
#ifndef DLSCOPE_RANK_VIEW_H
#define DLSCOPE_RANK_VIEW_H

#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/types.h>

#include "roles.h"

struct libgraph;
struct runtime_list;

/* One object a rank maps. */
struct rank_object {
	char *path;	/* as the rank sees it */
	char *build_id; /* NULL: none */
	char *version;	/* of its first role that has one; "" none */
	char *label;	/* that role named with its versions, for the text; "" none */
};

/* One runtime a rank runs. */
struct rank_runtime {
	enum role_kind kind;
	enum role_impl impl;
	int pool_threads; /* -1 when its threads were not read */
	char *path;	  /* the implementing object */
	char *version;	  /* its release, else its version; "" unknown */
	char *label;	  /* its role named with its versions */
};

struct rank_view {
	int rank;
	pid_t pid;
	const char *comm;
	const char *node; /* where it runs; "" this host */
	bool read;	  /* false: the rank could not be read, nothing below is known */
	struct rank_object *objs;
	size_t n_objs;
	struct rank_runtime *rts;
	size_t n_rts;
	char **env; /* "NAME=VALUE" of job__environment's variables, sorted */
	size_t n_env;
	bool env_known;
	cpu_set_t cpus; /* the CPUs it may run on */
	char cpus_list[256];
	bool cpus_known;
};

/* @rv's objects and runtimes from a rank's graph and runtimes, and its environment and CPUs
 * read from /proc. 0, or -ENOMEM. */
int rank_view__fill(struct rank_view *rv, const struct libgraph *g, const struct runtime_list *rt);
/* What rank_view__fill found, as a node sends it; NULL when out of memory. */
json_t *rank_view__to_json(const struct rank_view *rv);
/* A view a node sent (@j, rank_view__to_json's) into @rv, whose rank, pid, comm and node the
 * caller sets. 0, or -EINVAL when @j is not such a view (@rv then stays unread). */
int rank_view__from_json(struct rank_view *rv, const json_t *j);
void rank_view__free(struct rank_view *rv);

#endif
