// SPDX-License-Identifier: GPL-2.0
/* The Markdown of dlscope report, from check's, stacks' and a trace's JSON; and --redact. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_text.h"
#include "report.h"
#include "report_md.h"

/* Rows of the timeline excerpt. */
#define TIMELINE_ROWS 200

struct section {
	const char *name;
	char *text;
};

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static void package_text(const json_t *pkg, char *buf, size_t len)
{
	if (json_is_object(pkg))
		snprintf(buf, len, "%s %s (%s)", str(pkg, "name"), str(pkg, "version"),
			 str(pkg, "manager"));
	else
		buf[0] = '\0';
}

/* Each process document of a check (one, several, or a job's ranks). */
static const json_t *processes(const struct report_in *in)
{
	return in->check ? json_object_get(in->check, "processes") : NULL;
}

static void process_label(const json_t *p, char *buf, size_t len)
{
	const json_t *rank = json_object_get(p, "rank");
	const char *host = json_string_value(json_object_get(p, "host")) ?:
				   json_string_value(json_object_get(p, "node"));
	int n = 0;

	/* A merged trace's process is named with its host, a Slurm job's rank with its node: PIDs
	 * repeat across hosts. */
	if (host)
		n = snprintf(buf, len, "%s: ", host);
	if (n < 0 || (size_t)n >= len)
		return;
	if (json_is_integer(rank))
		snprintf(buf + n, len - (size_t)n, "rank %lld (%lld %s)",
			 (long long)json_integer_value(rank),
			 (long long)json_integer_value(json_object_get(p, "pid")), str(p, "comm"));
	else
		snprintf(buf + n, len - (size_t)n, "%lld (%s)",
			 (long long)json_integer_value(json_object_get(p, "pid")), str(p, "comm"));
}

/* Native frame @k of the records @frames as a line, as stacks prints it (frame_text.h). */
static void frame_line(FILE *f, const json_t *frames, size_t k)
{
	struct stack_frame v, prev;

	frame_text__from_json(json_array_get(frames, k), &v);
	if (k)
		frame_text__from_json(json_array_get(frames, k - 1), &prev);
	frame_text__fprint(f, &v, k ? &prev : NULL, k, FRAME_FULL);
	fputc('\n', f);
}

