// SPDX-License-Identifier: GPL-2.0
/* Identical JSON values sent once through two levels of a fan-in tree, and back. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfold.h"
#include "tap.h"

/* A rank's check as a node sends it: its view's objects, the same list in every rank. */
static json_t *task(int rank, const char *extra_lib)
{
	json_t *objects = json_pack("[{s:s, s:s}, {s:s, s:s}]", "path", "/lib/libc.so.6",
				    "build_id", "aa", "path", "/usr/bin/python3", "build_id", "bb");

	if (extra_lib)
		json_array_append_new(objects,
				      json_pack("{s:s, s:n}", "path", extra_lib, "build_id"));
	return json_pack("{s:i, s:{s:o, s:n}}", "rank", rank, "view", "objects", objects,
			 "runtimes");
}

int main(void)
{
	struct jsonfold lower[2], upper;
	json_t *t[4], *whole[4], *table[2];
	size_t at;
	bool ok = true;

	for (int i = 0; i < 4; i++) {
		t[i] = task(i, i == 3 ? "/lib/libgomp.so.1" : NULL);
		whole[i] = json_deep_copy(t[i]);
	}
	CHECK(!jsonfold__init(&lower[0]) && !jsonfold__init(&lower[1]) && !jsonfold__init(&upper),
	      "tables");
	/* Two relays, ranks 0-1 and 2-3; a null member stays as it is. */
	for (int i = 0; i < 4; i++)
		ok = ok &&
		     !jsonfold__member(&lower[i / 2], json_object_get(t[i], "view"), "objects",
				       NULL) &&
		     !jsonfold__member(&lower[i / 2], json_object_get(t[i], "view"), "runtimes",
				       NULL);
	CHECK(ok, "each relay folds its tasks");
	CHECK(json_array_size(lower[0].values) == 1 && json_array_size(lower[1].values) == 2,
	      "a list the same in two ranks is sent once; a rank's other list once more");
	CHECK(json_is_null(json_object_get(json_object_get(t[0], "view"), "runtimes")),
	      "null is no value to fold");
	CHECK(jsonfold__ref(json_object_get(json_object_get(t[3], "view"), "objects"), &at) &&
		      at == 1,
	      "a folded member names its index");
	/* Through JSON text, as srun carries it; then folded again one level up. */
	for (int k = 0; k < 2; k++) {
		char *text = json_dumps(lower[k].values, JSON_COMPACT);

		table[k] = json_loads(text, 0, NULL);
		free(text);
	}
	for (int i = 0; i < 4; i++)
		ok = ok && !jsonfold__member(&upper, json_object_get(t[i], "view"), "objects",
					     table[i / 2]);
	CHECK(ok && json_array_size(upper.values) == 2, "the level above keeps 2 distinct lists");
	for (int i = 0; i < 4; i++)
		ok = ok &&
		     !jsonfold__unfold_member(json_object_get(t[i], "view"), "objects",
					      upper.values) &&
		     json_equal(t[i], whole[i]);
	CHECK(ok, "unfolded, every task is as its node sent it");
	json_object_set_new(json_object_get(t[0], "view"), "objects",
			    json_pack("{s:i}", "folded", 7));
	CHECK(jsonfold__unfold_member(json_object_get(t[0], "view"), "objects", upper.values) ==
		      -EINVAL,
	      "an index past the table is an error, not a crash");
	/* A reference the table below cannot resolve is no value here, never entry 7 above. */
	ok = !jsonfold__member(&upper, json_object_get(t[0], "view"), "objects", table[0]) &&
	     json_is_null(json_object_get(json_object_get(t[0], "view"), "objects"));
	CHECK(ok, "an unresolvable reference becomes null");
	for (int i = 0; i < 4; i++) {
		json_decref(t[i]);
		json_decref(whole[i]);
	}
	for (int k = 0; k < 2; k++) {
		json_decref(table[k]);
		jsonfold__free(&lower[k]);
	}
	jsonfold__free(&upper);
	return tap_done();
}
