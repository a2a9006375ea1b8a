// SPDX-License-Identifier: GPL-2.0
/* Rank ranges and the STAT-style merge of the ranks' stacks, on documents made here. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "stackmerge.h"
#include "tap.h"

static json_t *frame(const char *fn, const char *module)
{
	return json_pack("{s:s, s:s, s:n, s:i}", "function", fn, "module", module, "file", "line",
			 0);
}

/*
 * A rank's stacks document: main thread in @inner (called from main), one pool thread. An
 * empty @inner: a main thread that could not be read (no frames, its reason).
 */
static json_t *rank_doc(pid_t pid, const char *inner, const char *py_line_file, int py_line)
{
	json_t *main_frames = json_pack("[o, o, o, o]", frame("__GI___libc_read", "/lib/libc.so.6"),
					frame(inner, "/opt/app"), frame("main", "/opt/app"),
					frame("_start", "/opt/app"));
	json_t *py = json_null(), *doc;

	if (py_line_file)
		py = json_pack("{s:[{s:s, s:s, s:i, s:i}]}", "frames", "function", "<module>",
			       "file", py_line_file, "line", py_line, "native_frame", 1);
	if (!*inner) {
		json_decref(main_frames);
		main_frames = json_array();
	}
	doc = json_pack("{s:[{s:i, s:s, s:o, s:o}, {s:i, s:s, s:[o], s:n}]}", "threads", "tid", pid,
			"name", "app", "frames", main_frames, "python", py, "tid", pid + 1, "name",
			"pool", "frames", frame("gomp_thread_start", "/lib/libgomp.so.1"),
			"python");
	if (!*inner)
		json_object_set_new(json_array_get(json_object_get(doc, "threads"), 0), "error",
				    json_string("the thread did not stop within 3 s"));
	return doc;
}

static json_t *merge(const char **inner, size_t n, const char *py_file)
{
	struct rank_stacks r[8] = { 0 };
	json_t *m;

	for (size_t i = 0; i < n; i++)
		r[i] = (struct rank_stacks){ (int)i, (pid_t)(100 + 10 * i),
					     rank_doc((pid_t)(100 + 10 * i), inner[i],
						      py_file && (!strcmp(inner[i], "sleeper") ||
								  !strncmp(inner[i], "nccl", 4)) ?
							      py_file :
							      NULL,
						      7),
					     NULL };
	m = stackmerge__merge(r, n, NULL, false);
	for (size_t i = 0; i < n; i++)
		json_decref(r[i].doc);
	return m;
}

static const char *verdict_text(const json_t *m)
{
	return json_string_value(json_object_get(json_object_get(m, "verdict"), "text"));
}