/* The file name of a path, as code. */
static void md_base(FILE *f, const char *path)
{
	md_code(f, strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
}

#define PROGRAM_ROWS 8

/*
 * What ran, for one who was not there: each process's executable, command line and build-id,
 * and the build-ids of its runtimes (the objects a maintainer needs the symbols of).
 */
static void program_table(FILE *f, const struct report_in *in)
{
	const json_t *procs = processes(in), *p, *rt;
	size_t i, k, rows = 0;

	json_array_foreach (procs, i, p)
		if (*str(p, "exe"))
			break;
	if (i == json_array_size(procs))
		return; /* a trace: no executable recorded */
	fprintf(f, "| Process | Program | Command line | Build-id |\n| --- | --- | --- | --- |\n");
	json_array_foreach (procs, i, p) {
		char label[128];

		if (rows >= PROGRAM_ROWS) {
			fprintf(f, "| and %zu more | | | |\n", json_array_size(procs) - i);
			break;
		}
		process_label(p, label, sizeof(label));
		fprintf(f, "| ");
		md_text(f, label);
		fprintf(f, " | ");
		md_code(f, str(p, "exe"));
		fprintf(f, " | ");
		if (*str(p, "cmdline"))
			md_code(f, str(p, "cmdline"));
		fprintf(f, " | ");
		if (*str(p, "build_id"))
			md_code(f, str(p, "build_id"));
		else
			fprintf(f, "none");
		fprintf(f, " |\n");
		rows++;
		json_array_foreach (json_object_get(p, "runtimes"), k, rt) {
			if (!*str(rt, "build_id"))
				continue;
			fprintf(f, "| | ");
			md_base(f, str(rt, "path"));
			fprintf(f, " (");
			md_text(f, str(rt, "kind"));
			fprintf(f, ") | | ");
			md_code(f, str(rt, "build_id"));
			fprintf(f, " |\n");
		}
	}
	fputc('\n', f);
}

/* The crash, or how the command ended when it did not succeed; one paragraph. */
static void crash_line(FILE *f, const struct report_in *in)
{
	const json_t *cmd = in->check ? json_object_get(in->check, "command") : NULL;
	const json_t *crash = json_object_get(cmd, "crash"), *pc = json_object_get(crash, "pc");
	const json_t *top = json_array_get(json_object_get(crash, "stack"), 0);

	if (!json_is_object(cmd))
		return;
	if (json_is_object(crash)) {
		fprintf(f, "**Crash:** ");
		md_text(f, str(crash, "signal"));
		if (*str(crash, "reason")) {
			fprintf(f, " (");
			md_text(f, str(crash, "reason"));
			fprintf(f, ")");
		}
		fprintf(f, " in thread %lld at ",
			(long long)json_integer_value(json_object_get(crash, "tid")));
		if (*str(pc, "symbol")) {
			char at[512];

			snprintf(at, sizeof(at), "%s+0x%llx", str(pc, "symbol"),
				 (unsigned long long)json_integer_value(
					 json_object_get(pc, "offset")));
			md_code(f, at);
		} else {
			md_code(f, str(pc, "address"));
		}
		if (*str(pc, "object")) {
			fprintf(f, " in ");
			md_base(f, str(pc, "object"));
		}
		if (*str(top, "file")) {
			char at[512];

			snprintf(at, sizeof(at), "%s:%lld", str(top, "file"),
				 (long long)json_integer_value(json_object_get(top, "line")));
			fprintf(f, ", ");
			md_code(f, at);
		}
		fprintf(f, ".\n\n");
	} else if (json_is_string(json_object_get(cmd, "signal"))) {
		fprintf(f, "**Ended:** killed by ");
		md_text(f, str(cmd, "signal"));
		fprintf(f, ".\n\n");
	} else if (json_integer_value(json_object_get(cmd, "exit_status"))) {
		fprintf(f, "**Ended:** exit status %lld.\n\n",
			(long long)json_integer_value(json_object_get(cmd, "exit_status")));
	}
}

/* A hang: the deadlock verdicts, else the threads waiting for another, else a job's verdict. */
static void hang_lines(FILE *f, const struct report_in *in)
{
	const json_t *doc, *v, *e;
	size_t i, k, said = 0;

	if (json_is_object(in->stacks)) {
		v = json_object_get(in->stacks, "verdict");
		if (*str(v, "text")) {
			fprintf(f, "**Job:** ");
			md_text(f, str(v, "text"));
			fprintf(f, ".\n\n");
		}
		return;
	}
	json_array_foreach (in->stacks, i, doc) {
		if (json_array_size(json_object_get(doc, "cycles")))
			json_array_foreach (json_object_get(doc, "verdicts"), k, v) {
				fprintf(f, "**Hung:** ");
				md_text(f, str(v, "text"));
				fprintf(f, "\n\n");
				said++;
			}
		else
			json_array_foreach (json_object_get(doc, "edges"), k, e) {
				if (k == 3)
					break;
				fprintf(f,
					"**Waiting:** in process %lld, thread %lld waits for thread "
					"%lld (",
					(long long)json_integer_value(json_object_get(doc, "pid")),
					(long long)json_integer_value(json_object_get(e, "from")),
					(long long)json_integer_value(json_object_get(e, "to")));
				md_text(f, str(e, "what"));
				fprintf(f, ").\n\n");
				said++;
			}
		if (said >= 6)
			break;
	}
}

/* "- **error** `dup-openmp`: 2 OpenMP runtimes ..." */
static void summary_line(FILE *f, const json_t *fd)
{
	fprintf(f, "- **");
	md_text(f, str(fd, "severity"));
	fprintf(f, "** ");
	md_code(f, str(fd, "id"));
	fprintf(f, ": ");
	md_text(f, str(fd, "title"));
	fprintf(f, "\n");
}

static char *summary_section(const struct report_in *in)
{
	size_t len = 0, n = 0, errors = 0, warnings = 0;
	char *s = NULL;
	FILE *f = open_memstream(&s, &len);
	const json_t *procs = processes(in), *p, *fd;
	size_t i, k;

	if (!f)
		return NULL;
	fprintf(f, "# dlscope report: ");
	md_text(f, in->title);
	if (in->title_code) {
		fputc(' ', f);
		md_code(f, in->title_code);
	}
	fprintf(f, "\n\nCaptured %s by dlscope %s: ", in->captured, in->version);
	md_code(f, in->invocation);
	fprintf(f, ".\n\n");
	program_table(f, in);
	crash_line(f, in);
	hang_lines(f, in);
	/* A trace that ended early holds less than happened: said before what it holds. */
	if (in->check && json_is_string(json_object_get(in->check, "cut"))) {
		fprintf(f, "**Incomplete:** ");
		md_text(f, json_string_value(json_object_get(in->check, "cut")));
		fprintf(f, ".\n\n");
	} else if (in->check && json_integer_value(json_object_get(in->check, "lost")) > 0) {
		fprintf(f,
			"**Incomplete:** the recorder lost %lld event%s (its summary says so).\n\n",
			(long long)json_integer_value(json_object_get(in->check, "lost")),
			json_integer_value(json_object_get(in->check, "lost")) == 1 ? "" : "s");
	}
	json_array_foreach (procs, i, p)
		json_array_foreach (json_object_get(p, "findings"), k, fd) {
			n++;
			errors += !strcmp(str(fd, "severity"), "error");
			warnings += !strcmp(str(fd, "severity"), "warning");
		}
	json_array_foreach (in->check ? json_object_get(in->check, "job_findings") : NULL, k, fd) {
		n++;
		errors += !strcmp(str(fd, "severity"), "error");
		warnings += !strcmp(str(fd, "severity"), "warning");
	}
	if (!n)
		fprintf(f, "**No findings.**\n");
	else
		fprintf(f, "**%zu finding%s** (%zu error%s, %zu warning%s):\n", n,
			n == 1 ? "" : "s", errors, errors == 1 ? "" : "s", warnings,
			warnings == 1 ? "" : "s");
	json_array_foreach (procs, i, p)
		json_array_foreach (json_object_get(p, "findings"), k, fd)
			summary_line(f, fd);
	json_array_foreach (in->check ? json_object_get(in->check, "job_findings") : NULL, k, fd)
		summary_line(f, fd);
	fclose(f);
	return s;
}

static char *environment_section(const struct report_in *in)
{
	static const char *const rows[][2] = {
		{ "kernel", "Kernel" },
		{ "glibc", "glibc" },
		{ "distribution", "Distribution" },
		{ "cpus", "CPUs" },
		{ "cpus_allowed", "CPUs the process may use" },
		{ "python", "Python" },
		{ "job", "Job" },
	};
	size_t len = 0;
	char *s = NULL;
	FILE *f = open_memstream(&s, &len);
	const json_t *procs = processes(in), *p, *rt;
	json_t *seen = json_object();
	size_t i, k;
	bool any = false;

	if (!f) {
		json_decref(seen);
		return NULL;
	}
	fprintf(f, "## Environment\n\n| | |\n| --- | --- |\n");
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		const json_t *v = json_object_get(in->env, rows[r][0]);

		if (!json_is_string(v) || !json_string_length(v))
			continue;
		fprintf(f, "| %s | ", rows[r][1]);
		md_text(f, json_string_value(v));
		fprintf(f, " |\n");
	}
	/* The packages that brought the runtimes, once each. */
	fprintf(f, "| Packages owning runtimes | ");
	json_array_foreach (procs, i, p)
		json_array_foreach (json_object_get(p, "runtimes"), k, rt) {
			char pkg[256];

			package_text(json_object_get(rt, "package"), pkg, sizeof(pkg));
			if (!pkg[0] || (seen && json_object_get(seen, pkg)))
				continue;
			json_object_set_new(seen, pkg, json_true());
			fprintf(f, "%s", any ? ", " : "");
			md_text(f, pkg);
			any = true;
		}
	fprintf(f, "%s |\n", any ? "" : "none known");
	json_decref(seen);
	fclose(f);
	return s;
}

