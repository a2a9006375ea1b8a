// SPDX-License-Identifier: GPL-2.0
/* dlscope report's pure parts: --redact's replacements, the size limit, Markdown tables that
 * hold whatever the data says, and a trace's runtime inventory by the rule of check. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "runtimes.h"
#include "tap.h"

static void test_redact(void)
{
	const char *users[] = { "alice", NULL }, *hosts[] = { "gpu-node-7", NULL };
	struct redact_hints h = { hosts, users };
	char *r = report__redact(
		"alice ran /home/alice/train.py on gpu-node-7 (10.0.0.5, fe80::1:2:3); "
		"/home/alice/lib.so again; glibc 2.36, torch 1.13.0, c10::add at 16:40:56; "
		"alice@gpu-node-7.example; "
		"malice and alicex stay; 10.0.0.5 again; 300.1.2.3 is no address; /root/x; "
		"comm alice_job, thread alice-io, gpu-node-7-worker; fe80::1 and fd00::2 and "
		"2001:db8::7; std::abs and cafe::beef stay",
		&h);

	CHECK(r != NULL, "redacts");
	if (!r)
		return;
	CHECK(!strstr(r, "/home/alice") && strstr(r, "<home1>/train.py") &&
		      strstr(r, "<home1>/lib.so"),
	      "a home directory: one placeholder everywhere");
	CHECK(strstr(r, "<user1> ran") && strstr(r, "<user1>@<host1>"), "the user name, as a word");
	CHECK(strstr(r, "malice") && strstr(r, "alicex"), "not inside other words");
	CHECK(!strstr(r, "gpu-node-7") && strstr(r, "on <host1>"), "the host name");
	CHECK(!strstr(r, "10.0.0.5") && strstr(r, "(<ip1>,") && strstr(r, "<ip1> again"),
	      "an IPv4 address, the same placeholder each time");
	CHECK(!strstr(r, "fe80::1:2:3") && strstr(r, "<ip2>)"), "an IPv6 address");
	CHECK(strstr(r, "glibc 2.36") && strstr(r, "torch 1.13.0"), "versions are no addresses");
	CHECK(strstr(r, "c10::add at 16:40:56"), "nor are C++ names and times");
	CHECK(strstr(r, "300.1.2.3"), "nor is an out-of-range dotted quad");
	CHECK(strstr(r, "<home2>/x"), "/root is a home too, with its own placeholder");
	CHECK(strstr(r, "comm <user1>_job, thread <user1>-io, <host1>-worker"),
	      "user and host names inside the names of processes and threads");
	CHECK(!strstr(r, "fe80::1 ") && !strstr(r, "fd00::2") && !strstr(r, "2001:db8::7"),
	      "IPv6 addresses with two groups");
	CHECK(strstr(r, "std::abs and cafe::beef stay"), "C++ names with two parts stay");
	free(r);
}

static void test_limit(void)
{
	json_t *fds = json_array(), *check;
	struct report_in in = { .title = "t",
				.invocation = "dlscope report 1",
				.captured = "now",
				.version = "0",
				.companion = "r.extra.md" };
	char *md = NULL, *extra = NULL;

	for (int i = 0; i < 40; i++)
		json_array_append_new(fds, json_pack("{s:s, s:s, s:s, s:[s], s:s, s:s}", "id",
						     "dup-openmp", "severity", "error", "title",
						     "two runtimes", "evidence",
						     "a rather long line of evidence about a copy",
						     "why", "because", "remedy", "fix it"));
	check = json_pack("{s:[{s:i, s:s, s:[], s:o}]}", "processes", "pid", 1, "comm", "x",
			  "runtimes", "findings", fds);
	in.check = check;
	in.env = json_pack("{s:s}", "kernel", "6.18");
	in.reproduce = json_pack("[s]", "dlscope check 1");
	CHECK(!report__write(&in, 65536, &md, &extra) && md && !extra, "fits: no companion");
	free(md);
	free(extra);
	CHECK(!report__write(&in, 2000, &md, &extra) && md && extra, "too long: a companion");
	CHECK(md && strlen(md) <= 2000 && strstr(md, "cut here"), "cut at the limit, and said");
	CHECK(extra && strstr(extra, "## Findings") && strstr(extra, "## Reproduce"),
	      "the companion has everything");
	free(md);
	free(extra);
	json_decref(check);
	json_decref(in.env);
	json_decref(in.reproduce);
}

/* A loaded record of a trace, as record writes it (docs/trace-format.md). */
static json_t *loaded(const char *path, int ns, const char *kind, const char *impl,
		      const char *front_of)
{
	json_t *role = json_pack("{s:s, s:s, s:s, s:n, s:b, s:s}", "kind", kind, "impl", impl,
				 "name", impl, "version", "runtime", true, "label", impl);

	if (front_of)
		json_object_set_new(role, "front_of", json_string(front_of));
	return json_pack("{s:s, s:s, s:i, s:[o], s:{s:s, s:s, s:s}}", "type", "loaded", "path",
			 path, "namespace", ns, "roles", role, "package", "name", "libopenblas0",
			 "version", "0.3.21", "manager", "deb");
}

