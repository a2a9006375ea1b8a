// SPDX-License-Identifier: GPL-2.0
/* check of one process: every selected detector, then its entry, its text, or both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_process.h"
#include "corefile.h"
#include "detector.h"
#include "elfobj.h"
#include "inspect.h"
#include "libgraph.h"
#include "output.h"
#include "phase.h"
#include "procfs.h"
#include "runtimes.h"
#include "static_tls.h"
#include "target.h"
#include "threadscan.h"

/* The static TLS block's room left, when it could be read. */
static json_t *static_tls_json(const struct static_tls *st, bool known)
{
	if (!known)
		return json_null();
	return json_pack("{s:I, s:I, s:I, s:I}", "size", (json_int_t)st->size, "descriptor",
			 (json_int_t)st->tcb, "used", (json_int_t)st->used, "left",
			 (json_int_t)st->left);
}

/* check --json: a process's entry in "processes", with @mine, its findings. */
static void append_process(json_t *procs, const struct target *t, const struct libgraph *g,
			   size_t n_threads, const struct runtime_list *rt,
			   const struct findings *mine)
{
	struct static_tls st;
	bool st_known = !static_tls__read(t, g, &st);

	/* A core's process is gone: its command line is the one the core kept. */
	char *cmdline = t->core ? strdup(t->core->args) : proc__cmdline(t->pid);

	/* The command line: a report says how to run the program again, elsewhere. */
	json_array_append_new(
		procs, json_pack("{s:i, s:s, s:s, s:o*, s:i, s:i, s:o, s:o}", "pid",
				 (json_int_t)t->pid, "comm", t->comm, "exe", t->exe, "cmdline",
				 cmdline ? json_string(cmdline) : json_null(), "object_count",
				 (json_int_t)g->n, "threads", (json_int_t)n_threads, "runtimes",
				 runtimes__to_json(rt, g), "findings", findings__to_json(mine)));
	free(cmdline);
	json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "static_tls",
			    static_tls_json(&st, st_known));
	/* The executable's build-id: which build of the program this is. */
	for (size_t k = 0; k < g->n; k++)
		if (g->objs[k]->origin == LG_EXECUTABLE && g->objs[k]->elf &&
		    elfobj__build_id(g->objs[k]->elf)) {
			json_object_set_new(json_array_get(procs, json_array_size(procs) - 1),
					    "build_id",
					    json_string(elfobj__build_id(g->objs[k]->elf)));
			break;
		}
}

/* check's text: a process's counts, runtimes and @mine, its findings, into @out. */
static void print_process(const struct target *t, const struct libgraph *g, size_t n_threads,
			  const struct runtime_list *rt, const struct findings *mine, FILE *out)
{
	fprintf(out, "process %d (%s): %zu object%s, %zu thread%s, %zu finding%s\n", t->pid,
		t->comm, g->n, g->n == 1 ? "" : "s", n_threads, n_threads == 1 ? "" : "s", mine->n,
		mine->n == 1 ? "" : "s");
	struct static_tls st;

	if (rt->n) {
		fputs("runtimes:\n", out);
		runtimes__print(rt, g, "  ", out);
	}
	/* What a later dlopen of initial-exec TLS (libgomp, many wheels) may still take. */
	if (!static_tls__read(t, g, &st))
		fprintf(out,
			"static TLS: %llu of %llu bytes left for objects loaded later (%u object%s in "
			"it, %llu bytes taken)\n",
			(unsigned long long)st.left, (unsigned long long)(st.size - st.tcb),
			st.objects, st.objects == 1 ? "" : "s", (unsigned long long)st.used);
	if (mine->n) {
		fputc('\n', out);
		findings__print(mine, out);
	}
}

int check__process(struct inspection *in, const struct check_opts *o, struct findings *fs,
		   json_t *procs, FILE *text, struct runtime_list *keep_rt)
{
	const struct target *t = in->t;
	const struct threadscan *ts;
	const struct libgraph *g;
	struct runtime_list rt = { 0 };
	struct check_ctx ctx;
	struct findings mine;
	size_t first = fs->n, n_threads;
	char why[512];
	int err;

	/* The lock-wait graph is built once, here, when the deadlock detector will read it. */
	err = inspection__read(
		in, INSPECT_THREADS | (check_opts__selected(o, "deadlock") ? INSPECT_LOCKWAIT : 0),
		0, why, sizeof(why));
	if (err) {
		dls_err("%s", why);
		return err;
	}
	/* Owners before the detectors, whose findings name the packages to rebuild. */
	if (libgraph__find_packages(in->g, t, o->pkgs))
		dls_warn("process %d (%s): out of memory naming the packages of its objects",
			 t->pid, t->comm);
	g = in->g;
	ts = in->ts;
	err = t->core ? 0 : in->ts_err; /* a core has no live threads to read */
	if (err)
		dls_warn("process %d (%s): cannot read its threads (%s); thread counts and the "
			 "loader-lock check are left out",
			 t->pid, t->comm, strerror(-err));
	phase__mark("packages");
	if (runtimes__collect(g, t->core ? NULL : t, ts, &rt))
		dls_warn("process %d (%s): out of memory listing its runtimes", t->pid, t->comm);
	phase__mark("runtimes");
	ctx = (struct check_ctx){ .t = t, .g = g, .ts = ts, .rt = &rt, .lw = in->lw };
	for (size_t i = 0; i < n_detectors; i++)
		if (detectors[i].process && check_opts__selected(o, detectors[i].id)) {
			detectors[i].process(&ctx, fs);
			phase__mark(detectors[i].id);
		}
	/* A core's threads are its NT_PRSTATUS notes. */
	n_threads = ts ? ts->n : t->core ? t->core->n_threads : 0;
	mine = (struct findings){ .f = fs->f + first, .n = fs->n - first };
	if (procs)
		append_process(procs, t, g, n_threads, &rt, &mine);
	if (text)
		print_process(t, g, n_threads, &rt, &mine, text);
	/* check --job compares the ranks' runtimes after every rank is checked. */
	if (keep_rt)
		*keep_rt = rt;
	else
		runtimes__free(&rt);
	return 0;
}
