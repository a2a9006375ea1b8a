// SPDX-License-Identifier: GPL-2.0
/*
 * A command's --help, its part of the man page's OPTIONS and what completion offers, all printed
 * from its option table (cliopt.h): one text each, nothing to keep in step by hand.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cliopt.h"
#include "commands.h"
#include "output.h"

#define HELP_WIDTH 80
#define HELP_COLUMN 24 /* where an option's text starts, as in the hand-written texts of before */
#define MAN_WIDTH 96   /* the markdown source's lines: pandoc fills the man page's own */

/*
 * @text as words on lines of at most @width columns, the first going on from column @col, the
 * others @indent spaces in; then a newline. @escape: as markdown text.
 */
static void wrap(FILE *f, const char *text, int col, int indent, int width, bool escape)
{
	const char *p = text ? text : "";
	bool code = false; /* inside `...`: markdown takes it as it is */

	while (*p) {
		size_t len = strcspn(p, " ");

		/* No line starts with "-": it would read as an option's own ("--roles" of a text). */
		while (p[len] == ' ' && p[len + 1] == '-')
			len += 1 + strcspn(p + len + 1, " ");
		if (col > indent && col + 1 + (int)len > width) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		for (size_t i = 0; i < len; i++) {
			char ch = p[i];
			bool alnum_around = i && i + 1 < len && isalnum((unsigned char)p[i - 1]) &&
					    isalnum((unsigned char)p[i + 1]);

			code ^= ch == '`';
			/* Stars and word-edge underscores are emphasis in markdown (*_NUM_THREADS). */
			if (escape && !code &&
			    (ch == '*' || ch == '\\' || (ch == '_' && !alnum_around)))
				fputc('\\', f);
			fputc(ch, f);
		}
		col += (int)len;
		p += len;
		p += strspn(p, " ");
	}
	fputc('\n', f);
}

/* @text's paragraphs (a blank line between them), each wrapped afresh, a blank line between. */
static void paragraphs(FILE *f, const char *text)
{
	while (*text) {
		const char *end = strstr(text, "\n\n");
		size_t len = end ? (size_t)(end - text) : strlen(text);
		char buf[4096];

		/* A paragraph's line breaks are spaces: wrap() places its own. */
		len = len < sizeof(buf) ? len : sizeof(buf) - 1;
		for (size_t i = 0; i < len; i++)
			buf[i] = text[i] == '\n' ? ' ' : text[i];
		while (len && buf[len - 1] == ' ')
			len--;
		buf[len] = '\0';
		wrap(f, buf, 0, 0, HELP_WIDTH, false);
		if (!end)
			break;
		fputc('\n', f);
		text = end + 2;
	}
}

int cliopt__help(const struct cliopt_cmd *def)
{
	FILE *f = stdout;
	const char *u = def->usage;

	for (int i = 0; *u; i++) {
		size_t len = strcspn(u, "\n");

		fprintf(f, "%sdlscope %.*s\n", i ? "       " : "Usage: ", (int)len, u);
		u += len + (u[len] == '\n');
	}
	if (def->about) {
		fputc('\n', f);
		paragraphs(f, def->about);
	}
	fputc('\n', f);
	for (const struct cliopt_def *d = cliopt__def_next(def, NULL, false); d;
	     d = cliopt__def_next(def, d, false)) {
		int col = d->letter ? fprintf(f, "  -%c, ", d->letter) : fprintf(f, "      ");

		col += fprintf(f, "--%s", d->name);
		if (d->arg)
			col += fprintf(f, d->optional ? "[=%s]" : " %s", d->arg);
		/* A head too long for its column: the text on the next line. */
		if (col >= HELP_COLUMN) {
			fputc('\n', f);
			col = 0;
		}
		fprintf(f, "%*s", HELP_COLUMN - col, "");
		wrap(f, d->help, HELP_COLUMN, HELP_COLUMN, HELP_WIDTH, false);
	}
	if (def->after) {
		fputc('\n', f);
		paragraphs(f, def->after);
	}
	return DLS_EXIT_OK;
}

void cliopt__print_man(const struct cliopt_cmd *def, FILE *f)
{
	fprintf(f, "### %s\n", def->name);
	for (const struct cliopt_def *d = cliopt__def_next(def, NULL, false); d;
	     d = cliopt__def_next(def, d, false)) {
		if (d->letter)
			fprintf(f, "**-%c**, ", d->letter);
		fprintf(f, "**--%s**", d->name);
		if (d->arg)
			fprintf(f, d->optional ? "[=*%s*]" : " *%s*", d->arg);
		fputs("\n:   ", f);
		wrap(f, d->help, 4, 4, MAN_WIDTH, true);
		fputc('\n', f);
	}
}

void cliopt__print_complete(const struct cliopt_cmd *def, FILE *f)
{
	static const char *const kinds[] = {
		[CLIOPT_NONE] = "none", [CLIOPT_PID] = "pid",	  [CLIOPT_FILE] = "file",
		[CLIOPT_DIR] = "dir",	[CLIOPT_WORDS] = "words",
	};

	fprintf(f, "operands%s%s%s\n", def->operands & CLIOPT_OP_PID ? " pid" : "",
		def->operands & CLIOPT_OP_FILE ? " file" : "",
		def->takes_command ? " command" : "");
	for (const struct cliopt_def *d = cliopt__def_next(def, NULL, false); d;
	     d = cliopt__def_next(def, d, false)) {
		const char *w;

		fprintf(f, "--%s %s%c %s %s", d->name, d->letter ? "-" : "",
			d->letter ? d->letter : '-',
			!d->arg	    ? "none" :
			d->optional ? "optional" :
				      "required",
			kinds[d->arg ? d->value : CLIOPT_NONE]);
		for (size_t i = 0; d->word && (w = d->word(i)); i++)
			fprintf(f, " %s", w);
		fputc('\n', f);
	}
}
