// SPDX-License-Identifier: GPL-2.0
/*
 * The findings view: every finding, live or from a snapshot, with its severity, evidence, why it
 * breaks and what to do; a live one with its time and stack. Everything is wrapped at the
 * screen's width (nothing is cut at the edge), and Enter shows the whole finding in a box.
 */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

/* @text's lines, each wrapped: "      label: text", continued under the text. */
static void add_lines(struct rows *out, enum ui_color c, long ref, int width, const char *label,
		      const char *text)
{
	char first[64], cont[64];

	snprintf(first, sizeof(first), "      %s", label);
	snprintf(cont, sizeof(cont), "%*s", (int)strlen(first), "");
	while (text && *text) {
		size_t len = strcspn(text, "\n");
		char *line = strndup(text, len);

		if (line)
			rows__add_wrapped(out, c, ref, width, first, cont, line);
		free(line);
		snprintf(first, sizeof(first), "%s", cont);
		text += len + (text[len] == '\n');
	}
}

static void findings_rows(struct ui *ui, struct rows *out)
{
	const struct model *m = ui->m;
	int w = ui->cols > 0 ? ui->cols : 80;

	if (!m->n_findings) {
		rows__add(out, C_DIM, -1, "no findings%s", ui->src == SRC_LIVE ? " yet" : "");
		return;
	}
	rows__add(out, C_HEADER, -1, "%zu finding%s (Enter: the whole finding in a box)",
		  m->n_findings, m->n_findings == 1 ? "" : "s");
	for (size_t i = 0; i < m->n_findings; i++) {
		const struct m_finding *f = &m->findings[i];
		enum ui_color c = !strcmp(f->severity, "info")	  ? C_NORMAL :
				  !strcmp(f->severity, "warning") ? C_WARN :
								    C_COLLISION;
		char head[160];

		snprintf(head, sizeof(head), "%-8s %s, process %d: ", f->severity, f->id, f->pid);
		rows__add_wrapped(out, c, (long)i, w, head, "         ", f->title);
		/* A live finding: when the collector saw it, from the trace's start. */
		if (f->live && f->t >= m->t0)
			rows__add(out, C_DIM, (long)i, "      at: %.6f s",
				  (double)(f->t - m->t0) / 1e9);
		for (size_t e = 0; e < f->n_evidence; e++)
			add_lines(out, C_NORMAL, (long)i, w, "evidence: ", f->evidence[e]);
		add_lines(out, C_NORMAL, (long)i, w, "why: ", f->why);
		add_lines(out, C_WARN, (long)i, w, "fix: ", f->remedy);
		add_lines(out, C_DIM, (long)i, w, "stack: ", f->stack);
	}
}

/* The whole finding as text, from the finding itself (no row's length limit); the box wraps. */
static char *finding_text(const struct model *m, const struct m_finding *f)
{
	size_t len = 0;
	char *s = NULL;
	FILE *out = open_memstream(&s, &len);

	if (!out)
		return NULL;
	fprintf(out, "%s: %s\nprocess %d\n", f->severity, f->title, f->pid);
	if (f->live && f->t >= m->t0)
		fprintf(out, "at %.6f s\n", (double)(f->t - m->t0) / 1e9);
	if (f->n_evidence)
		fprintf(out, "\nevidence:\n");
	for (size_t e = 0; e < f->n_evidence; e++)
		fprintf(out, "  - %s\n", f->evidence[e]);
	if (f->why)
		fprintf(out, "\nwhy: %s\n", f->why);
	if (f->remedy)
		fprintf(out, "\nfix: %s\n", f->remedy);
	if (f->stack)
		fprintf(out, "\nstack:\n%s\n", f->stack);
	fclose(out);
	return s;
}

static enum key_result findings_key(struct ui *ui, int ch, const struct row *sel)
{
	char *text;

	if ((ch != '\n' && ch != KEY_ENTER) || !sel || sel->ref < 0 ||
	    (size_t)sel->ref >= ui->m->n_findings)
		return KEY_IGNORED;
	text = finding_text(ui->m, &ui->m->findings[sel->ref]);
	ui__popup(ui, ui->m->findings[sel->ref].id, text ? text : "");
	free(text);
	return KEY_HANDLED;
}

const struct view view_findings = {
	.name = "Findings",
	.rows = findings_rows,
	.key = findings_key,
};