static size_t kind_count(const json_t *runtimes, const char *kind)
{
	const json_t *rt;
	size_t i, n = 0;

	json_array_foreach (runtimes, i, rt)
		n += !strcmp(str(rt, "kind"), kind);
	return n;
}

static void runtime_row(FILE *f, const char *proc, const json_t *rt, bool dup)
{
	char pkg[256], threads[64] = "";
	const json_t *pool = json_object_get(rt, "pool_threads"),
		     *running = json_object_get(rt, "pool_threads_running"), *front;
	size_t i;

	package_text(json_object_get(rt, "package"), pkg, sizeof(pkg));
	if (json_is_integer(pool) && json_is_integer(running))
		snprintf(threads, sizeof(threads), "%lld (%lld running)",
			 (long long)json_integer_value(pool),
			 (long long)json_integer_value(running));
	else if (json_is_integer(pool))
		snprintf(threads, sizeof(threads), "%lld", (long long)json_integer_value(pool));
	/* Every span opens and closes inside its cell. */
	fprintf(f, "| ");
	md_text(f, proc);
	fprintf(f, " | %s", dup ? "**" : "");
	md_text(f, str(rt, "kind"));
	fprintf(f, "%s | %s | ", dup ? "**" : "", dup ? "(duplicate)" : "");
	md_text(f, str(rt, "name"));
	fprintf(f, " | ");
	/* The versions, each named ("GCC 12, OpenMP 5.1"); a record of an older dlscope: as is. */
	md_text(f, *str(rt, "version_text") ? str(rt, "version_text") : str(rt, "version"));
	fprintf(f, " | ");
	md_code(f, str(rt, "path"));
	json_array_foreach (json_object_get(rt, "fronts"), i, front) {
		const char *fp = json_string_value(front) ? json_string_value(front) : "?";

		fprintf(f, "%s", i ? ", " : "; fronts: ");
		md_code(f, strrchr(fp, '/') ? strrchr(fp, '/') + 1 : fp);
	}
	fprintf(f, " | ");
	md_text(f, pkg);
	fprintf(f, " | %s |\n", threads);
}

