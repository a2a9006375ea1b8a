// SPDX-License-Identifier: GPL-2.0
/* Identical JSON values sent once (jsonfold.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "jsonfold.h"

int jsonfold__init(struct jsonfold *f)
{
	*f = (struct jsonfold){ .values = json_array() };
	return f->values ? 0 : -ENOMEM;
}

void jsonfold__free(struct jsonfold *f)
{
	for (size_t i = 0; i < json_array_size(f->values); i++)
		free(f->keys[i]);
	free(f->keys);
	json_decref(f->values);
	idxmap__free(&f->map);
	*f = (struct jsonfold){ 0 };
}

struct fold_key {
	const struct jsonfold *f;
	const char *key;
};

static bool key_eq(size_t idx, const void *ctx)
{
	const struct fold_key *k = ctx;

	return !strcmp(k->f->keys[idx], k->key);
}

int jsonfold__add(struct jsonfold *f, json_t *value, const char *key, size_t *at)
{
	size_t n = json_array_size(f->values);
	char *own = value ? (key ? strdup(key) : json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS)) :
			    NULL;
	struct fold_key k = { f, own };
	int added;

	if (!own || (n == f->cap && ARRAY_GROW(f->keys, f->cap, 16)))
		goto nomem;
	added = idxmap__insert(&f->map, idxmap__hash_bytes(own, strlen(own)), n, key_eq, &k, at);
	if (added < 0 || (added && json_array_append(f->values, value)))
		goto nomem;
	if (added)
		f->keys[n] = own;
	else
		free(own);
	json_decref(value);
	return 0;
nomem:
	free(own);
	json_decref(value);
	return -ENOMEM;
}

int jsonfold__ref(const json_t *v, size_t *at)
{
	const json_t *k = json_object_get(v, "folded");

	if (!json_is_object(v) || json_object_size(v) != 1 || !json_is_integer(k) ||
	    json_integer_value(k) < 0)
		return 0;
	*at = (size_t)json_integer_value(k);
	return 1;
}

int jsonfold__member(struct jsonfold *f, json_t *obj, const char *name, const json_t *in)
{
	json_t *v = json_object_get(obj, name);
	size_t at;

	if (!v || json_is_null(v))
		return 0;
	if (jsonfold__ref(v, &at)) {
		v = json_array_get(in, at);
		/* Past the table below, or none: no value, never another level's entry K. */
		if (!v)
			return json_object_set_new(obj, name, json_null()) ? -ENOMEM : 0;
	}
	if (jsonfold__add(f, json_incref(v), NULL, &at))
		return -ENOMEM;
	return json_object_set_new(obj, name, json_pack("{s:I}", "folded", (json_int_t)at)) ?
		       -ENOMEM :
		       0;
}

int jsonfold__unfold_member(json_t *obj, const char *name, const json_t *table)
{
	const json_t *v = json_object_get(obj, name);
	json_t *value;
	size_t at;

	if (!jsonfold__ref(v, &at))
		return 0;
	value = json_array_get(table, at);
	if (!value)
		return -EINVAL;
	return json_object_set(obj, name, value) ? -ENOMEM : 0;
}
