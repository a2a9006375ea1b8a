// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>

#include "libgraph.h"
#include "objrecord.h"
#include "pkgindex.h"
#include "runtimes.h"

/* The fields of an object's record, in the order every record has them. */
static const char *const record_order[] = {
	"type",	     "t",	 "pid",		"comm",
	"id",	     "path",	 "soname",	"build_id",
	"base",	     "link_map", "namespace",	"origin",
	"parents",   "children", "needed",	"unresolved_needed",
	"needed_by", "roles",	 "in_link_map", "in_maps",
	"deleted",   "gone",	 "error",	"package",
};

/* The common field @key of @o (new reference), or NULL when it is none of them. */
static json_t *common_field(const struct libgraph *g, const struct lg_object *o, bool inventory,
			    const char *key)
{
	if (!strcmp(key, "path"))
		return json_string(o->path);
	if (!strcmp(key, "soname"))
		return o->soname ? json_string(o->soname) : json_null();
	if (!strcmp(key, "namespace"))
		return json_integer((int)o->ns);
	if (!strcmp(key, "origin"))
		return json_string(lg_origin__id(o->origin));
	if (!strcmp(key, "roles"))
		return inventory ? runtimes__roles_json(g, o->id) :
				   obj_roles__to_json(lg_object__roles(o));
	if (!strcmp(key, "package"))
		return pkg_owner__to_json(o->pkg);
	return NULL;
}

json_t *obj_record__new(const struct libgraph *g, const struct lg_object *o, bool inventory,
			json_t *own)
{
	json_t *rec = json_object(), *v;
	const char *key;
	bool failed = !rec;

	for (size_t i = 0; !failed && i < sizeof(record_order) / sizeof(record_order[0]); i++) {
		key = record_order[i];
		v = common_field(g, o, inventory, key);
		if (!v && own && (v = json_object_get(own, key)))
			json_incref(v);
		if (v && json_object_set_new(rec, key, v))
			failed = true;
	}
	json_object_foreach (own, key, v)
		if (!failed && !json_object_get(rec, key) && json_object_set(rec, key, v))
			failed = true;
	json_decref(own);
	if (failed) {
		json_decref(rec);
		return NULL;
	}
	return rec;
}

json_t *obj_record__loaded(const struct libgraph *g, const struct lg_object *o, pid_t pid,
			   bool has_t, uint64_t t)
{
	json_t *by = json_array(), *own;
	size_t n = libgraph__needed_by(g, o->id, NULL, 0);
	unsigned int *ids = n ? malloc(n * sizeof(*ids)) : NULL;

	/* The objects whose DT_NEEDED brought it, the one that loaded it first: none for a root,
	 * whatever loaded after it needs it too. */
	if (ids)
		libgraph__needed_by(g, o->id, ids, n);
	for (size_t p = 0; ids && p < n; p++)
		json_array_append_new(by, json_string(g->objs[ids[p]]->path));
	free(ids);
	/* The process's name when its graph was read: a process only attached to has no event
	 * that names it (check and report TRACE name processes from the trace alone). */
	own = json_pack("{s:s, s:i, s:s*, s:o}", "type", "loaded", "pid", pid, "comm",
			g->comm[0] ? g->comm : NULL, "needed_by", by);
	if (own && has_t)
		json_object_set_new(own, "t", json_integer((json_int_t)t));
	/* Where the process runs, on its program's record: as its namespace numbers it, and its
	 * container. */
	if (own && o->origin == LG_EXECUTABLE && g->ns_pid)
		json_object_set_new(own, "ns_pid", json_integer(g->ns_pid));
	if (own && o->origin == LG_EXECUTABLE && g->container[0])
		json_object_set_new(own, "container", json_string(g->container));
	return own ? obj_record__new(g, o, true, own) : NULL;
}