static char *runtimes_section(const struct report_in *in)
{
	const json_t *procs = processes(in), *p, *rt;
	struct folded w;
	size_t i, k, rows = 0;

	if (!folded_open(&w))
		return NULL;
	fprintf(w.head, "## Runtimes\n\n");
	fprintf(w.body, "| Process | Kind | | Implementation | Version | File | Package | Pool "
			"threads |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
	/* Duplicates first: a kind with more than one runtime in a process. */
	for (int pass = 0; pass < 2; pass++)
		json_array_foreach (procs, i, p) {
			const json_t *rts = json_object_get(p, "runtimes");
			char label[128];

			process_label(p, label, sizeof(label));
			json_array_foreach (rts, k, rt) {
				bool dup = kind_count(rts, str(rt, "kind")) > 1;

				if (dup == (pass == 0)) {
					runtime_row(w.body, label, rt, dup);
					rows++;
				}
			}
		}
	return folded_close(&w, "Every runtime",
			    rows ? NULL :
				   "No OpenMP, BLAS, C++, TBB, oneDNN or GPU runtime was found.\n");
}

static void finding_md(FILE *f, const char *proc, const json_t *fd)
{
	const json_t *ev, *stack = json_object_get(fd, "stack");
	size_t i;

	fprintf(f, "### ");
	md_text(f, str(fd, "severity"));
	fputc(' ', f);
	md_code(f, str(fd, "id"));
	fprintf(f, ": ");
	md_text(f, str(fd, "title"));
	fprintf(f, "\n\n");
	if (proc) {
		fprintf(f, "In process ");
		md_text(f, proc);
		fprintf(f, ".\n\n");
	}
	json_array_foreach (json_object_get(fd, "evidence"), i, ev) {
		fprintf(f, "- ");
		md_text(f, json_string_value(ev) ? json_string_value(ev) : "");
		fprintf(f, "\n");
	}
	if (json_array_size(json_object_get(fd, "evidence")))
		fprintf(f, "\n");
	if (*str(fd, "why")) {
		fprintf(f, "**Why:** ");
		md_text(f, str(fd, "why"));
		fprintf(f, "\n\n");
	}
	if (*str(fd, "remedy")) {
		fprintf(f, "**Fix:** ");
		md_text(f, str(fd, "remedy"));
		fprintf(f, "\n\n");
	}
	if (json_array_size(stack)) {
		const json_t *fr;

		fprintf(f, "<details><summary>Stack</summary>\n\n```\n");
		json_array_foreach (stack, i, fr)
			fprintf(f, "#%-3zu %s\n", i, json_string_value(fr));
		fprintf(f, "```\n</details>\n\n");
	}
}

static char *findings_section(const struct report_in *in)
{
	size_t len = 0, n = 0;
	char *s = NULL;
	FILE *f = open_memstream(&s, &len);
	const json_t *procs = processes(in), *p, *fd, *cmd;
	size_t i, k;

	if (!f)
		return NULL;
	fprintf(f, "## Findings\n\n");
	json_array_foreach (procs, i, p) {
		char label[128];

		process_label(p, label, sizeof(label));
		json_array_foreach (json_object_get(p, "findings"), k, fd) {
			finding_md(f, label, fd);
			n++;
		}
	}
	json_array_foreach (in->check ? json_object_get(in->check, "job_findings") : NULL, k, fd) {
		finding_md(f, "of the job (across ranks)", fd);
		n++;
	}
	if (!n)
		fprintf(f, "None: no duplicate runtime, split static, ABI mismatch, loader-lock "
			   "hazard or deadlock was found.\n\n");
	cmd = in->check ? json_object_get(in->check, "command") : NULL;
	if (json_is_object(cmd)) {
		const json_t *crash = json_object_get(cmd, "crash"), *fr;

		if (json_is_string(json_object_get(cmd, "signal")))
			fprintf(f, "### The command was killed by %s%s\n\n", str(cmd, "signal"),
				json_is_true(json_object_get(cmd, "core_dumped")) ?
					" (core dumped)" :
					"");
		else
			fprintf(f, "The command exited with status %lld.\n\n",
				(long long)json_integer_value(json_object_get(cmd, "exit_status")));
		if (json_is_object(crash)) {
			const json_t *pc = json_object_get(crash, "pc");

			md_text(f, str(crash, "signal"));
			fprintf(f, " (");
			md_text(f, str(crash, "reason"));
			fprintf(f, ") in thread %lld at ",
				(long long)json_integer_value(json_object_get(crash, "tid")));
			md_text(f, str(pc, "symbol"));
			fprintf(f, "+0x%llx in ",
				(unsigned long long)json_integer_value(
					json_object_get(pc, "offset")));
			md_code(f, str(pc, "object"));
			fprintf(f, ".\n\n");
			fprintf(f, "```\n");
			json_array_foreach (json_object_get(crash, "stack"), k, fr)
				frame_line(f, json_object_get(crash, "stack"), k);
			fprintf(f, "```\n\n");
		}
	}
	fclose(f);
	return s;
}

/* A thread's frames as text: native ones, each eval frame followed by its Python frames. */
static void thread_frames(FILE *f, const json_t *t)
{
	const json_t *frames = json_object_get(t, "frames"), *py = json_object_get(t, "python");
	const json_t *pyframes = json_object_get(py, "frames"), *fr, *pf;
	size_t k, j;

	/* No frames: say why (a thread that could not be stopped or unwound), not an empty box. */
	if (!json_array_size(frames))
		fprintf(f, "(no stack: %s)\n",
			*str(t, "error") ? str(t, "error") : "none was read");
	json_array_foreach (frames, k, fr) {
		frame_line(f, frames, k);
		json_array_foreach (pyframes, j, pf)
			if (json_integer_value(json_object_get(pf, "native_frame")) ==
				    (json_int_t)k &&
			    json_is_integer(json_object_get(pf, "native_frame")))
				fprintf(f, "        [py] %s (%s:%lld)\n", str(pf, "function"),
					str(pf, "file"),
					(long long)json_integer_value(json_object_get(pf, "line")));
	}
}

/* Is @t worth a reader's time: it waits for another thread, or it is in a cycle? */
static bool matters(const json_t *doc, const json_t *t)
{
	const char *w = str(t, "wait");
	const json_t *cyc, *tid;
	size_t i, k;

	json_array_foreach (json_object_get(doc, "cycles"), i, cyc)
		json_array_foreach (cyc, k, tid)
			if (json_integer_value(tid) ==
			    json_integer_value(json_object_get(t, "tid")))
				return true;
	return strcmp(w, "running") && strcmp(w, "syscall") && strcmp(w, "unknown");
}

static void stacks_of_process(FILE *f, const json_t *doc)
{
	const json_t *threads = json_object_get(doc, "threads"), *t, *e, *v;
	size_t i, k, shown = 0;
	char *seen = calloc(json_array_size(threads) + 1, 1);

	fprintf(f, "### Process %lld (",
		(long long)json_integer_value(json_object_get(doc, "pid")));
	md_text(f, str(doc, "comm"));
	fprintf(f, ")\n\n");
	json_array_foreach (json_object_get(doc, "verdicts"), i, v) {
		fprintf(f, "**Verdict:** ");
		md_text(f, str(v, "text"));
		fprintf(f, "\n\n");
		if (*str(v, "remedy")) {
			fprintf(f, "**What to do:** ");
			md_text(f, str(v, "remedy"));
			fprintf(f, "\n\n");
		}
	}
	if (json_array_size(json_object_get(doc, "edges"))) {
		fprintf(f, "Lock-wait graph:\n\n");
		json_array_foreach (json_object_get(doc, "edges"), i, e) {
			fprintf(f, "- %lld waits for %lld (",
				(long long)json_integer_value(json_object_get(e, "from")),
				(long long)json_integer_value(json_object_get(e, "to")));
			md_text(f, str(e, "kind"));
			fprintf(f, ": ");
			md_text(f, str(e, "what"));
			fprintf(f, ")\n");
		}
		fprintf(f, "\n");
	}
	/* Threads with the same stack are shown once, with all their TIDs. */
	json_array_foreach (threads, i, t) {
		char *text = NULL, *other = NULL;
		size_t tl = 0, ol = 0;
		FILE *tf;

		if (!seen || seen[i] || !matters(doc, t) || !(tf = open_memstream(&text, &tl)))
			continue;
		thread_frames(tf, t);
		fclose(tf);
		fprintf(f, "Thread %lld", (long long)json_integer_value(json_object_get(t, "tid")));
		for (k = i + 1; k < json_array_size(threads); k++) {
			const json_t *o = json_array_get(threads, k);
			FILE *of;

			if (seen[k] || !matters(doc, o) || !(of = open_memstream(&other, &ol)))
				continue;
			thread_frames(of, o);
			fclose(of);
			if (!strcmp(other, text) &&
			    !strcmp(str(o, "waits_for"), str(t, "waits_for"))) {
				seen[k] = 1;
				fprintf(f, ", %lld",
					(long long)json_integer_value(json_object_get(o, "tid")));
			}
			free(other);
			other = NULL;
		}
		fprintf(f, ": waits for ");
		md_text(f, str(t, "waits_for"));
		fprintf(f, "\n\n```\n%s```\n\n", text);
		free(text);
		shown++;
	}
	if (!shown)
		fprintf(f, "No thread waits for another.\n\n");
	free(seen);
}

static void stacks_of_job(FILE *f, const json_t *doc)
{
	const json_t *v = json_object_get(doc, "verdict"), *g, *fr;
	size_t i, k;

	fprintf(f, "**Verdict:** ");
	md_text(f, str(v, "text"));
	fprintf(f, "\n\n");
	json_array_foreach (json_object_get(doc, "groups"), i, g) {
		fprintf(f, "Ranks ");
		md_text(f, str(g, "ranks_text"));
		fprintf(f, " (%zu thread%s): ", json_array_size(json_object_get(g, "threads")),
			json_array_size(json_object_get(g, "threads")) == 1 ? "" : "s");
		md_text(f, str(g, "where"));
		fprintf(f, "\n\n```\n");
		json_array_foreach (json_object_get(g, "frames"), k, fr) {
			struct stack_frame nf;

			if (!strcmp(str(fr, "kind"), "python")) {
				fprintf(f, "        [py] %s (%s:%lld)\n", str(fr, "function"),
					str(fr, "file"),
					(long long)json_integer_value(json_object_get(fr, "line")));
				continue;
			}
			frame_text__from_json(fr, &nf);
			frame_text__fprint(f, &nf, NULL, k, FRAME_FULL);
			fputc('\n', f);
		}
		fprintf(f, "```\n\n");
	}
}

static char *threads_section(const struct report_in *in)
{
	const json_t *doc;
	struct folded w;
	size_t i;

	if (!in->stacks || !folded_open(&w))
		return NULL;
	fprintf(w.head, "## Threads that matter\n\n");
	if (json_is_array(in->stacks))
		json_array_foreach (in->stacks, i, doc)
			stacks_of_process(w.body, doc);
	else
		stacks_of_job(w.body, in->stacks);
	return folded_close(&w, "Blocked threads and their stacks", NULL);
}

static char *timeline_section(const struct report_in *in)
{
	size_t n = json_array_size(in->timeline), i;
	const json_t *row;
	struct folded w;

	if (!n || !folded_open(&w))
		return NULL;
	fprintf(w.head,
		"## Timeline\n\nRuntime arrivals, GPU module loads, findings, signals and process "
		"events from the trace%s.\n\n",
		n > TIMELINE_ROWS ? " (the first ones)" : "");
	fprintf(w.body, "| Time (s) | PID | Event |\n| --- | --- | --- |\n");
	json_array_foreach (in->timeline, i, row) {
		if (i == TIMELINE_ROWS)
			break;
		fprintf(w.body, "| %.3f | ", json_real_value(json_object_get(row, "t")));
		md_text(w.body, str(row, "host"));
		fprintf(w.body, "%s%lld | ", str(row, "host")[0] ? " " : "",
			(long long)json_integer_value(json_object_get(row, "pid")));
		md_text(w.body, str(row, "text"));
		fprintf(w.body, " |\n");
	}
	return folded_close(&w, "Events", NULL);
}

static char *reproduce_section(const struct report_in *in)
{
	size_t len = 0;
	char *s = NULL;
	FILE *f = open_memstream(&s, &len);
	const json_t *c;
	size_t i;

	if (!f)
		return NULL;
	if (in->svg) {
		fprintf(f, "## Library graph\n\nThe runtimes and the chains that loaded them, "
			   "grouped by package, collisions in red: ");
		md_code(f, in->svg);
		fprintf(f, " (attach it to the issue).\n\n");
	}
	fprintf(f, "## Reproduce\n\n```sh\n");
	json_array_foreach (in->reproduce, i, c)
		fprintf(f, "%s\n", json_string_value(c));
	fprintf(f, "```\n");
	fclose(f);
	return s;
}

static char *join(struct section *sec, size_t n)
{
	size_t len = 0;
	char *s = NULL;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (sec[i].text)
			fprintf(f, "%s%s", i ? "\n" : "", sec[i].text);
	fclose(f);
	return s;
}

/* What a section moved to the companion leaves in the report: a line saying where it is. */
static char *left_out_note(const struct report_in *in, const struct section *sec, size_t limit)
{
	char *note = NULL;
	size_t note_len = 0;
	FILE *nf = open_memstream(&note, &note_len);

	if (!nf)
		return NULL;
	/* GitHub's is the default; another one is the user's own --limit. */
	fprintf(nf, "## %s\n\n_Left out to stay under %s %zu-character %s (%zu characters): see ",
		sec->name, limit == REPORT_LIMIT ? "GitHub's" : "the", limit,
		limit == REPORT_LIMIT ? "limit" : "--limit", strlen(sec->text));
	md_text(nf, in->companion ? in->companion : "the companion file");
	fprintf(nf, "._\n");
	fclose(nf);
	return note;
}

/*
 * Still too long (the findings alone): @text cut at @limit with a line that says so, and every
 * section not moved yet copied to @full for the companion. Whether any section was.
 */
static bool cut_to_limit(char *text, size_t limit, const struct section *sec, char **full, size_t n)
{
	static const char cut[] = "\n\n_(cut here: longer than the limit; the whole report "
				  "is in the companion file)_\n";
	static const char fence_end[] = "\n```";
	bool any_moved = false, in_fence = false;
	char *end, *line;

	for (size_t i = 0; i < n; i++)
		if (!full[i] && sec[i].text && (full[i] = strdup(sec[i].text)))
			any_moved = true;
	if (limit <= sizeof(cut) + sizeof(fence_end))
		return any_moved;
	/* At the end of a whole line (never inside a character), and a code block cut open is
	 * closed: what follows the cut would otherwise read as code. */
	end = text + limit - sizeof(cut) - sizeof(fence_end);
	while (end > text && end[-1] != '\n')
		end--;
	for (line = text; line < end; line = strchr(line, '\n') + 1) {
		if (!strncmp(line, "```", 3))
			in_fence = !in_fence;
		if (!strchr(line, '\n'))
			break;
	}
	*end = '\0';
	if (in_fence)
		strcat(text, fence_end + 1);
	strcat(text, cut);
	return any_moved;
}

/* The companion: the title, then each section the report left out, whole (never the summary). */
static int write_companion(const struct report_in *in, char *const *full, size_t n, char **extra)
{
	size_t len = 0;
	FILE *f = open_memstream(extra, &len);

	if (!f)
		return -ENOMEM;
	fprintf(f, "# dlscope report (continued): ");
	md_text(f, in->title);
	if (in->title_code) {
		fputc(' ', f);
		md_code(f, in->title_code);
	}
	fprintf(f, "\n");
	for (size_t i = 1; i < n; i++)
		if (full[i])
			fprintf(f, "\n%s", full[i]);
	fclose(f);
	return 0;
}

int report__write(const struct report_in *in, size_t limit, char **main, char **extra)
{
	struct section sec[] = {
		{ "Summary", summary_section(in) },
		{ "Environment", environment_section(in) },
		{ "Findings", findings_section(in) },
		{ "Runtimes", runtimes_section(in) },
		{ "Threads that matter", threads_section(in) },
		{ "Timeline", timeline_section(in) },
		{ "Reproduce", reproduce_section(in) },
	};
	enum { N = sizeof(sec) / sizeof(sec[0]) };
	/* What moves out first when the report is too long: the longest reading first. */
	static const int move_order[] = { 5, 4, 3 };
	char *full[N] = { 0 }, *text = join(sec, N);
	bool any_moved = false;
	int err = 0;

	*main = *extra = NULL;
	for (size_t m = 0; text && strlen(text) > limit && m < 3; m++) {
		int i = move_order[m];

		if (!sec[i].text)
			continue;
		/* The companion keeps the full section; the report, a line saying where it is. */
		full[i] = sec[i].text;
		sec[i].text = left_out_note(in, &sec[i], limit);
		any_moved = true;
		free(text);
		text = join(sec, N);
	}
	if (!text) {
		err = -ENOMEM;
		goto out;
	}
	if (strlen(text) > limit && cut_to_limit(text, limit, sec, full, N))
		any_moved = true;
	if (any_moved && (err = write_companion(in, full, N, extra)))
		goto out;
	*main = text;
	text = NULL;
out:
	for (int i = 0; i < N; i++) {
		free(sec[i].text);
		free(full[i]);
	}
	free(text);
	return err;
}
