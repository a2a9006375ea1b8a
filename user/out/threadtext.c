// SPDX-License-Identifier: GPL-2.0
/* One thread's stack as stacks prints it, for a process and a core alike (threadtext.h). */
#include <stdlib.h>

#include "frame_text.h"
#include "lockwait.h"
#include "pystate.h"
#include "threadtext.h"
#include "unwind.h"

/* "    worker (/tmp/t.py:12)": one Python frame, as py-bt and py-spy name it. */
static void print_py_frame(const struct py_frame *f, const char *indent, FILE *out)
{
	if (f->line >= 0)
		fprintf(out, "%s%s (%s:%d)\n", indent, f->function, f->file, f->line);
	else
		fprintf(out, "%s%s (%s)\n", indent, f->function, f->file);
}

/* Native frames with each eval frame's Python frames under it; or the Python frames alone. */
void thread_stack__print(const struct thread_stack *st, bool python_only, FILE *out)
{
	size_t n_py = st->py ? st->py->n_frames : 0;
	long *at = calloc(n_py ? n_py : 1, sizeof(*at));
	size_t j = 0;

	if (!at)
		return;
	thread_stack__place_python(st, at);
	if (python_only) {
		for (j = 0; j < n_py; j++)
			print_py_frame(&st->py->frames[j], "    ", out);
	} else {
		for (size_t k = 0; k < st->n_frames; k++) {
			frame_text__fprint(out, &st->frames[k], k ? &st->frames[k - 1] : NULL, k,
					   FRAME_FULL);
			fputc('\n', out);
			for (; j < n_py && at[j] == (long)k; j++)
				print_py_frame(&st->py->frames[j], "        [py] ", out);
		}
		/* Frames whose eval call lies past where the native unwind ended. */
		if (j < n_py)
			fprintf(out, "    (%zu Python frames below the last native frame:)\n",
				n_py - j);
		for (; j < n_py; j++)
			print_py_frame(&st->py->frames[j], "        [py] ", out);
	}
	if (st->py && st->py->truncated)
		fprintf(out, "    (more Python frames: raise --max-frames)\n");
	if (st->py && st->py->error)
		fprintf(out, "    (Python frames stop early: %s)\n", st->py->error);
	free(at);
}

json_t *thread_stack__python_json(const struct stacks *s, const struct thread_stack *st)
{
	size_t n = st->py ? st->py->n_frames : 0;
	long *at = calloc(n ? n : 1, sizeof(*at));
	json_t *frames = json_array();

	if (!st->py || !at) {
		free(at);
		json_decref(frames);
		return json_null();
	}
	thread_stack__place_python(st, at);
	for (size_t j = 0; j < n; j++) {
		const struct py_frame *f = &st->py->frames[j];

		json_array_append_new(
			frames,
			json_pack("{s:s, s:s, s:o, s:o}", "function", f->function, "file", f->file,
				  "line", f->line >= 0 ? json_integer(f->line) : json_null(),
				  "native_frame", at[j] >= 0 ? json_integer(at[j]) : json_null()));
	}
	free(at);
	return json_pack("{s:I, s:o, s:o, s:b, s:b, s:o}", "thread_id",
			 (json_int_t)st->py->pthread_id, "name",
			 st->py->name ? json_string(st->py->name) : json_null(), "frames", frames,
			 "holds_gil", stacks__holds_gil(s, st), "truncated", st->py->truncated,
			 "error", st->py->error ? json_string(st->py->error) : json_null());
}

void lockwait_report__to_json(const struct lockwait_report *r, json_t *edges, json_t *cycles,
			      json_t *verdicts)
{
	for (size_t e = 0; r && e < r->n_edges; e++)
		json_array_append_new(edges, json_pack("{s:i, s:i, s:s, s:s}", "from",
						       r->edges[e].from, "to", r->edges[e].to,
						       "kind", wait_kind__id(r->edges[e].kind),
						       "what", r->edges[e].what));
	for (size_t k = 0; r && k < r->n_cycles; k++) {
		json_t *cyc = json_array();

		for (size_t j = 0; j < r->cycle_len[k]; j++)
			json_array_append_new(cyc, json_integer(r->cycles[k][j]));
		json_array_append_new(cycles, cyc);
	}
	for (size_t v = 0; r && v < r->n_verdicts; v++)
		json_array_append_new(verdicts,
				      json_pack("{s:s, s:o}", "text", r->verdicts[v], "remedy",
						r->remedies[v] ? json_string(r->remedies[v]) :
								 json_null()));
}
