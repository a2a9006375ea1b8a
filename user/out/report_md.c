// SPDX-License-Identifier: GPL-2.0
/* Markdown for dlscope report (report_md.h): data shown as it is, and sections that fold. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_md.h"

/* Sections longer than this many lines fold into <details>. */
#define FOLD_LINES 25

/*
 * Text from data (names, paths, titles) as Markdown that shows it as it is, in a table cell or in
 * running text: the characters that would start emphasis, code, a link or HTML are escaped, a
 * pipe too (GitHub splits cells on it even inside code), a newline is a space. An underscore
 * inside a word (lock_a) starts nothing and is left as it is.
 */
void md_text(FILE *f, const char *s)
{
	const char *start = s;

	for (; s && *s; s++) {
		if (*s == '_') {
			/* A run of underscores that could open emphasis: none of it a word's inside. */
			size_t run = strspn(s, "_");
			char next = s[run];
			bool open = next && !isspace((unsigned char)next) &&
				    !(s > start && isalnum((unsigned char)s[-1]));

			for (size_t i = 0; i < run; i++)
				fputs(open ? "\\_" : "_", f);
			s += run - 1;
		} else if (*s == '\n' || *s == '\r') {
			fputc(' ', f);
		} else if (strchr("\\`*[]<>|~&", *s)) {
			fprintf(f, "\\%c", *s);
		} else {
			fputc(*s, f);
		}
	}
}

/* Data as a code span: fenced with more backticks than it holds, a pipe escaped for tables. */
void md_code(FILE *f, const char *s)
{
	size_t run = 0, longest = 0;

	for (const char *p = s; p && *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	for (size_t i = 0; i <= longest; i++)
		fputc('`', f);
	if (longest)
		fputc(' ', f);
	for (; s && *s; s++) {
		if (*s == '|')
			fputs("\\|", f);
		else
			fputc(*s == '\n' ? ' ' : *s, f);
	}
	if (longest)
		fputc(' ', f);
	for (size_t i = 0; i <= longest; i++)
		fputc('`', f);
}

static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* @body under @heading, folded into <details> when long. */
static void fold(FILE *f, const char *summary, const char *body)
{
	if (count_lines(body) > FOLD_LINES)
		fprintf(f, "<details><summary>%s</summary>\n\n%s\n</details>\n", summary, body);
	else
		fprintf(f, "%s", body);
}

bool folded_open(struct folded *w)
{
	memset(w, 0, sizeof(*w));
	w->head = open_memstream(&w->head_text, &w->head_len);
	w->body = w->head ? open_memstream(&w->body_text, &w->body_len) : NULL;
	if (w->body)
		return true;
	if (w->head)
		fclose(w->head);
	free(w->head_text);
	return false;
}

/* The heading part, then the body folded under @summary; or @instead when the body is empty. */
char *folded_close(struct folded *w, const char *summary, const char *instead)
{
	fclose(w->body);
	if (instead)
		fputs(instead, w->head);
	else
		fold(w->head, summary, w->body_text);
	free(w->body_text);
	fclose(w->head);
	return w->head_text;
}
