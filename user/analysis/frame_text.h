/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One native frame (struct stack_frame) as text, for every view that shows one: stacks, check's
 * crash, report, the merged stacks of a job, the TUI, watch's events. Two styles:
 *   FRAME_GDB    a numbered line as gdb's backtrace:
 *                "#4   0x000055a688039253 in main+0x7d from /path/hang_abba at hang_abba.c:28";
 *                an unnamed frame "?? (libgomp.so.1+0x1f823)", where addr2line finds it;
 *   FRAME_SHORT  a phrase inside a sentence: "main+0x7d (hang_abba)",
 *                "fixture_wait (two_blas, inlined)", "0x7ffff7d81390 (libgomp.so.1)".
 * A view that shows less than gdb (no address, the object's file name only) says so with flags;
 * a frame record of a JSON document reads back as a frame through frame_text__from_json.
 */
#ifndef DLSCOPE_FRAME_TEXT_H
#define DLSCOPE_FRAME_TEXT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "unwind.h"

enum frame_style {
	FRAME_GDB,
	FRAME_SHORT,
};

/* What a view of FRAME_GDB leaves out or says otherwise; 0: gdb's line as above. */
enum frame_text_flags {
	/* No address column (a record's frames, a merge's frames, which have none). */
	FRAME_NO_PC = 1 << 0,
	/* The address without "in", and on every frame of an inline chain (the TUI). */
	FRAME_PC_BARE = 1 << 1,
	/* The function's name without its +0xOFF. */
	FRAME_NO_OFFSET = 1 << 2,
	/* The object's file name in parentheses after the name, " (libfoo.so)", not "from PATH". */
	FRAME_MODULE_BASE = 1 << 3,
	/*
	 * An unnamed frame named by where it is instead of "??": "libfoo.so+0xOFF", else
	 * "0xPC (libfoo.so)" or "0xPC (no object)"; a named one without an object "fn (??)".
	 */
	FRAME_UNNAMED_AT = 1 << 4,
	/* " from libfoo.so" last, after file:line, which shows only with a line (merged stacks). */
	FRAME_MODULE_LAST = 1 << 5,
	/* The object's path in parentheses after the name, " (/usr/lib/libfoo.so)". */
	FRAME_MODULE_PATH = 1 << 6,
	/* No "#N" before the frame. */
	FRAME_NO_INDEX = 1 << 7,
	/* No " at file:line". */
	FRAME_NO_FILE = 1 << 8,
};

struct frame_fmt {
	enum frame_style style;
	unsigned int flags; /* enum frame_text_flags, for FRAME_GDB */
	const char *indent; /* FRAME_GDB: before "#N"; NULL: none */
	int index_width;    /* FRAME_GDB: "#N" padded to this many characters; 0: 3 */
};

/*
 * The views that show less than gdb, in one place (and pinned by tests/unit/test_frame_text.c):
 *   frame_fmt_report      report's stacks: "#4   main (hang_abba) at hang_abba.c:28",
 *                         "#0   libgomp.so.1.0.0+0x1f823", "#5   0x7f0000001000 (no object)"
 *   frame_fmt_report_job  report's merged job stacks: "main (/path/job_launcher)"
 *   frame_fmt_merged      stacks --job: "    #3  main at job_launcher.c:234 from job_launcher"
 *   frame_fmt_tui         the TUI: "#4   0x000055a688039253 main+0x7d (hang_abba) at f.c:28"
 */
extern const struct frame_fmt frame_fmt_report, frame_fmt_report_job, frame_fmt_merged,
	frame_fmt_tui;

/*
 * Frame @n of a stack, @f, in the style of @fmt; @prev is the frame before it (NULL for the
 * first): gdb leaves the address of an inline chain's outer frames blank. No newline.
 */
void frame_text__fprint(FILE *out, const struct stack_frame *f, const struct stack_frame *prev,
			size_t n, const struct frame_fmt *fmt);
/* The same into @buf (@len bytes, always terminated, cut to fit). */
void frame_text__snprint(char *buf, size_t len, const struct stack_frame *f,
			 const struct stack_frame *prev, size_t n, const struct frame_fmt *fmt);
/* FRAME_SHORT into @buf: "fn+0x12 (libfoo.so)". */
void frame_text__short(const struct stack_frame *f, char *buf, size_t len);

/*
 * A frame record of a document (stack_frame__to_json's shape; a merged stack's frame has only
 * function, module, file and line) as a frame: a view, its strings borrowed from @j, never
 * freed. A field that is absent, null or "" is unknown (NULL, 0).
 */
void frame_text__from_json(const json_t *j, struct stack_frame *out);

#endif
