/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One loaded object as a record: what libs --json lists (docs/libs-schema.md) and what a trace's
 * "loaded" record says (docs/trace-format.md), which the TUI applies for its snapshot as for a
 * live or replayed trace.
 */
#ifndef DLSCOPE_OBJRECORD_H
#define DLSCOPE_OBJRECORD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct libgraph;
struct lg_object;

/*
 * Object @o of @g as a JSON object (new reference), or NULL when out of memory: the fields every
 * record of an object has (path, soname, namespace, origin, roles, package) and the caller's own
 * fields in @own (stolen; may be NULL), all in one key order, whoever gives them; fields of @own
 * that order does not name come last. @inventory: the roles as the runtime inventory counts them
 * (a front's role says front_of, a libstdc++ linked in is one more role), as a trace's record,
 * which stands alone, says them; else the object's own roles.
 */
json_t *obj_record__new(const struct libgraph *g, const struct lg_object *o, bool inventory,
			json_t *own);
/*
 * The "loaded" record of @o of process @pid's graph @g, without "rank": at time @t, or (@has_t
 * false) with no "t", the record of a snapshot, which says the object is there but not when it
 * came.
 */
json_t *obj_record__loaded(const struct libgraph *g, const struct lg_object *o, pid_t pid,
			   bool has_t, uint64_t t);

#endif
