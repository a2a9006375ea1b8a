// SPDX-License-Identifier: GPL-2.0
/* A rank's view for the cross-rank detectors: flattened from its graph, to and from JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "elfobj.h"
#include "job.h"
#include "libgraph.h"
#include "rank_view.h"
#include "runtimes.h"

/* The first role that has a version: its version and its label, copied into @o. */
static int object_version(struct rank_object *o, const struct lg_object *lo)
{
	const struct obj_roles *roles = lg_object__roles(lo);
	char label[160] = "";
	const char *version = "";

	for (unsigned int k = 0; roles && k < roles->n; k++)
		if (roles->r[k].version[0] || roles->r[k].release[0]) {
			obj_role__label(&roles->r[k], label, sizeof(label));
			version = roles->r[k].version;
			break;
		}
	o->version = strdup(version);
	o->label = strdup(label);
	return o->version && o->label ? 0 : -ENOMEM;
}

static int fill_objects(struct rank_view *rv, const struct libgraph *g)
{
	size_t cap = 0;

	for (size_t k = 0; k < g->n; k++) {
		const struct lg_object *lo = g->objs[k];
		const char *bid = lo->elf ? elfobj__build_id(lo->elf) : NULL;
		struct rank_object *o;

		if (lo->gone || lo->origin == LG_VDSO || !lo->path || !lo->path[0])
			continue;
		if (ARRAY_RESERVE(rv->objs, cap, rv->n_objs + 1))
			return -ENOMEM;
		o = &rv->objs[rv->n_objs++];
		*o = (struct rank_object){ .path = strdup(lo->path),
					   .build_id = bid ? strdup(bid) : NULL };
		if (!o->path || (bid && !o->build_id) || object_version(o, lo))
			return -ENOMEM;
	}
	return 0;
}

static int fill_runtimes(struct rank_view *rv, const struct libgraph *g,
			 const struct runtime_list *rt)
{
	char label[160];

	rv->rts = calloc(rt->n ? rt->n : 1, sizeof(*rv->rts));
	if (!rv->rts)
		return -ENOMEM;
	for (size_t k = 0; k < rt->n; k++) {
		const struct obj_role *r = &rt->r[k].role;
		struct rank_runtime *x = &rv->rts[rv->n_rts++];

		obj_role__label(r, label, sizeof(label));
		*x = (struct rank_runtime){
			.kind = r->kind,
			.impl = r->impl,
			.pool_threads = rt->r[k].pool_threads,
			.path = strdup(g->objs[rt->r[k].obj]->path ?: ""),
			.version = strdup(r->release[0] ? r->release : r->version),
			.label = strdup(label),
		};
		if (!x->path || !x->version || !x->label)
			return -ENOMEM;
	}
	return 0;
}

int rank_view__fill(struct rank_view *rv, const struct libgraph *g, const struct runtime_list *rt)
{
	static const struct runtime_list none;

	rv->read = true;
	rv->env_known = !job__environment(rv->pid, &rv->env, &rv->n_env);
	rv->cpus_known =
		!job__cpus_allowed(rv->pid, &rv->cpus, rv->cpus_list, sizeof(rv->cpus_list));
	if (fill_objects(rv, g) || fill_runtimes(rv, g, rt ? rt : &none))
		return -ENOMEM;
	return 0;
}

json_t *rank_view__to_json(const struct rank_view *rv)
{
	json_t *objs = json_array(), *rts = json_array(), *env = NULL, *cpus = NULL;

	for (size_t i = 0; i < rv->n_objs; i++) {
		const struct rank_object *o = &rv->objs[i];

		json_array_append_new(objs, json_pack("{s:s, s:s?, s:s, s:s}", "path", o->path,
						      "build_id", o->build_id, "version",
						      o->version, "label", o->label));
	}
	for (size_t i = 0; i < rv->n_rts; i++) {
		const struct rank_runtime *x = &rv->rts[i];

		json_array_append_new(rts, json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "kind",
						     role_kind__id(x->kind), "impl",
						     role_impl__id(x->impl), "pool_threads",
						     x->pool_threads, "path", x->path, "version",
						     x->version, "label", x->label));
	}
	if (rv->env_known) {
		env = json_array();
		for (size_t i = 0; i < rv->n_env; i++)
			json_array_append_new(env, json_string(rv->env[i]));
	}
	if (rv->cpus_known) {
		cpus = json_array();
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &rv->cpus))
				json_array_append_new(cpus, json_integer(c));
	}
	return json_pack("{s:o, s:o, s:o*, s:o*, s:s?}", "objects", objs, "runtimes", rts,
			 "environment", env, "cpus", cpus, "cpus_list",
			 rv->cpus_known ? rv->cpus_list : NULL);
}