static const json_t *runtime_at(const json_t *rts, const char *path)
{
	const json_t *r;
	size_t i;

	json_array_foreach (rts, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "path")) ?: "", path))
			return r;
	return NULL;
}

static void test_trace_inventory(void)
{
	const char *blas = "/lib/libblas.so.3", *openblas = "/lib/libopenblas.so.0",
		   *lapack = "/lib/liblapack.so.3";
	json_t *recs = json_array(), *rts;
	const json_t *r;

	/* Debian's fronts arrive before and after what they forward to. */
	json_array_append_new(recs, loaded(blas, 0, "blas", "blas", openblas));
	json_array_append_new(recs, loaded(openblas, 0, "blas", "openblas", NULL));
	json_array_append_new(recs, loaded(lapack, 0, "blas", "lapack", openblas));
	json_array_append_new(recs,
			      loaded("/lib/libstdc++.so.6", 0, "cxx-runtime", "libstdc++", NULL));
	rts = runtimes__from_loaded(recs);
	CHECK(json_array_size(rts) == 2, "three BLAS objects with fronts are one runtime");
	r = runtime_at(rts, openblas);
	CHECK(r && json_array_size(json_object_get(r, "fronts")) == 2 &&
		      !strcmp(json_string_value(json_array_get(json_object_get(r, "fronts"), 0)),
			      blas) &&
		      !strcmp(json_string_value(json_array_get(json_object_get(r, "fronts"), 1)),
			      lapack),
	      "the fronts, under what they forward to, in the order they came");
	CHECK(r && json_is_null(json_object_get(r, "pool_threads")) &&
		      !strcmp(json_string_value(json_object_get(r, "label")) ?: "", "openblas") &&
		      json_is_object(json_object_get(r, "package")),
	      "RUNTIME's form: the role's fields, null for what only a live process has");
	json_decref(rts);
	/* A second namespace's copy is a second runtime; a front of nothing loaded is itself. */
	json_array_append_new(recs, loaded(openblas, 1, "blas", "openblas", NULL));
	json_array_append_new(recs, loaded("/lib/libcblas.so", 0, "blas", "blas", "/lib/gone.so"));
	rts = runtimes__from_loaded(recs);
	CHECK(json_array_size(rts) == 4, "a dlmopen copy and an orphan front are runtimes");
	json_decref(rts);
	json_decref(recs);
}

/* The cells of a Markdown table row: split at the pipes no backslash escapes. */
static size_t cells(const char *row, size_t len, const char **cell, size_t *clen, size_t max)
{
	size_t n = 0;
	const char *start = NULL;

	for (size_t i = 0; i < len; i++) {
		if (row[i] == '\\') {
			i++;
			continue;
		}
		if (row[i] != '|')
			continue;
		if (start && n < max) {
			cell[n] = start;
			clen[n++] = (size_t)(row + i - start);
		}
		start = row + i + 1;
	}
	return n;
}

