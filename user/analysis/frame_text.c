// SPDX-License-Identifier: GPL-2.0
/* One native frame as text: gdb's numbered line or a short phrase (frame_text.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "frame_text.h"
#include "paths.h"

/*
 * gdb's backtrace line. The address column shows when the frame has a pc, as gdb on the first
 * frame of a pc only (the innermost of an inline chain): the frames of a recursion share a pc
 * and each shows it.
 */
static void put_full(FILE *out, const struct stack_frame *f, const struct stack_frame *prev,
		     size_t n)
{
	fprintf(out, "#%-3zu ", n);
	if (f->pc && prev && prev->pc == f->pc && prev->inlined)
		fprintf(out, "%18s    ", "");
	else if (f->pc)
		fprintf(out, "0x%016" PRIx64 " in ", f->pc);
	fputs(f->function ? f->function : "??", out);
	if (f->function && f->offset && !f->inlined)
		fprintf(out, "+0x%" PRIx64, f->offset);
	/* No name: where in its file, as addr2line takes it. */
	if (!f->function && f->module && f->has_module_offset)
		fprintf(out, " (%s+0x%" PRIx64 ")", path_base(f->module), f->module_offset);
	if (f->module)
		fprintf(out, " from %s", f->module);
	if (f->file && f->line > 0)
		fprintf(out, " at %s:%d", f->file, f->line);
	if (f->scanned)
		fputs(" [found by stack scan]", out);
}

void frame_text__short(const struct stack_frame *f, char *buf, size_t len)
{
	const char *mod = f->module ? path_base(f->module) : NULL;
	char name[24];
	int n;

	if (!f->function && f->pc)
		snprintf(name, sizeof(name), "0x%" PRIx64, f->pc);
	else
		snprintf(name, sizeof(name), "??");
	n = snprintf(buf, len, "%s", f->function ? f->function : name);
	if (n >= 0 && (size_t)n < len && f->function && f->offset && !f->inlined)
		n += snprintf(buf + n, len - (size_t)n, "+0x%" PRIx64, f->offset);
	/* An unnamed frame in no object is its address alone. */
	if (n < 0 || (size_t)n >= len || (!f->function && !mod))
		return;
	snprintf(buf + n, len - (size_t)n, " (%s%s)", mod ? mod : "?",
		 f->inlined ? ", inlined" : "");
}

void frame_text__fprint(FILE *out, const struct stack_frame *f, const struct stack_frame *prev,
			size_t n, enum frame_style style)
{
	char buf[4096];

	if (style == FRAME_FULL) {
		put_full(out, f, prev, n);
		return;
	}
	frame_text__short(f, buf, sizeof(buf));
	fputs(buf, out);
}

void frame_text__snprint(char *buf, size_t len, const struct stack_frame *f,
			 const struct stack_frame *prev, size_t n, enum frame_style style)
{
	char *s = NULL;
	size_t slen = 0;
	FILE *out;

	if (style == FRAME_SHORT) {
		frame_text__short(f, buf, len);
		return;
	}
	out = open_memstream(&s, &slen);
	if (out) {
		put_full(out, f, prev, n);
		fclose(out);
	}
	snprintf(buf, len, "%s", s ? s : "");
	free(s);
}

/* A string field of @j, NULL when absent, null or "". */
static char *field(const json_t *j, const char *key)
{
	const char *s = json_string_value(json_object_get(j, key));

	return s && *s ? (char *)s : NULL;
}

void frame_text__from_json(const json_t *j, struct stack_frame *out)
{
	const char *pc = field(j, "pc"), *moff = field(j, "module_offset");

	*out = (struct stack_frame){
		.pc = pc ? strtoull(pc, NULL, 0) : 0,
		.inlined = json_is_true(json_object_get(j, "inlined")),
		.scanned = json_is_true(json_object_get(j, "scanned")),
		.function = field(j, "function"),
		.offset = (uint64_t)json_integer_value(json_object_get(j, "offset")),
		.module = field(j, "module"),
		.module_offset = moff ? strtoull(moff, NULL, 0) : 0,
		.has_module_offset = moff != NULL,
		.file = field(j, "file"),
		.line = (int)json_integer_value(json_object_get(j, "line")),
	};
}
