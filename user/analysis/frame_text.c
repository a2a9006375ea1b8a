// SPDX-License-Identifier: GPL-2.0
/* One native frame as text: gdb's numbered line or a short phrase (frame_text.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "frame_text.h"
#include "paths.h"

const struct frame_fmt frame_fmt_report = {
	.style = FRAME_GDB,
	.flags = FRAME_NO_PC | FRAME_NO_OFFSET | FRAME_MODULE_BASE | FRAME_UNNAMED_AT,
};
const struct frame_fmt frame_fmt_report_job = {
	.style = FRAME_GDB,
	.flags = FRAME_NO_INDEX | FRAME_NO_PC | FRAME_NO_OFFSET | FRAME_MODULE_PATH | FRAME_NO_FILE,
};
const struct frame_fmt frame_fmt_merged = {
	.style = FRAME_GDB,
	.flags = FRAME_NO_PC | FRAME_NO_OFFSET | FRAME_MODULE_LAST,
	.indent = "    ",
	.index_width = 2,
};
const struct frame_fmt frame_fmt_tui = {
	.style = FRAME_GDB,
	.flags = FRAME_PC_BARE | FRAME_MODULE_BASE,
};

/*
 * The address column. As gdb: on the first frame of a pc (the innermost of an inline chain)
 * only; the frames of a recursion share a pc and each shows it.
 */
static void put_pc(FILE *out, const struct stack_frame *f, const struct stack_frame *prev,
		   unsigned int fl)
{
	if (fl & FRAME_NO_PC)
		return;
	if (fl & FRAME_PC_BARE)
		fprintf(out, "0x%016" PRIx64 " ", f->pc);
	else if (prev && prev->pc == f->pc && prev->inlined)
		fprintf(out, "%18s    ", "");
	else
		fprintf(out, "0x%016" PRIx64 " in ", f->pc);
}

/* The name, and for FRAME_UNNAMED_AT an unnamed frame's place; true when that said it all. */
static bool put_name(FILE *out, const struct stack_frame *f, unsigned int fl)
{
	if (!f->function && (fl & FRAME_UNNAMED_AT)) {
		if (f->module && f->has_module_offset)
			fprintf(out, "%s+0x%" PRIx64, path_base(f->module), f->module_offset);
		else
			fprintf(out, "0x%" PRIx64 " (%s)", f->pc,
				f->module ? path_base(f->module) : "no object");
		return true;
	}
	fputs(f->function ? f->function : "??", out);
	if (f->function && f->offset && !f->inlined && !(fl & FRAME_NO_OFFSET))
		fprintf(out, "+0x%" PRIx64, f->offset);
	return false;
}

static void put_gdb(FILE *out, const struct stack_frame *f, const struct stack_frame *prev,
		    size_t n, const struct frame_fmt *fmt)
{
	unsigned int fl = fmt->flags;

	fputs(fmt->indent ? fmt->indent : "", out);
	if (!(fl & FRAME_NO_INDEX))
		fprintf(out, "#%-*zu ", fmt->index_width ? fmt->index_width : 3, n);
	put_pc(out, f, prev, fl);
	if (!put_name(out, f, fl)) {
		if (fl & (FRAME_MODULE_BASE | FRAME_MODULE_PATH)) {
			if (f->module)
				fprintf(out, " (%s)",
					fl & FRAME_MODULE_PATH ? f->module : path_base(f->module));
			else if (fl & FRAME_UNNAMED_AT)
				fprintf(out, " (%s)", "??");
		} else if (!(fl & FRAME_MODULE_LAST)) {
			/* No name: where in its file, as addr2line takes it. */
			if (!f->function && f->module && f->has_module_offset)
				fprintf(out, " (%s+0x%" PRIx64 ")", path_base(f->module),
					f->module_offset);
			if (f->module)
				fprintf(out, " from %s", f->module);
		}
	}
	if (f->file && !(fl & FRAME_NO_FILE) && (!(fl & FRAME_MODULE_LAST) || f->line > 0))
		fprintf(out, " at %s:%d", f->file, f->line);
	if (fl & FRAME_MODULE_LAST)
		fprintf(out, " from %s", path_base(f->module));
	if (f->scanned)
		fputs(" [found by stack scan]", out);
}

void frame_text__short(const struct stack_frame *f, char *buf, size_t len)
{
	const char *mod = f->module ? path_base(f->module) : NULL;

	if (f->function && f->inlined)
		snprintf(buf, len, "%s (%s, inlined)", f->function, mod ? mod : "?");
	else if (f->function)
		snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", f->function, f->offset,
			 mod ? mod : "?");
	else if (mod)
		snprintf(buf, len, "0x%" PRIx64 " (%s)", f->pc, mod);
	else
		snprintf(buf, len, "0x%" PRIx64, f->pc);
}

void frame_text__fprint(FILE *out, const struct stack_frame *f, const struct stack_frame *prev,
			size_t n, const struct frame_fmt *fmt)
{
	char buf[4096];

	if (fmt->style == FRAME_GDB) {
		put_gdb(out, f, prev, n, fmt);
		return;
	}
	frame_text__short(f, buf, sizeof(buf));
	fputs(buf, out);
}

void frame_text__snprint(char *buf, size_t len, const struct stack_frame *f,
			 const struct stack_frame *prev, size_t n, const struct frame_fmt *fmt)
{
	char *s = NULL;
	size_t slen = 0;
	FILE *out;

	if (fmt->style == FRAME_SHORT) {
		frame_text__short(f, buf, len);
		return;
	}
	out = open_memstream(&s, &slen);
	if (out) {
		put_gdb(out, f, prev, n, fmt);
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