/* Every table: each row has the header's cells, and no bold span crosses a cell's border. */
static bool tables_hold(const char *md, char *why, size_t whylen)
{
	size_t header = 0;

	for (const char *line = md; *line;) {
		const char *end = strchr(line, '\n') ?: line + strlen(line), *cell[32];
		size_t clen[32], n = 0;

		if (*line == '|') {
			n = cells(line, (size_t)(end - line), cell, clen, 32);
			if (!header)
				header = n;
			if (n != header) {
				snprintf(why, whylen, "%zu cells, not %zu: %.*s", n, header,
					 (int)(end - line), line);
				return false;
			}
			for (size_t c = 0; c < n; c++) {
				size_t bold = 0;

				for (size_t i = 0; i + 1 < clen[c]; i++) {
					if (cell[c][i] == '\\')
						i++;
					else if (cell[c][i] == '`') /* code: up to its end */
						while (i + 1 < clen[c] && cell[c][++i] != '`')
							;
					else if (cell[c][i] == '*' && cell[c][i + 1] == '*')
						bold++, i++;
				}
				if (bold % 2) {
					snprintf(why, whylen, "bold across a cell: %.*s",
						 (int)(end - line), line);
					return false;
				}
			}
		} else {
			header = 0;
		}
		line = *end ? end + 1 : end;
	}
	return true;
}

static void test_markdown_tables(void)
{
	struct report_in in = { .title = "trace /tmp/a_|b*.jsonl",
				.invocation = "dlscope report `x`",
				.captured = "now",
				.version = "0",
				.companion = "r.extra.md" };
	char *md = NULL, *extra = NULL, why[512] = "";
	json_t *rts = json_array(), *check;

	/* Two OpenMP runtimes (a duplicate kind, bold), names and paths with metacharacters. */
	json_array_append_new(rts, json_pack("{s:s, s:s, s:s, s:s, s:s, s:[s]}", "kind", "openmp",
					     "name", "GNU libgomp", "version_text",
					     "GCC 12, OpenMP 5.1", "path", "/opt/a|b/libgomp.so.1",
					     "label", "x", "fronts", "/opt/`f`|g.so"));
	json_array_append_new(rts, json_pack("{s:s, s:s, s:s, s:s}", "kind", "openmp", "name",
					     "LLVM *libomp*", "version", "5.0_x_", "path",
					     "/lib/__omp__.so"));
	check = json_pack("{s:[{s:i, s:s, s:o, s:[{s:s, s:s, s:s, s:[s]}]}]}", "processes", "pid",
			  7, "comm", "md|*_x", "runtimes", rts, "findings", "id", "dup-openmp",
			  "severity", "error", "title", "2 *OpenMP* | runtimes", "evidence",
			  "<b>omp_*/GOMP_* [link](x)</b>");
	in.check = check;
	in.env = json_pack("{s:s}", "kernel", "6|18");
	in.timeline =
		json_pack("[{s:f, s:i, s:s}]", "t", 0.5, "pid", 7, "text", "finding x: a | b **c");
	in.reproduce = json_pack("[s]", "dlscope ui --replay t");
	CHECK(!report__write(&in, 65536, &md, &extra) && md, "a report of awkward data");
	CHECK(md && tables_hold(md, why, sizeof(why)), why[0] ? why : "tables hold their cells");
	CHECK(md && strstr(md, "| 7 (md\\|\\*\\_x) | **openmp** | (duplicate) | GNU libgomp | "
			       "GCC 12, OpenMP 5.1 | `/opt/a\\|b/libgomp.so.1`; fronts: "
			       "`` `f`\\|g.so `` |"),
	      "a duplicate's row: bold inside its cell, data escaped, fronts named");
	CHECK(md && strstr(md, "LLVM \\*libomp\\* | 5.0_x_ |") && strstr(md, "`/lib/__omp__.so`"),
	      "emphasis characters escaped outside code, kept inside");
	CHECK(md && strstr(md, "- \\<b\\>omp_\\*/GOMP_\\* \\[link\\](x)\\</b\\>") &&
		      strstr(md, "### error `dup-openmp`: 2 \\*OpenMP\\* \\| runtimes"),
	      "evidence and titles: no HTML, link or emphasis made of data");
	CHECK(md && strstr(md, "# dlscope report: trace /tmp/a_\\|b\\*.jsonl\n") &&
		      strstr(md, "by dlscope 0: `` dlscope report `x` ``."),
	      "title and invocation");
	free(md);
	free(extra);
	json_decref(check);
	json_decref(in.env);
	json_decref(in.timeline);
	json_decref(in.reproduce);
}

int main(void)
{
	test_redact();
	test_limit();
	test_trace_inventory();
	test_markdown_tables();
	return tap_done();
}