static char *str_of(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return strdup(s ? s : "");
}

static int objects_from_json(struct rank_view *rv, const json_t *a)
{
	const json_t *x;
	size_t i;

	rv->objs = calloc(json_array_size(a) ?: 1, sizeof(*rv->objs));
	if (!rv->objs)
		return -ENOMEM;
	json_array_foreach (a, i, x) {
		struct rank_object *o = &rv->objs[rv->n_objs];
		const char *bid = json_string_value(json_object_get(x, "build_id"));

		if (!json_is_string(json_object_get(x, "path")))
			return -EINVAL;
		rv->n_objs++;
		*o = (struct rank_object){ .path = str_of(x, "path"),
					   .build_id = bid ? strdup(bid) : NULL,
					   .version = str_of(x, "version"),
					   .label = str_of(x, "label") };
		if (!o->path || !o->version || !o->label || (bid && !o->build_id))
			return -ENOMEM;
	}
	return 0;
}

static int runtimes_from_json(struct rank_view *rv, const json_t *a)
{
	const json_t *x;
	size_t i;

	rv->rts = calloc(json_array_size(a) ?: 1, sizeof(*rv->rts));
	if (!rv->rts)
		return -ENOMEM;
	json_array_foreach (a, i, x) {
		int kind = role_kind__parse(json_string_value(json_object_get(x, "kind")));
		int impl = role_impl__parse(json_string_value(json_object_get(x, "impl")));
		struct rank_runtime *r = &rv->rts[rv->n_rts];

		/* A kind or implementation this build does not know: a newer node's; skip it. */
		if (kind < 0 || impl < 0)
			continue;
		rv->n_rts++;
		*r = (struct rank_runtime){
			.kind = kind,
			.impl = impl,
			.pool_threads = (int)json_integer_value(json_object_get(x, "pool_threads")),
			.path = str_of(x, "path"),
			.version = str_of(x, "version"),
			.label = str_of(x, "label"),
		};
		if (!r->path || !r->version || !r->label)
			return -ENOMEM;
	}
	return 0;
}

static int env_from_json(struct rank_view *rv, const json_t *a)
{
	const json_t *x;
	size_t i;

	rv->env = calloc(json_array_size(a) ?: 1, sizeof(*rv->env));
	if (!rv->env)
		return -ENOMEM;
	json_array_foreach (a, i, x)
		if (json_is_string(x) && !(rv->env[rv->n_env++] = strdup(json_string_value(x))))
			return -ENOMEM;
	rv->env_known = true;
	return 0;
}

int rank_view__from_json(struct rank_view *rv, const json_t *j)
{
	const json_t *env = json_object_get(j, "environment"), *cpus = json_object_get(j, "cpus");
	const json_t *c;
	size_t i;
	int err;

	if (!json_is_array(json_object_get(j, "objects")) ||
	    !json_is_array(json_object_get(j, "runtimes")))
		return -EINVAL;
	err = objects_from_json(rv, json_object_get(j, "objects"));
	if (!err)
		err = runtimes_from_json(rv, json_object_get(j, "runtimes"));
	if (!err && json_is_array(env))
		err = env_from_json(rv, env);
	if (err) {
		rank_view__free(rv);
		return err;
	}
	if (json_is_array(cpus)) {
		CPU_ZERO(&rv->cpus);
		json_array_foreach (cpus, i, c)
			if (json_integer_value(c) >= 0 && json_integer_value(c) < CPU_SETSIZE)
				CPU_SET((int)json_integer_value(c), &rv->cpus);
		snprintf(rv->cpus_list, sizeof(rv->cpus_list), "%s",
			 json_string_value(json_object_get(j, "cpus_list")) ?: "?");
		rv->cpus_known = true;
	}
	rv->read = true;
	return 0;
}

void rank_view__free(struct rank_view *rv)
{
	for (size_t i = 0; i < rv->n_objs; i++) {
		free(rv->objs[i].path);
		free(rv->objs[i].build_id);
		free(rv->objs[i].version);
		free(rv->objs[i].label);
	}
	for (size_t i = 0; i < rv->n_rts; i++) {
		free(rv->rts[i].path);
		free(rv->rts[i].version);
		free(rv->rts[i].label);
	}
	for (size_t i = 0; i < rv->n_env; i++)
		free(rv->env[i]);
	free(rv->objs);
	free(rv->rts);
	free(rv->env);
	rv->objs = NULL;
	rv->rts = NULL;
	rv->env = NULL;
	rv->n_objs = rv->n_rts = rv->n_env = 0;
	rv->read = rv->env_known = rv->cpus_known = false;
}
