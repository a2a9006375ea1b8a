/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One native frame (struct stack_frame) as text, the same for every view that shows one: stacks,
 * check's crash, report, the merged stacks of a job, the TUI, watch's events. Two styles:
 *   FRAME_FULL   a numbered line as gdb's backtrace:
 *                "#4   0x000055a688039253 in main+0x7d from /path/hang_abba at hang_abba.c:28";
 *   FRAME_SHORT  a phrase inside a sentence: "main+0x7d (hang_abba)",
 *                "fixture_wait (two_blas, inlined)", "0x7ffff7d81390 (libgomp.so.1)".
 * What a line shows is what the frame carries, never what the view asks for: no pc (a merged
 * stack's frame) no address; no offset no "+0x"; a file and line " at file:line"; no name but
 * a place in its object "?? (libgomp.so.1+0x1f823)"; found by scanning " [found by stack scan]".
 * A view that must show less passes a frame with less. A frame record of a JSON document reads
 * back as a frame through frame_text__from_json.
 */
#ifndef DLSCOPE_FRAME_TEXT_H
#define DLSCOPE_FRAME_TEXT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "unwind.h"

enum frame_style {
	FRAME_FULL,
	FRAME_SHORT,
};

/*
 * Frame @n of a stack, @f, in @style; @prev is the frame before it (NULL for the first): gdb
 * leaves the address of an inline chain's outer frames blank. FRAME_FULL starts "#N" (a view
 * that indents prints its indent first); FRAME_SHORT ignores @prev and @n. No newline.
 */
void frame_text__fprint(FILE *out, const struct stack_frame *f, const struct stack_frame *prev,
			size_t n, enum frame_style style);
/* The same into @buf (@len bytes, always terminated, cut to fit). */
void frame_text__snprint(char *buf, size_t len, const struct stack_frame *f,
			 const struct stack_frame *prev, size_t n, enum frame_style style);
/* FRAME_SHORT into @buf: "fn+0x12 (libfoo.so)". */
void frame_text__short(const struct stack_frame *f, char *buf, size_t len);

/*
 * A frame record of a document (stack_frame__to_json's shape; a merged stack's frame has only
 * function, module, file and line) as a frame: a view, its strings borrowed from @j, never
 * freed. A field that is absent, null or "" is unknown (NULL, 0).
 */
void frame_text__from_json(const json_t *j, struct stack_frame *out);

#endif
