// SPDX-License-Identifier: GPL-2.0
/* The threads view: state and wait of each thread, the lock-wait edges, the verdict. */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "tui.h"

/* Long verdicts wrapped at the screen's width, one row per piece. */
static void add_wrapped(struct rows *out, enum ui_color c, const char *text, int width)
{
	size_t w = width > 20 ? (size_t)width - 6 : 60;

	while (*text) {
		size_t len = strlen(text), cut = len;

		if (len > w) {
			cut = w;
			while (cut > w / 2 && text[cut] != ' ')
				cut--;
		}
		rows__add(out, c, -1, "    %.*s", (int)cut, text);
		text += cut;
		while (*text == ' ')
			text++;
	}
}

static void threads_rows(struct ui *ui, struct rows *out)
{
	const struct m_proc *p = ui__proc(ui);

	if (!p) {
		rows__add(out, C_DIM, -1, "no process yet");
		return;
	}
	if (!p->threads_known) {
		rows__add(out, C_DIM, -1, "no snapshot of the threads of process %d yet%s", p->pid,
			  ui->src == SRC_REPLAY ? " (a trace has none)" :
						  ": press r (stops its threads for a moment)");
		return;
	}
	rows__add(out, C_HEADER, -1, "%-8s %-16s %-5s %-12s %s", "TID", "NAME", "STATE", "WAIT",
		  "WAITS FOR (Enter: stack)");
	for (size_t i = 0; i < p->n_threads; i++) {
		const struct m_thread *t = &p->threads[i];

		rows__add(out, t->in_cycle ? C_CYCLE : C_NORMAL, t->tid,
			  "%-8d %-16s %-5c %-12s %s%s", t->tid, t->comm, t->state ? t->state : '?',
			  t->wait_kind, t->waits ? t->waits : "",
			  t->in_cycle ? "  ** DEADLOCK" : "");
	}
	rows__add(out, C_NORMAL, -1, "%s", "");
	rows__add(out, C_HEADER, -1, "Lock-wait edges (%zu)", p->n_edges);
	if (!p->n_edges)
		rows__add(out, C_DIM, -1, "    no thread waits for another");
	for (size_t e = 0; e < p->n_edges; e++) {
		const struct m_edge *ed = &p->edges[e];

		rows__add(out, C_CYCLE, ed->from, "    %d -> %d  %s: %s", ed->from, ed->to,
			  ed->kind, ed->what ? ed->what : "");
	}
	if (p->n_verdicts) {
		rows__add(out, C_NORMAL, -1, "%s", "");
		rows__add(out, C_HEADER, -1, "Verdict");
		for (size_t v = 0; v < p->n_verdicts; v++)
			if (p->verdicts[v])
				add_wrapped(out, C_WARN, p->verdicts[v], ui->cols);
	}
}

static enum key_result threads_key(struct ui *ui, int ch, const struct row *sel)
{
	const struct m_proc *p = ui__proc(ui);

	if (ch == 'r' && p) {
		ui__request_snapshot(ui, p->pid);
		return KEY_HANDLED;
	}
	if ((ch == '\n' || ch == KEY_ENTER) && p && sel && sel->ref > 0) {
		for (size_t i = 0; i < p->n_threads; i++)
			if (p->threads[i].tid == sel->ref) {
				char title[128];

				snprintf(title, sizeof(title), "stack of thread %d (%s)",
					 p->threads[i].tid, p->threads[i].comm);
				ui__popup(ui, title,
					  p->threads[i].stack ? p->threads[i].stack :
								"(no stack was captured)");
				return KEY_HANDLED;
			}
	}
	return KEY_IGNORED;
}

const struct view view_threads = {
	.name = "Threads",
	.rows = threads_rows,
	.key = threads_key,
};
