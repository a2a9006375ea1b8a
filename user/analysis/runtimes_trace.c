// SPDX-License-Identifier: GPL-2.0
/*
 * The runtime inventory of a recorded process, from its trace's `loaded` records: the same
 * grouping (runtimes__group) as a live one, with none of what only a live process shows.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "roles.h"
#include "runtimes.h"

/* The loaded record (an index into @recs) whose path is @path, in namespace @ns if one is. */
static long record_of(const json_t *recs, const char *path, json_int_t ns)
{
	const json_t *rec;
	long any = -1;
	size_t i;

	json_array_foreach (recs, i, rec) {
		if (!path || strcmp(json_string_value(json_object_get(rec, "path")) ?: "", path))
			continue;
		if (json_integer_value(json_object_get(rec, "namespace")) == ns)
			return (long)i;
		if (any < 0)
			any = (long)i;
	}
	return any;
}

static json_t *copy_or_null(const json_t *v)
{
	return v ? json_copy((json_t *)v) : json_null();
}

/*
 * Every runtime role of the loaded records, each with the record it forwards to: @*refs and
 * @*roles, @*n of them, grown here from their room @*cap_refs and @*cap_roles (kept for the
 * caller to free, also on -ENOMEM).
 */
static int loaded_roles(const json_t *recs, struct rt_ref **refs, const json_t ***roles, size_t *n,
			size_t *cap_refs, size_t *cap_roles)
{
	const json_t *rec, *role;
	size_t i;

	json_array_foreach (recs, i, rec) {
		size_t k;

		json_array_foreach (json_object_get(rec, "roles"), k, role) {
			int kind =
				role_kind__parse(json_string_value(json_object_get(role, "kind")));
			const char *front = json_string_value(json_object_get(role, "front_of"));
			long impl = (long)i;

			if (kind < 0 || !json_is_true(json_object_get(role, "runtime")))
				continue;
			/* The trace says what it forwards to: the path of that object. */
			if (front)
				impl = record_of(
					recs, front,
					json_integer_value(json_object_get(rec, "namespace")));
			if ((*n == *cap_refs && ARRAY_GROW(*refs, *cap_refs, 16)) ||
			    (*n == *cap_roles && ARRAY_GROW(*roles, *cap_roles, 16)))
				return -ENOMEM;
			/* A front of an object the trace never loaded is shown as what it is. */
			(*refs)[*n] = (struct rt_ref){ .kind = (enum role_kind)kind,
						       .self = (long)i,
						       .impl = impl < 0 ? (long)i : impl };
			(*roles)[(*n)++] = role;
		}
	}
	return 0;
}

/*
 * RUNTIME's form of role @r of record @rec: the role's fields, and null for what only a live
 * process has. NULL when out of memory.
 */
static json_t *loaded_runtime(const json_t *r, const json_t *rec)
{
	const json_t *v;
	const char *key;
	json_t *one = json_pack(
		"{s:O, s:O, s:O, s:o, s:n, s:O, s:n, s:b, s:n, s:n, s:n, s:n, s:[], "
		"s:o}",
		"kind", json_object_get(r, "kind"), "impl", json_object_get(r, "impl"), "name",
		json_object_get(r, "name"), "version", copy_or_null(json_object_get(r, "version")),
		"object", "path", json_object_get(rec, "path"), "real_path", "static",
		json_is_true(json_object_get(r, "static")), "threading_layer", "num_threads",
		"num_threads_from", "pool_threads", "fronts", "package",
		copy_or_null(json_object_get(rec, "package")));

	if (!one)
		return NULL;
	json_object_foreach ((json_t *)r, key, v)
		if (!json_object_get(one, key) && strcmp(key, "detail") && strcmp(key, "runtime") &&
		    strcmp(key, "front_of"))
			json_object_set(one, key, (json_t *)v);
	return one;
}

json_t *runtimes__from_loaded(const json_t *recs)
{
	struct rt_ref *refs = calloc(1, sizeof(*refs));
	const json_t **roles = calloc(1, sizeof(*roles));
	size_t n = 0, cap_refs = 1, cap_roles = 1, *owner = NULL, i;
	json_t *out = json_array(), **made = NULL;

	if (!refs || !roles || !out || loaded_roles(recs, &refs, &roles, &n, &cap_refs, &cap_roles))
		goto nomem;
	owner = calloc(n ? n : 1, sizeof(*owner));
	made = calloc(n ? n : 1, sizeof(*made));
	if (!owner || !made)
		goto nomem;
	runtimes__group(refs, n, owner);
	for (i = 0; i < n; i++) {
		json_t *one;

		if (owner[i] != i)
			continue;
		one = loaded_runtime(roles[i], json_array_get(recs, (size_t)refs[i].self));
		if (!one || json_array_append_new(out, one))
			goto nomem;
		made[i] = one;
	}
	/* Then each front under its runtime, as a live inventory lists them. */
	for (i = 0; i < n; i++)
		if (owner[i] != i &&
		    json_array_append(json_object_get(made[owner[i]], "fronts"),
				      json_object_get(json_array_get(recs, (size_t)refs[i].self),
						      "path")))
			goto nomem;
	free(refs);
	free(roles);
	free(owner);
	free(made);
	return out;
nomem:
	free(refs);
	free(roles);
	free(owner);
	free(made);
	json_decref(out);
	return NULL;
}
