// SPDX-License-Identifier: GPL-2.0
/*
 * dlscope merge's logic: which inputs are one host (refused) or two, their labels, the clock
 * arithmetic, and a merge of two small traces written here: the k-way order, the times moved
 * to the common clock, every record labelled, the summaries summed.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "tracemerge.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_labels(void)
{
	char *l[3];
	size_t dup[2] = { 9, 9 };
	struct merge_host two[] = { { "a", "b1" }, { "b", "b2" } };
	struct merge_host boots[] = { { "n", "11111111-x" }, { "m", NULL }, { "n", "22222222-y" } };
	struct merge_host same[] = { { "a", "b1" }, { "b", NULL }, { "a", "b1" } };
	struct merge_host noboot[] = { { "a", NULL }, { "a", "b1" } };

	CHECK(!merge__labels(two, 2, l, dup) && !strcmp(l[0], "a") && !strcmp(l[1], "b"),
	      "two hosts keep their names");
	free(l[0]);
	free(l[1]);
	CHECK(!merge__labels(boots, 3, l, dup) && !strcmp(l[0], "n/11111111") &&
		      !strcmp(l[1], "m") && !strcmp(l[2], "n/22222222"),
	      "one host name with two boot ids: two hosts, named with their boots");
	for (int i = 0; i < 3; i++)
		free(l[i]);
	CHECK(merge__labels(same, 3, l, dup) == -EEXIST && dup[0] == 0 && dup[1] == 2 && !l[0],
	      "one host and one boot twice: refused, the two named");
	CHECK(merge__labels(noboot, 2, l, dup) == -EEXIST && dup[0] == 0 && dup[1] == 1,
	      "one host twice, a boot id unknown: refused");
}

static void test_clock(void)
{
	CHECK(merge__realtime(100, 1000) == 1100, "realtime = monotonic + offset");
	CHECK(merge__realtime(100, -40) == 60, "a negative offset");
	CHECK(merge__realtime(100, -400) == 0, "never below 0");
}

static json_t **read_lines(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	json_t **recs = NULL;
	char *line = NULL;
	size_t cap = 0;

	*n = 0;
	while (f && getline(&line, &cap, f) > 0) {
		recs = realloc(recs, (*n + 1) * sizeof(*recs));
		recs[(*n)++] = json_loads(line, 0, NULL);
	}
	free(line);
	if (f)
		fclose(f);
	return recs;
}

static long long t_of(json_t *r)
{
	return json_integer_value(json_object_get(r, "t"));
}

static const char *host_of(json_t *r)
{
	return json_string_value(json_object_get(r, "host")) ?: "";
}

static void test_merge(const char *dir)
{
	char a[256], b[256], out[256], why[512];
	const char *in[2] = { a, b };
	struct merge_stats st;
	json_t **r;
	size_t n = 0;
	bool order = true;

	snprintf(a, sizeof(a), "%s/a.jsonl", dir);
	snprintf(b, sizeof(b), "%s/b.jsonl", dir);
	snprintf(out, sizeof(out), "%s/m.jsonl", dir);
	/* Host a's clock is 1000 ns behind realtime, b's 5000: b's t 10 is a's t 14. */
	write_file(a, "{\"type\":\"header\",\"format\":\"dlscope-trace/3\",\"host\":\"a\","
		      "\"boot_id\":\"ba\",\"t0\":1,\"realtime_minus_monotonic_ns\":1000}\n"
		      "{\"type\":\"exec\",\"t\":5,\"pid\":7,\"tid\":7,\"comm\":\"x\"}\n"
		      "{\"type\":\"exec\",\"t\":20,\"pid\":7,\"tid\":7,\"comm\":\"x\"}\n"
		      "{\"type\":\"summary\",\"events\":2,\"lost\":1,\"lost_by\":{\"ring_full\":1},"
		      "\"findings\":0,\"activity\":[]}\n");
	write_file(b, "{\"type\":\"header\",\"format\":\"dlscope-trace/2\",\"host\":\"b\","
		      "\"boot_id\":\"bb\",\"t0\":2,\"realtime_minus_monotonic_ns\":5000}\n"
		      "{\"type\":\"exec\",\"t\":10,\"pid\":7,\"tid\":7,\"comm\":\"y\"}\n"
		      "not json\n"
		      "{\"type\":\"summary\",\"events\":1,\"lost\":2,\"lost_by\":{\"ring_full\":2},"
		      "\"findings\":1,\"activity\":[]}\n");
	CHECK(!trace__merge(in, 2, out, &st, why, sizeof(why)), "two traces merge");
	r = read_lines(out, &n);
	CHECK(n == 5 && st.records == 5 && st.bad == 1,
	      "header, 3 records, summary; a bad line left out");
	if (n != 5)
		goto out;
	CHECK(!strcmp(json_string_value(json_object_get(r[0], "clock")), "CLOCK_REALTIME") &&
		      json_integer_value(json_object_get(r[0], "t0")) == 1001 &&
		      json_integer_value(json_object_get(r[0], "realtime_minus_monotonic_ns")) == 0,
	      "the header: realtime clock, t0 the earliest input's start");
	CHECK(json_array_size(json_object_get(r[0], "inputs")) == 2 &&
		      json_integer_value(json_object_get(
			      json_array_get(json_object_get(r[0], "inputs"), 1), "records")) == 3,
	      "the header lists each input with its line count");
	for (size_t i = 2; i < 4; i++)
		order &= t_of(r[i - 1]) <= t_of(r[i]);
	CHECK(order && t_of(r[1]) == 1005 && !strcmp(host_of(r[1]), "a") && t_of(r[2]) == 1020 &&
		      !strcmp(host_of(r[2]), "a") && t_of(r[3]) == 5010 &&
		      !strcmp(host_of(r[3]), "b"),
	      "records in time order on the realtime clock, each with its host");
	CHECK(json_integer_value(json_object_get(r[4], "events")) == 3 &&
		      json_integer_value(json_object_get(r[4], "lost")) == 3 &&
		      json_integer_value(json_object_get(json_object_get(r[4], "lost_by"),
							 "ring_full")) == 3 &&
		      json_integer_value(json_object_get(r[4], "findings")) == 1,
	      "one summary, the inputs' counts summed");
out:
	for (size_t i = 0; i < n; i++)
		json_decref(r[i]);
	free(r);
	/* Writing over an input is refused, and the input is left whole. */
	CHECK(trace__merge(in, 2, a, &st, why, sizeof(why)) == -EINVAL && strstr(why, "overwrite"),
	      "-o onto an input: refused");
	r = read_lines(a, &n);
	CHECK(n == 4, "the input is untouched");
	for (size_t i = 0; i < n; i++)
		json_decref(r[i]);
	free(r);
	unlink(a);
	unlink(b);
	unlink(out);
}

int main(void)
{
	char dir[] = "/tmp/dlscope-merge-XXXXXX";

	test_labels();
	test_clock();
	if (mkdtemp(dir)) {
		test_merge(dir);
		rmdir(dir);
	}
	return tap_done();
}