int main(void)
{
	char buf[128];
	int ranks[] = { 7, 0, 1, 2, 4, 5, 6, 2, 9 };
	const char *one_off[] = { "allreduce", "allreduce", "allreduce", "stuck", "allreduce" };
	const char *split[] = { "a", "a", "b", "b" };
	const char *py[] = { "allreduce", "sleeper", "allreduce" };
	const char *nccl[] = { "allreduce", "ncclAllReduce", "allreduce" };
	const char *unread[] = { "allreduce", "", "allreduce", "stuck" };
	json_t *m, *g0;

	job__format_ranks(ranks, 9, buf, sizeof(buf));
	CHECK(!strcmp(buf, "0-2,4-7,9"), "ranks as sorted, deduplicated ranges");
	job__format_ranks(ranks, 1, buf, sizeof(buf));
	CHECK(!strcmp(buf, "0"), "one rank");

	m = merge(one_off, 5, NULL);
	CHECK(m != NULL, "merge of 5 ranks");
	CHECK(!strcmp(verdict_text(m), "rank 3 is in stuck in app; the 4 others wait in allreduce "
				       "in app"),
	      "the verdict names the outlier by its first frame outside libc");
	g0 = json_array_get(json_object_get(m, "groups"), 0);
	CHECK(!strcmp(json_string_value(json_object_get(g0, "ranks_text")), "3"), "outliers first");
	CHECK(json_array_size(json_object_get(m, "groups")) == 3,
	      "3 groups: stuck, allreduce, pool");
	g0 = json_array_get(json_object_get(m, "groups"), 2);
	CHECK(!strcmp(json_string_value(json_object_get(g0, "ranks_text")), "0-4") &&
		      json_array_size(json_object_get(g0, "threads")) == 5,
	      "the pool threads of all ranks are one group, last");
	json_decref(m);

	/*
	 * The same ranks through a fan-in tree: two relays fold their ranks' stacks (each stack
	 * once), the front end folds the relays' tables into one; the merge is the same.
	 */
	{
		struct jsonfold relay[2], front;
		struct rank_stacks r[5];
		json_t *whole, *table[2];
		bool ok = true;

		for (size_t i = 0; i < 5; i++)
			r[i] = (struct rank_stacks){
				(int)i, (pid_t)(100 + 10 * i),
				rank_doc((pid_t)(100 + 10 * i), one_off[i], NULL, 0), NULL
			};
		whole = stackmerge__merge(r, 5, NULL, false);
		CHECK(!jsonfold__init(&relay[0]) && !jsonfold__init(&relay[1]) &&
			      !jsonfold__init(&front),
		      "fold tables");
		for (size_t i = 0; i < 5; i++)
			ok = ok && !stackmerge__fold(&relay[i < 3], r[i].doc, NULL, false);
		CHECK(ok, "each relay folds its ranks");
		CHECK(json_array_size(relay[1].values) == 2 &&
			      json_array_size(relay[0].values) == 3,
		      "a relay sends each distinct stack once (ranks 0-2: allreduce and pool; ranks "
		      "3-4: stuck, allreduce and pool)");
		CHECK(!json_object_get(json_array_get(json_object_get(r[0].doc, "threads"), 0),
				       "frames"),
		      "a folded thread keeps no frames of its own");
		/* The relays' tables travel as JSON, as they do through srun. */
		for (size_t k = 0; k < 2; k++) {
			char *text = json_dumps(relay[k].values, JSON_COMPACT);

			table[k] = json_loads(text, 0, NULL);
			free(text);
		}
		for (size_t i = 0; i < 5; i++)
			ok = ok && !stackmerge__fold(&front, r[i].doc, table[i < 3], false);
		CHECK(ok, "the front end folds the relays' tables into one");
		CHECK(json_array_size(front.values) == 3, "3 distinct stacks in all");
		m = stackmerge__merge(r, 5, front.values, false);
		CHECK(m && !strcmp(verdict_text(m), verdict_text(whole)),
		      "the verdict through the tree is the verdict of the whole documents");
		CHECK(json_equal(json_object_get(m, "groups"), json_object_get(whole, "groups")),
		      "and so are the merged groups");
		json_decref(m);
		json_decref(whole);
		for (size_t k = 0; k < 2; k++) {
			json_decref(table[k]);
			jsonfold__free(&relay[k]);
		}
		jsonfold__free(&front);
		for (size_t i = 0; i < 5; i++)
			json_decref(r[i].doc);
	}

	/* A relay's bad JSON is no crash: a stack without kinds, a bad index, a thread that is
	 * no object, an index with no table. */
	{
		struct jsonfold f;
		json_t *in = json_loads("[[{}], [5]]", 0, NULL);
		json_t *doc = json_loads("{\"threads\": [{\"tid\": 1, \"group\": 0}, 5, "
					 "{\"tid\": 2, \"group\": 9}, {\"tid\": 3, \"group\": 1}]}",
					 0, NULL);
		json_t *alone = json_loads("{\"threads\": [{\"tid\": 4, \"group\": 0}]}", 0, NULL);
		struct rank_stacks r[2] = { { 0, 1, doc, NULL }, { 1, 4, alone, NULL } };

		CHECK(in && doc && alone && !jsonfold__init(&f), "bad documents made");
		CHECK(!stackmerge__fold(&f, doc, in, false) &&
			      !stackmerge__fold(&f, alone, NULL, false),
		      "folding a relay's bad stacks succeeds");
		CHECK(json_array_size(f.values) == 1 &&
			      json_array_size(json_array_get(f.values, 0)) == 0,
		      "each bad stack is the stack of no frames");
		m = stackmerge__merge(r, 2, f.values, false);
		CHECK(m && json_array_size(json_object_get(json_object_get(m, "verdict"),
							   "unreadable")) == 2,
		      "their main threads are unread, not in some other rank's stack");
		json_decref(m);
		json_decref(in);
		json_decref(doc);
		json_decref(alone);
		jsonfold__free(&f);
	}

	m = merge(split, 4, NULL);
	CHECK(!strncmp(verdict_text(m),
		       "the ranks are split: ranks 0-1 are in a in app; ranks 2-3 "
		       "are in b in app",
		       60),
	      "no majority: split");
	CHECK(json_array_size(json_object_get(json_object_get(m, "verdict"), "outliers")) == 0,
	      "no outlier when split");
	json_decref(m);

	m = merge(py, 3, "/job/train.py");
	CHECK(!strcmp(verdict_text(m),
		      "rank 1 is in <module> (/job/train.py:7); the 2 others wait in allreduce in app"),
	      "a Python line names where a Python rank is");
	json_decref(m);
	m = merge(nccl, 3, "/job/train.py");
	CHECK(!strcmp(verdict_text(m), "rank 1 is in <module> (/job/train.py:7), waiting in "
				       "ncclAllReduce; the 2 others wait in allreduce in app"),
	      "a Python rank's line is named with the collective it waits in");
	json_decref(m);

	/* A main thread without frames is no place to group by: its rank is said unread, why. */
	m = merge(unread, 4, NULL);
	CHECK(!strcmp(verdict_text(m),
		      "rank 3 is in stuck in app; the 2 others wait in allreduce in app; the main "
		      "thread of rank 1 could not be read (the thread did not stop within 3 s)"),
	      "an unread main thread is no outlier and no group of 'no frames'");
	g0 = json_object_get(json_object_get(m, "verdict"), "outliers");
	CHECK(json_array_size(g0) == 1 && json_integer_value(json_array_get(g0, 0)) == 3,
	      "the outlier is rank 3 alone");
	g0 = json_object_get(json_object_get(m, "verdict"), "unreadable");
	CHECK(json_array_size(g0) == 1 && json_integer_value(json_array_get(g0, 0)) == 1,
	      "rank 1 is unreadable");
	json_decref(m);

	/*
	 * Waits in one collective group alike however they wait below it (STAT's prefix tree, cut
	 * at the communication API): one rank spins in the progress engine, one sleeps in the
	 * kernel, one is its root; the rank in no collective is the culprit.
	 */
	{
		const char *const inner[][3] = {
			{ "mca_btl_vader_poll", "opal_progress", "PMPI_Barrier" },
			{ "__GI___poll", "ompi_coll_base_barrier_intra", "PMPI_Barrier" },
			{ "ompi_request_default_wait_all", "opal_progress", "PMPI_Barrier" },
			{ "__GI___clock_nanosleep", "compute", "solve" },
		};
		struct rank_stacks r[4] = { 0 };

		for (size_t i = 0; i < 4; i++) {
			bool mpi = i < 3;
			json_t *frames = json_pack(
				"[o, o, o, o, o]",
				frame(inner[i][0], mpi ? "/lib/libmpi.so.40" : "/lib/libc.so.6"),
				frame(inner[i][1], mpi ? "/lib/libopen-pal.so.40" : "/opt/app"),
				frame(inner[i][2], mpi ? "/lib/libmpi.so.40" : "/opt/app"),
				frame("main", "/opt/app"), frame("_start", "/opt/app"));

			r[i] = (struct rank_stacks){ (int)i, (pid_t)(200 + i),
						     json_pack("{s:[{s:i, s:s, s:o, s:n}]}",
							       "threads", "tid", 200 + i, "name",
							       "app", "frames", frames, "python"),
						     NULL };
		}
		m = stackmerge__merge(r, 4, NULL, false);
		CHECK(!strcmp(verdict_text(m), "rank 3 is in compute in app, in no "
					       "collective; ranks 0-2 are in main in app, waiting "
					       "in PMPI_Barrier"),
		      "spinning, sleeping and root waits in one barrier are one group; the rank "
		      "in no collective is named");
		g0 = json_object_get(json_object_get(m, "verdict"), "outliers");
		CHECK(json_array_size(g0) == 1 && json_integer_value(json_array_get(g0, 0)) == 3,
		      "the culprit is rank 3");
		json_decref(m);
		/* Two ranks: one in a collective, one not, is a verdict too. */
		m = stackmerge__merge(&r[2], 2, NULL, false);
		g0 = json_object_get(json_object_get(m, "verdict"), "outliers");
		CHECK(json_array_size(g0) == 1 && json_integer_value(json_array_get(g0, 0)) == 3,
		      "of two ranks, the one in no collective is named");
		json_decref(m);
		for (size_t i = 0; i < 4; i++)
			json_decref(r[i].doc);
	}
	return tap_done();
}
