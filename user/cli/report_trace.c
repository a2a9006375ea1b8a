// SPDX-License-Identifier: GPL-2.0
/* report TRACE.jsonl: the trace's environment, hosts and timeline (report.c writes them out). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "event.h"
#include "report_trace.h"
#include "tracefile.h"

/* A runtime role of a loaded record, in words: "GNU libgomp (GCC 12), OpenMP 5.1 arrived",
 * a front as what it forwards to ("front of /lib/.../libopenblas.so.0 arrived"). */
static bool runtime_arrival(const json_t *rec, char *text, size_t len)
{
	const json_t *r;
	size_t i;

	json_array_foreach (json_object_get(rec, "roles"), i, r) {
		const char *front = json_string_value(json_object_get(r, "front_of"));

		if (!json_is_true(json_object_get(r, "runtime")))
			continue;
		if (front)
			snprintf(text, len, "front of %s arrived: %s", front,
				 json_string_value(json_object_get(rec, "path")) ?: "?");
		else
			snprintf(text, len, "%s arrived: %s",
				 json_string_value(json_object_get(r, "label"))	       ?:
					 json_string_value(json_object_get(r, "name")) ?:
											 "runtime",
				 json_string_value(json_object_get(rec, "path")) ?: "?");
		return true;
	}
	return false;
}

/* The header's facts: t0, host, kernel and glibc, a merged trace's hosts. */
static void read_header(const json_t *rec, struct from_trace *tr, uint64_t *t0)
{
	*t0 = (uint64_t)json_integer_value(json_object_get(rec, "t0"));
	snprintf(tr->host, sizeof(tr->host), "%s",
		 json_string_value(json_object_get(rec, "host")) ?: "");
	/* A merged trace names its nodes' hosts in its inputs. */
	if (json_is_array(json_object_get(rec, "inputs"))) {
		const json_t *inp;
		size_t k;

		tr->hosts = json_array();
		json_array_foreach (json_object_get(rec, "inputs"), k, inp)
			if (json_is_string(json_object_get(inp, "hostname")))
				json_array_append(tr->hosts, json_object_get(inp, "hostname"));
	}
	tr->env = json_pack("{s:s?, s:s?, s:s?}", "kernel",
			    json_string_value(json_object_get(rec, "kernel")), "glibc",
			    json_string_value(json_object_get(rec, "glibc")), "distribution", "");
}

/* A record's line of the timeline, or "" when it has none. */
static void timeline_text(const json_t *rec, const char *type, char *text, size_t len)
{
	enum event_kind kind = event_kind__parse(type);

	if (!strcmp(type, "loaded")) {
		runtime_arrival(rec, text, len);
	} else if (!strcmp(type, "finding")) {
		snprintf(text, len, "finding %s: %s",
			 json_string_value(json_object_get(rec, "id")) ?: "?",
			 json_string_value(json_object_get(rec, "title")) ?: "");
	} else if (kind == EVENT_SIGNAL || kind == EVENT_EXEC || kind == EVENT_EXIT ||
		   kind == EVENT_GPU_LOAD) {
		/* A GPU module load in its runtime's terms (HIP's or CUDA's result name). */
		struct event ev;
		char err[128];

		if (!event__from_json(rec, &ev, err, sizeof(err))) {
			event__text(&ev, 0, text, len);
			event__clear(&ev);
		}
	}
}

/* The records of the trace @r has open into @tr's timeline. */
static void read_records(struct trace_reader *r, struct from_trace *tr)
{
	uint64_t t0 = 0;
	json_t *rec;

	read_header(r->hdr, tr, &t0);
	while (trace_reader__next(r, &rec)) {
		const char *type = json_string_value(json_object_get(rec, "type"));
		char text[1024] = "";
		double t;

		if (!type || !json_is_integer(json_object_get(rec, "pid"))) {
			json_decref(rec);
			continue;
		}
		t = (double)((uint64_t)json_integer_value(json_object_get(rec, "t")) - t0) / 1e9;
		timeline_text(rec, type, text, sizeof(text));
		if (text[0])
			json_array_append_new(tr->timeline,
					      json_pack("{s:f, s:O, s:s, s:O*}", "t", t, "pid",
							json_object_get(rec, "pid"), "text", text,
							"host", json_object_get(rec, "host")));
		json_decref(rec);
	}
}

int report_trace__read(const char *path, struct from_trace *tr, char *why, size_t whylen)
{
	struct trace_reader r;
	int err = trace_reader__open(&r, path, why, whylen);

	if (err)
		return err;
	tr->timeline = json_array();
	read_records(&r, tr);
	trace_reader__close(&r);
	/* The processes, their names, runtimes and findings: what check TRACE says of them. */
	tr->check = check__trace_doc(path, true, NULL, NULL, why, whylen);
	if (!tr->check) {
		json_decref(tr->timeline);
		tr->timeline = NULL;
		return -EINVAL;
	}
	return 0;
}
