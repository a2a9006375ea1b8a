/* SPDX-License-Identifier: GPL-2.0 */
/* The Markdown that report.c writes: text and code from data, and sections that fold. */
#ifndef DLSCOPE_REPORT_MD_H
#define DLSCOPE_REPORT_MD_H

#include <stdbool.h>
#include <stdio.h>

/*
 * @s as running text or a table cell: what would start emphasis, code, a link or HTML escaped,
 * a newline a space.
 */
void md_text(FILE *f, const char *s);
/* @s as a code span, fenced with more backticks than it holds, a pipe escaped. */
void md_code(FILE *f, const char *s);

/* A section whose body folds into <details> when long: a heading stream and a body stream. */
struct folded {
	FILE *head, *body;
	char *head_text, *body_text;
	size_t head_len, body_len;
};

/* Opens both streams; false (nothing to close) when out of memory. */
bool folded_open(struct folded *w);
/*
 * The heading part, then the body folded under @summary when long; or @instead when the body
 * is empty. Returns the section (malloc'ed) and closes @w.
 */
char *folded_close(struct folded *w, const char *summary, const char *instead);

#endif
