// SPDX-License-Identifier: GPL-2.0
/*
 * The findings view: every finding, live or from a snapshot, with its severity, evidence, why it
 * breaks and what to do; a live one with its time and stack.
 */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

static void add_lines(struct rows *out, enum ui_color c, long ref, const char *label,
		      const char *text)
{
	while (text && *text) {
		size_t len = strcspn(text, "\n");

		rows__add(out, c, ref, "      %s%.*s", label, (int)len, text);
		label = label[0] ? "        " : "";
		text += len + (text[len] == '\n');
	}
}

static void findings_rows(struct ui *ui, struct rows *out)
{
	const struct model *m = ui->m;

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

		rows__add(out, c, (long)i, "%-8s %-20s process %d: %s", f->severity, f->id, f->pid,
			  f->title);
		/* A live finding: when the collector saw it, from the trace's start. */
		if (f->live && f->t >= m->t0)
			rows__add(out, C_DIM, (long)i, "      at: %.6f s",
				  (double)(f->t - m->t0) / 1e9);
		for (size_t e = 0; e < f->n_evidence; e++)
			rows__add(out, C_NORMAL, (long)i, "      evidence: %s", f->evidence[e]);
		add_lines(out, C_NORMAL, (long)i, "why: ", f->why);
		add_lines(out, C_WARN, (long)i, "remedy: ", f->remedy);
		add_lines(out, C_DIM, (long)i, "stack: ", f->stack);
	}
}

static enum key_result findings_key(struct ui *ui, int ch, const struct row *sel)
{
	struct rows rs = { 0 };
	size_t len = 0, cap = 0;
	char *text = NULL;

	if ((ch != '\n' && ch != KEY_ENTER) || !sel || sel->ref < 0)
		return KEY_IGNORED;
	/* The box shows the finding's rows without truncation, wrapped by nothing but \n. */
	findings_rows(ui, &rs);
	for (size_t i = 0; i < rs.n; i++) {
		size_t l = strlen(rs.r[i].text);
		char *nt;

		if (rs.r[i].ref != sel->ref || rs.r[i].color == C_HEADER)
			continue;
		if (len + l + 2 > cap) {
			cap = (len + l + 2) * 2;
			nt = realloc(text, cap);
			if (!nt)
				break;
			text = nt;
		}
		len += (size_t)sprintf(text + len, "%s\n", rs.r[i].text);
	}
	ui__popup(ui, ui->m->findings[sel->ref].id, text ? text : "");
	free(text);
	free(rs.r);
	return KEY_HANDLED;
}

const struct view view_findings = {
	.name = "Findings",
	.rows = findings_rows,
	.key = findings_key,
};
